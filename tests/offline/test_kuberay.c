/* test_kuberay.c: the pods KubeRay would create (docs/kuberay-pods.md). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "wh/json.h"
#include "wh/kuberay.h"
#include "wh/yaml.h"

static cJSON *load(const char *yaml)
{
    char errbuf[WH_ERRBUF_LEN] = "";
    cJSON *doc = NULL;
    if (wh_yaml_load_one(yaml, strlen(yaml), &doc, errbuf))
        fail_msg("test YAML does not load: %s", errbuf);
    return doc;
}

static cJSON *sample(const char *name)
{
    char path[1024];
    snprintf(path, sizeof(path), "%s/%s", WH_SAMPLES_DIR, name);
    char *text = wh_test_read_file(path, NULL);
    cJSON *doc = load(text);
    free(text);
    return doc;
}

static cJSON *pods_of(const cJSON *cluster, int major, int minor)
{
    struct wh_kuberay_opts o;
    wh_kuberay_opts_init(&o, major, minor);
    char errbuf[WH_ERRBUF_LEN] = "";
    cJSON *pods = NULL;
    if (wh_kuberay_worker_pods(cluster, &o, &pods, errbuf))
        fail_msg("render failed: %s", errbuf);
    return pods;
}

static const char *label(const cJSON *pod, const char *key)
{
    return wh_json_str(wh_json_path(pod, "metadata", "labels", NULL), key);
}

static const char *env(const cJSON *container, const char *name)
{
    const cJSON *e = wh_json_get(container, "env");
    for (const cJSON *x = e ? e->child : NULL; x; x = x->next)
        if (!strcmp(wh_json_str0(x, "name"), name))
            return wh_json_str(x, "value") ? wh_json_str(x, "value") : "(valueFrom)";
    return NULL;
}

static void test_v6e_16_native(void **state)
{
    (void)state;
    cJSON *rc = sample("ray-cluster.tpu-v6e-16-multihost.yaml");
    cJSON *pods = pods_of(rc, 1, 7);
    assert_int_equal(cJSON_GetArraySize(pods), 4);
    const char *rname = label(pods->child, "ray.io/worker-group-replica-name");
    assert_non_null(rname);
    assert_int_equal(strncmp(rname, "tpu-group-", 10), 0);
    assert_int_equal(strlen(rname), 15);
    int h = 0;
    for (const cJSON *p = pods->child; p; p = p->next, h++) {
        char want[16];
        snprintf(want, sizeof(want), "%d", h);
        assert_string_equal(label(p, "ray.io/replica-host-index"), want);
        assert_string_equal(label(p, "ray.io/worker-group-replica-index"), "0");
        assert_string_equal(label(p, "ray.io/worker-group-replica-name"), rname);
        assert_string_equal(label(p, "ray.io/identifier"), "raycluster-tpu-v6e-multihost-worker");
        assert_string_equal(label(p, "ray.io/is-ray-node"), "yes");
        assert_string_equal(wh_json_str(wh_json_get(p, "metadata"), "generateName"),
                            "raycluster-tpu-v6e-multihost-tpu-group-worker-");
        assert_false(wh_json_has(wh_json_get(p, "metadata"), "name"));
        assert_false(wh_json_has(wh_json_get(p, "metadata"), "annotations"));
    }
    const cJSON *c = wh_json_path(pods->child, "spec", "containers", NULL)->child;
    const char *start = "ray start  --address=raycluster-tpu-v6e-multihost-head-svc.default.svc"
                        ".cluster.local:6379  --block  --dashboard-agent-listen-port=52365  "
                        "--memory=200000000000  --metrics-export-port=8080  --num-cpus=24  "
                        "--resources='{\"TPU\":4}' ";
    assert_string_equal(env(c, "KUBERAY_GEN_RAY_START_CMD"), start);
    char args[1024];
    snprintf(args, sizeof(args), "ulimit -n ${RAY_START_ULIMIT_OPEN_FILES:-65536}; %s", start);
    assert_string_equal(wh_json_get(c, "args")->child->valuestring, args);
    /* Env order (docs/kuberay-pods.md §4): user env first, then KubeRay's. */
    const cJSON *e = wh_json_get(c, "env")->child;
    static const char *const order[] = {"NODE_IP",
                                        "VBAR_CONTROL_SERVICE_URL",
                                        "JAX_PLATFORMS",
                                        "ENABLE_PJRT_COMPATIBILITY",
                                        "FQ_RAY_IP",
                                        "RAY_IP",
                                        "RAY_CLUSTER_NAME",
                                        "RAY_CLUSTER_NAMESPACE",
                                        "RAY_CLOUD_INSTANCE_ID",
                                        "RAY_NODE_TYPE_NAME",
                                        "KUBERAY_GEN_RAY_START_CMD",
                                        "RAY_PORT",
                                        "RAY_ADDRESS",
                                        "RAY_USAGE_STATS_KUBERAY_IN_USE",
                                        "RAY_DASHBOARD_ENABLE_K8S_DISK_USAGE"};
    for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++, e = e->next) {
        assert_non_null(e);
        assert_string_equal(wh_json_str0(e, "name"), order[i]);
    }
    assert_null(e);
    /* Ports: the template's mxla, then metrics. */
    const cJSON *ports = wh_json_get(c, "ports");
    assert_int_equal(cJSON_GetArraySize(ports), 2);
    assert_string_equal(wh_json_str0(ports->child->next, "name"), "metrics");
    /* Exec probes: rayVersion 2.52.0 < 2.53.0. */
    assert_non_null(wh_json_path(c, "livenessProbe", "exec", NULL));
    assert_int_equal(wh_json_path(c, "readinessProbe", "failureThreshold", NULL)->valueint, 10);
    /* The init container copies the user env and gets FQ_RAY_IP, RAY_IP. */
    const cJSON *ic = wh_json_path(pods->child, "spec", "initContainers", NULL)->child;
    assert_string_equal(wh_json_str0(ic, "name"), "wait-gcs-ready");
    assert_int_equal(cJSON_GetArraySize(wh_json_get(ic, "env")), 6);
    assert_string_equal(env(ic, "RAY_IP"), "raycluster-tpu-v6e-multihost-head-svc");
    assert_string_equal(wh_json_str0(wh_json_path(ic, "resources", "limits", NULL), "cpu"), "200m");
    const cJSON *vol = wh_json_path(pods->child, "spec", "volumes", NULL)->child;
    assert_string_equal(wh_json_str0(wh_json_get(vol, "emptyDir"), "sizeLimit"), "200G");
    const cJSON *owner = wh_json_path(pods->child, "metadata", "ownerReferences", NULL)->child;
    assert_string_equal(wh_json_str0(owner, "kind"), "RayCluster");
    assert_true(cJSON_IsTrue(wh_json_get(owner, "controller")));
    cJSON_Delete(pods);
    cJSON_Delete(rc);
}

