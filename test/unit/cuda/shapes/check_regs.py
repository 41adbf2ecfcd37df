#!/usr/bin/env python3
"""Holds every kernel of shapes.cu to a register budget.

  check_regs.py [--max N] [--show K] [--over NAME]... -- COMPILER ARGS...

Runs the compiler command (which must compile the kernels with
-Xptxas -v, or link relocatable device code with -Xnvlink -v), reads
ptxas's "Used N registers" line of each entry function (nvlink's "used N
registers" after the link, where calls between functions count),
prints the K kernels that need the most, and exits 1 naming every kernel
over N registers (default 64: a block of 1024 threads gets at most
65536 / 1024 registers a thread, and a kernel that needs more fails to
launch with "too many resources requested for launch"). Exits 1 too when
the compiler fails or no kernel is reported, 77 when the compiler cannot be
run. --over NAME: kernel NAME is meant to need more than N (a test of
what happens then); it must be reported, and over N, and the others are
held to N."""
import re
import subprocess
import sys
import time

ENTRY = re.compile(r"Compiling entry function '([^']+)'|nvlink info +: Function properties for '([^']+)'")
USED = re.compile(r'[Uu]sed (\d+) registers')
SPILL = re.compile(r'(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads')


def demangle(name):
    """_Z<len><name>... -> name: the generated kernels are plain functions."""
    m = re.match(r'_Z(\d+)', name)
    if not m:
        return name
    n = int(m.group(1))
    return name[m.end():m.end() + n]


def parse(text):
    """{kernel: (registers, stack, spill stores)} from ptxas -v's lines."""
    kernels, cur, frame = {}, None, (0, 0)
    for line in text.splitlines():
        m = ENTRY.search(line)
        if m:
            cur, frame = demangle(m.group(1) or m.group(2)), (0, 0)
            continue
        m = SPILL.search(line)
        if m and cur is not None and cur not in kernels:
            frame = (int(m.group(1)), int(m.group(2)))
            continue
        m = USED.search(line)
        if m and cur is not None:
            kernels[cur] = (int(m.group(1)),) + frame
            cur = None
    return kernels


def main(argv):
    limit, show, meant_over = 64, 15, []
    args = argv[1:]
    while args and args[0] != '--':
        if args[0] == '--max':
            limit = int(args[1])
            args = args[2:]
        elif args[0] == '--show':
            show = int(args[1])
            args = args[2:]
        elif args[0] == '--over' and len(args) > 1:
            meant_over.append(args[1])
            args = args[2:]
        else:
            sys.stderr.write(__doc__)
            return 2
    cmd = args[1:]
    if not cmd:
        sys.stderr.write(__doc__)
        return 2
    t0 = time.monotonic()
    try:
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              universal_newlines=True)
    except OSError as e:
        print('cannot run %s: %s: skipped' % (cmd[0], e))
        return 77
    took = time.monotonic() - t0
    if proc.returncode != 0:
        print(proc.stdout)
        print('FAIL: the compiler exited %d: %s' % (proc.returncode, ' '.join(cmd)))
        return 1
    kernels = parse(proc.stdout)
    if not kernels:
        print(proc.stdout)
        print('FAIL: no "Used N registers" line: was -Xptxas -v (or -Xnvlink -v) passed?')
        return 1
    ranked = sorted(kernels.items(), key=lambda kv: (-kv[1][0], kv[0]))
    print('%d kernels compiled in %.1f s; budget %d registers (65536 per SM / 1024 threads)'
          % (len(kernels), took, limit))
    print('%5s %6s %7s  %s' % ('regs', 'stack', 'spilled', 'kernel'))
    for name, (regs, stack, spill) in ranked[:show]:
        print('%5d %6d %7d  %s' % (regs, stack, spill, name))
    for name in meant_over:
        if name not in kernels or kernels[name][0] <= limit:
            print('FAIL: %s was to need more than %d registers: %s'
                  % (name, limit, 'not compiled' if name not in kernels
                     else '%d' % kernels[name][0]))
            return 1
    over = [(name, v[0]) for name, v in ranked if v[0] > limit and name not in meant_over]
    if over:
        for name, regs in over:
            print('FAIL: %s needs %d registers (> %d): a block of 1024 threads cannot launch'
                  % (name, regs, limit))
        print('FAIL: %d of %d kernels over %d registers' % (len(over), len(kernels), limit))
        return 1
    held = [kv for kv in ranked if kv[0] not in meant_over] or [('none', (0,))]
    print('PASS: every kernel within %d registers (most: %d, %s)%s'
          % (limit, held[0][1][0], held[0][0],
             ''.join('; %s over it, as meant' % n for n in meant_over)))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
