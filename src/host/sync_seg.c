/* The host sync segment: one page of host memory per PE, shared with the
 * node's other PEs like a cpu heap (a memfd passed to them and mapped), that
 * holds the world barrier's counters when the symmetric heap is device memory
 * the CPU cannot poll. With it, shmem_barrier_all on a GPU heap is a few
 * CPU atomics instead of the bootstrap's fence. It is used only when every
 * PE of the job is mapped here (one node); otherwise the barrier keeps its
 * fallback. Every PE of a job has the same kind of heap (one backend per
 * job), so every PE makes the same choice. */
#include "sync_seg.h"

#include <stdlib.h>

#include "internal.h"
#include "watch.h"

static struct {
    const struct ushmemi_device_ops *ops; /* the cpu backend's: host memory */
    struct ushmemi_device *dev;
    char *base;
    struct ushmemi_peer *peers; /* each PE's segment as mapped here */
    bool usable;                /* every PE's segment is mapped */
} seg;

#define SEG_SIZE ((size_t)3 * 4096)
_Static_assert(sizeof(struct ushmemi_sync_seg) <= SEG_SIZE, "the sync segment fits in its pages");

ushmem_status_t ushmemi_sync_seg_open(const struct ushmemi_oob *oob,
                                      const struct ushmemi_ipc_config *config)
{
    ushmem_status_t status;

    seg.ops = &ushmemi_device_cpu_ops;
    status = seg.ops->open(oob->local_rank, oob->local_size, &seg.dev);
    if (status != USHMEM_OK)
        return status;
    status = seg.ops->heap_alloc(seg.dev, SEG_SIZE, (void **)&seg.base);
    if (status != USHMEM_OK)
        goto close_dev;
    seg.peers = calloc((size_t)oob->size, sizeof(*seg.peers));
    if (seg.peers == NULL) {
        ushmemi_error("shmem_init: cannot allocate the table of %d sync segments", oob->size);
        status = USHMEM_ERR_NO_MEMORY;
        goto free_seg;
    }
    /* Before the peers map it: who owns it, for a peer that waits long. */
    ushmemi_watch_open((struct ushmemi_sync_seg *)seg.base);
    struct ushmemi_ipc_config seg_config = *config;
    seg_config.segment = "host sync segment";
    status = ushmemi_ipc_connect(oob, seg.ops, seg.dev, seg.base, SEG_SIZE, &seg_config,
                                 seg.peers);
    if (status != USHMEM_OK)
        goto free_peers;
    seg.usable = true;
    for (int pe = 0; pe < oob->size; pe++)
        seg.usable &= seg.peers[pe].base != NULL;
    ushmemi_debug("host sync segment %s", seg.usable ? "mapped from every PE"
                                                    : "not mapped from every PE: unused");
    return USHMEM_OK;

free_peers:
    ushmemi_watch_open(NULL);
    free(seg.peers);
    seg.peers = NULL;
free_seg:
    seg.ops->heap_free(seg.dev, seg.base, SEG_SIZE);
    seg.base = NULL;
close_dev:
    seg.ops->close(seg.dev);
    seg.dev = NULL;
    return status;
}

void ushmemi_sync_seg_close(int npes, int my_pe)
{
    if (seg.dev == NULL)
        return;
    ushmemi_watch_open(NULL);
    seg.usable = false;
    ushmemi_ipc_disconnect(seg.ops, seg.dev, seg.peers, npes, my_pe, SEG_SIZE);
    free(seg.peers);
    seg.peers = NULL;
    seg.ops->heap_free(seg.dev, seg.base, SEG_SIZE);
    seg.base = NULL;
    seg.ops->close(seg.dev);
    seg.dev = NULL;
}

struct ushmemi_sync_seg *ushmemi_sync_seg_mapped(int pe)
{
    return seg.peers != NULL ? (struct ushmemi_sync_seg *)seg.peers[pe].base : NULL;
}

struct ushmemi_sync_seg *ushmemi_sync_seg(int pe)
{
    if (!seg.usable)
        return NULL;
    return (struct ushmemi_sync_seg *)seg.peers[pe].base;
}
