/* oshrun: starts an OpenSHMEM job.
 *
 * On one node it is a small PMIx server: it registers one namespace, forks the
 * PEs with the PMIx connection variables in their environment, answers their
 * fences and aborts, forwards SIGINT/SIGTERM/SIGHUP, kills the rest of the job
 * when one PE fails and exits with the first failure's code. With --launcher it
 * hands the whole job to an existing engine (mpirun, prterun, srun) instead.
 *
 * Each PE runs in its own process group, so that ending it also ends what it
 * started; PE 0 keeps stdin unless it is a terminal, the others read
 * /dev/null. Nothing outlives the job: PMIx's files live in a private
 * directory under $TMPDIR, removed at exit; a PE gets SIGKILL when the launcher
 * dies (PR_SET_PDEATHSIG: the PE process itself, not what it started); the
 * shared-memory files that libfabric's shm provider names after a PE's pid
 * are removed once the job has ended (see remove_pe_shm).
 *
 * Threads: PMIx calls the module below from its progress thread; everything
 * else (children, signals, timers) runs in the main thread, which learns of an
 * abort through a pipe. Signals are blocked before PMIx starts its threads and
 * read through a signalfd, so no handler ever runs; only the main thread reads
 * it, at every stage: the calls that start and stop the PMIx server, which
 * libpmix can hang in, run on a helper thread that oshrun leaves behind when a
 * signal or a deadline comes first (see run_bounded), and a crash in any
 * thread is caught to kill the PEs and remove the directory (on_crash).
 *
 * Security: the namespace, which a client names to join the job, is a random
 * token, and oshrun_gate.c admits only connections of oshrun's own user. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <pmix.h>
#include <pmix_server.h>

#include "../src/common/names.h"
#include "oshrun_gate.h"
#include "ushmem_config.h"

#define EXIT_USAGE 2
#define EXIT_TIMEOUT 124
#define EXIT_NOEXEC 126
#define EXIT_NOTFOUND 127
#define MAX_PES 4096
/* Once the job is ending, a PE has this long to exit on SIGTERM before it
 * gets SIGKILL; then oshrun waits at most REAP_GRACE_MS for the killed PEs to
 * be reaped (a PE inside a driver call or held by a debugger can take long to
 * die) and exits anyway, naming them. While ending, the PEs are reaped every
 * REAP_POLL_MS whether or not SIGCHLD arrives. */
#define KILL_GRACE_MS 3000
#define REAP_GRACE_MS 2000
#define REAP_POLL_MS 100
/* PMIx_server_finalize gets this long; libpmix 4.2 can hang in it, or
 * crash, after PEs died inside a fence (its progress thread locks a mutex
 * of an object already freed), and oshrun exits without it. */
#define FINALIZE_GRACE_MS 1000

extern char **environ;

struct options {
    int npes;
    double timeout_s;           /* 0: none */
    const char *launcher;       /* NULL: the built-in PMIx server */
    const char **engine_args;   /* options passed through to the engine */
    int n_engine_args;
    const char **exports;       /* -x VAR pairs, for mpirun and prterun */
    int n_exports;
    char **prog_argv;           /* the program and its arguments */
    const char *bind_to;        /* core or none, from --bind-to or $OSHRUN_BIND */
    const char *bind_from;      /* which of them (or "the default") */
};

struct pe {
    int rank;
    pid_t pid;                  /* 0: not started or reaped */
    pid_t pgid;                 /* its process group, kept after reaping */
    int cpu;                    /* the CPU it is bound to, -1: not bound */
    pmix_proc_t proc;
    /* Set by the PMIx thread: the PE connected (called PMIx_Init) and
     * finalized. A PE that connected and exits 0 without finalizing leaves
     * its peers waiting for it, so it counts as a failure. */
    _Atomic bool connected, finalized;
    /* Set by the main thread: the PE exited 0 without having connected, as
     * a program does that returns before shmem_init (gone_pid: the pid it
     * had). A PE that connects then waits in shmem_init for it forever. */
    _Atomic bool left_unjoined;
    pid_t gone_pid;
};

/* What ended the job first; written by the PMIx thread (abort) or the main
 * thread (child exit, timeout), hence the lock. */
struct failure {
    pthread_mutex_t lock;
    bool set;
    int code;
    char what[512];
};

struct job {
    char nspace[PMIX_MAX_NSLEN + 1];
    char tmpdir[PATH_MAX];
    char hostname[256];
    char *prog_path;
    int npes;
    int running;
    struct pe *pes;
    int abort_pipe[2];          /* PMIx thread -> main thread: "an abort arrived" */
    int sigfd;
    struct failure fail;
    bool stopping; /* a signal was forwarded: PEs may exit 0 without finalizing */
    bool debug;    /* OSHRUN_DEBUG or SHMEM_DEBUG: say what was decided */
    bool server_up; /* PMIx_server_init succeeded: finalize it */
    cpu_set_t *bind_set; /* scratch for the child's affinity, bind_setsize bytes */
    size_t bind_setsize;
};

static struct job g_job = {
    .fail = {.lock = PTHREAD_MUTEX_INITIALIZER},
    .abort_pipe = {-1, -1},
    .sigfd = -1,
};

/* For the crash handler, which may take no lock: the job's exit status once
 * it is known (the first failure's, then the final one), else -1; and
 * whether the line saying why has been printed. */
static volatile sig_atomic_t g_known_code = -1, g_reason_printed;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: oshrun [-n|-np N] [--timeout S] [--bind-to core|none]\n"
            "              [--launcher mpirun|prterun|srun] [-x VAR]... program [args...]\n"
            "  -n, -np N        number of PEs (default 1)\n"
            "  --timeout S      end the job after S seconds (exit status 124)\n"
            "  --bind-to B      core: bind PE i to the i-th CPU that oshrun may run on\n"
            "                   (round robin); none: leave the PEs unbound (default\n"
            "                   $OSHRUN_BIND, else core)\n"
            "  --launcher L     hand the job to mpirun, prterun or srun (several nodes);\n"
            "                   other options before the program are passed to it\n"
            "  -x VAR           export VAR to the PEs (for mpirun; locally the whole\n"
            "                   environment is inherited)\n"
            "  -h, --help       this text\n"
            "  -V, --version    say which OpenSHMEM this oshrun belongs to (ushmem %s)\n"
            "Without --launcher, oshrun runs every PE on this node under its own PMIx\n"
            "server. It exits 0 when every PE exits 0, otherwise with the first\n"
            "failure's status (128+N for signal N); PEs still running then get SIGTERM,\n"
            "and SIGKILL %d s later. OSHRUN_DEBUG=1 (or SHMEM_DEBUG=1) says what oshrun\n"
            "decided, such as each PE's CPU; OSHRUN_TIMEOUT_SCALE=F multiplies --timeout.\n",
            USHMEM_VERSION_STRING, KILL_GRACE_MS / 1000);
}

static void die_usage(const char *fmt, ...)
{
    va_list ap;
    fputs("oshrun: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputs(" (try --help)\n", stderr);
    exit(EXIT_USAGE);
}

/* ---- command line ---- */

/* The variables oshrun reads. Another OSHRUN_ one is a typo or a stale
 * setting that would be ignored in silence: warn_unknown_vars says so, as
 * the library does for SHMEM_ and USHMEM_ ones. */
static const char *const known_vars[] = {"OSHRUN_BIND", "OSHRUN_DEBUG", "OSHRUN_TIMEOUT_SCALE"};
#define N_KNOWN_VARS (sizeof(known_vars) / sizeof(known_vars[0]))

static void warn_unknown_vars(void)
{
    for (char **e = environ; *e != NULL; e++) {
        if (strncmp(*e, "OSHRUN_", 7) != 0)
            continue;
        size_t len = strcspn(*e, "="), best_distance = USHMEMI_NAME_FAR;
        const char *best = NULL;
        for (size_t i = 0; i < N_KNOWN_VARS; i++) {
            size_t d = ushmemi_name_distance(*e, len, known_vars[i]);
            if (d < best_distance) {
                best_distance = d;
                best = known_vars[i];
            }
        }
        if (best_distance == 0)
            continue;
        if (best != NULL)
            fprintf(stderr, "oshrun: warning: unknown variable %.*s is ignored; did you mean %s? "
                            "(oshrun --help lists the known ones)\n", (int)len, *e, best);
        else
            fprintf(stderr, "oshrun: warning: unknown variable %.*s is ignored (oshrun --help "
                            "lists the known ones)\n", (int)len, *e);
    }
}

static int parse_npes(const char *s)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < 1 || v > MAX_PES)
        die_usage("invalid PE count '%s': expected 1 to %d", s, MAX_PES);
    return (int)v;
}

