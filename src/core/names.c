/* names.c: API-server name rules for what the webhook writes (see names.h).
 *
 * The rules are those of k8s.io/apimachinery validation: IsDNS1123Label,
 * IsValidLabelValue, and the env var name rule every Kubernetes version
 * accepts (newer ones relax it). */
#include "wh/names.h"

#include <stdio.h>  /* snprintf */
#include <string.h> /* strlen, strncmp */

#include "wh/json.h" /* wh_json_* */
#include "wh/text.h" /* wh_text */

#define RULE_DNS                                                                 \
    "a DNS-1123 label (lower-case letters, digits and '-', starting and ending " \
    "with a letter or digit, at most 63 characters)"
#define RULE_LABEL                                                           \
    "a label value (letters, digits, '-', '_' and '.', starting and ending " \
    "with a letter or digit, at most 63 characters)"
#define RULE_ENV                                                            \
    "an environment variable name (letters, digits, '_', '-' and '.', not " \
    "starting with a digit)"
#define SHOW 200 /* characters of a hostile name quoted in a message */

static bool lower_alnum(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

static bool alnum(char c)
{
    return lower_alnum(c) || (c >= 'A' && c <= 'Z');
}

const char *wh_names_dns_label(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > WH_NAME_MAX || !lower_alnum(s[0]) || !lower_alnum(s[n - 1]))
        return RULE_DNS;
    for (size_t i = 1; i + 1 < n; i++)
        if (!lower_alnum(s[i]) && s[i] != '-')
            return RULE_DNS;
    return NULL;
}

const char *wh_names_label_value(const char *s)
{
    size_t n = strlen(s);
    if (n == 0)
        return NULL;
    if (n > WH_NAME_MAX || !alnum(s[0]) || !alnum(s[n - 1]))
        return RULE_LABEL;
    for (size_t i = 1; i + 1 < n; i++)
        if (!alnum(s[i]) && s[i] != '-' && s[i] != '_' && s[i] != '.')
            return RULE_LABEL;
    return NULL;
}

const char *wh_names_env_name(const char *s)
{
    if (!*s || (*s >= '0' && *s <= '9'))
        return RULE_ENV;
    for (; *s; s++)
        if (!alnum(*s) && *s != '_' && *s != '-' && *s != '.')
            return RULE_ENV;
    return NULL;
}

/* A DNS-1123 label of at most max characters made from name: lower case,
 * every other byte a '-', runs of '-' joined, no '-' at the ends, and a
 * letter first when letter_first (DNS-1035, for RayCluster names). */
static void suggest(const char *name, size_t max, bool letter_first, char *out, size_t out_len)
{
    size_t n = 0, cap = max < out_len - 1 ? max : out_len - 1;
    for (const char *p = name; *p && n < cap; p++) {
        char c = *p >= 'A' && *p <= 'Z' ? (char)(*p - 'A' + 'a') : *p;
        if (!lower_alnum(c))
            c = '-';
        if (c == '-' && (n == 0 || out[n - 1] == '-'))
            continue;
        if (n == 0 && letter_first && !(c >= 'a' && c <= 'z'))
            out[n++] = 'r';
        if (n < cap)
            out[n++] = c;
    }
    while (n && out[n - 1] == '-')
        n--;
    out[n] = '\0';
    if (!n)
        snprintf(out, out_len, "%s", letter_first ? "raycluster" : "tpu-group");
}

/* "is not <rule>" or "would have N characters, over the 63 of <rule>"; n is
 * the length of the whole value, of which value holds the start. */
static void broken(char *msg, size_t msg_len, const char *what, const char *value, size_t n,
                   const char *rule, const char *fix)
{
    if (n > WH_NAME_MAX)
        snprintf(msg, msg_len, "%s \"%.*s%s\" would have %zu characters, over the %d of %s; %s",
                 what, SHOW, value, n > SHOW ? "..." : "", n, WH_NAME_MAX, rule, fix);
    else
        snprintf(msg, msg_len, "%s \"%s\" is not %s; %s", what, value, rule, fix);
}

/* The first max bytes of s (printf's "%.*s"). */
static void add_start(struct wh_text *t, const char *s, size_t max)
{
    size_t n = 0;
    while (n < max && s[n])
        n++;
    wh_text_addn(t, s, n);
}

/* value = "<group><suffix>" (the group cut to its first SHOW * 2 bytes) is
 * checked by rule; when it fails, msg says so with a valid group name that
 * leaves room for the suffix. */
