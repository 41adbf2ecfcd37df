/* Stream order between kernels that call the device API and the
 * stream-ordered host calls (shmemx_*_on_stream), queued behind each other
 * on one stream with no host synchronisation inside a phase, several
 * rounds in a loop, every byte and word checked on every PE. The device
 * calls take the road the environment selects (direct; the proxy thread
 * with USHMEM_DEVICE_ROUTE=proxy; libfabric with USHMEM_IPC=0, landed by
 * the target's PE under USHMEM_FABRIC_STAGING=1 or written by the fabric
 * into GPU memory with FI_HMEM), and so do the stream calls (mapped peers,
 * or the proxy over FI_HMEM).
 *
 * Phases, ROUNDS rounds each:
 *   atomics-barrier  a kernel adds 1 to a word on every PE
 *               (ushmem_long_atomic_add) and quiets, then
 *               barrier_all_on_stream, then a kernel checks the word with a
 *               fetching atomic, then sync_all_on_stream. It comes first on
 *               purpose: it is the shape that hung both PEs under
 *               USHMEM_DEVICE_ROUTE=proxy when the first stream barrier
 *               loaded the backend's kernels behind a kernel waiting for the
 *               proxy (oshrun's --timeout then ends the job).
 *   puts-gets   device puts (ushmemx_putmem_block) and gets in kernels,
 *               putmem_on_stream, quiet_on_stream, getmem_on_stream,
 *               barriers between them
 *   atomics     fetch_add from one thread per PE to every PE and a
 *               compare_swap, checked after a stream barrier
 *   signals     a kernel's put-with-signal waited for by
 *               signal_wait_until_on_stream, and putmem_signal_on_stream
 *               waited for by a kernel's ushmem_signal_wait_until
 *   alltoall    alltoallmem_on_stream, then a kernel that checks it and
 *               does an atomic increment and ushmem_barrier_all, then
 *               quiet_on_stream
 *
 * Landing (USHMEM_IPC=0 USHMEM_FABRIC_STAGING=1) refuses stream-ordered
 * calls: there this GPU's own copies move the data, and a stream waiting
 * for them could hold them up. The stream order between kernels and stream
 * calls cannot be tested there, but the same data flow can: each stream
 * call is replaced by the device API in a kernel (put, get, put-with-signal,
 * signal wait, ushmemx_alltoallmem_block) and each stream barrier by a
 * host synchronisation and shmem_barrier_all, which checks that the
 * kernels' device calls over landing are complete at their quiet. PE 0
 * says so in one line.
 *
 * Usage: oshrun -n N cu_stream_order [-v]; exits 77 without a GPU. */
#include <shmem.h>
#include <shmemx.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <ushmem/device.h>

#include "cu_check.cuh"

#define MAX_PES 16
#define ROUNDS 8
#define NBYTES (((size_t)256 << 10) + 5) /* per put or get */
#define NA2A ((size_t)4099)               /* per member of the alltoall */
#define PUT_BLOCKS 4

enum { K_PUTS = 301, K_SIGA, K_SIGB, K_A2A };

#define WHAT_LIST(X)                                                                      \
    X(W_ADDS, "word after every PE's atomic add and the stream barrier (b: round)")       \
    X(W_DEV_PUT, "device put from PE a, after the stream barrier (b: round)")             \
    X(W_DEV_GET, "device get from PE a (b: round)")                                       \
    X(W_STREAM_PUT, "putmem_on_stream from PE a, after the stream barrier (b: round)")    \
    X(W_STREAM_GET, "getmem_on_stream from PE a (b: round)")                              \
    X(W_FADD_OLD, "fetch_add's old value from PE a (b: round)")                           \
    X(W_FADD_SUM, "word after every PE's fetch_add (b: round)")                           \
    X(W_CSWAP_OLD, "compare_swap's old value on PE a (b: round)")                         \
    X(W_CSWAP_WORD, "word the previous PE swapped (b: round)")                            \
    X(W_SIG_KERNEL, "kernel's put-with-signal from PE a after the stream wait (b: round)") \
    X(W_SIG_STREAM, "stream put-with-signal from PE a after the kernel's wait (b: round)") \
    X(W_A2A, "alltoall block from PE a (b: round)")                                       \
    X(W_INC, "word the previous PE incremented before ushmem_barrier_all (b: round)")
