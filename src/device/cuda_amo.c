/* The cuda backend's device atomic, for the proxy thread: a one-thread
 * kernel, written in PTX and JIT-compiled by the driver when the device is
 * opened (ushmemi_cuda_kernels_load), that
 * performs one atomic at system scope on device memory (this GPU's heap or a
 * peer's as mapped here) and leaves the old value in host-pinned memory. The
 * CPU never touches the word, and the kernel runs on the backend's stream,
 * after the copies queued before it. The same module holds the round of a
 * stream-ordered barrier (ushmemi_exchange), launched on the program's
 * stream. PTX keeps the library free of nvcc and of the CUDA runtime: the
 * driver compiles it for whatever GPU is there. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <ushmem/detail/ring.h>

#include "../common/log.h"
#include "cuda_private.h"

/* ushmemi_amo(addr, operand, compare, old, op, wide, then, then_value, pre,
 * pre_value, pre_len): op numbered as enum ushmem_ring_amo_op (checked
 * below), wide 1 for 8 bytes, 0 for 4; where then is not 0, then_value is
 * stored there (release, at system scope) after the old value: a word the
 * caller waits on (the proxy's completed counter's copy), written without a
 * call of its own. Where pre is not 0, first pre_len (1 to 8) bytes of
 * pre_value, low byte first, at pre (a put's data ahead of its signal's
 * add): one store where they are 1, 2, 4 or 8 bytes aligned to their size
 * (a reader of the word never sees it half written), else a byte at a
 * time; then a fence at system scope, so that whoever sees the atomic sees
 * them. */
