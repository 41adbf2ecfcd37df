/* The device API (include/ushmem/device.h) on the cpu backend, where device
 * code is host threads: T threads per PE, using only ushmem_* calls, put
 * distinct patterns into distinct slots of every PE (blocking, nbi + quiet,
 * p), read them back (get, get_nbi, g), work on shared words of every PE with
 * atomics whose totals are known (fetch_add, fetch_inc, compare_swap, swap,
 * and/or/xor, set/fetch), put with an ADD signal (256 bytes, and one
 * long) that the receiving PE waits for exactly, and 5 unaligned bytes
 * with a SET signal per sender; through the proxy, a put of up to 8 bytes
 * and its signal take one ticket. After a device barrier every PE checks every word it
 * received. Then a loop of device barriers, interleaved with host barriers,
 * checks that nobody leaves a barrier early, and rounds of gets of words
 * their owner rewrote since the last get check that each get sees the
 * round its signal announced. The window of the device state
 * (the PEs reached by arithmetic) must agree with the table, and ushmem_ptr
 * must reach exactly the mapped PEs: every PE stores through it into each of
 * them and checks what the others stored into it.
 *
 * The road taken is checked against the environment: direct by default,
 * every call through the proxy with USHMEM_DEVICE_ROUTE=proxy, the proxy for
 * other PEs with USHMEM_IPC=0.
 *
 * With the argument "bad-offset", PE 0 puts through the proxy to an address
 * outside the heap: the job must end with the proxy's message. With
 * "table", the window is emptied after it is checked, so that every direct
 * call finds its peer in the table instead (as PEs whose heaps do not lie
 * one stride apart do). */
#include <pthread.h>
#include <shmem.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <ushmem/device.h>

#include "mpe_check.h"

#define T 4     /* threads per PE */
#define W 64    /* longs per put slot */
#define WS 32   /* longs per signalled slot */
#define K 8     /* atomic rounds per thread and PE */
#define BARRIER_ROUNDS 40
#define FRESH_ROUNDS 50
#define FW 64   /* longs each PE rewrites every fresh round */
#define LATE_ADDS 2000 /* signal adds each PE leaves unquieted before the host's barrier */

static int me, npes, nt; /* nt: threads in the job, ids 0 .. nt-1 */

/* Symmetric objects, allocated by the main thread. */
static long *slots;    /* [nt][W]: slot of thread id */
static long *sig_data; /* [nt][WS] */
static long *sig8_data; /* [nt]: the one-long signalled puts */
static unsigned char *sset_data; /* [nt][8]: 5 bytes at 1, with a SET signal */
static uint64_t *sset;           /* [nt]: SET id+1 by thread id after its 5 bytes */
static int *pslot;     /* [nt] */
static int64_t *setw;  /* [nt] */
static double *dslot;  /* [nt] */
static struct words {
    uint64_t counter;   /* fetch_add id+1, K times per thread */
    int32_t inc_ctr;    /* fetch_inc K times per thread */
    int32_t sum32;      /* add -(id+1) */
    long owner;         /* compare_swap -1 -> id: one winner */
    int win_count;      /* inc by the winner */
    long loser_sum;     /* add of what each loser saw */
    uint64_t swap_word; /* swap id+1 */
    uint64_t swap_xor;  /* xor of what each swap returned */
    uint64_t bits_or;   /* fetch_or 1 << id */
    uint64_t bits_and;  /* fetch_and ~(1 << id), from all ones */
    uint32_t u32_or;    /* or 1 << (id % 32) */
    unsigned long long xw; /* fetch_xor mix(id) */
    uint64_t sig;       /* ADD id+1 with each signalled put */
    uint64_t sig8;      /* ADD id+1 with each 8-byte signalled put */
    long arrivals;      /* the barrier loop */
    long bar_slot;
    long ptr_slot[64 / T]; /* [pe]: stored by pe through ushmem_ptr */
    uint64_t fresh_sig;    /* set to the round by the previous PE */
    uint64_t fresh_ack;    /* set to the round by the next PE */
    uint64_t late;         /* LATE_ADDS adds from every PE, never quieted */
    long one_data;         /* the main thread's put with signal, from the previous PE */
    uint64_t one_sig;      /* SET to that PE + 1 */
} *w;
static long *fresh_pub; /* [FW]: rewritten by its own PE every round */

