/* The layer that lets one device benchmark source build against ushmem (the
 * default) or NVSHMEM (-DBENCH_NVSHMEM, compiled with -rdc=true and MPI), so
 * that both run the same kernels: start and stop, PE queries, the symmetric
 * heap, the host barrier, kernel launch, and the device calls the benchmarks
 * make, as bench_* (host) and B_* (device) functions.
 *
 * It also holds what every device benchmark shares: the CUDA check that ends
 * the whole job, option values, the device clock, the split of a message
 * among groups of threads, and the job-wide count of wrong words behind each
 * benchmark's verdict.
 *
 * Each benchmark is one translation unit, as ushmem's device API expects
 * (every unit holds its own copy of the device state). */
#ifndef BENCH_SHIM_CUH
#define BENCH_SHIM_CUH

#include <cuda_runtime.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if defined(BENCH_NVSHMEM)
#include <mpi.h>
#include <nvshmem.h>
#include <nvshmemx.h>
#define BENCH_IMPL "nvshmem"
#define B_HOST(name) nvshmem_##name
#define B_STD(name) nvshmem_##name
#define B_EXT(name) nvshmemx_##name
#define B_CMP_EQ NVSHMEM_CMP_EQ
#define B_CMP_GE NVSHMEM_CMP_GE
#define B_SIGNAL_ADD NVSHMEM_SIGNAL_ADD
#define B_SIGNAL_SET NVSHMEM_SIGNAL_SET
#else
#include <shmem.h>
#include <shmemx.h>
#include <ushmem/device.h>
#define BENCH_IMPL "ushmem"
#define B_HOST(name) shmem_##name
#define B_STD(name) ushmem_##name
#define B_EXT(name) ushmemx_##name
#define B_CMP_EQ USHMEM_CMP_EQ
#define B_CMP_GE USHMEM_CMP_GE
#define B_SIGNAL_ADD USHMEM_SIGNAL_ADD
#define B_SIGNAL_SET USHMEM_SIGNAL_SET
#endif

#define BENCH_KIB ((size_t)1 << 10)
#define BENCH_MIB ((size_t)1 << 20)
#define BENCH_GIB ((size_t)1 << 30)

/* ---- Host: the job ---- */

static int bench_pe = -1; /* this PE, for messages; -1 until known */
static int bench_started;  /* the library is up, so an abort must go through it */

/* Ends every PE of the job, not only this one: a PE that simply exits leaves
 * its peers waiting in the next barrier. */
static inline void bench_abort(int status)
{
    fflush(stdout);
#if defined(BENCH_NVSHMEM)
    if (bench_started) {
        nvshmem_global_exit(status);
    } else {
        int up = 0;
        MPI_Initialized(&up);
        if (up)
            MPI_Abort(MPI_COMM_WORLD, status);
    }
#else
    if (bench_started)
        shmem_global_exit(status);
#endif
    exit(status);
}

static inline void bench_cuda_check(cudaError_t err, const char *what, const char *file, int line)
{
    if (err == cudaSuccess)
        return;
    fprintf(stderr, "PE %d: %s failed: %s (%s) at %s:%d\n", bench_pe, what,
            cudaGetErrorName(err), cudaGetErrorString(err), file, line);
    bench_abort(1);
}
/* Checks a CUDA runtime call; a failure is reported with the PE and ends the job. */
#define BENCH_CUDA(call) bench_cuda_check((call), #call, __FILE__, __LINE__)

/* Starts the library; afterwards this thread's current device is the PE's. */
static inline void bench_init(int *argc, char ***argv)
{
#if defined(BENCH_NVSHMEM)
    /* NVSHMEM's PMIx bootstrap does not load against the lent machines'
     * PMIx, so it is started from MPI, one GPU per local rank. */
    static MPI_Comm comm;
    nvshmemx_init_attr_t attr = NVSHMEMX_INIT_ATTR_INITIALIZER;
    const char *local = getenv("OMPI_COMM_WORLD_LOCAL_RANK");
    int ndev = 0, rc;

    if (MPI_Init(argc, argv) != MPI_SUCCESS) {
        fprintf(stderr, "MPI_Init failed\n");
        exit(1);
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &bench_pe);
    BENCH_CUDA(cudaGetDeviceCount(&ndev));
    if (ndev < 1) {
        fprintf(stderr, "PE %d: no CUDA device\n", bench_pe);
        bench_abort(1);
    }
    BENCH_CUDA(cudaSetDevice((local != NULL ? atoi(local) : bench_pe) % ndev));
    comm = MPI_COMM_WORLD;
    attr.mpi_comm = &comm;
    rc = nvshmemx_init_attr(NVSHMEMX_INIT_WITH_MPI_COMM, &attr);
    if (rc != 0) {
        fprintf(stderr, "PE %d: nvshmemx_init_attr failed (%d)\n", bench_pe, rc);
        bench_abort(1);
    }
    bench_pe = nvshmem_my_pe();
#else
    (void)argc;
    (void)argv;
    shmem_init();
    bench_pe = shmem_my_pe();
#endif
    bench_started = 1;
}

