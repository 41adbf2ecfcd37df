/* Heap growth time: shmem_malloc calls that grow every PE's symmetric heap
 * (each past the end of the heap, so each grows it by one step), timed on
 * every PE and reported as the slowest PE's time, with the time per GiB;
 * then the same allocations again into the grown heap (freed first), which
 * grow nothing, for comparison. Plain OpenSHMEM: start it with a small
 * SHMEM_SYMMETRIC_SIZE so that every step grows the heap.
 *
 * usage: heap_grow [--step SIZE] [--steps N] [--csv] [--until-null]
 *        (SIZE with K, M, G)
 *
 * --until-null: allocate steps until shmem_malloc returns NULL (at most
 * --steps of them) and print how much was allocated: the largest heap this
 * PE count reaches from its start. The heap may be device memory: the
 * program touches it only through RMA calls. */
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static size_t parse_size(const char *text)
{
    char *end;
    double v = strtod(text, &end);
    size_t mult = *end == 'G' ? (size_t)1 << 30 : *end == 'M' ? (size_t)1 << 20
                : *end == 'K' ? (size_t)1 << 10 : 1;
    return (size_t)(v * (double)mult);
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* The slowest PE's value. */
static double max_over_pes(double mine, double *sym)
{
    double out;
    int me = shmem_my_pe();
    shmem_putmem(&sym[0], &mine, sizeof(mine), me);
    shmem_barrier_all();
    shmem_double_max_reduce(SHMEM_TEAM_WORLD, &sym[1], &sym[0], 1);
    shmem_getmem(&out, &sym[1], sizeof(out), me);
    return out;
}

int main(int argc, char **argv)
{
    size_t step = (size_t)1 << 30;
    int steps = 8, csv = 0, until_null = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--step") == 0 && i + 1 < argc)
            step = parse_size(argv[++i]);
        else if (strcmp(argv[i], "--steps") == 0 && i + 1 < argc)
            steps = atoi(argv[++i]);
        else if (strcmp(argv[i], "--csv") == 0)
            csv = 1;
        else if (strcmp(argv[i], "--until-null") == 0)
            until_null = 1;
        else {
            fprintf(stderr, "usage: heap_grow [--step SIZE] [--steps N] [--csv] [--until-null]\n");
            return 2;
        }
    }
    if (step < 4096 || steps < 1 || steps > 1024) {
        fprintf(stderr, "heap_grow: --step must be at least 4K and --steps 1 to 1024\n");
        return 2;
    }
    shmem_init();
    int me = shmem_my_pe();
    double *sym = shmem_malloc(2 * sizeof(double));
    void **blocks = calloc((size_t)steps, sizeof(*blocks));
    double *grow_ms = calloc((size_t)steps, sizeof(double));
    if (sym == NULL || blocks == NULL || grow_ms == NULL) {
        fprintf(stderr, "PE %d: heap_grow: out of memory\n", me);
        shmem_global_exit(1);
    }
    for (int s = 0; s < steps; s++) {
        shmem_barrier_all();
        double t0 = now_ms();
        blocks[s] = shmem_malloc(step);
        double t = now_ms() - t0;
        if (blocks[s] == NULL && until_null) {
            if (me == 0)
                printf("# largest: %d steps of %zu bytes allocated (%.2f GiB), step %d returned "
                       "NULL on every PE after %.3f ms\n",
                       s, step, (double)s * (double)step / (double)(1 << 30), s, t);
            steps = s;
            break;
        }
        if (blocks[s] == NULL) {
            fprintf(stderr, "PE %d: heap_grow: shmem_malloc(%zu) of step %d returned NULL\n", me,
                    step, s);
            shmem_global_exit(1);
        }
        grow_ms[s] = max_over_pes(t, sym);
    }
    for (int s = steps - 1; s >= 0; s--)
        shmem_free(blocks[s]);
    double gib = (double)step / (double)(1 << 30);
    if (me == 0) {
        if (csv)
            printf("step,bytes,grow_ms,grow_ms_per_gib,again_ms\n");
        else
            printf("# heap growth, %d PEs, steps of %zu bytes (slowest PE)\n"
                   "%6s %14s %12s %14s %12s\n",
                   shmem_n_pes(), step, "step", "allocated", "grow (ms)", "ms per GiB",
                   "again (ms)");
    }
    double total = 0;
    for (int s = 0; s < steps; s++) {
        shmem_barrier_all();
        double t0 = now_ms();
        blocks[s] = shmem_malloc(step);
        double again = max_over_pes(now_ms() - t0, sym);
        total += grow_ms[s];
        if (me == 0 && csv)
            printf("%d,%zu,%.3f,%.3f,%.3f\n", s, (size_t)(s + 1) * step, grow_ms[s],
                   grow_ms[s] / gib, again);
        else if (me == 0)
            printf("%6d %14zu %12.3f %14.3f %12.3f\n", s, (size_t)(s + 1) * step, grow_ms[s],
                   grow_ms[s] / gib, again);
    }
    if (me == 0 && !csv)
        printf("# mean %.3f ms per GiB grown\n", total / (gib * steps));
    for (int s = steps - 1; s >= 0; s--)
        shmem_free(blocks[s]);
    shmem_free(sym);
    free(grow_ms);
    free(blocks);
    shmem_finalize();
    return 0;
}
