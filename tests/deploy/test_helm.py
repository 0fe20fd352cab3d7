"""The Helm chart (deploy/helm/kuberay-tpu-webhook), rendered with helmlite
(Helm is not packaged for Debian 12) for several sets of values; every
rendering must parse and pass deploylib.check_install, and the default
rendering must equal the kustomize install apart from Helm's labels.
"""
import copy
import glob
import os
import re
import sys
import unittest

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import deploylib as dl  # noqa: E402
import helmlite  # noqa: E402

CHART = os.path.join(dl.ROOT, "deploy", "helm", "kuberay-tpu-webhook")


def chart_meta():
    with open(os.path.join(CHART, "Chart.yaml")) as f:
        return yaml.safe_load(f)


def default_values():
    with open(os.path.join(CHART, "values.yaml")) as f:
        return yaml.safe_load(f)


def render(overrides=None, release="tpu-webhook"):
    """Rendered manifests (list of objects) and NOTES text."""
    files = {}
    for path in sorted(glob.glob(os.path.join(CHART, "templates", "*"))):
        with open(path) as f:
            files[os.path.basename(path)] = f.read()
    chart_files = {}
    for path in sorted(glob.glob(os.path.join(CHART, "files", "*"))):
        with open(path) as f:
            chart_files["files/" + os.path.basename(path)] = f.read()
    meta = chart_meta()
    values = helmlite.deep_merge(default_values(), overrides or {})
    r = helmlite.Renderer(files, values,
                          {"Name": release, "Namespace": "default", "Service": "Helm"},
                          {"Name": meta["name"], "Version": meta["version"], "AppVersion": meta["appVersion"]},
                          chart_files)
    objs = []
    for name in sorted(files):
        if name.endswith(".yaml"):
            objs += dl.load_docs(r.render(name), name)
        elif not name.startswith("_") and name != "NOTES.txt":
            raise AssertionError("unexpected template file %s" % name)
    return objs, r.render("NOTES.txt")


def tv(**kw):
    return {"tpuWebhook": kw}


def deployment(objs):
    return dl.find(objs, "Deployment", dl.NAME)[0]


def container(objs):
    return deployment(objs)["spec"]["template"]["spec"]["containers"][0]


def norm_objs(objs):
    """(kind, name) -> object, without what only Helm adds (its labels)."""
    out = {}
    for o in copy.deepcopy(objs):
        md = o["metadata"]
        md.pop("labels", None)
        if o["kind"] == "Namespace":
            md.pop("annotations", None)
        if o["kind"] == "Deployment":
            tmd = o["spec"]["template"]["metadata"]
            tmd["labels"] = {"app": tmd["labels"]["app"]}
        out[(o["kind"], md["name"])] = o
    return out


