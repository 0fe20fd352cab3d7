/* yaml_scalar.c: plain-scalar resolution with go-yaml v2's rules (what
 * sigs.k8s.io/yaml, hence kubectl, makes of an unquoted value). */
#include "wh/yaml_scalar.h"

#include <limits.h> /* ULLONG_MAX, LLONG_MAX */
#include <math.h>   /* isfinite */
#include <stdio.h>  /* snprintf */
#include <stdlib.h> /* strtod */
#include <string.h> /* strcmp */

#include "wh/hex.h" /* wh_hex_digit */

static const char *const true_words[] = {"y",    "Y",    "yes", "Yes", "YES", "true",
                                         "True", "TRUE", "on",  "On",  "ON"};
static const char *const false_words[] = {"n",     "N",     "no",  "No",  "NO", "false",
                                          "False", "FALSE", "off", "Off", "OFF"};
static const char *const null_words[] = {"", "~", "null", "Null", "NULL"};
static const char *const nonfinite_words[] = {".nan",  ".NaN",  ".NAN",  ".inf",  ".Inf",  ".INF",
                                              "+.inf", "+.Inf", "+.INF", "-.inf", "-.Inf", "-.INF"};

static bool in_list(const char *s, const char *const *list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(s, list[i]))
            return true;
    return false;
}
#define IN_LIST(s, l) in_list((s), (l), sizeof(l) / sizeof((l)[0]))

/* Go's strconv.ParseInt(s, 0, 64), falling back to ParseUint for unsigned
 * values past int64 (as go-yaml does). */
static bool go_parse_int(const char *s, double *out)
{
    const char *p = s;
    bool neg = false, sign = false;
    if (*p == '+' || *p == '-') {
        neg = *p == '-';
        sign = true;
        p++;
    }
    int base = 10;
    if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X'))
        base = 16, p += 2;
    else if (p[0] == '0' && (p[1] == 'o' || p[1] == 'O'))
        base = 8, p += 2;
    else if (p[0] == '0' && (p[1] == 'b' || p[1] == 'B'))
        base = 2, p += 2;
    else if (p[0] == '0' && p[1] != '\0')
        base = 8, p += 1;
    if (*p == '\0')
        return false;
    unsigned long long v = 0;
    for (; *p; p++) {
        int d = wh_hex_digit(*p);
        if (d < 0 || d >= base)
            return false;
        if (v > (ULLONG_MAX - (unsigned)d) / (unsigned)base)
            return false;
        v = v * (unsigned)base + (unsigned)d;
    }
    if (neg) {
        if (v > (unsigned long long)LLONG_MAX + 1ULL)
            return false;
        *out = -(double)v;
    } else {
        if (sign && v > (unsigned long long)LLONG_MAX)
            return false; /* ParseInt overflows and ParseUint refuses a sign */
        *out = (double)v;
    }
    return true;
}

/* ^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$ */
static bool yaml_float_syntax(const char *p)
{
    if (*p == '+' || *p == '-')
        p++;
    size_t ip = 0, fp = 0;
    while (*p >= '0' && *p <= '9')
        p++, ip++;
    if (*p == '.') {
        p++;
        while (*p >= '0' && *p <= '9')
            p++, fp++;
        if (ip == 0 && fp == 0)
            return false;
    } else if (ip == 0) {
        return false;
    }
    if (*p == 'e' || *p == 'E') {
        p++;
        if (*p == '+' || *p == '-')
            p++;
        size_t ep = 0;
        while (*p >= '0' && *p <= '9')
            p++, ep++;
        if (ep == 0)
            return false;
    }
    return *p == '\0';
}

enum wh_yaml_sval wh_yaml_resolve_plain(const char *s, size_t n, double *num, bool *b)
{
    if (IN_LIST(s, null_words))
        return WH_YAML_NULL;
    if (IN_LIST(s, true_words)) {
        *b = true;
        return WH_YAML_BOOL;
    }
    if (IN_LIST(s, false_words)) {
        *b = false;
        return WH_YAML_BOOL;
    }
    if (IN_LIST(s, nonfinite_words))
        return WH_YAML_NONFINITE;
    char c = s[0];
    if (c == '.') {
        if (yaml_float_syntax(s)) {
            *num = strtod(s, NULL);
            return isfinite(*num) ? WH_YAML_NUM : WH_YAML_STR;
        }
        return WH_YAML_STR;
    }
    if (!((c >= '0' && c <= '9') || c == '+' || c == '-') || n > 400)
        return WH_YAML_STR;
    char plain[401];
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (s[i] != '_')
            plain[k++] = s[i];
    plain[k] = '\0';
    if (go_parse_int(plain, num))
        return WH_YAML_NUM;
    if (yaml_float_syntax(plain)) {
        *num = strtod(plain, NULL);
        if (isfinite(*num))
            return WH_YAML_NUM; /* an overflowing float stays a string, as in Go */
    }
    return WH_YAML_STR;
}

void wh_yaml_shortest_double(double d, char out[32])
{
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(out, 32, "%.*g", prec, d);
        if (strtod(out, NULL) == d)
            return;
    }
}
