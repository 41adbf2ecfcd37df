/* A kernel's collective on a team id that is not a team of the PE, as an
 * NVSHMEM program might make by mistake (a team destroyed, or never split):
 * the kernel ends, and the library says which call and which team, once,
 * from each PE, however the program leaves after seeing its kernel fail.
 * Every PE launches one 1024-thread block calling
 * nvshmemx_int_sum_reduce_block on team 77, checks that the launch went
 * and that the synchronisation fails, then leaves as argv[1] says: exit
 * (exit(1), as NVSHMEM's perftests do on a CUDA error) or global-exit
 * (nvshmem_global_exit(1), as nv_check.h's CUDA_CHECK does). The test
 * (meson.build) checks the line. Exit 77 without a GPU. */
#include <nvshmem.h>
#include <nvshmemx.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int me;

#include "nv_check.h"

#define N 64

__global__ void sum_on(nvshmem_team_t team, int *dest, const int *source, size_t n)
{
    nvshmemx_int_sum_reduce_block(team, dest, source, n);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "exit";
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        printf("no CUDA device: skipped\n");
        return 77;
    }
    nvshmem_init();
    me = nvshmem_my_pe();
    CUDA_CHECK(cudaSetDevice(nvshmem_team_my_pe(NVSHMEMX_TEAM_NODE) % ndev));
    int *src = (int *)nvshmem_malloc(N * sizeof(int));
    int *dst = (int *)nvshmem_malloc(N * sizeof(int));
    CHECK(src != NULL && dst != NULL, "nvshmem_malloc failed");
    CUDA_CHECK(cudaMemset(src, 0, N * sizeof(int)));
    CUDA_CHECK(cudaDeviceSynchronize());
    nvshmem_barrier_all();

    sum_on<<<1, 1024>>>((nvshmem_team_t)77, dst, src, N);
    CUDA_CHECK(cudaGetLastError()); /* the launch itself went */
    cudaError_t e = cudaDeviceSynchronize();
    CHECK(e != cudaSuccess, "a reduction on team 77 returned success");
    fprintf(stderr, "PE %d: the kernel failed: %s\n", me, cudaGetErrorString(e));
    if (strcmp(mode, "global-exit") == 0)
        nvshmem_global_exit(1);
    exit(1);
}