static double parse_timeout(const char *s)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno != 0 || end == s || *end != '\0' || !(v > 0) || v > 1e7)
        die_usage("invalid timeout '%s': expected a positive number of seconds", s);
    return v;
}

/* Options of the engines that take a value: with --launcher, their value is
 * passed on with them rather than taken for the program. */
static int engine_option_values(const char *opt)
{
    static const char *const one[] = {"--hostfile", "-hostfile", "--machinefile", "-machinefile",
                                      "--host", "-host", "-H", "--map-by", "--bind-to",
                                      "--rank-by", "--npernode", "-npernode", "-N", "--prefix",
                                      "--nodes", "--partition", "-p", "--account", "-A",
                                      "--ntasks-per-node", "--cpus-per-task", "--wdir",
                                      "--personality", "--output-filename", NULL};
    if (strcmp(opt, "--mca") == 0 || strcmp(opt, "-mca") == 0 || strcmp(opt, "--gmca") == 0)
        return 2;
    for (int i = 0; one[i] != NULL; i++)
        if (strcmp(opt, one[i]) == 0)
            return 1;
    return 0;
}

static void parse_args(int argc, char **argv, struct options *o)
{
    /* -x values and engine options can at most be all of argv. */
    o->engine_args = calloc((size_t)argc + 1, sizeof(*o->engine_args));
    o->exports = calloc((size_t)argc + 1, sizeof(*o->exports));
    const char **unknown = calloc((size_t)argc + 1, sizeof(*unknown));
    int n_unknown = 0;
    if (o->engine_args == NULL || o->exports == NULL || unknown == NULL) {
        fputs("oshrun: out of memory\n", stderr);
        exit(1);
    }
    o->npes = 1;
    int i = 1;
    for (; i < argc && argv[i][0] == '-'; i++) {
        const char *a = argv[i];
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--") == 0) {
            i++;
            break;
        } else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(stdout);
            exit(0);
        } else if (strcmp(a, "--version") == 0 || strcmp(a, "-V") == 0) {
            /* Open MPI's oshrun answers "oshrun (OpenRTE) 4.1.4". */
            printf("oshrun (ushmem) %s\n", USHMEM_VERSION_STRING);
            exit(0);
        } else if (strcmp(a, "-n") == 0 || strcmp(a, "-np") == 0 || strcmp(a, "--np") == 0 ||
                   strcmp(a, "-c") == 0) {
            if (val == NULL)
                die_usage("%s needs a PE count", a);
            o->npes = parse_npes(val);
            i++;
        } else if (strncmp(a, "--np=", 5) == 0) {
            o->npes = parse_npes(a + 5);
        } else if (strcmp(a, "--timeout") == 0) {
            if (val == NULL)
                die_usage("--timeout needs a number of seconds");
            o->timeout_s = parse_timeout(val);
            i++;
        } else if (strncmp(a, "--timeout=", 10) == 0) {
            o->timeout_s = parse_timeout(a + 10);
        } else if (strcmp(a, "--launcher") == 0 || strncmp(a, "--launcher=", 11) == 0) {
            const char *l = a[10] == '=' ? a + 11 : val;
            if (l == NULL)
                die_usage("--launcher needs mpirun, prterun or srun");
            if (strcmp(l, "mpirun") != 0 && strcmp(l, "prterun") != 0 && strcmp(l, "srun") != 0)
                die_usage("unknown launcher '%s': expected mpirun, prterun or srun", l);
            o->launcher = l;
            if (a[10] != '=')
                i++;
        } else if (strcmp(a, "--bind-to") == 0 || strncmp(a, "--bind-to=", 10) == 0) {
            /* Ours without --launcher; the engine's (any of its values)
             * with it, which may come later on the line. */
            const char *b = a[9] == '=' ? a + 10 : val;
            if (b == NULL)
                die_usage("--bind-to needs core or none");
            o->bind_to = b;
            unknown[n_unknown++] = a;
            if (a[9] != '=')
                unknown[n_unknown++] = argv[++i];
        } else if (strcmp(a, "-x") == 0) {
            if (val == NULL)
                die_usage("-x needs a variable name");
            o->exports[o->n_exports++] = a;
            o->exports[o->n_exports++] = val;
            i++;
        } else if (strcmp(a, "--allow-run-as-root") == 0 || strcmp(a, "--oversubscribe") == 0) {
            /* Accepted so that an mpirun command line works unchanged; the
             * local launcher needs neither, and the engines get them anyway. */
        } else {
            /* Possibly an engine option; only legal with --launcher, which
             * may come later on the line, so decide after the loop. */
            unknown[n_unknown++] = a;
            int nv = engine_option_values(a);
            for (int k = 0; k < nv && i + 1 < argc; k++)
                unknown[n_unknown++] = argv[++i];
        }
    }
    if (o->launcher == NULL) {
        for (int k = 0; k < n_unknown; k++)
            if (strcmp(unknown[k], "--bind-to") == 0)
                k++;
            else if (strncmp(unknown[k], "--bind-to=", 10) != 0)
                die_usage("unknown option '%s'", unknown[k]);
        n_unknown = 0;
        if (o->bind_to != NULL) {
            o->bind_from = "--bind-to";
        } else if ((o->bind_to = getenv("OSHRUN_BIND")) != NULL && o->bind_to[0] != '\0') {
            o->bind_from = "OSHRUN_BIND";
        } else {
            o->bind_to = "core";
            o->bind_from = "the default";
        }
        if (strcmp(o->bind_to, "core") != 0 && strcmp(o->bind_to, "none") != 0)
            die_usage("invalid %s '%s': expected core or none", o->bind_from, o->bind_to);
    }
    for (int k = 0; k < n_unknown; k++)
        o->engine_args[o->n_engine_args++] = unknown[k];
    free(unknown);
    if (i >= argc)
        die_usage("no program given");
    /* For runs everything is slower in (sanitizers, valgrind), without
     * editing every command line that names a timeout. */
    const char *scale = getenv("OSHRUN_TIMEOUT_SCALE");
    if (o->timeout_s > 0 && scale != NULL && scale[0] != '\0') {
        char *end;
        errno = 0;
        double f = strtod(scale, &end);
        if (errno != 0 || end == scale || *end != '\0' || !(f > 0) || f > 1000)
            die_usage("invalid OSHRUN_TIMEOUT_SCALE '%s': expected a factor above 0, at most 1000",
                      scale);
        o->timeout_s *= f;
    }
    o->prog_argv = &argv[i];
}

/* PMIx 4.2's shared-memory data store (gds ds21, its default for local
 * clients) loses values of some keys put in a second or later fence: a Get of
 * a peer's 4- or 5-character key then fails with NOT-FOUND, under this server
 * and under mpirun alike. The hash store hands every PE the whole collected
 * blob instead. The PEs inherit the setting; one the user made is kept. */
static void prefer_hash_store(void)
{
    setenv("PMIX_MCA_gds", "hash", 0);
}

/* CUDA loads a program's kernels lazily by default, and loading one may wait
 * for the GPU to go idle: a kernel spinning on a device call that the proxy
 * thread carries (a copy or the proxy's atomic kernel) would then never let
 * the next kernel load, nor the proxy's work run. Eager loading, as NVSHMEM
 * also asks for, avoids that; a setting the user made is kept. */
static void prefer_eager_cuda_loading(void)
{
    setenv("CUDA_MODULE_LOADING", "EAGER", 0);
}

/* ---- hand-off to an existing engine ---- */

static _Noreturn void exec_engine(const struct options *o)
{
    int n_prog = 0;
    while (o->prog_argv[n_prog] != NULL)
        n_prog++;
    const char **av =
        calloc((size_t)(n_prog + o->n_engine_args + o->n_exports + 12), sizeof(*av));
    char npes[16], timeout[32];
    if (av == NULL) {
        fputs("oshrun: out of memory\n", stderr);
        exit(1);
    }
    snprintf(npes, sizeof(npes), "%d", o->npes);
    int k = 0;
    av[k++] = o->launcher;
    prefer_eager_cuda_loading();
    if (strcmp(o->launcher, "srun") == 0) {
        /* The PEs reach Slurm's PMIx plugin; srun limits time in minutes
         * and exports the whole environment by default, so -x is dropped. */
        av[k++] = "--mpi=pmix";
        if (o->timeout_s > 0) {
            snprintf(timeout, sizeof(timeout), "--time=%ld", (long)((o->timeout_s + 59) / 60));
            av[k++] = timeout;
        }
    } else {
        prefer_hash_store();
        if (geteuid() == 0)
            av[k++] = "--allow-run-as-root";
        if (strcmp(o->launcher, "mpirun") == 0)
            av[k++] = "--oversubscribe";
        if (o->timeout_s > 0) {
            snprintf(timeout, sizeof(timeout), "%ld", (long)(o->timeout_s + 0.999));
            av[k++] = "--timeout";
            av[k++] = timeout;
        }
    }
    av[k++] = "-n";
    av[k++] = npes;
    for (int j = 0; j < o->n_exports && strcmp(o->launcher, "srun") != 0; j++)
        av[k++] = o->exports[j];
    for (int j = 0; j < o->n_engine_args; j++)
        av[k++] = o->engine_args[j];
    for (int j = 0; j < n_prog; j++)
        av[k++] = o->prog_argv[j];
    av[k] = NULL;
    execvp(av[0], (char *const *)av);
    int err = errno;
    fprintf(stderr, "oshrun: cannot run %s: %s\n", av[0], strerror(err));
    exit(err == ENOENT ? EXIT_NOTFOUND : EXIT_NOEXEC);
}

