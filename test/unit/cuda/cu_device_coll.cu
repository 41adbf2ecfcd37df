/* The device API's collectives (include/ushmem/device.h) in CUDA kernels,
 * one block per PE, over all PEs: ushmem_barrier_all and ushmem_sync_all by
 * one thread, and the block collectives ushmemx_alltoallmem_block,
 * ushmemx_broadcastmem_block (every root; dest on every PE, the root
 * included, gets the root's source) and ushmemx_fcollectmem_block, with 1,
 * 7, 4096 and 1 MiB + 3 bytes per PE.
 *
 * Every call has its own source and destination regions, packed one after
 * the other (so most start misaligned), each destination followed by guard
 * bytes, and its own byte stream, so that data of one call can never pass
 * for another's. Right after a collective returns, the block checks in the
 * kernel that this PE's destination is complete (a collective must not
 * return early); after the kernel the host checks every byte again, guards
 * included.
 *
 * Phases:
 *   barrier   30 rounds, one thread per PE, alternating barrier_all and
 *             quiet + sync_all: nobody leaves before every PE's adds and puts
 *   single    each collective in a kernel of its own, host barriers between
 *   skew      every collective of every size and root back to back in one
 *             kernel, PEs delayed differently before each call, device
 *             barrier_all and sync_all by one thread between some of them;
 *             then again with a 32 x 3 block and the order reversed
 *
 * Usage: oshrun -n N cu_device_coll [-v]; exits 77 without a GPU. */
#include <shmem.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <vector>

#include <ushmem/device.h>

#include "cu_check.cuh"

#define MAX_PES 8
#define GUARD 16 /* bytes after each destination region */
#define NSIZES 4
static const size_t sizes[NSIZES] = {1, 7, 4096, ((size_t)1 << 20) + 3};

enum { K_A2A = 101, K_BCAST, K_FCOLLECT };

enum op_kind { OP_ALLTOALL, OP_BCAST, OP_FCOLLECT, OP_BARRIER, OP_SYNC };

/* One call, the same on every PE. */
struct coll_op {
    int kind;
    int root;         /* OP_BCAST */
    size_t nbytes;    /* per PE */
    size_t src_off;   /* into the source buffer */
    size_t dst_off;   /* into the destination buffer */
    uint64_t seq;     /* names the call's byte streams */
};

#define WHAT_LIST(X)                                                                      \
    X(W_A2A, "alltoallmem_block: block from PE a complete on return")                    \
    X(W_BCAST, "broadcastmem_block: dest complete on return (a: root)")                  \
    X(W_FCOLLECT, "fcollectmem_block: block from PE a complete on return")               \
    X(W_BAR_ARRIVALS, "arrivals after the device barrier")                                \
    X(W_BAR_SLOT, "left neighbour's put after the device barrier")
#define WHAT_ENUM(name, text) name,
#define WHAT_TEXT(name, text) text,
enum { WHAT_LIST(WHAT_ENUM) W_COUNT };
static const char *const what_names[] = {WHAT_LIST(WHAT_TEXT)};

static struct cu_log *dlog;
static int me, npes;

static void report(void)
{
    cu_log_report(dlog, what_names, W_COUNT);
}

/* ---- device barrier and sync ---- */

#define BAR_ROUNDS 30
#define BAR_KERNELS 3

struct bar_words {
    long arrivals;
    long slot;
};

/* Odd rounds end with barrier_all, even ones with quiet + sync_all (sync_all
 * orders but does not complete; the quiet completes). */
__global__ void k_barrier(struct bar_words *bw, long first, long last, int my_pe, int n_pes,
                          struct cu_log *log)
{
    int left = (my_pe + n_pes - 1) % n_pes, right = (my_pe + 1) % n_pes;

