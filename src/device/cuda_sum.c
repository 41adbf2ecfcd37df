/* The cuda backend's reductions on a stream (sum, prod, min, max, and, or,
 * xor), for the stream-ordered reductions and reduce-scatters: kernels
 * written in PTX generated here and JIT-compiled by the driver when the
 * device opens, with the backend's other kernels (ushmemi_cuda_kernels_load,
 * cuda_amo.c says why), each combining up to USHMEMI_STREAM_REDUCE_SOURCES
 * arrays element by element into one, reading peers' arrays through their
 * mapped heaps. Each element is combined in source order, so every PE that
 * reduces the same sources gets the same bits. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/log.h"
#include "cuda_private.h"

#define REDUCE_THREADS 256

/* What a kernel is told to do: an enum ushmemi_reduce_op, or min and max
 * of unsigned integers (the integer kernels load sign-extended, which
 * keeps the unsigned order of the element's width, so both share them). */
enum { OP_UMIN = USHMEMI_REDUCE_OPS, OP_UMAX, KERNEL_OPS };

/* How a kernel moves and combines one kind: the PTX types of its loads and
 * stores, of its registers, of add and mul, of the signed and unsigned
 * comparisons (min, max, setp), and of and, or, xor. Loads of fewer than
 * 32 bits sign-extend into 32-bit registers and stores keep the low bits,
 * so sums and products wrap at the element's width. A complex element is
 * two of its floats. Only the kinds that have kernels of their own
 * (has_kernel) are filled in. */
static const struct kind_ptx {
    const char *ld, *st, *reg, *arith, *scmp, *ucmp, *bits;
    unsigned shift; /* log2 of the element's size */
    bool is_float, is_complex;
} kinds[USHMEMI_REDUCE_KINDS] = {
    [USHMEMI_REDUCE_I8] = {"s8", "u8", "b32", "u32", "s32", "u32", "b32", 0, false, false},
    [USHMEMI_REDUCE_I16] = {"s16", "u16", "b32", "u32", "s32", "u32", "b32", 1, false, false},
    [USHMEMI_REDUCE_I32] = {"u32", "u32", "b32", "u32", "s32", "u32", "b32", 2, false, false},
    [USHMEMI_REDUCE_I64] = {"u64", "u64", "b64", "u64", "s64", "u64", "b64", 3, false, false},
    [USHMEMI_REDUCE_F32] = {"f32", "f32", "f32", "f32", "f32", NULL, NULL, 2, true, false},
    [USHMEMI_REDUCE_F64] = {"f64", "f64", "f64", "f64", "f64", NULL, NULL, 3, true, false},
    [USHMEMI_REDUCE_C32] = {"f32", "f32", "f32", "f32", NULL, NULL, NULL, 3, true, true},
    [USHMEMI_REDUCE_C64] = {"f64", "f64", "f64", "f64", NULL, NULL, NULL, 4, true, true},
};

static bool has_kernel(enum ushmemi_reduce_kind kind)
{
    return kinds[kind].ld != NULL;
}

/* Whether the kernel of kind (has_kernel) carries op (a KERNEL_OPS value). */
static bool kernel_takes(enum ushmemi_reduce_kind kind, int op)
{
    if (!kinds[kind].is_float)
        return true;
    if (!kinds[kind].is_complex)
        return op <= USHMEMI_REDUCE_MAX;
    return op == USHMEMI_REDUCE_PROD;
}

/* The kernel, its op and its element count for op on count elements of
 * kind (a pair ushmemi_reduce_takes accepts): unsigned integers go to the
 * signed kernels (with OP_UMIN and OP_UMAX), a complex sum is a float sum
 * of twice as many elements. */
struct launch {
    enum ushmemi_reduce_kind kind;
    int op;
    size_t count;
};

