/* A PE for oshrun's own tests: a bare PMIx client that does what the test
 * asks of it, so oshrun is tested without the ushmem library.
 *
 *   launcher_pe MODE [ARGS...]
 *
 * Every PE connects, writes its pid to $LAUNCHER_TEST_DIR/pid.RANK, joins a
 * fence, writes ready.RANK, then:
 *   check N          checks job size N, local ranks, and an exchange of values
 *   exit R CODE      PE R exits with CODE; the others wait for a signal
 *   stubborn R CODE  as exit, but the others ignore SIGTERM
 *   spin R CODE      as exit, but the others ignore SIGTERM and spin on the CPU
 *   fence R CODE     as exit, but the others block SIGTERM and wait in a
 *                    second fence, which R never joins
 *   traced R CODE    as spin, but each other PE is first seized with ptrace by
 *                    a helper outside its process group that never waits for
 *                    it, so that oshrun cannot reap it after SIGKILL (a PE
 *                    under a debugger); the helper writes tracer.RANK and
 *                    exits after 30 s, or writes untraceable.RANK if ptrace
 *                    is refused
 *   affinity         prints "RANK:" and the CPUs it may run on, e.g. "0:2,5"
 *   signal R SIG     PE R kills itself with SIG; the others wait
 *   abort R CODE     PE R calls PMIx_Abort(CODE); the others wait
 *   early R          PE R exits 0 at once without PMIx_Finalize; the others
 *                    finalize after a moment and exit 0
 *   noinit R MS      PE R exits 0 MS milliseconds after it starts, without
 *                    connecting (a program that returns before shmem_init);
 *                    the others connect and wait in the fence, for ever
 *   hang [R]         every PE (but R) waits for a signal; R finalizes and exits 0
 *   fencewait R      every PE but R waits in a fence that R never joins; R
 *                    waits for a signal (R is stuck in a collective that the
 *                    others never called, and they wait in shmem_finalize)
 *   waitgo           every PE waits for the file $LAUNCHER_TEST_DIR/go, then
 *                    joins a fence and finalizes
 *   term             on SIGTERM a PE writes term.RANK and exits 0
 *   args ...         prints "RANK:" then its arguments, each in [brackets]
 * Exit status 10+ means the PE itself found something wrong. */
#include <errno.h>
#include <fcntl.h>
#include <pmix.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <unistd.h>

static pmix_proc_t me;

static void touch(const char *what, const char *content)
{
    const char *dir = getenv("LAUNCHER_TEST_DIR");
    char path[4096];
    if (dir == NULL)
        return;
    snprintf(path, sizeof(path), "%s/%s.%u", dir, what, me.rank);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        return;
    ssize_t rc = write(fd, content, strlen(content));
    (void)rc;
    close(fd);
}

static void on_term(int sig)
{
    (void)sig;
    touch("term", "1");
    _exit(0);
}

static _Noreturn void wait_for_signal(void)
{
    for (;;)
        pause();
}

/* Waits up to 60 s for the test to create $LAUNCHER_TEST_DIR/go. */
static int wait_for_go(void)
{
    const char *dir = getenv("LAUNCHER_TEST_DIR");
    char path[4096];
    snprintf(path, sizeof(path), "%s/go", dir != NULL ? dir : ".");
    for (int i = 0; i < 3000; i++) {
        if (access(path, F_OK) == 0)
            return 0;
        usleep(20000);
    }
    fprintf(stderr, "PE %u: no %s after 60 s\n", me.rank, path);
    return -1;
}

static int get_u32(const pmix_proc_t *who, const char *key, uint32_t *out)
{
    pmix_value_t *v = NULL;
    pmix_status_t rc = PMIx_Get(who, key, NULL, 0, &v);
    if (rc != PMIX_SUCCESS) {
        fprintf(stderr, "PE %u: PMIx_Get(%s): %s\n", me.rank, key, PMIx_Error_string(rc));
        return -1;
    }
    int ok = 0;
    if (v->type == PMIX_UINT32)
        *out = v->data.uint32;
    else if (v->type == PMIX_UINT16)
        *out = v->data.uint16;
    else if (v->type == PMIX_PROC_RANK)
        *out = v->data.rank;
    else
        ok = -1;
    PMIX_VALUE_RELEASE(v);
    return ok;
}