static const char amo_ptx[] =
    ".version 7.0\n"
    ".target sm_70\n"
    ".address_size 64\n"
    ".visible .entry ushmemi_amo(.param .u64 p_addr, .param .u64 p_operand,\n"
    "    .param .u64 p_compare, .param .u64 p_old, .param .u32 p_op, .param .u32 p_wide,\n"
    "    .param .u64 p_then, .param .u64 p_then_value, .param .u64 p_pre,\n"
    "    .param .u64 p_pre_value, .param .u32 p_pre_len)\n"
    "{\n"
    "    .reg .pred %p;\n"
    "    .reg .b16 %rs1;\n"
    "    .reg .b32 %r<8>;\n"
    "    .reg .b64 %rd<10>;\n"
    "    ld.param.u64 %rd6, [p_pre];\n"
    "    setp.eq.u64 %p, %rd6, 0;\n"
    "    @%p bra PRE_DONE;\n"
    "    ld.param.u64 %rd7, [p_pre_value];\n"
    "    ld.param.u32 %r6, [p_pre_len];\n"
    "    cvt.u32.u64 %r7, %rd6;\n"
    "    setp.ne.u32 %p, %r6, 8;\n"
    "    @%p bra PRE_4;\n"
    "    and.b32 %r3, %r7, 7;\n"
    "    setp.ne.u32 %p, %r3, 0;\n"
    "    @%p bra PRE_BYTES;\n"
    "    st.global.u64 [%rd6], %rd7;\n"
    "    bra PRE_FENCE;\n"
    "PRE_4:\n"
    "    setp.ne.u32 %p, %r6, 4;\n"
    "    @%p bra PRE_2;\n"
    "    and.b32 %r3, %r7, 3;\n"
    "    setp.ne.u32 %p, %r3, 0;\n"
    "    @%p bra PRE_BYTES;\n"
    "    cvt.u32.u64 %r4, %rd7;\n"
    "    st.global.u32 [%rd6], %r4;\n"
    "    bra PRE_FENCE;\n"
    "PRE_2:\n"
    "    setp.ne.u32 %p, %r6, 2;\n"
    "    @%p bra PRE_BYTES;\n"
    "    and.b32 %r3, %r7, 1;\n"
    "    setp.ne.u32 %p, %r3, 0;\n"
    "    @%p bra PRE_BYTES;\n"
    "    cvt.u16.u64 %rs1, %rd7;\n"
    "    st.global.u16 [%rd6], %rs1;\n"
    "    bra PRE_FENCE;\n"
    "PRE_BYTES:\n"
    "    setp.eq.u32 %p, %r6, 0;\n"
    "    @%p bra PRE_FENCE;\n"
    "    cvt.u16.u64 %rs1, %rd7;\n"
    "    st.global.u8 [%rd6], %rs1;\n"
    "    add.u64 %rd6, %rd6, 1;\n"
    "    shr.u64 %rd7, %rd7, 8;\n"
    "    sub.u32 %r6, %r6, 1;\n"
    "    bra PRE_BYTES;\n"
    "PRE_FENCE:\n"
    "    membar.sys;\n"
    "PRE_DONE:\n"
    "    ld.param.u64 %rd1, [p_addr];\n"
    "    ld.param.u64 %rd2, [p_operand];\n"
    "    ld.param.u64 %rd3, [p_compare];\n"
    "    ld.param.u64 %rd4, [p_old];\n"
    "    ld.param.u32 %r1, [p_op];\n"
    "    ld.param.u32 %r2, [p_wide];\n"
    "    mov.u64 %rd5, 0;\n"
    "    setp.eq.u32 %p, %r2, 0;\n"
    "    @%p bra NARROW;\n"
    "    setp.eq.u32 %p, %r1, 0;\n"
    "    @%p bra W_FETCH;\n"
    "    setp.eq.u32 %p, %r1, 1;\n"
    "    @%p bra W_SET;\n"
    "    setp.eq.u32 %p, %r1, 2;\n"
    "    @%p bra W_SWAP;\n"
    "    setp.eq.u32 %p, %r1, 3;\n"
    "    @%p bra W_CSWAP;\n"
    "    setp.eq.u32 %p, %r1, 4;\n"
    "    @%p bra W_ADD;\n"
    "    setp.eq.u32 %p, %r1, 5;\n"
    "    @%p bra W_AND;\n"
    "    setp.eq.u32 %p, %r1, 6;\n"
    "    @%p bra W_OR;\n"
    "    atom.global.sys.xor.b64 %rd5, [%rd1], %rd2;\n"
    "    bra DONE;\n"
    "W_FETCH:\n"
    "    ld.relaxed.sys.global.u64 %rd5, [%rd1];\n"
    "    bra DONE;\n"
    "W_SET:\n"
    "    st.release.sys.global.u64 [%rd1], %rd2;\n"
    "    bra DONE;\n"
    "W_SWAP:\n"
    "    atom.global.sys.exch.b64 %rd5, [%rd1], %rd2;\n"
    "    bra DONE;\n"
    "W_CSWAP:\n"
    "    atom.global.sys.cas.b64 %rd5, [%rd1], %rd3, %rd2;\n"
    "    bra DONE;\n"
    "W_ADD:\n"
    "    atom.global.sys.add.u64 %rd5, [%rd1], %rd2;\n"
    "    bra DONE;\n"
    "W_AND:\n"
    "    atom.global.sys.and.b64 %rd5, [%rd1], %rd2;\n"
    "    bra DONE;\n"
    "W_OR:\n"
    "    atom.global.sys.or.b64 %rd5, [%rd1], %rd2;\n"
    "    bra DONE;\n"
    "NARROW:\n"
    "    cvt.u32.u64 %r3, %rd2;\n"
    "    cvt.u32.u64 %r4, %rd3;\n"
    "    mov.u32 %r5, 0;\n"
    "    setp.eq.u32 %p, %r1, 0;\n"
    "    @%p bra N_FETCH;\n"
    "    setp.eq.u32 %p, %r1, 1;\n"
    "    @%p bra N_SET;\n"
    "    setp.eq.u32 %p, %r1, 2;\n"
    "    @%p bra N_SWAP;\n"
    "    setp.eq.u32 %p, %r1, 3;\n"
    "    @%p bra N_CSWAP;\n"
    "    setp.eq.u32 %p, %r1, 4;\n"
    "    @%p bra N_ADD;\n"
    "    setp.eq.u32 %p, %r1, 5;\n"
    "    @%p bra N_AND;\n"
    "    setp.eq.u32 %p, %r1, 6;\n"
    "    @%p bra N_OR;\n"
    "    atom.global.sys.xor.b32 %r5, [%rd1], %r3;\n"
    "    bra N_DONE;\n"
    "N_FETCH:\n"
    "    ld.relaxed.sys.global.u32 %r5, [%rd1];\n"
    "    bra N_DONE;\n"
    "N_SET:\n"
    "    st.release.sys.global.u32 [%rd1], %r3;\n"
    "    bra N_DONE;\n"
    "N_SWAP:\n"
    "    atom.global.sys.exch.b32 %r5, [%rd1], %r3;\n"
    "    bra N_DONE;\n"
    "N_CSWAP:\n"
    "    atom.global.sys.cas.b32 %r5, [%rd1], %r4, %r3;\n"
    "    bra N_DONE;\n"
    "N_ADD:\n"
    "    atom.global.sys.add.u32 %r5, [%rd1], %r3;\n"
    "    bra N_DONE;\n"
    "N_AND:\n"
    "    atom.global.sys.and.b32 %r5, [%rd1], %r3;\n"
    "    bra N_DONE;\n"
    "N_OR:\n"
    "    atom.global.sys.or.b32 %r5, [%rd1], %r3;\n"
    "N_DONE:\n"
    "    cvt.u64.u32 %rd5, %r5;\n"
    "DONE:\n"
    "    st.u64 [%rd4], %rd5;\n"
    "    membar.sys;\n"
    "    ld.param.u64 %rd8, [p_then];\n"
    "    ld.param.u64 %rd9, [p_then_value];\n"
    "    setp.eq.u64 %p, %rd8, 0;\n"
    "    @%p bra RET;\n"
    "    st.release.sys.global.u64 [%rd8], %rd9;\n"
    "RET:\n"
    "    ret;\n"
    "}\n";