static struct launch launch_of(enum ushmemi_reduce_op op, enum ushmemi_reduce_kind kind,
                               size_t count)
{
    struct launch l = {kind, (int)op, count};
    if (kind >= USHMEMI_REDUCE_U8 && kind <= USHMEMI_REDUCE_U64) {
        l.kind = kind - USHMEMI_REDUCE_U8 + USHMEMI_REDUCE_I8;
        if (op == USHMEMI_REDUCE_MIN)
            l.op = OP_UMIN;
        else if (op == USHMEMI_REDUCE_MAX)
            l.op = OP_UMAX;
    } else if (kind >= USHMEMI_REDUCE_C32 && op == USHMEMI_REDUCE_SUM) {
        l.kind = kind == USHMEMI_REDUCE_C32 ? USHMEMI_REDUCE_F32 : USHMEMI_REDUCE_F64;
        l.count = 2 * count;
    }
    return l;
}

const char *ushmemi_cuda_reduce_kernel(enum ushmemi_reduce_op op, enum ushmemi_reduce_kind kind,
                                       unsigned *code_p, unsigned *per_p)
{
    static char name[40];
    if (!ushmemi_reduce_takes(op, kind))
        return NULL;
    struct launch l = launch_of(op, kind, 1);
    snprintf(name, sizeof(name), "ushmemi_reduce_%s", ushmemi_reduce_kind_name(l.kind));
    *code_p = (unsigned)l.op;
    *per_p = (unsigned)l.count;
    return name;
}

/* acc (%v0, and %w0 for a complex) = op(acc, source s's element), when the
 * source is there (%p<s>). */
static void combine(FILE *f, int op, const struct kind_ptx *k, int s)
{
    switch (op) {
    case USHMEMI_REDUCE_SUM:
        fprintf(f, "    @%%p%d add%s.%s %%v0, %%v0, %%v%d;\n", s, k->is_float ? ".rn" : "",
                k->arith, s);
        return;
    case USHMEMI_REDUCE_PROD:
        if (!k->is_complex) {
            fprintf(f, "    @%%p%d mul%s.%s %%v0, %%v0, %%v%d;\n", s,
                    k->is_float ? ".rn" : ".lo", k->arith, s);
            return;
        }
        /* (a + bi)(c + di) = (ac - bd) + (ad + bc)i, each step rounded on
         * its own (.rn: never fused into a multiply-add), as C does for
         * finite values. */
        fprintf(f,
                "    @%%p%d mul.rn.%s %%t0, %%v0, %%v%d;\n"
                "    @%%p%d mul.rn.%s %%t1, %%w0, %%w%d;\n"
                "    @%%p%d mul.rn.%s %%t2, %%v0, %%w%d;\n"
                "    @%%p%d mul.rn.%s %%t3, %%w0, %%v%d;\n"
                "    @%%p%d sub.rn.%s %%v0, %%t0, %%t1;\n"
                "    @%%p%d add.rn.%s %%w0, %%t2, %%t3;\n",
                s, k->arith, s, s, k->arith, s, s, k->arith, s, s, k->arith, s, s, k->arith, s,
                k->arith);
        return;
    case USHMEMI_REDUCE_MIN:
    case USHMEMI_REDUCE_MAX:
        if (k->is_float) {
            /* acc < v ? acc : v, as the host's reductions compare: a NaN
             * or a signed zero goes where C's comparison sends it. */
            fprintf(f,
                    "    @%%p%d setp.%s.%s %%q, %%v0, %%v%d;\n"
                    "    @%%p%d selp.%s %%v0, %%v0, %%v%d, %%q;\n",
                    s, op == USHMEMI_REDUCE_MIN ? "lt" : "gt", k->scmp, s, s, k->scmp, s);
            return;
        }
        fprintf(f, "    @%%p%d %s.%s %%v0, %%v0, %%v%d;\n", s,
                op == USHMEMI_REDUCE_MIN ? "min" : "max", k->scmp, s);
        return;
    case OP_UMIN:
    case OP_UMAX:
        fprintf(f, "    @%%p%d %s.%s %%v0, %%v0, %%v%d;\n", s, op == OP_UMIN ? "min" : "max",
                k->ucmp, s);
        return;
    case USHMEMI_REDUCE_AND:
    case USHMEMI_REDUCE_OR:
    case USHMEMI_REDUCE_XOR:
        fprintf(f, "    @%%p%d %s.%s %%v0, %%v0, %%v%d;\n", s, ushmemi_reduce_op_name(op), k->bits,
                s);
        return;
    }
}

