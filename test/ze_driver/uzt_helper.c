/*
 * ushmem-ze-helper: the "device" of the Level Zero test driver. The driver
 * starts one per application process and talks to it over a SOCK_SEQPACKET
 * socket (uzt_proto.h). The helper reserves the same two regions as the
 * application, maps device memory (which the application cannot touch), runs
 * the commands of each immediate list in order on a thread of that list, and
 * runs kernels (host shared objects) one thread per work-item. It exits when
 * the socket reaches end of file: the application died or exited. The
 * driver spawns it; it forks once at start and the first process exits, so
 * the helper is nobody's child to reap.
 *
 * Usage: ushmem-ze-helper FD (started by the driver only).
 */
#include "ze_test_kernel.h"
#include "uzt_proto.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

static int sock = -1;

static void hlog(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void hlog(const char *fmt, ...)
{
    char line[1024];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(stderr, "ze test driver: helper: %s\n", line);
}

/* ---- work-items ---------------------------------------------------------- */

static _Thread_local const struct uzt_item *current_item;

__attribute__((visibility("default"))) const struct uzt_item *uzt_item_current(void)
{
    return current_item;
}

/* ---- memory -------------------------------------------------------------- */

/* Device allocations keep their memfd here, for export. Sorted by address. */
struct hmap {
    uint64_t addr;
    int fd;
};
static struct hmap *maps;
static size_t nmaps, capmaps;

static size_t maps_lower_bound(uint64_t addr)
{
    size_t lo = 0, hi = nmaps;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;

        if (maps[mid].addr < addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static bool maps_add(uint64_t addr, int fd)
{
    size_t i = maps_lower_bound(addr);

    if (nmaps == capmaps) {
        size_t cap = capmaps ? capmaps * 2 : 256;
        struct hmap *v = realloc(maps, cap * sizeof *v);

        if (!v)
            return false;
        maps = v;
        capmaps = cap;
    }
    memmove(&maps[i + 1], &maps[i], (nmaps - i) * sizeof *maps);
    maps[i] = (struct hmap){addr, fd};
    nmaps++;
    return true;
}

static int maps_find(uint64_t addr)
{
    size_t i = maps_lower_bound(addr);

    return i < nmaps && maps[i].addr == addr ? (int)i : -1;
}

static bool in_regions(uint64_t addr, uint64_t size)
{
    return size && size <= UZT_REGION_SIZE &&
           ((addr >= UZT_DEVICE_BASE && addr - UZT_DEVICE_BASE <= UZT_REGION_SIZE - size) ||
            (addr >= UZT_HOST_BASE && addr - UZT_HOST_BASE <= UZT_REGION_SIZE - size));
}

static int reserve(uint64_t addr, uint64_t size, int extra_flags)
{
    void *p = mmap((void *)addr, size, PROT_NONE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | extra_flags, -1, 0);

    if (p == MAP_FAILED)
        return errno;
    if (p != (void *)addr) {
        munmap(p, size);
        return EEXIST;
    }
    return 0;
}

static int fail(struct uzt_reply *rep, int err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(struct uzt_reply *rep, int err, const char *fmt, ...)
{
    va_list ap;
    size_t n;

    va_start(ap, fmt);
    vsnprintf(rep->text, sizeof rep->text, fmt, ap);
    va_end(ap);
    n = strlen(rep->text);
    snprintf(rep->text + n, sizeof rep->text - n, ": %s", strerror(err));
    rep->err = err;
    return err;
}

static void map_device(const struct uzt_req *req, struct uzt_reply *rep)
{
    char name[64];
    int fd;

    snprintf(name, sizeof name, UZT_MEMFD_DEVICE_PREFIX "%u", req->dev);
    fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0) {
        fail(rep, errno, "memfd_create");
        return;
    }
    if (ftruncate(fd, (off_t)req->size) != 0 ||
        fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) != 0) {
        fail(rep, errno, "sizing %" PRIu64 " bytes of device memory", req->size);
        goto close_fd;
    }
    if (mmap((void *)req->addr, req->size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0) ==
        MAP_FAILED) {
        fail(rep, errno, "mapping device memory at %#" PRIx64, req->addr);
        goto close_fd;
    }
    if (!maps_add(req->addr, fd)) {
        fail(rep, ENOMEM, "recording the mapping");
        reserve(req->addr, req->size, MAP_FIXED);
        goto close_fd;
    }
    return;

close_fd:
    close(fd);
}

static void map_fd(const struct uzt_req *req, int fd, struct uzt_reply *rep)
{
    if (fd < 0) {
        fail(rep, EBADF, "no fd came with the request");
        return;
    }
    if (mmap((void *)req->addr, req->size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0) ==
        MAP_FAILED)
        fail(rep, errno, "mapping %" PRIu64 " bytes at %#" PRIx64, req->size, req->addr);
}

static void unmap(const struct uzt_req *req, struct uzt_reply *rep)
{
    int i = maps_find(req->addr);
    int err = reserve(req->addr, req->size, MAP_FIXED);

    if (err)
        fail(rep, err, "restoring the reservation at %#" PRIx64, req->addr);
    if (i >= 0) {
        close(maps[i].fd);
        memmove(&maps[i], &maps[i + 1], (nmaps - (size_t)i - 1) * sizeof *maps);
        nmaps--;
    }
}

/* ---- modules ------------------------------------------------------------- */

/*
 * The memfd stays open while the module is loaded: the loader knows the
 * module as "/proc/self/fd/N", and a reused N would find the old module.
 */
struct hmodule {
    struct hmodule *next;
    void *dl;
    int fd;
};
static struct hmodule *modules;

static void module_load(int fd, struct uzt_reply *rep)
{
    struct hmodule *m;
    char path[64];

    if (fd < 0) {
        fail(rep, EBADF, "no fd came with the module");
        return;
    }
    m = calloc(1, sizeof *m);
    if (!m) {
        fail(rep, ENOMEM, "loading a module");
        close(fd);
        return;
    }
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    m->dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!m->dl) {
        snprintf(rep->text, sizeof rep->text, "%s", dlerror());
        rep->err = ENOEXEC;
        free(m);
        close(fd);
        return;
    }
    m->fd = fd;
    m->next = modules;
    modules = m;
    rep->a = (uint64_t)(uintptr_t)m->dl;
}

static struct hmodule **module_find(uint64_t handle)
{
    struct hmodule **p;

    for (p = &modules; *p; p = &(*p)->next) {
        if ((uint64_t)(uintptr_t)(*p)->dl == handle)
            return p;
    }
    return NULL;
}

static void module_unload(const struct uzt_req *req, struct uzt_reply *rep)
{
    struct hmodule **p = module_find(req->handle), *m;

    if (!p) {
        fail(rep, EINVAL, "no module %#" PRIx64, req->handle);
        return;
    }
    m = *p;
    *p = m->next;
    dlclose(m->dl);
    close(m->fd);
    free(m);
}

static void symbol(struct uzt_req *req, struct uzt_reply *rep)
{
    struct hmodule **p = module_find(req->handle);
    const ElfW(Sym) *sym = NULL;
    Dl_info info;
    void *addr;

    req->name[sizeof req->name - 1] = '\0';
    if (!p) {
        fail(rep, EINVAL, "no module %#" PRIx64, req->handle);
        return;
    }
    dlerror();
    addr = dlsym((*p)->dl, req->name);
    if (!addr) {
        snprintf(rep->text, sizeof rep->text, "no symbol '%s' in the module", req->name);
        rep->err = ENOENT;
        return;
    }
    rep->a = (uint64_t)(uintptr_t)addr;
    if (dladdr1(addr, &info, (void **)&sym, RTLD_DL_SYMENT) && sym)
        rep->b = sym->st_size;
}

/* ---- kernels ------------------------------------------------------------- */

struct launch {
    uzt_kernel_fn fn;
    void **args;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int gate; /* 0 wait, 1 run, 2 abandon */
};

struct work_item {
    pthread_t thread;
    struct uzt_item item;
    struct launch *launch;
};

static void *work_item_main(void *arg)
{
    struct work_item *w = arg;
    struct launch *l = w->launch;
    int gate;

    pthread_mutex_lock(&l->lock);
    while (l->gate == 0)
        pthread_cond_wait(&l->cond, &l->lock);
    gate = l->gate;
    pthread_mutex_unlock(&l->lock);
    if (gate == 1) {
        current_item = &w->item;
        l->fn(&w->item, (void *const *)l->args);
    }
    return NULL;
}

static void open_gate(struct launch *l, int gate)
{
    pthread_mutex_lock(&l->lock);
    l->gate = gate;
    pthread_cond_broadcast(&l->cond);
    pthread_mutex_unlock(&l->lock);
}

/* Every work-item gets a thread, all started before any runs; false on failure. */
static bool run_kernel(const unsigned char *payload, uint32_t size)
{
    struct uzt_launch d;
    struct launch l = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};
    struct work_item *items = NULL;
    unsigned char *argbytes = NULL;
    void *args[UZT_MAX_ARGS];
    uint32_t total, started = 0, nbytes;
    uint64_t nitems;
    pthread_attr_t attr;
    bool ok = false;

    if (size < sizeof d) {
        hlog("kernel launch: short payload");
        return false;
    }
    memcpy(&d, payload, sizeof d);
    nbytes = size - (uint32_t)sizeof d;
    nitems = (uint64_t)d.group_size[0] * d.group_size[1] * d.group_size[2] * d.group_count[0] *
             d.group_count[1] * d.group_count[2];
    if (nitems > UZT_MAX_ITEMS || d.nargs > UZT_MAX_ARGS) {
        hlog("kernel launch of %" PRIu64 " work-items, %u arguments: refused", nitems, d.nargs);
        return false;
    }
    for (uint32_t i = 0; i < d.nargs; i++) {
        if (d.arg_offset[i] >= nbytes) {
            hlog("kernel launch: argument %u lies outside the payload", i);
            return false;
        }
    }
    total = (uint32_t)nitems;
    if (total == 0)
        return true;
    argbytes = aligned_alloc(16, (nbytes + 16) & ~(size_t)15);
    items = calloc(total, sizeof *items);
    if (!argbytes || !items || pthread_attr_init(&attr) != 0) {
        hlog("kernel launch: out of memory");
        goto free_items;
    }
    memcpy(argbytes, payload + sizeof d, nbytes);
    for (uint32_t i = 0; i < d.nargs; i++)
        args[i] = argbytes + d.arg_offset[i];
    l.fn = (uzt_kernel_fn)(uintptr_t)d.fn;
    l.args = args;
    pthread_attr_setstacksize(&attr, (size_t)1 << 20);

    /* Group-major, x fastest: work-item i of the launch. */
    for (uint32_t i = 0; i < total; i++) {
        const uint32_t *gs = d.group_size, *gc = d.group_count;
        uint32_t per_group = gs[0] * gs[1] * gs[2], in = i % per_group, g = i / per_group;
        uint32_t loc[3] = {in % gs[0], in / gs[0] % gs[1], in / (gs[0] * gs[1])};
        uint32_t grp[3] = {g % gc[0], g / gc[0] % gc[1], g / (gc[0] * gc[1])};
        struct work_item *w = &items[i];
        int err;

        for (int k = 0; k < 3; k++) {
            w->item.local_id[k] = loc[k];
            w->item.group_id[k] = grp[k];
            w->item.group_size[k] = gs[k];
            w->item.group_count[k] = gc[k];
            w->item.global_id[k] = grp[k] * gs[k] + loc[k];
        }
        w->launch = &l;
        err = pthread_create(&w->thread, &attr, work_item_main, w);
        if (err) {
            hlog("kernel launch: thread %u of %u: %s", i + 1, total, strerror(err));
            goto join;
        }
        started++;
    }
    ok = true;
join:
    open_gate(&l, ok ? 1 : 2);
    for (uint32_t i = 0; i < started; i++)
        pthread_join(items[i].thread, NULL);
    pthread_attr_destroy(&attr);
free_items:
    free(items);
    free(argbytes);
    return ok;
}

