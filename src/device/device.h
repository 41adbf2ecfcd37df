/* The device backend interface: one ops table per backend (cpu, ze, cuda).
 * Shaped for GPU backends: heap memory may not be dereferenceable by the CPU,
 * so every CPU path asks pointer_query first. */
#ifndef USHMEMI_DEVICE_H
#define USHMEMI_DEVICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../common/status.h"

struct ushmemi_device; /* backend private */

#define USHMEMI_HEAP_ALIGNMENT ((size_t)2 << 20)

/* Where a backend places a heap of `size` bytes: at the largest power of two
 * not above the size (at least USHMEMI_HEAP_ALIGNMENT, at most 1 GiB), so
 * that every PE's heap of the same size has the same address residue for
 * any alignment shmem_align can be asked for within it. Only address space
 * is spent on it. */
static inline size_t ushmemi_heap_alignment_for(size_t size)
{
    size_t align = USHMEMI_HEAP_ALIGNMENT;
    while (align < ((size_t)1 << 30) && align * 2 <= size)
        align *= 2;
    return align;
}

/* Identity of a device, exchanged through the bootstrap. */
struct ushmemi_device_id {
    char backend[8];     /* "cpu", "ze", "cuda" */
    uint8_t uuid[16];    /* device UUID (cpu: derived from the boot id) */
    char pci_bdf[16];    /* "0000:3b:00.0"; empty when not a PCI device */
    uint64_t node_hash;  /* same value on PEs of one node */
};

/* An exported heap: an fd for this process plus opaque backend metadata.
 * The fd is the exporter's; the importer receives its own copy through fd
 * passing and hands that to import(). */
struct ushmemi_ipc_handle {
    int fd;
    uint64_t size;
    uint8_t data[64]; /* backend metadata (a Level Zero IPC handle, say) */
};

enum ushmemi_mem_kind {
    USHMEMI_MEM_UNKNOWN = 0, /* not allocated by this backend: plain host memory */
    USHMEMI_MEM_HOST,        /* host memory from host_alloc (pinned) */
    USHMEMI_MEM_DEVICE,      /* device memory: the CPU must not dereference it */
};

struct ushmemi_ptr_attr {
    enum ushmemi_mem_kind kind;
    bool host_accessible; /* the CPU may load and store it */
    int device_ordinal;   /* -1 when not device memory */
    /* Host RAM underneath, so a NIC without FI_HMEM could read and write it:
     * true for host memory, and for the cpu backend's heap when it poses as
     * device memory; false for real GPU memory. */
    bool host_backed;
};

enum ushmemi_link_kind {
    USHMEMI_LINK_NONE = 0,
    USHMEMI_LINK_SAME_DEVICE,
    USHMEMI_LINK_HOST_MEMORY, /* cpu backend: both in one host's memory */
    USHMEMI_LINK_PCIE,
    USHMEMI_LINK_XELINK,
    USHMEMI_LINK_NVLINK,
};

struct ushmemi_p2p_caps {
    bool access;          /* loads and stores into the peer's device memory work */
    bool native_atomics;  /* atomics on the peer's memory are native and coherent */
    bool same_device;     /* the peer is this very device */
    enum ushmemi_link_kind link;
};

enum ushmemi_stream_cmp {
    USHMEMI_STREAM_GEQ, /* *addr >= value (as a difference of 64-bit words) */
    USHMEMI_STREAM_EQ,
};

/* The stream reductions' operations and element kinds. Every integer op
 * takes every integer kind; signedness matters to min and max only (sum and
 * prod wrap at the element's width, as two's complement). Floats take sum,
 * prod, min and max; min and max are the plain comparisons of the host's
 * reductions (acc < v ? acc : v), NaN and signed zeros included. Complex
 * kinds (two floats, real first) take sum and prod. */
