/* The bootstraps. Run plainly it checks PMIx's single-PE mode and its
 * refusal to run as one PE when launcher variables point at no server, and
 * the unique-id bootstrap (its ids and a job of forked PEs); run
 * under a launcher (PMIX_RANK set) it checks identity and exchanges with the
 * real PMIx server. */
#include <check.h>
#include <shmemx.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "src/common/log.h"
#include "src/host/bootstrap.h"

static bool under_launcher(void) { return getenv("PMIX_RANK") != NULL; }

START_TEST(singleton)
{
    struct ushmemi_bootstrap bs;
    ck_assert_int_eq(ushmemi_bootstrap_init(&bs), USHMEM_OK);
    ck_assert_int_eq(bs.singleton, 1);
    ck_assert_int_eq(bs.rank, 0);
    ck_assert_int_eq(bs.size, 1);
    ck_assert_int_eq(bs.local_size, 1);
    ck_assert_str_ne(bs.job_id, "");
    uint64_t mine = 0x1234, all = 0;
    ck_assert_int_eq(ushmemi_bootstrap_allgather(&bs, &mine, &all, sizeof(mine)), USHMEM_OK);
    ck_assert_uint_eq(all, 0x1234);
    ck_assert_int_eq(ushmemi_bootstrap_barrier(&bs), USHMEM_OK);
    ushmemi_bootstrap_finalize(&bs);
}
END_TEST

START_TEST(launcher_variables_without_server)
{
    struct ushmemi_bootstrap bs;
    setenv("OMPI_COMM_WORLD_SIZE", "4", 1);
    setenv("PMIX_NAMESPACE", "no-such-namespace", 1);
    setenv("PMIX_RANK", "2", 1);
    ck_assert_int_eq(ushmemi_bootstrap_init(&bs), USHMEM_ERR_BOOTSTRAP);
    unsetenv("OMPI_COMM_WORLD_SIZE");
    unsetenv("PMIX_NAMESPACE");
    unsetenv("PMIX_RANK");
}
END_TEST

START_TEST(job_exchange)
{
    struct ushmemi_bootstrap bs;
    ck_assert_int_eq(ushmemi_bootstrap_init(&bs), USHMEM_OK);
    ck_assert_int_eq(bs.singleton, 0);
    ck_assert_int_eq(bs.rank, atoi(getenv("PMIX_RANK")));
    ck_assert_int_ge(bs.size, 1);
    ck_assert_int_lt(bs.rank, bs.size);
    ck_assert_int_lt(bs.local_rank, bs.local_size);
    /* One node: local numbering is the world numbering. */
    ck_assert_int_eq(bs.local_size, bs.size);
    ck_assert_int_eq(bs.local_rank, bs.rank);

    /* Repeated exchanges of different sizes keep their keys apart. */
    for (int round = 0; round < 5; round++) {
        size_t len = 8 + (size_t)round * 1000;
        char *mine = malloc(len), *all = malloc(len * (size_t)bs.size);
        for (size_t i = 0; i < len; i++)
            mine[i] = (char)(bs.rank * 31 + round * 7 + (int)i);
        ck_assert_int_eq(ushmemi_bootstrap_allgather(&bs, mine, all, len), USHMEM_OK);
        for (int r = 0; r < bs.size; r++)
            for (size_t i = 0; i < len; i++)
                ck_assert_int_eq(all[(size_t)r * len + i], (char)(r * 31 + round * 7 + (int)i));
        free(mine);
        free(all);
        ck_assert_int_eq(ushmemi_bootstrap_barrier(&bs), USHMEM_OK);
    }
    ushmemi_bootstrap_finalize(&bs);
}
END_TEST

/* The unique-id bootstrap, one PE: the id, the star of one, exchanges. */
START_TEST(uid_single)
{
    ushmemx_uniqueid_t id = USHMEMX_UNIQUEID_INITIALIZER;
    ck_assert_int_eq(ushmemx_get_uniqueid(&id), 0);
    ck_assert_int_eq(id.version, USHMEMX_UNIQUEID_VERSION);
    struct ushmemi_bootstrap bs;
    ck_assert_int_eq(ushmemi_bootstrap_uid_init(&bs, "test", 0, 1, &id), USHMEM_OK);
    ck_assert_int_eq(bs.rank, 0);
    ck_assert_int_eq(bs.size, 1);
    ck_assert_int_eq(bs.local_rank, 0);
    ck_assert_int_eq(bs.local_size, 1);
    ck_assert_int_eq(bs.node_id, 0);
    ck_assert_int_eq(strncmp(bs.job_id, "uid-", 4), 0);
    ck_assert(ushmemi_bootstrap_uid_same(&bs, &id));
    uint64_t mine = 0x1234, all = 0;
    ck_assert_int_eq(ushmemi_bootstrap_allgather(&bs, &mine, &all, sizeof(mine)), USHMEM_OK);
    ck_assert_uint_eq(all, 0x1234);
    ck_assert_int_eq(ushmemi_bootstrap_barrier(&bs), USHMEM_OK);
    ushmemi_bootstrap_finalize(&bs);
    ck_assert_ptr_null(bs.ops);
}
END_TEST

