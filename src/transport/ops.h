/* The transport ops table: how a put, get or atomic reaches one peer's
 * symmetric memory. Addresses on the peer are symmetric offsets (a segment
 * and an offset in it, see ushmemi_sym_offset), so neither the proxy thread
 * nor a transport ever translates or dereferences a pointer it was not given
 * as local memory. */
#ifndef USHMEMI_TRANSPORT_OPS_H
#define USHMEMI_TRANSPORT_OPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../common/status.h"
#include "../device/device.h"

struct ushmemi_grow_step;
struct ushmemi_oob;
struct ushmemi_transport; /* transport private */

/* The symmetric segments of a PE: its heap and, when globals are symmetric,
 * the executable's data segment. */
enum ushmemi_segment { USHMEMI_SEG_HEAP = 0, USHMEMI_SEG_STATIC = 1, USHMEMI_SEG_COUNT = 2 };

/* A symmetric offset packs the segment into the top bits of one word, so
 * that ring requests (whose offsets are heap offsets, segment 0) and the ops
 * below carry a remote address as a single integer. */
#define USHMEMI_SEG_SHIFT 60
#define USHMEMI_SEG_OFFSET_MASK ((UINT64_C(1) << USHMEMI_SEG_SHIFT) - 1)

static inline uint64_t ushmemi_sym_offset(enum ushmemi_segment seg, uint64_t offset)
{
    return ((uint64_t)seg << USHMEMI_SEG_SHIFT) | offset;
}

static inline unsigned ushmemi_sym_segment(uint64_t sym_offset)
{
    return (unsigned)(sym_offset >> USHMEMI_SEG_SHIFT);
}

static inline uint64_t ushmemi_sym_in_segment(uint64_t sym_offset)
{
    return sym_offset & USHMEMI_SEG_OFFSET_MASK;
}

enum ushmemi_amo_op {
    USHMEMI_AMO_FETCH,   /* result = *target */
    USHMEMI_AMO_SET,     /* *target = operand */
    USHMEMI_AMO_SWAP,    /* result = *target; *target = operand */
    USHMEMI_AMO_CSWAP,   /* result = *target; if (result == compare) *target = operand */
    USHMEMI_AMO_ADD,     /* result = *target; *target += operand */
    USHMEMI_AMO_AND,
    USHMEMI_AMO_OR,
    USHMEMI_AMO_XOR,
};

enum ushmemi_amo_type {
    USHMEMI_AMO_INT32,
    USHMEMI_AMO_UINT32,
    USHMEMI_AMO_INT64,
    USHMEMI_AMO_UINT64,
    USHMEMI_AMO_FLOAT,  /* FETCH, SET, SWAP only */
    USHMEMI_AMO_DOUBLE, /* FETCH, SET, SWAP only */
};

/* What the transport is given at init. */
struct ushmemi_transport_params {
    const struct ushmemi_oob *oob;
    const struct ushmemi_device_ops *dev_ops;
    struct ushmemi_device *dev;
    void *heap;            /* this PE's heap, exposed to peers */
    size_t heap_size;
    int heap_is_device;    /* 1 when pointer_query says device memory */
    /* 1: peers reach the heap through messages that this PE lands with the
     * copy engine and the device atomic (heap_is_device is then 0: the
     * fabric is handed host memory only). */
    int heap_landing;
    void *static_base;     /* the data segment (host memory), NULL when not symmetric */
    size_t static_size;
    size_t static_skip;    /* its first bytes, never remotely accessible (no symmetric object) */
    const char *fabric_iface; /* USHMEM_FABRIC_IFACE: where IP providers listen across hosts */
    /* 1: the progress thread keeps polling when nothing comes, for a CPU
     * core, instead of napping (USHMEM_PROXY_IDLE). */
    int idle_spin;
    /* 1: this PE's CPUs are shared by more PEs than they number: waits nap
     * instead of yielding, which would cost the peer a scheduler slice. */
    int cores_shared;
};

struct ushmemi_transport_ops {
    size_t size; /* sizeof(struct ushmemi_transport_ops) */
    const char *name;

    /* Collective over all PEs of the oob. */
    ushmem_status_t (*init)(const struct ushmemi_transport_params *params,
                            struct ushmemi_transport **t_p);
    void (*fini)(struct ushmemi_transport *t);
    /* 1 when this transport can carry atomics to pe; 0 otherwise, with why_p
     * set to static text. */
    int (*can_atomic)(struct ushmemi_transport *t, int pe, const char **why_p);

