/* Check suite for fd passing (pidfd_getfd and SCM_RIGHTS over an abstract
 * socket) and for ushmemi_ipc_connect, which real processes exercise: the PEs
 * are forked children that share a fake out-of-band exchange in an anonymous
 * shared mapping. Strangers are forked too: as root they become uid 65534
 * (squatter.h). */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "child_util.h"
#include "fake_oob.h"
#include "squatter.h"
#include "../../src/common/log.h"
#include "../../src/device/device.h"
#include "../../src/transport/transport.h"

#define CONTENT "symmetric heap bytes from the exporter"

/* A job id no other test process uses. */
static const char *unique_job(char *buf, size_t len)
{
    static int counter;
    snprintf(buf, len, "chk%d-%d", (int)getpid(), counter++);
    return buf;
}

/* The fd servers draw their socket names with getrandom; this definition,
 * linked ahead of libc's, lets a test fix the next few draws so that it can
 * take a name before a server draws it. While fake_random_left is nonzero
 * (negative: for ever) every draw is fake_random_byte repeated. */
static int fake_random_left;
static unsigned char fake_random_byte;

ssize_t getrandom(void *buf, size_t len, unsigned int flags)
{
    if (fake_random_left != 0) {
        if (fake_random_left > 0)
            fake_random_left--;
        memset(buf, fake_random_byte, len);
        return (ssize_t)len;
    }
    return syscall(SYS_getrandom, buf, len, flags);
}

/* The socket name a server gets from the draw `byte` repeated, without the
 * leading '@'. */
static void fake_name(unsigned char byte, char *buf, size_t len)
{
    int n = snprintf(buf, len, "ushmem-");
    for (int i = 0; i < 16 && (size_t)n + 2 < len; i++)
        n += snprintf(buf + n, len - (size_t)n, "%02x", byte);
}

/* The names a stranger could predict before: "ushmem-<job id>-<rank>". */
static void old_names(const char *job, int npes, char names[][96], const char **ptrs)
{
    for (int r = 0; r < npes; r++) {
        snprintf(names[r], 96, "ushmem-%s-%d", job, r);
        ptrs[r] = names[r];
    }
}

/* Forks a squatter (squatter.h) that binds own[] and then connects to and
 * holds every ushmem socket it sees; returns once it has bound them. *other
 * says whether it runs as another uid. */
static pid_t squatter_start(const char *const *own, int nown, atomic_int *squatted,
                            bool *other_p)
{
    int ready[2];
    unsigned char report[2];
    ck_assert_int_eq(pipe(ready), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        close(ready[0]);
        squatter_main(ready[1], own, nown, squatted);
    }
    close(ready[1]);
    ck_assert_int_eq(read(ready[0], report, sizeof(report)), (ssize_t)sizeof(report));
    close(ready[0]);
    ck_assert_int_eq(report[1], nown);
    *other_p = report[0] == 'S';
    printf("squatter: uid %s, %d names bound\n", *other_p ? "65534" : "ours (not root)", nown);
    return pid;
}

static void squatter_stop(pid_t pid)
{
    kill(pid, SIGKILL);
    ck_assert_int_eq(reap(pid, 5.0), -100 - SIGKILL);
}

