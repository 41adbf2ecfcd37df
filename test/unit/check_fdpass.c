/* Check suite for fd passing (pidfd_getfd and SCM_RIGHTS over an abstract
 * socket) and for ushmemi_ipc_connect, which real processes exercise: the PEs
 * are forked children that share a fake out-of-band exchange in an anonymous
 * shared mapping. */
#include <check.h>
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "child_util.h"
#include "fake_oob.h"
#include "../../src/common/log.h"
#include "../../src/device/device.h"
#include "../../src/transport/transport.h"

#define CONTENT "symmetric heap bytes from the exporter"

/* A job id no other test process uses, so abstract socket names never clash. */
static const char *unique_job(char *buf, size_t len)
{
    static int counter;
    snprintf(buf, len, "chk%d-%d", (int)getpid(), counter++);
    return buf;
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

/* A child that serves a memfd over the socket; exits with the stop status
 * (0 for OK, 1 for a timeout, 2 for anything else). */
static pid_t serving_child(const char *job, int rank, const pid_t *allowed, int npids,
                           int delay_ms, int stop_s)
{
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid != 0)
        return pid;

    int fd = make_memfd(CONTENT);
    struct ushmemi_fd_server *server;
    usleep((useconds_t)delay_ms * 1000);
    if (fd < 0 || ushmemi_fd_server_start(job, rank, fd, 1, allowed, npids, &server) != USHMEM_OK)
        _exit(3);
    ushmem_status_t st = ushmemi_fd_server_stop(server, stop_s);
    _exit(st == USHMEM_OK ? 0 : st == USHMEM_ERR_TIMEOUT ? 1 : 2);
}

START_TEST(socket_takes_child_fd)
{
    char job[64];
    pid_t me = getpid();
    unique_job(job, sizeof(job));

    /* The server starts late on purpose: the client must retry. */
    pid_t child = serving_child(job, 3, &me, 1, 50, 5);
    int fd = -1;
    ck_assert_int_eq(ushmemi_fd_get_socket(job, 3, child, 5, &fd), USHMEM_OK);
    ck_assert(fd_holds(fd, CONTENT));
    close(fd);
    ck_assert_int_eq(reap(child, 5.0), 0);
}
END_TEST

START_TEST(socket_client_refuses_wrong_server)
{
    char job[64];
    unique_job(job, sizeof(job));

    pid_t child = serving_child(job, 0, NULL, 0, 0, 1);
    int fd = -7;
    /* Someone else sits on the name: the client must not take its fd. */
    ck_assert_int_eq(ushmemi_fd_get_socket(job, 0, child + 100000, 5, &fd), USHMEM_ERR_PERMISSION);
    ck_assert_int_eq(fd, -7);
    ck_assert_int_ge(reap(child, 5.0), 0);
}
END_TEST

START_TEST(socket_server_refuses_unlisted_pid)
{
    char job[64];
    pid_t only = 1; /* never this test process */
    unique_job(job, sizeof(job));

    pid_t child = serving_child(job, 1, &only, 1, 0, 1);
    int fd = -7;
    ck_assert_int_eq(ushmemi_fd_get_socket(job, 1, child, 5, &fd), USHMEM_ERR_FD_PASSING);
    ck_assert_int_eq(fd, -7);
    /* Nobody allowed came, so the server stopped on its deadline. */
    ck_assert_int_eq(reap(child, 5.0), 1);
}
END_TEST

START_TEST(socket_server_stop_has_deadline)
{
    char job[64];
    struct ushmemi_fd_server *server;
    int fd = make_memfd(CONTENT);
    unique_job(job, sizeof(job));

    ck_assert_int_eq(ushmemi_fd_server_start(job, 0, fd, 2, NULL, 0, &server), USHMEM_OK);
    double t0 = now_s();
    ck_assert_int_eq(ushmemi_fd_server_stop(server, 1), USHMEM_ERR_TIMEOUT);
    double elapsed = now_s() - t0;
    ck_assert(elapsed >= 0.9 && elapsed < 4.0); /* slack: sleeps stretch on a loaded host */

    /* The name is free again once the server has stopped. */
    ck_assert_int_eq(ushmemi_fd_server_start(job, 0, fd, 1, NULL, 0, &server), USHMEM_OK);
    ck_assert_int_eq(ushmemi_fd_server_stop(server, 0), USHMEM_ERR_TIMEOUT);
    close(fd);
}
END_TEST

