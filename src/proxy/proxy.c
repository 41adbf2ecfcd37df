/* The proxy thread: takes requests from the ring strictly in ticket order,
 * checks the local memory each one names with the device backend's
 * pointer_query, executes it through the target PE's transport, and publishes
 * completions as one counter. Non-blocking requests are completed in batches
 * by a transport quiet before the counter moves past them. On a transport
 * that the device carries out in order (the copy engine between mapped
 * heaps), the proxy never waits for the device: every request, blocking or
 * not, is queued there (copies, stores of values, atomic kernels that write
 * their old value into the ring's result cell), and the completed counter's
 * copy in device memory, written by the device behind them, completes them;
 * the counter in host memory follows when the proxy has nothing else to do.
 * When the ring is empty the thread either keeps polling (params.idle_spin:
 * a request after any quiet spell is taken at once, for a CPU core) or
 * spins briefly, then yields, then sleeps with exponential backoff, so that
 * an idle proxy costs almost no CPU but the first request after a quiet
 * spell may wait for the sleep to end. Beside
 * the ring it carries the requests that stream-ordered calls post for PEs
 * whose heaps are not mapped here (proxy.h), each once its stream has
 * written its trigger word; while one is posted the thread does not sleep. */
#include "proxy.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../common/log.h"
#include "../common/threads.h"

#define PROXY_DEFAULT_CAPACITY 1024
/* Requests executed between two publications of the completed counter when
 * the ring never empties, which bounds how long quiet can wait. */
#define PROXY_BATCH 64
/* Idle backoff, by time since the ring was last found busy: poll with a
 * pause, then poll with a yield (free when nothing else wants the core), then
 * sleep, doubling from the minimum to the maximum. The maximum is what the
 * first request after a long idle period may wait; the sleeps are what an
 * idle proxy costs. A futex or condvar wake-up is not an option: device code
 * cannot make system calls. With params.idle_spin none of this applies. */
#define IDLE_SPIN_NS 10000L
#define IDLE_YIELD_NS 100000L
#define IDLE_SLEEP_MIN_NS 50000L
#define IDLE_SLEEP_MAX_NS 1000000L

/* Staged requests move at most this much per copy. */
#define PROXY_STAGE_SIZE ((size_t)1 << 20)

/* Non-blocking puts of at least PROXY_GATHER_MIN bytes through an ordered
 * transport are gathered while they keep coming (up to PROXY_GATHER_MAX of them,
 * waiting at most PROXY_GATHER_WAIT_NS for the next one) and issued sorted
 * by target, contiguous ones as one copy: a kernel's blocks each submit
 * their share of one message, and the copy engine moves one large copy at
 * its full rate, where 2 MiB pieces reach about 70% of it (nvlink_ceiling's
 * ce and ce-2m rows). OpenSHMEM orders non-blocking puts only at fence and
 * quiet, and anything else the proxy takes issues the gathered ones first. */
#define PROXY_GATHER_MIN ((uint64_t)64 * 1024)
#define PROXY_GATHER_WAIT_NS 3000L
/* Room for the puts of ten rounds of a 32-block kernel: each round's pieces
 * make one copy, whichever order the blocks' requests came in. */
#define PROXY_GATHER_MAX 320

/* Slots for requests posted by stream-ordered calls (proxy.h). */
#define PROXY_STREAM_SLOTS 1024u

/* A stream request: seq is its number while it waits (0: the slot is
 * free); only its poster writes req, and only while seq is 0. */
struct stream_entry {
    atomic_uint_fast64_t seq;
    struct ushmem_ring_request req;
};

struct transport_ref {
    const struct ushmemi_transport_ops *ops;
    struct ushmemi_transport *t;
    bool nbi_pending; /* a non-blocking request went out since its last quiet */
    /* Its requests are queued on the device, in order, and completed by
     * the counter's copy that the device writes behind them. */
    bool ordered;
};

struct ushmemi_proxy {
    struct ushmemi_ring *ring;
    const struct ushmemi_device_ops *dev_ops;
    struct ushmemi_device *dev;
    int my_pe;
    int npes;
    int *pe_transport; /* npes entries: index into transports, -1 for no route */
    enum ushmemi_proxy_device_memory *pe_devmem; /* npes entries */
    char *stage;                                 /* PROXY_STAGE_SIZE bytes, or NULL */
    struct transport_ref *transports;
    int ntransports;
    bool nbi_pending;   /* any transport's nbi_pending */
    uint64_t published; /* the completed counter as last published */
    uint64_t *done_copy;  /* params.done_copy */
    /* params.ring_tail and ring_values: the producers' tail, and the
     * values of FLAG_RESULT requests, in device memory; NULL: the ring's. */
    uint64_t *device_tail, *device_values;
    uint64_t tail_read; /* device_tail's value as last read (producers_tail) */
    uint64_t done_copied; /* the value last written there */
    bool done_failed;     /* a write there failed and was reported */
    /* Requests queued on the device (ordered transports) since the host
     * counter last moved: it moves once the device is done with them. */
    bool device_pending;
    bool idle_spin; /* params.idle_spin */
    /* Keeping the device's path warm while idle (keep_warm): 0 off, 1 the
     * counter's copy rewritten, 2 also 8 bytes to each mapped peer's
     * warm_offset, 3 also to host memory, 4 also a kernel where
     * warm_kernel; and when it last happened. */
    int warm;
    bool warm_kernel; /* params.warm_kernel */
    uint64_t warm_offset;
    uint64_t warmed_at;
    /* Folding the counter's copy into the request it completes (fold_done):
     * 0 off; 1 stores and atomics; 2 also gets of 4 or 8 bytes for the
     * ring, as an atomic fetch that completes itself (get_as_fetch). */
    int fold;
    /* While the put of a put with signal runs: its ticket is complete only
     * once the signal is queued too, so nothing folds into the put. */
    bool fold_held;
    /* A put with a signal, set or add, in one submission where the
     * transport can (put_signal_at_once); 0 (a measurement switch) takes
     * them apart. */
    int signal_chain;
    unsigned long failures; /* requests reported by fail() */
    struct gathered_put {
        int pe;
        uint64_t offset, local, len;
    } *gathered; /* PROXY_GATHER_MAX entries */
    unsigned ngathered;
    struct {            /* for the debug line at stop; timed only when it is logged */
        bool timed;
        uint64_t requests, completions, sleeps, warm_kernels;
        uint64_t execute_ns, complete_ns;
    } stats;
    struct {
        pthread_mutex_t lock;         /* posters */
        uint64_t next;                /* the last number handed out (under lock) */
        atomic_uint_fast64_t posted;  /* the last number posted */
        uint64_t oldest;              /* proxy: no request below it is waiting */
        struct stream_entry *entries; /* PROXY_STREAM_SLOTS */
        /* host_alloc: PROXY_STREAM_SLOTS trigger words, then as many done
         * words, then keep_warm's word */
        ushmem_ring_word_t *words;
    } streams;
    ushmemi_proxy_abort_fn abort_cb;
    void *abort_ctx;
    pthread_t thread;
    atomic_bool stop;
};

union amo_value {
    int32_t i32;
    uint32_t u32;
    int64_t i64;
    uint64_t u64;
    float f;
    double d;
};

static const enum ushmemi_amo_op amo_ops[USHMEM_RING_AMO_OP_COUNT] = {
    [USHMEM_RING_AMO_FETCH] = USHMEMI_AMO_FETCH, [USHMEM_RING_AMO_SET] = USHMEMI_AMO_SET,
    [USHMEM_RING_AMO_SWAP] = USHMEMI_AMO_SWAP,   [USHMEM_RING_AMO_CSWAP] = USHMEMI_AMO_CSWAP,
    [USHMEM_RING_AMO_ADD] = USHMEMI_AMO_ADD,     [USHMEM_RING_AMO_AND] = USHMEMI_AMO_AND,
    [USHMEM_RING_AMO_OR] = USHMEMI_AMO_OR,       [USHMEM_RING_AMO_XOR] = USHMEMI_AMO_XOR,
};

