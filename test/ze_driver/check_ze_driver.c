/*
 * Tests of the Level Zero test driver through Debian's real loader and its
 * validation layer (meson sets ZE_ENABLE_ALT_DRIVERS and the layer). Each
 * test is a subcommand run in its own process: check_ze_driver NAME [KERNELS.so]
 * Exit 0 on success; a failed check prints file:line and exits 1.
 */
#include <level_zero/ze_api.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../count_maps.h"

static void fail_at(const char *file, int line, const char *what, const char *fmt, ...)
    __attribute__((format(printf, 4, 5), noreturn));
static void fail_at(const char *file, int line, const char *what, const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "%s:%d: check failed: %s", file, line, what);
    if (*fmt == ' ')
        fmt++; /* CHECK's messages start with a space, so that none is empty */
    if (*fmt) {
        fputs(": ", stderr);
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
    }
    fputc('\n', stderr);
    exit(1);
}

#define CHECK(cond, ...)                                         \
    do {                                                         \
        if (!(cond))                                             \
            fail_at(__FILE__, __LINE__, #cond, " " __VA_ARGS__); \
    } while (0)

#define CHECK_ZE(call, expect)                                                             \
    do {                                                                                   \
        ze_result_t r_ = (call);                                                           \
        if (r_ != (expect))                                                                \
            fail_at(__FILE__, __LINE__, #call, "returned %#x, expected %#x", (unsigned)r_, \
                    (unsigned)(expect));                                                   \
    } while (0)

#define OK(call) CHECK_ZE(call, ZE_RESULT_SUCCESS)

#define MiB ((size_t)1 << 20)

/* ---- fixture ----------------------------------------------------------- */

struct fx {
    ze_driver_handle_t drv;
    ze_context_handle_t ctx;
    uint32_t ndev;
    ze_device_handle_t dev[16];
    ze_command_list_handle_t list; /* asynchronous, device 0, ordinal 0 */
    ze_event_pool_handle_t pool;
    ze_event_handle_t done; /* for fx_sync */
};

static ze_command_list_handle_t make_list(struct fx *f, int dev, uint32_t ordinal,
                                          ze_command_queue_mode_t mode)
{
    ze_command_queue_desc_t d = {
        .stype = ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC, .ordinal = ordinal, .mode = mode};
    ze_command_list_handle_t l;

    OK(zeCommandListCreateImmediate(f->ctx, f->dev[dev], &d, &l));
    return l;
}

static ze_event_handle_t make_event(struct fx *f, uint32_t index)
{
    ze_event_desc_t d = {.stype = ZE_STRUCTURE_TYPE_EVENT_DESC,
                         .index = index,
                         .signal = ZE_EVENT_SCOPE_FLAG_HOST,
                         .wait = ZE_EVENT_SCOPE_FLAG_HOST};
    ze_event_handle_t e;

    OK(zeEventCreate(f->pool, &d, &e));
    return e;
}

static void fx_init(struct fx *f)
{
    ze_context_desc_t cd = {.stype = ZE_STRUCTURE_TYPE_CONTEXT_DESC};
    ze_event_pool_desc_t pd = {.stype = ZE_STRUCTURE_TYPE_EVENT_POOL_DESC,
                               .flags = ZE_EVENT_POOL_FLAG_HOST_VISIBLE,
                               .count = 64};
    uint32_t n = 0;

    memset(f, 0, sizeof *f);
    OK(zeInit(0));
    OK(zeDriverGet(&n, NULL));
    CHECK(n == 1, "%u drivers", n);
    OK(zeDriverGet(&n, &f->drv));
    OK(zeContextCreate(f->drv, &cd, &f->ctx));
    OK(zeDeviceGet(f->drv, &f->ndev, NULL));
    CHECK(f->ndev >= 1 && f->ndev <= 16, "%u devices", f->ndev);
    OK(zeDeviceGet(f->drv, &f->ndev, f->dev));
    f->list = make_list(f, 0, 0, ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS);
    OK(zeEventPoolCreate(f->ctx, &pd, 0, NULL, &f->pool));
    f->done = make_event(f, 63);
}

static void fx_fini(struct fx *f)
{
    OK(zeEventDestroy(f->done));
    OK(zeEventPoolDestroy(f->pool));
    OK(zeCommandListDestroy(f->list));
    OK(zeContextDestroy(f->ctx));
}

/* Waits for everything appended to l so far (the 1.4 API has no list sync). */
static void list_sync(struct fx *f, ze_command_list_handle_t l)
{
    OK(zeEventHostReset(f->done));
    OK(zeCommandListAppendSignalEvent(l, f->done));
    OK(zeEventHostSynchronize(f->done, UINT64_MAX));
}

static void *dev_alloc(struct fx *f, int dev, size_t size, size_t align)
{
    ze_device_mem_alloc_desc_t d = {.stype = ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC};
    void *p = NULL;

    OK(zeMemAllocDevice(f->ctx, &d, size, align, f->dev[dev], &p));
    CHECK(p != NULL);
    return p;
}

static void *host_alloc(struct fx *f, size_t size, size_t align)
{
    ze_host_mem_alloc_desc_t d = {.stype = ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC};
    void *p = NULL;

    OK(zeMemAllocHost(f->ctx, &d, size, align, &p));
    CHECK(p != NULL);
    return p;
}

static void copy(struct fx *f, void *dst, const void *src, size_t size)
{
    OK(zeCommandListAppendMemoryCopy(f->list, dst, src, size, NULL, 0, NULL));
}

static void pattern(unsigned char *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)(i * 131u + seed * 7u + (i >> 12));
}

static void check_pattern(const unsigned char *p, size_t n, unsigned seed, const char *what)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char want = (unsigned char)(i * 131u + seed * 7u + (i >> 12));

        if (p[i] != want)
            fail_at(__FILE__, __LINE__, what, "byte %zu of %zu is %#x, expected %#x", i, n, p[i],
                    want);
    }
}

static uint64_t node_hash(void)
{
    char id[128] = "";
    uint64_t h = 0xcbf29ce484222325ULL;
    FILE *fp = fopen("/proc/sys/kernel/random/boot_id", "r");

    CHECK(fp && fgets(id, sizeof id, fp));
    fclose(fp);
    id[strcspn(id, "\n")] = '\0';
    for (const char *c = id; *c; c++) {
        h ^= (unsigned char)*c;
        h *= 0x100000001b3ULL;
    }
    return h;
}

static uint32_t device_index(ze_device_handle_t d)
{
    ze_device_properties_t p = {.stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES};

    OK(zeDeviceGetProperties(d, &p));
    return p.uuid.id[11];
}

static uint64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int count_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    int n = 0;

    CHECK(d);
    while (readdir(d))
        n++;
    closedir(d);
    return n;
}

static int count_maps(void)
{
    int n = test_count_maps();

    CHECK(n >= 0);
    return n;
}

/* Runs this program again as `check_ze_driver sub arg` with extra environment. */
static pid_t spawn_self(const char *sub, const char *arg, const char *const *env, int out_fd)
{
    pid_t pid = fork();

    CHECK(pid >= 0);
    if (pid == 0) {
        for (const char *const *e = env; e && *e; e++)
            putenv((char *)*e);
        if (out_fd >= 0) {
            dup2(out_fd, STDERR_FILENO);
            dup2(out_fd, STDOUT_FILENO);
        }
        execl("/proc/self/exe", "check_ze_driver", sub, arg, (char *)NULL);
        _exit(127);
    }
    return pid;
}

static int wait_exit(pid_t pid)
{
    int st;

    while (waitpid(pid, &st, 0) < 0)
        CHECK(errno == EINTR);
    if (WIFSIGNALED(st))
        return 128 + WTERMSIG(st);
    return WEXITSTATUS(st);
}

/* ---- properties -------------------------------------------------------- */

static void check_identity(struct fx *f, ze_device_handle_t d, uint32_t index)
{
    ze_device_properties_t p = {.stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES};
    uint64_t h = node_hash();
    char name[64];

    OK(zeDeviceGetProperties(d, &p));
    (void)f;
    CHECK(p.type == ZE_DEVICE_TYPE_GPU && p.vendorId == 0x8086 && p.deviceId == 0x0bd5);
    CHECK(!(p.flags & ZE_DEVICE_PROPERTY_FLAG_INTEGRATED), "flags %#x", p.flags);
    CHECK(p.numThreadsPerEU && p.physicalEUSimdWidth && p.numEUsPerSubslice &&
          p.numSubslicesPerSlice && p.numSlices && p.maxMemAllocSize);
    CHECK(memcmp(p.uuid.id, &h, 8) == 0, "uuid does not start with the boot id hash");
    CHECK(p.uuid.id[8] == 'u' && p.uuid.id[9] == 'z' && p.uuid.id[10] == 't');
    CHECK(p.uuid.id[11] == index, "uuid index %u, expected %u", p.uuid.id[11], index);
    for (int i = 12; i < 16; i++)
        CHECK(p.uuid.id[i] == 0);
    snprintf(name, sizeof name, "ushmem test GPU %u", index);
    CHECK(!strcmp(p.name, name), "name '%s'", p.name);
}

static void check_pci(ze_device_handle_t d, uint32_t dom, uint32_t bus, uint32_t dev, uint32_t fn)
{
    ze_pci_ext_properties_t p = {.stype = ZE_STRUCTURE_TYPE_PCI_EXT_PROPERTIES};

    OK(zeDevicePciGetPropertiesExt(d, &p));
    CHECK(p.address.domain == dom && p.address.bus == bus && p.address.device == dev &&
              p.address.function == fn,
          "PCI %04x:%02x:%02x.%x, expected %04x:%02x:%02x.%x", p.address.domain, p.address.bus,
          p.address.device, p.address.function, dom, bus, dev, fn);
}

