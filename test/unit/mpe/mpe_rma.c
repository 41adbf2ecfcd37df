/* RMA on every PE: each PE puts a pattern derived from (source PE, index,
 * destination PE) into every PE, through the C11 generic names and the typed
 * names, and every PE verifies all it received; then gets, p/g, strided
 * iput/iget, sized and byte forms (0, 1 byte and a few MiB), and the
 * non-blocking forms completed by shmem_quiet. The destination PE is part of
 * the pattern, so data landing on the wrong PE or slot is caught. */
#include <shmem.h>
#include <stdint.h>
#include <string.h>

#include "mpe_check.h"

#define N 37 /* odd, so the generic and typed halves differ in length */

static int me, npes;

/* Small integers, exact in every type including int8_t and float. */
static int pattern(int src, int i, int dst)
{
    return src * 15 + (i * 7 + dst) % 15 + 1;
}

/* For each type: put half through the generic name and half through the
 * typed one, verify; get back what this PE put on every PE; then p and g. */
#define RMA_TYPE_TEST(NAME, T)                                                               \
    static void test_##NAME(void)                                                            \
    {                                                                                        \
        T *dst = shmem_calloc((size_t)npes * N, sizeof(T));                                  \
        T src[N], back[N];                                                                   \
        MPE_CHECK(dst != NULL, "shmem_calloc failed for " #T);                               \
        for (int pe = 0; pe < npes; pe++) {                                                  \
            for (int i = 0; i < N; i++)                                                      \
                src[i] = (T)pattern(me, i, pe);                                              \
            shmem_put(dst + me * N, src, N / 2, pe);                                         \
            shmem_##NAME##_put(dst + me * N + N / 2, src + N / 2, N - N / 2, pe);            \
        }                                                                                    \
        shmem_barrier_all();                                                                 \
        for (int s = 0; s < npes; s++)                                                       \
            for (int i = 0; i < N; i++)                                                      \
                MPE_CHECK(dst[s * N + i] == (T)pattern(s, i, me),                            \
                          #T " put from PE %d index %d: got %d want %d", s, i,               \
                          (int)dst[s * N + i], pattern(s, i, me));                           \
        for (int pe = 0; pe < npes; pe++) {                                                  \
            memset(back, 0, sizeof(back));                                                   \
            shmem_##NAME##_get(back, dst + me * N, N / 2, pe);                               \
            shmem_get(back + N / 2, dst + me * N + N / 2, N - N / 2, pe);                    \
            for (int i = 0; i < N; i++)                                                      \
                MPE_CHECK(back[i] == (T)pattern(me, i, pe),                                  \
                          #T " get from PE %d index %d: got %d want %d", pe, i,              \
                          (int)back[i], pattern(me, i, pe));                                 \
        }                                                                                    \
        shmem_barrier_all();                                                                 \
        /* p overwrites element 0 and 1 of this PE's slot on every PE. */                   \
        for (int pe = 0; pe < npes; pe++) {                                                  \
            shmem_p(dst + me * N, (T)pattern(me, 100, pe), pe);                              \
            shmem_##NAME##_p(dst + me * N + 1, (T)pattern(me, 101, pe), pe);                 \
        }                                                                                    \
        shmem_barrier_all();                                                                 \
        for (int s = 0; s < npes; s++) {                                                     \
            MPE_CHECK(dst[s * N] == (T)pattern(s, 100, me), #T " p from PE %d", s);          \
            MPE_CHECK(dst[s * N + 1] == (T)pattern(s, 101, me), #T " typed p from PE %d", s); \
            MPE_CHECK(dst[s * N + 2] == (T)pattern(s, 2, me), #T " p spilled on PE %d", s);  \
        }                                                                                    \
        for (int pe = 0; pe < npes; pe++) {                                                  \
            T g0 = shmem_g(dst + me * N, pe);                                                \
            T g1 = shmem_##NAME##_g(dst + me * N + 1, pe);                                   \
            MPE_CHECK(g0 == (T)pattern(me, 100, pe), #T " g from PE %d", pe);                \
            MPE_CHECK(g1 == (T)pattern(me, 101, pe), #T " typed g from PE %d", pe);          \
        }                                                                                    \
        shmem_barrier_all();                                                                 \
        shmem_free(dst);                                                                     \
    }

RMA_TYPE_TEST(longdouble, long double)
RMA_TYPE_TEST(double, double)
RMA_TYPE_TEST(float, float)
RMA_TYPE_TEST(char, char)
RMA_TYPE_TEST(int8, int8_t)
RMA_TYPE_TEST(short, short)
RMA_TYPE_TEST(int, int)
RMA_TYPE_TEST(long, long)
RMA_TYPE_TEST(ulonglong, unsigned long long)
RMA_TYPE_TEST(uint16, uint16_t)
RMA_TYPE_TEST(size, size_t)
RMA_TYPE_TEST(ptrdiff, ptrdiff_t)

/* Zero-length transfers touch nothing, whatever the addresses; one byte at
 * an odd address lands exactly there. */
static void test_bytes_small(void)
{
    unsigned char *buf = shmem_calloc((size_t)npes * 4, 1);
    MPE_CHECK(buf != NULL, "shmem_calloc failed");
    for (int pe = 0; pe < npes; pe++) {
        shmem_putmem(NULL, NULL, 0, pe);
        shmem_getmem(NULL, NULL, 0, pe);
        shmem_long_put((long *)(uintptr_t)1, NULL, 0, pe);
        shmem_put64_nbi(NULL, NULL, 0, pe);
        shmem_long_iput(NULL, NULL, 1, 1, 0, pe);
        unsigned char c = (unsigned char)pattern(me, 0, pe);
        shmem_putmem(buf + me * 4 + 1, &c, 1, pe);
    }
    shmem_barrier_all();
    for (int s = 0; s < npes; s++) {
        MPE_CHECK(buf[s * 4] == 0 && buf[s * 4 + 2] == 0, "1-byte put from PE %d spilled", s);
        MPE_CHECK(buf[s * 4 + 1] == pattern(s, 0, me), "1-byte put from PE %d: got %d", s,
                  buf[s * 4 + 1]);
    }
    for (int pe = 0; pe < npes; pe++) {
        unsigned char c = 0;
        shmem_getmem(&c, buf + me * 4 + 1, 1, pe);
        MPE_CHECK(c == pattern(me, 0, pe), "1-byte get from PE %d: got %d", pe, c);
    }
    shmem_barrier_all();
    shmem_free(buf);
}

/* A few MiB of putmem to the right neighbour, then getmem from the left. */
static void test_bytes_large(void)
{
    const size_t len = 3 * 1024 * 1024 + 5;
    unsigned char *buf = shmem_malloc(len);
    unsigned char *mine = malloc(len);
    MPE_CHECK(buf != NULL && mine != NULL, "allocation of %zu bytes failed", len);
    int right = (me + 1) % npes, left = (me + npes - 1) % npes;
    for (size_t i = 0; i < len; i++)
        mine[i] = (unsigned char)(i * 31 + (size_t)me * 7 + (i >> 12));
    shmem_putmem(buf, mine, len, right);
    shmem_barrier_all();
    for (size_t i = 0; i < len; i++)
        if (buf[i] != (unsigned char)(i * 31 + (size_t)left * 7 + (i >> 12)))
            MPE_CHECK(0, "putmem from PE %d byte %zu: got %d", left, i, buf[i]);
    memset(mine, 0, len);
    /* The left neighbour's heap holds what its own left neighbour wrote. */
    int left2 = (left + npes - 1) % npes;
    shmem_getmem_nbi(mine, buf, len, left);
    shmem_quiet();
    for (size_t i = 0; i < len; i++)
        if (mine[i] != (unsigned char)(i * 31 + (size_t)left2 * 7 + (i >> 12)))
            MPE_CHECK(0, "getmem from PE %d byte %zu: got %d", left, i, mine[i]);
    shmem_barrier_all();
    free(mine);
    shmem_free(buf);
}

/* Sized puts and gets: element size, not type, decides what moves. */
static void test_sized(void)
{
    struct {
        uint8_t b8[N];
        uint16_t b16[N];
        uint32_t b32[N];
        uint64_t b64[N];
        uint64_t b128[2 * N];
    } *dst = shmem_calloc((size_t)npes, sizeof(*dst)), src, back;
    MPE_CHECK(dst != NULL, "shmem_calloc failed");
    for (int pe = 0; pe < npes; pe++) {
        for (int i = 0; i < N; i++) {
            src.b8[i] = (uint8_t)pattern(me, i, pe);
            src.b16[i] = (uint16_t)(pattern(me, i, pe) * 300);
            src.b32[i] = (uint32_t)pattern(me, i, pe) * 70000u;
            src.b64[i] = (uint64_t)pattern(me, i, pe) << 40;
            src.b128[2 * i] = (uint64_t)pattern(me, i, pe);
            src.b128[2 * i + 1] = (uint64_t)pattern(me, i + 1, pe) << 50;
        }
        shmem_put8(dst[me].b8, src.b8, N, pe);
        shmem_put16(dst[me].b16, src.b16, N, pe);
        shmem_put32_nbi(dst[me].b32, src.b32, N, pe);
        shmem_put64(dst[me].b64, src.b64, N, pe);
        shmem_put128(dst[me].b128, src.b128, N, pe);
    }
    shmem_quiet();
    shmem_barrier_all();
    for (int s = 0; s < npes; s++)
        for (int i = 0; i < N; i++) {
            MPE_CHECK(dst[s].b8[i] == (uint8_t)pattern(s, i, me), "put8 from %d [%d]", s, i);
            MPE_CHECK(dst[s].b16[i] == (uint16_t)(pattern(s, i, me) * 300), "put16 from %d", s);
            MPE_CHECK(dst[s].b32[i] == (uint32_t)pattern(s, i, me) * 70000u, "put32 from %d", s);
            MPE_CHECK(dst[s].b64[i] == (uint64_t)pattern(s, i, me) << 40, "put64 from %d", s);
            MPE_CHECK(dst[s].b128[2 * i] == (uint64_t)pattern(s, i, me) &&
                          dst[s].b128[2 * i + 1] == (uint64_t)pattern(s, i + 1, me) << 50,
                      "put128 from %d [%d]", s, i);
        }
    for (int pe = 0; pe < npes; pe++) {
        memset(&back, 0, sizeof(back));
        shmem_get8(back.b8, dst[me].b8, N, pe);
        shmem_get16_nbi(back.b16, dst[me].b16, N, pe);
        shmem_get32(back.b32, dst[me].b32, N, pe);
        shmem_get64(back.b64, dst[me].b64, N, pe);
        shmem_get128_nbi(back.b128, dst[me].b128, N, pe);
        shmem_quiet();
        for (int i = 0; i < N; i++) {
            MPE_CHECK(back.b8[i] == (uint8_t)pattern(me, i, pe), "get8 from %d", pe);
            MPE_CHECK(back.b16[i] == (uint16_t)(pattern(me, i, pe) * 300), "get16 from %d", pe);
            MPE_CHECK(back.b32[i] == (uint32_t)pattern(me, i, pe) * 70000u, "get32 from %d", pe);
            MPE_CHECK(back.b64[i] == (uint64_t)pattern(me, i, pe) << 40, "get64 from %d", pe);
            MPE_CHECK(back.b128[2 * i + 1] == (uint64_t)pattern(me, i + 1, pe) << 50,
                      "get128 from %d", pe);
        }
    }
    shmem_barrier_all();
    shmem_free(dst);
}

/* Strides are in elements: iput with target stride 3 from a source with
 * stride 2 fills every third element and nothing between; iget reverses it. */
#define M 11
static void test_strided(void)
{
    long *dst = shmem_calloc((size_t)npes * M * 3, sizeof(long));
    uint32_t *dst32 = shmem_calloc((size_t)npes * M * 2, sizeof(uint32_t));
    uint64_t *dst128 = shmem_calloc((size_t)npes * M * 4, sizeof(uint64_t));
    MPE_CHECK(dst && dst32 && dst128, "shmem_calloc failed");
    long src[2 * M];
    uint32_t src32[M];
    uint64_t src128[2 * M];
    for (int pe = 0; pe < npes; pe++) {
        for (int i = 0; i < 2 * M; i++)
            src[i] = (i % 2 == 0) ? pattern(me, i / 2, pe) : -1;
        for (int i = 0; i < M; i++) {
            src32[i] = (uint32_t)pattern(me, i, pe) + 1000u;
            src128[2 * i] = (uint64_t)pattern(me, i, pe) << 33;
            src128[2 * i + 1] = (uint64_t)pattern(me, i, pe) + 7;
        }
        shmem_iput(dst + me * M * 3, src, 3, 2, M, pe);
        shmem_iput32(dst32 + me * M * 2, src32, 2, 1, M, pe);
        shmem_iput128(dst128 + me * M * 4, src128, 2, 1, M, pe);
    }
    shmem_barrier_all();
    for (int s = 0; s < npes; s++)
        for (int i = 0; i < M; i++) {
            long *slot = dst + s * M * 3 + i * 3;
            MPE_CHECK(slot[0] == pattern(s, i, me) && slot[1] == 0 && slot[2] == 0,
                      "iput from PE %d element %d: %ld %ld %ld", s, i, slot[0], slot[1], slot[2]);
            uint32_t *s32 = dst32 + s * M * 2 + i * 2;
            MPE_CHECK(s32[0] == (uint32_t)pattern(s, i, me) + 1000u && s32[1] == 0,
                      "iput32 from PE %d element %d", s, i);
            uint64_t *s128 = dst128 + s * M * 4 + i * 4;
            MPE_CHECK(s128[0] == (uint64_t)pattern(s, i, me) << 33 &&
                          s128[1] == (uint64_t)pattern(s, i, me) + 7 && s128[2] == 0 &&
                          s128[3] == 0,
                      "iput128 from PE %d element %d", s, i);
        }
    for (int pe = 0; pe < npes; pe++) {
        long back[2 * M];
        uint32_t back32[M];
        uint64_t back128[2 * M];
        for (int i = 0; i < 2 * M; i++)
            back[i] = -5;
        shmem_long_iget(back, dst + me * M * 3, 2, 3, M, pe);
        shmem_iget32(back32, dst32 + me * M * 2, 1, 2, M, pe);
        shmem_iget128(back128, dst128 + me * M * 4, 1, 2, M, pe);
        for (int i = 0; i < M; i++) {
            MPE_CHECK(back[2 * i] == pattern(me, i, pe) && back[2 * i + 1] == -5,
                      "iget from PE %d element %d: %ld", pe, i, back[2 * i]);
            MPE_CHECK(back32[i] == (uint32_t)pattern(me, i, pe) + 1000u, "iget32 from %d", pe);
            MPE_CHECK(back128[2 * i] == (uint64_t)pattern(me, i, pe) << 33 &&
                          back128[2 * i + 1] == (uint64_t)pattern(me, i, pe) + 7,
                      "iget128 from PE %d element %d", pe, i);
        }
        /* Generic iget with a source stride of 1 reads the zeros between. */
        long row[3];
        shmem_iget(row, dst + me * M * 3, 1, 1, 3, pe);
        MPE_CHECK(row[0] == pattern(me, 0, pe) && row[1] == 0 && row[2] == 0,
                  "iget stride 1 from PE %d", pe);
    }
    shmem_barrier_all();
    /* Unit strides on both sides: a contiguous block. */
    for (int pe = 0; pe < npes; pe++) {
        long row[3] = {pattern(me, 50, pe), pattern(me, 51, pe), pattern(me, 52, pe)};
        shmem_iput64(dst + me * M * 3, row, 1, 1, 3, pe);
    }
    shmem_barrier_all();
    for (int s = 0; s < npes; s++)
        for (int i = 0; i < 3; i++)
            MPE_CHECK(dst[s * M * 3 + i] == pattern(s, 50 + i, me) &&
                          dst[s * M * 3 + 3] == pattern(s, 1, me),
                      "iput64 stride 1 from PE %d [%d]", s, i);
    shmem_barrier_all();
    shmem_free(dst128);
    shmem_free(dst32);
    shmem_free(dst);
}

/* Non-blocking forms: the data is there after quiet (puts: after quiet and
 * a barrier on the target). */
static void test_nbi(void)
{
    double *dst = shmem_calloc((size_t)npes * N, sizeof(double));
    int *idst = shmem_calloc((size_t)npes * N, sizeof(int));
    char *bdst = shmem_calloc((size_t)npes * N, 1);
    MPE_CHECK(dst && idst && bdst, "shmem_calloc failed");
    double src[N];
    int isrc[N];
    char bsrc[N];
    for (int pe = 0; pe < npes; pe++) {
        for (int i = 0; i < N; i++) {
            src[i] = pattern(me, i, pe) + 0.25;
            isrc[i] = -pattern(me, i, pe);
            bsrc[i] = (char)pattern(me, i, pe);
        }
        /* The sources are reused at once: blocking-on-source is required. */
        shmem_put_nbi(dst + me * N, src, N, pe);
        shmem_int_put_nbi(idst + me * N, isrc, N, pe);
        shmem_putmem_nbi(bdst + me * N, bsrc, N, pe);
    }
    shmem_quiet();
    shmem_barrier_all();
    for (int s = 0; s < npes; s++)
        for (int i = 0; i < N; i++) {
            MPE_CHECK(dst[s * N + i] == pattern(s, i, me) + 0.25, "put_nbi from %d [%d]", s, i);
            MPE_CHECK(idst[s * N + i] == -pattern(s, i, me), "int_put_nbi from %d [%d]", s, i);
            MPE_CHECK(bdst[s * N + i] == (char)pattern(s, i, me), "putmem_nbi from %d", s);
        }
    double back[N];
    int iback[N];
    for (int pe = 0; pe < npes; pe++) {
        shmem_get_nbi(back, dst + me * N, N, pe);
        shmem_int_get_nbi(iback, idst + me * N, N, pe);
        shmem_quiet();
        for (int i = 0; i < N; i++) {
            MPE_CHECK(back[i] == pattern(me, i, pe) + 0.25, "get_nbi from %d [%d]", pe, i);
            MPE_CHECK(iback[i] == -pattern(me, i, pe), "int_get_nbi from %d [%d]", pe, i);
        }
    }
    shmem_barrier_all();
    shmem_free(bdst);
    shmem_free(idst);
    shmem_free(dst);
}

int main(void)
{
    shmem_init();
    me = shmem_my_pe();
    npes = shmem_n_pes();

    test_longdouble();
    test_double();
    test_float();
    test_char();
    test_int8();
    test_short();
    test_int();
    test_long();
    test_ulonglong();
    test_uint16();
    test_size();
    test_ptrdiff();
    test_bytes_small();
    test_bytes_large();
    test_sized();
    test_strided();
    test_nbi();

    shmem_finalize();
    return 0;
}
