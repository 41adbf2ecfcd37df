/* A program of two translation units that both call the device API, built
 * with and without relocatable device code (-rdc=true): kernels of either
 * unit see the state, and device barriers from both units agree (their epoch
 * lives in the heap). Also checks the device choice: after shmem_init the
 * current device is the PE's (local rank modulo the GPUs), or, with the
 * argument "set", the one the program chose with cudaSetDevice before
 * shmem_init, which also holds the heap. Exits 77 without a CUDA device. */
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ushmem/device.h>

void launch_rdc_put(long *dst, const long *src, size_t n, uint64_t *sig);

__global__ void rdc_wait(uint64_t *sig, uint64_t want, int *seen_pe)
{
    ushmem_signal_wait_until(sig, USHMEM_CMP_EQ, want);
    ushmem_barrier_all();
    *seen_pe = ushmem_my_pe();
}

#define CHECK(call)                                                                        \
    do {                                                                                   \
        cudaError_t err_ = (call);                                                         \
        if (err_ != cudaSuccess) {                                                         \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,                  \
                    cudaGetErrorString(err_));                                             \
            exit(1);                                                                       \
        }                                                                                  \
    } while (0)

int main(int argc, char **argv)
{
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        printf("no CUDA device: skipped\n");
        return 77;
    }
    int chosen = -1;
    if (argc > 1 && strcmp(argv[1], "set") == 0) {
        chosen = ndev - 1;
        CHECK(cudaSetDevice(chosen));
    }
    shmem_init();
    int me = shmem_my_pe(), npes = shmem_n_pes();
    int want_dev = chosen >= 0 ? chosen : shmem_team_my_pe(SHMEM_TEAM_SHARED) % ndev;
    int dev = -1;
    CHECK(cudaGetDevice(&dev));
    const size_t n = 4096;
    long *src = (long *)shmem_malloc(n * sizeof(long));
    long *dst = (long *)shmem_malloc(n * sizeof(long));
    uint64_t *sig = (uint64_t *)shmem_calloc(1, sizeof(uint64_t));
    int *seen_pe;
    CHECK(cudaMalloc(&seen_pe, sizeof(int)));
    cudaPointerAttributes attr;
    CHECK(cudaPointerGetAttributes(&attr, dst));
    if (dev != want_dev || attr.device != want_dev) {
        fprintf(stderr, "PE %d: current device %d, heap on device %d, want %d\n", me, dev,
                attr.device, want_dev);
        return 1;
    }
    long *host = (long *)malloc(n * sizeof(long));
    for (size_t i = 0; i < n; i++)
        host[i] = me * 1000003L + (long)i;
    CHECK(cudaMemcpy(src, host, n * sizeof(long), cudaMemcpyHostToDevice));
    shmem_barrier_all();
    for (int round = 1; round <= 3; round++) {
        launch_rdc_put(dst, src, n, sig);
        CHECK(cudaGetLastError());
        rdc_wait<<<1, 1>>>(sig, (uint64_t)round, seen_pe);
        CHECK(cudaGetLastError());
        CHECK(cudaDeviceSynchronize());
    }
    int pe_seen = -1;
    CHECK(cudaMemcpy(&pe_seen, seen_pe, sizeof(int), cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(host, dst, n * sizeof(long), cudaMemcpyDeviceToHost));
    int from = (me + npes - 1) % npes;
    for (size_t i = 0; i < n; i++) {
        if (host[i] != from * 1000003L + (long)i) {
            fprintf(stderr, "PE %d: dst[%zu] = %ld, want %ld\n", me, i, host[i],
                    from * 1000003L + (long)i);
            return 1;
        }
    }
    if (pe_seen != me) {
        fprintf(stderr, "PE %d: the second unit's kernel saw PE %d\n", me, pe_seen);
        return 1;
    }
    shmem_barrier_all();
    if (me == 0)
        printf("all checks passed (device %d)\n", dev);
    free(host);
    CHECK(cudaFree(seen_pe));
    shmem_free(sig);
    shmem_free(dst);
    shmem_free(src);
    shmem_finalize();
    return 0;
}
