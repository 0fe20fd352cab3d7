/* fuzz_review.c: libFuzzer harness for the admission engine.
 *
 * Feeds arbitrary bytes to wh_engine_review() (WH_ROUTE_ANY, then /mutate or
 * /validate by the input length, which must agree) with a small state: two
 * existing legacy worker pods and four TPU nodes in two subblocks. Crashes,
 * leaks and sanitizer reports are found by libFuzzer/ASan; on top of that the
 * harness aborts when an answer is not well-formed:
 *   - an error without a reason in errbuf, or a success without a body;
 *   - a body that is not a JSON AdmissionReview response echoing the uid;
 *   - a denial without status.code 400 and a message, or carrying a patch;
 *   - a patch that is not base64 of a JSON array, or that does not apply
 *     (RFC 6902, wh_jsonpatch_apply) to request.object;
 *   - D6: the patched pod, reviewed again, gets a patch;
 *   - an answer that is not valid UTF-8 (issue 10);
 *   - a byte the input and the rules did not produce (issue 10: stale heap
 *     bytes of an earlier request in TORCH_TPU_SLICEBUILDER_ADDRESSES): before
 *     each input the engine reviews a pod full of a canary word, so that the
 *     heap holds it; the answer may contain the canary only if the input does.
 *
 * Build and run (clang only):
 *   cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DWH_FUZZ=ON
 *   cmake --build build-fuzz -j2 --target fuzz_review
 *   mkdir -p /tmp/fuzz-corpus
 *   build-fuzz/tests/fuzz/fuzz_review /tmp/fuzz-corpus tests/fuzz/corpus \
 *       -dict=tests/fuzz/review.dict -max_len=16384 -max_total_time=180 -rss_limit_mb=2048
 * A crash leaves crash-<sha1> in the current directory; replay it with
 *   build-fuzz/tests/fuzz/fuzz_review crash-<sha1>
 * The same function is linked into fuzz_replay (any compiler), which ctest
 * runs over the committed corpus tests/fuzz/corpus/.
 */
#include <stdbool.h> /* bool */
#include <stdint.h>  /* uint8_t */
#include <stdio.h>   /* fprintf */
#include <stdlib.h>  /* abort */
#include <string.h>  /* strcmp */
#include <strings.h> /* strncasecmp */

#include <cjson/cJSON.h>

#include "../state_fixture.h" /* WH_FIXTURE_PODS, WH_FIXTURE_NODES */
#include "wh/b64.h"           /* wh_b64_decode */
#include "wh/engine.h"        /* wh_engine_review */
#include "wh/json.h"          /* wh_json_* */
#include "wh/jsonpatch.h"     /* wh_jsonpatch_apply */
#include "wh/state.h"         /* wh_memstate */
#include "wh/utf8.h"          /* wh_utf8_char_len */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char pods_json[] = WH_FIXTURE_PODS;

/* Never produced by the rules: an answer holding it copied it from the input
 * or from the heap. */
#define CANARY "qzcanaryqz"

static const char nodes_json[] = WH_FIXTURE_NODES;

