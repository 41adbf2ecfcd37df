/* The smallest OpenSHMEM program, built by the oshcc and oshc++ tests: each
 * PE puts its number into the next PE's symmetric buffer. Valid C and C++. */
#include <shmem.h>
#include <stdio.h>

int main(void)
{
    shmem_init();
    int me = shmem_my_pe(), npes = shmem_n_pes();
    long *slot = (long *)shmem_malloc(sizeof(long));
    if (slot == NULL)
        return 2;
    *slot = -1;
    shmem_barrier_all();
    shmem_long_p(slot, me, (me + 1) % npes);
    shmem_barrier_all();
    int ok = *slot == (me + npes - 1) % npes;
    printf("PE %d of %d: %s\n", me, npes, ok ? "ok" : "wrong value");
    shmem_free(slot);
    shmem_finalize();
    return ok ? 0 : 1;
}
