/* fileio.c: reading whole files into a bounded buffer. */
#include "wh/fileio.h"

#include <errno.h>  /* errno */
#include <stdio.h>  /* fopen, fread */
#include <string.h> /* strerror */

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
