/* The OpenSHMEM 1.5 C11 generic names with their optional leading context.
 * For every type each RMA, signal and atomic generic selects, data goes to
 * the next PE without a context, through a context from shmem_ctx_create
 * and through SHMEM_CTX_DEFAULT (the fixed-width and size typedefs through
 * the created context), and every PE checks exactly what arrived. A
 * context on a team takes the team's PE numbers. The wait/test generics
 * are exercised on short and unsigned short as well as the standard types,
 * including the _vector forms with their const cmp_values. */
#include <shmem.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "mpe_check.h"

/* Every type in USHMEMI_GEN_RMA's list: X(NAME, TYPE). */
#define RMA_TYPES(X)                                                          \
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
    X(ulonglong, unsigned long long)

/* Typedefs that must select one of those. They reach the same functions as
 * their base types, so they run in one pass only, to keep the run short. */
#define RMA_TYPEDEFS(X)                                                       \
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

/* USHMEMI_GEN_AMO_STD's list, then typedefs. */
#define AMO_STD_TYPES(X)                                                      \
    X(int, int)                                                               \
    X(long, long)                                                             \
    X(longlong, long long)                                                    \
    X(uint, unsigned int)                                                     \
    X(ulong, unsigned long)                                                   \
    X(ulonglong, unsigned long long)
#define AMO_STD_TYPEDEFS(X)                                                   \
    X(int32, int32_t)                                                         \
    X(int64, int64_t)                                                         \
    X(uint32, uint32_t)                                                       \
    X(uint64, uint64_t)                                                       \
    X(size, size_t)                                                           \
    X(ptrdiff, ptrdiff_t)

/* USHMEMI_GEN_AMO_EXT's: the standard ones and the two floating types. */
#define AMO_EXT_TYPES(X) AMO_STD_TYPES(X) X(float, float) X(double, double)

/* USHMEMI_GEN_AMO_BIT's list (int32_t and int64_t are in it), then
 * typedefs. */
#define AMO_BIT_TYPES(X)                                                      \
    X(uint, unsigned int)                                                     \
    X(ulong, unsigned long)                                                   \
    X(ulonglong, unsigned long long)                                          \
    X(int32, int32_t)                                                         \
    X(int64, int64_t)
#define AMO_BIT_TYPEDEFS(X) X(uint32, uint32_t) X(uint64, uint64_t)

/* USHMEMI_GEN_SYNC's list: short and unsigned short included. */
#define SYNC_TYPES(X)                                                         \
    X(short, short)                                                           \
    X(ushort, unsigned short)                                                 \
    X(int, int)                                                               \
    X(long, long)                                                             \
    X(longlong, long long)                                                    \
    X(uint, unsigned int)                                                     \
    X(ulong, unsigned long)                                                   \
    X(ulonglong, unsigned long long)

#define N 14 /* source elements per type */

static int me, npes, peer, left;
static void *arena; /* symmetric scratch, reused by each type in turn */
static uint64_t sigs[4];
static long tbuf[8];
static long tcount;

/* Each pass runs every generic call through one road. */
enum { NO_CTX, CREATED_CTX, DEFAULT_CTX, PASSES };
static const char *const pass_names[PASSES] = {"no context", "shmem_ctx_create context",
                                               "SHMEM_CTX_DEFAULT"};
static int pass;
static shmem_ctx_t pass_ctx;
static const char *road; /* names the road in failure messages */

/* Every call site compiles both forms of the generic, with and without the
 * leading context; the pass picks the one that runs. */
#define G(op, ...) (pass != NO_CTX ? op(pass_ctx, __VA_ARGS__) : op(__VA_ARGS__))

static void pass_quiet(void)
{
    if (pass != NO_CTX)
        shmem_ctx_quiet(pass_ctx);
    else
        shmem_quiet();
}

/* Values unique per PE and index that fit every type, signed char included
 * (at most 7 * 14 + 14 = 112); -1 marks elements nothing may write. */
#define V(T, pe, i) ((T)((pe) % 8 * N + (i) + 1))
#define SENT(T) ((T)-1)
#define FILL(arr, n, value)                                                   \
    do {                                                                      \
        for (int k_ = 0; k_ < (n); k_++)                                      \
            (arr)[k_] = (value);                                              \
    } while (0)

