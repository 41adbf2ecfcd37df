/* The device API's compiler-specific helpers for C11 and host C++: what each helper
 * must do is listed in <ushmem/device.h>, which alone includes this file. */
#ifndef USHMEM_DETAIL_DEVICE_C_H
#define USHMEM_DETAIL_DEVICE_C_H

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
USHMEM_DEVICE_FN uint64_t ushmemi_dev_quiet_target(struct ushmem_ring_header *r,
                                                   ushmem_ring_word_t *tail)
{
    (void)r;
    (void)tail;
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
/* memcpy, not a uint64_t access: the word may be any object of the
 * program's (C's aliasing rules); it is one move all the same. */
USHMEM_DEVICE_FN void ushmemi_dev_copy_word64(void *dst, const void *src)
{
    memcpy(dst, src, 8);
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

#endif /* USHMEM_DETAIL_DEVICE_C_H */
