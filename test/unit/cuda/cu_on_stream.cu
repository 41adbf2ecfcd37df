/* The stream-ordered host calls (shmemx_*_on_stream) on the cuda backend:
 * puts, gets, put-with-signal and a stream wait, barriers that order kernels
 * of different PEs, and the world collectives, with every byte checked on
 * every PE. Nothing waits on the host between the queued steps of a phase:
 * the stream alone orders them. Exits 77 without a CUDA device. */
#include <shmem.h>
#include <shmemx.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ushmem/device.h>

#define CHECK(call)                                                                        \
    do {                                                                                   \
        cudaError_t err_ = (call);                                                         \
        if (err_ != cudaSuccess) {                                                         \
            fprintf(stderr, "PE %d: %s:%d: %s: %s\n", me, __FILE__, __LINE__, #call,       \
                    cudaGetErrorString(err_));                                             \
            exit(1);                                                                       \
        }                                                                                  \
    } while (0)

static int me, npes, verbose;

static unsigned char pattern(int from, int to, size_t i, int round)
{
    return (unsigned char)(from * 31 + to * 7 + i * 13 + round * 101 + 1);
}

__global__ void fill(unsigned char *p, size_t n, int from, int to, int round)
{
    for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        p[i] = (unsigned char)(from * 31 + to * 7 + i * 13 + round * 101 + 1);
}

/* Writes round into slot me of the next PE (device API). */
__global__ void tell_next(long *slots, long round)
{
    int next = (ushmem_my_pe() + 1) % ushmem_n_pes();
    ushmem_long_p(&slots[ushmem_my_pe()], round, next);
    ushmem_quiet();
}

/* Counts a slot of the previous PE that does not hold round yet. */
__global__ void check_prev(const long *slots, long round, int *errors)
{
    int prev = (ushmem_my_pe() + ushmem_n_pes() - 1) % ushmem_n_pes();
    if (ushmem_long_atomic_fetch((long *)&slots[prev], ushmem_my_pe()) != round)
        atomicAdd(errors, 1);
}

