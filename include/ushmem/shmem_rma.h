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

/* Types that only the deprecated wait, wait_until and test still accept. */
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
                                              T *cmp_values);                 \
    size_t shmem_##NAME##_wait_until_any_vector(T *ivars, size_t nelems,      \
                                                const int *status, int cmp,   \
                                                T *cmp_values);               \
    size_t shmem_##NAME##_wait_until_some_vector(                             \
        T *ivars, size_t nelems, size_t *indices, const int *status, int cmp, \
        T *cmp_values);                                                       \
    int shmem_##NAME##_test(T *ivar, int cmp, T cmp_value);                   \
    int shmem_##NAME##_test_all(T *ivars, size_t nelems, const int *status,   \
                                int cmp, T cmp_value);                        \
    size_t shmem_##NAME##_test_any(T *ivars, size_t nelems,                   \
                                   const int *status, int cmp, T cmp_value);  \
    size_t shmem_##NAME##_test_some(T *ivars, size_t nelems, size_t *indices, \
                                    const int *status, int cmp, T cmp_value); \
    int shmem_##NAME##_test_all_vector(T *ivars, size_t nelems,               \
                                       const int *status, int cmp,            \
                                       T *cmp_values);                        \
    size_t shmem_##NAME##_test_any_vector(T *ivars, size_t nelems,            \
                                          const int *status, int cmp,         \
                                          T *cmp_values);                     \
    size_t shmem_##NAME##_test_some_vector(T *ivars, size_t nelems,           \
                                           size_t *indices,                   \
                                           const int *status, int cmp,        \
                                           T *cmp_values);                    \
    void shmem_##NAME##_wait(T *ivar, T cmp_value);
USHMEMI_SYNC_TYPES(USHMEMI_DECL_SYNC)
#undef USHMEMI_DECL_SYNC

/* Deprecated: wait until *ivar != cmp_value, and the short types. */
#define USHMEMI_DECL_SYNC_OLD(NAME, T)                                        \
    void shmem_##NAME##_wait_until(T *ivar, int cmp, T cmp_value);            \
    int shmem_##NAME##_test(T *ivar, int cmp, T cmp_value);                   \
    void shmem_##NAME##_wait(T *ivar, T cmp_value);
USHMEMI_SYNC_OLD_TYPES(USHMEMI_DECL_SYNC_OLD)
#undef USHMEMI_DECL_SYNC_OLD

void shmem_wait(long *ivar, long cmp_value);
/* The OpenSHMEM 1.3 long-only form; C11 code gets the generic below. */
void shmem_wait_until(long *ivar, int cmp, long cmp_value);

/* ------------------------------------------------------------------------ */
/* C11 generic selections. The controlling expression is the pointed-to
 * object, whose lvalue conversion drops qualifiers, so `const T *` sources
 * select like `T *`. Fixed-width and size types are typedefs of the base
 * types listed, which is why they do not appear. */
#if defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L && !defined(__cplusplus)

