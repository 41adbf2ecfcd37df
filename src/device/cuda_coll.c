/* The cuda backend's stream collective as one kernel (stream_coll): an
 * alltoall, broadcast or fcollect of the stream-ordered calls as one kernel
 * on the program's stream, where it was two barrier rounds and a copy per
 * member queued one after the other. NVSHMEM runs its stream collectives as
 * one kernel; ushmem's pieces added up to 1.3 times its time at small
 * sizes (docs/performance/nvshmem-perftests.md), and in a CUDA graph each
 * piece was a node of its own. The largest copies stay with the copy
 * engines (the caller's choice).
 *
 * The kernel (PTX, JIT-compiled by the driver when the device opens, with
 * the backend's others: cuda_amo.c says why) runs as 1 to COLL_MAX_BLOCKS
 * blocks:
 *   1. threads t < n of block 0 write this PE's count to member t's flag
 *      (release, at system scope), and threads t < n of every block wait
 *      (acquire) for member t's count in their own flag, as a stream
 *      barrier's round (cuda_amo.c's ushmemi_exchange);
 *   2. each block meets, then the grid copies each of the ncopy segments,
 *      16 bytes a thread where both ends are 16-byte aligned (four loads in
 *      flight before their stores), the rest byte by byte;
 *   3. each block meets again; its first thread fences at system scope
 *      (its block's stores, put before it by the meeting: the cumulativity
 *      the device API's block barrier uses) and counts the block done in
 *      the call's slot; the last block to count resets the slot and its
 *      threads t < n send and wait for the second round. With one block
 *      there is nothing to count.
 * The counts of the rounds are the host's (values and expect) or, for a
 * graph's replays, words of device memory that the kernel reads and, at
 * its end, advances by two (as ushmemi_exchange_counted in cuda_graph.c
 * advances its own by one).
 *
 * A small stream reduction (`reduce`) is the same kernel with the
 * reduction's loop from cuda_sum.c in place of step 2: one such kernel per
 * element kind in the reduction module, run as one block. */
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "../common/log.h"
#include "cuda_private.h"

/* Threads of a block, and the most blocks: a block copies about 45 GB/s
 * on an H200 (sixteen bytes a thread, four loads in flight), so larger
 * calls take more blocks, one per COLL_BLOCK_BYTES to copy. */
#define COLL_THREADS 1024
#define COLL_MAX_BLOCKS 32
#define COLL_BLOCK_BYTES ((size_t)64 << 10)
/* Completion counts of the calls in flight, one per call (a call's blocks
 * count themselves in its slot, the last resets it), taken in turn: a slot
 * is used again COLL_SLOTS calls later, long after its call ended. */
#define COLL_SLOTS USHMEMI_CUDA_COLL_SLOTS
#define COLL_SLOTS_STR "1024"
_Static_assert(COLL_SLOTS == 1024, "COLL_SLOTS_STR is COLL_SLOTS");

/* The kernel in three parts: COLL_HEAD (after the entry line and its
 * brace: the registers and the first round, the block met), the copies
 * (COLL_COPY), COLL_TAIL (the block met again, the count of blocks in
 * NAME_counts, the second round, the closing brace). The stream
 * reductions' one-kernel form (cuda_sum.c) takes the head and the tail
 * around its own loop, from ushmemi_cuda_coll_frame. */
#define COLL_ENTRY(NAME, BYTES)                                                        \
    ".global .align 4 .u32 " NAME "_counts[" COLL_SLOTS_STR "];\n"                     \
    ".visible .entry " NAME "(.param .align 8 .b8 p_x[" BYTES "])\n"                   \
    "{\n"
