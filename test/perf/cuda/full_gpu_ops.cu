/* Which operations a host thread queues on a GPU are carried out while a
 * kernel holds every SM of it, with no library: what a proxy thread can
 * still serve for a program whose kernel fills the GPU and waits for it.
 *
 * A kernel of one-warp blocks, as many as the GPU holds at once (block
 * slots bound it), spins on a word of device memory. Meanwhile, on a
 * stream of its own, each operation is queued and an event recorded behind
 * it; the event either completes (the time is printed) or does not within
 * the limit ("waits for an SM"). Then the kernel is released by a stream
 * memory operation on a third stream (one of those that complete) and
 * launched again for the next operation. With two GPUs or more, copies
 * between GPU 0 and GPU 1 too (peer access on), queued on GPU 0.
 *
 * Usage: full_gpu_ops [--per-sm N] [--wait-ms MS]
 *   --per-sm   blocks an SM (default: as many as fit)
 *   --wait-ms  how long an operation may take before it counts as waiting
 *              for an SM (default 500) */
#include <cuda.h>
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "driver_entries.cuh"

#define CHECK(call)                                                                        \
    do {                                                                                   \
        cudaError_t err_ = (call);                                                         \
        if (err_ != cudaSuccess) {                                                         \
            fprintf(stderr, "full_gpu_ops: %s:%d: %s: %s\n", __FILE__, __LINE__, #call,    \
                    cudaGetErrorString(err_));                                             \
            exit(1);                                                                       \
        }                                                                                  \
    } while (0)
