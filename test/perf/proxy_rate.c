/* Proxy request rate: 1, 2, 4 and 8 producer threads submit requests to one
 * proxy thread whose transport does nothing, so the figures are the cost of
 * the ring (tickets, back pressure, the completion counter), the pointer
 * query on the named local memory and the dispatch. Columns:
 *   put_nbi    submit without waiting, one quiet per thread at the end;
 *   put        blocking: submit, then wait for the request's completion;
 *   fetch_add  blocking with a fetched value written back to the producer.
 * The table has the layout of the other benchmarks (bench.h), printed here
 * because those link the OpenSHMEM library and this one only the proxy layer.
 * Afterwards it reports the idle proxy thread's CPU use and how long the first
 * request after an idle period takes, which is what the backoff costs. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../src/device/device.h"
#include "../../src/proxy/proxy.h"

#define MAX_THREADS 8
#define NCOLS 3

struct opts {
    int csv;
    long requests; /* put_nbi requests per row, over all threads */
    double idle_s;
    uint32_t capacity;
};

/* ---- The no-op transport ---- */

static ushmem_status_t noop_init(const struct ushmemi_transport_params *params,
                                 struct ushmemi_transport **t_p)
{
    (void)params;
    (void)t_p;
    return USHMEM_ERR_UNSUPPORTED;
}
static void noop_fini(struct ushmemi_transport *t) { (void)t; }
static int noop_can_atomic(struct ushmemi_transport *t, int pe, const char **why_p)
{
    (void)t;
    (void)pe;
    *why_p = "no-op";
    return 1;
}
static ushmem_status_t noop_put(struct ushmemi_transport *t, int pe, uint64_t offset,
                                const void *src, size_t len)
{
    (void)t, (void)pe, (void)offset, (void)src, (void)len;
    return USHMEM_OK;
}
static ushmem_status_t noop_get(struct ushmemi_transport *t, int pe, void *dst, uint64_t offset,
                                size_t len)
{
    (void)t, (void)pe, (void)dst, (void)offset, (void)len;
    return USHMEM_OK;
}
static ushmem_status_t noop_atomic(struct ushmemi_transport *t, int pe, uint64_t offset,
                                   enum ushmemi_amo_op op, enum ushmemi_amo_type type,
                                   const void *operand, const void *compare, void *result)
{
    (void)t, (void)pe, (void)offset, (void)op, (void)type, (void)compare;
    if (result != NULL)
        memcpy(result, operand, sizeof(int64_t));
    return USHMEM_OK;
}
static ushmem_status_t noop_sync(struct ushmemi_transport *t)
{
    (void)t;
    return USHMEM_OK;
}

static int noop_progress(struct ushmemi_transport *t)
{
    (void)t;
    return 0;
}

static const struct ushmemi_transport_ops noop_ops = {
    .size = sizeof(struct ushmemi_transport_ops),
    .name = "noop",
    .init = noop_init,
    .fini = noop_fini,
    .can_atomic = noop_can_atomic,
    .put = noop_put,
    .get = noop_get,
    .put_nbi = noop_put,
    .get_nbi = noop_get,
    .atomic = noop_atomic,
    .fence = noop_sync,
    .quiet = noop_sync,
    .progress = noop_progress,
};

static void abort_run(void *ctx, ushmem_status_t status, const char *msg)
{
    (void)ctx;
    fprintf(stderr, "proxy_rate: request failed (%d): %s\n", (int)status, msg);
    exit(1);
}

/* ---- Producers ---- */

enum kind { KIND_PUT_NBI, KIND_PUT, KIND_FETCH_ADD };

struct worker {
    pthread_t thread;
    struct ushmem_ring_header *ring;
    pthread_barrier_t *start;
    enum kind kind;
    long n;
    int id;
    char buf[64];
    long bad;
};