static const enum ushmemi_amo_type amo_types[USHMEM_RING_AMO_TYPE_COUNT] = {
    [USHMEM_RING_AMO_INT32] = USHMEMI_AMO_INT32, [USHMEM_RING_AMO_UINT32] = USHMEMI_AMO_UINT32,
    [USHMEM_RING_AMO_INT64] = USHMEMI_AMO_INT64, [USHMEM_RING_AMO_UINT64] = USHMEMI_AMO_UINT64,
    [USHMEM_RING_AMO_FLOAT] = USHMEMI_AMO_FLOAT, [USHMEM_RING_AMO_DOUBLE] = USHMEMI_AMO_DOUBLE,
};

static const char *const amo_op_names[USHMEM_RING_AMO_OP_COUNT] = {
    "fetch", "set", "swap", "compare_swap", "fetch_add", "fetch_and", "fetch_or", "fetch_xor",
};

static const char *const amo_type_names[USHMEM_RING_AMO_TYPE_COUNT] = {
    "int32", "uint32", "int64", "uint64", "float", "double",
};

static const char *op_name(const struct ushmem_ring_request *req, char *buf, size_t len)
{
    static const char *const names[USHMEM_RING_OP_COUNT] = {
        "none", "put", "get", "put_nbi", "get_nbi", "atomic", "fence",
    };

    if (req->op >= USHMEM_RING_OP_COUNT) {
        snprintf(buf, len, "op %u", req->op);
    } else if (req->op == USHMEM_RING_OP_AMO && req->amo_op < USHMEM_RING_AMO_OP_COUNT &&
               req->amo_type < USHMEM_RING_AMO_TYPE_COUNT) {
        snprintf(buf, len, "atomic %s (%s)", amo_op_names[req->amo_op],
                 amo_type_names[req->amo_type]);
    } else {
        snprintf(buf, len, "%s", names[req->op]);
    }
    return buf;
}

/* Reports a failed or refused request: logged here, where it is detected,
 * then handed to the abort callback, which normally ends the job. */
__attribute__((format(printf, 4, 5))) static void fail(struct ushmemi_proxy *p, ushmem_status_t status,
                                                       uint64_t ticket, const char *fmt, ...)
{
    char msg[384];
    va_list ap;
    int n;

    n = snprintf(msg, sizeof(msg), "proxy on PE %d, request %" PRIu64 ": ", p->my_pe, ticket);
    va_start(ap, fmt);
    vsnprintf(msg + n, sizeof(msg) - (size_t)n, fmt, ap);
    va_end(ap);
    ushmemi_error("%s", msg);
    p->failures++;
    ushmemi_ring_count_error(p->ring);
    p->abort_cb(p->abort_ctx, status, msg);
}

/* Checks a local address: not NULL, and known to the device backend.
 * device_p says whether it is device memory (the CPU must not touch it). */
static bool local_check(struct ushmemi_proxy *p, const struct ushmem_ring_request *req,
                        uint64_t ticket, const char *what, uint64_t addr, bool *device_p)
{
    struct ushmemi_ptr_attr attr;
    ushmem_status_t status;
    char name[48];

    if (addr == 0) {
        fail(p, USHMEM_ERR_INVALID_PARAM, ticket,
             "%s to PE %d refused: %s address is NULL (remote offset 0x%" PRIx64 ")",
             op_name(req, name, sizeof(name)), req->pe, what, req->offset);
        return false;
    }
    status = p->dev_ops->pointer_query(p->dev, (const void *)(uintptr_t)addr, &attr);
    if (status != USHMEM_OK) {
        fail(p, status, ticket,
             "%s to PE %d refused: %s pointer_query of %s address 0x%" PRIx64 " failed: %s",
             op_name(req, name, sizeof(name)), req->pe, p->dev_ops->name, what, addr,
             ushmemi_status_string(status));
        return false;
    }
    *device_p = !attr.host_accessible;
    if (!attr.host_accessible && p->pe_devmem[req->pe] == USHMEMI_PROXY_DEVMEM_REFUSE) {
        fail(p, USHMEM_ERR_INVALID_PARAM, ticket,
             "%s to PE %d refused: %s address 0x%" PRIx64 " is device memory (device %d) "
             "that the proxy thread cannot access (remote offset 0x%" PRIx64 ")",
             op_name(req, name, sizeof(name)), req->pe, what, addr, attr.device_ordinal,
             req->offset);
        return false;
    }
    return true;
}

/* The proxy may hand `addr` to a transport only when the CPU may touch it or
 * the transport takes device memory; staged buffers take the bounce path. */
static bool local_ok(struct ushmemi_proxy *p, const struct ushmem_ring_request *req,
                     uint64_t ticket, const char *what, uint64_t addr)
{
    bool device;
    if (!local_check(p, req, ticket, what, addr, &device))
        return false;
    if (device && p->pe_devmem[req->pe] == USHMEMI_PROXY_DEVMEM_STAGE) {
        char name[48];
        fail(p, USHMEM_ERR_INVALID_PARAM, ticket,
             "%s to PE %d refused: %s address 0x%" PRIx64 " is device memory, which this "
             "request cannot stage", op_name(req, name, sizeof(name)), req->pe, what, addr);
        return false;
    }
    return true;
}

/* A put or get whose local buffer is device memory, through the host
 * bounce buffer and the copy engine, chunk by chunk and blocking: the CPU
 * never touches the device buffer, and neither does the transport. */
static ushmem_status_t staged_rma(struct ushmemi_proxy *p, const struct transport_ref *tr,
                                  const struct ushmem_ring_request *req, bool put)
{
    char *local = (char *)(uintptr_t)req->local;
    ushmem_status_t status = USHMEM_OK;
    for (uint64_t done = 0; done < req->value && status == USHMEM_OK;
         done += PROXY_STAGE_SIZE) {
        size_t n = req->value - done < PROXY_STAGE_SIZE ? (size_t)(req->value - done)
                                                        : PROXY_STAGE_SIZE;
        if (put) {
            status = p->dev_ops->copy(p->dev, p->stage, local + done, n);
            if (status == USHMEM_OK)
                status = p->dev_ops->sync(p->dev);
            if (status == USHMEM_OK)
                status = tr->ops->put(tr->t, req->pe, req->offset + done, p->stage, n);
        } else {
            status = tr->ops->get(tr->t, req->pe, p->stage, req->offset + done, n);
            if (status == USHMEM_OK)
                status = p->dev_ops->copy(p->dev, local + done, p->stage, n);
            if (status == USHMEM_OK)
                status = p->dev_ops->sync(p->dev);
        }
    }
    return status;
}

static size_t amo_size(uint8_t type)
{
    switch (type) {
    case USHMEM_RING_AMO_INT32:
    case USHMEM_RING_AMO_UINT32:
    case USHMEM_RING_AMO_FLOAT:
        return 4;
    default:
        return 8;
    }
}

/* A 4-byte operand travels in the low 32 bits of its 64-bit field. */
static void amo_decode(uint64_t bits, size_t size, union amo_value *v_p)
{
    memset(v_p, 0, sizeof(*v_p));
    if (size == 4) {
        uint32_t low = (uint32_t)bits;
        memcpy(v_p, &low, sizeof(low));
    } else {
        memcpy(v_p, &bits, sizeof(bits));
    }
}

static void publish(struct ushmemi_proxy *p);
static void publish_upto(struct ushmemi_proxy *p, uint64_t upto);
static uint64_t now_ns(void);

/* FLAG_RESULT: hands the value to the producer through the ticket's result
 * cell, once the cell's previous reader has acknowledged its value. That
 * reader waits only for its own ticket, taken earlier, so completing the
 * tickets before this one lets it go on; never this one, whose value is
 * not there yet. */
static uint64_t *lend_result(struct ushmemi_proxy *p, uint64_t ticket);

static void put_result(struct ushmemi_proxy *p, uint64_t ticket, uint64_t value)
{
    if (p->device_values == NULL) {
        unsigned spins = 0;
        while (!ushmemi_ring_result_free(p->ring, ticket)) {
            publish_upto(p, ticket);
            ushmem_ring_backoff(&spins);
        }
        ushmemi_ring_put_result(p->ring, ticket, value);
        return;
    }
    /* Ahead of the counter's copy that completes the ticket, on the same
     * queue of the device. */
    uint64_t *cell = lend_result(p, ticket);
    ushmem_status_t status = p->dev_ops->write64(p->dev, cell, value);
    if (status != USHMEM_OK)
        fail(p, status, ticket, "writing the result of request %" PRIu64 " into device memory "
             "at %p failed: %s", ticket, (void *)cell, ushmemi_status_string(status));
}

