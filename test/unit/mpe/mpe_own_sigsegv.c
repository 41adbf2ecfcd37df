/* A program with a SIGSEGV handler of its own, installed before shmem_init,
 * runs clean on a device heap: ushmem neither replaces the handler nor
 * causes a fault in the CPU (a load or store of device memory faults on the
 * Level Zero test driver, as on a discrete GPU), through init, puts, gets,
 * barriers, collectives and finalize.
 *
 * Checked on every PE: the handler never ran, it is still the installed
 * one after shmem_init and after shmem_finalize, and every byte put to the
 * next PE came back from it. */
#include <shmem.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mpe_check.h"

static volatile sig_atomic_t faults;

static void on_segv(int sig, siginfo_t *info, void *ctx)
{
    (void)sig, (void)ctx;
    static const char msg[] = "mpe_own_sigsegv: SIGSEGV in the program's own handler\n";
    faults++;
    (void)!write(2, msg, sizeof(msg) - 1);
    (void)info;
    _exit(3);
}

static int handler_is_ours(void)
{
    struct sigaction now;
    return sigaction(SIGSEGV, NULL, &now) == 0 && (now.sa_flags & SA_SIGINFO) &&
           now.sa_sigaction == on_segv;
}

int main(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = on_segv;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGSEGV, &sa, NULL) != 0) {
        perror("sigaction");
        return 1;
    }

    shmem_init();
    int me = shmem_my_pe(), npes = shmem_n_pes(), next = (me + 1) % npes;
    MPE_CHECK(handler_is_ours(), "shmem_init replaced the program's SIGSEGV handler");

    const size_t n = (1 << 20) + 13;
    unsigned char *heap = shmem_malloc(n), *dst = shmem_malloc(n * npes);
    unsigned char *out = malloc(n), *back = malloc(n * npes);
    MPE_CHECK(heap != NULL && dst != NULL && out != NULL && back != NULL, "allocation failed");
    for (size_t i = 0; i < n; i++)
        out[i] = (unsigned char)(me * 31 + i * 7 + 1);
    shmem_putmem(heap, out, n, next);
    shmem_barrier_all();
    shmem_getmem(back, heap, n, next); /* what this PE put there */
    for (size_t i = 0; i < n; i++)
        MPE_CHECK(back[i] == out[i], "byte %zu read back from PE %d is %u, want %u", i, next,
                  back[i], out[i]);
    shmem_barrier_all(); /* every PE has read its next PE's heap */
    shmem_putmem(heap, out, n, me);
    shmem_barrier_all();
    shmem_fcollectmem(SHMEM_TEAM_WORLD, dst, heap, n);
    shmem_getmem(back, dst, n * npes, me);
    for (int pe = 0; pe < npes; pe++)
        for (size_t i = 0; i < n; i += 4099)
            MPE_CHECK(back[pe * n + i] == (unsigned char)(pe * 31 + i * 7 + 1),
                      "fcollect: byte %zu of PE %d's block is %u", i, pe, back[pe * n + i]);
    shmem_barrier_all();
    shmem_free(dst);
    shmem_free(heap);
    free(out);
    free(back);
    MPE_CHECK(faults == 0, "%d faults", (int)faults);
    shmem_finalize();
    if (!handler_is_ours()) {
        fprintf(stderr, "PE %d: shmem_finalize left another SIGSEGV handler\n", me);
        return 1;
    }
    if (me == 0)
        printf("no fault in %d PEs, handler kept\n", npes);
    return 0;
}