    /* Blocking: src/dst are local memory (heap or private), the data is at
     * its destination (put) or in dst (get) on return. */
    ushmem_status_t (*put)(struct ushmemi_transport *t, int pe, uint64_t sym_offset, const void *src,
                           size_t len);
    ushmem_status_t (*get)(struct ushmemi_transport *t, int pe, void *dst, uint64_t sym_offset,
                           size_t len);
    /* Non-blocking: complete at quiet; src may be reused once the call returns. */
    ushmem_status_t (*put_nbi)(struct ushmemi_transport *t, int pe, uint64_t sym_offset,
                               const void *src, size_t len);
    ushmem_status_t (*get_nbi)(struct ushmemi_transport *t, int pe, void *dst, uint64_t sym_offset,
                               size_t len);
    /* operand/compare/result point to one value of `type`; result may be NULL
     * for non-fetching ops. Blocking. */
    ushmem_status_t (*atomic)(struct ushmemi_transport *t, int pe, uint64_t sym_offset,
                              enum ushmemi_amo_op op, enum ushmemi_amo_type type,
                              const void *operand, const void *compare, void *result);
    /* Orders earlier puts/atomics to each peer before later ones. */
    ushmem_status_t (*fence)(struct ushmemi_transport *t);
    /* Completes every outstanding operation of this PE. */
    ushmem_status_t (*quiet)(struct ushmemi_transport *t);
    /* Moves data once, for a caller that waits for a peer's write through this
     * transport: providers with manual progress deliver a peer's put into
     * this PE's memory only while someone here calls in, and a waiting PE
     * calling in is faster than waking a napping progress thread. Returns
     * the completions it handled; 0 where progress is automatic. */
    int (*progress)(struct ushmemi_transport *t);

    /* A transport whose queued work one device carries out in order (the
     * copy-engine road) sets device_ordered: its non-blocking forms, and
     * the two below, queue behind everything queued before, and a word that
     * the device's write64 writes after them is written once they are all
     * complete, so the proxy completes requests with that word instead of a
     * quiet. Both below are NULL in other transports.
     * put_value_nbi: len (1 to 8) bytes of value, in the host's byte order,
     * with no source buffer to keep alive.
     * atomic_nbi: the atomic; when result is not NULL, the old value (4
     * bytes in the low half) is written there, memory the device can write,
     * once it has run.
     * put_value_signal_nbi (optional, NULL: put_value_nbi and then the
     * signal's own): put_value_nbi's put, then the signal, sig_op (SET or
     * ADD) of sig_value on the 64-bit word at sig_offset of the same PE,
     * seen only after the put, in one submission where the device can.
     * All take a `then` (NULL: none): the device's write64 right behind
     * them, in the same submission where the device can (the proxy's
     * completed counter's copy without a call of its own). */
    bool device_ordered;
    ushmem_status_t (*put_value_nbi)(struct ushmemi_transport *t, int pe, uint64_t sym_offset,
                                     uint64_t value, size_t len,
                                     const struct ushmemi_dev_then *then);
    ushmem_status_t (*atomic_nbi)(struct ushmemi_transport *t, int pe, uint64_t sym_offset,
                                  enum ushmemi_amo_op op, enum ushmemi_amo_type type,
                                  uint64_t operand, uint64_t compare, uint64_t *result,
                                  const struct ushmemi_dev_then *then);
    ushmem_status_t (*put_value_signal_nbi)(struct ushmemi_transport *t, int pe,
                                            uint64_t sym_offset, uint64_t value, size_t len,
                                            enum ushmemi_amo_op sig_op, uint64_t sig_offset,
                                            uint64_t sig_value,
                                            const struct ushmemi_dev_then *then);

    /* Optional (NULL: the transport cannot follow a heap that grows).
     * Collective over all PEs: every PE's heap (the one given at init) now
     * holds new_size bytes, and the new bytes become reachable to and from
     * every peer. All or none: on failure nothing changed on any PE, every
     * PE returns an error, and step->why says why on the PE where it
     * happened (step->fail_peer: a failure to inject, see transport.h). */
    ushmem_status_t (*heap_grow)(struct ushmemi_transport *t, size_t new_size,
                                 struct ushmemi_grow_step *step);

    /* Optional (NULL: nothing to keep warm). Called by the proxy thread
     * when it spins with nothing to do: keeps the fabric's path from this
     * thread to the peers it sent requests to lately warm, so that the
     * next request after a quiet spell is not the slow first message of a
     * cold path; cheap when there is nothing to do. */
    void (*keep_warm)(struct ushmemi_transport *t);
};

#endif
