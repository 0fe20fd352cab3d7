/* err.h: the one error enum of tpu-webhook.
 *
 * Every fallible function returns enum wh_err (WH_OK == 0) and writes results
 * through out-parameters. Human-readable detail goes into a caller-supplied
 * char errbuf[WH_ERRBUF_LEN]. A policy denial is NOT an error: it is a normal
 * engine result (allowed:false); a wh_err means the request could not be
 * answered as asked (the failurePolicy applies, or the CLI exits non-zero).
 */
#ifndef WH_ERR_H
#define WH_ERR_H

#define WH_ERRBUF_LEN 512

/* X(name, text) */
#define WH_ERR_MAP(X)                                \
    X(WH_OK, "ok")                                   \
    X(WH_ERR_NOMEM, "out of memory")                 \
    X(WH_ERR_TOOBIG, "size limit exceeded")          \
    X(WH_ERR_INVALID, "invalid input")               \
    X(WH_ERR_KIND, "unsupported kind")               \
    X(WH_ERR_IO, "input/output error")               \
    X(WH_ERR_TLS, "TLS error")                       \
    X(WH_ERR_HTTP, "HTTP error")                     \
    X(WH_ERR_UNAVAILABLE, "temporarily unavailable") \
    X(WH_ERR_NOTFOUND, "not found")                  \
    X(WH_ERR_INTERNAL, "internal error")

enum wh_err {
#define WH_ERR_ENUM(name, text) name,
    WH_ERR_MAP(WH_ERR_ENUM)
#undef WH_ERR_ENUM
        WH_ERR__COUNT
};

/* Static text for an error code; never NULL. */
const char *wh_strerror(enum wh_err err);

/* printf into errbuf (WH_ERRBUF_LEN bytes, always NUL-terminated) and return
 * err, so that a failure path reads: return wh_fail(errbuf, WH_ERR_X, "..."). */
enum wh_err wh_fail(char *errbuf, enum wh_err err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Return the error of an expression from the enclosing function, for chains
 * of calls that need no cleanup between them. */
#define WH_TRY(x)                      \
    do {                               \
        enum wh_err wh_try_err_ = (x); \
        if (wh_try_err_)               \
            return wh_try_err_;        \
    } while (0)

#if defined(__GNUC__)
#define WH_NODISCARD __attribute__((warn_unused_result))
#else
#define WH_NODISCARD
#endif

#endif /* WH_ERR_H */
