/* Small collectives called back to back, the way benchmarks and solvers
 * call them: broadcast, collect, fcollect and reductions of 1 element to a
 * few pages, on the world team, on teams split from it and on deprecated
 * active sets, in a mixed order, with no barrier between calls, sources
 * overwritten as soon as a call returns and dest == source reductions.
 * Every PE checks every element of every result. Sizes straddle one and two
 * mailbox slots (4 KiB) and the largest size the mailboxes take (8 KiB), so
 * both roads of each collective run. Argument: rounds (default 400). */
#include <shmem.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpe_check.h"

#define MAX_ELEMS 1100 /* longs: 8800 bytes, past the mailboxes' 8 KiB */

static const size_t sizes[] = {1, 2, 8, 511, 512, 513, 1023, 1024, 1025, 1100};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

static int me, npes;
static long psync[SHMEM_REDUCE_SYNC_SIZE];
static long pwrk[SHMEM_REDUCE_MIN_WRKDATA_SIZE + MAX_ELEMS];

static long value(int pe, long round, size_t i)
{
    return (long)pe * 1000003L + round * 7919L + (long)i;
}

/* The team of this round: world, the even or odd PEs, or the first half. */
struct team_view {
    shmem_team_t team;
    int size, my_index;
    int start, stride; /* member k is world PE start + k * stride */
};

static shmem_team_t parity_team, half_team;

static void make_teams(void)
{
    int parity = me % 2;
    shmem_team_t evens = SHMEM_TEAM_INVALID, odds = SHMEM_TEAM_INVALID;
    MPE_CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 2, (npes + 1) / 2, NULL, 0,
                                       &evens) == 0, "split evens");
    if (npes > 1)
        MPE_CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 1, 2, npes / 2, NULL, 0, &odds) == 0,
                  "split odds");
    parity_team = parity == 0 ? evens : odds;
    half_team = SHMEM_TEAM_INVALID;
    int half = npes > 1 ? npes / 2 : 1;
    MPE_CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, half, NULL, 0, &half_team) == 0,
              "split half");
}

static int pick_team(long round, struct team_view *v)
{
    switch (round % 3) {
    case 1:
        v->team = parity_team;
        v->start = me % 2;
        v->stride = 2;
        v->size = me % 2 == 0 ? (npes + 1) / 2 : npes / 2;
        break;
    case 2:
        if (half_team == SHMEM_TEAM_INVALID)
            return 0;
        v->team = half_team;
        v->start = 0;
        v->stride = 1;
        v->size = npes > 1 ? npes / 2 : 1;
        break;
    default:
        v->team = SHMEM_TEAM_WORLD;
        v->start = 0;
        v->stride = 1;
        v->size = npes;
    }
    v->my_index = (me - v->start) / v->stride;
    return 1;
}

static int world_of(const struct team_view *v, int k) { return v->start + k * v->stride; }

