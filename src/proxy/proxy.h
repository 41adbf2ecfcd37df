/* The proxy layer: the consumer side of the request ring
 * (include/ushmem/detail/ring.h) and the host thread that executes requests
 * through the transports' ops tables. Producers (device code; host threads on
 * the cpu backend) use the ring header returned by ushmemi_proxy_ring with the
 * inline producer API of ring.h. */
#ifndef USHMEMI_PROXY_H
#define USHMEMI_PROXY_H

#include <stdbool.h>
#include <stdint.h>

#include <ushmem/detail/ring.h>

#include "../common/status.h"
#include "../device/device.h"
#include "../transport/ops.h"

/* ---- The ring (ring.c) ---- */

struct ushmemi_ring;

/* Allocates a ring of `capacity` slots (a power of two, at least 2) with the
 * device backend's host_alloc, so that device code can reach it. */
ushmem_status_t ushmemi_ring_create(const struct ushmemi_device_ops *dev_ops,
                                    struct ushmemi_device *dev, uint32_t capacity,
                                    struct ushmemi_ring **ring_p);
void ushmemi_ring_destroy(struct ushmemi_ring *ring);
struct ushmem_ring_header *ushmemi_ring_header(struct ushmemi_ring *ring);

/* Consumer side, one consumer only. Takes the next request in ticket order
 * when it is published: copies it to req_p, frees its slot and returns true;
 * false when the next ticket is not published yet. */
bool ushmemi_ring_take(struct ushmemi_ring *ring, struct ushmem_ring_request *req_p,
                       uint64_t *ticket_p);
/* Tickets taken so far (the consumer's head). */
uint64_t ushmemi_ring_taken(const struct ushmemi_ring *ring);
/* True when the next ticket is published: take would return it. */
bool ushmemi_ring_waiting(struct ushmemi_ring *ring);
/* True when every ticket handed out so far has been taken: tail is the
 * ring's own tail, or the value of the producers' one read elsewhere. */
bool ushmemi_ring_drained(struct ushmemi_ring *ring, const uint64_t *tail);
/* From any thread: one past the last ticket published so far (at least
 * the consumer's head). */
uint64_t ushmemi_ring_published(struct ushmemi_ring *ring);
/* Marks every ticket below `upto` done, for producers waiting on it. */
void ushmemi_ring_complete(struct ushmemi_ring *ring, uint64_t upto);
/* FLAG_RESULT (ring.h): true when the result cell of ticket may be written,
 * that is when its previous result, if any, was acknowledged by its reader;
 * put_result then writes the value and its tag. */
bool ushmemi_ring_result_free(struct ushmemi_ring *ring, uint64_t ticket);
void ushmemi_ring_put_result(struct ushmemi_ring *ring, uint64_t ticket, uint64_t value);
/* The same for a value the device writes: marks the cell as ticket's and
 * returns where its value goes, to be written before the ticket completes
 * (by work queued ahead of the completion). The cell must be free. */
uint64_t *ushmemi_ring_result_lend(struct ushmemi_ring *ring, uint64_t ticket);
/* Counts one failed request in the header. */
void ushmemi_ring_count_error(struct ushmemi_ring *ring);

/* ---- The proxy thread (proxy.c) ---- */

struct ushmemi_proxy;

/* What the proxy does with a local buffer in device memory (pointer_query
 * says the CPU must not touch it) in a request for one PE. */
enum ushmemi_proxy_device_memory {
    USHMEMI_PROXY_DEVMEM_REFUSE = 0, /* the transport touches memory with the CPU */
    USHMEMI_PROXY_DEVMEM_PASS,       /* the transport takes device memory (FI_HMEM) */
    USHMEMI_PROXY_DEVMEM_STAGE,      /* bounce through host memory with the copy engine */
};

/* How requests for one PE are carried; ops == NULL: the PE has no proxy route
 * and a request naming it is refused. */
struct ushmemi_proxy_peer {
    const struct ushmemi_transport_ops *ops;
    struct ushmemi_transport *transport;
    enum ushmemi_proxy_device_memory device_memory;
};

/* Called on the proxy thread when a request fails or is refused. msg names
 * the PE, the op and the addresses; it has been logged already. The host
 * layer ends the job through the bootstrap here. If the callback returns, the
 * request counts as done (and in the header's errors) and the proxy goes on,
 * so that no producer waits forever. */
typedef void (*ushmemi_proxy_abort_fn)(void *ctx, ushmem_status_t status, const char *msg);

