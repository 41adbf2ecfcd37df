/* An NVSHMEM program's host side, as NVSHMEM's users write it, built
 * against ushmem's <nvshmem.h> (oshc++ --nvshmem) and run on any backend
 * (the cpu backend in CI): start-up and queries, the heap, RMA in its
 * typed, sized, strided and non-blocking forms, put-with-signal and signal
 * ops, atomics, waits and tests, barriers, teams (the node team, a split
 * team, ids and translation) and the team collectives. Every PE checks
 * every value it receives; the first wrong one ends the job with a line
 * naming the PE, the call and the values. */
#include <nvshmem.h>
#include <nvshmemx.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int me, npes;

#include "nv_check.h"

static void setup(void)
{
    CHECK(nvshmemx_init_status() == NVSHMEM_STATUS_IS_INITIALIZED, "nvshmemx_init_status = %d",
          nvshmemx_init_status());
    int major = 0, minor = 0;
    char name[NVSHMEM_MAX_NAME_LEN];
    nvshmem_info_get_version(&major, &minor);
    nvshmem_info_get_name(name);
    CHECK(major >= 1 && strstr(name, "ushmem") != NULL, "info: %d.%d \"%s\"", major, minor, name);
    /* The node team: every PE of this machine, ranked as the local rank that
     * chose the device (NVSHMEM programs pick their GPU with it). */
    int node_pe = nvshmem_team_my_pe(NVSHMEMX_TEAM_NODE);
    int node_n = nvshmem_team_n_pes(NVSHMEMX_TEAM_NODE);
    const char *sim = getenv("USHMEM_SIM_NODES");
    int nodes = sim != NULL ? atoi(sim) : 1;
    CHECK(node_n >= 1 && node_n <= npes && node_pe >= 0 && node_pe < node_n,
          "NVSHMEMX_TEAM_NODE: my_pe %d of %d", node_pe, node_n);
    if (nodes <= 1)
        CHECK(node_n == npes && node_pe == me, "NVSHMEMX_TEAM_NODE on one node: my_pe %d of %d",
              node_pe, node_n);
    CHECK(nvshmem_team_translate_pe(NVSHMEMX_TEAM_NODE, node_pe, NVSHMEM_TEAM_WORLD) == me,
          "translate of node PE %d to the world", node_pe);
    CHECK(nvshmem_team_my_pe(12345) == -1, "a team id that names no team gave my_pe %d",
          nvshmem_team_my_pe(12345));
}

static void rma(void)
{
    const int n = 64, right = (me + 1) % npes, left = (me + npes - 1) % npes;
    long *src = (long *)nvshmem_malloc(n * sizeof(long));
    long *dst = (long *)nvshmem_calloc(n, sizeof(long));
    double *d = (double *)nvshmem_align(256, 4 * sizeof(double));
    CHECK(src != NULL && dst != NULL && d != NULL && ((uintptr_t)d & 255) == 0, "allocation");
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < n; i++)
            src[i] = 1000000L * round + 1000L * me + i;
        nvshmem_barrier_all();
        switch (round) {
        case 0: nvshmem_long_put(dst, src, n, right); break;
        case 1: nvshmem_putmem_nbi(dst, src, n * sizeof(long), right); break;
        default: nvshmem_put64_nbi(dst, src, n, right); break;
        }
        nvshmem_quiet();
        nvshmem_barrier_all();
        for (int i = 0; i < n; i++)
            CHECK(dst[i] == 1000000L * round + 1000L * left + i,
                  "round %d: dst[%d] = %ld from PE %d", round, i, dst[i], left);
    }
    /* get, g and p of a double, strided put and get */
    long got[64];
    nvshmem_long_get(got, src, n, right);
    for (int i = 0; i < n; i++)
        CHECK(got[i] == 2000000L + 1000L * right + i, "get[%d] = %ld from PE %d", i, got[i], right);
    nvshmem_double_p(&d[0], 0.5 + me, right);
    nvshmem_barrier_all();
    CHECK(d[0] == 0.5 + left, "double_p: %g from PE %d", d[0], left);
    CHECK(nvshmem_double_g(&d[0], right) == 0.5 + me, "double_g of PE %d", right);
    nvshmem_barrier_all();
    long strided[8];
    for (int i = 0; i < 8; i++)
        strided[i] = 77L * me + i;
    nvshmem_long_iput(dst, strided, 2, 1, 8, right); /* dst[0], dst[2], ... */
    nvshmem_barrier_all();
    for (int i = 0; i < 8; i++)
        CHECK(dst[2 * i] == 77L * left + i, "iput: dst[%d] = %ld", 2 * i, dst[2 * i]);
    long back[8];
    nvshmem_long_iget(back, dst, 1, 2, 8, left);
    for (int i = 0; i < 8; i++)
        CHECK(back[i] == 77L * ((left + npes - 1) % npes) + i, "iget: %ld", back[i]);
    nvshmem_barrier_all();
    nvshmem_free(d);
    nvshmem_free(dst);
    nvshmem_free(src);
}

