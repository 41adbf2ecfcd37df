/* Roads: how a host data call reaches one peer. Each peer has a route per
 * operation class (routes.c fills them at shmem_init):
 *
 *   self, direct   the peer's memory is mapped here: a copy (CPU, or the
 *                  device's copy engine when the heap is device memory) or a
 *                  C11 atomic on the mapping; complete on return;
 *   proxy/ofi      the fabric transport, by symmetric offset; blocking calls
 *                  complete on return, non-blocking ones by the next quiet;
 *   staged         the fabric, with local buffers that are device memory
 *                  bounced through host memory by the copy engine first, so
 *                  that no device pointer reaches the provider or the CPU.
 *
 * Host code calls the fabric itself rather than queueing on the proxy ring:
 * it runs on the CPU already, and a ring round trip would only add latency.
 * The ring is for device code (device_api.c). */
#include <stdlib.h>
#include <string.h>

#include <ushmem/detail/ring.h>

#include "device_api.h"
#include "internal.h"

/* Bounce buffers of the staged road move at most this much per step. */
#define STAGE_CHUNK ((size_t)1 << 20)

static _Noreturn void fabric_failed(const char *call, const char *what, int pe,
                                    const struct ushmemi_loc *loc, size_t len,
                                    ushmem_status_t status)
{
    ushmemi_fatal(call, "%s of %zu bytes to PE %d (segment %u, offset %llu) over the fabric "
                  "failed: %s", what, len, pe, ushmemi_sym_segment(loc->sym),
                  (unsigned long long)ushmemi_sym_in_segment(loc->sym),
                  ushmemi_status_string(status));
}

static bool is_device_local(const void *p, size_t len)
{
    return !ushmemi_g.heap_host_accessible && ushmemi_in_heap(p, len);
}

static char *stage_buffer(const char *call, size_t len)
{
    char *bounce = malloc(len < STAGE_CHUNK ? len : STAGE_CHUNK);
    if (bounce == NULL)
        ushmemi_fatal(call, "out of host memory for a %zu-byte staging buffer",
                      len < STAGE_CHUNK ? len : STAGE_CHUNK);
    return bounce;
}

static void fabric_put(const char *call, int pe, const struct ushmemi_loc *loc, const void *src,
                       size_t len, bool nbi, bool staged)
{
    const struct ushmemi_transport_ops *ops = ushmemi_g.fabric_ops;
    ushmem_status_t status;
    if (staged && is_device_local(src, len)) {
        /* Blocking, chunk by chunk: the bounce is reused at once. */
        char *bounce = stage_buffer(call, len);
        for (size_t done = 0; done < len; done += STAGE_CHUNK) {
            size_t n = len - done < STAGE_CHUNK ? len - done : STAGE_CHUNK;
            ushmemi_host_copy(call, bounce, (const char *)src + done, n);
            status = ops->put(ushmemi_g.fabric, pe, loc->sym + done, bounce, n);
            if (status != USHMEM_OK) {
                free(bounce);
                fabric_failed(call, "staged put", pe, loc, len, status);
            }
        }
        free(bounce);
        return;
    }
    status = nbi ? ops->put_nbi(ushmemi_g.fabric, pe, loc->sym, src, len)
                 : ops->put(ushmemi_g.fabric, pe, loc->sym, src, len);
    if (status != USHMEM_OK) {
        /* A provider that read an unmapped source fails (EFAULT): say so. */
        if (!ushmemi_private_mapped(src, len))
            ushmemi_bad_private(call, "source", src, len, pe);
        fabric_failed(call, nbi ? "non-blocking put" : "put", pe, loc, len, status);
    }
}

