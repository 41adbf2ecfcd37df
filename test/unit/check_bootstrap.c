/* The PMIx bootstrap. Run plainly it checks the single-PE mode and the
 * refusal to run as one PE when launcher variables point at no server; run
 * under a launcher (PMIX_RANK set) it checks identity and exchanges with the
 * real PMIx server. */
#include <check.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
