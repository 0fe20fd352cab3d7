/* nswin.c: Events per namespace and window (nswin.h). */
#include "nswin.h"

#include <stddef.h> /* size_t */

static bool over(const struct wh_nswin_slot *s, long now_ms, long window_ms)
{
    return now_ms - s->start_ms >= window_ms;
}

bool wh_nswin_admit(struct wh_nswin *w, uint64_t key, long now_ms, long window_ms)
{
    struct wh_nswin_slot *sl = NULL, *spare = NULL;
    for (size_t i = 0; i < WH_EVENTS_NAMESPACES; i++) {
        struct wh_nswin_slot *x = &w->slots[i];
        if (x->key == key) {
            sl = x;
            break;
        }
        if (spare && !spare->key)
            continue; /* a free slot is the best spare */
        if (!x->key || (over(x, now_ms, window_ms) && (!spare || x->start_ms < spare->start_ms)))
            spare = x;
    }
    if (!sl && spare)
        *(sl = spare) = (struct wh_nswin_slot){.key = key, .start_ms = now_ms};
    if (!sl)
        sl = &w->overflow;
    if (over(sl, now_ms, window_ms)) {
        sl->start_ms = now_ms;
        sl->n = 0;
    }
    if (sl->n >= WH_EVENTS_PER_NAMESPACE)
        return false;
    sl->n++;
    return true;
}
