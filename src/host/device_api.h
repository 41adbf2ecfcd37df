/* The host side of the device API: fills the state that device code reads
 * (include/ushmem/detail/device_state.h) and starts the proxy thread when
 * some device call needs it. */
#ifndef USHMEMI_HOST_DEVICE_API_H
#define USHMEMI_HOST_DEVICE_API_H

#include <stddef.h>

#include "../common/status.h"

/* Called by shmem_init once every peer's routes are built and before the
 * final barrier: validates USHMEM_DEVICE_ROUTE and USHMEM_PROXY_RING_SIZE,
 * fills the device state and starts the proxy when USHMEM_DEVICE_ROUTE=proxy
 * or some peer's RMA, AMO, SIGNAL or SYNC route is neither direct nor self.
 * Errors are logged here. */
ushmem_status_t ushmemi_device_api_init(void);

/* Called by shmem_finalize before the fabric closes and the peers' heaps are
 * unmapped: stops the proxy after executing every request already submitted,
 * and clears the state. Safe when init did not run or failed. */
void ushmemi_device_api_fini(void);

/* Prints, once, why a device call ended a kernel for the caller's error
 * (device_state.h's fault record), if one did: called where the library
 * ends the job or the program (ushmemi_fatal, shmem_global_exit), at
 * finalize and at exit. Nothing before init or after finalize. */
void ushmemi_device_api_fault_report(void);

/* Every PE's heap grew to heap_size bytes: the proxy's roads over mapped
 * heaps reach the new bytes. (The device state's bounds are the reserve.) */
void ushmemi_device_api_heap_grown(size_t heap_size);

/* Waits until the proxy has done every request that device code handed it
 * before the call (a kernel's puts, atomics and signals it did not quiet):
 * the host's quiet, and so its barrier, completes them as it does the
 * host's own. Nothing to do without a proxy. */
void ushmemi_device_api_quiet(void);

/* Team id `id` (shmemx_team_id) is now `team`, or no team (NULL), in the
 * table device code reads: called where a team is made, before the barrier
 * that ends its split, and where it is destroyed. Nothing before the device
 * API's init or after its fini. */
struct ushmemi_team;
void ushmemi_device_api_team_set(const char *call, int id, const struct ushmemi_team *team);

#endif
