/* Reduction latency with the OpenSHMEM 1.4 shmem_long_sum_to_all on all PEs
 * (the deprecated active-set form with pWrk and pSync, so the source builds on
 * 1.4 implementations). Size is the bytes of one PE's source (nreduce * 8);
 * latency is the time of one call on PE 0, bandwidth Size / latency (10^6
 * bytes per second). Sizes start at 8 bytes unless --min-size says otherwise;
 * a size below 8 reduces one element. */
#include <stdio.h>
#include <stdlib.h>

#include <shmem.h>

#include "bench.h"

static long element(int pe, size_t k)
{
    return (long)(((unsigned long)pe << 40) ^ (unsigned long)(k * 2654435761u));
}

struct loop {
    long *dst;
    long *src;
    long *pwrk;  /* two work arrays of pwrk_elems, used in turn with psync */
    size_t pwrk_elems;
    long *psync; /* two arrays of SHMEM_REDUCE_SYNC_SIZE */
    size_t nelems;
    long calls; /* picks the pWrk and pSync arrays; runs on across sizes */
};

static void reductions(void *ctx, long n)
{
    struct loop *l = ctx;
    int npes = shmem_n_pes();
    for (long i = 0; i < n; i++, l->calls++) {
        size_t turn = (size_t)(l->calls & 1);
        shmem_long_sum_to_all(l->dst, l->src, (int)l->nelems, 0, 0, npes,
                              &l->pwrk[turn * l->pwrk_elems],
                              &l->psync[turn * SHMEM_REDUCE_SYNC_SIZE]);
    }
}

static size_t elems_of(size_t size)
{
    return size < sizeof(long) ? 1 : size / sizeof(long);
}

static int setup(void *ctx, const struct bench_opts *opts)
{
    struct loop *l = ctx;
    size_t max_elems = elems_of(opts->max_size);
    l->pwrk_elems = max_elems / 2 + 1;
    if (l->pwrk_elems < SHMEM_REDUCE_MIN_WRKDATA_SIZE)
        l->pwrk_elems = SHMEM_REDUCE_MIN_WRKDATA_SIZE;
    l->src = bench_malloc(max_elems * sizeof(long));
    l->dst = bench_malloc(max_elems * sizeof(long));
    l->pwrk = bench_malloc(2 * l->pwrk_elems * sizeof(long));
    /* Two pSync (and pWrk) arrays used in turn: a call may start while a
     * slower PE is still inside the previous one on the other array. */
    l->psync = bench_malloc(2 * SHMEM_REDUCE_SYNC_SIZE * sizeof(long));
    if (l->src == NULL || l->dst == NULL || l->pwrk == NULL || l->psync == NULL)
        return 1;
    /* The heap may be device memory: written through a put to this PE. */
    long sync[2 * SHMEM_REDUCE_SYNC_SIZE];
    for (int i = 0; i < 2 * SHMEM_REDUCE_SYNC_SIZE; i++)
        sync[i] = SHMEM_SYNC_VALUE;
    shmem_putmem(l->psync, sync, sizeof(sync), shmem_my_pe());
    return 0;
}

static int measure_size(void *ctx, const struct bench_opts *opts, size_t size, double *values)
{
    struct loop *l = ctx;
    int me = shmem_my_pe();
    int npes = shmem_n_pes();
    size_t nelems = elems_of(size);
    long iters = bench_iters(opts, size, 1000, (size_t)256 << 20, 10);

    long *mine = malloc(nelems * sizeof(long));
    if (mine == NULL) {
        fprintf(stderr, "reduce_bw: PE %d: out of memory for %zu elements\n", me, nelems);
        return 1;
    }
    /* Written and read through puts and gets to this PE: the heap may be
     * device memory. */
    for (size_t k = 0; k < nelems; k++)
        mine[k] = element(me, k);
    shmem_putmem(l->src, mine, nelems * sizeof(long), me);
    for (size_t k = 0; k < nelems; k++)
        mine[k] = -1;
    shmem_putmem(l->dst, mine, nelems * sizeof(long), me);
    shmem_barrier_all();
    l->nelems = nelems;
    double us = bench_time_collective(opts, reductions, l, &iters);
    shmem_barrier_all();
    values[0] = us / (double)iters;
    values[1] = (double)iters * (double)(nelems * sizeof(long)) / us;
    long wrong = 0;
    shmem_getmem(mine, l->dst, nelems * sizeof(long), me);
    for (size_t k = 0; k < nelems; k++) {
        unsigned long want = 0;
        for (int pe = 0; pe < npes; pe++)
            want += (unsigned long)element(pe, k);
        wrong += (unsigned long)mine[k] != want;
    }
    free(mine);
    if (wrong != 0) {
        fprintf(stderr, "reduce_bw: PE %d has %ld wrong elements of %zu\n", me, wrong, nelems);
        return 1;
    }
    return 0;
}

static void teardown(void *ctx)
{
    struct loop *l = ctx;
    if (l->psync != NULL)
        shmem_free(l->psync);
    if (l->pwrk != NULL)
        shmem_free(l->pwrk);
    if (l->dst != NULL)
        shmem_free(l->dst);
    if (l->src != NULL)
        shmem_free(l->src);
}

int main(int argc, char **argv)
{
    static const struct bench_table table = {
        .name = "reduce_bw",
        .key_label = "Size",
        .csv_key = "size",
        .ncols = 2,
        .labels = {"Latency(us)", "Bandwidth(MB/s)"},
        .csv_labels = {"latency_us", "bandwidth_mbs"},
    };
    static struct loop loop;
    static const struct bench_def def = {
        .table = &table,
        .min_pes = 1,
        .ctx = &loop,
        .setup = setup,
        .measure_size = measure_size,
        .teardown = teardown,
    };
    /* Sizes from one long unless the caller's --min-size (read later, so it
     * wins) says otherwise. */
    char **args = malloc(((size_t)argc + 3) * sizeof(*args));
    if (args == NULL)
        return 1;
    args[0] = argv[0];
    args[1] = "--min-size";
    args[2] = "8";
    for (int i = 1; i < argc; i++)
        args[i + 2] = argv[i];
    args[argc + 2] = NULL;
    int rc = bench_main(argc + 2, args, &def);
    free(args);
    return rc;
}
