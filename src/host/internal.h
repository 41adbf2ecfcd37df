/* Host layer state shared by the public API entry points. */
#ifndef USHMEMI_HOST_INTERNAL_H
#define USHMEMI_HOST_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../common/log.h"
#include "../common/status.h"
#include "../common/vars.h"
#include "../device/device.h"
#include "../transport/ops.h"
#include "../transport/transport.h"
#include "bootstrap.h"

#define USHMEMI_API __attribute__((visibility("default")))

/* For the macros that define a routine beside its context form: the
 * context parameter as a macro called inside the parameter list, so that
 * it passes through nested macros without its comma splitting them. */
#define USHMEMI_CTX_PARAM() shmem_ctx_t ctx,
#define USHMEMI_NO_PARAM()

/* Reserved at the start of every heap for the runtime's own symmetric data
 * (barrier counters, collective scratch). User allocations come after it
 * and after the blocks that shmem_init allocates (see user_base). */
#define USHMEMI_SYNC_WORDS 64            /* 64-bit flags for barriers */
#define USHMEMI_SCRATCH_SIZE (64 * 1024) /* collective scratch per PE */
#define USHMEMI_STREAM_PES 1024           /* world PEs that stream barriers reach */
/* Small collectives' mailboxes (mailbox.c): in jobs of up to MBOX_PES PEs,
 * one box per sending world PE with two slots that alternate, each holding
 * up to MBOX_PAYLOAD bytes of one message. */
#define USHMEMI_MBOX_PES 32
#define USHMEMI_MBOX_PAYLOAD 4096
struct ushmemi_mbox_slot {
    _Atomic uint64_t seq; /* the message's number + 1, stored after the rest */
    uint64_t len;         /* bytes in data */
    uint64_t total;       /* what the sender's whole contribution is (collect) */
    unsigned char data[USHMEMI_MBOX_PAYLOAD] __attribute__((aligned(64)));
};
#define USHMEMI_RING_DEVICE_SLOTS 1024

struct ushmemi_reserved {
    _Atomic uint64_t barrier_flags[USHMEMI_SYNC_WORDS];
    _Atomic uint64_t coll_flags[USHMEMI_SYNC_WORDS];
    _Atomic uint64_t device_flags[USHMEMI_SYNC_WORDS]; /* the device API's barrier */
    /* Device barriers this PE completed, then where the last one's signals
     * through the proxy are (the mark, include/ushmem/device.h); device
     * code writes both. */
    uint64_t device_epoch[2];
    /* barriers on streams (stream.c): stream_flags[s] counts the barrier
     * messages from world PE s */
    uint64_t stream_flags[USHMEMI_STREAM_PES];
    /* barriers on streams captured into CUDA graphs (stream.c), whose
     * replays cannot take counts from the host: graph_flags[s] counts the
     * captured barrier messages from world PE s; graph_sent[s] and
     * graph_expected[s], this PE's own, count the messages its captured
     * rounds sent to and waited for from world PE s. */
    uint64_t graph_flags[USHMEMI_STREAM_PES];
    uint64_t graph_sent[USHMEMI_STREAM_PES];
    uint64_t graph_expected[USHMEMI_STREAM_PES];
    /* The proxy's copy of its ring's completed counter (ring.h), which
     * device code polls in device memory rather than in host memory. */
    uint64_t ring_done __attribute__((aligned(64)));
    /* Written by peers' proxies to keep the link in use; never read. */
    uint64_t warm_word;
    /* The proxy ring's tail and fetched values where device code takes
     * them (ring.h, struct ushmem_device_state's ring_tail and
     * ring_values), for rings of up to USHMEMI_RING_DEVICE_SLOTS slots: the
     * tail's cache line, then a value per slot. */
    uint64_t ring_device[USHMEMI_RING_DEVICE_SLOTS + 8] __attribute__((aligned(64)));
    unsigned char scratch[USHMEMI_SCRATCH_SIZE] __attribute__((aligned(64)));
    /* mbox[s]: the slots world PE s sends this PE messages in; mbox_ack[r]:
     * how many of this PE's messages world PE r has taken from its box. */
    struct ushmemi_mbox_slot mbox[USHMEMI_MBOX_PES][2];
    _Atomic uint64_t mbox_ack[USHMEMI_MBOX_PES] __attribute__((aligned(64)));
    /* Threads of this PE asleep on a counter in this area (util.c): a
     * writer wakes them only when there are some. */
    _Atomic uint32_t sleepers __attribute__((aligned(64)));
};
#define USHMEMI_RESERVED_SIZE ((sizeof(struct ushmemi_reserved) + 4095) & ~(size_t)4095)

