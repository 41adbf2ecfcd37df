/* Teams in an NVSHMEM program's kernels, written as NVSHMEM's users write
 * them (no __launch_bounds__, 1024-thread blocks, the team a kernel
 * argument, error codes checked) and built against ushmem's <nvshmem.h>:
 * the world, the even PEs and the rows and columns of a 2-D split are
 * passed to the same kernels. In them, the team queries (checked against
 * the host's), team barriers in a loop that nobody may leave early, and
 * alltoall, broadcast, fcollect, sum and max reductions and a
 * reduce-scatter of ints and doubles at thread, warp and block scope, in
 * a loop. Every PE checks every
 * value it received; exit 77 without a GPU. */
#include <nvshmem.h>
#include <nvshmemx.h>

#include <stdio.h>
#include <stdlib.h>
#include <vector>

static int me, npes;

#include "nv_check.h"

#define N 300    /* elements per member */
#define ROUNDS 20

/* out[0..2]: my_pe, n_pes, and translate(my_pe) to the world; out[3 + i]:
 * member i's world PE, for i < n_pes; then -1 for a member past the end. */
__global__ void queries(nvshmem_team_t team, int *out)
{
    if (threadIdx.x == 0 && blockIdx.x == 0) {
        int size = nvshmem_team_n_pes(team), my = nvshmem_team_my_pe(team);
        out[0] = my;
        out[1] = size;
        out[2] = nvshmem_team_translate_pe(team, my, NVSHMEM_TEAM_WORLD);
        for (int i = 0; i <= size; i++)
            out[3 + i] = nvshmem_team_translate_pe(team, i, NVSHMEM_TEAM_WORLD);
    }
}

/* Each round every member adds one to every member's count, then the
 * team's barrier; after it the count must have grown by the team's size.
 * A team sync keeps the next round's adds after every member's check. */
__global__ void barrier_rounds(nvshmem_team_t team, long *count, int *bad)
{
    int size = nvshmem_team_n_pes(team);
    for (int r = 1; r <= ROUNDS; r++) {
        if (threadIdx.x == 0) {
            for (int i = 0; i < size; i++)
                nvshmem_long_atomic_add(count,
                                        1, nvshmem_team_translate_pe(team, i, NVSHMEM_TEAM_WORLD));
            nvshmem_barrier(team);
            long seen = nvshmem_long_atomic_fetch(count, nvshmem_my_pe());
            if (seen != (long)r * size && *bad == 0)
                *bad = r;
        }
        __syncthreads();
        nvshmemx_team_sync_block(team);
    }
}

/* The collectives, each scope's threads of one block calling, ITERS times
 * in a loop (a kernel of its own per scope, as a program's one
 * communication kernel calls them; ints and doubles mixed, the team an
 * argument: within the 64 registers of a 1024-thread block):
 * ib = alltoall of ia; db = fcollect of da; ib2 = sum of ia's first N;
 * db2 = max of da; ib3 = reduce-scatter of ia; db3 = broadcast of da from
 * the last member. Each round takes its sources from a region of its own
 * (istride ints and N doubles on), with values of their own, into the
 * same destinations: the last round's values must be what stays. */
struct coll {
    int *ia, *ib, *ib2, *ib3;
    double *da, *db, *db2, *db3;
    int istride;
};

#define ITERS 3

#define COLLECTIVES(PFX, SC)                                                               \
    PFX##_int_alltoall##SC(team, c.ib, ia, N);                                             \
    PFX##_double_fcollect##SC(team, c.db, da, N);                                          \
    PFX##_int_sum_reduce##SC(team, c.ib2, ia, N);                                          \
    PFX##_double_max_reduce##SC(team, c.db2, da, N);                                       \
    PFX##_int_sum_reducescatter##SC(team, c.ib3, ia, N);                                   \
    PFX##_double_broadcast##SC(team, c.db3, da, N, size - 1)

template <int SCOPE> __global__ void collectives(nvshmem_team_t team, coll c, int iters)
{
    int size = nvshmem_team_n_pes(team);
    for (int it = 0; it < iters; it++) {
        const int *ia = c.ia + (size_t)it * c.istride;
        const double *da = c.da + (size_t)it * N;
        if (SCOPE == 2) {
            COLLECTIVES(nvshmemx, _block);
        } else if (SCOPE == 1 && threadIdx.x < 32) {
            COLLECTIVES(nvshmemx, _warp);
        } else if (SCOPE == 0 && threadIdx.x == 0) {
            COLLECTIVES(nvshmem, );
        }
    }
}

/* PE pe's sources in round it (by default the last, whose results stay). */
static int ia_val(int pe, int i, int it = ITERS - 1) { return it * 1000000 + pe * 10000 + i; }
static double da_val(int pe, int i, int it = ITERS - 1)
{
    return it * 1e7 + ((i % 5 == pe % 5) ? 1e6 + i : pe + 0.5 * i);
}

