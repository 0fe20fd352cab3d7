/* mhderr.c: libmicrohttpd's own error answers, sent as Status objects. See
 * wh/mhderr.h for why this interposes gnutls_record_send. */
#include "mhderr.h"

#include <dlfcn.h>     /* dlsym, RTLD_NEXT */
#include <pthread.h>   /* pthread_once, pthread_mutex_t */
#include <stdatomic.h> /* atomic_int */
#include <stdbool.h>   /* bool */
#include <stdint.h>    /* uintptr_t */
#include <stdio.h>     /* snprintf */
#include <string.h>    /* memchr, memcmp */

#include <curl/curl.h>     /* curl_version_info */
#include <gnutls/gnutls.h> /* gnutls_session_t */

#include "wh/log.h" /* wh_log */

typedef ssize_t (*record_send_fn)(gnutls_session_t, const void *, size_t);
typedef ssize_t (*record_recv_fn)(gnutls_session_t, void *, size_t);
typedef void (*deinit_fn)(gnutls_session_t);

static record_send_fn real_send;
static record_recv_fn real_recv;
static deinit_fn real_deinit;
static pthread_once_t resolve_once = PTHREAD_ONCE_INIT;
/* The NUL check on reads; off when libcurl reads through GnuTLS too (its
 * HTTP/2 frames and gzip bodies to the Kubernetes API hold NUL bytes). */
static atomic_bool guard_reads;

static void resolve(void)
{
    real_send = (record_send_fn)dlsym(RTLD_NEXT, "gnutls_record_send");
    real_recv = (record_recv_fn)dlsym(RTLD_NEXT, "gnutls_record_recv");
    real_deinit = (deinit_fn)dlsym(RTLD_NEXT, "gnutls_deinit");
}

bool wh_mhderr_install(bool *reads_guarded)
{
    pthread_once(&resolve_once, resolve);
    const curl_version_info_data *cv = curl_version_info(CURLVERSION_NOW);
    bool curl_gnutls = !cv || !cv->ssl_version || strstr(cv->ssl_version, "GnuTLS");
    atomic_store(&guard_reads, !curl_gnutls);
    *reads_guarded = !curl_gnutls;
    return real_send && real_recv && real_deinit &&
           dlsym(RTLD_DEFAULT, "gnutls_record_send") == (void *)gnutls_record_send &&
           dlsym(RTLD_DEFAULT, "gnutls_record_recv") == (void *)gnutls_record_recv;
}

/* Sessions whose answer was replaced: what libmicrohttpd still writes on
 * them is dropped until they close. Few at a time (each closes right after
 * its answer); when the table is full the answer goes out as libmicrohttpd
 * wrote it. `unsent`: the replacement is still buffered in GnuTLS (the
 * socket was full), and libmicrohttpd was told EAGAIN: its retry, when its
 * event loop finds the socket writable, flushes it. */
#define MUTED_MAX 64
static pthread_mutex_t muted_lock = PTHREAD_MUTEX_INITIALIZER;
static gnutls_session_t muted[MUTED_MAX];
static bool unsent[MUTED_MAX];
static atomic_int n_muted;

/* s's slot in the table, or -1. */
static int muted_slot(gnutls_session_t s)
{
    if (atomic_load(&n_muted) == 0) /* the common case: no lock */
        return -1;
    int found = -1;
    pthread_mutex_lock(&muted_lock);
    for (int i = 0; i < MUTED_MAX && found < 0; i++)
        if (muted[i] == s)
            found = i;
    pthread_mutex_unlock(&muted_lock);
    return found;
}

static bool is_muted(gnutls_session_t s)
{
    return muted_slot(s) >= 0;
}

/* s's new slot, or -1 when the table is full. */
static int mute(gnutls_session_t s)
{
    int slot = -1;
    pthread_mutex_lock(&muted_lock);
    for (int i = 0; i < MUTED_MAX && slot < 0; i++)
        if (!muted[i]) {
            muted[i] = s;
            unsent[i] = false;
            atomic_fetch_add(&n_muted, 1);
            slot = i;
        }
    pthread_mutex_unlock(&muted_lock);
    return slot;
}

