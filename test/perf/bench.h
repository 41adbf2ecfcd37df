/* Shared helpers for the OpenSHMEM benchmarks: the program around each one
 * (bench_main: setup, the per-size loop, the report), command-line options,
 * timing, iteration counts and the OSU-style table (or CSV) they print.
 *
 * The benchmarks use only <shmem.h> routines that exist in OpenSHMEM 1.4, so
 * the same sources build against ushmem and against any other implementation
 * (scripts/compare_oshmem.sh builds them with Open MPI's oshcc). */
#ifndef USHMEM_PERF_BENCH_H
#define USHMEM_PERF_BENCH_H

#include <stddef.h>

#define BENCH_MAX_SIZE_DEFAULT ((size_t)4 << 20)

struct bench_opts {
    size_t min_size;
    size_t max_size;
    long iters;      /* 0: scale with the size (see bench_iters) */
    long window;     /* operations per completion in bandwidth tests */
    int csv;
    int quick;
    int pairs;       /* bandwidth tests: PE i talks to PE i + npes/2, all at once */
};

/* What a benchmark prints: its name, the label of its first column and the
 * labels of the value columns (at most BENCH_MAX_COLS). */
#define BENCH_MAX_COLS 3
struct bench_table {
    const char *name;
    const char *key_label;
    const char *csv_key;
    int ncols;
    const char *labels[BENCH_MAX_COLS];
    const char *csv_labels[BENCH_MAX_COLS];
};

/* One benchmark, run by bench_main. Every callback receives ctx; those that
 * may be NULL say so. */
struct bench_def {
    const struct bench_table *table;
    int min_pes;   /* with fewer PEs the program says so and exits 77 */
    /* 0: sizes double from --min-size (default 1). Else every size is
     * block * npes * 2^k (one block for each PE), the default minimum is
     * block * npes and sizes below --min-size are skipped. */
    size_t block;
    void *ctx;
    /* Collective, after option parsing: allocates what the runs need and
     * returns 0, else 1; teardown runs either way. May be NULL. */
    int (*setup)(void *ctx, const struct bench_opts *opts);
    /* Collective, once per size: runs and checks one size and fills
     * values[table->ncols] on PE 0, which prints them as the size's row.
     * Returns 0, or 1 when this PE saw wrong data. */
    int (*measure_size)(void *ctx, const struct bench_opts *opts, size_t size, double *values);
    /* Collective, instead of measure_size for a benchmark without sizes:
     * prints its own rows on PE 0; returns 0, or 1 when this PE saw wrong data. */
    int (*measure)(void *ctx, const struct bench_opts *opts, const struct bench_table *table);
    /* Frees what setup allocated (it may have failed half way). May be NULL. */
    void (*teardown)(void *ctx);
};

/* The whole program around a bench_def: shmem_init, options, PE count, setup,
 * header, the runs, teardown, shmem_finalize. Returns the exit code: 0, 1
 * when data was wrong or memory short, 2 on a bad option, 77 with too few PEs. */
int bench_main(int argc, char **argv, const struct bench_def *def);

/* Parses the options shared by every benchmark. Returns -1 when the program
 * should go on, else the exit code (0 after --help, 2 on a bad option); only
 * PE 0 prints. default_min is the smallest size the benchmark can use. */
int bench_parse(int argc, char **argv, const char *usage_extra, size_t default_min,
                struct bench_opts *opts);

/* Microseconds from a monotonic clock. */
double bench_now_us(void);

/* Iterations for one message size: the base count for small messages, fewer
 * as the size grows so that about byte_budget bytes move, never fewer than
 * min_iters. --iters replaces the base count, --quick divides it by ten. */
long bench_iters(const struct bench_opts *opts, size_t size, long base,
                 size_t byte_budget, long min_iters);

/* Warm-up iterations for a timed loop of iters. */
long bench_warmup(long iters);

/* Times a loop that only the calling PE runs: body(ctx, n) runs n iterations.
 * After a warm-up it runs *iters_p iterations; when that took less than a
 * minimum time (50 ms, 5 ms with --quick) and neither --iters nor --pairs was
 * given, it runs again with enough iterations to fill that time, so a short
 * loop is not at the mercy of one preemption on a busy machine. Returns the
 * microseconds of the last run; *iters_p becomes its iteration count. */
double bench_time_loop(const struct bench_opts *opts, void (*body)(void *ctx, long n),
                       void *ctx, long *iters_p);

/* The same for a loop that every PE runs together (a collective): PE 0's
 * timing decides, and it tells the others how many iterations to rerun.
 * Collective; returns PE 0's microseconds on every PE (others: their own). */
double bench_time_collective(const struct bench_opts *opts, void (*body)(void *ctx, long n),
                             void *ctx, long *iters_p);

/* Table output, called on PE 0 only. */
void bench_print_header(const struct bench_opts *opts, const struct bench_table *t);
void bench_print_row(const struct bench_opts *opts, const struct bench_table *t,
                     const char *key, const double *values);
void bench_print_size_row(const struct bench_opts *opts, const struct bench_table *t,
                          size_t size, const double *values);

/* Fills the symmetric buffer buf with a pattern derived from seed / checks
 * it; returns the index of the first wrong byte, or len when all are right.
 * Both go through a put or get to this PE, so the heap may be device memory. */
void bench_fill(void *buf, size_t len, unsigned seed);
size_t bench_check(const void *buf, size_t len, unsigned seed);

/* Allocates a symmetric buffer or says on stderr why not (NULL). Collective. */
void *bench_malloc(size_t size);

/* Says a benchmark needs min_pes PEs (PE 0 prints). */
void bench_need_pes(const char *name, int min_pes);

#endif
