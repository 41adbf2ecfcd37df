/*
 * Memory of the test driver: the address allocator of the two regions, the
 * table of allocations (device, host, imports, driver-internal host memory
 * and module globals) and every zeMem call, IPC handles included.
 *
 * Device memory is mapped only in the helper; in the application its range
 * stays PROT_NONE so that a CPU access faults as it would on a discrete GPU.
 * Host memory is one memfd mapped at the same address in both processes.
 */
#include "uzt_driver.h"

#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

enum uzt_alloc_kind {
    UZT_ALLOC_DEVICE,
    UZT_ALLOC_HOST,
    UZT_ALLOC_IMPORT,
    UZT_ALLOC_INTERNAL,
    UZT_ALLOC_GLOBAL,
};

struct uzt_alloc {
    uint64_t base;
    uint64_t size;
    uint64_t id;
    enum uzt_alloc_kind kind;
    uint32_t dev;
    int export_fd;     /* device allocations: the dup handed out in IPC handles */
    const void *owner; /* module globals: the module */
};

/* Sorted by base; first fit within [base, base + size). */
struct uzt_table {
    uint64_t base;
    uint64_t size;
    struct uzt_alloc **v;
    size_t n;
    size_t cap;
};

static struct {
    pthread_mutex_t lock;
    struct uzt_table device;
    struct uzt_table host;
    struct uzt_table globals; /* helper addresses of module variables */
    uint64_t next_id;
} mem = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .device = {UZT_DEVICE_BASE, UZT_REGION_SIZE, NULL, 0, 0},
    .host = {UZT_HOST_BASE, UZT_REGION_SIZE, NULL, 0, 0},
    .globals = {0, UINT64_MAX, NULL, 0, 0},
    .next_id = 1,
};

