/* The cuda device backend: the symmetric heap is device memory allocated with
 * the CUDA driver's virtual memory API, so that it exports as a file
 * descriptor which local peers import and map (cuda_mem.c); peers are probed
 * for access, native atomics and the link between them (cuda_p2p.c).
 *
 * This file owns loading libcuda at run time (dlopen, never linked: machines
 * without the driver, CI among them, must still start every program and fall
 * back to the cpu backend), the translation of driver errors, and opening the
 * device for a local rank: its primary context and a non-blocking stream. */
#include "cuda_private.h"

#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/log.h"
#include "../common/vars.h"
#include "node_id.h"

struct ushmemi_cu_api ushmemi_cu;

/* The symbol each field is loaded from: the name after cuda.h's macros, so
 * cuDeviceGetUuid is looked up as "cuDeviceGetUuid_v2". */
#define CU_TEXT(name) #name
#define CU_NAME(name) CU_TEXT(name)
#define CU_ENTRY(name) {CU_NAME(name), offsetof(struct ushmemi_cu_api, name)},
static const struct {
    const char *symbol;
    size_t offset;
} cu_entries[] = {USHMEMI_CU_SYMBOLS(CU_ENTRY)},
  cu_optional_entries[] = {USHMEMI_CU_OPTIONAL_SYMBOLS(CU_ENTRY)};
#undef CU_ENTRY

/* The driver is loaded and initialised once per process. */
static struct {
    pthread_once_t once;
    ushmem_status_t status;
    char why[320]; /* when status is not OK: what happened */
    int version;   /* cuDriverGetVersion, e.g. 13000 */
    void *lib;     /* libcuda, for entry points looked up when first needed */
} loader = {.once = PTHREAD_ONCE_INIT, .status = USHMEM_ERR_NO_DEVICE};

ushmem_status_t ushmemi_cuda_status(CUresult result)
{
    switch (result) {
    case CUDA_SUCCESS:
        return USHMEM_OK;
    case CUDA_ERROR_OUT_OF_MEMORY:
        return USHMEM_ERR_NO_MEMORY;
    case CUDA_ERROR_NO_DEVICE:
    case CUDA_ERROR_STUB_LIBRARY:
        return USHMEM_ERR_NO_DEVICE;
    case CUDA_ERROR_INVALID_VALUE:
    case CUDA_ERROR_INVALID_HANDLE:
        return USHMEM_ERR_INVALID_PARAM;
    case CUDA_ERROR_NOT_SUPPORTED:
        return USHMEM_ERR_UNSUPPORTED;
    case CUDA_ERROR_NOT_PERMITTED:
        return USHMEM_ERR_PERMISSION;
    default:
        return USHMEM_ERR_DEVICE;
    }
}

static const char *error_name(CUresult result)
{
    const char *name = NULL;
    if (ushmemi_cu.cuGetErrorName == NULL ||
        ushmemi_cu.cuGetErrorName(result, &name) != CUDA_SUCCESS || name == NULL)
        return "unknown CUresult";
    return name;
}