static bool group_value_ok(const char *group, const char *suffix, const char *what,
                           const char *(*rule)(const char *), char *msg, size_t msg_len)
{
    char value[WH_NAME_MAX * 8], fix[WH_NAME_MAX * 6], good[WH_NAME_MAX + 1];
    struct wh_text t;
    wh_text_init(&t, value, sizeof(value));
    add_start(&t, group, SHOW * 2);
    wh_text_add(&t, suffix);
    const char *why = rule(value);
    if (!why)
        return true;
    size_t room = WH_NAME_MAX - strlen(suffix);
    suggest(group, room, false, good, sizeof(good));
    snprintf(fix, sizeof(fix),
             "rename worker group %.*s (groupName) to a DNS-1123 label of at "
             "most %zu characters such as %s",
             SHOW, group, room, good);
    broken(msg, msg_len, what, value, strlen(group) + strlen(suffix), why, fix);
    return false;
}

bool wh_names_group_ok(const struct wh_group_names *n, char *msg, size_t msg_len)
{
    char suffix[48];
    struct wh_text t;
    wh_text_init(&t, suffix, sizeof(suffix));
    wh_text_add(&t, "-");
    wh_text_addl(&t, n->replica);
    if (n->multi_host) {
        wh_text_add(&t, "-");
        wh_text_addl(&t, n->host);
        if (!group_value_ok(n->group, suffix, "the pod hostname", wh_names_dns_label, msg, msg_len))
            return false;
        char value[WH_NAME_MAX * 8], fix[WH_NAME_MAX * 6], good[WH_NAME_MAX + 1];
        wh_text_init(&t, value, sizeof(value));
        add_start(&t, n->cluster, SHOW * 2);
        wh_text_add(&t, "-headless");
        const char *why = wh_names_dns_label(value);
        if (why) {
            suggest(n->cluster, 53, true, good, sizeof(good));
            snprintf(fix, sizeof(fix),
                     "rename RayCluster %.*s to a DNS-1035 label of at most 53 "
                     "characters such as %s",
                     SHOW, n->cluster, good);
            broken(msg, msg_len, "the pod subdomain (the headless Service)", value,
                   strlen(n->cluster) + sizeof("-headless") - 1, why, fix);
            return false;
        }
    }
    wh_text_init(&t, suffix, sizeof(suffix));
    wh_text_add(&t, "-");
    wh_text_addl(&t, n->replica);
    return !n->label || group_value_ok(n->group, suffix, "the label replicaIndex",
                                       wh_names_label_value, msg, msg_len);
}

static bool refuse(char *msg, size_t msg_len, const char *what, const char *s, const char *path,
                   const char *rule)
{
    snprintf(msg, msg_len, "the patch would set %s \"%.*s\" (%s), which is not %s", what, SHOW,
             s ? s : "(not a string)", path, rule);
    return false;
}

bool wh_names_string_op_ok(const char *path, const char *s, char *msg, size_t msg_len)
{
    static const char labels[] = "/metadata/labels/";
    const char *rule = NULL, *what = NULL;
    if (!strcmp(path, "/spec/hostname") || !strcmp(path, "/spec/subdomain")) {
        what = path + 6;
        rule = s ? wh_names_dns_label(s) : RULE_DNS;
    } else if (!strncmp(path, labels, sizeof(labels) - 1)) {
        what = "label value";
        rule = s ? wh_names_label_value(s) : RULE_LABEL;
    }
    return !rule || refuse(msg, msg_len, what, s, path, rule);
}

bool wh_names_env_op_ok(const char *path, const char *name, char *msg, size_t msg_len)
{
    return !wh_names_env_name(name) || refuse(msg, msg_len, "env var name", name, path, RULE_ENV);
}

/* /spec/containers/<i>/env, .../env/<j> or .../env/- */
static bool env_path(const char *path)
{
    const char *e = strstr(path, "/env");
    return e && (e[4] == '\0' || e[4] == '/');
}

bool wh_names_json_op_ok(const char *path, const cJSON *value, char *msg, size_t msg_len)
{
    if (!cJSON_IsArray(value) && !cJSON_IsObject(value))
        return wh_names_string_op_ok(path, cJSON_IsString(value) ? value->valuestring : NULL, msg,
                                     msg_len);
    if (!wh_names_string_op_ok(path, NULL, msg, msg_len))
        return false;
    if (!env_path(path))
        return true;
    /* The env entries an operation writes: one object, or an array of them. */
    const cJSON *one = cJSON_IsArray(value) ? value->child : value;
    for (; one; one = cJSON_IsArray(value) ? one->next : NULL)
        if (!wh_names_env_op_ok(path, wh_json_str0(one, "name"), msg, msg_len))
            return false;
    return true;
}