/* Index of the first allocation whose base is above addr. */
static size_t upper_bound(const struct uzt_table *t, uint64_t addr)
{
    size_t lo = 0, hi = t->n;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;

        if (t->v[mid]->base <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static struct uzt_alloc *table_find(const struct uzt_table *t, uint64_t addr, size_t *index_p)
{
    size_t i = upper_bound(t, addr);
    struct uzt_alloc *a;

    if (i == 0)
        return NULL;
    a = t->v[i - 1];
    if (addr - a->base >= a->size)
        return NULL;
    if (index_p)
        *index_p = i - 1;
    return a;
}

/* First fit of size bytes aligned to align; returns the insertion index. */
static bool table_place(const struct uzt_table *t, uint64_t size, uint64_t align, uint64_t *base_p,
                        size_t *index_p)
{
    uint64_t end = t->base + t->size, cur = t->base;

    for (size_t i = 0; i <= t->n; i++) {
        uint64_t limit = i < t->n ? t->v[i]->base : end;
        uint64_t at = uzt_round_up(cur, align);

        if (at >= cur && at <= limit && limit - at >= size) {
            *base_p = at;
            *index_p = i;
            return true;
        }
        if (i < t->n)
            cur = t->v[i]->base + t->v[i]->size;
    }
    return false;
}

static bool table_insert(struct uzt_table *t, size_t i, struct uzt_alloc *a)
{
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 256;
        struct uzt_alloc **v = realloc(t->v, cap * sizeof *v);

        if (!v)
            return false;
        t->v = v;
        t->cap = cap;
    }
    memmove(&t->v[i + 1], &t->v[i], (t->n - i) * sizeof *t->v);
    t->v[i] = a;
    t->n++;
    return true;
}

static void table_remove(struct uzt_table *t, size_t i)
{
    memmove(&t->v[i], &t->v[i + 1], (t->n - i - 1) * sizeof *t->v);
    t->n--;
}

static struct uzt_table *region_of(uint64_t addr)
{
    if (addr - UZT_DEVICE_BASE < UZT_REGION_SIZE)
        return &mem.device;
    if (addr - UZT_HOST_BASE < UZT_REGION_SIZE)
        return &mem.host;
    return NULL;
}

/* Looks ptr up in the regions, then among module globals; mem.lock held. */
static struct uzt_alloc *find_locked(uint64_t addr, size_t *index_p)
{
    struct uzt_table *t = region_of(addr);

    return table_find(t ? t : &mem.globals, addr, index_p);
}

static bool overlaps_region(uint64_t addr, uint64_t size)
{
    uint64_t end = addr + size;

    return (addr < UZT_DEVICE_BASE + UZT_REGION_SIZE && end > UZT_DEVICE_BASE) ||
           (addr < UZT_HOST_BASE + UZT_REGION_SIZE && end > UZT_HOST_BASE);
}

enum uzt_where uzt_mem_where(const void *ptr, size_t size)
{
    uint64_t addr = (uint64_t)(uintptr_t)ptr;
    enum uzt_where w = UZT_WHERE_APP;
    struct uzt_alloc *a;

    if (size == 0)
        size = 1;
    if (addr + size < addr)
        return UZT_WHERE_BAD;
    pthread_mutex_lock(&mem.lock);
    a = find_locked(addr, NULL);
    if (a) {
        if (size > a->size - (addr - a->base))
            w = UZT_WHERE_BAD;
        else if (a->kind == UZT_ALLOC_HOST || a->kind == UZT_ALLOC_INTERNAL)
            w = UZT_WHERE_BOTH;
        else
            w = UZT_WHERE_HELPER;
    } else if (overlaps_region(addr, size)) {
        w = UZT_WHERE_BAD;
    }
    pthread_mutex_unlock(&mem.lock);
    return w;
}

static struct uzt_alloc *new_alloc(enum uzt_alloc_kind kind, uint64_t size, uint32_t dev)
{
    struct uzt_alloc *a = calloc(1, sizeof *a);

    if (a)
        *a = (struct uzt_alloc){.size = size, .kind = kind, .dev = dev, .export_fd = -1};
    return a;
}

static ze_result_t check_size(size_t size, size_t alignment, uint64_t *align_p)
{
    if (size == 0 || size > UZT_MAX_ALLOC_SIZE) {
        uzt_log("allocation of %zu bytes: sizes go from 1 byte to 64 GiB", size);
        return ZE_RESULT_ERROR_UNSUPPORTED_SIZE;
    }
    if (alignment & (alignment - 1)) {
        uzt_log("alignment %zu is not a power of two", alignment);
        return ZE_RESULT_ERROR_UNSUPPORTED_ALIGNMENT;
    }
    if (alignment > ((size_t)1 << 36)) {
        uzt_log("alignment %zu is over 64 GiB", alignment);
        return ZE_RESULT_ERROR_UNSUPPORTED_ALIGNMENT;
    }
    *align_p = alignment > UZT_PAGE ? alignment : UZT_PAGE;
    return ZE_RESULT_SUCCESS;
}

static ze_result_t helper_call(const struct uzt_req *req, int fd, const char *what)
{
    struct uzt_reply rep;
    ze_result_t r = uzt_rpc(req, fd, &rep, NULL);

    if (r != ZE_RESULT_SUCCESS)
        return r;
    if (rep.err) {
        uzt_log("%s: %s", what, rep.text);
        return uzt_errno_result(rep.err);
    }
    return ZE_RESULT_SUCCESS;
}

static void helper_unmap(const struct uzt_alloc *a)
{
    struct uzt_req req = {.op = UZT_OP_UNMAP, .addr = a->base, .size = a->size};

    helper_call(&req, -1, "unmap");
}

/* Both host and internal memory: one memfd mapped at the same address twice. */
static ze_result_t alloc_host_locked(enum uzt_alloc_kind kind, size_t size, uint64_t align,
                                     void **ptr_p)
{
    uint64_t rsize = uzt_round_up(size, UZT_PAGE), base;
    struct uzt_req req = {.op = UZT_OP_MAP_FD};
    struct uzt_alloc *a;
    ze_result_t r = ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    size_t index;
    int fd;

    if (!table_place(&mem.host, rsize, align, &base, &index)) {
        uzt_log("the host region has no free range of %" PRIu64 " bytes", rsize);
        return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    }
    a = new_alloc(kind, rsize, 0);
    if (!a)
        return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    fd = memfd_create(UZT_MEMFD_HOST, MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0) {
        uzt_log("memfd_create: %s", strerror(errno));
        goto free_alloc;
    }
    if (ftruncate(fd, (off_t)rsize) != 0 ||
        fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) != 0) {
        uzt_log("sizing host memory of %" PRIu64 " bytes: %s", rsize, strerror(errno));
        goto close_fd;
    }
    if (mmap((void *)base, rsize, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0) ==
        MAP_FAILED) {
        uzt_log("mapping host memory at %#" PRIx64 ": %s", base, strerror(errno));
        goto close_fd;
    }
    req.addr = base;
    req.size = rsize;
    r = helper_call(&req, fd, "mapping host memory in the helper");
    if (r != ZE_RESULT_SUCCESS)
        goto unmap;
    a->base = base;
    a->id = mem.next_id++;
    if (!table_insert(&mem.host, index, a)) {
        r = ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
        helper_unmap(a);
        goto unmap;
    }
    close(fd);
    *ptr_p = (void *)base;
    return ZE_RESULT_SUCCESS;

unmap:
    uzt_mem_reserve(base, rsize);
close_fd:
    close(fd);
free_alloc:
    free(a);
    return r;
}

