/* Barrier latency: every PE calls shmem_barrier_all in a loop. Reports PE 0's
 * microseconds per barrier (all PEs leave within one barrier of each other). */
#include <stdio.h>

#include <shmem.h>

#include "bench.h"

static void barriers(void *ctx, long n)
{
    (void)ctx;
    for (long i = 0; i < n; i++)
        shmem_barrier_all();
}

static int measure(void *ctx, const struct bench_opts *opts, const struct bench_table *table)
{
    (void)ctx;
    long iters = bench_iters(opts, 0, 10000, 0, 20);
    double lat = bench_time_collective(opts, barriers, NULL, &iters) / (double)iters;
    if (shmem_my_pe() == 0) {
        char key[16];
        snprintf(key, sizeof(key), "%d", shmem_n_pes());
        bench_print_row(opts, table, key, &lat);
    }
    return 0;
}

int main(int argc, char **argv)
{
    static const struct bench_table table = {
        .name = "barrier_latency",
        .key_label = "PEs",
        .csv_key = "pes",
        .ncols = 1,
        .labels = {"Latency(us)"},
        .csv_labels = {"latency_us"},
    };
    static const struct bench_def def = {
        .table = &table,
        .min_pes = 1,
        .measure = measure,
    };
    return bench_main(argc, argv, &def);
}
