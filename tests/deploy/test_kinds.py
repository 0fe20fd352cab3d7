"""The deploy manifests' webhook rules against the kind table
(wh/kinds.h, wh_kinds[] in src/core/kinds.c), as
test_manifests.py holds their paths against the route table: every rule of
the Helm chart (workloads on) and of the kustomize workloads overlay names
a row of the table by group and resource, registers the row's version (or
"*"), and sits on the path that judges the row's class; and every row the
webhook judges is registered on that path.
"""
import os
import re
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import deploylib as dl  # noqa: E402
import test_helm as th  # noqa: E402

# The class (enum wh_kind, kinds.h) each admission path accepts
# (wh_engine_decide in src/core/engine.c, the engine routes of wh_routes).
PATH_CLASS = {"/mutate": "WH_KIND_POD", "/mutate-workload": "WH_KIND_POD",
              "/validate": "WH_KIND_RAYCLUSTER", "/validate-workload": "WH_KIND_WORKLOAD"}


def kind_table():
    """wh_kinds[] as rows of dicts, read from src/core/kinds.c."""
    with open(os.path.join(dl.ROOT, "src", "core", "kinds.c")) as f:
        text = f.read()
    rows = []
    for m in re.finditer(r"\[WH_ROW_\w+\] = \{(.*?)\}", text, re.S):
        fields = dict(re.findall(r"\.(\w+) = (\"[^\"]*\"|\w+)", m.group(1)))
        rows.append({k: v.strip('"') for k, v in fields.items()})
    return rows


class KindTable(unittest.TestCase):
    def test_table_read(self):
        rows = kind_table()
        self.assertEqual([r["kind"] for r in rows],
                         ["Pod", "RayCluster", "RayJob", "RayService", "Job", "JobSet",
                          "LeaderWorkerSet"])
        for r in rows:
            want = r["version"] if not r["group"] else "%s/%s" % (r["group"], r["version"])
            self.assertEqual(r["api_version"], want, r["kind"])

    def check_rules(self, objs, where):
        rows = kind_table()
        by_res = {(r["group"], r["resource"]): r for r in rows}
        seen = {p: set() for p in PATH_CLASS}
        hooks = [(cfg["kind"], h) for cfg in objs
                 if cfg["kind"] in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")
                 for h in cfg["webhooks"]]
        self.assertGreaterEqual(len(hooks), 4, where)
        for cfg_kind, h in hooks:
            path = h["clientConfig"]["service"]["path"]
            self.assertIn(path, PATH_CLASS, "%s: %s" % (where, h["name"]))
            self.assertEqual(cfg_kind == "MutatingWebhookConfiguration", path.startswith("/mutate"))
            for rule in h["rules"]:
                for group in rule["apiGroups"]:
                    for res in rule["resources"]:
                        row = by_res.get((group, res))
                        self.assertIsNotNone(row, "%s: %s registers %s/%s, no row of wh_kinds"
                                             % (where, h["name"], group, res))
                        self.assertEqual(row["review"], PATH_CLASS[path],
                                         "%s: %s on %s" % (where, row["kind"], path))
                        self.assertTrue(row["version"] in rule["apiVersions"]
                                        or "*" in rule["apiVersions"],
                                        "%s: %s registers %s, the table says %s"
                                        % (where, row["kind"], rule["apiVersions"], row["version"]))
                        seen[path].add(row["kind"])
        for path, cls in PATH_CLASS.items():
            want = {r["kind"] for r in rows if r["review"] == cls}
            self.assertEqual(seen[path], want, "%s: the rules of %s" % (where, path))

    def test_kustomize_rules(self):
        self.assertIsNotNone(dl.kubectl(), "kubectl not found: run scripts/setup.sh")
        self.check_rules(dl.kustomize_render(os.path.join(dl.ROOT, "deploy", "kustomize", "workloads")),
                         "kustomize workloads overlay")

    def test_helm_rules(self):
        objs, _ = th.render(th.tv(workloads={"enabled": True}))
        self.check_rules(objs, "Helm chart (workloads.enabled)")


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0]] + sys.argv[1:])
