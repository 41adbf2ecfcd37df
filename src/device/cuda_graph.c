/* The cuda backend's part in stream-ordered calls captured into CUDA graphs
 * (cuStreamBeginCapture ... cuStreamEndCapture, then launched as often as
 * the program likes): whether a stream is being captured, and a stream
 * barrier's round that keeps its counts in device memory.
 *
 * A replay of a graph repeats the work its capture queued with the values
 * the calls gave then. A stream barrier's round outside graphs writes the
 * count the host took at the call and waits for the one the host expects
 * (cuda_amo.c's ushmemi_exchange, or stream memory operations): replayed,
 * it would send and expect the same numbers again, and from the second
 * replay on its waits would hold at once. The round here (a kernel, in PTX
 * like the backend's others, loaded when the device opens) adds one to a
 * count in device memory for each word it writes and each word it waits
 * for, so every replay sends and expects the next numbers. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "../common/log.h"
#include "cuda_private.h"

/* ushmemi_exchange_counted(x): thread t < x.nwrites adds one to the
 * counter at x.counts[t] (this device's memory, which only these rounds
 * touch, each round after the one before on the stream) and stores the sum
 * to x.addrs[t] (release, at system scope: what the stream did before
 * reaches the peer first); thread t < x.nwaits adds one to the counter at
 * x.expect[t] and spins (acquire) until x.waits[t] >= the sum. The arrays
 * travel by value in the parameter (struct counted_param), so a captured
 * launch keeps them in the graph's node. */
static const char counted_ptx[] =
    ".version 7.0\n"
    ".target sm_70\n"
    ".address_size 64\n"
    ".visible .entry ushmemi_exchange_counted(.param .align 8 .b8 p_x[520])\n"
    "{\n"
    "    .reg .pred %p;\n"
    "    .reg .b32 %r<4>;\n"
    "    .reg .b64 %rd<12>;\n"
    "    mov.u32 %r1, %tid.x;\n"
    "    ld.param.u32 %r2, [p_x];\n"
    "    ld.param.u32 %r3, [p_x+4];\n"
    "    mov.u64 %rd1, p_x;\n"
    "    mul.wide.u32 %rd2, %r1, 8;\n"
    "    add.u64 %rd3, %rd1, %rd2;\n"
    "    setp.ge.u32 %p, %r1, %r2;\n"
    "    @%p bra C_WAIT;\n"
    "    ld.param.u64 %rd4, [%rd3+8];\n"
    "    ld.param.u64 %rd5, [%rd3+136];\n"
    "    ld.global.u64 %rd6, [%rd5];\n"
    "    add.u64 %rd6, %rd6, 1;\n"
    "    st.global.u64 [%rd5], %rd6;\n"
    "    st.release.sys.global.u64 [%rd4], %rd6;\n"
    "C_WAIT:\n"
    "    setp.ge.u32 %p, %r1, %r3;\n"
    "    @%p bra C_DONE;\n"
    "    ld.param.u64 %rd7, [%rd3+264];\n"
    "    ld.param.u64 %rd8, [%rd3+392];\n"
    "    ld.global.u64 %rd9, [%rd8];\n"
    "    add.u64 %rd9, %rd9, 1;\n"
    "    st.global.u64 [%rd8], %rd9;\n"
    "C_SPIN:\n"
    "    ld.acquire.sys.global.u64 %rd10, [%rd7];\n"
    "    setp.lt.u64 %p, %rd10, %rd9;\n"
    "    @%p bra C_SPIN;\n"
    "C_DONE:\n"
    "    ret;\n"
    "}\n";

/* The kernel's parameter, at the offsets its PTX reads. */
struct counted_param {
    uint32_t nwrites, nwaits;
    uint64_t addrs[USHMEMI_STREAM_BATCH], counts[USHMEMI_STREAM_BATCH];
    uint64_t waits[USHMEMI_STREAM_BATCH], expect[USHMEMI_STREAM_BATCH];
};
_Static_assert(USHMEMI_STREAM_BATCH == 16 && sizeof(struct counted_param) == 520 &&
                   offsetof(struct counted_param, counts) == 136 &&
                   offsetof(struct counted_param, waits) == 264 &&
                   offsetof(struct counted_param, expect) == 392,
               "ushmemi_exchange_counted's PTX reads its parameter at these offsets");

/* With the backend's other kernels, when the device opens
 * (ushmemi_cuda_kernels_load, cuda_amo.c says why). Also decides whether
 * stream waits ask for a flush of remote writes: a wait that the driver
 * refuses for its flags is retried without them outside graphs, but inside
 * a capture a refused call may spoil the graph, so the device is asked
 * once instead. */
