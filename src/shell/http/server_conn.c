/* server_conn.c: open connections and their deadlines (see server_conn.h). */
#include "server_conn.h"

#include <netdb.h>      /* getnameinfo */
#include <netinet/in.h> /* sockaddr_in6 */
#include <poll.h>       /* poll */
#include <pthread.h>    /* pthread_mutex_lock */
#include <stdatomic.h>  /* atomic_* */
#include <stdbool.h>    /* bool */
#include <stdint.h>     /* uint32_t */
#include <stdlib.h>     /* calloc, free */
#include <string.h>     /* memcpy, memcmp, memset */
#include <sys/socket.h> /* shutdown */

#include <microhttpd.h>

#include "wh/clock.h"   /* wh_clock_ms */
#include "wh/log.h"     /* wh_log */
#include "wh/metrics.h" /* wh_metrics_timeout, wh_metrics_shed */
#include "wh/reqmem.h"  /* wh_reqmem_trim_idle, wh_reqmem_body_shed */
#include "wh/tls.h"     /* wh_tls_session_start */

void wh_srv_client_of(struct MHD_Connection *c, char *out, size_t len)
{
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c,
                                                                 MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    out[0] = '\0';
    if (!ci || !ci->client_addr)
        return;
    socklen_t sl = ci->client_addr->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
                                                          : sizeof(struct sockaddr_in);
    if (getnameinfo(ci->client_addr, sl, out, (socklen_t)len, NULL, 0, NI_NUMERICHOST))
        out[0] = '\0';
}

/* The table's key of a peer address: 16 bytes, IPv4 as IPv4-mapped IPv6.
 * false when the connection has no IP address. */
static bool client_key(struct MHD_Connection *c, unsigned char key[16])
{
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c,
                                                                 MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (!ci || !ci->client_addr)
        return false;
    if (ci->client_addr->sa_family == AF_INET6) {
        memcpy(key, &((const struct sockaddr_in6 *)ci->client_addr)->sin6_addr, 16);
        return true;
    }
    if (ci->client_addr->sa_family != AF_INET)
        return false;
    memset(key, 0, 10);
    key[10] = key[11] = 0xff;
    memcpy(key + 12, &((const struct sockaddr_in *)ci->client_addr)->sin_addr, 4);
    return true;
}

static unsigned client_bucket(const unsigned char key[16])
{
    uint32_t h = 2166136261u; /* FNV-1a */
    for (int i = 0; i < 16; i++)
        h = (h ^ key[i]) * 16777619u;
    return h & (CLIENT_BUCKETS - 1);
}

/* The client of key with one more connection, made if new; under s->lock.
 * NULL when out of memory (the connection then has no memory cap). */
static struct client *client_ref(struct wh_server *s, const unsigned char key[16])
{
    struct client **head = &s->clients[client_bucket(key)];
    for (struct client *cl = *head; cl; cl = cl->next)
        if (!memcmp(cl->addr, key, 16)) {
            cl->conns++;
            return cl;
        }
    struct client *cl = calloc(1, sizeof(*cl));
    if (!cl)
        return NULL;
    memcpy(cl->addr, key, 16);
    cl->conns = 1;
    atomic_init(&cl->share.held, 0);
    cl->share.cap = s->o.max_client_memory;
    cl->next = *head;
    *head = cl;
    return cl;
}

/* One connection fewer; the last one frees it. Under s->lock. */
static void client_unref(struct wh_server *s, struct client *cl)
{
    if (!cl || --cl->conns)
        return;
    for (struct client **p = &s->clients[client_bucket(cl->addr)]; *p; p = &(*p)->next)
        if (*p == cl) {
            *p = cl->next;
            break;
        }
    free(cl);
}

/* Why a connection was cut: the metric it is counted in. */
enum cut_why { CUT_TIMEOUT, CUT_IDLE, CUT_SLOW_BODY };