ushmem_status_t ushmemi_cuda_fail(const char *call, CUresult result, const char *fmt, ...)
{
    char values[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(values, sizeof(values), fmt, ap);
    va_end(ap);
    ushmemi_error("cuda backend: %s(%s) failed: %s (%d)", call, values, error_name(result),
                  (int)result);
    return ushmemi_cuda_status(result);
}

/* The library's own threads (the proxy, the landing thread) work for
 * kernels and streams whatever the program's threads do: while one of
 * those captures a stream into a CUDA graph in the global mode (the
 * default), calls such as a synchronisation are refused to every thread
 * left in the global mode, so ushmem's threads take the relaxed mode, in
 * which only their own captures (they make none) would be checked. The
 * thread that opened the device, the program's, keeps its own. */
static _Thread_local bool capture_mode_set;

ushmem_status_t ushmemi_cuda_current(struct ushmemi_device *dev, const char *what)
{
    if (!capture_mode_set) {
        capture_mode_set = true;
        if (!pthread_equal(pthread_self(), dev->opener) &&
            ushmemi_cu.cuThreadExchangeStreamCaptureMode != NULL) {
            CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
            ushmemi_cu.cuThreadExchangeStreamCaptureMode(&mode);
        }
    }
    CUresult r = ushmemi_cu.cuCtxSetCurrent(dev->ctx);
    if (r != CUDA_SUCCESS)
        return ushmemi_cuda_fail("cuCtxSetCurrent", r, "primary context of device %d, for %s",
                                 dev->ordinal, what);
    return USHMEM_OK;
}

static void load_driver(void)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL) {
        const char *err = dlerror();
        snprintf(loader.why, sizeof(loader.why), "libcuda.so.1 cannot be loaded (%s): no NVIDIA "
                 "driver here", err != NULL ? err : "no reason given");
        loader.status = USHMEM_ERR_NO_DEVICE;
        return;
    }
    for (size_t i = 0; i < sizeof(cu_entries) / sizeof(cu_entries[0]); i++) {
        void *sym = dlsym(lib, cu_entries[i].symbol);
        if (sym == NULL) {
            /* The library is there but predates an entry point we need:
             * the user must hear that, not silently get host memory. */
            snprintf(loader.why, sizeof(loader.why), "libcuda.so.1 has no %s: the NVIDIA driver "
                     "is too old for the cuda backend (11.3 or newer is needed); "
                     "USHMEM_BACKEND=cpu runs on host memory", cu_entries[i].symbol);
            ushmemi_error("cuda backend: %s", loader.why);
            memset(&ushmemi_cu, 0, sizeof(ushmemi_cu));
            loader.status = USHMEM_ERR_UNSUPPORTED;
            dlclose(lib);
            return;
        }
        /* POSIX guarantees that dlsym's object pointer holds a function's
         * address; copy it bytewise rather than cast between the kinds. */
        memcpy((char *)&ushmemi_cu + cu_entries[i].offset, &sym, sizeof(sym));
    }
    for (size_t i = 0; i < sizeof(cu_optional_entries) / sizeof(cu_optional_entries[0]); i++) {
        void *sym = dlsym(lib, cu_optional_entries[i].symbol);
        memcpy((char *)&ushmemi_cu + cu_optional_entries[i].offset, &sym, sizeof(sym));
    }
    loader.lib = lib;

    CUresult r = ushmemi_cu.cuInit(0);
    if (r == CUDA_ERROR_NO_DEVICE || r == CUDA_ERROR_STUB_LIBRARY) {
        /* No GPU, or the toolkit's stub library found instead of a driver. */
        snprintf(loader.why, sizeof(loader.why), "cuInit(0) answered %s: no CUDA device here",
                 error_name(r));
        loader.status = USHMEM_ERR_NO_DEVICE;
        return; /* the library stays loaded: it is harmless and unloading it is not */
    }
    if (r != CUDA_SUCCESS) {
        loader.status = ushmemi_cuda_fail("cuInit", r, "0");
        snprintf(loader.why, sizeof(loader.why), "cuInit(0) failed: %s", error_name(r));
        return;
    }
    if (ushmemi_cu.cuDriverGetVersion(&loader.version) != CUDA_SUCCESS)
        loader.version = 0;
    loader.status = USHMEM_OK;
}

/* Why the backend has no device, said loudly only when the user asked for
 * this backend by name: under "auto" it is the expected case on every
 * machine without an NVIDIA GPU. */
static void report_no_device(const char *why)
{
    const char *asked = ushmemi_settings.backend;
    if (asked != NULL && strcmp(asked, "cuda") == 0)
        ushmemi_error("cuda backend: %s (USHMEM_BACKEND=cuda)", why);
    else
        ushmemi_debug("cuda backend: %s", why);
}

void ushmemi_cuda_uuid_text(const uint8_t uuid[16], char *buf, size_t len)
{
    snprintf(buf, len,
             "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
             uuid[0], uuid[1], uuid[2], uuid[3], uuid[4], uuid[5], uuid[6], uuid[7], uuid[8],
             uuid[9], uuid[10], uuid[11], uuid[12], uuid[13], uuid[14], uuid[15]);
}