static void set_unsent(int slot, bool v)
{
    pthread_mutex_lock(&muted_lock);
    unsent[slot] = v;
    pthread_mutex_unlock(&muted_lock);
}

static bool is_unsent(int slot)
{
    pthread_mutex_lock(&muted_lock);
    bool v = unsent[slot];
    pthread_mutex_unlock(&muted_lock);
    return v;
}

/* The connection of `s` is gone: a later session may reuse the address. */
static void forget(gnutls_session_t s)
{
    if (atomic_load(&n_muted) == 0 || !s)
        return;
    pthread_mutex_lock(&muted_lock);
    for (int i = 0; i < MUTED_MAX; i++)
        if (muted[i] == s) {
            muted[i] = NULL;
            atomic_fetch_sub(&n_muted, 1);
        }
    pthread_mutex_unlock(&muted_lock);
}

/* Sessions on which the webhook has queued an answer that is not yet sent
 * (wh_mhderr_mark): every byte written on them is the webhook's. A slot
 * holds a session or NULL; marking takes a free slot with a compare and
 * swap, unmarking gives it back, and a lookup (rare: only for a write that
 * reads like an error header block) scans them all. More answers in flight
 * than slots: `unmarked` counts them, and while it is not zero nothing is
 * rewritten (libmicrohttpd's own answers then keep their HTML bodies). */
#define MARKS_MAX 4096
static _Atomic(gnutls_session_t) marks[MARKS_MAX];
static atomic_int unmarked;

int wh_mhderr_mark(gnutls_session_t session)
{
    size_t h = ((size_t)(uintptr_t)session >> 4) % MARKS_MAX;
    for (size_t i = 0; i < MARKS_MAX; i++) {
        size_t k = (h + i) % MARKS_MAX;
        gnutls_session_t none = NULL;
        if (!atomic_load_explicit(&marks[k], memory_order_relaxed) &&
            atomic_compare_exchange_strong(&marks[k], &none, session))
            return (int)k + 1;
    }
    atomic_fetch_add(&unmarked, 1);
    return -1;
}

void wh_mhderr_unmark(gnutls_session_t session, int mark)
{
    if (mark < 0) {
        atomic_fetch_sub(&unmarked, 1);
    } else if (mark > 0 && mark <= MARKS_MAX) {
        /* Only if still ours: gnutls_deinit may have cleared it already. */
        gnutls_session_t mine = session;
        atomic_compare_exchange_strong(&marks[mark - 1], &mine, NULL);
    }
}

/* The webhook's answer is being written on s, or cannot be told apart. */
static bool webhook_writes(gnutls_session_t s)
{
    if (atomic_load(&unmarked) > 0)
        return true;
    for (size_t i = 0; i < MARKS_MAX; i++)
        if (atomic_load_explicit(&marks[i], memory_order_acquire) == s)
            return true;
    return false;
}

/* A session freed with its mark still set (a request libmicrohttpd never
 * completed): the address may be a new session's next. */
static void unmark_all(gnutls_session_t s)
{
    for (size_t i = 0; i < MARKS_MAX; i++) {
        gnutls_session_t mine = s;
        if (atomic_load_explicit(&marks[i], memory_order_relaxed) == s)
            atomic_compare_exchange_strong(&marks[i], &mine, NULL);
    }
}

/* The status of what reads like an error header block ("HTTP/1.x NNN ",
 * 400 or more), or 0. Only the state says whose it is (webhook_writes):
 * a body the webhook writes may hold the same text (a name echoed in a
 * warning), at the start of a write that resumes after a partial one. */
static unsigned error_status(const char *p, size_t len)
{
    if (len < 13 || memcmp(p, "HTTP/1.", 7) || p[8] != ' ' || p[12] != ' ')
        return 0;
    unsigned code = 0;
    for (int i = 9; i < 12; i++) {
        if (p[i] < '0' || p[i] > '9')
            return 0;
        code = code * 10 + (unsigned)(p[i] - '0');
    }
    return code >= 400 ? code : 0;
}