ze_result_t uzt_mem_internal_alloc(size_t size, void **ptr_p)
{
    ze_result_t r;

    pthread_mutex_lock(&mem.lock);
    r = alloc_host_locked(UZT_ALLOC_INTERNAL, size, UZT_PAGE, ptr_p);
    pthread_mutex_unlock(&mem.lock);
    return r;
}

/* Frees an allocation at index i of table t; mem.lock held. */
static void free_locked(struct uzt_table *t, size_t i)
{
    struct uzt_alloc *a = t->v[i];

    helper_unmap(a);
    if (a->kind == UZT_ALLOC_HOST || a->kind == UZT_ALLOC_INTERNAL)
        uzt_mem_reserve(a->base, a->size);
    if (a->export_fd >= 0)
        close(a->export_fd);
    table_remove(t, i);
    free(a);
}

void uzt_mem_internal_free(void *ptr)
{
    size_t i;
    struct uzt_alloc *a;

    pthread_mutex_lock(&mem.lock);
    a = table_find(&mem.host, (uint64_t)(uintptr_t)ptr, &i);
    if (a && a->kind == UZT_ALLOC_INTERNAL)
        free_locked(&mem.host, i);
    pthread_mutex_unlock(&mem.lock);
}

ze_result_t uzt_mem_add_global(const void *owner, uint32_t dev, uint64_t addr, uint64_t size)
{
    struct uzt_alloc *a;
    ze_result_t r = ZE_RESULT_SUCCESS;

    pthread_mutex_lock(&mem.lock);
    a = table_find(&mem.globals, addr, NULL);
    if (a) /* asked for before, or overlapping another: keep the first */
        goto unlock;
    a = new_alloc(UZT_ALLOC_GLOBAL, size ? size : 1, dev);
    if (!a || !table_insert(&mem.globals, upper_bound(&mem.globals, addr), a)) {
        free(a);
        r = ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
        goto unlock;
    }
    a->base = addr;
    a->owner = owner;
    a->id = mem.next_id++;
unlock:
    pthread_mutex_unlock(&mem.lock);
    return r;
}

void uzt_mem_drop_globals(const void *owner)
{
    pthread_mutex_lock(&mem.lock);
    for (size_t i = mem.globals.n; i-- > 0;) {
        struct uzt_alloc *a = mem.globals.v[i];

        if (a->owner == owner) {
            table_remove(&mem.globals, i);
            free(a);
        }
    }
    pthread_mutex_unlock(&mem.lock);
}