static long pattern(int id, int dst, int i)
{
    return (long)id * 1000003L + (long)dst * 101L + i;
}

static unsigned long long mix(int id)
{
    return ((unsigned long long)id + 1) * 0x9E3779B97F4A7C15ULL;
}

/* Every PE the window counts for a class takes that class directly and
 * has its heap where the stride puts it; nothing is counted when every call
 * goes through the proxy. */
static void check_window(int forced)
{
    const struct ushmem_device_state *s = &ushmem_device_state;

    for (int cls = 0; cls < USHMEM_DEVICE_CLASS_COUNT; cls++) {
        MPE_CHECK(!forced || s->window_count[cls] == 0, "class %d: %u PEs in the window with "
                  "USHMEM_DEVICE_ROUTE=proxy", cls, s->window_count[cls]);
        MPE_CHECK(s->window_count[cls] <= (uint32_t)npes, "class %d: %u PEs in the window", cls,
                  s->window_count[cls]);
        for (uint32_t k = 0; k < s->window_count[cls]; k++) {
            int pe = s->window_first[cls] + (int)k;
            MPE_CHECK(pe >= 0 && pe < npes && s->peers[pe].direct[cls],
                      "class %d: PE %d in the window is not reached directly", cls, pe);
            uint64_t want = s->heap_base + (uint64_t)(int64_t)(pe - me) * s->peer_stride;
            MPE_CHECK(s->peers[pe].heap_base == want,
                      "class %d: PE %d's heap at 0x%llx, the window says 0x%llx", cls, pe,
                      (unsigned long long)s->peers[pe].heap_base, (unsigned long long)want);
        }
    }
    /* This PE is in its own window whenever its calls are direct. */
    MPE_CHECK(forced || (uint32_t)(me - s->window_first[USHMEM_DEVICE_CLASS_RMA]) <
                            s->window_count[USHMEM_DEVICE_CLASS_RMA],
              "PE %d is not in its own window", me);
}

/* ushmem_ptr reaches exactly the PEs mapped here, and only heap addresses
 * of real PEs: each PE stores through it into ptr_slot[me] of every PE it
 * reaches, and after a barrier finds in its own ptr_slot what each PE that
 * reaches it stored. */
static void check_ptr(int forced)
{
    long local = 0;

    MPE_CHECK(ushmem_ptr(&w->ptr_slot[me], -1) == NULL, "ushmem_ptr to PE -1");
    MPE_CHECK(ushmem_ptr(&w->ptr_slot[me], npes) == NULL, "ushmem_ptr to PE %d", npes);
    MPE_CHECK(ushmem_ptr(&local, me) == NULL, "ushmem_ptr of a stack address");
    for (int pe = 0; pe < npes; pe++) {
        long *p = ushmem_ptr(&w->ptr_slot[me], pe);
        int want = mpe_mapped_pe(pe) && !forced;
        MPE_CHECK((p != NULL) == want, "ushmem_ptr to PE %d: %p, want %s", pe, (void *)p,
                  want ? "an address" : "NULL");
        if (p != NULL)
            *p = 1000L * me + pe;
    }
    shmem_barrier_all();
    for (int pe = 0; pe < npes; pe++) {
        long want = mpe_mapped_pe(pe) && !forced ? 1000L * pe + me : 0;
        MPE_CHECK(w->ptr_slot[pe] == want, "ptr_slot[%d] = %ld, want %ld", pe, w->ptr_slot[pe],
                  want);
    }
}

