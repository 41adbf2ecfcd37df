/* Host RMA entry points: typed, sized and byte put/get, p/g, strided
 * iput/iget, their non-blocking forms, and shmem_fence/shmem_quiet.
 *
 * Each call takes the RMA road to its PE (road.c): on a mapped road the
 * transfer is a copy that is complete when it returns, so the non-blocking
 * forms complete at once there, which the specification allows; over the
 * fabric they complete by the next quiet. */
#include <shmem.h>
#include <stdatomic.h>
#include <stdint.h>

#include "internal.h"

/* Bytes in nelems elements of elem bytes; the job ends on overflow rather
 * than copying a wrapped length. */
static size_t span_bytes(const char *call, size_t nelems, size_t elem, int pe)
{
    if (__builtin_expect(nelems > SIZE_MAX / elem, 0))
        ushmemi_fatal(call, "%zu elements of %zu bytes to PE %d overflow size_t", nelems, elem,
                      pe);
    return nelems * elem;
}

static void put_bytes(const char *call, shmem_ctx_t ctx, void *dest, const void *source,
                      size_t nelems, size_t elem, int pe, bool nbi)
{
    ushmemi_check_init(call);
    pe = ushmemi_ctx_pe(call, ctx, pe);
    ushmemi_put(call, dest, source, span_bytes(call, nelems, elem, pe), pe, nbi);
}

static void get_bytes(const char *call, shmem_ctx_t ctx, void *dest, const void *source,
                      size_t nelems, size_t elem, int pe, bool nbi)
{
    ushmemi_check_init(call);
    pe = ushmemi_ctx_pe(call, ctx, pe);
    ushmemi_get(call, dest, source, span_bytes(call, nelems, elem, pe), pe, nbi);
}

/* Checks the whole span that a strided symmetric array covers (either
 * direction) on pe before any element moves. */
static void check_strided(const char *call, const void *addr, ptrdiff_t stride, size_t nelems,
                          size_t elem, int pe)
{
    ptrdiff_t last, last_bytes;
    if (nelems > PTRDIFF_MAX || elem > PTRDIFF_MAX ||
        __builtin_mul_overflow((ptrdiff_t)(nelems - 1), stride, &last) ||
        __builtin_mul_overflow(last, (ptrdiff_t)elem, &last_bytes))
        ushmemi_fatal(call, "%zu elements of %zu bytes with stride %td to PE %d overflow the "
                      "address space", nelems, elem, stride, pe);
    ptrdiff_t lo = last_bytes < 0 ? last_bytes : 0;
    size_t len = (size_t)(last_bytes < 0 ? -last_bytes : last_bytes) + elem;
    struct ushmemi_loc loc;
    ushmemi_locate(call, (const char *)addr + lo, len, pe, &loc);
}

/* dst and sst are strides in elements, as the specification defines them. */
static void iput_bytes(const char *call, shmem_ctx_t ctx, void *dest, const void *source,
                       ptrdiff_t dst, ptrdiff_t sst, size_t nelems, size_t elem, int pe)
{
    ushmemi_check_init(call);
    pe = ushmemi_ctx_pe(call, ctx, pe);
    if (nelems == 0) {
        ushmemi_put(call, dest, source, 0, pe, false);
        return;
    }
    check_strided(call, dest, dst, nelems, elem, pe);
    char *to = dest;
    const char *src = source;
    if (dst == 1 && sst == 1) { /* contiguous: one transfer, not one per element */
        ushmemi_put(call, to, src, nelems * elem, pe, false);
        return;
    }
    for (size_t i = 0; i < nelems; i++)
        ushmemi_put(call, to + (ptrdiff_t)i * dst * (ptrdiff_t)elem,
                    src + (ptrdiff_t)i * sst * (ptrdiff_t)elem, elem, pe, false);
}

static void iget_bytes(const char *call, shmem_ctx_t ctx, void *dest, const void *source,
                       ptrdiff_t dst, ptrdiff_t sst, size_t nelems, size_t elem, int pe)
{
    ushmemi_check_init(call);
    pe = ushmemi_ctx_pe(call, ctx, pe);
    if (nelems == 0) {
        ushmemi_get(call, dest, source, 0, pe, false);
        return;
    }
    check_strided(call, source, sst, nelems, elem, pe);
    char *out = dest;
    const char *from = source;
    if (dst == 1 && sst == 1) {
        ushmemi_get(call, out, from, nelems * elem, pe, false);
        return;
    }
    for (size_t i = 0; i < nelems; i++)
        ushmemi_get(call, out + (ptrdiff_t)i * dst * (ptrdiff_t)elem,
                    from + (ptrdiff_t)i * sst * (ptrdiff_t)elem, elem, pe, false);
}

