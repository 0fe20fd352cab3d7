/* testutil.h: helpers shared by the cmocka test programs.
 * Include after <stdarg.h>, <stddef.h>, <setjmp.h>, <stdint.h> and <cmocka.h>. */
#ifndef WH_TESTUTIL_H
#define WH_TESTUTIL_H

#include <stddef.h> /* size_t */

struct cJSON;

/* Read a whole file; malloc'd, NUL-terminated; caller frees. Fails the test
 * on error. */
char *wh_test_read_file(const char *path, size_t *len);
/* Read tests/fixtures/<rel>. */
char *wh_test_read_fixture(const char *rel, size_t *len);
/* Parse JSON text or fail the test. Caller frees with cJSON_Delete. */
struct cJSON *wh_test_parse(const char *text);

#endif