ushmem_status_t ushmemi_cuda_graph_load(struct ushmemi_device *dev)
{
    int flush = 0;
    if (ushmemi_cu.cuDeviceGetAttribute(&flush, CU_DEVICE_ATTRIBUTE_CAN_FLUSH_REMOTE_WRITES,
                                        dev->cu_dev) != CUDA_SUCCESS)
        flush = 0;
    dev->wait_flush = flush ? CU_STREAM_WAIT_VALUE_FLUSH : 0;

    CUresult r = ushmemi_cu.cuModuleLoadData(&dev->graph_module, counted_ptx);
    if (r != CUDA_SUCCESS) {
        dev->graph_module = NULL;
        return ushmemi_cuda_fail("cuModuleLoadData", r, "the captured stream barrier's kernel "
                                 "(PTX 7.0, sm_70) on device %d", dev->ordinal);
    }
    r = ushmemi_cu.cuModuleGetFunction(&dev->counted_fn, dev->graph_module,
                                       "ushmemi_exchange_counted");
    if (r != CUDA_SUCCESS) {
        ushmemi_cu.cuModuleUnload(dev->graph_module);
        dev->graph_module = NULL;
        return ushmemi_cuda_fail("cuModuleGetFunction", r, "ushmemi_exchange_counted on device %d",
                                 dev->ordinal);
    }
    return USHMEM_OK;
}

void ushmemi_cuda_graph_close(struct ushmemi_device *dev)
{
    if (dev->graph_module == NULL)
        return;
    ushmemi_cu.cuModuleUnload(dev->graph_module);
    dev->graph_module = NULL;
    dev->counted_fn = NULL;
}

/* Any capture status but NONE counts: an invalidated capture still takes
 * the stream's work into its (failed) graph, not to the device. */
ushmem_status_t ushmemi_cuda_stream_capturing(struct ushmemi_device *dev, void *stream,
                                              bool *capturing_p)
{
    ushmem_status_t status = ushmemi_cuda_current(dev, "stream capture query");
    if (status != USHMEM_OK)
        return status;
    CUstreamCaptureStatus capture = CU_STREAM_CAPTURE_STATUS_NONE;
    CUresult r = ushmemi_cu.cuStreamIsCapturing((CUstream)stream, &capture);
    if (r != CUDA_SUCCESS)
        return ushmemi_cuda_fail("cuStreamIsCapturing", r, "stream %p", stream);
    *capturing_p = capture != CU_STREAM_CAPTURE_STATUS_NONE;
    return USHMEM_OK;
}

/* A plain launch, never a programmatic one (cuda_amo.c's rounds use that
 * outside graphs only): one block of 32 threads, as ushmemi_exchange's. */
ushmem_status_t ushmemi_cuda_stream_exchange_counted(struct ushmemi_device *dev, void *stream,
                                                     uint64_t *const *addrs,
                                                     uint64_t *const *counts, int nwrites,
                                                     uint64_t *const *wait_addrs,
                                                     uint64_t *const *expect, int nwaits)
{
    if (nwrites < 0 || nwaits < 0 || nwrites > USHMEMI_STREAM_BATCH ||
        nwaits > USHMEMI_STREAM_BATCH) {
        ushmemi_error("cuda backend: counted stream exchange of %d writes and %d waits refused "
                      "(at most %d each)", nwrites, nwaits, USHMEMI_STREAM_BATCH);
        return USHMEM_ERR_INVALID_PARAM;
    }
    if (nwrites == 0 && nwaits == 0)
        return USHMEM_OK;
    ushmem_status_t status = ushmemi_cuda_current(dev, "counted stream exchange");
    if (status != USHMEM_OK)
        return status;
    struct counted_param x;
    memset(&x, 0, sizeof(x));
    x.nwrites = (uint32_t)nwrites;
    x.nwaits = (uint32_t)nwaits;
    for (int i = 0; i < nwrites; i++) {
        x.addrs[i] = (uint64_t)(uintptr_t)addrs[i];
        x.counts[i] = (uint64_t)(uintptr_t)counts[i];
    }
    for (int j = 0; j < nwaits; j++) {
        x.waits[j] = (uint64_t)(uintptr_t)wait_addrs[j];
        x.expect[j] = (uint64_t)(uintptr_t)expect[j];
    }
    void *params[] = {&x};
    CUresult r = ushmemi_cu.cuLaunchKernel(dev->counted_fn, 1, 1, 1, 32, 1, 1, 0,
                                           (CUstream)stream, params, NULL);
    if (r != CUDA_SUCCESS)
        return ushmemi_cuda_fail("cuLaunchKernel", r, "counted stream barrier kernel on stream "
                                 "%p, %d writes, %d waits", stream, nwrites, nwaits);
    return USHMEM_OK;
}
