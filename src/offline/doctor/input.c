/* input.c: the lists doctor reads (doctor.h): each checked to be a List
 * of its kind, nodes and Services indexed, pods read and filed; and what
 * of each listed item doctor keeps (wh_doctor_keep), so that a paged LIST's
 * memory follows what the rules read. */
#include "wh/doctor.h"

#include <stdio.h>  /* snprintf */
#include <stdlib.h> /* calloc, free */
#include <string.h> /* strcmp */

#include "doctor_impl.h" /* struct doc, wh_dr_* */
#include "wh/json.h"     /* wh_json_*, wh_fail */

/* The items of a List (or an array) whose members are objects of kind
 * (when they say their kind). */
enum wh_err wh_dr_items_of(const cJSON *list, const char *what, const char *kind,
                           const cJSON **items, char *errbuf)
{
    *items = cJSON_IsArray(list) ? list : wh_json_get(list, "items");
    if (cJSON_IsObject(list) && !*items && !strcmp(wh_json_str0(list, "kind"), kind)) {
        *items = NULL; /* a single object: treated by the caller as a one-item list */
        return wh_fail(errbuf, WH_ERR_INVALID,
                       "the %s input is one %s, not a list: give `kubectl get %s -o json` "
                       "output (a List with items)",
                       what, kind, what);
    }
    if (!cJSON_IsArray(*items))
        return wh_fail(errbuf, WH_ERR_INVALID,
                       "the %s input is not a List: it has no \"items\" array (kind %s); give "
                       "`kubectl get %s -o json` output",
                       what, cJSON_IsObject(list) ? wh_json_str0(list, "kind") : "(not an object)",
                       what);
    int i = 0;
    for (const cJSON *it = (*items)->child; it; it = it->next, i++) {
        const char *k = wh_json_str(it, "kind");
        if (!cJSON_IsObject(it) || !cJSON_IsObject(wh_json_get(it, "metadata")))
            return wh_fail(errbuf, WH_ERR_INVALID,
                           "the %s input's items[%d] is not an object with metadata", what, i);
        if (k && strcmp(k, kind))
            return wh_fail(errbuf, WH_ERR_INVALID,
                           "the %s input's items[%d] is a %.60s, expected a %s: give the %s list "
                           "to this flag",
                           what, i, k, kind, what);
    }
    return WH_OK;
}

enum wh_err wh_dr_read_nodes(struct doc *d, const cJSON *items)
{
    int n = cJSON_GetArraySize(items);
    if (n > 0 && !(d->nrecs = calloc((size_t)n, sizeof(*d->nrecs))))
        return WH_ERR_NOMEM;
    for (const cJSON *it = items->child; it; it = it->next) {
        const cJSON *meta = wh_json_get(it, "metadata"), *labels = wh_json_get(meta, "labels");
        struct wh_node_rec *r = &d->nrecs[d->n_nrecs];
        r->name = wh_json_str0(meta, "name");
        size_t nl = 0;
        for (const cJSON *kv = cJSON_IsObject(labels) ? labels->child : NULL; kv; kv = kv->next)
            nl += cJSON_IsString(kv);
        const char **kv_arr = calloc(nl ? nl * 2 : 1, sizeof(*kv_arr));
        if (!kv_arr)
            return WH_ERR_NOMEM;
        for (const cJSON *kv = cJSON_IsObject(labels) ? labels->child : NULL; kv; kv = kv->next)
            if (cJSON_IsString(kv)) {
                kv_arr[r->n_labels] = kv->string;
                kv_arr[nl + r->n_labels++] = kv->valuestring;
            }
        r->keys = kv_arr;
        r->values = kv_arr + nl;
        if (!d->by_label && !(d->by_label = wh_nodeindex_new()))
            return WH_ERR_NOMEM;
        if (wh_nodeindex_add(d->by_label, (uint32_t)d->n_nrecs, r))
            return WH_ERR_NOMEM;
        d->n_nrecs++;
        if (!wh_dr_map_get(&d->nodes, r->name) && wh_dr_map_put(&d->nodes, r->name, r))
            return WH_ERR_NOMEM;
    }
    return WH_OK;
}

enum wh_err wh_dr_read_services(struct doc *d, const cJSON *items)
{
    char key[600];
    for (const cJSON *it = items->child; it; it = it->next) {
        const cJSON *meta = wh_json_get(it, "metadata");
        snprintf(key, sizeof(key), "%s/%s", wh_json_str0(meta, "namespace"),
                 wh_json_str0(meta, "name"));
        if (!wh_dr_map_get(&d->services, key) && wh_dr_map_put(&d->services, key, (void *)it))
            return WH_ERR_NOMEM;
    }
    return WH_OK;
}

enum wh_err wh_dr_read_pods(struct doc *d, const cJSON *items)
{
    int n = cJSON_GetArraySize(items);
    if (n > 0 && !(d->pods = calloc((size_t)n, sizeof(*d->pods))))
        return WH_ERR_NOMEM;
    enum wh_err err = WH_OK;
    for (const cJSON *it = items->child; it && !err; it = it->next) {
        bool tpu = false;
        struct dpod *p = &d->pods[d->n_pods];
        err = wh_dr_read_pod(d, it, p, &tpu);
        if (!err && tpu) {
            d->n_pods++;
            err = wh_dr_file_pod(d, p);
        } else {
            free(p->c);
            p->c = NULL;
        }
    }
    return err;
}

/* Delete every member of obj but the keys given. */
static void keep_only(cJSON *obj, const char *const *keys, size_t n)
{
    for (cJSON *m = cJSON_IsObject(obj) ? obj->child : NULL, *next; m; m = next) {
        next = m->next;
        bool keep = false;
        for (size_t i = 0; i < n && !keep; i++)
            keep = m->string && !strcmp(m->string, keys[i]);
        if (!keep)
            cJSON_Delete(cJSON_DetachItemViaPointer(obj, m));
    }
}

bool wh_doctor_keep(enum wh_doctor_list which, cJSON *obj)
{
    cJSON *meta = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
    if (!cJSON_IsObject(obj) || !cJSON_IsObject(meta))
        return true;                /* wh_doctor_run names it */
    if (which == WH_DOCTOR_NODES) { /* node rules and the engine: name and labels */
        static const char *const node_meta[] = {"name", "labels"};
        static const char *const node[] = {"kind", "metadata"};
        keep_only(meta, node_meta, 2);
        keep_only(obj, node, 2);
        return true;
    }
    /* Who last wrote which field: often half an object, never read. */
    cJSON_DeleteItemFromObjectCaseSensitive(meta, "managedFields");
    if (which == WH_DOCTOR_SERVICES) {
        cJSON_DeleteItemFromObjectCaseSensitive(obj, "status");
        return true;
    }
    struct dpod p = {.obj = obj, .spec = wh_json_get(obj, "spec")};
    char eb[WH_ERRBUF_LEN];
    enum wh_err err = wh_dr_read_containers(&p, eb);
    free(p.c);
    if (!err && !(p.n_tpu > 0 && wh_dr_live(obj)))
        return false; /* not a live TPU pod: no rule reads it (read_pods) */
    /* Of the status, rules read the phase; kubectl apply's copy of the
     * manifest is read by nothing either. */
    static const char *const status[] = {"phase"};
    keep_only(cJSON_GetObjectItemCaseSensitive(obj, "status"), status, 1);
    cJSON_DeleteItemFromObjectCaseSensitive(cJSON_GetObjectItemCaseSensitive(meta, "annotations"),
                                            "kubectl.kubernetes.io/last-applied-configuration");
    return true;
}
