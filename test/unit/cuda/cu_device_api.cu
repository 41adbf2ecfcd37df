/* The device API (include/ushmem/device.h) in CUDA kernels: every family of
 * calls, from 4 blocks of 128 threads per PE, to every PE including this one.
 * Each thread, warp or block owns its own slots, so that every byte a PE
 * receives has exactly one writer and a known value; each PE copies what it
 * received back to the host and checks every byte against the pattern the
 * host computes, guard bytes around misaligned data included. Checks that
 * only a kernel can make (a signal or flag must not overtake its data) are
 * made in the kernel and logged for the host to print.
 *
 * Phases, each one or two kernels between host barriers:
 *   state      ushmem_my_pe / ushmem_n_pes in every thread
 *   typed      ushmem_<T>_put, _put_nbi, _p, _get, _get_nbi, _g for long,
 *              int, double, char, uint64, short, float
 *   bytes      ushmem_putmem/_nbi, getmem/_nbi: sizes 1 .. 479, none a
 *              multiple of 16, destination offsets 1, 3, 8, 17, source
 *              offsets 0, 5, 8, 1 (every word size of the copy)
 *   large      the same calls, 8 KiB per thread, 1 MiB per block and PE
 *   coop       ushmemx_{put,get}mem{,_nbi}_{warp,block}: 1 B .. 1 MiB,
 *              misaligned and aligned
 *   amo        every atomic op, each with a signed and an unsigned type (and
 *              float and double for fetch, set, swap), totals exact:
 *              counters, one compare_swap winner, exactly-once fetch_inc
 *              results, one bit per thread for and/or/xor
 *   signal     ushmem_putmem_signal{,_nbi}, ushmemx_putmem_signal{,_nbi}
 *              _{warp,block}, ADD and SET; the receiver waits with
 *              ushmem_signal_wait_until and checks the data in the kernel;
 *              ushmem_signal_fetch
 *   wait       ushmem_<T>_wait_until for all twelve types and all six
 *              comparisons, and signal_wait_until with NE, GT, LE
 *   fence      put, ushmem_fence, p of a flag: the receiver waits for the
 *              flag and must see the data; put_nbi, ushmem_quiet, atomic
 *              inc: likewise; get_nbi, quiet: the data is there; put_nbi by
 *              every thread, ushmemx_quiet_block (_warp), one atomic add by
 *              the block's (warp's) first thread: the receiver must see
 *              every thread's data once the count is complete
 *   barrier    ushmem_barrier_all by one thread per PE, 50 rounds in 5
 *              kernels: nobody leaves before every PE's adds and puts
 *   order      a signal never overtakes its data: 100 rounds of
 *              ushmemx_putmem_signal_block (1 MiB), _warp (64 KiB) and
 *              ushmem_putmem_signal (4 KiB) to the next PE, ADD and SET in
 *              turn; the receiver reads the data at once after its wait,
 *              the words written last first, and acknowledges each round
 *
 * Usage: oshrun -n N cu_device_api [-v]; exits 77 without a GPU. */
#include <shmem.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <vector>

#include <ushmem/device.h>

#include "cu_check.cuh"

#define MAX_PES 8
#define NB 4                   /* blocks per kernel */
#define NT 128                 /* threads per block */
#define NTH_PE (NB * NT)       /* threads per PE */
#define NW (NTH_PE / 32)       /* warps per PE */
#define MAX_NTH (MAX_PES * NTH_PE)

/* Streams of bytes, by test. */
enum {
    K_TYPED = 1,
    K_BYTES,
    K_BIG,
    K_COOP_B,
    K_COOP_W,
    K_SIG_T,
    K_SIG_SET,
    K_SIG_B,
    K_SIG_BN,
    K_SIG_W,
    K_WAIT_SIG,
    K_FENCE,
    K_QUIET,
};

/* In-kernel checks, named for the host's report. */
#define WHAT_LIST(X)                                                                      \
    X(W_MY_PE, "ushmem_my_pe() is shmem_my_pe()")                                         \
    X(W_N_PES, "ushmem_n_pes() is shmem_n_pes()")                                         \
    X(W_PTR_BAD, "ushmem_ptr of no PE or of a non-heap address is NULL")                  \
    X(W_FADD_RANGE, "uint64 fetch_add: old + value within the total")                    \
    X(W_LFADD_RANGE, "long fetch_add: old within the total")                              \
    X(W_FINC_RANGE, "int fetch_inc: result below the thread count")                      \
    X(W_SINC_RANGE, "size fetch_inc: result below the thread count")                     \
    X(W_CSWAP_SEEN, "long compare_swap: a loser sees another thread's id")                \
    X(W_CSWAP32_SEEN, "uint32 compare_swap: a loser sees another thread's id")            \
    X(W_CAS_FIRST, "int64 compare_swap on a fresh slot returns 0")                        \
    X(W_CAS_SECOND, "int64 compare_swap that fails returns the value")                    \
    X(W_SWAP_RANGE, "uint64 swap returns 0 or a thread's id + 1")                         \
    X(W_I64_FETCH, "int64 fetch after set")                                               \
    X(W_I64_SWAP, "int64 swap returns the value set")                                     \
    X(W_U32_FETCH, "uint32 fetch after set")                                              \
    X(W_U32_SWAP, "uint32 swap returns the value set")                                    \
    X(W_F_FETCH, "float fetch after set (x4)")                                            \
    X(W_F_SWAP, "float swap returns the value set (x4)")                                  \
    X(W_D_FETCH, "double fetch after set (x8)")                                           \
    X(W_D_SWAP, "double swap returns the value set (x8)")                                 \
    X(W_I_FETCH, "int fetch after set")                                                   \
    X(W_I_SWAP, "int swap returns the value set")                                         \
    X(W_FOR_U64, "uint64 fetch_or: own bit clear before")                                 \
    X(W_FOR_I32, "int32 fetch_or: own bit clear before")                                  \
    X(W_FAND_I32, "int32 fetch_and: own bit set before")                                  \
    X(W_FAND_ULONG, "ulong fetch_and: own bit set before")                                \
    X(W_FXOR_ULL, "ulonglong fetch_xor: own bit clear before")                            \
    X(W_FXOR_I64, "int64 fetch_xor: own bit clear before")                                \
    X(W_SIG_ADD_WAIT, "signal_wait_until(EQ) returns the total of ADD signals")          \
    X(W_SIG_ADD_FETCH, "signal_fetch after the ADD signals")                              \
    X(W_SIG_T_DATA, "putmem_signal data seen after its signal")                           \
    X(W_SIG_SET_WAIT, "signal_wait_until(GE round) of SET signals")                       \
    X(W_SIG_SET_DATA, "SET-signalled data seen after its signal")                         \
    X(W_SIG_B_WAIT, "signal_wait_until of block ADD and SET signals")                     \
    X(W_SIG_B_DATA, "putmem_signal_block data seen after its signal")                     \
    X(W_SIG_BN_DATA, "putmem_signal_nbi_block data seen after its signal")                \
    X(W_SIG_W_WAIT, "signal_wait_until of warp ADD signals")                              \
    X(W_SIG_W_DATA, "putmem_signal_warp data seen after its signal")                      \
    X(W_WAIT_FINAL, "value after the last wait_until")                                    \
    X(W_WAIT_SENDER, "sender's fetching op on the waited word")                           \
    X(W_WAIT_SIG, "signal_wait_until(NE / GT / LE) result")                               \
    X(W_WAIT_SIG_DATA, "data of the waited signal")                                       \
    X(W_FENCE_DATA, "put, fence, p(flag): data seen after the flag")                      \
    X(W_QUIET_DATA, "put_nbi, quiet, atomic inc: data seen after the count")              \
    X(W_QUIET_GET, "get_nbi, quiet: data in place")                                       \
    X(W_QUIET_BLOCK_DATA, "put_nbi, quiet_block, add by thread 0: data seen after the count") \
    X(W_QUIET_WARP_DATA, "put_nbi, quiet_warp, add by lane 0: data seen after the count")  \
    X(W_BAR_ARRIVALS, "arrivals after ushmem_barrier_all")                                \
    X(W_BAR_SLOT, "left neighbour's put after ushmem_barrier_all")                     \
    X(W_ORDER_WAIT, "signal_wait_until(GE round) of a round's signal returns the round") \
    X(W_ORDER_B_DATA, "putmem_signal_block 1 MiB read at once after its signal")         \
    X(W_ORDER_W_DATA, "putmem_signal_warp 64 KiB read at once after its signal")         \
    X(W_ORDER_T_DATA, "putmem_signal 4 KiB read at once after its signal")               \
    X(W_FRESH_WAIT, "signal_wait_until(GE round) of a round's publication returns the round") \
    X(W_FRESH_B_DATA, "getmem_block 32 KiB, again after the owner rewrote it")            \
    X(W_FRESH_W_DATA, "getmem_warp 4 KiB, again after the owner rewrote it")              \
    X(W_FRESH_T_DATA, "getmem 512 B, again after the owner rewrote it")
#define WHAT_ENUM(name, text) name,
#define WHAT_TEXT(name, text) text,
enum { WHAT_LIST(WHAT_ENUM) W_COUNT };
static const char *const what_names[] = {WHAT_LIST(WHAT_TEXT)};

static struct cu_log *dlog; /* the kernels' error log */
static int me, npes;

static void report(void)
{
    cu_log_report(dlog, what_names, W_COUNT);
}

__device__ static inline int gtid(void)
{
    return (int)(blockIdx.x * blockDim.x + threadIdx.x);
}

/* ---- state ---- */

__global__ void k_state(int my_pe, int n_pes, struct cu_log *log)
{
    if (ushmem_my_pe() != my_pe)
        cu_dev_fail(log, W_MY_PE, my_pe, gtid(), 0, my_pe, ushmem_my_pe());
    if (ushmem_n_pes() != n_pes)
        cu_dev_fail(log, W_N_PES, my_pe, gtid(), 0, n_pes, ushmem_n_pes());
}

static unsigned char *alloc_set(size_t bytes, int value);

/* What ushmem_ptr reaches: thread 0 stores 1000 * my_pe + pe through it
 * into slot[my_pe] of every PE it reaches, and puts the mask of those PEs
 * into masks[my_pe] of every PE; the host then checks its slots against
 * the masks. */
__global__ void k_ptr(long *slot, unsigned long long *masks, int my_pe, int n_pes,
                      struct cu_log *log)
{
    long local = 0;
    unsigned long long mask = 0;

    if (gtid() != 0)
        return;
    if (ushmem_ptr(&slot[my_pe], -1) != NULL || ushmem_ptr(&slot[my_pe], n_pes) != NULL)
        cu_dev_fail(log, W_PTR_BAD, my_pe, 0, 0, 0, 1);
    if (ushmem_ptr(&local, my_pe) != NULL)
        cu_dev_fail(log, W_PTR_BAD, my_pe, 0, 1, 0, 1);
    for (int pe = 0; pe < n_pes; pe++) {
        long *p = (long *)ushmem_ptr(&slot[my_pe], pe);
        if (p != NULL) {
            *p = 1000L * my_pe + pe;
            mask |= 1ull << pe;
        }
    }
    ushmem_fence();
    for (int pe = 0; pe < n_pes; pe++)
        ushmem_ulonglong_p(&masks[my_pe], mask, pe);
    ushmem_quiet();
}

static void phase_state(void)
{
    cu_phase_begin("state");
    k_state<<<NB, NT, 0, cu.stream>>>(me, npes, dlog);
    cu_wait("k_state");
    report();

    long *slot = (long *)alloc_set(MAX_PES * sizeof(long), 0);
    unsigned long long *masks = (unsigned long long *)alloc_set(MAX_PES * sizeof(*masks), 0);
    shmem_barrier_all();
    k_ptr<<<1, 32, 0, cu.stream>>>(slot, masks, me, npes, dlog);
    cu_wait("k_ptr");
    shmem_barrier_all();
    report();
    std::vector<long> hs(MAX_PES);
    std::vector<unsigned long long> hm(MAX_PES);
    cu_d2h(hs.data(), slot, MAX_PES * sizeof(long));
    cu_d2h(hm.data(), masks, MAX_PES * sizeof(*masks));
    const char *route = getenv("USHMEM_DEVICE_ROUTE"), *ipc = getenv("USHMEM_IPC");
    int forced = route != NULL && strcmp(route, "proxy") == 0;
    /* One node with mapping on: every PE reaches every PE directly. */
    int all = !forced && (ipc == NULL || strcmp(ipc, "0") != 0) &&
              getenv("USHMEM_SIM_NODES") == NULL;
    for (int pe = 0; pe < npes; pe++) {
        int reaches_me = (int)(hm[pe] >> me & 1);
        cu_expect<long>("ushmem_ptr store from PE", (size_t)pe,
                        reaches_me ? 1000L * pe + me : 0, hs[pe]);
        if (all || (pe == me && !forced))
            cu_expect<int>("ushmem_ptr reaches PE", (size_t)pe, 1, reaches_me);
        if (forced)
            cu_expect<int>("ushmem_ptr under USHMEM_DEVICE_ROUTE=proxy is NULL", (size_t)pe, 0,
                           reaches_me);
    }
    shmem_barrier_all();
    shmem_free(masks);
    shmem_free(slot);
    cu_phase_end();
}

/* ---- typed RMA ---- */

#define TYPED_E 4 /* elements per thread and target: 2 put, 1 put_nbi, 1 p */

