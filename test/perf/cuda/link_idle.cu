/* What one operation from GPU 0 into GPU 1's memory costs after both have
 * been idle, with no OpenSHMEM library in the way, and what keeps it cheap.
 * On two H200s every library's (ushmem's direct and proxy roads, NVSHMEM's)
 * writes into the other GPU took about 100 us more after 100 ms without
 * one, and none on one GPU; this finds what sleeps. Found (two H200s,
 * NVLink): not the link, nor either GPU, nor the host. A write into a
 * place of GPU 1 that no write from GPU 0 reached for 30 to 100 ms pays
 * the 100 us; a keeper's write each millisecond into the same 128 bytes
 * keeps it cheap, one 1 KiB away or in another allocation does not.
 *
 * One process drives both GPUs through peer pointers. Each op is one
 * single-thread kernel on GPU 0, timed inside by the GPU's global timer
 * (the launch is not in the figure):
 *   fadd       a system-scope atomic fetch-add on a word of GPU 1 (a round
 *              trip over the link)
 *   store      a store into GPU 1 and a system fence (the fence waits for
 *              the store to be done)
 *   load       a volatile load of a line of GPU 1 not read before
 *   local      a system-scope fetch-add on GPU 0's own memory (control)
 * and two the host issues on a stream of GPU 0, as a proxy thread does,
 * timed on the host from the call to the end of a stream synchronisation
 * (the driver's calls included):
 *   ce         an 8-byte copy-engine copy into GPU 1 (cudaMemcpyAsync)
 *   memop      cuStreamWriteValue64 of a word of GPU 1
 * For each idle time T of the list, REPS launches, the host sleeping T
 * before each; the median. While the host sleeps, a keeper may run:
 *   none       nothing: both GPUs and the link idle
 *   link       a host thread copies 8 bytes from GPU 0 to GPU 1 with the
 *              copy engine every millisecond (cudaMemcpyPeerAsync), into
 *              the word after the ops' two, in the same 128-byte line
 *   kernel0    a host thread launches a one-thread kernel on GPU 0 that
 *              stores 8 bytes into that word every millisecond (the SMs'
 *              path)
 *   gpu1       a host thread launches a one-thread kernel on GPU 1 that
 *              touches GPU 1's own memory every millisecond (GPU 1 busy, the
 *              link idle)
 *   gpu0       the same on GPU 0 (GPU 0 busy, the link idle)
 *   host       no GPU work; the host spins instead of sleeping (its CPU
 *              awake, the GPUs and the link idle)
 *   far        as link, into another allocation of GPU 1 of 1 GiB, --far-kb
 *              KiB and 32 bytes into it (default 524288 KiB): whether
 *              what sleeps is the link or something of the addresses;
 *              --op-far points the fetch-add and the store at that
 *              allocation's first words instead (--far-kb 0: the same
 *              line)
 *   memop      a host thread writes 8 bytes into link's word with
 *              cuStreamWriteValue64 on a stream of GPU 0 (the path a
 *              proxy's stores take, where `link` is the copy engine's)
 * A keeper that removes the step names the part that sleeps, and what a
 * library would have to do to keep it awake. --keep-us sets how often a
 * keeper acts (default 1000).
 *
 *   link_idle [--idle-ms LIST] [--reps N] [--keepers LIST] [--ops LIST] [--keep-us N]
 *             [--far-kb N] [--op-far]
 *             (defaults 0,1,10,30,100,300; 9; none,link,kernel0,gpu1,gpu0,host,memop,far;
 *              fadd,store,load,local,ce,memop; 1000)
 *
 * Prints CSV as scripts/plot_perf.py reads it: "# link_idle,raw,2", then
 * "case,latency_us" rows named <op>_<keeper>_<T ms>, each with the lowest
 * and highest in a comment. Exits 77 with fewer than two GPUs or without
 * peer access between GPUs 0 and 1. */
#include <cuda.h>
#include <cuda_runtime.h>

