/* cli.c: the command table of the tpu-webhook binary, its usage and the
 * shell completion generated from the tables (see wh/commands.h). */
#include <stdio.h>  /* fprintf, snprintf */
#include <string.h> /* strcmp */

#include "wh/commands.h" /* wh_cli_main, wh_cmd_* */
#include "flags.h"       /* wh_flags_command_args, wh_flags_describe */

static int cmd_completion(int argc, char **argv);

struct command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
};

/* Every command, in the order usage lists them: dispatch, usage,
 * completion and docs/cli.md's test read this one table. */
static const struct command commands[] = {
    {"serve", wh_cmd_serve, "serve the admission webhook over HTTPS"},
    {"certs", wh_cmd_certs, "write a development CA and server certificate"},
    {"review", wh_cmd_review, "answer one AdmissionReview (JSON or YAML) from a file or stdin"},
    {"render", wh_cmd_render, "show the worker pods of a RayCluster/RayJob/RayService as mutated"},
    {"check", wh_cmd_check, "validate Ray manifests in files or directories (for CI)"},
    {"doctor", wh_cmd_doctor, "say why a TPU slice that exists does not start"},
    {"version", wh_cmd_version, "print the version, commit, build date and library versions"},
    {"completion", cmd_completion, "print a bash or zsh completion script"},
};
#define N_COMMANDS (sizeof(commands) / sizeof(commands[0]))

static void usage(FILE *out)
{
    fprintf(out, "usage: tpu-webhook <command> [flags]\n\n"
                 "Admission webhook for TPU workloads: mutates TPU pods (TPU_WORKER_ID,\n"
                 "TPU_NAME, hostnames, peer addresses, affinity) and validates RayClusters,\n"
                 "Jobs, JobSets and LeaderWorkerSets against their TPU topology.\n\n"
                 "commands:\n");
    for (size_t i = 0; i < N_COMMANDS; i++)
        fprintf(out, "  %-11s %s\n", commands[i].name, commands[i].summary);
    fprintf(out, "\nRun 'tpu-webhook <command> --help' for a command's flags. Commands that\n"
                 "print data take -o json or -o yaml (kubectl's flag).\n");
}

/* The flag table of commands[i], read through the parser's describe mode
 * (the command returns at its front end, having run nothing). */
static bool describe(size_t i, struct wh_flags_description *d)
{
    char name[32];
    snprintf(name, sizeof(name), "%s", commands[i].name);
    char *argv[] = {name, NULL};
    memset(d, 0, sizeof(*d));
    wh_flags_describe(d);
    (void)commands[i].run(1, argv);
    wh_flags_describe(NULL);
    return d->described;
}

/* Shown to completion: visible flags and the short forms of visible flags
 * (the hidden klog flags serve accepts for the reference's manifests are
 * not offered). */
static bool offered(const struct wh_flags_description *d, size_t i)
{
    const struct wh_flag *f = &d->flags[i];
    if (f->help && *f->help)
        return true;
    for (size_t j = 0; j < d->n; j++)
        if (wh_flags_short(d->flags, d->n, j) == f)
            return true;
    return false;
}

/* "-o" for one letter, "--output" otherwise. */
static const char *dashes(const struct wh_flag *f)
{
    return strlen(f->name) == 1 ? "-" : "--";
}

/* choices "a|b" as "a b". */
static void print_words(FILE *out, const char *choices)
{
    for (const char *c = choices; *c; c++)
        fputc(*c == '|' ? ' ' : *c, out);
}

/* The case arms of one command, in either shell's syntax: the flags that
 * take a value, what completes it, and the flags offered. */
static void print_command(FILE *out, const struct wh_flags_description *d, bool zsh)
{
    fprintf(out, "    %s)\n        case $prev in\n", d->command);
    for (size_t i = 0; i < d->n; i++) {
        const struct wh_flag *f = &d->flags[i];
        if (f->type == WH_FLAG_BOOL || !offered(d, i))
            continue;
        /* Go's flags take one dash or two. A value without choices is
         * completed as the shell completes any word (files). */
        fprintf(out, "        -%s|--%s)", f->name, f->name);
        if (f->type == WH_FLAG_CHOICE) {
            fprintf(out, zsh ? " compadd -- " : " COMPREPLY=($(compgen -W \"");
            print_words(out, d->choices[i]);
            fprintf(out, zsh ? "; return ;;\n" : "\" -- \"$cur\")); return ;;\n");
        } else {
            fprintf(out, zsh ? " _default; return ;;\n" : " return ;;\n");
        }
    }
    fprintf(out, "        esac\n        flags=\"");
    for (size_t i = 0, first = 1; i < d->n; i++)
        if (offered(d, i)) {
            fprintf(out, "%s%s%s", first ? "" : " ", dashes(&d->flags[i]), d->flags[i].name);
            first = 0;
        }
    fprintf(out, "\"\n        args=\"%s\"\n        ;;\n",
            d->args_choices ? d->args_choices
            : d->args_name  ? "files"
                            : "");
}

