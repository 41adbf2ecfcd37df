/* File descriptor passing between local PEs: pidfd_getfd when ptrace
 * permission allows it, otherwise SCM_RIGHTS over an abstract Unix socket
 * whose peers are checked with SO_PEERCRED. Abstract sockets leave nothing in
 * the file system and vanish with their process. The socket's name is
 * predictable, so the server hands the fd only to the pids it was told are
 * PEs of the job; until it knows them it makes clients wait. */
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
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "../common/log.h"

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

/* Fills an abstract address "\0ushmem-<job>-<rank>". A job id too long for
 * sun_path is replaced by its hash, which keeps names unique per job. */
static ushmem_status_t socket_address(const char *job_id, int rank, struct sockaddr_un *addr,
                                      socklen_t *len_p)
{
    char name[sizeof(addr->sun_path)];
    size_t room = sizeof(addr->sun_path) - 1; /* the leading NUL */
    int n;

    if (job_id == NULL || job_id[0] == '\0') {
        ushmemi_error("fd passing: no job id to name the socket of rank %d", rank);
        return USHMEM_ERR_INVALID_PARAM;
    }
    n = snprintf(name, sizeof(name), "ushmem-%s-%d", job_id, rank);
    if (n < 0 || (size_t)n > room) {
        uint64_t hash = 0xcbf29ce484222325ULL;
        for (const unsigned char *p = (const unsigned char *)job_id; *p; p++)
            hash = (hash ^ *p) * 0x100000001b3ULL;
        n = snprintf(name, sizeof(name), "ushmem-%016llx-%d", (unsigned long long)hash, rank);
    }
    memset(addr, 0, sizeof(*addr));
    addr->sun_family = AF_UNIX;
    memcpy(addr->sun_path + 1, name, (size_t)n);
    *len_p = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
    return USHMEM_OK;
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
    bool pids_known; /* false until the list is given: clients then wait */
    bool stopping;
    bool done;
    int served;
};

/* Caller holds the lock and has checked pids_known. */
static bool pid_allowed(const struct ushmemi_fd_server *server, pid_t pid)
{
    for (int i = 0; i < server->npids; i++)
        if (server->allowed_pids[i] == pid)
            return true;
    return false;
}

/* Consumes pending wake-ups; the flags say what they were for. */
static void drain_wake(struct ushmemi_fd_server *server)
{
    uint64_t count;
    ssize_t r = read(server->wake_fd, &count, sizeof(count));
    (void)r; /* nonblocking: EAGAIN only means another read got there first */
}

static bool is_stopping(struct ushmemi_fd_server *server)
{
    pthread_mutex_lock(&server->lock);
    bool stopping = server->stopping;
    pthread_mutex_unlock(&server->lock);
    return stopping;
}

/* Decides whether `pid` may have the fd, waiting for the allowed list while
 * it is unknown; false also when the server is told to stop meanwhile. A
 * client connecting before the PEs' pids are exchanged is normal: it is kept
 * waiting rather than refused, and other clients queue in the backlog. */
static bool wait_pid_allowed(struct ushmemi_fd_server *server, pid_t pid)
{
    bool allowed = false;

    pthread_mutex_lock(&server->lock);
    while (!server->pids_known && !server->stopping) {
        pthread_mutex_unlock(&server->lock);
        struct pollfd pfd = {.fd = server->wake_fd, .events = POLLIN};
        if (poll(&pfd, 1, -1) > 0)
            drain_wake(server);
        pthread_mutex_lock(&server->lock);
    }
    if (server->pids_known && !server->stopping)
        allowed = pid_allowed(server, pid);
    pthread_mutex_unlock(&server->lock);
    return allowed;
}

/* Sends the fd to one accepted client after checking who it is; true when
 * the fd went out. A refused client just sees the connection close. Refusals
 * are logged at debug level: the stranger is not ours to report, and a PE
 * that is refused logs the error on its side. */
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
    if (!wait_pid_allowed(server, cred.pid)) {
        ushmemi_debug("fd server of rank %d: refused a client (pid %d): not a PE of this job%s",
                      server->rank, (int)cred.pid,
                      is_stopping(server) ? " (or the server is stopping)" : "");
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
        /* Checked every round: a wait for the list may have consumed stop's
         * wake-up. */
        if (is_stopping(server))
            break;
        struct pollfd pfd[2] = {{.fd = server->listen_fd, .events = POLLIN},
                                {.fd = server->wake_fd, .events = POLLIN}};
        int rc = poll(pfd, 2, -1);
        if (rc < 0) {
            if (errno == EINTR)
                continue;
            ushmemi_warn("fd server of rank %d: poll failed: %s", server->rank, strerror(errno));
            break;
        }
        if (pfd[1].revents) {
            drain_wake(server); /* allow() wakes us too; the loop's test sees stop() */
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

ushmem_status_t ushmemi_fd_server_start(const char *job_id, int rank, int fd, int expected,
                                        const pid_t *allowed_pids, int npids,
                                        struct ushmemi_fd_server **server_p)
{
    ushmem_status_t status;
    struct sockaddr_un addr;
    socklen_t addr_len;
    pthread_condattr_t cattr;

    status = socket_address(job_id, rank, &addr, &addr_len);
    if (status != USHMEM_OK)
        return status;

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
    if (bind(server->listen_fd, (struct sockaddr *)&addr, addr_len) != 0) {
        ushmemi_error("fd server of rank %d: bind to abstract socket '@%.*s' failed: %s%s", rank,
                      (int)(addr_len - offsetof(struct sockaddr_un, sun_path) - 1),
                      addr.sun_path + 1, strerror(errno),
                      errno == EADDRINUSE ? " (another process of the same job id and rank "
                                            "is running)" : "");
        status = USHMEM_ERR_FD_PASSING;
        goto close_listen;
    }
    if (listen(server->listen_fd, expected > 0 ? expected : 1) != 0) {
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

/* Connects, retrying while the server is not listening yet. */
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

ushmem_status_t ushmemi_fd_get_socket(const char *job_id, int rank, pid_t pid, int timeout_s,
                                      int *fd_p)
{
    ushmem_status_t status;
    struct sockaddr_un addr;
    socklen_t addr_len;
    double deadline = now_s() + (timeout_s > 0 ? timeout_s : 0);
    int sock;

    status = socket_address(job_id, rank, &addr, &addr_len);
    if (status != USHMEM_OK)
        return status;
    status = connect_retry(&addr, addr_len, rank, deadline, &sock);
    if (status != USHMEM_OK)
        return status;

    /* The name is no secret: make sure the peer is the PE we expect before
     * mapping what it hands us. */
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
