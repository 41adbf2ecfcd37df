/* NVSHMEM device calls in a loop, as a user's kernel makes them (no
 * __launch_bounds__, the count a kernel argument): compiled only, for the
 * register budget (nvshmem-registers-loops: every kernel within 64
 * registers, so that a block of 1024 threads launches). One kernel per
 * call: reductions and reduce-scatters of 4-, 8- and 16-byte and 16-bit
 * types at thread, warp and block scope; alltoall, broadcast and fcollect
 * at warp and block scope; three collectives behind each other at each
 * scope; barriers and syncs, puts and gets, signals, atomics, waits and
 * tests, quiet and fence, and a block mixing several; the collectives,
 * barriers and queries again with the team a kernel argument; six
 * collectives of ints and doubles on a team argument at each scope. */
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

/* Several collectives behind each other in a loop, at each scope: a solver's
 * sum, scatter and maximum (three thread-scope ones took 229 registers while
 * the compiler kept the runtime's state in registers across the loop). */
#define SEQ(NAME, CALLS)                                                                   \
    __global__ void NAME(long *dl, const long *sl, int *di, const int *si, size_t n,      \
                         int iters)                                                        \
    {                                                                                      \
        for (int i = 0; i < iters; i++) {                                                  \
            CALLS;                                                                         \
        }                                                                                  \
    }
SEQ(seq_t, nvshmem_long_sum_reduce(W, dl, sl, n); nvshmem_int_sum_reducescatter(W, di, si, n);
    nvshmem_long_max_reduce(W, dl + n, sl, n))
SEQ(seq_w, nvshmemx_long_sum_reduce_warp(W, dl, sl, n);
    nvshmemx_int_sum_reducescatter_warp(W, di, si, n);
    nvshmemx_long_max_reduce_warp(W, dl + n, sl, n))
SEQ(seq_b, nvshmemx_long_sum_reduce_block(W, dl, sl, n);
    nvshmemx_int_sum_reducescatter_block(W, di, si, n);
    nvshmemx_long_max_reduce_block(W, dl + n, sl, n))

/* Point to point, synchronization and memory ordering. */
#define PT(NAME, CALL)                                                                     \
    __global__ void NAME(long *d, const long *s, uint64_t *sig, size_t n, int pe,         \
                         int iters)                                                        \
    {                                                                                      \
        for (int i = 0; i < iters; i++) {                                                  \
            CALL;                                                                          \
        }                                                                                  \
    }
PT(barrier_t, nvshmem_barrier_all())
PT(barrier_w, nvshmemx_barrier_all_warp())
PT(barrier_b, nvshmemx_barrier_all_block())
PT(sync_all_t, nvshmem_sync_all())
PT(team_sync_w, nvshmemx_team_sync_warp(W))
PT(team_sync_b, nvshmemx_team_sync_block(W))
PT(put_t, nvshmem_long_put(d + i, s, n, pe))
PT(put_b, nvshmemx_long_put_block(d + i, s, n, pe))
PT(put_nbi_w, nvshmemx_long_put_nbi_warp(d + i, s, n, pe))
PT(get_t, nvshmem_long_get(d + i, s, n, pe))
PT(get_b, nvshmemx_long_get_block(d + i, s, n, pe))
PT(put_signal_t, nvshmem_long_put_signal(d, s, n, sig, 1, NVSHMEM_SIGNAL_SET, pe))
PT(put_signal_w, nvshmemx_long_put_signal_warp(d, s, n, sig, 1, NVSHMEM_SIGNAL_SET, pe))
PT(put_signal_nbi_b,
   nvshmemx_long_put_signal_nbi_block(d, s, n, sig, 1, NVSHMEM_SIGNAL_ADD, pe))
PT(signal_op, nvshmemx_signal_op(sig, 1, NVSHMEM_SIGNAL_ADD, pe))
PT(signal_wait, nvshmem_signal_wait_until(sig, NVSHMEM_CMP_GE, (uint64_t)i))
PT(fetch_add, d[i] = nvshmem_long_atomic_fetch_add(d, 1, pe))
PT(compare_swap, d[i] = nvshmem_long_atomic_compare_swap(d, 1, 2, pe))
PT(atomic_add, nvshmem_long_atomic_add(d, 1, pe))
PT(g_t, d[i] = nvshmem_long_g(s + i, pe))
PT(p_t, nvshmem_long_p(d + i, i, pe))
PT(wait_until, nvshmem_long_wait_until(d, NVSHMEM_CMP_EQ, i))
PT(wait_until_all, nvshmem_long_wait_until_all(d, n, NULL, NVSHMEM_CMP_GE, i))
PT(test_any, d[i] = (long)nvshmem_long_test_any(d, n, NULL, NVSHMEM_CMP_GE, i))
PT(fence_quiet, nvshmem_long_p(d + i, i, pe); nvshmem_fence(); nvshmem_quiet())
PT(quiet_b, nvshmemx_long_put_nbi_block(d, s, n, pe); nvshmemx_quiet_block())
PT(ptr_store, long *q = (long *)nvshmem_ptr(d, pe); if (q != NULL) q[i] = i)
PT(mixed_b, nvshmemx_long_put_signal_nbi_block(d, s, n, sig, 1, NVSHMEM_SIGNAL_ADD, pe);
   nvshmemx_long_get_block(d + n, s, n, pe); nvshmemx_barrier_all_block())

/* The team a kernel argument, as programs pass a split team: the world's
 * paths and the other teams' are both in the kernel. */