/* ---- small utilities ---- */

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Resolves the program as execvp would, so that a missing program is reported
 * before any PE starts. Exits 127 (not found) or 126 (not executable). */
static char *resolve_program(const char *name)
{
    if (strchr(name, '/') != NULL) {
        if (access(name, X_OK) != 0) {
            int err = errno;
            fprintf(stderr, "oshrun: %s: %s\n", name, strerror(err));
            exit(err == ENOENT || err == ENOTDIR ? EXIT_NOTFOUND : EXIT_NOEXEC);
        }
        return strdup(name);
    }
    const char *path = getenv("PATH");
    if (path == NULL)
        path = "/usr/local/bin:/usr/bin:/bin";
    size_t nlen = strlen(name);
    for (const char *p = path;; p++) {
        const char *end = strchrnul(p, ':');
        size_t dlen = (size_t)(end - p);
        char *full = malloc(dlen + nlen + 3);
        if (full == NULL)
            break;
        snprintf(full, dlen + nlen + 3, "%.*s/%s", (int)dlen, dlen ? p : ".", name);
        struct stat st;
        if (stat(full, &st) == 0 && S_ISREG(st.st_mode) && access(full, X_OK) == 0)
            return full;
        free(full);
        p = end;
        if (*end == '\0')
            break;
    }
    fprintf(stderr, "oshrun: %s: command not found\n", name);
    exit(EXIT_NOTFOUND);
}

/* Removes the tree `name` under dirfd without following links, with only
 * async-signal-safe calls, so that the crash handler can use it too.
 * Entries are deleted in passes, each from a fresh read of the directory:
 * a directory changed while being read may skip entries. */
static void remove_tree_at(int dirfd, const char *name, int depth)
{
    int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        unlinkat(dirfd, name, 0);
        return;
    }
    for (int pass = 0; pass < 64 && depth < 16; pass++) {
        /* getdents64 fills whole records; aligned for their 64-bit fields. */
        _Alignas(8) char buf[4096];
        bool removed = false;
        long n;
        lseek(fd, 0, SEEK_SET);
        while ((n = syscall(SYS_getdents64, fd, buf, sizeof(buf))) > 0) {
            for (long off = 0; off < n;) {
                const struct dirent64 *d = (const struct dirent64 *)(buf + off);
                off += d->d_reclen;
                if (strcmp(d->d_name, ".") == 0 || strcmp(d->d_name, "..") == 0)
                    continue;
                if (unlinkat(fd, d->d_name, 0) != 0 && errno == EISDIR)
                    remove_tree_at(fd, d->d_name, depth + 1);
                removed = true;
            }
        }
        if (!removed)
            break;
    }
    close(fd);
    unlinkat(dirfd, name, AT_REMOVEDIR);
}

static void remove_tmpdir(struct job *job)
{
    if (job->tmpdir[0] != '\0')
        remove_tree_at(AT_FDCWD, job->tmpdir, 0);
    job->tmpdir[0] = '\0';
}

/* libfabric's shm provider keeps each endpoint's region in a file named
 * after the process's pid: /dev/shm/<pid>:<n>:<n> by default, and
 * /dev/shm/ushmem-<pid>-<32 hex digits> as ushmem names it
 * (src/transport/ofi_addr.c). A PE unlinks its own
 * at exit and on fatal signals it can catch, but one killed by SIGKILL (by
 * the OOM killer, by a user, or by us when it ignored SIGTERM) leaves it,
 * 16 MiB each, for good. Once every PE has been reaped, the files named
 * after one of our PEs' pids in that pattern and owned by us are its
 * leftovers; nothing else in /dev/shm is touched. (A pid reused in the
 * moment between the reaping and this sweep could lose its file; the
 * window is microseconds and the process would be ours, same uid.) */
static bool is_pe_shm_name(const struct job *job, const char *name)
{
    static const char ours[] = "ushmem-";
    bool ushmem = strncmp(name, ours, sizeof(ours) - 1) == 0;
    if (ushmem)
        name += sizeof(ours) - 1;
    char *end;
    errno = 0;
    long pid = strtol(name, &end, 10);
    if (errno != 0 || end == name || name[0] == '-' || name[0] == '+' ||
        *end != (ushmem ? '-' : ':'))
        return false;
    if (ushmem) {
        if (strlen(end + 1) != 32 || strspn(end + 1, "0123456789abcdef") != 32)
            return false;
    } else {
        int colons = 0;
        for (const char *p = end; *p != '\0'; p++) {
            if (*p == ':' && p[1] >= '0' && p[1] <= '9')
                colons++;
            else if (*p < '0' || *p > '9')
                return false;
        }
        if (colons != 2)
            return false;
    }
    for (int i = 0; i < job->npes; i++)
        if (job->pes[i].pgid > 0 && job->pes[i].pgid == pid)
            return true;
    return false;
}

static void remove_pe_shm(const struct job *job)
{
    DIR *d = opendir("/dev/shm");
    if (d == NULL)
        return;
    uid_t me = geteuid();
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        struct stat st;
        if (!is_pe_shm_name(job, e->d_name) ||
            fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode) ||
            st.st_uid != me)
            continue;
        if (unlinkat(dirfd(d), e->d_name, 0) == 0)
            fprintf(stderr, "oshrun: removed /dev/shm/%s, left by a PE that did not exit "
                            "cleanly\n", e->d_name);
    }
    closedir(d);
}

/* Records the first reason the job failed; later ones are consequences. */
static bool record_failure(struct job *job, int code, const char *fmt, ...)
{
    bool first;
    pthread_mutex_lock(&job->fail.lock);
    first = !job->fail.set;
    if (first) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(job->fail.what, sizeof(job->fail.what), fmt, ap);
        va_end(ap);
        job->fail.set = true;
        job->fail.code = code;
        g_known_code = code;
    }
    pthread_mutex_unlock(&job->fail.lock);
    return first;
}

/* Copies the failure out under the lock; false if there is none yet. */
static bool failure_get(struct job *job, int *code_p, char *what, size_t len)
{
    pthread_mutex_lock(&job->fail.lock);
    bool set = job->fail.set;
    if (set) {
        *code_p = job->fail.code;
        snprintf(what, len, "%s", job->fail.what);
    }
    pthread_mutex_unlock(&job->fail.lock);
    return set;
}

/* ---- the PMIx server module (runs in PMIx's progress thread) ---- */

static struct pe *pe_by_rank(pmix_rank_t rank)
{
    return rank < (pmix_rank_t)g_job.npes ? &g_job.pes[rank] : NULL;
}

/* PE `gone` exited 0 before joining the job and PE `waiting` has joined:
 * the collective in shmem_init can never complete. Whichever thread sees
 * the second of the two events records it (both may: the first wins);
 * true if this call recorded the job's failure. */
static bool record_unjoined(struct job *job, const struct pe *gone, const struct pe *waiting)
{
    return record_failure(job, 1,
                          "PE %d (pid %d) exited with status 0 before calling shmem_init, while "
                          "PE %d waits in it; its peers would wait for it forever",
                          gone->rank, (int)gone->gone_pid, waiting->rank);
}

static struct pe *first_unjoined(struct job *job)
{
    for (int i = 0; i < job->npes; i++)
        if (job->pes[i].left_unjoined)
            return &job->pes[i];
    return NULL;
}

