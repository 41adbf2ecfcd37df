/* A persistent kernel that holds every SM of the GPU, as programs size
 * theirs with the occupancy API: each block computes for a few
 * milliseconds, long enough for the proxy thread to find itself idle, then
 * puts, gets and stores to the next PE, in rounds. Every value is checked
 * on every PE.
 *
 * Through the proxy (USHMEM_DEVICE_ROUTE=proxy) what the library queues on
 * the GPU for these calls must not wait for a free SM: stores are stream
 * memory operations, copies to host memory go to the copy engines (and
 * copies to another GPU should: full_gpu_ops says, given two GPUs), and
 * the small kernel an idle proxy launches to keep its
 * launch path warm waits on a stream of its own (queued on the library's
 * stream, it held up every request behind it). What does need an SM, and
 * so waits for good here: the atomic kernel (atomics are not used), and a
 * copy within one GPU, which the driver runs as a kernel
 * (test/perf/cuda/full_gpu_ops), so a PE alone on one GPU makes only the
 * calls --calls names (meson.build).
 *
 * One warp a block: block slots, not registers, then bound the occupancy
 * (32 blocks an SM on compute capability 9.0), so the grid leaves no room
 * for another kernel. Exits 77 without a CUDA device, where the grid would
 * not fill the GPU, or with more PEs than GPUs (PEs sharing one take turns
 * on it and a full grid of each would wait for the other's).
 *
 * Usage: oshrun -n N cu_full_gpu [-v] [--calls p,g,put] [--per-sm N]
 *   --calls   which calls each block makes (default all three)
 *   --per-sm  blocks an SM instead of as many as fit (then not a full GPU) */
#include <ushmem/device.h>

#include "cu_check.cuh"

#define ROUNDS 3
#define COMPUTE_NS 3000000ULL /* per round, longer than the proxy's 1 ms idle tick */
#define PIECE 256             /* bytes each block puts a round */

__device__ static unsigned long long now_ns(void)
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

__host__ __device__ static long word_of(int pe, unsigned block, int round)
{
    return ((long)pe << 40) | ((long)block << 8) | round;
}

enum { CALL_P = 1, CALL_G = 2, CALL_PUT = 4 };

/* Round r: compute, then to the next PE: a p of this block's word, a g of
 * that same word back (what the p wrote, or zero without it) and a warp
 * put of its piece. */
__global__ void rounds_kernel(long *words, unsigned char *pieces, const unsigned char *src,
                              long *got, unsigned *bad, unsigned calls)
{
    int me = ushmem_my_pe(), npes = ushmem_n_pes(), next = (me + 1) % npes;
    unsigned b = blockIdx.x;
    for (int r = 0; r < ROUNDS; r++) {
        unsigned long long until = now_ns() + COMPUTE_NS;
        while (now_ns() < until)
            ;
        size_t i = (size_t)r * gridDim.x + b;
        if (threadIdx.x == 0 && (calls & CALL_P))
            ushmem_long_p(&words[i], word_of(me, b, r), next);
        if (threadIdx.x == 0 && (calls & CALL_G))
            got[i] = ushmem_long_g(&words[i], next);
        __syncwarp();
        if (calls & CALL_PUT)
            ushmemx_putmem_warp(pieces + i * PIECE, src + (size_t)b * PIECE, PIECE, next);
        if (threadIdx.x == 0) {
            ushmem_quiet();
            if ((calls & CALL_G) && got[i] != ((calls & CALL_P) ? word_of(me, b, r) : 0))
                atomicAdd(bad, 1u);
        }
        __syncwarp();
    }
}

static void usage(const char *argv0)
{
    fprintf(stderr, "usage: %s [-v] [--calls p,g,put] [--per-sm N]\n", argv0);
    exit(2);
}

