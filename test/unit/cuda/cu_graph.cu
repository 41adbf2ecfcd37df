/* The stream-ordered calls (shmemx_*_on_stream) captured into CUDA graphs
 * and replayed: each phase captures one sequence (cudaStreamBeginCapture ..
 * cudaStreamEndCapture, cudaGraphInstantiate), launches it REPLAYS times
 * and checks every byte on every PE after every replay.
 *
 * Every graph starts with a kernel that adds one to a replay counter in
 * device memory, and every kernel in it that writes data derives the bytes
 * from that counter: replay r sends bytes that no other replay sends, so a
 * replay that did nothing (a call done once at capture and then never
 * again) leaves the bytes of replay r - 1 and fails the check of replay r.
 * In each replay one PE in turn (r modulo the PE count) first waits about
 * 200 us, so that a barrier that let the others through early shows as
 * missing bytes. After each launch, outside the graph, a kernel checks
 * the replay's results against r; the host waits every SYNC_EVERY replays
 * only, so graphs also run back to back.
 *
 * Phases, each with its graph (sizes in bytes):
 *   putmem      fill, barrier, putmem to the next PE, quiet, barrier
 *               (4097, 1 MiB + 3)
 *   getmem      fill, barrier, getmem from the previous PE, barrier
 *   signal      reset the own signal, fill, barrier, putmem_signal to the
 *               next PE, signal_wait_until (EQ; GT) for the previous
 *               PE's, a copy of what arrived taken right after the wait
 *               (not after the closing barrier), barrier
 *   kernel-signal  the same with the put and signal from a kernel's
 *               ushmemx_putmem_signal_block (the device API's road), GE
 *   barrier     a kernel's ushmem_uint64_p into the next PE, barrier_all,
 *               a copy of the word the previous PE wrote, sync_all, and
 *               three barrier_all in a row
 *   alltoall    alltoallmem (4097; 8 MiB + 3, where outside graphs the
 *               own share is copied beside the stream)
 *   broadcast   broadcastmem from every root in turn
 *   fcollect    fcollectmem
 *   sum         int, long, float, double sum reductions in one graph, in
 *               place (the stream allocations are then part of the graph)
 *               and not, and a double sum reduce-scatter where the header
 *               has it; of 100003 elements (4097 the reduce-scatter) and
 *               of 1000 (each reduction not in place one kernel, up to 8
 *               PEs: src/host/stream.c)
 *   mixed       barriers, a put, an alltoall on the world reversed (a
 *               split team) and a sum in one graph, with stream barriers
 *               queued outside the graph between replays (0 to 2
 *               barrier_all, and a sync_all every second time), which
 *               must not disturb the captured ones
 *   device      no stream calls: kernels with the device API (puts, quiet,
 *               fetching atomics, ushmem_barrier_all) captured
 *   beside      20 graphs captured (global mode), launched and checked
 *               while a kernel on another stream makes 5000 blocking
 *               device calls: through the proxy, the proxy thread drives
 *               the device during the captures. With --device-only the
 *               graphs hold kernels only; device and beside are the
 *               phases --device-only runs, for roads where stream calls
 *               cannot be captured
 *
 * Options: -v progress; --device-only the device phase only; --refuse
 * put|barrier first captures that one call to the next PE, which a road
 * through the proxy thread must refuse at capture time, ending the job
 * with the refusal (scripts/gpu_run.sh checks the sentence); on a mapped
 * road it is captured, said, and the program goes on.
 *
 * Usage: oshrun -n N cu_graph [-v] [--device-only] [--refuse put|barrier];
 * exits 77 without a GPU. */
#include <shmem.h>
#include <shmemx.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <functional>

#include <ushmem/device.h>

#include "cu_check.cuh"

#define MAX_PES 16
#define REPLAYS 100
#define SYNC_EVERY 10
#define SMALL ((size_t)4097)
#define BIG (((size_t)1 << 20) + 3)
#define A2A_BIG (((size_t)8 << 20) + 3) /* past stream.c's STREAM_BESIDE_MIN */
#define SUM_COUNT ((size_t)100003)
#define SIG_VALUE 7

enum {
    K_PUT = 201,
    K_GET,
    K_SIG,
    K_KSIG,
    K_BAR,
    K_A2A,
    K_BC,
    K_FC,
    K_MIX,
    K_MIX_A2A,
    K_DEV,
};