static inline void bench_finalize(void)
{
    fflush(stdout);
#if defined(BENCH_NVSHMEM)
    nvshmem_finalize();
    MPI_Finalize();
#else
    shmem_finalize();
#endif
    bench_started = 0;
}

static inline int bench_my_pe(void)
{
    return B_HOST(my_pe)();
}

static inline int bench_n_pes(void)
{
    return B_HOST(n_pes)();
}

/* Collective, like the library's own; a PE that gets nothing ends the job. */
static inline void *bench_malloc(size_t bytes)
{
#if defined(BENCH_NVSHMEM)
    void *p = nvshmem_malloc(bytes);
    const char *knob = "NVSHMEM_SYMMETRIC_SIZE";
#else
    void *p = shmem_malloc(bytes);
    const char *knob = "SHMEM_SYMMETRIC_SIZE";
#endif
    if (p == NULL) {
        fprintf(stderr, "PE %d: symmetric allocation of %zu bytes failed (raise %s)\n", bench_pe,
                bytes, knob);
        bench_abort(1);
    }
    return p;
}

static inline void bench_free(void *p)
{
    B_HOST(free)(p);
}

static inline void bench_barrier_all(void)
{
    B_HOST(barrier_all)();
}

/* Launches fn with args on stream. `collective`: the kernel waits on other
 * PEs (wait_until, barriers), which NVSHMEM requires be launched through
 * nvshmemx_collective_launch, a cooperative launch that keeps the whole grid
 * resident; ushmem has no such rule. Every PE must then launch. */
static inline void bench_launch(const void *fn, dim3 grid, dim3 block, void **args,
                                cudaStream_t stream, int collective)
{
#if defined(BENCH_NVSHMEM)
    if (collective) {
        int rc = nvshmemx_collective_launch(fn, grid, block, args, 0, stream);
        if (rc != 0) {
            fprintf(stderr, "PE %d: nvshmemx_collective_launch failed (%d)\n", bench_pe, rc);
            bench_abort(1);
        }
        BENCH_CUDA(cudaGetLastError());
        return;
    }
#else
    (void)collective;
#endif
    BENCH_CUDA(cudaLaunchKernel(fn, grid, block, args, 0, stream));
}

/* ---- Host: options ---- */

/* A byte count: digits with an optional K, M or G (binary) suffix. Returns
 * 0 and sets *out, or -1. */
static inline int bench_parse_size(const char *s, size_t *out)
{
    char *end;
    unsigned long long v;

    errno = 0;
    v = strtoull(s, &end, 10);
    if (errno != 0 || end == s)
        return -1;
    switch (*end) {
    case 'k': case 'K': v <<= 10; end++; break;
    case 'm': case 'M': v <<= 20; end++; break;
    case 'g': case 'G': v <<= 30; end++; break;
    default: break;
    }
    if (end[0] == 'i' && end[1] == 'B') /* "64MiB" */
        end += 2;
    else if (end[0] == 'B') /* "64MB", "8B" */
        end++;
    if (*end != '\0')
        return -1;
    *out = (size_t)v;
    return 0;
}

/* A count, zero or more. Returns 0 and sets *out, or -1. */
static inline int bench_parse_count(const char *s, long *out)
{
    char *end;
    long v;

    errno = 0;
    v = strtol(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < 0)
        return -1;
    *out = v;
    return 0;
}

/* Sets on[k] for each of the n names[k] in the comma-separated list, the
 * others to 0. Returns -1 on an unknown name or an empty list, else 0. */