void ushmemi_cuda_pci_bdf(CUdevice cu_dev, char *bdf_p, size_t len)
{
    char text[64];
    unsigned domain, bus, device, function;

    bdf_p[0] = '\0';
    CUresult r = ushmemi_cu.cuDeviceGetPCIBusId(text, (int)sizeof(text), cu_dev);
    if (r != CUDA_SUCCESS) {
        ushmemi_debug("cuda backend: cuDeviceGetPCIBusId(device %d) answered %s; no PCI address",
                      (int)cu_dev, error_name(r));
        return;
    }
    /* The driver may write an 8-digit domain ("00000000:3b:00.0"); pcie.c
     * and pci_bdf want sysfs's form, lower case with a 4-digit domain. */
    if (sscanf(text, "%x:%x:%x.%x", &domain, &bus, &device, &function) != 4 || bus > 0xff ||
        device > 0x1f || function > 7 || domain > 0xfffffff) {
        ushmemi_debug("cuda backend: PCI address '%s' of device %d not understood", text,
                      (int)cu_dev);
        return;
    }
    snprintf(bdf_p, len, "%04x:%02x:%02x.%x", domain, bus, device, function);
}

static ushmem_status_t device_attribute(CUdevice cu_dev, CUdevice_attribute attr, const char *name,
                                        int *value_p)
{
    CUresult r = ushmemi_cu.cuDeviceGetAttribute(value_p, attr, cu_dev);
    if (r != CUDA_SUCCESS)
        return ushmemi_cuda_fail("cuDeviceGetAttribute", r, "%s, device %d", name, (int)cu_dev);
    return USHMEM_OK;
}

/* The device must map exportable memory through the VMM API and share one
 * address space with the host; each missing feature is named. */
static ushmem_status_t check_features(struct ushmemi_device *dev)
{
    static const struct {
        CUdevice_attribute attr;
        const char *name;
        const char *what;
    } needed[] = {
        {CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, "CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING",
         "unified addressing"},
        {CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
         "CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED", "the virtual memory API"},
        {CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED,
         "CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED",
         "export of memory as a file descriptor"},
    };
    for (size_t i = 0; i < sizeof(needed) / sizeof(needed[0]); i++) {
        int value = 0;
        ushmem_status_t status = device_attribute(dev->cu_dev, needed[i].attr, needed[i].name,
                                                  &value);
        if (status != USHMEM_OK)
            return status;
        if (!value) {
            ushmemi_error("cuda backend: device %d does not support %s (%s is 0), which the "
                          "symmetric heap needs; USHMEM_BACKEND=cpu runs on host memory",
                          dev->ordinal, needed[i].what, needed[i].name);
            return USHMEM_ERR_UNSUPPORTED;
        }
    }
    int rdma = 0;
    ushmem_status_t status =
        device_attribute(dev->cu_dev, CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED,
                         "CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED", &rdma);
    if (status != USHMEM_OK)
        return status;
    dev->rdma_capable = rdma != 0;
    return USHMEM_OK;
}

/* The granularity of the heap's allocations (ushmemi_cuda_heap_prop). */
static ushmem_status_t read_granularity(struct ushmemi_device *dev)
{
    CUmemAllocationProp prop = ushmemi_cuda_heap_prop(dev);
    size_t gran = 0;
    CUresult r = ushmemi_cu.cuMemGetAllocationGranularity(&gran, &prop,
                                                          CU_MEM_ALLOC_GRANULARITY_RECOMMENDED);
    if (r != CUDA_SUCCESS)
        return ushmemi_cuda_fail("cuMemGetAllocationGranularity", r,
                                 "pinned, fd-exportable memory on device %d, recommended",
                                 dev->ordinal);
    if (gran == 0 || (gran & (gran - 1)) != 0) {
        ushmemi_error("cuda backend: device %d reports an allocation granularity of %zu bytes, "
                      "not a power of two", dev->ordinal, gran);
        return USHMEM_ERR_DEVICE;
    }
    dev->granularity = gran;
    return USHMEM_OK;
}