enum ushmemi_reduce_op {
    USHMEMI_REDUCE_SUM,
    USHMEMI_REDUCE_PROD,
    USHMEMI_REDUCE_MIN,
    USHMEMI_REDUCE_MAX,
    USHMEMI_REDUCE_AND,
    USHMEMI_REDUCE_OR,
    USHMEMI_REDUCE_XOR,
    USHMEMI_REDUCE_OPS
};
enum ushmemi_reduce_kind {
    USHMEMI_REDUCE_I8,
    USHMEMI_REDUCE_I16,
    USHMEMI_REDUCE_I32,
    USHMEMI_REDUCE_I64,
    USHMEMI_REDUCE_U8,
    USHMEMI_REDUCE_U16,
    USHMEMI_REDUCE_U32,
    USHMEMI_REDUCE_U64,
    USHMEMI_REDUCE_F32,
    USHMEMI_REDUCE_F64,
    USHMEMI_REDUCE_C32, /* float _Complex */
    USHMEMI_REDUCE_C64, /* double _Complex */
    USHMEMI_REDUCE_KINDS
};
#define USHMEMI_STREAM_REDUCE_SOURCES 8 /* most sources of one stream_reduce */
#define USHMEMI_STREAM_BATCH 16 /* most writes, and waits, of one stream_exchange64 */

/* A stream collective as one piece of work (stream_coll), in the
 * stream's order: a round as stream_exchange64's (writes addrs[i], waits
 * for waits[i] to reach the expected count, i < n), then the copies
 * dst[j] <- src[j] of len bytes each (j < ncopy; this device's memory or
 * peers' as mapped here), then a second round. Each pair's numbers are the
 * ones before the call plus one, then plus two: without `counted` those
 * before are values[i] and expect[i]; with it they are words of device
 * memory (counts[i], expect_counts[i]) that the work advances by two, as
 * stream_exchange_counted advances its own, for work captured into a
 * graph. The rounds spin on the device: stream_exchange64's rule on
 * sharing a device applies. With `reduce`, between the rounds, instead of
 * the copies: dst[0] = op over src[0] ... src[ncopy - 1] of len elements
 * of kind, combined in that order, as stream_reduce's (ncopy at most
 * USHMEMI_STREAM_REDUCE_SOURCES). */
struct ushmemi_stream_coll {
    int n, ncopy;
    bool counted, reduce;
    enum ushmemi_reduce_op op;
    enum ushmemi_reduce_kind kind;
    size_t len;
    uint64_t *addrs[USHMEMI_STREAM_BATCH], *waits[USHMEMI_STREAM_BATCH];
    uint64_t values[USHMEMI_STREAM_BATCH], expect[USHMEMI_STREAM_BATCH];
    uint64_t *counts[USHMEMI_STREAM_BATCH], *expect_counts[USHMEMI_STREAM_BATCH];
    void *dst[USHMEMI_STREAM_BATCH + 1];
    const void *src[USHMEMI_STREAM_BATCH + 1];
};

/* Whether stream_reduce takes op on kind (see the enums). */
static inline bool ushmemi_reduce_takes(enum ushmemi_reduce_op op, enum ushmemi_reduce_kind kind)
{
    if ((unsigned)op >= USHMEMI_REDUCE_OPS || (unsigned)kind >= USHMEMI_REDUCE_KINDS)
        return false;
    if (kind <= USHMEMI_REDUCE_U64)
        return true;
    if (kind <= USHMEMI_REDUCE_F64)
        return op <= USHMEMI_REDUCE_MAX;
    return op == USHMEMI_REDUCE_SUM || op == USHMEMI_REDUCE_PROD;
}

/* Bytes of one element of kind. */
static inline size_t ushmemi_reduce_kind_size(enum ushmemi_reduce_kind kind)
{
    static const unsigned char size[USHMEMI_REDUCE_KINDS] = {
        [USHMEMI_REDUCE_I8] = 1,  [USHMEMI_REDUCE_I16] = 2, [USHMEMI_REDUCE_I32] = 4,
        [USHMEMI_REDUCE_I64] = 8, [USHMEMI_REDUCE_U8] = 1,  [USHMEMI_REDUCE_U16] = 2,
        [USHMEMI_REDUCE_U32] = 4, [USHMEMI_REDUCE_U64] = 8, [USHMEMI_REDUCE_F32] = 4,
        [USHMEMI_REDUCE_F64] = 8, [USHMEMI_REDUCE_C32] = 8, [USHMEMI_REDUCE_C64] = 16,
    };
    return (unsigned)kind < USHMEMI_REDUCE_KINDS ? size[kind] : 0;
}

/* Names for messages: "sum", ...; "i8", ..., "c64". */
const char *ushmemi_reduce_op_name(enum ushmemi_reduce_op op);
const char *ushmemi_reduce_kind_name(enum ushmemi_reduce_kind kind);

/* A 64-bit word of the device's memory and the value an operation queued
 * with it writes there once that operation is done, as a write64 queued
 * right behind it would (the proxy's completed counter's copy). `next`
 * (NULL: none), for store only: another such write after this one (a
 * signal, then the counter's copy), in the same submission where the
 * device can; its word may be a peer's as mapped here. */
