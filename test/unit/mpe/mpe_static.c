/* Global and static variables are symmetric: puts, gets, atomics, waits,
 * shmem_ptr and the classic pSync collectives on .data and .bss objects, on
 * every PE; initial values survive shmem_init and values survive finalize. */
#include <shmem.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mpe_check.h"

#define N 1000

long initialised[4] = {11, 22, 33, 44}; /* .data */
long zeroed[N];                          /* .bss */
static int counter;                      /* .bss, file static */
static long psync[SHMEM_REDUCE_SYNC_SIZE];
static long pwrk[SHMEM_REDUCE_MIN_WRKDATA_SIZE + N];
static long sum_src[N], sum_dst[N];

int main(void)
{
    static long flag; /* function static */

    shmem_init();
    int me = shmem_my_pe(), npes = shmem_n_pes();
    MPE_CHECK(initialised[0] == 11 && initialised[3] == 44, "initial .data lost: %ld %ld",
              initialised[0], initialised[3]);
    for (int pe = 0; pe < npes; pe++)
        MPE_CHECK(shmem_addr_accessible(zeroed, pe), ".bss not accessible on PE %d", pe);

    /* Each PE writes its slice of every peer's .bss array. */
    long mine[N / 8];
    for (int i = 0; i < N / 8; i++)
        mine[i] = me * 100000L + i;
    for (int pe = 0; pe < npes; pe++)
        if (me < 8)
            shmem_long_put(&zeroed[me * (N / 8)], mine, N / 8, pe);
    shmem_barrier_all();
    for (int src = 0; src < npes && src < 8; src++)
        for (int i = 0; i < N / 8; i++)
            MPE_CHECK(zeroed[src * (N / 8) + i] == src * 100000L + i,
                      "zeroed[%d] from PE %d = %ld", src * (N / 8) + i, src,
                      zeroed[src * (N / 8) + i]);

    /* Gets from .data of the right neighbour, after it changed its copy. */
    initialised[1] = 1000 + me;
    shmem_barrier_all();
    int right = (me + 1) % npes;
    long got = shmem_long_g(&initialised[1], right);
    MPE_CHECK(got == 1000 + right, "initialised[1] on PE %d = %ld", right, got);

    /* Atomics on a file-static int from every PE. */
    for (int pe = 0; pe < npes; pe++)
        shmem_int_atomic_add(&counter, me + 1, pe);
    shmem_barrier_all();
    MPE_CHECK(counter == npes * (npes + 1) / 2, "counter = %d", counter);

    /* shmem_ptr store and a wait on a function static. */
    long *remote_flag = shmem_ptr(&flag, right);
    MPE_CHECK((remote_flag != NULL) == mpe_mapped_pe(right),
              "shmem_ptr of a static on PE %d is %p", right, (void *)remote_flag);
    shmem_barrier_all();
    shmem_long_atomic_set(&flag, me + 1, right);
    int left = (me - 1 + npes) % npes;
    shmem_long_wait_until(&flag, SHMEM_CMP_EQ, left + 1);

    /* The 1.4 reduction with static pSync/pWrk and static buffers. */
    for (int i = 0; i < SHMEM_REDUCE_SYNC_SIZE; i++)
        psync[i] = SHMEM_SYNC_VALUE;
    for (int i = 0; i < N; i++)
        sum_src[i] = me + i;
    shmem_barrier_all();
    shmem_long_sum_to_all(sum_dst, sum_src, N, 0, 0, npes, pwrk, psync);
    for (int i = 0; i < N; i++)
        MPE_CHECK(sum_dst[i] == (long)npes * (npes - 1) / 2 + (long)npes * i, "sum_dst[%d] = %ld",
                  i, sum_dst[i]);

    /* A forked child's globals are its own, not shared with the parent. */
    counter = 17;
    pid_t child = fork();
    if (child == 0) {
        counter = 42;
        _exit(counter == 42 ? 0 : 1);
    }
    int wstatus = 0;
    MPE_CHECK(child > 0 && waitpid(child, &wstatus, 0) == child && WIFEXITED(wstatus) &&
                  WEXITSTATUS(wstatus) == 0, "fork/wait failed");
    MPE_CHECK(counter == 17, "the child's write reached the parent: %d", counter);
    shmem_barrier_all();
    counter = npes * (npes + 1) / 2;

    shmem_finalize();
    /* The globals are private memory again and keep their values. */
    MPE_CHECK(counter == npes * (npes + 1) / 2, "counter after finalize = %d", counter);
    counter = -1;
    zeroed[0] = 5;
    return 0;
}
