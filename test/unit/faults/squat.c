/* The squatting attack on a whole job, from outside it:
 *
 *   squat [--preload SO] OSHRUN NPES PROGRAM [ARGS...]
 *
 * starts `OSHRUN --timeout 20 -n NPES PROGRAM ARGS` stopped, lets a stranger
 * (squatter.h: uid 65534 when run as root) bind every fd-server name it can
 * predict from what /proc shows of the job (oshrun's pid and start time made
 * the namespace, the namespace and rank made the name), then lets the job
 * run while the stranger also connects to and holds open every ushmem
 * socket it sees in /proc/net/unix. Passes when the job exits 0 within
 * LIMIT_S. USHMEM_FD_PASSING comes from the environment; --preload puts SO
 * in the job's LD_PRELOAD (nopidfd.so, to force auto's fallback). */
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../child_util.h"
#include "../squatter.h"

#define LIMIT_S 30.0
#define SLACK_BEFORE 2 /* seconds of clock the predicted names cover before now */
#define SLACK_AFTER 5  /* and after */
#define MAX_NAMES 512

static void usage(void)
{
    fputs("usage: squat [--preload SO] OSHRUN NPES PROGRAM [ARGS...]\n", stderr);
    exit(2);
}

int main(int argc, char **argv)
{
    const char *preload = NULL;
    int a = 1;
    if (a + 1 < argc && strcmp(argv[a], "--preload") == 0) {
        preload = argv[a + 1];
        a += 2;
    }
    if (argc - a < 3)
        usage();
    const char *oshrun = argv[a];
    int npes = atoi(argv[a + 1]);
    if (npes < 1 || npes > 64)
        usage();
    char **prog = &argv[a + 2];
    int nprog = argc - a - 2;

    char **job_argv = calloc((size_t)nprog + 6, sizeof(char *));
    if (job_argv == NULL)
        return 2;
    int j = 0;
    job_argv[j++] = (char *)oshrun;
    job_argv[j++] = "--timeout";
    job_argv[j++] = "20"; /* oshrun ends a stuck job itself, before LIMIT_S */
    job_argv[j++] = "-n";
    job_argv[j++] = argv[a + 1];
    for (int i = 0; i < nprog; i++)
        job_argv[j++] = prog[i];

    pid_t job = fork();
    if (job < 0)
        return 2;
    if (job == 0) {
        if (preload != NULL)
            setenv("LD_PRELOAD", preload, 1);
        raise(SIGSTOP); /* until the stranger is in place */
        execv(oshrun, job_argv);
        perror("squat: exec oshrun");
        _exit(127);
    }
    free(job_argv);
    int wstatus;
    if (waitpid(job, &wstatus, WUNTRACED) != job || !WIFSTOPPED(wstatus)) {
        fputs("squat: the job did not stop before exec\n", stderr);
        return 2;
    }

    /* The names the stranger predicts: oshrun names its PMIx namespace
     * "oshrun.<pid>.<time>", and the job id is the namespace. */
    static char names[MAX_NAMES][96];
    const char *ptrs[MAX_NAMES];
    int nnames = 0;
    long t = (long)time(NULL);
    for (long s = t - SLACK_BEFORE; s <= t + SLACK_AFTER; s++)
        for (int r = 0; r < npes && nnames < MAX_NAMES; r++) {
            snprintf(names[nnames], sizeof(names[nnames]), "ushmem-oshrun.%d.%ld-%d", (int)job,
                     s, r);
            ptrs[nnames] = names[nnames];
            nnames++;
        }

    atomic_int *squatted = mmap(NULL, sizeof(*squatted), PROT_READ | PROT_WRITE,
                                MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (squatted == MAP_FAILED)
        return 2;
    atomic_init(squatted, 0);
    int ready[2];
    if (pipe(ready) != 0)
        return 2;
    pid_t squatter = fork();
    if (squatter < 0)
        return 2;
    if (squatter == 0) {
        close(ready[0]);
        squatter_main(ready[1], ptrs, nnames, squatted);
    }
    close(ready[1]);
    unsigned char report[2];
    if (read(ready[0], report, sizeof(report)) != (ssize_t)sizeof(report)) {
        fputs("squat: the stranger did not start\n", stderr);
        kill(job, SIGKILL);
        return 2;
    }
    close(ready[0]);
    printf("squat: stranger of uid %s bound %d of %d predicted names\n",
           report[0] == 'S' ? "65534" : "ours (not root: simulated)", (int)report[1], nnames);
    fflush(stdout);

    double t0 = now_s();
    kill(job, SIGCONT);
    int code = reap(job, LIMIT_S);
    double elapsed = now_s() - t0;
    kill(squatter, SIGKILL);
    reap(squatter, 5.0);

    printf("squat: the job exited with %d after %.2f s; the stranger held connections to %d "
           "ushmem sockets\n", code, elapsed, atomic_load(squatted));
    if (code == -2) {
        printf("squat: FAIL: the job ran past %.0f s and was killed\n", LIMIT_S);
        return 1;
    }
    if (code != 0) {
        printf("squat: FAIL: the job failed under the stranger\n");
        return 1;
    }
    return 0;
}
