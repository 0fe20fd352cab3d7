"""KubeRay through the real operator (ray-operator v1.5.0) and the real API
server (issue 32, item 4). Every scenario runs twice, each its own ctest
entry: *Indexed with KubeRay's RayMultiHostIndexing feature gate on
(multi-host worker pods carry KubeRay's replica and host index labels) and
*Legacy with it off (the webhook assigns the ids itself through Leases,
docs/legacy-indices.md); the operator is restarted with the gate a class
asks for. Each applies manifests with `kubectl apply` as a user does, waits
until the operator's pods are stored, and judges every stored worker pod
(kuberay_physics.py). Each class works in its own namespaces."""

import datetime
import json
import os
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import clusterlib as cl  # noqa: E402
import kuberay_physics as K  # noqa: E402
import operators as op  # noqa: E402

SAMPLES = os.path.join(cl.REPO, "tests", "fixtures", "kuberay-samples")
MANIFESTS = os.path.join(cl.REPO, "tests", "fixtures", "manifests")
V6E16 = os.path.join(SAMPLES, "ray-cluster.tpu-v6e-16-multihost.yaml")
V6E16_NAME = "raycluster-tpu-v6e-multihost"
WORKERS = "ray.io/node-type=worker"


def ensure_indexing(mode):
    """The operator running with RayMultiHostIndexing on or off."""
    path = os.path.join(cl.env()["WH_CLUSTER_DIR"], "kuberay", "indexing")
    if not os.path.isfile(path):
        raise AssertionError("KubeRay is not part of this cluster (%s missing): "
                             "cluster.sh up --components with kuberay" % path)
    with open(path) as f:
        if f.read().strip() == mode:
            return
    lib = os.path.join(cl.HERE, "lib")
    cl.run(["bash", "-c", '. "$1/env"; . "$2/common.sh"; . "$2/kuberay.sh"; kuberay_restart "$3"',
            "kuberay_restart", cl.env()["WH_CLUSTER_DIR"], lib, mode], timeout=300)


def expected_workers(rc):
    """Worker pods KubeRay keeps for RayCluster rc: per group, replicas
    clamped to [minReplicas, maxReplicas] times numOfHosts; none when
    suspended (docs/kuberay-pods.md)."""
    if rc["spec"].get("suspend"):
        return 0
    n = 0
    for g in rc["spec"].get("workerGroupSpecs") or []:
        r = g.get("replicas", g.get("minReplicas", 0))
        r = max(g.get("minReplicas", 0), min(g.get("maxReplicas", 2147483647), r))
        n += r * g.get("numOfHosts", 1)
    return n


def judge(ns, clusters=1, secs=240):
    """Once the ns has its RayClusters (RayJob and RayService ones
    included) and all their worker pods are stored: the pods, judged."""
    def rcs():
        items = cl.get_json("rayclusters", "-n", ns)["items"]
        return items if len(items) >= clusters else None
    items = cl.wait_for(rcs, 120, "%d RayCluster(s) in %s" % (clusters, ns))
    pods = op.settled_pods(ns, WORKERS, sum(expected_workers(rc) for rc in items), secs)
    K.check_cluster(pods, services(ns))
    return pods


def claims(ns):
    """The webhook's worker-id claim Leases for pods of ns."""
    items = cl.get_json("leases", "-n", "ray-system", "-l", "app.kubernetes.io/component=worker-id-claim")["items"]
    return [i for i in items if (i["metadata"].get("annotations") or {}).get("tpu-webhook/pod-namespace") == ns]


def claim_expiries(ns):
    """(replica, TPU_WORKER_ID) -> when (epoch seconds) each claim for pods
    of ns expires: renewTime + leaseDurationSeconds."""
    out = {}
    for i in claims(ns):
        a, spec = i["metadata"]["annotations"], i["spec"]
        renew = datetime.datetime.strptime(spec["renewTime"][:19], "%Y-%m-%dT%H:%M:%S")
        renew = renew.replace(tzinfo=datetime.timezone.utc).timestamp()
        out[(int(a["tpu-webhook/replica"]), int(a["tpu-webhook/worker-id"]))] = \
            renew + spec["leaseDurationSeconds"]
    return out