static void test_versions(void **state)
{
    (void)state;
    cJSON *rc = sample("ray-cluster.tpu-v4-multihost.yaml");
    /* 1.5: gate off by default: no index labels, identical pods. */
    cJSON *pods = pods_of(rc, 1, 5);
    assert_int_equal(cJSON_GetArraySize(pods), 2);
    assert_null(label(pods->child, "ray.io/worker-group-replica-index"));
    assert_null(label(pods->child, "ray.io/replica-host-index"));
    const cJSON *c = wh_json_path(pods->child, "spec", "containers", NULL)->child;
    assert_null(env(c, "RAY_CLUSTER_NAMESPACE")); /* v1.6+ only */
    assert_int_equal(strncmp(wh_json_get(c, "args")->child->valuestring, "ulimit -n 65536; ", 17),
                     0);
    const char *cmd = env(c, "KUBERAY_GEN_RAY_START_CMD");
    const char *tail = "--memory=40000000000  --metrics-export-port=8080  --num-cpus=1  "
                       "--resources='{\"TPU\":4}' ";
    assert_true(strlen(cmd) > strlen(tail));
    assert_string_equal(cmd + strlen(cmd) - strlen(tail), tail);
    cJSON_Delete(pods);
    /* 1.1: the old generateName scheme. */
    pods = pods_of(rc, 1, 1);
    assert_string_equal(wh_json_str(wh_json_get(pods->child, "metadata"), "generateName"),
                        "raycluster-tpu-v4-multihost-worker-tpu-group-");
    cJSON_Delete(pods);
    /* Single host with the gate on: replica index only. */
    cJSON_Delete(rc);
    rc = sample("ray-cluster.tpu-v6e-singlehost.yaml");
    pods = pods_of(rc, 1, 6);
    assert_int_equal(cJSON_GetArraySize(pods), 1);
    assert_string_equal(label(pods->child, "ray.io/worker-group-replica-index"), "0");
    assert_null(label(pods->child, "ray.io/replica-host-index"));
    assert_null(label(pods->child, "ray.io/worker-group-replica-name"));
    cJSON_Delete(pods);
    cJSON_Delete(rc);

    int major, minor;
    char errbuf[WH_ERRBUF_LEN];
    assert_int_equal(wh_kuberay_parse_version("v1.7.0", &major, &minor, errbuf), WH_OK);
    assert_int_equal(minor, 7);
    assert_int_equal(wh_kuberay_parse_version("1.6", &major, &minor, errbuf), WH_OK);
    assert_int_equal(wh_kuberay_parse_version("2.0", &major, &minor, errbuf), WH_ERR_INVALID);
    assert_int_equal(wh_kuberay_parse_version("1.x", &major, &minor, errbuf), WH_ERR_INVALID);
    assert_int_equal(wh_kuberay_parse_version("1.6beta", &major, &minor, errbuf), WH_ERR_INVALID);
    assert_int_equal(wh_kuberay_parse_version("1", &major, &minor, errbuf), WH_ERR_INVALID);
    assert_int_equal(wh_kuberay_parse_version("1.", &major, &minor, errbuf), WH_ERR_INVALID);
    assert_int_equal(wh_kuberay_parse_version("1.100", &major, &minor, errbuf), WH_ERR_INVALID);
    assert_int_equal(wh_kuberay_parse_version("1.99999999999", &major, &minor, errbuf),
                     WH_ERR_INVALID);
    assert_int_equal(wh_kuberay_parse_version("", &major, &minor, errbuf), WH_ERR_INVALID);
    assert_int_equal(wh_kuberay_parse_version(NULL, &major, &minor, errbuf), WH_ERR_INVALID);
}

