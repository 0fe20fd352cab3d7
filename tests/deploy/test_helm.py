"""The Helm chart (deploy/helm/kuberay-tpu-webhook), rendered as Helm renders
it: Go's text/template with Sprig and Helm's own functions (helmrender, built
from tests/deploy/helmrender; Helm is not packaged for Debian 12), for several
sets of values; every rendering must parse and pass deploylib.check_install,
and the default rendering must equal the kustomize install apart from Helm's
labels.

Environment: WH_HELMRENDER = the built helmrender.
"""
import copy
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import deploylib as dl  # noqa: E402

CHART = os.path.join(dl.ROOT, "deploy", "helm", "kuberay-tpu-webhook")


class TemplateError(Exception):
    """helm template would fail: the error Go's text/template reported."""


def chart_meta():
    with open(os.path.join(CHART, "Chart.yaml")) as f:
        return yaml.safe_load(f)


def default_values():
    with open(os.path.join(CHART, "values.yaml")) as f:
        return yaml.safe_load(f)


def helm_template(chart, overrides=None, release="tpu-webhook", namespace="default", kube=None,
                  files=()):
    """{template path: rendered text} as `helm template` gives them; files
    (values files, like -f) and then the overrides (a values file) are
    merged over the chart's values.yaml; kube: the cluster's version
    (--kube-version; helmrender's default v1.30.0)."""
    binary = os.environ.get("WH_HELMRENDER", "")
    if not binary or not os.access(binary, os.X_OK):
        raise AssertionError("helmrender not built (WH_HELMRENDER=%r): go not found? run "
                             "scripts/setup.sh" % binary)
    with tempfile.TemporaryDirectory() as d:
        args = [binary, chart, release, namespace] + list(files)
        if overrides is not None:
            args.append(os.path.join(d, "values.json"))
            with open(args[-1], "w") as f:
                json.dump(overrides, f)
        env = dict(os.environ, HELMRENDER_KUBE_VERSION=kube or "")
        p = subprocess.run(args, capture_output=True, text=True, timeout=120, env=env)
    if p.returncode != 0:
        raise TemplateError(p.stderr.strip())
    return json.loads(p.stdout)


def render(overrides=None, release="tpu-webhook", kube=None, files=()):
    """Rendered manifests (list of objects) and NOTES text."""
    out = helm_template(CHART, overrides, release, kube=kube, files=files)
    objs, prefix = [], chart_meta()["name"] + "/templates/"
    for name in sorted(out):
        base = name[len(prefix):]
        if base.endswith(".yaml"):
            objs += dl.load_docs(out[name], base)
        elif base != "NOTES.txt":
            raise AssertionError("unexpected template file %s" % base)
    return objs, out[prefix + "NOTES.txt"]


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


class ChartDefaults(Chart):
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
        self.assertNotIn("cert-manager is off", notes)
        # The namespace usually exists (KubeRay's): not created by default.
        self.assertEqual(dl.find(objs, "Namespace"), [])
        objs, _ = render(tv(namespace={"create": True}))
        self.valid(objs)
        ns = dl.find(objs, "Namespace")[0]
        self.assertEqual(ns["metadata"]["annotations"], {"helm.sh/resource-policy": "keep"})

    def test_defaults_equal_kustomize_install(self):
        self.assertIsNotNone(dl.kubectl(), "kubectl not found: run scripts/setup.sh")
        kobjs = dl.kustomize_render(os.path.join(dl.ROOT, "deploy", "kustomize", "default"))
        # kustomize has no cluster version to go by: its install is the
        # chart's without matchConditions (MatchConditions below), with the
        # Namespace that kustomize's base holds.
        hobjs, _ = render(tv(webhook={"matchConditions": False}, namespace={"create": True}))

        k, h = norm_objs(kobjs), norm_objs(hobjs)
        self.assertEqual(sorted(k), sorted(h))
        for key in k:
            with self.subTest(object=key):
                self.assertEqual(k[key], h[key])

    def test_image_one_name_everywhere(self):
        """The image each install path deploys is one: the chart's default
        (repository tpu-webhook, tag appVersion) is the kustomize base's; the
        README's Helm install and its kustomize overlay (`images:`) point the
        same name at the same REGISTRY/tpu-webhook:<appVersion> that
        scripts/release.sh builds, and render it."""
        self.assertIsNotNone(dl.kubectl(), "kubectl not found: run scripts/setup.sh")
        app = chart_meta()["appVersion"]
        default = "tpu-webhook:" + app
        self.assertEqual(container(render()[0])["image"], default)
        for kdir in ("base", "default", "workloads"):
            objs = dl.kustomize_render(os.path.join(dl.ROOT, "deploy", "kustomize", kdir))
            with self.subTest(kustomize=kdir):
                self.assertEqual(container(objs)["image"], default)
        with open(os.path.join(dl.ROOT, "README.md")) as f:
            readme = f.read()
        sets = dict(re.findall(r"--set tpuWebhook\.image\.(repository|tag)=(\S+)", readme))
        self.assertEqual(set(sets), {"repository", "tag"}, "README's helm install sets no image")
        images = re.findall(r"- \{name: ([^,]+), newName: ([^,]+), newTag: ([^}]+)\}", readme)
        self.assertEqual(len(images), 1, "README's kustomize overlay: one images: entry")
        name, new_name, new_tag = images[0]
        self.assertEqual(name, default.split(":")[0], "the overlay's images: must name the base's image")
        self.assertEqual((new_name, new_tag), (sets["repository"], sets["tag"]))
        self.assertEqual(new_tag, app, "README installs a tag other than the chart's appVersion")
        with open(os.path.join(dl.ROOT, "scripts", "release.sh")) as f:
            self.assertIn('image="${registry%/}/tpu-webhook:$version"', f.read())
        want = "%s:%s" % (new_name, new_tag)
        self.assertEqual(container(render(tv(image={"repository": new_name, "tag": new_tag}))[0])["image"], want)
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "kustomization.yaml"), "w") as f:
                default_dir = os.path.join(dl.ROOT, "deploy", "kustomize", "default")
                yaml.safe_dump({"resources": [os.path.relpath(default_dir, d)],
                                "images": [{"name": name, "newName": new_name, "newTag": new_tag}]}, f)
            self.assertEqual(container(dl.kustomize_render(d))["image"], want)

    def test_workloads_off_by_default_and_equal_to_the_kustomize_overlay(self):
        import test_manifests as tm
        objs, _ = render()
        self.assertEqual([o for o in objs if "workload" in o["metadata"]["name"]], [])
        objs, _ = render(tv(workloads={"enabled": True}, webhook={"matchConditions": False},
                            namespace={"create": True}))
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


