/* test_strict.c: unknown fields, kinds and versions (strict.h) and their
 * rows in `check --strict` (check.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "wh/check.h"
#include "wh/json.h"
#include "wh/strict.h"
#include "wh/yaml.h"

/* The findings of one object, as "path|message|suggestion" lines. */
struct found {
    char text[8192];
    size_t n;
};

static enum wh_err collect(void *ctx, const char *path, const char *message, const char *suggestion)
{
    struct found *f = ctx;
    size_t len = strlen(f->text);
    snprintf(f->text + len, sizeof(f->text) - len, "%s|%s|%s\n", path, message,
             suggestion ? suggestion : "-");
    f->n++;
    return WH_OK;
}

static enum wh_strict_verdict judge(const char *yaml, struct found *f)
{
    cJSON *doc = NULL;
    char errbuf[WH_ERRBUF_LEN] = "";
    assert_int_equal(wh_yaml_load_one(yaml, strlen(yaml), &doc, errbuf), WH_OK);
    memset(f, 0, sizeof(*f));
    enum wh_strict_verdict v;
    assert_int_equal(wh_strict_object(doc, collect, f, &v), WH_OK);
    cJSON_Delete(doc);
    return v;
}

static void test_unknown_kind_in_known_group(void **state)
{
    (void)state;
    struct found f;
    assert_int_equal(judge("apiVersion: ray.io/v1\nkind: RayJobb\nmetadata: {name: j}\n", &f),
                     WH_STRICT_UNKNOWN);
    assert_int_equal(f.n, 1);
    assert_string_equal(f.text, "kind|kind RayJobb: unknown kind in ray.io/v1; known kinds: "
                                "RayCluster, RayJob, RayService; did you mean RayJob?|RayJob\n");
    /* core v1: Deployment lives in apps/v1. */
    assert_int_equal(judge("apiVersion: v1\nkind: Deployment\n", &f), WH_STRICT_UNKNOWN);
    assert_non_null(strstr(f.text, "kind Deployment: unknown kind in v1; known kinds: Binding, "));
    assert_non_null(strstr(f.text, " Pod,"));
    /* An unknown version of a known group. */
    assert_int_equal(judge("apiVersion: ray.io/v2\nkind: RayJob\n", &f), WH_STRICT_UNKNOWN);
    assert_string_equal(f.text, "apiVersion|apiVersion ray.io/v2: unknown version of ray.io; "
                                "known: ray.io/v1, ray.io/v1alpha1|-\n");
    /* Other groups are not judged; known kinds not walked are known. */
    assert_int_equal(judge("apiVersion: apps/v1\nkind: Deploymentt\n", &f), WH_STRICT_OTHER_GROUP);
    assert_int_equal(judge("apiVersion: v1\nkind: Service\nspec: {nonsense: 1}\n", &f),
                     WH_STRICT_KNOWN);
    assert_int_equal(f.n, 0);
}

static const char ray_cluster[] =
    "apiVersion: ray.io/v1\n"
    "kind: RayCluster\n"
    "metadata: {name: c, labels: {any.label/x: y}, annotations: {a: b}}\n"
    "spec:\n"
    "  headGroupSpec:\n"
    "    rayStartParams: {dashboard-host: 0.0.0.0, anything-at-all: '1'}\n"
    "    template:\n"
    "      spec:\n"
    "        containers:\n"
    "        - name: head\n"
    "          image: rayproject/ray:2.9.0\n"
    "          resources: {limits: {cpu: 1, google.com/tpu: 4}}\n"
    "          env: [{name: A, valueFrom: {fieldRef: {fieldPath: metadata.name}}}]\n"
    "  workerGroupSpecs:\n"
    "  - groupName: g\n"
    "    numOfHosts: 2\n"
    "    template:\n"
    "      metadata: {labels: {a: b}}\n"
    "      spec:\n"
    "        nodeSelector: {cloud.google.com/gke-tpu-topology: 2x2x2}\n"
    "        containers: [{name: w}]\n";

