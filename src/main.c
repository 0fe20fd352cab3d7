/* main.c: the tpu-webhook binary; dispatches to a subcommand. */
#include <stdio.h>  /* fprintf */
#include <string.h> /* strcmp */

#include "wh/commands.h" /* wh_cmd_* */

struct command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
};

static const struct command commands[] = {
    {"serve", wh_cmd_serve, "serve the admission webhook over HTTPS"},
    {"certs", wh_cmd_certs, "write a development CA and server certificate"},
    {"review", wh_cmd_review, "answer one AdmissionReview (JSON or YAML) from a file or stdin"},
    {"render", wh_cmd_render, "show the worker pods of a RayCluster/RayJob/RayService as mutated"},
    {"check", wh_cmd_check, "validate Ray manifests in files or directories (for CI)"},
    {"doctor", wh_cmd_doctor, "say why a TPU slice that exists does not start"},
    {"version", wh_cmd_version, "print the version, commit, build date and library versions"},
};

static void usage(FILE *out)
{
    fprintf(out, "usage: tpu-webhook <command> [options]\n\n"
                 "Admission webhook for KubeRay TPU workloads: mutates TPU worker pods\n"
                 "(TPU_WORKER_ID, TPU_NAME, hostnames, peer addresses, affinity) and\n"
                 "validates RayClusters (numOfHosts against the TPU topology).\n\n"
                 "commands:\n");
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        fprintf(out, "  %-8s %s\n", commands[i].name, commands[i].summary);
    fprintf(out, "\nRun 'tpu-webhook <command> --help' for a command's options.\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-version")) {
        char *args[] = {argv[1], NULL};
        return wh_cmd_version(1, args);
    }
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        if (!strcmp(argv[1], commands[i].name))
            return commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "tpu-webhook: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
