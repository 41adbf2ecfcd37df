#!/usr/bin/env python3
"""The cuda backend's stream reduction kernels, checked without a GPU.

Usage: ptx_reduce_check.py PTX_REDUCE [PTXAS]

PTX_REDUCE (ptx_reduce.c) writes the PTX that the backend hands the driver
and the launch of every (op, kind) pair it takes. With PTXAS, the module is
assembled for sm_80 and sm_90 (what the driver's JIT does on an A100 or an
H100). Then every pair runs in a small interpreter of the PTX that the
generator emits, on 1, 3 and 8 sources, with a destination apart and one
that is the first source (a chained kernel's), on a grid of several blocks
and threads, and every element must equal the sources combined in source
order the way the host's reductions combine them in C: integers wrap at
their width, min and max compare signed or unsigned as the kind is, floats
round each step once (including NaNs and signed zeros for min and max), and
complex products are (ac - bd) + (ad + bc)i. Each kernel's one-kernel
stream collective form (ushmemi_reduce_coll_<kind>: cuda_coll.c's rounds
around the same loop) must hold that loop line for line but for its
argument loads. One line per failure; exit 1.
"""
import math
import os
import random
import re
import struct
import subprocess
import sys
import tempfile

INT_KINDS = {'i8': (8, True), 'i16': (16, True), 'i32': (32, True), 'i64': (64, True),
             'u8': (8, False), 'u16': (16, False), 'u32': (32, False), 'u64': (64, False)}
FLOAT_KINDS = {'f32': 'f', 'f64': 'd'}
COMPLEX_KINDS = {'c32': 'f', 'c64': 'd'}
SOURCES = 8


def f32(x):
    """x rounded to single precision (round to nearest even)."""
    try:
        return struct.unpack('<f', struct.pack('<f', x))[0]
    except OverflowError:
        return math.copysign(math.inf, x)


# ---- The interpreter ---------------------------------------------------------

class Kernel:
    def __init__(self, name, params, body):
        self.name = name
        self.params = params
        self.body = body
        self.code = []
        self.labels = {}
        for line in body:
            line = line.strip().rstrip(';').strip()
            if not line or line.startswith('.reg') or line in ('{', '}'):
                continue
            if line.endswith(':'):
                self.labels[line[:-1]] = len(self.code)
                continue
            guard = None
            if line.startswith('@'):
                guard, line = line.split(None, 1)
                guard = guard[1:]
            opcode, _, rest = line.partition(' ')
            args = [a.strip() for a in rest.split(',')] if rest else []
            self.code.append((guard, opcode, args))


def parse(ptx):
    kernels = {}
    for m in re.finditer(r'\.visible \.entry (\w+)\(([^)]*)\)\s*\{(.*?)\n\}', ptx, re.S):
        params = [p.split()[-1] for p in m.group(2).split(',')]
        kernels[m.group(1)] = Kernel(m.group(1), params, m.group(3).split('\n'))
    return kernels


class Memory:
    """Buffers at made-up global addresses."""

    def __init__(self):
        self.bufs = []
        self.next = 0x7f0000000000

    def alloc(self, data):
        base = self.next
        self.bufs.append((base, bytearray(data)))
        self.next += (len(data) + 0xfff) & ~0xfff
        self.next += 0x1000
        return base

    def find(self, addr, size):
        for base, buf in self.bufs:
            if base <= addr and addr + size <= base + len(buf):
                return buf, addr - base
        raise RuntimeError('access of %d bytes at 0x%x outside every buffer' % (size, addr))

    def load(self, addr, fmt):
        buf, off = self.find(addr, struct.calcsize(fmt))
        return struct.unpack_from('<' + fmt, buf, off)[0]

    def store(self, addr, fmt, value):
        buf, off = self.find(addr, struct.calcsize(fmt))
        struct.pack_into('<' + fmt, buf, off, value)

    def read(self, addr, size):
        buf, off = self.find(addr, size)
        return bytes(buf[off:off + size])


