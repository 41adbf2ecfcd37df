/* The request ring's memory and its consumer side. The ring is host-pinned
 * memory from the device backend (never shared or managed memory, whose pages
 * can migrate to the device); the layout and the producer side are in
 * include/ushmem/detail/ring.h. There is exactly one consumer, the proxy
 * thread, so the consumer's position is kept privately and only published. */
#include "proxy.h"

#include <stdlib.h>
#include <string.h>

#include "../common/log.h"

struct ushmemi_ring {
    const struct ushmemi_device_ops *dev_ops;
    struct ushmemi_device *dev;
    struct ushmem_ring_header *hdr;
    struct ushmem_ring_request *slots;
    size_t bytes;
    uint64_t head; /* consumer's copy of hdr->head: only it writes there */
    uint64_t mask;
    struct ushmem_ring_result *cells;
    uint64_t *cell_owner; /* per cell: ticket + 1 of the last result written, 0: none */
};

ushmem_status_t ushmemi_ring_create(const struct ushmemi_device_ops *dev_ops,
                                    struct ushmemi_device *dev, uint32_t capacity,
                                    struct ushmemi_ring **ring_p)
{
    ushmem_status_t status;
    struct ushmemi_ring *ring;
    void *mem;

    if (capacity < 2 || (capacity & (capacity - 1)) != 0) {
        ushmemi_error("ushmemi_ring_create: capacity %u is not a power of two of at least 2",
                      capacity);
        return USHMEM_ERR_INVALID_PARAM;
    }
    ring = calloc(1, sizeof(*ring));
    if (ring == NULL) {
        ushmemi_error("ushmemi_ring_create: cannot allocate the ring descriptor");
        return USHMEM_ERR_NO_MEMORY;
    }
    ring->bytes = USHMEM_RING_BYTES(capacity);
    ring->cell_owner = calloc(capacity, sizeof(*ring->cell_owner));
    if (ring->cell_owner == NULL) {
        ushmemi_error("ushmemi_ring_create: cannot allocate the table of %u result cells",
                      capacity);
        status = USHMEM_ERR_NO_MEMORY;
        goto free_ring;
    }
    status = dev_ops->host_alloc(dev, ring->bytes, &mem);
    if (status != USHMEM_OK) {
        ushmemi_error("ushmemi_ring_create: %s host_alloc of %zu bytes for %u slots failed: %s",
                      dev_ops->name, ring->bytes, capacity, ushmemi_status_string(status));
        goto free_ring;
    }
    if (((uintptr_t)mem & (USHMEM_RING_CACHELINE - 1)) != 0) {
        /* Cache-line separation of the header words depends on it. */
        ushmemi_error("ushmemi_ring_create: %s host_alloc returned %p, not %d-byte aligned",
                      dev_ops->name, mem, USHMEM_RING_CACHELINE);
        status = USHMEM_ERR_DEVICE;
        goto free_mem;
    }
    /* The memory is not shared with any producer yet, so plain stores will
     * do; zero seq words never match a ticket (seq = ticket + 1). */
    memset(mem, 0, ring->bytes);
    ring->hdr = mem;
    ring->hdr->version = USHMEM_RING_VERSION;
    ring->hdr->capacity = capacity;
    ring->hdr->slots_offset = sizeof(struct ushmem_ring_header);
    ring->slots = (struct ushmem_ring_request *)((char *)mem + ring->hdr->slots_offset);
    ring->hdr->results_offset =
        ring->hdr->slots_offset + (uint64_t)capacity * sizeof(struct ushmem_ring_request);
    ring->cells = (struct ushmem_ring_result *)((char *)mem + ring->hdr->results_offset);
    ring->mask = capacity - 1;
    ring->dev_ops = dev_ops;
    ring->dev = dev;
    *ring_p = ring;
    return USHMEM_OK;

free_mem:
    dev_ops->host_free(dev, mem, ring->bytes);
free_ring:
    free(ring->cell_owner);
    free(ring);
    return status;
}

void ushmemi_ring_destroy(struct ushmemi_ring *ring)
{
    if (ring == NULL)
        return;
    ring->dev_ops->host_free(ring->dev, ring->hdr, ring->bytes);
    free(ring->cell_owner);
    free(ring);
}

