/* Alltoall bandwidth with the OpenSHMEM 1.4 shmem_alltoall64 on all PEs (the
 * deprecated active-set form, so the source builds on 1.4 implementations).
 * Size is the bytes each PE sends in one call (one block to every PE,
 * itself included); bandwidth is the bytes all PEs send per second (npes *
 * Size / time, 10^6 bytes per second), latency the time of one call on PE 0. */
#include <stdio.h>

#include <shmem.h>

#include "bench.h"

static long element(int from, int to, size_t k, size_t block)
{
    return (long)(((unsigned long)from << 40) ^ ((unsigned long)to << 24) ^
                  (unsigned long)(k * 2654435761u) ^ (unsigned long)block);
}

struct loop {
    long *dst;
    const long *src;
    size_t nelems;
    long *psync;
    long calls; /* picks the pSync array; runs on across sizes */
};

static void alltoalls(void *ctx, long n)
{
    struct loop *l = ctx;
    int npes = shmem_n_pes();
    for (long i = 0; i < n; i++, l->calls++)
        shmem_alltoall64(l->dst, l->src, l->nelems, 0, 0, npes,
                         &l->psync[(l->calls & 1) * SHMEM_ALLTOALL_SYNC_SIZE]);
}

int main(int argc, char **argv)
{
    static const struct bench_table table = {
        .name = "alltoall_bw",
        .key_label = "Size",
        .csv_key = "size",
        .ncols = 2,
        .labels = {"Bandwidth(MB/s)", "Latency(us)"},
        .csv_labels = {"bandwidth_mbs", "latency_us"},
    };
    struct bench_opts opts;
    int rc = 0;

    shmem_init();
    int me = shmem_my_pe();
    int npes = shmem_n_pes();
    int parsed = bench_parse(argc, argv, NULL, 8 * (size_t)npes, &opts);
    if (parsed >= 0) {
        rc = parsed;
        goto finalize;
    }

    long *src = bench_malloc(opts.max_size);
    long *dst = bench_malloc(opts.max_size);
    /* Two pSync arrays used in turn: a call may start while a slower PE is
     * still inside the previous one on the other array. */
    long *psync = bench_malloc(2 * SHMEM_ALLTOALL_SYNC_SIZE * sizeof(long));
    if (src == NULL || dst == NULL || psync == NULL) {
        rc = 1;
        goto free_buffers;
    }
    for (int i = 0; i < 2 * SHMEM_ALLTOALL_SYNC_SIZE; i++)
        psync[i] = SHMEM_SYNC_VALUE;
    if (me == 0)
        bench_print_header(&opts, &table);
    shmem_barrier_all();

    struct loop l = {dst, src, 0, psync, 0};
    for (size_t block = 8; block * (size_t)npes <= opts.max_size; block *= 2) {
        size_t size = block * (size_t)npes;
        size_t nelems = block / sizeof(long);
        if (size < opts.min_size)
            continue;
        long iters = bench_iters(&opts, size, 1000, (size_t)256 << 20, 10);
        for (int pe = 0; pe < npes; pe++) {
            for (size_t k = 0; k < nelems; k++) {
                src[(size_t)pe * nelems + k] = element(me, pe, k, block);
                dst[(size_t)pe * nelems + k] = -1;
            }
        }
        shmem_barrier_all();
        l.nelems = nelems;
        double us = bench_time_collective(&opts, alltoalls, &l, &iters);
        shmem_barrier_all();
        if (me == 0) {
            double v[2] = {(double)iters * (double)npes * (double)size / us, us / (double)iters};
            bench_print_size_row(&opts, &table, size, v);
        }
        long wrong = 0;
        for (int pe = 0; pe < npes; pe++)
            for (size_t k = 0; k < nelems; k++)
                wrong += dst[(size_t)pe * nelems + k] != element(pe, me, k, block);
        if (wrong != 0) {
            fprintf(stderr, "alltoall_bw: PE %d has %ld wrong elements with %zu-byte blocks\n",
                    me, wrong, block);
            rc = 1;
        }
        if (block > opts.max_size / 2)
            break;
    }

free_buffers:
    if (psync != NULL)
        shmem_free(psync);
    if (dst != NULL)
        shmem_free(dst);
    if (src != NULL)
        shmem_free(src);
finalize:
    shmem_finalize();
    return rc;
}
