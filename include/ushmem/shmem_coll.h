/* ushmem: OpenSHMEM 1.5 collectives (included by shmem.h, inside its
 * extern "C" block): team synchronisation, broadcast, collect, fcollect,
 * alltoall(s) and reductions on teams, plus the deprecated active-set forms
 * (PE_start, logPE_stride, PE_size, pSync) that older programs and the OSU
 * benchmarks still call.
 *
 * The type lists below are the single source of the typed names: this header
 * declares from them and the library defines from them, so a name cannot be
 * declared without being implemented. */
#ifndef USHMEM_SHMEM_COLL_H
#define USHMEM_SHMEM_COLL_H

#include <stddef.h>
#include <stdint.h>

#include "shmem_rma.h"

/* Collectives move the standard RMA types (one table, in shmem_rma.h). */
#define USHMEMI_COLL_RMA_TYPES(X) USHMEMI_RMA_TYPES(X)

/* Reduction type sets of OpenSHMEM 1.5 (Table 10). */
#define USHMEMI_COLL_BITWISE_TYPES(X)                                          \
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
    X(size, size_t)

#define USHMEMI_COLL_MINMAX_TYPES(X)                                           \
    USHMEMI_COLL_INT_TYPES(X)                                                 \
    X(float, float)                                                           \
    X(double, double)                                                         \
    X(longdouble, long double)

/* The integer types of the min/max and sum reductions. */
#define USHMEMI_COLL_INT_TYPES(X)                                              \
    X(char, char)                                                             \
    X(schar, signed char)                                                     \
    X(short, short)                                                           \
    X(int, int)                                                               \
    X(long, long)                                                             \
    X(longlong, long long)                                                    \
    X(ptrdiff, ptrdiff_t)                                                     \
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
    X(size, size_t)

#define USHMEMI_COLL_COMPLEX_TYPES(X)                                          \
    X(complexd, double _Complex)                                              \
    X(complexf, float _Complex)

/* Deprecated *_to_all type sets (OpenSHMEM 1.4, Table 13). */
#define USHMEMI_COLL_TOALL_BITWISE_TYPES(X)                                    \
    X(short, short)                                                           \
    X(int, int)                                                               \
    X(long, long)                                                             \
    X(longlong, long long)

#define USHMEMI_COLL_TOALL_MINMAX_TYPES(X)                                     \
    USHMEMI_COLL_TOALL_BITWISE_TYPES(X)                                       \
    X(float, float)                                                           \
    X(double, double)                                                         \
    X(longdouble, long double)

/* ---- Synchronisation ---------------------------------------------------- */

int shmem_team_sync(shmem_team_t team);
/* Deprecated active-set forms; pSync is accepted but not used. The
 * active-set shmem_sync is shmem_sync_deprecated, which the shmem_sync macro
 * of shmem.h picks for four arguments. */
void shmem_barrier(int PE_start, int logPE_stride, int PE_size, long *pSync);

/* ---- Data movement on teams ---------------------------------------------- */

#define USHMEMI_COLL_DECL_DATA(name, type)                                     \
    int shmem_##name##_broadcast(shmem_team_t team, type *dest, const type *source,       \
                                 size_t nelems, int PE_root);                 \
    int shmem_##name##_collect(shmem_team_t team, type *dest, const type *source,         \
                               size_t nelems);                                \
    int shmem_##name##_fcollect(shmem_team_t team, type *dest, const type *source,        \
                                size_t nelems);                               \
    int shmem_##name##_alltoall(shmem_team_t team, type *dest, const type *source,        \
                                size_t nelems);                               \
    int shmem_##name##_alltoalls(shmem_team_t team, type *dest, const type *source,       \
                                 ptrdiff_t dst, ptrdiff_t sst, size_t nelems);
USHMEMI_COLL_RMA_TYPES(USHMEMI_COLL_DECL_DATA)
#undef USHMEMI_COLL_DECL_DATA

/* The *mem forms count bytes. */
int shmem_broadcastmem(shmem_team_t team, void *dest, const void *source, size_t nelems,
                       int PE_root);
