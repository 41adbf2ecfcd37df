/* The proxy request ring: the memory layout that device code (the producers)
 * and the host proxy thread (the consumer) share, and the producer side of the
 * protocol. The ring lives in host-pinned memory; this header is included by
 * plain C (the cpu backend, where "device code" is host threads) and later by
 * CUDA and SYCL device code, so everything compiler specific (atomics, fences,
 * pausing) sits in the helpers of the first section and nowhere else.
 *
 * Protocol
 *   - A producer takes a ticket with one atomic fetch_add on `tail`. Ticket t
 *     owns slot t % capacity once the consumer has consumed ticket
 *     t - capacity, that is once t - head < capacity: until then the producer
 *     waits (back pressure); a slot is never overwritten.
 *   - It fills every field of the slot and then stores seq = t + 1 with
 *     release semantics at system scope, so the consumer, which acquires seq,
 *     sees the whole request. seq is the only word the consumer polls.
 *   - The consumer takes requests strictly in ticket order, copies each one
 *     out and advances `head` (freeing the slot) before executing it.
 *   - `completed` counts requests whose effects are complete: every ticket
 *     below it is done, including non-blocking puts and gets, which the proxy
 *     completes with a transport quiet before moving `completed` past them.
 *     A blocking operation waits for completed > its ticket (and then reads
 *     its fetched value); quiet waits for completed >= the producer's issued
 *     count. Neither is a round trip of its own.
 *   - FENCE is an ordering marker, not a wait: requests are consumed in ticket
 *     order and blocking ones complete in that order, so the proxy only has
 *     to order outstanding non-blocking operations (a transport fence) before
 *     anything after the marker. Because the ring is one queue, a fence from
 *     one producer orders every earlier request, whoever issued it.
 *   - Values that cannot live in the producer's memory, because the consumer
 *     cannot reach it (a GPU thread's registers and local memory): a put of
 *     up to 8 bytes may carry them in the request (FLAG_INLINE: the bytes
 *     are in `local`); a get of up to 8 bytes or a fetching atomic may ask
 *     for its bytes in the ring's result cell of its slot (FLAG_RESULT). The
 *     consumer writes the cell's value and then tag = ticket + 1 (release)
 *     before completing the ticket; the producer reads the value once the
 *     ticket is done and stores ack = ticket + 1. The consumer writes a cell
 *     again only after the previous result in it was acknowledged, so a
 *     slow reader never loses its value to a later ticket of the same slot.
 *   - The consumer may also keep a copy of the counter in a word that
 *     producers read faster (on a GPU, a word of its own memory: polling
 *     host memory from many GPU threads starves the copy engine, which the
 *     proxy uses). When requests are carried out by a device in order (the
 *     copy engine), the device writes the copy behind them, so the copy may
 *     run ahead of `completed`, which the consumer moves once it has waited
 *     for the device; otherwise the copy is written after `completed`. Each
 *     alone is a correct completion word, and producers that were told of
 *     the copy wait on it. The value of a FLAG_RESULT request may then be
 *     written into its cell by the device, before the copy passes its
 *     ticket. Since head >= either word, a producer may also wait for its
 *     slot on the copy instead of on head. The copy's address is not in the
 *     header: producers are told it beside the ring
 *     (ushmem_device_state.ring_done_offset), and the functions below take
 *     it as `done`, NULL meaning `completed` itself.
 *   - Where producers reach another memory faster than the ring's (a GPU's
 *     own), the tickets and the fetched values may live there instead,
 *     told to producers beside the ring as `done` is
 *     (ushmem_device_state.ring_tail and ring_values) and taken by the functions below
 *     as `tail` and `values`, NULL meaning the ring's own. Tickets then
 *     cost the producer no round trip over the link, and the consumer
 *     never reads that tail: it polls seq alone, as always. A fetched
 *     value then goes into values[ticket % capacity], written by the
 *     device ahead of the copy of the counter that completes its ticket,
 *     so the producer reads it with no tag to wait for; the cell's ack in
 *     the ring still tells the consumer when the value was read. Between
 *     values the cell holds USHMEM_RING_VALUE_EMPTY (the library fills
 *     it so, each reader empties it before its ack), so a producer may
 *     also take its value as soon as it is written, before its ticket is
 *     done (ushmem_ring_result_wait_on).
 *   - A put of up to 8 bytes in the request may carry a signal
 *     (FLAG_SIGNAL, with FLAG_INLINE): `reserved` holds the signal word's
 *     offset in the same PE's heap, `compare` the signal's value, `amo_op`
 *     SET or ADD (a 64-bit word). The consumer carries out the put and
 *     then the signal, ordered as a put followed by a non-fetching atomic
 *     of its own, and completes the ticket once both are complete: one
 *     request, where a put and an atomic took two.
 *   - `errors` counts requests that failed; the proxy reports each one
 *     through its abort callback (which normally ends the job) and still
 *     counts it completed, so a producer never waits forever on it. */