class ChartVariants(Chart):
    def test_without_cert_manager(self):
        objs, notes = render(tv(certManager={"enabled": False}))
        self.valid(objs, cert_manager=False)
        self.assertEqual(dl.find(objs, "Certificate") + dl.find(objs, "Issuer"), [])
        self.assertIn("cert-manager is off", notes)
        self.assertIn('"Without cert-manager" in the chart\'s README.md', notes)

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
        objs, _ = render(tv(namespace={"name": "tpu-system", "create": True, "labels": {"team": "ml"}}))
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


class ChartValues(Chart):
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
        with self.assertRaisesRegex(TemplateError, "namespace.name is required"):
            render(tv(namespace={"name": ""}))
        # Helm renders a port name where a number belongs; the install check
        # (as the API server) refuses the result.
        objs, _ = render({"tpuWebhook": {"deployment": {"bindPort": "https"}}})
        self.assertNotEqual(dl.check_install(objs, cert_manager=True) + dl.schema_errors(objs), [])


class Renderer(unittest.TestCase):
    """helmrender keeps what Helm adds to text/template, so the chart tests
    mean what they say."""

    def r(self, text, values=None, defines=""):
        with tempfile.TemporaryDirectory() as d:
            os.mkdir(os.path.join(d, "templates"))
            for name, body in (("Chart.yaml", "apiVersion: v2\nname: c\nversion: 1.2.3\n"),
                               ("values.yaml", yaml.safe_dump(values or {})),
                               ("templates/t.yaml", text), ("templates/_h.tpl", defines)):
                with open(os.path.join(d, name), "w") as f:
                    f.write(body)
            return helm_template(d, release="n")["c/templates/t.yaml"]

    def test_helm_functions(self):
        v = {"p": 443, "d": {"b": [1], "a": "x"}, "e": "", "s": "{{ .Release.Name }}"}
        self.assertEqual(self.r('k:{{ toYaml .Values.d | nindent 2 }}', v), "k:\n  a: x\n  b:\n  - 1")
        self.assertEqual(self.r('{{ include "x" . | upper }}', v, '{{- define "x" -}}[{{ .Values.p }}]{{- end -}}'),
                         "[443]")
        self.assertEqual(self.r('{{ tpl .Values.s . }}', v), "n")
        self.assertEqual(self.r('[{{ .Files.Get "values.yaml" }}{{ .Files.Get "nope" }}]', v), "[]")
        self.assertEqual(self.r('{{ .Chart.Name }}-{{ .Chart.Version }} {{ .Template.Name }}', v),
                         "c-1.2.3 c/templates/t.yaml")
        with self.assertRaisesRegex(TemplateError, "need e"):
            self.r('{{ required "need e" .Values.e }}', v)

    def test_helm_value_semantics(self):
        # missing keys render empty; numbers are float64 as in Helm (1e+06)
        self.assertEqual(self.r("[{{ .Values.nope }}]"), "[]")
        self.assertEqual(self.r("{{ .Values.num }}", {"num": 1000000}), "1e+06")
        with self.assertRaisesRegex(TemplateError, "env"):
            self.r('{{ env "HOME" }}')  # Helm removes env and expandenv

    def test_values_files_coalesce(self):
        chart = {"a": {"b": 1, "c": 2}, "l": [1, 2]}
        with tempfile.TemporaryDirectory() as d:
            os.mkdir(os.path.join(d, "templates"))
            for name, body in (("Chart.yaml", "apiVersion: v2\nname: c\nversion: 1.0.0\n"),
                               ("values.yaml", yaml.safe_dump(chart)),
                               ("templates/t.yaml", "{{ toJson .Values }}")):
                with open(os.path.join(d, name), "w") as f:
                    f.write(body)
            got = json.loads(helm_template(d, {"a": {"c": None, "d": 3}, "l": [9]})["c/templates/t.yaml"])
        self.assertEqual(got, {"a": {"b": 1, "d": 3}, "l": [9]})


