/* Device-initiated latencies, each loop inside one single-thread kernel with
 * warm-up iterations first, timed on the GPU's global timer:
 *   p               long_p ping-pong PE 0 <-> PE 1: PE 0 writes i into PE 1's
 *                   flag and waits for i in its own, PE 1 answers; half the
 *                   round trip
 *   g               long_g from PE 1, each read depending on the one before
 *                   and from a cache line not read before in the run (a
 *                   read that a cache can answer measures the cache:
 *                   NVSHMEM's g is a plain load, which L1 keeps, 0.064 us
 *                   against 0.87 for ushmem's uncached one re-reading one
 *                   word on H200s)
 *   fadd            ulonglong_atomic_fetch_add on PE 1, likewise chained
 *   fadd_spread     the same over FADD_SPREAD counters 4 KiB apart, in turn:
 *                   an atomic's latency depends on its word's address
 *                   (0.84 to 0.93 us over 64 addresses on H200s, the same
 *                   every run), so one counter compares two libraries'
 *                   heaps as much as their calls
 *   signal          putmem_signal (8 bytes, signal add) ping-pong with
 *                   signal_wait_until; half the round trip
 *   signal_set      the same with signal set (to the exchange's number):
 *                   through a proxy a store, where an add needs an atomic
 *                   (on the cuda backend a kernel)
 *   barrier         device barrier_all, every PE, per barrier
 *   sync            device sync_all (orders, does not complete), likewise
 *   barrier_stream  barrier_all_on_stream issued from a host loop, per
 *                   barrier (NVSHMEM; ushmem only where it declares
 *                   shmemx_barrier_all_on_stream, else "n/a")
 * and what the link gives with no library call in the loop, through the
 * peer's address from the library's ptr call (n/a where it has none):
 *   raw_p           the p ping-pong as a relaxed system-scope store and
 *                   a relaxed poll
 *   raw_fadd        atom.add at system scope (relaxed), chained
 *   raw_fadd_spread raw_fadd over the counters of fadd_spread
 *   raw_signal      the signal ping-pong as an 8-byte store, a system
 *                   fence and a one-way relaxed add (red) to the signal,
 *                   waited for with an acquire poll: the ordering a signal
 *                   needs, and no more
 *   raw_signal_unordered  raw_signal without the fence: what the fence
 *                   costs (data and signal are then unordered, so it is
 *                   no signal; late data is reported, not an error)
 *   raw_signal_release  raw_signal with the fence folded into the add
 *                   (red.release.sys), as ushmem's putmem_signal does it
 *   raw_launch      an empty one-warp kernel launched from a host loop, per
 *                   launch: what barrier_stream costs at least where the
 *                   library launches a kernel per call (both do)
 *   signal_barrier  the barrier as a program would write it with signals
 *                   and no fence or quiet: every PE sets its word on every
 *                   other PE to the round's number (signal set) and waits
 *                   for every other PE's word here: one signal a peer and
 *                   nothing else, what a barrier through the library's
 *                   signals costs at least (against sync, what the device
 *                   barrier adds to that; through a proxy, one request a
 *                   peer both ways at once)
 *   raw_barrier     the device barrier as one round of plain memory
 *                   operations in a 1-thread kernel on every PE: a system
 *                   fence, a relaxed store of the barrier's count into this
 *                   PE's flag on every other PE, an acquire poll of every
 *                   other PE's flag here
 *
 *   dev_latency [--op LIST] [--iters N] [--warmup N] [--reps R]
 *               [--idle-us LIST [--idle-reps N] [--idle-how sleep|compute|spin]]
 *               [--idle-cpu SECONDS]
 *
 * --reps times every op R times (each from zeroed words, with its warm-up)
 * and prints the median, with the lowest and highest in a comment.
 *
 * --idle-us times what one operation costs after the host has been idle:
 * for each idle time T in LIST (microseconds) and each of p, g, fadd,
 * signal, signal_set and barrier in --op, N launches (default 15) of the
 * op's kernel with one timed iteration and no warm-up, PE 0 sleeping T
 * before each launch while the others launch at once (their kernels wait
 * for PE 0's):
 * whatever serves PE 0's request (a helper thread of the library) has had
 * nothing to do for at least T. Rows "<op>_idle<T>", the median, the lowest
 * and highest in a comment. T = 0 is back to back: the launches follow each
 * other with only a host barrier between them. --idle-how compute: instead
 * of sleeping, PE 0 queues a one-thread kernel that spins T on the GPU
 * before the op's kernel on the same stream (a compute phase, then a
 * request: the GPU busy, only the library's helpers idle); the rows are then
 * "<op>_busy<T>". --idle-how spin: PE 0's host spins T instead of sleeping,
 * its GPU idle (rows "<op>_spin<T>"): with sleep, tells the host's idle
 * states from the GPU's. The raw ops of --op (raw_p, raw_fadd, raw_signal,
 * raw_barrier) are timed likewise: what the hardware pays after idle with
 * no library call.
 *
 * --idle-cpu measures, after the ops, what the process costs while it does
 * nothing: every PE sleeps SECONDS in its main thread, and the CPU time the
 * process used meanwhile (its other threads: the library's helpers) is
 * printed as "idle_cpu_pct", percent of one core, PE 0's, with every PE's
 * in a comment.
 *
 * Builds against ushmem or NVSHMEM (bench_shim.cuh). PE 0 prints CSV as
 * scripts/plot_perf.py reads it: "# dev_latency,<impl>,<pes>", then
 * "op,latency_us" rows in microseconds; an op this build cannot run is a
 * "# <op>: n/a" comment. */
#include "bench_shim.cuh"

#include <cuda/atomic>

#include <sys/prctl.h>
#include <sys/resource.h>