const char *ushmemi_cuda_amo_ptx(void)
{
    return amo_ptx;
}

/* ushmemi_exchange(x): a stream barrier's round for the stream-ordered
 * calls. Thread t < x.nwrites stores x.values[t] to x.addrs[t] (release, at
 * system scope: what the stream did before reaches the peer first), thread
 * t < x.nwaits then spins (acquire) until x.waits[t] >= x.expect[t]. The
 * arrays travel by value in the parameter (struct exchange_param below), so
 * a queued launch keeps nothing of the caller's. EXCHANGE_PTX(NAME, FIRST)
 * is the kernel NAME with the instructions FIRST at its start. */
#define EXCHANGE_PTX(NAME, FIRST)                                                      \
    ".visible .entry " NAME "(.param .align 8 .b8 p_x[520])\n"                        \
    "{\n"                                                                              \
    "    .reg .pred %p;\n"                                                             \
    "    .reg .b32 %r<4>;\n"                                                           \
    "    .reg .b64 %rd<10>;\n" FIRST                                                   \
    "    mov.u32 %r1, %tid.x;\n"                                                       \
    "    ld.param.u32 %r2, [p_x];\n"                                                   \
    "    ld.param.u32 %r3, [p_x+4];\n"                                                 \
    "    mov.u64 %rd1, p_x;\n"                                                         \
    "    mul.wide.u32 %rd2, %r1, 8;\n"                                                 \
    "    add.u64 %rd3, %rd1, %rd2;\n"                                                  \
    "    setp.ge.u32 %p, %r1, %r2;\n"                                                  \
    "    @%p bra X_WAIT;\n"                                                            \
    "    ld.param.u64 %rd4, [%rd3+8];\n"                                               \
    "    ld.param.u64 %rd5, [%rd3+136];\n"                                             \
    "    st.release.sys.global.u64 [%rd4], %rd5;\n"                                    \
    "X_WAIT:\n"                                                                        \
    "    setp.ge.u32 %p, %r1, %r3;\n"                                                  \
    "    @%p bra X_DONE;\n"                                                            \
    "    ld.param.u64 %rd6, [%rd3+264];\n"                                             \
    "    ld.param.u64 %rd7, [%rd3+392];\n"                                             \
    "X_SPIN:\n"                                                                        \
    "    ld.acquire.sys.global.u64 %rd8, [%rd6];\n"                                    \
    "    setp.lt.u64 %p, %rd8, %rd7;\n"                                                \
    "    @%p bra X_SPIN;\n"                                                            \
    "X_DONE:\n"                                                                        \
    "    ret;\n"                                                                       \
    "}\n"

static const char exchange_ptx[] = EXCHANGE_PTX("ushmemi_exchange", "");

/* The round for programmatic dependent launch (PTX 7.8, sm_90), in a module
 * of its own: the next kernel on the stream, when it is launched so too (the
 * next barrier's round), may start while this one still waits for its
 * peers (launch_dependents), and each round first waits until the work
 * before it on the stream has completed and its memory is visible
 * (griddepcontrol.wait), as a plain launch would have. In a host loop of
 * stream barriers the GPU then no longer pays the launch of each round
 * after the one before has ended. */