#ifndef USHMEM_DETAIL_RING_H
#define USHMEM_DETAIL_RING_H

#if defined(__OPENCL_C_VERSION__)
/* OpenCL C has no standard headers. Its types have the widths of the
 * <stdint.h> ones (size_t, ptrdiff_t, intptr_t and uintptr_t are built in),
 * so the layouts below are the same bytes. */
typedef signed char int8_t;
typedef short int16_t;
typedef int int32_t;
typedef long int64_t;
typedef unsigned char uint8_t;
typedef unsigned short uint16_t;
typedef unsigned int uint32_t;
typedef unsigned long uint64_t;
#ifndef offsetof
#define offsetof(type, member) __builtin_offsetof(type, member)
#endif
/* `local` is an OpenCL C keyword (the __local address space) and here the
 * name of a request's field: the keyword is hidden until the end of the
 * header (and of device.h, which includes it). */
#pragma push_macro("local")
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wkeyword-macro"
#define local ushmemi_local
#pragma clang diagnostic pop
#else
#include <stddef.h>
#include <stdint.h>
#endif

/* Bumped on any change to the layout or the protocol above. */
#define USHMEM_RING_VERSION 7
#define USHMEM_RING_CACHELINE 64
#define USHMEM_RING_REQUEST_SIZE 64

/* ---- Compiler-specific helpers: the only place that knows the toolchain. ----
 * ushmem_ring_word_t: a 64-bit word accessed atomically.
 * ushmem_ring_load_acquire / _store_release / _fetch_add: at system scope,
 *   because the other side is another agent (CPU thread or GPU).
 * ushmem_ring_take_ticket: one ticket from tail (on CUDA, warp-aggregated).
 * ushmem_ring_pause: a short wait inside a poll loop.
 * ushmem_ring_yield: give the processor away (a host thread yields, a GPU
 *   thread sleeps briefly); used once polling has gone on for a while. */
#if defined(SYCL_LANGUAGE_VERSION)
/* SYCL 2020 (any implementation): the ring's words are plain 64-bit words
 * reached through sycl::atomic_ref at system scope, since the consumer is a
 * host thread. The generic address space, because a word may be named by a
 * pointer of any kind. A kernel that runs on the host (a CPU device, whose
 * work-items are host threads) yields the processor while it waits, as a
 * host producer does: producers may outnumber cores, and a spinning one
 * must not starve the proxy thread it waits for. AdaptiveCpp compiles a
 * kernel once per target, and says which one in __acpp_if_target_host;
 * another implementation's device pass defines __SYCL_DEVICE_ONLY__. On a
 * CUDA device pass (acpp's cuda target, where __CUDA_ARCH__ is defined)
 * sycl::atomic_ref drops the system scope, so the words go through PTX
 * (detail/ptx.h), and a waiting work-item naps as nvcc's CUDA slot's does. */
#include <sycl/sycl.hpp>
#include <ushmem/detail/ptx.h>
#if !defined(__SYCL_DEVICE_ONLY__)
#include <sched.h>
#endif
typedef uint64_t ushmem_ring_word_t;
#define USHMEM_RING_INLINE static inline
typedef sycl::atomic_ref<uint64_t, sycl::memory_order::relaxed, sycl::memory_scope::system,
                         sycl::access::address_space::generic_space>
    ushmem_ring_atomic_ref;
USHMEM_RING_INLINE uint64_t ushmem_ring_load_acquire(ushmem_ring_word_t *p)
{
#if defined(__CUDA_ARCH__)
    return ushmemi_ptx_load_acquire64(p);
#else
    return ushmem_ring_atomic_ref(*p).load(sycl::memory_order::acquire);
#endif
}
USHMEM_RING_INLINE void ushmem_ring_store_release(ushmem_ring_word_t *p, uint64_t v)
{
#if defined(__CUDA_ARCH__)
    ushmemi_ptx_store_release64(p, v);
#else
    ushmem_ring_atomic_ref(*p).store(v, sycl::memory_order::release);
#endif
}
USHMEM_RING_INLINE uint64_t ushmem_ring_fetch_add(ushmem_ring_word_t *p, uint64_t v)
{
#if defined(__CUDA_ARCH__)
    return ushmemi_ptx_fetch_add64(p, v);
#else
    return ushmem_ring_atomic_ref(*p).fetch_add(v, sycl::memory_order::relaxed);
#endif
}
USHMEM_RING_INLINE void ushmem_ring_pause(void)
{
}
#if defined(__acpp_if_target_host)
#define USHMEMI_RING_ON_HOST(...) __acpp_if_target_host(__VA_ARGS__)
#elif !defined(__SYCL_DEVICE_ONLY__)
#define USHMEMI_RING_ON_HOST(...) __VA_ARGS__
#else
#define USHMEMI_RING_ON_HOST(...)
#endif
USHMEM_RING_INLINE void ushmem_ring_yield(void)
{
#if defined(__CUDA_ARCH__)
    ushmemi_ptx_nap();
#else
    USHMEMI_RING_ON_HOST(sched_yield();)
#endif
}
#define USHMEM_RING_STATIC_ASSERT(cond, msg) static_assert(cond, msg)

