/* The ipc transport's ops table: puts, gets and atomics on peers' symmetric
 * memory that is already mapped into this process (by ushmemi_ipc_connect and
 * the data-segment sharing), addressed by symmetric offset. The proxy thread
 * uses it for PEs whose memory is mapped, when device code sends it requests
 * for them (USHMEM_DEVICE_ROUTE=proxy, or a class without a direct road).
 * It copies with the CPU, so the mapped memory must be host-accessible. */
#ifndef USHMEMI_TRANSPORT_IPC_OPS_H
#define USHMEMI_TRANSPORT_IPC_OPS_H

#include <stddef.h>

#include "../common/status.h"
#include "ops.h"

/* Its init op answers USHMEM_ERR_UNSUPPORTED: the transport is made from
 * mappings that exist already, with ushmemi_ipc_transport_create. */
extern const struct ushmemi_transport_ops ushmemi_transport_ipc_ops;

/* peer_bases: npes entries, each PE's heap as mapped here (this PE's own heap
 * for itself), NULL for PEs that are not mapped; every heap is heap_size
 * bytes. The array is copied. */
ushmem_status_t ushmemi_ipc_transport_create(void *const *peer_bases, int npes, size_t heap_size,
                                             struct ushmemi_transport **t_p);
/* Adds the data segment (USHMEMI_SEG_STATIC): static_bases as peer_bases
 * above, each segment static_size bytes. The array is copied. */
ushmem_status_t ushmemi_ipc_transport_set_static(struct ushmemi_transport *t,
                                                 void *const *static_bases, size_t static_size);
/* Every mapped heap grew to heap_size bytes (NULL t: nothing to do). */
void ushmemi_ipc_transport_set_heap_size(struct ushmemi_transport *t, size_t heap_size);
void ushmemi_ipc_transport_destroy(struct ushmemi_transport *t);

/* The copy-engine form, for heaps in device memory: a transport made by
 * ushmemi_ipc_transport_create and given its device here moves data with
 * the device's copy engine and runs atomics on the device; use it through
 * this table. */
extern const struct ushmemi_transport_ops ushmemi_transport_ipc_ce_ops;
ushmem_status_t ushmemi_ipc_transport_set_device(struct ushmemi_transport *t,
                                                 const struct ushmemi_device_ops *dev_ops,
                                                 struct ushmemi_device *dev);

#endif
