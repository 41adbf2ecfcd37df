/* The device API's compiler-specific helpers for CUDA: what each helper
 * must do is listed in <ushmem/device.h>, which alone includes this file. */
#ifndef USHMEM_DETAIL_DEVICE_CUDA_H
#define USHMEM_DETAIL_DEVICE_CUDA_H

/* CUDA (host and device passes of nvcc), with or without relocatable device
 * code. Each translation unit holds its own __constant__ copy of the state:
 * a static object constructed at program start registers a function that
 * writes that copy, and shmem_init calls every registered function once the
 * state is known (a module registered later is written at once). Nothing
 * else is per module: the barrier's epoch and the peer table live in the
 * heap. CUDA threads have no thread-local storage to hold producer state, so
 * each submission starts from a zeroed producer (a stale head is safe, see
 * ring.h) and quiet waits for every ticket handed out. */
#include <cuda/atomic>
#include <cuda_runtime.h>
#define USHMEM_DEVICE_FN static inline __host__ __device__
typedef long long ushmemi_dev_longlong;
typedef unsigned long long ushmemi_dev_ulonglong;
static __constant__ struct ushmem_device_state ushmemi_cuda_state;

/* Writes this module's copy (ushmemi_device_register, device_state.h);
 * returns NULL, or the CUDA error's name. */
static const char *ushmemi_cuda_fill(const struct ushmem_device_state *state)
{
    cudaError_t err = cudaMemcpyToSymbol(ushmemi_cuda_state, state, sizeof(*state));
    return err == cudaSuccess ? NULL : cudaGetErrorName(err);
}
namespace {
struct ushmemi_cuda_registrar {
    ushmemi_cuda_registrar()
    {
        ushmemi_device_register_versions("cuda", ushmemi_cuda_fill, USHMEM_DEVICE_STATE_VERSION,
                                         USHMEM_RING_VERSION);
    }
};
static ushmemi_cuda_registrar ushmemi_cuda_registered;
} /* namespace */

USHMEM_DEVICE_FN const struct ushmem_device_state *ushmemi_dev_state(void)
{
#if defined(__CUDA_ARCH__)
    return &ushmemi_cuda_state;
#else
    return NULL; /* the device API is for device code */
#endif
}
/* The same state, read afresh at each call: the address goes through an
 * empty volatile asm, so the compiler neither merges the loads of two calls
 * nor lifts them out of a loop. Each call's fields are then a constant-cache
 * load (tens of nanoseconds) instead of operands, but none of them is held
 * in a register across the caller's kernel: with the plain address
 * everywhere, a kernel calling three thread-scope collectives in a loop
 * loaded 15 of the state's fields once at its start and kept them, 230
 * registers in all (nvshmem-registers-loops, seq_t). device.h says which
 * calls take this form. -DUSHMEMI_DEV_STATE_PLAIN gives the plain address
 * here too, to measure what the fresh reads cost (scripts/nvshmem_suite.sh
 * USHMEM_NVCCFLAGS); with it, nv_loops.cu's seq_w needs 71 registers. */
#define USHMEMI_DEV_HAS_STATE_FRESH 1
USHMEM_DEVICE_FN const struct ushmem_device_state *ushmemi_dev_state_fresh(void)
{
#if defined(__CUDA_ARCH__) && defined(USHMEMI_DEV_STATE_PLAIN)
    return &ushmemi_cuda_state;
#elif defined(__CUDA_ARCH__)
    unsigned zero;
    asm volatile("mov.u32 %0, 0;" : "=r"(zero));
    return (const struct ushmem_device_state *)((const char *)&ushmemi_cuda_state + zero);
#else
    return NULL;
#endif
}
/* Ends the kernel for a caller's error: the thread writes why in the fault
 * record (device_state.h), which the host prints, and traps. A function of
 * its own with no call in it: printf here instead (a call the compiler
 * cannot see into) took a kernel calling six team collectives in a loop
 * from 64 registers to 74-86, past what a block of 1024 threads may use;
 * and the value is an int, as a 64-bit argument took one of them to 72. */
