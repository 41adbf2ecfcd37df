/* The ofi transport's atomics: which (operation, type) pairs the provider
 * offers, and the blocking atomic itself through fi_atomic, fi_fetch_atomic
 * and fi_compare_atomic. Operands and results travel through a registered
 * scratch area so that FI_MR_LOCAL providers get descriptors for them. */
#include "ofi_private.h"

#include <stdio.h>
#include <string.h>

#include "../common/log.h"

static const enum fi_datatype datatypes[OFI_AMO_TYPES] = {
    [USHMEMI_AMO_INT32] = FI_INT32,   [USHMEMI_AMO_UINT32] = FI_UINT32,
    [USHMEMI_AMO_INT64] = FI_INT64,   [USHMEMI_AMO_UINT64] = FI_UINT64,
    [USHMEMI_AMO_FLOAT] = FI_FLOAT,   [USHMEMI_AMO_DOUBLE] = FI_DOUBLE,
};
static const size_t type_sizes[OFI_AMO_TYPES] = {4, 4, 8, 8, sizeof(float), sizeof(double)};
static const char *const type_names[OFI_AMO_TYPES] = {"int32", "uint32", "int64",
                                                       "uint64", "float", "double"};
static const char *const op_names[OFI_AMO_OPS] = {"fetch", "set", "swap", "cswap",
                                                   "add",   "and", "or",   "xor"};

static bool is_float(enum ushmemi_amo_type type)
{
    return type == USHMEMI_AMO_FLOAT || type == USHMEMI_AMO_DOUBLE;
}

/* What the OpenSHMEM API needs: every op on integers, only fetch/set/swap on
 * floating point. */
static bool needed(enum ushmemi_amo_op op, enum ushmemi_amo_type type)
{
    return !is_float(type) || op == USHMEMI_AMO_FETCH || op == USHMEMI_AMO_SET ||
           op == USHMEMI_AMO_SWAP;
}

/* The libfabric call and operation that implement op. Every atomic fetches,
 * even when the caller wants no old value: a fetch completes only once the
 * target has applied it, which is what a blocking atomic promises, while a
 * non-fetching fi_atomicmsg with FI_DELIVERY_COMPLETE makes shm in libfabric
 * 1.17 complete later fetches before their results are written. */
static void lower(enum ushmemi_amo_op op, enum ofi_xfer_kind *kind_p, enum fi_op *amo_p)
{
    static const enum fi_op amos[OFI_AMO_OPS] = {
        [USHMEMI_AMO_FETCH] = FI_ATOMIC_READ, [USHMEMI_AMO_SET] = FI_ATOMIC_WRITE,
        [USHMEMI_AMO_SWAP] = FI_ATOMIC_WRITE, [USHMEMI_AMO_CSWAP] = FI_CSWAP,
        [USHMEMI_AMO_ADD] = FI_SUM,           [USHMEMI_AMO_AND] = FI_BAND,
        [USHMEMI_AMO_OR] = FI_BOR,            [USHMEMI_AMO_XOR] = FI_BXOR,
    };
    *amo_p = amos[op];
    *kind_p = op == USHMEMI_AMO_CSWAP ? OFI_X_COMPARE : OFI_X_FETCH;
}

static bool provider_offers(struct ushmemi_transport *t, enum ofi_xfer_kind kind,
                            enum fi_datatype dt, enum fi_op amo)
{
    size_t count = 0;
    int rc;
    switch (kind) {
    case OFI_X_FETCH:
        rc = fi_fetch_atomicvalid(t->ep, dt, amo, &count);
        break;
    case OFI_X_COMPARE:
        rc = fi_compare_atomicvalid(t->ep, dt, amo, &count);
        break;
    default:
        return false;
    }
    return rc == 0 && count >= 1;
}

