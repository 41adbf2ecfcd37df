#!/usr/bin/env python3
"""The README's first program compiles with oshcc and prints, at 2 PEs, what
the README says it prints.

    readme_program.py README.md OSHCC OSHRUN

The program is the README's first ```c block; what it prints is the first
```text block after it, whose lines the PEs may print in any order (the
README says so). Both are read from the README at test time, so an edit of
either that no longer holds fails here.
"""
import os
import re
import subprocess
import sys
import tempfile


def blocks(text):
    """(info string, body) of each fenced block, in order."""
    return re.findall(r'^```([^\n`]*)\n(.*?)^```\s*$', text, re.M | re.S)


def main():
    readme, oshcc, oshrun = (os.path.abspath(a) for a in sys.argv[1:4])
    with open(readme, encoding='utf-8') as f:
        found = blocks(f.read())
    code = next((i for i, (info, _) in enumerate(found) if info.strip() == 'c'), None)
    if code is None:
        sys.exit('%s has no ```c block' % readme)
    out = next((body for info, body in found[code + 1:] if info.strip() == 'text'), None)
    if out is None:
        sys.exit('%s has no ```text block after its first program' % readme)
    expected = sorted(l for l in out.split('\n') if l)
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, 'hello.c')
        exe = os.path.join(tmp, 'hello')
        with open(src, 'w', encoding='utf-8') as f:
            f.write(found[code][1])
        cc = subprocess.run([oshcc, '-Wall', '-Werror', '-o', exe, src],
                            capture_output=True, text=True)
        if cc.returncode != 0:
            print('oshcc failed on the README\'s first program:\n' + cc.stdout + cc.stderr)
            return 1
        run = subprocess.run([oshrun, '--timeout', '60', '-n', '2', exe],
                             capture_output=True, text=True, cwd=tmp)
    got = sorted(l for l in run.stdout.split('\n') if l)
    if run.returncode != 0 or got != expected:
        print('oshrun -n 2 ./hello exited %d' % run.returncode)
        print('expected, in any order (the README):\n  ' + '\n  '.join(expected))
        print('got:\n  ' + '\n  '.join(got))
        if run.stderr:
            print('stderr:\n' + run.stderr)
        return 1
    print('the README\'s first program printed, at 2 PEs:\n  ' + '\n  '.join(got))
    return 0


if __name__ == '__main__':
    sys.exit(main())