struct answer {
    unsigned code;
    const char *reason;        /* HTTP reason phrase */
    const char *status_reason; /* the Status object's reason */
    const char *message;
};

static const struct answer answers[] = {
    {400, "Bad Request", "BadRequest",
     "malformed HTTP request: its request line, a header line (each needs a colon), "
     "its Content-Length (a decimal number) or its chunked framing could not be parsed; "
     "send a well-formed HTTP/1.1 request"},
    {413, "Content Too Large", "RequestEntityTooLarge",
     "request too large: its Content-Length or a chunk size is beyond what the webhook "
     "reads; an AdmissionReview is at most a few megabytes"},
    {414, "URI Too Long", "RequestURITooLong",
     "request line too long for the webhook's per-connection memory; the webhook serves "
     "short paths such as /mutate and /validate"},
    {431, "Request Header Fields Too Large", "RequestHeaderFieldsTooLarge",
     "header block too large for the webhook's per-connection memory; send fewer or "
     "shorter headers"},
    {505, "HTTP Version Not Supported", "HTTPVersionNotSupported",
     "HTTP version not supported; use HTTP/1.1 (or HTTP/1.0)"},
};

/* HTTP allows no NUL in the request line or a header, JSON none in a body
 * (it is written \u0000), and libmicrohttpd would cut its strings at one. */
static const struct answer nul_byte =
    {400, "Bad Request", "BadRequest",
     "raw NUL byte in the request: HTTP forbids it in the request line and headers, JSON in "
     "the body (write \\u0000); send a well-formed HTTP/1.1 request"};

static const struct answer fallback =
    {500, "Internal Server Error", "InternalError",
     "the HTTP layer refused the request before the webhook saw it; send a well-formed "
     "HTTP/1.1 request"};

/* Hand text (one TLS record: under 1 KiB) to GnuTLS, never waiting for
 * the socket: on a serving thread a wait stalls every connection of the
 * thread. GNUTLS_E_AGAIN: the record stays buffered in GnuTLS until a
 * retry (send_pending); otherwise what real_send said. */
static ssize_t send_once(gnutls_session_t s, const char *text, size_t len)
{
    ssize_t n = real_send(s, text, len);
    return n == GNUTLS_E_INTERRUPTED ? real_send(s, NULL, 0) : n;
}

/* libmicrohttpd's retry of a write that was told EAGAIN while the
 * replacement of slot was still buffered: flush it (no wait), and drop
 * libmicrohttpd's own bytes once it is out. */
static ssize_t send_pending(gnutls_session_t s, int slot, size_t data_size)
{
    ssize_t n = real_send(s, NULL, 0);
    if (n == GNUTLS_E_AGAIN || n == GNUTLS_E_INTERRUPTED)
        return n;
    set_unsent(slot, false);
    return n < 0 ? n : (ssize_t)data_size;
}

static const struct answer *answer_for(unsigned code)
{
    for (size_t i = 0; i < sizeof(answers) / sizeof(answers[0]); i++)
        if (answers[i].code == code)
            return &answers[i];
    return &fallback;
}

/* Send a's answer on s in place of libmicrohttpd's; false when it is
 * still buffered in GnuTLS (the socket is full: slot marked unsent). */
static bool replace(gnutls_session_t s, int slot, const struct answer *a)
{
    unsigned code = a->code;
    char body[768], text[1024];
    int nb = snprintf(body, sizeof(body),
                      "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},"
                      "\"status\":\"Failure\",\"message\":\"%s\",\"reason\":\"%s\",\"code\":%u}",
                      a->message, a->status_reason, code);
    int nt = snprintf(text, sizeof(text),
                      "HTTP/1.1 %u %s\r\nConnection: close\r\nContent-Type: application/json\r\n"
                      "X-Content-Type-Options: nosniff\r\nContent-Length: %d\r\n\r\n%s",
                      code, a->reason, nb, body);
    ssize_t n = nb > 0 && (size_t)nb < sizeof(body) && nt > 0 && (size_t)nt < sizeof(text)
                    ? send_once(s, text, (size_t)nt)
                    : GNUTLS_E_INTERNAL_ERROR;
    bool waits = n == GNUTLS_E_AGAIN;
    if (waits)
        set_unsent(slot, true);
    wh_log(WH_LOG_INFO, "http_refused", "code", WH_F_INT, (long long)code, "reason", WH_F_STR,
           a->status_reason, "sent", WH_F_BOOL, (int)(n > 0), "socket_full", WH_F_BOOL, (int)waits,
           (char *)NULL);
    return !waits;
}