struct ushmemi_dev_then {
    uint64_t *addr;
    uint64_t value;
    const struct ushmemi_dev_then *next;
};

struct ushmemi_device_ops {
    size_t size; /* sizeof(struct ushmemi_device_ops) for versioning */
    const char *name;

    /* Opens the device for this local rank. ERR_NO_DEVICE when the backend
     * has no driver or no device here. */
    ushmem_status_t (*open)(int local_rank, int local_size, struct ushmemi_device **dev_p);
    void (*close)(struct ushmemi_device *dev);
    ushmem_status_t (*identity)(struct ushmemi_device *dev, struct ushmemi_device_id *id_p);

    /* Symmetric heap memory (device memory on GPUs), exportable, aligned to
     * ushmemi_heap_alignment_for(size) so that every PE's heap has the same address
     * residue for any alignment shmem_align accepts. */
    ushmem_status_t (*heap_alloc)(struct ushmemi_device *dev, size_t size, void **ptr_p);
    void (*heap_free)(struct ushmemi_device *dev, void *ptr, size_t size);
    /* Host memory pinned and visible to the device; never shared/managed. */
    ushmem_status_t (*host_alloc)(struct ushmemi_device *dev, size_t size, void **ptr_p);
    void (*host_free)(struct ushmemi_device *dev, void *ptr, size_t size);

    /* Export a heap allocation; handle_p->fd is owned by the backend until
     * heap_free. */
    ushmem_status_t (*export_mem)(struct ushmemi_device *dev, void *ptr, size_t size,
                                  struct ushmemi_ipc_handle *handle_p);
    /* Map a peer's export; fd is this process's copy and is consumed. Each
     * call is a new mapping that needs its own close_import. */
    ushmem_status_t (*import_mem)(struct ushmemi_device *dev, const struct ushmemi_ipc_handle *handle,
                                  int fd, void **ptr_p);
    ushmem_status_t (*close_import)(struct ushmemi_device *dev, void *ptr, size_t size);

    /* A heap that grows (all optional: a backend without heap_reserve keeps
     * the heap at its start size, and the host refuses to grow it).
     * heap_reserve: heap_alloc's heap of `size` bytes at the start of
     * `reserve` bytes of address space, aligned for the reserve; heap_free
     * (with the heap's start size) releases the reserve and every chunk;
     * export_mem's handle then tells an importer the reserve, and import_mem
     * reserves as much behind the peer's heap, so that each PE's chunks lie
     * where its peers map them. */
    ushmem_status_t (*heap_reserve)(struct ushmemi_device *dev, size_t size, size_t reserve,
                                    void **ptr_p);
    /* Grows the heap at base from old_size to new_size bytes (the sizes the
     * host counts; the backend maps from the end of what it has mapped, its
     * own rounding, to new_size rounded the same way), inside the reserve,
     * as one chunk of device memory. On failure nothing is left and why_p
     * (why_len bytes) says why in a few words, unlogged: the host gathers
     * every PE's answer into one line. */
    ushmem_status_t (*heap_grow)(struct ushmemi_device *dev, void *base, size_t old_size,
                                 size_t new_size, char *why_p, size_t why_len);
    /* Undoes the last heap_grow (same sizes), when a peer could not grow. */
    void (*heap_shrink)(struct ushmemi_device *dev, void *base, size_t old_size, size_t new_size);
    /* Exports the chunk that heap_grow(base, old_size, new_size) mapped;
     * handle_p->fd stays the backend's until heap_free. */
    ushmem_status_t (*export_chunk)(struct ushmemi_device *dev, void *base, size_t old_size,
                                    size_t new_size, struct ushmemi_ipc_handle *handle_p);
    /* Maps a peer's exported chunk where it lies behind peer_base (what
     * import_mem returned for that peer's heap); fd is this process's copy
     * and is consumed. close_chunk undoes it (some peer could not map its
     * chunk); close_import releases the chunks with the heap. */
    ushmem_status_t (*import_chunk)(struct ushmemi_device *dev, void *peer_base, size_t old_size,
                                    size_t new_size, const struct ushmemi_ipc_handle *handle,
                                    int fd);
    void (*close_chunk)(struct ushmemi_device *dev, void *peer_base, size_t old_size,
                        size_t new_size);
    /* Optional (NULL: unknown): bytes of memory the device holds, the
     * default most a heap grows to. */
    ushmem_status_t (*memory_size)(struct ushmemi_device *dev, size_t *bytes_p);