static const char exchange_pdl_ptx[] =
    ".version 7.8\n"
    ".target sm_90\n"
    ".address_size 64\n" EXCHANGE_PTX("ushmemi_exchange_pdl",
                                      "    griddepcontrol.launch_dependents;\n"
                                      "    griddepcontrol.wait;\n");
#undef EXCHANGE_PTX

/* The kernel's parameter, at the offsets its PTX reads. */
struct exchange_param {
    uint32_t nwrites, nwaits;
    uint64_t addrs[USHMEMI_STREAM_BATCH], values[USHMEMI_STREAM_BATCH];
    uint64_t waits[USHMEMI_STREAM_BATCH], expect[USHMEMI_STREAM_BATCH];
};
_Static_assert(USHMEMI_STREAM_BATCH == 16 && sizeof(struct exchange_param) == 520 &&
                   offsetof(struct exchange_param, values) == 136 &&
                   offsetof(struct exchange_param, waits) == 264 &&
                   offsetof(struct exchange_param, expect) == 392,
               "ushmemi_exchange's PTX reads its parameter at these offsets");

/* The kernel's op numbers are the ring's. */
_Static_assert(USHMEM_RING_AMO_FETCH == 0 && USHMEM_RING_AMO_SET == 1 &&
                   USHMEM_RING_AMO_SWAP == 2 && USHMEM_RING_AMO_CSWAP == 3 &&
                   USHMEM_RING_AMO_ADD == 4 && USHMEM_RING_AMO_AND == 5 &&
                   USHMEM_RING_AMO_OR == 6 && USHMEM_RING_AMO_XOR == 7,
               "the PTX kernel numbers the atomics as enum ushmem_ring_amo_op does");

/* The round for programmatic dependent launch, where the GPU (compute
 * capability 9.0 and up) and the driver (cuLaunchKernelEx, PTX 7.8) have
 * it; else exchange_pdl_fn stays NULL and rounds are plain launches. */
static void pdl_load(struct ushmemi_device *dev)
{
    int major = 0;

    if (dev->pdl_tried)
        return;
    dev->pdl_tried = true;
    if (ushmemi_cu.cuLaunchKernelEx == NULL ||
        ushmemi_cu.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                                        dev->cu_dev) != CUDA_SUCCESS ||
        major < 9)
        return;
    CUresult r = ushmemi_cu.cuModuleLoadData(&dev->pdl_module, exchange_pdl_ptx);
    if (r == CUDA_SUCCESS)
        r = ushmemi_cu.cuModuleGetFunction(&dev->exchange_pdl_fn, dev->pdl_module,
                                           "ushmemi_exchange_pdl");
    if (r != CUDA_SUCCESS) {
        ushmemi_debug("cuda backend: no programmatic launch of the stream barrier on device "
                      "%d (%d): plain launches", dev->ordinal, (int)r);
        if (dev->pdl_module != NULL)
            ushmemi_cu.cuModuleUnload(dev->pdl_module);
        dev->pdl_module = NULL;
        dev->exchange_pdl_fn = NULL;
    }
}

/* The backend's kernels, JIT-compiled by the driver. */
static ushmem_status_t module_load(struct ushmemi_device *dev)
{
    if (dev->amo_module != NULL)
        return USHMEM_OK;
    size_t len = strlen(amo_ptx) + strlen(exchange_ptx) + 1;
    char *ptx = malloc(len);
    if (ptx == NULL)
        return USHMEM_ERR_NO_MEMORY;
    snprintf(ptx, len, "%s%s", amo_ptx, exchange_ptx);
    CUresult r = ushmemi_cu.cuModuleLoadData(&dev->amo_module, ptx);
    free(ptx);
    if (r != CUDA_SUCCESS) {
        dev->amo_module = NULL;
        return ushmemi_cuda_fail("cuModuleLoadData", r, "the backend's kernels (PTX 7.0, "
                                 "sm_70) on device %d", dev->ordinal);
    }
    const char *name = "ushmemi_amo";
    r = ushmemi_cu.cuModuleGetFunction(&dev->amo_fn, dev->amo_module, name);
    if (r == CUDA_SUCCESS) {
        name = "ushmemi_exchange";
        r = ushmemi_cu.cuModuleGetFunction(&dev->exchange_fn, dev->amo_module, name);
    }
    if (r != CUDA_SUCCESS) {
        ushmemi_cu.cuModuleUnload(dev->amo_module);
        dev->amo_module = NULL;
        return ushmemi_cuda_fail("cuModuleGetFunction", r, "%s on device %d", name,
                                 dev->ordinal);
    }
    return USHMEM_OK;
}

