/* kuberay_spec.c: the pod spec KubeRay gives a worker (docs/kuberay-pods.md
 * §4), in the order of the recipe: wait-gcs-ready, rayStartParams defaults,
 * metrics port, restartPolicy, /dev/shm, command/args, init-container env,
 * Ray-container env, probes. */
#include "wh/kuberay_spec.h"

#include <stdio.h>  /* snprintf */
#include <stdlib.h> /* strtol */
#include <string.h> /* strcmp, strlen */

#include "wh/buf.h"          /* wh_buf, for the ray start command */
#include "wh/json.h"         /* wh_json_* */
#include "wh/kuberay_json.h" /* wh_kr_* */
#include "wh/quantity.h"     /* wh_quantity_ceil */

#define DEFAULT_AGENT_PORT "52365"
#define LEGACY_PROBE_CMD \
    "wget --tries 1 -T 2 -q -O- http://localhost:%s/api/local_raylet_healthz | grep success"

static enum wh_err wait_gcs_ready(const struct wh_kr_cluster *c, cJSON *spec, const cJSON *ray)
{
    cJSON *inits = wh_kr_child(spec, "initContainers", true), *ic = cJSON_CreateObject();
    if (!inits || !ic) {
        cJSON_Delete(ic);
        return WH_ERR_NOMEM;
    }
    WH_TRY(wh_json_add(inits, ic));
    WH_TRY(wh_kr_put_str(ic, "name", "wait-gcs-ready"));
    static const char *const copied[] = {"image", "imagePullPolicy"};
    for (size_t i = 0; i < 2; i++)
        if (wh_json_has(ray, copied[i]))
            WH_TRY(wh_kr_put(ic, copied[i], cJSON_Duplicate(wh_json_get(ray, copied[i]), 1)));
    static const char *const cmd[] = {"/bin/bash", "-c", "--"};
    WH_TRY(wh_kr_put(ic, "command", cJSON_CreateStringArray(cmd, 3)));
    /* The operator's script, in substance: poll `ray health-check` every 5 s,
     * quietly for the first 120 s. */
    char script[2048];
    snprintf(script, sizeof(script),
             "SECONDS=0\n"
             "while true; do\n"
             "  if (( SECONDS <= 120 )); then\n"
             "    if ray health-check --address %s:%s > /dev/null 2>&1; then\n"
             "      echo \"GCS is ready.\"\n"
             "      break\n"
             "    fi\n"
             "    echo \"$SECONDS seconds elapsed: Waiting for GCS to be ready.\"\n"
             "  else\n"
             "    if ray health-check --address %s:%s; then\n"
             "      echo \"GCS is ready. Any error messages above can be safely ignored.\"\n"
             "      break\n"
             "    fi\n"
             "    echo \"$SECONDS seconds elapsed: Still waiting for GCS to be ready.\"\n"
             "  fi\n"
             "  sleep 5\n"
             "done\n",
             c->fqdn, c->port, c->fqdn, c->port);
    const char *args[] = {script};
    WH_TRY(wh_kr_put(ic, "args", cJSON_CreateStringArray(args, 1)));
    static const char *const more[] = {"securityContext", "env", "volumeMounts"};
    for (size_t i = 0; i < 3; i++)
        if (wh_json_has(ray, more[i]))
            WH_TRY(wh_kr_put(ic, more[i], cJSON_Duplicate(wh_json_get(ray, more[i]), 1)));
    cJSON *res = cJSON_CreateObject();
    if (!res)
        return WH_ERR_NOMEM;
    WH_TRY(wh_kr_put(ic, "resources", res));
    static const char *const kinds[] = {"limits", "requests"};
    for (size_t i = 0; i < 2; i++) {
        cJSON *q = cJSON_CreateObject();
        if (!q)
            return WH_ERR_NOMEM;
        WH_TRY(wh_json_set(res, kinds[i], q));
        WH_TRY(wh_kr_put_str(q, "cpu", "200m"));
        WH_TRY(wh_kr_put_str(q, "memory", "256Mi"));
    }
    return WH_OK;
}

