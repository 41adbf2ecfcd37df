/* The device API's compiler-specific helpers for OpenCL C: what each helper
 * must do is listed in <ushmem/device.h>, which alone includes this file. */
#ifndef USHMEM_DETAIL_DEVICE_OPENCL_H
#define USHMEM_DETAIL_DEVICE_OPENCL_H

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
USHMEM_DEVICE_FN uint64_t ushmemi_dev_quiet_target(struct ushmem_ring_header *r,
                                                   ushmem_ring_word_t *tail)
{
    return ushmem_ring_load_acquire(ushmem_ring_tail_word(r, tail));
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
USHMEM_DEVICE_FN void ushmemi_dev_copy_word64(void *dst, const void *src)
{
    ushmemi_dev_memcpy(dst, src, 8);
}
/* The proxy thread cannot reach a work-item's private or __local memory:
 * through the proxy, values of p, g and fetching atomics, and puts from or
 * gets into such memory, travel in the ring (FLAG_INLINE, FLAG_RESULT). */
#define USHMEMI_DEV_RESULTS_IN_RING 1
USHMEM_DEVICE_FN int ushmemi_dev_proxy_reaches(const void *p)
{
    return to_global(p) != NULL;
}


#endif /* USHMEM_DETAIL_DEVICE_OPENCL_H */
