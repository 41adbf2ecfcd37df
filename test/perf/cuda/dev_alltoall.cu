/* Device-initiated alltoall, written once with putmem_nbi_block so that
 * ushmem and NVSHMEM run the same kernel: every PE has a send and a receive
 * buffer of npes chunks; one kernel of --blocks blocks x 1024 threads sends
 * chunk j of the send buffer to PE j, into chunk me of its receive buffer,
 * each block carrying its slice of every chunk (block b in the order
 * me+1+b, me+2+b, ..., modulo npes, so that the blocks cover every PE at
 * once). Each thread then quiets, the last block to finish
 * runs one device barrier_all, and the alltoall is complete everywhere when
 * the kernel ends.
 *
 *   dev_alltoall [--blocks B|sms] [--threads T] [--min-size S] [--max-size S]
 *                [--iters N] [--warmup N] [--on-stream]
 *
 * --on-stream runs the host's alltoallmem_on_stream instead of the kernel
 * (ushmem: copy-engine copies, its own share beside the others from 8 MiB
 * per pair; NVSHMEM: its own kernel), on one stream, timed the same way.
 * --parts (with --on-stream) also times, per size, what ushmem's call is
 * made of, each queued alone the same number of times: two
 * barrier_all_on_stream (barriers_us) and one putmem_on_stream to each PE,
 * this one included (puts_us); no data is checked in those loops.
 *
 * Sizes S are the bytes each PE sends in all (its send buffer, nccl-tests'
 * "size"), doubling from --min-size to --max-size. Before timing, each size
 * is run once and every byte received is checked on every PE; a wrong byte
 * prints FAIL and every PE exits 1. PE 0 prints CSV as scripts/plot_perf.py
 * reads it: "# dev_alltoall,<impl>,<pes>" (dev_alltoall_stream with
 * --on-stream), then
 * "size,busbw_gbs,algbw_gbs,time_us" with algbw = S / time and
 * busbw = algbw * (npes - 1) / npes, as nccl-tests define them for
 * alltoall. */
#include "bench_shim.cuh"

struct opts {
    long blocks;
    long threads;
    size_t min_size;
    size_t max_size;
    long iters;
    long warmup;
    int on_stream;
    int parts;
};

/* arrived counts blocks over all launches; launch `epoch` (from 1) is
 * complete on this PE when it reaches epoch * gridDim.x. */
__global__ void __launch_bounds__(1024)
    alltoall_kernel(char *recv, const char *send, size_t chunk, int me, int npes,
                    unsigned int *arrived, unsigned int epoch)
{
    size_t len, off = bench_part(chunk, gridDim.x, blockIdx.x, 16, &len);

    /* Each block starts at another PE (the next PE, shifted by the block's
     * index), so at any time the blocks write to every PE at once, this
     * one's own chunk included: the local copy overlaps the link traffic
     * instead of following it, and no PE is everyone's first target. */
    for (int i = 1; i <= npes && len > 0; i++) {
        int peer = (int)((me + i + blockIdx.x) % (unsigned)npes);
        B_putmem_nbi_block(recv + (size_t)me * chunk + off, send + (size_t)peer * chunk + off, len,
                           peer);
    }
    B_quiet_block();
    if (threadIdx.x == 0) {
        __threadfence();
        if (atomicAdd(arrived, 1u) == epoch * gridDim.x - 1)
            B_barrier_all();
    }
}

/* The word PE src sends to PE dst at word w of the chunk; salt changes with
 * the size so that a size cannot pass on the previous one's data. */
__host__ __device__ static inline uint64_t pattern(int src, int dst, size_t w, unsigned salt)
{
    return ((uint64_t)(src + 1) << 56) ^ ((uint64_t)(dst + 1) << 48) ^ ((uint64_t)salt << 40) ^ w;
}

__global__ void fill_kernel(uint64_t *send, size_t chunk_words, int me, int npes, unsigned salt)
{
    size_t n = chunk_words * npes;

    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        send[i] = pattern(me, (int)(i / chunk_words), i % chunk_words, salt);
}

__global__ void check_kernel(const uint64_t *recv, size_t chunk_words, int me, int npes,
                             unsigned salt, unsigned long long *bad)
{
    size_t n = chunk_words * npes;
    unsigned long long wrong = 0;

    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        wrong += recv[i] != pattern((int)(i / chunk_words), me, i % chunk_words, salt);
    if (wrong != 0)
        atomicAdd(bad, wrong);
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: dev_alltoall [options]\n"
            "  --blocks B      thread blocks (default 32); sms: one per multiprocessor\n"
            "  --threads T     threads per block, a multiple of 32 up to 1024 (default 1024)\n"
            "  --min-size S    smallest total bytes per PE, K/M/G suffixes (default 1M)\n"
            "  --max-size S    largest total bytes per PE (default 1G)\n"
            "  --iters N       timed alltoalls per size (default 20)\n"
            "  --warmup N      untimed alltoalls before them (default 5)\n"
            "  --on-stream     the host's alltoallmem_on_stream, no kernel of this program's\n"
            "  --parts         with --on-stream: also time two barrier_all_on_stream and the\n"
            "                  puts_on_stream alone (columns barriers_us, puts_us)\n"
            "The symmetric heap must hold 2 x max-size plus a little.\n");
}

