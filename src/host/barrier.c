/* Barriers and synchronisation: the world barrier (shmem_init, allocation,
 * shmem_barrier_all, collectives on SHMEM_TEAM_WORLD), the set barrier behind
 * teams and the deprecated active-set routines, and the resolution of teams
 * and active sets into PE sets.
 *
 * Both barriers are dissemination barriers (log2 N rounds; in round k member
 * i signals member i + 2^k and waits for member i - 2^k) over 64-bit counters
 * in the reserved area of every heap, added to on the SYNC road (a mapped
 * atomic, or a fabric atomic) and waited for locally. Counters only ever increase, so there
 * is no reset and no race between one barrier and the next.
 *
 * When the heap is device memory, the world barrier's counters are in the
 * host sync segments instead (sync_seg.c), if every PE's is mapped here.
 *
 * World counters: barrier_flags[k] counts round-k signals. Every world
 * barrier gives each PE exactly one signal per round, so after e barriers
 * each counter is at least e and ushmemi_g.barrier_epoch is the target.
 *
 * Set counters (teams other than world, active sets): one word per *sending*
 * world PE, in the collective scratch. A PE signals member m by incrementing
 * m's word for itself, and counts locally how many signals it expects from
 * each sender. Because a sender is in one collective at a time and every PE
 * calls collectives on overlapping sets in the same order, a signal a sender
 * makes for a later barrier always follows the one for the current barrier,
 * so ">= expected" is never satisfied early. Different active sets therefore
 * never mix, whether they overlap or not and whatever pSync they pass: the
 * pSync arrays are accepted but not needed (and left untouched, which keeps
 * them at SHMEM_SYNC_VALUE as the spec requires on return). */
#include <shmem.h>
#include <stdatomic.h>
#include <string.h>

#include "coll.h"
#include "internal.h"
#include "sync_seg.h"

_Static_assert(sizeof(((struct ushmemi_sync_seg *)0)->set_flags) ==
                   USHMEMI_COLL_MAX_SET_PES * sizeof(uint64_t),
               "one sync segment counter per sending world PE");

/* Signals this PE expects from each sending world PE on its set counters
 * (those of the heap or those of the sync segment: one kind per job). */
static uint64_t set_expected[USHMEMI_COLL_MAX_SET_PES];

/* A new initialisation starts with zeroed heaps and sync segments. */
void ushmemi_barrier_reset(void)
{
    ushmemi_g.barrier_epoch = 0;
    memset(set_expected, 0, sizeof(set_expected));
}

static _Atomic uint64_t *set_counters(struct ushmemi_reserved *reserved)
{
    return (_Atomic uint64_t *)(void *)reserved->scratch;
}

/* The counters can be waited on by the CPU: host memory, or device memory
 * that peers update over the fabric and this PE reads with the copy engine. */
static bool counters_usable(void)
{
    return ushmemi_g.heap_host_accessible || ushmemi_road_uses_fabric(USHMEMI_CLASS_SYNC);
}

/* world_epoch: the world barrier waited in, 0 for a set barrier (watch.c). */
static void wait_at_least(const char *call, uint64_t world_epoch, _Atomic uint64_t *word,
                          uint64_t target)
{
    unsigned spins = 0;
    if (!ushmemi_g.heap_host_accessible) {
        uint64_t seen;
        for (;;) {
            ushmemi_host_copy(call, &seen, (const void *)word, sizeof(seen));
            if (seen >= target)
                break;
            ushmemi_poll_pause_in(call, world_epoch, &spins);
        }
        atomic_thread_fence(memory_order_acquire);
        return;
    }
    ushmemi_poll_wait_reserved(call, world_epoch, word, target);
}

/* The same dissemination over the host sync segments, when the heap is
 * device memory: the counters are host memory every PE has mapped. The
 * heap's data moved by this PE is complete already (the copy engine's
 * blocking copies, and quiet before shmem_barrier_all). */
static void host_seg_barrier(const char *call)
{
    int n = ushmemi_g.n_pes, me = ushmemi_g.my_pe, round = 0;
    uint64_t epoch = ++ushmemi_g.barrier_epoch;
    struct ushmemi_sync_seg *own = ushmemi_sync_seg(me);

    for (int dist = 1; dist < n; dist <<= 1, round++) {
        _Atomic uint64_t *to = &ushmemi_sync_seg((me + dist) % n)->barrier_flags[round];
        atomic_fetch_add_explicit(to, 1, memory_order_release);
        ushmemi_poll_wake(to);
        ushmemi_poll_wait_ge(call, epoch, &own->barrier_flags[round], epoch);
    }
}

/* Where PEs share cores and the members map each other's host heaps (the
 * same answer on every member: see ushmemi_mbox_usable; coll_wake is the
 * job's), member 0 gathers and releases: every other member signals it
 * and waits for one signal back. Two hand-offs, as many as the
 * dissemination's two rounds at 4 PEs, but member 0 leaves first and
 * leaves at once, so a collective's root that follows (a broadcast) has
 * sent its data before the others are scheduled to wait for it. It uses
 * the set counters with their expected counts, as the dissemination does:
 * either may follow the other. */
