"""The upgrade from the reference webhook (ai-on-gke/kuberay-tpu-webhook)
replayed on the real API server (issue 32, "through a cluster's life";
docs/deploy.md, "Upgrade from the reference webhook").

The reference's binary cannot be had here: the Go module proxy refuses its
module (docs/cluster.md, "The gate"). What an existing deployment has in
the API server can be replayed exactly: the reference's own manifests
(tests/fixtures/reference-deployments/deployments/, its `make deploy`),
applied with kubectl. Its certs/ need cert-manager, which this cluster does
not run: the serving certificate and the caBundle are installed by
certs/install-without-cert-manager.sh instead, on the reference's names.
Until the upgrade, the reference's routes (its Service, port 443, /mutate
and /validate) are served by this project's binary standing in for the
reference's, with the admin identity (no kubelet runs its Deployment).
The Services stay as each install made them: the API server routes by
endpoints (cluster.sh up --endpoint-routing) and the Service's
EndpointSlice lists the local process's address, as the EndpointSlice
controller would list the Deployment's pod.
Then docs/deploy.md's "Installed with `kubectl`, now moving to Helm" (its
commands read from that file) and `helm install` of the chart."""

import json
import os
import re
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import clusterlib as cl  # noqa: E402
import kuberay_physics as K  # noqa: E402
import operators as op  # noqa: E402
import test_kuberay as T  # noqa: E402
from test_core import legacy_worker_pod  # noqa: E402
from test_variants import OwnCluster  # noqa: E402

REFERENCE = os.path.join(cl.REPO, "tests", "fixtures", "reference-deployments", "deployments")
HELM_DIR = os.path.join(cl.REPO, "build-tools", "helm4")
NS = "ray-system"
SVC = "kuberay-tpu-webhook"
CONFIGS = (("mutatingwebhookconfiguration", "kuberay-tpu-mutating-webhook-cfg"),
           ("validatingwebhookconfiguration", "kuberay-tpu-validating-webhook-cfg"))


def routes():
    """{(kind, configuration, webhook name): (service, namespace, path,
    port, objectSelector)} of the two KubeRay configurations."""
    out = {}
    for kind, name in CONFIGS:
        for w in cl.get_json(kind, name)["webhooks"]:
            s = w["clientConfig"]["service"]
            out[(kind, name, w["name"])] = (s["name"], s["namespace"], s.get("path"), s.get("port", 443),
                                           json.dumps(w.get("objectSelector"), sort_keys=True))
    return out


def kuberay_configs():
    """Every webhook configuration with a webhook served by the Service."""
    out = []
    for kind, _ in CONFIGS:
        for c in cl.get_json(kind)["items"]:
            if any((w["clientConfig"].get("service") or {}).get("name") == SVC for w in c["webhooks"]):
                out.append((kind, c["metadata"]["name"]))
    return sorted(out)


def moving_to_helm_steps():
    """docs/deploy.md's block that marks kubectl-installed objects for
    Helm and installs the chart (Upgrade from the reference webhook, "now
    moving to Helm")."""
    with open(os.path.join(cl.REPO, "docs", "deploy.md")) as f:
        doc = f.read()
    section = doc.split("\n## Upgrade from the reference webhook\n", 1)[1].split("\n## ", 1)[0]
    blocks = [b for b in re.findall(r"```sh\n(.*?)```", section, re.S) if "meta.helm.sh/release-name" in b]
    assert len(blocks) == 1, blocks
    return re.sub(r"(?m)^  ", "", blocks[0])


def owned(tree, prefix=()):
    """The paths (tuples of fieldsV1 keys) a managedFields entry owns; "."
    marks the element itself."""
    out = set()
    for k, v in tree.items():
        if k == ".":
            out.add(prefix)
        elif v:
            out |= owned(v, prefix + (k,))
        else:
            out.add(prefix + (k,))
    return out


def value_at(obj, path):
    """The object's value at a fieldsV1 path (f:field, k:{list item key})."""
    for seg in path:
        if seg.startswith("f:"):
            obj = obj[seg[2:]]
        elif seg.startswith("k:"):
            key = json.loads(seg[2:])
            obj = next(i for i in obj if all(i.get(k) == v for k, v in key.items()))
        else:
            raise AssertionError("no value for %s at %s" % (seg, path))
    return obj


