/* The host side of the device API (device_api.h): the device state that
 * libushmem exports to device code, the per-thread ring producer of the cpu
 * backend, the modules of device code (CUDA translation units) that hold
 * copies of the state and are written at init, and the proxy thread with its
 * per-PE transports: the fabric for peers whose routes go over libfabric,
 * the ipc transport (mapped memory) for the others. */
#include "device_api.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ushmem/device.h>

#include "../proxy/proxy.h"
#include "../transport/decide.h"
#include "../transport/ipc_ops.h"
#include "internal.h"

/* Read by the inline calls of include/ushmem/device.h in the application. */
USHMEMI_API struct ushmem_device_state ushmem_device_state;
USHMEMI_API _Thread_local struct ushmem_ring_producer ushmem_device_producer;

static struct {
    /* What ushmem_device_state.peers points to: a table in this PE's heap,
     * where the device reads it, allocated by every PE at init with the
     * same size, so the heap stays symmetric. */
    struct ushmem_device_peer *peers;
    /* The team table and the team barriers' words (device_state.h), in
     * the heap after the peers, allocated with them. */
    struct ushmem_device_team *teams;
    struct ushmemi_transport *ipc;    /* the proxy's road to mapped peers; NULL: none */
    struct ushmemi_transport *ipc_ce; /* the same over the copy engine (device heaps) */
    uint64_t *done_copy; /* the proxy's copy of its completed counter; NULL: none */
    /* the ring's tail and values in the heap (proxy_ring_apart); NULL: the ring's */
    uint64_t *ring_tail, *ring_values;
    /* The fault record (device_state.h) in pinned host memory, from init
     * to finalize; NULL without one. told: printed already. */
    struct ushmem_device_fault *fault;
    _Atomic bool fault_told;
    /* Held while the record is read or freed: a helper thread may end the
     * job (ushmemi_fatal) while finalize frees it. */
    pthread_mutex_t fault_lock;
} dev_api = {.fault_lock = PTHREAD_MUTEX_INITIALIZER};

/* Modules of device code with their own copy of the state, registered by
 * static constructors, so possibly before main and from any thread that
 * loads a library. */
struct device_module {
    const char *backend;
    ushmem_device_fill_fn fill;
    unsigned state_version, ring_version; /* 0: not told (ushmemi_device_register) */
};
static struct {
    pthread_mutex_t lock;
    struct device_module *list;
    size_t n, cap;
    bool filled; /* the state is valid: a new module is written at once */
} modules = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* Writes one module's copy of the state, unless it was compiled against
 * another ushmem's headers; errors are logged here. */
static ushmem_status_t fill_module(const struct device_module *m)
{
    if (m->state_version != USHMEM_DEVICE_STATE_VERSION ||
        m->ring_version != USHMEM_RING_VERSION) {
        char told[96];
        if (m->state_version == 0)
            snprintf(told, sizeof(told), "an older one, which did not say its versions");
        else
            snprintf(told, sizeof(told), "device state version %u, ring protocol %u",
                     m->state_version, m->ring_version);
        ushmemi_error("shmem_init: device API: PE %d: a %s module of the program was compiled "
                      "against another ushmem's <ushmem/device.h> (%s; this library has %u and "
                      "%u): rebuild it with this ushmem's headers; its kernels cannot call ushmem",
                      ushmemi_g.my_pe, m->backend, told, USHMEM_DEVICE_STATE_VERSION,
                      USHMEM_RING_VERSION);
        return USHMEM_ERR_DEVICE;
    }
    const char *err = m->fill(&ushmem_device_state);

    if (err == NULL)
        return USHMEM_OK;
    ushmemi_error("shmem_init: device API: PE %d cannot write the device state into a %s module "
                  "of the program (%s); its kernels cannot call ushmem",
                  ushmemi_g.my_pe, m->backend, err);
    return USHMEM_ERR_DEVICE;
}

static bool module_matches(const struct device_module *m)
{
    return ushmemi_g.dev_ops != NULL && strcmp(m->backend, ushmemi_g.dev_ops->name) == 0;
}

USHMEMI_API void ushmemi_device_register_versions(const char *backend, ushmem_device_fill_fn fill,
                                                  unsigned state_version, unsigned ring_version)
{
    pthread_mutex_lock(&modules.lock);
    if (modules.n == modules.cap) {
        size_t cap = modules.cap ? 2 * modules.cap : 16;
        struct device_module *list = realloc(modules.list, cap * sizeof(*list));
        if (list == NULL) {
            pthread_mutex_unlock(&modules.lock);
            ushmemi_error("device API: cannot grow the table of %zu device-code modules; a %s "
                          "module's kernels will not reach ushmem",
                          modules.n, backend);
            return;
        }
        modules.list = list;
        modules.cap = cap;
    }
    struct device_module *m = &modules.list[modules.n++];
    *m = (struct device_module){backend, fill, state_version, ring_version};
    if (modules.filled && module_matches(m))
        fill_module(m);
    pthread_mutex_unlock(&modules.lock);
}

USHMEMI_API void ushmemi_device_register(const char *backend, ushmem_device_fill_fn fill)
{
    ushmemi_device_register_versions(backend, fill, 0, 0);
}

