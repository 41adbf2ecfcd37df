/* What the link between two GPUs carries at most, whoever drives it: GPU 0
 * writes a buffer into GPU 1's memory through a peer pointer, iters times,
 * with each engine the device has, and no OpenSHMEM library in the way:
 *   sm       16-byte stores by N blocks of 1024 threads, four in flight per
 *            thread (the way ushmem's and NVSHMEM's block puts copy)
 *   tma      the Hopper bulk-copy engine: one thread per block moves 32 KiB
 *            pieces into shared memory and out to the peer, four in flight
 *   ce       the copy engine: one cudaMemcpyPeerAsync of the whole buffer
 *   ce-2m    the copy engine, the buffer in 2 MiB copies (a proxy's pieces)
 *   ce-2m-sN the same 2 MiB copies dealt round robin to N streams (2, 4, 8),
 *            which the driver may give to several copy engines
 *   sm+ce    both at once, half each, on two streams
 * A put benchmark's figure is read against these: no library can move more
 * than the best of them. Every run's bytes are checked at GPU 1.
 *
 *   nvlink_ceiling [--size S] [--iters N]      (default 64M, 50)
 *
 * Prints CSV as scripts/plot_perf.py reads it: "# nvlink_ceiling,raw,2",
 * then "engine,bandwidth_gbs" rows in GB/s (1e9 bytes per second). Exits 77
 * with fewer than two GPUs or without peer access between GPUs 0 and 1. */
#include <cuda_runtime.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(call)                                                                        \
    do {                                                                                   \
        cudaError_t err_ = (call);                                                         \
        if (err_ != cudaSuccess) {                                                         \
            fprintf(stderr, "nvlink_ceiling: %s failed: %s\n", #call,                      \
                    cudaGetErrorString(err_));                                             \
            exit(1);                                                                       \
        }                                                                                  \
    } while (0)

#define TMA_PIECE 32768u
#define TMA_STAGES 4

/* Block b copies its share of n 16-byte words, iters times. */
__global__ void __launch_bounds__(1024) sm_copy(int4 *dst, const int4 *src, size_t n, long iters)
{
    size_t per = n / gridDim.x, base = per * blockIdx.x, size = blockDim.x;
    const int4 *s = src + base;
    int4 *d = dst + base;

    if (blockIdx.x == gridDim.x - 1)
        per = n - base;
    for (long it = 0; it < iters; it++) {
        size_t i = threadIdx.x;
        for (; i + 3 * size < per; i += 4 * size) {
            int4 v[4];
#pragma unroll
            for (int k = 0; k < 4; k++)
                v[k] = s[i + k * size];
#pragma unroll
            for (int k = 0; k < 4; k++)
                d[i + k * size] = v[k];
        }
        for (; i < per; i += size)
            d[i] = s[i];
    }
}

__device__ static inline unsigned smem_addr(const void *p)
{
    return (unsigned)__cvta_generic_to_shared(p);
}

/* Thread 0 of block b moves its share (a whole number of pieces) through
 * TMA_STAGES shared buffers: piece j goes out while pieces j + 1 .. j +
 * stages - 1 come in; a buffer is loaded again once the store that read it
 * has read it. */
__global__ void tma_copy(char *dst, const char *src, size_t bytes, long iters)
{
    extern __shared__ __align__(128) char buf[];
    __shared__ __align__(8) unsigned long long bar[TMA_STAGES];
    size_t per = bytes / gridDim.x, base = per * blockIdx.x, pieces = per / TMA_PIECE;
    unsigned phase[TMA_STAGES] = {0};

    if (threadIdx.x != 0)
        return;
    for (int b = 0; b < TMA_STAGES; b++)
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smem_addr(&bar[b])));
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    for (long it = 0; it < iters; it++) {
        for (size_t k = 0; k < pieces + TMA_STAGES - 1; k++) {
            if (k >= TMA_STAGES - 1) { /* store piece j once it has arrived */
                size_t j = k - (TMA_STAGES - 1);
                unsigned b = (unsigned)(j % TMA_STAGES), done = 0;
                while (!done)
                    asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, "
                                 "[%1], %2; selp.u32 %0, 1, 0, p; }"
                                 : "=r"(done) : "r"(smem_addr(&bar[b])), "r"(phase[b]) : "memory");
                phase[b] ^= 1;
                asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;"
                             ::"l"(dst + base + j * TMA_PIECE),
                             "r"(smem_addr(buf + (size_t)b * TMA_PIECE)), "r"(TMA_PIECE)
                             : "memory");
                asm volatile("cp.async.bulk.commit_group;" ::: "memory");
            }
            if (k < pieces) { /* load piece k into buffer k % stages */
                unsigned b = (unsigned)(k % TMA_STAGES);
                /* The buffer's last store, of piece k - stages, has read it:
                 * only the store just issued may still be reading. */
                asm volatile("cp.async.bulk.wait_group.read 1;" ::: "memory");
                asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;"
                             ::"r"(smem_addr(&bar[b])), "r"(TMA_PIECE) : "memory");
                asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes "
                             "[%0], [%1], %2, [%3];"
                             ::"r"(smem_addr(buf + (size_t)b * TMA_PIECE)),
                             "l"(src + base + k * TMA_PIECE), "r"(TMA_PIECE),
                             "r"(smem_addr(&bar[b]))
                             : "memory");
            }
        }
        asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
    }
    asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
}

