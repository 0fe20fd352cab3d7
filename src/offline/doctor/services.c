/* services.c: the rules of a slice's names: the headless Service its
 * hosts' subdomain names, and DNS on hostNetwork; and check's and render's
 * use of the Service rules on a rendered Job (doctor.h). */
#include "wh/doctor.h"

#include <stdio.h>  /* snprintf */
#include <string.h> /* strcmp, strncmp */

#include "doctor_impl.h"  /* struct doc, wh_dr_* */
#include "wh/json.h"      /* wh_json_* */
#include "wh/kinds.h"     /* wh_kind_find */
#include "wh/megascale.h" /* wh_megascale_joined_slices */

/* The slice's subdomain (the first pod's that has one). */
static const char *subdomain_of(const struct dslice *s)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->pods[i]->subdomain && *s->pods[i]->subdomain)
            return s->pods[i]->subdomain;
    return NULL;
}

static const char *service_fix(const struct dslice *s, const char *sub, char fix[static 512])
{
    switch (s->kind) {
    case WH_ROW_RAYCLUSTER:
        return "KubeRay creates the headless Service <cluster>-headless for multi-host groups: "
               "check the operator's version and events";
    case WH_ROW_JOBSET:
        return "JobSet creates it unless spec.network.enableDNSHostnames is false: remove that";
    case WH_ROW_LWS: return "LeaderWorkerSet creates it: check the controller's events";
    default:
        snprintf(fix, 512,
                 "create a Service \"%.63s\" with clusterIP: None, publishNotReadyAddresses: "
                 "true and a selector matching the pods (job-name: <job>)",
                 sub);
        return fix;
    }
}

static enum wh_err selects_pods(struct dslice *s, const cJSON *svc, const char *name)
{
    const cJSON *sel = wh_json_path(svc, "spec", "selector", NULL);
    char want[300];
    if (!cJSON_IsObject(sel) || !sel->child) {
        struct pfields f = {"service-not-selecting", "", "Service spec.selector", "(none)",
                            "the labels of the slice's pods"};
        char fix[512];
        return wh_dr_problem(s, true, &f,
                             "without a selector Service \"%s\" publishes no pod names; %s", name,
                             service_fix(s, name, fix));
    }
    for (size_t i = 0; i < s->n; i++) {
        const struct dpod *p = s->pods[i];
        for (const cJSON *kv = sel->child; kv; kv = kv->next) {
            const char *v = wh_json_str(p->labels, kv->string);
            if (cJSON_IsString(kv) && v && !strcmp(v, kv->valuestring))
                continue;
            snprintf(want, sizeof(want), "%s=%s (Service \"%s\" selects it)", kv->string,
                     cJSON_IsString(kv) ? kv->valuestring : "?", name);
            char field[160]; /* the label the selector reads, not "metadata.labels holds x" */
            snprintf(field, sizeof(field), "metadata.labels[%.120s]", kv->string);
            struct pfields f = {"service-not-selecting", p->name, field, v ? v : "(no such label)",
                                want};
            return wh_dr_problem(s, true, &f,
                                 "the pod's name does not resolve, so its peers wait for it; make "
                                 "the Service's selector match the pods");
        }
    }
    return WH_OK;
}

enum wh_err wh_dr_service_rules(struct doc *d, struct dslice *s)
{
    const char *sub = subdomain_of(s);
    if (!d->have_services || s->hosts <= 1 || !sub)
        return WH_OK;
    char key[600];
    snprintf(key, sizeof(key), "%s/%s", s->ns, sub);
    const cJSON *svc = wh_dr_map_get(&d->services, key);
    if (!svc) {
        struct pfields f = {"service-missing", s->pods[0]->name, "spec.subdomain", sub,
                            "the name of a headless Service in the namespace"};
        char fix[512];
        return wh_dr_problem(s, true, &f,
                             "no Service \"%s/%s\": the hosts' names do not resolve; %s", s->ns,
                             sub, service_fix(s, sub, fix));
    }
    const char *ip = wh_json_str(wh_json_get(svc, "spec"), "clusterIP");
    enum wh_err err = WH_OK;
    if (!ip || strcmp(ip, "None")) {
        struct pfields f = {"service-not-headless", "", "Service spec.clusterIP",
                            ip ? ip : "(unset)", "None"};
        err = wh_dr_problem(s, true, &f,
                            "only a headless Service gives each pod a DNS name; clusterIP cannot be "
                            "changed in place: delete and re-create Service \"%s\" with clusterIP: None",
                            sub);
    }
    if (!err)
        err = selects_pods(s, svc, sub);
    const cJSON *pub = wh_json_path(svc, "spec", "publishNotReadyAddresses", NULL);
    if (!err && !cJSON_IsTrue(pub)) {
        struct pfields f = {"service-not-publishing", "", "Service spec.publishNotReadyAddresses",
                            cJSON_IsFalse(pub) ? "false" : "(unset)", "true"};
        err = wh_dr_problem(s, true, &f,
                            "the hosts must resolve each other before they are Ready, or they wait "
                            "for each other forever: kubectl patch service %s -p "
                            "'{\"spec\":{\"publishNotReadyAddresses\":true}}'",
                            sub);
    }
    return err;
}

