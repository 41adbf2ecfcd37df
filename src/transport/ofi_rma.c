/* The ofi transport's data path: operation contexts, the completion queue,
 * progress, the -FI_EAGAIN retry helper, put/get (blocking and nbi), fence
 * and quiet.
 *
 * Completions: every operation carries a context (struct ofi_op) and asks
 * for a CQ entry. A blocking call waits for its own entry; `issued` and
 * `completed` count every operation so that quiet is a comparison of two
 * counters. Whoever reads the CQ (a waiting caller or the progress thread)
 * finishes the entries it reads: an nbi operation is released there, a
 * blocking one is marked done and released by its waiter. */
#include "ofi_private.h"

#include <inttypes.h>
#include <sched.h>
#include <sys/prctl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../common/log.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* PEs are oversubscribed: a waiter yields at once, and sleeps once the wait
 * has lasted long enough that the peer is clearly busy elsewhere. */
struct waiter {
    struct ushmemi_transport *t;
    double start;
};

static struct waiter waiter_start(struct ushmemi_transport *t)
{
    return (struct waiter){.t = t, .start = now_s()};
}

/* The nap of the progress thread, and of a waiter where yields cost a slice. */
static void nap(void)
{
    struct timespec ts = {0, OFI_PROGRESS_NAP_NS};
    nanosleep(&ts, NULL);
}

void ushmemi_ofi_yield(struct ushmemi_transport *t)
{
    /* Where cores are shared (params.cores_shared), a yield beside a busy
     * thread gives it the CPU for a whole scheduler slice (EEVDF) rather
     * than to the peer: after a yield that took that long, this thread
     * naps instead for a while. Beside other waiting PEs a yield is
     * cheaper than a nap, so it stays the first choice. */
    static _Thread_local double costly_until;
    if (!t->cores_shared) {
        sched_yield();
        return;
    }
    double before = now_s();
    if (before < costly_until) {
        nap();
        return;
    }
    sched_yield();
    if (now_s() - before > OFI_SLOW_YIELD_S)
        costly_until = before + OFI_COSTLY_S;
}

static void backoff(struct waiter *w)
{
    if (now_s() - w->start < OFI_PROGRESS_HOT_S) {
        ushmemi_ofi_yield(w->t);
    } else {
        struct timespec ts = {0, 50 * 1000};
        nanosleep(&ts, NULL);
    }
}

static void release_slot(struct ushmemi_transport *t, int slot)
{
    pthread_mutex_lock(&t->slot_lock);
    t->free_slots[t->nfree_slots++] = slot;
    pthread_mutex_unlock(&t->slot_lock);
}

/* Returns a free bounce slot or -1. */
static int take_slot(struct ushmemi_transport *t)
{
    int slot = -1;
    pthread_mutex_lock(&t->slot_lock);
    if (t->nfree_slots > 0)
        slot = t->free_slots[--t->nfree_slots];
    pthread_mutex_unlock(&t->slot_lock);
    return slot;
}

struct ofi_op *ushmemi_ofi_op_new(const char *what, int pe, bool nbi)
{
    struct ofi_op *op = calloc(1, sizeof(*op));
    if (op == NULL) {
        ushmemi_error("ofi %s to PE %d: out of memory for an operation context", what, pe);
        return NULL;
    }
    atomic_init(&op->state, OFI_OP_PENDING);
    op->nbi = nbi;
    op->slot = -1;
    op->what = what;
    op->pe = pe;
    return op;
}

void ushmemi_ofi_op_drop(struct ushmemi_transport *t, struct ofi_op *op)
{
    if (op->slot >= 0)
        release_slot(t, op->slot);
    if (op->tmp_mr != NULL)
        fi_close(&op->tmp_mr->fid);
    free(op);
}

void ushmemi_ofi_complete(struct ushmemi_transport *t, struct ofi_op *op, int fi_err)
{
    op->fi_err = fi_err;
    if (op->nbi) {
        if (fi_err != 0) {
            ushmemi_error("ofi %s to PE %d failed: %s", op->what, op->pe, ushmemi_fi.strerror(fi_err));
            int none = 0;
            atomic_compare_exchange_strong(&t->async_error, &none, (int)USHMEM_ERR_TRANSPORT);
        }
        ushmemi_ofi_op_drop(t, op);
    } else {
        int pending = OFI_OP_PENDING;
        /* After this exchange the waiter owns op and may free it. */
        if (!atomic_compare_exchange_strong(&op->state, &pending, OFI_OP_DONE))
            ushmemi_ofi_op_drop(t, op); /* its waiter gave up */
    }
    atomic_fetch_add(&t->completed, 1);
}

