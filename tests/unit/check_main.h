/* check_main.h - what every Check unit test's main() does: run the suite,
 * exit non-zero when any test failed. */
#ifndef TILEC_CHECK_MAIN_H
#define TILEC_CHECK_MAIN_H

#include <check.h>
#include <stdlib.h>

static inline int tc_check_run(Suite *s)
{
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

#endif
