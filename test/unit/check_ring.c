/* Check suite for the proxy layer: the request ring (layout, tickets, back
 * pressure, completion counter) and the proxy thread (dispatch, quiet, fence,
 * failures, device-memory refusal, draining stop, idle backoff, the copy of
 * the completed counter, the thread's CPUs), driven by host threads as
 * producers against a mock transport that records every call. */
#include <check.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../src/common/log.h"
#include "../../src/common/threads.h"
#include "../../src/common/vars.h"
#include "../../src/proxy/proxy.h"

#define NPES 4
#define MAX_CALLS 70000
#define MAX_PRODUCERS 8

/* ---- The mock transport: records calls; only the proxy thread calls it. ---- */

enum call_kind {
    CALL_PUT, CALL_GET, CALL_PUT_NBI, CALL_GET_NBI, CALL_AMO, CALL_FENCE, CALL_QUIET, CALL_STORE,
};

struct call {
    enum call_kind kind;
    int pe;
    uint64_t offset;
    uint64_t local;
    uint64_t len;
    uint64_t first8; /* a put's first bytes, as the transport saw them */
    bool delivered; /* blocking calls at once; nbi ones at the next quiet */
    bool then;      /* an ordered call came with a `then` */
    uint64_t completed_seen, done_seen; /* the ring's counter and its copy at the call */
};

struct ushmemi_transport {
    struct call *calls;
    atomic_size_t ncalls;
    size_t first_undelivered;
    int fail_pe;             /* put to this PE fails; -1: none */
    atomic_int gate_closed;  /* while set, the first call waits inside the transport */
    atomic_int entered;      /* calls that have started */
    unsigned nbi_delay_us;   /* makes non-blocking calls slow */
    struct ushmem_ring_header *ring;
    atomic_int completed_ahead; /* set if completed ever exceeded executed calls */
    cpu_set_t put_cpus;         /* the CPUs of the thread that made the last put */
};

static struct ushmemi_transport mock;
static ushmem_ring_word_t done_cell; /* the counter's copy (start_ordered_proxy) */

static void mock_reset(void)
{
    free(mock.calls);
    memset(&mock, 0, sizeof(mock));
    mock.calls = calloc(MAX_CALLS, sizeof(*mock.calls));
    ck_assert_ptr_nonnull(mock.calls);
    mock.fail_pe = -1;
}

static struct call *record(struct ushmemi_transport *t, enum call_kind kind, int pe, uint64_t offset,
                           uint64_t local, uint64_t len)
{
    size_t n = atomic_load(&t->ncalls);

    atomic_fetch_add(&t->entered, 1);
    while (atomic_load(&t->gate_closed))
        usleep(200);
    /* The proxy must never announce completion of a request not yet run. */
    if (t->ring != NULL && ushmem_ring_load_acquire(&t->ring->completed) > n)
        atomic_store(&t->completed_ahead, 1);
    ck_assert_uint_lt(n, MAX_CALLS);
    t->calls[n] = (struct call){kind, pe, offset, local, len, 0, false, false,
                                t->ring != NULL ? ushmem_ring_load_acquire(&t->ring->completed) : 0,
                                ushmem_ring_load_acquire(&done_cell)};
    atomic_store(&t->ncalls, n + 1);
    return &t->calls[n];
}

static ushmem_status_t mock_init(const struct ushmemi_transport_params *params,
                                 struct ushmemi_transport **t_p)
{
    (void)params;
    (void)t_p;
    return USHMEM_ERR_UNSUPPORTED;
}

static void mock_fini(struct ushmemi_transport *t) { (void)t; }

static int mock_can_atomic(struct ushmemi_transport *t, int pe, const char **why_p)
{
    (void)t;
    (void)pe;
    *why_p = "mock";
    return 1;
}

static ushmem_status_t mock_put(struct ushmemi_transport *t, int pe, uint64_t offset, const void *src,
                                size_t len)
{
    if (pe == t->fail_pe)
        return USHMEM_ERR_TRANSPORT;
    struct call *call = record(t, CALL_PUT, pe, offset, (uint64_t)(uintptr_t)src, len);
    memcpy(&call->first8, src, len < 8 ? len : 8);
    pthread_getaffinity_np(pthread_self(), sizeof(t->put_cpus), &t->put_cpus);
    call->delivered = true;
    return USHMEM_OK;
}

/* A get fills dst with the low byte of offset + i, so each producer can tell
 * whether it received its own data. */
static ushmem_status_t mock_get(struct ushmemi_transport *t, int pe, void *dst, uint64_t offset,
                                size_t len)
{
    for (size_t i = 0; i < len; i++)
        ((unsigned char *)dst)[i] = (unsigned char)(offset + i);
    record(t, CALL_GET, pe, offset, (uint64_t)(uintptr_t)dst, len)->delivered = true;
    return USHMEM_OK;
}

static ushmem_status_t mock_put_nbi(struct ushmemi_transport *t, int pe, uint64_t offset,
                                    const void *src, size_t len)
{
    if (t->nbi_delay_us)
        usleep(t->nbi_delay_us);
    record(t, CALL_PUT_NBI, pe, offset, (uint64_t)(uintptr_t)src, len);
    return USHMEM_OK;
}

static ushmem_status_t mock_get_nbi(struct ushmemi_transport *t, int pe, void *dst, uint64_t offset,
                                    size_t len)
{
    record(t, CALL_GET_NBI, pe, offset, (uint64_t)(uintptr_t)dst, len);
    return USHMEM_OK;
}

/* Fetching ops return operand * 2 + offset, computed in the request's type. */
static ushmem_status_t mock_atomic(struct ushmemi_transport *t, int pe, uint64_t offset,
                                   enum ushmemi_amo_op op, enum ushmemi_amo_type type,
                                   const void *operand, const void *compare, void *result)
{
    (void)op;
    (void)compare;
    if (result != NULL) {
        if (type == USHMEMI_AMO_INT32) {
            int32_t v = *(const int32_t *)operand * 2 + (int32_t)offset;
            memcpy(result, &v, sizeof(v));
        } else {
            int64_t v = *(const int64_t *)operand * 2 + (int64_t)offset;
            memcpy(result, &v, sizeof(v));
        }
    }
    record(t, CALL_AMO, pe, offset, (uint64_t)(uintptr_t)result, (uint64_t)op)->delivered = true;
    return USHMEM_OK;
}

static ushmem_status_t mock_fence(struct ushmemi_transport *t)
{
    record(t, CALL_FENCE, -1, 0, 0, 0)->delivered = true;
    return USHMEM_OK;
}

static ushmem_status_t mock_quiet(struct ushmemi_transport *t)
{
    size_t n = atomic_load(&t->ncalls);

    for (size_t i = t->first_undelivered; i < n; i++)
        t->calls[i].delivered = true;
    t->first_undelivered = n;
    record(t, CALL_QUIET, -1, 0, 0, 0)->delivered = true;
    t->first_undelivered = n + 1;
    return USHMEM_OK;
}

static int mock_progress(struct ushmemi_transport *t)
{
    (void)t;
    return 0;
}

static const struct ushmemi_transport_ops mock_ops = {
    .size = sizeof(struct ushmemi_transport_ops),
    .name = "mock",
    .init = mock_init,
    .fini = mock_fini,
    .can_atomic = mock_can_atomic,
    .put = mock_put,
    .get = mock_get,
    .put_nbi = mock_put_nbi,
    .get_nbi = mock_get_nbi,
    .atomic = mock_atomic,
    .fence = mock_fence,
    .quiet = mock_quiet,
    .progress = mock_progress,
};

/* The same transport as a device carrying its work out in order (the copy
 * engine's road): everything is queued, nothing waited for, and the proxy
 * completes requests with the counter's copy. Here "queued" work is done at
 * once: the get fills its destination as mock_get does, and the atomic
 * writes its result. */
static ushmem_status_t mock_ordered_get_nbi(struct ushmemi_transport *t, int pe, void *dst,
                                            uint64_t offset, size_t len)
{
    if (pe == t->fail_pe)
        return USHMEM_ERR_TRANSPORT;
    /* An aligned 8 bytes in one write, as a device writes a word whole (a
     * producer may watch it, ring.h); other sizes byte by byte. */
    if (len == 8 && ((uintptr_t)dst & 7) == 0) {
        uint64_t word = 0;
        for (int b = 7; b >= 0; b--)
            word = word << 8 | (uint8_t)(offset + (uint64_t)b);
        __atomic_store_n((uint64_t *)dst, word, __ATOMIC_RELAXED);
    } else {
        for (size_t i = 0; i < len; i++)
            ((unsigned char *)dst)[i] = (unsigned char)(offset + i);
    }
    record(t, CALL_GET_NBI, pe, offset, (uint64_t)(uintptr_t)dst, len);
    return USHMEM_OK;
}

/* A `then` is written as the device would, right behind the request;
 * mock_thens counts them. */
static atomic_ulong mock_thens;
static atomic_int done_back; /* the counter's copy was written below its value */
/* Where every request is one data call: the counter's copy written past
 * the requests carried out so far (done_early). */
static atomic_int check_done_early, done_early;
static size_t data_calls(void);
static void check_not_early(uint64_t value)
{
    if (atomic_load(&check_done_early) && value > data_calls())
        atomic_store(&done_early, 1);
}

static void mock_then(const struct ushmemi_dev_then *then)
{
    if (then == NULL)
        return;
    check_not_early(then->value);
    if (then->value < __atomic_load_n(then->addr, __ATOMIC_ACQUIRE))
        atomic_store(&done_back, 1);
    __atomic_store_n(then->addr, then->value, __ATOMIC_RELEASE);
    atomic_fetch_add(&mock_thens, 1);
}

static ushmem_status_t mock_put_value_nbi(struct ushmemi_transport *t, int pe, uint64_t offset,
                                          uint64_t value, size_t len,
                                          const struct ushmemi_dev_then *then)
{
    if (pe == t->fail_pe)
        return USHMEM_ERR_TRANSPORT;
    struct call *call = record(t, CALL_STORE, pe, offset, value, len);
    call->first8 = value;
    call->then = then != NULL;
    mock_then(then);
    return USHMEM_OK;
}

static ushmem_status_t mock_atomic_nbi(struct ushmemi_transport *t, int pe, uint64_t offset,
                                       enum ushmemi_amo_op op, enum ushmemi_amo_type type,
                                       uint64_t operand, uint64_t compare, uint64_t *result,
                                       const struct ushmemi_dev_then *then)
{
    (void)compare;
    if (pe == t->fail_pe)
        return USHMEM_ERR_TRANSPORT;
    uint64_t fetched = 0; /* a fetch reads what mock_ordered_get_nbi does */
    for (int b = (type == USHMEMI_AMO_UINT32 || type == USHMEMI_AMO_INT32 ? 3 : 7); b >= 0; b--)
        fetched = fetched << 8 | (uint8_t)(offset + (uint64_t)b);
    if (result != NULL)
        *result = op == USHMEMI_AMO_FETCH ? fetched : operand * 2 + offset;
    struct call *call = record(t, CALL_AMO, pe, offset, (uint64_t)(uintptr_t)result, (uint64_t)op);
    call->first8 = type;
    call->then = then != NULL;
    mock_then(then);
    return USHMEM_OK;
}

/* put_value_signal_nbi as the copy-engine road does it: the store, then
 * the signal's store (a set) or atomic (an add) behind it, one call;
 * mock_chained counts them. */
static atomic_int mock_chained;
/* The ordered transport start_ordered_proxy takes: mock_ordered_ops, or
 * with chain_signals its copy that chains a put's signal. */
static bool chain_signals;

static ushmem_status_t mock_put_value_signal_nbi(struct ushmemi_transport *t, int pe,
                                                 uint64_t offset, uint64_t value, size_t len,
                                                 enum ushmemi_amo_op sig_op, uint64_t sig_offset,
                                                 uint64_t sig_value,
                                                 const struct ushmemi_dev_then *then)
{
    if (pe == t->fail_pe)
        return USHMEM_ERR_TRANSPORT;
    ck_assert(sig_op == USHMEMI_AMO_SET || sig_op == USHMEMI_AMO_ADD);
    atomic_fetch_add(&mock_chained, 1);
    ushmem_status_t status = mock_put_value_nbi(t, pe, offset, value, len, NULL);
    if (status != USHMEM_OK)
        return status;
    if (sig_op == USHMEMI_AMO_ADD)
        return mock_atomic_nbi(t, pe, sig_offset, sig_op, USHMEMI_AMO_UINT64, sig_value, 0, NULL,
                               then);
    return mock_put_value_nbi(t, pe, sig_offset, sig_value, 8, then);
}

static const struct ushmemi_transport_ops mock_ordered_ops = {
    .size = sizeof(struct ushmemi_transport_ops),
    .name = "mock-ordered",
    .init = mock_init,
    .fini = mock_fini,
    .can_atomic = mock_can_atomic,
    .put = mock_put,
    .get = mock_get,
    .put_nbi = mock_put_nbi,
    .get_nbi = mock_ordered_get_nbi,
    .atomic = mock_atomic,
    .fence = mock_fence,
    .quiet = mock_quiet,
    .progress = mock_progress,
    .device_ordered = true,
    .put_value_nbi = mock_put_value_nbi,
    .atomic_nbi = mock_atomic_nbi,
};

/* Counts the calls of one kind, leaving out quiets and fences. */
static size_t data_calls(void)
{
    size_t n = atomic_load(&mock.ncalls), data = 0;
    for (size_t i = 0; i < n; i++)
        data += mock.calls[i].kind != CALL_QUIET && mock.calls[i].kind != CALL_FENCE;
    return data;
}

/* ---- A fake device whose pointer_query calls fake_device_mem device memory. ---- */

static char fake_device_mem[256];
static struct ushmemi_device_ops fake_dev_ops;

static ushmem_status_t fake_pointer_query(struct ushmemi_device *dev, const void *ptr,
                                          struct ushmemi_ptr_attr *attr_p)
{
    const char *p = ptr;
    if (p >= fake_device_mem && p < fake_device_mem + sizeof(fake_device_mem)) {
        attr_p->kind = USHMEMI_MEM_DEVICE;
        attr_p->host_accessible = false;
        attr_p->device_ordinal = 0;
        return USHMEM_OK;
    }
    return ushmemi_device_cpu_ops.pointer_query(dev, ptr, attr_p);
}