/* OpenSHMEM 1.6 ibput/ibget: nblocks blocks of bsize elements, block i at
 * element i * dst of dest and i * sst of source. The symmetric side's whole
 * span is checked before any block moves. */
static void ib_bytes(const char *call, shmem_ctx_t ctx, void *dest, const void *source,
                     ptrdiff_t dst, ptrdiff_t sst, size_t bsize, size_t nblocks, size_t elem,
                     int pe, bool put)
{
    ushmemi_check_init(call);
    pe = ushmemi_ctx_pe(call, ctx, pe);
    if (bsize == 0 || nblocks == 0)
        return;
    if (dst < 0 || sst < 0 || (size_t)dst < bsize || (size_t)sst < bsize)
        ushmemi_fatal(call, "strides dst %td and sst %td to PE %d must be at least bsize %zu",
                      dst, sst, pe, bsize);
    size_t block = span_bytes(call, bsize, elem, pe);
    ptrdiff_t sym_stride = put ? dst : sst;
    /* The last block ends (nblocks - 1) * stride + bsize elements in. */
    check_strided(call, put ? dest : source, sym_stride, nblocks, elem, pe);
    check_strided(call, (const char *)(put ? dest : source) + (bsize - 1) * elem, sym_stride,
                  nblocks, elem, pe);
    char *to = dest;
    const char *from = source;
    for (size_t i = 0; i < nblocks; i++) {
        char *d = to + (ptrdiff_t)i * dst * (ptrdiff_t)elem;
        const char *f = from + (ptrdiff_t)i * sst * (ptrdiff_t)elem;
        if (put)
            ushmemi_put(call, d, f, block, pe, false);
        else
            ushmemi_get(call, d, f, block, pe, false);
    }
}

#define DEFINE_IB(NAME, T)                                                                    \
    USHMEMI_API void shmem_##NAME##_ibput(T *dest, const T *source, ptrdiff_t dst,           \
                                          ptrdiff_t sst, size_t bsize, size_t nblocks,        \
                                          int pe)                                             \
    {                                                                                         \
        ib_bytes("shmem_" #NAME "_ibput", SHMEM_CTX_DEFAULT, dest, source, dst, sst, bsize,   \
                 nblocks, sizeof(T), pe, true);                                               \
    }                                                                                         \
    USHMEMI_API void shmem_##NAME##_ibget(T *dest, const T *source, ptrdiff_t dst,           \
                                          ptrdiff_t sst, size_t bsize, size_t nblocks,        \
                                          int pe)                                             \
    {                                                                                         \
        ib_bytes("shmem_" #NAME "_ibget", SHMEM_CTX_DEFAULT, dest, source, dst, sst, bsize,   \
                 nblocks, sizeof(T), pe, false);                                              \
    }                                                                                         \
    USHMEMI_API void shmem_ctx_##NAME##_ibput(shmem_ctx_t ctx, T *dest, const T *source,     \
                                              ptrdiff_t dst, ptrdiff_t sst, size_t bsize,     \
                                              size_t nblocks, int pe)                         \
    {                                                                                         \
        ib_bytes("shmem_ctx_" #NAME "_ibput", ctx, dest, source, dst, sst, bsize, nblocks,    \
                 sizeof(T), pe, true);                                                        \
    }                                                                                         \
    USHMEMI_API void shmem_ctx_##NAME##_ibget(shmem_ctx_t ctx, T *dest, const T *source,     \
                                              ptrdiff_t dst, ptrdiff_t sst, size_t bsize,     \
                                              size_t nblocks, int pe)                         \
    {                                                                                         \
        ib_bytes("shmem_ctx_" #NAME "_ibget", ctx, dest, source, dst, sst, bsize, nblocks,    \
                 sizeof(T), pe, false);                                                       \
    }
USHMEMI_RMA_TYPES(DEFINE_IB)
#undef DEFINE_IB