LD_FMT = {'s8': 'b', 'u8': 'B', 's16': 'h', 'u16': 'H', 's32': 'i', 'u32': 'I', 's64': 'q',
          'u64': 'Q', 'f32': 'f', 'f64': 'd'}
WIDTH = {'8': 8, '16': 16, '32': 32, '64': 64}


def bits_of(t):
    return WIDTH[re.sub(r'^[a-z]+', '', t)]


def as_signed(v, bits):
    v &= (1 << bits) - 1
    return v - (1 << bits) if v >> (bits - 1) else v


def run(kernel, mem, args, grid, block):
    """Runs every thread of the grid in turn (each element belongs to one)."""
    for ctaid in range(grid):
        for tid in range(block):
            thread(kernel, mem, args, {'%ctaid.x': ctaid, '%tid.x': tid, '%ntid.x': block,
                                       '%nctaid.x': grid})


def thread(k, mem, args, special):
    regs = {}
    steps = 0

    def val(a):
        if a in regs:
            return regs[a]
        if a in special:
            return special[a]
        if a.startswith('%'):
            raise RuntimeError('%s: register %s read before it is written' % (k.name, a))
        return int(a, 0)

    def address(a):
        inner = a.strip('[]')
        reg, _, off = inner.partition('+')
        return val(reg) + (int(off, 0) if off else 0)

    pc = 0
    while True:
        steps += 1
        if steps > 10000000:
            raise RuntimeError('%s: does not finish' % k.name)
        guard, op, a = k.code[pc]
        pc += 1
        if guard is not None:
            neg = guard.startswith('!')
            g = regs.get(guard.lstrip('!'))
            if g is None:
                raise RuntimeError('%s: predicate %s read before it is set' % (k.name, guard))
            if g == neg:
                continue
        parts = op.split('.')
        name, t = parts[0], parts[-1]
        if op.startswith('ld.param'):
            regs[a[0]] = args[a[1].strip('[]')]
        elif op == 'cvta.to.global.u64':
            regs[a[0]] = val(a[1])
        elif op.startswith('ld.global'):
            regs[a[0]] = mem.load(address(a[1]), LD_FMT[t])
            if t in ('s8', 's16'):
                regs[a[0]] &= 0xffffffff  # sign-extended into the 32-bit register
        elif op.startswith('st.global'):
            v = val(a[1])
            if t.startswith('f'):
                mem.store(address(a[0]), LD_FMT[t], v)
            else:
                mem.store(address(a[0]), LD_FMT[t], v & ((1 << bits_of(t)) - 1))
        elif name == 'mov':
            regs[a[0]] = val(a[1])
        elif op == 'mul.wide.u32':
            regs[a[0]] = (val(a[1]) & 0xffffffff) * (val(a[2]) & 0xffffffff)
        elif op == 'cvt.u64.u32':
            regs[a[0]] = val(a[1]) & 0xffffffff
        elif op == 'shl.b64':
            regs[a[0]] = (val(a[1]) << val(a[2])) & (2**64 - 1)
        elif name == 'setp':
            cmp = parts[1]
            x, y = val(a[1]), val(a[2])
            if t.startswith('s'):
                x, y = as_signed(x, bits_of(t)), as_signed(y, bits_of(t))
            elif t.startswith('u'):
                x, y = x & ((1 << bits_of(t)) - 1), y & ((1 << bits_of(t)) - 1)
            regs[a[0]] = {'lt': x < y, 'gt': x > y, 'ge': x >= y, 'le': x <= y, 'eq': x == y,
                          'ne': x != y}[cmp]
        elif name == 'selp':
            regs[a[0]] = val(a[1]) if val(a[3]) else val(a[2])
        elif name in ('add', 'sub', 'mul') and t.startswith('f'):
            if parts[1] != 'rn':
                raise RuntimeError('%s: %s may be fused or rounded otherwise' % (k.name, op))
            x, y = val(a[1]), val(a[2])
            r = x + y if name == 'add' else x - y if name == 'sub' else x * y
            regs[a[0]] = f32(r) if t == 'f32' else r
        elif name in ('add', 'sub', 'mul') and len(parts) == (3 if name == 'mul' else 2):
            if name == 'mul' and parts[1] != 'lo':
                raise RuntimeError('%s: the interpreter does not know %s' % (k.name, op))
            bits = bits_of(t)
            x, y = val(a[1]), val(a[2])
            r = x + y if name == 'add' else x - y if name == 'sub' else x * y
            regs[a[0]] = r & ((1 << bits) - 1)
        elif name in ('min', 'max'):
            bits = bits_of(t)
            x, y = val(a[1]), val(a[2])
            if t.startswith('s'):
                xs, ys = as_signed(x, bits), as_signed(y, bits)
            else:
                xs, ys = x & ((1 << bits) - 1), y & ((1 << bits) - 1)
            pick = min(xs, ys) if name == 'min' else max(xs, ys)
            regs[a[0]] = pick & ((1 << bits) - 1)
        elif name in ('and', 'or', 'xor'):
            bits = bits_of(t)
            x, y = val(a[1]), val(a[2])
            r = x & y if name == 'and' else x | y if name == 'or' else x ^ y
            regs[a[0]] = r & ((1 << bits) - 1)
        elif name == 'bra':
            pc = k.labels[a[0]]
        elif name == 'ret':
            return
        else:
            raise RuntimeError('%s: the interpreter does not know %s' % (k.name, op))


