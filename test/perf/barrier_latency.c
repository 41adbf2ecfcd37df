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
    struct bench_opts opts;
    int rc = 0;

    shmem_init();
    int me = shmem_my_pe();
    int parsed = bench_parse(argc, argv, NULL, 1, &opts);
    if (parsed >= 0) {
        rc = parsed;
        goto finalize;
    }
    if (me == 0)
        bench_print_header(&opts, &table);

    long iters = bench_iters(&opts, 0, 10000, 0, 20);
    double lat = bench_time_collective(&opts, barriers, NULL, &iters) / (double)iters;
    if (me == 0) {
        char key[16];
        snprintf(key, sizeof(key), "%d", shmem_n_pes());
        bench_print_row(&opts, &table, key, &lat);
    }

finalize:
    shmem_finalize();
    return rc;
}