/* One completion: landing's message buffers go to ofi_am.c. */
static void finish(struct ushmemi_transport *t, struct ofi_op *op, int fi_err)
{
    if (op->role == OFI_ROLE_OP)
        ushmemi_ofi_complete(t, op, fi_err);
    else
        ushmemi_ofi_am_completed(t, op, fi_err);
}

/* Finishes what one CQ read returned: n entries, or the error entry when n
 * is -FI_EAVAIL. Returns how many operations it finished. */
static int handle(struct ushmemi_transport *t, const struct fi_cq_entry *entries, ssize_t n)
{
    if (n > 0) {
        for (ssize_t i = 0; i < n; i++) {
            if (entries[i].op_context != NULL)
                finish(t, entries[i].op_context, 0);
        }
        return (int)n;
    }
    if (n == -FI_EAVAIL) {
        struct fi_cq_err_entry err;
        memset(&err, 0, sizeof(err));
        if (fi_cq_readerr(t->cq, &err, 0) > 0 && err.op_context != NULL) {
            struct ofi_op *op = err.op_context;
            ushmemi_debug("ofi %s to PE %d: completion error %s (provider: %s)", op->what, op->pe,
                          ushmemi_fi.strerror(err.err),
                          fi_cq_strerror(t->cq, err.prov_errno, err.err_data, NULL, 0));
            finish(t, op, err.err != 0 ? err.err : FI_EIO);
            return 1;
        }
    }
    return 0;
}

int ushmemi_ofi_progress(struct ushmemi_transport *t)
{
    struct fi_cq_entry entries[16];
    /* Reading the queue is what moves data with manual progress, a peer's
     * into this PE's heap included. */
    void *saved = ushmemi_ofi_enter(t);
    ssize_t n = fi_cq_read(t->cq, entries, 16);
    ushmemi_ofi_leave(t, saved);
    return handle(t, entries, n);
}

void *ushmemi_ofi_progress_main(void *arg)
{
    struct ushmemi_transport *t = arg;
    double last_busy = now_s();

    /* Providers with manual data progress (tcp, shm, udp) move a peer's put
     * into our heap only while someone here calls into them; this thread is
     * that someone while the PE computes or waits elsewhere. A peer's put or
     * get leaves no completion here, so the thread cannot tell a busy target
     * from an idle one: it naps a short, fixed time (with a tight timer
     * slack, so that the nap is what is asked) and polls with sched_yield
     * only after completions of its own. A PE waiting for a peer's write
     * calls in itself (the transport's progress op, from the host's wait
     * loops), which is what makes barriers and waits over the fabric fast. */
    prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
    while (!atomic_load_explicit(&t->stop, memory_order_relaxed)) {
        /* Landing: requests for this PE's heap wait for this thread. */
        if (ushmemi_ofi_progress(t) + ushmemi_ofi_am_serve(t) > 0) {
            last_busy = now_s();
            continue;
        }
        if (t->idle_spin) {
            /* USHMEM_PROXY_IDLE: awake whatever the quiet spell, and the
             * fabric's path to landing peers too. */
            ushmemi_ofi_am_keep_warm(t, USHMEMI_OFI_WARM_PROGRESS);
            continue;
        } else if (now_s() - last_busy < OFI_PROGRESS_HOT_S) {
            ushmemi_ofi_yield(t);
        } else {
            nap();
        }
    }
    return NULL;
}

ushmem_status_t ushmemi_ofi_status(int fi_rc)
{
    switch (-fi_rc) {
    case 0:
        return USHMEM_OK;
    case FI_ENOMEM:
        return USHMEM_ERR_NO_MEMORY;
    case FI_EINVAL:
    case FI_EBADF:
    case FI_EMSGSIZE:
        return USHMEM_ERR_INVALID_PARAM;
    case FI_ENOSYS:
    case FI_EOPNOTSUPP:
    case FI_ENODATA:
    case FI_ENOPROTOOPT:
        return USHMEM_ERR_UNSUPPORTED;
    case FI_EACCES:
    case FI_EPERM:
    case FI_EKEYREJECTED:
        return USHMEM_ERR_PERMISSION;
    case FI_ETIMEDOUT:
        return USHMEM_ERR_TIMEOUT;
    case FI_EAGAIN:
    case FI_EBUSY:
        return USHMEM_ERR_BUSY;
    default:
        return USHMEM_ERR_TRANSPORT;
    }
}

