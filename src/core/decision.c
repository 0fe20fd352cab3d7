/* decision.c: policy decisions. */
#include "wh/decision.h"

#include <stdarg.h> /* va_list */
#include <stdio.h>  /* vsnprintf, snprintf */
#include <string.h> /* memset, memcpy, strlen, strcmp */

#include "wh/json.h" /* wh_json_add, wh_json_delete */
#include "wh/mem.h"  /* wh_malloc, wh_free */
#include "wh/utf8.h" /* wh_utf8_trim_cut */

#define NOTES_MAX (64 * 1024)

struct wh_decision_text {
    struct wh_decision_text *next;
    char *text;
};

void wh_decision_init(struct wh_decision *d)
{
    memset(d, 0, sizeof(*d));
    d->allowed = true;
    wh_buf_init(&d->patch, WH_PATCH_MAX_BYTES);
    wh_buf_init(&d->notes, NOTES_MAX);
}

void wh_decision_free(struct wh_decision *d)
{
    if (!d)
        return;
    wh_free(d->message);
    wh_buf_free(&d->patch);
    wh_free(d->bad_name);
    /* Built in this decision: in a request's arena they go with it. */
    wh_json_delete(d->warnings);
    wh_buf_free(&d->notes);
    while (d->texts) {
        struct wh_decision_text *t = d->texts;
        d->texts = t->next;
        wh_free(t->text);
        wh_free(t);
    }
    wh_decision_init(d);
}

enum wh_err wh_decision_keep(struct wh_decision *d, char *text)
{
    struct wh_decision_text *t = wh_malloc(sizeof(*t));
    if (!t) {
        wh_free(text);
        return WH_ERR_NOMEM;
    }
    t->text = text;
    t->next = d->texts;
    d->texts = t;
    return WH_OK;
}

enum wh_err wh_decision_deny(struct wh_decision *d, const char *fmt, ...)
{
    static const char cut_note[] = " [message cut]";
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        return WH_ERR_INVALID;
    /* A long message is cut, never a reason to fail: the answer must stay a
     * denial (issue 10: 1,000 failing groups made an HTTP 400). */
    size_t keep = (size_t)n > WH_MESSAGE_MAX ? WH_MESSAGE_MAX - (sizeof(cut_note) - 1) : (size_t)n;
    char *msg = wh_malloc(keep + sizeof(cut_note));
    if (!msg)
        return WH_ERR_NOMEM;
    va_start(ap, fmt);
    vsnprintf(msg, keep + 1, fmt, ap);
    va_end(ap);
    if (keep < (size_t)n) {
        wh_utf8_trim_cut(msg, keep + 1);
        memcpy(msg + strlen(msg), cut_note, sizeof(cut_note));
    }
    wh_free(d->message);
    d->message = msg;
    d->allowed = false;
    wh_buf_free(&d->patch);
    d->n_ops = 0;
    wh_free(d->bad_name); /* after the message: it may be one of the arguments */
    d->bad_name = NULL;
    d->assigned = false;
    return WH_OK;
}

/* The last line past WH_WARNINGS_MAX: its text is rewritten in place for
 * each warning it counts, in room made once for the longest count. */
#define MORE_FMT "and %zu more warnings not listed (fix the ones above to see them)"

static enum wh_err count_unlisted(struct wh_decision *d)
{
    size_t unlisted = d->n_warnings - WH_WARNINGS_MAX;
    if (!d->more) {
        char room[sizeof(MORE_FMT) + 24];
        snprintf(room, sizeof(room), MORE_FMT, (size_t)-1);
        d->more = cJSON_CreateString(room);
        enum wh_err err = wh_json_add(d->warnings, d->more);
        if (err) {
            d->more = NULL;
            return err;
        }
    }
    snprintf(d->more->valuestring, sizeof(MORE_FMT) + 24, MORE_FMT, unlisted);
    return WH_OK;
}

/* A warning cut to WH_WARNING_MAX bytes ends with "...". */
static void mark_cut(char *text)
{
    text[WH_WARNING_MAX - 3] = '\0';
    wh_utf8_trim_cut(text, WH_WARNING_MAX - 2);
    memcpy(text + strlen(text), "...", sizeof("..."));
}

enum wh_err wh_decision_warn_text(struct wh_decision *d, char *text)
{
    if (strlen(text) > WH_WARNING_MAX)
        mark_cut(text);
    if (!d->warnings && !(d->warnings = cJSON_CreateArray()))
        return WH_ERR_NOMEM;
    d->n_warnings++;
    if (d->n_warnings > WH_WARNINGS_MAX)
        return count_unlisted(d);
    return wh_json_add(d->warnings, cJSON_CreateString(text));
}

enum wh_err wh_decision_warn(struct wh_decision *d, const char *fmt, ...)
{
    char text[WH_WARNING_MAX + 1];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    if (n < 0)
        return WH_ERR_INVALID;
    if ((size_t)n > WH_WARNING_MAX) /* vsnprintf cut it */
        mark_cut(text);
    return wh_decision_warn_text(d, text);
}

enum wh_err wh_decision_note(struct wh_decision *d, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    enum wh_err err = wh_buf_vaddf(&d->notes, fmt, ap);
    va_end(ap);
    if (!err)
        err = wh_buf_addc(&d->notes, '\n');
    return err == WH_ERR_TOOBIG ? WH_OK : err; /* notes are best effort */
}

void wh_decision_event(struct wh_decision *d, const char *reason, const char *fmt, ...)
{
    for (size_t i = 0; i < d->n_events; i++)
        if (!strcmp(d->events[i].reason, reason))
            return;
    if (d->n_events >= WH_EVENT_NOTES_MAX)
        return;
    struct wh_event_note *n = &d->events[d->n_events++];
    n->reason = reason;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(n->text, sizeof(n->text), fmt, ap);
    va_end(ap);
    wh_utf8_trim_cut(n->text, sizeof(n->text));
}
