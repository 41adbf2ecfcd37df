/* What a host proxy thread can do at best between two GPUs, with no library:
 * the floor under ushmem's proxy road, and a hazard every proxy that hands
 * device memory to libfabric's CUDA support meets.
 *
 *   hop-ENGINE   one thread of a kernel on GPU 0 asks its host thread for a
 *                write into GPU 1 (a store to a host-pinned word); that
 *                thread, polling the word, makes the write with ENGINE on a
 *                stream of GPU 0; one thread of a kernel on GPU 1, polling its
 *                own memory, sees it and asks its host thread to answer the
 *                same way. The kernels time iters round trips; the figure is
 *                half of one, in microseconds. ENGINE:
 *                  memop       cuStreamWriteValue64 of the value
 *                  copy        an 8-byte cudaMemcpyAsync from host-pinned memory
 *                  copy-dev    an 8-byte cudaMemcpyAsync from the relaying
 *                              GPU's memory, as a get's copy: over the link
 *                              between the GPUs; within GPU 0 with --one-gpu,
 *                              which the driver runs as a kernel of its own
 *                  kernel      a one-thread kernel storing through the peer pointer
 *                  memop-sync  memop, then a stream synchronisation before the
 *                              thread polls again (a proxy that waits for each
 *                              request before it takes the next)
 *   hop-memop+SHAPE  hop-memop with a piece of what ushmem's ring adds to
 *                each request (include/ushmem/detail/ring.h,
 *                src/proxy/proxy.c), to measure where its proxy road's time
 *                above the floor goes. SHAPE:
 *                  ticket  the asking thread first takes a ticket: a
 *                          fetch-and-add at system scope on a host-pinned
 *                          word (the ring's tail)
 *                  line    it writes the request's 11 other words into
 *                          host-pinned memory before the word the host
 *                          polls (the ring's slot, published by its seq)
 *                  done    the host thread makes a second write per request,
 *                          a completion count into the asking GPU's memory,
 *                          which the asking thread waits for before it
 *                          waits for the answer (the ring's done counter,
 *                          as a put followed by quiet)
 *                  ring    all three
 *   hop-ENGINE+done  what the proxy's second driver call per request
 *                costs on each engine: the host thread writes the asking
 *                GPU's completion word after the answer, and the asking
 *                thread waits for it first (a `p`, a `g`, a fetch-add and
 *                the counter's copy that completes each). Also
 *                  memop+done-batch   both writes in one cuStreamBatchMemOp
 *                  kernel+done-inside the one-thread kernel writes the
 *                                     completion word itself after the value
 *                                     (one launch, no second call)
 *   legacy-CTX   a kernel on the legacy default stream of GPU 0 spins until a
 *                word of virtual-memory-API device memory (as ushmem's heap)
 *                turns 1, giving up after 2 s; a host thread writes the 1 with
 *                a synchronous cudaMemcpy from pageable memory, as libfabric's
 *                CUDA support does for a target's data. CTX: primary (the
 *                program's own context: the copy waits for the kernel, so a
 *                kernel waiting for such a write never sees it) or second (a
 *                context of its own on the same device). Prints the copy's
 *                time in microseconds and whether the kernel saw the word.
 *
 *   proxy_floor [--iters N] [--one-gpu]      (default 2000)
 *
 * --one-gpu puts both sides on GPU 0 (two kernels on two streams of one
 * device, each host thread writing into GPU 0): the floor under a PE's
 * requests to itself through its proxy, for machines with one GPU.
 *
 * Prints CSV: "# proxy_floor,raw,2" (",1" with --one-gpu), then
 * "what,value,unit" rows. Exits 77 with fewer than two GPUs or without peer
 * access between GPUs 0 and 1, unless --one-gpu. */
#include <cuda.h>
#include <cuda_runtime.h>

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "driver_entries.cuh"