int main(int argc, char **argv)
{
    unsigned calls = CALL_P | CALL_G | CALL_PUT;
    int want_per_sm = 0;
    for (int a = 1; a < argc; a++) {
        if (strcmp(argv[a], "-v") == 0) {
            cu.verbose = 1;
        } else if (strcmp(argv[a], "--calls") == 0 && a + 1 < argc) {
            calls = 0;
            char *list = argv[++a], *save = NULL;
            for (char *c = strtok_r(list, ",", &save); c != NULL; c = strtok_r(NULL, ",", &save)) {
                if (strcmp(c, "p") == 0)
                    calls |= CALL_P;
                else if (strcmp(c, "g") == 0)
                    calls |= CALL_G;
                else if (strcmp(c, "put") == 0)
                    calls |= CALL_PUT;
                else
                    usage(argv[0]);
            }
        } else if (strcmp(argv[a], "--per-sm") == 0 && a + 1 < argc) {
            want_per_sm = atoi(argv[++a]);
            if (want_per_sm <= 0)
                usage(argv[0]);
        } else {
            usage(argv[0]);
        }
    }
    cu_skip_without_device();
    int ndev = 0;
    CU_CHECK(cudaGetDeviceCount(&ndev));
    cu_init(64);
    int me = cu.me, npes = cu.npes, prev = (me + npes - 1) % npes;
    int dev = 0, sms = 0, max_blocks = 0, per_sm = 0;
    CU_CHECK(cudaGetDevice(&dev));
    CU_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    CU_CHECK(cudaDeviceGetAttribute(&max_blocks, cudaDevAttrMaxBlocksPerMultiprocessor, dev));
    CU_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, rounds_kernel, 32, 0));
    if (npes > ndev || per_sm < max_blocks) {
        if (me == 0)
            printf("skipped: %d PEs on %d GPUs, %d blocks of one warp an SM of %d\n", npes,
                   ndev, per_sm, max_blocks);
        shmem_finalize();
        return 77;
    }
    bool full = want_per_sm == 0 || want_per_sm >= per_sm;
    if (!full)
        per_sm = want_per_sm;
    unsigned blocks = (unsigned)(per_sm * sms);
    size_t nwords = (size_t)ROUNDS * blocks;

    cu_phase_begin("full grid");
    long *words = (long *)cu_shmalloc(nwords * sizeof(long));
    unsigned char *pieces = (unsigned char *)cu_shmalloc(nwords * PIECE);
    unsigned char *src = (unsigned char *)cu_shmalloc((size_t)blocks * PIECE);
    long *got = NULL;
    unsigned *bad = NULL;
    CU_CHECK(cudaMalloc((void **)&got, nwords * sizeof(long)));
    CU_CHECK(cudaMalloc((void **)&bad, sizeof(unsigned)));
    CU_CHECK(cudaMemset(bad, 0, sizeof(unsigned)));
    cu_memset(words, 0, nwords * sizeof(long));
    cu_memset(pieces, 0, nwords * PIECE);
    unsigned char *host = (unsigned char *)malloc(nwords * PIECE);
    long *host_words = (long *)malloc(nwords * sizeof(long));
    if (host == NULL || host_words == NULL) {
        fprintf(stderr, "PE %d: out of host memory\n", me);
        cu_die();
    }
    cu_fill(host, (size_t)blocks * PIECE, (uint64_t)me, 0);
    cu_h2d(src, host, (size_t)blocks * PIECE);
    if (cu.verbose)
        printf("PE %d: %u blocks of 32 threads (%d an SM, %d SMs), %d rounds, calls %#x\n", me,
               blocks, per_sm, sms, ROUNDS, calls);
    fflush(stdout);
    shmem_barrier_all();
    rounds_kernel<<<blocks, 32, 0, cu.stream>>>(words, pieces, src, got, bad, calls);
    cu_wait("rounds_kernel");
    shmem_barrier_all();

    unsigned nbad = 0;
    cu_d2h(&nbad, bad, sizeof(unsigned));
    if (nbad != 0) {
        cu_print("%u gets read another value than the p before them", nbad);
        cu.errors += nbad;
    }
    cu_d2h(host_words, words, nwords * sizeof(long));
    for (int r = 0; r < ROUNDS && (calls & CALL_P); r++) {
        for (unsigned b = 0; b < blocks; b++) {
            long v = host_words[(size_t)r * blocks + b];
            if (v != word_of(prev, b, r)) {
                cu_print("round %d block %u: word %#lx, want %#lx from PE %d", r, b,
                         (unsigned long)v, (unsigned long)word_of(prev, b, r), prev);
                cu.errors++;
            }
        }
    }
    cu_d2h(host, pieces, nwords * PIECE);
    for (int r = 0; r < ROUNDS && (calls & CALL_PUT); r++)
        cu.errors += cu_check_region("pieces", host + (size_t)r * blocks * PIECE,
                                     (size_t)blocks * PIECE, 0, (size_t)blocks * PIECE,
                                     (uint64_t)prev, 0, 0);
    cu_phase_end();
    if (me == 0)
        printf("%d PEs: %u blocks each %s, %d rounds after %.0f ms of compute each\n", npes,
               blocks, full ? "held every SM" : "(not a full GPU)", ROUNDS, COMPUTE_NS / 1e6);
    free(host_words);
    free(host);
    CU_CHECK(cudaFree(bad));
    CU_CHECK(cudaFree(got));
    shmem_free(src);
    shmem_free(pieces);
    shmem_free(words);
    cu_finish();
    return 0;
}