def left_by_kubectl(kind, name, nsargs):
    """{path: value} of the fields that only the reference's `kubectl
    apply` (manager kubectl-client-side-apply, which owns every field the
    object had after its apply, defaults included) still owns: fields the
    chart's server-side apply neither set nor removed. Leaves only: an
    element with owned children is judged by them."""
    obj = cl.get_json(kind, name, *nsargs, "--show-managed-fields")
    mine, others = set(), set()
    for m in obj["metadata"]["managedFields"]:
        (mine if m["manager"] == "kubectl-client-side-apply" else others).update(owned(m.get("fieldsV1") or {}))
    every = mine | others
    left = {p for p in mine - others if not any(q[:len(p)] == p and q != p for q in every)}
    return {"/".join(p): value_at(obj, p) for p in sorted(left)}


LEFT_OBJECTS = [(k, n, []) for k, n in CONFIGS] + [("deployment", SVC, ["-n", NS]), ("service", SVC, ["-n", NS])]
ANY = object()
LAST_APPLIED = "f:metadata/f:annotations/f:kubectl.kubernetes.io/last-applied-configuration"
INJECT = "f:metadata/f:annotations/f:cert-manager.io/inject-ca-from"
CONTAINER = 'f:spec/f:template/f:spec/f:containers/k:{"name":"kuberay-tpu-webhook"}/'

# The API server's defaults, filled in on the reference's create and so
# owned by its kubectl apply: the values a fresh install has too. Harmless.
LEFT_DEFAULTS = {
    "deployment/" + SVC: {
        "f:spec/f:progressDeadlineSeconds": 600,
        CONTAINER + "f:livenessProbe/f:successThreshold": 1,
        CONTAINER + "f:readinessProbe/f:successThreshold": 1,
        CONTAINER + "f:terminationMessagePath": "/dev/termination-log",
        CONTAINER + "f:terminationMessagePolicy": "File",
        "f:spec/f:template/f:spec/f:dnsPolicy": "ClusterFirst",
        "f:spec/f:template/f:spec/f:restartPolicy": "Always",
        "f:spec/f:template/f:spec/f:schedulerName": "default-scheduler",
        # The deprecated alias the API server copies from serviceAccountName.
        "f:spec/f:template/f:spec/f:serviceAccount": SVC,
    },
    "validatingwebhookconfiguration/kuberay-tpu-validating-webhook-cfg": {
        'f:webhooks/k:{"name":"raycluster-kuberay-tpu-webhook.ray-system.svc"}/f:objectSelector': {},
    },
    "service/" + SVC: {
        "f:spec/f:internalTrafficPolicy": "Cluster",
        "f:spec/f:sessionAffinity": "None",
    },
}
# What the reference set that is not a default: docs/deploy.md's clean-up
# removes each. inject-ca-from names the reference's Certificate: with
# cert-manager in the cluster and the chart without it, cert-manager's CA
# injector would write that Certificate's CA into the caBundle, and the API
# server would refuse this webhook's certificate (every pod refused). The
# last-applied annotation is the reference's manifest: a later `kubectl
# apply` would merge against it.
LEFT_REFERENCE = {
    "mutatingwebhookconfiguration/kuberay-tpu-mutating-webhook-cfg": {
        INJECT: NS + "/kuberay-tpu-webhook-certs", LAST_APPLIED: ANY},
    "validatingwebhookconfiguration/kuberay-tpu-validating-webhook-cfg": {
        INJECT: NS + "/kuberay-tpu-webhook-certs", LAST_APPLIED: ANY},
    "deployment/" + SVC: {LAST_APPLIED: ANY},
    "service/" + SVC: {LAST_APPLIED: ANY},
}


def left_behind():
    return {"%s/%s" % (k, n): left_by_kubectl(k, n, a) for k, n, a in LEFT_OBJECTS}


def expected(*tables):
    out = {"%s/%s" % (k, n): {} for k, n, _ in LEFT_OBJECTS}
    for t in tables:
        for obj, fields in t.items():
            out[obj].update(fields)
    return out


