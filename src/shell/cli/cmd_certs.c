/* cmd_certs.c: `tpu-webhook certs`: development CA + server certificate. */
#include <stdio.h> /* printf, fprintf */

#include "certs.h"       /* wh_certs_write */
#include "wh/commands.h" /* wh_cmd_certs */
#include "flags.h"       /* wh_flags_command */

static const char usage_head[] =
    "usage: tpu-webhook certs [flags]\n"
    "\n"
    "Writes a development CA (ca.crt, ca.key) and a server certificate\n"
    "(tls.crt, tls.key) for the webhook Service into a directory. The server\n"
    "certificate names <service>.<namespace>.svc, <service>.<namespace>.svc.cluster.local,\n"
    "<service>.<namespace>, <service>, localhost, 127.0.0.1 and ::1. An existing CA in the\n"
    "directory is reused (so clients that trust it keep working) unless --new-ca;\n"
    "the server certificate is always re-issued. Files are replaced atomically, so a\n"
    "running `tpu-webhook serve --tls-cert-file ...` picks the new pair up.\n"
    "\n"
    "flags:\n";

int wh_cmd_certs(int argc, char **argv)
{
    const char *dir = "certs/dev", *ns = "ray-system", *service = "kuberay-tpu-webhook";
    struct wh_flag_list extra = {.n = 0};
    long days = 365, ca_days = 3650;
    bool new_ca = false;
    /* One flag a line: a table, read down its columns. */
    /* clang-format off */
    struct wh_flag flags[] = {
        {"dir", WH_FLAG_STR, &dir, 0, 0, "output directory (default certs/dev)", false},
        {"namespace", WH_FLAG_STR, &ns, 0, 0, "namespace of the webhook Service (default ray-system)", false},
        {"service", WH_FLAG_STR, &service, 0, 0, "name of the webhook Service (default kuberay-tpu-webhook)", false},
        {"days", WH_FLAG_INT, &days, 1, 36500, "server certificate lifetime in days (default 365)", false},
        {"ca-days", WH_FLAG_INT, &ca_days, 1, 36500, "CA lifetime in days for a new CA (default 3650)", false},
        {"new-ca", WH_FLAG_BOOL, &new_ca, 0, 0, "replace an existing CA in the directory", false},
        {"extra-san", WH_FLAG_LIST, &extra, 0, 0, "one more name, DNS:<name> or IP:<address>; repeat for more", false},
    };
    /* clang-format on */
    size_t n_flags = sizeof(flags) / sizeof(flags[0]);
    int exit_now = wh_flags_command(flags, n_flags, argc, argv, "certs", usage_head);
    if (exit_now >= 0)
        return exit_now;
    char errbuf[WH_ERRBUF_LEN] = "";
    if (!*dir || !*ns || !*service) {
        fprintf(stderr, "tpu-webhook certs: --dir, --namespace and --service may not be empty\n");
        return 2;
    }
    struct wh_certs_opts o = {.dir = dir,
                              .ns = ns,
                              .service = service,
                              .days = (int)days,
                              .ca_days = (int)ca_days,
                              .new_ca = new_ca,
                              .extra_sans = extra.v,
                              .n_extra_sans = extra.n};
    bool reused = false;
    if (wh_certs_write(&o, &reused, errbuf)) {
        fprintf(stderr, "tpu-webhook certs: %s\n", errbuf);
        return 1;
    }
    printf("%s CA:        %s/ca.crt (key %s/ca.key)\n"
           "server certificate: %s/tls.crt (key %s/tls.key), %ld days, for %s.%s.svc,\n"
           "                    localhost, 127.0.0.1 and ::1\n"
           "serve with:  tpu-webhook serve --tls-cert-file=%s/tls.crt "
           "--tls-private-key-file=%s/tls.key\n",
           reused ? "kept" : "new", dir, dir, dir, dir, days, service, ns, dir, dir);
    return 0;
}