static void *work(void *arg)
{
    struct worker *w = arg;
    struct ushmem_ring_producer prod = {0};
    struct ushmem_ring_request req = {.pe = w->id & 1, .local = (uint64_t)(uintptr_t)w->buf,
                                      .value = 8};
    int64_t result = 0;

    if (w->kind == KIND_PUT_NBI) {
        req.op = USHMEM_RING_OP_PUT_NBI;
    } else if (w->kind == KIND_PUT) {
        req.op = USHMEM_RING_OP_PUT;
    } else {
        req.op = USHMEM_RING_OP_AMO;
        req.amo_op = USHMEM_RING_AMO_ADD;
        req.amo_type = USHMEM_RING_AMO_INT64;
        req.result = (uint64_t)(uintptr_t)&result;
        req.local = 0;
    }
    pthread_barrier_wait(w->start);
    for (long i = 0; i < w->n; i++) {
        req.offset = (uint64_t)i * 8;
        req.value = w->kind == KIND_FETCH_ADD ? (uint64_t)i : 8;
        uint64_t t = ushmem_ring_submit(w->ring, &prod, &req);
        if (w->kind != KIND_PUT_NBI) {
            ushmem_ring_wait(w->ring, t);
            if (w->kind == KIND_FETCH_ADD && result != i)
                w->bad++;
        }
    }
    ushmem_ring_quiet(w->ring, &prod);
    return NULL;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Millions of requests per second for nthreads producers of one kind. */
static double rate(struct ushmem_ring_header *ring, int nthreads, enum kind kind, long total)
{
    struct worker w[MAX_THREADS];
    pthread_barrier_t start;
    double t0, t1;
    long bad = 0;

    pthread_barrier_init(&start, NULL, (unsigned)nthreads + 1);
    for (int i = 0; i < nthreads; i++) {
        w[i] = (struct worker){.ring = ring, .start = &start, .kind = kind,
                               .n = total / nthreads, .id = i};
        if (pthread_create(&w[i].thread, NULL, work, &w[i]) != 0) {
            fprintf(stderr, "proxy_rate: pthread_create failed\n");
            exit(1);
        }
    }
    pthread_barrier_wait(&start);
    t0 = now_s();
    for (int i = 0; i < nthreads; i++) {
        pthread_join(w[i].thread, NULL);
        bad += w[i].bad;
    }
    t1 = now_s();
    pthread_barrier_destroy(&start);
    if (bad != 0) {
        fprintf(stderr, "proxy_rate: %ld fetched values were wrong\n", bad);
        exit(1);
    }
    return (double)(total / nthreads * nthreads) / (t1 - t0) / 1e6;
}

static int parse(int argc, char **argv, struct opts *o)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--csv") == 0) {
            o->csv = 1;
        } else if (strcmp(a, "--quick") == 0) {
            o->requests /= 10;
            o->idle_s = 0.2;
        } else if (strcmp(a, "--requests") == 0 && i + 1 < argc) {
            o->requests = atol(argv[++i]);
        } else if (strcmp(a, "--idle") == 0 && i + 1 < argc) {
            o->idle_s = atof(argv[++i]);
        } else if (strcmp(a, "--capacity") == 0 && i + 1 < argc) {
            o->capacity = (uint32_t)atol(argv[++i]);
        } else if (strcmp(a, "--help") == 0) {
            printf("usage: %s [--csv] [--quick] [--requests N] [--idle SECONDS] [--capacity SLOTS]\n"
                   "  --requests   put_nbi requests per row (blocking columns use a tenth)\n"
                   "  --idle       idle period for the proxy CPU measurement (0: skip)\n"
                   "  --capacity   ring slots, a power of two (default 1024)\n",
                   argv[0]);
            return 0;
        } else {
            fprintf(stderr, "%s: bad option '%s' (try --help)\n", argv[0], a);
            return 2;
        }
    }
    if (o->requests < MAX_THREADS * 10) {
        fprintf(stderr, "%s: --requests must be at least %d\n", argv[0], MAX_THREADS * 10);
        return 2;
    }
    return -1;
}

