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
    /* Who owns the segment and how far it got, for a peer that has waited
     * long for it (watch.c). Written by the owner: the first four before
     * the segment is shared, the rest at shmem_finalize; `reported` by the
     * first peer that names the owner. */
    int32_t pid;
    uint64_t start_time; /* the process's start (clock ticks after boot): a reused pid differs */
    uint64_t pid_ns;     /* its pid namespace's inode: a pid means the same only in one */
    _Atomic uint32_t state; /* enum ushmemi_watch_state */
    _Atomic uint32_t left;  /* it passed shmem_finalize's last barrier, world barrier left_epoch */
    uint64_t left_epoch;
    _Atomic uint32_t reported;
};

/* Collective over the job (uses ushmemi_ipc_connect): allocates and shares
 * this PE's segment and maps the local peers'. Errors are logged. */
ushmem_status_t ushmemi_sync_seg_open(const struct ushmemi_oob *oob,
                                      const struct ushmemi_ipc_config *config);
/* Unmaps and frees what open made; safe when open did not run or failed. */
void ushmemi_sync_seg_close(int npes, int my_pe);
/* PE pe's segment as mapped here; NULL unless every PE's segment is mapped. */
struct ushmemi_sync_seg *ushmemi_sync_seg(int pe);
/* PE pe's segment as mapped here, whether or not every PE's is; NULL when
 * it is not mapped (another node, USHMEM_IPC=0) or the segments are closed. */
struct ushmemi_sync_seg *ushmemi_sync_seg_mapped(int pe);

#endif