static pmix_status_t on_connected(const pmix_proc_t *proc, void *server_object,
                                  pmix_op_cbfunc_t cbfunc, void *cbdata)
{
    (void)server_object;
    struct pe *pe = pe_by_rank(proc->rank);
    if (pe != NULL) {
        pe->connected = true;
        /* After the store above: the main thread, which sets left_unjoined
         * and then looks for connected PEs, or this, sees both. */
        struct pe *gone = first_unjoined(&g_job);
        if (gone != NULL && record_unjoined(&g_job, gone, pe)) {
            char c = 'u';
            ssize_t rc = write(g_job.abort_pipe[1], &c, 1);
            (void)rc; /* the pipe only wakes the main thread */
        }
    }
    /* A client got in without oshrun's accept: this libpmix does not call
     * accept through the dynamic linker, and nobody checks who connects. */
    static atomic_bool warned;
    if (oshrun_gate_admitted() == 0 && !atomic_exchange(&warned, true))
        fprintf(stderr, "oshrun: warning: this PMIx library accepts connections without "
                        "oshrun's check of the connecting user\n");
    if (cbfunc != NULL)
        cbfunc(PMIX_SUCCESS, cbdata);
    return PMIX_SUCCESS;
}

static pmix_status_t on_finalized(const pmix_proc_t *proc, void *server_object,
                                  pmix_op_cbfunc_t cbfunc, void *cbdata)
{
    (void)server_object;
    struct pe *pe = pe_by_rank(proc->rank);
    if (pe != NULL)
        pe->finalized = true;
    /* The client waits in PMIx_Finalize until this is called. */
    if (cbfunc != NULL)
        cbfunc(PMIX_SUCCESS, cbdata);
    return PMIX_SUCCESS;
}

static pmix_status_t on_abort(const pmix_proc_t *proc, void *server_object, int status,
                              const char msg[], pmix_proc_t procs[], size_t nprocs,
                              pmix_op_cbfunc_t cbfunc, void *cbdata)
{
    (void)server_object, (void)procs, (void)nprocs;
    /* Recorded before the client is released, so that its own exit, which
     * may follow at once, is not taken for the cause. The whole job ends
     * whatever procs says: one node runs one job. */
    if (record_failure(&g_job, status, "PE %u called abort with status %d%s%s", proc->rank,
                       status, msg != NULL && msg[0] != '\0' ? ": " : "",
                       msg != NULL ? msg : "")) {
        char c = 'a';
        ssize_t rc = write(g_job.abort_pipe[1], &c, 1);
        (void)rc; /* the pipe only wakes the main thread; one byte is enough */
    }
    if (cbfunc != NULL)
        cbfunc(PMIX_SUCCESS, cbdata);
    return PMIX_SUCCESS;
}

static void release_copy(void *cbdata)
{
    free(cbdata);
}

static pmix_status_t on_fence(const pmix_proc_t procs[], size_t nprocs,
                              const pmix_info_t info[], size_t ninfo, char *data, size_t ndata,
                              pmix_modex_cbfunc_t cbfunc, void *cbdata)
{
    (void)procs, (void)nprocs, (void)info, (void)ninfo;
    /* One node: the server library has already gathered every participant's
     * data, so the collective is complete; hand the blob back. It is copied
     * because the library may use it after this call returns. */
    char *copy = NULL;
    if (ndata > 0) {
        copy = malloc(ndata);
        if (copy == NULL)
            return PMIX_ERR_NOMEM;
        memcpy(copy, data, ndata);
    }
    cbfunc(PMIX_SUCCESS, copy, ndata, cbdata, release_copy, copy);
    return PMIX_SUCCESS;
}

static pmix_status_t on_direct_modex(const pmix_proc_t *proc, const pmix_info_t info[],
                                     size_t ninfo, pmix_modex_cbfunc_t cbfunc, void *cbdata)
{
    (void)proc, (void)info, (void)ninfo, (void)cbfunc, (void)cbdata;
    /* Every PE is local, so the library holds all data it could ask for. */
    return PMIX_ERR_NOT_SUPPORTED;
}

static pmix_server_module_t server_module = {
    .client_connected = on_connected,
    .client_finalized = on_finalized,
    .abort = on_abort,
    .fence_nb = on_fence,
    .direct_modex = on_direct_modex,
};

/* ---- waiting for PMIx's non-blocking registration calls ---- */

struct op_wait {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool done;
    pmix_status_t status;
};

static void op_done(pmix_status_t status, void *cbdata)
{
    struct op_wait *w = cbdata;
    pthread_mutex_lock(&w->lock);
    w->status = status;
    w->done = true;
    pthread_cond_signal(&w->cond);
    pthread_mutex_unlock(&w->lock);
}

/* rc is what the call returned: PMIX_SUCCESS means the callback will come. */
static pmix_status_t op_wait_for(struct op_wait *w, pmix_status_t rc)
{
    if (rc == PMIX_OPERATION_SUCCEEDED)
        return PMIX_SUCCESS;
    if (rc != PMIX_SUCCESS)
        return rc;
    pthread_mutex_lock(&w->lock);
    while (!w->done)
        pthread_cond_wait(&w->cond, &w->lock);
    rc = w->status;
    w->done = false;
    pthread_mutex_unlock(&w->lock);
    return rc;
}

/* ---- server setup ---- */

/* Creates oshrun's private directory (mode 0700) for PMIx's files. */
static int make_tmpdir(struct job *job)
{
    const char *base = getenv("TMPDIR");
    if (base == NULL || base[0] == '\0')
        base = "/tmp";
    char dir[sizeof(job->tmpdir)];
    snprintf(dir, sizeof(dir), "%s/oshrun.XXXXXX", base);
    if (mkdtemp(dir) == NULL) {
        fprintf(stderr, "oshrun: cannot create a directory in %s: %s\n", base, strerror(errno));
        return -1;
    }
    /* Complete before the crash handler may see it. */
    memcpy(job->tmpdir, dir, sizeof(dir));
    return 0;
}

static int server_start(struct job *job)
{
    oshrun_gate_init(geteuid(), job->debug);
    prefer_hash_store();
    prefer_eager_cuda_loading();
    pmix_info_t info[4];
    bool no = false, yes = true;
    PMIX_INFO_LOAD(&info[0], PMIX_SERVER_TMPDIR, job->tmpdir, PMIX_STRING);
    PMIX_INFO_LOAD(&info[1], PMIX_SYSTEM_TMPDIR, job->tmpdir, PMIX_STRING);
    PMIX_INFO_LOAD(&info[2], PMIX_SERVER_TOOL_SUPPORT, &no, PMIX_BOOL);
    /* The PEs connect over IPv4; a second listener is only more to guard. */
    PMIX_INFO_LOAD(&info[3], PMIX_TCP_DISABLE_IPV6, &yes, PMIX_BOOL);
    pmix_status_t rc = PMIx_server_init(&server_module, info, 4);
    for (int i = 0; i < 4; i++)
        PMIX_INFO_DESTRUCT(&info[i]);
    if (rc != PMIX_SUCCESS) {
        fprintf(stderr, "oshrun: PMIx_server_init failed: %s\n", PMIx_Error_string(rc));
        return -1;
    }
    job->server_up = true;
    return 0;
}

/* Adds one PE's entry (PMIX_PROC_DATA) to the job's info list. */
static pmix_status_t add_proc_data(void *list, const struct job *job, int rank)
{
    pmix_rank_t r = (pmix_rank_t)rank;
    uint16_t lrank = (uint16_t)rank;
    uint32_t zero = 0;
    pmix_data_array_t darray;
    void *pl = PMIx_Info_list_start();
    pmix_status_t rc = PMIX_ERR_NOMEM;
    if (pl == NULL)
        return rc;
    /* The rank must come first: it says whom the rest describes. */
    rc = PMIx_Info_list_add(pl, PMIX_RANK, &r, PMIX_PROC_RANK);
    if (rc == PMIX_SUCCESS)
        rc = PMIx_Info_list_add(pl, PMIX_LOCAL_RANK, &lrank, PMIX_UINT16);
    if (rc == PMIX_SUCCESS)
        rc = PMIx_Info_list_add(pl, PMIX_NODE_RANK, &lrank, PMIX_UINT16);
    if (rc == PMIX_SUCCESS)
        rc = PMIx_Info_list_add(pl, PMIX_GLOBAL_RANK, &r, PMIX_PROC_RANK);
    if (rc == PMIX_SUCCESS)
        rc = PMIx_Info_list_add(pl, PMIX_NODEID, &zero, PMIX_UINT32);
    if (rc == PMIX_SUCCESS)
        rc = PMIx_Info_list_add(pl, PMIX_APPNUM, &zero, PMIX_UINT32);
    if (rc == PMIX_SUCCESS)
        rc = PMIx_Info_list_add(pl, PMIX_HOSTNAME, job->hostname, PMIX_STRING);
    if (rc == PMIX_SUCCESS)
        rc = PMIx_Info_list_convert(pl, &darray);
    PMIx_Info_list_release(pl);
    if (rc != PMIX_SUCCESS)
        return rc;
    rc = PMIx_Info_list_add(list, PMIX_PROC_DATA, &darray, PMIX_DATA_ARRAY);
    PMIx_Data_array_destruct(&darray);
    return rc;
}

