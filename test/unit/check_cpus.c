/* The CPUs a PE may use: the cgroup v2 quota read from cpu.max up the
 * tree, the smallest level winning, rounded up to whole CPUs. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "src/common/cpus.h"

static char root[] = "/tmp/ushmem-cpus-XXXXXX";

static void put(const char *rel, const char *text)
{
    char path[512];
    snprintf(path, sizeof(path), "%s%s", root, rel);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

static void dir(const char *rel)
{
    char path[512];
    snprintf(path, sizeof(path), "%s%s", root, rel);
    ck_assert_int_eq(mkdir(path, 0700), 0);
}

static void setup(void)
{
    strcpy(root, "/tmp/ushmem-cpus-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(root));
    dir("/job");
    dir("/job/step");
}

static void teardown(void)
{
    char cmd[600];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
    ck_assert_int_eq(system(cmd), 0);
}

START_TEST(test_no_quota)
{
    put("/job/cpu.max", "max 100000\n");
    ck_assert_int_eq(ushmemi_cgroup_quota(root, "0::/job/step\n"), 0);
}
END_TEST

START_TEST(test_rounds_up)
{
    /* 1.5 CPUs: two can run at once, for 75% of the time each. */
    put("/job/step/cpu.max", "150000 100000\n");
    ck_assert_int_eq(ushmemi_cgroup_quota(root, "0::/job/step\n"), 2);
}
END_TEST

START_TEST(test_smallest_level_wins)
{
    put("/job/cpu.max", "50000 100000\n");
    put("/job/step/cpu.max", "400000 100000\n");
    ck_assert_int_eq(ushmemi_cgroup_quota(root, "0::/job/step"), 1);
    put("/job/cpu.max", "800000 100000\n");
    ck_assert_int_eq(ushmemi_cgroup_quota(root, "0::/job/step"), 4);
}
END_TEST

START_TEST(test_not_v2)
{
    put("/job/cpu.max", "50000 100000\n");
    ck_assert_int_eq(ushmemi_cgroup_quota(root, "4:cpu,cpuacct:/job"), 0);
    ck_assert_int_eq(ushmemi_cgroup_quota(root, "0::/nosuch"), 0);
    put("/job/step/cpu.max", "garbage\n");
    ck_assert_int_eq(ushmemi_cgroup_quota(root, "0::/job/step"), 1);
}
END_TEST

START_TEST(test_probe)
{
    struct ushmemi_cpus c;
    ushmemi_cpus_probe(&c);
    ck_assert_int_ge(c.affinity, 1);
    ck_assert_int_ge(c.usable, 1);
    ck_assert_int_le(c.usable, c.affinity);
    if (c.quota > 0)
        ck_assert_int_le(c.usable, c.quota);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("cpus");
    TCase *tc = tcase_create("core");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_no_quota);
    tcase_add_test(tc, test_rounds_up);
    tcase_add_test(tc, test_smallest_level_wins);
    tcase_add_test(tc, test_not_v2);
    tcase_add_test(tc, test_probe);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
