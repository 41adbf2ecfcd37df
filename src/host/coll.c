/* Data collectives: broadcast, collect, fcollect, alltoall(s) and reductions,
 * on teams (OpenSHMEM 1.5) and on deprecated active sets (1.4).
 *
 * Each PE *pulls* what it needs from the peers' symmetric objects with gets
 * on the RMA road (a copy from the mapping, or the fabric), between two set
 * barriers: the first says every member's source is ready, the second that
 * every member has finished reading, so sources may be reused on return.
 * Reductions on host-accessible heaps that every member maps run as a
 * reduce-scatter fused with an allgather: each member combines its own 1/N
 * slice straight from every member's source and stores the result into every
 * member's dest. Otherwise (the fabric, device heaps, private buffers) each
 * member's contribution is staged in its collective scratch, so that
 * dest == source (allowed by the spec) is safe.
 *
 * Small broadcasts, collects, fcollects and reductions between PEs that map
 * each other's host heaps go through the mailboxes instead (mailbox.c): the
 * data is pushed to each receiver, which waits for it alone, so no barrier
 * at all; what a member sends is copied into the boxes, so its source may
 * be reused on return as well. Where PEs share cores, each barrier round
 * is a hand-off through the scheduler, which is what this saves most.
 *
 * Apart from that, these are the simple algorithms, correct first. Where the
 * faster ones would go: a tree or scatter+allgather broadcast for many PEs or
 * large messages; pipelined rings for collect; and on GPU heaps, kernels
 * doing the copies and the combining on the device. */
#include <shmem.h>
#include <stdlib.h>
#include <string.h>

#include "coll.h"
#include "internal.h"

typedef void (*combine_fn)(void *acc, const void *in, size_t n);

static size_t byte_count(const char *call, size_t nelems, size_t elem_size)
{
    size_t bytes;
    if (__builtin_mul_overflow(nelems, elem_size, &bytes))
        ushmemi_fatal(call, "%zu elements of %zu bytes overflow the address space", nelems,
                      elem_size);
    return bytes;
}

/* This PE's stage; being symmetric, it names every member's stage too. */
static unsigned char *own_stage(void)
{
    return ushmemi_g.reserved->scratch + USHMEMI_COLL_STAGE_OFFSET;
}

static void *xmalloc(const char *call, size_t size)
{
    void *p = malloc(size ? size : 1);
    if (p == NULL)
        ushmemi_fatal(call, "out of host memory (%zu bytes) for collective bookkeeping", size);
    return p;
}

/* The CPU-readable view of `len` bytes of pe's copy of `addr` in the stage:
 * the mapping itself when the RMA road is a mapped one and the CPU may read
 * it, else a copy fetched into `bounce`. */
static const void *peer_stage_view(const char *call, const void *addr, size_t len, int pe,
                                   void *bounce)
{
    enum ushmemi_route route = ushmemi_g.peers[pe].route[USHMEMI_CLASS_RMA];
    if (ushmemi_g.heap_host_accessible &&
        (route == USHMEMI_ROUTE_DIRECT || route == USHMEMI_ROUTE_SELF)) {
        struct ushmemi_loc loc;
        ushmemi_locate_reserved(call, addr, len, pe, &loc);
        if (loc.mapped != NULL)
            return loc.mapped;
    }
    ushmemi_get_reserved(call, bounce, addr, len, pe);
    return bounce;
}

/* ---- The algorithms, over a resolved PE set ------------------------------ */

static size_t min_size(size_t a, size_t b) { return a < b ? a : b; }

/* Small messages through the mailboxes: the root sends each receiver the
 * data a slot at a time; the receivers wait for it and copy it out. */
static void mbox_broadcast(const char *call, const struct ushmemi_coll_set *set, void *dest,
                           const void *source, size_t nbytes, int root, bool copy_on_root)
{
    int n = set->size, root_pe = ushmemi_coll_world_pe(set, root);
    for (size_t off = 0; off < nbytes; off += USHMEMI_MBOX_PAYLOAD) {
        size_t len = min_size(USHMEMI_MBOX_PAYLOAD, nbytes - off);
        if (set->me != root) {
            const struct ushmemi_mbox_slot *slot = ushmemi_mbox_wait(call, root_pe);
            ushmemi_host_copy(call, (char *)dest + off, slot->data, len);
            ushmemi_mbox_done(root_pe);
            continue;
        }
        for (int step = 1; step < n; step++)
            ushmemi_mbox_send(call, ushmemi_coll_world_pe(set, (root + step) % n),
                              (const char *)source + off, len, nbytes);
    }
    if (set->me == root && copy_on_root && dest != source)
        ushmemi_host_copy(call, dest, source, nbytes);
}