#define OP_LIST \
    "p,g,fadd,signal,barrier,barrier_stream,raw_p,raw_fadd,raw_signal,raw_launch,raw_barrier," \
    "sync,raw_signal_unordered,raw_signal_release,fadd_spread,raw_fadd_spread,signal_set," \
    "signal_barrier"
#define MAX_REPS 99
#define MAX_IDLE 16
/* --idle-us: what PE 0 sleeps before launching this op's kernel, in
 * microseconds; 0 outside that mode. */
static long idle_before_launch_us;
/* --idle-how: PE 0's host sleeps (IDLE_SLEEP), a kernel spins on its GPU
 * (IDLE_COMPUTE), or its host spins with the GPU idle (IDLE_SPIN). */
enum { IDLE_SLEEP, IDLE_COMPUTE, IDLE_SPIN };
static int idle_how;

/* A compute phase: one thread busy for `ns` on the GPU's clock. */
__global__ void busy_kernel(unsigned long long ns)
{
    unsigned long long t0 = bench_clock_ns();
    while (bench_clock_ns() - t0 < ns)
        ;
}
#define ITERS_P2P 10000
#define ITERS_BARRIER 1000

/* The symmetric words the loops use. */
struct sym {
    long *flag;              /* p: the ping-pong flag */
    long *gvar;              /* g: G_LINES lines of words read, all 0 */
    unsigned long long *ctr; /* fadd: the counter; fadd_spread: FADD_SPREAD of them */
    uint64_t *sig;           /* signal: the signal word */
    long *data;              /* signal: [0] is written by the peer's put, [1] is sent */
    unsigned long long *bflags; /* raw_barrier: word p is PE p's count */
    long *counts;            /* bench_total_errors */
};

/* Roles of a point-to-point op: PE 0 starts, PE 1 answers or is the target,
 * the other PEs take no part. With --self, PE 0 is its own target and
 * nobody answers: a p or a signal is one hop a round (PE 0 waits for its
 * own write), so the figure is one hop, as half a ping-pong is. */
#define ROLE_START 0
#define ROLE_ANSWER 1
#define ROLE_IDLE (-1)
__device__ int start_peer = 1; /* the PE that PE 0 targets: 0 with --self */
static int self_target;        /* --self */

/* Each kernel stores the timed loop's nanoseconds in *ns; warm-up
 * iterations run first and are not timed. */
__global__ void p_kernel(long *flag, int role, long warmup, long iters, unsigned long long *ns)
{
    unsigned long long t0 = bench_clock_ns();

    if (role == ROLE_IDLE)
        return;
    for (long i = 1; i <= warmup + iters; i++) {
        if (i == warmup + 1)
            t0 = bench_clock_ns();
        if (role == ROLE_START) {
            B_long_p(flag, i, start_peer);
            B_long_wait_until(flag, B_CMP_EQ, i);
        } else {
            B_long_wait_until(flag, B_CMP_EQ, i);
            B_long_p(flag, i, 0);
        }
    }
    *ns = bench_clock_ns() - t0;
    B_quiet();
}

/* g reads one word of each of G_LINES cache lines in turn: more lines
 * (4 MiB) than warm-up and iterations of a run take and than L1 holds. */
#define G_LINES 32768
#define G_LINE_LONGS (128 / sizeof(long))

/* Each read's address depends on the value before it (always 0, as gvar
 * holds 0), so reads cannot overlap and the loop measures latency rather
 * than the rate of independent loads; each is from the next line. */
__global__ void g_kernel(long *gvar, int role, long warmup, long iters, unsigned long long *ns,
                         long *sink)
{
    unsigned long long t0 = bench_clock_ns();
    long v = 0;

    if (role != ROLE_START)
        return;
    for (long i = 0; i < warmup + iters; i++) {
        if (i == warmup)
            t0 = bench_clock_ns();
        v = B_long_g(&gvar[(size_t)(i % G_LINES) * G_LINE_LONGS + (v >> 62)], start_peer);
    }
    *ns = bench_clock_ns() - t0;
    *sink = v;
}

/* Chained like g_kernel: the counter stays far below 2^62. SPREAD: counter
 * i % FADD_SPREAD, FADD_SPREAD_STRIDE words apart. */
#define FADD_SPREAD 64
#define FADD_SPREAD_STRIDE 512
template <bool SPREAD>
__global__ void fadd_kernel(unsigned long long *ctr, int role, long warmup, long iters,
                            unsigned long long *ns, long *sink)
{
    unsigned long long t0 = bench_clock_ns(), old = 0;

    if (role != ROLE_START)
        return;
    for (long i = 0; i < warmup + iters; i++) {
        if (i == warmup)
            t0 = bench_clock_ns();
        size_t at = SPREAD ? (size_t)(i % FADD_SPREAD) * FADD_SPREAD_STRIDE : 0;
        old = B_ulonglong_atomic_fetch_add(&ctr[at + (old >> 62)], 1, start_peer);
    }
    *ns = bench_clock_ns() - t0;
    *sink = (long)old;
}

/* Each side adds 1 to the other's signal with its 8-byte put, so after i
 * exchanges both signals read i; with SET, sets it to i. */
template <bool SET>
__global__ void signal_kernel(uint64_t *sig, long *data, int role, long warmup, long iters,
                              unsigned long long *ns)
{
    unsigned long long t0 = bench_clock_ns();

    if (role == ROLE_IDLE)
        return;
    for (long i = 1; i <= warmup + iters; i++) {
        if (i == warmup + 1)
            t0 = bench_clock_ns();
        data[1] = i;
        if (role == ROLE_START) {
            B_putmem_signal_op(&data[0], &data[1], sizeof(long), sig, SET ? (uint64_t)i : 1,
                               SET ? B_SIGNAL_SET : B_SIGNAL_ADD, start_peer);
            B_signal_wait_until(sig, B_CMP_GE, (uint64_t)i);
        } else {
            B_signal_wait_until(sig, B_CMP_GE, (uint64_t)i);
            B_putmem_signal_op(&data[0], &data[1], sizeof(long), sig, SET ? (uint64_t)i : 1,
                               SET ? B_SIGNAL_SET : B_SIGNAL_ADD, 0);
        }
    }
    *ns = bench_clock_ns() - t0;
    B_quiet();
}