def check_left(case, left, want):
    """left equals want, exactly (ANY: present, whatever the value)."""
    got = {o: {p: (ANY if want.get(o, {}).get(p) is ANY else v) for p, v in f.items()} for o, f in left.items()}
    case.assertEqual(got, want, "the fields the takeover leaves behind (docs/deploy.md, the clean-up)")


def cleanup_steps():
    """docs/deploy.md's clean-up after the move to Helm (the block that
    removes inject-ca-from)."""
    with open(os.path.join(cl.REPO, "docs", "deploy.md")) as f:
        doc = f.read()
    section = doc.split("\n## Upgrade from the reference webhook\n", 1)[1].split("\n## ", 1)[0]
    blocks = [b for b in re.findall(r"```sh\n(.*?)```", section, re.S) if "inject-ca-from-" in b]
    assert len(blocks) == 1, blocks
    return re.sub(r"(?m)^  ", "", blocks[0])


def unregistered_probe():
    """(a dry-run legacy worker pod comes back mutated through /mutate,
    a dry-run of bad-numofhosts.yaml is refused through /validate)."""
    mutated = '"TPU_WORKER_ID"' in cl.kubectl("create", "--dry-run=server", "-o", "json", "-f", "-", check=False,
                                              input=legacy_worker_pod("probe", "default")).stdout
    refused = cl.kubectl("apply", "--dry-run=server", "-n", "default", "-f",
                         os.path.join(T.MANIFESTS, "bad-numofhosts.yaml"), check=False).returncode != 0
    return mutated, refused


def check_scaled(pods, old, ns):
    """After the scale-up to 2 slices: 8 pods, the existing 4 untouched,
    both slices right."""
    assert len(pods) == 8, len(pods)
    for p in pods:
        uid = p["metadata"]["uid"]
        if uid in old:
            assert p["spec"] == old[uid]["spec"], "an existing pod changed: %s" % p["metadata"]["name"]
    assert sum(p["metadata"]["uid"] in old for p in pods) == 4, "the existing pods not kept"
    K.check_cluster(pods, T.services(ns))


def check_refused(ns):
    """bad-numofhosts.yaml refused by /validate, with the webhook's name."""
    bad = os.path.join(T.MANIFESTS, "bad-numofhosts.yaml")
    p = cl.kubectl("apply", "-n", ns, "-f", bad, check=False)
    assert p.returncode != 0, "an impossible RayCluster was admitted: %s" % p.stdout
    for part in ('admission webhook "raycluster-kuberay-tpu-webhook.ray-system.svc"', "denied the request"):
        assert part in p.stderr, (part, p.stderr)
    return p.stderr


UPGRADE_ARGS = ["--install", "none", "--endpoint-routing", "--components", "kuberay"]


