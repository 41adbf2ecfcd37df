/* Teams in device code (include/ushmem/device.h) on the cpu backend, where
 * device code is host threads: teams made on the host (SHMEM_TEAM_WORLD,
 * the even PEs, every PE in reverse, the rows and columns of a 2-D split,
 * a team of one) are named in device calls by their ids
 * (shmemx_team_id). Every PE checks the device's queries against the
 * host's, then runs each device collective on each team it belongs to
 * (alltoallmem, broadcastmem from the last member, fcollectmem, by one
 * thread and, where one thread is a block, by the _block forms) and
 * checks what it received. Team barriers on overlapping teams, one after
 * the other and between world barriers, and then back to back in an
 * order drawn the same on every PE with no other barrier between them,
 * must not let a member leave early; teams whose ids differ between their
 * members meet; teams made and destroyed many more times than the table
 * holds, and as many alive at once as it holds, keep working. Ids that
 * are not teams give -1 and move nothing. */
#include <shmem.h>
#include <shmemx.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ushmem/device.h>

#include "mpe_check.h"

#define N 5 /* longs per member in the data collectives */
#define ROUNDS 30
#define REMAKES 300 /* more than the 255 split teams the table holds */

static int me, npes;
static long *src, *dst;  /* symmetric: [npes * N] */
static long *arrivals;   /* symmetric: adds from the members of the barrier under test */
static long *after;      /* symmetric: a put from the member before, made before the barrier */
static long *counts;     /* symmetric: [MAXTEAMS] adds from the members of each team */
static int *ids;         /* symmetric: [npes] PE 0 gathers every PE's id of one team */
#define MAXTEAMS 16
#define STEPS 400 /* of the interleaved schedule */
#define ALIVE 240 /* teams alive at once, with the others: the table holds 255 */

static long value(int world_pe, int i)
{
    return 1000L * (world_pe + 1) + i;
}

/* The device's answers against the host's for team (id), every member. */
static void queries(shmem_team_t team, int id, const char *what)
{
    int size = shmem_team_n_pes(team);

    MPE_CHECK(ushmem_team_n_pes(id) == size, "%s (id %d): device n_pes %d, host %d", what, id,
              ushmem_team_n_pes(id), size);
    MPE_CHECK(ushmem_team_my_pe(id) == shmem_team_my_pe(team), "%s (id %d): device my_pe %d, host %d",
              what, id, ushmem_team_my_pe(id), shmem_team_my_pe(team));
    for (int i = -1; i <= size; i++) {
        int world = shmem_team_translate_pe(team, i, SHMEM_TEAM_WORLD);
        MPE_CHECK(ushmem_team_translate_pe(id, i, 0) == world,
                  "%s (id %d): member %d: device says world PE %d, host %d", what, id, i,
                  ushmem_team_translate_pe(id, i, 0), world);
        MPE_CHECK(i < 0 || i >= size || ushmem_team_translate_pe(0, world, id) == i,
                  "%s (id %d): world PE %d: device says member %d, want %d", what, id, world,
                  ushmem_team_translate_pe(0, world, id), i);
    }
    for (int pe = 0; pe < npes; pe++)
        MPE_CHECK(ushmem_team_translate_pe(0, pe, id) ==
                      shmem_team_translate_pe(SHMEM_TEAM_WORLD, pe, team),
                  "%s (id %d): world PE %d: device member %d, host %d", what, id, pe,
                  ushmem_team_translate_pe(0, pe, id),
                  shmem_team_translate_pe(SHMEM_TEAM_WORLD, pe, team));
}

static void fill(void)
{
    for (int i = 0; i < npes * N; i++) {
        src[i] = value(me, i);
        dst[i] = -1;
    }
    shmem_barrier_all(); /* nobody's collective writes dst before it is cleared */
}

/* Every device collective on team (id) by one thread, then by the block
 * forms, with the data each member receives checked. Members only. */
