/* The program around each benchmark, options, timing and table output
 * shared by the OpenSHMEM benchmarks. Only standard C and OpenSHMEM 1.4
 * calls, so it builds with any oshcc. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include "bench.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <shmem.h>

static int parse_size(const char *text, size_t *size_p)
{
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    if (errno != 0 || end == text || text[0] == '-')
        return -1;
    unsigned shift = 0;
    switch (*end) {
    case '\0': break;
    case 'k': case 'K': shift = 10; end++; break;
    case 'm': case 'M': shift = 20; end++; break;
    case 'g': case 'G': shift = 30; end++; break;
    default: return -1;
    }
    /* Accept "64KiB" and "64KB" as well as "64K". */
    if (shift != 0 && (*end == 'i' || *end == 'I'))
        end++;
    if (shift != 0 && (*end == 'b' || *end == 'B'))
        end++;
    if (*end != '\0' || v > (~0ULL >> shift))
        return -1;
    *size_p = (size_t)(v << shift);
    return 0;
}

static int parse_long(const char *text, long *value_p)
{
    char *end = NULL;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (errno != 0 || end == text || *end != '\0' || v <= 0)
        return -1;
    *value_p = v;
    return 0;
}

static void usage(const char *prog, const char *extra)
{
    printf("usage: %s [options]\n"
           "  --csv              print comma-separated values instead of a table\n"
           "  --quick            a tenth of the iterations, sizes up to 64 KiB\n"
           "  --min-size BYTES   smallest message (suffix K, M, G allowed)\n"
           "  --max-size BYTES   largest message (default 4M)\n"
           "  --iters N          iterations for small messages (fewer for large ones)\n"
           "  --window N         operations per quiet in bandwidth tests (default 64)\n"
           "  --pairs            bandwidth tests: every PE i < npes/2 talks to PE i+npes/2\n"
           "                     at the same time and the sum is reported\n"
           "%s"
           "  --help             this text\n",
           prog, extra != NULL ? extra : "");
}

int bench_parse(int argc, char **argv, const char *usage_extra, size_t default_min,
                struct bench_opts *opts)
{
    int me = shmem_my_pe();
    int max_given = 0;
    struct bench_opts o = {
        .min_size = default_min,
        .max_size = BENCH_MAX_SIZE_DEFAULT,
        .iters = 0,
        .window = 64,
    };

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *val = (i + 1 < argc) ? argv[i + 1] : NULL;
        int bad = 0;
        if (strcmp(a, "--csv") == 0) {
            o.csv = 1;
        } else if (strcmp(a, "--pairs") == 0) {
            o.pairs = 1;
        } else if (strcmp(a, "--quick") == 0) {
            o.quick = 1;
        } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            if (me == 0)
                usage(argv[0], usage_extra);
            return 0;
        } else if (strcmp(a, "--max-size") == 0 || strcmp(a, "-m") == 0) {
            bad = val == NULL || parse_size(val, &o.max_size) != 0;
            max_given = 1;
            i++;
        } else if (strcmp(a, "--min-size") == 0) {
            bad = val == NULL || parse_size(val, &o.min_size) != 0;
            i++;
        } else if (strcmp(a, "--iters") == 0 || strcmp(a, "-i") == 0) {
            bad = val == NULL || parse_long(val, &o.iters) != 0;
            i++;
        } else if (strcmp(a, "--window") == 0 || strcmp(a, "-w") == 0) {
            bad = val == NULL || parse_long(val, &o.window) != 0;
            i++;
        } else {
            bad = 1;
        }
        if (bad) {
            if (me == 0)
                fprintf(stderr, "%s: bad option '%s%s%s' (try --help)\n", argv[0], a,
                        val != NULL && a[0] == '-' && a[1] == '-' ? " " : "",
                        val != NULL && a[0] == '-' && a[1] == '-' ? val : "");
            return 2;
        }
    }
    if (o.quick && !max_given && o.max_size > ((size_t)64 << 10))
        o.max_size = (size_t)64 << 10;
    if (o.min_size < default_min)
        o.min_size = default_min;
    if (o.max_size < o.min_size) {
        if (me == 0)
            fprintf(stderr, "%s: --max-size %zu is below the smallest size %zu\n", argv[0],
                    o.max_size, o.min_size);
        return 2;
    }
    *opts = o;
    return -1;
}

double bench_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