static ushmem_status_t run_amo(struct ushmemi_proxy *p, const struct transport_ref *tr,
                               const struct ushmem_ring_request *req, uint64_t ticket)
{
    union amo_value operand, compare;
    size_t size;
    void *result = NULL;
    char name[48];

    if (req->amo_op >= USHMEM_RING_AMO_OP_COUNT || req->amo_type >= USHMEM_RING_AMO_TYPE_COUNT) {
        fail(p, USHMEM_ERR_INVALID_PARAM, ticket,
             "atomic to PE %d refused: unknown atomic op %u or type %u (remote offset 0x%" PRIx64
             ")", req->pe, req->amo_op, req->amo_type, req->offset);
        return USHMEM_ERR_INVALID_PARAM;
    }
    uint64_t cell_value = 0; /* FLAG_RESULT: the old value, for the result cell */
    if (req->flags & USHMEM_RING_FLAG_RESULT) {
        result = &cell_value;
    } else if (req->result != 0) {
        if (!local_ok(p, req, ticket, "result", req->result))
            return USHMEM_ERR_INVALID_PARAM;
        result = (void *)(uintptr_t)req->result;
    }
    size = amo_size(req->amo_type);
    amo_decode(req->value, size, &operand);
    amo_decode(req->compare, size, &compare);
    ushmem_status_t status = tr->ops->atomic(tr->t, req->pe, req->offset, amo_ops[req->amo_op],
                                             amo_types[req->amo_type], &operand, &compare, result);
    if (status != USHMEM_OK)
        fail(p, status, ticket,
             "%s to PE %d failed: remote offset 0x%" PRIx64 ", result address 0x%" PRIx64 ": %s",
             op_name(req, name, sizeof(name)), req->pe, req->offset, req->result,
             ushmemi_status_string(status));
    if (req->flags & USHMEM_RING_FLAG_RESULT)
        put_result(p, ticket, cell_value); /* even after a failure: the reader must not hang */
    return status;
}

/* Puts and gets of up to 8 bytes whose value travels in the ring
 * (FLAG_INLINE, FLAG_RESULT): blocking, through a host word of the proxy. */
static ushmem_status_t small_rma(struct ushmemi_proxy *p, const struct transport_ref *tr,
                                 const struct ushmem_ring_request *req, uint64_t ticket, bool put)
{
    char name[48];
    if (req->value > sizeof(uint64_t)) {
        fail(p, USHMEM_ERR_INVALID_PARAM, ticket,
             "%s to PE %d refused: %" PRIu64 " bytes do not fit in the ring (8 at most)",
             op_name(req, name, sizeof(name)), req->pe, req->value);
        if (!put)
            put_result(p, ticket, 0);
        return USHMEM_ERR_INVALID_PARAM;
    }
    uint64_t word = put ? req->local : 0;
    ushmem_status_t status = put ? tr->ops->put(tr->t, req->pe, req->offset, &word, req->value)
                                 : tr->ops->get(tr->t, req->pe, &word, req->offset, req->value);
    if (!put)
        put_result(p, ticket, word);
    return status;
}

/* Reports a put, get or atomic the transport could not carry out. */
static void fail_request(struct ushmemi_proxy *p, const struct ushmem_ring_request *req,
                         uint64_t ticket, ushmem_status_t status)
{
    char name[48];
    fail(p, status, ticket,
         "%s to PE %d failed: remote offset 0x%" PRIx64 ", local address 0x%" PRIx64
         ", %" PRIu64 " bytes: %s",
         op_name(req, name, sizeof(name)), req->pe, req->offset, req->local, req->value,
         ushmemi_status_string(status));
}

/* FLAG_RESULT on the device: the cell's value (in device memory where the
 * producers read it there) is written by the device before the ticket
 * completes; the cell is taken once its last value was read, as
 * put_result does. */
static uint64_t *lend_result(struct ushmemi_proxy *p, uint64_t ticket)
{
    unsigned spins = 0;
    while (!ushmemi_ring_result_free(p->ring, ticket)) {
        publish_upto(p, ticket);
        ushmem_ring_backoff(&spins);
    }
    uint64_t *cell = ushmemi_ring_result_lend(p->ring, ticket);
    if (p->device_values != NULL)
        return &p->device_values[ticket & (ushmemi_ring_header(p->ring)->capacity - 1)];
    return cell;
}

/* A blocking request's producer waits for it: publish follows at once. */
static bool blocking(const struct ushmem_ring_request *req)
{
    return req->op != USHMEM_RING_OP_PUT_NBI && req->op != USHMEM_RING_OP_GET_NBI &&
           req->op != USHMEM_RING_OP_FENCE;
}

/* The counter's copy that publish would write next, handed to the device
 * with this request instead (one call into the driver instead of two):
 * where nothing but device work is outstanding and publish comes next,
 * because the producer waits for this request or because nothing follows it
 * in the ring. NULL where it does not fold. */
static const struct ushmemi_dev_then *fold_done(struct ushmemi_proxy *p,
                                                const struct ushmem_ring_request *req,
                                                uint64_t ticket, struct ushmemi_dev_then *then)
{
    if (p->fold == 0 || p->fold_held || p->done_copy == NULL || p->nbi_pending || p->done_failed ||
        (!blocking(req) && ushmemi_ring_waiting(p->ring)))
        return NULL;
    *then = (struct ushmemi_dev_then){p->done_copy, ticket + 1, NULL};
    return then;
}

/* With fold 2 (a measurement switch), a get of 4 or 8 aligned bytes for
 * the ring as an atomic fetch, whose kernel writes the counter's copy
 * itself. Not the default: a kernel needs a free SM, so a get from a kernel
 * that fills the GPU would never be served, where the copy engine serves it
 * (only atomics have that limit). At 1 PE on one H200, g through the proxy
 * with the values in device memory took 14.0-14.6 us as a fetch against
 * 15.6-16.7 as a copy; with them in the ring's cells, 17.9-18.3 against
 * 14.5-15.6. */
static bool get_as_fetch(const struct ushmemi_proxy *p, const struct ushmem_ring_request *req)
{
    return p->fold >= 2 && (req->value == 4 || req->value == 8) &&
           (req->offset & (req->value - 1)) == 0;
}

/* A request for a peer reached through an ordered transport: queued on the
 * device, nothing waited for here. A value in the ring is stored by the
 * device without a source buffer, and a value for the ring goes into the
 * result cell straight from the device. */