static void collectives(shmem_team_t team, int id, const char *what, int block)
{
    int size = shmem_team_n_pes(team), my = shmem_team_my_pe(team);
    int root = size - 1, root_pe = shmem_team_translate_pe(team, root, SHMEM_TEAM_WORLD);
    int rc;

    rc = block ? ushmemx_team_alltoallmem_block(id, dst, src, N * sizeof(long))
               : ushmemx_team_alltoallmem(id, dst, src, N * sizeof(long));
    MPE_CHECK(rc == 0, "%s: alltoallmem returned %d", what, rc);
    for (int j = 0; j < size; j++) {
        int pe = shmem_team_translate_pe(team, j, SHMEM_TEAM_WORLD);
        for (int i = 0; i < N; i++)
            MPE_CHECK(dst[j * N + i] == value(pe, my * N + i),
                      "%s: alltoall: element %d from member %d (PE %d): %ld, want %ld", what, i, j,
                      pe, dst[j * N + i], value(pe, my * N + i));
    }
    for (int i = size * N; i < npes * N; i++)
        MPE_CHECK(dst[i] == -1, "%s: alltoall wrote element %d, past the team", what, i);
    ushmem_team_sync(id); /* every member has checked before dst changes again */

    rc = block ? ushmemx_team_broadcastmem_block(id, dst, src + 1, 2 * sizeof(long), root)
               : ushmemx_team_broadcastmem(id, dst, src + 1, 2 * sizeof(long), root);
    MPE_CHECK(rc == 0, "%s: broadcastmem returned %d", what, rc);
    for (int i = 0; i < 2; i++)
        MPE_CHECK(dst[i] == value(root_pe, 1 + i), "%s: broadcast from member %d: %ld, want %ld",
                  what, root, dst[i], value(root_pe, 1 + i));
    ushmem_team_sync(id);

    rc = block ? ushmemx_team_fcollectmem_block(id, dst, src, N * sizeof(long))
               : ushmemx_team_fcollectmem(id, dst, src, N * sizeof(long));
    MPE_CHECK(rc == 0, "%s: fcollectmem returned %d", what, rc);
    for (int j = 0; j < size; j++) {
        int pe = shmem_team_translate_pe(team, j, SHMEM_TEAM_WORLD);
        for (int i = 0; i < N; i++)
            MPE_CHECK(dst[j * N + i] == value(pe, i),
                      "%s: fcollect: element %d from member %d (PE %d): %ld, want %ld", what, i, j,
                      pe, dst[j * N + i], value(pe, i));
    }
    if (block)
        rc = ushmemx_team_sync_block(id);
    else
        rc = ushmem_team_sync(id);
    MPE_CHECK(rc == 0, "%s: team sync returned %d", what, rc);
}

/* Nobody leaves a team barrier before every member has entered it: each
 * round every member adds one to every member's arrivals and puts the
 * round to the next member, then meets; afterwards both are complete. */
static void barrier_round(shmem_team_t team, int id, const char *what, long round)
{
    int size = shmem_team_n_pes(team), my = shmem_team_my_pe(team);
    int next = shmem_team_translate_pe(team, (my + 1) % size, SHMEM_TEAM_WORLD);
    int prev = shmem_team_translate_pe(team, (my + size - 1) % size, SHMEM_TEAM_WORLD);
    long before = ushmem_long_atomic_fetch(arrivals, me);

    ushmem_team_sync(id); /* every member has read its count */
    if ((me + round) % 3 == 0)
        usleep(100); /* members arrive at different times */
    for (int j = 0; j < size; j++)
        ushmem_long_atomic_add(arrivals, 1, shmem_team_translate_pe(team, j, SHMEM_TEAM_WORLD));
    ushmem_long_p(after, round * 1000 + me, next);
    MPE_CHECK(ushmemx_team_barrier(id) == 0, "%s: barrier on id %d failed", what, id);
    long got = ushmem_long_atomic_fetch(arrivals, me);
    MPE_CHECK(got == before + size, "%s: round %ld: %ld arrivals after the barrier, want %ld",
              what, round, got - before, (long)size);
    MPE_CHECK(*after == round * 1000 + prev, "%s: round %ld: the put before the barrier: %ld, "
              "want %ld", what, round, *after, round * 1000 + prev);
}

/* Barriers on the teams back to back, in an order drawn from a seed all
 * PEs share (a team's non-members skip its steps), with the world's
 * device barrier among them and nothing else between: a PE may enter the
 * next team's barrier while a peer is still leaving the last one. Before
 * each, every member adds one to every member's count for that team;
 * after it, this PE's count holds at least every add of that round. */
static void interleaved(const shmem_team_t *teams, int nteams)
{
    unsigned seed = 2026u, skew = 17u * (unsigned)me + 1u;
    long rounds[MAXTEAMS] = {0};

    for (int step = 0; step < STEPS; step++) {
        seed = seed * 1103515245u + 12345u;
        int k = (int)((seed >> 16) % (unsigned)(nteams + 1));
        if (k == nteams) { /* the world's own barrier */
            if ((seed >> 8) & 1)
                ushmem_barrier_all();
            else
                ushmem_sync_all();
            continue;
        }
        if (teams[k] == SHMEM_TEAM_INVALID)
            continue;
        int id = shmemx_team_id(teams[k]), size = shmem_team_n_pes(teams[k]);
        skew = skew * 1103515245u + 12345u;
        if ((skew >> 16) % 5 == 0)
            usleep((skew >> 20) % 200);
        for (int j = 0; j < size; j++)
            ushmem_long_atomic_add(&counts[k], 1,
                                   shmem_team_translate_pe(teams[k], j, SHMEM_TEAM_WORLD));
        rounds[k]++;
        MPE_CHECK(ushmemx_team_barrier(id) == 0, "step %d: barrier on id %d failed", step, id);
        long got = ushmem_long_atomic_fetch(&counts[k], me);
        MPE_CHECK(got >= rounds[k] * size, "step %d: team %d (id %d) left with %ld adds, want at "
                  "least %ld", step, k, id, got, rounds[k] * size);
    }
}

