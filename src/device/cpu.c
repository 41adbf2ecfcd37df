/* The cpu device backend: the symmetric heap is host memory in a memfd mapped
 * MAP_SHARED, so that local peers map the same pages through the exported fd.
 * It owns the list of ranges it handed out, which is what pointer_query
 * answers from. For tests it can pose as a PCIe device (USHMEM_CPU_PCI_BDFS),
 * so that the PCIe AtomicOps probe and the routes built on it run without a
 * GPU. */
#include "device.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/log.h"
#include "../common/pages.h"
#include "../common/vars.h"
#include "node_id.h"

#include <ushmem/detail/ring.h>

enum region_kind { REGION_HEAP, REGION_HOST, REGION_IMPORT, REGION_STATIC };

struct region {
    char *base;
    size_t size; /* mapped length */
    enum region_kind kind;
    int fd; /* the heap's memfd; -1 for the others */
    /* Address space held from base (a heap's, or an import's of a peer's
     * heap, that grows into it); size for the others. */
    size_t reserve;
    size_t prev_size; /* size before the last chunk was mapped, for its undo */
};

/* What export_mem and export_chunk write into ushmemi_ipc_handle.data. */
struct cpu_export_meta {
    uint64_t reserve;    /* export_mem: the heap's reserve, which the importer holds too */
    uint64_t chunk_from; /* export_chunk: where the chunk starts in the heap (and the file) */
    uint64_t chunk_len;
};
_Static_assert(sizeof(struct cpu_export_meta) <= sizeof(((struct ushmemi_ipc_handle *)0)->data),
               "the export metadata fits the handle");

/* A copy queued on the posing "copy engine" (see cpu_copy). */
struct pending_copy {
    void *dst;
    const void *src; /* read when the copy lands: a heap, as an engine reads it */
    void *staged;    /* or the source as it was when queued (ordinary memory) */
    size_t len;
};

struct ushmemi_device {
    int local_rank;
    struct ushmemi_device_id id;
    pthread_mutex_t lock; /* guards regions and pending: PE threads and the proxy call in */
    struct region *regions;
    size_t nregions, cap;
    struct pending_copy *pending;
    size_t npending, pending_cap;
};

static void land_pending(struct ushmemi_device *dev);

static size_t page_round(size_t size)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    return (size + page - 1) / page * page;
}

