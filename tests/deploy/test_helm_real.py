"""The Helm chart under real Helm, a Helm 3 and a Helm 4 (realhelm.py;
scripts/fetch-test-helm.sh fetches them): `helm lint --strict` and
`helm template` pass on every documented values combination (each helm
command of the docs, each `--set` the docs mention added to the install
command, the reference chart's values file with the documented overrides,
and the settings test_helm.py checks in detail) and fail, with the expected
message, on each bad values file in tests/fixtures/bad-values/ (the schema,
values.schema.json, and the templates' own checks). NOTES.txt names only
objects of the release and files and sections of the packaged chart.

A missing Helm fails every test here (the chart must not pass untested).
"""
import glob
import json
import os
import re
import sys
import tarfile
import tempfile
import unittest

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import deploylib as dl  # noqa: E402
import realhelm as rh  # noqa: E402

BAD = os.path.join(dl.ROOT, "tests", "fixtures", "bad-values")
REFERENCE_VALUES = os.path.join(dl.ROOT, "tests", "fixtures", "reference-chart", "values.yaml")
DOCS = [os.path.join(dl.ROOT, "docs", f) for f in sorted(os.listdir(os.path.join(dl.ROOT, "docs")))
        if f.endswith(".md")] + [os.path.join(dl.ROOT, "README.md"), os.path.join(rh.CHART, "README.md")]
# The docs' placeholders, and the values file an upgrading user keeps.
PLACEHOLDERS = {"REGISTRY": "registry.example.com", "TAG": "0.1.0"}
DOC_FILES = {"values.yaml": REFERENCE_VALUES}
# NOTES' pointer into the chart's README: "<section>" in the chart's README.md
README_REF = re.compile(r'"([^"]+)"\s+in\s+the\s+chart\'s\s+README\.md')


NO_MODEL = ("ServiceMonitor", "PrometheusRule", "ConfigMap")


def tv(**kw):
    return {"tpuWebhook": kw}


# Settings beyond the docs' commands: what test_helm.py renders with
# helmrender, so real Helm (and the schema) accepts each of them too.
# (name, values, check_install arguments)
SETTINGS = [
    ("defaults", None, {}),
    ("no cert-manager", tv(certManager={"enabled": False}), {"cert_manager": False}),
    ("one replica", tv(deployment={"replicas": 1}), {}),
    ("port 8443", tv(deployment={"bindPort": 8443}), {}),
    ("other namespace, created", tv(namespace={"name": "tpu-system", "create": True, "labels": {"team": "ml"}}),
     {"ns": "tpu-system"}),
    ("operator settings", tv(
        image={"repository": "registry.example/tpu-webhook", "tag": "v9", "pullPolicy": "Always"},
        imagePullSecrets=[{"name": "regcred"}],
        deployment={"extraArgs": ["--max-body-bytes=1048576"], "verbosity": 2,
                    "nodeSelector": {"pool": "system"},
                    "tolerations": [{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}],
                    "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [{"matchExpressions": [
                            {"key": "pool", "operator": "In", "values": ["system"]}]}]}}},
                    "resources": {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"memory": "2Gi"}},
                    "priorityClassName": "system-cluster-critical",
                    "podAnnotations": {"a": "b"}, "podLabels": {"c": "d"},
                    "podSecurityContext": {"sysctls": [{"name": "kernel.shm_rmid_forced", "value": "1"}]},
                    "shutdownDelay": "10s", "shutdownTimeout": "1m", "terminationGracePeriodSeconds": 90},
        webhook={"reinvocationPolicy": "Never", "matchConditions": False},
        podDisruptionBudget={"minAvailable": "50%"}), {}),
    ("workloads", tv(workloads={"enabled": True}), {}),
    ("all monitoring", tv(metrics={"podAnnotations": True,
                                   "serviceMonitor": {"enabled": True, "labels": {"release": "prom"}},
                                   "prometheusRule": {"enabled": True,
                                                      "runbookBaseURL": "https://docs.example.com/tpu/troubleshooting.md"},
                                   "dashboard": {"enabled": True, "namespace": "monitoring"}}), None),
    ("matchConditions forced on", tv(webhook={"matchConditions": True}), {}),
]


