/* The ipc transport's ops table (ipc_ops.h): every operation is a CPU copy or
 * a C11 atomic on memory that is already mapped, after checking that the
 * target range lies inside the PE's segment. Copies complete before the call
 * returns, so the non-blocking forms are the blocking ones and quiet and
 * fence are memory fences.
 *
 * struct ushmemi_transport is defined here and, differently, by the ofi
 * transport (ofi_private.h); each is only ever used inside its own files. */
#include "ipc_ops.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "../common/log.h"

#include <ushmem/detail/ring.h>

struct ushmemi_transport {
    int npes;
    char **base[USHMEMI_SEG_COUNT]; /* per segment: npes mapped bases, NULL: none */
    size_t size[USHMEMI_SEG_COUNT];
    /* The copy-engine form (ushmemi_transport_ipc_ce_ops): the device that
     * moves the data and runs the atomics; NULL for the CPU form. */
    const struct ushmemi_device_ops *dev_ops;
    struct ushmemi_device *dev;
};

static const char *const segment_names[USHMEMI_SEG_COUNT] = {"symmetric heap", "data segment"};

/* Translates [sym_offset, +len) on pe into a mapped address; logs why not. */
static ushmem_status_t resolve(const struct ushmemi_transport *t, const char *what, int pe,
                               uint64_t sym_offset, size_t len, char **ptr_p)
{
    unsigned seg = ushmemi_sym_segment(sym_offset);
    uint64_t offset = ushmemi_sym_in_segment(sym_offset);

    if (pe < 0 || pe >= t->npes) {
        ushmemi_error("ipc transport: %s to PE %d refused: PE out of range (%d PEs; offset 0x%" PRIx64
                      ", %zu bytes)",
                      what, pe, t->npes, sym_offset, len);
        return USHMEM_ERR_OUT_OF_RANGE;
    }
    if (seg >= USHMEMI_SEG_COUNT || t->base[seg] == NULL || t->base[seg][pe] == NULL) {
        ushmemi_error("ipc transport: %s to PE %d refused: %s%s of that PE is not mapped here "
                      "(offset 0x%" PRIx64 ", %zu bytes)",
                      what, pe, seg < USHMEMI_SEG_COUNT ? "the " : "segment ",
                      seg < USHMEMI_SEG_COUNT ? segment_names[seg] : "?", sym_offset, len);
        return USHMEM_ERR_NO_ROUTE;
    }
    /* The heap's size grows while the proxy thread reads it. */
    size_t size = __atomic_load_n(&t->size[seg], __ATOMIC_RELAXED);
    if (offset > size || len > size - offset) {
        ushmemi_error("ipc transport: %s to PE %d refused: offset 0x%" PRIx64 " + %zu bytes lies "
                      "outside its %s of %zu bytes",
                      what, pe, offset, len, segment_names[seg], size);
        return USHMEM_ERR_OUT_OF_RANGE;
    }
    *ptr_p = t->base[seg][pe] + offset;
    return USHMEM_OK;
}

static ushmem_status_t ipc_init(const struct ushmemi_transport_params *params,
                                struct ushmemi_transport **t_p)
{
    (void)params;
    (void)t_p;
    return USHMEM_ERR_UNSUPPORTED;
}

static void ipc_fini(struct ushmemi_transport *t)
{
    ushmemi_ipc_transport_destroy(t);
}

static int ipc_can_atomic(struct ushmemi_transport *t, int pe, const char **why_p)
{
    if (pe >= 0 && pe < t->npes && t->base[USHMEMI_SEG_HEAP][pe] != NULL)
        return 1;
    *why_p = "the PE's heap is not mapped here";
    return 0;
}

static ushmem_status_t ipc_put(struct ushmemi_transport *t, int pe, uint64_t sym_offset,
                               const void *src, size_t len)
{
    char *dst;
    ushmem_status_t status = resolve(t, "put", pe, sym_offset, len, &dst);

    if (status == USHMEM_OK && len > 0)
        memcpy(dst, src, len);
    return status;
}

static ushmem_status_t ipc_get(struct ushmemi_transport *t, int pe, void *dst, uint64_t sym_offset,
                               size_t len)
{
    char *src;
    ushmem_status_t status = resolve(t, "get", pe, sym_offset, len, &src);

    if (status == USHMEM_OK && len > 0)
        memcpy(dst, src, len);
    return status;
}

static size_t amo_size(enum ushmemi_amo_type type)
{
    return type == USHMEMI_AMO_INT32 || type == USHMEMI_AMO_UINT32 || type == USHMEMI_AMO_FLOAT
               ? 4
               : 8;
}