static ze_device_p2p_property_flags_t p2p(ze_device_handle_t a, ze_device_handle_t b,
                                          ze_bool_t *can)
{
    ze_device_p2p_properties_t p = {.stype = ZE_STRUCTURE_TYPE_DEVICE_P2P_PROPERTIES};

    OK(zeDeviceGetP2PProperties(a, b, &p));
    OK(zeDeviceCanAccessPeer(a, b, can));
    return p.flags;
}

static int test_props(struct fx *f, const char *arg)
{
    const ze_device_p2p_property_flags_t both =
        ZE_DEVICE_P2P_PROPERTY_FLAG_ACCESS | ZE_DEVICE_P2P_PROPERTY_FLAG_ATOMICS;
    ze_driver_properties_t dp = {.stype = ZE_STRUCTURE_TYPE_DRIVER_PROPERTIES};
    ze_driver_ipc_properties_t ip = {.stype = ZE_STRUCTURE_TYPE_DRIVER_IPC_PROPERTIES};
    ze_device_compute_properties_t cp = {.stype = ZE_STRUCTURE_TYPE_DEVICE_COMPUTE_PROPERTIES};
    ze_device_module_properties_t mp = {.stype = ZE_STRUCTURE_TYPE_DEVICE_MODULE_PROPERTIES};
    ze_command_queue_group_properties_t qg[4];
    ze_device_memory_properties_t mem = {.stype = ZE_STRUCTURE_TYPE_DEVICE_MEMORY_PROPERTIES};
    ze_api_version_t v;
    ze_bool_t can;
    uint32_t n = 0;
    int st;

    (void)arg;
    CHECK(f->ndev == 1);
    check_identity(f, f->dev[0], 0);
    check_pci(f->dev[0], 0, 0x10, 0, 0);
    OK(zeDriverGetApiVersion(f->drv, &v));
    CHECK(v >= ZE_API_VERSION_1_0 && v <= ZE_API_VERSION_CURRENT, "api %#x", v);
    OK(zeDriverGetProperties(f->drv, &dp));
    CHECK(dp.driverVersion != 0);
    OK(zeDriverGetIpcProperties(f->drv, &ip));
    CHECK(ip.flags & ZE_IPC_PROPERTY_FLAG_MEMORY);
    OK(zeDeviceGetSubDevices(f->dev[0], &n, NULL));
    CHECK(n == 0);
    OK(zeDeviceGetComputeProperties(f->dev[0], &cp));
    CHECK(cp.maxTotalGroupSize >= 256 && cp.maxGroupSizeX && cp.maxGroupCountX);
    OK(zeDeviceGetModuleProperties(f->dev[0], &mp));
    CHECK(mp.spirvVersionSupported == 0);
    {
        static const uint8_t zero[ZE_MAX_NATIVE_KERNEL_UUID_SIZE];

        CHECK(memcmp(mp.nativeKernelSupported.id, zero, sizeof zero) != 0);
    }
    n = 0;
    OK(zeDeviceGetCommandQueueGroupProperties(f->dev[0], &n, NULL));
    CHECK(n == 2, "%u queue groups", n);
    for (int i = 0; i < 2; i++)
        qg[i] = (ze_command_queue_group_properties_t){
            .stype = ZE_STRUCTURE_TYPE_COMMAND_QUEUE_GROUP_PROPERTIES};
    OK(zeDeviceGetCommandQueueGroupProperties(f->dev[0], &n, qg));
    CHECK(qg[0].flags == (ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COMPUTE |
                          ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COPY) &&
          qg[0].numQueues == 1);
    CHECK(qg[1].flags == ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COPY && qg[1].numQueues == 2);
    n = 0;
    OK(zeDeviceGetMemoryProperties(f->dev[0], &n, NULL));
    CHECK(n == 1);
    OK(zeDeviceGetMemoryProperties(f->dev[0], &n, &mem));
    CHECK(mem.totalSize == (uint64_t)64 << 30, "%" PRIu64, mem.totalSize);
    CHECK(p2p(f->dev[0], f->dev[0], &can) == both && can);

    /* Under meson the validation layer is there: it answers a NULL output itself. */
    if (getenv("ZE_ENABLE_VALIDATION_LAYER") && !strcmp(getenv("ZE_ENABLE_VALIDATION_LAYER"), "1"))
        CHECK_ZE(zeDeviceGetProperties(f->dev[0], NULL), ZE_RESULT_ERROR_INVALID_NULL_POINTER);
    /* zeInit again is harmless. */
    OK(zeInit(0));
    /* The helper is not our child: nothing to reap, no zombie. */
    CHECK(waitpid(-1, &st, WNOHANG) < 0 && errno == ECHILD);
    return 0;
}

static int test_affinity(struct fx *f, const char *arg)
{
    ze_bool_t can;
    void *p;
    ze_memory_allocation_properties_t mp = {.stype =
                                                ZE_STRUCTURE_TYPE_MEMORY_ALLOCATION_PROPERTIES};
    ze_device_handle_t owner = NULL;

    (void)arg;
    /* UZT_DEVICES=4 ZE_AFFINITY_MASK=3,1,9 */
    CHECK(f->ndev == 2, "%u devices", f->ndev);
    CHECK(device_index(f->dev[0]) == 1 && device_index(f->dev[1]) == 3);
    check_identity(f, f->dev[0], 1);
    check_identity(f, f->dev[1], 3);
    check_pci(f->dev[0], 0, 0x11, 0, 0);
    check_pci(f->dev[1], 0, 0x13, 0, 0);
    CHECK(p2p(f->dev[0], f->dev[1], &can) ==
              (ZE_DEVICE_P2P_PROPERTY_FLAG_ACCESS | ZE_DEVICE_P2P_PROPERTY_FLAG_ATOMICS) &&
          can);
    p = dev_alloc(f, 1, 4096, 0);
    OK(zeMemGetAllocProperties(f->ctx, p, &mp, &owner));
    CHECK(mp.type == ZE_MEMORY_TYPE_DEVICE && owner == f->dev[1]);
    OK(zeMemFree(f->ctx, p));
    return 0;
}

/* One vertex per device; one "XeLink" edge between the two iff xelink. */
static void check_fabric(struct fx *f, bool xelink)
{
    ze_fabric_vertex_handle_t v[2], all[4], ea, eb;
    ze_fabric_edge_handle_t e;
    ze_device_handle_t d;
    uint32_t n = 0;

    for (int i = 0; i < 2; i++) {
        ze_fabric_vertex_exp_properties_t vp = {.stype =
                                                    ZE_STRUCTURE_TYPE_FABRIC_VERTEX_EXP_PROPERTIES};
        ze_pci_ext_properties_t pp = {.stype = ZE_STRUCTURE_TYPE_PCI_EXT_PROPERTIES};
        ze_device_properties_t dp = {.stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES};

        OK(zeDeviceGetFabricVertexExp(f->dev[i], &v[i]));
        OK(zeFabricVertexGetDeviceExp(v[i], &d));
        CHECK(d == f->dev[i]);
        OK(zeFabricVertexGetPropertiesExp(v[i], &vp));
        OK(zeDevicePciGetPropertiesExt(f->dev[i], &pp));
        OK(zeDeviceGetProperties(f->dev[i], &dp));
        CHECK(vp.type == ZE_FABRIC_VERTEX_EXP_TYPE_DEVICE && !vp.remote);
        CHECK(vp.address.bus == pp.address.bus && vp.address.domain == pp.address.domain);
        CHECK(!memcmp(vp.uuid.id, dp.uuid.id, 16));
        n = 0;
        OK(zeFabricVertexGetSubVerticesExp(v[i], &n, NULL));
        CHECK(n == 0);
        OK(zeFabricEdgeGetExp(v[i], v[i], &n, NULL));
        CHECK(n == 0, "an edge from a device to itself");
    }
    n = 0;
    OK(zeFabricVertexGetExp(f->drv, &n, NULL));
    CHECK(n == 2);
    OK(zeFabricVertexGetExp(f->drv, &n, all));
    CHECK(n == 2 && all[0] == v[0] && all[1] == v[1]);
    n = 0;
    OK(zeFabricEdgeGetExp(v[0], v[1], &n, NULL));
    CHECK(n == (xelink ? 1u : 0u), "%u edges", n);
    if (!xelink)
        return;
    OK(zeFabricEdgeGetExp(v[1], v[0], &n, &e));
    {
        ze_fabric_edge_exp_properties_t ep = {.stype =
                                                  ZE_STRUCTURE_TYPE_FABRIC_EDGE_EXP_PROPERTIES};

        OK(zeFabricEdgeGetPropertiesExp(e, &ep));
        CHECK(!strcmp(ep.model, "XeLink"), "model %s", ep.model);
        CHECK(ep.duplexity == ZE_FABRIC_EDGE_EXP_DUPLEXITY_FULL_DUPLEX && ep.bandwidth);
    }
    OK(zeFabricEdgeGetVerticesExp(e, &ea, &eb));
    CHECK(ea == v[0] && eb == v[1]);
}

static int test_p2p(struct fx *f, const char *arg)
{
    const char *link = getenv("UZT_LINK");
    ze_device_p2p_property_flags_t want = 0;
    ze_bool_t can;

    (void)arg;
    CHECK(link && f->ndev == 2);
    if (!strcmp(link, "xelink") || !strcmp(link, "pcie-atomics"))
        want = ZE_DEVICE_P2P_PROPERTY_FLAG_ACCESS | ZE_DEVICE_P2P_PROPERTY_FLAG_ATOMICS;
    else if (!strcmp(link, "pcie"))
        want = ZE_DEVICE_P2P_PROPERTY_FLAG_ACCESS;
    CHECK(p2p(f->dev[0], f->dev[1], &can) == want && can == (want != 0), "link %s", link);
    CHECK(p2p(f->dev[1], f->dev[0], &can) == want && can == (want != 0), "link %s", link);
    for (int i = 0; i < 2; i++)
        CHECK(p2p(f->dev[i], f->dev[i], &can) ==
                  (ZE_DEVICE_P2P_PROPERTY_FLAG_ACCESS | ZE_DEVICE_P2P_PROPERTY_FLAG_ATOMICS) &&
              can);
    check_fabric(f, !strcmp(link, "xelink"));
    return 0;
}

