/* casefilter.c: runs one case of a cmocka program, for the ctest entry of
 * that case (tests/CMakeLists.txt, wh_cmocka_cases, registers one entry per
 * case and names it in WH_TEST_CASE). Linked into every cmocka program as an
 * object, it sets cmocka's filter before main, so that the programs' mains
 * stay plain cmocka; without WH_TEST_CASE a program runs all its cases. An
 * entry whose case ran nothing fails (FAIL_REGULAR_EXPRESSION on cmocka's
 * "0 test(s) run"), so a renamed case cannot pass unseen. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>

__attribute__((constructor)) static void select_case(void)
{
    const char *name = getenv("WH_TEST_CASE");
    if (name && *name)
        cmocka_set_test_filter(name);
}
