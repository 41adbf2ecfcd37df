/* The stream-ordered reductions' names (shmemx.h), checked without a GPU:
 * every shmemx_<TYPE>_<OP>_reduce_on_stream and
 * shmemx_<TYPE>_<OP>_reducescatter_on_stream of OpenSHMEM 1.5's reduction
 * type sets but long double, written out here apart from shmemx.h's list,
 * must be declared with its signature (this compiles) and defined (this
 * links against the library); and the header's list must name no more
 * than these. Runs nothing on a stream. */
#include <shmemx.h>
#include <stdio.h>

typedef void (*any_fn)(void);

#define ONE(name, type, op)                                                                \
    {                                                                                      \
        int (*r)(shmem_team_t, type *, const type *, size_t, CUstream) =                   \
            shmemx_##name##_##op##_reduce_on_stream;                                       \
        int (*s)(shmem_team_t, type *, const type *, size_t, CUstream) =                   \
            shmemx_##name##_##op##_reducescatter_on_stream;                                \
        fns[n++] = (any_fn)r;                                                              \
        fns[n++] = (any_fn)s;                                                              \
    }
#define BITWISE(name, type) ONE(name, type, and) ONE(name, type, or) ONE(name, type, xor)
#define MINMAX(name, type) ONE(name, type, min) ONE(name, type, max)
#define ARITH(name, type) ONE(name, type, sum) ONE(name, type, prod)
#define MINMAX_ARITH(name, type) MINMAX(name, type) ARITH(name, type)

int main(void)
{
    static any_fn volatile fns[512];
    int n = 0;

    BITWISE(uchar, unsigned char)
    BITWISE(ushort, unsigned short)
    BITWISE(uint, unsigned int)
    BITWISE(ulong, unsigned long)
    BITWISE(ulonglong, unsigned long long)
    BITWISE(int8, int8_t)
    BITWISE(int16, int16_t)
    BITWISE(int32, int32_t)
    BITWISE(int64, int64_t)
    BITWISE(uint8, uint8_t)
    BITWISE(uint16, uint16_t)
    BITWISE(uint32, uint32_t)
    BITWISE(uint64, uint64_t)
    BITWISE(size, size_t)

    MINMAX_ARITH(char, char)
    MINMAX_ARITH(schar, signed char)
    MINMAX_ARITH(short, short)
    MINMAX_ARITH(int, int)
    MINMAX_ARITH(long, long)
    MINMAX_ARITH(longlong, long long)
    MINMAX_ARITH(ptrdiff, ptrdiff_t)
    MINMAX_ARITH(uchar, unsigned char)
    MINMAX_ARITH(ushort, unsigned short)
    MINMAX_ARITH(uint, unsigned int)
    MINMAX_ARITH(ulong, unsigned long)
    MINMAX_ARITH(ulonglong, unsigned long long)
    MINMAX_ARITH(int8, int8_t)
    MINMAX_ARITH(int16, int16_t)
    MINMAX_ARITH(int32, int32_t)
    MINMAX_ARITH(int64, int64_t)
    MINMAX_ARITH(uint8, uint8_t)
    MINMAX_ARITH(uint16, uint16_t)
    MINMAX_ARITH(uint32, uint32_t)
    MINMAX_ARITH(uint64, uint64_t)
    MINMAX_ARITH(size, size_t)
    MINMAX_ARITH(float, float)
    MINMAX_ARITH(double, double)
    ARITH(complexf, float _Complex)
    ARITH(complexd, double _Complex)

    /* shmemx.h's own list, which the library defines from. */
    int listed = 0;
#define USHMEMI_STREAM_REDUCE(name, type, op, cls) listed += 2;
    USHMEMI_STREAM_REDUCTIONS
#undef USHMEMI_STREAM_REDUCE

    for (int i = 0; i < n; i++) {
        if (fns[i] == NULL) {
            printf("stream reduction %d of %d has no address\n", i, n);
            return 1;
        }
    }
    if (listed != n) {
        printf("shmemx.h lists %d stream reductions, OpenSHMEM 1.5's sets make %d\n", listed, n);
        return 1;
    }
    printf("%d stream reductions and reduce-scatters declared and defined\n", n);
    return 0;
}
