/* File descriptor passing between local PEs: pidfd_getfd when ptrace
 * permission allows it, otherwise SCM_RIGHTS over an abstract Unix socket
 * whose peers are checked with SO_PEERCRED. Abstract sockets leave nothing in
 * the file system and vanish with their process, but they have no
 * permissions: any local user may bind or connect to any name. So a server's
 * name is a fresh random token, bound before anyone learns it (a stranger
 * cannot take it first), and one already taken is replaced by another; the
 * server hands the fd only to the pids it was told are PEs of the job, and
 * serves nobody until it knows them. */
#include "transport.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "../common/log.h"
#include "../common/random.h"

/* Failures are logged at debug level only: auto mode falls back to the
 * socket, and the caller, which knows the peer PE, logs the real error. errno
 * holds the failing call's value on return. */
ushmem_status_t ushmemi_fd_get_pidfd(pid_t pid, int remote_fd, int *fd_p)
{
    int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (pidfd < 0) {
        int err = errno;
        ushmemi_debug("pidfd_open(%d) failed: %s", (int)pid, strerror(err));
        errno = err;
        if (err == ENOSYS)
            return USHMEM_ERR_UNSUPPORTED;
        if (err == EPERM)
            return USHMEM_ERR_PERMISSION;
        return USHMEM_ERR_FD_PASSING;
    }

    int fd = (int)syscall(SYS_pidfd_getfd, pidfd, remote_fd, 0);
    int err = errno;
    close(pidfd);
    if (fd < 0) {
        ushmemi_debug("pidfd_getfd(pid %d, fd %d) failed: %s", (int)pid, remote_fd, strerror(err));
        errno = err;
        if (err == ENOSYS)
            return USHMEM_ERR_UNSUPPORTED;
        if (err == EPERM)
            return USHMEM_ERR_PERMISSION;
        return USHMEM_ERR_FD_PASSING;
    }
    *fd_p = fd;
    return USHMEM_OK;
}

/* ------------------------------------------------------------------------ */
/* The socket path. */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int remaining_ms(double deadline)
{
    double left = deadline - now_s();
    if (left <= 0)
        return 0;
    return (int)(left * 1000.0) + 1;
}

/* Fills the abstract address "\0ushmem-<token in hex>". */
static void name_address(const struct ushmemi_fd_name *name, struct sockaddr_un *addr,
                         socklen_t *len_p)
{
    static const char hex[] = "0123456789abcdef";
    static const char prefix[] = "ushmem-";
    char *p = addr->sun_path + 1; /* after the leading NUL */

    memset(addr, 0, sizeof(*addr));
    addr->sun_family = AF_UNIX;
    memcpy(p, prefix, sizeof(prefix) - 1);
    p += sizeof(prefix) - 1;
    for (size_t i = 0; i < sizeof(name->token); i++) {
        *p++ = hex[name->token[i] >> 4];
        *p++ = hex[name->token[i] & 0xf];
    }
    *len_p = (socklen_t)(p - (char *)addr);
}

/* For messages: "@ushmem-<hex>". */
static const char *name_text(const struct ushmemi_fd_name *name, char *buf, size_t len)
{
    struct sockaddr_un addr;
    socklen_t addr_len;
    name_address(name, &addr, &addr_len);
    snprintf(buf, len, "@%.*s", (int)(addr_len - offsetof(struct sockaddr_un, sun_path) - 1),
             addr.sun_path + 1);
    return buf;
}

bool ushmemi_fd_name_is_set(const struct ushmemi_fd_name *name)
{
    for (size_t i = 0; i < sizeof(name->token); i++)
        if (name->token[i] != 0)
            return true;
    return false;
}

static ushmem_status_t random_name(int rank, struct ushmemi_fd_name *name_p)
{
    int err = ushmemi_random_bytes(name_p->token, sizeof(name_p->token));
    if (err != 0) {
        ushmemi_error("fd server of rank %d: getrandom failed: %s", rank, strerror(err));
        return USHMEM_ERR_FD_PASSING;
    }
    return USHMEM_OK;
}

/* Binds `sock` to a fresh random name. A name can be taken only by someone
 * who saw it bound (in /proc/net/unix) or by a clash of 128 random bits:
 * either way a new one is drawn, so nobody can keep the server from
 * starting. The tries are bounded only against a getrandom that repeats. */
#define BIND_TRIES 16