__global__ void fill(uint64_t *p, size_t n, uint64_t seed)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        p[i] = (i * 0x9e3779b97f4a7c15ull) ^ seed;
}

__global__ void count_bad(const uint64_t *p, size_t n, uint64_t seed, unsigned long long *bad)
{
    unsigned long long k = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        k += p[i] != ((i * 0x9e3779b97f4a7c15ull) ^ seed);
    if (k != 0)
        atomicAdd(bad, k);
}

static size_t bytes;
static long iters;
static char *src, *dst; /* on GPU 0 and GPU 1 */
#define STREAMS 8
static cudaStream_t streams[STREAMS];
static int failed;

enum engine { SM32, SM132, TMA32, TMA64, CE, CE2M, CE2M_S2, CE2M_S4, CE2M_S8, SMCE, ENGINES };
static const char *const engine_names[ENGINES] = {
    "sm-32", "sm-132", "tma-32", "tma-64", "ce", "ce-2m", "ce-2m-s2", "ce-2m-s4", "ce-2m-s8",
    "sm+ce"};

/* Queues `n` runs of engine e on the streams of GPU 0. */
static void launch(enum engine e, long n)
{
    size_t half = bytes / 2;

    switch (e) {
    case SM32:
    case SM132:
        sm_copy<<<e == SM32 ? 32 : 132, 1024, 0, streams[0]>>>((int4 *)dst, (const int4 *)src,
                                                                bytes / 16, n);
        break;
    case TMA32:
    case TMA64:
        tma_copy<<<e == TMA32 ? 32 : 64, 32, TMA_STAGES * TMA_PIECE, streams[0]>>>(dst, src,
                                                                                  bytes, n);
        break;
    case CE:
    case CE2M:
    case CE2M_S2:
    case CE2M_S4:
    case CE2M_S8: {
        size_t piece = e == CE ? bytes : (size_t)2 << 20;
        int nstreams = e == CE2M_S2 ? 2 : e == CE2M_S4 ? 4 : e == CE2M_S8 ? 8 : 1;
        unsigned k = 0;
        for (long i = 0; i < n; i++)
            for (size_t off = 0; off < bytes; off += piece)
                CHECK(cudaMemcpyPeerAsync(dst + off, 1, src + off, 0,
                                          bytes - off < piece ? bytes - off : piece,
                                          streams[k++ % (unsigned)nstreams]));
        break;
    }
    default: /* SMCE */
        sm_copy<<<32, 1024, 0, streams[0]>>>((int4 *)dst, (const int4 *)src, half / 16, n);
        for (long i = 0; i < n; i++)
            CHECK(cudaMemcpyPeerAsync(dst + half, 1, src + half, 0, bytes - half, streams[1]));
        break;
    }
    CHECK(cudaGetLastError());
}

/* Clears GPU 1's buffer, runs engine e once and checks every word there. */
static void check(enum engine e, uint64_t seed)
{
    unsigned long long *bad, host_bad = 0;

    CHECK(cudaSetDevice(1));
    CHECK(cudaMemset(dst, 0, bytes));
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaSetDevice(0));
    launch(e, 1);
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaSetDevice(1));
    CHECK(cudaMalloc(&bad, sizeof(*bad)));
    CHECK(cudaMemset(bad, 0, sizeof(*bad)));
    count_bad<<<264, 1024>>>((const uint64_t *)dst, bytes / 8, seed, bad);
    CHECK(cudaMemcpy(&host_bad, bad, sizeof(host_bad), cudaMemcpyDeviceToHost));
    CHECK(cudaFree(bad));
    CHECK(cudaSetDevice(0));
    if (host_bad != 0) {
        fprintf(stderr, "nvlink_ceiling: %s left %llu wrong words of %zu at GPU 1\n",
                engine_names[e], host_bad, bytes / 8);
        failed = 1;
    }
}