def review(obj, op="CREATE"):
    """The answer of the real binary (WH_BINARY) to an AdmissionReview of obj."""
    kind = obj["kind"]
    group, res = ("", "pods") if kind == "Pod" else ("ray.io", "rayclusters")
    rv = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
          "request": {"uid": "1", "kind": {"group": group, "version": "v1", "kind": kind},
                      "resource": {"group": group, "version": "v1", "resource": res},
                      "namespace": "default", "operation": op, "object": obj, "oldObject": None,
                      "dryRun": False}}
    p = subprocess.run([os.environ["WH_BINARY"], "review", "-"], input=json.dumps(rv), text=True,
                       capture_output=True, timeout=60)
    if p.returncode:
        raise AssertionError(p.stderr)
    return json.loads(p.stdout)["response"]


def tpu_container(name="ray-worker", where="limits", chips="4"):
    return {"name": name, "image": "rayproject/ray:2.52.0",
            "resources": {where: {"cpu": "1", "google.com/tpu": chips}}}


def cpu_container(name="ray-worker"):
    return {"name": name, "image": "rayproject/ray:2.52.0", "resources": {"limits": {"cpu": "1"}}}


def kuberay_pod(node_type, containers, cluster="rc", group="g"):
    labels = {"app.kubernetes.io/name": "kuberay", "app.kubernetes.io/created-by": "kuberay-operator",
              "ray.io/node-type": node_type, "ray.io/cluster": cluster}
    if node_type == "worker":
        labels["ray.io/group"] = group
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"generateName": "%s-%s-" % (cluster, node_type), "namespace": "default",
                         "labels": labels},
            "spec": {"containers": containers,
                     "nodeSelector": {"cloud.google.com/gke-tpu-accelerator": "tpu-v6e-slice",
                                      "cloud.google.com/gke-tpu-topology": "2x2"}}}


def raycluster(groups):
    return {"apiVersion": "ray.io/v1", "kind": "RayCluster",
            "metadata": {"name": "rc", "namespace": "default"},
            "spec": {"headGroupSpec": {"template": {"spec": {"containers": [cpu_container("head")]}}},
                     "workerGroupSpecs": groups}}


def group(containers, name="g", hosts=1, topo="2x2"):
    return {"groupName": name, "replicas": 1, "numOfHosts": hosts,
            "template": {"spec": {"containers": containers,
                                  "nodeSelector": {"cloud.google.com/gke-tpu-accelerator": "tpu-v6e-slice",
                                                   "cloud.google.com/gke-tpu-topology": topo}}}}


class Upgrade(unittest.TestCase):
    """What an upgrade from the reference's chart (0.3.1) needs of this one
    (issue 23): a version above it, the Kubernetes version it needs stated,
    the reference's Service label, a warning where replicas: 1 drops HA."""

    def test_version_above_the_reference(self):
        v = tuple(int(x) for x in chart_meta()["version"].split("."))
        self.assertGreater(v, (0, 3, 1))

    def test_kube_version_stated(self):
        self.assertEqual(chart_meta()["kubeVersion"], ">=1.26.0-0")
        with self.assertRaisesRegex(TemplateError, "incompatible with Kubernetes v1.25"):
            render(kube="v1.25.9")
        objs, _ = render(kube="v1.26.0")
        self.assertEqual(dl.check_install(objs), [])

    def test_service_keeps_reference_label(self):
        objs, _ = render()
        svc = dl.find(objs, "Service", dl.NAME)[0]
        self.assertEqual(svc["metadata"]["labels"]["app"], "kuberay-tpu-webhook")
        self.assertEqual(svc["spec"]["selector"], {"app": "kuberay-tpu-webhook"})

    def test_single_replica_warns(self):
        _, notes = render(tv(deployment={"replicas": 1}))
        self.assertIn("WARNING: tpuWebhook.deployment.replicas is 1", notes)
        self.assertIn("no\nPodDisruptionBudget", notes)
        _, notes = render()
        self.assertNotIn("WARNING", notes)


# Google's image, as the reference chart and README name it (copied into
# tests/fixtures/reference-chart/values.yaml with its origin).
REFERENCE_IMAGE = "us-docker.pkg.dev/ai-on-gke/kuberay-tpu-webhook/tpu-webhook"
REFERENCE_VALUES = os.path.join(dl.ROOT, "tests", "fixtures", "reference-chart", "values.yaml")
# The one override docs/deploy.md ("Upgrading from kuberay-tpu-webhook")
# tells an upgrading user to add to the reference's values file.
OUR_IMAGE = {"repository": "registry.example.com/tpu-webhook", "tag": "0.1.0"}
# ... and the Namespace the reference's release holds, which Helm would
# otherwise delete on the upgrade.
KEEP_NS = {"create": True}


def flat(v, path=""):
    """{path: leaf} of a parsed object (lists indexed), for diffs."""
    if isinstance(v, dict) and v:
        out = {}
        for k in v:
            out.update(flat(v[k], "%s.%s" % (path, k) if path else k))
        return out
    if isinstance(v, list) and v:
        out = {}
        for i, x in enumerate(v):
            out.update(flat(x, "%s[%d]" % (path, i)))
        return out
    return {path: v}