static int fence(void)
{
    pmix_proc_t all;
    pmix_info_t info;
    bool collect = true;
    PMIX_LOAD_PROCID(&all, me.nspace, PMIX_RANK_WILDCARD);
    PMIX_INFO_LOAD(&info, PMIX_COLLECT_DATA, &collect, PMIX_BOOL);
    pmix_status_t rc = PMIx_Fence(&all, 1, &info, 1);
    PMIX_INFO_DESTRUCT(&info);
    if (rc != PMIX_SUCCESS)
        fprintf(stderr, "PE %u: PMIx_Fence: %s\n", me.rank, PMIx_Error_string(rc));
    return rc == PMIX_SUCCESS ? 0 : -1;
}

/* What every PE of a job started by oshrun must see. */
static int check(uint32_t want_size)
{
    pmix_proc_t job;
    uint32_t size = 0, lsize = 0, lrank = 0;
    PMIX_LOAD_PROCID(&job, me.nspace, PMIX_RANK_WILDCARD);
    if (get_u32(&job, PMIX_JOB_SIZE, &size) || get_u32(&job, PMIX_LOCAL_SIZE, &lsize) ||
        get_u32(&me, PMIX_LOCAL_RANK, &lrank))
        return 11;
    if (size != want_size || lsize != want_size || me.rank >= size || lrank != me.rank) {
        fprintf(stderr, "PE %u: size %u local size %u local rank %u, wanted size %u\n", me.rank,
                size, lsize, lrank, want_size);
        return 12;
    }
    /* Several rounds, each with a fresh key, as the bootstrap's allgather
     * does. Five-character keys: PMIx 4.2's default shared-memory store loses
     * such keys after the first fence about half the time (oshrun selects
     * the hash store instead); six rounds make that loss near certain. */
    for (int round = 0; round < 6; round++) {
        char key[32];
        snprintf(key, sizeof(key), "card%d", round);
        pmix_value_t val;
        uint64_t mine = 1000u * (unsigned)round + me.rank;
        PMIX_VALUE_LOAD(&val, &mine, PMIX_UINT64);
        if (PMIx_Put(PMIX_GLOBAL, key, &val) != PMIX_SUCCESS || PMIx_Commit() != PMIX_SUCCESS ||
            fence() != 0)
            return 13;
        for (uint32_t r = 0; r < size; r++) {
            pmix_proc_t peer;
            pmix_value_t *v = NULL;
            PMIX_LOAD_PROCID(&peer, me.nspace, r);
            pmix_status_t rc = PMIx_Get(&peer, key, NULL, 0, &v);
            bool ok = rc == PMIX_SUCCESS && v->type == PMIX_UINT64 &&
                      v->data.uint64 == 1000u * (unsigned)round + r;
            if (rc == PMIX_SUCCESS)
                PMIX_VALUE_RELEASE(v);
            if (!ok) {
                fprintf(stderr, "PE %u: %s of PE %u: %s\n", me.rank, key, r,
                        rc == PMIX_SUCCESS ? "wrong value" : PMIx_Error_string(rc));
                return 14;
            }
        }
    }
    return 0;
}

/* One write per line, so that lines of different PEs do not mix. */
static int print_affinity(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof(set), &set) != 0) {
        fprintf(stderr, "PE %u: sched_getaffinity: %s\n", me.rank, strerror(errno));
        return 16;
    }
    char line[8192];
    size_t len = (size_t)snprintf(line, sizeof(line), "%u:", me.rank);
    const char *sep = "";
    for (int cpu = 0; cpu < CPU_SETSIZE && len < sizeof(line); cpu++) {
        if (CPU_ISSET(cpu, &set)) {
            len += (size_t)snprintf(line + len, sizeof(line) - len, "%s%d", sep, cpu);
            sep = ",";
        }
    }
    printf("%s\n", line);
    return 0;
}

/* Forks a helper that leaves this process group, seizes this PE with ptrace
 * and then sleeps without ever waiting for it: the PE's death is reported to
 * the helper, not to oshrun, until the helper exits. Only async-signal-safe
 * calls in the child: PMIx threads exist. */
