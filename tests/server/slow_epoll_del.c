/* slow_epoll_del.c: an LD_PRELOAD shim for server.sigterm_quiesce_race.
 *
 * Holds the process's main thread for 100 ms before each EPOLL_CTL_DEL, so
 * that a library removing a descriptor from an epoll set while a worker
 * thread may remove it too (libmicrohttpd 0.9.75's MHD_quiesce_daemon under
 * epoll, see wh_server_start in src/shell/http/server.c) loses that race every
 * time instead of once in a while under load. Other calls pass through. */
#include <dlfcn.h>       /* dlsym, RTLD_NEXT */
#include <sys/epoll.h>   /* epoll_ctl */
#include <sys/syscall.h> /* SYS_gettid */
#include <time.h>        /* nanosleep */
#include <unistd.h>      /* syscall, getpid */

int epoll_ctl(int epfd, int op, int fd, struct epoll_event *ev)
{
    int (*real)(int, int, int, struct epoll_event *);
    *(void **)&real = dlsym(RTLD_NEXT, "epoll_ctl");
    if (op == EPOLL_CTL_DEL && syscall(SYS_gettid) == getpid()) {
        struct timespec t = {0, 100 * 1000 * 1000};
        nanosleep(&t, NULL);
    }
    return real(epfd, op, fd, ev);
}
