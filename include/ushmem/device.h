/* The ushmem device API: OpenSHMEM-style calls for code that runs on the
 * device (a GPU kernel; on the cpu backend, any host thread), with ushmem_*
 * names that mirror the host API.
 *
 * Every call reads the device state (include/ushmem/detail/device_state.h),
 * which shmem_init fills, and takes one of two roads to the target PE:
 *   - direct: loads, stores and atomics on the PE's heap as mapped into this
 *     process (peer base + (addr - my heap base)), when the state says that
 *     the call's operation class goes directly to that PE (or it is this PE)
 *     and USHMEM_DEVICE_ROUTE is not "proxy";
 *   - proxy: a request on the proxy ring (include/ushmem/detail/ring.h) that
 *     the host's proxy thread executes. Blocking calls wait for their ticket;
 *     non-blocking ones and non-fetching atomics are completed by quiet.
 *
 * Rules a caller relies on:
 *   - Remote addresses are symmetric heap addresses of this PE (shmem_malloc
 *     and friends); globals are not reachable from device code.
 *   - The source of a put_nbi and the destination of a get_nbi must stay
 *     valid and untouched until the calling thread's ushmem_quiet.
 *   - Through the proxy, buffers the host cannot reach (on CUDA: registers,
 *     local and shared memory) travel in the ring 8 bytes per request, and
 *     such a get or put_nbi completes before the call returns; buffers in
 *     global memory (the heap, cudaMalloc) go by address on the copy engine.
 *   - quiet and fence act on the calling thread's operations (on CUDA, where
 *     there is no per-thread producer state, quiet waits for every request on
 *     the ring).
 *   - ushmem_barrier_all is collective over all PEs with one calling thread
 *     per PE at a time; it completes that thread's operations first. It uses
 *     flags and an epoch of its own, so it never mixes with shmem_barrier_all.
 *   - The cooperative calls (ushmemx_*_warp, ushmemx_*_block and the block
 *     collectives) are made by every thread of the warp or block with the
 *     same arguments; they share the copy between those threads. On the cpu
 *     backend a thread is its own warp and block.
 *   - The block collectives (ushmemx_alltoallmem_block and friends) are
 *     called by one block per PE on every PE, with the same sizes; they
 *     return when this PE's part is complete everywhere, as the host
 *     collectives do, and they use the device barrier.
 *   - wait_until with a comparison that is not a USHMEM_CMP_* value returns at
 *     once; a signal operation other than USHMEM_SIGNAL_ADD sets.
 *
 * Everything that depends on the compiler (atomics on remote words, fences,
 * thread-local state, function qualifiers, where the state lives) is in the
 * first section below and nowhere else. */
#ifndef USHMEM_DEVICE_H
#define USHMEM_DEVICE_H

#if !defined(__OPENCL_C_VERSION__) /* OpenCL C has none: ring.h defines the types */
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#endif

#include <ushmem/detail/device_state.h>
#include <ushmem/detail/ring.h>

#if defined(__OPENCL_C_VERSION__) /* `local` is an OpenCL C keyword; see ring.h */
#pragma push_macro("local")
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wkeyword-macro"
#define local ushmemi_local
#pragma clang diagnostic pop
#endif

/* ---- Compiler-specific helpers: the only place that knows the toolchain. ----
 * USHMEM_DEVICE_FN: qualifiers of every function in this header.
 * ushmemi_dev_state(): the state.
 * ushmemi_dev_producer(scratch): the producer state to submit with;
 *   ushmemi_dev_quiet_target(ring): the ticket count quiet waits for.
 * ushmemi_dev_load32/64 (acquire), ushmemi_dev_rmw32/64 (one read-modify-write,
 *   numbered as the ring's enum ushmem_ring_amo_op, returning the old value),
 *   at system scope because the other side is another process or device.
 * ushmemi_dev_post32/64: the same without the old value (add, and, or, xor
 *   may then be one-way).
 * ushmemi_dev_fence(): a sequentially consistent fence at system scope.
 * Optional, where the toolchain has cheaper forms (USHMEMI_DEV_HAS_RELAXED;
 *   otherwise the ordered helpers above stand in):
 *   ushmemi_dev_post_after_fence64: a set or add that directly follows the
 *   thread's own ushmemi_dev_fence, which already orders what came before;
 *   ushmemi_dev_own_load64/store64: a word only this device's threads use,
 *   between calls the program orders (the device barrier's epoch).
 * ushmemi_dev_group_rank/size/sync(scope): the threads that make one
 *   cooperative call (scope 0: the thread, 1: its warp, 2: its block).
 * ushmemi_dev_copy_group(): copies bytes to or from mapped peer memory, the
 *   group's threads sharing the work.
 * ushmemi_dev_memcpy / ushmemi_dev_memzero: memcpy and memset to zero for one
 *   thread's own small objects (OpenCL C has no <string.h>).
 * ushmemi_dev_longlong / _ulonglong: the types of the longlong and ulonglong
 *   calls, 64 bits (OpenCL C's long long would be 128).
 * ushmemi_dev_proxy_reaches(p): 1 when the proxy thread can reach p, else
 *   the bytes travel in the ring when USHMEMI_DEV_RESULTS_IN_RING is 1. */
#if defined(__CUDACC__)
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
    ushmemi_cuda_registrar() { ushmemi_device_register("cuda", ushmemi_cuda_fill); }
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
USHMEM_DEVICE_FN struct ushmem_ring_producer *ushmemi_dev_producer(struct ushmem_ring_producer *scratch)
{
    return scratch;
}
/* One lane of the threads that quiet together reads tail, once they have
 * all submitted (the sync orders their tickets before the read): thousands
 * of threads reading host memory at once hold up the copy engine. */
