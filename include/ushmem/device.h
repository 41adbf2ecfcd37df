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
 *     backend a thread is its own warp and block. In SYCL they take the
 *     work-group or sub-group object last instead (ushmemx_*_work_group,
 *     at the end of this file), as Intel SHMEM's do.
 *   - The block collectives (ushmemx_alltoallmem_block and friends) are
 *     called by one block per PE on every PE, with the same sizes; they
 *     return when this PE's part is complete everywhere, as the host
 *     collectives do, and they use the device barrier.
 *   - Team calls (ushmem_team_*, ushmemx_team_*) name a team by its id, the
 *     host's shmemx_team_id, which the program passes to its kernels; the
 *     device finds the team in a table the host writes when the team is
 *     made or destroyed. An id that is not a team of this PE gives -1.
 *   - wait_until with a comparison that is not a USHMEM_CMP_* value returns at
 *     once; a signal operation other than USHMEM_SIGNAL_ADD sets.
 *
 * Everything that depends on the compiler (atomics on remote words, fences,
 * thread-local state, function qualifiers, where the state lives) is in one
 * header per compiler family, include/ushmem/detail/device_<family>.h (cuda,
 * opencl, sycl, c), and nowhere else; this file holds the calls themselves,
 * written once for all of them. */
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

/* ---- Compiler-specific helpers: what each family's header provides. ----
 * USHMEM_DEVICE_FN: qualifiers of every function in this header.
 * ushmemi_dev_state(): the state.
 * Optional: ushmemi_dev_state_fresh() (USHMEMI_DEV_HAS_STATE_FRESH), the state
 *   read afresh at each call, none of its fields kept in registers across
 *   the caller: the collectives, the barrier, quiet, fence, signals and the
 *   proxy's road take it, whose inlined code is long and often called in a
 *   loop; the single puts, gets and atomics keep ushmemi_dev_state().
 * ushmemi_dev_producer(scratch): the producer state to submit with;
 *   ushmemi_dev_quiet_target(ring, tail): the ticket count quiet waits for
 *     (tail: where tickets are taken, NULL for the ring's own).
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
 *   ushmemi_dev_release_fence: a fence that orders the thread's earlier
 *   accesses before its later writes only (a release fence);
 *   ushmemi_dev_post_release64: a set or add that orders everything the
 *   thread has seen before it (its own writes, and its group's once the
 *   group has met), with no fence of its own to follow;
 *   ushmemi_dev_own_load64/store64: a word only this device's threads use,
 *   between calls the program orders (the device barrier's epoch).
 * ushmemi_dev_group_rank/size/sync(scope): the threads that make one
 *   cooperative call (scope 0: the thread, 1: its warp, 2: its block).
 * ushmemi_dev_copy_group(): copies bytes to or from mapped peer memory, the
 *   group's threads sharing the work.
 * ushmemi_dev_copy_word64(): copies one 8-byte word, both ends 8-byte
 *   aligned, as one load and one store where the device has them.
 * ushmemi_dev_memcpy / ushmemi_dev_memzero: memcpy and memset to zero for one
 *   thread's own small objects (OpenCL C has no <string.h>).
 * ushmemi_dev_longlong / _ulonglong: the types of the longlong and ulonglong
 *   calls, 64 bits (OpenCL C's long long would be 128).
 * ushmemi_dev_proxy_reaches(p): 1 when the proxy thread can reach p, else
 *   the bytes travel in the ring when USHMEMI_DEV_RESULTS_IN_RING is 1.
 * Optional (USHMEMI_DEV_HAS_OPAQUE; otherwise v itself):
 *   ushmemi_dev_opaque(v): v, as a value the optimizer cannot see through,
 *   at no cost in instructions. */
#if defined(SYCL_LANGUAGE_VERSION) /* before CUDA: acpp's cuda target is clang's CUDA mode */
#include <ushmem/detail/device_sycl.h>
#elif defined(__CUDACC__)
#include <ushmem/detail/device_cuda.h>
#elif defined(__OPENCL_C_VERSION__)
#include <ushmem/detail/device_opencl.h>
#else
#include <ushmem/detail/device_c.h>
#endif
#if !defined(USHMEMI_DEV_HAS_STATE_FRESH)
USHMEM_DEVICE_FN const struct ushmem_device_state *ushmemi_dev_state_fresh(void)
{
    return ushmemi_dev_state();
}
#endif
/* ---- End of the compiler-specific helpers. ---- */
/* The internal calls that a group of threads makes together take its scope
 * (USHMEMI_DEV_THREAD, _WARP or _BLOCK below); SYCL passes the group object
 * instead and makes them templates (detail/device_sycl.h), and then
 * USHMEMI_DEV_GROUPS leaves out the _warp and _block names. */
