/* OpenSHMEM 1.5 one-sided routines: RMA (put, get, p, g, strided and
 * non-blocking forms), atomic memory operations, put-with-signal and
 * point-to-point synchronisation (wait_until and test families), with the
 * deprecated names older programs still use and the C11 generic selections.
 * Included by <shmem.h> inside its extern "C" block.
 *
 * The type tables below are the single source for both these declarations and
 * the library's definitions, so the two cannot drift. Each table takes a
 * macro X(NAME, TYPE) where NAME is the spelling in the routine name. */
#ifndef USHMEM_SHMEM_RMA_H
#define USHMEM_SHMEM_RMA_H

#include <stddef.h>
#include <stdint.h>

/* Standard RMA types (OpenSHMEM 1.5, table 5). */
#define USHMEMI_RMA_TYPES(X)                                                  \
    X(float, float)                                                           \
    X(double, double)                                                         \
    X(longdouble, long double)                                                \
    X(char, char)                                                             \
    X(schar, signed char)                                                     \
    X(short, short)                                                           \
    X(int, int)                                                               \
    X(long, long)                                                             \
    X(longlong, long long)                                                    \
    X(uchar, unsigned char)                                                   \
    X(ushort, unsigned short)                                                 \
    X(uint, unsigned int)                                                     \
    X(ulong, unsigned long)                                                   \
    X(ulonglong, unsigned long long)                                          \
    X(int8, int8_t)                                                           \
    X(int16, int16_t)                                                         \
    X(int32, int32_t)                                                         \
    X(int64, int64_t)                                                         \
    X(uint8, uint8_t)                                                         \
    X(uint16, uint16_t)                                                       \
    X(uint32, uint32_t)                                                       \
    X(uint64, uint64_t)                                                       \
    X(size, size_t)                                                           \
    X(ptrdiff, ptrdiff_t)

/* Sized RMA: X(BITS, BYTES). */
#define USHMEMI_SIZED_TYPES(X) X(8, 1) X(16, 2) X(32, 4) X(64, 8) X(128, 16)

/* Standard AMO types (table 6). */
#define USHMEMI_AMO_STD_TYPES(X)                                              \
    X(int, int)                                                               \
    X(long, long)                                                             \
    X(longlong, long long)                                                    \
    X(uint, unsigned int)                                                     \
    X(ulong, unsigned long)                                                   \
    X(ulonglong, unsigned long long)                                          \
    X(int32, int32_t)                                                         \
    X(int64, int64_t)                                                         \
    X(uint32, uint32_t)                                                       \
    X(uint64, uint64_t)                                                       \
    X(size, size_t)                                                           \
    X(ptrdiff, ptrdiff_t)

/* Extended AMO types beyond the standard ones (table 7): fetch, set, swap. */
#define USHMEMI_AMO_EXT_TYPES(X) X(float, float) X(double, double)

/* Bitwise AMO types (table 8). */
#define USHMEMI_AMO_BIT_TYPES(X)                                              \
    X(uint, unsigned int)                                                     \
    X(ulong, unsigned long)                                                   \
    X(ulonglong, unsigned long long)                                          \
    X(int32, int32_t)                                                         \
    X(int64, int64_t)                                                         \
    X(uint32, uint32_t)                                                       \
    X(uint64, uint64_t)

/* Point-to-point synchronisation types (table 10). */
#define USHMEMI_SYNC_TYPES(X)                                                 \
    X(int, int)                                                               \
    X(long, long)                                                             \
    X(longlong, long long)                                                    \
    X(uint, unsigned int)                                                     \
    X(ulong, unsigned long)                                                   \
    X(ulonglong, unsigned long long)                                          \
    X(int32, int32_t)                                                         \
    X(int64, int64_t)                                                         \
    X(uint32, uint32_t)                                                       \
    X(uint64, uint64_t)                                                       \
    X(size, size_t)                                                           \
    X(ptrdiff, ptrdiff_t)

/* short and unsigned short: deprecated for wait, wait_until and test, and
 * accepted by every point-to-point routine here because programs use them. */
#define USHMEMI_SYNC_OLD_TYPES(X) X(short, short) X(ushort, unsigned short)

/* ------------------------------------------------------------------------ */
/* RMA                                                                      */

#define USHMEMI_DECL_RMA(NAME, T)                                             \
    void shmem_##NAME##_put(T *dest, const T *source, size_t nelems, int pe); \
    void shmem_##NAME##_get(T *dest, const T *source, size_t nelems, int pe); \
    void shmem_##NAME##_p(T *dest, T value, int pe);                          \
    T shmem_##NAME##_g(const T *source, int pe);                              \
    void shmem_##NAME##_iput(T *dest, const T *source, ptrdiff_t dst,         \
                             ptrdiff_t sst, size_t nelems, int pe);           \
    void shmem_##NAME##_iget(T *dest, const T *source, ptrdiff_t dst,         \
                             ptrdiff_t sst, size_t nelems, int pe);           \
    void shmem_##NAME##_put_nbi(T *dest, const T *source, size_t nelems,      \
                                int pe);                                      \
    void shmem_##NAME##_get_nbi(T *dest, const T *source, size_t nelems,      \
                                int pe);
USHMEMI_RMA_TYPES(USHMEMI_DECL_RMA)
#undef USHMEMI_DECL_RMA

#define USHMEMI_DECL_SIZED(BITS, BYTES)                                       \
    void shmem_put##BITS(void *dest, const void *source, size_t nelems,       \
                         int pe);                                             \
    void shmem_get##BITS(void *dest, const void *source, size_t nelems,       \
                         int pe);                                             \
    void shmem_iput##BITS(void *dest, const void *source, ptrdiff_t dst,      \
                          ptrdiff_t sst, size_t nelems, int pe);              \
    void shmem_iget##BITS(void *dest, const void *source, ptrdiff_t dst,      \
                          ptrdiff_t sst, size_t nelems, int pe);              \
    void shmem_put##BITS##_nbi(void *dest, const void *source, size_t nelems, \
                               int pe);                                       \
    void shmem_get##BITS##_nbi(void *dest, const void *source, size_t nelems, \
                               int pe);
USHMEMI_SIZED_TYPES(USHMEMI_DECL_SIZED)
#undef USHMEMI_DECL_SIZED

void shmem_putmem(void *dest, const void *source, size_t nelems, int pe);
void shmem_getmem(void *dest, const void *source, size_t nelems, int pe);
void shmem_putmem_nbi(void *dest, const void *source, size_t nelems, int pe);
void shmem_getmem_nbi(void *dest, const void *source, size_t nelems, int pe);

/* Context forms: the PE is numbered in the context's team. */
#define USHMEMI_DECL_CTX_RMA(NAME, T)                                         \
    void shmem_ctx_##NAME##_put(shmem_ctx_t ctx, T *dest, const T *source,    \
                                size_t nelems, int pe);                       \
    void shmem_ctx_##NAME##_get(shmem_ctx_t ctx, T *dest, const T *source,    \
                                size_t nelems, int pe);                       \
    void shmem_ctx_##NAME##_p(shmem_ctx_t ctx, T *dest, T value, int pe);     \
    T shmem_ctx_##NAME##_g(shmem_ctx_t ctx, const T *source, int pe);         \
    void shmem_ctx_##NAME##_iput(shmem_ctx_t ctx, T *dest, const T *source,   \
                                 ptrdiff_t dst, ptrdiff_t sst, size_t nelems, \
                                 int pe);                                     \
    void shmem_ctx_##NAME##_iget(shmem_ctx_t ctx, T *dest, const T *source,   \
                                 ptrdiff_t dst, ptrdiff_t sst, size_t nelems, \
                                 int pe);                                     \
    void shmem_ctx_##NAME##_put_nbi(shmem_ctx_t ctx, T *dest,                 \
                                    const T *source, size_t nelems, int pe);  \
    void shmem_ctx_##NAME##_get_nbi(shmem_ctx_t ctx, T *dest,                 \
                                    const T *source, size_t nelems, int pe);
