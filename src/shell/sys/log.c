/* log.c: one JSON line per event on stderr (see log.h). */
#include "wh/log.h"

#include <stdarg.h>    /* va_list */
#include <stdatomic.h> /* atomic_int */
#include <time.h>      /* clock_gettime, gmtime_r */
#include <unistd.h>    /* write */
#include <string.h>    /* strcmp, strlen */

#include "wh/buf.h" /* wh_buf */

static atomic_int verbosity;

void wh_log_set_verbosity(int v)
{
    atomic_store(&verbosity, v);
}

/* The --v from which a level is written. */
static int threshold(enum wh_log_level level)
{
    return level == WH_LOG_DEBUG ? 2 : level == WH_LOG_INFO ? 1 : 0;
}

bool wh_log_enabled(enum wh_log_level level)
{
    return threshold(level) <= atomic_load(&verbosity);
}

/* Cloud Logging's LogSeverity names. */
static const char *severity(enum wh_log_level level)
{
    switch (level) {
    case WH_LOG_CRITICAL: return "CRITICAL";
    case WH_LOG_ERROR: return "ERROR";
    case WH_LOG_WARN: return "WARNING";
    case WH_LOG_NOTICE:
    case WH_LOG_INFO: return "INFO";
    default: return "DEBUG";
    }
}

/* Longest string field written whole. Fields often carry what a client sent
 * (object names, uids); without a cap one huge field would overflow the
 * line buffer and the whole line, the record of that request, would be lost. */
#define FIELD_MAX 2048
#define LINE_MAX_BYTES (64 * 1024)

/* s (NULL: "") as a JSON string body, cut at FIELD_MAX. */
static enum wh_err add_body(struct wh_buf *b, const char *s)
{
    size_t len = s ? strlen(s) : 0;
    size_t keep = len;
    if (keep > FIELD_MAX) {
        keep = FIELD_MAX;
        while (keep && ((unsigned char)s[keep] & 0xC0) == 0x80)
            keep--; /* do not cut a UTF-8 sequence */
    }
    enum wh_err err = wh_buf_add_json_escaped(b, s ? s : "", keep);
    if (!err && keep < len)
        err = wh_buf_addf(b, "...(%zu bytes, truncated)", len);
    return err;
}

static enum wh_err add_str(struct wh_buf *b, const char *s)
{
    enum wh_err err = wh_buf_addc(b, '"');
    if (!err)
        err = add_body(b, s);
    if (!err)
        err = wh_buf_addc(b, '"');
    return err;
}

/* The first string among the fields under key, or NULL. */
static const char *find_str(va_list ap, const char *const keys[])
{
    const char *key;
    while ((key = va_arg(ap, const char *)) != NULL) {
        enum wh_log_type type = va_arg(ap, enum wh_log_type);
        switch (type) {
        case WH_F_STR:
        case WH_F_JSON: {
            const char *v = va_arg(ap, const char *);
            for (size_t i = 0; type == WH_F_STR && v && *v && keys[i]; i++)
                if (!strcmp(key, keys[i]))
                    return v;
            break;
        }
        case WH_F_INT: (void)va_arg(ap, long long); break;
        case WH_F_BOOL: (void)va_arg(ap, int); break;
        case WH_F_DBL: (void)va_arg(ap, double); break;
        }
    }
    return NULL;
}

/* Whether reason already opens with the event in words ("claim failed: x"
 * for claim_failed), so that the message does not say it twice. */
static bool says_event(const char *event, const char *reason)
{
    size_t i = 0;
    for (; event[i]; i++) {
        char e = event[i] == '_' ? ' ' : event[i];
        char r = reason[i];
        if (r >= 'A' && r <= 'Z')
            r = (char)(r - 'A' + 'a');
        if (e != r)
            return false;
    }
    return reason[i] == ':' || reason[i] == '\0';
}