/* The device barrier_all, or with SYNC sync_all, in a loop. */
template <bool SYNC>
__global__ void barrier_kernel(long warmup, long iters, unsigned long long *ns)
{
    unsigned long long t0 = bench_clock_ns();

    for (long i = 0; i < warmup + iters; i++) {
        if (i == warmup)
            t0 = bench_clock_ns();
        if (SYNC)
            B_sync_all();
        else
            B_barrier_all();
    }
    *ns = bench_clock_ns() - t0;
}

/* ---- the floor: the same loops as plain memory operations on the peer's
 * address, the library only asked for that address ---- */

typedef cuda::atomic_ref<long, cuda::thread_scope_system> sys_long;
typedef cuda::atomic_ref<unsigned long long, cuda::thread_scope_system> sys_ull;

__device__ static inline void *peer_ptr(void *addr, int pe)
{
    return B_STD(ptr)(addr, pe);
}

__global__ void raw_p_kernel(long *flag, int role, long warmup, long iters,
                             unsigned long long *ns)
{
    unsigned long long t0 = bench_clock_ns();

    long *peer =
        role == ROLE_IDLE ? NULL : (long *)peer_ptr(flag, role == ROLE_START ? start_peer : 0);
    if (peer == NULL)
        return; /* *ns stays 0: n/a */
    sys_long mine(*flag), theirs(*peer);
    for (long i = 1; i <= warmup + iters; i++) {
        if (i == warmup + 1)
            t0 = bench_clock_ns();
        if (role == ROLE_START) {
            theirs.store(i, cuda::memory_order_relaxed);
            while (mine.load(cuda::memory_order_relaxed) != i)
                ;
        } else {
            while (mine.load(cuda::memory_order_relaxed) != i)
                ;
            theirs.store(i, cuda::memory_order_relaxed);
        }
    }
    *ns = bench_clock_ns() - t0;
}

template <bool SPREAD>
__global__ void raw_fadd_kernel(unsigned long long *ctr, int role, long warmup, long iters,
                                unsigned long long *ns, long *sink)
{
    unsigned long long t0 = bench_clock_ns(), old = 0;

    unsigned long long *peer =
        role == ROLE_START ? (unsigned long long *)peer_ptr(ctr, start_peer) : NULL;
    if (peer == NULL)
        return;
    for (long i = 0; i < warmup + iters; i++) {
        if (i == warmup)
            t0 = bench_clock_ns();
        size_t at = SPREAD ? (size_t)(i % FADD_SPREAD) * FADD_SPREAD_STRIDE : 0;
        old = sys_ull(peer[at + (old >> 62)]).fetch_add(1, cuda::memory_order_relaxed);
    }
    *ns = bench_clock_ns() - t0;
    *sink = (long)old;
}

/* As signal_kernel; the receiver checks that the data came with each
 * signal, and counts what did not in *bad. ORDER: RAW_FENCE a system fence
 * and a relaxed add, RAW_RELEASE a release add (the fence in the add),
 * RAW_UNORDERED nothing that orders them. */
enum { RAW_UNORDERED, RAW_FENCE, RAW_RELEASE };
template <int ORDER>
__global__ void raw_signal_kernel(uint64_t *sig, long *data, int role, long warmup, long iters,
                                  unsigned long long *ns, long *bad)
{
    unsigned long long t0 = bench_clock_ns();

    int peer = role == ROLE_START ? start_peer : 0;
    volatile long *their_data =
        role == ROLE_IDLE ? NULL : (volatile long *)peer_ptr(&data[0], peer);
    unsigned long long *their_sig_p =
        role == ROLE_IDLE ? NULL : (unsigned long long *)peer_ptr(sig, peer);
    if (their_data == NULL || their_sig_p == NULL)
        return;
    sys_ull my_sig(*(unsigned long long *)sig);
    long wrong = 0;
    for (long i = 1; i <= warmup + iters; i++) {
        if (i == warmup + 1)
            t0 = bench_clock_ns();
        if (role == ROLE_ANSWER) {
            while (my_sig.load(cuda::memory_order_acquire) < (unsigned long long)i)
                ;
            wrong += data[0] != i;
        }
        *their_data = i;
        if (ORDER == RAW_FENCE)
            __threadfence_system();
        /* One-way, as a signal's add is: no old value comes back. */
        if (ORDER == RAW_RELEASE)
            asm volatile("red.release.sys.global.add.u64 [%0], %1;"
                         :
                         : "l"(their_sig_p), "l"(1ull)
                         : "memory");
        else
            asm volatile("red.relaxed.sys.global.add.u64 [%0], %1;"
                         :
                         : "l"(their_sig_p), "l"(1ull)
                         : "memory");
        if (role == ROLE_START) {
            while (my_sig.load(cuda::memory_order_acquire) < (unsigned long long)i)
                ;
            wrong += data[0] != i;
        }
    }
    *ns = bench_clock_ns() - t0;
    *bad = wrong;
}

/* Every PE: one round, as ushmem's device barrier up to 16 PEs is. The
 * fence orders what came before (here, the last round's stores) and each
 * count is a relaxed store after it. */