static ushmem_status_t bind_random_name(int sock, int rank, struct ushmemi_fd_name *name_p)
{
    char text[80];

    for (int i = 0; i < BIND_TRIES; i++) {
        struct ushmemi_fd_name name;
        struct sockaddr_un addr;
        socklen_t addr_len;
        ushmem_status_t status = random_name(rank, &name);
        if (status != USHMEM_OK)
            return status;
        if (!ushmemi_fd_name_is_set(&name))
            continue; /* all zeros means "no server" in the cards */
        name_address(&name, &addr, &addr_len);
        if (bind(sock, (struct sockaddr *)&addr, addr_len) == 0) {
            *name_p = name;
            return USHMEM_OK;
        }
        if (errno != EADDRINUSE) {
            ushmemi_error("fd server of rank %d: bind to abstract socket '%s' failed: %s", rank,
                          name_text(&name, text, sizeof(text)), strerror(errno));
            return USHMEM_ERR_FD_PASSING;
        }
        ushmemi_debug("fd server of rank %d: abstract socket '%s' is taken; drawing another name",
                      rank, name_text(&name, text, sizeof(text)));
    }
    ushmemi_error("fd server of rank %d: %d random abstract socket names in a row were taken "
                  "(is getrandom returning the same bytes?)", rank, BIND_TRIES);
    return USHMEM_ERR_FD_PASSING;
}

struct ushmemi_fd_server {
    int listen_fd;
    int wake_fd; /* eventfd: allow() and stop() wake the thread to look at the flags */
    int fd;      /* the descriptor served; the caller owns it */
    int expected;
    int rank;
    pthread_t thread;
    pthread_mutex_t lock; /* guards everything below */
    pthread_cond_t cond;  /* signalled when the thread is done */
    pid_t *allowed_pids;
    int npids;
    bool pids_known; /* false until the list is given: clients wait in the backlog */
    bool stopping;
    bool done;
    int served;
};

static bool pid_allowed(struct ushmemi_fd_server *server, pid_t pid)
{
    bool allowed = false;
    pthread_mutex_lock(&server->lock);
    for (int i = 0; i < server->npids && !allowed; i++)
        allowed = server->allowed_pids[i] == pid;
    pthread_mutex_unlock(&server->lock);
    return allowed;
}

/* Consumes pending wake-ups; the flags say what they were for. */
static void drain_wake(struct ushmemi_fd_server *server)
{
    uint64_t count;
    ssize_t r = read(server->wake_fd, &count, sizeof(count));
    (void)r; /* nonblocking: EAGAIN only means another read got there first */
}

/* Sends the fd to one accepted client after checking who it is; true when
 * the fd went out. Nothing here waits on the client, so a stranger that
 * connects and holds its end open costs one accept. A refused client just
 * sees the connection close. Refusals are logged at debug level: the
 * stranger is not ours to report, and a PE that is refused logs the error on
 * its side. */
static bool serve_client(struct ushmemi_fd_server *server, int conn)
{
    struct ucred cred;
    socklen_t len = sizeof(cred);

    if (getsockopt(conn, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
        ushmemi_warn("fd server of rank %d: SO_PEERCRED failed: %s", server->rank, strerror(errno));
        return false;
    }
    if (cred.uid != geteuid()) {
        ushmemi_debug("fd server of rank %d: refused a client (pid %d): uid %d is not ours",
                      server->rank, (int)cred.pid, (int)cred.uid);
        return false;
    }
    if (!pid_allowed(server, cred.pid)) {
        ushmemi_debug("fd server of rank %d: refused a client (pid %d): not a PE of this job",
                      server->rank, (int)cred.pid);
        return false;
    }

    char byte = 'u';
    struct iovec iov = {.iov_base = &byte, .iov_len = 1};
    union {
        struct cmsghdr align;
        char buf[CMSG_SPACE(sizeof(int))];
    } control;
    memset(&control, 0, sizeof(control));
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1,
                         .msg_control = control.buf, .msg_controllen = sizeof(control.buf)};
    struct cmsghdr *cmsg = CMSG_FIRSTHDR(&msg);
    cmsg->cmsg_level = SOL_SOCKET;
    cmsg->cmsg_type = SCM_RIGHTS;
    cmsg->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(cmsg), &server->fd, sizeof(int));

    ssize_t sent;
    do {
        sent = sendmsg(conn, &msg, MSG_NOSIGNAL);
    } while (sent < 0 && errno == EINTR);
    if (sent != 1) {
        ushmemi_warn("fd server of rank %d: sending the fd to pid %d failed: %s", server->rank,
                     (int)cred.pid, sent < 0 ? strerror(errno) : "short write");
        return false;
    }
    ushmemi_trace("fd server of rank %d: served pid %d", server->rank, (int)cred.pid);
    return true;
}

