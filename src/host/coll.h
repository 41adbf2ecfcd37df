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

/* Whether every member of set is this PE or reached directly for RMA (its
 * heap mapped here): the same answer on every member, as a pair maps each
 * other's memory or neither does. */
bool ushmemi_coll_set_direct(const struct ushmemi_coll_set *set);
/* Mailboxes for small collectives (mailbox.c): a member pushes its data
 * into each receiver's box for it and goes on; a receiver waits for the
 * message, reads it in place and acknowledges it. Messages between two PEs
 * are numbered in the order sent, and a box's two slots alternate, so a
 * sender waits only when the receiver has not yet taken the message before
 * the previous one. No barrier: a collective that needs one message per
 * pair costs one hand-off between two PEs, not log2(N) rounds twice.
 *
 * Usable when the heap is host memory, the job has at most
 * USHMEMI_MBOX_PES PEs and every member maps every other member's heap
 * (the same answer on every member: a pair maps each other or neither, and
 * mapping is by node). Off with the measurement switch
 * USHMEMI_COLL_MAILBOX=0, for comparisons and tests of the other road. */
bool ushmemi_mbox_usable(const struct ushmemi_coll_set *set);
/* The most bytes a member sends through them in one collective: two slots
 * where cores are shared (the barriers they save cost scheduler hand-offs);
 * else 512, past which the pulls between two barriers, which copy the data
 * once instead of twice, are as fast (OSU at 2 PEs on 2 cores). The same on
 * every PE (coll_wake is the job's). */
static inline size_t ushmemi_mbox_limit(void)
{
    return ushmemi_g.coll_wake ? 2 * USHMEMI_MBOX_PAYLOAD : 512;
}

/* Sends len <= USHMEMI_MBOX_PAYLOAD bytes (and, for collect, the size of the
 * sender's whole contribution) to world PE pe. */
void ushmemi_mbox_send(const char *call, int pe, const void *data, size_t len, size_t total);
/* Waits for the next message from world PE pe and returns its slot, which
 * stays valid until ushmemi_mbox_done(pe). */
const struct ushmemi_mbox_slot *ushmemi_mbox_wait(const char *call, int pe);
void ushmemi_mbox_done(int pe);

#endif
