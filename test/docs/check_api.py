#!/usr/bin/env python3
"""Every public function of shmemx.h, ushmemx.h (with ushmem.h, which it
includes) and ushmem/device.h appears in docs/.

    check_api.py SOURCE_ROOT CC [CC ARGS...]

The names come from the headers themselves: the C compiler preprocesses
them, which expands the type lists into every typed name, and a scan of
device.h's SYCL part (which needs a SYCL compiler) adds the work-group
forms. A typed name such as ushmem_long_atomic_fetch_add counts as
documented when docs/ holds it, or its family with TYPE for the type (and
OP for a reduction's operation): ushmem_TYPE_atomic_fetch_add,
shmemx_TYPE_OP_reduce_on_stream. Exits 1 naming each name it did not find.
"""
import os
import re
import subprocess
import sys

# The OpenSHMEM type names that typed calls carry (Tables 5, 6 and 10 of
# OpenSHMEM 1.5); a typed name whose type is missing here is reported as
# undocumented, naming it.
TYPES = {'char', 'schar', 'short', 'int', 'long', 'longlong', 'uchar', 'ushort', 'uint',
         'ulong', 'ulonglong', 'float', 'double', 'longdouble', 'int8', 'int16', 'int32',
         'int64', 'uint8', 'uint16', 'uint32', 'uint64', 'size', 'ptrdiff', 'complexf',
         'complexd'}
OPS = {'and', 'or', 'xor', 'min', 'max', 'sum', 'prod'}
HEADERS = ['include/shmemx.h', 'include/ushmemx.h', 'include/ushmem.h',
           'include/ushmem/device.h']
NAME = re.compile(r'\b((?:shmemx|ushmemx|ushmem)_\w+)\s*\(')
# A definition or declaration: the name after a type word or a `*`.
DECL = re.compile(r'(?:\b(\w+)|(\*))\s*\b((?:shmemx|ushmemx|ushmem)_\w+)\s*\(')
NOT_TYPES = {'return', 'else', 'do', 'case', 'goto', 'sizeof'}
INTERNAL = re.compile(r'^(ushmemi_|ushmem_ring_|ushmem_device_)')


def preprocessed_names(root, cc):
    src = ''.join('#include <%s>\n' % h[len('include/'):] for h in HEADERS)
    out = subprocess.run(cc + ['-E', '-D_GNU_SOURCE', '-I', os.path.join(root, 'include'),
                               '-x', 'c', '-'],
                         input=src, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit('check_api.py: the preprocessor failed:\n' + out.stderr)
    public = {os.path.realpath(os.path.join(root, h)) for h in HEADERS}
    names, current = set(), None
    for line in out.stdout.split('\n'):
        m = re.match(r'^# \d+ "([^"]+)"', line)
        if m:
            current = os.path.realpath(m.group(1))
            continue
        if current not in public:
            continue
        for d in DECL.finditer(line):
            if d.group(1) in NOT_TYPES:
                continue
            names.add(d.group(3))
    return names


def sycl_names(root):
    """The names defined only for SYCL (device.h's last part)."""
    with open(os.path.join(root, 'include/ushmem/device.h'), encoding='utf-8') as f:
        text = f.read()
    start = text.rfind('#if defined(SYCL_LANGUAGE_VERSION)')
    names = set()
    for m in re.finditer(r'\b((?:ushmemx|ushmem)_[\w#]+)\s*\(', text[start:]):
        name = m.group(1)
        name = re.sub(r'##\w+##', 'TYPE', name)
        names.add(name)
    return names


def docs_text(root):
    chunks = []
    for d, _, files in os.walk(os.path.join(root, 'docs')):
        for f in files:
            if f.endswith('.md'):
                with open(os.path.join(d, f), encoding='utf-8') as fh:
                    chunks.append(fh.read())
    text = '\n'.join(chunks)
    # markdown may escape an underscore
    return text.replace('\\_', '_')


def forms(name):
    """The name and its generic forms, most specific first."""
    parts = name.split('_')
    yield name
    typed = [i for i, p in enumerate(parts) if p in TYPES and i > 0]
    for i in typed:
        generic = parts[:i] + ['TYPE'] + parts[i + 1:]
        yield '_'.join(generic)
        for j, p in enumerate(generic):
            if p in OPS and j > i:
                yield '_'.join(generic[:j] + ['OP'] + generic[j + 1:])


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    root, cc = sys.argv[1], sys.argv[2:]
    names = {n for n in preprocessed_names(root, cc) | sycl_names(root)
             if not INTERNAL.match(n)}
    text = docs_text(root)
    words = set(re.findall(r'\b\w+\b', text))
    missing = sorted(n for n in names if not any(f in words for f in forms(n)))
    print('%d public functions, %d documented' % (len(names), len(names) - len(missing)))
    for n in missing:
        print('not in docs/: %s (or its family %s)' % (n, list(forms(n))[-1]))
    return 1 if missing else 0


if __name__ == '__main__':
    sys.exit(main())
