#!/usr/bin/env python3
"""Writes shapes.cu: one small CUDA kernel per device call of
<ushmem/device.h>, at each scope the header has for it (thread, warp,
block), each alone and inside a loop, written as users write kernels: no
__launch_bounds__, run-time sizes, offsets that depend on the loop's index.

Two uses of the one file:
  - check_regs.py compiles it and fails when a kernel needs more than 64
    registers, the most a block of 1024 threads can have (65536 per SM);
  - built with shapes_run.cuh's main(), it launches every kernel at 1024
    threads per block (and other block shapes) under oshrun and checks every
    byte and word it moved.

Usage: gen_shapes.py OUTPUT.cu [--list]
"""
import sys

# Scopes: the suffix of the call's name, and the index of the group.
SCOPES = {
    'thread': ('', 'shape_thread()'),
    'warp': ('_warp', 'shape_warp()'),
    'block': ('_block', 'shape_block()'),
}
QUIET = {'thread': 'ushmem_quiet()', 'warp': 'ushmemx_quiet_warp()',
         'block': 'ushmemx_quiet_block()'}


def api_name(call, scope):
    """ushmem_putmem for a thread, ushmemx_putmem_warp and _block for groups."""
    if scope == 'thread':
        return 'ushmem_' + call
    return 'ushmemx_' + call + SCOPES[scope][0]


class Kernel:
    """One kernel: its name, the family of checks its host runner makes
    (shapes_run.cuh), the parameters and the body, and how a launch passes
    a struct shape_launch's fields to it."""

    def __init__(self, name, family, scope, form, params, body, args, ctype='char', op='0'):
        self.name = name
        self.family = family
        self.scope = scope
        self.form = form
        self.params = params
        self.body = body
        self.args = args
        self.ctype = ctype
        self.op = op


def loop_or_one(form, inner, var):
    """The body of a call on slot w: once ('one', w is the group's number
    `var`), `iters` times on slots that depend on i ('loop', w = var *
    iters + i), or `iters` times on the same slot ('rep', as NVSHMEM's
    perftests repeat one message)."""
    if form == 'one':
        return '    {\n        size_t w = %s;\n' % var + inner + '    }\n'
    if form == 'rep':
        return ('    size_t w = %s;\n    for (int i = 0; i < iters; i++) {\n' % var + inner
                + '    }\n')
    return ('    for (int i = 0; i < iters; i++) {\n'
            '        size_t w = %s * (size_t)iters + (size_t)i;\n' % var + inner + '    }\n')


FORMS = ('one', 'loop')


def form_name(base, scope, form):
    return 'shape_%s_%s_%s' % (base, scope, form)


def iters_param(form):
    return '' if form == 'one' else ', int iters'


def iters_arg(form):
    return '' if form == 'one' else ', L->iters'


KERNELS = []


def add(*a, **kw):
    KERNELS.append(Kernel(*a, **kw))


def rma_untyped():
    """putmem, getmem and their _nbi forms, at every scope: group g moves
    `chunk` bytes at slot w (also repeated on one slot, as in the report
    of kernels that could not launch: the loop-invariant message lets the
    compiler hoist the most)."""
    for call in ('putmem', 'putmem_nbi', 'getmem', 'getmem_nbi'):
        fam = 'put' if call.startswith('put') else 'get'
        for scope, (_, group) in SCOPES.items():
            for form in FORMS + ('rep',):
                inner = ('        %s(dst + w * chunk, src + w * chunk, chunk, pe);\n'
                         % api_name(call, scope))
                body = ('    size_t g = %s;\n' % group + loop_or_one(form, inner, 'g')
                        + '    %s;\n' % QUIET[scope])
                add(form_name(call, scope, form), fam, scope, form,
                    'char *dst, const char *src, size_t chunk%s, int pe' % iters_param(form),
                    body, '(char *)L->dst, (const char *)L->src, L->chunk%s, L->pe'
                    % iters_arg(form))


# Typed RMA: one type of each size class, and the floating one.
RMA_TYPES = [('long', 'long'), ('double', 'double'), ('int', 'int'), ('char', 'char')]


