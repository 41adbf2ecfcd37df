/* The variable table: parsers, defaults, malformed values, unknown names. */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "src/common/log.h"
#include "src/common/vars.h"

START_TEST(test_parse_size)
{
    size_t v = 0;
    ck_assert_int_eq(ushmemi_parse_size("0", &v), USHMEM_OK);
    ck_assert_uint_eq(v, 0);
    ck_assert_int_eq(ushmemi_parse_size("4096", &v), USHMEM_OK);
    ck_assert_uint_eq(v, 4096);
    ck_assert_int_eq(ushmemi_parse_size("12K", &v), USHMEM_OK);
    ck_assert_uint_eq(v, 12 * 1024);
    ck_assert_int_eq(ushmemi_parse_size("3m", &v), USHMEM_OK);
    ck_assert_uint_eq(v, 3u << 20);
    ck_assert_int_eq(ushmemi_parse_size("2GB", &v), USHMEM_OK);
    ck_assert_uint_eq(v, (size_t)2 << 30);
    ck_assert_int_eq(ushmemi_parse_size("1T", &v), USHMEM_OK);
    ck_assert_uint_eq(v, (size_t)1 << 40);

    ck_assert_int_eq(ushmemi_parse_size("1.5G", &v), USHMEM_OK);
    ck_assert_uint_eq(v, (size_t)3 << 29);
    ck_assert_int_eq(ushmemi_parse_size("0.5k", &v), USHMEM_OK);
    ck_assert_uint_eq(v, 512);
    ck_assert_int_eq(ushmemi_parse_size("2.5", &v), USHMEM_OK);
    ck_assert_uint_eq(v, 3); /* bytes round up */

    v = 77;
    ck_assert_int_eq(ushmemi_parse_size("1.G", &v), USHMEM_ERR_INVALID_VALUE);
    ck_assert_int_eq(ushmemi_parse_size("1.5.5G", &v), USHMEM_ERR_INVALID_VALUE);
    ck_assert_int_eq(ushmemi_parse_size("1.5e3", &v), USHMEM_ERR_INVALID_VALUE);
    ck_assert_int_eq(ushmemi_parse_size("12Q", &v), USHMEM_ERR_INVALID_VALUE);
    ck_assert_int_eq(ushmemi_parse_size("", &v), USHMEM_ERR_INVALID_VALUE);
    ck_assert_int_eq(ushmemi_parse_size("-1", &v), USHMEM_ERR_INVALID_VALUE);
    ck_assert_int_eq(ushmemi_parse_size("10 M", &v), USHMEM_ERR_INVALID_VALUE);
    ck_assert_int_eq(ushmemi_parse_size("99999999999999999999", &v), USHMEM_ERR_INVALID_VALUE);
    ck_assert_int_eq(ushmemi_parse_size("99999999999T", &v), USHMEM_ERR_INVALID_VALUE);
    ck_assert_uint_eq(v, 77); /* untouched on failure */
}
END_TEST

START_TEST(test_parse_bool_long)
{
    bool b = false;
    ck_assert_int_eq(ushmemi_parse_bool("yes", &b), USHMEM_OK);
    ck_assert(b);
    ck_assert_int_eq(ushmemi_parse_bool("0", &b), USHMEM_OK);
    ck_assert(!b);
    ck_assert_int_eq(ushmemi_parse_bool("TRUE", &b), USHMEM_OK);
    ck_assert(b);
    ck_assert_int_eq(ushmemi_parse_bool("maybe", &b), USHMEM_ERR_INVALID_VALUE);
    long l = 5;
    ck_assert_int_eq(ushmemi_parse_long("-12", &l), USHMEM_OK);
    ck_assert_int_eq(l, -12);
    ck_assert_int_eq(ushmemi_parse_long("12x", &l), USHMEM_ERR_INVALID_VALUE);
    ck_assert_int_eq(ushmemi_parse_long("", &l), USHMEM_ERR_INVALID_VALUE);
    ck_assert_int_eq(l, -12);
}
END_TEST

static void clear_env(void)
{
    unsetenv("SHMEM_SYMMETRIC_SIZE");
    unsetenv("SHMEM_DEBUG");
    unsetenv("USHMEM_FD_PASSING");
    unsetenv("USHMEM_NO_SUCH_THING");
    unsetenv("USHMEM_BOOTSTRAP_TIMEOUT");
    unsetenv("SHMEM_SYMETRIC_SIZE");
    unsetenv("SHMEM_NO_SUCH_THING");
    unsetenv("XSHMEM_SYMETRIC_SIZE");
}

START_TEST(test_defaults)
{
    clear_env();
    ck_assert_int_eq(ushmemi_vars_load(), USHMEM_OK);
    ck_assert_uint_eq(ushmemi_settings.symmetric_size, (size_t)512 << 20);
    ck_assert(!ushmemi_settings.debug);
    ck_assert_str_eq(ushmemi_settings.fd_passing, "auto");
    ck_assert_int_eq(ushmemi_settings.bootstrap_timeout, 60);
    ck_assert_int_eq(ushmemi_vars_unknown_count(), 0);
}
END_TEST

