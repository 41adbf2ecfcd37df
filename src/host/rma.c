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

static void put_bytes(const char *call, void *dest, const void *source, size_t nelems,
                      size_t elem, int pe, bool nbi)
{
    ushmemi_check_init(call);
    ushmemi_put(call, dest, source, span_bytes(call, nelems, elem, pe), pe, nbi);
}

static void get_bytes(const char *call, void *dest, const void *source, size_t nelems,
                      size_t elem, int pe, bool nbi)
{
    ushmemi_check_init(call);
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
static void iput_bytes(const char *call, void *dest, const void *source, ptrdiff_t dst,
                       ptrdiff_t sst, size_t nelems, size_t elem, int pe)
{
    ushmemi_check_init(call);
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

static void iget_bytes(const char *call, void *dest, const void *source, ptrdiff_t dst,
                       ptrdiff_t sst, size_t nelems, size_t elem, int pe)
{
    ushmemi_check_init(call);
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

#define DEFINE_RMA(NAME, T)                                                                   \
    USHMEMI_API void shmem_##NAME##_put(T *dest, const T *source, size_t nelems, int pe)     \
    {                                                                                         \
        put_bytes("shmem_" #NAME "_put", dest, source, nelems, sizeof(T), pe, false);         \
    }                                                                                         \
    USHMEMI_API void shmem_##NAME##_get(T *dest, const T *source, size_t nelems, int pe)     \
    {                                                                                         \
        get_bytes("shmem_" #NAME "_get", dest, source, nelems, sizeof(T), pe, false);         \
    }                                                                                         \
    USHMEMI_API void shmem_##NAME##_p(T *dest, T value, int pe)                              \
    {                                                                                         \
        put_bytes("shmem_" #NAME "_p", dest, &value, 1, sizeof(T), pe, false);                \
    }                                                                                         \
    USHMEMI_API T shmem_##NAME##_g(const T *source, int pe)                                  \
    {                                                                                         \
        T value;                                                                              \
        get_bytes("shmem_" #NAME "_g", &value, source, 1, sizeof(T), pe, false);              \
        return value;                                                                         \
    }                                                                                         \
    USHMEMI_API void shmem_##NAME##_iput(T *dest, const T *source, ptrdiff_t dst,            \
                                         ptrdiff_t sst, size_t nelems, int pe)                \
    {                                                                                         \
        iput_bytes("shmem_" #NAME "_iput", dest, source, dst, sst, nelems, sizeof(T), pe);    \
    }                                                                                         \
    USHMEMI_API void shmem_##NAME##_iget(T *dest, const T *source, ptrdiff_t dst,            \
                                         ptrdiff_t sst, size_t nelems, int pe)                \
    {                                                                                         \
        iget_bytes("shmem_" #NAME "_iget", dest, source, dst, sst, nelems, sizeof(T), pe);    \
    }                                                                                         \
    USHMEMI_API void shmem_##NAME##_put_nbi(T *dest, const T *source, size_t nelems, int pe) \
    {                                                                                         \
        put_bytes("shmem_" #NAME "_put_nbi", dest, source, nelems, sizeof(T), pe, true);      \
    }                                                                                         \
    USHMEMI_API void shmem_##NAME##_get_nbi(T *dest, const T *source, size_t nelems, int pe) \
    {                                                                                         \
        get_bytes("shmem_" #NAME "_get_nbi", dest, source, nelems, sizeof(T), pe, true);      \
    }
USHMEMI_RMA_TYPES(DEFINE_RMA)
#undef DEFINE_RMA

#define DEFINE_SIZED(BITS, BYTES)                                                             \
    USHMEMI_API void shmem_put##BITS(void *dest, const void *source, size_t nelems, int pe)  \
    {                                                                                         \
        put_bytes("shmem_put" #BITS, dest, source, nelems, BYTES, pe, false);                 \
    }                                                                                         \
    USHMEMI_API void shmem_get##BITS(void *dest, const void *source, size_t nelems, int pe)  \
    {                                                                                         \
        get_bytes("shmem_get" #BITS, dest, source, nelems, BYTES, pe, false);                 \
    }                                                                                         \
    USHMEMI_API void shmem_iput##BITS(void *dest, const void *source, ptrdiff_t dst,         \
                                      ptrdiff_t sst, size_t nelems, int pe)                   \
    {                                                                                         \
        iput_bytes("shmem_iput" #BITS, dest, source, dst, sst, nelems, BYTES, pe);            \
    }                                                                                         \
    USHMEMI_API void shmem_iget##BITS(void *dest, const void *source, ptrdiff_t dst,         \
                                      ptrdiff_t sst, size_t nelems, int pe)                   \
    {                                                                                         \
        iget_bytes("shmem_iget" #BITS, dest, source, dst, sst, nelems, BYTES, pe);            \
    }                                                                                         \
    USHMEMI_API void shmem_put##BITS##_nbi(void *dest, const void *source, size_t nelems,    \
                                           int pe)                                            \
    {                                                                                         \
        put_bytes("shmem_put" #BITS "_nbi", dest, source, nelems, BYTES, pe, true);           \
    }                                                                                         \
    USHMEMI_API void shmem_get##BITS##_nbi(void *dest, const void *source, size_t nelems,    \
                                           int pe)                                            \
    {                                                                                         \
        get_bytes("shmem_get" #BITS "_nbi", dest, source, nelems, BYTES, pe, true);           \
    }
USHMEMI_SIZED_TYPES(DEFINE_SIZED)
#undef DEFINE_SIZED

USHMEMI_API void shmem_putmem(void *dest, const void *source, size_t nelems, int pe)
{
    put_bytes("shmem_putmem", dest, source, nelems, 1, pe, false);
}

USHMEMI_API void shmem_getmem(void *dest, const void *source, size_t nelems, int pe)
{
    get_bytes("shmem_getmem", dest, source, nelems, 1, pe, false);
}

USHMEMI_API void shmem_putmem_nbi(void *dest, const void *source, size_t nelems, int pe)
{
    put_bytes("shmem_putmem_nbi", dest, source, nelems, 1, pe, true);
}

USHMEMI_API void shmem_getmem_nbi(void *dest, const void *source, size_t nelems, int pe)
{
    get_bytes("shmem_getmem_nbi", dest, source, nelems, 1, pe, true);
}

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
