/* Device-initiated put (or get) bandwidth from PE 0 to PE 1, in the manner
 * of NVSHMEM's shmem_put_bw perftest: one kernel issues the whole message
 * --iters times, split among the blocks (and, for the narrower scopes, among
 * their warps or threads), all non-blocking, with one quiet at the end;
 * cudaEvents around the kernel give the time. Other PEs stay idle. Scope
 * `stream` runs no kernel: the host queues putmem_on_stream (getmem) of the
 * whole message --iters times on one stream, then quiet_on_stream, the
 * copy-engine road that leaves the SMs free. Scope `raw_stream` is its floor
 * with no library call: cudaMemcpyAsync on the same stream to (from) the
 * peer's buffer as mapped here (the library's device `ptr` call gives the
 * address), so that a gap between the two libraries' stream rows shows
 * whether it is in the call or in how the driver copies each one's heap.
 * Both stream scopes add a column: the host's microseconds per call to
 * queue one message (the fastest run's queueing loop over its iterations).
 * Where the host queues more slowly than the GPU works, those rows are the
 * host's rate; --hold queues every timed call behind a kernel that holds
 * the stream until the last is queued, so the events time the GPU alone.
 *
 *   dev_put_bw [--op put|get|put,get] [--get] [--scope LIST] [--blocks LIST]
 *              [--threads T] [--min-size S] [--max-size S] [--iters N]
 *              [--warmup N] [--reps R] [--max-bytes B] [--align A] [--place S,D]
 *              [--hold]
 *
 * --scope and --blocks take comma lists, so that one job sweeps every
 * configuration (each job start costs seconds, NVSHMEM's more). --reps
 * times every size R times and keeps the fastest, since a short kernel's
 * time carries the launch's jitter; --max-bytes lowers the iterations of
 * large sizes so that one size moves at most B bytes a repetition.
 * --align A starts both buffers at the next multiple of A bytes (a power of
 * two up to 4096) past where the library's malloc put them; --place S,D
 * puts the source at S and the destination at D bytes modulo 2 MiB (the
 * GPU's page), so that two libraries can be timed at the same places; PE 0
 * prints where they start, modulo 4096 and 2 MiB, either way.
 *
 * Builds against ushmem or NVSHMEM (bench_shim.cuh). PE 0 prints CSV as
 * scripts/plot_perf.py reads it, one table per configuration:
 * "# dev_<put|get>_bw_<scope>[-b<blocks>],<impl>,<pes>" (the block count in
 * the name when --blocks lists more than one; "dev_<put|get>_raw_stream"
 * for the floor, so that it is not taken for a library's row), then
 * "size,bandwidth_gbs" rows in GB/s (1e9 bytes per second), with
 * ",host_us" for the stream scopes. Every size is checked on the
 * receiving side after its timed runs; a wrong word makes every PE exit 1. */
#include "bench_shim.cuh"

enum scope { SCOPE_THREAD, SCOPE_WARP, SCOPE_BLOCK, SCOPE_STREAM, SCOPE_RAW_STREAM, NSCOPES };
static const char *const scope_names[NSCOPES] = {"thread", "warp", "block", "stream",
                                                 "raw_stream"};

#define MAX_LIST 8

struct opts {
    int ops[2]; /* ops[0]: put, ops[1]: get */
    int scopes[NSCOPES];
    long blocks[MAX_LIST];
    int nblocks;
    long threads;
    size_t min_size;
    size_t max_size;
    long iters;
    long warmup;
    long reps;
    size_t max_bytes;
    long align;
    long place_src, place_dst; /* modulo 2 MiB; -1: where malloc put them */
    int hold; /* stream scopes: queue the timed calls behind a held kernel */
};

/* --hold: a kernel that holds the stream until the host has queued every
 * timed call, so that the events time the GPU's work alone, not the host's
 * queueing. It spins on a word of mapped host memory until the host writes
 * the run's number there. */
static volatile int *hold_gate;
static int hold_gen;

__global__ void hold_kernel(volatile int *gate, int gen)
{
    while (*gate < gen)
        ;
}

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

/* The peer's object `sym` as mapped on this PE, from the library's device
 * call; NULL where the peer is not mapped here. */
__global__ void peer_ptr_kernel(void **out, const void *sym, int pe)
{
    *out = B_STD(ptr)(sym, pe);
}

