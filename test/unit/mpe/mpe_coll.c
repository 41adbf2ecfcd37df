/* Data collectives on every PE: broadcast from every root (several types and
 * sizes, larger than the collective scratch), collect with a different size
 * per PE, fcollect, alltoall, alltoalls with strides, the *mem forms, the
 * deprecated active-set forms (broadcast32/64, collect32, fcollect64,
 * alltoall64, alltoalls32), and SHMEM_TEAM_INVALID. Guard elements after each
 * dest check that nothing is written beyond it. */
#include <shmem.h>
#include <stdint.h>
#include <string.h>

#include "mpe_check.h"

#define GUARD 0x5a5a5a5aL

static long psync[SHMEM_COLLECT_SYNC_SIZE];

static int me, npes;

static long pattern(int pe, size_t i) { return (long)pe * 1000003L + (long)i; }

static void test_broadcast_long(size_t nelems)
{
    long *src = shmem_malloc(nelems * sizeof(long));
    long *dst = shmem_malloc((nelems + 1) * sizeof(long));
    MPE_CHECK(src && dst, "allocation of %zu longs", nelems);
    for (int root = 0; root < npes; root++) {
        for (size_t i = 0; i < nelems; i++) {
            src[i] = pattern(me, i);
            dst[i] = -1;
        }
        dst[nelems] = GUARD;
        MPE_CHECK(shmem_long_broadcast(SHMEM_TEAM_WORLD, dst, src, nelems, root) == 0,
                  "long_broadcast rc");
        for (size_t i = 0; i < nelems; i++)
            MPE_CHECK(dst[i] == pattern(root, i), "broadcast of %zu longs from %d: [%zu] = %ld",
                      nelems, root, i, dst[i]);
        MPE_CHECK(dst[nelems] == GUARD, "broadcast wrote past dest (%zu elements)", nelems);
    }
    shmem_free(dst);
    shmem_free(src);
}

static void test_broadcast_types(void)
{
    enum { N = 37 };
    char *c_src = shmem_malloc(N), *c_dst = shmem_malloc(N);
    double *d_src = shmem_malloc(N * sizeof(double)), *d_dst = shmem_malloc(N * sizeof(double));
    int16_t *s_src = shmem_malloc(N * sizeof(int16_t)), *s_dst = shmem_malloc(N * sizeof(int16_t));
    MPE_CHECK(c_src && c_dst && d_src && d_dst && s_src && s_dst, "allocation");
    for (int root = 0; root < npes; root++) {
        for (int i = 0; i < N; i++) {
            c_src[i] = (char)('a' + (me + i) % 26);
            d_src[i] = me + i / 4.0;
            s_src[i] = (int16_t)(me * 100 - i);
        }
        memset(c_dst, 0, N);
        memset(d_dst, 0, N * sizeof(double));
        memset(s_dst, 0, N * sizeof(int16_t));
        MPE_CHECK(shmem_broadcast(SHMEM_TEAM_WORLD, c_dst, c_src, N, root) == 0, "char rc");
        MPE_CHECK(shmem_broadcast(SHMEM_TEAM_WORLD, d_dst, d_src, N, root) == 0, "double rc");
        MPE_CHECK(shmem_int16_broadcast(SHMEM_TEAM_WORLD, s_dst, s_src, N, root) == 0, "int16 rc");
        for (int i = 0; i < N; i++) {
            MPE_CHECK(c_dst[i] == (char)('a' + (root + i) % 26), "char [%d] = %d root %d", i,
                      c_dst[i], root);
            MPE_CHECK(d_dst[i] == root + i / 4.0, "double [%d] = %g root %d", i, d_dst[i], root);
            MPE_CHECK(s_dst[i] == (int16_t)(root * 100 - i), "int16 [%d] = %d root %d", i,
                      s_dst[i], root);
        }
    }
    /* broadcastmem counts bytes; in place on the root (dest == source). */
    int root = npes - 1;
    for (int i = 0; i < N; i++)
        c_src[i] = (char)(me == root ? 'A' + i % 26 : '?');
    MPE_CHECK(shmem_broadcastmem(SHMEM_TEAM_WORLD, c_src, c_src, N, root) == 0, "mem rc");
    for (int i = 0; i < N; i++)
        MPE_CHECK(c_src[i] == 'A' + i % 26, "broadcastmem in place [%d] = %d", i, c_src[i]);
    shmem_free(s_dst);
    shmem_free(s_src);
    shmem_free(d_dst);
    shmem_free(d_src);
    shmem_free(c_dst);
    shmem_free(c_src);
}

