/* The cuda backend's growing heap: each growth is one more allocation
 * (cuMemCreate, pinned, fd-exportable like the first) mapped with cuMemMap
 * right after what the heap has mapped, inside the address space reserved
 * for it at shmem_init (cuda_mem.c: a slot of the node's window, or a
 * reservation of its own). Each chunk has its own shareable handle: a peer
 * imports it and maps it at the same offset behind its mapping of the heap,
 * inside the reservation it made for that heap. The chunks are kept in the
 * region of the heap or import they grow, and go with it. */
#include "cuda_private.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/log.h"

/* What export_chunk writes into ushmemi_ipc_handle.data. */
struct cuda_chunk_meta {
    uint32_t magic;
    uint32_t version;
    uint64_t size;    /* the chunk's allocation */
    uint64_t offset;  /* where it lies from the heap's base */
    uint8_t uuid[16]; /* the exporting device */
};
_Static_assert(sizeof(struct cuda_chunk_meta) <= sizeof(((struct ushmemi_ipc_handle *)0)->data),
               "the chunk metadata fits the handle");

#define CUDA_CHUNK_MAGIC 0x75636463u /* "ucdc" */
#define CUDA_CHUNK_VERSION 1u

static size_t round_up(size_t size, size_t to) { return (size + to - 1) / to * to; }

/* The region of `kind` at base, with dev->lock held; NULL when none. */
static struct cuda_region *find_region(struct ushmemi_device *dev, uintptr_t base,
                                       enum cuda_region_kind kind)
{
    for (size_t i = 0; i < dev->nregions; i++)
        if (dev->regions[i].base == base && dev->regions[i].kind == kind)
            return &dev->regions[i];
    return NULL;
}

/* Where the mappings of r end, from its base. */
static size_t mapped_end(const struct cuda_region *r)
{
    return r->nchunks > 0 ? r->chunks[r->nchunks - 1].va + r->chunks[r->nchunks - 1].len - r->base
                          : r->size;
}

/* Appends a chunk to the region at base (dev->lock taken here). */
static ushmem_status_t add_chunk(struct ushmemi_device *dev, uintptr_t base,
                                 enum cuda_region_kind kind, const struct cuda_chunk *chunk)
{
    ushmem_status_t status = USHMEM_OK;
    pthread_mutex_lock(&dev->lock);
    struct cuda_region *r = find_region(dev, base, kind);
    struct cuda_chunk *grown = r != NULL ? realloc(r->chunks, (r->nchunks + 1) * sizeof(*grown))
                                         : NULL;
    if (grown == NULL) {
        status = r == NULL ? USHMEM_ERR_INVALID_PARAM : USHMEM_ERR_NO_MEMORY;
    } else {
        r->chunks = grown;
        r->chunks_before = r->nchunks;
        r->chunks[r->nchunks++] = *chunk;
    }
    pthread_mutex_unlock(&dev->lock);
    return status;
}

void ushmemi_cuda_unmap_chunks(struct ushmemi_device *dev, struct cuda_region *r, size_t from)
{
    (void)dev; /* the caller made its context current */
    while (r->nchunks > from) {
        struct cuda_chunk *c = &r->chunks[--r->nchunks];
        CUresult res = ushmemi_cu.cuMemUnmap((CUdeviceptr)c->va, c->len);
        if (res != CUDA_SUCCESS)
            ushmemi_cuda_fail("cuMemUnmap", res, "heap chunk 0x%llx, %zu bytes",
                              (unsigned long long)c->va, c->len);
        res = ushmemi_cu.cuMemRelease(c->handle);
        if (res != CUDA_SUCCESS)
            ushmemi_cuda_fail("cuMemRelease", res, "heap chunk 0x%llx",
                              (unsigned long long)c->va);
        if (c->fd >= 0)
            close(c->fd);
    }
}

/* Takes the chunks of the last growth off the region at base and undoes
 * them (a peer could not grow). */
static void undo_last(struct ushmemi_device *dev, uintptr_t base, enum cuda_region_kind kind)
{
    struct cuda_region copy;
    bool found = false;
    pthread_mutex_lock(&dev->lock);
    struct cuda_region *r = find_region(dev, base, kind);
    if (r != NULL) {
        copy = *r;
        r->nchunks = r->chunks_before;
        found = true;
    }
    pthread_mutex_unlock(&dev->lock);
    if (!found) {
        ushmemi_error("cuda backend: no %s at 0x%llx to shrink",
                      kind == CUDA_REGION_HEAP ? "heap" : "import", (unsigned long long)base);
        return;
    }
    if (ushmemi_cuda_current(dev, "heap shrink") != USHMEM_OK)
        return;
    /* Copies still in flight must not land in memory being given back. */
    ushmemi_cuda_sync(dev);
    ushmemi_cuda_unmap_chunks(dev, &copy, copy.chunks_before);
}

