/* Stream-ordered calls (shmemx_*_on_stream): RMA, signals, barriers,
 * collectives, reductions and reduce-scatters queued on a stream of the
 * program's through the device backend's stream operations (a copy, a
 * 64-bit write, a 64-bit wait, a reduction of arrays), so the GPU carries
 * them out in the stream's order while the host returns.
 *
 * The barrier on a stream is a dissemination over the team's members: in
 * round k member i writes into member i + 2^k's stream_flags[i's world PE]
 * and its stream waits until its own stream_flags[sender's world PE] has
 * reached the count it expects from that sender. Both ends count the
 * barrier messages of each ordered pair (stream_sent, stream_expected), so a
 * flag has one writer whose values only grow, and ">=" is never satisfied
 * early, whichever teams the pair shares: within one barrier a pair meets in
 * at most one round (the distances 1, 2, 4, ... differ modulo the team size),
 * and the members of a team queue its collectives in the same order.
 *
 * A peer whose heap is not mapped here (another node, USHMEM_IPC=0) is
 * reached through the proxy thread (proxy.h): the call posts the request,
 * the stream writes the request's trigger word in host memory when it gets
 * there and waits until the proxy has carried it out over the fabric and
 * written its done word. Puts, gets, signals, barriers and the collectives
 * built from them take that road; reductions read the members' arrays
 * through their mappings and reach mapped peers only.
 *
 * An alltoall, broadcast or fcollect of up to 8 MiB goes as one kernel
 * where every member is mapped (coll_small): the first round, the copies
 * and the second round, as NVSHMEM runs its stream collectives; so does a
 * reduction or reduce-scatter of up to 1024 elements of result in a team
 * of up to 8 members, the reduction between the rounds (reduce_members).
 *
 * CUDA graphs: a call queued while the stream is being captured becomes
 * part of the graph and runs at each of its replays, with the values it
 * was queued with. Copies, the writes and waits of signals, sums and the
 * stream allocations replay as they are. The barrier's counts do not (the
 * host takes them at the call), so a captured barrier counts in device
 * memory instead (barrier_captured). A call through the proxy hands its
 * request over at the call, which a replay cannot repeat: it is refused
 * while capturing (refuse_capture), never done once and then no more. */
#include <shmem.h>
#include <shmemx.h>
#include <stdlib.h>
#include <string.h>

#include "../proxy/proxy.h"
#include "../transport/decide.h"
#include "coll.h"
#include "internal.h"

/* Barrier messages this PE queued to each world PE, and those it has
 * waited for from each. */
static uint64_t stream_sent[USHMEMI_STREAM_PES], stream_expected[USHMEMI_STREAM_PES];

/* Up to this many bytes copied by this PE (the members times the bytes to
 * each), an alltoall, broadcast or fcollect on a stream is one kernel
 * (coll_small) where the backend has one; past it, two barriers around
 * copy-engine copies, which leave the SMs to the program and reach 381
 * GB/s at 1 GiB on two H200s. Measured there against NVSHMEM's perftests
 * (docs/performance/nvshmem-perftests.md): the kernel was faster than the
 * pieces at every size they take, up to 8 MiB copied (a 4 MiB broadcast
 * at 2 PEs: 27.5 against 34.0 us). Unaligned copies go byte by byte in the
 * kernel: past STREAM_UNALIGNED_MAX bytes the copy engines take them.
 * USHMEMI_STREAM_SMALL_MAX (bytes; a measurement switch, 0 for the pieces
 * at every size, the reductions' too) changes the first. Members may
 * choose differently (a broadcast's root copies, the others do not; a PE
 * that shares its GPU takes the pieces): both forms send each member the
 * same two counts on the same flags. */
#define STREAM_SMALL_MAX ((size_t)8 << 20)
#define STREAM_UNALIGNED_MAX ((size_t)256 << 10)
static size_t small_max = STREAM_SMALL_MAX;
static int heap_ordinal = -2; /* the heap's device, -2 until asked */

void ushmemi_stream_reset(void)
{
    memset(stream_sent, 0, sizeof(stream_sent));
    memset(stream_expected, 0, sizeof(stream_expected));
    const char *v = getenv("USHMEMI_STREAM_SMALL_MAX"); /* measurement switch */
    small_max = v != NULL ? (size_t)strtoull(v, NULL, 0) : STREAM_SMALL_MAX;
    heap_ordinal = -2;
    /* The captured barriers' words, adjacent in the reserved area: like
     * stream_flags, no peer writes them before shmem_init's closing
     * barrier. */
    struct ushmemi_reserved *res = ushmemi_g.reserved;
    _Static_assert(offsetof(struct ushmemi_reserved, graph_expected) ==
                       offsetof(struct ushmemi_reserved, graph_flags) +
                           2 * sizeof(res->graph_flags),
                   "graph_flags, graph_sent and graph_expected are adjacent");
    ushmemi_host_copy_zero(res->graph_flags, 3 * sizeof(res->graph_flags));
}

/* The backend could not queue the operation: end the job, naming it. */
static void check(const char *call, ushmem_status_t status)
{
    if (status == USHMEM_ERR_UNSUPPORTED)
        ushmemi_fatal(call, "the %s backend cannot queue this operation on a stream (stream-"
                            "ordered calls need the cuda backend and a GPU with stream memory "
                            "operations)",
                      ushmemi_g.dev_ops->name);
    if (status != USHMEM_OK)
        ushmemi_fatal(call, "the device backend could not queue the operation on the stream: %s",
                      ushmemi_status_string(status));
}

