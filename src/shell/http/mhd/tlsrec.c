/* tlsrec.c: one TLS record for a small answer. See wh/tlsrec.h. */
#include "tlsrec.h"

#include <netinet/in.h>  /* IPPROTO_TCP */
#include <netinet/tcp.h> /* TCP_CORK */
#include <sys/socket.h>  /* getsockopt, setsockopt */
#include <sys/ioctl.h>   /* ioctl */

#include <linux/sockios.h> /* SIOCOUTQ */

/* What one corked answer costs the socket's send buffer at most: a record
 * of the body, the header block (WH_TLSREC_HEAD_ROOM) and TLS's overhead,
 * twice for the kernel's own bookkeeping of the bytes it queues. */
#define SOCKET_COST(body_len) (2 * ((body_len) + WH_TLSREC_HEAD_ROOM + 256))

bool wh_tlsrec_hold(gnutls_session_t session, int fd, size_t body_len)
{
    int queued = 0, sndbuf = 0;
    socklen_t len = sizeof(sndbuf);
    if (!session || fd < 0 || body_len > WH_TLSREC_MAX_BODY)
        return false;
    /* Bytes sent but not yet acknowledged, or not yet sent: an empty queue
     * and a send buffer with room for the whole record mean the one write
     * of the flush goes straight into the socket, never waits. */
    if (ioctl(fd, SIOCOUTQ, &queued) != 0 || queued != 0)
        return false;
    if (getsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, &len) != 0 || sndbuf < 0 ||
        (size_t)sndbuf < SOCKET_COST(body_len))
        return false;
    gnutls_record_cork(session);
    return true;
}

/* libmicrohttpd corks the TCP socket around what it believes are its
 * writes and uncorks it after the last one; ours comes after that, so a
 * socket left corked would hold the answer for the kernel's 200 ms. Pull the
 * cork out and put it back: the bytes leave, and the socket is in the state
 * libmicrohttpd expects. */
static void push(int fd)
{
    int on = 0, off = 0;
    socklen_t len = sizeof(on);
    if (getsockopt(fd, IPPROTO_TCP, TCP_CORK, &on, &len) == 0 && on) {
        (void)setsockopt(fd, IPPROTO_TCP, TCP_CORK, &off, sizeof(off));
        (void)setsockopt(fd, IPPROTO_TCP, TCP_CORK, &on, sizeof(on));
    }
}

bool wh_tlsrec_flush(gnutls_session_t session, int fd)
{
    /* One try, no wait: the socket had room for all of it when it was
     * corked (wh_tlsrec_hold), and nothing else was written since. */
    int r = gnutls_record_uncork(session, 0);
    if (r == GNUTLS_E_INTERRUPTED)
        r = gnutls_record_uncork(session, 0);
    if (r < 0 || gnutls_record_check_corked(session) != 0)
        return false;
    push(fd);
    return true;
}
