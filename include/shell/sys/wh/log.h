/* log.h: structured logging, one JSON object per line on stderr (shell only).
 *
 * wh_log(WH_LOG_INFO, "admission",
 *        "uid", WH_F_STR, uid, "ops", WH_F_INT, (long long)n, (char *)NULL);
 *
 * Fields are (key, type, value) triples ended by a NULL key. Strings are
 * JSON-escaped; a string longer than 2 KiB is cut there (at a UTF-8
 * boundary) and marked with its full length, so a client-sized field
 * cannot make a line huge or get it dropped. A line is written with one
 * write(2) so concurrent threads never interleave. Never pass secrets (tokens, keys) as fields.
 */
#ifndef WH_LOG_H
#define WH_LOG_H

#include <stdbool.h> /* bool */

enum wh_log_level {
    WH_LOG_ERROR = -1, /* always written */
    WH_LOG_WARN = 0,   /* always written */
    WH_LOG_INFO = 1,   /* --v=1 and above */
    WH_LOG_DEBUG = 2,  /* --v=2 and above */
};

enum wh_log_type { WH_F_STR, WH_F_INT, WH_F_BOOL, WH_F_DBL };

/* Process-wide verbosity (klog's --v). Set once at start-up. */
void wh_log_set_verbosity(int v);
bool wh_log_enabled(enum wh_log_level level);
void wh_log(enum wh_log_level level, const char *event, ...);

#endif
