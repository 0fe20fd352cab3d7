/* version.c: the version report (see version.h). */
#include "version.h"

#include <cjson/cJSON.h>    /* cJSON_Version */
#include <curl/curl.h>      /* curl_version_info */
#include <gnutls/gnutls.h>  /* gnutls_check_version */
#include <microhttpd.h>     /* MHD_get_version */
#include <openssl/crypto.h> /* OpenSSL_version */
#include <string.h>         /* strcmp */
#include <yaml.h>           /* yaml_get_version_string */

#include "wh/buildinfo.h" /* wh_build_* */
#include "wh/buf.h"       /* wh_buf_* */
#include "flags.h"        /* wh_flags_command, WH_FLAGS_OUTPUT */
#include "wh/commands.h"  /* wh_cmd_version */
#include "wh/json.h"      /* wh_json_set* */
#include "output.h"       /* wh_output_doc */

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

/* The report as a document; NULL when out of memory. */
static cJSON *report(const struct lib libs[6])
{
    cJSON *l = cJSON_CreateObject();
    for (int i = 0; i < 6 && l; i++)
        if (wh_json_set_str(l, libs[i].key, libs[i].version)) {
            cJSON_Delete(l);
            l = NULL;
        }
    cJSON *doc = l ? cJSON_CreateObject() : NULL;
    if (!doc || wh_json_set_str(doc, "version", wh_build_version()) ||
        wh_json_set_str(doc, "commit", wh_build_commit()) ||
        wh_json_set_str(doc, "build_date", wh_build_date())) {
        cJSON_Delete(l);
        cJSON_Delete(doc);
        return NULL;
    }
    if (wh_json_set(doc, "libraries", l)) { /* takes l */
        cJSON_Delete(doc);
        return NULL;
    }
    return doc;
}

bool wh_version_print(FILE *out, const char *format)
{
    struct lib libs[6];
    libraries(libs);
    if (!format) {
        fprintf(out, "tpu-webhook %s\ncommit: %s\nbuild date: %s\n", wh_build_version(),
                wh_build_commit(), wh_build_date());
        for (int i = 0; i < 6; i++)
            fprintf(out, "%s: %s\n", libs[i].name, libs[i].version);
        return true;
    }
    struct wh_buf b;
    wh_buf_init(&b, 1 << 16);
    cJSON *doc = report(libs);
    bool ok = doc && !wh_output_doc(doc, format, &b);
    if (ok)
        fwrite(wh_buf_ptr(&b), 1, wh_buf_len(&b), out);
    cJSON_Delete(doc);
    wh_buf_free(&b);
    return ok;
}

static const char usage_head[] =
    "usage: tpu-webhook version [-o json|yaml]\n"
    "\n"
    "Prints the version, the git commit and date of the build, and the versions of\n"
    "the libraries in use (also: tpu-webhook --version, tpu-webhook serve --version).\n"
    "\n"
    "flags:\n";

int wh_cmd_version(int argc, char **argv)
{
    struct wh_flag_choice output = {"json|yaml", NULL};
    bool json = false;
    struct wh_flag flags[] = {
        WH_FLAGS_OUTPUT(&output, "json, yaml: one document instead of text"),
        {"json", WH_FLAG_BOOL, &json, 0, 0, "the same as -o json (kept for scripts)", false},
    };
    int exit_now = wh_flags_command(flags, 3, argc, argv, "version", usage_head);
    if (exit_now >= 0)
        return exit_now;
    if (json && output.value && strcmp(output.value, "json"))
        return wh_flags_bad("version", "--json and -o yaml ask for two formats: give one");
    if (!wh_version_print(stdout, json ? "json" : output.value)) {
        fprintf(stderr, "tpu-webhook version: out of memory\n");
        return 2;
    }
    return fflush(stdout) ? 2 : 0;
}