START_TEST(socket_client_times_out_without_server)
{
    char job[64];
    int fd = -7;
    unique_job(job, sizeof(job));

    double t0 = now_s();
    ck_assert_int_eq(ushmemi_fd_get_socket(job, 5, getpid(), 1, &fd), USHMEM_ERR_TIMEOUT);
    double elapsed = now_s() - t0;
    ck_assert(elapsed >= 0.9 && elapsed < 4.0); /* slack: sleeps stretch on a loaded host */
    ck_assert_int_eq(fd, -7);
}
END_TEST

START_TEST(socket_server_serves_several_clients)
{
    char job[64];
    struct ushmemi_fd_server *server;
    int fd = make_memfd(CONTENT);
    unique_job(job, sizeof(job));

    /* No list up front, as ipc_connect does: the clients may connect before
     * it is given and must be served once it is. */
    ck_assert_int_eq(ushmemi_fd_server_start(job, 2, fd, 3, NULL, 0, &server), USHMEM_OK);
    pid_t kids[3];
    for (int i = 0; i < 3; i++) {
        kids[i] = fork();
        ck_assert_int_ge(kids[i], 0);
        if (kids[i] == 0) {
            int got;
            if (ushmemi_fd_get_socket(job, 2, getppid(), 5, &got) != USHMEM_OK)
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

/* A same-uid process that is no PE: connects to "@ushmem-<job>-<rank>" by
 * hand, tells the parent through `connected_w` that it is connected, and
 * exits 0 when the server closed or reset the connection without any fd, 1
 * when it was handed one, 2 on other failures. */
static pid_t stranger(const char *job, int rank, int connected_w)
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
    int n = snprintf(addr.sun_path + 1, sizeof(addr.sun_path) - 1, "ushmem-%s-%d", job, rank);
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

/* The socket's name is predictable: a process of our uid that is not in the
 * allowed list gets nothing, whether it connects before the list is known or
 * after, and it does not use up a place meant for a PE. */
START_TEST(socket_server_refuses_stranger_before_and_after_allow)
{
    char job[64];
    struct ushmemi_fd_server *server;
    int fd = make_memfd(CONTENT);
    int connected[2], go[2];
    char c;
    unique_job(job, sizeof(job));
    ck_assert_int_eq(pipe(connected), 0);
    ck_assert_int_eq(pipe(go), 0);

    /* One place only: a refused stranger counted against it would leave the
     * real peer without its fd. */
    ck_assert_int_eq(ushmemi_fd_server_start(job, 4, fd, 1, NULL, 0, &server), USHMEM_OK);

    pid_t early = stranger(job, 4, connected[1]);
    ck_assert_int_eq(read(connected[0], &c, 1), 1);
    usleep(50000); /* let the server accept it and wait for the list */

    /* The real peer waits for `go`, so it connects after the late stranger. */
    pid_t peer = fork();
    ck_assert_int_ge(peer, 0);
    if (peer == 0) {
        close(go[1]);
        if (read(go[0], &c, 1) != 0)
            _exit(3);
        int got;
        if (ushmemi_fd_get_socket(job, 4, getppid(), 5, &got) != USHMEM_OK)
            _exit(1);
        _exit(fd_holds(got, CONTENT) ? 0 : 2);
    }
    close(go[0]);

    ck_assert_int_eq(ushmemi_fd_server_allow(server, &peer, 1), USHMEM_OK);
    ck_assert_int_eq(reap(early, 5.0), 0);

    pid_t late = stranger(job, 4, connected[1]);
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
    char job[64];
    struct ushmemi_fd_server *server;
    int fd = make_memfd(CONTENT);
    int connected[2];
    char c;
    unique_job(job, sizeof(job));
    ck_assert_int_eq(pipe(connected), 0);

    ck_assert_int_eq(ushmemi_fd_server_start(job, 6, fd, 1, NULL, 0, &server), USHMEM_OK);
    pid_t early = stranger(job, 6, connected[1]);
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

struct shared_oob {
    struct fake_oob core;
};

struct fake_ctx {
    struct shared_oob *shm;
    int rank;
};

static ushmem_status_t fake_barrier(void *ctx)
{
    struct fake_ctx *c = ctx;
    return fake_oob_barrier(&c->shm->core);
}

static ushmem_status_t fake_allgather(void *ctx, const void *mine, void *all, size_t len)
{
    struct fake_ctx *c = ctx;
    return fake_oob_allgather(&c->shm->core, c->rank, mine, all, len);
}

/* The value `writer` stores into `target`'s heap: unique per pair. */
static uint64_t mark(int writer, int target)
{
    return 0xabc0000000000000ULL | (uint64_t)writer << 16 | (uint64_t)target;
}

/* One PE: connect, write into every peer, read what everyone wrote. Returns
 * an exit code naming the first check that failed. */
static int pe_main(struct shared_oob *shm, int rank, int npes, const char *job,
                   enum ushmemi_fd_method method, bool dumpable)
{
    struct fake_ctx ctx = {shm, rank};
    struct ushmemi_oob oob = {.rank = rank, .size = npes, .local_rank = rank, .local_size = npes,
                              .job_id = job, .ctx = &ctx, .allgather = fake_allgather,
                              .barrier = fake_barrier};
    struct ushmemi_ipc_config config = {.fd_method = method, .timeout_s = 5};
    struct ushmemi_peer peers[MAX_PES];
    const struct ushmemi_device_ops *ops;
    struct ushmemi_device *dev;
    char *heap;
    int rc = 0;

    ushmemi_log_set_pe(rank);
    /* A non-dumpable process refuses pidfd_getfd to peers without
     * CAP_SYS_PTRACE, as Yama and hardened containers do. */
    if (!dumpable && prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0)
        return 9;
    if (ushmemi_device_open("cpu", rank, npes, &ops, &dev) != USHMEM_OK)
        return 10;
    if (ops->heap_alloc(dev, HEAP_SIZE, (void **)&heap) != USHMEM_OK)
        return 11;
    uint64_t own = mark(rank, rank);
    memcpy(heap + OWN_OFFSET, &own, sizeof(own));

    if (ushmemi_ipc_connect(&oob, ops, dev, heap, HEAP_SIZE, &config, peers) != USHMEM_OK)
        return 12;

    for (int pe = 0; pe < npes; pe++) {
        if (peers[pe].map_why == NULL)
            return 13;
        if (peers[pe].base == NULL || (pe != rank && peers[pe].base == heap))
            return 14;
        uint64_t v = mark(rank, pe);
        memcpy((char *)peers[pe].base + (size_t)rank * SLOT, &v, sizeof(v));
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

static void run_pes_expect(int npes, enum ushmemi_fd_method method, bool dumpable, int expected)
{
    char job[64];
    pid_t kids[MAX_PES];
    struct shared_oob *shm = mmap(NULL, sizeof(*shm), PROT_READ | PROT_WRITE,
                                  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    ck_assert_ptr_ne(shm, MAP_FAILED);
    atomic_init(&shm->core.arrived, 0);
    atomic_init(&shm->core.generation, 0);
    shm->core.size = npes;
    unique_job(job, sizeof(job));

    for (int r = 0; r < npes; r++) {
        kids[r] = fork();
        ck_assert_int_ge(kids[r], 0);
        if (kids[r] == 0)
            _exit(pe_main(shm, r, npes, job, method, dumpable));
    }
    for (int r = 0; r < npes; r++) {
        int code = reap(kids[r], 10.0);
        ck_assert_msg(code == expected, "PE %d of %d exited with %d, expected %d", r, npes, code,
                      expected);
    }
    munmap(shm, sizeof(*shm));
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
    suite_add_tcase(s, sock);

    TCase *ipc = tcase_create("ipc_connect");
    tcase_set_timeout(ipc, 30);
    /* 2 and 4 PEs, each mode */
    tcase_add_loop_test(ipc, ipc_connect_pidfd, 0, NCOUNTS);
    tcase_add_loop_test(ipc, ipc_connect_socket, 0, NCOUNTS);
    tcase_add_loop_test(ipc, ipc_connect_auto, 0, NCOUNTS);
    tcase_add_loop_test(ipc, ipc_connect_auto_nondumpable, 0, NCOUNTS);
    tcase_add_loop_test(ipc, ipc_connect_pidfd_nondumpable, 0, 2);
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