class Chart(unittest.TestCase):
    def valid(self, objs, **kw):
        self.assertEqual(dl.check_install(objs, **kw), [])
        self.assertEqual(dl.schema_errors(objs), [])

    def test_chart_metadata(self):
        meta = chart_meta()
        self.assertEqual(meta["apiVersion"], "v2")
        self.assertEqual(meta["name"], "kuberay-tpu-webhook")
        self.assertRegex(meta["version"], r"^\d+\.\d+\.\d+$")
        self.assertIsInstance(meta["appVersion"], str)
        with open(os.path.join(dl.ROOT, "CMakeLists.txt")) as f:
            project = re.search(r"project\(tpu-webhook VERSION (\S+)", f.read()).group(1)
        self.assertEqual(meta["appVersion"], project, "chart appVersion differs from the project version")
        self.assertTrue(os.path.isfile(os.path.join(CHART, "README.md")))

    def test_reference_value_keys_exist(self):
        # The reference chart's keys keep their names.
        v = default_values()["tpuWebhook"]
        for path in ("namespace.name", "namespace.labels", "image.repository", "image.tag", "image.pullPolicy",
                     "deployment.replicas", "deployment.verbosity", "deployment.bindPort",
                     "deployment.containerSecurityContext", "deployment.podSecurityContext",
                     "service.type", "service.port", "cert.duration", "cert.renewBefore",
                     "certManager.enabled", "deployment.resources", "deployment.nodeSelector",
                     "deployment.tolerations", "deployment.extraArgs"):
            cur = v
            for p in path.split("."):
                self.assertIn(p, cur, path)
                cur = cur[p]

    def test_defaults(self):
        objs, notes = render()
        self.valid(objs, cert_manager=True)
        self.assertEqual(deployment(objs)["spec"]["replicas"], 2)
        self.assertEqual(container(objs)["image"], "tpu-webhook:%s" % chart_meta()["appVersion"])
        self.assertIn("rollout status", notes)
        self.assertNotIn("install-without-cert-manager", notes)
        ns = dl.find(objs, "Namespace")[0]
        self.assertEqual(ns["metadata"]["annotations"], {"helm.sh/resource-policy": "keep"})

    def test_defaults_equal_kustomize_install(self):
        self.assertIsNotNone(dl.kubectl(), "kubectl not found: run scripts/setup.sh")
        kobjs = dl.kustomize_render(os.path.join(dl.ROOT, "deploy", "kustomize", "default"))
        hobjs, _ = render()

        k, h = norm_objs(kobjs), norm_objs(hobjs)
        self.assertEqual(sorted(k), sorted(h))
        for key in k:
            with self.subTest(object=key):
                self.assertEqual(k[key], h[key])

    def test_workloads_off_by_default_and_equal_to_the_kustomize_overlay(self):
        import test_manifests as tm
        objs, _ = render()
        self.assertEqual([o for o in objs if "workload" in o["metadata"]["name"]], [])
        objs, _ = render(tv(workloads={"enabled": True}))
        self.assertEqual(dl.check_install(objs, cert_manager=True), [])
        self.assertEqual(tm.schema_errors_but_match_conditions(objs), [])
        tm.check_workload_entries(self, objs)
        self.assertIsNotNone(dl.kubectl(), "kubectl not found: run scripts/setup.sh")
        k = norm_objs(dl.kustomize_render(tm.WORKLOADS))
        h = norm_objs(objs)
        self.assertEqual(sorted(k), sorted(h))
        for name in k:
            with self.subTest(object=name):
                self.assertEqual(k[name], h[name])
        objs, _ = render(tv(workloads={"enabled": True}, namespace={"name": "tpu"}))
        tm.check_workload_entries(self, objs, ns="tpu")

    def test_without_cert_manager(self):
        objs, notes = render(tv(certManager={"enabled": False}))
        self.valid(objs, cert_manager=False)
        self.assertEqual(dl.find(objs, "Certificate") + dl.find(objs, "Issuer"), [])
        self.assertIn("certs/install-without-cert-manager.sh --namespace ray-system", notes)

    def test_single_replica_has_no_pdb(self):
        objs, _ = render(tv(deployment={"replicas": 1}))
        self.valid(objs)
        self.assertEqual(dl.find(objs, "PodDisruptionBudget"), [])

    def test_unprivileged_port(self):
        objs, _ = render(tv(deployment={"bindPort": 8443}))
        self.valid(objs)
        c = container(objs)
        self.assertEqual(c["securityContext"]["capabilities"], {"drop": ["ALL"]})
        self.assertNotIn("sysctls", deployment(objs)["spec"]["template"]["spec"]["securityContext"])
        self.assertIn("--bind-address=:8443", c["args"])
        self.assertEqual(dl.find(objs, "Service")[0]["spec"]["ports"][0]["port"], 443)

    def test_other_namespace(self):
        objs, _ = render(tv(namespace={"name": "tpu-system", "labels": {"team": "ml"}}))
        self.valid(objs, ns="tpu-system")
        self.assertEqual(dl.find(objs, "Namespace")[0]["metadata"]["labels"], {"team": "ml"})
        self.assertNotEqual(dl.check_install(objs, ns="ray-system"), [])

    def test_existing_namespace(self):
        objs, _ = render(tv(namespace={"create": False}))
        self.assertEqual(dl.find(objs, "Namespace"), [])
        self.valid(objs + [{"apiVersion": "v1", "kind": "Namespace",
                                                   "metadata": {"name": "ray-system"}}])

    def test_operator_settings(self):
        objs, _ = render(tv(
            image={"repository": "registry.example/tpu-webhook", "tag": "v9", "pullPolicy": "Always"},
            imagePullSecrets=[{"name": "regcred"}],
            deployment={"extraArgs": ["--max-body-bytes=1048576", "--standalone"], "verbosity": 2,
                        "nodeSelector": {"pool": "system"},
                        "tolerations": [{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}],
                        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [{"matchExpressions": [
                                {"key": "pool", "operator": "In", "values": ["system"]}]}]}}},
                        "resources": {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"memory": "2Gi"}},
                        "priorityClassName": "system-cluster-critical",
                        "podAnnotations": {"a": "b"}, "podLabels": {"c": "d"}},
            webhook={"reinvocationPolicy": "Never"}))
        self.valid(objs)
        pod = deployment(objs)["spec"]["template"]
        c = container(objs)
        self.assertEqual(c["image"], "registry.example/tpu-webhook:v9")
        self.assertEqual(c["imagePullPolicy"], "Always")
        self.assertEqual(c["args"][-2:], ["--max-body-bytes=1048576", "--standalone"])
        self.assertIn("--v=2", c["args"])
        # Helm merges maps: the default kubernetes.io/os selector stays.
        self.assertEqual(pod["spec"]["nodeSelector"], {"kubernetes.io/os": "linux", "pool": "system"})
        self.assertEqual(pod["spec"]["tolerations"][0]["key"], "dedicated")
        self.assertIn("nodeAffinity", pod["spec"]["affinity"])
        self.assertNotIn("podAntiAffinity", pod["spec"]["affinity"])
        self.assertEqual(c["resources"]["requests"]["memory"], "1Gi")
        self.assertEqual(pod["spec"]["imagePullSecrets"], [{"name": "regcred"}])
        self.assertEqual(pod["spec"]["priorityClassName"], "system-cluster-critical")
        self.assertEqual(pod["metadata"]["annotations"]["a"], "b")
        self.assertEqual(pod["metadata"]["labels"]["c"], "d")
        mwc = dl.find(objs, "MutatingWebhookConfiguration")[0]
        self.assertEqual(mwc["webhooks"][0]["reinvocationPolicy"], "Never")

    def test_reference_values_file(self):
        # A values file written for the reference chart (its keys and
        # defaults, capabilities included) still gives a consistent install.
        ref = tv(namespace={"name": "ray-system", "labels": {}},
                 image={"repository": "tpu-webhook", "tag": "0.1.0", "pullPolicy": "IfNotPresent"},
                 deployment={"replicas": 1, "verbosity": 1, "bindPort": 443,
                             "containerSecurityContext": {
                                 "allowPrivilegeEscalation": False,
                                 "capabilities": {"drop": ["ALL"], "add": ["NET_BIND_SERVICE"]},
                                 "readOnlyRootFilesystem": True, "runAsUser": 2007,
                                 "seccompProfile": {"type": "RuntimeDefault"}},
                             "podSecurityContext": {}},
                 service={"type": "ClusterIP", "port": 443},
                 cert={"duration": "2160h", "renewBefore": "360h"})
        objs, _ = render(ref)
        self.valid(objs)

    def test_checker_catches_breakage_in_chart_output(self):
        objs, _ = render()
        for desc, broken in dl.broken_copies(objs):
            with self.subTest(broken=desc):
                self.assertNotEqual(dl.check_install(broken), [], desc)

    def test_bad_values_fail_loudly(self):
        with self.assertRaisesRegex(helmlite.TemplateError, "namespace.name is required"):
            render(tv(namespace={"name": ""}))
        with self.assertRaises(helmlite.TemplateError):
            render({"tpuWebhook": {"deployment": {"bindPort": "https"}}})