/* The located object of pe as mapped here; fatal when the peer is not
 * mapped (another node, or USHMEM_IPC=0): for the calls that read or write
 * a peer's memory from the device itself. */
static void *mapped_at(const char *call, const struct ushmemi_loc *loc, int pe)
{
    if (loc->mapped == NULL)
        ushmemi_fatal(call, "PE %d's memory is not mapped here (%s); this call reads the "
                            "members' memory through their mappings, so on a stream it reaches "
                            "only mapped peers",
                      pe, ushmemi_g.peers[pe].map_why);
    return loc->mapped;
}

static void *stream_of(CUstream stream)
{
    return (void *)stream;
}

/* True when pe's located object is reached through the proxy thread;
 * fatal when it is neither mapped nor reached by a proxy, and on the
 * landing road: there this GPU context's own copies carry the data (the
 * proxy's bounce, the target's landing), and CUDA may queue such a copy
 * behind a stream's wait for a value in memory, which it does not see as
 * a dependency, so the stream would wait for itself. A 2-PE cu_on_stream
 * that way hung on two H200s. */
static bool proxied(const char *call, const struct ushmemi_loc *loc, int pe)
{
    if (loc->mapped != NULL)
        return false;
    if (ushmemi_g.proxy == NULL)
        ushmemi_fatal(call, "PE %d's memory is not mapped here (%s) and no proxy thread runs to "
                            "reach it over the fabric",
                      pe, ushmemi_g.peers[pe].map_why);
    if (ushmemi_settings.fabric_staging && ushmemi_g.heap_is_device)
        ushmemi_fatal(call, "PE %d is reached by landing (USHMEM_FABRIC_STAGING=1), where this "
                            "GPU's own copies move the data, which a stream waiting for them "
                            "could hold up: stream-ordered calls to it are refused; use a "
                            "libfabric that registers GPU memory (FI_HMEM) or the device API",
                      pe);
    return true;
}

/* A local buffer the proxy hands the fabric: the heap, host memory, or,
 * where the fabric registers the device heap (FI_HMEM), device memory
 * outside it, which it registers for the transfer (ofi_rma.c's
 * local_desc). Elsewhere a device buffer would be read as host memory. */
static void proxy_local_ok(const char *call, const void *buf, size_t len, const char *what,
                           int pe)
{
    struct ushmemi_ptr_attr attr;

    if (ushmemi_in_heap(buf, len))
        return;
    if (ushmemi_g.fabric != NULL && ushmemi_g.heap_is_device && !ushmemi_settings.fabric_staging)
        return;
    if (ushmemi_g.dev_ops->pointer_query(ushmemi_g.dev, buf, &attr) == USHMEM_OK &&
        attr.host_accessible)
        return;
    ushmemi_fatal(call, "%s %p (%zu bytes) is device memory outside the symmetric heap; PE %d "
                        "is reached through the fabric, which takes device memory only from the "
                        "heap it registered: allocate it with shmem_malloc",
                  what, buf, len, pe);
}

/* Whether the stream is being captured into a CUDA graph. */
static bool capturing(const char *call, CUstream stream)
{
    bool yes = false;
    check(call, ushmemi_g.dev_ops->stream_capturing(ushmemi_g.dev, stream_of(stream), &yes));
    return yes;
}

/* A call to pe through the proxy while the stream is captured: the request
 * would be handed over once, now, and the graph's replays would write its
 * trigger again and find it done, moving nothing. */
static _Noreturn void refuse_capture(const char *call, int pe)
{
    ushmemi_fatal(call, "PE %d is reached through the proxy thread, which takes this call's "
                        "request when the call is made, so a CUDA graph's replays could not "
                        "repeat it: it cannot be captured into a graph (call it outside stream "
                        "capture, or use the device API in a captured kernel)",
                  pe);
}

/* Hands req to the proxy at this point of the stream: the stream writes the
 * trigger when it gets here and waits until the proxy is done. */
static void via_proxy(const char *call, CUstream stream, const struct ushmem_ring_request *req)
{
    if (capturing(call, stream))
        refuse_capture(call, req->pe);
    struct ushmemi_proxy_stream_slot slot;
    ushmem_status_t status = ushmemi_proxy_stream_post(ushmemi_g.proxy, req, &slot);

    if (status != USHMEM_OK)
        ushmemi_fatal(call, "the proxy thread cannot take the request for PE %d: %s", req->pe,
                      ushmemi_status_string(status));
    check(call, ushmemi_g.dev_ops->stream_write64(ushmemi_g.dev, stream_of(stream), slot.trigger,
                                                 slot.seq));
    check(call, ushmemi_g.dev_ops->stream_wait64(ushmemi_g.dev, stream_of(stream), slot.done,
                                                slot.seq, USHMEMI_STREAM_GEQ));
}

/* nbytes from source here to dest on pe, mapped or through the proxy. */
static void stream_put(const char *call, CUstream stream, void *dest, const void *source,
                       size_t nbytes, int pe)
{
    struct ushmemi_loc loc;

    ushmemi_locate(call, dest, nbytes, pe, &loc);
    if (!proxied(call, &loc, pe)) {
        check(call, ushmemi_g.dev_ops->stream_copy(ushmemi_g.dev, stream_of(stream), loc.mapped,
                                                  source, nbytes));
        return;
    }
    proxy_local_ok(call, source, nbytes, "source", pe);
    struct ushmem_ring_request req = {.op = USHMEM_RING_OP_PUT, .pe = pe, .offset = loc.sym,
                                      .local = (uint64_t)(uintptr_t)source, .value = nbytes};
    via_proxy(call, stream, &req);
}