/* rayStartParams with KubeRay's defaults, as strings. */
static enum wh_err start_params(const struct wh_kr_cluster *c, const cJSON *group, const cJSON *ray,
                                cJSON *params)
{
    char num[64];
    const cJSON *user = wh_json_get(group, "rayStartParams");
    for (const cJSON *p = cJSON_IsObject(user) ? user->child : NULL; p; p = p->next)
        WH_TRY(wh_kr_put_str(params, p->string, wh_kr_scalar_text(p, num, sizeof(num))));
    char addr[600];
    snprintf(addr, sizeof(addr), "%s:%s", c->fqdn, c->port);
    if (!wh_json_has(params, "address"))
        WH_TRY(wh_kr_put_str(params, "address", addr));
    if (!wh_json_has(params, "metrics-export-port"))
        WH_TRY(wh_kr_put_str(params, "metrics-export-port", "8080"));
    WH_TRY(wh_kr_put_str(params, "block", "true"));
    if (!wh_json_has(params, "dashboard-agent-listen-port"))
        WH_TRY(wh_kr_put_str(params, "dashboard-agent-listen-port", DEFAULT_AGENT_PORT));
    const cJSON *limits = wh_json_path(ray, "resources", "limits", NULL);
    const cJSON *requests = wh_json_path(ray, "resources", "requests", NULL);
    long cpus;
    const cJSON *cpu = wh_json_get(limits, "cpu") ? wh_json_get(limits, "cpu")
                                                  : wh_json_get(requests, "cpu");
    if (!wh_json_has(params, "num-cpus") && cpu && wh_quantity_ceil(cpu, &cpus)) {
        snprintf(num, sizeof(num), "%ld", cpus);
        WH_TRY(wh_kr_put_str(params, "num-cpus", num));
    }
    double bytes;
    if (!wh_json_has(params, "memory") &&
        wh_kr_quantity_units(wh_json_get(limits, "memory"), &bytes)) {
        snprintf(num, sizeof(num), "%.0f", bytes);
        WH_TRY(wh_kr_put_str(params, "memory", num));
    }
    for (const cJSON *l = cJSON_IsObject(limits) ? limits->child : NULL; l; l = l->next) {
        size_t n = strlen(l->string);
        long gpus;
        if (n >= 3 && !strcmp(l->string + n - 3, "gpu") && !wh_json_has(params, "num-gpus") &&
            wh_quantity_ceil(l, &gpus) && gpus > 0) {
            snprintf(num, sizeof(num), "%ld", gpus);
            WH_TRY(wh_kr_put_str(params, "num-gpus", num));
        }
    }
    long tpus;
    const char *res = wh_json_str(params, "resources");
    /* A user `resources` param is kept as written (KubeRay would merge TPU
     * into it unless it names TPU already). */
    if (wh_quantity_ceil(wh_json_get(limits, "google.com/tpu"), &tpus) && tpus > 0 && !res) {
        snprintf(num, sizeof(num), "'{\"TPU\":%ld}'", tpus);
        WH_TRY(wh_kr_put_str(params, "resources", num));
    }
    const cJSON *glabels = wh_json_get(group, "labels");
    if (wh_kr_at_least(c->opts, 1, 5) && cJSON_IsObject(glabels) && glabels->child &&
        !wh_json_has(params, "labels")) {
        cJSON *sorted = cJSON_Duplicate(glabels, 1);
        struct wh_buf b;
        wh_buf_init(&b, 65536);
        enum wh_err err = sorted ? wh_kr_sort_object(sorted) : WH_ERR_NOMEM;
        for (const cJSON *l = sorted ? sorted->child : NULL; !err && l; l = l->next)
            err = wh_buf_addf(&b, "%s%s=%s", l == sorted->child ? "" : ",", l->string,
                              wh_kr_scalar_text(l, num, sizeof(num)));
        cJSON_Delete(sorted);
        if (!err)
            err = wh_kr_put_str(params, "labels", wh_buf_ptr(&b));
        wh_buf_free(&b);
        WH_TRY(err);
    }
    return wh_kr_sort_object(params);
}

static enum wh_err start_command(const cJSON *params, struct wh_buf *b)
{
    WH_TRY(wh_buf_add(b, "ray start "));
    for (const cJSON *p = params->child; p; p = p->next) {
        const char *v = p->valuestring;
        if (!strcasecmp(v, "true")) {
            WH_TRY(wh_buf_addf(b, " --%s ", p->string));
        } else if (!strcasecmp(v, "false") && strcmp(p->string, "log-color") &&
                   strcmp(p->string, "include-dashboard") &&
                   strcmp(p->string, "include-log-monitor")) {
            continue;
        } else {
            WH_TRY(wh_buf_addf(b, " --%s=%s ", p->string, v));
        }
    }
    return WH_OK;
}