/* Writes the state into every module of the backend in use. */
static ushmem_status_t fill_modules(void)
{
    ushmem_status_t status = USHMEM_OK;
    size_t n = 0;

    pthread_mutex_lock(&modules.lock);
    for (size_t i = 0; i < modules.n && status == USHMEM_OK; i++) {
        if (module_matches(&modules.list[i])) {
            status = fill_module(&modules.list[i]);
            n++;
        }
    }
    modules.filled = status == USHMEM_OK;
    pthread_mutex_unlock(&modules.lock);
    if (status == USHMEM_OK && n > 0)
        ushmemi_debug("device API: state written into %zu %s module(s) of the program", n,
                      ushmemi_g.dev_ops->name);
    return status;
}

static ushmem_status_t check_settings(bool *force_proxy_p)
{
    const char *route = ushmemi_settings.device_route;
    long ring_size = ushmemi_settings.proxy_ring_size;
    bool force_proxy;

    if (strcmp(route, "auto") == 0) {
        force_proxy = false;
    } else if (strcmp(route, "proxy") == 0) {
        force_proxy = true;
    } else {
        ushmemi_error("shmem_init: USHMEM_DEVICE_ROUTE=%s is not one of auto, proxy", route);
        return USHMEM_ERR_INVALID_VALUE;
    }
    if (ring_size < 2 || ring_size > (1L << 30) || (ring_size & (ring_size - 1)) != 0) {
        ushmemi_error("shmem_init: USHMEM_PROXY_RING_SIZE=%ld is not a power of two between 2 "
                      "and 2^30",
                      ring_size);
        return USHMEM_ERR_INVALID_VALUE;
    }
    *force_proxy_p = force_proxy;
    return USHMEM_OK;
}

/* Host-sync (two PEs on one device) still reaches the peer's words through
 * the mapping: the memory is this very device's, so its atomics are native.
 * Only the host changes how it waits; the proxy has nothing to add, and with
 * a device heap it could not copy anyway. */
static bool route_is_direct(enum ushmemi_route route)
{
    return route == USHMEMI_ROUTE_DIRECT || route == USHMEMI_ROUTE_SELF ||
           route == USHMEMI_ROUTE_HOST_SYNC;
}

static bool route_is_fabric(enum ushmemi_route route)
{
    return route == USHMEMI_ROUTE_PROXY_OFI || route == USHMEMI_ROUTE_STAGED;
}

/* Fills the per-PE entries; returns whether some class of some PE needs the
 * proxy and whether some PE takes different roads for different classes. */
static void fill_peers(struct ushmem_device_peer *peers, bool *some_proxied_p, bool *mixed_p)
{
    *some_proxied_p = false;
    *mixed_p = false;
    for (int pe = 0; pe < ushmemi_g.n_pes; pe++) {
        const struct ushmemi_peer *peer = &ushmemi_g.peers[pe];
        int ndirect = 0;

        peers[pe].heap_base = (uint64_t)(uintptr_t)peer->base;
        for (int cls = 0; cls < USHMEMI_CLASS_COUNT; cls++) {
            bool direct = peer->base != NULL && route_is_direct(peer->route[cls]);
            peers[pe].direct[cls] = direct;
            ndirect += direct;
        }
        if (ndirect < USHMEMI_CLASS_COUNT)
            *some_proxied_p = true;
        if (ndirect > 0 && ndirect < USHMEMI_CLASS_COUNT)
            *mixed_p = true;
    }
}

/* Whether pe's heap lies where the window of stride `stride` around this
 * PE's heap puts it. */
static bool in_window(const struct ushmem_device_peer *peers, int pe, uint64_t stride)
{
    uint64_t mine = peers[ushmemi_g.my_pe].heap_base;
    return peers[pe].heap_base != 0 &&
           peers[pe].heap_base == mine + (uint64_t)(int64_t)(pe - ushmemi_g.my_pe) * stride;
}

/* The window of the device state (detail/device_state.h): the widest run of
 * PEs around this one whose mapped heaps lie one stride apart (the cuda
 * backend places a node's heaps so) and, per class, the part of it around
 * this PE that the class reaches directly. Nothing under
 * USHMEM_DEVICE_ROUTE=proxy, where every call goes through the ring. */
static void fill_window(const struct ushmem_device_peer *peers, bool force_proxy,
                        struct ushmem_device_state *st)
{
    int me = ushmemi_g.my_pe, n = ushmemi_g.n_pes, lo = me, hi = me;
    uint64_t mine = peers[me].heap_base, stride = 0;

