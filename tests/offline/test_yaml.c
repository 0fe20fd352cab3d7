/* test_yaml.c: YAML -> JSON semantics (sigs.k8s.io/yaml rules), limits,
 * errors with locations, and the emitter's round trip. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "wh/json.h"
#include "wh/yaml.h"
#include "wh/yaml_emit.h"
#include "wh/yaml_scalar.h"

/* Load text and compare its single document with the expected JSON. */
static void expect_json(const char *yaml, const char *json)
{
    char errbuf[WH_ERRBUF_LEN] = "";
    cJSON *doc = NULL;
    enum wh_err err = wh_yaml_load_one(yaml, strlen(yaml), &doc, errbuf);
    if (err)
        fail_msg("load failed for %s: %s", yaml, errbuf);
    cJSON *want = wh_test_parse(json);
    if (!cJSON_Compare(doc, want, 1)) {
        char *got = cJSON_PrintUnformatted(doc);
        fail_msg("YAML %s\n gave %s\n want %s", yaml, got, json);
    }
    cJSON_Delete(want);
    cJSON_Delete(doc);
}

static void expect_error(const char *yaml, size_t len, enum wh_err code, const char *needle)
{
    char errbuf[WH_ERRBUF_LEN] = "";
    cJSON *docs = NULL;
    enum wh_err err = wh_yaml_load(yaml, len, &docs, NULL, errbuf);
    assert_null(docs);
    if (err != code)
        fail_msg("want error %d, got %d (%s) for %.80s", code, err, errbuf, yaml);
    if (!strstr(errbuf, needle))
        fail_msg("error '%s' lacks '%s'", errbuf, needle);
}

