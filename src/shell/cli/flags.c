/* flags.c: Go-compatible flag parsing (see flags.h). */
#include "flags.h"

#include <limits.h> /* LONG_MAX */
#include <stdio.h>  /* fprintf, snprintf */
#include <string.h> /* strcmp, strchr, strncmp */

#include "wh/json.h" /* wh_parse_long */

const struct wh_flag *wh_flags_find(const struct wh_flag *flags, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(flags[i].name, name))
            return &flags[i];
    return NULL;
}

static bool parse_bool(const char *s, bool *out)
{
    static const char *const yes[] = {"1", "t", "T", "true", "TRUE", "True"};
    static const char *const no[] = {"0", "f", "F", "false", "FALSE", "False"};
    for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
        if (!strcmp(s, yes[i])) {
            *out = true;
            return true;
        }
        if (!strcmp(s, no[i])) {
            *out = false;
            return true;
        }
    }
    return false;
}

/* One "<number><unit>" step of a duration; returns false on a bad unit. */
static bool unit_ms(const char **p, double *scale)
{
    static const struct {
        const char *unit;
        double ms;
    } units[] = {{"ms", 1}, {"h", 3600000}, {"m", 60000}, {"s", 1000}};
    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
        size_t len = strlen(units[i].unit);
        if (!strncmp(*p, units[i].unit, len)) {
            *scale = units[i].ms;
            *p += len;
            return true;
        }
    }
    return false;
}

bool wh_flags_parse_duration(const char *s, long *ms)
{
    if (!s || !*s)
        return false;
    if (!strcmp(s, "0")) {
        *ms = 0;
        return true;
    }
    double total = 0;
    const char *p = s;
    while (*p) {
        if (*p < '0' || *p > '9')
            return false;
        double v = 0;
        while (*p >= '0' && *p <= '9' && v < 1e12)
            v = v * 10 + (*p++ - '0');
        double scale;
        if (!unit_ms(&p, &scale))
            return false;
        total += v * scale;
        if (total > (double)LONG_MAX / 2)
            return false;
    }
    *ms = (long)total;
    return true;
}

/* value is one of the "|"-separated choices. */
static bool is_choice(const char *choices, const char *value)
{
    size_t len = strlen(value);
    for (const char *c = choices; c;) {
        const char *bar = strchr(c, '|');
        size_t n = bar ? (size_t)(bar - c) : strlen(c);
        if (n == len && !strncmp(c, value, n))
            return true;
        c = bar ? bar + 1 : NULL;
    }
    return false;
}

/* "invalid value ... for flag -output: expected a, b or c" (kind "flag -",
 * name "output"), or for an argument ("argument ", "SHELL"). */
static enum wh_err bad_choice(const char *kind, const char *name, const char *choices,
                              const char *value, char *errbuf)
{
    char list[256] = "";
    size_t at = 0;
    for (const char *c = choices; c && at < sizeof(list);) {
        const char *bar = strchr(c, '|');
        int n = bar ? (int)(bar - c) : (int)strlen(c);
        const char *sep = c == choices ? "" : bar ? ", " : " or ";
        int w = snprintf(list + at, sizeof(list) - at, "%s%.*s", sep, n, c);
        at += w > 0 ? (size_t)w : 0;
        c = bar ? bar + 1 : NULL;
    }
    return wh_fail(errbuf, WH_ERR_INVALID, "invalid value \"%s\" for %s%s: expected %s", value,
                   kind, name, list);
}

static enum wh_err set_value(struct wh_flag *f, const char *value, char *errbuf)
{
    bool bounded = f->min != 0 || f->max != 0;
    long v = 0;
    switch (f->type) {
    case WH_FLAG_STR: *(const char **)f->dst = value; break;
    case WH_FLAG_CHOICE: {
        struct wh_flag_choice *c = f->dst;
        if (!is_choice(c->choices, value))
            return bad_choice("flag -", f->name, c->choices, value, errbuf);
        c->value = value;
        break;
    }
    case WH_FLAG_LIST: {
        struct wh_flag_list *l = f->dst;
        if (l->n >= WH_FLAG_LIST_MAX)
            return wh_fail(errbuf, WH_ERR_INVALID, "flag -%s given more than %d times", f->name,
                           WH_FLAG_LIST_MAX);
        l->v[l->n++] = value;
        break;
    }
    case WH_FLAG_BOOL:
        if (!parse_bool(value, (bool *)f->dst))
            return wh_fail(errbuf, WH_ERR_INVALID,
                           "invalid value \"%s\" for flag -%s: expected true or false", value,
                           f->name);
        break;
    case WH_FLAG_INT:
        if (!wh_parse_long(value, &v) || (bounded && (v < f->min || v > f->max)))
            return wh_fail(errbuf, WH_ERR_INVALID,
                           "invalid value \"%s\" for flag -%s: expected an integer from %ld to %ld",
                           value, f->name, bounded ? f->min : LONG_MIN, bounded ? f->max : LONG_MAX);
        *(long *)f->dst = v;
        break;
    case WH_FLAG_DURATION:
        if (!wh_flags_parse_duration(value, &v) || (bounded && (v < f->min || v > f->max)))
            return wh_fail(errbuf, WH_ERR_INVALID,
                           "invalid value \"%s\" for flag -%s: expected a duration such as "
                           "500ms, 10s or 1m from %ldms to %ldms",
                           value, f->name, bounded ? f->min : 0, bounded ? f->max : LONG_MAX);
        *(long *)f->dst = v;
        break;
    }
    f->set = true;
    return WH_OK;
}

