/* version.h: what `tpu-webhook version`, `--version` and `serve --version`
 * print: the build (wh/buildinfo.h) and the versions of the libraries the
 * process runs with (read from the libraries at run time, so a distribution
 * update of a shared library shows). */
#ifndef WH_VERSION_H
#define WH_VERSION_H

#include <stdbool.h> /* bool */
#include <stdio.h>   /* FILE */

/* Writes the version report to out: text, one "name: value" a line, or one
 * JSON object (json) with the keys version, commit, build_date and
 * libraries {libmicrohttpd, gnutls, libcurl, cjson, libyaml, openssl}. */
void wh_version_print(FILE *out, bool json);

#endif
