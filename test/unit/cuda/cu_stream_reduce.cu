/* The stream-ordered reductions and reduce-scatters of every op on the
 * cuda backend (shmemx_<T>_<op>_reduce_on_stream,
 * shmemx_<T>_<op>_reducescatter_on_stream): sum, prod, min, max, and, or,
 * xor on signed and unsigned integers of 8 to 64 bits, min, max, sum and
 * prod on float and double, sum and prod on complex numbers, at 1, 1000
 * and half a million elements (4 MiB of 8-byte ones; 16- and 32-bit
 * integers at the first two), in place and not, on the world and on the
 * world reversed (where a PE's member number is not its PE number). Every PE checks every element against the members'
 * values combined in member order on the host, bit for bit (so floating
 * results must agree on every PE). The values are chosen so that a wrong
 * op or a wrong signedness fails: negative numbers for signed min and max,
 * the high bit set for unsigned ones, odd factors for products. More than
 * 8 PEs (n9-one-gpu) chain kernels, 8 sources each. Exits 77 without a
 * CUDA device; 1 after one line per failed check. -v prints each group;
 * -q leaves the largest size out. */
#include <shmem.h>
#include <shmemx.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <type_traits>

#define CHECK(call)                                                                        \
    do {                                                                                   \
        cudaError_t err_ = (call);                                                         \
        if (err_ != cudaSuccess) {                                                         \
            fprintf(stderr, "PE %d: %s:%d: %s: %s\n", me, __FILE__, __LINE__, #call,       \
                    cudaGetErrorString(err_));                                             \
            exit(1);                                                                       \
        }                                                                                  \
    } while (0)

enum op { SUM, PROD, MIN, MAX, AND, OR, XOR };
static const char *const op_names[] = {"sum", "prod", "min", "max", "and", "or", "xor"};

static int me, npes, verbose, quick;
static cudaStream_t st;
static void *sbuf, *dbuf, *hbuf; /* symmetric source and dest, host copy */
static int bad_checks, checks;

/* The teams: members[m] is the world PE of member m. */
struct team {
    const char *name;
    shmem_team_t handle;
    int size, my;
    int *members;
};

static uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return x;
}

/* Element i of world PE pe's source for op (every PE computes any PE's). */
template <typename T> static T value(int pe, size_t i, enum op o)
{
    uint64_t h = mix(((uint64_t)pe << 40) ^ (i * 0x9e3779b97f4a7c15ull) ^ ((uint64_t)o << 56));
    if constexpr (std::is_floating_point<T>::value) {
        double frac = (double)(h >> 11) / (double)(1ull << 53); /* [0, 1) */
        double sign = (h & 1) ? -1.0 : 1.0;
        switch (o) {
        case PROD:
            return (T)(sign * (0.5 + frac)); /* magnitudes stay near 1 */
        case SUM:
            /* fractions whose sums round differently in another order */
            return (T)(sign * (frac * 1000.0 + (pe == 1 ? 1e6 : 0.0)));
        default:
            return (T)(sign * frac * 1e4);
        }
    } else {
        T v = (T)h; /* the full range: negatives for signed types, the high bit for unsigned */
        switch (o) {
        case PROD:
            return (T)(v | 1); /* odd: the product keeps its low bits */
        case AND:
            return (T)(v | (T)mix(h)); /* mostly ones: an AND of several keeps some */
        case OR:
            return (T)(v & (T)mix(h)); /* mostly zeros */
        default:
            return v;
        }
    }
}

template <typename T> static T combine(T a, T b, enum op o)
{
    if constexpr (std::is_integral<T>::value) {
        /* wrapping at T's width, without signed overflow on the host */
        if (o == SUM)
            return (T)((uint64_t)a + (uint64_t)b);
        if (o == PROD)
            return (T)((uint64_t)a * (uint64_t)b);
    }
    switch (o) {
    case SUM:
        return (T)(a + b);
    case PROD:
        return (T)(a * b);
    case MIN:
        return a < b ? a : b;
    case MAX:
        return a > b ? a : b;
    default:
        break;
    }
    if constexpr (std::is_integral<T>::value) {
        switch (o) {
        case AND:
            return (T)(a & b);
        case OR:
            return (T)(a | b);
        case XOR:
            return (T)(a ^ b);
        default:
            break;
        }
    }
    return a;
}

/* The members' element `at` combined in member order: what a reduction's
 * dest[at] holds, or a reduce-scatter's dest[j] on member my (at = my *
 * nreduce + j). */
template <typename T> static T expected(const struct team &t, size_t at, enum op o)
{
    T want = value<T>(t.members[0], at, o);
    for (int m = 1; m < t.size; m++)
        want = combine<T>(want, value<T>(t.members[m], at, o), o);
    return want;
}

