/* The host API on a symmetric heap that the CPU must not touch (the cuda
 * backend's device memory, or the cpu heap posing as device memory with
 * USHMEM_CPU_DEVICE_HEAP=1): this program never loads or stores heap memory
 * itself; every byte goes in with shmem_putmem and comes back with
 * shmem_getmem through private malloc buffers.
 *
 * Checked on every PE: puts of 1 B to 4 MiB into every PE (self included),
 * blocking and non-blocking, then the data read back locally and from every
 * peer; shmem_calloc's zeros; broadcast, fcollect, alltoall and a sum
 * reduction on the heap; host atomics of every kind on heap words, waits
 * and tests on them, put-with-signal with its wait and fetch, and a lock
 * in the heap (on a device heap the device's atomic kernel runs the
 * atomics, and waits read through the copy engine); shmem_ptr (NULL for a
 * device heap, non-NULL for mapped peers of a host heap); the route of each
 * class to each PE.
 *
 * Usage: mpe_device_heap [-v] [--heap=device|host] [--same-device | --devices=N] [--landed]
 *   --heap          what the heap is expected to be (default device)
 *   --same-device   every PE runs on one device: synchronisation with the
 *                   other PEs must take the host-sync road
 *   --devices=N     the PEs (one node) share N devices, PE p on device p % N,
 *                   as the cuda backend places them: host-sync between PEs
 *                   of one device, direct between the others
 *   --landed        heaps are not mapped (USHMEM_IPC=0) and peers' operations
 *                   land through messages (USHMEM_FABRIC_STAGING=1): every
 *                   class to a peer is staged, and this PE's own atomic
 *                   words are reached over the fabric too (proxy/ofi)
 *   -v              print the routes, and a copy-engine timing from PE 0 */
#include <shmemx.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mpe_check.h"

static int me, npes, verbose, same_device;
static int ndevices; /* 0: one device per PE */
static int device_heap = 1;
static int landed;

static const size_t sizes[] = {1, 8, 100, 4096, 65536 + 17, 1 << 20, 4 << 20};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))
#define MAX_SIZE ((size_t)4 << 20)

/* A byte that depends on who wrote it, for whom, where and in which round,
 * so that data landing on the wrong PE, slot or offset is caught. */
static uint8_t pattern(int src, int dst, size_t i, size_t round)
{
    uint64_t x = (uint64_t)i * 0x9e3779b97f4a7c15ULL ^ (uint64_t)src << 40 ^ (uint64_t)dst << 48 ^
                 round * 0xd1b54a32d192ed03ULL;
    x ^= x >> 29;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 32;
    return (uint8_t)x;
}

static void fill(uint8_t *buf, size_t n, int src, int dst, size_t round)
{
    for (size_t i = 0; i < n; i++)
        buf[i] = pattern(src, dst, i, round);
}

static void expect(const uint8_t *buf, size_t n, int src, int dst, size_t round, const char *what)
{
    for (size_t i = 0; i < n; i++)
        MPE_CHECK(buf[i] == pattern(src, dst, i, round),
                  "%s of %zu bytes, written by PE %d for PE %d: byte %zu is 0x%02x, want 0x%02x",
                  what, n, src, dst, i, buf[i], pattern(src, dst, i, round));
}

static void *xmalloc(size_t n)
{
    void *p = malloc(n);
    MPE_CHECK(p != NULL, "malloc of %zu bytes", n);
    return p;
}

/* Every PE puts its slot into every PE; each PE then reads all slots of its
 * own heap and its slot back from every peer. */