int shmem_collectmem(shmem_team_t team, void *dest, const void *source, size_t nelems);
int shmem_fcollectmem(shmem_team_t team, void *dest, const void *source, size_t nelems);
int shmem_alltoallmem(shmem_team_t team, void *dest, const void *source, size_t nelems);
int shmem_alltoallsmem(shmem_team_t team, void *dest, const void *source, ptrdiff_t dst,
                       ptrdiff_t sst, size_t nelems);

/* ---- Reductions on teams ------------------------------------------------- */

#define USHMEMI_COLL_DECL_REDUCE(name, type, op)                               \
    int shmem_##name##_##op##_reduce(shmem_team_t team, type *dest, const type *source,   \
                                     size_t nreduce);
#define USHMEMI_COLL_DECL_BITWISE(name, type)                                  \
    USHMEMI_COLL_DECL_REDUCE(name, type, and)                                 \
    USHMEMI_COLL_DECL_REDUCE(name, type, or)                                  \
    USHMEMI_COLL_DECL_REDUCE(name, type, xor)
#define USHMEMI_COLL_DECL_MINMAX(name, type)                                   \
    USHMEMI_COLL_DECL_REDUCE(name, type, max)                                 \
    USHMEMI_COLL_DECL_REDUCE(name, type, min)
#define USHMEMI_COLL_DECL_ARITH(name, type)                                    \
    USHMEMI_COLL_DECL_REDUCE(name, type, sum)                                 \
    USHMEMI_COLL_DECL_REDUCE(name, type, prod)
USHMEMI_COLL_BITWISE_TYPES(USHMEMI_COLL_DECL_BITWISE)
USHMEMI_COLL_MINMAX_TYPES(USHMEMI_COLL_DECL_MINMAX)
USHMEMI_COLL_MINMAX_TYPES(USHMEMI_COLL_DECL_ARITH)
USHMEMI_COLL_COMPLEX_TYPES(USHMEMI_COLL_DECL_ARITH)
#undef USHMEMI_COLL_DECL_BITWISE
#undef USHMEMI_COLL_DECL_MINMAX
#undef USHMEMI_COLL_DECL_ARITH
#undef USHMEMI_COLL_DECL_REDUCE

/* OpenSHMEM 1.6 sum scans: inclusive (members 0..i) and exclusive (0..i-1,
 * zero on member 0), on the types the sum reduction takes. */
#define USHMEMI_COLL_DECL_SCAN(name, type)                                     \
    int shmem_##name##_sum_inscan(shmem_team_t team, type *dest,              \
                                  const type *source, size_t nelems);         \
    int shmem_##name##_sum_exscan(shmem_team_t team, type *dest,              \
                                  const type *source, size_t nelems);
USHMEMI_COLL_MINMAX_TYPES(USHMEMI_COLL_DECL_SCAN)
USHMEMI_COLL_COMPLEX_TYPES(USHMEMI_COLL_DECL_SCAN)
#undef USHMEMI_COLL_DECL_SCAN

/* ---- Deprecated active-set data movement (OpenSHMEM 1.4) ----------------- */

void shmem_broadcast32(void *dest, const void *source, size_t nelems, int PE_root,
                       int PE_start, int logPE_stride, int PE_size, long *pSync);
void shmem_broadcast64(void *dest, const void *source, size_t nelems, int PE_root,
                       int PE_start, int logPE_stride, int PE_size, long *pSync);
void shmem_collect32(void *dest, const void *source, size_t nelems, int PE_start,
                     int logPE_stride, int PE_size, long *pSync);
void shmem_collect64(void *dest, const void *source, size_t nelems, int PE_start,
                     int logPE_stride, int PE_size, long *pSync);
void shmem_fcollect32(void *dest, const void *source, size_t nelems, int PE_start,
                      int logPE_stride, int PE_size, long *pSync);
void shmem_fcollect64(void *dest, const void *source, size_t nelems, int PE_start,
                      int logPE_stride, int PE_size, long *pSync);
void shmem_alltoall32(void *dest, const void *source, size_t nelems, int PE_start,
                      int logPE_stride, int PE_size, long *pSync);
