/* Every call of the device API (include/ushmem/device.h) from OpenCL C
 * kernels, for check_spirv.sh to compile to SPIR-V and validate; nothing
 * runs them. The typed calls come from device.h's own type lists, and the
 * script checks that each kernel-visible ushmem_ and ushmemx_ function of
 * the header is called directly by some kernel here, so a call added to
 * the header without a line here fails the test.
 *
 * Buffers come from every address space the calls accept: the heap and
 * plain buffers are __global, cooperative calls copy from __local memory,
 * and single-thread calls use private variables (which go through the ring
 * on the proxy road). */
#include <ushmem/device.h>

/* put, get, their nbi forms, p and g for every RMA type. */
#define CALL_RMA(T, NAME)                                                              \
    {                                                                                  \
        __global T *sym = (__global T *)heap;                                          \
        __global T *mine = (__global T *)buf;                                          \
        T priv = (T)1;                                                                 \
        ushmem_##NAME##_put(sym, &priv, 1, pe);                                        \
        ushmem_##NAME##_get(&priv, sym, 1, pe);                                        \
        ushmem_##NAME##_put_nbi(sym, mine, 2, pe);                                     \
        ushmem_##NAME##_get_nbi(mine, sym, 2, pe);                                     \
        ushmem_##NAME##_p(sym, priv, pe);                                              \
        *out += (ulong)ushmem_##NAME##_g(sym, pe) + (ulong)priv;                       \
    }

__kernel void rma_typed(__global char *heap, __global char *buf, __global ulong *out, int pe)
{
    USHMEM_DEVICE_RMA_TYPES(CALL_RMA)
}

/* putmem, getmem and their nbi forms for the thread, the sub-group (warp)
 * and the work-group (block), from __local and __global buffers. */
#define CALL_MEM(SUFFIX, SCOPE)                                                        \
    USHMEMI_DEV_MEM_NAME(putmem, SUFFIX)(heap, tile, n, pe);                           \
    USHMEMI_DEV_MEM_NAME(getmem, SUFFIX)(tile, heap, n, pe);                           \
    USHMEMI_DEV_MEM_NAME(putmem_nbi, SUFFIX)(heap, buf, n, pe);                        \
    USHMEMI_DEV_MEM_NAME(getmem_nbi, SUFFIX)(buf, heap, n, pe);

__kernel void rma_mem(__global char *heap, __global char *buf, ulong n, int pe)
{
    __local char tile[256];

    USHMEMI_DEV_MEM_SCOPES(CALL_MEM)
}

/* Atomics: fetch, set and swap for every type; compare_swap, add, inc and
 * their fetching forms for the standard types; and, or, xor and their
 * fetching forms for the bitwise ones. */
#define CALL_AMO_EXT(T, NAME, KIND)                                                    \
    {                                                                                  \
        __global T *sym = (__global T *)heap;                                          \
        ushmem_##NAME##_atomic_set(sym, (T)1, pe);                                     \
        *out += (ulong)ushmem_##NAME##_atomic_fetch(sym, pe);                          \
        *out += (ulong)ushmem_##NAME##_atomic_swap(sym, (T)2, pe);                     \
    }
#define CALL_AMO_STD(T, NAME, KIND)                                                    \
    {                                                                                  \
        __global T *sym = (__global T *)heap;                                          \
        *out += (ulong)ushmem_##NAME##_atomic_compare_swap(sym, (T)1, (T)2, pe);       \
        *out += (ulong)ushmem_##NAME##_atomic_fetch_add(sym, (T)3, pe);                \
        ushmem_##NAME##_atomic_add(sym, (T)4, pe);                                     \
        *out += (ulong)ushmem_##NAME##_atomic_fetch_inc(sym, pe);                      \
        ushmem_##NAME##_atomic_inc(sym, pe);                                           \
    }
