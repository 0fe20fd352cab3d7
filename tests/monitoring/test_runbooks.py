"""Every alert's runbook_url is a base plus "#<section>", where the section
is a heading of docs/troubleshooting.md under GitHub's anchor rules. The
base is that page's path in the release, docs/troubleshooting.md (the
project publishes no address: no link points at a made-up one), unless the
operator sets an absolute URL where they serve it.
Checked for every alert of deploy/monitoring/tpu-webhook.rules.yaml (an
alert added later is covered without an edit here) in each shipped form:
the rules file, the chart's PrometheusRule (default and a custom
metrics.prometheusRule.runbookBaseURL, under both real Helms and
helmrender) and kustomize's (the monitoring overlay, and with
components/runbook-base and a custom base).
"""
import os
import sys
import tempfile
import unittest

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "deploy"))
import deploylib as dl  # noqa: E402
import monlib as ml  # noqa: E402
import realhelm as rh  # noqa: E402
import test_helm as helm  # noqa: E402

KUSTOMIZE = os.path.join(ml.ROOT, "deploy", "kustomize")
CUSTOM = "https://docs.example.com/tpu-webhook/v0.1/troubleshooting.md"


def sections():
    """{alert: section} of the rules file, each runbook_url split at '#'."""
    out = {}
    for a in ml.alert_rules():
        url = a["annotations"]["runbook_url"]
        out[a["alert"]] = url.split("#", 1)[1] if "#" in url else None
    return out


def urls(objs):
    """{alert: runbook_url} of the one PrometheusRule in objs."""
    rule, = dl.find(objs, "PrometheusRule")
    return {r["alert"]: r["annotations"]["runbook_url"] for g in rule["spec"]["groups"]
            for r in g["rules"] if "alert" in r}


class Runbooks(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.sections = sections()
        cls.base = ml.default_runbook_base()

    def want(self, base):
        return {a: "%s#%s" % (base, s) for a, s in self.sections.items()}


class RunbooksRulesFile(Runbooks):
    def test_rules_file(self):
        anchors = ml.doc_anchors(ml.TROUBLESHOOTING)
        self.assertGreaterEqual(len(self.sections), 14)
        # A path that exists in the repository (and so in the release),
        # not an address nobody established; the chart keeps it by default.
        self.assertEqual(self.base, "docs/troubleshooting.md")
        self.assertEqual(os.path.realpath(os.path.join(ml.ROOT, self.base)), os.path.realpath(ml.TROUBLESHOOTING))
        self.assertEqual(ml.chart_runbook_base(), "")
        # Nor does any shipped file link elsewhere by default.
        for top in ("deploy", "docs"):
            for d, _, files in os.walk(os.path.join(ml.ROOT, top)):
                for name in files:
                    with open(os.path.join(d, name), encoding="utf-8", errors="replace") as f:
                        self.assertNotIn("github.com/tpu-webhook/", f.read(), os.path.join(d, name))
        for a, s in self.sections.items():
            with self.subTest(alert=a):
                self.assertIn(s, anchors, "%s: no heading of docs/troubleshooting.md has the anchor %r" % (a, s))
        got = {a["alert"]: a["annotations"]["runbook_url"] for a in ml.alert_rules()}
        self.assertEqual(got, self.want(self.base))

    def test_anchor_rules(self):
        # GitHub's: punctuation dropped, spaces to hyphens, repeats
        # numbered, headings in code blocks ignored.
        with tempfile.NamedTemporaryFile("w", suffix=".md", delete=False) as f:
            f.write("# `TPUWebhookDown` (critical)\n## Same\n## Same\n```sh\n# not a heading\n```\n"
                    "### [Linked](x.md) text: here\n")
        try:
            self.assertEqual(ml.doc_anchors(f.name), {"tpuwebhookdown-critical", "same", "same-1",
                                                      "linked-text-here"})
        finally:
            os.unlink(f.name)


class RunbooksChart(Runbooks):
    def test_chart(self):
        on = {"enabled": True}
        custom = {"enabled": True, "runbookBaseURL": CUSTOM}
        objs, _ = helm.render(helm.tv(metrics={"prometheusRule": on}))
        self.assertEqual(urls(objs), self.want(self.base))
        objs, _ = helm.render(helm.tv(metrics={"prometheusRule": custom}))
        self.assertEqual(urls(objs), self.want(CUSTOM))
        for label, h in rh.helms():
            for values, base in ((on, self.base), (custom, CUSTOM)):
                with self.subTest(helm=label, base=base):
                    rc, objs, err = rh.template(h, rh.value_args(helm.tv(metrics={"prometheusRule": values})))
                    self.assertEqual(rc, 0, err)
                    self.assertEqual(urls(objs), self.want(base))
                    # Nothing else of the rules changes.
                    rule, = dl.find(objs, "PrometheusRule")
                    with open(ml.RULES) as f:
                        src = yaml.safe_load(f)
                    for g in src["groups"]:
                        for r in g["rules"]:
                            if "alert" in r:
                                r["annotations"]["runbook_url"] = self.want(base)[r["alert"]]
                    self.assertEqual(rule["spec"], src)


class RunbooksKustomize(Runbooks):
    def overlay(self, base):
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "kustomization.yaml"), "w") as f:
                yaml.safe_dump({"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
                                "resources": [os.path.relpath(os.path.join(KUSTOMIZE, "monitoring"), d)]
                                + (["runbook-base.yaml"] if base else []),
                                "components": [os.path.relpath(os.path.join(KUSTOMIZE, "components",
                                                                            "runbook-base"), d)]}, f)
            if base:
                with open(os.path.join(d, "runbook-base.yaml"), "w") as f:
                    yaml.safe_dump({"apiVersion": "v1", "kind": "ConfigMap",
                                    "metadata": {"name": "tpu-webhook-runbook-base",
                                                 "annotations": {"config.kubernetes.io/local-config": "true"}},
                                    "data": {"base": base}}, f)
            return dl.kustomize_render(d)

    def test_kustomize(self):
        self.assertIsNotNone(dl.kubectl(), "kubectl not found: run scripts/setup.sh")
        self.assertEqual(urls(dl.kustomize_render(os.path.join(KUSTOMIZE, "monitoring"))), self.want(self.base))
        objs = self.overlay(CUSTOM)
        self.assertEqual(urls(objs), self.want(CUSTOM))
        self.assertEqual([o for o in objs if o["metadata"]["name"] == "tpu-webhook-runbook-base"], [])
        # The component without its ConfigMap stops the build.
        with self.assertRaisesRegex(AssertionError, "tpu-webhook-runbook-base"):
            self.overlay(None)

    def test_docs_show_the_tested_overlay(self):
        with open(os.path.join(KUSTOMIZE, "components", "runbook-base", "kustomization.yaml")) as f:
            text = f.read()
        for line in ("- ../deploy/kustomize/monitoring", "- runbook-base.yaml",
                     "- ../deploy/kustomize/components/runbook-base", "name: tpu-webhook-runbook-base",
                     'config.kubernetes.io/local-config: "true"'):
            self.assertIn(line, text)


if __name__ == "__main__":
    unittest.main(verbosity=2)
