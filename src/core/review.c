/* review.c: AdmissionReview parsing (the engine's input side). */
#include "wh/review.h"

#include <string.h> /* strcmp, strncmp */

#include "wh/json.h"    /* wh_json_* */
#include "wh/kinds.h"   /* wh_kinds, wh_kind_class */
#include "wh/podspec.h" /* label keys, wh_pod_is_legacy */
#include "wh/mem.h"     /* wh_calloc, wh_free */
#include "wh/utf8.h"    /* wh_utf8_cut, wh_utf8_is_ascii */

struct wh_review {
    cJSON *root;          /* owned: the whole AdmissionReview; NULL for wh_review_of_request */
    const cJSON *request; /* borrowed from root (or from the caller, or another review) */
    const cJSON *object, *old_object; /* borrowed: request's, or (wh_review_of_old) its oldObject */
    struct wh_review_info info;       /* strings borrowed from request and object */
};

/* See struct wh_review_info.cluster_uid. */
static const char *owner_cluster_uid(const cJSON *meta, const char *cluster)
{
    const cJSON *refs = wh_json_get(meta, "ownerReferences"), *ref;
    if (!cJSON_IsArray(refs) || !*cluster)
        return "";
    cJSON_ArrayForEach(ref, refs)
    {
        if (cJSON_IsTrue(wh_json_get(ref, "controller")) &&
            !strcmp(wh_json_str0(ref, "kind"), wh_kinds[WH_ROW_RAYCLUSTER].kind) &&
            !strcmp(wh_json_str0(ref, "name"), cluster))
            return wh_json_str0(ref, "uid");
    }
    return "";
}

static void read_info(struct wh_review *rv);

enum wh_err wh_review_parse(const char *body, size_t len, struct wh_review **out, char *errbuf)
{
    *out = NULL;
    if (len > WH_REVIEW_MAX_BYTES)
        return wh_fail(errbuf, WH_ERR_TOOBIG,
                       "AdmissionReview of %zu bytes is over the %zu-byte limit", len,
                       WH_REVIEW_MAX_BYTES);
    cJSON *root;
    enum wh_err err = wh_json_parse(body, len, &root, errbuf);
    if (err)
        return err;
    /* Only raw bytes can be stray: cJSON decodes \u escapes to well-formed
     * UTF-8 or refuses them (test_json's escapes_decode_to_utf8), so an
     * ASCII body, the usual one, needs no walk over its strings. */
    if (!wh_utf8_is_ascii(body, len) && wh_json_repair_utf8(root)) {
        cJSON_Delete(root);
        return wh_fail(errbuf, WH_ERR_NOMEM, "out of memory");
    }
    const char *api = wh_json_str(root, "apiVersion");
    const char *kind = wh_json_str(root, "kind");
    const cJSON *req = wh_json_get(root, "request");
    if (!cJSON_IsObject(root))
        err = wh_fail(errbuf, WH_ERR_INVALID,
                      "not an AdmissionReview: the body is not a JSON object");
    else if (kind && strcmp(kind, "AdmissionReview"))
        err = wh_fail(errbuf, WH_ERR_INVALID, "not an AdmissionReview: kind is \"%.*s\"",
                      (int)wh_utf8_cut(kind, 64), kind);
    else if (api && strncmp(api, "admission.k8s.io/", 17))
        err = wh_fail(errbuf, WH_ERR_INVALID,
                      "not an AdmissionReview: apiVersion is \"%.*s\", expected admission.k8s.io/v1",
                      (int)wh_utf8_cut(api, 64), api);
    else if (!cJSON_IsObject(req))
        err = wh_fail(errbuf, WH_ERR_INVALID, "AdmissionReview has no request object");
    else if (wh_json_has(req, "uid") && !cJSON_IsString(wh_json_get(req, "uid")))
        err = wh_fail(errbuf, WH_ERR_INVALID, "request.uid is not a string");
    struct wh_review *rv = err ? NULL : wh_calloc(1, sizeof(*rv));
    if (!err && !rv)
        err = wh_fail(errbuf, WH_ERR_NOMEM, "out of memory");
    if (err) {
        cJSON_Delete(root);
        return err;
    }
    rv->root = root;
    rv->request = req;
    rv->object = wh_json_get(req, "object");
    rv->old_object = wh_json_get(req, "oldObject");
    read_info(rv);
    *out = rv;
    return WH_OK;
}