static void broadcast(const char *call, const struct ushmemi_coll_set *set, void *dest,
                      const void *source, size_t nbytes, int root, bool copy_on_root)
{
    if (root < 0 || root >= set->size)
        ushmemi_fatal(call, "PE_root %d is not an index of the %d PEs taking part", root,
                      set->size);
    if (nbytes == 0)
        return;
    int root_pe = ushmemi_coll_world_pe(set, root);
    struct ushmemi_loc loc; /* checked before anyone waits on this PE */
    ushmemi_locate(call, source, nbytes, root_pe, &loc);
    if (set->me != root || copy_on_root)
        ushmemi_check_private(call, "dest", dest, nbytes, root_pe);
    if (nbytes <= ushmemi_mbox_limit() && ushmemi_mbox_usable(set)) {
        mbox_broadcast(call, set, dest, source, nbytes, root, copy_on_root);
        return;
    }
    ushmemi_coll_barrier(call, set);
    if (set->me != root)
        ushmemi_get(call, dest, source, nbytes, root_pe, false);
    else if (copy_on_root && dest != source)
        ushmemi_host_copy(call, dest, source, nbytes);
    ushmemi_coll_barrier(call, set);
}

/* Every member contributes its own nbytes; dest receives the contributions
 * concatenated in member order. The sizes are exchanged through the stage. */
/* Through the mailboxes: every member sends every other member its size
 * and the head of its data, up to `inline` bytes (the mailboxes' limit, at
 * most a slot). When every contribution fits, that is all; otherwise
 * (every member sees the same sizes, so all decide alike) each pulls the
 * rest with gets and the closing barrier keeps the sources in place until
 * all have read them. */
static void mbox_collect(const char *call, const struct ushmemi_coll_set *set, void *dest,
                         const void *source, size_t nbytes)
{
    int n = set->size, me = set->me;
    const size_t inline_max = min_size(ushmemi_mbox_limit(), USHMEMI_MBOX_PAYLOAD);
    size_t head = min_size(nbytes, inline_max);
    struct ushmemi_loc loc; /* symmetric, as the members' gets need it */
    if (nbytes > 0) {
        ushmemi_locate(call, source, nbytes, ushmemi_g.my_pe, &loc);
        /* Its own part at least, before anybody waits on this PE. */
        ushmemi_check_private(call, "dest", dest, nbytes, ushmemi_g.my_pe);
    }
    for (int step = 1; step < n; step++)
        ushmemi_mbox_send(call, ushmemi_coll_world_pe(set, (me + step) % n), source, head,
                          nbytes);
    size_t *lens = xmalloc(call, (size_t)n * sizeof(*lens));
    const struct ushmemi_mbox_slot **slots = xmalloc(call, (size_t)n * sizeof(*slots));
    size_t total = 0, largest = 0;
    for (int i = 0; i < n; i++) {
        slots[i] = i == me ? NULL : ushmemi_mbox_wait(call, ushmemi_coll_world_pe(set, i));
        lens[i] = i == me ? nbytes : (size_t)slots[i]->total;
        if (lens[i] > SIZE_MAX - total)
            ushmemi_fatal(call, "the contributions add up to more than the address space");
        total += lens[i];
        largest = lens[i] > largest ? lens[i] : largest;
    }
    ushmemi_check_private(call, "dest", dest, total, ushmemi_g.my_pe);
    size_t at = 0;
    for (int i = 0; i < n; i++) {
        if (i == me) {
            ushmemi_host_copy(call, (char *)dest + at, source, nbytes);
        } else {
            ushmemi_host_copy(call, (char *)dest + at, slots[i]->data, (size_t)slots[i]->len);
            ushmemi_mbox_done(ushmemi_coll_world_pe(set, i));
        }
        at += lens[i];
    }
    free(slots);
    if (largest > inline_max) {
        at = 0;
        for (int i = 0; i < n; i++) {
            if (i != me && lens[i] > inline_max)
                ushmemi_get(call, (char *)dest + at + inline_max,
                            (const char *)source + inline_max, lens[i] - inline_max,
                            ushmemi_coll_world_pe(set, i), false);
            at += lens[i];
        }
        ushmemi_coll_barrier(call, set);
    }
    free(lens);
}

static void collect(const char *call, const struct ushmemi_coll_set *set, void *dest,
                    const void *source, size_t nbytes)
{
    if (ushmemi_mbox_usable(set)) {
        mbox_collect(call, set, dest, source, nbytes);
        return;
    }
    uint64_t mine = nbytes;
    ushmemi_host_copy(call, own_stage(), &mine, sizeof(mine));
    ushmemi_coll_barrier(call, set);

    int n = set->size;
    size_t *offsets = xmalloc(call, (size_t)(n + 1) * sizeof(*offsets));
    offsets[0] = 0;
    for (int i = 0; i < n; i++) {
        uint64_t len;
        ushmemi_get_reserved(call, &len, own_stage(), sizeof(len), ushmemi_coll_world_pe(set, i));
        offsets[i + 1] = offsets[i] + (size_t)len;
    }
    /* Start with the next member so that not every PE reads member 0 first. */
    for (int step = 0; step < n; step++) {
        int i = (set->me + 1 + step) % n;
        size_t len = offsets[i + 1] - offsets[i];
        ushmemi_get(call, (char *)dest + offsets[i], source, len, ushmemi_coll_world_pe(set, i),
                    false);
    }
    free(offsets);
    ushmemi_coll_barrier(call, set);
}