USHMEM_DEVICE_FN uint64_t ushmemi_dev_quiet_target(struct ushmem_ring_header *r)
{
#if defined(__CUDA_ARCH__)
    cooperative_groups::coalesced_group g = cooperative_groups::coalesced_threads();
    unsigned long long target = 0;
    g.sync();
    if (g.thread_rank() == 0)
        target = ushmem_ring_load_acquire(&r->tail);
    return g.shfl(target, 0);
#else
    return ushmem_ring_load_acquire(&r->tail);
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
 * thread does not wait a round trip for an old value nobody reads. */
USHMEM_DEVICE_FN void ushmemi_dev_post32(uint32_t *p, unsigned op, uint32_t v)
{
#if defined(__CUDA_ARCH__)
    switch (op) {
    case USHMEM_RING_AMO_ADD: asm volatile("red.release.sys.add.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory"); return;
    case USHMEM_RING_AMO_AND: asm volatile("red.release.sys.and.b32 [%0], %1;" ::"l"(p), "r"(v) : "memory"); return;
    case USHMEM_RING_AMO_OR: asm volatile("red.release.sys.or.b32 [%0], %1;" ::"l"(p), "r"(v) : "memory"); return;
    case USHMEM_RING_AMO_XOR: asm volatile("red.release.sys.xor.b32 [%0], %1;" ::"l"(p), "r"(v) : "memory"); return;
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
    case USHMEM_RING_AMO_ADD: asm volatile("red.release.sys.add.u64 [%0], %1;" ::"l"(p), "l"(x) : "memory"); return;
    case USHMEM_RING_AMO_AND: asm volatile("red.release.sys.and.b64 [%0], %1;" ::"l"(p), "l"(x) : "memory"); return;
    case USHMEM_RING_AMO_OR: asm volatile("red.release.sys.or.b64 [%0], %1;" ::"l"(p), "l"(x) : "memory"); return;
    case USHMEM_RING_AMO_XOR: asm volatile("red.release.sys.xor.b64 [%0], %1;" ::"l"(p), "l"(x) : "memory"); return;
    default: break;
    }
#endif
    ushmemi_dev_rmw64(p, op, v, 0);
}
USHMEM_DEVICE_FN void ushmemi_dev_fence(void)
{
    cuda::atomic_thread_fence(cuda::memory_order_seq_cst, cuda::thread_scope_system);
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
 * 1 its warp (the threads of it that are active), 2 its block. */
USHMEM_DEVICE_FN unsigned ushmemi_dev_group_rank(unsigned scope)
{
#if defined(__CUDA_ARCH__)
    if (scope == 2)
        return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    if (scope == 1) {
        unsigned lane;
        asm("mov.u32 %0, %%laneid;" : "=r"(lane));
        return __popc(__activemask() & ((1u << lane) - 1u));
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
        return __popc(__activemask());
#endif
    (void)scope;
    return 1;
}
USHMEM_DEVICE_FN void ushmemi_dev_group_sync(unsigned scope)
{
#if defined(__CUDA_ARCH__)
    if (scope == 2)
        __syncthreads();
    else if (scope == 1)
        __syncwarp(__activemask());
#endif
    (void)scope;
}
/* Copies n bytes with `size` threads, this one being `rank`, in words of W
 * bytes (dst and src share their alignment modulo W); four words in flight
 * per thread, since a load from a peer's memory takes a microsecond (and
 * more would spill registers in blocks of 1024 threads). Indices are of type
 * I: 32-bit whenever the words fit, since every instruction counts when a
 * block's 32 warps share an SM's four schedulers for a small message. */
#if defined(__CUDA_ARCH__)
#define USHMEMI_DEV_UNROLL _Pragma("unroll")
#else
#define USHMEMI_DEV_UNROLL
#endif
template <typename W, typename I>
__host__ __device__ static inline void ushmemi_dev_copy_words(char *dst, const char *src, I n,
                                                              I rank, I size)
{
    I head = (I)((sizeof(W) - ((uintptr_t)dst & (sizeof(W) - 1))) & (sizeof(W) - 1));
    if (head > n)
        head = n;
    for (I i = rank; i < head; i += size)
        dst[i] = src[i];
    W *d = reinterpret_cast<W *>(dst + head);
    const W *s = reinterpret_cast<const W *>(src + head);
    I nw = (n - head) / (I)sizeof(W), i = rank;
    for (; i + 3 * size < nw; i += 4 * size) {
        W v[4];
        USHMEMI_DEV_UNROLL
        for (I k = 0; k < 4; k++)
            v[k] = s[i + k * size];
        USHMEMI_DEV_UNROLL
        for (I k = 0; k < 4; k++)
            d[i + k * size] = v[k];
    }
    for (; i < nw; i += size)
        d[i] = s[i];
    for (I j = head + nw * (I)sizeof(W) + rank; j < n; j += size)
        dst[j] = src[j];
}
/* A thread of rank >= W with no word of its own (rank >= n / W) has nothing
 * to copy: the head and tail bytes go to ranks below W. Such threads, most
 * of a block for a small message, leave before any of the copy's
 * arithmetic. */
template <typename W>
__host__ __device__ static inline void ushmemi_dev_copy_as(char *dst, const char *src, size_t n,
                                                           unsigned rank, unsigned size)
{
    if (rank >= sizeof(W) && rank >= n / sizeof(W))
        return;
    /* The 32-bit form needs n plus a stride of indices to stay below 2^32. */
    if (n <= (size_t)UINT32_MAX - 4u * (size_t)size * sizeof(W))
        ushmemi_dev_copy_words<W, unsigned>(dst, src, (unsigned)n, rank, size);
    else
        ushmemi_dev_copy_words<W, size_t>(dst, src, n, rank, size);
}
USHMEM_DEVICE_FN void ushmemi_dev_copy_group(void *dst, const void *src, size_t n, unsigned rank,
                                             unsigned size)
{
    char *d = static_cast<char *>(dst);
    const char *s = static_cast<const char *>(src);
    uintptr_t skew = (uintptr_t)d ^ (uintptr_t)s;

    /* One aligned word (p, g, a flag): one load and one store, so that a
     * waiting PE never sees it half written. */
    if (size == 1 && (n & (n - 1)) == 0 && n <= 16 && (((uintptr_t)d | skew) & (n - 1)) == 0) {
        switch (n) {
        case 1: *d = *s; return;
        case 2: *reinterpret_cast<uint16_t *>(d) = *reinterpret_cast<const uint16_t *>(s); return;
        case 4: *reinterpret_cast<uint32_t *>(d) = *reinterpret_cast<const uint32_t *>(s); return;
        case 8: *reinterpret_cast<uint64_t *>(d) = *reinterpret_cast<const uint64_t *>(s); return;
        default: *reinterpret_cast<int4 *>(d) = *reinterpret_cast<const int4 *>(s); return;
        }
    }
    /* At most one aligned 16-byte word per thread (a small message for a
     * block or warp): one load and one store, none of the general copy's
     * branches, which cost more than the copy itself. */
    if ((((uintptr_t)d | skew | n) & 15) == 0 && n / 16 <= size) {
        if (rank < n / 16)
            reinterpret_cast<int4 *>(d)[rank] = reinterpret_cast<const int4 *>(s)[rank];
        return;
    }
    if ((skew & 15) == 0)
        ushmemi_dev_copy_as<int4>(d, s, n, rank, size);
    else if ((skew & 7) == 0)
        ushmemi_dev_copy_as<uint64_t>(d, s, n, rank, size);
    else if ((skew & 3) == 0)
        ushmemi_dev_copy_as<uint32_t>(d, s, n, rank, size);
    else
        ushmemi_dev_copy_as<char>(d, s, n, rank, size);
}
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

#elif defined(__OPENCL_C_VERSION__)
/* OpenCL C for Intel GPUs: compiled to SPIR-V (clang -cl-std=CL2.0 or
 * CL3.0 -target spir64, then llvm-spirv) for a Level Zero module. It needs
 * the generic address space, because every call takes plain pointers that
 * may name the heap (__global), a work-group's __local memory or private
 * variables. OpenCL C 2.0 has it; 3.0 has it as an optional feature, as it
 * has program-scope globals and acquire-release and sequentially consistent
 * atomics at all-devices scope. 64-bit atomics need cl_khr_int64_base_atomics
 * and cl_khr_int64_extended_atomics, the double calls cl_khr_fp64. ring.h
 * and the check below stop the compile, naming what is missing.
 *
 * The state: each module (SPIR-V binary) holds one program-scope copy, named
 * ushmem_device_state, as each CUDA translation unit holds its own. The ze
 * backend writes it from the host's copy, as CUDA's registrar does: at
 * shmem_init for the modules created before it, at once for a module
 * created later, by finding it with zeModuleGetGlobalPointer(module,
 * "ushmem_device_state", ...) and copying the struct there before any
 * kernel of the module runs. Until then it is zero (version 0).
 *
 * Work-items have no thread-local storage, so as on CUDA each submission
 * starts from a zeroed producer and quiet waits for every ticket handed out.
 * A warp is a sub-group (cl_khr_subgroups, or the 3.0 feature
 * __opencl_c_subgroups): its cooperative calls are made by every work-item
 * of the sub-group, in converged control flow, unlike CUDA's active-lane
 * groups. Without sub-groups a work-item is its own warp. A block is the
 * work-group. The proxy thread reaches __global memory (Level Zero's device,
 * host and shared allocations), which to_global() tells apart from private
 * and __local memory; those travel in the ring. */
#if __OPENCL_C_VERSION__ >= 300 && (!defined(__opencl_c_program_scope_global_variables) || \
                                    !defined(__opencl_c_atomic_order_seq_cst))
#error "ushmem device API: OpenCL C 3.0 needs program-scope global variables and seq_cst atomics"
#endif
#if defined(cl_khr_subgroups) || defined(__opencl_c_subgroups)
#define USHMEMI_DEV_CL_SUBGROUPS 1
#else
#define USHMEMI_DEV_CL_SUBGROUPS 0
#endif
#define USHMEM_DEVICE_FN static inline
typedef long ushmemi_dev_longlong;
typedef unsigned long ushmemi_dev_ulonglong;
__global struct ushmem_device_state ushmem_device_state;

USHMEM_DEVICE_FN const struct ushmem_device_state *ushmemi_dev_state(void)
{
    return &ushmem_device_state;
}
USHMEM_DEVICE_FN struct ushmem_ring_producer *ushmemi_dev_producer(struct ushmem_ring_producer *scratch)
{
    return scratch;
}
USHMEM_DEVICE_FN uint64_t ushmemi_dev_quiet_target(struct ushmem_ring_header *r)
{
    return ushmem_ring_load_acquire(&r->tail);
}
/* Every atomic is at all-devices scope (SPIR-V CrossDevice): the other side
 * is another process's GPU or the host. */
#define USHMEMI_DEV_CL_SCOPE memory_scope_all_svm_devices
USHMEM_DEVICE_FN uint32_t ushmemi_dev_load32(const uint32_t *p)
{
    return atomic_load_explicit((volatile atomic_uint *)p, memory_order_acquire,
                                USHMEMI_DEV_CL_SCOPE);
}
USHMEM_DEVICE_FN uint64_t ushmemi_dev_load64(const uint64_t *p)
{
    return atomic_load_explicit((volatile atomic_ulong *)p, memory_order_acquire,
                                USHMEMI_DEV_CL_SCOPE);
}
/* Acquire-release, as in the C branch; a set is a release store. */
USHMEM_DEVICE_FN uint32_t ushmemi_dev_rmw32(uint32_t *p, unsigned op, uint32_t v, uint32_t cmp)
{
    volatile atomic_uint *a = (volatile atomic_uint *)p;
    switch (op) {
    case USHMEM_RING_AMO_FETCH:
        return atomic_load_explicit(a, memory_order_acquire, USHMEMI_DEV_CL_SCOPE);
    case USHMEM_RING_AMO_SET:
        atomic_store_explicit(a, v, memory_order_release, USHMEMI_DEV_CL_SCOPE);
        return 0;
    case USHMEM_RING_AMO_SWAP:
        return atomic_exchange_explicit(a, v, memory_order_acq_rel, USHMEMI_DEV_CL_SCOPE);
    case USHMEM_RING_AMO_CSWAP:
        atomic_compare_exchange_strong_explicit(a, &cmp, v, memory_order_acq_rel,
                                                memory_order_acquire, USHMEMI_DEV_CL_SCOPE);
        return cmp;
    case USHMEM_RING_AMO_ADD:
        return atomic_fetch_add_explicit(a, v, memory_order_acq_rel, USHMEMI_DEV_CL_SCOPE);
    case USHMEM_RING_AMO_AND:
        return atomic_fetch_and_explicit(a, v, memory_order_acq_rel, USHMEMI_DEV_CL_SCOPE);
    case USHMEM_RING_AMO_OR:
        return atomic_fetch_or_explicit(a, v, memory_order_acq_rel, USHMEMI_DEV_CL_SCOPE);
    default:
        return atomic_fetch_xor_explicit(a, v, memory_order_acq_rel, USHMEMI_DEV_CL_SCOPE);
    }
}
USHMEM_DEVICE_FN uint64_t ushmemi_dev_rmw64(uint64_t *p, unsigned op, uint64_t v, uint64_t cmp)
{
    volatile atomic_ulong *a = (volatile atomic_ulong *)p;
    switch (op) {
    case USHMEM_RING_AMO_FETCH:
        return atomic_load_explicit(a, memory_order_acquire, USHMEMI_DEV_CL_SCOPE);
    case USHMEM_RING_AMO_SET:
        atomic_store_explicit(a, v, memory_order_release, USHMEMI_DEV_CL_SCOPE);
        return 0;
    case USHMEM_RING_AMO_SWAP:
        return atomic_exchange_explicit(a, v, memory_order_acq_rel, USHMEMI_DEV_CL_SCOPE);
    case USHMEM_RING_AMO_CSWAP:
        atomic_compare_exchange_strong_explicit(a, &cmp, v, memory_order_acq_rel,
                                                memory_order_acquire, USHMEMI_DEV_CL_SCOPE);
        return cmp;
    case USHMEM_RING_AMO_ADD:
        return atomic_fetch_add_explicit(a, v, memory_order_acq_rel, USHMEMI_DEV_CL_SCOPE);
    case USHMEM_RING_AMO_AND:
        return atomic_fetch_and_explicit(a, v, memory_order_acq_rel, USHMEMI_DEV_CL_SCOPE);
    case USHMEM_RING_AMO_OR:
        return atomic_fetch_or_explicit(a, v, memory_order_acq_rel, USHMEMI_DEV_CL_SCOPE);
    default:
        return atomic_fetch_xor_explicit(a, v, memory_order_acq_rel, USHMEMI_DEV_CL_SCOPE);
    }
}
/* SPIR-V has no one-way reduction: an atomic whose result is unused. */
USHMEM_DEVICE_FN void ushmemi_dev_post32(uint32_t *p, unsigned op, uint32_t v)
{
    ushmemi_dev_rmw32(p, op, v, 0);
}
USHMEM_DEVICE_FN void ushmemi_dev_post64(uint64_t *p, unsigned op, uint64_t v)
{
    ushmemi_dev_rmw64(p, op, v, 0);
}
USHMEM_DEVICE_FN void ushmemi_dev_fence(void)
{
    atomic_work_item_fence(CLK_GLOBAL_MEM_FENCE, memory_order_seq_cst, USHMEMI_DEV_CL_SCOPE);
}
/* Work-items that share a cooperative call: scope 0 the work-item alone,
 * 1 its sub-group, 2 its work-group. */
USHMEM_DEVICE_FN unsigned ushmemi_dev_group_rank(unsigned scope)
{
    if (scope == 2)
        return (unsigned)get_local_linear_id();
#if USHMEMI_DEV_CL_SUBGROUPS
    if (scope == 1)
        return get_sub_group_local_id();
#endif
    return 0;
}
USHMEM_DEVICE_FN unsigned ushmemi_dev_group_size(unsigned scope)
{
    if (scope == 2)
        return (unsigned)(get_local_size(0) * get_local_size(1) * get_local_size(2));
#if USHMEMI_DEV_CL_SUBGROUPS
    if (scope == 1)
        return get_sub_group_size();
#endif
    return 1;
}
USHMEM_DEVICE_FN void ushmemi_dev_group_sync(unsigned scope)
{
    if (scope == 2)
        work_group_barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
#if USHMEMI_DEV_CL_SUBGROUPS
    else if (scope == 1)
        sub_group_barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
#endif
}
/* Copies n bytes with `size` work-items, this one being `rank`, in words of
 * type W (dst and src share their alignment modulo sizeof(W)), four words in
 * flight per work-item as on CUDA; one function per word type, since
 * OpenCL C has no templates. */
#define USHMEMI_DEV_CL_COPY_WORDS(W)                                                   \
    USHMEM_DEVICE_FN void ushmemi_dev_copy_##W(char *dst, const char *src, size_t n,   \
                                               unsigned rank, unsigned size)           \
    {                                                                                  \
        size_t head = (sizeof(W) - ((uintptr_t)dst & (sizeof(W) - 1))) & (sizeof(W) - 1); \
        if (head > n)                                                                  \
            head = n;                                                                  \
        for (size_t i = rank; i < head; i += size)                                     \
            dst[i] = src[i];                                                           \
        W *d = (W *)(dst + head);                                                      \
        const W *s = (const W *)(src + head);                                          \
        size_t nw = (n - head) / sizeof(W), i = rank, step = size;                     \
        for (; i + 3 * step < nw; i += 4 * step) {                                     \
            W v0 = s[i], v1 = s[i + step], v2 = s[i + 2 * step], v3 = s[i + 3 * step]; \
            d[i] = v0;                                                                 \
            d[i + step] = v1;                                                          \
            d[i + 2 * step] = v2;                                                      \
            d[i + 3 * step] = v3;                                                      \
        }                                                                              \
        for (; i < nw; i += step)                                                      \
            d[i] = s[i];                                                               \
        for (size_t j = head + nw * sizeof(W) + rank; j < n; j += step)                \
            dst[j] = src[j];                                                           \
    }
USHMEMI_DEV_CL_COPY_WORDS(uint4)
USHMEMI_DEV_CL_COPY_WORDS(ulong)
USHMEMI_DEV_CL_COPY_WORDS(uint)
#undef USHMEMI_DEV_CL_COPY_WORDS
USHMEM_DEVICE_FN void ushmemi_dev_copy_group(void *dst, const void *src, size_t n, unsigned rank,
                                             unsigned size)
{
    char *d = (char *)dst;
    const char *s = (const char *)src;
    uintptr_t skew = (uintptr_t)d ^ (uintptr_t)s;

    /* One aligned word (p, g, a flag): one load and one store, so that a
     * waiting PE never sees it half written. */
    if (size == 1 && (n & (n - 1)) == 0 && n <= 16 && (((uintptr_t)d | skew) & (n - 1)) == 0) {
        switch (n) {
        case 1: *d = *s; return;
        case 2: *(ushort *)d = *(const ushort *)s; return;
        case 4: *(uint *)d = *(const uint *)s; return;
        case 8: *(ulong *)d = *(const ulong *)s; return;
        default: *(uint4 *)d = *(const uint4 *)s; return;
        }
    }
    if ((skew & 15) == 0) {
        ushmemi_dev_copy_uint4(d, s, n, rank, size);
    } else if ((skew & 7) == 0) {
        ushmemi_dev_copy_ulong(d, s, n, rank, size);
    } else if ((skew & 3) == 0) {
        ushmemi_dev_copy_uint(d, s, n, rank, size);
    } else {
        for (size_t i = rank; i < n; i += size)
            d[i] = s[i];
    }
}
USHMEM_DEVICE_FN void ushmemi_dev_memcpy(void *dst, const void *src, size_t n)
{
    for (size_t i = 0; i < n; i++)
        ((char *)dst)[i] = ((const char *)src)[i];
}
USHMEM_DEVICE_FN void ushmemi_dev_memzero(void *dst, size_t n)
{
    for (size_t i = 0; i < n; i++)
        ((char *)dst)[i] = 0;
}
/* The proxy thread cannot reach a work-item's private or __local memory:
 * through the proxy, values of p, g and fetching atomics, and puts from or
 * gets into such memory, travel in the ring (FLAG_INLINE, FLAG_RESULT). */
#define USHMEMI_DEV_RESULTS_IN_RING 1
USHMEM_DEVICE_FN int ushmemi_dev_proxy_reaches(const void *p)
{
    return to_global(p) != NULL;
}

#elif defined(SYCL_LANGUAGE_VERSION)
/* SYCL: sycl::atomic_ref<..., sycl::memory_scope::system> for the atomics, a
 * device global for the state, and a zeroed producer per submission as in
 * CUDA. */
#error "ushmem device API: the SYCL helpers are not written yet"

#else
/* C11 (the cpu backend, where device code is host threads) and host C++
 * (GCC and Clang, reached through the __atomic builtins, since C++ before
 * C++23 has no _Atomic). libushmem defines the state and the per-thread
 * producer. */
#define USHMEM_DEVICE_FN static inline
typedef long long ushmemi_dev_longlong;
typedef unsigned long long ushmemi_dev_ulonglong;
#if defined(__cplusplus)
#define USHMEMI_DEV_ATOMIC(T) T
#define USHMEMI_DEV_LOAD(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define USHMEMI_DEV_STORE(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)
#define USHMEMI_DEV_XCHG(p, v) __atomic_exchange_n((p), (v), __ATOMIC_ACQ_REL)
#define USHMEMI_DEV_CAS(p, cmp_p, v)                                                   \
    __atomic_compare_exchange_n((p), (cmp_p), (v), false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)
#define USHMEMI_DEV_FETCH(p, OP, v) __atomic_fetch_##OP((p), (v), __ATOMIC_ACQ_REL)
#define USHMEMI_DEV_FENCE() __atomic_thread_fence(__ATOMIC_SEQ_CST)
extern "C" {
extern struct ushmem_device_state ushmem_device_state;
extern thread_local struct ushmem_ring_producer ushmem_device_producer;
}
#else
#include <stdatomic.h>
/* Heap words are plain memory; C11 atomics act on them through an _Atomic
 * view of the same size and alignment, as GCC and Clang lay them out. */
#define USHMEMI_DEV_ATOMIC(T) _Atomic T
#define USHMEMI_DEV_LOAD(p) atomic_load_explicit((p), memory_order_acquire)
#define USHMEMI_DEV_STORE(p, v) atomic_store_explicit((p), (v), memory_order_release)
#define USHMEMI_DEV_XCHG(p, v) atomic_exchange_explicit((p), (v), memory_order_acq_rel)
#define USHMEMI_DEV_CAS(p, cmp_p, v)                                                   \
    atomic_compare_exchange_strong_explicit((p), (cmp_p), (v), memory_order_acq_rel,   \
                                            memory_order_acquire)
#define USHMEMI_DEV_FETCH(p, OP, v) atomic_fetch_##OP##_explicit((p), (v), memory_order_acq_rel)
#define USHMEMI_DEV_FENCE() atomic_thread_fence(memory_order_seq_cst)
#if defined(USHMEM_DEVICE_MODULE)
/* A device module in C: code that a Level Zero driver loads as a native
 * module and runs in a process of its own (the ze test driver's helper, the
 * stand-in for a GPU). The module holds its own state, which the host fills
 * with shmemx_ze_module_init (zeModuleGetGlobalPointer and a copy), and
 * each work-item (a thread there) its own producer; weak, so that several
 * translation units of one module share them. The proxy thread runs in the
 * program's process and reaches no memory of the module's process but
 * device and host allocations, which it moves with the copy engine: values
 * travel in the ring. */
__attribute__((weak, visibility("default"))) struct ushmem_device_state ushmem_device_state;
__attribute__((weak)) _Thread_local struct ushmem_ring_producer ushmem_device_producer;
#ifndef USHMEMI_DEV_RESULTS_IN_RING
#define USHMEMI_DEV_RESULTS_IN_RING 1
#endif
#else
extern struct ushmem_device_state ushmem_device_state;
extern _Thread_local struct ushmem_ring_producer ushmem_device_producer;
#endif
#endif
USHMEM_DEVICE_FN const struct ushmem_device_state *ushmemi_dev_state(void)
{
    return &ushmem_device_state;
}
USHMEM_DEVICE_FN struct ushmem_ring_producer *ushmemi_dev_producer(struct ushmem_ring_producer *scratch)
{
    (void)scratch;
    return &ushmem_device_producer;
}
USHMEM_DEVICE_FN uint64_t ushmemi_dev_quiet_target(struct ushmem_ring_header *r)
{
    (void)r;
    return ushmem_device_producer.issued;
}
USHMEM_DEVICE_FN uint32_t ushmemi_dev_load32(const uint32_t *p)
{
    return USHMEMI_DEV_LOAD((USHMEMI_DEV_ATOMIC(uint32_t) *)p);
}
USHMEM_DEVICE_FN uint64_t ushmemi_dev_load64(const uint64_t *p)
{
    return USHMEMI_DEV_LOAD((USHMEMI_DEV_ATOMIC(uint64_t) *)p);
}
USHMEM_DEVICE_FN uint32_t ushmemi_dev_rmw32(uint32_t *p, unsigned op, uint32_t v, uint32_t cmp)
{
    USHMEMI_DEV_ATOMIC(uint32_t) *a = (USHMEMI_DEV_ATOMIC(uint32_t) *)p;
    switch (op) {
    case USHMEM_RING_AMO_FETCH: return USHMEMI_DEV_LOAD(a);
    case USHMEM_RING_AMO_SET: USHMEMI_DEV_STORE(a, v); return 0;
    case USHMEM_RING_AMO_SWAP: return USHMEMI_DEV_XCHG(a, v);
    case USHMEM_RING_AMO_CSWAP: USHMEMI_DEV_CAS(a, &cmp, v); return cmp;
    case USHMEM_RING_AMO_ADD: return USHMEMI_DEV_FETCH(a, add, v);
    case USHMEM_RING_AMO_AND: return USHMEMI_DEV_FETCH(a, and, v);
    case USHMEM_RING_AMO_OR: return USHMEMI_DEV_FETCH(a, or, v);
    default: return USHMEMI_DEV_FETCH(a, xor, v);
    }
}
USHMEM_DEVICE_FN uint64_t ushmemi_dev_rmw64(uint64_t *p, unsigned op, uint64_t v, uint64_t cmp)
{
    USHMEMI_DEV_ATOMIC(uint64_t) *a = (USHMEMI_DEV_ATOMIC(uint64_t) *)p;
    switch (op) {
    case USHMEM_RING_AMO_FETCH: return USHMEMI_DEV_LOAD(a);
    case USHMEM_RING_AMO_SET: USHMEMI_DEV_STORE(a, v); return 0;
    case USHMEM_RING_AMO_SWAP: return USHMEMI_DEV_XCHG(a, v);
    case USHMEM_RING_AMO_CSWAP: USHMEMI_DEV_CAS(a, &cmp, v); return cmp;
    case USHMEM_RING_AMO_ADD: return USHMEMI_DEV_FETCH(a, add, v);
    case USHMEM_RING_AMO_AND: return USHMEMI_DEV_FETCH(a, and, v);
    case USHMEM_RING_AMO_OR: return USHMEMI_DEV_FETCH(a, or, v);
    default: return USHMEMI_DEV_FETCH(a, xor, v);
    }
}
USHMEM_DEVICE_FN void ushmemi_dev_post32(uint32_t *p, unsigned op, uint32_t v)
{
    ushmemi_dev_rmw32(p, op, v, 0);
}
USHMEM_DEVICE_FN void ushmemi_dev_post64(uint64_t *p, unsigned op, uint64_t v)
{
    ushmemi_dev_rmw64(p, op, v, 0);
}
USHMEM_DEVICE_FN void ushmemi_dev_fence(void)
{
    USHMEMI_DEV_FENCE();
}
/* A host thread is its own warp and block. */
USHMEM_DEVICE_FN unsigned ushmemi_dev_group_rank(unsigned scope)
{
    (void)scope;
    return 0;
}
USHMEM_DEVICE_FN unsigned ushmemi_dev_group_size(unsigned scope)
{
    (void)scope;
    return 1;
}
USHMEM_DEVICE_FN void ushmemi_dev_group_sync(unsigned scope)
{
    (void)scope;
}
USHMEM_DEVICE_FN void ushmemi_dev_copy_group(void *dst, const void *src, size_t n, unsigned rank,
                                             unsigned size)
{
    (void)rank;
    (void)size;
    memcpy(dst, src, n);
}
USHMEM_DEVICE_FN void ushmemi_dev_memcpy(void *dst, const void *src, size_t n)
{
    memcpy(dst, src, n);
}
USHMEM_DEVICE_FN void ushmemi_dev_memzero(void *dst, size_t n)
{
    memset(dst, 0, n);
}
/* The proxy thread reaches a host thread's memory. A test may define
 * USHMEMI_DEV_RESULTS_IN_RING to 1 to send values through the ring as CUDA
 * code does. */
#ifndef USHMEMI_DEV_RESULTS_IN_RING
#define USHMEMI_DEV_RESULTS_IN_RING 0
#endif
USHMEM_DEVICE_FN int ushmemi_dev_proxy_reaches(const void *p)
{
    (void)p;
    return !USHMEMI_DEV_RESULTS_IN_RING;
}
#endif
/* ---- End of the compiler-specific helpers. ---- */
#if !defined(USHMEMI_DEV_HAS_RELAXED)
USHMEM_DEVICE_FN void ushmemi_dev_post_after_fence64(uint64_t *p, unsigned op, uint64_t v)
{
    ushmemi_dev_post64(p, op, v);
}
USHMEM_DEVICE_FN uint64_t ushmemi_dev_own_load64(const uint64_t *p)
{
    return ushmemi_dev_load64(p);
}
USHMEM_DEVICE_FN void ushmemi_dev_own_store64(uint64_t *p, uint64_t v)
{
    ushmemi_dev_rmw64(p, USHMEM_RING_AMO_SET, v, 0);
}
#endif
USHMEM_RING_STATIC_ASSERT(sizeof(ushmemi_dev_longlong) == 8, "the longlong calls are 64-bit");

#define USHMEM_CMP_EQ 0
#define USHMEM_CMP_NE 1
#define USHMEM_CMP_GT 2
#define USHMEM_CMP_GE 3
#define USHMEM_CMP_LT 4
#define USHMEM_CMP_LE 5

#define USHMEM_SIGNAL_SET 0
#define USHMEM_SIGNAL_ADD 1

/* ---- Roads ---- */

USHMEM_DEVICE_FN int ushmem_my_pe(void)
{
    return ushmemi_dev_state()->my_pe;
}

USHMEM_DEVICE_FN int ushmem_n_pes(void)
{
    return ushmemi_dev_state()->n_pes;
}

/* How to reach pe: the first PEs from the state itself (constant memory on
 * a GPU: no load from global memory on the way to a peer), the others from
 * the table in the heap. Each field is read in its own branch, so that the
 * compiler sees a constant-memory load in the first. */
USHMEM_DEVICE_FN uint64_t ushmemi_dev_peer_base(const struct ushmem_device_state *s, int pe)
{
    if (pe < USHMEM_DEVICE_NEAR_PES)
        return s->near[pe].heap_base;
    return s->peers[pe].heap_base;
}

USHMEM_DEVICE_FN int ushmemi_dev_peer_direct(const struct ushmem_device_state *s, int pe,
                                             unsigned cls)
{
    if (pe < USHMEM_DEVICE_NEAR_PES)
        return s->near[pe].direct[cls];
    return s->peers[pe].direct[cls];
}

/* Where this PE's producers read which requests are done (ring.h): the
 * proxy's copy of the ring's completed counter in this PE's heap, which a
 * GPU polls without crossing the link to host memory; NULL when the proxy
 * keeps none and the ring's own counter is read. */
USHMEM_DEVICE_FN ushmem_ring_word_t *ushmemi_dev_ring_done(const struct ushmem_device_state *s)
{
    if (s->ring_done_offset == 0)
        return NULL;
    return (ushmem_ring_word_t *)(uintptr_t)(s->heap_base + s->ring_done_offset);
}

/* The offset of a symmetric address from this PE's heap start: the remote
 * address a ring request carries. */
USHMEM_DEVICE_FN uint64_t ushmemi_dev_offset(const struct ushmem_device_state *s, const void *addr)
{
    return (uint64_t)(uintptr_t)addr - s->heap_base;
}

/* The same object in pe's heap as mapped here when class `cls` goes to pe
 * directly, else NULL. A PE in the window (detail/device_state.h) is
 * reached by arithmetic on fields at fixed places in the state, which a GPU
 * reads from its constant cache as operands: no load under a run-time
 * index. Any other PE's base and road are loaded from the table, both
 * before the branch so that the two loads overlap (each a constant-memory
 * load under a run-time index, about two hundred cycles on a GPU). */
USHMEM_DEVICE_FN void *ushmemi_dev_mapped(const struct ushmem_device_state *s, const void *addr,
                                          int pe, unsigned cls)
{
    if ((uint32_t)(pe - s->window_first[cls]) < s->window_count[cls])
        return (void *)(uintptr_t)((uint64_t)(uintptr_t)addr +
                                   (uint64_t)(int64_t)(pe - s->my_pe) * s->peer_stride);
    uint64_t base = ushmemi_dev_peer_base(s, pe);
    int direct = ushmemi_dev_peer_direct(s, pe, cls) & !s->force_proxy;
    return direct ? (void *)(uintptr_t)(base + ushmemi_dev_offset(s, addr)) : NULL;
}

/* OpenSHMEM's shmem_ptr from device code: dest (a symmetric address) as it
 * lies in pe's heap, for this thread's own loads, stores and atomics; NULL
 * when pe's heap is not reached that way (another node, the proxy's road,
 * USHMEM_DEVICE_ROUTE=proxy), when pe is not a PE, or when dest is not in
 * the heap. For a PE in the window it costs a compare and a multiply-add. */
USHMEM_DEVICE_FN void *ushmem_ptr(const void *dest, int pe)
{
    const struct ushmem_device_state *s = ushmemi_dev_state();
    if (pe < 0 || pe >= s->n_pes || ushmemi_dev_offset(s, dest) >= s->heap_size)
        return NULL;
    return ushmemi_dev_mapped(s, dest, pe, USHMEM_DEVICE_CLASS_RMA);
}

/* A put or get whose local buffer the proxy cannot reach, 8 bytes per
 * request with the bytes in the ring. Gets wait for each piece (the bytes
 * must land here); puts carry theirs, so only a blocking put waits, once,
 * for its last piece (requests complete in ticket order). */
USHMEM_DEVICE_FN uint64_t ushmemi_dev_submit_in_ring(const struct ushmem_device_state *s,
                                                     unsigned op, int pe, const void *remote,
                                                     char *local, uint64_t nbytes, int wait)
{
    int put = op == USHMEM_RING_OP_PUT || op == USHMEM_RING_OP_PUT_NBI;
    struct ushmem_ring_request req;
    struct ushmem_ring_producer scratch = {0, 0};
    uint64_t ticket = 0;

    for (uint64_t done = 0; done < nbytes; done += 8) {
        uint64_t n = nbytes - done < 8 ? nbytes - done : 8, word = 0;
        ushmemi_dev_memzero(&req, sizeof(req));
        req.op = (uint8_t)(put ? USHMEM_RING_OP_PUT : USHMEM_RING_OP_GET);
        req.flags = (uint8_t)(put ? USHMEM_RING_FLAG_INLINE : USHMEM_RING_FLAG_RESULT);
        req.pe = pe;
        req.offset = ushmemi_dev_offset(s, remote) + done;
        req.value = n;
        if (put) {
            ushmemi_dev_memcpy(&word, local + done, (size_t)n);
            req.local = word;
        }
        ticket = ushmem_ring_submit_on(s->ring, ushmemi_dev_ring_done(s),
                                       ushmemi_dev_producer(&scratch), &req);
        if (!put) {
            ushmem_ring_wait_on(s->ring, ushmemi_dev_ring_done(s), ticket);
            word = ushmem_ring_result_take(s->ring, ticket);
            ushmemi_dev_memcpy(local + done, &word, (size_t)n);
        }
    }
    if (put && wait)
        ushmem_ring_wait_on(s->ring, ushmemi_dev_ring_done(s), ticket);
    return ticket;
}

/* Submits one request and returns its ticket (the last one's when the
 * bytes travel in the ring); waits for it when `wait` is set. */
USHMEM_DEVICE_FN uint64_t ushmemi_dev_submit(const struct ushmem_device_state *s, unsigned op,
                                             int pe, const void *remote, uint64_t local,
                                             uint64_t value, int wait)
{
    struct ushmem_ring_request req;
    struct ushmem_ring_producer scratch = {0, 0};
    uint64_t ticket;

    if (!ushmemi_dev_proxy_reaches((const void *)(uintptr_t)local))
        return ushmemi_dev_submit_in_ring(s, op, pe, remote, (char *)(uintptr_t)local, value,
                                          wait);
    ushmemi_dev_memzero(&req, sizeof(req));
    req.op = (uint8_t)op;
    req.pe = pe;
    req.offset = ushmemi_dev_offset(s, remote);
    req.local = local;
    req.value = value;
    ticket = ushmem_ring_submit_on(s->ring, ushmemi_dev_ring_done(s),
                                   ushmemi_dev_producer(&scratch), &req);
    if (wait)
        ushmem_ring_wait_on(s->ring, ushmemi_dev_ring_done(s), ticket);
    return ticket;
}

/* ---- RMA ---- */

#define USHMEMI_DEV_THREAD 0u
#define USHMEMI_DEV_WARP 1u
#define USHMEMI_DEV_BLOCK 2u

/* A put by the threads of `scope`: on the direct road they share the copy;
 * through the proxy one of them submits. The group meets before (its source
 * is written) and after (a blocking call has returned for all of it). */
USHMEM_DEVICE_FN void ushmemi_dev_put(void *dest, const void *src, size_t nbytes, int pe, int nbi,
                                      unsigned scope)
{
    const struct ushmem_device_state *s = ushmemi_dev_state();
    unsigned rank = ushmemi_dev_group_rank(scope);

    if (nbytes == 0)
        return;
    void *mapped = ushmemi_dev_mapped(s, dest, pe, USHMEM_DEVICE_CLASS_RMA);
    ushmemi_dev_group_sync(scope);
    if (mapped != NULL)
        ushmemi_dev_copy_group(mapped, src, nbytes, rank, ushmemi_dev_group_size(scope));
    else if (rank == 0)
        ushmemi_dev_submit(s, nbi ? USHMEM_RING_OP_PUT_NBI : USHMEM_RING_OP_PUT, pe, dest,
                           (uint64_t)(uintptr_t)src, nbytes, !nbi);
    ushmemi_dev_group_sync(scope);
}

USHMEM_DEVICE_FN void ushmemi_dev_get(void *dest, const void *src, size_t nbytes, int pe, int nbi,
                                      unsigned scope)
{
    const struct ushmem_device_state *s = ushmemi_dev_state();
    unsigned rank = ushmemi_dev_group_rank(scope);

    if (nbytes == 0)
        return;
    const void *mapped = ushmemi_dev_mapped(s, src, pe, USHMEM_DEVICE_CLASS_RMA);
    ushmemi_dev_group_sync(scope);
    if (mapped != NULL)
        ushmemi_dev_copy_group(dest, mapped, nbytes, rank, ushmemi_dev_group_size(scope));
    else if (rank == 0)
        ushmemi_dev_submit(s, nbi ? USHMEM_RING_OP_GET_NBI : USHMEM_RING_OP_GET, pe, src,
                           (uint64_t)(uintptr_t)dest, nbytes, !nbi);
    ushmemi_dev_group_sync(scope);
}

/* The untyped calls: X(suffix of the name, scope). */
#define USHMEMI_DEV_MEM_SCOPES(X)                                                      \
    X(, USHMEMI_DEV_THREAD)                                                            \
    X(_warp, USHMEMI_DEV_WARP)                                                         \
    X(_block, USHMEMI_DEV_BLOCK)
#define USHMEMI_DEV_MEM(SUFFIX, SCOPE)                                                 \
    USHMEM_DEVICE_FN void USHMEMI_DEV_MEM_NAME(putmem, SUFFIX)(void *dest, const void *src, \
                                                                size_t nbytes, int pe) \
    {                                                                                  \
        ushmemi_dev_put(dest, src, nbytes, pe, 0, SCOPE);                              \
    }                                                                                  \
    USHMEM_DEVICE_FN void USHMEMI_DEV_MEM_NAME(getmem, SUFFIX)(void *dest, const void *src, \
                                                                size_t nbytes, int pe) \
    {                                                                                  \
        ushmemi_dev_get(dest, src, nbytes, pe, 0, SCOPE);                              \
    }                                                                                  \
    USHMEM_DEVICE_FN void USHMEMI_DEV_MEM_NAME(putmem_nbi, SUFFIX)(void *dest, const void *src, \
                                                                    size_t nbytes, int pe) \
    {                                                                                  \
        ushmemi_dev_put(dest, src, nbytes, pe, 1, SCOPE);                              \
    }                                                                                  \
    USHMEM_DEVICE_FN void USHMEMI_DEV_MEM_NAME(getmem_nbi, SUFFIX)(void *dest, const void *src, \
                                                                    size_t nbytes, int pe) \
    {                                                                                  \
        ushmemi_dev_get(dest, src, nbytes, pe, 1, SCOPE);                              \
    }
/* ushmem_putmem for the thread, ushmemx_putmem_warp and _block for groups. */
#define USHMEMI_DEV_MEM_NAME(CALL, SUFFIX) USHMEMI_DEV_MEM_NAME_##SUFFIX(CALL)
#define USHMEMI_DEV_MEM_NAME_(CALL) ushmem_##CALL
#define USHMEMI_DEV_MEM_NAME__warp(CALL) ushmemx_##CALL##_warp
#define USHMEMI_DEV_MEM_NAME__block(CALL) ushmemx_##CALL##_block
USHMEMI_DEV_MEM_SCOPES(USHMEMI_DEV_MEM)
#undef USHMEMI_DEV_MEM

/* Types of the typed RMA calls: X(C type, name in the call). */
#define USHMEM_DEVICE_RMA_TYPES(X)                                                     \
    X(char, char)                                                                      \
    X(signed char, schar)                                                              \
    X(short, short)                                                                    \
    X(int, int)                                                                        \
    X(long, long)                                                                      \
    X(ushmemi_dev_longlong, longlong)                                                  \
    X(unsigned char, uchar)                                                            \
    X(unsigned short, ushort)                                                          \
    X(unsigned int, uint)                                                              \
    X(unsigned long, ulong)                                                            \
    X(ushmemi_dev_ulonglong, ulonglong)                                                \
    X(float, float)                                                                    \
    X(double, double)                                                                  \
    X(int8_t, int8)                                                                    \
    X(int16_t, int16)                                                                  \
    X(int32_t, int32)                                                                  \
    X(int64_t, int64)                                                                  \
    X(uint8_t, uint8)                                                                  \
    X(uint16_t, uint16)                                                                \
    X(uint32_t, uint32)                                                                \
    X(uint64_t, uint64)                                                                \
    X(size_t, size)                                                                    \
    X(ptrdiff_t, ptrdiff)

/* p and g are one volatile store or load on the direct road (the value is
 * never half written, and never cached); through the proxy they go through a
 * local copy of the value, which the request names as its local address.
 * They are blocking, so the copy outlives the request. */
#define USHMEMI_DEV_RMA_TYPED(T, NAME)                                                 \
    USHMEM_DEVICE_FN void ushmem_##NAME##_put(T *dest, const T *src, size_t nelems, int pe) \
    {                                                                                  \
        ushmemi_dev_put(dest, src, nelems * sizeof(T), pe, 0, USHMEMI_DEV_THREAD);     \
    }                                                                                  \
    USHMEM_DEVICE_FN void ushmem_##NAME##_get(T *dest, const T *src, size_t nelems, int pe) \
    {                                                                                  \
        ushmemi_dev_get(dest, src, nelems * sizeof(T), pe, 0, USHMEMI_DEV_THREAD);     \
    }                                                                                  \
    USHMEM_DEVICE_FN void ushmem_##NAME##_put_nbi(T *dest, const T *src, size_t nelems,  \
                                                  int pe)                              \
    {                                                                                  \
        ushmemi_dev_put(dest, src, nelems * sizeof(T), pe, 1, USHMEMI_DEV_THREAD);     \
    }                                                                                  \
    USHMEM_DEVICE_FN void ushmem_##NAME##_get_nbi(T *dest, const T *src, size_t nelems,  \
                                                  int pe)                              \
    {                                                                                  \
        ushmemi_dev_get(dest, src, nelems * sizeof(T), pe, 1, USHMEMI_DEV_THREAD);     \
    }                                                                                  \
    USHMEM_DEVICE_FN void ushmem_##NAME##_p(T *dest, T value, int pe)                  \
    {                                                                                  \
        void *mapped = ushmemi_dev_mapped(ushmemi_dev_state(), dest, pe,               \
                                          USHMEM_DEVICE_CLASS_RMA);                    \
        if (mapped != NULL)                                                            \
            *(volatile T *)mapped = value;                                             \
        else                                                                           \
            ushmemi_dev_put(dest, &value, sizeof(T), pe, 0, USHMEMI_DEV_THREAD);       \
    }                                                                                  \
    USHMEM_DEVICE_FN T ushmem_##NAME##_g(const T *src, int pe)                         \
    {                                                                                  \
        const void *mapped = ushmemi_dev_mapped(ushmemi_dev_state(), src, pe,          \
                                                USHMEM_DEVICE_CLASS_RMA);              \
        T value;                                                                       \
        if (mapped != NULL)                                                            \
            return *(const volatile T *)mapped;                                        \
        ushmemi_dev_get(&value, src, sizeof(T), pe, 0, USHMEMI_DEV_THREAD);            \
        return value;                                                                  \
    }