const struct ofi_remote_chunk *ushmemi_ofi_remote_chunk(const struct ushmemi_transport *t, int pe,
                                                        uint64_t offset)
{
    /* The count first: whoever published it wrote the entries before it. */
    size_t n = atomic_load_explicit(&t->nchunks, memory_order_acquire);
    const struct ofi_chunks *c = atomic_load_explicit(&t->chunks, memory_order_acquire);
    const struct ofi_remote_chunk *row = c->remote + (size_t)pe * c->cap;
    /* The range was checked, so the last chunk needs no test. */
    for (size_t i = 0; i + 1 < n; i++)
        if (offset - row[i].offset < row[i].size)
            return &row[i];
    return &row[n - 1];
}

const struct ofi_local_chunk *ushmemi_ofi_local_chunk(const struct ushmemi_transport *t,
                                                      uint64_t offset)
{
    size_t n = atomic_load_explicit(&t->nchunks, memory_order_acquire);
    const struct ofi_chunks *c = atomic_load_explicit(&t->chunks, memory_order_acquire);
    for (size_t i = 0; i < n; i++)
        if (offset - c->local[i].offset < c->local[i].size)
            return &c->local[i];
    return NULL;
}

size_t ushmemi_ofi_remote_run(const struct ushmemi_transport *t, int pe, uint64_t sym, size_t len)
{
    if (!t->chunked || ushmemi_sym_segment(sym) != USHMEMI_SEG_HEAP)
        return len;
    uint64_t offset = ushmemi_sym_in_segment(sym);
    const struct ofi_remote_chunk *c = ushmemi_ofi_remote_chunk(t, pe, offset);
    uint64_t room = c->offset + c->size - offset;
    return len < room ? len : (size_t)room;
}

void ushmemi_ofi_target(const struct ushmemi_transport *t, int pe, uint64_t sym,
                        uint64_t *raddr_p, uint64_t *key_p)
{
    unsigned s = ushmemi_sym_segment(sym);
    uint64_t offset = ushmemi_sym_in_segment(sym);
    if (t->chunked && s == USHMEMI_SEG_HEAP) {
        /* Without FI_MR_VIRT_ADDR an offset counts from the chunk's own
         * registration. */
        const struct ofi_remote_chunk *c = ushmemi_ofi_remote_chunk(t, pe, offset);
        *raddr_p = t->virt_addr ? c->base + (offset - c->offset) : offset - c->offset;
        *key_p = c->key;
        return;
    }
    const struct ofi_remote_seg *seg = &t->peers[pe].seg[s];
    /* Without FI_MR_VIRT_ADDR an offset counts from the registration's
     * start, `skip` bytes into the segment (ushmemi_ofi_check_range keeps
     * offsets below it out). */
    *raddr_p = t->virt_addr ? seg->base + offset : offset - seg->skip;
    *key_p = seg->key;
}

ushmem_status_t ushmemi_ofi_check_range(const struct ushmemi_transport *t, const char *what, int pe,
                                        uint64_t sym, size_t len)
{
    if (pe < 0 || pe >= t->size) {
        ushmemi_error("ofi %s: PE %d is not in 0..%d", what, pe, t->size - 1);
        return USHMEM_ERR_INVALID_PARAM;
    }
    unsigned seg = ushmemi_sym_segment(sym);
    uint64_t offset = ushmemi_sym_in_segment(sym);
    const char *name = seg == USHMEMI_SEG_HEAP ? "heap" : "data segment";
    if (seg >= USHMEMI_SEG_COUNT) {
        ushmemi_error("ofi %s to PE %d: symmetric offset 0x%llx names no segment", what, pe,
                      (unsigned long long)sym);
        return USHMEM_ERR_OUT_OF_RANGE;
    }
    uint64_t size = t->peers[pe].seg[seg].size;
    if (offset < t->peers[pe].seg[seg].skip) {
        ushmemi_error("ofi %s to PE %d: offset %llu of its %s is in the part before its first "
                      "symmetric object (relocation targets, %llu bytes), which is not remotely "
                      "accessible", what, pe, (unsigned long long)offset, name,
                      (unsigned long long)t->peers[pe].seg[seg].skip);
        return USHMEM_ERR_OUT_OF_RANGE;
    }
    if (offset > size || len > size - offset) {
        ushmemi_error("ofi %s to PE %d: offset %llu + %zu bytes is outside its %llu-byte %s", what,
                      pe, (unsigned long long)offset, len, (unsigned long long)size, name);
        return USHMEM_ERR_OUT_OF_RANGE;
    }
    return USHMEM_OK;
}

