/* commands.h: the subcommands of the tpu-webhook binary.
 *
 * Each takes the arguments after its own name (argv[0] is the command name)
 * and returns the process exit status. They live in src/shell/cmd_<name>.c.
 */
#ifndef WH_COMMANDS_H
#define WH_COMMANDS_H

/* review: one AdmissionReview in, the response out (src/shell/cmd_review.c). */
int wh_cmd_review(int argc, char **argv);
/* serve: the HTTPS admission webhook (src/shell/cmd_serve.c). */
int wh_cmd_serve(int argc, char **argv);
/* certs: development CA and server certificate (src/shell/cmd_certs.c). */
int wh_cmd_certs(int argc, char **argv);
/* render: the worker pods of Ray manifests as the webhook would mutate them
 * (src/shell/cmd_render.c). */
int wh_cmd_render(int argc, char **argv);
/* check: validate every Ray manifest under the given paths, one table row
 * per TPU worker group (src/shell/cmd_check.c). */
int wh_cmd_check(int argc, char **argv);

#endif /* WH_COMMANDS_H */
