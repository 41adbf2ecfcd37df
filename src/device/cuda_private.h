/* The cuda backend's private header, shared by cuda.c (driver loading,
 * errors, open/close, identity), cuda_mem.c (heap, host memory, export and
 * import, copies, pointer queries) and cuda_p2p.c (peer probe, NVLink
 * detection through NVML). libcuda is opened at run time, never linked, so
 * that every ushmem program starts on machines without an NVIDIA driver;
 * cuda.h is used for types, constants and prototypes only. */
#ifndef USHMEMI_CUDA_PRIVATE_H
#define USHMEMI_CUDA_PRIVATE_H

#include <cuda.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "device.h"

/* Every driver entry point the backend calls. cuda.h #defines several of
 * these names to versioned ones (cuDeviceGetUuid to cuDeviceGetUuid_v2,
 * cuStreamDestroy to cuStreamDestroy_v2, cuDevicePrimaryCtxRelease to
 * cuDevicePrimaryCtxRelease_v2); the macro expansion gives each field the
 * versioned name, its prototype comes from that very declaration, and the
 * symbol looked up with dlsym is the same versioned name (see cuda.c). */
#define USHMEMI_CU_SYMBOLS(X)                                                          \
    X(cuGetErrorName)                                                                  \
    X(cuInit)                                                                          \
    X(cuDriverGetVersion)                                                              \
    X(cuDeviceGetCount)                                                                \
    X(cuDeviceGet)                                                                     \
    X(cuDeviceGetAttribute)                                                            \
    X(cuDeviceGetUuid)                                                                 \
    X(cuDeviceGetPCIBusId)                                                             \
    X(cuDeviceCanAccessPeer)                                                           \
    X(cuDeviceGetP2PAttribute)                                                         \
    X(cuDevicePrimaryCtxRetain)                                                        \
    X(cuDevicePrimaryCtxRelease)                                                       \
    X(cuCtxSetCurrent)                                                                 \
    X(cuCtxGetCurrent)                                                                 \
    X(cuCtxGetDevice)                                                                  \
    X(cuStreamCreate)                                                                  \
    X(cuStreamDestroy)                                                                 \
    X(cuStreamSynchronize)                                                             \
    X(cuMemGetAllocationGranularity)                                                   \
    X(cuDeviceTotalMem)                                                                \
    X(cuMemCreate)                                                                     \
    X(cuMemRelease)                                                                    \
    X(cuMemAddressReserve)                                                             \
    X(cuMemAddressFree)                                                                \
    X(cuMemMap)                                                                        \
    X(cuMemUnmap)                                                                      \
    X(cuMemSetAccess)                                                                  \
    X(cuMemExportToShareableHandle)                                                    \
    X(cuMemImportFromShareableHandle)                                                  \
    X(cuMemHostAlloc)                                                                  \
    X(cuMemFreeHost)                                                                   \
    X(cuMemcpyAsync)                                                                   \
    X(cuStreamWriteValue64)                                                            \
    X(cuStreamWriteValue32)                                                            \
    X(cuStreamWaitValue64)                                                             \
    X(cuStreamBatchMemOp)                                                              \
    X(cuMemsetD8Async)                                                                 \
    X(cuMemsetD16Async)                                                                \
    X(cuEventCreate)                                                                   \
    X(cuEventDestroy)                                                                  \
    X(cuEventRecord)                                                                   \
    X(cuCtxGetStreamPriorityRange)                                                     \
    X(cuStreamCreateWithPriority)                                                      \
    X(cuStreamWaitEvent)                                                               \
    X(cuCtxDestroy)                                                                    \
    X(cuCtxPopCurrent)                                                                 \
    X(cuPointerGetAttribute)                                                           \
    X(cuModuleLoadData)                                                                \
    X(cuModuleGetFunction)                                                             \
    X(cuModuleGetGlobal)                                                               \
    X(cuMemcpyHtoD)                                                                    \
    X(cuModuleUnload)                                                                  \
    X(cuLaunchKernel)                                                                  \
    X(cuFuncGetAttribute)                                                              \
    X(cuStreamIsCapturing)                                                             \
    X(cuMemAllocAsync)                                                                 \
    X(cuMemFreeAsync)

/* Entry points used where the driver has them and done without where it
 * has not (NULL then): cuLaunchKernelEx (CUDA 12.0) for programmatic
 * dependent launch; cuThreadExchangeStreamCaptureMode (CUDA 10.1) for the
 * library's own threads (ushmemi_cuda_current). */
