/* The ze backend: the symmetric heap in Level Zero device memory
 * (zeMemAllocDevice), host memory from zeMemAllocHost (never shared
 * allocations), IPC through zeMemGetIpcHandle / zeMemOpenIpcHandle with the
 * fd carried in the handle's first four bytes, copies on a copy-engine
 * ordinal through one immediate command list, pointer queries through
 * zeMemGetAllocProperties, and the peer probe from zeDeviceGetP2PProperties,
 * zeDeviceCanAccessPeer, the fabric edges where the driver has them, and the
 * PCI address that feeds the PCIe AtomicOps probe (Intel's driver reports P2P
 * atomics without looking at AtomicOps on the path, so routes.c checks it).
 *
 * This is the only file that includes level_zero/. The loader is opened at
 * run time, as libcuda is by the cuda backend, so that every program starts
 * where libze1 is missing; entry points newer than API 1.4 (Debian 12's
 * loader) are looked up and their absence handled. Every ze_result_t is
 * translated here, its name logged once. */
#include <level_zero/loader/ze_loader.h>
#include <level_zero/ze_api.h>

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "../common/log.h"
#include "../common/vars.h"
#include "device.h"
#include "node_id.h"

#include <ushmem/detail/ring.h>

/* Entry points of API 1.4 that the backend needs: a loader without one of
 * them cannot run it. */
#define ZE_REQUIRED(X)                                                                   \
    X(zeInit)                                                                            \
    X(zeDriverGet)                                                                       \
    X(zeDriverGetApiVersion)                                                             \
    X(zeDriverGetProperties)                                                             \
    X(zeDeviceGet)                                                                       \
    X(zeDeviceGetProperties)                                                             \
    X(zeDeviceGetCommandQueueGroupProperties)                                            \
    X(zeDeviceGetP2PProperties)                                                          \
    X(zeDeviceCanAccessPeer)                                                             \
    X(zeContextCreate)                                                                   \
    X(zeContextDestroy)                                                                  \
    X(zeMemAllocDevice)                                                                  \
    X(zeMemAllocHost)                                                                    \
    X(zeMemFree)                                                                         \
    X(zeMemGetAllocProperties)                                                           \
    X(zeMemGetIpcHandle)                                                                 \
    X(zeMemOpenIpcHandle)                                                                \
    X(zeMemCloseIpcHandle)                                                               \
    X(zeCommandListCreateImmediate)                                                      \
    X(zeCommandListDestroy)                                                              \
    X(zeCommandListAppendMemoryCopy)                                                     \
    X(zeCommandListAppendMemoryFill)                                                     \
    X(zeCommandListAppendSignalEvent)                                                    \
    X(zeEventPoolCreate)                                                                 \
    X(zeEventPoolDestroy)                                                                \
    X(zeEventCreate)                                                                     \
    X(zeEventDestroy)                                                                    \
    X(zeEventHostSynchronize)                                                            \
    X(zeEventHostReset)                                                                  \
    X(zeModuleGetGlobalPointer)                                                          \
    X(zeModuleCreate)                                                                    \
    X(zeModuleDestroy)                                                                   \
    X(zeKernelCreate)                                                                    \
    X(zeKernelDestroy)                                                                   \
    X(zeKernelSetGroupSize)                                                              \
    X(zeKernelSetArgumentValue)                                                          \
    X(zeCommandListAppendLaunchKernel)                                                   \
    X(zeDeviceGetModuleProperties)

/* Looked up, and done without when absent. */
#define ZE_OPTIONAL(X)                                                                   \
    X(zeDevicePciGetPropertiesExt)                                                       \
    X(zeDeviceGetFabricVertexExp)                                                        \
    X(zeFabricEdgeGetExp)                                                                \
    X(zeFabricEdgeGetPropertiesExp)                                                      \
    X(zelLoaderGetVersions)

#define ZE_FIELD(name) __typeof__(name) *name;
static struct {
    ZE_REQUIRED(ZE_FIELD)
    ZE_OPTIONAL(ZE_FIELD)
} ze;
#undef ZE_FIELD

#define ZE_ENTRY(name) {#name, offsetof(__typeof__(ze), name)},
static const struct {
    const char *symbol;
    size_t offset;
} ze_required[] = {ZE_REQUIRED(ZE_ENTRY)}, ze_optional[] = {ZE_OPTIONAL(ZE_ENTRY)};
#undef ZE_ENTRY

/* The loader and its zeInit, once per process. */
static struct {
    pthread_once_t once;
    ushmem_status_t status;
    char why[320];
    char version[32]; /* the loader's, "1.8.12"; "" when it does not say */
} loader = {.once = PTHREAD_ONCE_INIT, .status = USHMEM_ERR_NO_DEVICE};

struct ushmemi_device {
    ze_driver_handle_t driver;
    ze_context_handle_t ctx;
    ze_device_handle_t handle;
    ze_device_handle_t *devices; /* the driver's GPUs visible here */
    uint32_t ndevices;
    int ordinal; /* of handle among devices */
    ze_device_properties_t props;
    struct ushmemi_device_id id;
    uint32_t copy_ordinal; /* command queue group of the immediate list */
    bool copy_engine;      /* that group is a copy engine (no compute) */
    /* Appends and waits from the main and proxy threads go one at a time. */
    pthread_mutex_t lock;
    ze_command_list_handle_t list;
    ze_event_pool_handle_t pool;
    ze_event_handle_t done; /* signalled at the end of the list by sync */
    /* The backend's own kernels (the proxy's atomic), loaded by the first
     * atomic, on a compute list of their own. */
    bool kernels_tried;
    ze_module_handle_t module;
    ze_kernel_handle_t amo;
    ze_command_list_handle_t compute;
    uint64_t *amo_old; /* host memory: where the kernel leaves the old value */
};