/* Builds "0,1,...,n-1". */
static char *rank_list(int n)
{
    size_t cap = (size_t)n * 6 + 1;
    char *s = malloc(cap);
    if (s == NULL)
        return NULL;
    size_t len = 0;
    s[0] = '\0';
    for (int i = 0; i < n; i++)
        len += (size_t)snprintf(s + len, cap - len, i ? ",%d" : "%d", i);
    return s;
}

static pmix_status_t add_job_info(void *list, const struct job *job)
{
    uint32_t size = (uint32_t)job->npes, one = 1, zero = 0;
    pmix_rank_t leader = 0;
    char *peers = rank_list(job->npes);
    char *node_map = NULL, *proc_map = NULL;
    pmix_status_t rc = PMIX_ERR_NOMEM;
    if (peers == NULL)
        return rc;
    rc = PMIx_generate_regex(job->hostname, &node_map);
    if (rc == PMIX_SUCCESS)
        rc = PMIx_generate_ppn(peers, &proc_map);
    if (rc == PMIX_SUCCESS)
        rc = PMIx_Info_list_add(list, PMIX_JOBID, job->nspace, PMIX_STRING);
    if (rc == PMIX_SUCCESS)
        rc = PMIx_Info_list_add(list, PMIX_UNIV_SIZE, &size, PMIX_UINT32);
    if (rc == PMIX_SUCCESS)
        rc = PMIx_Info_list_add(list, PMIX_JOB_SIZE, &size, PMIX_UINT32);
    if (rc == PMIX_SUCCESS)
        rc = PMIx_Info_list_add(list, PMIX_MAX_PROCS, &size, PMIX_UINT32);
    if (rc == PMIX_SUCCESS)
        rc = PMIx_Info_list_add(list, PMIX_APP_SIZE, &size, PMIX_UINT32);
    if (rc == PMIX_SUCCESS)
        rc = PMIx_Info_list_add(list, PMIX_LOCAL_SIZE, &size, PMIX_UINT32);
    if (rc == PMIX_SUCCESS)
        rc = PMIx_Info_list_add(list, PMIX_NODE_SIZE, &size, PMIX_UINT32);
    if (rc == PMIX_SUCCESS)
        rc = PMIx_Info_list_add(list, PMIX_NUM_NODES, &one, PMIX_UINT32);
    if (rc == PMIX_SUCCESS)
        rc = PMIx_Info_list_add(list, PMIX_NODEID, &zero, PMIX_UINT32);
    if (rc == PMIX_SUCCESS)
        rc = PMIx_Info_list_add(list, PMIX_HOSTNAME, job->hostname, PMIX_STRING);
    if (rc == PMIX_SUCCESS)
        rc = PMIx_Info_list_add(list, PMIX_LOCAL_PEERS, peers, PMIX_STRING);
    if (rc == PMIX_SUCCESS)
        rc = PMIx_Info_list_add(list, PMIX_LOCALLDR, &leader, PMIX_PROC_RANK);
    if (rc == PMIX_SUCCESS)
        rc = PMIx_Info_list_add(list, PMIX_NODE_MAP, node_map, PMIX_REGEX);
    if (rc == PMIX_SUCCESS)
        rc = PMIx_Info_list_add(list, PMIX_PROC_MAP, proc_map, PMIX_REGEX);
    free(node_map);
    free(proc_map);
    free(peers);
    return rc;
}

/* Registers the namespace and every client with the server library. */
static int register_job(struct job *job)
{
    struct op_wait w = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false, 0};
    pmix_data_array_t darray = {0};
    void *list = PMIx_Info_list_start();
    pmix_status_t rc = list != NULL ? add_job_info(list, job) : PMIX_ERR_NOMEM;
    for (int i = 0; i < job->npes && rc == PMIX_SUCCESS; i++)
        rc = add_proc_data(list, job, i);
    if (rc == PMIX_SUCCESS)
        rc = PMIx_Info_list_convert(list, &darray);
    if (list != NULL)
        PMIx_Info_list_release(list);
    if (rc != PMIX_SUCCESS) {
        fprintf(stderr, "oshrun: cannot build the job description: %s\n", PMIx_Error_string(rc));
        return -1;
    }
    rc = op_wait_for(&w, PMIx_server_register_nspace(job->nspace, job->npes, darray.array,
                                                     darray.size, op_done, &w));
    PMIx_Data_array_destruct(&darray);
    if (rc != PMIX_SUCCESS) {
        fprintf(stderr, "oshrun: PMIx_server_register_nspace(%s) failed: %s\n", job->nspace,
                PMIx_Error_string(rc));
        return -1;
    }
    for (int i = 0; i < job->npes; i++) {
        struct pe *pe = &job->pes[i];
        rc = op_wait_for(&w, PMIx_server_register_client(&pe->proc, geteuid(), getegid(), pe,
                                                         op_done, &w));
        if (rc != PMIX_SUCCESS) {
            fprintf(stderr, "oshrun: PMIx_server_register_client(PE %d) failed: %s\n", i,
                    PMIx_Error_string(rc));
            return -1;
        }
    }
    return 0;
}

/* ---- placing the PEs ---- */

static bool env_flag(const char *name)
{
    const char *v = getenv(name);
    return v != NULL && (strcmp(v, "1") == 0 || strcasecmp(v, "yes") == 0 ||
                         strcasecmp(v, "true") == 0 || strcasecmp(v, "on") == 0);
}

/* oshrun's own affinity mask, however many CPUs the machine has; NULL (and
 * errno) on failure. */
static cpu_set_t *own_affinity(int *ncpus_p, size_t *size_p)
{
    for (int ncpus = 1024; ncpus <= (1 << 22); ncpus *= 2) {
        cpu_set_t *set = CPU_ALLOC(ncpus);
        size_t size = CPU_ALLOC_SIZE(ncpus);
        if (set == NULL)
            return NULL;
        if (sched_getaffinity(0, size, set) == 0) {
            *ncpus_p = ncpus;
            *size_p = size;
            return set;
        }
        int err = errno;
        CPU_FREE(set);
        errno = err;
        if (err != EINVAL) /* EINVAL: the mask is larger than ours */
            return NULL;
    }
    return NULL;
}

/* Gives PE i the i-th CPU of oshrun's own mask, round robin, so that PEs do
 * not pile up on one CPU when the scheduler leaves them there; the mask is
 * what a batch system or taskset gave the job. The child applies it. Binding
 * is a placement hint: when it cannot be planned, the PEs run unbound. */
/* The CPUs oshrun was given, as a list ("0-3,8") in USHMEM_HELPER_CPUS for
 * the PEs: bound to one each, their helper threads (the proxy) stay within
 * them instead of spinning on the rest of the machine. A value the user set
 * is kept. */
static void given_cpus(const int *cpus, int count)
{
    char text[4096] = "";
    size_t used = 0;
    for (int i = 0; i < count && used < sizeof(text) - 32;) {
        int j = i;
        while (j + 1 < count && cpus[j + 1] == cpus[j] + 1)
            j++;
        int n = j > i ? snprintf(text + used, sizeof(text) - used, "%s%d-%d", used ? "," : "",
                                 cpus[i], cpus[j])
                      : snprintf(text + used, sizeof(text) - used, "%s%d", used ? "," : "",
                                 cpus[i]);
        if (n < 0)
            return;
        used += (size_t)n;
        i = j + 1;
    }
    if (used > 0 && used < sizeof(text) - 32)
        setenv("USHMEM_HELPER_CPUS", text, 0);
}

static void plan_binding(struct job *job, const struct options *o)
{
    for (int i = 0; i < job->npes; i++)
        job->pes[i].cpu = -1;
    if (strcmp(o->bind_to, "none") == 0) {
        if (job->debug)
            fprintf(stderr, "oshrun: PEs not bound to CPUs (none, from %s)\n", o->bind_from);
        return;
    }
    int ncpus = 0, count = 0;
    cpu_set_t *set = own_affinity(&ncpus, &job->bind_setsize);
    int *cpus = set != NULL ? malloc((size_t)ncpus * sizeof(*cpus)) : NULL;
    if (cpus == NULL) {
        fprintf(stderr, "oshrun: PEs not bound to CPUs: cannot read oshrun's CPU mask: %s\n",
                strerror(errno));
        if (set != NULL)
            CPU_FREE(set);
        return;
    }
    for (int c = 0; c < ncpus; c++)
        if (CPU_ISSET_S(c, job->bind_setsize, set))
            cpus[count++] = c;
    for (int i = 0; i < job->npes && count > 0; i++)
        job->pes[i].cpu = cpus[i % count];
    given_cpus(cpus, count);
    if (job->debug)
        fprintf(stderr, "oshrun: binding each PE to one of the %d CPUs oshrun may use (core, "
                        "from %s)%s\n", count, o->bind_from,
                job->npes > count ? "; more PEs than CPUs, some share one" : "");
    free(cpus);
    job->bind_set = set; /* reused as each child's mask */
}