static ushmem_status_t read_identity(struct ushmemi_device *dev)
{
    CUuuid uuid;
    CUresult r = ushmemi_cu.cuDeviceGetUuid(&uuid, dev->cu_dev);
    if (r != CUDA_SUCCESS)
        return ushmemi_cuda_fail("cuDeviceGetUuid_v2", r, "device %d", dev->ordinal);
    memset(&dev->id, 0, sizeof(dev->id));
    strcpy(dev->id.backend, "cuda");
    _Static_assert(sizeof(uuid.bytes) == sizeof(dev->id.uuid), "CUuuid is 16 bytes");
    memcpy(dev->id.uuid, uuid.bytes, sizeof(dev->id.uuid));
    ushmemi_cuda_pci_bdf(dev->cu_dev, dev->id.pci_bdf, sizeof(dev->id.pci_bdf));
    dev->id.node_hash = ushmemi_node_hash();
    return USHMEM_OK;
}

/* The device of the calling thread's current context, or -1 when it has
 * none: a program that called cudaSetDevice before shmem_init has one. */
static ushmem_status_t program_device(CUdevice *cu_dev_p)
{
    CUcontext ctx = NULL;
    CUresult r = ushmemi_cu.cuCtxGetCurrent(&ctx);

    *cu_dev_p = -1;
    if (r != CUDA_SUCCESS)
        return ushmemi_cuda_fail("cuCtxGetCurrent", r, "&ctx");
    if (ctx == NULL)
        return USHMEM_OK;
    r = ushmemi_cu.cuCtxGetDevice(cu_dev_p);
    if (r != CUDA_SUCCESS)
        return ushmemi_cuda_fail("cuCtxGetDevice", r, "current context %p", (void *)ctx);
    return USHMEM_OK;
}

static void close_lanes(struct ushmemi_device *dev);

/* USHMEM_CUDA_STREAM_BARRIER: how stream_exchange64 queues a round. */
static ushmem_status_t read_stream_barrier(struct ushmemi_device *dev)
{
    const char *mode = ushmemi_settings.cuda_stream_barrier;
    if (strcmp(mode, "auto") == 0) {
        dev->exchange = USHMEMI_CUDA_EXCHANGE_AUTO;
    } else if (strcmp(mode, "kernel") == 0) {
        dev->exchange = USHMEMI_CUDA_EXCHANGE_KERNEL;
    } else if (strcmp(mode, "memops") == 0) {
        dev->exchange = USHMEMI_CUDA_EXCHANGE_MEMOPS;
    } else {
        ushmemi_error("cuda backend: USHMEM_CUDA_STREAM_BARRIER=%s is not auto, kernel or "
                      "memops", mode);
        return USHMEM_ERR_INVALID_VALUE;
    }
    return USHMEM_OK;
}

/* USHMEM_CUDA_COPY_STREAMS: the streams large copies are dealt to, the
 * backend's own stream first (cuda_mem.c). */
static ushmem_status_t open_lanes(struct ushmemi_device *dev)
{
    long want = ushmemi_settings.cuda_copy_streams;
    if (want < 1 || want > USHMEMI_CUDA_LANES_MAX) {
        ushmemi_error("cuda backend: USHMEM_CUDA_COPY_STREAMS=%ld is not between 1 and %d", want,
                      USHMEMI_CUDA_LANES_MAX);
        return USHMEM_ERR_INVALID_VALUE;
    }
    dev->lane[0] = dev->stream;
    dev->lanes = 1;
    atomic_init(&dev->next_lane, 0);
    atomic_init(&dev->lanes_busy, 0);
    pthread_mutex_init(&dev->lanes_lock, NULL);
    while (dev->lanes < (unsigned)want) {
        unsigned i = dev->lanes;
        CUresult r = ushmemi_cu.cuStreamCreate(&dev->lane[i], CU_STREAM_NON_BLOCKING);
        if (r == CUDA_SUCCESS) {
            r = ushmemi_cu.cuEventCreate(&dev->lane_event[i], CU_EVENT_DISABLE_TIMING);
            if (r != CUDA_SUCCESS)
                ushmemi_cu.cuStreamDestroy(dev->lane[i]);
        }
        if (r != CUDA_SUCCESS) {
            ushmem_status_t status = ushmemi_cuda_fail("cuStreamCreate/cuEventCreate", r,
                                                       "copy stream %u of device %d", i,
                                                       dev->ordinal);
            close_lanes(dev);
            return status;
        }
        dev->lanes++;
    }
    return USHMEM_OK;
}