static ssize_t issue_once(struct ushmemi_transport *t, const struct ofi_xfer *x)
{
    fi_addr_t dest = t->addrs[x->pe];
    uint64_t raddr, key;
    ushmemi_ofi_target(t, x->pe, x->offset, &raddr, &key);

    /* Writes ask for delivery completion: their completion must mean the
     * data is in the peer's heap (blocking put, quiet), not merely that the
     * source is free again. Reads and (always fetching) atomics complete
     * when the data is back, which is later still. */
    struct fi_rma_iov rma = {.addr = raddr, .len = x->len, .key = key};
    struct iovec iov = {.iov_base = x->local, .iov_len = x->len};
    void *desc = x->desc;

    switch (x->kind) {
    case OFI_X_WRITE: {
        struct fi_msg_rma msg = {.msg_iov = &iov, .desc = &desc, .iov_count = 1, .addr = dest,
                                 .rma_iov = &rma, .rma_iov_count = 1, .context = x->op};
        return fi_writemsg(t->ep, &msg, FI_COMPLETION | FI_DELIVERY_COMPLETE);
    }
    case OFI_X_READ:
        return fi_read(t->ep, x->local, x->len, x->desc, dest, raddr, key, x->op);
    case OFI_X_FETCH:
        return fi_fetch_atomic(t->ep, x->local, 1, x->desc, x->result, x->result_desc, dest, raddr,
                               key, x->datatype, x->amo, x->op);
    case OFI_X_COMPARE:
        return fi_compare_atomic(t->ep, x->local, 1, x->desc, x->compare, x->compare_desc,
                                 x->result, x->result_desc, dest, raddr, key, x->datatype, x->amo,
                                 x->op);
    }
    return -FI_EINVAL;
}

ushmem_status_t ushmemi_ofi_issue(struct ushmemi_transport *t, const struct ofi_xfer *x,
                                  const char *what)
{
    double deadline = now_s() + OFI_OP_TIMEOUT_S;
    struct waiter w = waiter_start(t);

    for (;;) {
        void *saved = ushmemi_ofi_enter(t);
        ssize_t rc = issue_once(t, x);
        ushmemi_ofi_leave(t, saved);
        if (rc == 0) {
            atomic_fetch_add(&t->issued, 1);
            return USHMEM_OK;
        }
        if (rc != -FI_EAGAIN) {
            ushmemi_error("ofi %s to PE %d (%zu bytes at offset %llu) failed to start: %s", what,
                          x->pe, x->len, (unsigned long long)x->offset, ushmemi_fi.strerror((int)-rc));
            return ushmemi_ofi_status((int)rc);
        }
        /* The send queue is full: completing earlier operations frees it. */
        ushmemi_ofi_progress(t);
        if (now_s() > deadline) {
            ushmemi_error("ofi %s to PE %d: the provider refused it (-FI_EAGAIN) for %.0f s; "
                          "the peer makes no progress", what, x->pe, OFI_OP_TIMEOUT_S);
            return USHMEM_ERR_TIMEOUT;
        }
        backoff(&w);
    }
}

ushmem_status_t ushmemi_ofi_op_wait(struct ushmemi_transport *t, struct ofi_op *op)
{
    return ushmemi_ofi_op_wait_old(t, op, NULL);
}