static enum wh_err metrics_port(cJSON *ray)
{
    cJSON *ports = wh_kr_child(ray, "ports", true);
    if (!ports)
        return WH_ERR_NOMEM;
    for (const cJSON *p = ports->child; p; p = p->next)
        if (!strcmp(wh_json_str0(p, "name"), "metrics"))
            return WH_OK;
    cJSON *p = cJSON_CreateObject();
    if (!p)
        return WH_ERR_NOMEM;
    WH_TRY(wh_json_add(ports, p));
    WH_TRY(wh_kr_put_str(p, "name", "metrics"));
    return wh_kr_put(p, "containerPort", cJSON_CreateNumber(8080));
}

static enum wh_err shared_memory(cJSON *spec, cJSON *ray, const cJSON *params)
{
    if (wh_json_has(params, "plasma-directory"))
        return WH_OK;
    const cJSON *mounts = wh_json_get(ray, "volumeMounts");
    for (const cJSON *m = cJSON_IsArray(mounts) ? mounts->child : NULL; m; m = m->next)
        if (!strcmp(wh_json_str0(m, "mountPath"), "/dev/shm"))
            return WH_OK;
    cJSON *vols = wh_kr_child(spec, "volumes", true), *v = cJSON_CreateObject(),
          *ed = cJSON_CreateObject();
    if (!vols || !v || !ed) {
        cJSON_Delete(v);
        cJSON_Delete(ed);
        return WH_ERR_NOMEM;
    }
    if (wh_json_add(vols, v)) {
        cJSON_Delete(ed);
        return WH_ERR_NOMEM;
    }
    WH_TRY(wh_kr_put_str(v, "name", "shared-mem"));
    WH_TRY(wh_kr_put(v, "emptyDir", ed));
    WH_TRY(wh_kr_put_str(ed, "medium", "Memory"));
    const cJSON *mem = wh_json_path(ray, "resources", "limits", "memory", NULL);
    if (!mem)
        mem = wh_json_path(ray, "resources", "requests", "memory", NULL);
    if (mem)
        WH_TRY(wh_kr_put(ed, "sizeLimit", cJSON_Duplicate(mem, 1)));
    cJSON *ms = wh_kr_child(ray, "volumeMounts", true), *m = cJSON_CreateObject();
    if (!ms || !m) {
        cJSON_Delete(m);
        return WH_ERR_NOMEM;
    }
    WH_TRY(wh_json_add(ms, m));
    WH_TRY(wh_kr_put_str(m, "name", "shared-mem"));
    return wh_kr_put_str(m, "mountPath", "/dev/shm");
}

static enum wh_err join_strings(const cJSON *arr, struct wh_buf *b)
{
    for (const cJSON *s = cJSON_IsArray(arr) ? arr->child : NULL; s; s = s->next) {
        if (!cJSON_IsString(s))
            continue;
        if (wh_buf_len(b))
            WH_TRY(wh_buf_addc(b, ' '));
        WH_TRY(wh_buf_add(b, s->valuestring));
    }
    return WH_OK;
}

static enum wh_err command_args(const struct wh_kr_cluster *c, cJSON *ray, const char *start)
{
    struct wh_buf user, args;
    wh_buf_init(&user, 1 << 20);
    wh_buf_init(&args, 1 << 20);
    enum wh_err err = join_strings(wh_json_get(ray, "command"), &user);
    if (!err)
        err = join_strings(wh_json_get(ray, "args"), &user);
    if (err || strstr(wh_buf_ptr(&user), "ray start") || c->overwrite_cmd)
        goto out;
    if (wh_buf_len(&user))
        err = wh_buf_addf(&args, "%s && ", wh_buf_ptr(&user));
    if (!err)
        err = wh_buf_add(&args, wh_kr_at_least(c->opts, 1, 7)
                                    ? "ulimit -n ${RAY_START_ULIMIT_OPEN_FILES:-65536}; "
                                    : "ulimit -n 65536; ");
    if (!err)
        err = wh_buf_add(&args, start);
    static const char *const cmd[] = {"/bin/bash", "-c", "--"};
    if (!err)
        err = wh_kr_put(ray, "command", cJSON_CreateStringArray(cmd, 3));
    const char *a[] = {wh_buf_ptr(&args)};
    if (!err)
        err = wh_kr_put(ray, "args", cJSON_CreateStringArray(a, 1));
out:
    wh_buf_free(&user);
    wh_buf_free(&args);
    return err;
}