static void test_valid_objects_have_no_finding(void **state)
{
    (void)state;
    struct found f;
    assert_int_equal(judge(ray_cluster, &f), WH_STRICT_CHECKED);
    assert_string_equal(f.text, "");
    assert_int_equal(judge("apiVersion: v1\nkind: Pod\nmetadata: {name: p, generateName: x}\n"
                           "spec: {containers: [{name: c, ports: [{containerPort: 1}]}],\n"
                           "       volumes: [{name: v, emptyDir: {}}]}\n",
                           &f),
                     WH_STRICT_CHECKED);
    assert_string_equal(f.text, "");
    assert_int_equal(judge("apiVersion: batch/v1\nkind: Job\nspec: {completionMode: Indexed,\n"
                           "  template: {spec: {subdomain: s, containers: [{name: c}]}}}\n",
                           &f),
                     WH_STRICT_CHECKED);
    assert_string_equal(f.text, "");
}

static void test_unknown_fields_with_paths_and_suggestions(void **state)
{
    (void)state;
    struct found f;
    assert_int_equal(judge("apiVersion: ray.io/v1\n"
                           "kind: RayCluster\n"
                           "metadata: {name: c, lables: {a: b}}\n"
                           "spec:\n"
                           "  workerGroupSpecs:\n"
                           "  - groupName: ok\n"
                           "  - groupName: g\n"
                           "    numOfHost: 4\n"
                           "    template:\n"
                           "      spec:\n"
                           "        containers:\n"
                           "        - name: a\n"
                           "        - name: w\n"
                           "          imagePullPolicyy: Always\n"
                           "          zzzzzzzzzzzz: 1\n",
                           &f),
                     WH_STRICT_CHECKED);
    assert_string_equal(
        f.text, "metadata.lables|metadata.lables: unknown field; did you mean labels?|labels\n"
                "spec.workerGroupSpecs[1].numOfHost|spec.workerGroupSpecs[1].numOfHost: unknown "
                "field; did you mean numOfHosts?|numOfHosts\n"
                "spec.workerGroupSpecs[1].template.spec.containers[1].imagePullPolicyy|"
                "spec.workerGroupSpecs[1].template.spec.containers[1].imagePullPolicyy: unknown "
                "field; did you mean imagePullPolicy?|imagePullPolicy\n"
                "spec.workerGroupSpecs[1].template.spec.containers[1].zzzzzzzzzzzz|"
                "spec.workerGroupSpecs[1].template.spec.containers[1].zzzzzzzzzzzz: unknown "
                "field|-\n");
    /* The CRD's embedded template metadata holds only what the CRD lists. */
    assert_int_equal(judge("apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\n"
                           "spec: {replicatedJobs: [{name: r, replicas: 1, template: {spec: "
                           "{parallelism: 2, template: {spec: {containers: [{name: c, "
                           "resources: {limits: {google.com/tpu: 4}, requestz: {}}}]}}}}}]}\n",
                           &f),
                     WH_STRICT_CHECKED);
    assert_string_equal(f.text,
                        "spec.replicatedJobs[0].template.spec.template.spec.containers[0]."
                        "resources.requestz|spec.replicatedJobs[0].template.spec.template.spec."
                        "containers[0].resources.requestz: unknown field; did you mean "
                        "requests?|requests\n");
}

/* Many unknown fields: WH_STRICT_MAX_FINDINGS listed, then one line. */
static void test_findings_are_bounded(void **state)
{
    (void)state;
    cJSON *pod = cJSON_CreateObject();
    cJSON *spec = cJSON_CreateObject();
    assert_false(wh_json_set_str(pod, "apiVersion", "v1") || wh_json_set_str(pod, "kind", "Pod") ||
                 wh_json_set(pod, "spec", spec));
    for (int i = 0; i < 1000; i++) {
        char key[32];
        snprintf(key, sizeof(key), "bogus%d", i);
        assert_false(wh_json_set(spec, key, cJSON_CreateNumber(i)));
    }
    struct found *f = calloc(1, sizeof(*f) * 2);
    assert_non_null(f);
    assert_int_equal(wh_strict_object(pod, collect, f, NULL), WH_OK);
    assert_int_equal(f->n, WH_STRICT_MAX_FINDINGS + 1);
    assert_non_null(strstr(f->text, "|and 950 more unknown field(s)|-\n"));
    free(f);
    cJSON_Delete(pod);
}

static const cJSON *find_row(const cJSON *rows, const char *verdict, size_t k)
{
    for (const cJSON *r = rows->child; r; r = r->next)
        if (!strcmp(wh_json_str0(r, "verdict"), verdict) && !k--)
            return r;
    return NULL;
}