    /* Makes the existing, page-aligned host range [start, start+len) (the
     * program's data segment) exportable like a heap allocation, keeping its
     * contents; unshare_static turns it back into private memory, contents
     * kept. Backends whose peers cannot reach host memory answer
     * ERR_UNSUPPORTED. */
    ushmem_status_t (*share_static)(struct ushmemi_device *dev, void *start, size_t len);
    void (*unshare_static)(struct ushmemi_device *dev, void *start, size_t len);

    /* Copy engine: asynchronous until sync. */
    ushmem_status_t (*copy)(struct ushmemi_device *dev, void *dst, const void *src, size_t len);
    /* True where copy writes a naturally aligned 1, 2, 4 or 8 bytes in one
     * write, once, as write64 and amo_async's result do: a value copied
     * into a cell that its reader watches and empties (ring.h's values
     * apart) is then never seen half written, nor written again after it
     * was emptied. False where that is not known (device code then waits
     * for the ticket instead). */
    bool copy_writes_words_whole;
    ushmem_status_t (*memset)(struct ushmemi_device *dev, void *dst, int value, size_t len);
    ushmem_status_t (*sync)(struct ushmemi_device *dev);
    /* Writes a 64-bit word of this device's memory once the copies queued
     * before it are done, without the CPU touching the word; asynchronous
     * until sync. Optional (NULL): the proxy then keeps no copy of its
     * completion counter in device memory (proxy.h). */
    ushmem_status_t (*write64)(struct ushmemi_device *dev, uint64_t *addr, uint64_t value);
    /* One atomic on a 4- or 8-byte aligned word of device memory at addr
     * (this device's heap or a peer's as mapped here), after the copies
     * queued before it, without the CPU touching the word: op is numbered
     * as the ring's enum ushmem_ring_amo_op, operands and the old value
     * travel as bits (a 4-byte word in the low half). Blocking; old_p may
     * be NULL. Safe from any thread (the proxy, the landing thread). */
    ushmem_status_t (*amo)(struct ushmemi_device *dev, void *addr, unsigned op, size_t size,
                           uint64_t operand, uint64_t compare, uint64_t *old_p);
    /* Optional (NULL when the backend has none), for a proxy that never
     * waits for the device: queued behind the copies and in their order,
     * asynchronous until sync or a write64 after them.
     * store: size (1, 2, 4 or 8) bytes of value, in the byte order of the
     * host, at addr (device memory this device can write: its heap or a
     * peer's as mapped here), without a source buffer to keep alive.
     * amo_async: amo's atomic; when result is not NULL, the old value (a
     * 4-byte word in the low half) is written to it, memory the device can
     * write (host memory from host_alloc, or device memory).
     * Both take a `then` (NULL: none): a write64 queued right behind them,
     * which the backend may fold into the same submission; store follows
     * its `next` writes too, each after the one before. */
    ushmem_status_t (*store)(struct ushmemi_device *dev, void *addr, uint64_t value, size_t size,
                             const struct ushmemi_dev_then *then);
    ushmem_status_t (*amo_async)(struct ushmemi_device *dev, void *addr, unsigned op, size_t size,
                                 uint64_t operand, uint64_t compare, uint64_t *result,
                                 const struct ushmemi_dev_then *then);
    /* Optional (NULL: store, then amo_async): store's store_len bytes of
     * store_value at store_addr, then amo_async's atomic with no result,
     * every thread seeing the store before the atomic, in one submission
     * (a put and its signal's add: the atomic's kernel writes the data). */
    ushmem_status_t (*store_amo_async)(struct ushmemi_device *dev, void *store_addr,
                                       uint64_t store_value, size_t store_len, void *addr,
                                       unsigned op, size_t size, uint64_t operand,
                                       const struct ushmemi_dev_then *then);
    /* Optional (NULL: nothing to do): brackets a call into a library that
     * drives the device by itself (libfabric's GPU support, which copies
     * with the CUDA runtime on whatever thread calls it). enter makes the
     * calling thread ready for it and saves what leave restores, so an
     * application thread keeps its own state. On cuda: a context of the
     * device current on the thread, by default a second one of the
     * library's, whose synchronous copies do not wait for the program's
     * kernels on its default stream (USHMEM_CUDA_FABRIC_CONTEXT). */
    ushmem_status_t (*foreign_enter)(struct ushmemi_device *dev, void **saved_p);
    void (*foreign_leave)(struct ushmemi_device *dev, void *saved);