static void signals_and_atomics(void)
{
    const int right = (me + 1) % npes, left = (me + npes - 1) % npes;
    uint64_t *sig = (uint64_t *)nvshmem_calloc(2, sizeof(uint64_t));
    int *data = (int *)nvshmem_calloc(16, sizeof(int));
    long *ctr = (long *)nvshmem_calloc(4, sizeof(long));
    unsigned int *bits = (unsigned int *)nvshmem_calloc(1, sizeof(unsigned int));
    int mine[16];
    for (int i = 0; i < 16; i++)
        mine[i] = 100 * me + i;
    nvshmem_barrier_all();
    /* put with signal, ADD; then a SET without data */
    nvshmem_int_put_signal(data, mine, 16, &sig[0], 5, NVSHMEM_SIGNAL_ADD, right);
    uint64_t seen = nvshmem_signal_wait_until(&sig[0], NVSHMEM_CMP_EQ, 5);
    CHECK(seen == 5, "signal_wait_until returned %llu", (unsigned long long)seen);
    for (int i = 0; i < 16; i++)
        CHECK(data[i] == 100 * left + i, "put_signal data[%d] = %d", i, data[i]);
    nvshmemx_signal_op(&sig[1], 42, NVSHMEM_SIGNAL_SET, right);
    nvshmem_uint64_wait_until(&sig[1], NVSHMEM_CMP_GE, 42);
    CHECK(nvshmem_signal_fetch(&sig[1]) == 42, "signal_op SET");
    nvshmem_barrier_all();
    /* every PE adds to PE 0's counter and swaps, compare-swaps, fetches */
    for (int k = 0; k < 10; k++)
        nvshmem_long_atomic_add(&ctr[0], 1, 0);
    long before = nvshmem_long_atomic_fetch_add(&ctr[1], me + 1, 0);
    CHECK(before >= 0, "fetch_add returned %ld", before);
    nvshmem_long_atomic_inc(&ctr[2], 0);
    nvshmem_uint_atomic_or(bits, 1u << me, 0);
    nvshmem_quiet();
    nvshmem_barrier_all();
    if (me == 0) {
        CHECK(ctr[0] == 10L * npes, "add: %ld", ctr[0]);
        CHECK(ctr[1] == (long)npes * (npes + 1) / 2, "fetch_add total: %ld", ctr[1]);
        CHECK(ctr[2] == npes, "inc: %ld", ctr[2]);
        CHECK(*bits == (npes >= 32 ? ~0u : (1u << npes) - 1), "or: %#x", *bits);
    }
    CHECK(nvshmem_long_atomic_fetch(&ctr[0], 0) == 10L * npes, "fetch of PE 0's counter");
    nvshmem_barrier_all();
    /* A token passed round the ring by compare-swap: PE k waits for k. */
    if (me == 0)
        nvshmem_long_atomic_set(&ctr[3], 0, 0);
    nvshmem_barrier_all();
    for (;;) {
        long old = nvshmem_long_atomic_compare_swap(&ctr[3], me, me + 1, 0);
        if (old == me)
            break;
        CHECK(old < me, "compare_swap saw %ld, beyond %d", old, me);
    }
    nvshmem_barrier_all();
    if (me == npes - 1) {
        long old = nvshmem_long_atomic_swap(&ctr[3], -1, 0);
        CHECK(old == npes, "swap returned %ld after the ring of compare-swaps", old);
    }
    nvshmem_barrier_all();
    CHECK(nvshmem_long_atomic_fetch(&ctr[3], 0) == -1, "swap left %ld",
          nvshmem_long_atomic_fetch(&ctr[3], 0));
    /* tests and the vector waits */
    int status[2] = {0, 1};
    uint64_t want[2] = {42, 7};
    CHECK(nvshmem_uint64_test(&sig[1], NVSHMEM_CMP_EQ, 42), "test");
    CHECK(nvshmem_uint64_test_any(sig, 2, status, NVSHMEM_CMP_EQ, 5) == 0, "test_any");
    CHECK(nvshmem_uint64_test_all_vector(sig + 1, 1, NULL, NVSHMEM_CMP_EQ, want), "test_all_vector");
    size_t idx[2];
    CHECK(nvshmem_uint64_wait_until_some(sig, 2, idx, NULL, NVSHMEM_CMP_GE, 5) == 2 &&
              idx[0] == 0 && idx[1] == 1,
          "wait_until_some");
    nvshmem_barrier_all();
    nvshmem_free(bits);
    nvshmem_free(ctr);
    nvshmem_free(data);
    nvshmem_free(sig);
}