ushmem_status_t ushmemi_ofi_op_wait_old(struct ushmemi_transport *t, struct ofi_op *op,
                                        uint64_t *old_p)
{
    double deadline = now_s() + OFI_OP_TIMEOUT_S;
    struct waiter w = waiter_start(t);

    while (atomic_load(&op->state) != OFI_OP_DONE) {
        if (ushmemi_ofi_progress(t) > 0)
            continue;
        if (now_s() > deadline) {
            int pending = OFI_OP_PENDING;
            if (atomic_compare_exchange_strong(&op->state, &pending, OFI_OP_ORPHAN)) {
                /* The completion path releases it if it ever comes. */
                ushmemi_error("ofi %s to PE %d: no completion after %.0f s", op->what, op->pe,
                              OFI_OP_TIMEOUT_S);
                return USHMEM_ERR_TIMEOUT;
            }
            break; /* it completed just now */
        }
        backoff(&w);
    }
    int fi_err = op->fi_err;
    if (old_p != NULL)
        *old_p = op->am_old;
    if (fi_err != 0)
        ushmemi_error("ofi %s to PE %d failed: %s", op->what, op->pe, ushmemi_fi.strerror(fi_err));
    ushmemi_ofi_op_drop(t, op);
    return fi_err != 0 ? ushmemi_ofi_status(-fi_err) : USHMEM_OK;
}

/* Where the local buffer at p lies in this PE's heap: its offset there, or
 * false when it starts outside it. */
static bool in_heap(const struct ushmemi_transport *t, const char *p, uint64_t *offset_p)
{
    const struct ofi_local_seg *heap = &t->seg[USHMEMI_SEG_HEAP];
    if (p < heap->base || (size_t)(p - heap->base) >= heap->size)
        return false;
    *offset_p = (uint64_t)(p - heap->base);
    return true;
}

/* How many of the len bytes at local buffer p one transfer may cover: up
 * to the end of the local heap chunk holding p, so that one descriptor
 * covers them; len when the heap is one registration or p is elsewhere. */
static size_t local_run(const struct ushmemi_transport *t, const char *p, size_t len)
{
    uint64_t offset;
    if (!t->chunked || !in_heap(t, p, &offset))
        return len;
    const struct ofi_local_chunk *c = ushmemi_ofi_local_chunk(t, offset);
    if (c == NULL)
        return len;
    uint64_t room = c->offset + c->size - offset;
    return len < room ? len : (size_t)room;
}

/* The descriptor of the local heap chunk that holds all of [p, p + len). */
static bool chunk_desc(const struct ushmemi_transport *t, const char *p, size_t len,
                       void **desc_p)
{
    uint64_t offset;
    if (!in_heap(t, p, &offset))
        return false;
    const struct ofi_local_chunk *c = ushmemi_ofi_local_chunk(t, offset);
    if (c == NULL || len > c->offset + c->size - offset)
        return false;
    *desc_p = c->desc;
    return true;
}

/* Descriptor of a local buffer: the heap's (its chunk's) or the scratch
 * area's when it lies inside one, NULL when the provider needs none, else a
 * registration made for this operation (kept in op and closed when it
 * ends). */
