/* test_flags.c: Go-compatible flag parsing (the forms the reference's
 * manifests and users pass), durations, bounds and error texts. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>  /* open_memstream */
#include <stdlib.h> /* free */
#include <string.h>

#include "testutil.h"
#include "flags.h"

struct vals {
    const char *bind, *cert;
    long v, ms;
    bool standalone;
};

#define FLAGS(x)                                                                 \
    struct wh_flag flags[] = {                                                   \
        {"bind-address", WH_FLAG_STR, &(x).bind, 0, 0, "listen address", false}, \
        {"tls-cert-file", WH_FLAG_STR, &(x).cert, 0, 0, "cert", false},          \
        {"v", WH_FLAG_INT, &(x).v, 0, 10, "verbosity", false},                   \
        {"timeout", WH_FLAG_DURATION, &(x).ms, 100, 600000, "timeout", false},   \
        {"standalone", WH_FLAG_BOOL, &(x).standalone, 0, 0, "", false},          \
    };                                                                           \
    size_t n_flags = sizeof(flags) / sizeof(flags[0])

static enum wh_err parse(struct wh_flag *flags, size_t n, char **argv, enum wh_flags_result *fr,
                         char *errbuf)
{
    int argc = 0;
    while (argv[argc])
        argc++;
    return wh_flags_parse(flags, n, argc, argv, fr, errbuf);
}

static void test_all_forms(void **st)
{
    (void)st;
    struct vals x = {.bind = ":443"};
    FLAGS(x);
    char errbuf[WH_ERRBUF_LEN] = "";
    enum wh_flags_result fr;
    char *argv[] = {"serve", "--bind-address", ":8443", "-tls-cert-file=/a.crt",
                    "-v=2",  "--timeout",      "1m30s", "-standalone",
                    NULL};
    if (parse(flags, n_flags, argv, &fr, errbuf))
        fail_msg("%s", errbuf);
    assert_int_equal(fr, WH_FLAGS_OK);
    assert_string_equal(x.bind, ":8443");
    assert_string_equal(x.cert, "/a.crt");
    assert_int_equal(x.v, 2);
    assert_int_equal(x.ms, 90000);
    assert_true(x.standalone);
    assert_true(wh_flags_find(flags, n_flags, "v")->set);
    assert_null(wh_flags_find(flags, n_flags, "nope"));
}

static void test_separate_values_and_false(void **st)
{
    (void)st;
    struct vals y = {.bind = ":443", .standalone = true};
    FLAGS(y);
    char errbuf[WH_ERRBUF_LEN] = "";
    enum wh_flags_result fr;
    char *argv2[] = {"serve", "-v", "1", "--standalone=false", "--bind-address=", NULL};
    assert_int_equal(parse(flags, n_flags, argv2, &fr, errbuf), WH_OK);
    assert_int_equal(y.v, 1);
    assert_false(y.standalone);
    assert_string_equal(y.bind, "");
    assert_true(wh_flags_find(flags, n_flags, "bind-address")->set);
    assert_false(wh_flags_find(flags, n_flags, "tls-cert-file")->set);
}

static void test_help(void **st)
{
    (void)st;
    struct vals x = {0};
    FLAGS(x);
    char errbuf[WH_ERRBUF_LEN] = "";
    enum wh_flags_result fr;
    const char *forms[] = {"-h", "--help", "-help"};
    for (size_t i = 0; i < 3; i++) {
        char *argv[] = {"serve", "-v=1", (char *)forms[i], "--bogus", NULL};
        assert_int_equal(parse(flags, n_flags, argv, &fr, errbuf), WH_OK);
        assert_int_equal(fr, WH_FLAGS_HELP);
    }
}