#if !defined(USHMEMI_DEV_SCOPED)
#define USHMEMI_DEV_SCOPED
typedef unsigned ushmemi_dev_scope;
#endif
#if !defined(USHMEMI_DEV_GROUPS)
#define USHMEMI_DEV_GROUPS 0
#endif
#if !defined(USHMEMI_DEV_HAS_OPAQUE)
USHMEM_DEVICE_FN unsigned ushmemi_dev_opaque(unsigned v)
{
    return v;
}
#endif
#if !defined(USHMEMI_DEV_HAS_RELAXED)
USHMEM_DEVICE_FN void ushmemi_dev_release_fence(void)
{
    ushmemi_dev_fence();
}
USHMEM_DEVICE_FN void ushmemi_dev_post_after_fence64(uint64_t *p, unsigned op, uint64_t v)
{
    ushmemi_dev_post64(p, op, v);
}
USHMEM_DEVICE_FN void ushmemi_dev_post_release64(uint64_t *p, unsigned op, uint64_t v)
{
    ushmemi_dev_fence();
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

/* Where this PE's producers take tickets and find fetched values (ring.h):
 * in this PE's own memory when the host keeps them there (a GPU then
 * takes a ticket without a round trip over the link to host memory);
 * NULL for the ring's own. */
USHMEM_DEVICE_FN ushmem_ring_word_t *ushmemi_dev_ring_tail(const struct ushmem_device_state *s)
{
    return (ushmem_ring_word_t *)(uintptr_t)s->ring_tail;
}

USHMEM_DEVICE_FN uint64_t *ushmemi_dev_ring_values(const struct ushmem_device_state *s)
{
    return (uint64_t *)(uintptr_t)s->ring_values;
}

/* The offset of a symmetric address from this PE's heap start: the remote
 * address a ring request carries. */
USHMEM_DEVICE_FN uint64_t ushmemi_dev_offset(const struct ushmem_device_state *s, const void *addr)
{
    return (uint64_t)(uintptr_t)addr - s->heap_base;
}

/* Whether pe is in the window of class `cls` (detail/device_state.h), and
 * the distance from an object here to the same object in a window PE's heap
 * as mapped here: arithmetic on fields at fixed places in the state, which
 * a GPU reads from its constant cache as operands, no load under a run-time
 * index. */
USHMEM_DEVICE_FN int ushmemi_dev_in_window(const struct ushmem_device_state *s, int pe,
                                           unsigned cls)
{
    return (uint32_t)(pe - s->window_first[cls]) < s->window_count[cls];
}

USHMEM_DEVICE_FN uint64_t ushmemi_dev_window_delta(const struct ushmem_device_state *s, int pe)
{
    return (uint64_t)(int64_t)(pe - s->my_pe) * s->peer_stride;
}

/* The same object in pe's heap as mapped here when class `cls` goes to pe
 * directly, else NULL. Any PE outside the window has its base and road
 * loaded from the table, both before the branch so that the two loads
 * overlap (each a constant-memory load under a run-time index, about two
 * hundred cycles on a GPU). */
USHMEM_DEVICE_FN void *ushmemi_dev_mapped(const struct ushmem_device_state *s, const void *addr,
                                          int pe, unsigned cls)
{
    if (ushmemi_dev_in_window(s, pe, cls))
        return (void *)(uintptr_t)((uint64_t)(uintptr_t)addr + ushmemi_dev_window_delta(s, pe));
    uint64_t base = ushmemi_dev_peer_base(s, pe);
    int direct = ushmemi_dev_peer_direct(s, pe, cls) & !s->force_proxy;
    return direct ? (void *)(uintptr_t)(base + ushmemi_dev_offset(s, addr)) : NULL;
}

/* The same road as a number: whether class `cls` goes to pe directly, and
 * if so in *delta_p the distance (modulo 2^64) from a symmetric address here
 * to the object as ushmemi_dev_mapped gives it. The answer does not depend
 * on the address, so a call whose address waits for the result of the one
 * before (a chain of fetching atomics or gets) tests its road while it
 * waits and only adds once the address is there: 0.035 us less a fetch-add
 * on two H200s than a test of the mapped pointer. The puts keep
 * ushmemi_dev_mapped, whose form measured faster there. */
USHMEM_DEVICE_FN int ushmemi_dev_reach(const struct ushmem_device_state *s, int pe, unsigned cls,
                                       uint64_t *delta_p)
{
    if (ushmemi_dev_in_window(s, pe, cls)) {
        *delta_p = ushmemi_dev_window_delta(s, pe);
        return 1;
    }
    *delta_p = ushmemi_dev_peer_base(s, pe) - s->heap_base;
    return ushmemi_dev_peer_direct(s, pe, cls) & !s->force_proxy;
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
        ticket = ushmem_ring_submit_on(s->ring, ushmemi_dev_ring_tail(s),
                                       ushmemi_dev_ring_done(s), ushmemi_dev_producer(&scratch),
                                       &req);
        if (!put) {
            /* Watched only where the source is aligned to the size (0: not
             * watched) and the backend's copies write such a word whole. */
            word = ushmem_ring_result_wait_on(
                s->ring, ushmemi_dev_ring_done(s), ushmemi_dev_ring_values(s), ticket,
                s->values_watched && ((req.offset | n) & (n - 1)) == 0 ? (unsigned)n : 0u);
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
    ticket = ushmem_ring_submit_on(s->ring, ushmemi_dev_ring_tail(s), ushmemi_dev_ring_done(s),
                                   ushmemi_dev_producer(&scratch), &req);
    if (wait)
        ushmem_ring_wait_on(s->ring, ushmemi_dev_ring_done(s), ticket);
    return ticket;
}

/* ---- RMA ---- */

#define USHMEMI_DEV_THREAD 0u
#define USHMEMI_DEV_WARP 1u
#define USHMEMI_DEV_BLOCK 2u

/* The calling thread's rank in its group and the target PE, as the calls
 * that move data take them: new values at each call for the optimizer
 * (ushmemi_dev_opaque), so that nothing the call computes from them (the
 * road to the PE, its mapped addresses, the copy's per-thread addresses)
 * is hoisted out of a user's loop of calls, where it stayed alive beside
 * the loop's own values: loops of putmem_signal_warp with the same
 * arguments each time needed 74 registers, more than a block of 1024
 * threads can have. A lone thread's rank stays the constant 0 that its
 * copy folds. Outside loops nothing changes; inside, each call computes
 * its own, as a call outside a loop does. */
USHMEMI_DEV_SCOPED
USHMEM_DEVICE_FN unsigned ushmemi_dev_call_rank(ushmemi_dev_scope scope)
{
#if USHMEMI_DEV_GROUPS
    return ushmemi_dev_group_rank(scope);
#else
    unsigned rank = ushmemi_dev_group_rank(scope);
    return scope == USHMEMI_DEV_THREAD ? rank : ushmemi_dev_opaque(rank);
#endif
}

USHMEM_DEVICE_FN int ushmemi_dev_call_pe(int pe)
{
    return (int)ushmemi_dev_opaque((unsigned)pe);
}

/* A put by the threads of `scope`, with the state `s` (the collectives give
 * ushmemi_dev_state_fresh()): on the direct road they share the copy;
 * through the proxy one of them submits. The group meets before (its source
 * is written) and after (a blocking call has returned for all of it). */
USHMEMI_DEV_SCOPED
USHMEM_DEVICE_FN void ushmemi_dev_put_on(const struct ushmem_device_state *s, void *dest,
                                         const void *src, size_t nbytes, int pe, int nbi,
                                         ushmemi_dev_scope scope)
{
    unsigned rank = ushmemi_dev_call_rank(scope);

    if (nbytes == 0)
        return;
    pe = ushmemi_dev_call_pe(pe);
    void *mapped = ushmemi_dev_mapped(s, dest, pe, USHMEM_DEVICE_CLASS_RMA);
    ushmemi_dev_group_sync(scope);
    if (mapped != NULL)
        ushmemi_dev_copy_group(mapped, src, nbytes, rank, ushmemi_dev_group_size(scope));
    else if (rank == 0)
        ushmemi_dev_submit(s, nbi ? USHMEM_RING_OP_PUT_NBI : USHMEM_RING_OP_PUT, pe, dest,
                           (uint64_t)(uintptr_t)src, nbytes, !nbi);
    ushmemi_dev_group_sync(scope);
}

USHMEMI_DEV_SCOPED
USHMEM_DEVICE_FN void ushmemi_dev_put(void *dest, const void *src, size_t nbytes, int pe, int nbi,
                                      ushmemi_dev_scope scope)
{
    ushmemi_dev_put_on(ushmemi_dev_state(), dest, src, nbytes, pe, nbi, scope);
}

USHMEMI_DEV_SCOPED
USHMEM_DEVICE_FN void ushmemi_dev_get(void *dest, const void *src, size_t nbytes, int pe, int nbi,
                                      ushmemi_dev_scope scope)
{
    const struct ushmem_device_state *s = ushmemi_dev_state();
    unsigned rank = ushmemi_dev_call_rank(scope);

    if (nbytes == 0)
        return;
    pe = ushmemi_dev_call_pe(pe);
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
#if USHMEMI_DEV_GROUPS
#define USHMEMI_DEV_MEM_SCOPES(X) X(, USHMEMI_DEV_THREAD)
#else
#define USHMEMI_DEV_MEM_SCOPES(X)                                                      \
    X(, USHMEMI_DEV_THREAD)                                                            \
    X(_warp, USHMEMI_DEV_WARP)                                                         \
    X(_block, USHMEMI_DEV_BLOCK)
#endif
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
 * They are blocking, so the copy outlives the request. A program built with
 * USHMEMI_DEV_G_CACHED gets a plain load instead, which the GPU's L1 may
 * serve and the compiler may hoist out of a loop (NVSHMEM's g): a switch to
 * measure what the volatile load costs, not a mode to ship (a loop that
 * polls a flag with g would never see it change). */
#if defined(USHMEMI_DEV_G_CACHED)
#define USHMEMI_DEV_G_LOAD(T, addr) (*(const T *)(addr))
#else
#define USHMEMI_DEV_G_LOAD(T, addr) (*(const volatile T *)(addr))
#endif
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
        uint64_t delta;                                                                \
        T value;                                                                       \
        if (ushmemi_dev_reach(ushmemi_dev_state(), pe, USHMEM_DEVICE_CLASS_RMA, &delta)) \
            return USHMEMI_DEV_G_LOAD(T, (uintptr_t)((uint64_t)(uintptr_t)src + delta)); \
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

/* One atomic through the proxy, with the state `s` (the caller's, or
 * ushmemi_dev_state_fresh() where the caller knows this road already): see
 * ushmemi_dev_amo. */
USHMEM_DEVICE_FN uint64_t ushmemi_dev_amo_proxy(const struct ushmem_device_state *s, void *dest,
                                                int pe, unsigned op, unsigned type, size_t size,
                                                uint64_t value, uint64_t compare, int fetch)
{
    struct ushmem_ring_request req;
    struct ushmem_ring_producer scratch = {0, 0};
    uint64_t result = 0, ticket;

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
    ticket = ushmem_ring_submit_on(s->ring, ushmemi_dev_ring_tail(s), ushmemi_dev_ring_done(s),
                                   ushmemi_dev_producer(&scratch), &req);
    if (!fetch)
        return 0;
    /* Not watched in its cell, as a get's value is: the atomic's kernel
     * writes the counter's copy right behind the value, and a loop of
     * collectives (which fetch through here) went past 64 registers. */
    ushmem_ring_wait_on(s->ring, ushmemi_dev_ring_done(s), ticket);
    if (USHMEMI_DEV_RESULTS_IN_RING)
        result = ushmem_ring_result_take_on(s->ring, ushmemi_dev_ring_values(s), ticket);
    if (size == 4) {
        uint32_t old;
        ushmemi_dev_memcpy(&old, &result, 4);
        return old;
    }
    return result;
}

/* One atomic of class `cls` on a 4- or 8-byte word; returns the old bits
 * when `fetch` is set. A non-fetching atomic through the proxy is not waited
 * for: like a put, quiet completes it. */
USHMEM_DEVICE_FN uint64_t ushmemi_dev_amo(void *dest, int pe, unsigned cls, unsigned op,
                                          unsigned type, size_t size, uint64_t value,
                                          uint64_t compare, int fetch)
{
    const struct ushmem_device_state *s = ushmemi_dev_state();

    if (fetch) {
        /* The road apart from the address: see ushmemi_dev_reach. */
        uint64_t delta;
        if (ushmemi_dev_reach(s, pe, cls, &delta)) {
            void *target = (void *)(uintptr_t)((uint64_t)(uintptr_t)dest + delta);
            if (size == 4)
                return ushmemi_dev_rmw32((uint32_t *)target, op, (uint32_t)value,
                                         (uint32_t)compare);
            return ushmemi_dev_rmw64((uint64_t *)target, op, value, compare);
        }
    } else {
        void *target = ushmemi_dev_mapped(s, dest, pe, cls);
        if (target != NULL) {
            if (size == 4)
                ushmemi_dev_post32((uint32_t *)target, op, (uint32_t)value);
            else
                ushmemi_dev_post64((uint64_t *)target, op, value);
            return 0;
        }
    }
    return ushmemi_dev_amo_proxy(s, dest, pe, op, type, size, value, compare, fetch);
}

/* A 64-bit set or add (a signal) of class `cls`, with the state `s`.
 * `release` set: it must not overtake what the calling thread, or the group
 * that met before it, wrote on the direct road: where the signal goes
 * directly too, one release write (release is cumulative, so it covers the
 * group's writes the meeting showed this thread); through the proxy, a
 * fence first, which completes those writes before the request leaves.
 * `release` clear: right after the calling thread's fence, with no proxied
 * request of this PE in between, so on the direct road with no proxy the
 * write itself is relaxed (with a proxy, as ushmemi_dev_amo's). One place
 * for the barrier's signals of both kinds: a copy of the proxy's road for
 * each took a loop of collectives past 64 registers. Returns 1 where the
 * signal took a ticket of the proxy's ring, else 0. */
USHMEM_DEVICE_FN int ushmemi_dev_signal_on(const struct ushmem_device_state *s, uint64_t *dest,
                                           int pe, unsigned cls, unsigned op, uint64_t value,
                                           int release)
{
    void *target = ushmemi_dev_mapped(s, dest, pe, cls);

    if (target != NULL && release) {
        ushmemi_dev_post_release64((uint64_t *)target, op, value);
    } else if (target != NULL) {
        if (s->ring == NULL)
            ushmemi_dev_post_after_fence64((uint64_t *)target, op, value);
        else
            ushmemi_dev_post64((uint64_t *)target, op, value);
    } else {
        if (release)
            ushmemi_dev_fence();
        ushmemi_dev_amo_proxy(s, dest, pe, op, USHMEM_RING_AMO_UINT64, 8, value, 0, 0);
        return 1;
    }
    return 0;
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
    const struct ushmem_device_state *s = ushmemi_dev_state_fresh();

    ushmemi_dev_fence();
    if (s->ring != NULL) {
        struct ushmem_ring_producer target = {
            ushmemi_dev_quiet_target(s->ring, ushmemi_dev_ring_tail(s)), 0};
        ushmem_ring_quiet_on(s->ring, ushmemi_dev_ring_done(s), &target);
    }
}

/* Completes every put, get and atomic of a group's threads, all of which
 * call it: the group meets, one thread quiets (the fence is cumulative, so
 * it covers what the others did before they met, and the proxied requests
 * quiet waits for are every one handed out), and the group meets again.
 * One fence instead of one per thread. */
USHMEMI_DEV_SCOPED
USHMEM_DEVICE_FN void ushmemi_dev_quiet_group(ushmemi_dev_scope scope)
{
    ushmemi_dev_group_sync(scope);
    if (ushmemi_dev_group_rank(scope) == 0)
        ushmem_quiet();
    ushmemi_dev_group_sync(scope);
}

#if !USHMEMI_DEV_GROUPS
/* ushmem_quiet for the calling warp (all its lanes) or block. */
USHMEM_DEVICE_FN void ushmemx_quiet_warp(void)
{
    ushmemi_dev_quiet_group(USHMEMI_DEV_WARP);
}

USHMEM_DEVICE_FN void ushmemx_quiet_block(void)
{
    ushmemi_dev_quiet_group(USHMEMI_DEV_BLOCK);
}
#endif

/* Orders the calling thread's puts and atomics to each PE. When a PE takes
 * different roads for different classes, ordering across the roads needs the
 * proxied requests done, so fence is a quiet there. */
USHMEM_DEVICE_FN void ushmem_fence(void)
{
    const struct ushmem_device_state *s = ushmemi_dev_state_fresh();

    ushmemi_dev_fence();
    if (s->ring == NULL)
        return;
    if (s->mixed_roads) {
        ushmem_quiet();
        return;
    }
    /* Nothing outstanding from this thread: nothing to order. */
    if (ushmemi_dev_quiet_target(s->ring, ushmemi_dev_ring_tail(s)) >
        ushmem_ring_load_acquire(ushmem_ring_done_word(s->ring, ushmemi_dev_ring_done(s)))) {
        struct ushmem_ring_request req;
        struct ushmem_ring_producer scratch = {0, 0};

        ushmemi_dev_memzero(&req, sizeof(req));
        req.op = USHMEM_RING_OP_FENCE;
        req.pe = s->my_pe;
        ushmem_ring_submit_on(s->ring, ushmemi_dev_ring_tail(s), ushmemi_dev_ring_done(s),
                              ushmemi_dev_producer(&scratch), &req);
    }
}

/* ushmem_fence for a group's threads, all of which call it: one fence
 * between two meetings, as quiet_group. */
USHMEMI_DEV_SCOPED
USHMEM_DEVICE_FN void ushmemi_dev_fence_group(ushmemi_dev_scope scope)
{
    ushmemi_dev_group_sync(scope);
    if (ushmemi_dev_group_rank(scope) == 0)
        ushmem_fence();
    ushmemi_dev_group_sync(scope);
}

/* ---- Signals and waits ---- */

/* A put of 1 to 8 bytes and its signal (op SET or ADD on a 64-bit word),
 * both through the proxy to pe, as one request (ring.h, FLAG_SIGNAL): one
 * ticket and one request for the proxy where a put and an atomic took two.
 * Not waited for: the bytes travel in the ring, and quiet completes it.
 * -DUSHMEMI_SIGNAL_IN_PUT=0 (a measurement switch) sends the two requests
 * of before. */
#ifndef USHMEMI_SIGNAL_IN_PUT
#define USHMEMI_SIGNAL_IN_PUT 1
#endif
USHMEM_DEVICE_FN void ushmemi_dev_put_signal_in_ring(const struct ushmem_device_state *s,
                                                     void *dest, const void *source,
                                                     size_t nbytes, uint64_t *sig_addr,
                                                     uint64_t signal, unsigned op, int pe)
{
    struct ushmem_ring_request req;
    struct ushmem_ring_producer scratch = {0, 0};
    uint64_t word = 0;

    ushmemi_dev_memzero(&req, sizeof(req));
    ushmemi_dev_memcpy(&word, source, nbytes);
    req.op = USHMEM_RING_OP_PUT;
    req.flags = (uint8_t)(USHMEM_RING_FLAG_INLINE | USHMEM_RING_FLAG_SIGNAL);
    req.amo_op = (uint8_t)op;
    req.amo_type = USHMEM_RING_AMO_UINT64;
    req.pe = pe;
    req.offset = ushmemi_dev_offset(s, dest);
    req.local = word;
    req.value = nbytes;
    req.compare = signal;
    req.reserved = ushmemi_dev_offset(s, sig_addr);
    ushmem_ring_submit_on(s->ring, ushmemi_dev_ring_tail(s), ushmemi_dev_ring_done(s),
                          ushmemi_dev_producer(&scratch), &req);
}

/* A put and a signal by the threads of `scope`: the signal is issued once
 * the data is complete at the target, on either road, so it never overtakes
 * the data. Non-blocking forms behave as the blocking ones. Through the
 * proxy the signal follows the put in the ring without waiting for it: the
 * proxy completes a blocking put before anything after it can be seen (on
 * the copy engine both are queued on one device, in order; a fabric put is
 * complete at the target before the next request is taken), and the wait
 * for the put, which frees the source, comes after the signal. Up to 8
 * bytes (a signal's usual payload) travel in the ring itself: a store for
 * the proxy, and no source to wait for; with the signal in the same
 * request where the signal goes through the proxy too (the proxy reaches a
 * PE through one transport, whatever the class). */
USHMEMI_DEV_SCOPED
USHMEM_DEVICE_FN void ushmemi_dev_put_signal(void *dest, const void *source, size_t nbytes,
                                             uint64_t *sig_addr, uint64_t signal, int sig_op,
                                             int pe, ushmemi_dev_scope scope)
{
    const struct ushmem_device_state *s = ushmemi_dev_state_fresh();
    unsigned rank = ushmemi_dev_call_rank(scope);
    unsigned op = sig_op == USHMEM_SIGNAL_ADD ? USHMEM_RING_AMO_ADD : USHMEM_RING_AMO_SET;
    void *mapped;

    pe = ushmemi_dev_call_pe(pe);
    mapped = ushmemi_dev_mapped(s, dest, pe, USHMEM_DEVICE_CLASS_RMA);
    int direct = mapped != NULL;
    int proxied_put = 0, signalled = 0;
    uint64_t put_ticket = 0;

    ushmemi_dev_group_sync(scope);
    if (direct) {
        unsigned size = ushmemi_dev_group_size(scope);
        /* A lone thread's aligned 8 bytes, a signal's usual payload: one
         * store, without the copy's choice of word (0.055 us of a ping-pong's
         * half round trip on two H200s). Only here: the same test inside
         * the copy cost a block's put of 32 KiB 7 %. */
        if (size == 1 && nbytes == 8 && (((uintptr_t)mapped | (uintptr_t)source) & 7) == 0)
            ushmemi_dev_copy_word64(mapped, source);
        else
            ushmemi_dev_copy_group(mapped, source, nbytes, rank, size);
    } else if (USHMEMI_SIGNAL_IN_PUT && rank == 0 && nbytes > 0 && nbytes <= 8 &&
               ushmemi_dev_mapped(s, sig_addr, pe, USHMEM_DEVICE_CLASS_SIGNAL) == NULL) {
        ushmemi_dev_put_signal_in_ring(s, dest, source, nbytes, sig_addr, signal, op, pe);
        signalled = 1;
    } else if (rank == 0 && nbytes > 0 && nbytes <= 8) {
        ushmemi_dev_submit_in_ring(s, USHMEM_RING_OP_PUT, pe, dest, (char *)source, nbytes, 0);
    } else if (rank == 0 && nbytes > 0) {
        put_ticket = ushmemi_dev_submit(s, USHMEM_RING_OP_PUT, pe, dest,
                                        (uint64_t)(uintptr_t)source, nbytes, 0);
        proxied_put = 1;
    }
    ushmemi_dev_group_sync(scope);
    if (rank == 0) {
        if (direct) {
            /* The group met after its stores, so the signal's release orders
             * all of them before it. */
            ushmemi_dev_signal_on(s, sig_addr, pe, USHMEM_DEVICE_CLASS_SIGNAL, op, signal, 1);
        } else if (!signalled) {
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

#if !USHMEMI_DEV_GROUPS
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
#endif

/* A signal without data: sets or adds to the signal word of PE pe, on the
 * road of the SIGNAL class, ordered after nothing (fence first for that). */
USHMEM_DEVICE_FN void ushmemx_signal_set(uint64_t *sig_addr, uint64_t signal, int pe)
{
    ushmemi_dev_amo(sig_addr, pe, USHMEM_DEVICE_CLASS_SIGNAL, USHMEM_RING_AMO_SET,
                    USHMEM_RING_AMO_UINT64, 8, signal, 0, 0);
}

USHMEM_DEVICE_FN void ushmemx_signal_add(uint64_t *sig_addr, uint64_t signal, int pe)
{
    ushmemi_dev_amo(sig_addr, pe, USHMEM_DEVICE_CLASS_SIGNAL, USHMEM_RING_AMO_ADD,
                    USHMEM_RING_AMO_UINT64, 8, signal, 0, 0);
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

/* Through the proxy a barrier does not wait for its own signals on the way
 * out: they only have to arrive, which the peers' waits see, and every
 * later signal of this PE follows them (the ring is one queue, carried out
 * in order: stores queued behind each other, atomics the proxy waits for).
 * The word after the epoch, the mark, then says where they are: the
 * ticket count after them, shifted left by 8, and how many they were,
 * where nothing else took a ticket between the barrier's first signal and
 * its last (0 otherwise). The next barrier's quiet, finding no ticket taken
 * since, waits only for the tickets before them, so that in a loop of
 * barriers a signal's completion is waited for nowhere. During a barrier
 * the mark holds the ticket count before its signals and counts them, in
 * memory rather than registers: a loop of collectives must stay within 64.
 * A measurement switch, USHMEMI_DEV_BARRIER_WAITS_OWN=1, takes the earlier
 * form, which completed the signals before returning (a quiet). */
#ifndef USHMEMI_DEV_BARRIER_WAITS_OWN
#define USHMEMI_DEV_BARRIER_WAITS_OWN 0
#endif
USHMEM_DEVICE_FN uint64_t *ushmemi_dev_barrier_mark(const struct ushmem_device_state *s)
{
    return (uint64_t *)(uintptr_t)(s->heap_base + s->device_epoch_offset) + 1;
}

/* A barrier's first step: `complete` completes the calling thread's
 * operations (barrier), otherwise they are only ordered before its signals
 * (sync). With every PE on the direct road, a release fence (the relaxed
 * signals after it form release patterns), one for all the signals;
 * through the proxy a fence, which completes the direct stores before a
 * request leaves, and for a barrier the wait for every ticket taken but the
 * last barrier's own signals. */
USHMEM_DEVICE_FN void ushmemi_dev_barrier_enter(const struct ushmem_device_state *s, int complete)
{
    if (s->ring == NULL) {
        if (complete)
            ushmemi_dev_fence();
        else
            ushmemi_dev_release_fence();
        return;
    }
    ushmemi_dev_fence();
    uint64_t *mark_p = ushmemi_dev_barrier_mark(s), mark = ushmemi_dev_own_load64(mark_p);
    struct ushmem_ring_producer target = {
        ushmemi_dev_quiet_target(s->ring, ushmemi_dev_ring_tail(s)), 0};

    ushmemi_dev_own_store64(mark_p, target.issued << 8);
    if (complete) {
        if (!USHMEMI_DEV_BARRIER_WAITS_OWN && mark >> 8 == target.issued)
            target.issued -= mark & 0xff;
        ushmem_ring_quiet_on(s->ring, ushmemi_dev_ring_done(s), &target);
    }
}

/* A barrier's signal that took a ticket (`proxied`), counted in the mark. */
USHMEM_DEVICE_FN void ushmemi_dev_barrier_count(const struct ushmem_device_state *s, int proxied)
{
    if (proxied) {
        uint64_t *mark_p = ushmemi_dev_barrier_mark(s);
        ushmemi_dev_own_store64(mark_p, ushmemi_dev_own_load64(mark_p) + 1);
    }
}

/* A barrier's last step through the proxy: the mark, where its signals
 * were the only tickets taken since it began. */
USHMEM_DEVICE_FN void ushmemi_dev_barrier_leave(const struct ushmem_device_state *s)
{
    if (s->ring == NULL)
        return;
    if (USHMEMI_DEV_BARRIER_WAITS_OWN) {
        ushmem_quiet();
        return;
    }
    uint64_t *mark_p = ushmemi_dev_barrier_mark(s), mark = ushmemi_dev_own_load64(mark_p);
    uint64_t after = ushmemi_dev_quiet_target(s->ring, ushmemi_dev_ring_tail(s));
    ushmemi_dev_own_store64(mark_p, after - (mark >> 8) == (mark & 0xff) ? after << 8 | (mark & 0xff)
                                                                          : 0);
}

/* The device barrier, over the device flags in every PE's reserved heap
 * area and an epoch (this PE's count of device barriers). Up to
 * USHMEMI_DEV_FLAT_BARRIER_PES PEs, one round: this PE sets its flag (flag
 * number my_pe) on every other PE to the epoch, a store rather than an add
 * (through the proxy, a stream store rather than an atomic kernel), and
 * waits until every other PE's flag here has reached the epoch; a flag has
 * one writer, whose epochs only grow. Beyond, dissemination: in round k
 * this PE adds one to flag k of PE me + 2^k and waits until its own flag k
 * has reached the epoch, so each flag receives the same number of signals
 * in every barrier. Either way the flags never need resetting; the flags
 * and epoch are the device barrier's own. Signals go the SYNC class's road.
 * `complete` first completes the calling thread's operations (barrier_all)
 * or only orders them (sync_all). */
USHMEM_DEVICE_FN void ushmemi_dev_barrier(int complete)
{
    const struct ushmem_device_state *s = ushmemi_dev_state_fresh();
    uint64_t *epoch_p = (uint64_t *)(uintptr_t)(s->heap_base + s->device_epoch_offset);
    /* The next caller may be a thread of another block, on another SM with
     * its own cache, but the program orders the calls (one thread at a time
     * calls the barrier), so GPU scope is enough: no peer reads it. */
    uint64_t epoch = ushmemi_dev_own_load64(epoch_p) + 1;
    uint64_t *flags = (uint64_t *)(uintptr_t)(s->heap_base + s->device_flags_offset);
    unsigned k = 0;

    ushmemi_dev_barrier_enter(s, complete);
    if (s->n_pes <= USHMEMI_DEV_FLAT_BARRIER_PES) {
        unsigned spins = 0;
        /* Every signal carries nothing learnt since the fence or quiet
         * above, so after one it is a relaxed store. */
        for (int dist = 1; dist < s->n_pes; dist++)
            ushmemi_dev_barrier_count(
                s, ushmemi_dev_signal_on(s, &flags[s->my_pe], (s->my_pe + dist) % s->n_pes,
                                         USHMEM_DEVICE_CLASS_SYNC, USHMEM_RING_AMO_SET, epoch, 0));
        for (int pe = 0; pe < s->n_pes; pe++)
            while (pe != s->my_pe && ushmemi_dev_load64(&flags[pe]) < epoch)
                ushmem_ring_backoff(&spins);
    }
    for (int64_t dist = 1; s->n_pes > USHMEMI_DEV_FLAT_BARRIER_PES && dist < s->n_pes &&
                           k < s->device_flags_count;
         dist *= 2, k++) {
        unsigned spins = 0;

        /* The first signal follows the fence or quiet above; a later one
         * must carry what this PE learnt in the rounds before (release). */
        ushmemi_dev_barrier_count(
            s, ushmemi_dev_signal_on(s, &flags[k], (int)((s->my_pe + dist) % s->n_pes),
                                     USHMEM_DEVICE_CLASS_SYNC, USHMEM_RING_AMO_ADD, 1, k > 0));
        while (ushmemi_dev_load64(&flags[k]) < epoch)
            ushmem_ring_backoff(&spins);
    }
    ushmemi_dev_own_store64(epoch_p, epoch);
    ushmemi_dev_barrier_leave(s);
}

/* Completes the calling thread's operations and waits for every PE. Where
 * USHMEMI_DEV_HOST_IS_HOST_API is 1 (a SYCL program's host code beside GPU
 * kernels, detail/device_sycl.h), host code's call is the host API's. */
USHMEM_DEVICE_FN void ushmem_barrier_all(void)
{
#if defined(USHMEMI_DEV_HOST_IS_HOST_API)
    shmem_barrier_all();
#else
    ushmemi_dev_barrier(1);
#endif
}

/* Waits for every PE; the caller's stores are ordered before, not completed. */
USHMEM_DEVICE_FN void ushmem_sync_all(void)
{
#if defined(USHMEMI_DEV_HOST_IS_HOST_API)
    shmem_sync_all();
#else
    ushmemi_dev_barrier(0);
#endif
}

/* ---- Teams ----
 * Device code names a team by its id (shmemx_team_id on the host: 0 the
 * world, 1 shared, 2 node, USHMEMX_TEAM_ID_SPLIT and up the split ones)
 * and finds it in the table the host writes when a team is made or
 * destroyed (device_state.h). A team is the world PEs start + i * stride. */

/* The team with id `team` on this PE, or NULL where there is none. */
USHMEM_DEVICE_FN const struct ushmem_device_team *
ushmemi_dev_team(const struct ushmem_device_state *s, int team)
{
    const struct ushmem_device_team *t;

    if (team < 0 || team >= USHMEM_DEVICE_TEAMS || s->teams_offset == 0)
        return NULL;
    t = (const struct ushmem_device_team *)(uintptr_t)(s->heap_base + s->teams_offset) + team;
    return t->size > 0 ? t : NULL;
}

/* The world PE of member i. */
USHMEM_DEVICE_FN int ushmemi_dev_team_pe(const struct ushmem_device_team *t, int i)
{
    return t->start + i * t->stride;
}

/* The index of world PE pe in t, or -1 when it is not a member. */
USHMEM_DEVICE_FN int ushmemi_dev_team_index(const struct ushmem_device_team *t, int pe)
{
    int offset = pe - t->start, index;

    if (t->size == 1 || t->stride == 0)
        return offset == 0 ? 0 : -1;
    /* A negative stride: the members in reverse. One division, no
     * remainder: a compiler that pairs them emits an instruction (LLVM's
     * freeze) that the SPIR-V translator of OpenCL C does not take. */
    index = offset / t->stride;
    return index * t->stride == offset && index >= 0 && index < t->size ? index : -1;
}

/* This PE's number in the team, its size, and member src_pe of src_team's
 * number in dest_team: -1 for a team id that is not a team of this PE, or
 * a PE that is not a member, as the host's calls. */
USHMEM_DEVICE_FN int ushmem_team_my_pe(int team)
{
    const struct ushmem_device_team *t;

    if (team == 0) /* the world's, without a load from the table */
        return ushmem_my_pe();
    t = ushmemi_dev_team(ushmemi_dev_state(), team);
    return t != NULL ? t->my_index : -1;
}

USHMEM_DEVICE_FN int ushmem_team_n_pes(int team)
{
    const struct ushmem_device_team *t;

    if (team == 0)
        return ushmem_n_pes();
    t = ushmemi_dev_team(ushmemi_dev_state(), team);
    return t != NULL ? t->size : -1;
}

USHMEM_DEVICE_FN int ushmem_team_translate_pe(int src_team, int src_pe, int dest_team)
{
    const struct ushmem_device_state *s = ushmemi_dev_state();
    const struct ushmem_device_team *src = ushmemi_dev_team(s, src_team);
    const struct ushmem_device_team *dst = ushmemi_dev_team(s, dest_team);

    if (src == NULL || dst == NULL || src_pe < 0 || src_pe >= src->size)
        return -1;
    return ushmemi_dev_team_index(dst, ushmemi_dev_team_pe(src, src_pe));
}

/* One team-barrier signal from this PE to world PE `to`, carrying this
 * pair's count of such signals; `release`: it must carry what this PE
 * learnt before (a dissemination round after the first). */
USHMEM_DEVICE_FN int ushmemi_dev_team_signal(const struct ushmem_device_state *s, int to,
                                             int release)
{
    uint64_t *flags = (uint64_t *)(uintptr_t)(s->heap_base + s->team_sync_offset);
    uint64_t *sent = flags + s->n_pes;
    uint64_t count = ushmemi_dev_own_load64(&sent[to]) + 1;

    ushmemi_dev_own_store64(&sent[to], count);
    return ushmemi_dev_signal_on(s, &flags[s->my_pe], to, USHMEM_DEVICE_CLASS_SYNC,
                                 USHMEM_RING_AMO_SET, count, release);
}

/* Waits for the next team-barrier signal from world PE `from`. */
USHMEM_DEVICE_FN void ushmemi_dev_team_wait(const struct ushmem_device_state *s, int from)
{
    uint64_t *flags = (uint64_t *)(uintptr_t)(s->heap_base + s->team_sync_offset);
    uint64_t *recv = flags + 2 * (size_t)s->n_pes;
    uint64_t count = ushmemi_dev_own_load64(&recv[from]) + 1;
    unsigned spins = 0;

    while (ushmemi_dev_load64(&flags[from]) < count)
        ushmem_ring_backoff(&spins);
    ushmemi_dev_own_store64(&recv[from], count);
}

/* The barrier of a team other than the world, with the world barrier's
 * rounds (one flat round up to USHMEMI_DEV_FLAT_BARRIER_PES members,
 * dissemination beyond) over the team barriers' words: flag s on PE r
 * holds the count of team-barrier signals PE s has sent r, whatever the
 * team, and each side counts the pair's signals it sent and received.
 * Every pair of PEs meets in the same barriers in the same order (the
 * rule of every collective), so the counts agree without a word per
 * team, and a team's id may differ between its members. One thread per
 * PE at a time, as the world's. */
USHMEM_DEVICE_FN void ushmemi_dev_team_barrier(const struct ushmem_device_team *t, int complete)
{
    const struct ushmem_device_state *s = ushmemi_dev_state_fresh();
    const int n = t->size, me = t->my_index, flat = n <= USHMEMI_DEV_FLAT_BARRIER_PES;

    ushmemi_dev_barrier_enter(s, complete);
    /* The world barrier's shape: the flat round in a branch, its waits in
     * member order, the rounds' loop with the test in its condition (other
     * shapes gave SPIR-V blocks out of order in OpenCL C). */
    if (flat) {
        for (int dist = 1; dist < n; dist++)
            ushmemi_dev_barrier_count(
                s, ushmemi_dev_team_signal(s, ushmemi_dev_team_pe(t, (me + dist) % n), 0));
        for (int i = 0; i < n; i++)
            if (i != me)
                ushmemi_dev_team_wait(s, ushmemi_dev_team_pe(t, i));
    }
    for (int dist = 1; !flat && dist < n; dist *= 2) {
        ushmemi_dev_barrier_count(
            s, ushmemi_dev_team_signal(s, ushmemi_dev_team_pe(t, (me + dist) % n), dist > 1));
        ushmemi_dev_team_wait(s, ushmemi_dev_team_pe(t, (me + n - dist) % n));
    }
    ushmemi_dev_barrier_leave(s);
}

/* Team barriers: ushmem_team_sync orders the calling thread's stores
 * before every member's later reads, as shmem_team_sync; they return -1,
 * doing nothing, for an id that is not a team of this PE. The world (id 0)
 * takes the world's barrier. */
USHMEM_DEVICE_FN int ushmemi_dev_team_sync(int team, int complete)
{
    const struct ushmem_device_team *t = ushmemi_dev_team(ushmemi_dev_state_fresh(), team);

    if (t == NULL)
        return -1;
    if (team == 0)
        ushmemi_dev_barrier(complete);
    else
        ushmemi_dev_team_barrier(t, complete);
    return 0;
}

USHMEM_DEVICE_FN int ushmem_team_sync(int team)
{
    return ushmemi_dev_team_sync(team, 0);
}

/* ushmem_team_sync with the calling thread's operations completed first. */
USHMEM_DEVICE_FN int ushmemx_team_barrier(int team)
{
    return ushmemi_dev_team_sync(team, 1);
}

/* The end of a group collective: every thread's puts are complete and
 * every PE has done its part; the group's barrier_all (complete) and
 * sync_all (the stores ordered only). The group meets first, and the one
 * thread that then enters the barrier fences or quiets for all: the fence
 * is cumulative (it covers the writes the meeting showed that thread), and
 * quiet waits for every proxied request handed out, as quiet_group. A fence
 * in every thread before the meeting cost a block of 1024 threads 1024
 * system fences per call (NVSHMEM's shmem sync_latency, block scope). */
USHMEMI_DEV_SCOPED
USHMEM_DEVICE_FN void ushmemi_dev_group_team_barrier(ushmemi_dev_scope scope,
                                                     const struct ushmem_device_team *t,
                                                     int complete)
{
    ushmemi_dev_group_sync(scope);
    if (ushmemi_dev_group_rank(scope) == 0) {
        if (t == NULL)
            ushmemi_dev_barrier(complete);
        else
            ushmemi_dev_team_barrier(t, complete);
    }
    ushmemi_dev_group_sync(scope);
}

/* The world's (team NULL). */
USHMEMI_DEV_SCOPED
USHMEM_DEVICE_FN void ushmemi_dev_group_barrier(ushmemi_dev_scope scope, int complete)
{
    ushmemi_dev_group_team_barrier(scope, NULL, complete);
}

/* The members of team t (NULL: the world) as the collectives walk them:
 * their number, this PE's index, and world PE of member i. Inlined where t
 * is NULL, the world's numbers are the state's and fold away. */
USHMEM_DEVICE_FN int ushmemi_dev_members(const struct ushmem_device_state *s,
                                         const struct ushmem_device_team *t)
{
    return t != NULL ? t->size : s->n_pes;
}

USHMEM_DEVICE_FN int ushmemi_dev_member_me(const struct ushmem_device_state *s,
                                           const struct ushmem_device_team *t)
{
    return t != NULL ? t->my_index : s->my_pe;
}

USHMEM_DEVICE_FN int ushmemi_dev_member_pe(const struct ushmem_device_team *t, int i)
{
    return t != NULL ? ushmemi_dev_team_pe(t, i) : i;
}

/* dest[i * nbytes ...] on every member receives src of member i's group
 * for this member, that is src[me * nbytes ...] of member i, on team t
 * (NULL: the world). Members are taken from the next one on, so that they
 * do not all write to one PE at once. */
USHMEMI_DEV_SCOPED
USHMEM_DEVICE_FN void ushmemi_dev_alltoall_on(const struct ushmem_device_team *t, void *dest,
                                              const void *src, size_t nbytes,
                                              ushmemi_dev_scope scope)
{
    const struct ushmem_device_state *s = ushmemi_dev_state_fresh();

    /* The state's fields read where they are used, as the world's code
     * always did (the same instructions for the world). */
    for (int i = 0; i < ushmemi_dev_members(s, t); i++) {
        int to = (ushmemi_dev_member_me(s, t) + 1 + i) % ushmemi_dev_members(s, t);
        ushmemi_dev_put_on(s, (char *)dest + (size_t)ushmemi_dev_member_me(s, t) * nbytes,
                           (const char *)src + (size_t)to * nbytes, nbytes,
                           ushmemi_dev_member_pe(t, to), 1, scope);
    }
    ushmemi_dev_group_team_barrier(scope, t, 1);
}

/* dest on every member, root included, receives src of member root. */
USHMEMI_DEV_SCOPED
USHMEM_DEVICE_FN void ushmemi_dev_broadcast_on(const struct ushmem_device_team *t, void *dest,
                                               const void *src, size_t nbytes, int root,
                                               ushmemi_dev_scope scope)
{
    const struct ushmem_device_state *s = ushmemi_dev_state_fresh();

    if (ushmemi_dev_member_me(s, t) == root) {
        for (int i = 0; i < ushmemi_dev_members(s, t); i++)
            ushmemi_dev_put_on(s, dest, src, nbytes,
                               ushmemi_dev_member_pe(t, (root + 1 + i) % ushmemi_dev_members(s, t)),
                               1, scope);
    }
    ushmemi_dev_group_team_barrier(scope, t, 1);
}

/* dest[i * nbytes ...] on every member receives src of member i. */
USHMEMI_DEV_SCOPED
USHMEM_DEVICE_FN void ushmemi_dev_fcollect_on(const struct ushmem_device_team *t, void *dest,
                                              const void *src, size_t nbytes,
                                              ushmemi_dev_scope scope)
{
    const struct ushmem_device_state *s = ushmemi_dev_state_fresh();

    for (int i = 0; i < ushmemi_dev_members(s, t); i++)
        ushmemi_dev_put_on(s, (char *)dest + (size_t)ushmemi_dev_member_me(s, t) * nbytes, src,
                           nbytes,
                           ushmemi_dev_member_pe(t, (ushmemi_dev_member_me(s, t) + 1 + i) %
                                                        ushmemi_dev_members(s, t)),
                           1, scope);
    ushmemi_dev_group_team_barrier(scope, t, 1);
}

/* The world's. */
USHMEMI_DEV_SCOPED
USHMEM_DEVICE_FN void ushmemi_dev_alltoall(void *dest, const void *src, size_t nbytes,
                                           ushmemi_dev_scope scope)
{
    ushmemi_dev_alltoall_on(NULL, dest, src, nbytes, scope);
}

USHMEMI_DEV_SCOPED
USHMEM_DEVICE_FN void ushmemi_dev_broadcast(void *dest, const void *src, size_t nbytes, int root,
                                            ushmemi_dev_scope scope)
{
    ushmemi_dev_broadcast_on(NULL, dest, src, nbytes, root, scope);
}

USHMEMI_DEV_SCOPED
USHMEM_DEVICE_FN void ushmemi_dev_fcollect(void *dest, const void *src, size_t nbytes,
                                           ushmemi_dev_scope scope)
{
    ushmemi_dev_fcollect_on(NULL, dest, src, nbytes, scope);
}

/* A team's collective: the team of id `team`, NULL for the world (id 0),
 * and 0; -1 for an id that is not a team of this PE, or a root that is not
 * a member (every member then returns -1 without meeting). */
USHMEM_DEVICE_FN int ushmemi_dev_coll_team(int team, int root,
                                           const struct ushmem_device_team **t_p)
{
    const struct ushmem_device_team *t = ushmemi_dev_team(ushmemi_dev_state_fresh(), team);

    *t_p = team == 0 ? NULL : t;
    return t != NULL && root >= 0 && root < t->size ? 0 : -1;
}

/* The same collectives by one thread per PE (Intel SHMEM's base device
 * collectives); they return 0, as Intel SHMEM's do on success. */
USHMEM_DEVICE_FN int ushmem_alltoallmem(void *dest, const void *src, size_t nbytes)
{
    ushmemi_dev_alltoall(dest, src, nbytes, USHMEMI_DEV_THREAD);
    return 0;
}

USHMEM_DEVICE_FN int ushmem_broadcastmem(void *dest, const void *src, size_t nbytes, int root)
{
    ushmemi_dev_broadcast(dest, src, nbytes, root, USHMEMI_DEV_THREAD);
    return 0;
}

USHMEM_DEVICE_FN int ushmem_fcollectmem(void *dest, const void *src, size_t nbytes)
{
    ushmemi_dev_fcollect(dest, src, nbytes, USHMEMI_DEV_THREAD);
    return 0;
}

#if !USHMEMI_DEV_GROUPS
/* The block collectives: one block per PE, every thread of it calling. */
USHMEM_DEVICE_FN void ushmemx_alltoallmem_block(void *dest, const void *src, size_t nbytes)
{
    ushmemi_dev_alltoall(dest, src, nbytes, USHMEMI_DEV_BLOCK);
}

USHMEM_DEVICE_FN void ushmemx_broadcastmem_block(void *dest, const void *src, size_t nbytes,
                                                 int root)
{
    ushmemi_dev_broadcast(dest, src, nbytes, root, USHMEMI_DEV_BLOCK);
}

USHMEM_DEVICE_FN void ushmemx_fcollectmem_block(void *dest, const void *src, size_t nbytes)
{
    ushmemi_dev_fcollect(dest, src, nbytes, USHMEMI_DEV_BLOCK);
}

USHMEM_DEVICE_FN int ushmemx_team_sync_block(int team)
{
    const struct ushmem_device_team *t;

    if (ushmemi_dev_coll_team(team, 0, &t) != 0)
        return -1;
    ushmemi_dev_group_team_barrier(USHMEMI_DEV_BLOCK, t, 0);
    return 0;
}
#endif

/* The collectives on a team (ids as ushmem_team_my_pe's), by one thread per
 * member or (_block) one block per member; a root is the member's number
 * in the team. They return 0, or -1 without doing anything for an id that
 * is not a team of this PE or a root outside the team. */
#define USHMEMI_DEV_TEAM_COLLS(SUFFIX, SCOPE)                                            \
    USHMEM_DEVICE_FN int ushmemx_team_alltoallmem##SUFFIX(int team, void *dest,           \
                                                          const void *src, size_t nbytes) \
    {                                                                                    \
        const struct ushmem_device_team *t;                                              \
        if (ushmemi_dev_coll_team(team, 0, &t) != 0)                                     \
            return -1;                                                                   \
        ushmemi_dev_alltoall_on(t, dest, src, nbytes, SCOPE);                            \
        return 0;                                                                        \
    }                                                                                    \
    USHMEM_DEVICE_FN int ushmemx_team_broadcastmem##SUFFIX(                              \
        int team, void *dest, const void *src, size_t nbytes, int root)                  \
    {                                                                                    \
        const struct ushmem_device_team *t;                                              \
        if (ushmemi_dev_coll_team(team, root, &t) != 0)                                  \
            return -1;                                                                   \
        ushmemi_dev_broadcast_on(t, dest, src, nbytes, root, SCOPE);                     \
        return 0;                                                                        \
    }                                                                                    \
    USHMEM_DEVICE_FN int ushmemx_team_fcollectmem##SUFFIX(int team, void *dest,           \
                                                          const void *src, size_t nbytes) \
    {                                                                                    \
        const struct ushmem_device_team *t;                                              \
        if (ushmemi_dev_coll_team(team, 0, &t) != 0)                                     \
            return -1;                                                                   \
        ushmemi_dev_fcollect_on(t, dest, src, nbytes, SCOPE);                            \
        return 0;                                                                        \
    }
USHMEMI_DEV_TEAM_COLLS(, USHMEMI_DEV_THREAD)
#if !USHMEMI_DEV_GROUPS
USHMEMI_DEV_TEAM_COLLS(_block, USHMEMI_DEV_BLOCK)
#endif
#undef USHMEMI_DEV_TEAM_COLLS

#if defined(SYCL_LANGUAGE_VERSION)
/* ---- SYCL: the device for this PE's queue (host code, after shmem_init) ----
 * On NVIDIA GPUs (acpp's cuda target) the GPU that shmem_init gave this PE,
 * whose heap its kernels reach (a default sycl::queue takes the first GPU
 * in every PE); elsewhere the default selector's device. Intel SHMEM's
 * launcher hides the other GPUs instead; ushmem cannot, since each PE maps
 * its peers' heaps on their GPUs. */
static inline sycl::device ushmemx_sycl_device(void)
{
    return ushmemi_sycl_pe_device();
}

/* ---- SYCL: the calls of a work-group or sub-group ----
 * Intel SHMEM's names and argument order: `group` is the kernel's
 * sycl::group<D> (nd_item::get_group()) or sycl::sub_group
 * (nd_item::get_sub_group()), last, and every work-item of it calls with the
 * same arguments, in converged control flow. The work-items share the copy
 * on the direct road; through the proxy one of them submits. As for CUDA's
 * blocks, the collectives are called by one group per PE on every PE. */
template <typename Group>
static inline void ushmemx_putmem_work_group(void *dest, const void *src, size_t nbytes, int pe,
                                             const Group &group)
{
    ushmemi_dev_put(dest, src, nbytes, pe, 0, group);
}
template <typename Group>
static inline void ushmemx_getmem_work_group(void *dest, const void *src, size_t nbytes, int pe,
                                             const Group &group)
{
    ushmemi_dev_get(dest, src, nbytes, pe, 0, group);
}
template <typename Group>
static inline void ushmemx_putmem_nbi_work_group(void *dest, const void *src, size_t nbytes,
                                                 int pe, const Group &group)
{
    ushmemi_dev_put(dest, src, nbytes, pe, 1, group);
}
template <typename Group>
static inline void ushmemx_getmem_nbi_work_group(void *dest, const void *src, size_t nbytes,
                                                 int pe, const Group &group)
{
    ushmemi_dev_get(dest, src, nbytes, pe, 1, group);
}
/* The typed forms: ushmemx_int_put_work_group(dest, src, nelems, pe, group). */
#define USHMEMI_DEV_RMA_GROUP(T, NAME)                                                 \
    template <typename Group>                                                          \
    static inline void ushmemx_##NAME##_put_work_group(T *dest, const T *src, size_t nelems, \
                                                       int pe, const Group &group)     \
    {                                                                                  \
        ushmemi_dev_put(dest, src, nelems * sizeof(T), pe, 0, group);                  \
    }                                                                                  \
    template <typename Group>                                                          \
    static inline void ushmemx_##NAME##_get_work_group(T *dest, const T *src, size_t nelems, \
                                                       int pe, const Group &group)     \
    {                                                                                  \
        ushmemi_dev_get(dest, src, nelems * sizeof(T), pe, 0, group);                  \
    }                                                                                  \
    template <typename Group>                                                          \
    static inline void ushmemx_##NAME##_put_nbi_work_group(T *dest, const T *src,       \
                                                           size_t nelems, int pe,      \
                                                           const Group &group)         \
    {                                                                                  \
        ushmemi_dev_put(dest, src, nelems * sizeof(T), pe, 1, group);                  \
    }                                                                                  \
    template <typename Group>                                                          \
    static inline void ushmemx_##NAME##_get_nbi_work_group(T *dest, const T *src,       \
                                                           size_t nelems, int pe,      \
                                                           const Group &group)         \
    {                                                                                  \
        ushmemi_dev_get(dest, src, nelems * sizeof(T), pe, 1, group);                  \
    }
USHMEM_DEVICE_RMA_TYPES(USHMEMI_DEV_RMA_GROUP)
#undef USHMEMI_DEV_RMA_GROUP

template <typename Group>
static inline void ushmemx_putmem_signal_work_group(void *dest, const void *source, size_t nbytes,
                                                    uint64_t *sig_addr, uint64_t signal,
                                                    int sig_op, int pe, const Group &group)
{
    ushmemi_dev_put_signal(dest, source, nbytes, sig_addr, signal, sig_op, pe, group);
}
template <typename Group>
static inline void ushmemx_putmem_signal_nbi_work_group(void *dest, const void *source,
                                                        size_t nbytes, uint64_t *sig_addr,
                                                        uint64_t signal, int sig_op, int pe,
                                                        const Group &group)
{
    ushmemi_dev_put_signal(dest, source, nbytes, sig_addr, signal, sig_op, pe, group);
}
/* ushmem_quiet for the group's work-items: one fence instead of one each. */
template <typename Group>
static inline void ushmemx_quiet_work_group(const Group &group)
{
    ushmemi_dev_quiet_group(group);
}
template <typename Group>
static inline void ushmemx_fence_work_group(const Group &group)
{
    ushmemi_dev_fence_group(group);
}
/* The waits of a group: every work-item returns once the word satisfies the
 * comparison, signal_wait_until with the value its group's leader saw. */
template <typename Group>
static inline uint64_t ushmemx_signal_wait_until_work_group(uint64_t *sig_addr, int cmp,
                                                           uint64_t value, const Group &group)
{
    uint64_t seen = 0;
    if (group.leader())
        seen = ushmem_signal_wait_until(sig_addr, cmp, value);
    return sycl::group_broadcast(group, seen);
}
#define USHMEMI_DEV_WAIT_GROUP(T, NAME, KIND)                                          \
    template <typename Group>                                                          \
    static inline void ushmemx_##NAME##_wait_until_work_group(T *ivar, int cmp, T value, \
                                                              const Group &group)      \
    {                                                                                  \
        if (group.leader())                                                            \
            ushmem_##NAME##_wait_until(ivar, cmp, value);                              \
        sycl::group_barrier(group);                                                    \
    }
