/* An NVSHMEM program's GPU side, written as NVSHMEM's users write it (no
 * __launch_bounds__, 1024-thread blocks, calls in loops, error codes
 * checked) and built against ushmem's <nvshmem.h> (oshnvcc --nvshmem):
 * the device picked by the node team after nvshmem_init; block, warp and
 * thread puts and gets in loops; p and g of 8- to 64-bit and 16-bit
 * floating types; atomics from every thread; signals and waits; the device
 * barrier, alltoall, broadcast, fcollect, reductions (int, double, half)
 * and reduce-scatter inside a collective launch, at every scope and odd
 * lengths; a collective launch too
 * large to be resident, and one whose blocks are larger than the kernel's
 * registers allow, refused in a sentence that says so; stream-ordered
 * puts, barriers and reductions. Every PE checks every value; exit 77
 * without a GPU. */
#include <nvshmem.h>
#include <nvshmemx.h>

#include <cooperative_groups.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <string>
#include <vector>

static int me, npes;

#include "nv_check.h"

/* Each block puts its chunk `iters` times, as NVSHMEM's shmem_put_bw does. */
__global__ void put_block_loop(double *dst, const double *src, size_t chunk, int iters, int pe)
{
    size_t off = blockIdx.x * chunk;
    for (int i = 0; i < iters; i++)
        nvshmemx_double_put_nbi_block(dst + off, src + off, chunk, pe);
    if (threadIdx.x == 0)
        nvshmem_quiet();
}

__global__ void get_warp_loop(int *dst, const int *src, size_t chunk, int iters, int pe)
{
    size_t warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    for (int i = 0; i < iters; i++)
        nvshmemx_int_get_warp(dst + warp * chunk, src + warp * chunk, chunk, pe);
}

/* Thread scope: p and g of several types, and atomics from every thread. */
__global__ void thread_ops(uint8_t *b, int *w, double *d, half *h, __nv_bfloat16 *bf,
                           unsigned long long *ctr, uint64_t *sig, int pe)
{
    unsigned t = blockIdx.x * blockDim.x + threadIdx.x;
    int me_ = nvshmem_my_pe();
    nvshmem_uint8_p(&b[t], (uint8_t)(t + me_), pe);
    nvshmem_int_p(&w[t], (int)(t * 3 + me_), pe);
    nvshmem_double_p(&d[t], t + 0.25 * me_, pe);
    nvshmem_half_p(&h[t], __float2half((float)(t % 512)), pe);
    nvshmem_bfloat16_p(&bf[t], __float2bfloat16((float)(t % 256)), pe);
    nvshmem_ulonglong_atomic_add(&ctr[0], 1, pe);
    unsigned long long old = nvshmem_ulonglong_atomic_fetch_add(&ctr[1], 2, pe);
    (void)old;
    nvshmem_ulonglong_atomic_inc(&ctr[2], pe);
    nvshmem_quiet();
    __syncthreads();
    if (t == 0)
        nvshmemx_signal_op(sig, 1, NVSHMEM_SIGNAL_ADD, pe);
}

/* One collective per kernel, each made by block 0 (or its first warp, for
 * the warp forms: one group per PE calls a collective) while the grid waits
 * for it (a grid sync: every block must be resident), as NVSHMEM's
 * perftests shape them: alltoall, the reductions of int, double and half,
 * a reduce-scatter, fcollect and broadcast, into ib, db and hb for the host
 * to check. (Several collectives in one kernel add up their registers:
 * such a kernel may not fit 1024 threads, and the collective launch says so.) */
/* Element i of PE pe's double source: one PE in seven holds a value so
 * large that the sum of the others' fractions depends on where it comes. */
static double dval(int pe, int i)
{
    return (i % 7 == pe % 7) ? 1.0e16 + 4.0 * i : pe + 0.1 * (i % 10);
}

struct coll_args {
    int *ia, *ib;
    double *da, *db;
    half *ha, *hb;
    int n;
};