static void close_lanes(struct ushmemi_device *dev)
{
    for (unsigned i = dev->lanes; i-- > 1;) {
        ushmemi_cu.cuStreamDestroy(dev->lane[i]);
        ushmemi_cu.cuEventDestroy(dev->lane_event[i]);
    }
    dev->lanes = 1;
}

/* The context libfabric's GPU support runs in (device.h, foreign_enter):
 * it copies with the CUDA runtime's synchronous calls on the legacy default
 * stream, which in the program's own context wait for every kernel the
 * program launched there, a kernel that waits on this very copy included.
 * A second context of the device has a default stream of its own. It is
 * made once, by the first thread that needs it; the primary context serves
 * when USHMEM_CUDA_FABRIC_CONTEXT=primary, or when a second cannot be made
 * (said once). */
static CUcontext foreign_context(struct ushmemi_device *dev)
{
    pthread_mutex_lock(&dev->lock);
    if (!dev->foreign_tried) {
        dev->foreign_tried = true;
        dev->foreign_ctx = dev->ctx;
        const char *mode = ushmemi_settings.cuda_fabric_context;
        if (strcmp(mode, "own") == 0) {
            __typeof__(cuCtxCreate) *create =
                loader.lib != NULL ? (__typeof__(cuCtxCreate) *)dlsym(loader.lib, CU_NAME(cuCtxCreate))
                                   : NULL;
            CUcontext ctx = NULL;
            CUresult r = create != NULL ? create(&ctx, NULL, 0, dev->cu_dev)
                                        : CUDA_ERROR_NOT_SUPPORTED;
            if (r == CUDA_SUCCESS) {
                /* Created current: the thread's own context comes back. */
                CUcontext popped;
                ushmemi_cu.cuCtxPopCurrent(&popped);
                dev->foreign_ctx = ctx;
                ushmemi_debug("cuda backend: libfabric's GPU support runs in a context of its "
                              "own on device %d", dev->ordinal);
            } else {
                ushmemi_warn("cuda backend: no second context on device %d for libfabric's GPU "
                             "support (%s): it shares the program's, where its copies wait "
                             "for kernels on the default stream", dev->ordinal,
                             create != NULL ? error_name(r) : "the driver has no " CU_NAME(cuCtxCreate));
            }
        } else if (strcmp(mode, "primary") != 0) {
            ushmemi_warn("cuda backend: USHMEM_CUDA_FABRIC_CONTEXT=%s is not own or primary; "
                         "using primary", mode);
        }
    }
    CUcontext ctx = dev->foreign_ctx;
    pthread_mutex_unlock(&dev->lock);
    return ctx;
}

/* "context": the CUcontext (the device's primary context); "ordinal": a
 * pointer to the device's ordinal, an int that lives as long as the device. */
static void *cuda_native_handle(struct ushmemi_device *dev, const char *what)
{
    if (strcmp(what, "context") == 0)
        return (void *)dev->ctx;
    if (strcmp(what, "ordinal") == 0)
        return &dev->ordinal;
    return NULL;
}

/* A module the program loaded (a CUmodule) holds its own __constant__ copy
 * of the device state (include/ushmem/detail/device_cuda.h), a static
 * variable: nvcc gives it its C++ internal name, and C its plain one. */