# ---- What the host's reductions compute ----------------------------------------

def int_values(bits, signed, n, rng):
    out = []
    for _ in range(n):
        v = rng.getrandbits(bits)
        if rng.random() < 0.2:
            v = rng.choice([0, 1, (1 << bits) - 1, 1 << (bits - 1), (1 << (bits - 1)) - 1])
        out.append(as_signed(v, bits) if signed else v)
    return out


def float_values(fmt, n, rng, edges):
    out = []
    for _ in range(n):
        v = rng.uniform(-1000, 1000) * (1e6 if rng.random() < 0.1 else 1)
        if edges and rng.random() < 0.25:
            v = rng.choice([0.0, -0.0, math.nan, math.inf, -math.inf, 1.5, -1.5])
        out.append(f32(v) if fmt == 'f' else v)
    return out


def combine(op, kind, x, y):
    if kind in INT_KINDS:
        bits, signed = INT_KINDS[kind]
        mask = (1 << bits) - 1
        r = {'sum': lambda: x + y, 'prod': lambda: x * y, 'min': lambda: x if x < y else y,
             'max': lambda: x if x > y else y, 'and': lambda: x & y, 'or': lambda: x | y,
             'xor': lambda: x ^ y}[op]()
        return as_signed(r, bits) if signed else r & mask
    rnd = f32 if FLOAT_KINDS.get(kind) == 'f' or COMPLEX_KINDS.get(kind) == 'f' else float
    if kind in COMPLEX_KINDS:
        (a, b), (c, d) = x, y
        if op == 'sum':
            return (rnd(a + c), rnd(b + d))
        t0, t1, t2, t3 = rnd(a * c), rnd(b * d), rnd(a * d), rnd(b * c)
        return (rnd(t0 - t1), rnd(t2 + t3))
    if op == 'sum':
        return rnd(x + y)
    if op == 'prod':
        return rnd(x * y)
    if op == 'min':
        return x if x < y else y  # C's acc < v ? acc : v
    return x if x > y else y