ushmem_status_t ushmemi_cuda_heap_grow(struct ushmemi_device *dev, void *base, size_t old_size,
                                       size_t new_size, char *why_p, size_t why_len)
{
    uintptr_t at = (uintptr_t)base;
    pthread_mutex_lock(&dev->lock);
    struct cuda_region *r = find_region(dev, at, CUDA_REGION_HEAP);
    size_t end = r != NULL ? mapped_end(r) : 0, reserve = r != NULL ? r->reserve : 0;
    if (r != NULL)
        r->chunks_before = r->nchunks; /* no chunk yet for this growth */
    pthread_mutex_unlock(&dev->lock);

    if (r == NULL || new_size < old_size) {
        snprintf(why_p, why_len, "no heap at %p to grow from %zu to %zu bytes", base, old_size,
                 new_size);
        return USHMEM_ERR_INVALID_PARAM;
    }
    size_t to = round_up(new_size, dev->granularity);
    if (to > reserve) {
        snprintf(why_p, why_len, "%zu bytes do not fit the %zu bytes of address space reserved "
                 "for the heap", to, reserve);
        return USHMEM_ERR_NO_MEMORY;
    }
    if (to <= end)
        return USHMEM_OK; /* mapped already (the granularity's rounding) */
    ushmem_status_t status = ushmemi_cuda_current(dev, "heap grow");
    if (status != USHMEM_OK) {
        snprintf(why_p, why_len, "the device's context cannot be made current (see above)");
        return status;
    }
    size_t len = to - end;
    CUmemAllocationProp prop = ushmemi_cuda_heap_prop(dev);
    CUmemGenericAllocationHandle handle;
    CUresult res = ushmemi_cu.cuMemCreate(&handle, len, &prop, 0);
    if (res != CUDA_SUCCESS) {
        const char *name = NULL;
        if (ushmemi_cu.cuGetErrorName(res, &name) != CUDA_SUCCESS || name == NULL)
            name = "unknown error";
        snprintf(why_p, why_len, "%s%s of %zu more bytes of device memory on device %d (cuMemCreate: %s)",
                 res == CUDA_ERROR_OUT_OF_MEMORY ? "out of memory: " : "no allocation ",
                 res == CUDA_ERROR_OUT_OF_MEMORY ? "no room for" : "", len, dev->ordinal, name);
        return res == CUDA_ERROR_OUT_OF_MEMORY ? USHMEM_ERR_NO_MEMORY : USHMEM_ERR_DEVICE;
    }
    CUdeviceptr va = (CUdeviceptr)(at + end);
    status = ushmemi_cuda_map_at(dev, handle, va, len, "a heap chunk");
    if (status != USHMEM_OK) {
        snprintf(why_p, why_len, "mapping %zu more bytes at 0x%llx failed (see above)", len,
                 (unsigned long long)va);
        ushmemi_cu.cuMemRelease(handle);
        return status;
    }
    struct cuda_chunk chunk = {.va = (uintptr_t)va, .len = len, .handle = handle, .fd = -1};
    status = add_chunk(dev, at, CUDA_REGION_HEAP, &chunk);
    if (status != USHMEM_OK) {
        snprintf(why_p, why_len, "no host memory to record a heap chunk");
        ushmemi_cu.cuMemUnmap(va, len);
        ushmemi_cu.cuMemRelease(handle);
        return status;
    }
    return USHMEM_OK;
}

void ushmemi_cuda_heap_shrink(struct ushmemi_device *dev, void *base, size_t old_size,
                              size_t new_size)
{
    (void)old_size;
    (void)new_size;
    undo_last(dev, (uintptr_t)base, CUDA_REGION_HEAP);
}