/* Returns -1 to go on, else the exit code. */
static int parse(int argc, char **argv, struct opts *o)
{
    o->blocks = 32;
    o->threads = 1024;
    o->min_size = BENCH_MIB;
    o->max_size = BENCH_GIB;
    o->iters = 20;
    o->warmup = 5;
    o->on_stream = 0;
    o->parts = 0;
    for (int i = 1; i < argc; i++) {
        const char *v;
        int bad = 0;

        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        } else if ((v = bench_opt(argc, argv, &i, "--blocks")) != NULL) {
            /* 0 stands for one block per multiprocessor, found once the
             * device is chosen. */
            if (strcmp(v, "sms") == 0)
                o->blocks = 0;
            else
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
        } else if (strcmp(argv[i], "--on-stream") == 0) {
            o->on_stream = 1;
        } else if (strcmp(argv[i], "--parts") == 0) {
            o->parts = 1;
        } else {
            bad = 1;
            v = argv[i];
        }
        if (bad) {
            fprintf(stderr, "dev_alltoall: bad option or value near '%s'\n", v);
            usage(stderr);
            return 2;
        }
    }
    if (o->parts && !o->on_stream) {
        fprintf(stderr, "dev_alltoall: --parts needs --on-stream\n");
        return 2;
    }
    if (o->min_size < 1 || o->min_size > o->max_size) {
        fprintf(stderr, "dev_alltoall: need 1 <= --min-size <= --max-size\n");
        return 2;
    }
    return -1;
}

/* One alltoall of chunk bytes per pair on the stream: the kernel, or the
 * host's on-stream call. */
static void one_alltoall(const struct opts *o, dim3 grid, dim3 block, void **args,
                         unsigned *epoch, char *recv, const char *send, size_t chunk,
                         cudaStream_t stream)
{
    if (o->on_stream) {
        bench_alltoall_on_stream(recv, send, chunk, stream);
        return;
    }
    (*epoch)++;
    bench_launch((const void *)alltoall_kernel, grid, block, args, stream, 1);
}

/* Microseconds per call of `part` (0: two barriers on the stream; 1: a put
 * of chunk bytes to every PE on the stream), o->iters times after the
 * warm-up, every PE at once. */
static double time_part(const struct opts *o, int part, char *recv, const char *send,
                        size_t chunk, int me, int npes, cudaStream_t stream, cudaEvent_t start,
                        cudaEvent_t stop)
{
    float ms = 0;

    for (long i = -o->warmup; i < o->iters; i++) {
        if (i == 0) {
            BENCH_CUDA(cudaStreamSynchronize(stream));
            bench_barrier_all();
            BENCH_CUDA(cudaEventRecord(start, stream));
        }
        if (part == 0) {
            bench_barrier_all_on_stream(stream);
            bench_barrier_all_on_stream(stream);
        } else {
            for (int k = 1; k <= npes; k++) {
                int pe = (me + k) % npes;
                bench_putmem_on_stream(recv + (size_t)me * chunk, send + (size_t)pe * chunk,
                                       chunk, pe, stream);
            }
        }
    }
    BENCH_CUDA(cudaEventRecord(stop, stream));
    BENCH_CUDA(cudaEventSynchronize(stop));
    BENCH_CUDA(cudaGetLastError());
    BENCH_CUDA(cudaEventElapsedTime(&ms, start, stop));
    bench_barrier_all();
    return (double)ms * 1e3 / (double)o->iters;
}