/* got is evaluated twice: pass a plain lvalue. tname is the function's type. */
#define EXPECT(got, want, what, idx)                                          \
    MPE_CHECK((got) == (want), "%s, %s, %s [%d]: %Lg, not %Lg", tname, road,  \
              what, (int)(idx), (long double)(got), (long double)(want))

/* ------------------------------------------------------------------------ */
/* RMA and put-with-signal: puts land on the next PE, gets read from it.     */

#define RMA_TEST(NAME, T)                                                     \
    static void rma_##NAME(void)                                              \
    {                                                                         \
        static const char tname[] = #T;                                       \
        struct {                                                              \
            T src[N], put[8], p, iput[N], ib[N], nbi[8], sig[8], signbi[8];   \
        } *b = arena;                                                         \
        T got[N], one;                                                        \
        for (int i = 0; i < N; i++)                                           \
            b->src[i] = V(T, me, i);                                          \
        FILL(b->put, 8, SENT(T));                                             \
        b->p = SENT(T);                                                       \
        FILL(b->iput, N, SENT(T));                                            \
        FILL(b->ib, N, SENT(T));                                              \
        FILL(b->nbi, 8, SENT(T));                                             \
        FILL(b->sig, 8, SENT(T));                                             \
        FILL(b->signbi, 8, SENT(T));                                          \
        sigs[0] = sigs[1] = 0;                                                \
        shmem_barrier_all();                                                  \
                                                                              \
        G(shmem_put, b->put, b->src, 8, peer);                                \
        G(shmem_p, &b->p, V(T, me, 13), peer);                                \
        /* dest[2k] = src[k] */                                               \
        G(shmem_iput, b->iput, b->src, 2, 1, 7, peer);                        \
        /* 3 blocks of 3: dest[5b + j] = src[4b + j] */                       \
        G(shmem_ibput, b->ib, b->src, 5, 4, 3, 3, peer);                      \
        G(shmem_put_nbi, b->nbi, b->src + 3, 8, peer);                        \
        G(shmem_put_signal, b->sig, b->src + 1, 8, &sigs[0], 1,               \
          SHMEM_SIGNAL_ADD, peer);                                            \
        G(shmem_put_signal_nbi, b->signbi, b->src + 6, 8, &sigs[1],           \
          1000 + me, SHMEM_SIGNAL_SET, peer);                                 \
        pass_quiet();                                                         \
        shmem_signal_wait_until(&sigs[0], SHMEM_CMP_EQ, 1);                   \
        shmem_signal_wait_until(&sigs[1], SHMEM_CMP_EQ, (uint64_t)(1000 + left)); \
        shmem_barrier_all();                                                  \
                                                                              \
        for (int i = 0; i < 8; i++) {                                         \
            EXPECT(b->put[i], V(T, left, i), "put", i);                       \
            EXPECT(b->nbi[i], V(T, left, i + 3), "put_nbi", i);               \
            EXPECT(b->sig[i], V(T, left, i + 1), "put_signal", i);            \
            EXPECT(b->signbi[i], V(T, left, i + 6), "put_signal_nbi", i);     \
        }                                                                     \
        EXPECT(b->p, V(T, left, 13), "p", 0);                                 \
        for (int i = 0; i < N; i++) {                                         \
            T want = i % 2 == 0 && i < 13 ? V(T, left, i / 2) : SENT(T);      \
            EXPECT(b->iput[i], want, "iput", i);                              \
            want = i % 5 < 3 && i < 13 ? V(T, left, i / 5 * 4 + i % 5) : SENT(T); \
            EXPECT(b->ib[i], want, "ibput", i);                               \
        }                                                                     \
                                                                              \
        FILL(got, N, SENT(T));                                                \
        G(shmem_get, got, b->src, N, peer);                                   \
        for (int i = 0; i < N; i++)                                           \
            EXPECT(got[i], V(T, peer, i), "get", i);                          \
        one = G(shmem_g, &b->src[7], peer);                                   \
        EXPECT(one, V(T, peer, 7), "g", 7);                                   \
        /* got[k] = src[2k] */                                                \
        FILL(got, N, SENT(T));                                                \
        G(shmem_iget, got, b->src, 1, 2, 7, peer);                            \
        for (int i = 0; i < N; i++) {                                         \
            T want = i < 7 ? V(T, peer, 2 * i) : SENT(T);                     \
            EXPECT(got[i], want, "iget", i);                                  \
        }                                                                     \
        /* 3 blocks of 2: got[3b + j] = src[5b + j] */                        \
        FILL(got, N, SENT(T));                                                \
        G(shmem_ibget, got, b->src, 3, 5, 2, 3, peer);                        \
        for (int i = 0; i < N; i++) {                                         \
            T want = i % 3 < 2 && i < 9 ? V(T, peer, i / 3 * 5 + i % 3) : SENT(T); \
            EXPECT(got[i], want, "ibget", i);                                 \
        }                                                                     \
        FILL(got, N, SENT(T));                                                \
        G(shmem_get_nbi, got, b->src + 2, 10, peer);                          \
        pass_quiet();                                                         \
        for (int i = 0; i < N; i++) {                                         \
            T want = i < 10 ? V(T, peer, i + 2) : SENT(T);                    \
            EXPECT(got[i], want, "get_nbi", i);                               \
        }                                                                     \
        shmem_barrier_all();                                                  \
    }
