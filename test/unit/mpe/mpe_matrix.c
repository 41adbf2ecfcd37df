/* The route matrix, one case per run: after shmem_init every PE checks the
 * route of every operation class to every PE against the expectation on the
 * command line, then moves data on every route (puts, gets, fetch-adds,
 * put-with-signal, barriers) and checks it on every PE. test/unit/matrix.sh
 * holds the table of cases (environment and expected routes).
 *
 * Usage: mpe_matrix rma=SPEC amo=SPEC signal=SPEC sync=SPEC
 * SPEC is two letters (the route to this PE, then to every other PE) or one
 * row of npes letters per PE separated by commas (row = source PE, column =
 * target PE). Letters: s self, d direct, p proxy/ofi, t staged, h host-sync.
 * A class left out is not checked.
 *
 * On a device heap (the ze backend's, or the cpu heap posing as device memory
 * with USHMEM_CPU_DEVICE_HEAP=1), which host code must not load, the checks
 * read it back through shmem gets and atomic fetches only; where atomics to
 * some PE would be host atomics on device memory (a direct route), which
 * the host API refuses, the atomic and signal parts are left out and the
 * routes and the RMA are checked. */
#include <shmemx.h>
#include <stdint.h>
#include <string.h>

#include "mpe_check.h"

#define BLOCK 512 /* longs per PE in the bulk put */
#define REPS 8    /* fetch-adds per target */

static const char *const class_keys[] = {"rma", "amo", "signal", "sync"};
static const int classes[] = {SHMEMX_CLASS_RMA, SHMEMX_CLASS_AMO, SHMEMX_CLASS_SIGNAL,
                              SHMEMX_CLASS_SYNC};
#define NCLASSES 4

static int route_of_letter(char c)
{
    switch (c) {
    case 's':
        return SHMEMX_ROUTE_SELF;
    case 'd':
        return SHMEMX_ROUTE_DIRECT;
    case 'p':
        return SHMEMX_ROUTE_PROXY;
    case 't':
        return SHMEMX_ROUTE_STAGED;
    case 'h':
        return SHMEMX_ROUTE_HOST_SYNC;
    case 'n':
        return SHMEMX_ROUTE_NONE;
    }
    return -1;
}

/* The expected route from PE `me` to PE `pe` under spec, or -1 for a spec
 * that does not fit npes (reported by the caller). */
static int expected(const char *spec, int me, int pe, int npes)
{
    if (strchr(spec, ',') == NULL && strlen(spec) == 2)
        return route_of_letter(spec[pe == me ? 0 : 1]);
    const char *row = spec;
    for (int r = 0; r < me; r++) {
        row = strchr(row, ',');
        if (row == NULL)
            return -1;
        row++;
    }
    size_t len = strcspn(row, ",");
    if (len != (size_t)npes)
        return -1;
    return route_of_letter(row[pe]);
}

static void check_routes(int argc, char **argv, int me, int npes)
{
    for (int a = 1; a < argc; a++) {
        const char *eq = strchr(argv[a], '=');
        int k = -1;
        for (int c = 0; c < NCLASSES && eq != NULL; c++)
            if (strlen(class_keys[c]) == (size_t)(eq - argv[a]) &&
                strncmp(argv[a], class_keys[c], (size_t)(eq - argv[a])) == 0)
                k = c;
        MPE_CHECK(k >= 0, "argument '%s' is not rma=, amo=, signal= or sync=SPEC", argv[a]);
        for (int pe = 0; pe < npes; pe++) {
            int want = expected(eq + 1, me, pe, npes);
            MPE_CHECK(want >= 0, "spec '%s' does not fit %d PEs", argv[a], npes);
            int got = shmemx_route(pe, classes[k]);
            const char *why = shmemx_route_why(pe, classes[k]);
            MPE_CHECK(got == want, "%s route to PE %d is %s (%s), want %s", class_keys[k], pe,
                      shmemx_route_name(got), why != NULL ? why : "?", shmemx_route_name(want));
            MPE_CHECK(why != NULL && why[0] != '\0', "no reason for the %s route to PE %d",
                      class_keys[k], pe);
        }
    }
}

static long block_value(int src, int dst, int i)
{
    return 1000000L * src + 1000L * dst + i;
}