    if (force_proxy || mine == 0)
        return;
    if (me + 1 < n && peers[me + 1].heap_base != 0)
        stride = peers[me + 1].heap_base - mine;
    else if (me > 0 && peers[me - 1].heap_base != 0)
        stride = mine - peers[me - 1].heap_base;
    if (stride != 0) {
        while (lo > 0 && in_window(peers, lo - 1, stride))
            lo--;
        while (hi + 1 < n && in_window(peers, hi + 1, stride))
            hi++;
    }
    st->peer_stride = stride;
    for (int cls = 0; cls < USHMEM_DEVICE_CLASS_COUNT; cls++) {
        int first = me, last = me;
        if (!peers[me].direct[cls])
            continue;
        while (first > lo && peers[first - 1].direct[cls])
            first--;
        while (last < hi && peers[last + 1].direct[cls])
            last++;
        st->window_first[cls] = first;
        st->window_count[cls] = (uint32_t)(last - first + 1);
    }
    ushmemi_debug("device API: PEs %d..%d in a window of stride 0x%llx; directly by class: "
                  "%u %u %u %u PEs", lo, hi, (unsigned long long)stride, st->window_count[0],
                  st->window_count[1], st->window_count[2], st->window_count[3]);
}

/* The class numbers of device code are the host's. */
_Static_assert(USHMEM_DEVICE_CLASS_RMA == (int)USHMEMI_CLASS_RMA &&
                   USHMEM_DEVICE_CLASS_AMO == (int)USHMEMI_CLASS_AMO &&
                   USHMEM_DEVICE_CLASS_SIGNAL == (int)USHMEMI_CLASS_SIGNAL &&
                   USHMEM_DEVICE_CLASS_SYNC == (int)USHMEMI_CLASS_SYNC &&
                   USHMEM_DEVICE_CLASS_COUNT == (int)USHMEMI_CLASS_COUNT,
               "device classes match the route table's");

/* Makes the ipc transport over every mapped heap. */
static ushmem_status_t create_ipc_into(struct ushmemi_transport **t_p)
{
    void **bases = calloc((size_t)ushmemi_g.n_pes, sizeof(*bases));
    ushmem_status_t status;

    if (bases == NULL) {
        ushmemi_error("shmem_init: device API: cannot allocate the table of %d mapped heaps",
                      ushmemi_g.n_pes);
        return USHMEM_ERR_NO_MEMORY;
    }
    for (int pe = 0; pe < ushmemi_g.n_pes; pe++)
        bases[pe] = ushmemi_g.peers[pe].base;
    status = ushmemi_ipc_transport_create(bases, ushmemi_g.n_pes, ushmemi_g.heap_size, t_p);
    free(bases);
    return status;
}

static ushmem_status_t create_ipc(void) { return create_ipc_into(&dev_api.ipc); }

static ushmem_status_t create_ipc_ce(void)
{
    ushmem_status_t status = create_ipc_into(&dev_api.ipc_ce);
    if (status == USHMEM_OK)
        status = ushmemi_ipc_transport_set_device(dev_api.ipc_ce, ushmemi_g.dev_ops,
                                                  ushmemi_g.dev);
    /* One device atomic now, before any kernel of the program runs: a
     * driver that loads kernels lazily may wait for the device to go idle
     * to load the proxy's, which a kernel spinning on that very atomic
     * would never let happen. */
    if (status == USHMEM_OK)
        status = ushmemi_g.dev_ops->amo(ushmemi_g.dev, ushmemi_g.reserved->stream_flags,
                                        USHMEM_RING_AMO_FETCH, sizeof(uint64_t), 0, 0, NULL);
    return status;
}

/* Chooses each PE's proxy transport: the fabric when some class goes there
 * over libfabric, else its mapped heap (a CPU copy, so only when the heap is
 * host memory). A PE that device code may send requests to (every PE under
 * USHMEM_DEVICE_ROUTE=proxy, else those with a proxied class) and that has
 * neither is an error now rather than a refused request later. */
static ushmem_status_t choose_transports(bool force_proxy, const struct ushmem_device_peer *peers,
                                         struct ushmemi_proxy_peer *pp)
{
    ushmem_status_t status;

