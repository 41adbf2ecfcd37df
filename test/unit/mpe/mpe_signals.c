/* A program keeps the signal dispositions it would have without ushmem:
 * the default for every signal it leaves alone and its own handler where it
 * installs one, before shmem_init (no library linked with it installs any
 * before main) and after it, with every peer reached (over the fabric when
 * USHMEM_IPC=0, which loads libfabric: some of its builds pull in libraries
 * that install handlers for SIGSEGV, SIGBUS, SIGILL, SIGABRT, SIGINT and
 * SIGTERM). With --term, PE 1 then sends itself SIGTERM, which must kill it,
 * not make it exit with a status. */
#include <dlfcn.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "mpe_check.h"

static void on_usr1(int sig) { (void)sig; }

static struct sigaction before[NSIG], after[NSIG];

static void snapshot(struct sigaction *acts)
{
    for (int sig = 1; sig < NSIG; sig++)
        if (sigaction(sig, NULL, &acts[sig]) != 0)
            memset(&acts[sig], 0, sizeof(acts[sig]));
}

static int same(const struct sigaction *a, const struct sigaction *b)
{
    if ((a->sa_flags & SA_SIGINFO) != (b->sa_flags & SA_SIGINFO))
        return 0;
    return (a->sa_flags & SA_SIGINFO) ? a->sa_sigaction == b->sa_sigaction
                                      : a->sa_handler == b->sa_handler;
}

/* In a build with AddressSanitizer or UndefinedBehaviorSanitizer, their
 * runtime installs handlers before main: those are expected. Any other
 * library's are not. */
static int sanitizer_handler(const struct sigaction *a)
{
    Dl_info info;
    void *fn = (a->sa_flags & SA_SIGINFO) ? (void *)a->sa_sigaction : (void *)a->sa_handler;
    return a->sa_handler != SIG_DFL && a->sa_handler != SIG_IGN && dladdr(fn, &info) != 0 &&
           info.dli_fname != NULL &&
           (strstr(info.dli_fname, "/libasan.so") != NULL ||
            strstr(info.dli_fname, "/libubsan.so") != NULL);
}

int main(int argc, char **argv)
{
    static const int left_alone[] = {SIGSEGV, SIGBUS, SIGILL, SIGABRT, SIGINT, SIGTERM, SIGFPE};
    int term = argc > 1 && strcmp(argv[1], "--term") == 0;

    struct sigaction usr1;
    memset(&usr1, 0, sizeof(usr1));
    usr1.sa_handler = on_usr1;
    sigaction(SIGUSR1, &usr1, NULL);
    snapshot(before);
    /* Checked before shmem_init, so with plain stdio: MPE_CHECK needs ushmem. */
    for (size_t i = 0; i < sizeof(left_alone) / sizeof(left_alone[0]); i++) {
        if (before[left_alone[i]].sa_handler != SIG_DFL &&
            !sanitizer_handler(&before[left_alone[i]])) {
            fprintf(stderr, "before shmem_init, SIG%s has a handler the program did not "
                    "install (a library linked with it installed one)\n",
                    sigabbrev_np(left_alone[i]));
            return 1;
        }
    }

    shmem_init();
    int me = shmem_my_pe(), npes = shmem_n_pes();
    long *counter = shmem_calloc(1, sizeof(long));
    long *marks = shmem_calloc((size_t)npes, sizeof(long));
    MPE_CHECK(counter != NULL && marks != NULL, "allocation");
    for (int pe = 0; pe < npes; pe++) {
        shmem_long_p(&marks[me], me + 1, pe);
        shmem_long_atomic_add(counter, 1, pe);
    }
    shmem_barrier_all();
    long got;
    shmem_getmem(&got, counter, sizeof(got), me);
    MPE_CHECK(got == npes, "counter %ld, want %d", got, npes);
    snapshot(after);
    for (int sig = 1; sig < NSIG; sig++)
        MPE_CHECK(same(&before[sig], &after[sig]),
                  "the disposition of SIG%s changed across shmem_init and the first transfers",
                  sigabbrev_np(sig) != NULL ? sigabbrev_np(sig) : "?");
    shmem_barrier_all();
    if (term && me == 1) {
        raise(SIGTERM);
        MPE_CHECK(0, "SIGTERM did not end PE 1");
    }
    if (term)
        pause(); /* oshrun ends the job when PE 1 dies */
    shmem_free(marks);
    shmem_free(counter);
    shmem_finalize();
    return 0;
}
