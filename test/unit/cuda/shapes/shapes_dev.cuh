/* What the generated kernels of shapes.cu (gen_shapes.py) share with the
 * host code that launches and checks them (shapes_run.cuh): which group a
 * thread belongs to, in blocks of any shape, and the values the atomics
 * take, which the host replays to know every word's final value. Kept small
 * and cheap, as a user's own index arithmetic would be, so that the
 * kernels' register counts are the library's. */
#ifndef SHAPES_DEV_CUH
#define SHAPES_DEV_CUH

#include <stddef.h>
#include <stdint.h>

#include <ushmem/device.h>

/* The thread's rank in its block, in the order ushmem ranks a block's
 * threads (x fastest), and the block's size. */
__device__ static inline unsigned shape_tid(void)
{
    return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
}

__device__ static inline unsigned shape_tpb(void)
{
    return blockDim.x * blockDim.y * blockDim.z;
}

/* The index of the calling thread, warp or block in the whole grid: each
 * owns its own slots. A block whose size is not a multiple of 32 ends in a
 * short warp, which counts as one. */
__device__ static inline size_t shape_thread(void)
{
    return (size_t)blockIdx.x * shape_tpb() + shape_tid();
}

__device__ static inline size_t shape_warp(void)
{
    return (size_t)blockIdx.x * ((shape_tpb() + 31) / 32) + shape_tid() / 32;
}

__device__ static inline size_t shape_block(void)
{
    return blockIdx.x;
}

/* The atomics: word w starts at shape_init(w) on every PE and receives one
 * operation, with operand shape_arg(w) (a compare_swap's condition matches
 * for even w only). Unsigned arithmetic, so that the host's replay of a
 * signed add has no overflow. */
template <typename T> __host__ __device__ static inline T shape_init(size_t w)
{
    return (T)((unsigned long long)w * 0xD1B54A32D192ED03ull >> 5);
}

template <typename T> __host__ __device__ static inline T shape_arg(size_t w)
{
    return (T)((unsigned long long)w * 0x9E3779B97F4A7C15ull >> 7);
}

template <typename T> __host__ __device__ static inline T shape_cond(size_t w)
{
    return (T)((unsigned long long)shape_init<T>(w) + (w & 1));
}

#endif