/* ---- starting the PEs ---- */

/* Variables that describe an enclosing job: a PE must see only ours. */
static bool inherited_job_var(const char *v)
{
    static const char *const prefixes[] = {"PMIX_", "OMPI_COMM_WORLD_", "PMI_RANK=", "PMI_SIZE=",
                                           "PMI_FD=", NULL};
    if (strncmp(v, "PMIX_MCA_", 9) == 0)
        return false;
    for (int i = 0; prefixes[i] != NULL; i++)
        if (strncmp(v, prefixes[i], strlen(prefixes[i])) == 0)
            return true;
    return false;
}

static void free_env(char **env)
{
    if (env == NULL)
        return;
    for (char **e = env; *e != NULL; e++)
        free(*e);
    free(env);
}

/* A deep copy of our environment: PMIx_server_setup_fork may free and
 * replace entries and grow the array. */
static char **child_env(void)
{
    size_t n = 0;
    while (environ[n] != NULL)
        n++;
    char **env = calloc(n + 1, sizeof(*env));
    if (env == NULL)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (inherited_job_var(environ[i]))
            continue;
        env[k] = strdup(environ[i]);
        if (env[k] == NULL) {
            free_env(env);
            return NULL;
        }
        k++;
    }
    return env;
}

/* Appends str to the string in buf (len bytes), as much as fits. */
static void append_str(char *buf, size_t len, const char *str)
{
    size_t used = strlen(buf);
    while (*str != '\0' && used + 1 < len)
        buf[used++] = *str++;
    buf[used] = '\0';
}

/* The errno text, from a table: async-signal-safe, unlike strerror. */
static const char *errno_text(int err)
{
    const char *text = strerrordesc_np(err);
    return text != NULL ? text : "unknown error";
}

/* Why execve(path) failed with err, in one line naming the path. A
 * directory gives EACCES, which says nothing of it. ENOENT on a file that
 * exists means that the interpreter it names is missing: a script's #!
 * line, read here, or an executable's loader. Only async-signal-safe calls:
 * this runs between fork and exec. */
static void report_exec_failure(const char *path, int err)
{
    char line[PATH_MAX + 512] = "oshrun: cannot run ";
    struct stat st;

    append_str(line, sizeof(line), path);
    append_str(line, sizeof(line), ": ");
    bool exists = stat(path, &st) == 0;
    if (exists && S_ISDIR(st.st_mode)) {
        append_str(line, sizeof(line), errno_text(EISDIR));
    } else if (exists && err == ENOENT) {
        /* Linux reads at most 256 bytes of the #! line; the interpreter's
         * path ends at a blank. */
        char head[256] = "";
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        ssize_t got = fd >= 0 ? read(fd, head, sizeof(head) - 1) : -1;
        if (fd >= 0)
            close(fd);
        head[got > 0 ? got : 0] = '\0';
        char *interp = head + 2 + strspn(head + 2, " \t");
        interp[strcspn(interp, " \t\n")] = '\0';
        if (head[0] != '#' || head[1] != '!' || interp[0] == '\0') {
            append_str(line, sizeof(line), "the file exists, but the loader it names (its ELF "
                                           "interpreter) was not found");
        } else if (stat(interp, &st) != 0) {
            append_str(line, sizeof(line), "the file exists, but its interpreter ");
            append_str(line, sizeof(line), interp);
            append_str(line, sizeof(line), " (its #! line) was not found");
        } else {
            append_str(line, sizeof(line), "its interpreter ");
            append_str(line, sizeof(line), interp);
            append_str(line, sizeof(line), " (its #! line) could not be run: ");
            append_str(line, sizeof(line), errno_text(err));
        }
    } else {
        append_str(line, sizeof(line), errno_text(err));
    }
    append_str(line, sizeof(line), "\n");
    ssize_t rc = write(STDERR_FILENO, line, strlen(line));
    (void)rc;
}

/* Between fork and exec only async-signal-safe calls: PMIx threads exist. */
static _Noreturn void exec_child(const struct job *job, int rank, char **argv, char **env,
                                 pid_t parent, const sigset_t *oldmask)
{
    struct sigaction dfl = {.sa_handler = SIG_DFL};
    sigaction(SIGPIPE, &dfl, NULL);
    sigprocmask(SIG_SETMASK, oldmask, NULL);
    /* The PEs must not outlive a launcher that is killed outright. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
        _exit(1);
    /* Its own process group, so that ending the PE also ends what it started
     * (a wrapper script, a debugger). A terminal would stop a background
     * group that reads it, so only PE 0 keeps stdin, and only if it is not
     * a terminal. */
    setpgid(0, 0);
    /* job->bind_set was filled with this PE's CPU just before the fork. */
    if (job->pes[rank].cpu >= 0 && sched_setaffinity(0, job->bind_setsize, job->bind_set) != 0) {
        static const char bind_msg[] = "oshrun: cannot bind a PE to its CPU; it runs unbound\n";
        ssize_t wrc = write(STDERR_FILENO, bind_msg, sizeof(bind_msg) - 1);
        (void)wrc;
    }
    if (rank != 0 || isatty(STDIN_FILENO)) {
        int fd = open("/dev/null", O_RDONLY);
        if (fd >= 0) {
            dup2(fd, STDIN_FILENO);
            close(fd);
        }
    }
    execve(job->prog_path, argv, env);
    int err = errno;
    report_exec_failure(job->prog_path, err);
    _exit(err == ENOENT ? EXIT_NOTFOUND : EXIT_NOEXEC);
}

static int start_pes(struct job *job, char **argv, const sigset_t *oldmask)
{
    pid_t self = getpid();
    for (int i = 0; i < job->npes; i++) {
        struct pe *pe = &job->pes[i];
        char **env = child_env();
        pmix_status_t rc = env != NULL ? PMIx_server_setup_fork(&pe->proc, &env) : PMIX_ERR_NOMEM;
        if (rc != PMIX_SUCCESS) {
            fprintf(stderr, "oshrun: PMIx_server_setup_fork(PE %d) failed: %s\n", i,
                    PMIx_Error_string(rc));
            free_env(env);
            return -1;
        }
        if (pe->cpu >= 0) {
            CPU_ZERO_S(job->bind_setsize, job->bind_set);
            CPU_SET_S((size_t)pe->cpu, job->bind_setsize, job->bind_set);
        }
        pid_t pid = fork();
        if (pid == 0)
            exec_child(job, i, argv, env, self, oldmask);
        free_env(env);
        if (pid < 0) {
            fprintf(stderr, "oshrun: fork for PE %d failed: %s\n", i, strerror(errno));
            return -1;
        }
        if (job->debug && pe->cpu >= 0)
            fprintf(stderr, "oshrun: PE %d (pid %d) bound to CPU %d\n", i, (int)pid, pe->cpu);
        /* Also here, so that no signal can reach the PE before it is set. */
        setpgid(pid, pid);
        pe->pid = pid;
        pe->pgid = pid;
        job->running++;
    }
    return 0;
}

/* ---- supervising the PEs ---- */

/* Signals the process group of every running PE, or with `all` also those of
 * PEs already reaped, whose children may linger. A group's id is not reused
 * while any member lives, so an old one reaches only our processes. */
static void signal_pes(struct job *job, int sig, bool all)
{
    for (int i = 0; i < job->npes; i++) {
        const struct pe *pe = &job->pes[i];
        if (pe->pgid > 0 && (pe->pid > 0 || all))
            if (kill(-pe->pgid, sig) != 0 && pe->pid > 0)
                kill(pe->pid, sig);
    }
}

static struct pe *pe_by_pid(struct job *job, pid_t pid)
{
    for (int i = 0; i < job->npes; i++)
        if (job->pes[i].pid == pid)
            return &job->pes[i];
    return NULL;
}

/* PE pe (pid) exited 0 without ever connecting: fine for a program that
 * is no OpenSHMEM one (oshrun -n 4 hostname), fatal once any PE has joined
 * and waits in shmem_init for it (then, or when one joins later:
 * on_connected). True if this recorded the job's failure. */
static bool left_unjoined(struct job *job, struct pe *pe, pid_t pid)
{
    pe->gone_pid = pid;
    pe->left_unjoined = true;
    for (int i = 0; i < job->npes; i++)
        if (job->pes[i].connected && !job->pes[i].finalized)
            return record_unjoined(job, pe, &job->pes[i]);
    return false;
}

