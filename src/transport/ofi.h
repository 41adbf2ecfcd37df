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

/* For ushmem_info --topology: the address the endpoint of an open ofi
 * transport listens on (fi_getname, as text), its provider, and why it has
 * that address. */
void ushmemi_ofi_endpoint_text(struct ushmemi_transport *t, char *buf, size_t len);

/* For ushmem_info --topology: how the registrations' keys were chosen and
 * which bytes of the heap and the data segment are registered. */
void ushmemi_ofi_registration_text(struct ushmemi_transport *t, char *buf, size_t len);

#endif
