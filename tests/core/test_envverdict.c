/* test_envverdict.c: the table of verdicts on preset values
 * (wh/envverdict.h): every row whole and in step with envtab's verbs, and
 * each rule of wh_env_judge on both sides of its bound. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "testutil.h"
#include "wh/envtab.h"
#include "wh/envverdict.h"

static void test_rows_whole(void **unused)
{
    (void)unused;
    for (int k = 0; k < WH_ENVRULE__COUNT; k++) {
        const struct wh_env_rule *r = &wh_env_rules[k];
        assert_true((unsigned)r->var < WH_ENV__COUNT);
        assert_non_null(r->key);
        assert_non_null(r->when);
        assert_non_null(r->fix);
        assert_string_not_equal(wh_env_verdict_name(r->verdict), "?");
        for (int o = 0; o < k; o++)
            assert_string_not_equal(r->key, wh_env_rules[o].key);
        /* A rule judged elsewhere is the verdict envtab's verb promises. */
        enum wh_env_verb verb = wh_envtab[r->var].verb[WH_PATH_WORKLOAD];
        if (r->judged_by)
            assert_int_equal(r->verdict,
                             verb == WH_VERB_KEEP_REFUSE ? WH_VERDICT_DENY : WH_VERDICT_WARN);
    }
    /* Every variable whose verb judges a kept value has its row here. */
    for (int i = 0; i < WH_ENV__COUNT; i++) {
        enum wh_env_verb verb = wh_envtab[i].verb[WH_PATH_WORKLOAD];
        if (verb != WH_VERB_KEEP_REFUSE && verb != WH_VERB_KEEP_WARN)
            continue;
        bool found = false;
        for (int k = 0; k < WH_ENVRULE__COUNT; k++)
            found |= (int)wh_env_rules[k].var == i && wh_env_rules[k].judged_by;
        assert_true(found);
    }
}

/* Judge env (a JSON array) against w; the count, findings in f. */
static int judge(const char *env, struct wh_torch_world w, struct wh_env_finding *f)
{
    cJSON *e = wh_test_parse(env);
    int n = wh_env_judge(e, &w, f);
    cJSON_Delete(e);
    return n;
}

#define ENV1(name, value) "[{\"name\":\"" name "\",\"value\":\"" value "\"}]"

/* v6e, 4 chips: 4 devices; one pod. */
static const struct wh_torch_world host4 = {.devices = 4, .nnodes = 1, .pods = 1, .rank = 0};

static void test_nproc(void **unused)
{
    (void)unused;
    struct wh_env_finding f[WH_ENV_FINDINGS_MAX];
    /* Kubeflow Trainer's `auto` without a GPU: the cpu limit. */
    assert_int_equal(judge(ENV1("PET_NPROC_PER_NODE", "24"), host4, f), 1);
    assert_int_equal(f[0].rule, WH_ENVRULE_NPROC_ABOVE);
    assert_int_equal(wh_env_rules[f[0].rule].verdict, WH_VERDICT_DENY);
    assert_string_equal(f[0].want, "4");
    assert_string_equal(f[0].value, "24");
    assert_non_null(strstr(f[0].text, "sets PET_NPROC_PER_NODE \"24\" (env[0])"));
    assert_non_null(strstr(f[0].text, "set \"4\""));
    assert_int_equal(judge(ENV1("PET_NPROC_PER_NODE", "5"), host4, f), 1);
    assert_int_equal(f[0].rule, WH_ENVRULE_NPROC_ABOVE);
    assert_int_equal(judge(ENV1("PET_NPROC_PER_NODE", "4"), host4, f), 0);
    assert_int_equal(judge(ENV1("PET_NPROC_PER_NODE", "3"), host4, f), 1);
    assert_int_equal(f[0].rule, WH_ENVRULE_NPROC_BELOW);
    assert_int_equal(wh_env_rules[f[0].rule].verdict, WH_VERDICT_WARN);
    assert_string_equal(f[0].brief, "PET_NPROC_PER_NODE \"3\" leaves 1 of 4 TPU devices idle; "
                                    "set \"4\"");
    static const char *const words[] = {"auto", "cpu", "gpu", "xpu", "0", "-1", "four"};
    for (size_t k = 0; k < sizeof(words) / sizeof(words[0]); k++) {
        char env[96];
        snprintf(env, sizeof(env), ENV1("PET_NPROC_PER_NODE", "%s"), words[k]);
        assert_int_equal(judge(env, host4, f), 1);
        assert_int_equal(f[0].rule, WH_ENVRULE_NPROC_NOT_COUNT);
        assert_string_equal(f[0].want, "4");
    }
    /* TPU7x: 4 chips are 8 devices. */
    struct wh_torch_world x = host4;
    x.devices = 8;
    assert_int_equal(judge(ENV1("PET_NPROC_PER_NODE", "8"), x, f), 0);
    assert_int_equal(judge(ENV1("PET_NPROC_PER_NODE", "4"), x, f), 1);
    assert_int_equal(f[0].rule, WH_ENVRULE_NPROC_BELOW);
    /* Devices unknown: only what is no count at all. */
    x.devices = 0;
    assert_int_equal(judge(ENV1("PET_NPROC_PER_NODE", "24"), x, f), 0);
    assert_int_equal(judge(ENV1("PET_NPROC_PER_NODE", "auto"), x, f), 1);
    assert_string_equal(f[0].want, "");
    /* A valueFrom or an empty value is not judged; the deciding entry is. */
    assert_int_equal(judge("[{\"name\":\"PET_NPROC_PER_NODE\",\"valueFrom\":{\"fieldRef\":"
                           "{\"fieldPath\":\"metadata.name\"}}}]",
                           host4, f),
                     0);
    assert_int_equal(judge(ENV1("PET_NPROC_PER_NODE", ""), host4, f), 0);
    assert_int_equal(judge("[{\"name\":\"PET_NPROC_PER_NODE\",\"value\":\"\"},"
                           "{\"name\":\"PET_NPROC_PER_NODE\",\"value\":\"9\"}]",
                           host4, f),
                     1);
    assert_int_equal(f[0].index, 1);
}

