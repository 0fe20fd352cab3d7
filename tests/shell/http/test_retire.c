/* test_retire.c: the retired list of reloaded objects: an object is freed
 * by the first reap more than the grace after its push, never before, and
 * the drain frees every one; each exactly once. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "retire.h"

struct obj {
    int id;
    struct wh_retire_node retire;
};

static int freed[8]; /* times each id was freed */

static void obj_free(struct wh_retire_node *node)
{
    struct obj *o = WH_RETIRED_OBJ(node, struct obj, retire);
    freed[o->id]++;
}

static void test_reap_after_grace(void **state)
{
    (void)state;
    struct obj o[3] = {{.id = 0}, {.id = 1}, {.id = 2}};
    struct wh_retire_list list = {0};
    for (int i = 0; i < 3; i++)
        freed[i] = 0;
    wh_retire_push(&list, &o[0].retire, obj_free, 1000);
    wh_retire_push(&list, &o[1].retire, obj_free, 1100);
    wh_retire_push(&list, &o[2].retire, obj_free, 1200);
    /* Exactly the grace is not past it. */
    wh_retire_reap(&list, 1000 + WH_RETIRE_GRACE_S);
    assert_int_equal(freed[0], 0);
    /* The oldest goes first, from the tail; the others stay. */
    wh_retire_reap(&list, 1001 + WH_RETIRE_GRACE_S);
    assert_int_equal(freed[0], 1);
    assert_int_equal(freed[1], 0);
    assert_int_equal(freed[2], 0);
    /* The newest, from the head, while the middle one stays. */
    o[1].retire.retired_at = 5000;
    wh_retire_reap(&list, 1201 + WH_RETIRE_GRACE_S);
    assert_int_equal(freed[1], 0);
    assert_int_equal(freed[2], 1);
    wh_retire_reap(&list, 5001 + WH_RETIRE_GRACE_S);
    assert_int_equal(freed[1], 1);
    assert_null(list.head);
    wh_retire_reap(&list, 99999);
    assert_int_equal(freed[0] + freed[1] + freed[2], 3);
}

static void test_drain_frees_all(void **state)
{
    (void)state;
    struct obj o[2] = {{.id = 3}, {.id = 4}};
    struct wh_retire_list list = {0};
    freed[3] = freed[4] = 0;
    wh_retire_drain(&list); /* empty: nothing to do */
    wh_retire_push(&list, &o[0].retire, obj_free, 2000);
    wh_retire_push(&list, &o[1].retire, obj_free, 2000);
    wh_retire_drain(&list);
    assert_int_equal(freed[3], 1);
    assert_int_equal(freed[4], 1);
    assert_null(list.head);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reap_after_grace),
        cmocka_unit_test(test_drain_frees_all),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