static int make_memfd(const char *text)
{
    int fd = memfd_create("check-fdpass", MFD_CLOEXEC);
    if (fd < 0)
        return -1;
    if (ftruncate(fd, 4096) != 0 || pwrite(fd, text, strlen(text) + 1, 0) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static bool fd_holds(int fd, const char *text)
{
    char buf[128] = "";
    ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
    return n > 0 && strcmp(buf, text) == 0;
}

/* A child that exports a memfd and reports its fd number through a pipe,
 * then waits until the parent closes the other pipe. */
struct exporter {
    pid_t pid;
    int remote_fd;
    int release_w;
};

static void exporter_start(struct exporter *ex)
{
    int info[2], release[2];
    ck_assert_int_eq(pipe(info), 0);
    ck_assert_int_eq(pipe(release), 0);
    ex->pid = fork();
    ck_assert_int_ge(ex->pid, 0);
    if (ex->pid == 0) {
        close(info[0]);
        close(release[1]);
        int fd = make_memfd(CONTENT);
        if (write(info[1], &fd, sizeof(fd)) != sizeof(fd))
            _exit(2);
        char c;
        while (read(release[0], &c, 1) > 0)
            ;
        _exit(fd >= 0 ? 0 : 3);
    }
    close(info[1]);
    close(release[0]);
    ck_assert_int_eq(read(info[0], &ex->remote_fd, sizeof(int)), (ssize_t)sizeof(int));
    close(info[0]);
    ex->release_w = release[1];
    ck_assert_int_ge(ex->remote_fd, 0);
}

static int exporter_stop(struct exporter *ex)
{
    close(ex->release_w);
    return reap(ex->pid, 5.0);
}

/* Whether this machine lets us take a child's fd with pidfd_getfd; a reason
 * is printed when it does not, and the caller skips. */
static bool pidfd_usable(void)
{
    struct exporter ex;
    int fd = -1;

    exporter_start(&ex);
    ushmem_status_t st = ushmemi_fd_get_pidfd(ex.pid, ex.remote_fd, &fd);
    int err = errno;
    exporter_stop(&ex);
    if (st == USHMEM_ERR_PERMISSION || st == USHMEM_ERR_UNSUPPORTED) {
        printf("SKIP: pidfd_getfd is refused here (%s): %s\n", ushmemi_status_name(st),
               strerror(err));
        return false;
    }
    if (fd >= 0)
        close(fd);
    return true;
}

START_TEST(pidfd_takes_child_fd)
{
    struct exporter ex;
    int fd = -1;

    if (!pidfd_usable())
        return;
    exporter_start(&ex);
    ck_assert_int_eq(ushmemi_fd_get_pidfd(ex.pid, ex.remote_fd, &fd), USHMEM_OK);
    ck_assert(fd_holds(fd, CONTENT));

    /* The copy is the same file: a write here is seen through the child's. */
    ck_assert_int_eq(pwrite(fd, "changed", 8, 0), 8);
    int fd2 = -1;
    ck_assert_int_eq(ushmemi_fd_get_pidfd(ex.pid, ex.remote_fd, &fd2), USHMEM_OK);
    ck_assert(fd_holds(fd2, "changed"));
    close(fd2);
    close(fd);

    /* A descriptor the child does not have is an error, output untouched. */
    fd = -7;
    ck_assert_int_ne(ushmemi_fd_get_pidfd(ex.pid, 1000, &fd), USHMEM_OK);
    ck_assert_int_eq(fd, -7);
    ck_assert_int_eq(exporter_stop(&ex), 0);
}
END_TEST

START_TEST(pidfd_dead_process_fails)
{
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0)
        _exit(0);
    ck_assert_int_eq(reap(pid, 5.0), 0);
    int fd = -7;
    ck_assert_int_ne(ushmemi_fd_get_pidfd(pid, 0, &fd), USHMEM_OK);
    ck_assert_int_eq(fd, -7);
}
END_TEST

/* A child that serves a memfd over the socket and reports the name it
 * drew; exits with the stop status (0 for OK, 1 for a timeout, 2 for
 * anything else). */
static pid_t serving_child(const pid_t *allowed, int npids, int stop_s,
                           struct ushmemi_fd_name *name_p)
{
    int info[2];
    ck_assert_int_eq(pipe(info), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        close(info[0]);
        int fd = make_memfd(CONTENT);
        struct ushmemi_fd_server *server;
        struct ushmemi_fd_name name;
        if (fd < 0 || ushmemi_fd_server_start(0, fd, 1, allowed, npids, &name, &server) != USHMEM_OK)
            _exit(3);
        if (write(info[1], &name, sizeof(name)) != (ssize_t)sizeof(name))
            _exit(4);
        close(info[1]);
        ushmem_status_t st = ushmemi_fd_server_stop(server, stop_s);
        _exit(st == USHMEM_OK ? 0 : st == USHMEM_ERR_TIMEOUT ? 1 : 2);
    }
    close(info[1]);
    ck_assert_int_eq(read(info[0], name_p, sizeof(*name_p)), (ssize_t)sizeof(*name_p));
    close(info[0]);
    return pid;
}

START_TEST(socket_takes_child_fd)
{
    pid_t me = getpid();
    struct ushmemi_fd_name name;

    pid_t child = serving_child(&me, 1, 5, &name);
    ck_assert(ushmemi_fd_name_is_set(&name));
    int fd = -1;
    ck_assert_int_eq(ushmemi_fd_get_socket(&name, 3, child, 5, &fd), USHMEM_OK);
    ck_assert(fd_holds(fd, CONTENT));
    close(fd);
    ck_assert_int_eq(reap(child, 5.0), 0);
}
END_TEST

START_TEST(socket_client_refuses_wrong_server)
{
    struct ushmemi_fd_name name;

    pid_t child = serving_child(NULL, 0, 1, &name);
    int fd = -7;
    /* Someone else sits on the name: the client must not take its fd. */
    ck_assert_int_eq(ushmemi_fd_get_socket(&name, 0, child + 100000, 5, &fd), USHMEM_ERR_PERMISSION);
    ck_assert_int_eq(fd, -7);
    ck_assert_int_ge(reap(child, 5.0), 0);
}
END_TEST

START_TEST(socket_server_refuses_unlisted_pid)
{
    pid_t only = 1; /* never this test process */
    struct ushmemi_fd_name name;

    pid_t child = serving_child(&only, 1, 1, &name);
    int fd = -7;
    ck_assert_int_eq(ushmemi_fd_get_socket(&name, 1, child, 5, &fd), USHMEM_ERR_FD_PASSING);
    ck_assert_int_eq(fd, -7);
    /* Nobody allowed came, so the server stopped on its deadline. */
    ck_assert_int_eq(reap(child, 5.0), 1);
}
END_TEST

START_TEST(socket_server_stop_has_deadline)
{
    struct ushmemi_fd_server *server, *second;
    struct ushmemi_fd_name name, name2;
    int fd = make_memfd(CONTENT);

    ck_assert_int_eq(ushmemi_fd_server_start(0, fd, 2, NULL, 0, &name, &server), USHMEM_OK);
    /* Two servers of one rank (the heap's and a segment's) never share a name. */
    ck_assert_int_eq(ushmemi_fd_server_start(0, fd, 1, NULL, 0, &name2, &second), USHMEM_OK);
    ck_assert(memcmp(&name, &name2, sizeof(name)) != 0);
    ck_assert_int_eq(ushmemi_fd_server_stop(second, 0), USHMEM_ERR_TIMEOUT);

    double t0 = now_s();
    ck_assert_int_eq(ushmemi_fd_server_stop(server, 1), USHMEM_ERR_TIMEOUT);
    double elapsed = now_s() - t0;
    ck_assert(elapsed >= 0.9 && elapsed < 4.0); /* slack: sleeps stretch on a loaded host */
    close(fd);
}
END_TEST

START_TEST(socket_client_times_out_without_server)
{
    struct ushmemi_fd_name name;
    int fd = -7;
    ck_assert_int_eq(getrandom(name.token, sizeof(name.token), 0), (ssize_t)sizeof(name.token));
    name.token[0] |= 1; /* set */

    double t0 = now_s();
    ck_assert_int_eq(ushmemi_fd_get_socket(&name, 5, getpid(), 1, &fd), USHMEM_ERR_TIMEOUT);
    double elapsed = now_s() - t0;
    ck_assert(elapsed >= 0.9 && elapsed < 4.0); /* slack: sleeps stretch on a loaded host */
    ck_assert_int_eq(fd, -7);

    /* A peer that published no name is an error at once, not a wait. */
    struct ushmemi_fd_name none;
    memset(&none, 0, sizeof(none));
    ck_assert_int_eq(ushmemi_fd_get_socket(&none, 5, getpid(), 5, &fd), USHMEM_ERR_FD_PASSING);
    ck_assert_int_eq(fd, -7);
}
END_TEST

START_TEST(socket_server_serves_several_clients)
{
    struct ushmemi_fd_server *server;
    struct ushmemi_fd_name name;
    int fd = make_memfd(CONTENT);

    /* No list up front, as ipc_connect does in socket mode: the clients may
     * connect before it is given and must be served once it is. */
    ck_assert_int_eq(ushmemi_fd_server_start(2, fd, 3, NULL, 0, &name, &server), USHMEM_OK);
    pid_t kids[3];
    for (int i = 0; i < 3; i++) {
        kids[i] = fork();
        ck_assert_int_ge(kids[i], 0);
        if (kids[i] == 0) {
            int got;
            if (ushmemi_fd_get_socket(&name, 2, getppid(), 5, &got) != USHMEM_OK)
                _exit(1);
            _exit(fd_holds(got, CONTENT) ? 0 : 2);
        }
    }
    usleep(20000);
    ck_assert_int_eq(ushmemi_fd_server_allow(server, kids, 3), USHMEM_OK);
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(reap(kids[i], 5.0), 0);
    ck_assert_int_eq(ushmemi_fd_server_stop(server, 5), USHMEM_OK);
    close(fd);
}
END_TEST

/* A taken name (here taken on purpose: the next draw is fixed and its name
 * bound first) costs the server one more draw, not its start. */
START_TEST(socket_name_taken_draws_another)
{
    struct ushmemi_fd_server *server;
    struct ushmemi_fd_name name;
    char taken[64];
    int fd = make_memfd(CONTENT);

    fake_name(0x5a, taken, sizeof(taken));
    ck_assert(squatter_bind(taken));
    fake_random_byte = 0x5a;
    fake_random_left = 1;
    ck_assert_int_eq(ushmemi_fd_server_start(0, fd, 1, NULL, 0, &name, &server), USHMEM_OK);
    ck_assert_int_eq(fake_random_left, 0);
    /* The second draw is fresh: not the whole fixed name (its first byte
     * alone is 0x5a one time in 256, which failed CI once). */
    struct ushmemi_fd_name fixed;
    memset(&fixed, 0x5a, sizeof(fixed));
    ck_assert(memcmp(&name, &fixed, sizeof(name)) != 0);

    pid_t peer = fork();
    ck_assert_int_ge(peer, 0);
    if (peer == 0) {
        int got;
        if (ushmemi_fd_get_socket(&name, 0, getppid(), 5, &got) != USHMEM_OK)
            _exit(1);
        _exit(fd_holds(got, CONTENT) ? 0 : 2);
    }
    ck_assert_int_eq(ushmemi_fd_server_allow(server, &peer, 1), USHMEM_OK);
    ck_assert_int_eq(reap(peer, 5.0), 0);
    ck_assert_int_eq(ushmemi_fd_server_stop(server, 5), USHMEM_OK);
    close(fd);
}
END_TEST

static int count_fds(void)
{
    int n = 0;
    for (int fd = 0; fd < 1024; fd++)
        n += fcntl(fd, F_GETFD) >= 0;
    return n;
}

/* A getrandom that repeats itself would loop for ever on a taken name: the
 * draws are bounded, and the failure says so and releases everything. */
START_TEST(socket_names_all_taken_fails_cleanly)
{
    struct ushmemi_fd_server *server = NULL;
    struct ushmemi_fd_name name;
    char taken[64];
    int fd = make_memfd(CONTENT);

    fake_name(0xa5, taken, sizeof(taken));
    ck_assert(squatter_bind(taken));
    int before = count_fds();
    fake_random_byte = 0xa5;
    fake_random_left = -1;
    double t0 = now_s();
    ck_assert_int_eq(ushmemi_fd_server_start(0, fd, 1, NULL, 0, &name, &server),
                     USHMEM_ERR_FD_PASSING);
    fake_random_left = 0;
    ck_assert(now_s() - t0 < 1.0);
    ck_assert_ptr_null(server);
    ck_assert_int_eq(count_fds(), before);
    close(fd);
}
END_TEST

/* A stranger that connects and then holds its connection open, never
 * reading: the serving thread must neither wait on it nor let it keep a
 * peer from its fd, whether it came before the pid list was known or after.
 * As root the stranger is another uid; otherwise (our uid) only the pid
 * check refuses it. */
START_TEST(socket_server_not_held_by_stranger)
{
    struct ushmemi_fd_server *server;
    struct ushmemi_fd_name name;
    char own[1][96];
    const char *own_ptrs[1];
    int fd = make_memfd(CONTENT);
    bool other;

    ck_assert_int_eq(ushmemi_fd_server_start(0, fd, 1, NULL, 0, &name, &server), USHMEM_OK);
    snprintf(own[0], sizeof(own[0]), "ushmem-unused-%d", (int)getpid());
    own_ptrs[0] = own[0];
    pid_t squatter = squatter_start(own_ptrs, 1, NULL, &other);
    /* Give it time to see the socket in /proc/net/unix and connect. */
    usleep(200000);

    int go[2];
    char c;
    ck_assert_int_eq(pipe(go), 0);
    pid_t peer = fork();
    ck_assert_int_ge(peer, 0);
    if (peer == 0) {
        close(go[1]);
        if (read(go[0], &c, 1) != 0)
            _exit(3);
        int got;
        double t0 = now_s();
        if (ushmemi_fd_get_socket(&name, 0, getppid(), 5, &got) != USHMEM_OK)
            _exit(1);
        if (now_s() - t0 > 2.0)
            _exit(4); /* kept waiting */
        _exit(fd_holds(got, CONTENT) ? 0 : 2);
    }
    close(go[0]);
    ck_assert_int_eq(ushmemi_fd_server_allow(server, &peer, 1), USHMEM_OK);
    usleep(100000); /* the stranger's queued connections are refused first */
    close(go[1]);
    ck_assert_int_eq(reap(peer, 10.0), 0);
    double t0 = now_s();
    ck_assert_int_eq(ushmemi_fd_server_stop(server, 5), USHMEM_OK);
    ck_assert(now_s() - t0 < 1.0);
    squatter_stop(squatter);
    close(fd);
}
END_TEST

/* A same-uid process that is no PE: connects to the server by hand, tells
 * the parent through `connected_w` that it is connected, and exits 0 when
 * the server closed or reset the connection without any fd, 1 when it was
 * handed one, 2 on other failures. */
static pid_t stranger(const struct ushmemi_fd_name *name, int connected_w)
{
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid != 0)
        return pid;

    /* Drop the inherited descriptors, the server's listening socket among
     * them: a copy held here would keep this child's own queued connection
     * alive after the server closes, and recvmsg below would never return. */
    if (connected_w > 3)
        close_range(3, (unsigned)connected_w - 1, 0);
    close_range((unsigned)connected_w + 1, ~0U, 0);

    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    int n = snprintf(addr.sun_path + 1, sizeof(addr.sun_path) - 1, "ushmem-");
    for (size_t i = 0; i < sizeof(name->token); i++)
        n += snprintf(addr.sun_path + 1 + n, sizeof(addr.sun_path) - 1 - (size_t)n, "%02x",
                      name->token[i]);
    socklen_t len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
    int sock = socket(AF_UNIX, SOCK_STREAM, 0);
    if (sock < 0)
        _exit(2);
    double deadline = now_s() + 5.0;
    while (connect(sock, (struct sockaddr *)&addr, len) != 0) {
        if (now_s() > deadline)
            _exit(2);
        usleep(1000);
    }
    char c = 'c';
    if (write(connected_w, &c, 1) != 1)
        _exit(2);

    char byte;
    struct iovec iov = {.iov_base = &byte, .iov_len = 1};
    union {
        struct cmsghdr align;
        char buf[CMSG_SPACE(sizeof(int) * 4)];
    } control;
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1,
                         .msg_control = control.buf, .msg_controllen = sizeof(control.buf)};
    ssize_t got = recvmsg(sock, &msg, 0);
    if (got < 0)
        /* A connection still in the backlog when the server stops is reset:
         * nothing was handed over either. */
        _exit(errno == ECONNRESET ? 0 : 2);
    _exit(got == 0 && msg.msg_controllen == 0 ? 0 : 1);
}