/* The loop of ushmemi_reduce_<kind>(dst, s0..s7, nsrc, count, op): a
 * grid-stride loop over the elements in which each thread loads its element
 * of every source first (predicated on nsrc, so the loads are in flight
 * together) and then combines them in source order with op, one branch
 * taken alike by every thread. A kernel per kind with the op as an
 * argument, rather than one per pair, keeps the module (and the JIT time
 * that every PE pays when its device opens) at a third of the size. With
 * `in_coll` the loop is a block of its own inside the one-kernel stream
 * collective (cuda_coll.c), which passes the arguments in its parameter
 * p_x (struct coll_param: dst[0], src[], ncopy the sources, len the
 * elements, the op in the word after), and the loop's end falls through
 * to the collective's second round. */
static void loop_ptx(FILE *f, enum ushmemi_reduce_kind kind, bool in_coll)
{
    const struct kind_ptx *k = &kinds[kind];
    const int n = USHMEMI_STREAM_REDUCE_SOURCES;
    unsigned half = (1u << k->shift) / 2; /* where a complex element's imaginary part is */

    fprintf(f,
            "    .reg .pred %%p<%d>;\n    .reg .pred %%q;\n    .reg .pred %%o<%d>;\n"
            "    .reg .b32 %%r<6>;\n    .reg .b64 %%rd<%d>;\n    .reg .%s %%v<%d>;\n",
            n, KERNEL_OPS, 2 * n + 6, k->reg, n);
    if (k->is_complex)
        fprintf(f, "    .reg .%s %%w<%d>;\n    .reg .%s %%t<4>;\n", k->reg, n, k->reg);
    /* %rd0 dst, %rd1.. the sources, then the count, the element index, its
     * step, its byte offset, and an address per source and the dst's. */
    int count = n + 1, idx = n + 2, step = n + 3, off = n + 4, addr = n + 5;
    if (in_coll) {
        fprintf(f, "    ld.param.u64 %%rd0, [p_x+%d];\n    cvta.to.global.u64 %%rd0, %%rd0;\n",
                USHMEMI_CUDA_COLL_AT_DST);
        for (int s = 0; s < n; s++)
            fprintf(f,
                    "    ld.param.u64 %%rd%d, [p_x+%d];\n    cvta.to.global.u64 %%rd%d, %%rd%d;\n",
                    s + 1, USHMEMI_CUDA_COLL_AT_SRC + 8 * s, s + 1, s + 1);
        fprintf(f,
                "    ld.param.u32 %%r0, [p_x+%d];\n    ld.param.u64 %%rd%d, [p_x+%d];\n"
                "    ld.param.u32 %%r5, [p_x+%d];\n",
                USHMEMI_CUDA_COLL_AT_NSRC, count, USHMEMI_CUDA_COLL_AT_COUNT,
                USHMEMI_CUDA_COLL_AT_OP);
    } else {
        fprintf(f, "    ld.param.u64 %%rd0, [p_dst];\n    cvta.to.global.u64 %%rd0, %%rd0;\n");
        for (int s = 0; s < n; s++)
            fprintf(f,
                    "    ld.param.u64 %%rd%d, [p_s%d];\n    cvta.to.global.u64 %%rd%d, %%rd%d;\n",
                    s + 1, s, s + 1, s + 1);
        fprintf(f,
                "    ld.param.u32 %%r0, [p_nsrc];\n    ld.param.u64 %%rd%d, [p_count];\n"
                "    ld.param.u32 %%r5, [p_op];\n",
                count);
    }
    for (int s = 1; s < n; s++)
        fprintf(f, "    setp.gt.u32 %%p%d, %%r0, %d;\n", s, s);
    int last = -1; /* the kernel's last op, whose combining the others jump past */
    for (int op = 0; op < KERNEL_OPS; op++) {
        if (!kernel_takes(kind, op))
            continue;
        fprintf(f, "    setp.eq.u32 %%o%d, %%r5, %d;\n", op, op);
        last = op;
    }
    fprintf(f,
            "    mov.u32 %%r1, %%ctaid.x;\n    mov.u32 %%r2, %%ntid.x;\n"
            "    mov.u32 %%r3, %%tid.x;\n    mov.u32 %%r4, %%nctaid.x;\n"
            "    mul.wide.u32 %%rd%d, %%r1, %%r2;\n"
            "    cvt.u64.u32 %%rd%d, %%r3;\n"
            "    add.u64 %%rd%d, %%rd%d, %%rd%d;\n"
            "    mul.wide.u32 %%rd%d, %%r4, %%r2;\n"
            "LOOP:\n"
            "    setp.ge.u64 %%p0, %%rd%d, %%rd%d;\n"
            "    @%%p0 bra DONE;\n"
            "    shl.b64 %%rd%d, %%rd%d, %u;\n",
            idx, off, idx, idx, off, step, idx, count, off, idx, k->shift);
    for (int s = 0; s < n; s++) {
        char guard[8] = "";
        if (s > 0)
            snprintf(guard, sizeof(guard), "@%%p%d ", s);
        fprintf(f, "    %sadd.u64 %%rd%d, %%rd%d, %%rd%d;\n    %sld.global.%s %%v%d, [%%rd%d];\n",
                guard, addr + s, s + 1, off, guard, k->ld, s, addr + s);
        if (k->is_complex)
            fprintf(f, "    %sld.global.%s %%w%d, [%%rd%d+%u];\n", guard, k->ld, s, addr + s,
                    half);
    }
    for (int op = 0; op < last; op++)
        if (kernel_takes(kind, op))
            fprintf(f, "    @%%o%d bra.uni OP%d;\n", op, op);
    for (int op = last; op >= 0; op--) {
        if (!kernel_takes(kind, op))
            continue;
        fprintf(f, "OP%d:\n", op);
        for (int s = 1; s < n; s++)
            combine(f, op, k, s);
        if (op != 0)
            fprintf(f, "    bra.uni STORE;\n");
    }
    fprintf(f, "STORE:\n    add.u64 %%rd%d, %%rd0, %%rd%d;\n    st.global.%s [%%rd%d], %%v0;\n",
            addr + n, off, k->st, addr + n);
    if (k->is_complex)
        fprintf(f, "    st.global.%s [%%rd%d+%u], %%w0;\n", k->st, addr + n, half);
    fprintf(f,
            "    add.u64 %%rd%d, %%rd%d, %%rd%d;\n"
            "    bra.uni LOOP;\n"
            "DONE:\n",
            idx, idx, step);
}