static int hex_value(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

static void read_identity(struct ushmemi_device_id *id)
{
    char boot_id[64];

    memset(id, 0, sizeof(*id));
    strcpy(id->backend, "cpu");

    ushmemi_node_boot_id(boot_id, sizeof(boot_id));
    size_t nbytes = 0;
    for (const char *p = boot_id; *p && nbytes < sizeof(id->uuid); p++) {
        if (*p == '-')
            continue;
        int hi = hex_value(p[0]);
        int lo = p[1] ? hex_value(p[1]) : -1;
        if (hi < 0 || lo < 0)
            break;
        id->uuid[nbytes++] = (uint8_t)(hi << 4 | lo);
        p++;
    }
    id->node_hash = ushmemi_node_hash();
}

/* "DDDD:BB:DD.F", with 4 to 7 domain digits so that it fits pci_bdf. */
static bool is_pci_address(const char *s, size_t n)
{
    size_t d = 0;
    while (d < n && hex_value(s[d]) >= 0)
        d++;
    if (d < 4 || d > 7 || n != d + 8 || s[d] != ':' || s[d + 3] != ':' || s[d + 6] != '.')
        return false;
    for (size_t i = d + 1; i < d + 6; i += 3)
        if (hex_value(s[i]) < 0 || hex_value(s[i + 1]) < 0)
            return false;
    /* Device numbers stop at 0x1f, functions at 7. */
    return hex_value(s[d + 4]) <= 1 && s[d + 7] >= '0' && s[d + 7] <= '7';
}

/* Testing: USHMEM_CPU_PCI_BDFS gives each local rank a PCI address, as a GPU
 * backend would report its device's. Every item is checked, so that a typo
 * is reported whatever the job's size; ranks past the list get none. */
static ushmem_status_t pose_as_pci(int local_rank, char *bdf_p, size_t len)
{
    const char *list = ushmemi_settings.cpu_pci_bdfs;
    if (list == NULL || list[0] == '\0')
        return USHMEM_OK;
    const char *mine = NULL;
    size_t mine_len = 0;
    int rank = 0;
    for (const char *p = list;; rank++) {
        size_t n = strcspn(p, ",");
        if (!is_pci_address(p, n) || n >= len) {
            ushmemi_error("cpu backend: USHMEM_CPU_PCI_BDFS='%s': item %d ('%.*s') is not a PCI "
                          "address such as 0000:3b:00.0",
                          list, rank, (int)n, p);
            return USHMEM_ERR_INVALID_VALUE;
        }
        if (rank == local_rank) {
            mine = p;
            mine_len = n;
        }
        if (p[n] == '\0')
            break;
        p += n + 1;
    }
    if (mine != NULL)
        snprintf(bdf_p, len, "%.*s", (int)mine_len, mine);
    return USHMEM_OK;
}

static ushmem_status_t add_region(struct ushmemi_device *dev, void *base, size_t size,
                                  enum region_kind kind, int fd, size_t reserve)
{
    ushmem_status_t status = USHMEM_OK;

    pthread_mutex_lock(&dev->lock);
    if (dev->nregions == dev->cap) {
        size_t cap = dev->cap ? dev->cap * 2 : 16;
        struct region *grown = realloc(dev->regions, cap * sizeof(*grown));
        if (grown == NULL) {
            ushmemi_error("cpu backend: cannot grow the region list to %zu entries", cap);
            status = USHMEM_ERR_NO_MEMORY;
            goto unlock;
        }
        dev->regions = grown;
        dev->cap = cap;
    }
    dev->regions[dev->nregions++] = (struct region){base, size, kind, fd, reserve, size};
unlock:
    pthread_mutex_unlock(&dev->lock);
    return status;
}

/* Removes the region starting at base of the given kind; false when absent. */
static bool take_region(struct ushmemi_device *dev, const void *base, enum region_kind kind,
                        struct region *region_p)
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

static ushmem_status_t cpu_open(int local_rank, int local_size, struct ushmemi_device **dev_p)
{
    (void)local_size;
    struct ushmemi_device *dev = calloc(1, sizeof(*dev));
    if (dev == NULL) {
        ushmemi_error("cpu backend: cannot allocate the device for local rank %d", local_rank);
        return USHMEM_ERR_NO_MEMORY;
    }
    dev->local_rank = local_rank;
    read_identity(&dev->id);
    ushmem_status_t status = pose_as_pci(local_rank, dev->id.pci_bdf, sizeof(dev->id.pci_bdf));
    if (status != USHMEM_OK) {
        free(dev);
        return status;
    }
    pthread_mutex_init(&dev->lock, NULL);
    *dev_p = dev;
    return USHMEM_OK;
}

static void cpu_close(struct ushmemi_device *dev)
{
    if (dev == NULL)
        return;
    land_pending(dev);
    free(dev->pending);
    /* Whatever the caller left behind is released so a close is a clean slate. */
    for (size_t i = 0; i < dev->nregions; i++) {
        if (dev->regions[i].kind != REGION_IMPORT)
            ushmemi_debug("cpu backend: region %p (%zu bytes) still allocated at close",
                          (void *)dev->regions[i].base, dev->regions[i].size);
        /* The program's own data segment is never unmapped. */
        if (dev->regions[i].kind != REGION_STATIC)
            munmap(dev->regions[i].base, dev->regions[i].reserve);
        if (dev->regions[i].fd >= 0)
            close(dev->regions[i].fd);
    }
    free(dev->regions);
    pthread_mutex_destroy(&dev->lock);
    free(dev);
}

static ushmem_status_t cpu_identity(struct ushmemi_device *dev, struct ushmemi_device_id *id_p)
{
    *id_p = dev->id;
    return USHMEM_OK;
}

/* The heap: a memfd of `size` bytes mapped at the start of `reserve` bytes
 * of address space (PROT_NONE, no memory behind it) that heap_grow maps
 * more of the memfd into. */
static ushmem_status_t cpu_heap_reserve(struct ushmemi_device *dev, size_t size, size_t reserve,
                                        void **ptr_p)
{
    ushmem_status_t status;

    if (size == 0 || reserve < size) {
        ushmemi_error("cpu backend: heap_reserve of %zu bytes in a reserve of %zu", size, reserve);
        return USHMEM_ERR_INVALID_PARAM;
    }
    size_t len = page_round(size);
    reserve = page_round(reserve);
    int fd = memfd_create("ushmem-heap", MFD_CLOEXEC);
    if (fd < 0) {
        ushmemi_error("cpu backend: memfd_create for a %zu-byte heap failed: %s", size,
                      strerror(errno));
        return USHMEM_ERR_NO_MEMORY;
    }
    if (ftruncate(fd, (off_t)len) != 0) {
        ushmemi_error("cpu backend: ftruncate of the heap memfd to %zu bytes failed: %s", len,
                      strerror(errno));
        status = USHMEM_ERR_NO_MEMORY;
        goto close_fd;
    }
    /* Reserve room to place the heap's reserve on an aligned address, map
     * the memfd at its start and give back the unused head and tail. */
    size_t align = ushmemi_heap_alignment_for(reserve);
    size_t span = reserve + align;
    char *area = mmap(NULL, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (area == MAP_FAILED) {
        ushmemi_error("cpu backend: reserving %zu bytes of address space for the heap failed: %s",
                      span, strerror(errno));
        status = USHMEM_ERR_NO_MEMORY;
        goto close_fd;
    }
    char *aligned = (char *)(((uintptr_t)area + align - 1) & ~(uintptr_t)(align - 1));
    void *ptr = mmap(aligned, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0);
    if (ptr == MAP_FAILED) {
        ushmemi_error("cpu backend: mmap of a %zu-byte heap failed: %s", len, strerror(errno));
        munmap(area, span);
        status = USHMEM_ERR_NO_MEMORY;
        goto close_fd;
    }
    if (aligned > area)
        munmap(area, (size_t)(aligned - area));
    if (aligned + reserve < area + span)
        munmap(aligned + reserve, (size_t)(area + span - (aligned + reserve)));
    status = add_region(dev, ptr, len, REGION_HEAP, fd, reserve);
    if (status != USHMEM_OK)
        goto unmap;
    *ptr_p = ptr;
    return USHMEM_OK;

unmap:
    munmap(ptr, reserve);
close_fd:
    close(fd);
    return status;
}

static ushmem_status_t cpu_heap_alloc(struct ushmemi_device *dev, size_t size, void **ptr_p)
{
    if (size == 0) {
        ushmemi_error("cpu backend: heap_alloc of 0 bytes");
        return USHMEM_ERR_INVALID_PARAM;
    }
    return cpu_heap_reserve(dev, size, size, ptr_p);
}

static void cpu_heap_free(struct ushmemi_device *dev, void *ptr, size_t size)
{
    struct region r;

    if (ptr == NULL)
        return;
    if (!take_region(dev, ptr, REGION_HEAP, &r)) {
        ushmemi_error("cpu backend: heap_free of %p (%zu bytes), which is not a heap", ptr, size);
        return;
    }
    munmap(r.base, r.reserve);
    close(r.fd);
}

static ushmem_status_t cpu_host_alloc(struct ushmemi_device *dev, size_t size, void **ptr_p)
{
    if (size == 0) {
        ushmemi_error("cpu backend: host_alloc of 0 bytes");
        return USHMEM_ERR_INVALID_PARAM;
    }
    size_t len = page_round(size);
    void *ptr = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (ptr == MAP_FAILED) {
        ushmemi_error("cpu backend: host_alloc of %zu bytes failed: %s", size, strerror(errno));
        return USHMEM_ERR_NO_MEMORY;
    }
    ushmem_status_t status = add_region(dev, ptr, len, REGION_HOST, -1, len);
    if (status != USHMEM_OK) {
        munmap(ptr, len);
        return status;
    }
    *ptr_p = ptr;
    return USHMEM_OK;
}

static void cpu_host_free(struct ushmemi_device *dev, void *ptr, size_t size)
{
    struct region r;

    if (ptr == NULL)
        return;
    if (!take_region(dev, ptr, REGION_HOST, &r)) {
        ushmemi_error("cpu backend: host_free of %p (%zu bytes), which host_alloc did not return",
                      ptr, size);
        return;
    }
    munmap(r.base, r.size);
}

static ushmem_status_t cpu_export(struct ushmemi_device *dev, void *ptr, size_t size,
                                  struct ushmemi_ipc_handle *handle_p)
{
    int fd = -1;
    struct cpu_export_meta meta = {0};

    pthread_mutex_lock(&dev->lock);
    for (size_t i = 0; i < dev->nregions; i++) {
        const struct region *r = &dev->regions[i];
        if ((r->kind == REGION_HEAP || r->kind == REGION_STATIC) && r->base == ptr &&
            size <= r->size) {
            fd = r->fd;
            meta.reserve = r->reserve;
            break;
        }
    }
    pthread_mutex_unlock(&dev->lock);

    if (fd < 0) {
        ushmemi_error("cpu backend: export of %p (%zu bytes), which is not the start of a heap "
                      "allocation of at least that size", ptr, size);
        return USHMEM_ERR_INVALID_PARAM;
    }
    memset(handle_p, 0, sizeof(*handle_p));
    handle_p->fd = fd;
    handle_p->size = size;
    memcpy(handle_p->data, &meta, sizeof(meta));
    return USHMEM_OK;
}

static ushmem_status_t cpu_import(struct ushmemi_device *dev, const struct ushmemi_ipc_handle *handle,
                                  int fd, void **ptr_p)
{
    ushmem_status_t status;
    struct stat st;

    /* A file shorter than the handle says would turn accesses past its end
     * into SIGBUS much later; refuse it now. */
    if (fstat(fd, &st) != 0) {
        ushmemi_error("cpu backend: import of fd %d: fstat failed: %s", fd, strerror(errno));
        status = USHMEM_ERR_INVALID_PARAM;
        goto close_fd;
    }
    if ((uint64_t)st.st_size < handle->size || handle->size == 0) {
        ushmemi_error("cpu backend: import of fd %d: file size %lld does not cover the "
                      "exported %llu bytes", fd, (long long)st.st_size,
                      (unsigned long long)handle->size);
        status = USHMEM_ERR_INVALID_PARAM;
        goto close_fd;
    }
    size_t len = page_round((size_t)handle->size);
    struct cpu_export_meta meta;
    memcpy(&meta, handle->data, sizeof(meta));
    /* As much address space behind the peer's heap as the peer holds behind
     * it, so that its chunks land here where they lie there. */
    size_t reserve = meta.reserve > len ? page_round((size_t)meta.reserve) : len;
    char *area = mmap(NULL, reserve, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (area == MAP_FAILED) {
        ushmemi_error("cpu backend: reserving %zu bytes of address space for an import failed: "
                      "%s", reserve, strerror(errno));
        status = USHMEM_ERR_NO_MEMORY;
        goto close_fd;
    }
    void *ptr = mmap(area, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0);
    if (ptr == MAP_FAILED) {
        ushmemi_error("cpu backend: mmap of imported fd %d (%zu bytes) failed: %s", fd, len,
                      strerror(errno));
        munmap(area, reserve);
        status = USHMEM_ERR_NO_MEMORY;
        goto close_fd;
    }
    status = add_region(dev, ptr, len, REGION_IMPORT, -1, reserve);
    if (status != USHMEM_OK) {
        munmap(ptr, reserve);
        goto close_fd;
    }
    /* The mapping keeps the file alive; the fd is no longer needed. */
    close(fd);
    *ptr_p = ptr;
    return USHMEM_OK;

close_fd:
    close(fd);
    return status;
}

static ushmem_status_t cpu_close_import(struct ushmemi_device *dev, void *ptr, size_t size)
{
    struct region r;

    if (!take_region(dev, ptr, REGION_IMPORT, &r)) {
        ushmemi_error("cpu backend: close_import of %p (%zu bytes), which import did not return",
                      ptr, size);
        return USHMEM_ERR_INVALID_PARAM;
    }
    munmap(r.base, r.reserve);
    return USHMEM_OK;
}

/* ---- Growth: more of the heap's memfd mapped into the reserve behind it,
 * on this PE (heap_grow) and by each peer that maps the heap (import_chunk).
 * The chunks of one heap are one file, so a chunk's export is the memfd
 * again and its offset in the file is its offset in the heap. ---- */

/* The region of `kind` at base, with dev->lock held; NULL when none. */
static struct region *find_region(struct ushmemi_device *dev, const void *base,
                                  enum region_kind kind)
{
    for (size_t i = 0; i < dev->nregions; i++)
        if (dev->regions[i].base == base && dev->regions[i].kind == kind)
            return &dev->regions[i];
    return NULL;
}

/* Puts [from, to) of a reserve back to address space only. */
static void unmap_chunk(char *base, size_t from, size_t to)
{
    if (to > from && mmap(base + from, to - from, PROT_NONE,
                          MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1,
                          0) == MAP_FAILED)
        munmap(base + from, to - from); /* nothing else is ever placed there */
}

static ushmem_status_t cpu_heap_grow(struct ushmemi_device *dev, void *base, size_t old_size,
                                     size_t new_size, char *why_p, size_t why_len)
{
    pthread_mutex_lock(&dev->lock);
    struct region *r = find_region(dev, base, REGION_HEAP);
    struct region heap = r != NULL ? *r : (struct region){0};
    pthread_mutex_unlock(&dev->lock);

    size_t to = page_round(new_size);
    if (r == NULL || new_size < old_size) {
        snprintf(why_p, why_len, "the cpu backend has no heap at %p to grow from %zu to %zu "
                 "bytes", base, old_size, new_size);
        return USHMEM_ERR_INVALID_PARAM;
    }
    if (to > heap.reserve) {
        snprintf(why_p, why_len, "%zu bytes do not fit the %zu bytes of address space reserved "
                 "for the heap", to, heap.reserve);
        return USHMEM_ERR_NO_MEMORY;
    }
    if (to <= heap.size) {
        pthread_mutex_lock(&dev->lock);
        find_region(dev, base, REGION_HEAP)->prev_size = heap.size;
        pthread_mutex_unlock(&dev->lock);
        return USHMEM_OK; /* mapped already (the start size's page rounding) */
    }
    size_t from = heap.size, len = to - from;
    if (ftruncate(heap.fd, (off_t)to) != 0) {
        snprintf(why_p, why_len, "extending the heap's memfd to %zu bytes failed: %s", to,
                 strerror(errno));
        return USHMEM_ERR_NO_MEMORY;
    }
    /* The pages are taken now: memory the machine (or the PE's cgroup)
     * lacks is a refusal here, on every PE at once, rather than a SIGBUS at
     * some later first touch. A file system without fallocate leaves them
     * to be taken on first touch, as the start size's are. */
    if (fallocate(heap.fd, 0, (off_t)from, (off_t)len) != 0 && errno != EOPNOTSUPP) {
        snprintf(why_p, why_len, "out of memory: %zu more bytes of the heap's memfd could not "
                 "be allocated (fallocate: %s)", len, strerror(errno));
        goto truncate;
    }
    if (mmap(heap.base + from, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, heap.fd,
             (off_t)from) == MAP_FAILED) {
        snprintf(why_p, why_len, "mapping %zu more bytes of the heap at %p failed: %s", len,
                 (void *)(heap.base + from), strerror(errno));
        unmap_chunk(heap.base, from, to);
        goto truncate;
    }
    pthread_mutex_lock(&dev->lock);
    r = find_region(dev, base, REGION_HEAP);
    r->prev_size = from;
    r->size = to;
    pthread_mutex_unlock(&dev->lock);
    return USHMEM_OK;

truncate:
    if (ftruncate(heap.fd, (off_t)from) != 0)
        ushmemi_debug("cpu backend: shrinking the heap's memfd back to %zu bytes failed: %s",
                      from, strerror(errno));
    return USHMEM_ERR_NO_MEMORY;
}

static void cpu_heap_shrink(struct ushmemi_device *dev, void *base, size_t old_size,
                            size_t new_size)
{
    (void)old_size;
    (void)new_size;
    pthread_mutex_lock(&dev->lock);
    struct region *r = find_region(dev, base, REGION_HEAP);
    size_t from = r != NULL ? r->prev_size : 0, to = r != NULL ? r->size : 0;
    if (r != NULL)
        r->size = r->prev_size;
    int fd = r != NULL ? r->fd : -1;
    pthread_mutex_unlock(&dev->lock);
    if (r == NULL) {
        ushmemi_error("cpu backend: heap_shrink of %p, which is not a heap", base);
        return;
    }
    unmap_chunk(base, from, to);
    if (to > from && ftruncate(fd, (off_t)from) != 0)
        ushmemi_debug("cpu backend: shrinking the heap's memfd back to %zu bytes failed: %s",
                      from, strerror(errno));
}

static ushmem_status_t cpu_export_chunk(struct ushmemi_device *dev, void *base, size_t old_size,
                                        size_t new_size, struct ushmemi_ipc_handle *handle_p)
{
    pthread_mutex_lock(&dev->lock);
    struct region *r = find_region(dev, base, REGION_HEAP);
    struct region heap = r != NULL ? *r : (struct region){0};
    pthread_mutex_unlock(&dev->lock);
    if (r == NULL) {
        ushmemi_error("cpu backend: export of the chunk %zu..%zu of %p, which is not a heap",
                      old_size, new_size, base);
        return USHMEM_ERR_INVALID_PARAM;
    }
    struct cpu_export_meta meta = {.reserve = heap.reserve,
                                   .chunk_from = heap.prev_size,
                                   .chunk_len = heap.size - heap.prev_size};
    memset(handle_p, 0, sizeof(*handle_p));
    handle_p->fd = heap.fd;
    handle_p->size = meta.chunk_len;
    memcpy(handle_p->data, &meta, sizeof(meta));
    return USHMEM_OK;
}

static ushmem_status_t cpu_import_chunk(struct ushmemi_device *dev, void *peer_base,
                                        size_t old_size, size_t new_size,
                                        const struct ushmemi_ipc_handle *handle, int fd)
{
    ushmem_status_t status = USHMEM_ERR_INVALID_PARAM;
    struct cpu_export_meta meta;
    struct stat st;

    memcpy(&meta, handle->data, sizeof(meta));
    pthread_mutex_lock(&dev->lock);
    struct region *r = find_region(dev, peer_base, REGION_IMPORT);
    struct region imp = r != NULL ? *r : (struct region){0};
    if (r != NULL && (fd < 0 || handle->size == 0))
        r->prev_size = r->size; /* the growth needed no new memory there */
    pthread_mutex_unlock(&dev->lock);
    if (r != NULL && (fd < 0 || handle->size == 0)) {
        status = USHMEM_OK;
        goto close_fd;
    }
    size_t from = (size_t)meta.chunk_from, to = from + (size_t)meta.chunk_len;
    if (r == NULL || from != imp.size || to < from || to > imp.reserve) {
        ushmemi_error("cpu backend: a peer's heap chunk %zu..%zu (heap %zu..%zu bytes) does not "
                      "follow its import at %p (%zu of %zu bytes mapped)", from, to, old_size,
                      new_size, peer_base, imp.size, imp.reserve);
        goto close_fd;
    }
    if (fstat(fd, &st) != 0 || (uint64_t)st.st_size < (uint64_t)to) {
        ushmemi_error("cpu backend: a peer's heap chunk ends at %zu bytes, past its file (%lld "
                      "bytes)", to, (long long)st.st_size);
        goto close_fd;
    }
    if (to > from && mmap(imp.base + from, to - from, PROT_READ | PROT_WRITE,
                          MAP_SHARED | MAP_FIXED, fd, (off_t)from) == MAP_FAILED) {
        ushmemi_error("cpu backend: mapping %zu bytes of a peer's heap chunk at %p failed: %s",
                      to - from, (void *)(imp.base + from), strerror(errno));
        unmap_chunk(imp.base, from, to);
        status = USHMEM_ERR_NO_MEMORY;
        goto close_fd;
    }
    pthread_mutex_lock(&dev->lock);
    r = find_region(dev, peer_base, REGION_IMPORT);
    r->prev_size = from;
    r->size = to;
    pthread_mutex_unlock(&dev->lock);
    status = USHMEM_OK;
close_fd:
    if (fd >= 0)
        close(fd);
    return status;
}

static void cpu_close_chunk(struct ushmemi_device *dev, void *peer_base, size_t old_size,
                            size_t new_size)
{
    (void)old_size;
    (void)new_size;
    pthread_mutex_lock(&dev->lock);
    struct region *r = find_region(dev, peer_base, REGION_IMPORT);
    size_t from = r != NULL ? r->prev_size : 0, to = r != NULL ? r->size : 0;
    if (r != NULL)
        r->size = r->prev_size;
    pthread_mutex_unlock(&dev->lock);
    if (r == NULL)
        ushmemi_error("cpu backend: close_chunk of %p, which import did not return", peer_base);
    else
        unmap_chunk(peer_base, from, to);
}

/* The machine's memory: what a cpu heap may grow to by default. */
static ushmem_status_t cpu_memory_size(struct ushmemi_device *dev, size_t *bytes_p)
{
    (void)dev;
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || page <= 0)
        return USHMEM_ERR_UNSUPPORTED;
    *bytes_p = (size_t)pages * (size_t)page;
    return USHMEM_OK;
}

/* A copy's bytes as a device writes them: a naturally aligned 1, 2, 4 or 8
 * bytes in one store, once (copy_writes_words_whole). memcpy writes such a
 * word with two overlapping stores, and a reader that took the value after
 * the first and emptied its cell (ring.h's values apart) found the second
 * write's value there on its next lap, taking it for the next ticket's. */
static void land_bytes(void *dst, const void *src, size_t len)
{
    if ((len == 1 || len == 2 || len == 4 || len == 8) && ((uintptr_t)dst & (len - 1)) == 0) {
        uint64_t word = 0;
        memcpy(&word, src, len); /* the host is little-endian */
        switch (len) {
        case 1: __atomic_store_n((uint8_t *)dst, (uint8_t)word, __ATOMIC_RELAXED); break;
        case 2: __atomic_store_n((uint16_t *)dst, (uint16_t)word, __ATOMIC_RELAXED); break;
        case 4: __atomic_store_n((uint32_t *)dst, (uint32_t)word, __ATOMIC_RELAXED); break;
        default: __atomic_store_n((uint64_t *)dst, word, __ATOMIC_RELAXED); break;
        }
        return;
    }
    memcpy(dst, src, len);
}

/* Lands every queued copy, in order; the caller holds dev->lock. */
static void land_pending(struct ushmemi_device *dev)
{
    for (size_t i = 0; i < dev->npending; i++) {
        const struct pending_copy *c = &dev->pending[i];
        land_bytes(c->dst, c->staged != NULL ? c->staged : c->src, c->len);
        free(c->staged);
    }
    dev->npending = 0;
}

/* True when p lies in memory this backend handed out or mapped (a heap). */
static bool in_region(struct ushmemi_device *dev, const void *p)
{
    for (size_t i = 0; i < dev->nregions; i++)
        if ((const char *)p >= dev->regions[i].base &&
            (const char *)p < dev->regions[i].base + dev->regions[i].size)
            return true;
    return false;
}

/* The device atomic: the heap is host memory underneath (also when it
 * poses as device memory), so a C11 atomic on it, after the queued copies
 * have landed as a copy engine would order them. */
static ushmem_status_t cpu_sync(struct ushmemi_device *dev);

static ushmem_status_t cpu_amo(struct ushmemi_device *dev, void *addr, unsigned op, size_t size,
                               uint64_t operand, uint64_t compare, uint64_t *old_p)
{
    ushmem_status_t status = cpu_sync(dev);
    if (status != USHMEM_OK)
        return status;
    if ((size != 4 && size != 8) || ((uintptr_t)addr & (size - 1)) != 0 ||
        op >= USHMEM_RING_AMO_OP_COUNT) {
        ushmemi_error("cpu backend: atomic op %u of %zu bytes at %p refused", op, size, addr);
        return USHMEM_ERR_INVALID_PARAM;
    }
    uint64_t old;
    if (size == 4) {
        _Atomic uint32_t *a = addr;
        uint32_t v = (uint32_t)operand, c = (uint32_t)compare;
        switch (op) {
        case USHMEM_RING_AMO_FETCH: old = atomic_load(a); break;
        case USHMEM_RING_AMO_SET: atomic_store(a, v); old = 0; break;
        case USHMEM_RING_AMO_SWAP: old = atomic_exchange(a, v); break;
        case USHMEM_RING_AMO_CSWAP: atomic_compare_exchange_strong(a, &c, v); old = c; break;
        case USHMEM_RING_AMO_ADD: old = atomic_fetch_add(a, v); break;
        case USHMEM_RING_AMO_AND: old = atomic_fetch_and(a, v); break;
        case USHMEM_RING_AMO_OR: old = atomic_fetch_or(a, v); break;
        default: old = atomic_fetch_xor(a, v); break;
        }
    } else {
        _Atomic uint64_t *a = addr;
        uint64_t c = compare;
        switch (op) {
        case USHMEM_RING_AMO_FETCH: old = atomic_load(a); break;
        case USHMEM_RING_AMO_SET: atomic_store(a, operand); old = 0; break;
        case USHMEM_RING_AMO_SWAP: old = atomic_exchange(a, operand); break;
        case USHMEM_RING_AMO_CSWAP: atomic_compare_exchange_strong(a, &c, operand); old = c; break;
        case USHMEM_RING_AMO_ADD: old = atomic_fetch_add(a, operand); break;
        case USHMEM_RING_AMO_AND: old = atomic_fetch_and(a, operand); break;
        case USHMEM_RING_AMO_OR: old = atomic_fetch_or(a, operand); break;
        default: old = atomic_fetch_xor(a, operand); break;
        }
    }
    if (old_p != NULL)
        *old_p = old;
    return USHMEM_OK;
}

/* A plain memcpy, except while the heap poses as device memory: then the
 * copy behaves like a copy engine's, landing only at the next sync (or
 * memset, which the engine would run after it), so that a path that reads
 * or signals before syncing fails in the tests as it would on a GPU. A
 * source in a heap is read when the copy lands, after the copies queued
 * before it; ordinary memory is read at once, as a driver stages pageable
 * memory. */
static ushmem_status_t cpu_copy(struct ushmemi_device *dev, void *dst, const void *src, size_t len)
{
    if (!ushmemi_settings.cpu_device_heap || len == 0) {
        land_bytes(dst, src, len);
        return USHMEM_OK;
    }
    pthread_mutex_lock(&dev->lock);
    bool deferred_read = in_region(dev, src);
    pthread_mutex_unlock(&dev->lock);
    void *staged = NULL;
    if (!deferred_read) {
        staged = malloc(len);
        if (staged == NULL) {
            ushmemi_error("cpu backend: cannot stage a %zu-byte copy", len);
            return USHMEM_ERR_NO_MEMORY;
        }
        memcpy(staged, src, len);
    }
    pthread_mutex_lock(&dev->lock);
    if (dev->npending == dev->pending_cap) {
        size_t cap = dev->pending_cap ? 2 * dev->pending_cap : 16;
        struct pending_copy *grown = realloc(dev->pending, cap * sizeof(*grown));
        if (grown == NULL) {
            land_pending(dev); /* no room to queue: land everything now */
            pthread_mutex_unlock(&dev->lock);
            land_bytes(dst, staged != NULL ? staged : src, len);
            free(staged);
            return USHMEM_OK;
        }
        dev->pending = grown;
        dev->pending_cap = cap;
    }
    dev->pending[dev->npending++] = (struct pending_copy){dst, src, staged, len};
    pthread_mutex_unlock(&dev->lock);
    return USHMEM_OK;
}

static ushmem_status_t cpu_write64(struct ushmemi_device *dev, uint64_t *addr, uint64_t value);

/* The value's bytes, queued like a copy from ordinary memory: they land
 * with the copies, in order; then `then`, behind them. */
static ushmem_status_t cpu_store(struct ushmemi_device *dev, void *addr, uint64_t value,
                                 size_t size, const struct ushmemi_dev_then *then)
{
    if (size == 0 || size > sizeof(value)) {
        ushmemi_error("cpu backend: a store of %zu bytes at %p refused (1 to 8)", size, addr);
        return USHMEM_ERR_INVALID_PARAM;
    }
    ushmem_status_t status = cpu_copy(dev, addr, &value, size); /* the host is little-endian */
    for (; status == USHMEM_OK && then != NULL; then = then->next)
        status = cpu_write64(dev, then->addr, then->value);
    return status;
}

/* Lands the queued copies, then the atomic; its old value goes straight to
 * result, which is at least as early as a device would write it. */
static ushmem_status_t cpu_amo_async(struct ushmemi_device *dev, void *addr, unsigned op,
                                     size_t size, uint64_t operand, uint64_t compare,
                                     uint64_t *result, const struct ushmemi_dev_then *then)
{
    uint64_t old = 0;
    ushmem_status_t status = cpu_amo(dev, addr, op, size, operand, compare, &old);
    if (status == USHMEM_OK && result != NULL)
        __atomic_store_n(result, old, __ATOMIC_RELEASE);
    if (status == USHMEM_OK && then != NULL)
        status = cpu_write64(dev, then->addr, then->value);
    return status;
}

/* The store queued, then the atomic, which lands it first. */
static ushmem_status_t cpu_store_amo_async(struct ushmemi_device *dev, void *store_addr,
                                           uint64_t store_value, size_t store_len, void *addr,
                                           unsigned op, size_t size, uint64_t operand,
                                           const struct ushmemi_dev_then *then)
{
    ushmem_status_t status = cpu_store(dev, store_addr, store_value, store_len, NULL);
    return status == USHMEM_OK ? cpu_amo_async(dev, addr, op, size, operand, 0, NULL, then)
                               : status;
}

static ushmem_status_t cpu_memset(struct ushmemi_device *dev, void *dst, int value, size_t len)
{
    pthread_mutex_lock(&dev->lock);
    land_pending(dev);
    pthread_mutex_unlock(&dev->lock);
    memset(dst, value, len);
    return USHMEM_OK;
}

static ushmem_status_t cpu_sync(struct ushmemi_device *dev)
{
    pthread_mutex_lock(&dev->lock);
    land_pending(dev);
    pthread_mutex_unlock(&dev->lock);
    return USHMEM_OK;
}

/* Behind the copies queued before it: they land first. */
static ushmem_status_t cpu_write64(struct ushmemi_device *dev, uint64_t *addr, uint64_t value)
{
    pthread_mutex_lock(&dev->lock);
    land_pending(dev);
    pthread_mutex_unlock(&dev->lock);
    __atomic_store_n(addr, value, __ATOMIC_RELEASE);
    return USHMEM_OK;
}

static ushmem_status_t cpu_pointer_query(struct ushmemi_device *dev, const void *ptr,
                                         struct ushmemi_ptr_attr *attr_p)
{
    enum ushmemi_mem_kind kind = USHMEMI_MEM_UNKNOWN;
    const char *p = ptr;

    /* Imported peer heaps count as the heap they are: host memory here. */
    pthread_mutex_lock(&dev->lock);
    for (size_t i = 0; i < dev->nregions; i++) {
        const struct region *r = &dev->regions[i];
        if (p >= r->base && p < r->base + r->size) {
            kind = USHMEMI_MEM_HOST;
            /* Testing: this PE's heap poses as device memory, so that the
             * paths which must never hand device memory to the CPU or to a
             * provider without FI_HMEM run without a GPU. */
            if (r->kind == REGION_HEAP && ushmemi_settings.cpu_device_heap)
                kind = USHMEMI_MEM_DEVICE;
            break;
        }
    }
    pthread_mutex_unlock(&dev->lock);

    attr_p->kind = kind;
    attr_p->host_accessible = kind != USHMEMI_MEM_DEVICE;
    attr_p->device_ordinal = kind == USHMEMI_MEM_DEVICE ? 0 : -1;
    attr_p->host_backed = true; /* whatever it poses as */
    return USHMEM_OK;
}

static ushmem_status_t cpu_p2p_probe(struct ushmemi_device *dev, const struct ushmemi_device_id *peer,
                                     struct ushmemi_p2p_caps *caps_p)
{
    bool same_node = strncmp(peer->backend, "cpu", sizeof(peer->backend)) == 0 &&
                     peer->node_hash == dev->id.node_hash;

    /* same_device stays false: host memory shared by processes needs none of
     * the special handling that two PEs on one GPU do. */
    /* Testing: USHMEM_CPU_NO_P2P=1 poses as GPUs that cannot reach each other. */
    caps_p->access = same_node && !ushmemi_settings.cpu_no_p2p;
    caps_p->native_atomics = caps_p->access;
    caps_p->same_device = false;
    caps_p->link = same_node ? USHMEMI_LINK_HOST_MEMORY : USHMEMI_LINK_NONE;
    /* Posing as PCIe devices (USHMEM_CPU_PCI_BDFS): the pair is linked by PCIe,
     * so the AtomicOps probe decides the atomics, and one address shared by
     * two PEs is one device. */
    if (same_node && dev->id.pci_bdf[0] != '\0' && peer->pci_bdf[0] != '\0') {
        caps_p->same_device =
            strncasecmp(dev->id.pci_bdf, peer->pci_bdf, sizeof(peer->pci_bdf)) == 0;
        caps_p->link = caps_p->same_device ? USHMEMI_LINK_SAME_DEVICE : USHMEMI_LINK_PCIE;
    }
    return USHMEM_OK;
}

/* Turns a shared range back into private anonymous memory with the same
 * contents, so the program keeps its globals after shmem_finalize. */
static void cpu_unshare_fixed(void *start, size_t len)
{
    void *copy = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (copy == MAP_FAILED) {
        ushmemi_warn("cpu backend: cannot copy the data segment out at finalize (%s); it stays "
                     "shared", strerror(errno));
        return;
    }
    ushmemi_copy_segment(copy, start, len);
    /* mremap moves the private copy over the shared pages in one step. */
    if (mremap(copy, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, start) == MAP_FAILED) {
        ushmemi_warn("cpu backend: cannot make the data segment private again (%s); it stays "
                     "shared", strerror(errno));
        munmap(copy, len);
    }
}

/* Moves the range onto a memfd: copy out, then map the memfd over the range
 * with MAP_FIXED, which replaces the old pages in one step. A write by another
 * thread between the copy and the map would be lost, which is why this runs
 * inside shmem_init, before the program's threads touch symmetric data. */
static ushmem_status_t cpu_share_static(struct ushmemi_device *dev, void *start, size_t len)
{
    ushmem_status_t status;
    int fd = memfd_create("ushmem-data", MFD_CLOEXEC);
    if (fd < 0) {
        ushmemi_error("cpu backend: memfd_create for the %zu-byte data segment failed: %s", len,
                      strerror(errno));
        return USHMEM_ERR_NO_MEMORY;
    }
    if (ftruncate(fd, (off_t)len) != 0) {
        ushmemi_error("cpu backend: ftruncate of the data segment memfd failed: %s",
                      strerror(errno));
        status = USHMEM_ERR_NO_MEMORY;
        goto close_fd;
    }
    void *staging = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (staging == MAP_FAILED) {
        ushmemi_error("cpu backend: mmap of the data segment memfd failed: %s", strerror(errno));
        status = USHMEM_ERR_NO_MEMORY;
        goto close_fd;
    }
    ushmemi_copy_segment(staging, start, len);
    void *fixed = mmap(start, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0);
    munmap(staging, len);
    if (fixed == MAP_FAILED) {
        /* MAP_FIXED failing leaves the old mapping in place. */
        ushmemi_error("cpu backend: mapping the data segment at %p (%zu bytes) failed: %s", start,
                      len, strerror(errno));
        status = USHMEM_ERR_NO_MEMORY;
        goto close_fd;
    }
    status = add_region(dev, start, len, REGION_STATIC, fd, len);
    if (status != USHMEM_OK) {
        cpu_unshare_fixed(start, len);
        goto close_fd;
    }
    return USHMEM_OK;

close_fd:
    close(fd);
    return status;
}

static void cpu_unshare_static(struct ushmemi_device *dev, void *start, size_t len)
{
    struct region r;
    if (!take_region(dev, start, REGION_STATIC, &r)) {
        ushmemi_error("cpu backend: unshare_static of %p (%zu bytes), which is not shared", start,
                      len);
        return;
    }
    cpu_unshare_fixed(r.base, r.size);
    close(r.fd);
}

const struct ushmemi_device_ops ushmemi_device_cpu_ops = {
    .size = sizeof(struct ushmemi_device_ops),
    .name = "cpu",
    .open = cpu_open,
    .close = cpu_close,
    .identity = cpu_identity,
    .heap_alloc = cpu_heap_alloc,
    .heap_free = cpu_heap_free,
    .host_alloc = cpu_host_alloc,
    .host_free = cpu_host_free,
    .export_mem = cpu_export,
    .import_mem = cpu_import,
    .close_import = cpu_close_import,
    .heap_reserve = cpu_heap_reserve,
    .heap_grow = cpu_heap_grow,
    .heap_shrink = cpu_heap_shrink,
    .export_chunk = cpu_export_chunk,
    .import_chunk = cpu_import_chunk,
    .close_chunk = cpu_close_chunk,
    .memory_size = cpu_memory_size,
    .share_static = cpu_share_static,
    .unshare_static = cpu_unshare_static,
    .copy = cpu_copy,
    .copy_writes_words_whole = true,
    .memset = cpu_memset,
    .sync = cpu_sync,
    .amo = cpu_amo,
    .store = cpu_store,
    .amo_async = cpu_amo_async,
    .store_amo_async = cpu_store_amo_async,
    .write64 = cpu_write64,
    .stream_copy = ushmemi_no_stream_copy,
    .stream_write64 = ushmemi_no_stream_write64,
    .stream_wait64 = ushmemi_no_stream_wait64,
    .stream_reduce = ushmemi_no_stream_reduce,
    .stream_alloc = ushmemi_no_stream_alloc,
    .stream_free = ushmemi_no_stream_free,
    .stream_capturing = ushmemi_no_stream_capturing,
    .pointer_query = cpu_pointer_query,
    .p2p_probe = cpu_p2p_probe,
};
