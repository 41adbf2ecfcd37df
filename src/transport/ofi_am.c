/* Landing: peers' operations on a heap that only the device may touch.
 *
 * A heap in GPU memory can be written by a fabric only through GPU-RMA
 * (FI_HMEM), and never by a CPU. Without GPU-RMA, an initiator sends each
 * put, get or atomic on such a heap as a message to the PE that owns it; that
 * PE's progress thread lands it with its own device backend (a copy-engine
 * copy, or the atomic kernel) and answers: an ack for a put, the bytes for a
 * get, the old value for an atomic. Nothing but the owner's device touches
 * the heap, and nothing but host buffers crosses the fabric.
 *
 * Buffers: every PE posts receive buffers of OFI_AM_BUF bytes (header and a
 * chunk); a request is one chunk. An initiator keeps at most `credits`
 * requests in flight to one PE and gets a credit back with the reply, so a
 * PE never receives more than credits requests from each PE plus the
 * replies to its own requests: twice credits per PE, and a little slack for
 * buffers not yet reposted, is enough up to OFI_AM_RECVS_MAX buffers; in
 * larger jobs the provider holds what finds no buffer as an unexpected
 * message until one is reposted, so memory stays bounded.
 *
 * Replies are finished where the completion is read (a copy into host
 * memory); requests wait in the ready queue for the progress thread, the
 * one thread that lands them, so that no caller reading the CQ ever runs a
 * device copy inside it.
 *
 * Completion: a request is an operation like any other (counted as issued
 * when sent, completed when its reply arrives), so quiet and fence cover
 * landed puts; a put's ack is sent only after the copy has landed.
 *
 * Keeping the path warm: a fabric's message after a quiet spell takes
 * several times one sent back to back, whoever spins meanwhile (tcp on
 * two H200s' host: 7 us back to back, 18 after 1 ms, 43 after 10 ms, 60
 * after 100 ms; test/perf/fabric_floor), and a message every half
 * millisecond keeps it near the first. Where the progress thread spins
 * (USHMEM_PROXY_IDLE), it sends a header-only AM_WARM every WARM_EVERY_S
 * to each peer that this PE sent a request to or landed one from in the
 * last WARM_WINDOW_S, at most WARM_PEERS_MAX peers a tick, round robin;
 * the peer only reposts the buffer. At most one a thread is in flight to
 * a peer (until its send completes): a PE receives at most two a peer
 * every WARM_EVERY_S, outside the budget above (a PE whose progress thread
 * stalls holds those that find no buffer as unexpected messages, for the
 * window at most). The proxy thread, which sends the
 * requests of kernels, does the same from its own CPU when it spins idle
 * (the transport's keep_warm): a path is warm for the thread that used it.
 * On two H200s a kernel's landing `p` right after 100 ms of compute took
 * 123-138 us cold, 83-100 kept warm by the progress thread alone, 63-69 by
 * both (back to back: 40-57), and the fabric's own message after 10 ms
 * went from 4.5 to 1.3 times back to back. */
#include "ofi_private.h"

#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../common/log.h"

enum am_kind {
    AM_NONE = 0, /* a buffer only to repost */
    AM_PUT,
    AM_GET,
    AM_AMO,
    AM_ACK,   /* reply to a put */
    AM_REPLY, /* reply to a get (the bytes) or an atomic (the old value, 8 bytes) */
    AM_WARM,  /* keeps the path warm: only reposted */
};

struct am_hdr {
    uint8_t kind;     /* enum am_kind */
    uint8_t amo_op;   /* enum ushmemi_amo_op == enum ushmem_ring_amo_op */
    uint8_t amo_size; /* 4 or 8 */
    uint8_t reserved;
    int32_t status;   /* replies: how the landing went (ushmem_status_t) */
    int32_t from;     /* the sender's PE */
    uint32_t len;     /* payload bytes; for a get, the bytes asked for */
    uint64_t offset;  /* heap offset */
    uint64_t cookie;  /* the initiator's operation, echoed in the reply */
    uint64_t operand, compare;
    /* Replies with SHMEM_DEBUG: how long the request stayed at the
     * target, from its arrival (the completion read) to the reply's send,
     * in ns; 0 otherwise. */
    uint32_t resident_ns;
};
_Static_assert(sizeof(struct am_hdr) <= OFI_AM_HDR, "the header fits its room");
_Static_assert(USHMEMI_AMO_XOR == 7 && USHMEMI_AMO_CSWAP == 3,
               "transport atomics are numbered as the device backend's");

struct ofi_am {
    bool landing; /* this PE's heap is reached through messages */
    const struct ushmemi_device_ops *dev_ops;
    struct ushmemi_device *dev;
    char *heap;
    size_t heap_size;
    int credits;
    _Atomic int *inflight; /* requests in flight per PE */

    int nrecv;
    char *recv_slab;
    struct fid_mr *recv_mr;
    void *recv_desc;
    struct ofi_op *recv_ctx;
    pthread_mutex_t ready_lock; /* the ready queue: buffers for the progress thread */
    int *ready;
    int ready_head, ready_count;

