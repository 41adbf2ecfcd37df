/* NVSHMEM device collectives called in a loop, as a user's kernel calls
 * them (no __launch_bounds__, the count a kernel argument): compiled only,
 * for the register budget (nvshmem-registers-loops: every kernel within 64
 * registers, so that a block of 1024 threads launches). One kernel per
 * call: reductions and reduce-scatters of 4-, 8- and 16-byte and 16-bit
 * types at thread, warp and block scope, and alltoall, broadcast and
 * fcollect at warp and block scope. */
#include <nvshmem.h>
#include <nvshmemx.h>

#define LOOP(NAME, T, CALL)                                                                \
    __global__ void NAME(T *dest, const T *source, size_t n, int iters)                   \
    {                                                                                      \
        for (int i = 0; i < iters; i++)                                                    \
            CALL;                                                                          \
    }
#define W NVSHMEM_TEAM_WORLD

LOOP(int_sum_t, int, nvshmem_int_sum_reduce(W, dest, source, n))
LOOP(int_sum_w, int, nvshmemx_int_sum_reduce_warp(W, dest, source, n))
LOOP(int_sum_b, int, nvshmemx_int_sum_reduce_block(W, dest, source, n))
LOOP(ll_max_t, long long, nvshmem_longlong_max_reduce(W, dest, source, n))
LOOP(ll_max_w, long long, nvshmemx_longlong_max_reduce_warp(W, dest, source, n))
LOOP(ll_max_b, long long, nvshmemx_longlong_max_reduce_block(W, dest, source, n))
LOOP(u64_xor_t, uint64_t, nvshmem_uint64_xor_reduce(W, dest, source, n))
LOOP(double_prod_t, double, nvshmem_double_prod_reduce(W, dest, source, n))
LOOP(double_sum_w, double, nvshmemx_double_sum_reduce_warp(W, dest, source, n))
LOOP(double_sum_b, double, nvshmemx_double_sum_reduce_block(W, dest, source, n))
LOOP(float_sum_w, float, nvshmemx_float_sum_reduce_warp(W, dest, source, n))
LOOP(half_min_t, half, nvshmem_half_min_reduce(W, dest, source, n))
LOOP(bf16_sum_b, __nv_bfloat16, nvshmemx_bfloat16_sum_reduce_block(W, dest, source, n))
LOOP(maxloc_t, double2, nvshmem_double2_maxloc_reduce(W, dest, source, n))
LOOP(maxloc_b, double2, nvshmemx_double2_maxloc_reduce_block(W, dest, source, n))
LOOP(int_rs_t, int, nvshmem_int_sum_reducescatter(W, dest, source, n))
LOOP(int_rs_w, int, nvshmemx_int_sum_reducescatter_warp(W, dest, source, n))
LOOP(ll_rs_w, long long, nvshmemx_longlong_sum_reducescatter_warp(W, dest, source, n))
LOOP(double_rs_b, double, nvshmemx_double_sum_reducescatter_block(W, dest, source, n))
LOOP(int_alltoall_w, int, nvshmemx_int_alltoall_warp(W, dest, source, n))
LOOP(int_alltoall_b, int, nvshmemx_int_alltoall_block(W, dest, source, n))
LOOP(double_bcast_w, double, nvshmemx_double_broadcast_warp(W, dest, source, n, 0))
LOOP(double_bcast_b, double, nvshmemx_double_broadcast_block(W, dest, source, n, 0))
LOOP(ll_fcollect_w, long long, nvshmemx_longlong_fcollect_warp(W, dest, source, n))
LOOP(ll_fcollect_b, long long, nvshmemx_longlong_fcollect_block(W, dest, source, n))