#define TEAM(NAME, T, CALL)                                                                \
    __global__ void NAME(nvshmem_team_t team, T *dest, const T *source, size_t n,         \
                         int iters)                                                        \
    {                                                                                      \
        for (int i = 0; i < iters; i++) {                                                  \
            CALL;                                                                          \
        }                                                                                  \
    }
TEAM(team_int_sum_t, int, nvshmem_int_sum_reduce(team, dest, source, n))
TEAM(team_int_sum_w, int, nvshmemx_int_sum_reduce_warp(team, dest, source, n))
TEAM(team_double_sum_b, double, nvshmemx_double_sum_reduce_block(team, dest, source, n))
TEAM(team_half_max_b, half, nvshmemx_half_max_reduce_block(team, dest, source, n))
TEAM(team_int_rs_t, int, nvshmem_int_sum_reducescatter(team, dest, source, n))
TEAM(team_ll_rs_b, long long, nvshmemx_longlong_sum_reducescatter_block(team, dest, source, n))
TEAM(team_maxloc_w, double2, nvshmemx_double2_maxloc_reduce_warp(team, dest, source, n))
TEAM(team_alltoall_t, int, nvshmem_int_alltoall(team, dest, source, n))
TEAM(team_alltoall_b, int, nvshmemx_int_alltoall_block(team, dest, source, n))
TEAM(team_bcast_w, double, nvshmemx_double_broadcast_warp(team, dest, source, n, 0))
TEAM(team_fcollect_b, long, nvshmemx_long_fcollect_block(team, dest, source, n))
TEAM(team_barrier_t, long, nvshmem_barrier(team))
TEAM(team_sync_t, long, nvshmem_team_sync(team))
TEAM(team_barrier_b, long, nvshmemx_barrier_block(team))
TEAM(team_sync_w_arg, long, nvshmemx_team_sync_warp(team))
TEAM(team_query, long,
     dest[i] = nvshmem_team_my_pe(team) + nvshmem_team_n_pes(team) +
               nvshmem_team_translate_pe(team, i, NVSHMEM_TEAM_WORLD))
TEAM(team_mixed_b, long, nvshmemx_long_fcollect_block(team, dest, source, n);
     nvshmemx_long_sum_reduce_block(team, dest + n, source, n); nvshmemx_barrier_block(team))

/* Six different collectives behind each other, on the world and on a team
 * the kernel is passed, at each scope, as a program's one communication
 * kernel might call them: within the budget. (With the team a kernel
 * argument they needed 74 to 86 registers while an unknown team printed
 * from the kernel; NVSHMEM 3.4.5's own headers give 134 to 196 for all
 * six shapes.) */
#define SIX(NAME, PFX, SC, TEAM, TEAM_PARAM)                                               \
    __global__ void NAME(TEAM_PARAM int *d, const int *s, size_t n, int iters)            \
    {                                                                                      \
        for (int i = 0; i < iters; i++) {                                                  \
            PFX##_int_alltoall##SC(TEAM, d, s, n);                                         \
            PFX##_int_fcollect##SC(TEAM, d + n, s, n);                                     \
            PFX##_int_sum_reduce##SC(TEAM, d + 2 * n, s, n);                               \
            PFX##_int_max_reduce##SC(TEAM, d + 3 * n, s, n);                               \
            PFX##_int_sum_reducescatter##SC(TEAM, d + 4 * n, s, n);                        \
            PFX##_int_broadcast##SC(TEAM, d + 5 * n, s, n, 0);                             \
        }                                                                                  \
    }
#define SIX_TEAM_PARAM nvshmem_team_t team,
SIX(six_world_t, nvshmem, , NVSHMEM_TEAM_WORLD, )
SIX(six_world_w, nvshmemx, _warp, NVSHMEM_TEAM_WORLD, )
SIX(six_world_b, nvshmemx, _block, NVSHMEM_TEAM_WORLD, )
SIX(six_team_t, nvshmem, , team, SIX_TEAM_PARAM)
SIX(six_team_w, nvshmemx, _warp, team, SIX_TEAM_PARAM)
SIX(six_team_b, nvshmemx, _block, team, SIX_TEAM_PARAM)

/* The same of mixed types, as nv_team.cu's collectives kernels call them
 * (alltoall and sum of ints, fcollect, max and broadcast of doubles), in a
 * loop on a team argument. (Before the world's reductions of 8-byte
 * elements took one shape of rounds, ushmemi_nv_reduce_rounds4, these
 * needed 80 registers at warp scope, with rounds of two shapes, one for two
 * PEs and one for more, and 72 at thread scope, with two PEs by two
 * elements whatever the PE count; nv_team's own kernels, the buffers in a
 * struct, 72 at warp scope and 64 at the others.) */
#define MIXED(NAME, PFX, SC)                                                               \
    __global__ void NAME(nvshmem_team_t team, int *ia, int *ib, double *da, double *db,    \
                         size_t n, int iters)                                              \
    {                                                                                      \
        for (int i = 0; i < iters; i++) {                                                  \
            PFX##_int_alltoall##SC(team, ib, ia, n);                                       \
            PFX##_double_fcollect##SC(team, db, da, n);                                    \
            PFX##_int_sum_reduce##SC(team, ib + n, ia, n);                                 \
            PFX##_double_max_reduce##SC(team, db + n, da, n);                              \
            PFX##_int_sum_reducescatter##SC(team, ib + 2 * n, ia, n);                      \
            PFX##_double_broadcast##SC(team, db + 2 * n, da, n, 0);                        \
        }                                                                                  \
    }
MIXED(mixed_team_t, nvshmem, )
MIXED(mixed_team_w, nvshmemx, _warp)
MIXED(mixed_team_b, nvshmemx, _block)