/* PE p contributes (p * 3) % 5 elements, so some contribute none. */
static size_t collect_count(int pe) { return (size_t)(pe * 3) % 5; }

static void test_collect(void)
{
    size_t total = 0;
    for (int p = 0; p < npes; p++)
        total += collect_count(p);
    size_t mine = collect_count(me);
    int *src = shmem_malloc(5 * sizeof(int));
    int *dst = shmem_malloc((total + 1) * sizeof(int));
    MPE_CHECK(src && dst, "allocation");
    for (int round = 0; round < 3; round++) {
        for (size_t i = 0; i < mine; i++)
            src[i] = me * 100 + (int)i + round;
        for (size_t i = 0; i <= total; i++)
            dst[i] = -7;
        if (round < 2)
            MPE_CHECK(shmem_int_collect(SHMEM_TEAM_WORLD, dst, src, mine) == 0, "collect rc");
        else
            MPE_CHECK(shmem_collectmem(SHMEM_TEAM_WORLD, dst, src, mine * sizeof(int)) == 0,
                      "collectmem rc");
        size_t at = 0;
        for (int p = 0; p < npes; p++)
            for (size_t i = 0; i < collect_count(p); i++, at++)
                MPE_CHECK(dst[at] == p * 100 + (int)i + round,
                          "collect round %d: [%zu] (PE %d element %zu) = %d", round, at, p, i,
                          dst[at]);
        MPE_CHECK(dst[total] == -7, "collect wrote past %zu elements", total);
    }

    shmem_free(dst);
    shmem_free(src);
}

static void test_collect32_odd(void)
{
    int n_odd = npes / 2;
    size_t total = 0;
    for (int k = 0; k < n_odd; k++)
        total += (size_t)k + 1;
    int32_t *src = shmem_malloc(8 * sizeof(int32_t));
    int32_t *dst = shmem_malloc((total + 1) * sizeof(int32_t));
    MPE_CHECK(src && dst, "allocation");
    if (me % 2 == 1) {
        int k = me / 2;
        for (int i = 0; i <= k; i++)
            src[i] = me * 10 + i;
        for (size_t i = 0; i <= total; i++)
            dst[i] = -3;
        shmem_collect32(dst, src, (size_t)k + 1, 1, 1, n_odd, psync);
        size_t at = 0;
        for (int j = 0; j < n_odd; j++)
            for (int i = 0; i <= j; i++, at++)
                MPE_CHECK(dst[at] == (2 * j + 1) * 10 + i, "collect32 [%zu] = %d", at, dst[at]);
        MPE_CHECK(dst[total] == -3, "collect32 wrote past dest");
    }
    shmem_barrier_all();
    shmem_free(dst);
    shmem_free(src);
}

static void test_fcollect(size_t nelems)
{
    long *src = shmem_malloc(nelems * sizeof(long));
    long *dst = shmem_malloc((nelems * (size_t)npes + 1) * sizeof(long));
    MPE_CHECK(src && dst, "allocation");
    for (size_t i = 0; i < nelems; i++)
        src[i] = pattern(me, i);
    dst[nelems * (size_t)npes] = GUARD;
    MPE_CHECK(shmem_fcollect(SHMEM_TEAM_WORLD, dst, src, nelems) == 0, "fcollect rc");
    for (int p = 0; p < npes; p++)
        for (size_t i = 0; i < nelems; i++)
            MPE_CHECK(dst[(size_t)p * nelems + i] == pattern(p, i), "fcollect %zu: PE %d [%zu] = %ld",
                      nelems, p, i, dst[(size_t)p * nelems + i]);
    MPE_CHECK(dst[nelems * (size_t)npes] == GUARD, "fcollect wrote past dest");

    /* fcollectmem and the deprecated fcollect64 (world as an active set). */
    memset(dst, 0, nelems * (size_t)npes * sizeof(long));
    MPE_CHECK(shmem_fcollectmem(SHMEM_TEAM_WORLD, dst, src, nelems * sizeof(long)) == 0, "rc");
    for (int p = 0; p < npes; p++)
        MPE_CHECK(dst[(size_t)p * nelems] == pattern(p, 0), "fcollectmem PE %d", p);
    memset(dst, 0, nelems * (size_t)npes * sizeof(long));
    shmem_barrier_all();
    shmem_fcollect64(dst, src, nelems, 0, 0, npes, psync);
    for (int p = 0; p < npes; p++)
        MPE_CHECK(dst[(size_t)p * nelems + nelems - 1] == pattern(p, nelems - 1),
                  "fcollect64 PE %d", p);
    shmem_free(dst);
    shmem_free(src);
}