static int print_completion(const char *shell)
{
    bool zsh = !strcmp(shell, "zsh");
    struct wh_flags_description d;
    FILE *out = stdout;
    /* zsh reads #compdef on the first line of a file in $fpath. */
    fprintf(out,
            "%s# %s completion for tpu-webhook, generated by `tpu-webhook completion %s`\n"
            "# from the binary's own command and flag tables.\n",
            zsh ? "#compdef tpu-webhook\n" : "", shell, shell);
    if (zsh)
        fprintf(out, "_tpu_webhook() {\n"
                     "    local cur=${words[CURRENT]} prev=${words[CURRENT-1]} flags args\n"
                     "    if (( CURRENT == 2 )); then\n        compadd -- ");
    else
        fprintf(out, "_tpu_webhook() {\n"
                     "    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}\n"
                     "    local flags args\n"
                     "    # --flag=value: bash splits at '=' (COMP_WORDBREAKS).\n"
                     "    if [[ $cur == = ]]; then cur=; prev=${COMP_WORDS[COMP_CWORD-1]}; fi\n"
                     "    if [[ $prev == = ]]; then prev=${COMP_WORDS[COMP_CWORD-2]}; fi\n"
                     "    if (( COMP_CWORD == 1 )); then\n"
                     "        COMPREPLY=($(compgen -W \"");
    for (size_t i = 0; i < N_COMMANDS; i++)
        fprintf(out, "%s%s", i ? " " : "", commands[i].name);
    fprintf(out, " help%s\n        return\n    fi\n    case %s in\n", zsh ? "" : "\" -- \"$cur\"))",
            zsh ? "${words[2]}" : "${COMP_WORDS[1]}");
    for (size_t i = 0; i < N_COMMANDS; i++) {
        if (!describe(i, &d)) {
            fprintf(stderr, "tpu-webhook completion: command %s has no flag table\n",
                    commands[i].name);
            return 2;
        }
        print_command(out, &d, zsh);
    }
    fprintf(out, "    *) return ;;\n    esac\n");
    if (zsh)
        fprintf(out, "    if [[ $cur == -* ]]; then compadd -- ${=flags}\n"
                     "    elif [[ $args == files ]]; then _files\n"
                     "    elif [[ -n $args ]]; then compadd -- ${(s:|:)args}\n"
                     "    fi\n}\n"
                     "if [[ $funcstack[1] == _tpu_webhook ]]; then _tpu_webhook \"$@\"\n"
                     "else compdef _tpu_webhook tpu-webhook; fi\n");
    else
        fprintf(out,
                "    if [[ $cur == -* ]]; then COMPREPLY=($(compgen -W \"$flags\" -- \"$cur\"))\n"
                "    elif [[ $args == files ]]; then COMPREPLY=($(compgen -f -- \"$cur\"))\n"
                "    elif [[ -n $args ]]; then COMPREPLY=($(compgen -W \"${args//|/ }\" -- \"$cur\"))\n"
                "    fi\n}\n"
                "complete -o default -F _tpu_webhook tpu-webhook\n");
    return fflush(out) ? 2 : 0;
}

static const char completion_usage[] =
    "usage: tpu-webhook completion bash|zsh\n"
    "\n"
    "Prints a completion script for the shell, made from the binary's own command\n"
    "and flag tables: commands, flags, and the values of -o and the other flags\n"
    "with a fixed set of values. Load it with\n"
    "  source <(tpu-webhook completion bash)    # in ~/.bashrc\n"
    "  source <(tpu-webhook completion zsh)     # in ~/.zshrc, after compinit\n"
    "or write it to a file bash-completion or zsh ($fpath, as _tpu_webhook) reads.\n"
    "\n"
    "flags:\n";

static int cmd_completion(int argc, char **argv)
{
    struct wh_flags_args shell = {.name = "SHELL",
                                  .min = 1,
                                  .max = 1,
                                  .hint = "give bash or zsh",
                                  .choices = "bash|zsh"};
    int exit_now = wh_flags_command_args(NULL, 0, &shell, argc, argv, "completion",
                                         completion_usage);
    if (exit_now >= 0)
        return exit_now;
    return print_completion(shell.args[0]);
}

int wh_cli_main(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") ||
        !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-version")) {
        char *args[] = {argv[1], NULL};
        return wh_cmd_version(1, args);
    }
    for (size_t i = 0; i < N_COMMANDS; i++)
        if (!strcmp(argv[1], commands[i].name))
            return commands[i].run(argc - 1, argv + 1);
    fprintf(stderr,
            "tpu-webhook: unknown command \"%s\"\nRun 'tpu-webhook --help' for the commands.\n",
            argv[1]);
    return 2;
}