/* A slot at a time: each member sends its piece to every other member,
 * then takes theirs. A member sends piece c + 1 only after it has taken
 * every member's piece c, so a box's slot is free again whenever it is
 * needed and nobody waits for acknowledgements. */
static void mbox_fcollect(const char *call, const struct ushmemi_coll_set *set, void *dest,
                          const void *source, size_t nbytes)
{
    int n = set->size, me = set->me;
    struct ushmemi_loc loc; /* symmetric, as on the other road */
    ushmemi_locate(call, source, nbytes, ushmemi_g.my_pe, &loc);
    ushmemi_check_private(call, "dest", dest, (size_t)n * nbytes, ushmemi_g.my_pe);
    for (size_t off = 0; off < nbytes; off += USHMEMI_MBOX_PAYLOAD) {
        size_t len = min_size(USHMEMI_MBOX_PAYLOAD, nbytes - off);
        for (int step = 1; step < n; step++)
            ushmemi_mbox_send(call, ushmemi_coll_world_pe(set, (me + step) % n),
                              (const char *)source + off, len, nbytes);
        for (int step = 1; step < n; step++) {
            int i = (me - step + n) % n, pe = ushmemi_coll_world_pe(set, i);
            const struct ushmemi_mbox_slot *slot = ushmemi_mbox_wait(call, pe);
            ushmemi_host_copy(call, (char *)dest + (size_t)i * nbytes + off, slot->data, len);
            ushmemi_mbox_done(pe);
        }
    }
    ushmemi_host_copy(call, (char *)dest + (size_t)me * nbytes, source, nbytes);
}

static void fcollect(const char *call, const struct ushmemi_coll_set *set, void *dest,
                     const void *source, size_t nbytes)
{
    if (nbytes == 0)
        return;
    int n = set->size;
    if (nbytes <= ushmemi_mbox_limit() && ushmemi_mbox_usable(set)) {
        mbox_fcollect(call, set, dest, source, nbytes);
        return;
    }
    ushmemi_coll_barrier(call, set);
    for (int step = 0; step < n; step++) {
        int i = (set->me + 1 + step) % n;
        ushmemi_get(call, (char *)dest + (size_t)i * nbytes, source, nbytes,
                    ushmemi_coll_world_pe(set, i), false);
    }
    ushmemi_coll_barrier(call, set);
}

/* Block j of member i's source lands in block i of member j's dest; each
 * member pulls block `me` of every source. Elements are elem_size bytes and
 * lie dst (sst) elements apart in dest (source); contiguous when both are 1. */
static void alltoalls(const char *call, const struct ushmemi_coll_set *set, void *dest,
                      const void *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems,
                      size_t elem_size)
{
    if (dst < 1 || sst < 1)
        ushmemi_fatal(call, "strides must be positive (dst %td, sst %td)", dst, sst);
    if (nelems == 0)
        return;
    int n = set->size;
    size_t udst = (size_t)dst, usst = (size_t)sst;
    size_t src_span = byte_count(call, byte_count(call, nelems - 1, usst) + 1, elem_size);
    size_t src_block = byte_count(call, byte_count(call, nelems, usst), elem_size);
    size_t dst_block = byte_count(call, byte_count(call, nelems, udst), elem_size);
    size_t src_off = byte_count(call, (size_t)set->me, src_block);
    const char *from = (const char *)source + src_off;
    struct ushmemi_loc loc; /* the whole block, checked once before the barrier */
    ushmemi_locate(call, from, src_span, ushmemi_g.my_pe, &loc);
    ushmemi_coll_barrier(call, set);
    for (int step = 0; step < n; step++) {
        int i = (set->me + 1 + step) % n;
        int pe = ushmemi_coll_world_pe(set, i);
        char *to = (char *)dest + (size_t)i * dst_block;
        if (udst == 1 && usst == 1) {
            ushmemi_get(call, to, from, nelems * elem_size, pe, false);
            continue;
        }
        /* Element by element; a gather into a bounce buffer would batch it. */
        for (size_t k = 0; k < nelems; k++)
            ushmemi_get(call, to + k * udst * elem_size, from + k * usst * elem_size, elem_size,
                        pe, false);
    }
    ushmemi_coll_barrier(call, set);
}

/* Each chunk of source is staged in one half of this PE's stage, then every
 * member combines the staged chunks of members 0 to members - 1 (all of
 * them for a reduction, fewer for a scan) in member order (so every PE gets
 * the same bits, even in floating point) and writes its dest. The two
 * halves alternate, so one barrier per chunk suffices: a PE overwrites a half
 * only after passing the barrier that every reader of its previous contents
 * reached after reading. */