#define DEFINE_IB_SIZED(BITS, BYTES)                                                          \
    USHMEMI_API void shmem_ibput##BITS(void *dest, const void *source, ptrdiff_t dst,        \
                                       ptrdiff_t sst, size_t bsize, size_t nblocks, int pe)   \
    {                                                                                         \
        ib_bytes("shmem_ibput" #BITS, SHMEM_CTX_DEFAULT, dest, source, dst, sst, bsize,       \
                 nblocks, BYTES, pe, true);                                                   \
    }                                                                                         \
    USHMEMI_API void shmem_ibget##BITS(void *dest, const void *source, ptrdiff_t dst,        \
                                       ptrdiff_t sst, size_t bsize, size_t nblocks, int pe)   \
    {                                                                                         \
        ib_bytes("shmem_ibget" #BITS, SHMEM_CTX_DEFAULT, dest, source, dst, sst, bsize,       \
                 nblocks, BYTES, pe, false);                                                  \
    }                                                                                         \
    USHMEMI_API void shmem_ctx_ibput##BITS(shmem_ctx_t ctx, void *dest, const void *source,  \
                                           ptrdiff_t dst, ptrdiff_t sst, size_t bsize,        \
                                           size_t nblocks, int pe)                            \
    {                                                                                         \
        ib_bytes("shmem_ctx_ibput" #BITS, ctx, dest, source, dst, sst, bsize, nblocks, BYTES, \
                 pe, true);                                                                   \
    }                                                                                         \
    USHMEMI_API void shmem_ctx_ibget##BITS(shmem_ctx_t ctx, void *dest, const void *source,  \
                                           ptrdiff_t dst, ptrdiff_t sst, size_t bsize,        \
                                           size_t nblocks, int pe)                            \
    {                                                                                         \
        ib_bytes("shmem_ctx_ibget" #BITS, ctx, dest, source, dst, sst, bsize, nblocks, BYTES, \
                 pe, false);                                                                  \
    }
USHMEMI_SIZED_TYPES(DEFINE_IB_SIZED)
#undef DEFINE_IB_SIZED

/* Every routine has a context form, whose PE numbers are those of the
 * context's team, and the plain form on SHMEM_CTX_DEFAULT. */