#define USHMEMI_CU_OPTIONAL_SYMBOLS(X) X(cuLaunchKernelEx) X(cuThreadExchangeStreamCaptureMode)

#define USHMEMI_CU_FIELD(name) __typeof__(name) *name;
struct ushmemi_cu_api {
    USHMEMI_CU_SYMBOLS(USHMEMI_CU_FIELD)
    USHMEMI_CU_OPTIONAL_SYMBOLS(USHMEMI_CU_FIELD)
};
#undef USHMEMI_CU_FIELD

/* Filled once per process by the loader in cuda.c; read-only afterwards. */
extern struct ushmemi_cu_api ushmemi_cu;

enum cuda_region_kind { CUDA_REGION_HEAP, CUDA_REGION_IMPORT, CUDA_REGION_HOST };

/* What the backend handed out: heaps and imports are VMM mappings whose
 * handle and reservation must be undone in reverse; host memory is pinned. */
struct cuda_region {
    uintptr_t base;
    size_t size; /* mapped (padded) length of the first allocation */
    enum cuda_region_kind kind;
    CUmemGenericAllocationHandle handle; /* heaps and imports */
    int fd;                              /* a heap's export, -1 until exported */
    bool in_window; /* mapped into a slot of the device's window, not reserved alone */
    /* A heap that grows, and a peer's imported: the address space held from
     * base (size when it does not grow), and the chunks mapped behind the
     * first allocation, in order, each its own allocation and export. */
    size_t reserve;
    struct cuda_chunk *chunks;
    size_t nchunks, chunks_before; /* chunks_before: nchunks before the last growth */
};

struct cuda_chunk {
    uintptr_t va;
    size_t len;
    CUmemGenericAllocationHandle handle;
    int fd; /* a heap chunk's export, -1 until exported; -1 for imports */
};

/* Most slots a window has (one per PE of the node); a node with more PEs
 * maps each heap on its own. */
#define USHMEMI_CUDA_WINDOW_SLOTS 64

/* One address range for the heaps of a node's PEs (cuda_mem.c): this PE's
 * heap in slot local_rank, each peer's imported into the slot of its local
 * rank, `stride` bytes apart. A peer's copy of an address is then the
 * address plus a multiple of the stride, which device code computes
 * instead of loading the peer's base (detail/device_state.h). */
struct cuda_window {
    CUdeviceptr va; /* 0: no window */
    size_t stride;
    unsigned slots;
    uint64_t used; /* bit i: slot i is mapped */
};

/* NVML, loaded by the first peer probe that needs the link kind (probes run
 * in shmem_init on one thread). */
struct cuda_nvml;

/* Most streams the backend's copies are dealt to (USHMEM_CUDA_COPY_STREAMS). */
#define USHMEMI_CUDA_LANES_MAX 8

