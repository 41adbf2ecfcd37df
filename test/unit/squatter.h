/* A hostile local user for tests of the fd servers' abstract sockets, which
 * have no permissions: a process that binds every socket name it can predict
 * before the job does, and connects to every ushmem socket it can see in
 * /proc/net/unix and holds the connections open without reading. Run as
 * root, it first becomes another user (nobody, 65534), as a real stranger
 * is; otherwise it keeps our uid, which the servers cannot refuse by uid, so
 * only their pid check stands between it and the fd. */
#ifndef USHMEM_TEST_SQUATTER_H
#define USHMEM_TEST_SQUATTER_H

#include <grp.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define SQUATTER_UID 65534
#define SQUATTER_MAX_SEEN 256
#define SQUATTER_HOLD 4 /* connections held open on each socket seen */

/* Becomes uid/gid 65534 when root; true when it did. Exits on a partial
 * drop: a test that thinks it has a stranger must have one. */
static inline bool squatter_drop_privileges(void)
{
    if (geteuid() != 0)
        return false;
    if (setgroups(0, NULL) != 0 || setresgid(SQUATTER_UID, SQUATTER_UID, SQUATTER_UID) != 0 ||
        setresuid(SQUATTER_UID, SQUATTER_UID, SQUATTER_UID) != 0) {
        perror("squatter: dropping to uid 65534");
        _exit(120);
    }
    return true;
}

static inline socklen_t squatter_address(const char *name, struct sockaddr_un *addr)
{
    size_t n = strlen(name);
    if (n > sizeof(addr->sun_path) - 1)
        n = sizeof(addr->sun_path) - 1;
    memset(addr, 0, sizeof(*addr));
    addr->sun_family = AF_UNIX;
    memcpy(addr->sun_path + 1, name, n);
    return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
}

/* Binds the abstract name `name` (without its leading '@') and keeps it:
 * true when bound. */
static inline bool squatter_bind(const char *name)
{
    struct sockaddr_un addr;
    socklen_t len = squatter_address(name, &addr);
    int sock = socket(AF_UNIX, SOCK_STREAM, 0);
    if (sock < 0)
        return false;
    if (bind(sock, (struct sockaddr *)&addr, len) != 0 || listen(sock, 1) != 0) {
        close(sock);
        return false;
    }
    return true; /* the descriptor stays open for the squatter's life */
}

struct squatter_seen {
    char names[SQUATTER_MAX_SEEN][108];
    int held[SQUATTER_MAX_SEEN];
    int n;
};

/* One pass over /proc/net/unix: connects (up to SQUATTER_HOLD times) to
 * every abstract socket whose name starts with "@ushmem-" and is not in
 * own[]; returns how many connections it opened in this pass. *squatted
 * (when not NULL) counts the sockets it holds a connection to. */
static inline int squatter_scan(struct squatter_seen *seen, const char *const *own, int nown,
                                atomic_int *squatted)
{
    FILE *f = fopen("/proc/net/unix", "r");
    char line[512];
    int opened = 0;

    if (f == NULL)
        return 0;
    while (fgets(line, sizeof(line), f) != NULL) {
        char path[108] = "";
        if (sscanf(line, "%*s %*s %*s %*s %*s %*s %*s %107s", path) != 1)
            continue;
        if (strncmp(path, "@ushmem-", 8) != 0)
            continue;
        bool mine = false;
        for (int i = 0; i < nown && !mine; i++)
            mine = strcmp(path + 1, own[i]) == 0;
        if (mine)
            continue;
        int slot = 0;
        while (slot < seen->n && strcmp(seen->names[slot], path) != 0)
            slot++;
        if (slot == seen->n) {
            if (seen->n == SQUATTER_MAX_SEEN)
                continue;
            snprintf(seen->names[slot], sizeof(seen->names[slot]), "%s", path);
            seen->held[slot] = 0;
            seen->n++;
        }
        if (seen->held[slot] >= SQUATTER_HOLD)
            continue;
        struct sockaddr_un addr;
        socklen_t len = squatter_address(path + 1, &addr);
        int sock = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
        if (sock < 0)
            continue;
        if (connect(sock, (struct sockaddr *)&addr, len) == 0) {
            if (seen->held[slot]++ == 0 && squatted != NULL)
                atomic_fetch_add(squatted, 1);
            opened++; /* held open, never read, until the squatter dies */
        } else {
            close(sock);
        }
    }
    fclose(f);
    return opened;
}

/* The squatter's life: drops privileges, binds own[] (the names it
 * predicts), writes two status bytes to ready_w ('S' another uid, 's' our
 * own; then the count of names bound), then scans until killed. squatted:
 * see squatter_scan (shared memory, or NULL). */
static inline _Noreturn void squatter_main(int ready_w, const char *const *own, int nown,
                                           atomic_int *squatted)
{
    struct squatter_seen seen = {.n = 0};
    unsigned char report[2];

    report[0] = squatter_drop_privileges() ? 'S' : 's';
    int bound = 0;
    for (int i = 0; i < nown; i++)
        bound += squatter_bind(own[i]);
    report[1] = (unsigned char)(bound > 255 ? 255 : bound);
    if (write(ready_w, report, sizeof(report)) != (ssize_t)sizeof(report))
        _exit(121);
    close(ready_w);
    for (;;) {
        squatter_scan(&seen, own, nown, squatted);
        struct timespec ts = {0, 500 * 1000};
        nanosleep(&ts, NULL);
    }
}

#endif