/* A process of our uid that is not in the allowed list gets nothing,
 * whether it connects before the list is known or after, and it does not
 * use up a place meant for a PE. */
START_TEST(socket_server_refuses_stranger_before_and_after_allow)
{
    struct ushmemi_fd_server *server;
    struct ushmemi_fd_name name;
    int fd = make_memfd(CONTENT);
    int connected[2], go[2];
    char c;
    ck_assert_int_eq(pipe(connected), 0);
    ck_assert_int_eq(pipe(go), 0);

    /* One place only: a refused stranger counted against it would leave the
     * real peer without its fd. */
    ck_assert_int_eq(ushmemi_fd_server_start(4, fd, 1, NULL, 0, &name, &server), USHMEM_OK);

    pid_t early = stranger(&name, connected[1]);
    ck_assert_int_eq(read(connected[0], &c, 1), 1);
    usleep(50000); /* it waits in the backlog for the list */

    /* The real peer waits for `go`, so it connects after the late stranger. */
    pid_t peer = fork();
    ck_assert_int_ge(peer, 0);
    if (peer == 0) {
        close(go[1]);
        if (read(go[0], &c, 1) != 0)
            _exit(3);
        int got;
        if (ushmemi_fd_get_socket(&name, 4, getppid(), 5, &got) != USHMEM_OK)
            _exit(1);
        _exit(fd_holds(got, CONTENT) ? 0 : 2);
    }
    close(go[0]);

    ck_assert_int_eq(ushmemi_fd_server_allow(server, &peer, 1), USHMEM_OK);
    ck_assert_int_eq(reap(early, 5.0), 0);

    pid_t late = stranger(&name, connected[1]);
    ck_assert_int_eq(read(connected[0], &c, 1), 1);
    ck_assert_int_eq(reap(late, 5.0), 0);

    close(go[1]);
    ck_assert_int_eq(reap(peer, 5.0), 0);
    ck_assert_int_eq(ushmemi_fd_server_stop(server, 5), USHMEM_OK);
    close(connected[0]);
    close(connected[1]);
    close(fd);
}
END_TEST