long bench_iters(const struct bench_opts *opts, size_t size, long base, size_t byte_budget,
                 long min_iters)
{
    long n = opts->iters > 0 ? opts->iters : base;
    if (opts->quick) {
        n /= 10;
        byte_budget /= 10;
    }
    if (size > 0 && byte_budget / size < (size_t)n)
        n = (long)(byte_budget / size);
    if (n < min_iters)
        n = min_iters;
    return n;
}

long bench_warmup(long iters)
{
    long w = iters / 10;
    return w < 2 ? 2 : w;
}

static double min_loop_us(const struct bench_opts *opts)
{
    return opts->quick ? 5e3 : 50e3;
}

/* Iterations that fill the minimum time, aiming a little past it and never
 * more than 1000 times as many as ran in us. */
static long calibrated(const struct bench_opts *opts, long iters, double us)
{
    double scale = us > 0 ? 1.2 * min_loop_us(opts) / us : 1000.0;
    if (scale > 1000.0)
        scale = 1000.0;
    return (long)((double)iters * scale) + 1;
}

double bench_time_loop(const struct bench_opts *opts, void (*body)(void *ctx, long n),
                       void *ctx, long *iters_p)
{
    long iters = *iters_p;

    body(ctx, bench_warmup(iters));
    double t0 = bench_now_us();
    body(ctx, iters);
    double us = bench_now_us() - t0;
    if (us < min_loop_us(opts) && opts->iters == 0 && !opts->pairs) {
        iters = calibrated(opts, iters, us);
        t0 = bench_now_us();
        body(ctx, iters);
        us = bench_now_us() - t0;
    }
    *iters_p = iters;
    return us;
}

double bench_time_collective(const struct bench_opts *opts, void (*body)(void *ctx, long n),
                             void *ctx, long *iters_p)
{
    long iters = *iters_p;
    long *rerun = shmem_malloc(sizeof(long));

    body(ctx, bench_warmup(iters));
    shmem_barrier_all();
    double t0 = bench_now_us();
    body(ctx, iters);
    double us = bench_now_us() - t0;
    /* Without the word to agree on a count, keep the first measurement. */
    if (rerun == NULL || opts->iters != 0)
        goto done;
    shmem_long_p(rerun, 0, shmem_my_pe());
    shmem_barrier_all();
    if (shmem_my_pe() == 0 && us < min_loop_us(opts)) {
        long n = calibrated(opts, iters, us);
        for (int pe = 0; pe < shmem_n_pes(); pe++)
            shmem_long_p(rerun, n, pe);
        shmem_quiet();
    }
    shmem_barrier_all();
    long agreed = shmem_long_g(rerun, shmem_my_pe());
    if (agreed > 0) {
        iters = agreed;
        t0 = bench_now_us();
        body(ctx, iters);
        us = bench_now_us() - t0;
    }
done:
    if (rerun != NULL)
        shmem_free(rerun);
    *iters_p = iters;
    return us;
}

static void implementation(char *name, size_t len)
{
    char vendor[SHMEM_MAX_NAME_LEN + 1];
    int major = 0, minor = 0;
    memset(vendor, 0, sizeof(vendor));
    shmem_info_get_name(vendor);
    shmem_info_get_version(&major, &minor);
    /* Open MPI reports its web address; a shorter name reads better in tables. */
    const char *shown = strstr(vendor, "open-mpi") != NULL ? "Open MPI OSHMEM" : vendor;
    snprintf(name, len, "%s (OpenSHMEM %d.%d)", shown, major, minor);
}

void bench_print_header(const struct bench_opts *opts, const struct bench_table *t)
{
    char impl[SHMEM_MAX_NAME_LEN + 64];
    implementation(impl, sizeof(impl));
    if (opts->csv) {
        /* The first line names the run; the second is the column header. */
        printf("# %s,%s,%d\n", t->name, impl, shmem_n_pes());
        printf("%s", t->csv_key);
        for (int c = 0; c < t->ncols; c++)
            printf(",%s", t->csv_labels[c]);
        printf("\n");
    } else {
        int npes = shmem_n_pes();
        printf("# %s: %s, %d PE%s\n", t->name, impl, npes, npes == 1 ? "" : "s");
        printf("# %-12s", t->key_label);
        for (int c = 0; c < t->ncols; c++)
            printf("%18s", t->labels[c]);
        printf("\n");
    }
    fflush(stdout);
}

void bench_print_row(const struct bench_opts *opts, const struct bench_table *t,
                     const char *key, const double *values)
{
    if (opts->csv) {
        printf("%s", key);
        for (int c = 0; c < t->ncols; c++)
            printf(",%.6g", values[c]);
    } else {
        printf("%-14s", key);
        for (int c = 0; c < t->ncols; c++)
            printf("%18.3f", values[c]);
    }
    printf("\n");
    fflush(stdout);
}