/* The subcommand front: exit status 2 on a bad flag, 0 on help, -1 to run. */
static void test_command(void **st)
{
    (void)st;
    struct vals x = {0};
    FLAGS(x);
    char *bad[] = {"certs", "--bogus", NULL};
    char *help[] = {"certs", "--help", NULL};
    char *ok[] = {"certs", "-v", "2", NULL};
    assert_int_equal(wh_flags_command(flags, n_flags, 2, bad, "certs", "usage: test\n"), 2);
    assert_int_equal(wh_flags_command(flags, n_flags, 2, help, "certs", "usage: test\n"), 0);
    assert_int_equal(wh_flags_command(flags, n_flags, 3, ok, "certs", "usage: test\n"), -1);
}

static void expect_error(char **argv, const char *text)
{
    struct vals x = {0};
    FLAGS(x);
    char errbuf[WH_ERRBUF_LEN] = "";
    enum wh_flags_result fr;
    assert_int_equal(parse(flags, n_flags, argv, &fr, errbuf), WH_ERR_INVALID);
    if (!strstr(errbuf, text))
        fail_msg("error \"%s\" lacks \"%s\"", errbuf, text);
}

static void test_errors(void **st)
{
    (void)st;
    expect_error((char *[]){"serve", "--nope", NULL}, "flag provided but not defined: -nope");
    expect_error((char *[]){"serve", "--v", NULL}, "flag needs an argument: -v");
    expect_error((char *[]){"serve", "--v=11", NULL}, "invalid value \"11\" for flag -v");
    expect_error((char *[]){"serve", "--v=1x", NULL}, "from 0 to 10");
    expect_error((char *[]){"serve", "--standalone=yes", NULL}, "expected true or false");
    expect_error((char *[]){"serve", "--timeout=10", NULL}, "duration");
    expect_error((char *[]){"serve", "--timeout=50ms", NULL}, "from 100ms to 600000ms");
    expect_error((char *[]){"serve", "extra", NULL}, "unexpected argument \"extra\"");
    expect_error((char *[]){"serve", "---v=1", NULL}, "bad flag syntax");
    expect_error((char *[]){"serve", "--=1", NULL}, "bad flag syntax");
    expect_error((char *[]){"serve", "--", "x", NULL}, "unexpected argument \"x\"");
}

static enum wh_err parse_args(struct wh_flag *flags, size_t n, struct wh_flags_args *args,
                              char **argv, char *errbuf)
{
    int argc = 0;
    while (argv[argc])
        argc++;
    enum wh_flags_result fr;
    enum wh_err err = wh_flags_parse_args(flags, n, args, argc, argv, &fr, errbuf);
    assert_int_equal(fr, WH_FLAGS_OK);
    return err;
}

/* Positional arguments between, before and after flags, "-" and "--";
 * argv is reordered so that they come first, in order. */
static void test_positional(void **st)
{
    (void)st;
    struct vals x = {0};
    FLAGS(x);
    char errbuf[WH_ERRBUF_LEN] = "";
    struct wh_flags_args args = {"PATH", 1, -1, "give a PATH", NULL, 0, NULL};
    char *argv[] = {"check", "a.yaml", "-v", "3", "dir", "--standalone", "-", "--bind-address=:1",
                    "--",    "-v",     "--", NULL};
    if (parse_args(flags, n_flags, &args, argv, errbuf))
        fail_msg("%s", errbuf);
    assert_int_equal(args.n, 5);
    assert_ptr_equal(args.args, argv + 1);
    const char *want[] = {"a.yaml", "dir", "-", "-v", "--", NULL};
    for (int i = 0; i < 5; i++)
        assert_string_equal(args.args[i], want[i]);
    assert_int_equal(x.v, 3);
    assert_true(x.standalone);
    assert_string_equal(x.bind, ":1");
    /* A flag's value is not positional, even when it looks like one. */
    struct wh_flags_args one = {"FILE", 0, 1, NULL, NULL, 0, NULL};
    char *argv2[] = {"review", "--bind-address", "-", "f.json", NULL};
    assert_int_equal(parse_args(flags, n_flags, &one, argv2, errbuf), WH_OK);
    assert_int_equal(one.n, 1);
    assert_string_equal(one.args[0], "f.json");
    assert_string_equal(x.bind, "-");
    char *none[] = {"review", "-v", "1", NULL};
    assert_int_equal(parse_args(flags, n_flags, &one, none, errbuf), WH_OK);
    assert_int_equal(one.n, 0);
}