static bool central_fits(const struct ushmemi_coll_set *set)
{
    return ushmemi_g.coll_wake && set->size > 2 && ushmemi_mbox_usable(set);
}

/* world_epoch: as for wait_at_least (the world barrier counts its
 * barriers on this road too, for watch.c). */
static void central_barrier(const char *call, const struct ushmemi_coll_set *set,
                            uint64_t world_epoch)
{
    _Atomic uint64_t *own = set_counters(ushmemi_g.reserved);
    int me_world = ushmemi_g.my_pe, root = ushmemi_coll_world_pe(set, 0);
    if (set->me != 0) {
        ushmemi_sync_add(call, &own[me_world], 1, root);
        wait_at_least(call, world_epoch, &own[root], ++set_expected[root]);
        return;
    }
    for (int i = 1; i < set->size; i++) {
        int pe = ushmemi_coll_world_pe(set, i);
        wait_at_least(call, world_epoch, &own[pe], ++set_expected[pe]);
    }
    for (int i = 1; i < set->size; i++)
        ushmemi_sync_add(call, &own[me_world], 1, ushmemi_coll_world_pe(set, i));
}

static void world_barrier(const char *call)
{
    int n = ushmemi_g.n_pes, me = ushmemi_g.my_pe;
    /* Collectives put their data and then meet here: a put left queued on
     * the copy engine must land before any PE leaves. */
    ushmemi_host_copies_complete(call);
    if (n == 1) {
        atomic_thread_fence(memory_order_seq_cst);
        return;
    }
    if (!ushmemi_g.heap_host_accessible && ushmemi_sync_seg(me) != NULL) {
        host_seg_barrier(call);
        return;
    }
    struct ushmemi_coll_set world = {.start = 0, .stride = 1, .size = n, .me = me, .world = true};
    if (central_fits(&world)) {
        /* Once coll_wake is set (at init, on every PE before its next
         * barrier) every world barrier of the job comes here, so the
         * dissemination's counters never fall behind the epoch. */
        central_barrier(call, &world, ++ushmemi_g.barrier_epoch);
        return;
    }
    if (!counters_usable()) {
        /* The counters live in device memory the CPU cannot touch, and some
         * PE's host sync segment is not mapped here (another node). The
         * bootstrap's barrier is slow but correct. */
        ushmem_status_t status = ushmemi_bootstrap_barrier(&ushmemi_g.bs);
        if (status != USHMEM_OK)
            ushmemi_fatal(call, "bootstrap barrier failed: %s", ushmemi_status_string(status));
        return;
    }
    uint64_t epoch = ++ushmemi_g.barrier_epoch;
    struct ushmemi_reserved *own = ushmemi_g.reserved;
    int round = 0;
    for (int dist = 1; dist < n; dist <<= 1, round++) {
        /* The counter is symmetric: ours names the same word on the peer.
         * The add releases this PE's earlier stores (and, transitively, what
         * it saw in earlier rounds) to the PE that acquires the counter. */
        ushmemi_sync_add(call, &own->barrier_flags[round], 1, (me + dist) % n);
        wait_at_least(call, epoch, &own->barrier_flags[round], epoch);
    }
}

void ushmemi_barrier_world(void) { world_barrier("ushmem internal world barrier"); }

void ushmemi_coll_barrier(const char *call, const struct ushmemi_coll_set *set)
{
    ushmemi_host_copies_complete(call);
    if (set->world) {
        world_barrier(call);
        return;
    }
    int n = set->size;
    if (n == 1) {
        atomic_thread_fence(memory_order_seq_cst);
        return;
    }
    int me_world = ushmemi_g.my_pe;
    if (!ushmemi_g.heap_host_accessible && ushmemi_sync_seg(me_world) != NULL) {
        /* Device heap: the counters of the host sync segments. */
        _Atomic uint64_t *own = ushmemi_sync_seg(me_world)->set_flags;
        for (int dist = 1; dist < n; dist <<= 1) {
            int to = ushmemi_coll_world_pe(set, (set->me + dist) % n);
            int from = ushmemi_coll_world_pe(set, (set->me - dist + n) % n);
            _Atomic uint64_t *word = &ushmemi_sync_seg(to)->set_flags[me_world];
            atomic_fetch_add_explicit(word, 1, memory_order_release);
            ushmemi_poll_wake(word);
            ushmemi_poll_wait_ge(call, 0, &own[from], ++set_expected[from]);
        }
        return;
    }
    if (central_fits(set)) {
        central_barrier(call, set, 0);
        return;
    }
    if (!counters_usable())
        ushmemi_fatal(call, "barriers over a subset of PEs need a heap the CPU can access, "
                            "host sync segments mapped from every PE, or a fabric route; this "
                            "backend's heap is device memory");
    _Atomic uint64_t *own = set_counters(ushmemi_g.reserved);
    for (int dist = 1; dist < n; dist <<= 1) {
        int to = ushmemi_coll_world_pe(set, (set->me + dist) % n);
        int from = ushmemi_coll_world_pe(set, (set->me - dist + n) % n);
        ushmemi_sync_add(call, &own[me_world], 1, to);
        wait_at_least(call, 0, &own[from], ++set_expected[from]);
    }
}

