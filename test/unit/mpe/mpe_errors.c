/* Bad input: each case makes one erroneous call on the last PE; the job must
 * end through the bootstrap with a message naming the call, the PE and the
 * value, never by a signal. Usage: mpe_errors CASE */
#include <shmem.h>
#include <shmemx.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

/* 2 MiB that were mapped and are not any more: large enough that the
 * library asks the kernel about the pages before copying. */
#define UNMAPPED_SIZE ((size_t)2 << 20)
static void *unmapped_buffer(void)
{
    void *p = mmap(NULL, UNMAPPED_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
                   0);
    if (p == MAP_FAILED || munmap(p, UNMAPPED_SIZE) != 0)
        return NULL;
    return p;
}

int main(int argc, char **argv)
{
    const char *what = argc > 1 ? argv[1] : "";
    if (strcmp(what, "before-init") == 0) {
        (void)shmem_my_pe();
        return 0;
    }
    shmem_init();
    int me = shmem_my_pe(), npes = shmem_n_pes();
    /* The first allocation: what lies below it is the library's reserved
     * area, which no call may name. */
    long *x = shmem_malloc(64);
    char *big = shmem_malloc(UNMAPPED_SIZE);
    long private_buf[8] = {0};
    uint64_t *sig = (uint64_t *)(x + 2);
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
    /* PE 1 makes a collective allocation unlike the other PEs' (compared
     * with SHMEM_DEBUG=1). */
    if (me == 1) {
        if (strcmp(what, "differ-malloc") == 0)
            (void)shmem_malloc(2048);
        else if (strcmp(what, "differ-calloc") == 0)
            (void)shmem_calloc(20, 4);
        else if (strcmp(what, "differ-align") == 0)
            (void)shmem_align(256, 1024);
        else if (strcmp(what, "differ-realloc") == 0)
            x = shmem_realloc(x, 128);
    } else {
        if (strcmp(what, "differ-malloc") == 0)
            (void)shmem_malloc(1024);
        else if (strcmp(what, "differ-calloc") == 0)
            (void)shmem_calloc(10, 4);
        else if (strcmp(what, "differ-align") == 0)
            (void)shmem_align(4096, 1024);
        else if (strcmp(what, "differ-realloc") == 0)
            x = shmem_realloc(x, 64);
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
        else if (strcmp(what, "stream-max-overlap") == 0)
            shmemx_double_max_reduce_on_stream(SHMEM_TEAM_WORLD, (double *)x + 1, (double *)x, 2,
                                               NULL);
        else if (strcmp(what, "stream-reducescatter-on-cpu") == 0)
            shmemx_uint8_min_reducescatter_on_stream(SHMEM_TEAM_WORLD, (uint8_t *)x + 32,
                                                     (uint8_t *)x, 2, NULL);
        else if (strcmp(what, "stream-reducescatter-source") == 0)
            shmemx_int64_xor_reducescatter_on_stream(SHMEM_TEAM_WORLD, (int64_t *)x, (int64_t *)x,
                                                     (size_t)1 << 30, NULL);
        else if (strcmp(what, "global-exit") == 0)
            shmem_global_exit(7);
        /* The reserved area below the first allocation, through every kind
         * of call that takes a symmetric address. */
        else if (strcmp(what, "reserved-put") == 0)
            shmem_putmem(x - 1, private_buf, 8, 0);
        else if (strcmp(what, "reserved-put-straddle") == 0)
            shmem_putmem(x - 1, private_buf, 16, 0);
        else if (strcmp(what, "reserved-long-p") == 0)
            shmem_long_p(x - 8, 1, 0);
        else if (strcmp(what, "reserved-get") == 0)
            shmem_getmem(private_buf, x - 1, 8, 0);
        else if (strcmp(what, "reserved-iput") == 0)
            shmem_long_iput(x - 3, private_buf, 2, 1, 2, 0);
        else if (strcmp(what, "reserved-ctx-get-nbi") == 0)
            shmem_ctx_long_get_nbi(SHMEM_CTX_DEFAULT, private_buf, x - 1, 1, 0);
        else if (strcmp(what, "reserved-amo") == 0)
            shmem_long_atomic_add(x - 1, 1, 0);
        else if (strcmp(what, "reserved-amo-fetch") == 0)
            (void)shmem_long_atomic_fetch(x - 16, 0);
        else if (strcmp(what, "reserved-signal") == 0)
            shmem_putmem_signal(x, private_buf, 8, (uint64_t *)x - 1, 1, SHMEM_SIGNAL_SET, 0);
        else if (strcmp(what, "reserved-signal-fetch") == 0)
            (void)shmem_signal_fetch((uint64_t *)x - 1);
        else if (strcmp(what, "reserved-wait") == 0)
            shmem_long_wait_until(x - 1, SHMEM_CMP_EQ, 0);
        else if (strcmp(what, "reserved-lock") == 0)
            shmem_set_lock(x - 1);
        /* ... and as the private side of a call: a get into it, a
         * reduction's dest. */
        else if (strcmp(what, "reserved-get-dest") == 0)
            shmem_getmem(x - 1, x, 8, 0);
        else if (strcmp(what, "reserved-reduce-dest") == 0)
            shmem_long_sum_reduce(SHMEM_TEAM_WORLD, x - 1, x, 1);
        /* NULL, low, wrapped and unmapped private buffers. */
        else if (strcmp(what, "null-put-source") == 0)
            shmem_putmem(x, NULL, 8, 0);
        else if (strcmp(what, "null-put-nbi-source") == 0)
            shmem_putmem_nbi(x, NULL, 8, 0);
        else if (strcmp(what, "null-long-put-source") == 0)
            shmem_long_put(x, NULL, 1, 0);
        else if (strcmp(what, "null-ctx-put64-nbi-source") == 0)
            shmem_ctx_put64_nbi(SHMEM_CTX_DEFAULT, x, NULL, 1, 0);
        else if (strcmp(what, "null-iput-source") == 0)
            shmem_long_iput(x, NULL, 1, 2, 2, 0);
        else if (strcmp(what, "null-put-signal-source") == 0)
            shmem_putmem_signal(x, NULL, 8, sig, 1, SHMEM_SIGNAL_SET, 0);
        else if (strcmp(what, "null-get-dest") == 0)
            shmem_getmem(NULL, x, 8, 0);
        else if (strcmp(what, "null-get-nbi-dest") == 0)
            shmem_getmem_nbi(NULL, x, 8, 0);
        else if (strcmp(what, "null-int-get-dest") == 0)
            shmem_int_get(NULL, (int *)x, 2, 0);
        else if (strcmp(what, "null-ctx-get32-nbi-dest") == 0)
            shmem_ctx_get32_nbi(SHMEM_CTX_DEFAULT, NULL, x, 2, 0);
        else if (strcmp(what, "null-iget-dest") == 0)
            shmem_long_iget(NULL, x, 2, 1, 2, 0);
        else if (strcmp(what, "null-fetch-nbi") == 0)
            shmem_long_atomic_fetch_nbi(NULL, x, 0);
        else if (strcmp(what, "null-collect-dest") == 0)
            shmem_long_collect(SHMEM_TEAM_WORLD, NULL, x, 1);
        else if (strcmp(what, "low-put-source") == 0)
            shmem_putmem(x, (void *)(uintptr_t)16, 8, 0);
        else if (strcmp(what, "wrapped-put-source") == 0)
            shmem_putmem(x, (void *)(UINTPTR_MAX - 3), 8, 0);
        else if (strcmp(what, "unmapped-put-source") == 0)
            shmem_putmem(big, unmapped_buffer(), UNMAPPED_SIZE, 0);
        else if (strcmp(what, "unmapped-put-nbi-source") == 0)
            shmem_putmem_nbi(big, unmapped_buffer(), UNMAPPED_SIZE, 0);
        else if (strcmp(what, "unmapped-get-dest") == 0)
            shmem_getmem(unmapped_buffer(), big, UNMAPPED_SIZE, 0);
    }
    /* The reserved area is not symmetric for the queries either. */
    if (strcmp(what, "reserved-query") == 0) {
        int pe = (me + 1) % npes;
        if (shmem_ptr(x - 1, pe) != NULL || shmem_addr_accessible(x - 1, pe) ||
            shmem_ptr(x, pe) == NULL || !shmem_addr_accessible(x, pe))
            return 6;
        printf("PE %d: shmem_ptr and shmem_addr_accessible refuse the reserved area\n", me);
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
    shmem_free(big);
    shmem_free(x);
    shmem_finalize();
    /* A case that reached here did not fail. */
    return strcmp(what, "none") == 0 || strcmp(what, "reserved-query") == 0 ? 0 : 3;
}