#define COLL_HEAD(FIRST)                                                               \
    "    .reg .pred %p<10>;\n"                                                         \
    "    .reg .b32 %r<30>;\n"                                                          \
    "    .reg .b64 %rd<32>;\n"                                                         \
    "    .shared .align 4 .u32 s_last;\n"                                              \
    FIRST                                                                              \
    "    mov.u32 %r1, %tid.x;\n"                                                       \
    "    mov.u32 %r2, %ntid.x;\n"                                                      \
    "    mov.u32 %r26, %ctaid.x;\n"                                                    \
    "    mov.u32 %r27, %nctaid.x;\n"                                                   \
    "    ld.param.u32 %r3, [p_x];\n"                                                   \
    "    ld.param.u32 %r4, [p_x+4];\n"                                                 \
    "    ld.param.u32 %r5, [p_x+8];\n"                                                 \
    "    ld.param.u32 %r28, [p_x+12];\n"                                               \
    "    ld.param.u64 %rd1, [p_x+16];\n"                                               \
    "    mov.u64 %rd2, p_x;\n"                                                         \
    "    mul.wide.u32 %rd3, %r1, 8;\n"                                                 \
    "    add.u64 %rd4, %rd2, %rd3;\n"                                                  \
    "    setp.ge.u32 %p1, %r1, %r3;\n"                                                 \
    "    setp.ne.u32 %p2, %r4, 0;\n"                                                   \
    "    @%p1 bra K_ARRIVED;\n"                                                        \
    "    ld.param.u64 %rd5, [%rd4+32];\n"                                              \
    "    ld.param.u64 %rd6, [%rd4+160];\n"                                             \
    "    ld.param.u64 %rd7, [%rd4+288];\n"                                             \
    "    ld.param.u64 %rd8, [%rd4+416];\n"                                             \
    "    mov.u64 %rd10, %rd6;\n"                                                       \
    "    mov.u64 %rd11, %rd8;\n"                                                       \
    "    @!%p2 bra K_NUMBERS;\n"                                                       \
    "    ld.global.u64 %rd10, [%rd6];\n"                                               \
    "    ld.global.u64 %rd11, [%rd8];\n"                                               \
    "K_NUMBERS:\n"                                                                     \
    "    add.u64 %rd12, %rd10, 1;\n"                                                   \
    "    add.u64 %rd13, %rd11, 1;\n"                                                   \
    "    setp.ne.u32 %p3, %r26, 0;\n"                                                  \
    "    @%p3 bra K_SPIN1;\n"                                                          \
    "    st.release.sys.global.u64 [%rd5], %rd12;\n"                                   \
    "K_SPIN1:\n"                                                                       \
    "    ld.acquire.sys.global.u64 %rd14, [%rd7];\n"                                   \
    "    setp.lt.u64 %p4, %rd14, %rd13;\n"                                             \
    "    @%p4 bra K_SPIN1;\n"                                                          \
    "K_ARRIVED:\n"                                                                     \
    "    bar.sync 0;\n"