/* Ids that are not: each refused with a message, never used. */
START_TEST(uid_bad_ids)
{
    ushmemx_uniqueid_t id = USHMEMX_UNIQUEID_INITIALIZER;
    ck_assert_int_eq(ushmemi_bootstrap_uid_check("test", 0, 1, NULL), USHMEM_ERR_INVALID_PARAM);
    ck_assert_int_eq(ushmemi_bootstrap_uid_check("test", 0, 1, &id), USHMEM_ERR_INVALID_PARAM);
    ck_assert_int_eq(ushmemx_get_uniqueid(&id), 0);
    ck_assert_int_eq(ushmemi_bootstrap_uid_check("test", 0, 1, &id), USHMEM_OK);
    ck_assert_int_eq(ushmemi_bootstrap_uid_check("test", 1, 1, &id), USHMEM_ERR_INVALID_PARAM);
    ck_assert_int_eq(ushmemi_bootstrap_uid_check("test", 0, 0, &id), USHMEM_ERR_INVALID_PARAM);
    ck_assert_int_eq(ushmemx_get_uniqueid(&id), 0);
    int level = ushmemi_log_level;
    ushmemi_log_level = -1; /* 124 times the same message */
    for (size_t i = 0; i < sizeof(id.internal); i++) {
        ushmemx_uniqueid_t bad = id;
        bad.internal[i] ^= 1; /* every byte is covered by the check word */
        ck_assert_int_eq(ushmemi_bootstrap_uid_check("test", 0, 1, &bad),
                         USHMEM_ERR_INVALID_PARAM);
    }
    ushmemi_log_level = level;
    id.version = 2;
    ck_assert_int_eq(ushmemi_bootstrap_uid_check("test", 0, 1, &id), USHMEM_ERR_INVALID_PARAM);
    ck_assert_int_eq(ushmemx_get_uniqueid(NULL), -1);
}
END_TEST

/* Three PEs forked after the id was made (as a Python launcher with fork
 * does): the child of rank 0 holds the inherited listening socket and is
 * the root. Exchanges of several sizes repeat, as in job_exchange. */
static int uid_child(int rank, int npes, const ushmemx_uniqueid_t *id)
{
    struct ushmemi_bootstrap bs;
    if (ushmemi_bootstrap_uid_init(&bs, "test", rank, npes, id) != USHMEM_OK)
        return 10;
    if (bs.rank != rank || bs.size != npes || bs.local_size != npes || bs.local_rank != rank)
        return 11;
    for (int round = 0; round < 5; round++) {
        size_t len = 8 + (size_t)round * 1000;
        char *mine = malloc(len), *all = malloc(len * (size_t)npes);
        if (mine == NULL || all == NULL)
            return 12;
        for (size_t i = 0; i < len; i++)
            mine[i] = (char)(rank * 31 + round * 7 + (int)i);
        if (ushmemi_bootstrap_allgather(&bs, mine, all, len) != USHMEM_OK)
            return 13;
        for (int r = 0; r < npes; r++)
            for (size_t i = 0; i < len; i++)
                if (all[(size_t)r * len + i] != (char)(r * 31 + round * 7 + (int)i))
                    return 14;
        free(mine);
        free(all);
        if (ushmemi_bootstrap_barrier(&bs) != USHMEM_OK)
            return 15;
    }
    ushmemi_bootstrap_finalize(&bs);
    return 0;
}

START_TEST(uid_forked_job)
{
    enum { NPES = 3 };
    ushmemx_uniqueid_t id = USHMEMX_UNIQUEID_INITIALIZER;
    ck_assert_int_eq(ushmemx_get_uniqueid(&id), 0);
    pid_t pids[NPES];
    for (int r = 0; r < NPES; r++) {
        pids[r] = fork();
        ck_assert_int_ge(pids[r], 0);
        if (pids[r] == 0)
            _exit(uid_child(r, NPES, &id));
    }
    for (int r = 0; r < NPES; r++) {
        int status = 0;
        ck_assert_int_eq(waitpid(pids[r], &status, 0), pids[r]);
        ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                      "PE %d ended with status 0x%x", r, status);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("bootstrap");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 30);
    if (under_launcher()) {
        tcase_add_test(tc, job_exchange);
    } else {
        tcase_add_test(tc, singleton);
        tcase_add_test(tc, launcher_variables_without_server);
        tcase_add_test(tc, uid_single);
        tcase_add_test(tc, uid_bad_ids);
        tcase_add_test(tc, uid_forked_job);
    }
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    /* PMIx connects once per process: no fork per test under a launcher. */
    if (under_launcher())
        srunner_set_fork_status(sr, CK_NOFORK);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
