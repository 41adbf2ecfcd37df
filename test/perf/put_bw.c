/* Put bandwidth: PE 0 issues a window of shmem_putmem_nbi to PE 1, then one
 * shmem_quiet, repeated; every other PE waits in the barrier. With --pairs,
 * every PE i < npes/2 does the same towards PE i + npes/2 at once, and the
 * bytes of all pairs over the slowest pair's time are reported. Reports MB/s
 * (10^6 bytes per second) and thousands of messages per second. */
#include <stdio.h>

#include <shmem.h>

#include "bench.h"

struct loop {
    void *dst;
    const void *src;
    size_t size;
    int pe;
    long window;
};

static void put_window(void *ctx, long n)
{
    struct loop *l = ctx;
    for (long i = 0; i < n; i++) {
        for (long w = 0; w < l->window; w++)
            shmem_putmem_nbi(l->dst, l->src, l->size, l->pe);
        shmem_quiet();
    }
}

int main(int argc, char **argv)
{
    static const struct bench_table table = {
        .name = "put_bw",
        .key_label = "Size",
        .csv_key = "size",
        .ncols = 2,
        .labels = {"Bandwidth(MB/s)", "Rate(Kmsg/s)"},
        .csv_labels = {"bandwidth_mbs", "rate_kmsgs"},
    };
    struct bench_opts opts;
    int rc = 0;

    shmem_init();
    int me = shmem_my_pe();
    int npes = shmem_n_pes();
    int parsed = bench_parse(argc, argv, NULL, 1, &opts);
    if (parsed >= 0) {
        rc = parsed;
        goto finalize;
    }
    if (npes < 2) {
        bench_need_pes(table.name, 2);
        rc = 77;
        goto finalize;
    }
    int npairs = opts.pairs ? npes / 2 : 1;
    int sender = me < npairs;
    int receiver = me >= npes / 2 && me < npes / 2 + npairs;
    int peer = sender ? me + npes / 2 : me - npes / 2;
    if (!opts.pairs) {
        sender = me == 0;
        receiver = me == 1;
        peer = 1 - me;
    }

    char *src = bench_malloc(opts.max_size);
    char *dst = bench_malloc(opts.max_size);
    double *rates = bench_malloc((size_t)npes * sizeof(double));
    if (src == NULL || dst == NULL || rates == NULL) {
        rc = 1;
        goto free_buffers;
    }
    if (me == 0)
        bench_print_header(&opts, &table);

    for (size_t size = opts.min_size; size <= opts.max_size; size *= 2) {
        long window = opts.window;
        long iters = bench_iters(&opts, size * (size_t)window, 1000, (size_t)512 << 20, 4);
        unsigned seed = (unsigned)size + (unsigned)me;
        if (sender)
            bench_fill(src, size, seed);
        if (receiver)
            bench_fill(dst, size, seed);
        shmem_barrier_all();
        if (sender) {
            struct loop l = {dst, src, size, peer, window};
            double us = bench_time_loop(&opts, put_window, &l, &iters);
            shmem_double_p(&rates[me], (double)iters * (double)window / us, 0);
            shmem_quiet();
        }
        shmem_barrier_all();
        if (me == 0) {
            /* All pairs ran the same count at once: the slowest one decides
             * when the whole exchange was done. */
            double slowest = rates[0];
            for (int p = 1; p < npairs; p++)
                slowest = rates[p] < slowest ? rates[p] : slowest;
            double rate = slowest * npairs; /* messages per microsecond */
            double v[2] = {rate * (double)size, rate * 1e3};
            bench_print_size_row(&opts, &table, size, v);
        }
        if (receiver) {
            /* The sender's pattern used its own PE number as part of the seed. */
            size_t bad = bench_check(dst, size, (unsigned)size + (unsigned)peer);
            if (bad != size) {
                fprintf(stderr, "put_bw: PE %d byte %zu of a %zu-byte put from PE %d is wrong\n",
                        me, bad, size, peer);
                rc = 1;
            }
        }
        if (size > opts.max_size / 2)
            break;
    }

free_buffers:
    if (rates != NULL)
        shmem_free(rates);
    if (dst != NULL)
        shmem_free(dst);
    if (src != NULL)
        shmem_free(src);
finalize:
    shmem_finalize();
    return rc;
}