#define COLL_COPY                                                                      \
    "    mad.lo.u32 %r6, %r26, %r2, %r1;\n"                                            \
    "    mul.lo.u32 %r7, %r27, %r2;\n"                                                 \
    "    mov.u32 %r8, 0;\n"                                                            \
    "K_SEGMENT:\n"                                                                     \
    "    setp.ge.u32 %p5, %r8, %r5;\n"                                                 \
    "    @%p5 bra K_COPIED;\n"                                                         \
    "    mul.wide.u32 %rd15, %r8, 8;\n"                                                \
    "    add.u64 %rd16, %rd2, %rd15;\n"                                                \
    "    ld.param.u64 %rd17, [%rd16+544];\n"                                           \
    "    ld.param.u64 %rd18, [%rd16+680];\n"                                           \
    "    or.b64 %rd19, %rd17, %rd18;\n"                                                \
    "    and.b64 %rd19, %rd19, 15;\n"                                                  \
    "    setp.ne.u64 %p6, %rd19, 0;\n"                                                 \
    "    and.b64 %rd20, %rd1, -16;\n"                                                  \
    "    @%p6 mov.u64 %rd20, 0;\n"                                                     \
    "    mul.wide.u32 %rd21, %r6, 16;\n"                                               \
    "    mul.wide.u32 %rd22, %r7, 16;\n"                                               \
    "    mul.lo.u64 %rd23, %rd22, 3;\n"                                                \
    "K_FOUR:\n"                                                                        \
    "    add.u64 %rd24, %rd21, %rd23;\n"                                               \
    "    setp.ge.u64 %p7, %rd24, %rd20;\n"                                             \
    "    @%p7 bra K_VECTOR;\n"                                                         \
    "    add.u64 %rd24, %rd18, %rd21;\n"                                               \
    "    add.u64 %rd25, %rd24, %rd22;\n"                                               \
    "    add.u64 %rd26, %rd25, %rd22;\n"                                               \
    "    add.u64 %rd27, %rd26, %rd22;\n"                                               \
    "    ld.global.v4.u32 {%r10, %r11, %r12, %r13}, [%rd24];\n"                        \
    "    ld.global.v4.u32 {%r14, %r15, %r16, %r17}, [%rd25];\n"                        \
    "    ld.global.v4.u32 {%r18, %r19, %r20, %r21}, [%rd26];\n"                        \
    "    ld.global.v4.u32 {%r22, %r23, %r24, %r25}, [%rd27];\n"                        \
    "    add.u64 %rd24, %rd17, %rd21;\n"                                               \
    "    add.u64 %rd25, %rd24, %rd22;\n"                                               \
    "    add.u64 %rd26, %rd25, %rd22;\n"                                               \
    "    add.u64 %rd27, %rd26, %rd22;\n"                                               \
    "    st.global.v4.u32 [%rd24], {%r10, %r11, %r12, %r13};\n"                        \
    "    st.global.v4.u32 [%rd25], {%r14, %r15, %r16, %r17};\n"                        \
    "    st.global.v4.u32 [%rd26], {%r18, %r19, %r20, %r21};\n"                        \
    "    st.global.v4.u32 [%rd27], {%r22, %r23, %r24, %r25};\n"                        \
    "    add.u64 %rd21, %rd21, %rd22;\n"                                               \
    "    add.u64 %rd21, %rd21, %rd23;\n"                                               \
    "    bra K_FOUR;\n"                                                                \
    "K_VECTOR:\n"                                                                      \
    "    setp.ge.u64 %p7, %rd21, %rd20;\n"                                             \
    "    @%p7 bra K_TAIL;\n"                                                           \
    "    add.u64 %rd24, %rd18, %rd21;\n"                                               \
    "    ld.global.v4.u32 {%r10, %r11, %r12, %r13}, [%rd24];\n"                        \
    "    add.u64 %rd25, %rd17, %rd21;\n"                                               \
    "    st.global.v4.u32 [%rd25], {%r10, %r11, %r12, %r13};\n"                        \
    "    add.u64 %rd21, %rd21, %rd22;\n"                                               \
    "    bra K_VECTOR;\n"                                                              \
    "K_TAIL:\n"                                                                        \
    "    cvt.u64.u32 %rd28, %r6;\n"                                                    \
    "    add.u64 %rd21, %rd20, %rd28;\n"                                               \
    "    cvt.u64.u32 %rd29, %r7;\n"                                                    \
    "K_BYTE:\n"                                                                        \
    "    setp.ge.u64 %p7, %rd21, %rd1;\n"                                              \
    "    @%p7 bra K_NEXT;\n"                                                           \
    "    add.u64 %rd24, %rd18, %rd21;\n"                                               \
    "    ld.global.u8 %r10, [%rd24];\n"                                                \
    "    add.u64 %rd25, %rd17, %rd21;\n"                                               \
    "    st.global.u8 [%rd25], %r10;\n"                                                \
    "    add.u64 %rd21, %rd21, %rd29;\n"                                               \
    "    bra K_BYTE;\n"                                                                \
    "K_NEXT:\n"                                                                        \
    "    add.u32 %r8, %r8, 1;\n"                                                       \
    "    bra K_SEGMENT;\n"
