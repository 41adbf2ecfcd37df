/* A hostile local user for the unique-id bootstrap: it sees PE 0's port (as
 * `ss -ltn` shows it) but not the id's secret.
 *
 *   uid_stranger ADDRESS PORT
 *
 * Run as root, it first becomes uid 65534 (squatter.h), as a real stranger
 * is. Then it opens one connection that sends nothing, one that sends
 * garbage, one that sends a well-formed hello with a wrong secret, one that
 * sends half a hello and stalls, and FLOOD more that send nothing; prints
 * "uid_stranger: ready (uid U, N connections)" and holds them until killed. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../squatter.h"

#define FLOOD 150
#define HELLO_TYPE 0x75480001u
#define HELLO_LEN 116 /* secret 32, rank, npes, pid, node 8, host 64 */

static int open_one(const struct sockaddr_in *sa)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0 || connect(fd, (const struct sockaddr *)sa, sizeof(*sa)) != 0) {
        perror("uid_stranger: connect");
        if (fd >= 0)
            close(fd);
        return -1;
    }
    return fd;
}

static void put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fputs("usage: uid_stranger ADDRESS PORT\n", stderr);
        return 64;
    }
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[2]))};
    if (inet_pton(AF_INET, argv[1], &sa.sin_addr) != 1) {
        fprintf(stderr, "uid_stranger: %s is not an IPv4 address\n", argv[1]);
        return 64;
    }
    squatter_drop_privileges();

    int opened = 0;
    if (open_one(&sa) >= 0) /* silent */
        opened++;
    int fd = open_one(&sa);
    if (fd >= 0) {
        static const char garbage[] = "GET / HTTP/1.0\r\nHost: ushmem\r\n\r\n";
        if (write(fd, garbage, sizeof(garbage) - 1) > 0)
            opened++;
    }
    uint8_t hello[8 + HELLO_LEN];
    memset(hello, 0x5a, sizeof(hello)); /* a secret that is not the job's */
    put32(hello, HELLO_TYPE);
    put32(hello + 4, HELLO_LEN);
    put32(hello + 8 + 32, 1);     /* rank 1 */
    put32(hello + 8 + 36, 4);     /* of 4 */
    fd = open_one(&sa);
    if (fd >= 0 && write(fd, hello, sizeof(hello)) == (ssize_t)sizeof(hello))
        opened++;
    fd = open_one(&sa);
    if (fd >= 0 && write(fd, hello, 8 + 10) == 8 + 10) /* half a hello, then nothing */
        opened++;
    for (int i = 0; i < FLOOD; i++)
        if (open_one(&sa) >= 0)
            opened++;
    printf("uid_stranger: ready (uid %d, %d connections)\n", (int)getuid(), opened);
    fflush(stdout);
    for (;;)
        pause();
}