__global__ void raw_barrier_kernel(unsigned long long *bflags, int me, int npes, long warmup,
                                   long iters, unsigned long long *ns)
{
    unsigned long long t0 = bench_clock_ns();

    for (long i = 1; i <= warmup + iters; i++) {
        if (i == warmup + 1)
            t0 = bench_clock_ns();
        __threadfence_system();
        for (int d = 1; d < npes; d++) {
            unsigned long long *peer = (unsigned long long *)peer_ptr(bflags, (me + d) % npes);
            sys_ull(peer[me]).store((unsigned long long)i, cuda::memory_order_relaxed);
        }
        for (int pe = 0; pe < npes; pe++)
            while (pe != me &&
                   sys_ull(bflags[pe]).load(cuda::memory_order_acquire) < (unsigned long long)i)
                ;
    }
    *ns = bench_clock_ns() - t0;
}

/* Every PE: the round's number set into its word on every other PE by the
 * library's signal, then every other PE's word here waited for. */
__global__ void signal_barrier_kernel(unsigned long long *bflags, int me, int npes, long warmup,
                                      long iters, unsigned long long *ns)
{
    unsigned long long t0 = bench_clock_ns();
    uint64_t *words = (uint64_t *)bflags;

    for (long i = 1; i <= warmup + iters; i++) {
        if (i == warmup + 1)
            t0 = bench_clock_ns();
        for (int d = 1; d < npes; d++)
            B_signal_set(&words[me], (uint64_t)i, (me + d) % npes);
        for (int pe = 0; pe < npes; pe++)
            if (pe != me)
                B_signal_wait_until(&words[pe], B_CMP_GE, (uint64_t)i);
    }
    *ns = bench_clock_ns() - t0;
    B_quiet();
}

/* *unreached: how many other PEs' flags this PE has no address of. */
__global__ void reach_kernel(unsigned long long *bflags, int me, int npes, long *unreached)
{
    long n = 0;

    for (int pe = 0; pe < npes; pe++)
        n += pe != me && peer_ptr(bflags, pe) == NULL;
    *unreached = n;
}

/* Whether this build has a stream-ordered barrier. */
static int have_barrier_stream(void)
{
#if defined(BENCH_NVSHMEM) || defined(USHMEMX_HAVE_ON_STREAM)
    return 1;
#else
    return 0;
#endif
}

static void barrier_on_stream(cudaStream_t stream)
{
#if defined(BENCH_NVSHMEM)
    nvshmemx_barrier_all_on_stream(stream);
#elif defined(USHMEMX_HAVE_ON_STREAM)
    shmemx_barrier_all_on_stream((CUstream)stream);
#else
    (void)stream;
#endif
}

__global__ void empty_kernel(void) {}

static void launch_empty(cudaStream_t stream)
{
    empty_kernel<<<1, 32, 0, stream>>>();
}

/* Microseconds per call of issue(stream) in a host loop (barrier_all_on_stream
 * or an empty launch), from events on the stream around the timed part;
 * *host_us: what issuing one call took the host (when it is close to the
 * result, the host's issue rate bounds it). */
static double time_stream_loop(void (*issue)(cudaStream_t), cudaStream_t stream, long warmup,
                               long iters, double *host_us)
{
    cudaEvent_t start, stop;
    float ms = 0;

    BENCH_CUDA(cudaEventCreate(&start));
    BENCH_CUDA(cudaEventCreate(&stop));
    for (long i = 0; i < warmup; i++)
        issue(stream);
    BENCH_CUDA(cudaStreamSynchronize(stream));
    BENCH_CUDA(cudaEventRecord(start, stream));
    double t0 = bench_host_seconds();
    for (long i = 0; i < iters; i++)
        issue(stream);
    *host_us = (bench_host_seconds() - t0) * 1e6 / (double)iters;
    BENCH_CUDA(cudaEventRecord(stop, stream));
    BENCH_CUDA(cudaEventSynchronize(stop));
    BENCH_CUDA(cudaGetLastError());
    BENCH_CUDA(cudaEventElapsedTime(&ms, start, stop));
    BENCH_CUDA(cudaEventDestroy(start));
    BENCH_CUDA(cudaEventDestroy(stop));
    return (double)ms * 1e3 / (double)iters;
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: dev_latency [options]\n"
            "  --op LIST     comma-separated ops from " OP_LIST " (default all)\n"
            "  --iters N     timed iterations of every op (default %d, barriers %d)\n"
            "  --warmup N    untimed iterations first (default a tenth of the iterations)\n"
            "  --reps R      time every op R times (up to %d), print the median (default 1)\n"
            "  --idle-us LIST  one operation of p, g, fadd, signal(_set), barrier (and the raw\n"
            "                p, fadd, signal, barrier) after PE 0 slept\n"
            "                each of these microseconds (up to %d values; 0: back to back)\n"
            "  --idle-reps N launches per op and idle time (default 15, up to %d)\n"
            "  --idle-how H  sleep (PE 0's host sleeps; default), compute (a kernel spins\n"
            "                that long on PE 0's GPU first: rows <op>_busy<T>) or spin (PE 0's\n"
            "                host spins, its GPU idle: rows <op>_spin<T>)\n"
            "  --idle-cpu S  the process's CPU share over S idle seconds at the end\n"
            "  --self        PE 0 targets itself, nobody answers (p, signal: one hop a round;\n"
            "                runs at 1 PE: a PE's requests to itself, e.g. through its proxy)\n",
            ITERS_P2P, ITERS_BARRIER, MAX_REPS, MAX_IDLE, MAX_REPS);
}

static const char *const op_names[] = {"p",          "g",          "fadd",       "signal",
                                       "barrier",    "barrier_stream", "raw_p", "raw_fadd",
                                       "raw_signal", "raw_launch", "raw_barrier", "sync",
                                       "raw_signal_unordered", "raw_signal_release", "fadd_spread",
                                       "raw_fadd_spread", "signal_set", "signal_barrier"};
