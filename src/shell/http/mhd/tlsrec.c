/* tlsrec.c: one TLS record for a small answer. See wh/tlsrec.h. */
#include "tlsrec.h"

#include <netinet/in.h>  /* IPPROTO_TCP */
#include <netinet/tcp.h> /* TCP_CORK */
#include <poll.h>        /* poll */
#include <sys/socket.h>  /* getsockopt, setsockopt */
#include <sys/ioctl.h>   /* ioctl */

#include <linux/sockios.h> /* SIOCOUTQ */

#include "wh/clock.h" /* wh_clock_ms */

bool wh_tlsrec_hold(gnutls_session_t session, int fd, size_t body_len)
{
    int queued = 0;
    if (!session || fd < 0 || body_len > WH_TLSREC_MAX_BODY)
        return false;
    /* Bytes sent but not yet acknowledged, or not yet sent: an empty queue
     * means the one write of the flush goes straight into the socket. */
    if (ioctl(fd, SIOCOUTQ, &queued) != 0 || queued != 0)
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

bool wh_tlsrec_flush(gnutls_session_t session, int fd, int timeout_ms)
{
    long until = wh_clock_ms() + timeout_ms;
    for (;;) {
        int r = gnutls_record_uncork(session, 0);
        if (r >= 0 && gnutls_record_check_corked(session) == 0) {
            push(fd);
            return true;
        }
        if (r < 0 && r != GNUTLS_E_AGAIN && r != GNUTLS_E_INTERRUPTED)
            return false;
        long left = until - wh_clock_ms();
        if (left <= 0)
            return false;
        struct pollfd p = {.fd = fd, .events = POLLOUT};
        if (poll(&p, 1, (int)left) < 0)
            return false;
    }
}
