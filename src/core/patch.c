/* patch.c: JSON Patch operations and env injection. */
#include "wh/patch.h"

#include <string.h> /* memcpy, strlen */

#include "wh/decision.h" /* struct wh_decision, WH_PATCH_MAX_BYTES */
#include "wh/json.h"     /* wh_json_* */
#include "wh/podspec.h"  /* wh_env_lookup */

/* About how many bytes v prints to (escapes not counted): enough to keep
 * the patch near WH_PATCH_MAX_BYTES while it is built; the engine checks the
 * printed patch exactly. */
static size_t printed_size(const cJSON *v)
{
    if (cJSON_IsString(v))
        return strlen(v->valuestring) + 2;
    if (!cJSON_IsArray(v) && !cJSON_IsObject(v))
        return 24;
    size_t n = 2;
    for (const cJSON *c = v->child; c; c = c->next)
        n += 1 + (c->string ? strlen(c->string) + 3 : 0) + printed_size(c);
    return n;
}

enum wh_err wh_patch_op(struct wh_decision *d, const char *op, const char *path, cJSON *value)
{
    if (!value)
        return WH_ERR_NOMEM;
    /* {"op":"","path":"","value":}, */
    size_t size = strlen(op) + strlen(path) + printed_size(value) + 27;
    if (size > WH_PATCH_MAX_BYTES - d->patch_bytes) {
        cJSON_Delete(value);
        return WH_ERR_TOOBIG;
    }
    if (!d->patch && !(d->patch = cJSON_CreateArray())) {
        cJSON_Delete(value);
        return WH_ERR_NOMEM;
    }
    cJSON *o = cJSON_CreateObject();
    if (!o) {
        cJSON_Delete(value);
        return WH_ERR_NOMEM;
    }
    enum wh_err err = wh_json_set_str_lit(o, "op", op);
    if (!err)
        err = wh_json_set_str_lit(o, "path", path);
    if (!err)
        err = wh_json_set_lit(o, "value", value);
    else
        cJSON_Delete(value);
    if (err) {
        cJSON_Delete(o);
        return err;
    }
    if ((err = wh_json_add(d->patch, o)))
        return err;
    d->patch_bytes += size;
    return WH_OK;
}

void wh_pointer_escape(const char *token, char *out, size_t out_len)
{
    size_t o = 0;
    for (const char *p = token; *p && o + 3 < out_len; p++) {
        if (*p == '~' || *p == '/') {
            out[o++] = '~';
            out[o++] = *p == '~' ? '0' : '1';
        } else {
            out[o++] = *p;
        }
    }
    out[o] = '\0';
}

void wh_env_writer_init(struct wh_env_writer *w, struct wh_decision *d, int container,
                        const cJSON *env)
{
    w->d = d;
    w->container = container;
    w->env = env;
    /* An env that is not a list (only an input that never passed the API
     * server's decoding) is replaced whole, as an absent one is added. */
    w->initialised = cJSON_IsArray(env) && cJSON_GetArraySize(env) > 0;
}

static char *put_uint(char *p, unsigned v)
{
    char d[12];
    size_t n = 0;
    do {
        d[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (n)
        *p++ = d[--n];
    return p;
}

enum { ENV_ARRAY = -1, ENV_APPEND = -2 };

/* The path of an env operation, written without printf (a review makes
 * several): /spec/containers/<container>/env, then /<at>, nothing for
 * ENV_ARRAY or /- for ENV_APPEND. container and at are indices (>= 0). */
static void env_path(char path[static 64], int container, int at)
{
    static const char head[] = "/spec/containers/";
    memcpy(path, head, sizeof(head) - 1);
    char *p = put_uint(path + sizeof(head) - 1, (unsigned)container);
    memcpy(p, "/env", 4);
    p += 4;
    if (at >= 0) {
        *p++ = '/';
        p = put_uint(p, (unsigned)at);
    } else if (at == ENV_APPEND) {
        memcpy(p, "/-", 2);
        p += 2;
    }
    *p = '\0';
}

/* value is owned. */
static enum wh_err env_put(struct wh_env_writer *w, const char *name, cJSON *entry)
{
    char path[64];
    struct wh_env_lookup lk;
    wh_env_lookup(w->env, name, &lk);
    int at = lk.index >= 0 ? lk.index : lk.first_index;
    if (at >= 0) {
        const cJSON *cur = cJSON_GetArrayItem(w->env, at);
        if (cJSON_Compare(cur, entry, 1)) {
            cJSON_Delete(entry); /* already what we want: no operation (D6) */
            return WH_OK;
        }
        env_path(path, w->container, at);
        return wh_patch_op(w->d, "replace", path, entry);
    }
    if (!w->initialised) {
        cJSON *arr = cJSON_CreateArray();
        if (!arr) {
            cJSON_Delete(entry);
            return WH_ERR_NOMEM;
        }
        enum wh_err err = wh_json_add(arr, entry);
        if (err) {
            cJSON_Delete(arr);
            return err;
        }
        w->initialised = true;
        env_path(path, w->container, ENV_ARRAY);
        return wh_patch_op(w->d, "add", path, arr);
    }
    env_path(path, w->container, ENV_APPEND);
    return wh_patch_op(w->d, "add", path, entry);
}

/* wh_env_entry, with value pointed at instead of copied when shared. */
static cJSON *env_entry(const char *name, const char *value, const char *field_path, bool shared)
{
    cJSON *e = cJSON_CreateObject();
    enum wh_err err = e ? wh_json_set_str_lit(e, "name", name) : WH_ERR_NOMEM;
    if (!err && !field_path) {
        err = wh_json_set_lit(e, "value",
                              shared ? cJSON_CreateStringReference(value)
                                     : cJSON_CreateString(value));
    } else if (!err) {
        cJSON *vf = cJSON_CreateObject(), *fr = cJSON_CreateObject();
        err = vf && fr ? wh_json_set_str_lit(fr, "fieldPath", field_path) : WH_ERR_NOMEM;
        if (!err) {
            err = wh_json_set_lit(vf, "fieldRef", fr);
            fr = NULL;
        }
        if (!err) {
            err = wh_json_set_lit(e, "valueFrom", vf);
            vf = NULL;
        }
        cJSON_Delete(fr);
        cJSON_Delete(vf);
    }
    if (err) {
        cJSON_Delete(e);
        return NULL;
    }
    return e;
}

cJSON *wh_env_entry(const char *name, const char *value, const char *field_path)
{
    return env_entry(name, value, field_path, false);
}

enum wh_err wh_env_set(struct wh_env_writer *w, const char *name, const char *value)
{
    cJSON *e = env_entry(name, value, NULL, false);
    return e ? env_put(w, name, e) : WH_ERR_NOMEM;
}

enum wh_err wh_env_set_shared(struct wh_env_writer *w, const char *name, const char *value)
{
    cJSON *e = env_entry(name, value, NULL, true);
    return e ? env_put(w, name, e) : WH_ERR_NOMEM;
}

enum wh_err wh_env_set_field_ref(struct wh_env_writer *w, const char *name, const char *field_path)
{
    cJSON *e = wh_env_entry(name, NULL, field_path);
    return e ? env_put(w, name, e) : WH_ERR_NOMEM;
}