#define NOPS 18
#define OP_FADD 2
#define OP_BARRIER 4
#define OP_BARRIER_STREAM 5
#define OP_RAW_FADD 7
#define OP_RAW_SIGNAL 8
#define OP_RAW_LAUNCH 9
#define OP_RAW_BARRIER 10
#define OP_SYNC 11
#define OP_RAW_SIGNAL_UNORDERED 12
#define OP_RAW_SIGNAL_RELEASE 13
#define OP_FADD_SPREAD 14
#define OP_SIGNAL_SET 16
#define OP_RAW_FADD_SPREAD 15
#define OP_SIGNAL_BARRIER 17

/* Ops every PE takes part in, timed per operation. */
static int is_barrier_op(int k)
{
    return k == OP_BARRIER || k == OP_BARRIER_STREAM || k == OP_RAW_LAUNCH ||
           k == OP_RAW_BARRIER || k == OP_SYNC || k == OP_SIGNAL_BARRIER;
}

/* What one timed run of an op needs. */
struct run {
    struct sym *s;
    unsigned long long *ns_d;
    long *sink_d;
    cudaStream_t stream;
    int me, npes, role;
};

/* One timed run of op k from zeroed words: sets *us (0 when the op has no
 * address of a peer's heap here, n/a) and *host_us (stream ops); returns
 * the number of wrong results this PE saw. */
static long time_op(const struct run *r, int k, long warmup, long iters, double *us,
                    double *host_us)
{
    struct sym *s = r->s;
    unsigned long long ns = 0;
    long bad = 0;
    int role = r->role, me = r->me, npes = r->npes;
    unsigned long long *ns_d = r->ns_d;
    long *sink_d = r->sink_d;

    BENCH_CUDA(cudaMemset(s->flag, 0, sizeof(long)));
    BENCH_CUDA(cudaMemset(s->gvar, 0, G_LINES * G_LINE_LONGS * sizeof(long)));
    BENCH_CUDA(cudaMemset(s->ctr, 0, FADD_SPREAD * FADD_SPREAD_STRIDE * sizeof(unsigned long long)));
    BENCH_CUDA(cudaMemset(s->sig, 0, sizeof(uint64_t)));
    BENCH_CUDA(cudaMemset(s->data, 0, 2 * sizeof(long)));
    BENCH_CUDA(cudaMemset(s->bflags, 0, (size_t)npes * sizeof(unsigned long long)));
    BENCH_CUDA(cudaMemset(ns_d, 0, sizeof(*ns_d)));
    BENCH_CUDA(cudaMemset(sink_d, 0, sizeof(*sink_d)));
    BENCH_CUDA(cudaDeviceSynchronize());
    bench_barrier_all();

    *host_us = 0;
    if (idle_before_launch_us > 0 && me == 0 && idle_how == IDLE_COMPUTE) {
        busy_kernel<<<1, 1, 0, r->stream>>>((unsigned long long)idle_before_launch_us * 1000);
        BENCH_CUDA(cudaGetLastError());
    } else if (idle_before_launch_us > 0 && me == 0 && idle_how == IDLE_SPIN) {
        double until = bench_host_seconds() + (double)idle_before_launch_us * 1e-6;
        while (bench_host_seconds() < until)
            ;
    } else if (idle_before_launch_us > 0 && me == 0) {
        struct timespec ts = {idle_before_launch_us / 1000000,
                              (idle_before_launch_us % 1000000) * 1000};
        nanosleep(&ts, NULL);
    }
    if (k == OP_RAW_BARRIER) {
        /* Every PE must reach every other, or none runs the loop (n/a). */
        long unreached = 0;
        reach_kernel<<<1, 1>>>(s->bflags, me, npes, sink_d);
        BENCH_CUDA(cudaGetLastError());
        BENCH_CUDA(cudaMemcpy(&unreached, sink_d, sizeof(unreached), cudaMemcpyDeviceToHost));
        if (bench_total_errors(s->counts, unreached) != 0) {
            *us = 0;
            return 0;
        }
    }
    if (k == OP_BARRIER_STREAM) {
        *us = time_stream_loop(barrier_on_stream, r->stream, warmup, iters, host_us);
    } else if (k == OP_RAW_LAUNCH) {
        *us = time_stream_loop(launch_empty, r->stream, warmup, iters, host_us);
    } else {
        void *args_p[] = {&s->flag, &role, &warmup, &iters, &ns_d};
        void *args_g[] = {&s->gvar, &role, &warmup, &iters, &ns_d, &sink_d};
        void *args_f[] = {&s->ctr, &role, &warmup, &iters, &ns_d, &sink_d};
        void *args_s[] = {&s->sig, &s->data, &role, &warmup, &iters, &ns_d};
        void *args_b[] = {&warmup, &iters, &ns_d};
        void *args_rs[] = {&s->sig, &s->data, &role, &warmup, &iters, &ns_d, &sink_d};
        void *args_rb[] = {&s->bflags, &me, &npes, &warmup, &iters, &ns_d};
        static const void *const fns[NOPS] = {
            (const void *)p_kernel,       (const void *)g_kernel,
            (const void *)fadd_kernel<false>, (const void *)signal_kernel<false>,
            (const void *)barrier_kernel<false>, NULL,
            (const void *)raw_p_kernel,   (const void *)raw_fadd_kernel<false>,
            (const void *)raw_signal_kernel<RAW_FENCE>, NULL,
            (const void *)raw_barrier_kernel, (const void *)barrier_kernel<true>,
            (const void *)raw_signal_kernel<RAW_UNORDERED>,
            (const void *)raw_signal_kernel<RAW_RELEASE>,
            (const void *)fadd_kernel<true>, (const void *)raw_fadd_kernel<true>,
            (const void *)signal_kernel<true>, (const void *)signal_barrier_kernel};
        void **args[NOPS] = {args_p,  args_g, args_f,  args_s, args_b,  NULL,
                             args_p,  args_f, args_rs, NULL,   args_rb, args_b,
                             args_rs, args_rs, args_f, args_f, args_s, args_rb};
        /* Half a round trip for the ping-pongs, one operation otherwise. */
        static const double per_iter[NOPS] = {2, 1, 1, 2, 1, 0, 2, 1, 2, 0, 1, 1, 2, 2, 1, 1, 2, 1};

        bench_launch(fns[k], dim3(1), dim3(1), args[k], r->stream, 1);
        BENCH_CUDA(cudaStreamSynchronize(r->stream));
        BENCH_CUDA(cudaMemcpy(&ns, ns_d, sizeof(ns), cudaMemcpyDeviceToHost));
        *us = (double)ns / 1e3 / (double)iters / (self_target ? 1 : per_iter[k]);
    }
    bench_barrier_all();

    /* The raw signal's receivers count data that came late: wrong with the
     * fence, only reported without it. */
    if ((k == OP_RAW_SIGNAL || k == OP_RAW_SIGNAL_UNORDERED || k == OP_RAW_SIGNAL_RELEASE) &&
        role != ROLE_IDLE) {
        long late = 0;
        BENCH_CUDA(cudaMemcpy(&late, sink_d, sizeof(late), cudaMemcpyDeviceToHost));
        if (late != 0 && k == OP_RAW_SIGNAL_UNORDERED) {
            fprintf(stderr, "PE %d: raw_signal_unordered: %ld signals arrived before their data\n",
                    me, late);
        } else if (late != 0) {
            fprintf(stderr, "PE %d: %s: %ld signals arrived before their data\n", me,
                    op_names[k], late);
            bad++;
        }
    }
    /* Every fetch-add must have landed on PE 1 exactly once. */
    if ((k == OP_FADD || k == OP_RAW_FADD || k == OP_FADD_SPREAD || k == OP_RAW_FADD_SPREAD) &&
        me == (self_target ? 0 : 1)) {
        unsigned long long got = 0, c;
        for (int j = 0; j < FADD_SPREAD; j++) {
            BENCH_CUDA(cudaMemcpy(&c, s->ctr + (size_t)j * FADD_SPREAD_STRIDE, sizeof(c),
                                  cudaMemcpyDeviceToHost));
            got += c;
        }
        if (got != (unsigned long long)(warmup + iters)) {
            fprintf(stderr, "PE %d: %s counters add up to %llu, expected %ld\n", me,
                    op_names[k], got, warmup + iters);
            bad++;
        }
    }
    /* Every other PE's count reached the last round here. */
    if ((k == OP_RAW_BARRIER || k == OP_SIGNAL_BARRIER) && *us > 0) {
        unsigned long long *f = (unsigned long long *)malloc((size_t)npes * sizeof(*f));
        if (f == NULL) {
            fprintf(stderr, "PE %d: out of memory\n", me);
            bench_abort(1);
        }
        BENCH_CUDA(cudaMemcpy(f, s->bflags, (size_t)npes * sizeof(*f), cudaMemcpyDeviceToHost));
        for (int pe = 0; pe < npes; pe++)
            if (pe != me && f[pe] != (unsigned long long)(warmup + iters)) {
                fprintf(stderr, "PE %d: %s: PE %d's count is %llu, expected %ld\n", me, op_names[k],
                        pe, f[pe], warmup + iters);
                bad++;
            }
        free(f);
    }
    return bad;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* "0,1000,10000": up to MAX_IDLE counts. */
static int parse_idle_list(const char *list, long *out, long *n)
{
    char buf[256];
    if (strlen(list) >= sizeof(buf))
        return -1;
    strcpy(buf, list);
    *n = 0;
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok != NULL;
         tok = strtok_r(NULL, ",", &save)) {
        if (*n == MAX_IDLE || bench_parse_count(tok, &out[*n]) != 0 || out[*n] < 0 ||
            out[*n] > 10 * 1000 * 1000)
            return -1;
        (*n)++;
    }
    return *n > 0 ? 0 : -1;
}