/* The proxy thread is about to carry this GPU's requests: with lazy kernel
 * loading, a kernel waiting on one of them can keep the program's next
 * kernel from loading (the driver waits for the GPU to go idle), and the
 * job hangs. oshrun sets CUDA_MODULE_LOADING=EAGER; say so once when
 * another launcher did not. Called with amo_lock held. */
static void amo_first(struct ushmemi_device *dev)
{
    if (dev->amo_warned)
        return;
    dev->amo_warned = true;
    const char *loading = getenv("CUDA_MODULE_LOADING");
    if (loading == NULL || strcmp(loading, "EAGER") != 0)
        ushmemi_warn("cuda backend: device calls go through the proxy thread and "
                     "CUDA_MODULE_LOADING is %s, not EAGER: a kernel that waits on the proxy "
                     "while the program launches another may hang; set "
                     "CUDA_MODULE_LOADING=EAGER (oshrun does)",
                     loading == NULL ? "unset" : loading);
}

/* Every kernel of the backend (the atomic, the stream barrier's rounds, the
 * stream reductions) and the atomic's host words, made while the device opens:
 * loading a module waits until the GPU is idle, so one loaded later (the
 * first stream barrier, say) behind a program's kernel that waits on the
 * proxy would wait for that kernel, which waits for the proxy, which waits
 * for the loader's lock: the hang of a stream barrier queued behind such
 * a kernel. */
ushmem_status_t ushmemi_cuda_kernels_load(struct ushmemi_device *dev)
{
    ushmem_status_t status = module_load(dev);
    if (status != USHMEM_OK)
        return status;
    pdl_load(dev);
    void *old = NULL;
    /* Three words: the blocking atomic's old value, where a queued one
     * without a result leaves its own, and the number of the last warm
     * kernel that has run (keep_warm). */
    CUresult r = ushmemi_cu.cuMemHostAlloc(&old, 3 * sizeof(uint64_t),
                                           CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP);
    if (r != CUDA_SUCCESS) {
        status = ushmemi_cuda_fail("cuMemHostAlloc", r, "24 bytes for the atomic kernel's result");
        goto unload;
    }
    memset(old, 0, 3 * sizeof(uint64_t));
    dev->amo_old = old;
    dev->amo_discard = (uint64_t *)old + 1;
    dev->warm_done = (uint64_t *)old + 2;
    status = ushmemi_cuda_reduce_load(dev);
    if (status == USHMEM_OK)
        status = ushmemi_cuda_graph_load(dev);
    if (status == USHMEM_OK)
        status = ushmemi_cuda_coll_load(dev);
    if (status != USHMEM_OK)
        goto unload;
    return USHMEM_OK;

unload:
    ushmemi_cuda_graph_close(dev);
    ushmemi_cuda_reduce_close(dev);
    ushmemi_cuda_amo_close(dev);
    return status;
}

static ushmem_status_t amo_locked(struct ushmemi_device *dev, void *addr, unsigned op, size_t size,
                                  uint64_t operand, uint64_t compare, uint64_t *old_p);

/* Checks an atomic's arguments and makes the device's context current. */
static ushmem_status_t amo_begin(struct ushmemi_device *dev, const void *addr, unsigned op,
                                 size_t size)
{
    if ((size != 4 && size != 8) || ((uintptr_t)addr & (size - 1)) != 0 ||
        op >= USHMEM_RING_AMO_OP_COUNT) {
        ushmemi_error("cuda backend: atomic op %u of %zu bytes at %p refused", op, size, addr);
        return USHMEM_ERR_INVALID_PARAM;
    }
    return ushmemi_cuda_current(dev, "atomic");
}

ushmem_status_t ushmemi_cuda_amo(struct ushmemi_device *dev, void *addr, unsigned op, size_t size,
                                 uint64_t operand, uint64_t compare, uint64_t *old_p)
{
    ushmem_status_t status = amo_begin(dev, addr, op, size);
    if (status != USHMEM_OK)
        return status;
    /* The kernel leaves the old value in one shared word. */
    pthread_mutex_lock(&dev->amo_lock);
    status = amo_locked(dev, addr, op, size, operand, compare, old_p);
    pthread_mutex_unlock(&dev->amo_lock);
    return status;
}