#define CALL_AMO_BIT(T, NAME, KIND)                                                    \
    {                                                                                  \
        __global T *sym = (__global T *)heap;                                          \
        *out += (ulong)ushmem_##NAME##_atomic_fetch_and(sym, (T)5, pe);                \
        *out += (ulong)ushmem_##NAME##_atomic_fetch_or(sym, (T)6, pe);                 \
        *out += (ulong)ushmem_##NAME##_atomic_fetch_xor(sym, (T)7, pe);                \
        ushmem_##NAME##_atomic_and(sym, (T)8, pe);                                     \
        ushmem_##NAME##_atomic_or(sym, (T)9, pe);                                      \
        ushmem_##NAME##_atomic_xor(sym, (T)10, pe);                                    \
    }

__kernel void amo(__global char *heap, __global ulong *out, int pe)
{
    USHMEM_DEVICE_AMO_EXT_TYPES(CALL_AMO_EXT)
    USHMEM_DEVICE_AMO_STD_TYPES(CALL_AMO_STD)
    USHMEM_DEVICE_AMO_BIT_TYPES(CALL_AMO_BIT)
}

/* Signals and point-to-point waits. */
#define CALL_WAIT(T, NAME, KIND)                                                       \
    ushmem_##NAME##_wait_until((__global T *)heap, USHMEM_CMP_GE, (T)1);

__kernel void signals(__global char *heap, __global char *buf, __global ulong *sig, ulong n,
                      __global ulong *out, int pe)
{
    __local char tile[256];

    ushmem_putmem_signal(heap, buf, n, sig, 1, USHMEM_SIGNAL_SET, pe);
    ushmem_putmem_signal_nbi(heap, buf, n, sig, 1, USHMEM_SIGNAL_ADD, pe);
    ushmemx_putmem_signal_warp(heap, tile, n, sig, 1, USHMEM_SIGNAL_ADD, pe);
    ushmemx_putmem_signal_nbi_warp(heap, tile, n, sig, 1, USHMEM_SIGNAL_ADD, pe);
    ushmemx_putmem_signal_block(heap, tile, n, sig, 1, USHMEM_SIGNAL_ADD, pe);
    ushmemx_putmem_signal_nbi_block(heap, tile, n, sig, 1, USHMEM_SIGNAL_ADD, pe);
    ushmemx_signal_set(sig, 2, pe);
    ushmemx_signal_add(sig, 3, pe);
    *out += ushmem_signal_fetch(sig);
    *out += ushmem_signal_wait_until(sig, USHMEM_CMP_EQ, 6);
    USHMEM_DEVICE_AMO_STD_TYPES(CALL_WAIT)
}

/* Ordering, the barriers, who this PE is, and the collectives. */
__kernel void sync_and_coll(__global char *dest, __global char *src, ulong n,
                            __global int *out)
{
    out[0] = ushmem_my_pe();
    out[1] = ushmem_n_pes();
    out[2] = ushmem_ptr(src, 0) != 0;
    ushmem_fence();
    ushmem_quiet();
    ushmemx_quiet_warp();
    ushmemx_quiet_block();
    ushmem_sync_all();
    ushmem_barrier_all();
    ushmemx_alltoallmem_block(dest, src, n);
    ushmemx_broadcastmem_block(dest, src, n, 0);
    ushmemx_fcollectmem_block(dest, src, n);
    out[3] = ushmem_alltoallmem(dest, src, n);
    out[4] = ushmem_broadcastmem(dest, src, n, 0);
    out[5] = ushmem_fcollectmem(dest, src, n);
}

/* The same on a team the host made, by its id. */
__kernel void team_calls(__global char *dest, __global char *src, ulong n, int team,
                         __global int *out)
{
    out[0] = ushmem_team_my_pe(team);
    out[1] = ushmem_team_n_pes(team);
    out[2] = ushmem_team_translate_pe(team, 0, 0);
    out[3] = ushmem_team_sync(team);
    out[4] = ushmemx_team_barrier(team);
    out[5] = ushmemx_team_sync_block(team);
    out[6] = ushmemx_team_alltoallmem(team, dest, src, n);
    out[7] = ushmemx_team_broadcastmem(team, dest, src, n, 0);
    out[8] = ushmemx_team_fcollectmem(team, dest, src, n);
    out[9] = ushmemx_team_alltoallmem_block(team, dest, src, n);
    out[10] = ushmemx_team_broadcastmem_block(team, dest, src, n, 0);
    out[11] = ushmemx_team_fcollectmem_block(team, dest, src, n);
}
