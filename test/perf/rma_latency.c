/* Put and get latency, one program built twice (test/perf/meson.build):
 * put_latency: PE 0 writes to PE 1 with a blocking shmem_putmem followed by
 * shmem_quiet, one message per iteration, like osu_oshm_put.
 * get_latency (-DBENCH_GET): PE 0 reads from PE 1 with a blocking
 * shmem_getmem, one message per iteration, like osu_oshm_get.
 * Every other PE waits in the barrier. Reports microseconds per put+quiet or
 * per get. */
#include <stdio.h>

#include <shmem.h>

#include "bench.h"

/* A constant, not a variable, so that the timed loop has no branch left. */
#ifdef BENCH_GET
enum { IS_GET = 1 };
#define OP_NAME "get"
#else
enum { IS_GET = 0 };
#define OP_NAME "put"
#endif

struct loop {
    char *src;
    char *dst;
    size_t size;
};

static void rma(void *ctx, long n)
{
    struct loop *l = ctx;
    for (long i = 0; i < n; i++) {
        if (IS_GET) {
            shmem_getmem(l->dst, l->src, l->size, 1);
        } else {
            shmem_putmem(l->dst, l->src, l->size, 1);
            shmem_quiet();
        }
    }
}

static int setup(void *ctx, const struct bench_opts *opts)
{
    struct loop *l = ctx;
    l->src = bench_malloc(opts->max_size);
    l->dst = bench_malloc(opts->max_size);
    return l->src != NULL && l->dst != NULL ? 0 : 1;
}

static int measure_size(void *ctx, const struct bench_opts *opts, size_t size, double *values)
{
    struct loop *l = ctx;
    int me = shmem_my_pe();
    /* PE 0 issues every operation; the data flows from src_pe to dst_pe. */
    int src_pe = IS_GET ? 1 : 0;
    int dst_pe = 1 - src_pe;
    long iters = bench_iters(opts, size, 10000, (size_t)256 << 20, 20);
    unsigned seed = (unsigned)size;
    int rc = 0;

    if (me == src_pe)
        bench_fill(l->src, size, seed);
    if (me == dst_pe)
        bench_fill(l->dst, size, seed + 1);
    shmem_barrier_all();
    if (me == 0) {
        l->size = size;
        values[0] = bench_time_loop(opts, rma, l, &iters) / (double)iters;
    }
    shmem_barrier_all();
    if (me == dst_pe) {
        size_t bad = bench_check(l->dst, size, seed);
        if (bad != size) {
            fprintf(stderr, OP_NAME "_latency: PE %d byte %zu of a %zu-byte " OP_NAME
                    " is wrong\n", me, bad, size);
            rc = 1;
        }
    }
    return rc;
}

static void teardown(void *ctx)
{
    struct loop *l = ctx;
    if (l->dst != NULL)
        shmem_free(l->dst);
    if (l->src != NULL)
        shmem_free(l->src);
}

int main(int argc, char **argv)
{
    static const struct bench_table table = {
        .name = OP_NAME "_latency",
        .key_label = "Size",
        .csv_key = "size",
        .ncols = 1,
        .labels = {"Latency(us)"},
        .csv_labels = {"latency_us"},
    };
    static struct loop loop;
    static const struct bench_def def = {
        .table = &table,
        .min_pes = 2,
        .ctx = &loop,
        .setup = setup,
        .measure_size = measure_size,
        .teardown = teardown,
    };
    return bench_main(argc, argv, &def);
}