/* ---- lists --------------------------------------------------------------- */

struct hcmd {
    struct hcmd *next;
    size_t len;
    unsigned char msg[];
};

struct hlist {
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    struct hcmd *head, *tail;
    bool busy; /* the thread is running a command */
    bool stop;
    struct uzt_list_ctl *ctl;
};

static struct hlist *lists[UZT_MAX_LISTS];

static void fill(unsigned char *dst, const unsigned char *pattern, size_t psize, size_t size)
{
    size_t done;

    if (psize == 1) {
        memset(dst, pattern[0], size);
        return;
    }
    done = psize < size ? psize : size;
    memcpy(dst, pattern, done);
    while (done < size) {
        size_t n = done <= size - done ? done : size - done;

        memcpy(dst + done, dst, n); /* done is a multiple of psize here */
        done += n;
    }
}

/* Returns false when the command could not run. */
static bool run_command(const unsigned char *msg)
{
    struct uzt_cmd c;
    const unsigned char *payload;

    memcpy(&c, msg, sizeof c);
    for (uint32_t i = 0; i < c.nwait; i++) {
        uint64_t w;

        memcpy(&w, msg + sizeof c + i * sizeof w, sizeof w);
        while (!uzt_event_sleep((_Atomic uint32_t *)(uintptr_t)w, 0))
            ;
    }
    payload = msg + sizeof c + c.nwait * sizeof(uint64_t);
    switch (c.kind) {
    case UZT_CMD_COPY:
        memmove((void *)(uintptr_t)c.dst, (const void *)(uintptr_t)c.src, c.size);
        break;
    case UZT_CMD_FILL:
        fill((unsigned char *)(uintptr_t)c.dst, payload, c.pattern_size, c.size);
        break;
    case UZT_CMD_RESET:
        uzt_event_reset((_Atomic uint32_t *)(uintptr_t)c.dst);
        break;
    case UZT_CMD_LAUNCH:
        if (!run_kernel(payload, c.payload_size))
            return false;
        break;
    default:
        break;
    }
    if (c.signal)
        uzt_event_set((_Atomic uint32_t *)(uintptr_t)c.signal);
    return true;
}