static void fabric_get(const char *call, int pe, const struct ushmemi_loc *loc, void *dst,
                       size_t len, bool nbi, bool staged)
{
    const struct ushmemi_transport_ops *ops = ushmemi_g.fabric_ops;
    ushmem_status_t status;
    if (staged && is_device_local(dst, len)) {
        char *bounce = stage_buffer(call, len);
        for (size_t done = 0; done < len; done += STAGE_CHUNK) {
            size_t n = len - done < STAGE_CHUNK ? len - done : STAGE_CHUNK;
            status = ops->get(ushmemi_g.fabric, pe, bounce, loc->sym + done, n);
            if (status != USHMEM_OK) {
                free(bounce);
                fabric_failed(call, "staged get", pe, loc, len, status);
            }
            ushmemi_host_copy(call, (char *)dst + done, bounce, n);
        }
        free(bounce);
        return;
    }
    status = nbi ? ops->get_nbi(ushmemi_g.fabric, pe, dst, loc->sym, len)
                 : ops->get(ushmemi_g.fabric, pe, dst, loc->sym, len);
    if (status != USHMEM_OK) {
        if (!ushmemi_private_mapped(dst, len))
            ushmemi_bad_private(call, "dest", dst, len, pe);
        fabric_failed(call, nbi ? "non-blocking get" : "get", pe, loc, len, status);
    }
}

static _Noreturn void no_route(const char *call, enum ushmemi_op_class cls, int pe)
{
    const struct ushmemi_peer *peer = &ushmemi_g.peers[pe];
    ushmemi_fatal(call, "no %s route to PE %d: %s", ushmemi_op_class_name(cls), pe,
                  peer->why[cls] ? peer->why[cls] : "none was found at shmem_init");
}

enum rma_road { RMA_EMPTY, RMA_MAPPED, RMA_FABRIC, RMA_STAGED };

/* Where one put or get goes, with loc_p filled for the symmetric side (in
 * the heap's user part or the data segment, or for the runtime's own calls
 * in the reserved area); a missing route is fatal. An empty transfer
 * touches no memory, so only the PE is checked: programs pass NULL or
 * unaligned pointers with a zero count. */
static inline enum rma_road rma_road(const char *call, const void *sym, size_t len, int pe,
                                     bool reserved, struct ushmemi_loc *loc_p)
{
    if (len == 0) {
        if (pe < 0 || pe >= ushmemi_g.n_pes)
            ushmemi_fatal(call, "PE %d is out of range (the job has %d PEs: 0 to %d)", pe,
                          ushmemi_g.n_pes, ushmemi_g.n_pes - 1);
        return RMA_EMPTY;
    }
    if (reserved)
        ushmemi_locate_reserved(call, sym, len, pe, loc_p);
    else
        ushmemi_locate(call, sym, len, pe, loc_p);
    enum ushmemi_route route = ushmemi_g.peers[pe].route[USHMEMI_CLASS_RMA];
    if (__builtin_expect(loc_p->mapped != NULL &&
                             (route == USHMEMI_ROUTE_DIRECT || route == USHMEMI_ROUTE_SELF),
                         1))
        return RMA_MAPPED;
    if (route == USHMEMI_ROUTE_PROXY_OFI)
        return RMA_FABRIC;
    if (route == USHMEMI_ROUTE_STAGED)
        return RMA_STAGED;
    no_route(call, USHMEMI_CLASS_RMA, pe);
}

void ushmemi_put(const char *call, void *dest, const void *src, size_t len, int pe, bool nbi)
{
    struct ushmemi_loc loc;
    enum rma_road road = rma_road(call, dest, len, pe, false, &loc);
    if (road == RMA_EMPTY)
        return;
    ushmemi_check_private(call, "source", src, len, pe);
    if (__builtin_expect(road == RMA_MAPPED, 1))
        ushmemi_host_put_copy(call, loc.mapped, src, len, nbi);
    else
        fabric_put(call, pe, &loc, src, len, nbi, road == RMA_STAGED);
}

static inline void get_from(const char *call, void *dst, const void *src, size_t len, int pe,
                            bool nbi, bool reserved)
{
    struct ushmemi_loc loc;
    enum rma_road road = rma_road(call, src, len, pe, reserved, &loc);
    if (road == RMA_EMPTY)
        return;
    ushmemi_check_private(call, "dest", dst, len, pe);
    if (__builtin_expect(road == RMA_MAPPED, 1))
        ushmemi_host_copy(call, dst, loc.mapped, len);
    else
        fabric_get(call, pe, &loc, dst, len, nbi, road == RMA_STAGED);
}

void ushmemi_get(const char *call, void *dst, const void *src, size_t len, int pe, bool nbi)
{
    get_from(call, dst, src, len, pe, nbi, false);
}

void ushmemi_get_reserved(const char *call, void *dst, const void *src, size_t len, int pe)
{
    get_from(call, dst, src, len, pe, false, true);
}