def by_key(objs):
    return {(o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"]): o for o in objs}


class UpgradeFromReference(unittest.TestCase):
    """An upgrade from the reference chart (issue 23, item 5): its image is
    refused with the fix named, and its own values file plus the one
    documented override (the image) renders a valid install that differs
    from a fresh one only where docs/deploy.md says."""

    def test_reference_image_refused(self):
        mirror = "mirror.example.com/" + REFERENCE_IMAGE[len("us-docker.pkg.dev/"):]
        for repo in (REFERENCE_IMAGE, REFERENCE_IMAGE + "/", mirror):
            with self.subTest(repo=repo):
                with self.assertRaises(TemplateError) as cm:
                    render(tv(image={"repository": repo, "tag": "v1.4.0-gke.3"}))
                msg = str(cm.exception)
                self.assertIn("tpuWebhook.image.repository is %s," % repo.rstrip("/"), msg)
                self.assertIn("does not take this chart's flags", msg)
                self.assertIn("set tpuWebhook.image.repository (and tpuWebhook.image.tag) to a "
                              "tpu-webhook image built from this repository's Dockerfile", msg)
        # The reference's values file as it is names the reference's image.
        with self.assertRaisesRegex(TemplateError, "tpuWebhook.image.repository is " + re.escape(REFERENCE_IMAGE)):
            render(files=[REFERENCE_VALUES])

    def test_this_projects_image_renders(self):
        for image, want in (({}, "tpu-webhook:" + chart_meta()["appVersion"]),
                            (OUR_IMAGE, "registry.example.com/tpu-webhook:0.1.0"),
                            ({"repository": "us-docker.pkg.dev/acme/tpu-webhook", "tag": "1"},
                             "us-docker.pkg.dev/acme/tpu-webhook:1")):
            with self.subTest(image=image):
                objs, _ = render(tv(image=image) if image else None)
                c = deployment(objs)["spec"]["template"]["spec"]["containers"][0]
                self.assertEqual(c["image"], want)

    def test_reference_values_with_the_image_override(self):
        with open(REFERENCE_VALUES) as f:
            ref = yaml.safe_load(f)["tpuWebhook"]
        self.assertEqual(ref["image"]["repository"], REFERENCE_IMAGE)  # the fixture is the reference's
        up, up_notes = render(tv(image=OUR_IMAGE, namespace=KEEP_NS), files=[REFERENCE_VALUES], kube="v1.26.0")
        self.assertEqual(dl.schema_errors(up), [])
        self.assertEqual(dl.check_install(up), [])
        fresh, fresh_notes = render(tv(image=OUR_IMAGE), kube="v1.26.0")
        a, b = by_key(up), by_key(fresh)
        # The reference's release holds the Namespace: the upgrade keeps it
        # (a fresh install expects it to exist).
        self.assertEqual(set(a) - set(b), {("Namespace", "", "ray-system")})
        del a[("Namespace", "", "ray-system")]
        # Only replicas: 1 differs: no PodDisruptionBudget, one replica.
        self.assertEqual(set(b) - set(a), {("PodDisruptionBudget", "ray-system", dl.NAME)})
        diffs = {}
        for k in a:
            fa, fb = flat(a[k]), flat(b[k])
            for p in set(fa) | set(fb):
                if fa.get(p, "<absent>") != fb.get(p, "<absent>"):
                    diffs[(k[0], p)] = (fa.get(p, "<absent>"), fb.get(p, "<absent>"))
        self.assertEqual(diffs, {("Deployment", "spec.replicas"): (1, 2)})
        # Everything else the reference's values set is kept as it meant.
        d = deployment(up)
        c = d["spec"]["template"]["spec"]["containers"][0]
        self.assertIn("--v=%d" % ref["deployment"]["verbosity"], c["args"])
        self.assertIn("--bind-address=:%d" % ref["deployment"]["bindPort"], c["args"])
        cert = dl.find(up, "Certificate", "kuberay-tpu-webhook-certs")[0]["spec"]
        self.assertEqual((cert["duration"], cert["renewBefore"]), (ref["cert"]["duration"], ref["cert"]["renewBefore"]))
        self.assertIn("WARNING: tpuWebhook.deployment.replicas is 1", up_notes)
        self.assertNotIn("WARNING", fresh_notes)
        # The documented fix for the warning removes the last difference.
        up2, _ = render(tv(image=OUR_IMAGE, namespace=KEEP_NS, deployment={"replicas": 2}),
                        files=[REFERENCE_VALUES], kube="v1.26.0")
        self.assertEqual([o for o in up2 if o["kind"] != "Namespace"], fresh)

    def test_docs_steps_are_the_tested_ones(self):
        with open(os.path.join(dl.ROOT, "docs", "deploy.md"), encoding="utf-8") as f:
            doc = f.read()
        # A part of the one upgrade chapter, "Upgrade from the reference webhook".
        self.assertEqual(re.findall(r"(?m)^## .*[Uu]pgrad.*$", doc),
                         ["## Upgrade from the reference webhook"])
        chapter = doc.split("\n## Upgrade from the reference webhook\n", 1)[1].split("\n## ", 1)[0]
        sec = chapter.split("\n### Upgrading from kuberay-tpu-webhook\n", 1)[1].split("\n### ", 1)[0]
        cmd = re.search(r"helm upgrade RELEASE deploy/helm/kuberay-tpu-webhook -f values.yaml(.*?)\n\s*```", sec, re.S)
        self.assertIsNotNone(cmd)
        sets = re.findall(r"--set (\S+?)=", cmd.group(1))
        self.assertEqual(sets, ["tpuWebhook.image.repository", "tpuWebhook.image.tag",
                                "tpuWebhook.namespace.create"])
        self.assertEqual(sorted(OUR_IMAGE), ["repository", "tag"])
        self.assertEqual(KEEP_NS, {"create": True})
        self.assertIn("--set tpuWebhook.deployment.replicas=2", sec)
        self.assertIn(REFERENCE_IMAGE, sec)
        self.assertIn("Kubernetes: 1.26 or later", sec)
        self.assertIn("matchConditions and need 1.28", sec)


# An overlay with the opt-in matchConditions component, as docs/deploy.md
# ("matchConditions with kustomize") shows it.
DELETING = {"name": "not-being-deleted",
            "expression": "object == null || !has(object.metadata.deletionTimestamp)"}

PROMETHEUS_PEER = {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}},
                   "podSelector": {"matchLabels": {"app.kubernetes.io/name": "prometheus"}}}


