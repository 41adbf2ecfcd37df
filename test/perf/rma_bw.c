/* Put and get bandwidth, one program built twice (test/perf/meson.build):
 * put_bw: PE 0 issues a window of shmem_putmem_nbi to PE 1, then one
 * shmem_quiet, repeated.
 * get_bw (-DBENCH_GET): the same with shmem_getmem_nbi from PE 1.
 * Every other PE waits in the barrier. With --pairs, every PE i < npes/2 does
 * the same with PE i + npes/2 at once, and the bytes of all pairs over the
 * slowest pair's time are reported. Reports MB/s (10^6 bytes per second) and
 * thousands of messages per second. */
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
    double *rates; /* on PE 0: each initiator's messages per microsecond */
    size_t size;
    int pe;
    long window;
    /* This PE's part: it issues the operations; its src holds the data (the
     * initiator of a put, the target of a get); its dst receives it. */
    int initiator;
    int data_src;
    int data_dst;
    int npairs;
};

static void rma_window(void *ctx, long n)
{
    struct loop *l = ctx;
    for (long i = 0; i < n; i++) {
        for (long w = 0; w < l->window; w++) {
            if (IS_GET)
                shmem_getmem_nbi(l->dst, l->src, l->size, l->pe);
            else
                shmem_putmem_nbi(l->dst, l->src, l->size, l->pe);
        }
        shmem_quiet();
    }
}

static int setup(void *ctx, const struct bench_opts *opts)
{
    struct loop *l = ctx;
    int me = shmem_my_pe();
    int npes = shmem_n_pes();

    l->npairs = opts->pairs ? npes / 2 : 1;
    l->initiator = me < l->npairs;
    int target = me >= npes / 2 && me < npes / 2 + l->npairs;
    l->pe = l->initiator ? me + npes / 2 : me - npes / 2;
    if (!opts->pairs) {
        l->initiator = me == 0;
        target = me == 1;
        l->pe = 1 - me;
    }
    l->data_src = IS_GET ? target : l->initiator;
    l->data_dst = IS_GET ? l->initiator : target;
    l->window = opts->window;
    l->src = bench_malloc(opts->max_size);
    l->dst = bench_malloc(opts->max_size);
    l->rates = bench_malloc((size_t)npes * sizeof(double));
    return l->src != NULL && l->dst != NULL && l->rates != NULL ? 0 : 1;
}

static int measure_size(void *ctx, const struct bench_opts *opts, size_t size, double *values)
{
    struct loop *l = ctx;
    int me = shmem_my_pe();
    long iters = bench_iters(opts, size * (size_t)l->window, 1000, (size_t)512 << 20, 4);
    /* Each PE seeds with its own number, so the data that arrives differs
     * from what its receiving buffer held. */
    unsigned seed = (unsigned)size + (unsigned)me;
    int rc = 0;

    if (l->data_src)
        bench_fill(l->src, size, seed);
    if (l->data_dst)
        bench_fill(l->dst, size, seed);
    shmem_barrier_all();
    if (l->initiator) {
        l->size = size;
        double us = bench_time_loop(opts, rma_window, l, &iters);
        shmem_double_p(&l->rates[me], (double)iters * (double)l->window / us, 0);
        shmem_quiet();
    }
    shmem_barrier_all();
    if (me == 0) {
        /* All pairs ran the same count at once: the slowest one decides
         * when the whole exchange was done. */
        double slowest = shmem_double_g(&l->rates[0], me);
        for (int p = 1; p < l->npairs; p++) {
            double r = shmem_double_g(&l->rates[p], me);
            slowest = r < slowest ? r : slowest;
        }
        double rate = slowest * l->npairs; /* messages per microsecond */
        values[0] = rate * (double)size;
        values[1] = rate * 1e3;
    }
    if (l->data_dst) {
        size_t bad = bench_check(l->dst, size, (unsigned)size + (unsigned)l->pe);
        if (bad != size) {
            fprintf(stderr, OP_NAME "_bw: PE %d byte %zu of a %zu-byte " OP_NAME
                    " from PE %d is wrong\n", me, bad, size, l->pe);
            rc = 1;
        }
    }
    return rc;
}

static void teardown(void *ctx)
{
    struct loop *l = ctx;
    if (l->rates != NULL)
        shmem_free(l->rates);
    if (l->dst != NULL)
        shmem_free(l->dst);
    if (l->src != NULL)
        shmem_free(l->src);
}

int main(int argc, char **argv)
{
    static const struct bench_table table = {
        .name = OP_NAME "_bw",
        .key_label = "Size",
        .csv_key = "size",
        .ncols = 2,
        .labels = {"Bandwidth(MB/s)", "Rate(Kmsg/s)"},
        .csv_labels = {"bandwidth_mbs", "rate_kmsgs"},
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
