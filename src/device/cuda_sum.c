/* The cuda backend's sum on a stream, for the stream-ordered reductions: a
 * kernel per element kind, written in PTX generated here and JIT-compiled by
 * the driver on first use (as the proxy's atomic kernel is), that adds up to
 * USHMEMI_STREAM_SUM_SOURCES arrays element by element into one, reading
 * peers' arrays through their mapped heaps. Each element is added in source
 * order, so every PE that sums the same sources gets the same bits. */
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>

#include "../common/log.h"
#include "cuda_private.h"

#define SUM_THREADS 256

static const struct {
    const char *name;  /* kernel ushmemi_sum_<name> */
    const char *type;  /* PTX type of ld, st and add */
    const char *acc;   /* registers: accumulator, loaded value */
    const char *value;
    const char *add;   /* the add instruction */
    unsigned shift;    /* log2 of the element size */
} sum_kinds[USHMEMI_SUM_KINDS] = {
    [USHMEMI_SUM_I8] = {"i8", "u8", "%r5", "%r6", "add.u32", 0},
    [USHMEMI_SUM_I16] = {"i16", "u16", "%r5", "%r6", "add.u32", 1},
    [USHMEMI_SUM_I32] = {"i32", "u32", "%r5", "%r6", "add.u32", 2},
    [USHMEMI_SUM_I64] = {"i64", "u64", "%rd20", "%rd21", "add.u64", 3},
    [USHMEMI_SUM_F32] = {"f32", "f32", "%f1", "%f2", "add.rn.f32", 2},
    [USHMEMI_SUM_F64] = {"f64", "f64", "%fd1", "%fd2", "add.rn.f64", 3},
};

/* Appends printf-style text to buf; false once it would not fit. */
static bool put(char *buf, size_t cap, size_t *len_p, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static bool put(char *buf, size_t cap, size_t *len_p, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf + *len_p, cap - *len_p, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= cap - *len_p)
        return false;
    *len_p += (size_t)n;
    return true;
}

/* The module: one entry per kind, ushmemi_sum_<kind>(dst, s0..s7, nsrc,
 * count), a grid-stride loop over the elements. Integer loads of fewer than
 * 32 bits zero-extend into 32-bit registers and stores keep the low bits,
 * which is two's complement addition at the element's width. */
static bool sum_ptx(char *buf, size_t cap)
{
    size_t len = 0;
    bool ok = put(buf, cap, &len, ".version 7.0\n.target sm_70\n.address_size 64\n");
    for (int k = 0; k < USHMEMI_SUM_KINDS && ok; k++) {
        const char *t = sum_kinds[k].type, *acc = sum_kinds[k].acc, *v = sum_kinds[k].value;
        ok = put(buf, cap, &len, ".visible .entry ushmemi_sum_%s(.param .u64 p_dst",
                 sum_kinds[k].name);
        for (int s = 0; s < USHMEMI_STREAM_SUM_SOURCES && ok; s++)
            ok = put(buf, cap, &len, ", .param .u64 p_s%d", s);
        ok = ok && put(buf, cap, &len,
                       ", .param .u32 p_nsrc, .param .u64 p_count)\n{\n"
                       "    .reg .pred %%p;\n    .reg .b32 %%r<8>;\n    .reg .b64 %%rd<24>;\n"
                       "    .reg .f32 %%f<4>;\n    .reg .f64 %%fd<4>;\n"
                       "    ld.param.u64 %%rd0, [p_dst];\n");
        for (int s = 0; s < USHMEMI_STREAM_SUM_SOURCES && ok; s++)
            ok = put(buf, cap, &len, "    ld.param.u64 %%rd%d, [p_s%d];\n", s + 1, s);
        ok = ok && put(buf, cap, &len,
                       "    ld.param.u32 %%r0, [p_nsrc];\n"
                       "    ld.param.u64 %%rd9, [p_count];\n"
                       "    mov.u32 %%r1, %%ctaid.x;\n    mov.u32 %%r2, %%ntid.x;\n"
                       "    mov.u32 %%r3, %%tid.x;\n    mov.u32 %%r4, %%nctaid.x;\n"
                       "    mul.wide.u32 %%rd10, %%r1, %%r2;\n"
                       "    cvt.u64.u32 %%rd11, %%r3;\n"
                       "    add.u64 %%rd10, %%rd10, %%rd11;\n"
                       "    mul.wide.u32 %%rd12, %%r4, %%r2;\n"
                       "LOOP:\n"
                       "    setp.ge.u64 %%p, %%rd10, %%rd9;\n"
                       "    @%%p bra END;\n"
                       "    shl.b64 %%rd13, %%rd10, %u;\n"
                       "    add.u64 %%rd14, %%rd1, %%rd13;\n"
                       "    ld.%s %s, [%%rd14];\n",
                       sum_kinds[k].shift, t, acc);
        for (int s = 1; s < USHMEMI_STREAM_SUM_SOURCES && ok; s++)
            ok = put(buf, cap, &len,
                     "    setp.le.u32 %%p, %%r0, %d;\n"
                     "    @%%p bra STORE;\n"
                     "    add.u64 %%rd14, %%rd%d, %%rd13;\n"
                     "    ld.%s %s, [%%rd14];\n"
                     "    %s %s, %s, %s;\n",
                     s, s + 1, t, v, sum_kinds[k].add, acc, acc, v);
        ok = ok && put(buf, cap, &len,
                       "STORE:\n"
                       "    add.u64 %%rd14, %%rd0, %%rd13;\n"
                       "    st.%s [%%rd14], %s;\n"
                       "    add.u64 %%rd10, %%rd10, %%rd12;\n"
                       "    bra LOOP;\n"
                       "END:\n"
                       "    ret;\n}\n",
                       t, acc);
    }
    return ok;
}

