/* Teams: SHMEM_TEAM_WORLD and SHMEM_TEAM_SHARED, strided splits (forward,
 * reversed, leaving PEs out, of one PE), 2-D splits, their queries, and
 * every collective on them, each PE checking its own data. Collectives run
 * back to back on overlapping teams with PEs skewed, and teams are created
 * and destroyed many more times than the table holds, which a leak would
 * exhaust. Invalid teams and triplets return errors. */
#include <shmem.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mpe_check.h"

#define N 40 /* elements per PE in the data collectives */

static int me, npes;
static long *src, *dst; /* symmetric, allocated once: allocation is collective over the world */
/* This PE's view of src and dst in host memory: the heap may be device
 * memory that the CPU must not touch (the ze and cuda backends), so it is
 * written with puts from hsrc and read with gets into hdst only. */
static long *hsrc, *hdst;
#define TOTAL ((size_t)N * (size_t)npes)

static void put_src(void) { shmem_putmem(src, hsrc, TOTAL * sizeof(long), me); }
static void put_dst(void) { shmem_putmem(dst, hdst, TOTAL * sizeof(long), me); }
static void get_dst(void) { shmem_getmem(hdst, dst, TOTAL * sizeof(long), me); }
static void get_src(void) { shmem_getmem(hsrc, src, TOTAL * sizeof(long), me); }

/* World PE of member i of a team, from its own translation. */
static int world_of(shmem_team_t team, int i)
{
    return shmem_team_translate_pe(team, i, SHMEM_TEAM_WORLD);
}

static long value_of(int world_pe, int i) { return 1000L * (world_pe + 1) + i; }

/* A PE skews itself a little so that members enter collectives at
 * different times. */
static void skew(int round)
{
    if ((me + round) % 3 == 0)
        usleep(200);
}

/* Checks membership queries and runs every collective on team, checking
 * what this PE receives. */