static void execute_ordered(struct ushmemi_proxy *p, const struct transport_ref *tr,
                            const struct ushmem_ring_request *req, uint64_t ticket)
{
    ushmem_status_t status;
    char name[48];
    bool device;
    bool put = req->op == USHMEM_RING_OP_PUT || req->op == USHMEM_RING_OP_PUT_NBI;
    struct ushmemi_dev_then then_word;
    const struct ushmemi_dev_then *then = NULL;
    uint64_t *lent = NULL; /* the result cell lent to the device, if any */

    if (req->op == USHMEM_RING_OP_AMO) {
        if (req->amo_op >= USHMEM_RING_AMO_OP_COUNT || req->amo_type >= USHMEM_RING_AMO_TYPE_COUNT) {
            fail(p, USHMEM_ERR_INVALID_PARAM, ticket,
                 "atomic to PE %d refused: unknown atomic op %u or type %u (remote offset 0x%" PRIx64
                 ")", req->pe, req->amo_op, req->amo_type, req->offset);
            if (req->flags & USHMEM_RING_FLAG_RESULT)
                put_result(p, ticket, 0);
            return;
        }
        uint64_t *result = NULL;
        if (req->flags & USHMEM_RING_FLAG_RESULT)
            result = lent = lend_result(p, ticket);
        else if (req->result != 0 && local_ok(p, req, ticket, "result", req->result))
            result = (uint64_t *)(uintptr_t)req->result;
        else if (req->result != 0)
            return;
        /* A set nobody reads back (a signal) is one aligned store, which
         * the device writes whole: a store, queued faster than a kernel. */
        then = fold_done(p, req, ticket, &then_word);
        if (req->amo_op == USHMEM_RING_AMO_SET && result == NULL)
            status = tr->ops->put_value_nbi(tr->t, req->pe, req->offset, req->value,
                                            amo_size(req->amo_type), then);
        else
            status = tr->ops->atomic_nbi(tr->t, req->pe, req->offset, amo_ops[req->amo_op],
                                         amo_types[req->amo_type], req->value, req->compare,
                                         result, then);
    } else if ((put && (req->flags & USHMEM_RING_FLAG_INLINE)) ||
               (!put && (req->flags & USHMEM_RING_FLAG_RESULT))) {
        if (req->value > sizeof(uint64_t)) {
            fail(p, USHMEM_ERR_INVALID_PARAM, ticket,
                 "%s to PE %d refused: %" PRIu64 " bytes do not fit in the ring (8 at most)",
                 op_name(req, name, sizeof(name)), req->pe, req->value);
            if (!put)
                put_result(p, ticket, 0);
            return;
        }
        if (put || get_as_fetch(p, req))
            then = fold_done(p, req, ticket, &then_word);
        if (!put)
            lent = lend_result(p, ticket);
        if (put)
            status = tr->ops->put_value_nbi(tr->t, req->pe, req->offset, req->local, req->value,
                                            then);
        else if (get_as_fetch(p, req))
            status = tr->ops->atomic_nbi(tr->t, req->pe, req->offset, USHMEMI_AMO_FETCH,
                                         req->value == 8 ? USHMEMI_AMO_UINT64 : USHMEMI_AMO_UINT32, 0,
                                         0, lent, then);
        else
            status = tr->ops->get_nbi(tr->t, req->pe, lent, req->offset, req->value);
    } else {
        void *local = (void *)(uintptr_t)req->local;
        if (!local_check(p, req, ticket, put ? "source" : "destination", req->local, &device))
            return;
        status = put ? tr->ops->put_nbi(tr->t, req->pe, req->offset, local, req->value)
                     : tr->ops->get_nbi(tr->t, req->pe, local, req->offset, req->value);
    }
    if (status != USHMEM_OK) {
        fail_request(p, req, ticket, status);
        /* Its reader, if the job goes on, reads 0 rather than the cell's
         * last value. The cell is already this ticket's. */
        if (lent != NULL && p->device_values != NULL)
            (void)p->dev_ops->write64(p->dev, lent, 0);
        else if (lent != NULL)
            *(volatile uint64_t *)lent = 0;
        return;
    }
    p->device_pending = true;
    if (then != NULL)
        p->done_copied = then->value;
}

static void fence_pending(struct ushmemi_proxy *p, uint64_t ticket)
{
    for (int i = 0; i < p->ntransports; i++) {
        struct transport_ref *tr = &p->transports[i];
        if (!tr->nbi_pending)
            continue;
        ushmem_status_t status = tr->ops->fence(tr->t);
        if (status != USHMEM_OK)
            fail(p, status, ticket, "fence on transport %s failed: %s", tr->ops->name,
                 ushmemi_status_string(status));
    }
}

/* A refused request that asked for a value gets 0 in its cell, so that its
 * reader, if the job goes on, reads nobody else's. */
static void refuse_result(struct ushmemi_proxy *p, const struct ushmem_ring_request *req,
                          uint64_t ticket)
{
    if (req->flags & USHMEM_RING_FLAG_RESULT)
        put_result(p, ticket, 0);
}

static void execute(struct ushmemi_proxy *p, const struct ushmem_ring_request *req,
                    uint64_t ticket);

/* A put with a signal, to a PE reached through an ordered transport that
 * chains the two: the store, the signal behind it and the counter's copy
 * (folded as for any store) in one submission, where apart they took two
 * calls into the driver one after the other before the signal could
 * leave. A set is the signal's write behind the store; an add, the
 * atomic's kernel writing the data first, where the device can. False
 * where that does not apply: the caller takes the put and the signal
 * apart. */
static bool put_signal_at_once(struct ushmemi_proxy *p, const struct ushmem_ring_request *req,
                               uint64_t ticket)
{
    if (p->signal_chain == 0 || req->value == 0 || req->value > sizeof(uint64_t) ||
        req->pe < 0 || req->pe >= p->npes || p->pe_transport[req->pe] < 0)
        return false;
    const struct transport_ref *tr = &p->transports[p->pe_transport[req->pe]];
    if (!tr->ordered || tr->ops->put_value_signal_nbi == NULL)
        return false;
    struct ushmemi_dev_then then_word;
    const struct ushmemi_dev_then *then = fold_done(p, req, ticket, &then_word);
    bool add = req->amo_op == USHMEM_RING_AMO_ADD; /* else a set (checked by the caller) */
    ushmem_status_t status = tr->ops->put_value_signal_nbi(
        tr->t, req->pe, req->offset, req->local, req->value, amo_ops[req->amo_op], req->reserved,
        req->compare, then);
    /* The put may be queued even where the signal failed: the device is
     * waited for either way before the ticket completes. */
    p->device_pending = true;
    if (status != USHMEM_OK) {
        fail(p, status, ticket,
             "put with signal to PE %d failed: remote offset 0x%" PRIx64 ", %" PRIu64
             " bytes, signal %s %" PRIu64 " at remote offset 0x%" PRIx64
             " (the put may have gone, the signal did not): %s",
             req->pe, req->offset, req->value, add ? "add of" : "set to", req->compare,
             req->reserved, ushmemi_status_string(status));
        return true;
    }
    if (then != NULL)
        p->done_copied = then->value;
    return true;
}

/* A put that carries a signal (FLAG_SIGNAL, ring.h): the put, then the
 * signal as the non-fetching atomic it stands for, both under the
 * request's ticket, on whatever transport reaches the PE: a blocking put
 * is complete at the target, or queued on the device ahead of the signal,
 * before the signal goes out. A put that failed sends no signal. */
static void execute_put_signal(struct ushmemi_proxy *p, const struct ushmem_ring_request *req,
                               uint64_t ticket)
{
    char name[48];
    if (req->op != USHMEM_RING_OP_PUT || !(req->flags & USHMEM_RING_FLAG_INLINE) ||
        (req->amo_op != USHMEM_RING_AMO_SET && req->amo_op != USHMEM_RING_AMO_ADD) ||
        req->amo_type != USHMEM_RING_AMO_UINT64) {
        fail(p, USHMEM_ERR_INVALID_PARAM, ticket,
             "put with signal to PE %d refused: %s with flags 0x%x, signal op %u of type %u "
             "(an inline put with a 64-bit set or add; remote offset 0x%" PRIx64
             ", signal offset 0x%" PRIx64 ", signal value %" PRIu64 ")",
             req->pe, op_name(req, name, sizeof(name)), req->flags, req->amo_op, req->amo_type,
             req->offset, req->reserved, req->compare);
        return;
    }
    if (put_signal_at_once(p, req, ticket))
        return;
    struct ushmem_ring_request put = *req, signal = {0};
    put.flags = (uint8_t)(req->flags & ~USHMEM_RING_FLAG_SIGNAL);
    put.amo_op = put.amo_type = 0;
    put.compare = put.reserved = 0;
    signal.op = USHMEM_RING_OP_AMO;
    signal.amo_op = req->amo_op;
    signal.amo_type = USHMEM_RING_AMO_UINT64;
    signal.pe = req->pe;
    signal.offset = req->reserved;
    signal.value = req->compare;

    unsigned long failures = p->failures;
    p->fold_held = true;
    execute(p, &put, ticket);
    p->fold_held = false;
    if (p->failures == failures)
        execute(p, &signal, ticket);
    else
        ushmemi_error("proxy on PE %d, request %" PRIu64 ": that put carried a signal (%s %" PRIu64
                      " at remote offset 0x%" PRIx64 " on PE %d), which was not sent",
                      p->my_pe, ticket, req->amo_op == USHMEM_RING_AMO_SET ? "set to" : "add of",
                      req->compare, req->reserved, req->pe);
}