/* A barrier's count into pe's flag (an object of the reserved area). */
static void stream_write_flag(const char *call, CUstream stream, uint64_t *flag, uint64_t value,
                              int pe)
{
    struct ushmemi_loc loc;

    ushmemi_locate_reserved(call, flag, sizeof(*flag), pe, &loc);
    if (!proxied(call, &loc, pe)) {
        check(call, ushmemi_g.dev_ops->stream_write64(ushmemi_g.dev, stream_of(stream),
                                                     (uint64_t *)loc.mapped, value));
        return;
    }
    struct ushmem_ring_request req = {.op = USHMEM_RING_OP_PUT, .flags = USHMEM_RING_FLAG_INLINE,
                                      .pe = pe, .offset = loc.sym, .local = value,
                                      .value = sizeof(value)};
    via_proxy(call, stream, &req);
}

/* The user's symmetric object [addr, addr+len) of pe as mapped here. */
static void *mapped(const char *call, const void *addr, size_t len, int pe)
{
    struct ushmemi_loc loc;

    ushmemi_locate(call, addr, len, pe, &loc);
    return mapped_at(call, &loc, pe);
}

/* The team of a stream-ordered collective, as a set of world PEs; false
 * (after a message) for SHMEM_TEAM_INVALID. */
static bool team_set(const char *call, shmem_team_t team, struct ushmemi_coll_set *set_p)
{
    if (ushmemi_coll_team_set(call, team, set_p) != USHMEM_OK)
        return false;
    int last = ushmemi_coll_world_pe(set_p, set_p->size - 1);
    int highest = set_p->stride < 0 ? set_p->start : last;
    if (highest >= USHMEMI_STREAM_PES)
        ushmemi_fatal(call, "stream-ordered collectives reach world PEs below %d; this team "
                            "has PE %d",
                      USHMEMI_STREAM_PES, highest);
    return true;
}

/* One round for a team of 2 to USHMEMI_STREAM_BATCH + 1 members, where the
 * backend queues a round at once: this PE writes its next count to every
 * member's flag of it and waits for every member's count in its own flags.
 * Each ordered pair counts its messages as in the rounds below, so teams
 * that share PEs may use either. False when this backend or team takes the
 * rounds. How the backend queues it (on cuda, a small kernel or stream
 * memory operations: USHMEM_CUDA_STREAM_BARRIER) is the backend's choice,
 * told whether a member shares this PE's device; docs/performance/h200.md
 * gives what each measured. */
static bool barrier_on_stream_flat(const char *call, const struct ushmemi_coll_set *set,
                                   CUstream stream)
{
    uint64_t *flags[USHMEMI_STREAM_BATCH], *waits[USHMEMI_STREAM_BATCH];
    uint64_t values[USHMEMI_STREAM_BATCH], expect[USHMEMI_STREAM_BATCH];
    uint64_t *own = ushmemi_g.reserved->stream_flags;
    int n = 0;
    bool shared = false;

    if (ushmemi_g.dev_ops->stream_exchange64 == NULL || set->size < 2 ||
        set->size - 1 > USHMEMI_STREAM_BATCH)
        return false;
    for (int i = 1; i < set->size; i++) {
        int pe = ushmemi_coll_world_pe(set, (set->me + i) % set->size);
        struct ushmemi_loc loc;
        ushmemi_locate_reserved(call, &own[ushmemi_g.my_pe], sizeof(uint64_t), pe, &loc);
        if (loc.mapped == NULL)
            return false; /* the rounds reach it through the proxy */
        flags[n++] = (uint64_t *)loc.mapped;
        shared = shared || ushmemi_g.pair_caps[pe].same_device;
    }
    /* Counted once every member is known to be mapped. */
    for (int i = 1; i < set->size; i++) {
        int pe = ushmemi_coll_world_pe(set, (set->me + i) % set->size);
        values[i - 1] = ++stream_sent[pe];
        waits[i - 1] = &own[pe];
        expect[i - 1] = ++stream_expected[pe];
    }
    check(call, ushmemi_g.dev_ops->stream_exchange64(ushmemi_g.dev, stream_of(stream), flags,
                                                     values, n, waits, expect, n, shared));
    return true;
}

/* Where this PE's captured barrier messages land on pe (an object of the
 * reserved area, as mapped here); refused when pe is reached through the
 * proxy. */
static uint64_t *graph_flag_on(const char *call, int pe)
{
    struct ushmemi_loc loc;

    ushmemi_locate_reserved(call, &ushmemi_g.reserved->graph_flags[ushmemi_g.my_pe],
                            sizeof(uint64_t), pe, &loc);
    if (proxied(call, &loc, pe))
        refuse_capture(call, pe);
    return (uint64_t *)loc.mapped;
}

/* A barrier captured into a graph, as the rounds below but with the
 * numbers counted by the device (stream_exchange_counted) in this PE's
 * graph_sent and graph_expected, sent into the members' graph_flags: each
 * replay sends and expects the next numbers. Captured barriers and the
 * others each count their own messages of every pair on flags of their
 * own, so they never mix, whatever order a program launches graphs and
 * queues barriers in (the same on every member, as for any collective).
 * The round is a kernel that spins on the GPU, also where a member shares
 * this PE's device, where outside graphs stream memory operations wait
 * instead (they cannot count): it then waits for the driver to switch
 * processes, time slices of a few milliseconds. */
