/* Device-initiated put (or, with --get, get) bandwidth from PE 0 to PE 1, in
 * the manner of NVSHMEM's shmem_put_bw perftest: one kernel issues the whole
 * message --iters times, split among the blocks (and, for the narrower
 * scopes, among their warps or threads), all non-blocking, with one quiet at
 * the end; cudaEvents around the kernel give the time. Other PEs stay idle.
 * Scope `stream` runs no kernel: the host queues putmem_on_stream (getmem)
 * of the whole message --iters times on one stream, then quiet_on_stream,
 * the copy-engine road that leaves the SMs free.
 *
 *   dev_put_bw [--get] [--scope thread|warp|block|stream] [--blocks N] [--threads T]
 *              [--min-size S] [--max-size S] [--iters N] [--warmup N]
 *
 * Builds against ushmem or NVSHMEM (bench_shim.cuh). PE 0 prints CSV as
 * scripts/plot_perf.py reads it: "# dev_<put|get>_bw_<scope>,<impl>,<pes>",
 * then "size,bandwidth_gbs" rows in GB/s (1e9 bytes per second). Every size
 * is checked on the receiving side after its timed runs; a wrong word makes
 * every PE exit 1. */
#include "bench_shim.cuh"

enum scope { SCOPE_THREAD, SCOPE_WARP, SCOPE_BLOCK, SCOPE_STREAM };
static const char *const scope_names[] = {"thread", "warp", "block", "stream"};

struct opts {
    int get;
    int scope;
    long blocks;
    long threads;
    size_t min_size;
    size_t max_size;
    long iters;
    long warmup;
};

/* Moves `size` bytes between PE 0's buffer and `peer`'s, iters times: puts
 * go from src here to dst there, gets from src there to dst here. */
template <int SCOPE, bool GET>
__global__ void __launch_bounds__(1024)
    bw_kernel(char *dst, const char *src, size_t size, int peer, long iters)
{
    size_t len, off;

    if (SCOPE == SCOPE_BLOCK) {
        off = bench_part(size, gridDim.x, blockIdx.x, 16, &len);
    } else if (SCOPE == SCOPE_WARP) {
        size_t warps = blockDim.x / warpSize;
        off = bench_part(size, gridDim.x * warps, blockIdx.x * warps + threadIdx.x / warpSize, 16,
                         &len);
    } else {
        off = bench_part(size, (size_t)gridDim.x * blockDim.x,
                         (size_t)blockIdx.x * blockDim.x + threadIdx.x, 16, &len);
    }
    /* len is the same for every thread of a group, so a cooperative call is
     * made by the whole group or not at all. */
    for (long i = 0; i < iters && len > 0; i++) {
        if (SCOPE == SCOPE_BLOCK) {
            if (GET)
                B_getmem_nbi_block(dst + off, src + off, len, peer);
            else
                B_putmem_nbi_block(dst + off, src + off, len, peer);
        } else if (SCOPE == SCOPE_WARP) {
            if (GET)
                B_getmem_nbi_warp(dst + off, src + off, len, peer);
            else
                B_putmem_nbi_warp(dst + off, src + off, len, peer);
        } else {
            if (GET)
                B_getmem_nbi(dst + off, src + off, len, peer);
            else
                B_putmem_nbi(dst + off, src + off, len, peer);
        }
    }
    B_quiet_block();
}

/* The word PE `pe` keeps at index i of its source buffer. */
__host__ __device__ static inline uint64_t pattern(int pe, size_t i)
{
    return ((uint64_t)(pe + 1) << 56) ^ (i * 0x9e3779b97f4a7c15ull >> 8);
}

__global__ void fill_kernel(uint64_t *p, size_t nwords, int pe)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < nwords;
         i += (size_t)gridDim.x * blockDim.x)
        p[i] = pattern(pe, i);
}

__global__ void check_kernel(const uint64_t *p, size_t nwords, int pe, unsigned long long *bad)
{
    unsigned long long n = 0;

    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < nwords;
         i += (size_t)gridDim.x * blockDim.x)
        n += p[i] != pattern(pe, i);
    if (n != 0)
        atomicAdd(bad, n);
}

typedef void (*bw_fn)(char *, const char *, size_t, int, long);

/* Scope stream: `iters` copies of the message queued on `stream` by the
 * host, then the quiet that completes them. */
static void on_stream(char *dst, const char *src, size_t size, int peer, long iters, int get,
                      cudaStream_t stream)
{
    for (long i = 0; i < iters; i++) {
#if defined(BENCH_NVSHMEM)
        if (get)
            nvshmemx_getmem_on_stream(dst, src, size, peer, stream);
        else
            nvshmemx_putmem_on_stream(dst, src, size, peer, stream);
#else
        if (get)
            shmemx_getmem_on_stream(dst, src, size, peer, (CUstream)stream);
        else
            shmemx_putmem_on_stream(dst, src, size, peer, (CUstream)stream);
#endif
    }
#if defined(BENCH_NVSHMEM)
    nvshmemx_quiet_on_stream(stream);
#else
    shmemx_quiet_on_stream((CUstream)stream);
#endif
}