void shmem_alltoall64(void *dest, const void *source, size_t nelems, int PE_start,
                      int logPE_stride, int PE_size, long *pSync);
void shmem_alltoalls32(void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst,
                       size_t nelems, int PE_start, int logPE_stride, int PE_size,
                       long *pSync);
void shmem_alltoalls64(void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst,
                       size_t nelems, int PE_start, int logPE_stride, int PE_size,
                       long *pSync);

/* ---- Deprecated active-set reductions (OpenSHMEM 1.4) -------------------- */

#define USHMEMI_COLL_DECL_TOALL(name, type, op)                                \
    void shmem_##name##_##op##_to_all(type *dest, const type *source, int nreduce,        \
                                      int PE_start, int logPE_stride, int PE_size,        \
                                      type *pWrk, long *pSync);
#define USHMEMI_COLL_DECL_TOALL_BITWISE(name, type)                            \
    USHMEMI_COLL_DECL_TOALL(name, type, and)                                  \
    USHMEMI_COLL_DECL_TOALL(name, type, or)                                   \
    USHMEMI_COLL_DECL_TOALL(name, type, xor)
#define USHMEMI_COLL_DECL_TOALL_MINMAX(name, type)                             \
    USHMEMI_COLL_DECL_TOALL(name, type, max)                                  \
    USHMEMI_COLL_DECL_TOALL(name, type, min)
#define USHMEMI_COLL_DECL_TOALL_ARITH(name, type)                              \
    USHMEMI_COLL_DECL_TOALL(name, type, sum)                                  \
    USHMEMI_COLL_DECL_TOALL(name, type, prod)
USHMEMI_COLL_TOALL_BITWISE_TYPES(USHMEMI_COLL_DECL_TOALL_BITWISE)
USHMEMI_COLL_TOALL_MINMAX_TYPES(USHMEMI_COLL_DECL_TOALL_MINMAX)
USHMEMI_COLL_TOALL_MINMAX_TYPES(USHMEMI_COLL_DECL_TOALL_ARITH)
USHMEMI_COLL_COMPLEX_TYPES(USHMEMI_COLL_DECL_TOALL_ARITH)
#undef USHMEMI_COLL_DECL_TOALL_BITWISE
#undef USHMEMI_COLL_DECL_TOALL_MINMAX
#undef USHMEMI_COLL_DECL_TOALL_ARITH
#undef USHMEMI_COLL_DECL_TOALL

/* ---- C11 generic selection ----------------------------------------------- */

/* Fixed-width and size/ptrdiff types are typedefs of the standard integer
 * types, so each selection lists every underlying type once: int64_t is
 * long here, size_t is unsigned long, and so on. */
#if defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L && !defined(__cplusplus)

/* The same selection as RMA's (shmem_rma.h). */
#define USHMEMI_COLL_GENERIC_RMA(dest, op) USHMEMI_GEN_RMA(dest, op)

#define shmem_broadcast(team, dest, ...)                                      \
    USHMEMI_COLL_GENERIC_RMA(dest, broadcast)(team, dest, __VA_ARGS__)
#define shmem_collect(team, dest, ...)                                        \
    USHMEMI_COLL_GENERIC_RMA(dest, collect)(team, dest, __VA_ARGS__)
#define shmem_fcollect(team, dest, ...)                                       \
    USHMEMI_COLL_GENERIC_RMA(dest, fcollect)(team, dest, __VA_ARGS__)
#define shmem_alltoall(team, dest, ...)                                       \
    USHMEMI_COLL_GENERIC_RMA(dest, alltoall)(team, dest, __VA_ARGS__)
#define shmem_alltoalls(team, dest, ...)                                      \
    USHMEMI_COLL_GENERIC_RMA(dest, alltoalls)(team, dest, __VA_ARGS__)