/* The op on a 32-bit word; old value returned. Signed and unsigned types
 * share it: two's complement addition is the same on the bits. */
static uint32_t rmw32(_Atomic uint32_t *a, enum ushmemi_amo_op op, uint32_t v, uint32_t cmp)
{
    switch (op) {
    case USHMEMI_AMO_FETCH:
        return atomic_load(a);
    case USHMEMI_AMO_SET:
        atomic_store(a, v);
        return 0;
    case USHMEMI_AMO_SWAP:
        return atomic_exchange(a, v);
    case USHMEMI_AMO_CSWAP:
        atomic_compare_exchange_strong(a, &cmp, v);
        return cmp;
    case USHMEMI_AMO_ADD:
        return atomic_fetch_add(a, v);
    case USHMEMI_AMO_AND:
        return atomic_fetch_and(a, v);
    case USHMEMI_AMO_OR:
        return atomic_fetch_or(a, v);
    default:
        return atomic_fetch_xor(a, v);
    }
}

static uint64_t rmw64(_Atomic uint64_t *a, enum ushmemi_amo_op op, uint64_t v, uint64_t cmp)
{
    switch (op) {
    case USHMEMI_AMO_FETCH:
        return atomic_load(a);
    case USHMEMI_AMO_SET:
        atomic_store(a, v);
        return 0;
    case USHMEMI_AMO_SWAP:
        return atomic_exchange(a, v);
    case USHMEMI_AMO_CSWAP:
        atomic_compare_exchange_strong(a, &cmp, v);
        return cmp;
    case USHMEMI_AMO_ADD:
        return atomic_fetch_add(a, v);
    case USHMEMI_AMO_AND:
        return atomic_fetch_and(a, v);
    case USHMEMI_AMO_OR:
        return atomic_fetch_or(a, v);
    default:
        return atomic_fetch_xor(a, v);
    }
}

static ushmem_status_t ipc_atomic(struct ushmemi_transport *t, int pe, uint64_t sym_offset,
                                  enum ushmemi_amo_op op, enum ushmemi_amo_type type,
                                  const void *operand, const void *compare, void *result)
{
    size_t size = amo_size(type);
    bool floating = type == USHMEMI_AMO_FLOAT || type == USHMEMI_AMO_DOUBLE;
    char *target;
    ushmem_status_t status;

    if ((unsigned)op > USHMEMI_AMO_XOR || (unsigned)type > USHMEMI_AMO_DOUBLE ||
        (floating && op != USHMEMI_AMO_FETCH && op != USHMEMI_AMO_SET && op != USHMEMI_AMO_SWAP)) {
        ushmemi_error("ipc transport: atomic op %d on type %d to PE %d (offset 0x%" PRIx64
                      ") is not supported",
                      (int)op, (int)type, pe, sym_offset);
        return USHMEM_ERR_UNSUPPORTED;
    }
    status = resolve(t, "atomic", pe, sym_offset, size, &target);
    if (status != USHMEM_OK)
        return status;
    if (((uintptr_t)target & (size - 1)) != 0) {
        ushmemi_error("ipc transport: atomic to PE %d refused: offset 0x%" PRIx64
                      " is not aligned to %zu bytes",
                      pe, sym_offset, size);
        return USHMEM_ERR_INVALID_PARAM;
    }
    /* Operands are copied by bits: the float types travel as their words. */
    if (size == 4) {
        uint32_t v = 0, cmp = 0, old;
        if (operand != NULL)
            memcpy(&v, operand, 4);
        if (compare != NULL)
            memcpy(&cmp, compare, 4);
        old = rmw32((_Atomic uint32_t *)target, op, v, cmp);
        if (result != NULL && op != USHMEMI_AMO_SET)
            memcpy(result, &old, 4);
    } else {
        uint64_t v = 0, cmp = 0, old;
        if (operand != NULL)
            memcpy(&v, operand, 8);
        if (compare != NULL)
            memcpy(&cmp, compare, 8);
        old = rmw64((_Atomic uint64_t *)target, op, v, cmp);
        if (result != NULL && op != USHMEMI_AMO_SET)
            memcpy(result, &old, 8);
    }
    return USHMEM_OK;
}

static ushmem_status_t ipc_fence(struct ushmemi_transport *t)
{
    (void)t;
    atomic_thread_fence(memory_order_seq_cst);
    return USHMEM_OK;
}

/* Stores into a mapping need nobody's help to arrive. */
static int ipc_progress(struct ushmemi_transport *t)
{
    (void)t;
    return 0;
}