START_TEST(test_environment)
{
    clear_env();
    setenv("SHMEM_SYMMETRIC_SIZE", "64M", 1);
    setenv("SHMEM_DEBUG", "1", 1);
    setenv("USHMEM_FD_PASSING", "socket", 1);
    ck_assert_int_eq(ushmemi_vars_load(), USHMEM_OK);
    ck_assert_uint_eq(ushmemi_settings.symmetric_size, (size_t)64 << 20);
    ck_assert(ushmemi_settings.debug);
    ck_assert_str_eq(ushmemi_settings.fd_passing, "socket");
    clear_env();
}
END_TEST

/* Runs ushmemi_vars_load with stderr captured into buf. */
static ushmem_status_t load_captured(char *buf, size_t len)
{
    FILE *tmp = tmpfile();
    ck_assert_ptr_nonnull(tmp);
    int saved = dup(2);
    dup2(fileno(tmp), 2);
    ushmem_status_t status = ushmemi_vars_load();
    dup2(saved, 2);
    close(saved);
    rewind(tmp);
    size_t n = fread(buf, 1, len - 1, tmp);
    buf[n] = '\0';
    fclose(tmp);
    return status;
}

START_TEST(test_malformed_names_variable)
{
    char out[4096];
    clear_env();
    setenv("SHMEM_SYMMETRIC_SIZE", "12Q", 1);
    ck_assert_int_eq(load_captured(out, sizeof(out)), USHMEM_ERR_INVALID_VALUE);
    ck_assert_ptr_nonnull(strstr(out, "SHMEM_SYMMETRIC_SIZE=12Q"));
    clear_env();
    setenv("USHMEM_BOOTSTRAP_TIMEOUT", "soon", 1);
    ck_assert_int_eq(load_captured(out, sizeof(out)), USHMEM_ERR_INVALID_VALUE);
    ck_assert_ptr_nonnull(strstr(out, "USHMEM_BOOTSTRAP_TIMEOUT=soon"));
    clear_env();
}
END_TEST

START_TEST(test_unknown_warned)
{
    char out[4096];
    clear_env();
    setenv("USHMEM_NO_SUCH_THING", "1", 1);
    ck_assert_int_eq(load_captured(out, sizeof(out)), USHMEM_OK);
    ck_assert_int_eq(ushmemi_vars_unknown_count(), 1);
    ck_assert_ptr_nonnull(strstr(out, "USHMEM_NO_SUCH_THING"));
    clear_env();
}
END_TEST

/* The OpenSHMEM names are checked too: a typo in SHMEM_SYMMETRIC_SIZE would
 * otherwise run with the default heap, and the warning names the variable
 * it nearly spells. */
START_TEST(test_unknown_standard_warned)
{
    char out[4096];
    clear_env();
    setenv("SHMEM_SYMETRIC_SIZE", "1G", 1);
    ck_assert_int_eq(load_captured(out, sizeof(out)), USHMEM_OK);
    ck_assert_int_eq(ushmemi_vars_unknown_count(), 1);
    ck_assert_ptr_nonnull(strstr(out, "unknown variable SHMEM_SYMETRIC_SIZE is ignored; did you "
                                      "mean SHMEM_SYMMETRIC_SIZE?"));
    ck_assert_uint_eq(ushmemi_settings.symmetric_size, (size_t)512 << 20);
    clear_env();

    /* Far from every known name: warned, with no suggestion. */
    setenv("SHMEM_NO_SUCH_THING", "1", 1);
    ck_assert_int_eq(load_captured(out, sizeof(out)), USHMEM_OK);
    ck_assert_int_eq(ushmemi_vars_unknown_count(), 1);
    ck_assert_ptr_nonnull(strstr(out, "unknown variable SHMEM_NO_SUCH_THING is ignored ("));
    clear_env();

    /* Other prefixes belong to other software. */
    setenv("XSHMEM_SYMETRIC_SIZE", "1", 1);
    ck_assert_int_eq(load_captured(out, sizeof(out)), USHMEM_OK);
    ck_assert_int_eq(ushmemi_vars_unknown_count(), 0);
    ck_assert_ptr_null(strstr(out, "XSHMEM"));
    clear_env();
}
END_TEST

START_TEST(test_listing)
{
    char *buf = NULL;
    size_t len = 0;
    clear_env();
    ushmemi_vars_load();
    FILE *mem = open_memstream(&buf, &len);
    ushmemi_vars_print(mem);
    fclose(mem);
    ck_assert_ptr_nonnull(strstr(buf, "SHMEM_SYMMETRIC_SIZE"));
    ck_assert_ptr_nonnull(strstr(buf, "USHMEM_FD_PASSING"));
    ck_assert_ptr_nonnull(strstr(buf, "default 512M"));
    free(buf);
}
END_TEST

START_TEST(test_log_levels)
{
    ck_assert_int_eq(ushmemi_log_parse_level("debug"), USHMEMI_LOG_DEBUG);
    ck_assert_int_eq(ushmemi_log_parse_level("WARN"), USHMEMI_LOG_WARN);
    ck_assert_int_eq(ushmemi_log_parse_level("4"), USHMEMI_LOG_TRACE);
    ck_assert_int_eq(ushmemi_log_parse_level("loud"), -1);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("vars");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_parse_size);
    tcase_add_test(tc, test_parse_bool_long);
    tcase_add_test(tc, test_defaults);
    tcase_add_test(tc, test_environment);
    tcase_add_test(tc, test_malformed_names_variable);
    tcase_add_test(tc, test_unknown_warned);
    tcase_add_test(tc, test_unknown_standard_warned);
    tcase_add_test(tc, test_listing);
    tcase_add_test(tc, test_log_levels);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