static void reduce_staged(const char *call, const struct ushmemi_coll_set *set, void *dest,
                          const void *source, size_t nreduce, size_t elem_size,
                          combine_fn combine, int members)
{
    const size_t half = USHMEMI_COLL_STAGE_SIZE / 2;
    const size_t chunk_elems = half / elem_size;
    int n = members;
    unsigned char *acc = xmalloc(call, half);
    unsigned char *bounce = xmalloc(call, half);
    unsigned char *stage = own_stage();

    for (size_t done = 0, chunk = 0; done < nreduce; done += chunk_elems, chunk++) {
        size_t count = nreduce - done < chunk_elems ? nreduce - done : chunk_elems;
        size_t bytes = count * elem_size, offset = done * elem_size;
        size_t half_off = (chunk % 2) * half;
        ushmemi_host_copy(call, stage + half_off, (const char *)source + offset, bytes);
        ushmemi_coll_barrier(call, set);
        memset(acc, 0, bytes); /* what combining no member gives: 0 for sums */
        for (int i = 0; i < n; i++) {
            const void *in = peer_stage_view(call, stage + half_off, bytes,
                                             ushmemi_coll_world_pe(set, i), bounce);
            if (i == 0)
                memcpy(acc, in, bytes);
            else
                combine(acc, in, count);
        }
        ushmemi_host_copy(call, (char *)dest + offset, acc, bytes);
    }
    ushmemi_coll_barrier(call, set);
    free(bounce);
    free(acc);
}

/* The direct reduction combines in blocks of this many bytes, small enough
 * for the accumulator to stay in the L1 cache while every source streams
 * through it. */
#define REDUCE_BLOCK_BYTES 8192
/* Slices start on this many bytes of the array, so that no two members
 * store into one cache line of a dest. */
#define REDUCE_SLICE_ALIGN 64

bool ushmemi_coll_set_direct(const struct ushmemi_coll_set *set)
{
    for (int i = 0; i < set->size; i++) {
        enum ushmemi_route route =
            ushmemi_g.peers[ushmemi_coll_world_pe(set, i)].route[USHMEMI_CLASS_RMA];
        if (route != USHMEMI_ROUTE_DIRECT && route != USHMEMI_ROUTE_SELF)
            return false;
    }
    return true;
}

/* Fills src_p[i] and dst_p[i] with member i's source and dest as mapped here
 * and returns true when every member's copy of both is mapped and the CPU may
 * touch it; false means the staged road. The answer is the same on every
 * member: it depends on the (symmetric) addresses and on the routes, and a
 * pair maps each other's memory or neither does. */
static bool reduce_map(const char *call, const struct ushmemi_coll_set *set, void *dest,
                       const void *source, size_t bytes, unsigned char **dst_p,
                       const unsigned char **src_p)
{
    const char *s = source, *d = dest;
    if (!ushmemi_g.heap_host_accessible)
        return false;
    if (!(ushmemi_in_user_heap(s, bytes) || ushmemi_in_static(s, bytes)) ||
        !(ushmemi_in_user_heap(d, bytes) || ushmemi_in_static(d, bytes)))
        return false;
    /* Partly overlapping arrays are not allowed by the spec, but would
     * break the slicing: leave them to the staged road. */
    if (s != d && s < d + bytes && d < s + bytes)
        return false;
    if (!ushmemi_coll_set_direct(set))
        return false;
    for (int i = 0; i < set->size; i++) {
        int pe = ushmemi_coll_world_pe(set, i);
        struct ushmemi_loc src_loc, dst_loc;
        ushmemi_locate(call, source, bytes, pe, &src_loc);
        ushmemi_locate(call, dest, bytes, pe, &dst_loc);
        if (src_loc.mapped == NULL || dst_loc.mapped == NULL)
            return false;
        src_p[i] = (const unsigned char *)src_loc.mapped;
        dst_p[i] = (unsigned char *)dst_loc.mapped;
    }
    return true;
}

/* Member `me` owns elements [lo, hi): it combines them from every member's
 * source in member order (so every PE gets the same bits, even in floating
 * point) and stores the result into every member's dest. Nobody else reads
 * that part of any source, so the stores are safe in place (dest == source)
 * too. The first barrier says every source is ready and every dest may be
 * written, the second that every dest is complete and no source is read any
 * more. */
static void reduce_direct(const char *call, const struct ushmemi_coll_set *set,
                          unsigned char *const *dst, const unsigned char *const *src,
                          size_t nreduce, size_t elem_size, combine_fn combine)
{
    unsigned char acc[REDUCE_BLOCK_BYTES] __attribute__((aligned(64)));
    size_t n = (size_t)set->size, me = (size_t)set->me;
    size_t unit = elem_size < REDUCE_SLICE_ALIGN ? REDUCE_SLICE_ALIGN / elem_size : 1;
    size_t units = nreduce / unit + (nreduce % unit != 0);
    size_t lo = units / n * me + (me < units % n ? me : units % n);
    size_t hi = lo + units / n + (me < units % n);
    lo *= unit;
    hi = hi * unit < nreduce ? hi * unit : nreduce;
    const size_t block = REDUCE_BLOCK_BYTES / elem_size;

    ushmemi_coll_barrier(call, set);
    for (size_t at = lo; at < hi; at += block) {
        size_t count = hi - at < block ? hi - at : block;
        size_t offset = at * elem_size, bytes = count * elem_size;
        memcpy(acc, src[0] + offset, bytes);
        for (size_t i = 1; i < n; i++)
            combine(acc, src[i] + offset, count);
        /* Own dest first, then the others from the next member on, so that
         * not every PE stores into member 0 at once. */
        for (size_t step = 0; step < n; step++)
            memcpy(dst[(me + step) % n] + offset, acc, bytes);
    }
    ushmemi_coll_barrier(call, set);
}