int main(int argc, char **argv)
{
    struct opts o;
    int rc = parse(argc, argv, &o), me, npes, failed = 0;
    char *send, *recv;
    long *counts;
    unsigned int *arrived, epoch = 0;
    unsigned long long *bad_d;
    cudaEvent_t start, stop;
    cudaStream_t stream;
    unsigned salt = 0;

    if (rc >= 0)
        return rc;
    bench_init(&argc, &argv);
    me = bench_my_pe();
    npes = bench_n_pes();

    send = (char *)bench_malloc(o.max_size);
    recv = (char *)bench_malloc(o.max_size);
    counts = (long *)bench_malloc((size_t)npes * sizeof(long));
    BENCH_CUDA(cudaMalloc((void **)&arrived, sizeof(*arrived)));
    BENCH_CUDA(cudaMemset(arrived, 0, sizeof(*arrived)));
    BENCH_CUDA(cudaMalloc((void **)&bad_d, sizeof(*bad_d)));
    BENCH_CUDA(cudaEventCreate(&start));
    BENCH_CUDA(cudaEventCreate(&stop));
    BENCH_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    BENCH_CUDA(cudaDeviceSynchronize());

    if (o.blocks == 0) {
        int dev, sms;
        BENCH_CUDA(cudaGetDevice(&dev));
        BENCH_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
        o.blocks = sms;
    }
    if (me == 0) {
        printf("# %s,%s,%d\n", o.on_stream ? "dev_alltoall_stream" : "dev_alltoall", BENCH_IMPL,
               npes);
        printf(o.parts ? "size,busbw_gbs,algbw_gbs,time_us,barriers_us,puts_us\n"
                       : "size,busbw_gbs,algbw_gbs,time_us\n");
        if (o.on_stream)
            printf("# alltoallmem_on_stream from the host, one stream; %ld iterations after %ld "
                   "warm-up\n",
                   o.iters, o.warmup);
        else
            printf("# putmem_nbi_block per block and peer, %ld blocks x %ld threads, quiet, "
                   "barrier_all; %ld iterations after %ld warm-up\n",
                   o.blocks, o.threads, o.iters, o.warmup);
        fflush(stdout);
    }

    for (size_t size = o.min_size; size <= o.max_size && !failed; size *= 2) {
        /* Chunks are whole 16-byte units, so a size that npes does not
         * divide moves a little less than size; the bandwidth counts the
         * bytes actually moved. */
        size_t chunk = size / (size_t)npes / 16 * 16;
        size_t moved = chunk * (size_t)npes;
        unsigned long long bad = 0;
        void *args[] = {&recv, &send, &chunk, &me, &npes, &arrived, &epoch};
        dim3 grid(o.blocks), block(o.threads);
        float ms = 0;

        if (chunk == 0)
            continue;
        salt = (salt + 1) & 0xff;

        /* One checked run: a known pattern out, a cleared buffer in. */
        fill_kernel<<<512, 256>>>((uint64_t *)send, chunk / 8, me, npes, salt);
        BENCH_CUDA(cudaGetLastError());
        BENCH_CUDA(cudaMemset(recv, 0, moved));
        BENCH_CUDA(cudaDeviceSynchronize());
        bench_barrier_all();
        one_alltoall(&o, grid, block, args, &epoch, recv, send, chunk, stream);
        BENCH_CUDA(cudaDeviceSynchronize());
        BENCH_CUDA(cudaMemset(bad_d, 0, sizeof(*bad_d)));
        check_kernel<<<512, 256>>>((const uint64_t *)recv, chunk / 8, me, npes, salt, bad_d);
        BENCH_CUDA(cudaGetLastError());
        BENCH_CUDA(cudaMemcpy(&bad, bad_d, sizeof(bad), cudaMemcpyDeviceToHost));
        if (bad != 0)
            fprintf(stderr, "PE %d: %llu of %zu received words wrong at size %zu\n", me, bad,
                    moved / 8, size);
        if (bench_total_errors(counts, (long)bad) != 0) {
            failed = 1;
            if (me == 0)
                printf("FAIL: alltoall data wrong at %zu bytes per PE\n", size);
            break;
        }

        for (long i = 0; i < o.warmup; i++)
            one_alltoall(&o, grid, block, args, &epoch, recv, send, chunk, stream);
        BENCH_CUDA(cudaDeviceSynchronize());
        bench_barrier_all();
        BENCH_CUDA(cudaEventRecord(start, stream));
        for (long i = 0; i < o.iters; i++)
            one_alltoall(&o, grid, block, args, &epoch, recv, send, chunk, stream);
        BENCH_CUDA(cudaEventRecord(stop, stream));
        BENCH_CUDA(cudaEventSynchronize(stop));
        BENCH_CUDA(cudaGetLastError());
        BENCH_CUDA(cudaEventElapsedTime(&ms, start, stop));
        bench_barrier_all();
        double barriers_us = 0, puts_us = 0;
        if (o.parts) {
            barriers_us = time_part(&o, 0, recv, send, chunk, me, npes, stream, start, stop);
            puts_us = time_part(&o, 1, recv, send, chunk, me, npes, stream, start, stop);
        }

        if (me == 0) {
            double us = (double)ms * 1e3 / (double)o.iters;
            double algbw = (double)moved / (us * 1e3);
            double busbw = algbw * (double)(npes - 1) / (double)npes;
            if (o.parts)
                printf("%zu,%.2f,%.2f,%.1f,%.1f,%.1f\n", size, busbw, algbw, us, barriers_us,
                       puts_us);
            else
                printf("%zu,%.2f,%.2f,%.1f\n", size, busbw, algbw, us);
            fflush(stdout);
        }
    }

    BENCH_CUDA(cudaEventDestroy(start));
    BENCH_CUDA(cudaEventDestroy(stop));
    BENCH_CUDA(cudaStreamDestroy(stream));
    BENCH_CUDA(cudaFree(bad_d));
    BENCH_CUDA(cudaFree(arrived));
    bench_free(counts);
    bench_free(recv);
    bench_free(send);
    bench_finalize();
    return failed ? 1 : 0;
}
