/* The host sync segment (sync_seg.c): host memory per PE, mapped by the
 * node's PEs, for the counters the CPU polls when the heap is device memory. */
#ifndef USHMEMI_HOST_SYNC_SEG_H
#define USHMEMI_HOST_SYNC_SEG_H

#include <stdatomic.h>
#include <stdint.h>

#include "../common/status.h"
#include "../transport/transport.h"

struct ushmemi_sync_seg {
    /* barrier_flags[k] counts round-k signals of world barriers, as the
     * heap's counters of the same name do (barrier.c). */
    _Atomic uint64_t barrier_flags[64];
    /* set_flags[s] counts set-barrier signals from world PE s, as the
     * collective scratch's counters do (barrier.c). */
    _Atomic uint64_t set_flags[1024];
};

/* Collective over the job (uses ushmemi_ipc_connect): allocates and shares
 * this PE's segment and maps the local peers'. Errors are logged. */
ushmem_status_t ushmemi_sync_seg_open(const struct ushmemi_oob *oob,
                                      const struct ushmemi_ipc_config *config);
/* Unmaps and frees what open made; safe when open did not run or failed. */
void ushmemi_sync_seg_close(int npes, int my_pe);
/* PE pe's segment as mapped here; NULL unless every PE's segment is mapped. */
struct ushmemi_sync_seg *ushmemi_sync_seg(int pe);

#endif