USHMEMI_RMA_TYPES(USHMEMI_DECL_CTX_RMA)
#undef USHMEMI_DECL_CTX_RMA

#define USHMEMI_DECL_CTX_SIZED(BITS, BYTES)                                   \
    void shmem_ctx_put##BITS(shmem_ctx_t ctx, void *dest, const void *source, \
                             size_t nelems, int pe);                          \
    void shmem_ctx_get##BITS(shmem_ctx_t ctx, void *dest, const void *source, \
                             size_t nelems, int pe);                          \
    void shmem_ctx_iput##BITS(shmem_ctx_t ctx, void *dest,                    \
                              const void *source, ptrdiff_t dst,              \
                              ptrdiff_t sst, size_t nelems, int pe);          \
    void shmem_ctx_iget##BITS(shmem_ctx_t ctx, void *dest,                    \
                              const void *source, ptrdiff_t dst,              \
                              ptrdiff_t sst, size_t nelems, int pe);          \
    void shmem_ctx_put##BITS##_nbi(shmem_ctx_t ctx, void *dest,               \
                                   const void *source, size_t nelems,         \
                                   int pe);                                   \
    void shmem_ctx_get##BITS##_nbi(shmem_ctx_t ctx, void *dest,               \
                                   const void *source, size_t nelems,         \
                                   int pe);
USHMEMI_SIZED_TYPES(USHMEMI_DECL_CTX_SIZED)
#undef USHMEMI_DECL_CTX_SIZED

/* OpenSHMEM 1.6 interleaved block transfers: nblocks blocks of bsize
 * elements, dst and sst apart (in elements) in dest and source. */
#define USHMEMI_DECL_IB(NAME, T)                                              \
    void shmem_##NAME##_ibput(T *dest, const T *source, ptrdiff_t dst,        \
                              ptrdiff_t sst, size_t bsize, size_t nblocks,    \
                              int pe);                                        \
    void shmem_##NAME##_ibget(T *dest, const T *source, ptrdiff_t dst,        \
                              ptrdiff_t sst, size_t bsize, size_t nblocks,    \
                              int pe);                                        \
    void shmem_ctx_##NAME##_ibput(shmem_ctx_t ctx, T *dest, const T *source,  \
                                  ptrdiff_t dst, ptrdiff_t sst, size_t bsize, \
                                  size_t nblocks, int pe);                    \
    void shmem_ctx_##NAME##_ibget(shmem_ctx_t ctx, T *dest, const T *source,  \
                                  ptrdiff_t dst, ptrdiff_t sst, size_t bsize, \
                                  size_t nblocks, int pe);
USHMEMI_RMA_TYPES(USHMEMI_DECL_IB)
#undef USHMEMI_DECL_IB

#define USHMEMI_DECL_IB_SIZED(BITS, BYTES)                                    \
    void shmem_ibput##BITS(void *dest, const void *source, ptrdiff_t dst,     \
                           ptrdiff_t sst, size_t bsize, size_t nblocks,       \
                           int pe);                                           \
    void shmem_ibget##BITS(void *dest, const void *source, ptrdiff_t dst,     \
                           ptrdiff_t sst, size_t bsize, size_t nblocks,       \
                           int pe);                                           \
    void shmem_ctx_ibput##BITS(shmem_ctx_t ctx, void *dest,                   \
                               const void *source, ptrdiff_t dst,             \
                               ptrdiff_t sst, size_t bsize, size_t nblocks,   \
                               int pe);                                       \
    void shmem_ctx_ibget##BITS(shmem_ctx_t ctx, void *dest,                   \
                               const void *source, ptrdiff_t dst,             \
                               ptrdiff_t sst, size_t bsize, size_t nblocks,   \
                               int pe);
USHMEMI_SIZED_TYPES(USHMEMI_DECL_IB_SIZED)
#undef USHMEMI_DECL_IB_SIZED

void shmem_ctx_putmem(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, int pe);
void shmem_ctx_getmem(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, int pe);
void shmem_ctx_putmem_nbi(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems,
                          int pe);
void shmem_ctx_getmem_nbi(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems,
                          int pe);

/* ------------------------------------------------------------------------ */
/* Atomic memory operations                                                 */

/* fetch, set, swap: standard and extended types. */
#define USHMEMI_DECL_AMO_EXT(NAME, T)                                         \
    T shmem_##NAME##_atomic_fetch(const T *source, int pe);                   \
    void shmem_##NAME##_atomic_set(T *dest, T value, int pe);                 \
    T shmem_##NAME##_atomic_swap(T *dest, T value, int pe);                   \
    void shmem_##NAME##_atomic_fetch_nbi(T *fetch, const T *source, int pe);  \
    void shmem_##NAME##_atomic_swap_nbi(T *fetch, T *dest, T value, int pe);
USHMEMI_AMO_STD_TYPES(USHMEMI_DECL_AMO_EXT)
USHMEMI_AMO_EXT_TYPES(USHMEMI_DECL_AMO_EXT)
#undef USHMEMI_DECL_AMO_EXT

#define USHMEMI_DECL_AMO_STD(NAME, T)                                         \
    T shmem_##NAME##_atomic_compare_swap(T *dest, T cond, T value, int pe);   \
    T shmem_##NAME##_atomic_fetch_inc(T *dest, int pe);                       \
    void shmem_##NAME##_atomic_inc(T *dest, int pe);                          \
    T shmem_##NAME##_atomic_fetch_add(T *dest, T value, int pe);              \
    void shmem_##NAME##_atomic_add(T *dest, T value, int pe);                 \
    void shmem_##NAME##_atomic_compare_swap_nbi(T *fetch, T *dest, T cond,    \
                                                T value, int pe);             \
    void shmem_##NAME##_atomic_fetch_inc_nbi(T *fetch, T *dest, int pe);      \
    void shmem_##NAME##_atomic_fetch_add_nbi(T *fetch, T *dest, T value,      \
                                             int pe);
USHMEMI_AMO_STD_TYPES(USHMEMI_DECL_AMO_STD)
#undef USHMEMI_DECL_AMO_STD

#define USHMEMI_DECL_AMO_BIT(NAME, T)                                         \
    T shmem_##NAME##_atomic_fetch_and(T *dest, T value, int pe);              \
    void shmem_##NAME##_atomic_and(T *dest, T value, int pe);                 \
    T shmem_##NAME##_atomic_fetch_or(T *dest, T value, int pe);               \
    void shmem_##NAME##_atomic_or(T *dest, T value, int pe);                  \
    T shmem_##NAME##_atomic_fetch_xor(T *dest, T value, int pe);              \
    void shmem_##NAME##_atomic_xor(T *dest, T value, int pe);                 \
    void shmem_##NAME##_atomic_fetch_and_nbi(T *fetch, T *dest, T value,      \
                                             int pe);                         \
    void shmem_##NAME##_atomic_fetch_or_nbi(T *fetch, T *dest, T value,       \
                                            int pe);                          \
    void shmem_##NAME##_atomic_fetch_xor_nbi(T *fetch, T *dest, T value,      \
                                             int pe);