struct ushmemi_state {
    int initialized; /* 1 after shmem_init, 0 before and after finalize */
    int finalized;
    int thread_level;
    int init_count; /* shmem_init calls not yet matched by shmem_finalize (1.6) */
    int my_pe, n_pes;
    /* This PE's node: rank and size on it (which pick the device and the
     * peers to map) and its number, after USHMEM_SIM_NODES split the
     * launcher's node; host_local_* are the launcher's, for CPU placement. */
    int local_rank, local_size, node;
    int host_local_rank, host_local_size;
    /* How the proxy and the fabric's progress thread wait while idle
     * (idle.c): spin or sleep, and why, for ushmem_info --topology. */
    bool idle_spin;
    bool idle_spin_fabric; /* the fabric's progress thread too (idle.c) */
    int usable_cpus;
    char idle_why[256];
    /* This PE's CPUs are shared by more PEs than they number (idle.c):
     * waits hand the core over (util.c), and why, for ushmem_info. */
    bool cores_shared;
    /* Some PE of this machine waits so: writers of counters wake it. */
    bool cores_wake;
    /* Some PE of the job has cores_wake: the small collectives' choice
     * (coll.h, barrier.c), the same on every PE. */
    bool coll_wake;
    char cores_why[192];

    struct ushmemi_bootstrap bs;
    const struct ushmemi_device_ops *dev_ops;
    struct ushmemi_device *dev;

    char *heap_base; /* this PE's heap: the reserved area, then the user part */
    size_t heap_size; /* now: it grows in the allocation calls (heap_grow.c) */
    /* Where it started (the reserved area and SHMEM_SYMMETRIC_SIZE), and the
     * most it may grow to: the address space held behind heap_base (equal
     * to the start size where the backend cannot grow a heap). */
    size_t heap_start, heap_reserve;
    const char *heap_max_from; /* what set heap_reserve, for ushmem_info */
    /* The user part, the only one user calls may name: after the reserved
     * area and the blocks that shmem_init allocates for itself (the device
     * API's peer table). */
    char *user_base;
    size_t user_size;
    /* The lowest address a private buffer may start at: no mapping lies
     * below vm.mmap_min_addr, so NULL plus a small offset is caught there. */
    uintptr_t addr_min;
    bool heap_host_accessible;         /* pointer_query said the CPU may touch it */
    bool heap_is_device;               /* pointer_query said device memory */
    bool heap_host_backed;             /* host RAM underneath (a NIC can reach it without FI_HMEM) */
    struct ushmemi_reserved *reserved; /* == heap_base */
    struct ushmemi_peer *peers;        /* n_pes entries */

    /* The executable's data segment when shared (globals are symmetric). */
    char *static_base;
    size_t static_size;
    /* Bytes at the start of it that hold no symmetric object (.got.plt and
     * other relocation targets after the RELRO range): never registered
     * with the fabric (static_seg.c). static_size when the objects could
     * not be told apart from them. */
    size_t static_skip;
    struct ushmemi_peer *static_peers; /* n_pes entries, NULL when not shared */

    uint64_t barrier_epoch; /* barriers completed on TEAM_WORLD */

    /* The fabric (libfabric), opened when some peer's route needs it; NULL
     * otherwise. Addresses on it are ushmemi_sym_offset values. */
    const struct ushmemi_transport_ops *fabric_ops;
    struct ushmemi_transport *fabric;

    /* Probed facts per peer, as the route decision saw them (routes.c). */
    struct ushmemi_pair_caps *pair_caps;

    /* The device API's state and proxy thread (device_api.c). */
    struct ushmemi_proxy *proxy;
};

extern struct ushmemi_state ushmemi_g;

/* Teams (team.c): every team is a strided set of world PEs; member i is
 * world PE start + i * stride. */