static int compare(const char *what, const unsigned char *got, int from, int to, size_t n,
                   int round, size_t offset)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char want = pattern(from, to, i, round);
        if (got[offset + i] != want) {
            fprintf(stderr, "PE %d: %s: byte %zu (from PE %d) is %u, want %u\n", me, what, i, from,
                    got[offset + i], want);
            return 1;
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        printf("no CUDA device: skipped\n");
        return 77;
    }
    verbose = argc > 1 && strcmp(argv[1], "-v") == 0;
    shmem_init();
    me = shmem_my_pe();
    npes = shmem_n_pes();
    cudaStream_t st;
    CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    const size_t sizes[] = {1, 4097, (1 << 20) + 3};
    size_t maxn = sizes[2];
    unsigned char *src = (unsigned char *)shmem_malloc(maxn * npes);
    unsigned char *dst = (unsigned char *)shmem_malloc(maxn * npes);
    long *slots = (long *)shmem_calloc(npes, sizeof(long));
    uint64_t *sig = (uint64_t *)shmem_calloc(1, sizeof(uint64_t));
    int *errors;
    CHECK(cudaMalloc(&errors, sizeof(int)));
    CHECK(cudaMemset(errors, 0, sizeof(int)));
    unsigned char *host = (unsigned char *)malloc(maxn * npes);
    int bad = 0, round = 0;
    int next = (me + 1) % npes, prev = (me + npes - 1) % npes;
    CHECK(cudaDeviceSynchronize());
    shmem_barrier_all();

    /* Barriers order kernels of different PEs: each round's check kernel
     * runs after the previous PE's write kernel of that round. */
    for (long r = 1; r <= 200; r++) {
        tell_next<<<1, 1, 0, st>>>(slots, r);
        shmemx_barrier_all_on_stream(st);
        check_prev<<<1, 1, 0, st>>>(slots, r, errors);
        shmemx_sync_all_on_stream(st);
    }
    int nerr;
    CHECK(cudaMemcpyAsync(&nerr, errors, sizeof(int), cudaMemcpyDeviceToHost, st));
    CHECK(cudaStreamSynchronize(st));
    if (nerr != 0) {
        fprintf(stderr, "PE %d: %d of 200 barrier rounds saw a stale slot\n", me, nerr);
        bad = 1;
    }
    if (verbose)
        printf("PE %d: barrier on stream: %d stale of 200\n", me, nerr);

    for (size_t s = 0; s < 3; s++) {
        size_t n = sizes[s];
        round++;
        /* put to next, get from prev */
        fill<<<64, 256, 0, st>>>(src, n, me, next, round);
        shmemx_putmem_on_stream(dst, src, n, next, st);
        shmemx_barrier_all_on_stream(st);
        CHECK(cudaMemcpyAsync(host, dst, n, cudaMemcpyDeviceToHost, st));
        CHECK(cudaStreamSynchronize(st));
        bad |= compare("putmem_on_stream", host, prev, me, n, round, 0);
        shmemx_barrier_all_on_stream(st); /* nobody refills src before every get is done */

        round++;
        fill<<<64, 256, 0, st>>>(src, n, me, 0, round);
        shmemx_barrier_all_on_stream(st);
        shmemx_getmem_on_stream(dst, src, n, prev, st);
        CHECK(cudaMemcpyAsync(host, dst, n, cudaMemcpyDeviceToHost, st));
        CHECK(cudaStreamSynchronize(st));
        bad |= compare("getmem_on_stream", host, prev, 0, n, round, 0);
        shmemx_barrier_all_on_stream(st);

        /* put with signal, waited for on the receiver's stream */
        round++;
        fill<<<64, 256, 0, st>>>(src, n, me, next, round);
        shmemx_putmem_signal_on_stream(dst, src, n, sig, (uint64_t)round, SHMEM_SIGNAL_SET, next,
                                       st);
        shmemx_signal_wait_until_on_stream(sig, SHMEM_CMP_GE, (uint64_t)round, st);
        CHECK(cudaMemcpyAsync(host, dst, n, cudaMemcpyDeviceToHost, st));
        CHECK(cudaStreamSynchronize(st));
        bad |= compare("putmem_signal_on_stream", host, prev, me, n, round, 0);
        shmemx_barrier_all_on_stream(st);

        /* alltoall: block pe of src goes to pe */
        round++;
        for (int pe = 0; pe < npes; pe++)
            fill<<<64, 256, 0, st>>>(src + pe * n, n, me, pe, round);
        shmemx_alltoallmem_on_stream(SHMEM_TEAM_WORLD, dst, src, n, st);
        CHECK(cudaMemcpyAsync(host, dst, n * npes, cudaMemcpyDeviceToHost, st));
        CHECK(cudaStreamSynchronize(st));
        for (int pe = 0; pe < npes; pe++)
            bad |= compare("alltoallmem_on_stream", host, pe, me, n, round, pe * n);
        shmemx_barrier_all_on_stream(st);

        /* broadcast from every root */
        for (int root = 0; root < npes; root++) {
            round++;
            fill<<<64, 256, 0, st>>>(src, n, me, -1, round);
            shmemx_broadcastmem_on_stream(SHMEM_TEAM_WORLD, dst, src, n, root, st);
            CHECK(cudaMemcpyAsync(host, dst, n, cudaMemcpyDeviceToHost, st));
            CHECK(cudaStreamSynchronize(st));
            bad |= compare("broadcastmem_on_stream", host, root, -1, n, round, 0);
            shmemx_barrier_all_on_stream(st);
        }

        /* fcollect */
        round++;
        fill<<<64, 256, 0, st>>>(src, n, me, -2, round);
        shmemx_fcollectmem_on_stream(SHMEM_TEAM_WORLD, dst, src, n, st);
        CHECK(cudaMemcpyAsync(host, dst, n * npes, cudaMemcpyDeviceToHost, st));
        CHECK(cudaStreamSynchronize(st));
        for (int pe = 0; pe < npes; pe++)
            bad |= compare("fcollectmem_on_stream", host, pe, -2, n, round, pe * n);
        shmemx_barrier_all_on_stream(st);
        if (verbose)
            printf("PE %d: size %zu done, %s\n", me, n, bad ? "FAILED" : "ok");
    }
    CHECK(cudaStreamSynchronize(st));
    if (bad)
        return 1;
    shmem_barrier_all();
    if (me == 0)
        printf("all checks passed\n");
    CHECK(cudaFree(errors));
    free(host);
    shmem_free(sig);
    shmem_free(slots);
    shmem_free(dst);
    shmem_free(src);
    CHECK(cudaStreamDestroy(st));
    shmem_finalize();
    return 0;
}
