/* The ofi transport of a build without libfabric: the same ops table, whose
 * init says why no fabric can be opened, so that the core needs no #ifdef
 * and a job that needs the fabric fails at shmem_init with that sentence. */
#include "ofi.h"
#include "transport.h"

#include <stdio.h>

#include "../common/log.h"

static ushmem_status_t none_init(const struct ushmemi_transport_params *params,
                                 struct ushmemi_transport **t_p)
{
    (void)t_p;
    int rank = -1;
    if (params != NULL && params->oob != NULL)
        rank = params->oob->rank;
    ushmemi_error("ofi init on PE %d: this ushmem was built without libfabric (meson found no "
                  "libfabric, or -Dofi=disabled), so peers that cannot be mapped are unreachable; "
                  "rebuild with libfabric-dev installed", rank);
    return USHMEM_ERR_TRANSPORT;
}

void ushmemi_ofi_describe(char *buf, size_t len)
{
    if (len > 0)
        snprintf(buf, len, "         not built: meson found no libfabric (pkg-config libfabric)\n");
}

/* Nothing below is reached: init never succeeds. */
void ushmemi_ofi_endpoint_text(struct ushmemi_transport *t, char *buf, size_t len)
{
    (void)t;
    if (len > 0)
        snprintf(buf, len, "none: this build has no libfabric");
}

void ushmemi_ofi_registration_text(struct ushmemi_transport *t, char *buf, size_t len)
{
    (void)t;
    if (len > 0)
        snprintf(buf, len, "none: this build has no libfabric");
}

static void none_fini(struct ushmemi_transport *t)
{
    (void)t;
}

static int none_can_atomic(struct ushmemi_transport *t, int pe, const char **why_p)
{
    (void)t, (void)pe;
    *why_p = "this build has no libfabric";
    return 0;
}

static ushmem_status_t none_put(struct ushmemi_transport *t, int pe, uint64_t sym_offset,
                                const void *src, size_t len)
{
    (void)t, (void)pe, (void)sym_offset, (void)src, (void)len;
    return USHMEM_ERR_UNSUPPORTED;
}

static ushmem_status_t none_get(struct ushmemi_transport *t, int pe, void *dst,
                                uint64_t sym_offset, size_t len)
{
    (void)t, (void)pe, (void)dst, (void)sym_offset, (void)len;
    return USHMEM_ERR_UNSUPPORTED;
}

static ushmem_status_t none_atomic(struct ushmemi_transport *t, int pe, uint64_t sym_offset,
                                   enum ushmemi_amo_op op, enum ushmemi_amo_type type,
                                   const void *operand, const void *compare, void *result)
{
    (void)t, (void)pe, (void)sym_offset, (void)op, (void)type, (void)operand, (void)compare,
        (void)result;
    return USHMEM_ERR_UNSUPPORTED;
}

static ushmem_status_t none_sync(struct ushmemi_transport *t)
{
    (void)t;
    return USHMEM_ERR_UNSUPPORTED;
}

static int none_progress(struct ushmemi_transport *t)
{
    (void)t;
    return 0;
}

const struct ushmemi_transport_ops ushmemi_transport_ofi_ops = {
    .size = sizeof(struct ushmemi_transport_ops),
    .name = "ofi",
    .init = none_init,
    .fini = none_fini,
    .can_atomic = none_can_atomic,
    .put = none_put,
    .get = none_get,
    .put_nbi = none_put,
    .get_nbi = none_get,
    .atomic = none_atomic,
    .fence = none_sync,
    .quiet = none_sync,
    .progress = none_progress,
};