/* ---- The abort callback: records instead of ending the job. ---- */

static atomic_int aborts;
static char abort_msg[512];
static ushmem_status_t abort_status;

static void record_abort(void *ctx, ushmem_status_t status, const char *msg)
{
    (void)ctx;
    if (atomic_load(&aborts) == 0) {
        snprintf(abort_msg, sizeof(abort_msg), "%s", msg);
        abort_status = status;
    }
    atomic_fetch_add(&aborts, 1);
}

/* ---- Fixture: a cpu device, the mock for every PE, a proxy. ---- */

static const struct ushmemi_device_ops *dev_ops;
static struct ushmemi_device *dev;
static struct ushmemi_proxy *proxy;
static struct ushmem_ring_header *ring;

/* The copy of the completed counter (ring.h), in memory of the test's own:
 * the proxy writes it through write64, which checks that the copy never
 * runs ahead of the counter. */
static uint64_t *params_done_copy;
static const struct ushmemi_transport_ops *params_transport_ops = &mock_ops;
static int params_local_rank, params_local_size, params_idle_spin, params_warm_kernel;
/* The ring's tail and values kept apart (ring.h), as in a GPU's memory:
 * the tail's line, then one value per slot of a ring of up to 64. */
static uint64_t ring_block[8 + 64] __attribute__((aligned(64)));
static uint64_t *params_ring_tail, *params_ring_values;
static atomic_int done_ahead, done_writes, done_fail_next;
static atomic_int done_held; /* ordered_write64 waits 200 ms first: a slow device */
static bool fetch_watch;     /* fetch_apart watches its values' cells */
/* Fills the values kept apart with the empty cell's bytes, as the library
 * does (ring.h), and sets params_ring_values to them. */
static void values_apart(void)
{
    for (size_t i = 8; i < sizeof(ring_block) / sizeof(ring_block[0]); i++)
        ring_block[i] = USHMEM_RING_VALUE_EMPTY;
    params_ring_values = ring_block + 8;
}

static ushmem_status_t fake_write64(struct ushmemi_device *d, uint64_t *addr, uint64_t value)
{
    (void)d;
    if (atomic_load(&done_fail_next) > 0) {
        atomic_fetch_sub(&done_fail_next, 1);
        return USHMEM_ERR_DEVICE;
    }
    if (addr != (uint64_t *)&done_cell || value > ushmem_ring_load_acquire(&ring->completed))
        atomic_store(&done_ahead, 1);
    ushmem_ring_store_release((ushmem_ring_word_t *)addr, value);
    atomic_fetch_add(&done_writes, 1);
    return USHMEM_OK;
}

static void setup(void)
{
    ck_assert_int_eq(ushmemi_device_open("cpu", 0, 1, &dev_ops, &dev), USHMEM_OK);
    mock_reset();
    atomic_store(&aborts, 0);
    abort_msg[0] = '\0';
    proxy = NULL;
    params_done_copy = NULL;
    params_transport_ops = &mock_ops;
    params_local_rank = params_local_size = params_idle_spin = params_warm_kernel = 0;
    done_cell = 0;
    memset(ring_block, 0, sizeof(ring_block));
    params_ring_tail = params_ring_values = NULL;
    atomic_store(&done_ahead, 0);
    atomic_store(&done_writes, 0);
    atomic_store(&done_fail_next, 0);
    atomic_store(&mock_thens, 0);
    atomic_store(&done_back, 0);
    atomic_store(&check_done_early, 0);
    atomic_store(&done_early, 0);
    atomic_store(&done_held, 0);
    fetch_watch = false;
    chain_signals = false;
    atomic_store(&mock_chained, 0);
}

static void teardown(void)
{
    ushmemi_proxy_stop(proxy);
    dev_ops->close(dev);
    free(mock.calls);
    mock.calls = NULL;
}

static void start_proxy_devmem(const struct ushmemi_device_ops *ops, uint32_t capacity,
                               enum ushmemi_proxy_device_memory devmem)
{
    struct ushmemi_proxy_peer peers[NPES];
    for (int pe = 0; pe < NPES; pe++)
        peers[pe] = (struct ushmemi_proxy_peer){params_transport_ops, &mock, devmem};
    struct ushmemi_proxy_params params = {
        .dev_ops = ops,
        .dev = dev,
        .capacity = capacity,
        .my_pe = 0,
        .npes = NPES,
        .peers = peers,
        .abort_cb = record_abort,
        .abort_ctx = NULL,
        .done_copy = params_done_copy,
        .ring_tail = params_ring_tail,
        .ring_values = params_ring_values,
        .local_rank = params_local_rank,
        .local_size = params_local_size,
        .idle_spin = params_idle_spin,
        .warm_kernel = params_warm_kernel,
    };
    ck_assert_int_eq(ushmemi_proxy_start(&params, &proxy), USHMEM_OK);
    ring = ushmemi_proxy_ring(proxy);
    mock.ring = ring;
}

static void start_proxy(const struct ushmemi_device_ops *ops, uint32_t capacity)
{
    start_proxy_devmem(ops, capacity, USHMEMI_PROXY_DEVMEM_REFUSE);
}

static uint64_t submit(struct ushmem_ring_producer *prod, uint8_t op, int pe, uint64_t offset,
                       const void *local, uint64_t value)
{
    struct ushmem_ring_request req = {.op = op, .pe = pe, .offset = offset,
                                      .local = (uint64_t)(uintptr_t)local, .value = value};
    return ushmem_ring_submit(ring, prod, &req);
}

/* ---- Producers ---- */

struct producer {
    pthread_t thread;
    int id;
    int n;           /* requests to issue */
    uint8_t op;      /* for the plain producers */
    bool quiet_each; /* quiet after every request */
    char buf[64];    /* local memory named by its requests */
    uint64_t *tickets;
    atomic_int published;
    int errors;      /* wrong results seen by the producer */
};

static struct producer producers[MAX_PRODUCERS];

/* Offsets encode the producer and its request number, never 0. */
static uint64_t offset_of(int id, int i) { return ((uint64_t)(id + 1) << 32) | (uint64_t)i; }

static void *produce(void *arg)
{
    struct producer *pr = arg;
    struct ushmem_ring_producer prod = {0};

    for (int i = 0; i < pr->n; i++) {
        uint8_t op = pr->op;
        if (op == USHMEM_RING_OP_NONE) /* mixed */
            op = (i % 3 == 0) ? USHMEM_RING_OP_PUT : USHMEM_RING_OP_PUT_NBI;
        pr->tickets[i] = submit(&prod, op, (pr->id + i) % NPES, offset_of(pr->id, i), pr->buf,
                                (uint64_t)(pr->id + 1));
        atomic_fetch_add(&pr->published, 1);
        if (op == USHMEM_RING_OP_PUT)
            ushmem_ring_wait(ring, pr->tickets[i]);
    }
    ushmem_ring_quiet(ring, &prod);
    return NULL;
}

static void run_producers(int nprod, int n, uint8_t op, void *(*fn)(void *))
{
    for (int i = 0; i < nprod; i++) {
        struct producer *pr = &producers[i];
        free(pr->tickets);
        memset(pr, 0, sizeof(*pr));
        pr->id = i;
        pr->n = n;
        pr->op = op;
        pr->tickets = calloc((size_t)n, sizeof(uint64_t));
        ck_assert_ptr_nonnull(pr->tickets);
        ck_assert_int_eq(pthread_create(&pr->thread, NULL, fn, pr), 0);
    }
}

static void join_producers(int nprod)
{
    for (int i = 0; i < nprod; i++)
        ck_assert_int_eq(pthread_join(producers[i].thread, NULL), 0);
}

/* Every request of every producer reached the transport exactly once, and the
 * transport saw them in ticket order, with the producer's own arguments. */
static void check_ticket_order(int nprod)
{
    size_t total = 0;
    for (int i = 0; i < nprod; i++)
        total += (size_t)producers[i].n;

    uint64_t *by_ticket = calloc(total, sizeof(uint64_t));
    ck_assert_ptr_nonnull(by_ticket);
    for (int i = 0; i < nprod; i++) {
        for (int k = 0; k < producers[i].n; k++) {
            uint64_t t = producers[i].tickets[k];
            ck_assert_uint_lt(t, total);
            ck_assert_uint_eq(by_ticket[t], 0); /* each ticket handed out once */
            by_ticket[t] = offset_of(i, k);
        }
    }
    size_t n = atomic_load(&mock.ncalls), seen = 0;
    for (size_t c = 0; c < n; c++) {
        const struct call *call = &mock.calls[c];
        if (call->kind == CALL_QUIET || call->kind == CALL_FENCE)
            continue;
        ck_assert_uint_lt(seen, total);
        ck_assert_uint_eq(call->offset, by_ticket[seen]);
        int id = (int)(call->offset >> 32) - 1;
        int k = (int)(call->offset & 0xffffffffu);
        ck_assert_uint_eq(call->local, (uint64_t)(uintptr_t)producers[id].buf);
        ck_assert_uint_eq(call->len, (uint64_t)(id + 1));
        ck_assert_int_eq(call->pe, (id + k) % NPES);
        ck_assert(call->delivered);
        seen++;
    }
    ck_assert_uint_eq(seen, total);
    ck_assert_int_eq(atomic_load(&mock.completed_ahead), 0);
    free(by_ticket);
}

static void free_producers(void)
{
    for (int i = 0; i < MAX_PRODUCERS; i++) {
        free(producers[i].tickets);
        producers[i].tickets = NULL;
    }
}

/* produce, with every wait on the copy of the completed counter. */
static void *produce_on_copy(void *arg)
{
    struct producer *pr = arg;
    struct ushmem_ring_producer prod = {0};

    for (int i = 0; i < pr->n; i++) {
        uint8_t op = (i % 3 == 0) ? USHMEM_RING_OP_PUT : USHMEM_RING_OP_PUT_NBI;
        struct ushmem_ring_request req = {.op = op, .pe = (pr->id + i) % NPES,
                                          .offset = offset_of(pr->id, i),
                                          .local = (uint64_t)(uintptr_t)pr->buf,
                                          .value = (uint64_t)(pr->id + 1)};
        pr->tickets[i] = ushmem_ring_submit_on(ring, NULL, &done_cell, &prod, &req);
        atomic_fetch_add(&pr->published, 1);
        if (op == USHMEM_RING_OP_PUT)
            ushmem_ring_wait_on(ring, &done_cell, pr->tickets[i]);
    }
    ushmem_ring_quiet_on(ring, &done_cell, &prod);
    return NULL;
}

/* ---- Tests ---- */

START_TEST(layout_in_pinned_host_memory)
{
    struct ushmemi_ptr_attr attr;

    start_proxy(dev_ops, 16);
    ck_assert_uint_eq(ring->version, USHMEM_RING_VERSION);
    ck_assert_uint_eq(ring->capacity, 16);
    ck_assert_uint_eq(ring->slots_offset % USHMEM_RING_CACHELINE, 0);
    ck_assert_uint_eq((uintptr_t)ring % USHMEM_RING_CACHELINE, 0);
    /* The ring comes from host_alloc, which the backend knows as pinned host memory. */
    ck_assert_int_eq(dev_ops->pointer_query(dev, ring, &attr), USHMEM_OK);
    ck_assert_int_eq(attr.kind, USHMEMI_MEM_HOST);
    ck_assert_int_eq(dev_ops->pointer_query(dev, ushmem_ring_slot(ring, 15), &attr), USHMEM_OK);
    ck_assert_int_eq(attr.kind, USHMEMI_MEM_HOST);
    /* Slot t and t + capacity are one slot. */
    ck_assert_ptr_eq(ushmem_ring_slot(ring, 3), ushmem_ring_slot(ring, 19));
    ck_assert_ptr_ne(ushmem_ring_slot(ring, 3), ushmem_ring_slot(ring, 4));
}
END_TEST

START_TEST(bad_capacity_refused)
{
    struct ushmemi_ring *r;
    int saved = ushmemi_log_level;

    ushmemi_log_level = -1;
    ck_assert_int_eq(ushmemi_ring_create(dev_ops, dev, 12, &r), USHMEM_ERR_INVALID_PARAM);
    ck_assert_int_eq(ushmemi_ring_create(dev_ops, dev, 1, &r), USHMEM_ERR_INVALID_PARAM);
    ushmemi_log_level = saved;
    ck_assert_int_eq(ushmemi_ring_create(dev_ops, dev, 2, &r), USHMEM_OK);
    ushmemi_ring_destroy(r);
}
END_TEST

/* _i is the number of producers, 1..8, over a 16-slot ring. */
START_TEST(producers_wrap_in_ticket_order)
{
    const int nprod = _i;
    const int n = 3000;

    start_proxy(dev_ops, 16);
    run_producers(nprod, n, USHMEM_RING_OP_NONE, produce);
    join_producers(nprod);
    /* Many times around the ring. */
    ck_assert_uint_ge(ushmem_ring_load_acquire(&ring->head), (uint64_t)nprod * n);
    ck_assert_uint_ge((uint64_t)nprod * n / 16, 100);
    check_ticket_order(nprod);
    ck_assert_uint_eq(ushmem_ring_load_acquire(&ring->completed), (uint64_t)nprod * n);
    ck_assert_uint_eq(ushmem_ring_load_acquire(&ring->errors), 0);
    ck_assert_int_eq(atomic_load(&aborts), 0);
    free_producers();
}
END_TEST