#define WHAT_LIST(X)                                                                      \
    X(W_CTR, "replay counter after the graph (b: replay)")                               \
    X(W_PUT, "putmem_on_stream: bytes from PE a (b: replay)")                             \
    X(W_GET, "getmem_on_stream: bytes of PE a (b: replay)")                               \
    X(W_SIG, "bytes from PE a seen right after signal_wait_until_on_stream (b: replay)")  \
    X(W_SIG_DST, "putmem_signal destination after the graph, from PE a (b: replay)")      \
    X(W_BAR, "word PE a put before barrier_all_on_stream (b: replay)")                    \
    X(W_A2A, "alltoallmem_on_stream: block from PE a (b: replay)")                        \
    X(W_BC, "broadcastmem_on_stream: block of root a (b: replay)")                        \
    X(W_FC, "fcollectmem_on_stream: block from PE a (b: replay)")                         \
    X(W_SUM, "sum_reduce_on_stream element (a: type, b: replay)")                         \
    X(W_DEV_PUT, "device put from PE a in a captured kernel (b: replay)")                 \
    X(W_DEV_OLD, "fetch_add's old value in a captured kernel (b: replay)")                \
    X(W_DEV_CTR, "counter the previous PE added to (b: replay)")
#define WHAT_ENUM(name, text) name,
#define WHAT_TEXT(name, text) text,
enum { WHAT_LIST(WHAT_ENUM) W_COUNT };
static const char *const what_names[] = {WHAT_LIST(WHAT_TEXT)};

static struct cu_log *dlog;
static int me, npes, next_pe, prev_pe;
static uint64_t *ctr;          /* the replay counter: private device memory */
static unsigned char *src, *dst; /* symmetric, npes * A2A_BIG bytes each */
static unsigned char *snap;    /* private: what arrived, copied inside the graph */
static uint64_t *sig;          /* symmetric */
static uint64_t *words;        /* symmetric: MAX_PES + 2 words */
static uint64_t *dev_old;      /* private: a fetching atomic's result */
static shmem_team_t reversed = SHMEM_TEAM_INVALID;

/* ---- kernels ---- */

static unsigned blocks_for(size_t n)
{
    size_t b = (n + 255) / 256;
    return b == 0 ? 1 : b > 4096 ? 4096 : (unsigned)b;
}

__global__ void k_bump(uint64_t *c)
{
    *c += 1;
}

/* The slow PE of the replay waits about 200 us. */
__global__ void k_delay(const uint64_t *c, int my_pe, int n_pes)
{
    if ((int)(*c % (uint64_t)n_pes) != my_pe)
        return;
    for (int i = 0; i < 200; i++)
        __nanosleep(1000);
}

/* p[i] = byte i of the stream that (kind, from, to) has in this replay. */
__global__ void k_fill(unsigned char *p, size_t n, const uint64_t *c, int kind, int from, int to)
{
    uint64_t tag = cu_tag((uint64_t)kind, (uint64_t)from, (uint64_t)to, *c);
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

__global__ void k_check_word(struct cu_log *log, int what, int a, int b, const uint64_t *w,
                             uint64_t want)
{
    uint64_t got = *(const volatile uint64_t *)w;
    if (got != want)
        cu_dev_fail(log, what, a, b, 0, (long long)want, (long long)got);
}

__global__ void k_set_word(uint64_t *w, uint64_t v)
{
    *(volatile uint64_t *)w = v;
}

/* Device API inside the graph: this replay's word into the next PE. */
__global__ void k_put_word(uint64_t *slot, const uint64_t *c, int my_pe, int pe)
{
    ushmem_uint64_p(slot, *c * 1000 + (uint64_t)my_pe, pe);
    ushmem_quiet();
}

__global__ void k_copy_word(uint64_t *to, const uint64_t *from)
{
    *to = *(const volatile uint64_t *)from;
}

__global__ void k_put_signal(unsigned char *d, const unsigned char *s, size_t n, uint64_t *sg,
                             int pe)
{
    ushmemx_putmem_signal_block(d, s, n, sg, 1, USHMEM_SIGNAL_ADD, pe);
}

__global__ void k_dev_put(unsigned char *d, const unsigned char *s, size_t n, uint64_t *counter,
                          uint64_t *old, int pe)
{
    ushmemx_putmem_block(d, s, n, pe);
    ushmem_quiet();
    __syncthreads();
    if (threadIdx.x == 0)
        *old = ushmem_uint64_atomic_fetch_add(counter, 1, pe);
}

__global__ void k_dev_barrier(void)
{
    ushmem_barrier_all();
}

/* Sum sources: small values, so that every partial sum is exact in float
 * and no integer overflows, and the expected sum does not depend on the
 * order of the additions. */
template <typename T> __host__ __device__ static inline T sum_val(int pe, size_t i, uint64_t r)
{
    return (T)((double)((pe + 1) % 7) * 0.5 + (double)(i % 1013) + (double)(r % 4096));
}

template <typename T> __global__ void k_fill_sum(T *p, size_t n, const uint64_t *c, int pe)
{
    uint64_t r = *c;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        p[i] = sum_val<T>(pe, i, r);
}

/* p[i] must be the sum over the PEs of their element first + i. */
template <typename T>
__global__ void k_verify_sum(struct cu_log *log, int type, const T *p, size_t n, size_t first,
                             int n_pes, uint64_t r)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        T want = sum_val<T>(0, first + i, r);
        for (int m = 1; m < n_pes; m++)
            want = (T)(want + sum_val<T>(m, first + i, r));
        if (p[i] != want)
            cu_dev_fail(log, W_SUM, type, (int)r, (long long)i, (long long)want,
                        (long long)p[i]);
    }
}