static void exercise(shmem_team_t team, const char *what, int round)
{
    int size = shmem_team_n_pes(team), my = shmem_team_my_pe(team);
    MPE_CHECK(size >= 1 && my >= 0 && my < size, "%s: my_pe %d of %d", what, my, size);
    MPE_CHECK(world_of(team, my) == me, "%s: member %d translates to %d, not %d", what, my,
              world_of(team, my), me);
    MPE_CHECK(shmem_team_translate_pe(SHMEM_TEAM_WORLD, me, team) == my,
              "%s: world PE %d translates back to %d, not %d", what, me,
              shmem_team_translate_pe(SHMEM_TEAM_WORLD, me, team), my);

    for (int i = 0; i < N * npes; i++) {
        hsrc[i] = value_of(me, i);
        hdst[i] = -1;
    }
    put_src();
    put_dst();

    /* broadcast from the last member */
    skew(round);
    int root = size - 1;
    MPE_CHECK(shmem_long_broadcast(team, dst, src, N, root) == 0, "%s: broadcast", what);
    get_dst();
    for (int i = 0; i < N; i++)
        MPE_CHECK(hdst[i] == value_of(world_of(team, root), i), "%s: broadcast [%d] = %ld", what,
                  i, hdst[i]);

    /* collect: member j contributes j + 1 elements */
    skew(round + 1);
    MPE_CHECK(shmem_long_collect(team, dst, src, (size_t)my + 1) == 0, "%s: collect", what);
    get_dst();
    for (int j = 0, at = 0; j < size; j++)
        for (int i = 0; i <= j; i++, at++)
            MPE_CHECK(hdst[at] == value_of(world_of(team, j), i), "%s: collect [%d] = %ld", what,
                      at, hdst[at]);

    /* fcollect */
    skew(round + 2);
    MPE_CHECK(shmem_long_fcollect(team, dst, src, N) == 0, "%s: fcollect", what);
    get_dst();
    for (int j = 0; j < size; j++)
        for (int i = 0; i < N; i++)
            MPE_CHECK(hdst[j * N + i] == value_of(world_of(team, j), i), "%s: fcollect", what);

    /* alltoall: block j of this PE's source goes to member j */
    MPE_CHECK(shmem_long_alltoall(team, dst, src, 3) == 0, "%s: alltoall", what);
    get_dst();
    for (int j = 0; j < size; j++)
        for (int i = 0; i < 3; i++)
            MPE_CHECK(hdst[j * 3 + i] == value_of(world_of(team, j), my * 3 + i),
                      "%s: alltoall from member %d [%d] = %ld", what, j, i, hdst[j * 3 + i]);

    /* alltoalls with strides 2 (dest) and 3 (source) */
    MPE_CHECK(shmem_long_alltoalls(team, dst, src, 2, 3, 2) == 0, "%s: alltoalls", what);
    get_dst();
    for (int j = 0; j < size; j++)
        for (int i = 0; i < 2; i++)
            MPE_CHECK(hdst[(j * 2 + i) * 2] == value_of(world_of(team, j), (my * 2 + i) * 3),
                      "%s: alltoalls", what);

    /* reductions: sum and max of world numbers, and of the in-place kind */
    long expect_sum = 0, expect_max = -1;
    for (int j = 0; j < size; j++) {
        expect_sum += world_of(team, j);
        if (world_of(team, j) > expect_max)
            expect_max = world_of(team, j);
    }
    for (int i = 0; i < N; i++)
        hsrc[i] = me + i;
    put_src();
    skew(round + 3);
    MPE_CHECK(shmem_long_sum_reduce(team, dst, src, N) == 0, "%s: sum_reduce", what);
    get_dst();
    for (int i = 0; i < N; i++)
        MPE_CHECK(hdst[i] == expect_sum + (long)i * size, "%s: sum [%d] = %ld, not %ld", what, i,
                  hdst[i], expect_sum + (long)i * size);
    MPE_CHECK(shmem_long_max_reduce(team, src, src, N) == 0, "%s: max_reduce", what);
    get_src();
    for (int i = 0; i < N; i++)
        MPE_CHECK(hsrc[i] == expect_max + i, "%s: in-place max [%d] = %ld", what, i, hsrc[i]);

    /* 1.6 scans, inclusive and exclusive, in member order */
    for (int i = 0; i < N; i++)
        hsrc[i] = (long)(world_of(team, my) + 1) * (i + 1);
    put_src();
    MPE_CHECK(shmem_long_sum_inscan(team, dst, src, N) == 0, "%s: inscan", what);
    MPE_CHECK(shmem_long_sum_exscan(team, src, src, N) == 0, "%s: in-place exscan", what);
    get_dst();
    get_src();
    long below = 0;
    for (int j = 0; j < my; j++)
        below += world_of(team, j) + 1;
    for (int i = 0; i < N; i++) {
        long ex = below * (i + 1), in = ex + (long)(me + 1) * (i + 1);
        MPE_CHECK(hdst[i] == in, "%s: inscan [%d] = %ld, not %ld", what, i, hdst[i], in);
        MPE_CHECK(hsrc[i] == ex, "%s: exscan [%d] = %ld, not %ld", what, i, hsrc[i], ex);
    }

    MPE_CHECK(shmem_team_sync(team) == 0, "%s: team_sync", what);
    MPE_CHECK((shmem_sync)(team) == 0, "%s: shmem_sync", what);
}