static int test_pci_bdfs(struct fx *f, const char *arg)
{
    (void)arg;
    CHECK(f->ndev == 3);
    check_pci(f->dev[0], 0, 0x3b, 0, 0);
    check_pci(f->dev[1], 1, 0xaf, 0x1f, 7);
    check_pci(f->dev[2], 0xabcd, 0, 2, 1);
    return 0;
}

/* ---- zeInit failures (each in a child of its own) ----------------------- */

static bool can_map_at(uintptr_t addr)
{
    void *p = mmap((void *)addr, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
                   -1, 0);

    if (p == MAP_FAILED)
        return false;
    munmap(p, 4096);
    return p == (void *)addr;
}

/*
 * zeInit alone; exit 3 when it fails. UZT_TEST_BLOCK=device|host first maps
 * a page inside that region, and after the failure both regions must be free
 * again (exit 4 otherwise).
 */
static int sub_init_only(void)
{
    const char *block = getenv("UZT_TEST_BLOCK");
    const uintptr_t dev = 0x300000000000, host = 0x310000000000, gib = (uintptr_t)1 << 30;
    ze_result_t r;

    if (block) {
        uintptr_t at = (!strcmp(block, "host") ? host : dev) + gib;

        CHECK(mmap((void *)at, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
                   -1, 0) == (void *)at);
    }
    r = zeInit(0);
    if (r == ZE_RESULT_SUCCESS)
        return 0;
    fprintf(stderr, "zeInit: %#x\n", (unsigned)r);
    if (block && !(can_map_at(dev) && can_map_at(host))) {
        fprintf(stderr, "a region stayed reserved after zeInit failed\n");
        return 4;
    }
    return 3;
}

static void expect_init_failure(const char *const *env, const char *needle)
{
    char out[8192];
    size_t len = 0;
    int pfd[2], code;
    ssize_t n;
    pid_t pid;

    CHECK(pipe(pfd) == 0);
    pid = spawn_self("init-only", NULL, env, pfd[1]);
    close(pfd[1]);
    while (len < sizeof out - 1 && (n = read(pfd[0], out + len, sizeof out - 1 - len)) > 0)
        len += (size_t)n;
    out[len] = '\0';
    close(pfd[0]);
    code = wait_exit(pid);
    CHECK(code == 3, "%s: child exited %d, output: %s", env[0], code, out);
    CHECK(strstr(out, "ze test driver: ") && strstr(out, needle),
          "%s: no message naming '%s' in: %s", env[0], needle, out);
}

static int test_bad_env(struct fx *f, const char *arg)
{
    static const char *const cases[][3] = {
        {"UZT_PCI_BDFS=0000:3b:00", NULL, "UZT_PCI_BDFS"},
        {"UZT_PCI_BDFS=zz", NULL, "UZT_PCI_BDFS"},
        {"UZT_PCI_BDFS=0000:3b:00.0", "UZT_DEVICES=2",
         "UZT_PCI_BDFS"},
        {"UZT_PCI_BDFS=0000:3b:20.0", NULL, "UZT_PCI_BDFS"},
        {"UZT_DEVICES=0", NULL, "UZT_DEVICES"},
        {"UZT_DEVICES=17", NULL, "UZT_DEVICES"},
        {"UZT_DEVICES=two", NULL, "UZT_DEVICES"},
        {"UZT_LINK=nvlink", NULL, "UZT_LINK"},
        {"ZE_AFFINITY_MASK=0.1", NULL, "ZE_AFFINITY_MASK"},
        {"UZT_HELPER=/nonexistent/helper", NULL, "/nonexistent/helper"},
        {"UZT_HELPER=/bin/true", NULL, "helper"},
        {"UZT_TEST_BLOCK=device", NULL, "cannot reserve the device region"},
        {"UZT_TEST_BLOCK=host", NULL, "cannot reserve the host region"},
    };
    static const char *const good[] = {"UZT_PCI_BDFS=0000:3B:1f.7", NULL};

    (void)f, (void)arg;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *env[3] = {cases[i][0], cases[i][1], NULL};

        expect_init_failure(env, cases[i][2]);
    }
    CHECK(wait_exit(spawn_self("init-only", NULL, good, -1)) == 0);
    return 0;
}

/* ---- memory ------------------------------------------------------------ */

static int test_fault(struct fx *f, const char *arg)
{
    volatile unsigned char *d = dev_alloc(f, 0, MiB, 0);
    unsigned char *h = host_alloc(f, MiB, 0);
    pid_t pid;
    int code;

    (void)arg;
    h[0] = 1; /* host memory is fine */
    for (int store = 0; store < 2; store++) {
        pid = fork();
        CHECK(pid >= 0);
        if (pid == 0) {
            /* Death by the signal is what is checked, not a sanitizer's
             * report of it. */
            signal(SIGSEGV, SIG_DFL);
            if (store)
                d[4096] = 1;
            else
                h[1] = d[0];
            _exit(0);
        }
        code = wait_exit(pid);
        CHECK(code == 128 + SIGSEGV, "a CPU %s of device memory ended with %d",
              store ? "store" : "load", code);
    }
    /* A child of fork() must not use the parent's driver. */
    pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        ze_device_mem_alloc_desc_t dd = {.stype = ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC};
        void *p;

        _exit(zeMemAllocDevice(f->ctx, &dd, 4096, 0, f->dev[0], &p) == ZE_RESULT_ERROR_UNINITIALIZED
                  ? 0
                  : 1);
    }
    CHECK(wait_exit(pid) == 0);
    OK(zeMemFree(f->ctx, (void *)d));
    OK(zeMemFree(f->ctx, h));
    return 0;
}

static int test_host(struct fx *f, const char *arg)
{
    const size_t size = 3 * MiB + 100;
    unsigned char *h = host_alloc(f, size, 0), *h2 = host_alloc(f, size, 0);
    unsigned char *d = dev_alloc(f, 0, size, 0);
    ze_memory_allocation_properties_t mp = {.stype =
                                                ZE_STRUCTURE_TYPE_MEMORY_ALLOCATION_PROPERTIES};
    ze_device_handle_t owner = f->dev[0];
    void *base;
    size_t len;

    (void)arg;
    pattern(h, size, 1);
    check_pattern(h, size, 1, "host memory written by the CPU");
    OK(zeMemGetAllocProperties(f->ctx, h + 5, &mp, &owner));
    CHECK(mp.type == ZE_MEMORY_TYPE_HOST && owner == NULL && mp.pageSize == 64 << 10);
    OK(zeMemGetAddressRange(f->ctx, h + size - 1, &base, &len));
    CHECK(base == h && len >= size);
    copy(f, d, h, size);
    OK(zeCommandListAppendMemoryFill(f->list, h, "\0", 1, size, NULL, 0, NULL));
    copy(f, h2, d, size);
    list_sync(f, f->list);
    check_pattern(h2, size, 1, "host -> device -> host");
    for (size_t i = 0; i < size; i++)
        CHECK(h[i] == 0, "fill of host memory by the device, byte %zu", i);
    OK(zeMemFree(f->ctx, h));
    OK(zeMemFree(f->ctx, h2));
    OK(zeMemFree(f->ctx, d));
    return 0;
}

static void check_fill(const unsigned char *p, size_t size, const unsigned char *pat, size_t psize)
{
    for (size_t i = 0; i < size; i++)
        CHECK(p[i] == pat[i % psize], "fill pattern %zu bytes: byte %zu is %#x", psize, i, p[i]);
}

static void copy_round(struct fx *f, ze_command_list_handle_t l, size_t size, unsigned seed)
{
    unsigned char *src = malloc(size), *dst = malloc(size);
    unsigned char *h = host_alloc(f, size, 0);
    unsigned char *d0 = dev_alloc(f, 0, size, 0), *d1 = dev_alloc(f, f->ndev > 1, size + 5, 0);

    CHECK(src && dst);
    pattern(src, size, seed);
    /* malloc -> device -> device (other device) -> host -> malloc */
    OK(zeCommandListAppendMemoryCopy(l, d0, src, size, NULL, 0, NULL));
    OK(zeCommandListAppendMemoryCopy(l, d1 + 5, d0, size, NULL, 0, NULL));
    OK(zeCommandListAppendMemoryCopy(l, h, d1 + 5, size, NULL, 0, NULL));
    list_sync(f, l);
    check_pattern(h, size, seed, "malloc -> device -> device -> host");
    memset(h, 0, size);
    OK(zeCommandListAppendMemoryCopy(l, d0, d1 + 5, size, NULL, 0, NULL));
    OK(zeCommandListAppendMemoryCopy(l, dst, d0, size, NULL, 0, NULL));
    check_pattern(dst, size, seed, "device -> malloc (synchronous in the driver)");
    memset(dst, 0, size);
    OK(zeCommandListAppendMemoryCopy(l, h, src, size, NULL, 0, NULL));
    OK(zeCommandListAppendMemoryCopy(l, dst, h, size, NULL, 0, NULL));
    check_pattern(dst, size, seed, "malloc -> host -> malloc");
    memset(dst, 0, size);
    OK(zeCommandListAppendMemoryCopy(l, dst, src, size, NULL, 0, NULL));
    check_pattern(dst, size, seed, "malloc -> malloc");
    OK(zeMemFree(f->ctx, h));
    OK(zeMemFree(f->ctx, d0));
    OK(zeMemFree(f->ctx, d1));
    free(src);
    free(dst);
}