class NetworkPolicy(Chart):
    """tpuWebhook.networkPolicy (issue 35 item 2; docs/deploy.md,
    "NetworkPolicy"): off by default; on, only the given API server ranges
    and Prometheus pods reach the webhook's named port; on without any API
    server source, the render fails (such a policy stops every pod
    creation); the kustomize component is the chart's policy."""

    def policy(self, **np):
        objs, _ = render(tv(networkPolicy=dict(np, enabled=True)))
        self.valid(objs)
        pols = dl.find(objs, "NetworkPolicy")
        self.assertEqual(len(pols), 1)
        return pols[0], objs

    def test_off_by_default(self):
        objs, _ = render()
        self.assertEqual(dl.find(objs, "NetworkPolicy"), [])

    def test_no_api_server_source_fails(self):
        with self.assertRaises(TemplateError) as cm:
            render(tv(networkPolicy={"enabled": True}))
        self.assertIn("apiServerCIDRs", str(cm.exception))

    def test_peers_are_the_values(self):
        pol, objs = self.policy(apiServerCIDRs=["172.16.0.0/28", "10.8.0.0/16"],
                                prometheus=PROMETHEUS_PEER,
                                extraFrom=[{"ipBlock": {"cidr": "10.9.0.0/24"}}])
        self.assertEqual(pol["metadata"]["namespace"], "ray-system")
        spec = pol["spec"]
        self.assertEqual(spec["policyTypes"], ["Ingress"])
        # The webhook's pods, by the Deployment's selector; its named port.
        self.assertEqual(spec["podSelector"]["matchLabels"],
                         deployment(objs)["spec"]["selector"]["matchLabels"])
        self.assertEqual(spec["ingress"][0]["ports"], [{"protocol": "TCP", "port": "https"}])
        self.assertIn("https", [p["name"] for p in container(objs)["ports"]])
        self.assertEqual(spec["ingress"][0]["from"],
                         [{"ipBlock": {"cidr": "172.16.0.0/28"}},
                          {"ipBlock": {"cidr": "10.8.0.0/16"}}, PROMETHEUS_PEER,
                          {"ipBlock": {"cidr": "10.9.0.0/24"}}])
        self.assertEqual(len(spec["ingress"]), 1)
        # Without Prometheus selectors: the API server only.
        pol, _ = self.policy(apiServerCIDRs=["172.16.0.0/28"])
        self.assertEqual(pol["spec"]["ingress"][0]["from"], [{"ipBlock": {"cidr": "172.16.0.0/28"}}])

    def test_kustomize_component_equals_the_chart(self):
        self.assertIsNotNone(dl.kubectl(), "kubectl not found: run scripts/setup.sh")
        pol, _ = self.policy(apiServerCIDRs=["192.0.2.0/24"], prometheus=PROMETHEUS_PEER)
        with tempfile.TemporaryDirectory() as d:
            rel = os.path.relpath(os.path.join(dl.ROOT, "deploy", "kustomize"), d)
            with open(os.path.join(d, "kustomization.yaml"), "w") as f:
                f.write("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
                        "resources:\n  - %s/default\ncomponents:\n"
                        "  - %s/components/network-policy\n" % (rel, rel))
            objs = dl.kustomize_render(d)
        kpol = dl.find(objs, "NetworkPolicy")
        self.assertEqual(len(kpol), 1)
        self.assertEqual(kpol[0]["spec"], pol["spec"])
        self.assertEqual(kpol[0]["metadata"]["namespace"], pol["metadata"]["namespace"])
        self.assertEqual(dl.schema_errors(objs), [])
        plain = dl.kustomize_render(os.path.join(dl.ROOT, "deploy", "kustomize", "default"))
        self.assertEqual(dl.find(plain, "NetworkPolicy"), [])


