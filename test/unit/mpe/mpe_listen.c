/* Where a PE's sockets listen: after shmem_init, every listening TCP socket
 * and every unconnected UDP socket this process owns (its fds, matched by
 * inode in /proc/net) must be on a loopback address when the whole job runs
 * on this host, so that no other host, and no local user through an
 * external address, reaches the fabric endpoint. With an argument
 * "expect-listener" at least one such socket must exist (tcp, sockets and
 * udp providers), so that the check cannot pass by finding nothing. */
#include <dirent.h>
#include <fcntl.h>
#include <shmem.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mpe_check.h"

#define MAX_INODES 1024

static unsigned long inodes[MAX_INODES];
static int ninodes;

static void collect_socket_inodes(void)
{
    DIR *d = opendir("/proc/self/fd");
    MPE_CHECK(d != NULL, "cannot open /proc/self/fd");
    struct dirent *e;
    while ((e = readdir(d)) != NULL && ninodes < MAX_INODES) {
        char target[64];
        ssize_t n = readlinkat(dirfd(d), e->d_name, target, sizeof(target) - 1);
        if (n <= 0)
            continue;
        target[n] = '\0';
        unsigned long inode;
        if (sscanf(target, "socket:[%lu]", &inode) == 1)
            inodes[ninodes++] = inode;
    }
    closedir(d);
}

static bool ours(unsigned long inode)
{
    for (int i = 0; i < ninodes; i++)
        if (inodes[i] == inode)
            return true;
    return false;
}

/* /proc/net writes addresses as the bytes of the kernel's words in hex:
 * 127.0.0.1 is 0100007F; ::1 is 00000000000000000000000001000000, and
 * ::ffff:127.x.y.z ends in FFFF0000 and a word whose low byte is 7F. */
static bool is_loopback(const char *hex)
{
    size_t len = strlen(hex);
    if (len == 8)
        return strcmp(hex + 6, "7F") == 0;
    if (len == 32)
        return strcmp(hex, "00000000000000000000000001000000") == 0 ||
               (strncmp(hex, "0000000000000000FFFF0000", 24) == 0 && strcmp(hex + 30, "7F") == 0);
    return false;
}

/* Checks one table; returns how many of our open sockets it holds. */
static int check_table(const char *table, const char *open_state)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/net/%s", table);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return 0; /* no IPv6 here, say */
    char line[512];
    int found = 0;
    if (fgets(line, sizeof(line), f) == NULL) { /* the header */
        fclose(f);
        return 0;
    }
    while (fgets(line, sizeof(line), f) != NULL) {
        char local[64], remote[64], state[8];
        unsigned port;
        unsigned long inode;
        /* sl local:port remote:port st tx:rx tr:when retrnsmt uid timeout inode */
        if (sscanf(line, " %*s %63[0-9A-Fa-f]:%x %63s %7s %*s %*s %*s %*s %*s %lu", local, &port,
                   remote, state, &inode) != 5)
            continue;
        if (strcmp(state, open_state) != 0 || !ours(inode))
            continue;
        found++;
        char where[64];
        unsigned long word = strtoul(local, NULL, 16);
        if (strlen(local) == 8) /* the address's bytes in the kernel's (little-endian) word */
            snprintf(where, sizeof(where), "%lu.%lu.%lu.%lu", word & 0xff, (word >> 8) & 0xff,
                     (word >> 16) & 0xff, word >> 24);
        else
            snprintf(where, sizeof(where), "%s", local);
        MPE_CHECK(is_loopback(local),
                  "this PE's %s socket (inode %lu) is open on %s port %u, not on loopback, "
                  "though every PE of the job is on this host", table, inode, where, port);
    }
    fclose(f);
    return found;
}

int main(int argc, char **argv)
{
    shmem_init();
    int me = shmem_my_pe();
    collect_socket_inodes();
    /* 0A: TCP_LISTEN; 07: TCP_CLOSE, an unconnected UDP socket. */
    int found = check_table("tcp", "0A") + check_table("tcp6", "0A") + check_table("udp", "07") +
                check_table("udp6", "07");
    bool expect = argc > 1 && strcmp(argv[1], "expect-listener") == 0;
    MPE_CHECK(!expect || found > 0, "this PE owns no listening socket: the check saw nothing");
    printf("PE %d: %d listening socket%s, all on loopback\n", me, found, found == 1 ? "" : "s");
    shmem_barrier_all();
    shmem_finalize();
    return 0;
}