static void fill_round(struct fx *f, ze_command_list_handle_t l, size_t psize)
{
    const size_t size = 100003;
    unsigned char pat[128], *out = malloc(size), *h = host_alloc(f, size, 0);
    unsigned char *d = dev_alloc(f, 0, size, 0);

    CHECK(out);
    for (size_t i = 0; i < psize; i++)
        pat[i] = (unsigned char)(0xa0 + i);
    OK(zeCommandListAppendMemoryFill(l, d, pat, psize, size, NULL, 0, NULL));
    OK(zeCommandListAppendMemoryCopy(l, out, d, size, NULL, 0, NULL));
    check_fill(out, size, pat, psize);
    OK(zeCommandListAppendMemoryFill(l, h, pat, psize, size - 1, NULL, 0, NULL));
    list_sync(f, l);
    check_fill(h, size - 1, pat, psize);
    memset(out, 0, size);
    OK(zeCommandListAppendMemoryFill(l, out, pat, psize, size, NULL, 0, NULL));
    check_fill(out, size, pat, psize);
    OK(zeMemFree(f->ctx, h));
    OK(zeMemFree(f->ctx, d));
    free(out);
}

struct copy_worker {
    struct fx *f;
    int id;
};

/* Lists of their own, memory of their own, one shared bounce buffer. */
static void *copy_worker_main(void *arg)
{
    struct copy_worker *w = arg;
    size_t size = (size_t)(w->id + 1) * MiB + 4321;
    ze_command_list_handle_t l = make_list(w->f, w->id % 2, 0, ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS);
    unsigned char *src = malloc(size), *dst = malloc(size);
    unsigned char *d0 = dev_alloc(w->f, w->id % 2, size, 0), *d1 = dev_alloc(w->f, 0, size, 0);

    CHECK(src && dst);
    for (unsigned r = 0; r < 5; r++) {
        pattern(src, size, r * 10 + (unsigned)w->id);
        OK(zeCommandListAppendMemoryCopy(l, d0, src, size, NULL, 0, NULL));
        OK(zeCommandListAppendMemoryCopy(l, d1, d0, size, NULL, 0, NULL));
        OK(zeCommandListAppendMemoryCopy(l, dst, d1, size, NULL, 0, NULL));
        check_pattern(dst, size, r * 10 + (unsigned)w->id, "copies from four threads");
    }
    OK(zeMemFree(w->f->ctx, d0));
    OK(zeMemFree(w->f->ctx, d1));
    OK(zeCommandListDestroy(l));
    free(src);
    free(dst);
    return NULL;
}

static int test_copy(struct fx *f, const char *arg)
{
    ze_command_list_handle_t sync = make_list(f, 0, 0, ZE_COMMAND_QUEUE_MODE_SYNCHRONOUS);
    ze_command_list_handle_t ce = make_list(f, 0, 1, ZE_COMMAND_QUEUE_MODE_DEFAULT);
    unsigned char *d = dev_alloc(f, 0, 128 << 10, 0), *h = host_alloc(f, 4096, 0);
    const size_t sizes[] = {1, 4096, 65536 + 7, 9 * MiB + 12345};
    unsigned char small[16];

    (void)arg;
    CHECK(f->ndev == 2);
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        copy_round(f, f->list, sizes[i], (unsigned)i);
        copy_round(f, sync, sizes[i], (unsigned)i + 10);
        copy_round(f, ce, sizes[i], (unsigned)i + 20);
    }
    for (size_t p = 1; p <= 128; p *= 2)
        fill_round(f, p == 8 ? ce : f->list, p);
    CHECK_ZE(zeCommandListAppendMemoryFill(f->list, d, small, 3, 64, NULL, 0, NULL),
             ZE_RESULT_ERROR_INVALID_SIZE);

    /* Zero bytes, and ranges that leave their allocation. */
    OK(zeCommandListAppendMemoryCopy(f->list, d, h, 0, NULL, 0, NULL));
    CHECK_ZE(zeCommandListAppendMemoryCopy(f->list, d + (128 << 10) - 8, small, 16, NULL, 0, NULL),
             ZE_RESULT_ERROR_INVALID_ARGUMENT);
    CHECK_ZE(zeCommandListAppendMemoryCopy(f->list, small, h + 4096 - 8, 65536, NULL, 0, NULL),
             ZE_RESULT_ERROR_INVALID_ARGUMENT);
    CHECK_ZE(zeCommandListAppendMemoryCopy(f->list, d + (1 << 20), small, 8, NULL, 0, NULL),
             ZE_RESULT_ERROR_INVALID_ARGUMENT);
    list_sync(f, f->list);

    {
        struct copy_worker w[4];
        pthread_t t[4];

        for (int i = 0; i < 4; i++) {
            w[i] = (struct copy_worker){f, i};
            CHECK(pthread_create(&t[i], NULL, copy_worker_main, &w[i]) == 0);
        }
        for (int i = 0; i < 4; i++)
            pthread_join(t[i], NULL);
    }
    OK(zeMemFree(f->ctx, d));
    OK(zeMemFree(f->ctx, h));
    OK(zeCommandListDestroy(sync));
    OK(zeCommandListDestroy(ce));
    return 0;
}

/* ---- events ------------------------------------------------------------ */

struct signaller {
    ze_event_handle_t ev;
    unsigned delay_ms;
};

static void *signal_later(void *arg)
{
    struct signaller *s = arg;

    usleep(s->delay_ms * 1000);
    OK(zeEventHostSignal(s->ev));
    return NULL;
}

static int test_events(struct fx *f, const char *arg)
{
    ze_event_handle_t a = make_event(f, 0), b = make_event(f, 1), c = make_event(f, 2);
    size_t size = 256 << 10;
    unsigned char *h = host_alloc(f, size, 0), *d = dev_alloc(f, 0, size, 0);
    unsigned char *out = host_alloc(f, size, 0);
    struct signaller s = {a, 100};
    pthread_t t;
    uint64_t t0, rounds = 2000;

    (void)arg;
    CHECK_ZE(zeEventQueryStatus(a), ZE_RESULT_NOT_READY);
    t0 = now_ns();
    CHECK_ZE(zeEventHostSynchronize(a, 20000000), ZE_RESULT_NOT_READY);
    CHECK(now_ns() - t0 >= 20000000, "returned early");
    CHECK_ZE(zeEventHostSynchronize(a, 0), ZE_RESULT_NOT_READY);
    OK(zeEventHostSignal(a));
    OK(zeEventQueryStatus(a));
    OK(zeEventHostSynchronize(a, 0));
    OK(zeEventHostReset(a));
    CHECK_ZE(zeEventQueryStatus(a), ZE_RESULT_NOT_READY);

    /* The list waits for a, which the host signals later; b says the copy ended. */
    pattern(h, size, 5);
    OK(zeCommandListAppendMemoryCopy(f->list, d, h, size, NULL, 1, &a));
    OK(zeCommandListAppendMemoryCopy(f->list, out, d, size, b, 0, NULL));
    usleep(50000);
    CHECK_ZE(zeEventQueryStatus(b), ZE_RESULT_NOT_READY);
    OK(zeEventHostSignal(a));
    OK(zeEventHostSynchronize(b, UINT64_MAX));
    check_pattern(out, size, 5, "copy after a host-signalled wait");

    /* A host thread signals while this one sleeps in the driver. */
    OK(zeEventHostReset(a));
    OK(zeEventHostReset(b));
    OK(zeCommandListAppendWaitOnEvents(f->list, 1, &a));
    OK(zeCommandListAppendSignalEvent(f->list, b));
    CHECK(pthread_create(&t, NULL, signal_later, &s) == 0);
    OK(zeEventHostSynchronize(b, UINT64_MAX));
    pthread_join(t, NULL);

    /* Reset and barrier on the list, and a wait on app-private memory copies. */
    OK(zeCommandListAppendEventReset(f->list, b));
    OK(zeCommandListAppendBarrier(f->list, c, 0, NULL));
    OK(zeEventHostSynchronize(c, UINT64_MAX));
    CHECK_ZE(zeEventQueryStatus(b), ZE_RESULT_NOT_READY);
    {
        unsigned char *m = malloc(size);

        CHECK(m);
        OK(zeEventHostReset(c));
        OK(zeCommandListAppendMemoryCopy(f->list, m, d, size, c, 1, &a));
        OK(zeEventQueryStatus(c)); /* done before the append returned */
        check_pattern(m, size, 5, "device -> malloc");
        free(m);
    }

    /* Round trip of an append + host wait, the backend's way to drain a list. */
    t0 = now_ns();
    for (uint64_t i = 0; i < rounds; i++)
        list_sync(f, f->list);
    printf("append signal + host synchronize: %.1f us\n", (double)(now_ns() - t0) / rounds / 1e3);

    OK(zeEventDestroy(a));
    OK(zeEventDestroy(b));
    OK(zeEventDestroy(c));
    OK(zeMemFree(f->ctx, h));
    OK(zeMemFree(f->ctx, d));
    OK(zeMemFree(f->ctx, out));
    return 0;
}