/* Small reductions through the mailboxes, a slot at a time as in
 * mbox_fcollect: each member sends its piece to every other member and
 * combines all pieces in member order itself (so every PE gets the same
 * bits, even in floating point). dest is written after this PE's own piece
 * was sent and read, so dest == source is safe. */
static void mbox_reduce(const char *call, const struct ushmemi_coll_set *set, void *dest,
                        const void *source, size_t nreduce, size_t elem_size,
                        combine_fn combine)
{
    unsigned char acc[USHMEMI_MBOX_PAYLOAD] __attribute__((aligned(64)));
    int n = set->size, me = set->me;
    size_t bytes = nreduce * elem_size, chunk = USHMEMI_MBOX_PAYLOAD / elem_size * elem_size;
    for (size_t off = 0; off < bytes; off += chunk) {
        size_t len = min_size(chunk, bytes - off);
        const unsigned char *mine = (const unsigned char *)source + off;
        for (int step = 1; step < n; step++)
            ushmemi_mbox_send(call, ushmemi_coll_world_pe(set, (me + step) % n), mine, len,
                              bytes);
        for (int i = 0; i < n; i++) {
            int pe = ushmemi_coll_world_pe(set, i);
            const unsigned char *in = mine;
            if (i != me)
                in = ushmemi_mbox_wait(call, pe)->data;
            if (i == 0)
                memcpy(acc, in, len);
            else
                combine(acc, in, len / elem_size);
            if (i != me)
                ushmemi_mbox_done(pe);
        }
        ushmemi_host_copy(call, (char *)dest + off, acc, len);
    }
}

/* A reduction or scan reads source and writes dest on this PE itself (in
 * the staged road with plain copies), so both get the checks of a private
 * buffer: never NULL, unmapped or the heap's reserved area. */
static void check_arrays(const char *call, const void *dest, const void *source, size_t bytes)
{
    ushmemi_check_private(call, "source", source, bytes, ushmemi_g.my_pe);
    ushmemi_check_private(call, "dest", dest, bytes, ushmemi_g.my_pe);
}

static void reduce(const char *call, const struct ushmemi_coll_set *set, void *dest,
                   const void *source, size_t nreduce, size_t elem_size, combine_fn combine)
{
    if (nreduce == 0)
        return;
    size_t bytes = byte_count(call, nreduce, elem_size);
    check_arrays(call, dest, source, bytes);
    if (bytes <= ushmemi_mbox_limit() && elem_size <= USHMEMI_MBOX_PAYLOAD &&
        ushmemi_mbox_usable(set)) {
        mbox_reduce(call, set, dest, source, nreduce, elem_size, combine);
        return;
    }
    size_t n = (size_t)set->size;
    unsigned char **dst = xmalloc(call, n * sizeof(*dst));
    const unsigned char **src = xmalloc(call, n * sizeof(*src));
    if (reduce_map(call, set, dest, source, bytes, dst, src))
        reduce_direct(call, set, dst, src, nreduce, elem_size, combine);
    else
        reduce_staged(call, set, dest, source, nreduce, elem_size, combine, set->size);
    free(src);
    free(dst);
}

/* OpenSHMEM 1.6 sum scans: member i's dest is the sum of the sources of
 * members 0 to i (inclusive) or 0 to i - 1 (exclusive, zero on member 0),
 * combined in member order: the staged reduction over that many members,
 * which also makes dest == source safe. */
static void scan(const char *call, const struct ushmemi_coll_set *set, void *dest,
                 const void *source, size_t nelems, size_t elem_size, combine_fn combine,
                 bool inclusive)
{
    if (nelems == 0)
        return;
    check_arrays(call, dest, source, byte_count(call, nelems, elem_size));
    reduce_staged(call, set, dest, source, nelems, elem_size, combine,
                  inclusive ? set->me + 1 : set->me);
}

/* ---- Combining functions -------------------------------------------------- */

#define DEF_COMBINE(name, type, op, expr)                                                  \
    static void combine_##name##_##op(void *acc_v, const void *in_v, size_t n)             \
    {                                                                                      \
        type *acc = acc_v;                                                                 \
        const type *in = in_v;                                                             \
        for (size_t i = 0; i < n; i++) {                                                   \
            type a = acc[i], b = in[i];                                                    \
            acc[i] = (type)(expr);                                                         \
        }                                                                                  \
    }