static void check_roads(void)
{
    const char *route = getenv("USHMEM_DEVICE_ROUTE");
    int forced = route != NULL && strcmp(route, "proxy") == 0;
    /* Mapping off or simulated nodes: some peer is reached over the fabric. */
    int fabric = mpe_fabric_job();

    MPE_CHECK(ushmem_my_pe() == me && ushmem_n_pes() == npes, "device my_pe %d n_pes %d",
              ushmem_my_pe(), ushmem_n_pes());
    MPE_CHECK(ushmem_device_state.force_proxy == forced, "force_proxy %d",
              ushmem_device_state.force_proxy);
    /* Gets' values are taken as they land where they lie apart and the
     * backend writes a copied word whole: every backend but ze. */
    const char *backend = getenv("USHMEM_BACKEND");
    int whole = backend == NULL || strcmp(backend, "ze") != 0;
    MPE_CHECK(ushmem_device_state.values_watched == (ushmem_device_state.ring_values != 0 && whole),
              "values_watched %d with the values at 0x%llx", ushmem_device_state.values_watched,
              (unsigned long long)ushmem_device_state.ring_values);
    for (int pe = 0; pe < npes; pe++) {
        for (int cls = 0; cls < USHMEM_DEVICE_CLASS_COUNT; cls++) {
            int want = mpe_mapped_pe(pe);
            /* With a fabric, the atomics on every PE's words, this PE's and
             * its node's included, go over it, so that they are atomic with
             * the ones that must. */
            if (fabric && cls != USHMEM_DEVICE_CLASS_RMA)
                want = 0;
            if (pe == me && fabric && cls != USHMEM_DEVICE_CLASS_RMA)
                continue;
            MPE_CHECK(ushmem_device_state.peers[pe].direct[cls] == want,
                      "PE %d class %d direct %d, want %d", pe, cls,
                      ushmem_device_state.peers[pe].direct[cls], want);
        }
    }
    /* The proxy thread runs only when some call needs it. */
    int need = forced || fabric;
    MPE_CHECK((ushmem_device_state.ring != NULL) == need, "ring %p, proxy needed %d",
              (void *)ushmem_device_state.ring, need);
    check_window(forced);
}

static void rma(int id)
{
    static _Thread_local long src[64][W]; /* one per target: nbi sources live until quiet */
    long back[W];

    for (int q = 0; q < npes; q++) {
        for (int i = 0; i < W; i++)
            src[q][i] = pattern(id, q, i);
        ushmem_long_put(&slots[id * W], src[q], W / 2, q);
        ushmem_putmem_nbi(&slots[id * W + W / 2], &src[q][W / 2], W / 2 * sizeof(long), q);
        ushmem_int_p(&pslot[id], id * 3 + q, q);
    }
    ushmem_quiet();
    for (int q = 0; q < npes; q++) {
        memset(back, 0, sizeof(back));
        ushmem_getmem(back, &slots[id * W], W / 2 * sizeof(long), q);
        ushmem_long_get_nbi(&back[W / 2], &slots[id * W + W / 2], W / 2, q);
        ushmem_quiet();
        for (int i = 0; i < W; i++)
            MPE_CHECK(back[i] == pattern(id, q, i), "thread %d: get from PE %d [%d] = %ld", id, q,
                      i, back[i]);
        int g = ushmem_int_g(&pslot[id], q);
        MPE_CHECK(g == id * 3 + q, "thread %d: int_g from PE %d = %d", id, q, g);
    }
}

