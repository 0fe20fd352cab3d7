/* patch.c: the JSON Patch written as text, and env injection. */
#include "wh/patch.h"

#include <string.h> /* memcpy, strcmp, strlen */

#include "wh/buf.h"      /* wh_buf_* */
#include "wh/decision.h" /* struct wh_decision, WH_PATCH_MAX_BYTES */
#include "wh/json.h"     /* wh_json_* */
#include "wh/mem.h"      /* wh_malloc */
#include "wh/names.h"    /* wh_names_*_op_ok */
#include "wh/podspec.h"  /* wh_env_lookup */
#include "wh/text.h"     /* wh_text */

enum value_kind { V_STRING, V_JSON, V_WRITTEN, V_ENV, V_ENV_ARRAY };

/* One operation as the writers see it. V_ENV writes the env entry {name,
 * value} or {name, valueFrom: {fieldRef: {fieldPath}}}, V_ENV_ARRAY a list of
 * that one entry. */
struct op {
    const char *op;   /* "add" or "replace": written as it is */
    const char *path; /* escaped as a JSON string */
    enum value_kind kind;
    const char *str;         /* V_STRING, or the entry's value (no field_path) */
    const cJSON *json;       /* V_JSON */
    wh_patch_value_fn write; /* V_WRITTEN, with its arg */
    const void *arg;
    const char *name;       /* V_ENV*: the entry's name */
    const char *field_path; /* V_ENV*: valueFrom.fieldRef.fieldPath, or NULL */
};