static void kernel_ptx(FILE *f, enum ushmemi_reduce_kind kind)
{
    fprintf(f, ".visible .entry ushmemi_reduce_%s(.param .u64 p_dst",
            ushmemi_reduce_kind_name(kind));
    for (int s = 0; s < USHMEMI_STREAM_REDUCE_SOURCES; s++)
        fprintf(f, ", .param .u64 p_s%d", s);
    fprintf(f, ", .param .u32 p_nsrc, .param .u64 p_count, .param .u32 p_op)\n{\n");
    loop_ptx(f, kind, false);
    fprintf(f, "    ret;\n}\n");
}

/* USHMEMI_CUDA_REDUCE_COLL_<kind>: the stream collective's head (its first
 * round), the loop as a block of its own (its registers apart from the
 * frame's, its braces indented), the tail (the second round). They more
 * than double the module (36.7 to 88.7 KB; ptxas for sm_90 0.13 to 0.21 s
 * here), which the driver compiles once per PE when its device opens. */
static void coll_kernel_ptx(FILE *f, enum ushmemi_reduce_kind kind)
{
    fprintf(f, ".visible .entry " USHMEMI_CUDA_REDUCE_COLL "_%s(.param .align 8 .b8 p_x[%d])\n{\n",
            ushmemi_reduce_kind_name(kind), USHMEMI_CUDA_COLL_PARAM_BYTES);
    fputs(ushmemi_cuda_coll_frame(false), f);
    fputs("    {\n", f);
    loop_ptx(f, kind, true);
    fputs("    }\n", f);
    fputs(ushmemi_cuda_coll_frame(true), f);
}