USHMEMI_AMO_BIT_TYPES(USHMEMI_DECL_AMO_BIT)
#undef USHMEMI_DECL_AMO_BIT

/* Context forms of the atomics. */
#define USHMEMI_DECL_CTX_AMO_EXT(NAME, T)                                     \
    T shmem_ctx_##NAME##_atomic_fetch(shmem_ctx_t ctx, const T *source,       \
                                      int pe);                                \
    void shmem_ctx_##NAME##_atomic_set(shmem_ctx_t ctx, T *dest, T value,     \
                                       int pe);                               \
    T shmem_ctx_##NAME##_atomic_swap(shmem_ctx_t ctx, T *dest, T value,       \
                                     int pe);                                 \
    void shmem_ctx_##NAME##_atomic_fetch_nbi(shmem_ctx_t ctx, T *fetch,       \
                                             const T *source, int pe);        \
    void shmem_ctx_##NAME##_atomic_swap_nbi(shmem_ctx_t ctx, T *fetch,        \
                                            T *dest, T value, int pe);
USHMEMI_AMO_STD_TYPES(USHMEMI_DECL_CTX_AMO_EXT)
USHMEMI_AMO_EXT_TYPES(USHMEMI_DECL_CTX_AMO_EXT)
#undef USHMEMI_DECL_CTX_AMO_EXT

#define USHMEMI_DECL_CTX_AMO_STD(NAME, T)                                     \
    T shmem_ctx_##NAME##_atomic_compare_swap(shmem_ctx_t ctx, T *dest,        \
                                             T cond, T value, int pe);        \
    T shmem_ctx_##NAME##_atomic_fetch_inc(shmem_ctx_t ctx, T *dest, int pe);  \
    void shmem_ctx_##NAME##_atomic_inc(shmem_ctx_t ctx, T *dest, int pe);     \
    T shmem_ctx_##NAME##_atomic_fetch_add(shmem_ctx_t ctx, T *dest, T value,  \
                                          int pe);                            \
    void shmem_ctx_##NAME##_atomic_add(shmem_ctx_t ctx, T *dest, T value,     \
                                       int pe);                               \
    void shmem_ctx_##NAME##_atomic_compare_swap_nbi(                          \
        shmem_ctx_t ctx, T *fetch, T *dest, T cond, T value, int pe);         \
    void shmem_ctx_##NAME##_atomic_fetch_inc_nbi(shmem_ctx_t ctx, T *fetch,   \
                                                 T *dest, int pe);            \
    void shmem_ctx_##NAME##_atomic_fetch_add_nbi(shmem_ctx_t ctx, T *fetch,   \
                                                 T *dest, T value, int pe);
USHMEMI_AMO_STD_TYPES(USHMEMI_DECL_CTX_AMO_STD)
#undef USHMEMI_DECL_CTX_AMO_STD

#define USHMEMI_DECL_CTX_AMO_BIT(NAME, T)                                     \
    T shmem_ctx_##NAME##_atomic_fetch_and(shmem_ctx_t ctx, T *dest, T value,  \
                                          int pe);                            \
    void shmem_ctx_##NAME##_atomic_and(shmem_ctx_t ctx, T *dest, T value,     \
                                       int pe);                               \
    T shmem_ctx_##NAME##_atomic_fetch_or(shmem_ctx_t ctx, T *dest, T value,   \
                                         int pe);                             \
    void shmem_ctx_##NAME##_atomic_or(shmem_ctx_t ctx, T *dest, T value,      \
                                      int pe);                                \
    T shmem_ctx_##NAME##_atomic_fetch_xor(shmem_ctx_t ctx, T *dest, T value,  \
                                          int pe);                            \
    void shmem_ctx_##NAME##_atomic_xor(shmem_ctx_t ctx, T *dest, T value,     \
                                       int pe);                               \
    void shmem_ctx_##NAME##_atomic_fetch_and_nbi(shmem_ctx_t ctx, T *fetch,   \
                                                 T *dest, T value, int pe);   \
    void shmem_ctx_##NAME##_atomic_fetch_or_nbi(shmem_ctx_t ctx, T *fetch,    \
                                                T *dest, T value, int pe);    \
    void shmem_ctx_##NAME##_atomic_fetch_xor_nbi(shmem_ctx_t ctx, T *fetch,   \
                                                 T *dest, T value, int pe);
USHMEMI_AMO_BIT_TYPES(USHMEMI_DECL_CTX_AMO_BIT)
#undef USHMEMI_DECL_CTX_AMO_BIT

/* Deprecated atomic names (OpenSHMEM 1.3). */
#define USHMEMI_DECL_AMO_OLD(NAME, T)                                         \
    T shmem_##NAME##_fadd(T *target, T value, int pe);                        \
    T shmem_##NAME##_finc(T *target, int pe);                                 \
    void shmem_##NAME##_add(T *target, T value, int pe);                      \
    void shmem_##NAME##_inc(T *target, int pe);                               \
    T shmem_##NAME##_cswap(T *target, T cond, T value, int pe);               \
    T shmem_##NAME##_swap(T *target, T value, int pe);                        \
    T shmem_##NAME##_fetch(const T *target, int pe);                          \
    void shmem_##NAME##_set(T *target, T value, int pe);
USHMEMI_DECL_AMO_OLD(int, int)
USHMEMI_DECL_AMO_OLD(long, long)
USHMEMI_DECL_AMO_OLD(longlong, long long)
#undef USHMEMI_DECL_AMO_OLD

#define USHMEMI_DECL_AMO_OLD_EXT(NAME, T)                                     \
    T shmem_##NAME##_swap(T *target, T value, int pe);                        \
    T shmem_##NAME##_fetch(const T *target, int pe);                          \
    void shmem_##NAME##_set(T *target, T value, int pe);
USHMEMI_DECL_AMO_OLD_EXT(float, float)
USHMEMI_DECL_AMO_OLD_EXT(double, double)
#undef USHMEMI_DECL_AMO_OLD_EXT

long shmem_swap(long *target, long value, int pe);

/* ------------------------------------------------------------------------ */
/* Put with signal                                                          */

#define USHMEMI_DECL_SIGNAL(NAME, T)                                          \
    void shmem_##NAME##_put_signal(T *dest, const T *source, size_t nelems,   \
                                   uint64_t *sig_addr, uint64_t signal,       \
                                   int sig_op, int pe);                       \
    void shmem_##NAME##_put_signal_nbi(T *dest, const T *source,              \
                                       size_t nelems, uint64_t *sig_addr,     \
                                       uint64_t signal, int sig_op, int pe);
USHMEMI_RMA_TYPES(USHMEMI_DECL_SIGNAL)
#undef USHMEMI_DECL_SIGNAL

#define USHMEMI_DECL_SIGNAL_SIZED(BITS, BYTES)                                \
    void shmem_put##BITS##_signal(void *dest, const void *source,             \
                                  size_t nelems, uint64_t *sig_addr,          \
                                  uint64_t signal, int sig_op, int pe);       \
    void shmem_put##BITS##_signal_nbi(void *dest, const void *source,         \
                                      size_t nelems, uint64_t *sig_addr,      \
                                      uint64_t signal, int sig_op, int pe);
