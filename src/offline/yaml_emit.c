/* yaml_emit.c: cJSON to block-style YAML that loads back (through yaml.c)
 * as the same JSON value. */
#include "wh/yaml_emit.h"

#include <math.h>   /* floor, fabs */
#include <string.h> /* strchr, strcmp, strlen */

#include "wh/yaml_scalar.h" /* wh_yaml_resolve_plain, wh_yaml_shortest_double */

/* Byte length of a YAML 1.1 line break that is not '\n' (NEL, LS, PS), or 0. */
static size_t unicode_break(const unsigned char *p)
{
    if (p[0] == 0xC2 && p[1] == 0x85)
        return 2;
    if (p[0] == 0xE2 && p[1] == 0x80 && (p[2] == 0xA8 || p[2] == 0xA9))
        return 3;
    return 0;
}

/* A C1 control character (U+0080..U+009F, UTF-8 C2 80..C2 9F): outside
 * YAML's printable set, so no reader (libyaml included) loads it raw. */
static bool c1_control(const unsigned char *p)
{
    return p[0] == 0xC2 && p[1] >= 0x80 && p[1] <= 0x9F;
}

/* A plain scalar that loads back as this very string, in block context. */
static bool plain_safe(const char *s)
{
    size_t n = strlen(s);
    double num;
    bool b;
    if (n == 0 || !strcmp(s, "<<") || wh_yaml_resolve_plain(s, n, &num, &b) != WH_YAML_STR)
        return false;
    if (strchr("-?:,[]{}#&*!|>'\"%@`~ ", s[0]) || s[n - 1] == ' ' || s[n - 1] == ':' ||
        !strncmp(s, "...", 3))
        return false;
    /* Portability with YAML 1.1 readers (PyYAML): sexagesimal numbers like
     * 1:20 and dates like 2001-12-14 are not strings there; quote them. */
    if (strspn(s, "0123456789:._+-") == n)
        return false;
    if (n >= 5 && strspn(s, "0123456789") == 4 && s[4] == '-')
        return false;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20 || c >= 0x7f)
            return false; /* control bytes; non-ASCII goes quoted, to be safe */
        if (c == ':' && s[i + 1] == ' ')
            return false;
        if (c == '#' && i > 0 && s[i - 1] == ' ')
            return false;
    }
    return true;
}

static enum wh_err emit_quoted(struct wh_buf *b, const char *s)
{
    WH_TRY(wh_buf_addc(b, '"'));
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        size_t ub = unicode_break(p);
        if (ub) {
            WH_TRY(wh_buf_addf(b, "\\u%04x", p[0] == 0xC2 ? 0x85 : p[2] == 0xA8 ? 0x2028 : 0x2029));
            p += ub - 1;
        } else if (c1_control(p)) {
            WH_TRY(wh_buf_addf(b, "\\x%02x", p[1])); /* \xNN is U+00NN */
            p++;
        } else if (*p == '"' || *p == '\\') {
            WH_TRY(wh_buf_addc(b, '\\'));
            WH_TRY(wh_buf_addc(b, (char)*p));
        } else if (*p == '\n') {
            WH_TRY(wh_buf_add(b, "\\n"));
        } else if (*p == '\t') {
            WH_TRY(wh_buf_add(b, "\\t"));
        } else if (*p == '\r') {
            WH_TRY(wh_buf_add(b, "\\r"));
        } else if (*p < 0x20 || *p == 0x7f) {
            WH_TRY(wh_buf_addf(b, "\\x%02x", *p));
        } else {
            WH_TRY(wh_buf_addc(b, (char)*p));
        }
    }
    return wh_buf_addc(b, '"');
}

/* A multi-line string that a literal block (|) reproduces exactly. */
static bool literal_ok(const char *s)
{
    if (!strchr(s, '\n') || s[0] == ' ' || s[0] == '\t' || s[0] == '\n')
        return false;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if ((*p < 0x20 && *p != '\n' && *p != '\t') || *p == 0x7f || unicode_break(p) ||
            c1_control(p))
            return false;
    }
    return true;
}

static enum wh_err emit_indent(struct wh_buf *b, int n)
{
    for (int i = 0; i < n; i++)
        WH_TRY(wh_buf_addc(b, ' '));
    return WH_OK;
}

static enum wh_err emit_literal(struct wh_buf *b, const char *s, int indent)
{
    size_t n = strlen(s), trailing = 0;
    while (trailing < n && s[n - 1 - trailing] == '\n')
        trailing++;
    WH_TRY(wh_buf_add(b, trailing == 0 ? "|-\n" : trailing == 1 ? "|\n" : "|+\n"));
    const char *p = s, *end = s + n - trailing;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
        if (len > 0) {
            WH_TRY(emit_indent(b, indent));
            WH_TRY(wh_buf_addn(b, p, len));
        }
        WH_TRY(wh_buf_addc(b, '\n'));
        p += len + 1;
    }
    for (size_t i = 1; i < trailing; i++)
        WH_TRY(wh_buf_addc(b, '\n')); /* kept by the |+ chomping indicator */
    return WH_OK;
}

