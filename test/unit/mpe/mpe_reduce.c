/* Reductions on every PE: each op over several types with answers computed
 * from the per-PE inputs, out of place and in place (dest == source), sizes
 * above the collective scratch, the C11 generic names, complex sum/prod,
 * bitwise-identical floating-point results on every PE, and the deprecated
 * *_to_all forms on the world and on the even PEs. */
#include <complex.h>
#include <shmem.h>
#include <stdint.h>
#include <string.h>

#include "mpe_check.h"

static long psync[SHMEM_REDUCE_SYNC_SIZE];
static int me, npes;

/* Inputs of PE p at index i, per op; the answers fold them over p. */
#define V_SUM(p, i) ((p) + (i) % 50)
#define V_PROD(p, i) ((int)((i) % 3) == (p) % 3 ? 2 : 1)
#define V_MAX(p, i) (((p) * 7 + (i)) % 11)
#define V_MIN(p, i) (((p) * 5 + (i) + 3) % 13)
#define V_AND(p, i) (~(1ULL << (((p) + (i)) % 8)))
#define V_OR(p, i) (1ULL << (((p) * 3 + (i)) % 8))
#define V_XOR(p, i) (((p) + 1ULL) * ((i) + 3ULL) * 37ULL)

#define F_SUM(a, b) ((a) + (b))
#define F_PROD(a, b) ((a) * (b))
#define F_MAX(a, b) ((a) > (b) ? (a) : (b))
#define F_MIN(a, b) ((a) < (b) ? (a) : (b))
#define F_AND(a, b) ((a) & (b))
#define F_OR(a, b) ((a) | (b))
#define F_XOR(a, b) ((a) ^ (b))

/* Runs shmem_<tname>_<op>_reduce on n elements out of place (checking a
 * guard element after dest) and in place, and compares with the fold. */