#elif defined(__CUDACC__)
/* CUDA slot (host and device passes of nvcc). cuda::atomic_ref at
 * thread_scope_system makes the release store of seq carry the equivalent of
 * __threadfence_system, ordering the slot's fields, written over PCIe or
 * NVLink into host-pinned memory, before seq. */
#include <cooperative_groups.h>
#include <cuda/atomic>
#include <sched.h>
#include <ushmem/detail/ptx.h>
typedef unsigned long long ushmem_ring_word_t;
#define USHMEM_RING_INLINE static inline __host__ __device__
USHMEM_RING_INLINE uint64_t ushmem_ring_load_acquire(ushmem_ring_word_t *p)
{
    return cuda::atomic_ref<ushmem_ring_word_t, cuda::thread_scope_system>(*p).load(
        cuda::memory_order_acquire);
}
USHMEM_RING_INLINE void ushmem_ring_store_release(ushmem_ring_word_t *p, uint64_t v)
{
    cuda::atomic_ref<ushmem_ring_word_t, cuda::thread_scope_system>(*p).store(
        v, cuda::memory_order_release);
}
USHMEM_RING_INLINE uint64_t ushmem_ring_fetch_add(ushmem_ring_word_t *p, uint64_t v)
{
    return cuda::atomic_ref<ushmem_ring_word_t, cuda::thread_scope_system>(*p).fetch_add(
        v, cuda::memory_order_relaxed);
}
/* Tickets: the lanes of a warp that submit together take consecutive ones
 * with a single atomic on tail, made by one of them (warp aggregation), so
 * thousands of submitting threads cost the host-pinned word a few hundred
 * round trips over the link instead of one each. */
USHMEM_RING_INLINE uint64_t ushmem_ring_take_ticket(ushmem_ring_word_t *tail)
{
#if defined(__CUDA_ARCH__)
    cooperative_groups::coalesced_group g = cooperative_groups::coalesced_threads();
    unsigned long long base = 0;
    if (g.thread_rank() == 0)
        base = ushmem_ring_fetch_add(tail, g.size());
    base = g.shfl(base, 0);
    return base + g.thread_rank();
#else
    return ushmem_ring_fetch_add(tail, 1);
#endif
}
/* Both passes compile these; __CUDA_ARCH__ tells the device pass apart. */
USHMEM_RING_INLINE void ushmem_ring_pause(void)
{
#if !defined(__CUDA_ARCH__) && (defined(__x86_64__) || defined(__i386__))
    __builtin_ia32_pause();
#endif
}
USHMEM_RING_INLINE void ushmem_ring_yield(void)
{
#if defined(__CUDA_ARCH__)
    __nanosleep(256);
#else
    sched_yield();
#endif
}
#define USHMEM_RING_STATIC_ASSERT(cond, msg) static_assert(cond, msg)

#elif defined(__OPENCL_C_VERSION__)
/* OpenCL C 2.0, or 3.0 with the generic address space (device.h says why),
 * compiled to SPIR-V for Level Zero. The ring is host memory the device
 * reaches; its words are plain 64-bit words reached through atomic_ulong
 * views at all-devices scope (memory_scope_all_svm_devices, SPIR-V
 * CrossDevice), because the consumer is a host thread. OpenCL has no way
 * to pause or sleep a work-item, so a poll loop only spins. */
#if __OPENCL_C_VERSION__ < 200 ||                                                      \
    (__OPENCL_C_VERSION__ >= 300 &&                                                     \
     (!defined(__opencl_c_generic_address_space) ||                                     \
      !defined(__opencl_c_atomic_scope_all_devices) || !defined(__opencl_c_atomic_order_acq_rel)))
#error "ushmem: OpenCL C 2.0, or 3.0 with the generic address space and acquire-release atomics at all-devices scope"
#endif
#if !defined(cl_khr_int64_base_atomics) || !defined(cl_khr_int64_extended_atomics)
#error "ushmem: OpenCL C needs cl_khr_int64_base_atomics and cl_khr_int64_extended_atomics"
#endif
#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable
#pragma OPENCL EXTENSION cl_khr_int64_extended_atomics : enable
typedef ulong ushmem_ring_word_t;
#define USHMEM_RING_INLINE static inline
USHMEM_RING_INLINE uint64_t ushmem_ring_load_acquire(ushmem_ring_word_t *p)
{
    return atomic_load_explicit((volatile atomic_ulong *)p, memory_order_acquire,
                                memory_scope_all_svm_devices);
}
USHMEM_RING_INLINE void ushmem_ring_store_release(ushmem_ring_word_t *p, uint64_t v)
{
    atomic_store_explicit((volatile atomic_ulong *)p, v, memory_order_release,
                          memory_scope_all_svm_devices);
}
USHMEM_RING_INLINE uint64_t ushmem_ring_fetch_add(ushmem_ring_word_t *p, uint64_t v)
{
    return atomic_fetch_add_explicit((volatile atomic_ulong *)p, v, memory_order_relaxed,
                                     memory_scope_all_svm_devices);
}
USHMEM_RING_INLINE void ushmem_ring_pause(void)
{
}
USHMEM_RING_INLINE void ushmem_ring_yield(void)
{
}
/* OpenCL C is C99-based: _Static_assert is Clang's extension there. */
#define USHMEM_RING_STATIC_ASSERT(cond, msg) __extension__ _Static_assert(cond, msg)