START_TEST(full_ring_back_pressure)
{
    const int nprod = 4, n = 40, cap = 16;
    uint64_t tail = 0;
    int published = 0;

    start_proxy(dev_ops, cap);
    atomic_store(&mock.gate_closed, 1);
    run_producers(nprod, n, USHMEM_RING_OP_PUT_NBI, produce);

    /* The proxy takes ticket 0 and stalls inside the transport; 16 more fill
     * the ring and each producer then blocks holding one more ticket. */
    for (int tries = 0; tries < 2000; tries++) {
        published = 0;
        for (int i = 0; i < nprod; i++)
            published += atomic_load(&producers[i].published);
        tail = ushmem_ring_load_acquire(&ring->tail);
        if (published == 1 + cap && tail == (uint64_t)(1 + cap + nprod))
            break;
        usleep(1000);
    }
    ck_assert_int_eq(atomic_load(&mock.entered), 1);
    ck_assert_int_eq(published, 1 + cap);
    ck_assert_uint_eq(tail, (uint64_t)(1 + cap + nprod));
    usleep(20000);
    /* Still blocked, and no slot was overwritten: each holds its own ticket. */
    published = 0;
    for (int i = 0; i < nprod; i++)
        published += atomic_load(&producers[i].published);
    ck_assert_int_eq(published, 1 + cap);
    ck_assert_uint_eq(ushmem_ring_load_acquire(&ring->head), 1);
    for (uint64_t t = 1; t <= (uint64_t)cap; t++)
        ck_assert_uint_eq(ushmem_ring_load_acquire(&ushmem_ring_slot(ring, t)->seq), t + 1);

    atomic_store(&mock.gate_closed, 0);
    join_producers(nprod);
    check_ticket_order(nprod);
    free_producers();
}
END_TEST

static void *fetch_producer(void *arg)
{
    struct producer *pr = arg;
    struct ushmem_ring_producer prod = {0};

    for (int i = 0; i < pr->n; i++) {
        uint64_t off = offset_of(pr->id, i);
        int64_t r64 = 0;
        int32_t r32 = 0;
        unsigned char got[16];

        /* 64-bit fetch-add: the old value goes to this producer's variable. */
        int64_t operand = (int64_t)pr->id * 100000 + i;
        struct ushmem_ring_request req = {
            .op = USHMEM_RING_OP_AMO, .amo_op = USHMEM_RING_AMO_ADD,
            .amo_type = USHMEM_RING_AMO_INT64, .pe = i % NPES, .offset = off,
            .value = (uint64_t)operand, .result = (uint64_t)(uintptr_t)&r64};
        uint64_t t = ushmem_ring_submit(ring, &prod, &req);
        ushmem_ring_wait(ring, t);
        if (r64 != operand * 2 + (int64_t)off)
            pr->errors++;

        /* A negative 32-bit operand travels in the low half of value. */
        int32_t op32 = -(pr->id * 1000 + i);
        req.amo_type = USHMEM_RING_AMO_INT32;
        req.value = (uint64_t)(uint32_t)op32;
        req.result = (uint64_t)(uintptr_t)&r32;
        t = ushmem_ring_submit(ring, &prod, &req);
        ushmem_ring_wait(ring, t);
        if (r32 != op32 * 2 + (int32_t)off)
            pr->errors++;

        /* Blocking get: the data is in this producer's buffer on completion. */
        memset(got, 0, sizeof(got));
        t = submit(&prod, USHMEM_RING_OP_GET, i % NPES, off, got, sizeof(got));
        ushmem_ring_wait(ring, t);
        for (size_t b = 0; b < sizeof(got); b++)
            if (got[b] != (unsigned char)(off + b))
                pr->errors++;
    }
    return NULL;
}

START_TEST(fetched_results_reach_their_producer)
{
    const int nprod = 6;

    start_proxy(dev_ops, 16);
    run_producers(nprod, 300, USHMEM_RING_OP_NONE, fetch_producer);
    join_producers(nprod);
    for (int i = 0; i < nprod; i++)
        ck_assert_int_eq(producers[i].errors, 0);
    ck_assert_uint_eq(data_calls(), (size_t)nprod * 300 * 3);
    ck_assert_int_eq(atomic_load(&mock.completed_ahead), 0);
    free_producers();
}
END_TEST

/* Quiet returns only when every non-blocking request of this producer has
 * been completed by a transport quiet. */
static void *nbi_producer(void *arg)
{
    struct producer *pr = arg;
    struct ushmem_ring_producer prod = {0};

    for (int round = 0; round < 10; round++) {
        int first = round * (pr->n / 10);
        for (int i = first; i < first + pr->n / 10; i++)
            pr->tickets[i] = submit(&prod, i % 2 ? USHMEM_RING_OP_PUT_NBI : USHMEM_RING_OP_GET_NBI,
                                    (pr->id + i) % NPES, offset_of(pr->id, i), pr->buf,
                                    (uint64_t)(pr->id + 1));
        ushmem_ring_quiet(ring, &prod);
        /* Every call so far that is this producer's must be delivered. */
        size_t n = atomic_load(&mock.ncalls);
        for (size_t c = 0; c < n; c++) {
            const struct call *call = &mock.calls[c];
            if (call->kind != CALL_QUIET && (int)(call->offset >> 32) - 1 == pr->id &&
                !call->delivered)
                pr->errors++;
        }
        size_t mine = 0;
        for (size_t c = 0; c < n; c++)
            mine += mock.calls[c].kind != CALL_QUIET && (int)(mock.calls[c].offset >> 32) - 1 == pr->id;
        if (mine != (size_t)(first + pr->n / 10))
            pr->errors++;
    }
    return NULL;
}

START_TEST(quiet_waits_for_nonblocking)
{
    const int nprod = 4;

    start_proxy(dev_ops, 16);
    mock.nbi_delay_us = 20;
    run_producers(nprod, 200, USHMEM_RING_OP_NONE, nbi_producer);
    join_producers(nprod);
    for (int i = 0; i < nprod; i++)
        ck_assert_int_eq(producers[i].errors, 0);
    ck_assert_uint_eq(data_calls(), (size_t)nprod * 200);
    free_producers();
}
END_TEST

START_TEST(fence_orders_nonblocking)
{
    struct ushmem_ring_producer prod = {0};
    char buf[8];

    start_proxy(dev_ops, 16);
    /* No outstanding non-blocking request: blocking ones are ordered
     * already, so a fence costs no transport call. */
    submit(&prod, USHMEM_RING_OP_PUT, 1, 8, buf, 8);
    submit(&prod, USHMEM_RING_OP_FENCE, 0, 0, NULL, 0);
    submit(&prod, USHMEM_RING_OP_PUT_NBI, 1, 16, buf, 8);
    submit(&prod, USHMEM_RING_OP_FENCE, 0, 0, NULL, 0);
    submit(&prod, USHMEM_RING_OP_PUT_NBI, 2, 24, buf, 8);
    ushmem_ring_quiet(ring, &prod);

    size_t n = atomic_load(&mock.ncalls), fence_at = n, put16_at = n, put24_at = n, fences = 0;
    for (size_t c = 0; c < n; c++) {
        if (mock.calls[c].kind == CALL_FENCE) {
            fences++;
            fence_at = c;
        }
        if (mock.calls[c].kind == CALL_PUT_NBI && mock.calls[c].offset == 16)
            put16_at = c;
        if (mock.calls[c].kind == CALL_PUT_NBI && mock.calls[c].offset == 24)
            put24_at = c;
    }
    ck_assert_uint_eq(fences, 1);
    ck_assert_uint_lt(put16_at, fence_at);
    ck_assert_uint_lt(fence_at, put24_at);
    ck_assert(mock.calls[put24_at].delivered);
    ck_assert_uint_eq(ushmem_ring_load_acquire(&ring->completed), 5);
}
END_TEST

START_TEST(transport_failure_aborts_with_pe_op_address)
{
    struct ushmem_ring_producer prod = {0};
    char buf[8];
    char addr[32];
    int saved = ushmemi_log_level;

    ushmemi_log_level = -1; /* the error is expected */
    start_proxy(dev_ops, 16);
    mock.fail_pe = 3;
    uint64_t t = submit(&prod, USHMEM_RING_OP_PUT, 3, 0x1234, buf, 8);
    ushmem_ring_wait(ring, t); /* counted done: no producer hangs on it */
    ck_assert_int_eq(atomic_load(&aborts), 1);
    ck_assert_int_eq(abort_status, USHMEM_ERR_TRANSPORT);
    ck_assert_ptr_nonnull(strstr(abort_msg, "put to PE 3"));
    ck_assert_ptr_nonnull(strstr(abort_msg, "0x1234"));
    snprintf(addr, sizeof(addr), "0x%" PRIx64, (uint64_t)(uintptr_t)buf);
    ck_assert_ptr_nonnull(strstr(abort_msg, addr));
    ck_assert_uint_eq(ushmem_ring_load_acquire(&ring->errors), 1);

    /* A PE without a proxy route is refused the same way. */
    atomic_store(&aborts, 0);
    t = submit(&prod, USHMEM_RING_OP_GET, NPES + 1, 0x40, buf, 8);
    ushmem_ring_wait(ring, t);
    ck_assert_int_eq(atomic_load(&aborts), 1);
    ck_assert_int_eq(abort_status, USHMEM_ERR_NO_ROUTE);
    ck_assert_ptr_nonnull(strstr(abort_msg, "get to PE 5"));
    ck_assert_ptr_nonnull(strstr(abort_msg, "0x40"));

    /* The proxy goes on with the next request. */
    t = submit(&prod, USHMEM_RING_OP_PUT, 1, 0x99, buf, 8);
    ushmem_ring_wait(ring, t);
    ck_assert_uint_eq(data_calls(), 1);
    ck_assert_uint_eq(mock.calls[0].offset, 0x99);
    ushmemi_log_level = saved;
}
END_TEST

/* With staging, a device buffer goes through the proxy's host bounce with
 * the copy engine: the transport never sees the device address, and the
 * data arrives both ways. */
START_TEST(device_memory_staged)
{
    struct ushmem_ring_producer prod = {0};
    fake_dev_ops = ushmemi_device_cpu_ops;
    fake_dev_ops.pointer_query = fake_pointer_query;
    start_proxy_devmem(&fake_dev_ops, 16, USHMEMI_PROXY_DEVMEM_STAGE);

    uint64_t pattern = 0x1122334455667788u;
    memcpy(&fake_device_mem[16], &pattern, sizeof(pattern));
    uint64_t t = submit(&prod, USHMEM_RING_OP_PUT_NBI, 2, 0x500, &fake_device_mem[16], 8);
    ushmem_ring_quiet(ring, &prod);
    ck_assert_uint_ge(t + 1, 1);
    memset(&fake_device_mem[32], 0, 8);
    t = submit(&prod, USHMEM_RING_OP_GET, 3, 0x40, &fake_device_mem[32], 8);
    ushmem_ring_wait(ring, t);

    ck_assert_int_eq(atomic_load(&aborts), 0);
    ck_assert_uint_eq(data_calls(), 2);
    ck_assert_int_eq(mock.calls[0].kind, CALL_PUT); /* staged: blocking, not nbi */
    ck_assert_uint_ne(mock.calls[0].local, (uint64_t)(uintptr_t)&fake_device_mem[16]);
    ck_assert_uint_eq(mock.calls[0].first8, pattern);
    ck_assert_uint_eq(mock.calls[0].offset, 0x500);
    ck_assert_uint_ne(mock.calls[1].local, (uint64_t)(uintptr_t)&fake_device_mem[32]);
    for (int i = 0; i < 8; i++)
        ck_assert_uint_eq((unsigned char)fake_device_mem[32 + i], (unsigned char)(0x40 + i));
}
END_TEST

/* A transport that takes device memory (FI_HMEM) gets the device address. */
START_TEST(device_memory_passed)
{
    struct ushmem_ring_producer prod = {0};
    fake_dev_ops = ushmemi_device_cpu_ops;
    fake_dev_ops.pointer_query = fake_pointer_query;
    start_proxy_devmem(&fake_dev_ops, 16, USHMEMI_PROXY_DEVMEM_PASS);
    uint64_t t = submit(&prod, USHMEM_RING_OP_PUT, 1, 0x500, &fake_device_mem[16], 8);
    ushmem_ring_wait(ring, t);
    ck_assert_int_eq(atomic_load(&aborts), 0);
    ck_assert_uint_eq(data_calls(), 1);
    ck_assert_uint_eq(mock.calls[0].local, (uint64_t)(uintptr_t)&fake_device_mem[16]);
}
END_TEST

START_TEST(device_memory_refused)
{
    struct ushmem_ring_producer prod = {0};
    char host_buf[8];
    char addr[32];
    int saved = ushmemi_log_level;

    fake_dev_ops = ushmemi_device_cpu_ops;
    fake_dev_ops.pointer_query = fake_pointer_query;
    ushmemi_log_level = -1;
    start_proxy(&fake_dev_ops, 16);
    snprintf(addr, sizeof(addr), "0x%" PRIx64, (uint64_t)(uintptr_t)&fake_device_mem[8]);

    uint64_t t = submit(&prod, USHMEM_RING_OP_PUT, 2, 0x500, &fake_device_mem[8], 8);
    ushmem_ring_wait(ring, t);
    ck_assert_int_eq(atomic_load(&aborts), 1);
    ck_assert_ptr_nonnull(strstr(abort_msg, "put to PE 2"));
    ck_assert_ptr_nonnull(strstr(abort_msg, "device memory"));
    ck_assert_ptr_nonnull(strstr(abort_msg, addr));

    /* A fetching atomic whose result would land in device memory. */
    atomic_store(&aborts, 0);
    struct ushmem_ring_request req = {
        .op = USHMEM_RING_OP_AMO, .amo_op = USHMEM_RING_AMO_FETCH,
        .amo_type = USHMEM_RING_AMO_INT64, .pe = 1, .offset = 0x600,
        .result = (uint64_t)(uintptr_t)&fake_device_mem[8]};
    t = ushmem_ring_submit(ring, &prod, &req);
    ushmem_ring_wait(ring, t);
    ck_assert_int_eq(atomic_load(&aborts), 1);
    ck_assert_ptr_nonnull(strstr(abort_msg, "atomic fetch (int64) to PE 1"));
    ck_assert_ptr_nonnull(strstr(abort_msg, addr));

    atomic_store(&aborts, 0);
    t = submit(&prod, USHMEM_RING_OP_GET_NBI, 3, 0x700, &fake_device_mem[8], 8);
    ushmem_ring_quiet(ring, &prod);
    ck_assert_int_eq(atomic_load(&aborts), 1);
    ck_assert_ptr_nonnull(strstr(abort_msg, "get_nbi to PE 3"));

    /* None reached the transport; host memory still does. */
    ck_assert_uint_eq(data_calls(), 0);
    t = submit(&prod, USHMEM_RING_OP_PUT, 2, 0x800, host_buf, 8);
    ushmem_ring_wait(ring, t);
    ck_assert_uint_eq(data_calls(), 1);
    ck_assert_uint_eq(ushmem_ring_load_acquire(&ring->errors), 3);
    ushmemi_log_level = saved;
}
END_TEST