static void barrier_captured(const char *call, const struct ushmemi_coll_set *set,
                             CUstream stream)
{
    struct ushmemi_reserved *res = ushmemi_g.reserved;
    uint64_t *flags[USHMEMI_STREAM_BATCH], *counts[USHMEMI_STREAM_BATCH];
    uint64_t *waits[USHMEMI_STREAM_BATCH], *expect[USHMEMI_STREAM_BATCH];
    int n = 0;

    if (set->size < 2)
        return;
    if (ushmemi_g.dev_ops->stream_exchange_counted == NULL)
        ushmemi_fatal(call, "the %s backend cannot count a barrier's messages on the device, "
                            "which a barrier captured into a graph needs",
                      ushmemi_g.dev_ops->name);
    if (set->size - 1 <= USHMEMI_STREAM_BATCH) {
        for (int i = 1; i < set->size; i++, n++) {
            int pe = ushmemi_coll_world_pe(set, (set->me + i) % set->size);
            flags[n] = graph_flag_on(call, pe);
            counts[n] = &res->graph_sent[pe];
            waits[n] = &res->graph_flags[pe];
            expect[n] = &res->graph_expected[pe];
        }
        check(call, ushmemi_g.dev_ops->stream_exchange_counted(
                        ushmemi_g.dev, stream_of(stream), flags, counts, n, waits, expect, n));
        return;
    }
    for (int dist = 1; dist < set->size; dist <<= 1) {
        int to = ushmemi_coll_world_pe(set, (set->me + dist) % set->size);
        int from = ushmemi_coll_world_pe(set, (set->me - dist % set->size + set->size) %
                                                  set->size);
        flags[0] = graph_flag_on(call, to);
        counts[0] = &res->graph_sent[to];
        waits[0] = &res->graph_flags[from];
        expect[0] = &res->graph_expected[from];
        check(call, ushmemi_g.dev_ops->stream_exchange_counted(
                        ushmemi_g.dev, stream_of(stream), flags, counts, 1, waits, expect, 1));
    }
}

static void barrier_on_stream(const char *call, const struct ushmemi_coll_set *set,
                              CUstream stream)
{
    int me_world = ushmemi_g.my_pe;
    uint64_t *own = ushmemi_g.reserved->stream_flags;

    if (capturing(call, stream)) {
        barrier_captured(call, set, stream);
        return;
    }
    if (barrier_on_stream_flat(call, set, stream))
        return;
    for (int dist = 1; dist < set->size; dist <<= 1) {
        int to = ushmemi_coll_world_pe(set, (set->me + dist) % set->size);
        int from = ushmemi_coll_world_pe(set, (set->me - dist % set->size + set->size) %
                                                  set->size);
        stream_write_flag(call, stream, &own[me_world], ++stream_sent[to], to);
        check(call, ushmemi_g.dev_ops->stream_wait64(ushmemi_g.dev, stream_of(stream),
                                                    &own[from], ++stream_expected[from],
                                                    USHMEMI_STREAM_GEQ));
    }
}

static void world_barrier_on_stream(const char *call, CUstream stream)
{
    struct ushmemi_coll_set world;
    if (!team_set(call, SHMEM_TEAM_WORLD, &world))
        ushmemi_fatal(call, "SHMEM_TEAM_WORLD is not a team here");
    barrier_on_stream(call, &world, stream);
}

USHMEMI_API void shmemx_putmem_on_stream(void *dest, const void *source, size_t nbytes, int pe,
                                         CUstream stream)
{
    const char *call = "shmemx_putmem_on_stream";

    ushmemi_check_init(call);
    if (nbytes == 0)
        return;
    stream_put(call, stream, dest, source, nbytes, pe);
}

USHMEMI_API void shmemx_getmem_on_stream(void *dest, const void *source, size_t nbytes, int pe,
                                         CUstream stream)
{
    const char *call = "shmemx_getmem_on_stream";

    ushmemi_check_init(call);
    if (nbytes == 0)
        return;
    struct ushmemi_loc loc;
    ushmemi_locate(call, source, nbytes, pe, &loc);
    if (!proxied(call, &loc, pe)) {
        check(call, ushmemi_g.dev_ops->stream_copy(ushmemi_g.dev, stream_of(stream), dest,
                                                  loc.mapped, nbytes));
        return;
    }
    proxy_local_ok(call, dest, nbytes, "dest", pe);
    struct ushmem_ring_request req = {.op = USHMEM_RING_OP_GET, .pe = pe, .offset = loc.sym,
                                      .local = (uint64_t)(uintptr_t)dest, .value = nbytes};
    via_proxy(call, stream, &req);
}

USHMEMI_API void shmemx_putmem_signal_on_stream(void *dest, const void *source, size_t nbytes,
                                                uint64_t *sig_addr, uint64_t signal, int sig_op,
                                                int pe, CUstream stream)
{
    const char *call = "shmemx_putmem_signal_on_stream";

    ushmemi_check_init(call);
    if (sig_op != SHMEM_SIGNAL_SET)
        ushmemi_fatal(call, "sig_op %d: only SHMEM_SIGNAL_SET (%d) can be queued on a stream, "
                            "which writes words but cannot add to them; use the device API's "
                            "ushmem_putmem_signal for SHMEM_SIGNAL_ADD",
                      sig_op, SHMEM_SIGNAL_SET);
    struct ushmemi_loc loc;
    ushmemi_locate(call, sig_addr, sizeof(*sig_addr), pe, &loc);
    if (nbytes > 0)
        stream_put(call, stream, dest, source, nbytes, pe);
    if (!proxied(call, &loc, pe)) {
        /* The write's memory barrier puts the copy before the signal. */
        check(call, ushmemi_g.dev_ops->stream_write64(ushmemi_g.dev, stream_of(stream),
                                                     (uint64_t *)loc.mapped, signal));
        return;
    }
    /* An atomic set, as the device's signals to that PE: the proxy's put
     * before it is complete at the target. */
    struct ushmem_ring_request req = {.op = USHMEM_RING_OP_AMO, .amo_op = USHMEM_RING_AMO_SET,
                                      .amo_type = USHMEM_RING_AMO_UINT64, .pe = pe,
                                      .offset = loc.sym, .value = signal};
    via_proxy(call, stream, &req);
}