/* One more command of l is over (run, failed or dropped). */
static void finish(struct hlist *l, bool ok)
{
    if (!ok)
        atomic_store(&l->ctl->failed, 1);
    atomic_fetch_add(&l->ctl->done, 1);
    if (atomic_load(&l->ctl->waiters))
        uzt_futex_wake_all(&l->ctl->done);
}

static void *list_main(void *arg)
{
    struct hlist *l = arg;

    for (;;) {
        struct hcmd *c;

        pthread_mutex_lock(&l->lock);
        l->busy = false;
        while (!l->head && !l->stop)
            pthread_cond_wait(&l->cond, &l->lock);
        c = l->head;
        if (c) {
            l->head = c->next;
            if (!l->head)
                l->tail = NULL;
            l->busy = true;
        }
        pthread_mutex_unlock(&l->lock);
        if (!c)
            return NULL;
        finish(l, run_command(c->msg));
        free(c);
    }
}

static void list_create(const struct uzt_req *req, struct uzt_reply *rep)
{
    struct hlist *l;
    int err;

    if (req->handle >= UZT_MAX_LISTS || lists[req->handle] ||
        !in_regions(req->addr, sizeof(struct uzt_list_ctl))) {
        fail(rep, EINVAL, "list slot %" PRIu64, req->handle);
        return;
    }
    l = calloc(1, sizeof *l);
    if (!l) {
        fail(rep, ENOMEM, "creating a list");
        return;
    }
    pthread_mutex_init(&l->lock, NULL);
    pthread_cond_init(&l->cond, NULL);
    l->ctl = (struct uzt_list_ctl *)(uintptr_t)req->addr;
    err = pthread_create(&l->thread, NULL, list_main, l);
    if (err) {
        fail(rep, err, "starting the thread of a list");
        free(l);
        return;
    }
    lists[req->handle] = l;
}