#elif defined(__cplusplus)
/* Host C++ (GCC and Clang): the same word as the C11 branch, reached through
 * the __atomic builtins because C++ before C++23 has no _Atomic. */
#include <sched.h>
typedef uint64_t ushmem_ring_word_t;
#define USHMEM_RING_INLINE static inline
USHMEM_RING_INLINE uint64_t ushmem_ring_load_acquire(ushmem_ring_word_t *p)
{
    return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}
USHMEM_RING_INLINE void ushmem_ring_store_release(ushmem_ring_word_t *p, uint64_t v)
{
    __atomic_store_n(p, v, __ATOMIC_RELEASE);
}
USHMEM_RING_INLINE uint64_t ushmem_ring_fetch_add(ushmem_ring_word_t *p, uint64_t v)
{
    return __atomic_fetch_add(p, v, __ATOMIC_RELAXED);
}
#define USHMEM_RING_HOST_PAUSE 1
#define USHMEM_RING_STATIC_ASSERT(cond, msg) static_assert(cond, msg)

#else
/* C11: the cpu backend, where producers are host threads. */
#include <sched.h>
#include <stdatomic.h>
typedef _Atomic uint64_t ushmem_ring_word_t;
#define USHMEM_RING_INLINE static inline
USHMEM_RING_INLINE uint64_t ushmem_ring_load_acquire(ushmem_ring_word_t *p)
{
    return atomic_load_explicit(p, memory_order_acquire);
}
USHMEM_RING_INLINE void ushmem_ring_store_release(ushmem_ring_word_t *p, uint64_t v)
{
    atomic_store_explicit(p, v, memory_order_release);
}
USHMEM_RING_INLINE uint64_t ushmem_ring_fetch_add(ushmem_ring_word_t *p, uint64_t v)
{
    /* Relaxed: the ticket only names a slot; ordering comes from head and seq. */
    return atomic_fetch_add_explicit(p, v, memory_order_relaxed);
}
#define USHMEM_RING_HOST_PAUSE 1
#define USHMEM_RING_STATIC_ASSERT(cond, msg) _Static_assert(cond, msg)
#endif

#if defined(USHMEM_RING_HOST_PAUSE)
USHMEM_RING_INLINE void ushmem_ring_pause(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}
USHMEM_RING_INLINE void ushmem_ring_yield(void)
{
    /* Producers may outnumber cores (PEs are oversubscribed in tests); a
     * spinning producer must not starve the proxy thread it waits for. */
    sched_yield();
}
#endif
#if !defined(__CUDACC__) || defined(SYCL_LANGUAGE_VERSION)
USHMEM_RING_INLINE uint64_t ushmem_ring_take_ticket(ushmem_ring_word_t *tail)
{
    return ushmem_ring_fetch_add(tail, 1);
}
#endif
/* ---- End of the compiler-specific helpers. ---- */

enum ushmem_ring_op {
    USHMEM_RING_OP_NONE = 0, /* never valid: a zeroed slot is not a request */
    USHMEM_RING_OP_PUT,      /* blocking: done when completed > ticket */
    USHMEM_RING_OP_GET,
    USHMEM_RING_OP_PUT_NBI,  /* done at quiet; local must stay valid until then */
    USHMEM_RING_OP_GET_NBI,
    USHMEM_RING_OP_AMO,      /* amo_op, amo_type; fetching ops write *result */
    USHMEM_RING_OP_FENCE,    /* ordering marker, see the protocol above */
    USHMEM_RING_OP_COUNT,
};

/* Request flags. */
#define USHMEM_RING_FLAG_INLINE 0x1u /* put: the value bytes are in `local` (up to 8) */
#define USHMEM_RING_FLAG_RESULT 0x2u /* get (up to 8 bytes), fetching AMO: into the result cell */
#define USHMEM_RING_FLAG_SIGNAL 0x4u /* inline put: then a signal (see the protocol) */

/* The ring's own numbering, so that device code needs no internal header;
 * the proxy translates to the transport's enums. */
enum ushmem_ring_amo_op {
    USHMEM_RING_AMO_FETCH,
    USHMEM_RING_AMO_SET,
    USHMEM_RING_AMO_SWAP,
    USHMEM_RING_AMO_CSWAP,
    USHMEM_RING_AMO_ADD,
    USHMEM_RING_AMO_AND,
    USHMEM_RING_AMO_OR,
    USHMEM_RING_AMO_XOR,
    USHMEM_RING_AMO_OP_COUNT,
};

