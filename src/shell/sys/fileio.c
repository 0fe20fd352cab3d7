/* fileio.c: reading whole files into a bounded buffer. */
#include "wh/fileio.h"

#include <errno.h>    /* errno */
#include <fcntl.h>    /* open, O_NONBLOCK */
#include <stdio.h>    /* fopen, fread */
#include <string.h>   /* strerror */
#include <sys/stat.h> /* fstat, S_ISREG */
#include <unistd.h>   /* read, close */

enum wh_err wh_read_file(const char *path, struct wh_buf *b, char *errbuf)
{
    FILE *f = path ? fopen(path, "rb") : stdin;
    if (!f)
        return wh_fail(errbuf, WH_ERR_IO, "cannot open: %s", strerror(errno));
    enum wh_err err = WH_OK;
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) {
        if ((err = wh_buf_addn(b, chunk, n))) {
            if (err == WH_ERR_TOOBIG)
                wh_fail(errbuf, err, "larger than the %zu-byte limit", b->max);
            break;
        }
    }
    if (!err && ferror(f))
        err = wh_fail(errbuf, WH_ERR_IO, "read error: %s", strerror(errno));
    if (path)
        fclose(f);
    return err;
}

/* Open path for reading without blocking; refuse it unless it is a regular
 * file of at most max bytes. *fd is open on WH_OK only. */
static enum wh_err open_regular(const char *path, size_t max, int *fd, char *errbuf)
{
    *fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (*fd < 0)
        return wh_fail(errbuf, errno == ENOENT ? WH_ERR_NOTFOUND : WH_ERR_IO, "cannot open: %s",
                       strerror(errno));
    enum wh_err err = WH_OK;
    struct stat st;
    if (fstat(*fd, &st)) {
        err = wh_fail(errbuf, WH_ERR_IO, "cannot stat: %s", strerror(errno));
    } else if (!S_ISREG(st.st_mode)) {
        err = wh_fail(errbuf, WH_ERR_IO,
                      "not a regular file (a FIFO, socket, device or directory): refused");
    } else if ((unsigned long long)st.st_size > max) {
        err = wh_fail(errbuf, WH_ERR_TOOBIG, "%lld bytes, over the %zu-byte limit",
                      (long long)st.st_size, max);
    }
    if (err) {
        close(*fd);
        *fd = -1;
    }
    return err;
}

enum wh_err wh_check_regular_file(const char *path, size_t max, char *errbuf)
{
    int fd;
    enum wh_err err = open_regular(path, max, &fd, errbuf);
    if (!err)
        close(fd);
    return err;
}

enum wh_err wh_read_regular_file(const char *path, struct wh_buf *b, char *errbuf)
{
    int fd;
    enum wh_err err = open_regular(path, b->max, &fd, errbuf);
    if (err) /* its callers' contract: a missing file is WH_ERR_IO */
        return err == WH_ERR_NOTFOUND ? WH_ERR_IO : err;
    char chunk[65536];
    ssize_t n = 0;
    while (!err && (n = read(fd, chunk, sizeof(chunk))) != 0) {
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            err = wh_fail(errbuf, WH_ERR_IO, "read error: %s", strerror(errno));
        } else if ((err = wh_buf_addn(b, chunk, (size_t)n)) == WH_ERR_TOOBIG) {
            wh_fail(errbuf, err, "grew over the %zu-byte limit while read", b->max);
        }
    }
    close(fd);
    return err;
}