static char *peer_mapped(const void *sym, int pe, void **slot_d)
{
    void *p = NULL;

    peer_ptr_kernel<<<1, 1>>>(slot_d, sym, pe);
    BENCH_CUDA(cudaGetLastError());
    BENCH_CUDA(cudaMemcpy(&p, slot_d, sizeof(p), cudaMemcpyDeviceToHost));
    return (char *)p;
}

/* Scope raw_stream: the same copies with no library, between this PE's
 * buffer and the peer's as mapped here. */
static void raw_on_stream(char *dst, const char *src, size_t size, long iters,
                          cudaStream_t stream)
{
    for (long i = 0; i < iters; i++)
        BENCH_CUDA(cudaMemcpyAsync(dst, src, size, cudaMemcpyDeviceToDevice, stream));
}

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
    if (scope >= SCOPE_STREAM)
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
            "  --op LIST           put, get or put,get: putmem_nbi from PE 0 to PE 1, getmem_nbi\n"
            "                      by PE 0 from PE 1 (default put)\n"
            "  --get               the same as --op get\n"
            "  --scope LIST        comma list of thread, warp, block, stream (host calls\n"
            "                      on_stream; no kernel), raw_stream (cudaMemcpyAsync to the\n"
            "                      peer's mapped buffer; no library) (default block)\n"
            "  --blocks LIST       comma list of thread block counts, up to %d (default 32)\n"
            "  --threads T         threads per block, a multiple of 32 up to 1024 (default 1024)\n"
            "  --min-size S        smallest message, bytes, K/M/G suffixes (default 8)\n"
            "  --max-size S        largest message, up to 1G (default 64M)\n"
            "  --iters N           timed repetitions of the message per size (default 50)\n"
            "  --warmup N          untimed repetitions before them (default 5)\n"
            "  --reps R            time each size R times, keep the fastest (default 1)\n"
            "  --max-bytes B       fewer iterations where size x iterations would pass B\n"
            "                      (at least 1; default no limit)\n"
            "  --align A           both buffers from the next multiple of A bytes, a power\n"
            "                      of two up to 4096 (default 1: where malloc put them)\n"
            "  --place S,D         the source at S, the destination at D bytes modulo\n"
            "                      2 MiB (multiples of 8 below 2M; K/M suffixes)\n"
            "  --hold              stream scopes: a kernel holds the stream until every timed\n"
            "                      call is queued, so the time is the GPU's alone (--iters\n"
            "                      at most 200, within what a stream queues without waiting)\n",
            MAX_LIST);
}

/* Parses a comma list of block counts; -1 on a bad one or too many. */
static int parse_blocks(const char *list, struct opts *o)
{
    char buf[128];
    char *save = NULL;

    if (strlen(list) >= sizeof(buf))
        return -1;
    strcpy(buf, list);
    o->nblocks = 0;
    for (char *t = strtok_r(buf, ",", &save); t != NULL; t = strtok_r(NULL, ",", &save)) {
        if (o->nblocks == MAX_LIST || bench_parse_count(t, &o->blocks[o->nblocks]) != 0 ||
            o->blocks[o->nblocks] < 1)
            return -1;
        o->nblocks++;
    }
    return o->nblocks > 0 ? 0 : -1;
}

