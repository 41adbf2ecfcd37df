/* A job started without a launcher, written as a user writes one: PE 0
 * makes a unique id and writes it to a file, the other PEs wait for the
 * file and read it, every PE calls ushmemx_init_uniqueid, checks each call,
 * and then works as after shmem_init: puts, gets, atomics, barriers and
 * collectives, with the data checked on every PE, and the peers' heaps
 * mapped (shmem_ptr) as under oshrun.
 *
 *   uid_job RANK NPES IDFILE [MODE]
 *
 * MODE (uid_test.sh runs them): work (the default), reinit (finalize and
 * initialise again, with the same id, with shmem_init and with a new id,
 * and a nested init), global-exit-K (PE K calls shmem_global_exit(3) while the others
 * wait in a barrier), kill-K (PE K kills itself while the others wait), exit-1
 * (PE 1 exits 5 without shmem_finalize), and the bad inputs: read (rank 0
 * reads the id instead of making it), make (this PE makes the id whatever
 * its rank), make-only (make the id, write it, sleep 30 s: a PE 0 that
 * never joins), null-id, empty-id, bad-version, bad-bytes. Exit 0 when every
 * check passed, 2 when ushmemx_init_uniqueid failed, 1 otherwise. */
#include <errno.h>
#include <shmem.h>
#include <shmemx.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int failures;

#define CHECK(cond, ...)                                                      \
    do {                                                                      \
        if (!(cond)) {                                                        \
            fprintf(stderr, "uid_job: PE %d: check failed at line %d: ", my_rank, __LINE__); \
            fprintf(stderr, __VA_ARGS__);                                     \
            fputc('\n', stderr);                                              \
            failures++;                                                       \
        }                                                                     \
    } while (0)

static int my_rank;

static int write_id(const char *path, const ushmemx_uniqueid_t *id)
{
    /* Written aside and renamed, so a reader never sees half an id. */
    char tmp[4096];
    snprintf(tmp, sizeof(tmp), "%s.part", path);
    FILE *f = fopen(tmp, "wb");
    if (f == NULL || fwrite(id, sizeof(*id), 1, f) != 1 || fclose(f) != 0) {
        perror("uid_job: writing the id");
        return -1;
    }
    if (rename(tmp, path) != 0) {
        perror("uid_job: renaming the id");
        return -1;
    }
    return 0;
}