ushmem_status_t ushmemi_coll_team_set(const char *call, const struct ushmemi_team *team,
                                      struct ushmemi_coll_set *set_p)
{
    ushmemi_check_init(call);
    team = ushmemi_team_lookup(call, team);
    if (team == NULL) {
        ushmemi_error("%s: PE %d passed SHMEM_TEAM_INVALID", call, ushmemi_g.my_pe);
        return USHMEM_ERR_INVALID_PARAM;
    }
    struct ushmemi_coll_set set = {
        .start = team->start,
        .stride = team->stride,
        .size = team->size,
        .me = ushmemi_team_index_of(team, ushmemi_g.my_pe),
    };
    if (set.me < 0)
        ushmemi_fatal(call, "PE %d is not a member of %s (start %d, stride %d, size %d)",
                      ushmemi_g.my_pe, team->name, set.start, set.stride, set.size);
    set.world = set.start == 0 && set.stride == 1 && set.size == ushmemi_g.n_pes;
    if (!set.world && ushmemi_g.n_pes > USHMEMI_COLL_MAX_SET_PES)
        ushmemi_fatal(call, "collectives on %s support jobs of up to %d PEs; this one has %d",
                      team->name, USHMEMI_COLL_MAX_SET_PES, ushmemi_g.n_pes);
    *set_p = set;
    return USHMEM_OK;
}

void ushmemi_coll_active_set(const char *call, int PE_start, int logPE_stride, int PE_size,
                             struct ushmemi_coll_set *set_p)
{
    ushmemi_check_init(call);
    int n = ushmemi_g.n_pes, me = ushmemi_g.my_pe;
    if (PE_start < 0 || logPE_stride < 0 || logPE_stride > 30 || PE_size < 1)
        ushmemi_fatal(call, "malformed active set: PE_start %d, logPE_stride %d, PE_size %d",
                      PE_start, logPE_stride, PE_size);
    long long stride = 1LL << logPE_stride;
    long long last = PE_start + (long long)(PE_size - 1) * stride;
    if (last >= n)
        ushmemi_fatal(call, "active set (PE_start %d, logPE_stride %d, PE_size %d) reaches PE %lld "
                            "but the job has %d PEs",
                      PE_start, logPE_stride, PE_size, last, n);
    long long offset = me - PE_start;
    if (offset < 0 || offset % stride != 0 || offset / stride >= PE_size)
        ushmemi_fatal(call, "PE %d is not in the active set (PE_start %d, logPE_stride %d, "
                            "PE_size %d) it was called with",
                      me, PE_start, logPE_stride, PE_size);
    struct ushmemi_coll_set set = {
        .start = PE_start,
        .stride = (int)stride,
        .size = PE_size,
        .me = (int)(offset / stride),
        .world = PE_start == 0 && stride == 1 && PE_size == n,
    };
    if (!set.world && n > USHMEMI_COLL_MAX_SET_PES)
        ushmemi_fatal(call, "active-set collectives support jobs of up to %d PEs; this one has %d",
                      USHMEMI_COLL_MAX_SET_PES, n);
    *set_p = set;
}

USHMEMI_API void shmem_barrier_all(void)
{
    ushmemi_check_init("shmem_barrier_all");
    shmem_quiet();
    world_barrier("shmem_barrier_all");
}

USHMEMI_API void shmem_sync_all(void)
{
    ushmemi_check_init("shmem_sync_all");
    world_barrier("shmem_sync_all");
}

static int team_sync(const char *call, shmem_team_t team)
{
    struct ushmemi_coll_set set;
    if (ushmemi_coll_team_set(call, team, &set) != USHMEM_OK)
        return -1;
    ushmemi_coll_barrier(call, &set);
    return 0;
}

USHMEMI_API int shmem_team_sync(shmem_team_t team) { return team_sync("shmem_team_sync", team); }

/* The symbol shmem_sync is the team form; shmem.h's shmem_sync(...) macro
 * sends four arguments to shmem_sync_deprecated. */
USHMEMI_API int(shmem_sync)(shmem_team_t team) { return team_sync("shmem_sync", team); }

USHMEMI_API void shmem_sync_deprecated(int PE_start, int logPE_stride, int PE_size, long *pSync)
{
    (void)pSync; /* see the header comment: counters need no pSync */
    struct ushmemi_coll_set set;
    ushmemi_coll_active_set("shmem_sync", PE_start, logPE_stride, PE_size, &set);
    ushmemi_coll_barrier("shmem_sync", &set);
}

USHMEMI_API void shmem_barrier(int PE_start, int logPE_stride, int PE_size, long *pSync)
{
    (void)pSync;
    struct ushmemi_coll_set set;
    ushmemi_coll_active_set("shmem_barrier", PE_start, logPE_stride, PE_size, &set);
    shmem_quiet();
    ushmemi_coll_barrier("shmem_barrier", &set);
}