static enum wh_err init_env(const struct wh_kr_cluster *c, cJSON *spec)
{
    cJSON *inits = cJSON_GetObjectItemCaseSensitive(spec, "initContainers");
    for (cJSON *ic = cJSON_IsArray(inits) ? inits->child : NULL; ic; ic = ic->next) {
        cJSON *env = wh_kr_child(ic, "env", true);
        if (!env)
            return WH_ERR_NOMEM;
        WH_TRY(wh_kr_env_put(env, "FQ_RAY_IP", c->fqdn, true));
        WH_TRY(wh_kr_env_put(env, "RAY_IP", c->head_svc, true));
    }
    return WH_OK;
}

static enum wh_err ray_env(const struct wh_kr_cluster *c, cJSON *ray, const char *start)
{
    cJSON *env = wh_kr_child(ray, "env", true);
    if (!env)
        return WH_ERR_NOMEM;
    if (c->ft)
        WH_TRY(wh_kr_env_put(env, "RAY_gcs_rpc_server_reconnect_timeout_s", "600", false));
    if (c->token_auth) {
        WH_TRY(wh_kr_env_put(env, "RAY_AUTH_MODE", "token", true));
        const char *secret = wh_json_str(wh_json_path(c->cluster, "spec", "authOptions", NULL),
                                         "secretName");
        char name[128];
        wh_kr_check_name(c->name, name, sizeof(name));
        cJSON *e = cJSON_CreateObject(), *vf = cJSON_CreateObject(), *ref = cJSON_CreateObject();
        if (!e || !vf || !ref) {
            cJSON_Delete(e);
            cJSON_Delete(vf);
            cJSON_Delete(ref);
            return WH_ERR_NOMEM;
        }
        WH_TRY(wh_json_add(env, e));
        if (wh_json_set(vf, "secretKeyRef", ref)) {
            cJSON_Delete(vf);
            return WH_ERR_NOMEM;
        }
        WH_TRY(wh_kr_put_str(e, "name", "RAY_AUTH_TOKEN"));
        WH_TRY(wh_kr_put(e, "valueFrom", vf));
        WH_TRY(wh_kr_put_str(ref, "name", secret && secret[0] ? secret : name));
        WH_TRY(wh_kr_put_str(ref, "key", "auth_token"));
    }
    WH_TRY(wh_kr_env_put(env, "FQ_RAY_IP", c->fqdn, true));
    WH_TRY(wh_kr_env_put(env, "RAY_IP", c->head_svc, true));
    WH_TRY(wh_kr_env_put_field(env, "RAY_CLUSTER_NAME", "metadata.labels['ray.io/cluster']"));
    if (wh_kr_at_least(c->opts, 1, 6))
        WH_TRY(wh_kr_env_put_field(env, "RAY_CLUSTER_NAMESPACE", "metadata.namespace"));
    WH_TRY(wh_kr_env_put_field(env, "RAY_CLOUD_INSTANCE_ID", "metadata.name"));
    WH_TRY(wh_kr_env_put_field(env, "RAY_NODE_TYPE_NAME", "metadata.labels['ray.io/group']"));
    WH_TRY(wh_kr_env_put(env, "KUBERAY_GEN_RAY_START_CMD", start, true));
    WH_TRY(wh_kr_env_put(env, "RAY_PORT", c->port, false));
    if (c->from_rayservice) {
        WH_TRY(wh_kr_env_put(env, "RAY_timeout_ms_task_wait_for_death_info", "0", false));
        WH_TRY(wh_kr_env_put(env, "RAY_gcs_server_request_timeout_seconds", "5", false));
        WH_TRY(wh_kr_env_put(env, "RAY_SERVE_KV_TIMEOUT_S", "5", false));
    }
    char addr[600];
    snprintf(addr, sizeof(addr), "%s:%s", c->fqdn, c->port);
    WH_TRY(wh_kr_env_put(env, "RAY_ADDRESS", addr, false));
    WH_TRY(wh_kr_env_put(env, "RAY_USAGE_STATS_KUBERAY_IN_USE", "1", false));
    return wh_kr_env_put(env, "RAY_DASHBOARD_ENABLE_K8S_DISK_USAGE", "1", false);
}