    for (long r = first; r <= last; r++) {
        for (int i = 0; i < n_pes; i++)
            ushmem_long_atomic_add(&bw->arrivals, 1L, (my_pe + i) % n_pes);
        ushmem_long_p(&bw->slot, r * 1000 + my_pe, right);
        if (r & 1) {
            ushmem_barrier_all();
        } else {
            ushmem_quiet();
            ushmem_sync_all();
        }
        long a = ushmem_long_atomic_fetch(&bw->arrivals, my_pe);
        if (a != r * n_pes)
            cu_dev_fail(log, W_BAR_ARRIVALS, my_pe, 0, r, r * n_pes, a);
        long s = ushmem_long_atomic_fetch(&bw->slot, my_pe);
        if (s != r * 1000 + left)
            cu_dev_fail(log, W_BAR_SLOT, my_pe, 0, r, r * 1000 + left, s);
        /* Nobody adds for the next round before everyone has checked. */
        if (r & 1)
            ushmem_sync_all();
        else
            ushmem_barrier_all();
    }
}

static void phase_barrier(void)
{
    struct bar_words h;
    long per = BAR_ROUNDS / BAR_KERNELS;

    cu_phase_begin("barrier");
    struct bar_words *bw = (struct bar_words *)cu_shmalloc(sizeof(struct bar_words));
    cu_memset(bw, 0, sizeof(*bw));
    shmem_barrier_all();
    for (int k = 0; k < BAR_KERNELS; k++) {
        k_barrier<<<1, 1, 0, cu.stream>>>(bw, k * per + 1, (k + 1) * per, me, npes, dlog);
        cu_wait("k_barrier");
        shmem_barrier_all();
    }
    report();
    cu_d2h(&h, bw, sizeof(h));
    cu_expect<long>("arrivals after the last round", 0, (long)BAR_ROUNDS * npes, h.arrivals);
    cu_expect<long>("left neighbour's put after the last round", 0,
                    (long)BAR_ROUNDS * 1000 + (me + npes - 1) % npes, h.slot);
    shmem_barrier_all();
    shmem_free(bw);
    cu_phase_end();
}

/* ---- collectives ---- */

/* The stream that block `from` of call `op` carries to PE `to`. */
__host__ __device__ static inline uint64_t op_tag(const struct coll_op *op, int from, int to)
{
    switch (op->kind) {
    case OP_ALLTOALL: return cu_tag(K_A2A, (uint64_t)from, (uint64_t)to, op->seq);
    case OP_BCAST: return cu_tag(K_BCAST, (uint64_t)from, 0, op->seq);
    default: return cu_tag(K_FCOLLECT, (uint64_t)from, 0, op->seq);
    }
}

__host__ __device__ static inline size_t src_bytes(const struct coll_op *op, int n_pes)
{
    return op->kind == OP_ALLTOALL ? (size_t)n_pes * op->nbytes
           : op->kind == OP_BCAST || op->kind == OP_FCOLLECT ? op->nbytes
                                                             : 0;
}

__host__ __device__ static inline size_t dst_bytes(const struct coll_op *op, int n_pes)
{
    return op->kind == OP_BCAST ? op->nbytes
           : op->kind == OP_ALLTOALL || op->kind == OP_FCOLLECT ? (size_t)n_pes * op->nbytes
                                                                : 0;
}

/* Thread 0 of the block waits a while that depends on the PE and the call,
 * so that PEs enter calls at different times. */
__device__ static void skew_delay(int i, int my_pe, unsigned rank)
{
    if (rank == 0) {
        unsigned us = (unsigned)((i * 7 + my_pe * 3) % 5) * 20u;
        for (unsigned k = 0; k < us; k++)
            __nanosleep(1000);
    }
    __syncthreads();
}

/* Runs ops[first .. first + count) back to back; every thread of the one
 * block takes part in every call. */