static void teams_and_collectives(void)
{
    /* The even PEs, as NVSHMEM programs split teams. */
    nvshmem_team_t evens = NVSHMEM_TEAM_INVALID;
    nvshmem_team_config_t config = NVSHMEM_TEAM_CONFIG_INITIALIZER;
    int neven = (npes + 1) / 2;
    int rc = nvshmem_team_split_strided(NVSHMEM_TEAM_WORLD, 0, 2, neven, &config, 0, &evens);
    CHECK(rc == 0, "team_split_strided returned %d", rc);
    if (me % 2 == 0) {
        CHECK(evens >= NVSHMEM_TEAMS_MIN, "a split team's id is %d", (int)evens);
        CHECK(nvshmem_team_my_pe(evens) == me / 2 && nvshmem_team_n_pes(evens) == neven,
              "evens: my_pe %d of %d", nvshmem_team_my_pe(evens), nvshmem_team_n_pes(evens));
        CHECK(nvshmem_team_translate_pe(evens, 1 % neven, NVSHMEM_TEAM_WORLD) == 2 * (1 % neven),
              "translate");
    } else {
        CHECK(evens == NVSHMEM_TEAM_INVALID, "an odd PE got team %d", (int)evens);
    }
    const size_t n = 8;
    int *src = (int *)nvshmem_malloc(n * npes * sizeof(int));
    int *dst = (int *)nvshmem_malloc(n * npes * sizeof(int));
    for (size_t i = 0; i < n * npes; i++)
        src[i] = (int)(1000 * me + i);
    nvshmem_barrier_all();
    /* world: alltoall, fcollect, broadcast, sum and max reductions */
    CHECK(nvshmem_int_alltoall(NVSHMEM_TEAM_WORLD, dst, src, n) == 0, "alltoall");
    for (int pe = 0; pe < npes; pe++)
        for (size_t i = 0; i < n; i++)
            CHECK(dst[pe * n + i] == (int)(1000 * pe + me * n + i), "alltoall dst[%zu] = %d",
                  pe * n + i, dst[pe * n + i]);
    CHECK(nvshmem_int_fcollect(NVSHMEM_TEAM_WORLD, dst, src, n) == 0, "fcollect");
    for (int pe = 0; pe < npes; pe++)
        for (size_t i = 0; i < n; i++)
            CHECK(dst[pe * n + i] == (int)(1000 * pe + i), "fcollect dst[%zu] = %d", pe * n + i,
                  dst[pe * n + i]);
    int root = npes - 1;
    CHECK(nvshmem_int_broadcast(NVSHMEM_TEAM_WORLD, dst, src, n, root) == 0, "broadcast");
    for (size_t i = 0; i < n; i++)
        CHECK(dst[i] == (int)(1000 * root + i), "broadcast dst[%zu] = %d", i, dst[i]);
    CHECK(nvshmem_int_sum_reduce(NVSHMEM_TEAM_WORLD, dst, src, n) == 0, "sum_reduce");
    for (size_t i = 0; i < n; i++)
        CHECK(dst[i] == (int)(1000 * (npes * (npes - 1) / 2) + npes * i), "sum dst[%zu] = %d", i,
              dst[i]);
    CHECK(nvshmem_int_max_reduce(NVSHMEM_TEAM_WORLD, dst, src, n) == 0, "max_reduce");
    for (size_t i = 0; i < n; i++)
        CHECK(dst[i] == (int)(1000 * (npes - 1) + i), "max dst[%zu] = %d", i, dst[i]);
    nvshmem_barrier_all();
    /* the even team: a sum over its members, a barrier and a sync */
    if (evens != NVSHMEM_TEAM_INVALID) {
        CHECK(nvshmem_int_sum_reduce(evens, dst, src, n) == 0, "evens sum_reduce");
        int expect = 0;
        for (int pe = 0; pe < npes; pe += 2)
            expect += 1000 * pe;
        for (size_t i = 0; i < n; i++)
            CHECK(dst[i] == expect + neven * (int)i, "evens sum dst[%zu] = %d", i, dst[i]);
        CHECK(nvshmem_barrier(evens) == 0 && nvshmem_team_sync(evens) == 0, "evens barrier");
        nvshmem_team_destroy(evens);
    }
    nvshmem_barrier_all();
    nvshmem_free(dst);
    nvshmem_free(src);
}

int main(void)
{
    nvshmem_init();
    me = nvshmem_my_pe();
    npes = nvshmem_n_pes();
    setup();
    rma();
    signals_and_atomics();
    teams_and_collectives();
    nvshmem_barrier_all();
    if (me == 0)
        printf("nv_host: %d PEs passed\n", npes);
    nvshmem_finalize();
    return 0;
}