USHMEM_DEVICE_RMA_TYPES(USHMEMI_DEV_RMA_TYPED)
#undef USHMEMI_DEV_RMA_TYPED

/* ---- Atomics ---- */

/* Ring type of a value: kind 'i' signed, 'u' unsigned, 'f' floating. */
USHMEM_DEVICE_FN unsigned ushmemi_dev_amo_type(size_t size, char kind)
{
    if (kind == 'f')
        return size == 4 ? USHMEM_RING_AMO_FLOAT : USHMEM_RING_AMO_DOUBLE;
    if (kind == 'i')
        return size == 4 ? USHMEM_RING_AMO_INT32 : USHMEM_RING_AMO_INT64;
    return size == 4 ? USHMEM_RING_AMO_UINT32 : USHMEM_RING_AMO_UINT64;
}

/* A value as the bit pattern that atomics and the ring carry (a 4-byte value
 * in the low 32 bits), and back. */
USHMEM_DEVICE_FN uint64_t ushmemi_dev_bits(const void *value, size_t size)
{
    uint32_t b32;
    uint64_t b64;

    if (size == 4) {
        ushmemi_dev_memcpy(&b32, value, 4);
        return b32;
    }
    ushmemi_dev_memcpy(&b64, value, 8);
    return b64;
}

