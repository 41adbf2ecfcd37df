#!/usr/bin/env python3
"""Every header that an installed header includes is installed too.

Usage: installed_headers.py BUILD_DIR INCLUDE_DIR

Reads `meson introspect --installed` of the build and the #include lines of
every installed header under INCLUDE_DIR (the source tree's include/); a
header of the project's own (shmem*.h, ushmem*.h, pshmem.h, ushmem/...) that
one of them includes and the install leaves out is printed, and the exit
status is 1: a program built against the installed tree would not compile.
"""
import json
import os
import re
import subprocess
import sys

OWN = re.compile(r'^\s*#\s*include\s*[<"]((?:ushmem/[^>"]+)|(?:p?shmemx?\.h)|(?:ushmemx?\.h))[>"]')


def main():
    build, incdir = sys.argv[1], os.path.abspath(sys.argv[2])
    out = subprocess.run(['meson', 'introspect', '--installed', build], check=True,
                         capture_output=True, text=True).stdout
    installed = {}
    for src, dest in json.loads(out).items():
        marker = os.sep + 'include' + os.sep
        if marker in dest:
            installed[dest.split(marker, 1)[1]] = src
    if not installed:
        print('no headers in the install list')
        return 1
    missing = []
    for rel, src in sorted(installed.items()):
        path = src if os.path.isabs(src) else os.path.join(incdir, rel)
        if not os.path.isfile(path):
            path = os.path.join(incdir, rel)
        if not os.path.isfile(path):
            continue  # generated (pshmem.h): its includes are the sources'
        with open(path, encoding='utf-8') as f:
            for n, line in enumerate(f, 1):
                m = OWN.match(line)
                if m and m.group(1) not in installed:
                    missing.append('%s:%d includes %s, which is not installed' % (rel, n, m.group(1)))
    for m in missing:
        print(m)
    print('%d installed headers, %d includes of uninstalled ones' % (len(installed), len(missing)))
    return 1 if missing else 0


if __name__ == '__main__':
    sys.exit(main())
