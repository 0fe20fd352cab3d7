/* envtab_doc.c: prints the section "Injected variables" of
 * docs/workloads.md from the table of injected variables (wh/envtab.h), as
 * Markdown; with the argument "verdicts", the section "Preset values the
 * slice contradicts" from the table of verdicts (wh/envverdict.h).
 * test_envtab_doc.py compares them with the doc (and --write puts them
 * there), so the doc cannot drift from what the writers and judges do. */
#include <stdio.h>
#include <string.h>

#include "wh/envtab.h"
#include "wh/envverdict.h"

/* Every variable the workload path writes, in envtab's order, with the
 * rules that judge a preset value of it (a variable no rule judges is
 * kept as it is). */
static int verdicts(void)
{
    printf("| Variable | Contradicts the slice when it is | Verdict | The value that works | "
           "Rule |\n|---|---|---|---|---|\n");
    for (int i = 0; i < WH_ENV__COUNT; i++) {
        if (wh_envtab[i].verb[WH_PATH_WORKLOAD] == WH_VERB_NONE)
            continue;
        int rows = 0;
        for (int k = 0; k < WH_ENVRULE__COUNT; k++) {
            const struct wh_env_rule *r = &wh_env_rules[k];
            if ((int)r->var != i)
                continue;
            rows++;
            printf("| `%s` | %s | %s | %s%s%s%s | `%s`%s%s%s |\n", wh_envtab[i].name, r->when,
                   wh_env_verdict_name(r->verdict), r->fix,
                   r->trainjob ? "; a JobSet of a TrainJob: its `" : "",
                   r->trainjob ? r->trainjob : "", r->trainjob ? "`" : "", r->key,
                   r->judged_by ? " (\"" : "", r->judged_by ? r->judged_by : "",
                   r->judged_by ? "\")" : "");
        }
        if (!rows)
            printf("| `%s` | never: the slice does not tell it | kept | - | - |\n",
                   wh_envtab[i].name);
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "verdicts"))
        return verdicts();
    printf("| Variable | What it means | KubeRay pods (`/mutate`) | Other workloads "
           "(`/mutate-workload`) |\n|---|---|---|---|\n");
    for (int i = 0; i < WH_ENV__COUNT; i++) {
        const struct wh_env_def *r = &wh_envtab[i];
        printf("| `%s` | %s%s | %s | %s |\n", r->name, r->meaning,
               r->by_lws ? "; LeaderWorkerSet's pod webhook sets it too" : "",
               wh_env_verb_name(r->verb[WH_PATH_KUBERAY]),
               wh_env_verb_name(r->verb[WH_PATH_WORKLOAD]));
    }
    printf("\nThe verbs, by what the container already holds of the variable (the first "
           "entry\nwith a non-empty value or a `valueFrom` decides):\n\n");
    for (int v = 0; v < WH_VERB__COUNT; v++)
        printf("- **%s**: %s.\n", wh_env_verb_name((enum wh_env_verb)v),
               wh_env_verb_doc((enum wh_env_verb)v));
    return 0;
}
