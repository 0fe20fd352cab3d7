/* names.h: the rules the API server applies to the names and label values
 * the webhook writes into a pod (docs/kuberay-pods.md §5), in one place for
 * mutation, RayCluster validation and `check`. Pure: no allocation, no I/O.
 *
 * A value that breaks a rule is never mapped to a valid one: the caller
 * denies with the message written here (see the docs for why). */
#ifndef WH_NAMES_H
#define WH_NAMES_H

#include <stdbool.h> /* bool */
#include <stddef.h>  /* size_t */

#include <cjson/cJSON.h>

#define WH_NAME_MAX 63 /* DNS-1123 label and label value */

/* NULL when s obeys the rule; else a static text describing the rule. */
const char *wh_names_dns_label(const char *s);
const char *wh_names_label_value(const char *s);
const char *wh_names_env_name(const char *s);

/* What the pods of one TPU worker group are given, for one replica and
 * host index. */
struct wh_group_names {
    const char *cluster, *group;
    long replica, host;
    bool label;      /* label replicaIndex: <group>-<replica> */
    bool multi_host; /* hostname <group>-<replica>-<host>, subdomain <cluster>-headless */
};

/* true when every name of n is valid. Otherwise writes into msg (msg_len
 * bytes, always terminated) which value breaks which rule and the fix,
 * naming the group (or the RayCluster for the subdomain), for example:
 * the pod hostname "TPUGroup-0-0" is not a DNS-1123 label (...); rename
 * worker group TPUGroup to a DNS-1123 label such as tpugroup */
bool wh_names_group_ok(const struct wh_group_names *n, char *msg, size_t msg_len);

/* The guard under wh_names_group_ok, for each operation the patch writers
 * add (patch.h): it sees whatever a code path emits. true when the value an
 * operation writes at path sets only names the API server accepts
 * (spec.hostname, spec.subdomain, label values, env var names); otherwise
 * the offender, the path and the rule go into msg (msg_len bytes, always
 * terminated), e.g. the patch would set hostname "G-0-0" (/spec/hostname),
 * which is not a DNS-1123 label (...). */
/* A string value s (NULL: a value that is not a string). */
bool wh_names_string_op_ok(const char *path, const char *s, char *msg, size_t msg_len);
/* An env entry named name (path is an env path). */
bool wh_names_env_op_ok(const char *path, const char *name, char *msg, size_t msg_len);
/* Any JSON value: an env entry or a list of them at an env path. */
bool wh_names_json_op_ok(const char *path, const cJSON *value, char *msg, size_t msg_len);

#endif