#define RMA_OPS(T, NAME)                                                                  \
    struct rma_##NAME {                                                                   \
        typedef T type;                                                                   \
        static constexpr const char *name = #NAME;                                        \
        __device__ static void put(T *d, const T *s, size_t n, int pe)                    \
        {                                                                                 \
            ushmem_##NAME##_put(d, s, n, pe);                                             \
        }                                                                                 \
        __device__ static void put_nbi(T *d, const T *s, size_t n, int pe)                \
        {                                                                                 \
            ushmem_##NAME##_put_nbi(d, s, n, pe);                                         \
        }                                                                                 \
        __device__ static void p(T *d, T v, int pe) { ushmem_##NAME##_p(d, v, pe); }      \
        __device__ static void get(T *d, const T *s, size_t n, int pe)                    \
        {                                                                                 \
            ushmem_##NAME##_get(d, s, n, pe);                                             \
        }                                                                                 \
        __device__ static void get_nbi(T *d, const T *s, size_t n, int pe)                \
        {                                                                                 \
            ushmem_##NAME##_get_nbi(d, s, n, pe);                                         \
        }                                                                                 \
        __device__ static T g(const T *s, int pe) { return ushmem_##NAME##_g(s, pe); }    \
    };
RMA_OPS(long, long)
RMA_OPS(int, int)
RMA_OPS(double, double)
RMA_OPS(char, char)
RMA_OPS(uint64_t, uint64)
RMA_OPS(short, short)
RMA_OPS(float, float)

/* Thread gid of this PE writes recv[me][gid][0..3] on every PE q from
 * src[q][gid]: two elements with put, one with put_nbi, one with p. */
template <typename Ops>
__global__ void k_typed_put(typename Ops::type *recv, const typename Ops::type *src, int my_pe,
                            int n_pes)
{
    typedef typename Ops::type T;
    int gid = gtid();

    for (int i = 0; i < n_pes; i++) {
        int q = (my_pe + 1 + i + gid) % n_pes;
        T *d = recv + ((size_t)my_pe * NTH_PE + gid) * TYPED_E;
        const T *s = src + ((size_t)q * NTH_PE + gid) * TYPED_E;
        Ops::put(d, s, 2, q);
        Ops::put_nbi(d + 2, s + 2, 1, q);
        Ops::p(d + 3, s[3], q);
    }
    ushmem_quiet();
}

/* Reads back from every PE q what this thread put there, into
 * getb[q][gid]: one element with get, two with get_nbi, one with g. */
template <typename Ops>
__global__ void k_typed_get(const typename Ops::type *recv, typename Ops::type *getb, int my_pe,
                            int n_pes)
{
    typedef typename Ops::type T;
    int gid = gtid();

    for (int i = 0; i < n_pes; i++) {
        int q = (my_pe + n_pes - 1 - i + gid) % n_pes;
        T *d = getb + ((size_t)q * NTH_PE + gid) * TYPED_E;
        const T *r = recv + ((size_t)my_pe * NTH_PE + gid) * TYPED_E;
        Ops::get(d, r, 1, q);
        Ops::get_nbi(d + 1, r + 1, 2, q);
        d[3] = Ops::g(r + 3, q);
    }
    ushmem_quiet();
}

template <typename Ops> static void run_typed(int tix)
{
    typedef typename Ops::type T;
    size_t n = (size_t)npes * NTH_PE * TYPED_E, bytes = n * sizeof(T);
    T *recv = (T *)cu_shmalloc(bytes);
    T *src = (T *)cu_shmalloc(bytes);
    T *getb = (T *)cu_shmalloc(bytes);
    std::vector<T> h(n);
    char what[128];

    for (int q = 0; q < npes; q++)
        for (size_t k = 0; k < (size_t)NTH_PE * TYPED_E; k++)
            h[(size_t)q * NTH_PE * TYPED_E + k] = cu_val<T>(cu_tag(K_TYPED, me, q, tix), k);
    cu_h2d(src, h.data(), bytes);
    cu_memset(recv, 0, bytes);
    cu_memset(getb, 0, bytes);
    shmem_barrier_all();

    k_typed_put<Ops><<<NB, NT, 0, cu.stream>>>(recv, src, me, npes);
    cu_wait("k_typed_put");
    shmem_barrier_all(); /* every PE's puts are complete */
    k_typed_get<Ops><<<NB, NT, 0, cu.stream>>>(recv, getb, me, npes);
    cu_wait("k_typed_get");
    report();

    static const char *const how[TYPED_E] = {"put", "put", "put_nbi", "p"};
    static const char *const how_get[TYPED_E] = {"get", "get_nbi", "get_nbi", "g"};
    cu_d2h(h.data(), recv, bytes);
    for (int p = 0; p < npes; p++) {
        for (size_t k = 0; k < (size_t)NTH_PE * TYPED_E; k++) {
            T want = cu_val<T>(cu_tag(K_TYPED, p, me, tix), k);
            T got = h[(size_t)p * NTH_PE * TYPED_E + k];
            if (memcmp(&want, &got, sizeof(T)) != 0) {
                snprintf(what, sizeof(what), "ushmem_%s_%s from PE %d, thread %zu, element",
                         Ops::name, how[k % TYPED_E], p, k / TYPED_E);
                cu_expect(what, k % TYPED_E, want, got);
            }
        }
    }
    cu_d2h(h.data(), getb, bytes);
    for (int q = 0; q < npes; q++) {
        for (size_t k = 0; k < (size_t)NTH_PE * TYPED_E; k++) {
            T want = cu_val<T>(cu_tag(K_TYPED, me, q, tix), k);
            T got = h[(size_t)q * NTH_PE * TYPED_E + k];
            if (memcmp(&want, &got, sizeof(T)) != 0) {
                snprintf(what, sizeof(what), "ushmem_%s_%s from PE %d, thread %zu, element",
                         Ops::name, how_get[k % TYPED_E], q, k / TYPED_E);
                cu_expect(what, k % TYPED_E, want, got);
            }
        }
    }
    shmem_barrier_all(); /* nobody reads these any more */
    shmem_free(getb);
    shmem_free(src);
    shmem_free(recv);
}

static void phase_typed(void)
{
    cu_phase_begin("typed");
    run_typed<rma_long>(0);
    run_typed<rma_int>(1);
    run_typed<rma_double>(2);
    run_typed<rma_char>(3);
    run_typed<rma_uint64>(4);
    run_typed<rma_short>(5);
    run_typed<rma_float>(6);
    cu_phase_end();
}

/* ---- putmem / getmem: odd sizes, misaligned ---- */

#define SLOT 512 /* bytes per thread and peer */

struct xfer {
    size_t doff, soff, len;
};

/* Where thread gid's transfer to PE q starts in its destination and source
 * slots, and how long it is. Destination offsets 1, 3, 8, 17 against source
 * offsets 0, 5, 8, 1 give every relative alignment the copy tells apart, so
 * it runs in 16-, 8-, 4- and 1-byte words, with heads and tails. */
__host__ __device__ static inline struct xfer bytes_xfer(int gid, int q)
{
    const unsigned doffs[4] = {1, 3, 8, 17}, soffs[4] = {0, 5, 8, 1};
    const unsigned lens[8] = {1, 7, 13, 33, 100, 250, 333, 479};
    struct xfer x = {doffs[gid % 4], soffs[(gid / 4) % 4], lens[(gid / 16 + q) % 8]};
    return x;
}

__global__ void k_bytes_put(unsigned char *recv, const unsigned char *src, int my_pe, int n_pes)
{
    int gid = gtid();

    for (int i = 0; i < n_pes; i++) {
        int q = (my_pe + 1 + i + gid) % n_pes;
        struct xfer x = bytes_xfer(gid, q);
        unsigned char *d = recv + ((size_t)my_pe * NTH_PE + gid) * SLOT + x.doff;
        const unsigned char *s = src + ((size_t)q * NTH_PE + gid) * SLOT + x.soff;
        if ((gid + q) & 1)
            ushmem_putmem_nbi(d, s, x.len, q);
        else
            ushmem_putmem(d, s, x.len, q);
    }
    ushmem_quiet();
}

__global__ void k_bytes_get(const unsigned char *recv, unsigned char *getb, int my_pe, int n_pes)
{
    int gid = gtid();

    for (int i = 0; i < n_pes; i++) {
        int q = (my_pe + 1 + i + gid) % n_pes;
        struct xfer x = bytes_xfer(gid, q);
        unsigned char *d = getb + ((size_t)q * NTH_PE + gid) * SLOT + x.soff;
        const unsigned char *r = recv + ((size_t)my_pe * NTH_PE + gid) * SLOT + x.doff;
        if ((gid + q) & 1)
            ushmem_getmem(d, r, x.len, q);
        else
            ushmem_getmem_nbi(d, r, x.len, q);
    }
    ushmem_quiet();
}

static void phase_bytes(void)
{
    size_t bytes = (size_t)npes * NTH_PE * SLOT;
    std::vector<unsigned char> h(bytes);
    char what[160];

    cu_phase_begin("bytes");
    unsigned char *recv = (unsigned char *)cu_shmalloc(bytes);
    unsigned char *src = (unsigned char *)cu_shmalloc(bytes);
    unsigned char *getb = (unsigned char *)cu_shmalloc(bytes);
    for (int q = 0; q < npes; q++)
        for (int gid = 0; gid < NTH_PE; gid++)
            cu_fill(&h[((size_t)q * NTH_PE + gid) * SLOT], SLOT, cu_tag(K_BYTES, me, q, gid), 0);
    cu_h2d(src, h.data(), bytes);
    cu_memset(recv, 0xEE, bytes);
    cu_memset(getb, 0xDD, bytes);
    shmem_barrier_all();

    k_bytes_put<<<NB, NT, 0, cu.stream>>>(recv, src, me, npes);
    cu_wait("k_bytes_put");
    shmem_barrier_all();
    k_bytes_get<<<NB, NT, 0, cu.stream>>>(recv, getb, me, npes);
    cu_wait("k_bytes_get");
    report();

    cu_d2h(h.data(), recv, bytes);
    for (int p = 0; p < npes; p++) {
        for (int gid = 0; gid < NTH_PE; gid++) {
            struct xfer x = bytes_xfer(gid, me);
            snprintf(what, sizeof(what),
                     "ushmem_putmem%s from PE %d thread %d (%zu bytes, dest offset %zu, source "
                     "offset %zu)",
                     (gid + me) & 1 ? "_nbi" : "", p, gid, x.len, x.doff, x.soff);
            cu_check_region(what, &h[((size_t)p * NTH_PE + gid) * SLOT], SLOT, x.doff, x.len,
                            cu_tag(K_BYTES, p, me, gid), x.soff, 0xEE);
        }
    }
    cu_d2h(h.data(), getb, bytes);
    for (int q = 0; q < npes; q++) {
        for (int gid = 0; gid < NTH_PE; gid++) {
            struct xfer x = bytes_xfer(gid, q);
            snprintf(what, sizeof(what),
                     "ushmem_getmem%s from PE %d thread %d (%zu bytes, dest offset %zu, source "
                     "offset %zu)",
                     (gid + q) & 1 ? "" : "_nbi", q, gid, x.len, x.soff, x.doff);
            cu_check_region(what, &h[((size_t)q * NTH_PE + gid) * SLOT], SLOT, x.soff, x.len,
                            cu_tag(K_BYTES, me, q, gid), x.soff, 0xDD);
        }
    }
    shmem_barrier_all();
    shmem_free(getb);
    shmem_free(src);
    shmem_free(recv);
    cu_phase_end();
}

/* ---- putmem / getmem: large, aligned ---- */

#define BIG ((size_t)1 << 20) /* per block and peer */
#define CHUNK (BIG / NT)      /* per thread */

__global__ void k_big_put(unsigned char *recv, const unsigned char *src, int my_pe, int n_pes)
{
    int b = blockIdx.x, t = threadIdx.x;

    for (int i = 0; i < n_pes; i++) {
        int q = (my_pe + 1 + i + b) % n_pes;
        unsigned char *d = recv + ((size_t)my_pe * NB + b) * BIG + (size_t)t * CHUNK;
        const unsigned char *s = src + ((size_t)q * NB + b) * BIG + (size_t)t * CHUNK;
        if (t & 1)
            ushmem_putmem_nbi(d, s, CHUNK, q);
        else
            ushmem_putmem(d, s, CHUNK, q);
    }
    ushmem_quiet();
}

__global__ void k_big_get(const unsigned char *recv, unsigned char *getb, int my_pe, int n_pes)
{
    int b = blockIdx.x, t = threadIdx.x;

    for (int i = 0; i < n_pes; i++) {
        int q = (my_pe + 1 + i + b) % n_pes;
        unsigned char *d = getb + ((size_t)q * NB + b) * BIG + (size_t)t * CHUNK;
        const unsigned char *r = recv + ((size_t)my_pe * NB + b) * BIG + (size_t)t * CHUNK;
        if (t & 1)
            ushmem_getmem(d, r, CHUNK, q);
        else
            ushmem_getmem_nbi(d, r, CHUNK, q);
    }
    ushmem_quiet();
}

static void phase_large(void)
{
    size_t bytes = (size_t)npes * NB * BIG;
    std::vector<unsigned char> h(bytes);
    char what[128];

    cu_phase_begin("large");
    unsigned char *recv = (unsigned char *)cu_shmalloc(bytes);
    unsigned char *src = (unsigned char *)cu_shmalloc(bytes);
    unsigned char *getb = (unsigned char *)cu_shmalloc(bytes);
    for (int q = 0; q < npes; q++)
        for (int b = 0; b < NB; b++)
            cu_fill(&h[((size_t)q * NB + b) * BIG], BIG, cu_tag(K_BIG, me, q, b), 0);
    cu_h2d(src, h.data(), bytes);
    cu_memset(recv, 0xEE, bytes);
    cu_memset(getb, 0xDD, bytes);
    shmem_barrier_all();

    k_big_put<<<NB, NT, 0, cu.stream>>>(recv, src, me, npes);
    cu_wait("k_big_put");
    shmem_barrier_all();
    k_big_get<<<NB, NT, 0, cu.stream>>>(recv, getb, me, npes);
    cu_wait("k_big_get");
    report();

    cu_d2h(h.data(), recv, bytes);
    for (int p = 0; p < npes; p++)
        for (int b = 0; b < NB; b++) {
            snprintf(what, sizeof(what),
                     "ushmem_putmem(_nbi), 8 KiB per thread, from PE %d block %d", p, b);
            cu_check_region(what, &h[((size_t)p * NB + b) * BIG], BIG, 0, BIG,
                            cu_tag(K_BIG, p, me, b), 0, 0xEE);
        }
    cu_d2h(h.data(), getb, bytes);
    for (int q = 0; q < npes; q++)
        for (int b = 0; b < NB; b++) {
            snprintf(what, sizeof(what),
                     "ushmem_getmem(_nbi), 8 KiB per thread, from PE %d block %d", q, b);
            cu_check_region(what, &h[((size_t)q * NB + b) * BIG], BIG, 0, BIG,
                            cu_tag(K_BIG, me, q, b), 0, 0xDD);
        }
    shmem_barrier_all();
    shmem_free(getb);
    shmem_free(src);
    shmem_free(recv);
    cu_phase_end();
}

/* ---- warp and block forms ---- */

#define BREG (((size_t)1 << 20) + 64) /* per block and peer */
#define WREG ((size_t)4096 + 64)      /* per warp and peer */

/* Block b's transfer: 1 MiB aligned, 1 MiB - 3 at offsets 1 / 5, 64 KiB + 17
 * at 3 / 3, 4 KiB + 8 at 17 / 1. */
__host__ __device__ static inline struct xfer block_xfer(int b)
{
    const size_t lens[4] = {(size_t)1 << 20, ((size_t)1 << 20) - 3, 65536 + 17, 4096 + 8};
    const unsigned doffs[4] = {0, 1, 3, 17}, soffs[4] = {0, 5, 3, 1};
    struct xfer x = {doffs[b % 4], soffs[b % 4], lens[b % 4]};
    return x;
}

/* Warp w's transfer: warps 0-3 and 8-11 move 1, 31, 4 KiB + 5 and 1000
 * bytes at mixed offsets (the general copy, heads and tails); warps 4-7
 * and 12-15 move 8, 24, 6 and 60 bytes at offsets 0 / 0 and 0 / 8, where
 * every lane copies at most one word of 8, 4 or 2 bytes. */
__host__ __device__ static inline struct xfer warp_xfer(int w)
{
    const unsigned lens[8] = {1, 31, 4096 + 5, 1000, 8, 24, 6, 60};
    const unsigned doffs[4] = {0, 1, 3, 17}, soffs[4] = {0, 8, 5, 1};
    if (w % 8 >= 4) {
        struct xfer x = {0, soffs[(w / 8) % 2], lens[w % 8]};
        return x;
    }
    struct xfer x = {doffs[(w / 8 + w) % 4], soffs[(w / 8 + 2 * w + 1) % 4], lens[w % 8]};
    return x;
}

struct coop_bufs {
    unsigned char *brecv, *bsrc, *bget; /* [pe][NB][BREG] */
    unsigned char *wrecv, *wsrc, *wget; /* [pe][NW][WREG] */
};

/* Every thread makes every call with the same arguments as the rest of its
 * block or warp; q is the same across the block. */
__global__ void k_coop_put(struct coop_bufs c, int my_pe, int n_pes)
{
    int b = blockIdx.x, w = gtid() / 32;
    struct xfer bx = block_xfer(b), wx = warp_xfer(w);

    for (int i = 0; i < n_pes; i++) {
        int q = (my_pe + 1 + i + b) % n_pes;
        unsigned char *d = c.brecv + ((size_t)my_pe * NB + b) * BREG + bx.doff;
        const unsigned char *s = c.bsrc + ((size_t)q * NB + b) * BREG + bx.soff;
        if ((q + b) & 1)
            ushmemx_putmem_nbi_block(d, s, bx.len, q);
        else
            ushmemx_putmem_block(d, s, bx.len, q);

        d = c.wrecv + ((size_t)my_pe * NW + w) * WREG + wx.doff;
        s = c.wsrc + ((size_t)q * NW + w) * WREG + wx.soff;
        __syncwarp();
        if ((q + w) & 1)
            ushmemx_putmem_nbi_warp(d, s, wx.len, q);
        else
            ushmemx_putmem_warp(d, s, wx.len, q);
    }
    /* Every thread stored part of the nbi copies. */
    ushmem_quiet();
}

__global__ void k_coop_get(struct coop_bufs c, int my_pe, int n_pes)
{
    int b = blockIdx.x, w = gtid() / 32;
    struct xfer bx = block_xfer(b), wx = warp_xfer(w);

    for (int i = 0; i < n_pes; i++) {
        int q = (my_pe + n_pes - 1 - i + b) % n_pes;
        unsigned char *d = c.bget + ((size_t)q * NB + b) * BREG + bx.soff;
        const unsigned char *r = c.brecv + ((size_t)my_pe * NB + b) * BREG + bx.doff;
        if ((q + b) & 1)
            ushmemx_getmem_block(d, r, bx.len, q);
        else
            ushmemx_getmem_nbi_block(d, r, bx.len, q);

        d = c.wget + ((size_t)q * NW + w) * WREG + wx.soff;
        r = c.wrecv + ((size_t)my_pe * NW + w) * WREG + wx.doff;
        __syncwarp();
        if ((q + w) & 1)
            ushmemx_getmem_warp(d, r, wx.len, q);
        else
            ushmemx_getmem_nbi_warp(d, r, wx.len, q);
    }
    ushmem_quiet();
}

static void phase_coop(void)
{
    size_t bbytes = (size_t)npes * NB * BREG, wbytes = (size_t)npes * NW * WREG;
    struct coop_bufs c;
    std::vector<unsigned char> h(bbytes);
    char what[160];

    cu_phase_begin("coop");
    c.brecv = (unsigned char *)cu_shmalloc(bbytes);
    c.bsrc = (unsigned char *)cu_shmalloc(bbytes);
    c.bget = (unsigned char *)cu_shmalloc(bbytes);
    c.wrecv = (unsigned char *)cu_shmalloc(wbytes);
    c.wsrc = (unsigned char *)cu_shmalloc(wbytes);
    c.wget = (unsigned char *)cu_shmalloc(wbytes);
    for (int q = 0; q < npes; q++)
        for (int b = 0; b < NB; b++)
            cu_fill(&h[((size_t)q * NB + b) * BREG], BREG, cu_tag(K_COOP_B, me, q, b), 0);
    cu_h2d(c.bsrc, h.data(), bbytes);
    for (int q = 0; q < npes; q++)
        for (int w = 0; w < NW; w++)
            cu_fill(&h[((size_t)q * NW + w) * WREG], WREG, cu_tag(K_COOP_W, me, q, w), 0);
    cu_h2d(c.wsrc, h.data(), wbytes);
    cu_memset(c.brecv, 0xEE, bbytes);
    cu_memset(c.wrecv, 0xEE, wbytes);
    cu_memset(c.bget, 0xDD, bbytes);
    cu_memset(c.wget, 0xDD, wbytes);
    shmem_barrier_all();

    k_coop_put<<<NB, NT, 0, cu.stream>>>(c, me, npes);
    cu_wait("k_coop_put");
    shmem_barrier_all();
    k_coop_get<<<NB, NT, 0, cu.stream>>>(c, me, npes);
    cu_wait("k_coop_get");
    report();

    cu_d2h(h.data(), c.brecv, bbytes);
    for (int p = 0; p < npes; p++)
        for (int b = 0; b < NB; b++) {
            struct xfer x = block_xfer(b);
            snprintf(what, sizeof(what),
                     "ushmemx_putmem%s_block from PE %d block %d (%zu bytes, offsets %zu / %zu)",
                     (me + b) & 1 ? "_nbi" : "", p, b, x.len, x.doff, x.soff);
            cu_check_region(what, &h[((size_t)p * NB + b) * BREG], BREG, x.doff, x.len,
                            cu_tag(K_COOP_B, p, me, b), x.soff, 0xEE);
        }
    cu_d2h(h.data(), c.bget, bbytes);
    for (int q = 0; q < npes; q++)
        for (int b = 0; b < NB; b++) {
            struct xfer x = block_xfer(b);
            snprintf(what, sizeof(what),
                     "ushmemx_getmem%s_block from PE %d block %d (%zu bytes, offsets %zu / %zu)",
                     (q + b) & 1 ? "" : "_nbi", q, b, x.len, x.soff, x.doff);
            cu_check_region(what, &h[((size_t)q * NB + b) * BREG], BREG, x.soff, x.len,
                            cu_tag(K_COOP_B, me, q, b), x.soff, 0xDD);
        }
    cu_d2h(h.data(), c.wrecv, wbytes);
    for (int p = 0; p < npes; p++)
        for (int w = 0; w < NW; w++) {
            struct xfer x = warp_xfer(w);
            snprintf(what, sizeof(what),
                     "ushmemx_putmem%s_warp from PE %d warp %d (%zu bytes, offsets %zu / %zu)",
                     (me + w) & 1 ? "_nbi" : "", p, w, x.len, x.doff, x.soff);
            cu_check_region(what, &h[((size_t)p * NW + w) * WREG], WREG, x.doff, x.len,
                            cu_tag(K_COOP_W, p, me, w), x.soff, 0xEE);
        }
    cu_d2h(h.data(), c.wget, wbytes);
    for (int q = 0; q < npes; q++)
        for (int w = 0; w < NW; w++) {
            struct xfer x = warp_xfer(w);
            snprintf(what, sizeof(what),
                     "ushmemx_getmem%s_warp from PE %d warp %d (%zu bytes, offsets %zu / %zu)",
                     (q + w) & 1 ? "" : "_nbi", q, w, x.len, x.soff, x.doff);
            cu_check_region(what, &h[((size_t)q * NW + w) * WREG], WREG, x.soff, x.len,
                            cu_tag(K_COOP_W, me, q, w), x.soff, 0xDD);
        }
    shmem_barrier_all();
    shmem_free(c.wget);
    shmem_free(c.wsrc);
    shmem_free(c.wrecv);
    shmem_free(c.bget);
    shmem_free(c.bsrc);
    shmem_free(c.brecv);
    cu_phase_end();
}

/* ---- atomics ---- */

#define AMO_K 2 /* rounds of the shared counter */
#define B64 (MAX_NTH / 64)
#define B32 (MAX_NTH / 32)

/* One per PE; every thread of every PE works on every PE's copy. */
struct amo_words {
    uint64_t counter;         /* fetch_add id + 1, AMO_K times */
    long lsum;                /* fetch_add -(id + 1) */
    int32_t sum32;            /* add -(id + 1) */
    unsigned long long usum;  /* add id + 1 */
    int finc;                 /* fetch_inc; seen[result] += 1 */
    size_t sinc;              /* fetch_inc */
    long linc;                /* inc */
    unsigned int uinc;        /* inc */
    long owner;               /* compare_swap -1 -> id: one winner */
    int win_count;            /* inc by the winner */
    long loser_sum;           /* add of what each loser saw */
    uint32_t owner32;         /* compare_swap 0xffffffff -> id */
    uint32_t win32;           /* add 1 by the winner */
    uint64_t loser32_sum;     /* add of what each loser saw */
    uint64_t swap_word;       /* swap id + 1 */
    uint64_t swap_xor;        /* xor of what each swap returned */
    unsigned long long xmix;  /* fetch_xor mix(id) */
    int seen[MAX_NTH];
    int64_t cas_slot[MAX_NTH]; /* compare_swap 0 -> id + 1, then 0 -> 77 fails */
    int64_t set_i64[MAX_NTH];  /* set, fetch, swap per thread */
    uint32_t set_u32[MAX_NTH];
    float set_f[MAX_NTH];
    double set_d[MAX_NTH];
    int set_i[MAX_NTH];
    /* One bit per thread: bit id % width of word id / width. */
    uint64_t fo_u64[B64];          /* fetch_or, from 0 */
    int32_t fo_i32[B32];           /* fetch_or, from 0 */
    unsigned int o_uint[B32];      /* or, from 0 */
    int64_t o_i64[B64];            /* or, from 0 */
    int32_t fa_i32[B32];           /* fetch_and ~bit, from all ones */
    unsigned long fa_ulong[B64];   /* fetch_and ~bit, from all ones */
    int64_t a_i64[B64];            /* and ~bit, from all ones */
    uint32_t a_u32[B32];           /* and ~bit, from all ones */
    unsigned long long fx_ull[B64]; /* fetch_xor bit, from 0 */
    int64_t fx_i64[B64];           /* fetch_xor bit, from 0 */
    uint32_t x_u32[B32];           /* xor bit, from 0 */
    int32_t x_i32[B32];            /* xor bit, from 0 */
};

__host__ __device__ static inline unsigned long long amo_mix(int id)
{
    return ((unsigned long long)id + 1) * 0x9E3779B97F4A7C15ULL;
}

/* What thread id sets and then swaps in on PE q. */
__host__ __device__ static inline int64_t v_i64(int id, int q, int second)
{
    int64_t v = ((int64_t)id << 20) + q + 1;
    return second ? -v - 7 : v;
}
__host__ __device__ static inline uint32_t v_u32(int id, int q, int second)
{
    return second ? 0x80000000u | (uint32_t)(id * 16 + q) : (uint32_t)(id * 16 + q + 1);
}
__host__ __device__ static inline float v_f(int id, int q, int second)
{
    float v = (float)(q * 8192 + id);
    return second ? -v - 0.25f : v + 0.5f;
}
__host__ __device__ static inline double v_d(int id, int q, int second)
{
    double v = id * 1000.0 + q;
    return second ? -v - 0.125 : v + 0.5;
}
__host__ __device__ static inline int v_i(int id, int q, int second)
{
    int v = id * 100 + q;
    return second ? -v - 1 : v;
}

__device__ static inline int32_t bits32(uint32_t v)
{
    int32_t r;
    memcpy(&r, &v, sizeof(r));
    return r;
}

__global__ void k_amo(struct amo_words *w, int my_pe, int n_pes, struct cu_log *log)
{
    int gid = gtid(), id = my_pe * NTH_PE + gid, nth = n_pes * NTH_PE;
    uint64_t total = (uint64_t)nth * (uint64_t)(nth + 1) / 2;
    uint64_t bit64 = 1ULL << (id % 64);
    uint32_t bit32 = 1u << (id % 32);
    int w64 = id / 64, w32 = id / 32;

    for (int i = 0; i < n_pes; i++) {
        int q = (my_pe + i + gid) % n_pes;

        /* Sums and counts. */
        for (int k = 0; k < AMO_K; k++) {
            uint64_t old = ushmem_uint64_atomic_fetch_add(&w->counter, (uint64_t)id + 1, q);
            if (old + (uint64_t)id + 1 > AMO_K * total)
                cu_dev_fail(log, W_FADD_RANGE, q, id, k, (long long)(AMO_K * total),
                            (long long)old);
        }
        long lold = ushmem_long_atomic_fetch_add(&w->lsum, -(long)(id + 1), q);
        if (lold > 0 || lold - (id + 1) < -(long)total)
            cu_dev_fail(log, W_LFADD_RANGE, q, id, 0, -(long long)total, lold);
        ushmem_int32_atomic_add(&w->sum32, -(int32_t)(id + 1), q);
        ushmem_ulonglong_atomic_add(&w->usum, (unsigned long long)id + 1, q);
        int v = ushmem_int_atomic_fetch_inc(&w->finc, q);
        if (v >= 0 && v < nth)
            ushmem_int_atomic_inc(&w->seen[v], q);
        else
            cu_dev_fail(log, W_FINC_RANGE, q, id, 0, nth, v);
        size_t sv = ushmem_size_atomic_fetch_inc(&w->sinc, q);
        if (sv >= (size_t)nth)
            cu_dev_fail(log, W_SINC_RANGE, q, id, 0, nth, (long long)sv);
        ushmem_long_atomic_inc(&w->linc, q);
        ushmem_uint_atomic_inc(&w->uinc, q);

        /* compare_swap: one winner per word; a fresh slot; a failing swap. */
        long seen = ushmem_long_atomic_compare_swap(&w->owner, -1L, (long)id, q);
        if (seen == -1) {
            ushmem_int_atomic_inc(&w->win_count, q);
        } else {
            if (seen < 0 || seen >= nth || seen == id)
                cu_dev_fail(log, W_CSWAP_SEEN, q, id, 0, -1, seen);
            ushmem_long_atomic_add(&w->loser_sum, seen, q);
        }
        uint32_t seen32 =
            ushmem_uint32_atomic_compare_swap(&w->owner32, 0xffffffffu, (uint32_t)id, q);
        if (seen32 == 0xffffffffu) {
            ushmem_uint32_atomic_add(&w->win32, 1u, q);
        } else {
            if (seen32 >= (uint32_t)nth || seen32 == (uint32_t)id)
                cu_dev_fail(log, W_CSWAP32_SEEN, q, id, 0, -1, seen32);
            ushmem_uint64_atomic_add(&w->loser32_sum, seen32, q);
        }
        int64_t c1 = ushmem_int64_atomic_compare_swap(&w->cas_slot[id], 0, (int64_t)id + 1, q);
        if (c1 != 0)
            cu_dev_fail(log, W_CAS_FIRST, q, id, 0, 0, c1);
        int64_t c2 = ushmem_int64_atomic_compare_swap(&w->cas_slot[id], 0, 77, q);
        if (c2 != (int64_t)id + 1)
            cu_dev_fail(log, W_CAS_SECOND, q, id, 0, id + 1, c2);

        /* swap: a chain through every thread; fetch_xor of one shared word. */
        uint64_t sw = ushmem_uint64_atomic_swap(&w->swap_word, (uint64_t)id + 1, q);
        if (sw > (uint64_t)nth)
            cu_dev_fail(log, W_SWAP_RANGE, q, id, 0, nth, (long long)sw);
        ushmem_uint64_atomic_xor(&w->swap_xor, sw, q);
        ushmem_ulonglong_atomic_fetch_xor(&w->xmix, amo_mix(id), q);

        /* set, fetch, swap on this thread's own slots. */
        ushmem_int64_atomic_set(&w->set_i64[id], v_i64(id, q, 0), q);
        int64_t f64 = ushmem_int64_atomic_fetch(&w->set_i64[id], q);
        if (f64 != v_i64(id, q, 0))
            cu_dev_fail(log, W_I64_FETCH, q, id, 0, v_i64(id, q, 0), f64);
        f64 = ushmem_int64_atomic_swap(&w->set_i64[id], v_i64(id, q, 1), q);
        if (f64 != v_i64(id, q, 0))
            cu_dev_fail(log, W_I64_SWAP, q, id, 0, v_i64(id, q, 0), f64);

        ushmem_uint32_atomic_set(&w->set_u32[id], v_u32(id, q, 0), q);
        uint32_t f32 = ushmem_uint32_atomic_fetch(&w->set_u32[id], q);
        if (f32 != v_u32(id, q, 0))
            cu_dev_fail(log, W_U32_FETCH, q, id, 0, v_u32(id, q, 0), f32);
        f32 = ushmem_uint32_atomic_swap(&w->set_u32[id], v_u32(id, q, 1), q);
        if (f32 != v_u32(id, q, 0))
            cu_dev_fail(log, W_U32_SWAP, q, id, 0, v_u32(id, q, 0), f32);

        ushmem_float_atomic_set(&w->set_f[id], v_f(id, q, 0), q);
        float ff = ushmem_float_atomic_fetch(&w->set_f[id], q);
        if (ff != v_f(id, q, 0))
            cu_dev_fail(log, W_F_FETCH, q, id, 0, (long long)(v_f(id, q, 0) * 4),
                        (long long)(ff * 4));
        ff = ushmem_float_atomic_swap(&w->set_f[id], v_f(id, q, 1), q);
        if (ff != v_f(id, q, 0))
            cu_dev_fail(log, W_F_SWAP, q, id, 0, (long long)(v_f(id, q, 0) * 4),
                        (long long)(ff * 4));

        ushmem_double_atomic_set(&w->set_d[id], v_d(id, q, 0), q);
        double fd = ushmem_double_atomic_fetch(&w->set_d[id], q);
        if (fd != v_d(id, q, 0))
            cu_dev_fail(log, W_D_FETCH, q, id, 0, (long long)(v_d(id, q, 0) * 8),
                        (long long)(fd * 8));
        fd = ushmem_double_atomic_swap(&w->set_d[id], v_d(id, q, 1), q);
        if (fd != v_d(id, q, 0))
            cu_dev_fail(log, W_D_SWAP, q, id, 0, (long long)(v_d(id, q, 0) * 8),
                        (long long)(fd * 8));

        ushmem_int_atomic_set(&w->set_i[id], v_i(id, q, 0), q);
        int fi = ushmem_int_atomic_fetch(&w->set_i[id], q);
        if (fi != v_i(id, q, 0))
            cu_dev_fail(log, W_I_FETCH, q, id, 0, v_i(id, q, 0), fi);
        fi = ushmem_int_atomic_swap(&w->set_i[id], v_i(id, q, 1), q);
        if (fi != v_i(id, q, 0))
            cu_dev_fail(log, W_I_SWAP, q, id, 0, v_i(id, q, 0), fi);

        /* and, or, xor: each thread owns one bit of each word array. */
        uint64_t o64 = ushmem_uint64_atomic_fetch_or(&w->fo_u64[w64], bit64, q);
        if (o64 & bit64)
            cu_dev_fail(log, W_FOR_U64, q, id, 0, 0, 1);
        int32_t o32 = ushmem_int32_atomic_fetch_or(&w->fo_i32[w32], bits32(bit32), q);
        if ((uint32_t)o32 & bit32)
            cu_dev_fail(log, W_FOR_I32, q, id, 0, 0, 1);
        ushmem_uint_atomic_or(&w->o_uint[w32], bit32, q);
        ushmem_int64_atomic_or(&w->o_i64[w64], (int64_t)bit64, q);
        o32 = ushmem_int32_atomic_fetch_and(&w->fa_i32[w32], bits32(~bit32), q);
        if (!((uint32_t)o32 & bit32))
            cu_dev_fail(log, W_FAND_I32, q, id, 0, 1, 0);
        unsigned long ol =
            ushmem_ulong_atomic_fetch_and(&w->fa_ulong[w64], ~(unsigned long)bit64, q);
        if (!(ol & bit64))
            cu_dev_fail(log, W_FAND_ULONG, q, id, 0, 1, 0);
        ushmem_int64_atomic_and(&w->a_i64[w64], (int64_t)~bit64, q);
        ushmem_uint32_atomic_and(&w->a_u32[w32], ~bit32, q);
        unsigned long long oll = ushmem_ulonglong_atomic_fetch_xor(&w->fx_ull[w64], bit64, q);
        if (oll & bit64)
            cu_dev_fail(log, W_FXOR_ULL, q, id, 0, 0, 1);
        int64_t ox = ushmem_int64_atomic_fetch_xor(&w->fx_i64[w64], (int64_t)bit64, q);
        if ((uint64_t)ox & bit64)
            cu_dev_fail(log, W_FXOR_I64, q, id, 0, 0, 1);
        ushmem_uint32_atomic_xor(&w->x_u32[w32], bit32, q);
        ushmem_int32_atomic_xor(&w->x_i32[w32], bits32(bit32), q);
    }
    ushmem_quiet();
}

static void phase_amo(void)
{
    std::vector<unsigned char> buf(sizeof(struct amo_words));
    struct amo_words *h = (struct amo_words *)buf.data();
    int nth = npes * NTH_PE;
    uint64_t total = (uint64_t)nth * (uint64_t)(nth + 1) / 2;

    cu_phase_begin("amo");
    struct amo_words *w = (struct amo_words *)cu_shmalloc(sizeof(struct amo_words));
    memset(h, 0, sizeof(*h));
    h->owner = -1;
    h->owner32 = 0xffffffffu;
    memset(h->fa_i32, 0xff, sizeof(h->fa_i32));
    memset(h->fa_ulong, 0xff, sizeof(h->fa_ulong));
    memset(h->a_i64, 0xff, sizeof(h->a_i64));
    memset(h->a_u32, 0xff, sizeof(h->a_u32));
    cu_h2d(w, h, sizeof(*h));
    shmem_barrier_all();

    k_amo<<<NB, NT, 0, cu.stream>>>(w, me, npes, dlog);
    cu_wait("k_amo");
    report();
    shmem_barrier_all(); /* every PE's atomics on this PE are done */

    cu_d2h(h, w, sizeof(*h));
    cu_expect<uint64_t>("uint64 fetch_add total", 0, AMO_K * total, h->counter);
    cu_expect<long>("long fetch_add total", 0, -(long)total, h->lsum);
    cu_expect<int32_t>("int32 add total", 0, -(int32_t)total, h->sum32);
    cu_expect<unsigned long long>("ulonglong add total", 0, total, h->usum);
    cu_expect<int>("int fetch_inc count", 0, nth, h->finc);
    for (int v = 0; v < MAX_NTH; v++)
        cu_expect<int>("times int fetch_inc returned value", (size_t)v, v < nth ? 1 : 0,
                       h->seen[v]);
    cu_expect<size_t>("size fetch_inc count", 0, (size_t)nth, h->sinc);
    cu_expect<long>("long inc count", 0, nth, h->linc);
    cu_expect<unsigned int>("uint inc count", 0, (unsigned)nth, h->uinc);
    if (h->owner < 0 || h->owner >= nth)
        cu_expect<long>("long compare_swap owner (a thread id)", 0, 0, h->owner);
    cu_expect<int>("long compare_swap winners", 0, 1, h->win_count);
    cu_expect<long>("long compare_swap: sum of what losers saw", 0, (long)(nth - 1) * h->owner,
                    h->loser_sum);
    if (h->owner32 >= (uint32_t)nth)
        cu_expect<uint32_t>("uint32 compare_swap owner (a thread id)", 0, 0, h->owner32);
    cu_expect<uint32_t>("uint32 compare_swap winners", 0, 1, h->win32);
    cu_expect<uint64_t>("uint32 compare_swap: sum of what losers saw", 0,
                        (uint64_t)(nth - 1) * h->owner32, h->loser32_sum);
    uint64_t swap_all = 0;
    unsigned long long mix_all = 0;
    for (int id = 0; id < nth; id++) {
        swap_all ^= (uint64_t)id + 1;
        mix_all ^= amo_mix(id);
    }
    if (h->swap_word < 1 || h->swap_word > (uint64_t)nth)
        cu_expect<uint64_t>("uint64 swap: last value (a thread id + 1)", 0, 1, h->swap_word);
    cu_expect<uint64_t>("uint64 swap: xor of returned values and the last", 0, swap_all,
                        h->swap_xor ^ h->swap_word);
    cu_expect<unsigned long long>("ulonglong fetch_xor of every thread's mix", 0, mix_all, h->xmix);
    for (int id = 0; id < MAX_NTH; id++) {
        int in = id < nth;
        cu_expect<int64_t>("int64 compare_swap slot", (size_t)id, in ? id + 1 : 0, h->cas_slot[id]);
        cu_expect<int64_t>("int64 set/swap slot", (size_t)id, in ? v_i64(id, me, 1) : 0,
                           h->set_i64[id]);
        cu_expect<uint32_t>("uint32 set/swap slot", (size_t)id, in ? v_u32(id, me, 1) : 0,
                            h->set_u32[id]);
        cu_expect<float>("float set/swap slot", (size_t)id, in ? v_f(id, me, 1) : 0.0f,
                         h->set_f[id]);
        cu_expect<double>("double set/swap slot", (size_t)id, in ? v_d(id, me, 1) : 0.0,
                          h->set_d[id]);
        cu_expect<int>("int set/swap slot", (size_t)id, in ? v_i(id, me, 1) : 0, h->set_i[id]);
    }
    for (int k = 0; k < B64; k++) {
        int in = k < nth / 64;
        cu_expect<uint64_t>("uint64 fetch_or word", k, in ? ~0ULL : 0, h->fo_u64[k]);
        cu_expect<int64_t>("int64 or word", k, in ? -1 : 0, h->o_i64[k]);
        cu_expect<unsigned long>("ulong fetch_and word", k, in ? 0 : ~0UL, h->fa_ulong[k]);
        cu_expect<int64_t>("int64 and word", k, in ? 0 : -1, h->a_i64[k]);
        cu_expect<unsigned long long>("ulonglong fetch_xor word", k, in ? ~0ULL : 0, h->fx_ull[k]);
        cu_expect<int64_t>("int64 fetch_xor word", k, in ? -1 : 0, h->fx_i64[k]);
    }
    for (int k = 0; k < B32; k++) {
        int in = k < nth / 32;
        cu_expect<int32_t>("int32 fetch_or word", k, in ? -1 : 0, h->fo_i32[k]);
        cu_expect<unsigned int>("uint or word", k, in ? ~0u : 0, h->o_uint[k]);
        cu_expect<int32_t>("int32 fetch_and word", k, in ? 0 : -1, h->fa_i32[k]);
        cu_expect<uint32_t>("uint32 and word", k, in ? 0 : ~0u, h->a_u32[k]);
        cu_expect<uint32_t>("uint32 xor word", k, in ? ~0u : 0, h->x_u32[k]);
        cu_expect<int32_t>("int32 xor word", k, in ? -1 : 0, h->x_i32[k]);
    }
    shmem_free(w);
    cu_phase_end();
}

/* ---- signals ---- */

#define SD 24            /* thread put_signal bytes */
#define SDR 32
#define SET_ROUNDS 5
#define SETD 40          /* SET rounds' bytes */
#define SETDR 48
#define BS (65536 + 5)   /* putmem_signal_block bytes */
#define BSR (65536 + 64)
#define BN (4096 + 3)    /* putmem_signal_nbi_block bytes */
#define BNR (4096 + 64)
#define WD 300           /* putmem_signal(_nbi)_warp bytes */
#define WDR 320

struct sig_words {
    uint64_t add_sig;              /* ADD 1 per thread of every PE */
    uint64_t bsig;                 /* ADD 1 per block of every PE */
    uint64_t wsig;                 /* ADD 1 per warp of every PE */
    uint64_t set_sig[MAX_PES];     /* SET to the round, by PE p */
    uint64_t bn_sig[MAX_PES * NB]; /* SET to bn_key(p, b, receiver) */
};

struct sig_bufs {
    struct sig_words *sg;
    unsigned char *tdata, *tsrc;   /* [pe][NTH_PE][SDR] */
    unsigned char *setdata, *setsrc; /* [pe][SET_ROUNDS][SETDR] */
    unsigned char *bdata, *bsrc;   /* [pe][NB][BSR] */
    unsigned char *bndata, *bnsrc; /* [pe][NB][BNR] */
    unsigned char *wdata, *wsrc;   /* [pe][NW][WDR] */
};

__host__ __device__ static inline uint64_t bn_key(int p, int b, int to)
{
    return ((uint64_t)(p + 1) << 40) | ((uint64_t)b << 20) | (uint64_t)(to + 1);
}

/* Sends everything first, then waits: no PE waits for something that a
 * PE sends only after a wait of its own. */
__global__ void k_signal(struct sig_bufs s, int my_pe, int n_pes, struct cu_log *log)
{
    struct sig_words *sg = s.sg;
    int gid = gtid(), b = blockIdx.x, w = gid / 32, t = threadIdx.x;

    /* Each thread to every PE: ADD 1, blocking and nbi forms. */
    for (int i = 0; i < n_pes; i++) {
        int q = (my_pe + 1 + i + gid) % n_pes;
        unsigned char *d = s.tdata + ((size_t)my_pe * NTH_PE + gid) * SDR;
        const unsigned char *src = s.tsrc + ((size_t)q * NTH_PE + gid) * SDR;
        if (gid & 1)
            ushmem_putmem_signal_nbi(d, src, SD, &sg->add_sig, 1, USHMEM_SIGNAL_ADD, q);
        else
            ushmem_putmem_signal(d, src, SD, &sg->add_sig, 1, USHMEM_SIGNAL_ADD, q);
    }
    /* Each block to every PE: ADD with the blocking form, SET with nbi. */
    for (int i = 0; i < n_pes; i++) {
        int q = (my_pe + 1 + i + b) % n_pes;
        ushmemx_putmem_signal_block(s.bdata + ((size_t)my_pe * NB + b) * BSR,
                                    s.bsrc + ((size_t)q * NB + b) * BSR, BS, &sg->bsig, 1,
                                    USHMEM_SIGNAL_ADD, q);
        ushmemx_putmem_signal_nbi_block(s.bndata + ((size_t)my_pe * NB + b) * BNR,
                                        s.bnsrc + ((size_t)q * NB + b) * BNR, BN,
                                        &sg->bn_sig[my_pe * NB + b], bn_key(my_pe, b, q),
                                        USHMEM_SIGNAL_SET, q);
    }
    /* Each warp to every PE: ADD, both forms. */
    for (int i = 0; i < n_pes; i++) {
        int q = (my_pe + 1 + i + w) % n_pes;
        unsigned char *d = s.wdata + ((size_t)my_pe * NW + w) * WDR;
        const unsigned char *src = s.wsrc + ((size_t)q * NW + w) * WDR;
        __syncwarp();
        if ((w + q) & 1)
            ushmemx_putmem_signal_nbi_warp(d, src, WD, &sg->wsig, 1, USHMEM_SIGNAL_ADD, q);
        else
            ushmemx_putmem_signal_warp(d, src, WD, &sg->wsig, 1, USHMEM_SIGNAL_ADD, q);
    }
    /* One thread, in another warp than the receivers of block 1: SET rounds
     * 1 .. SET_ROUNDS, each with its own data. */
    if (gid == NT + 64) {
        for (int r = 1; r <= SET_ROUNDS; r++)
            for (int i = 0; i < n_pes; i++) {
                int q = (my_pe + 1 + i) % n_pes;
                ushmem_putmem_signal(s.setdata + ((size_t)my_pe * SET_ROUNDS + r - 1) * SETDR,
                                     s.setsrc + ((size_t)q * SET_ROUNDS + r - 1) * SETDR, SETD,
                                     &sg->set_sig[my_pe], (uint64_t)r, USHMEM_SIGNAL_SET, q);
            }
    }
    ushmem_quiet(); /* the nbi sources */

    if (b == 0) {
        if (t == 0) {
            uint64_t want = (uint64_t)n_pes * NTH_PE;
            uint64_t v = ushmem_signal_wait_until(&sg->add_sig, USHMEM_CMP_EQ, want);
            if (v != want)
                cu_dev_fail(log, W_SIG_ADD_WAIT, my_pe, 0, 0, (long long)want, (long long)v);
            v = ushmem_signal_fetch(&sg->add_sig);
            if (v != want)
                cu_dev_fail(log, W_SIG_ADD_FETCH, my_pe, 0, 0, (long long)want, (long long)v);
        }
        __syncthreads();
        for (int k = t; k < n_pes * NTH_PE; k += NT)
            cu_dev_verify(log, W_SIG_T_DATA, k / NTH_PE, k % NTH_PE, s.tdata + (size_t)k * SDR, SD,
                          cu_tag(K_SIG_T, k / NTH_PE, my_pe, k % NTH_PE), 0, 0, 1);
    } else if (b == 1) {
        if (t >= 1 && t <= n_pes) {
            int p = t - 1;
            uint64_t checked = 0;
            for (uint64_t r = 1; r <= SET_ROUNDS; r++) {
                if (r <= checked)
                    continue;
                uint64_t v = ushmem_signal_wait_until(&sg->set_sig[p], USHMEM_CMP_GE, r);
                if (v < r || v > SET_ROUNDS) {
                    cu_dev_fail(log, W_SIG_SET_WAIT, p, 0, (long long)r, (long long)r,
                                (long long)v);
                    v = r;
                }
                for (uint64_t k = checked + 1; k <= v; k++)
                    cu_dev_verify(log, W_SIG_SET_DATA, p, (int)k,
                                  s.setdata + ((size_t)p * SET_ROUNDS + k - 1) * SETDR, SETD,
                                  cu_tag(K_SIG_SET, p, my_pe, k), 0, 0, 1);
                checked = v;
            }
            uint64_t v = ushmem_signal_wait_until(&sg->set_sig[p], USHMEM_CMP_EQ, SET_ROUNDS);
            if (v != SET_ROUNDS)
                cu_dev_fail(log, W_SIG_SET_WAIT, p, 0, SET_ROUNDS, SET_ROUNDS, (long long)v);
        }
    } else if (b == 2) {
        if (t == 0) {
            uint64_t want = (uint64_t)n_pes * NB;
            uint64_t v = ushmem_signal_wait_until(&sg->bsig, USHMEM_CMP_EQ, want);
            if (v != want)
                cu_dev_fail(log, W_SIG_B_WAIT, my_pe, -1, 0, (long long)want, (long long)v);
            for (int p = 0; p < n_pes; p++)
                for (int bb = 0; bb < NB; bb++) {
                    want = bn_key(p, bb, my_pe);
                    v = ushmem_signal_wait_until(&sg->bn_sig[p * NB + bb], USHMEM_CMP_EQ, want);
                    if (v != want)
                        cu_dev_fail(log, W_SIG_B_WAIT, p, bb, 0, (long long)want, (long long)v);
                }
        }
        __syncthreads();
        for (int p = 0; p < n_pes; p++)
            for (int bb = 0; bb < NB; bb++) {
                cu_dev_verify(log, W_SIG_B_DATA, p, bb, s.bdata + ((size_t)p * NB + bb) * BSR, BS,
                              cu_tag(K_SIG_B, p, my_pe, bb), 0, t, NT);
                cu_dev_verify(log, W_SIG_BN_DATA, p, bb, s.bndata + ((size_t)p * NB + bb) * BNR,
                              BN, cu_tag(K_SIG_BN, p, my_pe, bb), 0, t, NT);
            }
    } else {
        if (t == 0) {
            uint64_t want = (uint64_t)n_pes * NW;
            uint64_t v = ushmem_signal_wait_until(&sg->wsig, USHMEM_CMP_EQ, want);
            if (v != want)
                cu_dev_fail(log, W_SIG_W_WAIT, my_pe, 0, 0, (long long)want, (long long)v);
        }
        __syncthreads();
        for (int k = t; k < n_pes * NW; k += NT)
            cu_dev_verify(log, W_SIG_W_DATA, k / NW, k % NW, s.wdata + (size_t)k * WDR, WD,
                          cu_tag(K_SIG_W, k / NW, my_pe, k % NW), 0, 0, 1);
    }
}

/* A symmetric buffer of n regions of `stride` bytes, region k of which is
 * bytes 0 .. of stream tag_of(k); filled from the host. */
template <typename F>
static unsigned char *alloc_filled(size_t n, size_t stride, F tag_of)
{
    unsigned char *d = (unsigned char *)cu_shmalloc(n * stride);
    std::vector<unsigned char> h(n * stride);

    for (size_t k = 0; k < n; k++)
        cu_fill(&h[k * stride], stride, tag_of(k), 0);
    cu_h2d(d, h.data(), n * stride);
    return d;
}

static unsigned char *alloc_set(size_t bytes, int value)
{
    unsigned char *d = (unsigned char *)cu_shmalloc(bytes);
    cu_memset(d, value, bytes);
    return d;
}

/* Checks n received regions: region k holds len bytes of stream tag_of(k),
 * then `fill` up to the stride. */
template <typename F>
static void check_regions(const char *call, const unsigned char *d, size_t n, size_t stride,
                          size_t len, size_t per_pe, unsigned char fill, F tag_of)
{
    std::vector<unsigned char> h(n * stride);
    char what[160];

    cu_d2h(h.data(), d, n * stride);
    for (size_t k = 0; k < n; k++) {
        snprintf(what, sizeof(what), "%s from PE %zu, slot %zu (%zu bytes)", call, k / per_pe,
                 k % per_pe, len);
        cu_check_region(what, &h[k * stride], stride, 0, len, tag_of(k), 0, fill);
    }
}

static void phase_signal(void)
{
    struct sig_bufs s;
    size_t nt = (size_t)npes * NTH_PE, ns = (size_t)npes * SET_ROUNDS, nb = (size_t)npes * NB,
           nw = (size_t)npes * NW;

    cu_phase_begin("signal");
    s.sg = (struct sig_words *)alloc_set(sizeof(struct sig_words), 0);
    s.tsrc = alloc_filled(nt, SDR, [](size_t k) {
        return cu_tag(K_SIG_T, me, k / NTH_PE, k % NTH_PE);
    });
    s.setsrc = alloc_filled(ns, SETDR, [](size_t k) {
        return cu_tag(K_SIG_SET, me, k / SET_ROUNDS, k % SET_ROUNDS + 1);
    });
    s.bsrc = alloc_filled(nb, BSR, [](size_t k) { return cu_tag(K_SIG_B, me, k / NB, k % NB); });
    s.bnsrc = alloc_filled(nb, BNR, [](size_t k) { return cu_tag(K_SIG_BN, me, k / NB, k % NB); });
    s.wsrc = alloc_filled(nw, WDR, [](size_t k) { return cu_tag(K_SIG_W, me, k / NW, k % NW); });
    s.tdata = alloc_set(nt * SDR, 0xEE);
    s.setdata = alloc_set(ns * SETDR, 0xEE);
    s.bdata = alloc_set(nb * BSR, 0xEE);
    s.bndata = alloc_set(nb * BNR, 0xEE);
    s.wdata = alloc_set(nw * WDR, 0xEE);
    shmem_barrier_all();

    k_signal<<<NB, NT, 0, cu.stream>>>(s, me, npes, dlog);
    cu_wait("k_signal");
    report();
    shmem_barrier_all();

    struct sig_words hs;
    cu_d2h(&hs, s.sg, sizeof(hs));
    cu_expect<uint64_t>("thread ADD signal total", 0, nt, hs.add_sig);
    cu_expect<uint64_t>("block ADD signal total", 0, nb, hs.bsig);
    cu_expect<uint64_t>("warp ADD signal total", 0, nw, hs.wsig);
    for (int p = 0; p < npes; p++) {
        cu_expect<uint64_t>("SET signal, last round, from PE", p, SET_ROUNDS, hs.set_sig[p]);
        for (int b = 0; b < NB; b++)
            cu_expect<uint64_t>("putmem_signal_nbi_block SET signal, PE * NB + block",
                                (size_t)(p * NB + b), bn_key(p, b, me), hs.bn_sig[p * NB + b]);
    }
    check_regions("ushmem_putmem_signal(_nbi)", s.tdata, nt, SDR, SD, NTH_PE, 0xEE,
                  [](size_t k) { return cu_tag(K_SIG_T, k / NTH_PE, me, k % NTH_PE); });
    check_regions("ushmem_putmem_signal SET rounds", s.setdata, ns, SETDR, SETD, SET_ROUNDS, 0xEE,
                  [](size_t k) {
                      return cu_tag(K_SIG_SET, k / SET_ROUNDS, me, k % SET_ROUNDS + 1);
                  });
    check_regions("ushmemx_putmem_signal_block", s.bdata, nb, BSR, BS, NB, 0xEE,
                  [](size_t k) { return cu_tag(K_SIG_B, k / NB, me, k % NB); });
    check_regions("ushmemx_putmem_signal_nbi_block", s.bndata, nb, BNR, BN, NB, 0xEE,
                  [](size_t k) { return cu_tag(K_SIG_BN, k / NB, me, k % NB); });
    check_regions("ushmemx_putmem_signal(_nbi)_warp", s.wdata, nw, WDR, WD, NW, 0xEE,
                  [](size_t k) { return cu_tag(K_SIG_W, k / NW, me, k % NW); });
    shmem_barrier_all();
    shmem_free(s.wdata);
    shmem_free(s.bndata);
    shmem_free(s.bdata);
    shmem_free(s.setdata);
    shmem_free(s.tdata);
    shmem_free(s.wsrc);
    shmem_free(s.bnsrc);
    shmem_free(s.bsrc);
    shmem_free(s.setsrc);
    shmem_free(s.tsrc);
    shmem_free(s.sg);
    cu_phase_end();
}

/* ---- wait_until ---- */

/* One word of each type per sending PE, on every PE. */
struct wait_words {
    int w_int[MAX_PES];
    long w_long[MAX_PES];
    long long w_ll[MAX_PES];
    unsigned int w_uint[MAX_PES];
    unsigned long w_ulong[MAX_PES];
    unsigned long long w_ull[MAX_PES];
    int32_t w_i32[MAX_PES];
    int64_t w_i64[MAX_PES];
    uint32_t w_u32[MAX_PES];
    uint64_t w_u64[MAX_PES];
    size_t w_size[MAX_PES];
    ptrdiff_t w_pd[MAX_PES];
    uint64_t sig[MAX_PES];
    unsigned char sigdata[MAX_PES][32];
    unsigned char sigsrc[MAX_PES][32]; /* [target]: what this PE sends there */
    int never;         /* stays 0 */
    uint64_t never_sig; /* stays 0 */
};
#define WAIT_KINDS 13

/* Initial values, set by the host. */
static void wait_init(struct wait_words *h)
{
    memset(h, 0, sizeof(*h));
    for (int p = 0; p < MAX_PES; p++) {
        h->w_long[p] = 100;
        h->w_uint[p] = 0xffffffffu;
        h->w_ull[p] = 5;
        h->w_i32[p] = -1;
        h->w_u32[p] = 1000;
        h->w_pd[p] = 10;
        for (int j = 0; j < 32; j++)
            h->sigsrc[p][j] = cu_byte(cu_tag(K_WAIT_SIG, me, p, 0), (uint64_t)j);
    }
}

/* Sender `kind` moves word[my_pe] on PE q from its initial to its final
 * value, in steps that never make an earlier wait of the receiver false. */
__device__ static void wait_send(struct wait_words *ww, int kind, int my_pe, int q,
                                 struct cu_log *log)
{
    int m = my_pe;
    switch (kind) {
    case 0: /* int 0 -> 5 */
        for (int k = 0; k < 5; k++)
            ushmem_int_atomic_add(&ww->w_int[m], 1, q);
        break;
    case 1: ushmem_long_atomic_set(&ww->w_long[m], 7L, q); break; /* 100 -> 7 */
    case 2: ushmem_longlong_p(&ww->w_ll[m], 9LL, q); break;      /* 0 -> 9 */
    case 3: ushmem_uint_atomic_and(&ww->w_uint[m], 0xfu, q); break; /* ~0 -> 15 */
    case 4: /* ulong 0 -> 6 */
        for (int k = 0; k < 2; k++) {
            unsigned long old = ushmem_ulong_atomic_fetch_add(&ww->w_ulong[m], 3UL, q);
            if (old != 3UL * (unsigned long)k)
                cu_dev_fail(log, W_WAIT_SENDER, q, kind, k, 3 * k, (long long)old);
        }
        break;
    case 5: { /* ulonglong 5 -> 50 */
        unsigned long long old = ushmem_ulonglong_atomic_swap(&ww->w_ull[m], 50ULL, q);
        if (old != 5)
            cu_dev_fail(log, W_WAIT_SENDER, q, kind, 0, 5, (long long)old);
        break;
    }
    case 6: { /* int32 -1 -> 42 */
        int32_t old = ushmem_int32_atomic_compare_swap(&ww->w_i32[m], -1, 42, q);
        if (old != -1)
            cu_dev_fail(log, W_WAIT_SENDER, q, kind, 0, -1, old);
        break;
    }
    case 7: /* int64 0 -> 3 */
        for (int k = 0; k < 3; k++)
            ushmem_int64_atomic_inc(&ww->w_i64[m], q);
        break;
    case 8: ushmem_uint32_atomic_set(&ww->w_u32[m], 1u, q); break; /* 1000 -> 1 */
    case 9: ushmem_uint64_p(&ww->w_u64[m], 1ULL << 40, q); break;  /* 0 -> 2^40 */
    case 10: /* size 0 -> 4 */
        for (int k = 0; k < 4; k++) {
            size_t old = ushmem_size_atomic_fetch_inc(&ww->w_size[m], q);
            if (old != (size_t)k)
                cu_dev_fail(log, W_WAIT_SENDER, q, kind, k, k, (long long)old);
        }
        break;
    case 11: ushmem_ptrdiff_atomic_add(&ww->w_pd[m], (ptrdiff_t)-20, q); break; /* 10 -> -10 */
    default: /* signal 0 -> 3 (SET) -> 7 (ADD), the same data both times */
        ushmem_putmem_signal(ww->sigdata[m], ww->sigsrc[q], 32, &ww->sig[m], 3,
                             USHMEM_SIGNAL_SET, q);
        ushmem_putmem_signal(ww->sigdata[m], ww->sigsrc[q], 32, &ww->sig[m], 4,
                             USHMEM_SIGNAL_ADD, q);
        break;
    }
}

/* Receiver of word[p] of kind `kind` on this PE: waits with several
 * comparisons, weakest first, then reads the final value. */
__device__ static void wait_recv(struct wait_words *ww, int kind, int p, int my_pe,
                                 struct cu_log *log)
{
    long long final_want = 0, final_got = 0;

    switch (kind) {
    case 0:
        ushmem_int_wait_until(&ww->w_int[p], USHMEM_CMP_NE, 0);
        ushmem_int_wait_until(&ww->w_int[p], USHMEM_CMP_GE, 5);
        ushmem_int_wait_until(&ww->w_int[p], USHMEM_CMP_EQ, 5);
        final_want = 5;
        final_got = ushmem_int_atomic_fetch(&ww->w_int[p], my_pe);
        break;
    case 1:
        ushmem_long_wait_until(&ww->w_long[p], USHMEM_CMP_LT, 100L);
        ushmem_long_wait_until(&ww->w_long[p], USHMEM_CMP_LE, 7L);
        ushmem_long_wait_until(&ww->w_long[p], USHMEM_CMP_EQ, 7L);
        final_want = 7;
        final_got = ushmem_long_atomic_fetch(&ww->w_long[p], my_pe);
        break;
    case 2:
        ushmem_longlong_wait_until(&ww->w_ll[p], USHMEM_CMP_GT, 0LL);
        ushmem_longlong_wait_until(&ww->w_ll[p], USHMEM_CMP_EQ, 9LL);
        final_want = 9;
        final_got = ushmem_longlong_atomic_fetch(&ww->w_ll[p], my_pe);
        break;
    case 3:
        ushmem_uint_wait_until(&ww->w_uint[p], USHMEM_CMP_LT, 0xffffffffu);
        ushmem_uint_wait_until(&ww->w_uint[p], USHMEM_CMP_LE, 15u);
        ushmem_uint_wait_until(&ww->w_uint[p], USHMEM_CMP_EQ, 15u);
        final_want = 15;
        final_got = ushmem_uint_atomic_fetch(&ww->w_uint[p], my_pe);
        break;
    case 4:
        ushmem_ulong_wait_until(&ww->w_ulong[p], USHMEM_CMP_NE, 0UL);
        ushmem_ulong_wait_until(&ww->w_ulong[p], USHMEM_CMP_GE, 6UL);
        ushmem_ulong_wait_until(&ww->w_ulong[p], USHMEM_CMP_EQ, 6UL);
        final_want = 6;
        final_got = (long long)ushmem_ulong_atomic_fetch(&ww->w_ulong[p], my_pe);
        break;
    case 5:
        ushmem_ulonglong_wait_until(&ww->w_ull[p], USHMEM_CMP_GT, 5ULL);
        ushmem_ulonglong_wait_until(&ww->w_ull[p], USHMEM_CMP_EQ, 50ULL);
        ushmem_ulonglong_wait_until(&ww->w_ull[p], USHMEM_CMP_GE, 50ULL);
        final_want = 50;
        final_got = (long long)ushmem_ulonglong_atomic_fetch(&ww->w_ull[p], my_pe);
        break;
    case 6:
        ushmem_int32_wait_until(&ww->w_i32[p], USHMEM_CMP_NE, -1);
        ushmem_int32_wait_until(&ww->w_i32[p], USHMEM_CMP_GE, 42);
        ushmem_int32_wait_until(&ww->w_i32[p], USHMEM_CMP_EQ, 42);
        final_want = 42;
        final_got = ushmem_int32_atomic_fetch(&ww->w_i32[p], my_pe);
        break;
    case 7:
        ushmem_int64_wait_until(&ww->w_i64[p], USHMEM_CMP_GT, 0);
        ushmem_int64_wait_until(&ww->w_i64[p], USHMEM_CMP_GT, 2);
        ushmem_int64_wait_until(&ww->w_i64[p], USHMEM_CMP_EQ, 3);
        final_want = 3;
        final_got = ushmem_int64_atomic_fetch(&ww->w_i64[p], my_pe);
        break;
    case 8:
        ushmem_uint32_wait_until(&ww->w_u32[p], USHMEM_CMP_LT, 1000u);
        ushmem_uint32_wait_until(&ww->w_u32[p], USHMEM_CMP_LE, 1u);
        ushmem_uint32_wait_until(&ww->w_u32[p], USHMEM_CMP_EQ, 1u);
        final_want = 1;
        final_got = ushmem_uint32_atomic_fetch(&ww->w_u32[p], my_pe);
        break;
    case 9:
        ushmem_uint64_wait_until(&ww->w_u64[p], USHMEM_CMP_GE, 1ULL << 40);
        ushmem_uint64_wait_until(&ww->w_u64[p], USHMEM_CMP_EQ, 1ULL << 40);
        final_want = 1LL << 40;
        final_got = (long long)ushmem_uint64_atomic_fetch(&ww->w_u64[p], my_pe);
        break;
    case 10:
        ushmem_size_wait_until(&ww->w_size[p], USHMEM_CMP_GT, (size_t)0);
        ushmem_size_wait_until(&ww->w_size[p], USHMEM_CMP_EQ, (size_t)4);
        final_want = 4;
        final_got = (long long)ushmem_size_atomic_fetch(&ww->w_size[p], my_pe);
        break;
    case 11:
        ushmem_ptrdiff_wait_until(&ww->w_pd[p], USHMEM_CMP_LT, (ptrdiff_t)10);
        ushmem_ptrdiff_wait_until(&ww->w_pd[p], USHMEM_CMP_LT, (ptrdiff_t)0);
        ushmem_ptrdiff_wait_until(&ww->w_pd[p], USHMEM_CMP_EQ, (ptrdiff_t)-10);
        ushmem_ptrdiff_wait_until(&ww->w_pd[p], USHMEM_CMP_LE, (ptrdiff_t)-10);
        final_want = -10;
        final_got = ushmem_ptrdiff_atomic_fetch(&ww->w_pd[p], my_pe);
        break;
    default: {
        uint64_t v = ushmem_signal_wait_until(&ww->sig[p], USHMEM_CMP_NE, 0);
        if (v != 3 && v != 7)
            cu_dev_fail(log, W_WAIT_SIG, p, 0, 0, 3, (long long)v);
        /* The SET's data is there once its signal is. */
        cu_dev_verify(log, W_WAIT_SIG_DATA, p, 0, ww->sigdata[p], 32,
                      cu_tag(K_WAIT_SIG, p, my_pe, 0), 0, 0, 1);
        v = ushmem_signal_wait_until(&ww->sig[p], USHMEM_CMP_GT, 6);
        if (v != 7)
            cu_dev_fail(log, W_WAIT_SIG, p, 1, 0, 7, (long long)v);
        v = ushmem_signal_wait_until(&ww->sig[p], USHMEM_CMP_LE, 7);
        if (v != 7)
            cu_dev_fail(log, W_WAIT_SIG, p, 2, 0, 7, (long long)v);
        final_want = 7;
        final_got = (long long)ushmem_signal_fetch(&ww->sig[p]);
        break;
    }
    }
    if (final_got != final_want)
        cu_dev_fail(log, W_WAIT_FINAL, p, kind, 0, final_want, final_got);
}

__global__ void k_wait(struct wait_words *ww, int my_pe, int n_pes, struct cu_log *log)
{
    int t = threadIdx.x;

    if (blockIdx.x == 0) {
        if (t < WAIT_KINDS) {
            for (int i = 0; i < n_pes; i++)
                wait_send(ww, t, my_pe, (my_pe + 1 + i) % n_pes, log);
            ushmem_quiet();
        }
    } else if (blockIdx.x == 1) {
        if (t < n_pes * WAIT_KINDS)
            wait_recv(ww, t % WAIT_KINDS, t / WAIT_KINDS, my_pe, log);
        /* Conditions already true, and a comparison that is no USHMEM_CMP_*
         * value: all return at once. */
        if (t == NT - 1) {
            ushmem_int_wait_until(&ww->never, USHMEM_CMP_EQ, 0);
            ushmem_int_wait_until(&ww->never, USHMEM_CMP_LE, 0);
            ushmem_int_wait_until(&ww->never, 99, 12345);
            ushmem_signal_wait_until(&ww->never_sig, USHMEM_CMP_LE, 0);
        }
    }
}

static void phase_wait(void)
{
    struct wait_words h;

    cu_phase_begin("wait");
    struct wait_words *ww = (struct wait_words *)cu_shmalloc(sizeof(struct wait_words));
    wait_init(&h);
    cu_h2d(ww, &h, sizeof(h));
    shmem_barrier_all();

    k_wait<<<2, NT, 0, cu.stream>>>(ww, me, npes, dlog);
    cu_wait("k_wait");
    report();
    shmem_barrier_all();

    cu_d2h(&h, ww, sizeof(h));
    for (int p = 0; p < npes; p++) {
        cu_expect<int>("int word from PE", p, 5, h.w_int[p]);
        cu_expect<long>("long word from PE", p, 7, h.w_long[p]);
        cu_expect<long long>("longlong word from PE", p, 9, h.w_ll[p]);
        cu_expect<unsigned int>("uint word from PE", p, 15, h.w_uint[p]);
        cu_expect<unsigned long>("ulong word from PE", p, 6, h.w_ulong[p]);
        cu_expect<unsigned long long>("ulonglong word from PE", p, 50, h.w_ull[p]);
        cu_expect<int32_t>("int32 word from PE", p, 42, h.w_i32[p]);
        cu_expect<int64_t>("int64 word from PE", p, 3, h.w_i64[p]);
        cu_expect<uint32_t>("uint32 word from PE", p, 1, h.w_u32[p]);
        cu_expect<uint64_t>("uint64 word from PE", p, 1ULL << 40, h.w_u64[p]);
        cu_expect<size_t>("size word from PE", p, 4, h.w_size[p]);
        cu_expect<ptrdiff_t>("ptrdiff word from PE", p, -10, h.w_pd[p]);
        cu_expect<uint64_t>("signal word from PE", p, 7, h.sig[p]);
        for (int j = 0; j < 32; j++) {
            unsigned char want = cu_byte(cu_tag(K_WAIT_SIG, p, me, 0), (uint64_t)j);
            if (h.sigdata[p][j] != want)
                cu_expect<int>("signalled data byte from PE", (size_t)p, want, h.sigdata[p][j]);
        }
    }
    cu_expect<int>("word nobody writes", 0, 0, h.never);
    cu_expect<uint64_t>("signal nobody writes", 0, 0, h.never_sig);
    shmem_free(ww);
    cu_phase_end();
}

/* ---- fence and quiet ---- */

#define FENCE_ROUNDS 4
#define FD 40
#define FDR 48
#define QD 100
#define QDR 112

struct fence_bufs {
    unsigned char *data, *src; /* [pe][round][NT][FDR]: from / to that PE */
    int *flag;                 /* [pe][NT] */
    unsigned char *qdata, *qsrc, *qget; /* [pe][NT][QDR] */
    int *qcount;
    /* [pe][2][NT][QDR]: group quiets, the block's then the warps' */
    unsigned char *gdata, *gsrc;
    int *gcount; /* [2]: the block's, the warps' */
};

/* Block 0 sends; blocks 1 .. NB-1 receive: each receiver waits for a flag
 * and then must see the data put before the fence. */
__global__ void k_fence(struct fence_bufs f, int my_pe, int n_pes, struct cu_log *log)
{
    int t = threadIdx.x;

    if (blockIdx.x == 0) {
        int s = t;
        for (int r = 0; r < FENCE_ROUNDS; r++)
            for (int i = 0; i < n_pes; i++) {
                int q = (my_pe + 1 + i + s) % n_pes;
                unsigned char *d = f.data + (((size_t)my_pe * FENCE_ROUNDS + r) * NT + s) * FDR;
                const unsigned char *src = f.src + (((size_t)q * FENCE_ROUNDS + r) * NT + s) * FDR;
                if ((r + s) & 1)
                    ushmem_putmem_nbi(d, src, FD, q);
                else
                    ushmem_putmem(d, src, FD, q);
                ushmem_fence();
                ushmem_int_p(&f.flag[my_pe * NT + s], r + 1, q);
            }
        /* quiet completes put_nbi before the count goes up. */
        for (int i = 0; i < n_pes; i++) {
            int q = (my_pe + 1 + i + s) % n_pes;
            ushmem_putmem_nbi(f.qdata + ((size_t)my_pe * NT + s) * QDR,
                              f.qsrc + ((size_t)q * NT + s) * QDR, QD, q);
        }
        ushmem_quiet();
        for (int i = 0; i < n_pes; i++)
            ushmem_int_atomic_inc(f.qcount, (my_pe + 1 + i + s) % n_pes);
        /* quiet completes get_nbi. */
        for (int i = 0; i < n_pes; i++) {
            int q = (my_pe + 1 + i + s) % n_pes;
            ushmem_getmem_nbi(f.qget + ((size_t)q * NT + s) * QDR,
                              f.qsrc + ((size_t)my_pe * NT + s) * QDR, QD, q);
        }
        ushmem_quiet();
        for (int q = 0; q < n_pes; q++)
            cu_dev_verify(log, W_QUIET_GET, q, s, f.qget + ((size_t)q * NT + s) * QDR, QD,
                          cu_tag(K_QUIET, q, my_pe, s), 0, 0, 1);
        /* Group quiets: every thread puts, one thread of the group counts
         * for all of it, so the quiet must have completed the others'
         * puts too. */
        for (int g = 0; g < 2; g++) {
            for (int i = 0; i < n_pes; i++) {
                int q = (my_pe + 1 + i) % n_pes;
                ushmem_putmem_nbi(f.gdata + (((size_t)my_pe * 2 + g) * NT + s) * QDR,
                                  f.gsrc + (((size_t)q * 2 + g) * NT + s) * QDR, QD, q);
            }
            if (g == 0)
                ushmemx_quiet_block();
            else
                ushmemx_quiet_warp();
            if (g == 0 ? s == 0 : s % 32 == 0)
                for (int i = 0; i < n_pes; i++)
                    ushmem_int_atomic_add(&f.gcount[g], g == 0 ? NT : 32,
                                          (my_pe + 1 + i) % n_pes);
        }
        return;
    }
    if (blockIdx.x == 2 || blockIdx.x == 3) {
        int g = blockIdx.x - 2;
        __syncthreads();
        if (t == 0)
            ushmem_int_wait_until(&f.gcount[g], USHMEM_CMP_EQ, n_pes * NT);
        __syncthreads();
        for (int k = t; k < n_pes * NT; k += NT)
            cu_dev_verify(log, g == 0 ? W_QUIET_BLOCK_DATA : W_QUIET_WARP_DATA, k / NT, k % NT,
                          f.gdata + (((size_t)(k / NT) * 2 + g) * NT + k % NT) * QDR, QD,
                          cu_tag(K_QUIET, k / NT, my_pe, (uint64_t)(g + 1) * NT + k % NT), 0,
                          0, 1);
    }
    int receivers = (NB - 1) * NT;
    for (int k = (blockIdx.x - 1) * NT + t; k < n_pes * NT; k += receivers) {
        int p = k / NT, s = k % NT;
        for (int r = 0; r < FENCE_ROUNDS; r++) {
            ushmem_int_wait_until(&f.flag[p * NT + s], USHMEM_CMP_GE, r + 1);
            cu_dev_verify(log, W_FENCE_DATA, p, r * NT + s,
                          f.data + (((size_t)p * FENCE_ROUNDS + r) * NT + s) * FDR, FD,
                          cu_tag(K_FENCE, p, my_pe, (uint64_t)r * NT + s), 0, 0, 1);
        }
    }
    if (blockIdx.x == 1) {
        __syncthreads();
        if (t == 0)
            ushmem_int_wait_until(f.qcount, USHMEM_CMP_EQ, n_pes * NT);
        __syncthreads();
        for (int k = t; k < n_pes * NT; k += NT)
            cu_dev_verify(log, W_QUIET_DATA, k / NT, k % NT, f.qdata + (size_t)k * QDR, QD,
                          cu_tag(K_QUIET, k / NT, my_pe, k % NT), 0, 0, 1);
    }
}

static void phase_fence(void)
{
    struct fence_bufs f;
    size_t nf = (size_t)npes * FENCE_ROUNDS * NT, nq = (size_t)npes * NT;

    cu_phase_begin("fence");
    f.src = alloc_filled(nf, FDR, [](size_t k) {
        size_t q = k / (FENCE_ROUNDS * NT), r = k / NT % FENCE_ROUNDS, s = k % NT;
        return cu_tag(K_FENCE, me, q, r * NT + s);
    });
    f.qsrc = alloc_filled(nq, QDR, [](size_t k) { return cu_tag(K_QUIET, me, k / NT, k % NT); });
    f.data = alloc_set(nf * FDR, 0xEE);
    f.flag = (int *)alloc_set(nq * sizeof(int), 0);
    f.qdata = alloc_set(nq * QDR, 0xEE);
    f.qget = alloc_set(nq * QDR, 0xDD);
    f.qcount = (int *)alloc_set(sizeof(int), 0);
    f.gsrc = alloc_filled(nq * 2, QDR, [](size_t k) {
        return cu_tag(K_QUIET, me, k / (2 * NT), (k / NT % 2 + 1) * NT + k % NT);
    });
    f.gdata = alloc_set(nq * 2 * QDR, 0xEE);
    f.gcount = (int *)alloc_set(2 * sizeof(int), 0);
    shmem_barrier_all();

    k_fence<<<NB, NT, 0, cu.stream>>>(f, me, npes, dlog);
    cu_wait("k_fence");
    report();
    shmem_barrier_all();

    check_regions("ushmem_putmem(_nbi) before ushmem_fence (slot round * 128 + thread)", f.data,
                  nf, FDR, FD, FENCE_ROUNDS * NT, 0xEE, [](size_t k) {
                      return cu_tag(K_FENCE, k / (FENCE_ROUNDS * NT), me, k % (FENCE_ROUNDS * NT));
                  });
    check_regions("ushmem_putmem_nbi before ushmem_quiet", f.qdata, nq, QDR, QD, NT, 0xEE,
                  [](size_t k) { return cu_tag(K_QUIET, k / NT, me, k % NT); });
    check_regions("ushmem_getmem_nbi before ushmem_quiet", f.qget, nq, QDR, QD, NT, 0xDD,
                  [](size_t k) { return cu_tag(K_QUIET, k / NT, me, k % NT); });
    std::vector<int> flags(nq);
    cu_d2h(flags.data(), f.flag, nq * sizeof(int));
    for (size_t k = 0; k < nq; k++)
        cu_expect<int>("fence flag of PE * NT + thread", k, FENCE_ROUNDS, flags[k]);
    int count = 0;
    cu_d2h(&count, f.qcount, sizeof(int));
    cu_expect<int>("atomic inc after quiet, count", 0, npes * NT, count);
    check_regions("ushmem_putmem_nbi before ushmemx_quiet_block / _warp", f.gdata, nq * 2, QDR,
                  QD, 2 * NT, 0xEE, [](size_t k) {
                      return cu_tag(K_QUIET, k / (2 * NT), me, (k / NT % 2 + 1) * NT + k % NT);
                  });
    shmem_barrier_all();
    shmem_free(f.gcount);
    shmem_free(f.gdata);
    shmem_free(f.gsrc);
    shmem_free(f.qcount);
    shmem_free(f.qget);
    shmem_free(f.qdata);
    shmem_free(f.flag);
    shmem_free(f.data);
    shmem_free(f.qsrc);
    shmem_free(f.src);
    cu_phase_end();
}

/* ---- device barrier ---- */

#define BAR_ROUNDS 50
#define BAR_KERNELS 5

struct bar_words {
    long arrivals; /* every PE adds 1 on every PE each round */
    long slot;     /* the left neighbour puts round * 1000 + its PE */
};

/* One thread per PE. Nobody may leave the first barrier of a round before
 * every PE's adds and put, nor add for the next round before every PE has
 * checked: hence the second barrier. */
__global__ void k_barrier(struct bar_words *bw, long first, long last, int my_pe, int n_pes,
                          struct cu_log *log)
{
    int left = (my_pe + n_pes - 1) % n_pes, right = (my_pe + 1) % n_pes;

    for (long r = first; r <= last; r++) {
        for (int i = 0; i < n_pes; i++)
            ushmem_long_atomic_add(&bw->arrivals, 1L, (my_pe + i) % n_pes);
        ushmem_long_p(&bw->slot, r * 1000 + my_pe, right);
        ushmem_barrier_all();
        long a = ushmem_long_atomic_fetch(&bw->arrivals, my_pe);
        if (a != r * n_pes)
            cu_dev_fail(log, W_BAR_ARRIVALS, my_pe, 0, r, r * n_pes, a);
        long s = ushmem_long_atomic_fetch(&bw->slot, my_pe);
        if (s != r * 1000 + left)
            cu_dev_fail(log, W_BAR_SLOT, my_pe, 0, r, r * 1000 + left, s);
        ushmem_barrier_all();
    }
}

static void phase_barrier(void)
{
    struct bar_words h;
    long per = BAR_ROUNDS / BAR_KERNELS;

    cu_phase_begin("barrier");
    struct bar_words *bw = (struct bar_words *)alloc_set(sizeof(struct bar_words), 0);
    shmem_barrier_all();
    /* Host barriers between the kernels must not disturb the device
     * barrier's own count. */
    for (int k = 0; k < BAR_KERNELS; k++) {
        k_barrier<<<1, 1, 0, cu.stream>>>(bw, k * per + 1, (k + 1) * per, me, npes, dlog);
        cu_wait("k_barrier");
        shmem_barrier_all();
    }
    report();
    cu_d2h(&h, bw, sizeof(h));
    cu_expect<long>("arrivals after the last round", 0, (long)BAR_ROUNDS * npes, h.arrivals);
    cu_expect<long>("left neighbour's put after the last round", 0,
                    (long)BAR_ROUNDS * 1000 + (me + npes - 1) % npes, h.slot);
    shmem_barrier_all();
    shmem_free(bw);
    cu_phase_end();
}

/* ---- signal after data, read at once ---- */

#define ORDER_ROUNDS 100
#define ORDER_NT 256

/* One channel per scope: the group puts its round into the next PE's dst
 * and signals it there; the previous PE does the same here and is
 * acknowledged through ack, after which it may overwrite dst. */
struct order_chan {
    uint64_t sig, ack;
    uint64_t *src, *dst;
    size_t words;
};

__host__ __device__ static inline uint64_t order_word(int pe, uint64_t round, size_t i)
{
    return ((uint64_t)(pe + 1) << 56) ^ (round << 32) ^ (uint64_t)i;
}

/* The meeting of a channel's group: scope 2 a block, 1 a warp, 0 one thread. */
__device__ static inline void scope_sync(int scope)
{
    if (scope == 2)
        __syncthreads();
    else if (scope == 1)
        __syncwarp();
}

/* The group (rank of size) of channel c: every round, wait until the next PE
 * has checked the last one, fill src, put it with a signal (ADD 1 in odd
 * rounds, SET to the round in even ones: either way the signal then reads the
 * round), wait for the previous PE's signal, read what it put, the words it
 * wrote last first (a signal that overtook them would show the round
 * before), then acknowledge. */
__device__ static void order_rounds(struct order_chan *ch, int scope, unsigned rank,
                                    unsigned size, int my_pe, int n_pes, int what,
                                    struct cu_log *log)
{
    int next = (my_pe + 1) % n_pes, prev = (my_pe + n_pes - 1) % n_pes;
    size_t n = ch->words, bytes = n * sizeof(uint64_t);

    for (uint64_t r = 1; r <= ORDER_ROUNDS; r++) {
        if (rank == 0)
            ushmem_uint64_wait_until(&ch->ack, USHMEM_CMP_GE, r - 1);
        for (size_t i = rank; i < n; i += size)
            ch->src[i] = order_word(my_pe, r, i);
        int op = r % 2 ? USHMEM_SIGNAL_ADD : USHMEM_SIGNAL_SET;
        uint64_t value = r % 2 ? 1 : r;
        if (scope == 2)
            ushmemx_putmem_signal_block(ch->dst, ch->src, bytes, &ch->sig, value, op, next);
        else if (scope == 1)
            ushmemx_putmem_signal_warp(ch->dst, ch->src, bytes, &ch->sig, value, op, next);
        else
            ushmem_putmem_signal(ch->dst, ch->src, bytes, &ch->sig, value, op, next);
        if (rank == 0) {
            uint64_t v = ushmem_signal_wait_until(&ch->sig, USHMEM_CMP_GE, r);
            if (v != r)
                cu_dev_fail(log, W_ORDER_WAIT, prev, (int)r, scope, (long long)r, (long long)v);
        }
        scope_sync(scope);
        const volatile uint64_t *got = ch->dst;
        for (size_t k = rank; k < n; k += size) {
            size_t i = n - 1 - k;
            uint64_t g = got[i], want = order_word(prev, r, i);
            if (g != want) {
                cu_dev_fail(log, what, prev, (int)r, (long long)i, (long long)want, (long long)g);
                break;
            }
        }
        scope_sync(scope);
        if (rank == 0)
            ushmemx_signal_set(&ch->ack, r, prev);
    }
}

typedef void (*chan_rounds_fn)(struct order_chan *, int, unsigned, unsigned, int, int, int,
                               struct cu_log *);

/* Block 0 runs ROUNDS on channel 0 at block scope, block 1's first warp on
 * channel 1 at warp scope, block 2's first thread on channel 2; the three
 * side by side, each reporting its own kind of mismatch (what[scope]). */
template <chan_rounds_fn ROUNDS>
__global__ void k_three_scopes(struct order_chan *chans, int my_pe, int n_pes, int what_b,
                               int what_w, int what_t, struct cu_log *log)
{
    unsigned t = threadIdx.x;

    if (blockIdx.x == 0)
        ROUNDS(&chans[0], 2, t, blockDim.x, my_pe, n_pes, what_b, log);
    else if (blockIdx.x == 1 && t < 32)
        ROUNDS(&chans[1], 1, t, 32, my_pe, n_pes, what_w, log);
    else if (blockIdx.x == 2 && t == 0)
        ROUNDS(&chans[2], 0, 0, 1, my_pe, n_pes, what_t, log);
}

/* Three channels in the heap, channel c with two zeroed buffers of bytes[c]
 * (src and dst); h receives their host copy. */
static struct order_chan *chans_alloc(const size_t bytes[3], struct order_chan h[3])
{
    struct order_chan *chans = (struct order_chan *)alloc_set(3 * sizeof(*chans), 0);
    for (int c = 0; c < 3; c++) {
        memset(&h[c], 0, sizeof(h[c]));
        h[c].words = bytes[c] / sizeof(uint64_t);
        h[c].src = (uint64_t *)alloc_set(bytes[c], 0);
        h[c].dst = (uint64_t *)alloc_set(bytes[c], 0);
    }
    cu_h2d(chans, h, 3 * sizeof(*chans));
    return chans;
}

static void chans_free(struct order_chan *chans, struct order_chan h[3])
{
    for (int c = 2; c >= 0; c--) {
        shmem_free(h[c].dst);
        shmem_free(h[c].src);
    }
    shmem_free(chans);
}

/* A phase of three channels (bytes[c] each) running ROUNDS side by side for
 * `rounds` rounds; afterwards each channel's signal and acknowledgement read
 * the last round and its dst holds the previous PE's last round. */
template <chan_rounds_fn ROUNDS>
static void phase_three_scopes(const char *name, const size_t bytes[3], uint64_t rounds,
                               int what_b, int what_w, int what_t)
{
    struct order_chan h[3];

    cu_phase_begin(name);
    struct order_chan *chans = chans_alloc(bytes, h);
    shmem_barrier_all();

    k_three_scopes<ROUNDS><<<3, ORDER_NT, 0, cu.stream>>>(chans, me, npes, what_b, what_w,
                                                          what_t, dlog);
    cu_wait(name);
    report();
    shmem_barrier_all();

    for (int c = 0; c < 3; c++) {
        struct order_chan d;
        std::vector<uint64_t> got(h[c].words);
        cu_d2h(&d, &chans[c], sizeof(d));
        cu_expect<uint64_t>("channel's signal after the last round", (size_t)c, rounds, d.sig);
        cu_expect<uint64_t>("channel's acknowledgement after the last round", (size_t)c, rounds,
                            d.ack);
        cu_d2h(got.data(), h[c].dst, bytes[c]);
        for (size_t i = 0; i < h[c].words; i++)
            cu_expect<uint64_t>("channel's last round, word", i,
                                order_word((me + npes - 1) % npes, rounds, i), got[i]);
    }
    shmem_barrier_all();
    chans_free(chans, h);
    cu_phase_end();
}

static void phase_order(void)
{
    static const size_t bytes[3] = {1 << 20, 64 << 10, 4 << 10};

    phase_three_scopes<order_rounds>("order", bytes, ORDER_ROUNDS, W_ORDER_B_DATA,
                                     W_ORDER_W_DATA, W_ORDER_T_DATA);
}

/* ---- gets of words their owner rewrote since the last get ---- */

#define FRESH_ROUNDS 200

/* The channels of phase order, used otherwise: each PE rewrites its own
 * src every round and signals the next PE through sig, which gets that src
 * into its dst and acknowledges through ack, after which src may be
 * rewritten. The group (rank of size), every round: wait until the next PE
 * has read the last round, write the round into src, fence, signal the
 * next PE; wait for the previous PE's signal, get its src, check every
 * word, acknowledge. Each get reads the lines the get before it read, in
 * the same kernel, after their owner rewrote them: a get served from a
 * cache that the wait did not invalidate would return the round before. */
__device__ static void fresh_rounds(struct order_chan *ch, int scope, unsigned rank,
                                    unsigned size, int my_pe, int n_pes, int what,
                                    struct cu_log *log)
{
    int next = (my_pe + 1) % n_pes, prev = (my_pe + n_pes - 1) % n_pes;
    size_t n = ch->words, bytes = n * sizeof(uint64_t);

    for (uint64_t r = 1; r <= FRESH_ROUNDS; r++) {
        if (rank == 0)
            ushmem_uint64_wait_until(&ch->ack, USHMEM_CMP_GE, r - 1);
        scope_sync(scope);
        for (size_t i = rank; i < n; i += size)
            ch->src[i] = order_word(my_pe, r, i);
        scope_sync(scope);
        if (rank == 0) {
            ushmem_fence();
            ushmemx_signal_set(&ch->sig, r, next);
            uint64_t v = ushmem_signal_wait_until(&ch->sig, USHMEM_CMP_GE, r);
            if (v != r)
                cu_dev_fail(log, W_FRESH_WAIT, prev, (int)r, scope, (long long)r, (long long)v);
        }
        scope_sync(scope);
        if (scope == 2)
            ushmemx_getmem_block(ch->dst, ch->src, bytes, prev);
        else if (scope == 1)
            ushmemx_getmem_warp(ch->dst, ch->src, bytes, prev);
        else
            ushmem_getmem(ch->dst, ch->src, bytes, prev);
        for (size_t i = rank; i < n; i += size) {
            uint64_t g = ch->dst[i], want = order_word(prev, r, i);
            if (g != want) {
                cu_dev_fail(log, what, prev, (int)r, (long long)i, (long long)want, (long long)g);
                break;
            }
        }
        scope_sync(scope);
        if (rank == 0)
            ushmemx_signal_set(&ch->ack, r, prev);
    }
}

static void phase_fresh(void)
{
    static const size_t bytes[3] = {32 << 10, 4 << 10, 512};

    phase_three_scopes<fresh_rounds>("fresh", bytes, FRESH_ROUNDS, W_FRESH_B_DATA,
                                     W_FRESH_W_DATA, W_FRESH_T_DATA);
}

int main(int argc, char **argv)
{
    cu_parse_args(argc, argv);
    cu_skip_without_device();
    cu_init(MAX_PES);
    me = cu.me;
    npes = cu.npes;
    dlog = cu_log_alloc();

    phase_state();
    phase_typed();
    phase_bytes();
    phase_large();
    phase_coop();
    phase_amo();
    phase_signal();
    phase_wait();
    phase_fence();
    phase_barrier();
    phase_order();
    phase_fresh();

    CU_CHECK(cudaFree(dlog));
    cu_finish();
    return 0;
}
