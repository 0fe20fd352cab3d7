"""The kustomize manifests (deploy/kustomize/{base,default}) and certs/:
every file parses, every kustomization renders offline with kubectl, and the
rendered objects form a consistent webhook install (deploylib.check_install).
"""
import copy
import glob
import os
import re
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import deploylib as dl  # noqa: E402

BASE = os.path.join(dl.ROOT, "deploy", "kustomize", "base")
DEFAULT = os.path.join(dl.ROOT, "deploy", "kustomize", "default")


def key(o):
    return (o["kind"], o["metadata"]["name"], o["metadata"].get("namespace"))


WORKLOADS = os.path.join(dl.ROOT, "deploy", "kustomize", "workloads")
WORKLOAD_CFGS = {("MutatingWebhookConfiguration", "tpu-webhook-workload-mutating-cfg", None),
                 ("ValidatingWebhookConfiguration", "tpu-webhook-workload-validating-cfg", None)}


def schema_errors_but_match_conditions(objs):
    """dl.schema_errors, except matchConditions (Kubernetes 1.28+), which
    Debian 12's python3-kubernetes (22.6) predates; check_workload_entries
    checks its shape."""
    return [e for e in dl.schema_errors(objs) if "unknown field 'matchConditions'" not in e]


def check_workload_entries(test, objs, ns="ray-system"):
    """The opt-in entries of docs/workloads.md: two per path (namespace
    opted in / object opted in), never system namespaces, the webhook's own
    or KubeRay pods; pods only when they request TPUs."""
    with open(os.path.join(dl.ROOT, "src", "shell", "sys", "routes.c")) as f:
        served = f.read()  # the route table (wh_routes)
    cfgs = [o for o in objs if "workload" in o["metadata"]["name"]]
    test.assertEqual(len(cfgs), 2)
    test.assertEqual(dl.side_effect_errors(cfgs), [])
    for cfg in cfgs:
        hooks = cfg["webhooks"]
        test.assertEqual(len(hooks), 2)
        ns_sel = [h["namespaceSelector"]["matchExpressions"] for h in hooks]
        test.assertIn({"key": "tpu-webhook/inject", "operator": "In", "values": ["enabled"]}, ns_sel[0])
        test.assertIn({"key": "tpu-webhook/inject", "operator": "DoesNotExist"}, ns_sel[1])
        obj_sel = [h["objectSelector"]["matchExpressions"] for h in hooks]
        test.assertIn({"key": "tpu-webhook/inject", "operator": "NotIn", "values": ["disabled"]}, obj_sel[0])
        test.assertIn({"key": "tpu-webhook/inject", "operator": "In", "values": ["enabled"]}, obj_sel[1])
        for h in hooks:
            excluded = [e for e in h["namespaceSelector"]["matchExpressions"]
                        if e["key"] == "kubernetes.io/metadata.name"][0]
            test.assertEqual(excluded["operator"], "NotIn")
            test.assertEqual(set(excluded["values"]), {"kube-system", "kube-node-lease", ns})
            test.assertIn({"key": "app.kubernetes.io/name", "operator": "NotIn", "values": ["kuberay"]},
                          h["objectSelector"]["matchExpressions"])
            path = h["clientConfig"]["service"]["path"]
            test.assertIn('"%s"' % path, served, "the server does not serve %s" % path)
            test.assertEqual(h["clientConfig"]["service"]["namespace"], ns)
            test.assertTrue(h["name"].endswith(".kuberay-tpu-webhook.%s.svc" % ns), h["name"])
            if cfg["kind"] == "MutatingWebhookConfiguration":
                test.assertEqual(path, "/mutate-workload")
                test.assertEqual(h["rules"][0]["resources"], ["pods"])
                mc = h["matchConditions"]
                test.assertEqual([sorted(c) for c in mc], [["expression", "name"]])
                test.assertIn("'google.com/tpu' in c.resources.limits", mc[0]["expression"])
                test.assertIn("'google.com/tpu' in c.resources.requests", mc[0]["expression"])
            else:
                test.assertEqual(path, "/validate-workload")
                test.assertEqual(sorted(r["resources"][0] for r in h["rules"]),
                                 ["jobs", "jobsets", "leaderworkersets"])
                for r in h["rules"]:
                    test.assertEqual(r["operations"], ["CREATE", "UPDATE"])


