/* Bad input: each case makes one erroneous call on the last PE; the job must
 * end through the bootstrap with a message naming the call, the PE and the
 * value, never by a signal. Usage: mpe_errors CASE */
#include <shmem.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    const char *what = argc > 1 ? argv[1] : "";
    if (strcmp(what, "before-init") == 0) {
        (void)shmem_my_pe();
        return 0;
    }
    shmem_init();
    int me = shmem_my_pe(), npes = shmem_n_pes();
    long *x = shmem_malloc(64);
    long private_buf[8] = {0};
    shmem_barrier_all();
    if (me == npes - 1) {
        if (strcmp(what, "pe-range") == 0)
            shmem_putmem(x, private_buf, 8, npes);
        else if (strcmp(what, "pe-negative") == 0)
            shmem_getmem(private_buf, x, 8, -1);
        else if (strcmp(what, "not-symmetric") == 0)
            shmem_putmem(private_buf, x, 8, 0);
        else if (strcmp(what, "past-heap") == 0)
            shmem_putmem(x, private_buf, (size_t)1 << 40, 0);
        else if (strcmp(what, "bad-free") == 0)
            shmem_free(private_buf);
        else if (strcmp(what, "misaligned-atomic") == 0)
            shmem_long_atomic_add((long *)((char *)x + 4), 1, 0);
        else if (strcmp(what, "bad-sigop") == 0)
            shmem_putmem_signal(x, private_buf, 8, (uint64_t *)(x + 2), 1, 99, 0);
        else if (strcmp(what, "bad-cmp") == 0)
            shmem_long_wait_until(x, 42, 0);
        else if (strcmp(what, "global-exit") == 0)
            shmem_global_exit(7);
    }
    shmem_barrier_all();
    if (strcmp(what, "after-finalize") == 0) {
        shmem_finalize();
        shmem_putmem(x, private_buf, 8, 0);
        return 0;
    }
    shmem_free(x);
    shmem_finalize();
    /* A case that reached here did not fail. */
    return strcmp(what, "none") == 0 ? 0 : 3;
}