/* ---- helpers ---- */

#define LAUNCHED() CU_CHECK(cudaGetLastError())

static uint64_t tag_of(int kind, int from, int to, uint64_t r)
{
    return cu_tag((uint64_t)kind, (uint64_t)from, (uint64_t)to, r);
}

static void fill(unsigned char *p, size_t n, int kind, int from, int to)
{
    k_fill<<<blocks_for(n), 256, 0, cu.stream>>>(p, n, ctr, kind, from, to);
    LAUNCHED();
}

static void verify(int what, int a, uint64_t r, const unsigned char *p, size_t n, uint64_t tag)
{
    k_verify<<<blocks_for(n), 256, 0, cu.stream>>>(dlog, what, a, (int)r, p, n, tag);
    LAUNCHED();
}

static void check_word(int what, int a, uint64_t r, const uint64_t *w, uint64_t want)
{
    k_check_word<<<1, 1, 0, cu.stream>>>(dlog, what, a, (int)r, w, want);
    LAUNCHED();
}

/* Captures body (after the replay counter's kernel) into a graph, then
 * launches it REPLAYS times; after launch r, check(r) queues the checks of
 * replay r. `between(r)`, when given, queues work outside the graph before
 * launch r. */
static void replay(const char *name, const std::function<void()> &body,
                   const std::function<void(uint64_t)> &check,
                   const std::function<void(uint64_t)> &between = nullptr,
                   cudaStreamCaptureMode mode = cudaStreamCaptureModeGlobal)
{
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    unsigned long long seen = 0;
    int first_bad = 0;

    cu_phase_begin(name);
    CU_CHECK(cudaMemset(ctr, 0, sizeof(*ctr)));
    CU_CHECK(cudaDeviceSynchronize());
    shmem_barrier_all();
    CU_CHECK(cudaStreamBeginCapture(cu.stream, mode));
    k_bump<<<1, 1, 0, cu.stream>>>(ctr);
    LAUNCHED();
    k_delay<<<1, 1, 0, cu.stream>>>(ctr, me, npes);
    LAUNCHED();
    body();
    CU_CHECK(cudaStreamEndCapture(cu.stream, &graph));
    CU_CHECK(cudaGraphInstantiate(&exec, graph, 0));
    for (uint64_t r = 1; r <= REPLAYS; r++) {
        if (between)
            between(r);
        CU_CHECK(cudaGraphLaunch(exec, cu.stream));
        check_word(W_CTR, 0, r, ctr, r);
        check(r);
        if (r % SYNC_EVERY == 0 || r == REPLAYS) {
            cu_wait(name);
            cu_log_report(dlog, what_names, W_COUNT);
            if (cu.errors > seen && first_bad == 0)
                first_bad = (int)(r > SYNC_EVERY ? r - SYNC_EVERY + 1 : 1);
            seen = cu.errors;
        }
    }
    if (first_bad != 0)
        fprintf(stderr, "PE %d: phase %s: first wrong results in replays %d to %d (each line "
                        "above gives its replay as b)\n",
                cu.me, name, first_bad, first_bad + SYNC_EVERY - 1);
    else if (cu.verbose)
        printf("PE %d: phase %s: %d replays checked\n", me, name, REPLAYS);
    CU_CHECK(cudaGraphExecDestroy(exec));
    CU_CHECK(cudaGraphDestroy(graph));
    cu_phase_end();
}