struct ushmemi_proxy_params {
    const struct ushmemi_device_ops *dev_ops; /* host_alloc for the ring, pointer_query */
    struct ushmemi_device *dev;
    uint32_t capacity; /* ring slots, a power of two; 0 for the default (1024) */
    int my_pe;         /* for messages */
    int npes;
    int local_rank, local_size; /* on the node, for the thread's CPUs (threads.h); 0, 0: unknown */
    const struct ushmemi_proxy_peer *peers; /* npes entries, copied at start */
    ushmemi_proxy_abort_fn abort_cb;        /* required */
    void *abort_ctx;
    /* A zeroed word of device memory where the proxy copies the ring's
     * completed counter each time it moves (ring.h), written with
     * dev_ops->write64 behind the copies: GPU producers poll it instead
     * of host memory. NULL: no copy. */
    uint64_t *done_copy;
    /* Where the producers take tickets and read fetched values instead of
     * the ring (ring.h), in device memory, zeroed: a tail word on a cache
     * line of its own; one 8-byte value per slot, which the proxy writes by
     * dev_ops->write64 and its transports' copies, ahead of done_copy.
     * Either needs done_copy; NULL: the ring's own. */
    uint64_t *ring_tail;
    uint64_t *ring_values;
    /* 1: when no request comes, keep polling (a request after a quiet spell
     * is taken at once, for a CPU core); 0: poll, yield, then sleep with
     * backoff up to 1 ms (almost no CPU). */
    int idle_spin;
    /* A word of the heap (symmetric offset) that nobody reads, which a
     * spinning proxy may write on mapped peers to keep the link in use;
     * 0: none. */
    uint64_t warm_offset;
    /* 1: the device is this PE's alone, so a spinning proxy may also launch
     * a kernel to keep the launch path warm (another process's kernels on
     * it would have to give way to it); 0: no kernel. */
    int warm_kernel;
};

/* Creates the ring and starts the proxy thread. */
ushmem_status_t ushmemi_proxy_start(const struct ushmemi_proxy_params *params,
                                    struct ushmemi_proxy **p_p);
/* The ring that producers submit to. */
struct ushmem_ring_header *ushmemi_proxy_ring(struct ushmemi_proxy *p);
/* Drains the ring (every ticket already handed out is executed and
 * completed), joins the thread and frees the ring. Producers must not take
 * new tickets once stop is called. A producer that took a ticket and never
 * publishes it keeps stop waiting. Stream requests whose streams have not
 * reached them are dropped with a warning (their words are then not freed,
 * as a stream may still write them). */
void ushmemi_proxy_stop(struct ushmemi_proxy *p);
/* ---- Requests that a stream of the program's hands to the proxy ----
 * For stream-ordered calls (shmemx_*_on_stream) to a PE whose heap is not
 * mapped here: the host posts the request when the call is made; the
 * stream, when it gets there, writes the slot's trigger word (the backend's
 * stream_write64) and waits until the slot's done word reaches the same
 * number (stream_wait64, >=). The proxy executes a request once its trigger
 * has come, blocking and followed by a quiet of its transport (a put is
 * complete at the target), then writes done. Requests of different streams
 * complete in whatever order their streams reach them; a stream orders its
 * own by waiting for each. */
struct ushmemi_proxy_stream_slot {
    uint64_t *trigger; /* host memory that the device writes `seq` into */
    uint64_t *done;    /* host memory where the proxy writes `seq` when done */
    uint64_t seq;      /* this request's number, from 1 */
};

/* Posts a put or get (an 8-byte value may travel in the request:
 * FLAG_INLINE) or an atomic without a result (FLAG_RESULT and a result
 * address are refused) for a PE that the proxy reaches
 * through a transport it waits for (not one queued on the device). When
 * every slot (1024) holds a request whose stream has not reached it yet,
 * waits for the oldest: streams progress without this thread. Safe from
 * any thread. */
ushmem_status_t ushmemi_proxy_stream_post(struct ushmemi_proxy *p,
                                          const struct ushmem_ring_request *req,
                                          struct ushmemi_proxy_stream_slot *slot_p);

/* The tickets that a quiet of the host waits for: every one handed out,
 * or, where producers take them in device memory (params.ring_tail), every
 * one up to the last published so far (a ticket taken after it and not yet
 * published belongs to a kernel still running, which the host does not
 * order). */
uint64_t ushmemi_proxy_issued(struct ushmemi_proxy *p);

/* CPU time used so far by the proxy thread, in nanoseconds. */
ushmem_status_t ushmemi_proxy_cpu_time(struct ushmemi_proxy *p, uint64_t *ns_p);

#endif