#define WHAT_ENUM(name, text) name,
#define WHAT_TEXT(name, text) text,
enum { WHAT_LIST(WHAT_ENUM) W_COUNT };
static const char *const what_names[] = {WHAT_LIST(WHAT_TEXT)};

static struct cu_log *dlog;
static int me, npes, next_pe, prev_pe;
/* false on landing: stream calls replaced (see the header comment) */
static bool streams = true;

/* Symmetric words, one object so that every PE has them at one offset. */
struct words {
    long adds;   /* atomics-barrier */
    long fadd;   /* atomics */
    long cswap;  /* atomics: only the previous PE swaps it */
    long inc;    /* alltoall: only the previous PE increments it */
    uint64_t sig_a, sig_b;
};
static struct words *w;
static unsigned char *src, *dst, *dst2, *got, *got2, *src3, *dst3; /* symmetric */
static long *olds; /* private: fetched old values */

#define LAUNCHED() CU_CHECK(cudaGetLastError())

/* ---- kernels ---- */

__global__ void k_add_all(long *word, int n_pes)
{
    for (int pe = 0; pe < n_pes; pe++)
        ushmem_long_atomic_add(word, 1, pe);
    ushmem_quiet();
}

__global__ void k_check_fetch(struct cu_log *log, int what, long *word, int my_pe, long want,
                              int round)
{
    long got_value = ushmem_long_atomic_fetch(word, my_pe);
    if (got_value != want)
        cu_dev_fail(log, what, my_pe, round, 0, want, got_value);
}

__global__ void k_fill(unsigned char *p, size_t n, uint64_t tag)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        p[i] = cu_byte(tag, i);
}

__global__ void k_verify(struct cu_log *log, int what, int a, int b, const unsigned char *p,
                         size_t n, uint64_t tag)
{
    cu_dev_verify(log, what, a, b, p, n, tag, 0, blockIdx.x * blockDim.x + threadIdx.x,
                  gridDim.x * blockDim.x);
}

/* Each block puts (or gets) its share of n bytes. */
__global__ void k_put(unsigned char *d, const unsigned char *s, size_t n, int pe)
{
    size_t chunk = (n + gridDim.x - 1) / gridDim.x, lo = blockIdx.x * chunk;
    if (lo < n)
        ushmemx_putmem_block(d + lo, s + lo, n - lo < chunk ? n - lo : chunk, pe);
    ushmem_quiet();
}

__global__ void k_get(unsigned char *d, const unsigned char *s, size_t n, int pe)
{
    size_t chunk = (n + gridDim.x - 1) / gridDim.x, lo = blockIdx.x * chunk;
    if (lo < n)
        ushmemx_getmem_block(d + lo, s + lo, n - lo < chunk ? n - lo : chunk, pe);
}

/* Thread t fetch-adds 1 on PE t; the thread for the next PE also swaps
 * its word from round - 1 to round. */
__global__ void k_atomics(struct words *ws, long *old, int next, long round)
{
    int t = threadIdx.x;
    old[t] = ushmem_long_atomic_fetch_add(&ws->fadd, 1, t);
    if (t == next)
        old[blockDim.x] = ushmem_long_atomic_compare_swap(&ws->cswap, round - 1, round, next);
    ushmem_quiet();
}

__global__ void k_check_atomics(struct cu_log *log, struct words *ws, const long *old, int my_pe,
                                int n_pes, long round)
{
    long lo = (round - 1) * n_pes, hi = round * n_pes;
    for (int t = 0; t < n_pes; t++)
        if (old[t] < lo || old[t] >= hi)
            cu_dev_fail(log, W_FADD_OLD, t, (int)round, t, lo, old[t]);
    long sum = ushmem_long_atomic_fetch(&ws->fadd, my_pe);
    if (sum != hi)
        cu_dev_fail(log, W_FADD_SUM, my_pe, (int)round, 0, hi, sum);
    if (old[n_pes] != round - 1)
        cu_dev_fail(log, W_CSWAP_OLD, (my_pe + 1) % n_pes, (int)round, 0, round - 1, old[n_pes]);
    long mine = ushmem_long_atomic_fetch(&ws->cswap, my_pe);
    if (mine != round)
        cu_dev_fail(log, W_CSWAP_WORD, my_pe, (int)round, 0, round, mine);
}

