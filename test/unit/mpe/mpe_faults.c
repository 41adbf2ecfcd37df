/* Faults and edge sizes, one case per run (usage: mpe_faults CASE):
 *   kill-barrier, kill-wait: the last PE dies by SIGKILL while the others sit
 *     in a barrier or in a wait_until that only it would satisfy; the job
 *     must end within seconds through the launcher (test/unit/faults.sh
 *     checks the exit status, the time, the processes and the files left);
 *   zero: puts and gets of 0 bytes with NULL pointers are no-ops on every
 *     route, and leave the destination untouched;
 *   huge-put, huge-get: a size of SIZE_MAX/2 on the last PE ends the job
 *     with a message naming the call and the PE;
 *   hints: shmem_malloc_with_hints with a hint bit no version defines, three
 *     times on every PE (the warning comes once for the job);
 *   noinit: the PE of rank 1 (PMIX_RANK) returns from main before
 *     shmem_init while the others wait in it;
 *   return-early: the last PE returns from main without shmem_finalize
 *     while the others go on to a barrier and shmem_finalize; its finalize
 *     at exit takes their barrier for its last one, and they wait for ever;
 *   vanish: the last PE leaves PMIx as if it had finalized, which hides it
 *     from the launcher, and exits without shmem_finalize while the others
 *     wait in a barrier (as under a launcher that does not end the job).
 *   slow: PE 0 waits in shmem_long_wait_until for the last PE, which
 *     computes for 2.5 s first, while the others wait in shmem_finalize
 *     (at least 3 PEs): long waits, but none that cannot end, and the job
 *     finishes with nothing said.
 * noinit, return-early and vanish hang until the launcher's timeout.
 * With MPE_PIDDIR set, each PE writes its pid to MPE_PIDDIR/pe<N>, so that
 * the driver can check that no PE outlives the job. */
#include <dlfcn.h>
#include <signal.h>
#include <stdlib.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mpe_check.h"

static void write_pid(int me)
{
    const char *dir = getenv("MPE_PIDDIR");
    if (dir == NULL)
        return;
    char path[4096];
    snprintf(path, sizeof(path), "%s/pe%d", dir, me);
    FILE *f = fopen(path, "w");
    MPE_CHECK(f != NULL, "cannot write %s", path);
    fprintf(f, "%d\n", (int)getpid());
    fclose(f);
}

int main(int argc, char **argv)
{
    const char *what = argc > 1 ? argv[1] : "";
    const char *rank = getenv("PMIX_RANK");
    if (strcmp(what, "noinit") == 0 && rank != NULL && strcmp(rank, "1") == 0)
        return 0; /* a rank-dependent early return, before shmem_init */
    shmem_init();
    int me = shmem_my_pe(), npes = shmem_n_pes();
    int last = npes - 1;
    long *x = shmem_calloc(8, sizeof(long));
    long buf[8] = {0};
    write_pid(me);
    shmem_barrier_all();

    if (strcmp(what, "kill-barrier") == 0 || strcmp(what, "kill-wait") == 0) {
        if (me == last) {
            /* Long enough for the others to be waiting already. */
            struct timespec pause = {0, 200 * 1000 * 1000};
            nanosleep(&pause, NULL);
            raise(SIGKILL);
        }
        if (strcmp(what, "kill-barrier") == 0)
            shmem_barrier_all();
        else
            shmem_long_wait_until(&x[0], SHMEM_CMP_NE, 0);
        /* Unreachable while PE `last` is dead: nothing can complete. */
        fprintf(stderr, "PE %d: got past the %s of a dead PE\n", me, what);
        return 3;
    } else if (strcmp(what, "zero") == 0) {
        long mark[8];
        for (int i = 0; i < 8; i++)
            mark[i] = 100L * me + i;
        shmem_putmem(x, mark, sizeof(mark), me);
        shmem_barrier_all();
        for (int pe = 0; pe < npes; pe++) {
            shmem_putmem(NULL, NULL, 0, pe);
            shmem_getmem(NULL, NULL, 0, pe);
            shmem_long_put(NULL, NULL, 0, pe);
            shmem_long_get(NULL, NULL, 0, pe);
            shmem_putmem_nbi(NULL, NULL, 0, pe);
            shmem_getmem_nbi(NULL, NULL, 0, pe);
            /* A real destination with 0 bytes is not written either. */
            shmem_putmem(x, buf, 0, pe);
        }
        shmem_quiet();
        shmem_barrier_all();
        for (int pe = 0; pe < npes; pe++) {
            shmem_getmem(buf, x, sizeof(buf), pe);
            for (int i = 0; i < 8; i++)
                MPE_CHECK(buf[i] == 100L * pe + i, "PE %d word %d = %ld after 0-byte puts", pe,
                          i, buf[i]);
        }
    } else if (strcmp(what, "hints") == 0) {
        for (int i = 0; i < 3; i++) {
            long *h = shmem_malloc_with_hints(64, SHMEM_MALLOC_ATOMICS_REMOTE | (1L << 20));
            MPE_CHECK(h != NULL, "shmem_malloc_with_hints returned NULL");
            shmem_free(h);
        }
    } else if (strcmp(what, "return-early") == 0 || strcmp(what, "vanish") == 0) {
        if (me == last) {
            struct timespec pause = {0, 200 * 1000 * 1000};
            nanosleep(&pause, NULL);
            if (strcmp(what, "return-early") == 0)
                return 0; /* shmem_finalize runs at exit */
            /* libushmem's PMIx library is loaded; a launcher that saw the PE
             * finalize does not end the job when it exits 0. */
            int (*pmix_finalize)(const void *, size_t) =
                (int (*)(const void *, size_t))dlsym(RTLD_DEFAULT, "PMIx_Finalize");
            MPE_CHECK(pmix_finalize != NULL, "no PMIx_Finalize in the process");
            pmix_finalize(NULL, 0);
            _exit(0);
        }
        shmem_barrier_all();
        shmem_finalize();
        fprintf(stderr, "PE %d: finished beside a PE that left (%s)\n", me, what);
        return 3;
    } else if (strcmp(what, "slow") == 0) {
        if (me == last) {
            struct timespec compute = {2, 500 * 1000 * 1000};
            nanosleep(&compute, NULL);
            shmem_long_p(&x[0], 1, 0);
        } else if (me == 0) {
            shmem_long_wait_until(&x[0], SHMEM_CMP_NE, 0);
        }
        shmem_finalize();
        return 0;
    } else if (strcmp(what, "huge-put") == 0 || strcmp(what, "huge-get") == 0) {
        if (me == last && strcmp(what, "huge-put") == 0)
            shmem_putmem(x, buf, SIZE_MAX / 2, 0);
        else if (me == last)
            shmem_getmem(buf, x, SIZE_MAX / 2, 0);
        shmem_barrier_all();
        shmem_finalize();
        return 3; /* the call returned */
    } else {
        fprintf(stderr, "mpe_faults: unknown case '%s'\n", what);
        shmem_global_exit(2);
    }
    shmem_barrier_all();
    shmem_free(x);
    shmem_finalize();
    return 0;
}