static const char *result_name(ze_result_t r)
{
    switch (r) {
#define NAME(x) \
    case x: return #x;
        NAME(ZE_RESULT_SUCCESS)
        NAME(ZE_RESULT_NOT_READY)
        NAME(ZE_RESULT_ERROR_DEVICE_LOST)
        NAME(ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY)
        NAME(ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY)
        NAME(ZE_RESULT_ERROR_MODULE_BUILD_FAILURE)
        NAME(ZE_RESULT_ERROR_MODULE_LINK_FAILURE)
        NAME(ZE_RESULT_ERROR_DEVICE_REQUIRES_RESET)
        NAME(ZE_RESULT_ERROR_DEVICE_IN_LOW_POWER_STATE)
        NAME(ZE_RESULT_ERROR_INSUFFICIENT_PERMISSIONS)
        NAME(ZE_RESULT_ERROR_NOT_AVAILABLE)
        NAME(ZE_RESULT_ERROR_DEPENDENCY_UNAVAILABLE)
        NAME(ZE_RESULT_ERROR_UNINITIALIZED)
        NAME(ZE_RESULT_ERROR_UNSUPPORTED_VERSION)
        NAME(ZE_RESULT_ERROR_UNSUPPORTED_FEATURE)
        NAME(ZE_RESULT_ERROR_INVALID_ARGUMENT)
        NAME(ZE_RESULT_ERROR_INVALID_NULL_HANDLE)
        NAME(ZE_RESULT_ERROR_HANDLE_OBJECT_IN_USE)
        NAME(ZE_RESULT_ERROR_INVALID_NULL_POINTER)
        NAME(ZE_RESULT_ERROR_INVALID_SIZE)
        NAME(ZE_RESULT_ERROR_UNSUPPORTED_SIZE)
        NAME(ZE_RESULT_ERROR_UNSUPPORTED_ALIGNMENT)
        NAME(ZE_RESULT_ERROR_INVALID_SYNCHRONIZATION_OBJECT)
        NAME(ZE_RESULT_ERROR_INVALID_ENUMERATION)
        NAME(ZE_RESULT_ERROR_UNSUPPORTED_ENUMERATION)
        NAME(ZE_RESULT_ERROR_UNSUPPORTED_IMAGE_FORMAT)
        NAME(ZE_RESULT_ERROR_INVALID_NATIVE_BINARY)
        NAME(ZE_RESULT_ERROR_INVALID_GLOBAL_NAME)
        NAME(ZE_RESULT_ERROR_INVALID_KERNEL_NAME)
        NAME(ZE_RESULT_ERROR_INVALID_FUNCTION_NAME)
        NAME(ZE_RESULT_ERROR_OVERLAPPING_REGIONS)
        NAME(ZE_RESULT_ERROR_UNKNOWN)
#undef NAME
    default:
        return "an unnamed ze_result_t";
    }
}

/* The one translation of ze_result_t to ushmem_status_t. */
static ushmem_status_t result_status(ze_result_t r)
{
    switch (r) {
    case ZE_RESULT_SUCCESS: return USHMEM_OK;
    case ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY:
    case ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY: return USHMEM_ERR_NO_MEMORY;
    case ZE_RESULT_ERROR_UNINITIALIZED:
    case ZE_RESULT_ERROR_DEVICE_LOST: return USHMEM_ERR_NO_DEVICE;
    case ZE_RESULT_ERROR_UNSUPPORTED_FEATURE:
    case ZE_RESULT_ERROR_UNSUPPORTED_VERSION:
    case ZE_RESULT_ERROR_UNSUPPORTED_SIZE:
    case ZE_RESULT_ERROR_UNSUPPORTED_ALIGNMENT:
    case ZE_RESULT_ERROR_UNSUPPORTED_ENUMERATION: return USHMEM_ERR_UNSUPPORTED;
    case ZE_RESULT_ERROR_INVALID_ARGUMENT:
    case ZE_RESULT_ERROR_INVALID_NULL_HANDLE:
    case ZE_RESULT_ERROR_INVALID_NULL_POINTER:
    case ZE_RESULT_ERROR_INVALID_SIZE:
    case ZE_RESULT_ERROR_INVALID_ENUMERATION: return USHMEM_ERR_INVALID_PARAM;
    case ZE_RESULT_ERROR_INSUFFICIENT_PERMISSIONS: return USHMEM_ERR_PERMISSION;
    default: return USHMEM_ERR_DEVICE;
    }
}