int main(int argc, char **argv)
{
    struct opts o = {.csv = 0, .requests = 2000000, .idle_s = 2.0, .capacity = 1024};
    const struct ushmemi_device_ops *dev_ops;
    struct ushmemi_device *dev;
    struct ushmemi_proxy *proxy;
    struct ushmemi_proxy_peer peers[2] = {{&noop_ops, NULL, USHMEMI_PROXY_DEVMEM_REFUSE},
                                            {&noop_ops, NULL, USHMEMI_PROXY_DEVMEM_REFUSE}};
    static const int threads[] = {1, 2, 4, 8};
    static const char *const labels[NCOLS] = {"put_nbi (Mreq/s)", "put (Mreq/s)",
                                              "fetch_add (Mreq/s)"};
    static const char *const csv_labels[NCOLS] = {"put_nbi_mreqs", "put_mreqs", "fetch_add_mreqs"};
    int rc = parse(argc, argv, &o);

    if (rc >= 0)
        return rc;
    if (ushmemi_device_open("cpu", 0, 1, &dev_ops, &dev) != USHMEM_OK)
        return 1;
    struct ushmemi_proxy_params params = {.dev_ops = dev_ops, .dev = dev, .capacity = o.capacity,
                                          .my_pe = 0, .npes = 2, .peers = peers,
                                          .abort_cb = abort_run};
    if (ushmemi_proxy_start(&params, &proxy) != USHMEM_OK)
        return 1;
    struct ushmem_ring_header *ring = ushmemi_proxy_ring(proxy);

    if (o.csv) {
        printf("# proxy_rate,ushmem proxy (no-op transport, %u slots),1\nproducers", o.capacity);
        for (int c = 0; c < NCOLS; c++)
            printf(",%s", csv_labels[c]);
        printf("\n");
    } else {
        printf("# proxy_rate: ushmem proxy, no-op transport, %u slots\n", o.capacity);
        printf("# %-12s", "Producers");
        for (int c = 0; c < NCOLS; c++)
            printf("%20s", labels[c]);
        printf("\n");
    }
    fflush(stdout);

    for (size_t r = 0; r < sizeof(threads) / sizeof(threads[0]); r++) {
        int n = threads[r];
        double v[NCOLS] = {
            rate(ring, n, KIND_PUT_NBI, o.requests),
            rate(ring, n, KIND_PUT, o.requests / 10),
            rate(ring, n, KIND_FETCH_ADD, o.requests / 10),
        };
        if (o.csv) {
            printf("%d", n);
            for (int c = 0; c < NCOLS; c++)
                printf(",%.6g", v[c]);
        } else {
            printf("%-14d", n);
            for (int c = 0; c < NCOLS; c++)
                printf("%20.3f", v[c]);
        }
        printf("\n");
        fflush(stdout);
    }

    if (o.idle_s > 0) {
        struct ushmem_ring_producer prod = {0};
        struct ushmem_ring_request req = {.op = USHMEM_RING_OP_FENCE};
        struct timespec idle = {(time_t)o.idle_s,
                                (long)((o.idle_s - (double)(time_t)o.idle_s) * 1e9)};
        uint64_t before, after;

        /* Let the proxy reach its deepest sleep before measuring. */
        struct timespec settle = {0, 50 * 1000 * 1000};
        nanosleep(&settle, NULL);
        ushmemi_proxy_cpu_time(proxy, &before);
        nanosleep(&idle, NULL);
        ushmemi_proxy_cpu_time(proxy, &after);
        double t0 = now_s();
        ushmem_ring_wait(ring, ushmem_ring_submit(ring, &prod, &req));
        double wake_us = (now_s() - t0) * 1e6;
        double cpu_ms = (double)(after - before) / 1e6;
        printf("# idle proxy thread: %.2f ms CPU over %.1f s (%.3f%%); first request after idle "
               "completed in %.0f us\n",
               cpu_ms, o.idle_s, cpu_ms / (o.idle_s * 10.0), wake_us);
    }
    ushmemi_proxy_stop(proxy);
    dev_ops->close(dev);
    return 0;
}