static void test_scalar_table(void **state)
{
    (void)state;
    static const struct {
        const char *yaml, *json;
    } rows[] = {
        /* quoted stays a string, plain resolves */
        {"a: \"4\"", "{\"a\":\"4\"}"},
        {"a: '4'", "{\"a\":\"4\"}"},
        {"a: 4", "{\"a\":4}"},
        {"a: -12", "{\"a\":-12}"},
        {"a: +7", "{\"a\":7}"},
        {"a: 1_000", "{\"a\":1000}"},
        {"a: 0x1F", "{\"a\":31}"},
        {"a: 0o17", "{\"a\":15}"},
        {"a: 017", "{\"a\":15}"},
        {"a: 0b101", "{\"a\":5}"},
        {"a: 08", "{\"a\":8}"},
        {"a: 1.5", "{\"a\":1.5}"},
        {"a: .5", "{\"a\":0.5}"},
        {"a: 1e3", "{\"a\":1000}"},
        {"a: 1e400", "{\"a\":\"1e400\"}"},
        {"a: 2x2x2", "{\"a\":\"2x2x2\"}"},
        {"a: 200G", "{\"a\":\"200G\"}"},
        {"a: 1.2.3", "{\"a\":\"1.2.3\"}"},
        {"a: 2001-12-14", "{\"a\":\"2001-12-14\"}"},
        {"a: 0x", "{\"a\":\"0x\"}"},
        {"a: -x", "{\"a\":\"-x\"}"},
        /* booleans, YAML 1.1 as go-yaml v2 */
        {"a: true", "{\"a\":true}"},
        {"a: False", "{\"a\":false}"},
        {"a: yes", "{\"a\":true}"},
        {"a: \"yes\"", "{\"a\":\"yes\"}"},
        {"a: NO", "{\"a\":false}"},
        {"a: on", "{\"a\":true}"},
        {"a: Off", "{\"a\":false}"},
        {"a: y", "{\"a\":true}"},
        {"a: yEs", "{\"a\":\"yEs\"}"},
        {"a: tRUE", "{\"a\":\"tRUE\"}"},
        /* nulls */
        {"a: null", "{\"a\":null}"},
        {"a: ~", "{\"a\":null}"},
        {"a:", "{\"a\":null}"},
        {"a: NULL", "{\"a\":null}"},
        {"a: 'null'", "{\"a\":\"null\"}"},
        /* explicit tags */
        {"a: !!str 4", "{\"a\":\"4\"}"},
        {"a: !!int 4", "{\"a\":4}"},
        {"a: ! 4", "{\"a\":\"4\"}"},
        /* keys become strings like sigs.k8s.io/yaml */
        {"1: a", "{\"1\":\"a\"}"},
        {"yes: a", "{\"true\":\"a\"}"},
        {"\"yes\": a", "{\"yes\":\"a\"}"},
        /* block scalars */
        {"a: |\n  x\n  y\n", "{\"a\":\"x\\ny\\n\"}"},
        {"a: |-\n  x\n  y\n", "{\"a\":\"x\\ny\"}"},
        {"a: >\n  x\n  y\n", "{\"a\":\"x y\\n\"}"},
        {"a: |\n  4\n", "{\"a\":\"4\\n\"}"},
        {"a: \"tab\\there\"", "{\"a\":\"tab\\there\"}"},
        /* collections, flow style, JSON */
        {"a: [1, \"2\", x]", "{\"a\":[1,\"2\",\"x\"]}"},
        {"a: {b: c}", "{\"a\":{\"b\":\"c\"}}"},
        {"- a\n- b: c\n  d: [] \n", "[\"a\",{\"b\":\"c\",\"d\":[]}]"},
        {"{\"a\": 4, \"b\": \"4\"}", "{\"a\":4,\"b\":\"4\"}"},
        {"  [1, 2]", "[1,2]"},
        {"{a: yes}", "{\"a\":true}"}, /* not JSON: falls back to YAML */
        /* anchors, aliases, merge keys */
        {"a: &x {b: 1}\nc: *x", "{\"a\":{\"b\":1},\"c\":{\"b\":1}}"},
        {"base: &b {x: 1, q: 2}\nd:\n  <<: *b\n  q: 3",
         "{\"base\":{\"x\":1,\"q\":2},\"d\":{\"q\":3,\"x\":1}}"},
        {"y: 1", "{\"true\":1}"}, /* go-yaml v2 reads a bare y as true */
        {"a: &a {x: 1}\nb: &b {x: 2, z: 3}\nc:\n  <<: [*a, *b]",
         "{\"a\":{\"x\":1},\"b\":{\"x\":2,\"z\":3},\"c\":{\"x\":1,\"z\":3}}"},
        {"\"<<\": 1", "{\"<<\":1}"},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
        expect_json(rows[i].yaml, rows[i].json);
}

/* The scalar module on its own (yaml_scalar.h), which the loader and the
 * emitter share. */
static void test_resolve_plain(void **state)
{
    (void)state;
    double num = 0;
    bool b = false;
    assert_int_equal(wh_yaml_resolve_plain("0x1f", 4, &num, &b), WH_YAML_NUM);
    assert_true(num == 31);
    assert_int_equal(wh_yaml_resolve_plain("0b101", 5, &num, &b), WH_YAML_NUM);
    assert_true(num == 5);
    assert_int_equal(wh_yaml_resolve_plain("017", 3, &num, &b), WH_YAML_NUM);
    assert_true(num == 15);
    assert_int_equal(wh_yaml_resolve_plain("1_000", 5, &num, &b), WH_YAML_NUM);
    assert_true(num == 1000);
    assert_int_equal(wh_yaml_resolve_plain("0x1g", 4, &num, &b), WH_YAML_STR);
    assert_int_equal(wh_yaml_resolve_plain("0o8", 3, &num, &b), WH_YAML_STR); /* not octal */
    assert_int_equal(wh_yaml_resolve_plain("09", 2, &num, &b), WH_YAML_NUM);  /* a float, as Go */
    assert_true(num == 9);
    assert_int_equal(wh_yaml_resolve_plain("0b102", 5, &num, &b), WH_YAML_STR);
    assert_int_equal(wh_yaml_resolve_plain("On", 2, &num, &b), WH_YAML_BOOL);
    assert_true(b);
    assert_int_equal(wh_yaml_resolve_plain("NO", 2, &num, &b), WH_YAML_BOOL);
    assert_false(b);
    assert_int_equal(wh_yaml_resolve_plain("~", 1, &num, &b), WH_YAML_NULL);
    assert_int_equal(wh_yaml_resolve_plain("-.Inf", 5, &num, &b), WH_YAML_NONFINITE);
    assert_int_equal(wh_yaml_resolve_plain("2001-12-14", 10, &num, &b), WH_YAML_STR);
    char text[32];
    wh_yaml_shortest_double(0.1, text);
    assert_string_equal(text, "0.1");
    wh_yaml_shortest_double(1e21, text);
    assert_string_equal(text, "1e+21");
}

static void test_multi_document(void **state)
{
    (void)state;
    const char *y = "# comment\n---\na: 1\n---\n---\n# empty\n---\nb: 2\n...\n";
    char errbuf[WH_ERRBUF_LEN] = "";
    cJSON *docs = NULL;
    unsigned *lines = NULL;
    assert_int_equal(wh_yaml_load(y, strlen(y), &docs, &lines, errbuf), WH_OK);
    assert_int_equal(cJSON_GetArraySize(docs), 2);
    assert_int_equal(lines[0], 2);
    assert_int_equal(lines[1], 7);
    assert_int_equal(cJSON_GetArrayItem(docs, 1)->child->valueint, 2);
    cJSON_Delete(docs);
    free(lines);

    cJSON *doc = NULL;
    assert_int_equal(wh_yaml_load_one("a: 1\n---\nb: 2\n", 14, &doc, errbuf), WH_ERR_INVALID);
    assert_non_null(strstr(errbuf, "2 documents"));
    assert_int_equal(wh_yaml_load_one("# nothing\n", 10, &doc, errbuf), WH_ERR_INVALID);
    assert_non_null(strstr(errbuf, "no document"));
    assert_null(doc);
}

/* The loader reports where an error is as numbers (check uses them). */
static void test_error_position(void **state)
{
    (void)state;
    static const struct {
        const char *yaml;
        unsigned line, column;
    } cases[] = {
        {"a: 1\nb: 2\na: 3\n", 3, 1},   /* duplicate key */
        {"a:\n  b: 1\n\tc: 2\n", 3, 1}, /* tab: a scanner error */
        {"x: 1\ny: *nope\n", 2, 4},     /* unknown alias */
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char errbuf[WH_ERRBUF_LEN] = "";
        cJSON *docs = NULL;
        struct wh_yaml_pos at = {99, 99};
        assert_int_equal(wh_yaml_load_at(cases[i].yaml, strlen(cases[i].yaml), &docs, NULL, &at,
                                         errbuf),
                         WH_ERR_INVALID);
        assert_int_equal(at.line, cases[i].line);
        assert_int_equal(at.column, cases[i].column);
    }
    char errbuf[WH_ERRBUF_LEN] = "";
    cJSON *docs = NULL;
    struct wh_yaml_pos at = {99, 99};
    assert_int_equal(wh_yaml_load_at("a: 1\n", 5, &docs, NULL, &at, errbuf), WH_OK);
    assert_int_equal(at.line, 0);
    cJSON_Delete(docs);
}

static void test_errors(void **state)
{
    (void)state;
    const char *bad = "a: 1\nb: [1, 2\nc: 3\n";
    expect_error(bad, strlen(bad), WH_ERR_INVALID, "line ");
    const char *tabs = "a:\n\tb: 1\n";
    expect_error(tabs, strlen(tabs), WH_ERR_INVALID, "line 2");
    const char *dup = "a: 1\nb: 2\na: 3\n";
    expect_error(dup, strlen(dup), WH_ERR_INVALID, "line 3, column 1: duplicate key \"a\"");
    const char *undef = "a: *nope\n";
    expect_error(undef, strlen(undef), WH_ERR_INVALID, "alias *nope");
    const char *inf = "a: .inf\n";
    expect_error(inf, strlen(inf), WH_ERR_INVALID, "infinity");
    const char *nullkey = "~: 1\n";
    expect_error(nullkey, strlen(nullkey), WH_ERR_INVALID, "key is null");
    const char *badint = "a: !!int x\n";
    expect_error(badint, strlen(badint), WH_ERR_INVALID, "not a valid !!int");
    const char *merge = "a:\n  <<: 3\n";
    expect_error(merge, strlen(merge), WH_ERR_INVALID, "merge key");
    const char nul[] = "a: \"x\\0y\"\n";
    expect_error(nul, sizeof(nul) - 1, WH_ERR_INVALID, "NUL");
    const char raw_nul[] = "a: b\0c\n";
    char errbuf[WH_ERRBUF_LEN] = "";
    cJSON *docs = NULL;
    assert_int_equal(wh_yaml_load(raw_nul, sizeof(raw_nul) - 1, &docs, NULL, errbuf),
                     WH_ERR_INVALID);
    assert_null(docs);
    const char *badutf8 = "a: \xff\xfe\n";
    expect_error(badutf8, strlen(badutf8), WH_ERR_INVALID, "line");
    /* JSON input gets the same answers as YAML: cJSON alone would cut
     * "Ray\u0000x" to "Ray" and pass bad UTF-8 (or a UTF-8 surrogate) on. */
    const char *json_nul = "{\"kind\": \"Ray\\u0000x\"}";
    expect_error(json_nul, strlen(json_nul), WH_ERR_INVALID, "NUL");
    /* cJSON keeps both copies of a repeated key (our getters read the first,
     * Kubernetes keeps the last); JSON gets YAML's duplicate-key error. */
    const char *json_dup = "{\"spec\": {\"numOfHosts\": 1,\n  \"numOfHosts\": 4}}";
    expect_error(json_dup, strlen(json_dup), WH_ERR_INVALID,
                 "line 2, column 3: duplicate key \"numOfHosts\"");
    /* An overflowing number: cJSON would make it infinity (printed null);
     * go-yaml keeps the text. */
    expect_json("{\"a\": 1e400, \"b\": [-1e999], \"c\": 1.5}",
                "{\"a\": \"1e400\", \"b\": [\"-1e999\"], \"c\": 1.5}");
    /* Number keys become their shortest exact text (not %g's 6 digits,
     * which also made 1.0000001 and 1.0000002 a "duplicate"). */
    expect_json("{1.0000001: a, 1.0000002: b, 0.5: c, 7: d}",
                "{\"1.0000001\": \"a\", \"1.0000002\": \"b\", \"0.5\": \"c\", \"7\": \"d\"}");
    const char *json_utf8 = "{\"kind\": \"Ray\xffx\"}";
    expect_error(json_utf8, strlen(json_utf8), WH_ERR_INVALID, "line 1");
    const char *json_surrogate = "{\"kind\": \"\xed\xa0\x80\"}";
    expect_error(json_surrogate, strlen(json_surrogate), WH_ERR_INVALID, "line 1");
    expect_json("{\"k\": \"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\", \"u\": \"\\u00e9\"}",
                "{\"k\": \"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\", \"u\": \"\xc3\xa9\"}");
}

static void test_alias_bomb(void **state)
{
    (void)state;
    const char *lol = "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n"
                      "b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\n"
                      "c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n"
                      "d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\n"
                      "e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\n"
                      "f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]\n"
                      "g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]\n"
                      "h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]\n"
                      "i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]\n";
    expect_error(lol, strlen(lol), WH_ERR_TOOBIG, "more than 1000000 nodes");
    /* The same through merge keys. */
    const char *mlol = "a: &a {x1: 1, x2: 2, x3: 3, x4: 4, x5: 5, x6: 6, x7: 7, x8: 8}\n"
                       "b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\n"
                       "c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\n"
                       "d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]\n"
                       "e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]\n"
                       "f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e,*e]\n"
                       "g: {<<: *a, y: *f}\n";
    expect_error(mlol, strlen(mlol), WH_ERR_TOOBIG, "alias bomb");
}

/* A mapping with many keys of its own and many merge sources: merging must
 * not re-sort the keys once per source (that took minutes; ctest's timeout
 * catches a regression). Explicit keys still win, then the first source. */
static void test_merge_many(void **state)
{
    (void)state;
    enum { KEYS = 40000, SOURCES = 40000 };
    struct wh_buf b;
    wh_buf_init(&b, 8u << 20);
    assert_int_equal(wh_buf_add(&b, "a: &a {x: 1, k7: 99}\nc: &c {x: 2, z: 3}\nb:\n"), WH_OK);
    for (int i = 0; i < KEYS; i++)
        assert_int_equal(wh_buf_addf(&b, "  k%d: %d\n", i, i), WH_OK);
    assert_int_equal(wh_buf_add(&b, "  <<: [*a"), WH_OK);
    for (int i = 1; i < SOURCES; i++)
        assert_int_equal(wh_buf_add(&b, i == SOURCES / 2 ? ", *c" : ", *a"), WH_OK);
    assert_int_equal(wh_buf_add(&b, "]\n"), WH_OK);
    char errbuf[WH_ERRBUF_LEN] = "";
    cJSON *doc = NULL;
    enum wh_err err = wh_yaml_load_one(b.ptr, b.len, &doc, errbuf);
    if (err)
        fail_msg("load failed: %s", errbuf);
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(doc, "b");
    assert_int_equal(cJSON_GetArraySize(m), KEYS + 2);
    assert_int_equal(cJSON_GetObjectItemCaseSensitive(m, "k7")->valueint, 7);
    assert_int_equal(cJSON_GetObjectItemCaseSensitive(m, "x")->valueint, 1);
    assert_int_equal(cJSON_GetObjectItemCaseSensitive(m, "z")->valueint, 3);
    cJSON_Delete(doc);
    wh_buf_free(&b);
}

static void test_limits(void **state)
{
    (void)state;
    /* Too deep. */
    size_t n = 300;
    char *deep = malloc(2 * n + 1);
    assert_non_null(deep);
    memset(deep, '[', n);
    memset(deep + n, ']', n);
    deep[2 * n] = '\0';
    expect_error(deep, 2 * n, WH_ERR_TOOBIG, "nesting deeper than 128");
    free(deep);
    /* Deep through an alias. */
    struct wh_buf b;
    wh_buf_init(&b, 1 << 20);
    assert_int_equal(wh_buf_add(&b, "a: &a "), WH_OK);
    for (int i = 0; i < 100; i++)
        assert_int_equal(wh_buf_addc(&b, '['), WH_OK);
    for (int i = 0; i < 100; i++)
        assert_int_equal(wh_buf_addc(&b, ']'), WH_OK);
    assert_int_equal(
        wh_buf_add(&b,
                   "\nb: [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[*a]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]\n"),
        WH_OK);
    expect_error(wh_buf_ptr(&b), wh_buf_len(&b), WH_ERR_TOOBIG, "nests deeper");
    wh_buf_free(&b);
    /* Too big. */
    size_t big = WH_YAML_MAX_BYTES + 1;
    char *huge = malloc(big);
    assert_non_null(huge);
    memset(huge, 'a', big);
    expect_error(huge, big, WH_ERR_TOOBIG, "limit");
    free(huge);
    /* Too many nodes without aliases. */
    wh_buf_init(&b, WH_YAML_MAX_BYTES);
    assert_int_equal(wh_buf_addc(&b, '['), WH_OK);
    for (long i = 0; i < WH_YAML_MAX_NODES + 10; i++)
        assert_int_equal(wh_buf_add(&b, "1,"), WH_OK);
    assert_int_equal(wh_buf_add(&b, "1]"), WH_OK);
    /* '[' first: cJSON takes it quickly; the node cap applies to YAML only, so
     * make it YAML with a comment. */
    char *text = wh_buf_take(&b, NULL);
    text[0] = ' ';
    char *yaml = malloc(strlen(text) + 8);
    assert_non_null(yaml);
    snprintf(yaml, strlen(text) + 8, "#c\n[%s", text + 1);
    expect_error(yaml, strlen(yaml), WH_ERR_TOOBIG, "nodes");
    free(yaml);
    free(text);
}

/* Emit then load: the JSON value must come back equal. */
static void roundtrip(const char *json)
{
    cJSON *j = wh_test_parse(json);
    struct wh_buf b;
    wh_buf_init(&b, 1 << 20);
    assert_int_equal(wh_yaml_emit(j, &b), WH_OK);
    char errbuf[WH_ERRBUF_LEN] = "";
    cJSON *back = NULL;
    if (wh_yaml_load_one(wh_buf_ptr(&b), wh_buf_len(&b), &back, errbuf))
        fail_msg("emitted YAML does not load (%s):\n%s", errbuf, wh_buf_ptr(&b));
    if (!cJSON_Compare(j, back, 1))
        fail_msg("round trip changed %s; YAML was:\n%s", json, wh_buf_ptr(&b));
    cJSON_Delete(back);
    cJSON_Delete(j);
    wh_buf_free(&b);
}

static void test_emit_roundtrip(void **state)
{
    (void)state;
    static const char *const cases[] = {
        "{\"a\":\"4\",\"b\":4,\"c\":\"yes\",\"d\":true,\"e\":null,\"f\":\"null\",\"g\":\"\"}",
        "{\"k\":\"a: b\",\"l\":\"x #y\",\"m\":\"-x\",\"n\":\"  lead\",\"o\":\"trail \",\"p\":\"$(X):2112\"}",
        "{\"s\":\"line1\\nline2\\n\",\"t\":\"a\\nb\",\"u\":\"a\\n\\n\",\"v\":\"\\nlead\",\"w\":\"x\\r\\ny\"}",
        "{\"q\":\"say \\\"hi\\\" \\\\ back\",\"z\":\"tab\\there\",\"ctl\":\"\\u0001\",\"uni\":\"h\\u00e9\\u2028x\"}",
        "[{\"a\":[1,[2,3],{}],\"b\":[]},[],\"x\",[[\"y\"]]]",
        "{\"ray.io/is-ray-node\":\"yes\",\"1\":\"one\",\"true\":\"t\",\"a b\":\"c\",\"\":\"empty key\"}",
        "{\"n\":[0,-1,1.5,1e20,-0.25,123456789012]}",
        "{\"args\":[\"ulimit -n 65536; ray start  --address=x:6379  --resources='{\\\"TPU\\\":4}' \"]}",
        "\"top-level\"",
        "\"...\"",
        "{\"...\":\"... x\",\"lit\":\"a\\n\\tb\\n  c\\n\"}",
        "{\"deep\":{\"a\":{\"b\":{\"c\":[{\"d\":\"e\\nf\"}]}}}}",
        "{\"0x1F\":\"0x1F\",\"08\":\"08\",\"1e3\":\"1e3\",\"~\":\"~\",\".5\":\".5\",\"<<\":\"<<\"}",
        /* issue 10: C1 controls (U+0080..U+009F) were written raw, which no
         * YAML reader loads; as values, keys and inside multi-line text */
        "{\"c1\":\"a\\u0080b\\u009f\\u0085c\",\"k\\u0090\":\"x\",\"m\":\"l1\\u0081\\nl2\\n\"}",
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        roundtrip(cases[i]);
    /* Keys past YAML's 1024-character cap on implicit keys, with every kind
     * of value (they once came out as YAML that does not load). */
    char big[2048], json[16384];
    memset(big, 'k', 1100);
    big[1100] = '\0';
    snprintf(json, sizeof(json),
             "{\"a\":{\"%s1\":{\"c\":1,\"d\":[1,{\"e\":2}]},\"%s2\":[1,[2],{\"g\":4}],"
             "\"%s3\":{},\"%s4\":\"x\\ny\\n\",\"%s5\":null},\"%s6\":\"v\"}",
             big, big, big, big, big, big);
    roundtrip(json);
}

static void test_emit_shape(void **state)
{
    (void)state;
    cJSON *j = wh_test_parse("{\"metadata\":{\"labels\":{\"a\":\"yes\"}},\"spec\":{\"containers\":"
                             "[{\"name\":\"w\",\"env\":[{\"name\":\"X\",\"value\":\"4\"}]}]}}");
    struct wh_buf b;
    wh_buf_init(&b, 4096);
    assert_int_equal(wh_yaml_emit(j, &b), WH_OK);
    assert_string_equal(wh_buf_ptr(&b), "metadata:\n"
                                        "  labels:\n"
                                        "    a: \"yes\"\n"
                                        "spec:\n"
                                        "  containers:\n"
                                        "  - name: w\n"
                                        "    env:\n"
                                        "    - name: X\n"
                                        "      value: \"4\"\n");
    wh_buf_free(&b);
    cJSON_Delete(j);
    /* Numbers in their shortest exact form. */
    j = wh_test_parse("[0.1, 0.5, 1e-7, 123456789012345678, 3.141592653589793, 1e300]");
    wh_buf_init(&b, 4096);
    assert_int_equal(wh_yaml_emit(j, &b), WH_OK);
    assert_string_equal(wh_buf_ptr(&b), "- 0.1\n- 0.5\n- 1e-07\n- 1.2345678901234568e+17\n"
                                        "- 3.141592653589793\n- 1e+300\n");
    wh_buf_free(&b);
    cJSON_Delete(j);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scalar_table),   cmocka_unit_test(test_multi_document),
        cmocka_unit_test(test_errors),         cmocka_unit_test(test_alias_bomb),
        cmocka_unit_test(test_merge_many),     cmocka_unit_test(test_limits),
        cmocka_unit_test(test_emit_roundtrip), cmocka_unit_test(test_error_position),
        cmocka_unit_test(test_emit_shape),     cmocka_unit_test(test_resolve_plain),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