USHMEMI_API void shmemx_signal_wait_until_on_stream(uint64_t *sig_addr, int cmp,
                                                    uint64_t cmp_value, CUstream stream)
{
    const char *call = "shmemx_signal_wait_until_on_stream";
    enum ushmemi_stream_cmp how;

    ushmemi_check_init(call);
    mapped(call, sig_addr, sizeof(*sig_addr), ushmemi_g.my_pe); /* checks it is symmetric */
    switch (cmp) {
    case SHMEM_CMP_EQ:
        how = USHMEMI_STREAM_EQ;
        break;
    case SHMEM_CMP_GE:
        how = USHMEMI_STREAM_GEQ;
        break;
    case SHMEM_CMP_GT:
        if (cmp_value == UINT64_MAX)
            ushmemi_fatal(call, "SHMEM_CMP_GT %llu can never be true",
                          (unsigned long long)cmp_value);
        how = USHMEMI_STREAM_GEQ;
        cmp_value++;
        break;
    default:
        ushmemi_fatal(call, "cmp %d: a stream can wait for SHMEM_CMP_EQ, SHMEM_CMP_GE or "
                            "SHMEM_CMP_GT only; wait in a kernel for the others",
                      cmp);
    }
    check(call, ushmemi_g.dev_ops->stream_wait64(ushmemi_g.dev, stream_of(stream), sig_addr,
                                                cmp_value, how));
}

/* Everything queued before on the stream completes in the stream's order:
 * nothing to add. */
USHMEMI_API void shmemx_quiet_on_stream(CUstream stream)
{
    (void)stream;
    ushmemi_check_init("shmemx_quiet_on_stream");
}

USHMEMI_API void shmemx_barrier_all_on_stream(CUstream stream)
{
    world_barrier_on_stream("shmemx_barrier_all_on_stream", stream);
}

USHMEMI_API void shmemx_sync_all_on_stream(CUstream stream)
{
    world_barrier_on_stream("shmemx_sync_all_on_stream", stream);
}

/* Whether the device itself may read len bytes at src: the heap, or
 * memory of the heap's device (the copy engines also take host memory,
 * which a kernel may not be able to read). */
static bool device_readable(const void *src, size_t len)
{
    struct ushmemi_ptr_attr attr;

    if (ushmemi_in_heap(src, len))
        return true;
    if (heap_ordinal == -2)
        heap_ordinal = ushmemi_g.dev_ops->pointer_query(ushmemi_g.dev, ushmemi_g.heap_base,
                                                        &attr) == USHMEM_OK
                           ? attr.device_ordinal
                           : -1;
    return ushmemi_g.dev_ops->pointer_query(ushmemi_g.dev, src, &attr) == USHMEM_OK &&
           attr.kind == USHMEMI_MEM_DEVICE && attr.device_ordinal >= 0 &&
           attr.device_ordinal == heap_ordinal;
}

/* The rounds of a collective as one piece of work on the stream (the
 * backend's stream_coll): the barrier round of barrier_on_stream_flat (or
 * of barrier_captured, counted on the device, in a graph) before the work
 * and a second one after it. Each ordered pair's numbers advance by two, on
 * the flags the barriers of the same kind use, so the two forms mix in any
 * order. Fills c's rounds; false, with nothing counted, where the pieces
 * must go one by one: no such backend operation, a team of more than one
 * round, a member whose flags are not mapped here, or (outside graphs,
 * where barriers then use memory operations) a member on this very device,
 * whose work cannot run while the kernel spins. */
static bool coll_rounds(const char *call, const struct ushmemi_coll_set *set,
                        struct ushmemi_stream_coll *c, CUstream stream)
{
    struct ushmemi_reserved *res = ushmemi_g.reserved;

    if (ushmemi_g.dev_ops->stream_coll == NULL || set->size < 2 ||
        set->size - 1 > USHMEMI_STREAM_BATCH)
        return false;
    memset(c, 0, sizeof(*c));
    c->counted = capturing(call, stream);
    uint64_t *flags = c->counted ? res->graph_flags : res->stream_flags;
    bool shared = false;
    for (int i = 1; i < set->size; i++) {
        int pe = ushmemi_coll_world_pe(set, (set->me + i) % set->size);
        struct ushmemi_loc loc;
        ushmemi_locate_reserved(call, &flags[ushmemi_g.my_pe], sizeof(uint64_t), pe, &loc);
        if (loc.mapped == NULL)
            return false;
        c->addrs[c->n] = (uint64_t *)loc.mapped;
        c->waits[c->n++] = &flags[pe];
        shared = shared || ushmemi_g.pair_caps[pe].same_device;
    }
    return c->counted || !shared;
}

/* Queues c (its rounds from coll_rounds), counting its rounds' numbers
 * first: the call is sure to be queued now. */