static double cpu_seconds(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
}

/* --idle-us: rows <op>_idle<T> for the ops of want[] that a library call
 * serves. Returns 1 when some run saw a wrong result. */
static int time_after_idle(struct run *r, const int *want, const long *idle_us, long n_idle,
                           long reps)
{
    static const int ops[] = {0 /* p */,   1 /* g */,   OP_FADD,       3 /* signal */,
                              OP_SIGNAL_SET, OP_BARRIER, 6 /* raw_p */, OP_RAW_FADD,
                              OP_RAW_SIGNAL, OP_RAW_BARRIER};
    double us[MAX_REPS], host_us;

    /* The sleeps are what is asked, not up to the default 50 us later. */
    prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
    for (size_t j = 0; j < sizeof(ops) / sizeof(ops[0]); j++) {
        int k = ops[j];
        if (!want[k] || (k != OP_BARRIER && k != OP_RAW_BARRIER && r->npes < 2 && !self_target))
            continue;
        for (long t = 0; t < n_idle; t++) {
            long bad = 0;
            idle_before_launch_us = idle_us[t];
            for (long rep = 0; rep < reps; rep++)
                bad += time_op(r, k, 0, 1, &us[rep], &host_us);
            idle_before_launch_us = 0;
            if (bench_total_errors(r->s->counts, bad) != 0) {
                if (r->me == 0)
                    printf("FAIL: %s after %ld us idle\n", op_names[k], idle_us[t]);
                return 1;
            }
            if (r->me != 0)
                continue;
            static const char *const tags[] = {"idle", "busy", "spin"};
            static const char *const hows[] = {"slept", "computed (a kernel spinning on its GPU)",
                                               "spun (its host busy, its GPU idle)"};
            const char *tag = tags[idle_how];
            if (us[0] == 0) {
                printf("# %s_%s%ld: n/a\n", op_names[k], tag, idle_us[t]);
                continue;
            }
            qsort(us, (size_t)reps, sizeof(us[0]), cmp_double);
            double med = reps % 2 ? us[reps / 2] : (us[reps / 2 - 1] + us[reps / 2]) / 2;
            printf("# %s_%s%ld: one op after PE 0 %s %ld us, median of %ld launches, "
                   "lowest %.3f, highest %.3f\n%s_%s%ld,%.3f\n",
                   op_names[k], tag, idle_us[t],
                   hows[idle_how],
                   idle_us[t], reps, us[0], us[reps - 1], op_names[k], tag, idle_us[t], med);
            fflush(stdout);
        }
    }
    return 0;
}

