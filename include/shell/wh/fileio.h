/* fileio.h: reading whole files (shell side). */
#ifndef WH_FILEIO_H
#define WH_FILEIO_H

#include "wh/buf.h" /* struct wh_buf */

/* Largest --pods/--nodes file the CLI reads. */
#define WH_STATE_FILE_MAX ((size_t)512 * 1024 * 1024)

/* Append the contents of path (stdin when path is NULL) to b, whose maximum
 * bounds what is read: a larger input fails with WH_ERR_TOOBIG. */
WH_NODISCARD enum wh_err wh_read_file(const char *path, struct wh_buf *b, char *errbuf);

#endif