static bw_fn pick_kernel(int scope, int get)
{
    if (scope == SCOPE_STREAM)
        return NULL;
    static const bw_fn fns[3][2] = {
        {bw_kernel<SCOPE_THREAD, false>, bw_kernel<SCOPE_THREAD, true>},
        {bw_kernel<SCOPE_WARP, false>, bw_kernel<SCOPE_WARP, true>},
        {bw_kernel<SCOPE_BLOCK, false>, bw_kernel<SCOPE_BLOCK, true>},
    };
    return fns[scope][get];
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: dev_put_bw [options]\n"
            "  --get               measure getmem_nbi (PE 0 reads PE 1) instead of putmem_nbi\n"
            "  --scope S           thread, warp, block, or stream (host calls on_stream;\n"
            "                      no kernel) (default block)\n"
            "  --blocks N          thread blocks (default 32)\n"
            "  --threads T         threads per block, a multiple of 32 up to 1024 (default 1024)\n"
            "  --min-size S        smallest message, bytes, K/M/G suffixes (default 8)\n"
            "  --max-size S        largest message, up to 1G (default 64M)\n"
            "  --iters N           timed repetitions of the message per size (default 50)\n"
            "  --warmup N          untimed repetitions before them (default 5)\n");
}

/* Returns -1 to go on, else the exit code. */
static int parse(int argc, char **argv, struct opts *o)
{
    o->get = 0;
    o->scope = SCOPE_BLOCK;
    o->blocks = 32;
    o->threads = 1024;
    o->min_size = 8;
    o->max_size = 64 * BENCH_MIB;
    o->iters = 50;
    o->warmup = 5;
    for (int i = 1; i < argc; i++) {
        const char *v;
        int bad = 0;

        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(argv[i], "--get") == 0) {
            o->get = 1;
        } else if ((v = bench_opt(argc, argv, &i, "--scope")) != NULL) {
            int s;
            for (s = 0; s < 4 && strcmp(v, scope_names[s]) != 0; s++)
                ;
            bad = s == 4;
            o->scope = s;
        } else if ((v = bench_opt(argc, argv, &i, "--blocks")) != NULL) {
            bad = bench_parse_count(v, &o->blocks) != 0 || o->blocks < 1;
        } else if ((v = bench_opt(argc, argv, &i, "--threads")) != NULL) {
            bad = bench_parse_count(v, &o->threads) != 0 || o->threads < 32 ||
                  o->threads > 1024 || o->threads % 32 != 0;
        } else if ((v = bench_opt(argc, argv, &i, "--min-size")) != NULL) {
            bad = bench_parse_size(v, &o->min_size) != 0;
        } else if ((v = bench_opt(argc, argv, &i, "--max-size")) != NULL) {
            bad = bench_parse_size(v, &o->max_size) != 0;
        } else if ((v = bench_opt(argc, argv, &i, "--iters")) != NULL) {
            bad = bench_parse_count(v, &o->iters) != 0 || o->iters < 1;
        } else if ((v = bench_opt(argc, argv, &i, "--warmup")) != NULL) {
            bad = bench_parse_count(v, &o->warmup) != 0;
        } else {
            bad = 1;
            v = argv[i];
        }
        if (bad) {
            fprintf(stderr, "dev_put_bw: bad option or value near '%s'\n", v);
            usage(stderr);
            return 2;
        }
    }
    /* Messages stay whole 8-byte words, which the check compares. */
    if (o->min_size < 8 || o->min_size % 8 != 0 || o->max_size > BENCH_GIB ||
        o->min_size > o->max_size) {
        fprintf(stderr, "dev_put_bw: sizes must be multiples of 8 in [8, 1G], min <= max\n");
        return 2;
    }
    return -1;
}