    char *send_slab;
    struct fid_mr *send_mr;
    void *send_desc;
    struct ofi_op send_ctx[OFI_AM_SENDS];
    pthread_mutex_t send_lock;
    int free_send[OFI_AM_SENDS];
    int nfree_send;
    /* With SHMEM_DEBUG, what landing took on the device (the copy and its
     * wait, or the atomic), printed at release: every request, and those
     * that came after a quiet spell of LAND_QUIET_S or more without one
     * (which tells a device that went idle from a slow fabric). Only the
     * progress thread lands, so plain counters. */
    bool timed;
    double last_land;
    uint64_t lands, quiet_lands;
    double land_s, quiet_land_s, slowest_s;
    /* And, on the initiator, each request's round trip, from its send to
     * its reply's completion, split into the time at the target (the
     * reply says it) and the rest, on the fabric both ways: every
     * request, and those sent LAND_QUIET_S or more after the one before.
     * Replies are finished by whichever thread reads the CQ: under the
     * lock. recv_at: when each receive buffer's request arrived. */
    pthread_mutex_t trip_lock;
    double last_sent;
    uint64_t trips[2];
    double trip_s[2], trip_target_s[2];
    double *recv_at;
    /* On a landing PE the slabs are the device backend's pinned host
     * memory (host_alloc), so that a landing copy from or to them is the
     * copy engine's own, with no staging through a driver buffer: about
     * 0.6 us less device work a put and 1.2 to 2.8 a get on two H200s
     * (docs/performance/proxy.md); plain memory where host_alloc fails. */
    bool slabs_pinned;
    size_t recv_bytes, send_bytes;
    /* Keeping the path warm (ushmemi_ofi_am_keep_warm): the period (0:
     * off) and the window after a peer's last request; when each peer last
     * had one from or to this PE (CLOCK_MONOTONIC ns, any thread; 0:
     * never); and for each thread that keeps it warm, its own next tick,
     * round robin's next peer and count of messages sent. */
    double warm_every_s, warm_window_s;
    bool warm_proxy; /* the proxy's thread too (USHMEMI_FABRIC_WARM_PROXY) */
    _Atomic uint64_t *used_ns;
    _Atomic int *warm_pending; /* per peer: sends not yet completed */
    struct {
        double next;
        int next_pe;
        uint64_t sent;
    } warmer[USHMEMI_OFI_WARMERS];
};
#define LAND_QUIET_S 1e-3
#define WARM_EVERY_S 500e-6
#define WARM_WINDOW_S 10.0
#define WARM_PEERS_MAX 4
static const char warm_what[] = "landing keep-warm";

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* A request went to or came from pe now: its path stays warm a while. */
static void mark_used(struct ofi_am *am, int pe)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    atomic_store_explicit(&am->used_ns[pe], (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec,
                          memory_order_relaxed);
}

/* A setting in ms or us of an internal variable (a measurement and test
 * switch), or def where unset or not a number of 0 or more. */
static double env_seconds(const char *name, double unit, double def)
{
    const char *v = getenv(name);
    char *end;
    double x = v != NULL ? strtod(v, &end) : -1;
    return v != NULL && end != v && *end == '\0' && x >= 0 ? x * unit : def;
}

/* Progress while waiting for room; false once the operation timeout passed. */
static bool wait_a_little(struct ushmemi_transport *t, double start)
{
    if (ushmemi_ofi_progress(t) > 0)
        return true;
    double waited = now_s() - start;
    if (waited > OFI_OP_TIMEOUT_S)
        return false;
    if (waited < OFI_PROGRESS_HOT_S) {
        ushmemi_ofi_yield(t);
    } else {
        struct timespec ts = {0, 50 * 1000};
        nanosleep(&ts, NULL);
    }
    return true;
}

static char *recv_buf(const struct ofi_am *am, int b)
{
    return am->recv_slab + (size_t)b * OFI_AM_BUF;
}

static char *send_buf(const struct ofi_am *am, int s)
{
    return am->send_slab + (size_t)s * OFI_AM_BUF;
}

static void push_ready(struct ofi_am *am, int b)
{
    pthread_mutex_lock(&am->ready_lock);
    am->ready[(am->ready_head + am->ready_count++) % am->nrecv] = b;
    pthread_mutex_unlock(&am->ready_lock);
}

static int pop_ready(struct ofi_am *am)
{
    int b = -1;
    pthread_mutex_lock(&am->ready_lock);
    if (am->ready_count > 0) {
        b = am->ready[am->ready_head];
        am->ready_head = (am->ready_head + 1) % am->nrecv;
        am->ready_count--;
    }
    pthread_mutex_unlock(&am->ready_lock);
    return b;
}