/* ---- zeMem ------------------------------------------------------------- */

static void log_shared_call(size_t size)
{
    const char *path = getenv("UZT_SHARED_LOG");
    FILE *f;

    if (!path || !*path)
        return;
    f = fopen(path, "ae");
    if (!f)
        return;
    fprintf(f, "zeMemAllocShared pid %ld size %zu\n", (long)getpid(), size);
    fclose(f);
}

ze_result_t uzt_mem_alloc_shared(ze_context_handle_t hContext,
                                 const ze_device_mem_alloc_desc_t *device_desc,
                                 const ze_host_mem_alloc_desc_t *host_desc, size_t size,
                                 size_t alignment, ze_device_handle_t hDevice, void **pptr)
{
    (void)hContext, (void)device_desc, (void)host_desc, (void)alignment, (void)hDevice;
    (void)pptr;
    log_shared_call(size);
    uzt_log("zeMemAllocShared: shared (migrating) memory is not supported");
    return ZE_RESULT_ERROR_UNSUPPORTED_FEATURE;
}

ze_result_t uzt_mem_alloc_device(ze_context_handle_t hContext,
                                 const ze_device_mem_alloc_desc_t *device_desc, size_t size,
                                 size_t alignment, ze_device_handle_t hDevice, void **pptr)
{
    struct uzt_device *dev = uzt_cast(hDevice, UZT_MAGIC_DEVICE);
    struct uzt_req req = {.op = UZT_OP_MAP_DEVICE};
    struct uzt_alloc *a;
    uint64_t align, base;
    size_t index;
    ze_result_t r;

    (void)device_desc;
    if (!uzt_cast(hContext, UZT_MAGIC_CONTEXT) || !dev)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    r = check_size(size, alignment, &align);
    if (r != ZE_RESULT_SUCCESS)
        return r;
    a = new_alloc(UZT_ALLOC_DEVICE, uzt_round_up(size, UZT_PAGE), dev->index);
    if (!a)
        return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;

    pthread_mutex_lock(&mem.lock);
    if (!table_place(&mem.device, a->size, align, &base, &index)) {
        uzt_log("the device region has no free range of %" PRIu64 " bytes aligned to %" PRIu64,
                a->size, align);
        r = ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY;
        goto unlock;
    }
    req.addr = base;
    req.size = a->size;
    req.dev = dev->index;
    r = helper_call(&req, -1, "allocating device memory");
    if (r != ZE_RESULT_SUCCESS)
        goto unlock;
    a->base = base;
    a->id = mem.next_id++;
    if (!table_insert(&mem.device, index, a)) {
        helper_unmap(a);
        r = ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
        goto unlock;
    }
    *pptr = (void *)base;
    a = NULL;
unlock:
    pthread_mutex_unlock(&mem.lock);
    free(a);
    return r;
}

ze_result_t uzt_mem_alloc_host(ze_context_handle_t hContext,
                               const ze_host_mem_alloc_desc_t *host_desc, size_t size,
                               size_t alignment, void **pptr)
{
    uint64_t align;
    ze_result_t r;

    (void)host_desc;
    if (!uzt_cast(hContext, UZT_MAGIC_CONTEXT))
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    r = check_size(size, alignment, &align);
    if (r != ZE_RESULT_SUCCESS)
        return r;
    pthread_mutex_lock(&mem.lock);
    r = alloc_host_locked(UZT_ALLOC_HOST, size, align, pptr);
    pthread_mutex_unlock(&mem.lock);
    return r;
}

