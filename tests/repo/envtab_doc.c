/* envtab_doc.c: prints the section "Injected variables" of
 * docs/workloads.md from the table of injected variables (wh/envtab.h), as
 * Markdown. test_envtab_doc.py compares it with the doc (and --write puts
 * it there), so the doc cannot drift from what the writers do. */
#include <stdio.h>

#include "wh/envtab.h"

int main(void)
{
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