#define COLL_TAIL(NAME)                                                                \
    "K_COPIED:\n"                                                                      \
    "    bar.sync 0;\n"                                                                \
    "    setp.eq.u32 %p8, %r27, 1;\n"                                                  \
    "    @%p8 bra K_LAST;\n"                                                           \
    "    setp.ne.u32 %p9, %r1, 0;\n"                                                   \
    "    @%p9 bra K_COUNTED;\n"                                                        \
    "    mov.u64 %rd30, " NAME "_counts;\n"                                            \
    "    mul.wide.u32 %rd31, %r28, 4;\n"                                               \
    "    add.u64 %rd30, %rd30, %rd31;\n"                                               \
    "    membar.sys;\n"                                                                \
    "    atom.acq_rel.gpu.global.add.u32 %r9, [%rd30], 1;\n"                           \
    "    add.u32 %r9, %r9, 1;\n"                                                       \
    "    setp.eq.u32 %p8, %r9, %r27;\n"                                                \
    "    selp.u32 %r9, 1, 0, %p8;\n"                                                   \
    "    st.shared.u32 [s_last], %r9;\n"                                               \
    "    @!%p8 bra K_COUNTED;\n"                                                       \
    "    st.relaxed.gpu.global.u32 [%rd30], 0;\n"                                      \
    "K_COUNTED:\n"                                                                     \
    "    bar.sync 0;\n"                                                                \
    "    ld.shared.u32 %r9, [s_last];\n"                                               \
    "    setp.eq.u32 %p8, %r9, 0;\n"                                                   \
    "    @%p8 bra K_DONE;\n"                                                           \
    "K_LAST:\n"                                                                        \
    "    @%p1 bra K_DONE;\n"                                                           \
    "    add.u64 %rd12, %rd10, 2;\n"                                                   \
    "    add.u64 %rd13, %rd11, 2;\n"                                                   \
    "    @!%p2 bra K_SEND2;\n"                                                         \
    "    st.global.u64 [%rd6], %rd12;\n"                                               \
    "    st.global.u64 [%rd8], %rd13;\n"                                               \
    "K_SEND2:\n"                                                                       \
    "    st.release.sys.global.u64 [%rd5], %rd12;\n"                                   \
    "K_SPIN2:\n"                                                                       \
    "    ld.acquire.sys.global.u64 %rd14, [%rd7];\n"                                   \
    "    setp.lt.u64 %p4, %rd14, %rd13;\n"                                             \
    "    @%p4 bra K_SPIN2;\n"                                                          \
    "K_DONE:\n"                                                                        \
    "    ret;\n"                                                                       \
    "}\n"

#define COLL_PTX(NAME, FIRST) \
    COLL_ENTRY(NAME, "816") COLL_HEAD(FIRST) COLL_COPY COLL_TAIL(NAME)

static const char coll_ptx[] =
    ".version 7.0\n"
    ".target sm_70\n"
    ".address_size 64\n" COLL_PTX("ushmemi_coll_small", "");

/* For programmatic dependent launch (PTX 7.8, sm_90), as cuda_amo.c's
 * barrier round: the next kernel so launched may start while this one
 * waits for its peers, and this one first waits until the work before it
 * has completed and is visible. */
static const char coll_pdl_ptx[] =
    ".version 7.8\n"
    ".target sm_90\n"
    ".address_size 64\n" COLL_PTX("ushmemi_coll_small_pdl",
                                  "    griddepcontrol.launch_dependents;\n"
                                  "    griddepcontrol.wait;\n");
#undef COLL_PTX

static const char coll_reduce_head[] = COLL_HEAD("");
static const char coll_reduce_tail[] = COLL_TAIL(USHMEMI_CUDA_REDUCE_COLL);

const char *ushmemi_cuda_coll_frame(bool tail)
{
    return tail ? coll_reduce_tail : coll_reduce_head;
}

/* The kernel's parameter, at the offsets its PTX reads. values and expect
 * hold the numbers before the call's (its rounds send and expect one and
 * two more), or with `counted` the addresses of the device words that hold
 * them, which the kernel advances by two at its end. */
struct coll_param {
    uint32_t n, counted, ncopy, slot;
    uint64_t len, reserved;
    uint64_t addrs[USHMEMI_STREAM_BATCH], values[USHMEMI_STREAM_BATCH];
    uint64_t waits[USHMEMI_STREAM_BATCH], expect[USHMEMI_STREAM_BATCH];
    uint64_t dst[USHMEMI_STREAM_BATCH + 1], src[USHMEMI_STREAM_BATCH + 1];
};
_Static_assert(USHMEMI_STREAM_BATCH == 16 && sizeof(struct coll_param) == 816 &&
                   offsetof(struct coll_param, slot) == 12 &&
                   offsetof(struct coll_param, len) == 16 &&
                   offsetof(struct coll_param, addrs) == 32 &&
                   offsetof(struct coll_param, values) == 160 &&
                   offsetof(struct coll_param, waits) == 288 &&
                   offsetof(struct coll_param, expect) == 416 &&
                   offsetof(struct coll_param, dst) == 544 &&
                   offsetof(struct coll_param, src) == 680,
               "ushmemi_coll_small's PTX reads its parameter at these offsets");