template <typename T> static void print_value(char *buf, size_t len, T v)
{
    if (std::is_floating_point<T>::value)
        snprintf(buf, len, "%.17g", (double)v);
    else if (std::is_signed<T>::value)
        snprintf(buf, len, "%lld", (long long)v);
    else
        snprintf(buf, len, "%llu", (unsigned long long)v);
}

template <typename T> using reduce_fn = int (*)(shmem_team_t, T *, const T *, size_t, CUstream);

/* Where a reduce-scatter's dest is. */
enum place { APART, IN_PLACE, IN_OWN_BLOCK };
static const char *const place_names[] = {"", " in place (dest == source)",
                                          " in place (dest == source + me * nreduce)"};

/* One reduction (scatter false) or reduce-scatter of n elements on team t,
 * every element checked; false after one line on a mismatch. */
template <typename T>
static bool check_one(const char *name, reduce_fn<T> fn, bool scatter, const struct team &t,
                      enum op o, size_t n, enum place where)
{
    T *host = (T *)hbuf, *src = (T *)sbuf;
    size_t per = scatter ? n * t.size : n; /* source elements */
    T *dst = where == APART       ? (T *)dbuf
             : where == IN_PLACE ? src
                                 : src + (size_t)t.my * n;
    for (size_t i = 0; i < per; i++)
        host[i] = value<T>(me, i, o);
    CHECK(cudaMemcpyAsync(src, host, per * sizeof(T), cudaMemcpyHostToDevice, st));
    memset(host, 0xA5, n * sizeof(T)); /* no stale right answers */
    checks++;
    if (fn(t.handle, dst, src, n, (CUstream)st) != 0) {
        fprintf(stderr, "PE %d: %s on %s returned nonzero\n", me, name, t.name);
        bad_checks++;
        return false;
    }
    CHECK(cudaMemcpyAsync(host, dst, n * sizeof(T), cudaMemcpyDeviceToHost, st));
    CHECK(cudaStreamSynchronize(st));
    for (size_t j = 0; j < n; j++) {
        T want = expected<T>(t, scatter ? (size_t)t.my * n + j : j, o);
        if (memcmp(&host[j], &want, sizeof(T)) != 0) {
            char got_s[32], want_s[32];
            print_value(got_s, sizeof(got_s), host[j]);
            print_value(want_s, sizeof(want_s), want);
            fprintf(stderr, "PE %d (member %d of %d, team %s): %s%s, %zu elements: element %zu "
                            "is %s, want %s\n",
                    me, t.my, t.size, t.name, name, place_names[where], n, j, got_s, want_s);
            bad_checks++;
            return false;
        }
    }
    return true;
}

/* Complex numbers as pairs of T (real, imaginary). Products use small
 * integers, whose products are exact: the check does not depend on how
 * the host rounds. */
template <typename T> static void cvalue(int pe, size_t i, enum op o, T *re, T *im)
{
    if (o == SUM) {
        *re = value<T>(pe, 2 * i, SUM);
        *im = value<T>(pe, 2 * i + 1, SUM);
        return;
    }
    uint64_t h = mix(((uint64_t)pe << 40) ^ (i * 0x9e3779b97f4a7c15ull) ^ 77);
    *re = (T)((int)(h % 7) - 3);
    *im = (T)((int)((h >> 8) % 7) - 3);
    if (*re == 0 && *im == 0)
        *re = 1;
}

template <typename T, typename C>
static bool check_complex(const char *name, reduce_fn<C> fn, bool scatter, const struct team &t,
                          enum op o, size_t n, enum place where)
{
    T *host = (T *)hbuf, *src = (T *)sbuf;
    size_t per = scatter ? n * t.size : n;
    T *dst = where == APART       ? (T *)dbuf
             : where == IN_PLACE ? src
                                 : src + 2 * (size_t)t.my * n;
    for (size_t i = 0; i < per; i++)
        cvalue<T>(me, i, o, &host[2 * i], &host[2 * i + 1]);
    CHECK(cudaMemcpyAsync(src, host, 2 * per * sizeof(T), cudaMemcpyHostToDevice, st));
    memset(host, 0xA5, 2 * n * sizeof(T));
    checks++;
    if (fn(t.handle, (C *)dst, (const C *)src, n, (CUstream)st) != 0) {
        fprintf(stderr, "PE %d: %s on %s returned nonzero\n", me, name, t.name);
        bad_checks++;
        return false;
    }
    CHECK(cudaMemcpyAsync(host, dst, 2 * n * sizeof(T), cudaMemcpyDeviceToHost, st));
    CHECK(cudaStreamSynchronize(st));
    for (size_t j = 0; j < n; j++) {
        size_t at = scatter ? (size_t)t.my * n + j : j;
        T re, im;
        cvalue<T>(t.members[0], at, o, &re, &im);
        for (int m = 1; m < t.size; m++) {
            T c, d;
            cvalue<T>(t.members[m], at, o, &c, &d);
            if (o == SUM) {
                re = re + c;
                im = im + d;
            } else {
                T r = re * c - im * d;
                im = re * d + im * c;
                re = r;
            }
        }
        if (memcmp(&host[2 * j], &re, sizeof(T)) != 0 ||
            memcmp(&host[2 * j + 1], &im, sizeof(T)) != 0) {
            fprintf(stderr, "PE %d (member %d of %d, team %s): %s%s, %zu elements: element %zu "
                            "is %.17g%+.17gi, want %.17g%+.17gi\n",
                    me, t.my, t.size, t.name, name, place_names[where], n, j,
                    (double)host[2 * j], (double)host[2 * j + 1], (double)re, (double)im);
            bad_checks++;
            return false;
        }
    }
    return true;
}

