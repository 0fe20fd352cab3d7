/* test_names.c: the API-server name rules (wh/names.h) and their messages;
 * tests/engine/test_names.py covers them through the whole engine. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include <cjson/cJSON.h>

#include "testutil.h"
#include "wh/names.h"
#include "wh/json.h"

static void test_rules(void **unused)
{
    (void)unused;
    static const struct {
        const char *s;
        bool dns, label, env;
    } cases[] = {
        {"tpu-group-0-1", true, true, true},
        {"1tpu", true, true, false},
        {"TPUGroup-0", false, true, true},
        {"tpu.group-0", false, true, true},
        {"tpu_group-0", false, true, true},
        {"-a", false, false, true},
        {"a-", false, false, true},
        {"", false, true, false},
        {"gr\xc3\xbc"
         "ppe",
         false, false, false},
        {"a b", false, false, false},
        {"TPU_WORKER_ID", false, true, true},
        {"ggggggggggggggggggggggggggggggggggggggggggggggggggggggggggggggg", true, true, true}, /* 63 */
        {"gggggggggggggggggggggggggggggggggggggggggggggggggggggggggggggggg", false, false, true},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        assert_int_equal(wh_names_dns_label(cases[i].s) == NULL, cases[i].dns);
        assert_int_equal(wh_names_label_value(cases[i].s) == NULL, cases[i].label);
        assert_int_equal(wh_names_env_name(cases[i].s) == NULL, cases[i].env);
    }
}

static void test_group_messages(void **unused)
{
    (void)unused;
    char msg[1024];
    struct wh_group_names n = {.cluster = "rc",
                               .group = "TPUGroup",
                               .multi_host = true,
                               .label = true};
    assert_false(wh_names_group_ok(&n, msg, sizeof(msg)));
    assert_non_null(strstr(msg, "the pod hostname \"TPUGroup-0-0\" is not a DNS-1123 label"));
    assert_non_null(strstr(msg, "rename worker group TPUGroup (groupName) to a DNS-1123 label "
                                "of at most 59 characters such as tpugroup"));
    /* single-host: only the label, which allows upper case */
    n.multi_host = false;
    assert_true(wh_names_group_ok(&n, msg, sizeof(msg)));
    /* the suggestion of a unicode, dotted name: ASCII, joined dashes */
    n = (struct wh_group_names){.cluster = "rc", .group = "..Gr\xc3\xbc_pe.", .multi_host = true};
    assert_false(wh_names_group_ok(&n, msg, sizeof(msg)));
    assert_non_null(strstr(msg, "such as gr-pe"));
    /* nothing usable: a fixed suggestion */
    n.group = "___";
    assert_false(wh_names_group_ok(&n, msg, sizeof(msg)));
    assert_non_null(strstr(msg, "such as tpu-group"));
    /* the subdomain names the RayCluster */
    n = (struct wh_group_names){.cluster = "Big_Cluster", .group = "g", .multi_host = true};
    assert_false(wh_names_group_ok(&n, msg, sizeof(msg)));
    assert_non_null(strstr(msg, "rename RayCluster Big_Cluster to a DNS-1035 label of at most 53 "
                                "characters such as big-cluster"));
    /* a hostile length is quoted in part, and the message stays terminated */
    char huge[5000];
    memset(huge, 'g', sizeof(huge) - 1);
    huge[sizeof(huge) - 1] = '\0';
    n = (struct wh_group_names){.cluster = "rc", .group = huge, .label = true, .replica = 3};
    assert_false(wh_names_group_ok(&n, msg, sizeof(msg)));
    assert_true(strlen(msg) < sizeof(msg));
    assert_non_null(strstr(msg, "...\" would have 5001 characters, over the 63 of a label value"));
    char tiny[16];
    assert_false(wh_names_group_ok(&n, tiny, sizeof(tiny)));
    assert_int_equal(strlen(tiny), sizeof(tiny) - 1);
}

static void test_op_guard(void **unused)
{
    (void)unused;
    static const struct {
        const char *ops, *needle; /* needle NULL: the patch is fine */
    } cases[] = {
        {"[{\"op\":\"add\",\"path\":\"/spec/hostname\",\"value\":\"g-0-0\"},"
         "{\"op\":\"add\",\"path\":\"/spec/subdomain\",\"value\":\"rc-headless\"},"
         "{\"op\":\"add\",\"path\":\"/metadata/labels/replicaIndex\",\"value\":\"G.x-0\"},"
         "{\"op\":\"add\",\"path\":\"/spec/containers/0/env\",\"value\":[{\"name\":\"A\"}]},"
         "{\"op\":\"add\",\"path\":\"/spec/containers/0/env/-\",\"value\":{\"name\":\"B\"}},"
         "{\"op\":\"replace\",\"path\":\"/spec/containers/1/env/0\",\"value\":{\"name\":\"C\"}}]",
         NULL},
        {"[{\"op\":\"add\",\"path\":\"/spec/hostname\",\"value\":\"G-0-0\"}]",
         "hostname \"G-0-0\" (/spec/hostname), which is not a DNS-1123 label"},
        {"[{\"op\":\"add\",\"path\":\"/spec/subdomain\",\"value\":7}]",
         "subdomain \"(not a string)\""},
        {"[{\"op\":\"add\",\"path\":\"/metadata/labels/replicaIndex\",\"value\":\"-g\"}]",
         "label value \"-g\""},
        {"[{\"op\":\"add\",\"path\":\"/spec/containers/0/env\",\"value\":[{\"name\":\"A\"},"
         "{\"name\":\"1B\"}]}]",
         "env var name \"1B\""},
        {"[{\"op\":\"add\",\"path\":\"/spec/containers/0/env/-\",\"value\":{\"name\":\"A=B\"}}]",
         "env var name \"A=B\""},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        cJSON *ops = wh_test_parse(cases[i].ops);
        char msg[1024] = "";
        bool ok = true;
        for (const cJSON *op = ops->child; op && ok; op = op->next)
            ok = wh_names_json_op_ok(wh_json_str0(op, "path"), wh_json_get(op, "value"), msg,
                                     sizeof(msg));
        if (!cases[i].needle) {
            assert_true(ok);
        } else {
            assert_false(ok);
            if (!strstr(msg, cases[i].needle))
                fail_msg("case %zu: %s lacks %s", i, msg, cases[i].needle);
        }
        cJSON_Delete(ops);
    }
    /* the typed forms the patch writers use */
    char msg[1024];
    assert_true(wh_names_string_op_ok("/spec/subdomain", "rc-headless", msg, sizeof(msg)));
    assert_true(wh_names_string_op_ok("/spec/containers/0/env/-", "-", msg, sizeof(msg)));
    assert_false(wh_names_string_op_ok("/spec/subdomain", "Rc", msg, sizeof(msg)));
    assert_non_null(strstr(msg, "subdomain \"Rc\" (/spec/subdomain), which is not a DNS-1123"));
    assert_false(wh_names_string_op_ok("/spec/hostname", NULL, msg, sizeof(msg)));
    assert_non_null(strstr(msg, "hostname \"(not a string)\""));
    assert_true(wh_names_env_op_ok("/spec/containers/0/env/-", "TPU_NAME", msg, sizeof(msg)));
    assert_false(wh_names_env_op_ok("/spec/containers/0/env/2", "", msg, sizeof(msg)));
    assert_non_null(strstr(msg, "env var name \"\" (/spec/containers/0/env/2)"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rules),
        cmocka_unit_test(test_group_messages),
        cmocka_unit_test(test_op_guard),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
