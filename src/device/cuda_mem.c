/* The cuda backend's memory: the symmetric heap as pinned device memory from
 * the virtual memory API (cuMemCreate + cuMemAddressReserve + cuMemMap), so
 * that it exports as a POSIX file descriptor; imports of peers' heaps as new
 * mappings of their handles; pinned host memory; copies and memsets on the
 * backend's stream; pointer queries. It owns the list of regions it handed
 * out, each with what must be undone to give it back. */
#include "cuda_private.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/log.h"

/* What the exporter writes into ushmemi_ipc_handle.data for the importer:
 * the importer must map the whole allocation, whose size is the padded one,
 * not the size the caller asked for. */
struct cuda_export_meta {
    uint32_t magic;
    uint32_t version;
    uint64_t size;    /* the allocation's padded size */
    uint8_t uuid[16]; /* the exporting device */
    uint32_t slot;    /* its slot in the exporter's window, or NO_SLOT */
    uint32_t pad;
    /* export_mem: the address space the exporter holds behind its heap,
     * which the importer holds too; export_chunk: where the chunk lies
     * from the heap's base (size is then the chunk's). */
    uint64_t reserve;
    uint64_t offset;
};
_Static_assert(sizeof(struct cuda_export_meta) <= sizeof(((struct ushmemi_ipc_handle *)0)->data),
               "the export metadata fits the handle");

#define CUDA_EXPORT_MAGIC 0x75636461u /* "ucda" */
#define CUDA_EXPORT_VERSION 3u
#define NO_SLOT UINT32_MAX

static CUdeviceptr as_devptr(const void *p) { return (CUdeviceptr)(uintptr_t)p; }

static size_t round_up(size_t size, size_t to) { return (size + to - 1) / to * to; }

/* Imports are reserved at this alignment, and heaps at least at it:
 * USHMEMI_HEAP_ALIGNMENT for the heap's contract, the granularity for the
 * driver's. Both are powers of two. */
static size_t va_alignment(const struct ushmemi_device *dev)
{
    return dev->granularity > USHMEMI_HEAP_ALIGNMENT ? dev->granularity : USHMEMI_HEAP_ALIGNMENT;
}

static CUmemAccessDesc access_for(const struct ushmemi_device *dev)
{
    CUmemAccessDesc desc;
    memset(&desc, 0, sizeof(desc));
    desc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    desc.location.id = dev->ordinal;
    desc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    return desc;
}

ushmem_status_t ushmemi_cuda_add_region(struct ushmemi_device *dev, const struct cuda_region *r)
{
    ushmem_status_t status = USHMEM_OK;

    pthread_mutex_lock(&dev->lock);
    if (dev->nregions == dev->cap) {
        size_t cap = dev->cap ? dev->cap * 2 : 16;
        struct cuda_region *grown = realloc(dev->regions, cap * sizeof(*grown));
        if (grown == NULL) {
            ushmemi_error("cuda backend: cannot grow the region list to %zu entries", cap);
            status = USHMEM_ERR_NO_MEMORY;
            goto unlock;
        }
        dev->regions = grown;
        dev->cap = cap;
    }
    dev->regions[dev->nregions++] = *r;
unlock:
    pthread_mutex_unlock(&dev->lock);
    return status;
}

bool ushmemi_cuda_take_region(struct ushmemi_device *dev, uintptr_t base,
                              enum cuda_region_kind kind, struct cuda_region *region_p)
{
    bool found = false;

    pthread_mutex_lock(&dev->lock);
    for (size_t i = 0; i < dev->nregions; i++) {
        if (dev->regions[i].base == base && dev->regions[i].kind == kind) {
            *region_p = dev->regions[i];
            dev->regions[i] = dev->regions[--dev->nregions];
            found = true;
            break;
        }
    }
    pthread_mutex_unlock(&dev->lock);
    return found;
}

/* Frees the window slot at va; the last slot to go frees the window's
 * reservation. Returns what freeing it returned (CUDA_SUCCESS otherwise). */
static CUresult give_back_slot(struct ushmemi_device *dev, CUdeviceptr va)
{
    struct cuda_window *w = &dev->window;
    CUresult r = CUDA_SUCCESS;

    pthread_mutex_lock(&dev->lock);
    w->used &= ~((uint64_t)1 << ((va - w->va) / w->stride));
    if (w->used == 0) {
        r = ushmemi_cu.cuMemAddressFree(w->va, w->stride * w->slots);
        memset(w, 0, sizeof(*w));
    }
    pthread_mutex_unlock(&dev->lock);
    return r;
}

/* Unmap, free the reservation, release the handle: the reverse of the map.
 * A mapping in a slot of the window leaves the reservation to the window,
 * which the last slot to go frees. */
static ushmem_status_t unmap_mapping(struct ushmemi_device *dev, CUdeviceptr va, size_t size,
                                     size_t reserve, CUmemGenericAllocationHandle handle,
                                     bool in_window)
{
    ushmem_status_t status = USHMEM_OK;
    CUresult r = ushmemi_cu.cuMemUnmap(va, size);
    if (r != CUDA_SUCCESS)
        status = ushmemi_cuda_fail("cuMemUnmap", r, "0x%llx, %zu", (unsigned long long)va, size);
    if (in_window) {
        r = give_back_slot(dev, va);
        if (r != CUDA_SUCCESS && status == USHMEM_OK)
            status = ushmemi_cuda_fail("cuMemAddressFree", r, "the window holding 0x%llx",
                                       (unsigned long long)va);
    } else {
        r = ushmemi_cu.cuMemAddressFree(va, reserve > size ? reserve : size);
        if (r != CUDA_SUCCESS && status == USHMEM_OK)
            status = ushmemi_cuda_fail("cuMemAddressFree", r, "0x%llx, %zu",
                                       (unsigned long long)va, reserve > size ? reserve : size);
    }
    r = ushmemi_cu.cuMemRelease(handle);
    if (r != CUDA_SUCCESS && status == USHMEM_OK)
        status = ushmemi_cuda_fail("cuMemRelease", r, "handle 0x%llx of 0x%llx",
                                   (unsigned long long)handle, (unsigned long long)va);
    return status;
}