USHMEM_DEVICE_FN void ushmemi_dev_unbits(uint64_t bits, void *value, size_t size)
{
    uint32_t b32 = (uint32_t)bits;

    if (size == 4)
        ushmemi_dev_memcpy(value, &b32, 4);
    else
        ushmemi_dev_memcpy(value, &bits, 8);
}

/* One atomic of class `cls` on a 4- or 8-byte word; returns the old bits
 * when `fetch` is set. A non-fetching atomic through the proxy is not waited
 * for: like a put, quiet completes it. */
USHMEM_DEVICE_FN uint64_t ushmemi_dev_amo(void *dest, int pe, unsigned cls, unsigned op,
                                          unsigned type, size_t size, uint64_t value,
                                          uint64_t compare, int fetch)
{
    const struct ushmem_device_state *s = ushmemi_dev_state();
    struct ushmem_ring_request req;
    struct ushmem_ring_producer scratch = {0, 0};
    uint64_t result = 0, ticket;

    void *target = ushmemi_dev_mapped(s, dest, pe, cls);
    if (target != NULL) {
        if (!fetch) {
            if (size == 4)
                ushmemi_dev_post32((uint32_t *)target, op, (uint32_t)value);
            else
                ushmemi_dev_post64((uint64_t *)target, op, value);
            return 0;
        }
        if (size == 4)
            return ushmemi_dev_rmw32((uint32_t *)target, op, (uint32_t)value, (uint32_t)compare);
        return ushmemi_dev_rmw64((uint64_t *)target, op, value, compare);
    }
    ushmemi_dev_memzero(&req, sizeof(req));
    req.op = USHMEM_RING_OP_AMO;
    req.amo_op = (uint8_t)op;
    req.amo_type = (uint8_t)type;
    req.pe = pe;
    req.offset = ushmemi_dev_offset(s, dest);
    req.value = value;
    req.compare = compare;
    /* The proxy writes the old value of the result's type, 4 or 8 bytes, into
     * this 8-byte local, or into the ring's result cell where the proxy
     * cannot reach the local; it is read back with the same width. */
    if (fetch && USHMEMI_DEV_RESULTS_IN_RING)
        req.flags = (uint8_t)USHMEM_RING_FLAG_RESULT;
    else
        req.result = fetch ? (uint64_t)(uintptr_t)&result : 0;
    ticket = ushmem_ring_submit_on(s->ring, ushmemi_dev_ring_done(s),
                                   ushmemi_dev_producer(&scratch), &req);
    if (!fetch)
        return 0;
    ushmem_ring_wait_on(s->ring, ushmemi_dev_ring_done(s), ticket);
    if (USHMEMI_DEV_RESULTS_IN_RING)
        result = ushmem_ring_result_take(s->ring, ticket);
    if (size == 4) {
        uint32_t old;
        ushmemi_dev_memcpy(&old, &result, 4);
        return old;
    }
    return result;
}

