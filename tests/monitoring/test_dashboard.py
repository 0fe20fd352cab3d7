"""The Grafana dashboard (deploy/monitoring/tpu-webhook-dashboard.json) is
dashboard JSON Grafana loads: schemaVersion, uid and title set, unique panel
ids, every panel placed on the grid with a non-empty query per target, the
template variables its queries use defined, and every query valid PromQL
(promtool checks them as recording rules, with Grafana's variables replaced
by values).
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import monlib as ml  # noqa: E402

# Grafana's variables and what a query sees in their place.
GRAFANA_VARS = {"$__rate_interval": "5m", "$__interval": "1m", "$__range": "1h"}


class Dashboard(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dash = ml.dashboard()
        cls.panels = ml.dashboard_panels(cls.dash)


class DashboardLayout(Dashboard):
    def test_top_level(self):
        d = self.dash
        self.assertIsInstance(d.get("schemaVersion"), int)
        self.assertGreaterEqual(d["schemaVersion"], 36)
        self.assertRegex(d.get("uid", ""), r"^[A-Za-z0-9_-]{1,40}$")
        self.assertTrue(d.get("title"))
        self.assertNotIn("__inputs", d, "Grafana's sidecar does not resolve __inputs; use the datasource variable")
        self.assertIsNone(d.get("id"), "an id pins the dashboard to one Grafana database")

    def test_panels(self):
        ids = [p.get("id") for p in self.panels]
        self.assertTrue(all(isinstance(i, int) for i in ids), ids)
        self.assertEqual(len(ids), len(set(ids)), "duplicate panel ids")
        self.assertGreaterEqual(len([p for p in self.panels if p["type"] != "row"]), 10)
        for p in self.panels:
            g = p.get("gridPos", {})
            self.assertTrue(all(k in g for k in ("h", "w", "x", "y")), p["title"])
            self.assertLessEqual(g["x"] + g["w"], 24, p["title"])
            if p["type"] == "row":
                continue
            self.assertTrue(p.get("title"), p["id"])
            targets = p.get("targets", [])
            self.assertTrue(targets, "panel %r has no query" % p["title"])
            refs = [t.get("refId") for t in targets]
            self.assertEqual(len(refs), len(set(refs)), p["title"])
            for t in targets:
                self.assertTrue(t.get("expr", "").strip(), "panel %r has an empty query" % p["title"])
                self.assertEqual(t["datasource"]["uid"], "${datasource}", p["title"])

    def test_no_overlapping_panels(self):
        cells = {}
        for p in self.panels:
            g = p["gridPos"]
            for x in range(g["x"], g["x"] + g["w"]):
                for y in range(g["y"], g["y"] + g["h"]):
                    self.assertNotIn((x, y), cells, "%r overlaps %r" % (p["title"], cells.get((x, y))))
                    cells[(x, y)] = p["title"]


class DashboardQueries(Dashboard):
    def test_variables_defined(self):
        names = {v["name"] for v in self.dash["templating"]["list"]}
        self.assertIn("datasource", names)
        used = set()
        for e in ml.dashboard_exprs(self.dash):
            used |= set(re.findall(r"\$(\w+)", e)) - {"__rate_interval", "__interval", "__range"}
        self.assertLessEqual(used, names)

    def test_queries_are_promql(self):
        promtool = shutil.which("promtool")
        self.assertTrue(promtool, "promtool not found: install Debian's prometheus package (scripts/setup.sh)")
        rules = []
        for i, e in enumerate(ml.dashboard_exprs(self.dash)):
            for var, value in GRAFANA_VARS.items():
                e = e.replace(var, value)
            e = re.sub(r"\$\w+", ".*", e)
            rules.append({"record": "dashboard:query_%d" % i, "expr": e})
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "queries.yaml")
            with open(path, "w") as f:
                yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}, f)
            r = subprocess.run([promtool, "check", "rules", path], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