static ushmem_status_t cuda_module_global(struct ushmemi_device *dev, void *module,
                                          const char *name, const void *data, size_t size)
{
    static const char *const symbols[] = {"_ZL18ushmemi_cuda_state", "ushmemi_cuda_state"};
    CUdeviceptr global = 0;
    size_t have = 0;
    CUresult r = CUDA_ERROR_NOT_FOUND;

    if (strcmp(name, "ushmem_device_state") != 0) {
        ushmemi_error("cuda backend: module global \"%s\" is not the device state", name);
        return USHMEM_ERR_INVALID_PARAM;
    }
    ushmem_status_t status = ushmemi_cuda_current(dev, "module global");
    if (status != USHMEM_OK)
        return status;
    for (size_t i = 0; i < sizeof(symbols) / sizeof(symbols[0]) && r == CUDA_ERROR_NOT_FOUND; i++)
        r = ushmemi_cu.cuModuleGetGlobal(&global, &have, (CUmodule)module, symbols[i]);
    if (r != CUDA_SUCCESS)
        return ushmemi_cuda_fail("cuModuleGetGlobal", r, "module %p, the device state (%s)",
                                 module, symbols[0]);
    if (have < size) {
        ushmemi_error("cuda backend: the device state of module %p has %zu bytes; %zu are "
                      "needed (a module built against another version of <ushmem/device.h>?)",
                      module, have, size);
        return USHMEM_ERR_INVALID_PARAM;
    }
    r = ushmemi_cu.cuMemcpyHtoD(global, data, size);
    if (r != CUDA_SUCCESS)
        return ushmemi_cuda_fail("cuMemcpyHtoD", r, "%zu bytes of device state into module %p",
                                 size, module);
    return USHMEM_OK;
}

static ushmem_status_t cuda_foreign_enter(struct ushmemi_device *dev, void **saved_p)
{
    CUcontext want = foreign_context(dev), cur = NULL;
    CUresult r = ushmemi_cu.cuCtxGetCurrent(&cur);
    if (r != CUDA_SUCCESS)
        return ushmemi_cuda_fail("cuCtxGetCurrent", r, "&ctx");
    *saved_p = cur;
    if (cur != want && (r = ushmemi_cu.cuCtxSetCurrent(want)) != CUDA_SUCCESS)
        return ushmemi_cuda_fail("cuCtxSetCurrent", r, "libfabric's context on device %d",
                                 dev->ordinal);
    return USHMEM_OK;
}

static void cuda_foreign_leave(struct ushmemi_device *dev, void *saved)
{
    CUcontext cur = NULL;
    if (ushmemi_cu.cuCtxGetCurrent(&cur) == CUDA_SUCCESS && cur != (CUcontext)saved)
        ushmemi_cu.cuCtxSetCurrent((CUcontext)saved);
    (void)dev;
}

