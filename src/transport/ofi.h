/* The ofi transport: RMA and atomics to every PE's heap over libfabric. Only
 * the ops table is public; everything else is in ofi_private.h. */
#ifndef USHMEMI_TRANSPORT_OFI_H
#define USHMEMI_TRANSPORT_OFI_H

#include "ops.h"

extern const struct ushmemi_transport_ops ushmemi_transport_ofi_ops;

#endif