__global__ void k_put_signal(unsigned char *d, const unsigned char *s, size_t n, uint64_t *sig,
                             uint64_t value, int pe)
{
    ushmemx_putmem_signal_block(d, s, n, sig, value, USHMEM_SIGNAL_SET, pe);
}

__global__ void k_wait(uint64_t *sig, uint64_t value)
{
    ushmem_signal_wait_until(sig, USHMEM_CMP_GE, value);
}

/* One thread waits for the signal, then the block checks what it guards. */
__global__ void k_wait_verify(struct cu_log *log, uint64_t *sig, uint64_t value,
                              const unsigned char *p, size_t n, uint64_t tag, int from)
{
    if (threadIdx.x == 0)
        ushmem_signal_wait_until(sig, USHMEM_CMP_GE, value);
    __syncthreads();
    cu_dev_verify(log, W_SIG_STREAM, from, (int)value, p, n, tag, 0, threadIdx.x, blockDim.x);
}

__global__ void k_alltoall(unsigned char *d, const unsigned char *s, size_t n)
{
    ushmemx_alltoallmem_block(d, s, n);
}

/* Checks the alltoall's blocks; only then (nobody sends the next round's
 * blocks before every PE has checked these) one thread increments the
 * next PE's word, passes the device barrier and reads its own word, which
 * the previous PE has incremented once a round. */
__global__ void k_alltoall_check(struct cu_log *log, const unsigned char *d, size_t n,
                                 struct words *ws, int my_pe, int n_pes, long round)
{
    for (int pe = 0; pe < n_pes; pe++)
        cu_dev_verify(log, W_A2A, pe, (int)round, d + (size_t)pe * n, n,
                      cu_tag(K_A2A, (uint64_t)pe, (uint64_t)my_pe, (uint64_t)round), 0,
                      threadIdx.x, blockDim.x);
    __syncthreads();
    if (threadIdx.x != 0)
        return;
    ushmem_long_atomic_inc(&ws->inc, (my_pe + 1) % n_pes);
    ushmem_barrier_all();
    long v = ushmem_long_atomic_fetch(&ws->inc, my_pe);
    if (v != round)
        cu_dev_fail(log, W_INC, my_pe, (int)round, 0, round, v);
}

/* ---- the stream calls, or on landing what replaces them ---- */

static unsigned blocks_for(size_t n)
{
    size_t b = (n + 255) / 256;
    return b == 0 ? 1 : b > 1024 ? 1024 : (unsigned)b;
}

static void s_barrier(void)
{
    if (streams) {
        shmemx_barrier_all_on_stream(cu.stream);
        return;
    }
    cu_wait("the kernels before a host barrier");
    shmem_barrier_all();
}

static void s_sync(void)
{
    if (streams) {
        shmemx_sync_all_on_stream(cu.stream);
        return;
    }
    cu_wait("the kernels before a host barrier");
    shmem_sync_all();
}

static void s_quiet(void)
{
    if (streams)
        shmemx_quiet_on_stream(cu.stream);
}

static void s_put(unsigned char *d, const unsigned char *s, size_t n, int pe)
{
    if (streams) {
        shmemx_putmem_on_stream(d, s, n, pe, cu.stream);
        return;
    }
    k_put<<<PUT_BLOCKS, 256, 0, cu.stream>>>(d, s, n, pe);
    LAUNCHED();
}

static void s_get(unsigned char *d, const unsigned char *s, size_t n, int pe)
{
    if (streams) {
        shmemx_getmem_on_stream(d, s, n, pe, cu.stream);
        return;
    }
    k_get<<<PUT_BLOCKS, 256, 0, cu.stream>>>(d, s, n, pe);
    LAUNCHED();
}

static void s_put_signal(unsigned char *d, const unsigned char *s, size_t n, uint64_t *sig,
                         uint64_t value, int pe)
{
    if (streams) {
        shmemx_putmem_signal_on_stream(d, s, n, sig, value, SHMEM_SIGNAL_SET, pe, cu.stream);
        return;
    }
    k_put_signal<<<1, 256, 0, cu.stream>>>(d, s, n, sig, value, pe);
    LAUNCHED();
}

static void s_wait(uint64_t *sig, uint64_t value)
{
    if (streams) {
        shmemx_signal_wait_until_on_stream(sig, SHMEM_CMP_GE, value, cu.stream);
        return;
    }
    k_wait<<<1, 1, 0, cu.stream>>>(sig, value);
    LAUNCHED();
}