#define CHECK(cond, ...)                                               \
    do {                                                               \
        if (!(cond)) {                                                 \
            fprintf(stderr, "fuzz_review: check failed: %s: ", #cond); \
            fprintf(stderr, __VA_ARGS__);                              \
            fputc('\n', stderr);                                       \
            abort();                                                   \
        }                                                              \
    } while (0)

/* Built once; read-only afterwards. */
static struct wh_memstate *state(void)
{
    static struct wh_memstate *ms;
    if (ms)
        return ms;
    char errbuf[WH_ERRBUF_LEN];
    cJSON *p = cJSON_Parse(pods_json), *n = cJSON_Parse(nodes_json);
    ms = wh_memstate_new();
    CHECK(p && n && ms, "setup");
    CHECK(!wh_memstate_add_pods(ms, p, NULL, errbuf), "%s", errbuf);
    CHECK(!wh_memstate_add_nodes(ms, n, NULL, errbuf), "%s", errbuf);
    cJSON_Delete(p);
    cJSON_Delete(n);
    return ms;
}

/* D6: reviewing the mutated pod again gives no patch. Takes obj. */
static void check_idempotent(cJSON *review, cJSON *obj, const char *first_patch)
{
    /* In place of the first "object": an input may repeat the key, and the
     * engine reads the first one (appending would put an unpatched copy
     * first and report a false "patches again"). */
    cJSON *req = cJSON_GetObjectItemCaseSensitive(review, "request");
    if (!cJSON_ReplaceItemInObjectCaseSensitive(req, "object", obj)) {
        cJSON_Delete(obj);
        return;
    }
    char *again = cJSON_PrintUnformatted(review);
    CHECK(again, "print");
    struct wh_state st = wh_memstate_view(state());
    struct wh_engine_result res;
    char errbuf[WH_ERRBUF_LEN];
    enum wh_err err = wh_engine_review(again, strlen(again), WH_ROUTE_ANY, &st, &res, errbuf);
    CHECK(!err, "second review of the mutated pod failed: %s", errbuf);
    CHECK(res.n_ops == 0,
          "second review of the mutated pod patches again: %.600s\nfirst patch: %.600s", res.body,
          first_patch);
    wh_engine_result_free(&res);
    cJSON_free(again);
}

/* The response must be well-formed and its patch must apply to the object. */
static void check_response(const uint8_t *data, size_t size, const struct wh_engine_result *res)
{
    cJSON *out = cJSON_ParseWithLength(res->body, res->body_len);
    CHECK(out, "response is not JSON: %.300s", res->body);
    const cJSON *resp = wh_json_get(out, "response");
    CHECK(!strcmp(wh_json_str0(out, "kind"), "AdmissionReview"), "%.300s", res->body);
    CHECK(cJSON_IsObject(resp), "%.300s", res->body);
    const cJSON *allowed = wh_json_get(resp, "allowed");
    CHECK(cJSON_IsBool(allowed) && cJSON_IsTrue(allowed) == res->allowed, "%.300s", res->body);
    cJSON *sent = cJSON_ParseWithLength((const char *)data, size);
    CHECK(sent, "an accepted request does not parse");
    /* Echoed as JSON writes it: bytes that are not UTF-8 become U+FFFD. */
    struct wh_buf uid;
    wh_buf_init(&uid, 1 << 24);
    CHECK(!wh_json_write_string(&uid, wh_json_str0(wh_json_get(sent, "request"), "uid")), "uid");
    cJSON *want_uid = cJSON_ParseWithLength(wh_buf_ptr(&uid), wh_buf_len(&uid));
    CHECK(cJSON_IsString(want_uid) && !strcmp(wh_json_str0(resp, "uid"), want_uid->valuestring),
          "uid not echoed: %.300s", res->body);
    cJSON_Delete(want_uid);
    wh_buf_free(&uid);
    cJSON_Delete(sent);
    const char *patch_b64 = wh_json_str(resp, "patch");
    if (!res->allowed) {
        const cJSON *code = wh_json_path(resp, "status", "code", NULL);
        CHECK(cJSON_IsNumber(code) && code->valueint == 400 && res->code == 400, "%.300s",
              res->body);
        CHECK(res->message && *wh_json_str0(wh_json_get(resp, "status"), "message"), "%.300s",
              res->body);
        CHECK(!patch_b64 && res->n_ops == 0, "a denial carries a patch: %.300s", res->body);
    }
    if (patch_b64) {
        CHECK(!strcmp(wh_json_str0(resp, "patchType"), "JSONPatch"), "%.300s", res->body);
        struct wh_buf b;
        wh_buf_init(&b, 1 << 28);
        CHECK(!wh_b64_decode(&b, patch_b64, strlen(patch_b64)), "patch is not base64");
        CHECK(memmem(data, size, CANARY, strlen(CANARY)) || !strstr(wh_buf_ptr(&b), CANARY),
              "the patch holds bytes of an earlier review: %.600s", wh_buf_ptr(&b));
        cJSON *patch = cJSON_ParseWithLength(wh_buf_ptr(&b), wh_buf_len(&b));
        CHECK(cJSON_IsArray(patch) && (size_t)cJSON_GetArraySize(patch) == res->n_ops,
              "patch is not an array of n_ops operations: %.300s", wh_buf_ptr(&b));
        /* The same request, parsed independently, gives the object. */
        cJSON *in = cJSON_ParseWithLength((const char *)data, size);
        CHECK(in, "an accepted request does not parse");
        cJSON *obj = cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(
                                         cJSON_GetObjectItemCaseSensitive(in, "request"), "object"),
                                     1);
        char errbuf[WH_ERRBUF_LEN];
        enum wh_err err = wh_jsonpatch_apply(&obj, patch, errbuf);
        CHECK(!err, "patch does not apply: %s\npatch: %.400s", errbuf, wh_buf_ptr(&b));
        check_idempotent(in, obj, wh_buf_ptr(&b));
        cJSON_Delete(in);
        cJSON_Delete(patch);
        wh_buf_free(&b);
    } else {
        CHECK(res->n_ops == 0, "n_ops %zu without a patch", res->n_ops);
    }
    cJSON_Delete(out);
}

