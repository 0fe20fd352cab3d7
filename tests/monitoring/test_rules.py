"""The alert rules (deploy/monitoring/tpu-webhook.rules.yaml) under Debian's
promtool: `promtool check rules`, then `promtool test rules` on
rules_test.yaml, whose expected alerts get their description and runbook_url
from the rules file here (see fill_annotations). Also: every alert has a
summary, a description and a runbook_url whose section exists in
docs/troubleshooting.md, and a test case where it fires and one where it
stays quiet.
"""
import copy
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

HERE = os.path.dirname(os.path.abspath(__file__))
CASES = os.path.join(HERE, "rules_test.yaml")
LABEL_REF = re.compile(r"\{\{\s*\$labels\.(\w+)\s*\}\}")


def promtool():
    path = shutil.which("promtool")
    if not path:  # a missing tool fails the test: it must not pass unrun
        raise AssertionError("promtool not found: install Debian's prometheus package (scripts/setup.sh)")
    return path


def fill_annotations(alert, exp):
    """Expected annotations of one alert: the case's own (summaries carry
    $value, so the case spells them out), plus description and runbook_url
    from the rule with $labels references filled from the expected labels.
    Any other template in them is an error: the case must spell it out."""
    out = dict(exp.get("exp_annotations") or {})
    labels = exp.get("exp_labels") or {}
    for key, text in alert["annotations"].items():
        if key in out:
            continue
        text = LABEL_REF.sub(lambda m: str(labels[m.group(1)]), text)
        if "{{" in text:
            raise AssertionError("%s: annotation %s has a template the case must spell out" %
                                 (alert["alert"], key))
        out[key] = text
    return out


class Rules(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.promtool = promtool()
        cls.alerts = {a["alert"]: a for a in ml.alert_rules()}
        with open(CASES) as f:
            cls.cases = yaml.safe_load(f)


class RulesPromtool(Rules):
    def test_promtool_check_rules(self):
        r = subprocess.run([self.promtool, "check", "rules", ml.RULES], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("SUCCESS: %d rules found" % len(self.alerts), r.stdout)

    def test_promtool_test_rules(self):
        cases = copy.deepcopy(self.cases)
        cases["rule_files"] = [ml.RULES]
        for t in cases["tests"]:
            for art in t.get("alert_rule_test", []):
                rule = self.alerts[art["alertname"]]
                for exp in art.get("exp_alerts") or []:
                    exp["exp_annotations"] = fill_annotations(rule, exp)
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "rules_test.yaml")
            with open(path, "w") as f:
                yaml.safe_dump(cases, f, sort_keys=False)
            r = subprocess.run([self.promtool, "test", "rules", path], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)


class RulesAlerts(Rules):
    def test_every_alert_fires_and_stays_quiet_somewhere(self):
        fires, quiet = set(), set()
        for t in self.cases["tests"]:
            for art in t.get("alert_rule_test", []):
                self.assertIn(art["alertname"], self.alerts, "case for an unknown alert")
                (fires if art.get("exp_alerts") else quiet).add(art["alertname"])
        self.assertEqual(sorted(set(self.alerts) - fires), [], "alerts never shown to fire")
        self.assertEqual(sorted(set(self.alerts) - quiet), [], "alerts never shown to stay quiet")

    def test_annotations_and_runbooks(self):
        anchors = ml.doc_anchors(ml.TROUBLESHOOTING)
        for name, a in self.alerts.items():
            ann = a.get("annotations", {})
            for key in ("summary", "description", "runbook_url"):
                self.assertTrue(ann.get(key), "%s lacks %s" % (name, key))
            self.assertIn("First check", ann["description"], "%s: description names no first check" % name)
            self.assertIn("Likely cause", ann["description"], "%s: description names no likely cause" % name)
            url = ann["runbook_url"]
            base = ml.default_runbook_base()
            self.assertTrue(url.startswith(base + "#"), "%s: runbook_url %s is not %s#<section>" % (name, url, base))
            self.assertIn(url.split("#", 1)[1], anchors, "%s: no section %s in docs/troubleshooting.md" % (name, url))
            self.assertIn(a["labels"]["severity"], ("warning", "critical"))

    def test_fill_annotations_refuses_unfilled_templates(self):
        rule = {"alert": "X", "annotations": {"summary": "{{ $value }} left", "description": "on {{ $labels.instance }}"}}
        with self.assertRaises(AssertionError):
            fill_annotations(rule, {"exp_labels": {"instance": "a"}})
        got = fill_annotations(rule, {"exp_labels": {"instance": "a"}, "exp_annotations": {"summary": "1 left"}})
        self.assertEqual(got, {"summary": "1 left", "description": "on a"})


if __name__ == "__main__":
    unittest.main(verbosity=2)
