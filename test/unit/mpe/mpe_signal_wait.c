/* Signals and point-to-point synchronisation on every PE: a ring of
 * put_signal with SET, every PE adding to every PE's signal with ADD, the
 * data being visible once the signal is; wait_until and test with each
 * comparison; the _all/_any/_some and _vector forms with status arrays; the
 * deprecated wait names. */
#include <shmem.h>
#include <stdint.h>
#include <string.h>

#include "mpe_check.h"

#define N 4096 /* longs per message: large enough that a copy is not instant */
#define MAX_PES 64

static int me, npes, left, right;

static long pattern(int src, int i, int round)
{
    return (long)src * 1000003L + (long)i * 7L + round;
}

static void test_put_signal(void)
{
    long *data = shmem_calloc(N, sizeof(long));
    long *bytes = shmem_calloc(N, sizeof(long));
    int *slots = shmem_calloc((size_t)npes * 64, sizeof(int));
    uint64_t *sig = shmem_calloc(4, sizeof(uint64_t));
    long *src = malloc(N * sizeof(long));
    MPE_CHECK(data && bytes && slots && sig && src, "allocation failed");

    /* SET around the ring, typed through the generic name. */
    for (int i = 0; i < N; i++)
        src[i] = pattern(me, i, 1);
    shmem_put_signal(data, src, N, &sig[0], (uint64_t)me + 1, SHMEM_SIGNAL_SET, right);
    uint64_t seen = shmem_signal_wait_until(&sig[0], SHMEM_CMP_EQ, (uint64_t)left + 1);
    MPE_CHECK(seen == (uint64_t)left + 1, "signal_wait_until returned %llu",
              (unsigned long long)seen);
    for (int i = 0; i < N; i++)
        MPE_CHECK(data[i] == pattern(left, i, 1), "put_signal data [%d] %ld", i, data[i]);

    /* ADD with the byte form, non-blocking, completed by quiet. */
    for (int i = 0; i < N; i++)
        src[i] = pattern(me, i, 2);
    shmem_putmem_signal_nbi(bytes, src, N * sizeof(long), &sig[1], 5, SHMEM_SIGNAL_ADD, right);
    shmem_quiet();
    shmem_uint64_wait_until(&sig[1], SHMEM_CMP_GE, 5);
    for (int i = 0; i < N; i++)
        MPE_CHECK(bytes[i] == pattern(left, i, 2), "putmem_signal_nbi data [%d]", i);
    MPE_CHECK(shmem_signal_fetch(&sig[1]) == 5, "signal_fetch %llu want 5",
              (unsigned long long)shmem_signal_fetch(&sig[1]));

    /* Every PE adds 1 to every PE's signal after putting its slot. */
    int mine[64];
    for (int q = 0; q < npes; q++) {
        int pe = (me + q) % npes;
        for (int i = 0; i < 64; i++)
            mine[i] = (int)pattern(me, i, pe);
        if (q % 2)
            shmem_int_put_signal(slots + me * 64, mine, 64, &sig[2], 1, SHMEM_SIGNAL_ADD, pe);
        else
            shmem_put_signal_nbi(slots + me * 64, mine, 64, &sig[2], 1, SHMEM_SIGNAL_ADD, pe);
    }
    shmem_quiet();
    seen = shmem_signal_wait_until(&sig[2], SHMEM_CMP_EQ, (uint64_t)npes);
    MPE_CHECK(seen == (uint64_t)npes, "ADD signal %llu want %d", (unsigned long long)seen, npes);
    for (int s = 0; s < npes; s++)
        for (int i = 0; i < 64; i++)
            MPE_CHECK(slots[s * 64 + i] == (int)pattern(s, i, me),
                      "slot from PE %d [%d]: %d", s, i, slots[s * 64 + i]);

    /* A zero-length sized put still delivers its signal. */
    shmem_put64_signal(NULL, NULL, 0, &sig[3], 42, SHMEM_SIGNAL_SET, right);
    shmem_uint64_wait_until(&sig[3], SHMEM_CMP_EQ, 42);
    MPE_CHECK(shmem_signal_fetch(&sig[3]) == 42, "zero-length put64_signal");

    shmem_barrier_all();
    free(src);
    shmem_free(sig);
    shmem_free(slots);
    shmem_free(bytes);
    shmem_free(data);
}

/* Each comparison: the condition is false until the left neighbour, after a
 * barrier, puts a payload, fences and sets the flag; once the wait returns
 * the payload must be there, and test agrees. */
