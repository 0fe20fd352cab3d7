/* jsontree.h: exact comparison of two cJSON trees, for the parser tests
 * (tests/util/test_jparse.c, tests/fuzz/fuzz_jparse.c). Header-only: the
 * fuzz harness links no test library. */
#ifndef WH_JSONTREE_H
#define WH_JSONTREE_H

#include <stdbool.h> /* bool */
#include <string.h>  /* memcmp, strcmp */

#include <cjson/cJSON.h>

static inline bool wh_test_same_str(const char *a, const char *b)
{
    return a == b || (a && b && !strcmp(a, b));
}

/* Every field, the links included; depth is bounded by the nesting limit. */
static inline bool wh_test_same_tree(const cJSON *a, const cJSON *b)
{
    if (a->type != b->type || a->valueint != b->valueint ||
        memcmp(&a->valuedouble, &b->valuedouble, sizeof(double)) ||
        !wh_test_same_str(a->valuestring, b->valuestring) || !wh_test_same_str(a->string, b->string))
        return false;
    const cJSON *x = a->child, *y = b->child;
    if (x && (!y || x->prev == NULL || y->prev == NULL))
        return false;
    const cJSON *px = NULL, *py = NULL;
    for (; x && y; px = x, py = y, x = x->next, y = y->next)
        if ((px && (x->prev != px || y->prev != py)) || !wh_test_same_tree(x, y))
            return false;
    if (x || y)
        return false;
    /* first->prev is the last child */
    return !a->child || (a->child->prev == px && b->child->prev == py);
}

#endif