static void hold_under_ptrace(void)
{
    int ready[2];
    pid_t pe = getpid();
    char ok = 0;
    if (pipe(ready) != 0)
        return;
    pid_t helper = fork();
    if (helper == 0) {
        setsid(); /* out of reach of oshrun's signals to the PE's group */
        ok = ptrace(PTRACE_SEIZE, pe, NULL, NULL) == 0;
        ssize_t rc = write(ready[1], &ok, 1);
        (void)rc;
        if (ok)
            sleep(30);
        _exit(0);
    }
    if (helper > 0 && read(ready[0], &ok, 1) == 1 && ok) {
        char pid[32];
        snprintf(pid, sizeof(pid), "%d\n", (int)helper);
        touch("tracer", pid);
    } else {
        touch("untraceable", "1");
    }
    close(ready[0]);
    close(ready[1]);
}

static long arg(char **argv, int argc, int i)
{
    return i < argc ? strtol(argv[i], NULL, 10) : -1;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "check";
    long target = arg(argv, argc, 2), value = arg(argv, argc, 3);
    if (strcmp(mode, "term") == 0)
        signal(SIGTERM, on_term);
    if (strcmp(mode, "stubborn") == 0 || strcmp(mode, "spin") == 0 ||
        strcmp(mode, "traced") == 0)
        signal(SIGTERM, SIG_IGN);
    if (strcmp(mode, "fence") == 0) {
        sigset_t term;
        sigemptyset(&term);
        sigaddset(&term, SIGTERM);
        sigprocmask(SIG_BLOCK, &term, NULL);
    }

    if (strcmp(mode, "noinit") == 0) {
        /* The rank from the launcher's environment, as such a program would
         * read it: there is no PMIx connection to ask. */
        const char *rank = getenv("PMIX_RANK");
        if (rank != NULL && strtol(rank, NULL, 10) == target) {
            usleep((useconds_t)(value > 0 ? value * 1000 : 0));
            return 0;
        }
    }

    pmix_status_t rc = PMIx_Init(&me, NULL, 0);
    if (rc != PMIX_SUCCESS) {
        fprintf(stderr, "PMIx_Init: %s\n", PMIx_Error_string(rc));
        return 10;
    }
    char pid[32];
    snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
    touch("pid", pid);
    if (strcmp(mode, "traced") == 0 && (long)me.rank != target)
        hold_under_ptrace(); /* before the fence, after which the target exits */
    if (fence() != 0)
        return 13;
    touch("ready", "1");

    bool chosen = (long)me.rank == target;
    int code = 0;
    if (strcmp(mode, "check") == 0) {
        code = check((uint32_t)target);
    } else if (strcmp(mode, "args") == 0) {
        /* One write per line, so that lines of different PEs do not mix. */
        char line[4096];
        size_t len = (size_t)snprintf(line, sizeof(line), "%u:", me.rank);
        for (int i = 2; i < argc && len < sizeof(line); i++)
            len += (size_t)snprintf(line + len, sizeof(line) - len, "[%s]", argv[i]);
        printf("%s\n", line);
    } else if (strcmp(mode, "exit") == 0 || strcmp(mode, "stubborn") == 0) {
        if (chosen)
            _exit((int)value);
        wait_for_signal();
    } else if (strcmp(mode, "spin") == 0 || strcmp(mode, "traced") == 0) {
        if (chosen)
            _exit((int)value);
        for (volatile unsigned long i = 0;; i++)
            ;
    } else if (strcmp(mode, "fence") == 0) {
        if (chosen)
            _exit((int)value);
        fence();
        wait_for_signal();
    } else if (strcmp(mode, "fencewait") == 0) {
        if (!chosen)
            fence();
        wait_for_signal();
    } else if (strcmp(mode, "waitgo") == 0) {
        code = wait_for_go() != 0 || fence() != 0 ? 17 : 0;
    } else if (strcmp(mode, "affinity") == 0) {
        code = print_affinity();
    } else if (strcmp(mode, "signal") == 0) {
        if (chosen)
            raise((int)value);
        wait_for_signal();
    } else if (strcmp(mode, "abort") == 0) {
        if (chosen)
            PMIx_Abort((int)value, "launcher test abort", NULL, 0);
        wait_for_signal();
    } else if (strcmp(mode, "early") == 0) {
        if (chosen)
            _exit(0);
        usleep(200000);
    } else if (strcmp(mode, "hang") == 0 || strcmp(mode, "term") == 0) {
        if (chosen) {
            PMIx_Finalize(NULL, 0);
            _exit(0);
        }
        wait_for_signal();
    } else {
        fprintf(stderr, "launcher_pe: unknown mode %s\n", mode);
        code = 15;
    }
    fflush(stdout);
    PMIx_Finalize(NULL, 0);
    return code;
}