enum ushmem_ring_amo_type {
    USHMEM_RING_AMO_INT32,
    USHMEM_RING_AMO_UINT32,
    USHMEM_RING_AMO_INT64,
    USHMEM_RING_AMO_UINT64,
    USHMEM_RING_AMO_FLOAT,
    USHMEM_RING_AMO_DOUBLE,
    USHMEM_RING_AMO_TYPE_COUNT,
};

/* One request, exactly one cache line. Addresses are the producer's, as
 * integers, so that the layout is the same for every compiler and pointer
 * width. AMO operands are bit patterns: a 4-byte type in the low 32 bits. */
struct ushmem_ring_request {
    uint8_t op;       /* enum ushmem_ring_op */
    uint8_t amo_op;   /* enum ushmem_ring_amo_op (AMO, and a put's signal) */
    uint8_t amo_type; /* enum ushmem_ring_amo_type (AMO only) */
    uint8_t flags;    /* USHMEM_RING_FLAG_* */
    int32_t pe;       /* target PE */
    uint64_t offset;  /* remote address: offset from the start of the peer's heap */
    uint64_t local;   /* local address: source of a put, destination of a get */
    uint64_t value;   /* bytes for put and get; operand bits for AMO */
    uint64_t compare; /* compare bits for CSWAP; FLAG_SIGNAL: the signal's value */
    uint64_t result;  /* where a fetching AMO's old value goes; 0 for none */
    uint64_t reserved; /* FLAG_SIGNAL: the signal's remote offset; else 0 */
    ushmem_ring_word_t seq; /* ticket + 1, stored last with release */
};

/* The ring header, followed in the same allocation by `capacity` requests.
 * Words written by different agents sit on separate cache lines so that the
 * producers' ticket traffic does not slow the consumer's stores. */
struct ushmem_ring_header {
    /* Line 0: written once at creation, read-only afterwards. */
    uint32_t version;  /* USHMEM_RING_VERSION */
    uint32_t capacity; /* slots, a power of two */
    uint64_t slots_offset;   /* bytes from the header to slot 0 */
    uint64_t results_offset; /* bytes from the header to result cell 0 */
    uint8_t pad0[USHMEM_RING_CACHELINE - 24];
    /* Line 1: producers' ticket counter. */
    ushmem_ring_word_t tail;
    uint8_t pad1[USHMEM_RING_CACHELINE - sizeof(ushmem_ring_word_t)];
    /* Line 2: consumer: tickets below head have been taken; their slots are free. */
    ushmem_ring_word_t head;
    uint8_t pad2[USHMEM_RING_CACHELINE - sizeof(ushmem_ring_word_t)];
    /* Line 3: consumer: tickets below completed are done. */
    ushmem_ring_word_t completed;
    uint8_t pad3[USHMEM_RING_CACHELINE - sizeof(ushmem_ring_word_t)];
    /* Line 4: consumer: requests that failed (and were reported). */
    ushmem_ring_word_t errors;
    uint8_t pad4[USHMEM_RING_CACHELINE - sizeof(ushmem_ring_word_t)];
};

USHMEM_RING_STATIC_ASSERT(sizeof(ushmem_ring_word_t) == 8, "ring words are 64-bit");
USHMEM_RING_STATIC_ASSERT(sizeof(struct ushmem_ring_request) == USHMEM_RING_REQUEST_SIZE,
                          "a ring request is exactly 64 bytes");
USHMEM_RING_STATIC_ASSERT(offsetof(struct ushmem_ring_request, offset) == 8, "request layout");
USHMEM_RING_STATIC_ASSERT(offsetof(struct ushmem_ring_request, result) == 40, "request layout");
USHMEM_RING_STATIC_ASSERT(offsetof(struct ushmem_ring_request, seq) == 56,
                          "seq is the request's last word");
USHMEM_RING_STATIC_ASSERT(offsetof(struct ushmem_ring_header, tail) == 1 * USHMEM_RING_CACHELINE,
                          "tail on its own cache line");
USHMEM_RING_STATIC_ASSERT(offsetof(struct ushmem_ring_header, head) == 2 * USHMEM_RING_CACHELINE,
                          "head on its own cache line");
USHMEM_RING_STATIC_ASSERT(offsetof(struct ushmem_ring_header, completed) ==
                              3 * USHMEM_RING_CACHELINE,
                          "completed on its own cache line");
USHMEM_RING_STATIC_ASSERT(offsetof(struct ushmem_ring_header, errors) == 4 * USHMEM_RING_CACHELINE,
                          "errors on its own cache line");
USHMEM_RING_STATIC_ASSERT(sizeof(struct ushmem_ring_header) == 5 * USHMEM_RING_CACHELINE,
                          "slots start on a cache line");

/* One result cell per slot (FLAG_RESULT): written by the consumer (value,
 * then tag), acknowledged by the producer (ack). */