static long a2a_value(int from, int to, size_t k) { return from * 10000L + to * 100L + (long)k; }

static void test_alltoall(size_t nelems)
{
    size_t n = nelems * (size_t)npes;
    long *src = shmem_malloc(n * sizeof(long));
    long *dst = shmem_malloc((n + 1) * sizeof(long));
    MPE_CHECK(src && dst, "allocation");
    for (int to = 0; to < npes; to++)
        for (size_t k = 0; k < nelems; k++)
            src[(size_t)to * nelems + k] = a2a_value(me, to, k);
    dst[n] = GUARD;
    MPE_CHECK(shmem_long_alltoall(SHMEM_TEAM_WORLD, dst, src, nelems) == 0, "alltoall rc");
    for (int from = 0; from < npes; from++)
        for (size_t k = 0; k < nelems; k++)
            MPE_CHECK(dst[(size_t)from * nelems + k] == a2a_value(from, me, k),
                      "alltoall %zu: block from %d [%zu] = %ld", nelems, from, k,
                      dst[(size_t)from * nelems + k]);
    MPE_CHECK(dst[n] == GUARD, "alltoall wrote past dest");

    memset(dst, 0, n * sizeof(long));
    MPE_CHECK(shmem_alltoallmem(SHMEM_TEAM_WORLD, dst, src, nelems * sizeof(long)) == 0, "rc");
    for (int from = 0; from < npes; from++)
        MPE_CHECK(dst[(size_t)from * nelems] == a2a_value(from, me, 0), "alltoallmem %d", from);
    shmem_free(dst);
    shmem_free(src);
}

/* Strided: element k of the block for PE j sits at source[(j*n + k) * sst];
 * it lands at dest[(i*n + k) * dst] on PE j. The gaps must stay untouched. */
static void test_alltoalls(ptrdiff_t dst_stride, ptrdiff_t src_stride, size_t nelems)
{
    size_t n = nelems * (size_t)npes;
    size_t src_len = n * (size_t)src_stride, dst_len = n * (size_t)dst_stride;
    int *src = shmem_malloc(src_len * sizeof(int));
    int *dst = shmem_malloc((dst_len + 1) * sizeof(int));
    MPE_CHECK(src && dst, "allocation");
    for (size_t i = 0; i < src_len; i++)
        src[i] = -1;
    for (int to = 0; to < npes; to++)
        for (size_t k = 0; k < nelems; k++)
            src[((size_t)to * nelems + k) * (size_t)src_stride] = (int)a2a_value(me, to, k);
    for (size_t i = 0; i <= dst_len; i++)
        dst[i] = -9;
    MPE_CHECK(shmem_int_alltoalls(SHMEM_TEAM_WORLD, dst, src, dst_stride, src_stride, nelems) == 0,
              "alltoalls rc");
    for (size_t i = 0; i <= dst_len; i++) {
        size_t elem = i / (size_t)dst_stride;
        int want = -9;
        if (i % (size_t)dst_stride == 0 && elem < n)
            want = (int)a2a_value((int)(elem / nelems), me, elem % nelems);
        MPE_CHECK(dst[i] == want, "alltoalls dst %td sst %td: [%zu] = %d, want %d", dst_stride,
                  src_stride, i, dst[i], want);
    }
    shmem_free(dst);
    shmem_free(src);
}