static void *fire_and_forget(void *arg)
{
    struct producer *pr = arg;
    struct ushmem_ring_producer prod = {0};

    for (int i = 0; i < pr->n; i++)
        pr->tickets[i] = submit(&prod, USHMEM_RING_OP_PUT_NBI, (pr->id + i) % NPES,
                                offset_of(pr->id, i), pr->buf, (uint64_t)(pr->id + 1));
    return NULL;
}

START_TEST(stop_drains_requests_in_flight)
{
    const int nprod = 4, n = 100;

    start_proxy(dev_ops, 64);
    mock.nbi_delay_us = 50; /* the proxy lags far behind the producers */
    run_producers(nprod, n, USHMEM_RING_OP_NONE, fire_and_forget);
    join_producers(nprod);
    ck_assert_uint_lt(atomic_load(&mock.ncalls), (size_t)nprod * n);
    ushmemi_proxy_stop(proxy);
    proxy = NULL;
    mock.ring = NULL;

    check_ticket_order(nprod);
    /* The last thing the proxy did was the quiet that completed them. */
    size_t calls = atomic_load(&mock.ncalls);
    ck_assert_int_eq(mock.calls[calls - 1].kind, CALL_QUIET);
    free_producers();
}
END_TEST

START_TEST(idle_proxy_backs_off)
{
    struct ushmem_ring_producer prod = {0};
    struct timespec ts = {0, 300 * 1000 * 1000};
    uint64_t before, after;
    char buf[8];

    start_proxy(dev_ops, 16);
    ushmem_ring_wait(ring, submit(&prod, USHMEM_RING_OP_PUT, 1, 8, buf, 8));
    ck_assert_int_eq(ushmemi_proxy_cpu_time(proxy, &before), USHMEM_OK);
    nanosleep(&ts, NULL);
    ck_assert_int_eq(ushmemi_proxy_cpu_time(proxy, &after), USHMEM_OK);
    /* A spinning proxy would use all 300 ms; a sleeping one a few. */
    ck_assert_uint_lt(after - before, 30u * 1000 * 1000);
    /* And it still wakes up for the next request. */
    ushmem_ring_wait(ring, submit(&prod, USHMEM_RING_OP_PUT, 1, 16, buf, 8));
    ck_assert_uint_eq(data_calls(), 2);
}
END_TEST

/* Producers that wait only on the proxy's copy of the completed counter,
 * wrapping a 16-slot ring many times: every request runs once, in ticket
 * order, and the copy ends equal to the counter, never having run ahead. */
START_TEST(device_copy_of_completed)
{
    const int nprod = 4, n = 2000;
    static struct ushmemi_device_ops ops; /* outlives the test: teardown stops the proxy */

    ops = *dev_ops;
    ops.write64 = fake_write64;
    params_done_copy = (uint64_t *)&done_cell;
    start_proxy(&ops, 16);
    run_producers(nprod, n, USHMEM_RING_OP_NONE, produce_on_copy);
    join_producers(nprod);
    check_ticket_order(nprod);
    ck_assert_uint_eq(ushmem_ring_load_acquire(&done_cell), (uint64_t)nprod * n);
    ck_assert_uint_eq(ushmem_ring_load_acquire(&ring->completed), (uint64_t)nprod * n);
    ck_assert_int_eq(atomic_load(&done_ahead), 0);
    ck_assert_int_gt(atomic_load(&done_writes), 0);
    ck_assert_int_eq(atomic_load(&aborts), 0);
    free_producers();
}
END_TEST

/* A failed write of the copy is reported once and tried again, so that
 * producers waiting on the copy are not stranded when the job goes on. */
START_TEST(device_copy_write_retried)
{
    const int nprod = 2, n = 300;
    static struct ushmemi_device_ops ops; /* outlives the test: teardown stops the proxy */
    int saved = ushmemi_log_level;

    ops = *dev_ops;
    ops.write64 = fake_write64;
    params_done_copy = (uint64_t *)&done_cell;
    atomic_store(&done_fail_next, 3);
    ushmemi_log_level = -1;
    start_proxy(&ops, 16);
    run_producers(nprod, n, USHMEM_RING_OP_NONE, produce_on_copy);
    join_producers(nprod);
    ushmemi_log_level = saved;
    check_ticket_order(nprod);
    ck_assert_int_eq(atomic_load(&aborts), 1);
    ck_assert_uint_eq(ushmem_ring_load_acquire(&done_cell), (uint64_t)nprod * n);
    ck_assert_int_eq(atomic_load(&done_ahead), 0);
    /* The write for the last request fails: no later request would carry
     * the copy forward, so only the retry lets this wait end. */
    struct ushmem_ring_producer prod = {0};
    struct ushmem_ring_request req = {.op = USHMEM_RING_OP_PUT, .pe = 1, .offset = 8,
                                      .local = (uint64_t)(uintptr_t)producers[0].buf,
                                      .value = 1};
    atomic_store(&done_fail_next, 1);
    ushmem_ring_wait_on(ring, &done_cell,
                        ushmem_ring_submit_on(ring, NULL, &done_cell, &prod, &req));
    ck_assert_int_eq(atomic_load(&done_fail_next), 0);
    ck_assert_uint_eq(ushmem_ring_load_acquire(&done_cell), (uint64_t)nprod * n + 1);
    ck_assert_int_eq(atomic_load(&aborts), 1);
    free_producers();
}
END_TEST

/* On a transport the device carries out in order, the copy of the counter
 * completes requests: it may run ahead of the counter in host memory, which
 * follows once the proxy has waited for the device (never while a request
 * is outstanding on it). */
static ushmem_status_t ordered_write64(struct ushmemi_device *d, uint64_t *addr, uint64_t value)
{
    (void)d;
    if (atomic_load(&done_held))
        usleep(200 * 1000);
    check_not_early(value);
    if (value < ushmem_ring_load_acquire((ushmem_ring_word_t *)addr))
        atomic_store(&done_back, 1);
    ushmem_ring_store_release((ushmem_ring_word_t *)addr, value);
    atomic_fetch_add(&done_writes, 1);
    return USHMEM_OK;
}

static void start_ordered_proxy(uint32_t capacity)
{
    static struct ushmemi_device_ops ops; /* outlives the test: teardown stops the proxy */
    static struct ushmemi_transport_ops chaining;

    ops = *dev_ops;
    ops.write64 = ordered_write64;
    params_done_copy = (uint64_t *)&done_cell;
    chaining = mock_ordered_ops;
    chaining.put_value_signal_nbi = mock_put_value_signal_nbi;
    params_transport_ops = chain_signals ? &chaining : &mock_ordered_ops;
    start_proxy_devmem(&ops, capacity, USHMEMI_PROXY_DEVMEM_PASS);
}

/* Values travel as stores and result cells, nothing is quieted, and the
 * counter in host memory catches up with the copy once the proxy is idle. */
START_TEST(ordered_requests_complete_by_the_copy)
{
    struct ushmem_ring_producer prod = {0};
    ushmem_ring_word_t *done = &done_cell;

    start_ordered_proxy(16);
    struct ushmem_ring_request p_req = {.op = USHMEM_RING_OP_PUT, .flags = USHMEM_RING_FLAG_INLINE,
                                        .pe = 1, .offset = 0x10, .local = 0x1122334455667788ull,
                                        .value = 8};
    struct ushmem_ring_request g_req = {.op = USHMEM_RING_OP_GET, .flags = USHMEM_RING_FLAG_RESULT,
                                        .pe = 2, .offset = 0x20, .value = 8};
    struct ushmem_ring_request f_req = {.op = USHMEM_RING_OP_AMO, .amo_op = USHMEM_RING_AMO_ADD,
                                        .amo_type = USHMEM_RING_AMO_INT64,
                                        .flags = USHMEM_RING_FLAG_RESULT, .pe = 3, .offset = 0x40,
                                        .value = 5};
    struct ushmem_ring_request s_req = {.op = USHMEM_RING_OP_AMO, .amo_op = USHMEM_RING_AMO_SET,
                                        .amo_type = USHMEM_RING_AMO_UINT32, .pe = 1,
                                        .offset = 0x48, .value = 7};
    ushmem_ring_submit_on(ring, NULL, done, &prod, &p_req);
    uint64_t g = ushmem_ring_submit_on(ring, NULL, done, &prod, &g_req);
    uint64_t f = ushmem_ring_submit_on(ring, NULL, done, &prod, &f_req);
    uint64_t s = ushmem_ring_submit_on(ring, NULL, done, &prod, &s_req);
    ushmem_ring_wait_on(ring, done, s);
    uint64_t want_g = 0;
    for (int i = 7; i >= 0; i--)
        want_g = want_g << 8 | (uint64_t)(0x20 + i);
    ck_assert_uint_eq(ushmem_ring_result_take(ring, g), want_g);
    ck_assert_uint_eq(ushmem_ring_result_take(ring, f), 5 * 2 + 0x40);
    size_t n = atomic_load(&mock.ncalls);
    ck_assert_uint_eq(n, 4);
    ck_assert_int_eq(mock.calls[0].kind, CALL_STORE);
    ck_assert_uint_eq(mock.calls[0].first8, 0x1122334455667788ull);
    ck_assert_uint_eq(mock.calls[0].len, 8);
    ck_assert_int_eq(mock.calls[1].kind, CALL_GET_NBI);
    ck_assert_int_eq(mock.calls[2].kind, CALL_AMO);
    /* A set that nobody reads back is a store of the type's width. */
    ck_assert_int_eq(mock.calls[3].kind, CALL_STORE);
    ck_assert_uint_eq(mock.calls[3].first8, 7);
    ck_assert_uint_eq(mock.calls[3].len, 4);
    /* The host counter follows within a second of idleness. */
    for (int i = 0; i < 1000 && ushmem_ring_load_acquire(&ring->completed) < s + 1; i++)
        usleep(1000);
    ck_assert_uint_eq(ushmem_ring_load_acquire(&ring->completed), s + 1);
    ck_assert_int_eq(atomic_load(&aborts), 0);
}
END_TEST

/* A put of up to 8 bytes with its signal is one request (FLAG_SIGNAL): the
 * put, then the signal as a 64-bit set or add to the same PE, under one
 * ticket, through a transport that waits for each call (_i 0) or one whose
 * device carries them out in order (_i 1, 2), where the counter's copy
 * comes with the signal only, never with the put before it. Neither the
 * counter nor its copy passes the ticket before the signal's call. With a
 * transport that chains a signal behind its put (_i 2), a set and an add
 * each go to it as one call, unless USHMEMI_PROXY_SIGNAL_CHAIN=0 (_i 3). A request whose signal is neither a
 * set nor an add is refused without a call, and a put that fails sends no
 * signal, on either road. */
START_TEST(put_with_signal_is_one_request)
{
    struct ushmem_ring_producer prod = {0};
    bool ordered = _i >= 1;
    ushmem_ring_word_t *done = ordered ? &done_cell : NULL;
    int saved = ushmemi_log_level;

    chain_signals = _i >= 2;
    if (_i == 3)
        setenv("USHMEMI_PROXY_SIGNAL_CHAIN", "0", 1);
    if (ordered) {
        atomic_store(&check_done_early, 1);
        start_ordered_proxy(16);
    } else {
        start_proxy(dev_ops, 16);
    }
    struct ushmem_ring_request reqs[] = {
        {.op = USHMEM_RING_OP_PUT, .flags = USHMEM_RING_FLAG_INLINE | USHMEM_RING_FLAG_SIGNAL,
         .amo_op = USHMEM_RING_AMO_SET, .amo_type = USHMEM_RING_AMO_UINT64, .pe = 1,
         .offset = 0x10, .local = 0x1122334455667788ull, .value = 8, .compare = 9,
         .reserved = 0x48},
        {.op = USHMEM_RING_OP_PUT, .flags = USHMEM_RING_FLAG_INLINE | USHMEM_RING_FLAG_SIGNAL,
         .amo_op = USHMEM_RING_AMO_ADD, .amo_type = USHMEM_RING_AMO_UINT64, .pe = 2,
         .offset = 0x21, .local = 0xabcdefull, .value = 3, .compare = 5, .reserved = 0x50},
    };
    uint64_t t = 0;
    for (size_t k = 0; k < 2; k++)
        t = ushmem_ring_submit_on(ring, NULL, done, &prod, &reqs[k]);
    ck_assert_uint_eq(t, 1); /* two tickets for two puts with their signals */
    ushmem_ring_quiet_on(ring, done, &prod);
    ck_assert_uint_eq(atomic_load(&mock.ncalls), 4);
    for (int k = 0; k < 2; k++) {
        const struct call *put = &mock.calls[2 * k], *sig = &mock.calls[2 * k + 1];
        ck_assert_int_eq(put->kind, ordered ? CALL_STORE : CALL_PUT);
        ck_assert_int_eq(put->pe, reqs[k].pe);
        ck_assert_uint_eq(put->offset, reqs[k].offset);
        ck_assert_uint_eq(put->len, reqs[k].value);
        ck_assert_uint_eq(put->first8, reqs[k].local);
        ck_assert(!put->then);
        ck_assert_uint_le(sig->completed_seen, (uint64_t)k);
        ck_assert_uint_le(sig->done_seen, (uint64_t)k);
        /* A set nobody reads back is a store on the ordered road. */
        bool store = ordered && reqs[k].amo_op == USHMEM_RING_AMO_SET;
        ck_assert_int_eq(sig->kind, store ? CALL_STORE : CALL_AMO);
        ck_assert_int_eq(sig->pe, reqs[k].pe);
        ck_assert_uint_eq(sig->offset, reqs[k].reserved);
        if (store) {
            ck_assert_uint_eq(sig->first8, reqs[k].compare);
            ck_assert_uint_eq(sig->len, 8);
        } else {
            ck_assert_uint_eq(sig->len, reqs[k].amo_op == USHMEM_RING_AMO_SET ? USHMEMI_AMO_SET
                                                                               : USHMEMI_AMO_ADD);
        }
        if (ordered)
            ck_assert(sig->then);
    }
    if (ordered) {
        ck_assert_uint_eq(atomic_load(&mock_thens), 2);
        ck_assert_int_eq(atomic_load(&done_early), 0);
    }
    ck_assert_int_eq(atomic_load(&mock_chained), _i == 2 ? 2 : 0);
    ck_assert_int_eq(atomic_load(&mock.completed_ahead), 0);
    ck_assert_int_eq(atomic_load(&aborts), 0);

    ushmemi_log_level = -1; /* the errors below are expected */
    struct ushmem_ring_request bad = reqs[0];
    bad.amo_op = USHMEM_RING_AMO_CSWAP;
    t = ushmem_ring_submit_on(ring, NULL, done, &prod, &bad);
    ushmem_ring_wait_on(ring, done, t);
    ck_assert_int_eq(atomic_load(&aborts), 1);
    ck_assert_ptr_nonnull(strstr(abort_msg, "put with signal to PE 1 refused"));
    ck_assert_uint_eq(atomic_load(&mock.ncalls), 4);
    mock.fail_pe = 3;
    struct ushmem_ring_request lost = reqs[ordered ? 0 : 1];
    lost.pe = 3;
    t = ushmem_ring_submit_on(ring, NULL, done, &prod, &lost);
    ushmem_ring_wait_on(ring, done, t);
    ck_assert_int_eq(atomic_load(&aborts), 2);
    ck_assert_ptr_nonnull(strstr(abort_msg, "put with signal to PE 1 refused")); /* the first */
    ck_assert_uint_eq(atomic_load(&mock.ncalls), 4); /* no signal behind the failed put */
    ushmemi_log_level = saved;
    unsetenv("USHMEMI_PROXY_SIGNAL_CHAIN");
}
END_TEST

