/* Host RMA entry points: typed, sized and byte put/get, p/g, strided
 * iput/iget, their non-blocking forms, and shmem_fence/shmem_quiet.
 *
 * Every peer heap is mapped into this process (direct route), so a transfer
 * is a copy into or out of the peer's mapping and is complete when the copy
 * returns. Non-blocking forms therefore complete at once, which the
 * specification allows (they must complete by the next quiet). */
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

/* The peer's address of [addr, addr+len), or NULL for an empty transfer. An
 * empty transfer touches no memory, so only the PE is checked: programs pass
 * NULL or unaligned pointers with a zero count. */
static void *target(const char *call, const void *addr, size_t len, int pe)
{
    ushmemi_check_init(call);
    if (len != 0)
        return ushmemi_remote_addr(call, addr, len, pe);
    if (pe < 0 || pe >= ushmemi_g.n_pes)
        ushmemi_fatal(call, "PE %d is out of range (the job has %d PEs: 0 to %d)", pe,
                      ushmemi_g.n_pes, ushmemi_g.n_pes - 1);
    return NULL;
}

static void put_bytes(const char *call, void *dest, const void *source, size_t nelems,
                      size_t elem, int pe)
{
    size_t len = span_bytes(call, nelems, elem, pe);
    void *remote = target(call, dest, len, pe);
    ushmemi_host_copy(call, remote, source, len);
}

static void get_bytes(const char *call, void *dest, const void *source, size_t nelems,
                      size_t elem, int pe)
{
    size_t len = span_bytes(call, nelems, elem, pe);
    void *remote = target(call, source, len, pe);
    ushmemi_host_copy(call, dest, remote, len);
}

/* The peer's address of element 0 of a strided symmetric array, after
 * checking the whole span that the stride covers (either direction). */
static char *strided_target(const char *call, const void *addr, ptrdiff_t stride,
                            size_t nelems, size_t elem, int pe)
{
    ptrdiff_t last, last_bytes;
    if (nelems > PTRDIFF_MAX || elem > PTRDIFF_MAX ||
        __builtin_mul_overflow((ptrdiff_t)(nelems - 1), stride, &last) ||
        __builtin_mul_overflow(last, (ptrdiff_t)elem, &last_bytes))
        ushmemi_fatal(call, "%zu elements of %zu bytes with stride %td to PE %d overflow the "
                      "address space", nelems, elem, stride, pe);
    ptrdiff_t lo = last_bytes < 0 ? last_bytes : 0;
    size_t len = (size_t)(last_bytes < 0 ? -last_bytes : last_bytes) + elem;
    char *remote_lo = ushmemi_remote_addr(call, (const char *)addr + lo, len, pe);
    return remote_lo - lo;
}

/* dst and sst are strides in elements, as the specification defines them. */
static void iput_bytes(const char *call, void *dest, const void *source, ptrdiff_t dst,
                       ptrdiff_t sst, size_t nelems, size_t elem, int pe)
{
    if (nelems == 0) {
        target(call, dest, 0, pe);
        return;
    }
    ushmemi_check_init(call);
    char *remote = strided_target(call, dest, dst, nelems, elem, pe);
    const char *src = source;
    if (dst == 1 && sst == 1) { /* contiguous: one copy, not one per element */
        ushmemi_host_copy(call, remote, src, nelems * elem);
        return;
    }
    for (size_t i = 0; i < nelems; i++)
        ushmemi_host_copy(call, remote + (ptrdiff_t)i * dst * (ptrdiff_t)elem,
                          src + (ptrdiff_t)i * sst * (ptrdiff_t)elem, elem);
}

static void iget_bytes(const char *call, void *dest, const void *source, ptrdiff_t dst,
                       ptrdiff_t sst, size_t nelems, size_t elem, int pe)
{
    if (nelems == 0) {
        target(call, source, 0, pe);
        return;
    }
    ushmemi_check_init(call);
    const char *remote = strided_target(call, source, sst, nelems, elem, pe);
    char *out = dest;
    if (dst == 1 && sst == 1) {
        ushmemi_host_copy(call, out, remote, nelems * elem);
        return;
    }
    for (size_t i = 0; i < nelems; i++)
        ushmemi_host_copy(call, out + (ptrdiff_t)i * dst * (ptrdiff_t)elem,
                          remote + (ptrdiff_t)i * sst * (ptrdiff_t)elem, elem);
}