#define CMP_TEST(NAME, T)                                                                    \
    static void test_cmp_##NAME(void)                                                        \
    {                                                                                        \
        static const int cmps[6] = {SHMEM_CMP_EQ, SHMEM_CMP_NE, SHMEM_CMP_GT,                \
                                    SHMEM_CMP_GE, SHMEM_CMP_LT, SHMEM_CMP_LE};               \
        static const T init[6] = {0, 0, 0, 0, 100, 100};                                     \
        static const T bound[6] = {5, 0, 10, 10, 50, 50};                                    \
        static const T later[6] = {5, 7, 11, 10, 49, 50};                                    \
        T *flags = shmem_calloc(6, sizeof(T));                                               \
        long *payload = shmem_calloc(6, sizeof(long));                                       \
        MPE_CHECK(flags && payload, "shmem_calloc failed");                                  \
        memcpy(flags, init, sizeof(init));                                                   \
        shmem_barrier_all();                                                                 \
        for (int c = 0; c < 6; c++)                                                          \
            MPE_CHECK(!shmem_##NAME##_test(&flags[c], cmps[c], bound[c]),                    \
                      #NAME " test %d true before the update", c);                           \
        shmem_barrier_all();                                                                 \
        for (int c = 0; c < 6; c++) {                                                        \
            shmem_long_p(&payload[c], pattern(me, c, 3), right);                             \
            shmem_fence();                                                                   \
            shmem_atomic_set(&flags[c], later[c], right);                                    \
        }                                                                                    \
        for (int c = 0; c < 6; c++) {                                                        \
            if (c % 2)                                                                       \
                shmem_wait_until(&flags[c], cmps[c], bound[c]);                              \
            else                                                                             \
                shmem_##NAME##_wait_until(&flags[c], cmps[c], bound[c]);                     \
            MPE_CHECK(payload[c] == pattern(left, c, 3), #NAME " cmp %d: payload %ld", c,    \
                      payload[c]);                                                           \
            MPE_CHECK(shmem_test(&flags[c], cmps[c], bound[c]), #NAME " test %d false", c);  \
        }                                                                                    \
        shmem_barrier_all();                                                                 \
        shmem_free(payload);                                                                 \
        shmem_free(flags);                                                                   \
    }
CMP_TEST(long, long)
CMP_TEST(int, int)
CMP_TEST(uint, unsigned int)
CMP_TEST(size, size_t)
CMP_TEST(int64, int64_t)
CMP_TEST(ptrdiff, ptrdiff_t)

/* The set forms. ivars[s] on every PE is set to s+1 by PE s. */
#define SET_TEST(NAME, T)                                                                    \
    static void test_set_##NAME(void)                                                        \
    {                                                                                        \
        T *ivars = shmem_calloc((size_t)npes, sizeof(T));                                    \
        T cmp_values[MAX_PES], odd_only[MAX_PES];                                            \
        int status[MAX_PES], only_left[MAX_PES], none[MAX_PES], even_only[MAX_PES];          \
        size_t idx[MAX_PES];                                                                 \
        MPE_CHECK(ivars != NULL, "shmem_calloc failed");                                     \
        size_t n_even = 0, n_odd = 0;                                                        \
        for (int i = 0; i < npes; i++) {                                                     \
            cmp_values[i] = (T)(i + 1);                                                      \
            odd_only[i] = (T)(i % 2 ? i + 1 : 99);                                           \
            status[i] = 0;                                                                   \
            only_left[i] = i != left;                                                        \
            none[i] = 1;                                                                     \
            even_only[i] = i % 2; /* nonzero excludes the odd ones */                        \
            if (i % 2)                                                                       \
                n_odd++;                                                                     \
            else                                                                             \
                n_even++;                                                                    \
        }                                                                                    \
        shmem_barrier_all();                                                                 \
        /* Nobody has written yet: nothing is satisfied. */                                  \
        MPE_CHECK(!shmem_test_all(ivars, npes, NULL, SHMEM_CMP_NE, 0), #NAME " test_all");   \
        MPE_CHECK(shmem_test_any(ivars, npes, status, SHMEM_CMP_NE, 0) == SIZE_MAX,          \
                  #NAME " test_any early");                                                  \
        MPE_CHECK(shmem_##NAME##_test_some(ivars, npes, idx, NULL, SHMEM_CMP_NE, 0) == 0,    \
                  #NAME " test_some early");                                                 \
        MPE_CHECK(!shmem_test_all_vector(ivars, npes, NULL, SHMEM_CMP_EQ, cmp_values),       \
                  #NAME " test_all_vector early");                                           \
        MPE_CHECK(shmem_test_any_vector(ivars, npes, NULL, SHMEM_CMP_EQ, cmp_values) ==      \
                      SIZE_MAX,                                                              \
                  #NAME " test_any_vector early");                                           \
        shmem_barrier_all();                                                                 \
        for (int q = 0; q < npes; q++)                                                       \
            shmem_atomic_set(&ivars[me], (T)(me + 1), (me + q) % npes);                      \
                                                                                             \
        size_t got = shmem_wait_until_any(ivars, npes, only_left, SHMEM_CMP_NE, 0);          \
        MPE_CHECK(got == (size_t)left, #NAME " wait_until_any got %zu want %d", got, left);  \
        size_t n = shmem_wait_until_some(ivars, npes, idx, NULL, SHMEM_CMP_NE, 0);           \
        MPE_CHECK(n >= 1 && n <= (size_t)npes, #NAME " wait_until_some %zu", n);             \
        for (size_t j = 0; j < n; j++)                                                       \
            MPE_CHECK(idx[j] < (size_t)npes && ivars[idx[j]] == (T)(idx[j] + 1) &&           \
                          (j == 0 || idx[j] > idx[j - 1]),                                   \
                      #NAME " wait_until_some index %zu", idx[j]);                           \
        shmem_wait_until_all(ivars, npes, status, SHMEM_CMP_NE, 0);                          \
        for (int i = 0; i < npes; i++)                                                       \
            MPE_CHECK(ivars[i] == (T)(i + 1), #NAME " after wait_until_all [%d]", i);        \
        shmem_##NAME##_wait_until_all_vector(ivars, npes, NULL, SHMEM_CMP_EQ, cmp_values);   \
        got = shmem_wait_until_any_vector(ivars, npes, even_only, SHMEM_CMP_EQ, cmp_values); \
        MPE_CHECK(got < (size_t)npes && got % 2 == 0, #NAME " any_vector %zu", got);         \
        n = shmem_wait_until_some_vector(ivars, npes, idx, even_only, SHMEM_CMP_LE,          \
                                         cmp_values);                                        \
        MPE_CHECK(n == n_even, #NAME " some_vector %zu want %zu", n, n_even);                \
        for (size_t j = 0; j < n; j++)                                                       \
            MPE_CHECK(idx[j] == 2 * j, #NAME " some_vector index %zu", idx[j]);              \
                                                                                             \
        /* Everything has arrived: the tests answer from the data. */                       \
        MPE_CHECK(shmem_##NAME##_test_all(ivars, npes, NULL, SHMEM_CMP_GT, 0),               \
                  #NAME " test_all");                                                        \
        MPE_CHECK(!shmem_test_all(ivars, npes, NULL, SHMEM_CMP_GT, 1),                     \
                  #NAME " test_all GT 1 with PE 0's value 1");                               \
        MPE_CHECK(shmem_test_all(ivars, npes, none, SHMEM_CMP_EQ, 77),                       \
                  #NAME " test_all with everything excluded");                               \
        MPE_CHECK(shmem_test_any(ivars, npes, none, SHMEM_CMP_NE, 0) == SIZE_MAX,            \
                  #NAME " test_any with everything excluded");                               \
        MPE_CHECK(shmem_##NAME##_test_any(ivars, npes, NULL, SHMEM_CMP_EQ,                   \
                                          (T)npes) == (size_t)npes - 1,                      \
                  #NAME " test_any for the last value");                                     \
        MPE_CHECK(shmem_test_some(ivars, npes, idx, even_only, SHMEM_CMP_GE, 1) == n_even,   \
                  #NAME " test_some with odd excluded");                                     \
        n = shmem_test_some_vector(ivars, npes, idx, NULL, SHMEM_CMP_EQ, odd_only);          \
        MPE_CHECK(n == n_odd, #NAME " test_some_vector %zu want %zu", n, n_odd);             \
        for (size_t j = 0; j < n; j++)                                                       \
            MPE_CHECK(idx[j] == 2 * j + 1, #NAME " test_some_vector index %zu", idx[j]);     \
        MPE_CHECK(shmem_##NAME##_test_all_vector(ivars, npes, even_only, SHMEM_CMP_EQ,       \
                                                 cmp_values),                                \
                  #NAME " test_all_vector");                                                 \
        MPE_CHECK(!shmem_test_all_vector(ivars, npes, NULL, SHMEM_CMP_EQ, odd_only),         \
                  #NAME " test_all_vector with wrong even values");                          \
        got = shmem_test_any_vector(ivars, npes, NULL, SHMEM_CMP_EQ, odd_only);              \
        MPE_CHECK(npes == 1 ? got == SIZE_MAX : got % 2 == 1, #NAME " test_any_vector %zu",  \
                  got);                                                                      \
        /* Everything excluded, or nothing to wait for: return at once. */                  \
        MPE_CHECK(shmem_wait_until_any(ivars, npes, none, SHMEM_CMP_EQ, 77) == SIZE_MAX,     \
                  #NAME " wait_until_any with everything excluded");                         \
        MPE_CHECK(shmem_wait_until_some(ivars, npes, idx, none, SHMEM_CMP_EQ, 77) == 0,      \
                  #NAME " wait_until_some with everything excluded");                        \
        shmem_wait_until_all(ivars, npes, none, SHMEM_CMP_EQ, 77);                           \
        shmem_wait_until_all(ivars, 0, NULL, SHMEM_CMP_EQ, 77);                              \
        MPE_CHECK(shmem_test_any(ivars, 0, NULL, SHMEM_CMP_NE, 0) == SIZE_MAX,               \
                  #NAME " test_any of nothing");                                             \
        shmem_barrier_all();                                                                 \
        shmem_free(ivars);                                                                   \
    }
SET_TEST(long, long)
SET_TEST(int, int)
SET_TEST(uint64, uint64_t)
SET_TEST(size, size_t)
SET_TEST(longlong, long long)

/* Deprecated names: wait (until not equal), typed wait, the short types and
 * the long-only shmem_wait_until function. */
static void test_deprecated(void)
{
    long *l = shmem_calloc(2, sizeof(long));
    int *i = shmem_calloc(1, sizeof(int));
    short *s = shmem_calloc(2, sizeof(short));
    unsigned short *us = shmem_calloc(1, sizeof(unsigned short));
    MPE_CHECK(l && i && s && us, "shmem_calloc failed");
    shmem_barrier_all();
    MPE_CHECK(!shmem_short_test(&s[0], SHMEM_CMP_NE, 0), "short test before the update");
    MPE_CHECK(!shmem_test(us, SHMEM_CMP_EQ, 9), "ushort test before the update");
    shmem_barrier_all();
    shmem_long_atomic_set(&l[0], 1, right);
    shmem_long_atomic_set(&l[1], 3, right);
    shmem_int_atomic_set(i, -4, right);
    shmem_short_p(&s[0], 2, right);
    shmem_short_p(&s[1], -2, right);
    shmem_ushort_p(us, 9, right);
    shmem_wait(&l[0], 0);
    MPE_CHECK(l[0] == 1, "shmem_wait returned with %ld", l[0]);
    (shmem_wait_until)(&l[1], SHMEM_CMP_EQ, 3);
    shmem_long_wait(&l[1], 0);
    shmem_int_wait(i, 0);
    MPE_CHECK(*i == -4, "int wait returned with %d", *i);
    shmem_short_wait(&s[0], 0);
    shmem_wait_until(&s[1], SHMEM_CMP_LT, 0);
    shmem_ushort_wait_until(us, SHMEM_CMP_EQ, 9);
    shmem_ushort_wait(us, 0);
    MPE_CHECK(s[0] == 2 && s[1] == -2 && *us == 9, "short waits: %d %d %u", s[0], s[1], *us);
    MPE_CHECK(shmem_test(&s[1], SHMEM_CMP_LE, -2) && shmem_ushort_test(us, SHMEM_CMP_GT, 8),
              "short tests after the update");
    shmem_barrier_all();
    shmem_free(us);
    shmem_free(s);
    shmem_free(i);
    shmem_free(l);
}

int main(void)
{
    shmem_init();
    me = shmem_my_pe();
    npes = shmem_n_pes();
    MPE_CHECK(npes <= MAX_PES, "this test handles up to %d PEs", MAX_PES);
    right = (me + 1) % npes;
    left = (me + npes - 1) % npes;

    test_put_signal();
    test_cmp_long();
    test_cmp_int();
    test_cmp_uint();
    test_cmp_size();
    test_cmp_int64();
    test_cmp_ptrdiff();
    test_set_long();
    test_set_int();
    test_set_uint64();
    test_set_size();
    test_set_longlong();
    test_deprecated();

    shmem_finalize();
    return 0;
}
