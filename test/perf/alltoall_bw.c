/* Alltoall bandwidth with the OpenSHMEM 1.4 shmem_alltoall64 on all PEs (the
 * deprecated active-set form, so the source builds on 1.4 implementations).
 * Size is the bytes each PE sends in one call (one block to every PE,
 * itself included); bandwidth is the bytes all PEs send per second (npes *
 * Size / time, 10^6 bytes per second), latency the time of one call on PE 0. */
#include <stdio.h>
#include <stdlib.h>

#include <shmem.h>

#include "bench.h"

static long element(int from, int to, size_t k, size_t block)
{
    return (long)(((unsigned long)from << 40) ^ ((unsigned long)to << 24) ^
                  (unsigned long)(k * 2654435761u) ^ (unsigned long)block);
}

struct loop {
    long *dst;
    long *src;
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

static int setup(void *ctx, const struct bench_opts *opts)
{
    struct loop *l = ctx;
    l->src = bench_malloc(opts->max_size);
    l->dst = bench_malloc(opts->max_size);
    /* Two pSync arrays used in turn: a call may start while a slower PE is
     * still inside the previous one on the other array. */
    l->psync = bench_malloc(2 * SHMEM_ALLTOALL_SYNC_SIZE * sizeof(long));
    if (l->src == NULL || l->dst == NULL || l->psync == NULL)
        return 1;
    /* The heap may be device memory: written through a put to this PE. */
    long sync[2 * SHMEM_ALLTOALL_SYNC_SIZE];
    for (int i = 0; i < 2 * SHMEM_ALLTOALL_SYNC_SIZE; i++)
        sync[i] = SHMEM_SYNC_VALUE;
    shmem_putmem(l->psync, sync, sizeof(sync), shmem_my_pe());
    return 0;
}

static int measure_size(void *ctx, const struct bench_opts *opts, size_t size, double *values)
{
    struct loop *l = ctx;
    int me = shmem_my_pe();
    int npes = shmem_n_pes();
    size_t block = size / (size_t)npes;
    size_t nelems = block / sizeof(long);
    long iters = bench_iters(opts, size, 1000, (size_t)256 << 20, 10);

    size_t total = (size_t)npes * nelems;
    long *mine = malloc((total > 0 ? total : 1) * sizeof(long));
    if (mine == NULL) {
        fprintf(stderr, "alltoall_bw: PE %d: out of memory for %zu elements\n", me, total);
        return 1;
    }
    /* Written and read through puts and gets to this PE: the heap may be
     * device memory. */
    for (int pe = 0; pe < npes; pe++)
        for (size_t k = 0; k < nelems; k++)
            mine[(size_t)pe * nelems + k] = element(me, pe, k, block);
    shmem_putmem(l->src, mine, total * sizeof(long), me);
    for (size_t i = 0; i < total; i++)
        mine[i] = -1;
    shmem_putmem(l->dst, mine, total * sizeof(long), me);
    shmem_barrier_all();
    l->nelems = nelems;
    double us = bench_time_collective(opts, alltoalls, l, &iters);
    shmem_barrier_all();
    values[0] = (double)iters * (double)npes * (double)size / us;
    values[1] = us / (double)iters;
    long wrong = 0;
    shmem_getmem(mine, l->dst, total * sizeof(long), me);
    for (int pe = 0; pe < npes; pe++)
        for (size_t k = 0; k < nelems; k++)
            wrong += mine[(size_t)pe * nelems + k] != element(pe, me, k, block);
    free(mine);
    if (wrong != 0) {
        fprintf(stderr, "alltoall_bw: PE %d has %ld wrong elements with %zu-byte blocks\n",
                me, wrong, block);
        return 1;
    }
    return 0;
}

static void teardown(void *ctx)
{
    struct loop *l = ctx;
    if (l->psync != NULL)
        shmem_free(l->psync);
    if (l->dst != NULL)
        shmem_free(l->dst);
    if (l->src != NULL)
        shmem_free(l->src);
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
    static struct loop loop;
    static const struct bench_def def = {
        .table = &table,
        .min_pes = 1,
        .block = 8,
        .ctx = &loop,
        .setup = setup,
        .measure_size = measure_size,
        .teardown = teardown,
    };
    return bench_main(argc, argv, &def);
}
