/* flags.h: command-line flags parsed the way Go's flag package does.
 *
 * Accepted forms, for every flag: -name value, --name value, -name=value,
 * --name=value. A boolean flag takes no separate value: -name sets it,
 * -name=true|false|1|0 chooses. "--" ends the flags. -h, -help and --help
 * are reported as WH_FLAGS_HELP so the caller prints its usage and exits 0.
 *
 * Positional arguments (a command's FILE or PATHs) are taken only where the
 * command says how many it takes (struct wh_flags_args); they may stand
 * before, between or after the flags, as `render FILE --summary`. "-" (stdin)
 * is positional, and so is everything after "--".
 *
 * The table is owned by the caller; parsing writes through each flag's dst
 * (a const char * for STR, long for INT, long milliseconds for DURATION,
 * bool for BOOL) and marks it set. STR values borrow from argv.
 *
 * The tables are the one description of the command line: usage (--help),
 * the refusal of a bad value, shell completion (`tpu-webhook completion`,
 * through wh_flags_describe) and docs/cli.md's test all read them. A hidden
 * one-letter flag that shares a visible flag's dst is its short form
 * (-o for --output), shown as "-o, --output".
 */
#ifndef WH_FLAGS_H
#define WH_FLAGS_H

#include <stdbool.h> /* bool */
#include <stddef.h>  /* size_t */
#include <stdio.h>   /* FILE */

#include "wh/err.h" /* enum wh_err */

enum wh_flag_type {
    WH_FLAG_STR,      /* const char ** */
    WH_FLAG_INT,      /* long *, within [min, max] */
    WH_FLAG_BOOL,     /* bool * */
    WH_FLAG_DURATION, /* long * milliseconds, Go syntax: 1h2m3s, 500ms; within [min, max] ms */
    WH_FLAG_LIST,     /* struct wh_flag_list *: repeatable, every value kept in order */
    WH_FLAG_CHOICE,   /* struct wh_flag_choice *: one of a fixed set of values */
};

/* A CHOICE flag's value: one of choices ("|"-separated, "table|json|yaml"),
 * anything else refused while parsing; value stays NULL when not given. */
struct wh_flag_choice {
    const char *choices;
    const char *value; /* borrowed from argv */
};

#define WH_FLAG_LIST_MAX 16
struct wh_flag_list {
    const char *v[WH_FLAG_LIST_MAX]; /* borrowed from argv */
    size_t n;
};

struct wh_flag {
    const char *name; /* without dashes */
    enum wh_flag_type type;
    void *dst;
    long min, max;    /* INT and DURATION bounds (ignored when min == max == 0) */
    const char *help; /* one line; "" hides the flag from usage */
    bool set;         /* out: given on the command line */
};

/* kubectl's -o, the same on every command that prints data: --output and
 * its short form -o, both writing the struct wh_flag_choice *choice. */
#define WH_FLAGS_OUTPUT(choice, help)                          \
    {"output", WH_FLAG_CHOICE, (choice), 0, 0, (help), false}, \
    {                                                          \
        "o", WH_FLAG_CHOICE, (choice), 0, 0, "", false         \
    }

/* Returned (as WH_OK with *help set) when the user asked for help. */
enum wh_flags_result { WH_FLAGS_OK, WH_FLAGS_HELP };

/* Parse argv[1..argc-1] against flags[0..n-1]; a positional argument is an
 * error (for commands that take flags only). On failure errbuf names the
 * flag, the bad value and what is expected. */
WH_NODISCARD enum wh_err wh_flags_parse(struct wh_flag *flags, size_t n, int argc, char **argv,
                                        enum wh_flags_result *result, char *errbuf);

/* The positional arguments a command takes. The caller sets name, min, max
 * and hint; parsing sets args and n. */
struct wh_flags_args {
    const char *name; /* one argument as usage names it: "FILE", "PATH" */
    int min, max;     /* how many are accepted; max < 0: no upper bound */
    const char *hint; /* the fix when there are fewer than min, e.g. "give a FILE, or - for
                         stdin" */
    char **args;      /* out: the positional arguments in command-line order */
    int n;            /* out: how many */
    /* The values accepted, "|"-separated ("bash|zsh"), or NULL for any. */
    const char *choices;
};

/* wh_flags_parse that also takes positional arguments as args says.
 * argv is reordered: its positional arguments are moved, in order, to
 * argv[1..args->n], and args->args points there (the strings stay argv's;
 * STR flag values borrow them too). Errors name the extra argument, or the
 * missing one with the hint. args may be NULL (no positional arguments). */
WH_NODISCARD enum wh_err wh_flags_parse_args(struct wh_flag *flags, size_t n,
                                             struct wh_flags_args *args, int argc, char **argv,
                                             enum wh_flags_result *result, char *errbuf);

/* Parse a Go duration ("300ms", "10s", "1m30s", "0") into milliseconds. */
bool wh_flags_parse_duration(const char *s, long *ms);

/* Print one line per visible flag: "  -o, --name value   help". */
void wh_flags_usage(const struct wh_flag *flags, size_t n, FILE *out);

/* The short form of flags[i] (a hidden one-letter flag with its dst), or
 * NULL. */
const struct wh_flag *wh_flags_short(const struct wh_flag *flags, size_t n, size_t i);

/* A bad command line, as every command says it: "tpu-webhook <command>:
 * <why>" and the --help hint, two lines on stderr. Returns 2, the exit
 * status. */
int wh_flags_bad(const char *command, const char *why);

/* The front of a subcommand, `tpu-webhook <command> [flags]`: parse, and on
 * a bad flag print the reason and a hint to stderr and return 2 (the exit
 * status); on -h/--help print usage_head and the flags to stdout and return
 * 0; when the command should run, return -1. */
int wh_flags_command(struct wh_flag *flags, size_t n, int argc, char **argv, const char *command,
                     const char *usage_head);
/* wh_flags_command for a command that takes positional arguments (see
 * wh_flags_parse_args). */
int wh_flags_command_args(struct wh_flag *flags, size_t n, struct wh_flags_args *args, int argc,
                          char **argv, const char *command, const char *usage_head);

/* What a command's front end saw, in describe mode: its flag table (copied;
 * dst and set are not to be read) and its positional arguments. */
#define WH_FLAGS_DESCRIBE_MAX 64
struct wh_flags_description {
    const char *command, *usage_head;
    struct wh_flag flags[WH_FLAGS_DESCRIBE_MAX];
    const char *choices[WH_FLAGS_DESCRIBE_MAX]; /* a CHOICE flag's choices, else NULL */
    size_t n;
    const char *args_name;    /* "FILE", "PATH", or NULL: flags only */
    const char *args_choices; /* the positional arguments' choices, or NULL: files */
    bool described;           /* out: the command reached its front end */
};

/* Describe mode: while into is set (not NULL), wh_flags_command and
 * wh_flags_command_args copy the command's table into *into and return 0
 * without parsing, so a command called with no arguments returns at once,
 * having run nothing. For `completion` and the docs test, which must read
 * the tables the parser uses rather than a copy. The CLI is one thread
 * until a command runs; set it back to NULL after the call. */
void wh_flags_describe(struct wh_flags_description *into);

/* The flag by name, or NULL. */
const struct wh_flag *wh_flags_find(const struct wh_flag *flags, size_t n, const char *name);

#endif /* WH_FLAGS_H */