static void atomics(int id)
{
    for (int q = 0; q < npes; q++) {
        uint64_t last = 0;
        int32_t last_inc = -1;
        for (int k = 0; k < K; k++) {
            uint64_t old = ushmem_uint64_atomic_fetch_add(&w->counter, (uint64_t)id + 1, q);
            MPE_CHECK(k == 0 || old > last, "thread %d: fetch_add on PE %d went back", id, q);
            last = old;
            int32_t inc = ushmem_int32_atomic_fetch_inc(&w->inc_ctr, q);
            MPE_CHECK(inc > last_inc && inc < K * nt, "thread %d: fetch_inc on PE %d gave %d",
                      id, q, inc);
            last_inc = inc;
        }
        ushmem_int32_atomic_add(&w->sum32, -(id + 1), q);

        long seen = ushmem_long_atomic_compare_swap(&w->owner, -1L, (long)id, q);
        if (seen == -1)
            ushmem_int_atomic_inc(&w->win_count, q);
        else
            ushmem_long_atomic_add(&w->loser_sum, seen, q);

        uint64_t swapped = ushmem_uint64_atomic_swap(&w->swap_word, (uint64_t)id + 1, q);
        ushmem_uint64_atomic_xor(&w->swap_xor, swapped, q);

        uint64_t bit = UINT64_C(1) << id;
        uint64_t before_or = ushmem_uint64_atomic_fetch_or(&w->bits_or, bit, q);
        MPE_CHECK((before_or & bit) == 0, "thread %d: bit set before fetch_or on PE %d", id, q);
        uint64_t before_and = ushmem_uint64_atomic_fetch_and(&w->bits_and, ~bit, q);
        MPE_CHECK((before_and & bit) != 0, "thread %d: bit clear before fetch_and on PE %d", id,
                  q);
        ushmem_uint32_atomic_or(&w->u32_or, UINT32_C(1) << (id % 32), q);
        ushmem_ulonglong_atomic_fetch_xor(&w->xw, mix(id), q);

        ushmem_int64_atomic_set(&setw[id], (int64_t)id * 1000 + q, q);
        int64_t f = ushmem_int64_atomic_fetch(&setw[id], q);
        MPE_CHECK(f == (int64_t)id * 1000 + q, "thread %d: fetch after set on PE %d = %lld", id, q,
                  (long long)f);
        ushmem_double_atomic_set(&dslot[id], id + 0.5, q);
        double d = ushmem_double_atomic_swap(&dslot[id], id + 0.25, q);
        MPE_CHECK(d == id + 0.5, "thread %d: double swap on PE %d returned %g", id, q, d);
    }
}

static void signals(int id)
{
    long src[WS];

    for (int q = 0; q < npes; q++) {
        for (int i = 0; i < WS; i++)
            src[i] = -pattern(id, q, i);
        ushmem_putmem_signal(&sig_data[id * WS], src, sizeof(src), &w->sig, (uint64_t)id + 1,
                             USHMEM_SIGNAL_ADD, q);
        /* One aligned long: a lone thread's payload takes one store. */
        long one = -pattern(id, q, WS);
        ushmem_putmem_signal(&sig8_data[id], &one, sizeof(one), &w->sig8, (uint64_t)id + 1,
                             USHMEM_SIGNAL_ADD, q);
        unsigned char five[5];
        for (int i = 0; i < 5; i++)
            five[i] = (unsigned char)pattern(id, q, i);
        ushmem_putmem_signal(&sset_data[id * 8 + 1], five, sizeof(five), &sset[id],
                             (uint64_t)id + 1, USHMEM_SIGNAL_SET, q);
    }
}

/* The main thread's 8 bytes with a SET signal to the next PE; where the
 * proxy carries both, one ticket. */
static void put_with_signal_one_ticket(void)
{
    const struct ushmem_device_state *s = &ushmem_device_state;
    int next = (me + 1) % npes;
    long v = -pattern(nt, next, 0);
    ushmem_ring_word_t *tail =
        s->ring != NULL ? ushmem_ring_tail_word(s->ring, ushmemi_dev_ring_tail(s)) : NULL;
    int proxied = tail != NULL && ushmem_ptr(&w->one_data, next) == NULL &&
                  ushmemi_dev_mapped(s, &w->one_sig, next, USHMEM_DEVICE_CLASS_SIGNAL) == NULL;
    uint64_t before = proxied ? ushmem_ring_load_acquire(tail) : 0;

    ushmem_putmem_signal(&w->one_data, &v, sizeof(v), &w->one_sig, (uint64_t)me + 1,
                         USHMEM_SIGNAL_SET, next);
    if (proxied) {
        uint64_t taken = ushmem_ring_load_acquire(tail) - before;
        MPE_CHECK(taken == 1, "a put of 8 bytes and its signal to PE %d took %llu tickets of "
                  "the proxy's ring, not 1", next, (unsigned long long)taken);
    }
    ushmem_quiet();
}