static void test_rma(size_t size, size_t round, int nbi)
{
    uint8_t *sym = shmem_malloc((size_t)npes * size);
    MPE_CHECK(sym != NULL, "shmem_malloc of %d x %zu bytes", npes, size);
    /* Non-blocking puts may read their source until shmem_quiet. */
    uint8_t *out = xmalloc((size_t)npes * size);
    uint8_t *back = xmalloc((size_t)npes * size);

    for (int step = 0; step < npes; step++) {
        int pe = (me + step) % npes;
        uint8_t *src = out + (size_t)pe * size;
        fill(src, size, me, pe, round);
        if (nbi)
            shmem_putmem_nbi(sym + (size_t)me * size, src, size, pe);
        else
            shmem_putmem(sym + (size_t)me * size, src, size, pe);
    }
    if (nbi)
        shmem_quiet();
    shmem_barrier_all();

    const char *what = nbi ? "put_nbi" : "put";
    memset(back, 0, (size_t)npes * size);
    shmem_getmem(back, sym, (size_t)npes * size, me);
    for (int s = 0; s < npes; s++)
        expect(back + (size_t)s * size, size, s, me, round, what);
    for (int step = 0; step < npes; step++) {
        int pe = (me + npes - step) % npes;
        memset(back, 0, size);
        shmem_getmem(back, sym + (size_t)me * size, size, pe);
        expect(back, size, me, pe, round, "get of a put");
    }
    shmem_barrier_all();
    free(back);
    free(out);
    shmem_free(sym);
}

/* Host atomics, waits, signals and a lock on heap words. */
static void test_atomics_and_waits(void)
{
    enum { ROUNDS = 5, LOCK_ROUNDS = 10 };
    long *ctr = shmem_calloc(3, sizeof(long)); /* fetch_add, unused, cswap chain */
    uint64_t *bitw = shmem_calloc(1, sizeof(uint64_t));
    int *ictr = shmem_calloc(1, sizeof(int));
    double *dword = shmem_calloc(1, sizeof(double));
    uint64_t *sig = shmem_calloc(1, sizeof(uint64_t));
    long *flag = shmem_calloc(1, sizeof(long));
    long *data = shmem_calloc(2, sizeof(long));
    long *lock = shmem_calloc(1, sizeof(long));
    long *inside = shmem_calloc(1, sizeof(long));
    MPE_CHECK(ctr && bitw && ictr && dword && sig && flag && data && lock && inside, "atomic words");
    int next = (me + 1) % npes, prev = (me + npes - 1) % npes;
    shmem_barrier_all();

    for (int r = 0; r < ROUNDS; r++) {
        for (int step = 0; step < npes; step++) {
            int pe = (me + step) % npes;
            long old = shmem_long_atomic_fetch_add(&ctr[0], 1, pe);
            MPE_CHECK(old >= 0 && old < (long)npes * ROUNDS,
                      "fetch_add on PE %d's counter fetched %ld (of %d adds)", pe, old,
                      npes * ROUNDS);
            shmem_int_atomic_add(ictr, me + 1, pe);
        }
    }
    for (int pe = 0; pe < npes; pe++) {
        if (me < 64)
            shmem_uint64_atomic_or(bitw, UINT64_C(1) << me, pe);
        /* One successful compare-and-swap per PE, in whatever order. */
        for (long seen = 0;;) {
            long old = shmem_long_atomic_compare_swap(&ctr[2], seen, seen + 1, pe);
            if (old == seen)
                break;
            MPE_CHECK(old > seen && old < npes, "cswap on PE %d saw %ld after %ld", pe, old, seen);
            seen = old;
        }
    }
    double dold = shmem_double_atomic_swap(dword, me + 0.5, next);
    MPE_CHECK(dold == 0.0 || dold == me + 0.5, "double swap fetched %g", dold);
    shmem_barrier_all();

    long got = shmem_long_atomic_fetch(&ctr[0], me);
    MPE_CHECK(got == (long)npes * ROUNDS, "fetch_add counter %ld, want %ld", got,
              (long)npes * ROUNDS);
    int igot = shmem_int_atomic_fetch(ictr, me);
    MPE_CHECK(igot == ROUNDS * npes * (npes + 1) / 2, "int add counter %d, want %d", igot,
              ROUNDS * npes * (npes + 1) / 2);
    uint64_t bits = shmem_uint64_atomic_fetch(bitw, me);
    uint64_t want_bits = npes >= 64 ? ~UINT64_C(0) : (UINT64_C(1) << npes) - 1;
    MPE_CHECK(bits == want_bits, "or-bits 0x%llx, want 0x%llx", (unsigned long long)bits,
              (unsigned long long)want_bits);
    long chain;
    shmem_getmem(&chain, &ctr[2], sizeof(chain), me);
    MPE_CHECK(chain == npes, "cswap chain %ld, want %d", chain, npes);
    double dgot = shmem_double_atomic_fetch(dword, me);
    MPE_CHECK(dgot == prev + 0.5, "double swapped in %g, want %g", dgot, prev + 0.5);
    MPE_CHECK(shmem_uint64_atomic_fetch_xor(bitw, bits, me) == bits, "fetch_xor");
    MPE_CHECK(shmem_uint64_atomic_fetch(bitw, me) == 0, "xor cleared the bits");
    shmem_barrier_all();

    /* A put, a fence and an atomic set: the waiter sees the data. */
    shmem_long_p(&data[0], 1000 + me, next);
    shmem_fence();
    shmem_long_atomic_set(flag, 1, next);
    shmem_long_wait_until(flag, SHMEM_CMP_EQ, 1);
    MPE_CHECK(shmem_long_test(flag, SHMEM_CMP_GE, 1) == 1, "test after wait_until");
    long d;
    shmem_getmem(&d, &data[0], sizeof(d), me);
    MPE_CHECK(d == 1000 + prev, "data before the flag from PE %d: %ld", prev, d);
    size_t idx = shmem_long_wait_until_any(flag, 1, NULL, SHMEM_CMP_EQ, 1);
    MPE_CHECK(idx == 0, "wait_until_any returned %zu", idx);

    /* Put-with-signal, its wait and fetch. */
    long v = 2000 + me;
    shmem_long_put_signal(&data[1], &v, 1, sig, 7, SHMEM_SIGNAL_SET, next);
    uint64_t s = shmem_signal_wait_until(sig, SHMEM_CMP_EQ, 7);
    MPE_CHECK(s == 7 && shmem_signal_fetch(sig) == 7, "signal %llu", (unsigned long long)s);
    shmem_getmem(&d, &data[1], sizeof(d), me);
    MPE_CHECK(d == 2000 + prev, "put_signal data from PE %d: %ld", prev, d);
    shmem_barrier_all();

    /* A lock in the heap guards a read-modify-write made of a get and a put. */
    for (int r = 0; r < LOCK_ROUNDS; r++) {
        shmem_set_lock(lock);
        long n = shmem_long_g(inside, 0);
        shmem_long_p(inside, n + 1, 0);
        shmem_quiet();
        shmem_clear_lock(lock);
    }
    shmem_barrier_all();
    got = shmem_long_g(inside, 0);
    MPE_CHECK(got == (long)npes * LOCK_ROUNDS, "lock-guarded count %ld, want %ld", got,
              (long)npes * LOCK_ROUNDS);
    shmem_barrier_all();
    shmem_free(inside);
    shmem_free(lock);
    shmem_free(data);
    shmem_free(flag);
    shmem_free(sig);
    shmem_free(dword);
    shmem_free(ictr);
    shmem_free(bitw);
    shmem_free(ctr);
}

