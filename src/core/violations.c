/* violations.c: the problems a policy found (violations.h). */
#include "wh/violations.h"

#include <string.h> /* memset */

#include "wh/mem.h" /* wh_realloc, wh_strdup, wh_free */

enum wh_err wh_violations_add(struct wh_violations *v, const char *rule, const char *part,
                              const char *value, const char *message)
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
    if (!x->part || !x->value || !x->message) {
        wh_free(x->part);
        wh_free(x->value);
        wh_free(x->message);
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
    }
    wh_free(v->items);
    memset(v, 0, sizeof(*v));
}