static uint64_t sum_ids(void)
{
    return (uint64_t)nt * (uint64_t)(nt + 1) / 2;
}

static void *thread_main(void *arg)
{
    int t = (int)(intptr_t)arg;
    int id = me * T + t;

    rma(id);
    atomics(id);
    signals(id);
    ushmem_fence();
    /* A host thread is its own warp and block: the group forms of quiet
     * complete its operations as ushmem_quiet does (used further on). */
    if (t & 1)
        ushmemx_quiet_block();
    else
        ushmemx_quiet_warp();
    if (t == 0) {
        /* The signal total arrives only after every sender's data. */
        uint64_t got = ushmem_signal_wait_until(&w->sig, USHMEM_CMP_EQ, sum_ids());
        MPE_CHECK(got == sum_ids(), "signal %llu, want %llu", (unsigned long long)got,
                  (unsigned long long)sum_ids());
        for (int s = 0; s < nt; s++)
            for (int i = 0; i < WS; i++)
                MPE_CHECK(sig_data[s * WS + i] == -pattern(s, me, i),
                          "signalled data from thread %d [%d] = %ld", s, i, sig_data[s * WS + i]);
        got = ushmem_signal_wait_until(&w->sig8, USHMEM_CMP_EQ, sum_ids());
        for (int s = 0; s < nt; s++)
            MPE_CHECK(sig8_data[s] == -pattern(s, me, WS), "8-byte signalled data from thread "
                      "%d = %ld", s, sig8_data[s]);
        for (int s = 0; s < nt; s++) {
            ushmem_signal_wait_until(&sset[s], USHMEM_CMP_EQ, (uint64_t)s + 1);
            for (int i = 0; i < 5; i++)
                MPE_CHECK(sset_data[s * 8 + 1 + i] == (unsigned char)pattern(s, me, i),
                          "5 bytes with a set signal from thread %d: [%d] = %d", s, i,
                          sset_data[s * 8 + 1 + i]);
        }
        ushmem_int32_wait_until(&w->inc_ctr, USHMEM_CMP_GE, K * nt);
        ushmem_uint64_wait_until(&w->counter, USHMEM_CMP_EQ, (uint64_t)K * sum_ids());
    }
    return NULL;
}

/* A kernel that ends with operations it did not quiet (a signal as its
 * last call, say): the host's barrier_all completes them, as it completes
 * the host's own, so every PE sees every add once the barrier returns.
 * Through the proxy the adds are still in the ring when the device code
 * returns; thousands of them outlast the host barrier unless it waits. */
static void late_adds(void)
{
    for (int i = 0; i < LATE_ADDS; i++)
        for (int q = 0; q < npes; q++)
            ushmemx_signal_add(&w->late, 1, (me + q) % npes);
    shmem_barrier_all();
    MPE_CHECK(w->late == (uint64_t)LATE_ADDS * npes,
              "after device adds left unquieted and the host's barrier_all: %llu of %llu",
              (unsigned long long)w->late, (unsigned long long)LATE_ADDS * npes);
    shmem_barrier_all();
}