static __device__ __noinline__ void ushmemi_dev_fault(int what, int value, const char *call)
{
    const struct ushmem_device_state *s = ushmemi_dev_state_fresh();
    struct ushmem_device_fault *f = (struct ushmem_device_fault *)(uintptr_t)s->fault;

    if (f != NULL) {
        int i = 0;
        f->pe = s->my_pe;
        f->what = what;
        f->value = value;
        for (; i < USHMEM_DEVICE_FAULT_CALL - 1 && call[i] != '\0'; i++)
            f->call[i] = call[i];
        f->call[i] = '\0';
        __threadfence_system();
        *(volatile uint32_t *)&f->ready = 1;
    }
    __trap();
}
USHMEM_DEVICE_FN struct ushmem_ring_producer *ushmemi_dev_producer(struct ushmem_ring_producer *scratch)
{
    return scratch;
}
/* One lane of the threads that quiet together reads tail, once they have
 * all submitted (the sync orders their tickets before the read): thousands
 * of threads reading host memory at once hold up the copy engine. */
USHMEM_DEVICE_FN uint64_t ushmemi_dev_quiet_target(struct ushmem_ring_header *r,
                                                   ushmem_ring_word_t *tail)
{
#if defined(__CUDA_ARCH__)
    cooperative_groups::coalesced_group g = cooperative_groups::coalesced_threads();
    unsigned long long target = 0;
    g.sync();
    if (g.thread_rank() == 0)
        target = ushmem_ring_load_acquire(ushmem_ring_tail_word(r, tail));
    return g.shfl(target, 0);
#else
    return ushmem_ring_load_acquire(ushmem_ring_tail_word(r, tail));
#endif
}
typedef cuda::atomic_ref<uint32_t, cuda::thread_scope_system> ushmemi_dev_ref32;
typedef cuda::atomic_ref<unsigned long long, cuda::thread_scope_system> ushmemi_dev_ref64;
USHMEM_DEVICE_FN uint32_t ushmemi_dev_load32(const uint32_t *p)
{
    return ushmemi_dev_ref32(*const_cast<uint32_t *>(p)).load(cuda::memory_order_acquire);
}
USHMEM_DEVICE_FN uint64_t ushmemi_dev_load64(const uint64_t *p)
{
    return ushmemi_dev_ref64(*reinterpret_cast<unsigned long long *>(const_cast<uint64_t *>(p)))
        .load(cuda::memory_order_acquire);
}
/* Atomics are relaxed, as OpenSHMEM's are: fence and quiet order them, and
 * an acquire-release round trip at system scope costs several times a
 * relaxed one. A set stays a release store (the non-fetching form). */