static void execute(struct ushmemi_proxy *p, const struct ushmem_ring_request *req, uint64_t ticket)
{
    const struct transport_ref *tr;
    ushmem_status_t status;
    void *local = (void *)(uintptr_t)req->local;
    char name[48];
    bool nbi = false;

    if (req->op == USHMEM_RING_OP_FENCE) {
        fence_pending(p, ticket);
        return;
    }
    if (req->flags & USHMEM_RING_FLAG_SIGNAL) {
        execute_put_signal(p, req, ticket);
        return;
    }
    if (req->op == USHMEM_RING_OP_NONE || req->op >= USHMEM_RING_OP_COUNT) {
        fail(p, USHMEM_ERR_INVALID_PARAM, ticket,
             "unknown request op %u to PE %d (remote offset 0x%" PRIx64 ", local address 0x%" PRIx64
             ")", req->op, req->pe, req->offset, req->local);
        refuse_result(p, req, ticket);
        return;
    }
    if (req->pe < 0 || req->pe >= p->npes || p->pe_transport[req->pe] < 0) {
        fail(p, USHMEM_ERR_NO_ROUTE, ticket,
             "%s to PE %d refused: no proxy route to that PE (of %d; remote offset 0x%" PRIx64
             ", local address 0x%" PRIx64 ")",
             op_name(req, name, sizeof(name)), req->pe, p->npes, req->offset, req->local);
        refuse_result(p, req, ticket);
        return;
    }
    tr = &p->transports[p->pe_transport[req->pe]];
    if (tr->ordered) {
        execute_ordered(p, tr, req, ticket);
        return;
    }

    bool device = false;
    bool in_ring = (req->op == USHMEM_RING_OP_PUT || req->op == USHMEM_RING_OP_PUT_NBI)
                       ? (req->flags & USHMEM_RING_FLAG_INLINE) != 0
                       : (req->flags & USHMEM_RING_FLAG_RESULT) != 0;
    switch (in_ring && req->op != USHMEM_RING_OP_AMO ? USHMEM_RING_OP_COUNT : req->op) {
    case USHMEM_RING_OP_COUNT: /* the value travels in the ring */
        status = small_rma(p, tr, req, ticket,
                           req->op == USHMEM_RING_OP_PUT || req->op == USHMEM_RING_OP_PUT_NBI);
        break;
    case USHMEM_RING_OP_PUT:
    case USHMEM_RING_OP_PUT_NBI:
        if (!local_check(p, req, ticket, "source", req->local, &device))
            return;
        nbi = req->op == USHMEM_RING_OP_PUT_NBI;
        if (device && p->pe_devmem[req->pe] == USHMEMI_PROXY_DEVMEM_STAGE) {
            nbi = false; /* staged requests complete before the next one */
            status = staged_rma(p, tr, req, true);
            break;
        }
        status = nbi ? tr->ops->put_nbi(tr->t, req->pe, req->offset, local, req->value)
                     : tr->ops->put(tr->t, req->pe, req->offset, local, req->value);
        break;
    case USHMEM_RING_OP_GET:
    case USHMEM_RING_OP_GET_NBI:
        if (!local_check(p, req, ticket, "destination", req->local, &device))
            return;
        nbi = req->op == USHMEM_RING_OP_GET_NBI;
        if (device && p->pe_devmem[req->pe] == USHMEMI_PROXY_DEVMEM_STAGE) {
            nbi = false;
            status = staged_rma(p, tr, req, false);
            break;
        }
        status = nbi ? tr->ops->get_nbi(tr->t, req->pe, local, req->offset, req->value)
                     : tr->ops->get(tr->t, req->pe, local, req->offset, req->value);
        break;
    default: /* USHMEM_RING_OP_AMO; run_amo reports its own failures */
        run_amo(p, tr, req, ticket);
        return;
    }
    if (status != USHMEM_OK) {
        fail_request(p, req, ticket, status);
        return;
    }
    if (nbi) {
        p->transports[p->pe_transport[req->pe]].nbi_pending = true;
        p->nbi_pending = true;
    }
}

/* Writes the completed counter's copy in device memory. A failure is
 * reported once (the abort callback normally ends the job); if the job goes
 * on, every later pass of the loop tries again, so that producers waiting on
 * the copy are not left behind for good. */
static void copy_done(struct ushmemi_proxy *p, uint64_t upto)
{
    ushmem_status_t status = p->dev_ops->write64(p->dev, p->done_copy, upto);

    if (status == USHMEM_OK) {
        p->done_copied = upto;
    } else if (!p->done_failed) {
        p->done_failed = true;
        fail(p, status, upto - 1,
             "writing the completed counter %" PRIu64 " to its copy in device memory at %p "
             "failed: %s", upto, (void *)p->done_copy, ushmemi_status_string(status));
    }
}

/* While idle and spinning, every PROXY_WARM_NS, what the first request
 * after a quiet spell would otherwise find asleep is kept in use: warm 1,
 * the counter's copy written again with the value it holds (the device's
 * front end and the proxy's stream); 2, also an 8-byte copy of it into each
 * mapped peer's warm word (the links to the peers); 3, also one into a
 * word of host memory (the device's link to the host, which the ring
 * crosses); 4, the default, also a small kernel reading the counter's copy
 * (the launch path a fetch-add or a signal takes, which a `g` and a copy
 * were measured to need too), where the device is this PE's alone
 * (params.warm_kernel: another process's kernels would have to give way to
 * it). The device runs that kernel on a stream of its own and launches the
 * next only once the last one has run (dev_ops->keep_warm): behind a
 * program's kernel that holds every SM it waits alone, where on the
 * backend's stream it held up every request queued after it, and a job
 * whose kernel filled the GPU and waited for the proxy hung. */
#define PROXY_WARM_NS 1000000L
static void keep_warm(struct ushmemi_proxy *p, uint64_t now)
{
    if (p->warm == 0 || p->done_copy == NULL || now - p->warmed_at < PROXY_WARM_NS)
        return;
    p->warmed_at = now;
    copy_done(p, p->done_copied);
    if (p->warm >= 3 && p->streams.words != NULL)
        (void)p->dev_ops->copy(p->dev, (void *)&p->streams.words[2 * PROXY_STREAM_SLOTS],
                               p->done_copy, sizeof(uint64_t));
    if (p->warm >= 4 && p->warm_kernel && p->dev_ops->keep_warm != NULL &&
        p->dev_ops->keep_warm(p->dev, p->done_copy))
        p->stats.warm_kernels++;
    if (p->warm < 2 || p->warm_offset == 0)
        return;
    for (int pe = 0; pe < p->npes; pe++) {
        int i = p->pe_transport[pe];
        if (pe == p->my_pe || i < 0 || !p->transports[i].ordered)
            continue;
        (void)p->transports[i].ops->put(p->transports[i].t, pe, p->warm_offset, p->done_copy,
                                        sizeof(uint64_t));
    }
}

/* Moves the completed counter up to every request taken so far, completing
 * outstanding non-blocking ones first. With requests queued on the device,
 * only its copy moves now, written by the device behind them; the host
 * counter waits for settle. */
static void publish(struct ushmemi_proxy *p)
{
    publish_upto(p, ushmemi_ring_taken(p->ring));
}

/* publish, for the tickets below upto only (upto >= what was published). */
static void publish_upto(struct ushmemi_proxy *p, uint64_t upto)
{
    if (upto == p->published) {
        if (p->done_copy != NULL && p->done_copied != upto)
            copy_done(p, upto); /* a failed write, tried again */
        return;
    }
    uint64_t t0 = p->stats.timed ? now_ns() : 0;
    if (p->nbi_pending) {
        for (int i = 0; i < p->ntransports; i++) {
            struct transport_ref *tr = &p->transports[i];
            if (!tr->nbi_pending)
                continue;
            ushmem_status_t status = tr->ops->quiet(tr->t);
            if (status != USHMEM_OK)
                fail(p, status, upto - 1,
                     "quiet on transport %s failed, completing non-blocking requests up to "
                     "request %" PRIu64 ": %s",
                     tr->ops->name, upto - 1, ushmemi_status_string(status));
            tr->nbi_pending = false;
        }
        p->nbi_pending = false;
    }
    if (!p->device_pending)
        ushmemi_ring_complete(p->ring, upto);
    p->published = upto;
    if (p->done_copy != NULL && p->done_copied != upto) /* else folded into the request */
        copy_done(p, upto);
    p->stats.completions++;
    if (p->stats.timed)
        p->stats.complete_ns += now_ns() - t0;
}

/* Moves the host counter past the requests queued on the device: waits for
 * the device, so only when there is nothing else to do. */