/* THREADS: the threads of block 0 that call (the block, or its first warp). */
#define COLL_KERNEL(NAME, THREADS, CALL)                                                   \
    __global__ void NAME(coll_args a)                                                      \
    {                                                                                      \
        int npes_ = nvshmem_n_pes(), n = a.n;                                              \
        (void)npes_;                                                                       \
        if (blockIdx.x == 0 && threadIdx.x < (THREADS))                                    \
            CALL;                                                                          \
        cooperative_groups::this_grid().sync();                                            \
    }
COLL_KERNEL(coll_alltoall, blockDim.x,
            nvshmemx_int_alltoall_block(NVSHMEM_TEAM_WORLD, a.ib, a.ia, n))
COLL_KERNEL(coll_sum, blockDim.x,
            nvshmemx_int_sum_reduce_block(NVSHMEM_TEAM_WORLD, a.ib + n * npes_, a.ia, n))
COLL_KERNEL(coll_max, blockDim.x,
            nvshmemx_double_max_reduce_block(NVSHMEM_TEAM_WORLD, a.db, a.da, n))
COLL_KERNEL(coll_half, 32, nvshmemx_half_sum_reduce_warp(NVSHMEM_TEAM_WORLD, a.hb, a.ha, n))
COLL_KERNEL(coll_rs, blockDim.x,
            nvshmemx_int_sum_reducescatter_block(NVSHMEM_TEAM_WORLD, a.ib + n * (npes_ + 1), a.ia,
                                                 n))
COLL_KERNEL(coll_fcollect, blockDim.x,
            nvshmemx_double_fcollect_block(NVSHMEM_TEAM_WORLD, a.db + n, a.da, n))
/* A reduce-scatter in place: dest is the start of the source, whose block
 * of PE 0 it overwrites (every PE must meet its peers alike). */
COLL_KERNEL(coll_rs_inplace, 32,
            nvshmemx_int_sum_reducescatter_warp(NVSHMEM_TEAM_WORLD, a.ia, a.ia, n))
/* A sum whose bits depend on the order it takes the PEs in (PE 0, 1, ...). */
COLL_KERNEL(coll_dsum, 32,
            nvshmemx_double_sum_reduce_warp(NVSHMEM_TEAM_WORLD, a.db + n * (npes_ + 1), a.da, n))
COLL_KERNEL(coll_bcast, 32,
            nvshmemx_int_broadcast_warp(NVSHMEM_TEAM_WORLD, a.ib + n * (npes_ + 2), a.ia, n,
                                        npes_ - 1))

/* A long sum and an int reduce-scatter at the scope given (0 thread, 1 warp,
 * 2 block), by the threads of block 0 that call; lengths that are not a
 * multiple of what the device loads in a round. */
/* Sums of longs and doubles (whose bits depend on the PEs' order) and
 * reduce-scatters of ints and long longs. */
struct odd_bufs {
    long *dl;
    const long *sl;
    int *di;
    const int *si;
    double *dd;
    const double *sd;
    long long *dr;
    const long long *sr;
};

__global__ void odd_reduce(odd_bufs b, int n, int scope)
{
    if (blockIdx.x != 0)
        return;
    if (scope == 0 && threadIdx.x == 0) {
        nvshmem_long_sum_reduce(NVSHMEM_TEAM_WORLD, b.dl, b.sl, n);
        nvshmem_int_sum_reducescatter(NVSHMEM_TEAM_WORLD, b.di, b.si, n);
        nvshmem_double_sum_reduce(NVSHMEM_TEAM_WORLD, b.dd, b.sd, n);
        nvshmem_longlong_sum_reducescatter(NVSHMEM_TEAM_WORLD, b.dr, b.sr, n);
    } else if (scope == 1 && threadIdx.x < 32) {
        nvshmemx_long_sum_reduce_warp(NVSHMEM_TEAM_WORLD, b.dl, b.sl, n);
        nvshmemx_int_sum_reducescatter_warp(NVSHMEM_TEAM_WORLD, b.di, b.si, n);
        nvshmemx_double_sum_reduce_warp(NVSHMEM_TEAM_WORLD, b.dd, b.sd, n);
        nvshmemx_longlong_sum_reducescatter_warp(NVSHMEM_TEAM_WORLD, b.dr, b.sr, n);
    } else if (scope == 2) {
        nvshmemx_long_sum_reduce_block(NVSHMEM_TEAM_WORLD, b.dl, b.sl, n);
        nvshmemx_int_sum_reducescatter_block(NVSHMEM_TEAM_WORLD, b.di, b.si, n);
        nvshmemx_double_sum_reduce_block(NVSHMEM_TEAM_WORLD, b.dd, b.sd, n);
        nvshmemx_longlong_sum_reducescatter_block(NVSHMEM_TEAM_WORLD, b.dr, b.sr, n);
    }
}