/* CheckLabel / CheckName keep the END of the whole string, however long the
 * names are (a fixed buffer once cut the end off first). */
static void test_long_names(void **state)
{
    (void)state;
    char name[201], group[321], yaml[2048];
    memset(name, 'n', 200);
    name[200] = '\0';
    name[199] = 'z';
    memset(group, 'g', 320);
    group[320] = '\0';
    group[319] = 'q';
    snprintf(yaml, sizeof(yaml),
             "apiVersion: ray.io/v1\nkind: RayCluster\nmetadata: {name: %s}\n"
             "spec:\n  headGroupSpec: {template: {spec: {containers: [{name: h}]}}}\n"
             "  workerGroupSpecs:\n  - groupName: %s\n    replicas: 1\n"
             "    template: {spec: {containers: [{name: w, image: ray}]}}\n",
             name, group);
    cJSON *rc = load(yaml);
    cJSON *pods = pods_of(rc, 1, 6);
    const char *ident = label(pods->child, "ray.io/identifier");
    assert_int_equal(strlen(ident), 63);
    assert_string_equal(ident + 63 - 9, "nz-worker");
    cJSON_Delete(pods);
    pods = pods_of(rc, 1, 1);
    const char *gen = wh_json_str(wh_json_get(pods->child, "metadata"), "generateName");
    assert_int_equal(strlen(gen), 50);
    assert_string_equal(gen + 50 - 3, "gq-");
    cJSON_Delete(pods);
    cJSON_Delete(rc);
}

