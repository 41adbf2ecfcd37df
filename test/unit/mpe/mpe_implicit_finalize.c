/* Programs that never call shmem_finalize, as older ones using start_pes do.
 * mpe_implicit_finalize MODE, one of:
 *   init        shmem_init, a put and a barrier, check, return 0
 *   start-pes   the same after start_pes(0)
 *   slow-peer   as init, but PE 1 sleeps 0.3 s before returning 0; PE 0,
 *               returning at once, must wait for it in the implicit finalize
 *               (at least 2 PEs)
 *   exit3       PE 0 calls exit(3) while the others wait in shmem_barrier_all
 *   peer-killed PE 0 returns 0 at once and waits in the implicit finalize;
 *               PE 1 dies by SIGKILL: the launcher ends the job, no hang
 * A normal exit with status 0 finalizes collectively and the job exits 0; a
 * non-zero status ends the job at once with that status. */
#define _POSIX_C_SOURCE 200809L
#include <shmem.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mpe_check.h"

static long target;
static struct timespec returned_at; /* when main returned, on PE 0 only */

static double seconds_since(const struct timespec *t)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)(now.tv_sec - t->tv_sec) + (double)(now.tv_nsec - t->tv_nsec) * 1e-9;
}

static void sleep_s(double s)
{
    struct timespec t = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&t, &t) != 0)
        ;
}

/* Registered before shmem_init, so it runs after the library's exit handler,
 * that is after the implicit finalize: PE 0 says how long it waited. */
static void report_wait(void)
{
    if (returned_at.tv_sec == 0 && returned_at.tv_nsec == 0)
        return; /* not PE 0 */
    double waited = seconds_since(&returned_at);
    printf("implicit finalize: PE 0 waited %.2f s for its peers\n", waited);
    fflush(stdout);
    if (waited < 0.25) {
        fprintf(stderr, "implicit finalize: PE 0 left after %.2f s, before its slow peer\n",
                waited);
        _exit(5);
    }
}

/* Every PE puts its number into the next PE's `target` and checks its own. */
static void put_and_check(void)
{
    int me = shmem_my_pe(), npes = shmem_n_pes();
    shmem_long_p(&target, 1000 + me, (me + 1) % npes);
    shmem_barrier_all();
    long want = 1000 + (me + npes - 1) % npes;
    MPE_CHECK(target == want, "target is %ld, wanted %ld", target, want);
    printf("implicit finalize: PE %d checked the data\n", me);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "init";
    if (strcmp(mode, "slow-peer") == 0 && atexit(report_wait) != 0)
        return 2;
    if (strcmp(mode, "start-pes") == 0)
        start_pes(0);
    else
        shmem_init();
    int me = shmem_my_pe();
    if (strcmp(mode, "slow-peer") == 0)
        MPE_CHECK(shmem_n_pes() >= 2, "slow-peer needs at least 2 PEs");

    if (strcmp(mode, "init") == 0 || strcmp(mode, "start-pes") == 0) {
        put_and_check();
    } else if (strcmp(mode, "slow-peer") == 0) {
        put_and_check();
        if (me == 1)
            sleep_s(0.3);
        if (me != 0)
            return 0; /* only PE 0 reports how long it waited */
        clock_gettime(CLOCK_MONOTONIC, &returned_at);
    } else if (strcmp(mode, "exit3") == 0) {
        shmem_barrier_all();
        if (me == 0) {
            sleep_s(0.1);
            exit(3);
        }
        /* PE 0 never comes: only ending the job gets the others out. */
        shmem_barrier_all();
        fprintf(stderr, "implicit finalize: PE %d passed a barrier without PE 0\n", me);
        return 4;
    } else if (strcmp(mode, "peer-killed") == 0) {
        shmem_barrier_all();
        if (me == 1) {
            sleep_s(0.2);
            raise(SIGKILL);
        }
        if (me != 0)
            shmem_barrier_all(); /* waits until the job ends */
    } else {
        fprintf(stderr, "unknown mode %s\n", mode);
        return 2;
    }
    return 0;
}