RMA_TYPES(RMA_TEST)
RMA_TYPEDEFS(RMA_TEST)

/* ------------------------------------------------------------------------ */
/* Atomics: each word of the next PE is touched by this PE only, so old     */
/* values and final values are exact.                                       */

/* fetch, set, swap and their nbi forms. */
#define AMO_EXT_TEST(NAME, T)                                                 \
    static void amo_ext_##NAME(void)                                          \
    {                                                                         \
        static const char tname[] = #T;                                       \
        T *a = arena;                                                         \
        T old, f;                                                             \
        a[0] = 0;                                                             \
        a[1] = 3;                                                             \
        a[2] = 4;                                                             \
        shmem_barrier_all();                                                  \
        G(shmem_atomic_set, &a[0], V(T, me, 0), peer);                        \
        old = G(shmem_atomic_swap, &a[1], V(T, me, 1), peer);                 \
        EXPECT(old, (T)3, "atomic_swap returned", 1);                         \
        f = 0;                                                                \
        G(shmem_atomic_swap_nbi, &f, &a[2], V(T, me, 2), peer);               \
        pass_quiet();                                                         \
        EXPECT(f, (T)4, "atomic_swap_nbi fetched", 2);                        \
        shmem_barrier_all();                                                  \
        for (int i = 0; i < 3; i++)                                           \
            EXPECT(a[i], V(T, left, i), "atomic_set/swap/swap_nbi", i);       \
        old = G(shmem_atomic_fetch, &a[1], peer);                             \
        EXPECT(old, V(T, me, 1), "atomic_fetch", 1);                          \
        f = 0;                                                                \
        G(shmem_atomic_fetch_nbi, &f, &a[2], peer);                           \
        pass_quiet();                                                         \
        EXPECT(f, V(T, me, 2), "atomic_fetch_nbi", 2);                        \
        shmem_barrier_all();                                                  \
    }
AMO_EXT_TYPES(AMO_EXT_TEST)
AMO_STD_TYPEDEFS(AMO_EXT_TEST)