static void expect_args_error(struct wh_flags_args args, char **argv, const char *text)
{
    struct vals x = {0};
    FLAGS(x);
    char errbuf[WH_ERRBUF_LEN] = "";
    assert_int_equal(parse_args(flags, n_flags, &args, argv, errbuf), WH_ERR_INVALID);
    if (!strstr(errbuf, text))
        fail_msg("error \"%s\" lacks \"%s\"", errbuf, text);
}

static void test_positional_errors(void **st)
{
    (void)st;
    struct wh_flags_args file = {"FILE", 1, 1, "give a FILE, or '-' for stdin", NULL, 0, NULL};
    expect_args_error(file, (char *[]){"render", "-v", "1", NULL},
                      "missing FILE argument: give a FILE, or '-' for stdin");
    expect_args_error(file, (char *[]){"render", "a", "-v", "1", "b", NULL},
                      "one FILE only: \"a\" and \"b\" given");
    expect_args_error(file, (char *[]){"render", "a", "--", "--v", NULL},
                      "one FILE only: \"a\" and \"--v\" given");
    struct wh_flags_args two = {"PATH", 0, 2, NULL, NULL, 0, NULL};
    expect_args_error(two, (char *[]){"x", "a", "b", "c", NULL},
                      "at most 2 PATH arguments: \"c\" is one too many");
    struct wh_flags_args many = {"PATH", 2, -1, NULL, NULL, 0, NULL};
    expect_args_error(many, (char *[]){"x", "a", NULL}, "missing PATH argument: see --help");
    /* Flag errors are unchanged with positional arguments allowed. */
    expect_args_error(file, (char *[]){"render", "a", "--nope", NULL},
                      "flag provided but not defined: -nope");
    expect_args_error(file, (char *[]){"render", "a", "-v", NULL}, "flag needs an argument: -v");
}

static void test_choice(void **st)
{
    (void)st;
    struct wh_flag_choice out = {"table|json|yaml", NULL};
    struct wh_flag f[] = {WH_FLAGS_OUTPUT(&out, "format")};
    enum wh_flags_result fr;
    char errbuf[WH_ERRBUF_LEN] = "";
    assert_int_equal(parse(f, 2, (char *[]){"check", NULL}, &fr, errbuf), WH_OK);
    assert_null(out.value); /* not given */
    assert_int_equal(parse(f, 2, (char *[]){"check", "-o", "json", NULL}, &fr, errbuf), WH_OK);
    assert_string_equal(out.value, "json");
    assert_int_equal(parse(f, 2, (char *[]){"check", "--output=yaml", NULL}, &fr, errbuf), WH_OK);
    assert_string_equal(out.value, "yaml");
    assert_int_equal(parse(f, 2, (char *[]){"check", "--output", "xml", NULL}, &fr, errbuf),
                     WH_ERR_INVALID);
    assert_string_equal(errbuf,
                        "invalid value \"xml\" for flag -output: expected table, json or yaml");
    struct wh_flag_choice two = {"table|json", NULL};
    struct wh_flag g[] = {WH_FLAGS_OUTPUT(&two, "format")};
    assert_int_equal(parse(g, 2, (char *[]){"check", "-o=jso", NULL}, &fr, errbuf), WH_ERR_INVALID);
    assert_string_equal(errbuf, "invalid value \"jso\" for flag -o: expected table or json");
    /* A positional argument with choices. */
    struct wh_flags_args shell = {"SHELL", 1, 1, NULL, NULL, 0, "bash|zsh"};
    assert_int_equal(parse_args(NULL, 0, &shell, (char *[]){"completion", "zsh", NULL}, errbuf),
                     WH_OK);
    assert_string_equal(shell.args[0], "zsh");
    assert_int_equal(parse_args(NULL, 0, &shell, (char *[]){"completion", "fish", NULL}, errbuf),
                     WH_ERR_INVALID);
    assert_string_equal(errbuf, "invalid value \"fish\" for argument SHELL: expected bash or zsh");
}