/* GB/s of iters runs of engine e, timed with events that join every stream. */
static double measure(enum engine e)
{
    cudaEvent_t start, joined[STREAMS], stop;
    float ms;

    CHECK(cudaEventCreate(&start));
    CHECK(cudaEventCreate(&stop));
    launch(e, 2); /* warm-up */
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaEventRecord(start, streams[0]));
    for (int s = 1; s < STREAMS; s++)
        CHECK(cudaStreamWaitEvent(streams[s], start, 0));
    launch(e, iters);
    for (int s = 1; s < STREAMS; s++) {
        CHECK(cudaEventCreate(&joined[s]));
        CHECK(cudaEventRecord(joined[s], streams[s]));
        CHECK(cudaStreamWaitEvent(streams[0], joined[s], 0));
    }
    CHECK(cudaEventRecord(stop, streams[0]));
    CHECK(cudaEventSynchronize(stop));
    CHECK(cudaEventElapsedTime(&ms, start, stop));
    CHECK(cudaEventDestroy(start));
    for (int s = 1; s < STREAMS; s++)
        CHECK(cudaEventDestroy(joined[s]));
    CHECK(cudaEventDestroy(stop));
    return (double)bytes * (double)iters / ((double)ms * 1e6);
}

static int parse_size(const char *s, size_t *out)
{
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    switch (*end) {
    case 'K': v <<= 10; end++; break;
    case 'M': v <<= 20; end++; break;
    case 'G': v <<= 30; end++; break;
    default: break;
    }
    *out = (size_t)v;
    return *end != '\0' || end == s;
}

int main(int argc, char **argv)
{
    int ngpus = 0, can = 0;
    const uint64_t seed = 0x5eedull;

    bytes = (size_t)64 << 20;
    iters = 50;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--size") == 0 && i + 1 < argc && parse_size(argv[i + 1], &bytes) == 0) {
            i++;
        } else if (strcmp(argv[i], "--iters") == 0 && i + 1 < argc &&
                   (iters = strtol(argv[i + 1], NULL, 10)) > 0) {
            i++;
        } else {
            fprintf(stderr, "usage: nvlink_ceiling [--size S] [--iters N]\n");
            return 2;
        }
    }
    /* Every engine's share must be whole: 132 blocks of 16-byte words, 64
     * blocks of TMA pieces and 2 MiB copies all divide a multiple of 4 MiB
     * evenly except the first, which takes its rest in the last block. */
    if (bytes < ((size_t)4 << 20) || bytes % ((size_t)4 << 20) != 0) {
        fprintf(stderr, "nvlink_ceiling: --size must be a multiple of 4M\n");
        return 2;
    }
    if (cudaGetDeviceCount(&ngpus) != cudaSuccess || ngpus < 2) {
        printf("nvlink_ceiling: needs two GPUs; skipped\n");
        return 77;
    }
    CHECK(cudaDeviceCanAccessPeer(&can, 0, 1));
    if (!can) {
        printf("nvlink_ceiling: GPU 0 cannot access GPU 1's memory; skipped\n");
        return 77;
    }
    CHECK(cudaSetDevice(1));
    CHECK(cudaMalloc(&dst, bytes));
    CHECK(cudaSetDevice(0));
    CHECK(cudaDeviceEnablePeerAccess(1, 0));
    CHECK(cudaMalloc(&src, bytes));
    fill<<<264, 1024>>>((uint64_t *)src, bytes / 8, seed);
    CHECK(cudaDeviceSynchronize()); /* the engines run on streams that do not wait for it */
    CHECK(cudaFuncSetAttribute(tma_copy, cudaFuncAttributeMaxDynamicSharedMemorySize,
                               TMA_STAGES * TMA_PIECE));
    for (int s = 0; s < STREAMS; s++)
        CHECK(cudaStreamCreateWithFlags(&streams[s], cudaStreamNonBlocking));

    printf("# nvlink_ceiling,raw,2\n");
    printf("engine,bandwidth_gbs\n");
    printf("# GPU 0 -> GPU 1, %zu bytes, %ld runs per engine after 2 warm-up\n", bytes, iters);
    for (int e = 0; e < ENGINES; e++) {
        check((enum engine)e, seed);
        printf("%s,%.1f\n", engine_names[e], measure((enum engine)e));
        fflush(stdout);
    }
    return failed;
}