def long_claims(case, lifetime="600s"):
    """Every webhook replica restarted with --claim-lifetime=LIFETIME (its
    run-I.sh, the command cluster.sh serves it with), put back after the
    case: a claim gone within the case was given back, not expired."""
    d = os.path.join(cl.env()["WH_CLUSTER_DIR"], "webhook")
    scripts = sorted(os.path.join(d, f) for f in os.listdir(d) if f.startswith("run-") and f.endswith(".sh"))
    saved = {}
    for path in scripts:
        with open(path) as f:
            saved[path] = f.read()
        if "--shutdown-timeout=5s" not in saved[path]:
            raise AssertionError("%s has no --shutdown-timeout=5s to add the flag after" % path)
        with open(path, "w") as f:
            f.write(saved[path].replace("--shutdown-timeout=5s",
                                        "--shutdown-timeout=5s --claim-lifetime=%s" % lifetime, 1))

    def restore():
        for path, text in saved.items():
            with open(path, "w") as f:
                f.write(text)
        cl.webhook("restart")
    case.addCleanup(restore)
    cl.webhook("restart")
    cl.wait_webhook_active()


def released_total():
    """tpu_webhook_claims_released_total summed over the webhook replicas."""
    n = len(cl.env()["WH_WEBHOOK_ADDRESSES"].split())
    return sum(cl.metric_sum(cl.metrics(i), "tpu_webhook_claims_released_total") for i in range(n))


def ids_of(pod):
    """A legacy worker pod's (replica, TPU_WORKER_ID), from its replicaIndex
    label ("<group>-<replica>") and its first container's variable."""
    replica = int(pod["metadata"]["labels"]["replicaIndex"].rsplit("-", 1)[1])
    wid = next(e["value"] for e in env0(pod) if e["name"] == "TPU_WORKER_ID")
    return replica, int(wid)


def services(ns):
    return {s["metadata"]["name"] for s in cl.get_json("services", "-n", ns)["items"]}


def env0(pod):
    return pod["spec"]["containers"][0].get("env")


def set_replicas(ns, n):
    patch = [{"op": "replace", "path": "/spec/workerGroupSpecs/0/maxReplicas", "value": max(n, 1)},
             {"op": "replace", "path": "/spec/workerGroupSpecs/0/replicas", "value": n}]
    cl.kubectl("patch", "raycluster", V6E16_NAME, "-n", ns, "--type", "json", "-p", json.dumps(patch))


def set_suspend(ns, on):
    cl.kubectl("patch", "raycluster", V6E16_NAME, "-n", ns, "--type", "merge", "-p",
               json.dumps({"spec": {"suspend": on}}))