/* check: strict rows only with opts.strict; a file with no object is
 * listed as not checked either way. */
static void test_check_rows(void **state)
{
    (void)state;
    static const char typo[] = "apiVersion: ray.io/v1\nkind: RayJobb\nmetadata: {name: j}\n";
    static const char values[] = "replicaCount: 2\nimage: {repository: x}\n";
    static const char polyaxon[] = "version: 1.1\nkind: component\nrun: {kind: job}\n";
    struct wh_check_opts strict = {.strict = true};
    for (int on = 0; on < 2; on++) {
        cJSON *rows = cJSON_CreateArray();
        struct wh_check_stats st = {0};
        char errbuf[WH_ERRBUF_LEN] = "";
        const struct wh_check_opts *o = on ? &strict : NULL;
        assert_int_equal(wh_check_text_opts("t.yaml", typo, strlen(typo), o, rows, &st, errbuf),
                         WH_OK);
        assert_int_equal(wh_check_text_opts("v.yaml", values, strlen(values), o, rows, &st, errbuf),
                         WH_OK);
        assert_int_equal(wh_check_text_opts("p.yaml", polyaxon, strlen(polyaxon), o, rows, &st,
                                            errbuf),
                         WH_OK);
        assert_int_equal(wh_check_text_opts("e.yaml", "", 0, o, rows, &st, errbuf), WH_OK);
        assert_int_equal(st.unchecked, 3);
        assert_int_equal(st.strict, on ? 1 : 0);
        const cJSON *nc = find_row(rows, "not-checked", 0);
        assert_non_null(nc);
        assert_string_equal(wh_json_str0(nc, "file"), "v.yaml");
        assert_non_null(strstr(wh_json_str0(nc, "message"), "holds no Kubernetes object"));
        assert_string_equal(wh_json_str0(find_row(rows, "not-checked", 1), "file"), "p.yaml");
        const cJSON *s = find_row(rows, "strict", 0);
        if (on) {
            assert_non_null(s);
            assert_string_equal(wh_json_str0(s, "kind"), "RayJobb");
            assert_string_equal(wh_json_str0(s, "name"), "j");
            assert_string_equal(wh_json_str0(s, "field"), "kind");
            assert_string_equal(wh_json_str0(s, "suggestion"), "RayJob");
            struct wh_buf t;
            wh_buf_init(&t, 1 << 20);
            assert_int_equal(wh_check_table(rows, &st, &t), WH_OK);
            assert_non_null(strstr(wh_buf_ptr(&t), "t.yaml:1: strict RayJobb/j: kind RayJobb: "
                                                   "unknown kind in ray.io/v1"));
            assert_non_null(strstr(wh_buf_ptr(&t), "1 strict finding(s), 3 file(s) not checked"));
            wh_buf_free(&t);
        } else {
            assert_null(s);
        }
        cJSON_Delete(rows);
    }
}

/* Every kind the table walks has a root that is an object with apiVersion,
 * kind, metadata and spec; the fields of every object are sorted (the
 * binary search depends on it). */
static void test_table_is_sound(void **state)
{
    (void)state;
    size_t walked = 0;
    for (size_t i = 0; i < wh_strict_n_kinds; i++) {
        int root = wh_strict_kinds[i].root;
        if (root < 0)
            continue;
        walked++;
        assert_true((size_t)root < wh_strict_n_nodes);
        assert_int_equal(wh_strict_nodes[root].kind, WH_SN_OBJECT);
    }
    assert_int_equal(walked, 10); /* Pod, Job, JobSet, LWS, 3 Ray kinds x 2 versions */
    for (size_t i = 0; i < wh_strict_n_nodes; i++) {
        const struct wh_strict_node *n = &wh_strict_nodes[i];
        for (int k = 1; k < n->n; k++)
            assert_true(strcmp(wh_strict_fields[n->first + k - 1].name,
                               wh_strict_fields[n->first + k].name) < 0);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unknown_kind_in_known_group),
        cmocka_unit_test(test_valid_objects_have_no_finding),
        cmocka_unit_test(test_unknown_fields_with_paths_and_suggestions),
        cmocka_unit_test(test_findings_are_bounded),
        cmocka_unit_test(test_check_rows),
        cmocka_unit_test(test_table_is_sound),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