/* The pods that reach p by cluster-DNS name, counted as the webhook counts
 * them (megascale.h, wh_megascale_joined_slices): the slice's hosts times
 * the slices MEGASCALE joins. The pod holds its MEGASCALE_NUM_SLICES already
 * (fill off); a pod whose labels tell no slice count (KubeRay's) is taken
 * at its declared count, several when that is a valueFrom. */
static long dns_world(const struct dslice *s, const struct dpod *p)
{
    long slices = p->n_slices;
    if (slices < 1 && p->n_tpu)
        slices = num_or(env_of(&p->c[0], "MEGASCALE_NUM_SLICES"), 2);
    if (slices < 1)
        slices = 1;
    return (s->hosts > 1 ? s->hosts : 1) *
           wh_megascale_joined_slices(wh_json_get(p->spec, "containers"), slices, false);
}

enum wh_err wh_dr_dns_rules(struct dslice *s)
{
    enum wh_err err = WH_OK;
    for (size_t i = 0; i < s->n && !err; i++) {
        const struct dpod *p = s->pods[i];
        /* the peers of a multi-host slice, or a multi-slice job's coordinator */
        if (dns_world(s, p) <= 1)
            continue;
        const char *pol = wh_json_str(p->spec, "dnsPolicy");
        if (!cJSON_IsTrue(wh_json_get(p->spec, "hostNetwork")) ||
            (pol && !strcmp(pol, "ClusterFirstWithHostNet")))
            continue;
        struct pfields f = {"hostnetwork-dns", p->name, "spec.dnsPolicy",
                            pol ? pol : "(unset: ClusterFirst, which is Default on hostNetwork)",
                            "ClusterFirstWithHostNet"};
        err = wh_dr_problem(s, true, &f,
                            "a hostNetwork pod uses the node's resolver and cannot resolve its "
                            "peers' cluster names; set dnsPolicy: ClusterFirstWithHostNet in the pod "
                            "template");
    }
    return err;
}

/* ---- Services of a rendered Job ---------------------------------------------- */

enum wh_err wh_doctor_service_warnings(const cJSON *workload, const cJSON *pods,
                                       const cJSON *services, cJSON *warnings, char *errbuf)
{
    /* JobSet and LWS controllers create their headless Services; a Job's is
     * the user's to write. */
    const struct wh_kind_def *def = wh_kind_find(wh_json_str0(workload, "kind"));
    if (!def || def->pods != WH_PODS_WORKLOAD || def->service_by_controller ||
        !cJSON_IsArray(pods) || !services)
        return WH_OK;
    /* A Service without a namespace lands where the Job does; render puts
     * the Job in "default" then. */
    cJSON *svcs = cJSON_Duplicate(services, 1);
    bool ok = svcs != NULL;
    for (cJSON *x = svcs ? svcs->child : NULL; x && ok; x = x->next) {
        cJSON *meta = cJSON_GetObjectItemCaseSensitive(x, "metadata");
        if (cJSON_IsObject(meta) && !*wh_json_str0(meta, "namespace"))
            ok = !wh_json_set_str(meta, "namespace", "default");
    }
    struct wh_doctor_input in = {.pods = pods, .services = svcs};
    cJSON *report = NULL;
    enum wh_err err = ok ? wh_doctor_run(&in, &report, errbuf) : WH_ERR_NOMEM;
    cJSON_Delete(svcs);
    if (err)
        return err == WH_ERR_NOMEM ? wh_fail(errbuf, err, "out of memory") : err;
    bool none = !services->child;
    const cJSON *slices = wh_json_get(report, "slices");
    for (const cJSON *s = slices ? slices->child : NULL; s && !err; s = s->next) {
        const cJSON *pr = wh_json_get(s, "problems");
        for (const cJSON *p = pr ? pr->child : NULL; p && !err; p = p->next) {
            const char *id = wh_json_str0(p, "problem");
            if (strncmp(id, "service-", 8))
                continue;
            char text[1400];
            snprintf(text, sizeof(text), "%s[%s] %s holds %s, should hold %s; %s",
                     none ? "no Service in the input: " : "", id, wh_json_str0(p, "field"),
                     wh_json_str0(p, "holds"), wh_json_str0(p, "expected"), wh_json_str0(p, "fix"));
            err = wh_json_add(warnings, cJSON_CreateString(text));
        }
    }
    cJSON_Delete(report);
    if (err)
        wh_fail(errbuf, err, "out of memory");
    return err;
}

enum wh_err wh_doctor_collect_services(const cJSON *docs, cJSON **out)
{
    cJSON *arr = cJSON_CreateArray();
    bool ok = arr != NULL;
    for (const cJSON *d = docs ? docs->child : NULL; d && ok; d = d->next) {
        const cJSON *list = wh_json_get(d, "items");
        bool is_list = !strcmp(wh_json_str0(d, "kind"), "List") && cJSON_IsArray(list);
        for (const cJSON *x = is_list ? list->child : d; x && ok; x = is_list ? x->next : NULL)
            if (!strcmp(wh_json_str0(x, "kind"), "Service"))
                ok = cJSON_AddItemReferenceToArray(arr, (cJSON *)x);
    }
    if (!ok) {
        cJSON_Delete(arr);
        arr = NULL;
    }
    *out = arr;
    return ok ? WH_OK : WH_ERR_NOMEM;
}