USHMEM_DEVICE_FN uint32_t ushmemi_dev_rmw32(uint32_t *p, unsigned op, uint32_t v, uint32_t cmp)
{
    ushmemi_dev_ref32 a(*p);
    switch (op) {
    case USHMEM_RING_AMO_FETCH: return a.load(cuda::memory_order_relaxed);
    case USHMEM_RING_AMO_SET: a.store(v, cuda::memory_order_release); return 0;
    case USHMEM_RING_AMO_SWAP: return a.exchange(v, cuda::memory_order_relaxed);
    case USHMEM_RING_AMO_CSWAP: a.compare_exchange_strong(cmp, v, cuda::memory_order_relaxed); return cmp;
    case USHMEM_RING_AMO_ADD: return a.fetch_add(v, cuda::memory_order_relaxed);
    case USHMEM_RING_AMO_AND: return a.fetch_and(v, cuda::memory_order_relaxed);
    case USHMEM_RING_AMO_OR: return a.fetch_or(v, cuda::memory_order_relaxed);
    default: return a.fetch_xor(v, cuda::memory_order_relaxed);
    }
}
USHMEM_DEVICE_FN uint64_t ushmemi_dev_rmw64(uint64_t *p, unsigned op, uint64_t v, uint64_t cmp)
{
    ushmemi_dev_ref64 a(*reinterpret_cast<unsigned long long *>(p));
    unsigned long long x = v, c = cmp;
    switch (op) {
    case USHMEM_RING_AMO_FETCH: return a.load(cuda::memory_order_relaxed);
    case USHMEM_RING_AMO_SET: a.store(x, cuda::memory_order_release); return 0;
    case USHMEM_RING_AMO_SWAP: return a.exchange(x, cuda::memory_order_relaxed);
    case USHMEM_RING_AMO_CSWAP: a.compare_exchange_strong(c, x, cuda::memory_order_relaxed); return c;
    case USHMEM_RING_AMO_ADD: return a.fetch_add(x, cuda::memory_order_relaxed);
    case USHMEM_RING_AMO_AND: return a.fetch_and(x, cuda::memory_order_relaxed);
    case USHMEM_RING_AMO_OR: return a.fetch_or(x, cuda::memory_order_relaxed);
    default: return a.fetch_xor(x, cuda::memory_order_relaxed);
    }
}
/* A non-fetching add, and, or or xor is a one-way reduction (red): the
 * thread does not wait a round trip for an old value nobody reads. Relaxed:
 * OpenSHMEM orders atomics only at fence and quiet (as NVSHMEM's, whose
 * non-fetching atomics are relaxed too); a release on each one made every
 * red wait for the thread's earlier writes, 0.72 of NVSHMEM's
 * shmem_atomic_bw. The library's own signals that must carry what came
 * before use ushmemi_dev_post_release64 or follow a fence. */
USHMEM_DEVICE_FN void ushmemi_dev_post32(uint32_t *p, unsigned op, uint32_t v)
{
#if defined(__CUDA_ARCH__)
    switch (op) {
    case USHMEM_RING_AMO_ADD: asm volatile("red.relaxed.sys.add.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory"); return;
    case USHMEM_RING_AMO_AND: asm volatile("red.relaxed.sys.and.b32 [%0], %1;" ::"l"(p), "r"(v) : "memory"); return;
    case USHMEM_RING_AMO_OR: asm volatile("red.relaxed.sys.or.b32 [%0], %1;" ::"l"(p), "r"(v) : "memory"); return;
    case USHMEM_RING_AMO_XOR: asm volatile("red.relaxed.sys.xor.b32 [%0], %1;" ::"l"(p), "r"(v) : "memory"); return;
    default: break;
    }
#endif
    ushmemi_dev_rmw32(p, op, v, 0);
}
USHMEM_DEVICE_FN void ushmemi_dev_post64(uint64_t *p, unsigned op, uint64_t v)
{
#if defined(__CUDA_ARCH__)
    unsigned long long x = v;
    switch (op) {
    case USHMEM_RING_AMO_ADD: asm volatile("red.relaxed.sys.add.u64 [%0], %1;" ::"l"(p), "l"(x) : "memory"); return;
    case USHMEM_RING_AMO_AND: asm volatile("red.relaxed.sys.and.b64 [%0], %1;" ::"l"(p), "l"(x) : "memory"); return;
    case USHMEM_RING_AMO_OR: asm volatile("red.relaxed.sys.or.b64 [%0], %1;" ::"l"(p), "l"(x) : "memory"); return;
    case USHMEM_RING_AMO_XOR: asm volatile("red.relaxed.sys.xor.b64 [%0], %1;" ::"l"(p), "l"(x) : "memory"); return;
    default: break;
    }
#endif
    ushmemi_dev_rmw64(p, op, v, 0);
}
/* An empty asm that says it changes v: no instruction, but the optimizer
 * must take v as new wherever it is called, in a loop too (device.h,
 * ushmemi_dev_call_rank). */
