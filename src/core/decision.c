/* decision.c: policy decisions. */
#include "wh/decision.h"

#include <stdarg.h> /* va_list */
#include <stdio.h>  /* vsnprintf */
#include <string.h> /* memset */

#include "wh/json.h" /* wh_json_add */
#include "wh/mem.h" /* wh_malloc, wh_free */

#define NOTES_MAX (64 * 1024)

void wh_decision_init(struct wh_decision *d)
{
    memset(d, 0, sizeof(*d));
    d->allowed = true;
    wh_buf_init(&d->notes, NOTES_MAX);
}

void wh_decision_free(struct wh_decision *d)
{
    if (!d)
        return;
    wh_free(d->message);
    cJSON_Delete(d->patch);
    cJSON_Delete(d->warnings);
    wh_buf_free(&d->notes);
    wh_decision_init(d);
}

enum wh_err wh_decision_deny(struct wh_decision *d, const char *fmt, ...)
{
    struct wh_buf b;
    wh_buf_init(&b, 16 * 1024);
    va_list ap;
    va_start(ap, fmt);
    enum wh_err err = wh_buf_vaddf(&b, fmt, ap);
    va_end(ap);
    if (err)
        return err;
    wh_free(d->message);
    d->message = wh_buf_take(&b, NULL);
    d->allowed = false;
    cJSON_Delete(d->patch);
    d->patch = NULL;
    d->assigned = false;
    return d->message ? WH_OK : WH_ERR_NOMEM;
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
    if ((size_t)n > WH_WARNING_MAX)
        memcpy(text + WH_WARNING_MAX - 3, "...", 4);
    if (!d->warnings && !(d->warnings = cJSON_CreateArray()))
        return WH_ERR_NOMEM;
    return wh_json_add(d->warnings, cJSON_CreateString(text));
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