static void *server_thread(void *arg)
{
    struct ushmemi_fd_server *server = arg;
    int served = 0;

    while (served < server->expected) {
        pthread_mutex_lock(&server->lock);
        bool stopping = server->stopping, known = server->pids_known;
        pthread_mutex_unlock(&server->lock);
        if (stopping)
            break;
        /* Until the PEs' pids are known nobody is accepted: early clients,
         * peers or not, wait in the backlog and cannot hold this thread. */
        struct pollfd pfd[2] = {{.fd = known ? server->listen_fd : -1, .events = POLLIN},
                                {.fd = server->wake_fd, .events = POLLIN}};
        int rc = poll(pfd, 2, -1);
        if (rc < 0) {
            if (errno == EINTR)
                continue;
            ushmemi_warn("fd server of rank %d: poll failed: %s", server->rank, strerror(errno));
            break;
        }
        if (pfd[1].revents) {
            drain_wake(server); /* allow() or stop(): the loop's test sees which */
            continue;
        }
        if (!(pfd[0].revents & POLLIN))
            continue;
        int conn = accept4(server->listen_fd, NULL, NULL, SOCK_CLOEXEC);
        if (conn < 0)
            continue; /* the client gave up between poll and accept */
        if (serve_client(server, conn))
            served++;
        /* Ends the connection even where a fork of this process holds a copy
         * of conn, so a refused client sees EOF at once. */
        shutdown(conn, SHUT_RDWR);
        close(conn);
    }

    pthread_mutex_lock(&server->lock);
    server->served = served;
    server->done = true;
    pthread_cond_broadcast(&server->cond);
    pthread_mutex_unlock(&server->lock);
    return NULL;
}

static ushmem_status_t copy_pids(int rank, const pid_t *pids, int npids, pid_t **copy_p)
{
    if (npids < 0 || (npids > 0 && pids == NULL)) {
        ushmemi_error("fd server of rank %d: invalid allowed pid list (%d pids at %p)", rank,
                      npids, (const void *)pids);
        return USHMEM_ERR_INVALID_PARAM;
    }
    pid_t *copy = malloc((size_t)(npids > 0 ? npids : 1) * sizeof(pid_t));
    if (copy == NULL) {
        ushmemi_error("fd server of rank %d: out of memory for %d allowed pids", rank, npids);
        return USHMEM_ERR_NO_MEMORY;
    }
    if (npids > 0)
        memcpy(copy, pids, (size_t)npids * sizeof(pid_t));
    *copy_p = copy;
    return USHMEM_OK;
}

/* Room in the backlog beyond the expected peers, so that a stranger's queued
 * connections seldom make a peer's connect wait for the thread to drain them. */
#define BACKLOG_SLACK 16

ushmem_status_t ushmemi_fd_server_start(int rank, int fd, int expected, const pid_t *allowed_pids,
                                        int npids, struct ushmemi_fd_name *name_p,
                                        struct ushmemi_fd_server **server_p)
{
    ushmem_status_t status;
    struct ushmemi_fd_name name;
    pthread_condattr_t cattr;
    char text[80];

    struct ushmemi_fd_server *server = calloc(1, sizeof(*server));
    if (server == NULL) {
        ushmemi_error("fd server of rank %d: out of memory", rank);
        return USHMEM_ERR_NO_MEMORY;
    }
    server->fd = fd;
    server->expected = expected;
    server->rank = rank;
    if (allowed_pids != NULL) {
        status = copy_pids(rank, allowed_pids, npids, &server->allowed_pids);
        if (status != USHMEM_OK)
            goto free_server;
        server->npids = npids;
        server->pids_known = true;
    }

    server->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (server->listen_fd < 0) {
        ushmemi_error("fd server of rank %d: socket() failed: %s", rank, strerror(errno));
        status = USHMEM_ERR_FD_PASSING;
        goto free_pids;
    }
    status = bind_random_name(server->listen_fd, rank, &name);
    if (status != USHMEM_OK)
        goto close_listen;
    if (listen(server->listen_fd, (expected > 0 ? expected : 1) + BACKLOG_SLACK) != 0) {
        ushmemi_error("fd server of rank %d: listen failed: %s", rank, strerror(errno));
        status = USHMEM_ERR_FD_PASSING;
        goto close_listen;
    }
    server->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (server->wake_fd < 0) {
        ushmemi_error("fd server of rank %d: eventfd failed: %s", rank, strerror(errno));
        status = USHMEM_ERR_FD_PASSING;
        goto close_listen;
    }