#include <pthread.h>
#include <atomic>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CHECK(call)                                                                        \
    do {                                                                                   \
        cudaError_t err_ = (call);                                                         \
        if (err_ != cudaSuccess) {                                                         \
            fprintf(stderr, "link_idle: %s failed: %s\n", #call, cudaGetErrorString(err_)); \
            exit(1);                                                                       \
        }                                                                                  \
    } while (0)

#include "driver_entries.cuh"

#define MAX_LIST 16
#define MAX_REPS 99
#define LOAD_LINES 4096 /* lines of 128 bytes GPU 0 reads from GPU 1, one per launch */

enum { OP_FADD, OP_STORE, OP_LOAD, OP_LOCAL, OP_CE, OP_MEMOP, NOPS };
static const char *const op_names[NOPS] = {"fadd", "store", "load", "local", "ce", "memop"};
enum { K_NONE, K_LINK, K_KERNEL0, K_GPU1, K_GPU0, K_HOST, K_MEMOP, K_FAR, NKEEPERS };
static const char *const keeper_names[NKEEPERS] = {"none", "link", "kernel0", "gpu1", "gpu0",
                                                   "host", "memop", "far"};

__device__ static inline unsigned long long now_ns(void)
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

/* One op, timed; *out = nanoseconds, out[1] = the value seen (kept live). */
__global__ void op_kernel(int op, unsigned long long *peer, unsigned long long *own,
                          const volatile unsigned long long *line, unsigned long long *out)
{
    unsigned long long t0 = now_ns(), v = 0;
    if (op == OP_FADD) {
        v = atomicAdd_system(peer, 1ULL);
    } else if (op == OP_STORE) {
        /* The word after the fetch-add's counter, which the store must
         * leave alone: its count is checked. */
        *(volatile unsigned long long *)(peer + 1) = t0;
        __threadfence_system();
    } else if (op == OP_LOAD) {
        v = *line;
    } else {
        v = atomicAdd_system(own, 1ULL);
    }
    unsigned long long t1 = now_ns();
    out[0] = t1 - t0;
    out[1] = v;
}

/* A keeper's tick: one store into `where` (GPU 1's memory, or the
 * launching GPU's own). */
__global__ void tick_kernel(unsigned long long *where, unsigned long long v)
{
    *(volatile unsigned long long *)where = v;
    __threadfence_system();
}

struct keeper {
    int kind;
    std::atomic<int> stop;
    cudaStream_t stream0, stream1; /* on GPU 0 and GPU 1 */
    unsigned long long *peer_word, *own0_word, *own1_word, *src0, *far_word;
    pthread_t thread;
};

static void sleep_ns(long ns)
{
    struct timespec ts = {ns / 1000000000L, ns % 1000000000L};
    nanosleep(&ts, NULL);
}

static CUresult (*cu_write64)(CUstream, CUdeviceptr, cuuint64_t, unsigned int);

static double host_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec * 1e-3;
}

static long keep_ns = 1000000L; /* --keep-us */
static long far_kb = 524288;     /* --far-kb */
static int op_far;               /* --op-far */

static void spin_ns(long ns)
{
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do
        clock_gettime(CLOCK_MONOTONIC, &t);
    while ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) < ns);
}

static void *keeper_main(void *arg)
{
    struct keeper *k = (struct keeper *)arg;
    unsigned long long n = 0;
    while (!k->stop.load()) {
        n++;
        if (k->kind == K_LINK || k->kind == K_FAR) {
            CHECK(cudaSetDevice(0));
            CHECK(cudaMemcpyPeerAsync(k->kind == K_FAR ? k->far_word : k->peer_word, 1, k->src0,
                                      0, 8, k->stream0));
        } else if (k->kind == K_KERNEL0) {
            CHECK(cudaSetDevice(0));
            tick_kernel<<<1, 1, 0, k->stream0>>>(k->peer_word, n);
        } else if (k->kind == K_GPU1) {
            CHECK(cudaSetDevice(1));
            tick_kernel<<<1, 1, 0, k->stream1>>>(k->own1_word, n);
        } else if (k->kind == K_MEMOP) {
            CHECK(cudaSetDevice(0));
            if (cu_write64((CUstream)k->stream0, (CUdeviceptr)(uintptr_t)k->peer_word,
                           (cuuint64_t)n, 0) != CUDA_SUCCESS) {
                fprintf(stderr, "link_idle: cuStreamWriteValue64 failed\n");
                exit(1);
            }
        } else if (k->kind == K_GPU0) {
            CHECK(cudaSetDevice(0));
            tick_kernel<<<1, 1, 0, k->stream0>>>(k->own0_word, n);
        }
        CHECK(cudaGetLastError());
        sleep_ns(keep_ns);
    }
    CHECK(cudaStreamSynchronize(k->stream0));
    CHECK(cudaStreamSynchronize(k->stream1));
    return NULL;
}