/* compare_swap, inc, add and their fetching and nbi forms. */
#define AMO_STD_TEST(NAME, T)                                                 \
    static void amo_std_##NAME(void)                                          \
    {                                                                         \
        static const char tname[] = #T;                                       \
        static const T init[7] = {10, 11, 20, 30, 40, 50, 60};                \
        T *a = arena;                                                         \
        T old, f[3] = {0, 0, 0};                                              \
        for (int i = 0; i < 7; i++)                                           \
            a[i] = init[i];                                                   \
        shmem_barrier_all();                                                  \
        old = G(shmem_atomic_compare_swap, &a[0], (T)10, V(T, me, 0), peer);  \
        EXPECT(old, (T)10, "atomic_compare_swap returned", 0);                \
        /* a comparison that fails leaves the word alone */                   \
        old = G(shmem_atomic_compare_swap, &a[1], (T)99, (T)7, peer);         \
        EXPECT(old, (T)11, "failing atomic_compare_swap returned", 1);        \
        old = G(shmem_atomic_fetch_inc, &a[2], peer);                         \
        EXPECT(old, (T)20, "atomic_fetch_inc returned", 2);                   \
        G(shmem_atomic_inc, &a[2], peer);                                     \
        old = G(shmem_atomic_fetch_add, &a[3], (T)(me + 1), peer);            \
        EXPECT(old, (T)30, "atomic_fetch_add returned", 3);                   \
        G(shmem_atomic_add, &a[3], (T)100, peer);                             \
        G(shmem_atomic_compare_swap_nbi, &f[0], &a[4], (T)40, (T)41, peer);   \
        G(shmem_atomic_fetch_inc_nbi, &f[1], &a[5], peer);                    \
        G(shmem_atomic_fetch_add_nbi, &f[2], &a[6], (T)5, peer);              \
        pass_quiet();                                                         \
        for (int i = 0; i < 3; i++)                                           \
            EXPECT(f[i], init[4 + i], "nbi fetched", 4 + i);                  \
        shmem_barrier_all();                                                  \
        const T want[7] = {V(T, left, 0), 11, 22, (T)(131 + left), 41, 51, 65}; \
        for (int i = 0; i < 7; i++)                                           \
            EXPECT(a[i], want[i], "word after the atomics", i);               \
        shmem_barrier_all();                                                  \
    }
AMO_STD_TYPES(AMO_STD_TEST)
AMO_STD_TYPEDEFS(AMO_STD_TEST)

/* and, or, xor and their fetching and nbi forms; high is a bit near the top
 * of the type, so that 64-bit words are not cut to 32. */
#define AMO_BIT_TEST(NAME, T)                                                 \
    static void amo_bit_##NAME(void)                                          \
    {                                                                         \
        static const char tname[] = #T;                                       \
        static const T init[9] = {0xFF, 0xFF, 0x100, 0x200, 0xAA, 0x0F, 0xF0, 0x1, 0x5}; \
        const T high = (T)((T)0x40 << (sizeof(T) * 8 - 8));                   \
        T *a = arena;                                                         \
        T old, f[3] = {0, 0, 0};                                              \
        for (int i = 0; i < 9; i++)                                           \
            a[i] = init[i];                                                   \
        shmem_barrier_all();                                                  \
        old = G(shmem_atomic_fetch_and, &a[0], (T)(0xF0 | me % 8), peer);     \
        EXPECT(old, init[0], "atomic_fetch_and returned", 0);                 \
        G(shmem_atomic_and, &a[1], (T)0x3C, peer);                            \
        old = G(shmem_atomic_fetch_or, &a[2], (T)(high | (T)(me % 8 + 1)), peer); \
        EXPECT(old, init[2], "atomic_fetch_or returned", 2);                  \
        G(shmem_atomic_or, &a[3], (T)0x11, peer);                             \
        old = G(shmem_atomic_fetch_xor, &a[4], (T)0xFF, peer);                \
        EXPECT(old, init[4], "atomic_fetch_xor returned", 4);                 \
        G(shmem_atomic_xor, &a[5], (T)(high | 0x3), peer);                    \
        G(shmem_atomic_fetch_and_nbi, &f[0], &a[6], (T)0x3C, peer);           \
        G(shmem_atomic_fetch_or_nbi, &f[1], &a[7], (T)(high | 0x6), peer);    \
        G(shmem_atomic_fetch_xor_nbi, &f[2], &a[8], (T)0x3, peer);            \
        pass_quiet();                                                         \
        for (int i = 0; i < 3; i++)                                           \
            EXPECT(f[i], init[6 + i], "nbi fetched", 6 + i);                  \
        shmem_barrier_all();                                                  \
        const T want[9] = {(T)(0xF0 | left % 8), 0x3C, (T)(0x100 | high | (T)(left % 8 + 1)), \
                           0x211, 0x55, (T)(high | 0x0C), 0x30, (T)(high | 0x7), 0x6}; \
        for (int i = 0; i < 9; i++)                                           \
            EXPECT(a[i], want[i], "word after the atomics", i);               \
        shmem_barrier_all();                                                  \
    }