static ushmem_status_t sum_load(struct ushmemi_device *dev)
{
    static char ptx[24 * 1024];
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

    pthread_mutex_lock(&lock);
    bool ok = ptx[0] != '\0' || sum_ptx(ptx, sizeof(ptx));
    pthread_mutex_unlock(&lock);
    if (!ok) {
        ushmemi_error("cuda backend: the sum kernels' PTX outgrew its %zu-byte buffer",
                      sizeof(ptx));
        return USHMEM_ERR_DEVICE;
    }
    CUresult r = ushmemi_cu.cuModuleLoadData(&dev->sum_module, ptx);
    if (r != CUDA_SUCCESS)
        return ushmemi_cuda_fail("cuModuleLoadData", r, "the stream sum kernels (PTX 7.0, "
                                 "sm_70) on device %d", dev->ordinal);
    for (int k = 0; k < USHMEMI_SUM_KINDS; k++) {
        char name[32];
        snprintf(name, sizeof(name), "ushmemi_sum_%s", sum_kinds[k].name);
        r = ushmemi_cu.cuModuleGetFunction(&dev->sum_fn[k], dev->sum_module, name);
        if (r != CUDA_SUCCESS) {
            ushmemi_cu.cuModuleUnload(dev->sum_module);
            dev->sum_module = NULL;
            return ushmemi_cuda_fail("cuModuleGetFunction", r, "%s on device %d", name,
                                     dev->ordinal);
        }
    }
    int sms = 0;
    r = ushmemi_cu.cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
                                        dev->cu_dev);
    dev->sum_max_blocks = r == CUDA_SUCCESS && sms > 0 ? (unsigned)sms * 8 : 1024;
    return USHMEM_OK;
}

ushmem_status_t ushmemi_cuda_stream_sum(struct ushmemi_device *dev, void *stream, void *dst,
                                        const void *const *srcs, int nsrc,
                                        enum ushmemi_sum_kind kind, size_t count)
{
    if (nsrc < 1 || nsrc > USHMEMI_STREAM_SUM_SOURCES || (unsigned)kind >= USHMEMI_SUM_KINDS) {
        ushmemi_error("cuda backend: stream sum of %d sources, kind %d refused", nsrc, (int)kind);
        return USHMEM_ERR_INVALID_PARAM;
    }
    if (count == 0)
        return USHMEM_OK;
    ushmem_status_t status = ushmemi_cuda_current(dev, "stream sum");
    if (status != USHMEM_OK)
        return status;
    if (dev->sum_module == NULL && (status = sum_load(dev)) != USHMEM_OK)
        return status;

    CUdeviceptr out = (CUdeviceptr)(uintptr_t)dst, in[USHMEMI_STREAM_SUM_SOURCES];
    void *params[USHMEMI_STREAM_SUM_SOURCES + 3];
    unsigned n = (unsigned)nsrc;
    uint64_t elements = count;
    params[0] = &out;
    for (int s = 0; s < USHMEMI_STREAM_SUM_SOURCES; s++) {
        in[s] = (CUdeviceptr)(uintptr_t)srcs[s < nsrc ? s : 0];
        params[s + 1] = &in[s];
    }
    params[USHMEMI_STREAM_SUM_SOURCES + 1] = &n;
    params[USHMEMI_STREAM_SUM_SOURCES + 2] = &elements;
    size_t want = (count + SUM_THREADS - 1) / SUM_THREADS;
    unsigned blocks = want < dev->sum_max_blocks ? (unsigned)want : dev->sum_max_blocks;
    CUresult r = ushmemi_cu.cuLaunchKernel(dev->sum_fn[kind], blocks, 1, 1, SUM_THREADS, 1, 1, 0,
                                           (CUstream)stream, params, NULL);
    if (r != CUDA_SUCCESS)
        return ushmemi_cuda_fail("cuLaunchKernel", r, "sum of %d arrays of %zu %s into %p, "
                                 "stream %p", nsrc, count, sum_kinds[kind].name, dst, stream);
    return USHMEM_OK;
}

ushmem_status_t ushmemi_cuda_stream_alloc(struct ushmemi_device *dev, void *stream, size_t size,
                                          void **ptr_p)
{
    ushmem_status_t status = ushmemi_cuda_current(dev, "stream allocation");
    if (status != USHMEM_OK)
        return status;
    CUdeviceptr ptr = 0;
    CUresult r = ushmemi_cu.cuMemAllocAsync(&ptr, size, (CUstream)stream);
    if (r != CUDA_SUCCESS)
        return ushmemi_cuda_fail("cuMemAllocAsync", r, "%zu bytes on stream %p", size, stream);
    *ptr_p = (void *)(uintptr_t)ptr;
    return USHMEM_OK;
}

ushmem_status_t ushmemi_cuda_stream_free(struct ushmemi_device *dev, void *stream, void *ptr)
{
    ushmem_status_t status = ushmemi_cuda_current(dev, "stream free");
    if (status != USHMEM_OK)
        return status;
    CUresult r = ushmemi_cu.cuMemFreeAsync((CUdeviceptr)(uintptr_t)ptr, (CUstream)stream);
    if (r != CUDA_SUCCESS)
        return ushmemi_cuda_fail("cuMemFreeAsync", r, "%p on stream %p", ptr, stream);
    return USHMEM_OK;
}

void ushmemi_cuda_sum_close(struct ushmemi_device *dev)
{
    if (dev->sum_module == NULL)
        return;
    ushmemi_cu.cuModuleUnload(dev->sum_module);
    dev->sum_module = NULL;
}
