/* Contexts: shmem_ctx_create and shmem_team_create_ctx, every kind of
 * context call (RMA, strided and block RMA, atomics, signals, fence, quiet,
 * pe_quiet) with PE numbers taken in the context's team, contexts used by
 * several threads at once, destruction (with the team's), and the 1.6
 * additions that go with them (signal_add and signal_set, ibput and ibget,
 * sessions, nested init). Every PE checks the data it receives. */
#include <pthread.h>
#include <shmem.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "mpe_check.h"

#define THREADS 4
#define PER_THREAD 256

static int me, npes;
static long data[THREADS][PER_THREAD]; /* symmetric: the data segment */
static long counter;
static uint64_t sig;
static int ib_src[64], ib_dst[64];

struct worker {
    int id;
    shmem_ctx_t ctx;
};

/* Each thread puts its slice to the right neighbour through its own
 * private context and completes it with that context's quiet. */
static void *work(void *arg)
{
    struct worker *w = arg;
    int right = (me + 1) % npes;
    long buf[PER_THREAD];
    for (int i = 0; i < PER_THREAD; i++)
        buf[i] = (long)me * 1000000 + w->id * 1000 + i;
    for (int i = 0; i < PER_THREAD; i += 16)
        shmem_ctx_long_put_nbi(w->ctx, &data[w->id][i], &buf[i], 16, right);
    shmem_ctx_long_atomic_add(w->ctx, &counter, 1, right);
    shmem_ctx_quiet(w->ctx);
    return NULL;
}

static void threads_with_private_contexts(void)
{
    int provided = -1;
    shmem_query_thread(&provided);
    MPE_CHECK(provided == SHMEM_THREAD_MULTIPLE, "thread level %d", provided);
    memset(data, 0, sizeof(data));
    counter = 0;
    shmem_barrier_all();
    struct worker workers[THREADS];
    pthread_t tids[THREADS];
    for (int t = 0; t < THREADS; t++) {
        workers[t].id = t;
        MPE_CHECK(shmem_ctx_create(SHMEM_CTX_PRIVATE, &workers[t].ctx) == 0, "ctx_create %d", t);
        MPE_CHECK(pthread_create(&tids[t], NULL, work, &workers[t]) == 0, "thread %d", t);
    }
    for (int t = 0; t < THREADS; t++)
        pthread_join(tids[t], NULL);
    for (int t = 0; t < THREADS; t++)
        shmem_ctx_destroy(workers[t].ctx);
    shmem_barrier_all();
    int left = (me - 1 + npes) % npes;
    for (int t = 0; t < THREADS; t++)
        for (int i = 0; i < PER_THREAD; i++)
            MPE_CHECK(data[t][i] == (long)left * 1000000 + t * 1000 + i,
                      "thread %d element %d = %ld", t, i, data[t][i]);
    MPE_CHECK(counter == THREADS, "counter %ld, not %d", counter, THREADS);
}

/* A context on a team takes the team's PE numbers: put, get, atomics and
 * signals through it land on the world PE the team names. */
static void team_context(shmem_team_t team, const char *what)
{
    shmem_ctx_t ctx;
    MPE_CHECK(shmem_team_create_ctx(team, SHMEM_CTX_SERIALIZED, &ctx) == 0, "%s: create", what);
    shmem_team_t back;
    MPE_CHECK(shmem_ctx_get_team(ctx, &back) == 0 && back == team, "%s: get_team", what);
    int size = shmem_team_n_pes(team), my = shmem_team_my_pe(team);
    int next = (my + 1) % size, prev = (my - 1 + size) % size;
    int prev_world = shmem_team_translate_pe(team, prev, SHMEM_TEAM_WORLD);

    memset(data, 0, sizeof(data));
    counter = 0;
    sig = 0;
    shmem_team_sync(team);

    long mine[8];
    for (int i = 0; i < 8; i++)
        mine[i] = me * 100 + i;
    shmem_ctx_long_put(ctx, data[0], mine, 8, next);
    shmem_ctx_long_p(ctx, &data[1][0], me, next);
    shmem_ctx_long_iput(ctx, data[2], mine, 2, 1, 4, next);
    shmem_ctx_putmem_nbi(ctx, data[3], mine, sizeof(mine), next);
    shmem_ctx_long_atomic_fetch_add(ctx, &counter, me + 1, next);
    shmem_ctx_long_atomic_inc(ctx, &counter, next);
    shmem_ctx_fence(ctx);
    shmem_ctx_long_put_signal(ctx, &data[3][16], mine, 1, &sig, 1, SHMEM_SIGNAL_ADD, next);
    shmem_ctx_signal_add(ctx, &sig, 10, next);
    shmem_ctx_quiet(ctx);
    shmem_signal_wait_until(&sig, SHMEM_CMP_EQ, 11);
    shmem_team_sync(team);

    for (int i = 0; i < 8; i++) {
        MPE_CHECK(data[0][i] == prev_world * 100 + i, "%s: put [%d] = %ld", what, i, data[0][i]);
        MPE_CHECK(data[3][i] == prev_world * 100 + i, "%s: putmem_nbi [%d]", what, i);
    }
    MPE_CHECK(data[1][0] == prev_world, "%s: p = %ld", what, data[1][0]);
    for (int i = 0; i < 4; i++)
        MPE_CHECK(data[2][2 * i] == prev_world * 100 + i, "%s: iput [%d]", what, 2 * i);
    MPE_CHECK(data[3][16] == prev_world * 100, "%s: put_signal data", what);
    MPE_CHECK(counter == prev_world + 2, "%s: counter %ld, not %d", what, counter, prev_world + 2);
    MPE_CHECK(shmem_ctx_long_g(ctx, &data[0][3], next) == me * 100 + 3, "%s: g", what);
    long got[8];
    shmem_ctx_long_get(ctx, got, data[0], 8, prev);
    int prev_prev = shmem_team_translate_pe(team, (prev - 1 + size) % size, SHMEM_TEAM_WORLD);
    for (int i = 0; i < 8; i++)
        MPE_CHECK(got[i] == prev_prev * 100 + i, "%s: get [%d] = %ld", what, i, got[i]);
    long prev_counter = shmem_ctx_long_atomic_fetch(ctx, &counter, prev);
    MPE_CHECK(prev_counter == prev_prev + 2, "%s: atomic_fetch from member %d = %ld", what, prev,
              prev_counter);
    int targets[2] = {next, prev};
    shmem_ctx_pe_quiet(ctx, targets, 2);
    shmem_team_sync(team);
    shmem_ctx_destroy(ctx);
}