#define USHMEMI_GEN_RMA(ptr, op)                                              \
    _Generic(*(ptr),                                                          \
        float: shmem_float_##op,                                              \
        double: shmem_double_##op,                                            \
        long double: shmem_longdouble_##op,                                   \
        char: shmem_char_##op,                                                \
        signed char: shmem_schar_##op,                                        \
        short: shmem_short_##op,                                              \
        int: shmem_int_##op,                                                  \
        long: shmem_long_##op,                                                \
        long long: shmem_longlong_##op,                                       \
        unsigned char: shmem_uchar_##op,                                      \
        unsigned short: shmem_ushort_##op,                                    \
        unsigned int: shmem_uint_##op,                                        \
        unsigned long: shmem_ulong_##op,                                      \
        unsigned long long: shmem_ulonglong_##op)

#define USHMEMI_GEN_AMO_STD(ptr, op)                                          \
    _Generic(*(ptr),                                                          \
        int: shmem_int_##op,                                                  \
        long: shmem_long_##op,                                                \
        long long: shmem_longlong_##op,                                       \
        unsigned int: shmem_uint_##op,                                        \
        unsigned long: shmem_ulong_##op,                                      \
        unsigned long long: shmem_ulonglong_##op)

#define USHMEMI_GEN_AMO_EXT(ptr, op)                                          \
    _Generic(*(ptr),                                                          \
        int: shmem_int_##op,                                                  \
        long: shmem_long_##op,                                                \
        long long: shmem_longlong_##op,                                       \
        unsigned int: shmem_uint_##op,                                        \
        unsigned long: shmem_ulong_##op,                                      \
        unsigned long long: shmem_ulonglong_##op,                             \
        float: shmem_float_##op,                                              \
        double: shmem_double_##op)

/* int32_t and int64_t are signed types distinct from the unsigned ones, so
 * they can be listed beside them whatever base types they alias. */
#define USHMEMI_GEN_AMO_BIT(ptr, op)                                          \
    _Generic(*(ptr),                                                          \
        unsigned int: shmem_uint_##op,                                        \
        unsigned long: shmem_ulong_##op,                                      \
        unsigned long long: shmem_ulonglong_##op,                             \
        int32_t: shmem_int32_##op,                                            \
        int64_t: shmem_int64_##op)

#define USHMEMI_GEN_SYNC(ptr, op)                                             \
    _Generic(*(ptr),                                                          \
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

#define shmem_put(dest, source, nelems, pe)                                   \
    USHMEMI_GEN_RMA(dest, put)(dest, source, nelems, pe)
#define shmem_get(dest, source, nelems, pe)                                   \
    USHMEMI_GEN_RMA(dest, get)(dest, source, nelems, pe)
#define shmem_p(dest, value, pe) USHMEMI_GEN_RMA(dest, p)(dest, value, pe)
#define shmem_g(source, pe) USHMEMI_GEN_RMA(source, g)(source, pe)
#define shmem_iput(dest, source, dst, sst, nelems, pe)                        \
    USHMEMI_GEN_RMA(dest, iput)(dest, source, dst, sst, nelems, pe)
#define shmem_iget(dest, source, dst, sst, nelems, pe)                        \
    USHMEMI_GEN_RMA(dest, iget)(dest, source, dst, sst, nelems, pe)
#define shmem_put_nbi(dest, source, nelems, pe)                               \
    USHMEMI_GEN_RMA(dest, put_nbi)(dest, source, nelems, pe)
#define shmem_get_nbi(dest, source, nelems, pe)                               \
    USHMEMI_GEN_RMA(dest, get_nbi)(dest, source, nelems, pe)

#define shmem_atomic_fetch(source, pe)                                        \
    USHMEMI_GEN_AMO_EXT(source, atomic_fetch)(source, pe)
#define shmem_atomic_set(dest, value, pe)                                     \
    USHMEMI_GEN_AMO_EXT(dest, atomic_set)(dest, value, pe)
#define shmem_atomic_swap(dest, value, pe)                                    \
    USHMEMI_GEN_AMO_EXT(dest, atomic_swap)(dest, value, pe)
#define shmem_atomic_fetch_nbi(fetch, source, pe)                             \
    USHMEMI_GEN_AMO_EXT(fetch, atomic_fetch_nbi)(fetch, source, pe)
#define shmem_atomic_swap_nbi(fetch, dest, value, pe)                         \
    USHMEMI_GEN_AMO_EXT(fetch, atomic_swap_nbi)(fetch, dest, value, pe)
#define shmem_atomic_compare_swap(dest, cond, value, pe)                      \
    USHMEMI_GEN_AMO_STD(dest, atomic_compare_swap)(dest, cond, value, pe)
#define shmem_atomic_fetch_inc(dest, pe)                                      \
    USHMEMI_GEN_AMO_STD(dest, atomic_fetch_inc)(dest, pe)
#define shmem_atomic_inc(dest, pe) USHMEMI_GEN_AMO_STD(dest, atomic_inc)(dest, pe)
#define shmem_atomic_fetch_add(dest, value, pe)                               \
    USHMEMI_GEN_AMO_STD(dest, atomic_fetch_add)(dest, value, pe)
#define shmem_atomic_add(dest, value, pe)                                     \
    USHMEMI_GEN_AMO_STD(dest, atomic_add)(dest, value, pe)
#define shmem_atomic_compare_swap_nbi(fetch, dest, cond, value, pe)           \
    USHMEMI_GEN_AMO_STD(fetch, atomic_compare_swap_nbi)(fetch, dest, cond,    \
                                                        value, pe)
#define shmem_atomic_fetch_inc_nbi(fetch, dest, pe)                           \
    USHMEMI_GEN_AMO_STD(fetch, atomic_fetch_inc_nbi)(fetch, dest, pe)
#define shmem_atomic_fetch_add_nbi(fetch, dest, value, pe)                    \
    USHMEMI_GEN_AMO_STD(fetch, atomic_fetch_add_nbi)(fetch, dest, value, pe)
#define shmem_atomic_fetch_and(dest, value, pe)                               \
    USHMEMI_GEN_AMO_BIT(dest, atomic_fetch_and)(dest, value, pe)
#define shmem_atomic_and(dest, value, pe)                                     \
    USHMEMI_GEN_AMO_BIT(dest, atomic_and)(dest, value, pe)
#define shmem_atomic_fetch_or(dest, value, pe)                                \
    USHMEMI_GEN_AMO_BIT(dest, atomic_fetch_or)(dest, value, pe)
#define shmem_atomic_or(dest, value, pe)                                      \
    USHMEMI_GEN_AMO_BIT(dest, atomic_or)(dest, value, pe)
#define shmem_atomic_fetch_xor(dest, value, pe)                               \
    USHMEMI_GEN_AMO_BIT(dest, atomic_fetch_xor)(dest, value, pe)
#define shmem_atomic_xor(dest, value, pe)                                     \
    USHMEMI_GEN_AMO_BIT(dest, atomic_xor)(dest, value, pe)
#define shmem_atomic_fetch_and_nbi(fetch, dest, value, pe)                    \
    USHMEMI_GEN_AMO_BIT(fetch, atomic_fetch_and_nbi)(fetch, dest, value, pe)
#define shmem_atomic_fetch_or_nbi(fetch, dest, value, pe)                     \
    USHMEMI_GEN_AMO_BIT(fetch, atomic_fetch_or_nbi)(fetch, dest, value, pe)
#define shmem_atomic_fetch_xor_nbi(fetch, dest, value, pe)                    \
    USHMEMI_GEN_AMO_BIT(fetch, atomic_fetch_xor_nbi)(fetch, dest, value, pe)

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

#define shmem_put_signal(dest, source, nelems, sig_addr, signal, sig_op, pe)  \
    USHMEMI_GEN_RMA(dest, put_signal)(dest, source, nelems, sig_addr, signal, \
                                      sig_op, pe)
#define shmem_put_signal_nbi(dest, source, nelems, sig_addr, signal, sig_op,  \
                             pe)                                              \
    USHMEMI_GEN_RMA(dest, put_signal_nbi)(dest, source, nelems, sig_addr,     \
                                          signal, sig_op, pe)

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
