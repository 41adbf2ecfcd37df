/* State shared by the ofi transport's files (ofi.c: setup and teardown,
 * ofi_rma.c: completions, progress, put/get, quiet; ofi_atomic.c: atomics).
 * This header and those files are the only ones that include <rdma/...>. */
#ifndef USHMEMI_TRANSPORT_OFI_PRIVATE_H
#define USHMEMI_TRANSPORT_OFI_PRIVATE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#include "ofi_lib.h"
#include "ops.h"
#include "transport.h"

/* How long one operation may wait for send-queue room or for its completion
 * before the transport gives up with ERR_TIMEOUT. Long enough for a 4 MiB
 * transfer on an oversubscribed node, short enough that a dead peer is
 * reported instead of hanging the job. */
#define OFI_OP_TIMEOUT_S 30.0

/* Non-blocking puts up to this size are copied into a registered bounce slot
 * so that the caller may reuse its buffer at once; larger ones wait for their
 * completion before returning. */
#define OFI_NBI_SLOT_SIZE (16 * 1024)
#define OFI_NBI_SLOTS 64

/* Fetching atomics need their operand, compare and result in registered
 * memory when the provider asks for FI_MR_LOCAL; one slot is enough because
 * atomics are blocking and serialised by amo_lock. */
#define OFI_AMO_SCRATCH 64

/* How long after the last completion the progress thread keeps polling
 * before it starts to nap. */
#define OFI_PROGRESS_HOT_S 0.002
/* The progress thread's nap when it has nothing to do: the latency a remote
 * operation pays at an idle target, against the CPU an idle PE burns. */
#define OFI_PROGRESS_NAP_NS (20 * 1000)
/* Where cores are shared: a yield that took this long gave a busy thread a
 * scheduler slice, and for this long after it waits nap instead. */
#define OFI_SLOW_YIELD_S 0.002
#define OFI_COSTLY_S 0.1

#define OFI_NAME_MAX 256
#define OFI_AMO_OPS 8   /* enum ushmemi_amo_op */
#define OFI_AMO_TYPES 6 /* enum ushmemi_amo_type */

/* Landing (ofi_am.c): a PE whose heap is device memory that neither the
 * fabric nor the CPU may touch takes peers' puts, gets and atomics on it as
 * messages, and lands them with its device backend's copy engine and atomic
 * kernel. Payloads travel in chunks of at most OFI_AM_CHUNK bytes behind a
 * header of OFI_AM_HDR bytes; an initiator keeps at most `credits` requests
 * in flight to one PE. A PE posts twice the credits per PE (requests and
 * replies) plus slack, at most OFI_AM_RECVS_MAX receive buffers; past that
 * the provider holds a message as unexpected until a buffer is reposted.
 * 64 KiB chunks measured 21-38% more put bandwidth at 1 MiB than 32 KiB
 * (tcp and shm, 2 PEs). */
#define OFI_AM_HDR 64
#define OFI_AM_CHUNK (64 * 1024)
#define OFI_AM_RECVS_MAX 128
#define OFI_AM_BUF (OFI_AM_HDR + OFI_AM_CHUNK)
#define OFI_AM_SENDS 32
#define OFI_AM_CREDITS_MAX 8
#define OFI_AM_CREDITS_MIN 2

/* One symmetric segment (heap, data segment) of one peer. */
struct ofi_remote_seg {
    uint64_t key;  /* remote key */
    uint64_t base; /* the peer's address of the segment, used when FI_MR_VIRT_ADDR */
    uint64_t size; /* 0 when the peer has no such segment */
    uint64_t skip; /* its first bytes are not registered: offsets start after them */
};

struct ofi_peer {
    struct ofi_remote_seg seg[USHMEMI_SEG_COUNT];
    bool heap_landing; /* its heap is reached through messages (ofi_am.c) */
};

/* One of our own segments, registered for remote access. */
struct ofi_local_seg {
    char *base;
    size_t size;
    size_t skip; /* the first bytes, left out of the registration */
    struct fid_mr *mr;
    void *desc;
};

/* A heap registered per chunk (t->chunked): the start size is chunk 0, and
 * each growth registers only its new bytes as the next chunk, since one
 * FI_HMEM registration spanning several GPU allocations (a cuda heap maps
 * each growth on its own) crashed the shm provider. Heaps grow alike on
 * every PE, so chunk c covers the same offsets everywhere; only its key and
 * address differ between PEs. */
struct ofi_remote_chunk {
    uint64_t offset; /* in the heap */
    uint64_t size;
    uint64_t key;
    uint64_t base; /* the peer's address of the chunk, used when FI_MR_VIRT_ADDR */
};

struct ofi_local_chunk {
    uint64_t offset;
    uint64_t size;
    struct fid_mr *mr;
    void *desc;
};