/* GnuTLS sends at most one record (16 KiB) per call, and libmicrohttpd
 * goes back to its event loop between calls: the 350 KB answer of a 256-host
 * slice cost 22 rounds of that loop, each with an epoll_wait. Records are
 * sent here while the socket takes them, up to SEND_BURST bytes per call
 * (other connections of the thread wait at most that long). A record that
 * would block after others went out is left buffered in GnuTLS and the bytes
 * sent are returned: libmicrohttpd's next call starts at the same place,
 * the retry GnuTLS asks for. */
#define SEND_BURST ((size_t)256 * 1024)

static ssize_t send_burst(gnutls_session_t session, const char *data, size_t data_size)
{
    size_t sent = 0;
    for (;;) {
        ssize_t n = real_send(session, data + sent, data_size - sent);
        if (n <= 0)
            return sent ? (ssize_t)sent : n;
        sent += (size_t)n;
        if (sent >= data_size || sent >= SEND_BURST)
            return (ssize_t)sent;
    }
}

/* The interposer: libmicrohttpd's calls land here, the webhook's own TLS
 * writes too (they pass through). */
ssize_t gnutls_record_send(gnutls_session_t session, const void *data, size_t data_size)
{
    pthread_once(&resolve_once, resolve);
    if (!real_send)
        return GNUTLS_E_INTERNAL_ERROR;
    int slot = muted_slot(session);
    if (slot >= 0) /* what follows a replaced answer, once that is out */
        return is_unsent(slot) ? send_pending(session, slot, data_size) : (ssize_t)data_size;
    unsigned code = error_status(data, data_size);
    if (code && !webhook_writes(session) && (slot = mute(session)) >= 0)
        /* libmicrohttpd retries an EAGAIN when its event loop finds the
         * socket writable: the replacement's flush, not a wait here. */
        return replace(session, slot, answer_for(code)) ? (ssize_t)data_size : GNUTLS_E_AGAIN;
    return send_burst(session, data, data_size);
}

/* libmicrohttpd's reads land here. A NUL anywhere in what a client sends is
 * malformed whatever it belongs to (request line, header, JSON body), and
 * past this point libmicrohttpd would see its strings cut at it: the client
 * gets the 400 now, and libmicrohttpd an end of stream, so it closes the
 * connection (what it still writes on it is dropped, as above). A request
 * of that connection read in the same chunk before the NUL is not answered:
 * the connection was hostile. */
ssize_t gnutls_record_recv(gnutls_session_t session, void *data, size_t data_size)
{
    pthread_once(&resolve_once, resolve);
    if (!real_recv)
        return GNUTLS_E_INTERNAL_ERROR;
    if (!atomic_load_explicit(&guard_reads, memory_order_relaxed))
        return real_recv(session, data, data_size);
    if (is_muted(session))
        return 0;
    ssize_t n = real_recv(session, data, data_size);
    if (n > 0 && memchr(data, 0, (size_t)n)) {
        /* With the muted table full, no answer (libmicrohttpd's writes
         * could not be dropped after it), but still the end of stream. */
        int slot = mute(session);
        if (slot >= 0) /* a full socket: the answer stays buffered and is lost */
            (void)replace(session, slot, &nul_byte);
        return 0;
    }
    return n;
}

void gnutls_deinit(gnutls_session_t session)
{
    pthread_once(&resolve_once, resolve);
    forget(session);
    if (session)
        unmark_all(session);
    if (real_deinit)
        real_deinit(session);
}