/* The ring's tail and values in ring_block when `apart` (as in a GPU's
 * memory), else the ring's own; returns the tail for the producers. */
static ushmem_ring_word_t *tail_and_values_apart(bool apart)
{
    params_ring_tail = apart ? ring_block : NULL;
    params_ring_values = NULL;
    if (apart)
        values_apart();
    return (ushmem_ring_word_t *)params_ring_tail;
}

/* USHMEMI_PROXY_FOLD _i (0, 1, 2; 3 is 1 with the tail and values apart):
 * a request the producer waits for, alone in the ring, hands the counter's
 * copy to the device with itself (a p, a fetch-add, a signal's set; with 2
 * a g of 8 or 4 bytes too, as a fetch of that width) instead of a write64
 * of its own; every value arrives and the copy never goes back. Then a
 * burst of non-blocking puts: the copy ends at the last. */
START_TEST(counter_copy_folded_into_the_request)
{
    struct ushmem_ring_producer prod = {0};
    ushmem_ring_word_t *done = &done_cell;
    char fold[2] = {(char)('0' + (_i == 3 ? 1 : _i)), '\0'};
    bool apart = _i == 3, g_folded = _i == 2;

    setenv("USHMEMI_PROXY_FOLD", fold, 1);
    atomic_store(&check_done_early, 1);
    ushmem_ring_word_t *tail = tail_and_values_apart(apart);
    start_ordered_proxy(16);
    struct ushmem_ring_request reqs[] = {
        {.op = USHMEM_RING_OP_PUT, .flags = USHMEM_RING_FLAG_INLINE, .pe = 1, .offset = 0x10,
         .local = 0x1122334455667788ull, .value = 8},
        {.op = USHMEM_RING_OP_AMO, .amo_op = USHMEM_RING_AMO_ADD,
         .amo_type = USHMEM_RING_AMO_INT64, .flags = USHMEM_RING_FLAG_RESULT, .pe = 3,
         .offset = 0x40, .value = 5},
        {.op = USHMEM_RING_OP_AMO, .amo_op = USHMEM_RING_AMO_SET,
         .amo_type = USHMEM_RING_AMO_UINT64, .pe = 1, .offset = 0x48, .value = 7},
        {.op = USHMEM_RING_OP_GET, .flags = USHMEM_RING_FLAG_RESULT, .pe = 2, .offset = 0x20,
         .value = 8},
        {.op = USHMEM_RING_OP_GET, .flags = USHMEM_RING_FLAG_RESULT, .pe = 1, .offset = 0x34,
         .value = 4},
    };
    uint64_t want[] = {0, 5 * 2 + 0x40, 0, 0, 0};
    for (int i = 7; i >= 0; i--)
        want[3] = want[3] << 8 | (uint64_t)(0x20 + i);
    for (int i = 3; i >= 0; i--)
        want[4] = want[4] << 8 | (uint64_t)(0x34 + i);
    for (int round = 0; round < 20; round++)
        for (size_t k = 0; k < sizeof(reqs) / sizeof(reqs[0]); k++) {
            uint64_t t = ushmem_ring_submit_on(ring, tail, done, &prod, &reqs[k]);
            ushmem_ring_wait_on(ring, done, t);
            ck_assert_uint_ge(ushmem_ring_load_acquire(done), t + 1);
            if (reqs[k].flags & USHMEM_RING_FLAG_RESULT) {
                uint64_t v = ushmem_ring_result_take_on(ring, params_ring_values, t);
                if (reqs[k].op == USHMEM_RING_OP_GET && reqs[k].value == 4)
                    v &= 0xffffffffu; /* a 4-byte g reads the low half */
                ck_assert_uint_eq(v, want[k]);
            }
        }
    /* 20 rounds of 5: with 0 every ticket is a write64, else the g's unless
     * they are folded too. */
    unsigned long folded = _i == 0 ? 0 : g_folded ? 100 : 60;
    ck_assert_uint_eq(atomic_load(&mock_thens), folded);
    ck_assert_int_eq(atomic_load(&done_writes), 100 - (int)folded);
    size_t n = atomic_load(&mock.ncalls);
    ck_assert_int_eq(mock.calls[n - 1].kind, g_folded ? CALL_AMO : CALL_GET_NBI);
    ck_assert_int_eq(mock.calls[n - 2].kind, g_folded ? CALL_AMO : CALL_GET_NBI);
    if (g_folded) {
        ck_assert_uint_eq(mock.calls[n - 1].first8, USHMEMI_AMO_UINT32);
        ck_assert_uint_eq(mock.calls[n - 2].first8, USHMEMI_AMO_UINT64);
    }

    struct ushmem_ring_request burst = {.op = USHMEM_RING_OP_PUT_NBI,
                                        .flags = USHMEM_RING_FLAG_INLINE, .pe = 2,
                                        .offset = 0x50, .local = 9, .value = 8};
    uint64_t last = 0;
    for (int i = 0; i < 200; i++)
        last = ushmem_ring_submit_on(ring, tail, done, &prod, &burst);
    ushmem_ring_quiet_on(ring, done, &prod);
    ck_assert_uint_eq(ushmem_ring_load_acquire(done), last + 1);
    ck_assert_int_eq(atomic_load(&done_back), 0);
    ck_assert_int_eq(atomic_load(&done_early), 0);
    ck_assert_int_eq(atomic_load(&aborts), 0);
    unsetenv("USHMEMI_PROXY_FOLD");
}
END_TEST

/* A get or a fetch-add the transport could not queue is reported, and its
 * reader reads 0, not the value its cell held for the ticket before
 * (values in the ring's cells, _i 0, or apart, _i 1). */
START_TEST(failed_request_reads_zero)
{
    struct ushmem_ring_producer prod = {0};
    ushmem_ring_word_t *done = &done_cell;
    bool apart = _i == 1;

    ushmem_ring_word_t *tail = tail_and_values_apart(apart);
    start_ordered_proxy(16);
    struct ushmem_ring_request g = {.op = USHMEM_RING_OP_GET, .flags = USHMEM_RING_FLAG_RESULT,
                                    .pe = 2, .offset = 0x20, .value = 8};
    struct ushmem_ring_request f = {.op = USHMEM_RING_OP_AMO, .amo_op = USHMEM_RING_AMO_ADD,
                                    .amo_type = USHMEM_RING_AMO_INT64,
                                    .flags = USHMEM_RING_FLAG_RESULT, .pe = 2, .offset = 0x40,
                                    .value = 5};
    for (int i = 0; i < 16; i++) { /* every cell holds a value */
        uint64_t t = ushmem_ring_submit_on(ring, tail, done, &prod, i % 2 ? &f : &g);
        ushmem_ring_wait_on(ring, done, t);
        uint64_t v = ushmem_ring_result_take_on(ring, params_ring_values, t);
        ck_assert_uint_ne(v, 0);
    }
    mock.fail_pe = 2;
    for (int i = 0; i < 2; i++) {
        uint64_t t = ushmem_ring_submit_on(ring, tail, done, &prod, i % 2 ? &f : &g);
        ushmem_ring_wait_on(ring, done, t);
        uint64_t v = ushmem_ring_result_take_on(ring, params_ring_values, t);
        ck_assert_uint_eq(v, 0);
    }
    ck_assert_int_eq(atomic_load(&aborts), 2);
    ck_assert_ptr_nonnull(strstr(abort_msg, "PE 2"));
}
END_TEST

/* A spinning proxy with nothing to do rewrites the counter's copy about
 * once a millisecond and, by default, has the device launch a small kernel
 * that reads it (keep_warm), only where the device is its PE's alone (_i
 * 1), never where another PE's kernels would have to give way to it (_i 0)
 * or with USHMEMI_PROXY_WARM=3 (_i 2). Never as the atomic's kernel on the
 * backend's stream, where behind a program's kernel that fills the GPU it
 * would hold up every request after it. A request after it is still
 * served. */
static atomic_int warm_kernels, warm_drains, backend_fetches;
static bool count_keep_warm(struct ushmemi_device *d, const uint64_t *word)
{
    (void)d;
    if (word == (const uint64_t *)&done_cell)
        atomic_fetch_add(&warm_kernels, 1);
    else if (word == NULL)
        atomic_fetch_add(&warm_drains, 1);
    return word != NULL;
}

static ushmem_status_t count_amo_async(struct ushmemi_device *d, void *addr, unsigned op,
                                       size_t size, uint64_t operand, uint64_t compare,
                                       uint64_t *result, const struct ushmemi_dev_then *then)
{
    (void)d;
    (void)addr;
    (void)op;
    (void)size;
    (void)operand;
    (void)compare;
    (void)result;
    (void)then;
    atomic_fetch_add(&backend_fetches, 1);
    return USHMEM_OK;
}

START_TEST(spinning_proxy_keeps_warm)
{
    static struct ushmemi_device_ops ops;
    struct ushmem_ring_producer prod = {0};

    atomic_store(&warm_kernels, 0);
    atomic_store(&warm_drains, 0);
    atomic_store(&backend_fetches, 0);
    ops = *dev_ops;
    ops.write64 = ordered_write64;
    ops.amo_async = count_amo_async;
    ops.keep_warm = count_keep_warm;
    params_done_copy = (uint64_t *)&done_cell;
    params_transport_ops = &mock_ordered_ops;
    params_idle_spin = 1;
    params_warm_kernel = _i >= 1;
    if (_i == 2)
        setenv("USHMEMI_PROXY_WARM", "3", 1);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    start_proxy_devmem(&ops, 16, USHMEMI_PROXY_DEVMEM_PASS);
    unsetenv("USHMEMI_PROXY_WARM");
    /* At least 20 ms of idleness, longer on a loaded machine (up to 5 s). */
    for (int i = 0; i < 500 && (atomic_load(&done_writes) < 20 ||
                                (_i == 1 && atomic_load(&warm_kernels) < 20) || i < 20);
         i++)
        usleep(10 * 1000);
    int kernels = atomic_load(&warm_kernels), writes = atomic_load(&done_writes);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
    ck_assert_int_ge(writes, 20);
    if (_i == 1)
        ck_assert_int_ge(kernels, 20);
    else
        ck_assert_int_eq(kernels, 0);
    /* About one a millisecond, not one a poll. */
    ck_assert_int_le(kernels, (int)ms + 2);
    ck_assert_int_eq(atomic_load(&backend_fetches), 0);
    struct ushmem_ring_request p_req = {.op = USHMEM_RING_OP_PUT, .flags = USHMEM_RING_FLAG_INLINE,
                                        .pe = 1, .offset = 0x10, .local = 3, .value = 8};
    uint64_t t = ushmem_ring_submit_on(ring, NULL, &done_cell, &prod, &p_req);
    ushmem_ring_wait_on(ring, &done_cell, t);
    ck_assert_int_eq(atomic_load(&done_back), 0);
    ck_assert_int_eq(atomic_load(&aborts), 0);
    /* Stopping waits for the last warm kernel, which reads the counter's
     * copy, before that memory can go: only where there was one. */
    ushmemi_proxy_stop(proxy);
    proxy = NULL;
    ck_assert_int_eq(atomic_load(&warm_drains), _i == 1 ? 1 : 0);
}
END_TEST

/* Non-blocking puts that arrive together are issued sorted, contiguous ones
 * as one transfer; a request of another kind issues the gathered ones first. */