/* Reaps every exited PE; returns true if one of them failed first. */
static bool reap_pes(struct job *job)
{
    bool failed = false;
    int status;
    pid_t pid;
    while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
        struct pe *pe = pe_by_pid(job, pid);
        if (pe == NULL)
            continue;
        pe->pid = 0;
        job->running--;
        if (WIFEXITED(status) && WEXITSTATUS(status) != 0)
            failed |= record_failure(job, WEXITSTATUS(status), "PE %d (pid %d) exited with status %d",
                                     pe->rank, (int)pid, WEXITSTATUS(status));
        else if (WIFEXITED(status) && pe->connected && !pe->finalized && !job->stopping)
            failed |= record_failure(job, 1,
                                     "PE %d (pid %d) exited with status 0 without calling "
                                     "shmem_finalize; its peers could wait for it forever",
                                     pe->rank, (int)pid);
        else if (WIFEXITED(status) && !pe->connected && !job->stopping)
            failed |= left_unjoined(job, pe, pid);
        else if (WIFSIGNALED(status))
            failed |= record_failure(job, 128 + WTERMSIG(status),
                                     "PE %d (pid %d) was killed by signal %d (%s)", pe->rank,
                                     (int)pid, WTERMSIG(status), strsignal(WTERMSIG(status)));
    }
    return failed;
}

static void report_timeout(struct job *job, double timeout_s)
{
    char list[1024];
    size_t len = 0;
    list[0] = '\0';
    for (int i = 0; i < job->npes && len < sizeof(list) - 16; i++)
        if (job->pes[i].pid > 0)
            len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%d", len ? "," : "", i);
    record_failure(job, EXIT_TIMEOUT, "timeout after %g s; PEs still running: %s", timeout_s,
                   list);
}

/* Names the PEs that SIGKILL has not ended within REAP_GRACE_MS, which
 * oshrun then stops waiting for. The job failed, if nothing else said so. */
static void report_unreaped(struct job *job)
{
    record_failure(job, 128 + SIGKILL, "PEs were killed (SIGKILL) after a second signal");
    for (int i = 0; i < job->npes; i++)
        if (job->pes[i].pid > 0)
            fprintf(stderr, "oshrun: PE %d (pid %d) has not exited %d ms after SIGKILL; not "
                            "waiting for it\n", i, (int)job->pes[i].pid, REAP_GRACE_MS);
}

static int64_t earliest(int64_t a, int64_t b)
{
    return a < 0 ? b : b < 0 ? a : a < b ? a : b;
}

/* Runs until every PE has been reaped, or, once the job is ending, until the
 * PEs have had KILL_GRACE_MS after SIGTERM and REAP_GRACE_MS after SIGKILL;
 * returns the job's exit status. Nothing a PE does (ignoring or blocking
 * SIGTERM, spinning, waiting in a fence, being stuck in the kernel) keeps the
 * launcher longer than that. The job ends at job_deadline (monotonic ms, -1:
 * none), timeout_s after oshrun started. */