static ushmem_status_t local_desc(struct ushmemi_transport *t, struct ofi_op *op, void *buf,
                                  size_t len, uint64_t access, void **desc_p)
{
    char *p = buf;
    uint64_t offset;
    if (t->chunked && chunk_desc(t, p, len, desc_p))
        return USHMEM_OK;
    /* A range of a heap registered per chunk is cut at the chunks' ends
     * before it gets here (local_run): one that is not would go without
     * its registration, and the provider would read device memory as host
     * memory. */
    if (t->chunked && in_heap(t, p, &offset)) {
        ushmemi_error("ofi transfer on PE %d: %zu bytes at %p (heap offset 0x%" PRIx64 ") are "
                      "not inside one registered chunk of the heap: refused", t->rank, len, buf,
                      offset);
        return USHMEM_ERR_TRANSPORT;
    }
    for (int i = 0; i < USHMEMI_SEG_COUNT; i++) {
        const struct ofi_local_seg *seg = &t->seg[i];
        if (t->chunked && i == USHMEMI_SEG_HEAP)
            continue; /* its one registration covers chunk 0 only */
        char *reg = seg->base + seg->skip; /* the registered part */
        size_t reg_size = seg->size - seg->skip;
        if (reg_size != 0 && p >= reg && len <= reg_size && (size_t)(p - reg) <= reg_size - len) {
            *desc_p = seg->desc;
            return USHMEM_OK;
        }
    }
    if (p >= t->scratch && p + len <= t->scratch + t->scratch_size) {
        *desc_p = t->scratch_desc;
        return USHMEM_OK;
    }
    /* Where the fabric takes device memory (FI_HMEM), a device buffer
     * outside the heap needs a registration of its own whatever the
     * provider's mode: without a descriptor the provider reads it as host
     * memory, on the CPU (shm crashed so on a cudaMalloc buffer). */
    struct ushmemi_ptr_attr attr;
    bool device = t->heap_is_device && !t->peers[t->rank].heap_landing && t->dev_ops != NULL &&
                  t->dev_ops->pointer_query(t->dev, buf, &attr) == USHMEM_OK &&
                  attr.kind == USHMEMI_MEM_DEVICE;
    if (!t->mr_local && !device) {
        *desc_p = NULL;
        return USHMEM_OK;
    }
    struct fid_mr *mr;
    ushmem_status_t status;
    if (device) {
        void *saved = ushmemi_ofi_enter(t);
        status = ushmemi_ofi_reg_device(t, "transfer", buf, len, access, &mr);
        ushmemi_ofi_leave(t, saved);
    } else {
        status = ushmemi_ofi_reg(t, buf, len, access, &mr);
    }
    if (status != USHMEM_OK)
        return status;
    op->tmp_mr = mr;
    *desc_p = fi_mr_desc(mr);
    return USHMEM_OK;
}

/* One transfer of at most max_msg bytes; waits for it unless nbi. */
static ushmem_status_t xfer_one(struct ushmemi_transport *t, enum ofi_xfer_kind kind, int pe,
                                uint64_t offset, void *local, size_t len, bool nbi,
                                const char *what)
{
    struct ofi_op *op = ushmemi_ofi_op_new(what, pe, nbi);
    if (op == NULL)
        return USHMEM_ERR_NO_MEMORY;
    struct ofi_xfer x = {.kind = kind, .pe = pe, .offset = offset, .local = local, .len = len,
                         .op = op};
    uint64_t access = kind == OFI_X_WRITE ? FI_WRITE : FI_READ;
    ushmem_status_t status = local_desc(t, op, local, len, access, &x.desc);
    if (status != USHMEM_OK)
        goto drop_op;
    status = ushmemi_ofi_issue(t, &x, what);
    if (status != USHMEM_OK)
        goto drop_op;
    return nbi ? USHMEM_OK : ushmemi_ofi_op_wait(t, op);

drop_op:
    ushmemi_ofi_op_drop(t, op);
    return status;
}

static ushmem_status_t xfer(struct ushmemi_transport *t, enum ofi_xfer_kind kind, int pe,
                            uint64_t offset, void *local, size_t len, bool nbi, const char *what)
{
    ushmem_status_t status = ushmemi_ofi_check_range(t, what, pe, offset, len);
    if (status == USHMEM_OK && ushmemi_ofi_lands(t, pe, offset))
        return ushmemi_ofi_am_rma(t, kind == OFI_X_WRITE, pe, offset, local, len, nbi, what);
    /* A provider's max_msg_size bounds one call, and one registration one
     * transfer: where the heap is registered per chunk, a transfer that
     * crosses a chunk of the peer's heap or of ours is split there. */
    for (size_t done = 0; status == USHMEM_OK && done < len;) {
        size_t n = len - done < t->max_msg ? len - done : t->max_msg;
        n = ushmemi_ofi_remote_run(t, pe, offset + done, n);
        n = local_run(t, (char *)local + done, n);
        status = xfer_one(t, kind, pe, offset + done, (char *)local + done, n, nbi, what);
        done += n;
    }
    return status;
}

ushmem_status_t ushmemi_ofi_put(struct ushmemi_transport *t, int pe, uint64_t offset,
                                const void *src, size_t len)
{
    /* libfabric's fi_write takes a non-const buffer but only reads it. */
    return xfer(t, OFI_X_WRITE, pe, offset, (void *)(uintptr_t)src, len, false, "put");
}

ushmem_status_t ushmemi_ofi_get(struct ushmemi_transport *t, int pe, void *dst, uint64_t offset,
                                size_t len)
{
    return xfer(t, OFI_X_READ, pe, offset, dst, len, false, "get");
}