    /* Work queued on a stream of the program's (a CUstream on cuda), in
     * that stream's order: a copy on a copy engine; a write of a 64-bit
     * word after everything before it on the stream; a wait, holding back
     * what follows on the stream, until the word at addr compares with
     * value (every backend has GEQ and EQ). Backends without streams
     * answer ERR_UNSUPPORTED. */
    ushmem_status_t (*stream_copy)(struct ushmemi_device *dev, void *stream, void *dst,
                                   const void *src, size_t len);
    /* Optional (NULL: stream_copy, in the stream's order): the same copy
     * beside the stream, starting after what the stream holds so far and
     * running alongside what is queued on it next, until stream_join queues
     * the stream's wait for it; *join_p goes to stream_join exactly once. */
    ushmem_status_t (*stream_copy_beside)(struct ushmemi_device *dev, void *stream, void *dst,
                                          const void *src, size_t len, void **join_p);
    ushmem_status_t (*stream_join)(struct ushmemi_device *dev, void *stream, void *join);
    ushmem_status_t (*stream_write64)(struct ushmemi_device *dev, void *stream, uint64_t *addr,
                                      uint64_t value);
    ushmem_status_t (*stream_wait64)(struct ushmemi_device *dev, void *stream,
                                     const uint64_t *addr, uint64_t value,
                                     enum ushmemi_stream_cmp cmp);

    /* Optional (NULL: one stream_write64 or stream_wait64 each): writes
     * values[i] to addrs[i] for i < nwrites, each after everything before
     * it on the stream, then waits until every wait_addrs[j] >=
     * wait_values[j], queued at once (cuda: one kernel, or a batch of
     * stream memory operations); at most USHMEMI_STREAM_BATCH of each.
     * `shared`: a value waited for comes from a process on this very
     * device, whose work cannot run while a kernel of this one spins on
     * it (cuda: memory operations then, unless told otherwise). */
    ushmem_status_t (*stream_exchange64)(struct ushmemi_device *dev, void *stream,
                                         uint64_t *const *addrs, const uint64_t *values,
                                         int nwrites, uint64_t *const *wait_addrs,
                                         const uint64_t *wait_values, int nwaits, bool shared);
    /* dst[i] = op(...op(op(srcs[0][i], srcs[1][i]), srcs[2][i])..., srcs[nsrc-1][i])
     * for i < count elements of kind, combined in that order (so floating
     * results agree wherever the same sources are combined), queued on the
     * stream. Sources are this device's memory or peers' as mapped here;
     * 1 <= nsrc <= USHMEMI_STREAM_REDUCE_SOURCES; dst may be one of the
     * sources (each element is read before it is written). A pair that
     * ushmemi_reduce_takes refuses is ERR_INVALID_PARAM; backends without
     * streams answer ERR_UNSUPPORTED. */
    ushmem_status_t (*stream_reduce)(struct ushmemi_device *dev, void *stream, void *dst,
                                     const void *const *srcs, int nsrc,
                                     enum ushmemi_reduce_op op, enum ushmemi_reduce_kind kind,
                                     size_t count);
    /* Device memory private to this process, allocated and freed in the
     * stream's order (it may be used by work queued between the two). */
    ushmem_status_t (*stream_alloc)(struct ushmemi_device *dev, void *stream, size_t size,
                                    void **ptr_p);
    ushmem_status_t (*stream_free)(struct ushmemi_device *dev, void *stream, void *ptr);
    /* Whether work queued on the stream now goes into a graph being
     * captured (cuda: stream capture) rather than to the device: a replay
     * of the graph repeats that work, with the values it was queued with,
     * but nothing the caller did at the call. Backends without streams
     * answer false. */
    ushmem_status_t (*stream_capturing)(struct ushmemi_device *dev, void *stream,
                                        bool *capturing_p);
    /* Optional (NULL: a stream barrier cannot be captured): stream_exchange64's
     * round with its numbers counted in device memory, for work captured
     * into a graph, whose replays must send and expect the next numbers
     * each time. In the stream's order, for i < nwrites: adds one to the
     * word at counts[i] and writes the sum to addrs[i], after everything
     * before it on the stream; for j < nwaits: adds one to the word at
     * expect[j] and waits until *wait_addrs[j] >= the sum. counts and
     * expect are words of this device's memory that only these rounds
     * write; at most USHMEMI_STREAM_BATCH of each. */
    ushmem_status_t (*stream_exchange_counted)(struct ushmemi_device *dev, void *stream,
                                               uint64_t *const *addrs, uint64_t *const *counts,
                                               int nwrites, uint64_t *const *wait_addrs,
                                               uint64_t *const *expect, int nwaits);
    /* Optional (NULL: the pieces one by one): a small collective as one
     * piece of work on the stream (struct ushmemi_stream_coll). */
    ushmem_status_t (*stream_coll)(struct ushmemi_device *dev, void *stream,
                                   const struct ushmemi_stream_coll *c);