static int read_id(const char *path, ushmemx_uniqueid_t *id)
{
    for (int tries = 0; tries < 3000; tries++) { /* 30 s */
        FILE *f = fopen(path, "rb");
        if (f != NULL) {
            size_t n = fread(id, sizeof(*id), 1, f);
            fclose(f);
            if (n == 1)
                return 0;
        } else if (errno != ENOENT) {
            perror("uid_job: reading the id");
            return -1;
        }
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    fprintf(stderr, "uid_job: PE %d: no id in %s after 30 s\n", my_rank, path);
    return -1;
}

static long value(int pe, int k) { return (long)pe * 1000 + k; }

/* The simulated node of a PE under USHMEM_SIM_NODES (consecutive ranks),
 * as if the job ran on several hosts: only a node's own PEs are mapped. */
static int sim_node(int pe, int npes)
{
    const char *text = getenv("USHMEM_SIM_NODES");
    long nodes = text != NULL ? strtol(text, NULL, 10) : 1;
    return nodes > 1 ? (int)((long)pe * nodes / npes) : 0;
}

/* One round of every kind of call, checked on every PE. */
static void work(int round)
{
    int me = shmem_my_pe(), n = shmem_n_pes();
    int next = (me + 1) % n, prev = (me + n - 1) % n;
    long *dst = shmem_calloc((size_t)n, sizeof(long));
    long *src = shmem_malloc(4 * sizeof(long));
    long *all = shmem_malloc(4 * sizeof(long) * (size_t)n);
    long *sum = shmem_malloc(sizeof(long));
    long *mine = shmem_malloc(sizeof(long));
    long *bcast = shmem_calloc(4, sizeof(long));
    long *counter = shmem_calloc(1, sizeof(long));
    CHECK(dst && src && all && sum && mine && bcast && counter, "shmem_malloc failed");
    if (failures)
        return;

    /* The local PEs' heaps are mapped, as under oshrun; the others not. */
    int local = 0;
    for (int pe = 0; pe < n; pe++) {
        int same = sim_node(pe, n) == sim_node(me, n);
        local += same;
        CHECK((shmem_ptr(dst, pe) != NULL) == same, "shmem_ptr(dst, %d) is %s", pe,
              same ? "NULL: a PE of this node is not mapped" : "mapped: a PE of another node");
    }
    CHECK(shmem_team_n_pes(SHMEM_TEAM_SHARED) == local, "SHMEM_TEAM_SHARED has %d PEs, not %d",
          shmem_team_n_pes(SHMEM_TEAM_SHARED), local);

    for (int k = 0; k < 4; k++)
        src[k] = value(me, k + round);
    shmem_barrier_all();

    /* Puts: every PE writes its slot on every PE. */
    for (int pe = 0; pe < n; pe++)
        shmem_long_put(&dst[me], &src[0], 1, pe);
    shmem_barrier_all();
    for (int pe = 0; pe < n; pe++)
        CHECK(dst[pe] == value(pe, round), "dst[%d] = %ld, not %ld", pe, dst[pe],
              value(pe, round));

    /* Gets from the next PE. */
    long got[4] = {0};
    shmem_long_get(got, src, 4, next);
    for (int k = 0; k < 4; k++)
        CHECK(got[k] == value(next, k + round), "got[%d] from PE %d = %ld, not %ld", k, next,
              got[k], value(next, k + round));
    CHECK(shmem_long_g(&src[3], prev) == value(prev, 3 + round), "shmem_long_g from PE %d",
          prev);

    /* Atomics: every PE adds to PE 0's counter and increments the next's. */
    long before = shmem_long_atomic_fetch_add(counter, me + 1, 0);
    CHECK(before >= 0, "fetch_add returned %ld", before);
    shmem_long_atomic_inc(counter, next);
    shmem_barrier_all();
    long want = me == 0 ? (long)n * (n + 1) / 2 + 1 : 1;
    CHECK(*counter == want, "counter = %ld, not %ld", *counter, want);
    CHECK(shmem_long_atomic_fetch(counter, 0) == (long)n * (n + 1) / 2 + 1,
          "PE 0's counter fetched as %ld", shmem_long_atomic_fetch(counter, 0));
    shmem_barrier_all();

    /* Collectives on the world team. */
    *mine = me + 1 + round;
    shmem_barrier_all();
    CHECK(shmem_long_sum_reduce(SHMEM_TEAM_WORLD, sum, mine, 1) == 0, "sum_reduce failed");
    CHECK(*sum == (long)n * (n + 1) / 2 + (long)n * round, "sum = %ld", *sum);
    CHECK(shmem_long_fcollect(SHMEM_TEAM_WORLD, all, src, 4) == 0, "fcollect failed");
    for (int pe = 0; pe < n; pe++)
        for (int k = 0; k < 4; k++)
            CHECK(all[pe * 4 + k] == value(pe, k + round), "fcollect all[%d] = %ld", pe * 4 + k,
                  all[pe * 4 + k]);
    CHECK(shmem_long_broadcast(SHMEM_TEAM_WORLD, bcast, src, 4, n - 1) == 0, "broadcast failed");
    for (int k = 0; k < 4; k++)
        CHECK(bcast[k] == value(n - 1, k + round), "bcast[%d] = %ld", k, bcast[k]);

    shmem_barrier_all();
    shmem_free(counter);
    shmem_free(bcast);
    shmem_free(mine);
    shmem_free(sum);
    shmem_free(all);
    shmem_free(src);
    shmem_free(dst);
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: uid_job RANK NPES IDFILE [MODE]\n");
        return 64;
    }
    int rank = atoi(argv[1]), npes = atoi(argv[2]);
    const char *path = argv[3], *mode = argc > 4 ? argv[4] : "work";
    my_rank = rank;
    setvbuf(stdout, NULL, _IOLBF, 0);

    ushmemx_uniqueid_t id = USHMEMX_UNIQUEID_INITIALIZER;
    int makes = (rank == 0 && strcmp(mode, "read") != 0) || strcmp(mode, "make") == 0;
    if (makes) {
        if (ushmemx_get_uniqueid(&id) != 0) {
            fprintf(stderr, "uid_job: PE %d: ushmemx_get_uniqueid failed\n", rank);
            return 2;
        }
        if (write_id(path, &id) != 0)
            return 1;
        if (strcmp(mode, "make-only") == 0) { /* a PE 0 that never comes */
            sleep(30);
            return 0;
        }
    } else if (strcmp(mode, "empty-id") != 0 && strcmp(mode, "null-id") != 0) {
        if (read_id(path, &id) != 0)
            return 1;
    }
    if (strcmp(mode, "bad-version") == 0)
        id.version = 77;
    if (strcmp(mode, "bad-bytes") == 0)
        id.internal[30] ^= 0x40;

    int rc = ushmemx_init_uniqueid(rank, npes, strcmp(mode, "null-id") == 0 ? NULL : &id);
    if (rc != 0) {
        fprintf(stderr, "uid_job: PE %d: ushmemx_init_uniqueid failed (%d)\n", rank, rc);
        return 2;
    }
    CHECK(shmem_my_pe() == rank, "shmem_my_pe() = %d", shmem_my_pe());
    CHECK(shmem_n_pes() == npes, "shmem_n_pes() = %d", shmem_n_pes());

    if (strncmp(mode, "global-exit-", 12) == 0 || strncmp(mode, "kill-", 5) == 0 ||
        strcmp(mode, "exit-1") == 0) {
        shmem_barrier_all();
        const char *dash = strrchr(mode, '-');
        int victim = atoi(dash + 1);
        if (rank == victim) {
            printf("uid_job: PE %d ends the job (%s)\n", rank, mode);
            if (strncmp(mode, "global-exit-", 12) == 0)
                shmem_global_exit(3);
            if (strcmp(mode, "exit-1") == 0)
                exit(5);
            raise(SIGKILL);
        }
        /* Waits for a PE that will never come: only the job's end ends it. */
        shmem_barrier_all();
        fprintf(stderr, "uid_job: PE %d left a barrier that PE %d never entered\n", rank, victim);
        return 1;
    }

    work(0);
    if (strcmp(mode, "reinit") == 0) {
        /* A nested init counts; its finalize is only a barrier. */
        CHECK(ushmemx_init_uniqueid(rank, npes, &id) == 0, "nested ushmemx_init_uniqueid");
        shmem_finalize();
        int initialized = 0;
        shmem_query_initialized(&initialized);
        CHECK(initialized == 1, "not initialized after a nested finalize");
        work(1);
        shmem_finalize();
        /* The same id again: the same PEs, the same ranks. */
        CHECK(ushmemx_init_uniqueid(rank, npes, &id) == 0, "ushmemx_init_uniqueid again");
        work(2);
        shmem_finalize();
        /* shmem_init after a unique-id job: the same PEs once more. */
        shmem_init();
        CHECK(shmem_my_pe() == rank && shmem_n_pes() == npes, "shmem_init made PE %d of %d",
              shmem_my_pe(), shmem_n_pes());
        work(3);
        shmem_finalize();
        /* A new id: a new job of the same processes (PE 0's old root
         * closes as it starts the new one). */
        char path2[4096];
        snprintf(path2, sizeof(path2), "%s.2", path);
        ushmemx_uniqueid_t id2 = USHMEMX_UNIQUEID_INITIALIZER;
        if (rank == 0 ? ushmemx_get_uniqueid(&id2) != 0 || write_id(path2, &id2) != 0
                      : read_id(path2, &id2) != 0) {
            fprintf(stderr, "uid_job: PE %d: no second id\n", rank);
            return 1;
        }
        if (ushmemx_init_uniqueid(rank, npes, &id2) != 0) {
            fprintf(stderr, "uid_job: PE %d: ushmemx_init_uniqueid with a new id failed\n", rank);
            return 2;
        }
        work(4);
    }
    shmem_finalize();
    if (failures) {
        fprintf(stderr, "uid_job: PE %d: %d checks failed\n", rank, failures);
        return 1;
    }
    printf("uid_job: PE %d of %d passed (%s)\n", rank, npes, mode);
    return 0;
}
