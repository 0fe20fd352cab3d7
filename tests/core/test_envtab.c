/* test_envtab.c: the table of injected variables (wh/envtab.h): every row
 * whole, each verb's answer for each thing a container can hold, and the
 * writer that asks the verb. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "wh/decision.h"
#include "wh/envtab.h"
#include "wh/tpuenv.h"

static void test_rows_whole(void **unused)
{
    (void)unused;
    for (int i = 0; i < WH_ENV__COUNT; i++) {
        const struct wh_env_def *r = &wh_envtab[i];
        assert_non_null(r->name);
        assert_non_null(r->meaning);
        assert_true(strlen(r->meaning) > 10);
        assert_int_equal(wh_env_find(r->name), i);
        bool written = false;
        for (int p = 0; p < WH_PATH__COUNT; p++) {
            assert_true((unsigned)r->verb[p] < WH_VERB__COUNT);
            written |= r->verb[p] != WH_VERB_NONE && r->verb[p] != WH_VERB_READ;
        }
        assert_true(written); /* a row no path writes is no injected variable */
    }
    assert_int_equal(wh_env_find("WORLD_SIZE"), WH_ENV__COUNT);
    for (int v = 0; v < WH_VERB__COUNT; v++) {
        assert_string_not_equal(wh_env_verb_name((enum wh_env_verb)v), "?");
        assert_string_not_equal(wh_env_verb_doc((enum wh_env_verb)v), "?");
        for (int u = 0; u < v; u++)
            assert_string_not_equal(wh_env_verb_name((enum wh_env_verb)v),
                                    wh_env_verb_name((enum wh_env_verb)u));
    }
}

/* What a container can hold of a variable, as env arrays. */
enum held { NOTHING, EMPTY, VALUE_FROM, VALUE, N_HELD };
static const char *const held_env[N_HELD] = {
    "[]",
    "[{\"name\":\"X\",\"value\":\"\"}]",
    "[{\"name\":\"X\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":\"status.hostIP\"}}}]",
    "[{\"name\":\"X\",\"value\":\"v\"}]",
};

static bool writes(enum wh_env_verb v, enum held h, bool placeholder)
{
    cJSON *env = cJSON_Parse(held_env[h]);
    struct wh_env_lookup lk;
    wh_env_lookup(env, "X", &lk);
    bool w = wh_env_verb_writes(v, &lk, placeholder);
    cJSON_Delete(env);
    return w;
}

/* The three "only if absent" rules differ over an empty value and a
 * valueFrom; each answer here is the rule its verb names. */
static void test_verbs(void **unused)
{
    (void)unused;
    static const struct {
        enum wh_env_verb v;
        bool over[N_HELD]; /* nothing, empty, valueFrom, value */
    } want[] = {
        {WH_VERB_NONE, {false, false, false, false}},
        {WH_VERB_READ, {false, false, false, false}},
        {WH_VERB_SET, {true, true, true, true}},
        {WH_VERB_SET_IF_EMPTY, {true, true, true, false}},
        {WH_VERB_SET_IF_PLACEHOLDER, {true, true, true, false}},
        {WH_VERB_SET_IF_UNSET, {true, true, false, false}},
        {WH_VERB_ADD_IF_NO_ENTRY, {true, false, false, false}},
        {WH_VERB_KEEP_WARN, {true, false, false, false}},
        {WH_VERB_KEEP_REFUSE, {true, false, false, false}},
    };
    assert_int_equal(sizeof(want) / sizeof(want[0]), WH_VERB__COUNT);
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
        for (int h = 0; h < N_HELD; h++) {
            assert_int_equal(writes(want[i].v, (enum held)h, false), want[i].over[h]);
            /* only SET_IF_PLACEHOLDER reads the path's placeholder test */
            bool p = writes(want[i].v, (enum held)h, true);
            assert_int_equal(p, want[i].v == WH_VERB_SET_IF_PLACEHOLDER || want[i].over[h]);
        }
}

