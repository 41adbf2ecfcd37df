/* Helpers shared by the CUDA device-API tests (cu_device_api.cu,
 * cu_device_coll.cu): the skip when no GPU answers, CUDA error checks that
 * name the call and the PE, kernel completion under a watchdog (a wait that
 * never ends becomes a failure, not a hung job), an error log that kernels
 * write and the host prints, the byte and value patterns that senders, host
 * checks and in-kernel checks all compute the same way, and the phase
 * bookkeeping: a PE that found a mismatch ends the job after every PE has
 * printed its own. */
#ifndef CU_CHECK_CUH
#define CU_CHECK_CUH

#include <cuda_runtime.h>
#include <shmem.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <type_traits>
#include <vector>

/* A kernel still running after this long is taken for hung. */
#define CU_KERNEL_TIMEOUT_S 60.0
/* Mismatch lines one PE prints per phase; the count covers the rest. */
#define CU_MAX_PRINTED 24
/* In-kernel failures the log keeps in detail. */
#define CU_LOG_ENTRIES 8

static struct {
    int me, npes; /* -1, 0 until shmem_init */
    int verbose;
    int initialized;
    cudaStream_t stream;       /* every kernel runs here */
    unsigned long long errors; /* mismatches in the current phase */
    unsigned printed;          /* lines printed in the current phase */
    const char *phase;
    struct timespec phase_start;
} cu = {-1, 0, 0, 0, NULL, 0, 0, "setup", {0, 0}};

/* Ends the job: through the launcher once shmem is up, so that no PE waits
 * for this one forever. */
static inline void cu_die(void)
{
    fflush(stdout);
    fflush(stderr);
    if (cu.initialized)
        shmem_global_exit(1);
    exit(1);
}

static inline void cu_check_at(cudaError_t err, const char *call, const char *file, int line)
{
    if (err == cudaSuccess)
        return;
    fprintf(stderr, "PE %d: %s:%d: %s failed: %s (%s), phase %s\n", cu.me, file, line, call,
            cudaGetErrorString(err), cudaGetErrorName(err), cu.phase);
    cu_die();
}
#define CU_CHECK(call) cu_check_at((call), #call, __FILE__, __LINE__)

/* Exits 77 before shmem_init when the runtime lists no device. */
static inline void cu_skip_without_device(void)
{
    int n = 0;
    cudaError_t err = cudaGetDeviceCount(&n);

    if (err != cudaSuccess || n <= 0) {
        if (err != cudaSuccess)
            fprintf(stderr, "cudaGetDeviceCount: %s\n", cudaGetErrorName(err));
        printf("no CUDA device: skipped\n");
        fflush(stdout);
        exit(77);
    }
}

/* "-v" (per-phase progress) is the only argument. */
static inline void cu_parse_args(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-v") == 0) {
            cu.verbose = 1;
        } else {
            fprintf(stderr, "usage: %s [-v]\n", argv[0]);
            exit(2);
        }
    }
}

static inline double cu_seconds_since(const struct timespec *t0)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)(t.tv_sec - t0->tv_sec) + 1e-9 * (double)(t.tv_nsec - t0->tv_nsec);
}

/* shmem_init, then this PE's stream; the device is the one shmem_init made
 * current. */
static inline void cu_init(int max_pes)
{
    int dev = -1;

    shmem_init();
    cu.initialized = 1;
    cu.me = shmem_my_pe();
    cu.npes = shmem_n_pes();
    if (cu.npes > max_pes) {
        fprintf(stderr, "PE %d: this test runs on at most %d PEs, not %d\n", cu.me, max_pes,
                cu.npes);
        cu_die();
    }
    CU_CHECK(cudaGetDevice(&dev));
    /* Non-blocking: the kernels never wait on the legacy default stream,
     * whatever else the process runs there. */
    CU_CHECK(cudaStreamCreateWithFlags(&cu.stream, cudaStreamNonBlocking));
    if (cu.verbose) {
        const char *route = getenv("USHMEM_DEVICE_ROUTE");
        const char *visible = getenv("CUDA_VISIBLE_DEVICES");
        printf("PE %d of %d: CUDA device %d (CUDA_VISIBLE_DEVICES=%s, USHMEM_DEVICE_ROUTE=%s)\n",
               cu.me, cu.npes, dev, visible ? visible : "unset", route ? route : "unset");
        fflush(stdout);
    }
}

static inline void cu_phase_begin(const char *name)
{
    cu.phase = name;
    cu.errors = 0;
    cu.printed = 0;
    clock_gettime(CLOCK_MONOTONIC, &cu.phase_start);
    if (cu.verbose) {
        printf("PE %d: phase %s ...\n", cu.me, name);
        fflush(stdout);
    }
}

