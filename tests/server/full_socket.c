/* full_socket.c: an LD_PRELOAD shim for server.full_socket.
 *
 * Makes every client connected from 127.0.0.3 a client that does not read
 * and whose socket is full: a TLS application-data record (its first byte
 * 0x17) sent to such a peer fails with EAGAIN, as a write into a full
 * socket does, while the TLS 1.2 handshake (records 0x16 and 0x14) passes,
 * so that the request is read and answered. The socket itself stays empty
 * and writable: a server that waits for it (poll for POLLOUT, then a retry)
 * spins until its own timeout; one that hands EAGAIN to libmicrohttpd's
 * event loop is not woken again. Every poll() for POLLOUT with a timeout
 * other than 0 is counted: the count is written to the file named by
 * $WH_FULL_SOCKET_LOG at exit, one line "pollout_waits N refused M". Other
 * calls pass through. */
#include <arpa/inet.h>  /* ntohl */
#include <dlfcn.h>      /* dlsym, RTLD_NEXT */
#include <errno.h>      /* errno, EAGAIN */
#include <netinet/in.h> /* sockaddr_in, sockaddr_in6 */
#include <poll.h>       /* poll */
#include <stdatomic.h>  /* atomic_long */
#include <stdio.h>      /* fopen, fprintf */
#include <stdlib.h>     /* getenv */
#include <string.h>     /* memcmp */
#include <sys/socket.h> /* send, sendmsg, getpeername */
#include <sys/uio.h>    /* writev */

static atomic_long pollout_waits, refused;

/* The peer is 127.0.0.3 (as IPv4, or IPv4-mapped on a dual-stack socket). */
static int full_peer(int fd)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);
    if (getpeername(fd, (struct sockaddr *)&ss, &len))
        return 0;
    if (ss.ss_family == AF_INET)
        return ntohl(((struct sockaddr_in *)&ss)->sin_addr.s_addr) == 0x7f000003;
    if (ss.ss_family == AF_INET6) {
        static const unsigned char mapped[16] = {0, 0, 0,    0,    0,   0, 0, 0,
                                                 0, 0, 0xff, 0xff, 127, 0, 0, 3};
        return !memcmp(&((struct sockaddr_in6 *)&ss)->sin6_addr, mapped, 16);
    }
    return 0;
}

static int refuse(int fd, const void *first, size_t n)
{
    if (n == 0 || *(const unsigned char *)first != 0x17 || !full_peer(fd))
        return 0;
    atomic_fetch_add(&refused, 1);
    errno = EAGAIN;
    return 1;
}

ssize_t send(int fd, const void *buf, size_t n, int flags)
{
    ssize_t (*real)(int, const void *, size_t, int);
    *(void **)&real = dlsym(RTLD_NEXT, "send");
    return refuse(fd, buf, n) ? -1 : real(fd, buf, n, flags);
}

ssize_t sendmsg(int fd, const struct msghdr *m, int flags)
{
    ssize_t (*real)(int, const struct msghdr *, int);
    *(void **)&real = dlsym(RTLD_NEXT, "sendmsg");
    const struct iovec *v = m->msg_iovlen ? &m->msg_iov[0] : NULL;
    return v && refuse(fd, v->iov_base, v->iov_len) ? -1 : real(fd, m, flags);
}

ssize_t writev(int fd, const struct iovec *v, int n)
{
    ssize_t (*real)(int, const struct iovec *, int);
    *(void **)&real = dlsym(RTLD_NEXT, "writev");
    return n > 0 && refuse(fd, v[0].iov_base, v[0].iov_len) ? -1 : real(fd, v, n);
}

int poll(struct pollfd *fds, nfds_t n, int timeout)
{
    int (*real)(struct pollfd *, nfds_t, int);
    *(void **)&real = dlsym(RTLD_NEXT, "poll");
    for (nfds_t i = 0; i < n && timeout != 0; i++)
        if (fds[i].events & POLLOUT) {
            atomic_fetch_add(&pollout_waits, 1);
            break;
        }
    return real(fds, n, timeout);
}

__attribute__((destructor)) static void report(void)
{
    const char *path = getenv("WH_FULL_SOCKET_LOG");
    FILE *f = path ? fopen(path, "w") : NULL;
    if (!f)
        return;
    fprintf(f, "pollout_waits %ld refused %ld\n", atomic_load(&pollout_waits),
            atomic_load(&refused));
    fclose(f);
}