char *ushmemi_cuda_reduce_ptx(size_t *len_p)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (f == NULL)
        return NULL;
    fprintf(f, ".version 7.0\n.target sm_70\n.address_size 64\n"
               ".global .align 4 .u32 " USHMEMI_CUDA_REDUCE_COLL "_counts[%u];\n",
            USHMEMI_CUDA_COLL_SLOTS);
    for (int kind = 0; kind < USHMEMI_REDUCE_KINDS; kind++) {
        if (has_kernel(kind)) {
            kernel_ptx(f, kind);
            coll_kernel_ptx(f, kind);
        }
    }
    bool ok = !ferror(f);
    if (fclose(f) != 0 || !ok) {
        free(buf);
        return NULL;
    }
    *len_p = len;
    return buf;
}

ushmem_status_t ushmemi_cuda_reduce_load(struct ushmemi_device *dev)
{
    size_t len = 0;
    char *ptx = ushmemi_cuda_reduce_ptx(&len);
    if (ptx == NULL) {
        ushmemi_error("cuda backend: no memory to write the stream reduction kernels' PTX");
        return USHMEM_ERR_NO_MEMORY;
    }
    CUresult r = ushmemi_cu.cuModuleLoadData(&dev->reduce_module, ptx);
    free(ptx);
    if (r != CUDA_SUCCESS)
        return ushmemi_cuda_fail("cuModuleLoadData", r, "the stream reduction kernels (PTX 7.0, "
                                 "sm_70, %zu bytes) on device %d", len, dev->ordinal);
    for (int kind = 0; kind < USHMEMI_REDUCE_KINDS; kind++) {
        dev->reduce_fn[kind] = dev->reduce_coll_fn[kind] = NULL;
        if (!has_kernel(kind))
            continue;
        char name[40], coll[48];
        snprintf(name, sizeof(name), "ushmemi_reduce_%s", ushmemi_reduce_kind_name(kind));
        snprintf(coll, sizeof(coll), USHMEMI_CUDA_REDUCE_COLL "_%s",
                 ushmemi_reduce_kind_name(kind));
        const char *call = "cuModuleGetFunction", *what = name;
        r = ushmemi_cu.cuModuleGetFunction(&dev->reduce_fn[kind], dev->reduce_module, name);
        if (r == CUDA_SUCCESS) {
            what = coll;
            r = ushmemi_cu.cuModuleGetFunction(&dev->reduce_coll_fn[kind], dev->reduce_module,
                                               coll);
        }
        /* A complex product's registers leave fewer than 1024 threads a
         * block on an H200. */
        int most = 0;
        if (r == CUDA_SUCCESS) {
            call = "cuFuncGetAttribute(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)";
            r = ushmemi_cu.cuFuncGetAttribute(&most, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
                                              dev->reduce_coll_fn[kind]);
        }
        if (r != CUDA_SUCCESS) {
            ushmemi_cu.cuModuleUnload(dev->reduce_module);
            dev->reduce_module = NULL;
            memset(dev->reduce_fn, 0, sizeof(dev->reduce_fn));
            memset(dev->reduce_coll_fn, 0, sizeof(dev->reduce_coll_fn));
            return ushmemi_cuda_fail(call, r, "%s on device %d", what, dev->ordinal);
        }
        dev->reduce_coll_threads[kind] =
            most >= 1024 ? 1024 : most < 32 ? 32 : (unsigned)most / 32 * 32;
    }
    int sms = 0;
    r = ushmemi_cu.cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
                                        dev->cu_dev);
    dev->reduce_max_blocks = r == CUDA_SUCCESS && sms > 0 ? (unsigned)sms * 8 : 1024;
    return USHMEM_OK;
}