int main(int argc, char **argv)
{
    shmem_init();
    int me = shmem_my_pe(), npes = shmem_n_pes();
    check_routes(argc, argv, me, npes);

    long *slots = shmem_calloc((size_t)npes, sizeof(long));
    /* shmem_ptr to this PE's own heap is NULL only for device memory. */
    int host_loads = shmem_ptr(slots, me) != NULL, host_atomics = 1;
    for (int pe = 0; pe < npes && !host_loads; pe++) {
        int route = shmemx_route(pe, SHMEMX_CLASS_AMO);
        if (route == SHMEMX_ROUTE_SELF || route == SHMEMX_ROUTE_DIRECT)
            host_atomics = 0;
    }
    long *block = shmem_calloc((size_t)npes * BLOCK, sizeof(long));
    long *counter = shmem_calloc(1, sizeof(long));
    long *sigdata = shmem_calloc((size_t)npes, sizeof(long));
    uint64_t *sig = shmem_calloc((size_t)npes, sizeof(uint64_t));
    long *mine = malloc(sizeof(long) * BLOCK * (size_t)npes);
    long *seen = malloc(sizeof(long) * BLOCK * (size_t)npes);
    uint64_t *seen_sig = malloc(sizeof(uint64_t) * (size_t)npes);
    MPE_CHECK(slots && block && counter && sigdata && sig && mine && seen && seen_sig,
              "allocation failed");
    shmem_barrier_all();

    /* RMA: a word and a block from every PE to every PE, this one included. */
    for (int pe = 0; pe < npes; pe++) {
        for (int i = 0; i < BLOCK; i++)
            mine[i] = block_value(me, pe, i);
        shmem_long_p(&slots[me], 1000L * me + pe, pe);
        shmem_putmem(&block[(size_t)me * BLOCK], mine, BLOCK * sizeof(long), pe);
    }
    /* Atomics: every PE's counter ends at REPS * (1 + ... + npes); the values
     * one PE fetches from one counter only grow. */
    for (int pe = 0; pe < npes && host_atomics; pe++) {
        long last = -1;
        for (int r = 0; r < REPS; r++) {
            long old = shmem_long_atomic_fetch_add(counter, me + 1, pe);
            MPE_CHECK(old > last && old < (long)REPS * npes * (npes + 1) / 2,
                      "fetch_add on PE %d returned %ld after %ld", pe, old, last);
            last = old;
        }
    }
    /* Signals: data then signal, to every PE. */
    for (int pe = 0; pe < npes && host_atomics; pe++) {
        long v = 7000L + 10L * me + pe;
        shmem_putmem_signal(&sigdata[me], &v, sizeof(v), &sig[me], 1, SHMEM_SIGNAL_ADD, pe);
    }
    if (host_loads) {
        for (int src = 0; src < npes; src++) {
            shmem_uint64_wait_until(&sig[src], SHMEM_CMP_EQ, 1);
            MPE_CHECK(sigdata[src] == 7000L + 10L * src + me,
                      "signal from PE %d arrived before its data: %ld", src, sigdata[src]);
        }
    }
    shmem_barrier_all();

    /* Every PE reads every PE's memory back through its routes. */
    long total = (long)REPS * npes * (npes + 1) / 2;
    for (int pe = 0; pe < npes; pe++) {
        shmem_getmem(seen, slots, sizeof(long) * (size_t)npes, pe);
        for (int src = 0; src < npes; src++)
            MPE_CHECK(seen[src] == 1000L * src + pe, "PE %d slot of PE %d = %ld", pe, src,
                      seen[src]);
        shmem_getmem(seen, block, sizeof(long) * BLOCK * (size_t)npes, pe);
        for (int src = 0; src < npes; src++)
            for (int i = 0; i < BLOCK; i++)
                MPE_CHECK(seen[(size_t)src * BLOCK + (size_t)i] == block_value(src, pe, i),
                          "PE %d block of PE %d [%d] = %ld", pe, src, i,
                          seen[(size_t)src * BLOCK + (size_t)i]);
        if (!host_atomics)
            continue;
        long c = shmem_long_atomic_fetch(counter, pe);
        MPE_CHECK(c == total, "counter on PE %d = %ld, want %ld", pe, c, total);
        shmem_getmem(seen, sigdata, sizeof(long) * (size_t)npes, pe);
        shmem_getmem(seen_sig, sig, sizeof(uint64_t) * (size_t)npes, pe);
        for (int src = 0; src < npes; src++)
            MPE_CHECK(seen_sig[src] == 1 && seen[src] == 7000L + 10L * src + pe,
                      "PE %d signal of PE %d = %llu, data %ld", pe, src,
                      (unsigned long long)seen_sig[src], seen[src]);
    }
    if (host_loads)
        MPE_CHECK(*counter == total, "own counter = %ld", *counter);
    shmem_barrier_all();

    free(seen_sig);
    free(seen);
    free(mine);
    shmem_free(sig);
    shmem_free(sigdata);
    shmem_free(counter);
    shmem_free(block);
    shmem_free(slots);
    shmem_finalize();
    return 0;
}