static ushmem_status_t amo_locked(struct ushmemi_device *dev, void *addr, unsigned op, size_t size,
                                  uint64_t operand, uint64_t compare, uint64_t *old_p)
{
    amo_first(dev);
    ushmem_status_t status = ushmemi_cuda_lanes_join(dev);
    if (status != USHMEM_OK)
        return status;
    CUdeviceptr target = (CUdeviceptr)(uintptr_t)addr;
    CUdeviceptr old = (CUdeviceptr)(uintptr_t)dev->amo_old, then = 0;
    unsigned wide = size == 8;
    uint64_t then_value = 0;
    uint64_t pre = 0, pre_value = 0;
    unsigned pre_len = 0;
    void *params[] = {&target, &operand,    &compare, &old,       &op,     &wide,
                      &then,   &then_value, &pre,     &pre_value, &pre_len};
    CUresult r = ushmemi_cu.cuLaunchKernel(dev->amo_fn, 1, 1, 1, 1, 1, 1, 0, dev->stream, params,
                                           NULL);
    if (r != CUDA_SUCCESS)
        return ushmemi_cuda_fail("cuLaunchKernel", r, "atomic op %u of %zu bytes at %p", op,
                                 size, addr);
    r = ushmemi_cu.cuStreamSynchronize(dev->stream);
    if (r != CUDA_SUCCESS)
        return ushmemi_cuda_fail("cuStreamSynchronize", r, "after the atomic at %p", addr);
    if (old_p != NULL)
        *old_p = *(volatile uint64_t *)dev->amo_old;
    return USHMEM_OK;
}

/* The same kernel, queued: it leaves the old value where the caller says
 * (a result cell of the proxy's ring, say), so that nothing is shared
 * between atomics and nobody waits for this one. pre_len bytes of
 * pre_value go to pre_addr first, where pre_addr is not NULL. */
static ushmem_status_t amo_queue(struct ushmemi_device *dev, void *addr, unsigned op, size_t size,
                                 uint64_t operand, uint64_t compare, uint64_t *result,
                                 const struct ushmemi_dev_then *then, void *pre_addr,
                                 uint64_t pre_value, size_t pre_len)
{
    ushmem_status_t status = amo_begin(dev, addr, op, size);
    if (status != USHMEM_OK)
        return status;
    pthread_mutex_lock(&dev->amo_lock);
    amo_first(dev);
    pthread_mutex_unlock(&dev->amo_lock);
    status = ushmemi_cuda_lanes_join(dev);
    if (status != USHMEM_OK)
        return status;
    /* Without a result, the kernel's store of the old value goes to its own
     * word, which nobody reads. */
    CUdeviceptr target = (CUdeviceptr)(uintptr_t)addr;
    CUdeviceptr old = (CUdeviceptr)(uintptr_t)(result != NULL ? result : dev->amo_discard);
    CUdeviceptr then_addr = (CUdeviceptr)(uintptr_t)(then != NULL ? then->addr : NULL);
    uint64_t then_value = then != NULL ? then->value : 0;
    CUdeviceptr pre = (CUdeviceptr)(uintptr_t)pre_addr;
    unsigned wide = size == 8, pre_bytes = (unsigned)pre_len;
    void *params[] = {&target,    &operand,    &compare, &old,       &op,       &wide,
                      &then_addr, &then_value, &pre,     &pre_value, &pre_bytes};
    CUresult r = ushmemi_cu.cuLaunchKernel(dev->amo_fn, 1, 1, 1, 1, 1, 1, 0, dev->stream, params,
                                           NULL);
    if (r != CUDA_SUCCESS)
        return ushmemi_cuda_fail("cuLaunchKernel", r, "atomic op %u of %zu bytes at %p", op,
                                 size, addr);
    return USHMEM_OK;
}

ushmem_status_t ushmemi_cuda_amo_async(struct ushmemi_device *dev, void *addr, unsigned op,
                                       size_t size, uint64_t operand, uint64_t compare,
                                       uint64_t *result, const struct ushmemi_dev_then *then)
{
    return amo_queue(dev, addr, op, size, operand, compare, result, then, NULL, 0, 0);
}

/* A put's bytes and then its signal's atomic, in the atomic's one launch:
 * the kernel stores the bytes, fences at system scope, then adds. Against
 * a store and the kernel, one call into the driver instead of two. */