static ushmem_status_t cuda_open(int local_rank, int local_size, struct ushmemi_device **dev_p)
{
    ushmem_status_t status;
    CUresult r;

    pthread_once(&loader.once, load_driver);
    if (loader.status == USHMEM_ERR_NO_DEVICE)
        report_no_device(loader.why);
    if (loader.status != USHMEM_OK)
        return loader.status;

    int count = 0;
    r = ushmemi_cu.cuDeviceGetCount(&count);
    if (r != CUDA_SUCCESS)
        return ushmemi_cuda_fail("cuDeviceGetCount", r, "&count");
    if (count <= 0) {
        const char *visible = getenv("CUDA_VISIBLE_DEVICES");
        char why[160];
        snprintf(why, sizeof(why), "the driver lists no device (CUDA_VISIBLE_DEVICES=%s)",
                 visible != NULL ? visible : "unset");
        report_no_device(why);
        return USHMEM_ERR_NO_DEVICE;
    }

    struct ushmemi_device *dev = calloc(1, sizeof(*dev));
    if (dev == NULL) {
        ushmemi_error("cuda backend: cannot allocate the device for local rank %d", local_rank);
        return USHMEM_ERR_NO_MEMORY;
    }
    /* The device the program made current before shmem_init (cudaSetDevice)
     * is its choice. Otherwise one device per PE while there are enough;
     * beyond that PEs share devices round robin, which the peer probe
     * reports as same_device. */
    dev->count = count;
    dev->opener = pthread_self();
    dev->local_rank = local_rank;
    dev->local_size = local_size;
    const char *chosen_by = "local rank";
    status = program_device(&dev->cu_dev);
    if (status != USHMEM_OK)
        goto free_dev;
    if (dev->cu_dev >= 0) {
        dev->ordinal = (int)dev->cu_dev; /* a CUdevice is the device's ordinal */
        chosen_by = "the program's current device";
    } else {
        dev->ordinal = local_rank % count;
        r = ushmemi_cu.cuDeviceGet(&dev->cu_dev, dev->ordinal);
        if (r != CUDA_SUCCESS) {
            status = ushmemi_cuda_fail("cuDeviceGet", r, "ordinal %d of %d", dev->ordinal, count);
            goto free_dev;
        }
    }
    status = check_features(dev);
    if (status != USHMEM_OK)
        goto free_dev;
    status = read_identity(dev);
    if (status != USHMEM_OK)
        goto free_dev;

    r = ushmemi_cu.cuDevicePrimaryCtxRetain(&dev->ctx, dev->cu_dev);
    if (r != CUDA_SUCCESS) {
        status = ushmemi_cuda_fail("cuDevicePrimaryCtxRetain", r, "device %d", dev->ordinal);
        goto free_dev;
    }
    status = ushmemi_cuda_current(dev, "open");
    if (status != USHMEM_OK)
        goto release_ctx;
    status = read_granularity(dev);
    if (status != USHMEM_OK)
        goto release_ctx;
    status = read_stream_barrier(dev);
    if (status != USHMEM_OK)
        goto release_ctx;
    /* Non-blocking: the copies must not wait for the program's work on
     * the legacy default stream, nor hold it up. */
    r = ushmemi_cu.cuStreamCreate(&dev->stream, CU_STREAM_NON_BLOCKING);
    if (r != CUDA_SUCCESS) {
        status = ushmemi_cuda_fail("cuStreamCreate", r, "CU_STREAM_NON_BLOCKING, device %d",
                                   dev->ordinal);
        goto release_ctx;
    }
    status = open_lanes(dev);
    if (status != USHMEM_OK)
        goto destroy_stream;
    status = ushmemi_cuda_kernels_load(dev);
    if (status != USHMEM_OK)
        goto close_lanes;
    /* Here rather than on the proxy thread, whose keep_warm asks it. */
    ushmemi_cuda_nvml_prepare(dev);
    pthread_mutex_init(&dev->lock, NULL);
    pthread_mutex_init(&dev->amo_lock, NULL);

    char uuid_text[48];
    ushmemi_cuda_uuid_text(dev->id.uuid, uuid_text, sizeof(uuid_text));
    ushmemi_debug("cuda backend: local rank %d of %d on device %d of %d (by %s; %s, PCI %s), "
                  "driver API %d, granularity %zu, GPUDirect RDMA flag %s",
                  local_rank, local_size, dev->ordinal, count, chosen_by, uuid_text,
                  dev->id.pci_bdf[0] ? dev->id.pci_bdf : "unknown", loader.version,
                  dev->granularity, dev->rdma_capable ? "on" : "off");
    *dev_p = dev;
    return USHMEM_OK;

close_lanes:
    close_lanes(dev);
destroy_stream:
    ushmemi_cu.cuStreamDestroy(dev->stream);
release_ctx:
    ushmemi_cu.cuDevicePrimaryCtxRelease(dev->cu_dev);
free_dev:
    free(dev);
    return status;
}

static void cuda_close(struct ushmemi_device *dev)
{
    if (dev == NULL)
        return;
    ushmemi_cuda_current(dev, "close");
    ushmemi_cuda_warm_close(dev);
    /* Whatever the caller left behind is released so a close is a clean slate. */
    for (size_t i = dev->nregions; i-- > 0;) {
        if (dev->regions[i].kind != CUDA_REGION_IMPORT)
            ushmemi_debug("cuda backend: region 0x%llx (%zu bytes) still allocated at close",
                          (unsigned long long)dev->regions[i].base, dev->regions[i].size);
        ushmemi_cuda_release_region(dev, &dev->regions[i]);
    }
    free(dev->regions);
    ushmemi_cuda_amo_close(dev);
    ushmemi_cuda_reduce_close(dev);
    ushmemi_cuda_graph_close(dev);
    ushmemi_cuda_coll_close(dev);
    close_lanes(dev);
    if (dev->foreign_ctx != NULL && dev->foreign_ctx != dev->ctx) {
        ushmemi_cu.cuCtxDestroy(dev->foreign_ctx);
        ushmemi_cuda_current(dev, "close");
    }
    CUresult r = ushmemi_cu.cuStreamDestroy(dev->stream);
    if (r != CUDA_SUCCESS)
        ushmemi_cuda_fail("cuStreamDestroy_v2", r, "stream of device %d", dev->ordinal);
    r = ushmemi_cu.cuDevicePrimaryCtxRelease(dev->cu_dev);
    if (r != CUDA_SUCCESS)
        ushmemi_cuda_fail("cuDevicePrimaryCtxRelease_v2", r, "device %d", dev->ordinal);
    ushmemi_cuda_nvml_close(dev);
    pthread_mutex_destroy(&dev->lock);
    pthread_mutex_destroy(&dev->amo_lock);
    pthread_mutex_destroy(&dev->lanes_lock);
    free(dev);
}