START_TEST(gathered_puts_merge)
{
    struct ushmem_ring_producer prod = {0};
    ushmem_ring_word_t *done = &done_cell;
    const uint64_t piece = 64 * 1024;
    static char buf[8 * 64 * 1024];
    static const int order[8] = {5, 0, 7, 2, 1, 6, 3, 4};
    char one[8];

    start_ordered_proxy(64); /* room for every request while the proxy is held */
    /* The proxy stops inside the first call, so the rest wait in the ring
     * and are taken together. */
    atomic_store(&mock.gate_closed, 1);
    submit(&prod, USHMEM_RING_OP_PUT, 3, 0x100, one, sizeof(one));
    while (atomic_load(&mock.entered) == 0)
        usleep(100);
    for (int round = 0; round < 4; round++) {
        for (int k = 0; k < 8; k++) {
            int i = order[(k + round) % 8];
            /* pe 1: one contiguous message, put 4 times over (a kernel's
             * blocks each putting their share in a loop); pe 2: the same
             * pieces once, the fourth one's source not following on from
             * the third's. */
            submit(&prod, USHMEM_RING_OP_PUT_NBI, 1, 0x100000 + (uint64_t)i * piece,
                   buf + (size_t)i * piece, piece);
            if (round == 0)
                submit(&prod, USHMEM_RING_OP_PUT_NBI, 2, 0x200000 + (uint64_t)i * piece,
                       buf + (size_t)(i == 3 ? 7 : i) * piece, piece);
        }
    }
    uint64_t last = submit(&prod, USHMEM_RING_OP_PUT, 3, 0x200, one, sizeof(one));
    atomic_store(&mock.gate_closed, 0);
    ushmem_ring_wait_on(ring, done, last);

    size_t n = atomic_load(&mock.ncalls), runs1 = 0, runs2 = 0;
    uint64_t bytes2 = 0;
    for (size_t c = 0; c < n; c++) {
        const struct call *call = &mock.calls[c];
        if (call->pe == 1) {
            runs1++;
            ck_assert_int_eq(call->kind, CALL_PUT_NBI);
            ck_assert_uint_eq(call->offset, 0x100000);
            ck_assert_uint_eq(call->local, (uint64_t)(uintptr_t)buf);
            ck_assert_uint_eq(call->len, 8 * piece);
        } else if (call->pe == 2) {
            runs2++;
            bytes2 += call->len;
        }
    }
    ck_assert_uint_eq(runs1, 4); /* one copy per round */
    /* Pieces 0-2, 3 alone, 4-7 (its source breaks the run at both ends). */
    ck_assert_uint_eq(runs2, 3);
    ck_assert_uint_eq(bytes2, 8 * piece);
    /* The blocking put after them comes last. */
    ck_assert_int_eq(mock.calls[n - 1].pe, 3);
    ck_assert_uint_eq(mock.calls[n - 1].offset, 0x200);
    ck_assert_int_eq(atomic_load(&aborts), 0);
}
END_TEST

/* A copy asked of a backend that cannot write device memory behind its
 * copies (no write64) is refused at start. */
START_TEST(device_copy_needs_write64)
{
    struct ushmemi_proxy_peer peers[NPES];
    struct ushmemi_device_ops ops = *dev_ops;
    int saved = ushmemi_log_level;

    for (int pe = 0; pe < NPES; pe++)
        peers[pe] = (struct ushmemi_proxy_peer){&mock_ops, &mock, USHMEMI_PROXY_DEVMEM_REFUSE};
    struct ushmemi_proxy_params params = {
        .dev_ops = &ops, .dev = dev, .capacity = 16, .my_pe = 0, .npes = NPES,
        .peers = peers, .abort_cb = record_abort, .done_copy = (uint64_t *)&done_cell,
    };
    ops.write64 = NULL;
    ushmemi_log_level = -1;
    ck_assert_int_eq(ushmemi_proxy_start(&params, &proxy), USHMEM_ERR_INVALID_PARAM);
    ushmemi_log_level = saved;
    ck_assert_ptr_null(proxy);
}
END_TEST

struct reserver {
    struct ushmem_ring_header *r;
    ushmem_ring_word_t *done;
    atomic_int returned;
    uint64_t ticket;
};

static void *reserve_one(void *arg)
{
    struct reserver *rs = arg;
    struct ushmem_ring_producer prod = {0};

    rs->ticket = ushmem_ring_reserve_on(rs->r, NULL, rs->done, &prod);
    atomic_store(&rs->returned, 1);
    return NULL;
}

/* With a copy, a producer waits for its slot on the copy, a lower bound of
 * head: here head says the slot is free, the copy does not yet. */
START_TEST(reserve_waits_on_the_copy)
{
    struct ushmemi_ring *r;
    struct reserver rs = {0};
    ushmem_ring_word_t copy = 0;
    pthread_t t;

    ck_assert_int_eq(ushmemi_ring_create(dev_ops, dev, 4, &r), USHMEM_OK);
    rs.r = ushmemi_ring_header(r);
    rs.done = &copy;
    ushmem_ring_store_release(&rs.r->tail, 4); /* the next ticket is 4: slot 0 again */
    ushmem_ring_store_release(&rs.r->head, 4); /* ticket 0 was taken long ago */
    ck_assert_int_eq(pthread_create(&t, NULL, reserve_one, &rs), 0);
    usleep(50 * 1000);
    ck_assert_int_eq(atomic_load(&rs.returned), 0);
    ck_assert(!ushmem_ring_is_done_on(rs.r, &copy, 0));
    ushmem_ring_store_release(&copy, 1);
    ck_assert_int_eq(pthread_join(t, NULL), 0);
    ck_assert_uint_eq(rs.ticket, 4);
    ck_assert(ushmem_ring_is_done_on(rs.r, &copy, 0));
    ck_assert(!ushmem_ring_is_done_on(rs.r, &copy, 1));
    /* Without a copy, the ring's own counter says (nothing is done there). */
    ck_assert(!ushmem_ring_is_done_on(rs.r, NULL, 0));
    ushmemi_ring_destroy(r);
}
END_TEST

/* Fetches with the ring's tail (and, where params_ring_values is set, its
 * values) kept apart: each producer takes its tickets from ring_block,
 * waits on the counter's copy and reads its values from ring_block's
 * values, never from the ring's cells, or else from the cells. With
 * fetch_watch, it watches its value's cell (ushmem_ring_result_wait_on)
 * instead of waiting for the copy first. */
static uint64_t fetch_result(uint64_t *values, uint64_t t)
{
    if (fetch_watch)
        return ushmem_ring_result_wait_on(ring, &done_cell, values, t, 8);
    ushmem_ring_wait_on(ring, &done_cell, t);
    return ushmem_ring_result_take_on(ring, values, t);
}

static void *fetch_apart(void *arg)
{
    struct producer *pr = arg;
    struct ushmem_ring_producer prod = {0};
    ushmem_ring_word_t *tail = (ushmem_ring_word_t *)ring_block;
    uint64_t *values = params_ring_values;

    for (int i = 0; i < pr->n; i++) {
        uint64_t off = offset_of(pr->id, i), want = 0;
        struct ushmem_ring_request g = {.op = USHMEM_RING_OP_GET, .flags = USHMEM_RING_FLAG_RESULT,
                                        .pe = i % NPES, .offset = off, .value = 8};
        uint64_t t = ushmem_ring_submit_on(ring, tail, &done_cell, &prod, &g);
        for (int b = 7; b >= 0; b--)
            want = want << 8 | (uint8_t)(off + (uint64_t)b);
        if (fetch_result(values, t) != want)
            pr->errors++;
        struct ushmem_ring_request f = {.op = USHMEM_RING_OP_AMO, .amo_op = USHMEM_RING_AMO_ADD,
                                        .amo_type = USHMEM_RING_AMO_INT64,
                                        .flags = USHMEM_RING_FLAG_RESULT, .pe = i % NPES,
                                        .offset = off, .value = (uint64_t)i};
        t = ushmem_ring_submit_on(ring, tail, &done_cell, &prod, &f);
        if (fetch_result(values, t) != (uint64_t)i * 2 + off)
            pr->errors++;
        pr->tickets[i] = t;
    }
    ushmem_ring_quiet_on(ring, &done_cell, &prod);
    return NULL;
}

static ushmem_status_t block_write64(struct ushmemi_device *d, uint64_t *addr, uint64_t value)
{
    (void)d;
    ushmem_ring_store_release((ushmem_ring_word_t *)addr, value);
    return USHMEM_OK;
}

/* Both kinds of transport, the one the device carries out in order (_i 0,
 * 2, 4) and the one the proxy waits for (_i 1, 3, 5), with the values apart
 * (0, 1) or in the ring's cells (2, 3): 4 producers wrap a 16-slot ring 100
 * times, every value reaches its producer, the tickets come from the tail
 * apart and never from the ring's, and a quiet of the host waits for what
 * was published. 4 and 5: the values apart, watched in their cells, on a
 * 4-slot ring, where a producer's cell may still hold the value of the
 * producer a lap before it, not yet taken. */
START_TEST(ring_tail_and_values_apart)
{
    const int nprod = 4, n = 200;
    const uint32_t capacity = _i >= 4 ? 4 : 16;
    static struct ushmemi_device_ops ops;

    params_ring_tail = ring_block;
    params_ring_values = NULL;
    if (_i < 2 || _i >= 4)
        values_apart();
    fetch_watch = _i >= 4 && getenv("NOWATCH") == NULL;
    if (_i % 2 == 0) {
        start_ordered_proxy(capacity);
    } else {
        ops = *dev_ops;
        ops.write64 = block_write64;
        params_done_copy = (uint64_t *)&done_cell;
        start_proxy(&ops, capacity);
    }
    run_producers(nprod, n, USHMEM_RING_OP_NONE, fetch_apart);
    join_producers(nprod);
    for (int i = 0; i < nprod; i++)
        ck_assert_int_eq(producers[i].errors, 0);
    ck_assert_uint_eq(data_calls(), (size_t)nprod * n * 2);
    ck_assert_uint_eq(ushmem_ring_load_acquire((ushmem_ring_word_t *)ring_block),
                      (uint64_t)nprod * n * 2);
    ck_assert_uint_eq(ushmem_ring_load_acquire(&ring->tail), 0);
    ck_assert_uint_eq(ushmemi_proxy_issued(proxy), (uint64_t)nprod * n * 2);
    ck_assert_int_eq(atomic_load(&aborts), 0);
    free_producers();
}
END_TEST

/* A producer watching its value's cell takes the value the moment the
 * device has written it, before the counter's copy completes its ticket (the
 * device here writes the copy 200 ms late); the cell is empty again after. A
 * value whose bytes are the empty cell's is taken once its ticket is done. */
START_TEST(values_taken_before_the_ticket_is_done)
{
    struct ushmem_ring_producer prod = {0};
    ushmem_ring_word_t *tail = tail_and_values_apart(true);
    struct ushmem_ring_request g = {.op = USHMEM_RING_OP_GET, .flags = USHMEM_RING_FLAG_RESULT,
                                    .pe = 1, .offset = 0x10, .value = 8};

    start_ordered_proxy(4);
    atomic_store(&done_held, 1);
    for (uint64_t i = 0; i < 6; i++) { /* past the ring's first lap */
        g.offset = 0x10 + 8 * i;
        uint64_t t = ushmem_ring_submit_on(ring, tail, &done_cell, &prod, &g), want = 0;
        for (int b = 7; b >= 0; b--)
            want = want << 8 | (uint8_t)(g.offset + (uint64_t)b);
        ck_assert_uint_eq(ushmem_ring_result_wait_on(ring, &done_cell, params_ring_values, t, 8),
                          want);
        ck_assert(!ushmem_ring_is_done_on(ring, &done_cell, t));
        ck_assert_uint_eq(params_ring_values[t & 3], USHMEM_RING_VALUE_EMPTY);
    }
    atomic_store(&done_held, 0);
    g.offset = 0xa5; /* one byte, 0xa5: the empty cell's */
    g.value = 1;
    uint64_t t = ushmem_ring_submit_on(ring, tail, &done_cell, &prod, &g);
    ck_assert_uint_eq(ushmem_ring_result_wait_on(ring, &done_cell, params_ring_values, t, 1) & 0xff,
                      0xa5);
    ck_assert(ushmem_ring_is_done_on(ring, &done_cell, t));
    ck_assert_uint_eq(params_ring_values[t & 3], USHMEM_RING_VALUE_EMPTY);
    ck_assert_int_eq(atomic_load(&aborts), 0);
}
END_TEST

/* produce's puts with the tail apart, never waiting. */
static void *fire_apart(void *arg)
{
    struct producer *pr = arg;
    struct ushmem_ring_producer prod = {0};

    for (int i = 0; i < pr->n; i++) {
        struct ushmem_ring_request req = {.op = USHMEM_RING_OP_PUT_NBI, .pe = (pr->id + i) % NPES,
                                          .offset = offset_of(pr->id, i),
                                          .local = (uint64_t)(uintptr_t)pr->buf,
                                          .value = (uint64_t)(pr->id + 1)};
        pr->tickets[i] = ushmem_ring_submit_on(ring, (ushmem_ring_word_t *)ring_block,
                                               &done_cell, &prod, &req);
    }
    return NULL;
}

/* Stop reads the tail apart through the device and executes every ticket
 * taken from it before it returns. */
START_TEST(stop_drains_with_the_tail_apart)
{
    const int nprod = 4, n = 100;
    static struct ushmemi_device_ops ops;

    ops = *dev_ops;
    ops.write64 = block_write64;
    params_done_copy = (uint64_t *)&done_cell;
    params_ring_tail = ring_block;
    start_proxy_devmem(&ops, 64, USHMEMI_PROXY_DEVMEM_REFUSE);
    mock.nbi_delay_us = 50; /* the proxy lags far behind the producers */
    run_producers(nprod, n, USHMEM_RING_OP_NONE, fire_apart);
    join_producers(nprod);
    ck_assert_uint_lt(atomic_load(&mock.ncalls), (size_t)nprod * n);
    ushmemi_proxy_stop(proxy);
    proxy = NULL;
    mock.ring = NULL;
    check_ticket_order(nprod);
    free_producers();
}
END_TEST

/* What a quiet of the host waits for with the tail apart: every ticket up
 * to the last one published, a ticket published behind one not yet
 * published included, and past slots given to later tickets. */