static int test_queue(struct fx *f, const char *arg)
{
    ze_command_queue_desc_t qd = {.stype = ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC,
                                  .mode = ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS};
    ze_command_list_desc_t ld = {.stype = ZE_STRUCTURE_TYPE_COMMAND_LIST_DESC};
    ze_command_queue_handle_t q;
    ze_command_list_handle_t l;
    ze_event_handle_t e = make_event(f, 0);
    size_t size = 5 * MiB + 3;
    unsigned char *src = malloc(size), *dst = malloc(size), *d = dev_alloc(f, 0, size, 0);
    unsigned char *h = host_alloc(f, size, 0);

    (void)arg;
    CHECK(src && dst);
    pattern(src, size, 9);
    OK(zeCommandQueueCreate(f->ctx, f->dev[0], &qd, &q));
    OK(zeCommandListCreate(f->ctx, f->dev[0], &ld, &l));
    OK(zeCommandListAppendMemoryCopy(l, d, src, size, NULL, 0, NULL));
    OK(zeCommandListAppendMemoryFill(l, h, "\x5a", 1, size, NULL, 0, NULL));
    OK(zeCommandListAppendBarrier(l, NULL, 0, NULL));
    OK(zeCommandListAppendMemoryCopy(l, dst, d, size, e, 0, NULL));
    OK(zeCommandListClose(l));
    for (int round = 0; round < 2; round++) {
        memset(dst, 0, size);
        OK(zeEventHostReset(e));
        OK(zeCommandQueueExecuteCommandLists(q, 1, &l, NULL));
        OK(zeCommandQueueSynchronize(q, UINT64_MAX));
        OK(zeEventQueryStatus(e));
        check_pattern(dst, size, 9, "regular list: malloc -> device -> malloc");
        CHECK(h[0] == 0x5a && h[size - 1] == 0x5a);
    }
    OK(zeCommandListReset(l));
    OK(zeCommandListDestroy(l));
    OK(zeCommandQueueDestroy(q));
    OK(zeEventDestroy(e));
    OK(zeMemFree(f->ctx, d));
    OK(zeMemFree(f->ctx, h));
    free(src);
    free(dst);
    return 0;
}

/* ---- IPC --------------------------------------------------------------- */

struct ipc_fields {
    int32_t fd;
    char magic[4];
    uint64_t size;
    uint32_t dev;
    uint64_t node;
};

static struct ipc_fields ipc_decode(const ze_ipc_mem_handle_t *h)
{
    struct ipc_fields v;

    memcpy(&v.fd, h->data, 4);
    memcpy(v.magic, h->data + 4, 4);
    memcpy(&v.size, h->data + 8, 8);
    memcpy(&v.dev, h->data + 16, 4);
    memcpy(&v.node, h->data + 20, 8);
    return v;
}

/* The importer's handle: the exporter's bytes with its own fd in bytes 0..3. */
static ze_ipc_mem_handle_t with_fd(ze_ipc_mem_handle_t h, int fd)
{
    memcpy(h.data, &fd, sizeof fd);
    return h;
}

static void send_fd(int sock, const void *buf, size_t len, int fd)
{
    struct iovec iov = {(void *)buf, len};
    union {
        struct cmsghdr h;
        char space[CMSG_SPACE(sizeof(int))];
    } ctl;
    struct msghdr msg = {.msg_iov = &iov,
                         .msg_iovlen = 1,
                         .msg_control = ctl.space,
                         .msg_controllen = sizeof ctl.space};

    memset(&ctl, 0, sizeof ctl);
    ctl.h.cmsg_level = SOL_SOCKET;
    ctl.h.cmsg_type = SCM_RIGHTS;
    ctl.h.cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(&ctl.h), &fd, sizeof fd);
    CHECK(sendmsg(sock, &msg, 0) == (ssize_t)len);
}

static int recv_fd(int sock, void *buf, size_t len)
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
    int fd = -1;

    CHECK(recvmsg(sock, &msg, 0) == (ssize_t)len);
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
        if (c->cmsg_type == SCM_RIGHTS)
            memcpy(&fd, CMSG_DATA(c), sizeof fd);
    }
    CHECK(fd >= 0);
    return fd;
}

#define IPC_SIZE (3 * MiB)

/* The importing process: check_ze_driver ipc-child SOCKFD */
static int sub_ipc_child(const char *sockarg)
{
    int sock = atoi(sockarg), fd;
    ze_ipc_mem_handle_t h;
    struct fx f;
    unsigned char *a = NULL, *b = NULL, *m = malloc(IPC_SIZE);
    ze_memory_allocation_properties_t mp = {.stype =
                                                ZE_STRUCTURE_TYPE_MEMORY_ALLOCATION_PROPERTIES};
    ze_device_handle_t owner = NULL;
    void *base;
    size_t len;

    CHECK(m);
    fx_init(&f);
    fd = recv_fd(sock, &h, sizeof h);
    OK(zeMemOpenIpcHandle(f.ctx, f.dev[0], with_fd(h, fd), 0, (void **)&a));
    OK(zeMemOpenIpcHandle(f.ctx, f.dev[0], with_fd(h, fd), 0, (void **)&b));
    CHECK(close(fd) == 0); /* the driver keeps its own */
    CHECK(a && b && a != b, "two opens gave %p and %p", (void *)a, (void *)b);
    OK(zeMemGetAllocProperties(f.ctx, a + 100, &mp, &owner));
    CHECK(mp.type == ZE_MEMORY_TYPE_DEVICE && owner == f.dev[1], "imported from device 1");
    OK(zeMemGetAddressRange(f.ctx, b + 7, &base, &len));
    CHECK(base == b && len == IPC_SIZE);
    OK(zeCommandListAppendMemoryCopy(f.list, m, a, IPC_SIZE, NULL, 0, NULL));
    check_pattern(m, IPC_SIZE, 42, "exporter's data through the first import");
    memset(m, 0, IPC_SIZE);
    OK(zeCommandListAppendMemoryCopy(f.list, m, b, IPC_SIZE, NULL, 0, NULL));
    check_pattern(m, IPC_SIZE, 42, "exporter's data through the second import");
    pattern(m, IPC_SIZE, 43);
    OK(zeCommandListAppendMemoryCopy(f.list, a, m, IPC_SIZE, NULL, 0, NULL));
    list_sync(&f, f.list);
    CHECK_ZE(zeMemFree(f.ctx, a), ZE_RESULT_ERROR_INVALID_ARGUMENT);
    OK(zeMemCloseIpcHandle(f.ctx, a));
    CHECK_ZE(zeMemCloseIpcHandle(f.ctx, a), ZE_RESULT_ERROR_INVALID_ARGUMENT);
    OK(zeMemCloseIpcHandle(f.ctx, b));
    fx_fini(&f);
    CHECK(write(sock, "k", 1) == 1);
    free(m);
    return 0;
}

static int test_ipc(struct fx *f, const char *arg)
{
    unsigned char *d = dev_alloc(f, 1, IPC_SIZE, 0), *m = malloc(IPC_SIZE);
    ze_ipc_mem_handle_t h, h2;
    struct ipc_fields v;
    int sv[2], fds_before = count_fds();
    char sockarg[16], ok = 0;
    pid_t pid;

    (void)arg;
    CHECK(m);
    pattern(m, IPC_SIZE, 42);
    copy(f, d, m, IPC_SIZE);
    OK(zeMemGetIpcHandle(f->ctx, d + 12345, &h));
    OK(zeMemGetIpcHandle(f->ctx, d, &h2));
    v = ipc_decode(&h);
    CHECK(!memcmp(v.magic, "UZT1", 4) && v.size == IPC_SIZE && v.dev == 1 && v.node == node_hash());
    CHECK(v.fd >= 0 && ipc_decode(&h2).fd == v.fd, "one fd per allocation");
    for (size_t i = 28; i < sizeof h.data; i++)
        CHECK(h.data[i] == 0);
    CHECK(count_fds() == fds_before + 1);

    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0); /* no CLOEXEC: the child inherits */
    snprintf(sockarg, sizeof sockarg, "%d", sv[1]);
    pid = spawn_self("ipc-child", sockarg, NULL, -1);
    close(sv[1]);
    send_fd(sv[0], &h, sizeof h, v.fd);
    CHECK(read(sv[0], &ok, 1) == 1 && ok == 'k');
    CHECK(wait_exit(pid) == 0);
    close(sv[0]);

    memset(m, 0, IPC_SIZE);
    copy(f, m, d, IPC_SIZE);
    check_pattern(m, IPC_SIZE, 43, "importer's data seen by the exporter");
    OK(zeMemFree(f->ctx, d));
    CHECK(count_fds() == fds_before, "the exported fd is closed with the allocation");
    free(m);
    return 0;
}

static int test_ipc_multi(struct fx *f, const char *arg)
{
    const size_t size = 256 << 10;
    unsigned char *d = dev_alloc(f, 0, size, 0), *p[3], *m = malloc(size);
    ze_ipc_mem_handle_t h;
    int fd;

    (void)arg;
    CHECK(m);
    OK(zeMemGetIpcHandle(f->ctx, d, &h));
    fd = dup(ipc_decode(&h).fd);
    for (int i = 0; i < 3; i++) {
        OK(zeMemOpenIpcHandle(f->ctx, f->dev[0], with_fd(h, fd), 0, (void **)&p[i]));
        CHECK(p[i] != d);
        for (int j = 0; j < i; j++)
            CHECK(p[i] != p[j]);
    }
    close(fd);
    pattern(m, size, 77);
    copy(f, p[1], m, size);
    memset(m, 0, size);
    copy(f, m, p[2], size);
    check_pattern(m, size, 77, "written through one import, read through another");
    memset(m, 0, size);
    copy(f, m, d, size);
    check_pattern(m, size, 77, "and through the allocation");
    for (int i = 0; i < 3; i++)
        OK(zeMemCloseIpcHandle(f->ctx, p[i]));
    for (int i = 0; i < 3; i++)
        CHECK_ZE(zeMemCloseIpcHandle(f->ctx, p[i]), ZE_RESULT_ERROR_INVALID_ARGUMENT);
    OK(zeMemFree(f->ctx, d));
    free(m);
    return 0;
}

static void expect_bad_open(struct fx *f, ze_ipc_mem_handle_t h, const char *what)
{
    void *p = (void *)1;
    ze_result_t r = zeMemOpenIpcHandle(f->ctx, f->dev[0], h, 0, &p);

    CHECK(r == ZE_RESULT_ERROR_INVALID_ARGUMENT, "%s: %#x", what, (unsigned)r);
}

