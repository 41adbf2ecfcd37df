/* Launching kernels that call the device barrier (or any device call that
 * waits for other blocks of the same grid): every block must be resident at
 * once, or the blocks that run wait forever for those that cannot start.
 * ushmemx_collective_launch checks that the grid fits the GPU, for the
 * kernel's registers, shared memory and block size, and launches it as a
 * cooperative grid; a grid that cannot fit is refused in one sentence,
 * naming the PE, the grid and what fits. Host code compiled against the
 * CUDA runtime (nvcc, or a C or C++ compiler with cuda_runtime.h). */
#ifndef USHMEM_CUDA_LAUNCH_H
#define USHMEM_CUDA_LAUNCH_H

#include <stdio.h>

#include <cuda_runtime.h>
#include <shmem.h>

#define USHMEMX_LAUNCH_OK 0
#define USHMEMX_LAUNCH_REFUSED 6 /* NVSHMEMX_ERROR_COLLECTIVE_LAUNCH_FAILED's number */

/* The most blocks of blockDims threads, with sharedMem bytes of dynamic
 * shared memory each, that can be resident at once on the current device
 * (0 when not even one block fits); 0 on success, else after a message. */
static inline int ushmemx_collective_launch_query_gridsize(const void *func, dim3 blockDims,
                                                           void **args, size_t sharedMem,
                                                           int *gridsize)
{
    int dev = 0, sms = 0, per_sm = 0;
    unsigned threads = blockDims.x * blockDims.y * blockDims.z;
    cudaError_t err = cudaGetDevice(&dev);

    (void)args;
    if (err == cudaSuccess)
        err = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    if (err == cudaSuccess)
        err = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, func, (int)threads, sharedMem);
    if (err != cudaSuccess) {
        fprintf(stderr, "ushmem: PE %d: ushmemx_collective_launch: the occupancy of kernel %p "
                        "with %u threads and %zu bytes of shared memory per block cannot be "
                        "read: %s\n",
                shmem_my_pe(), func, threads, sharedMem, cudaGetErrorString(err));
        return USHMEMX_LAUNCH_REFUSED;
    }
    *gridsize = per_sm * sms;
    return USHMEMX_LAUNCH_OK;
}

/* Launches func as a cooperative grid on stream when all of its blocks fit
 * on the device at once; returns 0, or USHMEMX_LAUNCH_REFUSED after one
 * line naming the PE, the grid and the limit. */
static inline int ushmemx_collective_launch(const void *func, dim3 gridDims, dim3 blockDims,
                                            void **args, size_t sharedMem, cudaStream_t stream)
{
    int fit = 0;
    unsigned long long blocks =
        (unsigned long long)gridDims.x * gridDims.y * gridDims.z;
    unsigned threads = blockDims.x * blockDims.y * blockDims.z;

    /* A block larger than the kernel's registers allow: said as such, the
     * usual cause (a kernel over 64 registers a thread cannot have 1024). */
    struct cudaFuncAttributes attr;
    int dev = 0, regs_per_block = 0;
    if (cudaFuncGetAttributes(&attr, func) == cudaSuccess &&
        threads > (unsigned)attr.maxThreadsPerBlock && cudaGetDevice(&dev) == cudaSuccess &&
        cudaDeviceGetAttribute(&regs_per_block, cudaDevAttrMaxRegistersPerBlock, dev) ==
            cudaSuccess &&
        (unsigned long long)attr.numRegs * threads > (unsigned long long)regs_per_block) {
        fprintf(stderr, "ushmem: PE %d: ushmemx_collective_launch refused: kernel %p uses %d "
                        "registers a thread, so its blocks hold at most %d threads, not %u; "
                        "launch it with blocks of at most %d threads, or declare it "
                        "__launch_bounds__(%u) so that the compiler keeps to the registers "
                        "%u threads allow\n",
                shmem_my_pe(), func, attr.numRegs, attr.maxThreadsPerBlock, threads,
                attr.maxThreadsPerBlock, threads, threads);
        return USHMEMX_LAUNCH_REFUSED;
    }
    if (ushmemx_collective_launch_query_gridsize(func, blockDims, args, sharedMem, &fit) != 0)
        return USHMEMX_LAUNCH_REFUSED;
    if (fit == 0) {
        fprintf(stderr, "ushmem: PE %d: ushmemx_collective_launch refused: not one block of "
                        "kernel %p fits on the GPU with %u threads and %zu bytes of shared "
                        "memory\n",
                shmem_my_pe(), func, threads, sharedMem);
        return USHMEMX_LAUNCH_REFUSED;
    }
    if (blocks > (unsigned long long)fit) {
        fprintf(stderr, "ushmem: PE %d: ushmemx_collective_launch refused: a grid of %llu blocks "
                        "of %u threads cannot be resident at once on this GPU (at most %d for "
                        "this kernel), so blocks waiting in a device barrier would wait for "
                        "blocks that never start; launch at most %d blocks\n",
                shmem_my_pe(), blocks, threads, fit, fit);
        return USHMEMX_LAUNCH_REFUSED;
    }
    cudaError_t err =
        cudaLaunchCooperativeKernel(func, gridDims, blockDims, args, sharedMem, stream);
    if (err != cudaSuccess) {
        fprintf(stderr, "ushmem: PE %d: ushmemx_collective_launch: cudaLaunchCooperativeKernel "
                        "of %llu blocks of %u threads failed: %s\n",
                shmem_my_pe(), blocks, threads, cudaGetErrorString(err));
        return USHMEMX_LAUNCH_REFUSED;
    }
    return USHMEMX_LAUNCH_OK;
}

#endif /* USHMEM_CUDA_LAUNCH_H */