/* Usage: the short form beside its flag, the choices as the value, the
 * help column aligned to the widest flag. */
static void test_usage(void **st)
{
    (void)st;
    struct wh_flag_choice out = {"table|json", NULL};
    const char *ns = NULL;
    long n = 0;
    struct wh_flag f[] = {
        WH_FLAGS_OUTPUT(&out, "format"),
        {"namespace", WH_FLAG_STR, &ns, 0, 0, "namespace", false},
        {"n", WH_FLAG_STR, &ns, 0, 0, "", false},
        {"count", WH_FLAG_INT, &n, 0, 0, "count", false},
        {"hidden", WH_FLAG_INT, &n, 0, 0, "", false},
    };
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    assert_non_null(mem);
    wh_flags_usage(f, 6, mem);
    fclose(mem);
    assert_string_equal(text, "  -o, --output table|json  format\n"
                              "  -n, --namespace string   namespace\n"
                              "      --count int          count\n");
    free(text);
}

/* Describe mode: the front end hands over the table and runs nothing. */
static void test_describe(void **st)
{
    (void)st;
    struct wh_flag_choice out = {"json|yaml", NULL};
    bool b = false;
    struct wh_flag f[] = {WH_FLAGS_OUTPUT(&out, "format"),
                          {"b", WH_FLAG_BOOL, &b, 0, 0, "b", false}};
    struct wh_flags_args file = {"FILE", 1, 1, NULL, NULL, 0, NULL};
    struct wh_flags_description d;
    memset(&d, 0, sizeof(d));
    wh_flags_describe(&d);
    /* A bad command line too: nothing is parsed. */
    int rc = wh_flags_command_args(f, 3, &file, 2, (char *[]){"x", "--nope", NULL}, "x", "head");
    wh_flags_describe(NULL);
    assert_int_equal(rc, 0);
    assert_true(d.described);
    assert_string_equal(d.command, "x");
    assert_int_equal(d.n, 3);
    assert_string_equal(d.flags[1].name, "o");
    assert_string_equal(d.choices[0], "json|yaml");
    assert_null(d.choices[2]);
    assert_string_equal(d.args_name, "FILE");
    assert_false(b);
}

static void test_durations(void **st)
{
    (void)st;
    long ms = -1;
    assert_true(wh_flags_parse_duration("0", &ms));
    assert_int_equal(ms, 0);
    assert_true(wh_flags_parse_duration("250ms", &ms));
    assert_int_equal(ms, 250);
    assert_true(wh_flags_parse_duration("2h1m3s", &ms));
    assert_int_equal(ms, 7263000);
    assert_false(wh_flags_parse_duration("", &ms));
    assert_false(wh_flags_parse_duration("5", &ms));
    assert_false(wh_flags_parse_duration("5x", &ms));
    assert_false(wh_flags_parse_duration("-5s", &ms));
    assert_false(wh_flags_parse_duration("99999999999999999999h", &ms));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_all_forms),  cmocka_unit_test(test_separate_values_and_false),
        cmocka_unit_test(test_help),       cmocka_unit_test(test_command),
        cmocka_unit_test(test_errors),     cmocka_unit_test(test_durations),
        cmocka_unit_test(test_positional), cmocka_unit_test(test_positional_errors),
        cmocka_unit_test(test_choice),     cmocka_unit_test(test_usage),
        cmocka_unit_test(test_describe),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