/* ---- phases ---- */

static void phase_put(size_t n)
{
    static char name[96];
    snprintf(name, sizeof(name), "putmem %zu B", n);
    replay(
        name,
        [n] {
            fill(src, n, K_PUT, me, next_pe);
            shmemx_barrier_all_on_stream(cu.stream);
            shmemx_putmem_on_stream(dst, src, n, next_pe, cu.stream);
            shmemx_quiet_on_stream(cu.stream);
            shmemx_barrier_all_on_stream(cu.stream);
        },
        [n](uint64_t r) { verify(W_PUT, prev_pe, r, dst, n, tag_of(K_PUT, prev_pe, me, r)); });
}

static void phase_get(size_t n)
{
    static char name[96];
    snprintf(name, sizeof(name), "getmem %zu B", n);
    replay(
        name,
        [n] {
            fill(src, n, K_GET, me, -1);
            shmemx_barrier_all_on_stream(cu.stream);
            shmemx_getmem_on_stream(dst, src, n, prev_pe, cu.stream);
            /* prev refills its source only after this PE's get */
            shmemx_barrier_all_on_stream(cu.stream);
        },
        [n](uint64_t r) { verify(W_GET, prev_pe, r, dst, n, tag_of(K_GET, prev_pe, -1, r)); });
}

/* The signal is reset before the opening barrier: the previous PE sets it
 * only after that barrier, and the reset of the next replay comes after
 * this replay's wait. The copy right after the wait shows what the wait
 * alone made visible. */
static void phase_signal(size_t n, int cmp, bool from_kernel)
{
    static char name[96];
    static const char *const cmps[] = {"EQ", "NE", "GT", "GE"};
    snprintf(name, sizeof(name), "%s %zu B, wait %s",
             from_kernel ? "kernel putmem_signal" : "putmem_signal", n, cmps[cmp]);
    /* A kernel adds 1; the stream sets SIG_VALUE. */
    uint64_t sent = from_kernel ? 1 : SIG_VALUE;
    uint64_t wait_for = cmp == SHMEM_CMP_GT ? sent - 1 : sent;
    int kind = from_kernel ? K_KSIG : K_SIG;
    replay(
        name,
        [=] {
            k_set_word<<<1, 1, 0, cu.stream>>>(sig, 0);
            LAUNCHED();
            fill(src, n, kind, me, next_pe);
            shmemx_barrier_all_on_stream(cu.stream);
            if (from_kernel) {
                k_put_signal<<<1, 256, 0, cu.stream>>>(dst, src, n, sig, next_pe);
                LAUNCHED();
            } else {
                shmemx_putmem_signal_on_stream(dst, src, n, sig, sent, SHMEM_SIGNAL_SET,
                                               next_pe, cu.stream);
            }
            shmemx_signal_wait_until_on_stream(sig, cmp, wait_for, cu.stream);
            CU_CHECK(cudaMemcpyAsync(snap, dst, n, cudaMemcpyDeviceToDevice, cu.stream));
            shmemx_barrier_all_on_stream(cu.stream);
        },
        [=](uint64_t r) {
            verify(W_SIG, prev_pe, r, snap, n, tag_of(kind, prev_pe, me, r));
            verify(W_SIG_DST, prev_pe, r, dst, n, tag_of(kind, prev_pe, me, r));
        });
}

static void phase_barrier(void)
{
    uint64_t *got = (uint64_t *)snap;
    replay(
        "barrier_all and sync_all",
        [got] {
            k_put_word<<<1, 1, 0, cu.stream>>>(&words[me], ctr, me, next_pe);
            LAUNCHED();
            shmemx_barrier_all_on_stream(cu.stream);
            k_copy_word<<<1, 1, 0, cu.stream>>>(got, &words[prev_pe]);
            LAUNCHED();
            /* prev writes the word again only after this PE copied it */
            shmemx_sync_all_on_stream(cu.stream);
            for (int i = 0; i < 3; i++)
                shmemx_barrier_all_on_stream(cu.stream);
        },
        [got](uint64_t r) { check_word(W_BAR, prev_pe, r, got, r * 1000 + (uint64_t)prev_pe); });
}