const struct ushmemi_transport_ops ushmemi_transport_ipc_ops = {
    .size = sizeof(struct ushmemi_transport_ops),
    .name = "ipc",
    .init = ipc_init,
    .fini = ipc_fini,
    .can_atomic = ipc_can_atomic,
    .put = ipc_put,
    .get = ipc_get,
    .put_nbi = ipc_put, /* a CPU copy is complete on return */
    .get_nbi = ipc_get,
    .atomic = ipc_atomic,
    .fence = ipc_fence,
    .quiet = ipc_fence,
    .progress = ipc_progress,
};

/* ---- The copy-engine form: the same mapped heaps, in device memory the CPU
 * must not touch. Data moves on the device's copy engine, and atomics run
 * on the device (ushmemi_device_ops.amo); the non-blocking forms leave the
 * copies queued until fence or quiet, which wait for the device. ---- */

static ushmem_status_t ce_copy(struct ushmemi_transport *t, void *dst, const void *src,
                               size_t len, bool wait)
{
    ushmem_status_t status = len > 0 ? t->dev_ops->copy(t->dev, dst, src, len) : USHMEM_OK;
    if (status == USHMEM_OK && wait)
        status = t->dev_ops->sync(t->dev);
    return status;
}

static ushmem_status_t ce_put_common(struct ushmemi_transport *t, int pe, uint64_t sym_offset,
                                     const void *src, size_t len, bool wait)
{
    char *dst;
    ushmem_status_t status = resolve(t, "put", pe, sym_offset, len, &dst);
    return status == USHMEM_OK ? ce_copy(t, dst, src, len, wait) : status;
}

static ushmem_status_t ce_get_common(struct ushmemi_transport *t, int pe, void *dst,
                                     uint64_t sym_offset, size_t len, bool wait)
{
    char *src;
    ushmem_status_t status = resolve(t, "get", pe, sym_offset, len, &src);
    return status == USHMEM_OK ? ce_copy(t, dst, src, len, wait) : status;
}

static ushmem_status_t ce_put(struct ushmemi_transport *t, int pe, uint64_t sym_offset,
                              const void *src, size_t len)
{
    return ce_put_common(t, pe, sym_offset, src, len, true);
}

static ushmem_status_t ce_get(struct ushmemi_transport *t, int pe, void *dst, uint64_t sym_offset,
                              size_t len)
{
    return ce_get_common(t, pe, dst, sym_offset, len, true);
}

static ushmem_status_t ce_put_nbi(struct ushmemi_transport *t, int pe, uint64_t sym_offset,
                                  const void *src, size_t len)
{
    return ce_put_common(t, pe, sym_offset, src, len, false);
}

static ushmem_status_t ce_get_nbi(struct ushmemi_transport *t, int pe, void *dst,
                                  uint64_t sym_offset, size_t len)
{
    return ce_get_common(t, pe, dst, sym_offset, len, false);
}

static ushmem_status_t ce_atomic(struct ushmemi_transport *t, int pe, uint64_t sym_offset,
                                 enum ushmemi_amo_op op, enum ushmemi_amo_type type,
                                 const void *operand, const void *compare, void *result)
{
    size_t size = amo_size(type);
    char *target;
    ushmem_status_t status = resolve(t, "atomic", pe, sym_offset, size, &target);
    if (status != USHMEM_OK)
        return status;
    /* The ring numbers the atomics as this transport does (checked below). */
    uint64_t v = 0, cmp = 0, old = 0;
    if (operand != NULL)
        memcpy(&v, operand, size);
    if (compare != NULL)
        memcpy(&cmp, compare, size);
    status = t->dev_ops->amo(t->dev, target, (unsigned)op, size, v, cmp, &old);
    if (status == USHMEM_OK && result != NULL && op != USHMEMI_AMO_SET)
        memcpy(result, &old, size);
    return status;
}

_Static_assert((int)USHMEMI_AMO_FETCH == (int)USHMEM_RING_AMO_FETCH &&
                   (int)USHMEMI_AMO_SET == (int)USHMEM_RING_AMO_SET &&
                   (int)USHMEMI_AMO_SWAP == (int)USHMEM_RING_AMO_SWAP &&
                   (int)USHMEMI_AMO_CSWAP == (int)USHMEM_RING_AMO_CSWAP &&
                   (int)USHMEMI_AMO_ADD == (int)USHMEM_RING_AMO_ADD &&
                   (int)USHMEMI_AMO_AND == (int)USHMEM_RING_AMO_AND &&
                   (int)USHMEMI_AMO_OR == (int)USHMEM_RING_AMO_OR &&
                   (int)USHMEMI_AMO_XOR == (int)USHMEM_RING_AMO_XOR,
               "the transport and the ring number the atomics alike");