    ushmem_status_t (*pointer_query)(struct ushmemi_device *dev, const void *ptr,
                                     struct ushmemi_ptr_attr *attr_p);
    ushmem_status_t (*p2p_probe)(struct ushmemi_device *dev, const struct ushmemi_device_id *peer,
                                 struct ushmemi_p2p_caps *caps_p);
    /* Optional (NULL): lines for ushmem_info about the driver and devices
     * this backend sees, whether or not it can open one. */
    void (*describe)(char *buf, size_t len);
    /* Optional (NULL): the driver's own handle named by what ("context",
     * "device"), for programs that create device code themselves; NULL when
     * there is none. */
    void *(*native_handle)(struct ushmemi_device *dev, const char *what);
    /* Optional (NULL): writes size bytes at data into the global `name` of
     * a module of device code the program created (a ze_module_handle_t, a
     * CUmodule),
     * complete when it returns. */
    ushmem_status_t (*module_global)(struct ushmemi_device *dev, void *module, const char *name,
                                     const void *data, size_t size);
    /* Optional (NULL: nothing to keep warm): for an idle proxy, keeps the
     * device's kernel launch path in use with a small kernel that reads
     * the 8-byte word at `word` (device memory). It runs on a stream of its
     * own, and a new one is launched only once the last one has run (it
     * says so in host memory: no event waits behind it), so no request of
     * the library's waits behind one, even when a program's kernel holds
     * every SM; a program's device-wide synchronisation does. Not while
     * another process computes on the device (its kernels would have to
     * give way). Returns true when it launched one; false when the last one
     * has not run yet, another process is there, or it cannot (it then
     * stops trying). `word` NULL: waits for the last one and stops, before
     * the memory it reads goes. */
    bool (*keep_warm)(struct ushmemi_device *dev, const uint64_t *word);
};

/* Backends compiled into this build, in order of preference, NULL-terminated. */
extern const struct ushmemi_device_ops *const ushmemi_device_backends[];

/* Finds a backend by name ("auto" picks the first that opens). */
ushmem_status_t ushmemi_device_open(const char *name, int local_rank, int local_size,
                                    const struct ushmemi_device_ops **ops_p,
                                    struct ushmemi_device **dev_p);

extern const struct ushmemi_device_ops ushmemi_device_cpu_ops;

const char *ushmemi_link_name(enum ushmemi_link_kind link);

/* The stream operations of a backend without streams: ERR_UNSUPPORTED. */
ushmem_status_t ushmemi_no_stream_copy(struct ushmemi_device *dev, void *stream, void *dst,
                                       const void *src, size_t len);
ushmem_status_t ushmemi_no_stream_write64(struct ushmemi_device *dev, void *stream,
                                          uint64_t *addr, uint64_t value);
ushmem_status_t ushmemi_no_stream_wait64(struct ushmemi_device *dev, void *stream,
                                         const uint64_t *addr, uint64_t value,
                                         enum ushmemi_stream_cmp cmp);
ushmem_status_t ushmemi_no_stream_reduce(struct ushmemi_device *dev, void *stream, void *dst,
                                         const void *const *srcs, int nsrc,
                                         enum ushmemi_reduce_op op, enum ushmemi_reduce_kind kind,
                                         size_t count);
ushmem_status_t ushmemi_no_stream_alloc(struct ushmemi_device *dev, void *stream, size_t size,
                                        void **ptr_p);
ushmem_status_t ushmemi_no_stream_free(struct ushmemi_device *dev, void *stream, void *ptr);
ushmem_status_t ushmemi_no_stream_capturing(struct ushmemi_device *dev, void *stream,
                                            bool *capturing_p);

#endif