/* The chunk tables: entries [0, t->nchunks) are valid. A growth past `cap`
 * publishes a copy twice as large and keeps the old one (in `retired`)
 * until the transport closes, as the proxy thread may still read it. */
struct ofi_chunks {
    size_t cap;
    struct ofi_local_chunk *local;   /* cap entries */
    struct ofi_remote_chunk *remote; /* cap entries per PE: PE pe's row at pe * cap */
    struct ofi_chunks *retired;
};

enum ofi_op_state { OFI_OP_PENDING, OFI_OP_DONE, OFI_OP_ORPHAN };

/* What a completion belongs to: an operation somebody counts (and maybe
 * waits for), or one of landing's message buffers. */
enum ofi_op_role { OFI_ROLE_OP = 0, OFI_ROLE_AM_SEND, OFI_ROLE_AM_RECV };

/* One operation in flight: its address is the libfabric context. */
struct ofi_op {
    struct fi_context2 fctx; /* first: the CQ hands this pointer back */
    _Atomic int state;       /* enum ofi_op_state */
    bool nbi;                /* nobody waits: the completion releases it */
    int fi_err;              /* positive fi error code from the CQ, 0 when fine */
    int slot;                /* bounce slot to release, -1 when none */
    struct fid_mr *tmp_mr;   /* registration of a caller buffer, closed at the end */
    const char *what;
    int pe;
    enum ofi_op_role role;
    /* Landing: the message buffer of an AM_SEND or AM_RECV context; for a
     * request, where a get's reply goes and an atomic's old value. */
    int am_buf;
    struct ofi_op *am_req; /* AM_SEND: the request it carries, NULL for a reply */
    void *am_dst;          /* a get's destination, NULL for an atomic */
    size_t am_len;
    uint64_t am_old;       /* an atomic's old value */
    /* Landing with SHMEM_DEBUG: when a request left, and whether after a
     * quiet spell (ofi_am.c's timing). */
    double am_sent;
    bool am_after_quiet;
};

enum ofi_xfer_kind { OFI_X_WRITE, OFI_X_READ, OFI_X_FETCH, OFI_X_COMPARE };

/* Everything one libfabric data call needs, so that a single retry helper
 * can reissue any of them on -FI_EAGAIN. */
struct ofi_xfer {
    enum ofi_xfer_kind kind;
    int pe;
    uint64_t offset;
    void *local; /* source (write, atomic operand) or destination (read) */
    size_t len;
    void *desc;
    void *compare;
    void *compare_desc;
    void *result;
    void *result_desc;
    enum fi_datatype datatype;
    enum fi_op amo;
    struct ofi_op *op;
};

struct ushmemi_transport {
    int rank, size;
    const struct ushmemi_oob *oob;
    struct fi_info *info;
    const char *prov_name; /* inside info */
    struct fid_fabric *fabric;
    struct fid_domain *domain;
    struct fid_cq *cq;
    struct fid_av *av;
    struct fid_ep *ep;
    struct ofi_local_seg seg[USHMEMI_SEG_COUNT]; /* heap, data segment (size 0 when none) */
    /* The heap's registrations before it last grew, kept for operations
     * that were in flight under their keys; closed with the transport. */
    struct fid_mr **old_heap_mrs;
    size_t nold_heap_mrs;
    bool heap_is_device;
    /* The heap is registered per chunk (FI_HMEM, or USHMEMI_OFI_CHUNK_REG):
     * the tables, published by ofi_heap_grow (entries first, then the count
     * with a release store) and read with acquire loads. */
    bool chunked;
    _Atomic(struct ofi_chunks *) chunks;
    _Atomic size_t nchunks;
    struct fid_mr *scratch_mr; /* nbi bounce slots and the atomic scratch */
    void *scratch_desc;
    char *scratch;
    size_t scratch_size;

    bool mr_local, virt_addr, prov_key, mr_endpoint;
    size_t max_msg;
    char addr_why[96]; /* why the endpoint has its address (ofi_addr.c) */

    fi_addr_t *addrs;
    struct ofi_peer *peers;

    bool have_atomics;
    bool amo_valid[OFI_AMO_OPS][OFI_AMO_TYPES];
    char no_atomic_why[320];
    pthread_mutex_t amo_lock;

    pthread_mutex_t slot_lock;
    int free_slots[OFI_NBI_SLOTS];
    int nfree_slots;

    _Atomic uint64_t issued, completed;
    _Atomic int async_error; /* first error of an operation nobody waited for */

    pthread_t progress_thread;
    bool progress_started;
    bool idle_spin; /* params.idle_spin: the progress thread never naps */
    bool cores_shared; /* params.cores_shared: see ushmemi_ofi_yield */
    _Atomic bool stop;