static void check_invalid(void)
{
    shmem_team_t t = SHMEM_TEAM_WORLD;
    shmem_team_config_t config = {0};
    long one = 1, out;
    MPE_CHECK(shmem_team_my_pe(SHMEM_TEAM_INVALID) == -1, "my_pe of an invalid team");
    MPE_CHECK(shmem_team_n_pes(SHMEM_TEAM_INVALID) == -1, "n_pes of an invalid team");
    MPE_CHECK(shmem_team_translate_pe(SHMEM_TEAM_INVALID, 0, SHMEM_TEAM_WORLD) == -1,
              "translate from an invalid team");
    MPE_CHECK(shmem_team_translate_pe(SHMEM_TEAM_WORLD, npes, SHMEM_TEAM_WORLD) == -1,
              "translate of PE %d", npes);
    MPE_CHECK(shmem_team_get_config(SHMEM_TEAM_INVALID, 0, &config) != 0, "config of invalid");
    MPE_CHECK(shmem_team_split_strided(SHMEM_TEAM_INVALID, 0, 1, 1, NULL, 0, &t) != 0 &&
                  t == SHMEM_TEAM_INVALID,
              "split of an invalid parent");
    t = SHMEM_TEAM_WORLD;
    /* past the end, stride 0 with several PEs, a reversed run below 0 */
    MPE_CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, npes + 1, NULL, 0, &t) != 0 &&
                  t == SHMEM_TEAM_INVALID,
              "split past the end");
    MPE_CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 0, 2, NULL, 0, &t) != 0,
              "stride 0 with 2 PEs");
    MPE_CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, -1, 2, NULL, 0, &t) != 0,
              "reversed below 0");
    MPE_CHECK(shmem_long_sum_reduce(SHMEM_TEAM_INVALID, &out, &one, 1) != 0,
              "reduce on an invalid team");
    MPE_CHECK(shmem_team_sync(SHMEM_TEAM_INVALID) != 0, "sync on an invalid team");
    MPE_CHECK(shmem_team_ptr(SHMEM_TEAM_INVALID, &one, 0) == NULL, "team_ptr of invalid");
    shmem_team_destroy(SHMEM_TEAM_INVALID); /* does nothing */
}