void bench_print_size_row(const struct bench_opts *opts, const struct bench_table *t,
                          size_t size, const double *values)
{
    char key[32];
    snprintf(key, sizeof(key), "%zu", size);
    bench_print_row(opts, t, key, values);
}

static unsigned char pattern_byte(size_t i, unsigned seed)
{
    /* Differs between neighbouring bytes and between sizes, so a stale or
     * shifted buffer does not pass. */
    return (unsigned char)((i * 131u + seed * 7u + (i >> 8)) & 0xffu);
}

/* The symmetric heap may be device memory that the CPU must not touch (a
 * GPU backend), so symmetric buffers are written and read only through puts
 * and gets to this PE, outside the timed loops. */
static unsigned char *private_copy(size_t len)
{
    unsigned char *p = malloc(len > 0 ? len : 1);
    if (p == NULL) {
        fprintf(stderr, "PE %d: out of memory for a %zu-byte private buffer\n", shmem_my_pe(),
                len);
        shmem_global_exit(1);
    }
    return p;
}

void bench_fill(void *buf, size_t len, unsigned seed)
{
    unsigned char *p = private_copy(len);
    for (size_t i = 0; i < len; i++)
        p[i] = pattern_byte(i, seed);
    shmem_putmem(buf, p, len, shmem_my_pe());
    free(p);
}

size_t bench_check(const void *buf, size_t len, unsigned seed)
{
    unsigned char *p = private_copy(len);
    size_t bad = len;
    shmem_getmem(p, buf, len, shmem_my_pe());
    for (size_t i = 0; i < len; i++) {
        if (p[i] != pattern_byte(i, seed)) {
            bad = i;
            break;
        }
    }
    free(p);
    return bad;
}

void *bench_malloc(size_t size)
{
    void *p = shmem_malloc(size);
    if (p == NULL)
        fprintf(stderr,
                "PE %d: shmem_malloc(%zu) failed; raise SHMEM_SYMMETRIC_SIZE or lower "
                "--max-size\n",
                shmem_my_pe(), size);
    return p;
}

void bench_need_pes(const char *name, int min_pes)
{
    if (shmem_my_pe() == 0)
        fprintf(stderr, "%s: needs at least %d PEs, got %d\n", name, min_pes, shmem_n_pes());
}

/* The sizes of a sweep: the first size, before skipping those below min. */
static size_t first_size(const struct bench_def *def, const struct bench_opts *opts)
{
    return def->block != 0 ? def->block * (size_t)shmem_n_pes() : opts->min_size;
}

static int run_sizes(const struct bench_def *def, const struct bench_opts *opts)
{
    int rc = 0;
    for (size_t size = first_size(def, opts); size <= opts->max_size; size *= 2) {
        double values[BENCH_MAX_COLS] = {0};
        if (size < opts->min_size)
            continue;
        if (def->measure_size(def->ctx, opts, size, values) != 0)
            rc = 1;
        if (shmem_my_pe() == 0)
            bench_print_size_row(opts, def->table, size, values);
        /* The next doubling would pass max_size, or wrap around. */
        if (size > opts->max_size / 2)
            break;
    }
    return rc;
}

int bench_main(int argc, char **argv, const struct bench_def *def)
{
    struct bench_opts opts;
    int rc = 0;

    shmem_init();
    size_t default_min = def->block != 0 ? def->block * (size_t)shmem_n_pes() : 1;
    int parsed = bench_parse(argc, argv, NULL, default_min, &opts);
    if (parsed >= 0) {
        rc = parsed;
        goto finalize;
    }
    if (shmem_n_pes() < def->min_pes) {
        bench_need_pes(def->table->name, def->min_pes);
        rc = 77;
        goto finalize;
    }
    if (def->setup != NULL && def->setup(def->ctx, &opts) != 0) {
        rc = 1;
        goto teardown;
    }
    if (shmem_my_pe() == 0)
        bench_print_header(&opts, def->table);
    /* What setup wrote into symmetric memory is in place on every PE. */
    shmem_barrier_all();
    if (def->measure_size != NULL)
        rc = run_sizes(def, &opts);
    else
        rc = def->measure(def->ctx, &opts, def->table);

teardown:
    if (def->teardown != NULL)
        def->teardown(def->ctx);
finalize:
    shmem_finalize();
    return rc;
}
