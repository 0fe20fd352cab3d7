/* output.c: JSON and YAML for the commands' -o (see output.h). */
#include "output.h"

#include <string.h> /* strcmp */

#include "wh/json.h"      /* wh_json_write, wh_json_write_string */
#include "wh/term.h"      /* wh_term_json */
#include "wh/yaml_emit.h" /* wh_yaml_emit */

static enum wh_err indent(struct wh_buf *out, int depth)
{
    enum wh_err err = wh_buf_addc(out, '\n');
    for (int i = 0; i < depth && !err; i++)
        err = wh_buf_add(out, "  ");
    return err;
}

/* One value at depth; scalars and empty containers as wh_json_write writes
 * them ({} and []), members one a line. */
static enum wh_err write_value(const cJSON *v, int depth, struct wh_buf *out)
{
    if (!(cJSON_IsObject(v) || cJSON_IsArray(v)) || !v->child)
        return wh_json_write(out, v);
    bool obj = cJSON_IsObject(v);
    enum wh_err err = wh_buf_addc(out, obj ? '{' : '[');
    for (const cJSON *c = v->child; c && !err; c = c->next) {
        if (c != v->child)
            err = wh_buf_addc(out, ',');
        if (!err)
            err = indent(out, depth + 1);
        if (!err && obj)
            err = wh_json_write_string(out, c->string ? c->string : "");
        if (!err && obj)
            err = wh_buf_add(out, ": ");
        if (!err)
            err = write_value(c, depth + 1, out);
    }
    if (!err)
        err = indent(out, depth);
    return err ? err : wh_buf_addc(out, obj ? '}' : ']');
}

enum wh_err wh_output_json(const cJSON *doc, struct wh_buf *out)
{
    /* Written whole, then DEL, C1 and the characters that reorder text as
     * \u escapes (wh_term_json): the values come from others (pod names,
     * env values) and land on a terminal. */
    struct wh_buf text;
    wh_buf_init(&text, out->max);
    enum wh_err err = write_value(doc, 0, &text);
    if (!err)
        err = wh_term_json(out, wh_buf_ptr(&text), wh_buf_len(&text));
    wh_buf_free(&text);
    return err ? err : wh_buf_addc(out, '\n');
}

enum wh_err wh_output_doc(const cJSON *doc, const char *format, struct wh_buf *out)
{
    if (!strcmp(format, "json"))
        return wh_output_json(doc, out);
    if (!strcmp(format, "yaml"))
        return wh_yaml_emit(doc, out);
    return WH_ERR_INVALID;
}