    for (int pe = 0; pe < ushmemi_g.n_pes; pe++) {
        const struct ushmemi_peer *peer = &ushmemi_g.peers[pe];
        const struct ushmem_device_peer *dp = &peers[pe];
        bool fabric = false, proxied = force_proxy;

        for (int cls = 0; cls < USHMEMI_CLASS_COUNT; cls++) {
            fabric |= route_is_fabric(peer->route[cls]);
            proxied |= !dp->direct[cls];
        }
        pp[pe] = (struct ushmemi_proxy_peer){NULL, NULL, USHMEMI_PROXY_DEVMEM_REFUSE};
        if (fabric && ushmemi_g.fabric_ops != NULL) {
            pp[pe].ops = ushmemi_g.fabric_ops;
            pp[pe].transport = ushmemi_g.fabric;
            /* Device-memory buffers: the fabric takes them itself when it
             * registered the heap as device memory (FI_HMEM); with staging,
             * the proxy bounces them through host memory. */
            if (ushmemi_g.heap_is_device)
                pp[pe].device_memory = ushmemi_settings.fabric_staging
                                           ? USHMEMI_PROXY_DEVMEM_STAGE
                                           : USHMEMI_PROXY_DEVMEM_PASS;
        } else if (peer->base != NULL && ushmemi_g.heap_host_accessible) {
            if (dev_api.ipc == NULL) {
                status = create_ipc();
                if (status != USHMEM_OK)
                    return status;
            }
            pp[pe].ops = &ushmemi_transport_ipc_ops;
            pp[pe].transport = dev_api.ipc;
        } else if (peer->base != NULL && ushmemi_g.dev_ops->amo != NULL) {
            /* A mapped heap in device memory: the copy engine moves the
             * data and the device runs the atomics; the CPU touches
             * neither. */
            if (dev_api.ipc_ce == NULL) {
                status = create_ipc_ce();
                if (status == USHMEM_ERR_UNSUPPORTED)
                    ushmemi_error("shmem_init: device API: PE %d would send requests for PE %d "
                                  "through the proxy thread, over the copy engine, but the %s "
                                  "backend cannot run the proxy's atomics on device memory (it "
                                  "has no module of its own kernels: on ze, USHMEM_ZE_KERNELS "
                                  "names one); use the direct road (unset "
                                  "USHMEM_DEVICE_ROUTE=proxy) between mapped peers",
                                  ushmemi_g.my_pe, pe, ushmemi_g.dev_ops->name);
                if (status != USHMEM_OK)
                    return status;
            }
            pp[pe].ops = &ushmemi_transport_ipc_ce_ops;
            pp[pe].transport = dev_api.ipc_ce;
            pp[pe].device_memory = USHMEMI_PROXY_DEVMEM_PASS;
        } else if (proxied) {
            ushmemi_error("shmem_init: device API: PE %d would send requests for PE %d through "
                          "the proxy thread, which can reach it neither over the fabric (%s) nor "
                          "through its mapped heap (%s)",
                          ushmemi_g.my_pe, pe,
                          fabric ? "not open" : "no route uses it",
                          peer->base == NULL ? "not mapped" : "device memory the CPU cannot copy");
            return USHMEM_ERR_NO_ROUTE;
        }
        if (pp[pe].ops != NULL)
            ushmemi_debug("device API: the proxy reaches PE %d through transport %s%s", pe,
                          pp[pe].ops->name,
                          pp[pe].device_memory == USHMEMI_PROXY_DEVMEM_STAGE
                              ? ", device buffers staged through host memory"
                              : "");
    }
    return USHMEM_OK;
}

/* Whether another PE uses this PE's device. */
static bool shares_device(void)
{
    for (int pe = 0; pe < ushmemi_g.n_pes; pe++)
        if (pe != ushmemi_g.my_pe && ushmemi_g.pair_caps != NULL &&
            ushmemi_g.pair_caps[pe].same_device)
            return true;
    return false;
}

/* Another PE on this PE's device that is reached through the proxy for
 * some class, or -1. */
static int proxied_on_this_device(bool force_proxy, const struct ushmem_device_peer *peers)
{
    if (!ushmemi_g.heap_is_device)
        return -1;
    for (int pe = 0; pe < ushmemi_g.n_pes; pe++) {
        bool proxied = force_proxy;
        for (int cls = 0; cls < USHMEMI_CLASS_COUNT; cls++)
            proxied |= !peers[pe].direct[cls];
        bool here = pe != ushmemi_g.my_pe && ushmemi_g.pair_caps != NULL &&
                    ushmemi_g.pair_caps[pe].same_device;
        if (proxied && here)
            return pe;
    }
    return -1;
}

/* Through the proxy, a PE that shares its device with another waits for its
 * requests while the driver runs the other PE's kernels in turn (contexts
 * of different processes are time-sliced): correct, but slow enough that
 * kernels issuing many blocking calls look hung. Said once, at init. */
static void warn_shared_device(bool force_proxy, const struct ushmem_device_peer *peers)
{
    int pe = proxied_on_this_device(force_proxy, peers);
    if (pe >= 0)
        ushmemi_warn("device API: PE %d shares its %s device with PE %d and device calls go "
                     "through the proxy thread: the driver runs their kernels in turn, so "
                     "device calls that wait on the proxy are slow; give each PE its own "
                     "device, or keep the direct road (USHMEM_DEVICE_ROUTE=auto)",
                     ushmemi_g.my_pe, ushmemi_g.dev_ops->name, pe);
}

/* The proxy thread found a request it could not carry: the device code that
 * issued it cannot be told, so the job ends, on every PE. */
static void proxy_failed(void *ctx, ushmem_status_t status, const char *msg)
{
    (void)ctx;
    ushmemi_fatal("device API", "%s (%s)", msg, ushmemi_status_name(status));
}

/* Where the proxy copies its completed counter: a word of the heap when the
 * heap is device memory and the backend can write it behind its copies
 * (GPU threads polling host memory hold up the copy engine the proxy
 * uses), else nowhere. The word is zeroed here, before the proxy starts. */
static uint64_t *proxy_done_copy(void)
{
    if (!ushmemi_g.heap_is_device || ushmemi_g.dev_ops->write64 == NULL)
        return NULL;
    ushmemi_host_copy_zero(&ushmemi_g.reserved->ring_done, sizeof(ushmemi_g.reserved->ring_done));
    return &ushmemi_g.reserved->ring_done;
}