static int parse_list(const char *s, long *out, int *n, long max)
{
    char buf[256], *save = NULL;
    if (strlen(s) >= sizeof(buf))
        return -1;
    strcpy(buf, s);
    *n = 0;
    for (char *t = strtok_r(buf, ",", &save); t != NULL; t = strtok_r(NULL, ",", &save)) {
        char *end;
        long v = strtol(t, &end, 10);
        if (*n == MAX_LIST || *end != '\0' || v < 0 || v > max)
            return -1;
        out[(*n)++] = v;
    }
    return *n > 0 ? 0 : -1;
}

static int parse_names(const char *s, const char *const *names, int count, int *want)
{
    char buf[256], *save = NULL;
    if (strlen(s) >= sizeof(buf))
        return -1;
    strcpy(buf, s);
    memset(want, 0, sizeof(int) * (size_t)count);
    for (char *t = strtok_r(buf, ",", &save); t != NULL; t = strtok_r(NULL, ",", &save)) {
        int found = 0;
        for (int i = 0; i < count; i++)
            if (strcmp(t, names[i]) == 0)
                want[i] = found = 1;
        if (!found)
            return -1;
    }
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    long idle_ms[MAX_LIST] = {0, 1, 10, 30, 100, 300}, reps = 9;
    long reps_list = 0, keep_list = 0;
    int n_idle = 6, one = 0, want_op[NOPS] = {1, 1, 1, 1, 1, 1},
        want_keeper[NKEEPERS] = {1, 1, 1, 1, 1, 1, 1, 1};

    for (int i = 1; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        int bad = v == NULL;
        if (!bad && strcmp(argv[i], "--idle-ms") == 0)
            bad = parse_list(v, idle_ms, &n_idle, 10000) != 0;
        else if (!bad && strcmp(argv[i], "--reps") == 0)
            bad = parse_list(v, &reps_list, &one, MAX_REPS) != 0 || one != 1 ||
                  (reps = reps_list) < 1;
        else if (!bad && strcmp(argv[i], "--far-kb") == 0)
            bad = parse_list(v, &far_kb, &one, 1048575) != 0 || one != 1;
        else if (strcmp(argv[i], "--op-far") == 0) {
            op_far = 1;
            continue;
        } else if (!bad && strcmp(argv[i], "--keep-us") == 0)
            bad = parse_list(v, &keep_list, &one, 1000000) != 0 || one != 1 ||
                  (keep_ns = keep_list * 1000L) < 1000;
        else if (!bad && strcmp(argv[i], "--keepers") == 0)
            bad = parse_names(v, keeper_names, NKEEPERS, want_keeper) != 0;
        else if (!bad && strcmp(argv[i], "--ops") == 0)
            bad = parse_names(v, op_names, NOPS, want_op) != 0;
        else
            bad = 1;
        if (bad) {
            fprintf(stderr, "link_idle: bad option or value near '%s'\n", argv[i]);
            fprintf(stderr, "usage: link_idle [--idle-ms LIST] [--reps N] [--keepers LIST] "
                            "[--ops LIST] [--keep-us N]\n");
            return 2;
        }
        i++;
    }

    int ndev = 0, access = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev < 2) {
        printf("# link_idle: needs two GPUs (%d here)\n", ndev);
        return 77;
    }
    CHECK(cudaDeviceCanAccessPeer(&access, 0, 1));
    static const struct driver_entry table[] = {
        {"cuStreamWriteValue64", (void **)&cu_write64}};
    driver_entries_load("link_idle", table, 1, 12000);
    if (!access) {
        printf("# link_idle: GPU 0 cannot access GPU 1's memory\n");
        return 77;
    }
    CHECK(cudaSetDevice(1));
    unsigned long long *on1;
    /* Words of GPU 1: [0] the fetch-add's counter, [1] the stores', [2]
     * the keepers', then the load lines (from word 16), then GPU 1's own
     * keeper word. */
    const size_t words1 = 16 + (size_t)LOAD_LINES * 16 + 16;
    CHECK(cudaMalloc(&on1, words1 * sizeof(*on1)));
    CHECK(cudaMemset(on1, 0, words1 * sizeof(*on1)));
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaSetDevice(0));
    CHECK(cudaDeviceEnablePeerAccess(1, 0));
    unsigned long long *on0, *out;
    CHECK(cudaMalloc(&on0, 4 * sizeof(*on0)));
    CHECK(cudaMemset(on0, 0, 4 * sizeof(*on0)));
    CHECK(cudaHostAlloc(&out, 2 * sizeof(*out), cudaHostAllocDefault));

    struct keeper k{};
    k.kind = K_NONE;
    k.peer_word = on1 + 2;
    k.own0_word = on0 + 1;
    k.src0 = on0 + 2;
    CHECK(cudaStreamCreateWithFlags(&k.stream0, cudaStreamNonBlocking));
    CHECK(cudaSetDevice(1));
    k.own1_word = on1 + words1 - 1;
    const size_t far_words = (size_t)1 << 27; /* 1 GiB */
    unsigned long long *far_base;
    CHECK(cudaMalloc(&far_base, far_words * sizeof(*far_base)));
    CHECK(cudaMemset(far_base, 0, 64));
    k.far_word = far_base + (size_t)far_kb * 128 + 4;
    CHECK(cudaStreamCreateWithFlags(&k.stream1, cudaStreamNonBlocking));
    CHECK(cudaSetDevice(0));
    cudaStream_t s;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));

    printf("# link_idle,raw,2\n# one op from GPU 0 into GPU 1 after the host slept T ms "
           "(median of %ld; in the kernel, or on the host for ce and memop); keeper: what ran "
           "meanwhile, every %ld us\ncase,latency_us\n", reps, keep_ns / 1000);
    long line = 0, failures = 0;
    unsigned long long fadds = 0;
    for (int kk = 0; kk < NKEEPERS; kk++) {
        if (!want_keeper[kk])
            continue;
        for (int op = 0; op < NOPS; op++) {
            if (!want_op[op])
                continue;
            for (int t = 0; t < n_idle; t++) {
                double us[MAX_REPS];
                for (long r = 0; r < reps; r++) {
                    bool thread = kk != K_NONE && kk != K_HOST && idle_ms[t] > 0;
                    if (thread) {
                        k.stop.store(0);
                        k.kind = kk;
                        if (pthread_create(&k.thread, NULL, keeper_main, &k) != 0) {
                            fprintf(stderr, "link_idle: pthread_create failed\n");
                            return 1;
                        }
                    }
                    if (kk == K_HOST)
                        spin_ns(idle_ms[t] * 1000000L);
                    else
                        sleep_ns(idle_ms[t] * 1000000L);
                    if (thread) {
                        k.stop.store(1);
                        pthread_join(k.thread, NULL);
                        CHECK(cudaSetDevice(0));
                    }
                    if (op == OP_CE || op == OP_MEMOP) {
                        double t0 = host_us();
                        if (op == OP_CE)
                            CHECK(cudaMemcpyAsync(on1 + 1, on0 + 2, 8, cudaMemcpyDeviceToDevice,
                                                  s));
                        else if (cu_write64((CUstream)s, (CUdeviceptr)(uintptr_t)(on1 + 1),
                                            (cuuint64_t)r, 0) != CUDA_SUCCESS) {
                            fprintf(stderr, "link_idle: cuStreamWriteValue64 failed\n");
                            return 1;
                        }
                        CHECK(cudaStreamSynchronize(s));
                        us[r] = host_us() - t0;
                    } else {
                        const unsigned long long *at =
                            on1 + 16 + (size_t)(op == OP_LOAD ? line++ % LOAD_LINES : 0) * 16;
                        op_kernel<<<1, 1, 0, s>>>(op, op_far ? far_base : on1, on0, at, out);
                        CHECK(cudaGetLastError());
                        CHECK(cudaStreamSynchronize(s));
                        us[r] = (double)out[0] / 1e3;
                    }
                    if (op == OP_FADD && out[1] != fadds++) {
                        fprintf(stderr, "link_idle: fetch-add saw %llu, expected %llu\n",
                                out[1], fadds - 1);
                        failures++;
                    }
                }
                qsort(us, (size_t)reps, sizeof(us[0]), cmp_double);
                double med = reps % 2 ? us[reps / 2] : (us[reps / 2 - 1] + us[reps / 2]) / 2;
                printf("# %s_%s_%ld: lowest %.3f, highest %.3f\n%s_%s_%ld,%.3f\n", op_names[op],
                       keeper_names[kk], idle_ms[t], us[0], us[reps - 1], op_names[op],
                       keeper_names[kk], idle_ms[t], med);
                fflush(stdout);
            }
        }
    }
    return failures != 0;
}