    pthread_mutex_init(&server->lock, NULL);
    pthread_condattr_init(&cattr);
    pthread_condattr_setclock(&cattr, CLOCK_MONOTONIC);
    pthread_cond_init(&server->cond, &cattr);
    pthread_condattr_destroy(&cattr);

    int rc = pthread_create(&server->thread, NULL, server_thread, server);
    if (rc != 0) {
        ushmemi_error("fd server of rank %d: pthread_create failed: %s", rank, strerror(rc));
        status = USHMEM_ERR_FD_PASSING;
        goto destroy_sync;
    }
    ushmemi_debug("fd server of rank %d: listening on '%s' (%d PEs may connect)", rank,
                  name_text(&name, text, sizeof(text)), expected);
    *name_p = name;
    *server_p = server;
    return USHMEM_OK;

destroy_sync:
    pthread_cond_destroy(&server->cond);
    pthread_mutex_destroy(&server->lock);
    close(server->wake_fd);
close_listen:
    close(server->listen_fd);
free_pids:
    free(server->allowed_pids);
free_server:
    free(server);
    return status;
}

ushmem_status_t ushmemi_fd_server_allow(struct ushmemi_fd_server *server, const pid_t *pids,
                                        int npids)
{
    pid_t *copy;
    ushmem_status_t status = copy_pids(server->rank, pids, npids, &copy);
    if (status != USHMEM_OK)
        return status;

    pthread_mutex_lock(&server->lock);
    pid_t *old = server->allowed_pids;
    server->allowed_pids = copy;
    server->npids = npids;
    server->pids_known = true;
    pthread_mutex_unlock(&server->lock);
    free(old);

    uint64_t one = 1;
    ssize_t w = write(server->wake_fd, &one, sizeof(one));
    (void)w; /* fails only when the counter is saturated, which still wakes */
    return USHMEM_OK;
}

ushmem_status_t ushmemi_fd_server_stop(struct ushmemi_fd_server *server, int timeout_s)
{
    ushmem_status_t status = USHMEM_OK;
    struct timespec deadline;

    if (server == NULL)
        return USHMEM_OK;

    clock_gettime(CLOCK_MONOTONIC, &deadline);
    deadline.tv_sec += timeout_s > 0 ? timeout_s : 0;

    pthread_mutex_lock(&server->lock);
    while (!server->done) {
        if (pthread_cond_timedwait(&server->cond, &server->lock, &deadline) == ETIMEDOUT)
            break;
    }
    bool done = server->done;
    server->stopping = true;
    pthread_mutex_unlock(&server->lock);

    /* A client that never came, or one waiting for a list that never came,
     * must not keep the thread, so wake it. */
    uint64_t one = 1;
    ssize_t w = write(server->wake_fd, &one, sizeof(one));
    (void)w;
    pthread_join(server->thread, NULL);

    if (!done) {
        /* Not necessarily an error: in auto mode peers may have used pidfd. */
        ushmemi_debug("fd server of rank %d: stopped after %d s with %d of %d clients served",
                      server->rank, timeout_s, server->served, server->expected);
        status = USHMEM_ERR_TIMEOUT;
    }

    pthread_cond_destroy(&server->cond);
    pthread_mutex_destroy(&server->lock);
    close(server->wake_fd);
    close(server->listen_fd);
    free(server->allowed_pids);
    free(server);
    return status;
}

/* Connects, retrying while the server is not listening yet. A connect to a
 * full backlog (strangers' connections queued ahead of ours) blocks; the
 * send timeout bounds that wait by the deadline. */
