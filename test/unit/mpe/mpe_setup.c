/* Setup and query routines on every PE: identity, accessibility, shmem_ptr,
 * library identity, and SHMEM_THREAD_MULTIPLE with several threads putting. */
#include <pthread.h>
#include <shmem.h>
#include <string.h>

#include "mpe_check.h"

#define NTHREADS 4
#define PER_THREAD 256

static long *board; /* n_pes * NTHREADS * PER_THREAD longs */
static int me, npes;

static void *thread_main(void *arg)
{
    int t = (int)(long)arg;
    long buf[PER_THREAD];
    for (int pe = 0; pe < npes; pe++) {
        for (int i = 0; i < PER_THREAD; i++)
            buf[i] = (long)me * 1000000 + t * 10000 + i;
        size_t slot = ((size_t)me * NTHREADS + (size_t)t) * PER_THREAD;
        shmem_putmem(board + slot, buf, sizeof(buf), pe);
    }
    shmem_quiet();
    return NULL;
}

int main(void)
{
    int provided = -1;
    shmem_init_thread(SHMEM_THREAD_MULTIPLE, &provided);
    MPE_CHECK(provided == SHMEM_THREAD_MULTIPLE, "provided %d", provided);
    int queried = -1;
    shmem_query_thread(&queried);
    MPE_CHECK(queried == SHMEM_THREAD_MULTIPLE, "queried %d", queried);

    me = shmem_my_pe();
    npes = shmem_n_pes();
    MPE_CHECK(npes >= 1 && me >= 0 && me < npes, "me %d npes %d", me, npes);
    MPE_CHECK(_my_pe() == me && _num_pes() == npes, "deprecated names disagree");
    MPE_CHECK(shmem_team_my_pe(SHMEM_TEAM_WORLD) == me, "team_my_pe");
    MPE_CHECK(shmem_team_n_pes(SHMEM_TEAM_WORLD) == npes, "team_n_pes");

    int major = 0, minor = 0;
    char name[SHMEM_MAX_NAME_LEN];
    shmem_info_get_version(&major, &minor);
    shmem_info_get_name(name);
    MPE_CHECK(major == 1 && minor == 6, "version %d.%d", major, minor);
    MPE_CHECK(strcmp(name, "ushmem") == 0, "name %s", name);

    /* Every PE's rank reaches PE 0 exactly once: a job silently split into
     * single PEs would leave holes here. */
    int *ranks = shmem_calloc((size_t)npes, sizeof(int));
    MPE_CHECK(ranks != NULL, "calloc");
    int one = 1;
    shmem_putmem(&ranks[me], &one, sizeof(one), 0);
    shmem_barrier_all();
    if (me == 0)
        for (int pe = 0; pe < npes; pe++)
            MPE_CHECK(ranks[pe] == 1, "PE %d never reported", pe);

    long *x = shmem_malloc(sizeof(long) * (size_t)npes);
    MPE_CHECK(x != NULL, "malloc");
    int local;
    for (int pe = 0; pe < npes; pe++) {
        MPE_CHECK(shmem_pe_accessible(pe), "PE %d not accessible", pe);
        MPE_CHECK(shmem_addr_accessible(x, pe), "x not accessible on PE %d", pe);
        MPE_CHECK(!shmem_addr_accessible(&local, pe), "stack address accessible on PE %d", pe);
    }
    MPE_CHECK(!shmem_pe_accessible(npes) && !shmem_pe_accessible(-1), "out-of-range PE accessible");
    MPE_CHECK(shmem_ptr(&local, 0) == NULL, "shmem_ptr of a private address");
    MPE_CHECK(shmem_ptr(x, me) == x, "shmem_ptr to self");

    /* Store through shmem_ptr into every PE (a put where the peer is not
     * mapped, and shmem_ptr must say so); each PE checks what it got. */
    for (int pe = 0; pe < npes; pe++) {
        long *remote = shmem_ptr(x, pe);
        if (mpe_mapped_pe(pe)) {
            MPE_CHECK(remote != NULL, "shmem_ptr to PE %d is NULL", pe);
            remote[me] = 100L * me + pe;
        } else {
            MPE_CHECK(remote == NULL, "shmem_ptr to unmapped PE %d is %p", pe, (void *)remote);
            shmem_long_p(&x[me], 100L * me + pe, pe);
        }
    }
    shmem_barrier_all();
    for (int pe = 0; pe < npes; pe++)
        MPE_CHECK(x[pe] == 100L * pe + me, "x[%d] = %ld, want %ld", pe, x[pe], 100L * pe + me);

    /* Threads put concurrently into every PE. */
    board = shmem_calloc((size_t)npes * NTHREADS * PER_THREAD, sizeof(long));
    MPE_CHECK(board != NULL, "board");
    pthread_t threads[NTHREADS];
    for (long t = 0; t < NTHREADS; t++)
        pthread_create(&threads[t], NULL, thread_main, (void *)t);
    for (int t = 0; t < NTHREADS; t++)
        pthread_join(threads[t], NULL);
    shmem_barrier_all();
    for (int pe = 0; pe < npes; pe++)
        for (int t = 0; t < NTHREADS; t++)
            for (int i = 0; i < PER_THREAD; i++) {
                long want = (long)pe * 1000000 + t * 10000 + i;
                long got = board[((size_t)pe * NTHREADS + (size_t)t) * PER_THREAD + (size_t)i];
                MPE_CHECK(got == want, "board from PE %d thread %d [%d] = %ld, want %ld", pe, t,
                          i, got, want);
            }

    shmem_free(board);
    shmem_free(x);
    shmem_free(ranks);
    shmem_finalize();
    return 0;
}