/* Sizes: one element, 1000, and half a million (4 MiB of 8-byte ones). */
#define N_BIG (((size_t)1 << 19) + 3)
static const size_t sizes[] = {1, 1000, N_BIG};

/* Every size, the reduction and the reduce-scatter, on `t`; in place at
 * 1000 elements. `big` false leaves the largest size out (-q). */
template <typename T>
static void check_op(const char *tname, enum op o, reduce_fn<T> red, reduce_fn<T> scat,
                     const struct team &t, bool big)
{
    char rname[96], sname[96];
    snprintf(rname, sizeof(rname), "shmemx_%s_%s_reduce_on_stream", tname, op_names[o]);
    snprintf(sname, sizeof(sname), "shmemx_%s_%s_reducescatter_on_stream", tname, op_names[o]);
    for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
        if (sizes[s] == N_BIG && !big)
            continue;
        check_one<T>(rname, red, false, t, o, sizes[s], APART);
        check_one<T>(sname, scat, true, t, o, sizes[s], APART);
    }
    check_one<T>(rname, red, false, t, o, 1000, IN_PLACE);
    check_one<T>(sname, scat, true, t, o, 1000, IN_PLACE);
    check_one<T>(sname, scat, true, t, o, 1000, IN_OWN_BLOCK);
}

template <typename T, typename C>
static void check_complex_op(const char *tname, enum op o, reduce_fn<C> red, reduce_fn<C> scat,
                             const struct team &t, bool big)
{
    char rname[96], sname[96];
    snprintf(rname, sizeof(rname), "shmemx_%s_%s_reduce_on_stream", tname, op_names[o]);
    snprintf(sname, sizeof(sname), "shmemx_%s_%s_reducescatter_on_stream", tname, op_names[o]);
    for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
        if (sizes[s] == N_BIG && !big)
            continue;
        check_complex<T, C>(rname, red, false, t, o, sizes[s], APART);
        check_complex<T, C>(sname, scat, true, t, o, sizes[s], APART);
    }
    check_complex<T, C>(rname, red, false, t, o, 1000, IN_PLACE);
    check_complex<T, C>(sname, scat, true, t, o, 1000, IN_OWN_BLOCK);
}