class ManifestsParse(unittest.TestCase):
    def test_workloads_overlay(self):
        self.assertIsNotNone(dl.kubectl(), "kubectl not found: run scripts/setup.sh")
        objs = dl.kustomize_render(WORKLOADS)
        self.assertEqual(dl.check_install(objs, cert_manager=True), [])
        self.assertEqual(schema_errors_but_match_conditions(objs), [])
        extra = {key(o) for o in objs} - {key(o) for o in dl.kustomize_render(DEFAULT)}
        self.assertEqual(extra, WORKLOAD_CFGS)
        check_workload_entries(self, objs)
        for o in objs:
            if "workload" in o["metadata"]["name"]:
                self.assertEqual(o["metadata"]["annotations"],
                                 {"cert-manager.io/inject-ca-from": "ray-system/kuberay-tpu-webhook-ca"})

    def test_every_manifest_parses(self):
        files = [f for f in glob.glob(os.path.join(dl.ROOT, "deploy", "kustomize", "**", "*.yaml"), recursive=True)
                 + glob.glob(os.path.join(dl.ROOT, "certs", "*.yaml"))]
        self.assertGreaterEqual(len(files), 10)
        for f in files:
            with self.subTest(file=f):
                docs = dl.load_file(f)
                self.assertTrue(docs, "%s has no document" % f)

    def test_patch_files_hold_one_document(self):
        # the kustomize v5.0 of kubectl 1.27-1.30 fails on a patches file
        # of several documents ("unable to parse SM or JSON patch"), so one
        # patch per file, in every kustomization and component; an inline
        # patch (the client-ca component's JSON 6902 list, which appends to
        # args, a list a strategic merge would replace) is one document too.
        n = 0
        for k in glob.glob(os.path.join(dl.ROOT, "deploy", "kustomize", "**", "kustomization.yaml"),
                           recursive=True) + [os.path.join(dl.ROOT, "certs", "kustomization.yaml")]:
            kdir = os.path.dirname(k)
            for entry in dl.load_file(k)[0].get("patches") or []:
                with self.subTest(kustomization=k, patch=entry):
                    if "patch" in entry:
                        self.assertEqual(sorted(entry), ["patch", "target"])
                        docs = [d for d in dl.yaml.safe_load_all(entry["patch"]) if d is not None]
                        self.assertEqual(len(docs), 1)
                        self.assertIsInstance(docs[0], list)  # JSON 6902 operations
                    else:
                        self.assertEqual(sorted(entry), ["path"])
                        self.assertEqual(len(dl.load_file(os.path.join(kdir, entry["path"]))), 1)
                    n += 1
        self.assertGreaterEqual(n, 5)  # default's two, match-conditions' two, prometheus-annotations'


class ManifestsKustomize(unittest.TestCase):
    def test_kustomizations_structurally(self):
        # Independent of kubectl: every listed file exists and parses, and the
        # union of resources is a complete install (patches merged by hand).
        for kdir, cm in ((BASE, False), (DEFAULT, True)):
            with self.subTest(kustomization=kdir):
                files = dl.kustomization_files(kdir)
                objs, patches = [], []
                for path, docs, is_patch in files:
                    (patches if is_patch else objs).extend(docs)
                for p in patches:
                    target = dl.find(objs, p["kind"], p["metadata"]["name"])
                    self.assertEqual(len(target), 1, "patch %s targets nothing" % (key(p),))
                    target[0]["metadata"].setdefault("annotations", {}).update(p["metadata"]["annotations"])
                self.assertEqual(dl.check_install(objs, cert_manager=cm), [])

    def test_kustomize_renders_offline(self):
        self.assertIsNotNone(dl.kubectl(), "no kubectl 1.21+ found: run scripts/setup.sh")
        rendered = {}
        for kdir, cm in ((BASE, False), (DEFAULT, True)):
            with self.subTest(kustomization=kdir):
                objs = dl.kustomize_render(kdir)
                rendered[kdir] = objs
                self.assertEqual(dl.check_install(objs, cert_manager=cm), [])
                self.assertEqual(dl.schema_errors(objs), [])
                keys = [key(o) for o in objs]
                self.assertEqual(len(keys), len(set(keys)), "duplicate objects")
        extra = {key(o) for o in rendered[DEFAULT]} - {key(o) for o in rendered[BASE]}
        self.assertEqual(extra, {("Issuer", "selfsigned-issuer", "ray-system"),
                                 ("Issuer", "kuberay-tpu-webhook-ca-issuer", "ray-system"),
                                 ("Certificate", dl.CA_CERT, "ray-system"),
                                 ("Certificate", dl.SECRET, "ray-system")})