/* A 64-bit set or add (a signal) right after the calling thread's fence,
 * with no proxied request of this PE in between: on the direct road the
 * fence already orders what came before, so the write itself is relaxed. */
USHMEM_DEVICE_FN void ushmemi_dev_signal_after_fence(uint64_t *dest, int pe, unsigned cls,
                                                     unsigned op, uint64_t value)
{
    const struct ushmem_device_state *s = ushmemi_dev_state();

    void *target = s->ring == NULL ? ushmemi_dev_mapped(s, dest, pe, cls) : NULL;

    if (target != NULL) {
        ushmemi_dev_post_after_fence64((uint64_t *)target, op, value);
        return;
    }
    ushmemi_dev_amo(dest, pe, cls, op, USHMEM_RING_AMO_UINT64, 8, value, 0, 0);
}

/* Types of the atomics: X(C type, name, kind). Extended: fetch, set, swap;
 * standard adds compare_swap, add and inc; bitwise: and, or, xor. */
#define USHMEM_DEVICE_AMO_STD_TYPES(X)                                                 \
    X(int, int, 'i')                                                                   \
    X(long, long, 'i')                                                                 \
    X(ushmemi_dev_longlong, longlong, 'i')                                             \
    X(unsigned int, uint, 'u')                                                         \
    X(unsigned long, ulong, 'u')                                                       \
    X(ushmemi_dev_ulonglong, ulonglong, 'u')                                           \
    X(int32_t, int32, 'i')                                                             \
    X(int64_t, int64, 'i')                                                             \
    X(uint32_t, uint32, 'u')                                                           \
    X(uint64_t, uint64, 'u')                                                           \
    X(size_t, size, 'u')                                                               \
    X(ptrdiff_t, ptrdiff, 'i')
