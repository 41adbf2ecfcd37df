/* Atomics on every PE: contended fetch-add whose fetched values must be
 * exactly 0..total-1 with no duplicates, add/inc totals, compare-swap
 * electing one winner per target, swap chains that lose no value, bitwise
 * masks built from every PE, the fetching non-blocking forms, float and
 * double fetch/set/swap, and the deprecated 1.3 names. */
#include <shmem.h>
#include <stdint.h>
#include <string.h>

#include "mpe_check.h"

#define K 40 /* operations per PE per target */
#define MAX_PES 64

static int me, npes;

/* Every PE does K fetch-adds of `step` on every PE's counter and records the
 * fetched values in fetched[target][k] (symmetric). Each target then gathers
 * what all PEs fetched from it: the values must be exactly the multiples of
 * step below npes*K*step, each once, and increasing per PE. */
#define FADD_TEST(NAME, T, OP)                                                               \
    static void test_fadd_##NAME(void)                                                       \
    {                                                                                        \
        const T step = 3;                                                                    \
        T *counter = shmem_calloc(1, sizeof(T));                                             \
        T *fetched = shmem_calloc((size_t)npes * K, sizeof(T));                              \
        T *all = malloc((size_t)npes * K * sizeof(T));                                       \
        unsigned char *seen = calloc((size_t)npes * K, 1);                                   \
        MPE_CHECK(counter && fetched && all && seen, "allocation failed");                   \
        for (int k = 0; k < K; k++)                                                          \
            for (int q = 0; q < npes; q++) {                                                 \
                int pe = (q + me) % npes; /* spread the contention */                        \
                fetched[pe * K + k] = OP(counter, step, pe);                                 \
            }                                                                                \
        shmem_barrier_all();                                                                 \
        MPE_CHECK(*counter == (T)(step * (T)(npes * K)), #NAME " total %lld want %lld",      \
                  (long long)*counter, (long long)(step * npes * K));                        \
        for (int s = 0; s < npes; s++)                                                       \
            shmem_getmem(all + s * K, fetched + me * K, K * sizeof(T), s);                   \
        for (int s = 0; s < npes; s++)                                                       \
            for (int k = 0; k < K; k++) {                                                    \
                T v = all[s * K + k];                                                        \
                MPE_CHECK(v % step == 0 && v / step < (T)(npes * K),                         \
                          #NAME " PE %d fetched %lld", s, (long long)v);                     \
                MPE_CHECK(!seen[v / step], #NAME " value %lld fetched twice", (long long)v); \
                seen[v / step] = 1;                                                          \
                MPE_CHECK(k == 0 || v > all[s * K + k - 1],                                  \
                          #NAME " PE %d fetched %lld after %lld", s, (long long)v,           \
                          (long long)all[s * K + k - 1]);                                    \
            }                                                                                \
        shmem_barrier_all();                                                                 \
        free(seen);                                                                          \
        free(all);                                                                           \
        shmem_free(fetched);                                                                 \
        shmem_free(counter);                                                                 \
    }

#define OP_GENERIC(c, step, pe) shmem_atomic_fetch_add(c, step, pe)
#define OP_INT(c, step, pe) shmem_int_atomic_fetch_add(c, step, pe)
#define OP_UINT64(c, step, pe) shmem_uint64_atomic_fetch_add(c, step, pe)
#define OP_SIZE(c, step, pe) shmem_size_atomic_fetch_add(c, step, pe)
#define OP_PTRDIFF(c, step, pe) shmem_ptrdiff_atomic_fetch_add(c, step, pe)
#define OP_INT32(c, step, pe) shmem_int32_atomic_fetch_add(c, step, pe)
#define OP_OLD(c, step, pe) shmem_longlong_fadd(c, step, pe)
static long long nbi_fadd(long long *c, long long step, int pe)
{
    long long v = -1;
    shmem_atomic_fetch_add_nbi(&v, c, step, pe);
    shmem_quiet();
    return v;
}
static unsigned nbi_ufadd(unsigned *c, unsigned step, int pe)
{
    unsigned v = 0;
    shmem_uint_atomic_fetch_add_nbi(&v, c, step, pe);
    shmem_quiet();
    return v;
}
FADD_TEST(long, long, OP_GENERIC)
FADD_TEST(int, int, OP_INT)
FADD_TEST(uint64, uint64_t, OP_UINT64)
FADD_TEST(size, size_t, OP_SIZE)
FADD_TEST(ptrdiff, ptrdiff_t, OP_PTRDIFF)
FADD_TEST(int32, int32_t, OP_INT32)
FADD_TEST(longlong_fadd, long long, OP_OLD)
FADD_TEST(longlong_nbi, long long, nbi_fadd)
FADD_TEST(uint_nbi, unsigned, nbi_ufadd)

/* fetch_inc: the counters reach their totals, and tickets drawn from one
 * counter by all PEs are 0..npes*K-1, each once. */
static void test_fetch_inc(void)
{
    unsigned long *counter = shmem_calloc(1, sizeof(*counter));
    int *icounter = shmem_calloc(1, sizeof(*icounter));
    unsigned long *tickets = shmem_calloc((size_t)npes * K, sizeof(*tickets));
    MPE_CHECK(counter && icounter && tickets, "shmem_calloc failed");
    for (int k = 0; k < K; k++)
        for (int q = 0; q < npes; q++) {
            int pe = (q + me) % npes;
            shmem_atomic_inc(counter, pe);
            shmem_long_inc((long *)counter, pe);
            shmem_int_atomic_inc(icounter, pe);
            shmem_int_inc(icounter, pe);
        }
    shmem_barrier_all();
    MPE_CHECK(*counter == (unsigned long)(2 * npes * K), "ulong counter %lu want %d", *counter,
              2 * npes * K);
    MPE_CHECK(*icounter == 2 * npes * K, "int counter %d want %d", *icounter, 2 * npes * K);
    shmem_barrier_all();

    *counter = 0;
    *icounter = 0;
    shmem_barrier_all();
    for (int k = 0; k < K; k++) {
        unsigned long t = 0;
        if (k % 3 == 0)
            t = shmem_atomic_fetch_inc(counter, 0);
        else if (k % 3 == 1)
            shmem_ulong_atomic_fetch_inc_nbi(&t, counter, 0);
        else
            t = (unsigned long)shmem_long_finc((long *)counter, 0);
        shmem_quiet();
        tickets[k] = t;
        int it = k % 2 ? shmem_int_finc(icounter, npes - 1)
                       : shmem_int_atomic_fetch_inc(icounter, npes - 1);
        MPE_CHECK(it >= 0 && it < npes * K, "int ticket %d", it);
    }
    shmem_barrier_all();
    if (me == 0) {
        unsigned char *seen = calloc((size_t)npes * K, 1);
        unsigned long *all = malloc((size_t)npes * K * sizeof(*all));
        MPE_CHECK(seen && all, "allocation failed");
        for (int s = 0; s < npes; s++)
            shmem_ulong_get(all + s * K, tickets, K, s);
        for (int i = 0; i < npes * K; i++) {
            MPE_CHECK(all[i] < (unsigned long)(npes * K) && !seen[all[i]], "ticket %lu", all[i]);
            seen[all[i]] = 1;
        }
        free(all);
        free(seen);
    }
    if (me == npes - 1)
        MPE_CHECK(*icounter == npes * K, "int tickets %d want %d", *icounter, npes * K);
    shmem_barrier_all();
    shmem_free(tickets);
    shmem_free(icounter);
    shmem_free(counter);
}

/* add and inc: totals only. */
static void test_add(void)
{
    long *l = shmem_calloc(1, sizeof(long));
    uint32_t *u = shmem_calloc(1, sizeof(uint32_t));
    long long *ll = shmem_calloc(1, sizeof(long long));
    int *i = shmem_calloc(1, sizeof(int));
    MPE_CHECK(l && u && ll && i, "shmem_calloc failed");
    for (int q = 0; q < npes; q++) {
        shmem_atomic_add(l, (long)(me + 1), q);
        shmem_atomic_inc(l, q);
        shmem_uint32_atomic_add(u, (uint32_t)(me + 1) << 20, q);
        shmem_longlong_atomic_add(ll, -(long long)(me + 1) * 1000000000000LL, q);
        shmem_longlong_add(ll, 1, q);
        shmem_int_add(i, me, q);
    }
    shmem_barrier_all();
    long tri = (long)npes * (npes + 1) / 2;
    MPE_CHECK(*l == tri + npes, "long add total %ld want %ld", *l, tri + npes);
    MPE_CHECK(*u == (uint32_t)(tri << 20), "uint32 add total %u", *u);
    MPE_CHECK(*ll == -tri * 1000000000000LL + npes, "longlong add total %lld", *ll);
    MPE_CHECK(*i == npes * (npes - 1) / 2, "deprecated int add total %d", *i);
    shmem_barrier_all();
    shmem_free(i);
    shmem_free(ll);
    shmem_free(u);
    shmem_free(l);
}

/* compare_swap from -1 to my PE: exactly one PE wins on each target, and
 * every loser was told the winner's number. */
static void test_compare_swap(void)
{
    int *winner = shmem_malloc(sizeof(int));
    long *lwinner = shmem_malloc(sizeof(long));
    int *got = shmem_calloc((size_t)npes, sizeof(int));
    long *lgot = shmem_calloc((size_t)npes, sizeof(long));
    MPE_CHECK(winner && lwinner && got && lgot, "shmem allocation failed");
    *winner = -1;
    *lwinner = -1;
    shmem_barrier_all();
    for (int q = 0; q < npes; q++) {
        int pe = (me + q) % npes;
        got[pe] = shmem_atomic_compare_swap(winner, -1, me, pe);
        if (q % 2)
            lgot[pe] = shmem_long_cswap(lwinner, -1L, (long)me, pe);
        else
            shmem_long_atomic_compare_swap_nbi(&lgot[pe], lwinner, -1L, (long)me, pe);
    }
    shmem_quiet();
    shmem_barrier_all();
    MPE_CHECK(*winner >= 0 && *winner < npes, "winner %d", *winner);
    MPE_CHECK(*lwinner >= 0 && *lwinner < npes, "long winner %ld", *lwinner);
    int wins = 0, lwins = 0;
    for (int s = 0; s < npes; s++) {
        int g = shmem_int_g(&got[me], s);
        long lg = shmem_long_g(&lgot[me], s);
        if (g == -1) {
            wins++;
            MPE_CHECK(s == *winner, "PE %d won but %d is stored", s, *winner);
        } else {
            MPE_CHECK(g == *winner, "PE %d lost to %d but winner is %d", s, g, *winner);
        }
        if (lg == -1) {
            lwins++;
            MPE_CHECK(s == *lwinner, "PE %d won long but %ld is stored", s, *lwinner);
        } else {
            MPE_CHECK(lg == *lwinner, "PE %d lost long to %ld", s, lg);
        }
    }
    MPE_CHECK(wins == 1 && lwins == 1, "%d and %d winners, want 1", wins, lwins);
    /* A failed compare leaves the value alone and returns it. */
    int old = shmem_int_atomic_compare_swap(winner, -1, 99, me);
    MPE_CHECK(old == *winner && *winner != 99, "failed cswap changed the value");
    shmem_barrier_all();
    shmem_free(lgot);
    shmem_free(got);
    shmem_free(lwinner);
    shmem_free(winner);
}

/* swap chain: every PE swaps its number+1 into each target; the returned
 * values plus the final one are {0, 1..npes}, each exactly once. */
static void test_swap(void)
{
    long *slot = shmem_calloc(1, sizeof(long));
    int *islot = shmem_calloc(1, sizeof(int));
    long *got = shmem_calloc((size_t)npes, sizeof(long));
    int *igot = shmem_calloc((size_t)npes, sizeof(int));
    MPE_CHECK(slot && islot && got && igot, "shmem_calloc failed");
    for (int q = 0; q < npes; q++) {
        int pe = (me + q) % npes;
        if (q % 3 == 0)
            got[pe] = shmem_atomic_swap(slot, (long)me + 1, pe);
        else if (q % 3 == 1)
            got[pe] = shmem_swap(slot, (long)me + 1, pe);
        else
            shmem_long_atomic_swap_nbi(&got[pe], slot, (long)me + 1, pe);
        igot[pe] = q % 2 ? shmem_int_swap(islot, me + 1, pe)
                         : shmem_int32_atomic_swap(islot, me + 1, pe);
    }
    shmem_quiet();
    shmem_barrier_all();
    unsigned char seen[MAX_PES + 1] = {0}, iseen[MAX_PES + 1] = {0};
    seen[*slot] = iseen[*islot] = 1;
    for (int s = 0; s < npes; s++) {
        long g = shmem_long_g(&got[me], s);
        int ig = shmem_int_g(&igot[me], s);
        MPE_CHECK(g >= 0 && g <= npes && !seen[g], "swap from PE %d returned %ld", s, g);
        MPE_CHECK(ig >= 0 && ig <= npes && !iseen[ig], "int swap from PE %d returned %d", s, ig);
        seen[g] = iseen[ig] = 1;
    }
    shmem_barrier_all();
    shmem_free(igot);
    shmem_free(got);
    shmem_free(islot);
    shmem_free(slot);
}

/* Bitwise: a mask with one bit per PE built with or, cleared with and,
 * toggled with xor; fetching forms must see their own bit. */
#define BIT_TEST(NAME, T)                                                                    \
    static void test_bits_##NAME(void)                                                       \
    {                                                                                        \
        T *mask = shmem_calloc(1, sizeof(T));                                                \
        MPE_CHECK(mask != NULL, "shmem_calloc failed");                                      \
        const T bit = (T)1 << (me % (int)(8 * sizeof(T) - 1));                               \
        T all = 0;                                                                           \
        for (int s = 0; s < npes; s++)                                                       \
            all |= (T)1 << (s % (int)(8 * sizeof(T) - 1));                                   \
        for (int q = 0; q < npes; q++) {                                                     \
            if (q % 2)                                                                       \
                shmem_atomic_or(mask, bit, q);                                               \
            else                                                                             \
                shmem_##NAME##_atomic_or(mask, bit, q);                                      \
        }                                                                                    \
        shmem_barrier_all();                                                                 \
        MPE_CHECK(*mask == all, #NAME " or: %llx want %llx", (unsigned long long)*mask,      \
                  (unsigned long long)all);                                                  \
        shmem_barrier_all();                                                                 \
        for (int q = 0; q < npes; q++) {                                                     \
            T old;                                                                           \
            if (q % 2)                                                                       \
                old = shmem_atomic_fetch_and(mask, (T)~bit, q);                              \
            else                                                                             \
                shmem_##NAME##_atomic_fetch_and_nbi(&old, mask, (T)~bit, q);                 \
            shmem_quiet();                                                                   \
            MPE_CHECK(old & bit, #NAME " fetch_and on PE %d lost my bit: %llx", q,           \
                      (unsigned long long)old);                                              \
        }                                                                                    \
        shmem_barrier_all();                                                                 \
        MPE_CHECK(*mask == 0, #NAME " and: %llx", (unsigned long long)*mask);                \
        shmem_barrier_all();                                                                 \
        for (int q = 0; q < npes; q++) {                                                     \
            T old;                                                                           \
            if (q % 2)                                                                       \
                old = shmem_##NAME##_atomic_fetch_xor(mask, bit, q);                         \
            else                                                                             \
                shmem_atomic_fetch_xor_nbi(&old, mask, bit, q);                              \
            shmem_quiet();                                                                   \
            MPE_CHECK(!(old & bit), #NAME " fetch_xor on PE %d saw my bit early", q);        \
            /* Only this PE touches its bit, so every later fetch must see it. */            \
            T o2 = shmem_atomic_fetch_or(mask, 0, q);                                        \
            MPE_CHECK(o2 & bit, #NAME " fetch_or on PE %d missed my bit", q);                \
            shmem_##NAME##_atomic_and(mask, (T)~(T)0, q);                                    \
            o2 = 0;                                                                          \
            shmem_##NAME##_atomic_fetch_or_nbi(&o2, mask, bit, q);                           \
            shmem_quiet();                                                                   \
            MPE_CHECK(o2 & bit, #NAME " fetch_or_nbi on PE %d missed my bit", q);            \
        }                                                                                    \
        shmem_quiet();                                                                       \
        shmem_barrier_all();                                                                 \
        MPE_CHECK(*mask == all, #NAME " xor: %llx want %llx", (unsigned long long)*mask,     \
                  (unsigned long long)all);                                                  \
        shmem_barrier_all();                                                                 \
        shmem_free(mask);                                                                    \
    }
BIT_TEST(uint, unsigned int)
BIT_TEST(ulong, unsigned long)
BIT_TEST(ulonglong, unsigned long long)
BIT_TEST(int32, int32_t)
BIT_TEST(int64, int64_t)
BIT_TEST(uint32, uint32_t)
BIT_TEST(uint64, uint64_t)

/* fetch and set, including float and double: each PE sets a value on its
 * right neighbour, then everyone fetches what its left neighbour holds. */
static void test_fetch_set(void)
{
    double *d = shmem_calloc(1, sizeof(double));
    float *f = shmem_calloc(1, sizeof(float));
    long *l = shmem_calloc(1, sizeof(long));
    uint64_t *u = shmem_calloc(1, sizeof(uint64_t));
    MPE_CHECK(d && f && l && u, "shmem_calloc failed");
    int right = (me + 1) % npes, left = (me + npes - 1) % npes;
    int left2 = (left + npes - 1) % npes;
    shmem_atomic_set(d, me + 0.5, right);
    shmem_float_atomic_set(f, (float)me - 0.25f, right);
    shmem_long_set(l, (long)me * 1000000007L, right);
    shmem_uint64_atomic_set(u, UINT64_MAX - (uint64_t)me, right);
    shmem_barrier_all();
    MPE_CHECK(*d == left + 0.5, "double set: %g", *d);
    MPE_CHECK(*f == (float)left - 0.25f, "float set: %g", (double)*f);
    MPE_CHECK(*l == (long)left * 1000000007L, "long set: %ld", *l);
    MPE_CHECK(*u == UINT64_MAX - (uint64_t)left, "uint64 set");
    MPE_CHECK(shmem_atomic_fetch(d, left) == left2 + 0.5, "double fetch");
    MPE_CHECK(shmem_double_fetch(d, left) == left2 + 0.5, "deprecated double fetch");
    MPE_CHECK(shmem_float_atomic_fetch(f, left) == (float)left2 - 0.25f, "float fetch");
    MPE_CHECK(shmem_long_fetch(l, left) == (long)left2 * 1000000007L, "deprecated long fetch");
    MPE_CHECK(shmem_atomic_fetch(u, left) == UINT64_MAX - (uint64_t)left2, "uint64 fetch");
    double dn = 0;
    float fn = 0;
    shmem_atomic_fetch_nbi(&dn, d, left);
    shmem_float_atomic_fetch_nbi(&fn, f, left);
    shmem_quiet();
    MPE_CHECK(dn == left2 + 0.5 && fn == (float)left2 - 0.25f, "fetch_nbi: %g %g", dn,
              (double)fn);
    shmem_barrier_all();

    /* swap on floating point: the old value comes back, bit for bit. */
    double old = shmem_atomic_swap(d, -1.0 / 3.0 - me, right);
    float fold = shmem_float_swap(f, 1e30f * (float)(me + 1), right);
    MPE_CHECK(old == me + 0.5, "double swap returned %g", old);
    MPE_CHECK(fold == (float)me - 0.25f, "deprecated float swap returned %g", (double)fold);
    shmem_barrier_all();
    MPE_CHECK(*d == -1.0 / 3.0 - left, "double swap stored %g", *d);
    MPE_CHECK(*f == 1e30f * (float)(left + 1), "float swap stored %g", (double)*f);
    shmem_barrier_all();
    double dold = 0;
    shmem_double_atomic_swap_nbi(&dold, d, 2.5, right);
    shmem_quiet();
    MPE_CHECK(dold == -1.0 / 3.0 - me, "double swap_nbi returned %g", dold);
    shmem_double_set(d, 7.75, right);
    shmem_float_set(f, 0.125f, right);
    shmem_barrier_all();
    MPE_CHECK(*d == 7.75 && *f == 0.125f, "deprecated set: %g %g", *d, (double)*f);
    shmem_barrier_all();
    shmem_free(u);
    shmem_free(l);
    shmem_free(f);
    shmem_free(d);
}

int main(void)
{
    shmem_init();
    me = shmem_my_pe();
    npes = shmem_n_pes();
    MPE_CHECK(npes <= MAX_PES, "this test handles up to %d PEs", MAX_PES);

    test_fadd_long();
    test_fadd_int();
    test_fadd_uint64();
    test_fadd_size();
    test_fadd_ptrdiff();
    test_fadd_int32();
    test_fadd_longlong_fadd();
    test_fadd_longlong_nbi();
    test_fadd_uint_nbi();
    test_fetch_inc();
    test_add();
    test_compare_swap();
    test_swap();
    test_bits_uint();
    test_bits_ulong();
    test_bits_ulonglong();
    test_bits_int32();
    test_bits_int64();
    test_bits_uint32();
    test_bits_uint64();
    test_fetch_set();

    shmem_finalize();
    return 0;
}