struct ushmem_ring_result {
    ushmem_ring_word_t tag; /* ticket + 1 of the result held */
    uint64_t value;         /* the bytes, a 4-byte value in the low half */
    ushmem_ring_word_t ack; /* ticket + 1 of the result last read */
    uint64_t pad;
};
USHMEM_RING_STATIC_ASSERT(sizeof(struct ushmem_ring_result) == 32, "a result cell is 32 bytes");

/* Bytes of a ring with `capacity` slots, header and result cells included. */
#define USHMEM_RING_BYTES(capacity)                                           \
    (sizeof(struct ushmem_ring_header) +                                      \
     (size_t)(capacity) * (sizeof(struct ushmem_ring_request) +               \
                           sizeof(struct ushmem_ring_result)))

/* What a producer remembers between requests: one per producer and ring,
 * zeroed before the first request. */
struct ushmem_ring_producer {
    uint64_t issued;    /* one past its last ticket, for quiet */
    uint64_t head_seen; /* the consumer's head as last read: it only grows, so
                         * a stale value is safe and spares a read of a cache
                         * line that the consumer writes on every request */
};

USHMEM_RING_INLINE struct ushmem_ring_request *ushmem_ring_slot(struct ushmem_ring_header *r,
                                                               uint64_t ticket)
{
    struct ushmem_ring_request *slots =
        (struct ushmem_ring_request *)((char *)r + r->slots_offset);
    return &slots[ticket & (uint64_t)(r->capacity - 1)];
}

/* Waits with a short spin first, then by giving the processor away. */
USHMEM_RING_INLINE void ushmem_ring_backoff(unsigned *spins)
{
    if (*spins < 64) {
        ++*spins;
        ushmem_ring_pause();
    } else {
        ushmem_ring_yield();
    }
}

/* The word that says which tickets are done: `done`, or the header's
 * completed counter when done is NULL. */
USHMEM_RING_INLINE ushmem_ring_word_t *ushmem_ring_done_word(struct ushmem_ring_header *r,
                                                             ushmem_ring_word_t *done)
{
    return done != NULL ? done : &r->completed;
}

/* The word that tickets are taken from: `tail`, or the header's when tail
 * is NULL. */
USHMEM_RING_INLINE ushmem_ring_word_t *ushmem_ring_tail_word(struct ushmem_ring_header *r,
                                                             ushmem_ring_word_t *tail)
{
    return tail != NULL ? tail : &r->tail;
}

/* The early read (CUDA device code, nvcc's or acpp's, with `done`: the
 * counter's copy in the PE's own heap). A GPU thread's producer lives for
 * one call (head_seen 0), so past the ring's first lap every one of its
 * requests needs `done` to find its slot free. Read after the ticket with
 * an acquire, as before, it held up the ticket's atomic and what follows
 * until it returned (on one H200 a request past the first lap took 0.9-1.5
 * us more than one before it; docs/performance/proxy.md). reserve_on now
 * reads it before taking the ticket, relaxed, so that the two overlap, and
 * that time came back. Relaxed relies on the hardware, not on the PTX
 * memory model, which orders a relaxed load before later stores only with
 * an acquire or a fence: the slot's stores come after the comparison that
 * decides them, and a GPU makes no store visible before the load its
 * branch waits for (NVSHMEM's proxy channels take the same fast path with
 * a volatile read); the consumer took the slot's request before `done`
 * passed it. The former acquire did not pair with a release either: the
 * GPU's front end writes `done` (cuStreamWriteValue64). A stale value only
 * sends the producer to the acquiring loop. Not yet measured: an acquire
 * issued after the atomic (formally ordered, and it would not hold the
 * atomic up). Measured and not kept: the ring's capacity and slot offset
 * read before the ticket rather than from the host-pinned header after
 * it (no gain; `g` slower, docs/performance/proxy.md).
 * -DUSHMEMI_RING_EARLY_READ=0 (a measurement switch) leaves it out. */
#ifndef USHMEMI_RING_EARLY_READ
#define USHMEMI_RING_EARLY_READ 1
#endif

/* Takes a ticket (from `tail`, NULL for the header's) and waits until its
 * slot is free: on head, or with a faster copy of completed (a lower bound
 * of head) on that. */
USHMEM_RING_INLINE uint64_t ushmem_ring_reserve_on(struct ushmem_ring_header *r,
                                                   ushmem_ring_word_t *tail,
                                                   ushmem_ring_word_t *done,
                                                   struct ushmem_ring_producer *p)
{
#if defined(__CUDA_ARCH__) && USHMEMI_RING_EARLY_READ
    uint64_t early = done != NULL ? ushmemi_ptx_load_relaxed64(done) : 0;
#endif
    uint64_t ticket = ushmem_ring_take_ticket(ushmem_ring_tail_word(r, tail));
    unsigned spins = 0;

#if defined(__CUDA_ARCH__) && USHMEMI_RING_EARLY_READ
    if (early > p->head_seen)
        p->head_seen = early;
#endif
    if (ticket - p->head_seen < r->capacity)
        return ticket;
    for (;;) {
        p->head_seen = ushmem_ring_load_acquire(done != NULL ? done : &r->head);
        if (ticket - p->head_seen < r->capacity)
            return ticket;
        ushmem_ring_backoff(&spins);
    }
}