ushmem_status_t ushmemi_cuda_export_chunk(struct ushmemi_device *dev, void *base, size_t old_size,
                                          size_t new_size, struct ushmemi_ipc_handle *handle_p)
{
    struct cuda_chunk_meta meta;
    ushmem_status_t status = ushmemi_cuda_current(dev, "export chunk");
    if (status != USHMEM_OK)
        return status;
    memset(&meta, 0, sizeof(meta));
    memset(handle_p, 0, sizeof(*handle_p));
    handle_p->fd = -1;
    status = USHMEM_ERR_INVALID_PARAM;
    pthread_mutex_lock(&dev->lock);
    struct cuda_region *r = find_region(dev, (uintptr_t)base, CUDA_REGION_HEAP);
    if (r != NULL && r->nchunks == r->chunks_before) {
        status = USHMEM_OK; /* this growth needed no chunk: nothing to map */
    } else if (r != NULL) {
        /* One chunk per growth, exported once and kept until heap_free:
         * every peer takes its own copy of the fd. */
        struct cuda_chunk *c = &r->chunks[r->nchunks - 1];
        CUresult res = CUDA_SUCCESS;
        if (c->fd < 0)
            res = ushmemi_cu.cuMemExportToShareableHandle(
                &c->fd, c->handle, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
        if (res != CUDA_SUCCESS) {
            c->fd = -1;
            status = ushmemi_cuda_fail("cuMemExportToShareableHandle", res,
                                       "heap chunk 0x%llx (%zu bytes), POSIX fd",
                                       (unsigned long long)c->va, c->len);
        } else {
            meta = (struct cuda_chunk_meta){.magic = CUDA_CHUNK_MAGIC,
                                            .version = CUDA_CHUNK_VERSION,
                                            .size = c->len,
                                            .offset = c->va - r->base};
            memcpy(meta.uuid, dev->id.uuid, sizeof(meta.uuid));
            handle_p->fd = c->fd;
            handle_p->size = c->len;
            status = USHMEM_OK;
        }
    }
    pthread_mutex_unlock(&dev->lock);
    if (r == NULL)
        ushmemi_error("cuda backend: export of the chunk %zu..%zu of %p, which is not a heap",
                      old_size, new_size, base);
    memcpy(handle_p->data, &meta, sizeof(meta));
    return status;
}

ushmem_status_t ushmemi_cuda_import_chunk(struct ushmemi_device *dev, void *peer_base,
                                          size_t old_size, size_t new_size,
                                          const struct ushmemi_ipc_handle *handle, int fd)
{
    struct cuda_chunk_meta meta;
    uintptr_t at = (uintptr_t)peer_base;
    ushmem_status_t status = USHMEM_ERR_INVALID_PARAM;
    CUmemGenericAllocationHandle mem;

    memcpy(&meta, handle->data, sizeof(meta));
    pthread_mutex_lock(&dev->lock);
    struct cuda_region *r = find_region(dev, at, CUDA_REGION_IMPORT);
    size_t end = r != NULL ? mapped_end(r) : 0, reserve = r != NULL ? r->reserve : 0;
    if (r != NULL)
        r->chunks_before = r->nchunks;
    pthread_mutex_unlock(&dev->lock);
    if (r != NULL && (fd < 0 || handle->size == 0))
        return USHMEM_OK; /* the growth needed no new memory there */
    if (meta.magic != CUDA_CHUNK_MAGIC || meta.version != CUDA_CHUNK_VERSION) {
        ushmemi_error("cuda backend: import of a heap chunk (fd %d): the handle was not made by "
                      "this version of the cuda backend (magic 0x%x, version %u)", fd,
                      meta.magic, meta.version);
        goto close_fd;
    }
    if (r == NULL || meta.offset != end || meta.size == 0 || meta.size % dev->granularity != 0 ||
        meta.offset + meta.size > reserve) {
        ushmemi_error("cuda backend: a peer's heap chunk at offset %llu (%llu bytes; heap %zu -> "
                      "%zu bytes) does not follow its import at %p (%zu of %zu bytes mapped)",
                      (unsigned long long)meta.offset, (unsigned long long)meta.size, old_size,
                      new_size, peer_base, end, reserve);
        goto close_fd;
    }
    status = ushmemi_cuda_current(dev, "import chunk");
    if (status != USHMEM_OK)
        goto close_fd;
    CUresult res = ushmemi_cu.cuMemImportFromShareableHandle(
        &mem, (void *)(uintptr_t)fd, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    if (res != CUDA_SUCCESS) {
        status = ushmemi_cuda_fail("cuMemImportFromShareableHandle", res,
                                   "heap chunk fd %d, POSIX fd", fd);
        goto close_fd;
    }
    close(fd);
    fd = -1;
    CUdeviceptr va = (CUdeviceptr)(at + (size_t)meta.offset);
    status = ushmemi_cuda_map_at(dev, mem, va, (size_t)meta.size, "a peer's heap chunk");
    if (status != USHMEM_OK) {
        ushmemi_cu.cuMemRelease(mem);
        return status;
    }
    struct cuda_chunk chunk = {.va = (uintptr_t)va, .len = (size_t)meta.size, .handle = mem,
                               .fd = -1};
    status = add_chunk(dev, at, CUDA_REGION_IMPORT, &chunk);
    if (status != USHMEM_OK) {
        ushmemi_error("cuda backend: no host memory to record a peer's heap chunk");
        ushmemi_cu.cuMemUnmap(va, (size_t)meta.size);
        ushmemi_cu.cuMemRelease(mem);
    }
    return status;

close_fd:
    if (fd >= 0)
        close(fd);
    return status;
}

void ushmemi_cuda_close_chunk(struct ushmemi_device *dev, void *peer_base, size_t old_size,
                              size_t new_size)
{
    (void)old_size;
    (void)new_size;
    undo_last(dev, (uintptr_t)peer_base, CUDA_REGION_IMPORT);
}

/* The device's memory: what a heap may grow to by default. */
ushmem_status_t ushmemi_cuda_memory_size(struct ushmemi_device *dev, size_t *bytes_p)
{
    size_t bytes = 0;
    CUresult res = ushmemi_cu.cuDeviceTotalMem(&bytes, dev->cu_dev);
    if (res != CUDA_SUCCESS)
        return ushmemi_cuda_fail("cuDeviceTotalMem_v2", res, "device %d", dev->ordinal);
    *bytes_p = bytes;
    return USHMEM_OK;
}