struct ushmem_ring_header *ushmemi_ring_header(struct ushmemi_ring *ring)
{
    return ring->hdr;
}

bool ushmemi_ring_take(struct ushmemi_ring *ring, struct ushmem_ring_request *req_p,
                       uint64_t *ticket_p)
{
    uint64_t ticket = ring->head;
    struct ushmem_ring_request *slot = &ring->slots[ticket & ring->mask];

    if (ushmem_ring_load_acquire(&slot->seq) != ticket + 1)
        return false;
    /* Field by field: seq is an atomic word and is not needed past this point. */
    req_p->op = slot->op;
    req_p->amo_op = slot->amo_op;
    req_p->amo_type = slot->amo_type;
    req_p->flags = slot->flags;
    req_p->pe = slot->pe;
    req_p->offset = slot->offset;
    req_p->local = slot->local;
    req_p->value = slot->value;
    req_p->compare = slot->compare;
    req_p->result = slot->result;
    req_p->reserved = slot->reserved;
    /* The request is copied out, so the slot can go back to the producers
     * before the request runs; release orders the copy before the reuse. */
    ring->head = ticket + 1;
    ushmem_ring_store_release(&ring->hdr->head, ring->head);
    *ticket_p = ticket;
    return true;
}

uint64_t ushmemi_ring_taken(const struct ushmemi_ring *ring)
{
    return ring->head;
}

bool ushmemi_ring_waiting(struct ushmemi_ring *ring)
{
    return ushmem_ring_load_acquire(&ring->slots[ring->head & ring->mask].seq) == ring->head + 1;
}

bool ushmemi_ring_drained(struct ushmemi_ring *ring, const uint64_t *tail)
{
    uint64_t handed_out = tail != NULL ? *tail : ushmem_ring_load_acquire(&ring->hdr->tail);
    return handed_out == ring->head;
}

uint64_t ushmemi_ring_published(struct ushmemi_ring *ring)
{
    /* Every slot: a ticket published behind one taken and not yet
     * published (a kernel still submitting) counts too. A slot holds seq =
     * ticket + 1 of its last request; those below head are taken. About a
     * microsecond for 1024 slots. */
    uint64_t upto = ushmem_ring_load_acquire(&ring->hdr->head);
    for (uint64_t k = 0; k <= ring->mask; k++) {
        uint64_t seq = ushmem_ring_load_acquire(&ring->slots[k].seq);
        if (seq > upto)
            upto = seq;
    }
    return upto;
}

void ushmemi_ring_complete(struct ushmemi_ring *ring, uint64_t upto)
{
    ushmem_ring_store_release(&ring->hdr->completed, upto);
}

void ushmemi_ring_count_error(struct ushmemi_ring *ring)
{
    ushmem_ring_fetch_add(&ring->hdr->errors, 1);
}

bool ushmemi_ring_result_free(struct ushmemi_ring *ring, uint64_t ticket)
{
    uint64_t owner = ring->cell_owner[ticket & ring->mask];
    return owner == 0 || ushmem_ring_load_acquire(&ring->cells[ticket & ring->mask].ack) == owner;
}

void ushmemi_ring_put_result(struct ushmemi_ring *ring, uint64_t ticket, uint64_t value)
{
    struct ushmem_ring_result *cell = &ring->cells[ticket & ring->mask];
    *(volatile uint64_t *)&cell->value = value;
    ushmem_ring_store_release(&cell->tag, ticket + 1);
    ring->cell_owner[ticket & ring->mask] = ticket + 1;
}

uint64_t *ushmemi_ring_result_lend(struct ushmemi_ring *ring, uint64_t ticket)
{
    struct ushmem_ring_result *cell = &ring->cells[ticket & ring->mask];
    /* The reader reads the value only once the ticket is complete, so the
     * tag may say whose it is before the device has written it. */
    ushmem_ring_store_release(&cell->tag, ticket + 1);
    ring->cell_owner[ticket & ring->mask] = ticket + 1;
    return &cell->value;
}