int main(void)
{
    shmem_init();
    me = shmem_my_pe();
    npes = shmem_n_pes();
    src = shmem_malloc(N * sizeof(long) * (size_t)npes);
    dst = shmem_malloc(N * sizeof(long) * (size_t)npes);
    hsrc = malloc(N * sizeof(long) * (size_t)npes);
    hdst = malloc(N * sizeof(long) * (size_t)npes);
    MPE_CHECK(src && dst && hsrc && hdst, "allocation");

    MPE_CHECK(shmem_team_n_pes(SHMEM_TEAM_WORLD) == npes, "world size");
    MPE_CHECK(shmem_team_my_pe(SHMEM_TEAM_WORLD) == me, "world rank");
    /* Under oshrun every PE maps every other of its (simulated) node; with
     * mapping off, only itself. */
    int shared = shmem_team_n_pes(SHMEM_TEAM_SHARED), node_first, node_size;
    mpe_sim_node_pes(&node_first, &node_size);
    MPE_CHECK(shared == (mpe_mapped() ? node_size : 1), "SHMEM_TEAM_SHARED has %d PEs", shared);
    MPE_CHECK(world_of(SHMEM_TEAM_SHARED, 0) == (mpe_mapped() ? node_first : me),
              "SHMEM_TEAM_SHARED starts at PE %d", world_of(SHMEM_TEAM_SHARED, 0));
    static long sym;
    for (int i = 0; i < shared; i++) {
        int pe = world_of(SHMEM_TEAM_SHARED, i);
        MPE_CHECK(shmem_team_ptr(SHMEM_TEAM_SHARED, &sym, i) == shmem_ptr(&sym, pe),
                  "team_ptr of shared member %d", i);
    }
    MPE_CHECK(shmem_team_ptr(SHMEM_TEAM_SHARED, &sym, shared) == NULL, "team_ptr past the end");
    exercise(SHMEM_TEAM_WORLD, "world", 0);
    exercise(SHMEM_TEAM_SHARED, "shared", 1);
    check_invalid();

    /* Evens and odds: every PE is in exactly one. */
    shmem_team_t even = SHMEM_TEAM_INVALID, odd = SHMEM_TEAM_INVALID;
    shmem_team_config_t config = {.num_contexts = 2};
    MPE_CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 2, (npes + 1) / 2, &config,
                                       SHMEM_TEAM_NUM_CONTEXTS, &even) == 0,
              "split evens");
    if (npes > 1)
        MPE_CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 1, 2, npes / 2, NULL, 0, &odd) == 0,
                  "split odds");
    shmem_team_t mine = me % 2 == 0 ? even : odd, other = me % 2 == 0 ? odd : even;
    MPE_CHECK(mine != SHMEM_TEAM_INVALID && other == SHMEM_TEAM_INVALID,
              "PE %d is in its parity's team only", me);
    MPE_CHECK(shmem_team_my_pe(mine) == me / 2, "parity rank %d", shmem_team_my_pe(mine));
    shmem_team_config_t got = {.num_contexts = -7};
    MPE_CHECK(shmem_team_get_config(mine, SHMEM_TEAM_NUM_CONTEXTS, &got) == 0 &&
                  got.num_contexts == (me % 2 == 0 ? 2 : 0),
              "num_contexts %d", got.num_contexts);

    /* The whole job in reverse order, and a team that leaves PE 0 out. */
    shmem_team_t rev = SHMEM_TEAM_INVALID, tail = SHMEM_TEAM_INVALID;
    MPE_CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, npes - 1, -1, npes, NULL, 0, &rev) == 0,
              "split reversed");
    MPE_CHECK(shmem_team_my_pe(rev) == npes - 1 - me, "reversed rank %d", shmem_team_my_pe(rev));
    if (npes > 2) {
        MPE_CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 1, 1, npes - 1, NULL, 0, &tail) == 0,
                  "split tail");
        MPE_CHECK((me == 0) == (tail == SHMEM_TEAM_INVALID), "PE %d and the tail team", me);
    }

    /* Collectives on overlapping teams, back to back, several rounds. */
    for (int round = 0; round < 3; round++) {
        exercise(mine, "parity team", round);
        exercise(rev, "reversed world", round);
        if (tail != SHMEM_TEAM_INVALID)
            exercise(tail, "tail", round);
        exercise(SHMEM_TEAM_WORLD, "world again", round);
    }

    /* A split of a split: every other member of the parity team. */
    shmem_team_t quarter = SHMEM_TEAM_INVALID;
    int psize = shmem_team_n_pes(mine);
    MPE_CHECK(shmem_team_split_strided(mine, 0, 2, (psize + 1) / 2, NULL, 0, &quarter) == 0,
              "split of a split");
    if (quarter != SHMEM_TEAM_INVALID) {
        MPE_CHECK(me % 4 == 0 || (me % 4 == 1), "PE %d in the quarter team", me);
        exercise(quarter, "quarter", 0);
        shmem_team_destroy(quarter);
    }

    /* 2-D splits: rows of xrange PEs and the columns across them. */
    for (int xrange = 1; xrange <= 3; xrange++) {
        shmem_team_t row, col;
        MPE_CHECK(shmem_team_split_2d(SHMEM_TEAM_WORLD, xrange, NULL, 0, &row, NULL, 0, &col) == 0,
                  "split_2d %d", xrange);
        int x = me % xrange, y = me / xrange;
        int rows = (npes + xrange - 1) / xrange;
        int row_size = (y == rows - 1) ? npes - y * xrange : xrange;
        MPE_CHECK(shmem_team_my_pe(row) == x && shmem_team_n_pes(row) == row_size,
                  "xrange %d: row rank %d of %d", xrange, shmem_team_my_pe(row),
                  shmem_team_n_pes(row));
        MPE_CHECK(shmem_team_my_pe(col) == y &&
                      shmem_team_n_pes(col) == (npes - x + xrange - 1) / xrange,
                  "xrange %d: column rank %d of %d", xrange, shmem_team_my_pe(col),
                  shmem_team_n_pes(col));
        exercise(row, "row", xrange);
        exercise(col, "column", xrange);
        shmem_team_destroy(row);
        shmem_team_destroy(col);
    }

    if (tail != SHMEM_TEAM_INVALID)
        shmem_team_destroy(tail);
    shmem_team_destroy(rev);
    shmem_team_destroy(mine);

    /* Creation and destruction leak nothing: many more cycles than the
     * table of live teams holds, with a collective on each. */
    for (int cycle = 0; cycle < 600; cycle++) {
        shmem_team_t t;
        MPE_CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, npes, NULL, 0, &t) == 0,
                  "cycle %d: split", cycle);
        MPE_CHECK(shmem_team_sync(t) == 0, "cycle %d: sync", cycle);
        shmem_team_destroy(t);
    }

    shmem_barrier_all();
    if (me == 0)
        printf("PE 0: team checks passed on %d PEs\n", npes);
    free(hdst);
    free(hsrc);
    shmem_free(dst);
    shmem_free(src);
    shmem_finalize();
    return 0;
}