#define DEF_COMBINE_BITWISE(name, type)                                                    \
    DEF_COMBINE(name, type, and, a & b)                                                    \
    DEF_COMBINE(name, type, or, a | b)                                                     \
    DEF_COMBINE(name, type, xor, a ^ b)
#define DEF_COMBINE_MINMAX(name, type)                                                     \
    DEF_COMBINE(name, type, max, a > b ? a : b)                                            \
    DEF_COMBINE(name, type, min, a < b ? a : b)
#define DEF_COMBINE_ARITH(name, type)                                                      \
    DEF_COMBINE(name, type, sum, a + b)                                                    \
    DEF_COMBINE(name, type, prod, a * b)

USHMEMI_COLL_BITWISE_TYPES(DEF_COMBINE_BITWISE)
/* The 1.4 bitwise set names signed types the 1.5 set spells int16..int64. */
USHMEMI_COLL_TOALL_BITWISE_TYPES(DEF_COMBINE_BITWISE)
USHMEMI_COLL_MINMAX_TYPES(DEF_COMBINE_MINMAX)
USHMEMI_COLL_MINMAX_TYPES(DEF_COMBINE_ARITH)
USHMEMI_COLL_COMPLEX_TYPES(DEF_COMBINE_ARITH)

/* ---- Team entry points ----------------------------------------------------- */

static int team_broadcast(const char *call, shmem_team_t team, void *dest, const void *source,
                          size_t nelems, size_t elem_size, int root)
{
    struct ushmemi_coll_set set;
    if (ushmemi_coll_team_set(call, team, &set) != USHMEM_OK)
        return -1;
    /* 1.5 team broadcasts also fill dest on the root (1.4 ones did not). */
    broadcast(call, &set, dest, source, byte_count(call, nelems, elem_size), root, true);
    return 0;
}

static int team_collect(const char *call, shmem_team_t team, void *dest, const void *source,
                        size_t nelems, size_t elem_size)
{
    struct ushmemi_coll_set set;
    if (ushmemi_coll_team_set(call, team, &set) != USHMEM_OK)
        return -1;
    collect(call, &set, dest, source, byte_count(call, nelems, elem_size));
    return 0;
}

static int team_fcollect(const char *call, shmem_team_t team, void *dest, const void *source,
                         size_t nelems, size_t elem_size)
{
    struct ushmemi_coll_set set;
    if (ushmemi_coll_team_set(call, team, &set) != USHMEM_OK)
        return -1;
    fcollect(call, &set, dest, source, byte_count(call, nelems, elem_size));
    return 0;
}

static int team_alltoalls(const char *call, shmem_team_t team, void *dest, const void *source,
                          ptrdiff_t dst, ptrdiff_t sst, size_t nelems, size_t elem_size)
{
    struct ushmemi_coll_set set;
    if (ushmemi_coll_team_set(call, team, &set) != USHMEM_OK)
        return -1;
    alltoalls(call, &set, dest, source, dst, sst, nelems, elem_size);
    return 0;
}

static int team_scan(const char *call, shmem_team_t team, void *dest, const void *source,
                     size_t nelems, size_t elem_size, combine_fn combine, bool inclusive)
{
    struct ushmemi_coll_set set;
    if (ushmemi_coll_team_set(call, team, &set) != USHMEM_OK)
        return -1;
    byte_count(call, nelems, elem_size);
    scan(call, &set, dest, source, nelems, elem_size, combine, inclusive);
    return 0;
}