static int test_ipc_bad(struct fx *f, const char *arg)
{
    unsigned char *d = dev_alloc(f, 0, 128 << 10, 0), *hm = host_alloc(f, 4096, 0);
    ze_ipc_mem_handle_t h, bad;
    int fd, pfd[2], other, closed, fds, maps;
    uint64_t v64;
    uint32_t v32;
    char stack[64];
    void *imp;

    (void)arg;
    OK(zeMemGetIpcHandle(f->ctx, d, &h));
    fd = ipc_decode(&h).fd;
    fds = count_fds();
    maps = count_maps();

    bad = h;
    bad.data[5] = 'X';
    expect_bad_open(f, bad, "bad magic");
    bad = h;
    v64 = 64 << 10;
    memcpy(bad.data + 8, &v64, 8);
    expect_bad_open(f, bad, "size smaller than the memfd");
    v64 = 12345;
    memcpy(bad.data + 8, &v64, 8);
    expect_bad_open(f, bad, "size not a multiple of 64 KiB");
    bad = h;
    v32 = 7;
    memcpy(bad.data + 16, &v32, 4);
    expect_bad_open(f, bad, "device index past the node's devices");
    bad = h;
    v32 = 1;
    memcpy(bad.data + 16, &v32, 4);
    expect_bad_open(f, bad, "device index other than the memfd's");
    bad = h;
    bad.data[20] ^= 1;
    expect_bad_open(f, bad, "another node's hash");

    closed = dup(fd);
    close(closed);
    expect_bad_open(f, with_fd(h, closed), "closed fd");
    expect_bad_open(f, with_fd(h, -1), "negative fd");
    CHECK(pipe(pfd) == 0);
    expect_bad_open(f, with_fd(h, pfd[0]), "a pipe");
    close(pfd[0]);
    close(pfd[1]);
    other = memfd_create("someone-else", MFD_ALLOW_SEALING);
    CHECK(other >= 0 && ftruncate(other, 128 << 10) == 0);
    expect_bad_open(f, with_fd(h, other), "a memfd of someone else");
    close(other);
    other = open("/proc/self/exe", O_RDONLY);
    expect_bad_open(f, with_fd(h, other), "a regular file");
    close(other);
    memset(&bad, 0, sizeof bad);
    expect_bad_open(f, bad, "all zero");
    CHECK(count_fds() == fds && count_maps() == maps, "failed opens leaked fds or mappings");

    /* The good handle still works after all that. */
    OK(zeMemOpenIpcHandle(f->ctx, f->dev[0], h, 0, &imp));
    CHECK_ZE(zeMemGetIpcHandle(f->ctx, imp, &bad), ZE_RESULT_ERROR_INVALID_ARGUMENT);
    CHECK_ZE(zeMemFree(f->ctx, imp), ZE_RESULT_ERROR_INVALID_ARGUMENT);
    OK(zeMemCloseIpcHandle(f->ctx, imp));

    CHECK_ZE(zeMemGetIpcHandle(f->ctx, hm, &bad), ZE_RESULT_ERROR_INVALID_ARGUMENT);
    CHECK_ZE(zeMemGetIpcHandle(f->ctx, stack, &bad), ZE_RESULT_ERROR_INVALID_ARGUMENT);
    CHECK_ZE(zeMemCloseIpcHandle(f->ctx, d), ZE_RESULT_ERROR_INVALID_ARGUMENT);
    CHECK_ZE(zeMemFree(f->ctx, d + 65536), ZE_RESULT_ERROR_INVALID_ARGUMENT);
    CHECK_ZE(zeMemFree(f->ctx, stack), ZE_RESULT_ERROR_INVALID_ARGUMENT);
    OK(zeMemFree(f->ctx, d));
    OK(zeMemFree(f->ctx, hm));
    CHECK_ZE(zeMemFree(f->ctx, d), ZE_RESULT_ERROR_INVALID_ARGUMENT);
    return 0;
}

/* ---- resources --------------------------------------------------------- */

static int test_leak(struct fx *f, const char *arg)
{
    enum { CYCLES = 10000, LIVE = 3000 };
    void **live = calloc(LIVE, sizeof *live);
    ze_event_pool_desc_t pd = {.stype = ZE_STRUCTURE_TYPE_EVENT_POOL_DESC,
                               .flags = ZE_EVENT_POOL_FLAG_HOST_VISIBLE,
                               .count = 4};
    unsigned char small[64];
    int fds, maps;
    uint64_t t0;

    (void)arg;
    CHECK(live);
    /* Warm up every path once, then count. */
    for (int i = 0; i < 2; i++) {
        void *d = dev_alloc(f, 0, 4096, 0), *h = host_alloc(f, 4096, 0), *imp;
        ze_ipc_mem_handle_t ih;

        OK(zeMemGetIpcHandle(f->ctx, d, &ih));
        OK(zeMemOpenIpcHandle(f->ctx, f->dev[0], ih, 0, &imp));
        copy(f, small, d, sizeof small);
        OK(zeMemCloseIpcHandle(f->ctx, imp));
        OK(zeMemFree(f->ctx, d));
        OK(zeMemFree(f->ctx, h));
    }
    fds = count_fds();
    maps = count_maps();
    t0 = now_ns();
    for (int i = 0; i < CYCLES; i++) {
        void *d = dev_alloc(f, 0, (size_t)(i % 7 + 1) * 40000, i % 3 ? 0 : (size_t)2 << 20);
        void *h = host_alloc(f, (size_t)(i % 5 + 1) * 3000, 0);

        if (i % 10 == 0) {
            ze_ipc_mem_handle_t ih;

            OK(zeMemGetIpcHandle(f->ctx, d, &ih));
            if (i % 50 == 0) {
                void *imp;

                OK(zeMemOpenIpcHandle(f->ctx, f->dev[0], ih, 0, &imp));
                OK(zeMemCloseIpcHandle(f->ctx, imp));
            }
        }
        OK(zeMemFree(f->ctx, d));
        OK(zeMemFree(f->ctx, h));
    }
    printf("%d alloc/free cycles: %.1f us each\n", CYCLES, (double)(now_ns() - t0) / CYCLES / 1e3);
    CHECK(count_fds() == fds, "fds %d -> %d", fds, count_fds());
    CHECK(count_maps() == maps, "maps %d -> %d", maps, count_maps());

    for (int i = 0; i < LIVE; i++)
        live[i] = i % 2 ? dev_alloc(f, 0, 4096, 0) : host_alloc(f, 4096, 0);
    for (int i = 0; i < LIVE; i++)
        OK(zeMemFree(f->ctx, live[LIVE - 1 - i]));
    for (int i = 0; i < 100; i++) {
        ze_command_list_handle_t l = make_list(f, 0, i % 2, ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS);
        ze_event_pool_handle_t p;

        OK(zeEventPoolCreate(f->ctx, &pd, 0, NULL, &p));
        OK(zeEventPoolDestroy(p));
        OK(zeCommandListDestroy(l));
    }
    CHECK(count_fds() == fds, "fds %d -> %d", fds, count_fds());
    CHECK(count_maps() == maps, "maps %d -> %d", maps, count_maps());
    free(live);
    return 0;
}

static int test_shared(struct fx *f, const char *arg)
{
    ze_device_mem_alloc_desc_t dd = {.stype = ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC};
    ze_host_mem_alloc_desc_t hd = {.stype = ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC};
    char path[] = "/tmp/uzt-shared-XXXXXX", line[256] = "";
    void *p = NULL;
    int fd = mkstemp(path);
    FILE *fp;

    (void)arg;
    CHECK(fd >= 0);
    close(fd);
    setenv("UZT_SHARED_LOG", path, 1);
    CHECK_ZE(zeMemAllocShared(f->ctx, &dd, &hd, 4096, 0, f->dev[0], &p),
             ZE_RESULT_ERROR_UNSUPPORTED_FEATURE);
    fp = fopen(path, "r");
    CHECK(fp && fgets(line, sizeof line, fp) && strstr(line, "zeMemAllocShared"), "log: %s", line);
    fclose(fp);
    unlink(path);
    return 0;
}

static int test_align(struct fx *f, const char *arg)
{
    ze_memory_allocation_properties_t mp = {.stype =
                                                ZE_STRUCTURE_TYPE_MEMORY_ALLOCATION_PROPERTIES};
    ze_device_handle_t owner = NULL;
    unsigned char *a = dev_alloc(f, 0, 100, 0), *b = dev_alloc(f, 0, 3 * MiB, (size_t)1 << 30);
    unsigned char *c = host_alloc(f, 10, (size_t)2 << 20), stack[8];
    uint64_t ids[3];
    void *base;
    size_t len;

    (void)arg;
    CHECK((uintptr_t)a % (64 << 10) == 0 && (uintptr_t)b % ((size_t)1 << 30) == 0 &&
          (uintptr_t)c % ((size_t)2 << 20) == 0);
    unsigned char *all[3] = {a, b, c};
    for (int i = 0; i < 3; i++) {
        OK(zeMemGetAllocProperties(f->ctx, all[i] + 9, &mp, &owner));
        CHECK(mp.pageSize == 64 << 10 && mp.id != 0);
        CHECK(mp.type == (i < 2 ? ZE_MEMORY_TYPE_DEVICE : ZE_MEMORY_TYPE_HOST));
        CHECK(owner == (i < 2 ? f->dev[0] : NULL));
        ids[i] = mp.id;
    }
    CHECK(ids[0] != ids[1] && ids[1] != ids[2] && ids[0] != ids[2]);
    OK(zeMemGetAllocProperties(f->ctx, stack, &mp, NULL));
    CHECK(mp.type == ZE_MEMORY_TYPE_UNKNOWN);
    OK(zeMemGetAddressRange(f->ctx, b + 3 * MiB - 1, &base, &len));
    CHECK(base == b && len == 3 * MiB);
    OK(zeMemGetAddressRange(f->ctx, a + 5, &base, NULL));
    CHECK(base == a);
    CHECK_ZE(zeMemGetAddressRange(f->ctx, stack, &base, &len), ZE_RESULT_ERROR_INVALID_ARGUMENT);
    {
        ze_device_mem_alloc_desc_t dd = {.stype = ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC};
        void *p;

        CHECK_ZE(zeMemAllocDevice(f->ctx, &dd, 4096, 3000, f->dev[0], &p),
                 ZE_RESULT_ERROR_UNSUPPORTED_ALIGNMENT);
        CHECK_ZE(zeMemAllocDevice(f->ctx, &dd, (size_t)65 << 30, 0, f->dev[0], &p),
                 ZE_RESULT_ERROR_UNSUPPORTED_SIZE);
    }
    OK(zeMemFree(f->ctx, a));
    OK(zeMemFree(f->ctx, b));
    OK(zeMemFree(f->ctx, c));
    return 0;
}