USHMEM_DEVICE_AMO_STD_TYPES(USHMEMI_DEV_WAIT_GROUP)
#undef USHMEMI_DEV_WAIT_GROUP
template <typename Group>
static inline void ushmemx_barrier_all_work_group(const Group &group)
{
    ushmemi_dev_group_barrier(group, 1);
}
template <typename Group>
static inline void ushmemx_sync_all_work_group(const Group &group)
{
    ushmemi_dev_group_barrier(group, 0);
}
template <typename Group>
static inline void ushmemx_alltoallmem_work_group(void *dest, const void *src, size_t nbytes,
                                                  const Group &group)
{
    ushmemi_dev_alltoall(dest, src, nbytes, group);
}
template <typename Group>
static inline void ushmemx_broadcastmem_work_group(void *dest, const void *src, size_t nbytes,
                                                   int root, const Group &group)
{
    ushmemi_dev_broadcast(dest, src, nbytes, root, group);
}
template <typename Group>
static inline void ushmemx_fcollectmem_work_group(void *dest, const void *src, size_t nbytes,
                                                  const Group &group)
{
    ushmemi_dev_fcollect(dest, src, nbytes, group);
}
#endif

#if defined(__OPENCL_C_VERSION__)
#pragma pop_macro("local")
#endif
#endif
