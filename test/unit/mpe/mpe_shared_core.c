/* PEs that share one CPU with a busy thread (run under taskset -c 0): a
 * barrier loop must not pay a scheduler slice per hand-off. A wait that
 * yields beside the busy thread gives it the CPU for a whole slice (about
 * 1.5 ms under EEVDF) on every round; a wait that blocks on the counter is
 * woken by the writer at once. Arguments: barriers (default 3000) and the
 * bound in seconds (default 1). */
#include <pthread.h>
#include <shmem.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "mpe_check.h"

static atomic_bool stop;

static void *busy(void *arg)
{
    (void)arg;
    volatile unsigned long n = 0;
    while (!atomic_load_explicit(&stop, memory_order_relaxed))
        n++;
    return NULL;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    long iters = argc > 1 ? strtol(argv[1], NULL, 10) : 3000;
    double bound = argc > 2 ? strtod(argv[2], NULL) : 1.0;
    pthread_t thread;

    shmem_init();
    int me = shmem_my_pe();
    long *sum = shmem_calloc(1, sizeof(long));
    long *one = shmem_malloc(sizeof(long));
    if (sum == NULL || one == NULL) {
        fprintf(stderr, "PE %d: shmem_malloc of 8 bytes failed\n", me);
        shmem_global_exit(1);
    }
    *one = 1;
    if (me == 0 && pthread_create(&thread, NULL, busy, NULL) != 0) {
        fprintf(stderr, "PE 0: pthread_create failed\n");
        shmem_global_exit(1);
    }
    shmem_barrier_all();

    double start = now_s();
    for (long i = 0; i < iters; i++)
        shmem_barrier_all();
    double barriers = now_s() - start;

    start = now_s();
    for (long i = 0; i < iters / 10; i++)
        shmem_long_sum_reduce(SHMEM_TEAM_WORLD, sum, one, 1);
    double reduces = now_s() - start;

    if (*sum != shmem_n_pes()) {
        fprintf(stderr, "PE %d: shmem_long_sum_reduce gave %ld, not %d\n", me, *sum,
                shmem_n_pes());
        shmem_global_exit(1);
    }
    if (barriers > bound || reduces > bound) {
        fprintf(stderr,
                "PE %d: %ld shmem_barrier_all took %.2f s and %ld shmem_long_sum_reduce "
                "%.2f s beside a busy thread; the bound is %.1f s each\n",
                me, iters, barriers, iters / 10, reduces, bound);
        shmem_global_exit(1);
    }
    printf("PE %d: %ld barriers %.3f s (%.1f us each), %ld reductions %.3f s\n", me, iters,
           barriers, barriers / (double)iters * 1e6, iters / 10, reduces);
    if (me == 0) {
        atomic_store(&stop, true);
        pthread_join(thread, NULL);
    }
    shmem_free(one);
    shmem_free(sum);
    shmem_finalize();
    return 0;
}