def pack(kind, values):
    if kind in INT_KINDS:
        bits, signed = INT_KINDS[kind]
        fmt = {8: 'b', 16: 'h', 32: 'i', 64: 'q'}[bits]
        return struct.pack('<%d%s' % (len(values), fmt if signed else fmt.upper()), *values)
    if kind in FLOAT_KINDS:
        return struct.pack('<%d%s' % (len(values), FLOAT_KINDS[kind]), *values)
    fmt = COMPLEX_KINDS[kind]
    return b''.join(struct.pack('<2' + fmt, re_, im) for re_, im in values)


def check_pair(kernels, op, kind, kernel, code, per, rng):
    failures = []
    k = kernels.get(kernel)
    if k is None:
        return ['%s of %s: kernel %s is not in the module' % (op, kind, kernel)]
    runs = [(nsrc, False) for nsrc in range(1, SOURCES + 1)] + [(1, True), (SOURCES, True)]
    if kind in FLOAT_KINDS and op in ('min', 'max'):
        runs += [(2, 'edges'), (3, 'edges')]
    for nsrc, in_place in runs:
        count = 29
        if in_place == 'edges':
            # every sequence of NaN, infinities, signed zeros and equal values
            edges = [0.0, -0.0, math.nan, math.inf, -math.inf, 1.5, -1.5]
            count = len(edges) ** nsrc
            srcs = [[edges[i // len(edges) ** s % len(edges)] for i in range(count)]
                    for s in range(nsrc)]
            in_place = False
        else:
            srcs = []
            for _ in range(nsrc):
                if kind in INT_KINDS:
                    srcs.append(int_values(*INT_KINDS[kind], count, rng))
                elif kind in FLOAT_KINDS:
                    fmt = FLOAT_KINDS[kind]
                    vals = float_values(fmt, count, rng, op in ('min', 'max'))
                    if op == 'prod':  # magnitudes near 1, so that the product stays finite
                        vals = [(f32 if fmt == 'f' else float)(v / 1000.0) for v in vals]
                    srcs.append(vals)
                else:
                    fmt = COMPLEX_KINDS[kind]
                    flat = float_values(fmt, 2 * count, rng, False)
                    if op == 'prod':
                        flat = [(f32 if fmt == 'f' else float)(v / 1000.0) for v in flat]
                    srcs.append(list(zip(flat[0::2], flat[1::2])))
        want = []
        for i in range(count):
            acc = srcs[0][i]
            for s in range(1, nsrc):
                acc = combine(op, kind, acc, srcs[s][i])
            want.append(acc)
        mem = Memory()
        addrs = [mem.alloc(pack(kind, s)) for s in srcs]
        size = len(pack(kind, want))
        dst = addrs[0] if in_place else mem.alloc(b'\xa5' * size)
        args = {'p_dst': dst, 'p_nsrc': nsrc, 'p_count': count * per, 'p_op': code}
        for s in range(SOURCES):
            args['p_s%d' % s] = addrs[s] if s < nsrc else addrs[0]
        try:
            run(k, mem, args, grid=3, block=5)
        except RuntimeError as e:
            return ['%s of %s: %s' % (op, kind, e)]
        got = mem.read(dst, size)
        expect = pack(kind, want)
        if got != expect:
            esize = size // count
            i = next(j for j in range(count)
                     if got[j * esize:(j + 1) * esize] != expect[j * esize:(j + 1) * esize])
            failures.append('%s of %s (kernel %s, op %d, %d sources%s): element %d is %s, '
                            'want %s (sources %s)' % (
                                op, kind, kernel, code, nsrc, ', in place' if in_place else '',
                                i, got[i * esize:(i + 1) * esize].hex(),
                                expect[i * esize:(i + 1) * esize].hex(),
                                [s[i] for s in srcs]))
    return failures


PARAM_LOAD = re.compile(r'ld\.param\.(\w+)\s+(%\w+),\s*\[(\w+)(?:\+(\d+))?\]')


def param_loads(body):
    """(type, register, parameter, offset) of each ld.param line."""
    out = []
    for line in body:
        m = PARAM_LOAD.search(line)
        if m:
            out.append((m.group(1), m.group(2), m.group(3), int(m.group(4) or 0)))
    return out


def check_one_kernel_forms(kernels, offsets):
    """Each kind's one-kernel stream collective form (the rounds of
    cuda_coll.c around the loop) runs the loop interpreted above: the
    lines of its inner block are the kernel's but for the argument loads,
    each of which loads the same register, of the same type, from where
    the backend puts that argument in the parameter block (offsets, from
    cuda_private.h); the rounds' bar.sync meet before and after it."""
    failures = []
    for name, k in kernels.items():
        if name.startswith('ushmemi_reduce_coll_'):
            continue
        coll = kernels.get(name.replace('ushmemi_reduce_', 'ushmemi_reduce_coll_', 1))
        if coll is None:
            failures.append('%s has no one-kernel form' % name)
            continue
        try:
            start, end = coll.body.index('    {'), coll.body.index('    }')
        except ValueError:
            failures.append('%s: no inner block' % coll.name)
            continue
        inner = coll.body[start + 1:end]
        loop = [l for l in k.body if l.strip() and 'ld.param' not in l and l.strip() != 'ret;']
        if [l for l in inner if l.strip() and 'ld.param' not in l] != loop:
            failures.append('%s: its loop differs from %s\'s' % (coll.name, name))
        want = sorted((t, r, 'p_x', offsets[p]) for t, r, p, _ in param_loads(k.body))
        if sorted(param_loads(inner)) != want:
            failures.append('%s: its arguments are not loaded as %s\'s from p_x at %s' % (
                coll.name, name, sorted(offsets.items(), key=lambda kv: kv[1])))
        before = [l.strip() for l in coll.body[:start] if l.strip()]
        after = [l.strip() for l in coll.body[end + 1:] if l.strip()]
        if before[-1:] != ['bar.sync 0;'] or after[:2] != ['K_COPIED:', 'bar.sync 0;']:
            failures.append('%s: the block does not meet before and after the loop' % coll.name)
    return failures


def main():
    prog = sys.argv[1]
    ptxas = sys.argv[2] if len(sys.argv) > 2 else None
    ptx = subprocess.run([prog], check=True, capture_output=True, text=True).stdout
    launches = subprocess.run([prog, '--launches'], check=True, capture_output=True,
                              text=True).stdout.split('\n')
    print('PTX module: %d bytes, %d kernels' % (len(ptx), ptx.count('.entry')))
    failures = []
    if ptxas:
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, 'reduce.ptx')
            with open(path, 'w') as f:
                f.write(ptx)
            for arch in ('sm_80', 'sm_90'):
                r = subprocess.run([ptxas, '-arch=' + arch, path, '-o', os.path.join(tmp, 'o')],
                                   capture_output=True, text=True)
                if r.returncode != 0:
                    failures.append('ptxas -arch=%s refused the module: %s' % (
                        arch, (r.stderr or r.stdout).strip().replace('\n', ' | ')))
    kernels = parse(ptx)
    rng = random.Random(1234)
    pairs = 0
    for line in launches:
        if not line.strip():
            continue
        op, kind, kernel, code, per = line.split()
        pairs += 1
        failures += check_pair(kernels, op, kind, kernel, int(code), int(per), rng)
    offsets = {}
    for line in subprocess.run([prog, '--coll-offsets'], check=True, capture_output=True,
                               text=True).stdout.split('\n'):
        if line.strip():
            offsets[line.split()[0]] = int(line.split()[1])
    failures += check_one_kernel_forms(kernels, offsets)
    want_pairs = 7 * 8 + 4 * 2 + 2 * 2
    if pairs != want_pairs:
        failures.append('%d (op, kind) pairs launched, want %d' % (pairs, want_pairs))
    for f in failures:
        print(f)
    print('%d pairs checked, %d failures' % (pairs, len(failures)))
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
