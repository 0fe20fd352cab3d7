/* version.c: the version report (see version.h). */
#include "version.h"

#include <cjson/cJSON.h>    /* cJSON_Version */
#include <curl/curl.h>      /* curl_version_info */
#include <gnutls/gnutls.h>  /* gnutls_check_version */
#include <microhttpd.h>     /* MHD_get_version */
#include <openssl/crypto.h> /* OpenSSL_version */
#include <string.h>         /* strlen */
#include <yaml.h>           /* yaml_get_version_string */

#include "wh/buildinfo.h" /* wh_build_* */
#include "wh/buf.h"       /* wh_buf_* */
#include "flags.h"        /* wh_flags_command */
#include "wh/commands.h"  /* wh_cmd_version */

struct lib {
    const char *key, *name, *version;
};

static void libraries(struct lib out[6])
{
    const curl_version_info_data *cv = curl_version_info(CURLVERSION_NOW);
    out[0] = (struct lib){"libmicrohttpd", "libmicrohttpd", MHD_get_version()};
    out[1] = (struct lib){"gnutls", "GnuTLS", gnutls_check_version(NULL)};
    out[2] = (struct lib){"libcurl", "libcurl", cv ? cv->version : NULL};
    out[3] = (struct lib){"cjson", "cJSON", cJSON_Version()};
    out[4] = (struct lib){"libyaml", "libyaml", yaml_get_version_string()};
    out[5] = (struct lib){"openssl", "OpenSSL", OpenSSL_version(OPENSSL_VERSION)};
    for (int i = 0; i < 6; i++)
        if (!out[i].version)
            out[i].version = "unknown";
}

static void print_json(FILE *out, const struct lib libs[6])
{
    struct wh_buf b;
    wh_buf_init(&b, 1 << 16);
    const char *top[][2] = {{"version", wh_build_version()},
                            {"commit", wh_build_commit()},
                            {"build_date", wh_build_date()}};
    enum wh_err err = wh_buf_addc(&b, '{');
    for (int i = 0; i < 3 && !err; i++) {
        err = wh_buf_addf(&b, "\"%s\":", top[i][0]);
        if (!err)
            err = wh_buf_add_json_string(&b, top[i][1], strlen(top[i][1]));
        if (!err)
            err = wh_buf_addc(&b, ',');
    }
    if (!err)
        err = wh_buf_add(&b, "\"libraries\":{");
    for (int i = 0; i < 6 && !err; i++) {
        err = wh_buf_addf(&b, "%s\"%s\":", i ? "," : "", libs[i].key);
        if (!err)
            err = wh_buf_add_json_string(&b, libs[i].version, strlen(libs[i].version));
    }
    if (!err)
        err = wh_buf_add(&b, "}}\n");
    if (!err)
        fwrite(wh_buf_ptr(&b), 1, wh_buf_len(&b), out);
    wh_buf_free(&b);
}

void wh_version_print(FILE *out, bool json)
{
    struct lib libs[6];
    libraries(libs);
    if (json) {
        print_json(out, libs);
        return;
    }
    fprintf(out, "tpu-webhook %s\ncommit: %s\nbuild date: %s\n", wh_build_version(),
            wh_build_commit(), wh_build_date());
    for (int i = 0; i < 6; i++)
        fprintf(out, "%s: %s\n", libs[i].name, libs[i].version);
}

static const char usage_head[] =
    "usage: tpu-webhook version [--json]\n"
    "\n"
    "Prints the version, the git commit and date of the build, and the versions of\n"
    "the libraries in use (also: tpu-webhook --version, tpu-webhook serve --version).\n"
    "\n"
    "flags:\n";

int wh_cmd_version(int argc, char **argv)
{
    bool json = false;
    struct wh_flag flags[] = {
        {"json", WH_FLAG_BOOL, &json, 0, 0, "one JSON object instead of text", false},
    };
    int exit_now = wh_flags_command(flags, 1, argc, argv, "version", usage_head);
    if (exit_now >= 0)
        return exit_now;
    wh_version_print(stdout, json);
    return 0;
}