ushmem_status_t ushmemi_cuda_release_region(struct ushmemi_device *dev,
                                            const struct cuda_region *r)
{
    ushmem_status_t status = USHMEM_OK;

    if (r->kind == CUDA_REGION_HOST) {
        CUresult res = ushmemi_cu.cuMemFreeHost((void *)r->base);
        if (res != CUDA_SUCCESS)
            status = ushmemi_cuda_fail("cuMemFreeHost", res, "0x%llx",
                                       (unsigned long long)r->base);
        return status;
    }
    struct cuda_region copy = *r;
    ushmemi_cuda_unmap_chunks(dev, &copy, 0);
    free(copy.chunks);
    status = unmap_mapping(dev, (CUdeviceptr)r->base, r->size, r->reserve, r->handle,
                           r->in_window);
    if (r->fd >= 0)
        close(r->fd);
    return status;
}

/* Maps the handle over [va, va + len), reserved by the caller, and opens it
 * to this device; on failure the range is unmapped again. */
ushmem_status_t ushmemi_cuda_map_at(struct ushmemi_device *dev, CUmemGenericAllocationHandle handle,
                                    CUdeviceptr va, size_t len, const char *what)
{
    CUresult r = ushmemi_cu.cuMemMap(va, len, 0, handle, 0);
    if (r != CUDA_SUCCESS)
        return ushmemi_cuda_fail("cuMemMap", r, "0x%llx, %zu bytes of %s",
                                 (unsigned long long)va, len, what);
    CUmemAccessDesc desc = access_for(dev);
    r = ushmemi_cu.cuMemSetAccess(va, len, &desc, 1);
    if (r != CUDA_SUCCESS) {
        ushmem_status_t status = ushmemi_cuda_fail(
            "cuMemSetAccess", r, "0x%llx, %zu bytes of %s, read/write for device %d",
            (unsigned long long)va, len, what, dev->ordinal);
        ushmemi_cu.cuMemUnmap(va, len);
        return status;
    }
    return USHMEM_OK;
}

/* Reserves an aligned range of `reserve` bytes (at least len), maps the
 * handle over its first len bytes and opens them to this device; on failure
 * nothing is left behind but the handle. */
static ushmem_status_t map_handle(struct ushmemi_device *dev, CUmemGenericAllocationHandle handle,
                                  size_t len, size_t reserve, size_t align, const char *what,
                                  CUdeviceptr *va_p)
{
    CUdeviceptr va = 0;

    if (reserve < len)
        reserve = len;
    CUresult r = ushmemi_cu.cuMemAddressReserve(&va, reserve, align, 0, 0);
    if (r != CUDA_SUCCESS)
        return ushmemi_cuda_fail("cuMemAddressReserve", r, "%zu bytes aligned to %zu for %s",
                                 reserve, align, what);
    ushmem_status_t status = ushmemi_cuda_map_at(dev, handle, va, len, what);
    if (status != USHMEM_OK) {
        ushmemi_cu.cuMemAddressFree(va, reserve);
        return status;
    }
    *va_p = va;
    return USHMEM_OK;
}

/* The first heap of a node with several PEs opens the window: local_size
 * slots of the heap's padded size rounded up to its alignment. No window
 * (a second heap, one PE, too many, no address space) is no error: the
 * heap is mapped on its own and device code loads each peer's base. */
static void open_window(struct ushmemi_device *dev, size_t len, size_t align)
{
    struct cuda_window *w = &dev->window;
    if (w->va != 0 || dev->local_size < 2 || dev->local_size > USHMEMI_CUDA_WINDOW_SLOTS)
        return;
    size_t stride = round_up(len, align);
    if (stride > SIZE_MAX / (size_t)dev->local_size)
        return;
    CUdeviceptr va = 0;
    CUresult r = ushmemi_cu.cuMemAddressReserve(&va, stride * (size_t)dev->local_size, align, 0, 0);
    if (r != CUDA_SUCCESS) {
        ushmemi_debug("cuda backend: no window for the node's %d heaps of %zu bytes (CUresult "
                      "%d); each is mapped on its own", dev->local_size, stride, (int)r);
        return;
    }
    *w = (struct cuda_window){.va = va, .stride = stride, .slots = (unsigned)dev->local_size};
}

/* Takes slot `slot` of the window for `len` bytes aligned to `align`; 0
 * when there is no such free slot. */
static CUdeviceptr take_slot(struct ushmemi_device *dev, unsigned slot, size_t len, size_t align)
{
    struct cuda_window *w = &dev->window;
    CUdeviceptr va = 0;

    pthread_mutex_lock(&dev->lock);
    if (w->va != 0 && slot < w->slots && len <= w->stride && !(w->used >> slot & 1) &&
        (w->va + (CUdeviceptr)slot * w->stride) % align == 0) {
        w->used |= (uint64_t)1 << slot;
        va = w->va + (CUdeviceptr)slot * w->stride;
    }
    pthread_mutex_unlock(&dev->lock);
    return va;
}

/* Maps into the slot taken with take_slot, or gives the slot back (freeing
 * the window if nothing else holds it) when the map fails. */
static ushmem_status_t map_in_slot(struct ushmemi_device *dev, CUmemGenericAllocationHandle handle,
                                   CUdeviceptr va, size_t len, const char *what)
{
    ushmem_status_t status = ushmemi_cuda_map_at(dev, handle, va, len, what);
    if (status != USHMEM_OK)
        give_back_slot(dev, va);
    return status;
}

CUmemAllocationProp ushmemi_cuda_heap_prop(const struct ushmemi_device *dev)
{
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof(prop));
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = dev->ordinal;
    prop.allocFlags.gpuDirectRDMACapable = dev->rdma_capable;
    return prop;
}

ushmem_status_t ushmemi_cuda_heap_alloc(struct ushmemi_device *dev, size_t size, void **ptr_p)
{
    return ushmemi_cuda_heap_reserve(dev, size, size, ptr_p);
}

/* The heap: one allocation of `size` bytes at the start of `reserve` bytes
 * of address space (a slot of the node's window, whose stride is then the
 * reserve), which heap_grow maps chunks into (cuda_grow.c). */