/* With the list never given, a waiting client is let go by stop, unserved. */
START_TEST(socket_server_stop_releases_waiting_client)
{
    struct ushmemi_fd_server *server;
    struct ushmemi_fd_name name;
    int fd = make_memfd(CONTENT);
    int connected[2];
    char c;
    ck_assert_int_eq(pipe(connected), 0);

    ck_assert_int_eq(ushmemi_fd_server_start(6, fd, 1, NULL, 0, &name, &server), USHMEM_OK);
    pid_t early = stranger(&name, connected[1]);
    ck_assert_int_eq(read(connected[0], &c, 1), 1);
    double t0 = now_s();
    ck_assert_int_eq(ushmemi_fd_server_stop(server, 0), USHMEM_ERR_TIMEOUT);
    ck_assert(now_s() - t0 < 1.0);
    ck_assert_int_eq(reap(early, 5.0), 0);
    close(connected[0]);
    close(connected[1]);
    close(fd);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* ushmemi_ipc_connect over forked PEs. */

#define MAX_PES 8
#define HEAP_SIZE (256 * 1024)
#define SLOT 64
#define OWN_OFFSET (128 * 1024) /* where each PE writes into its own heap */

#define MAX_EXCHANGES 4

struct shared_oob {
    struct fake_oob core;
    /* Under a squatter: the count of ushmem sockets it holds connections
     * to, and how many it must hold before the PEs may enter each
     * allgather, so that it is surely queued ahead of them. */
    atomic_int squatted;
    int squat_before[MAX_EXCHANGES];
};

struct fake_ctx {
    struct shared_oob *shm;
    int rank;
    int exchanges; /* allgathers entered so far */
};

static ushmem_status_t fake_barrier(void *ctx)
{
    struct fake_ctx *c = ctx;
    return fake_oob_barrier(&c->shm->core);
}

static ushmem_status_t fake_allgather(void *ctx, const void *mine, void *all, size_t len)
{
    struct fake_ctx *c = ctx;
    if (c->exchanges < MAX_EXCHANGES) {
        int want = c->shm->squat_before[c->exchanges];
        double deadline = now_s() + 5.0;
        while (atomic_load(&c->shm->squatted) < want && now_s() < deadline)
            usleep(1000);
    }
    c->exchanges++;
    return fake_oob_allgather(&c->shm->core, c->rank, mine, all, len);
}

/* The value `writer` stores into `target`'s heap: unique per pair. */
static uint64_t mark(int writer, int target)
{
    return 0xabc0000000000000ULL | (uint64_t)writer << 16 | (uint64_t)target;
}

/* How the forked PEs of one run are set up. */
struct pe_setup {
    enum ushmemi_fd_method method;
    int odd_rank; /* >= 0: this rank uses odd_method instead */
    enum ushmemi_fd_method odd_method;
    bool dumpable;
    unsigned no_pidfd_ranks; /* bit r: pidfd_getfd fails with EPERM in rank r */
    bool no_socket;          /* socket() fails with EACCES in every PE */
    bool squat;              /* a squatter holds the old names and connects to all */
};

#if defined(__x86_64__)
#define THIS_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define THIS_ARCH AUDIT_ARCH_AARCH64
#endif

/* A seccomp filter on this process: pidfd_getfd fails with EPERM, as a
 * container's profile makes it for a process without CAP_SYS_PTRACE (root
 * passes the ptrace check whatever the dumpable flag says), and socket()
 * with EACCES, so that a PE that opens any socket fails. False when it
 * cannot be installed. */
static bool deny_syscalls(bool pidfd_getfd, bool sockets)
{
#ifdef THIS_ARCH
    struct sock_filter filter[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, THIS_ARCH, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, pidfd_getfd ? SYS_pidfd_getfd : ~0U, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, sockets ? SYS_socket : ~0U, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EACCES & SECCOMP_RET_DATA)),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {.len = sizeof(filter) / sizeof(filter[0]), .filter = filter};
    return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 &&
           prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) == 0;