/* One op of a type: its reduction and its reduce-scatter. */
#define OP(T, tname, o, O, big)                                                             \
    check_op<T>(#tname, O, shmemx_##tname##_##o##_reduce_on_stream,                         \
                shmemx_##tname##_##o##_reducescatter_on_stream, t, big)
#define FLOAT_OPS(T, tname, big)                                                            \
    do {                                                                                    \
        OP(T, tname, sum, SUM, big);                                                        \
        OP(T, tname, prod, PROD, big);                                                      \
        OP(T, tname, min, MIN, big);                                                        \
        OP(T, tname, max, MAX, big);                                                        \
    } while (0)
#define INT_OPS(T, tname, big)                                                              \
    do {                                                                                    \
        FLOAT_OPS(T, tname, big);                                                           \
        OP(T, tname, and, AND, big);                                                        \
        OP(T, tname, or, OR, big);                                                          \
        OP(T, tname, xor, XOR, big);                                                        \
    } while (0)
#define COMPLEX_OP(T, C, tname, o, O, big)                                                  \
    check_complex_op<T, C>(#tname, O, shmemx_##tname##_##o##_reduce_on_stream,              \
                           shmemx_##tname##_##o##_reducescatter_on_stream, t, big)

static void group_done(const char *what, const struct team &t, int before)
{
    if (verbose)
        printf("PE %d: %s on %s: %s\n", me, what, t.name, bad_checks > before ? "FAILED" : "ok");
}

/* Every op on every type of the list, on team t. On the reversed team,
 * one type per op and class (the world has done the rest). */
static void check_team(const struct team &t, bool all)
{
    bool big = !quick;
    int before = bad_checks;
    /* 8-bit: the unsigned types also under their OpenSHMEM names. */
    INT_OPS(int8_t, int8, big);
    INT_OPS(uint8_t, uint8, big);
    group_done("8-bit integers", t, before);
    if (all) {
        before = bad_checks;
        INT_OPS(int16_t, int16, false);
        INT_OPS(uint16_t, uint16, false);
        INT_OPS(int32_t, int32, false);
        INT_OPS(uint32_t, uint32, false);
        group_done("16- and 32-bit integers", t, before);
    }
    before = bad_checks;
    INT_OPS(int64_t, int64, big);
    INT_OPS(uint64_t, uint64, big);
    group_done("64-bit integers", t, before);
    before = bad_checks;
    FLOAT_OPS(float, float, big);
    FLOAT_OPS(double, double, big);
    group_done("float and double", t, before);
    if (all) {
        /* Other names of the same kinds: char (signed or not, as the
         * platform has it), short, long, size_t, ptrdiff_t. */
        before = bad_checks;
        OP(char, char, min, MIN, false);
        OP(signed char, schar, max, MAX, false);
        OP(short, short, max, MAX, false);
        OP(unsigned short, ushort, min, MIN, false);
        OP(long, long, prod, PROD, false);
        OP(long long, longlong, min, MIN, false);
        OP(unsigned long long, ulonglong, max, MAX, false);
        OP(size_t, size, max, MAX, false);
        OP(ptrdiff_t, ptrdiff, min, MIN, false);
        OP(unsigned int, uint, xor, XOR, false);
        OP(unsigned long, ulong, and, AND, false);
        OP(int, int, sum, SUM, false);
        group_done("other integer names", t, before);
    }
    before = bad_checks;
    COMPLEX_OP(float, float _Complex, complexf, sum, SUM, big);
    COMPLEX_OP(float, float _Complex, complexf, prod, PROD, big);
    COMPLEX_OP(double, double _Complex, complexd, sum, SUM, big);
    COMPLEX_OP(double, double _Complex, complexd, prod, PROD, big);
    group_done("complexf and complexd", t, before);
}

int main(int argc, char **argv)
{
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        printf("no CUDA device: skipped\n");
        return 77;
    }
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-v") == 0) {
            verbose = 1;
        } else if (strcmp(argv[i], "-q") == 0) {
            quick = 1;
        } else {
            fprintf(stderr, "usage: %s [-v] [-q]\n", argv[0]);
            return 2;
        }
    }
    shmem_init();
    me = shmem_my_pe();
    npes = shmem_n_pes();
    CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    /* The largest source: a reduce-scatter's, N_BIG complex doubles per PE. */
    size_t most = N_BIG * 16 * (size_t)npes;
    sbuf = shmem_malloc(most);
    dbuf = shmem_malloc(N_BIG * 16);
    hbuf = malloc(most);
    if (sbuf == NULL || dbuf == NULL || hbuf == NULL) {
        fprintf(stderr, "PE %d: no room for %zu bytes of sources (SHMEM_SYMMETRIC_SIZE)\n", me,
                most);
        return 1;
    }

    struct team world = {"world", SHMEM_TEAM_WORLD, npes, me, (int *)malloc(sizeof(int) * npes)};
    for (int pe = 0; pe < npes; pe++)
        world.members[pe] = pe;
    check_team(world, true);

    /* The world reversed: member m is PE npes - 1 - m, so a reduce-scatter's
     * block is the member's, not the PE's. */
    struct team rev = {"reversed", SHMEM_TEAM_INVALID, npes, npes - 1 - me,
                       (int *)malloc(sizeof(int) * npes)};
    for (int m = 0; m < npes; m++)
        rev.members[m] = npes - 1 - m;
    if (shmem_team_split_strided(SHMEM_TEAM_WORLD, npes - 1, -1, npes, NULL, 0, &rev.handle) !=
        0) {
        fprintf(stderr, "PE %d: the reversed split failed\n", me);
        return 1;
    }
    quick = 1; /* the world had the largest size */
    check_team(rev, false);
    CHECK(cudaStreamSynchronize(st));
    shmem_team_destroy(rev.handle);

    if (bad_checks) {
        fprintf(stderr, "PE %d: %d of %d stream reductions wrong\n", me, bad_checks, checks);
        return 1;
    }
    shmem_barrier_all();
    if (me == 0)
        printf("all %d stream reductions and reduce-scatters right on %d PEs\n", checks, npes);
    free(world.members);
    free(rev.members);
    free(hbuf);
    shmem_free(dbuf);
    shmem_free(sbuf);
    CHECK(cudaStreamDestroy(st));
    shmem_finalize();
    return 0;
}
