#!/usr/bin/env python3
"""Every variable of USHMEMI_VAR_LIST (src/common/vars.h) has its entry in
docs/reference/variables.md, with the list's default.

    check_variables.py SOURCE_ROOT

Reads the list with a pattern of its own rather than through
scripts/gen_docs.py, so that a generator that lost an entry fails here too.
"""
import os
import re
import sys


def main():
    root = sys.argv[1]
    with open(os.path.join(root, 'src/common/vars.h'), encoding='utf-8') as f:
        src = f.read()
    start = src.index('#define USHMEMI_VAR_LIST(X)')
    end = src.index('\n\n', start)
    entries = re.findall(r'X\(\s*\w+\s*,\s*"([A-Z0-9_]+)"\s*,\s*\w+\s*,\s*"([^"]*)"',
                         src[start:end])
    if not entries:
        sys.exit('check_variables.py: no entries found in USHMEMI_VAR_LIST')
    with open(os.path.join(root, 'docs/reference/variables.md'), encoding='utf-8') as f:
        ref = f.read()
    missing = 0
    for name, default in entries:
        m = re.search(r'^## %s\n\n[A-Z][a-z]+; default (`([^`]*)`|empty)\.$' % re.escape(name),
                      ref, re.M)
        if m is None:
            print('docs/reference/variables.md has no entry for %s' % name)
            missing += 1
        elif (m.group(2) or '') != default:
            print('docs/reference/variables.md gives %s the default %r, the list %r'
                  % (name, m.group(2) or '', default))
            missing += 1
    print('%d variables, %d documented' % (len(entries), len(entries) - missing))
    return 1 if missing else 0


if __name__ == '__main__':
    sys.exit(main())