#define DEF_SCAN(name, type)                                                                  \
    USHMEMI_API int shmem_##name##_sum_inscan(shmem_team_t team, type *dest,                 \
                                              const type *source, size_t nelems)             \
    {                                                                                         \
        return team_scan("shmem_" #name "_sum_inscan", team, dest, source, nelems,            \
                         sizeof(type), combine_##name##_sum, true);                           \
    }                                                                                         \
    USHMEMI_API int shmem_##name##_sum_exscan(shmem_team_t team, type *dest,                 \
                                              const type *source, size_t nelems)             \
    {                                                                                         \
        return team_scan("shmem_" #name "_sum_exscan", team, dest, source, nelems,            \
                         sizeof(type), combine_##name##_sum, false);                          \
    }
USHMEMI_COLL_MINMAX_TYPES(DEF_SCAN)
USHMEMI_COLL_COMPLEX_TYPES(DEF_SCAN)
#undef DEF_SCAN

static int team_reduce(const char *call, shmem_team_t team, void *dest, const void *source,
                       size_t nreduce, size_t elem_size, combine_fn combine)
{
    struct ushmemi_coll_set set;
    if (ushmemi_coll_team_set(call, team, &set) != USHMEM_OK)
        return -1;
    reduce(call, &set, dest, source, nreduce, elem_size, combine);
    return 0;
}

#define DEF_DATA(name, type)                                                                  \
    USHMEMI_API int shmem_##name##_broadcast(shmem_team_t team, type *dest, const type *source, \
                                             size_t nelems, int PE_root)                     \
    {                                                                                         \
        return team_broadcast("shmem_" #name "_broadcast", team, dest, source, nelems,        \
                              sizeof(type), PE_root);                                         \
    }                                                                                         \
    USHMEMI_API int shmem_##name##_collect(shmem_team_t team, type *dest, const type *source,   \
                                           size_t nelems)                                    \
    {                                                                                         \
        return team_collect("shmem_" #name "_collect", team, dest, source, nelems,            \
                            sizeof(type));                                                    \
    }                                                                                         \
    USHMEMI_API int shmem_##name##_fcollect(shmem_team_t team, type *dest, const type *source,  \
                                            size_t nelems)                                   \
    {                                                                                         \
        return team_fcollect("shmem_" #name "_fcollect", team, dest, source, nelems,          \
                             sizeof(type));                                                   \
    }                                                                                         \
    USHMEMI_API int shmem_##name##_alltoall(shmem_team_t team, type *dest, const type *source,  \
                                            size_t nelems)                                   \
    {                                                                                         \
        return team_alltoalls("shmem_" #name "_alltoall", team, dest, source, 1, 1, nelems,   \
                              sizeof(type));                                                  \
    }                                                                                         \
    USHMEMI_API int shmem_##name##_alltoalls(shmem_team_t team, type *dest, const type *source, \
                                             ptrdiff_t dst, ptrdiff_t sst, size_t nelems)    \
    {                                                                                         \
        return team_alltoalls("shmem_" #name "_alltoalls", team, dest, source, dst, sst,      \
                              nelems, sizeof(type));                                          \
    }
USHMEMI_COLL_RMA_TYPES(DEF_DATA)

USHMEMI_API int shmem_broadcastmem(shmem_team_t team, void *dest, const void *source,
                                   size_t nelems, int PE_root)
{
    return team_broadcast("shmem_broadcastmem", team, dest, source, nelems, 1, PE_root);
}

USHMEMI_API int shmem_collectmem(shmem_team_t team, void *dest, const void *source, size_t nelems)
{
    return team_collect("shmem_collectmem", team, dest, source, nelems, 1);
}

USHMEMI_API int shmem_fcollectmem(shmem_team_t team, void *dest, const void *source, size_t nelems)
{
    return team_fcollect("shmem_fcollectmem", team, dest, source, nelems, 1);
}

USHMEMI_API int shmem_alltoallmem(shmem_team_t team, void *dest, const void *source, size_t nelems)
{
    return team_alltoalls("shmem_alltoallmem", team, dest, source, 1, 1, nelems, 1);
}

USHMEMI_API int shmem_alltoallsmem(shmem_team_t team, void *dest, const void *source,
                                   ptrdiff_t dst, ptrdiff_t sst, size_t nelems)
{
    return team_alltoalls("shmem_alltoallsmem", team, dest, source, dst, sst, nelems, 1);
}

#define DEF_REDUCE(name, type, op)                                                           \
    USHMEMI_API int shmem_##name##_##op##_reduce(shmem_team_t team, type *dest,              \
                                                 const type *source, size_t nreduce)         \
    {                                                                                        \
        return team_reduce("shmem_" #name "_" #op "_reduce", team, dest, source, nreduce,    \
                           sizeof(type), combine_##name##_##op);                             \
    }
#define DEF_REDUCE_BITWISE(name, type)                                                       \
    DEF_REDUCE(name, type, and) DEF_REDUCE(name, type, or) DEF_REDUCE(name, type, xor)
#define DEF_REDUCE_MINMAX(name, type) DEF_REDUCE(name, type, max) DEF_REDUCE(name, type, min)
#define DEF_REDUCE_ARITH(name, type) DEF_REDUCE(name, type, sum) DEF_REDUCE(name, type, prod)
USHMEMI_COLL_BITWISE_TYPES(DEF_REDUCE_BITWISE)
USHMEMI_COLL_MINMAX_TYPES(DEF_REDUCE_MINMAX)
USHMEMI_COLL_MINMAX_TYPES(DEF_REDUCE_ARITH)
USHMEMI_COLL_COMPLEX_TYPES(DEF_REDUCE_ARITH)

/* ---- Deprecated active-set entry points -------------------------------------
 * pSync and pWrk are accepted and not used: synchronisation runs on counters
 * in the reserved heap area (see barrier.c) and reductions stage through the
 * collective scratch. So the arrays need hold nothing beyond what the spec
 * asks, and they keep their SHMEM_SYNC_VALUE contents. */

static void active_broadcast(const char *call, void *dest, const void *source, size_t nelems,
                             size_t elem_size, int root, int PE_start, int logPE_stride,
                             int PE_size)
{
    struct ushmemi_coll_set set;
    ushmemi_coll_active_set(call, PE_start, logPE_stride, PE_size, &set);
    /* 1.4: dest on the root is not written. */
    broadcast(call, &set, dest, source, byte_count(call, nelems, elem_size), root, false);
}

USHMEMI_API void shmem_broadcast32(void *dest, const void *source, size_t nelems, int PE_root,
                                   int PE_start, int logPE_stride, int PE_size, long *pSync)
{
    (void)pSync;
    active_broadcast("shmem_broadcast32", dest, source, nelems, 4, PE_root, PE_start,
                     logPE_stride, PE_size);
}

USHMEMI_API void shmem_broadcast64(void *dest, const void *source, size_t nelems, int PE_root,
                                   int PE_start, int logPE_stride, int PE_size, long *pSync)
{
    (void)pSync;
    active_broadcast("shmem_broadcast64", dest, source, nelems, 8, PE_root, PE_start,
                     logPE_stride, PE_size);
}

#define DEF_ACTIVE_GATHER(algo, bits)                                                        \
    USHMEMI_API void shmem_##algo##bits(void *dest, const void *source, size_t nelems,      \
                                        int PE_start, int logPE_stride, int PE_size,        \
                                        long *pSync)                                        \
    {                                                                                        \
        (void)pSync;                                                                         \
        const char *call = "shmem_" #algo #bits;                                             \
        struct ushmemi_coll_set set;                                                         \
        ushmemi_coll_active_set(call, PE_start, logPE_stride, PE_size, &set);                \
        algo(call, &set, dest, source, byte_count(call, nelems, (bits) / 8));                \
    }
