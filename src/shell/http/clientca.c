/* clientca.c: the client certificate CAs, hot-reloaded (see clientca.h). */
#include "clientca.h"

#include <stdatomic.h> /* _Atomic */
#include <stdio.h>     /* snprintf */
#include <stdlib.h>    /* calloc, free */
#include <string.h>    /* memcmp, strcmp, strdup */
#include <time.h>      /* time, gmtime_r, strftime */

#include <gnutls/x509.h> /* gnutls_x509_trust_list_t */

#include "wh/buf.h"    /* wh_buf */
#include "wh/err.h"    /* wh_fail */
#include "wh/fileio.h" /* wh_read_regular_file */
#include "wh/log.h"    /* wh_log */
#include "wh/tls.h"    /* WH_TLS_CLOCK_SKEW_S, wh_tls_client_refusals */
#include "retire.h"    /* wh_retire_* */

#define MAX_CAS 8
#define PEM_MAX ((size_t)1024 * 1024)
#define LOG_EVERY_S 10

/* One set of CAs, as one file held them. */
struct trust {
    gnutls_x509_trust_list_t list;
    unsigned n_cas;
    char subject[256]; /* of the first CA, for the logs */
    time_t not_after;  /* the earliest of the CAs' */
    struct wh_retire_node retire;
};

struct wh_clientca {
    _Atomic(struct trust *) cur;
    char *file;
    struct wh_buf seen; /* file contents last tried */
    bool refused;
    char read_problem[WH_ERRBUF_LEN]; /* last read failure logged */
    char refusal[WH_ERRBUF_LEN];      /* why the file seen is refused */
    struct wh_retire_list retired;    /* replaced sets (retire.h) */
};

/* Handshakes refused for their client certificate, and when the last one
 * was logged (one line per LOG_EVERY_S: an attacker must not flood the
 * log). Process-wide, as the server is. */
static _Atomic long long refusals;
static _Atomic long long refusal_logged_s;