static void settle(struct ushmemi_proxy *p)
{
    if (!p->device_pending)
        return;
    ushmem_status_t status = p->dev_ops->sync(p->dev);
    if (status != USHMEM_OK) {
        fail(p, status, p->published - 1,
             "the %s device failed to complete the requests queued up to request %" PRIu64
             ": %s", p->dev_ops->name, p->published - 1, ushmemi_status_string(status));
    }
    p->device_pending = false;
    ushmemi_ring_complete(p->ring, p->published);
}

/* A request that may wait in the gathered list (see PROXY_GATHER_MIN). */
static bool gatherable(const struct ushmemi_proxy *p, const struct ushmem_ring_request *req)
{
    return req->op == USHMEM_RING_OP_PUT_NBI && !(req->flags & USHMEM_RING_FLAG_INLINE) &&
           req->value >= PROXY_GATHER_MIN && req->pe >= 0 && req->pe < p->npes &&
           p->pe_transport[req->pe] >= 0 && p->transports[p->pe_transport[req->pe]].ordered;
}

static int compare_gathered(const void *a, const void *b)
{
    const struct gathered_put *x = a, *y = b;
    if (x->pe != y->pe)
        return x->pe < y->pe ? -1 : 1;
    return x->offset < y->offset ? -1 : x->offset > y->offset;
}

/* Issues the gathered puts, sorted, as runs contiguous at both ends, each
 * one copy. A run takes the next piece that starts where it ends, skipping
 * pieces for the same place (a kernel's blocks putting their shares of one
 * message in a loop: each round of the loop is a run of its own). */
static void flush_gathered(struct ushmemi_proxy *p)
{
    if (p->ngathered == 0)
        return;
    qsort(p->gathered, p->ngathered, sizeof(*p->gathered), compare_gathered);
    for (unsigned i = 0; i < p->ngathered; i++) {
        if (p->gathered[i].len == 0)
            continue; /* taken into an earlier run */
        struct gathered_put run = p->gathered[i];
        for (unsigned k = i + 1; k < p->ngathered; k++) {
            struct gathered_put *next = &p->gathered[k];
            if (next->pe != run.pe || next->offset > run.offset + run.len)
                break; /* sorted: nothing further can follow on */
            if (next->len != 0 && next->offset == run.offset + run.len &&
                next->local == run.local + run.len) {
                run.len += next->len;
                next->len = 0;
            }
        }
        const struct transport_ref *tr = &p->transports[p->pe_transport[run.pe]];
        ushmem_status_t status = tr->ops->put_nbi(tr->t, run.pe, run.offset,
                                                  (const void *)(uintptr_t)run.local, run.len);
        if (status != USHMEM_OK)
            fail(p, status, ushmemi_ring_taken(p->ring) - 1,
                 "put_nbi to PE %d failed: remote offset 0x%" PRIx64 ", local address 0x%" PRIx64
                 ", %" PRIu64 " bytes (gathered): %s", run.pe, run.offset, run.local, run.len,
                 ushmemi_status_string(status));
        p->device_pending = true;
    }
    p->ngathered = 0;
}

/* Takes the next request, waiting up to PROXY_GATHER_WAIT_NS for one while
 * puts are gathered. */
static bool take_next(struct ushmemi_proxy *p, struct ushmem_ring_request *req_p,
                      uint64_t *ticket_p)
{
    if (ushmemi_ring_take(p->ring, req_p, ticket_p))
        return true;
    if (p->ngathered == 0)
        return false;
    uint64_t until = now_ns() + PROXY_GATHER_WAIT_NS;
    do {
        ushmem_ring_pause();
        if (ushmemi_ring_take(p->ring, req_p, ticket_p))
            return true;
    } while (now_ns() < until);
    return false;
}

/* Executes up to PROXY_BATCH requests, or more while puts are being
 * gathered (up to PROXY_GATHER_MAX of them); returns how many. */
static unsigned process(struct ushmemi_proxy *p)
{
    struct ushmem_ring_request req;
    uint64_t ticket;
    unsigned n = 0;

    while ((n < PROXY_BATCH || (p->ngathered > 0 && p->ngathered < PROXY_GATHER_MAX)) &&
           take_next(p, &req, &ticket)) {
        uint64_t t0 = p->stats.timed ? now_ns() : 0;
        bool device;
        if (gatherable(p, &req)) { /* the loop's condition leaves room */
            if (local_check(p, &req, ticket, "source", req.local, &device))
                p->gathered[p->ngathered++] =
                    (struct gathered_put){req.pe, req.offset, req.local, req.value};
            p->stats.requests++;
            n++;
            continue;
        }
        flush_gathered(p);
        execute(p, &req, ticket);
        if (p->stats.timed)
            p->stats.execute_ns += now_ns() - t0;
        p->stats.requests++;
        n++;
        /* A blocking request's producer is waiting: tell it now. */
        if (blocking(&req))
            publish(p);
    }
    flush_gathered(p);
    return n;
}

/* Puts are complete at the target before a stream goes on: a signal or
 * a barrier's flag that it posts next must not overtake them. */
static void execute_stream(struct ushmemi_proxy *p, const struct ushmem_ring_request *req,
                           uint64_t seq)
{
    execute(p, req, seq);
    if (req->op != USHMEM_RING_OP_PUT)
        return;
    struct transport_ref *tr = &p->transports[p->pe_transport[req->pe]];
    ushmem_status_t status = tr->ops->quiet(tr->t);
    if (status != USHMEM_OK)
        fail(p, status, seq, "quiet on transport %s after a put to PE %d for a stream failed: %s",
             tr->ops->name, req->pe, ushmemi_status_string(status));
    tr->nbi_pending = false;
}

static bool streams_waiting(struct ushmemi_proxy *p)
{
    return p->streams.oldest <=
           atomic_load_explicit(&p->streams.posted, memory_order_acquire);
}

/* Executes every posted stream request whose stream has reached it; returns
 * how many. */
static unsigned process_streams(struct ushmemi_proxy *p)
{
    uint64_t posted = atomic_load_explicit(&p->streams.posted, memory_order_acquire);
    ushmem_ring_word_t *trigger = p->streams.words, *done = trigger + PROXY_STREAM_SLOTS;
    unsigned n = 0;

    for (uint64_t seq = p->streams.oldest; seq <= posted; seq++) {
        unsigned slot = (unsigned)(seq % PROXY_STREAM_SLOTS);
        struct stream_entry *e = &p->streams.entries[slot];
        if (atomic_load_explicit(&e->seq, memory_order_acquire) != seq ||
            ushmem_ring_load_acquire(&trigger[slot]) < seq)
            continue; /* done already, or its stream is not there yet */
        uint64_t t0 = p->stats.timed ? now_ns() : 0;
        execute_stream(p, &e->req, seq);
        ushmem_ring_store_release(&done[slot], seq);
        atomic_store_explicit(&e->seq, 0, memory_order_release);
        if (p->stats.timed)
            p->stats.execute_ns += now_ns() - t0;
        p->stats.requests++;
        n++;
    }
    while (p->streams.oldest <= posted &&
           atomic_load_explicit(&p->streams.entries[p->streams.oldest % PROXY_STREAM_SLOTS].seq,
                                memory_order_acquire) != p->streams.oldest)
        p->streams.oldest++;
    return n;
}

ushmem_status_t ushmemi_proxy_stream_post(struct ushmemi_proxy *p,
                                          const struct ushmem_ring_request *req,
                                          struct ushmemi_proxy_stream_slot *slot_p)
{
    char name[48];

