/* Status list: every code has a distinct name and message. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "src/common/status.h"

#define CODE(name, value, msg) USHMEM_##name,
static const ushmem_status_t all_codes[] = {USHMEMI_STATUS_LIST(CODE)};
#undef CODE
#define NCODES (sizeof(all_codes) / sizeof(all_codes[0]))

START_TEST(test_names_and_messages)
{
    ck_assert_str_eq(ushmemi_status_name(USHMEM_OK), "USHMEM_OK");
    ck_assert_str_eq(ushmemi_status_name(USHMEM_ERR_NO_MEMORY), "USHMEM_ERR_NO_MEMORY");
    ck_assert_str_eq(ushmemi_status_string(USHMEM_ERR_NO_MEMORY), "out of memory");
    ck_assert_str_eq(ushmemi_status_name((ushmem_status_t)-999), "USHMEM_ERR_UNKNOWN");
    ck_assert_str_eq(ushmemi_status_string((ushmem_status_t)-999), "unknown status");
}
END_TEST

START_TEST(test_distinct)
{
    for (size_t i = 0; i < NCODES; i++) {
        if (all_codes[i] != USHMEM_OK)
            ck_assert_int_lt(all_codes[i], 0);
        for (size_t j = i + 1; j < NCODES; j++) {
            ck_assert_int_ne(all_codes[i], all_codes[j]);
            ck_assert_str_ne(ushmemi_status_name(all_codes[i]), ushmemi_status_name(all_codes[j]));
            ck_assert_str_ne(ushmemi_status_string(all_codes[i]),
                             ushmemi_status_string(all_codes[j]));
        }
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("status");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_names_and_messages);
    tcase_add_test(tc, test_distinct);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