class KubeRayCase(unittest.TestCase):
    """A case against the running cluster, with the operator's gate set."""
    MODE = None

    def setUp(self):
        cl.kubectl("get", "--raw", "/readyz")
        ensure_indexing(self.MODE)

    def ns(self, case):
        """A fresh namespace for the case, deleted after it: the operator
        of the next class (perhaps the other gate) does not reconcile it."""
        name = ("kr-%s-%s" % ("idx" if self.MODE == "on" else "leg", case))[:63].rstrip("-.")
        cl.create_namespace(name)
        self.addCleanup(cl.kubectl, "delete", "namespace", name, "--wait=false", check=False)
        return name

    # ---- the scenarios -------------------------------------------------

    def samples(self):
        """KubeRay's own TPU samples, each in its namespace (two share a
        name): every worker pod they ask for, stored and right."""
        for f in sorted(os.listdir(SAMPLES)):
            if not f.endswith(".yaml"):
                continue
            ns = self.ns("s-" + f.replace("ray-cluster.tpu-", "").replace(".yaml", ""))
            cl.kubectl("apply", "-n", ns, "-f", os.path.join(SAMPLES, f))
            pods = judge(ns, secs=600)
            print("ok: %s: %d worker pods" % (f, len(pods)))

    def fixtures(self):
        """The project's RayCluster, RayJob and RayService manifests (the
        bad-* ones are refused, see refused)."""
        for f in sorted(os.listdir(MANIFESTS)):
            if f.startswith("bad-"):
                continue
            path = os.path.join(MANIFESTS, f)
            kinds = [d["kind"] for d in op.load_docs(path)]
            ns = self.ns("f-" + f.rsplit(".", 1)[0])
            op.apply_obj(op.in_namespace(path, ns))
            pods = judge(ns, sum(k in ("RayCluster", "RayJob", "RayService") for k in kinds))
            print("ok: %s (%s): %d worker pods" % (f, ", ".join(kinds), len(pods)))

    def scale(self):
        """A multi-host group scaled 1 -> 2 -> 1 -> 2 slices by UPDATEs of
        the RayCluster (each through /validate)."""
        ns = self.ns("scale")
        if self.MODE == "off":
            long_claims(self)
        cl.kubectl("apply", "-n", ns, "-f", V6E16)
        first = judge(ns)
        set_replicas(ns, 2)
        two = judge(ns)
        kept = {p["metadata"]["name"]: env0(p) for p in two}
        for p in first:
            self.assertEqual(kept[p["metadata"]["name"]], env0(p), "a pod of slice 0 changed on scale-up")
        print("ok: scale-up 1 -> 2 slices: 8 worker pods")
        if self.MODE == "off":
            lives = {i["spec"]["leaseDurationSeconds"] for i in claims(ns)}
            self.assertEqual(lives, {600}, "the claims of %s made with --claim-lifetime=600s" % ns)
            released = released_total()
        set_replicas(ns, 1)
        if self.MODE == "on":
            judge(ns)  # KubeRay deletes whole slices
        else:
            # Without its indexing KubeRay deletes any 4 of the 8 pods,
            # slice or not (docs/kuberay-pods.md, section 4): what stays
            # keeps what it had.
            left = op.settled_pods(ns, WORKERS, 4)
            for p in left:
                self.assertEqual(kept[p["metadata"]["name"]], env0(p), p["metadata"]["name"])
            # The deleted pods' claims are given back when the webhook sees
            # the pod carrying each claim's nonce go (docs/legacy-indices.md);
            # they live 600 s here, so none of them can have expired:
            # replacements made sooner would go to a new replica and the
            # broken slices stay broken.
            names = {p["metadata"]["name"] for p in left}
            gone = {ids_of(p) for p in two if p["metadata"]["name"] not in names}
            cl.wait_for(lambda: not gone & set(claim_expiries(ns)), 60,
                        "the claims of the deleted pods of %s given back" % ns)
            cl.wait_for(lambda: released_total() - released >= len(gone), 30,
                        "tpu_webhook_claims_released_total up by %d" % len(gone))
            self.assertEqual(released_total() - released, len(gone), "claims given back")
            print("ok: scale-down 2 -> 1: the %d deleted pods' claims given back" % len(gone))
        print("ok: scale-down 2 -> 1: 4 worker pods")
        set_replicas(ns, 2)  # at once: no claim waited out
        again = judge(ns)
        if self.MODE == "off":
            ids = sorted(ids_of(p) for p in again)
            self.assertEqual(ids, [(r, w) for r in range(2) for w in range(4)],
                             "replicas 0..1, TPU_WORKER_ID 0..3 each, once")
        print("ok: scale-up again 1 -> 2: 8 worker pods, every slice complete")

    def delete(self):
        """A RayCluster deleted through the foregroundDeletion finalizer
        (the garbage collector deletes its pods first), then created
        again: ids 0..3 again, no id held by a pod that is gone."""
        ns = self.ns("delete")
        cl.kubectl("apply", "-n", ns, "-f", V6E16)
        judge(ns)
        cl.kubectl("delete", "raycluster", V6E16_NAME, "-n", ns, "--cascade=foreground", "--wait=false")
        gone = cl.kubectl("get", "raycluster", V6E16_NAME, "-n", ns, "-o", "json", check=False)
        if gone.returncode == 0:
            self.assertIn("foregroundDeletion", json.loads(gone.stdout)["metadata"].get("finalizers") or [])
        cl.wait_for(lambda: cl.kubectl("get", "raycluster", V6E16_NAME, "-n", ns, check=False).returncode
                    and not cl.pods(ns, WORKERS), 120, "RayCluster %s and its pods gone" % V6E16_NAME)
        print("ok: deleted through the foregroundDeletion finalizer")
        cl.kubectl("apply", "-n", ns, "-f", V6E16)
        judge(ns)
        print("ok: created again: ids 0..3, one peer list")

    def suspend(self):
        """Created suspended (no worker pod), resumed, suspended (its pods
        deleted), resumed: each time one complete slice."""
        ns = self.ns("suspend")
        rc = op.load_docs(V6E16)[0]
        rc["spec"]["suspend"] = True
        rc["metadata"]["namespace"] = ns
        op.apply_obj(rc)
        time.sleep(5)
        self.assertEqual(cl.pods(ns, WORKERS), [], "worker pods of a suspended RayCluster")
        set_suspend(ns, False)
        judge(ns)
        set_suspend(ns, True)
        op.settled_pods(ns, WORKERS, 0)
        set_suspend(ns, False)
        judge(ns)
        print("ok: suspended and resumed twice: one complete slice each time")

    def refused(self):
        """numOfHosts 2 for a v6e 4x4 slice of 4-chip hosts: refused by
        `kubectl apply`, with the webhook's message."""
        ns = self.ns("refused")
        p = cl.kubectl("apply", "-n", ns, "-f", os.path.join(MANIFESTS, "bad-numofhosts.yaml"), check=False)
        self.assertNotEqual(p.returncode, 0, p.stdout)
        for part in ('admission webhook "raycluster-', "denied the request", '"wrong-hosts"', "numOfHosts", "4x4"):
            self.assertIn(part, p.stderr)
        self.assertNotEqual(cl.kubectl("get", "raycluster", "wrong-hosts", "-n", ns, check=False).returncode, 0)
        print("ok: %s" % p.stderr.strip())

    def rayjob_suspended(self):
        """tests/fixtures/offline/rayjob-suspended-no-shutdown.yaml: a RayJob
        created suspended with shutdownAfterJobFinishes false. KubeRay
        fails it (ValidationFailed), creates no RayCluster, and a resume
        does not help; `tpu-webhook render` refuses it with that reason.
        With shutdownAfterJobFinishes true it stays suspended (no
        RayCluster) and render shows no pod."""
        ns = self.ns("rayjob-suspended")
        path = os.path.join(cl.REPO, "tests", "fixtures", "offline", "rayjob-suspended-no-shutdown.yaml")
        bad = op.load_docs(path)[0]
        good = json.loads(json.dumps(bad).replace('"held-job"', '"held-ok"'))
        good["spec"]["shutdownAfterJobFinishes"] = True
        for o in (bad, good):
            o["metadata"]["namespace"] = ns
            op.apply_obj(o)

        def status(name, want):
            st = cl.get_json("rayjob", name, "-n", ns).get("status") or {}
            return st if st.get("jobDeploymentStatus") == want else None
        st = cl.wait_for(lambda: status("held-job", "ValidationFailed"), 120, "RayJob held-job ValidationFailed")
        self.assertIn("shutdownAfterJobFinishes set to false is not allowed to be suspended", st.get("message", ""))
        cl.wait_for(lambda: status("held-ok", "Suspended"), 120, "RayJob held-ok Suspended")
        cl.kubectl("patch", "rayjob", "held-job", "-n", ns, "--type=merge", "-p", '{"spec":{"suspend":false}}')
        time.sleep(10)  # a RayCluster would be created within a reconcile; none may appear
        self.assertEqual(cl.get_json("rayclusters", "-n", ns)["items"], [])
        self.assertEqual(status("held-job", "ValidationFailed")["message"], st["message"])
        binary = cl.env()["WH_WEBHOOK_BINARY"]
        p = cl.run([binary, "render", "-"], input=json.dumps(bad), check=False)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("KubeRay 1.1+ refuses to suspend such a RayJob", p.stderr)
        p = cl.run([binary, "render", "--output", "json", "-"], input=json.dumps(good))
        self.assertEqual(json.loads(p.stdout)["items"], [])
        print("ok: held-job %s, no RayCluster after a resume; render refuses it; held-ok Suspended, "
              "no pod rendered" % st["jobDeploymentStatus"])

    def unregistered(self):
        """The negative control: with the webhook's configurations deleted,
        the v6e-16 sample's stored pods fail the check."""
        ns = self.ns("unregistered")
        with op.webhook_unregistered():
            cl.kubectl("apply", "-n", ns, "-f", V6E16)
            pods = op.settled_pods(ns, WORKERS, 4)
        print("ok: the check fails: %s" % op.fails(K.check_cluster, pods, services(ns)))


