/* System-scope memory operations in PTX, for a SYCL kernel's CUDA device
 * pass (AdaptiveCpp's cuda target, clang's CUDA mode): there
 * sycl::atomic_ref ignores its memory scope (GPU-scope atomics, no fence
 * toward the host or the other GPUs), so ring.h and detail/device_sycl.h
 * use these instead where __CUDA_ARCH__ is defined. nvcc's CUDA branch gets
 * the same instructions from cuda::atomic_ref at thread_scope_system.
 * Atomics are relaxed, as OpenSHMEM's are; the ring's words and the waits
 * use acquire loads and release stores. */
#ifndef USHMEM_DETAIL_PTX_H
#define USHMEM_DETAIL_PTX_H

#if defined(__CUDA_ARCH__)
#include <stdint.h>

#define USHMEMI_PTX_FN static inline __host__ __device__ /* called from acpp's implicit device functions */

USHMEMI_PTX_FN uint64_t ushmemi_ptx_load_acquire64(const void *p)
{
    unsigned long long x;
    asm volatile("ld.acquire.sys.u64 %0, [%1];" : "=l"(x) : "l"(p) : "memory");
    return x;
}
/* Relaxed: no later memory operation waits for it (ring.h's early read). */
USHMEMI_PTX_FN uint64_t ushmemi_ptx_load_relaxed64(const void *p)
{
    unsigned long long x;
    asm volatile("ld.relaxed.sys.u64 %0, [%1];" : "=l"(x) : "l"(p) : "memory");
    return x;
}
USHMEMI_PTX_FN uint32_t ushmemi_ptx_load_acquire32(const void *p)
{
    unsigned x;
    asm volatile("ld.acquire.sys.u32 %0, [%1];" : "=r"(x) : "l"(p) : "memory");
    return x;
}
USHMEMI_PTX_FN void ushmemi_ptx_store_release64(void *p, uint64_t v)
{
    asm volatile("st.release.sys.u64 [%0], %1;" ::"l"(p), "l"((unsigned long long)v) : "memory");
}
USHMEMI_PTX_FN void ushmemi_ptx_store_release32(void *p, uint32_t v)
{
    asm volatile("st.release.sys.u32 [%0], %1;" ::"l"(p), "r"((unsigned)v) : "memory");
}
USHMEMI_PTX_FN uint64_t ushmemi_ptx_fetch_add64(void *p, uint64_t v)
{
    unsigned long long old;
    asm volatile("atom.relaxed.sys.add.u64 %0, [%1], %2;"
                 : "=l"(old)
                 : "l"(p), "l"((unsigned long long)v)
                 : "memory");
    return old;
}
USHMEMI_PTX_FN void ushmemi_ptx_fence(void)
{
    asm volatile("fence.sc.sys;" ::: "memory");
}
USHMEMI_PTX_FN void ushmemi_ptx_nap(void)
{
    asm volatile("nanosleep.u32 256;" ::: "memory");
}
/* 1 when p is in global memory (the heap, host-pinned memory), 0 for a
 * work-item's private or a work-group's local memory. */
USHMEMI_PTX_FN int ushmemi_ptx_is_global(const void *p)
{
    unsigned r;
    asm("{\n\t.reg .pred g;\n\tisspacep.global g, %1;\n\tselp.u32 %0, 1, 0, g;\n\t}"
        : "=r"(r)
        : "l"(p));
    return (int)r;
}

/* Defines ushmemi_ptx_rmw32/64(p, op, v, cmp): op is a USHMEM_RING_AMO_*
 * code (ring.h defines them after this file, so device_sycl.h expands it);
 * returns the old value (0 for SET). */
#define USHMEMI_PTX_RMW(bits, u, b, reg, T)                                                   \
    USHMEMI_PTX_FN T ushmemi_ptx_rmw##bits(void *p, unsigned op, T v, T cmp)                 \
    {                                                                                          \
        T old = 0;                                                                             \
        switch (op) {                                                                          \
        case USHMEM_RING_AMO_FETCH:                                                            \
            asm volatile("ld.relaxed.sys." u " %0, [%1];" : "=" reg(old) : "l"(p) : "memory"); \
            break;                                                                             \
        case USHMEM_RING_AMO_SET:                                                              \
            asm volatile("st.release.sys." u " [%0], %1;" ::"l"(p), reg(v) : "memory");        \
            break;                                                                             \
        case USHMEM_RING_AMO_SWAP:                                                             \
            asm volatile("atom.relaxed.sys.exch." b " %0, [%1], %2;"                          \
                         : "=" reg(old)                                                        \
                         : "l"(p), reg(v)                                                      \
                         : "memory");                                                          \
            break;                                                                             \
        case USHMEM_RING_AMO_CSWAP:                                                            \
            asm volatile("atom.relaxed.sys.cas." b " %0, [%1], %2, %3;"                       \
                         : "=" reg(old)                                                        \
                         : "l"(p), reg(cmp), reg(v)                                            \
                         : "memory");                                                          \
            break;                                                                             \
        case USHMEM_RING_AMO_ADD:                                                              \
            asm volatile("atom.relaxed.sys.add." u " %0, [%1], %2;"                           \
                         : "=" reg(old)                                                        \
                         : "l"(p), reg(v)                                                      \
                         : "memory");                                                          \
            break;                                                                             \
        case USHMEM_RING_AMO_AND:                                                              \
            asm volatile("atom.relaxed.sys.and." b " %0, [%1], %2;"                           \
                         : "=" reg(old)                                                        \
                         : "l"(p), reg(v)                                                      \
                         : "memory");                                                          \
            break;                                                                             \
        case USHMEM_RING_AMO_OR:                                                               \
            asm volatile("atom.relaxed.sys.or." b " %0, [%1], %2;"                            \
                         : "=" reg(old)                                                        \
                         : "l"(p), reg(v)                                                      \
                         : "memory");                                                          \
            break;                                                                             \
        default:                                                                               \
            asm volatile("atom.relaxed.sys.xor." b " %0, [%1], %2;"                           \
                         : "=" reg(old)                                                        \
                         : "l"(p), reg(v)                                                      \
                         : "memory");                                                          \
            break;                                                                             \
        }                                                                                      \
        return old;                                                                            \
    }

#endif /* __CUDA_ARCH__ */
#endif /* USHMEM_DETAIL_PTX_H */