static void test_calloc(void)
{
    const size_t n = 3 * 4096 + 5;
    uint8_t *z = shmem_calloc(n, 1);
    uint8_t *back = xmalloc(n);
    MPE_CHECK(z != NULL, "shmem_calloc of %zu bytes", n);
    shmem_barrier_all();
    for (int pe = 0; pe < npes; pe++) {
        memset(back, 0xee, n);
        shmem_getmem(back, z, n, pe);
        for (size_t i = 0; i < n; i++)
            MPE_CHECK(back[i] == 0, "shmem_calloc on PE %d: byte %zu is 0x%02x", pe, i, back[i]);
    }
    shmem_barrier_all();
    free(back);
    shmem_free(z);
}

/* Sources are written with puts to this PE, results read with gets. */
static void test_collectives(void)
{
    const size_t n = 3000; /* bytes per PE: larger than one page, not a multiple of 8 */
    uint8_t *src = shmem_malloc((size_t)npes * n);
    uint8_t *dst = shmem_malloc((size_t)npes * n);
    uint8_t *buf = xmalloc((size_t)npes * n);
    MPE_CHECK(src != NULL && dst != NULL, "collective buffers");

    /* broadcastmem from every root */
    for (int root = 0; root < npes; root++) {
        fill(buf, n, me, -1, 100 + (size_t)root);
        shmem_putmem(src, buf, n, me);
        MPE_CHECK(shmem_broadcastmem(SHMEM_TEAM_WORLD, dst, src, n, root) == 0, "broadcastmem rc");
        memset(buf, 0, n);
        shmem_getmem(buf, dst, n, me);
        expect(buf, n, root, -1, 100 + (size_t)root, "broadcastmem");
    }

    /* fcollectmem: block s of dest is PE s's source */
    fill(buf, n, me, -2, 200);
    shmem_putmem(src, buf, n, me);
    MPE_CHECK(shmem_fcollectmem(SHMEM_TEAM_WORLD, dst, src, n) == 0, "fcollectmem rc");
    shmem_getmem(buf, dst, (size_t)npes * n, me);
    for (int s = 0; s < npes; s++)
        expect(buf + (size_t)s * n, n, s, -2, 200, "fcollectmem");

    /* alltoallmem: block j of PE i's source lands in block i of PE j's dest */
    for (int j = 0; j < npes; j++)
        fill(buf + (size_t)j * n, n, me, j, 300);
    shmem_putmem(src, buf, (size_t)npes * n, me);
    MPE_CHECK(shmem_alltoallmem(SHMEM_TEAM_WORLD, dst, src, n) == 0, "alltoallmem rc");
    shmem_getmem(buf, dst, (size_t)npes * n, me);
    for (int i = 0; i < npes; i++)
        expect(buf + (size_t)i * n, n, i, me, 300, "alltoallmem");

    /* sum reduction of longs */
    enum { NR = 1000 };
    long *rsrc = shmem_malloc(NR * sizeof(long)), *rdst = shmem_malloc(NR * sizeof(long));
    long *vals = xmalloc(NR * sizeof(long));
    MPE_CHECK(rsrc != NULL && rdst != NULL, "reduction buffers");
    for (int i = 0; i < NR; i++)
        vals[i] = (long)(me + 1) * i;
    shmem_putmem(rsrc, vals, NR * sizeof(long), me);
    MPE_CHECK(shmem_long_sum_reduce(SHMEM_TEAM_WORLD, rdst, rsrc, NR) == 0, "sum_reduce rc");
    shmem_getmem(vals, rdst, NR * sizeof(long), me);
    long ranks = (long)npes * (npes + 1) / 2;
    for (int i = 0; i < NR; i++)
        MPE_CHECK(vals[i] == ranks * i, "long_sum_reduce [%d] = %ld, want %ld", i, vals[i],
                  ranks * i);

    free(vals);
    shmem_free(rdst);
    shmem_free(rsrc);
    free(buf);
    shmem_free(dst);
    shmem_free(src);
}