_Static_assert(offsetof(struct coll_param, ncopy) == USHMEMI_CUDA_COLL_AT_NSRC &&
                   offsetof(struct coll_param, len) == USHMEMI_CUDA_COLL_AT_COUNT &&
                   offsetof(struct coll_param, reserved) == USHMEMI_CUDA_COLL_AT_OP &&
                   offsetof(struct coll_param, dst) == USHMEMI_CUDA_COLL_AT_DST &&
                   offsetof(struct coll_param, src) == USHMEMI_CUDA_COLL_AT_SRC &&
                   sizeof(struct coll_param) == USHMEMI_CUDA_COLL_PARAM_BYTES,
               "the reductions' loop (cuda_sum.c) reads its arguments at these offsets");

const char *ushmemi_cuda_coll_ptx(bool pdl)
{
    return pdl ? coll_pdl_ptx : coll_ptx;
}

static ushmem_status_t load_one(CUmodule *module, CUfunction *fn, const char *ptx,
                                const char *name)
{
    CUresult r = ushmemi_cu.cuModuleLoadData(module, ptx);
    if (r == CUDA_SUCCESS) {
        r = ushmemi_cu.cuModuleGetFunction(fn, *module, name);
        if (r != CUDA_SUCCESS)
            ushmemi_cu.cuModuleUnload(*module);
    }
    if (r != CUDA_SUCCESS) {
        *module = NULL;
        *fn = NULL;
        return ushmemi_cuda_fail("cuModuleLoadData/cuModuleGetFunction", r, "%s", name);
    }
    return USHMEM_OK;
}

ushmem_status_t ushmemi_cuda_coll_load(struct ushmemi_device *dev)
{
    ushmem_status_t status =
        load_one(&dev->coll_module, &dev->coll_fn, coll_ptx, "ushmemi_coll_small");
    if (status != USHMEM_OK)
        return status;
    /* The programmatic form where the barrier round has one (pdl_load
     * decided, before this runs): the same GPU and driver take this one. */
    dev->coll_pdl_fn = NULL;
    if (dev->exchange_pdl_fn != NULL &&
        load_one(&dev->coll_pdl_module, &dev->coll_pdl_fn, coll_pdl_ptx,
                 "ushmemi_coll_small_pdl") != USHMEM_OK)
        ushmemi_debug("cuda backend: no programmatic launch of the small stream collective on "
                      "device %d: plain launches", dev->ordinal);
    return USHMEM_OK;
}

void ushmemi_cuda_coll_close(struct ushmemi_device *dev)
{
    if (dev->coll_pdl_module != NULL)
        ushmemi_cu.cuModuleUnload(dev->coll_pdl_module);
    if (dev->coll_module != NULL)
        ushmemi_cu.cuModuleUnload(dev->coll_module);
    dev->coll_pdl_module = dev->coll_module = NULL;
    dev->coll_pdl_fn = dev->coll_fn = NULL;
}