/* The collectives need no barrier of the program's: each begins with one
 * (nobody writes into a member's dest before it has reached the call, so
 * after its check of the replay before) and only the source's owner reads
 * a source. */
static void phase_alltoall(size_t n)
{
    static char name[96];
    snprintf(name, sizeof(name), "alltoallmem %zu B", n);
    replay(
        name,
        [n] {
            for (int pe = 0; pe < npes; pe++)
                fill(src + (size_t)pe * n, n, K_A2A, me, pe);
            shmemx_alltoallmem_on_stream(SHMEM_TEAM_WORLD, dst, src, n, cu.stream);
        },
        [n](uint64_t r) {
            for (int pe = 0; pe < npes; pe++)
                verify(W_A2A, pe, r, dst + (size_t)pe * n, n, tag_of(K_A2A, pe, me, r));
        });
}

static void phase_broadcast(size_t n)
{
    static char name[96];
    snprintf(name, sizeof(name), "broadcastmem %zu B, every root", n);
    replay(
        name,
        [n] {
            for (int root = 0; root < npes; root++) {
                fill(src + (size_t)root * n, n, K_BC, me, root);
                shmemx_broadcastmem_on_stream(SHMEM_TEAM_WORLD, dst + (size_t)root * n,
                                              src + (size_t)root * n, n, root, cu.stream);
            }
        },
        [n](uint64_t r) {
            for (int root = 0; root < npes; root++)
                verify(W_BC, root, r, dst + (size_t)root * n, n, tag_of(K_BC, root, root, r));
        });
}

static void phase_fcollect(size_t n)
{
    static char name[96];
    snprintf(name, sizeof(name), "fcollectmem %zu B", n);
    replay(
        name,
        [n] {
            fill(src, n, K_FC, me, -2);
            shmemx_fcollectmem_on_stream(SHMEM_TEAM_WORLD, dst, src, n, cu.stream);
        },
        [n](uint64_t r) {
            for (int pe = 0; pe < npes; pe++)
                verify(W_FC, pe, r, dst + (size_t)pe * n, n, tag_of(K_FC, pe, -2, r));
        });
}

/* The sum reductions of four types back to back in one graph, each type
 * in a region of its own, in place in src or out of place into dst; a
 * replay refills a source only after the closing barrier of the reduction
 * before, when no member reads it any more. */
#define SUM_REGION ((size_t)1 << 20) /* bytes per type */

template <typename T>
static void sum_capture(int type, bool in_place, size_t count,
                        int (*reduce)(shmem_team_t, T *, const T *, size_t, CUstream))
{
    T *s = (T *)(src + type * SUM_REGION), *d = in_place ? s : (T *)(dst + type * SUM_REGION);
    k_fill_sum<T><<<blocks_for(count), 256, 0, cu.stream>>>(s, count, ctr, me);
    LAUNCHED();
    if (reduce(SHMEM_TEAM_WORLD, d, s, count, (CUstream)cu.stream) != 0) {
        fprintf(stderr, "PE %d: phase %s: a reduction returned nonzero\n", me, cu.phase);
        cu_die();
    }
}

template <typename T>
static void sum_check(int type, bool in_place, size_t count, uint64_t r)
{
    const T *d = (const T *)((in_place ? src : dst) + type * SUM_REGION);
    k_verify_sum<T><<<blocks_for(count), 256, 0, cu.stream>>>(dlog, type, d, count, 0, npes, r);
    LAUNCHED();
}