USHMEM_RING_INLINE uint64_t ushmem_ring_reserve(struct ushmem_ring_header *r,
                                                struct ushmem_ring_producer *p)
{
    return ushmem_ring_reserve_on(r, NULL, NULL, p);
}

/* Fills the reserved slot from req (its seq is ignored) and publishes it:
 * every field first, seq last with release. */
USHMEM_RING_INLINE void ushmem_ring_publish(struct ushmem_ring_header *r, uint64_t ticket,
                                            const struct ushmem_ring_request *req)
{
    struct ushmem_ring_request *slot = ushmem_ring_slot(r, ticket);

    slot->op = req->op;
    slot->amo_op = req->amo_op;
    slot->amo_type = req->amo_type;
    slot->flags = req->flags;
    slot->pe = req->pe;
    slot->offset = req->offset;
    slot->local = req->local;
    slot->value = req->value;
    slot->compare = req->compare;
    slot->result = req->result;
    slot->reserved = req->reserved;
    ushmem_ring_store_release(&slot->seq, ticket + 1);
}

/* reserve + publish; remembers the ticket in the producer for quiet. */
USHMEM_RING_INLINE uint64_t ushmem_ring_submit_on(struct ushmem_ring_header *r,
                                                  ushmem_ring_word_t *tail,
                                                  ushmem_ring_word_t *done,
                                                  struct ushmem_ring_producer *p,
                                                  const struct ushmem_ring_request *req)
{
    uint64_t ticket = ushmem_ring_reserve_on(r, tail, done, p);

    ushmem_ring_publish(r, ticket, req);
    if (ticket + 1 > p->issued)
        p->issued = ticket + 1;
    return ticket;
}

USHMEM_RING_INLINE uint64_t ushmem_ring_submit(struct ushmem_ring_header *r,
                                               struct ushmem_ring_producer *p,
                                               const struct ushmem_ring_request *req)
{
    return ushmem_ring_submit_on(r, NULL, NULL, p, req);
}

/* 1 when the request with this ticket is done. */
USHMEM_RING_INLINE int ushmem_ring_is_done_on(struct ushmem_ring_header *r,
                                              ushmem_ring_word_t *done, uint64_t ticket)
{
    return ushmem_ring_load_acquire(ushmem_ring_done_word(r, done)) > ticket;
}

USHMEM_RING_INLINE int ushmem_ring_is_done(struct ushmem_ring_header *r, uint64_t ticket)
{
    return ushmem_ring_is_done_on(r, NULL, ticket);
}

/* Waits until the request with this ticket is done; its fetched value, if
 * any, is visible on return. */
USHMEM_RING_INLINE void ushmem_ring_wait_on(struct ushmem_ring_header *r,
                                            ushmem_ring_word_t *done, uint64_t ticket)
{
    unsigned spins = 0;

    while (!ushmem_ring_is_done_on(r, done, ticket))
        ushmem_ring_backoff(&spins);
}

USHMEM_RING_INLINE void ushmem_ring_wait(struct ushmem_ring_header *r, uint64_t ticket)
{
    ushmem_ring_wait_on(r, NULL, ticket);
}

/* The bytes an empty cell of `values` holds: the consumer's device writes a
 * value over them, and the value's reader writes them back. */
#define USHMEM_RING_VALUE_EMPTY ((((uint64_t)0xA5A5A5A5u) << 32) | (uint64_t)0xA5A5A5A5u)

/* The value of a done FLAG_RESULT request, read once: acknowledges it so
 * that the consumer may use the cell again. With `values` (the ring's
 * values kept apart, see the protocol), the value is values[ticket %
 * capacity], written before the completion the caller waited for, and the
 * cell is emptied again; NULL:
 * the cell's own, once its tag names the ticket. */
USHMEM_RING_INLINE uint64_t ushmem_ring_result_take_on(struct ushmem_ring_header *r,
                                                       uint64_t *values, uint64_t ticket)
{
    struct ushmem_ring_result *cells =
        (struct ushmem_ring_result *)((char *)r + r->results_offset);
    uint64_t index = ticket & (uint64_t)(r->capacity - 1);
    struct ushmem_ring_result *cell = &cells[index];
    uint64_t value;

    if (values != NULL) {
        value = *(volatile uint64_t *)&values[index];
        *(volatile uint64_t *)&values[index] = USHMEM_RING_VALUE_EMPTY;
    } else {
        unsigned spins = 0;
        while (ushmem_ring_load_acquire(&cell->tag) != ticket + 1)
            ushmem_ring_backoff(&spins); /* written before the ticket completed */
        value = *(volatile uint64_t *)&cell->value;
    }
    ushmem_ring_store_release(&cell->ack, ticket + 1);
    return value;
}