/* Cut cn: its MHD thread sees end-of-stream and closes it itself; the fd is
 * not closed here, so it cannot be reused under MHD. Counted before the
 * shutdown: a client that sees its end-of-stream and then reads /metrics
 * finds the cut counted. Under s->lock. */
static void conn_cut(struct wh_server *s, struct conn *cn, enum cut_why why)
{
    if (why == CUT_TIMEOUT)
        wh_metrics_timeout(s->m);
    else
        wh_metrics_shed(s->m, why == CUT_IDLE ? WH_SHED_IDLE : WH_SHED_SLOW_BODY, 1);
    shutdown(cn->fd, SHUT_RDWR);
    cn->cut = true;
    s->live--;
}

/* The connection to shed when connection slots run short, or NULL. First
 * the oldest of those that have not completed a request, once idle past
 * WH_SRV_IDLE_GRACE_MS (what silent clients hold). A served one only when
 * no unserved idle connection is open at all, self and the young included:
 * the served ones are the API server's pooled keep-alive connections, and
 * a cut may meet a POST already on its way. So one is cut only when
 * waiting (a connection waits in the listen queue: every thread is full)
 * and every idle connection has been served: the one idle longest past
 * the grace. Never self, never one in a request. Under s->lock. */
static struct conn *idle_victim_locked(struct wh_server *s, const struct conn *self, long long now,
                                       bool waiting)
{
    struct conn *fresh = NULL, *served = NULL;
    long long fresh_since = now - WH_SRV_IDLE_GRACE_MS + 1, served_since = fresh_since;
    bool unserved = false;
    for (struct conn *cn = s->conns; cn; cn = cn->next) {
        /* since first: served is stored before it (wh_srv_on_completed). */
        long long since = atomic_load(&cn->idle_since_ms);
        if (cn->cut || since < 0)
            continue;
        if (!atomic_load(&cn->served)) {
            unserved = true;
            if (cn != self && since < fresh_since) {
                fresh_since = since;
                fresh = cn;
            }
        } else if (cn != self && since < served_since) {
            served_since = since;
            served = cn;
        }
    }
    return fresh ? fresh : unserved || !waiting ? NULL : served;
}

/* While more than idle_shed_above connections are live, cut the one
 * idle_victim_locked picks; waiting (a connection in the listen queue)
 * makes room for one, so at most one served connection is cut. Under
 * s->lock; each cut is counted (conn_cut) and kept for the tick's log
 * line (idle_unlogged). One walk of the list a cut: the list is at most
 * --max-connections long, and a cut is an accept that found the slots short. A request may start on a
 * served victim between the walk and the cut: the race every keep-alive
 * close has (MHD's idle timeout too), left to a connection idle longest
 * when every thread is full of served ones and another waits. */
static void shed_idle_locked(struct wh_server *s, const struct conn *self, long long now,
                             bool waiting)
{
    while (s->live > s->idle_shed_above) {
        struct conn *victim = idle_victim_locked(s, self, now, waiting);
        if (!victim)
            break;
        if (atomic_load(&victim->served))
            waiting = false;
        conn_cut(s, victim, CUT_IDLE);
        if (!s->idle_unlogged++)
            memcpy(s->idle_first, victim->client, ADDR_LEN);
    }
}

unsigned wh_srv_idle_shed_above(unsigned max_connections, unsigned threads)
{
    unsigned headroom = max_connections / WH_SRV_IDLE_HEADROOM_DIV;
    if (headroom < threads)
        headroom = threads;
    /* More threads than half the slots (--max-connections 2 with two
     * threads made the headroom the whole table: every connection idle a
     * second was cut, slots short or not): half of them at most. */
    if (headroom > max_connections / 2)
        headroom = max_connections / 2;
    if (headroom < 1)
        headroom = 1;
    return max_connections > headroom ? max_connections - headroom : 0;
}

struct conn *wh_srv_conn_of(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c,
                                                                 MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci ? (struct conn *)ci->socket_context : NULL;
}