static void list_destroy(const struct uzt_req *req, struct uzt_reply *rep)
{
    struct hlist *l = req->handle < UZT_MAX_LISTS ? lists[req->handle] : NULL;

    if (!l) {
        fail(rep, EINVAL, "no list in slot %" PRIu64, req->handle);
        return;
    }
    pthread_mutex_lock(&l->lock);
    l->stop = true;
    pthread_cond_signal(&l->cond);
    pthread_mutex_unlock(&l->lock);
    pthread_join(l->thread, NULL);
    lists[req->handle] = NULL;
    free(l);
}

static void enqueue(const unsigned char *msg, size_t len)
{
    struct uzt_cmd c;
    struct hlist *l;
    struct hcmd *h;

    memcpy(&c, msg, sizeof c);
    l = c.list < UZT_MAX_LISTS ? lists[c.list] : NULL;
    if (!l) {
        hlog("dropping a command for list slot %u, which has no list", c.list);
        return;
    }
    if (c.nwait > UZT_MAX_WAITS || len != sizeof c + c.nwait * sizeof(uint64_t) + c.payload_size) {
        hlog("dropping a malformed command (list %u, %zu bytes)", c.list, len);
        finish(l, false);
        return;
    }
    /*
     * The usual way to drain a list is to append a signal and wait for it:
     * on an idle list, signal at once rather than wake the list's thread.
     */
    pthread_mutex_lock(&l->lock);
    if (c.kind == UZT_CMD_BARRIER && c.nwait == 0 && !l->head && !l->busy) {
        if (c.signal)
            uzt_event_set((_Atomic uint32_t *)(uintptr_t)c.signal);
        finish(l, true);
        pthread_mutex_unlock(&l->lock);
        return;
    }
    pthread_mutex_unlock(&l->lock);
    h = malloc(sizeof *h + len);
    if (!h) {
        hlog("out of memory queueing a command");
        finish(l, false);
        return;
    }
    h->next = NULL;
    h->len = len;
    memcpy(h->msg, msg, len);
    pthread_mutex_lock(&l->lock);
    if (l->tail)
        l->tail->next = h;
    else
        l->head = h;
    l->tail = h;
    pthread_cond_signal(&l->cond);
    pthread_mutex_unlock(&l->lock);
}