static void coll_queue(const char *call, const struct ushmemi_coll_set *set,
                       struct ushmemi_stream_coll *c, CUstream stream)
{
    struct ushmemi_reserved *res = ushmemi_g.reserved;

    for (int i = 1; i < set->size; i++) {
        int pe = ushmemi_coll_world_pe(set, (set->me + i) % set->size), k = i - 1;
        if (c->counted) {
            c->counts[k] = &res->graph_sent[pe];
            c->expect_counts[k] = &res->graph_expected[pe];
            continue;
        }
        c->values[k] = stream_sent[pe];
        c->expect[k] = stream_expected[pe];
        stream_sent[pe] += 2;
        stream_expected[pe] += 2;
    }
    check(call, ushmemi_g.dev_ops->stream_coll(ushmemi_g.dev, stream_of(stream), c));
}

/* A collective of nbytes per member as one piece of work on the stream
 * (coll_rounds): when `sends`, src + member * src_stride to dest + offset
 * on every member between the rounds. False, with nothing queued, where
 * coll_rounds says so, or for more than small_max bytes to copy (or more
 * than STREAM_UNALIGNED_MAX not 16-byte aligned), a member whose dest is
 * not mapped here, or a source the device cannot read. */
static bool coll_small(const char *call, const struct ushmemi_coll_set *set, void *dest,
                       size_t offset, const void *src, size_t nbytes, size_t src_stride,
                       bool sends, CUstream stream)
{
    struct ushmemi_stream_coll c;

    if ((sends && nbytes > small_max / (size_t)set->size) ||
        (!sends && small_max == 0) || !coll_rounds(call, set, &c, stream))
        return false;
    c.len = nbytes;
    if (sends && nbytes > 0) {
        uintptr_t any = (uintptr_t)nbytes | (uintptr_t)src | (uintptr_t)src_stride |
                        (uintptr_t)dest | (uintptr_t)offset;
        if ((any & 15) != 0 && nbytes * (size_t)set->size > STREAM_UNALIGNED_MAX)
            return false;
        for (int i = 1; i <= set->size; i++) {
            int member = (set->me + i) % set->size;
            const char *from = (const char *)src + (size_t)member * src_stride;
            struct ushmemi_loc loc;
            ushmemi_locate(call, (char *)dest + offset, nbytes, ushmemi_coll_world_pe(set, member),
                           &loc);
            if (loc.mapped == NULL || !device_readable(from, nbytes))
                return false;
            c.dst[c.ncopy] = loc.mapped;
            c.src[c.ncopy++] = from;
        }
    }
    coll_queue(call, set, &c, stream);
    return true;
}

/* Below this many bytes per member, a collective's copy to its own PE
 * stays in the stream's order: a stream of its own for it costs more than
 * running it beside the others would save. */
#define STREAM_BESIDE_MIN ((size_t)8 << 20)

/* Copies src + member * src_stride to dest + offset on every member,
 * starting with the next one. A large copy to this PE itself (a local copy,
 * on another copy engine than the link's) runs beside the stream while the
 * others go out, and the stream waits for it at the end. */
static void put_to_all(const char *call, const struct ushmemi_coll_set *set, void *dest,
                       size_t offset, const void *src, size_t nbytes, size_t src_stride,
                       CUstream stream)
{
    const struct ushmemi_device_ops *ops = ushmemi_g.dev_ops;
    void *join = NULL;

    /* Not into a graph being captured: the side stream, made and let go at
     * each call, would be part of the capture when it is let go. */
    if (nbytes >= STREAM_BESIDE_MIN && set->size > 1 && ops->stream_copy_beside != NULL &&
        !capturing(call, stream)) {
        void *self = mapped(call, (char *)dest + offset, nbytes, ushmemi_g.my_pe);
        check(call, ops->stream_copy_beside(ushmemi_g.dev, stream_of(stream), self,
                                            (const char *)src + (size_t)set->me * src_stride,
                                            nbytes, &join));
    }
    for (int i = 1; i <= set->size && nbytes > 0; i++) {
        int member = (set->me + i) % set->size, pe = ushmemi_coll_world_pe(set, member);
        if (member == set->me && join != NULL)
            continue;
        stream_put(call, stream, (char *)dest + offset,
                   (const char *)src + (size_t)member * src_stride, nbytes, pe);
    }
    if (join != NULL)
        check(call, ops->stream_join(ushmemi_g.dev, stream_of(stream), join));
}

/* nbytes times the team size, checked for overflow. */
static size_t team_bytes(const char *call, const struct ushmemi_coll_set *set, size_t nbytes)
{
    size_t total;
    if (__builtin_mul_overflow(nbytes, (size_t)set->size, &total))
        ushmemi_fatal(call, "%zu bytes from each of %d PEs overflow the address space", nbytes,
                      set->size);
    return total;
}

USHMEMI_API int shmemx_alltoallmem_on_stream(shmem_team_t team, void *dest, const void *source,
                                             size_t nbytes, CUstream stream)
{
    const char *call = "shmemx_alltoallmem_on_stream";
    struct ushmemi_coll_set set;

    if (!team_set(call, team, &set))
        return -1;
    if (nbytes > 0)
        mapped(call, source, team_bytes(call, &set, nbytes), ushmemi_g.my_pe);
    if (coll_small(call, &set, dest, (size_t)set.me * nbytes, source, nbytes, nbytes, true,
                   stream))
        return 0;
    /* Nobody writes into a member's dest before it has reached the call. */
    barrier_on_stream(call, &set, stream);
    put_to_all(call, &set, dest, (size_t)set.me * nbytes, source, nbytes, nbytes, stream);
    barrier_on_stream(call, &set, stream);
    return 0;
}