    bool amo = req->op == USHMEM_RING_OP_AMO;
    if ((req->op != USHMEM_RING_OP_PUT && req->op != USHMEM_RING_OP_GET && !amo) ||
        (req->flags & (USHMEM_RING_FLAG_RESULT | USHMEM_RING_FLAG_SIGNAL)) ||
        (amo && req->result != 0) ||
        (!amo && (req->flags & USHMEM_RING_FLAG_INLINE) && req->value > sizeof(uint64_t))) {
        ushmemi_error("proxy on PE %d: a stream request (%s to PE %d, flags 0x%x, value %" PRIu64
                      ") refused: a stream hands the proxy blocking puts and gets (a value of at "
                      "most 8 bytes in the request) and atomics without a result",
                      p->my_pe, op_name(req, name, sizeof(name)), req->pe, req->flags,
                      req->value);
        return USHMEM_ERR_INVALID_PARAM;
    }
    if (req->pe < 0 || req->pe >= p->npes || p->pe_transport[req->pe] < 0) {
        ushmemi_error("proxy on PE %d: a stream request (%s) for PE %d refused: no proxy route "
                      "to that PE (of %d)",
                      p->my_pe, op_name(req, name, sizeof(name)), req->pe, p->npes);
        return USHMEM_ERR_NO_ROUTE;
    }
    const struct transport_ref *tr = &p->transports[p->pe_transport[req->pe]];
    if (tr->ordered) {
        ushmemi_error("proxy on PE %d: a stream request for PE %d refused: transport %s queues "
                      "its work on the device, where a stream reaches that PE itself",
                      p->my_pe, req->pe, tr->ops->name);
        return USHMEM_ERR_UNSUPPORTED;
    }
    pthread_mutex_lock(&p->streams.lock);
    uint64_t seq = p->streams.next + 1;
    unsigned slot = (unsigned)(seq % PROXY_STREAM_SLOTS);
    struct stream_entry *e = &p->streams.entries[slot];
    unsigned spins = 0;
    while (atomic_load_explicit(&e->seq, memory_order_acquire) != 0)
        ushmem_ring_backoff(&spins); /* the slot's last request: its stream is not there yet */
    e->req = *req;
    atomic_store_explicit(&e->seq, seq, memory_order_release);
    p->streams.next = seq;
    atomic_store_explicit(&p->streams.posted, seq, memory_order_release);
    pthread_mutex_unlock(&p->streams.lock);
    *slot_p = (struct ushmemi_proxy_stream_slot){
        .trigger = (uint64_t *)&p->streams.words[slot],
        .done = (uint64_t *)&p->streams.words[PROXY_STREAM_SLOTS + slot],
        .seq = seq,
    };
    return USHMEM_OK;
}

static uint64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* What drained compares the consumer's head with at stop: the ring's tail
 * (NULL), or where the producers take tickets in device memory, that
 * tail's value read through the device (the CPU never touches device
 * memory). If the read fails, the job is told and the ring counts as
 * drained: nothing could be waited for. */
static const uint64_t *producers_tail(struct ushmemi_proxy *p)
{
    if (p->device_tail == NULL)
        return NULL;
    ushmem_status_t status =
        p->dev_ops->copy(p->dev, &p->tail_read, p->device_tail, sizeof(p->tail_read));
    if (status == USHMEM_OK)
        status = p->dev_ops->sync(p->dev);
    if (status != USHMEM_OK) {
        fail(p, status, ushmemi_ring_taken(p->ring), "reading the ring's tail at %p in device "
             "memory at stop failed: %s", (void *)p->device_tail, ushmemi_status_string(status));
        p->tail_read = ushmemi_ring_taken(p->ring);
    }
    return &p->tail_read;
}

static void *proxy_main(void *arg)
{
    struct ushmemi_proxy *p = arg;
    uint64_t idle_since = 0; /* 0: the ring was busy at the last poll */
    long sleep_ns = IDLE_SLEEP_MIN_NS;

    for (;;) {
        unsigned n = process(p) + process_streams(p);

        /* The ring is empty or a batch is done: complete what was taken. */
        publish(p);
        if (n > 0) {
            idle_since = 0;
            sleep_ns = IDLE_SLEEP_MIN_NS;
            continue;
        }
        /* Stop is read before drained: every ticket taken before stop was
         * called is then visible in tail and gets executed. */
        if (atomic_load_explicit(&p->stop, memory_order_acquire) &&
            ushmemi_ring_drained(p->ring, producers_tail(p)))
            break;

        uint64_t now = now_ns();
        if (idle_since == 0)
            idle_since = now;
        if (p->idle_spin) {
            /* Awake whatever the quiet spell: settle once it has lasted,
             * then keep polling. */
            if (now - idle_since >= IDLE_YIELD_NS) {
                settle(p);
                keep_warm(p, now);
                for (int i = 0; i < p->ntransports; i++)
                    if (p->transports[i].ops->keep_warm != NULL)
                        p->transports[i].ops->keep_warm(p->transports[i].t);
            }
            ushmem_ring_pause();
        } else if (now - idle_since < IDLE_SPIN_NS) {
            ushmem_ring_pause();
        } else if (now - idle_since < IDLE_YIELD_NS) {
            ushmem_ring_yield();
        } else if (streams_waiting(p)) {
            /* A stream waits for the proxy as soon as it gets to its
             * request: no sleeping while one is posted. */
            settle(p);
            ushmem_ring_yield();
        } else {
            settle(p); /* waits for the device: only once nothing has come for a while */
            struct timespec ts = {0, sleep_ns};
            nanosleep(&ts, NULL);
            p->stats.sleeps++;
            sleep_ns = sleep_ns * 2 > IDLE_SLEEP_MAX_NS ? IDLE_SLEEP_MAX_NS : sleep_ns * 2;
        }
    }
    process_streams(p);
    publish(p);
    settle(p);
    return NULL;
}

/* One entry per distinct transport instance, so that quiet and fence reach
 * each transport once however many PEs share it. */
static ushmem_status_t map_transports(struct ushmemi_proxy *p, const struct ushmemi_proxy_peer *peers)
{
    for (int pe = 0; pe < p->npes; pe++) {
        const struct ushmemi_proxy_peer *peer = &peers[pe];
        int idx = -1;

        p->pe_transport[pe] = -1;
        if (peer->ops == NULL)
            continue;
        if (peer->ops->size < sizeof(struct ushmemi_transport_ops)) {
            ushmemi_error("ushmemi_proxy_start: transport '%s' for PE %d has an ops table of %zu "
                          "bytes, expected %zu",
                          peer->ops->name, pe, peer->ops->size, sizeof(struct ushmemi_transport_ops));
            return USHMEM_ERR_INVALID_PARAM;
        }
        for (int i = 0; i < p->ntransports; i++) {
            if (p->transports[i].ops == peer->ops && p->transports[i].t == peer->transport) {
                idx = i;
                break;
            }
        }
        if (idx < 0) {
            idx = p->ntransports++;
            /* Queued on the device only where the device completes the
             * counter's copy behind them and can queue every kind of work. */
            bool ordered = peer->ops->device_ordered && peer->ops->put_value_nbi != NULL &&
                           peer->ops->atomic_nbi != NULL && p->done_copy != NULL &&
                           p->dev_ops->store != NULL && p->dev_ops->amo_async != NULL;
            p->transports[idx] = (struct transport_ref){peer->ops, peer->transport, false, ordered};
        }
        p->pe_transport[pe] = idx;
        p->pe_devmem[pe] = peer->device_memory;
        if (peer->device_memory == USHMEMI_PROXY_DEVMEM_STAGE && p->stage == NULL) {
            /* Host memory the transport may take: plain malloc, as the
             * transports register buffers they are handed when needed. */
            p->stage = malloc(PROXY_STAGE_SIZE);
            if (p->stage == NULL) {
                ushmemi_error("ushmemi_proxy_start: on PE %d: cannot allocate the %zu-byte "
                              "staging buffer", p->my_pe, PROXY_STAGE_SIZE);
                return USHMEM_ERR_NO_MEMORY;
            }
        }
    }
    return USHMEM_OK;
}

/* The stream requests' slots and their words, in host memory the device
 * reaches (host_alloc), and after them the word keep_warm copies into. */
#define PROXY_STREAM_WORDS (2 * PROXY_STREAM_SLOTS + 1)
static ushmem_status_t streams_create(struct ushmemi_proxy *p)
{
    size_t bytes = PROXY_STREAM_WORDS * sizeof(ushmem_ring_word_t);
    void *words;

    pthread_mutex_init(&p->streams.lock, NULL);
    p->streams.oldest = 1;
    atomic_init(&p->streams.posted, 0);
    p->streams.entries = calloc(PROXY_STREAM_SLOTS, sizeof(*p->streams.entries));
    if (p->streams.entries == NULL) {
        ushmemi_error("ushmemi_proxy_start: on PE %d: cannot allocate %u stream request slots",
                      p->my_pe, PROXY_STREAM_SLOTS);
        return USHMEM_ERR_NO_MEMORY;
    }
    ushmem_status_t status = p->dev_ops->host_alloc(p->dev, bytes, &words);
    if (status != USHMEM_OK) {
        ushmemi_error("ushmemi_proxy_start: on PE %d: %s host_alloc of %zu bytes for the stream "
                      "requests' words failed: %s",
                      p->my_pe, p->dev_ops->name, bytes, ushmemi_status_string(status));
        return status;
    }
    memset(words, 0, bytes);
    p->streams.words = words;
    return USHMEM_OK;
}