static enum wh_err write_entry(struct wh_buf *b, const struct op *o)
{
    enum wh_err err = wh_buf_add(b, "{\"name\":");
    if (!err)
        err = wh_json_write_string(b, o->name);
    if (!err && !o->field_path) {
        err = wh_buf_add(b, ",\"value\":");
        if (!err)
            err = wh_json_write_string(b, o->str);
    } else if (!err) {
        err = wh_buf_add(b, ",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":");
        if (!err)
            err = wh_json_write_string(b, o->field_path);
        if (!err)
            err = wh_buf_add(b, "}}");
    }
    return err ? err : wh_buf_addc(b, '}');
}

/* {"op":..,"path":..,"value":..}: the text wh_json_write gives the same
 * operation as a tree. */
static enum wh_err write_op(struct wh_buf *b, const struct op *o)
{
    enum wh_err err = wh_buf_add(b, "{\"op\":\"");
    if (!err)
        err = wh_buf_add(b, o->op);
    if (!err)
        err = wh_buf_add(b, "\",\"path\":");
    if (!err)
        err = wh_json_write_string(b, o->path);
    if (!err)
        err = wh_buf_add(b, ",\"value\":");
    if (err)
        return err;
    switch (o->kind) {
    case V_STRING: err = wh_json_write_string(b, o->str); break;
    case V_JSON: err = wh_json_write(b, o->json); break;
    case V_WRITTEN: err = o->write(b, o->arg); break;
    case V_ENV: err = write_entry(b, o); break;
    case V_ENV_ARRAY:
        err = wh_buf_addc(b, '[');
        if (!err)
            err = write_entry(b, o);
        if (!err)
            err = wh_buf_addc(b, ']');
        break;
    }
    return err ? err : wh_buf_addc(b, '}');
}

/* The first name the API server would refuse becomes d->bad_name. */
static enum wh_err check_names(struct wh_decision *d, const struct op *o)
{
    char msg[1024];
    bool ok;
    switch (o->kind) {
    case V_STRING: ok = wh_names_string_op_ok(o->path, o->str, msg, sizeof(msg)); break;
    case V_JSON: ok = wh_names_json_op_ok(o->path, o->json, msg, sizeof(msg)); break;
    case V_WRITTEN: ok = wh_names_string_op_ok(o->path, NULL, msg, sizeof(msg)); break;
    default: ok = wh_names_env_op_ok(o->path, o->name, msg, sizeof(msg)); break;
    }
    if (ok)
        return WH_OK;
    size_t n = strlen(msg) + 1;
    if (!(d->bad_name = wh_malloc(n)))
        return WH_ERR_NOMEM;
    memcpy(d->bad_name, msg, n);
    return WH_OK;
}

/* The size of o as text, for the denial of a patch it took past the limit;
 * a hostile review's values, with their escapes, are bounded by its size. */
static enum wh_err op_size(const struct op *o, size_t *n)
{
    struct wh_buf b;
    wh_buf_init(&b, (size_t)-1 / 2);
    enum wh_err err = write_op(&b, o);
    *n = wh_buf_len(&b);
    wh_buf_free(&b);
    return err;
}

static enum wh_err patch_add(struct wh_decision *d, const struct op *o)
{
    struct wh_buf *b = &d->patch;
    size_t at = wh_buf_len(b);
    enum wh_err err = d->bad_name ? WH_OK : check_names(d, o);
    if (err) { /* as a failed append: no part of the patch is left (patch.h) */
        wh_buf_free(b);
        d->n_ops = 0;
        return err;
    }
    /* The closing ']' becomes the separator: a whole document after each. */
    wh_buf_truncate(b, at ? at - 1 : 0);
    err = wh_buf_addc(b, at ? ',' : '[');
    if (!err)
        err = write_op(b, o);
    if (!err)
        err = wh_buf_addc(b, ']');
    if (!err) {
        d->n_ops++;
        return WH_OK;
    }
    d->n_ops = 0; /* a failed append empties the buffer (buf.h) */
    size_t n;
    if (err == WH_ERR_TOOBIG && !(err = op_size(o, &n))) {
        d->patch_need = (at ? at : 1) + n + 1; /* "[" or ",", the operation, "]" */
        err = WH_ERR_TOOBIG;
    }
    return err;
}

enum wh_err wh_patch_add_string(struct wh_decision *d, const char *op, const char *path,
                                const char *value)
{
    struct op o = {.op = op, .path = path, .kind = V_STRING, .str = value};
    return patch_add(d, &o);
}

enum wh_err wh_patch_add_json(struct wh_decision *d, const char *op, const char *path,
                              const cJSON *value)
{
    struct op o = {.op = op, .path = path, .kind = V_JSON, .json = value};
    return value ? patch_add(d, &o) : WH_ERR_INVALID;
}

enum wh_err wh_patch_add_written(struct wh_decision *d, const char *op, const char *path,
                                 wh_patch_value_fn write, const void *arg)
{
    struct op o = {.op = op, .path = path, .kind = V_WRITTEN, .write = write, .arg = arg};
    return patch_add(d, &o);
}

enum wh_err wh_patch_reserve(struct wh_decision *d, size_t n)
{
    size_t room = WH_PATCH_MAX_BYTES - wh_buf_len(&d->patch);
    return wh_buf_reserve(&d->patch, n < room ? n : room);
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

enum { ENV_ARRAY = -1, ENV_APPEND = -2 };

/* The path of an env operation, written without printf (a review makes
 * several): /spec/containers/<container>/env, then /<at>, nothing for
 * ENV_ARRAY or /- for ENV_APPEND. container and at are indices (>= 0). */
static void env_path(char path[static 64], int container, int at)
{
    struct wh_text t;
    wh_text_init(&t, path, 64);
    wh_text_add(&t, "/spec/containers/");
    wh_text_addl(&t, container);
    wh_text_add(&t, "/env");
    if (at >= 0) {
        wh_text_add(&t, "/");
        wh_text_addl(&t, at);
    } else if (at == ENV_APPEND) {
        wh_text_add(&t, "/-");
    }
}

static bool is_str(const cJSON *v, const char *s)
{
    return cJSON_IsString(v) && v->valuestring && !strcmp(v->valuestring, s);
}

/* Every member of obj is key: s, and there is one: what cJSON_Compare says
 * of obj and {key: s} (it looks members up by key, so repeats pass). */
static bool only_member(const cJSON *obj, const char *key,
                        bool (*same)(const cJSON *, const char *), const char *s)
{
    if (!cJSON_IsObject(obj) || !obj->child)
        return false;
    for (const cJSON *c = obj->child; c; c = c->next)
        if (!c->string || strcmp(c->string, key) || !same(c, s))
            return false;
    return true;
}

static bool is_field_ref(const cJSON *v, const char *field_path)
{
    return only_member(v, "fieldPath", is_str, field_path);
}

static bool is_value_from(const cJSON *v, const char *field_path)
{
    return only_member(v, "fieldRef", is_field_ref, field_path);
}

/* cur is the entry o writes, as cJSON_Compare (case-sensitive) would find
 * it: then no operation is needed (D6). */
static bool entry_is(const cJSON *cur, const struct op *o)
{
    const char *second = o->field_path ? "valueFrom" : "value";
    if (!cJSON_IsObject(cur) || !wh_json_get(cur, "name") || !wh_json_get(cur, second))
        return false;
    for (const cJSON *c = cur->child; c; c = c->next) {
        bool same = false;
        if (c->string && !strcmp(c->string, "name"))
            same = is_str(c, o->name);
        else if (c->string && !strcmp(c->string, second))
            same = o->field_path ? is_value_from(c, o->field_path) : is_str(c, o->str);
        if (!same)
            return false;
    }
    return true;
}

static enum wh_err env_put(struct wh_env_writer *w, struct op *o)
{
    char path[64];
    struct wh_env_lookup lk;
    wh_env_lookup(w->env, o->name, &lk);
    int at = lk.index >= 0 ? lk.index : lk.first_index;
    o->path = path;
    o->kind = V_ENV;
    if (at >= 0) {
        if (entry_is(cJSON_GetArrayItem(w->env, at), o))
            return WH_OK; /* already what we want: no operation (D6) */
        env_path(path, w->container, at);
        o->op = "replace";
        return patch_add(w->d, o);
    }
    o->op = "add";
    if (!w->initialised)
        o->kind = V_ENV_ARRAY;
    env_path(path, w->container, w->initialised ? ENV_APPEND : ENV_ARRAY);
    enum wh_err err = patch_add(w->d, o);
    if (!err)
        w->initialised = true;
    return err;
}

enum wh_err wh_env_set(struct wh_env_writer *w, const char *name, const char *value)
{
    struct op o = {.name = name, .str = value};
    return env_put(w, &o);
}

enum wh_err wh_env_set_field_ref(struct wh_env_writer *w, const char *name, const char *field_path)
{
    struct op o = {.name = name, .field_path = field_path};
    return env_put(w, &o);
}

cJSON *wh_env_entry(const char *name, const char *value, const char *field_path)
{
    cJSON *e = cJSON_CreateObject();
    enum wh_err err = e ? wh_json_set_str_lit(e, "name", name) : WH_ERR_NOMEM;
    if (!err && !field_path) {
        err = wh_json_set_str_lit(e, "value", value);
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