#define DEFINE_RMA(NAME, T)                                                                   \
    USHMEMI_API void shmem_##NAME##_put(T *dest, const T *source, size_t nelems, int pe)     \
    {                                                                                         \
        put_bytes("shmem_" #NAME "_put", dest, source, nelems, sizeof(T), pe);                \
    }                                                                                         \
    USHMEMI_API void shmem_##NAME##_get(T *dest, const T *source, size_t nelems, int pe)     \
    {                                                                                         \
        get_bytes("shmem_" #NAME "_get", dest, source, nelems, sizeof(T), pe);                \
    }                                                                                         \
    USHMEMI_API void shmem_##NAME##_p(T *dest, T value, int pe)                              \
    {                                                                                         \
        put_bytes("shmem_" #NAME "_p", dest, &value, 1, sizeof(T), pe);                       \
    }                                                                                         \
    USHMEMI_API T shmem_##NAME##_g(const T *source, int pe)                                  \
    {                                                                                         \
        T value;                                                                              \
        get_bytes("shmem_" #NAME "_g", &value, source, 1, sizeof(T), pe);                     \
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
        put_bytes("shmem_" #NAME "_put_nbi", dest, source, nelems, sizeof(T), pe);            \
    }                                                                                         \
    USHMEMI_API void shmem_##NAME##_get_nbi(T *dest, const T *source, size_t nelems, int pe) \
    {                                                                                         \
        get_bytes("shmem_" #NAME "_get_nbi", dest, source, nelems, sizeof(T), pe);            \
    }
USHMEMI_RMA_TYPES(DEFINE_RMA)
#undef DEFINE_RMA

#define DEFINE_SIZED(BITS, BYTES)                                                             \
    USHMEMI_API void shmem_put##BITS(void *dest, const void *source, size_t nelems, int pe)  \
    {                                                                                         \
        put_bytes("shmem_put" #BITS, dest, source, nelems, BYTES, pe);                        \
    }                                                                                         \
    USHMEMI_API void shmem_get##BITS(void *dest, const void *source, size_t nelems, int pe)  \
    {                                                                                         \
        get_bytes("shmem_get" #BITS, dest, source, nelems, BYTES, pe);                        \
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
        put_bytes("shmem_put" #BITS "_nbi", dest, source, nelems, BYTES, pe);                 \
    }                                                                                         \
    USHMEMI_API void shmem_get##BITS##_nbi(void *dest, const void *source, size_t nelems,    \
                                           int pe)                                            \
    {                                                                                         \
        get_bytes("shmem_get" #BITS "_nbi", dest, source, nelems, BYTES, pe);                 \
    }
USHMEMI_SIZED_TYPES(DEFINE_SIZED)
#undef DEFINE_SIZED

USHMEMI_API void shmem_putmem(void *dest, const void *source, size_t nelems, int pe)
{
    put_bytes("shmem_putmem", dest, source, nelems, 1, pe);
}

USHMEMI_API void shmem_getmem(void *dest, const void *source, size_t nelems, int pe)
{
    get_bytes("shmem_getmem", dest, source, nelems, 1, pe);
}

USHMEMI_API void shmem_putmem_nbi(void *dest, const void *source, size_t nelems, int pe)
{
    put_bytes("shmem_putmem_nbi", dest, source, nelems, 1, pe);
}

USHMEMI_API void shmem_getmem_nbi(void *dest, const void *source, size_t nelems, int pe)
{
    get_bytes("shmem_getmem_nbi", dest, source, nelems, 1, pe);
}

/* Every operation above has completed when it returns, so fence and quiet
 * only have to order this PE's plain stores before whatever follows (a flag
 * store, an atomic, a barrier) as seen by the other processes. */
USHMEMI_API void shmem_fence(void)
{
    ushmemi_check_init("shmem_fence");
    atomic_thread_fence(memory_order_seq_cst);
}

USHMEMI_API void shmem_quiet(void)
{
    ushmemi_check_init("shmem_quiet");
    atomic_thread_fence(memory_order_seq_cst);
}