static void check_received(void)
{
    uint64_t all = nt == 64 ? ~UINT64_C(0) : (UINT64_C(1) << nt) - 1;
    uint64_t swap_all = 0;
    uint32_t u32_all = 0;
    unsigned long long xw_all = 0;

    for (int id = 0; id < nt; id++) {
        for (int i = 0; i < W; i++)
            MPE_CHECK(slots[id * W + i] == pattern(id, me, i), "slot of thread %d [%d] = %ld", id,
                      i, slots[id * W + i]);
        MPE_CHECK(pslot[id] == id * 3 + me, "pslot[%d] = %d", id, pslot[id]);
        MPE_CHECK(setw[id] == (int64_t)id * 1000 + me, "setw[%d] = %lld", id,
                  (long long)setw[id]);
        MPE_CHECK(dslot[id] == id + 0.25, "dslot[%d] = %g", id, dslot[id]);
        swap_all ^= (uint64_t)id + 1;
        u32_all |= UINT32_C(1) << (id % 32);
        xw_all ^= mix(id);
    }
    MPE_CHECK(w->counter == (uint64_t)K * sum_ids(), "counter %llu",
              (unsigned long long)w->counter);
    MPE_CHECK(w->inc_ctr == K * nt, "inc_ctr %d", w->inc_ctr);
    MPE_CHECK(w->sum32 == -(int32_t)sum_ids(), "sum32 %d", w->sum32);
    MPE_CHECK(w->owner >= 0 && w->owner < nt, "owner %ld", w->owner);
    MPE_CHECK(w->win_count == 1, "compare_swap winners %d", w->win_count);
    MPE_CHECK(w->loser_sum == (long)(nt - 1) * w->owner, "loser_sum %ld owner %ld", w->loser_sum,
              w->owner);
    MPE_CHECK(w->swap_word >= 1 && w->swap_word <= (uint64_t)nt, "swap_word %llu",
              (unsigned long long)w->swap_word);
    MPE_CHECK((w->swap_xor ^ w->swap_word) == swap_all, "swap chain xor %llx",
              (unsigned long long)(w->swap_xor ^ w->swap_word));
    MPE_CHECK(w->bits_or == all, "bits_or %llx", (unsigned long long)w->bits_or);
    MPE_CHECK(w->bits_and == ~all, "bits_and %llx", (unsigned long long)w->bits_and);
    MPE_CHECK(w->u32_or == u32_all, "u32_or %x", w->u32_or);
    MPE_CHECK(w->xw == xw_all, "xw %llx", w->xw);
    MPE_CHECK(ushmem_signal_fetch(&w->sig) == sum_ids(), "signal_fetch %llu",
              (unsigned long long)ushmem_signal_fetch(&w->sig));
}

/* Nobody leaves a device barrier before every PE has entered it: each round
 * every PE adds to every PE's arrivals and puts the round number to its
 * right neighbour, and after the barrier both are complete. Host barriers in
 * between use other flags and must not disturb the device barrier's count. */
static void barrier_loop(void)
{
    int left = (me + npes - 1) % npes, right = (me + 1) % npes;

    for (long r = 1; r <= BARRIER_ROUNDS; r++) {
        for (int q = 0; q < npes; q++)
            ushmem_long_atomic_add(&w->arrivals, 1, q);
        ushmem_long_p(&w->bar_slot, r * 1000 + me, right);
        ushmem_barrier_all();
        long arrived = ushmem_long_atomic_fetch(&w->arrivals, me);
        MPE_CHECK(arrived == r * npes, "round %ld: %ld arrivals, want %ld", r, arrived, r * npes);
        MPE_CHECK(w->bar_slot == r * 1000 + left, "round %ld: slot %ld", r, w->bar_slot);
        /* Nobody may add for the next round before everyone has checked. */
        if (r % 3 == 0)
            shmem_barrier_all();
        else
            ushmem_barrier_all();
    }
    /* One barrier after the threads, then one or two per round. */
    uint64_t want = 1 + BARRIER_ROUNDS + (BARRIER_ROUNDS - BARRIER_ROUNDS / 3);
    const uint64_t *epoch = (const uint64_t *)(uintptr_t)(ushmem_device_state.heap_base +
                                                         ushmem_device_state.device_epoch_offset);
    MPE_CHECK(*epoch == want, "device barrier epoch %llu, want %llu", (unsigned long long)*epoch,
              (unsigned long long)want);
}