static inline int bench_parse_names(const char *list, const char *const *names, int n, int *on)
{
    char buf[256];
    char *save = NULL;
    int any = 0;

    if (strlen(list) >= sizeof(buf))
        return -1;
    strcpy(buf, list);
    for (int k = 0; k < n; k++)
        on[k] = 0;
    for (char *t = strtok_r(buf, ",", &save); t != NULL; t = strtok_r(NULL, ",", &save)) {
        int k;
        for (k = 0; k < n && strcmp(t, names[k]) != 0; k++)
            ;
        if (k == n)
            return -1;
        on[k] = any = 1;
    }
    return any ? 0 : -1;
}

/* The value of option `name` at argv[*i]: "--name=V" or "--name V" (which
 * moves *i past V). NULL when argv[*i] is not that option. */
static inline const char *bench_opt(int argc, char **argv, int *i, const char *name)
{
    size_t n = strlen(name);

    if (strncmp(argv[*i], name, n) != 0)
        return NULL;
    if (argv[*i][n] == '=')
        return argv[*i] + n + 1;
    if (argv[*i][n] == '\0' && *i + 1 < argc)
        return argv[++*i];
    return NULL;
}

/* ---- Device calls ---- */

__device__ static inline void B_putmem_nbi(void *dest, const void *src, size_t n, int pe)
{
    B_STD(putmem_nbi)(dest, src, n, pe);
}
__device__ static inline void B_putmem_nbi_warp(void *dest, const void *src, size_t n, int pe)
{
    B_EXT(putmem_nbi_warp)(dest, src, n, pe);
}
__device__ static inline void B_putmem_nbi_block(void *dest, const void *src, size_t n, int pe)
{
    B_EXT(putmem_nbi_block)(dest, src, n, pe);
}
__device__ static inline void B_getmem_nbi(void *dest, const void *src, size_t n, int pe)
{
    B_STD(getmem_nbi)(dest, src, n, pe);
}
__device__ static inline void B_getmem_nbi_warp(void *dest, const void *src, size_t n, int pe)
{
    B_EXT(getmem_nbi_warp)(dest, src, n, pe);
}
__device__ static inline void B_getmem_nbi_block(void *dest, const void *src, size_t n, int pe)
{
    B_EXT(getmem_nbi_block)(dest, src, n, pe);
}
__device__ static inline void B_long_p(long *dest, long value, int pe)
{
    B_STD(long_p)(dest, value, pe);
}
__device__ static inline long B_long_g(const long *src, int pe)
{
    return B_STD(long_g)(src, pe);
}
__device__ static inline void B_long_wait_until(long *ivar, int cmp, long value)
{
    B_STD(long_wait_until)(ivar, cmp, value);
}
__device__ static inline unsigned long long B_ulonglong_atomic_fetch_add(unsigned long long *dest,
                                                                        unsigned long long value,
                                                                        int pe)
{
    return B_STD(ulonglong_atomic_fetch_add)(dest, value, pe);
}
/* A blocking put of n bytes, then `signal` added to *sig on pe. */
__device__ static inline void B_putmem_signal(void *dest, const void *src, size_t n, uint64_t *sig,
                                              uint64_t signal, int pe)
{
    B_STD(putmem_signal)(dest, src, n, sig, signal, B_SIGNAL_ADD, pe);
}
/* The same with the signal operation `op` (B_SIGNAL_ADD or B_SIGNAL_SET). */
__device__ static inline void B_putmem_signal_op(void *dest, const void *src, size_t n,
                                                 uint64_t *sig, uint64_t signal, int op, int pe)
{
    B_STD(putmem_signal)(dest, src, n, sig, signal, op, pe);
}
/* A signal without data: *sig on pe set to `signal`. */
__device__ static inline void B_signal_set(uint64_t *sig, uint64_t signal, int pe)
{
#if defined(BENCH_NVSHMEM)
    nvshmemx_signal_op(sig, signal, NVSHMEM_SIGNAL_SET, pe);
#else
    ushmemx_signal_set(sig, signal, pe);
#endif
}
__device__ static inline uint64_t B_signal_wait_until(uint64_t *sig, int cmp, uint64_t value)
{
    return B_STD(signal_wait_until)(sig, cmp, value);
}
__device__ static inline void B_quiet(void)
{
    B_STD(quiet)();
}
/* One thread per PE. */
__device__ static inline void B_barrier_all(void)
{
    B_STD(barrier_all)();
}

__device__ static inline void B_sync_all(void)
{
    B_STD(sync_all)();
}

/* The world's alltoall of nbytes per PE pair, queued on a stream by the
 * host (no kernel of the program's: ushmem's copies, NVSHMEM's own kernel). */