def rma_typed():
    for ctype, tname in RMA_TYPES:
        for call in ('put', 'put_nbi', 'get', 'get_nbi'):
            fam = 'put' if call.startswith('put') else 'get'
            for form in FORMS:
                inner = ('        ushmem_%s_%s(dst + w * nelems, src + w * nelems, nelems, pe);\n'
                         % (tname, call))
                body = ('    size_t g = shape_thread();\n' + loop_or_one(form, inner, 'g')
                        + '    ushmem_quiet();\n')
                add(form_name(tname + '_' + call, 'thread', form), fam, 'thread', form,
                    '%s *dst, const %s *src, size_t nelems%s, int pe'
                    % (ctype, ctype, iters_param(form)), body,
                    '(%s *)L->dst, (const %s *)L->src, L->chunk / sizeof(%s)%s, L->pe'
                    % (ctype, ctype, ctype, iters_arg(form)), ctype=ctype)
        for call in ('p', 'g'):
            fam = 'put' if call == 'p' else 'get'
            for form in FORMS:
                if call == 'p':
                    inner = '        ushmem_%s_p(dst + w, src[w], pe);\n' % tname
                else:
                    inner = '        dst[w] = ushmem_%s_g(src + w, pe);\n' % tname
                body = ('    size_t g = shape_thread();\n' + loop_or_one(form, inner, 'g')
                        + '    ushmem_quiet();\n')
                add(form_name(tname + '_' + call, 'thread', form), fam, 'thread', form,
                    '%s *dst, const %s *src%s, int pe' % (ctype, ctype, iters_param(form)), body,
                    '(%s *)L->dst, (const %s *)L->src%s, L->pe' % (ctype, ctype, iters_arg(form)),
                    ctype=ctype)


# Atomics: (op number for the host's replay, call, fetching, operand kind).
# Operand kinds: 'v' the word's operand, 'c' condition and operand, '' none.
AMO_STD = [('SHAPE_FETCH_ADD', 'fetch_add', True, 'v'), ('SHAPE_ADD', 'add', False, 'v'),
           ('SHAPE_FETCH_INC', 'fetch_inc', True, ''), ('SHAPE_INC', 'inc', False, ''),
           ('SHAPE_CSWAP', 'compare_swap', True, 'c'), ('SHAPE_FETCH', 'fetch', True, ''),
           ('SHAPE_SET', 'set', False, 'v'), ('SHAPE_SWAP', 'swap', True, 'v')]
AMO_BIT = [('SHAPE_FETCH_AND', 'fetch_and', True, 'v'), ('SHAPE_FETCH_OR', 'fetch_or', True, 'v'),
           ('SHAPE_FETCH_XOR', 'fetch_xor', True, 'v'), ('SHAPE_AND', 'and', False, 'v'),
           ('SHAPE_OR', 'or', False, 'v'), ('SHAPE_XOR', 'xor', False, 'v')]
# A 32- and a 64-bit type each; the bitwise calls take unsigned types.
AMO_TYPES = [(AMO_STD, 'int', 'int'), (AMO_STD, 'long', 'long'),
             (AMO_BIT, 'unsigned int', 'uint'), (AMO_BIT, 'unsigned long', 'ulong')]


def amo():
    """Thread t operates on word w = t * iters + i of the next PE, once."""
    for ops, ctype, tname in AMO_TYPES:
        for op, call, fetching, kind in ops:
            for form in FORMS:
                operands = {'v': ', shape_arg<%s>(w)' % ctype,
                            'c': ', shape_cond<%s>(w), shape_arg<%s>(w)' % (ctype, ctype),
                            '': ''}[kind]
                target = '(const %s *)tgt + w' % ctype if call == 'fetch' else 'tgt + w'
                expr = 'ushmem_%s_atomic_%s(%s%s, pe)' % (tname, call, target, operands)
                inner = ('        out[w] = %s;\n' % expr) if fetching else ('        %s;\n' % expr)
                body = ('    size_t g = shape_thread();\n' + loop_or_one(form, inner, 'g')
                        + ('' if fetching else '    ushmem_quiet();\n'))
                params = '%s *tgt%s%s, int pe' % (ctype, ', %s *out' % ctype if fetching else '',
                                                  iters_param(form))
                args = '(%s *)L->dst%s%s, L->pe' % (ctype, ', (%s *)L->out' % ctype
                                                    if fetching else '', iters_arg(form))
                add(form_name(tname + '_atomic_' + call, 'thread', form), 'amo', 'thread', form,
                    params, body, args, ctype=ctype, op=op)


