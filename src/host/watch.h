/* Waits that cannot end: a PE that has waited long in a barrier, a wait or
 * a lock looks at its node's peers through their host sync segments and
 * names one that will not come (its process gone, or past the last barrier
 * of shmem_finalize), once. */
#ifndef USHMEMI_HOST_WATCH_H
#define USHMEMI_HOST_WATCH_H

#include <stdbool.h>
#include <stdint.h>

#include "sync_seg.h"

enum ushmemi_watch_state {
    USHMEMI_WATCH_RUNNING = 1,
    USHMEMI_WATCH_FINALIZING = 2,         /* in shmem_finalize, called by the program */
    USHMEMI_WATCH_FINALIZING_AT_EXIT = 3, /* main returned without it: at exit */
};

/* Fills this PE's segment (pid, start time, running), before it is shared. */
void ushmemi_watch_open(struct ushmemi_sync_seg *own);

/* shmem_finalize begins (at_exit: the finalize at exit), and has passed
 * its last world barrier: said in this PE's segment for the peers. */
void ushmemi_watch_finalizing(bool at_exit);
void ushmemi_watch_left(void);

/* Nanoseconds of waiting before the first look (USHMEM_HANG_CHECK); 0: never. */
int64_t ushmemi_watch_after_ns(void);

/* One look, after waited_ns in `call` (world_epoch: the world barrier it
 * waits in, 0 for any other wait). Returns when to look again (waited
 * nanoseconds), 0 for not in this wait. */
int64_t ushmemi_watch_check(const char *call, uint64_t world_epoch, int64_t waited_ns);

#endif