ushmem_status_t ushmemi_ofi_am_setup(struct ushmemi_transport *t,
                                     const struct ushmemi_transport_params *params)
{
    struct ofi_am *am = calloc(1, sizeof(*am));
    if (am == NULL) {
        ushmemi_error("ofi init on PE %d: out of memory for landing", t->rank);
        return USHMEM_ERR_NO_MEMORY;
    }
    t->am = am;
    pthread_mutex_init(&am->ready_lock, NULL);
    pthread_mutex_init(&am->send_lock, NULL);
    pthread_mutex_init(&am->trip_lock, NULL);
    am->landing = params->heap_landing != 0;
    am->timed = ushmemi_log_level >= USHMEMI_LOG_DEBUG;
    am->dev_ops = params->dev_ops;
    am->dev = params->dev;
    am->heap = params->heap;
    am->heap_size = params->heap_size;
    if (am->landing && (am->dev_ops == NULL || am->dev_ops->copy == NULL ||
                        am->dev_ops->sync == NULL || am->dev_ops->amo == NULL)) {
        ushmemi_error("ofi init on PE %d: the heap would land through messages, but device "
                      "backend '%s' has no copy engine or device atomic to land them with",
                      t->rank, am->dev_ops != NULL ? am->dev_ops->name : "none");
        return USHMEM_ERR_UNSUPPORTED;
    }
    /* One device atomic now: a backend that cannot run it says so at init,
     * not at a peer's first atomic (and a driver that loads kernels lazily
     * loads this one before any kernel of the program runs). */
    if (am->landing &&
        am->dev_ops->amo(am->dev, am->heap, USHMEMI_AMO_FETCH, 8, 0, 0, NULL) != USHMEM_OK) {
        ushmemi_error("ofi init on PE %d: peers' atomics on this PE's heap would land through "
                      "the %s backend's device atomic, which it cannot run here (on ze: the "
                      "driver takes no SPIR-V and USHMEM_ZE_KERNELS names no module of the "
                      "backend's kernels)", t->rank,
                      am->dev_ops->name);
        return USHMEM_ERR_UNSUPPORTED;
    }
    int credits = 64 / (t->size > 0 ? t->size : 1);
    am->credits = credits > OFI_AM_CREDITS_MAX   ? OFI_AM_CREDITS_MAX
                  : credits < OFI_AM_CREDITS_MIN ? OFI_AM_CREDITS_MIN
                                                 : credits;
    am->nrecv = 2 * am->credits * t->size + am->credits;
    if (am->nrecv > OFI_AM_RECVS_MAX)
        am->nrecv = OFI_AM_RECVS_MAX;

    am->inflight = calloc((size_t)t->size, sizeof(*am->inflight));
    am->used_ns = calloc((size_t)t->size, sizeof(*am->used_ns));
    am->warm_pending = calloc((size_t)t->size, sizeof(*am->warm_pending));
    /* Only a spinning progress thread keeps the path warm. */
    am->warm_every_s = params->idle_spin ? env_seconds("USHMEMI_FABRIC_WARM_US", 1e-6, WARM_EVERY_S)
                                         : 0;
    am->warm_window_s = env_seconds("USHMEMI_FABRIC_WARM_WINDOW_MS", 1e-3, WARM_WINDOW_S);
    am->warm_proxy = env_seconds("USHMEMI_FABRIC_WARM_PROXY", 1, 1) != 0;
    am->recv_ctx = calloc((size_t)am->nrecv, sizeof(*am->recv_ctx));
    am->ready = calloc((size_t)am->nrecv, sizeof(*am->ready));
    if (am->timed)
        am->recv_at = calloc((size_t)am->nrecv, sizeof(*am->recv_at));
    size_t recv_bytes = (size_t)am->nrecv * OFI_AM_BUF;
    size_t send_bytes = (size_t)OFI_AM_SENDS * OFI_AM_BUF;
    am->recv_bytes = recv_bytes;
    am->send_bytes = send_bytes;
    if (am->landing && am->dev_ops->host_alloc != NULL &&
        am->dev_ops->host_free != NULL) {
        void *r = NULL, *w = NULL;
        bool have_r = am->dev_ops->host_alloc(am->dev, recv_bytes, &r) == USHMEM_OK;
        if (have_r && am->dev_ops->host_alloc(am->dev, send_bytes, &w) == USHMEM_OK) {
            am->recv_slab = r;
            am->send_slab = w;
            am->slabs_pinned = true;
        } else if (have_r) {
            am->dev_ops->host_free(am->dev, r, recv_bytes);
        }
    }
    if (!am->slabs_pinned && posix_memalign((void **)&am->recv_slab, 4096, recv_bytes) != 0)
        am->recv_slab = NULL;
    if (!am->slabs_pinned && posix_memalign((void **)&am->send_slab, 4096, send_bytes) != 0)
        am->send_slab = NULL;
    if (am->inflight == NULL || am->used_ns == NULL || am->warm_pending == NULL ||
        am->recv_ctx == NULL || am->ready == NULL ||
        am->recv_slab == NULL || am->send_slab == NULL || (am->timed && am->recv_at == NULL)) {
        ushmemi_error("ofi init on PE %d: out of memory for %zu bytes of landing buffers",
                      t->rank, recv_bytes + send_bytes);
        return USHMEM_ERR_NO_MEMORY;
    }
    ushmem_status_t status = ushmemi_ofi_reg_local(t, am->recv_slab, recv_bytes, FI_RECV,
                                                   &am->recv_mr, &am->recv_desc);
    if (status != USHMEM_OK)
        return status;
    status = ushmemi_ofi_reg_local(t, am->send_slab, send_bytes, FI_SEND, &am->send_mr,
                                   &am->send_desc);
    if (status != USHMEM_OK)
        return status;
    for (int s = 0; s < OFI_AM_SENDS; s++)
        am->free_send[s] = s;
    am->nfree_send = OFI_AM_SENDS;
    char warm[96];
    snprintf(warm, sizeof(warm), "not kept warm (%s)",
             params->idle_spin ? "USHMEMI_FABRIC_WARM_US=0" : "the progress thread sleeps when idle");
    if (am->warm_every_s > 0)
        snprintf(warm, sizeof(warm), "kept warm every %.0f us for %.0f ms after a peer's last request",
                 am->warm_every_s * 1e6, am->warm_window_s * 1e3);
    ushmemi_debug("ofi: PE %d %s; %d credits per PE, %d receive buffers of %d bytes (%s); %s",
                  t->rank,
                  am->landing ? "lands peers' operations on its heap" : "sends to landing PEs",
                  am->credits, am->nrecv, OFI_AM_BUF,
                  am->slabs_pinned ? "the backend's host memory" : "plain memory", warm);
    return USHMEM_OK;
}