struct ushmemi_device {
    CUdevice cu_dev;
    int ordinal; /* among the visible devices */
    pthread_t opener; /* the thread that opened it (the program's); see ushmemi_cuda_current */
    int count;   /* visible devices */
    CUcontext ctx; /* the primary context, retained */
    CUstream stream;
    /* Copies of at least USHMEMI_CUDA_LANE_MIN bytes go round robin to
     * `lanes` streams, lane[0] being `stream`, so that the driver may give
     * them to several copy engines; any other work queued on `stream` first
     * waits for what the other lanes were given since the last such wait
     * (lanes_busy: bit i set when lane i got a copy), so the backend's
     * order holds: a word written after copies is written once they are
     * done. */
    CUstream lane[USHMEMI_CUDA_LANES_MAX];
    CUevent lane_event[USHMEMI_CUDA_LANES_MAX];
    unsigned lanes;
    _Atomic unsigned next_lane;
    _Atomic unsigned lanes_busy;
    /* Held while a join takes lanes_busy and queues the stream's waits:
     * another thread's join that finds the bits taken must not queue its
     * work on `stream` ahead of those waits. */
    pthread_mutex_t lanes_lock;
    /* foreign_enter (cuda.c): the context made current for libfabric's GPU
     * support: the primary one, or a second context of the device made at
     * the first call (USHMEM_CUDA_FABRIC_CONTEXT=own). */
    CUcontext foreign_ctx;
    bool foreign_tried;
    struct ushmemi_device_id id;
    size_t granularity;  /* VMM allocation granularity of this device */
    int local_rank, local_size; /* this PE among the node's, as open was told */
    struct cuda_window window;  /* guarded by lock */
    bool rdma_capable;   /* cuMemCreate may ask for GPUDirect RDMA */
    pthread_mutex_t lock; /* guards regions: PE threads allocate and query concurrently */
    struct cuda_region *regions;
    size_t nregions, cap;
    struct cuda_nvml *nvml; /* NULL until the first probe of another device */
    struct cuda_nvml_procs *nvml_procs; /* ushmemi_cuda_nvml_prepare's, or NULL */
    /* The backend's kernels (cuda_amo.c, cuda_sum.c), loaded at open. */
    CUmodule amo_module;
    CUfunction amo_fn;
    CUfunction exchange_fn; /* the stream barrier's round (cuda_amo.c) */
    /* The same round for programmatic dependent launch (compute capability
     * 9.0 and up, a driver with cuLaunchKernelEx), or NULL. */
    CUmodule pdl_module;
    CUfunction exchange_pdl_fn;
    bool pdl_tried;
    enum {
        USHMEMI_CUDA_EXCHANGE_AUTO,
        USHMEMI_CUDA_EXCHANGE_KERNEL,
        USHMEMI_CUDA_EXCHANGE_MEMOPS,
    } exchange; /* USHMEM_CUDA_STREAM_BARRIER */
    uint64_t *amo_old; /* host-pinned: where the kernel leaves the old value */
    uint64_t *amo_discard; /* beside it: the old value of a queued atomic without a result */
    bool amo_warned;       /* the proxy's first atomic said what CUDA_MODULE_LOADING risks */
    pthread_mutex_t amo_lock; /* one atomic at a time: the proxy and the landing thread */
    /* keep_warm (cuda_amo.c, the proxy thread only): the atomic's kernel on
     * a stream of its own at the lowest priority, made at the first call;
     * how many were launched, and the host word where each writes its
     * number once it has run (beside amo_old). warm_off: the stream could
     * not be made, a launch failed, or the proxy stopped. warm_alone and
     * warm_checked: whether NVML showed no other process computing on the
     * device, and when it was last asked. */
    CUstream warm_stream;
    uint64_t warm_launched;
    uint64_t *warm_done;
    bool warm_off, warm_alone;
    uint64_t warm_checked;
    /* The stream reduction kernels (cuda_sum.c): one per element kind
     * that has its own (NULL for the others). */
    CUmodule reduce_module;
    CUfunction reduce_fn[USHMEMI_REDUCE_KINDS];
    /* Their one-kernel stream collective form, and the threads of its one
     * block (the most the kernel takes, up to 1024). */
    CUfunction reduce_coll_fn[USHMEMI_REDUCE_KINDS];
    unsigned reduce_coll_threads[USHMEMI_REDUCE_KINDS];
    unsigned reduce_max_blocks;
    /* Captured stream barriers' round (cuda_graph.c), loaded at open. */
    CUmodule graph_module;
    CUfunction counted_fn;
    /* The small stream collective (cuda_coll.c), loaded at open, and its
     * programmatic form (or NULL). */
    CUmodule coll_module, coll_pdl_module;
    CUfunction coll_fn, coll_pdl_fn;
    _Atomic unsigned coll_next_slot; /* the next call's completion count */
    unsigned wait_flush; /* CU_STREAM_WAIT_VALUE_FLUSH where the device has it, else 0 */
    bool nvml_tried;
};

extern const struct ushmemi_device_ops ushmemi_device_cuda_ops;

/* Logs a failed driver call once, naming the call, the values it was given
 * (fmt, printf style) and the driver's error name; returns the translated
 * status. */