/* Returns -1 to go on, else the exit code. */
static int parse(int argc, char **argv, struct opts *o)
{
    static const char *const op_names[] = {"put", "get"};

    memset(o, 0, sizeof(*o));
    o->ops[0] = 1;
    o->scopes[SCOPE_BLOCK] = 1;
    o->blocks[0] = 32;
    o->nblocks = 1;
    o->threads = 1024;
    o->min_size = 8;
    o->max_size = 64 * BENCH_MIB;
    o->iters = 50;
    o->warmup = 5;
    o->reps = 1;
    o->align = 1;
    o->place_src = o->place_dst = -1;
    for (int i = 1; i < argc; i++) {
        const char *v;
        int bad = 0;

        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(argv[i], "--get") == 0) {
            o->ops[0] = 0;
            o->ops[1] = 1;
        } else if ((v = bench_opt(argc, argv, &i, "--op")) != NULL) {
            bad = bench_parse_names(v, op_names, 2, o->ops) != 0;
        } else if ((v = bench_opt(argc, argv, &i, "--scope")) != NULL) {
            bad = bench_parse_names(v, scope_names, NSCOPES, o->scopes) != 0;
        } else if ((v = bench_opt(argc, argv, &i, "--blocks")) != NULL) {
            bad = parse_blocks(v, o) != 0;
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
        } else if ((v = bench_opt(argc, argv, &i, "--reps")) != NULL) {
            bad = bench_parse_count(v, &o->reps) != 0 || o->reps < 1;
        } else if ((v = bench_opt(argc, argv, &i, "--max-bytes")) != NULL) {
            bad = bench_parse_size(v, &o->max_bytes) != 0;
        } else if ((v = bench_opt(argc, argv, &i, "--align")) != NULL) {
            bad = bench_parse_count(v, &o->align) != 0 || o->align < 1 || o->align > 4096 ||
                  (o->align & (o->align - 1)) != 0;
        } else if (strcmp(argv[i], "--hold") == 0) {
            o->hold = 1;
        } else if ((v = bench_opt(argc, argv, &i, "--place")) != NULL) {
            char first[32];
            const char *comma = strchr(v, ',');
            size_t ps = 0, pd = 0;
            bad = comma == NULL || (size_t)(comma - v) >= sizeof(first);
            if (!bad) {
                memcpy(first, v, (size_t)(comma - v));
                first[comma - v] = '\0';
                bad = bench_parse_size(first, &ps) != 0 || bench_parse_size(comma + 1, &pd) != 0 ||
                      ps >= 2 * BENCH_MIB || pd >= 2 * BENCH_MIB || ps % 8 != 0 || pd % 8 != 0;
            }
            o->place_src = (long)ps;
            o->place_dst = (long)pd;
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
    if (o->hold && (o->iters > 200 || o->warmup > 200)) {
        fprintf(stderr, "dev_put_bw: --hold takes --iters and --warmup up to 200\n");
        return 2;
    }
    return -1;
}

/* What one configuration's sweep needs. */
struct sweep {
    char *src, *dst;
    char *peer_src, *peer_dst; /* PE 1's src and dst as mapped here, or NULL */
    long *counts;
    unsigned long long *bad_d;
    cudaEvent_t start, stop;
    cudaStream_t stream;
    int me;
};

/* Milliseconds of one timed run: `iters` messages of `size`, after `warmup`
 * untimed ones; for the stream scopes also the host's seconds spent
 * queueing the timed ones, in *queued_s. */
static float time_once(const struct opts *o, const struct sweep *w, int scope, int get,
                       long blocks, size_t size, long warmup, long iters, double *queued_s)
{
    char *dst = w->dst, *src = w->src;
    int peer = 1;
    float ms = 0;

    *queued_s = 0;
    if (scope == SCOPE_STREAM || scope == SCOPE_RAW_STREAM) {
        /* raw: from here to the peer's dst for a put, from the peer's src
         * to here for a get. */
        char *to = get ? dst : w->peer_dst;
        const char *from = get ? w->peer_src : src;
        if (scope == SCOPE_STREAM)
            on_stream(dst, src, size, peer, warmup, get, w->stream);
        else
            raw_on_stream(to, from, size, warmup, w->stream);
        if (o->hold)
            hold_kernel<<<1, 1, 0, w->stream>>>(hold_gate, ++hold_gen);
        BENCH_CUDA(cudaEventRecord(w->start, w->stream));
        double t0 = bench_host_seconds();
        if (scope == SCOPE_STREAM)
            on_stream(dst, src, size, peer, iters, get, w->stream);
        else
            raw_on_stream(to, from, size, iters, w->stream);
        *queued_s = bench_host_seconds() - t0;
        BENCH_CUDA(cudaEventRecord(w->stop, w->stream));
        if (o->hold)
            *hold_gate = hold_gen;
    } else {
        bw_fn fn = pick_kernel(scope, get);
        void *args[] = {&dst, &src, &size, &peer, &warmup};
        if (warmup > 0)
            bench_launch((const void *)fn, dim3(blocks), dim3(o->threads), args, 0, 0);
        args[4] = &iters;
        BENCH_CUDA(cudaEventRecord(w->start, 0));
        bench_launch((const void *)fn, dim3(blocks), dim3(o->threads), args, 0, 0);
        BENCH_CUDA(cudaEventRecord(w->stop, 0));
    }
    BENCH_CUDA(cudaEventSynchronize(w->stop));
    BENCH_CUDA(cudaEventElapsedTime(&ms, w->start, w->stop));
    return ms;
}

/* Every size of one configuration; returns 1 when data came out wrong. */
static int run_sweep(const struct opts *o, const struct sweep *w, int scope, int get, long blocks,
                     int npes)
{
    const char *op = get ? "get" : "put";
    int me = w->me;
    int on_host = scope == SCOPE_STREAM || scope == SCOPE_RAW_STREAM;

    if (scope == SCOPE_RAW_STREAM && (w->peer_src == NULL || w->peer_dst == NULL)) {
        if (me == 0)
            printf("# dev_%s_raw_stream: PE 1's heap is not mapped on PE 0; skipped\n", op);
        return 0;
    }
    if (me == 0) {
        char name[64];
        if (scope == SCOPE_RAW_STREAM)
            snprintf(name, sizeof(name), "dev_%s_raw_stream", op);
        else if (o->nblocks > 1 && scope != SCOPE_STREAM)
            snprintf(name, sizeof(name), "dev_%s_bw_%s-b%ld", op, scope_names[scope], blocks);
        else
            snprintf(name, sizeof(name), "dev_%s_bw_%s", op, scope_names[scope]);
        printf("# %s,%s,%d\n", name, BENCH_IMPL, npes);
        printf(on_host ? "size,bandwidth_gbs,host_us\n" : "size,bandwidth_gbs\n");
        if (scope == SCOPE_STREAM)
            printf("# PE 0 %s PE 1, %smem_on_stream from the host, one stream, %ld iterations "
                   "after %ld warm-up, quiet_on_stream at the end",
                   get ? "<-" : "->", op, o->iters, o->warmup);
        else if (scope == SCOPE_RAW_STREAM)
            printf("# PE 0 %s PE 1, cudaMemcpyAsync %s PE 1's buffer as mapped here (no library "
                   "call), one stream, %ld iterations after %ld warm-up",
                   get ? "<-" : "->", get ? "from" : "to", o->iters, o->warmup);
        else
            printf("# PE 0 %s PE 1, %smem_nbi%s%s, %ld blocks x %ld threads, %ld iterations "
                   "after %ld warm-up, quiet at the end",
                   get ? "<-" : "->", op, scope == SCOPE_THREAD ? "" : "_",
                   scope == SCOPE_THREAD ? "" : scope_names[scope], blocks, o->threads, o->iters,
                   o->warmup);
        if (on_host && o->hold)
            printf(", queued behind a held kernel (the GPU's time alone)");
        if (o->max_bytes > 0)
            printf(", fewer where they would move more than %zu bytes", o->max_bytes);
        if (o->reps > 1)
            printf(", the fastest of %ld runs", o->reps);
        printf("\n");
        fflush(stdout);
    }

    for (size_t size = o->min_size; size <= o->max_size; size *= 2) {
        /* The side that receives: PE 1 for a put, PE 0 for a get. It starts
         * from a cleared buffer so that stale data cannot pass the check. */
        int receiver = get ? 0 : 1, origin = get ? 1 : 0;
        long iters = o->iters, warmup = o->warmup;
        unsigned long long bad = 0;
        float best = 0;
        double queued_best = 0;

        if (o->max_bytes > 0 && (size_t)iters > o->max_bytes / size) {
            iters = o->max_bytes / size > 0 ? (long)(o->max_bytes / size) : 1;
            warmup = warmup < iters ? warmup : iters;
        }
        if (me == receiver)
            BENCH_CUDA(cudaMemset(w->dst, 0, size));
        BENCH_CUDA(cudaDeviceSynchronize());
        bench_barrier_all();
        for (long r = 0; me == 0 && r < o->reps; r++) {
            double queued_s;
            float ms = time_once(o, w, scope, get, blocks, size, r == 0 ? warmup : 0, iters,
                                 &queued_s);
            if (r == 0 || ms < best)
                best = ms;
            if (r == 0 || queued_s < queued_best)
                queued_best = queued_s;
        }
        bench_barrier_all();
        if (me == receiver) {
            BENCH_CUDA(cudaMemset(w->bad_d, 0, sizeof(*w->bad_d)));
            check_kernel<<<256, 256>>>((const uint64_t *)w->dst, size / 8, origin, w->bad_d);
            BENCH_CUDA(cudaGetLastError());
            BENCH_CUDA(cudaMemcpy(&bad, w->bad_d, sizeof(bad), cudaMemcpyDeviceToHost));
            if (bad != 0)
                fprintf(stderr, "PE %d: %llu of %zu words wrong after the %zu-byte %ss\n", me, bad,
                        size / 8, size, op);
        }
        if (bench_total_errors(w->counts, (long)bad) != 0) {
            if (me == 0)
                printf("FAIL: %s data wrong at %zu bytes\n", op, size);
            return 1;
        }
        if (me == 0) {
            double gbs = (double)size * (double)iters / ((double)best * 1e-3) / 1e9;
            if (on_host)
                printf("%zu,%.3f,%.3f\n", size, gbs, queued_best * 1e6 / (double)iters);
            else
                printf("%zu,%.3f\n", size, gbs);
            fflush(stdout);
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    struct opts o;
    struct sweep w;
    int rc = parse(argc, argv, &o), npes, failed = 0;

    if (rc >= 0)
        return rc;
    bench_init(&argc, &argv);
    w.me = bench_my_pe();
    npes = bench_n_pes();
    if (npes < 2) {
        if (w.me == 0)
            printf("dev_put_bw: needs at least 2 PEs; skipped\n");
        bench_finalize();
        return 77;
    }

    /* Every PE's buffers have the same residue modulo 4096, and modulo 2
     * MiB (the heaps are symmetric and their bases on page boundaries), so
     * all move alike; were it not so, the puts would miss their places and
     * the data check below would say so. */
    const uintptr_t page = 2 * BENCH_MIB;
    size_t pad = o.place_src >= 0 ? page : (size_t)o.align;
    char *src_alloc = (char *)bench_malloc(o.max_size + pad);
    char *dst_alloc = (char *)bench_malloc(o.max_size + pad);
    if (o.place_src >= 0) {
        w.src = src_alloc + (((uintptr_t)o.place_src - (uintptr_t)src_alloc) & (page - 1));
        w.dst = dst_alloc + (((uintptr_t)o.place_dst - (uintptr_t)dst_alloc) & (page - 1));
    } else {
        w.src = src_alloc + (-(uintptr_t)src_alloc & (uintptr_t)(o.align - 1));
        w.dst = dst_alloc + (-(uintptr_t)dst_alloc & (uintptr_t)(o.align - 1));
    }
    if (w.me == 0)
        printf("# buffers from %s: src at %lu, dst at %lu modulo 4096 (%lu, %lu modulo 2 MiB)%s\n",
               BENCH_IMPL, (unsigned long)((uintptr_t)w.src % 4096),
               (unsigned long)((uintptr_t)w.dst % 4096), (unsigned long)((uintptr_t)w.src % page),
               (unsigned long)((uintptr_t)w.dst % page),
               o.place_src >= 0 ? " (--place)" : o.align > 1 ? " (--align)" : "");
    w.counts = (long *)bench_malloc((size_t)npes * sizeof(long));
    BENCH_CUDA(cudaMalloc((void **)&w.bad_d, sizeof(*w.bad_d)));
    w.peer_src = w.peer_dst = NULL;
    if (o.scopes[SCOPE_RAW_STREAM]) {
        void **slot_d;
        BENCH_CUDA(cudaMalloc((void **)&slot_d, sizeof(*slot_d)));
        w.peer_src = peer_mapped(w.src, 1, slot_d);
        w.peer_dst = peer_mapped(w.dst, 1, slot_d);
        BENCH_CUDA(cudaFree(slot_d));
    }
    BENCH_CUDA(cudaEventCreate(&w.start));
    BENCH_CUDA(cudaEventCreate(&w.stop));
    BENCH_CUDA(cudaStreamCreateWithFlags(&w.stream, cudaStreamNonBlocking));
    if (o.hold) {
        int *gate;
        BENCH_CUDA(cudaHostAlloc((void **)&gate, sizeof(int), cudaHostAllocMapped));
        *gate = 0;
        hold_gate = gate;
    }
    fill_kernel<<<256, 256>>>((uint64_t *)w.src, o.max_size / 8, w.me);
    BENCH_CUDA(cudaGetLastError());
    BENCH_CUDA(cudaDeviceSynchronize());

    /* Puts before gets; within each, the scopes in their order, and the
     * block counts as listed (the stream scopes once: they run no kernel). */
    for (int get = 0; get < 2 && !failed; get++) {
        for (int scope = 0; scope < NSCOPES && o.ops[get] && !failed; scope++) {
            for (int b = 0; o.scopes[scope] && b < o.nblocks && !failed; b++) {
                failed = run_sweep(&o, &w, scope, get, o.blocks[b], npes);
                if (scope >= SCOPE_STREAM)
                    break;
            }
        }
    }

    BENCH_CUDA(cudaEventDestroy(w.start));
    BENCH_CUDA(cudaEventDestroy(w.stop));
    BENCH_CUDA(cudaStreamDestroy(w.stream));
    BENCH_CUDA(cudaFree(w.bad_d));
    bench_free(w.counts);
    bench_free(dst_alloc);
    bench_free(src_alloc);
    bench_finalize();
    return failed ? 1 : 0;
}