ushmem_status_t ushmemi_cuda_heap_reserve(struct ushmemi_device *dev, size_t size, size_t reserve,
                                          void **ptr_p)
{
    ushmem_status_t status;
    CUmemGenericAllocationHandle handle;
    CUdeviceptr va;

    if (size == 0 || reserve < size) {
        ushmemi_error("cuda backend: heap_reserve of %zu bytes in a reserve of %zu", size,
                      reserve);
        return USHMEM_ERR_INVALID_PARAM;
    }
    status = ushmemi_cuda_current(dev, "heap_alloc");
    if (status != USHMEM_OK)
        return status;

    CUmemAllocationProp prop = ushmemi_cuda_heap_prop(dev);
    size_t len = round_up(size, dev->granularity);
    reserve = round_up(reserve, dev->granularity);
    if (reserve < len)
        reserve = len;

    CUresult r = ushmemi_cu.cuMemCreate(&handle, len, &prop, 0);
    if (r != CUDA_SUCCESS)
        return ushmemi_cuda_fail("cuMemCreate", r,
                                 "%zu bytes (%zu asked) of pinned, fd-exportable memory on "
                                 "device %d",
                                 len, size, dev->ordinal);
    size_t align = ushmemi_heap_alignment_for(reserve);
    if (align < va_alignment(dev))
        align = va_alignment(dev);
    open_window(dev, reserve, align);
    va = take_slot(dev, (unsigned)dev->local_rank, reserve, align);
    bool in_window = va != 0;
    if (in_window)
        status = map_in_slot(dev, handle, va, len, "the heap");
    else
        status = map_handle(dev, handle, len, reserve, align, "the heap", &va);
    if (status != USHMEM_OK)
        goto release_handle;
    struct cuda_region region = {.base = (uintptr_t)va, .size = len, .kind = CUDA_REGION_HEAP,
                                 .handle = handle, .fd = -1, .in_window = in_window,
                                 .reserve = reserve};
    status = ushmemi_cuda_add_region(dev, &region);
    if (status != USHMEM_OK) {
        unmap_mapping(dev, va, len, reserve, handle, in_window);
        return status;
    }
    *ptr_p = (void *)(uintptr_t)va;
    return USHMEM_OK;

release_handle:
    ushmemi_cu.cuMemRelease(handle);
    return status;
}

void ushmemi_cuda_heap_free(struct ushmemi_device *dev, void *ptr, size_t size)
{
    struct cuda_region r;

    if (ptr == NULL)
        return;
    if (!ushmemi_cuda_take_region(dev, (uintptr_t)ptr, CUDA_REGION_HEAP, &r)) {
        ushmemi_error("cuda backend: heap_free of %p (%zu bytes), which is not a heap", ptr, size);
        return;
    }
    if (ushmemi_cuda_current(dev, "heap_free") != USHMEM_OK)
        return;
    /* Copies still in flight must not land in memory being given back. */
    ushmemi_cuda_sync(dev);
    ushmemi_cuda_release_region(dev, &r);
}

ushmem_status_t ushmemi_cuda_host_alloc(struct ushmemi_device *dev, size_t size, void **ptr_p)
{
    void *ptr = NULL;

    if (size == 0) {
        ushmemi_error("cuda backend: host_alloc of 0 bytes");
        return USHMEM_ERR_INVALID_PARAM;
    }
    ushmem_status_t status = ushmemi_cuda_current(dev, "host_alloc");
    if (status != USHMEM_OK)
        return status;
    /* Pinned, visible to every context and mapped into the device's view;
     * never managed memory, whose pages can migrate away from the host. */
    CUresult r = ushmemi_cu.cuMemHostAlloc(&ptr, size,
                                           CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP);
    if (r != CUDA_SUCCESS)
        return ushmemi_cuda_fail("cuMemHostAlloc", r, "%zu bytes, PORTABLE|DEVICEMAP", size);
    struct cuda_region region = {.base = (uintptr_t)ptr, .size = size, .kind = CUDA_REGION_HOST,
                                 .handle = 0, .fd = -1};
    status = ushmemi_cuda_add_region(dev, &region);
    if (status != USHMEM_OK) {
        ushmemi_cu.cuMemFreeHost(ptr);
        return status;
    }
    *ptr_p = ptr;
    return USHMEM_OK;
}

void ushmemi_cuda_host_free(struct ushmemi_device *dev, void *ptr, size_t size)
{
    struct cuda_region r;

    if (ptr == NULL)
        return;
    if (!ushmemi_cuda_take_region(dev, (uintptr_t)ptr, CUDA_REGION_HOST, &r)) {
        ushmemi_error("cuda backend: host_free of %p (%zu bytes), which host_alloc did not return",
                      ptr, size);
        return;
    }
    if (ushmemi_cuda_current(dev, "host_free") == USHMEM_OK)
        ushmemi_cuda_release_region(dev, &r);
}

ushmem_status_t ushmemi_cuda_export(struct ushmemi_device *dev, void *ptr, size_t size,
                                    struct ushmemi_ipc_handle *handle_p)
{
    struct cuda_export_meta meta;
    bool found = false;
    int fd = -1;