/* Where device code takes the ring's tickets and finds fetched values: in
 * the heap next to the counter's copy, which completes them, when the ring
 * fits there (its slots are USHMEM_PROXY_RING_SIZE); else in the ring. The
 * values stay in the ring where the proxy reaches another PE on this
 * device: a value written there by a device copy or kernel waits for the
 * other process's time slice on the GPU (4.7 ms a get on one H200 shared by
 * 2 PEs, against 20 us into the ring's cell in host memory). This PE's own
 * requests to itself do not wait so (one context): at 1 PE on one H200,
 * fetch-add 14.2-15.1 us with the values apart against 17.2-18.2 in the
 * ring's cells. */
_Static_assert(USHMEM_RING_VALUE_EMPTY == (USHMEM_RING_VALUE_EMPTY & 0xff) * 0x0101010101010101ull,
               "an empty value cell is one byte repeated, which a memset writes");

static void proxy_ring_apart(bool force_proxy, const struct ushmem_device_peer *peers)
{
    /* Measurement and test switch: 0, the ring's own tail and cells; 2,
     * the values apart wherever the tail is (the cpu backend's tests); 3,
     * the values in the ring's cells wherever the tail is apart. */
    const char *sw = getenv("USHMEMI_RING_DEVICE");
    dev_api.ring_tail = dev_api.ring_values = NULL;
    if (dev_api.done_copy == NULL || ushmemi_settings.proxy_ring_size > USHMEMI_RING_DEVICE_SLOTS ||
        (sw != NULL && strcmp(sw, "0") == 0))
        return;
    /* The tail's line zeroed, every value cell empty (ring.h). */
    ushmemi_host_copy_zero(ushmemi_g.reserved->ring_device, 8 * sizeof(uint64_t));
    ushmemi_host_fill(ushmemi_g.reserved->ring_device + 8, USHMEM_RING_VALUE_EMPTY & 0xff,
                      USHMEMI_RING_DEVICE_SLOTS * sizeof(uint64_t));
    dev_api.ring_tail = ushmemi_g.reserved->ring_device;
    if ((proxied_on_this_device(force_proxy, peers) < 0 && (sw == NULL || strcmp(sw, "3") != 0)) ||
        (sw != NULL && strcmp(sw, "2") == 0))
        dev_api.ring_values = ushmemi_g.reserved->ring_device + 8;
}

static ushmem_status_t start_proxy(bool force_proxy, const struct ushmem_device_peer *peers)
{
    struct ushmemi_proxy_peer *pp = calloc((size_t)ushmemi_g.n_pes, sizeof(*pp));
    ushmem_status_t status;

    if (pp == NULL) {
        ushmemi_error("shmem_init: device API: cannot allocate the proxy's table of %d PEs",
                      ushmemi_g.n_pes);
        return USHMEM_ERR_NO_MEMORY;
    }
    status = choose_transports(force_proxy, peers, pp);
    if (status != USHMEM_OK)
        goto free_pp;
    dev_api.done_copy = proxy_done_copy();
    if (dev_api.done_copy != NULL)
        ushmemi_debug("device API: the proxy copies its completed counter into the heap, offset "
                      "%zu, where device code waits on it",
                      (size_t)((char *)dev_api.done_copy - ushmemi_g.heap_base));
    proxy_ring_apart(force_proxy, peers);
    if (dev_api.ring_tail != NULL)
        ushmemi_debug("device API: device code takes the ring's tickets in the heap, offset %zu, "
                      "and reads fetched values %s",
                      (size_t)((char *)dev_api.ring_tail - ushmemi_g.heap_base),
                      dev_api.ring_values != NULL ? "there too"
                                                  : "in the ring (another PE that the proxy "
                                                    "reaches shares this device)");
    struct ushmemi_proxy_params params = {
        .dev_ops = ushmemi_g.dev_ops,
        .dev = ushmemi_g.dev,
        .capacity = (uint32_t)ushmemi_settings.proxy_ring_size,
        .my_pe = ushmemi_g.my_pe,
        .npes = ushmemi_g.n_pes,
        .local_rank = ushmemi_g.host_local_rank,
        .local_size = ushmemi_g.host_local_size,
        .peers = pp,
        .abort_cb = proxy_failed,
        .abort_ctx = NULL,
        .done_copy = dev_api.done_copy,
        .ring_tail = dev_api.ring_tail,
        .ring_values = dev_api.ring_values,
        .idle_spin = ushmemi_g.idle_spin,
        .warm_offset = offsetof(struct ushmemi_reserved, warm_word),
        .warm_kernel = !shares_device(),
    };
    status = ushmemi_proxy_start(&params, &ushmemi_g.proxy);
    warn_shared_device(force_proxy, peers);

free_pp:
    free(pp); /* the proxy copies it */
    return status;
}

/* The fault record's report (device_state.h): a device call that ended a
 * kernel for the caller's error wrote why; once, whoever asks first. */
