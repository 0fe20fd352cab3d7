/* version.h: what `tpu-webhook version`, `--version` and `serve --version`
 * print: the build (wh/buildinfo.h) and the versions of the libraries the
 * process runs with (read from the libraries at run time, so a distribution
 * update of a shared library shows). */
#ifndef WH_VERSION_H
#define WH_VERSION_H

#include <stdbool.h> /* bool */
#include <stdio.h>   /* FILE */

/* Writes the version report to out: text, one "name: value" a line (format
 * NULL), or the document with the keys version, commit, build_date and
 * libraries {libmicrohttpd, gnutls, libcurl, cjson, libyaml, openssl} as
 * format ("json" or "yaml", output.h) says. False when it could not be
 * written (out of memory). */
bool wh_version_print(FILE *out, const char *format);

#endif