/* Every PE has checked and printed before a PE with mismatches ends the job;
 * "ok" means every PE found none. */
static inline void cu_phase_end(void)
{
    fflush(stdout);
    shmem_barrier_all();
    if (cu.errors > 0) {
        fprintf(stderr, "PE %d: phase %s: %llu mismatches\n", cu.me, cu.phase, cu.errors);
        cu_die();
    }
    shmem_barrier_all();
    if (cu.verbose && cu.me == 0) {
        printf("phase %s: ok on every PE (%.2f s)\n", cu.phase, cu_seconds_since(&cu.phase_start));
        fflush(stdout);
    }
}

/* Prints one line about a mismatch (the caller counts it in cu.errors),
 * up to CU_MAX_PRINTED lines a phase. */
static inline void cu_print(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline void cu_print(const char *fmt, ...)
{
    va_list ap;

    if (cu.printed >= CU_MAX_PRINTED)
        return;
    cu.printed++;
    fprintf(stderr, "PE %d: phase %s: ", cu.me, cu.phase);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n");
}

/* Waits for the kernels on the stream; a kernel that runs past the timeout
 * ends the job, naming what it was doing. */
static inline void cu_wait(const char *what)
{
    struct timespec t0, pause = {0, 50000};

    CU_CHECK(cudaGetLastError()); /* the launch itself */
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        cudaError_t err = cudaStreamQuery(cu.stream);
        if (err == cudaSuccess)
            return;
        if (err != cudaErrorNotReady) {
            fprintf(stderr, "PE %d: phase %s: kernel %s failed: %s (%s)\n", cu.me, cu.phase, what,
                    cudaGetErrorString(err), cudaGetErrorName(err));
            cu_die();
        }
        if (cu_seconds_since(&t0) > CU_KERNEL_TIMEOUT_S) {
            fprintf(stderr,
                    "PE %d: phase %s: kernel %s still running after %.0f s: a wait in it never "
                    "ends\n",
                    cu.me, cu.phase, what, CU_KERNEL_TIMEOUT_S);
            cu_die();
        }
        nanosleep(&pause, NULL);
    }
}

/* ---- Memory: symmetric buffers are device memory, moved by copies. ---- */

static inline void *cu_shmalloc(size_t size)
{
    void *p = shmem_align(256, size);

    if (p == NULL) {
        fprintf(stderr, "PE %d: phase %s: shmem_align(256, %zu) returned NULL\n", cu.me, cu.phase,
                size);
        cu_die();
    }
    return p;
}

/* Copies to the device; the synchronisation makes sure the data has landed
 * (a copy from pageable memory may return before) before a peer or a kernel
 * on another stream can touch it. */
static inline void cu_h2d(void *dst, const void *src, size_t n)
{
    CU_CHECK(cudaMemcpy(dst, src, n, cudaMemcpyHostToDevice));
    CU_CHECK(cudaDeviceSynchronize());
}

static inline void cu_d2h(void *dst, const void *src, size_t n)
{
    CU_CHECK(cudaMemcpy(dst, src, n, cudaMemcpyDeviceToHost));
}

static inline void cu_memset(void *dst, int value, size_t n)
{
    CU_CHECK(cudaMemset(dst, value, n));
    CU_CHECK(cudaDeviceSynchronize());
}

/* ---- Patterns ---- */

__host__ __device__ static inline uint64_t cu_mix64(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ULL;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
    return x ^ (x >> 31);
}

/* Names one stream of bytes: what test, from which PE, to which, which slot. */
__host__ __device__ static inline uint64_t cu_tag(uint64_t kind, uint64_t from, uint64_t to,
                                                  uint64_t slot)
{
    return cu_mix64(cu_mix64(cu_mix64(kind) ^ (from << 16) ^ to) + slot);
}

/* Byte i of the stream `tag`. */
__host__ __device__ static inline unsigned char cu_byte(uint64_t tag, uint64_t i)
{
    return (unsigned char)(cu_mix64(tag + (i >> 3)) >> (8 * (i & 7)));
}

/* Element i of the stream `tag` as a T: any bit pattern for integers, a
 * number that float holds exactly for floating types. */
template <typename T> __host__ __device__ static inline T cu_val(uint64_t tag, uint64_t i)
{
    uint64_t h = cu_mix64(tag + i);
    T v;

    if constexpr (std::is_floating_point<T>::value) {
        v = (T)(double)(h % 1000003u) + (T)0.5;
    } else {
        memcpy(&v, &h, sizeof(T));
    }
    return v;
}

/* Host: dst[j] = byte first + j of the stream. */
static inline void cu_fill(unsigned char *dst, size_t n, uint64_t tag, uint64_t first)
{
    for (size_t j = 0; j < n; j++)
        dst[j] = cu_byte(tag, first + j);
}