    ushmem_status_t status = ushmemi_cuda_current(dev, "export");
    if (status != USHMEM_OK)
        return status;
    memset(&meta, 0, sizeof(meta));
    pthread_mutex_lock(&dev->lock);
    for (size_t i = 0; i < dev->nregions && !found; i++) {
        struct cuda_region *r = &dev->regions[i];
        if (r->kind != CUDA_REGION_HEAP || r->base != (uintptr_t)ptr || size > r->size)
            continue;
        found = true;
        /* One export per allocation, kept until heap_free: every peer takes
         * its own copy of this fd. */
        if (r->fd < 0) {
            int new_fd = -1;
            CUresult res = ushmemi_cu.cuMemExportToShareableHandle(
                &new_fd, r->handle, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
            if (res != CUDA_SUCCESS) {
                status = ushmemi_cuda_fail("cuMemExportToShareableHandle", res,
                                           "handle of %p (%zu bytes), POSIX fd", ptr, r->size);
                break;
            }
            r->fd = new_fd;
        }
        fd = r->fd;
        meta.magic = CUDA_EXPORT_MAGIC;
        meta.version = CUDA_EXPORT_VERSION;
        meta.size = r->size;
        memcpy(meta.uuid, dev->id.uuid, sizeof(meta.uuid));
        meta.slot = r->in_window ? (uint32_t)((r->base - dev->window.va) / dev->window.stride)
                                 : NO_SLOT;
        meta.reserve = r->reserve;
    }
    pthread_mutex_unlock(&dev->lock);

    if (!found) {
        ushmemi_error("cuda backend: export of %p (%zu bytes), which is not the start of a heap "
                      "allocation of at least that size", ptr, size);
        return USHMEM_ERR_INVALID_PARAM;
    }
    if (status != USHMEM_OK)
        return status;
    memset(handle_p, 0, sizeof(*handle_p));
    handle_p->fd = fd;
    handle_p->size = size;
    memcpy(handle_p->data, &meta, sizeof(meta));
    return USHMEM_OK;
}

/* What the driver says about an imported mapping: the core relies on it
 * being device memory that the CPU must not touch. */
static void describe_import(struct ushmemi_device *dev, CUdeviceptr va, size_t len,
                            const uint8_t uuid[16])
{
    if (ushmemi_log_level < USHMEMI_LOG_DEBUG)
        return;
    struct ushmemi_ptr_attr attr;
    char peer[48];
    ushmemi_cuda_uuid_text(uuid, peer, sizeof(peer));
    if (ushmemi_cuda_pointer_query(dev, (const void *)(uintptr_t)va, &attr) != USHMEM_OK)
        return;
    ushmemi_debug("cuda backend: imported %zu bytes of %s's memory at 0x%llx; pointer query: "
                  "%s, host accessible %s, device ordinal %d",
                  len, peer, (unsigned long long)va,
                  attr.kind == USHMEMI_MEM_DEVICE ? "device memory"
                  : attr.kind == USHMEMI_MEM_HOST ? "host memory"
                                                  : "unknown memory",
                  attr.host_accessible ? "yes" : "no", attr.device_ordinal);
}

ushmem_status_t ushmemi_cuda_import(struct ushmemi_device *dev,
                                    const struct ushmemi_ipc_handle *handle, int fd, void **ptr_p)
{
    ushmem_status_t status;
    struct cuda_export_meta meta;
    CUmemGenericAllocationHandle mem;
    CUdeviceptr va;

    memcpy(&meta, handle->data, sizeof(meta));
    if (meta.magic != CUDA_EXPORT_MAGIC || meta.version != CUDA_EXPORT_VERSION) {
        ushmemi_error("cuda backend: import of fd %d: the handle was not made by this version of "
                      "the cuda backend (magic 0x%x, version %u); every PE must run the same "
                      "ushmem and backend", fd, meta.magic, meta.version);
        status = USHMEM_ERR_INVALID_PARAM;
        goto close_fd;
    }
    if (meta.size < handle->size || meta.size == 0 || meta.size % dev->granularity != 0) {
        ushmemi_error("cuda backend: import of fd %d: the exported allocation of %llu bytes does "
                      "not cover the %llu bytes asked for or is not a multiple of this device's "
                      "granularity %zu", fd, (unsigned long long)meta.size,
                      (unsigned long long)handle->size, dev->granularity);
        status = USHMEM_ERR_INVALID_PARAM;
        goto close_fd;
    }
    status = ushmemi_cuda_current(dev, "import");
    if (status != USHMEM_OK)
        goto close_fd;
    CUresult r = ushmemi_cu.cuMemImportFromShareableHandle(
        &mem, (void *)(uintptr_t)fd, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    if (r != CUDA_SUCCESS) {
        status = ushmemi_cuda_fail("cuMemImportFromShareableHandle", r, "fd %d, POSIX fd", fd);
        goto close_fd;
    }
    /* The handle holds the memory now; the fd has done its work. */
    close(fd);
    fd = -1;
    size_t len = (size_t)meta.size;
    /* As much address space behind the peer's heap as the peer holds, for
     * the chunks it grows by. */
    size_t reserve = meta.reserve > len ? (size_t)meta.reserve : len;
    /* Into the slot the peer's heap has in its own window, which is its
     * slot in this one too: the same object is then the same distance from
     * each heap. */
    va = meta.slot != NO_SLOT ? take_slot(dev, meta.slot, reserve, va_alignment(dev)) : 0;
    bool in_window = va != 0;
    if (in_window)
        status = map_in_slot(dev, mem, va, len, "a peer's heap");
    else
        status = map_handle(dev, mem, len, reserve, va_alignment(dev), "a peer's heap", &va);
    if (status != USHMEM_OK) {
        if (memcmp(meta.uuid, dev->id.uuid, sizeof(meta.uuid)) != 0)
            ushmemi_error("cuda backend: mapping another GPU's memory needs peer access between "
                          "the two devices; without it, USHMEM_IPC=0 reaches the peer over the "
                          "fabric instead");
        goto release;
    }
    struct cuda_region region = {.base = (uintptr_t)va, .size = len, .kind = CUDA_REGION_IMPORT,
                                 .handle = mem, .fd = -1, .in_window = in_window,
                                 .reserve = reserve};
    status = ushmemi_cuda_add_region(dev, &region);
    if (status != USHMEM_OK) {
        unmap_mapping(dev, va, len, reserve, mem, in_window);
        return status;
    }
    describe_import(dev, va, len, meta.uuid);
    *ptr_p = (void *)(uintptr_t)va;
    return USHMEM_OK;

release:
    ushmemi_cu.cuMemRelease(mem);
close_fd:
    if (fd >= 0)
        close(fd);
    return status;
}

ushmem_status_t ushmemi_cuda_close_import(struct ushmemi_device *dev, void *ptr, size_t size)
{
    struct cuda_region r;

    if (!ushmemi_cuda_take_region(dev, (uintptr_t)ptr, CUDA_REGION_IMPORT, &r)) {
        ushmemi_error("cuda backend: close_import of %p (%zu bytes), which import did not return",
                      ptr, size);
        return USHMEM_ERR_INVALID_PARAM;
    }
    ushmem_status_t status = ushmemi_cuda_current(dev, "close_import");
    if (status != USHMEM_OK)
        return status;
    /* Our own copies into the peer's heap finish before its mapping goes. */
    ushmemi_cuda_sync(dev);
    return ushmemi_cuda_release_region(dev, &r);
}

/* The stream calls: the program's stream, in its order. The context of the
 * stream is the program's; ours is made current only for the driver's
 * sake (a stream of another context is refused by the driver itself). */
ushmem_status_t ushmemi_cuda_stream_copy(struct ushmemi_device *dev, void *stream, void *dst,
                                         const void *src, size_t len)
{
    if (len == 0)
        return USHMEM_OK;
    ushmem_status_t status = ushmemi_cuda_current(dev, "stream copy");
    if (status != USHMEM_OK)
        return status;
    CUresult r = ushmemi_cu.cuMemcpyAsync(as_devptr(dst), as_devptr(src), len, (CUstream)stream);
    if (r != CUDA_SUCCESS)
        return ushmemi_cuda_fail("cuMemcpyAsync", r, "dst %p, src %p, %zu bytes, stream %p", dst,
                                 src, len, stream);
    return USHMEM_OK;
}

/* A stream of its own for each such copy (created here, released once its
 * work is done): one stream shared by every caller would chain unrelated
 * streams' copies, and a program's own waits between those streams could
 * then close a cycle. Meant for copies large enough (a collective's share
 * of megabytes) that creating a stream costs little beside them. */
struct cuda_beside {
    CUstream side;
    CUevent done;
};

ushmem_status_t ushmemi_cuda_stream_copy_beside(struct ushmemi_device *dev, void *stream,
                                                void *dst, const void *src, size_t len,
                                                void **join_p)
{
    *join_p = NULL;
    ushmem_status_t status = ushmemi_cuda_current(dev, "stream copy beside");
    if (status != USHMEM_OK)
        return status;
    struct cuda_beside *b = calloc(1, sizeof(*b));
    CUevent fork = NULL;
    const char *what = "calloc";
    CUresult r = CUDA_ERROR_OUT_OF_MEMORY;
    if (b == NULL)
        goto fail;
    what = "cuStreamCreate";
    r = ushmemi_cu.cuStreamCreate(&b->side, CU_STREAM_NON_BLOCKING);
    if (r != CUDA_SUCCESS)
        goto fail;
    what = "cuEventCreate";
    r = ushmemi_cu.cuEventCreate(&fork, CU_EVENT_DISABLE_TIMING);
    if (r == CUDA_SUCCESS)
        r = ushmemi_cu.cuEventCreate(&b->done, CU_EVENT_DISABLE_TIMING);
    if (r != CUDA_SUCCESS)
        goto fail;
    what = "cuEventRecord/cuStreamWaitEvent (fork)";
    r = ushmemi_cu.cuEventRecord(fork, (CUstream)stream);
    if (r == CUDA_SUCCESS)
        r = ushmemi_cu.cuStreamWaitEvent(b->side, fork, 0);
    if (r != CUDA_SUCCESS)
        goto fail;
    what = "cuMemcpyAsync";
    r = ushmemi_cu.cuMemcpyAsync(as_devptr(dst), as_devptr(src), len, b->side);
    if (r != CUDA_SUCCESS)
        goto fail;
    what = "cuEventRecord (done)";
    r = ushmemi_cu.cuEventRecord(b->done, b->side);
    if (r != CUDA_SUCCESS)
        goto fail;
    ushmemi_cu.cuEventDestroy(fork);
    *join_p = b;
    return USHMEM_OK;
fail:
    status = ushmemi_cuda_fail(what, r, "dst %p, src %p, %zu bytes beside stream %p", dst, src,
                               len, stream);
    if (fork != NULL)
        ushmemi_cu.cuEventDestroy(fork);
    if (b != NULL) {
        if (b->done != NULL)
            ushmemi_cu.cuEventDestroy(b->done);
        if (b->side != NULL)
            ushmemi_cu.cuStreamDestroy(b->side);
        free(b);
    }
    return status;
}

/* The stream waits for the copy; the side stream and its event are let go
 * (the driver frees them once the work queued on them is done). */
ushmem_status_t ushmemi_cuda_stream_join(struct ushmemi_device *dev, void *stream, void *join)
{
    struct cuda_beside *b = join;
    ushmem_status_t status = ushmemi_cuda_current(dev, "stream join");
    CUresult r = CUDA_SUCCESS;
    if (status == USHMEM_OK) {
        r = ushmemi_cu.cuStreamWaitEvent((CUstream)stream, b->done, 0);
        if (r != CUDA_SUCCESS)
            status = ushmemi_cuda_fail("cuStreamWaitEvent", r, "stream %p, the copy beside it",
                                       stream);
    }
    ushmemi_cu.cuEventDestroy(b->done);
    ushmemi_cu.cuStreamDestroy(b->side);
    free(b);
    return status;
}

ushmem_status_t ushmemi_cuda_stream_write64(struct ushmemi_device *dev, void *stream,
                                            uint64_t *addr, uint64_t value)
{
    ushmem_status_t status = ushmemi_cuda_current(dev, "stream write");
    if (status != USHMEM_OK)
        return status;
    /* The default flags put a memory barrier before the write: what the
     * stream did before is visible to whoever sees the value. */
    CUresult r = ushmemi_cu.cuStreamWriteValue64((CUstream)stream, as_devptr(addr), value,
                                                 CU_STREAM_WRITE_VALUE_DEFAULT);
    if (r != CUDA_SUCCESS)
        return ushmemi_cuda_fail("cuStreamWriteValue64_v2", r, "stream %p, %p, value %llu",
                                 stream, (void *)addr, (unsigned long long)value);
    return USHMEM_OK;
}

ushmem_status_t ushmemi_cuda_stream_wait64(struct ushmemi_device *dev, void *stream,
                                           const uint64_t *addr, uint64_t value,
                                           enum ushmemi_stream_cmp cmp)
{
    ushmem_status_t status = ushmemi_cuda_current(dev, "stream wait");
    if (status != USHMEM_OK)
        return status;
    /* FLUSH: remote writes that arrived before the value are visible to
     * the work after the wait; asked for only where the device has it
     * (cuda_graph.c), since a refused call may spoil a graph's capture. */
    unsigned flags = (cmp == USHMEMI_STREAM_EQ ? CU_STREAM_WAIT_VALUE_EQ : CU_STREAM_WAIT_VALUE_GEQ) |
                     dev->wait_flush;
    CUresult r = ushmemi_cu.cuStreamWaitValue64((CUstream)stream, as_devptr(addr), value, flags);
    /* FLUSH is for writes from third-party devices (a NIC) and needs a
     * device attribute; GPUs' peer writes are visible without it. */
    if (dev->wait_flush != 0 && (r == CUDA_ERROR_INVALID_VALUE || r == CUDA_ERROR_NOT_SUPPORTED))
        r = ushmemi_cu.cuStreamWaitValue64((CUstream)stream, as_devptr(addr), value,
                                           flags & ~(unsigned)CU_STREAM_WAIT_VALUE_FLUSH);
    if (r != CUDA_SUCCESS)
        return ushmemi_cuda_fail("cuStreamWaitValue64_v2", r, "stream %p, %p, %s %llu", stream,
                                 (void *)addr, cmp == USHMEMI_STREAM_EQ ? "==" : ">=",
                                 (unsigned long long)value);
    return USHMEM_OK;
}

/* The writes and the waits of a stream barrier's round as one batch of
 * stream memory operations: one call into the driver instead of one per
 * word, which a host loop of stream-ordered barriers paid for every peer and
 * round. */
static ushmem_status_t exchange_batch(void *stream, uint64_t *const *addrs,
                                      const uint64_t *values, int nwrites,
                                      uint64_t *const *wait_addrs, const uint64_t *wait_values,
                                      int nwaits)
{
    CUstreamBatchMemOpParams ops[2 * USHMEMI_STREAM_BATCH];
    unsigned n = 0;

    memset(ops, 0, sizeof(ops));
    for (int i = 0; i < nwrites; i++, n++) {
        ops[n].writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_64;
        ops[n].writeValue.address = as_devptr(addrs[i]);
        ops[n].writeValue.value64 = values[i];
        /* With its memory barrier, as stream_write64's. */
        ops[n].writeValue.flags = CU_STREAM_WRITE_VALUE_DEFAULT;
    }
    for (int j = 0; j < nwaits; j++, n++) {
        ops[n].waitValue.operation = CU_STREAM_MEM_OP_WAIT_VALUE_64;
        ops[n].waitValue.address = as_devptr(wait_addrs[j]);
        ops[n].waitValue.value64 = wait_values[j];
        ops[n].waitValue.flags = CU_STREAM_WAIT_VALUE_GEQ | CU_STREAM_WAIT_VALUE_FLUSH;
    }
    if (n == 0)
        return USHMEM_OK;
    CUresult r = ushmemi_cu.cuStreamBatchMemOp((CUstream)stream, n, ops, 0);
    /* As in stream_wait64: FLUSH needs a device attribute that GPUs' peer
     * writes do not. */
    if (r == CUDA_ERROR_INVALID_VALUE || r == CUDA_ERROR_NOT_SUPPORTED) {
        for (unsigned k = (unsigned)nwrites; k < n; k++)
            ops[k].waitValue.flags = CU_STREAM_WAIT_VALUE_GEQ;
        r = ushmemi_cu.cuStreamBatchMemOp((CUstream)stream, n, ops, 0);
    }
    if (r != CUDA_SUCCESS)
        return ushmemi_cuda_fail("cuStreamBatchMemOp_v2", r, "stream %p, %d writes, %d waits",
                                 stream, nwrites, nwaits);
    return USHMEM_OK;
}

/* A round of a stream barrier: a kernel (cuda_amo.c) or stream memory
 * operations, as USHMEM_CUDA_STREAM_BARRIER says (auto: the kernel, or
 * memory operations when a member shares this GPU: the kernel would spin
 * on the GPU while the other process's work, which it waits for, cannot
 * run beside it, and the GPU switches between processes only every time
 * slice, about 2.2 ms a barrier at 4 PEs on 2 H200s). On four H200s,
 * medians of five runs of a host loop of 2000 barriers: at 4 PEs 4.53 us a
 * barrier with the kernel against 8.21 with a batch of memory operations;
 * at 2 PEs 4.27 against 4.67 with one write and one wait. With memory
 * operations one write and one wait go as two single operations, which
 * measured faster than a batch of two. */
ushmem_status_t ushmemi_cuda_stream_exchange64(struct ushmemi_device *dev, void *stream,
                                               uint64_t *const *addrs, const uint64_t *values,
                                               int nwrites, uint64_t *const *wait_addrs,
                                               const uint64_t *wait_values, int nwaits,
                                               bool shared)
{
    if (nwrites < 0 || nwaits < 0 || nwrites > USHMEMI_STREAM_BATCH ||
        nwaits > USHMEMI_STREAM_BATCH) {
        ushmemi_error("cuda backend: stream exchange of %d writes and %d waits refused (at "
                      "most %d each)", nwrites, nwaits, USHMEMI_STREAM_BATCH);
        return USHMEM_ERR_INVALID_PARAM;
    }
    ushmem_status_t status = ushmemi_cuda_current(dev, "stream exchange");
    if (status != USHMEM_OK)
        return status;
    if (dev->exchange == USHMEMI_CUDA_EXCHANGE_KERNEL ||
        (dev->exchange == USHMEMI_CUDA_EXCHANGE_AUTO && !shared))
        return ushmemi_cuda_exchange_kernel(dev, stream, addrs, values, nwrites, wait_addrs,
                                            wait_values, nwaits);
    if (nwrites > 1 || nwaits > 1)
        return exchange_batch(stream, addrs, values, nwrites, wait_addrs, wait_values,
                              nwaits);
    if (nwrites == 1)
        status = ushmemi_cuda_stream_write64(dev, stream, addrs[0], values[0]);
    if (status == USHMEM_OK && nwaits == 1)
        status = ushmemi_cuda_stream_wait64(dev, stream, wait_addrs[0], wait_values[0],
                                            USHMEMI_STREAM_GEQ);
    return status;
}

/* Copies below this size stay on the backend's stream: dealing them out
 * saves nothing, and the wait that joins the lanes costs more. */
#define USHMEMI_CUDA_LANE_MIN ((size_t)1 << 20)

ushmem_status_t ushmemi_cuda_lanes_join(struct ushmemi_device *dev)
{
    if (dev->lanes < 2)
        return USHMEM_OK;
    /* Under the lock: a thread that finds the bits taken by another (the
     * proxy and the program share the device) waits until that one's
     * waits are queued, or what it queues next could overtake them. */
    pthread_mutex_lock(&dev->lanes_lock);
    unsigned busy = atomic_exchange(&dev->lanes_busy, 0);
    for (unsigned i = 1; busy != 0 && i < dev->lanes; i++) {
        if (!(busy & (1u << i)))
            continue;
        /* The wait takes the event as recorded now; recording it again
         * later does not change what this wait waits for. */
        CUresult r = ushmemi_cu.cuEventRecord(dev->lane_event[i], dev->lane[i]);
        if (r == CUDA_SUCCESS)
            r = ushmemi_cu.cuStreamWaitEvent(dev->stream, dev->lane_event[i], 0);
        if (r != CUDA_SUCCESS) {
            atomic_fetch_or(&dev->lanes_busy, busy); /* joined by the next call, or a sync */
            pthread_mutex_unlock(&dev->lanes_lock);
            return ushmemi_cuda_fail("cuEventRecord/cuStreamWaitEvent", r,
                                     "joining copy stream %u of device %d", i, dev->ordinal);
        }
    }
    pthread_mutex_unlock(&dev->lanes_lock);
    return USHMEM_OK;
}

ushmem_status_t ushmemi_cuda_copy(struct ushmemi_device *dev, void *dst, const void *src,
                                  size_t len)
{
    if (len == 0)
        return USHMEM_OK;
    ushmem_status_t status = ushmemi_cuda_current(dev, "copy");
    if (status != USHMEM_OK)
        return status;
    unsigned lane = 0;
    if (dev->lanes > 1 && len >= USHMEMI_CUDA_LANE_MIN)
        lane = atomic_fetch_add(&dev->next_lane, 1) % dev->lanes;
    else if ((status = ushmemi_cuda_lanes_join(dev)) != USHMEM_OK)
        return status;
    /* Unified addressing: the driver finds each side's memory by address. */
    CUresult r = ushmemi_cu.cuMemcpyAsync(as_devptr(dst), as_devptr(src), len, dev->lane[lane]);
    if (r != CUDA_SUCCESS)
        return ushmemi_cuda_fail("cuMemcpyAsync", r, "dst %p, src %p, %zu bytes, copy stream %u",
                                 dst, src, len, lane);
    if (lane != 0)
        atomic_fetch_or(&dev->lanes_busy, 1u << lane);
    return USHMEM_OK;
}

/* Writes a store's `then` writes may chain in one batch (a put's signal,
 * then the proxy's counter's copy). */
#define STORE_THEN_MAX 3

/* A store of 4 or 8 aligned bytes and the writes behind it (then and its
 * next, up to STORE_THEN_MAX, each 8 aligned bytes) as one batch of stream
 * memory operations: one call into the driver instead of one each. */
static CUresult store_then(struct ushmemi_device *dev, CUdeviceptr p, uint64_t value,
                           size_t size, const struct ushmemi_dev_then *then)
{
    CUstreamBatchMemOpParams ops[1 + STORE_THEN_MAX];
    unsigned n = 1;
    memset(ops, 0, sizeof(ops));
    ops[0].writeValue.operation =
        size == 8 ? CU_STREAM_MEM_OP_WRITE_VALUE_64 : CU_STREAM_MEM_OP_WRITE_VALUE_32;
    ops[0].writeValue.address = p;
    if (size == 8)
        ops[0].writeValue.value64 = value;
    else
        ops[0].writeValue.value = (cuuint32_t)value;
    for (; then != NULL; then = then->next, n++) {
        ops[n].writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_64;
        ops[n].writeValue.address = as_devptr(then->addr);
        ops[n].writeValue.value64 = then->value;
    }
    /* Each with its memory barrier, as stream_write64's: a write is seen
     * only after the ones before it. */
    for (unsigned i = 0; i < n; i++)
        ops[i].writeValue.flags = CU_STREAM_WRITE_VALUE_DEFAULT;
    return ushmemi_cu.cuStreamBatchMemOp(dev->stream, n, ops, 0);
}

/* True when store_then takes these writes. */
static bool then_batches(const struct ushmemi_dev_then *then)
{
    unsigned n = 0;
    for (; then != NULL; then = then->next, n++)
        if (n == STORE_THEN_MAX || ((uintptr_t)then->addr & 7) != 0)
            return false;
    return true;
}

/* A 4- or 8-byte aligned word by a stream memory operation, other sizes and
 * alignments by half-word and byte memsets: each takes its value as an
 * argument, so nothing is read from host memory when it runs. With `then`,
 * an aligned word and the write go as one batch (store_then). */
ushmem_status_t ushmemi_cuda_store(struct ushmemi_device *dev, void *addr, uint64_t value,
                                   size_t size, const struct ushmemi_dev_then *then)
{
    if (size == 0 || size > 8) {
        ushmemi_error("cuda backend: a store of %zu bytes at %p refused (1 to 8)", size, addr);
        return USHMEM_ERR_INVALID_PARAM;
    }
    ushmem_status_t status = ushmemi_cuda_current(dev, "store");
    if (status == USHMEM_OK)
        status = ushmemi_cuda_lanes_join(dev);
    if (status != USHMEM_OK)
        return status;
    CUdeviceptr p = as_devptr(addr);
    CUresult r;
    const char *call;
    if (then != NULL && (size == 8 || size == 4) && (p & (size - 1)) == 0 && then_batches(then)) {
        r = store_then(dev, p, value, size, then);
        if (r != CUDA_SUCCESS)
            return ushmemi_cuda_fail("cuStreamBatchMemOp_v2", r, "a store of %zu bytes at %p "
                                     "and the write of %llu at %p", size, addr,
                                     (unsigned long long)then->value, (void *)then->addr);
        return USHMEM_OK;
    }
    if (size == 8 && (p & 7) == 0) {
        call = "cuStreamWriteValue64_v2";
        r = ushmemi_cu.cuStreamWriteValue64(dev->stream, p, value, CU_STREAM_WRITE_VALUE_DEFAULT);
    } else if (size == 4 && (p & 3) == 0) {
        call = "cuStreamWriteValue32_v2";
        r = ushmemi_cu.cuStreamWriteValue32(dev->stream, p, (cuuint32_t)value,
                                            CU_STREAM_WRITE_VALUE_DEFAULT);
    } else if (size == 2 && (p & 1) == 0) {
        call = "cuMemsetD16Async";
        r = ushmemi_cu.cuMemsetD16Async(p, (unsigned short)value, 1, dev->stream);
    } else {
        call = "cuMemsetD8Async";
        r = CUDA_SUCCESS;
        for (size_t i = 0; i < size && r == CUDA_SUCCESS; i++) /* the host is little-endian */
            r = ushmemi_cu.cuMemsetD8Async(p + i, (unsigned char)(value >> (8 * i)), 1,
                                           dev->stream);
    }
    if (r != CUDA_SUCCESS)
        return ushmemi_cuda_fail(call, r, "a store of %zu bytes at %p", size, addr);
    for (; status == USHMEM_OK && then != NULL; then = then->next)
        status = ushmemi_cuda_stream_write64(dev, dev->stream, then->addr, then->value);
    return status;
}

ushmem_status_t ushmemi_cuda_memset(struct ushmemi_device *dev, void *dst, int value, size_t len)
{
    if (len == 0)
        return USHMEM_OK;
    ushmem_status_t status = ushmemi_cuda_current(dev, "memset");
    if (status == USHMEM_OK)
        status = ushmemi_cuda_lanes_join(dev);
    if (status != USHMEM_OK)
        return status;
    CUresult r = ushmemi_cu.cuMemsetD8Async(as_devptr(dst), (unsigned char)value, len,
                                            dev->stream);
    if (r != CUDA_SUCCESS)
        return ushmemi_cuda_fail("cuMemsetD8Async", r, "dst %p, value %d, %zu bytes", dst, value,
                                 len);
    return USHMEM_OK;
}

/* On the backend's own stream, behind its copies. */
ushmem_status_t ushmemi_cuda_write64(struct ushmemi_device *dev, uint64_t *addr, uint64_t value)
{
    ushmem_status_t status = ushmemi_cuda_current(dev, "write64");
    if (status == USHMEM_OK)
        status = ushmemi_cuda_lanes_join(dev);
    if (status != USHMEM_OK)
        return status;
    return ushmemi_cuda_stream_write64(dev, dev->stream, addr, value);
}

ushmem_status_t ushmemi_cuda_sync(struct ushmemi_device *dev)
{
    ushmem_status_t status = ushmemi_cuda_current(dev, "sync");
    if (status == USHMEM_OK)
        status = ushmemi_cuda_lanes_join(dev);
    if (status != USHMEM_OK)
        return status;
    CUresult r = ushmemi_cu.cuStreamSynchronize(dev->stream);
    if (r != CUDA_SUCCESS)
        return ushmemi_cuda_fail("cuStreamSynchronize", r, "stream of device %d", dev->ordinal);
    return USHMEM_OK;
}

/* Whether ptr lies in a heap or import of this backend. */
static bool in_device_region(struct ushmemi_device *dev, uintptr_t p)
{
    bool found = false;
    pthread_mutex_lock(&dev->lock);
    for (size_t i = 0; i < dev->nregions && !found; i++) {
        const struct cuda_region *r = &dev->regions[i];
        found = r->kind != CUDA_REGION_HOST && p >= r->base && p - r->base < r->size;
    }
    pthread_mutex_unlock(&dev->lock);
    return found;
}

ushmem_status_t ushmemi_cuda_pointer_query(struct ushmemi_device *dev, const void *ptr,
                                           struct ushmemi_ptr_attr *attr_p)
{
    CUmemorytype type = 0;
    struct ushmemi_ptr_attr attr = {USHMEMI_MEM_UNKNOWN, true, -1, true};

    ushmem_status_t status = ushmemi_cuda_current(dev, "pointer_query");
    if (status != USHMEM_OK)
        return status;
    CUresult r = ushmemi_cu.cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                                  as_devptr(ptr));
    if (r == CUDA_ERROR_INVALID_VALUE) {
        /* Memory the driver does not know: plain host memory, unless it is
         * one of our own mappings, which is device memory whatever the
         * driver's answer. */
        if (in_device_region(dev, (uintptr_t)ptr))
            attr = (struct ushmemi_ptr_attr){USHMEMI_MEM_DEVICE, false, dev->ordinal, false};
        *attr_p = attr;
        return USHMEM_OK;
    }
    if (r != CUDA_SUCCESS)
        return ushmemi_cuda_fail("cuPointerGetAttribute", r, "CU_POINTER_ATTRIBUTE_MEMORY_TYPE, %p",
                                 ptr);
    switch (type) {
    case CU_MEMORYTYPE_DEVICE:
    case CU_MEMORYTYPE_ARRAY: {
        int ordinal = -1;
        r = ushmemi_cu.cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                                             as_devptr(ptr));
        if (r != CUDA_SUCCESS)
            ordinal = dev->ordinal;
        attr = (struct ushmemi_ptr_attr){USHMEMI_MEM_DEVICE, false, ordinal, false};
        break;
    }
    case CU_MEMORYTYPE_HOST:
        attr = (struct ushmemi_ptr_attr){USHMEMI_MEM_HOST, true, -1, true};
        break;
    default:
        /* Managed memory: the CPU may touch it (pages migrate), and it is
         * not ours. */
        break;
    }
    *attr_p = attr;
    return USHMEM_OK;
}
