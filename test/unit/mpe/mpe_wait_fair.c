/* No index is starved by the _any and _some waits and tests: every PE sets
 * its flags on every PE, then test_any (plain, _vector, with a status mask)
 * must come back with every set index within a bounded number of calls,
 * wait_until_any called once per flag must return each index once, and
 * test_some / wait_until_some must return every set index at once. A
 * starved index is reported as a failure after FAIR_LIMIT calls per index,
 * so the program ends even when test_any answers 0 forever. */
#include <shmem.h>
#include <stdint.h>
#include <stdlib.h>

#include "mpe_check.h"

#define PER_PE 4      /* flags each PE sets: more indices than PEs, also on one PE */
#define FAIR_LIMIT 64 /* calls per index before an unseen index counts as starved */

static int me, npes;
static size_t nflags;

/* Every PE sets its PER_PE flags to 1 on every PE (itself included). */
static int *set_flags_everywhere(void)
{
    int *flags = shmem_calloc(nflags, sizeof(int));
    MPE_CHECK(flags != NULL, "calloc of %zu flags", nflags);
    for (int pe = 0; pe < npes; pe++)
        for (size_t k = 0; k < PER_PE; k++)
            shmem_int_p(&flags[(size_t)me * PER_PE + k], 1, pe);
    shmem_quiet();
    shmem_barrier_all();
    return flags;
}

enum any_form { ANY_PLAIN, ANY_VECTOR, ANY_MASKED };

static const char *any_name[] = {"shmem_int_test_any", "shmem_int_test_any_vector",
                                 "shmem_int_test_any (odd indices excluded)"};

/* Calls test_any until every eligible index has come back once; fails
 * naming the first index never returned after FAIR_LIMIT calls per index. */
static void check_test_any(int *flags, enum any_form form)
{
    int *cmp_values = malloc(nflags * sizeof(int));
    int *status = calloc(nflags, sizeof(int));
    size_t *seen = calloc(nflags, sizeof(size_t));
    MPE_CHECK(cmp_values && status && seen, "malloc");
    size_t eligible = 0;
    for (size_t i = 0; i < nflags; i++) {
        cmp_values[i] = 1;
        status[i] = form == ANY_MASKED && i % 2 == 1;
        eligible += status[i] == 0;
    }
    size_t distinct = 0, calls = 0, limit = FAIR_LIMIT * nflags;
    while (distinct < eligible && calls < limit) {
        size_t got;
        if (form == ANY_VECTOR)
            got = shmem_int_test_any_vector(flags, nflags, NULL, SHMEM_CMP_EQ, cmp_values);
        else
            got = shmem_int_test_any(flags, nflags, form == ANY_MASKED ? status : NULL,
                                     SHMEM_CMP_EQ, 1);
        calls++;
        MPE_CHECK(got < nflags && status[got] == 0, "%s returned %zu (of %zu flags, all set)",
                  any_name[form], got, nflags);
        if (seen[got]++ == 0)
            distinct++;
    }
    for (size_t i = 0; i < nflags; i++)
        MPE_CHECK(status[i] != 0 || seen[i] > 0,
                  "%s starved index %zu: not returned in %zu calls over %zu set flags (index 0 "
                  "came back %zu times)",
                  any_name[form], i, calls, eligible, seen[0]);
    /* Resuming after the last index returned visits the eligible ones in turn. */
    MPE_CHECK(calls == eligible, "%s took %zu calls to return %zu indices", any_name[form], calls,
              eligible);
    free(seen);
    free(status);
    free(cmp_values);
}

/* The _some forms return every satisfied index, each once. */
static void check_some_complete(const char *what, const size_t *idx, size_t n)
{
    MPE_CHECK(n == nflags, "%s returned %zu indices, want %zu", what, n, nflags);
    char *hit = calloc(nflags, 1);
    MPE_CHECK(hit != NULL, "calloc");
    for (size_t j = 0; j < n; j++) {
        MPE_CHECK(idx[j] < nflags && !hit[idx[j]], "%s returned index %zu twice or out of range",
                  what, idx[j]);
        hit[idx[j]] = 1;
    }
    free(hit);
}

int main(void)
{
    shmem_init();
    me = shmem_my_pe();
    npes = shmem_n_pes();
    nflags = (size_t)npes * PER_PE;

    int *flags = set_flags_everywhere();
    check_test_any(flags, ANY_PLAIN);
    check_test_any(flags, ANY_VECTOR);
    check_test_any(flags, ANY_MASKED);

    size_t *idx = malloc(nflags * sizeof(size_t));
    int *cmp_values = malloc(nflags * sizeof(int));
    MPE_CHECK(idx && cmp_values, "malloc");
    for (size_t i = 0; i < nflags; i++)
        cmp_values[i] = 1;
    check_some_complete("shmem_int_test_some", idx,
                        shmem_int_test_some(flags, nflags, idx, NULL, SHMEM_CMP_EQ, 1));
    check_some_complete("shmem_int_test_some_vector", idx,
                        shmem_int_test_some_vector(flags, nflags, idx, NULL, SHMEM_CMP_EQ,
                                                   cmp_values));
    shmem_barrier_all();

    /* Each flag set once: wait_until_any called once per flag returns each
     * index once (the flags stay set, so a starving scan repeats itself). */
    int *once = set_flags_everywhere();
    char *returned = calloc(nflags, 1);
    MPE_CHECK(returned != NULL, "calloc");
    for (size_t call = 0; call < nflags; call++) {
        size_t got = call % 2 ? shmem_int_wait_until_any_vector(once, nflags, NULL, SHMEM_CMP_EQ,
                                                                cmp_values)
                              : shmem_int_wait_until_any(once, nflags, NULL, SHMEM_CMP_EQ, 1);
        MPE_CHECK(got < nflags && !returned[got],
                  "shmem_int_wait_until_any%s call %zu returned index %zu %s",
                  call % 2 ? "_vector" : "", call, got, got < nflags ? "again" : "(out of range)");
        returned[got] = 1;
    }
    check_some_complete("shmem_int_wait_until_some", idx,
                        shmem_int_wait_until_some(once, nflags, idx, NULL, SHMEM_CMP_EQ, 1));
    check_some_complete("shmem_int_wait_until_some_vector", idx,
                        shmem_int_wait_until_some_vector(once, nflags, idx, NULL, SHMEM_CMP_EQ,
                                                         cmp_values));

    shmem_barrier_all();
    free(returned);
    free(cmp_values);
    free(idx);
    shmem_free(once);
    shmem_free(flags);
    shmem_finalize();
    return 0;
}