class SamplesIndexed(KubeRayCase):
    MODE = "on"

    def test_samples(self):
        self.samples()


class SamplesLegacy(KubeRayCase):
    MODE = "off"

    def test_samples(self):
        self.samples()


class FixturesIndexed(KubeRayCase):
    MODE = "on"

    def test_fixtures(self):
        self.fixtures()


class FixturesLegacy(KubeRayCase):
    MODE = "off"

    def test_fixtures(self):
        self.fixtures()


class ScaleIndexed(KubeRayCase):
    MODE = "on"

    def test_scale(self):
        self.scale()


class ScaleLegacy(KubeRayCase):
    MODE = "off"

    def test_scale(self):
        self.scale()


class DeleteIndexed(KubeRayCase):
    MODE = "on"

    def test_delete(self):
        self.delete()


class DeleteLegacy(KubeRayCase):
    MODE = "off"

    def test_delete(self):
        self.delete()


class SuspendIndexed(KubeRayCase):
    MODE = "on"

    def test_suspend(self):
        self.suspend()


class SuspendLegacy(KubeRayCase):
    MODE = "off"

    def test_suspend(self):
        self.suspend()


class Refused(KubeRayCase):
    MODE = "on"

    def test_refused(self):
        self.refused()


class RayJobSuspended(KubeRayCase):
    MODE = "on"

    def test_rayjob_suspended(self):
        self.rayjob_suspended()


class UnregisteredIndexed(KubeRayCase):
    MODE = "on"

    def test_unregistered(self):
        self.unregistered()


class UnregisteredLegacy(KubeRayCase):
    MODE = "off"

    def test_unregistered(self):
        self.unregistered()


if __name__ == "__main__":
    unittest.main()