#define USHMEMI_DEV_HAS_OPAQUE 1
USHMEM_DEVICE_FN unsigned ushmemi_dev_opaque(unsigned v)
{
#if defined(__CUDA_ARCH__)
    asm volatile("" : "+r"(v));
#endif
    return v;
}
USHMEM_DEVICE_FN void ushmemi_dev_fence(void)
{
    cuda::atomic_thread_fence(cuda::memory_order_seq_cst, cuda::thread_scope_system);
}
/* A release fence: orders the thread's earlier accesses (and those it has
 * seen) before its later writes, without the sequentially consistent
 * fence's wait; followed by relaxed writes it is a release pattern. */
USHMEM_DEVICE_FN void ushmemi_dev_release_fence(void)
{
    cuda::atomic_thread_fence(cuda::memory_order_release, cuda::thread_scope_system);
}
/* A fence followed by a relaxed write is a release pattern (PTX memory
 * model), so after the thread's own fence a signal needs no release of its
 * own, which would cost a second fence on the way to the peer. */
#define USHMEMI_DEV_HAS_RELAXED 1
USHMEM_DEVICE_FN void ushmemi_dev_post_after_fence64(uint64_t *p, unsigned op, uint64_t v)
{
#if defined(__CUDA_ARCH__)
    unsigned long long x = v;
    if (op == USHMEM_RING_AMO_ADD) {
        asm volatile("red.relaxed.sys.add.u64 [%0], %1;" ::"l"(p), "l"(x) : "memory");
        return;
    }
    if (op == USHMEM_RING_AMO_SET) {
        asm volatile("st.relaxed.sys.u64 [%0], %1;" ::"l"(p), "l"(x) : "memory");
        return;
    }
#endif
    ushmemi_dev_post64(p, op, v);
}
/* A release reduction or store at system scope: one instruction where a
 * fence and a relaxed write were two (putmem_signal's ping-pong on two
 * H200s, three alternating runs: 1.917 us before, 1.820 after). */
USHMEM_DEVICE_FN void ushmemi_dev_post_release64(uint64_t *p, unsigned op, uint64_t v)
{
#if defined(__CUDA_ARCH__)
    unsigned long long x = v;
    switch (op) {
    case USHMEM_RING_AMO_SET: asm volatile("st.release.sys.u64 [%0], %1;" ::"l"(p), "l"(x) : "memory"); return;
    case USHMEM_RING_AMO_ADD: asm volatile("red.release.sys.add.u64 [%0], %1;" ::"l"(p), "l"(x) : "memory"); return;
    case USHMEM_RING_AMO_AND: asm volatile("red.release.sys.and.b64 [%0], %1;" ::"l"(p), "l"(x) : "memory"); return;
    case USHMEM_RING_AMO_OR: asm volatile("red.release.sys.or.b64 [%0], %1;" ::"l"(p), "l"(x) : "memory"); return;
    case USHMEM_RING_AMO_XOR: asm volatile("red.release.sys.xor.b64 [%0], %1;" ::"l"(p), "l"(x) : "memory"); return;
    default: break;
    }
#endif
    ushmemi_dev_fence();
    ushmemi_dev_post64(p, op, v);
}
/* Only this GPU reads and writes such a word, and the calls that use it are
 * ordered by the program (one thread, or kernels one after the other):
 * relaxed at GPU scope, no trip to system scope. */
USHMEM_DEVICE_FN uint64_t ushmemi_dev_own_load64(const uint64_t *p)
{
#if defined(__CUDA_ARCH__)
    unsigned long long x;
    asm volatile("ld.relaxed.gpu.u64 %0, [%1];" : "=l"(x) : "l"(p) : "memory");
    return x;
#else
    return ushmemi_dev_load64(p);
#endif
}
USHMEM_DEVICE_FN void ushmemi_dev_own_store64(uint64_t *p, uint64_t v)
{
#if defined(__CUDA_ARCH__)
    unsigned long long x = v;
    asm volatile("st.relaxed.gpu.u64 [%0], %1;" ::"l"(p), "l"(x) : "memory");
#else
    ushmemi_dev_rmw64(p, USHMEM_RING_AMO_SET, v, 0);
#endif
}
/* Threads that share a cooperative call: scope 0 the calling thread alone,
 * 1 its warp, 2 its block. A warp's group is every lane of it the block
 * has (32, fewer in a block's last warp when its size is not a multiple of
 * 32), as in NVSHMEM, not the lanes that happen to be converged at the
 * call: a lane still in a loop of its own (waiting for a flag, say) would
 * otherwise be left out of __activemask(), the others would copy and signal
 * as a smaller group, and the late lane again on its own. The group's
 * first meeting (__syncwarp on that mask) brings them together. */