void ushmemi_device_api_fault_report(void)
{
    pthread_mutex_lock(&dev_api.fault_lock);
    struct ushmem_device_fault *f = dev_api.fault, copy;
    bool tell = f != NULL && __atomic_load_n(&f->ready, __ATOMIC_ACQUIRE) != 0 &&
                !atomic_exchange(&dev_api.fault_told, true);
    if (tell)
        memcpy(&copy, f, sizeof(copy));
    pthread_mutex_unlock(&dev_api.fault_lock);
    if (!tell)
        return;
    f = &copy;
    char call[USHMEM_DEVICE_FAULT_CALL];
    memcpy(call, f->call, sizeof(call));
    call[sizeof(call) - 1] = '\0';
    /* Always printed, whatever the log level: the kernel is gone. */
    int saved = ushmemi_log_level;
    if (ushmemi_log_level < USHMEMI_LOG_ERROR)
        ushmemi_log_level = USHMEMI_LOG_ERROR;
    if (f->what == USHMEM_DEVICE_FAULT_TEAM)
        ushmemi_error("%s on the device with team %lld, which is not a team of this PE "
                      "(destroyed, never made, NVSHMEM_TEAM_INVALID, or a team ushmem does not "
                      "have): the kernel was ended there",
                      call, (long long)f->value);
    else
        ushmemi_error("%s on the device ended the kernel (fault %d, value %lld)", call,
                      (int)f->what, (long long)f->value);
    ushmemi_log_level = saved;
    fflush(stderr);
}

/* A program that sees its kernel fail and exits, without shmem_finalize,
 * still hears why; not in a child the program forked. */
static pid_t fault_pid;

static void fault_at_exit(void)
{
    if (getpid() == fault_pid)
        ushmemi_device_api_fault_report();
}

static void fault_open(void)
{
    static bool registered;
    void *record = NULL;

    atomic_store(&dev_api.fault_told, false);
    if (ushmemi_g.dev_ops->host_alloc == NULL ||
        ushmemi_g.dev_ops->host_alloc(ushmemi_g.dev, sizeof(*dev_api.fault), &record) !=
            USHMEM_OK) {
        /* Device code then only traps: the program still sees its kernel fail. */
        ushmemi_debug("device API: no fault record; a device call ending a kernel says nothing");
        return;
    }
    memset(record, 0, sizeof(*dev_api.fault));
    pthread_mutex_lock(&dev_api.fault_lock);
    dev_api.fault = record;
    pthread_mutex_unlock(&dev_api.fault_lock);
    fault_pid = getpid(); /* a forked child that initialises is a PE of its own */
    if (!registered)
        registered = atexit(fault_at_exit) == 0;
}

static void fault_close(void)
{
    ushmemi_device_api_fault_report();
    pthread_mutex_lock(&dev_api.fault_lock);
    struct ushmem_device_fault *f = dev_api.fault;
    dev_api.fault = NULL;
    pthread_mutex_unlock(&dev_api.fault_lock);
    if (f != NULL)
        ushmemi_g.dev_ops->host_free(ushmemi_g.dev, f, sizeof(*f));
}

