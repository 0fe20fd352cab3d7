/* commands.h: the subcommands of the tpu-webhook binary.
 *
 * Each takes the arguments after its own name (argv[0] is the command name)
 * and returns the process exit status. They live in src/shell/cmd_<name>.c.
 */
#ifndef WH_COMMANDS_H
#define WH_COMMANDS_H

#include <stdbool.h> /* bool */

#include "wh/admit.h"  /* struct wh_admit_opts */
#include "wh/server.h" /* struct wh_pipeline */

/* The binary: dispatch argv[1] to its command (help on none, exit 0; an
 * unknown one is exit 2). The table of commands is src/shell/cli/cli.c's. */
int wh_cli_main(int argc, char **argv);

/* review: one AdmissionReview in, the response out (src/shell/cli/cmd_review.c). */
int wh_cmd_review(int argc, char **argv);
/* serve: the HTTPS admission webhook (src/shell/cli/cmd_serve.c), over the
 * legacy-id pipeline (wh_serve_admit). */
int wh_cmd_serve(int argc, char **argv);

/* How serve makes the admission pipeline the server calls (struct
 * wh_pipeline, wh/server.h). The product's is wh_serve_admit, the pipeline of
 * wh/admit.h; wh-serve-double (tests/server) passes a stub.
 * start: fill *pl from the options serve's flags give; false with the reason
 *   in errbuf. What it makes is the pipeline's, freed by stop.
 * stop: free what start made (after the server is freed); only called on a
 *   pipeline start filled. */
struct wh_serve_pipeline {
    bool (*start)(const struct wh_admit_opts *o, struct wh_pipeline *pl, char *errbuf);
    void (*stop)(struct wh_pipeline *pl);
};
extern const struct wh_serve_pipeline wh_serve_admit;
/* serve over the pipeline sp makes. */
int wh_cmd_serve_with(int argc, char **argv, const struct wh_serve_pipeline *sp);
/* certs: development CA and server certificate (src/shell/cli/cmd_certs.c). */
int wh_cmd_certs(int argc, char **argv);
/* render: the worker pods of Ray manifests as the webhook would mutate them
 * (src/shell/cli/cmd_render.c). */
int wh_cmd_render(int argc, char **argv);
/* check: validate every Ray manifest under the given paths, one table row
 * per TPU worker group (src/shell/cli/cmd_check.c). */
int wh_cmd_check(int argc, char **argv);
/* doctor: judge the TPU slices that exist, from files or the cluster
 * (src/shell/cli/cmd_doctor.c). */
int wh_cmd_doctor(int argc, char **argv);

/* version: the build and library versions (src/shell/cli/version.c). */
int wh_cmd_version(int argc, char **argv);

#endif /* WH_COMMANDS_H */