/* The sums of count elements, and the reduce-scatter of rs_count a PE. */
static void phase_sums(size_t count, size_t rs_count)
{
    static_assert(SUM_COUNT * sizeof(double) <= SUM_REGION && 4 * SUM_REGION <= A2A_BIG,
                  "four regions of sums in the buffers");
    static char names[2][96];
    for (int ip = 0; ip < 2; ip++) {
        bool in_place = ip == 1;
        snprintf(names[ip], sizeof(names[ip]),
                 "int, long, float, double sum_reduce_on_stream of %zu%s", count,
                 in_place ? ", in place" : "");
        replay(
            names[ip],
            [=] {
                sum_capture<int>(0, in_place, count, shmemx_int_sum_reduce_on_stream);
                sum_capture<long>(1, in_place, count, shmemx_long_sum_reduce_on_stream);
                sum_capture<float>(2, in_place, count, shmemx_float_sum_reduce_on_stream);
                sum_capture<double>(3, in_place, count, shmemx_double_sum_reduce_on_stream);
            },
            [=](uint64_t r) {
                sum_check<int>(0, in_place, count, r);
                sum_check<long>(1, in_place, count, r);
                sum_check<float>(2, in_place, count, r);
                sum_check<double>(3, in_place, count, r);
            });
    }
#ifdef USHMEMX_HAVE_REDUCE_ON_STREAM
    /* The reduce-scatter: this PE gets the sum of every PE's block me. */
    static char rs_name[96];
    snprintf(rs_name, sizeof(rs_name), "double_sum_reducescatter_on_stream of %zu", rs_count);
    replay(
        rs_name,
        [=] {
            k_fill_sum<double><<<blocks_for(rs_count * npes), 256, 0, cu.stream>>>(
                (double *)src, rs_count * npes, ctr, me);
            LAUNCHED();
            if (shmemx_double_sum_reducescatter_on_stream(SHMEM_TEAM_WORLD, (double *)dst,
                                                          (const double *)src, rs_count,
                                                          (CUstream)cu.stream) != 0) {
                fprintf(stderr, "PE %d: the reduce-scatter returned nonzero\n", me);
                cu_die();
            }
        },
        [=](uint64_t r) {
            k_verify_sum<double><<<blocks_for(rs_count), 256, 0, cu.stream>>>(
                dlog, 3, (const double *)dst, rs_count, (size_t)me * rs_count, npes, r);
            LAUNCHED();
        });
#endif
}

/* Captured barriers and barriers outside graphs on the same pairs, the
 * world and a split team, with work of both kinds in between. The
 * reversed team's member m is world PE npes - 1 - m. */
static void phase_mixed(void)
{
    size_t n = SMALL, n2 = 1000;
    /* regions of the buffers' first A2A_BIG bytes, which every PE count has */
    unsigned char *src2 = src + 65536, *dst2 = dst + 65536;
    int *sum_src = (int *)(src + 131072), *sum_dst = (int *)(dst + 131072);
    replay(
        "mixed, with stream barriers between replays",
        [=] {
            fill(src, n, K_MIX, me, next_pe);
            for (int m = 0; m < npes; m++)
                fill(src2 + (size_t)m * n2, n2, K_MIX_A2A, me, npes - 1 - m);
            k_fill_sum<int><<<blocks_for(SMALL), 256, 0, cu.stream>>>(sum_src, SMALL, ctr, me);
            LAUNCHED();
            shmemx_barrier_all_on_stream(cu.stream);
            shmemx_putmem_on_stream(dst, src, n, next_pe, cu.stream);
            shmemx_sync_all_on_stream(cu.stream);
            shmemx_alltoallmem_on_stream(reversed, dst2, src2, n2, cu.stream);
            shmemx_int_sum_reduce_on_stream(SHMEM_TEAM_WORLD, sum_dst, sum_src, SMALL,
                                            (CUstream)cu.stream);
            shmemx_barrier_all_on_stream(cu.stream);
        },
        [=](uint64_t r) {
            verify(W_PUT, prev_pe, r, dst, n, tag_of(K_MIX, prev_pe, me, r));
            /* member m of the reversed team sent its block for this PE */
            for (int m = 0; m < npes; m++)
                verify(W_A2A, npes - 1 - m, r, dst2 + (size_t)m * n2, n2,
                       tag_of(K_MIX_A2A, npes - 1 - m, me, r));
            k_verify_sum<int><<<blocks_for(SMALL), 256, 0, cu.stream>>>(dlog, 0, sum_dst, SMALL,
                                                                       0, npes, r);
            LAUNCHED();
        },
        [](uint64_t r) {
            for (uint64_t i = 0; i < r % 3; i++)
                shmemx_barrier_all_on_stream(cu.stream);
            if (r % 2 == 0)
                shmemx_sync_all_on_stream(cu.stream);
        },
        cudaStreamCaptureModeThreadLocal);
}

/* Only kernels: the device API's calls in a graph, on whatever road the
 * environment gives them. The device barrier opens (nobody puts into this
 * PE before it has checked the replay before) and closes the replay. */