#else
    (void)pidfd_getfd;
    (void)sockets;
    return false;
#endif
}

/* One PE: connect, write into every peer, read what everyone wrote. Returns
 * an exit code naming the first check that failed. */
static int pe_main(struct shared_oob *shm, int rank, int npes, const char *job,
                   const struct pe_setup *setup)
{
    struct fake_ctx ctx = {shm, rank, 0};
    struct ushmemi_oob oob = {.rank = rank, .size = npes, .local_rank = rank, .local_size = npes,
                              .job_id = job, .ctx = &ctx, .allgather = fake_allgather,
                              .barrier = fake_barrier};
    struct ushmemi_ipc_config config = {.fd_method = setup->method, .timeout_s = 5};
    struct ushmemi_peer peers[MAX_PES];
    const struct ushmemi_device_ops *ops;
    struct ushmemi_device *dev;
    char *heap;
    int rc = 0;

    ushmemi_log_set_pe(rank);
    if (rank == setup->odd_rank)
        config.fd_method = setup->odd_method;
    /* A non-dumpable process refuses pidfd_getfd to peers without
     * CAP_SYS_PTRACE, as Yama and hardened containers do. */
    if (!setup->dumpable && prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0)
        return 9;
    if (ushmemi_device_open("cpu", rank, npes, &ops, &dev) != USHMEM_OK)
        return 10;
    if (ops->heap_alloc(dev, HEAP_SIZE, (void **)&heap) != USHMEM_OK)
        return 11;
    uint64_t own = mark(rank, rank);
    memcpy(heap + OWN_OFFSET, &own, sizeof(own));

    bool no_pidfd = (setup->no_pidfd_ranks >> rank) & 1;
    if ((no_pidfd || setup->no_socket) && !deny_syscalls(no_pidfd, setup->no_socket))
        return 8;
    if (ushmemi_ipc_connect(&oob, ops, dev, heap, HEAP_SIZE, &config, peers) != USHMEM_OK)
        return 12;

    for (int pe = 0; pe < npes; pe++) {
        if (peers[pe].map_why == NULL)
            return 13;
        if (peers[pe].base == NULL || (pe != rank && peers[pe].base == heap))
            return 14;
        uint64_t v = mark(rank, pe);
        memcpy((char *)peers[pe].base + (size_t)rank * SLOT, &v, sizeof(v));
        /* A PE whose pidfd_getfd is refused took every fd over a socket. */
        if (no_pidfd && pe != rank && strstr(peers[pe].map_why, "socket") == NULL)
            return 20;
    }
    if (fake_barrier(&ctx) != USHMEM_OK)
        return 15;
    for (int pe = 0; pe < npes; pe++) {
        uint64_t got;
        memcpy(&got, heap + (size_t)pe * SLOT, sizeof(got));
        if (got != mark(pe, rank))
            rc = rc ? rc : 16;
        memcpy(&got, (char *)peers[pe].base + OWN_OFFSET, sizeof(got));
        if (got != mark(pe, pe))
            rc = rc ? rc : 17;
    }
    /* Nobody unmaps while a peer may still be reading. */
    if (fake_barrier(&ctx) != USHMEM_OK)
        return 18;
    ushmemi_ipc_disconnect(ops, dev, peers, npes, rank, HEAP_SIZE);
    for (int pe = 0; pe < npes; pe++)
        if (pe != rank && peers[pe].base != NULL)
            rc = rc ? rc : 19;
    ops->heap_free(dev, heap, HEAP_SIZE);
    ops->close(dev);
    return rc;
}