static void test_ptr(void)
{
    long *sym = shmem_malloc(sizeof(long));
    MPE_CHECK(sym != NULL, "shmem_malloc");
    for (int pe = 0; pe < npes; pe++) {
        void *p = shmem_ptr(sym, pe);
        int route = shmemx_route(pe, SHMEMX_CLASS_RMA);
        int mapped = route == SHMEMX_ROUTE_DIRECT || route == SHMEMX_ROUTE_SELF;
        /* The CPU can load and store only a host heap; a device heap is no
         * address for it, mapped or not. */
        if (device_heap)
            MPE_CHECK(p == NULL, "shmem_ptr to PE %d on a device heap is %p, want NULL", pe, p);
        else if (mapped)
            MPE_CHECK(p != NULL, "shmem_ptr to mapped PE %d is NULL", pe);
    }
    MPE_CHECK(shmem_ptr(sym, npes) == NULL, "shmem_ptr to PE %d (out of range) is not NULL", npes);
    shmem_barrier_all();
    shmem_free(sym);
}

static void test_routes(void)
{
    static const char *const classes[] = {"RMA", "atomics", "signals", "synchronisation"};
    for (int pe = 0; pe < npes; pe++) {
        for (int c = SHMEMX_CLASS_RMA; c <= SHMEMX_CLASS_SYNC; c++) {
            int route = shmemx_route(pe, c);
            if (verbose)
                printf("PE %d -> PE %d: %-15s %-10s %s\n", me, pe, classes[c],
                       shmemx_route_name(route), shmemx_route_why(pe, c));
            bool shared = ndevices > 0 && me % ndevices == pe % ndevices;
            int want = pe == me                              ? SHMEMX_ROUTE_SELF
                       : shared && c == SHMEMX_CLASS_SYNC ? SHMEMX_ROUTE_HOST_SYNC
                                                            : SHMEMX_ROUTE_DIRECT;
            /* Some peer over the fabric (mapping off, or simulated nodes):
             * unmapped peers take it, landed or with the heap registered
             * (FI_HMEM), and every PE's atomics go over it, this PE's and
             * its node's included. */
            if (mpe_fabric_job()) {
                int fabric = landed ? SHMEMX_ROUTE_STAGED : SHMEMX_ROUTE_PROXY;
                if (!mpe_mapped_pe(pe))
                    want = fabric;
                else if (c != SHMEMX_CLASS_RMA && want != SHMEMX_ROUTE_HOST_SYNC)
                    want = SHMEMX_ROUTE_PROXY;
            }
            MPE_CHECK(route == want, "%s route to PE %d is %s, want %s", classes[c], pe,
                      shmemx_route_name(route), shmemx_route_name(want));
        }
    }
    fflush(stdout);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Heap-to-heap gets from the next PE: the copy engine over the link between
 * the two devices when the heap is device memory. Information only. */
static void time_gets(void)
{
    const size_t n = MAX_SIZE;
    const int reps = 20;
    uint8_t *a = shmem_malloc(n), *b = shmem_malloc(n);
    MPE_CHECK(a != NULL && b != NULL, "timing buffers");
    shmem_barrier_all();
    if (me == 0 && npes > 1) {
        shmem_getmem(b, a, n, 1);
        double t0 = now_s();
        for (int i = 0; i < reps; i++)
            shmem_getmem(b, a, n, 1);
        double dt = now_s() - t0;
        printf("PE 0: %d heap-to-heap gets of %zu bytes from PE 1: %.1f us each, %.1f GB/s\n",
               reps, n, dt / reps * 1e6, (double)n * reps / dt / 1e9);
        fflush(stdout);
    }
    shmem_barrier_all();
    shmem_free(b);
    shmem_free(a);
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-v") == 0) {
            verbose = 1;
        } else if (strcmp(argv[i], "--heap=device") == 0) {
            device_heap = 1;
        } else if (strcmp(argv[i], "--heap=host") == 0) {
            device_heap = 0;
        } else if (strcmp(argv[i], "--same-device") == 0) {
            same_device = 1;
            ndevices = 1;
        } else if (strncmp(argv[i], "--devices=", 10) == 0 && atoi(argv[i] + 10) > 0) {
            ndevices = atoi(argv[i] + 10);
            same_device = ndevices == 1;
        } else if (strcmp(argv[i], "--landed") == 0) {
            landed = 1;
        } else {
            fprintf(stderr, "usage: mpe_device_heap [-v] [--heap=device|host] "
                            "[--same-device | --devices=N] [--landed]\n");
            return 2;
        }
    }
    shmem_init();
    me = shmem_my_pe();
    npes = shmem_n_pes();

    test_routes();
    for (size_t s = 0; s < NSIZES; s++)
        test_rma(sizes[s], s, 0);
    test_rma(65536 + 17, NSIZES, 1);
    test_rma(MAX_SIZE, NSIZES + 1, 1);
    test_calloc();
    test_atomics_and_waits();
    test_collectives();
    test_ptr();
    if (verbose)
        time_gets();

    shmem_barrier_all();
    if (me == 0)
        printf("mpe_device_heap: %d PEs, %s heap, %s: all checks passed\n", npes,
               device_heap ? "device" : "host",
               ndevices == 0 ? "one device each" : ndevices == 1 ? "one device" : "shared devices");
    shmem_finalize();
    return 0;
}