static ushmem_status_t post_recv(struct ushmemi_transport *t, int b)
{
    struct ofi_am *am = t->am;
    struct ofi_op *ctx = &am->recv_ctx[b];
    memset(ctx, 0, sizeof(*ctx));
    ctx->role = OFI_ROLE_AM_RECV;
    ctx->am_buf = b;
    ctx->slot = -1;
    ctx->what = "landing receive";
    ctx->pe = -1;
    double start = now_s();
    for (;;) {
        ssize_t rc = fi_recv(t->ep, recv_buf(am, b), OFI_AM_BUF, am->recv_desc, FI_ADDR_UNSPEC,
                             ctx);
        if (rc == 0)
            return USHMEM_OK;
        if (rc != -FI_EAGAIN || !wait_a_little(t, start)) {
            ushmemi_error("ofi: PE %d cannot post a landing receive buffer: %s", t->rank,
                          ushmemi_fi.strerror((int)-rc));
            return ushmemi_ofi_status(rc == -FI_EAGAIN ? -FI_ETIMEDOUT : (int)rc);
        }
    }
}

ushmem_status_t ushmemi_ofi_am_start(struct ushmemi_transport *t)
{
    for (int b = 0; b < t->am->nrecv; b++) {
        ushmem_status_t status = post_recv(t, b);
        if (status != USHMEM_OK)
            return status;
    }
    return USHMEM_OK;
}

void ushmemi_ofi_am_release(struct ushmemi_transport *t)
{
    struct ofi_am *am = t->am;
    if (am == NULL)
        return;
    if (am->lands > 0)
        ushmemi_debug("landing: %" PRIu64 " requests landed, %.2f us each on the device (the "
                      "slowest %.2f); %" PRIu64 " of them after %.0f ms or more without one, "
                      "%.2f us each",
                      am->lands, am->land_s * 1e6 / (double)am->lands, am->slowest_s * 1e6,
                      am->quiet_lands, LAND_QUIET_S * 1e3,
                      am->quiet_lands > 0 ? am->quiet_land_s * 1e6 / (double)am->quiet_lands : 0.0);
    if (am->warm_every_s > 0)
        ushmemi_debug("landing: %" PRIu64 " keep-warm messages sent by the progress thread, "
                      "%" PRIu64 " by the proxy's",
                      am->warmer[USHMEMI_OFI_WARM_PROGRESS].sent,
                      am->warmer[USHMEMI_OFI_WARM_PROXY].sent);
    for (int q = 0; q < 2; q++) {
        uint64_t n = am->trips[q];
        if (n == 0)
            continue;
        ushmemi_debug("landing: %" PRIu64 " requests %s, %.2f us each from send to reply: "
                      "%.2f at the target, %.2f on the fabric both ways (each end's wait to "
                      "read its queue included)",
                      n, q == 0 ? "answered" : "sent after 1 ms or more without one",
                      am->trip_s[q] * 1e6 / (double)n, am->trip_target_s[q] * 1e6 / (double)n,
                      (am->trip_s[q] - am->trip_target_s[q]) * 1e6 / (double)n);
    }
    if (am->recv_mr != NULL)
        fi_close(&am->recv_mr->fid);
    if (am->send_mr != NULL)
        fi_close(&am->send_mr->fid);
    if (am->slabs_pinned) {
        am->dev_ops->host_free(am->dev, am->recv_slab, am->recv_bytes);
        am->dev_ops->host_free(am->dev, am->send_slab, am->send_bytes);
    } else {
        free(am->recv_slab);
        free(am->send_slab);
    }
    free(am->recv_ctx);
    free(am->ready);
    free(am->inflight);
    free((void *)am->used_ns);
    free((void *)am->warm_pending);
    free(am->recv_at);
    pthread_mutex_destroy(&am->trip_lock);
    pthread_mutex_destroy(&am->ready_lock);
    pthread_mutex_destroy(&am->send_lock);
    free(am);
    t->am = NULL;
}

/* A free send buffer, waiting for one with progress; -1 after the timeout. */
static int take_send(struct ushmemi_transport *t, int pe, const char *what)
{
    struct ofi_am *am = t->am;
    double start = now_s();
    for (;;) {
        int s = -1;
        pthread_mutex_lock(&am->send_lock);
        if (am->nfree_send > 0)
            s = am->free_send[--am->nfree_send];
        pthread_mutex_unlock(&am->send_lock);
        if (s >= 0)
            return s;
        if (!wait_a_little(t, start)) {
            ushmemi_error("ofi %s to PE %d: no landing send buffer came free in %.0f s", what, pe,
                          OFI_OP_TIMEOUT_S);
            return -1;
        }
    }
}