/* Through the proxy a device barrier leaves without waiting for its own
 * signals, and marks them for the next barrier's quiet, which waits only
 * for the tickets before them: the word after the epoch holds the ticket
 * count after them, shifted left by 8, and how many took a ticket (one a
 * peer the proxy reaches, in the flat round or dissemination's). Before
 * the last barrier this PE puts to its right neighbour: where that takes a
 * ticket, the barrier must wait for it all the same, and the neighbour
 * finds the word once the barrier is over. (A mark of 0, for a barrier
 * whose signals were not the only tickets taken meanwhile, needs another
 * thread taking tickets of the same count during the barrier; on the cpu
 * backend each thread counts its own, so this test cannot make one.) */
static void barrier_mark(void)
{
    const struct ushmem_device_state *s = &ushmem_device_state;
    const uint64_t *mark = (const uint64_t *)(uintptr_t)(s->heap_base + s->device_epoch_offset) + 1;
    uint64_t *flags = (uint64_t *)(uintptr_t)(s->heap_base + s->device_flags_offset);
    uint64_t proxied = 0;
    int flat = npes <= USHMEMI_DEV_FLAT_BARRIER_PES, left = (me + npes - 1) % npes;

    if (s->ring == NULL)
        return;
    for (int dist = 1; dist < npes; dist = flat ? dist + 1 : 2 * dist)
        proxied += ushmemi_dev_mapped(s, flags, (me + dist) % npes, USHMEM_DEVICE_CLASS_SYNC) ==
                   NULL;
    for (int round = 0; round < 3; round++) {
        if (round == 2)
            ushmem_long_p(&w->bar_slot, -1000 - me, (me + 1) % npes);
        ushmem_barrier_all();
        uint64_t taken =
            ushmem_ring_load_acquire(ushmem_ring_tail_word(s->ring, ushmemi_dev_ring_tail(s)));
        MPE_CHECK(*mark == (taken << 8 | proxied),
                  "barrier %d: mark %#llx, want %llu tickets and %llu signals through the proxy",
                  round, (unsigned long long)*mark, (unsigned long long)taken,
                  (unsigned long long)proxied);
    }
    MPE_CHECK(w->bar_slot == -1000 - left, "the put from PE %d before the last barrier: %ld",
              left, w->bar_slot);
    ushmem_barrier_all(); /* nobody writes bar_slot again before everyone has read it */
}

/* Gets of words their owner rewrote since the last get: every round each PE
 * waits until the next PE has read the round before, rewrites its own
 * fresh_pub with plain stores, fences, and signals the next PE; then it
 * waits for the previous PE's signal, gets that PE's fresh_pub and checks
 * every word is of this round before acknowledging. */
static void fresh_rounds(void)
{
    int next = (me + 1) % npes, prev = (me + npes - 1) % npes;
    long got[FW];

    for (long r = 1; r <= FRESH_ROUNDS; r++) {
        ushmem_uint64_wait_until(&w->fresh_ack, USHMEM_CMP_GE, (uint64_t)r - 1);
        for (int i = 0; i < FW; i++)
            fresh_pub[i] = r * 100000 + me * 1000 + i;
        ushmem_fence();
        ushmemx_signal_set(&w->fresh_sig, (uint64_t)r, next);
        ushmem_signal_wait_until(&w->fresh_sig, USHMEM_CMP_GE, (uint64_t)r);
        ushmem_getmem(got, fresh_pub, sizeof(got), prev);
        for (int i = 0; i < FW; i++)
            MPE_CHECK(got[i] == r * 100000 + prev * 1000 + i,
                      "round %ld: word %d got from PE %d = %ld", r, i, prev, got[i]);
        ushmemx_signal_set(&w->fresh_ack, (uint64_t)r, prev);
    }
    ushmem_uint64_wait_until(&w->fresh_ack, USHMEM_CMP_GE, FRESH_ROUNDS);
}