AMO_BIT_TYPES(AMO_BIT_TEST)
AMO_BIT_TYPEDEFS(AMO_BIT_TEST)

/* shmem_signal_set and shmem_signal_add, 3 arguments or 4. */
static void signal_ops(void)
{
    static const char tname[] = "uint64_t";
    sigs[2] = sigs[3] = 0;
    shmem_barrier_all();
    G(shmem_signal_set, &sigs[2], (uint64_t)(100 + me), peer);
    G(shmem_signal_add, &sigs[3], (uint64_t)(me + 1), peer);
    G(shmem_signal_add, &sigs[3], 10, peer);
    pass_quiet();
    shmem_barrier_all();
    EXPECT(sigs[2], (uint64_t)(100 + left), "signal_set", 2);
    EXPECT(sigs[3], (uint64_t)(left + 11), "signal_add", 3);
    shmem_barrier_all();
}

/* ------------------------------------------------------------------------ */
/* A context on the team of world PEs 1..npes-1: the generics' PE argument  */
/* is a team PE, so team PE t is world PE 1 + t, and world PE 0 gets        */
/* nothing.                                                                  */

static void team_context(void)
{
    static const char tname[] = "long";
    shmem_team_t team = SHMEM_TEAM_INVALID;
    shmem_ctx_t tctx = SHMEM_CTX_INVALID;
    int rc = shmem_team_split_strided(SHMEM_TEAM_WORLD, 1, 1, npes - 1, NULL, 0, &team);
    MPE_CHECK(rc == 0, "shmem_team_split_strided returned %d", rc);
    MPE_CHECK((me == 0) == (team == SHMEM_TEAM_INVALID), "team membership");
    FILL(tbuf, 8, -1L);
    tcount = 0;
    int size = 0, tme = -1, tnext = -1, from = -1;
    if (team != SHMEM_TEAM_INVALID) {
        rc = shmem_team_create_ctx(team, 0, &tctx);
        MPE_CHECK(rc == 0, "shmem_team_create_ctx returned %d", rc);
        size = shmem_team_n_pes(team);
        tme = shmem_team_my_pe(team);
        MPE_CHECK(size == npes - 1 && tme == me - 1, "team PE %d of %d", tme, size);
        tnext = (tme + 1) % size;
        from = 1 + (tme - 1 + size) % size; /* world PE that puts here */
    }
    shmem_barrier_all();

    if (team != SHMEM_TEAM_INVALID) {
        long src[6];
        for (int i = 0; i < 6; i++)
            src[i] = me * 100 + i;
        shmem_put(tctx, tbuf, src, 6, tnext);
        shmem_p(tctx, &tbuf[6], (long)(me * 100 + 50), tnext);
        shmem_atomic_add(tctx, &tcount, (long)me, tnext);
        shmem_ctx_quiet(tctx);
    }
    shmem_barrier_all();

    if (team != SHMEM_TEAM_INVALID) {
        for (int i = 0; i < 6; i++)
            EXPECT(tbuf[i], (long)(from * 100 + i), "team put", i);
        EXPECT(tbuf[6], (long)(from * 100 + 50), "team p", 6);
        EXPECT(tbuf[7], -1L, "team put past the end", 7);
        EXPECT(tcount, (long)from, "team atomic_add", 0);
        long g = shmem_g(tctx, &tbuf[6], tnext);
        EXPECT(g, (long)(me * 100 + 50), "team g", 6);
        long fetched = shmem_atomic_fetch(tctx, &tcount, tnext);
        EXPECT(fetched, (long)me, "team atomic_fetch", 0);
    } else {
        /* world PE 0 is no member: team PE 0 must not mean it */
        for (int i = 0; i < 8; i++)
            EXPECT(tbuf[i], -1L, "world PE 0 untouched", i);
        EXPECT(tcount, 0L, "world PE 0 counter untouched", 0);
    }
    shmem_barrier_all();
    if (team != SHMEM_TEAM_INVALID) {
        shmem_ctx_destroy(tctx);
        shmem_team_destroy(team);
    }
}