static void give_send(struct ofi_am *am, int s)
{
    pthread_mutex_lock(&am->send_lock);
    am->free_send[am->nfree_send++] = s;
    pthread_mutex_unlock(&am->send_lock);
}

/* Sends send buffer s (header and len payload bytes, already written) to pe;
 * the buffer comes back when the send completes. On failure it is given
 * back here. */
static ushmem_status_t send_msg(struct ushmemi_transport *t, int pe, int s, size_t len,
                                struct ofi_op *req, const char *what)
{
    struct ofi_am *am = t->am;
    struct ofi_op *ctx = &am->send_ctx[s];
    memset(ctx, 0, sizeof(*ctx));
    ctx->role = OFI_ROLE_AM_SEND;
    ctx->am_buf = s;
    ctx->am_req = req;
    ctx->slot = -1;
    ctx->what = what;
    ctx->pe = pe;
    double start = now_s();
    for (;;) {
        ssize_t rc = fi_send(t->ep, send_buf(am, s), OFI_AM_HDR + len, am->send_desc,
                             t->addrs[pe], ctx);
        if (rc == 0)
            return USHMEM_OK;
        if (rc != -FI_EAGAIN || !wait_a_little(t, start)) {
            ushmemi_error("ofi %s to PE %d (%zu bytes) failed to start: %s", what, pe, len,
                          rc == -FI_EAGAIN ? "the provider refused it (-FI_EAGAIN) for 30 s"
                                           : ushmemi_fi.strerror((int)-rc));
            give_send(am, s);
            return ushmemi_ofi_status(rc == -FI_EAGAIN ? -FI_ETIMEDOUT : (int)rc);
        }
    }
}

/* A reply to the request in hdr, which arrived at arrived (SHMEM_DEBUG;
 * 0 otherwise), from send buffer s. */
static void reply(struct ushmemi_transport *t, const struct am_hdr *req, double arrived, int s,
                  enum am_kind kind, ushmem_status_t status, size_t len)
{
    struct am_hdr *h = (struct am_hdr *)(void *)send_buf(t->am, s);
    memset(h, 0, sizeof(*h));
    h->kind = (uint8_t)kind;
    h->status = (int32_t)status;
    h->from = t->rank;
    h->len = (uint32_t)len;
    h->cookie = req->cookie;
    if (arrived > 0) {
        double ns = (now_s() - arrived) * 1e9;
        h->resident_ns = ns < 4e9 ? (uint32_t)ns : UINT32_MAX;
    }
    if (send_msg(t, req->from, s, len, NULL, "landing reply") != USHMEM_OK) {
        /* The initiator times out waiting and says so; nothing else to do. */
        int none = 0;
        atomic_compare_exchange_strong(&t->async_error, &none, (int)USHMEM_ERR_TRANSPORT);
    }
}

static const char *kind_name(unsigned kind)
{
    switch (kind) {
    case AM_PUT: return "put";
    case AM_GET: return "get";
    case AM_AMO: return "atomic";
    default: return "message";
    }
}

void ushmemi_ofi_am_heap_grown(struct ushmemi_transport *t, size_t new_size)
{
    /* Read by the progress thread as it lands requests; nothing targets
     * the new bytes before the growing allocation returns. */
    __atomic_store_n(&t->am->heap_size, new_size, __ATOMIC_RELAXED);
}

/* Checks a request against this PE's heap; logs and says why not. */
static ushmem_status_t check_request(const struct ushmemi_transport *t, const struct am_hdr *h)
{
    const struct ofi_am *am = t->am;
    size_t len = h->kind == AM_AMO ? h->amo_size : h->len;
    if (!am->landing) {
        ushmemi_error("ofi landing on PE %d: PE %d sent a %s for this PE's heap, which is not "
                      "landed through messages", t->rank, h->from, kind_name(h->kind));
        return USHMEM_ERR_INVALID_PARAM;
    }
    if (h->offset > am->heap_size || len > am->heap_size - h->offset ||
        (h->kind != AM_AMO && len > OFI_AM_CHUNK)) {
        ushmemi_error("ofi landing on PE %d: a %s from PE %d at heap offset %llu + %zu bytes is "
                      "outside the %zu-byte heap", t->rank, kind_name(h->kind), h->from,
                      (unsigned long long)h->offset, len, am->heap_size);
        return USHMEM_ERR_OUT_OF_RANGE;
    }
    if (h->kind == AM_AMO &&
        ((h->amo_size != 4 && h->amo_size != 8) || h->offset % h->amo_size != 0 ||
         h->amo_op > USHMEMI_AMO_XOR)) {
        ushmemi_error("ofi landing on PE %d: an atomic from PE %d (op %u, %u bytes, heap offset "
                      "%llu) is not one this PE can land", t->rank, h->from, h->amo_op,
                      h->amo_size, (unsigned long long)h->offset);
        return USHMEM_ERR_INVALID_PARAM;
    }
    return USHMEM_OK;
}

/* Counts one landing's device work, begun at t0 (SHMEM_DEBUG only); work
 * that failed, or that never began, is not counted. */