int main(int argc, char **argv)
{
    long rounds = argc > 1 ? strtol(argv[1], NULL, 10) : 400;
    shmem_init();
    me = shmem_my_pe();
    npes = shmem_n_pes();
    for (int i = 0; i < SHMEM_REDUCE_SYNC_SIZE; i++)
        psync[i] = SHMEM_SYNC_VALUE;

    long *src = shmem_malloc(MAX_ELEMS * sizeof(long));
    long *dst = shmem_malloc(((size_t)MAX_ELEMS * (size_t)npes + 1) * sizeof(long));
    long *lens = malloc((size_t)npes * sizeof(long));
    MPE_CHECK(src != NULL && dst != NULL && lens != NULL, "allocation");
    make_teams();
    shmem_barrier_all();

    long checked = 0;
    for (long r = 0; r < rounds; r++) {
        struct team_view v;
        size_t n = sizes[(size_t)(r / 5) % NSIZES];
        int kind = (int)(r % 5);
        if (!pick_team(r, &v))
            continue;
        if (v.team == SHMEM_TEAM_INVALID)
            continue; /* not a member of this round's half */
        for (size_t i = 0; i < n; i++)
            src[i] = value(me, r, i);

        if (kind == 0) { /* broadcast from a root that moves */
            int root = (int)(r / 3 % v.size);
            memset(dst, 0, n * sizeof(long));
            MPE_CHECK(shmem_long_broadcast(v.team, dst, src, n, root) == 0, "broadcast rc");
            for (size_t i = 0; i < n; i++)
                MPE_CHECK(dst[i] == value(world_of(&v, root), r, i),
                          "round %ld: broadcast of %zu from member %d: [%zu] = %ld", r, n, root,
                          i, dst[i]);
        } else if (kind == 1) { /* fcollect */
            MPE_CHECK(shmem_long_fcollect(v.team, dst, src, n) == 0, "fcollect rc");
            for (int k = 0; k < v.size; k++)
                for (size_t i = 0; i < n; i++)
                    MPE_CHECK(dst[(size_t)k * n + i] == value(world_of(&v, k), r, i),
                              "round %ld: fcollect of %zu: member %d [%zu] = %ld", r, n, k, i,
                              dst[(size_t)k * n + i]);
        } else if (kind == 2) { /* collect: every member a different size */
            size_t mine = (n + (size_t)v.my_index * 37) % (MAX_ELEMS + 1);
            for (size_t i = 0; i < mine; i++)
                src[i] = value(me, r, i);
            MPE_CHECK(shmem_long_collect(v.team, dst, src, mine) == 0, "collect rc");
            size_t at = 0;
            for (int k = 0; k < v.size; k++) {
                size_t theirs = (n + (size_t)k * 37) % (MAX_ELEMS + 1);
                for (size_t i = 0; i < theirs; i++)
                    MPE_CHECK(dst[at + i] == value(world_of(&v, k), r, i),
                              "round %ld: collect: member %d's %zu [%zu] = %ld", r, k, theirs, i,
                              dst[at + i]);
                at += theirs;
            }
        } else if (kind == 3) { /* sum into a separate dest */
            MPE_CHECK(shmem_long_sum_reduce(v.team, dst, src, n) == 0, "sum rc");
            for (size_t i = 0; i < n; i++) {
                long want = 0;
                for (int k = 0; k < v.size; k++)
                    want += value(world_of(&v, k), r, i);
                MPE_CHECK(dst[i] == want, "round %ld: sum of %zu: [%zu] = %ld, want %ld", r, n, i,
                          dst[i], want);
            }
        } else { /* max in place, then a deprecated active-set sum */
            MPE_CHECK(shmem_long_max_reduce(v.team, src, src, n) == 0, "max rc");
            for (size_t i = 0; i < n; i++)
                MPE_CHECK(src[i] == value(world_of(&v, v.size - 1), r, i),
                          "round %ld: max in place of %zu: [%zu] = %ld", r, n, i, src[i]);
            for (size_t i = 0; i < n; i++)
                src[i] = value(me, r, i);
            if (v.team == SHMEM_TEAM_WORLD || v.stride == 2) {
                int log_stride = v.stride == 2 ? 1 : 0;
                shmem_long_sum_to_all(dst, src, (int)n, v.start, log_stride, v.size, pwrk, psync);
                for (size_t i = 0; i < n; i++) {
                    long want = 0;
                    for (int k = 0; k < v.size; k++)
                        want += value(world_of(&v, k), r, i);
                    MPE_CHECK(dst[i] == want, "round %ld: sum_to_all of %zu: [%zu] = %ld", r, n,
                              i, dst[i]);
                }
            }
        }
        /* Reuse the source at once: a member still reading it would see this. */
        for (size_t i = 0; i < MAX_ELEMS; i++)
            src[i] = -1;
        checked++;
    }
    shmem_barrier_all();
    if (me == 0)
        printf("mpe_coll_small: %ld rounds on %d PEs checked\n", checked, npes);
    free(lens);
    shmem_free(dst);
    shmem_free(src);
    shmem_finalize();
    return 0;
}