static bool is_help(const char *name)
{
    return !strcmp(name, "h") || !strcmp(name, "help");
}

/* The flag argv[*i] (which starts with '-' and is not "-" or "--"), with
 * its value from argv[*i + 1] when it takes one (*i then moves past it). */
static enum wh_err parse_flag(struct wh_flag *flags, size_t n, int argc, char **argv, int *i,
                              enum wh_flags_result *result, char *errbuf)
{
    const char *a = argv[*i];
    const char *name = a + (a[1] == '-' ? 2 : 1);
    if (!*name || *name == '-' || *name == '=')
        return wh_fail(errbuf, WH_ERR_INVALID, "bad flag syntax: %s", a);
    const char *eq = strchr(name, '=');
    size_t name_len = eq ? (size_t)(eq - name) : strlen(name);
    char key[64];
    if (name_len >= sizeof(key))
        return wh_fail(errbuf, WH_ERR_INVALID, "flag provided but not defined: %s", a);
    memcpy(key, name, name_len);
    key[name_len] = '\0';
    if (is_help(key)) {
        *result = WH_FLAGS_HELP;
        return WH_OK;
    }
    struct wh_flag *f = (struct wh_flag *)wh_flags_find(flags, n, key);
    if (!f)
        return wh_fail(errbuf, WH_ERR_INVALID, "flag provided but not defined: -%s", key);
    const char *value = eq ? eq + 1 : NULL;
    if (!value && f->type == WH_FLAG_BOOL)
        value = "true";
    if (!value) {
        if (*i + 1 >= argc)
            return wh_fail(errbuf, WH_ERR_INVALID, "flag needs an argument: -%s", key);
        value = argv[++*i];
    }
    return set_value(f, value, errbuf);
}

/* Keep the positional argument a (argv[1 + args->n] is free: every slot
 * before the current one has been read). */
static enum wh_err take_arg(struct wh_flags_args *args, char **argv, char *a, char *errbuf)
{
    if (!args)
        return wh_fail(errbuf, WH_ERR_INVALID,
                       "unexpected argument \"%s\" (this command takes flags only, and flags "
                       "start with - or --)",
                       a);
    if (args->max >= 0 && args->n >= args->max) {
        if (args->max == 1)
            return wh_fail(errbuf, WH_ERR_INVALID, "one %s only: \"%s\" and \"%s\" given",
                           args->name, argv[1], a);
        return wh_fail(errbuf, WH_ERR_INVALID, "at most %d %s arguments: \"%s\" is one too many",
                       args->max, args->name, a);
    }
    if (args->choices && !is_choice(args->choices, a))
        return bad_choice("argument ", args->name, args->choices, a, errbuf);
    argv[1 + args->n++] = a;
    return WH_OK;
}

enum wh_err wh_flags_parse_args(struct wh_flag *flags, size_t n, struct wh_flags_args *args,
                                int argc, char **argv, enum wh_flags_result *result, char *errbuf)
{
    *result = WH_FLAGS_OK;
    if (args) {
        args->args = argv + 1;
        args->n = 0;
    }
    bool flags_done = false;
    for (int i = 1; i < argc; i++) {
        char *a = argv[i];
        enum wh_err err = WH_OK;
        if (!flags_done && !strcmp(a, "--"))
            flags_done = true;
        else if (flags_done || a[0] != '-' || a[1] == '\0')
            err = take_arg(args, argv, a, errbuf);
        else
            err = parse_flag(flags, n, argc, argv, &i, result, errbuf);
        if (err)
            return err;
        if (*result == WH_FLAGS_HELP)
            return WH_OK;
    }
    if (args && args->n < args->min)
        return wh_fail(errbuf, WH_ERR_INVALID, "missing %s argument: %s", args->name,
                       args->hint ? args->hint : "see --help");
    return WH_OK;
}