static void land_timed(struct ofi_am *am, double t0, ushmem_status_t status)
{
    if (!am->timed || status != USHMEM_OK)
        return;
    double now = now_s(), took = now - t0;
    am->lands++;
    am->land_s += took;
    if (took > am->slowest_s)
        am->slowest_s = took;
    if (am->last_land > 0 && t0 - am->last_land >= LAND_QUIET_S) {
        am->quiet_lands++;
        am->quiet_land_s += took;
    }
    am->last_land = now;
}

/* Lands the request in receive buffer b, reposts b, and answers. */
static void land(struct ushmemi_transport *t, int b)
{
    struct ofi_am *am = t->am;
    struct am_hdr req;
    memcpy(&req, recv_buf(am, b), sizeof(req));
    const char *payload = recv_buf(am, b) + OFI_AM_HDR;
    if (req.from < 0 || req.from >= t->size) {
        /* Nobody to answer: the sender, whoever it is, times out and says so. */
        ushmemi_error("ofi landing on PE %d: a %s names PE %d as its sender, not one of 0..%d",
                      t->rank, kind_name(req.kind), req.from, t->size - 1);
        post_recv(t, b);
        return;
    }
    mark_used(am, req.from);
    ushmem_status_t status = check_request(t, &req);
    char *target = status == USHMEM_OK ? am->heap + req.offset : am->heap;
    double t0 = 0;
    /* Read before b is posted again: its next arrival writes it. */
    double arrived = am->recv_at != NULL ? am->recv_at[b] : 0;

    if (req.kind == AM_PUT) {
        if (status == USHMEM_OK) {
            t0 = am->timed ? now_s() : 0;
            status = am->dev_ops->copy(am->dev, target, payload, req.len);
            if (status == USHMEM_OK)
                status = am->dev_ops->sync(am->dev);
            land_timed(am, t0, status);
        }
        /* The ack must mean the bytes are in the heap: it goes after the sync. */
        post_recv(t, b);
        int s = take_send(t, req.from, "landing ack");
        if (s >= 0)
            reply(t, &req, arrived, s, AM_ACK, status, 0);
        return;
    }
    int s = take_send(t, req.from, "landing reply");
    size_t len = 0;
    t0 = am->timed ? now_s() : 0; /* after waiting for a send buffer: not device work */
    if (s >= 0 && status == USHMEM_OK && req.kind == AM_GET) {
        status = am->dev_ops->copy(am->dev, send_buf(am, s) + OFI_AM_HDR, target, req.len);
        if (status == USHMEM_OK)
            status = am->dev_ops->sync(am->dev);
        len = req.len;
    } else if (s >= 0 && status == USHMEM_OK) {
        uint64_t old = 0;
        status = am->dev_ops->amo(am->dev, target, req.amo_op, req.amo_size, req.operand,
                                  req.compare, &old);
        memcpy(send_buf(am, s) + OFI_AM_HDR, &old, sizeof(old));
        len = sizeof(old);
    }
    land_timed(am, t0, s >= 0 ? status : USHMEM_ERR_TIMEOUT);
    post_recv(t, b);
    if (s >= 0)
        reply(t, &req, arrived, s, AM_REPLY, status, status == USHMEM_OK ? len : 0);
}

int ushmemi_ofi_am_serve(struct ushmemi_transport *t)
{
    if (t->am == NULL)
        return 0;
    int handled = 0;
    for (int b; (b = pop_ready(t->am)) >= 0; handled++) {
        uint8_t kind = (uint8_t)recv_buf(t->am, b)[0];
        if (kind == AM_PUT || kind == AM_GET || kind == AM_AMO)
            land(t, b);
        else
            post_recv(t, b);
    }
    return handled;
}

enum warm_result { WARM_SENT, WARM_NO_BUFFER, WARM_SKIPPED };

/* Sends pe an AM_WARM where no more than one a warming thread is still in
 * flight to it, a send buffer is free and the provider takes it at once;
 * otherwise the next tick tries again. */
static enum warm_result send_warm(struct ushmemi_transport *t, int pe, enum ushmemi_ofi_warmer who)
{
    struct ofi_am *am = t->am;
    if (atomic_fetch_add(&am->warm_pending[pe], 1) >= USHMEMI_OFI_WARMERS) {
        atomic_fetch_sub(&am->warm_pending[pe], 1);
        return WARM_SKIPPED;
    }
    int s = -1;
    pthread_mutex_lock(&am->send_lock);
    if (am->nfree_send > 0)
        s = am->free_send[--am->nfree_send];
    pthread_mutex_unlock(&am->send_lock);
    if (s < 0) {
        atomic_fetch_sub(&am->warm_pending[pe], 1);
        return WARM_NO_BUFFER;
    }
    struct am_hdr *h = (struct am_hdr *)(void *)send_buf(am, s);
    memset(h, 0, sizeof(*h));
    h->kind = AM_WARM;
    h->from = t->rank;
    struct ofi_op *ctx = &am->send_ctx[s];
    memset(ctx, 0, sizeof(*ctx));
    ctx->role = OFI_ROLE_AM_SEND;
    ctx->am_buf = s;
    ctx->slot = -1;
    ctx->what = warm_what;
    ctx->pe = pe;
    if (fi_send(t->ep, h, OFI_AM_HDR, am->send_desc, t->addrs[pe], ctx) != 0) {
        give_send(am, s);
        atomic_fetch_sub(&am->warm_pending[pe], 1);
        return WARM_SKIPPED; /* this peer's path is busy or broken: the others' go on */
    }
    am->warmer[who].sent++;
    return WARM_SENT;
}