static void phase_device(void)
{
    size_t n = BIG;
    uint64_t *counter = &words[MAX_PES];
    CU_CHECK(cudaMemset(counter, 0, sizeof(*counter)));
    CU_CHECK(cudaDeviceSynchronize());
    shmem_barrier_all();
    replay(
        "device API in captured kernels",
        [=] {
            fill(src, n, K_DEV, me, next_pe);
            k_dev_barrier<<<1, 1, 0, cu.stream>>>();
            LAUNCHED();
            k_dev_put<<<1, 256, 0, cu.stream>>>(dst, src, n, counter, dev_old, next_pe);
            LAUNCHED();
            k_dev_barrier<<<1, 1, 0, cu.stream>>>();
            LAUNCHED();
        },
        [=](uint64_t r) {
            verify(W_DEV_PUT, prev_pe, r, dst, n, tag_of(K_DEV, prev_pe, me, r));
            /* only this PE adds to the next PE's counter, once a replay */
            check_word(W_DEV_OLD, next_pe, r, dev_old, r - 1);
            check_word(W_DEV_CTR, prev_pe, r, counter, r);
        });
}

/* Captures while another stream's kernel keeps the device API busy (with
 * USHMEM_DEVICE_ROUTE=proxy or over the fabric, the proxy thread then
 * runs atomics, copies and waits on the device while this thread
 * captures in the global mode, where CUDA refuses some calls to every
 * thread of the process). CAPTURES graphs are captured, launched once and
 * checked one after the other, each sending its own bytes; then the busy
 * kernel's count is checked. */
#define CAPTURES 20
#define BUSY_ATOMICS 5000

__global__ void k_busy(uint64_t *counter, int n, int pe)
{
    for (int i = 0; i < n; i++)
        ushmem_uint64_atomic_fetch_add(counter, 1, pe);
    ushmem_quiet();
}

__global__ void k_put_quiet(unsigned char *d, const unsigned char *s, size_t n, int pe)
{
    ushmemx_putmem_block(d, s, n, pe);
    ushmem_quiet();
}

static void phase_capture_beside(bool device_only)
{
    uint64_t *busy = &words[MAX_PES + 1];
    cudaStream_t side;
    size_t n = SMALL;

    cu_phase_begin("capture while another stream's kernel makes device calls");
    CU_CHECK(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking));
    CU_CHECK(cudaMemset(busy, 0, sizeof(*busy)));
    CU_CHECK(cudaMemset(ctr, 0, sizeof(*ctr)));
    CU_CHECK(cudaDeviceSynchronize());
    shmem_barrier_all();
    k_busy<<<1, 1, 0, side>>>(busy, BUSY_ATOMICS, next_pe);
    LAUNCHED();
    for (uint64_t k = 1; k <= CAPTURES; k++) {
        cudaGraph_t graph;
        cudaGraphExec_t exec;
        CU_CHECK(cudaStreamBeginCapture(cu.stream, cudaStreamCaptureModeGlobal));
        k_bump<<<1, 1, 0, cu.stream>>>(ctr);
        LAUNCHED();
        fill(src, n, K_PUT, me, next_pe);
        if (device_only) {
            k_dev_barrier<<<1, 1, 0, cu.stream>>>();
            LAUNCHED();
            k_put_quiet<<<1, 256, 0, cu.stream>>>(dst, src, n, next_pe);
            LAUNCHED();
            k_dev_barrier<<<1, 1, 0, cu.stream>>>();
            LAUNCHED();
        } else {
            shmemx_barrier_all_on_stream(cu.stream);
            shmemx_putmem_on_stream(dst, src, n, next_pe, cu.stream);
            shmemx_barrier_all_on_stream(cu.stream);
        }
        CU_CHECK(cudaStreamEndCapture(cu.stream, &graph));
        CU_CHECK(cudaGraphInstantiate(&exec, graph, 0));
        CU_CHECK(cudaGraphLaunch(exec, cu.stream));
        verify(W_PUT, prev_pe, k, dst, n, tag_of(K_PUT, prev_pe, me, k));
        cu_wait("a graph captured beside the busy kernel");
        CU_CHECK(cudaGraphExecDestroy(exec));
        CU_CHECK(cudaGraphDestroy(graph));
    }
    CU_CHECK(cudaStreamSynchronize(side));
    shmem_barrier_all();
    check_word(W_DEV_CTR, prev_pe, BUSY_ATOMICS, busy, BUSY_ATOMICS);
    cu_wait("the busy kernel's count");
    cu_log_report(dlog, what_names, W_COUNT);
    CU_CHECK(cudaStreamDestroy(side));
    cu_phase_end();
}