START_TEST(published_up_to_the_last)
{
    struct ushmemi_ring *r;
    struct ushmem_ring_request req = {.op = USHMEM_RING_OP_PUT, .pe = 1, .value = 8};
    struct ushmem_ring_request taken;
    uint64_t ticket;

    ck_assert_int_eq(ushmemi_ring_create(dev_ops, dev, 4, &r), USHMEM_OK);
    struct ushmem_ring_header *h = ushmemi_ring_header(r);
    ck_assert_uint_eq(ushmemi_ring_published(r), 0);
    ushmem_ring_publish(h, 0, &req);
    ushmem_ring_publish(h, 1, &req);
    ck_assert_uint_eq(ushmemi_ring_published(r), 2);
    ushmem_ring_publish(h, 3, &req); /* ticket 2 taken, not yet published */
    ck_assert_uint_eq(ushmemi_ring_published(r), 4);
    ushmem_ring_publish(h, 2, &req);
    ck_assert_uint_eq(ushmemi_ring_published(r), 4);
    for (int i = 0; i < 4; i++)
        ck_assert(ushmemi_ring_take(r, &taken, &ticket));
    ck_assert_uint_eq(ushmemi_ring_published(r), 4);
    /* Slot 0 goes to ticket 4. */
    ushmem_ring_publish(h, 4, &req);
    ck_assert_uint_eq(ushmemi_ring_published(r), 5);
    ushmemi_ring_destroy(r);
}
END_TEST

/* A kernel that ended left ticket 1, published behind ticket 0 of a
 * kernel still submitting: a quiet of the host covers ticket 1, which
 * completes once ticket 0 is there and done. */
START_TEST(host_quiet_covers_a_ticket_behind_a_gap)
{
    static struct ushmemi_device_ops ops;
    struct ushmem_ring_producer prod = {0};
    char buf[8];

    ops = *dev_ops;
    ops.write64 = block_write64;
    params_done_copy = (uint64_t *)&done_cell;
    params_ring_tail = ring_block;
    start_proxy(&ops, 16);
    uint64_t gap = ushmem_ring_take_ticket((ushmem_ring_word_t *)ring_block);
    struct ushmem_ring_request req = {.op = USHMEM_RING_OP_PUT_NBI, .pe = 1, .offset = 8,
                                      .local = (uint64_t)(uintptr_t)buf, .value = 8};
    uint64_t behind = ushmem_ring_submit_on(ring, (ushmem_ring_word_t *)ring_block, &done_cell,
                                            &prod, &req);
    ck_assert_uint_eq(gap, 0);
    ck_assert_uint_eq(behind, 1);
    ck_assert_uint_eq(ushmemi_proxy_issued(proxy), 2);
    usleep(20 * 1000);
    ck_assert_uint_eq(data_calls(), 0); /* ticket 1 waits for ticket 0 */
    ushmem_ring_publish(ring, gap, &req);
    struct ushmem_ring_producer all = {ushmemi_proxy_issued(proxy), 0};
    ushmem_ring_quiet_on(ring, NULL, &all);
    ck_assert_uint_eq(data_calls(), 2);
    ck_assert_int_eq(atomic_load(&aborts), 0);
}
END_TEST

/* The tail and values apart need the counter's copy, which completes them. */
START_TEST(ring_apart_needs_the_copy)
{
    struct ushmemi_proxy_peer peers[NPES];
    for (int pe = 0; pe < NPES; pe++)
        peers[pe] = (struct ushmemi_proxy_peer){&mock_ops, &mock, USHMEMI_PROXY_DEVMEM_REFUSE};
    struct ushmemi_proxy_params params = {
        .dev_ops = dev_ops, .dev = dev, .capacity = 16, .npes = NPES, .peers = peers,
        .abort_cb = record_abort, .ring_tail = ring_block};
    struct ushmemi_proxy *q = NULL;
    ck_assert_int_eq(ushmemi_proxy_start(&params, &q), USHMEM_ERR_INVALID_PARAM);
    ck_assert_ptr_null(q);
}
END_TEST

/* Binds the test to the first CPU it may use, starts the proxy, has it make
 * one put and returns the CPUs of the proxy thread; *allowed_p receives the
 * CPUs the test could use before. */
static int bind_and_probe(cpu_set_t *allowed_p, cpu_set_t *proxy_cpus_p)
{
    struct ushmem_ring_producer prod = {0};
    cpu_set_t one, now;
    char buf[8] = {0};
    int cpu = 0;

    ck_assert_int_eq(sched_getaffinity(0, sizeof(*allowed_p), allowed_p), 0);
    while (!CPU_ISSET(cpu, allowed_p))
        cpu++;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    ck_assert_int_eq(sched_setaffinity(0, sizeof(one), &one), 0);
    start_proxy(dev_ops, 16);
    ushmem_ring_wait(ring, submit(&prod, USHMEM_RING_OP_PUT, 1, 8, buf, 8));
    *proxy_cpus_p = mock.put_cpus;
    /* The test's own thread is still bound to its CPU. */
    ck_assert_int_eq(sched_getaffinity(0, sizeof(now), &now), 0);
    ck_assert(CPU_EQUAL(&one, &now));
    return cpu;
}

/* Bound to one CPU, as oshrun binds a PE, the process keeps that CPU for its
 * own threads; the proxy thread runs elsewhere whenever another CPU that the
 * test could use from the start is not isolated. */
START_TEST(proxy_leaves_a_lone_bound_cpu)
{
    cpu_set_t allowed, proxy_cpus, isolated;
    char buf[256] = "";
    FILE *f = fopen("/sys/devices/system/cpu/isolated", "r");

    if (f != NULL) {
        if (fgets(buf, sizeof(buf), f) == NULL)
            buf[0] = '\0';
        fclose(f);
    }
    ck_assert_int_eq(ushmemi_parse_cpu_list(buf, &isolated), 0);
    params_local_rank = 0;
    params_local_size = 2;
    int cpu = bind_and_probe(&allowed, &proxy_cpus);
    int elsewhere = 0;
    for (int c = 0; c < CPU_SETSIZE; c++)
        elsewhere |= c != cpu && CPU_ISSET(c, &allowed) && !CPU_ISSET(c, &isolated);
    ck_assert_int_ge(CPU_COUNT(&proxy_cpus), 1);
    if (elsewhere)
        ck_assert(!CPU_ISSET(cpu, &proxy_cpus));
}
END_TEST

static void cpu_set_of(cpu_set_t *set, const char *list)
{
    ck_assert_int_eq(ushmemi_parse_cpu_list(list, set), 0);
}

/* The kernel's CPU lists, as sysfs writes them. */
START_TEST(cpu_lists_parsed)
{
    cpu_set_t set, want;

    cpu_set_of(&set, "0-3,8,10-11\n");
    CPU_ZERO(&want);
    for (int c = 0; c <= 3; c++)
        CPU_SET(c, &want);
    CPU_SET(8, &want);
    CPU_SET(10, &want);
    CPU_SET(11, &want);
    ck_assert(CPU_EQUAL(&set, &want));
    cpu_set_of(&set, "\n");
    ck_assert_int_eq(CPU_COUNT(&set), 0);
    cpu_set_of(&set, "5");
    ck_assert_int_eq(CPU_COUNT(&set), 1);
    ck_assert(CPU_ISSET(5, &set));
    ck_assert_int_eq(ushmemi_parse_cpu_list("3-1", &set), -1);
    ck_assert_int_eq(ushmemi_parse_cpu_list("a", &set), -1);
    ck_assert_int_eq(ushmemi_parse_cpu_list("1,,2", &set), -1);
    ck_assert_int_eq(ushmemi_parse_cpu_list("1 2", &set), -1);
}
END_TEST

/* Where a helper thread may run: never the process's own CPU nor an
 * isolated or offline one; first choice also off the node's PEs' block. */
START_TEST(helper_cpus_chosen)
{
    cpu_set_t own, online, isolated, first, second, want;

    cpu_set_of(&online, "0-7");
    cpu_set_of(&isolated, "7");
    cpu_set_of(&own, "3");
    /* Local rank 1 of 2 on CPU 3: the PEs sit on CPUs 2 and 3. */
    ck_assert_int_eq(ushmemi_helper_cpus(&own, &online, &isolated, 1, 2, &first, &second), 3);
    cpu_set_of(&want, "0-1,4-6");
    ck_assert(CPU_EQUAL(&first, &want));
    cpu_set_of(&want, "0-2,4-6");
    ck_assert(CPU_EQUAL(&second, &want));
    /* Alone or unknown: both choices are every other usable CPU. */
    ck_assert_int_eq(ushmemi_helper_cpus(&own, &online, &isolated, 0, 1, &first, &second), 3);
    cpu_set_of(&want, "0-2,4-6");
    ck_assert(CPU_EQUAL(&first, &want));
    ck_assert(CPU_EQUAL(&second, &want));
    /* Two CPUs, two PEs: only the other PE's CPU is left. */
    cpu_set_of(&online, "0-1");
    CPU_ZERO(&isolated);
    cpu_set_of(&own, "1");
    ck_assert_int_eq(ushmemi_helper_cpus(&own, &online, &isolated, 1, 2, &first, &second), 1);
    ck_assert_int_eq(CPU_COUNT(&first), 0);
    cpu_set_of(&want, "0");
    ck_assert(CPU_EQUAL(&second, &want));
    /* Sparse numbering (SMT off): offline CPUs are never chosen. */
    cpu_set_of(&online, "0,2,4,6");
    cpu_set_of(&own, "2");
    ck_assert_int_eq(ushmemi_helper_cpus(&own, &online, &isolated, 0, 0, &first, &second), 2);
    cpu_set_of(&want, "0,4,6");
    ck_assert(CPU_EQUAL(&first, &want));
    /* Not bound to a single CPU: no choice to make. */
    cpu_set_of(&own, "0,2");
    ck_assert_int_eq(ushmemi_helper_cpus(&own, &online, &isolated, 0, 0, &first, &second), -1);
}
END_TEST

/* auto's rule for spinning helper threads: a PE bound to one CPU (oshrun's
 * default) counts the CPUs its helpers run on that no PE is bound to, one
 * for each spinning thread of each PE of the node, and a cgroup quota that
 * leaves each PE its own CPU besides; an unbound PE its usable CPUs, for
 * the PEs and their spinning threads. Counting only the bound CPU, auto
 * slept under oshrun on every GPU node. */
START_TEST(helpers_spin_where_cores_are_there)
{
    /* Bound, 16 CPUs: alone (15 others) or 2 PEs (14): the proxy spins. */
    ck_assert(ushmemi_helpers_may_spin(1, 0, 15, 1, 1));
    ck_assert(ushmemi_helpers_may_spin(1, 0, 14, 2, 1));
    /* 8 PEs on 16 CPUs: 8 left, one each for the proxies, not two each. */
    ck_assert(ushmemi_helpers_may_spin(1, 0, 8, 8, 1));
    ck_assert(!ushmemi_helpers_may_spin(1, 0, 8, 8, 2));
    ck_assert(ushmemi_helpers_may_spin(1, 0, 16, 8, 2));
    /* 8 PEs on 8 CPUs leave none; 3 PEs with 2 left: not one each. */
    ck_assert(!ushmemi_helpers_may_spin(1, 0, 0, 8, 1));
    ck_assert(!ushmemi_helpers_may_spin(1, 0, 2, 3, 1));
    /* A quota of 3 CPUs for 2 PEs: not two each, whatever the mask says. */
    ck_assert(!ushmemi_helpers_may_spin(1, 3, 14, 2, 1));
    ck_assert(ushmemi_helpers_may_spin(1, 4, 14, 2, 1));
    ck_assert(!ushmemi_helpers_may_spin(1, 4, 14, 2, 2));
    /* Not bound to one CPU: the usable CPUs, for the PEs and spinners. */
    ck_assert(ushmemi_helpers_may_spin(4, 0, -1, 2, 1));
    ck_assert(!ushmemi_helpers_may_spin(3, 0, -1, 2, 1));
    ck_assert(!ushmemi_helpers_may_spin(4, 0, -1, 2, 2));
    ck_assert(ushmemi_helpers_may_spin(6, 0, -1, 2, 2));
    ck_assert(ushmemi_helpers_may_spin(2, 0, -1, 0, 1));
}
END_TEST

/* The count itself, in a child bound to one CPU: the other CPUs this
 * process may use that are online and not isolated; -1 unbound. */
START_TEST(helper_cpu_count_bound)
{
    cpu_set_t online, isolated, own;
    char text[4096] = "";
    FILE *f = fopen("/sys/devices/system/cpu/online", "r");
    ck_assert_ptr_nonnull(f);
    ck_assert_ptr_nonnull(fgets(text, sizeof(text), f));
    fclose(f);
    ck_assert_int_eq(ushmemi_parse_cpu_list(text, &online), 0);
    CPU_ZERO(&isolated);
    f = fopen("/sys/devices/system/cpu/isolated", "r");
    if (f != NULL) {
        if (fgets(text, sizeof(text), f) != NULL && text[0] != '\n')
            ck_assert_int_eq(ushmemi_parse_cpu_list(text, &isolated), 0);
        fclose(f);
    }
    ck_assert_int_eq(sched_getaffinity(0, sizeof(own), &own), 0);
    int mine = -1, allowed = 0, listed = 0;
    for (int c = 0; c < CPU_SETSIZE; c++) {
        if (CPU_ISSET(c, &own) && mine < 0) {
            mine = c;
            continue;
        }
        bool usable = CPU_ISSET(c, &online) && !CPU_ISSET(c, &isolated);
        listed += usable;
        allowed += usable && CPU_ISSET(c, &own);
    }
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(mine, &one);
        if (sched_setaffinity(0, sizeof(one), &one) != 0)
            _exit(2);
        int got = ushmemi_helper_cpu_count(0, 1, NULL);
        /* The CPUs some other PE is bound to do not count: all of them. */
        cpu_set_t taken;
        CPU_ZERO(&taken);
        for (int c = 0; c < CPU_SETSIZE; c++)
            if (c != mine)
                CPU_SET(c, &taken);
        int none = ushmemi_helper_cpu_count(0, 1, &taken);
        /* Told only its own CPU (USHMEM_HELPER_CPUS), the helpers have no
         * other. */
        char mine_text[16];
        snprintf(mine_text, sizeof(mine_text), "%d", mine);
        ushmemi_settings.helper_cpus = mine_text;
        int told = ushmemi_helper_cpu_count(0, 1, NULL);
        _exit(got >= allowed && got <= listed && none == 0 && told == 0 ? 0 : 1);
    }
    int status = 0;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFEXITED(status));
    ck_assert_int_eq(WEXITSTATUS(status), 0);
    if (CPU_COUNT(&own) > 1)
        ck_assert_int_eq(ushmemi_helper_cpu_count(0, 1, NULL), -1);
}
END_TEST