void wh_srv_on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode code)
{
    struct wh_server *s = cls;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        /* libmicrohttpd made the session and has not begun its handshake
         * (this thread runs it next): the client certificate is asked for
         * here. */
        const union MHD_ConnectionInfo *si =
            MHD_get_connection_info(c, MHD_CONNECTION_INFO_GNUTLS_SESSION);
        if (si && si->tls_session)
            wh_tls_session_start(si->tls_session);
        struct conn *cn = calloc(1, sizeof(*cn));
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        if (!cn || !ci) {
            free(cn); /* without a record the connection only has MHD's idle timeout */
            *socket_context = NULL;
            return;
        }
        cn->fd = ci->connect_fd;
        long long now = wh_clock_ms();
        atomic_store(&cn->deadline_ms, now + s->o.header_timeout_ms);
        atomic_store(&cn->idle_since_ms, now);
        atomic_store(&cn->served, false);
        wh_srv_client_of(c, cn->client, sizeof(cn->client));
        unsigned char key[16];
        bool keyed = client_key(c, key);
        pthread_mutex_lock(&s->lock);
        cn->cl = keyed ? client_ref(s, key) : NULL;
        cn->next = s->conns;
        if (s->conns)
            s->conns->prev = cn;
        s->conns = cn;
        s->live++;
        /* The accept that finds the slots short makes room: an attacker's
         * idle connections are older than the API server's new one. */
        shed_idle_locked(s, cn, now, false);
        pthread_mutex_unlock(&s->lock);
        atomic_fetch_add(&s->n_conns, 1);
        *socket_context = cn;
        return;
    }
    struct conn *cn = *socket_context;
    if (!cn)
        return;
    pthread_mutex_lock(&s->lock);
    if (cn->prev)
        cn->prev->next = cn->next;
    else
        s->conns = cn->next;
    if (cn->next)
        cn->next->prev = cn->prev;
    if (!cn->cut)
        s->live--;
    client_unref(s, cn->cl);
    pthread_mutex_unlock(&s->lock);
    atomic_fetch_sub(&s->n_conns, 1);
    *socket_context = NULL;
    free(cn);
}

void wh_srv_conn_body(struct wh_server *s, struct conn *cn, struct wh_reqmem_body *body,
                      long long last_ms)
{
    if (!cn)
        return;
    pthread_mutex_lock(&s->lock);
    cn->body = body;
    atomic_store(&cn->body_last_ms, last_ms);
    atomic_store(&cn->body_rate_bps, -1);
    pthread_mutex_unlock(&s->lock);
}

size_t wh_srv_shed_slow_bodies(struct wh_server *s, const struct conn *self, size_t need,
                               const struct wh_reqmem_share *share)
{
    long long quiet_before = wh_clock_ms() - WH_SRV_SHED_QUIET_MS;
    long long min_rate = s->o.min_body_rate > 0 ? s->o.min_body_rate : 1;
    size_t freed = 0;
    long long n = 0;
    char first[ADDR_LEN] = "";
    pthread_mutex_lock(&s->lock);
    while (freed < need) {
        struct conn *victim = NULL;
        long long slowest = min_rate, oldest = 0;
        for (struct conn *cn = s->conns; cn; cn = cn->next) {
            if (cn == self || !cn->body || cn->cut || (share && cn->body->share != share))
                continue;
            long long last = atomic_load(&cn->body_last_ms);
            long long rate = last <= quiet_before ? 0 : atomic_load(&cn->body_rate_bps);
            if (rate < 0) /* no whole window yet, not quiet: too young to judge */
                continue;
            if (rate < slowest || (rate == slowest && victim && last < oldest)) {
                slowest = rate;
                oldest = last;
                victim = cn;
            }
        }
        if (!victim)
            break;
        freed += wh_reqmem_body_shed(s->rm, victim->body);
        conn_cut(s, victim, CUT_SLOW_BODY);
        if (!n++)
            memcpy(first, victim->client, ADDR_LEN);
    }
    pthread_mutex_unlock(&s->lock);
    if (n) {
        wh_log(WH_LOG_WARN, "connection_shed", "client", WH_F_STR, first, "connections", WH_F_INT,
               n, "freed_bytes", WH_F_INT, (long long)freed, "reason", WH_F_STR,
               "request memory ran short: the connections whose request bodies arrived slowest "
               "(under --min-body-rate) were cut",
               (char *)NULL);
    }
    return freed;
}