USHMEM_RING_INLINE uint64_t ushmem_ring_result_take(struct ushmem_ring_header *r, uint64_t ticket)
{
    return ushmem_ring_result_take_on(r, NULL, ticket);
}

/* With `values`, a FLAG_RESULT request's producer watches its cell and
 * takes the value the moment the device has written it, rather than
 * waiting for the counter's copy behind it (one more operation of the
 * device: the copy engine's completion, then its write). A cell is
 * USHMEM_RING_VALUE_EMPTY's bytes between values; the value's `size` low
 * bytes (1, 2, 4 or 8: what the copy or the atomic's kernel writes, in one
 * aligned write and only once, from a source aligned to its size; 0: not
 * watched, as where the backend does not promise that: a second write
 * after the reader emptied the cell would be taken for the next lap's
 * value)
 * differing from them mark it written. A value that equals
 * them is taken once the ticket is done, as are all where the cell may not
 * yet be empty when the producer looks: a ticket of the same cell a lap
 * earlier may not have been carried out yet (the consumer freed its slot
 * before), or its reader not have taken its value (its ack not yet equal
 * to the cell's tag, which the consumer sets when it lends the cell). The
 * consumer writes the cell again only after that ack, and the reader
 * empties the cell before its ack. -DUSHMEMI_RING_VALUE_WATCH=0 (a
 * measurement switch) always waits for the ticket. */
#ifndef USHMEMI_RING_VALUE_WATCH
#define USHMEMI_RING_VALUE_WATCH 1
#endif

/* Waits for a FLAG_RESULT request and takes its value, once; `size` is the
 * value's bytes. Without `values`, ushmem_ring_wait_on and then
 * ushmem_ring_result_take_on. */
USHMEM_RING_INLINE uint64_t ushmem_ring_result_wait_on(struct ushmem_ring_header *r,
                                                       ushmem_ring_word_t *done,
                                                       uint64_t *values, uint64_t ticket,
                                                       unsigned size)
{
#if USHMEMI_RING_VALUE_WATCH
    if (values == NULL) {
#else
    (void)size;
#endif
        ushmem_ring_wait_on(r, done, ticket);
        return ushmem_ring_result_take_on(r, values, ticket);
#if USHMEMI_RING_VALUE_WATCH
    }
    uint64_t capacity = r->capacity, index = ticket & (capacity - 1), mask = 0, tag, value;
    struct ushmem_ring_result *cell =
        (struct ushmem_ring_result *)((char *)r + r->results_offset) + index;
    volatile uint64_t *v = &values[index];
    unsigned spins = 0;

    /* A value of 1, 2, 4 or 8 bytes, which a device writes whole; others
     * (a copy may write them in pieces) and size 0 wait for the ticket. The cell is
     * this ticket's to watch (mask not 0) once every earlier
     * ticket of the same cell has been carried out (done past the ticket a
     * lap before) and the last one lent it was read (its ack equals the
     * cell's tag), or once it is lent to this ticket. Acquires: the cell's
     * emptying, before the ack or the tag that followed it, is then seen by
     * the loads below. */
    if (size != 0 && (size & (size - 1)) == 0 && size <= 8 &&
        (ticket < capacity || ushmem_ring_is_done_on(r, done, ticket - capacity))) {
        tag = ushmem_ring_load_acquire(&cell->tag);
        if (tag == ticket + 1 || ushmem_ring_load_acquire(&cell->ack) == tag)
            mask = size >= 8 ? ~(uint64_t)0 : ((uint64_t)1 << (8 * size)) - 1;
    }
    for (;;) {
        value = *v;
        if (((value ^ USHMEM_RING_VALUE_EMPTY) & mask) != 0)
            break;
        if (ushmem_ring_is_done_on(r, done, ticket)) {
            value = *v;
            break;
        }
        ushmem_ring_backoff(&spins);
    }
    *v = USHMEM_RING_VALUE_EMPTY;
    ushmem_ring_store_release(&cell->ack, ticket + 1);
    return value;
#endif
}

/* Waits until every request this producer submitted is done. */
USHMEM_RING_INLINE void ushmem_ring_quiet_on(struct ushmem_ring_header *r,
                                             ushmem_ring_word_t *done,
                                             const struct ushmem_ring_producer *p)
{
    ushmem_ring_word_t *word = ushmem_ring_done_word(r, done);
    unsigned spins = 0;

    while (ushmem_ring_load_acquire(word) < p->issued)
        ushmem_ring_backoff(&spins);
}

USHMEM_RING_INLINE void ushmem_ring_quiet(struct ushmem_ring_header *r,
                                          const struct ushmem_ring_producer *p)
{
    ushmem_ring_quiet_on(r, NULL, p);
}

#if defined(__OPENCL_C_VERSION__)
#pragma pop_macro("local")
#endif
#endif