/* Where a store of len bytes at sym_offset of PE pe goes, once the backend
 * can queue one. */
static ushmem_status_t store_target(const struct ushmemi_transport *t, const char *what, int pe,
                                   uint64_t sym_offset, size_t len, char **ptr_p)
{
    ushmem_status_t status = resolve(t, what, pe, sym_offset, len, ptr_p);
    if (status == USHMEM_OK && t->dev_ops->store == NULL) {
        ushmemi_error("ipc transport: the %s backend cannot queue a store", t->dev_ops->name);
        status = USHMEM_ERR_UNSUPPORTED;
    }
    return status;
}

static ushmem_status_t ce_put_value_nbi(struct ushmemi_transport *t, int pe,
                                        uint64_t sym_offset, uint64_t value, size_t len,
                                        const struct ushmemi_dev_then *then)
{
    char *dst;
    ushmem_status_t status = store_target(t, "put", pe, sym_offset, len, &dst);
    return status == USHMEM_OK ? t->dev_ops->store(t->dev, dst, value, len, then) : status;
}

/* The atomic, queued on the device behind what was queued before. */
static ushmem_status_t queue_atomic(struct ushmemi_transport *t, void *target, unsigned op,
                                    size_t size, uint64_t operand, uint64_t compare,
                                    uint64_t *result, const struct ushmemi_dev_then *then)
{
    if (t->dev_ops->amo_async == NULL) {
        ushmemi_error("ipc transport: the %s backend cannot queue an atomic", t->dev_ops->name);
        return USHMEM_ERR_UNSUPPORTED;
    }
    return t->dev_ops->amo_async(t->dev, target, op, size, operand, compare, result, then);
}

/* The put's store and its signal in one submission where they go together:
 * a set as the signal's write chained behind the store (and `then` behind
 * that); an add as the atomic's kernel storing the data first, where the
 * backend has store_amo_async. Else the store, then the signal's own (a
 * store, or an atomic, which refuses a word not 8-byte aligned): the put
 * still goes, as it does where the signal is outside the heap. */
static ushmem_status_t ce_put_value_signal_nbi(struct ushmemi_transport *t, int pe,
                                               uint64_t sym_offset, uint64_t value, size_t len,
                                               enum ushmemi_amo_op sig_op, uint64_t sig_offset,
                                               uint64_t sig_value,
                                               const struct ushmemi_dev_then *then)
{
    char *dst, *sig;
    if (sig_op != USHMEMI_AMO_SET && sig_op != USHMEMI_AMO_ADD) {
        ushmemi_error("ipc transport: a put with signal op %d refused (a set or an add)",
                      (int)sig_op);
        return USHMEM_ERR_INVALID_PARAM;
    }
    ushmem_status_t status = store_target(t, "put", pe, sym_offset, len, &dst);
    if (status != USHMEM_OK)
        return status;
    status = resolve(t, "signal", pe, sig_offset, sizeof(uint64_t), &sig);
    bool aligned = status == USHMEM_OK && ((uintptr_t)sig & 7) == 0;
    if (aligned && sig_op == USHMEMI_AMO_SET) {
        struct ushmemi_dev_then signal = {(uint64_t *)(void *)sig, sig_value, then};
        return t->dev_ops->store(t->dev, dst, value, len, &signal);
    }
    if (aligned && t->dev_ops->store_amo_async != NULL)
        return t->dev_ops->store_amo_async(t->dev, dst, value, len, sig, (unsigned)sig_op,
                                           sizeof(uint64_t), sig_value, then);
    ushmem_status_t put = t->dev_ops->store(t->dev, dst, value, len, NULL);
    if (put != USHMEM_OK || status != USHMEM_OK)
        return put != USHMEM_OK ? put : status;
    if (sig_op == USHMEMI_AMO_SET)
        return t->dev_ops->store(t->dev, sig, sig_value, sizeof(uint64_t), then);
    return queue_atomic(t, sig, (unsigned)sig_op, sizeof(uint64_t), sig_value, 0, NULL, then);
}

static ushmem_status_t ce_atomic_nbi(struct ushmemi_transport *t, int pe, uint64_t sym_offset,
                                     enum ushmemi_amo_op op, enum ushmemi_amo_type type,
                                     uint64_t operand, uint64_t compare, uint64_t *result,
                                     const struct ushmemi_dev_then *then)
{
    size_t size = amo_size(type);
    char *target;
    ushmem_status_t status = resolve(t, "atomic", pe, sym_offset, size, &target);
    if (status != USHMEM_OK)
        return status;
    return queue_atomic(t, target, (unsigned)op, size, operand, compare, result, then);
}