static void bad_offset(void)
{
    long local = 7;

    /* Through the proxy the ipc transport range-checks the offset; PE 0
     * names an address that is not in the heap. */
    if (me == 0)
        ushmem_long_p(&local, 1, npes - 1);
    ushmem_quiet();
    shmem_barrier_all();
}

int main(int argc, char **argv)
{
    int provided;
    pthread_t threads[T];

    shmem_init_thread(SHMEM_THREAD_MULTIPLE, &provided);
    MPE_CHECK(provided == SHMEM_THREAD_MULTIPLE, "provided %d", provided);
    me = shmem_my_pe();
    npes = shmem_n_pes();
    nt = npes * T;
    MPE_CHECK(nt <= 64, "at most %d PEs", 64 / T);
    if (argc > 1 && strcmp(argv[1], "bad-offset") == 0) {
        bad_offset();
        shmem_finalize();
        return 0;
    }
    check_roads();
    if (argc > 1 && strcmp(argv[1], "table") == 0)
        for (int cls = 0; cls < USHMEM_DEVICE_CLASS_COUNT; cls++)
            ushmem_device_state.window_count[cls] = 0;

    slots = shmem_calloc((size_t)nt * W, sizeof(long));
    sig_data = shmem_calloc((size_t)nt * WS, sizeof(long));
    sig8_data = shmem_calloc((size_t)nt, sizeof(long));
    sset_data = shmem_calloc((size_t)nt * 8, 1);
    sset = shmem_calloc((size_t)nt, sizeof(uint64_t));
    pslot = shmem_calloc((size_t)nt, sizeof(int));
    setw = shmem_calloc((size_t)nt, sizeof(int64_t));
    dslot = shmem_calloc((size_t)nt, sizeof(double));
    w = shmem_calloc(1, sizeof(*w));
    fresh_pub = shmem_calloc(FW, sizeof(long));
    MPE_CHECK(slots && sig_data && sig8_data && sset_data && sset && pslot && setw && dslot && w &&
                  fresh_pub,
              "allocation failed");
    w->owner = -1;
    w->bits_and = ~UINT64_C(0);
    shmem_barrier_all();

    for (int t = 0; t < T; t++)
        MPE_CHECK(pthread_create(&threads[t], NULL, thread_main, (void *)(intptr_t)t) == 0,
                  "pthread_create");
    for (int t = 0; t < T; t++)
        pthread_join(threads[t], NULL);
    /* Calls took the proxy whenever it runs here: by force, or for other PEs. */
    if (ushmem_device_state.ring != NULL)
        MPE_CHECK(ushmem_ring_load_acquire(ushmem_ring_tail_word(
                      ushmem_device_state.ring, ushmemi_dev_ring_tail(&ushmem_device_state))) > 0,
                  "the proxy runs but no request went through its ring");
    put_with_signal_one_ticket();
    ushmem_barrier_all();
    check_received();
    MPE_CHECK(w->one_sig == (uint64_t)(me + npes - 1) % (uint64_t)npes + 1 &&
                  w->one_data == -pattern(nt, me, 0),
              "the main thread's put with signal from PE %d: signal %llu, data %ld",
              (me + npes - 1) % npes, (unsigned long long)w->one_sig, w->one_data);
    shmem_barrier_all();

    barrier_loop();
    barrier_mark();
    fresh_rounds();
    late_adds();
    shmem_barrier_all();
    {
        const char *route = getenv("USHMEM_DEVICE_ROUTE");
        check_ptr(route != NULL && strcmp(route, "proxy") == 0);
    }

    shmem_free(fresh_pub);
    shmem_free(w);
    shmem_free(dslot);
    shmem_free(setw);
    shmem_free(pslot);
    shmem_free(sig_data);
    shmem_free(sig8_data);
    shmem_free(sset);
    shmem_free(sset_data);
    shmem_free(slots);
    shmem_finalize();
    return 0;
}