/* A review that leaves the canary word all over the heap: a v4 pod over 2
 * hosts whose own host list is made of it (TorchTPU addresses are built from
 * that list), with it in the uid and the names too. */
#define CANARY_HOST CANARY CANARY CANARY CANARY
static const char canary_review[] =
    "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{"
    "\"uid\":\"" CANARY
    "\",\"kind\":{\"kind\":\"Pod\"},\"operation\":\"CREATE\",\"namespace\":\"ns\","
    "\"object\":{\"metadata\":{\"generateName\":\"" CANARY "-\",\"labels\":{"
    "\"ray.io/cluster\":\"" CANARY "\",\"ray.io/group\":\"" CANARY "\","
    "\"ray.io/worker-group-replica-index\":\"0\",\"ray.io/replica-host-index\":\"1\"}},"
    "\"spec\":{\"nodeSelector\":{\"cloud.google.com/gke-tpu-accelerator\":\"tpu-v4-podslice\","
    "\"cloud.google.com/gke-tpu-topology\":\"2x2x2\"},\"containers\":[{\"name\":\"" CANARY "\","
    "\"resources\":{\"limits\":{\"google.com/tpu\":\"4\"}},\"env\":[{\"name\":"
    "\"TPU_WORKER_HOSTNAMES\",\"value\":\"" CANARY_HOST "," CANARY_HOST "\"}]}]}}}}";

static void leave_canary(const struct wh_state *st)
{
    struct wh_engine_result res;
    char errbuf[WH_ERRBUF_LEN];
    enum wh_err err = wh_engine_review(canary_review, sizeof(canary_review) - 1, WH_ROUTE_ANY, st,
                                       &res, errbuf);
    CHECK(!err && res.allowed && strstr(res.body, "\"patch\""), "canary review: %s",
          err ? errbuf : res.body);
    wh_engine_result_free(&res);
}

/* The input holds the canary in any case: the rules lowercase names (a
 * group "qzcaNaryqz" gives hostnames with "qzcanaryqz"), so that answer
 * copied it from the input, not from the heap. */
static bool has_canary(const uint8_t *data, size_t size)
{
    size_t n = strlen(CANARY);
    for (size_t i = 0; i + n <= size; i++)
        if (!strncasecmp((const char *)data + i, CANARY, n))
            return true;
    return false;
}

static void check_utf8(const char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        size_t len = wh_utf8_char_len(s + i, n - i);
        CHECK(len, "answer is not UTF-8 at byte %zu: %.300s", i, s);
        i += len;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct wh_state st = wh_memstate_view(state());
    struct wh_engine_result res, res2;
    char errbuf[WH_ERRBUF_LEN], errbuf2[WH_ERRBUF_LEN];
    leave_canary(&st);
    enum wh_err err = wh_engine_review((const char *)data, size, WH_ROUTE_ANY, &st, &res, errbuf);
    if (!err && !has_canary(data, size))
        CHECK(!strstr(res.body, CANARY), "the answer holds bytes of an earlier review: %.600s",
              res.body);
    if (!err)
        check_utf8(res.body, res.body_len);
    /* A specific route gives the same answer, or refuses the kind. */
    enum wh_route route = size % 2 ? WH_ROUTE_MUTATE : WH_ROUTE_VALIDATE;
    enum wh_err err2 = wh_engine_review((const char *)data, size, route, &st, &res2, errbuf2);
    if (err2 == WH_ERR_KIND)
        CHECK(!res2.body && errbuf2[0], "WH_ERR_KIND without a reason");
    else
        CHECK(err2 == err && (err || !strcmp(res.body, res2.body)),
              "route %d answers differently from WH_ROUTE_ANY", (int)route);
    wh_engine_result_free(&res2);
    if (err) {
        CHECK(errbuf[0] && !res.body, "error %s without a reason", wh_strerror(err));
        CHECK(err == WH_ERR_INVALID || err == WH_ERR_TOOBIG, "unexpected error %s: %s",
              wh_strerror(err), errbuf);
        return 0;
    }
    CHECK(res.body && res.body_len == strlen(res.body), "success without a body");
    check_response(data, size, &res);
    wh_engine_result_free(&res);
    return 0;
}