ushmem_status_t ushmemi_device_api_init(void)
{
    ushmem_status_t status;
    bool force_proxy, some_proxied, mixed;

    struct ushmem_device_peer *peers = NULL;
    size_t table_size = (size_t)ushmemi_g.n_pes * sizeof(*peers);
    /* The peers, the teams, then three words a PE for the team barriers. */
    size_t teams_at = (table_size + 63) & ~(size_t)63;
    size_t sync_at = teams_at + USHMEM_DEVICE_TEAMS * sizeof(struct ushmem_device_team);
    size_t heap_size = sync_at + 3 * (size_t)ushmemi_g.n_pes * sizeof(uint64_t);

    status = check_settings(&force_proxy);
    if (status != USHMEM_OK)
        return status;
    peers = calloc((size_t)ushmemi_g.n_pes, sizeof(*peers));
    dev_api.peers = ushmemi_heap_alloc(64, heap_size);
    if (peers == NULL || dev_api.peers == NULL) {
        ushmemi_error("shmem_init: device API: cannot allocate the state of %d PEs (%zu bytes "
                      "of host memory and %zu of the symmetric heap)",
                      ushmemi_g.n_pes, table_size, heap_size);
        status = USHMEM_ERR_NO_MEMORY;
        goto free_table;
    }
    fill_peers(peers, &some_proxied, &mixed);
    ushmemi_host_copy("shmem_init", dev_api.peers, peers, table_size);
    dev_api.teams = (struct ushmem_device_team *)((char *)dev_api.peers + teams_at);

    if (force_proxy || some_proxied) {
        status = start_proxy(force_proxy, peers);
        if (status != USHMEM_OK)
            goto free_ipc;
        ushmemi_debug("device API: proxy thread started (%s), %ld ring slots",
                      force_proxy ? "USHMEM_DEVICE_ROUTE=proxy" : "some peer has no direct road",
                      ushmemi_settings.proxy_ring_size);
    } else {
        ushmemi_debug("device API: every peer is reached directly; no proxy thread");
    }

    /* No peer signals these before the closing barrier of shmem_init, which
     * this PE has not reached yet. */
    ushmemi_host_copy_zero(ushmemi_g.reserved->device_flags,
                           sizeof(ushmemi_g.reserved->device_flags));
    ushmemi_host_copy_zero(ushmemi_g.reserved->device_epoch,
                           sizeof(ushmemi_g.reserved->device_epoch));
    ushmemi_host_copy_zero(ushmemi_g.reserved->stream_flags,
                           sizeof(ushmemi_g.reserved->stream_flags));
    ushmemi_host_copy_zero(dev_api.teams, heap_size - teams_at);
    ushmemi_device_api_team_set("shmem_init", 0, &ushmemi_team_world);
    ushmemi_device_api_team_set("shmem_init", 1, &ushmemi_team_shared);
    ushmemi_device_api_team_set("shmem_init", 2, &ushmemi_team_node);
    ushmemi_stream_reset();
    fault_open();
    ushmem_device_state = (struct ushmem_device_state){
        .version = USHMEM_DEVICE_STATE_VERSION,
        .my_pe = ushmemi_g.my_pe,
        .n_pes = ushmemi_g.n_pes,
        .force_proxy = force_proxy,
        .mixed_roads = !force_proxy && mixed,
        .heap_base = (uint64_t)(uintptr_t)ushmemi_g.heap_base,
        /* The whole reserve the heap grows into: the device's checks then
         * stay as they are when it grows, and no module needs writing again. */
        .heap_size = ushmemi_g.heap_reserve,
        .device_flags_offset = offsetof(struct ushmemi_reserved, device_flags),
        .device_flags_count = USHMEMI_SYNC_WORDS,
        .peers = dev_api.peers,
        .ring = ushmemi_g.proxy != NULL ? ushmemi_proxy_ring(ushmemi_g.proxy) : NULL,
        .device_epoch_offset = offsetof(struct ushmemi_reserved, device_epoch),
        .ring_done_offset = ushmemi_g.proxy != NULL && dev_api.done_copy != NULL
                                ? (uint32_t)offsetof(struct ushmemi_reserved, ring_done)
                                : 0,
        .ring_tail = ushmemi_g.proxy != NULL ? (uint64_t)(uintptr_t)dev_api.ring_tail : 0,
        .ring_values = ushmemi_g.proxy != NULL ? (uint64_t)(uintptr_t)dev_api.ring_values : 0,
        .values_watched = ushmemi_g.proxy != NULL && dev_api.ring_values != NULL &&
                          ushmemi_g.dev_ops->copy_writes_words_whole,
        .teams_offset = (uint64_t)((char *)dev_api.teams - ushmemi_g.heap_base),
        .team_sync_offset = (uint64_t)((char *)dev_api.peers + sync_at - ushmemi_g.heap_base),
        .fault = (uint64_t)(uintptr_t)dev_api.fault,
    };
    memcpy(ushmem_device_state.near, peers,
           (size_t)(ushmemi_g.n_pes < USHMEM_DEVICE_NEAR_PES ? ushmemi_g.n_pes
                                                             : USHMEM_DEVICE_NEAR_PES) *
               sizeof(*peers));
    fill_window(peers, force_proxy, &ushmem_device_state);
    status = fill_modules();
    if (status != USHMEM_OK)
        goto stop_proxy;
    free(peers);
    return USHMEM_OK;

stop_proxy:
    memset(&ushmem_device_state, 0, sizeof(ushmem_device_state));
    fault_close();
    ushmemi_proxy_stop(ushmemi_g.proxy);
    ushmemi_g.proxy = NULL;
free_ipc:
    dev_api.done_copy = NULL;
    dev_api.ring_tail = dev_api.ring_values = NULL;
    ushmemi_ipc_transport_destroy(dev_api.ipc);
    dev_api.ipc = NULL;
    ushmemi_ipc_transport_destroy(dev_api.ipc_ce);
    dev_api.ipc_ce = NULL;
free_table:
    if (dev_api.peers != NULL)
        ushmemi_heap_free(dev_api.peers);
    dev_api.peers = NULL;
    dev_api.teams = NULL;
    free(peers);
    return status;
}

void ushmemi_device_api_quiet(void)
{
    if (ushmemi_g.proxy == NULL)
        return;
    struct ushmem_ring_header *ring = ushmemi_proxy_ring(ushmemi_g.proxy);
    /* The ring's own completed counter passes each ticket once the proxy
     * has done it (ring.h). */
    struct ushmem_ring_producer all = {ushmemi_proxy_issued(ushmemi_g.proxy), 0};
    ushmem_ring_quiet_on(ring, NULL, &all);
}

void ushmemi_device_api_heap_grown(size_t heap_size)
{
    ushmemi_ipc_transport_set_heap_size(dev_api.ipc, heap_size);
    ushmemi_ipc_transport_set_heap_size(dev_api.ipc_ce, heap_size);
}