/* --idle-cpu: every PE's process CPU share over `seconds` of sleeping. */
static void idle_cpu(const struct run *r, long seconds)
{
    long *host = (long *)calloc((size_t)r->npes, sizeof(long));
    if (host == NULL) {
        fprintf(stderr, "PE %d: out of memory\n", r->me);
        bench_abort(1);
    }
    BENCH_CUDA(cudaDeviceSynchronize());
    bench_barrier_all();
    double c0 = cpu_seconds(), t0 = bench_host_seconds();
    struct timespec ts = {seconds, 0};
    nanosleep(&ts, NULL);
    double pct = (cpu_seconds() - c0) / (bench_host_seconds() - t0) * 100.0;
    /* Every PE's share, in tenths of a percent, lands in every PE's counts. */
    (void)bench_total_errors(r->s->counts, (long)(pct * 10.0 + 0.5));
    BENCH_CUDA(cudaMemcpy(host, r->s->counts, (size_t)r->npes * sizeof(long),
                          cudaMemcpyDeviceToHost));
    if (r->me == 0) {
        printf("# idle_cpu_pct: CPU time of the process over %ld s in which its main thread "
               "slept, percent of one core; every PE's:", seconds);
        for (int pe = 0; pe < r->npes; pe++)
            printf(" %.1f", (double)host[pe] / 10.0);
        printf("\nidle_cpu_pct,%.1f\n", pct);
        fflush(stdout);
    }
    free(host);
    bench_barrier_all();
}