ze_result_t uzt_mem_free(ze_context_handle_t hContext, void *ptr)
{
    uint64_t addr = (uint64_t)(uintptr_t)ptr;
    struct uzt_table *t = region_of(addr);
    ze_result_t r = ZE_RESULT_ERROR_INVALID_ARGUMENT;
    struct uzt_alloc *a;
    size_t i;

    if (!uzt_cast(hContext, UZT_MAGIC_CONTEXT))
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    pthread_mutex_lock(&mem.lock);
    a = t ? table_find(t, addr, &i) : NULL;
    if (!a || a->base != addr) {
        uzt_log("zeMemFree(%p): not the start of an allocation of this driver", ptr);
    } else if (a->kind == UZT_ALLOC_IMPORT) {
        uzt_log("zeMemFree(%p): an opened IPC handle; release it with zeMemCloseIpcHandle", ptr);
    } else if (a->kind == UZT_ALLOC_INTERNAL) {
        uzt_log("zeMemFree(%p): memory the driver uses itself (an event pool?)", ptr);
    } else {
        free_locked(t, i);
        r = ZE_RESULT_SUCCESS;
    }
    pthread_mutex_unlock(&mem.lock);
    return r;
}

static ze_device_handle_t device_handle(uint32_t index)
{
    return index < uzt.ndev && uzt.dev[index].visible ? (ze_device_handle_t)&uzt.dev[index] : NULL;
}

ze_result_t uzt_mem_get_alloc_properties(ze_context_handle_t hContext, const void *ptr,
                                         ze_memory_allocation_properties_t *props,
                                         ze_device_handle_t *phDevice)
{
    struct uzt_alloc *a;
    ze_device_handle_t dev = NULL;

    if (!uzt_cast(hContext, UZT_MAGIC_CONTEXT))
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    props->type = ZE_MEMORY_TYPE_UNKNOWN;
    props->id = 0;
    props->pageSize = 0;
    pthread_mutex_lock(&mem.lock);
    a = find_locked((uint64_t)(uintptr_t)ptr, NULL);
    if (a && a->kind != UZT_ALLOC_INTERNAL) {
        props->type = a->kind == UZT_ALLOC_HOST ? ZE_MEMORY_TYPE_HOST : ZE_MEMORY_TYPE_DEVICE;
        props->id = a->id;
        props->pageSize = UZT_PAGE;
        if (a->kind != UZT_ALLOC_HOST)
            dev = device_handle(a->dev);
    }
    pthread_mutex_unlock(&mem.lock);
    if (phDevice)
        *phDevice = dev;
    return ZE_RESULT_SUCCESS;
}

ze_result_t uzt_mem_get_address_range(ze_context_handle_t hContext, const void *ptr, void **pBase,
                                      size_t *pSize)
{
    struct uzt_alloc *a;
    ze_result_t r = ZE_RESULT_SUCCESS;

    if (!uzt_cast(hContext, UZT_MAGIC_CONTEXT))
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    pthread_mutex_lock(&mem.lock);
    a = find_locked((uint64_t)(uintptr_t)ptr, NULL);
    if (a && a->kind != UZT_ALLOC_INTERNAL) {
        if (pBase)
            *pBase = (void *)(uintptr_t)a->base;
        if (pSize)
            *pSize = a->size;
    } else {
        r = ZE_RESULT_ERROR_INVALID_ARGUMENT;
    }
    pthread_mutex_unlock(&mem.lock);
    return r;
}

/* ---- IPC --------------------------------------------------------------- */

/* The 64-byte handle; the fd is the only field an importer rewrites. */
struct uzt_ipc {
    int32_t fd;
    char magic[4];
    uint64_t size;
    uint32_t dev;
    uint64_t node;
} __attribute__((packed));

_Static_assert(sizeof(struct uzt_ipc) <= ZE_MAX_IPC_HANDLE_SIZE, "IPC handle too large");
_Static_assert(offsetof(struct uzt_ipc, size) == 8 && offsetof(struct uzt_ipc, dev) == 16 &&
                   offsetof(struct uzt_ipc, node) == 20,
               "IPC handle layout");

#define UZT_IPC_MAGIC "UZT1"