static ushmem_status_t cuda_identity(struct ushmemi_device *dev, struct ushmemi_device_id *id_p)
{
    *id_p = dev->id;
    return USHMEM_OK;
}

/* Peers cannot reach this process's host memory through a device mapping
 * here; static_seg.c then leaves globals private (not remotely accessible). */
static ushmem_status_t cuda_share_static(struct ushmemi_device *dev, void *start, size_t len)
{
    (void)dev;
    (void)start;
    (void)len;
    return USHMEM_ERR_UNSUPPORTED;
}

static void cuda_unshare_static(struct ushmemi_device *dev, void *start, size_t len)
{
    (void)dev;
    (void)start;
    (void)len;
}

const struct ushmemi_device_ops ushmemi_device_cuda_ops = {
    .size = sizeof(struct ushmemi_device_ops),
    .name = "cuda",
    .open = cuda_open,
    .close = cuda_close,
    .identity = cuda_identity,
    .heap_alloc = ushmemi_cuda_heap_alloc,
    .heap_free = ushmemi_cuda_heap_free,
    .host_alloc = ushmemi_cuda_host_alloc,
    .host_free = ushmemi_cuda_host_free,
    .export_mem = ushmemi_cuda_export,
    .import_mem = ushmemi_cuda_import,
    .close_import = ushmemi_cuda_close_import,
    .heap_reserve = ushmemi_cuda_heap_reserve,
    .heap_grow = ushmemi_cuda_heap_grow,
    .heap_shrink = ushmemi_cuda_heap_shrink,
    .export_chunk = ushmemi_cuda_export_chunk,
    .import_chunk = ushmemi_cuda_import_chunk,
    .close_chunk = ushmemi_cuda_close_chunk,
    .memory_size = ushmemi_cuda_memory_size,
    .share_static = cuda_share_static,
    .unshare_static = cuda_unshare_static,
    .copy = ushmemi_cuda_copy,
    .copy_writes_words_whole = true, /* one write of the copy engine */
    .memset = ushmemi_cuda_memset,
    .sync = ushmemi_cuda_sync,
    .write64 = ushmemi_cuda_write64,
    .amo = ushmemi_cuda_amo,
    .store = ushmemi_cuda_store,
    .amo_async = ushmemi_cuda_amo_async,
    .store_amo_async = ushmemi_cuda_store_amo_async,
    .foreign_enter = cuda_foreign_enter,
    .foreign_leave = cuda_foreign_leave,
    .stream_copy = ushmemi_cuda_stream_copy,
    .stream_copy_beside = ushmemi_cuda_stream_copy_beside,
    .stream_join = ushmemi_cuda_stream_join,
    .stream_write64 = ushmemi_cuda_stream_write64,
    .stream_wait64 = ushmemi_cuda_stream_wait64,
    .stream_exchange64 = ushmemi_cuda_stream_exchange64,
    .stream_reduce = ushmemi_cuda_stream_reduce,
    .stream_alloc = ushmemi_cuda_stream_alloc,
    .stream_free = ushmemi_cuda_stream_free,
    .stream_capturing = ushmemi_cuda_stream_capturing,
    .stream_exchange_counted = ushmemi_cuda_stream_exchange_counted,
    .stream_coll = ushmemi_cuda_stream_coll,
    .pointer_query = ushmemi_cuda_pointer_query,
    .p2p_probe = ushmemi_cuda_p2p_probe,
    .native_handle = cuda_native_handle,
    .module_global = cuda_module_global,
    .keep_warm = ushmemi_cuda_keep_warm,
};