static void streams_destroy(struct ushmemi_proxy *p)
{
    if (p->streams.entries == NULL)
        return; /* never created */
    if (p->streams.words != NULL)
        p->dev_ops->host_free(p->dev, p->streams.words,
                              PROXY_STREAM_WORDS * sizeof(ushmem_ring_word_t));
    free(p->streams.entries);
    pthread_mutex_destroy(&p->streams.lock);
}

ushmem_status_t ushmemi_proxy_start(const struct ushmemi_proxy_params *params,
                                    struct ushmemi_proxy **p_p)
{
    ushmem_status_t status;
    struct ushmemi_proxy *p;
    int rc;

    if (params->dev_ops == NULL || params->abort_cb == NULL || params->npes < 1 ||
        params->peers == NULL) {
        ushmemi_error("ushmemi_proxy_start: on PE %d: missing device ops, abort callback or peer "
                      "table (npes %d)",
                      params->my_pe, params->npes);
        return USHMEM_ERR_INVALID_PARAM;
    }
    if (params->done_copy != NULL && params->dev_ops->write64 == NULL) {
        ushmemi_error("ushmemi_proxy_start: on PE %d: a device copy of the completed counter "
                      "was asked for, but the %s backend cannot write device memory behind its "
                      "copies", params->my_pe, params->dev_ops->name);
        return USHMEM_ERR_INVALID_PARAM;
    }
    if ((params->ring_tail != NULL || params->ring_values != NULL) &&
        params->done_copy == NULL) {
        ushmemi_error("ushmemi_proxy_start: on PE %d: the ring's tail and values in device "
                      "memory need the counter's copy there, which completes them",
                      params->my_pe);
        return USHMEM_ERR_INVALID_PARAM;
    }
    p = calloc(1, sizeof(*p));
    if (p == NULL) {
        ushmemi_error("ushmemi_proxy_start: on PE %d: cannot allocate the proxy", params->my_pe);
        return USHMEM_ERR_NO_MEMORY;
    }
    p->dev_ops = params->dev_ops;
    p->dev = params->dev;
    p->my_pe = params->my_pe;
    p->npes = params->npes;
    p->abort_cb = params->abort_cb;
    p->done_copy = params->done_copy;
    p->device_tail = params->ring_tail;
    p->device_values = params->ring_values;
    p->idle_spin = params->idle_spin != 0;
    p->warm_offset = params->warm_offset;
    p->warm_kernel = params->warm_kernel != 0;
    const char *warm = getenv("USHMEMI_PROXY_WARM"); /* measurement switch */
    p->warm = warm != NULL ? atoi(warm) : 4;
    const char *fold = getenv("USHMEMI_PROXY_FOLD"); /* measurement switch */
    p->fold = fold != NULL ? atoi(fold) : 1;
    const char *chain = getenv("USHMEMI_PROXY_SIGNAL_CHAIN"); /* measurement switch */
    p->signal_chain = chain != NULL ? atoi(chain) : 1;
    p->stats.timed = ushmemi_log_level >= USHMEMI_LOG_DEBUG;
    p->abort_ctx = params->abort_ctx;
    atomic_init(&p->stop, false);

    p->pe_transport = calloc((size_t)p->npes, sizeof(*p->pe_transport));
    p->transports = calloc((size_t)p->npes, sizeof(*p->transports));
    p->pe_devmem = calloc((size_t)p->npes, sizeof(*p->pe_devmem));
    p->gathered = calloc(PROXY_GATHER_MAX, sizeof(*p->gathered));
    if (p->pe_transport == NULL || p->transports == NULL || p->pe_devmem == NULL ||
        p->gathered == NULL) {
        ushmemi_error("ushmemi_proxy_start: on PE %d: cannot allocate the table of %d peers",
                      p->my_pe, p->npes);
        status = USHMEM_ERR_NO_MEMORY;
        goto free_tables;
    }
    status = map_transports(p, params->peers);
    if (status != USHMEM_OK)
        goto free_tables;
    status = streams_create(p);
    if (status != USHMEM_OK)
        goto free_tables;

    status = ushmemi_ring_create(p->dev_ops, p->dev,
                                 params->capacity ? params->capacity : PROXY_DEFAULT_CAPACITY,
                                 &p->ring);
    if (status != USHMEM_OK)
        goto free_tables;

    /* With signals blocked and off a lone bound CPU (threads.h). */
    rc = ushmemi_helper_thread_start(&p->thread, proxy_main, p, "ushmem-proxy",
                                     params->local_rank, params->local_size);
    if (rc != 0) {
        ushmemi_error("ushmemi_proxy_start: on PE %d: pthread_create failed: %s", p->my_pe,
                      strerror(rc));
        status = USHMEM_ERR_NO_MEMORY;
        goto destroy_ring;
    }
    *p_p = p;
    return USHMEM_OK;

destroy_ring:
    ushmemi_ring_destroy(p->ring);
free_tables:
    streams_destroy(p);
    free(p->gathered);
    free(p->stage);
    free(p->pe_devmem);
    free(p->transports);
    free(p->pe_transport);
    free(p);
    return status;
}

struct ushmem_ring_header *ushmemi_proxy_ring(struct ushmemi_proxy *p)
{
    return ushmemi_ring_header(p->ring);
}

uint64_t ushmemi_proxy_issued(struct ushmemi_proxy *p)
{
    if (p->device_tail != NULL)
        return ushmemi_ring_published(p->ring);
    return ushmem_ring_load_acquire(&ushmemi_ring_header(p->ring)->tail);
}

void ushmemi_proxy_stop(struct ushmemi_proxy *p)
{
    if (p == NULL)
        return;
    atomic_store_explicit(&p->stop, true, memory_order_release);
    pthread_join(p->thread, NULL);
    /* The last copy of the counter lands before its memory can go, and
     * the last warm kernel, which reads it, has run. */
    if (p->done_copy != NULL && p->dev_ops->sync(p->dev) != USHMEM_OK)
        ushmemi_warn("proxy: the device did not finish writing the last completed counter");
    if (p->warm >= 4 && p->warm_kernel && p->dev_ops->keep_warm != NULL)
        (void)p->dev_ops->keep_warm(p->dev, NULL);
    ushmemi_debug("proxy: %" PRIu64 " requests executed in %.3f ms; %" PRIu64 " completions "
                  "(transport quiet and counter) took %.3f ms; %" PRIu64 " idle sleeps; %" PRIu64
                  " warm kernels",
                  p->stats.requests, (double)p->stats.execute_ns / 1e6, p->stats.completions,
                  (double)p->stats.complete_ns / 1e6, p->stats.sleeps, p->stats.warm_kernels);
    ushmemi_ring_destroy(p->ring);
    if (streams_waiting(p)) {
        uint64_t left = 0;
        for (unsigned i = 0; i < PROXY_STREAM_SLOTS; i++)
            left += atomic_load(&p->streams.entries[i].seq) != 0;
        ushmemi_warn("proxy on PE %d: %" PRIu64 " stream-ordered requests were still waiting for "
                     "their streams to reach them at finalize and were dropped; synchronize "
                     "streams before shmem_finalize",
                     p->my_pe, left);
        p->streams.words = NULL; /* a stream may still write them: not freed */
    }
    streams_destroy(p);
    free(p->gathered);
    free(p->stage);
    free(p->pe_devmem);
    free(p->transports);
    free(p->pe_transport);
    free(p);
}

ushmem_status_t ushmemi_proxy_cpu_time(struct ushmemi_proxy *p, uint64_t *ns_p)
{
    clockid_t clock;
    struct timespec ts;
    int rc = pthread_getcpuclockid(p->thread, &clock);

    if (rc != 0) {
        ushmemi_error("ushmemi_proxy_cpu_time: pthread_getcpuclockid failed: %s", strerror(rc));
        return USHMEM_ERR_IO;
    }
    if (clock_gettime(clock, &ts) != 0) {
        ushmemi_error("ushmemi_proxy_cpu_time: clock_gettime on the proxy thread's clock failed");
        return USHMEM_ERR_IO;
    }
    *ns_p = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    return USHMEM_OK;
}