#define CHECK(call)                                                                        \
    do {                                                                                   \
        cudaError_t err_ = (call);                                                         \
        if (err_ != cudaSuccess) {                                                         \
            fprintf(stderr, "proxy_floor: %s failed: %s\n", #call, cudaGetErrorString(err_)); \
            exit(1);                                                                       \
        }                                                                                  \
    } while (0)

#define CU_CHECK(call)                                                                     \
    do {                                                                                   \
        CUresult r_ = (call);                                                              \
        if (r_ != CUDA_SUCCESS) {                                                          \
            fprintf(stderr, "proxy_floor: %s failed: error %d\n", #call, (int)r_);        \
            exit(1);                                                                       \
        }                                                                                  \
    } while (0)

/* Driver entry points, through the runtime, so that the program needs no
 * link against libcuda. */
static struct {
    CUresult (*writeValue64)(CUstream, CUdeviceptr, cuuint64_t, unsigned int);
    CUresult (*batchMemOp)(CUstream, unsigned int, CUstreamBatchMemOpParams *, unsigned int);
    CUresult (*ctxCreate)(CUcontext *, CUctxCreateParams *, unsigned int, CUdevice);
    CUresult (*ctxSetCurrent)(CUcontext);
    CUresult (*ctxDestroy)(CUcontext);
    CUresult (*memCreate)(CUmemGenericAllocationHandle *, size_t, const CUmemAllocationProp *,
                          unsigned long long);
    CUresult (*memAddressReserve)(CUdeviceptr *, size_t, size_t, CUdeviceptr, unsigned long long);
    CUresult (*memMap)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle,
                       unsigned long long);
    CUresult (*memSetAccess)(CUdeviceptr, size_t, const CUmemAccessDesc *, size_t);
    CUresult (*memGetAllocationGranularity)(size_t *, const CUmemAllocationProp *,
                                            CUmemAllocationGranularity_flags);
} cu;

static void load_driver(void)
{
    static const struct driver_entry table[] = {
        {"cuStreamWriteValue64", (void **)&cu.writeValue64},
        {"cuStreamBatchMemOp", (void **)&cu.batchMemOp},
        {"cuCtxCreate", (void **)&cu.ctxCreate},
        {"cuCtxSetCurrent", (void **)&cu.ctxSetCurrent},
        {"cuCtxDestroy", (void **)&cu.ctxDestroy},
        {"cuMemCreate", (void **)&cu.memCreate},
        {"cuMemAddressReserve", (void **)&cu.memAddressReserve},
        {"cuMemMap", (void **)&cu.memMap},
        {"cuMemSetAccess", (void **)&cu.memSetAccess},
        {"cuMemGetAllocationGranularity", (void **)&cu.memGetAllocationGranularity},
    };
    driver_entries_load("proxy_floor", table, sizeof(table) / sizeof(table[0]), 13000);
}

__device__ static uint64_t now_ns(void)
{
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

/* What an asking thread adds to a request (hop-memop+SHAPE): a ticket
 * from a host-pinned tail, the request's other words written into a
 * host-pinned line, a wait for the host's completion count in its own
 * GPU's memory. NULL where the shape leaves it out. */
struct shape {
    unsigned long long *tail;
    volatile uint64_t *line;
    volatile uint64_t *done;
};
#define LINE_WORDS 11

/* Asks for i: the shape's ticket and line, then the word the host polls. */
__device__ static void ask_for(volatile uint64_t *ask, uint64_t i, struct shape sh,
                               unsigned long long *sink)
{
    if (sh.tail != NULL)
        *sink += atomicAdd_system(sh.tail, 1ull);
    if (sh.line != NULL)
        for (int k = 0; k < LINE_WORDS; k++)
            sh.line[k] = i + (uint64_t)k;
    __threadfence_system();
    *ask = i;
    __threadfence_system();
    if (sh.done != NULL)
        while (*sh.done < i)
            ;
}

/* One thread: ask (store i to the host word), wait for the answer in our
 * own memory, iters times; the time of the lot goes to *ns. */
__global__ void pinger(volatile uint64_t *ask, volatile uint64_t *answer, long iters,
                       unsigned long long *ns, struct shape sh)
{
    unsigned long long sink = 0;
    uint64_t t0 = now_ns();
    for (long i = 1; i <= iters; i++) {
        ask_for(ask, (uint64_t)i, sh, &sink);
        while (*answer != (uint64_t)i)
            ;
    }
    *ns = now_ns() - t0 + (sink == ~0ull); /* the tickets are used */
}

/* The other side: wait for i in our own memory, then ask for the answer. */
__global__ void ponger(volatile uint64_t *ask, volatile uint64_t *seen, long iters,
                       struct shape sh)
{
    unsigned long long sink = 0;
    for (long i = 1; i <= iters; i++) {
        while (*seen != (uint64_t)i)
            ;
        ask_for(ask, (uint64_t)i, sh, &sink);
    }
    if (sink == ~0ull)
        *(volatile uint64_t *)seen = 0;
}

__global__ void store_word(uint64_t *p, uint64_t v) { *(volatile uint64_t *)p = v; }

/* The value, then the asker's completion word, as a proxy's kernel that
 * completes its own request would. */
__global__ void store_word_done(uint64_t *p, uint64_t v, uint64_t *done)
{
    *(volatile uint64_t *)p = v;
    __threadfence_system();
    *(volatile uint64_t *)done = v;
}

enum hop_engine { HOP_MEMOP, HOP_COPY, HOP_KERNEL, HOP_MEMOP_SYNC, HOP_COPY_DEV, HOP_ENGINES };
static const char *const hop_names[HOP_ENGINES] = {"memop", "copy", "kernel", "memop-sync",
                                                   "copy-dev"};

enum { SHAPE_TICKET = 1, SHAPE_LINE = 2, SHAPE_DONE = 4, SHAPE_BATCH = 8, SHAPE_INSIDE = 16 };
static const struct {
    const char *name;
    enum hop_engine engine;
    unsigned parts;
} shapes[] = {{"ticket", HOP_MEMOP, SHAPE_TICKET},
              {"line", HOP_MEMOP, SHAPE_LINE},
              {"done", HOP_MEMOP, SHAPE_DONE},
              {"ring", HOP_MEMOP, SHAPE_TICKET | SHAPE_LINE | SHAPE_DONE},
              {"done-batch", HOP_MEMOP, SHAPE_DONE | SHAPE_BATCH},
              {"done", HOP_COPY, SHAPE_DONE},
              {"done", HOP_KERNEL, SHAPE_DONE},
              {"done-inside", HOP_KERNEL, SHAPE_DONE | SHAPE_INSIDE}};

/* Both sides on GPU 0 (--one-gpu). */
static int one_gpu;
static int side_device(int g) { return one_gpu ? 0 : g; }

/* A host thread standing in for a proxy: sees requests in `ask`, writes
 * each value into `target` (the other GPU's word) on `stream`. */
struct relay {
    int device;
    volatile uint64_t *ask;
    uint64_t *target;
    uint64_t *values; /* host-pinned, one per request, for the copy engine */
    uint64_t *dev_values; /* the same in this GPU's memory (copy-dev), or NULL */
    cudaStream_t stream;
    long iters;
    enum hop_engine engine;
    uint64_t *done; /* hop-ENGINE+done: the asking GPU's completion word, or NULL */
    unsigned parts; /* SHAPE_BATCH, SHAPE_INSIDE: how done is written */
};

static void *relay_main(void *arg)
{
    struct relay *r = (struct relay *)arg;
    uint64_t seen = 0;

    CHECK(cudaSetDevice(r->device));
    while (seen < (uint64_t)r->iters) {
        uint64_t v = *r->ask;
        if (v == seen)
            continue;
        seen = v;
        bool done_written = r->done == NULL;
        switch (r->engine) {
        case HOP_MEMOP:
        case HOP_MEMOP_SYNC:
            if (r->done != NULL && (r->parts & SHAPE_BATCH)) {
                CUstreamBatchMemOpParams ops[2];
                memset(ops, 0, sizeof(ops));
                ops[0].writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_64;
                ops[0].writeValue.address = (CUdeviceptr)(uintptr_t)r->target;
                ops[0].writeValue.value64 = v;
                ops[1].writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_64;
                ops[1].writeValue.address = (CUdeviceptr)(uintptr_t)r->done;
                ops[1].writeValue.value64 = v;
                CU_CHECK(cu.batchMemOp((CUstream)r->stream, 2, ops, 0));
                done_written = true;
            } else {
                CU_CHECK(cu.writeValue64((CUstream)r->stream, (CUdeviceptr)(uintptr_t)r->target,
                                         v, 0));
            }
            break;
        case HOP_COPY:
            r->values[v] = v;
            CHECK(cudaMemcpyAsync(r->target, &r->values[v], sizeof(uint64_t),
                                  cudaMemcpyHostToDevice, r->stream));
            break;
        case HOP_COPY_DEV:
            CHECK(cudaMemcpyAsync(r->target, &r->dev_values[v], sizeof(uint64_t),
                                  cudaMemcpyDeviceToDevice, r->stream));
            break;
        default:
            if (r->done != NULL && (r->parts & SHAPE_INSIDE)) {
                store_word_done<<<1, 1, 0, r->stream>>>(r->target, v, r->done);
                done_written = true;
            } else {
                store_word<<<1, 1, 0, r->stream>>>(r->target, v);
            }
            CHECK(cudaGetLastError());
            break;
        }
        if (!done_written)
            CU_CHECK(cu.writeValue64((CUstream)r->stream, (CUdeviceptr)(uintptr_t)r->done, v, 0));
        if (r->engine == HOP_MEMOP_SYNC)
            CHECK(cudaStreamSynchronize(r->stream));
    }
    CHECK(cudaStreamSynchronize(r->stream));
    return NULL;
}

/* Half a round trip in microseconds; parts: the SHAPE_ bits (TICKET and
 * LINE with memop only). */
static double hop(enum hop_engine engine, long iters, unsigned parts)
{
    uint64_t *word[2], *ask, *values[2], *dev_values[2] = {NULL, NULL}, *done[2], *lines;
    unsigned long long *tails;
    struct shape sh[2];
    unsigned long long *ns, host_ns = 0;
    cudaStream_t kstream[2], rstream[2];
    struct relay relays[2];
    pthread_t threads[2];

    CHECK(cudaHostAlloc((void **)&ask, 2 * 64, cudaHostAllocMapped));
    memset(ask, 0, 2 * 64);
    CHECK(cudaHostAlloc((void **)&tails, 2 * 64, cudaHostAllocMapped));
    memset(tails, 0, 2 * 64);
    CHECK(cudaHostAlloc((void **)&lines, 2 * 128, cudaHostAllocMapped));
    memset(lines, 0, 2 * 128);
    for (int g = 0; g < 2; g++) {
        CHECK(cudaSetDevice(side_device(g)));
        CHECK(cudaMalloc(&word[g], sizeof(uint64_t)));
        CHECK(cudaMemset(word[g], 0, sizeof(uint64_t)));
        CHECK(cudaMalloc(&done[g], sizeof(uint64_t)));
        CHECK(cudaMemset(done[g], 0, sizeof(uint64_t)));
        sh[g].tail = parts & SHAPE_TICKET ? tails + 8 * g : NULL;
        sh[g].line = parts & SHAPE_LINE ? lines + 16 * g : NULL;
        sh[g].done = parts & SHAPE_DONE ? done[g] : NULL;
        CHECK(cudaHostAlloc((void **)&values[g], (size_t)(iters + 1) * sizeof(uint64_t), 0));
        if (engine == HOP_COPY_DEV) {
            for (long i = 0; i <= iters; i++)
                values[g][i] = (uint64_t)i;
            CHECK(cudaMalloc(&dev_values[g], (size_t)(iters + 1) * sizeof(uint64_t)));
            CHECK(cudaMemcpy(dev_values[g], values[g], (size_t)(iters + 1) * sizeof(uint64_t),
                             cudaMemcpyHostToDevice));
        }
        CHECK(cudaStreamCreateWithFlags(&kstream[g], cudaStreamNonBlocking));
        CHECK(cudaStreamCreateWithFlags(&rstream[g], cudaStreamNonBlocking));
        CHECK(cudaDeviceSynchronize());
    }
    CHECK(cudaSetDevice(0));
    CHECK(cudaMalloc(&ns, sizeof(*ns)));
    for (int g = 0; g < 2; g++) {
        /* GPU g's requests are written into the other GPU's word. */
        relays[g] = (struct relay){side_device(g), ask + 8 * g, word[1 - g], values[g],
                                   dev_values[g],  rstream[g],  iters,      engine,
                                   parts & SHAPE_DONE ? done[g] : NULL, parts};
        pthread_create(&threads[g], NULL, relay_main, &relays[g]);
    }
    CHECK(cudaSetDevice(side_device(1)));
    ponger<<<1, 1, 0, kstream[1]>>>(ask + 8, word[1], iters, sh[1]);
    CHECK(cudaGetLastError());
    CHECK(cudaSetDevice(0));
    pinger<<<1, 1, 0, kstream[0]>>>(ask, word[0], iters, ns, sh[0]);
    CHECK(cudaGetLastError());
    CHECK(cudaStreamSynchronize(kstream[0]));
    CHECK(cudaMemcpy(&host_ns, ns, sizeof(host_ns), cudaMemcpyDeviceToHost));
    for (int g = 0; g < 2; g++)
        pthread_join(threads[g], NULL);
    for (int g = 0; g < 2; g++) {
        CHECK(cudaSetDevice(side_device(g)));
        CHECK(cudaStreamSynchronize(kstream[g]));
        CHECK(cudaStreamDestroy(kstream[g]));
        CHECK(cudaStreamDestroy(rstream[g]));
        CHECK(cudaFree(word[g]));
        CHECK(cudaFree(done[g]));
        CHECK(cudaFreeHost(values[g]));
        if (dev_values[g] != NULL)
            CHECK(cudaFree(dev_values[g]));
    }
    CHECK(cudaSetDevice(0));
    CHECK(cudaFree(ns));
    CHECK(cudaFreeHost(ask));
    CHECK(cudaFreeHost(tails));
    CHECK(cudaFreeHost(lines));
    return (double)host_ns / 1e3 / (2.0 * (double)iters);
}

/* Spins on the legacy default stream until *word is 1 or 2 s have gone by;
 * *saw says which. */
__global__ void legacy_spin(volatile uint64_t *word, int *saw)
{
    uint64_t t0 = now_ns();
    while (*word != 1 && now_ns() - t0 < 2000000000ull)
        ;
    *saw = *word == 1;
}

struct legacy_writer {
    uint64_t *word;
    bool second_context;
    double us;
};

static void *legacy_write(void *arg)
{
    struct legacy_writer *w = (struct legacy_writer *)arg;
    CUcontext ctx = NULL;
    uint64_t one = 1; /* pageable, as a provider's bounce would be */
    struct timespec a, b;

    CHECK(cudaSetDevice(0));
    if (w->second_context) {
        CU_CHECK(cu.ctxCreate(&ctx, NULL, 0, 0));
        CU_CHECK(cu.ctxSetCurrent(ctx));
    }
    clock_gettime(CLOCK_MONOTONIC, &a);
    cudaError_t err = cudaMemcpy(w->word, &one, sizeof(one), cudaMemcpyHostToDevice);
    clock_gettime(CLOCK_MONOTONIC, &b);
    w->us = (double)(b.tv_sec - a.tv_sec) * 1e6 + (double)(b.tv_nsec - a.tv_nsec) / 1e3;
    if (err != cudaSuccess) {
        fprintf(stderr, "proxy_floor: cudaMemcpy in the %s context failed: %s\n",
                w->second_context ? "second" : "primary", cudaGetErrorString(err));
        w->us = -1;
    }
    if (ctx != NULL)
        CU_CHECK(cu.ctxDestroy(ctx));
    return NULL;
}

/* A word of device memory from the virtual memory API, as ushmem's heap. */
static uint64_t *vmm_word(void)
{
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof(prop));
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    size_t gran = 0;
    CU_CHECK(cu.memGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    CUmemGenericAllocationHandle handle;
    CU_CHECK(cu.memCreate(&handle, gran, &prop, 0));
    CUdeviceptr va;
    CU_CHECK(cu.memAddressReserve(&va, gran, gran, 0, 0));
    CU_CHECK(cu.memMap(va, gran, 0, handle, 0));
    CUmemAccessDesc access;
    memset(&access, 0, sizeof(access));
    access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    access.location.id = 0;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    CU_CHECK(cu.memSetAccess(va, gran, &access, 1));
    return (uint64_t *)(uintptr_t)va;
}

static void legacy(bool second_context, double *us_p, int *saw_p)
{
    int *saw;
    struct legacy_writer w;
    pthread_t thread;

    CHECK(cudaSetDevice(0));
    uint64_t *word = vmm_word();
    CHECK(cudaMemset(word, 0, sizeof(uint64_t)));
    CHECK(cudaMallocHost(&saw, sizeof(*saw)));
    *saw = -1;
    CHECK(cudaDeviceSynchronize());
    legacy_spin<<<1, 1>>>(word, saw); /* the legacy default stream */
    CHECK(cudaGetLastError());
    struct timespec pause = {0, 100 * 1000 * 1000}; /* the kernel is running */
    nanosleep(&pause, NULL);
    w = (struct legacy_writer){word, second_context, 0};
    pthread_create(&thread, NULL, legacy_write, &w);
    pthread_join(thread, NULL);
    CHECK(cudaDeviceSynchronize());
    *us_p = w.us;
    *saw_p = *saw;
    CHECK(cudaFreeHost(saw));
}

int main(int argc, char **argv)
{
    long iters = 2000;
    int ngpus = 0, can01 = 0, can10 = 0;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--iters") == 0 && i + 1 < argc &&
            (iters = strtol(argv[i + 1], NULL, 10)) > 0) {
            i++;
        } else if (strcmp(argv[i], "--one-gpu") == 0) {
            one_gpu = 1;
        } else {
            fprintf(stderr, "usage: proxy_floor [--iters N] [--one-gpu]\n");
            return 2;
        }
    }
    if (cudaGetDeviceCount(&ngpus) != cudaSuccess || ngpus < (one_gpu ? 1 : 2)) {
        printf("proxy_floor: needs %s; skipped\n", one_gpu ? "a GPU" : "two GPUs");
        return 77;
    }
    if (!one_gpu) {
        CHECK(cudaDeviceCanAccessPeer(&can01, 0, 1));
        CHECK(cudaDeviceCanAccessPeer(&can10, 1, 0));
        if (!can01 || !can10) {
            printf("proxy_floor: GPUs 0 and 1 cannot access each other's memory; skipped\n");
            return 77;
        }
    }
    load_driver();
    for (int g = 0; g < (one_gpu ? 1 : 2); g++) {
        CHECK(cudaSetDevice(g));
        if (!one_gpu)
            CHECK(cudaDeviceEnablePeerAccess(1 - g, 0));
        /* Every kernel loaded now: with lazy loading, loading one while a
         * spinning kernel holds the device can wait for it forever. */
        uint64_t *scratch;
        CHECK(cudaMalloc(&scratch, 2 * sizeof(uint64_t)));
        store_word<<<1, 1>>>(scratch, 0);
        store_word_done<<<1, 1>>>(scratch, 0, scratch);
        /* A copy within the GPU is a kernel of the driver's. */
        CHECK(cudaMemcpy(scratch + 1, scratch, sizeof(uint64_t), cudaMemcpyDeviceToDevice));
        CHECK(cudaDeviceSynchronize());
        /* The spinning ones too: with one GPU, the second side's kernel is
         * launched while the first spins. */
        cudaFuncAttributes attr;
        CHECK(cudaFuncGetAttributes(&attr, pinger));
        CHECK(cudaFuncGetAttributes(&attr, ponger));
        CHECK(cudaFuncGetAttributes(&attr, legacy_spin));
        CHECK(cudaFree(scratch));
    }
    printf("# proxy_floor,raw,%d\n", one_gpu ? 1 : 2);
    printf("what,value,unit\n");
    for (int e = 0; e < HOP_ENGINES; e++) {
        hop((enum hop_engine)e, iters / 10 + 1, 0); /* warm-up */
        printf("hop-%s,%.2f,us\n", hop_names[e], hop((enum hop_engine)e, iters, 0));
        fflush(stdout);
    }
    for (size_t k = 0; k < sizeof(shapes) / sizeof(shapes[0]); k++) {
        hop(shapes[k].engine, iters / 10 + 1, shapes[k].parts);
        printf("hop-%s+%s,%.2f,us\n", hop_names[shapes[k].engine], shapes[k].name,
               hop(shapes[k].engine, iters, shapes[k].parts));
        fflush(stdout);
    }
    for (int second = 0; second < 2; second++) {
        double us;
        int saw;
        legacy(second != 0, &us, &saw);
        printf("legacy-%s,%.1f,us\n", second ? "second" : "primary", us);
        printf("legacy-%s-kernel-saw,%d,bool\n", second ? "second" : "primary", saw);
        fflush(stdout);
    }
    return 0;
}