CUfunction ushmemi_cuda_reduce_coll_fn(struct ushmemi_device *dev, enum ushmemi_reduce_op op,
                                       enum ushmemi_reduce_kind kind, size_t count,
                                       unsigned *code_p, size_t *count_p, unsigned *threads_p)
{
    if (!ushmemi_reduce_takes(op, kind))
        return NULL;
    struct launch l = launch_of(op, kind, count);
    *code_p = (unsigned)l.op;
    *count_p = l.count;
    *threads_p = dev->reduce_coll_threads[l.kind];
    return dev->reduce_coll_fn[l.kind];
}

ushmem_status_t ushmemi_cuda_stream_reduce(struct ushmemi_device *dev, void *stream, void *dst,
                                           const void *const *srcs, int nsrc,
                                           enum ushmemi_reduce_op op,
                                           enum ushmemi_reduce_kind kind, size_t count)
{
    if (nsrc < 1 || nsrc > USHMEMI_STREAM_REDUCE_SOURCES) {
        ushmemi_error("cuda backend: a stream reduction of %d sources refused (1 to %d)", nsrc,
                      USHMEMI_STREAM_REDUCE_SOURCES);
        return USHMEM_ERR_INVALID_PARAM;
    }
    if (!ushmemi_reduce_takes(op, kind)) {
        ushmemi_error("cuda backend: no stream reduction %s of %s elements (integers take every "
                      "op, floats sum, prod, min and max, complex numbers sum and prod)",
                      ushmemi_reduce_op_name(op), ushmemi_reduce_kind_name(kind));
        return USHMEM_ERR_INVALID_PARAM;
    }
    if (count == 0)
        return USHMEM_OK;
    ushmem_status_t status = ushmemi_cuda_current(dev, "stream reduction");
    if (status != USHMEM_OK)
        return status;

    struct launch l = launch_of(op, kind, count);
    CUdeviceptr out = (CUdeviceptr)(uintptr_t)dst, in[USHMEMI_STREAM_REDUCE_SOURCES];
    void *params[USHMEMI_STREAM_REDUCE_SOURCES + 4];
    unsigned n = (unsigned)nsrc, code = (unsigned)l.op;
    uint64_t elements = l.count;
    params[0] = &out;
    for (int s = 0; s < USHMEMI_STREAM_REDUCE_SOURCES; s++) {
        in[s] = (CUdeviceptr)(uintptr_t)srcs[s < nsrc ? s : 0];
        params[s + 1] = &in[s];
    }
    params[USHMEMI_STREAM_REDUCE_SOURCES + 1] = &n;
    params[USHMEMI_STREAM_REDUCE_SOURCES + 2] = &elements;
    params[USHMEMI_STREAM_REDUCE_SOURCES + 3] = &code;
    size_t want = (l.count + REDUCE_THREADS - 1) / REDUCE_THREADS;
    unsigned blocks = want < dev->reduce_max_blocks ? (unsigned)want : dev->reduce_max_blocks;
    CUresult r = ushmemi_cu.cuLaunchKernel(dev->reduce_fn[l.kind], blocks, 1, 1, REDUCE_THREADS,
                                           1, 1, 0, (CUstream)stream, params, NULL);
    if (r != CUDA_SUCCESS)
        return ushmemi_cuda_fail("cuLaunchKernel", r, "%s of %d arrays of %zu %s into %p, "
                                 "stream %p", ushmemi_reduce_op_name(op), nsrc, count,
                                 ushmemi_reduce_kind_name(kind), dst, stream);
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

void ushmemi_cuda_reduce_close(struct ushmemi_device *dev)
{
    if (dev->reduce_module == NULL)
        return;
    ushmemi_cu.cuModuleUnload(dev->reduce_module);
    dev->reduce_module = NULL;
}