/* ---- the helper -------------------------------------------------------- */

static int sub_init_hold(void)
{
    char c;

    if (zeInit(0) != ZE_RESULT_SUCCESS)
        return 3;
    CHECK(write(STDOUT_FILENO, "r", 1) == 1);
    while (read(STDIN_FILENO, &c, 1) > 0)
        ;
    return 0;
}

/* The helper of the process whose environment holds tag, or 0. */
static pid_t find_helper(const char *tag)
{
    DIR *d = opendir("/proc");
    struct dirent *e;
    pid_t found = 0;

    CHECK(d);
    while ((e = readdir(d))) {
        char path[300], buf[65536], comm[64] = "";
        ssize_t n;
        int fd;
        FILE *fp;

        if (e->d_name[0] < '1' || e->d_name[0] > '9')
            continue;
        snprintf(path, sizeof path, "/proc/%s/comm", e->d_name);
        fp = fopen(path, "r");
        if (!fp)
            continue;
        if (!fgets(comm, sizeof comm, fp))
            comm[0] = '\0';
        fclose(fp);
        if (strncmp(comm, "ushmem-ze-helpe", 15))
            continue;
        snprintf(path, sizeof path, "/proc/%s/environ", e->d_name);
        fd = open(path, O_RDONLY);
        if (fd < 0)
            continue;
        n = read(fd, buf, sizeof buf - 1);
        close(fd);
        for (ssize_t i = 0; n > 0 && i < n;) {
            if (!strcmp(buf + i, tag))
                found = atoi(e->d_name);
            i += (ssize_t)strlen(buf + i) + 1;
        }
    }
    closedir(d);
    return found;
}

static bool gone_or_zombie(pid_t pid)
{
    char path[64], buf[512];
    FILE *fp;
    char *p;
    bool gone = true;

    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    fp = fopen(path, "r");
    if (!fp)
        return true;
    if (fgets(buf, sizeof buf, fp) && (p = strrchr(buf, ')')))
        gone = p[2] == 'Z' || p[2] == 'X';
    fclose(fp);
    return gone;
}

static int test_helper_exit(struct fx *f, const char *arg)
{
    char tag[64], ready = 0, fdpath[64], target[256];
    int in[2], out[2], nfd = 0;
    pid_t pid, helper;
    DIR *d;
    struct dirent *e;

    (void)f, (void)arg;
    snprintf(tag, sizeof tag, "UZT_TEST_TAG=%d-%ld", (int)getpid(), (long)now_ns());
    CHECK(pipe(in) == 0 && pipe(out) == 0);
    pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        putenv(tag);
        dup2(in[0], STDIN_FILENO);
        dup2(out[1], STDOUT_FILENO);
        close(in[1]);
        close(out[0]);
        /* in[0] and out[1] stay open (no CLOEXEC): the helper must not keep them. */
        execl("/proc/self/exe", "check_ze_driver", "init-hold", (char *)NULL);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    CHECK(read(out[0], &ready, 1) == 1 && ready == 'r');
    helper = find_helper(tag);
    CHECK(helper > 0, "no helper process carries %s", tag);

    /* The helper holds stdio and its socket, nothing of the application's. */
    snprintf(fdpath, sizeof fdpath, "/proc/%d/fd", (int)helper);
    d = opendir(fdpath);
    CHECK(d);
    while ((e = readdir(d))) {
        char link[400];
        ssize_t n;
        int fdn = atoi(e->d_name);

        if (e->d_name[0] == '.')
            continue;
        snprintf(link, sizeof link, "%s/%s", fdpath, e->d_name);
        n = readlink(link, target, sizeof target - 1);
        target[n > 0 ? n : 0] = '\0';
        if (fdn > 2)
            CHECK(!strncmp(target, "socket:", 7) || !strncmp(target, "/memfd:", 7),
                  "helper fd %d is %s", fdn, target);
        nfd++;
    }
    closedir(d);
    CHECK(nfd <= 8, "helper holds %d fds", nfd);

    close(in[1]); /* the child exits, and with it its helper */
    CHECK(wait_exit(pid) == 0);
    for (int i = 0; i < 500 && !gone_or_zombie(helper); i++)
        usleep(10000);
    CHECK(gone_or_zombie(helper), "helper %d still runs after its application exited", (int)helper);
    close(out[0]);
    return 0;
}

/* ---- kernels ----------------------------------------------------------- */

static void *read_file(const char *path, size_t *size)
{
    struct stat st;
    void *buf;
    int fd = open(path, O_RDONLY);

    CHECK(fd >= 0, "%s: %s", path, strerror(errno));
    CHECK(fstat(fd, &st) == 0);
    buf = malloc((size_t)st.st_size);
    CHECK(buf && read(fd, buf, (size_t)st.st_size) == st.st_size);
    close(fd);
    *size = (size_t)st.st_size;
    return buf;
}

static ze_kernel_handle_t kernel(ze_module_handle_t m, const char *name)
{
    ze_kernel_desc_t kd = {.stype = ZE_STRUCTURE_TYPE_KERNEL_DESC, .pKernelName = name};
    ze_kernel_handle_t k;

    OK(zeKernelCreate(m, &kd, &k));
    return k;
}