static long serve_port(const cJSON *ray)
{
    const cJSON *ports = wh_json_get(ray, "ports");
    for (const cJSON *p = cJSON_IsArray(ports) ? ports->child : NULL; p; p = p->next) {
        const cJSON *cp = wh_json_get(p, "containerPort");
        long port;
        if (!strcmp(wh_json_str0(p, "name"), "serve") && wh_json_whole(cp, 1, 65535, &port))
            return port;
    }
    return 8000;
}

static enum wh_err probe(const struct wh_kr_cluster *c, cJSON *ray, const char *key,
                         const char *agent, bool readiness)
{
    if (wh_json_has(ray, key))
        return WH_OK;
    cJSON *p = cJSON_CreateObject();
    if (!p)
        return WH_ERR_NOMEM;
    WH_TRY(wh_json_set(ray, key, p));
    bool serve = readiness && c->from_rayservice;
    if (c->new_ray && wh_kr_at_least(c->opts, 1, 6) && !serve) {
        cJSON *h = cJSON_CreateObject();
        if (!h)
            return WH_ERR_NOMEM;
        WH_TRY(wh_json_set(p, "httpGet", h));
        WH_TRY(wh_kr_put_str(h, "path", "/api/healthz"));
        long port = strtol(agent, NULL, 10);
        WH_TRY(wh_kr_put(h, "port", cJSON_CreateNumber((double)(port > 0 ? port : 52365))));
    } else {
        char cmd[512];
        int n = snprintf(cmd, sizeof(cmd), LEGACY_PROBE_CMD, agent);
        if (serve && n > 0 && (size_t)n < sizeof(cmd))
            snprintf(cmd + n, sizeof(cmd) - (size_t)n,
                     " && wget --tries 1 -T 2 -q -O- http://localhost:%ld/-/healthz | grep "
                     "success",
                     serve_port(ray));
        const char *argv[] = {"bash", "-c", cmd};
        cJSON *ex = cJSON_CreateObject();
        if (!ex)
            return WH_ERR_NOMEM;
        WH_TRY(wh_json_set(p, "exec", ex));
        WH_TRY(wh_kr_put(ex, "command", cJSON_CreateStringArray(argv, 3)));
    }
    WH_TRY(wh_kr_put(p, "initialDelaySeconds", cJSON_CreateNumber(readiness ? 10 : 30)));
    WH_TRY(wh_kr_put(p, "timeoutSeconds", cJSON_CreateNumber(2)));
    WH_TRY(wh_kr_put(p, "periodSeconds", cJSON_CreateNumber(5)));
    WH_TRY(wh_kr_put(p, "successThreshold", cJSON_CreateNumber(1)));
    return wh_kr_put(p, "failureThreshold", cJSON_CreateNumber(readiness ? (serve ? 1 : 10) : 120));
}

enum wh_err wh_kr_build_spec(const struct wh_kr_cluster *c, const cJSON *group, cJSON *spec)
{
    cJSON *containers = cJSON_GetObjectItemCaseSensitive(spec, "containers");
    cJSON *ray = cJSON_IsArray(containers) ? containers->child : NULL;
    if (!cJSON_IsObject(ray))
        return WH_ERR_INVALID; /* checked by the caller with a message */
    WH_TRY(wait_gcs_ready(c, spec, ray));
    cJSON *params = cJSON_CreateObject();
    if (!params)
        return WH_ERR_NOMEM;
    struct wh_buf start;
    wh_buf_init(&start, 1 << 20);
    enum wh_err err = start_params(c, group, ray, params);
    if (!err)
        err = metrics_port(ray);
    if (!err && c->autoscaler_v2)
        err = wh_kr_put_str(spec, "restartPolicy", "Never");
    if (!err)
        err = shared_memory(spec, ray, params);
    if (!err)
        err = start_command(params, &start);
    if (!err)
        err = command_args(c, ray, wh_buf_ptr(&start));
    if (!err)
        err = init_env(c, spec);
    if (!err)
        err = ray_env(c, ray, wh_buf_ptr(&start));
    const char *agent = wh_json_str(params, "dashboard-agent-listen-port");
    if (!err)
        err = probe(c, ray, "livenessProbe", agent ? agent : DEFAULT_AGENT_PORT, false);
    if (!err)
        err = probe(c, ray, "readinessProbe", agent ? agent : DEFAULT_AGENT_PORT, true);
    wh_buf_free(&start);
    cJSON_Delete(params);
    return err;
}