#define DEFINE_RMA_CTX(NAME, T, CTX, CTXP, PREFIX)                                            \
    USHMEMI_API void PREFIX##NAME##_put(CTXP() T *dest, const T *source, size_t nelems, int pe) \
    {                                                                                         \
        put_bytes(#PREFIX #NAME "_put", CTX, dest, source, nelems, sizeof(T), pe, false);     \
    }                                                                                         \
    USHMEMI_API void PREFIX##NAME##_get(CTXP() T *dest, const T *source, size_t nelems, int pe) \
    {                                                                                         \
        get_bytes(#PREFIX #NAME "_get", CTX, dest, source, nelems, sizeof(T), pe, false);     \
    }                                                                                         \
    USHMEMI_API void PREFIX##NAME##_p(CTXP() T *dest, T value, int pe)                          \
    {                                                                                         \
        put_bytes(#PREFIX #NAME "_p", CTX, dest, &value, 1, sizeof(T), pe, false);            \
    }                                                                                         \
    USHMEMI_API T PREFIX##NAME##_g(CTXP() const T *source, int pe)                              \
    {                                                                                         \
        T value;                                                                              \
        get_bytes(#PREFIX #NAME "_g", CTX, &value, source, 1, sizeof(T), pe, false);          \
        return value;                                                                         \
    }                                                                                         \
    USHMEMI_API void PREFIX##NAME##_iput(CTXP() T *dest, const T *source, ptrdiff_t dst,        \
                                         ptrdiff_t sst, size_t nelems, int pe)                \
    {                                                                                         \
        iput_bytes(#PREFIX #NAME "_iput", CTX, dest, source, dst, sst, nelems, sizeof(T),     \
                   pe);                                                                       \
    }                                                                                         \
    USHMEMI_API void PREFIX##NAME##_iget(CTXP() T *dest, const T *source, ptrdiff_t dst,        \
                                         ptrdiff_t sst, size_t nelems, int pe)                \
    {                                                                                         \
        iget_bytes(#PREFIX #NAME "_iget", CTX, dest, source, dst, sst, nelems, sizeof(T),     \
                   pe);                                                                       \
    }                                                                                         \
    USHMEMI_API void PREFIX##NAME##_put_nbi(CTXP() T *dest, const T *source, size_t nelems,     \
                                            int pe)                                           \
    {                                                                                         \
        put_bytes(#PREFIX #NAME "_put_nbi", CTX, dest, source, nelems, sizeof(T), pe, true);  \
    }                                                                                         \
    USHMEMI_API void PREFIX##NAME##_get_nbi(CTXP() T *dest, const T *source, size_t nelems,     \
                                            int pe)                                           \
    {                                                                                         \
        get_bytes(#PREFIX #NAME "_get_nbi", CTX, dest, source, nelems, sizeof(T), pe, true);  \
    }
#define DEFINE_RMA(NAME, T)                                                                   \
    DEFINE_RMA_CTX(NAME, T, ctx, USHMEMI_CTX_PARAM, shmem_ctx_)                   \
    DEFINE_RMA_CTX(NAME, T, &ushmemi_ctx_default, USHMEMI_NO_PARAM, shmem_)
USHMEMI_RMA_TYPES(DEFINE_RMA)
#undef DEFINE_RMA
#undef DEFINE_RMA_CTX

#define DEFINE_SIZED_CTX(BITS, BYTES, CTX, CTXP, PREFIX)                                      \
    USHMEMI_API void PREFIX##put##BITS(CTXP() void *dest, const void *source, size_t nelems,    \
                                       int pe)                                                \
    {                                                                                         \
        put_bytes(#PREFIX "put" #BITS, CTX, dest, source, nelems, BYTES, pe, false);          \
    }                                                                                         \
    USHMEMI_API void PREFIX##get##BITS(CTXP() void *dest, const void *source, size_t nelems,    \
                                       int pe)                                                \
    {                                                                                         \
        get_bytes(#PREFIX "get" #BITS, CTX, dest, source, nelems, BYTES, pe, false);          \
    }                                                                                         \
    USHMEMI_API void PREFIX##iput##BITS(CTXP() void *dest, const void *source, ptrdiff_t dst,   \
                                        ptrdiff_t sst, size_t nelems, int pe)                 \
    {                                                                                         \
        iput_bytes(#PREFIX "iput" #BITS, CTX, dest, source, dst, sst, nelems, BYTES, pe);     \
    }                                                                                         \
    USHMEMI_API void PREFIX##iget##BITS(CTXP() void *dest, const void *source, ptrdiff_t dst,   \
                                        ptrdiff_t sst, size_t nelems, int pe)                 \
    {                                                                                         \
        iget_bytes(#PREFIX "iget" #BITS, CTX, dest, source, dst, sst, nelems, BYTES, pe);     \
    }                                                                                         \
    USHMEMI_API void PREFIX##put##BITS##_nbi(CTXP() void *dest, const void *source,             \
                                             size_t nelems, int pe)                           \
    {                                                                                         \
        put_bytes(#PREFIX "put" #BITS "_nbi", CTX, dest, source, nelems, BYTES, pe, true);    \
    }                                                                                         \
    USHMEMI_API void PREFIX##get##BITS##_nbi(CTXP() void *dest, const void *source,             \
                                             size_t nelems, int pe)                           \
    {                                                                                         \
        get_bytes(#PREFIX "get" #BITS "_nbi", CTX, dest, source, nelems, BYTES, pe, true);    \
    }
#define DEFINE_SIZED(BITS, BYTES)                                                             \
    DEFINE_SIZED_CTX(BITS, BYTES, ctx, USHMEMI_CTX_PARAM, shmem_ctx_)             \
    DEFINE_SIZED_CTX(BITS, BYTES, &ushmemi_ctx_default, USHMEMI_NO_PARAM, shmem_)
USHMEMI_SIZED_TYPES(DEFINE_SIZED)
#undef DEFINE_SIZED
#undef DEFINE_SIZED_CTX

#define DEFINE_MEM_CTX(CTX, CTXP, PREFIX)                                                     \
    USHMEMI_API void PREFIX##putmem(CTXP() void *dest, const void *source, size_t nelems,       \
                                    int pe)                                                   \
    {                                                                                         \
        put_bytes(#PREFIX "putmem", CTX, dest, source, nelems, 1, pe, false);                 \
    }                                                                                         \
    USHMEMI_API void PREFIX##getmem(CTXP() void *dest, const void *source, size_t nelems,       \
                                    int pe)                                                   \
    {                                                                                         \
        get_bytes(#PREFIX "getmem", CTX, dest, source, nelems, 1, pe, false);                 \
    }                                                                                         \
    USHMEMI_API void PREFIX##putmem_nbi(CTXP() void *dest, const void *source, size_t nelems,   \
                                        int pe)                                               \
    {                                                                                         \
        put_bytes(#PREFIX "putmem_nbi", CTX, dest, source, nelems, 1, pe, true);              \
    }                                                                                         \
    USHMEMI_API void PREFIX##getmem_nbi(CTXP() void *dest, const void *source, size_t nelems,   \
                                        int pe)                                               \
    {                                                                                         \
        get_bytes(#PREFIX "getmem_nbi", CTX, dest, source, nelems, 1, pe, true);              \
    }
DEFINE_MEM_CTX(ctx, USHMEMI_CTX_PARAM, shmem_ctx_)
DEFINE_MEM_CTX(&ushmemi_ctx_default, USHMEMI_NO_PARAM, shmem_)
#undef DEFINE_MEM_CTX

/* Mapped roads complete on return, so for them fence and quiet only order
 * this PE's plain stores before whatever follows (a flag store, an atomic,
 * a barrier) as seen by other processes; the fabric has its own. */
USHMEMI_API void shmem_fence(void)
{
    ushmemi_check_init("shmem_fence");
    ushmemi_road_fence("shmem_fence");
}

USHMEMI_API void shmem_quiet(void)
{
    ushmemi_check_init("shmem_quiet");
    ushmemi_road_quiet("shmem_quiet");
}

/* Contexts share this PE's roads, so ordering or completing one context's
 * operations orders or completes them all: on the mapped roads there is
 * nothing outstanding to wait for, and over the fabric a quiet on one
 * context also waits for the others' operations (correct, not separate).
 * On SHMEM_CTX_INVALID (a failed shmem_team_create_ctx, say, on a PE
 * outside the team) no operation is performed, as OpenSHMEM 1.5 says. */
USHMEMI_API void shmem_ctx_fence(shmem_ctx_t ctx)
{
    ushmemi_check_init("shmem_ctx_fence");
    if (ctx == SHMEM_CTX_INVALID)
        return;
    ushmemi_ctx_pe("shmem_ctx_fence", ctx, 0);
    ushmemi_road_fence("shmem_ctx_fence");
}

USHMEMI_API void shmem_ctx_quiet(shmem_ctx_t ctx)
{
    ushmemi_check_init("shmem_ctx_quiet");
    if (ctx == SHMEM_CTX_INVALID)
        return;
    ushmemi_ctx_pe("shmem_ctx_quiet", ctx, 0);
    ushmemi_road_quiet("shmem_ctx_quiet");
}

/* OpenSHMEM 1.6: completes the operations to the PEs listed (numbered in
 * the context's team). Each listed PE is checked; the completion itself is
 * the whole quiet, which covers them. SHMEM_CTX_INVALID does nothing, as
 * for shmem_ctx_quiet. */
static void pe_quiet(const char *call, shmem_ctx_t ctx, const int *target_pes, size_t npes)
{
    ushmemi_check_init(call);
    if (ctx == SHMEM_CTX_INVALID)
        return;
    if (npes > 0 && target_pes == NULL)
        ushmemi_fatal(call, "target_pes is NULL with npes %zu", npes);
    for (size_t i = 0; i < npes; i++) {
        int pe = ushmemi_ctx_pe(call, ctx, target_pes[i]);
        if (pe < 0 || pe >= ushmemi_g.n_pes)
            ushmemi_fatal(call, "target_pes[%zu] is PE %d; the job has %d PEs", i, pe,
                          ushmemi_g.n_pes);
    }
    if (npes > 0)
        ushmemi_road_quiet(call);
}

USHMEMI_API void shmem_pe_quiet(const int *target_pes, size_t npes)
{
    pe_quiet("shmem_pe_quiet", SHMEM_CTX_DEFAULT, target_pes, npes);
}

USHMEMI_API void shmem_ctx_pe_quiet(shmem_ctx_t ctx, const int *target_pes, size_t npes)
{
    pe_quiet("shmem_ctx_pe_quiet", ctx, target_pes, npes);
}
