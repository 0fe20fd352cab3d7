/* envverdict.h: what the slice says of a value a platform or user preset
 * in a TPU container, in one table.
 *
 * The webhook never replaces a preset torchrun (PET_*) value (its verb is
 * "add if no entry", envtab.h); a preset that contradicts the slice hangs
 * or crashes torchrun at start-up on billed hardware (Kubeflow Trainer v2's
 * `numProcPerNode: auto` without a GPU writes the host's CPU count). Every
 * rule that judges such a value is one row of wh_env_rules[]: the variable,
 * when it contradicts the slice, the verdict (denied or warned where the
 * object is written) and the value that works. wh_env_judge applies the
 * rows to one container: /validate-workload (workload_validate.c) denies
 * or warns by the row's verdict at the Job, JobSet or LWS, the pod path
 * (workload_env.c) warns with an Event (`render --env` lists the pod's
 * warnings, `check` the object's), and the section
 * "Preset values the slice contradicts" of docs/workloads.md is printed
 * from the table (ctest repo.envtab_doc). The other variables of envtab.h
 * that the slice judges (identity, MEGASCALE, TORCH_TPU_TOPOLOGY) keep
 * their rules where they were written and are rows here with judged_by
 * naming them, so the section lists every variable once.
 * Static data and stack results: nothing to free. Pure. */
#ifndef WH_ENVVERDICT_H
#define WH_ENVVERDICT_H

#include <stddef.h> /* size_t */

#include <cjson/cJSON.h>

#include "wh/envtab.h" /* enum wh_env_var */

/* Where a workload object is written (Job, JobSet, LeaderWorkerSet) a
 * denied value refuses it; a warned one is a warning there. */
enum wh_env_verdict { WH_VERDICT_KEPT, WH_VERDICT_WARN, WH_VERDICT_DENY, WH_VERDICT__COUNT };

enum wh_env_rule_id {
    WH_ENVRULE_NPROC_NOT_COUNT,  /* "auto", "cpu", "gpu", "xpu", 0 or text: not the devices */
    WH_ENVRULE_NPROC_ABOVE,      /* more processes than the container's TPU devices */
    WH_ENVRULE_NPROC_BELOW,      /* fewer: devices left idle */
    WH_ENVRULE_NNODES_WORLD,     /* not the torchrun nodes of the world */
    WH_ENVRULE_NODE_RANK_SHARED, /* a literal rank shared by the pods of a template */
    WH_ENVRULE_NODE_RANK_OTHER,  /* a literal rank other than the container's own */
    WH_ENVRULE_MASTER_LOCAL,     /* localhost as the master of a world of several pods */
    WH_ENVRULE_MASTER_PORT,      /* not judged */
    /* Judged where judged_by says, listed for the docs. */
    WH_ENVRULE_MS_NUM_SLICES,
    WH_ENVRULE_MS_SLICE_ID,
    WH_ENVRULE_MS_PORT,
    WH_ENVRULE_WORKER_HOSTNAMES,
    WH_ENVRULE_TORCH_TOPOLOGY,
    WH_ENVRULE_WORKER_ID,
    WH_ENVRULE__COUNT
};

struct wh_env_rule {
    enum wh_env_var var;
    const char *key; /* stable name of the rule ("pet-nproc-above-devices"): the ratchet's */
    enum wh_env_verdict verdict;
    const char *when;      /* docs: when the preset contradicts the slice */
    const char *fix;       /* docs: the value that works */
    const char *judged_by; /* NULL: wh_env_judge; else the docs' section that judges it */
    const char *trainjob;  /* the TrainJob field Kubeflow Trainer writes the variable from */
};

extern const struct wh_env_rule wh_env_rules[WH_ENVRULE__COUNT];

/* Kubeflow Trainer v2's TrainJob (the owner of the JobSet it makes). */
#define WH_TRAINJOB_KIND "TrainJob"
#define WH_TRAINJOB_GROUP "trainer.kubeflow.org"

/* The name of obj's controller when it is a TrainJob (ownerReference kind
 * TrainJob, apiVersion trainer.kubeflow.org/...), else NULL (obj's text). */
const char *wh_trainjob_owner(const cJSON *obj);

/* "denied", "warned", "kept". */
const char *wh_env_verdict_name(enum wh_env_verdict v);

/* What the slice says of one TPU container's torchrun world. */
struct wh_torch_world {
    long devices; /* TPU devices of the container: its chips x devices per chip (2 on TPU7x);
                   * 0 when the generation is not known */
    long nnodes;  /* torchrun nodes of the world: one per TPU container of each pod of the
                   * slices MEGASCALE joins; 0 when the world is the user's own */
    long pods;    /* pods of that world (at least the slice's hosts) */
    long rank;    /* the container's node rank; -1 at a template of several pods (one value for
                   * every pod) */
    unsigned overridden; /* 1u << var for each variable the container's command line sets
                          * (wh_torchrun_overridden): not judged */
};

/* The variables whose torchrun flag (`--nproc-per-node`, `--nnodes`,
 * `--node-rank`, `--master-addr`, `--master-port`, either spelling, `--f=v`
 * or `--f v`, or a prefix of it as argparse takes: `--nnode`) a word of
 * container's command or args carries, as 1u << var:
 * torchrun reads PET_<OPT> only as the default of --<opt>, so the flag wins.
 * A word inside a shell string (`bash -c "torchrun --nnodes=4 ..."`) counts
 * too: the check errs toward not denying a workload that works. */
unsigned wh_torchrun_overridden(const cJSON *container);

#define WH_ENV_FINDINGS_MAX 4
#define WH_ENV_FINDING_TEXT 400

struct wh_env_finding {
    enum wh_env_rule_id rule;
    int index;                      /* env[index] of the entry judged */
    char want[32];                  /* the value that works ("4"; "" when it is to be removed) */
    char value[48];                 /* the preset value, cut */
    char text[WH_ENV_FINDING_TEXT]; /* "sets PET_NPROC_PER_NODE \"24\" (env[0]) but ...; set \"4\"" */
    char brief[224]; /* "PET_NPROC_PER_NODE \"24\" is above its 4 TPU devices; set \"4\"" (warnings) */
};

/* Judge the literal PET_* values of env (a container's env array or NULL)
 * against w, but for the variables in w->overridden: the findings, at most WH_ENV_FINDINGS_MAX, in the order of
 * wh_env_rules, into out; their count. A valueFrom is not judged (its value
 * is not known before the pod runs). */
int wh_env_judge(const cJSON *env, const struct wh_torch_world *w,
                 struct wh_env_finding out[WH_ENV_FINDINGS_MAX]);

/* The warning of finding f in container `container`, as both paths give it
 * (the pod's and the workload object's end alike): into out (n bytes,
 * WH_WARNING_MAX + 1 or more), cut on a character boundary. */
void wh_env_warning_text(char *out, size_t n, const char *container, const struct wh_env_finding *f);

#endif