static void s_alltoall(unsigned char *d, const unsigned char *s, size_t n)
{
    if (streams) {
        shmemx_alltoallmem_on_stream(SHMEM_TEAM_WORLD, d, s, n, cu.stream);
        return;
    }
    k_alltoall<<<1, 256, 0, cu.stream>>>(d, s, n);
    LAUNCHED();
}

static void fill(unsigned char *p, size_t n, uint64_t tag)
{
    k_fill<<<blocks_for(n), 256, 0, cu.stream>>>(p, n, tag);
    LAUNCHED();
}

static void verify(int what, int from, long round, const unsigned char *p, size_t n,
                   uint64_t tag)
{
    k_verify<<<blocks_for(n), 256, 0, cu.stream>>>(dlog, what, from, (int)round, p, n, tag);
    LAUNCHED();
}

static uint64_t tag_of(int kind, int from, int to, long round)
{
    return cu_tag((uint64_t)kind, (uint64_t)from, (uint64_t)to, (uint64_t)round);
}

/* After the rounds: the host waits for the stream, once. */
static void phase_end(const char *what)
{
    cu_wait(what);
    cu_log_report(dlog, what_names, W_COUNT);
    cu_phase_end();
}

/* ---- phases ---- */

static void phase_atomics_barrier(void)
{
    cu_phase_begin("atomics-barrier");
    for (long r = 1; r <= ROUNDS; r++) {
        k_add_all<<<1, 1, 0, cu.stream>>>(&w->adds, npes);
        LAUNCHED();
        s_barrier();
        k_check_fetch<<<1, 1, 0, cu.stream>>>(dlog, W_ADDS, &w->adds, me, r * npes, (int)r);
        LAUNCHED();
        s_sync(); /* nobody adds again before every PE has checked */
    }
    phase_end("atomics-barrier");
}

static void phase_puts_gets(void)
{
    cu_phase_begin("puts-gets");
    for (long r = 1; r <= ROUNDS; r++) {
        uint64_t mine = tag_of(K_PUTS, me, next_pe, r), theirs = tag_of(K_PUTS, prev_pe, me, r);
        fill(src, NBYTES, mine);
        k_put<<<PUT_BLOCKS, 256, 0, cu.stream>>>(dst, src, NBYTES, next_pe);
        LAUNCHED();
        s_barrier();
        verify(W_DEV_PUT, prev_pe, r, dst, NBYTES, theirs);
        k_get<<<PUT_BLOCKS, 256, 0, cu.stream>>>(got, src, NBYTES, prev_pe);
        LAUNCHED();
        verify(W_DEV_GET, prev_pe, r, got, NBYTES, theirs);
        s_put(dst2, src, NBYTES, next_pe);
        s_quiet();
        s_barrier();
        verify(W_STREAM_PUT, prev_pe, r, dst2, NBYTES, theirs);
        s_get(got2, src, NBYTES, prev_pe);
        verify(W_STREAM_GET, prev_pe, r, got2, NBYTES, theirs);
        s_sync(); /* prev refills its source only after every get of it */
    }
    phase_end("puts-gets");
}

static void phase_atomics(void)
{
    cu_phase_begin("atomics");
    for (long r = 1; r <= ROUNDS; r++) {
        k_atomics<<<1, npes, 0, cu.stream>>>(w, olds, next_pe, r);
        LAUNCHED();
        s_barrier();
        k_check_atomics<<<1, 1, 0, cu.stream>>>(dlog, w, olds, me, npes, r);
        LAUNCHED();
        s_barrier();
    }
    phase_end("atomics");
}

/* Signals only grow (the round), so nothing resets them. */
static void phase_signals(void)
{
    cu_phase_begin("signals");
    for (long r = 1; r <= ROUNDS; r++) {
        fill(src, NBYTES, tag_of(K_SIGA, me, next_pe, r));
        k_put_signal<<<1, 256, 0, cu.stream>>>(dst, src, NBYTES, &w->sig_a, (uint64_t)r, next_pe);
        LAUNCHED();
        s_wait(&w->sig_a, (uint64_t)r);
        verify(W_SIG_KERNEL, prev_pe, r, dst, NBYTES, tag_of(K_SIGA, prev_pe, me, r));
        s_put_signal(dst2, src, NBYTES, &w->sig_b, (uint64_t)r, next_pe);
        k_wait_verify<<<1, 256, 0, cu.stream>>>(dlog, &w->sig_b, (uint64_t)r, dst2, NBYTES,
                                                tag_of(K_SIGA, prev_pe, me, r), prev_pe);
        LAUNCHED();
        s_barrier(); /* prev sends again only after this PE has checked */
    }
    phase_end("signals");
}