/* The mapped word of an atomic at loc (ushmemi_amo_direct). */
static void *amo_direct_at(const char *call, enum ushmemi_op_class cls, const void *addr,
                           size_t size, int pe, const struct ushmemi_loc *loc)
{
    if (__builtin_expect((uintptr_t)addr % size != 0, 0))
        ushmemi_fatal(call, "address %p to PE %d is not aligned to %zu bytes, as an atomic "
                      "needs", addr, pe, size);
    enum ushmemi_route route = ushmemi_g.peers[pe].route[cls];
    switch (route) {
    case USHMEMI_ROUTE_SELF:
    case USHMEMI_ROUTE_DIRECT:
    case USHMEMI_ROUTE_HOST_SYNC:
        if (loc->mapped == NULL)
            no_route(call, cls, pe);
        /* A word of a device heap is no address for the CPU: the device runs
         * the atomic (ushmemi_amo_indirect). The data segment is host
         * memory whatever the backend. */
        if (__builtin_expect(!ushmemi_g.heap_host_accessible &&
                                 ushmemi_sym_segment(loc->sym) == USHMEMI_SEG_HEAP,
                             0))
            return NULL;
        return loc->mapped;
    case USHMEMI_ROUTE_PROXY_OFI:
    case USHMEMI_ROUTE_STAGED:
        return NULL;
    case USHMEMI_ROUTE_NONE:
        break;
    }
    no_route(call, cls, pe);
}

void *ushmemi_amo_direct(const char *call, enum ushmemi_op_class cls, const void *addr,
                         size_t size, int pe)
{
    struct ushmemi_loc loc;
    ushmemi_locate(call, addr, size, pe, &loc);
    return amo_direct_at(call, cls, addr, size, pe, &loc);
}

_Static_assert(USHMEMI_AMO_FETCH == (int)USHMEM_RING_AMO_FETCH &&
                   USHMEMI_AMO_CSWAP == (int)USHMEM_RING_AMO_CSWAP &&
                   USHMEMI_AMO_XOR == (int)USHMEM_RING_AMO_XOR,
               "host atomics are numbered as the device atomic's");

/* The device backend's atomic kernel on a mapped word of a device heap,
 * after the copies queued before it: a put's data lands before its signal. */
static void amo_on_device(const char *call, void *word, int pe, enum ushmemi_amo_op op,
                          size_t size, const void *operand, const void *compare, void *result)
{
    uint64_t bits[2] = {0, 0}, old = 0;
    uint32_t narrow;
    const void *in[2] = {operand, compare};
    for (int i = 0; i < 2; i++) {
        if (in[i] != NULL && size == 4) {
            memcpy(&narrow, in[i], 4);
            bits[i] = narrow;
        } else if (in[i] != NULL) {
            memcpy(&bits[i], in[i], 8);
        }
    }
    const struct ushmemi_device_ops *ops = ushmemi_g.dev_ops;
    ushmem_status_t status = ops->amo != NULL
                                 ? ops->amo(ushmemi_g.dev, word, (unsigned)op, size, bits[0],
                                            bits[1], &old)
                                 : USHMEM_ERR_UNSUPPORTED;
    if (status != USHMEM_OK)
        ushmemi_fatal(call, "atomic to PE %d at %p: the symmetric heap is %s device memory, "
                      "which only the device's atomic kernel reaches, and it failed: %s%s", pe,
                      word, ops->name, ushmemi_status_string(status),
                      status == USHMEM_ERR_UNSUPPORTED
                          ? " (on ze: the driver takes no SPIR-V and USHMEM_ZE_KERNELS names no "
                            "module of the backend's kernels)"
                          : "");
    if (result != NULL && size == 4) {
        narrow = (uint32_t)old;
        memcpy(result, &narrow, 4);
    } else if (result != NULL) {
        memcpy(result, &old, 8);
    }
}

static size_t amo_size(enum ushmemi_amo_type type)
{
    return type == USHMEMI_AMO_INT32 || type == USHMEMI_AMO_UINT32 || type == USHMEMI_AMO_FLOAT
               ? 4
               : 8;
}