#define CHECK_REDUCE(type, tname, op, V, F, n)                                               \
    do {                                                                                     \
        size_t n_ = (n);                                                                     \
        type *src = shmem_malloc(n_ * sizeof(type));                                         \
        type *dst = shmem_malloc((n_ + 1) * sizeof(type));                                   \
        MPE_CHECK(src && dst, "allocation of %zu elements", n_);                            \
        for (size_t i = 0; i < n_; i++)                                                      \
            src[i] = (type)(V(me, i));                                                       \
        dst[n_] = (type)42;                                                                  \
        MPE_CHECK(shmem_##tname##_##op##_reduce(SHMEM_TEAM_WORLD, dst, src, n_) == 0,        \
                  #tname "_" #op "_reduce rc");                                              \
        MPE_CHECK(dst[n_] == (type)42, #tname "_" #op "_reduce wrote past dest");            \
        for (int pass = 0; pass < 2; pass++) {                                               \
            for (size_t i = 0; i < n_; i++) {                                                \
                type want = (type)(V(0, i));                                                 \
                for (int p = 1; p < npes; p++) {                                             \
                    type b_ = (type)(V(p, i));                                               \
                    want = (type)(F(want, b_));                                              \
                }                                                                            \
                MPE_CHECK(dst[i] == want,                                                    \
                          #tname "_" #op "_reduce (%s, n %zu): [%zu] = %Lg, want %Lg",      \
                          pass ? "in place" : "out of place", n_, i, (long double)dst[i],    \
                          (long double)want);                                                \
                MPE_CHECK(pass == 1 || src[i] == (type)(V(me, i)), "source changed");        \
            }                                                                                \
            if (pass == 0) {                                                                 \
                for (size_t i = 0; i < n_; i++)                                              \
                    dst[i] = (type)(V(me, i));                                               \
                MPE_CHECK(shmem_##tname##_##op##_reduce(SHMEM_TEAM_WORLD, dst, dst, n_) == 0, \
                          "in place rc");                                                    \
            }                                                                                \
        }                                                                                    \
        shmem_free(dst);                                                                     \
        shmem_free(src);                                                                     \
    } while (0)

#define CHECK_ARITH(type, tname, n)                                                          \
    CHECK_REDUCE(type, tname, sum, V_SUM, F_SUM, n);                                         \
    CHECK_REDUCE(type, tname, prod, V_PROD, F_PROD, n);                                      \
    CHECK_REDUCE(type, tname, max, V_MAX, F_MAX, n);                                         \
    CHECK_REDUCE(type, tname, min, V_MIN, F_MIN, n)

#define CHECK_BITWISE(type, tname, n)                                                        \
    CHECK_REDUCE(type, tname, and, V_AND, F_AND, n);                                         \
    CHECK_REDUCE(type, tname, or, V_OR, F_OR, n);                                            \
    CHECK_REDUCE(type, tname, xor, V_XOR, F_XOR, n)

static void test_typed(void)
{
    CHECK_ARITH(int, int, 7);
    CHECK_ARITH(long, long, 20000); /* 160 KB: several passes through the scratch */
    CHECK_ARITH(double, double, 9000);
    CHECK_ARITH(float, float, 5);
    CHECK_ARITH(char, char, 3);
    CHECK_ARITH(unsigned short, ushort, 11);
    CHECK_ARITH(long double, longdouble, 3000);
    CHECK_ARITH(size_t, size, 4);
    CHECK_ARITH(int8_t, int8, 6);
    CHECK_BITWISE(unsigned int, uint, 13);
    CHECK_BITWISE(uint64_t, uint64, 10000);
    CHECK_BITWISE(int32_t, int32, 3);
    CHECK_BITWISE(unsigned char, uchar, 9);
    CHECK_BITWISE(size_t, size, 2);
}

static void test_zero_and_generic(void)
{
    long *a = shmem_malloc(4 * sizeof(long));
    long *b = shmem_malloc(4 * sizeof(long));
    MPE_CHECK(a && b, "allocation");
    for (int i = 0; i < 4; i++) {
        a[i] = me + i;
        b[i] = -1;
    }
    /* nreduce 0 writes nothing. */
    MPE_CHECK(shmem_long_sum_reduce(SHMEM_TEAM_WORLD, b, a, 0) == 0, "rc");
    MPE_CHECK(b[0] == -1, "nreduce 0 wrote dest");
    MPE_CHECK(shmem_sum_reduce(SHMEM_TEAM_WORLD, b, a, 4) == 0, "generic sum rc");
    for (int i = 0; i < 4; i++)
        MPE_CHECK(b[i] == (long)npes * i + (long)npes * (npes - 1) / 2, "generic sum [%d] = %ld",
                  i, b[i]);
    MPE_CHECK(shmem_max_reduce(SHMEM_TEAM_WORLD, b, a, 4) == 0, "generic max rc");
    MPE_CHECK(b[3] == npes - 1 + 3, "generic max = %ld", b[3]);
    unsigned long *u = (unsigned long *)a;
    u[0] = 1UL << me;
    MPE_CHECK(shmem_or_reduce(SHMEM_TEAM_WORLD, u, u, 1) == 0, "generic or rc");
    MPE_CHECK(u[0] == (1UL << npes) - 1, "generic or = %lx", u[0]);
    MPE_CHECK(shmem_long_sum_reduce(SHMEM_TEAM_INVALID, b, a, 1) != 0, "SHMEM_TEAM_INVALID");
    shmem_free(b);
    shmem_free(a);
}

static void test_complex(void)
{
    double _Complex *z = shmem_malloc(3 * sizeof(double _Complex));
    float _Complex *f = shmem_malloc(2 * sizeof(float _Complex));
    MPE_CHECK(z && f, "allocation");
    for (int i = 0; i < 3; i++)
        z[i] = (me + i) + (double)me * I;
    MPE_CHECK(shmem_complexd_sum_reduce(SHMEM_TEAM_WORLD, z, z, 3) == 0, "rc");
    double tri = (double)npes * (npes - 1) / 2;
    for (int i = 0; i < 3; i++)
        MPE_CHECK(creal(z[i]) == tri + (double)npes * i && cimag(z[i]) == tri,
                  "complexd sum [%d] = %g%+gi", i, creal(z[i]), cimag(z[i]));
    /* prod of i over all PEs is i^npes. */
    f[0] = I;
    f[1] = 2.0f;
    MPE_CHECK(shmem_prod_reduce(SHMEM_TEAM_WORLD, f, f, 2) == 0, "rc");
    float _Complex want = 1.0f;
    for (int p = 0; p < npes; p++)
        want *= I;
    MPE_CHECK(f[0] == want && crealf(f[1]) == (float)(1 << npes) && cimagf(f[1]) == 0.0f,
              "complexf prod = %g%+gi, %g%+gi", crealf(f[0]), cimagf(f[0]), crealf(f[1]),
              cimagf(f[1]));
    shmem_free(f);
    shmem_free(z);
}

/* Sums that are inexact in floating point come out bit-identical on every
 * PE: they are compared with PE 0's result. */
static void test_identical_bits(void)
{
    enum { N = 64 };
    double *x = shmem_malloc(N * sizeof(double));
    double *all = shmem_malloc((size_t)npes * N * sizeof(double));
    MPE_CHECK(x && all, "allocation");
    for (int i = 0; i < N; i++)
        x[i] = 0.1 * (me + 1) + 1e-7 * i / (me + 3.0);
    MPE_CHECK(shmem_double_sum_reduce(SHMEM_TEAM_WORLD, x, x, N) == 0, "rc");
    MPE_CHECK(shmem_double_fcollect(SHMEM_TEAM_WORLD, all, x, N) == 0, "rc");
    for (int p = 0; p < npes; p++)
        MPE_CHECK(memcmp(all + (size_t)p * N, all, N * sizeof(double)) == 0,
                  "PE %d's double sum differs from PE 0's", p);
    shmem_free(all);
    shmem_free(x);
}

static void test_to_all(void)
{
    int *wrk_i = shmem_malloc(SHMEM_REDUCE_MIN_WRKDATA_SIZE * 8 * sizeof(int));
    int *src = shmem_malloc(8 * sizeof(int));
    int *dst = shmem_malloc(8 * sizeof(int));
    long long *ll = shmem_malloc(2 * sizeof(long long));
    long long *wrk_ll = shmem_malloc(8 * sizeof(long long));
    double *d = shmem_malloc(4 * sizeof(double));
    double *wrk_d = shmem_malloc(8 * sizeof(double));
    enum { BIG = 10000 };
    long *big = shmem_malloc(BIG * sizeof(long));
    long *wrk_l = shmem_malloc(BIG * sizeof(long));
    MPE_CHECK(wrk_i && src && dst && ll && wrk_ll && d && wrk_d && big && wrk_l, "allocation");

    /* World as an active set. */
    for (int i = 0; i < 8; i++)
        src[i] = me * 2 + i;
    shmem_int_sum_to_all(dst, src, 8, 0, 0, npes, wrk_i, psync);
    for (int i = 0; i < 8; i++)
        MPE_CHECK(dst[i] == npes * (npes - 1) + npes * i, "int_sum_to_all [%d] = %d", i, dst[i]);
    shmem_barrier_all();
    shmem_int_max_to_all(dst, src, 8, 0, 0, npes, wrk_i, psync);
    MPE_CHECK(dst[5] == (npes - 1) * 2 + 5, "int_max_to_all = %d", dst[5]);
    shmem_barrier_all();
    ll[0] = ~(1LL << me);
    ll[1] = 1LL << (me + 10);
    shmem_longlong_and_to_all(ll, ll, 1, 0, 0, npes, wrk_ll, psync);
    MPE_CHECK(ll[0] == ~((1LL << npes) - 1), "longlong_and_to_all = %llx", (unsigned long long)ll[0]);
    shmem_barrier_all();
    shmem_longlong_or_to_all(ll + 1, ll + 1, 1, 0, 0, npes, wrk_ll, psync);
    MPE_CHECK(ll[1] == ((1LL << npes) - 1) << 10, "longlong_or_to_all = %llx",
              (unsigned long long)ll[1]);
    shmem_barrier_all();

    /* The even PEs only, twice in a row with the same pSync. */
    if (me % 2 == 0) {
        int n_even = (npes + 1) / 2;
        for (int round = 0; round < 2; round++) {
            for (int i = 0; i < 4; i++)
                d[i] = me + i + round;
            shmem_double_sum_to_all(d, d, 4, 0, 1, n_even, wrk_d, psync);
            double evens = (double)n_even * (n_even - 1); /* sum of 2k for k < n_even */
            for (int i = 0; i < 4; i++)
                MPE_CHECK(d[i] == evens + n_even * (double)(i + round),
                          "double_sum_to_all on evens round %d [%d] = %g", round, i, d[i]);
            src[0] = me;
            shmem_int_min_to_all(dst, src, 1, 0, 1, n_even, wrk_i, psync);
            MPE_CHECK(dst[0] == 0, "int_min_to_all on evens = %d", dst[0]);
            src[0] = me + 1;
            shmem_int_prod_to_all(dst, src, 1, 0, 1, n_even, wrk_i, psync);
            int want = 1;
            for (int k = 0; k < n_even; k++)
                want *= 2 * k + 1;
            MPE_CHECK(dst[0] == want, "int_prod_to_all on evens = %d, want %d", dst[0], want);
        }
        /* Several passes through the scratch, in place. */
        for (int i = 0; i < BIG; i++)
            big[i] = me * 3 + i;
        shmem_long_sum_to_all(big, big, BIG, 0, 1, n_even, wrk_l, psync);
        for (int i = 0; i < BIG; i++)
            MPE_CHECK(big[i] == 3L * n_even * (n_even - 1) + (long)n_even * i,
                      "long_sum_to_all on evens [%d] = %ld", i, big[i]);
    }
    shmem_barrier_all();
    for (int i = 0; i < SHMEM_REDUCE_SYNC_SIZE; i++)
        MPE_CHECK(psync[i] == SHMEM_SYNC_VALUE, "pSync[%d] = %ld on return", i, psync[i]);
    shmem_free(wrk_l);
    shmem_free(big);
    shmem_free(wrk_d);
    shmem_free(d);
    shmem_free(wrk_ll);
    shmem_free(ll);
    shmem_free(dst);
    shmem_free(src);
    shmem_free(wrk_i);
}

int main(void)
{
    for (int i = 0; i < SHMEM_REDUCE_SYNC_SIZE; i++)
        psync[i] = SHMEM_SYNC_VALUE;
    shmem_init();
    me = shmem_my_pe();
    npes = shmem_n_pes();
    test_typed();
    test_zero_and_generic();
    test_complex();
    test_identical_bits();
    test_to_all();
    shmem_finalize();
    return 0;
}