USHMEMI_SIZED_TYPES(USHMEMI_DECL_SIGNAL_SIZED)
#undef USHMEMI_DECL_SIGNAL_SIZED

void shmem_putmem_signal(void *dest, const void *source, size_t nelems,
                         uint64_t *sig_addr, uint64_t signal, int sig_op, int pe);
void shmem_putmem_signal_nbi(void *dest, const void *source, size_t nelems,
                             uint64_t *sig_addr, uint64_t signal, int sig_op,
                             int pe);
uint64_t shmem_signal_fetch(const uint64_t *sig_addr);

#define USHMEMI_DECL_CTX_SIGNAL(NAME, T)                                      \
    void shmem_ctx_##NAME##_put_signal(shmem_ctx_t ctx, T *dest,              \
                                       const T *source, size_t nelems,        \
                                       uint64_t *sig_addr, uint64_t signal,   \
                                       int sig_op, int pe);                   \
    void shmem_ctx_##NAME##_put_signal_nbi(                                   \
        shmem_ctx_t ctx, T *dest, const T *source, size_t nelems,             \
        uint64_t *sig_addr, uint64_t signal, int sig_op, int pe);
USHMEMI_RMA_TYPES(USHMEMI_DECL_CTX_SIGNAL)
#undef USHMEMI_DECL_CTX_SIGNAL

#define USHMEMI_DECL_CTX_SIGNAL_SIZED(BITS, BYTES)                            \
    void shmem_ctx_put##BITS##_signal(shmem_ctx_t ctx, void *dest,            \
                                      const void *source, size_t nelems,      \
                                      uint64_t *sig_addr, uint64_t signal,    \
                                      int sig_op, int pe);                    \
    void shmem_ctx_put##BITS##_signal_nbi(                                    \
        shmem_ctx_t ctx, void *dest, const void *source, size_t nelems,       \
        uint64_t *sig_addr, uint64_t signal, int sig_op, int pe);
USHMEMI_SIZED_TYPES(USHMEMI_DECL_CTX_SIGNAL_SIZED)
#undef USHMEMI_DECL_CTX_SIGNAL_SIZED

void shmem_ctx_putmem_signal(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems,
                             uint64_t *sig_addr, uint64_t signal, int sig_op, int pe);
void shmem_ctx_putmem_signal_nbi(shmem_ctx_t ctx, void *dest, const void *source,
                                 size_t nelems, uint64_t *sig_addr, uint64_t signal,
                                 int sig_op, int pe);

/* OpenSHMEM 1.6: the signal word updated alone, atomically. Like the
 * specification's C11 form, shmem_signal_add and shmem_signal_set take an
 * optional leading context (chosen by the number of arguments, in C and
 * C++); the exported functions of those names are the forms without. */
void(shmem_signal_add)(uint64_t *sig_addr, uint64_t signal, int pe);
void(shmem_signal_set)(uint64_t *sig_addr, uint64_t signal, int pe);
#define USHMEMI_SIGNAL_PICK(a1, a2, a3, a4, name, ...) name
#define shmem_signal_add(...)                                                 \
    USHMEMI_SIGNAL_PICK(__VA_ARGS__, shmem_ctx_signal_add, (shmem_signal_add), \
                        shmem_signal_add_takes_3_or_4_arguments, unused)(__VA_ARGS__)
#define shmem_signal_set(...)                                                 \
    USHMEMI_SIGNAL_PICK(__VA_ARGS__, shmem_ctx_signal_set, (shmem_signal_set), \
                        shmem_signal_set_takes_3_or_4_arguments, unused)(__VA_ARGS__)
void shmem_ctx_signal_add(shmem_ctx_t ctx, uint64_t *sig_addr, uint64_t signal, int pe);
void shmem_ctx_signal_set(shmem_ctx_t ctx, uint64_t *sig_addr, uint64_t signal, int pe);
uint64_t shmem_signal_wait_until(uint64_t *sig_addr, int cmp, uint64_t cmp_value);

/* ------------------------------------------------------------------------ */
/* Point-to-point synchronisation                                           */

#define USHMEMI_DECL_SYNC(NAME, T)                                            \
    void shmem_##NAME##_wait_until(T *ivar, int cmp, T cmp_value);            \
    void shmem_##NAME##_wait_until_all(T *ivars, size_t nelems,               \
                                       const int *status, int cmp,            \
                                       T cmp_value);                          \
    size_t shmem_##NAME##_wait_until_any(T *ivars, size_t nelems,             \
                                         const int *status, int cmp,          \
                                         T cmp_value);                        \
    size_t shmem_##NAME##_wait_until_some(T *ivars, size_t nelems,            \
                                          size_t *indices, const int *status, \
                                          int cmp, T cmp_value);              \
    void shmem_##NAME##_wait_until_all_vector(T *ivars, size_t nelems,        \
                                              const int *status, int cmp,     \
                                              const T *cmp_values);                 \
    size_t shmem_##NAME##_wait_until_any_vector(T *ivars, size_t nelems,      \
                                                const int *status, int cmp,   \
                                                const T *cmp_values);               \
    size_t shmem_##NAME##_wait_until_some_vector(                             \
        T *ivars, size_t nelems, size_t *indices, const int *status, int cmp, \
        const T *cmp_values);                                                       \
    int shmem_##NAME##_test(T *ivar, int cmp, T cmp_value);                   \
    int shmem_##NAME##_test_all(T *ivars, size_t nelems, const int *status,   \
                                int cmp, T cmp_value);                        \
    size_t shmem_##NAME##_test_any(T *ivars, size_t nelems,                   \
                                   const int *status, int cmp, T cmp_value);  \
    size_t shmem_##NAME##_test_some(T *ivars, size_t nelems, size_t *indices, \
                                    const int *status, int cmp, T cmp_value); \
    int shmem_##NAME##_test_all_vector(T *ivars, size_t nelems,               \
                                       const int *status, int cmp,            \
                                       const T *cmp_values);                        \
    size_t shmem_##NAME##_test_any_vector(T *ivars, size_t nelems,            \
                                          const int *status, int cmp,         \
                                          const T *cmp_values);                     \
    size_t shmem_##NAME##_test_some_vector(T *ivars, size_t nelems,           \
                                           size_t *indices,                   \
                                           const int *status, int cmp,        \
                                           const T *cmp_values);                    \
    void shmem_##NAME##_wait(T *ivar, T cmp_value);
USHMEMI_SYNC_TYPES(USHMEMI_DECL_SYNC)
USHMEMI_SYNC_OLD_TYPES(USHMEMI_DECL_SYNC)
#undef USHMEMI_DECL_SYNC

void shmem_wait(long *ivar, long cmp_value);
/* The OpenSHMEM 1.3 long-only form; C11 code gets the generic below. */
void shmem_wait_until(long *ivar, int cmp, long cmp_value);

/* ------------------------------------------------------------------------ */
/* C11 generic selections. The controlling expression is the pointed-to
 * object, whose lvalue conversion drops qualifiers, so `const T *` sources
 * select like `T *`. Fixed-width and size types are typedefs of the base
 * types listed, which is why they do not appear. */
#if defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L && !defined(__cplusplus)