ushmem_status_t ushmemi_cuda_stream_coll(struct ushmemi_device *dev, void *stream,
                                         const struct ushmemi_stream_coll *c)
{
    if (c->n < 1 || c->n > USHMEMI_STREAM_BATCH || c->ncopy < 0 ||
        c->ncopy > USHMEMI_STREAM_BATCH + 1) {
        ushmemi_error("cuda backend: a small stream collective with %d peers and %d copies "
                      "refused (1 to %d peers, at most %d copies)", c->n, c->ncopy,
                      USHMEMI_STREAM_BATCH, USHMEMI_STREAM_BATCH + 1);
        return USHMEM_ERR_INVALID_PARAM;
    }
    CUfunction fn = dev->coll_fn, pdl_fn = dev->coll_pdl_fn;
    unsigned code = 0, threads = COLL_THREADS;
    size_t len = c->len, want = ((size_t)c->ncopy * c->len + COLL_BLOCK_BYTES - 1) /
                               COLL_BLOCK_BYTES;
    if (c->reduce) {
        if (c->ncopy < 1 || c->ncopy > USHMEMI_STREAM_REDUCE_SOURCES) {
            ushmemi_error("cuda backend: a stream reduction of %d sources as one kernel refused "
                          "(1 to %d)", c->ncopy, USHMEMI_STREAM_REDUCE_SOURCES);
            return USHMEM_ERR_INVALID_PARAM;
        }
        /* One block, whose loop strides over what its threads do not
         * hold: with more blocks, each one's count at the end (a system
         * fence and an atomic) cost more than their loads saved (two
         * H200s, in a CUDA graph: 6.5 us at 8 KiB of int against 4.8 at
         * 4 KiB, one block; the caller keeps to small arrays). */
        fn = ushmemi_cuda_reduce_coll_fn(dev, c->op, c->kind, c->len, &code, &len, &threads);
        if (fn == NULL) {
            ushmemi_error("cuda backend: no stream reduction %s of %s elements as one kernel",
                          ushmemi_reduce_op_name(c->op), ushmemi_reduce_kind_name(c->kind));
            return USHMEM_ERR_INVALID_PARAM;
        }
        pdl_fn = NULL;
        want = 1;
    }
    if (fn == NULL)
        return USHMEM_ERR_UNSUPPORTED;
    ushmem_status_t status = ushmemi_cuda_current(dev, "small stream collective");
    if (status != USHMEM_OK)
        return status;
    struct coll_param x;
    memset(&x, 0, sizeof(x));
    x.n = (uint32_t)c->n;
    x.counted = c->counted;
    x.ncopy = (uint32_t)c->ncopy;
    x.len = len;
    x.reserved = code; /* the reduction's op (loop_ptx in cuda_sum.c) */
    x.slot = atomic_fetch_add(&dev->coll_next_slot, 1) % COLL_SLOTS;
    unsigned blocks = want < 1 ? 1 : want > COLL_MAX_BLOCKS ? COLL_MAX_BLOCKS : (unsigned)want;
    for (int i = 0; i < c->n; i++) {
        x.addrs[i] = (uint64_t)(uintptr_t)c->addrs[i];
        x.waits[i] = (uint64_t)(uintptr_t)c->waits[i];
        x.values[i] = c->counted ? (uint64_t)(uintptr_t)c->counts[i] : c->values[i];
        x.expect[i] = c->counted ? (uint64_t)(uintptr_t)c->expect_counts[i] : c->expect[i];
    }
    for (int i = 0; i < c->ncopy; i++) {
        x.dst[i] = (uint64_t)(uintptr_t)c->dst[c->reduce ? 0 : i];
        x.src[i] = (uint64_t)(uintptr_t)c->src[i];
    }
    /* The reduction's sources past ncopy are never loaded (predicated). */
    for (int i = c->ncopy; c->reduce && i < USHMEMI_STREAM_REDUCE_SOURCES; i++)
        x.src[i] = x.src[0];
    void *params[] = {&x};
    CUresult r;
    /* Never into a graph (a driver before CUDA 12.3 cannot capture the
     * programmatic dependency); the caller counts on the device there. */
    if (pdl_fn != NULL && !c->counted) {
        r = ushmemi_cuda_launch_programmatic(pdl_fn, blocks, threads, stream, params);
    } else {
        r = ushmemi_cu.cuLaunchKernel(fn, blocks, 1, 1, threads, 1, 1, 0, (CUstream)stream,
                                      params, NULL);
    }
    if (r != CUDA_SUCCESS && c->reduce)
        return ushmemi_cuda_fail("cuLaunchKernel", r, "stream reduction %s of %d arrays of %zu "
                                 "%s as one kernel on stream %p, %d peers, %u threads",
                                 ushmemi_reduce_op_name(c->op), c->ncopy, c->len,
                                 ushmemi_reduce_kind_name(c->kind), stream, c->n, threads);
    if (r != CUDA_SUCCESS)
        return ushmemi_cuda_fail("cuLaunchKernel", r, "small stream collective on stream %p, "
                                 "%d peers, %d copies of %zu bytes, %u blocks", stream, c->n,
                                 c->ncopy, c->len, blocks);
    return USHMEM_OK;
}
