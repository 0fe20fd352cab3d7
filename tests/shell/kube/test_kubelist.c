/* test_kubelist.c: a List split into its items as its bytes arrive
 * (wh/kubelist.h), in pieces of every size; what is not a List of objects
 * refused with a reason. The paged LIST itself is tested against the fake
 * API server (tests/doctor/test_doctor_scale.py). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "wh/buf.h"
#include "wh/kubelist.h"

struct got {
    char items[8][256];
    size_t n;
    size_t stop_at; /* 0: never */
};

static int on_item(void *arg, const char *json, size_t len)
{
    struct got *g = arg;
    assert_true(len < sizeof(g->items[0]));
    memcpy(g->items[g->n], json, len);
    g->items[g->n][len] = '\0';
    g->n++;
    return g->stop_at && g->n == g->stop_at;
}

/* Feeds text in pieces of step bytes; the List without items, or NULL. */
static cJSON *split(const char *text, size_t step, struct got *g, char *why)
{
    struct wh_list_split s;
    memset(&s, 0, sizeof(s));
    wh_list_split_init(&s, on_item, g);
    size_t n = strlen(text);
    int rc = 0;
    for (size_t i = 0; i < n && !rc; i += step)
        rc = wh_list_split_feed(&s, text + i, i + step <= n ? step : n - i);
    cJSON *list = rc ? NULL : wh_list_split_end(&s);
    snprintf(why, 160, "%s", s.why);
    wh_list_split_free(&s);
    return list;
}

static const char LIST[] =
    "{\"kind\": \"PodList\", \"apiVersion\": \"v1\",\n"
    " \"metadata\": {\"resourceVersion\": \"7\", \"continue\": \"a]b}\\\"[\"},\n"
    " \"items\": [ {\"metadata\": {\"name\": \"p-0\"}, \"x\": [1, {\"y\": \"}]\\\\\"}]},\n"
    "  {\"metadata\": {\"name\": \"p-{1\"}, \"items\": []} ,{}]}\n";

static void test_every_piece_size(void **unused)
{
    (void)unused;
    for (size_t step = 1; step <= sizeof(LIST); step++) {
        struct got g = {.n = 0};
        char why[160];
        cJSON *list = split(LIST, step, &g, why);
        if (!list)
            fail_msg("step %zu: %s", step, why);
        assert_int_equal(g.n, 3);
        assert_string_equal(g.items[0],
                            "{\"metadata\": {\"name\": \"p-0\"}, \"x\": [1, {\"y\": \"}]\\\\\"}]}");
        assert_string_equal(g.items[1], "{\"metadata\": {\"name\": \"p-{1\"}, \"items\": []}");
        assert_string_equal(g.items[2], "{}");
        const cJSON *meta = cJSON_GetObjectItemCaseSensitive(list, "metadata");
        assert_string_equal(cJSON_GetObjectItemCaseSensitive(meta, "continue")->valuestring,
                            "a]b}\"[");
        const cJSON *items = cJSON_GetObjectItemCaseSensitive(list, "items");
        assert_true(cJSON_IsArray(items));
        assert_int_equal(cJSON_GetArraySize(items), 0);
        cJSON_Delete(list);
    }
}

static void refused(const char *text, const char *why_part)
{
    for (size_t step = 1; step <= strlen(text) + 1; step++) {
        struct got g = {.n = 0};
        char why[160];
        cJSON *list = split(text, step, &g, why);
        if (list)
            fail_msg("step %zu: %s taken", step, text);
        if (!strstr(why, why_part))
            fail_msg("step %zu: %s: \"%s\" does not say \"%s\"", step, text, why, why_part);
    }
}

static void test_not_lists(void **unused)
{
    (void)unused;
    refused("", "empty");
    refused("[{}]", "not a JSON object");
    refused("{\"items\": [{}, 3]}", "items[1] is not a JSON object");
    refused("{\"items\": [{\"a\": \"b\"}", "cut short");
    refused("{\"items\": [{\"a\": \"b}]}", "cut short");
    refused("{\"items\": []} {}", "more after");
    refused("{\"kind\": x, \"items\": []}", "not JSON");
}

static void test_items_elsewhere_are_not_the_list_s(void **unused)
{
    (void)unused;
    /* "items" inside metadata or inside an item is data, not the List's. */
    struct got g = {.n = 0};
    char why[160];
    cJSON *list = split("{\"metadata\": {\"items\": [{\"no\": 1}]}, \"items\": [{\"yes\": 1}]}", 5,
                        &g, why);
    assert_non_null(list);
    assert_int_equal(g.n, 1);
    assert_string_equal(g.items[0], "{\"yes\": 1}");
    cJSON_Delete(list);
}

static void test_callee_stops(void **unused)
{
    (void)unused;
    struct got g = {.n = 0, .stop_at = 2};
    struct wh_list_split s;
    memset(&s, 0, sizeof(s));
    wh_list_split_init(&s, on_item, &g);
    assert_int_equal(wh_list_split_feed(&s, LIST, strlen(LIST)), -1);
    assert_true(s.stopped);
    assert_int_equal(g.n, 2);
    /* again, keeping the memory: a new List */
    g = (struct got){.n = 0};
    wh_list_split_init(&s, on_item, &g);
    assert_int_equal(wh_list_split_feed(&s, LIST, strlen(LIST)), 0);
    cJSON *list = wh_list_split_end(&s);
    assert_non_null(list);
    assert_int_equal(g.n, 3);
    cJSON_Delete(list);
    wh_list_split_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_piece_size),
        cmocka_unit_test(test_not_lists),
        cmocka_unit_test(test_items_elsewhere_are_not_the_list_s),
        cmocka_unit_test(test_callee_stops),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