ushmem_status_t ushmemi_cuda_store_amo_async(struct ushmemi_device *dev, void *store_addr,
                                             uint64_t store_value, size_t store_len, void *addr,
                                             unsigned op, size_t size, uint64_t operand,
                                             const struct ushmemi_dev_then *then)
{
    if (store_len == 0 || store_len > sizeof(uint64_t)) {
        ushmemi_error("cuda backend: a store of %zu bytes at %p refused (1 to 8)", store_len,
                      store_addr);
        return USHMEM_ERR_INVALID_PARAM;
    }
    return amo_queue(dev, addr, op, size, operand, 0, NULL, then, store_addr, store_value,
                     store_len);
}

/* The atomic's kernel as a fetch of `word` into the discard word, on the
 * warm stream at the lowest priority. Where the program's kernels hold
 * every SM it waits there, alone: its own stream, and nothing queued
 * behind it, since it writes its number into a host word itself once it
 * has run (an event recorded behind it would wait in the hardware queue
 * it shares with other streams, CUDA_DEVICE_MAX_CONNECTIONS=1 say, and
 * hold up what follows there). */
static bool warm_open(struct ushmemi_device *dev)
{
    int least = 0, greatest = 0;
    CUresult r = ushmemi_cu.cuCtxGetStreamPriorityRange(&least, &greatest);
    if (r == CUDA_SUCCESS)
        r = ushmemi_cu.cuStreamCreateWithPriority(&dev->warm_stream, CU_STREAM_NON_BLOCKING,
                                                  least);
    if (r == CUDA_SUCCESS)
        return true;
    dev->warm_stream = NULL;
    ushmemi_debug("cuda backend: no kernel keeps the proxy's launch path warm: its stream could "
                  "not be made (CUresult %d)", (int)r);
    return false;
}

static uint64_t warm_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Whether no other process holds a compute context on the device, busy or
 * not, asked of NVML every WARM_CHECK_NS (not every time: a query of the
 * driver): another process's kernels would have to give way to each warm
 * kernel (the driver time-slices processes). Where NVML cannot tell (none,
 * MIG, an error): alone. */
#define WARM_CHECK_NS 10000000000ULL
static bool warm_alone(struct ushmemi_device *dev)
{
    uint64_t now = warm_now_ns();
    if (dev->warm_checked != 0 && now - dev->warm_checked < WARM_CHECK_NS)
        return dev->warm_alone;
    dev->warm_checked = now;
    int n = ushmemi_cuda_compute_processes(dev);
    bool alone = n <= 1;
    if (alone != dev->warm_alone)
        ushmemi_debug("cuda backend: %d processes compute on device %d: the idle proxy's warm "
                      "kernel %s", n, dev->ordinal, alone ? "runs" : "waits until it is alone");
    dev->warm_alone = alone;
    return alone;
}

bool ushmemi_cuda_keep_warm(struct ushmemi_device *dev, const uint64_t *word)
{
    if (word == NULL) {
        ushmemi_cuda_warm_close(dev);
        dev->warm_off = true;
        return false;
    }
    if (dev->warm_off || dev->warm_done == NULL ||
        ushmemi_cuda_current(dev, "keeping warm") != USHMEM_OK)
        return false;
    if (dev->warm_stream == NULL) {
        dev->warm_alone = true;
        if (!warm_open(dev)) {
            dev->warm_off = true;
            return false;
        }
    } else if (__atomic_load_n(dev->warm_done, __ATOMIC_ACQUIRE) != dev->warm_launched) {
        return false; /* the last one has not run */
    }
    if (!warm_alone(dev))
        return false;
    CUdeviceptr target = (CUdeviceptr)(uintptr_t)word;
    CUdeviceptr old = (CUdeviceptr)(uintptr_t)dev->amo_discard;
    CUdeviceptr then = (CUdeviceptr)(uintptr_t)dev->warm_done;
    uint64_t operand = 0, compare = 0, then_value = dev->warm_launched + 1;
    unsigned op = USHMEM_RING_AMO_FETCH, wide = 1;
    uint64_t pre = 0, pre_value = 0;
    unsigned pre_len = 0;
    void *params[] = {&target, &operand,    &compare, &old,       &op,     &wide,
                      &then,   &then_value, &pre,     &pre_value, &pre_len};
    CUresult r = ushmemi_cu.cuLaunchKernel(dev->amo_fn, 1, 1, 1, 1, 1, 1, 0, dev->warm_stream,
                                           params, NULL);
    if (r != CUDA_SUCCESS) {
        ushmemi_debug("cuda backend: the kernel that keeps the proxy's launch path warm "
                      "stops: launching it failed (CUresult %d)", (int)r);
        dev->warm_off = true;
        return false;
    }
    dev->warm_launched++;
    return true;
}