/* Host: checks a region of `size` bytes: bytes [lo, lo + len) are bytes
 * first .. of the stream, every other byte is `fill`. Returns mismatches;
 * the first few are printed with `what`. */
static inline unsigned long long cu_check_region(const char *what, const unsigned char *got,
                                                 size_t size, size_t lo, size_t len, uint64_t tag,
                                                 uint64_t first, unsigned char fill)
{
    unsigned long long bad = 0;

    for (size_t j = 0; j < size; j++) {
        int inside = j >= lo && j - lo < len;
        unsigned char want = inside ? cu_byte(tag, first + (j - lo)) : fill;
        if (got[j] != want) {
            if (bad < 3)
                cu_print("%s: byte %zu (%s): expected 0x%02x, got 0x%02x", what, j,
                         inside ? "data" : "outside the data", want, got[j]);
            bad++;
        }
    }
    if (bad > 3)
        cu_print("%s: %llu bytes wrong in all", what, bad);
    cu.errors += bad;
    return bad;
}

template <typename T> static inline void cu_val_text(char *buf, size_t n, T v)
{
    if constexpr (std::is_floating_point<T>::value)
        snprintf(buf, n, "%.17g", (double)v);
    else if constexpr (std::is_signed<T>::value)
        snprintf(buf, n, "%lld", (long long)v);
    else
        snprintf(buf, n, "%llu", (unsigned long long)v);
}

/* Host: one value. */
template <typename T> static inline void cu_expect(const char *what, size_t index, T want, T got)
{
    char w[48], g[48];

    if (memcmp(&want, &got, sizeof(T)) == 0)
        return;
    cu_val_text(w, sizeof(w), want);
    cu_val_text(g, sizeof(g), got);
    cu.errors++;
    cu_print("%s [%zu]: expected %s, got %s", what, index, w, g);
}

/* ---- The in-kernel error log ---- */

struct cu_log_entry {
    int what; /* index into the program's table of check names */
    int a, b; /* usually a PE and a slot */
    long long index, expected, got;
};

struct cu_log {
    unsigned long long count;
    struct cu_log_entry first[CU_LOG_ENTRIES];
};

__device__ static inline void cu_dev_fail(struct cu_log *log, int what, int a, int b,
                                          long long index, long long expected, long long got)
{
    unsigned long long n = atomicAdd(&log->count, 1ULL);

    if (n < CU_LOG_ENTRIES) {
        struct cu_log_entry *e = &log->first[n];
        e->what = what;
        e->a = a;
        e->b = b;
        e->index = index;
        e->expected = expected;
        e->got = got;
    }
}

/* Checks bytes [rank, rank + stride, ...) of n received bytes against the
 * stream, reading through volatile so that nothing cached before the data
 * arrived is taken for it. */
__device__ static inline void cu_dev_verify(struct cu_log *log, int what, int a, int b,
                                            const void *p, size_t n, uint64_t tag, uint64_t first,
                                            unsigned rank, unsigned stride)
{
    const volatile unsigned char *v = (const volatile unsigned char *)p;

    for (size_t i = rank; i < n; i += stride) {
        unsigned char got = v[i], want = cu_byte(tag, first + i);
        if (got != want)
            cu_dev_fail(log, what, a, b, (long long)i, want, got);
    }
}

static inline struct cu_log *cu_log_alloc(void)
{
    struct cu_log *log = NULL;

    CU_CHECK(cudaMalloc((void **)&log, sizeof(*log)));
    cu_memset(log, 0, sizeof(*log));
    return log;
}

/* Host: prints what kernels logged since the last call and clears it. */
static inline void cu_log_report(struct cu_log *dlog, const char *const *names, int nnames)
{
    struct cu_log log;

    cu_d2h(&log, dlog, sizeof(log));
    if (log.count == 0)
        return;
    for (unsigned long long i = 0; i < log.count && i < CU_LOG_ENTRIES; i++) {
        const struct cu_log_entry *e = &log.first[i];
        cu_print("in-kernel check \"%s\" failed: a %d, b %d, index %lld: expected %lld, got %lld",
                 e->what >= 0 && e->what < nnames ? names[e->what] : "?", e->a, e->b, e->index,
                 e->expected, e->got);
    }
    if (log.count > CU_LOG_ENTRIES)
        cu_print("%llu in-kernel checks failed in all", log.count);
    cu.errors += log.count;
    cu_memset(dlog, 0, sizeof(*dlog));
}

/* After the last phase: every PE has passed every check. */
static inline void cu_finish(void)
{
    fflush(stdout);
    shmem_barrier_all();
    if (cu.me == 0) {
        printf("all checks passed\n");
        fflush(stdout);
    }
    CU_CHECK(cudaStreamDestroy(cu.stream));
    shmem_finalize();
}

#endif