    /* Landing (ofi_am.c); am == NULL when neither this PE's heap nor any
     * peer's is reached through messages. */
    struct ofi_am *am;

    /* The heap is registered as device memory (FI_HMEM): the provider
     * copies it with the device's own runtime on whatever thread calls in,
     * so every call that may move data is bracketed by the backend's
     * foreign_enter/leave (see ushmemi_ofi_enter). */
    const struct ushmemi_device_ops *dev_ops;
    struct ushmemi_device *dev;
    bool foreign;
};

/* Brackets a libfabric call that may copy device memory; a failure to
 * prepare the thread is logged by the backend and the call goes ahead (the
 * provider then reports its own error). */
static inline void *ushmemi_ofi_enter(struct ushmemi_transport *t)
{
    void *saved = NULL;
    if (t->foreign)
        t->dev_ops->foreign_enter(t->dev, &saved);
    return saved;
}

static inline void ushmemi_ofi_leave(struct ushmemi_transport *t, void *saved)
{
    if (t->foreign)
        t->dev_ops->foreign_leave(t->dev, saved);
}

/* Translates a negative libfabric return code into a status. */
ushmem_status_t ushmemi_ofi_status(int fi_rc);
/* Gives the endpoint an address of our choosing (ofi_addr.c): after
 * choose_provider, asks fi_getinfo again for the same provider from
 * 127.0.0.1 (tcp, sockets, udp with every PE on this host), from iface
 * (USHMEM_FABRIC_IFACE; across hosts, when set), or under a random
 * region name (shm); replaces t->info and fills addr_why. Logs on failure. */
ushmem_status_t ushmemi_ofi_addr_choose(struct ushmemi_transport *t, const char *iface);
/* Remote address and key of symmetric offset `sym` on pe, as the provider
 * wants them (those of the heap chunk holding it when t->chunked); the
 * caller has checked the range. */
void ushmemi_ofi_target(const struct ushmemi_transport *t, int pe, uint64_t sym,
                        uint64_t *raddr_p, uint64_t *key_p);
/* The heap chunk of pe that holds heap offset `offset` (t->chunked; the
 * caller has checked the range). The first chunk is tested first. */
const struct ofi_remote_chunk *ushmemi_ofi_remote_chunk(const struct ushmemi_transport *t, int pe,
                                                        uint64_t offset);
/* The local heap chunk that holds heap offset `offset`, NULL past the
 * heap's registered chunks (t->chunked). */
const struct ofi_local_chunk *ushmemi_ofi_local_chunk(const struct ushmemi_transport *t,
                                                      uint64_t offset);
/* How many of the len bytes at `sym` on pe one transfer may cover: up to
 * the end of the remote heap chunk holding sym, len when the heap is one
 * registration or sym is not in the heap. */
size_t ushmemi_ofi_remote_run(const struct ushmemi_transport *t, int pe, uint64_t sym, size_t len);
/* Checks that [sym, sym + len) lies in one segment of pe; logs otherwise. */
ushmem_status_t ushmemi_ofi_check_range(const struct ushmemi_transport *t, const char *what, int pe,
                                        uint64_t offset, size_t len);

/* Registers size bytes of device memory at buf with the device backend's
 * FI_HMEM interface, for access; what names the purpose in the error line
 * ("init", "heap growth", "transfer"). */
ushmem_status_t ushmemi_ofi_reg_device(struct ushmemi_transport *t, const char *what, void *buf,
                                       size_t size, uint64_t access, struct fid_mr **mr);
/* Registers a local buffer (host memory) with `access`, bound to the
 * endpoint when the provider asks for FI_MR_ENDPOINT. Logs on failure. */
ushmem_status_t ushmemi_ofi_reg(struct ushmemi_transport *t, void *buf, size_t len,
                                uint64_t access, struct fid_mr **mr_p);
/* The same for a buffer only ever the local side of a transfer: registered
 * only under FI_MR_LOCAL; otherwise *mr_p and *desc_p are NULL. */
ushmem_status_t ushmemi_ofi_reg_local(struct ushmemi_transport *t, void *buf, size_t len,
                                      uint64_t access, struct fid_mr **mr_p, void **desc_p);

/* Reads completions; returns how many it handled. Safe from any thread. */
int ushmemi_ofi_progress(struct ushmemi_transport *t);
/* Gives the CPU up briefly while waiting (ofi_rma.c). */
void ushmemi_ofi_yield(struct ushmemi_transport *t);
/* Issues x, retrying on -FI_EAGAIN with progress in between, up to the
 * operation timeout. Counts the operation as issued on success. */
ushmem_status_t ushmemi_ofi_issue(struct ushmemi_transport *t, const struct ofi_xfer *x,
                                  const char *what);