#define USHMEMI_TEAMS_MAX 255 /* split teams alive at once on one PE */
struct ushmemi_team {
    const char *name; /* for messages */
    int start, stride, size;
    int num_contexts; /* the configuration it was created with */
    bool live;
};
extern struct ushmemi_team ushmemi_team_world, ushmemi_team_shared, ushmemi_team_node;

/* Fills world, shared and node once the peers are known. */
void ushmemi_teams_init(void);
/* Decides ushmemi_g.idle_spin from USHMEM_PROXY_IDLE (idle.c); after the heap is open. */
ushmem_status_t ushmemi_idle_decide(void);
/* Forgets every split team (shmem_finalize). */
void ushmemi_teams_fini(void);
/* The team behind a handle: NULL for SHMEM_TEAM_INVALID; fatal for a handle
 * that is not a live team, checked without reading through it. */
const struct ushmemi_team *ushmemi_team_lookup(const char *call, const struct ushmemi_team *team);
/* The index of world PE world_pe in team, -1 when it is not a member. */
int ushmemi_team_index_of(const struct ushmemi_team *team, int world_pe);

/* Contexts (ctx.c). A context carries its team, whose PE numbers its RMA,
 * atomic and signal calls take. */
#define USHMEMI_CTX_MAX 1024 /* contexts alive at once on one PE */
struct ushmemi_ctx {
    const struct ushmemi_team *team;
    long options;
    bool live;
};
extern struct ushmemi_ctx ushmemi_ctx_default;

/* The world PE that `pe` of ctx's team names; fatal (naming call, context
 * and PE) for an invalid context or a PE outside its team. */
int ushmemi_ctx_pe_slow(const char *call, struct ushmemi_ctx *ctx, int pe);
static inline int ushmemi_ctx_pe(const char *call, struct ushmemi_ctx *ctx, int pe)
{
    if (__builtin_expect(ctx == &ushmemi_ctx_default, 1))
        return pe;
    return ushmemi_ctx_pe_slow(call, ctx, pe);
}
/* Destroys the contexts made on team, completing their operations. */
void ushmemi_ctx_destroy_team(const char *call, const struct ushmemi_team *team);
/* Forgets every context (shmem_finalize). */
void ushmemi_ctx_fini(void);

