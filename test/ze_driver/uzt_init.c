/*
 * zeInit of the test driver: reads the fixture variables, reserves the two
 * address regions, starts the helper process and owns the socket to it
 * (request/reply calls and posted commands).
 */
#include "uzt_driver.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

struct uzt_driver uzt = {
    .magic = UZT_MAGIC_DRIVER,
    .sock = -1,
    .sock_lock = PTHREAD_MUTEX_INITIALIZER,
    .bounce_lock = PTHREAD_MUTEX_INITIALIZER,
};

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static ze_result_t init_result = ZE_RESULT_ERROR_UNINITIALIZED;
static volatile bool forked_child;

void uzt_log(const char *fmt, ...)
{
    int saved = errno;
    char line[1024];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(stderr, "ze test driver: %s\n", line);
    errno = saved;
}

uint64_t uzt_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t uzt_deadline(uint64_t timeout_ns)
{
    uint64_t now = uzt_now_ns();

    return timeout_ns > UINT64_MAX - now ? UINT64_MAX : now + timeout_ns;
}

ze_result_t uzt_errno_result(int err)
{
    switch (err) {
    case ENOMEM:
    case ENOSPC:
    case EMFILE:
    case ENFILE:
    case EFBIG:
        return ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY;
    case EINVAL:
    case ENOENT:
        return ZE_RESULT_ERROR_INVALID_ARGUMENT;
    case EPIPE:
    case ECONNRESET:
        return ZE_RESULT_ERROR_DEVICE_LOST;
    default:
        return ZE_RESULT_ERROR_UNKNOWN;
    }
}

/* ---- settings ---------------------------------------------------------- */

static bool parse_count(const char *s, unsigned long max, unsigned long *out)
{
    char *end;
    unsigned long v;

    if (*s < '0' || *s > '9')
        return false;
    errno = 0;
    v = strtoul(s, &end, 10);
    if (errno || *end || v > max)
        return false;
    *out = v;
    return true;
}