#if defined(__CUDA_ARCH__)
__device__ static inline unsigned ushmemi_dev_warp_mask(void)
{
    unsigned n = blockDim.x * blockDim.y * blockDim.z;
    if ((n & 31u) == 0)
        return 0xffffffffu; /* every warp whole */
    unsigned tid = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    unsigned left = n - (tid & ~31u);
    return left >= 32 ? 0xffffffffu : (1u << left) - 1u;
}
#endif
USHMEM_DEVICE_FN unsigned ushmemi_dev_group_rank(unsigned scope)
{
#if defined(__CUDA_ARCH__)
    if (scope == 2)
        return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    if (scope == 1) {
        unsigned lane;
        asm("mov.u32 %0, %%laneid;" : "=r"(lane));
        return lane;
    }
#endif
    (void)scope;
    return 0;
}
USHMEM_DEVICE_FN unsigned ushmemi_dev_group_size(unsigned scope)
{
#if defined(__CUDA_ARCH__)
    if (scope == 2)
        return blockDim.x * blockDim.y * blockDim.z;
    if (scope == 1)
        return (blockDim.x * blockDim.y * blockDim.z & 31u) == 0 ? 32u
                                                                 : __popc(ushmemi_dev_warp_mask());
#endif
    (void)scope;
    return 1;
}
USHMEM_DEVICE_FN void ushmemi_dev_group_sync(unsigned scope)
{
#if defined(__CUDA_ARCH__)
    if (scope == 2)
        __syncthreads();
    else if (scope == 1 && (blockDim.x * blockDim.y * blockDim.z & 31u) == 0)
        __syncwarp();
    else if (scope == 1)
        __syncwarp(ushmemi_dev_warp_mask());
#endif
    (void)scope;
}
#define USHMEMI_DEV_COPY_FN __host__ __device__ static inline
__host__ __device__ static inline size_t ushmemi_dev_copy_fresh(size_t n)
{
#if defined(__CUDA_ARCH__)
    asm volatile("" : "+l"(n));
#endif
    return n;
}
#define USHMEMI_DEV_COPY_FRESH(n) ushmemi_dev_copy_fresh(n)
typedef int4 ushmemi_dev_word16;
#if defined(__CUDA_ARCH__)
#define USHMEMI_DEV_UNROLL _Pragma("unroll")
#else
#define USHMEMI_DEV_UNROLL
#endif
#include <ushmem/detail/device_copy.h>
USHMEM_DEVICE_FN void ushmemi_dev_memcpy(void *dst, const void *src, size_t n)
{
    memcpy(dst, src, n);
}
USHMEM_DEVICE_FN void ushmemi_dev_memzero(void *dst, size_t n)
{
    memset(dst, 0, n);
}

/* A GPU thread's registers, local and shared memory are out of the proxy
 * thread's reach: through the proxy, values of p, g and fetching atomics,
 * and puts from or gets into such memory, travel in the ring itself
 * (ring.h, FLAG_INLINE and FLAG_RESULT), 8 bytes per request. */
#define USHMEMI_DEV_RESULTS_IN_RING 1
USHMEM_DEVICE_FN int ushmemi_dev_proxy_reaches(const void *p)
{
#if defined(__CUDA_ARCH__)
    return __isGlobal(p);
#else
    (void)p;
    return 1;
#endif
}


#endif /* USHMEM_DETAIL_DEVICE_CUDA_H */