/* ---- the socket ---------------------------------------------------------- */

static void reply(const struct uzt_reply *rep, int fd)
{
    if (uzt_send_with_fd(sock, rep, sizeof *rep, fd) != (ssize_t)sizeof *rep)
        _exit(0); /* the application is gone */
}

static void serve(const unsigned char *buf, size_t len, int fd)
{
    struct uzt_reply rep = {0};
    struct uzt_req req;
    int fd_out = -1, i;

    if (len < sizeof(uint32_t)) {
        hlog("empty message");
        goto close_fd;
    }
    memcpy(&req.op, buf, sizeof req.op);
    if (req.op == UZT_OP_COMMAND) {
        if (len >= sizeof(struct uzt_cmd))
            enqueue(buf, len);
        else
            hlog("short command of %zu bytes", len);
        goto close_fd;
    }
    if (len != sizeof req) {
        hlog("request of %zu bytes, expected %zu", len, sizeof req);
        goto close_fd;
    }
    memcpy(&req, buf, sizeof req);
    switch (req.op) {
    case UZT_OP_MAP_DEVICE:
    case UZT_OP_MAP_FD:
    case UZT_OP_UNMAP:
        if (!in_regions(req.addr, req.size) || req.size % UZT_PAGE) {
            fail(&rep, EINVAL, "range %#" PRIx64 "+%" PRIu64, req.addr, req.size);
            break;
        }
        if (req.op == UZT_OP_MAP_DEVICE)
            map_device(&req, &rep);
        else if (req.op == UZT_OP_MAP_FD)
            map_fd(&req, fd, &rep);
        else
            unmap(&req, &rep);
        break;
    case UZT_OP_EXPORT_FD:
        i = maps_find(req.addr);
        if (i < 0)
            fail(&rep, EINVAL, "no device allocation at %#" PRIx64, req.addr);
        else
            fd_out = maps[i].fd;
        break;
    case UZT_OP_LIST_CREATE:
        list_create(&req, &rep);
        break;
    case UZT_OP_LIST_DESTROY:
        list_destroy(&req, &rep);
        break;
    case UZT_OP_MODULE_LOAD:
        module_load(fd, &rep);
        fd = -1; /* kept by the module, or closed */
        break;
    case UZT_OP_MODULE_UNLOAD:
        module_unload(&req, &rep);
        break;
    case UZT_OP_SYMBOL:
        symbol(&req, &rep);
        break;
    default:
        fail(&rep, EINVAL, "unknown request %u", req.op);
        break;
    }
    reply(&rep, fd_out);
close_fd:
    if (fd >= 0)
        close(fd);
}