ze_result_t uzt_mem_get_ipc_handle(ze_context_handle_t hContext, const void *ptr,
                                   ze_ipc_mem_handle_t *pIpcHandle)
{
    uint64_t addr = (uint64_t)(uintptr_t)ptr;
    struct uzt_ipc h = {.magic = UZT_IPC_MAGIC};
    struct uzt_alloc *a;
    ze_result_t r = ZE_RESULT_SUCCESS;

    if (!uzt_cast(hContext, UZT_MAGIC_CONTEXT))
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    pthread_mutex_lock(&mem.lock);
    a = table_find(&mem.device, addr, NULL);
    if (!a || a->kind != UZT_ALLOC_DEVICE) {
        uzt_log("zeMemGetIpcHandle(%p): not in a device allocation of this process", ptr);
        r = ZE_RESULT_ERROR_INVALID_ARGUMENT;
        goto unlock;
    }
    if (a->export_fd < 0) {
        struct uzt_req req = {.op = UZT_OP_EXPORT_FD, .addr = a->base};
        struct uzt_reply rep;

        r = uzt_rpc(&req, -1, &rep, &a->export_fd);
        if (r == ZE_RESULT_SUCCESS && (rep.err || a->export_fd < 0)) {
            uzt_log("zeMemGetIpcHandle(%p): %s", ptr, rep.err ? rep.text : "no fd came back");
            r = rep.err ? uzt_errno_result(rep.err) : ZE_RESULT_ERROR_UNKNOWN;
        }
        if (r != ZE_RESULT_SUCCESS)
            goto unlock;
    }
    h.fd = a->export_fd;
    h.size = a->size;
    h.dev = a->dev;
    h.node = uzt.node_hash;
    /* Fault injection for the tests of importers: UZT_IPC_CORRUPT=size
     * claims one page more than the allocation holds, =node another node. */
    const char *corrupt = getenv("UZT_IPC_CORRUPT");
    if (corrupt != NULL && strcmp(corrupt, "size") == 0)
        h.size += UZT_PAGE;
    else if (corrupt != NULL && strcmp(corrupt, "node") == 0)
        h.node ^= 1;
    memset(pIpcHandle, 0, sizeof *pIpcHandle);
    memcpy(pIpcHandle->data, &h, sizeof h);
unlock:
    pthread_mutex_unlock(&mem.lock);
    return r;
}

/* Is fd a device memfd of this driver, of the size and device the handle says? */
static bool check_import_fd(const struct uzt_ipc *h)
{
    char link[64], target[PATH_MAX], expect[64];
    struct stat st;
    ssize_t n;

    if (fcntl(h->fd, F_GETFD) < 0) {
        uzt_log("zeMemOpenIpcHandle: fd %d is not open", h->fd);
        return false;
    }
    snprintf(link, sizeof link, "/proc/self/fd/%d", h->fd);
    n = readlink(link, target, sizeof target - 1);
    target[n > 0 ? n : 0] = '\0';
    snprintf(expect, sizeof expect, "/memfd:" UZT_MEMFD_DEVICE_PREFIX "%u ", h->dev);
    if (fcntl(h->fd, F_GET_SEALS) < 0 || strncmp(target, "/memfd:" UZT_MEMFD_DEVICE_PREFIX,
                                                 strlen("/memfd:" UZT_MEMFD_DEVICE_PREFIX))) {
        uzt_log("zeMemOpenIpcHandle: fd %d (%s) is not device memory of this driver", h->fd,
                target);
        return false;
    }
    if (strncmp(target, expect, strlen(expect))) {
        uzt_log("zeMemOpenIpcHandle: fd %d (%s) is not memory of device %u named in the handle",
                h->fd, target, h->dev);
        return false;
    }
    if (fstat(h->fd, &st) != 0) {
        uzt_log("zeMemOpenIpcHandle: fstat of fd %d: %s", h->fd, strerror(errno));
        return false;
    }
    if ((uint64_t)st.st_size != h->size) {
        uzt_log("zeMemOpenIpcHandle: the handle says %" PRIu64 " bytes, fd %d holds %lld", h->size,
                h->fd, (long long)st.st_size);
        return false;
    }
    return true;
}