static void test_order_and_sizes(void **state)
{
    (void)state;
    cJSON *rc = load("metadata: {name: c, namespace: ns}\n"
                     "spec:\n"
                     "  headGroupSpec: {rayStartParams: {port: '7000'}}\n"
                     "  workerGroupSpecs:\n"
                     "  - {groupName: a, replicas: 5, maxReplicas: 2, numOfHosts: 2,\n"
                     "     template: {metadata: {labels: {ray.io/group: evil, team: x}},\n"
                     "                spec: {containers: [{name: w}]}}}\n"
                     "  - {groupName: b, minReplicas: 1,\n"
                     "     template: {spec: {containers: [{name: w, command: [python],\n"
                     "                                     args: [x.py]}]}}}\n"
                     "  - {groupName: s, replicas: 3, suspend: true,\n"
                     "     template: {spec: {containers: [{name: w}]}}}\n");
    cJSON *pods = pods_of(rc, 1, 6);
    /* a: min(5, max 2) = 2 replicas x 2 hosts; b: nil replicas = min 1; s: suspended. */
    assert_int_equal(cJSON_GetArraySize(pods), 5);
    static const char *const want[][3] = {{"a", "0", "0"},
                                          {"a", "0", "1"},
                                          {"a", "1", "0"},
                                          {"a", "1", "1"},
                                          {"b", "0", NULL}};
    int i = 0;
    for (const cJSON *p = pods->child; p; p = p->next, i++) {
        assert_string_equal(label(p, "ray.io/group"), want[i][0]);
        assert_string_equal(label(p, "ray.io/worker-group-replica-index"), want[i][1]);
        if (want[i][2])
            assert_string_equal(label(p, "ray.io/replica-host-index"), want[i][2]);
        else
            assert_null(label(p, "ray.io/replica-host-index"));
        assert_string_equal(wh_json_str(wh_json_get(p, "metadata"), "namespace"), "ns");
    }
    /* Replicas of one group get different replica names. */
    assert_string_not_equal(label(pods->child, "ray.io/worker-group-replica-name"),
                            label(pods->child->next->next, "ray.io/worker-group-replica-name"));
    assert_string_equal(label(pods->child, "team"), "x");
    const cJSON *b = cJSON_GetArrayItem(pods, 4);
    const cJSON *c = wh_json_path(b, "spec", "containers", NULL)->child;
    const char *args = wh_json_get(c, "args")->child->valuestring;
    assert_int_equal(strncmp(args, "python x.py && ulimit -n", 24), 0);
    assert_string_equal(env(c, "RAY_PORT"), "7000");
    assert_null(wh_json_path(b, "spec", "volumes", "0", "emptyDir", "sizeLimit", NULL));
    cJSON_Delete(pods);

    long r, h;
    cJSON *g = load("{replicas: -3, numOfHosts: 0}");
    wh_kuberay_group_size(g, &r, &h);
    assert_int_equal(r, 0);
    assert_int_equal(h, 1);
    cJSON_Delete(g);
    cJSON_Delete(rc);
}