/* An atomic at loc that the CPU does not run itself (ushmemi_amo_indirect). */
static void amo_indirect_at(const char *call, enum ushmemi_op_class cls,
                            const struct ushmemi_loc *loc, int pe, enum ushmemi_amo_op op,
                            enum ushmemi_amo_type type, const void *operand, const void *compare,
                            void *result)
{
    size_t size = amo_size(type);
    enum ushmemi_route route = ushmemi_g.peers[pe].route[cls];
    bool mapped = route == USHMEMI_ROUTE_SELF || route == USHMEMI_ROUTE_DIRECT ||
                  route == USHMEMI_ROUTE_HOST_SYNC;
    if (mapped && loc->mapped != NULL) {
        amo_on_device(call, loc->mapped, pe, op, size, operand, compare, result);
        return;
    }
    if (ushmemi_g.fabric == NULL)
        no_route(call, cls, pe);
    ushmem_status_t status = ushmemi_g.fabric_ops->atomic(ushmemi_g.fabric, pe, loc->sym, op,
                                                          type, operand, compare, result);
    if (status != USHMEM_OK)
        fabric_failed(call, "atomic", pe, loc, size, status);
}

void ushmemi_amo_indirect(const char *call, enum ushmemi_op_class cls, const void *addr, int pe,
                          enum ushmemi_amo_op op, enum ushmemi_amo_type type,
                          const void *operand, const void *compare, void *result)
{
    struct ushmemi_loc loc;
    ushmemi_locate(call, addr, amo_size(type), pe, &loc);
    amo_indirect_at(call, cls, &loc, pe, op, type, operand, compare, result);
}

/* The runtime's own counters, in the reserved area: located as such, which
 * a user call's address never is. */
void ushmemi_sync_add(const char *call, _Atomic uint64_t *addr, uint64_t value, int pe)
{
    struct ushmemi_loc loc;
    ushmemi_locate_reserved(call, (const void *)addr, sizeof(*addr), pe, &loc);
    _Atomic uint64_t *word = amo_direct_at(call, USHMEMI_CLASS_SYNC, (const void *)addr,
                                           sizeof(*addr), pe, &loc);
    if (__builtin_expect(word != NULL, 1)) {
        /* Release publishes this PE's earlier stores (and what it saw from
         * others) to the PE that acquires the counter. */
        atomic_fetch_add_explicit(word, value, memory_order_acq_rel);
        if (__builtin_expect(ushmemi_g.cores_wake, 0)) {
            if (ushmemi_g.peers[pe].base != NULL)
                ushmemi_poll_wake_reserved(word, (struct ushmemi_reserved *)(void *)
                                                     ushmemi_g.peers[pe].base);
            else
                ushmemi_poll_wake_slow(word);
        }
        return;
    }
    /* Fabric puts are complete (delivered) when they return, and fabric
     * atomics are executed in order after them on this endpoint. */
    atomic_thread_fence(memory_order_seq_cst);
    amo_indirect_at(call, USHMEMI_CLASS_SYNC, &loc, pe, USHMEMI_AMO_ADD, USHMEMI_AMO_UINT64,
                    &value, NULL, NULL);
}

bool ushmemi_road_uses_fabric(enum ushmemi_op_class cls)
{
    for (int pe = 0; pe < ushmemi_g.n_pes; pe++) {
        enum ushmemi_route r = ushmemi_g.peers[pe].route[cls];
        if (r == USHMEMI_ROUTE_PROXY_OFI || r == USHMEMI_ROUTE_STAGED)
            return true;
    }
    return false;
}

void ushmemi_road_fence(const char *call)
{
    atomic_thread_fence(memory_order_seq_cst);
    if (ushmemi_g.fabric == NULL)
        return;
    ushmem_status_t status = ushmemi_g.fabric_ops->fence(ushmemi_g.fabric);
    if (status != USHMEM_OK)
        ushmemi_fatal(call, "fence over the fabric failed: %s", ushmemi_status_string(status));
}

void ushmemi_road_quiet(const char *call)
{
    ushmemi_host_copies_complete(call);
    ushmemi_device_api_quiet();
    atomic_thread_fence(memory_order_seq_cst);
    if (ushmemi_g.fabric == NULL)
        return;
    ushmem_status_t status = ushmemi_g.fabric_ops->quiet(ushmemi_g.fabric);
    if (status != USHMEM_OK)
        ushmemi_fatal(call, "quiet over the fabric failed: %s", ushmemi_status_string(status));
}