enum wh_err wh_review_of_request(const cJSON *request, struct wh_review **out)
{
    *out = NULL;
    if (!cJSON_IsObject(request))
        return WH_ERR_INVALID;
    struct wh_review *rv = wh_calloc(1, sizeof(*rv));
    if (!rv)
        return WH_ERR_NOMEM;
    rv->request = request; /* borrowed: root stays NULL */
    rv->object = wh_json_get(request, "object");
    rv->old_object = wh_json_get(request, "oldObject");
    read_info(rv);
    *out = rv;
    return WH_OK;
}

enum wh_err wh_review_of_old(const struct wh_review *rv, struct wh_review **out)
{
    *out = NULL;
    if (!cJSON_IsObject(rv->old_object))
        return WH_ERR_INVALID;
    struct wh_review *old = wh_calloc(1, sizeof(*old));
    if (!old)
        return WH_ERR_NOMEM;
    old->request = rv->request; /* borrowed: root stays NULL */
    old->object = rv->old_object;
    read_info(old); /* old_object stays NULL */
    *out = old;
    return WH_OK;
}

/* rv->info from rv->request and rv->object: who the review is about, read
 * once. */
static void read_info(struct wh_review *rv)
{
    const cJSON *req = rv->request;
    struct wh_review_info *in = &rv->info;
    const cJSON *obj = rv->object;
    const cJSON *meta = wh_json_get(obj, "metadata");
    in->uid = wh_json_str0(req, "uid");
    in->operation = wh_json_str0(req, "operation");
    in->dry_run = cJSON_IsTrue(wh_json_get(req, "dryRun"));
    in->kind_name = wh_json_str0(wh_json_get(req, "kind"), "kind");
    in->kind = wh_kind_class(in->kind_name);
    in->object_ns = wh_json_str0(meta, "namespace");
    in->ns = wh_json_str0(req, "namespace");
    in->ns_from_request = *in->ns != '\0';
    if (!in->ns_from_request)
        in->ns = in->object_ns;
    in->object_name = wh_meta_name(meta);
    in->name = *in->object_name ? in->object_name : wh_json_str0(req, "name");
    const cJSON *labels = wh_json_get(meta, "labels");
    if (in->kind == WH_KIND_POD) {
        in->cluster = wh_json_str0(labels, WH_LABEL_CLUSTER);
        in->group = wh_json_str0(labels, WH_LABEL_GROUP);
        in->cluster_uid = owner_cluster_uid(meta, in->cluster);
        in->legacy = !strcmp(in->operation, "CREATE") && wh_pod_is_legacy(obj);
    } else {
        in->cluster = "";
        if (in->kind == WH_KIND_RAYCLUSTER)
            in->cluster = *wh_json_str0(meta, "name") ? wh_json_str0(meta, "name")
                                                      : wh_json_str0(req, "name");
        in->group = "";
        in->cluster_uid = "";
    }
}

void wh_review_free(struct wh_review *rv)
{
    if (!rv)
        return;
    cJSON_Delete(rv->root);
    wh_free(rv);
}

const struct wh_review_info *wh_review_info(const struct wh_review *rv)
{
    return &rv->info;
}

const cJSON *wh_review_object(const struct wh_review *rv)
{
    return rv->object;
}

const cJSON *wh_review_old_object(const struct wh_review *rv)
{
    return rv->old_object;
}

const char *wh_review_api_version(const struct wh_review *rv)
{
    return wh_json_str(rv->root, "apiVersion");
}