/* A new operation context; NULL when out of memory (logged). */
struct ofi_op *ushmemi_ofi_op_new(const char *what, int pe, bool nbi);
/* Waits for a blocking operation's completion and releases it (or leaves it
 * to the completion path when the wait times out). */
ushmem_status_t ushmemi_ofi_op_wait(struct ushmemi_transport *t, struct ofi_op *op);
/* The same, handing back the landed atomic's old value (am_old) first. */
ushmem_status_t ushmemi_ofi_op_wait_old(struct ushmemi_transport *t, struct ofi_op *op,
                                        uint64_t *old_p);
/* Releases an operation that was never issued. */
void ushmemi_ofi_op_drop(struct ushmemi_transport *t, struct ofi_op *op);
/* Progress thread body for providers with manual data progress. */
void *ushmemi_ofi_progress_main(void *arg);

ushmem_status_t ushmemi_ofi_put(struct ushmemi_transport *t, int pe, uint64_t offset,
                                const void *src, size_t len);
ushmem_status_t ushmemi_ofi_get(struct ushmemi_transport *t, int pe, void *dst, uint64_t offset,
                                size_t len);
ushmem_status_t ushmemi_ofi_put_nbi(struct ushmemi_transport *t, int pe, uint64_t offset,
                                    const void *src, size_t len);
ushmem_status_t ushmemi_ofi_get_nbi(struct ushmemi_transport *t, int pe, void *dst,
                                    uint64_t offset, size_t len);
ushmem_status_t ushmemi_ofi_fence(struct ushmemi_transport *t);
ushmem_status_t ushmemi_ofi_quiet(struct ushmemi_transport *t);

/* Landing (ofi_am.c). */
/* True when an operation on [sym] of pe travels as a message. */
static inline bool ushmemi_ofi_lands(const struct ushmemi_transport *t, int pe, uint64_t sym)
{
    return t->peers[pe].heap_landing && ushmemi_sym_segment(sym) == USHMEMI_SEG_HEAP;
}
/* Allocates and registers the message buffers, when params->heap_landing. */
ushmem_status_t ushmemi_ofi_am_setup(struct ushmemi_transport *t,
                                     const struct ushmemi_transport_params *params);
/* Posts every receive buffer; after the peers' addresses are in the AV. */
ushmem_status_t ushmemi_ofi_am_start(struct ushmemi_transport *t);
/* The landed heap grew to new_size bytes (ofi_heap_grow). */
void ushmemi_ofi_am_heap_grown(struct ushmemi_transport *t, size_t new_size);
/* Frees the buffers; after the endpoint is closed. */
void ushmemi_ofi_am_release(struct ushmemi_transport *t);
/* A landing completion (role AM_SEND or AM_RECV) read from the CQ. */
void ushmemi_ofi_am_completed(struct ushmemi_transport *t, struct ofi_op *ctx, int fi_err);
/* Lands the requests that have arrived and reposts their buffers; on the
 * progress thread only. Returns how many buffers it handled. */
int ushmemi_ofi_am_serve(struct ushmemi_transport *t);
/* While a spinning helper thread has nothing to do: every period, a
 * header-only message to each peer with a landing request in the window,
 * so that the fabric's path from that thread stays warm (ofi_am.c). who:
 * the progress thread or the proxy's, each with a tick of its own. */
enum ushmemi_ofi_warmer { USHMEMI_OFI_WARM_PROGRESS, USHMEMI_OFI_WARM_PROXY, USHMEMI_OFI_WARMERS };
void ushmemi_ofi_am_keep_warm(struct ushmemi_transport *t, enum ushmemi_ofi_warmer who);
/* The initiator's side: chunks of a put or get as messages (nbi: complete
 * at quiet), and a blocking atomic. The caller checked the range. */
ushmem_status_t ushmemi_ofi_am_rma(struct ushmemi_transport *t, bool put, int pe, uint64_t sym,
                                   void *local, size_t len, bool nbi, const char *what);
ushmem_status_t ushmemi_ofi_am_atomic(struct ushmemi_transport *t, int pe, uint64_t sym,
                                      enum ushmemi_amo_op op, size_t size, const void *operand,
                                      const void *compare, void *result);
/* Called by complete() for a request whose reply arrived or whose send
 * failed: counts it, as every operation is counted once. */
void ushmemi_ofi_complete(struct ushmemi_transport *t, struct ofi_op *op, int fi_err);

/* Fills amo_valid and have_atomics/no_atomic_why from the provider's answers. */
void ushmemi_ofi_atomic_probe(struct ushmemi_transport *t);
ushmem_status_t ushmemi_ofi_atomic(struct ushmemi_transport *t, int pe, uint64_t offset,
                                   enum ushmemi_amo_op op, enum ushmemi_amo_type type,
                                   const void *operand, const void *compare, void *result);

#endif