USHMEMI_API int shmemx_broadcastmem_on_stream(shmem_team_t team, void *dest, const void *source,
                                              size_t nbytes, int pe_root, CUstream stream)
{
    const char *call = "shmemx_broadcastmem_on_stream";
    struct ushmemi_coll_set set;

    if (!team_set(call, team, &set))
        return -1;
    if (pe_root < 0 || pe_root >= set.size)
        ushmemi_fatal(call, "root PE %d is not in the team (0 to %d)", pe_root, set.size - 1);
    if (coll_small(call, &set, dest, 0, source, nbytes, 0, set.me == pe_root, stream))
        return 0;
    barrier_on_stream(call, &set, stream);
    if (set.me == pe_root)
        put_to_all(call, &set, dest, 0, source, nbytes, 0, stream);
    barrier_on_stream(call, &set, stream);
    return 0;
}

USHMEMI_API int shmemx_fcollectmem_on_stream(shmem_team_t team, void *dest, const void *source,
                                             size_t nbytes, CUstream stream)
{
    const char *call = "shmemx_fcollectmem_on_stream";
    struct ushmemi_coll_set set;

    if (!team_set(call, team, &set))
        return -1;
    if (nbytes > 0)
        mapped(call, dest, team_bytes(call, &set, nbytes), ushmemi_g.my_pe);
    if (coll_small(call, &set, dest, (size_t)set.me * nbytes, source, nbytes, 0, true, stream))
        return 0;
    barrier_on_stream(call, &set, stream);
    put_to_all(call, &set, dest, (size_t)set.me * nbytes, source, nbytes, 0, stream);
    barrier_on_stream(call, &set, stream);
    return 0;
}

/* Up to this many elements of result, a reduction on a stream is one
 * kernel of one block (the rounds and the reduction between them, as
 * NVSHMEM runs its own) where the team fits one; past it, and with
 * USHMEMI_STREAM_SMALL_MAX=0, the pieces below. Measured on two H200s in
 * a CUDA graph, int sums beside NVSHMEM's perftests: the pieces (three
 * kernel nodes) 6.0-6.2 us at every size to 4 KiB against NVSHMEM's
 * 5.3-6.1; the one kernel 4.7-5.2 us. Past one block's elements the
 * kernel of several blocks was the slower (6.5 us at 8 KiB, 14.6 at
 * 1 MiB against 6.3 and 9.5; docs/performance/nvshmem-perftests.md). */
#define STREAM_REDUCE_ONE_KERNEL_MAX 1024

/* The reduction of count elements of kind over the members, each of whose
 * array is at `source` on it (a symmetric address): a barrier (every
 * member's source is ready), kernels on this PE's stream that combine the
 * members' arrays read through their mapped heaps, in member order (so
 * every member gets the same bits), into dest, and a barrier (nobody still
 * reads a source); as one kernel up to STREAM_REDUCE_ONE_KERNEL_MAX. A kernel
 * takes USHMEMI_STREAM_REDUCE_SOURCES arrays; a larger team chains kernels,
 * each starting from the result so far. With `buffered` the result goes to
 * a buffer allocated on the stream, copied to dest after the second
 * barrier: for a dest that members may still be reading as a source. */
static void reduce_members(const char *call, const struct ushmemi_coll_set *set, void *dest,
                           const void *source, size_t count, size_t bytes,
                           enum ushmemi_reduce_op op, enum ushmemi_reduce_kind kind,
                           bool buffered, CUstream stream)
{
    const struct ushmemi_device_ops *ops = ushmemi_g.dev_ops;
    void *out = dest;
    struct ushmemi_stream_coll c;

    /* As one kernel (coll_rounds) where the team fits one and the result
     * goes straight to dest. */
    if (!buffered && count <= STREAM_REDUCE_ONE_KERNEL_MAX && small_max != 0 &&
        set->size <= USHMEMI_STREAM_REDUCE_SOURCES && coll_rounds(call, set, &c, stream)) {
        c.reduce = true;
        c.op = op;
        c.kind = kind;
        c.len = count;
        c.dst[0] = dest;
        for (int member = 0; member < set->size; member++)
            c.src[c.ncopy++] = mapped(call, source, bytes, ushmemi_coll_world_pe(set, member));
        coll_queue(call, set, &c, stream);
        return;
    }
    barrier_on_stream(call, set, stream);
    if (buffered)
        check(call, ops->stream_alloc(ushmemi_g.dev, stream_of(stream), bytes, &out));
    const void *srcs[USHMEMI_STREAM_REDUCE_SOURCES];
    for (int member = 0; member < set->size;) {
        int n = 0;
        if (member > 0)
            srcs[n++] = out; /* the result of the members before */
        while (n < USHMEMI_STREAM_REDUCE_SOURCES && member < set->size)
            srcs[n++] = mapped(call, source, bytes, ushmemi_coll_world_pe(set, member++));
        check(call, ops->stream_reduce(ushmemi_g.dev, stream_of(stream), out, srcs, n, op, kind,
                                       count));
    }
    barrier_on_stream(call, set, stream);
    if (out != dest) {
        check(call, ops->stream_copy(ushmemi_g.dev, stream_of(stream), dest, out, bytes));
        check(call, ops->stream_free(ushmemi_g.dev, stream_of(stream), out));
    }
}