/* PE pe's double for element i: PE 0's is large enough that adding the
 * others' rounds, so a sum in another order than the PEs' has other bits. */
static double odd_double(int pe, int i) { return pe == 0 ? 1e16 + 2.0 * i : 1.25 + pe * 0.5 + i; }

/* One block meets the other PEs, the grid waits for it. */
__global__ void barrier_loop(int rounds)
{
    cooperative_groups::grid_group grid = cooperative_groups::this_grid();
    for (int r = 0; r < rounds; r++) {
        if (blockIdx.x == 0)
            nvshmemx_barrier_all_block();
        grid.sync();
    }
}

/* More registers than a block of 1024 threads may have, whatever the
 * compiler: 64 words live across a loop, each step depending on the next
 * word. Then one block meets the other PEs. */
#define HEAVY_WORDS 64
__global__ void heavy_registers(unsigned long long *out, int rounds)
{
    unsigned long long a[HEAVY_WORDS];
#pragma unroll
    for (int k = 0; k < HEAVY_WORDS; k++)
        a[k] = out[k] + threadIdx.x;
    for (int r = 0; r < rounds; r++) {
#pragma unroll
        for (int k = 0; k < HEAVY_WORDS; k++)
            a[k] = a[k] * 3 + a[(k + 1) % HEAVY_WORDS];
    }
    __syncthreads();
    if (threadIdx.x == 0) {
#pragma unroll
        for (int k = 0; k < HEAVY_WORDS; k++)
            out[k] = a[k];
        nvshmem_barrier_all();
    }
}

/* What fn(arg) writes to stderr, as one string (at most 4 KiB). */
static std::string stderr_of(int (*fn)(void *), void *arg, int *rc)
{
    char buf[4096];
    FILE *tf = tmpfile();
    CHECK(tf != NULL, "tmpfile failed");
    fflush(stderr);
    int saved = dup(2);
    CHECK(saved >= 0 && dup2(fileno(tf), 2) >= 0, "redirecting stderr failed");
    *rc = fn(arg);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    rewind(tf);
    size_t got = fread(buf, 1, sizeof(buf) - 1, tf);
    fclose(tf);
    buf[got] = '\0';
    return std::string(buf);
}