__global__ void k_coll(const struct coll_op *ops, int first, int count, unsigned char *src,
                       unsigned char *dst, int my_pe, int n_pes, int skew, struct cu_log *log)
{
    unsigned rank = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    unsigned size = blockDim.x * blockDim.y * blockDim.z;

    for (int i = first; i < first + count; i++) {
        struct coll_op op = ops[i];
        unsigned char *d = dst + op.dst_off;
        const unsigned char *s = src + op.src_off;

        if (skew)
            skew_delay(i, my_pe, rank);
        switch (op.kind) {
        case OP_ALLTOALL:
            ushmemx_alltoallmem_block(d, s, op.nbytes);
            for (int p = 0; p < n_pes; p++)
                cu_dev_verify(log, W_A2A, p, i, d + (size_t)p * op.nbytes, op.nbytes,
                              op_tag(&op, p, my_pe), 0, rank, size);
            break;
        case OP_BCAST:
            ushmemx_broadcastmem_block(d, s, op.nbytes, op.root);
            cu_dev_verify(log, W_BCAST, op.root, i, d, op.nbytes, op_tag(&op, op.root, my_pe), 0,
                          rank, size);
            break;
        case OP_FCOLLECT:
            ushmemx_fcollectmem_block(d, s, op.nbytes);
            for (int p = 0; p < n_pes; p++)
                cu_dev_verify(log, W_FCOLLECT, p, i, d + (size_t)p * op.nbytes, op.nbytes,
                              op_tag(&op, p, my_pe), 0, rank, size);
            break;
        case OP_BARRIER:
        case OP_SYNC:
            __syncthreads();
            if (rank == 0) {
                if (op.kind == OP_BARRIER)
                    ushmem_barrier_all();
                else
                    ushmem_sync_all();
            }
            __syncthreads();
            break;
        }
        /* The checks above read this PE's dest only; the next call may
         * start while slower threads still read. */
        __syncthreads();
    }
}

/* Lays the calls out: every collective of every size, each root for
 * broadcast, with barriers and syncs between some when `with_syncs`. */
static std::vector<struct coll_op> make_ops(int reverse, int with_syncs, uint64_t seq0,
                                            size_t *src_total_p, size_t *dst_total_p)
{
    std::vector<struct coll_op> ops;
    size_t so = 0, dof = 0;
    uint64_t seq = seq0;

    for (int k = 0; k < NSIZES; k++) {
        size_t n = sizes[reverse ? NSIZES - 1 - k : k];
        std::vector<struct coll_op> some;
        some.push_back({OP_ALLTOALL, 0, n, 0, 0, 0});
        for (int root = 0; root < npes; root++)
            some.push_back({OP_BCAST, reverse ? npes - 1 - root : root, n, 0, 0, 0});
        some.push_back({OP_FCOLLECT, 0, n, 0, 0, 0});
        for (struct coll_op op : some) {
            op.seq = seq++;
            op.src_off = so;
            op.dst_off = dof;
            so += src_bytes(&op, npes);
            dof += dst_bytes(&op, npes) + GUARD;
            ops.push_back(op);
            if (with_syncs && ops.size() % 4 == 0)
                ops.push_back({OP_BARRIER, 0, 0, 0, 0, 0});
            else if (with_syncs && ops.size() % 5 == 0)
                ops.push_back({OP_SYNC, 0, 0, 0, 0, 0});
        }
    }
    *src_total_p = so;
    *dst_total_p = dof;
    return ops;
}

static const char *op_name(int kind)
{
    switch (kind) {
    case OP_ALLTOALL: return "ushmemx_alltoallmem_block";
    case OP_BCAST: return "ushmemx_broadcastmem_block";
    case OP_FCOLLECT: return "ushmemx_fcollectmem_block";
    case OP_BARRIER: return "ushmem_barrier_all";
    default: return "ushmem_sync_all";
    }
}

/* Runs the calls (one kernel each, or all in one) and checks every
 * destination byte and guard on the host. */