#define USHMEMI_GEN_RMA_P(ptr, P, op)                                         \
    _Generic(*(ptr),                                                          \
        float: P##float_##op,                                                 \
        double: P##double_##op,                                               \
        long double: P##longdouble_##op,                                      \
        char: P##char_##op,                                                   \
        signed char: P##schar_##op,                                           \
        short: P##short_##op,                                                 \
        int: P##int_##op,                                                     \
        long: P##long_##op,                                                   \
        long long: P##longlong_##op,                                          \
        unsigned char: P##uchar_##op,                                         \
        unsigned short: P##ushort_##op,                                       \
        unsigned int: P##uint_##op,                                           \
        unsigned long: P##ulong_##op,                                         \
        unsigned long long: P##ulonglong_##op)

#define USHMEMI_GEN_RMA(ptr, op) USHMEMI_GEN_RMA_P(ptr, shmem_, op)
#define USHMEMI_GEN_RMA_CTX(ptr, op) USHMEMI_GEN_RMA_P(ptr, shmem_ctx_, op)

#define USHMEMI_GEN_AMO_STD_P(ptr, P, op)                                     \
    _Generic(*(ptr),                                                          \
        int: P##int_##op,                                                     \
        long: P##long_##op,                                                   \
        long long: P##longlong_##op,                                          \
        unsigned int: P##uint_##op,                                           \
        unsigned long: P##ulong_##op,                                         \
        unsigned long long: P##ulonglong_##op)

#define USHMEMI_GEN_AMO_STD(ptr, op) USHMEMI_GEN_AMO_STD_P(ptr, shmem_, op)
#define USHMEMI_GEN_AMO_STD_CTX(ptr, op) USHMEMI_GEN_AMO_STD_P(ptr, shmem_ctx_, op)

#define USHMEMI_GEN_AMO_EXT_P(ptr, P, op)                                     \
    _Generic(*(ptr),                                                          \
        int: P##int_##op,                                                     \
        long: P##long_##op,                                                   \
        long long: P##longlong_##op,                                          \
        unsigned int: P##uint_##op,                                           \
        unsigned long: P##ulong_##op,                                         \
        unsigned long long: P##ulonglong_##op,                                \
        float: P##float_##op,                                                 \
        double: P##double_##op)

#define USHMEMI_GEN_AMO_EXT(ptr, op) USHMEMI_GEN_AMO_EXT_P(ptr, shmem_, op)
#define USHMEMI_GEN_AMO_EXT_CTX(ptr, op) USHMEMI_GEN_AMO_EXT_P(ptr, shmem_ctx_, op)

/* int32_t and int64_t are signed types distinct from the unsigned ones, so
 * they can be listed beside them whatever base types they alias. */
#define USHMEMI_GEN_AMO_BIT_P(ptr, P, op)                                     \
    _Generic(*(ptr),                                                          \
        unsigned int: P##uint_##op,                                           \
        unsigned long: P##ulong_##op,                                         \
        unsigned long long: P##ulonglong_##op,                                \
        int32_t: P##int32_##op,                                               \
        int64_t: P##int64_##op)

#define USHMEMI_GEN_AMO_BIT(ptr, op) USHMEMI_GEN_AMO_BIT_P(ptr, shmem_, op)
#define USHMEMI_GEN_AMO_BIT_CTX(ptr, op) USHMEMI_GEN_AMO_BIT_P(ptr, shmem_ctx_, op)

#define USHMEMI_GEN_SYNC(ptr, op)                                             \
    _Generic(*(ptr),                                                          \
        short: shmem_short_##op,                                              \
        unsigned short: shmem_ushort_##op,                                    \
        int: shmem_int_##op,                                                  \
        long: shmem_long_##op,                                                \
        long long: shmem_longlong_##op,                                       \
        unsigned int: shmem_uint_##op,                                        \
        unsigned long: shmem_ulong_##op,                                      \
        unsigned long long: shmem_ulonglong_##op)

#define USHMEMI_GEN_SYNC_OLD(ptr, op)                                         \
    _Generic(*(ptr),                                                          \
        short: shmem_short_##op,                                              \
        unsigned short: shmem_ushort_##op,                                    \
        int: shmem_int_##op,                                                  \
        long: shmem_long_##op,                                                \
        long long: shmem_longlong_##op,                                       \
        unsigned int: shmem_uint_##op,                                        \
        unsigned long: shmem_ulong_##op,                                      \
        unsigned long long: shmem_ulonglong_##op)

/* Every generic below takes an optional leading context, as OpenSHMEM 1.5
 * defines them: shmem_put(dest, source, nelems, pe) or shmem_put(ctx, dest,
 * source, nelems, pe). The form is chosen by the number of arguments. */
#define USHMEMI_NARGS(...) USHMEMI_NARGS_(__VA_ARGS__, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0)
#define USHMEMI_NARGS_(a1, a2, a3, a4, a5, a6, a7, a8, a9, n, ...) n
#define USHMEMI_CAT(a, b) USHMEMI_CAT_(a, b)
#define USHMEMI_CAT_(a, b) a##b
#define USHMEMI_CTX_OR_NOT(op, ...)                                           \
    USHMEMI_CAT(USHMEMI_CAT(USHMEMI_G_##op, _), USHMEMI_NARGS(__VA_ARGS__))(__VA_ARGS__)

#define shmem_put(...) USHMEMI_CTX_OR_NOT(put, __VA_ARGS__)
#define USHMEMI_G_put_4(dest, source, nelems, pe)                             \
    USHMEMI_GEN_RMA(dest, put)(dest, source, nelems, pe)
#define USHMEMI_G_put_5(ctx, dest, source, nelems, pe)                        \
    USHMEMI_GEN_RMA_CTX(dest, put)(ctx, dest, source, nelems, pe)
#define shmem_get(...) USHMEMI_CTX_OR_NOT(get, __VA_ARGS__)
#define USHMEMI_G_get_4(dest, source, nelems, pe)                             \
    USHMEMI_GEN_RMA(dest, get)(dest, source, nelems, pe)
#define USHMEMI_G_get_5(ctx, dest, source, nelems, pe)                        \
    USHMEMI_GEN_RMA_CTX(dest, get)(ctx, dest, source, nelems, pe)
#define shmem_p(...) USHMEMI_CTX_OR_NOT(p, __VA_ARGS__)
#define USHMEMI_G_p_3(dest, value, pe) USHMEMI_GEN_RMA(dest, p)(dest, value, pe)
#define USHMEMI_G_p_4(ctx, dest, value, pe)                                   \
    USHMEMI_GEN_RMA_CTX(dest, p)(ctx, dest, value, pe)
#define shmem_g(...) USHMEMI_CTX_OR_NOT(g, __VA_ARGS__)
#define USHMEMI_G_g_2(source, pe) USHMEMI_GEN_RMA(source, g)(source, pe)
#define USHMEMI_G_g_3(ctx, source, pe)                                        \
    USHMEMI_GEN_RMA_CTX(source, g)(ctx, source, pe)
#define shmem_iput(...) USHMEMI_CTX_OR_NOT(iput, __VA_ARGS__)
#define USHMEMI_G_iput_6(dest, source, dst, sst, nelems, pe)                  \
    USHMEMI_GEN_RMA(dest, iput)(dest, source, dst, sst, nelems, pe)
#define USHMEMI_G_iput_7(ctx, dest, source, dst, sst, nelems, pe)             \
    USHMEMI_GEN_RMA_CTX(dest, iput)(ctx, dest, source, dst, sst, nelems, pe)
#define shmem_iget(...) USHMEMI_CTX_OR_NOT(iget, __VA_ARGS__)
#define USHMEMI_G_iget_6(dest, source, dst, sst, nelems, pe)                  \
    USHMEMI_GEN_RMA(dest, iget)(dest, source, dst, sst, nelems, pe)
#define USHMEMI_G_iget_7(ctx, dest, source, dst, sst, nelems, pe)             \
    USHMEMI_GEN_RMA_CTX(dest, iget)(ctx, dest, source, dst, sst, nelems, pe)
#define shmem_ibput(...) USHMEMI_CTX_OR_NOT(ibput, __VA_ARGS__)
#define USHMEMI_G_ibput_7(dest, source, dst, sst, bsize, nblocks, pe)         \
    USHMEMI_GEN_RMA(dest, ibput)(dest, source, dst, sst, bsize, nblocks, pe)
#define USHMEMI_G_ibput_8(ctx, dest, source, dst, sst, bsize, nblocks, pe)    \
    USHMEMI_GEN_RMA_CTX(dest, ibput)                                          \
        (ctx, dest, source, dst, sst, bsize, nblocks, pe)
#define shmem_ibget(...) USHMEMI_CTX_OR_NOT(ibget, __VA_ARGS__)
#define USHMEMI_G_ibget_7(dest, source, dst, sst, bsize, nblocks, pe)         \
    USHMEMI_GEN_RMA(dest, ibget)(dest, source, dst, sst, bsize, nblocks, pe)
#define USHMEMI_G_ibget_8(ctx, dest, source, dst, sst, bsize, nblocks, pe)    \
    USHMEMI_GEN_RMA_CTX(dest, ibget)                                          \
        (ctx, dest, source, dst, sst, bsize, nblocks, pe)
#define shmem_put_nbi(...) USHMEMI_CTX_OR_NOT(put_nbi, __VA_ARGS__)
#define USHMEMI_G_put_nbi_4(dest, source, nelems, pe)                         \
    USHMEMI_GEN_RMA(dest, put_nbi)(dest, source, nelems, pe)
#define USHMEMI_G_put_nbi_5(ctx, dest, source, nelems, pe)                    \
    USHMEMI_GEN_RMA_CTX(dest, put_nbi)(ctx, dest, source, nelems, pe)
#define shmem_get_nbi(...) USHMEMI_CTX_OR_NOT(get_nbi, __VA_ARGS__)
#define USHMEMI_G_get_nbi_4(dest, source, nelems, pe)                         \
    USHMEMI_GEN_RMA(dest, get_nbi)(dest, source, nelems, pe)
#define USHMEMI_G_get_nbi_5(ctx, dest, source, nelems, pe)                    \
    USHMEMI_GEN_RMA_CTX(dest, get_nbi)(ctx, dest, source, nelems, pe)
#define shmem_put_signal(...) USHMEMI_CTX_OR_NOT(put_signal, __VA_ARGS__)
#define USHMEMI_G_put_signal_7(dest, source, nelems, sig_addr, signal, sig_op, pe) \
    USHMEMI_GEN_RMA(dest, put_signal)                                         \
        (dest, source, nelems, sig_addr, signal, sig_op, pe)
#define USHMEMI_G_put_signal_8(ctx, dest, source, nelems, sig_addr, signal, sig_op, pe) \
    USHMEMI_GEN_RMA_CTX(dest, put_signal)                                     \
        (ctx, dest, source, nelems, sig_addr, signal, sig_op, pe)
#define shmem_put_signal_nbi(...) USHMEMI_CTX_OR_NOT(put_signal_nbi, __VA_ARGS__)
#define USHMEMI_G_put_signal_nbi_7(dest, source, nelems, sig_addr, signal, sig_op, pe) \
    USHMEMI_GEN_RMA(dest, put_signal_nbi)                                     \
        (dest, source, nelems, sig_addr, signal, sig_op, pe)
#define USHMEMI_G_put_signal_nbi_8(ctx, dest, source, nelems, sig_addr, signal, sig_op, pe) \
    USHMEMI_GEN_RMA_CTX(dest, put_signal_nbi)                                 \
        (ctx, dest, source, nelems, sig_addr, signal, sig_op, pe)
#define shmem_atomic_fetch(...) USHMEMI_CTX_OR_NOT(atomic_fetch, __VA_ARGS__)
#define USHMEMI_G_atomic_fetch_2(source, pe)                                  \
    USHMEMI_GEN_AMO_EXT(source, atomic_fetch)(source, pe)
#define USHMEMI_G_atomic_fetch_3(ctx, source, pe)                             \
    USHMEMI_GEN_AMO_EXT_CTX(source, atomic_fetch)(ctx, source, pe)
#define shmem_atomic_set(...) USHMEMI_CTX_OR_NOT(atomic_set, __VA_ARGS__)
#define USHMEMI_G_atomic_set_3(dest, value, pe)                               \
    USHMEMI_GEN_AMO_EXT(dest, atomic_set)(dest, value, pe)
#define USHMEMI_G_atomic_set_4(ctx, dest, value, pe)                          \
    USHMEMI_GEN_AMO_EXT_CTX(dest, atomic_set)(ctx, dest, value, pe)
#define shmem_atomic_swap(...) USHMEMI_CTX_OR_NOT(atomic_swap, __VA_ARGS__)
#define USHMEMI_G_atomic_swap_3(dest, value, pe)                              \
    USHMEMI_GEN_AMO_EXT(dest, atomic_swap)(dest, value, pe)
#define USHMEMI_G_atomic_swap_4(ctx, dest, value, pe)                         \
    USHMEMI_GEN_AMO_EXT_CTX(dest, atomic_swap)(ctx, dest, value, pe)
#define shmem_atomic_fetch_nbi(...) USHMEMI_CTX_OR_NOT(atomic_fetch_nbi, __VA_ARGS__)
#define USHMEMI_G_atomic_fetch_nbi_3(fetch, source, pe)                       \
    USHMEMI_GEN_AMO_EXT(fetch, atomic_fetch_nbi)(fetch, source, pe)
#define USHMEMI_G_atomic_fetch_nbi_4(ctx, fetch, source, pe)                  \
    USHMEMI_GEN_AMO_EXT_CTX(fetch, atomic_fetch_nbi)(ctx, fetch, source, pe)
#define shmem_atomic_swap_nbi(...) USHMEMI_CTX_OR_NOT(atomic_swap_nbi, __VA_ARGS__)
#define USHMEMI_G_atomic_swap_nbi_4(fetch, dest, value, pe)                   \
    USHMEMI_GEN_AMO_EXT(fetch, atomic_swap_nbi)(fetch, dest, value, pe)
#define USHMEMI_G_atomic_swap_nbi_5(ctx, fetch, dest, value, pe)              \
    USHMEMI_GEN_AMO_EXT_CTX(fetch, atomic_swap_nbi)(ctx, fetch, dest, value, pe)
#define shmem_atomic_compare_swap(...) USHMEMI_CTX_OR_NOT(atomic_compare_swap, __VA_ARGS__)
#define USHMEMI_G_atomic_compare_swap_4(dest, cond, value, pe)                \
    USHMEMI_GEN_AMO_STD(dest, atomic_compare_swap)(dest, cond, value, pe)
#define USHMEMI_G_atomic_compare_swap_5(ctx, dest, cond, value, pe)           \
    USHMEMI_GEN_AMO_STD_CTX(dest, atomic_compare_swap)                        \
        (ctx, dest, cond, value, pe)
#define shmem_atomic_fetch_inc(...) USHMEMI_CTX_OR_NOT(atomic_fetch_inc, __VA_ARGS__)
#define USHMEMI_G_atomic_fetch_inc_2(dest, pe)                                \
    USHMEMI_GEN_AMO_STD(dest, atomic_fetch_inc)(dest, pe)
#define USHMEMI_G_atomic_fetch_inc_3(ctx, dest, pe)                           \
    USHMEMI_GEN_AMO_STD_CTX(dest, atomic_fetch_inc)(ctx, dest, pe)
#define shmem_atomic_inc(...) USHMEMI_CTX_OR_NOT(atomic_inc, __VA_ARGS__)
#define USHMEMI_G_atomic_inc_2(dest, pe)                                      \
    USHMEMI_GEN_AMO_STD(dest, atomic_inc)(dest, pe)
#define USHMEMI_G_atomic_inc_3(ctx, dest, pe)                                 \
    USHMEMI_GEN_AMO_STD_CTX(dest, atomic_inc)(ctx, dest, pe)
#define shmem_atomic_fetch_add(...) USHMEMI_CTX_OR_NOT(atomic_fetch_add, __VA_ARGS__)
#define USHMEMI_G_atomic_fetch_add_3(dest, value, pe)                         \
    USHMEMI_GEN_AMO_STD(dest, atomic_fetch_add)(dest, value, pe)
#define USHMEMI_G_atomic_fetch_add_4(ctx, dest, value, pe)                    \
    USHMEMI_GEN_AMO_STD_CTX(dest, atomic_fetch_add)(ctx, dest, value, pe)
#define shmem_atomic_add(...) USHMEMI_CTX_OR_NOT(atomic_add, __VA_ARGS__)
#define USHMEMI_G_atomic_add_3(dest, value, pe)                               \
    USHMEMI_GEN_AMO_STD(dest, atomic_add)(dest, value, pe)
#define USHMEMI_G_atomic_add_4(ctx, dest, value, pe)                          \
    USHMEMI_GEN_AMO_STD_CTX(dest, atomic_add)(ctx, dest, value, pe)
#define shmem_atomic_compare_swap_nbi(...) USHMEMI_CTX_OR_NOT(atomic_compare_swap_nbi, __VA_ARGS__)
#define USHMEMI_G_atomic_compare_swap_nbi_5(fetch, dest, cond, value, pe)     \
    USHMEMI_GEN_AMO_STD(fetch, atomic_compare_swap_nbi)                       \
        (fetch, dest, cond, value, pe)
#define USHMEMI_G_atomic_compare_swap_nbi_6(ctx, fetch, dest, cond, value, pe) \
    USHMEMI_GEN_AMO_STD_CTX(fetch, atomic_compare_swap_nbi)                   \
        (ctx, fetch, dest, cond, value, pe)
#define shmem_atomic_fetch_inc_nbi(...) USHMEMI_CTX_OR_NOT(atomic_fetch_inc_nbi, __VA_ARGS__)
#define USHMEMI_G_atomic_fetch_inc_nbi_3(fetch, dest, pe)                     \
    USHMEMI_GEN_AMO_STD(fetch, atomic_fetch_inc_nbi)(fetch, dest, pe)
#define USHMEMI_G_atomic_fetch_inc_nbi_4(ctx, fetch, dest, pe)                \
    USHMEMI_GEN_AMO_STD_CTX(fetch, atomic_fetch_inc_nbi)(ctx, fetch, dest, pe)
#define shmem_atomic_fetch_add_nbi(...) USHMEMI_CTX_OR_NOT(atomic_fetch_add_nbi, __VA_ARGS__)
#define USHMEMI_G_atomic_fetch_add_nbi_4(fetch, dest, value, pe)              \
    USHMEMI_GEN_AMO_STD(fetch, atomic_fetch_add_nbi)(fetch, dest, value, pe)
#define USHMEMI_G_atomic_fetch_add_nbi_5(ctx, fetch, dest, value, pe)         \
    USHMEMI_GEN_AMO_STD_CTX(fetch, atomic_fetch_add_nbi)                      \
        (ctx, fetch, dest, value, pe)
#define shmem_atomic_fetch_and(...) USHMEMI_CTX_OR_NOT(atomic_fetch_and, __VA_ARGS__)
#define USHMEMI_G_atomic_fetch_and_3(dest, value, pe)                         \
    USHMEMI_GEN_AMO_BIT(dest, atomic_fetch_and)(dest, value, pe)
#define USHMEMI_G_atomic_fetch_and_4(ctx, dest, value, pe)                    \
    USHMEMI_GEN_AMO_BIT_CTX(dest, atomic_fetch_and)(ctx, dest, value, pe)
#define shmem_atomic_and(...) USHMEMI_CTX_OR_NOT(atomic_and, __VA_ARGS__)
#define USHMEMI_G_atomic_and_3(dest, value, pe)                               \
    USHMEMI_GEN_AMO_BIT(dest, atomic_and)(dest, value, pe)
#define USHMEMI_G_atomic_and_4(ctx, dest, value, pe)                          \
    USHMEMI_GEN_AMO_BIT_CTX(dest, atomic_and)(ctx, dest, value, pe)
#define shmem_atomic_fetch_or(...) USHMEMI_CTX_OR_NOT(atomic_fetch_or, __VA_ARGS__)
#define USHMEMI_G_atomic_fetch_or_3(dest, value, pe)                          \
    USHMEMI_GEN_AMO_BIT(dest, atomic_fetch_or)(dest, value, pe)
#define USHMEMI_G_atomic_fetch_or_4(ctx, dest, value, pe)                     \
    USHMEMI_GEN_AMO_BIT_CTX(dest, atomic_fetch_or)(ctx, dest, value, pe)
#define shmem_atomic_or(...) USHMEMI_CTX_OR_NOT(atomic_or, __VA_ARGS__)
#define USHMEMI_G_atomic_or_3(dest, value, pe)                                \
    USHMEMI_GEN_AMO_BIT(dest, atomic_or)(dest, value, pe)
#define USHMEMI_G_atomic_or_4(ctx, dest, value, pe)                           \
    USHMEMI_GEN_AMO_BIT_CTX(dest, atomic_or)(ctx, dest, value, pe)
#define shmem_atomic_fetch_xor(...) USHMEMI_CTX_OR_NOT(atomic_fetch_xor, __VA_ARGS__)
#define USHMEMI_G_atomic_fetch_xor_3(dest, value, pe)                         \
    USHMEMI_GEN_AMO_BIT(dest, atomic_fetch_xor)(dest, value, pe)
#define USHMEMI_G_atomic_fetch_xor_4(ctx, dest, value, pe)                    \
    USHMEMI_GEN_AMO_BIT_CTX(dest, atomic_fetch_xor)(ctx, dest, value, pe)
#define shmem_atomic_xor(...) USHMEMI_CTX_OR_NOT(atomic_xor, __VA_ARGS__)
#define USHMEMI_G_atomic_xor_3(dest, value, pe)                               \
    USHMEMI_GEN_AMO_BIT(dest, atomic_xor)(dest, value, pe)
#define USHMEMI_G_atomic_xor_4(ctx, dest, value, pe)                          \
    USHMEMI_GEN_AMO_BIT_CTX(dest, atomic_xor)(ctx, dest, value, pe)
#define shmem_atomic_fetch_and_nbi(...) USHMEMI_CTX_OR_NOT(atomic_fetch_and_nbi, __VA_ARGS__)
#define USHMEMI_G_atomic_fetch_and_nbi_4(fetch, dest, value, pe)              \
    USHMEMI_GEN_AMO_BIT(fetch, atomic_fetch_and_nbi)(fetch, dest, value, pe)
#define USHMEMI_G_atomic_fetch_and_nbi_5(ctx, fetch, dest, value, pe)         \
    USHMEMI_GEN_AMO_BIT_CTX(fetch, atomic_fetch_and_nbi)                      \
        (ctx, fetch, dest, value, pe)
#define shmem_atomic_fetch_or_nbi(...) USHMEMI_CTX_OR_NOT(atomic_fetch_or_nbi, __VA_ARGS__)
#define USHMEMI_G_atomic_fetch_or_nbi_4(fetch, dest, value, pe)               \
    USHMEMI_GEN_AMO_BIT(fetch, atomic_fetch_or_nbi)(fetch, dest, value, pe)
#define USHMEMI_G_atomic_fetch_or_nbi_5(ctx, fetch, dest, value, pe)          \
    USHMEMI_GEN_AMO_BIT_CTX(fetch, atomic_fetch_or_nbi)                       \
        (ctx, fetch, dest, value, pe)
#define shmem_atomic_fetch_xor_nbi(...) USHMEMI_CTX_OR_NOT(atomic_fetch_xor_nbi, __VA_ARGS__)
#define USHMEMI_G_atomic_fetch_xor_nbi_4(fetch, dest, value, pe)              \
    USHMEMI_GEN_AMO_BIT(fetch, atomic_fetch_xor_nbi)(fetch, dest, value, pe)
#define USHMEMI_G_atomic_fetch_xor_nbi_5(ctx, fetch, dest, value, pe)         \
    USHMEMI_GEN_AMO_BIT_CTX(fetch, atomic_fetch_xor_nbi)                      \
        (ctx, fetch, dest, value, pe)

/* Deprecated generic atomics (OpenSHMEM 1.3 C11 names). */
#define shmem_fadd(dest, value, pe)                                           \
    _Generic(*(dest), int: shmem_int_fadd, long: shmem_long_fadd,             \
             long long: shmem_longlong_fadd)(dest, value, pe)
#define shmem_finc(dest, pe)                                                  \
    _Generic(*(dest), int: shmem_int_finc, long: shmem_long_finc,             \
             long long: shmem_longlong_finc)(dest, pe)
#define shmem_add(dest, value, pe)                                            \
    _Generic(*(dest), int: shmem_int_add, long: shmem_long_add,               \
             long long: shmem_longlong_add)(dest, value, pe)
#define shmem_inc(dest, pe)                                                   \
    _Generic(*(dest), int: shmem_int_inc, long: shmem_long_inc,               \
             long long: shmem_longlong_inc)(dest, pe)
#define shmem_cswap(dest, cond, value, pe)                                    \
    _Generic(*(dest), int: shmem_int_cswap, long: shmem_long_cswap,           \
             long long: shmem_longlong_cswap)(dest, cond, value, pe)
#define shmem_swap(dest, value, pe)                                           \
    _Generic(*(dest), int: shmem_int_swap, long: shmem_long_swap,             \
             long long: shmem_longlong_swap, float: shmem_float_swap,         \
             double: shmem_double_swap)(dest, value, pe)
#define shmem_fetch(source, pe)                                               \
    _Generic(*(source), int: shmem_int_fetch, long: shmem_long_fetch,         \
             long long: shmem_longlong_fetch, float: shmem_float_fetch,       \
             double: shmem_double_fetch)(source, pe)
#define shmem_set(dest, value, pe)                                            \
    _Generic(*(dest), int: shmem_int_set, long: shmem_long_set,               \
             long long: shmem_longlong_set, float: shmem_float_set,           \
             double: shmem_double_set)(dest, value, pe)

#define shmem_wait_until(ivar, cmp, cmp_value)                                \
    USHMEMI_GEN_SYNC_OLD(ivar, wait_until)(ivar, cmp, cmp_value)
#define shmem_test(ivar, cmp, cmp_value)                                      \
    USHMEMI_GEN_SYNC_OLD(ivar, test)(ivar, cmp, cmp_value)
#define shmem_wait_until_all(ivars, nelems, status, cmp, cmp_value)           \
    USHMEMI_GEN_SYNC(ivars, wait_until_all)(ivars, nelems, status, cmp,       \
                                            cmp_value)
#define shmem_wait_until_any(ivars, nelems, status, cmp, cmp_value)           \
    USHMEMI_GEN_SYNC(ivars, wait_until_any)(ivars, nelems, status, cmp,       \
                                            cmp_value)
#define shmem_wait_until_some(ivars, nelems, indices, status, cmp, cmp_value) \
    USHMEMI_GEN_SYNC(ivars, wait_until_some)(ivars, nelems, indices, status,  \
                                             cmp, cmp_value)
#define shmem_wait_until_all_vector(ivars, nelems, status, cmp, cmp_values)   \
    USHMEMI_GEN_SYNC(ivars, wait_until_all_vector)(ivars, nelems, status,     \
                                                   cmp, cmp_values)
#define shmem_wait_until_any_vector(ivars, nelems, status, cmp, cmp_values)   \
    USHMEMI_GEN_SYNC(ivars, wait_until_any_vector)(ivars, nelems, status,     \
                                                   cmp, cmp_values)
#define shmem_wait_until_some_vector(ivars, nelems, indices, status, cmp,     \
                                     cmp_values)                              \
    USHMEMI_GEN_SYNC(ivars, wait_until_some_vector)(ivars, nelems, indices,   \
                                                    status, cmp, cmp_values)
#define shmem_test_all(ivars, nelems, status, cmp, cmp_value)                 \
    USHMEMI_GEN_SYNC(ivars, test_all)(ivars, nelems, status, cmp, cmp_value)
#define shmem_test_any(ivars, nelems, status, cmp, cmp_value)                 \
    USHMEMI_GEN_SYNC(ivars, test_any)(ivars, nelems, status, cmp, cmp_value)
#define shmem_test_some(ivars, nelems, indices, status, cmp, cmp_value)       \
    USHMEMI_GEN_SYNC(ivars, test_some)(ivars, nelems, indices, status, cmp,   \
                                       cmp_value)
#define shmem_test_all_vector(ivars, nelems, status, cmp, cmp_values)         \
    USHMEMI_GEN_SYNC(ivars, test_all_vector)(ivars, nelems, status, cmp,      \
                                             cmp_values)
#define shmem_test_any_vector(ivars, nelems, status, cmp, cmp_values)         \
    USHMEMI_GEN_SYNC(ivars, test_any_vector)(ivars, nelems, status, cmp,      \
                                             cmp_values)
#define shmem_test_some_vector(ivars, nelems, indices, status, cmp,           \
                               cmp_values)                                    \
    USHMEMI_GEN_SYNC(ivars, test_some_vector)(ivars, nelems, indices, status, \
                                              cmp, cmp_values)

#endif /* C11 */

#endif