ushmem_status_t ushmemi_cuda_fail(const char *call, CUresult result, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* CUresult to ushmem_status_t, without logging. */
ushmem_status_t ushmemi_cuda_status(CUresult result);

/* Makes the device's context current on the calling thread (the proxy
 * thread and the main thread both call into the backend). */
ushmem_status_t ushmemi_cuda_current(struct ushmemi_device *dev, const char *what);

/* Region list (cuda_mem.c). */
ushmem_status_t ushmemi_cuda_add_region(struct ushmemi_device *dev, const struct cuda_region *r);
bool ushmemi_cuda_take_region(struct ushmemi_device *dev, uintptr_t base,
                              enum cuda_region_kind kind, struct cuda_region *region_p);
/* Undoes a region whatever its kind (close releases what is left). */
ushmem_status_t ushmemi_cuda_release_region(struct ushmemi_device *dev,
                                            const struct cuda_region *r);

/* The ops, defined in the backend's files and gathered in cuda.c. */
ushmem_status_t ushmemi_cuda_heap_alloc(struct ushmemi_device *dev, size_t size, void **ptr_p);
void ushmemi_cuda_heap_free(struct ushmemi_device *dev, void *ptr, size_t size);
ushmem_status_t ushmemi_cuda_host_alloc(struct ushmemi_device *dev, size_t size, void **ptr_p);
void ushmemi_cuda_host_free(struct ushmemi_device *dev, void *ptr, size_t size);
ushmem_status_t ushmemi_cuda_export(struct ushmemi_device *dev, void *ptr, size_t size,
                                    struct ushmemi_ipc_handle *handle_p);
ushmem_status_t ushmemi_cuda_import(struct ushmemi_device *dev,
                                    const struct ushmemi_ipc_handle *handle, int fd, void **ptr_p);
ushmem_status_t ushmemi_cuda_stream_exchange64(struct ushmemi_device *dev, void *stream,
                                               uint64_t *const *addrs, const uint64_t *values,
                                               int nwrites, uint64_t *const *wait_addrs,
                                               const uint64_t *wait_values, int nwaits,
                                               bool shared);
ushmem_status_t ushmemi_cuda_close_import(struct ushmemi_device *dev, void *ptr, size_t size);
/* Growth of the heap (cuda_grow.c). */
ushmem_status_t ushmemi_cuda_heap_reserve(struct ushmemi_device *dev, size_t size, size_t reserve,
                                          void **ptr_p);
ushmem_status_t ushmemi_cuda_heap_grow(struct ushmemi_device *dev, void *base, size_t old_size,
                                       size_t new_size, char *why_p, size_t why_len);
void ushmemi_cuda_heap_shrink(struct ushmemi_device *dev, void *base, size_t old_size,
                              size_t new_size);
ushmem_status_t ushmemi_cuda_export_chunk(struct ushmemi_device *dev, void *base, size_t old_size,
                                          size_t new_size, struct ushmemi_ipc_handle *handle_p);
ushmem_status_t ushmemi_cuda_import_chunk(struct ushmemi_device *dev, void *peer_base,
                                          size_t old_size, size_t new_size,
                                          const struct ushmemi_ipc_handle *handle, int fd);
void ushmemi_cuda_close_chunk(struct ushmemi_device *dev, void *peer_base, size_t old_size,
                              size_t new_size);
ushmem_status_t ushmemi_cuda_memory_size(struct ushmemi_device *dev, size_t *bytes_p);
/* The heap's allocation properties (pinned, fd-exportable, on this device). */
CUmemAllocationProp ushmemi_cuda_heap_prop(const struct ushmemi_device *dev);
/* Maps handle over [va, va + len) inside a reservation and opens it to this
 * device; on failure the range is unmapped again (logged). */
ushmem_status_t ushmemi_cuda_map_at(struct ushmemi_device *dev, CUmemGenericAllocationHandle handle,
                                    CUdeviceptr va, size_t len, const char *what);
/* Unmaps and releases the chunks [from, r->nchunks) of r, last first,
 * closing their exports; r->nchunks becomes from. */
void ushmemi_cuda_unmap_chunks(struct ushmemi_device *dev, struct cuda_region *r, size_t from);
ushmem_status_t ushmemi_cuda_copy(struct ushmemi_device *dev, void *dst, const void *src,
                                  size_t len);
ushmem_status_t ushmemi_cuda_memset(struct ushmemi_device *dev, void *dst, int value, size_t len);
ushmem_status_t ushmemi_cuda_amo(struct ushmemi_device *dev, void *addr, unsigned op, size_t size,
                                 uint64_t operand, uint64_t compare, uint64_t *old_p);
/* Loads every kernel of the backend and the atomic's host words (cuda_open);
 * ushmemi_cuda_amo_close releases what the atomic kernel holds (cuda_close). */
ushmem_status_t ushmemi_cuda_kernels_load(struct ushmemi_device *dev);
ushmem_status_t ushmemi_cuda_reduce_load(struct ushmemi_device *dev);
/* The stream reduction kernels' PTX (malloc'd, NUL-terminated, *len_p
 * bytes without the NUL), as ushmemi_cuda_reduce_load hands it to the
 * driver; NULL without memory. */
char *ushmemi_cuda_reduce_ptx(size_t *len_p);
/* For tests of that PTX: the kernel that carries op on kind, the op number
 * it is given (*code_p) and how many of its elements one element of kind
 * is (*per_p); NULL for a pair that ushmemi_reduce_takes refuses. The name
 * is overwritten by the next call. */
const char *ushmemi_cuda_reduce_kernel(enum ushmemi_reduce_op op, enum ushmemi_reduce_kind kind,
                                       unsigned *code_p, unsigned *per_p);
void ushmemi_cuda_amo_close(struct ushmemi_device *dev);
ushmem_status_t ushmemi_cuda_exchange_kernel(struct ushmemi_device *dev, void *stream,
                                             uint64_t *const *addrs, const uint64_t *values,
                                             int nwrites, uint64_t *const *wait_addrs,
                                             const uint64_t *wait_values, int nwaits);
ushmem_status_t ushmemi_cuda_sync(struct ushmemi_device *dev);
/* Makes `stream` wait for the copies dealt to the other lanes (see struct
 * ushmemi_device); the caller has made the context current. */
ushmem_status_t ushmemi_cuda_lanes_join(struct ushmemi_device *dev);
ushmem_status_t ushmemi_cuda_store(struct ushmemi_device *dev, void *addr, uint64_t value,
                                   size_t size, const struct ushmemi_dev_then *then);
ushmem_status_t ushmemi_cuda_store_amo_async(struct ushmemi_device *dev, void *store_addr,
                                             uint64_t store_value, size_t store_len, void *addr,
                                             unsigned op, size_t size, uint64_t operand,
                                             const struct ushmemi_dev_then *then);
ushmem_status_t ushmemi_cuda_amo_async(struct ushmemi_device *dev, void *addr, unsigned op,
                                       size_t size, uint64_t operand, uint64_t compare,
                                       uint64_t *result, const struct ushmemi_dev_then *then);
bool ushmemi_cuda_keep_warm(struct ushmemi_device *dev, const uint64_t *word);
/* Before the heap it reads goes (cuda_close): the last such kernel run. */
void ushmemi_cuda_warm_close(struct ushmemi_device *dev);
/* Finds NVML's process query and this device's handle, on the thread that
 * opens the device (loading NVML can take a while): after it,
 * ushmemi_cuda_compute_processes only asks. */
void ushmemi_cuda_nvml_prepare(struct ushmemi_device *dev);
/* How many distinct processes NVML lists with a compute context on this
 * device, busy or not (this one among them; a container may see none), or
 * -1 when NVML cannot tell (cuda_p2p.c). */
int ushmemi_cuda_compute_processes(struct ushmemi_device *dev);
ushmem_status_t ushmemi_cuda_write64(struct ushmemi_device *dev, uint64_t *addr, uint64_t value);
ushmem_status_t ushmemi_cuda_stream_copy(struct ushmemi_device *dev, void *stream, void *dst,
                                         const void *src, size_t len);
ushmem_status_t ushmemi_cuda_stream_copy_beside(struct ushmemi_device *dev, void *stream,
                                                void *dst, const void *src, size_t len,
                                                void **join_p);
ushmem_status_t ushmemi_cuda_stream_join(struct ushmemi_device *dev, void *stream, void *join);
ushmem_status_t ushmemi_cuda_stream_write64(struct ushmemi_device *dev, void *stream,
                                            uint64_t *addr, uint64_t value);
ushmem_status_t ushmemi_cuda_stream_wait64(struct ushmemi_device *dev, void *stream,
                                           const uint64_t *addr, uint64_t value,
                                           enum ushmemi_stream_cmp cmp);
ushmem_status_t ushmemi_cuda_stream_reduce(struct ushmemi_device *dev, void *stream, void *dst,
                                           const void *const *srcs, int nsrc,
                                           enum ushmemi_reduce_op op,
                                           enum ushmemi_reduce_kind kind, size_t count);
ushmem_status_t ushmemi_cuda_stream_alloc(struct ushmemi_device *dev, void *stream, size_t size,
                                          void **ptr_p);
ushmem_status_t ushmemi_cuda_stream_free(struct ushmemi_device *dev, void *stream, void *ptr);
/* Unloads the reduction kernels (cuda_close). */
void ushmemi_cuda_reduce_close(struct ushmemi_device *dev);
/* CUDA graphs (cuda_graph.c): the counted round loaded at open (from
 * ushmemi_cuda_kernels_load) and unloaded at close. */
ushmem_status_t ushmemi_cuda_graph_load(struct ushmemi_device *dev);
void ushmemi_cuda_graph_close(struct ushmemi_device *dev);
ushmem_status_t ushmemi_cuda_stream_capturing(struct ushmemi_device *dev, void *stream,
                                              bool *capturing_p);
ushmem_status_t ushmemi_cuda_stream_exchange_counted(struct ushmemi_device *dev, void *stream,
                                                     uint64_t *const *addrs,
                                                     uint64_t *const *counts, int nwrites,
                                                     uint64_t *const *wait_addrs,
                                                     uint64_t *const *expect, int nwaits);
/* Launches fn as blocks x threads on stream with programmatic stream
 * serialization (cuLaunchKernelEx; the caller checked it exists): the next
 * kernel so launched may start before this one ends (cuda_amo.c). */
CUresult ushmemi_cuda_launch_programmatic(CUfunction fn, unsigned blocks, unsigned threads,
                                          void *stream, void **params);
/* The small stream collective (cuda_coll.c): loaded at open (after the
 * barrier round's programmatic form was tried) and unloaded at close. */
ushmem_status_t ushmemi_cuda_coll_load(struct ushmemi_device *dev);
/* Its PTX, as the driver gets it (for test/unit/cuda/ptx_coll.c). */
const char *ushmemi_cuda_coll_ptx(bool pdl);
/* The atomic's kernel (cuda_amo.c) as the driver gets it, for the tests. */
const char *ushmemi_cuda_amo_ptx(void);
/* Its head (the registers and the first round, after the entry line and its
 * opening brace) or its tail (the second round and the closing brace), for
 * kernels that put their own work between the rounds: the stream
 * reductions' one-kernel form, USHMEMI_CUDA_REDUCE_COLL_<kind> in the
 * reduction module (cuda_sum.c), whose tail counts the blocks in
 * USHMEMI_CUDA_REDUCE_COLL_counts[USHMEMI_CUDA_COLL_SLOTS] there. */
const char *ushmemi_cuda_coll_frame(bool tail);
#define USHMEMI_CUDA_REDUCE_COLL "ushmemi_reduce_coll"
#define USHMEMI_CUDA_COLL_SLOTS 1024
/* Where that kernel's loop finds its arguments in the parameter block
 * (cuda_coll.c's struct coll_param): the sources' count (ncopy), the
 * elements (len), the op (the word after), dst[0] and src[]. */
#define USHMEMI_CUDA_COLL_AT_NSRC 8
#define USHMEMI_CUDA_COLL_AT_COUNT 16
#define USHMEMI_CUDA_COLL_AT_OP 24
#define USHMEMI_CUDA_COLL_AT_DST 544
#define USHMEMI_CUDA_COLL_AT_SRC 680
#define USHMEMI_CUDA_COLL_PARAM_BYTES 816 /* the whole block */
/* That kernel for op on count elements of kind, with the op number it is
 * given (*code_p), its element count (*count_p) and the threads of its
 * block (*threads_p); NULL for a pair ushmemi_reduce_takes refuses
 * (cuda_sum.c). */
CUfunction ushmemi_cuda_reduce_coll_fn(struct ushmemi_device *dev, enum ushmemi_reduce_op op,
                                       enum ushmemi_reduce_kind kind, size_t count,
                                       unsigned *code_p, size_t *count_p, unsigned *threads_p);
void ushmemi_cuda_coll_close(struct ushmemi_device *dev);
ushmem_status_t ushmemi_cuda_stream_coll(struct ushmemi_device *dev, void *stream,
                                         const struct ushmemi_stream_coll *c);
ushmem_status_t ushmemi_cuda_pointer_query(struct ushmemi_device *dev, const void *ptr,
                                           struct ushmemi_ptr_attr *attr_p);
ushmem_status_t ushmemi_cuda_p2p_probe(struct ushmemi_device *dev,
                                       const struct ushmemi_device_id *peer,
                                       struct ushmemi_p2p_caps *caps_p);
/* Unloads NVML if the probe loaded it (cuda_p2p.c). */
void ushmemi_cuda_nvml_close(struct ushmemi_device *dev);

/* "0000:3b:00.0" of a device, in the form pcie.c parses; "" when the driver
 * gives none. */
void ushmemi_cuda_pci_bdf(CUdevice cu_dev, char *bdf_p, size_t len);
/* "GPU-xxxxxxxx-xxxx-..." as nvidia-smi prints UUIDs, for messages. */
void ushmemi_cuda_uuid_text(const uint8_t uuid[16], char *buf, size_t len);

#endif