struct heavy_launch {
    unsigned threads;
    void **args;
    cudaStream_t s;
};
static int launch_heavy(void *p)
{
    struct heavy_launch *h = (struct heavy_launch *)p;
    return nvshmemx_collective_launch((const void *)heavy_registers, 1, h->threads, h->args, 0,
                                      h->s);
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
    int node_pe = nvshmem_team_my_pe(NVSHMEMX_TEAM_NODE);
    CUDA_CHECK(cudaSetDevice(node_pe % ndev)); /* NVSHMEM's usual choice, after init */
    cudaStream_t s;
    CUDA_CHECK(cudaStreamCreate(&s));
    const int right = (me + 1) % npes, left = (me + npes - 1) % npes;

    /* Block puts in a loop, 32 blocks of 1024 threads. */
    const size_t chunk = 4096, blocks = 32, total = chunk * blocks;
    double *src = (double *)nvshmem_malloc(total * sizeof(double));
    double *dst = (double *)nvshmem_malloc(total * sizeof(double));
    CHECK(src != NULL && dst != NULL, "nvshmem_malloc");
    std::vector<double> host(total);
    for (size_t i = 0; i < total; i++)
        host[i] = me * 1e7 + (double)i;
    CUDA_CHECK(cudaMemcpy(src, host.data(), total * sizeof(double), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemset(dst, 0, total * sizeof(double)));
    CUDA_CHECK(cudaDeviceSynchronize()); /* the memset is done before any peer's put */
    nvshmem_barrier_all();
    put_block_loop<<<blocks, 1024, 0, s>>>(dst, src, chunk, 5, right);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaStreamSynchronize(s));
    nvshmem_barrier_all();
    CUDA_CHECK(cudaMemcpy(host.data(), dst, total * sizeof(double), cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < total; i++)
        CHECK(host[i] == left * 1e7 + (double)i, "block put loop: dst[%zu] = %g from PE %d", i,
              host[i], left);

    /* Warp gets in a loop, 8 blocks of 1024 threads, 64 ints a warp. */
    int *isrc = (int *)nvshmem_malloc(8 * 32 * 64 * sizeof(int));
    int *idst = (int *)nvshmem_malloc(8 * 32 * 64 * sizeof(int));
    std::vector<int> ih(8 * 32 * 64);
    for (size_t i = 0; i < ih.size(); i++)
        ih[i] = me * 100000 + (int)i;
    CUDA_CHECK(cudaMemcpy(isrc, ih.data(), ih.size() * sizeof(int), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaDeviceSynchronize()); /* a pageable copy may return before it lands */
    nvshmem_barrier_all();
    get_warp_loop<<<8, 1024, 0, s>>>(idst, isrc, 64, 3, right);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaStreamSynchronize(s));
    CUDA_CHECK(cudaMemcpy(ih.data(), idst, ih.size() * sizeof(int), cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < ih.size(); i++)
        CHECK(ih[i] == right * 100000 + (int)i, "warp get loop: dst[%zu] = %d", i, ih[i]);

    /* Thread scope, 4 blocks of 1024 threads. */
    const unsigned nt = 4096;
    uint8_t *b = (uint8_t *)nvshmem_calloc(nt, 1);
    int *w = (int *)nvshmem_calloc(nt, sizeof(int));
    double *d = (double *)nvshmem_calloc(nt, sizeof(double));
    half *h = (half *)nvshmem_calloc(nt, sizeof(half));
    __nv_bfloat16 *bf = (__nv_bfloat16 *)nvshmem_calloc(nt, sizeof(__nv_bfloat16));
    unsigned long long *ctr = (unsigned long long *)nvshmem_calloc(3, sizeof(unsigned long long));
    uint64_t *sig = (uint64_t *)nvshmem_calloc(1, sizeof(uint64_t));
    nvshmem_barrier_all();
    thread_ops<<<4, 1024, 0, s>>>(b, w, d, h, bf, ctr, sig, right);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaStreamSynchronize(s));
    nvshmem_barrier_all();
    std::vector<uint8_t> bh(nt);
    std::vector<int> wh(nt);
    std::vector<double> dh(nt);
    std::vector<half> hh(nt);
    std::vector<__nv_bfloat16> bfh(nt);
    unsigned long long ch[3];
    uint64_t sh;
    CUDA_CHECK(cudaMemcpy(bh.data(), b, nt, cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(wh.data(), w, nt * sizeof(int), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(dh.data(), d, nt * sizeof(double), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(hh.data(), h, nt * sizeof(half), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(bfh.data(), bf, nt * sizeof(__nv_bfloat16), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(ch, ctr, sizeof(ch), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(&sh, sig, sizeof(sh), cudaMemcpyDeviceToHost));
    for (unsigned t = 0; t < nt; t++) {
        CHECK(bh[t] == (uint8_t)(t + left) && wh[t] == (int)(t * 3 + left) &&
                  dh[t] == t + 0.25 * left && __half2float(hh[t]) == (float)(t % 512) &&
                  __bfloat162float(bfh[t]) == (float)(t % 256),
              "thread p of element %u: %u %d %g %g %g", t, bh[t], wh[t], dh[t],
              (double)__half2float(hh[t]), (double)__bfloat162float(bfh[t]));
    }
    CHECK(ch[0] == nt && ch[1] == 2ull * nt && ch[2] == nt && sh == 1,
          "atomics from %u threads of PE %d: add %llu, fetch_add %llu, inc %llu, signal %llu", nt,
          left, ch[0], ch[1], ch[2], (unsigned long long)sh);

    /* Collectives in a cooperative grid of 4 blocks of 1024 threads. */
    const int n = 256;
    int *ia = (int *)nvshmem_malloc(n * npes * sizeof(int));
    int *ib = (int *)nvshmem_malloc(n * (npes + 3) * sizeof(int));
    double *da = (double *)nvshmem_malloc(n * sizeof(double));
    double *db = (double *)nvshmem_malloc(n * (npes + 2) * sizeof(double));
    half *ha = (half *)nvshmem_malloc(n * sizeof(half));
    half *hb = (half *)nvshmem_malloc(n * sizeof(half));
    std::vector<int> iah(n * npes);
    std::vector<double> dah(n);
    std::vector<half> hah(n);
    for (int i = 0; i < n * npes; i++)
        iah[i] = me * 1000 + i;
    for (int i = 0; i < n; i++) {
        dah[i] = dval(me, i);
        hah[i] = __float2half((float)(me + 1));
    }
    CUDA_CHECK(cudaMemcpy(ia, iah.data(), iah.size() * sizeof(int), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(da, dah.data(), n * sizeof(double), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(ha, hah.data(), n * sizeof(half), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaDeviceSynchronize());
    nvshmem_barrier_all();
    coll_args ca = {ia, ib, da, db, ha, hb, n};
    void *args[] = {&ca};
    const void *kernels[] = {(const void *)coll_alltoall, (const void *)coll_sum,
                             (const void *)coll_max,      (const void *)coll_half,
                             (const void *)coll_rs,       (const void *)coll_fcollect,
                             (const void *)coll_dsum,     (const void *)coll_bcast};
    int rc = 0;
    for (int round = 0; round < 3; round++)
        for (unsigned k = 0; k < sizeof(kernels) / sizeof(kernels[0]); k++) {
            rc = nvshmemx_collective_launch(kernels[k], 4, 1024, args, 0, s);
            CHECK(rc == NVSHMEMX_SUCCESS, "nvshmemx_collective_launch of collective %u: %d", k,
                  rc);
        }
    CUDA_CHECK(cudaStreamSynchronize(s));
    nvshmem_barrier_all();
    std::vector<int> ibh(n * (npes + 3));
    std::vector<double> dbh(n * (npes + 2));
    std::vector<half> hbh(n);
    CUDA_CHECK(cudaMemcpy(ibh.data(), ib, ibh.size() * sizeof(int), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(dbh.data(), db, dbh.size() * sizeof(double), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(hbh.data(), hb, n * sizeof(half), cudaMemcpyDeviceToHost));
    for (int pe = 0; pe < npes; pe++)
        for (int i = 0; i < n; i++)
            CHECK(ibh[pe * n + i] == pe * 1000 + me * n + i, "alltoall [%d][%d] = %d", pe, i,
                  ibh[pe * n + i]);
    for (int i = 0; i < n; i++) {
        int sum = 0, rs = 0;
        double mx = -1, dsum = 0;
        for (int pe = 0; pe < npes; pe++) {
            sum += pe * 1000 + i;
            rs += pe * 1000 + me * n + i;
            double v = dval(pe, i);
            mx = v > mx ? v : mx;
            dsum = pe == 0 ? v : dsum + v;
        }
        CHECK(dbh[n * (npes + 1) + i] == dsum, "double sum_reduce_warp [%d] = %.17g, want %.17g "
              "(PEs taken in order)", i, dbh[n * (npes + 1) + i], dsum);
        CHECK(ibh[n * npes + i] == sum, "sum_reduce [%d] = %d, want %d", i, ibh[n * npes + i], sum);
        CHECK(ibh[n * (npes + 1) + i] == rs, "reducescatter [%d] = %d, want %d", i,
              ibh[n * (npes + 1) + i], rs);
        CHECK(ibh[n * (npes + 2) + i] == (npes - 1) * 1000 + i, "broadcast [%d] = %d", i,
              ibh[n * (npes + 2) + i]);
        CHECK(dbh[i] == mx, "max_reduce [%d] = %g, want %g", i, dbh[i], mx);
        CHECK(__half2float(hbh[i]) == (float)(npes * (npes + 1) / 2), "half sum [%d] = %g", i,
              (double)__half2float(hbh[i]));
    }
    for (int pe = 0; pe < npes; pe++)
        for (int i = 0; i < n; i++) {
            double v = dval(pe, i);
            CHECK(dbh[n + pe * n + i] == v, "fcollect [%d][%d] = %g", pe, i, dbh[n + pe * n + i]);
        }

    /* Once, in place, on the alltoall's source (no longer read). */
    rc = nvshmemx_collective_launch((const void *)coll_rs_inplace, 4, 1024, args, 0, s);
    CHECK(rc == NVSHMEMX_SUCCESS, "nvshmemx_collective_launch of the in-place reduce-scatter: %d",
          rc);
    CUDA_CHECK(cudaStreamSynchronize(s));
    nvshmem_barrier_all();
    CUDA_CHECK(cudaMemcpy(ibh.data(), ia, n * sizeof(int), cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; i++) {
        int rs = 0;
        for (int pe = 0; pe < npes; pe++)
            rs += pe * 1000 + me * n + i;
        CHECK(ibh[i] == rs, "reducescatter in place [%d] = %d, want %d", i, ibh[i], rs);
    }

    /* Reductions of odd lengths at every scope, behind each other on s. */
    const int odd[] = {1, 37, 1001};
    const int nmax = 1001;
    long *sl = (long *)nvshmem_malloc(nmax * sizeof(long));
    long *dl = (long *)nvshmem_malloc(nmax * sizeof(long));
    int *si = (int *)nvshmem_malloc(nmax * npes * sizeof(int));
    int *di = (int *)nvshmem_malloc(nmax * sizeof(int));
    double *sd = (double *)nvshmem_malloc(nmax * sizeof(double));
    double *dd = (double *)nvshmem_malloc(nmax * sizeof(double));
    long long *sr = (long long *)nvshmem_malloc(nmax * npes * sizeof(long long));
    long long *dr = (long long *)nvshmem_malloc(nmax * sizeof(long long));
    CHECK(sl && dl && si && di && sd && dd && sr && dr, "nvshmem_malloc for the odd reductions");
    std::vector<long> slh(nmax), dlh(nmax);
    std::vector<int> sih(nmax * npes), dih(nmax);
    std::vector<double> sdh(nmax), ddh(nmax);
    std::vector<long long> srh(nmax * npes), drh(nmax);
    for (int i = 0; i < nmax; i++) {
        slh[i] = (long)me * 100003 + i;
        sdh[i] = odd_double(me, i);
    }
    for (int i = 0; i < nmax * npes; i++) {
        sih[i] = me * 7 + i;
        srh[i] = (long long)me * 1000000007LL + i;
    }
    CUDA_CHECK(cudaMemcpy(sl, slh.data(), nmax * sizeof(long), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(si, sih.data(), sih.size() * sizeof(int), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(sd, sdh.data(), nmax * sizeof(double), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(sr, srh.data(), srh.size() * sizeof(long long),
                          cudaMemcpyHostToDevice));
    odd_bufs ob = {dl, sl, di, si, dd, sd, dr, sr};
    CUDA_CHECK(cudaDeviceSynchronize());
    nvshmem_barrier_all();
    for (int scope = 0; scope < 3; scope++)
        for (int k = 0; k < 3; k++) {
            int len = odd[k];
            void *oargs[] = {&ob, &len, &scope};
            rc = nvshmemx_collective_launch((const void *)odd_reduce, 2, 1024, oargs, 0, s);
            CHECK(rc == NVSHMEMX_SUCCESS, "collective launch of odd_reduce: %d", rc);
            CUDA_CHECK(cudaStreamSynchronize(s));
            CUDA_CHECK(cudaMemcpy(dlh.data(), dl, len * sizeof(long), cudaMemcpyDeviceToHost));
            CUDA_CHECK(cudaMemcpy(dih.data(), di, len * sizeof(int), cudaMemcpyDeviceToHost));
            CUDA_CHECK(cudaMemcpy(ddh.data(), dd, len * sizeof(double), cudaMemcpyDeviceToHost));
            CUDA_CHECK(cudaMemcpy(drh.data(), dr, len * sizeof(long long),
                                  cudaMemcpyDeviceToHost));
            for (int i = 0; i < len; i++) {
                long want = 0;
                int rs = 0;
                double dwant = 0;
                long long lrs = 0;
                for (int pe = 0; pe < npes; pe++) {
                    want += (long)pe * 100003 + i;
                    rs += pe * 7 + me * len + i;
                    dwant = pe == 0 ? odd_double(0, i) : dwant + odd_double(pe, i);
                    lrs += (long long)pe * 1000000007LL + me * len + i;
                }
                CHECK(ddh[i] == dwant, "double sum_reduce (scope %d, %d elements) [%d] = %.17g, "
                      "want %.17g (the PEs' order)", scope, len, i, ddh[i], dwant);
                CHECK(drh[i] == lrs, "longlong sum_reducescatter (scope %d, %d elements) [%d] = "
                      "%lld, want %lld", scope, len, i, drh[i], lrs);
                CHECK(dlh[i] == want, "long sum_reduce (scope %d, %d elements) [%d] = %ld, want %ld",
                      scope, len, i, dlh[i], want);
                CHECK(dih[i] == rs, "int sum_reducescatter (scope %d, %d elements) [%d] = %d, "
                      "want %d", scope, len, i, dih[i], rs);
            }
            nvshmem_barrier_all(); /* dl and di are written again next */
        }

    /* A barrier in a grid that fits, then one that cannot be resident:
     * refused before it launches, never a hang. */
    int br = 10;
    void *bargs[] = {&br};
    rc = nvshmemx_collective_launch((const void *)barrier_loop, 8, 1000, bargs, 0, s);
    CHECK(rc == NVSHMEMX_SUCCESS, "collective launch of 8 x 1000: %d", rc);
    CUDA_CHECK(cudaStreamSynchronize(s));
    int fit = 0;
    CHECK(nvshmemx_collective_launch_query_gridsize((const void *)barrier_loop, 1024, bargs, 0,
                                                    &fit) == 0 &&
              fit > 0,
          "query_gridsize: %d", fit);
    rc = nvshmemx_collective_launch((const void *)barrier_loop, fit + 1, 1024, bargs, 0, s);
    CHECK(rc == NVSHMEMX_ERROR_COLLECTIVE_LAUNCH_FAILED, "a grid of %d blocks (%d fit) gave %d",
          fit + 1, fit, rc);

    /* Blocks larger than the kernel's registers allow: refused in a
     * sentence naming the registers and the most threads a block may
     * have; launched with that many, it runs. */
    cudaFuncAttributes fa;
    CUDA_CHECK(cudaFuncGetAttributes(&fa, (const void *)heavy_registers));
    CHECK(fa.numRegs > 64 && fa.maxThreadsPerBlock < 1024,
          "heavy_registers has %d registers a thread, %d threads a block: the test's premise",
          fa.numRegs, fa.maxThreadsPerBlock);
    unsigned long long *hv;
    CUDA_CHECK(cudaMalloc(&hv, HEAVY_WORDS * sizeof(*hv)));
    std::vector<unsigned long long> hw(HEAVY_WORDS);
    for (int k = 0; k < HEAVY_WORDS; k++)
        hw[k] = (unsigned long long)me * 1000 + k;
    CUDA_CHECK(cudaMemcpy(hv, hw.data(), HEAVY_WORDS * sizeof(*hv), cudaMemcpyHostToDevice));
    int hr = 5;
    void *hargs[] = {&hv, &hr};
    struct heavy_launch big = {1024, hargs, s}, fits = {(unsigned)fa.maxThreadsPerBlock, hargs, s};
    std::string said = stderr_of(launch_heavy, &big, &rc);
    CHECK(rc == NVSHMEMX_ERROR_COLLECTIVE_LAUNCH_FAILED, "1024 threads of a kernel of %d "
          "registers gave %d", fa.numRegs, rc);
    char want[128];
    snprintf(want, sizeof(want), "uses %d registers a thread, so its blocks hold at most %d "
             "threads, not 1024", fa.numRegs, fa.maxThreadsPerBlock);
    CHECK(said.find(want) != std::string::npos && said.find("collective_launch") != std::string::npos,
          "the refusal says \"%s\", not \"...%s...\"", said.c_str(), want);
    said = stderr_of(launch_heavy, &fits, &rc);
    CHECK(rc == NVSHMEMX_SUCCESS, "%u threads of heavy_registers gave %d: %s", fits.threads, rc,
          said.c_str());
    CUDA_CHECK(cudaStreamSynchronize(s));
    for (int r = 0; r < hr; r++) {
        std::vector<unsigned long long> a = hw;
        for (int k = 0; k < HEAVY_WORDS; k++)
            hw[k] = a[k] * 3 + (k + 1 < HEAVY_WORDS ? a[k + 1] : hw[0]);
    }
    std::vector<unsigned long long> got(HEAVY_WORDS);
    CUDA_CHECK(cudaMemcpy(got.data(), hv, HEAVY_WORDS * sizeof(*hv), cudaMemcpyDeviceToHost));
    for (int k = 0; k < HEAVY_WORDS; k++)
        CHECK(got[k] == hw[k], "heavy_registers [%d] = %llu, want %llu", k, got[k], hw[k]);
    CUDA_CHECK(cudaFree(hv));

    /* On a stream: a put, a barrier and a min reduction, no host wait. */
    nvshmemx_double_put_on_stream(dst, src, total, right, s);
    nvshmemx_barrier_all_on_stream(s);
    nvshmemx_int_min_reduce_on_stream(NVSHMEM_TEAM_WORLD, ib, ia, n, s);
    nvshmemx_barrier_all_on_stream(s);
    CUDA_CHECK(cudaStreamSynchronize(s));
    CUDA_CHECK(cudaMemcpy(host.data(), dst, total * sizeof(double), cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < total; i++)
        CHECK(host[i] == left * 1e7 + (double)i, "put on stream: dst[%zu] = %g", i, host[i]);
    /* ia's first n elements hold the in-place reduce-scatter's result,
     * S + npes * (me * n + i) on PE me (S the sum of pe * 1000): PE 0's is
     * the least. */
    CUDA_CHECK(cudaMemcpy(ibh.data(), ib, n * sizeof(int), cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; i++) {
        int want = 1000 * npes * (npes - 1) / 2 + npes * i;
        CHECK(ibh[i] == want, "min_reduce_on_stream [%d] = %d, want %d", i, ibh[i], want);
    }

    nvshmem_barrier_all();
    if (me == 0)
        printf("nv_device: %d PEs passed\n", npes);
    CUDA_CHECK(cudaStreamDestroy(s));
    nvshmem_finalize();
    return 0;
}
