"""The upgrade from the reference webhook installed with its kubectl
manifests (docs/deploy.md, "Upgrade from the reference webhook", "Installed
with `kubectl apply`"; issue 23, item 5), played with the real kubectl
against tests/deploy/applyfake.py: the reference's own `deployments/` and
`certs/` (tests/fixtures/reference-deployments, with their origin) applied as
its Makefile does, then the documented `kubectl apply -k`. kubectl's
three-way merge (its last-applied-configuration) decides what is kept and
what removed, as on a cluster. Checked on the result: the objects are a
fresh install's, field for field; every object passes the API schemas and
deploylib.check_install (names, selectors, the Secret and CA chain, the
flags this image knows); exactly one mutating and one validating webhook
are called for a KubeRay TPU pod and a RayCluster, evaluated from every
webhook configuration stored (a second one would inject twice).
MoveToHelm: the documented marking loops before `helm install` over a
kubectl install cover every object Helm would otherwise refuse to adopt.
"""
import json
import os
import re
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import applyfake  # noqa: E402
import deploylib as dl  # noqa: E402

REF = os.path.join(dl.ROOT, "tests", "fixtures", "reference-deployments")
KUSTOMIZE = os.path.join(dl.ROOT, "deploy", "kustomize")
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


def key(o):
    return (o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"])


def selector_matches(sel, labels):
    """A metav1.LabelSelector (matchLabels, matchExpressions); absent or {}
    matches everything, as for webhooks."""
    sel = sel or {}
    if not dl.labels_match(sel.get("matchLabels"), labels):
        return False
    for e in sel.get("matchExpressions") or []:
        k, op, vals = e["key"], e["operator"], e.get("values") or []
        if op == "In" and labels.get(k) not in vals:
            return False
        if op == "NotIn" and k in labels and labels[k] in vals:
            return False
        if op == "Exists" and k not in labels:
            return False
        if op == "DoesNotExist" and k in labels:
            return False
    return True


def rule_matches(rule, op, group, version, resource):
    def has(field, v):
        return "*" in rule.get(field, []) or v in rule.get(field, [])
    return (has("operations", op) and has("apiGroups", group) and has("apiVersions", version)
            and has("resources", resource))


def called(objs, kind, op, gvr, ns_labels, obj_labels):
    """(configuration, webhook, path) of every webhook of kind that the API
    server calls for this request (rules, namespaceSelector, objectSelector;
    matchConditions are not evaluated: they only narrow further)."""
    out = []
    for cfg in dl.find(objs, kind):
        for w in cfg.get("webhooks") or []:
            if (any(rule_matches(r, op, *gvr) for r in w.get("rules") or [])
                    and selector_matches(w.get("namespaceSelector"), ns_labels)
                    and selector_matches(w.get("objectSelector"), obj_labels)):
                svc = w["clientConfig"]["service"]
                out.append((cfg["metadata"]["name"], w["name"],
                            "%s/%s%s" % (svc["namespace"], svc["name"], svc.get("path", ""))))
    return out


NS = {"kubernetes.io/metadata.name": "team-a"}
KUBERAY_TPU_POD = {"app.kubernetes.io/name": "kuberay", "app.kubernetes.io/created-by": "kuberay-operator",
                   "ray.io/cluster": "rc", "ray.io/group": "tpu-group", "ray.io/node-type": "worker"}
POD = ("", "v1", "pods")
RAYCLUSTER = ("ray.io", "v1", "rayclusters")


def install(api, how):
    """Apply one of the installs: "reference" (its Makefile's deploy and
    deploy-cert) or a kustomization of this repository."""
    if how == "reference":
        api.kubectl("apply", "--validate=false", "-f", os.path.join(REF, "deployments") + "/")
        api.kubectl("apply", "--validate=false", "-f", os.path.join(REF, "certs") + "/")
    else:
        # Schema validation needs the server's OpenAPI, which the fake does
        # not serve; dl.schema_errors checks the result instead.
        api.kubectl("apply", "--validate=false", "-k", how)


def play(*steps):
    """The stored objects after the steps, in order, on an empty cluster."""
    kubectl = dl.kubectl()
    if kubectl is None:
        raise AssertionError("kubectl not found: run scripts/setup.sh")
    with applyfake.FakeAPIServer(kubectl) as api:
        for s in steps:
            install(api, s)
        return api.store.objects()


def documented_command():
    """The kustomization docs/deploy.md tells a kubectl-installed reference
    to apply."""
    with open(os.path.join(dl.ROOT, "docs", "deploy.md"), encoding="utf-8") as f:
        doc = f.read()
    sec = doc.split("\n## Upgrade from the reference webhook\n", 1)[1].split("\n## ", 1)[0]
    item = sec.split("* **Installed with `kubectl apply`**", 1)[1].split("\n* **", 1)[0]
    m = re.search(r"`kubectl apply -k (deploy/kustomize/\w+)`", item)
    if m is None:
        raise AssertionError("docs/deploy.md: no `kubectl apply -k` in the kubectl-apply upgrade step")
    return item, os.path.join(dl.ROOT, m.group(1))


class UpgradeFromManifests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.doc, cls.target = documented_command()
        cls.reference = play("reference")
        cls.upgraded = play("reference", cls.target)
        cls.fresh = play(cls.target)

    def test_fixtures_are_the_reference(self):
        # The four files of deployments/ and certs/cert.yaml, as copied.
        self.assertEqual(sorted(os.listdir(os.path.join(REF, "deployments"))),
                         ["deployment.yaml", "mutating-webhook-cfg.yaml", "validating-webhook-cfg.yaml",
                          "webhook-svc.yaml"])
        objs = self.reference
        dep = dl.find(objs, "Deployment", dl.NAME)[0]
        self.assertIn("ai-on-gke/kuberay-tpu-webhook/tpu-webhook", dep["spec"]["template"]["spec"]
                      ["containers"][0]["image"])
        self.assertEqual(len(objs), 10)
        for o in dl.find(objs, "MutatingWebhookConfiguration") + dl.find(objs, "ValidatingWebhookConfiguration"):
            self.assertEqual(o["metadata"]["annotations"]["cert-manager.io/inject-ca-from"],
                             "ray-system/" + dl.SECRET)  # the self-signed leaf, issue 23

    def test_every_reference_object_is_replaced_in_place(self):
        # Same kind and name: apply updates each, none is left behind as a
        # second copy beside this project's (no --prune needed).
        ours = {key(o) for o in self.fresh}
        self.assertEqual({key(o) for o in self.reference} - ours, set())

    def test_upgrade_equals_a_fresh_install(self):
        # Field for field, last-applied-configuration included: nothing of
        # the reference survives the three-way merge (its image, its probes
        # on /, its Certificate's self-signed issuer, its inject-ca-from).
        a = {key(o): o for o in self.upgraded}
        b = {key(o): o for o in self.fresh}
        self.assertEqual(sorted(a), sorted(b))
        for k in a:
            with self.subTest(object=k):
                self.assertEqual(a[k], b[k])

    def test_upgraded_install_is_valid(self):
        objs = self.upgraded
        self.assertEqual(dl.check_install(objs, cert_manager=True), [])
        self.assertEqual(dl.schema_errors(objs), [])
        dep = dl.find(objs, "Deployment", dl.NAME)[0]
        self.assertEqual(dep["spec"]["selector"], {"matchLabels": {"app": dl.NAME}})  # immutable
        c = dep["spec"]["template"]["spec"]["containers"][0]
        self.assertEqual(c["image"], "tpu-webhook:0.1.0")
        known = dl.server_flags()
        for arg in c["args"]:
            self.assertIn(arg.split("=", 1)[0].lstrip("-"), known, arg)
        svc = dl.find(objs, "Service", dl.NAME)[0]
        self.assertEqual(svc["spec"]["selector"], {"app": dl.NAME})
        self.assertEqual(svc["metadata"]["labels"]["app"], dl.NAME)
        cert = dl.find(objs, "Certificate", dl.SECRET)[0]["spec"]
        self.assertEqual(cert["secretName"], dl.SECRET)
        self.assertEqual(cert["issuerRef"], {"kind": "Issuer", "name": "kuberay-tpu-webhook-ca-issuer"})
        vols = dep["spec"]["template"]["spec"]["volumes"]
        self.assertEqual([v["secret"]["secretName"] for v in vols if "secret" in v], [dl.SECRET])
        for o in dl.find(objs, "MutatingWebhookConfiguration") + dl.find(objs, "ValidatingWebhookConfiguration"):
            self.assertEqual(o["metadata"]["annotations"]["cert-manager.io/inject-ca-from"],
                             "ray-system/" + dl.CA_CERT)
            self.assertIn(LAST_APPLIED, o["metadata"]["annotations"])

    def test_one_webhook_each_for_tpu_pods_and_rayclusters(self):
        for name, objs in (("reference", self.reference), ("upgraded", self.upgraded)):
            with self.subTest(install=name):
                m = called(objs, "MutatingWebhookConfiguration", "CREATE", POD, NS, KUBERAY_TPU_POD)
                self.assertEqual(m, [(dl.MUTATING, "kuberay-tpu-webhook.ray-system.svc",
                                      "ray-system/kuberay-tpu-webhook/mutate")])
                for op in ("CREATE",) + (("UPDATE",) if name == "upgraded" else ()):
                    v = called(objs, "ValidatingWebhookConfiguration", op, RAYCLUSTER, NS, {})
                    self.assertEqual(v, [(dl.VALIDATING, "raycluster-kuberay-tpu-webhook.ray-system.svc",
                                          "ray-system/kuberay-tpu-webhook/validate")])
        # The reference's validating webhook saw CREATE only.
        self.assertEqual(called(self.reference, "ValidatingWebhookConfiguration", "UPDATE", RAYCLUSTER,
                                NS, {}), [])

    def test_a_renamed_configuration_would_inject_twice(self):
        # The check above can fail: this project's configuration under
        # another name, applied over the reference, leaves both calling.
        kubectl = dl.kubectl()
        objs = dl.kustomize_render(self.target)
        for o in dl.find(objs, "MutatingWebhookConfiguration", dl.MUTATING):
            o["metadata"]["name"] = "tpu-webhook-mutating"
        with applyfake.FakeAPIServer(kubectl) as api:
            install(api, "reference")
            path = os.path.join(api.dir.name, "renamed.json")
            with open(path, "w") as f:
                json.dump({"apiVersion": "v1", "kind": "List", "items": objs}, f)
            api.kubectl("apply", "--validate=false", "-f", path)
            got = called(api.store.objects(), "MutatingWebhookConfiguration", "CREATE", POD, NS, KUBERAY_TPU_POD)
        self.assertEqual(len(got), 2, got)

    def test_workloads_overlay_over_the_reference(self):
        objs = play("reference", os.path.join(KUSTOMIZE, "workloads"))
        self.assertEqual(dl.check_install(objs, cert_manager=True), [])
        m = called(objs, "MutatingWebhookConfiguration", "CREATE", POD, NS, KUBERAY_TPU_POD)
        self.assertEqual([x[0] for x in m], [dl.MUTATING])
        jobset_pod = {"jobset.sigs.k8s.io/jobset-name": "js", "tpu-webhook/inject": "enabled"}
        m = called(objs, "MutatingWebhookConfiguration", "CREATE", POD, NS, jobset_pod)
        self.assertEqual([x[2] for x in m], ["ray-system/kuberay-tpu-webhook/mutate-workload"])

    def test_without_cert_manager_the_reference_certificate_must_go(self):
        # The base over the reference: the three-way merge drops the
        # inject-ca-from annotations (the reference's last-applied had them),
        # but the reference's Certificate and Issuer stay (apply never
        # deletes), and cert-manager would go on rewriting the secret the
        # install script fills: docs/deploy.md says to delete them.
        objs = play("reference", os.path.join(KUSTOMIZE, "base"))
        for o in dl.find(objs, "MutatingWebhookConfiguration") + dl.find(objs, "ValidatingWebhookConfiguration"):
            self.assertNotIn("cert-manager.io/inject-ca-from", o["metadata"].get("annotations", {}))
        left = sorted(key(o) for o in objs if o["apiVersion"].startswith("cert-manager.io/"))
        self.assertEqual(left, [("Certificate", "ray-system", dl.SECRET), ("Issuer", "ray-system", "selfsigned-issuer")])
        with open(os.path.join(dl.ROOT, "docs", "deploy.md"), encoding="utf-8") as f:
            doc = f.read()
        self.assertIn("kubectl -n ray-system delete certificate/kuberay-tpu-webhook-certs issuer/selfsigned-issuer",
                      doc)

    def test_docs_name_the_tested_steps(self):
        self.assertEqual(self.target, os.path.join(KUSTOMIZE, "default"))
        self.assertIn("tests/fixtures/reference-deployments", self.doc)
        self.assertIn("tests/deploy/test_upgrade_manifests.py", self.doc)
        self.assertIn("`kubectl apply -f deployments/`", self.doc)


# kubectl's resource names for the kinds the installs hold.
RESOURCE_KIND = {"namespace": "Namespace", "serviceaccount": "ServiceAccount", "clusterrole": "ClusterRole",
                 "clusterrolebinding": "ClusterRoleBinding", "role": "Role", "rolebinding": "RoleBinding",
                 "mutatingwebhookconfiguration": "MutatingWebhookConfiguration",
                 "validatingwebhookconfiguration": "ValidatingWebhookConfiguration",
                 "deployment": "Deployment", "service": "Service", "poddisruptionbudget": "PodDisruptionBudget",
                 "issuer": "Issuer", "certificate": "Certificate"}


def doc_helm_adoption_loops():
    """[(namespaced, {(kind, name)})] of the two marking loops in
    docs/deploy.md ("Installed with `kubectl`, now moving to Helm")."""
    with open(os.path.join(dl.ROOT, "docs", "deploy.md"), encoding="utf-8") as f:
        doc = f.read()
    item = doc.split("* **Installed with `kubectl`, now moving to Helm**", 1)[1].split("\nWhat changes", 1)[0]
    out = []
    for m in re.finditer(r"for o in (.*?); do\n(.*?)\n\s*done", item, re.S):
        names = set()
        for ref in m.group(1).replace("\\", " ").split():
            res, name = ref.split("/", 1)
            names.add((RESOURCE_KIND[res], name.replace("$NS", "ray-system")))
        out.append(("kubectl -n $NS annotate" in m.group(2), names))
    return out


class MoveToHelm(unittest.TestCase):
    """Helm refuses to take over objects it did not create: the documented
    loops must mark every object that the chart renders and the earlier
    install created (the reference's manifests, or this project's
    kustomize), cluster-scoped objects without -n, namespaced with it."""

    def test_marking_loops_cover_what_helm_would_refuse(self):
        import test_helm as th
        loops = doc_helm_adoption_loops()
        self.assertEqual([ns for ns, _ in loops], [False, True])
        marked = loops[0][1] | loops[1][1]
        # Everything the chart can render: the workloads, and the Namespace
        # (namespace.create, off by default; marking it is then harmless).
        chart, _ = th.render(th.tv(workloads={"enabled": True}, namespace={"create": True}))
        rendered = {(o["kind"], o["metadata"]["name"]): o for o in chart}
        for ns, names in loops:
            for k in names:
                with self.subTest(marked=k):
                    self.assertIn(k, rendered, "the loop marks an object the chart does not render")
                    self.assertEqual("namespace" in rendered[k]["metadata"], ns,
                                     "%s is in the wrong loop" % (k,))
        starts = [("reference", play("reference"))]
        for b in ("default", "workloads"):
            starts.append(("kustomize " + b, dl.kustomize_render(os.path.join(KUSTOMIZE, b))))
        for what, objs in starts:
            with self.subTest(installed=what):
                existing = {(o["kind"], o["metadata"]["name"]) for o in objs}
                self.assertEqual((existing & set(rendered)) - marked, set())

if __name__ == "__main__":
    unittest.main(verbosity=2)