#define CHECK_CU(call)                                                                     \
    do {                                                                                   \
        CUresult r_ = (call);                                                              \
        if (r_ != CUDA_SUCCESS) {                                                          \
            fprintf(stderr, "full_gpu_ops: %s:%d: %s: CUresult %d\n", __FILE__, __LINE__,  \
                    #call, (int)r_);                                                       \
            exit(1);                                                                       \
        }                                                                                  \
    } while (0)

static struct {
    CUresult (*writeValue32)(CUstream, CUdeviceptr, cuuint32_t, unsigned int);
    CUresult (*writeValue64)(CUstream, CUdeviceptr, cuuint64_t, unsigned int);
    CUresult (*batchMemOp)(CUstream, unsigned int, CUstreamBatchMemOpParams *, unsigned int);
    CUresult (*memsetD8)(CUdeviceptr, unsigned char, size_t, CUstream);
} cu;

static void load_driver(void)
{
    static const struct driver_entry table[] = {
        {"cuStreamWriteValue32", (void **)&cu.writeValue32},
        {"cuStreamWriteValue64", (void **)&cu.writeValue64},
        {"cuStreamBatchMemOp", (void **)&cu.batchMemOp},
        {"cuMemsetD8Async", (void **)&cu.memsetD8},
    };
    driver_entries_load("full_gpu_ops", table, sizeof(table) / sizeof(table[0]), 12000);
}

__global__ void hold(const volatile unsigned *release)
{
    while (*release == 0)
        ;
}

__global__ void one_store(int *p)
{
    *p = 1;
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

enum op {
    D2D_8, D2D_4K, D2D_1M, D2D_64M, D2H_8, H2D_8, D2H_1M, H2D_1M, MEMSET_8, MEMSET_D8_1,
    WRITE64, BATCH2, KERNEL, PEER_FROM_8, PEER_FROM_1M, PEER_TO_8, PEER_TO_1M, N_OPS
};
static const char *const op_names[N_OPS] = {
    "copy within the GPU, 8 B", "copy within the GPU, 4 KiB", "copy within the GPU, 1 MiB",
    "copy within the GPU, 64 MiB", "copy to host, 8 B", "copy from host, 8 B",
    "copy to host, 1 MiB", "copy from host, 1 MiB", "cudaMemsetAsync, 8 B",
    "cuMemsetD8Async, 1 B", "cuStreamWriteValue64", "cuStreamBatchMemOp, 2 writes",
    "a one-thread kernel", "copy from GPU 1, 8 B", "copy from GPU 1, 1 MiB",
    "copy to GPU 1, 8 B", "copy to GPU 1, 1 MiB",
};

int main(int argc, char **argv)
{
    int want_per_sm = 0;
    double wait_s = 0.5;
    for (int a = 1; a < argc; a++) {
        if (strcmp(argv[a], "--per-sm") == 0 && a + 1 < argc) {
            want_per_sm = atoi(argv[++a]);
        } else if (strcmp(argv[a], "--wait-ms") == 0 && a + 1 < argc) {
            wait_s = atof(argv[++a]) / 1000.0;
        } else {
            fprintf(stderr, "usage: %s [--per-sm N] [--wait-ms MS]\n", argv[0]);
            return 2;
        }
    }
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        printf("full_gpu_ops: no CUDA device\n");
        return 77;
    }
    load_driver();
    CHECK(cudaSetDevice(0));
    int sms = 0, slots = 0, per_sm = 0;
    CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    CHECK(cudaDeviceGetAttribute(&slots, cudaDevAttrMaxBlocksPerMultiprocessor, 0));
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, hold, 32, 0));
    if (want_per_sm > 0 && want_per_sm < per_sm)
        per_sm = want_per_sm;
    bool peer = false;
    if (ndev >= 2) {
        int can = 0;
        CHECK(cudaDeviceCanAccessPeer(&can, 0, 1));
        if (can) {
            CHECK(cudaDeviceEnablePeerAccess(1, 0));
            peer = true;
        }
    }
    const size_t big = 64 << 20;
    char *a = NULL, *b = NULL, *h = NULL, *p1 = NULL;
    unsigned *release = NULL;
    CHECK(cudaMalloc((void **)&a, big));
    CHECK(cudaMalloc((void **)&b, big));
    CHECK(cudaMalloc((void **)&release, sizeof(unsigned)));
    CHECK(cudaHostAlloc((void **)&h, 1 << 20, cudaHostAllocDefault));
    if (peer) {
        CHECK(cudaSetDevice(1));
        CHECK(cudaMalloc((void **)&p1, 1 << 20));
        CHECK(cudaSetDevice(0));
    }
    cudaStream_t held, ops, releaser;
    CHECK(cudaStreamCreateWithFlags(&held, cudaStreamNonBlocking));
    CHECK(cudaStreamCreateWithFlags(&ops, cudaStreamNonBlocking));
    CHECK(cudaStreamCreateWithFlags(&releaser, cudaStreamNonBlocking));
    cudaEvent_t done;
    CHECK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
    CHECK(cudaDeviceSynchronize());
    /* Kernels and copies once beforehand, so that no first-use loading is
     * measured. */
    one_store<<<1, 1, 0, ops>>>((int *)a);
    CHECK(cudaMemcpyAsync(a, b, 8, cudaMemcpyDeviceToDevice, ops));
    CHECK(cudaMemsetAsync(a, 0, 8, ops));
    CHECK(cudaMemsetAsync(release, 0, sizeof(unsigned), ops));
    CHECK(cudaStreamSynchronize(ops));

    printf("full_gpu_ops: GPU 0 held by %d blocks of one warp (%d an SM of %d block slots, "
           "%d SMs)%s\n",
           per_sm * sms, per_sm, slots, sms, peer ? "; GPU 1 reached by peer access" : "");
    printf("%-32s | %s\n", "operation queued while held", "result");
    int waited = 0;
    for (int op = 0; op < N_OPS; op++) {
        if (op >= PEER_FROM_8 && !peer)
            continue;
        hold<<<per_sm * sms, 32, 0, held>>>(release);
        CHECK(cudaGetLastError());
        usleep(50000); /* every block resident */
        switch (op) {
        case D2D_8: CHECK(cudaMemcpyAsync(a, b, 8, cudaMemcpyDeviceToDevice, ops)); break;
        case D2D_4K: CHECK(cudaMemcpyAsync(a, b, 4096, cudaMemcpyDeviceToDevice, ops)); break;
        case D2D_1M: CHECK(cudaMemcpyAsync(a, b, 1 << 20, cudaMemcpyDeviceToDevice, ops)); break;
        case D2D_64M: CHECK(cudaMemcpyAsync(a, b, big, cudaMemcpyDeviceToDevice, ops)); break;
        case D2H_8: CHECK(cudaMemcpyAsync(h, a, 8, cudaMemcpyDeviceToHost, ops)); break;
        case H2D_8: CHECK(cudaMemcpyAsync(a, h, 8, cudaMemcpyHostToDevice, ops)); break;
        case D2H_1M: CHECK(cudaMemcpyAsync(h, a, 1 << 20, cudaMemcpyDeviceToHost, ops)); break;
        case H2D_1M: CHECK(cudaMemcpyAsync(a, h, 1 << 20, cudaMemcpyHostToDevice, ops)); break;
        case MEMSET_8: CHECK(cudaMemsetAsync(a, 1, 8, ops)); break;
        case MEMSET_D8_1: CHECK_CU(cu.memsetD8((CUdeviceptr)a, 1, 1, ops)); break;
        case WRITE64: CHECK_CU(cu.writeValue64(ops, (CUdeviceptr)a, 5, 0)); break;
        case BATCH2: {
            CUstreamBatchMemOpParams w[2];
            memset(w, 0, sizeof(w));
            for (int i = 0; i < 2; i++) {
                w[i].writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_64;
                w[i].writeValue.address = (CUdeviceptr)(a + 8 * i);
                w[i].writeValue.value64 = 7;
            }
            CHECK_CU(cu.batchMemOp(ops, 2, w, 0));
            break;
        }
        case KERNEL: one_store<<<1, 1, 0, ops>>>((int *)a); CHECK(cudaGetLastError()); break;
        case PEER_FROM_8: CHECK(cudaMemcpyAsync(a, p1, 8, cudaMemcpyDefault, ops)); break;
        case PEER_FROM_1M: CHECK(cudaMemcpyAsync(a, p1, 1 << 20, cudaMemcpyDefault, ops)); break;
        case PEER_TO_8: CHECK(cudaMemcpyAsync(p1, a, 8, cudaMemcpyDefault, ops)); break;
        case PEER_TO_1M: CHECK(cudaMemcpyAsync(p1, a, 1 << 20, cudaMemcpyDefault, ops)); break;
        }
        CHECK(cudaEventRecord(done, ops));
        double t0 = now_s(), t = 0;
        bool completed = false;
        while ((t = now_s() - t0) < wait_s) {
            cudaError_t q = cudaEventQuery(done);
            if (q == cudaSuccess) {
                completed = true;
                break;
            }
            if (q != cudaErrorNotReady)
                CHECK(q);
        }
        /* Still held: nothing on `held` has finished. */
        bool still_held = cudaStreamQuery(held) == cudaErrorNotReady;
        if (completed)
            printf("%-32s | done in %.1f us%s\n", op_names[op], t * 1e6,
                   still_held ? "" : " (the kernel had ended: not measured)");
        else
            printf("%-32s | waits for an SM (not done after %.0f ms)\n", op_names[op],
                   wait_s * 1e3);
        waited += !completed;
        fflush(stdout);
        CHECK_CU(cu.writeValue32(releaser, (CUdeviceptr)release, 1, 0));
        CHECK(cudaStreamSynchronize(held));
        CHECK(cudaStreamSynchronize(ops));
        CHECK(cudaMemsetAsync(release, 0, sizeof(unsigned), releaser));
        CHECK(cudaStreamSynchronize(releaser));
    }
    printf("full_gpu_ops: %d operations waited for an SM\n", waited);
    CHECK(cudaFreeHost(h));
    CHECK(cudaFree(release));
    CHECK(cudaFree(b));
    CHECK(cudaFree(a));
    if (p1 != NULL) {
        CHECK(cudaSetDevice(1));
        CHECK(cudaFree(p1));
    }
    return 0;
}