static ushmem_status_t ce_quiet(struct ushmemi_transport *t)
{
    return t->dev_ops->sync(t->dev);
}

const struct ushmemi_transport_ops ushmemi_transport_ipc_ce_ops = {
    .size = sizeof(struct ushmemi_transport_ops),
    .name = "ipc-ce",
    .init = ipc_init,
    .fini = ipc_fini,
    .can_atomic = ipc_can_atomic,
    .put = ce_put,
    .get = ce_get,
    .put_nbi = ce_put_nbi,
    .get_nbi = ce_get_nbi,
    .atomic = ce_atomic,
    .fence = ce_quiet, /* one stream: a wait orders everything before it */
    .quiet = ce_quiet,
    .progress = ipc_progress,
    .device_ordered = true,
    .put_value_nbi = ce_put_value_nbi,
    .atomic_nbi = ce_atomic_nbi,
    .put_value_signal_nbi = ce_put_value_signal_nbi,
};

ushmem_status_t ushmemi_ipc_transport_set_device(struct ushmemi_transport *t,
                                                 const struct ushmemi_device_ops *dev_ops,
                                                 struct ushmemi_device *dev)
{
    if (dev_ops == NULL || dev_ops->copy == NULL || dev_ops->sync == NULL ||
        dev_ops->amo == NULL) {
        ushmemi_error("ipc transport: the %s backend has no copy engine or device atomic",
                      dev_ops != NULL ? dev_ops->name : "(no)");
        return USHMEM_ERR_UNSUPPORTED;
    }
    t->dev_ops = dev_ops;
    t->dev = dev;
    return USHMEM_OK;
}

/* Copies npes bases into a new array. */
static ushmem_status_t copy_bases(void *const *bases, int npes, char ***copy_p)
{
    char **copy = calloc((size_t)npes, sizeof(*copy));

    if (copy == NULL) {
        ushmemi_error("ipc transport: cannot allocate the table of %d mapped bases", npes);
        return USHMEM_ERR_NO_MEMORY;
    }
    for (int pe = 0; pe < npes; pe++)
        copy[pe] = bases[pe];
    *copy_p = copy;
    return USHMEM_OK;
}

ushmem_status_t ushmemi_ipc_transport_create(void *const *peer_bases, int npes, size_t heap_size,
                                             struct ushmemi_transport **t_p)
{
    struct ushmemi_transport *t;
    ushmem_status_t status;

    if (peer_bases == NULL || npes < 1) {
        ushmemi_error("ushmemi_ipc_transport_create: no table of mapped heaps (npes %d)", npes);
        return USHMEM_ERR_INVALID_PARAM;
    }
    t = calloc(1, sizeof(*t));
    if (t == NULL) {
        ushmemi_error("ushmemi_ipc_transport_create: cannot allocate the transport");
        return USHMEM_ERR_NO_MEMORY;
    }
    t->npes = npes;
    status = copy_bases(peer_bases, npes, &t->base[USHMEMI_SEG_HEAP]);
    if (status != USHMEM_OK)
        goto free_t;
    t->size[USHMEMI_SEG_HEAP] = heap_size;
    *t_p = t;
    return USHMEM_OK;

free_t:
    free(t);
    return status;
}

ushmem_status_t ushmemi_ipc_transport_set_static(struct ushmemi_transport *t,
                                                 void *const *static_bases, size_t static_size)
{
    char **bases;
    ushmem_status_t status = copy_bases(static_bases, t->npes, &bases);

    if (status != USHMEM_OK)
        return status;
    free(t->base[USHMEMI_SEG_STATIC]);
    t->base[USHMEMI_SEG_STATIC] = bases;
    t->size[USHMEMI_SEG_STATIC] = static_size;
    return USHMEM_OK;
}

void ushmemi_ipc_transport_set_heap_size(struct ushmemi_transport *t, size_t heap_size)
{
    if (t != NULL)
        __atomic_store_n(&t->size[USHMEMI_SEG_HEAP], heap_size, __ATOMIC_RELAXED);
}

void ushmemi_ipc_transport_destroy(struct ushmemi_transport *t)
{
    if (t == NULL)
        return;
    for (int seg = 0; seg < USHMEMI_SEG_COUNT; seg++)
        free(t->base[seg]);
    free(t);
}