static void phase_alltoall(void)
{
    cu_phase_begin("alltoall");
    for (long r = 1; r <= ROUNDS; r++) {
        for (int pe = 0; pe < npes; pe++)
            fill(src3 + (size_t)pe * NA2A, NA2A, tag_of(K_A2A, me, pe, r));
        s_alltoall(dst3, src3, NA2A);
        k_alltoall_check<<<1, 256, 0, cu.stream>>>(dlog, dst3, NA2A, w, me, npes, r);
        LAUNCHED();
        s_quiet();
    }
    phase_end("alltoall");
}

static bool env_true(const char *name)
{
    const char *v = getenv(name);
    static const char *const yes[] = {"1", "y", "yes", "true", "on"};
    for (size_t i = 0; v != NULL && i < sizeof(yes) / sizeof(yes[0]); i++)
        if (strcasecmp(v, yes[i]) == 0)
            return true;
    return false;
}

int main(int argc, char **argv)
{
    cu_parse_args(argc, argv);
    cu_skip_without_device();
    cu_init(MAX_PES);
    me = cu.me;
    npes = cu.npes;
    next_pe = (me + 1) % npes;
    prev_pe = (me + npes - 1) % npes;

    /* Landing: staging on and some peer reached over the fabric. */
    bool fabric = false;
    for (int pe = 0; pe < npes; pe++) {
        int route = shmemx_route(pe, SHMEMX_CLASS_RMA);
        fabric = fabric || route == SHMEMX_ROUTE_PROXY || route == SHMEMX_ROUTE_STAGED;
    }
    streams = !(fabric && env_true("USHMEM_FABRIC_STAGING"));
    if (!streams && me == 0)
        printf("cu_stream_order: landing (USHMEM_FABRIC_STAGING=1) refuses stream-ordered "
               "calls; each is replaced by the device API in a kernel and each stream barrier "
               "by a host synchronisation and shmem_barrier_all\n");

    dlog = cu_log_alloc();
    CU_CHECK(cudaMalloc((void **)&olds, (MAX_PES + 1) * sizeof(long)));
    w = (struct words *)cu_shmalloc(sizeof(struct words));
    src = (unsigned char *)cu_shmalloc(NBYTES);
    dst = (unsigned char *)cu_shmalloc(NBYTES);
    dst2 = (unsigned char *)cu_shmalloc(NBYTES);
    got = (unsigned char *)cu_shmalloc(NBYTES);
    got2 = (unsigned char *)cu_shmalloc(NBYTES);
    src3 = (unsigned char *)cu_shmalloc((size_t)npes * NA2A);
    dst3 = (unsigned char *)cu_shmalloc((size_t)npes * NA2A);
    cu_memset(w, 0, sizeof(struct words));
    shmem_barrier_all();

    /* First, before any other stream call of the program: the shape of the
     * hang (see the header comment). */
    phase_atomics_barrier();
    phase_puts_gets();
    phase_atomics();
    phase_signals();
    phase_alltoall();

    CU_CHECK(cudaFree(olds));
    CU_CHECK(cudaFree(dlog));
    shmem_free(dst3);
    shmem_free(src3);
    shmem_free(got2);
    shmem_free(got);
    shmem_free(dst2);
    shmem_free(dst);
    shmem_free(src);
    shmem_free(w);
    if (me == 0) {
        const char *route = getenv("USHMEM_DEVICE_ROUTE");
        printf("cu_stream_order: %d rounds of 5 phases on %d PEs; device calls: %s "
               "(USHMEM_DEVICE_ROUTE=%s, RMA to PE %d: %s); stream calls: %s\n",
               ROUNDS, npes, route != NULL && strcmp(route, "proxy") == 0 ? "proxy" : "by route",
               route != NULL ? route : "unset", next_pe,
               shmemx_route_name(shmemx_route(next_pe, SHMEMX_CLASS_RMA)),
               streams ? "on the stream" : "replaced (landing)");
    }
    cu_finish();
    return 0;
}