int main(int argc, char **argv)
{
    int want[NOPS], failed = 0;
    long iters_opt = -1, warmup_opt = -1, reps = 1;
    long idle_us[MAX_IDLE], n_idle = 0, idle_reps = 15, idle_cpu_s = 0;
    struct sym s;
    struct run r;
    const char *ops = OP_LIST;

    for (int i = 1; i < argc; i++) {
        const char *v;
        int bad = 0;

        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        } else if ((v = bench_opt(argc, argv, &i, "--op")) != NULL) {
            ops = v;
        } else if ((v = bench_opt(argc, argv, &i, "--iters")) != NULL) {
            bad = bench_parse_count(v, &iters_opt) != 0 || iters_opt < 1;
        } else if ((v = bench_opt(argc, argv, &i, "--warmup")) != NULL) {
            bad = bench_parse_count(v, &warmup_opt) != 0;
        } else if ((v = bench_opt(argc, argv, &i, "--reps")) != NULL) {
            bad = bench_parse_count(v, &reps) != 0 || reps < 1 || reps > MAX_REPS;
        } else if ((v = bench_opt(argc, argv, &i, "--idle-us")) != NULL) {
            bad = parse_idle_list(v, idle_us, &n_idle) != 0;
        } else if ((v = bench_opt(argc, argv, &i, "--idle-reps")) != NULL) {
            bad = bench_parse_count(v, &idle_reps) != 0 || idle_reps < 1 || idle_reps > MAX_REPS;
        } else if ((v = bench_opt(argc, argv, &i, "--idle-how")) != NULL) {
            idle_how = strcmp(v, "compute") == 0 ? IDLE_COMPUTE
                       : strcmp(v, "spin") == 0  ? IDLE_SPIN
                                                 : IDLE_SLEEP;
            bad = idle_how == IDLE_SLEEP && strcmp(v, "sleep") != 0;
        } else if (strcmp(argv[i], "--self") == 0) {
            self_target = 1;
        } else if ((v = bench_opt(argc, argv, &i, "--idle-cpu")) != NULL) {
            bad = bench_parse_count(v, &idle_cpu_s) != 0 || idle_cpu_s < 1 || idle_cpu_s > 3600;
        } else {
            bad = 1;
            v = argv[i];
        }
        if (bad) {
            fprintf(stderr, "dev_latency: bad option or value near '%s'\n", v);
            usage(stderr);
            return 2;
        }
    }
    if (bench_parse_names(ops, op_names, NOPS, want) != 0) {
        fprintf(stderr, "dev_latency: --op takes a comma-separated list from " OP_LIST "\n");
        return 2;
    }

    bench_init(&argc, &argv);
    r.me = bench_my_pe();
    r.npes = bench_n_pes();
    r.role = r.me == 0 ? ROLE_START : r.me == 1 && !self_target ? ROLE_ANSWER : ROLE_IDLE;
    if (self_target) {
        int zero = 0;
        BENCH_CUDA(cudaMemcpyToSymbol(start_peer, &zero, sizeof(zero)));
    }
    r.s = &s;

    s.flag = (long *)bench_malloc(sizeof(long));
    s.gvar = (long *)bench_malloc(G_LINES * G_LINE_LONGS * sizeof(long));
    s.ctr = (unsigned long long *)bench_malloc(FADD_SPREAD * FADD_SPREAD_STRIDE *
                                               sizeof(unsigned long long));
    s.sig = (uint64_t *)bench_malloc(sizeof(uint64_t));
    s.data = (long *)bench_malloc(2 * sizeof(long));
    s.bflags = (unsigned long long *)bench_malloc((size_t)r.npes * sizeof(unsigned long long));
    s.counts = (long *)bench_malloc((size_t)r.npes * sizeof(long));
    BENCH_CUDA(cudaMalloc((void **)&r.ns_d, sizeof(*r.ns_d)));
    BENCH_CUDA(cudaMalloc((void **)&r.sink_d, sizeof(*r.sink_d)));
    BENCH_CUDA(cudaStreamCreateWithFlags(&r.stream, cudaStreamNonBlocking));

    if (r.me == 0) {
        printf("# dev_latency,%s,%d\n", BENCH_IMPL, r.npes);
        if (self_target)
            printf("# --self: PE 0 targets itself and nobody answers; p and signal are one "
                   "hop a round, not half of a ping-pong\n");
        printf("op,latency_us\n");
        fflush(stdout);
    }

    for (int k = 0; k < NOPS && !failed; k++) {
        long iters = iters_opt > 0 ? iters_opt : is_barrier_op(k) ? ITERS_BARRIER : ITERS_P2P;
        long warmup = warmup_opt >= 0 ? warmup_opt : iters / 10;
        long bad = 0;
        double us[MAX_REPS], host_us[MAX_REPS];
        static const char *const hows[NOPS] = {
            "long_p ping-pong, half round trip",
            "long_g chained, per read, each from a line not read before",
            "ulonglong_atomic_fetch_add chained, per op",
            "putmem_signal 8 B ping-pong, half round trip",
            "device barrier_all in a 1-thread kernel, per barrier",
            "host loop of barrier_all_on_stream, per barrier",
            "no library: relaxed store / relaxed poll ping-pong, half round trip",
            "no library: atom.add.relaxed.sys chained, per op",
            "no library: store, fence.sc.sys, red.relaxed.sys.add / acquire poll ping-pong, "
            "half round trip",
            "no library: host loop of empty one-warp kernel launches, per launch",
            "no library: 1-thread kernel, fence.sc.sys, relaxed store to every other PE, "
            "acquire poll, per barrier",
            "device sync_all in a 1-thread kernel, per sync",
            "no library, not a signal: store, red.relaxed.sys.add with no fence / acquire "
            "poll ping-pong, half round trip",
            "no library: store, red.release.sys.add / acquire poll ping-pong, half round trip",
            "ulonglong_atomic_fetch_add chained over 64 counters 4 KiB apart, per op",
            "no library: atom.add.relaxed.sys chained over 64 counters 4 KiB apart, per op",
            "putmem_signal 8 B ping-pong, signal set, half round trip"};

        if (!want[k])
            continue;
        if (!is_barrier_op(k) && r.npes < 2 && !self_target) {
            if (r.me == 0)
                printf("# %s: n/a (needs 2 PEs)\n", op_names[k]);
            continue;
        }
        if (k == OP_BARRIER_STREAM && !have_barrier_stream()) {
            if (r.me == 0)
                printf("# %s: n/a (%s has no shmemx_barrier_all_on_stream)\n", op_names[k],
                       BENCH_IMPL);
            continue;
        }
        for (long rep = 0; rep < reps; rep++)
            bad += time_op(&r, k, warmup, iters, &us[rep], &host_us[rep]);
        if (bench_total_errors(s.counts, bad) != 0) {
            failed = 1;
            if (r.me == 0)
                printf("FAIL: %s\n", op_names[k]);
        } else if (r.me == 0 && us[0] == 0) {
            printf("# %s: n/a (%s's ptr gives no address of a peer's heap here)\n",
                   op_names[k], BENCH_IMPL);
        } else if (r.me == 0) {
            double lo, hi, med, host_med;
            qsort(us, (size_t)reps, sizeof(us[0]), cmp_double);
            qsort(host_us, (size_t)reps, sizeof(host_us[0]), cmp_double);
            lo = us[0];
            hi = us[reps - 1];
            med = reps % 2 ? us[reps / 2] : (us[reps / 2 - 1] + us[reps / 2]) / 2;
            host_med = reps % 2 ? host_us[reps / 2]
                                : (host_us[reps / 2 - 1] + host_us[reps / 2]) / 2;
            printf("# %s: %s, %ld iterations after %ld warm-up", op_names[k], hows[k], iters,
                   warmup);
            if (reps > 1)
                printf("; median of %ld runs, lowest %.3f, highest %.3f", reps, lo, hi);
            printf("\n%s,%.3f\n", op_names[k], med);
            if (k == OP_BARRIER_STREAM || k == OP_RAW_LAUNCH)
                printf("# %s: the host took %.3f us to issue each call%s\n", op_names[k],
                       host_med, reps > 1 ? " (median)" : "");
            fflush(stdout);
        }
    }

    if (!failed && n_idle > 0)
        failed = time_after_idle(&r, want, idle_us, n_idle, idle_reps);
    if (!failed && idle_cpu_s > 0)
        idle_cpu(&r, idle_cpu_s);
    BENCH_CUDA(cudaStreamDestroy(r.stream));
    BENCH_CUDA(cudaFree(r.sink_d));
    BENCH_CUDA(cudaFree(r.ns_d));
    bench_free(s.counts);
    bench_free(s.bflags);
    bench_free(s.data);
    bench_free(s.sig);
    bench_free(s.ctr);
    bench_free(s.gvar);
    bench_free(s.flag);
    bench_finalize();
    return failed ? 1 : 0;
}