def doc_commands():
    """[(where, [values args])] for every documented combination: each
    `helm install`/`helm upgrade` in the docs as written (placeholders
    filled), and each `--set` the docs mention, added to the first install
    command of docs/deploy.md."""
    out, sets, base = [], [], None
    for path in DOCS:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        rel = os.path.relpath(path, dl.ROOT)
        for m in re.finditer(r"^\s*helm (install|upgrade) (\S+) (\S+)((?:[^\n]*\\\n)*[^\n]*)$", text, re.M):
            args = []
            for k, v in re.findall(r"(--set|-f) (\S+)", m.group(4).replace("\\\n", " ")):
                if k == "-f":
                    args += ["-f", DOC_FILES[v]]
                else:
                    for p, real in PLACEHOLDERS.items():
                        v = v.replace(p, real)
                    args += ["--set", v]
            out.append(("%s: helm %s" % (rel, m.group(1)), args))
            if base is None and rel == os.path.join("docs", "deploy.md") and m.group(1) == "install":
                base = args
        sets += [(rel, s) for s in re.findall(r"`--set (tpuWebhook\.\S+?=[^`\s]+)`", text)]
        sets += [(rel, s) for s in re.findall(r"^--set (tpuWebhook\.\S+=\S+)$", text, re.M)]
    if base is None:
        raise AssertionError("docs/deploy.md has no helm install command")
    out += [("%s: --set %s" % (rel, s), base + ["--set", s]) for rel, s in sets]
    return out


def bad_files():
    """[(path, {helm label: expected message}, lint fails)]. A file whose
    fault only a template finds (`fail`) says `# lint: reports`: Helm's lint
    reports a template's fail as INFO without failing."""
    out = []
    for path in sorted(glob.glob(os.path.join(BAD, "*.yaml"))):
        with open(path, encoding="utf-8") as f:
            text = f.read()
        want = dict(re.findall(r"^# (helm[34]): (.*)$", text, re.M))
        out.append((path, want, not re.search(r"^# lint: reports$", text, re.M)))
    return out