static inline void bench_alltoall_on_stream(void *dest, const void *src, size_t nbytes,
                                            cudaStream_t stream)
{
#if defined(BENCH_NVSHMEM)
    int rc = nvshmemx_alltoallmem_on_stream(NVSHMEM_TEAM_WORLD, dest, src, nbytes, stream);
#else
    int rc = shmemx_alltoallmem_on_stream(SHMEM_TEAM_WORLD, dest, src, nbytes, (CUstream)stream);
#endif
    if (rc != 0) {
        fprintf(stderr, "PE %d: alltoallmem_on_stream returned %d\n", bench_pe, rc);
        bench_abort(1);
    }
}

/* The pieces of the host's on-stream alltoall, queued alone so that a
 * benchmark can time each: a world barrier on the stream, and a put of
 * nbytes to PE pe on the stream. */
static inline void bench_barrier_all_on_stream(cudaStream_t stream)
{
#if defined(BENCH_NVSHMEM)
    nvshmemx_barrier_all_on_stream(stream);
#else
    shmemx_barrier_all_on_stream((CUstream)stream);
#endif
}

static inline void bench_putmem_on_stream(void *dest, const void *src, size_t nbytes, int pe,
                                          cudaStream_t stream)
{
#if defined(BENCH_NVSHMEM)
    nvshmemx_putmem_on_stream(dest, src, nbytes, pe, stream);
#else
    shmemx_putmem_on_stream(dest, src, nbytes, pe, (CUstream)stream);
#endif
}

/* Completes the non-blocking operations of every thread of the block; all
 * threads call it. NVSHMEM's perftests have one thread quiet after a block
 * sync, which is what ushmemx_quiet_block does. */
__device__ static inline void B_quiet_block(void)
{
#if defined(BENCH_NVSHMEM)
    __syncthreads();
    if (threadIdx.x == 0)
        nvshmem_quiet();
    __syncthreads();
#else
    ushmemx_quiet_block();
#endif
}

/* ---- Device helpers ---- */

/* Seconds on the host's monotonic clock (what the host spends queueing
 * stream work). */
static inline double bench_host_seconds(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Nanoseconds from the GPU's global timer, which, unlike clock64, does not
 * follow the SM clock as it boosts and throttles. */
__device__ static inline unsigned long long bench_clock_ns(void)
{
    unsigned long long t;

    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

/* Part idx of nparts of a total-byte message: returns its offset and sets
 * *len_p. Parts are multiples of `align` bytes so copies stay in wide words;
 * the last ones may be short or empty. */
__host__ __device__ static inline size_t bench_part(size_t total, size_t nparts, size_t idx,
                                                    size_t align, size_t *len_p)
{
    size_t part = (total + nparts - 1) / nparts;
    size_t off;

    part = (part + align - 1) / align * align;
    off = part * idx;
    *len_p = off >= total ? 0 : (total - off < part ? total - off : part);
    return off;
}

/* Writes this PE's count of wrong words into slot me of every PE's array;
 * the barrier then completes the writes everywhere. */
__global__ static void bench_errors_kernel(long *counts, long mine, int me, int npes)
{
    for (int pe = 0; pe < npes; pe++)
        B_long_p(&counts[me], mine, pe);
    B_barrier_all();
}

/* Collective: the number of wrong words summed over all PEs, so that every
 * PE reaches the same verdict and leaves together. counts: a symmetric
 * array of n_pes longs. */
static inline long bench_total_errors(long *counts, long mine)
{
    int me = bench_my_pe(), npes = bench_n_pes();
    void *args[] = {&counts, &mine, &me, &npes};
    long *host = (long *)calloc((size_t)npes, sizeof(long));
    long total = 0;

    if (host == NULL) {
        fprintf(stderr, "PE %d: out of host memory\n", bench_pe);
        bench_abort(1);
    }
    bench_launch((const void *)bench_errors_kernel, dim3(1), dim3(1), args, 0, 1);
    BENCH_CUDA(cudaDeviceSynchronize());
    BENCH_CUDA(cudaMemcpy(host, counts, (size_t)npes * sizeof(long), cudaMemcpyDeviceToHost));
    for (int pe = 0; pe < npes; pe++)
        total += host[pe];
    free(host);
    /* No PE may overwrite the counts of a slower one that has not read them. */
    bench_barrier_all();
    return total;
}

#endif