void ushmemi_ofi_atomic_probe(struct ushmemi_transport *t)
{
    if (!t->have_atomics)
        return; /* init already said why */
    /* Observed here: with ofi_rxd (over udp), a fetching atomic from several
     * PEs makes the target crash inside libfabric 1.17 (SIGSEGV in its
     * progress), and in 2.6 the barrier's atomics between two PEs never
     * complete; so atomics are refused up front rather than offered. */
    if (strstr(t->prov_name, "ofi_rxd") != NULL) {
        t->have_atomics = false;
        snprintf(t->no_atomic_why, sizeof(t->no_atomic_why),
                 "provider %s in libfabric %u.%u is not safe for atomics (1.17 crashes the "
                 "target on concurrent fetching atomics; 2.6 leaves atomics without completion)",
                 t->prov_name, FI_MAJOR(ushmemi_fi.version()), FI_MINOR(ushmemi_fi.version()));
        ushmemi_debug("ofi: atomics unavailable: %s", t->no_atomic_why);
        return;
    }
    for (int op = 0; op < OFI_AMO_OPS; op++) {
        for (int type = 0; type < OFI_AMO_TYPES; type++) {
            enum ofi_xfer_kind kind;
            enum fi_op amo;
            lower((enum ushmemi_amo_op)op, &kind, &amo);
            bool ok = provider_offers(t, kind, datatypes[type], amo);
            t->amo_valid[op][type] = ok;
            if (!ok && needed((enum ushmemi_amo_op)op, (enum ushmemi_amo_type)type) &&
                t->have_atomics) {
                t->have_atomics = false;
                snprintf(t->no_atomic_why, sizeof(t->no_atomic_why),
                         "provider %s in libfabric %u.%u offers no %s on %s", t->prov_name,
                         FI_MAJOR(ushmemi_fi.version()), FI_MINOR(ushmemi_fi.version()), op_names[op],
                         type_names[type]);
            }
        }
    }
    if (t->have_atomics)
        ushmemi_debug("ofi: provider %s offers every atomic the API needs", t->prov_name);
    else
        ushmemi_debug("ofi: atomics unavailable: %s", t->no_atomic_why);
}

ushmem_status_t ushmemi_ofi_atomic(struct ushmemi_transport *t, int pe, uint64_t offset,
                                   enum ushmemi_amo_op op, enum ushmemi_amo_type type,
                                   const void *operand, const void *compare, void *result)
{
    if ((unsigned)op >= OFI_AMO_OPS || (unsigned)type >= OFI_AMO_TYPES || !needed(op, type)) {
        ushmemi_error("ofi atomic to PE %d: operation %d on type %d is not an OpenSHMEM atomic",
                      pe, (int)op, (int)type);
        return USHMEM_ERR_INVALID_PARAM;
    }
    bool always_fetches = op == USHMEMI_AMO_FETCH || op == USHMEMI_AMO_SWAP ||
                          op == USHMEMI_AMO_CSWAP;
    if ((always_fetches && result == NULL) || (op != USHMEMI_AMO_FETCH && operand == NULL) ||
        (op == USHMEMI_AMO_CSWAP && compare == NULL)) {
        ushmemi_error("ofi atomic %s to PE %d: missing operand, compare or result pointer",
                      op_names[op], pe);
        return USHMEM_ERR_INVALID_PARAM;
    }
    size_t size = type_sizes[type];
    ushmem_status_t status = ushmemi_ofi_check_range(t, "atomic", pe, offset, size);
    if (status != USHMEM_OK)
        return status;
    /* Landing: the owner's device runs it; the provider's atomics are not used. */
    if (ushmemi_ofi_lands(t, pe, offset))
        return ushmemi_ofi_am_atomic(t, pe, offset, op, size, operand, compare, result);
    if (!t->amo_valid[op][type]) {
        ushmemi_error("ofi atomic %s on %s to PE %d: %s", op_names[op], type_names[type], pe,
                      t->no_atomic_why[0] != '\0' ? t->no_atomic_why
                                                  : "the provider does not offer it");
        return USHMEM_ERR_UNSUPPORTED;
    }

    enum ofi_xfer_kind kind;
    enum fi_op amo;
    lower(op, &kind, &amo);
    struct ofi_op *ctx = ushmemi_ofi_op_new("atomic", pe, false);
    if (ctx == NULL)
        return USHMEM_ERR_NO_MEMORY;

    pthread_mutex_lock(&t->amo_lock);
    char *scratch = t->scratch + (size_t)OFI_NBI_SLOTS * OFI_NBI_SLOT_SIZE;
    char *s_operand = scratch, *s_compare = scratch + 16, *s_result = scratch + 32;
    memset(scratch, 0, 48);
    if (operand != NULL)
        memcpy(s_operand, operand, size);
    if (compare != NULL)
        memcpy(s_compare, compare, size);
    struct ofi_xfer x = {.kind = kind, .pe = pe, .offset = offset, .local = s_operand,
                         .len = size, .desc = t->scratch_desc, .compare = s_compare,
                         .compare_desc = t->scratch_desc, .result = s_result,
                         .result_desc = t->scratch_desc, .datatype = datatypes[type],
                         .amo = amo, .op = ctx};
    status = ushmemi_ofi_issue(t, &x, op_names[op]);
    if (status != USHMEM_OK) {
        ushmemi_ofi_op_drop(t, ctx);
        goto unlock;
    }
    status = ushmemi_ofi_op_wait(t, ctx);
    if (status == USHMEM_OK && result != NULL)
        memcpy(result, s_result, size);

unlock:
    /* After a timeout the scratch may still be written by the provider; the
     * transport is unusable then anyway, and the error has been reported. */
    pthread_mutex_unlock(&t->amo_lock);
    return status;
}
