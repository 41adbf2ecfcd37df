/* Bad input: each case makes one erroneous call on the last PE; the job must
 * end through the bootstrap with a message naming the call, the PE and the
 * value, never by a signal. Usage: mpe_errors CASE */
#include <shmem.h>
#include <shmemx.h>
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
    /* A team of the last two PEs (of the one PE when alone), a context on
     * it, and a context and a team already destroyed. */
    shmem_team_t pair = SHMEM_TEAM_INVALID, gone = SHMEM_TEAM_INVALID;
    shmem_team_split_strided(SHMEM_TEAM_WORLD, npes > 1 ? npes - 2 : 0, 1, npes > 1 ? 2 : 1, NULL,
                             0, &pair);
    shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, npes, NULL, 0, &gone);
    shmem_team_destroy(gone);
    shmem_ctx_t on_pair = SHMEM_CTX_INVALID, dead = SHMEM_CTX_INVALID;
    if (pair != SHMEM_TEAM_INVALID)
        shmem_team_create_ctx(pair, 0, &on_pair);
    shmem_ctx_create(0, &dead);
    shmem_ctx_destroy(dead);
    shmem_barrier_all();
    /* Every PE asks for an impossible size: NULL everywhere, with a message,
     * and the old block kept. */
    if (strcmp(what, "realloc-huge") == 0) {
        x[0] = 42;
        if (shmem_realloc(x, SIZE_MAX - 8) != NULL || x[0] != 42)
            return 4;
        shmem_barrier_all();
        shmem_free(x);
        shmem_finalize();
        return 0;
    }
    if (me == npes - 1) {
        if (strcmp(what, "ctx-pe-range") == 0)
            shmem_ctx_putmem(on_pair, x, private_buf, 8, 2);
        else if (strcmp(what, "ctx-destroyed") == 0)
            shmem_ctx_long_atomic_add(dead, x, 1, 0);
        else if (strcmp(what, "ctx-quiet-destroyed") == 0)
            shmem_ctx_quiet(dead);
        else if (strcmp(what, "team-destroyed") == 0)
            shmem_team_sync(gone);
        else if (strcmp(what, "team-destroy-world") == 0)
            shmem_team_destroy(SHMEM_TEAM_WORLD);
        else if (strcmp(what, "ibput-stride") == 0)
            shmem_long_ibput(x, private_buf, 1, 2, 2, 2, 0);
        else if (strcmp(what, "pe-range") == 0)
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
        else if (strcmp(what, "stream-on-cpu") == 0)
            shmemx_int_sum_reduce_on_stream(SHMEM_TEAM_WORLD, (int *)x, (int *)x, 2, NULL);
        else if (strcmp(what, "stream-overlap") == 0)
            shmemx_int_sum_reduce_on_stream(SHMEM_TEAM_WORLD, (int *)x + 1, (int *)x, 2, NULL);
        else if (strcmp(what, "global-exit") == 0)
            shmem_global_exit(7);
    }
    shmem_barrier_all();
    if (strcmp(what, "after-finalize") == 0) {
        shmem_finalize();
        shmem_putmem(x, private_buf, 8, 0);
        return 0;
    }
    if (on_pair != SHMEM_CTX_INVALID)
        shmem_ctx_destroy(on_pair);
    if (pair != SHMEM_TEAM_INVALID)
        shmem_team_destroy(pair);
    shmem_free(x);
    shmem_finalize();
    /* A case that reached here did not fail. */
    return strcmp(what, "none") == 0 ? 0 : 3;
}