/* wh_env_put writes (one operation) or not (none) by the row's verb on the path. */
static void test_put(void **unused)
{
    (void)unused;
    cJSON *env = cJSON_Parse("[{\"name\":\"TPU_NAME\",\"value\":\"\"},"
                             "{\"name\":\"TPU_DEVICE_PLUGIN_HOST_IP\",\"value\":\"\"}]");
    struct wh_decision d;
    wh_decision_init(&d);
    struct wh_env_writer w;
    wh_env_writer_init(&w, &d, 0, env);
    /* KubeRay: an empty TPU_NAME is filled; the workload path never writes
     * the device plugin's address */
    assert_int_equal(wh_env_put(&w, WH_PATH_WORKLOAD, WH_ENV_TPU_DEVICE_PLUGIN_ADDR, "a"), WH_OK);
    assert_int_equal(d.n_ops, 0);
    assert_int_equal(wh_env_put(&w, WH_PATH_KUBERAY, WH_ENV_TPU_NAME, "s-0"), WH_OK);
    assert_int_equal(d.n_ops, 1);
    /* the workload path's TPU_NAME (LWS subgroups) only over an empty value
     * or the path's placeholder, LWS's group-wide name */
    struct wh_env_lookup lk = {.value = "vllm-0", .exists = true, .index = 0, .first_index = 0};
    assert_false(wh_env_verb_writes(wh_envtab[WH_ENV_TPU_NAME].verb[WH_PATH_WORKLOAD], &lk, false));
    assert_true(wh_env_verb_writes(wh_envtab[WH_ENV_TPU_NAME].verb[WH_PATH_WORKLOAD], &lk, true));
    /* the workload path keeps any entry, even an empty one */
    assert_false(wh_env_wants(&w, WH_PATH_WORKLOAD, WH_ENV_TPU_DEVICE_PLUGIN_HOST_IP, false));
    assert_true(wh_env_wants(&w, WH_PATH_KUBERAY, WH_ENV_TPU_DEVICE_PLUGIN_HOST_IP, false));
    assert_true(wh_env_wants(&w, WH_PATH_WORKLOAD, WH_ENV_PET_NNODES, false));
    assert_false(wh_env_wants(&w, WH_PATH_KUBERAY, WH_ENV_PET_NNODES, false));
    /* MEGASCALE_NUM_SLICES is the KubeRay user's, never written there */
    assert_false(wh_env_wants(&w, WH_PATH_KUBERAY, WH_ENV_MEGASCALE_NUM_SLICES, false));
    wh_decision_free(&d);
    cJSON_Delete(env);
}

/* The duplicate check names the table's variables, in the table's order. */
static void test_duplicate_reads_the_table(void **unused)
{
    (void)unused;
    int first, second;
    for (int i = 0; i < WH_ENV__COUNT; i++) {
        char text[256];
        snprintf(text, sizeof(text), "[{\"name\":\"%s\"},{\"name\":\"A\"},{\"name\":\"%s\"}]",
                 wh_envtab[i].name, wh_envtab[i].name);
        cJSON *env = cJSON_Parse(text);
        assert_string_equal(wh_env_duplicate(env, &first, &second), wh_envtab[i].name);
        assert_int_equal(first, 0);
        assert_int_equal(second, 2);
        cJSON_Delete(env);
    }
    cJSON *env = cJSON_Parse("[{\"name\":\"PET_NNODES\"},{\"name\":\"MEGASCALE_PORT\"},"
                             "{\"name\":\"PET_NNODES\"},{\"name\":\"MEGASCALE_PORT\"},"
                             "{\"name\":\"WORLD_SIZE\"},{\"name\":\"WORLD_SIZE\"}]");
    assert_string_equal(wh_env_duplicate(env, &first, &second), "MEGASCALE_PORT");
    cJSON_Delete(env);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rows_whole),
        cmocka_unit_test(test_verbs),
        cmocka_unit_test(test_put),
        cmocka_unit_test(test_duplicate_reads_the_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