class Real(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.helms = rh.helms()

    def good(self, where, vargs, check=None):
        for label, helm in self.helms:
            with self.subTest(helm=label, values=where):
                rc, out = rh.lint(helm, vargs)
                self.assertEqual(rc, 0, out)
                self.assertNotIn("[WARNING]", out)
                rc, objs, err = rh.template(helm, vargs)
                self.assertEqual(rc, 0, err)
                # The Prometheus operator's kinds and ConfigMap have no API model here
                # (tests/monitoring checks them).
                self.assertEqual(dl.schema_errors([o for o in objs if o["kind"] not in NO_MODEL]), [])
                if check is not None:
                    self.assertEqual(dl.check_install(objs, **check), [])


class RealSettings(Real):
    def test_settings(self):
        for name, values, check in SETTINGS:
            self.good(name, rh.value_args(values), check)

    def test_documented_commands(self):
        cmds = doc_commands()
        self.assertGreaterEqual(len(cmds), 6)  # the parser found the docs' commands
        for where, vargs in cmds:
            self.good(where, vargs)

    def test_reference_values_with_the_documented_overrides(self):
        # docs/deploy.md, "Upgrading from kuberay-tpu-webhook": the file as it
        # is plus the image and the Namespace the reference's release owns.
        (where, vargs), = [c for c in doc_commands() if c[0].endswith("helm upgrade")]
        self.assertIn(REFERENCE_VALUES, vargs)
        self.good(where, vargs, {})
        pairs = list(zip(vargs[::2], vargs[1::2]))
        self.assertIn(("--set", "tpuWebhook.namespace.create=true"), pairs)
        # Without that override the release would no longer hold the
        # reference's Namespace, and Helm would delete it on the upgrade.
        no_ns = [a for p in pairs if p != ("--set", "tpuWebhook.namespace.create=true") for a in p]
        for label, helm in self.helms:
            _, objs, _ = rh.template(helm, vargs)
            self.assertEqual(len(dl.find(objs, "Namespace", "ray-system")), 1, label)
            _, objs, _ = rh.template(helm, no_ns)
            self.assertEqual(dl.find(objs, "Namespace"), [], label)


class RealRefusals(Real):
    def test_issue_typos_refused_with_set(self):
        # The three of issue 25, as a user types them.
        for s, key in (("tpuWebhook.deployment.replica=3", "replica"),
                       ("tpuWebhook.deployment.bindPort=abc", "bindPort"),
                       ("tpuWebhook.webhook.failurePolicy=Bogus", "failurePolicy")):
            for label, helm in self.helms:
                with self.subTest(helm=label, set=s):
                    rc, out = rh.lint(helm, ["--set", s])
                    self.assertNotEqual(rc, 0, out)
                    self.assertIn(key, out)
                    rc, objs, err = rh.template(helm, ["--set", s])
                    self.assertNotEqual(rc, 0)
                    self.assertIn("values don't meet the specifications of the schema", err)
                    self.assertIn(key, err)

    def test_bad_values_files_fail_with_their_message(self):
        files = bad_files()
        self.assertGreaterEqual(len(files), 20)
        # Only the templates' own checks may pass lint.
        self.assertEqual(sorted(os.path.basename(p) for p, _, fails in files if not fails),
                         ["claims-namespace-in-extraargs.yaml", "reference-image.yaml"])
        for path, want, lint_fails in files:
            name = os.path.basename(path)
            self.assertEqual(sorted(want), ["helm3", "helm4"], "%s: no expected message per Helm" % name)
            for label, helm in self.helms:
                with self.subTest(helm=label, file=name):
                    rc, out = rh.lint(helm, ["-f", path])
                    if lint_fails:
                        self.assertNotEqual(rc, 0, out)
                    self.assertIn(want[label], out)
                    rc, objs, err = rh.template(helm, ["-f", path])
                    self.assertNotEqual(rc, 0, "helm template accepted %s" % name)
                    self.assertIn(want[label], err)


class RealSchema(Real):
    def test_every_value_is_in_the_schema(self):
        # The schema names every key of values.yaml, with a type, and
        # refuses unknown keys wherever values.yaml has fixed keys.
        with open(os.path.join(rh.CHART, "values.yaml")) as f:
            values = yaml.safe_load(f)
        with open(os.path.join(rh.CHART, "values.schema.json")) as f:
            schema = json.load(f)

        def walk(v, s, path):
            if s.get("type") == "object" and "properties" in s:
                self.assertIs(s.get("additionalProperties"), False, "%s takes any key" % path)
                self.assertIsInstance(v, dict, path)
                # Maps with free keys (labels, ...) have no properties.
                for k in v:
                    self.assertIn(k, s["properties"], "%s.%s is not in values.schema.json" % (path, k))
                for k in v:
                    walk(v[k], s["properties"][k], path + "." + k)
            else:
                self.assertTrue({"type", "enum", "oneOf", "$ref"} & set(s), "%s has no type in the schema" % path)
        walk(values, schema, "(root)")


class Notes(unittest.TestCase):
    """NOTES.txt refers only to what the release and the chart contain: the
    packaged chart holds no repository scripts or docs."""

    @classmethod
    def setUpClass(cls):
        cls.helms = rh.helms()
        cls.tmp = tempfile.TemporaryDirectory()
        with tarfile.open(rh.package(cls.helms[0][1], cls.tmp.name)) as t:
            cls.packaged = {n.split("/", 1)[1] for n in t.getnames() if "/" in n}
        with open(os.path.join(rh.CHART, "README.md"), encoding="utf-8") as f:
            cls.readme_sections = set(re.findall(r"^#+\s+(.*?)\s*$", f.read(), re.M))

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def problems(self, notes, objs):
        errs = []
        names = {(o["kind"].lower(), o["metadata"]["name"]) for o in objs}
        for kind, name in re.findall(r"kubectl[^\n]*?\b(?:get|rollout status) (\w+)[/ ]([\w.-]+)", notes):
            if (kind.lower(), name) not in names:
                errs.append("NOTES names %s %s, which the release does not contain" % (kind, name))
        for path in re.findall(r"[\w./-]+\.(?:sh|md|ya?ml|json|txt|py)\b", notes):
            if path not in self.packaged:
                errs.append("NOTES names %s, which the packaged chart does not contain" % path)
        for sec in README_REF.findall(notes):
            if sec not in self.readme_sections:
                errs.append("NOTES names the README section %r, which it does not have" % sec)
        if re.search(r"\b(docs|certs|scripts|tests|deploy)/", notes):
            errs.append("NOTES names a repository path: %s" % re.search(r"\S*\b(docs|certs|scripts|tests|deploy)/\S*", notes).group(0))
        return errs

    def test_notes_of_every_setting(self):
        seen_sections = set()
        cases = [(name, rh.value_args(values)) for name, values, _ in SETTINGS]
        cases.append(("reference values", rh.value_args(
            files=[REFERENCE_VALUES], sets=["tpuWebhook.image.repository=registry.example.com/tpu-webhook"])))
        for name, vargs in cases:
            for label, helm in self.helms:
                with self.subTest(helm=label, values=name):
                    notes = rh.notes(helm, vargs)
                    _, objs, err = rh.template(helm, vargs)
                    self.assertIsNotNone(objs, err)
                    self.assertIn("rollout status", notes)
                    self.assertEqual(self.problems(notes, objs), [])
                    seen_sections |= set(README_REF.findall(notes))
        # The settings reach every pointer into the README.
        self.assertEqual(seen_sections, {"Without cert-manager", "Replicas", "Priority"})

    def test_checker_catches_bad_notes(self):
        objs = [{"kind": "Deployment", "metadata": {"name": "kuberay-tpu-webhook"}}]
        self.assertEqual(self.problems("kubectl rollout status deployment/kuberay-tpu-webhook", objs), [])
        for bad in ("kubectl rollout status deployment/other", "run certs/install-without-cert-manager.sh",
                    "see docs/deploy.md", '"Nowhere" in the chart\'s README.md'):
            self.assertNotEqual(self.problems(bad, objs), [], bad)


if __name__ == "__main__":
    unittest.main(verbosity=2)