ushmem_status_t ushmemi_ofi_put_nbi(struct ushmemi_transport *t, int pe, uint64_t offset,
                                    const void *src, size_t len)
{
    /* The caller may reuse src at once. Small payloads are copied into a
     * registered bounce slot; larger ones, and any payload when the heap is
     * device memory (which the CPU must not copy), wait for completion
     * here: a put_nbi is allowed to complete early. */
    if (len > OFI_NBI_SLOT_SIZE || t->heap_is_device || len == 0)
        return ushmemi_ofi_put(t, pe, offset, src, len);

    ushmem_status_t status = ushmemi_ofi_check_range(t, "put_nbi", pe, offset, len);
    if (status != USHMEM_OK)
        return status;
    /* Landing copies the payload into its message buffer: src is free at once. */
    if (ushmemi_ofi_lands(t, pe, offset))
        return ushmemi_ofi_am_rma(t, true, pe, offset, (void *)(uintptr_t)src, len, true,
                                  "put_nbi");
    /* A bounce slot carries one transfer: one that crosses two chunks of
     * the peer's heap goes as a put (split there) and completes early. */
    if (ushmemi_ofi_remote_run(t, pe, offset, len) < len)
        return ushmemi_ofi_put(t, pe, offset, src, len);
    int slot = take_slot(t);
    double deadline = now_s() + OFI_OP_TIMEOUT_S;
    struct waiter w = waiter_start(t);
    while (slot < 0) {
        if (ushmemi_ofi_progress(t) == 0) {
            if (now_s() > deadline) {
                ushmemi_error("ofi put_nbi to PE %d: no bounce slot freed in %.0f s", pe,
                              OFI_OP_TIMEOUT_S);
                return USHMEM_ERR_TIMEOUT;
            }
            backoff(&w);
        }
        slot = take_slot(t);
    }
    struct ofi_op *op = ushmemi_ofi_op_new("put_nbi", pe, true);
    if (op == NULL) {
        release_slot(t, slot);
        return USHMEM_ERR_NO_MEMORY;
    }
    op->slot = slot;
    char *bounce = t->scratch + (size_t)slot * OFI_NBI_SLOT_SIZE;
    memcpy(bounce, src, len);
    struct ofi_xfer x = {.kind = OFI_X_WRITE, .pe = pe, .offset = offset, .local = bounce,
                         .len = len, .desc = t->scratch_desc, .op = op};
    status = ushmemi_ofi_issue(t, &x, "put_nbi");
    if (status != USHMEM_OK)
        ushmemi_ofi_op_drop(t, op);
    return status;
}

ushmem_status_t ushmemi_ofi_get_nbi(struct ushmemi_transport *t, int pe, void *dst,
                                    uint64_t offset, size_t len)
{
    return xfer(t, OFI_X_READ, pe, offset, dst, len, true, "get_nbi");
}

ushmem_status_t ushmemi_ofi_quiet(struct ushmemi_transport *t)
{
    /* Operations issued after this snapshot (by other threads) are not ours
     * to wait for; every earlier one has completed once the count reaches
     * it, since each is counted once whether it succeeded or failed. */
    uint64_t target = atomic_load(&t->issued);
    double deadline = now_s() + OFI_OP_TIMEOUT_S;
    struct waiter w = waiter_start(t);

    while (atomic_load(&t->completed) < target) {
        if (ushmemi_ofi_progress(t) > 0)
            continue;
        if (now_s() > deadline) {
            ushmemi_error("ofi quiet on PE %d: %llu operations still incomplete after %.0f s",
                          t->rank, (unsigned long long)(target - atomic_load(&t->completed)),
                          OFI_OP_TIMEOUT_S);
            return USHMEM_ERR_TIMEOUT;
        }
        backoff(&w);
    }
    /* An nbi failure was logged when its completion arrived; quiet reports it. */
    int err = atomic_exchange(&t->async_error, 0);
    return err != 0 ? (ushmem_status_t)err : USHMEM_OK;
}

ushmem_status_t ushmemi_ofi_fence(struct ushmemi_transport *t)
{
    /* A fence is a quiet here: not every provider orders writes (FI_FENCE
     * needs fi_writemsg and is optional), and atomics are blocking anyway,
     * so waiting for completion is the one ordering every provider gives. */
    return ushmemi_ofi_quiet(t);
}