int main(int argc, char **argv)
{
    struct opts o;
    int rc = parse(argc, argv, &o), me, npes, failed = 0;
    char *src, *dst;
    long *counts;
    unsigned long long *bad_d;
    cudaEvent_t start, stop;
    cudaStream_t stream;
    bw_fn fn;
    const char *op;

    if (rc >= 0)
        return rc;
    bench_init(&argc, &argv);
    me = bench_my_pe();
    npes = bench_n_pes();
    if (npes < 2) {
        if (me == 0)
            printf("dev_put_bw: needs at least 2 PEs; skipped\n");
        bench_finalize();
        return 77;
    }

    src = (char *)bench_malloc(o.max_size);
    dst = (char *)bench_malloc(o.max_size);
    counts = (long *)bench_malloc((size_t)npes * sizeof(long));
    BENCH_CUDA(cudaMalloc((void **)&bad_d, sizeof(*bad_d)));
    BENCH_CUDA(cudaEventCreate(&start));
    BENCH_CUDA(cudaEventCreate(&stop));
    BENCH_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    fill_kernel<<<256, 256>>>((uint64_t *)src, o.max_size / 8, me);
    BENCH_CUDA(cudaGetLastError());
    BENCH_CUDA(cudaDeviceSynchronize());
    fn = pick_kernel(o.scope, o.get);
    op = o.get ? "get" : "put";

    if (me == 0) {
        printf("# dev_%s_bw_%s,%s,%d\n", op, scope_names[o.scope], BENCH_IMPL, npes);
        printf("size,bandwidth_gbs\n");
        if (o.scope == SCOPE_STREAM)
            printf("# PE 0 %s PE 1, %smem_on_stream from the host, one stream, %ld iterations "
                   "after %ld warm-up, quiet_on_stream at the end\n",
                   o.get ? "<-" : "->", op, o.iters, o.warmup);
        else
            printf("# PE 0 %s PE 1, %smem_nbi%s%s, %ld blocks x %ld threads, %ld iterations "
                   "after %ld warm-up, quiet at the end\n",
                   o.get ? "<-" : "->", op, o.scope == SCOPE_THREAD ? "" : "_",
                   o.scope == SCOPE_THREAD ? "" : scope_names[o.scope], o.blocks, o.threads,
                   o.iters, o.warmup);
        fflush(stdout);
    }

    for (size_t size = o.min_size; size <= o.max_size && !failed; size *= 2) {
        /* The side that receives: PE 1 for a put, PE 0 for a get. It starts
         * from a cleared buffer so that stale data cannot pass the check. */
        int receiver = o.get ? 0 : 1, origin = o.get ? 1 : 0;
        int peer = 1;
        unsigned long long bad = 0;
        float ms = 0;

        if (me == receiver)
            BENCH_CUDA(cudaMemset(dst, 0, size));
        BENCH_CUDA(cudaDeviceSynchronize());
        bench_barrier_all();
        if (me == 0 && o.scope == SCOPE_STREAM) {
            on_stream(dst, src, size, peer, o.warmup, o.get, stream);
            BENCH_CUDA(cudaEventRecord(start, stream));
            on_stream(dst, src, size, peer, o.iters, o.get, stream);
            BENCH_CUDA(cudaEventRecord(stop, stream));
            BENCH_CUDA(cudaEventSynchronize(stop));
            BENCH_CUDA(cudaEventElapsedTime(&ms, start, stop));
        } else if (me == 0) {
            void *args[] = {&dst, &src, &size, &peer, &o.warmup};
            if (o.warmup > 0)
                bench_launch((const void *)fn, dim3(o.blocks), dim3(o.threads), args, 0, 0);
            args[4] = &o.iters;
            BENCH_CUDA(cudaEventRecord(start, 0));
            bench_launch((const void *)fn, dim3(o.blocks), dim3(o.threads), args, 0, 0);
            BENCH_CUDA(cudaEventRecord(stop, 0));
            BENCH_CUDA(cudaEventSynchronize(stop));
            BENCH_CUDA(cudaEventElapsedTime(&ms, start, stop));
        }
        bench_barrier_all();
        if (me == receiver) {
            BENCH_CUDA(cudaMemset(bad_d, 0, sizeof(*bad_d)));
            check_kernel<<<256, 256>>>((const uint64_t *)dst, size / 8, origin, bad_d);
            BENCH_CUDA(cudaGetLastError());
            BENCH_CUDA(cudaMemcpy(&bad, bad_d, sizeof(bad), cudaMemcpyDeviceToHost));
            if (bad != 0)
                fprintf(stderr, "PE %d: %llu of %zu words wrong after the %zu-byte %ss\n", me, bad,
                        size / 8, size, op);
        }
        if (bench_total_errors(counts, (long)bad) != 0) {
            failed = 1;
            if (me == 0)
                printf("FAIL: %s data wrong at %zu bytes\n", op, size);
        } else if (me == 0) {
            double gbs = (double)size * (double)o.iters / ((double)ms * 1e-3) / 1e9;
            printf("%zu,%.3f\n", size, gbs);
            fflush(stdout);
        }
    }

    BENCH_CUDA(cudaEventDestroy(start));
    BENCH_CUDA(cudaEventDestroy(stop));
    BENCH_CUDA(cudaStreamDestroy(stream));
    BENCH_CUDA(cudaFree(bad_d));
    bench_free(counts);
    bench_free(dst);
    bench_free(src);
    bench_finalize();
    return failed ? 1 : 0;
}