/* "message":"...": the given text, else the event in words and the reason. */
static enum wh_err add_message(struct wh_buf *b, const char *event, const char *message,
                               const char *reason)
{
    enum wh_err err = wh_buf_add(b, "\"message\":\"");
    if (!err && message)
        err = add_body(b, message);
    bool said = reason && event && says_event(event, reason);
    for (const char *p = event; !err && !message && !said && p && *p; p++)
        err = wh_buf_addc(b, *p == '_' ? ' ' : *p);
    if (!err && !message && said) {
        err = add_body(b, reason);
    } else if (!err && !message && reason) {
        err = wh_buf_add(b, ": ");
        if (!err)
            err = add_body(b, reason);
    }
    if (!err)
        err = wh_buf_add(b, "\",\"event\":");
    if (!err)
        err = add_str(b, event);
    return err;
}

static enum wh_err add_fields(struct wh_buf *b, va_list ap)
{
    enum wh_err err = WH_OK;
    const char *key;
    while (!err && (key = va_arg(ap, const char *)) != NULL) {
        enum wh_log_type type = va_arg(ap, enum wh_log_type);
        if (!strcmp(key, "message")) { /* it is the line's message (vlog) */
            (void)va_arg(ap, const char *);
            continue;
        }
        err = wh_buf_addc(b, ',');
        if (!err)
            err = add_str(b, key);
        if (!err)
            err = wh_buf_addc(b, ':');
        if (err)
            break;
        switch (type) {
        case WH_F_STR: err = add_str(b, va_arg(ap, const char *)); break;
        case WH_F_INT: err = wh_buf_addf(b, "%lld", va_arg(ap, long long)); break;
        case WH_F_BOOL: err = wh_buf_add(b, va_arg(ap, int) ? "true" : "false"); break;
        case WH_F_DBL: err = wh_buf_addf(b, "%.6g", va_arg(ap, double)); break;
        case WH_F_JSON: {
            const char *v = va_arg(ap, const char *);
            err = wh_buf_add(b, v && *v ? v : "null");
            break;
        }
        }
    }
    return err;
}

static void vlog(enum wh_log_level level, const char *event, const char *message, va_list ap)
{
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    struct wh_buf b;
    wh_buf_init(&b, LINE_MAX_BYTES);
    enum wh_err err =
        wh_buf_addf(&b, "{\"time\":\"%04d-%02d-%02dT%02d:%02d:%02d.%06ldZ\",\"severity\":\"%s\",",
                    tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                    ts.tv_nsec / 1000, severity(level));
    /* A field named message is the message (a second "message" key would
     * make the line a JSON object with a duplicate name). */
    static const char *const message_key[] = {"message", NULL};
    static const char *const reason_keys[] = {"reason", "error", "detail", NULL};
    const char *reason = NULL, *field = NULL;
    va_list scan;
    va_copy(scan, ap);
    field = find_str(scan, message_key);
    va_end(scan);
    if (!message)
        message = field;
    if (!message) {
        va_copy(scan, ap);
        reason = find_str(scan, reason_keys);
        va_end(scan);
    }
    if (!err)
        err = add_message(&b, event, message, reason);
    if (!err)
        err = add_fields(&b, ap);
    if (!err)
        err = wh_buf_add(&b, "}\n");
    if (!err) {
        ssize_t w = write(STDERR_FILENO, wh_buf_ptr(&b), wh_buf_len(&b));
        (void)w; /* nowhere left to report a failed log write */
    }
    wh_buf_free(&b);
}

void wh_log(enum wh_log_level level, const char *event, ...)
{
    if (!wh_log_enabled(level))
        return;
    va_list ap;
    va_start(ap, event);
    vlog(level, event, NULL, ap);
    va_end(ap);
}

void wh_log_msg(enum wh_log_level level, const char *event, const char *message, ...)
{
    if (!wh_log_enabled(level))
        return;
    va_list ap;
    va_start(ap, message);
    vlog(level, event, message, ap);
    va_end(ap);
}
