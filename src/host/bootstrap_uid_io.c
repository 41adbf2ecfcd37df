/* The unique-id bootstrap's I/O: whole messages on non-blocking sockets with
 * deadlines, byte order, the secret's comparison and addresses as text. */
#include "bootstrap_uid.h"

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "../common/log.h"

int64_t ushmemi_uid_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void ushmemi_uid_put32(uint8_t *p, uint32_t v)
{
    for (int i = 3; i >= 0; i--, v >>= 8)
        p[i] = (uint8_t)v;
}

void ushmemi_uid_put64(uint8_t *p, uint64_t v)
{
    for (int i = 7; i >= 0; i--, v >>= 8)
        p[i] = (uint8_t)v;
}

uint32_t ushmemi_uid_get32(const uint8_t *p)
{
    uint32_t v = 0;
    for (int i = 0; i < 4; i++)
        v = v << 8 | p[i];
    return v;
}

uint64_t ushmemi_uid_get64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = v << 8 | p[i];
    return v;
}

bool ushmemi_uid_secret_equal(const uint8_t *a, const uint8_t *b)
{
    /* Every byte is looked at whatever the first difference: a stranger
     * learns nothing from how long a refusal took. */
    volatile uint8_t diff = 0;
    for (size_t i = 0; i < UID_SECRET_LEN; i++)
        diff |= (uint8_t)(a[i] ^ b[i]);
    return diff == 0;
}

int ushmemi_uid_wait(int fd, short events, int64_t deadline)
{
    for (;;) {
        int timeout = -1;
        if (deadline >= 0) {
            int64_t left = deadline - ushmemi_uid_now_ms();
            if (left <= 0)
                return 0;
            timeout = left > INT_MAX ? INT_MAX : (int)left;
        }
        struct pollfd p = {.fd = fd, .events = events};
        int n = poll(&p, 1, timeout);
        if (n > 0)
            return 1; /* an error or hang-up too: the next call says which */
        if (n < 0 && errno != EINTR)
            return -1;
    }
}

ushmem_status_t ushmemi_uid_send(int fd, const void *buf, size_t len, int64_t deadline)
{
    const uint8_t *p = buf;
    while (len > 0) {
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
        if (n > 0) {
            p += n;
            len -= (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            int r = ushmemi_uid_wait(fd, POLLOUT, deadline);
            if (r == 0)
                return USHMEM_ERR_TIMEOUT;
            if (r < 0)
                return USHMEM_ERR_IO;
            continue;
        }
        return USHMEM_ERR_IO;
    }
    return USHMEM_OK;
}

ushmem_status_t ushmemi_uid_recv(int fd, void *buf, size_t len, int64_t deadline)
{
    uint8_t *p = buf;
    while (len > 0) {
        ssize_t n = recv(fd, p, len, 0);
        if (n > 0) {
            p += n;
            len -= (size_t)n;
            continue;
        }
        if (n == 0) {
            errno = 0;
            return USHMEM_ERR_IO;
        }
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            int r = ushmemi_uid_wait(fd, POLLIN, deadline);
            if (r == 0)
                return USHMEM_ERR_TIMEOUT;
            if (r < 0)
                return USHMEM_ERR_IO;
            continue;
        }
        return USHMEM_ERR_IO;
    }
    return USHMEM_OK;
}

ushmem_status_t ushmemi_uid_send_msg(int fd, uint32_t type, const void *a, size_t alen,
                                     const void *b, size_t blen, int64_t deadline)
{
    if (alen > UINT32_MAX - blen)
        return USHMEM_ERR_INVALID_PARAM;
    size_t len = UID_HDR_LEN + alen + blen;
    uint8_t small[1024];
    uint8_t *buf = len <= sizeof(small) ? small : malloc(len);
    if (buf == NULL)
        return USHMEM_ERR_NO_MEMORY;
    ushmemi_uid_put32(buf, type);
    ushmemi_uid_put32(buf + 4, (uint32_t)(alen + blen));
    if (alen > 0)
        memcpy(buf + UID_HDR_LEN, a, alen);
    if (blen > 0)
        memcpy(buf + UID_HDR_LEN + alen, b, blen);
    ushmem_status_t status = ushmemi_uid_send(fd, buf, len, deadline);
    if (buf != small)
        free(buf);
    return status;
}

const char *ushmemi_uid_io_why(int err)
{
    return err == 0 ? "the other end closed the connection" : strerror(err);
}

void ushmemi_uid_addr_text(int family, const void *addr, uint16_t port, char *buf, size_t len)
{
    char host[INET6_ADDRSTRLEN] = "?";
    inet_ntop(family, addr, host, sizeof(host));
    if (family == AF_INET6)
        snprintf(buf, len, "[%s]:%u", host, (unsigned)port);
    else
        snprintf(buf, len, "%s:%u", host, (unsigned)port);
}

socklen_t ushmemi_uid_sockaddr(const struct uid_info *u, struct sockaddr_storage *sa)
{
    memset(sa, 0, sizeof(*sa));
    if (u->family == AF_INET6) {
        struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)sa;
        s6->sin6_family = AF_INET6;
        s6->sin6_port = htons(u->port);
        memcpy(&s6->sin6_addr, u->addr, 16);
        return sizeof(*s6);
    }
    struct sockaddr_in *s4 = (struct sockaddr_in *)sa;
    s4->sin_family = AF_INET;
    s4->sin_port = htons(u->port);
    memcpy(&s4->sin_addr, u->addr, 4);
    return sizeof(*s4);
}

ushmem_status_t ushmemi_uid_random(uint8_t *buf, size_t len, const char *call)
{
    size_t got = 0;
    while (got < len) {
        ssize_t n = getrandom(buf + got, len - got, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            ushmemi_error("%s: getrandom failed: %s", call, n < 0 ? strerror(errno) : "no bytes");
            return USHMEM_ERR_IO;
        }
        got += (size_t)n;
    }
    return USHMEM_OK;
}