def signals():
    # putmem_signal and _nbi at every scope: group g's slot w carries its
    # data and then its signal word w, set to (or added) w + 1.
    for call in ('putmem_signal', 'putmem_signal_nbi'):
        for scope, (_, group) in SCOPES.items():
            for form in FORMS + ('rep',):
                inner = ('        %s(dst + w * chunk, src + w * chunk, chunk, sig + w, w + 1, '
                         'sig_op, pe);\n' % api_name(call, scope))
                body = ('    size_t g = %s;\n' % group + loop_or_one(form, inner, 'g')
                        + '    %s;\n' % QUIET[scope])
                add(form_name(call, scope, form), 'put_signal', scope, form,
                    'char *dst, const char *src, size_t chunk, uint64_t *sig, int sig_op%s, int pe'
                    % iters_param(form), body,
                    '(char *)L->dst, (const char *)L->src, L->chunk, L->sig, L->sig_op%s, L->pe'
                    % iters_arg(form))
    for call in ('signal_set', 'signal_add'):
        for form in FORMS:
            inner = '        ushmemx_%s(sig + w, w + 1, pe);\n' % call
            body = ('    size_t g = shape_thread();\n' + loop_or_one(form, inner, 'g')
                    + '    ushmem_quiet();\n')
            add(form_name(call, 'thread', form), 'signal', 'thread', form,
                'uint64_t *sig%s, int pe' % iters_param(form), body,
                'L->sig%s, L->pe' % iters_arg(form))
    for form in FORMS:
        inner = '        out[w] = ushmem_signal_fetch(sig + w);\n'
        body = '    size_t g = shape_thread();\n' + loop_or_one(form, inner, 'g')
        add(form_name('signal_fetch', 'thread', form), 'signal_fetch', 'thread', form,
            'const uint64_t *sig, uint64_t *out%s' % iters_param(form), body,
            'L->sig, (uint64_t *)L->out%s' % iters_arg(form))
    # A wait that really waits: each thread signals word w of the next PE,
    # then waits for the previous PE's signal on its own word w.
    for form in FORMS:
        inner = ('        ushmemx_signal_add(sig + w, 1, pe);\n'
                 '        out[w] = ushmem_signal_wait_until(sig + w, USHMEM_CMP_GE, 1);\n')
        body = '    size_t g = shape_thread();\n' + loop_or_one(form, inner, 'g')
        add(form_name('signal_wait_until', 'thread', form), 'signal_wait', 'thread', form,
            'uint64_t *sig, uint64_t *out%s, int pe' % iters_param(form), body,
            'L->sig, (uint64_t *)L->out%s, L->pe' % iters_arg(form))


WAIT_TYPES = [('int', 'int'), ('long', 'long')]


def waits():
    """The typed wait_until (the header has no test or wait_until_all
    forms): each thread puts 1 into word w of the next PE, then waits for
    the previous PE's 1 in its own word w."""
    for ctype, tname in WAIT_TYPES:
        for form in FORMS:
            inner = ('        ushmem_%s_p(ivar + w, 1, pe);\n'
                     '        ushmem_%s_wait_until(ivar + w, USHMEM_CMP_EQ, 1);\n' % (tname, tname))
            body = '    size_t g = shape_thread();\n' + loop_or_one(form, inner, 'g')
            add(form_name(tname + '_wait_until', 'thread', form), 'wait', 'thread', form,
                '%s *ivar%s, int pe' % (ctype, iters_param(form)), body,
                '(%s *)L->dst%s, L->pe' % (ctype, iters_arg(form)), ctype=ctype)


def ordering():
    """quiet at each scope and fence, after a p of the thread's word w
    (alone: the call as users make it after their puts)."""
    calls = [('quiet', 'thread'), ('quiet', 'warp'), ('quiet', 'block'), ('fence', 'thread')]
    for call, scope in calls:
        for form in FORMS:
            inner = ('        ushmem_long_p(dst + w, (long)w + 1, pe);\n'
                     '        %s();\n' % api_name(call, scope))
            body = '    size_t t = shape_thread();\n' + loop_or_one(form, inner, 't')
            add(form_name(call, scope, form), 'order', scope, form,
                'long *dst%s, int pe' % iters_param(form), body,
                '(long *)L->dst%s, L->pe' % iters_arg(form), ctype='long')


def barriers():
    """barrier_all and sync_all by one thread per PE: a p to the next PE,
    the barrier, then the word the previous PE put here (sync_all orders
    without completing, so a quiet completes the p first)."""
    for call in ('barrier_all', 'sync_all'):
        for form in FORMS:
            quiet = '            ushmem_quiet();\n' if call == 'sync_all' else ''
            inner = ('            ushmem_long_p(dst + w, (ushmem_my_pe() + 1) * 1000L + (long)w, pe);\n'
                     + quiet + '            ushmem_%s();\n' % call
                     + '            out[w] = ((volatile long *)dst)[w];\n')
            if form == 'loop':
                core = ('        for (int i = 0; i < iters; i++) {\n'
                        '            size_t w = (size_t)i;\n' + inner + '        }\n')
            else:
                core = '        {\n            size_t w = 0;\n' + inner + '        }\n'
            body = '    if (blockIdx.x == 0 && shape_tid() == 0) {\n' + core + '    }\n'
            add(form_name(call, 'thread', form), 'barrier', 'thread', form,
                'long *dst, long *out%s, int pe' % iters_param(form), body,
                '(long *)L->dst, (long *)L->out%s, L->pe' % iters_arg(form), ctype='long')