/* ------------------------------------------------------------------------ */
/* wait/test generics: the previous PE sets this PE's flags with shmem_p    */
/* while it waits, then the tests run on the settled values.                */

#define SYNC_TEST(NAME, T)                                                    \
    static void sync_##NAME(void)                                             \
    {                                                                         \
        static const char tname[] = #T;                                       \
        static const int only_3[4] = {1, 1, 1, 0}, skip_0[4] = {1, 0, 0, 0};  \
        static const int skip_2[4] = {0, 0, 1, 0}, skip_3[4] = {0, 0, 0, 1};  \
        T *flags = arena;                                                     \
        size_t idx[4], n;                                                     \
        int t;                                                                \
        FILL(flags, 4, (T)0);                                                 \
        shmem_barrier_all();                                                  \
                                                                              \
        for (int i = 0; i < 4; i++)                                           \
            shmem_p(&flags[i], (T)(i + 1), peer);                             \
        n = shmem_wait_until_any(flags, 4, only_3, SHMEM_CMP_EQ, (T)4);       \
        EXPECT(n, (size_t)3, "wait_until_any with status", 0);                \
        n = shmem_wait_until_some(flags, 4, idx, NULL, SHMEM_CMP_NE, (T)0);   \
        MPE_CHECK(n >= 1 && n <= 4, "%s: wait_until_some returned %zu", tname, n); \
        for (size_t k = 0; k < n; k++)                                        \
            MPE_CHECK(idx[k] < 4 && flags[idx[k]] != 0 && (k == 0 || idx[k] > idx[k - 1]), \
                      "%s: wait_until_some index %zu", tname, idx[k]);        \
        shmem_wait_until_all(flags, 4, NULL, SHMEM_CMP_NE, (T)0);             \
        for (int i = 0; i < 4; i++)                                           \
            EXPECT(flags[i], (T)(i + 1), "flag set by shmem_p", i);           \
        shmem_wait_until(&flags[0], SHMEM_CMP_EQ, (T)1);                      \
        n = shmem_wait_until_any(flags, 4, NULL, SHMEM_CMP_GE, (T)3);         \
        MPE_CHECK(n == 2 || n == 3, "%s: wait_until_any returned %zu", tname, n); \
                                                                              \
        t = shmem_test_all(flags, 4, NULL, SHMEM_CMP_GT, (T)0);               \
        EXPECT(t, 1, "test_all GT 0", 0);                                     \
        t = shmem_test_all(flags, 4, NULL, SHMEM_CMP_GT, (T)1);               \
        EXPECT(t, 0, "test_all GT 1", 0);                                     \
        t = shmem_test_all(flags, 4, skip_0, SHMEM_CMP_GT, (T)1);             \
        EXPECT(t, 1, "test_all GT 1 skipping 0", 0);                          \
        n = shmem_test_any(flags, 4, NULL, SHMEM_CMP_EQ, (T)3);               \
        EXPECT(n, (size_t)2, "test_any EQ 3", 0);                             \
        n = shmem_test_any(flags, 4, skip_2, SHMEM_CMP_EQ, (T)3);             \
        EXPECT(n, SIZE_MAX, "test_any EQ 3 skipping 2", 0);                   \
        n = shmem_test_some(flags, 4, idx, NULL, SHMEM_CMP_GE, (T)3);         \
        MPE_CHECK(n == 2 && idx[0] == 2 && idx[1] == 3, "%s: test_some GE 3: %zu", tname, n); \
        n = shmem_test_some(flags, 4, idx, NULL, SHMEM_CMP_GT, (T)9);         \
        EXPECT(n, (size_t)0, "test_some GT 9", 0);                            \
        t = shmem_test(&flags[3], SHMEM_CMP_EQ, (T)4);                        \
        EXPECT(t, 1, "test EQ 4", 3);                                         \
        t = shmem_test(&flags[3], SHMEM_CMP_LT, (T)4);                        \
        EXPECT(t, 0, "test LT 4", 3);                                         \
        shmem_barrier_all();                                                  \
                                                                              \
        /* second round through the typed name; the vector forms compare     \
         * each element with its own value */                                 \
        for (int i = 0; i < 4; i++)                                           \
            shmem_##NAME##_p(&flags[i], (T)(i + 11), peer);                   \
        const T want[4] = {11, 12, 13, 14};                                   \
        shmem_wait_until_all_vector(flags, 4, NULL, SHMEM_CMP_EQ, want);      \
        const T one_of[4] = {90, 12, 90, 90};                                 \
        n = shmem_wait_until_any_vector(flags, 4, NULL, SHMEM_CMP_EQ, one_of); \
        EXPECT(n, (size_t)1, "wait_until_any_vector", 0);                     \
        const T two_of[4] = {11, 90, 13, 90};                                 \
        n = shmem_wait_until_some_vector(flags, 4, idx, NULL, SHMEM_CMP_EQ, two_of); \
        MPE_CHECK(n == 2 && idx[0] == 0 && idx[1] == 2,                       \
                  "%s: wait_until_some_vector: %zu", tname, n);               \
        t = shmem_test_all_vector(flags, 4, NULL, SHMEM_CMP_GE, want);        \
        EXPECT(t, 1, "test_all_vector GE", 0);                                \
        const T above[4] = {11, 12, 13, 15};                                  \
        t = shmem_test_all_vector(flags, 4, NULL, SHMEM_CMP_GE, above);       \
        EXPECT(t, 0, "test_all_vector GE above", 0);                          \
        t = shmem_test_all_vector(flags, 4, skip_3, SHMEM_CMP_GE, above);     \
        EXPECT(t, 1, "test_all_vector GE above skipping 3", 0);               \
        const T below_3[4] = {11, 12, 13, 13};                                \
        n = shmem_test_any_vector(flags, 4, NULL, SHMEM_CMP_GT, below_3);     \
        EXPECT(n, (size_t)3, "test_any_vector GT", 0);                        \
        const T less[4] = {12, 13, 13, 15};                                   \
        n = shmem_test_some_vector(flags, 4, idx, NULL, SHMEM_CMP_LT, less);  \
        MPE_CHECK(n == 3 && idx[0] == 0 && idx[1] == 1 && idx[2] == 3,        \
                  "%s: test_some_vector LT: %zu", tname, n);                  \
        shmem_barrier_all();                                                  \
    }
