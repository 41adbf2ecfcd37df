/* The ofi transport: RMA and atomics to every PE's heap over libfabric. Only
 * the ops table is public; everything else is in ofi_private.h. */
#ifndef USHMEMI_TRANSPORT_OFI_H
#define USHMEMI_TRANSPORT_OFI_H

#include "ops.h"

extern const struct ushmemi_transport_ops ushmemi_transport_ofi_ops;

/* Lines for ushmem_info: the libfabric loaded (or why none), its providers
 * with RMA, atomics and FI_HMEM, the GPU memory it can register here, and
 * the signal handlers loading it installed. */
void ushmemi_ofi_describe(char *buf, size_t len);

#endif