/* One call captured alone; a road through the proxy ends the job here. */
static void refuse_probe(const char *what)
{
    cudaGraph_t graph;

    cu_phase_begin("refusal probe");
    CU_CHECK(cudaStreamBeginCapture(cu.stream, cudaStreamCaptureModeGlobal));
    if (strcmp(what, "put") == 0)
        shmemx_putmem_on_stream(dst, src, 8, next_pe, cu.stream);
    else
        shmemx_barrier_all_on_stream(cu.stream);
    CU_CHECK(cudaStreamEndCapture(cu.stream, &graph));
    CU_CHECK(cudaGraphDestroy(graph));
    printf("PE %d: %s to PE %d captured into a graph without refusal (route %s)\n", me,
           strcmp(what, "put") == 0 ? "shmemx_putmem_on_stream" : "shmemx_barrier_all_on_stream",
           next_pe, shmemx_route_name(shmemx_route(next_pe, SHMEMX_CLASS_RMA)));
    fflush(stdout);
    cu_phase_end();
}

int main(int argc, char **argv)
{
    bool device_only = false;
    const char *refuse = NULL;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-v") == 0) {
            cu.verbose = 1;
        } else if (strcmp(argv[i], "--device-only") == 0) {
            device_only = true;
        } else if (strcmp(argv[i], "--refuse") == 0 && i + 1 < argc &&
                   (strcmp(argv[i + 1], "put") == 0 || strcmp(argv[i + 1], "barrier") == 0)) {
            refuse = argv[++i];
        } else {
            fprintf(stderr, "usage: %s [-v] [--device-only] [--refuse put|barrier]\n", argv[0]);
            return 2;
        }
    }
    cu_skip_without_device();
    cu_init(MAX_PES);
    me = cu.me;
    npes = cu.npes;
    next_pe = (me + 1) % npes;
    prev_pe = (me + npes - 1) % npes;
    dlog = cu_log_alloc();
    CU_CHECK(cudaMalloc((void **)&ctr, sizeof(*ctr)));
    CU_CHECK(cudaMalloc((void **)&dev_old, sizeof(*dev_old)));
    CU_CHECK(cudaMalloc((void **)&snap, A2A_BIG));
    size_t bytes = (size_t)npes * A2A_BIG;
    src = (unsigned char *)cu_shmalloc(bytes);
    dst = (unsigned char *)cu_shmalloc(bytes);
    sig = (uint64_t *)cu_shmalloc(sizeof(uint64_t));
    words = (uint64_t *)cu_shmalloc((MAX_PES + 2) * sizeof(uint64_t));
    cu_memset(dst, 0, bytes);
    cu_memset(words, 0, (MAX_PES + 2) * sizeof(uint64_t));
    if (shmem_team_split_strided(SHMEM_TEAM_WORLD, npes - 1, -1, npes, NULL, 0, &reversed) != 0) {
        fprintf(stderr, "PE %d: the reversed split failed\n", me);
        cu_die();
    }
    shmem_barrier_all();

    if (refuse != NULL)
        refuse_probe(refuse);
    if (!device_only) {
        for (size_t n : {SMALL, BIG}) {
            phase_put(n);
            phase_get(n);
        }
        phase_signal(SMALL, SHMEM_CMP_EQ, false);
        phase_signal(1, SHMEM_CMP_GT, false);
        phase_signal(BIG, SHMEM_CMP_GE, true);
        phase_barrier();
        phase_alltoall(SMALL);
        phase_alltoall(A2A_BIG);
        phase_broadcast(SMALL);
        phase_fcollect(BIG);
        phase_sums(SUM_COUNT, SMALL);
        phase_sums(1000, 1000);
        phase_mixed();
    }
    phase_device();
    phase_capture_beside(device_only);

    shmem_team_destroy(reversed);
    shmem_free(words);
    shmem_free(sig);
    shmem_free(dst);
    shmem_free(src);
    CU_CHECK(cudaFree(snap));
    CU_CHECK(cudaFree(dev_old));
    CU_CHECK(cudaFree(ctr));
    CU_CHECK(cudaFree(dlog));
    if (me == 0)
        printf("cu_graph: %s on %d PEs, %d replays each, every byte checked after every "
               "replay\n",
               device_only ? "captured kernels with device calls" : "every stream-ordered call",
               npes, REPLAYS);
    cu_finish();
    return 0;
}