class ClientCA(Chart):
    """tpuWebhook.clientCA (issue 35 item 2; docs/deploy.md, "Client
    certificates"): off by default; with a Secret, the container gets
    --client-ca-file on the Secret's key, mounted read-only; the kustomize
    component renders the same Deployment as the chart."""

    def test_off_by_default(self):
        objs, _ = render()
        c = container(objs)
        self.assertFalse([a for a in c["args"] if "client-ca" in a])
        self.assertNotIn("client-ca", [v["name"] for v in
                                       deployment(objs)["spec"]["template"]["spec"]["volumes"]])

    def test_secret_mounted_and_flag_given(self):
        objs, _ = render(tv(clientCA={"secretName": "apiserver-client-ca", "key": "bundle.pem"}))
        self.valid(objs)
        c = container(objs)
        self.assertIn("--client-ca-file=/etc/kuberay-tpu-webhook/client-ca/bundle.pem", c["args"])
        self.assertIn({"name": "client-ca", "mountPath": "/etc/kuberay-tpu-webhook/client-ca",
                       "readOnly": True}, c["volumeMounts"])
        vols = deployment(objs)["spec"]["template"]["spec"]["volumes"]
        self.assertIn({"name": "client-ca", "secret": {"secretName": "apiserver-client-ca",
                                                       "defaultMode": 0o440}}, vols)

    def test_kustomize_component_equals_the_chart(self):
        self.assertIsNotNone(dl.kubectl(), "kubectl not found: run scripts/setup.sh")
        objs, _ = render(tv(clientCA={"secretName": "kuberay-tpu-webhook-client-ca"}))
        with tempfile.TemporaryDirectory() as d:
            rel = os.path.relpath(os.path.join(dl.ROOT, "deploy", "kustomize"), d)
            with open(os.path.join(d, "kustomization.yaml"), "w") as f:
                f.write("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
                        "resources:\n  - %s/default\ncomponents:\n"
                        "  - %s/components/client-ca\n" % (rel, rel))
            kobjs = dl.kustomize_render(d)
        self.assertEqual(dl.schema_errors(kobjs), [])
        kc, hc = container(kobjs), container(objs)
        pick = lambda args: [a for a in args if a.startswith("--client-ca-file")]
        self.assertEqual(pick(kc["args"]), pick(hc["args"]))
        self.assertEqual([m for m in kc["volumeMounts"] if m["name"] == "client-ca"],
                         [m for m in hc["volumeMounts"] if m["name"] == "client-ca"])
        vols = lambda o: [v for v in deployment(o)["spec"]["template"]["spec"]["volumes"]
                          if v["name"] == "client-ca"]
        self.assertEqual(vols(kobjs), vols(objs))
        self.assertEqual(len(vols(objs)), 1)


KUSTOMIZE_OVERLAY = """apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - %(kustomize)s/%(base)s
components:
  - %(kustomize)s/components/match-conditions
"""


