/* log.c: one JSON line per event on stderr. */
#include "wh/log.h"

#include <stdarg.h>    /* va_list */
#include <stdatomic.h> /* atomic_int */
#include <time.h>      /* clock_gettime, gmtime_r */
#include <unistd.h>    /* write */
#include <string.h>    /* strlen */

#include "wh/buf.h" /* wh_buf */

static atomic_int verbosity;

void wh_log_set_verbosity(int v)
{
    atomic_store(&verbosity, v);
}

bool wh_log_enabled(enum wh_log_level level)
{
    return (int)level <= atomic_load(&verbosity);
}

static const char *level_name(enum wh_log_level level)
{
    switch (level) {
    case WH_LOG_ERROR: return "error";
    case WH_LOG_WARN: return "warn";
    case WH_LOG_INFO: return "info";
    default: return "debug";
    }
}

/* Longest string field written whole. Fields often carry what a client sent
 * (object names, uids); without a cap one huge field would overflow the
 * line buffer and the whole line, the record of that request, would be lost. */
#define FIELD_MAX 2048
#define LINE_MAX_BYTES (64 * 1024)

static enum wh_err add_str(struct wh_buf *b, const char *s)
{
    size_t len = s ? strlen(s) : 0;
    size_t keep = len;
    if (keep > FIELD_MAX) {
        keep = FIELD_MAX;
        while (keep && ((unsigned char)s[keep] & 0xC0) == 0x80)
            keep--; /* do not cut a UTF-8 sequence */
    }
    enum wh_err err = wh_buf_addc(b, '"');
    if (!err)
        err = wh_buf_add_json_escaped(b, s ? s : "", keep);
    if (!err && keep < len)
        err = wh_buf_addf(b, "...(%zu bytes, truncated)", len);
    if (!err)
        err = wh_buf_addc(b, '"');
    return err;
}

void wh_log(enum wh_log_level level, const char *event, ...)
{
    if (!wh_log_enabled(level))
        return;
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    struct wh_buf b;
    wh_buf_init(&b, LINE_MAX_BYTES);
    enum wh_err err =
        wh_buf_addf(&b,
                    "{\"ts\":\"%04d-%02d-%02dT%02d:%02d:%02d.%06ldZ\",\"level\":\"%s\",\"event\":",
                    tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                    ts.tv_nsec / 1000, level_name(level));
    if (!err)
        err = add_str(&b, event);
    va_list ap;
    va_start(ap, event);
    const char *key;
    while (!err && (key = va_arg(ap, const char *)) != NULL) {
        enum wh_log_type type = va_arg(ap, enum wh_log_type);
        err = wh_buf_addc(&b, ',');
        if (!err)
            err = add_str(&b, key);
        if (!err)
            err = wh_buf_addc(&b, ':');
        if (err)
            break;
        switch (type) {
        case WH_F_STR: err = add_str(&b, va_arg(ap, const char *)); break;
        case WH_F_INT: err = wh_buf_addf(&b, "%lld", va_arg(ap, long long)); break;
        case WH_F_BOOL: err = wh_buf_add(&b, va_arg(ap, int) ? "true" : "false"); break;
        case WH_F_DBL: err = wh_buf_addf(&b, "%.6g", va_arg(ap, double)); break;
        }
    }
    va_end(ap);
    if (!err)
        err = wh_buf_add(&b, "}\n");
    if (!err) {
        ssize_t w = write(STDERR_FILENO, wh_buf_ptr(&b), wh_buf_len(&b));
        (void)w; /* nowhere left to report a failed log write */
    }
    wh_buf_free(&b);
}