ze_result_t uzt_mem_open_ipc_handle(ze_context_handle_t hContext, ze_device_handle_t hDevice,
                                    ze_ipc_mem_handle_t handle, ze_ipc_memory_flags_t flags,
                                    void **pptr)
{
    struct uzt_req req = {.op = UZT_OP_MAP_FD};
    struct uzt_alloc *a = NULL;
    struct uzt_ipc h;
    ze_result_t r = ZE_RESULT_ERROR_INVALID_ARGUMENT;
    uint64_t base;
    size_t index;

    (void)flags;
    if (!uzt_cast(hContext, UZT_MAGIC_CONTEXT) || !uzt_cast(hDevice, UZT_MAGIC_DEVICE))
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    memcpy(&h, handle.data, sizeof h);
    if (memcmp(h.magic, UZT_IPC_MAGIC, 4) != 0) {
        uzt_log("zeMemOpenIpcHandle: not a handle of this driver (bad magic)");
        return r;
    }
    if (h.node != uzt.node_hash) {
        uzt_log("zeMemOpenIpcHandle: the handle comes from another node (node hash %#" PRIx64
                ", here %#" PRIx64 ")",
                h.node, uzt.node_hash);
        return r;
    }
    if (h.dev >= uzt.ndev) {
        uzt_log("zeMemOpenIpcHandle: device index %u in the handle, %u devices on the node", h.dev,
                uzt.ndev);
        return r;
    }
    if (h.size == 0 || h.size % UZT_PAGE || h.size > UZT_MAX_ALLOC_SIZE) {
        uzt_log("zeMemOpenIpcHandle: size %" PRIu64 " in the handle is not an allocation size",
                h.size);
        return r;
    }
    if (!check_import_fd(&h))
        return r;

    a = new_alloc(UZT_ALLOC_IMPORT, h.size, h.dev);
    if (!a)
        return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    pthread_mutex_lock(&mem.lock);
    if (!table_place(&mem.device, a->size, UZT_PAGE, &base, &index)) {
        uzt_log("the device region has no free range of %" PRIu64 " bytes", a->size);
        r = ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY;
        goto unlock;
    }
    /* The helper keeps its own copy of the fd; the caller closes theirs. */
    req.addr = base;
    req.size = a->size;
    r = helper_call(&req, h.fd, "mapping an IPC handle");
    if (r != ZE_RESULT_SUCCESS)
        goto unlock;
    a->base = base;
    a->id = mem.next_id++;
    if (!table_insert(&mem.device, index, a)) {
        helper_unmap(a);
        r = ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
        goto unlock;
    }
    *pptr = (void *)base;
    a = NULL;
unlock:
    pthread_mutex_unlock(&mem.lock);
    free(a);
    return r;
}

ze_result_t uzt_mem_close_ipc_handle(ze_context_handle_t hContext, const void *ptr)
{
    uint64_t addr = (uint64_t)(uintptr_t)ptr;
    ze_result_t r = ZE_RESULT_ERROR_INVALID_ARGUMENT;
    struct uzt_alloc *a;
    size_t i;

    if (!uzt_cast(hContext, UZT_MAGIC_CONTEXT))
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    pthread_mutex_lock(&mem.lock);
    a = table_find(&mem.device, addr, &i);
    if (!a || a->kind != UZT_ALLOC_IMPORT || a->base != addr) {
        uzt_log("zeMemCloseIpcHandle(%p): not a pointer from zeMemOpenIpcHandle", ptr);
    } else {
        free_locked(&mem.device, i);
        r = ZE_RESULT_SUCCESS;
    }
    pthread_mutex_unlock(&mem.lock);
    return r;
}