static void fmt_time(time_t t, char *out, size_t len)
{
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static void trust_free(struct trust *t)
{
    if (!t)
        return;
    gnutls_x509_trust_list_deinit(t->list, 1);
    free(t);
}

static void trust_retired_free(struct wh_retire_node *node)
{
    trust_free(WH_RETIRED_OBJ(node, struct trust, retire));
}

/* Why crt cannot be a client CA now (WH_OK: it can). */
static enum wh_err vet_ca(gnutls_x509_crt_t crt, unsigned i, time_t now, char *errbuf)
{
    unsigned critical = 0;
    if (gnutls_x509_crt_get_ca_status(crt, &critical) <= 0)
        return wh_fail(errbuf, WH_ERR_TLS,
                       "certificate %u is not a CA certificate (no basicConstraints CA:TRUE): "
                       "give the CA that signs the API server's client certificate",
                       i + 1);
    char when[32];
    time_t not_before = gnutls_x509_crt_get_activation_time(crt);
    time_t not_after = gnutls_x509_crt_get_expiration_time(crt);
    if (not_before == (time_t)-1 || not_after == (time_t)-1)
        return wh_fail(errbuf, WH_ERR_TLS, "CA certificate %u has an unreadable validity period",
                       i + 1);
    if (not_before > now + WH_TLS_CLOCK_SKEW_S) {
        fmt_time(not_before, when, sizeof(when));
        return wh_fail(errbuf, WH_ERR_TLS,
                       "CA certificate %u is not valid yet (notBefore %s): it is taken at the "
                       "first poll after that time",
                       i + 1, when);
    }
    if (not_after < now - WH_TLS_CLOCK_SKEW_S) {
        fmt_time(not_after, when, sizeof(when));
        return wh_fail(errbuf, WH_ERR_TLS, "CA certificate %u has expired (notAfter %s)", i + 1,
                       when);
    }
    return WH_OK;
}

/* The CAs of a PEM bundle: each a CA certificate valid now, at most
 * MAX_CAS of them. */
static enum wh_err trust_load(const char *pem, size_t len, struct trust **out, char *errbuf)
{
    *out = NULL;
    if (len > PEM_MAX)
        return wh_fail(errbuf, WH_ERR_TLS, "client CA file larger than %zu bytes", PEM_MAX);
    gnutls_x509_crt_t crts[MAX_CAS];
    unsigned n = MAX_CAS;
    gnutls_datum_t d = {(unsigned char *)pem, (unsigned)len};
    int rc = gnutls_x509_crt_list_import(crts, &n, &d, GNUTLS_X509_FMT_PEM,
                                         GNUTLS_X509_CRT_LIST_IMPORT_FAIL_IF_EXCEED);
    if (rc == GNUTLS_E_SHORT_MEMORY_BUFFER)
        return wh_fail(errbuf, WH_ERR_TLS, "client CA file holds more than %d certificates",
                       MAX_CAS);
    if (rc <= 0)
        return wh_fail(errbuf, WH_ERR_TLS,
                       "client CA file: no PEM CERTIFICATE block could be read%s%s",
                       rc < 0 ? ": " : "", rc < 0 ? gnutls_strerror(rc) : "");
    n = (unsigned)rc;
    enum wh_err err = WH_OK;
    time_t now = time(NULL), not_after = 0;
    for (unsigned i = 0; i < n && !err; i++) {
        err = vet_ca(crts[i], i, now, errbuf);
        time_t na = gnutls_x509_crt_get_expiration_time(crts[i]);
        if (!i || na < not_after)
            not_after = na;
    }
    struct trust *t = err ? NULL : calloc(1, sizeof(*t));
    if (!err && !t)
        err = wh_fail(errbuf, WH_ERR_NOMEM, "out of memory loading the client CA");
    if (!err) {
        t->not_after = not_after;
        gnutls_datum_t dn = {NULL, 0};
        if (gnutls_x509_crt_get_dn3(crts[0], &dn, 0) >= 0)
            snprintf(t->subject, sizeof(t->subject), "%.*s", (int)dn.size, (const char *)dn.data);
        gnutls_free(dn.data);
        rc = gnutls_x509_trust_list_init(&t->list, 0);
        if (rc < 0) {
            free(t);
            t = NULL;
            err = wh_fail(errbuf, WH_ERR_TLS, "client CA: %s", gnutls_strerror(rc));
        }
    }
    if (err) {
        for (unsigned i = 0; i < n; i++)
            gnutls_x509_crt_deinit(crts[i]);
        return err;
    }
    /* The list owns the certificates from here, whatever it answers. */
    rc = gnutls_x509_trust_list_add_cas(t->list, crts, n, 0);
    if (rc < (int)n) {
        trust_free(t);
        return wh_fail(errbuf, WH_ERR_TLS, "client CA: %u of %u certificates taken",
                       rc < 0 ? 0 : (unsigned)rc, n);
    }
    t->n_cas = n;
    *out = t;
    return WH_OK;
}

static void log_ca(const char *event, const struct trust *t, const char *file)
{
    wh_log(WH_LOG_NOTICE, event, "client_ca_file", WH_F_STR, file, "cas", WH_F_INT,
           (long long)t->n_cas, "subject", WH_F_STR, t->subject, "not_after", WH_F_INT,
           (long long)t->not_after, (char *)NULL);
}

time_t wh_clientca_not_after(const struct wh_clientca *ca)
{
    return atomic_load(&ca->cur)->not_after;
}

void wh_clientca_warn_if_expiring(const struct wh_clientca *ca)
{
    const struct trust *t = atomic_load(&ca->cur);
    double days = difftime(t->not_after, time(NULL)) / 86400.0;
    if (days < WH_TLS_WARN_DAYS)
        wh_log(WH_LOG_WARN, "tls_client_ca_expiring", "client_ca_file", WH_F_STR, ca->file,
               "subject", WH_F_STR, t->subject, "not_after", WH_F_INT, (long long)t->not_after,
               "days_left", WH_F_DBL, days, "fix", WH_F_STR,
               "give the API server a client certificate from a new CA and add that CA to the "
               "file; once it expires every admission is refused",
               (char *)NULL);
}

struct wh_clientca *wh_clientca_new(const char *file, char *errbuf)
{
    struct wh_clientca *ca = calloc(1, sizeof(*ca));
    if (!ca || !(ca->file = strdup(file))) {
        free(ca);
        wh_fail(errbuf, WH_ERR_NOMEM, "out of memory");
        return NULL;
    }
    wh_buf_init(&ca->seen, PEM_MAX);
    char why[WH_ERRBUF_LEN] = "";
    struct trust *t = NULL;
    enum wh_err err = wh_read_regular_file(file, &ca->seen, why);
    if (err) {
        wh_fail(errbuf, err, "failed to read client CA file %s (--client-ca-file): %s", file,
                why[0] ? why : wh_strerror(err));
    } else if ((err = trust_load(wh_buf_ptr(&ca->seen), wh_buf_len(&ca->seen), &t, why))) {
        wh_fail(errbuf, err, "%s (--client-ca-file %s)", why, file);
    }
    if (err) {
        wh_clientca_free(ca);
        return NULL;
    }
    atomic_store(&ca->cur, t);
    log_ca("tls_client_ca_loaded", t, file);
    wh_clientca_warn_if_expiring(ca);
    return ca;
}

void wh_clientca_free(struct wh_clientca *ca)
{
    if (!ca)
        return;
    trust_free(atomic_load(&ca->cur));
    wh_retire_drain(&ca->retired);
    wh_buf_free(&ca->seen);
    free(ca->file);
    free(ca);
}

/* The client CA file, judged as the pair is: a file that cannot serve
 * keeps the CAs before, logged once per reason and judged again at every
 * poll. */
int wh_clientca_poll(struct wh_clientca *ca)
{
    char errbuf[WH_ERRBUF_LEN] = "", why[WH_ERRBUF_LEN] = "";
    struct wh_buf pem;
    wh_buf_init(&pem, PEM_MAX);
    int rc = 0;
    struct trust *t = NULL;
    wh_retire_reap(&ca->retired, time(NULL));
    enum wh_err err = wh_read_regular_file(ca->file, &pem, why);
    if (err) {
        /* Mid-rotation (a file briefly missing) is normal; say it once. */
        wh_fail(errbuf, err, "failed to read client CA file %s: %s", ca->file,
                why[0] ? why : wh_strerror(err));
        if (strcmp(errbuf, ca->read_problem)) {
            snprintf(ca->read_problem, sizeof(ca->read_problem), "%s", errbuf);
            wh_log(WH_LOG_WARN, "tls_reload_rejected", "reason", WH_F_STR, errbuf, "action",
                   WH_F_STR, "keeping the client CA already loaded", (char *)NULL);
            rc = -1;
        }
        goto out;
    }
    ca->read_problem[0] = '\0';
    bool changed = wh_buf_len(&pem) != wh_buf_len(&ca->seen) ||
                   memcmp(wh_buf_ptr(&pem), wh_buf_ptr(&ca->seen), wh_buf_len(&pem));
    if (!changed && !ca->refused)
        goto out;
    err = trust_load(wh_buf_ptr(&pem), wh_buf_len(&pem), &t, errbuf);
    wh_buf_free(&ca->seen);
    ca->seen = pem; /* taken: pem is not freed below */
    wh_buf_init(&pem, PEM_MAX);
    if (err) {
        /* Judged again at every poll, logged once per reason. */
        ca->refused = true;
        if (changed || strcmp(errbuf, ca->refusal)) {
            snprintf(ca->refusal, sizeof(ca->refusal), "%s", errbuf);
            wh_log(WH_LOG_ERROR, "tls_reload_rejected", "client_ca_file", WH_F_STR, ca->file,
                   "reason", WH_F_STR, errbuf, "action", WH_F_STR,
                   "keeping the client CA already loaded", (char *)NULL);
            rc = -1;
        }
        goto out;
    }
    ca->refused = false;
    ca->refusal[0] = '\0';
    struct trust *old = atomic_exchange(&ca->cur, t);
    wh_retire_push(&ca->retired, &old->retire, trust_retired_free, time(NULL));
    log_ca("tls_client_ca_reloaded", t, ca->file);
    wh_clientca_warn_if_expiring(ca);
    rc = 1;
out:
    wh_buf_free(&pem);
    return rc;
}

bool wh_clientca_refused(const struct wh_clientca *ca)
{
    return ca->refused;
}

static void log_refused(const char *reason)
{
    long long now = (long long)time(NULL), last = atomic_load(&refusal_logged_s);
    if (now - last < LOG_EVERY_S || !atomic_compare_exchange_strong(&refusal_logged_s, &last, now))
        return;
    wh_log(WH_LOG_WARN, "tls_client_cert_refused", "reason", WH_F_STR, reason, "refused", WH_F_INT,
           atomic_load(&refusals), "fix", WH_F_STR,
           "the API server's client certificate must be signed by a CA of --client-ca-file "
           "(docs/deploy.md, client certificates); one line per 10 s",
           (char *)NULL);
}

/* Called by GnuTLS once the client's Certificate message is in (also when
 * it sent none). A certificate that does not chain to the client CA, or
 * is not for client authentication, ends the handshake; no certificate
 * lets it go on, and the route decides (wh_tls_client_verified). */
int wh_clientca_verify(struct wh_clientca *ca, gnutls_session_t session)
{
    unsigned n = 0;
    const gnutls_datum_t *raw = gnutls_certificate_get_peers(session, &n);
    if (!raw || !n)
        return 0;
    struct trust *t = atomic_load(&ca->cur);
    const char *why = NULL;
    gnutls_x509_crt_t crts[MAX_CAS];
    unsigned have = 0;
    if (!t)
        why = "no client CA loaded";
    else if (n > MAX_CAS)
        why = "client certificate chain of more than 8 certificates";
    for (; !why && have < n; have++) {
        if (gnutls_x509_crt_init(&crts[have]) < 0) {
            why = "out of memory";
            break;
        }
        if (gnutls_x509_crt_import(crts[have], &raw[have], GNUTLS_X509_FMT_DER) < 0) {
            gnutls_x509_crt_deinit(crts[have]);
            why = "client certificate unreadable";
            break;
        }
    }
    char detail[160];
    if (!why) {
        gnutls_typed_vdata_st purpose = {.type = GNUTLS_DT_KEY_PURPOSE_OID,
                                         .data = (unsigned char *)GNUTLS_KP_TLS_WWW_CLIENT};
        unsigned status = 0;
        int rc = gnutls_x509_trust_list_verify_crt2(t->list, crts, n, &purpose, 1, 0, &status, NULL);
        if (rc < 0 || status) {
            gnutls_datum_t out = {NULL, 0};
            if (rc >= 0 &&
                gnutls_certificate_verification_status_print(status, GNUTLS_CRT_X509, &out, 0) >= 0)
                snprintf(detail, sizeof(detail), "%s", (const char *)out.data);
            else
                snprintf(detail, sizeof(detail), "%s", gnutls_strerror(rc));
            gnutls_free(out.data);
            why = detail;
        }
    }
    for (unsigned i = 0; i < have; i++)
        gnutls_x509_crt_deinit(crts[i]);
    if (!why)
        return 0;
    atomic_fetch_add(&refusals, 1);
    log_refused(why);
    return -1;
}

long long wh_tls_client_refusals(void)
{
    return atomic_load(&refusals);
}