static void run_team(nvshmem_team_t team, const char *what, cudaStream_t s, int *qbuf,
                     long *count, int *bad, coll c)
{
    int size = nvshmem_team_n_pes(team), my = nvshmem_team_my_pe(team);
    std::vector<int> q(4 + npes);

    queries<<<1, 1024, 0, s>>>(team, qbuf);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaStreamSynchronize(s));
    CUDA_CHECK(cudaMemcpy(q.data(), qbuf, (4 + size) * sizeof(int), cudaMemcpyDeviceToHost));
    CHECK(q[0] == my && q[1] == size && q[2] == me, "%s: device my_pe %d of %d (world %d); "
          "host %d of %d", what, q[0], q[1], q[2], my, size);
    for (int i = 0; i <= size; i++) {
        int want = i < size ? nvshmem_team_translate_pe(team, i, NVSHMEM_TEAM_WORLD) : -1;
        CHECK(q[3 + i] == want, "%s: member %d: device says world PE %d, host %d", what, i,
              q[3 + i], want);
    }

    CUDA_CHECK(cudaMemset(count, 0, sizeof(long)));
    CUDA_CHECK(cudaMemset(bad, 0, sizeof(int)));
    CUDA_CHECK(cudaDeviceSynchronize());
    nvshmem_team_sync(team); /* every member's count is zero before any add */
    barrier_rounds<<<1, 1024, 0, s>>>(team, count, bad);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaStreamSynchronize(s));
    int badh = 0;
    CUDA_CHECK(cudaMemcpy(&badh, bad, sizeof(int), cudaMemcpyDeviceToHost));
    CHECK(badh == 0, "%s: round %d: a member left the team barrier before every add arrived",
          what, badh);

    std::vector<int> ih(ITERS * N * npes);
    std::vector<double> dh(ITERS * N);
    for (int it = 0; it < ITERS; it++) {
        for (int i = 0; i < N * npes; i++)
            ih[it * N * npes + i] = ia_val(me, i, it);
        for (int i = 0; i < N; i++)
            dh[it * N + i] = da_val(me, i, it);
    }
    CUDA_CHECK(cudaMemcpy(c.ia, ih.data(), ih.size() * sizeof(int), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(c.da, dh.data(), dh.size() * sizeof(double), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaDeviceSynchronize());
    for (int scope = 0; scope < 3; scope++) {
        /* Nothing of the scope before may pass for this one's. */
        CUDA_CHECK(cudaMemset(c.ib, 0xff, N * npes * sizeof(int)));
        CUDA_CHECK(cudaMemset(c.ib2, 0xff, N * sizeof(int)));
        CUDA_CHECK(cudaMemset(c.ib3, 0xff, N * sizeof(int)));
        CUDA_CHECK(cudaMemset(c.db, 0xff, N * npes * sizeof(double)));
        CUDA_CHECK(cudaMemset(c.db2, 0xff, N * sizeof(double)));
        CUDA_CHECK(cudaMemset(c.db3, 0xff, N * sizeof(double)));
        CUDA_CHECK(cudaDeviceSynchronize());
        nvshmem_team_sync(team); /* every member has checked the scope before and cleared */
        if (scope == 2)
            collectives<2><<<1, 1024, 0, s>>>(team, c, ITERS);
        else if (scope == 1)
            collectives<1><<<1, 1024, 0, s>>>(team, c, ITERS);
        else
            collectives<0><<<1, 1024, 0, s>>>(team, c, ITERS);
        CUDA_CHECK(cudaGetLastError());
        CUDA_CHECK(cudaStreamSynchronize(s));
        std::vector<int> ib(N * size), ib2(N), ib3(N);
        std::vector<double> db(N * size), db2(N), db3(N);
        CUDA_CHECK(cudaMemcpy(ib.data(), c.ib, ib.size() * sizeof(int), cudaMemcpyDeviceToHost));
        CUDA_CHECK(cudaMemcpy(ib2.data(), c.ib2, N * sizeof(int), cudaMemcpyDeviceToHost));
        CUDA_CHECK(cudaMemcpy(ib3.data(), c.ib3, N * sizeof(int), cudaMemcpyDeviceToHost));
        CUDA_CHECK(cudaMemcpy(db.data(), c.db, db.size() * sizeof(double),
                              cudaMemcpyDeviceToHost));
        CUDA_CHECK(cudaMemcpy(db2.data(), c.db2, N * sizeof(double), cudaMemcpyDeviceToHost));
        CUDA_CHECK(cudaMemcpy(db3.data(), c.db3, N * sizeof(double), cudaMemcpyDeviceToHost));
        int last = nvshmem_team_translate_pe(team, size - 1, NVSHMEM_TEAM_WORLD);
        for (int j = 0; j < size; j++) {
            int pe = nvshmem_team_translate_pe(team, j, NVSHMEM_TEAM_WORLD);
            for (int i = 0; i < N; i++) {
                CHECK(ib[j * N + i] == ia_val(pe, my * N + i),
                      "%s, scope %d: alltoall from member %d [%d] = %d, want %d", what, scope, j,
                      i, ib[j * N + i], ia_val(pe, my * N + i));
                CHECK(db[j * N + i] == da_val(pe, i), "%s, scope %d: fcollect from member %d "
                      "[%d] = %g", what, scope, j, i, db[j * N + i]);
            }
        }
        for (int i = 0; i < N; i++) {
            int sum = 0, rs = 0;
            double mx = -1;
            for (int j = 0; j < size; j++) {
                int pe = nvshmem_team_translate_pe(team, j, NVSHMEM_TEAM_WORLD);
                sum += ia_val(pe, i);
                rs += ia_val(pe, my * N + i);
                mx = da_val(pe, i) > mx ? da_val(pe, i) : mx;
            }
            CHECK(ib2[i] == sum, "%s, scope %d: sum_reduce [%d] = %d, want %d", what, scope, i,
                  ib2[i], sum);
            CHECK(ib3[i] == rs, "%s, scope %d: reducescatter [%d] = %d, want %d", what, scope, i,
                  ib3[i], rs);
            CHECK(db2[i] == mx, "%s, scope %d: max_reduce [%d] = %g, want %g", what, scope, i,
                  db2[i], mx);
            CHECK(db3[i] == da_val(last, i), "%s, scope %d: broadcast from member %d [%d] = %g",
                  what, scope, size - 1, i, db3[i]);
        }
    }
    nvshmem_team_sync(team);
}

int main(void)
{
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        printf("no CUDA device: skipped\n");
        return 77;
    }
    nvshmem_init();
    me = nvshmem_my_pe();
    npes = nvshmem_n_pes();
    CUDA_CHECK(cudaSetDevice(nvshmem_team_my_pe(NVSHMEMX_TEAM_NODE) % ndev));
    cudaStream_t s;
    CUDA_CHECK(cudaStreamCreate(&s));

    int *qbuf = (int *)nvshmem_malloc((4 + npes) * sizeof(int));
    long *count = (long *)nvshmem_malloc(sizeof(long));
    int *bad = (int *)nvshmem_malloc(sizeof(int));
    coll c;
    c.ia = (int *)nvshmem_malloc(ITERS * N * npes * sizeof(int));
    c.istride = N * npes;
    c.ib = (int *)nvshmem_malloc(N * npes * sizeof(int));
    c.ib2 = (int *)nvshmem_malloc(N * sizeof(int));
    c.ib3 = (int *)nvshmem_malloc(N * sizeof(int));
    c.da = (double *)nvshmem_malloc(ITERS * N * sizeof(double));
    c.db = (double *)nvshmem_malloc(N * npes * sizeof(double));
    c.db2 = (double *)nvshmem_malloc(N * sizeof(double));
    c.db3 = (double *)nvshmem_malloc(N * sizeof(double));
    CHECK(qbuf && count && bad && c.ia && c.ib && c.ib2 && c.ib3 && c.da && c.db && c.db2 &&
              c.db3,
          "nvshmem_malloc");

    nvshmem_team_t even = NVSHMEM_TEAM_INVALID, row = NVSHMEM_TEAM_INVALID,
                   col = NVSHMEM_TEAM_INVALID;
    nvshmem_team_split_strided(NVSHMEM_TEAM_WORLD, 0, 2, (npes + 1) / 2, NULL, 0, &even);
    CHECK(nvshmem_team_split_2d(NVSHMEM_TEAM_WORLD, 2, NULL, 0, &row, NULL, 0, &col) == 0,
          "nvshmem_team_split_2d");
    CHECK(row != NVSHMEM_TEAM_INVALID && col != NVSHMEM_TEAM_INVALID, "2-D split: no team");

    run_team(NVSHMEM_TEAM_WORLD, "the world", s, qbuf, count, bad, c);
    if (even != NVSHMEM_TEAM_INVALID)
        run_team(even, "the even PEs", s, qbuf, count, bad, c);
    nvshmem_barrier_all();
    run_team(row, "a 2-D row", s, qbuf, count, bad, c);
    nvshmem_barrier_all();
    run_team(col, "a 2-D column", s, qbuf, count, bad, c);
    nvshmem_barrier_all();

    nvshmem_team_destroy(col);
    nvshmem_team_destroy(row);
    if (even != NVSHMEM_TEAM_INVALID)
        nvshmem_team_destroy(even);
    nvshmem_barrier_all();
    if (me == 0)
        printf("nv_team: %d PEs passed\n", npes);
    CUDA_CHECK(cudaStreamDestroy(s));
    nvshmem_finalize();
    return 0;
}