static void run_setup_expect(int npes, const struct pe_setup *setup, int expected)
{
    char job[64];
    pid_t kids[MAX_PES];
    pid_t squatter = -1;
    struct shared_oob *shm = mmap(NULL, sizeof(*shm), PROT_READ | PROT_WRITE,
                                  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    ck_assert_ptr_ne(shm, MAP_FAILED);
    atomic_init(&shm->core.arrived, 0);
    atomic_init(&shm->core.generation, 0);
    atomic_init(&shm->squatted, 0);
    shm->core.size = npes;
    unique_job(job, sizeof(job));
    /* Where the servers are listening before an exchange, the squatter
     * must hold connections to all of them before the PEs go on. */
    int servers_before = setup->method == USHMEMI_FD_SOCKET ? 0
                         : setup->method == USHMEMI_FD_AUTO && setup->no_pidfd_ranks ? 2 : -1;
    if (setup->squat) {
        /* The names a stranger could predict from the job id before. */
        char names[MAX_PES][96];
        const char *ptrs[MAX_PES];
        bool other;
        old_names(job, npes, names, ptrs);
        squatter = squatter_start(ptrs, npes, &shm->squatted, &other);
        if (servers_before >= 0)
            shm->squat_before[servers_before] = npes;
    }

    double t0 = now_s();
    for (int r = 0; r < npes; r++) {
        kids[r] = fork();
        ck_assert_int_ge(kids[r], 0);
        if (kids[r] == 0)
            _exit(pe_main(shm, r, npes, job, setup));
    }
    for (int r = 0; r < npes; r++) {
        int code = reap(kids[r], 10.0);
        ck_assert_msg(code == expected, "PE %d of %d exited with %d, expected %d", r, npes, code,
                      expected);
    }
    if (setup->squat) {
        int held = atomic_load(&shm->squatted);
        printf("%d PEs (%s) under the squatter: %.2f s; it held connections to %d sockets\n",
               npes, setup->method == USHMEMI_FD_SOCKET ? "socket"
               : setup->method == USHMEMI_FD_PIDFD ? "pidfd" : "auto", now_s() - t0, held);
        if (servers_before >= 0)
            ck_assert_int_ge(held, npes);
    }
    if (squatter > 0)
        squatter_stop(squatter);
    munmap(shm, sizeof(*shm));
}

static void run_pes_expect(int npes, enum ushmemi_fd_method method, bool dumpable, int expected)
{
    struct pe_setup setup = {.method = method, .odd_rank = -1, .dumpable = dumpable};
    run_setup_expect(npes, &setup, expected);
}

static void run_pes(int npes, enum ushmemi_fd_method method, bool dumpable)
{
    run_pes_expect(npes, method, dumpable, 0);
}

/* PE counts of the loop tests: _i indexes this. */
static const int pe_counts[] = {2, 4, 8};
#define NCOUNTS ((int)(sizeof(pe_counts) / sizeof(pe_counts[0])))

START_TEST(ipc_connect_pidfd)
{
    if (!pidfd_usable())
        return;
    run_pes(pe_counts[_i], USHMEMI_FD_PIDFD, true);
}
END_TEST

START_TEST(ipc_connect_socket) { run_pes(pe_counts[_i], USHMEMI_FD_SOCKET, true); }
END_TEST

START_TEST(ipc_connect_auto) { run_pes(pe_counts[_i], USHMEMI_FD_AUTO, true); }
END_TEST

/* pidfd mode must not fall back: where ptrace rights are missing, every PE
 * fails ipc_connect promptly instead of hanging or using the socket. */
START_TEST(ipc_connect_pidfd_nondumpable)
{
    pid_t child = fork();
    ck_assert_int_ge(child, 0);
    if (child == 0) {
        /* Probe: may this process take a non-dumpable sibling's fd? */
        prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
        int fd = make_memfd(CONTENT);
        pause();
        _exit(fd >= 0 ? 0 : 1);
    }
    usleep(20000);
    int fd = -1;
    /* fd 0 exists in every process; only the permission matters here. */
    ushmem_status_t st = ushmemi_fd_get_pidfd(child, 0, &fd);
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    if (fd >= 0)
        close(fd);
    bool refused = st == USHMEM_ERR_PERMISSION || st == USHMEM_ERR_UNSUPPORTED;
    printf("ipc_connect_pidfd_nondumpable: pidfd_getfd %s here\n", refused ? "refused" : "allowed");
    run_pes_expect(pe_counts[_i], USHMEMI_FD_PIDFD, false, refused ? 12 : 0);
}
END_TEST

/* Without ptrace rights over its peers (run as a user without
 * CAP_SYS_PTRACE) auto mode must fall back to the socket and still connect. */
START_TEST(ipc_connect_auto_nondumpable) { run_pes(pe_counts[_i], USHMEMI_FD_AUTO, false); }
END_TEST

/* pidfd_getfd refused outright (a seccomp filter, which binds root too):
 * auto falls back to sockets in every PE, or in the one PE refused, and
 * that PE takes every fd over a socket while the others keep pidfd. pidfd
 * mode fails on every PE that was refused and says what to set. */
START_TEST(ipc_connect_auto_pidfd_refused)
{
    struct pe_setup setup = {.method = USHMEMI_FD_AUTO, .odd_rank = -1, .dumpable = true,
                             .no_pidfd_ranks = ~0U};
    run_setup_expect(pe_counts[_i], &setup, 0);
    setup.no_pidfd_ranks = 1U << (pe_counts[_i] - 1);
    run_setup_expect(pe_counts[_i], &setup, 0);
}
END_TEST

START_TEST(ipc_connect_pidfd_mode_refused)
{
    struct pe_setup setup = {.method = USHMEMI_FD_PIDFD, .odd_rank = -1, .dumpable = true,
                             .no_pidfd_ranks = ~0U};
    run_setup_expect(2, &setup, 12);
}
END_TEST

/* Where pidfd_getfd works, auto mode opens no socket at all: with socket()
 * denied in every PE it still connects. The same filter in socket mode
 * fails, which shows that the filter bites. */
START_TEST(ipc_connect_auto_opens_no_socket)
{
    if (!pidfd_usable())
        return;
    struct pe_setup setup = {.method = USHMEMI_FD_AUTO, .odd_rank = -1, .dumpable = true,
                             .no_socket = true};
    run_setup_expect(pe_counts[_i], &setup, 0);
    setup.method = USHMEMI_FD_SOCKET;
    run_setup_expect(2, &setup, 12);
}
END_TEST

/* Every PE's first name is taken (the first draw is fixed, and its name
 * bound here first): the servers draw again and the job connects. In auto
 * mode with pidfd refused the fallback servers meet the same. */
START_TEST(ipc_connect_name_taken)
{
    char taken[64];
    fake_name(0x3c, taken, sizeof(taken));
    ck_assert(squatter_bind(taken)); /* kept until the test process ends */
    fake_random_byte = 0x3c;
    fake_random_left = 1; /* in each forked PE: its own first draw */

    struct pe_setup setup = {.method = USHMEMI_FD_SOCKET, .odd_rank = -1, .dumpable = true};
    run_setup_expect(pe_counts[_i], &setup, 0);
    setup.method = USHMEMI_FD_AUTO;
    setup.no_pidfd_ranks = ~0U;
    run_setup_expect(pe_counts[_i], &setup, 0);
    fake_random_left = 0;
}
END_TEST

/* A stranger (uid 65534 when root) binds every name it can predict from
 * the job id and connects to and holds open every ushmem socket it sees in
 * /proc/net/unix: the job connects anyway, in every mode, in bounded time
 * (run_setup_expect gives each PE 10 s). */
START_TEST(ipc_connect_under_squat)
{
    struct pe_setup setup = {.odd_rank = -1, .dumpable = true, .squat = true};
    static const enum ushmemi_fd_method methods[] = {USHMEMI_FD_SOCKET, USHMEMI_FD_AUTO,
                                                     USHMEMI_FD_AUTO, USHMEMI_FD_PIDFD};
    setup.method = methods[_i];
    if (_i == 2)
        setup.no_pidfd_ranks = ~0U; /* auto, falling back to sockets */
    if (setup.method == USHMEMI_FD_PIDFD && !pidfd_usable())
        return;
    run_setup_expect(4, &setup, 0);
    run_setup_expect(8, &setup, 0);
}
END_TEST

/* USHMEM_FD_PASSING decides which exchanges follow the cards: PEs that
 * differ would wait in different ones, so every PE fails at once instead. */
START_TEST(ipc_connect_methods_differ)
{
    struct pe_setup setup = {.method = USHMEMI_FD_AUTO, .odd_rank = 1,
                             .odd_method = USHMEMI_FD_SOCKET, .dumpable = true};
    double t0 = now_s();
    run_setup_expect(3, &setup, 12);
    ck_assert(now_s() - t0 < 5.0);
}
END_TEST

START_TEST(ipc_connect_single_pe)
{
    run_pes(1, USHMEMI_FD_SOCKET, true);
}
END_TEST

START_TEST(route_names)
{
    ck_assert_str_eq(ushmemi_route_name(USHMEMI_ROUTE_NONE), "none");
    ck_assert_str_eq(ushmemi_route_name(USHMEMI_ROUTE_SELF), "self");
    ck_assert_str_eq(ushmemi_route_name(USHMEMI_ROUTE_DIRECT), "direct");
    ck_assert_str_eq(ushmemi_route_name(USHMEMI_ROUTE_PROXY_OFI), "proxy/ofi");
    ck_assert_str_eq(ushmemi_op_class_name(USHMEMI_CLASS_SIGNAL), "signals");
}
END_TEST

static Suite *fdpass_suite(void)
{
    Suite *s = suite_create("fdpass");

    TCase *pidfd = tcase_create("pidfd");
    tcase_add_test(pidfd, pidfd_takes_child_fd);
    tcase_add_test(pidfd, pidfd_dead_process_fails);
    suite_add_tcase(s, pidfd);

    TCase *sock = tcase_create("socket");
    tcase_set_timeout(sock, 20);
    tcase_add_test(sock, socket_takes_child_fd);
    tcase_add_test(sock, socket_client_refuses_wrong_server);
    tcase_add_test(sock, socket_server_refuses_unlisted_pid);
    tcase_add_test(sock, socket_server_stop_has_deadline);
    tcase_add_test(sock, socket_client_times_out_without_server);
    tcase_add_test(sock, socket_server_serves_several_clients);
    tcase_add_test(sock, socket_server_refuses_stranger_before_and_after_allow);
    tcase_add_test(sock, socket_server_stop_releases_waiting_client);
    tcase_add_test(sock, socket_name_taken_draws_another);
    tcase_add_test(sock, socket_names_all_taken_fails_cleanly);
    tcase_add_test(sock, socket_server_not_held_by_stranger);
    suite_add_tcase(s, sock);

    TCase *ipc = tcase_create("ipc_connect");
    tcase_set_timeout(ipc, 30);
    /* 2, 4 and 8 PEs, each mode */
    tcase_add_loop_test(ipc, ipc_connect_pidfd, 0, NCOUNTS);
    tcase_add_loop_test(ipc, ipc_connect_socket, 0, NCOUNTS);
    tcase_add_loop_test(ipc, ipc_connect_auto, 0, NCOUNTS);
    tcase_add_loop_test(ipc, ipc_connect_auto_nondumpable, 0, NCOUNTS);
    tcase_add_loop_test(ipc, ipc_connect_pidfd_nondumpable, 0, 2);
    tcase_add_loop_test(ipc, ipc_connect_auto_pidfd_refused, 0, NCOUNTS);
    tcase_add_test(ipc, ipc_connect_pidfd_mode_refused);
    tcase_add_loop_test(ipc, ipc_connect_auto_opens_no_socket, 0, NCOUNTS);
    tcase_add_loop_test(ipc, ipc_connect_name_taken, 0, NCOUNTS);
    tcase_add_loop_test(ipc, ipc_connect_under_squat, 0, 4);
    tcase_add_test(ipc, ipc_connect_methods_differ);
    tcase_add_test(ipc, ipc_connect_single_pe);
    tcase_add_test(ipc, route_names);
    suite_add_tcase(s, ipc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(fdpass_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
