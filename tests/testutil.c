/* testutil.c: helpers shared by the cmocka test programs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "testutil.h"

char *wh_test_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        fail_msg("cannot open %s", path);
    size_t cap = 4096, n = 0;
    char *p = malloc(cap);
    assert_non_null(p);
    size_t r;
    while ((r = fread(p + n, 1, cap - n - 1, f)) > 0) {
        n += r;
        if (cap - n - 1 == 0) {
            cap *= 2;
            p = realloc(p, cap);
            assert_non_null(p);
        }
    }
    fclose(f);
    p[n] = '\0';
    if (len)
        *len = n;
    return p;
}

char *wh_test_read_fixture(const char *rel, size_t *len)
{
    char path[1024];
    snprintf(path, sizeof(path), "%s/%s", WH_FIXTURES_DIR, rel);
    return wh_test_read_file(path, len);
}

cJSON *wh_test_parse(const char *text)
{
    cJSON *j = cJSON_Parse(text);
    if (!j)
        fail_msg("test JSON does not parse: %.200s", text);
    return j;
}
