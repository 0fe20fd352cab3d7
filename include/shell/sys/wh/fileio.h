/* fileio.h: reading whole files (shell side). */
#ifndef WH_FILEIO_H
#define WH_FILEIO_H

#include "wh/buf.h" /* struct wh_buf */

/* Largest --pods/--nodes file the CLI reads. */
#define WH_STATE_FILE_MAX ((size_t)512 * 1024 * 1024)

/* Append the contents of path (stdin when path is NULL) to b, whose maximum
 * bounds what is read: a larger input fails with WH_ERR_TOOBIG. */
WH_NODISCARD enum wh_err wh_read_file(const char *path, struct wh_buf *b, char *errbuf);

/* Like wh_read_file for a path that another process may replace with
 * anything (a mounted Secret): opened with O_NONBLOCK so that a FIFO or a
 * device cannot block the caller, refused unless it is a regular file, and
 * refused (WH_ERR_TOOBIG) when its size is over b's maximum before any byte
 * is read. A stalled filesystem can still block the read itself: call it off
 * the threads that must not stop (tls.h). */
WH_NODISCARD enum wh_err wh_read_regular_file(const char *path, struct wh_buf *b, char *errbuf);

/* The rule wh_read_regular_file reads by, for a file read later (by
 * libcurl, or again on each use): path opens with O_NONBLOCK and is a
 * regular file (a symbolic link is followed) of at most max bytes.
 * WH_ERR_NOTFOUND when it does not exist; errbuf gets why, without path. */
WH_NODISCARD enum wh_err wh_check_regular_file(const char *path, size_t max, char *errbuf);

#endif