/* Ten rounds of a 32-block kernel's puts (blocks out of step, each putting
 * its share of one message in a loop), all in the ring at once: one copy
 * per round, however the 320 requests came. */
START_TEST(gathered_rounds_merge)
{
    struct ushmem_ring_producer prod = {0};
    ushmem_ring_word_t *done = &done_cell;
    const uint64_t piece = 64 * 1024;
    const int blocks = 32, rounds = 10;
    static char buf[32 * 64 * 1024];
    char one[8];

    start_ordered_proxy(512);
    atomic_store(&mock.gate_closed, 1);
    submit(&prod, USHMEM_RING_OP_PUT, 3, 0x100, one, sizeof(one));
    while (atomic_load(&mock.entered) == 0)
        usleep(100);
    /* Block b is b % 3 rounds ahead of the slowest. */
    for (int step = 0; step < rounds + 2; step++)
        for (int b = 0; b < blocks; b++) {
            int round = step - 2 + b % 3;
            if (round >= 0 && round < rounds)
                submit(&prod, USHMEM_RING_OP_PUT_NBI, 1, 0x100000 + (uint64_t)b * piece,
                       buf + (size_t)b * piece, piece);
        }
    uint64_t last = submit(&prod, USHMEM_RING_OP_PUT, 3, 0x200, one, sizeof(one));
    atomic_store(&mock.gate_closed, 0);
    ushmem_ring_wait_on(ring, done, last);

    size_t n = atomic_load(&mock.ncalls), runs = 0;
    for (size_t c = 0; c < n; c++) {
        const struct call *call = &mock.calls[c];
        if (call->pe != 1)
            continue;
        runs++;
        ck_assert_int_eq(call->kind, CALL_PUT_NBI);
        ck_assert_uint_eq(call->offset, 0x100000);
        ck_assert_uint_eq(call->local, (uint64_t)(uintptr_t)buf);
        ck_assert_uint_eq(call->len, (uint64_t)blocks * piece);
    }
    ck_assert_uint_eq(runs, (size_t)rounds);
    ck_assert_int_eq(atomic_load(&aborts), 0);
}
END_TEST

/* ---- Requests posted by stream-ordered calls (proxy.h). ---- */

/* What a stream does when it reaches a request: writes the trigger, then
 * waits for done (bounded: a lost request fails the test, not hangs it). */
static void stream_reaches(const struct ushmemi_proxy_stream_slot *slot)
{
    ushmem_ring_store_release((ushmem_ring_word_t *)slot->trigger, slot->seq);
    for (int i = 0; ushmem_ring_load_acquire((ushmem_ring_word_t *)slot->done) < slot->seq; i++) {
        ck_assert_msg(i < 200000, "stream request %" PRIu64 " never completed", slot->seq);
        usleep(50);
    }
}

static struct ushmemi_proxy_stream_slot stream_post(const struct ushmem_ring_request *req)
{
    struct ushmemi_proxy_stream_slot slot;
    ck_assert_int_eq(ushmemi_proxy_stream_post(proxy, req, &slot), USHMEM_OK);
    ck_assert_uint_lt(*slot.done, slot.seq); /* not done yet */
    return slot;
}

/* Nothing runs before its stream gets there; then each runs alone, a put
 * followed by a quiet (complete at the target before the stream goes on),
 * in the order the streams reach them, not the order they were posted. */
START_TEST(stream_requests_wait_for_their_stream)
{
    uint64_t pattern = 0x0102030405060708u;
    start_proxy(dev_ops, 16);
    struct ushmem_ring_request put = {.op = USHMEM_RING_OP_PUT, .pe = 1, .offset = 0x100,
                                      .local = (uint64_t)(uintptr_t)&pattern, .value = 8};
    struct ushmem_ring_request inl = {.op = USHMEM_RING_OP_PUT, .flags = USHMEM_RING_FLAG_INLINE,
                                      .pe = 2, .offset = 0x200, .local = 0xabcd, .value = 8};
    struct ushmem_ring_request set = {.op = USHMEM_RING_OP_AMO, .amo_op = USHMEM_RING_AMO_SET,
                                      .amo_type = USHMEM_RING_AMO_UINT64, .pe = 3,
                                      .offset = 0x300, .value = 7};
    struct ushmemi_proxy_stream_slot s1 = stream_post(&put), s2 = stream_post(&inl),
                                     s3 = stream_post(&set);
    ck_assert_uint_eq(s2.seq, s1.seq + 1);
    ck_assert_uint_eq(s3.seq, s2.seq + 1);
    usleep(20000);
    ck_assert_uint_eq(atomic_load(&mock.ncalls), 0);

    stream_reaches(&s2);
    ck_assert_uint_eq(atomic_load(&mock.ncalls), 2);
    ck_assert_int_eq(mock.calls[0].kind, CALL_PUT);
    ck_assert_int_eq(mock.calls[0].pe, 2);
    ck_assert_uint_eq(mock.calls[0].offset, 0x200);
    ck_assert_uint_eq(mock.calls[0].first8, 0xabcd);
    ck_assert_int_eq(mock.calls[1].kind, CALL_QUIET);
    ck_assert_uint_eq(*s1.done, 0);

    stream_reaches(&s3);
    stream_reaches(&s1);
    ck_assert_uint_eq(atomic_load(&mock.ncalls), 5);
    ck_assert_int_eq(mock.calls[2].kind, CALL_AMO);
    ck_assert_int_eq(mock.calls[2].pe, 3);
    ck_assert_uint_eq(mock.calls[2].offset, 0x300);
    ck_assert_uint_eq(mock.calls[2].len, USHMEMI_AMO_SET);
    ck_assert_uint_eq(mock.calls[2].local, 0); /* no result */
    ck_assert_int_eq(mock.calls[3].kind, CALL_PUT);
    ck_assert_int_eq(mock.calls[3].pe, 1);
    ck_assert_uint_eq(mock.calls[3].first8, pattern);
    ck_assert_int_eq(mock.calls[4].kind, CALL_QUIET);
    ck_assert_int_eq(atomic_load(&aborts), 0);
}
END_TEST

#define STREAMS 3
#define STREAM_REQUESTS 1500 /* each: the 1024 slots wrap */

static void *stream_thread(void *arg)
{
    int id = (int)(intptr_t)arg;
    for (int i = 0; i < STREAM_REQUESTS; i++) {
        struct ushmem_ring_request req = {.op = USHMEM_RING_OP_PUT,
                                          .flags = USHMEM_RING_FLAG_INLINE, .pe = id + 1,
                                          .offset = offset_of(id, i),
                                          .local = ((uint64_t)id << 32) | (uint64_t)i, .value = 8};
        struct ushmemi_proxy_stream_slot slot = stream_post(&req);
        stream_reaches(&slot);
    }
    return NULL;
}

/* Streams of several threads: each stream's requests run in its order,
 * every one once, with the same bytes, whatever the others do. */
START_TEST(stream_requests_of_several_streams)
{
    pthread_t threads[STREAMS];
    start_proxy(dev_ops, 16);
    for (int id = 0; id < STREAMS; id++)
        ck_assert_int_eq(pthread_create(&threads[id], NULL, stream_thread, (void *)(intptr_t)id), 0);
    for (int id = 0; id < STREAMS; id++)
        pthread_join(threads[id], NULL);

    int next[STREAMS] = {0};
    size_t n = atomic_load(&mock.ncalls);
    for (size_t c = 0; c < n; c++) {
        const struct call *call = &mock.calls[c];
        if (call->kind == CALL_QUIET)
            continue;
        ck_assert_int_eq(call->kind, CALL_PUT);
        int id = call->pe - 1;
        ck_assert(id >= 0 && id < STREAMS);
        ck_assert_uint_eq(call->offset, offset_of(id, next[id]));
        ck_assert_uint_eq(call->first8, ((uint64_t)id << 32) | (uint64_t)next[id]);
        ck_assert_int_eq(mock.calls[c + 1].kind, CALL_QUIET);
        next[id]++;
    }
    for (int id = 0; id < STREAMS; id++)
        ck_assert_int_eq(next[id], STREAM_REQUESTS);
    ck_assert_int_eq(atomic_load(&aborts), 0);
}
END_TEST

/* What a stream cannot hand over is refused when posted, with no slot. */
START_TEST(stream_requests_refused)
{
    struct ushmemi_proxy_stream_slot slot;
    uint64_t word = 0;
    start_proxy(dev_ops, 16);
    struct ushmem_ring_request nbi = {.op = USHMEM_RING_OP_PUT_NBI, .pe = 1, .local = 8,
                                      .value = 8};
    struct ushmem_ring_request result = {.op = USHMEM_RING_OP_GET, .flags = USHMEM_RING_FLAG_RESULT,
                                         .pe = 1, .value = 8};
    struct ushmem_ring_request fetch = {.op = USHMEM_RING_OP_AMO, .amo_op = USHMEM_RING_AMO_ADD,
                                        .amo_type = USHMEM_RING_AMO_UINT64, .pe = 1,
                                        .result = (uint64_t)(uintptr_t)&word};
    struct ushmem_ring_request big = {.op = USHMEM_RING_OP_PUT, .flags = USHMEM_RING_FLAG_INLINE,
                                      .pe = 1, .value = 9};
    struct ushmem_ring_request far = {.op = USHMEM_RING_OP_PUT, .pe = NPES,
                                      .local = (uint64_t)(uintptr_t)&word, .value = 8};
    ck_assert_int_eq(ushmemi_proxy_stream_post(proxy, &nbi, &slot), USHMEM_ERR_INVALID_PARAM);
    ck_assert_int_eq(ushmemi_proxy_stream_post(proxy, &result, &slot), USHMEM_ERR_INVALID_PARAM);
    ck_assert_int_eq(ushmemi_proxy_stream_post(proxy, &fetch, &slot), USHMEM_ERR_INVALID_PARAM);
    ck_assert_int_eq(ushmemi_proxy_stream_post(proxy, &big, &slot), USHMEM_ERR_INVALID_PARAM);
    ck_assert_int_eq(ushmemi_proxy_stream_post(proxy, &far, &slot), USHMEM_ERR_NO_ROUTE);
    usleep(10000);
    ck_assert_uint_eq(atomic_load(&mock.ncalls), 0);
}
END_TEST

/* A request whose stream never came does not hold up stop, and is never
 * carried out. */
START_TEST(stop_drops_stream_requests_never_reached)
{
    uint64_t word = 1;
    start_proxy(dev_ops, 16);
    struct ushmem_ring_request put = {.op = USHMEM_RING_OP_PUT, .pe = 1, .offset = 0x100,
                                      .local = (uint64_t)(uintptr_t)&word, .value = 8};
    struct ushmemi_proxy_stream_slot slot = stream_post(&put);
    ushmemi_proxy_stop(proxy);
    proxy = NULL;
    ck_assert_uint_eq(atomic_load(&mock.ncalls), 0);
    /* The proxy left the words allocated, as a stream might still write
     * them; this test's "stream" never will. */
    dev_ops->host_free(dev, slot.trigger - slot.seq % 1024, 2 * 1024 * sizeof(uint64_t));
}
END_TEST

static Suite *ring_suite(void)
{
    Suite *s = suite_create("ring");
    TCase *tc = tcase_create("proxy");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, layout_in_pinned_host_memory);
    tcase_add_test(tc, bad_capacity_refused);
    tcase_add_loop_test(tc, producers_wrap_in_ticket_order, 1, MAX_PRODUCERS + 1);
    tcase_add_test(tc, full_ring_back_pressure);
    tcase_add_test(tc, fetched_results_reach_their_producer);
    tcase_add_test(tc, quiet_waits_for_nonblocking);
    tcase_add_test(tc, fence_orders_nonblocking);
    tcase_add_test(tc, transport_failure_aborts_with_pe_op_address);
    tcase_add_test(tc, device_memory_refused);
    tcase_add_test(tc, device_memory_staged);
    tcase_add_test(tc, device_memory_passed);
    tcase_add_test(tc, stop_drains_requests_in_flight);
    tcase_add_test(tc, idle_proxy_backs_off);
    tcase_add_test(tc, device_copy_of_completed);
    tcase_add_test(tc, device_copy_write_retried);
    tcase_add_test(tc, device_copy_needs_write64);
    tcase_add_test(tc, ordered_requests_complete_by_the_copy);
    tcase_add_loop_test(tc, counter_copy_folded_into_the_request, 0, 4);
    tcase_add_loop_test(tc, put_with_signal_is_one_request, 0, 4);
    tcase_add_loop_test(tc, failed_request_reads_zero, 0, 2);
    tcase_add_loop_test(tc, spinning_proxy_keeps_warm, 0, 3);
    tcase_add_test(tc, gathered_puts_merge);
    tcase_add_test(tc, gathered_rounds_merge);
    tcase_add_test(tc, reserve_waits_on_the_copy);
    tcase_add_loop_test(tc, ring_tail_and_values_apart, 0, 6);
    tcase_add_test(tc, values_taken_before_the_ticket_is_done);
    tcase_add_test(tc, stop_drains_with_the_tail_apart);
    tcase_add_test(tc, published_up_to_the_last);
    tcase_add_test(tc, host_quiet_covers_a_ticket_behind_a_gap);
    tcase_add_test(tc, ring_apart_needs_the_copy);
    tcase_add_test(tc, proxy_leaves_a_lone_bound_cpu);
    tcase_add_test(tc, cpu_lists_parsed);
    tcase_add_test(tc, helper_cpus_chosen);
    tcase_add_test(tc, helpers_spin_where_cores_are_there);
    tcase_add_test(tc, helper_cpu_count_bound);
    tcase_add_test(tc, stream_requests_wait_for_their_stream);
    tcase_add_test(tc, stream_requests_of_several_streams);
    tcase_add_test(tc, stream_requests_refused);
    tcase_add_test(tc, stop_drops_stream_requests_never_reached);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(ring_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