static void on_fault(int sig, siginfo_t *si, void *ctx)
{
    static const char hex[] = "0123456789abcdef";
    char msg[160] = "ze test driver: helper: a command or kernel touched unmapped memory at 0x";
    size_t n = strlen(msg);
    uintptr_t a = (uintptr_t)si->si_addr;

    (void)sig, (void)ctx;
    for (int shift = (int)sizeof a * 8 - 4; shift >= 0; shift -= 4)
        msg[n++] = hex[(a >> shift) & 0xf];
    msg[n++] = '\n';
    if (write(STDERR_FILENO, msg, n) < 0)
        _exit(2);
    _exit(1);
}

static void setup_process(void)
{
    struct sigaction sa = {.sa_sigaction = on_fault, .sa_flags = SA_SIGINFO};
    struct rlimit rl;

    /* Leave the application's other descriptors alone (pipes would never see EOF). */
    if (sock > 3)
        close_range(3, (unsigned int)sock - 1, 0);
    close_range((unsigned int)sock + 1, ~0u, 0);
    fcntl(sock, F_SETFD, FD_CLOEXEC);
    /* One memfd per device allocation stays open here. */
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    sigaction(SIGSEGV, &sa, NULL);
    sigaction(SIGBUS, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    /* A terminal's ^C or ^\ is for the application; the helper leaves at EOF. */
    signal(SIGINT, SIG_IGN);
    signal(SIGQUIT, SIG_IGN);
}

int main(int argc, char **argv)
{
    static unsigned char buf[UZT_MSG_MAX];
    struct uzt_reply hello = {0};
    char *end;
    long v;
    pid_t pid;
    int err;

    if (argc != 2 || (v = strtol(argv[1], &end, 10), *end || v < 0 || v > 65535)) {
        fprintf(stderr, "usage: %s FD (started by the ushmem Level Zero test driver)\n", argv[0]);
        return 2;
    }
    sock = (int)v;
    setup_process();
    /* Leave the driver's child at once, so that nobody has to reap the helper. */
    pid = fork();
    if (pid < 0) {
        fail(&hello, errno, "the helper cannot fork");
        reply(&hello, -1);
        return 1;
    }
    if (pid > 0)
        _exit(0);
    err = reserve(UZT_DEVICE_BASE, UZT_REGION_SIZE, MAP_FIXED_NOREPLACE);
    if (err) {
        fail(&hello, err, "cannot reserve the device region at %#llx (1 TiB) in the helper",
             UZT_DEVICE_BASE);
    } else {
        err = reserve(UZT_HOST_BASE, UZT_REGION_SIZE, MAP_FIXED_NOREPLACE);
        if (err)
            fail(&hello, err, "cannot reserve the host region at %#llx (1 TiB) in the helper",
                 UZT_HOST_BASE);
    }
    reply(&hello, -1);
    if (err)
        return 1;

    for (;;) {
        union {
            struct cmsghdr h;
            char space[CMSG_SPACE(sizeof(int))];
        } ctl;
        struct iovec iov = {buf, sizeof buf};
        struct msghdr msg = {.msg_iov = &iov,
                             .msg_iovlen = 1,
                             .msg_control = ctl.space,
                             .msg_controllen = sizeof ctl.space};
        struct cmsghdr *c;
        int fd = -1;
        ssize_t n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);

        if (n == 0)
            _exit(0);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            _exit(0);
        }
        for (c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
            if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
                c->cmsg_len == CMSG_LEN(sizeof(int)))
                memcpy(&fd, CMSG_DATA(c), sizeof fd);
        }
        if (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) {
            hlog("dropping a truncated message");
            if (fd >= 0)
                close(fd);
            continue;
        }
        serve(buf, (size_t)n, fd);
    }
}