void ushmemi_device_api_fini(void)
{
    /* First, so that a kernel that ended for a caller's error is told
     * before whatever else fails after it. */
    ushmemi_device_api_fault_report();
    /* The proxy executes what was submitted before it stops, so it goes
     * before the transports it uses. */
    ushmemi_proxy_stop(ushmemi_g.proxy);
    ushmemi_g.proxy = NULL;
    dev_api.done_copy = NULL;
    dev_api.ring_tail = dev_api.ring_values = NULL;
    ushmemi_ipc_transport_destroy(dev_api.ipc);
    dev_api.ipc = NULL;
    ushmemi_ipc_transport_destroy(dev_api.ipc_ce);
    dev_api.ipc_ce = NULL;
    /* Modules keep their copy: device code must not run after finalize. */
    pthread_mutex_lock(&modules.lock);
    modules.filled = false;
    pthread_mutex_unlock(&modules.lock);
    memset(&ushmem_device_state, 0, sizeof(ushmem_device_state));
    fault_close();
    if (dev_api.peers != NULL && ushmemi_g.heap_base != NULL)
        ushmemi_heap_free(dev_api.peers);
    dev_api.peers = NULL;
    dev_api.teams = NULL;
}

void ushmemi_device_api_team_set(const char *call, int id, const struct ushmemi_team *team)
{
    if (dev_api.teams == NULL || id < 0 || id >= USHMEM_DEVICE_TEAMS)
        return;
    struct ushmem_device_team entry = {0};
    if (team != NULL)
        entry = (struct ushmem_device_team){
            .start = team->start,
            .stride = team->stride,
            .size = team->size,
            .my_index = ushmemi_team_index_of(team, ushmemi_g.my_pe),
        };
    ushmemi_host_copy(call, &dev_api.teams[id], &entry, sizeof(entry));
}

static void *native_handle(const char *what)
{
    if (!ushmemi_g.initialized || ushmemi_g.dev_ops->native_handle == NULL)
        return NULL;
    return ushmemi_g.dev_ops->native_handle(ushmemi_g.dev, what);
}

USHMEMI_API void *shmemx_ze_context(void)
{
    return strcmp(ushmemi_g.dev_ops != NULL ? ushmemi_g.dev_ops->name : "", "ze") == 0
               ? native_handle("context")
               : NULL;
}

USHMEMI_API void *shmemx_ze_device(void)
{
    return strcmp(ushmemi_g.dev_ops != NULL ? ushmemi_g.dev_ops->name : "", "ze") == 0
               ? native_handle("device")
               : NULL;
}

/* The device API's ushmem_ptr, asked from the host: dest (a symmetric heap
 * address) as this PE's device code reaches it on pe, for kernels' own
 * loads and stores; NULL where device code does not reach pe directly. */
USHMEMI_API void *shmemx_ptr_device(const void *dest, int pe)
{
    ushmemi_check_init("shmemx_ptr_device");
    if (pe < 0 || pe >= ushmemi_g.n_pes || !ushmemi_in_user_heap(dest, 1) ||
        ushmem_device_state.force_proxy)
        return NULL;
    const struct ushmem_device_peer *p =
        pe < USHMEM_DEVICE_NEAR_PES ? &ushmem_device_state.near[pe] : NULL;
    const struct ushmemi_peer *peer = &ushmemi_g.peers[pe];
    if (peer->base == NULL || (p != NULL && !p->direct[USHMEM_DEVICE_CLASS_RMA]) ||
        (peer->route[USHMEMI_CLASS_RMA] != USHMEMI_ROUTE_DIRECT &&
         peer->route[USHMEMI_CLASS_RMA] != USHMEMI_ROUTE_SELF))
        return NULL;
    return (char *)peer->base + ((const char *)dest - ushmemi_g.heap_base);
}

USHMEMI_API int shmemx_cuda_device(void)
{
    const int *ordinal = strcmp(ushmemi_g.dev_ops != NULL ? ushmemi_g.dev_ops->name : "", "cuda") == 0
                             ? native_handle("ordinal")
                             : NULL;
    return ordinal != NULL ? *ordinal : -1;
}

/* Writes the device state into a module of device code the program loaded
 * itself, for the backend named `backend`. */
static int module_init(const char *call, const char *backend, const char *kind, void *module)
{
    ushmemi_check_init(call);
    if (strcmp(ushmemi_g.dev_ops->name, backend) != 0 || ushmemi_g.dev_ops->module_global == NULL) {
        ushmemi_error("%s: PE %d runs the %s backend, not %s: there is no %s module to "
                      "initialise", call, ushmemi_g.my_pe, ushmemi_g.dev_ops->name, backend, kind);
        return 1;
    }
    if (module == NULL) {
        ushmemi_error("%s: PE %d: module is NULL", call, ushmemi_g.my_pe);
        return 1;
    }
    ushmem_status_t status = ushmemi_g.dev_ops->module_global(
        ushmemi_g.dev, module, "ushmem_device_state", &ushmem_device_state,
        sizeof(ushmem_device_state));
    if (status != USHMEM_OK) {
        ushmemi_error("%s: PE %d cannot write the device state into module %p (its code must "
                      "include <ushmem/device.h>): %s", call, ushmemi_g.my_pe, module,
                      ushmemi_status_string(status));
        return 1;
    }
    return 0;
}

USHMEMI_API int shmemx_ze_module_init(void *module)
{
    return module_init("shmemx_ze_module_init", "ze", "Level Zero", module);
}

USHMEMI_API int shmemx_cuda_module_init(void *module)
{
    return module_init("shmemx_cuda_module_init", "cuda", "CUDA", module);
}