DEF_ACTIVE_GATHER(collect, 32)
DEF_ACTIVE_GATHER(collect, 64)
DEF_ACTIVE_GATHER(fcollect, 32)
DEF_ACTIVE_GATHER(fcollect, 64)

#define DEF_ACTIVE_ALLTOALL(bits)                                                            \
    USHMEMI_API void shmem_alltoall##bits(void *dest, const void *source, size_t nelems,    \
                                          int PE_start, int logPE_stride, int PE_size,      \
                                          long *pSync)                                      \
    {                                                                                        \
        (void)pSync;                                                                         \
        struct ushmemi_coll_set set;                                                         \
        ushmemi_coll_active_set("shmem_alltoall" #bits, PE_start, logPE_stride, PE_size,    \
                                &set);                                                       \
        alltoalls("shmem_alltoall" #bits, &set, dest, source, 1, 1, nelems, (bits) / 8);    \
    }                                                                                        \
    USHMEMI_API void shmem_alltoalls##bits(void *dest, const void *source, ptrdiff_t dst,   \
                                           ptrdiff_t sst, size_t nelems, int PE_start,      \
                                           int logPE_stride, int PE_size, long *pSync)      \
    {                                                                                        \
        (void)pSync;                                                                         \
        struct ushmemi_coll_set set;                                                         \
        ushmemi_coll_active_set("shmem_alltoalls" #bits, PE_start, logPE_stride, PE_size,   \
                                &set);                                                       \
        alltoalls("shmem_alltoalls" #bits, &set, dest, source, dst, sst, nelems, (bits) / 8); \
    }
DEF_ACTIVE_ALLTOALL(32)
DEF_ACTIVE_ALLTOALL(64)

static void active_reduce(const char *call, void *dest, const void *source, int nreduce,
                          size_t elem_size, combine_fn combine, int PE_start, int logPE_stride,
                          int PE_size)
{
    struct ushmemi_coll_set set;
    ushmemi_coll_active_set(call, PE_start, logPE_stride, PE_size, &set);
    if (nreduce < 0)
        ushmemi_fatal(call, "nreduce %d is negative", nreduce);
    reduce(call, &set, dest, source, (size_t)nreduce, elem_size, combine);
}

#define DEF_TOALL(name, type, op)                                                            \
    USHMEMI_API void shmem_##name##_##op##_to_all(type *dest, const type *source,           \
                                                  int nreduce, int PE_start,                 \
                                                  int logPE_stride, int PE_size, type *pWrk, \
                                                  long *pSync)                               \
    {                                                                                        \
        (void)pWrk;                                                                          \
        (void)pSync;                                                                         \
        active_reduce("shmem_" #name "_" #op "_to_all", dest, source, nreduce, sizeof(type), \
                      combine_##name##_##op, PE_start, logPE_stride, PE_size);               \
    }
#define DEF_TOALL_BITWISE(name, type)                                                        \
    DEF_TOALL(name, type, and) DEF_TOALL(name, type, or) DEF_TOALL(name, type, xor)
#define DEF_TOALL_MINMAX(name, type) DEF_TOALL(name, type, max) DEF_TOALL(name, type, min)
#define DEF_TOALL_ARITH(name, type) DEF_TOALL(name, type, sum) DEF_TOALL(name, type, prod)
USHMEMI_COLL_TOALL_BITWISE_TYPES(DEF_TOALL_BITWISE)
USHMEMI_COLL_TOALL_MINMAX_TYPES(DEF_TOALL_MINMAX)
USHMEMI_COLL_TOALL_MINMAX_TYPES(DEF_TOALL_ARITH)
USHMEMI_COLL_COMPLEX_TYPES(DEF_TOALL_ARITH)