static bool parse_bdf(const char *s, ze_pci_address_ext_t *a)
{
    unsigned int dom, bus, dev, fn;
    int len = 0;

    if (strlen(s) != 12 || sscanf(s, "%4x:%2x:%2x.%1x%n", &dom, &bus, &dev, &fn, &len) != 4 ||
        len != 12 || dev > 0x1f || fn > 7)
        return false;
    for (int i = 0; i < 12; i++) {
        bool sep = i == 4 || i == 7 || i == 10;
        char c = s[i];

        if (sep != (c == ':' || c == '.') ||
            (!sep && !((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'))))
            return false;
    }
    *a = (ze_pci_address_ext_t){dom, bus, dev, fn};
    return true;
}

static bool parse_bdfs(const char *value)
{
    char *copy = strdup(value), *save = NULL, *tok;
    uint32_t n = 0;
    bool ok = copy != NULL;

    for (tok = ok ? strtok_r(copy, ",", &save) : NULL; ok && tok;
         tok = strtok_r(NULL, ",", &save)) {
        ze_pci_address_ext_t a;

        if (!parse_bdf(tok, &a)) {
            uzt_log("UZT_PCI_BDFS: '%s' is not a PCI address like 0000:3b:00.0", tok);
            ok = false;
        } else if (n < uzt.ndev) {
            uzt.dev[n].pci = a;
        }
        n++;
    }
    if (ok && n != uzt.ndev) {
        uzt_log("UZT_PCI_BDFS gives %u addresses for %u devices", n, uzt.ndev);
        ok = false;
    }
    free(copy);
    return ok;
}

static bool parse_affinity(const char *value)
{
    bool want[UZT_MAX_DEVICES] = {false};
    char *copy = strdup(value), *save = NULL, *tok;
    bool ok = copy != NULL, any = false;

    for (tok = ok ? strtok_r(copy, ",", &save) : NULL; ok && tok;
         tok = strtok_r(NULL, ",", &save)) {
        unsigned long i;

        if (!parse_count(tok, ULONG_MAX >> 1, &i)) {
            uzt_log("ZE_AFFINITY_MASK: '%s' is not a device index (this driver takes "
                    "plain indices only)",
                    tok);
            ok = false;
        } else if (i < uzt.ndev) {
            want[i] = true;
        }
        any = true;
    }
    free(copy);
    if (!ok)
        return false;
    for (uint32_t i = 0; i < uzt.ndev; i++)
        uzt.dev[i].visible = !any || want[i];
    return true;
}

static bool read_settings(void)
{
    const char *v;
    unsigned long n = 1;

    v = getenv("UZT_DEVICES");
    if (v && !(parse_count(v, UZT_MAX_DEVICES, &n) && n >= 1)) {
        uzt_log("UZT_DEVICES='%s': expected a count from 1 to %d", v, UZT_MAX_DEVICES);
        return false;
    }
    uzt.ndev = (uint32_t)n;
    for (uint32_t i = 0; i < uzt.ndev; i++) {
        uzt.dev[i] = (struct uzt_device){
            .magic = UZT_MAGIC_DEVICE, .index = i, .pci = {0, 0x10 + i, 0, 0}, .visible = true};
    }

    v = getenv("UZT_LINK");
    if (!v || !strcmp(v, "xelink")) {
        uzt.link = UZT_LINK_XELINK;
    } else if (!strcmp(v, "pcie")) {
        uzt.link = UZT_LINK_PCIE;
    } else if (!strcmp(v, "pcie-atomics")) {
        uzt.link = UZT_LINK_PCIE_ATOMICS;
    } else if (!strcmp(v, "none")) {
        uzt.link = UZT_LINK_NONE;
    } else {
        uzt_log("UZT_LINK='%s': expected xelink, pcie, pcie-atomics or none", v);
        return false;
    }

    v = getenv("UZT_PCI_BDFS");
    if (v && !parse_bdfs(v))
        return false;
    v = getenv("ZE_AFFINITY_MASK");
    if (v && !parse_affinity(v))
        return false;

    uzt.nvisible = 0;
    for (uint32_t i = 0; i < uzt.ndev; i++) {
        if (uzt.dev[i].visible)
            uzt.visible[uzt.nvisible++] = &uzt.dev[i];
    }
    return true;
}

/* FNV-1a of the boot id: the same in every process of the node, new at each boot. */
static uint64_t node_hash(void)
{
    char id[128] = "";
    uint64_t h = 0xcbf29ce484222325ULL;
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "re");

    if (!f || !fgets(id, sizeof id, f)) {
        uzt_log("cannot read /proc/sys/kernel/random/boot_id (%s); using the host name",
                strerror(errno));
        gethostname(id, sizeof id - 1);
    }
    if (f)
        fclose(f);
    id[strcspn(id, "\n")] = '\0';
    for (const char *p = id; *p; p++) {
        h ^= (unsigned char)*p;
        h *= 0x100000001b3ULL;
    }
    return h;
}

/* ---- regions ----------------------------------------------------------- */

static bool reserve_region(uint64_t base, const char *what)
{
    void *p = mmap((void *)base, UZT_REGION_SIZE, PROT_NONE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);

    if (p == MAP_FAILED || p != (void *)base) {
        uzt_log("cannot reserve the %s region at %#" PRIx64 " (1 TiB): %s", what, base,
                p == MAP_FAILED ? strerror(errno) : "the kernel placed it elsewhere");
        if (p != MAP_FAILED)
            munmap(p, UZT_REGION_SIZE);
        return false;
    }
    return true;
}

void uzt_mem_reserve(uint64_t addr, uint64_t size)
{
    void *p = mmap((void *)addr, size, PROT_NONE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);

    if (p == MAP_FAILED)
        uzt_log("cannot restore the reservation at %#" PRIx64 ": %s", addr, strerror(errno));
}

/* ---- the helper -------------------------------------------------------- */

static bool helper_path(char *path, size_t len)
{
    const char *env = getenv("UZT_HELPER");
    Dl_info info;

    if (env && *env) {
        snprintf(path, len, "%s", env);
    } else {
        char dir[PATH_MAX];

        if (!dladdr((void *)&uzt_init, &info) || !info.dli_fname) {
            uzt_log("cannot find where the driver was loaded from; set UZT_HELPER");
            return false;
        }
        snprintf(dir, sizeof dir, "%s", info.dli_fname);
        snprintf(path, len, "%s/ushmem-ze-helper", dirname(dir));
    }
    if (access(path, X_OK) != 0) {
        uzt_log("helper executable %s: %s (it is built next to the driver; "
                "UZT_HELPER names another)",
                path, strerror(errno));
        return false;
    }
    return true;
}

/*
 * posix_spawn, not fork: no copy of a large application's page tables and
 * none of its atfork handlers. The helper forks once itself and its first
 * process exits at once (reaped here), so nobody has to reap the helper: it
 * leaves at EOF and init collects it.
 */
static bool start_helper(void)
{
    char path[PATH_MAX], fdarg[16];
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    struct uzt_reply hello;
    struct pollfd pfd;
    sigset_t none;
    int sv[2], status = 0, err;
    pid_t pid, w;
    ssize_t n;

    if (!helper_path(path, sizeof path))
        return false;
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
        uzt_log("socketpair: %s", strerror(errno));
        return false;
    }
    snprintf(fdarg, sizeof fdarg, "%d", sv[1]);
    char *argv[] = {path, fdarg, NULL};

    /* dup2 onto itself clears FD_CLOEXEC (glibc 2.29+): the helper's end survives exec. */
    sigemptyset(&none);
    err = posix_spawn_file_actions_init(&fa);
    if (!err)
        err = posix_spawn_file_actions_adddup2(&fa, sv[1], sv[1]);
    if (!err)
        err = posix_spawnattr_init(&attr);
    if (!err) {
        posix_spawnattr_setsigmask(&attr, &none);
        posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);
        err = posix_spawn(&pid, path, &fa, &attr, argv, environ);
        posix_spawnattr_destroy(&attr);
    }
    posix_spawn_file_actions_destroy(&fa);
    close(sv[1]);
    if (err) {
        uzt_log("cannot start the helper %s: %s", path, strerror(err));
        goto close_sock;
    }
    /* ECHILD: SIGCHLD is ignored or someone reaped it; the hello tells. */
    while ((w = waitpid(pid, &status, 0)) < 0 && errno == EINTR)
        ;
    if (w == pid && (!WIFEXITED(status) || WEXITSTATUS(status) != 0)) {
        uzt_log("helper %s failed to start (exit status %d)", path,
                WIFEXITED(status) ? WEXITSTATUS(status) : -1);
        goto close_sock;
    }

    pfd = (struct pollfd){.fd = sv[0], .events = POLLIN};
    while ((n = poll(&pfd, 1, 20000)) < 0 && errno == EINTR)
        ;
    if (n == 0) {
        uzt_log("helper %s did not answer within 20 s", path);
        goto close_sock;
    }
    n = recv(sv[0], &hello, sizeof hello, 0);
    if (n != (ssize_t)sizeof hello) {
        uzt_log("helper %s exited before it was ready", path);
        goto close_sock;
    }
    if (hello.err) {
        uzt_log("helper: %s", hello.text);
        goto close_sock;
    }
    uzt.sock = sv[0];
    return true;

close_sock:
    close(sv[0]);
    return false;
}

static void after_fork_in_child(void)
{
    forked_child = true;
}

static void init_driver(void)
{
    if (!read_settings())
        return;
    uzt.node_hash = node_hash();
    uzt_fabric_init();
    if (!reserve_region(UZT_DEVICE_BASE, "device"))
        return;
    if (!reserve_region(UZT_HOST_BASE, "host"))
        goto unmap_device;
    if (!start_helper())
        goto unmap_host;
    init_result = ZE_RESULT_SUCCESS; /* the internal allocations below need it */
    if (uzt_mem_internal_alloc(UZT_PAGE, (void **)&uzt.ctl) != ZE_RESULT_SUCCESS)
        goto stop_helper;
    if (uzt_mem_internal_alloc(UZT_BOUNCE_SIZE, &uzt.bounce) != ZE_RESULT_SUCCESS)
        goto free_ctl;
    pthread_atfork(NULL, NULL, after_fork_in_child);
    return;

free_ctl:
    uzt_mem_internal_free(uzt.ctl);
stop_helper:
    init_result = ZE_RESULT_ERROR_UNINITIALIZED;
    close(uzt.sock);
    uzt.sock = -1;
unmap_host:
    munmap((void *)UZT_HOST_BASE, UZT_REGION_SIZE);
unmap_device:
    munmap((void *)UZT_DEVICE_BASE, UZT_REGION_SIZE);
}

ze_result_t uzt_init(ze_init_flags_t flags)
{
    /* A request for VPUs only is not for this GPU driver. */
    if ((flags & ZE_INIT_FLAG_VPU_ONLY) && !(flags & ZE_INIT_FLAG_GPU_ONLY))
        return ZE_RESULT_ERROR_UNINITIALIZED;
    if (forked_child) {
        uzt_log("zeInit in a child after fork(): exec first (the helper belongs to the parent)");
        return ZE_RESULT_ERROR_UNINITIALIZED;
    }
    pthread_once(&init_once, init_driver);
    return init_result;
}

/* ---- the socket -------------------------------------------------------- */

static ze_result_t usable(void)
{
    if (forked_child) {
        uzt_log("Level Zero used in a child after fork(): exec first");
        return ZE_RESULT_ERROR_UNINITIALIZED;
    }
    if (init_result != ZE_RESULT_SUCCESS)
        return ZE_RESULT_ERROR_UNINITIALIZED;
    if (uzt.lost)
        return ZE_RESULT_ERROR_DEVICE_LOST;
    return ZE_RESULT_SUCCESS;
}

static ze_result_t helper_gone(const char *what, int err)
{
    if (!uzt.lost)
        uzt_log("the helper process is gone (%s: %s); the device is lost", what,
                err ? strerror(err) : "end of file");
    uzt.lost = true;
    return ZE_RESULT_ERROR_DEVICE_LOST;
}

static ssize_t recv_with_fd(void *buf, size_t len, int *fd_p)
{
    struct iovec iov = {buf, len};
    union {
        struct cmsghdr h;
        char space[CMSG_SPACE(sizeof(int))];
    } ctl;
    struct msghdr msg = {.msg_iov = &iov,
                         .msg_iovlen = 1,
                         .msg_control = ctl.space,
                         .msg_controllen = sizeof ctl.space};
    struct cmsghdr *c;
    ssize_t n;
    int fd = -1;

    while ((n = recvmsg(uzt.sock, &msg, MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR)
        ;
    if (n < 0)
        return n;
    for (c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
            c->cmsg_len == CMSG_LEN(sizeof(int)))
            memcpy(&fd, CMSG_DATA(c), sizeof fd);
    }
    if (fd_p)
        *fd_p = fd;
    else if (fd >= 0)
        close(fd);
    return n;
}

ze_result_t uzt_rpc(const struct uzt_req *req, int fd_in, struct uzt_reply *rep, int *fd_out)
{
    ze_result_t r = usable();
    ssize_t n;

    if (fd_out)
        *fd_out = -1;
    if (r != ZE_RESULT_SUCCESS)
        return r;
    pthread_mutex_lock(&uzt.sock_lock);
    n = uzt_send_with_fd(uzt.sock, req, sizeof *req, fd_in);
    if (n != (ssize_t)sizeof *req) {
        r = helper_gone("send", n < 0 ? errno : 0);
        goto unlock;
    }
    n = recv_with_fd(rep, sizeof *rep, fd_out);
    if (n != (ssize_t)sizeof *rep) {
        if (fd_out && *fd_out >= 0) {
            close(*fd_out);
            *fd_out = -1;
        }
        r = helper_gone("receive", n < 0 ? errno : 0);
    }
unlock:
    pthread_mutex_unlock(&uzt.sock_lock);
    return r;
}

ze_result_t uzt_post(const void *msg, size_t len)
{
    ze_result_t r = usable();
    ssize_t n;

    if (r != ZE_RESULT_SUCCESS)
        return r;
    pthread_mutex_lock(&uzt.sock_lock);
    n = uzt_send_with_fd(uzt.sock, msg, len, -1);
    if (n != (ssize_t)len)
        r = helper_gone("send", n < 0 ? errno : 0);
    pthread_mutex_unlock(&uzt.sock_lock);
    return r;
}

bool uzt_helper_alive(void)
{
    struct pollfd pfd = {.fd = uzt.sock, .events = 0};

    if (uzt.lost)
        return false;
    if (poll(&pfd, 1, 0) == 1 && (pfd.revents & (POLLHUP | POLLERR))) {
        helper_gone("poll", 0);
        return false;
    }
    return true;
}