def collectives():
    """alltoallmem, broadcastmem, fcollectmem by one thread per PE and by
    one block per PE (the _block forms); in a loop, round i uses its own
    part of the buffers, and the broadcast's root goes round the PEs."""
    for call in ('alltoallmem', 'broadcastmem', 'fcollectmem'):
        for scope in ('thread', 'block'):
            for form in FORMS:
                name = api_name(call, scope)
                if call == 'alltoallmem':
                    c = '%s(dst + w * n * nbytes, src + w * n * nbytes, nbytes);' % name
                elif call == 'broadcastmem':
                    c = '%s(dst + w * nbytes, src + w * nbytes, nbytes, (int)(w %% n));' % name
                else:
                    c = '%s(dst + w * n * nbytes, src + w * nbytes, nbytes);' % name
                who = ('blockIdx.x == 0 && shape_tid() == 0' if scope == 'thread'
                       else 'blockIdx.x == 0')
                if form == 'loop':
                    core = ('        for (int i = 0; i < iters; i++) {\n'
                            '            size_t w = (size_t)i;\n            ' + c + '\n        }\n')
                else:
                    core = '        size_t w = 0;\n        ' + c + '\n'
                body = ('    size_t n = (size_t)ushmem_n_pes();\n'
                        '    if (%s) {\n' % who + core + '    }\n')
                add(form_name(call, scope, form), call, scope, form,
                    'char *dst, const char *src, size_t nbytes%s' % iters_param(form), body,
                    '(char *)L->dst, (const char *)L->src, L->chunk%s' % iters_arg(form))


def pointers():
    """ushmem_ptr, and a store through it (a p where the PE is not mapped)."""
    for form in FORMS:
        inner = ('        long *q = (long *)ushmem_ptr(dst + w, pe);\n'
                 '        if (q != NULL)\n'
                 '            *q = (long)w + 1;\n'
                 '        else\n'
                 '            ushmem_long_p(dst + w, (long)w + 1, pe);\n')
        body = ('    size_t t = shape_thread();\n' + loop_or_one(form, inner, 't')
                + '    ushmem_quiet();\n')
        add(form_name('ptr', 'thread', form), 'order', 'thread', form,
            'long *dst%s, int pe' % iters_param(form), body,
            '(long *)L->dst%s, L->pe' % iters_arg(form), ctype='long')


def generate():
    rma_untyped()
    rma_typed()
    amo()
    signals()
    waits()
    ordering()
    barriers()
    collectives()
    pointers()


HEADER = '''/* Generated by gen_shapes.py: do not edit. One kernel per device call of
 * <ushmem/device.h> and scope, alone (_one) and in a loop (_loop), with no
 * __launch_bounds__, as users write them; check_regs.py holds each to 64
 * registers, and shapes_run.cuh launches them at 1024 threads per block. */
#include <stddef.h>
#include <stdint.h>

#include <ushmem/device.h>

#include "shapes_dev.cuh"

'''


def emit(out):
    out.write(HEADER)
    for k in KERNELS:
        out.write('__global__ void %s(%s)\n{\n%s}\n\n' % (k.name, k.params, k.body))
    out.write('#if !defined(SHAPES_KERNELS_ONLY)\n#include "shapes_run.cuh"\n\n')
    for k in KERNELS:
        out.write('static void launch_%s(const struct shape_launch *L)\n{\n'
                  '    %s<<<L->grid, L->block, 0, L->stream>>>(%s);\n}\n\n'
                  % (k.name, k.name, k.args))
    out.write('static const struct shape_kernel shape_kernels[] = {\n')
    for k in KERNELS:
        out.write('    {"%s", (const void *)%s, launch_%s, SHAPE_F_%s, SHAPE_S_%s, %s, '
                  'sizeof(%s), %s},\n'
                  % (k.name, k.name, k.name, k.family.upper(), k.scope.upper(), 'SHAPE_' + k.form.upper(),
                     k.ctype, k.op))
    out.write('};\n\nint main(int argc, char **argv)\n{\n'
              '    return shape_main(argc, argv, shape_kernels,\n'
              '                      sizeof(shape_kernels) / sizeof(shape_kernels[0]));\n}\n'
              '#endif\n')


def main(argv):
    if len(argv) < 2:
        sys.stderr.write(__doc__)
        return 2
    generate()
    names = [k.name for k in KERNELS]
    assert len(names) == len(set(names)), 'two kernels of one name'
    if '--list' in argv[2:]:
        for k in KERNELS:
            print(k.name)
    with open(argv[1], 'w') as out:
        emit(out)
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
