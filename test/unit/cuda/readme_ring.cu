/* The README's "GPU kernels" example, with every byte checked: each PE's
 * blocks put a 1 MiB message into the next PE, one thread per block adds to
 * that PE's signal, and the receiver waits for all of them in a kernel. Exits
 * 77 without a CUDA device. */
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <ushmem/device.h>

__global__ void ring_put(char *dst, const char *src, size_t n, uint64_t *sig)
{
    int peer = (ushmem_my_pe() + 1) % ushmem_n_pes();
    size_t chunk = n / gridDim.x;
    ushmemx_putmem_nbi_block(dst + blockIdx.x * chunk, src + blockIdx.x * chunk, chunk, peer);
    ushmem_quiet(); /* this thread's stores are complete */
    __syncthreads();
    if (threadIdx.x == 0)
        ushmem_uint64_atomic_add(sig, 1, peer);
}

__global__ void wait_all(uint64_t *sig, unsigned blocks)
{
    ushmem_signal_wait_until(sig, USHMEM_CMP_EQ, blocks);
}

#define CHECK(call)                                                                        \
    do {                                                                                   \
        cudaError_t err_ = (call);                                                         \
        if (err_ != cudaSuccess) {                                                         \
            fprintf(stderr, "PE %d: %s:%d: %s: %s\n", shmem_my_pe(), __FILE__, __LINE__,  \
                    #call, cudaGetErrorString(err_));                                      \
            exit(1);                                                                       \
        }                                                                                  \
    } while (0)

int main(void)
{
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        printf("no CUDA device: skipped\n");
        return 77;
    }
    shmem_init();
    int me = shmem_my_pe(), npes = shmem_n_pes();
    size_t n = 1 << 20;
    char *src = (char *)shmem_malloc(n), *dst = (char *)shmem_malloc(n);
    uint64_t *sig = (uint64_t *)shmem_calloc(1, sizeof(uint64_t));
    CHECK(cudaMemset(src, me, n));
    CHECK(cudaMemset(dst, 0xff, n));
    CHECK(cudaDeviceSynchronize());
    shmem_barrier_all();
    ring_put<<<32, 1024>>>(dst, src, n, sig);
    CHECK(cudaGetLastError());
    wait_all<<<1, 1>>>(sig, 32);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    shmem_barrier_all();

    char *got = (char *)malloc(n);
    CHECK(cudaMemcpy(got, dst, n, cudaMemcpyDeviceToHost));
    char want = (char)((me + npes - 1) % npes);
    for (size_t i = 0; i < n; i++) {
        if (got[i] != want) {
            fprintf(stderr, "PE %d: byte %zu is %d, want %d (from PE %d)\n", me, i, got[i], want,
                    (int)want);
            return 1;
        }
    }
    printf("PE %d received every byte of PE %d\n", me, (int)want);
    free(got);
    shmem_free(sig);
    shmem_free(dst);
    shmem_free(src);
    shmem_finalize();
    return 0;
}