#define USHMEM_DEVICE_AMO_EXT_TYPES(X)                                                 \
    USHMEM_DEVICE_AMO_STD_TYPES(X)                                                     \
    X(float, float, 'f')                                                               \
    X(double, double, 'f')
#define USHMEM_DEVICE_AMO_BIT_TYPES(X)                                                 \
    X(unsigned int, uint, 'u')                                                         \
    X(unsigned long, ulong, 'u')                                                       \
    X(ushmemi_dev_ulonglong, ulonglong, 'u')                                           \
    X(int32_t, int32, 'i')                                                             \
    X(int64_t, int64, 'i')                                                             \
    X(uint32_t, uint32, 'u')                                                           \
    X(uint64_t, uint64, 'u')

#define USHMEMI_DEV_AMO_CALL(T, KIND, OP, dest, value, compare, pe, fetch)             \
    ushmemi_dev_amo((dest), (pe), USHMEM_DEVICE_CLASS_AMO, (OP),                       \
                    ushmemi_dev_amo_type(sizeof(T), (KIND)), sizeof(T),                \
                    ushmemi_dev_bits(&(value), sizeof(T)), (compare), (fetch))

#define USHMEMI_DEV_AMO_FETCHING(T, NAME, KIND, CALL, OP)                              \
    USHMEM_DEVICE_FN T ushmem_##NAME##_atomic_##CALL(T *dest, T value, int pe)         \
    {                                                                                  \
        T old;                                                                         \
        ushmemi_dev_unbits(USHMEMI_DEV_AMO_CALL(T, KIND, OP, dest, value, 0, pe, 1), &old, \
                           sizeof(T));                                                 \
        return old;                                                                    \
    }
#define USHMEMI_DEV_AMO_NONFETCHING(T, NAME, KIND, CALL, OP)                           \
    USHMEM_DEVICE_FN void ushmem_##NAME##_atomic_##CALL(T *dest, T value, int pe)      \
    {                                                                                  \
        USHMEMI_DEV_AMO_CALL(T, KIND, OP, dest, value, 0, pe, 0);                      \
    }

#define USHMEMI_DEV_AMO_EXT(T, NAME, KIND)                                             \
    USHMEM_DEVICE_FN T ushmem_##NAME##_atomic_fetch(const T *source, int pe)           \
    {                                                                                  \
        T zero = 0, old;                                                               \
        ushmemi_dev_unbits(USHMEMI_DEV_AMO_CALL(T, KIND, USHMEM_RING_AMO_FETCH,          \
                                                (void *)(uintptr_t)source, zero, 0, pe, 1), \
                           &old, sizeof(T));                                           \
        return old;                                                                    \
    }                                                                                  \
    USHMEMI_DEV_AMO_NONFETCHING(T, NAME, KIND, set, USHMEM_RING_AMO_SET)               \
    USHMEMI_DEV_AMO_FETCHING(T, NAME, KIND, swap, USHMEM_RING_AMO_SWAP)