void ushmemi_ofi_am_keep_warm(struct ushmemi_transport *t, enum ushmemi_ofi_warmer who)
{
    struct ofi_am *am = t->am;
    if (am == NULL || am->warm_every_s <= 0 || (who == USHMEMI_OFI_WARM_PROXY && !am->warm_proxy))
        return;
    double now = now_s();
    if (now < am->warmer[who].next)
        return;
    am->warmer[who].next = now + am->warm_every_s;
    uint64_t now_ns = (uint64_t)(now * 1e9), window_ns = (uint64_t)(am->warm_window_s * 1e9);
    int sent = 0;
    for (int k = 0; k < t->size && sent < WARM_PEERS_MAX; k++) {
        int pe = (am->warmer[who].next_pe + k) % t->size;
        uint64_t used = atomic_load_explicit(&am->used_ns[pe], memory_order_relaxed);
        /* Used after now was read (another thread): now_ns - used wraps
         * and the peer waits for the next tick, which is right anyway. */
        if (pe == t->rank || used == 0 || now_ns - used > window_ns)
            continue;
        enum warm_result r = send_warm(t, pe, who);
        if (r == WARM_NO_BUFFER)
            break;
        sent += r == WARM_SENT;
        am->warmer[who].next_pe = (pe + 1) % t->size;
    }
}

/* A reply: the operation it answers is finished here, whoever reads the CQ. */
static void finish_request(struct ushmemi_transport *t, const struct am_hdr *h,
                           const char *payload)
{
    struct ofi_op *op = (struct ofi_op *)(uintptr_t)h->cookie;
    struct ofi_am *am = t->am;
    if (am->timed && op->am_sent > 0) {
        double trip = now_s() - op->am_sent, at_target = (double)h->resident_ns * 1e-9;
        pthread_mutex_lock(&am->trip_lock);
        for (int q = 0; q <= (op->am_after_quiet ? 1 : 0); q++) {
            am->trips[q]++;
            am->trip_s[q] += trip;
            am->trip_target_s[q] += at_target;
        }
        pthread_mutex_unlock(&am->trip_lock);
    }
    atomic_fetch_sub(&am->inflight[op->pe], 1);
    int fi_err = 0;
    if (h->status != USHMEM_OK) {
        ushmemi_error("ofi %s to PE %d: PE %d could not land it: %s", op->what, op->pe, h->from,
                      ushmemi_status_string((ushmem_status_t)h->status));
        fi_err = FI_EREMOTEIO;
    } else if (h->kind == AM_REPLY && op->am_dst != NULL) {
        /* A waiter that gave up no longer owns its buffer. */
        if (atomic_load(&op->state) != OFI_OP_ORPHAN)
            memcpy(op->am_dst, payload, h->len < op->am_len ? h->len : op->am_len);
    } else if (h->kind == AM_REPLY) {
        memcpy(&op->am_old, payload, sizeof(op->am_old));
    }
    ushmemi_ofi_complete(t, op, fi_err);
}

void ushmemi_ofi_am_completed(struct ushmemi_transport *t, struct ofi_op *ctx, int fi_err)
{
    struct ofi_am *am = t->am;
    if (ctx->role == OFI_ROLE_AM_SEND) {
        struct ofi_op *req = ctx->am_req;
        int pe = ctx->pe;
        const char *what = ctx->what;
        give_send(am, ctx->am_buf);
        if (what == warm_what)
            atomic_fetch_sub(&am->warm_pending[pe], 1);
        if (fi_err != 0 && req != NULL) {
            /* The request never left: no reply will finish it. */
            atomic_fetch_sub(&am->inflight[pe], 1);
            ushmemi_ofi_complete(t, req, fi_err);
        } else if (fi_err != 0 && what == warm_what) {
            /* A peer that finalized first: nothing was lost. */
            ushmemi_debug("ofi %s to PE %d failed: %s", what, pe, ushmemi_fi.strerror(fi_err));
        } else if (fi_err != 0) {
            ushmemi_error("ofi %s to PE %d failed: %s", what, pe, ushmemi_fi.strerror(fi_err));
        }
        return;
    }
    if (fi_err == FI_ECANCELED)
        return; /* the endpoint is closing */
    char *buf = recv_buf(am, ctx->am_buf);
    if (am->recv_at != NULL)
        am->recv_at[ctx->am_buf] = now_s();
    if (fi_err != 0) {
        ushmemi_error("ofi: PE %d: a landing receive failed: %s", t->rank, ushmemi_fi.strerror(fi_err));
        buf[0] = AM_NONE;
    } else if (buf[0] == AM_ACK || buf[0] == AM_REPLY) {
        struct am_hdr h;
        memcpy(&h, buf, sizeof(h));
        finish_request(t, &h, buf + OFI_AM_HDR);
        buf[0] = AM_NONE;
    }
    push_ready(am, ctx->am_buf);
}

