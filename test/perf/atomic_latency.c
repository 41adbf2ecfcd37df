/* Atomic latency on a long in PE 1's symmetric heap, issued by PE 0 one at a
 * time: fetch-add, fetch, compare-swap, and add followed by shmem_quiet (a
 * non-fetching atomic is complete only after the quiet). Every other PE waits
 * in the barrier. Reports microseconds per operation. The heap is written
 * and read only through puts and gets, so that it may be device memory. */
#include <stdio.h>

#include <shmem.h>

#include "bench.h"

enum { OP_FETCH_ADD, OP_FETCH, OP_COMPARE_SWAP, OP_ADD_QUIET, OP_COUNT };

static const char *const op_names[OP_COUNT] = {"fetch_add", "fetch", "compare_swap",
                                               "add+quiet"};

/* The state of one operation's loop: the counter on PE 1, the value it holds
 * now and how many fetched results were wrong. */
struct loop {
    int op;
    long *counter;
    long value;
    long wrong;
};

static void run_op(void *ctx, long n)
{
    struct loop *l = ctx;
    long value = l->value;
    long wrong = 0;
    for (long i = 0; i < n; i++) {
        long got;
        switch (l->op) {
        case OP_FETCH_ADD:
            got = shmem_long_atomic_fetch_add(l->counter, 1, 1);
            wrong += got != value;
            value++;
            break;
        case OP_FETCH:
            got = shmem_long_atomic_fetch(l->counter, 1);
            wrong += got != value;
            break;
        case OP_COMPARE_SWAP:
            got = shmem_long_atomic_compare_swap(l->counter, value, value + 1, 1);
            wrong += got != value;
            value++;
            break;
        default:
            shmem_long_atomic_add(l->counter, 1, 1);
            shmem_quiet();
            value++;
            break;
        }
    }
    l->value = value;
    l->wrong += wrong;
}

/* [0]: the counter PE 0 works on; [1]: the value PE 0 expects it to hold. */
static long *words;

static int setup(void *ctx, const struct bench_opts *opts)
{
    (void)ctx;
    (void)opts;
    words = bench_malloc(2 * sizeof(long));
    if (words == NULL)
        return 1;
    long init[2] = {0, -1};
    shmem_putmem(words, init, sizeof(init), shmem_my_pe());
    shmem_barrier_all();
    return 0;
}

static int measure(void *ctx, const struct bench_opts *opts, const struct bench_table *table)
{
    (void)ctx;
    int me = shmem_my_pe();
    int rc = 0;

    if (me == 0) {
        struct loop l = {.counter = &words[0]};
        for (l.op = 0; l.op < OP_COUNT; l.op++) {
            long iters = bench_iters(opts, 8, 10000, (size_t)1 << 30, 20);
            double lat = bench_time_loop(opts, run_op, &l, &iters) / (double)iters;
            bench_print_row(opts, table, op_names[l.op], &lat);
        }
        if (l.wrong != 0) {
            fprintf(stderr, "atomic_latency: %ld fetched values were wrong\n", l.wrong);
            rc = 1;
        }
        shmem_long_p(&words[1], l.value, 1);
        shmem_quiet();
    }
    shmem_barrier_all();
    long seen[2];
    shmem_getmem(seen, words, sizeof(seen), me);
    if (me == 1 && seen[0] != seen[1]) {
        fprintf(stderr, "atomic_latency: PE 1 counter is %ld, expected %ld\n", seen[0],
                seen[1]);
        rc = 1;
    }
    return rc;
}

static void teardown(void *ctx)
{
    (void)ctx;
    if (words != NULL)
        shmem_free(words);
}

int main(int argc, char **argv)
{
    static const struct bench_table table = {
        .name = "atomic_latency",
        .key_label = "Operation",
        .csv_key = "operation",
        .ncols = 1,
        .labels = {"Latency(us)"},
        .csv_labels = {"latency_us"},
    };
    static const struct bench_def def = {
        .table = &table,
        .min_pes = 2,
        .setup = setup,
        .measure = measure,
        .teardown = teardown,
    };
    return bench_main(argc, argv, &def);
}