USHMEM_DEVICE_AMO_EXT_TYPES(USHMEMI_DEV_AMO_EXT)
#undef USHMEMI_DEV_AMO_EXT

#define USHMEMI_DEV_AMO_STD(T, NAME, KIND)                                             \
    USHMEM_DEVICE_FN T ushmem_##NAME##_atomic_compare_swap(T *dest, T cond, T value, int pe) \
    {                                                                                  \
        T old;                                                                         \
        ushmemi_dev_unbits(USHMEMI_DEV_AMO_CALL(T, KIND, USHMEM_RING_AMO_CSWAP, dest, value, \
                                                ushmemi_dev_bits(&cond, sizeof(T)), pe, 1), \
                           &old, sizeof(T));                                           \
        return old;                                                                    \
    }                                                                                  \
    USHMEMI_DEV_AMO_FETCHING(T, NAME, KIND, fetch_add, USHMEM_RING_AMO_ADD)            \
    USHMEMI_DEV_AMO_NONFETCHING(T, NAME, KIND, add, USHMEM_RING_AMO_ADD)               \
    USHMEM_DEVICE_FN T ushmem_##NAME##_atomic_fetch_inc(T *dest, int pe)               \
    {                                                                                  \
        return ushmem_##NAME##_atomic_fetch_add(dest, (T)1, pe);                       \
    }                                                                                  \
    USHMEM_DEVICE_FN void ushmem_##NAME##_atomic_inc(T *dest, int pe)                  \
    {                                                                                  \
        ushmem_##NAME##_atomic_add(dest, (T)1, pe);                                    \
    }
USHMEM_DEVICE_AMO_STD_TYPES(USHMEMI_DEV_AMO_STD)
#undef USHMEMI_DEV_AMO_STD

#define USHMEMI_DEV_AMO_BIT(T, NAME, KIND)                                             \
    USHMEMI_DEV_AMO_FETCHING(T, NAME, KIND, fetch_and, USHMEM_RING_AMO_AND)            \
    USHMEMI_DEV_AMO_FETCHING(T, NAME, KIND, fetch_or, USHMEM_RING_AMO_OR)              \
    USHMEMI_DEV_AMO_FETCHING(T, NAME, KIND, fetch_xor, USHMEM_RING_AMO_XOR)            \
    USHMEMI_DEV_AMO_NONFETCHING(T, NAME, KIND, and, USHMEM_RING_AMO_AND)               \
    USHMEMI_DEV_AMO_NONFETCHING(T, NAME, KIND, or, USHMEM_RING_AMO_OR)                 \
    USHMEMI_DEV_AMO_NONFETCHING(T, NAME, KIND, xor, USHMEM_RING_AMO_XOR)
USHMEM_DEVICE_AMO_BIT_TYPES(USHMEMI_DEV_AMO_BIT)
#undef USHMEMI_DEV_AMO_BIT

/* ---- Ordering ---- */

/* Completes every put, get and atomic of the calling thread. */
USHMEM_DEVICE_FN void ushmem_quiet(void)
{
    const struct ushmem_device_state *s = ushmemi_dev_state();

    ushmemi_dev_fence();
    if (s->ring != NULL) {
        struct ushmem_ring_producer target = {ushmemi_dev_quiet_target(s->ring), 0};
        ushmem_ring_quiet_on(s->ring, ushmemi_dev_ring_done(s), &target);
    }
}

/* Completes every put, get and atomic of a group's threads, all of which
 * call it: the group meets, one thread quiets (the fence is cumulative, so
 * it covers what the others did before they met, and the proxied requests
 * quiet waits for are every one handed out), and the group meets again.
 * One fence instead of one per thread. */
USHMEM_DEVICE_FN void ushmemi_dev_quiet_group(unsigned scope)
{
    ushmemi_dev_group_sync(scope);
    if (ushmemi_dev_group_rank(scope) == 0)
        ushmem_quiet();
    ushmemi_dev_group_sync(scope);
}

/* ushmem_quiet for the calling warp (its active threads) or block. */
USHMEM_DEVICE_FN void ushmemx_quiet_warp(void)
{
    ushmemi_dev_quiet_group(USHMEMI_DEV_WARP);
}

USHMEM_DEVICE_FN void ushmemx_quiet_block(void)
{
    ushmemi_dev_quiet_group(USHMEMI_DEV_BLOCK);
}

/* Orders the calling thread's puts and atomics to each PE. When a PE takes
 * different roads for different classes, ordering across the roads needs the
 * proxied requests done, so fence is a quiet there. */
USHMEM_DEVICE_FN void ushmem_fence(void)
{
    const struct ushmem_device_state *s = ushmemi_dev_state();

    ushmemi_dev_fence();
    if (s->ring == NULL)
        return;
    if (s->mixed_roads) {
        ushmem_quiet();
        return;
    }
    /* Nothing outstanding from this thread: nothing to order. */
    if (ushmemi_dev_quiet_target(s->ring) >
        ushmem_ring_load_acquire(ushmem_ring_done_word(s->ring, ushmemi_dev_ring_done(s)))) {
        struct ushmem_ring_request req;
        struct ushmem_ring_producer scratch = {0, 0};

        ushmemi_dev_memzero(&req, sizeof(req));
        req.op = USHMEM_RING_OP_FENCE;
        req.pe = s->my_pe;
        ushmem_ring_submit_on(s->ring, ushmemi_dev_ring_done(s), ushmemi_dev_producer(&scratch),
                              &req);
    }
}

/* ---- Signals and waits ---- */

/* A put and a signal by the threads of `scope`: the signal is issued once
 * the data is complete at the target, on either road, so it never overtakes
 * the data. Non-blocking forms behave as the blocking ones. Through the
 * proxy the signal follows the put in the ring without waiting for it: the
 * proxy completes a blocking put before anything after it can be seen (on
 * the copy engine both are queued on one device, in order; a fabric put is
 * complete at the target before the next request is taken), and the wait
 * for the put, which frees the source, comes after the signal. */
USHMEM_DEVICE_FN void ushmemi_dev_put_signal(void *dest, const void *source, size_t nbytes,
                                             uint64_t *sig_addr, uint64_t signal, int sig_op,
                                             int pe, unsigned scope)
{
    const struct ushmem_device_state *s = ushmemi_dev_state();
    unsigned rank = ushmemi_dev_group_rank(scope);
    unsigned op = sig_op == USHMEM_SIGNAL_ADD ? USHMEM_RING_AMO_ADD : USHMEM_RING_AMO_SET;
    void *mapped = ushmemi_dev_mapped(s, dest, pe, USHMEM_DEVICE_CLASS_RMA);
    int direct = mapped != NULL;
    int proxied_put = 0;
    uint64_t put_ticket = 0;

    ushmemi_dev_group_sync(scope);
    if (direct) {
        ushmemi_dev_copy_group(mapped, source, nbytes, rank, ushmemi_dev_group_size(scope));
    } else if (rank == 0 && nbytes > 0) {
        put_ticket = ushmemi_dev_submit(s, USHMEM_RING_OP_PUT, pe, dest,
                                        (uint64_t)(uintptr_t)source, nbytes, 0);
        proxied_put = 1;
    }
    ushmemi_dev_group_sync(scope);
    if (rank == 0) {
        if (direct) {
            /* The group met after its stores, so this one fence (it is
             * cumulative) orders all of them before the signal. */
            ushmemi_dev_fence();
            ushmemi_dev_signal_after_fence(sig_addr, pe, USHMEM_DEVICE_CLASS_SIGNAL, op, signal);
        } else {
            ushmemi_dev_amo(sig_addr, pe, USHMEM_DEVICE_CLASS_SIGNAL, op, USHMEM_RING_AMO_UINT64,
                            8, signal, 0, 0);
        }
        if (proxied_put)
            ushmem_ring_wait_on(s->ring, ushmemi_dev_ring_done(s), put_ticket);
    }
    ushmemi_dev_group_sync(scope);
}

USHMEM_DEVICE_FN void ushmem_putmem_signal(void *dest, const void *source, size_t nbytes,
                                           uint64_t *sig_addr, uint64_t signal, int sig_op, int pe)
{
    ushmemi_dev_put_signal(dest, source, nbytes, sig_addr, signal, sig_op, pe, USHMEMI_DEV_THREAD);
}

USHMEM_DEVICE_FN void ushmem_putmem_signal_nbi(void *dest, const void *source, size_t nbytes,
                                               uint64_t *sig_addr, uint64_t signal, int sig_op,
                                               int pe)
{
    ushmemi_dev_put_signal(dest, source, nbytes, sig_addr, signal, sig_op, pe, USHMEMI_DEV_THREAD);
}

USHMEM_DEVICE_FN void ushmemx_putmem_signal_warp(void *dest, const void *source, size_t nbytes,
                                                 uint64_t *sig_addr, uint64_t signal, int sig_op,
                                                 int pe)
{
    ushmemi_dev_put_signal(dest, source, nbytes, sig_addr, signal, sig_op, pe, USHMEMI_DEV_WARP);
}

USHMEM_DEVICE_FN void ushmemx_putmem_signal_block(void *dest, const void *source, size_t nbytes,
                                                  uint64_t *sig_addr, uint64_t signal, int sig_op,
                                                  int pe)
{
    ushmemi_dev_put_signal(dest, source, nbytes, sig_addr, signal, sig_op, pe, USHMEMI_DEV_BLOCK);
}

USHMEM_DEVICE_FN void ushmemx_putmem_signal_nbi_warp(void *dest, const void *source,
                                                     size_t nbytes, uint64_t *sig_addr,
                                                     uint64_t signal, int sig_op, int pe)
{
    ushmemi_dev_put_signal(dest, source, nbytes, sig_addr, signal, sig_op, pe, USHMEMI_DEV_WARP);
}