enum wh_err wh_flags_parse(struct wh_flag *flags, size_t n, int argc, char **argv,
                           enum wh_flags_result *result, char *errbuf)
{
    return wh_flags_parse_args(flags, n, NULL, argc, argv, result, errbuf);
}

int wh_flags_bad(const char *command, const char *why)
{
    fprintf(stderr, "tpu-webhook %s: %s\nRun 'tpu-webhook %s --help' for the flags.\n", command,
            why, command);
    return 2;
}

static struct wh_flags_description *describing;

void wh_flags_describe(struct wh_flags_description *into)
{
    describing = into;
}

static void describe(const struct wh_flag *flags, size_t n, const struct wh_flags_args *args,
                     const char *command, const char *usage_head)
{
    struct wh_flags_description *d = describing;
    d->command = command;
    d->usage_head = usage_head;
    d->n = n < WH_FLAGS_DESCRIBE_MAX ? n : WH_FLAGS_DESCRIBE_MAX;
    for (size_t i = 0; i < d->n; i++) {
        d->flags[i] = flags[i];
        d->flags[i].set = false;
        d->choices[i] = flags[i].type == WH_FLAG_CHOICE
                            ? ((const struct wh_flag_choice *)flags[i].dst)->choices
                            : NULL;
    }
    d->args_name = args ? args->name : NULL;
    d->args_choices = args ? args->choices : NULL;
    d->described = true;
}

static int run_command(struct wh_flag *flags, size_t n, struct wh_flags_args *args, int argc,
                       char **argv, const char *command, const char *usage_head)
{
    if (describing) {
        describe(flags, n, args, command, usage_head);
        return 0;
    }
    char errbuf[WH_ERRBUF_LEN] = "";
    enum wh_flags_result fr;
    if (wh_flags_parse_args(flags, n, args, argc, argv, &fr, errbuf))
        return wh_flags_bad(command, errbuf);
    if (fr == WH_FLAGS_HELP) {
        fputs(usage_head, stdout);
        wh_flags_usage(flags, n, stdout);
        return 0;
    }
    return -1;
}

int wh_flags_command_args(struct wh_flag *flags, size_t n, struct wh_flags_args *args, int argc,
                          char **argv, const char *cmd, const char *usage_head)
{
    return run_command(flags, n, args, argc, argv, cmd, usage_head);
}

int wh_flags_command(struct wh_flag *flags, size_t n, int argc, char **argv, const char *cmd,
                     const char *usage_head)
{
    return run_command(flags, n, NULL, argc, argv, cmd, usage_head);
}

const struct wh_flag *wh_flags_short(const struct wh_flag *flags, size_t n, size_t i)
{
    for (size_t j = 0; j < n; j++)
        if (j != i && flags[j].dst == flags[i].dst && strlen(flags[j].name) == 1 &&
            (!flags[j].help || !*flags[j].help))
            return &flags[j];
    return NULL;
}

/* The left column of a flag's usage line: "-o, --output FORMAT",
 * "    --long-only int", as kubectl lays them out. */
static void usage_left(const struct wh_flag *flags, size_t n, size_t i, char *left, size_t size)
{
    const struct wh_flag *f = &flags[i];
    const char *arg = f->type == WH_FLAG_CHOICE ? ((const struct wh_flag_choice *)f->dst)->choices
                      : f->type == WH_FLAG_STR  ? "string"
                      : f->type == WH_FLAG_LIST ? "string (repeatable)"
                      : f->type == WH_FLAG_INT  ? "int"
                      : f->type == WH_FLAG_DURATION ? "duration"
                                                    : "";
    const struct wh_flag *s = wh_flags_short(flags, n, i);
    snprintf(left, size, "%s%s%s--%s%s%s", s ? "-" : "    ", s ? s->name : "", s ? ", " : "",
             f->name, *arg ? " " : "", arg);
}

void wh_flags_usage(const struct wh_flag *flags, size_t n, FILE *out)
{
    char left[128];
    int width = 0;
    for (size_t i = 0; i < n; i++)
        if (flags[i].help && *flags[i].help) {
            usage_left(flags, n, i, left, sizeof(left));
            width = (int)strlen(left) > width ? (int)strlen(left) : width;
        }
    for (size_t i = 0; i < n; i++) {
        if (!flags[i].help || !*flags[i].help)
            continue;
        usage_left(flags, n, i, left, sizeof(left));
        fprintf(out, "  %-*s  %s\n", width, left, flags[i].help);
    }
}