static int test_kernel(struct fx *f, const char *so)
{
    ze_module_desc_t md = {.stype = ZE_STRUCTURE_TYPE_MODULE_DESC,
                           .format = ZE_MODULE_FORMAT_NATIVE};
    ze_kernel_desc_t kd = {.stype = ZE_STRUCTURE_TYPE_KERNEL_DESC, .pKernelName = "no_such_kernel"};
    ze_module_build_log_handle_t log;
    ze_module_handle_t m, m2;
    ze_kernel_handle_t count, rdv, grw, k;
    ze_group_count_t groups = {4, 1, 1};
    ze_command_list_handle_t ce;
    uint64_t *counter = dev_alloc(f, 0, 4096, 0), host_counter = 0, gbuf[4];
    uint32_t *ids = dev_alloc(f, 0, 4096 * 4, 0), out[1024], add = 3;
    void *global;
    size_t gsize = 0, logsize = 0, size;
    void *bytes = read_file(so, &size);
    static const uint8_t spirv[] = {0x03, 0x02, 0x23, 0x07, 0, 0, 1, 0};
    char buildlog[512];

    /* Not native, or not an ELF object. */
    md.inputSize = sizeof spirv;
    md.pInputModule = spirv;
    md.format = ZE_MODULE_FORMAT_IL_SPIRV;
    CHECK_ZE(zeModuleCreate(f->ctx, f->dev[0], &md, &m, NULL), ZE_RESULT_ERROR_UNSUPPORTED_FEATURE);
    md.format = ZE_MODULE_FORMAT_NATIVE;
    CHECK_ZE(zeModuleCreate(f->ctx, f->dev[0], &md, &m, &log),
             ZE_RESULT_ERROR_INVALID_NATIVE_BINARY);
    /* An intercepting loader does not wrap the log of a failed build: skip it there. */
    if (!getenv("ZE_ENABLE_LOADER_INTERCEPT")) {
        OK(zeModuleBuildLogGetString(log, &logsize, NULL));
        CHECK(logsize > 1 && logsize <= sizeof buildlog);
        OK(zeModuleBuildLogGetString(log, &logsize, buildlog));
        CHECK(strstr(buildlog, "ELF"), "build log: %s", buildlog);
        OK(zeModuleBuildLogDestroy(log));
    }

    md.inputSize = size;
    md.pInputModule = bytes;
    OK(zeModuleCreate(f->ctx, f->dev[0], &md, &m, &log));
    OK(zeModuleBuildLogDestroy(log));
    CHECK_ZE(zeKernelCreate(m, &kd, &k), ZE_RESULT_ERROR_INVALID_KERNEL_NAME);

    /* 4 groups of 64: each work-item adds 3 and writes its id. */
    count = kernel(m, "uzt_test_count");
    {
        uint32_t x, y, z;

        OK(zeKernelSuggestGroupSize(count, 1000, 6, 1, &x, &y, &z));
        CHECK(x && y && z && 1000 % x == 0 && 6 % y == 0 && x * y * z <= 1024);
    }
    OK(zeKernelSetGroupSize(count, 64, 1, 1));
    copy(f, counter, &host_counter, sizeof host_counter);
    OK(zeCommandListAppendMemoryFill(f->list, ids, "\0", 1, 4096 * 4, NULL, 0, NULL));
    OK(zeKernelSetArgumentValue(count, 0, sizeof counter, &counter));
    OK(zeKernelSetArgumentValue(count, 1, sizeof ids, &ids));
    OK(zeKernelSetArgumentValue(count, 2, sizeof add, &add));
    OK(zeCommandListAppendLaunchKernel(f->list, count, &groups, NULL, 0, NULL));
    add = 1000; /* arguments were captured at append */
    OK(zeKernelSetArgumentValue(count, 2, sizeof add, &add));
    groups.groupCountX = 1;
    OK(zeCommandListAppendLaunchKernel(f->list, count, &groups, NULL, 0, NULL));
    copy(f, &host_counter, counter, sizeof host_counter);
    copy(f, out, ids, 256 * sizeof *out);
    CHECK(host_counter == 256 * 3 + 64 * 1000, "counter %" PRIu64, host_counter);
    for (uint32_t i = 0; i < 256; i++)
        CHECK(out[i] == i + 1, "work-item %u wrote %u", i, out[i]);

    /* 1024 work-items that wait for one another; more is refused. */
    rdv = kernel(m, "uzt_test_rendezvous");
    OK(zeKernelSetGroupSize(rdv, 16, 4, 2));
    groups = (ze_group_count_t){2, 2, 2};
    OK(zeCommandListAppendMemoryFill(f->list, ids, "\0", 1, 4096 * 4, NULL, 0, NULL));
    OK(zeKernelSetArgumentValue(rdv, 0, sizeof counter, &counter));
    OK(zeKernelSetArgumentValue(rdv, 1, sizeof ids, &ids));
    OK(zeCommandListAppendMemoryFill(f->list, counter, "\0", 1, 8, NULL, 0, NULL));
    OK(zeCommandListAppendLaunchKernel(f->list, rdv, &groups, NULL, 0, NULL));
    copy(f, out, ids, sizeof out);
    for (uint32_t i = 0; i < 1024; i++)
        CHECK(out[i] == 1024, "work-item %u saw %u arrivals", i, out[i]);
    groups.groupCountZ = 3;
    CHECK_ZE(zeCommandListAppendLaunchKernel(f->list, rdv, &groups, NULL, 0, NULL),
             ZE_RESULT_ERROR_INVALID_ARGUMENT);
    CHECK_ZE(zeKernelSetGroupSize(rdv, 1025, 1, 1), ZE_RESULT_ERROR_INVALID_GROUP_SIZE_DIMENSION);
    ce = make_list(f, 0, 1, ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS);
    groups = (ze_group_count_t){1, 1, 1};
    CHECK_ZE(zeCommandListAppendLaunchKernel(ce, count, &groups, NULL, 0, NULL),
             ZE_RESULT_ERROR_INVALID_ARGUMENT);
    OK(zeCommandListDestroy(ce));

    /* A module global: written and read through copies, used by a kernel. */
    OK(zeModuleGetGlobalPointer(m, "uzt_test_global", &gsize, &global));
    CHECK(gsize == sizeof gbuf, "global of %zu bytes", gsize);
    {
        ze_memory_allocation_properties_t mp = {.stype =
                                                    ZE_STRUCTURE_TYPE_MEMORY_ALLOCATION_PROPERTIES};

        OK(zeMemGetAllocProperties(f->ctx, global, &mp, NULL));
        CHECK(mp.type == ZE_MEMORY_TYPE_DEVICE);
    }
    CHECK_ZE(zeModuleGetGlobalPointer(m, "uzt_no_global", &gsize, &global),
             ZE_RESULT_ERROR_INVALID_GLOBAL_NAME);
    OK(zeModuleGetGlobalPointer(m, "uzt_test_global", NULL, &global));
    copy(f, gbuf, global, sizeof gbuf);
    CHECK(gbuf[0] == 1 && gbuf[3] == 4, "initial global %" PRIu64, gbuf[0]);
    gbuf[0] = 7;
    copy(f, global, gbuf, sizeof gbuf);
    grw = kernel(m, "uzt_test_global_rw");
    OK(zeKernelSetArgumentValue(grw, 0, sizeof counter, &counter));
    OK(zeCommandListAppendLaunchKernel(f->list, grw, &groups, NULL, 0, NULL));
    copy(f, gbuf, counter, sizeof gbuf);
    CHECK(gbuf[0] == 70 && gbuf[1] == 20 && gbuf[3] == 40, "kernel read %" PRIu64, gbuf[0]);
    copy(f, gbuf, global, sizeof gbuf);
    CHECK(gbuf[0] == 14 && gbuf[2] == 6, "kernel wrote %" PRIu64, gbuf[0]);

    /* A second module from the same bytes has its own globals. */
    OK(zeModuleCreate(f->ctx, f->dev[0], &md, &m2, NULL));
    OK(zeModuleGetGlobalPointer(m2, "uzt_test_global", NULL, &global));
    copy(f, gbuf, global, sizeof gbuf);
    CHECK(gbuf[0] == 1, "a fresh module's global is %" PRIu64, gbuf[0]);
    OK(zeModuleDestroy(m2));

    OK(zeKernelDestroy(count));
    OK(zeKernelDestroy(rdv));
    OK(zeKernelDestroy(grw));
    OK(zeModuleDestroy(m));
    OK(zeMemFree(f->ctx, counter));
    OK(zeMemFree(f->ctx, ids));
    free(bytes);
    return 0;
}

/*
 * A kernel that dereferences NULL kills the helper, as a page fault would
 * lose a GPU: waits end with ZE_RESULT_ERROR_DEVICE_LOST instead of hanging.
 */
static int test_device_lost(struct fx *unused, const char *so)
{
    ze_module_desc_t md = {.stype = ZE_STRUCTURE_TYPE_MODULE_DESC,
                           .format = ZE_MODULE_FORMAT_NATIVE};
    ze_device_mem_alloc_desc_t dd = {.stype = ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC};
    ze_group_count_t one = {1, 1, 1};
    ze_module_handle_t m;
    ze_kernel_handle_t k;
    ze_event_handle_t e;
    uint32_t add = 1;
    uint64_t t0;
    struct fx f;
    void *p;

    (void)unused;
    fx_init(&f);
    e = make_event(&f, 0);
    md.pInputModule = read_file(so, &md.inputSize);
    OK(zeModuleCreate(f.ctx, f.dev[0], &md, &m, NULL));
    k = kernel(m, "uzt_test_count");
    OK(zeKernelSetArgumentValue(k, 0, sizeof(void *), NULL));
    OK(zeKernelSetArgumentValue(k, 1, sizeof(void *), NULL));
    OK(zeKernelSetArgumentValue(k, 2, sizeof add, &add));
    OK(zeCommandListAppendLaunchKernel(f.list, k, &one, e, 0, NULL));
    t0 = now_ns();
    CHECK_ZE(zeEventHostSynchronize(e, 10000000000u), ZE_RESULT_ERROR_DEVICE_LOST);
    CHECK(now_ns() - t0 < 5000000000u, "noticed only after %.1f s", (now_ns() - t0) / 1e9);
    CHECK_ZE(zeMemAllocDevice(f.ctx, &dd, 4096, 0, f.dev[0], &p), ZE_RESULT_ERROR_DEVICE_LOST);
    /* Everything can still be released. */
    CHECK_ZE(zeCommandListDestroy(f.list), ZE_RESULT_ERROR_DEVICE_LOST);
    OK(zeKernelDestroy(k));
    CHECK_ZE(zeModuleDestroy(m), ZE_RESULT_ERROR_DEVICE_LOST);
    OK(zeEventDestroy(e));
    OK(zeEventDestroy(f.done));
    OK(zeEventPoolDestroy(f.pool));
    OK(zeContextDestroy(f.ctx));
    free((void *)md.pInputModule);
    return 0;
}

/* ---- main -------------------------------------------------------------- */

static const struct {
    const char *name;
    int (*fn)(struct fx *f, const char *arg);
    bool fixture; /* run between fx_init and fx_fini */
} tests[] = {
    {"props", test_props, true},
    {"affinity", test_affinity, true},
    {"p2p-xelink", test_p2p, true},
    {"p2p-pcie", test_p2p, true},
    {"p2p-pcie-atomics", test_p2p, true},
    {"p2p-none", test_p2p, true},
    {"pci-bdfs", test_pci_bdfs, true},
    {"bad-env", test_bad_env, false},
    {"fault", test_fault, true},
    {"host", test_host, true},
    {"copy", test_copy, true},
    {"events", test_events, true},
    {"queue", test_queue, true},
    {"ipc", test_ipc, true},
    {"ipc-multi", test_ipc_multi, true},
    {"ipc-bad", test_ipc_bad, true},
    {"leak", test_leak, true},
    {"shared", test_shared, true},
    {"align", test_align, true},
    {"helper-exit", test_helper_exit, false},
    {"kernel", test_kernel, true},
    {"device-lost", test_device_lost, false},
};

int main(int argc, char **argv)
{
    const char *arg = argc > 2 ? argv[2] : NULL;
    struct fx f;
    int rc;

    setvbuf(stdout, NULL, _IONBF, 0);
    if (argc < 2) {
        fprintf(stderr, "usage: %s TEST [ARG]\n", argv[0]);
        return 2;
    }
    if (!strcmp(argv[1], "init-only"))
        return sub_init_only();
    if (!strcmp(argv[1], "init-hold"))
        return sub_init_hold();
    if (!strcmp(argv[1], "ipc-child"))
        return arg ? sub_ipc_child(arg) : 2;
    for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++) {
        if (strcmp(argv[1], tests[i].name))
            continue;
        if (tests[i].fixture)
            fx_init(&f);
        rc = tests[i].fn(tests[i].fixture ? &f : NULL, arg);
        if (tests[i].fixture)
            fx_fini(&f);
        if (rc == 0)
            printf("%s: ok\n", argv[1]);
        return rc;
    }
    fprintf(stderr, "unknown test %s\n", argv[1]);
    return 2;
}