static void test_nnodes(void **unused)
{
    (void)unused;
    struct wh_env_finding f[WH_ENV_FINDINGS_MAX];
    /* Two slices of 4 hosts joined by MEGASCALE: 8 nodes. */
    struct wh_torch_world w = {.devices = 4, .nnodes = 8, .pods = 8, .rank = -1};
    assert_int_equal(judge(ENV1("PET_NNODES", "8"), w, f), 0);
    assert_int_equal(judge(ENV1("PET_NNODES", "4:8"), w, f), 0);
    assert_int_equal(judge(ENV1("PET_NNODES", "8:16"), w, f), 0);
    static const char *const bad[] = {"4", "16", "9:16", "1:4", "x", "8:4", ":8"};
    for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
        char env[96];
        snprintf(env, sizeof(env), ENV1("PET_NNODES", "%s"), bad[k]);
        assert_int_equal(judge(env, w, f), 1);
        assert_int_equal(f[0].rule, WH_ENVRULE_NNODES_WORLD);
        assert_string_equal(f[0].want, "8");
        assert_non_null(strstr(f[0].text, "set \"8\""));
    }
    w.nnodes = 0; /* the user's own MEGASCALE world */
    assert_int_equal(judge(ENV1("PET_NNODES", "4"), w, f), 0);
}

static void test_node_rank(void **unused)
{
    (void)unused;
    struct wh_env_finding f[WH_ENV_FINDINGS_MAX];
    struct wh_torch_world tmpl = {.devices = 4, .nnodes = 4, .pods = 4, .rank = -1};
    assert_int_equal(judge(ENV1("PET_NODE_RANK", "0"), tmpl, f), 1);
    assert_int_equal(f[0].rule, WH_ENVRULE_NODE_RANK_SHARED);
    assert_int_equal(wh_env_rules[f[0].rule].verdict, WH_VERDICT_DENY);
    assert_non_null(strstr(f[0].text, "valueFrom"));
    /* Trainer's fieldRef to the completion index. */
    assert_int_equal(judge("[{\"name\":\"PET_NODE_RANK\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":"
                           "\"metadata.annotations['batch.kubernetes.io/job-completion-index']\"}}}]",
                           tmpl, f),
                     0);
    /* One pod: its own rank only. */
    struct wh_torch_world pod = {.devices = 4, .nnodes = 4, .pods = 4, .rank = 2};
    assert_int_equal(judge(ENV1("PET_NODE_RANK", "2"), pod, f), 0);
    assert_int_equal(judge(ENV1("PET_NODE_RANK", "0"), pod, f), 1);
    assert_int_equal(f[0].rule, WH_ENVRULE_NODE_RANK_OTHER);
    assert_string_equal(f[0].want, "2");
    assert_int_equal(judge(ENV1("PET_NODE_RANK", "0"), host4, f), 0);
}