USHMEM_DEVICE_FN void ushmemx_putmem_signal_nbi_block(void *dest, const void *source,
                                                      size_t nbytes, uint64_t *sig_addr,
                                                      uint64_t signal, int sig_op, int pe)
{
    ushmemi_dev_put_signal(dest, source, nbytes, sig_addr, signal, sig_op, pe, USHMEMI_DEV_BLOCK);
}

/* The signal word of this PE. */
USHMEM_DEVICE_FN uint64_t ushmem_signal_fetch(const uint64_t *sig_addr)
{
    return ushmemi_dev_load64(sig_addr);
}

USHMEM_DEVICE_FN int ushmemi_dev_compare_u64(uint64_t a, int cmp, uint64_t b)
{
    switch (cmp) {
    case USHMEM_CMP_EQ: return a == b;
    case USHMEM_CMP_NE: return a != b;
    case USHMEM_CMP_GT: return a > b;
    case USHMEM_CMP_GE: return a >= b;
    case USHMEM_CMP_LT: return a < b;
    case USHMEM_CMP_LE: return a <= b;
    default: return 1;
    }
}

/* Waits until the signal word of this PE compares true; returns its value. */
USHMEM_DEVICE_FN uint64_t ushmem_signal_wait_until(uint64_t *sig_addr, int cmp, uint64_t value)
{
    unsigned spins = 0;
    uint64_t seen;

    while (!ushmemi_dev_compare_u64(seen = ushmemi_dev_load64(sig_addr), cmp, value))
        ushmem_ring_backoff(&spins);
    return seen;
}

/* Reads a 4- or 8-byte word of this PE with acquire. */
USHMEM_DEVICE_FN uint64_t ushmemi_dev_load_bits(const void *addr, size_t size)
{
    if (size == 4)
        return ushmemi_dev_load32((const uint32_t *)addr);
    return ushmemi_dev_load64((const uint64_t *)addr);
}

#define USHMEMI_DEV_WAIT(T, NAME, KIND)                                                \
    USHMEM_DEVICE_FN int ushmemi_dev_compare_##NAME(T a, int cmp, T b)                 \
    {                                                                                  \
        switch (cmp) {                                                                 \
        case USHMEM_CMP_EQ: return a == b;                                             \
        case USHMEM_CMP_NE: return a != b;                                             \
        case USHMEM_CMP_GT: return a > b;                                              \
        case USHMEM_CMP_GE: return a >= b;                                             \
        case USHMEM_CMP_LT: return a < b;                                              \
        case USHMEM_CMP_LE: return a <= b;                                             \
        default: return 1;                                                             \
        }                                                                              \
    }                                                                                  \
    USHMEM_DEVICE_FN void ushmem_##NAME##_wait_until(T *ivar, int cmp, T value)        \
    {                                                                                  \
        unsigned spins = 0;                                                            \
        T seen;                                                                        \
        (void)(KIND);                                                                  \
        for (;;) {                                                                     \
            ushmemi_dev_unbits(ushmemi_dev_load_bits(ivar, sizeof(T)), &seen, sizeof(T)); \
            if (ushmemi_dev_compare_##NAME(seen, cmp, value))                          \
                return;                                                                \
            ushmem_ring_backoff(&spins);                                               \
        }                                                                              \
    }
USHMEM_DEVICE_AMO_STD_TYPES(USHMEMI_DEV_WAIT)
#undef USHMEMI_DEV_WAIT

/* ---- Barrier and collectives ---- */

/* Up to this many PEs the device barrier is one round: every PE signals
 * every other at once and waits for all of their signals, one link latency
 * in all; beyond it, dissemination's log2(n) rounds send fewer messages. */
#ifndef USHMEMI_DEV_FLAT_BARRIER_PES /* a test builds with 1 to take dissemination */
#define USHMEMI_DEV_FLAT_BARRIER_PES 16
#endif

/* The device barrier, over the device flags in every PE's reserved heap
 * area and an epoch (this PE's count of device barriers). Up to
 * USHMEMI_DEV_FLAT_BARRIER_PES PEs, one round: this PE adds one to flag 0 of
 * every other PE and waits until its own flag 0 has reached epoch * (n - 1).
 * Beyond, dissemination: in round k this PE adds one to flag k of PE me +
 * 2^k and waits until its own flag k has reached the epoch. Either way each
 * flag receives the same number of signals in every barrier, so the flags
 * count barriers and never need resetting; the flags and epoch are the
 * device barrier's own. Signals go the SYNC class's road. `complete` first
 * completes the calling thread's operations (barrier_all) or only orders
 * them (sync_all). */
USHMEM_DEVICE_FN void ushmemi_dev_barrier(int complete)
{
    const struct ushmem_device_state *s = ushmemi_dev_state();
    uint64_t *epoch_p = (uint64_t *)(uintptr_t)(s->heap_base + s->device_epoch_offset);
    /* The next caller may be a thread of another block, on another SM with
     * its own cache, but the program orders the calls (one thread at a time
     * calls the barrier), so GPU scope is enough: no peer reads it. */
    uint64_t epoch = ushmemi_dev_own_load64(epoch_p) + 1;
    uint64_t *flags = (uint64_t *)(uintptr_t)(s->heap_base + s->device_flags_offset);
    unsigned k = 0;

    if (complete)
        ushmem_quiet();
    else
        ushmemi_dev_fence();
    if (s->n_pes <= USHMEMI_DEV_FLAT_BARRIER_PES) {
        unsigned spins = 0;
        /* Every signal follows the fence or quiet above and carries
         * nothing learnt since, so each is a relaxed add after it. */
        for (int dist = 1; dist < s->n_pes; dist++)
            ushmemi_dev_signal_after_fence(&flags[0], (s->my_pe + dist) % s->n_pes,
                                           USHMEM_DEVICE_CLASS_SYNC, USHMEM_RING_AMO_ADD, 1);
        while (ushmemi_dev_load64(&flags[0]) < epoch * (uint64_t)(s->n_pes - 1))
            ushmem_ring_backoff(&spins);
    }
    for (int64_t dist = 1; s->n_pes > USHMEMI_DEV_FLAT_BARRIER_PES && dist < s->n_pes &&
                           k < s->device_flags_count;
         dist *= 2, k++) {
        int to = (int)((s->my_pe + dist) % s->n_pes);
        unsigned spins = 0;

        /* The first signal follows the fence or quiet above; a later one
         * must carry what this PE learnt in the rounds before (release). */
        if (k == 0)
            ushmemi_dev_signal_after_fence(&flags[k], to, USHMEM_DEVICE_CLASS_SYNC,
                                           USHMEM_RING_AMO_ADD, 1);
        else
            ushmemi_dev_amo(&flags[k], to, USHMEM_DEVICE_CLASS_SYNC, USHMEM_RING_AMO_ADD,
                            USHMEM_RING_AMO_UINT64, 8, 1, 0, 0);
        while (ushmemi_dev_load64(&flags[k]) < epoch)
            ushmem_ring_backoff(&spins);
    }
    ushmemi_dev_own_store64(epoch_p, epoch);
    /* The proxied signals are done too, so a later quiet has nothing of the
     * barrier's to wait for. */
    if (s->ring != NULL)
        ushmem_quiet();
}

/* Completes the calling thread's operations and waits for every PE. */
USHMEM_DEVICE_FN void ushmem_barrier_all(void)
{
    ushmemi_dev_barrier(1);
}

/* Waits for every PE; the caller's stores are ordered before, not completed. */
USHMEM_DEVICE_FN void ushmem_sync_all(void)
{
    ushmemi_dev_barrier(0);
}

/* The end of a block collective: every thread's puts are complete (direct
 * stores made visible by each thread, proxied ones by the barrier's quiet)
 * and every PE has done its part. */
USHMEM_DEVICE_FN void ushmemi_dev_block_barrier(void)
{
    ushmemi_dev_fence();
    ushmemi_dev_group_sync(USHMEMI_DEV_BLOCK);
    if (ushmemi_dev_group_rank(USHMEMI_DEV_BLOCK) == 0)
        ushmemi_dev_barrier(1);
    ushmemi_dev_group_sync(USHMEMI_DEV_BLOCK);
}

/* dest[pe * nbytes ...] on every PE receives src of that PE's block for this
 * PE, that is src[me * nbytes ...] of PE pe. Peers are taken from the next
 * PE on, so that PEs do not all write to one PE at once. */
USHMEM_DEVICE_FN void ushmemx_alltoallmem_block(void *dest, const void *src, size_t nbytes)
{
    const struct ushmem_device_state *s = ushmemi_dev_state();

    for (int i = 0; i < s->n_pes; i++) {
        int pe = (s->my_pe + 1 + i) % s->n_pes;
        ushmemi_dev_put((char *)dest + (size_t)s->my_pe * nbytes,
                        (const char *)src + (size_t)pe * nbytes, nbytes, pe, 1,
                        USHMEMI_DEV_BLOCK);
    }
    ushmemi_dev_block_barrier();
}

/* dest on every PE, root included, receives src of root. */
USHMEM_DEVICE_FN void ushmemx_broadcastmem_block(void *dest, const void *src, size_t nbytes,
                                                 int root)
{
    const struct ushmem_device_state *s = ushmemi_dev_state();

    if (s->my_pe == root) {
        for (int i = 0; i < s->n_pes; i++)
            ushmemi_dev_put(dest, src, nbytes, (root + 1 + i) % s->n_pes, 1, USHMEMI_DEV_BLOCK);
    }
    ushmemi_dev_block_barrier();
}

/* dest[pe * nbytes ...] on every PE receives src of PE pe. */
USHMEM_DEVICE_FN void ushmemx_fcollectmem_block(void *dest, const void *src, size_t nbytes)
{
    const struct ushmem_device_state *s = ushmemi_dev_state();

    for (int i = 0; i < s->n_pes; i++)
        ushmemi_dev_put((char *)dest + (size_t)s->my_pe * nbytes, src, nbytes,
                        (s->my_pe + 1 + i) % s->n_pes, 1, USHMEMI_DEV_BLOCK);
    ushmemi_dev_block_barrier();
}

#if defined(__OPENCL_C_VERSION__)
#pragma pop_macro("local")
#endif
#endif