CUresult ushmemi_cuda_launch_programmatic(CUfunction fn, unsigned blocks, unsigned threads,
                                          void *stream, void **params)
{
    CUlaunchAttribute attr;
    memset(&attr, 0, sizeof(attr));
    attr.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    attr.value.programmaticStreamSerializationAllowed = 1;
    CUlaunchConfig config;
    memset(&config, 0, sizeof(config));
    config.gridDimX = blocks;
    config.gridDimY = config.gridDimZ = 1;
    config.blockDimX = threads;
    config.blockDimY = config.blockDimZ = 1;
    config.hStream = (CUstream)stream;
    config.attrs = &attr;
    config.numAttrs = 1;
    return ushmemi_cu.cuLaunchKernelEx(&config, fn, params, NULL);
}

/* A stream barrier's round as one kernel on the program's stream (see
 * exchange_ptx): one launch instead of a batch of stream memory
 * operations. */
ushmem_status_t ushmemi_cuda_exchange_kernel(struct ushmemi_device *dev, void *stream,
                                             uint64_t *const *addrs, const uint64_t *values,
                                             int nwrites, uint64_t *const *wait_addrs,
                                             const uint64_t *wait_values, int nwaits)
{
    struct exchange_param x;
    memset(&x, 0, sizeof(x));
    x.nwrites = (uint32_t)nwrites;
    x.nwaits = (uint32_t)nwaits;
    for (int i = 0; i < nwrites; i++) {
        x.addrs[i] = (uint64_t)(uintptr_t)addrs[i];
        x.values[i] = values[i];
    }
    for (int j = 0; j < nwaits; j++) {
        x.waits[j] = (uint64_t)(uintptr_t)wait_addrs[j];
        x.expect[j] = wait_values[j];
    }
    void *params[] = {&x};
    CUresult r;
    CUstreamCaptureStatus capture = CU_STREAM_CAPTURE_STATUS_NONE;
    /* Not into a graph being captured: a driver before CUDA 12.3 cannot
     * capture the programmatic dependency. */
    if (dev->exchange_pdl_fn != NULL &&
        ushmemi_cu.cuStreamIsCapturing((CUstream)stream, &capture) == CUDA_SUCCESS &&
        capture == CU_STREAM_CAPTURE_STATUS_NONE) {
        r = ushmemi_cuda_launch_programmatic(dev->exchange_pdl_fn, 1, 32, stream, params);
    } else {
        r = ushmemi_cu.cuLaunchKernel(dev->exchange_fn, 1, 1, 1, 32, 1, 1, 0, (CUstream)stream,
                                      params, NULL);
    }
    if (r != CUDA_SUCCESS)
        return ushmemi_cuda_fail("cuLaunchKernel", r, "stream barrier kernel on stream %p, "
                                 "%d writes, %d waits", stream, nwrites, nwaits);
    return USHMEM_OK;
}

/* Waits for the last kernel keep_warm launched, which reads a word of the
 * heap and writes host words, and releases its stream. */
void ushmemi_cuda_warm_close(struct ushmemi_device *dev)
{
    if (dev->warm_stream != NULL) {
        ushmemi_cu.cuStreamSynchronize(dev->warm_stream);
        ushmemi_cu.cuStreamDestroy(dev->warm_stream);
    }
    dev->warm_stream = NULL;
    dev->warm_launched = 0;
    if (dev->warm_done != NULL)
        *dev->warm_done = 0;
}

void ushmemi_cuda_amo_close(struct ushmemi_device *dev)
{
    if (dev->amo_module == NULL)
        return;
    if (dev->pdl_module != NULL)
        ushmemi_cu.cuModuleUnload(dev->pdl_module);
    dev->pdl_module = NULL;
    dev->exchange_pdl_fn = NULL;
    dev->pdl_tried = false;
    ushmemi_cu.cuModuleUnload(dev->amo_module);
    if (dev->amo_old != NULL)
        ushmemi_cu.cuMemFreeHost(dev->amo_old);
    dev->amo_module = NULL;
    dev->amo_old = NULL;
    dev->amo_discard = NULL;
    dev->warm_done = NULL;
}