/* Logs a failed call once, with the values it was given; returns the status. */
static ushmem_status_t fail(const char *call, ze_result_t r, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static ushmem_status_t fail(const char *call, ze_result_t r, const char *fmt, ...)
{
    char values[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(values, sizeof(values), fmt, ap);
    va_end(ap);
    ushmemi_error("ze backend: %s(%s) failed: %s (0x%x)", call, values, result_name(r),
                  (unsigned)r);
    return result_status(r);
}

static void load_loader(void)
{
    void *lib = dlopen("libze_loader.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL) {
        const char *err = dlerror();
        snprintf(loader.why, sizeof(loader.why), "libze_loader.so.1 cannot be loaded (%s): no "
                 "Level Zero loader here (Debian: libze1)", err != NULL ? err : "no reason");
        return;
    }
    for (size_t i = 0; i < sizeof(ze_required) / sizeof(ze_required[0]); i++) {
        void *sym = dlsym(lib, ze_required[i].symbol);
        if (sym == NULL) {
            snprintf(loader.why, sizeof(loader.why), "libze_loader.so.1 has no %s: the loader "
                     "is older than Level Zero API 1.4, which the ze backend needs",
                     ze_required[i].symbol);
            ushmemi_error("ze backend: %s", loader.why);
            memset(&ze, 0, sizeof(ze));
            loader.status = USHMEM_ERR_UNSUPPORTED;
            dlclose(lib);
            return;
        }
        memcpy((char *)&ze + ze_required[i].offset, &sym, sizeof(sym));
    }
    for (size_t i = 0; i < sizeof(ze_optional) / sizeof(ze_optional[0]); i++) {
        void *sym = dlsym(lib, ze_optional[i].symbol);
        if (sym == NULL)
            ushmemi_debug("ze backend: the loader has no %s; done without",
                          ze_optional[i].symbol);
        memcpy((char *)&ze + ze_optional[i].offset, &sym, sizeof(sym));
    }
    ze_result_t r = ze.zeInit(ZE_INIT_FLAG_GPU_ONLY);
    if (r != ZE_RESULT_SUCCESS) {
        snprintf(loader.why, sizeof(loader.why), "zeInit(ZE_INIT_FLAG_GPU_ONLY) answered %s: no "
                 "Level Zero GPU driver here", result_name(r));
        return; /* the library stays loaded: harmless, and unloading it is not */
    }
    /* The loader knows its components only after zeInit. */
    if (ze.zelLoaderGetVersions != NULL) {
        size_t n = 0;
        if (ze.zelLoaderGetVersions(&n, NULL) == ZE_RESULT_SUCCESS && n > 0 && n < 16) {
            zel_component_version_t versions[16];
            if (ze.zelLoaderGetVersions(&n, versions) == ZE_RESULT_SUCCESS) {
                for (size_t i = 0; i < n; i++)
                    if (strcmp(versions[i].component_name, "loader") == 0)
                        snprintf(loader.version, sizeof(loader.version), "%d.%d.%d",
                                 versions[i].component_lib_version.major,
                                 versions[i].component_lib_version.minor,
                                 versions[i].component_lib_version.patch);
            }
        }
    }
    loader.status = USHMEM_OK;
}

static ushmem_status_t ensure_loader(void)
{
    pthread_once(&loader.once, load_loader);
    if (loader.status != USHMEM_OK)
        ushmemi_debug("ze backend: %s", loader.why);
    return loader.status;
}

/* The first driver with a GPU, and its GPUs (ZE_AFFINITY_MASK is the
 * driver's business: what it lists is what this process may use). */
static ushmem_status_t find_devices(struct ushmemi_device *dev)
{
    uint32_t ndrivers = 0;
    ze_result_t r = ze.zeDriverGet(&ndrivers, NULL);
    if (r != ZE_RESULT_SUCCESS)
        return fail("zeDriverGet", r, "count");
    if (ndrivers == 0)
        return USHMEM_ERR_NO_DEVICE;
    ze_driver_handle_t drivers[16];
    if (ndrivers > 16)
        ndrivers = 16;
    if ((r = ze.zeDriverGet(&ndrivers, drivers)) != ZE_RESULT_SUCCESS)
        return fail("zeDriverGet", r, "%u drivers", ndrivers);
    for (uint32_t d = 0; d < ndrivers; d++) {
        uint32_t n = 0;
        if (ze.zeDeviceGet(drivers[d], &n, NULL) != ZE_RESULT_SUCCESS || n == 0)
            continue;
        ze_device_handle_t *all = calloc(n, sizeof(*all));
        if (all == NULL)
            return USHMEM_ERR_NO_MEMORY;
        if ((r = ze.zeDeviceGet(drivers[d], &n, all)) != ZE_RESULT_SUCCESS) {
            free(all);
            return fail("zeDeviceGet", r, "driver %u, %u devices", d, n);
        }
        uint32_t gpus = 0;
        for (uint32_t i = 0; i < n; i++) {
            ze_device_properties_t p = {.stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES};
            if (ze.zeDeviceGetProperties(all[i], &p) == ZE_RESULT_SUCCESS &&
                p.type == ZE_DEVICE_TYPE_GPU)
                all[gpus++] = all[i];
        }
        if (gpus == 0) {
            free(all);
            continue;
        }
        dev->driver = drivers[d];
        dev->devices = all;
        dev->ndevices = gpus;
        return USHMEM_OK;
    }
    return USHMEM_ERR_NO_DEVICE;
}

/* A copy engine (a group that copies and does not compute) when the device
 * has one, else the first group that copies. */
static ushmem_status_t pick_copy_ordinal(struct ushmemi_device *dev)
{
    uint32_t n = 0;
    ze_result_t r = ze.zeDeviceGetCommandQueueGroupProperties(dev->handle, &n, NULL);
    if (r != ZE_RESULT_SUCCESS || n == 0)
        return fail("zeDeviceGetCommandQueueGroupProperties", r, "device %d: %u groups",
                    dev->ordinal, n);
    ze_command_queue_group_properties_t *groups = calloc(n, sizeof(*groups));
    if (groups == NULL)
        return USHMEM_ERR_NO_MEMORY;
    for (uint32_t i = 0; i < n; i++)
        groups[i].stype = ZE_STRUCTURE_TYPE_COMMAND_QUEUE_GROUP_PROPERTIES;
    if ((r = ze.zeDeviceGetCommandQueueGroupProperties(dev->handle, &n, groups)) !=
        ZE_RESULT_SUCCESS) {
        free(groups);
        return fail("zeDeviceGetCommandQueueGroupProperties", r, "device %d", dev->ordinal);
    }
    int any = -1, engine = -1;
    for (uint32_t i = 0; i < n; i++) {
        bool copies = groups[i].flags & ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COPY;
        bool computes = groups[i].flags & ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COMPUTE;
        if (copies && any < 0)
            any = (int)i;
        if (copies && !computes && engine < 0)
            engine = (int)i;
    }
    free(groups);
    if (any < 0) {
        ushmemi_error("ze backend: device %d has no command queue group that copies",
                      dev->ordinal);
        return USHMEM_ERR_UNSUPPORTED;
    }
    dev->copy_engine = engine >= 0;
    dev->copy_ordinal = (uint32_t)(engine >= 0 ? engine : any);
    return USHMEM_OK;
}

static void bdf_of(ze_device_handle_t h, char *buf, size_t len)
{
    buf[0] = '\0';
    if (ze.zeDevicePciGetPropertiesExt == NULL)
        return;
    ze_pci_ext_properties_t pci = {.stype = ZE_STRUCTURE_TYPE_PCI_EXT_PROPERTIES};
    if (ze.zeDevicePciGetPropertiesExt(h, &pci) != ZE_RESULT_SUCCESS)
        return;
    snprintf(buf, len, "%04x:%02x:%02x.%x", pci.address.domain, pci.address.bus,
             pci.address.device, pci.address.function);
}

static void ze_close(struct ushmemi_device *dev)
{
    if (dev == NULL)
        return;
    if (dev->amo != NULL)
        ze.zeKernelDestroy(dev->amo);
    if (dev->module != NULL)
        ze.zeModuleDestroy(dev->module);
    if (dev->compute != NULL)
        ze.zeCommandListDestroy(dev->compute);
    if (dev->amo_old != NULL)
        ze.zeMemFree(dev->ctx, dev->amo_old);
    if (dev->done != NULL)
        ze.zeEventDestroy(dev->done);
    if (dev->pool != NULL)
        ze.zeEventPoolDestroy(dev->pool);
    if (dev->list != NULL)
        ze.zeCommandListDestroy(dev->list);
    if (dev->ctx != NULL)
        ze.zeContextDestroy(dev->ctx);
    pthread_mutex_destroy(&dev->lock);
    free(dev->devices);
    free(dev);
}

static ushmem_status_t ze_open(int local_rank, int local_size, struct ushmemi_device **dev_p)
{
    ushmem_status_t status = ensure_loader();
    if (status != USHMEM_OK)
        return status;
    struct ushmemi_device *dev = calloc(1, sizeof(*dev));
    if (dev == NULL)
        return USHMEM_ERR_NO_MEMORY;
    pthread_mutex_init(&dev->lock, NULL);
    if ((status = find_devices(dev)) != USHMEM_OK) {
        ze_close(dev);
        return status;
    }
    /* One device per local rank, round robin: more ranks than devices
     * share them. */
    dev->ordinal = local_rank % (int)dev->ndevices;
    dev->handle = dev->devices[dev->ordinal];
    if (local_size > (int)dev->ndevices)
        ushmemi_debug("ze backend: %d local ranks share %u devices", local_size, dev->ndevices);
    dev->props = (ze_device_properties_t){.stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES};
    ze_result_t r = ze.zeDeviceGetProperties(dev->handle, &dev->props);
    if (r != ZE_RESULT_SUCCESS) {
        status = fail("zeDeviceGetProperties", r, "device %d", dev->ordinal);
        goto out;
    }
    snprintf(dev->id.backend, sizeof(dev->id.backend), "ze");
    _Static_assert(sizeof(dev->id.uuid) == sizeof(dev->props.uuid.id), "UUID sizes");
    memcpy(dev->id.uuid, dev->props.uuid.id, sizeof(dev->id.uuid));
    bdf_of(dev->handle, dev->id.pci_bdf, sizeof(dev->id.pci_bdf));
    dev->id.node_hash = ushmemi_node_hash();

    ze_context_desc_t cdesc = {.stype = ZE_STRUCTURE_TYPE_CONTEXT_DESC};
    if ((r = ze.zeContextCreate(dev->driver, &cdesc, &dev->ctx)) != ZE_RESULT_SUCCESS) {
        dev->ctx = NULL;
        status = fail("zeContextCreate", r, "device %d", dev->ordinal);
        goto out;
    }
    if ((status = pick_copy_ordinal(dev)) != USHMEM_OK)
        goto out;
    ze_command_queue_desc_t qdesc = {
        .stype = ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC,
        .ordinal = dev->copy_ordinal,
        .mode = ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS,
        .priority = ZE_COMMAND_QUEUE_PRIORITY_NORMAL,
    };
    r = ze.zeCommandListCreateImmediate(dev->ctx, dev->handle, &qdesc, &dev->list);
    if (r != ZE_RESULT_SUCCESS) {
        dev->list = NULL;
        status = fail("zeCommandListCreateImmediate", r, "device %d, ordinal %u", dev->ordinal,
                      dev->copy_ordinal);
        goto out;
    }
    ze_event_pool_desc_t pdesc = {.stype = ZE_STRUCTURE_TYPE_EVENT_POOL_DESC,
                                  .flags = ZE_EVENT_POOL_FLAG_HOST_VISIBLE,
                                  .count = 1};
    if ((r = ze.zeEventPoolCreate(dev->ctx, &pdesc, 1, &dev->handle, &dev->pool)) !=
        ZE_RESULT_SUCCESS) {
        dev->pool = NULL;
        status = fail("zeEventPoolCreate", r, "one host-visible event");
        goto out;
    }
    ze_event_desc_t edesc = {.stype = ZE_STRUCTURE_TYPE_EVENT_DESC,
                             .index = 0,
                             .signal = ZE_EVENT_SCOPE_FLAG_HOST,
                             .wait = ZE_EVENT_SCOPE_FLAG_HOST};
    if ((r = ze.zeEventCreate(dev->pool, &edesc, &dev->done)) != ZE_RESULT_SUCCESS) {
        dev->done = NULL;
        status = fail("zeEventCreate", r, "index 0");
        goto out;
    }
    ushmemi_debug("ze backend: local rank %d on device %d of %u (%s, %s), copies on ordinal "
                  "%u%s", local_rank, dev->ordinal, dev->ndevices, dev->props.name,
                  dev->id.pci_bdf[0] ? dev->id.pci_bdf : "no PCI address", dev->copy_ordinal,
                  dev->copy_engine ? " (a copy engine)" : "");
    *dev_p = dev;
    return USHMEM_OK;
out:
    ze_close(dev);
    return status;
}

static ushmem_status_t ze_identity(struct ushmemi_device *dev, struct ushmemi_device_id *id_p)
{
    *id_p = dev->id;
    return USHMEM_OK;
}

static ushmem_status_t ze_heap_alloc(struct ushmemi_device *dev, size_t size, void **ptr_p)
{
    ze_device_mem_alloc_desc_t desc = {.stype = ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC};
    size_t align = ushmemi_heap_alignment_for(size);
    ze_result_t r = ze.zeMemAllocDevice(dev->ctx, &desc, size, align, dev->handle, ptr_p);
    if (r != ZE_RESULT_SUCCESS)
        return fail("zeMemAllocDevice", r, "%zu bytes aligned to %zu, device %d", size, align,
                    dev->ordinal);
    return USHMEM_OK;
}

static void ze_free_mem(struct ushmemi_device *dev, void *ptr, const char *what)
{
    ze_result_t r = ze.zeMemFree(dev->ctx, ptr);
    if (r != ZE_RESULT_SUCCESS)
        fail("zeMemFree", r, "%s %p", what, ptr);
}

static void ze_heap_free(struct ushmemi_device *dev, void *ptr, size_t size)
{
    (void)size;
    ze_free_mem(dev, ptr, "heap");
}

static ushmem_status_t ze_host_alloc(struct ushmemi_device *dev, size_t size, void **ptr_p)
{
    ze_host_mem_alloc_desc_t desc = {.stype = ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC};
    ze_result_t r = ze.zeMemAllocHost(dev->ctx, &desc, size, 64, ptr_p);
    if (r != ZE_RESULT_SUCCESS)
        return fail("zeMemAllocHost", r, "%zu bytes", size);
    return USHMEM_OK;
}

static void ze_host_free(struct ushmemi_device *dev, void *ptr, size_t size)
{
    (void)size;
    ze_free_mem(dev, ptr, "host memory");
}

_Static_assert(sizeof(((struct ushmemi_ipc_handle *)0)->data) == ZE_MAX_IPC_HANDLE_SIZE,
               "an IPC handle's metadata holds a whole ze_ipc_mem_handle_t");

static ushmem_status_t ze_export(struct ushmemi_device *dev, void *ptr, size_t size,
                                 struct ushmemi_ipc_handle *handle_p)
{
    ze_ipc_mem_handle_t h;
    memset(&h, 0, sizeof(h));
    ze_result_t r = ze.zeMemGetIpcHandle(dev->ctx, ptr, &h);
    if (r != ZE_RESULT_SUCCESS)
        return fail("zeMemGetIpcHandle", r, "%p, %zu bytes", ptr, size);
    /* The driver keeps the fd until the memory is freed. */
    int fd;
    memcpy(&fd, h.data, sizeof(fd));
    if (fd < 0) {
        ushmemi_error("ze backend: zeMemGetIpcHandle(%p) gave a handle without an fd (%d)", ptr,
                      fd);
        return USHMEM_ERR_UNSUPPORTED;
    }
    handle_p->fd = fd;
    handle_p->size = size;
    memcpy(handle_p->data, h.data, sizeof(handle_p->data));
    return USHMEM_OK;
}

/* The importer's handle: the exporter's bytes with this process's fd in
 * the first four, where Intel's driver keeps its dma-buf fd. */
static ushmem_status_t ze_import(struct ushmemi_device *dev, const struct ushmemi_ipc_handle *handle,
                                 int fd, void **ptr_p)
{
    ze_ipc_mem_handle_t h;
    memcpy(h.data, handle->data, sizeof(h.data));
    memcpy(h.data, &fd, sizeof(fd));
    ze_result_t r = ze.zeMemOpenIpcHandle(dev->ctx, dev->handle, h, 0, ptr_p);
    close(fd); /* the driver holds what it needs */
    if (r != ZE_RESULT_SUCCESS)
        return fail("zeMemOpenIpcHandle", r, "fd %d, %llu bytes, device %d", fd,
                    (unsigned long long)handle->size, dev->ordinal);
    return USHMEM_OK;
}

static ushmem_status_t ze_close_import(struct ushmemi_device *dev, void *ptr, size_t size)
{
    ze_result_t r = ze.zeMemCloseIpcHandle(dev->ctx, ptr);
    if (r != ZE_RESULT_SUCCESS)
        return fail("zeMemCloseIpcHandle", r, "%p, %zu bytes", ptr, size);
    return USHMEM_OK;
}

/* A GPU reaches the program's data segment only through USM import, which
 * the backend does not do: globals stay host-only. */
static ushmem_status_t ze_share_static(struct ushmemi_device *dev, void *start, size_t len)
{
    (void)dev, (void)start, (void)len;
    return USHMEM_ERR_UNSUPPORTED;
}

static void ze_unshare_static(struct ushmemi_device *dev, void *start, size_t len)
{
    (void)dev, (void)start, (void)len;
}

static ushmem_status_t ze_copy(struct ushmemi_device *dev, void *dst, const void *src, size_t len)
{
    if (len == 0)
        return USHMEM_OK;
    pthread_mutex_lock(&dev->lock);
    ze_result_t r = ze.zeCommandListAppendMemoryCopy(dev->list, dst, src, len, NULL, 0, NULL);
    pthread_mutex_unlock(&dev->lock);
    if (r != ZE_RESULT_SUCCESS)
        return fail("zeCommandListAppendMemoryCopy", r, "dst %p, src %p, %zu bytes", dst, src,
                    len);
    return USHMEM_OK;
}

static ushmem_status_t ze_memset(struct ushmemi_device *dev, void *dst, int value, size_t len)
{
    if (len == 0)
        return USHMEM_OK;
    unsigned char byte = (unsigned char)value;
    pthread_mutex_lock(&dev->lock);
    ze_result_t r = ze.zeCommandListAppendMemoryFill(dev->list, dst, &byte, 1, len, NULL, 0,
                                                     NULL);
    pthread_mutex_unlock(&dev->lock);
    if (r != ZE_RESULT_SUCCESS)
        return fail("zeCommandListAppendMemoryFill", r, "%p, byte %u, %zu bytes", dst, byte, len);
    return USHMEM_OK;
}

/* API 1.4 has no zeCommandListHostSynchronize: an event at the end of the
 * list says when everything before it is done. */
static ushmem_status_t ze_sync(struct ushmemi_device *dev)
{
    pthread_mutex_lock(&dev->lock);
    ze_result_t r = ze.zeCommandListAppendSignalEvent(dev->list, dev->done);
    const char *call = "zeCommandListAppendSignalEvent";
    if (r == ZE_RESULT_SUCCESS) {
        call = "zeEventHostSynchronize";
        r = ze.zeEventHostSynchronize(dev->done, UINT64_MAX);
    }
    if (r == ZE_RESULT_SUCCESS) {
        call = "zeEventHostReset";
        r = ze.zeEventHostReset(dev->done);
    }
    pthread_mutex_unlock(&dev->lock);
    if (r != ZE_RESULT_SUCCESS)
        return fail(call, r, "the copy list of device %d", dev->ordinal);
    return USHMEM_OK;
}

/* The atomic kernel of a loaded module, and a compute list to run it on. */
static ushmem_status_t finish_kernels(struct ushmemi_device *dev, const char *from)
{
    ze_result_t r;
    ze_kernel_desc_t kdesc = {.stype = ZE_STRUCTURE_TYPE_KERNEL_DESC,
                              .pKernelName = "ushmemi_ze_amo"};
    if ((r = ze.zeKernelCreate(dev->module, &kdesc, &dev->amo)) != ZE_RESULT_SUCCESS) {
        dev->amo = NULL;
        return fail("zeKernelCreate", r, "ushmemi_ze_amo in %s", from);
    }
    if ((r = ze.zeKernelSetGroupSize(dev->amo, 1, 1, 1)) != ZE_RESULT_SUCCESS) {
        return fail("zeKernelSetGroupSize", r, "ushmemi_ze_amo, 1");
    }
    uint32_t ngroups = 0, compute = UINT32_MAX;
    ze.zeDeviceGetCommandQueueGroupProperties(dev->handle, &ngroups, NULL);
    ze_command_queue_group_properties_t groups[16];
    if (ngroups > 16)
        ngroups = 16;
    for (uint32_t i = 0; i < ngroups; i++)
        groups[i] = (ze_command_queue_group_properties_t){
            .stype = ZE_STRUCTURE_TYPE_COMMAND_QUEUE_GROUP_PROPERTIES};
    ze.zeDeviceGetCommandQueueGroupProperties(dev->handle, &ngroups, groups);
    for (uint32_t i = 0; i < ngroups && compute == UINT32_MAX; i++)
        if (groups[i].flags & ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COMPUTE)
            compute = i;
    if (compute == UINT32_MAX) {
        ushmemi_error("ze backend: device %d has no command queue group that computes",
                      dev->ordinal);
        return USHMEM_ERR_UNSUPPORTED;
    }
    ze_command_queue_desc_t qdesc = {.stype = ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC,
                                     .ordinal = compute,
                                     .mode = ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS};
    r = ze.zeCommandListCreateImmediate(dev->ctx, dev->handle, &qdesc, &dev->compute);
    if (r != ZE_RESULT_SUCCESS) {
        dev->compute = NULL;
        return fail("zeCommandListCreateImmediate", r, "compute ordinal %u", compute);
    }
    return ze_host_alloc(dev, sizeof(uint64_t), (void **)&dev->amo_old);
}

/* ze_kernels.cl as SPIR-V (ze_kernels_spv.c, generated at build time);
 * empty when the build had no clang-15 and llvm-spirv-15. */
extern const unsigned char ushmemi_ze_kernels_spv[];
extern const size_t ushmemi_ze_kernels_spv_size;

/* The SPIR-V carried in the library, when there is some and the driver
 * takes SPIR-V 1.3. Never loaded by a real driver yet (no Intel GPU was
 * reachable); the CPU test driver takes native modules only. */
static bool spirv_module(struct ushmemi_device *dev, ze_module_desc_t *desc)
{
    if (ushmemi_ze_kernels_spv_size == 0)
        return false;
    ze_device_module_properties_t props = {.stype = ZE_STRUCTURE_TYPE_DEVICE_MODULE_PROPERTIES};
    if (ze.zeDeviceGetModuleProperties(dev->handle, &props) != ZE_RESULT_SUCCESS ||
        props.spirvVersionSupported < ZE_MAKE_VERSION(1, 3))
        return false;
    *desc = (ze_module_desc_t){.stype = ZE_STRUCTURE_TYPE_MODULE_DESC,
                               .format = ZE_MODULE_FORMAT_IL_SPIRV,
                               .inputSize = ushmemi_ze_kernels_spv_size,
                               .pInputModule = ushmemi_ze_kernels_spv};
    return true;
}

/* The module of the backend's own kernels, in a format the driver takes:
 * the SPIR-V built in, or else a module in the driver's native format from
 * USHMEM_ZE_KERNELS (the CPU test driver's: test/unit/ze/ze_backend_kernels.c).
 * Each kernel takes its arguments as Level Zero passes them, whatever the
 * format. */
static ushmem_status_t load_kernels(struct ushmemi_device *dev)
{
    ze_module_desc_t spirv;
    if (spirv_module(dev, &spirv)) {
        ze_result_t r = ze.zeModuleCreate(dev->ctx, dev->handle, &spirv, &dev->module, NULL);
        if (r != ZE_RESULT_SUCCESS) {
            dev->module = NULL;
            return fail("zeModuleCreate", r, "the backend's SPIR-V kernels, %zu bytes",
                        ushmemi_ze_kernels_spv_size);
        }
        return finish_kernels(dev, "the built-in SPIR-V");
    }
    const char *path = ushmemi_settings.ze_kernels;
    if (path == NULL || path[0] == '\0') {
        ushmemi_debug("ze backend: no module of the backend's kernels (USHMEM_ZE_KERNELS is "
                      "empty, and %s)", ushmemi_ze_kernels_spv_size == 0
                                            ? "no SPIR-V is built in"
                                            : "the driver takes no SPIR-V 1.3");
        return USHMEM_ERR_UNSUPPORTED;
    }
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        ushmemi_error("ze backend: USHMEM_ZE_KERNELS=%s cannot be opened: %s", path,
                      strerror(errno));
        return USHMEM_ERR_INVALID_VALUE;
    }
    ushmem_status_t status = USHMEM_ERR_NO_MEMORY;
    unsigned char *bytes = NULL;
    long n = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    if (n > 0 && fseek(f, 0, SEEK_SET) == 0 && (bytes = malloc((size_t)n)) != NULL &&
        fread(bytes, 1, (size_t)n, f) != (size_t)n) {
        ushmemi_error("ze backend: USHMEM_ZE_KERNELS=%s: short read", path);
        status = USHMEM_ERR_IO;
        goto out;
    }
    if (bytes == NULL)
        goto out;
    ze_module_desc_t mdesc = {.stype = ZE_STRUCTURE_TYPE_MODULE_DESC,
                              .format = ZE_MODULE_FORMAT_NATIVE,
                              .inputSize = (size_t)n,
                              .pInputModule = bytes};
    ze_result_t r = ze.zeModuleCreate(dev->ctx, dev->handle, &mdesc, &dev->module, NULL);
    if (r != ZE_RESULT_SUCCESS) {
        dev->module = NULL;
        status = fail("zeModuleCreate", r, "native module %s (USHMEM_ZE_KERNELS), %ld bytes",
                      path, n);
        goto out;
    }
    status = finish_kernels(dev, path);
out:
    free(bytes);
    fclose(f);
    return status;
}

/* One atomic in a one-work-item kernel of the backend's own, after the
 * copies queued before it (the copy list is drained first). */
static ushmem_status_t ze_amo(struct ushmemi_device *dev, void *addr, unsigned op, size_t size,
                              uint64_t operand, uint64_t compare, uint64_t *old_p)
{
    if ((size != 4 && size != 8) || ((uintptr_t)addr & (size - 1)) != 0 ||
        op >= USHMEM_RING_AMO_OP_COUNT) {
        ushmemi_error("ze backend: atomic op %u of %zu bytes at %p refused", op, size, addr);
        return USHMEM_ERR_INVALID_PARAM;
    }
    ushmem_status_t status = ze_sync(dev);
    if (status != USHMEM_OK)
        return status;
    pthread_mutex_lock(&dev->lock);
    if (!dev->kernels_tried) {
        dev->kernels_tried = true;
        if ((status = load_kernels(dev)) != USHMEM_OK && dev->amo != NULL) {
            ze.zeKernelDestroy(dev->amo);
            dev->amo = NULL;
        }
    }
    if (dev->amo == NULL || dev->compute == NULL || dev->amo_old == NULL) {
        pthread_mutex_unlock(&dev->lock);
        return status != USHMEM_OK ? status : USHMEM_ERR_UNSUPPORTED;
    }
    uint32_t wide = size == 8;
    const void *old = dev->amo_old;
    const struct {
        size_t size;
        const void *value;
    } args[] = {{sizeof(addr), &addr},       {sizeof(operand), &operand},
                {sizeof(compare), &compare}, {sizeof(old), &old},
                {sizeof(op), &op},           {sizeof(wide), &wide}};
    ze_result_t r = ZE_RESULT_SUCCESS;
    const char *call = "zeKernelSetArgumentValue";
    for (uint32_t i = 0; i < sizeof(args) / sizeof(args[0]) && r == ZE_RESULT_SUCCESS; i++)
        r = ze.zeKernelSetArgumentValue(dev->amo, i, args[i].size, args[i].value);
    ze_group_count_t one = {1, 1, 1};
    if (r == ZE_RESULT_SUCCESS) {
        call = "zeCommandListAppendLaunchKernel";
        r = ze.zeCommandListAppendLaunchKernel(dev->compute, dev->amo, &one, dev->done, 0, NULL);
    }
    if (r == ZE_RESULT_SUCCESS) {
        call = "zeEventHostSynchronize";
        r = ze.zeEventHostSynchronize(dev->done, UINT64_MAX);
    }
    if (r == ZE_RESULT_SUCCESS) {
        call = "zeEventHostReset";
        r = ze.zeEventHostReset(dev->done);
    }
    if (r == ZE_RESULT_SUCCESS && old_p != NULL)
        *old_p = *(volatile uint64_t *)dev->amo_old;
    pthread_mutex_unlock(&dev->lock);
    if (r != ZE_RESULT_SUCCESS)
        return fail(call, r, "atomic op %u of %zu bytes at %p", op, size, addr);
    return USHMEM_OK;
}

static int ordinal_of(struct ushmemi_device *dev, ze_device_handle_t h)
{
    for (uint32_t i = 0; i < dev->ndevices; i++)
        if (dev->devices[i] == h)
            return (int)i;
    return -1;
}

static ushmem_status_t ze_pointer_query(struct ushmemi_device *dev, const void *ptr,
                                        struct ushmemi_ptr_attr *attr_p)
{
    ze_memory_allocation_properties_t props = {
        .stype = ZE_STRUCTURE_TYPE_MEMORY_ALLOCATION_PROPERTIES};
    ze_device_handle_t owner = NULL;
    ze_result_t r = ze.zeMemGetAllocProperties(dev->ctx, ptr, &props, &owner);
    if (r != ZE_RESULT_SUCCESS)
        return fail("zeMemGetAllocProperties", r, "%p", ptr);
    *attr_p = (struct ushmemi_ptr_attr){.kind = USHMEMI_MEM_UNKNOWN,
                                        .host_accessible = true,
                                        .device_ordinal = -1,
                                        .host_backed = true};
    switch (props.type) {
    case ZE_MEMORY_TYPE_DEVICE: {
        int ordinal = owner != NULL ? ordinal_of(dev, owner) : -1;
        attr_p->kind = USHMEMI_MEM_DEVICE;
        attr_p->host_accessible = false;
        attr_p->host_backed = false;
        attr_p->device_ordinal = ordinal >= 0 ? ordinal : dev->ordinal;
        break;
    }
    case ZE_MEMORY_TYPE_HOST:
        attr_p->kind = USHMEMI_MEM_HOST;
        break;
    case ZE_MEMORY_TYPE_SHARED:
        /* Migrating memory: ushmem never allocates it; the CPU may touch it. */
        attr_p->kind = USHMEMI_MEM_HOST;
        attr_p->host_backed = false;
        break;
    default:
        break;
    }
    return USHMEM_OK;
}

/* Xe Link when the driver's fabric topology shows an edge of that model
 * between the two devices; otherwise the pair is taken for PCIe, so that
 * routes.c checks AtomicOps on the path before trusting P2P atomics. */
static enum ushmemi_link_kind link_between(ze_device_handle_t a, ze_device_handle_t b)
{
    if (ze.zeDeviceGetFabricVertexExp == NULL || ze.zeFabricEdgeGetExp == NULL ||
        ze.zeFabricEdgeGetPropertiesExp == NULL)
        return USHMEMI_LINK_PCIE;
    ze_fabric_vertex_handle_t va, vb;
    if (ze.zeDeviceGetFabricVertexExp(a, &va) != ZE_RESULT_SUCCESS ||
        ze.zeDeviceGetFabricVertexExp(b, &vb) != ZE_RESULT_SUCCESS)
        return USHMEMI_LINK_PCIE;
    uint32_t n = 0;
    if (ze.zeFabricEdgeGetExp(va, vb, &n, NULL) != ZE_RESULT_SUCCESS || n == 0)
        return USHMEMI_LINK_PCIE;
    ze_fabric_edge_handle_t edges[8];
    if (n > 8)
        n = 8;
    if (ze.zeFabricEdgeGetExp(va, vb, &n, edges) != ZE_RESULT_SUCCESS)
        return USHMEMI_LINK_PCIE;
    for (uint32_t i = 0; i < n; i++) {
        ze_fabric_edge_exp_properties_t p = {.stype = ZE_STRUCTURE_TYPE_FABRIC_EDGE_EXP_PROPERTIES};
        if (ze.zeFabricEdgeGetPropertiesExp(edges[i], &p) == ZE_RESULT_SUCCESS &&
            strncasecmp(p.model, "XeLink", 6) == 0)
            return USHMEMI_LINK_XELINK;
    }
    return USHMEMI_LINK_PCIE;
}

static ushmem_status_t ze_p2p_probe(struct ushmemi_device *dev, const struct ushmemi_device_id *peer,
                                    struct ushmemi_p2p_caps *caps_p)
{
    *caps_p = (struct ushmemi_p2p_caps){.link = USHMEMI_LINK_NONE};
    if (strncmp(peer->backend, "ze", sizeof(peer->backend)) != 0 ||
        peer->node_hash != dev->id.node_hash)
        return USHMEM_OK;
    if (memcmp(peer->uuid, dev->id.uuid, sizeof(peer->uuid)) == 0) {
        *caps_p = (struct ushmemi_p2p_caps){.access = true,
                                            .native_atomics = true,
                                            .same_device = true,
                                            .link = USHMEMI_LINK_SAME_DEVICE};
        return USHMEM_OK;
    }
    ze_device_handle_t other = NULL;
    for (uint32_t i = 0; i < dev->ndevices && other == NULL; i++) {
        ze_device_properties_t p = {.stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES};
        if (ze.zeDeviceGetProperties(dev->devices[i], &p) == ZE_RESULT_SUCCESS &&
            memcmp(p.uuid.id, peer->uuid, sizeof(peer->uuid)) == 0)
            other = dev->devices[i];
    }
    if (other == NULL) {
        ushmemi_info("ze backend: the peer's device (PCI %s) is not visible to this process "
                     "(ZE_AFFINITY_MASK?), so peer access to it cannot be probed: taken as none",
                     peer->pci_bdf[0] ? peer->pci_bdf : "address unknown");
        return USHMEM_OK;
    }
    ze_bool_t can = 0;
    ze_result_t r = ze.zeDeviceCanAccessPeer(dev->handle, other, &can);
    if (r != ZE_RESULT_SUCCESS)
        return fail("zeDeviceCanAccessPeer", r, "device %d to PCI %s", dev->ordinal,
                    peer->pci_bdf);
    ze_device_p2p_properties_t p2p = {.stype = ZE_STRUCTURE_TYPE_DEVICE_P2P_PROPERTIES};
    if ((r = ze.zeDeviceGetP2PProperties(dev->handle, other, &p2p)) != ZE_RESULT_SUCCESS)
        return fail("zeDeviceGetP2PProperties", r, "device %d to PCI %s", dev->ordinal,
                    peer->pci_bdf);
    caps_p->access = can && (p2p.flags & ZE_DEVICE_P2P_PROPERTY_FLAG_ACCESS);
    caps_p->native_atomics = caps_p->access && (p2p.flags & ZE_DEVICE_P2P_PROPERTY_FLAG_ATOMICS);
    caps_p->link = caps_p->access ? link_between(dev->handle, other) : USHMEMI_LINK_NONE;
    return USHMEM_OK;
}


static void *ze_native_handle(struct ushmemi_device *dev, const char *what)
{
    if (strcmp(what, "context") == 0)
        return dev->ctx;
    if (strcmp(what, "device") == 0)
        return dev->handle;
    if (strcmp(what, "driver") == 0)
        return dev->driver;
    return NULL;
}

/* The global is device memory (or the driver's): written with a copy. */
static ushmem_status_t ze_module_global(struct ushmemi_device *dev, void *module, const char *name,
                                        const void *data, size_t size)
{
    size_t have = 0;
    void *global = NULL;
    ze_result_t r = ze.zeModuleGetGlobalPointer((ze_module_handle_t)module, name, &have, &global);
    if (r != ZE_RESULT_SUCCESS)
        return fail("zeModuleGetGlobalPointer", r, "module %p, \"%s\"", module, name);
    if (have < size) {
        ushmemi_error("ze backend: the global \"%s\" of module %p has %zu bytes; %zu are needed "
                      "(a module built against another version of <ushmem/device.h>?)",
                      name, module, have, size);
        return USHMEM_ERR_INVALID_PARAM;
    }
    ushmem_status_t status = ze_copy(dev, global, data, size);
    return status == USHMEM_OK ? ze_sync(dev) : status;
}

/* For ushmem_info: the loader, the driver, its GPUs and their P2P
 * properties. */
static void ze_describe(char *buf, size_t len)
{
    if (ensure_loader() != USHMEM_OK) {
        snprintf(buf, len, "ze: %s\n", loader.why[0] ? loader.why : "not available");
        return;
    }
    struct ushmemi_device probe = {0};
    size_t used = 0;
#define PUT(...)                                                                            \
    do {                                                                                    \
        int n_ = snprintf(buf + used, len - used, __VA_ARGS__);                             \
        if (n_ > 0)                                                                         \
            used = (size_t)n_ < len - used ? used + (size_t)n_ : len - 1;                   \
    } while (0)
    PUT("ze: loader %s\n", loader.version[0] ? loader.version : "(version not reported)");
    if (find_devices(&probe) != USHMEM_OK) {
        PUT("ze: no GPU among the drivers' devices\n");
        return;
    }
    ze_driver_properties_t dp = {.stype = ZE_STRUCTURE_TYPE_DRIVER_PROPERTIES};
    ze_api_version_t api = 0;
    ze.zeDriverGetProperties(probe.driver, &dp);
    ze.zeDriverGetApiVersion(probe.driver, &api);
    PUT("ze: driver version 0x%x, API %u.%u, %u GPU(s)\n", dp.driverVersion,
        ZE_MAJOR_VERSION(api), ZE_MINOR_VERSION(api), probe.ndevices);
    for (uint32_t i = 0; i < probe.ndevices; i++) {
        ze_device_properties_t p = {.stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES};
        char bdf[16];
        ze.zeDeviceGetProperties(probe.devices[i], &p);
        bdf_of(probe.devices[i], bdf, sizeof(bdf));
        PUT("ze: device %u: %s, PCI %s\n", i, p.name, bdf[0] ? bdf : "unknown");
        for (uint32_t j = 0; j < probe.ndevices; j++) {
            if (j == i)
                continue;
            ze_device_p2p_properties_t p2p = {.stype = ZE_STRUCTURE_TYPE_DEVICE_P2P_PROPERTIES};
            ze_bool_t can = 0;
            ze.zeDeviceGetP2PProperties(probe.devices[i], probe.devices[j], &p2p);
            ze.zeDeviceCanAccessPeer(probe.devices[i], probe.devices[j], &can);
            PUT("ze:   -> device %u: access %s, atomics %s, link %s\n", j,
                can && (p2p.flags & ZE_DEVICE_P2P_PROPERTY_FLAG_ACCESS) ? "yes" : "no",
                p2p.flags & ZE_DEVICE_P2P_PROPERTY_FLAG_ATOMICS ? "yes" : "no",
                ushmemi_link_name(link_between(probe.devices[i], probe.devices[j])));
        }
    }
#undef PUT
    free(probe.devices);
}

const struct ushmemi_device_ops ushmemi_device_ze_ops = {
    .size = sizeof(struct ushmemi_device_ops),
    .name = "ze",
    .open = ze_open,
    .close = ze_close,
    .identity = ze_identity,
    .heap_alloc = ze_heap_alloc,
    .heap_free = ze_heap_free,
    .host_alloc = ze_host_alloc,
    .host_free = ze_host_free,
    .export_mem = ze_export,
    .import_mem = ze_import,
    .close_import = ze_close_import,
    .share_static = ze_share_static,
    .unshare_static = ze_unshare_static,
    .copy = ze_copy,
    .memset = ze_memset,
    .sync = ze_sync,
    .amo = ze_amo,
    .stream_copy = ushmemi_no_stream_copy,
    .stream_write64 = ushmemi_no_stream_write64,
    .stream_wait64 = ushmemi_no_stream_wait64,
    .stream_reduce = ushmemi_no_stream_reduce,
    .stream_alloc = ushmemi_no_stream_alloc,
    .stream_free = ushmemi_no_stream_free,
    .stream_capturing = ushmemi_no_stream_capturing,
    .pointer_query = ze_pointer_query,
    .p2p_probe = ze_p2p_probe,
    .describe = ze_describe,
    .native_handle = ze_native_handle,
    .module_global = ze_module_global,
};