static void test_master(void **unused)
{
    (void)unused;
    struct wh_env_finding f[WH_ENV_FINDINGS_MAX];
    struct wh_torch_world tmpl = {.devices = 4, .nnodes = 4, .pods = 4, .rank = -1};
    assert_int_equal(judge(ENV1("PET_MASTER_ADDR", "localhost"), tmpl, f), 1);
    assert_int_equal(f[0].rule, WH_ENVRULE_MASTER_LOCAL);
    assert_int_equal(judge(ENV1("PET_MASTER_ADDR", "train-0.train"), tmpl, f), 0);
    assert_int_equal(judge(ENV1("PET_MASTER_ADDR", "localhost"), host4, f), 0);
    assert_int_equal(judge(ENV1("PET_MASTER_PORT", "1"), tmpl, f), 0);
}

static void test_trainjob_owner(void **unused)
{
    (void)unused;
    cJSON *o = wh_test_parse(
        "{\"metadata\":{\"ownerReferences\":[{\"apiVersion\":\"batch/v1\",\"kind\":\"TrainJob\","
        "\"name\":\"a\",\"controller\":true},{\"apiVersion\":\"trainer.kubeflow.org/v1alpha1\","
        "\"kind\":\"TrainJob\",\"name\":\"mnist\",\"controller\":true}]}}");
    assert_string_equal(wh_trainjob_owner(o), "mnist");
    cJSON_Delete(o);
    o = wh_test_parse("{\"metadata\":{\"ownerReferences\":[{\"apiVersion\":"
                      "\"trainer.kubeflow.org.evil/v1\",\"kind\":\"TrainJob\",\"name\":\"x\","
                      "\"controller\":true},{\"apiVersion\":\"trainer.kubeflow.org/v1alpha1\","
                      "\"kind\":\"TrainJob\",\"name\":\"y\"}]}}");
    assert_null(wh_trainjob_owner(o)); /* another group; not the controller */
    cJSON_Delete(o);
    assert_null(wh_trainjob_owner(NULL));
}

/* The command line's flag wins over PET_<OPT>: torchrun's argparse takes
 * both spellings, `--f=v` and `--f v`, and a word of a shell string. */
static unsigned overridden(const char *container)
{
    cJSON *c = wh_test_parse(container);
    unsigned bits = wh_torchrun_overridden(c);
    cJSON_Delete(c);
    return bits;
}

static void test_overridden(void **unused)
{
    (void)unused;
    const unsigned nproc = 1u << WH_ENV_PET_NPROC_PER_NODE, nnodes = 1u << WH_ENV_PET_NNODES,
                   rank = 1u << WH_ENV_PET_NODE_RANK;
    assert_int_equal(overridden("{\"command\":[\"torchrun\",\"--nproc_per_node=4\",\"t.py\"]}"),
                     nproc);
    assert_int_equal(overridden("{\"args\":[\"--nproc-per-node\",\"4\",\"--nnodes=4\"]}"),
                     nproc | nnodes);
    assert_int_equal(overridden("{\"command\":[\"bash\",\"-c\",\"torchrun --node_rank=$R "
                                "'--nnodes' 4 t.py\"]}"),
                     rank | nnodes);
    assert_int_equal(overridden("{\"command\":[\"torchrun\",\"--nproc_per_nodes=4\","
                                "\"-nnodes=4\",\"--node-rank-x\",\"--\",\"--=4\"],\"args\":7}"),
                     0);
    /* argparse's abbreviations: a prefix names its option; one shared by
     * several flags (refused by torchrun itself) sets each. */
    assert_int_equal(overridden("{\"command\":[\"torchrun\",\"--nnode=4\",\"--nproc\",\"4\"]}"),
                     nnodes | nproc);
    assert_int_equal(overridden("{\"args\":[\"--node_r=1\"]}"), rank);
    assert_int_equal(overridden("{\"args\":[\"--n=1\"]}"), nnodes | nproc | rank);
    assert_int_equal(overridden("{\"command\":\"--nnodes=4\"}"), 0);
    /* A rule whose flag is set is not judged. */
    struct wh_env_finding f[WH_ENV_FINDINGS_MAX];
    struct wh_torch_world w = host4;
    assert_int_equal(judge(ENV1("PET_NPROC_PER_NODE", "auto"), w, f), 1);
    w.overridden = nproc;
    assert_int_equal(judge(ENV1("PET_NPROC_PER_NODE", "auto"), w, f), 0);
    assert_int_equal(judge(ENV1("PET_NODE_RANK", "3"), w, f), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rows_whole), cmocka_unit_test(test_nproc),
        cmocka_unit_test(test_nnodes),     cmocka_unit_test(test_node_rank),
        cmocka_unit_test(test_master),     cmocka_unit_test(test_trainjob_owner),
        cmocka_unit_test(test_overridden),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