class ReferenceUpgrade(unittest.TestCase):
    """The reference's deployment, a RayCluster admitted through its routes,
    then the documented move to this project's chart: the same
    configuration, webhook and Service names, the same routes, one
    configuration of each kind (none left beside its replacement); the
    existing worker pods untouched; the RayCluster scaled up with its new
    pods right beside the old ones; an impossible RayCluster refused."""
    UP_ARGS = UPGRADE_ARGS
    # A cluster of its own (test_variants.py's OwnCluster set-up and
    # tear-down; tests/CMakeLists.txt makes entries of the classes that
    # derive from unittest.TestCase in this file), kept up for
    # ReferenceUpgradeUnregistered.
    CLUSTER, KEEP = "upgrade", True
    setUpClass = vars(OwnCluster)["setUpClass"]
    tearDownClass = vars(OwnCluster)["tearDownClass"]

    def serve(self, name, addr, kubeconfig):
        """Spawns the webhook on addr:443 as the cluster's process name
        (cluster.sh down stops it) and waits for its /readyz."""
        d = cl.env()["WH_CLUSTER_DIR"]
        lib = os.path.join(cl.HERE, "lib")
        cl.run(["bash", "-c", '. "$1/common.sh"; export POD_NAME=$2 POD_NAMESPACE=%s; '
                'cluster_spawn "$2" "$3" serve --bind-address "$4:443" --tls-cert-file "$5/tls.crt" '
                '--tls-private-key-file "$5/tls.key" --kube-config-path "$6" --v=1 --shutdown-timeout=5s; '
                'cluster_wait 120 "$2 /readyz" "$2" curl -fsS --cacert "$5/ca.crt" '
                '--resolve "%s.%s.svc:443:$4" "https://%s.%s.svc:443/readyz"' % (NS, SVC, NS, SVC, NS),
                "serve", lib, name, cl.env()["WH_WEBHOOK_BINARY"], addr, os.path.join(d, "upgrade"),
                kubeconfig], timeout=180)

    def stop(self, name):
        cl.run(["bash", "-c", '. "$1/common.sh"; cluster_stop "$2"', "stop",
                os.path.join(cl.HERE, "lib"), name], timeout=60)

    def endpoint(self):
        """An address of the cluster's own for the webhook process, listed
        on port 443 in the Service's EndpointSlice (common.sh)."""
        return cl.run(["bash", "-c", '. "$1/common.sh"; a=$(cluster_address); cluster_endpoints %s %s 443 "$a"; '
                       'echo "$a"' % (NS, SVC), "endpoint", os.path.join(cl.HERE, "lib")]).stdout.strip()

    def install_certs(self):
        d = os.path.join(cl.env()["WH_CLUSTER_DIR"], "upgrade")
        cl.run(["bash", "-c", 'KUBECTL="$CLUSTER_BIN/kubectl" bash "$0" --cert-dir "$1" --namespace %s '
                '--service %s' % (NS, SVC), os.path.join(cl.REPO, "certs", "install-without-cert-manager.sh"),
                d], timeout=120)

    def test_upgrade(self):
        e = cl.env()
        d = e["WH_CLUSTER_DIR"]
        self.assertEqual((e["WH_WEBHOOK_INSTALL"], e["WH_ENDPOINT_ROUTING"]), ("none", "1"))

        # The reference, as `make deploy` installs it; its certificate
        # without cert-manager.
        cl.kubectl("apply", "-f", REFERENCE)
        cl.run(["bash", "-c", '. "$1/common.sh"; cluster_cert "$2" %s.%s.svc %s.%s.svc %s.%s.svc.cluster.local'
                % (SVC, NS, SVC, NS, SVC, NS), "cert", os.path.join(cl.HERE, "lib"),
                os.path.join(d, "upgrade")])
        self.install_certs()
        before = routes()
        self.assertEqual(kuberay_configs(), sorted(CONFIGS))
        selector = cl.get_json("deployment", SVC, "-n", NS)["spec"]["selector"]
        service = cl.get_json("service", SVC, "-n", NS)["spec"]
        addr = self.endpoint()
        self.serve("tpu-webhook-reference", addr, os.path.join(d, "admin.kubeconfig"))

        ns = "up-existing"
        cl.create_namespace(ns)
        cl.kubectl("apply", "-n", ns, "-f", T.V6E16)
        old = {p["metadata"]["uid"]: p for p in T.judge(ns)}
        print("ok: the reference's deployment admitted a v6e-16 RayCluster: 4 worker pods")

        # The documented move to Helm, then the chart.
        helm = os.path.join(HELM_DIR, "helm")
        if not os.access(helm, os.X_OK):
            cl.run(["bash", os.path.join(cl.REPO, "scripts", "fetch-test-helm.sh")], timeout=300)
        # Without cert-manager: the chart's flag (docs/deploy.md, Helm).
        steps = moving_to_helm_steps()
        self.assertIn(" --force-conflicts", steps)
        steps = steps.replace(" --force-conflicts", " --force-conflicts --set tpuWebhook.certManager.enabled=false", 1)
        cl.run(["bash", "-euo", "pipefail", "-c", "export PATH=%s:$PATH\ncd %s\n%s" % (HELM_DIR, cl.REPO, steps)],
               timeout=300)
        self.install_certs()
        after = routes()
        self.assertEqual(after, before, "the routes changed on the upgrade")
        self.assertEqual(kuberay_configs(), sorted(CONFIGS), "a configuration left beside its replacement")
        dep = cl.get_json("deployment", SVC, "-n", NS)
        self.assertEqual(dep["spec"]["selector"], selector)
        svc = cl.get_json("service", SVC, "-n", NS)["spec"]
        self.assertEqual((svc["type"], svc["clusterIP"], svc["selector"], svc["ports"][0]["port"]),
                         (service["type"], service["clusterIP"], service["selector"], 443))
        self.assertEqual(dep["metadata"]["annotations"].get("meta.helm.sh/release-name"), "tpu-webhook")
        print("ok: helm install over the reference: the same names and routes %s" % sorted(after))
        # What only the reference's kubectl apply set, and Helm's
        # server-side apply neither sets nor removes, stays: asserted at the
        # end (after the upgrade's own checks), an exact list.
        left = left_behind()

        # This project's webhook now serves, with the chart's RBAC.
        token = cl.kubectl("create", "token", SVC, "-n", NS, "--duration", "2h").stdout.strip()
        kc = os.path.join(d, "upgrade", "kubeconfig")
        with open(kc, "w") as f:
            json.dump({"apiVersion": "v1", "kind": "Config",
                       "clusters": [{"name": "c", "cluster": {"server": e["WH_APISERVER"],
                                                              "certificate-authority": e["WH_CLUSTER_CA"]}}],
                       "users": [{"name": "u", "user": {"token": token}}],
                       "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
                       "current-context": "c"}, f)
        os.chmod(kc, 0o600)
        self.stop("tpu-webhook-reference")
        self.serve("tpu-webhook-0", addr, kc)

        T.set_replicas(ns, 2)
        check_scaled(T.judge(ns), old, ns)
        print("ok: after the upgrade: 4 existing pods untouched, 4 new ones, 2 slices right")
        print("ok: bad-numofhosts.yaml refused through /validate: %s" % check_refused(ns).strip()[:200])
        for obj, fields in sorted(left.items()):
            print("left by the reference's kubectl apply: %s: %s" % (
                obj, {p: ("%s..." % str(v)[:40]) for p, v in fields.items()}))
        check_left(self, left, expected(LEFT_DEFAULTS, LEFT_REFERENCE))
        # The documented clean-up leaves only the defaults.
        cl.run(["bash", "-euo", "pipefail", "-c", cleanup_steps()])
        check_left(self, left_behind(), expected(LEFT_DEFAULTS))
        print("ok: the clean-up of docs/deploy.md leaves only the API server's defaults")