static void block_transfers(void)
{
    int right = (me + 1) % npes, left = (me - 1 + npes) % npes;
    for (int i = 0; i < 64; i++) {
        ib_src[i] = me * 1000 + i;
        ib_dst[i] = -1;
    }
    shmem_barrier_all();
    /* 4 blocks of 3 ints: source every 5th, dest every 8th */
    shmem_int_ibput(ib_dst, ib_src, 8, 5, 3, 4, right);
    shmem_barrier_all();
    for (int b = 0; b < 4; b++)
        for (int i = 0; i < 8; i++) {
            int expect = i < 3 ? left * 1000 + b * 5 + i : -1;
            MPE_CHECK(ib_dst[b * 8 + i] == expect, "ibput block %d [%d] = %d, not %d", b, i,
                      ib_dst[b * 8 + i], expect);
        }
    int local[64];
    memset(local, 0xff, sizeof(local));
    shmem_ctx_ibget32(SHMEM_CTX_DEFAULT, local, ib_src, 4, 7, 2, 5, right);
    for (int b = 0; b < 5; b++)
        for (int i = 0; i < 4; i++) {
            int expect = i < 2 ? right * 1000 + b * 7 + i : -1;
            MPE_CHECK(local[b * 4 + i] == expect, "ibget block %d [%d] = %d, not %d", b, i,
                      local[b * 4 + i], expect);
        }
    shmem_barrier_all();
}

int main(void)
{
    int provided;
    shmem_init_thread(SHMEM_THREAD_MULTIPLE, &provided);
    /* 1.6: nested initialisation, each matched by a finalize */
    shmem_init();
    int initialized = 0;
    shmem_query_initialized(&initialized);
    MPE_CHECK(initialized, "query_initialized");
    me = shmem_my_pe();
    npes = shmem_n_pes();

    shmem_ctx_t ctx;
    MPE_CHECK(shmem_ctx_create(1L << 20, &ctx) != 0 && ctx == SHMEM_CTX_INVALID,
              "unknown option bits refused");
    shmem_team_t team;
    MPE_CHECK(shmem_team_create_ctx(SHMEM_TEAM_INVALID, 0, &ctx) != 0 && ctx == SHMEM_CTX_INVALID,
              "context on an invalid team");
    MPE_CHECK(shmem_ctx_get_team(SHMEM_CTX_INVALID, &team) != 0 && team == SHMEM_TEAM_INVALID,
              "team of an invalid context");
    MPE_CHECK(shmem_ctx_get_team(SHMEM_CTX_DEFAULT, &team) == 0 && team == SHMEM_TEAM_WORLD,
              "team of the default context");
    shmem_ctx_session_start(SHMEM_CTX_DEFAULT, SHMEM_CTX_SESSION_BATCH, NULL, 0);

    threads_with_private_contexts();
    block_transfers();
    team_context(SHMEM_TEAM_WORLD, "world");

    /* The world in reverse, and the PEs after the first: PE numbers of
     * their contexts differ from world numbers. */
    shmem_team_t rev, tail = SHMEM_TEAM_INVALID;
    MPE_CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, npes - 1, -1, npes, NULL, 0, &rev) == 0,
              "split reversed");
    team_context(rev, "reversed");
    if (npes > 2) {
        shmem_team_split_strided(SHMEM_TEAM_WORLD, 1, 1, npes - 1, NULL, 0, &tail);
        if (tail != SHMEM_TEAM_INVALID)
            team_context(tail, "tail");
    }

    /* Destroying a team destroys the contexts made on it. */
    shmem_ctx_t on_rev;
    MPE_CHECK(shmem_team_create_ctx(rev, 0, &on_rev) == 0, "context on reversed");
    shmem_team_destroy(rev);
    if (tail != SHMEM_TEAM_INVALID)
        shmem_team_destroy(tail);

    /* Many more contexts than the table holds, one after the other. */
    for (int i = 0; i < 3000; i++) {
        MPE_CHECK(shmem_ctx_create(SHMEM_CTX_NOSTORE, &ctx) == 0, "create %d", i);
        shmem_ctx_destroy(ctx);
    }
    shmem_ctx_session_stop(SHMEM_CTX_DEFAULT);

    shmem_finalize(); /* matches the nested shmem_init: the library stays up */
    shmem_query_initialized(&initialized);
    MPE_CHECK(initialized, "still initialised after the inner finalize");
    shmem_barrier_all();
    if (me == 0)
        printf("PE 0: context checks passed on %d PEs\n", npes);
    shmem_finalize();
    shmem_query_initialized(&initialized);
    if (initialized) {
        fprintf(stderr, "PE %d: still initialised after the last finalize\n", me);
        return 1;
    }
    return 0;
}
