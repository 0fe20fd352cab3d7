/* violations.c: the problems a policy found (violations.h). */
#include "wh/violations.h"

#include <stdio.h>  /* snprintf */
#include <string.h> /* memset, memcpy */

#include "wh/mem.h" /* wh_malloc, wh_realloc, wh_strdup, wh_free */

bool wh_suggest_edit(struct wh_suggestion *s, size_t o, enum wh_edit_kind kind, const char *field,
                     const char *pointer, long number, const char *text)
{
    if (o >= WH_SUGGEST_OPTIONS || s->options[o].n >= WH_SUGGEST_EDITS)
        return false;
    struct wh_edit *e = &s->options[o].edits[s->options[o].n++];
    memset(e, 0, sizeof(*e));
    e->kind = kind;
    snprintf(e->field, sizeof(e->field), "%s", field);
    snprintf(e->pointer, sizeof(e->pointer), "%s", pointer);
    e->number = number;
    snprintf(e->text, sizeof(e->text), "%s", text ? text : "");
    if (s->n <= o)
        s->n = o + 1;
    return true;
}

struct wh_suggestion *wh_suggestion_dup(const struct wh_suggestion *s, bool *nomem)
{
    *nomem = false;
    if (!s || !s->n)
        return NULL;
    struct wh_suggestion *c = wh_malloc(sizeof(*c));
    if (!c) {
        *nomem = true;
        return NULL;
    }
    memcpy(c, s, sizeof(*c));
    return c;
}

enum wh_err wh_violations_add(struct wh_violations *v, const char *rule, const char *part,
                              const char *value, const char *message)
{
    return wh_violations_add_fix(v, rule, part, value, message, NULL);
}

enum wh_err wh_violations_add_fix(struct wh_violations *v, const char *rule, const char *part,
                                  const char *value, const char *message,
                                  const struct wh_suggestion *fix)
{
    if (v->n == v->cap) {
        size_t cap = v->cap ? v->cap * 2 : 8;
        struct wh_violation *items = wh_realloc(v->items, cap * sizeof(*items));
        if (!items)
            return WH_ERR_NOMEM;
        v->items = items;
        v->cap = cap;
    }
    struct wh_violation *x = &v->items[v->n];
    x->rule = rule ? rule : "";
    x->part = wh_strdup(part ? part : "");
    x->value = wh_strdup(value ? value : "");
    x->message = wh_strdup(message ? message : "");
    bool nomem;
    x->suggest = wh_suggestion_dup(fix, &nomem);
    if (!x->part || !x->value || !x->message || nomem) {
        wh_free(x->part);
        wh_free(x->value);
        wh_free(x->message);
        wh_free(x->suggest);
        return WH_ERR_NOMEM;
    }
    v->n++;
    return WH_OK;
}

void wh_violations_free(struct wh_violations *v)
{
    if (!v)
        return;
    for (size_t i = 0; i < v->n; i++) {
        wh_free(v->items[i].part);
        wh_free(v->items[i].value);
        wh_free(v->items[i].message);
        wh_free(v->items[i].suggest);
    }
    wh_free(v->items);
    memset(v, 0, sizeof(*v));
}