class ReferenceUpgradeUnregistered(unittest.TestCase):
    """ReferenceUpgrade's negative control, on its cluster after the
    upgrade (replayed first when the cluster is not ReferenceUpgrade's):
    with the KubeRay configurations deleted, the checks of that case fail:
    a v6e-16 RayCluster's stored pods fail kuberay_physics.py, so do the
    pods after the scale-up, and bad-numofhosts.yaml is admitted."""
    UP_ARGS, CLUSTER = UPGRADE_ARGS, "upgrade"
    setUpClass = vars(OwnCluster)["setUpClass"]
    tearDownClass = vars(OwnCluster)["tearDownClass"]
    serve, stop, endpoint, install_certs = (ReferenceUpgrade.serve, ReferenceUpgrade.stop,
                                            ReferenceUpgrade.endpoint, ReferenceUpgrade.install_certs)

    def test_unregistered(self):
        if not self.reused:
            ReferenceUpgrade.test_upgrade(self)
        self.assertEqual(cl.get_json("deployment", SVC, "-n", NS)["metadata"]["annotations"].get(
            "meta.helm.sh/release-name"), "tpu-webhook", "the chart installed over the reference")
        ns = "up-unregistered"
        cl.create_namespace(ns)
        with op.webhook_unregistered([(k, n) for k, n in CONFIGS], unregistered_probe):
            cl.kubectl("apply", "-n", ns, "-f", T.V6E16)
            pods = op.settled_pods(ns, T.WORKERS, 4)
            print("ok: physics: the check fails: %s" % op.fails(K.check_cluster, pods, T.services(ns)))
            old = {p["metadata"]["uid"]: p for p in pods}
            T.set_replicas(ns, 2)
            pods = op.settled_pods(ns, T.WORKERS, 8)
            print("ok: after the scale-up: the check fails: %s" % op.fails(check_scaled, pods, old, ns))
            print("ok: refused: the check fails: %s" % op.fails(check_refused, ns))
        cl.kubectl("delete", "namespace", ns, "--wait=false")

if __name__ == "__main__":
    unittest.main()