static int supervise(struct job *job, double timeout_s, int64_t job_deadline)
{
    char what[sizeof(job->fail.what)];
    int code = 0;
    int64_t kill_deadline = -1; /* SIGKILL for the PEs left then */
    int64_t give_up = -1;       /* SIGKILL was sent: stop waiting then */
    bool reported = false;
    int forwarded = 0;

    while (job->running > 0) {
        bool ending = false;
        int64_t now = now_ms();
        int64_t next = earliest(earliest(job_deadline, kill_deadline), give_up);
        /* While ending, reap on a timer too: a lost SIGCHLD must not stall it. */
        if (kill_deadline >= 0)
            next = earliest(next, now + REAP_POLL_MS);
        struct pollfd fds[2] = {{.fd = job->sigfd, .events = POLLIN},
                                {.fd = job->abort_pipe[0], .events = POLLIN}};
        int64_t wait = next < 0 ? -1 : next > now ? next - now : 0;
        int n = poll(fds, 2, wait > INT_MAX ? INT_MAX : (int)wait);
        if (n < 0 && errno != EINTR) {
            perror("oshrun: poll");
            ending = true;
        }
        if (n > 0 && (fds[0].revents & POLLIN)) {
            struct signalfd_siginfo si;
            while (read(job->sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
                if (si.ssi_signo == SIGCHLD) {
                    ending |= reap_pes(job);
                } else {
                    /* A second signal means the PEs did not listen. */
                    job->stopping = true;
                    signal_pes(job, ++forwarded > 1 ? SIGKILL : (int)si.ssi_signo, false);
                    if (forwarded > 1 && give_up < 0)
                        give_up = now_ms() + REAP_GRACE_MS;
                }
            }
        }
        if (n > 0 && (fds[1].revents & POLLIN)) {
            char buf[16];
            ssize_t rc = read(job->abort_pipe[0], buf, sizeof(buf));
            (void)rc;
            ending = true;
        }
        if (kill_deadline >= 0)
            ending |= reap_pes(job);
        now = now_ms();
        if (job_deadline >= 0 && now >= job_deadline) {
            report_timeout(job, timeout_s);
            job_deadline = -1;
            ending = true;
        }
        if (ending && kill_deadline < 0 && job->running > 0) {
            signal_pes(job, SIGTERM, true);
            kill_deadline = now + KILL_GRACE_MS;
        }
        if (kill_deadline >= 0 && now >= kill_deadline && give_up < 0) {
            signal_pes(job, SIGKILL, true);
            give_up = now + REAP_GRACE_MS;
        }
        if (ending && !reported && failure_get(job, &code, what, sizeof(what))) {
            fprintf(stderr, "oshrun: %s%s\n", what, job->running > 0 ? "; ending the job" : "");
            reported = true;
            g_reason_printed = 1;
        }
        if (give_up >= 0 && now >= give_up && job->running > 0) {
            report_unreaped(job);
            break;
        }
    }
    if (!reported && failure_get(job, &code, what, sizeof(what)))
        fprintf(stderr, "oshrun: %s\n", what);
    g_reason_printed = 1;
    if (failure_get(job, &code, what, sizeof(what)))
        signal_pes(job, SIGKILL, true); /* whatever the PEs left behind */
    return failure_get(job, &code, what, sizeof(what)) ? code : 0;
}

/* ---- ending in bounded time, whatever libpmix does ---- */

static void write_str(const char *str)
{
    ssize_t rc = write(STDERR_FILENO, str, strlen(str));
    (void)rc;
}

static void write_signal_number(int sig)
{
    char num[4] = {(char)('0' + sig / 10 % 10), (char)('0' + sig % 10), '\0'};
    write_str(num[0] == '0' ? num + 1 : num);
}

/* A crash in any thread, in practice libpmix's when PEs die inside a
 * fence: the PEs still running are killed (and reaped, for at most
 * REAP_GRACE_MS) and oshrun's directory is removed. If the job's status is
 * already known, oshrun exits with it (and the reason, if not printed
 * yet); otherwise it dies of the signal as it would have. Only
 * async-signal-safe calls. */
static void on_crash(int sig)
{
    struct job *job = &g_job;
    int left = 0;
    for (int i = 0; job->pes != NULL && i < job->npes; i++)
        if (job->pes[i].pid > 0 && kill(-job->pes[i].pgid, SIGKILL) == 0)
            left++;
    struct timespec tick = {.tv_nsec = 10 * 1000 * 1000};
    for (int t = 0; left > 0 && t < REAP_GRACE_MS / 10; t++) {
        while (left > 0 && waitpid(-1, NULL, WNOHANG) > 0)
            left--;
        if (left > 0)
            nanosleep(&tick, NULL);
    }
    remove_tree_at(AT_FDCWD, job->tmpdir, 0);
    if (g_known_code >= 0) {
        if (!g_reason_printed) {
            write_str("oshrun: ");
            write_str(job->fail.what);
            write_str("\n");
        }
        if (job->debug) {
            write_str("oshrun: signal ");
            write_signal_number(sig);
            write_str(" once the job's status was known; exiting with it\n");
        }
        _exit(g_known_code);
    }
    write_str("oshrun: crashed by signal ");
    write_signal_number(sig);
    write_str("; the PEs were killed\n");
    raise(sig); /* SA_RESETHAND: dies of it once this handler returns */
}

#if defined(__SANITIZE_ADDRESS__)
#define OSHRUN_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define OSHRUN_SANITIZED 1
#endif
#endif

/* In a build with AddressSanitizer, a signal it already handles is left to
 * it: its report (where the fault was, in which thread) is what that build
 * is for, and on_crash would turn it into an exit status. The signals it
 * does not handle (ASAN_OPTIONS handle_segv=0, ...) are still caught. */
static bool leave_to_sanitizer(int sig)
{
#ifdef OSHRUN_SANITIZED
    struct sigaction now;
    return sigaction(sig, NULL, &now) == 0 &&
           ((now.sa_flags & SA_SIGINFO) || now.sa_handler != SIG_DFL);
#else
    (void)sig;
    return false;
#endif
}

static void catch_crashes(void)
{
    static const int sigs[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
    struct sigaction sa = {.sa_handler = on_crash, .sa_flags = SA_RESETHAND};
    sigfillset(&sa.sa_mask);
    for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
        if (!leave_to_sanitizer(sigs[i]))
            sigaction(sigs[i], &sa, NULL);
}

/* The PEs are gone or given up on: only oshrun's directory is left. */
static _Noreturn void leave(struct job *job, int code)
{
    remove_tmpdir(job);
    _exit(code);
}

/* How long a PMIx call may take, and what oshrun does instead of waiting. */
struct bound {
    int64_t deadline;     /* monotonic ms; -1: none */
    int late_code;        /* exit status once the deadline passes */
    const char *late_msg; /* printed then, if not NULL */
    int signal_code;      /* exit status on SIGINT, SIGTERM or SIGHUP; -1: 128 + signal */
};

struct bounded_call {
    int (*fn)(struct job *);
    struct job *job;
    int result;
    int done[2];
};

static void *bounded_thread(void *arg)
{
    struct bounded_call *c = arg;
    c->result = c->fn(c->job);
    ssize_t rc = write(c->done[1], "x", 1);
    (void)rc;
    return NULL;
}

/* Runs fn(job) on a helper thread while this thread keeps reading the
 * signals and watching the clock, and returns fn's result. A signal or the
 * deadline coming first ends oshrun at once, leaving fn's thread behind:
 * libpmix's threads (and with them a call into libpmix) can hang for good,
 * and signals reach oshrun only through the signalfd read here. */
static int run_bounded(struct job *job, int (*fn)(struct job *), const struct bound *b)
{
    struct bounded_call c = {.fn = fn, .job = job, .done = {-1, -1}};
    pthread_t thread;
    if (pipe2(c.done, O_CLOEXEC) != 0 || pthread_create(&thread, NULL, bounded_thread, &c) != 0) {
        if (c.done[0] >= 0) {
            close(c.done[0]);
            close(c.done[1]);
        }
        return fn(job); /* no thread to spare: wait for it here */
    }
    for (;;) {
        int64_t now = now_ms();
        int64_t wait = b->deadline < 0 ? -1 : b->deadline > now ? b->deadline - now : 0;
        struct pollfd fds[2] = {{.fd = c.done[0], .events = POLLIN},
                                {.fd = job->sigfd, .events = POLLIN}};
        int n = poll(fds, 2, wait > INT_MAX ? INT_MAX : (int)wait);
        if (n > 0 && (fds[0].revents & POLLIN))
            break;
        if (n > 0 && (fds[1].revents & POLLIN)) {
            struct signalfd_siginfo si;
            while (read(job->sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
                if (si.ssi_signo != SIGCHLD) /* a PE given up on: nothing to do */
                    leave(job, b->signal_code >= 0 ? b->signal_code : 128 + (int)si.ssi_signo);
        }
        if (b->deadline >= 0 && now_ms() >= b->deadline) {
            if (b->late_msg != NULL)
                fprintf(stderr, "oshrun: %s\n", b->late_msg);
            leave(job, b->late_code);
        }
    }
    pthread_join(thread, NULL);
    close(c.done[0]);
    close(c.done[1]);
    return c.result;
}

static int setup_server(struct job *job)
{
    return server_start(job) == 0 && register_job(job) == 0 ? 0 : -1;
}

static int finalize_server(struct job *job)
{
    (void)job;
    PMIx_server_finalize();
    return 0;
}

/* Shuts the PMIx server down, giving it FINALIZE_GRACE_MS; the job's
 * status `code` is final by now, whatever happens to libpmix. */
static void end_server(struct job *job, int code)
{
    g_known_code = code;
    g_reason_printed = 1;
    if (!job->server_up)
        return;
    if (oshrun_gate_refused() > 1)
        fprintf(stderr, "oshrun: refused %lu connections to the PMIx server in all\n",
                oshrun_gate_refused());
    char late[128];
    snprintf(late, sizeof(late), "PMIx_server_finalize has not returned after %d ms; exiting "
                                 "without it", FINALIZE_GRACE_MS);
    struct bound b = {.deadline = now_ms() + FINALIZE_GRACE_MS, .late_code = code,
                      .late_msg = job->debug ? late : NULL, .signal_code = code};
    run_bounded(job, finalize_server, &b);
}

/* The namespace is what a PMIx client names to join the job, and over TCP
 * nothing else is checked by the library: it is a secret the PEs learn
 * from their environment, which other users cannot read. 128 random bits. */
static int make_nspace(struct job *job)
{
    unsigned char token[16];
    size_t got = 0;
    while (got < sizeof(token)) {
        ssize_t n = getrandom(token + got, sizeof(token) - got, 0);
        if (n < 0 && errno != EINTR) {
            fprintf(stderr, "oshrun: cannot draw a random job name: %s\n", strerror(errno));
            return -1;
        }
        got += n > 0 ? (size_t)n : 0;
    }
    int len = snprintf(job->nspace, sizeof(job->nspace), "oshrun.");
    for (size_t i = 0; i < sizeof(token); i++)
        len += snprintf(job->nspace + len, sizeof(job->nspace) - (size_t)len, "%02x", token[i]);
    return 0;
}

/* ---- main ---- */

static int setup_signals(struct job *job, sigset_t *oldmask)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    /* Blocked before PMIx creates threads, so every thread inherits it. */
    if (pthread_sigmask(SIG_BLOCK, &set, oldmask) != 0)
        return -1;
    signal(SIGPIPE, SIG_IGN); /* a dead PE's socket must not kill the launcher */
    job->sigfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
    if (job->sigfd < 0 || pipe2(job->abort_pipe, O_NONBLOCK | O_CLOEXEC) != 0) {
        perror("oshrun: signalfd");
        return -1;
    }
    return 0;
}

static int run_local(const struct options *o)
{
    struct job *job = &g_job;
    sigset_t oldmask;
    int code = 1;

    job->npes = o->npes;
    job->debug = env_flag("OSHRUN_DEBUG") || env_flag("SHMEM_DEBUG");
    job->prog_path = resolve_program(o->prog_argv[0]);
    if (gethostname(job->hostname, sizeof(job->hostname) - 1) != 0)
        strcpy(job->hostname, "localhost");
    job->pes = calloc((size_t)job->npes, sizeof(*job->pes));
    if (job->pes == NULL || job->prog_path == NULL) {
        fputs("oshrun: out of memory\n", stderr);
        goto out;
    }
    if (make_nspace(job) != 0)
        goto out;
    for (int i = 0; i < job->npes; i++) {
        job->pes[i].rank = i;
        PMIX_LOAD_PROCID(&job->pes[i].proc, job->nspace, (pmix_rank_t)i);
    }
    plan_binding(job, o);
    if (setup_signals(job, &oldmask) != 0)
        goto out;
    catch_crashes();
    if (make_tmpdir(job) != 0)
        goto out;
    /* --timeout counts from here, so that it also covers a PMIx server that
     * never comes up. */
    char late[128];
    snprintf(late, sizeof(late), "timeout after %g s while starting the PMIx server",
             o->timeout_s);
    struct bound setup = {.deadline = o->timeout_s > 0 ? now_ms() + (int64_t)(o->timeout_s * 1000)
                                                       : -1,
                          .late_code = EXIT_TIMEOUT, .late_msg = late, .signal_code = -1};
    if (run_bounded(job, setup_server, &setup) == 0) {
        if (start_pes(job, o->prog_argv, &oldmask) != 0) {
            record_failure(job, 1, "could not start every PE");
            signal_pes(job, SIGKILL, true);
        }
        code = supervise(job, o->timeout_s, setup.deadline);
        remove_pe_shm(job);
    }
    end_server(job, code);
    remove_tmpdir(job);
out:
    if (job->bind_set != NULL)
        CPU_FREE(job->bind_set);
    free(job->pes);
    free(job->prog_path);
    return code;
}

int main(int argc, char **argv)
{
    struct options o = {0};
    parse_args(argc, argv, &o);
    warn_unknown_vars();
    if (o.launcher != NULL)
        exec_engine(&o);
    int code = run_local(&o);
    free(o.engine_args);
    free(o.exports);
    return code;
}
