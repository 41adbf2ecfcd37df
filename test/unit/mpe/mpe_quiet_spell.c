/* A program with a quiet spell: the PEs meet, sleep MS milliseconds (argv[1],
 * default 300) doing nothing, then each puts its number into its right
 * neighbour and checks what its left one put. What the library's helper
 * threads do meanwhile is for the test's script to read (the link
 * keeper's debug lines, test/unit/link_warm.sh). */
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int main(int argc, char **argv)
{
    long ms = argc > 1 ? strtol(argv[1], NULL, 10) : 300;
    shmem_init();
    int me = shmem_my_pe(), npes = shmem_n_pes();
    long *box = shmem_malloc(sizeof(long));
    if (box == NULL) {
        fprintf(stderr, "PE %d: shmem_malloc failed\n", me);
        shmem_global_exit(1);
    }
    /* Through the library: on a GPU backend the heap is device memory. */
    shmem_long_p(box, -1, me);
    shmem_barrier_all();
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
    shmem_long_p(box, me, (me + 1) % npes);
    shmem_barrier_all();
    int left = (me + npes - 1) % npes;
    long got = shmem_long_g(box, me);
    if (got != left) {
        fprintf(stderr, "PE %d: the left neighbour's put reads %ld, not %d\n", me, got, left);
        shmem_global_exit(1);
    }
    shmem_free(box);
    shmem_finalize();
    if (me == 0)
        printf("quiet spell: %d PEs passed\n", npes);
    return 0;
}