static enum wh_err emit_string(struct wh_buf *b, const char *s, int indent, bool is_key)
{
    if (plain_safe(s))
        return wh_buf_add(b, s);
    if (!is_key && literal_ok(s))
        return emit_literal(b, s, indent);
    return emit_quoted(b, s);
}

/* YAML caps an implicit key at 1024 characters; a longer one is written as
 * an explicit key ("? key"), which has no limit. Quoting at most quadruples
 * a key, so only long keys need the trial rendering. */
#define IMPLICIT_KEY_MAX 1000

static enum wh_err emit_key(struct wh_buf *b, const char *key, int indent, bool *explicit_key)
{
    *explicit_key = false;
    if (strlen(key) * 4 + 2 <= IMPLICIT_KEY_MAX)
        return emit_string(b, key, indent, true);
    struct wh_buf k;
    wh_buf_init(&k, b->max);
    enum wh_err err = emit_string(&k, key, indent, true);
    if (!err && wh_buf_len(&k) > IMPLICIT_KEY_MAX) {
        *explicit_key = true;
        err = wh_buf_add(b, "? ");
    }
    if (!err)
        err = wh_buf_addn(b, wh_buf_ptr(&k), wh_buf_len(&k));
    wh_buf_free(&k);
    return err;
}

static bool is_block(const cJSON *j)
{
    return (cJSON_IsObject(j) || cJSON_IsArray(j)) && j->child;
}

static enum wh_err emit_double(struct wh_buf *b, double d)
{
    char text[32];
    wh_yaml_shortest_double(d, text);
    return wh_buf_add(b, text);
}

/* A scalar or an empty collection, then the end of the line. */
static enum wh_err emit_inline(struct wh_buf *b, const cJSON *j, int indent)
{
    if (cJSON_IsString(j)) {
        WH_TRY(emit_string(b, j->valuestring, indent, false));
        if (literal_ok(j->valuestring) && !plain_safe(j->valuestring))
            return WH_OK; /* the block ends with its own newline */
    } else if (cJSON_IsNumber(j)) {
        double d = j->valuedouble;
        if (d == floor(d) && fabs(d) < 1e15)
            WH_TRY(wh_buf_addf(b, "%.0f", d == 0 ? 0.0 : d));
        else
            WH_TRY(emit_double(b, d));
    } else if (cJSON_IsBool(j)) {
        WH_TRY(wh_buf_add(b, cJSON_IsTrue(j) ? "true" : "false"));
    } else if (cJSON_IsObject(j)) {
        WH_TRY(wh_buf_add(b, "{}"));
    } else if (cJSON_IsArray(j)) {
        WH_TRY(wh_buf_add(b, "[]"));
    } else {
        WH_TRY(wh_buf_add(b, "null"));
    }
    return wh_buf_addc(b, '\n');
}

/* A non-empty collection at indent; when first_inline, the first line's
 * indentation is already written ("- " of the enclosing sequence). */
static enum wh_err emit_block(struct wh_buf *b, const cJSON *j, int indent, bool first_inline)
{
    for (const cJSON *c = j->child; c; c = c->next) {
        if (c != j->child || !first_inline)
            WH_TRY(emit_indent(b, indent));
        if (cJSON_IsArray(j)) {
            WH_TRY(wh_buf_add(b, "- "));
            if (is_block(c))
                WH_TRY(emit_block(b, c, indent + 2, true));
            else
                WH_TRY(emit_inline(b, c, indent + 2));
            continue;
        }
        bool explicit_key = false;
        WH_TRY(emit_key(b, c->string, indent, &explicit_key));
        if (explicit_key) {
            /* "? key" NEWLINE ": value", the value in compact form. */
            WH_TRY(wh_buf_addc(b, '\n'));
            WH_TRY(emit_indent(b, indent));
            WH_TRY(wh_buf_add(b, ": "));
            if (is_block(c))
                WH_TRY(emit_block(b, c, indent + 2, true));
            else
                WH_TRY(emit_inline(b, c, indent + 2));
        } else if (cJSON_IsObject(c) && c->child) {
            WH_TRY(wh_buf_add(b, ":\n"));
            WH_TRY(emit_block(b, c, indent + 2, false));
        } else if (cJSON_IsArray(c) && c->child) {
            WH_TRY(wh_buf_add(b, ":\n"));
            WH_TRY(emit_block(b, c, indent, false));
        } else {
            WH_TRY(wh_buf_add(b, ": "));
            WH_TRY(emit_inline(b, c, indent + 2));
        }
    }
    return WH_OK;
}

enum wh_err wh_yaml_emit(const cJSON *item, struct wh_buf *out)
{
    if (is_block(item))
        return emit_block(out, item, 0, false);
    return emit_inline(out, item, 2);
}