static void run_ops(const char *label, int reverse, int with_syncs, int one_kernel, dim3 block,
                    uint64_t seq0)
{
    size_t src_total, dst_total;
    std::vector<struct coll_op> ops = make_ops(reverse, with_syncs, seq0, &src_total, &dst_total);
    std::vector<unsigned char> h(src_total > dst_total ? src_total : dst_total);
    struct coll_op *dops = NULL;
    char what[192];

    unsigned char *src = (unsigned char *)cu_shmalloc(src_total);
    unsigned char *dst = (unsigned char *)cu_shmalloc(dst_total);
    CU_CHECK(cudaMalloc((void **)&dops, ops.size() * sizeof(struct coll_op)));
    cu_h2d(dops, ops.data(), ops.size() * sizeof(struct coll_op));
    for (const struct coll_op &op : ops) {
        if (op.kind == OP_ALLTOALL)
            for (int j = 0; j < npes; j++)
                cu_fill(&h[op.src_off + (size_t)j * op.nbytes], op.nbytes, op_tag(&op, me, j), 0);
        else if (op.kind == OP_BCAST || op.kind == OP_FCOLLECT)
            cu_fill(&h[op.src_off], op.nbytes, op_tag(&op, me, 0), 0);
    }
    cu_h2d(src, h.data(), src_total);
    cu_memset(dst, 0xEE, dst_total);
    shmem_barrier_all();

    if (one_kernel) {
        k_coll<<<1, block, 0, cu.stream>>>(dops, 0, (int)ops.size(), src, dst, me, npes, 1, dlog);
        cu_wait(label);
    } else {
        for (size_t i = 0; i < ops.size(); i++) {
            k_coll<<<1, block, 0, cu.stream>>>(dops, (int)i, 1, src, dst, me, npes, 0, dlog);
            cu_wait(op_name(ops[i].kind));
            shmem_barrier_all();
        }
    }
    report();

    cu_d2h(h.data(), dst, dst_total);
    for (size_t i = 0; i < ops.size(); i++) {
        const struct coll_op &op = ops[i];
        const unsigned char *d = &h[op.dst_off];
        if (op.kind == OP_BARRIER || op.kind == OP_SYNC)
            continue;
        if (op.kind == OP_BCAST) {
            snprintf(what, sizeof(what), "%s: call %zu, %s, root %d, %zu bytes", label, i,
                     op_name(op.kind), op.root, op.nbytes);
            cu_check_region(what, d, op.nbytes + GUARD, 0, op.nbytes, op_tag(&op, op.root, me), 0,
                            0xEE);
            continue;
        }
        for (int p = 0; p < npes; p++) {
            snprintf(what, sizeof(what), "%s: call %zu, %s, %zu bytes, block from PE %d", label,
                     i, op_name(op.kind), op.nbytes, p);
            cu_check_region(what, d + (size_t)p * op.nbytes, op.nbytes, 0, op.nbytes,
                            op_tag(&op, p, me), 0, 0xEE);
        }
        snprintf(what, sizeof(what), "%s: call %zu, %s, %zu bytes, guard after the last block",
                 label, i, op_name(op.kind), op.nbytes);
        cu_check_region(what, d + (size_t)npes * op.nbytes, GUARD, 0, 0, 0, 0, 0xEE);
    }
    /* Sources are read-only for the collectives. */
    std::vector<unsigned char> hs(src_total);
    cu_d2h(hs.data(), src, src_total);
    for (const struct coll_op &op : ops) {
        if (op.kind == OP_BARRIER || op.kind == OP_SYNC)
            continue;
        for (size_t j = 0; j < src_bytes(&op, npes); j++) {
            size_t blk = op.kind == OP_ALLTOALL ? j / op.nbytes : 0;
            unsigned char want = cu_byte(op_tag(&op, me, (int)blk), j - blk * op.nbytes);
            if (hs[op.src_off + j] != want) {
                snprintf(what, sizeof(what), "%s: %s source (must stay untouched), byte", label,
                         op_name(op.kind));
                cu_expect<int>(what, j, want, hs[op.src_off + j]);
            }
        }
    }
    shmem_barrier_all();
    CU_CHECK(cudaFree(dops));
    shmem_free(dst);
    shmem_free(src);
}

static void phase_single(void)
{
    cu_phase_begin("single");
    run_ops("single", 0, 0, 0, dim3(256), 1000);
    cu_phase_end();
}

static void phase_skew(void)
{
    cu_phase_begin("skew");
    run_ops("skew", 0, 1, 1, dim3(256), 2000);
    run_ops("skew, 32 x 3 block, reversed", 1, 1, 1, dim3(32, 3), 3000);
    cu_phase_end();
}

int main(int argc, char **argv)
{
    cu_parse_args(argc, argv);
    cu_skip_without_device();
    cu_init(MAX_PES);
    me = cu.me;
    npes = cu.npes;
    dlog = cu_log_alloc();

    phase_barrier();
    phase_single();
    phase_skew();

    CU_CHECK(cudaFree(dlog));
    cu_finish();
    return 0;
}