static ushmem_status_t connect_retry(const struct sockaddr_un *addr, socklen_t addr_len, int rank,
                                     double deadline, int *sock_p)
{
    useconds_t backoff_us = 200;

    for (;;) {
        int sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (sock < 0) {
            ushmemi_error("fd passing: socket() failed: %s", strerror(errno));
            return USHMEM_ERR_FD_PASSING;
        }
        int left_ms = remaining_ms(deadline);
        if (left_ms < 1)
            left_ms = 1; /* 0 would mean no limit */
        struct timeval tv = {.tv_sec = left_ms / 1000, .tv_usec = (left_ms % 1000) * 1000};
        if (setsockopt(sock, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) != 0) {
            ushmemi_error("fd passing: setting a send timeout failed: %s", strerror(errno));
            close(sock);
            return USHMEM_ERR_FD_PASSING;
        }
        if (connect(sock, (const struct sockaddr *)addr, addr_len) == 0) {
            *sock_p = sock;
            return USHMEM_OK;
        }
        int err = errno;
        close(sock);
        if (err != ECONNREFUSED && err != ENOENT && err != EAGAIN && err != EINTR) {
            ushmemi_error("fd passing: connect to the socket of rank %d failed: %s", rank,
                          strerror(err));
            return USHMEM_ERR_FD_PASSING;
        }
        if (now_s() >= deadline) {
            ushmemi_error("fd passing: rank %d's socket did not answer within the timeout "
                          "(last error: %s)", rank, strerror(err));
            return USHMEM_ERR_TIMEOUT;
        }
        usleep(backoff_us);
        if (backoff_us < 20000)
            backoff_us *= 2;
    }
}

static ushmem_status_t receive_fd(int sock, int rank, double deadline, int *fd_p)
{
    struct pollfd pfd = {.fd = sock, .events = POLLIN};
    int rc;

    do {
        rc = poll(&pfd, 1, remaining_ms(deadline));
    } while (rc < 0 && errno == EINTR);
    if (rc == 0) {
        ushmemi_error("fd passing: rank %d accepted the connection but sent no fd in time", rank);
        return USHMEM_ERR_TIMEOUT;
    }

    char byte;
    struct iovec iov = {.iov_base = &byte, .iov_len = 1};
    union {
        struct cmsghdr align;
        char buf[CMSG_SPACE(sizeof(int) * 4)];
    } control;
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1,
                         .msg_control = control.buf, .msg_controllen = sizeof(control.buf)};
    ssize_t got;
    do {
        got = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
    } while (got < 0 && errno == EINTR);
    if (got < 0) {
        ushmemi_error("fd passing: recvmsg from rank %d failed: %s", rank, strerror(errno));
        return USHMEM_ERR_FD_PASSING;
    }

    int fd = -1;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c != NULL; c = CMSG_NXTHDR(&msg, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
            continue;
        size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < n; i++) {
            int f;
            memcpy(&f, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
            if (fd < 0)
                fd = f;
            else
                close(f); /* more than we asked for: do not leak them */
        }
    }
    if (fd < 0 || (msg.msg_flags & MSG_CTRUNC)) {
        if (fd >= 0)
            close(fd);
        ushmemi_error("fd passing: rank %d closed the connection without sending a usable fd "
                      "(it refused our credentials?)", rank);
        return USHMEM_ERR_FD_PASSING;
    }
    *fd_p = fd;
    return USHMEM_OK;
}

ushmem_status_t ushmemi_fd_get_socket(const struct ushmemi_fd_name *name, int rank, pid_t pid,
                                      int timeout_s, int *fd_p)
{
    ushmem_status_t status;
    struct sockaddr_un addr;
    socklen_t addr_len;
    double deadline = now_s() + (timeout_s > 0 ? timeout_s : 0);
    int sock;

    if (!ushmemi_fd_name_is_set(name)) {
        ushmemi_error("fd passing: rank %d published no socket name", rank);
        return USHMEM_ERR_FD_PASSING;
    }
    name_address(name, &addr, &addr_len);
    status = connect_retry(&addr, addr_len, rank, deadline, &sock);
    if (status != USHMEM_OK)
        return status;

    /* Only the PE that published the name could bind it first, but check
     * before mapping what the server hands us. */
    struct ucred cred;
    socklen_t len = sizeof(cred);
    if (getsockopt(sock, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
        ushmemi_error("fd passing: SO_PEERCRED on rank %d's socket failed: %s", rank,
                      strerror(errno));
        status = USHMEM_ERR_FD_PASSING;
        goto close_sock;
    }
    if (cred.pid != pid || cred.uid != geteuid()) {
        ushmemi_error("fd passing: the socket of rank %d belongs to pid %d uid %d, expected pid %d "
                      "uid %d; refusing it", rank, (int)cred.pid, (int)cred.uid, (int)pid,
                      (int)geteuid());
        status = USHMEM_ERR_PERMISSION;
        goto close_sock;
    }

    status = receive_fd(sock, rank, deadline, fd_p);

close_sock:
    close(sock);
    return status;
}