/* Takes a credit for pe, waiting with progress for a reply to free one. */
static ushmem_status_t take_credit(struct ushmemi_transport *t, int pe, const char *what)
{
    struct ofi_am *am = t->am;
    double start = now_s();
    for (;;) {
        int n = atomic_load(&am->inflight[pe]);
        if (n < am->credits && atomic_compare_exchange_weak(&am->inflight[pe], &n, n + 1))
            return USHMEM_OK;
        if (n >= am->credits && !wait_a_little(t, start)) {
            ushmemi_error("ofi %s to PE %d: no reply from PE %d for %.0f s; it makes no progress",
                          what, pe, pe, OFI_OP_TIMEOUT_S);
            return USHMEM_ERR_TIMEOUT;
        }
    }
}

/* Sends one request for op; on failure op is released here. */
static ushmem_status_t send_request(struct ushmemi_transport *t, struct ofi_op *op,
                                    const struct am_hdr *hdr, const void *payload, size_t len)
{
    ushmem_status_t status = take_credit(t, op->pe, op->what);
    if (status != USHMEM_OK) {
        ushmemi_ofi_op_drop(t, op);
        return status;
    }
    int s = take_send(t, op->pe, op->what);
    if (s < 0) {
        atomic_fetch_sub(&t->am->inflight[op->pe], 1);
        ushmemi_ofi_op_drop(t, op);
        return USHMEM_ERR_TIMEOUT;
    }
    mark_used(t->am, op->pe);
    char *buf = send_buf(t->am, s);
    memcpy(buf, hdr, sizeof(*hdr));
    if (len > 0)
        memcpy(buf + OFI_AM_HDR, payload, len);
    if (t->am->timed) {
        struct ofi_am *am = t->am;
        pthread_mutex_lock(&am->trip_lock);
        op->am_sent = now_s();
        op->am_after_quiet = am->last_sent > 0 && op->am_sent - am->last_sent >= LAND_QUIET_S;
        am->last_sent = op->am_sent;
        pthread_mutex_unlock(&am->trip_lock);
    }
    /* Counted before it leaves: its reply may be read before send returns. */
    atomic_fetch_add(&t->issued, 1);
    status = send_msg(t, op->pe, s, len, op, op->what);
    if (status != USHMEM_OK) {
        /* No reply will come: counted once, as issued, and released. */
        atomic_fetch_sub(&t->am->inflight[op->pe], 1);
        atomic_fetch_add(&t->completed, 1);
        ushmemi_ofi_op_drop(t, op);
    }
    return status;
}

ushmem_status_t ushmemi_ofi_am_rma(struct ushmemi_transport *t, bool put, int pe, uint64_t sym,
                                   void *local, size_t len, bool nbi, const char *what)
{
    uint64_t offset = ushmemi_sym_in_segment(sym);
    ushmem_status_t status = USHMEM_OK;
    /* Every chunk is an nbi request; a blocking call then waits for all. */
    for (size_t done = 0; status == USHMEM_OK && done < len;) {
        size_t n = len - done < OFI_AM_CHUNK ? len - done : OFI_AM_CHUNK;
        struct ofi_op *op = ushmemi_ofi_op_new(what, pe, true);
        if (op == NULL)
            return USHMEM_ERR_NO_MEMORY;
        struct am_hdr h = {.kind = put ? AM_PUT : AM_GET, .from = t->rank, .len = (uint32_t)n,
                           .offset = offset + done, .cookie = (uint64_t)(uintptr_t)op};
        if (!put) {
            op->am_dst = (char *)local + done;
            op->am_len = n;
        }
        status = send_request(t, op, &h, put ? (char *)local + done : NULL, put ? n : 0);
        done += n;
    }
    if (status == USHMEM_OK && !nbi)
        status = ushmemi_ofi_quiet(t);
    return status;
}

ushmem_status_t ushmemi_ofi_am_atomic(struct ushmemi_transport *t, int pe, uint64_t sym,
                                      enum ushmemi_amo_op op, size_t size, const void *operand,
                                      const void *compare, void *result)
{
    struct ofi_op *ctx = ushmemi_ofi_op_new("atomic", pe, false);
    if (ctx == NULL)
        return USHMEM_ERR_NO_MEMORY;
    struct am_hdr h = {.kind = AM_AMO, .amo_op = (uint8_t)op, .amo_size = (uint8_t)size,
                       .from = t->rank, .offset = ushmemi_sym_in_segment(sym),
                       .cookie = (uint64_t)(uintptr_t)ctx};
    /* Operands travel as bits, a 4-byte word in the low half. */
    uint32_t w;
    if (operand != NULL && size == 4) {
        memcpy(&w, operand, 4);
        h.operand = w;
    } else if (operand != NULL) {
        memcpy(&h.operand, operand, 8);
    }
    if (compare != NULL && size == 4) {
        memcpy(&w, compare, 4);
        h.compare = w;
    } else if (compare != NULL) {
        memcpy(&h.compare, compare, 8);
    }
    ushmem_status_t status = send_request(t, ctx, &h, NULL, 0);
    if (status != USHMEM_OK)
        return status;
    uint64_t old = 0;
    status = ushmemi_ofi_op_wait_old(t, ctx, &old);
    if (status == USHMEM_OK && result != NULL) {
        if (size == 4) {
            w = (uint32_t)old;
            memcpy(result, &w, 4);
        } else {
            memcpy(result, &old, 8);
        }
    }
    return status;
}