/* Whether a connection waits in the listening socket's queue, not taken
 * by any thread (each is at its share of the slots, or about to take it).
 * A poll that does not wait; the socket stays libmicrohttpd's. */
static bool listen_queue_waiting(const struct wh_server *s)
{
    struct pollfd p = {.fd = s->listen_fd, .events = POLLIN};
    return s->listen_fd >= 0 && poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

/* Connections cut per tick that get a log line of their own. */
#define TICK_LOG_MAX 16
/* Idle connections shed get one log line at most this often: an attack
 * makes thousands a second. */
#define IDLE_LOG_MS 1000

/* After this long without an admission, pooled arenas give their kept
 * chunks back (the memory of a burst returns to the system). */
#define ARENA_IDLE_MS 1000

void wh_server_tick(struct wh_server *s)
{
    wh_reqmem_trim_idle(s->rm, ARENA_IDLE_MS);
    long long now = wh_clock_ms();
    char clients[TICK_LOG_MAX][ADDR_LEN];
    bool slow_body[TICK_LOG_MAX];
    size_t n_cut = 0;
    bool waiting = listen_queue_waiting(s);
    pthread_mutex_lock(&s->lock);
    for (struct conn *cn = s->conns; cn; cn = cn->next) {
        if (cn->cut || atomic_load(&cn->deadline_ms) > now)
            continue;
        conn_cut(s, cn, CUT_TIMEOUT);
        if (n_cut < TICK_LOG_MAX) {
            memcpy(clients[n_cut], cn->client, ADDR_LEN);
            slow_body[n_cut] = atomic_load(&cn->body_rate);
        }
        n_cut++;
    }
    /* When no worker has a slot left, none accepts: room is made here (a
     * served connection only for one that waits, the first cut: waiting
     * is read once). */
    shed_idle_locked(s, NULL, now, waiting);
    long long idle_cut = 0;
    char idle_first[ADDR_LEN];
    if (s->idle_unlogged && now - s->idle_logged_ms >= IDLE_LOG_MS) {
        idle_cut = s->idle_unlogged;
        memcpy(idle_first, s->idle_first, ADDR_LEN);
        s->idle_unlogged = 0;
        s->idle_logged_ms = now;
    }
    pthread_mutex_unlock(&s->lock);
    if (idle_cut)
        wh_log(WH_LOG_WARN, "connection_shed", "client", WH_F_STR, idle_first, "connections",
               WH_F_INT, idle_cut, "reason", WH_F_STR,
               "connection slots ran short (--max-connections): idle connections were cut, "
               "those that never completed a request first, oldest first",
               (char *)NULL);
    /* Logged outside the lock: MHD threads take it for every connection
     * opened or closed, and a write to a slow stderr must not stall them. */
    for (size_t i = 0; i < n_cut && i < TICK_LOG_MAX; i++)
        wh_log(WH_LOG_WARN, "connection_timeout", "client", WH_F_STR, clients[i], "reason", WH_F_STR,
               slow_body[i] ? "request body arrived slower than --min-body-rate"
                            : "request not received in time (slow or stalled client)",
               (char *)NULL);
    if (n_cut > TICK_LOG_MAX)
        wh_log(WH_LOG_WARN, "connection_timeout", "more_connections", WH_F_INT,
               (long long)(n_cut - TICK_LOG_MAX), "reason", WH_F_STR,
               "request not received in time (slow or stalled clients)", (char *)NULL);
}