/* nreduce elements of kind in bytes, checked for overflow. */
static size_t reduce_bytes(const char *call, size_t nreduce, enum ushmemi_reduce_kind kind)
{
    size_t bytes;
    if (__builtin_mul_overflow(nreduce, ushmemi_reduce_kind_size(kind), &bytes))
        ushmemi_fatal(call, "%zu elements of %zu bytes overflow the address space", nreduce,
                      ushmemi_reduce_kind_size(kind));
    return bytes;
}

/* dest = op over the members of source, nreduce elements of kind. In place
 * (dest == source) the result goes through a buffer: the other members
 * read this source until the closing barrier. */
static int reduce_on_stream(const char *call, shmem_team_t team, void *dest, const void *source,
                            size_t nreduce, enum ushmemi_reduce_op op,
                            enum ushmemi_reduce_kind kind, CUstream stream)
{
    struct ushmemi_coll_set set;

    if (!team_set(call, team, &set))
        return -1;
    size_t bytes = reduce_bytes(call, nreduce, kind);
    if (bytes == 0)
        return 0;
    const char *d = dest, *s = source;
    if (d != s && d < s + bytes && s < d + bytes)
        ushmemi_fatal(call, "dest %p and source %p overlap without being the same array (%zu "
                            "bytes each)",
                      dest, source, bytes);
    mapped(call, dest, bytes, ushmemi_g.my_pe);
    reduce_members(call, &set, dest, source, nreduce, bytes, op, kind, d == s, stream);
    return 0;
}

/* NVSHMEM's reduce-scatter: source holds nreduce elements for each member,
 * and member i gets in dest the reduction over the members of their block
 * i. A dest anywhere in this PE's source goes through a buffer, as the
 * other members read their blocks of it until the closing barrier. */
static int reducescatter_on_stream(const char *call, shmem_team_t team, void *dest,
                                   const void *source, size_t nreduce,
                                   enum ushmemi_reduce_op op, enum ushmemi_reduce_kind kind,
                                   CUstream stream)
{
    struct ushmemi_coll_set set;

    if (!team_set(call, team, &set))
        return -1;
    size_t bytes = reduce_bytes(call, nreduce, kind);
    if (bytes == 0)
        return 0;
    size_t total = team_bytes(call, &set, bytes);
    const char *d = dest, *s = source;
    mapped(call, source, total, ushmemi_g.my_pe);
    mapped(call, dest, bytes, ushmemi_g.my_pe);
    reduce_members(call, &set, dest, s + (size_t)set.me * bytes, nreduce, bytes, op, kind,
                   d < s + total && s < d + bytes, stream);
    return 0;
}

/* The element kind of each class of type (shmemx.h's list): integers by
 * size and signedness, floats and complex numbers by size. */
static enum ushmemi_reduce_kind int_kind(size_t size, bool is_signed)
{
    enum ushmemi_reduce_kind kind = size == 1   ? USHMEMI_REDUCE_U8
                                    : size == 2 ? USHMEMI_REDUCE_U16
                                    : size == 4 ? USHMEMI_REDUCE_U32
                                                : USHMEMI_REDUCE_U64;
    return is_signed ? kind - USHMEMI_REDUCE_U8 + USHMEMI_REDUCE_I8 : kind;
}
#define KIND_INT(type) int_kind(sizeof(type), (type)-1 < (type)1)
#define KIND_FLOAT(type) (sizeof(type) == sizeof(float) ? USHMEMI_REDUCE_F32 : USHMEMI_REDUCE_F64)
#define KIND_COMPLEX(type)                                                                    \
    (sizeof(type) == sizeof(float _Complex) ? USHMEMI_REDUCE_C32 : USHMEMI_REDUCE_C64)
_Static_assert(sizeof(float) == 4 && sizeof(double) == 8, "IEEE single and double");

/* The op of each name in shmemx.h's list. */
enum {
    STREAM_OP_sum = USHMEMI_REDUCE_SUM,
    STREAM_OP_prod = USHMEMI_REDUCE_PROD,
    STREAM_OP_min = USHMEMI_REDUCE_MIN,
    STREAM_OP_max = USHMEMI_REDUCE_MAX,
    STREAM_OP_and = USHMEMI_REDUCE_AND,
    STREAM_OP_or = USHMEMI_REDUCE_OR,
    STREAM_OP_xor = USHMEMI_REDUCE_XOR,
};

#define USHMEMI_STREAM_REDUCE(name, type, op, cls)                                          \
    USHMEMI_API int shmemx_##name##_##op##_reduce_on_stream(                                \
        shmem_team_t team, type *dest, const type *source, size_t nreduce, CUstream stream) \
    {                                                                                       \
        return reduce_on_stream("shmemx_" #name "_" #op "_reduce_on_stream", team, dest,    \
                                source, nreduce, (enum ushmemi_reduce_op)STREAM_OP_##op,    \
                                KIND_##cls(type), stream);                                  \
    }                                                                                       \
    USHMEMI_API int shmemx_##name##_##op##_reducescatter_on_stream(                         \
        shmem_team_t team, type *dest, const type *source, size_t nreduce, CUstream stream) \
    {                                                                                       \
        return reducescatter_on_stream("shmemx_" #name "_" #op "_reducescatter_on_stream",  \
                                       team, dest, source, nreduce,                         \
                                       (enum ushmemi_reduce_op)STREAM_OP_##op,              \
                                       KIND_##cls(type), stream);                           \
    }
USHMEMI_STREAM_REDUCTIONS
#undef USHMEMI_STREAM_REDUCE