class Renderer(unittest.TestCase):
    """helmlite against Go text/template behaviour, so the chart tests mean
    what they say."""

    def r(self, text, values=None, defines=""):
        files = {"t.yaml": text, "_h.tpl": defines}
        return helmlite.Renderer(files, values or {}, {"Name": "n"}, {"Name": "c"}).render("t.yaml")

    def test_trim_markers(self):
        self.assertEqual(self.r("a \n {{- 1 }} \n b"), "a1 \n b")
        self.assertEqual(self.r("a {{ 1 -}} \n b"), "a 1b")
        self.assertEqual(self.r("a\n{{- /* c */}}\nb"), "a\nb")

    def test_control_flow(self):
        v = {"x": 0, "l": ["p", "q"], "m": {"b": 2, "a": 1}, "s": "v"}
        self.assertEqual(self.r("{{ if .Values.x }}y{{ else if .Values.s }}s{{ else }}n{{ end }}", v), "s")
        self.assertEqual(self.r("{{ range .Values.l }}[{{ . }}]{{ end }}", v), "[p][q]")
        self.assertEqual(self.r("{{ range .Values.m }}{{ . }}{{ end }}", v), "12")
        self.assertEqual(self.r("{{ range .Values.x }}a{{ else }}empty{{ end }}", {"x": []}), "empty")
        self.assertEqual(self.r("{{ with .Values.s }}{{ . }}{{ else }}none{{ end }}", v), "v")
        self.assertEqual(self.r("{{ with .Values.x }}{{ . }}{{ else }}none{{ end }}", v), "none")

    def test_pipelines_and_functions(self):
        v = {"p": 443, "d": {"b": [1], "a": "x"}, "e": ""}
        self.assertEqual(self.r('{{ .Values.p | quote }}', v), '"443"')
        self.assertEqual(self.r('{{ .Values.e | default "z" }}', v), "z")
        self.assertEqual(self.r('{{ lt (int .Values.p) 1024 }}', v), "true")
        self.assertEqual(self.r('k:{{ toYaml .Values.d | nindent 2 }}', v), "k:\n  a: x\n  b:\n  - 1")
        self.assertEqual(self.r('{{ toYaml (omit .Values.d "b") }}', v), "a: x")
        self.assertEqual(self.r('{{ printf "%s-%d" "a" 3 }}', v), "a-3")
        self.assertEqual(self.r('{{ include "x" . }}', v, '{{- define "x" -}}[{{ .Values.p }}]{{- end -}}'), "[443]")

    def test_outside_the_subset_is_an_error(self):
        for bad in ("{{ .Values.nope }}", "{{ upper .Values.s }}", "{{ $x := 1 }}",
                    "{{ if .Values.s }}open", "{{ end }}", "{{ range $i, $v := .Values.l }}{{ end }}",
                    "{{ .Values.d }}"):
            with self.subTest(template=bad):
                with self.assertRaises(helmlite.TemplateError):
                    self.r(bad, {"s": "v", "l": [], "d": {"a": 1}})


if __name__ == "__main__":
    unittest.main(verbosity=2)