class ManifestsChecker(unittest.TestCase):
    def test_checker_catches_breakage(self):
        objs = dl.kustomize_render(DEFAULT) if dl.kubectl() else None
        self.assertIsNotNone(objs, "kubectl not found: run scripts/setup.sh")
        for desc, broken in dl.broken_copies(objs):
            with self.subTest(broken=desc):
                self.assertNotEqual(dl.check_install(broken, cert_manager=True), [], desc)
        # A misspelt field is caught by the schema check.
        broken = dl.find(copy.deepcopy(objs), "Deployment")[0]
        broken["spec"]["template"]["spec"]["containers"][0]["securityContext"]["readOnlyRootFileSystem"] = True
        self.assertNotEqual(dl.schema_errors([broken]), [])
        # Without cert-manager the annotation is a dangling reference.
        self.assertNotEqual(dl.check_install(objs, cert_manager=False), [])

    def test_default_overlay_only_adds_certificates(self):
        # The base must not depend on cert-manager (it is the install path for
        # clusters without it), and must carry no stale caBundle.
        for path, docs, _ in dl.kustomization_files(BASE):
            for o in docs:
                self.assertNotIn("cert-manager.io", o["apiVersion"], path)
                self.assertNotIn("annotations", o["metadata"], "%s: %s" % (path, key(o)))
                for w in o.get("webhooks", []):
                    self.assertNotIn("caBundle", w.get("clientConfig", {}), path)

    def test_doc_label_selectors_find_every_kind(self):
        # docs/deploy.md's `kubectl -n ray-system get|delete KIND,KIND -l SEL` lines:
        # each listed kind of the install carries the label, else the command
        # silently shows or deletes nothing of it. Endpoints take their
        # Service's labels; pods the Deployment template's.
        objs = dl.kustomize_render(DEFAULT) if dl.kubectl() else None
        self.assertIsNotNone(objs, "kubectl not found: run scripts/setup.sh")
        kinds = {"deployment": ["Deployment"], "pods": ["Pod"], "service": ["Service"],
                 "endpoints": ["Service"], "pdb": ["PodDisruptionBudget"],
                 "serviceaccount": ["ServiceAccount"], "certificate": ["Certificate"],
                 "issuer": ["Issuer"], "role": ["Role"], "rolebinding": ["RoleBinding"],
                 # optional components, not in the default overlay
                 "servicemonitor": [], "prometheusrule": []}
        with open(os.path.join(dl.ROOT, "docs", "deploy.md"), encoding="utf-8") as f:
            lines = [ln for ln in f if re.search(r"kubectl -n ray-system .*\b(get|delete) \S+ -l \S+", ln)]
        self.assertGreaterEqual(len(lines), 2)
        for ln in lines:
            m = re.search(r"\b(?:get|delete) (\S+) -l (\S+)=(\S+)", ln)
            with self.subTest(line=ln.strip()):
                self.assertIsNotNone(m, "unparsed selector line")
                lkey, lval = m.group(2), m.group(3)
                for k in m.group(1).split(","):
                    self.assertIn(k, kinds, "kind %s unknown to this test" % k)
                    for kind in kinds[k]:
                        if kind == "Pod":
                            found = [d["spec"]["template"]["metadata"].get("labels", {})
                                     for d in dl.find(objs, "Deployment")]
                        else:
                            found = [o["metadata"].get("labels", {}) for o in dl.find(objs, kind)]
                        self.assertTrue(found, "no %s in the install" % kind)
                        for labels in found:
                            self.assertEqual(labels.get(lkey), lval,
                                             "%s lacks label %s=%s" % (kind, lkey, lval))


if __name__ == "__main__":
    unittest.main(verbosity=2)
