/* Private interface between barrier.c (synchronisation over a set of PEs)
 * and coll.c (data collectives): the PE-set descriptor and the layout of the
 * collective scratch in the reserved part of every heap. */
#ifndef USHMEMI_HOST_COLL_H
#define USHMEMI_HOST_COLL_H

#include <stdbool.h>

#include "internal.h"

/* A strided set of world PEs: member i is world PE start + i * stride. Teams
 * and deprecated active sets both resolve to one. */
struct ushmemi_coll_set {
    int start, stride, size;
    int me;     /* this PE's index in the set */
    bool world; /* every PE in world order: uses the world barrier counters */
};

static inline int ushmemi_coll_world_pe(const struct ushmemi_coll_set *set, int index)
{
    return set->start + index * set->stride;
}

/* Scratch layout. The first part holds the set-barrier counters, one 64-bit
 * word per sending world PE; the rest stages collective data. */
#define USHMEMI_COLL_MAX_SET_PES 1024
#define USHMEMI_COLL_STAGE_OFFSET (USHMEMI_COLL_MAX_SET_PES * sizeof(uint64_t))
#define USHMEMI_COLL_STAGE_SIZE (USHMEMI_SCRATCH_SIZE - USHMEMI_COLL_STAGE_OFFSET)

/* Resolves a team handle. SHMEM_TEAM_INVALID: logged, ERR_INVALID_PARAM (the
 * caller returns nonzero as the spec asks); any other unknown handle is
 * fatal. */
ushmem_status_t ushmemi_coll_team_set(const char *call, const struct ushmemi_team *team,
                                      struct ushmemi_coll_set *set_p);

/* Resolves a deprecated active set; fatal when the triplet is malformed, lies
 * outside the job, or does not contain this PE. */
void ushmemi_coll_active_set(const char *call, int PE_start, int logPE_stride, int PE_size,
                             struct ushmemi_coll_set *set_p);

/* Barrier over the set's members, without quiet. Stores made before it by
 * any member are visible to every member after it. */
void ushmemi_coll_barrier(const char *call, const struct ushmemi_coll_set *set);

#endif
