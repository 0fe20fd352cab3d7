/* log.h: structured logging, one JSON object per line on stderr (shell only).
 *
 * wh_log(WH_LOG_INFO, "admission",
 *        "uid", WH_F_STR, uid, "ops", WH_F_INT, (long long)n, (char *)NULL);
 *
 * writes
 *
 * {"time":"2026-12-01T22:47:11.123456Z","severity":"INFO","message":"admission",
 *  "event":"admission","uid":"...","ops":3}
 *
 * time is RFC 3339 UTC; severity is Cloud Logging's name (DEBUG, INFO,
 * WARNING, ERROR, CRITICAL: on GKE the agent reads severity, message and
 * time from the line, and treats a stderr line without severity as an
 * error); message is what an operator reads first: wh_log_msg's text, or
 * for wh_log the value of a field named message (written once, as the
 * message), else the event with "_" as " " followed by ": " and the value
 * of the first field named reason, error or detail, if any (that value
 * alone when it already opens with the event in words and a colon, as
 * errors made for the same event do). event is a stable
 * name to search and alert on. Fields are (key, type, value) triples ended
 * by a NULL key. Strings are JSON-escaped; a string longer than 2 KiB is cut
 * there (at a UTF-8 boundary) and marked with its full length, so a
 * client-sized field cannot make a line huge or get it dropped. WH_F_JSON
 * is a JSON value the caller built (written as is; the caller guarantees
 * it is valid JSON). A line is written with one write(2) so concurrent
 * threads never interleave. Never pass secrets (tokens, keys) as fields.
 */
#ifndef WH_LOG_H
#define WH_LOG_H

#include <stdbool.h> /* bool */

/* Levels, each with its severity and the --v at which it is written. */
enum wh_log_level {
    WH_LOG_CRITICAL, /* CRITICAL, always written: the process cannot go on */
    WH_LOG_ERROR,    /* ERROR, always written */
    WH_LOG_WARN,     /* WARNING, always written */
    WH_LOG_NOTICE,   /* INFO, always written: start-up, TLS, readiness, shutdown */
    WH_LOG_INFO,     /* INFO at --v=1 and above (one line per admission) */
    WH_LOG_DEBUG,    /* DEBUG at --v=2 and above */
};

enum wh_log_type { WH_F_STR, WH_F_INT, WH_F_BOOL, WH_F_DBL, WH_F_JSON };

/* Process-wide verbosity (klog's --v). Set once at start-up. */
void wh_log_set_verbosity(int v);
bool wh_log_enabled(enum wh_log_level level);
void wh_log(enum wh_log_level level, const char *event, ...);
/* wh_log with the message given (NULL: derived as wh_log does). */
void wh_log_msg(enum wh_log_level level, const char *event, const char *message, ...);

#endif