class MatchConditions(unittest.TestCase):
    """/mutate and /validate carry matchConditions when the cluster has them
    (Kubernetes 1.28+, .Capabilities, or tpuWebhook.webhook.matchConditions),
    so that only TPU pods and KubeRay worker pods, and only RayClusters with
    a TPU worker group, are sent to the webhook. The CEL is run by
    tests/deploy/cel.py (a subset evaluator; Debian has no CEL package) on
    objects, and every object a condition keeps away is one the webhook
    itself admits unchanged."""

    def hooks(self, **kw):
        objs, _ = render(**kw)
        mwc = dl.find(objs, "MutatingWebhookConfiguration", "kuberay-tpu-mutating-webhook-cfg")[0]
        vwc = dl.find(objs, "ValidatingWebhookConfiguration", "kuberay-tpu-validating-webhook-cfg")[0]
        return mwc["webhooks"][0], vwc["webhooks"][0], objs

    def kustomize_hooks(self, base="default"):
        """The two hooks of deploy/kustomize/<base> with the opt-in component
        components/match-conditions, through an overlay as docs/deploy.md
        shows it."""
        self.assertIsNotNone(dl.kubectl(), "kubectl not found: run scripts/setup.sh")
        with tempfile.TemporaryDirectory() as d:
            # kustomize takes only relative paths to directories outside it.
            rel = os.path.relpath(os.path.join(dl.ROOT, "deploy", "kustomize"), d)
            with open(os.path.join(d, "kustomization.yaml"), "w") as f:
                f.write(KUSTOMIZE_OVERLAY % {"kustomize": rel, "base": base})
            objs = dl.kustomize_render(d)
        mwc = dl.find(objs, "MutatingWebhookConfiguration", "kuberay-tpu-mutating-webhook-cfg")[0]
        vwc = dl.find(objs, "ValidatingWebhookConfiguration", "kuberay-tpu-validating-webhook-cfg")[0]
        return mwc["webhooks"][0], vwc["webhooks"][0], objs

    def sources(self):
        """(what, mutate hook, validate hook) of every install that carries
        matchConditions: the chart on 1.28+, kustomize with the component."""
        m, v, _ = self.hooks()
        out = [("chart", m, v)]
        for base in ("default", "base", "workloads"):
            m, v, _ = self.kustomize_hooks(base)
            out.append(("kustomize " + base, m, v))
        return out

    def test_kustomize_component_equals_the_chart(self):
        # One source of truth: the component's conditions are the chart's,
        # name and CEL, character for character.
        cm, cv, _ = self.hooks()
        for base in ("default", "base", "workloads"):
            with self.subTest(base=base):
                m, v, objs = self.kustomize_hooks(base)
                self.assertEqual(m["matchConditions"], cm["matchConditions"])
                self.assertEqual(v["matchConditions"], cv["matchConditions"])
                plain = dl.kustomize_render(os.path.join(dl.ROOT, "deploy", "kustomize", base))
                # The component adds matchConditions and nothing else.
                for o in objs:
                    for w in o.get("webhooks") or []:
                        if w["name"] in (m["name"], v["name"]):
                            w.pop("matchConditions")
                self.assertEqual(objs, plain)
                self.assertEqual(dl.check_install(objs, cert_manager=(base != "base")), [])
        # Without the component kustomize renders none on these two.
        for base in ("default", "base"):
            objs = dl.kustomize_render(os.path.join(dl.ROOT, "deploy", "kustomize", base))
            for o in objs:
                for w in o.get("webhooks") or []:
                    self.assertNotIn("matchConditions", w)

    def test_kustomize_component_documented(self):
        with open(os.path.join(dl.ROOT, "docs", "deploy.md"), encoding="utf-8") as f:
            doc = f.read()
        sec = doc.split("\n### matchConditions with kustomize\n", 1)[1].split("\n#", 1)[0]
        block = re.search(r"```yaml\n(.*?)```", sec, re.S).group(1)
        self.assertEqual(yaml.safe_load(block),
                         yaml.safe_load(KUSTOMIZE_OVERLAY % {"kustomize": "deploy/kustomize", "base": "default"}))

    def condition(self, hook):
        """The hook's own condition: the one besides not-being-deleted,
        which every validating hook carries first (test_deleting_skipped)."""
        mc = hook["matchConditions"]
        if hook["clientConfig"]["service"]["path"].startswith("/validate"):
            self.assertEqual(mc[0], DELETING)
            mc = mc[1:]
        self.assertEqual(len(mc), 1)
        return mc[0]["expression"]

    def test_deleting_skipped(self):
        """Issue 35 item 6: every validating hook (RayCluster /validate, the
        two /validate-workload entries; chart and kustomize) skips an object
        that carries a deletionTimestamp, so a finalizer removal never
        waits on the webhook; below 1.28 /validate carries no condition
        (the hang stays, docs/deploy.md, "Deletions")."""
        import cel
        hooks = [(what, v) for what, _, v in self.sources()]
        objs, _ = render(tv(workloads={"enabled": True}))
        hooks += [("chart " + w["name"], w) for w in
                  dl.find(objs, "ValidatingWebhookConfiguration", "tpu-webhook-workload-validating-cfg")[0]
                  ["webhooks"]]
        kobjs = dl.kustomize_render(os.path.join(dl.ROOT, "deploy", "kustomize", "workloads"))
        hooks += [("kustomize " + w["name"], w) for w in
                  dl.find(kobjs, "ValidatingWebhookConfiguration", "tpu-webhook-workload-validating-cfg")[0]
                  ["webhooks"]]
        self.assertEqual(len(hooks), 8)
        live = raycluster([group([tpu_container()])])
        going = copy.deepcopy(live)
        going["metadata"]["deletionTimestamp"] = "2026-12-07T14:00:00Z"
        going["metadata"]["finalizers"] = []
        for what, h in hooks:
            with self.subTest(hook=what):
                self.assertEqual(h["matchConditions"][0], DELETING)
                self.assertEqual([r["operations"] for r in h["rules"]],
                                 [["CREATE", "UPDATE"]] * len(h["rules"]))
                expr = DELETING["expression"]
                self.assertIs(cel.evaluate(expr, object=live, oldObject=live), True)
                self.assertIs(cel.evaluate(expr, object=going, oldObject=live), False)
                self.assertIs(cel.evaluate(expr, object=None, oldObject=live), True)  # DELETE
        # All conditions must hold for the call: the object being deleted
        # skips /validate whatever the other condition says.
        for what, v in hooks[:4]:
            with self.subTest(hook=what, all=True):
                self.assertFalse(all(cel.evaluate(c["expression"], object=going, oldObject=live)
                                     for c in v["matchConditions"]))
                self.assertTrue(all(cel.evaluate(c["expression"], object=live, oldObject=live)
                                    for c in v["matchConditions"]))
        _, v, _ = self.hooks(kube="v1.27.9")
        self.assertNotIn("matchConditions", v)

    def test_rendered_for_1_28_and_later_only(self):
        for kube, want in (("v1.30.0", True), ("v1.28.0", True), ("1.29.3-gke.1", True),
                           ("v1.27.9", False), ("v1.26.0", False)):
            with self.subTest(kube=kube):
                m, v, objs = self.hooks(kube=kube)
                self.assertEqual("matchConditions" in m, want)
                self.assertEqual("matchConditions" in v, want)
                self.assertEqual(dl.schema_errors(objs), [])
                self.assertEqual(dl.check_install(objs), [])

    def test_value_overrides_the_version(self):
        m, v, _ = self.hooks(overrides=tv(webhook={"matchConditions": True}), kube="v1.27.0")
        self.assertIn("matchConditions", m)
        m, v, _ = self.hooks(overrides=tv(webhook={"matchConditions": False}))
        self.assertNotIn("matchConditions", m)
        self.assertNotIn("matchConditions", v)
        with self.assertRaisesRegex(TemplateError, "matchConditions is maybe; set it to auto"):
            render(tv(webhook={"matchConditions": "maybe"}))

    def test_workloads_refused_below_1_28(self):
        # The workload webhooks always carry matchConditions: below 1.28 the
        # chart fails with the value, the version and the fix, instead of
        # an object the API server refuses or silently changes.
        for kube in ("v1.26.0", "v1.27.9", "1.27.3-gke.100"):
            with self.subTest(kube=kube):
                with self.assertRaises(TemplateError) as cm:
                    render(tv(workloads={"enabled": True}), kube=kube)
                msg = str(cm.exception)
                self.assertIn("tpuWebhook.workloads.enabled is true, but the cluster is Kubernetes v%s"
                              % kube.lstrip("v"), msg)
                self.assertIn("need Kubernetes 1.28 or later", msg)
                self.assertIn("set tpuWebhook.workloads.enabled=false", msg)
                # Without the workloads the same cluster renders.
                objs, _ = render(kube=kube)
                self.assertEqual(dl.check_install(objs), [])
        for kube in ("v1.28.0", "1.28.1-gke.1", "v1.30.0", "v1.33.2"):
            with self.subTest(kube=kube):
                objs, _ = render(tv(workloads={"enabled": True}), kube=kube)
                self.assertEqual(dl.check_install(objs), [])
                names = [o["metadata"]["name"] for o in objs if "webhooks" in o]
                self.assertIn("tpu-webhook-workload-mutating-cfg", names)
                self.assertIn("tpu-webhook-workload-validating-cfg", names)
        # The documented escape for a 1.27 API server with the feature gate.
        objs, _ = render(tv(workloads={"enabled": True}, webhook={"matchConditions": True}), kube="v1.27.9")
        self.assertEqual(dl.check_install(objs), [])

    def test_every_expression_parses(self):
        import cel
        objs, _ = render(tv(workloads={"enabled": True}))
        n = 0
        for o in objs:
            for w in o.get("webhooks") or []:
                for c in w.get("matchConditions") or []:
                    cel.parse(c["expression"])
                    n += 1
        # /mutate, /validate (2: not-being-deleted), the two /mutate-workload
        # entries and the two /validate-workload entries (not-being-deleted)
        self.assertEqual(n, 7)
        with self.assertRaises(cel.CelSyntaxError):
            cel.parse("object.spec.containers.exists(c, c.size() > 1)")

    def test_validate_condition(self):
        import cel
        exprs = [(what, self.condition(v)) for what, _, v in self.sources()]
        tpu, cpu = tpu_container(), cpu_container()
        cases = [
            ("TPU group", raycluster([group([tpu])]), True),
            ("TPU by requests", raycluster([group([tpu_container(where="requests")])]), True),
            ("CPU group then TPU group", raycluster([group([cpu], "cpu"), group([tpu])]), True),
            ("CPU only", raycluster([group([cpu])]), False),
            ("no worker groups", raycluster([]), False),
            ("workerGroupSpecs absent", {"apiVersion": "ray.io/v1", "kind": "RayCluster",
                                         "metadata": {"name": "rc"}, "spec": {}}, False),
            ("no spec", {"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": "rc"}},
             False),
            ("container without resources", raycluster([group([{"name": "w", "image": "x"}])]), False),
        ]
        # Refused by the RayCluster CRD's schema (a pod template needs its
        # containers) before validating webhooks run; the condition must
        # still not fail on them.
        schema_refused = [("group without template", raycluster([{"groupName": "g"}]), False),
                          ("empty containers", raycluster([group([])]), False)]
        for f in sorted(os.listdir(os.path.join(dl.ROOT, "tests", "fixtures", "kuberay-samples"))):
            if f.endswith(".yaml"):
                with open(os.path.join(dl.ROOT, "tests", "fixtures", "kuberay-samples", f)) as fh:
                    for doc in yaml.safe_load_all(fh):
                        if doc and doc.get("kind") == "RayCluster":
                            cases.append((f, doc, True))
        for source, expr in exprs:
            for what, obj, want in schema_refused:
                with self.subTest(source=source, what=what):
                    self.assertIs(cel.evaluate(expr, object=obj, oldObject=None), want)
        for what, obj, want in cases:
            for source, expr in exprs:
                with self.subTest(source=source, what=what):
                    self.assertIs(cel.evaluate(expr, object=obj, oldObject=None), want)
            if not want:
                with self.subTest(what=what, review=True):
                    for op in ("CREATE", "UPDATE"):
                        r = review(obj, op)
                        self.assertTrue(r["allowed"], r)
                        self.assertNotIn("patch", r)

    def test_mutate_condition(self):
        import cel
        exprs = [(what, self.condition(m)) for what, m, _ in self.sources()]
        cases = [
            ("TPU worker", kuberay_pod("worker", [tpu_container()]), True),
            ("TPU worker by requests", kuberay_pod("worker", [tpu_container(where="requests")]), True),
            ("TPU in a second container", kuberay_pod("worker", [cpu_container(), tpu_container("t")]),
             True),
            ("CPU worker", kuberay_pod("worker", [cpu_container()]), True),
            ("head", kuberay_pod("head", [cpu_container("head")]), False),
            ("TPU head", kuberay_pod("head", [tpu_container("head")]), True),
            ("no labels, no TPU", {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                                   "spec": {"containers": [cpu_container()]}}, False),
            ("container without resources", kuberay_pod("head", [{"name": "h", "image": "x"}]), False),
        ]
        for what, obj, want in cases:
            for source, expr in exprs:
                with self.subTest(source=source, what=what):
                    self.assertIs(cel.evaluate(expr, object=obj, oldObject=None), want)
            if not want:
                with self.subTest(what=what, review=True):
                    r = review(obj)
                    self.assertTrue(r["allowed"], r)
                    self.assertNotIn("patch", r)


if __name__ == "__main__":
    unittest.main(verbosity=2)