/* As many teams alive at once as the table holds besides those the
 * program keeps: the last id answers on the device, and a barrier on it
 * meets. */
static void many_alive(void)
{
    static shmem_team_t alive[ALIVE];
    int made = 0;

    for (int i = 0; i < ALIVE; i++) {
        alive[i] = SHMEM_TEAM_INVALID;
        if (shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, npes, NULL, 0, &alive[i]) != 0)
            break;
        made++;
    }
    MPE_CHECK(made == ALIVE, "only %d teams of %d could be made", made, ALIVE);
    int top = shmemx_team_id(alive[ALIVE - 1]);
    MPE_CHECK(ushmem_team_n_pes(top) == npes && ushmem_team_my_pe(top) == me,
              "id %d, the last team made: device says %d of %d", top, ushmem_team_my_pe(top),
              ushmem_team_n_pes(top));
    barrier_round(alive[ALIVE - 1], top, "the last of many teams", 1);
    barrier_round(alive[0], shmemx_team_id(alive[0]), "the first of many teams", 2);
    for (int i = ALIVE - 1; i >= 0; i--)
        shmem_team_destroy(alive[i]);
    MPE_CHECK(ushmem_team_n_pes(top) == -1, "id %d answers after its team was destroyed", top);
}

int main(void)
{
    shmem_init();
    me = shmem_my_pe();
    npes = shmem_n_pes();
    src = shmem_malloc((size_t)npes * N * sizeof(long));
    dst = shmem_malloc((size_t)npes * N * sizeof(long));
    arrivals = shmem_calloc(1, sizeof(long));
    after = shmem_calloc(1, sizeof(long));
    counts = shmem_calloc(MAXTEAMS, sizeof(long));
    ids = shmem_calloc((size_t)npes, sizeof(int));
    MPE_CHECK(src && dst && arrivals && after && counts && ids, "allocation failed");

    /* The teams: each PE keeps those it belongs to. */
    shmem_team_t even = SHMEM_TEAM_INVALID, reversed = SHMEM_TEAM_INVALID;
    shmem_team_t row = SHMEM_TEAM_INVALID, col = SHMEM_TEAM_INVALID, last = SHMEM_TEAM_INVALID;
    shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 2, (npes + 1) / 2, NULL, 0, &even);
    MPE_CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, npes - 1, -1, npes, NULL, 0,
                                       &reversed) == 0,
              "reversed split");
    MPE_CHECK(shmem_team_split_2d(SHMEM_TEAM_WORLD, 2, NULL, 0, &row, NULL, 0, &col) == 0,
              "2-D split");
    shmem_team_split_strided(SHMEM_TEAM_WORLD, npes - 1, 1, 1, NULL, 0, &last);
    struct {
        shmem_team_t team;
        const char *what;
    } teams[] = {{SHMEM_TEAM_WORLD, "world"}, {SHMEM_TEAM_SHARED, "shared"},
                 {even, "even PEs"},          {reversed, "reversed"},
                 {row, "2-D row"},            {col, "2-D column"},
                 {last, "the last PE alone"}};
    const int nteams = (int)(sizeof(teams) / sizeof(teams[0]));

    for (int k = 0; k < nteams; k++) {
        if (teams[k].team == SHMEM_TEAM_INVALID)
            continue;
        int id = shmemx_team_id(teams[k].team);
        queries(teams[k].team, id, teams[k].what);
    }
    /* The reversed team's id differs between members: the PEs outside
     * the even team made one team fewer before it. */
    shmem_int_p(&ids[me], shmemx_team_id(reversed), 0);
    shmem_barrier_all();
    if (me == 0 && npes > 1)
        MPE_CHECK(ids[0] != ids[1], "the reversed team has id %d on PE 0 and on PE 1: the test "
                  "means ids that differ", ids[0]);

    /* Not teams of this PE: no live team, out of range, NVSHMEM's
     * SAME_MYPE_NODE (which ushmem does not make). */
    fill();
    int bad[] = {-1, 3, 5, USHMEM_DEVICE_TEAMS - 1, USHMEM_DEVICE_TEAMS, 1 << 20};
    for (size_t b = 0; b < sizeof(bad) / sizeof(bad[0]); b++) {
        MPE_CHECK(ushmem_team_my_pe(bad[b]) == -1 && ushmem_team_n_pes(bad[b]) == -1 &&
                      ushmem_team_translate_pe(bad[b], 0, 0) == -1 &&
                      ushmem_team_translate_pe(0, 0, bad[b]) == -1,
                  "id %d is not a team here, but the device answers", bad[b]);
        MPE_CHECK(ushmem_team_sync(bad[b]) == -1 && ushmemx_team_barrier(bad[b]) == -1 &&
                      ushmemx_team_alltoallmem(bad[b], dst, src, 8) == -1 &&
                      ushmemx_team_broadcastmem(bad[b], dst, src, 8, 0) == -1 &&
                      ushmemx_team_fcollectmem(bad[b], dst, src, 8) == -1,
                  "a collective on id %d, not a team here, did not return -1", bad[b]);
    }
    MPE_CHECK(ushmemx_team_broadcastmem(0, dst, src, 8, npes) == -1 &&
                  ushmemx_team_broadcastmem(0, dst, src, 8, -1) == -1,
              "a broadcast from a root outside the world did not return -1");
    for (int i = 0; i < npes * N; i++)
        MPE_CHECK(dst[i] == -1, "element %d moved by a call that returned -1: %ld", i, dst[i]);

    /* Every collective on every team, one team after the other: each PE
     * takes part in the teams it belongs to, in the same order. */
    for (int block = 0; block < 2; block++)
        for (int k = 0; k < nteams; k++) {
            fill();
            if (teams[k].team != SHMEM_TEAM_INVALID)
                collectives(teams[k].team, shmemx_team_id(teams[k].team), teams[k].what, block);
        }
    shmem_barrier_all();

    /* Barriers on overlapping teams back to back, and the world's device
     * barrier between them, with PEs skewed. */
    for (long r = 1; r <= ROUNDS; r++) {
        for (int k = 0; k < nteams; k++) {
            if (teams[k].team != SHMEM_TEAM_INVALID)
                barrier_round(teams[k].team, shmemx_team_id(teams[k].team), teams[k].what,
                              r * nteams + k);
            if ((me + k + r) % 4 == 0)
                ushmem_barrier_all();
            else
                ushmem_sync_all();
        }
    }

    shmem_team_t sched[] = {even,
                            reversed, row, col, last, SHMEM_TEAM_SHARED};
    shmem_barrier_all();
    interleaved(sched, (int)(sizeof(sched) / sizeof(sched[0])));
    shmem_barrier_all();

    /* A team whose id differs between its members: the odd PEs made no
     * team of the even PEs, so they number the next one differently. */
    shmem_team_t all = SHMEM_TEAM_INVALID;
    MPE_CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, npes, NULL, 0, &all) == 0,
              "split of every PE");
    queries(all, shmemx_team_id(all), "every PE, split last");
    shmem_barrier_all();
    for (long r = 1; r <= ROUNDS; r++)
        barrier_round(all, shmemx_team_id(all), "every PE, split last", r);
    fill();
    collectives(all, shmemx_team_id(all), "every PE, split last", 0);
    int all_id = shmemx_team_id(all);
    shmem_team_destroy(all);
    MPE_CHECK(ushmem_team_n_pes(all_id) == -1 && ushmem_team_sync(all_id) == -1,
              "id %d still answers on the device after its team was destroyed", all_id);

    /* Made and destroyed many more times than the table holds. */
    for (int r = 0; r < REMAKES; r++) {
        shmem_team_t t = SHMEM_TEAM_INVALID;
        int start = r % npes, size = npes - start;
        shmem_team_split_strided(SHMEM_TEAM_WORLD, start, 1, size, NULL, 0, &t);
        if (t != SHMEM_TEAM_INVALID) {
            int id = shmemx_team_id(t);
            MPE_CHECK(ushmem_team_my_pe(id) == me - start && ushmem_team_n_pes(id) == size,
                      "remade team %d: device my_pe %d of %d", r, ushmem_team_my_pe(id),
                      ushmem_team_n_pes(id));
            barrier_round(t, id, "a remade team", r + 1);
            shmem_team_destroy(t);
        }
        shmem_barrier_all();
    }

    many_alive();

    shmem_team_destroy(last);
    shmem_team_destroy(col);
    shmem_team_destroy(row);
    shmem_team_destroy(reversed);
    shmem_team_destroy(even);
    shmem_free(ids);
    shmem_free(counts);
    shmem_free(after);
    shmem_free(arrivals);
    shmem_free(dst);
    shmem_free(src);
    shmem_finalize();
    return 0;
}
