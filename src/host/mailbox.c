/* Mailboxes for small collectives: see coll.h. Each PE counts the messages
 * it sent to each world PE and took from each; message k from s to r lies
 * in slot k % 2 of r's box for s and is complete when the slot's seq reads
 * k + 1. r acknowledges it by storing k + 1 into s's mbox_ack[r], and s
 * writes message k + 2 into the same slot only after that. Both words are
 * counters that only grow, waited for with ushmemi_poll_wait_reserved
 * (which blocks where cores are shared; the writer wakes it). */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "coll.h"
#include "internal.h"

_Static_assert(USHMEMI_MBOX_PES <= USHMEMI_COLL_MAX_SET_PES, "boxes are indexed by world PE");

static uint64_t sent[USHMEMI_MBOX_PES];  /* messages sent to world PE r */
static uint64_t taken[USHMEMI_MBOX_PES]; /* messages taken from world PE s */
static bool switched_off;

/* A new initialisation starts with zeroed heaps. */
void ushmemi_mbox_reset(void)
{
    memset(sent, 0, sizeof(sent));
    memset(taken, 0, sizeof(taken));
    const char *v = getenv("USHMEMI_COLL_MAILBOX"); /* measurement switch */
    switched_off = v != NULL && strcmp(v, "0") == 0;
}

static struct ushmemi_reserved *reserved_of(int pe)
{
    return (struct ushmemi_reserved *)(void *)ushmemi_g.peers[pe].base;
}

bool ushmemi_mbox_usable(const struct ushmemi_coll_set *set)
{
    if (switched_off || !ushmemi_g.heap_host_accessible || ushmemi_g.n_pes > USHMEMI_MBOX_PES)
        return false;
    if (!ushmemi_coll_set_direct(set))
        return false;
    for (int i = 0; i < set->size; i++)
        if (reserved_of(ushmemi_coll_world_pe(set, i)) == NULL)
            return false;
    return true;
}

void ushmemi_mbox_send(const char *call, int pe, const void *data, size_t len, size_t total)
{
    int me = ushmemi_g.my_pe;
    uint64_t k = sent[pe]++;
    /* Message k - 2 used this slot: wait until pe has taken it. */
    if (k >= 2)
        ushmemi_poll_wait_reserved(call, 0, &ushmemi_g.reserved->mbox_ack[pe], k - 1);
    struct ushmemi_mbox_slot *slot = &reserved_of(pe)->mbox[me][k % 2];
    slot->len = len;
    slot->total = total;
    memcpy(slot->data, data, len);
    atomic_store_explicit(&slot->seq, k + 1, memory_order_release);
    ushmemi_poll_wake_reserved(&slot->seq, reserved_of(pe));
}

const struct ushmemi_mbox_slot *ushmemi_mbox_wait(const char *call, int pe)
{
    uint64_t k = taken[pe];
    struct ushmemi_mbox_slot *slot = &ushmemi_g.reserved->mbox[pe][k % 2];
    ushmemi_poll_wait_reserved(call, 0, &slot->seq, k + 1);
    return slot;
}

void ushmemi_mbox_done(int pe)
{
    uint64_t k = ++taken[pe];
    _Atomic uint64_t *ack = &reserved_of(pe)->mbox_ack[ushmemi_g.my_pe];
    atomic_store_explicit(ack, k, memory_order_release);
    ushmemi_poll_wake_reserved(ack, reserved_of(pe));
}