static void test_wrappers_and_errors(void **state)
{
    (void)state;
    char errbuf[WH_ERRBUF_LEN] = "";
    cJSON *job = load("kind: RayJob\nmetadata: {name: j, namespace: q}\n"
                      "spec: {rayClusterSpec: {workerGroupSpecs: []}}\n");
    cJSON *cl = NULL;
    assert_int_equal(wh_kuberay_cluster_of(job, &cl, errbuf), WH_OK);
    assert_string_equal(wh_json_str(cl, "kind"), "RayCluster");
    const char *name = wh_json_str(wh_json_get(cl, "metadata"), "name");
    assert_int_equal(strncmp(name, "j-", 2), 0);
    assert_int_equal(strlen(name), 7);
    assert_string_equal(wh_json_str(wh_json_get(cl, "metadata"), "namespace"), "q");
    cJSON_Delete(cl);
    cJSON_Delete(job);

    cJSON *svc = load("kind: RayService\nmetadata: {name: s}\n"
                      "spec: {rayClusterConfig: {workerGroupSpecs: [{groupName: g, replicas: 1,\n"
                      "  template: {spec: {containers: [{name: w}]}}}]}}\n");
    assert_int_equal(wh_kuberay_cluster_of(svc, &cl, errbuf), WH_OK);
    assert_int_equal(wh_kuberay_apply_defaults(cl), WH_OK);
    assert_int_equal(wh_json_path(cl, "spec", "workerGroupSpecs", NULL)->child
                         ? (int)wh_json_get(wh_json_path(cl, "spec", "workerGroupSpecs", NULL)->child,
                                            "numOfHosts")
                               ->valuedouble
                         : 0,
                     1);
    cJSON *pods = pods_of(cl, 1, 6);
    assert_string_equal(label(pods->child, "ray.io/serve"), "true");
    const cJSON *c = wh_json_path(pods->child, "spec", "containers", NULL)->child;
    assert_string_equal(env(c, "RAY_SERVE_KV_TIMEOUT_S"), "5");
    cJSON_Delete(pods);
    cJSON_Delete(cl);
    cJSON_Delete(svc);

    /* A nameless wrapper would give a RayCluster named "-xxxxx" (render and
     * check name one with generateName first: render.h). */
    cJSON *anon = load("kind: RayJob\nmetadata: {namespace: q}\n"
                       "spec: {rayClusterSpec: {workerGroupSpecs: []}}\n");
    assert_int_equal(wh_kuberay_cluster_of(anon, &cl, errbuf), WH_ERR_INVALID);
    assert_non_null(strstr(errbuf, "RayJob has neither metadata.name nor metadata.generateName"));
    assert_null(cl);
    cJSON_Delete(anon);

    cJSON *dep = load("kind: Deployment\nmetadata: {name: d}\n");
    assert_int_equal(wh_kuberay_cluster_of(dep, &cl, errbuf), WH_ERR_KIND);
    assert_non_null(strstr(errbuf, "Deployment d is not a RayCluster"));
    assert_null(cl);
    cJSON_Delete(dep);

    struct wh_kuberay_opts o;
    wh_kuberay_opts_init(&o, 1, 6);
    static const struct {
        const char *yaml, *needle;
        enum wh_err err;
    } bad[] = {
        {"metadata: {}\nspec: {}\n", "neither metadata.name nor", WH_ERR_INVALID},
        {"metadata: {name: x}\n", "has no spec", WH_ERR_INVALID},
        {"metadata: {name: x}\nspec: {workerGroupSpecs: {a: 1}}\n", "must be a list", WH_ERR_INVALID},
        {"metadata: {name: x}\nspec: {workerGroupSpecs: [{replicas: 1}]}\n",
         "workerGroupSpecs[0].groupName is missing", WH_ERR_INVALID},
        {"metadata: {name: x}\nspec: {workerGroupSpecs: [{groupName: g, template: {}}]}\n",
         "has no template.spec.containers", WH_ERR_INVALID},
        {"metadata: {name: x}\nspec: {workerGroupSpecs: [{groupName: g, replicas: 200,\n"
         "  numOfHosts: 64, template: {spec: {containers: [{name: w}]}}}]}\n",
         "render limit", WH_ERR_TOOBIG},
        /* Found by fuzz_yaml: 7,777 legacy pods took seconds to admit. */
        {"metadata: {name: x}\nspec: {workerGroupSpecs: [{groupName: g, replicas: 4,\n"
         "  minReplicas: 7777, maxReplicas: 4, template: {spec: {containers: [{name: w}]}}}]}\n",
         "minReplicas 7777 greater than maxReplicas 4", WH_ERR_INVALID},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        cJSON *x = load(bad[i].yaml);
        errbuf[0] = '\0';
        pods = NULL;
        assert_int_equal(wh_kuberay_worker_pods(x, &o, &pods, errbuf), bad[i].err);
        assert_null(pods);
        if (!strstr(errbuf, bad[i].needle))
            fail_msg("error '%s' lacks '%s'", errbuf, bad[i].needle);
        cJSON_Delete(x);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_v6e_16_native),       cmocka_unit_test(test_versions),
        cmocka_unit_test(test_long_names),          cmocka_unit_test(test_order_and_sizes),
        cmocka_unit_test(test_wrappers_and_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