/* Ends the job through the bootstrap with "call: message" naming this PE. */
_Noreturn void ushmemi_fatal(const char *call, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Aborts unless shmem_init has run and shmem_finalize has not. */
void ushmemi_check_init(const char *call);

/* Where a symmetric object lives on one peer. */
struct ushmemi_loc {
    uint64_t sym; /* symmetric offset (segment and offset in it), for transports */
    char *mapped; /* the peer's object as mapped here; NULL when that segment is not mapped */
};

/* Checks that pe is in range and that [addr, addr+len) lies in one symmetric
 * segment that user calls may reach (the heap's user part or the data
 * segment), and locates it on pe. Fatal otherwise: the reserved area at the
 * start of the heap is no target of a user call. */
void ushmemi_locate(const char *call, const void *addr, size_t len, int pe,
                    struct ushmemi_loc *loc_p);
/* The same for the runtime's own symmetric data: [addr, addr+len) must lie
 * in the reserved area (barrier counters, collective stage). */
void ushmemi_locate_reserved(const char *call, const void *addr, size_t len, int pe,
                             struct ushmemi_loc *loc_p);

/* Ends the job naming a private buffer of a data call (a put's source, a
 * get's destination, an atomic's fetch result) that is no memory the call
 * may use: see ushmemi_private_ok. `what` names the argument. */
_Noreturn void ushmemi_bad_private(const char *call, const char *what, const void *addr,
                                   size_t len, int pe);

/* Translates a symmetric address of this PE into the address of the same
 * object on `pe` as mapped here, with ushmemi_locate's checks; fatal when
 * the peer's memory is not mapped. */
void *ushmemi_remote_addr(const char *call, const void *addr, size_t len, int pe);

/* ---- Roads (road.c): every host data call to a peer goes through these,
 * which take the route of the class to that peer: a copy or C11 atomic on
 * the mapped memory (self, direct), or the fabric (proxy/ofi, staged). ---- */

/* RMA. dest (put) or src (get) is a symmetric address of this PE; len may be
 * 0. Non-blocking forms complete by the next quiet; the local buffer may be
 * reused on return. Fatal on bad input or a failed transfer. */
void ushmemi_put(const char *call, void *dest, const void *src, size_t len, int pe, bool nbi);
void ushmemi_get(const char *call, void *dst, const void *src, size_t len, int pe, bool nbi);
/* A blocking get from the reserved area of pe (the collective stage). */
void ushmemi_get_reserved(const char *call, void *dst, const void *src, size_t len, int pe);

/* The mapped address of the size-byte object at addr on pe when the route
 * of `cls` to pe is direct (or self) and the CPU may touch the word, else
 * NULL: the caller then uses ushmemi_amo_indirect. Checks alignment and
 * reachability; fatal otherwise. */
void *ushmemi_amo_direct(const char *call, enum ushmemi_op_class cls, const void *addr,
                         size_t size, int pe);
/* An atomic the CPU does not run itself: over the fabric, or on a mapped
 * heap in device memory by the device backend's atomic kernel. result may
 * be NULL for non-fetching ops. */
void ushmemi_amo_indirect(const char *call, enum ushmemi_op_class cls, const void *addr, int pe,
                          enum ushmemi_amo_op op, enum ushmemi_amo_type type,
                          const void *operand, const void *compare, void *result);

/* Adds `value` to the 64-bit symmetric word `addr` on pe with release
 * ordering, by the SYNC route (barrier and collective counters). */
void ushmemi_sync_add(const char *call, _Atomic uint64_t *addr, uint64_t value, int pe);

/* Orders (fence) or completes (quiet) this PE's operations on every road. */
void ushmemi_road_fence(const char *call);
void ushmemi_road_quiet(const char *call);

/* True when some peer's class route is not a mapped one (self or direct). */
bool ushmemi_road_uses_fabric(enum ushmemi_op_class cls);

/* The transport enum of an atomic type, by size and signedness. */
#define USHMEMI_AMO_TYPE_OF(T)                                                                \
    (sizeof(T) == 4 ? ((T)-1 < (T)1 ? USHMEMI_AMO_INT32 : USHMEMI_AMO_UINT32)                 \
                    : ((T)-1 < (T)1 ? USHMEMI_AMO_INT64 : USHMEMI_AMO_UINT64))

/* Copies between symmetric memory (local or a peer's mapping) and/or private
 * memory: a CPU memcpy when the heap is host-accessible, else the device
 * backend's copy engine followed by sync. Fatal on failure. */
void ushmemi_host_copy(const char *call, void *dst, const void *src, size_t len);

/* A put's copy onto mapped symmetric memory: like ushmemi_host_copy, but
 * with the copy engine it leaves the copy queued (completed by
 * ushmemi_host_copies_complete, which quiet calls) when the caller may
 * reuse the source anyway: nbi, or a source in pageable host memory. */
void ushmemi_host_put_copy(const char *call, void *dst, const void *src, size_t len, bool nbi);
void ushmemi_host_copies_complete(const char *call);

/* Sets every byte of symmetric memory of this PE to `byte` (memset, or the
 * device's memset, waited for); copy_zero to 0. */
void ushmemi_host_fill(void *dst, int byte, size_t len);
void ushmemi_host_copy_zero(void *dst, size_t len);

/* True when [addr, addr+len) lies in this PE's symmetric heap, reserved area
 * included: for questions about the memory itself (device or host). */
static inline bool ushmemi_in_heap(const void *addr, size_t len)
{
    const char *p = (const char *)addr;
    return p >= ushmemi_g.heap_base && len <= ushmemi_g.heap_size &&
           (size_t)(p - ushmemi_g.heap_base) <= ushmemi_g.heap_size - len;
}

/* True when [addr, addr+len) lies in the heap's user part, where the
 * allocations are: the only part of the heap that user calls may name. */
static inline bool ushmemi_in_user_heap(const void *addr, size_t len)
{
    const char *p = (const char *)addr;
    return p >= ushmemi_g.user_base && len <= ushmemi_g.user_size &&
           (size_t)(p - ushmemi_g.user_base) <= ushmemi_g.user_size - len;
}

/* Addresses at or above this are never user memory: the kernel's half on
 * x86-64 (bit 63, which linear address masking leaves alone too) and on
 * AArch64 (bit 55: the top byte may carry a tag there). */
#if defined(__x86_64__)
#define USHMEMI_USER_ADDR_END ((uintptr_t)1 << 63)
#elif defined(__aarch64__)
#define USHMEMI_USER_ADDR_END ((uintptr_t)1 << 55)
#else
#define USHMEMI_USER_ADDR_END UINTPTR_MAX
#endif

/* True when a private buffer of len > 0 bytes may be what a data call reads
 * or writes on this PE: it does not start in the unmappable lowest pages
 * (NULL and small offsets from it), does not wrap or reach the kernel's
 * addresses, and does not overlap the heap's reserved area. A few compares,
 * for every call; whether the pages are mapped is asked of the kernel only
 * where that is cheap beside the transfer (ushmemi_private_mapped). */
static inline bool ushmemi_private_ok(const void *addr, size_t len)
{
    uintptr_t a = (uintptr_t)addr, end;
    if (__builtin_add_overflow(a, len, &end) || a < ushmemi_g.addr_min ||
        end > USHMEMI_USER_ADDR_END)
        return false;
    return a >= (uintptr_t)ushmemi_g.user_base || end <= (uintptr_t)ushmemi_g.heap_base;
}

/* Transfers of at least this many bytes that the CPU copies ask the kernel
 * whether every page of the private buffer is mapped: one system call
 * (0.1 to 1.5 us, the latter in a virtual machine) beside a copy of 50 us or
 * more, so a SIGSEGV in the copy becomes a message for about 1% of the
 * time. Smaller copies are not asked: the call would cost them more than
 * the copy. */
#define USHMEMI_PROBE_MIN ((size_t)1 << 20)

/* True when every page of [addr, addr+len) is mapped, asked of the kernel
 * without touching the memory. */
bool ushmemi_private_mapped(const void *addr, size_t len);

/* Checks the private buffer of a data call of len > 0 bytes: fatal (naming
 * call, argument and PE) unless ushmemi_private_ok, and for a large copy by
 * the CPU unless its pages are mapped. */
static inline void ushmemi_check_private(const char *call, const char *what, const void *addr,
                                         size_t len, int pe)
{
    if (__builtin_expect(!ushmemi_private_ok(addr, len), 0))
        ushmemi_bad_private(call, what, addr, len, pe);
    if (__builtin_expect(len >= USHMEMI_PROBE_MIN, 0) && ushmemi_g.heap_host_accessible &&
        !ushmemi_private_mapped(addr, len))
        ushmemi_bad_private(call, what, addr, len, pe);
}

/* True when [addr, addr+len) lies in the shared data segment. */
static inline bool ushmemi_in_static(const void *addr, size_t len)
{
    const char *p = (const char *)addr;
    return p >= ushmemi_g.static_base && len <= ushmemi_g.static_size &&
           (size_t)(p - ushmemi_g.static_base) <= ushmemi_g.static_size - len;
}

/* Makes the executable's data segment symmetric (static_seg.c): shared with
 * the local peers when map is true, else only located, for the fabric. */
ushmem_status_t ushmemi_static_share(const struct ushmemi_oob *oob,
                                     const struct ushmemi_ipc_config *config, bool map);
void ushmemi_static_unshare(void);

/* Polling helper for waits: spins briefly, then yields so that oversubscribed
 * PEs make progress. The _in form names the call that waits, and the world
 * barrier's epoch (0 for other waits), for the line a long wait prints when
 * a peer will never come (watch.c). */
void ushmemi_poll_pause(unsigned *spins);
void ushmemi_poll_pause_in(const char *call, uint64_t world_epoch, unsigned *spins);
/* The same for a wait on one of the runtime's 64-bit counters (barrier
 * rounds), until it reaches target. Where cores are shared, it blocks on the
 * counter (a futex) after a short spin, which ushmemi_poll_wake ends. */
void ushmemi_poll_wait_ge(const char *call, uint64_t world_epoch, const _Atomic uint64_t *word,
                          uint64_t target);
/* The same for a counter in the reserved area of this PE's heap: a thread
 * that blocks counts itself in the area's sleepers, so that writers
 * (ushmemi_poll_wake_reserved) make the wake-up system call only when
 * somebody sleeps. */
void ushmemi_poll_wait_reserved(const char *call, uint64_t world_epoch,
                                const _Atomic uint64_t *word, uint64_t target);
/* After a store to a counter that some PE may wait on with
 * ushmemi_poll_wait_ge: wakes it where some PE of this machine shares
 * cores, else nothing. */
void ushmemi_poll_wake_slow(const _Atomic uint64_t *word);
static inline void ushmemi_poll_wake(const _Atomic uint64_t *word)
{
    if (__builtin_expect(ushmemi_g.cores_wake, 0))
        ushmemi_poll_wake_slow(word);
}
/* After a store to a counter in the reserved area `owner` (that PE's, as
 * mapped here) that it may wait on with ushmemi_poll_wait_reserved. The
 * fence orders the store before the look at the sleepers, as the sleeper
 * counts itself before it reads the counter: one of the two sees the other. */
static inline void ushmemi_poll_wake_reserved(const _Atomic uint64_t *word,
                                              struct ushmemi_reserved *owner)
{
    if (__builtin_expect(ushmemi_g.cores_wake, 0)) {
        atomic_thread_fence(memory_order_seq_cst);
        if (atomic_load_explicit(&owner->sleepers, memory_order_relaxed) != 0)
            ushmemi_poll_wake_slow(word);
    }
}

/* Heap allocator (heap.c): deterministic, metadata in host memory. Every
 * block starts on a multiple of USHMEMI_HEAP_BLOCK_ALIGN (from the heap's
 * base, which is aligned far more), whatever alignment the caller asks. */
#define USHMEMI_HEAP_BLOCK_ALIGN ((size_t)256)
ushmem_status_t ushmemi_heap_init(char *base, size_t size);
void ushmemi_heap_fini(void);
void *ushmemi_heap_alloc(size_t align, size_t size);
/* Returns false when ptr is not the start of a live allocation. */
bool ushmemi_heap_free(void *ptr);
/* Resizes the live allocation at ptr in place (shrinking, or growing into a
 * free neighbour); false when it cannot, with nothing changed. */
bool ushmemi_heap_resize(void *ptr, size_t size);
/* Size of the live allocation at ptr, 0 when none. */
size_t ushmemi_heap_block_size(const void *ptr);
size_t ushmemi_heap_bytes_in_use(void);
/* The allocator's size (the user part with shmem_init's own blocks). */
size_t ushmemi_heap_size(void);
/* Bytes the allocator must gain at its end for ushmemi_heap_alloc(align,
 * size) to succeed there; 0 when the block fits at the end as it is. */
size_t ushmemi_heap_grow_need(size_t align, size_t size);
/* The allocator covers `size` bytes now (more than before): the new bytes
 * join the free block at its end. */
ushmem_status_t ushmemi_heap_extend(size_t size);

/* Growth of the symmetric heap (heap_grow.c). The reserve to hold at
 * shmem_init for a heap that starts at `start` bytes (USHMEM_HEAP_MAX, or
 * what the device holds), and its source for messages. */
size_t ushmemi_heap_reserve_for(size_t start, const char **from_p);
/* Grows every PE's heap, collectively, so that ushmemi_heap_alloc(align,
 * size) fits: true when it did; false on every PE when some PE could not,
 * with nothing left mapped, after one line naming that PE and why
 * (*said_p true), or without trying when no growth would help (false). */
bool ushmemi_heap_grow(const char *call, size_t align, size_t size, bool *said_p);
/* Bytes from the start of the heap to the end of the last of the live
 * blocks that follow each other with no gap any allocation could use:
 * after shmem_init's own allocations, where the user's part begins. */
size_t ushmemi_heap_prefix_in_use(void);

/* World barrier over the mapped heaps (barrier.c), used by init, alloc, collectives. */
void ushmemi_barrier_world(void);
/* Forgets the counts of earlier barriers (a new initialisation). */
void ushmemi_barrier_reset(void);
void ushmemi_mbox_reset(void);
/* Forgets the stream barriers' message counts (stream.c; shmem_init). */
void ushmemi_stream_reset(void);

#endif