#define USHMEMI_COLL_GENERIC_BITWISE(dest, op)                                 \
    _Generic(*(dest),                                                         \
        unsigned char: shmem_uchar_##op##_reduce,                             \
        unsigned short: shmem_ushort_##op##_reduce,                           \
        unsigned int: shmem_uint_##op##_reduce,                               \
        unsigned long: shmem_ulong_##op##_reduce,                             \
        unsigned long long: shmem_ulonglong_##op##_reduce,                    \
        signed char: shmem_int8_##op##_reduce,                                \
        short: shmem_int16_##op##_reduce,                                     \
        int: shmem_int32_##op##_reduce,                                       \
        long: shmem_int64_##op##_reduce)

#define USHMEMI_COLL_GENERIC_MINMAX_ENTRIES(op)                                \
        char: shmem_char_##op##_reduce,                                       \
        signed char: shmem_schar_##op##_reduce,                               \
        short: shmem_short_##op##_reduce,                                     \
        int: shmem_int_##op##_reduce,                                         \
        long: shmem_long_##op##_reduce,                                       \
        long long: shmem_longlong_##op##_reduce,                              \
        unsigned char: shmem_uchar_##op##_reduce,                             \
        unsigned short: shmem_ushort_##op##_reduce,                           \
        unsigned int: shmem_uint_##op##_reduce,                               \
        unsigned long: shmem_ulong_##op##_reduce,                             \
        unsigned long long: shmem_ulonglong_##op##_reduce,                    \
        float: shmem_float_##op##_reduce,                                     \
        double: shmem_double_##op##_reduce,                                   \
        long double: shmem_longdouble_##op##_reduce

#define USHMEMI_COLL_GENERIC_MINMAX(dest, op)                                  \
    _Generic(*(dest), USHMEMI_COLL_GENERIC_MINMAX_ENTRIES(op))

#define USHMEMI_COLL_GENERIC_ARITH(dest, op)                                   \
    _Generic(*(dest), USHMEMI_COLL_GENERIC_MINMAX_ENTRIES(op),                \
        double _Complex: shmem_complexd_##op##_reduce,                        \
        float _Complex: shmem_complexf_##op##_reduce)

#define shmem_and_reduce(team, dest, ...)                                     \
    USHMEMI_COLL_GENERIC_BITWISE(dest, and)(team, dest, __VA_ARGS__)
#define shmem_or_reduce(team, dest, ...)                                      \
    USHMEMI_COLL_GENERIC_BITWISE(dest, or)(team, dest, __VA_ARGS__)
#define shmem_xor_reduce(team, dest, ...)                                     \
    USHMEMI_COLL_GENERIC_BITWISE(dest, xor)(team, dest, __VA_ARGS__)
#define shmem_max_reduce(team, dest, ...)                                     \
    USHMEMI_COLL_GENERIC_MINMAX(dest, max)(team, dest, __VA_ARGS__)
#define shmem_min_reduce(team, dest, ...)                                     \
    USHMEMI_COLL_GENERIC_MINMAX(dest, min)(team, dest, __VA_ARGS__)
#define shmem_sum_reduce(team, dest, ...)                                     \
    USHMEMI_COLL_GENERIC_ARITH(dest, sum)(team, dest, __VA_ARGS__)
#define shmem_prod_reduce(team, dest, ...)                                    \
    USHMEMI_COLL_GENERIC_ARITH(dest, prod)(team, dest, __VA_ARGS__)

#define USHMEMI_COLL_GENERIC_SCAN(dest, op)                                    \
    _Generic(*(dest),                                                         \
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
        unsigned long long: shmem_ulonglong_##op,                             \
        float: shmem_float_##op,                                              \
        double: shmem_double_##op,                                            \
        long double: shmem_longdouble_##op,                                   \
        double _Complex: shmem_complexd_##op,                                 \
        float _Complex: shmem_complexf_##op)
#define shmem_sum_inscan(team, dest, ...)                                     \
    USHMEMI_COLL_GENERIC_SCAN(dest, sum_inscan)(team, dest, __VA_ARGS__)
#define shmem_sum_exscan(team, dest, ...)                                     \
    USHMEMI_COLL_GENERIC_SCAN(dest, sum_exscan)(team, dest, __VA_ARGS__)

#endif /* C11 */

#endif
