/* Put latency: PE 0 writes to PE 1 with a blocking shmem_putmem followed by
 * shmem_quiet, one message per iteration, like osu_oshm_put. Every other PE
 * waits in the barrier. Reports microseconds per put+quiet. */
#include <stdio.h>

#include <shmem.h>

#include "bench.h"

struct loop {
    void *dst;
    const void *src;
    size_t size;
};

static void put_quiet(void *ctx, long n)
{
    struct loop *l = ctx;
    for (long i = 0; i < n; i++) {
        shmem_putmem(l->dst, l->src, l->size, 1);
        shmem_quiet();
    }
}

int main(int argc, char **argv)
{
    static const struct bench_table table = {
        .name = "put_latency",
        .key_label = "Size",
        .csv_key = "size",
        .ncols = 1,
        .labels = {"Latency(us)"},
        .csv_labels = {"latency_us"},
    };
    struct bench_opts opts;
    int rc = 0;

    shmem_init();
    int me = shmem_my_pe();
    int parsed = bench_parse(argc, argv, NULL, 1, &opts);
    if (parsed >= 0) {
        rc = parsed;
        goto finalize;
    }
    if (shmem_n_pes() < 2) {
        bench_need_pes(table.name, 2);
        rc = 77;
        goto finalize;
    }

    char *src = bench_malloc(opts.max_size);
    char *dst = bench_malloc(opts.max_size);
    if (src == NULL || dst == NULL) {
        rc = 1;
        goto free_buffers;
    }
    if (me == 0)
        bench_print_header(&opts, &table);

    for (size_t size = opts.min_size; size <= opts.max_size; size *= 2) {
        long iters = bench_iters(&opts, size, 10000, (size_t)256 << 20, 20);
        unsigned seed = (unsigned)size;
        if (me == 0)
            bench_fill(src, size, seed);
        if (me == 1)
            bench_fill(dst, size, seed + 1);
        shmem_barrier_all();
        if (me == 0) {
            struct loop l = {dst, src, size};
            double lat = bench_time_loop(&opts, put_quiet, &l, &iters) / (double)iters;
            bench_print_size_row(&opts, &table, size, &lat);
        }
        shmem_barrier_all();
        if (me == 1) {
            size_t bad = bench_check(dst, size, seed);
            if (bad != size) {
                fprintf(stderr, "put_latency: PE 1 byte %zu of a %zu-byte put is wrong\n",
                        bad, size);
                rc = 1;
            }
        }
        if (size > opts.max_size / 2)
            break;
    }

free_buffers:
    if (dst != NULL)
        shmem_free(dst);
    if (src != NULL)
        shmem_free(src);
finalize:
    shmem_finalize();
    return rc;
}