/* Deprecated forms on the even PEs (stride 2) while the odd PEs wait. */
static void test_active_set_evens(void)
{
    int n_even = (npes + 1) / 2;
    int64_t *src = shmem_malloc(4 * 8 * sizeof(int64_t));
    int64_t *dst = shmem_malloc(4 * 8 * sizeof(int64_t));
    int32_t *s32 = shmem_malloc(2 * 8 * 2 * sizeof(int32_t));
    int32_t *d32 = shmem_malloc(2 * 8 * 3 * sizeof(int32_t));
    MPE_CHECK(src && dst && s32 && d32, "allocation");
    if (me % 2 == 0) {
        int index = me / 2;
        for (int root = 0; root < n_even; root++) {
            for (int i = 0; i < 4; i++) {
                src[i] = me * 1000 + i;
                dst[i] = -1;
            }
            shmem_broadcast64(dst, src, 4, root, 0, 1, n_even, psync);
            for (int i = 0; i < 4; i++) {
                /* 1.4 semantics: the root's dest is not written. */
                int64_t want = index == root ? -1 : root * 2 * 1000 + i;
                MPE_CHECK(dst[i] == want, "broadcast64 root %d [%d] = %lld", root, i,
                          (long long)dst[i]);
            }
            int32_t *b32 = (int32_t *)dst;
            for (int i = 0; i < 3; i++) {
                s32[i] = me * 7 + i;
                b32[i] = -1;
            }
            shmem_broadcast32(b32, s32, 3, root, 0, 1, n_even, psync);
            for (int i = 0; i < 3; i++)
                MPE_CHECK(b32[i] == (index == root ? -1 : root * 2 * 7 + i),
                          "broadcast32 root %d [%d] = %d", root, i, b32[i]);
        }
        for (int to = 0; to < n_even; to++)
            src[to] = me * 100 + to;
        shmem_alltoall64(dst, src, 1, 0, 1, n_even, psync);
        for (int from = 0; from < n_even; from++)
            MPE_CHECK(dst[from] == from * 2 * 100 + index, "alltoall64 from %d = %lld", from,
                      (long long)dst[from]);
        /* alltoalls32: sst 2, dst 3, one element per peer. */
        for (int to = 0; to < n_even; to++)
            s32[to * 2] = me * 100 + to;
        for (int i = 0; i < n_even * 3; i++)
            d32[i] = -5;
        shmem_alltoalls32(d32, s32, 3, 2, 1, 0, 1, n_even, psync);
        for (int i = 0; i < n_even * 3; i++)
            MPE_CHECK(d32[i] == (i % 3 ? -5 : (i / 3) * 2 * 100 + index), "alltoalls32 [%d] = %d",
                      i, d32[i]);
    }
    shmem_barrier_all();
    shmem_free(d32);
    shmem_free(s32);
    shmem_free(dst);
    shmem_free(src);
}

int main(void)
{
    for (int i = 0; i < SHMEM_COLLECT_SYNC_SIZE; i++)
        psync[i] = SHMEM_SYNC_VALUE;
    shmem_init();
    me = shmem_my_pe();
    npes = shmem_n_pes();

    test_broadcast_long(1);
    test_broadcast_long(1000);
    test_broadcast_long(40000); /* 320 KB: larger than the 64 KiB scratch */
    test_broadcast_types();
    test_collect();
    test_collect32_odd();
    test_fcollect(5);
    test_fcollect(20000);
    test_alltoall(1);
    test_alltoall(3000);
    test_alltoalls(1, 1, 4);
    test_alltoalls(2, 3, 5);
    test_alltoalls(3, 1, 2);
    test_active_set_evens();

    long x = 0;
    MPE_CHECK(shmem_long_broadcast(SHMEM_TEAM_INVALID, &x, &x, 1, 0) != 0,
              "broadcast on SHMEM_TEAM_INVALID returned 0");
    for (int i = 0; i < SHMEM_COLLECT_SYNC_SIZE; i++)
        MPE_CHECK(psync[i] == SHMEM_SYNC_VALUE, "pSync[%d] = %ld on return", i, psync[i]);

    shmem_finalize();
    return 0;
}