SYNC_TYPES(SYNC_TEST)

#define CALL_RMA(NAME, T) rma_##NAME();
#define CALL_AMO_EXT(NAME, T) amo_ext_##NAME();
#define CALL_AMO_STD(NAME, T) amo_std_##NAME();
#define CALL_AMO_BIT(NAME, T) amo_bit_##NAME();
#define CALL_SYNC(NAME, T) sync_##NAME();

int main(void)
{
    shmem_init();
    me = shmem_my_pe();
    npes = shmem_n_pes();
    peer = (me + 1) % npes;
    left = (me - 1 + npes) % npes;
    arena = shmem_align(64, 4096);
    MPE_CHECK(arena != NULL, "shmem_align failed");

    shmem_ctx_t created;
    int rc = shmem_ctx_create(0, &created);
    MPE_CHECK(rc == 0, "shmem_ctx_create returned %d", rc);
    for (pass = 0; pass < PASSES; pass++) {
        pass_ctx = pass == CREATED_CTX ? created : SHMEM_CTX_DEFAULT;
        road = pass_names[pass];
        RMA_TYPES(CALL_RMA)
        AMO_EXT_TYPES(CALL_AMO_EXT)
        AMO_STD_TYPES(CALL_AMO_STD)
        AMO_BIT_TYPES(CALL_AMO_BIT)
        if (pass == CREATED_CTX) {
            RMA_TYPEDEFS(CALL_RMA)
            AMO_STD_TYPEDEFS(CALL_AMO_EXT)
            AMO_STD_TYPEDEFS(CALL_AMO_STD)
            AMO_BIT_TYPEDEFS(CALL_AMO_BIT)
        }
        signal_ops();
    }
    shmem_ctx_destroy(created);

    road = "team context";
    if (npes >= 2)
        team_context();
    road = "wait/test";
    SYNC_TYPES(CALL_SYNC)

    shmem_barrier_all();
    shmem_free(arena);
    if (me == 0)
        printf("PE %d: generic ctx checks passed\n", me);
    shmem_finalize();
    return 0;
}
