"""The webhook run highly available against the real API server (issue 32,
"through a cluster's life"): a cluster of its own with three replicas
(scripts/cluster.sh up --replicas 3: the chart's ClusterIP Service, an
EndpointSlice listing one address per replica, and kube-apiserver with
--enable-aggregator-routing, which dials a random ready endpoint for each
connection it opens) and KubeRay without its multi-host indexing, so the
replicas hand out legacy worker ids through real Leases.

The API server keeps its connections to a webhook open, so calls spread
over the replicas only as it opens new ones: while KubeRay creates pods,
a load of other legacy worker pods is created concurrently (several
connections at once), as in a cluster where many clients create pods."""

import collections
import json
import os
import signal
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import clusterlib as cl  # noqa: E402
import operators as op  # noqa: E402
import kuberay_physics as K  # noqa: E402
import test_kuberay as T  # noqa: E402
from test_core import legacy_worker_pod, renew_twice  # noqa: E402
from test_variants import OwnCluster  # noqa: E402

REPLICAS = 3


def mutate_calls(i):
    """/mutate requests replica i answered (its own /metrics)."""
    return cl.metric_sum(cl.metrics(i), "tpu_webhook_http_requests_total", path="/mutate")


def load(ns, prefix="load"):
    """Legacy KubeRay worker pods created in ns by 6 connections at once,
    each its own RayCluster name (cl.Load)."""
    return cl.Load(ns, lambda name, n: legacy_worker_pod(name, n, cluster=name), threads=6, prefix=prefix)


def slice_holders(ns):
    """{KubeRay replica: {webhook replica that claimed one of its ids}}
    from the claim Leases of ns's pods."""
    out = collections.defaultdict(set)
    for lease in T.claims(ns):
        a = lease["metadata"]["annotations"]
        out[a["tpu-webhook/replica"]].add(lease["spec"]["holderIdentity"].rsplit("_", 1)[0])
    return out


def set_slices(ns, n):
    patch = [{"op": "replace", "path": "/spec/workerGroupSpecs/0/maxReplicas", "value": n},
             {"op": "replace", "path": "/spec/workerGroupSpecs/0/replicas", "value": n}]
    cl.kubectl("patch", "raycluster", T.V6E16_NAME, "-n", ns, "--type", "json", "-p", json.dumps(patch))


def endpoint_ready(i, ready):
    """Replica i's endpoint in the webhook Service's EndpointSlice marked
    ready or not, as the EndpointSlice controller does for a pod that is
    being deleted (ready false, terminating true)."""
    patch = [{"op": "replace", "path": "/endpoints/%d/conditions" % i,
              "value": {"ready": ready, "serving": ready, "terminating": not ready}}]
    cl.kubectl("patch", "endpointslice", "kuberay-tpu-webhook-cluster-sh", "-n", "ray-system",
               "--type", "json", "-p", json.dumps(patch))


def check_spread(calls, at_least=2):
    """At least at_least replicas answered admissions (calls: per replica).
    Which ones is chance: the API server dials a random ready endpoint for
    each connection it opens and keeps it, so a replica may get none
    however long it is ready. Two serving is what ids agreeing across
    replicas needs."""
    served = sum(1 for c in calls if c > 0)
    assert served >= at_least, "%d replicas answered admissions, not %d: %s" % (served, at_least, calls)


def check_slices_shared(ns):
    """Some slice's ids were claimed by more than one replica (their claim
    Leases): the case shows ids agreeing across replicas."""
    holders = slice_holders(ns)
    shared = sorted(r for r, h in holders.items() if len(h) > 1)
    print("KubeRay slices whose ids were claimed by more than one replica: %s of %d (%s)"
          % (len(shared), len(holders), {r: sorted(h) for r, h in holders.items()}))
    assert shared, "no slice was admitted by more than one replica: the case did not show their ids " \
        "agreeing across replicas"


def check_load(ld):
    """Every load pod created, admitted by the webhook: refusals and pods
    stored without TPU_WORKER_ID both fail."""
    assert ld.failures == [], "admissions refused: %s" % ld.failures[:3]
    unmutated = ld.unmutated()
    assert unmutated == [], "%d load pods stored unmutated: %s" % (len(unmutated), unmutated[:5])


def eight_slices(ns):
    """The v6e-16 sample with 8 slices, in ns."""
    cl.create_namespace(ns)
    rc = op.load_docs(T.V6E16)[0]
    rc["metadata"]["namespace"] = ns
    rc["spec"]["workerGroupSpecs"][0].update(replicas=8, maxReplicas=8)
    op.apply_obj(rc)


HA_ARGS = ["--replicas", str(REPLICAS), "--components", "kuberay", "--kuberay-indexing", "off"]


class HighlyAvailableUnregistered(unittest.TestCase):
    """HighlyAvailable's negative control, on its cluster (kept up for the
    classes after it): with the webhook's mutating configurations deleted,
    the same 8 slices and load fail each of that case's checks: the
    stored worker pods fail kuberay_physics.py, no replica answers an
    admission, no slice's ids are claimed, the load pods are stored
    unmutated."""
    UP_ARGS, CLUSTER, KEEP = HA_ARGS, "ha", True
    setUpClass = vars(OwnCluster)["setUpClass"]
    tearDownClass = vars(OwnCluster)["tearDownClass"]

    def test_unregistered(self):
        ns, lns = "ha-kuberay-unregistered", "ha-load-unregistered"
        cl.create_namespace(lns)
        with op.webhook_unregistered():
            before = [mutate_calls(i) for i in range(REPLICAS)]
            ld = load(lns)
            ld.start()
            try:
                eight_slices(ns)
                # Enough load pods to judge, then none: it only slows the
                # API server while KubeRay creates the 32.
                cl.wait_for(lambda: ld.created >= 20, 120, "20 load pods created")
            finally:
                ld.stop()
            pods = op.settled_pods(ns, T.WORKERS, 32)
            calls = [mutate_calls(i) - before[i] for i in range(REPLICAS)]
        self.assertGreater(ld.created, 0)
        for what, check, args in (("physics", K.check_cluster, (pods, T.services(ns))),
                                  ("two replicas answered", check_spread, (calls,)),
                                  ("ids claimed by several replicas", check_slices_shared, (ns,)),
                                  ("load admitted", check_load, (ld,))):
            print("ok: %s: the check fails: %s" % (what, op.fails(check, *args)))
        cl.kubectl("delete", "namespace", ns, lns, "--wait=false")


class ReplicasRenewal(unittest.TestCase):
    """The serving certificate renewed twice while 6 connections create
    legacy worker pods through the three replicas (test_core.renew_twice):
    every replica's handshake shows each new serial, 0 failed
    admissions, every pod mutated, no replica restarted, and two replicas
    answered admissions after the renewals. On
    HighlyAvailable's cluster, kept up for it."""
    UP_ARGS, CLUSTER, KEEP = HA_ARGS, "ha", True
    setUpClass = vars(OwnCluster)["setUpClass"]
    tearDownClass = vars(OwnCluster)["tearDownClass"]

    def test_renewed_twice(self):
        ns = "ha-renewal"
        cl.create_namespace(ns)
        _, calls = renew_twice(self, load(ns))
        check_spread([sum(c) for c in zip(*calls)])
        cl.kubectl("delete", "namespace", ns, "--wait=false")


def holders_of(i):
    """The holderIdentity of each claim Lease replica i's process holds now
    (POD_NAME kuberay-tpu-webhook-local-<i>, then _ and a suffix of its own
    per process)."""
    items = cl.get_json("leases", "-n", "ray-system", "-l", "app.kubernetes.io/component=worker-id-claim")["items"]
    name = "kuberay-tpu-webhook-local-%d" % i
    return {x["spec"]["holderIdentity"] for x in items
            if x["spec"].get("holderIdentity", "").rsplit("_", 1)[0] == name}


def claims_held_by(holders):
    items = cl.get_json("leases", "-n", "ray-system", "-l", "app.kubernetes.io/component=worker-id-claim")["items"]
    return [x["metadata"]["name"] for x in items if x["spec"].get("holderIdentity") in holders]


def dead(pid):
    """pid has exited (gone, or a zombie nobody reaped)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def sigkill(i):
    """Replica i killed with SIGKILL (no shutdown of any kind: its open
    connections reset, its in-flight admissions lost), as the kernel's
    OOM killer or a node failure does; the time it died."""
    pid = cl.webhook_pid(i)
    os.kill(pid, signal.SIGKILL)
    cl.wait_for(lambda: dead(pid), 30, "replica %d (pid %d) dead" % (i, pid))
    return time.time()


def replica_ready(i):
    e = cl.env()
    p = subprocess.run(["curl", "-fsS", "--cacert", e["WH_WEBHOOK_CA"], "--resolve",
                        "kuberay-tpu-webhook.ray-system.svc:%s:%s" % (e["WH_WEBHOOK_PORT"], cl.webhook_address(i)),
                        "https://kuberay-tpu-webhook.ray-system.svc:%s/readyz" % e["WH_WEBHOOK_PORT"]],
                       capture_output=True, timeout=30)
    return p.returncode == 0


def restart(i):
    """Replica i started again as cluster.sh started it (webhook/run-<i>.sh),
    ready, and its endpoint ready: as the kubelet restarts a killed
    container and the EndpointSlice controller lists it again."""
    if not dead(cl.webhook_pid(i)):
        return
    os.remove(os.path.join(cl.env()["WH_CLUSTER_DIR"], "pids", "tpu-webhook-%d" % i))
    cl.run(["bash", "-c", '. "$0/tests/cluster/lib/common.sh" && '
            'cluster_spawn "tpu-webhook-$1" bash "$WH_CLUSTER_DIR/webhook/run-$1.sh"', cl.REPO, str(i)])
    cl.wait_for(lambda: replica_ready(i), 120, "replica %d ready again" % i)
    endpoint_ready(i, True)


def check_carried_on(ld, since, created):
    """The load after a replica's death: no refusal after since, and at
    least 20 pods created after the count created."""
    late = [f for t, f in ld.failures if t > since]
    assert late == [], "%d admissions refused after the replica had gone: %s" % (len(late), late[:3])
    assert ld.created >= created + 20, "only %d pods created after the replica had gone" % (ld.created - created)


def check_whole(ld):
    """Every load pod stored carries the same env names (one template), with
    TPU_WORKER_ID: none half-mutated."""
    sets = collections.Counter(tuple(sorted(cl.env_names(p))) for p in cl.pods(ld.ns)
                               if p["metadata"]["name"].startswith(ld.prefix + "-"))
    assert len(sets) == 1, "load pods stored with %d different env sets: %s" % (len(sets), sets)
    assert "TPU_WORKER_ID" in next(iter(sets)), "load pods stored without TPU_WORKER_ID: %s" % sets


def slices(ns, n):
    """The v6e-16 sample with n slices, in ns."""
    rc = op.load_docs(T.V6E16)[0]
    rc["metadata"]["namespace"] = ns
    rc["spec"]["workerGroupSpecs"][0].update(replicas=n, maxReplicas=n)
    op.apply_obj(rc)


class ReplicaKilled(unittest.TestCase):
    """One of the three replicas killed with SIGKILL while legacy worker pods
    are being created (6 connections), its endpoint then marked not ready
    (as the kubelet and the EndpointSlice controller do for a dead
    container; the API server does not retry a webhook POST whose
    connection reset or was refused, so what was in flight on it is
    refused, counted and printed): from 5 s after that, 0 refusals and 20
    more pods admitted by the two survivors; every load pod stored whole
    (one env set, TPU_WORKER_ID in it); the claims the dead process held
    (it held some: asserted) stay on until they expire and are swept by
    the survivors; meanwhile KubeRay scales 4 slices to 6 through the
    survivors, whose 24 pods pass kuberay_physics.py. On HighlyAvailable's
    cluster, the replica restarted afterwards. The kill falls while only
    the load's one-pod clusters are admitted: one between a KubeRay pod's
    claim and its answer would leave a claim no pod holds, which can push
    that slice's retried pod into a new replica index, a hole that stays
    after the claim expires (docs/legacy-indices.md, "Known limits"); not
    shown here."""
    UP_ARGS, CLUSTER, KEEP = HA_ARGS, "ha", True
    setUpClass = vars(OwnCluster)["setUpClass"]
    tearDownClass = vars(OwnCluster)["tearDownClass"]

    def test_sigkill(self):
        """The replica killed is one that holds claims when the load has
        run a while: which replicas the API server sends calls to is
        chance (check_spread)."""
        ns, lns = "ha-killed", "ha-killed-load"
        cl.create_namespace(ns)
        cl.create_namespace(lns)
        slices(ns, 4)
        T.judge(ns, secs=300)
        ld = load(lns, prefix="killed")
        ld.start()
        try:
            cl.wait_for(lambda: ld.created >= 20, 120, "20 load pods created")
            cl.wait_for(lambda: any(holders_of(i) for i in range(REPLICAS)), 60, "a claim held by a replica")
            victim = max(range(REPLICAS), key=lambda i: len(claims_held_by(holders_of(i))))
            self.addCleanup(restart, victim)
            holders = holders_of(victim)
            survivors = [i for i in range(REPLICAS) if i != victim]
            before = [mutate_calls(i) for i in survivors]
            killed = sigkill(victim)
            time.sleep(1)  # the kubelet noticing the dead container
            endpoint_ready(victim, False)
            routed, at_routed = time.time(), ld.created
            set_slices(ns, 6)
            pods = T.judge(ns, secs=300)
            created = ld.created
            cl.wait_for(lambda: ld.created >= created + 20, 120, "20 more load pods admitted")
        finally:
            ld.stop()
        self.assertEqual(len(pods), 24)
        calls = [mutate_calls(i) - before[k] for k, i in enumerate(survivors)]
        early = [f for t, f in ld.failures if t <= routed + 5]
        print("ok: replica %d killed; %d load pods admitted, %d refused before its endpoint left (+5 s): %s; "
              "/mutate calls of the survivors since: %s" % (victim, ld.created, len(early), early[:3], calls))
        check_spread(calls, at_least=1)
        check_carried_on(ld, routed + 5, at_routed)
        check_whole(ld)
        left = claims_held_by(holders)
        print("claims of the killed process (%s) left at its death + %.0f s: %d"
              % (sorted(holders), time.time() - killed, len(left)))
        cl.wait_for(lambda: not claims_held_by(holders), 120,
                    "the killed process's claims expired and swept by the survivors")
        print("ok: its claims swept %.0f s after its death" % (time.time() - killed))
        cl.kubectl("delete", "namespace", ns, lns, "--wait=false")


class ReplicaKilledControls(unittest.TestCase):
    """ReplicaKilled's negative controls, on its cluster: with no survivor
    (the three replicas killed, their endpoints not ready) the load is
    refused, so check_carried_on fails; with the webhook's mutating
    configurations deleted the load pods are stored without TPU_WORKER_ID,
    so check_whole fails. The replicas are restarted afterwards."""
    UP_ARGS, CLUSTER, KEEP = HA_ARGS, "ha", True
    setUpClass = vars(OwnCluster)["setUpClass"]
    tearDownClass = vars(OwnCluster)["tearDownClass"]

    def test_no_survivor_and_unregistered(self):
        lns = "ha-killed-controls"
        cl.create_namespace(lns)
        for i in range(REPLICAS):
            self.addCleanup(restart, i)
        ld = load(lns, prefix="none")
        ld.start()
        try:
            cl.wait_for(lambda: ld.created >= 5, 120, "5 load pods created")
            for i in range(REPLICAS):
                sigkill(i)
                endpoint_ready(i, False)
            routed, at_routed = time.time(), ld.created
            time.sleep(15)
        finally:
            ld.stop()
        msg = op.fails(check_carried_on, ld, routed + 5, at_routed)
        self.assertIn("refused after the replica had gone", msg)
        print("ok: no survivor, the check fails: %s" % msg[:300])
        for i in range(REPLICAS):
            restart(i)
        with op.webhook_unregistered():
            ld = load(lns, prefix="unregistered")
            ld.start()
            try:
                cl.wait_for(lambda: ld.created >= 10, 120, "10 load pods created")
            finally:
                ld.stop()
        msg = op.fails(check_whole, ld)
        self.assertIn("without TPU_WORKER_ID", msg)
        print("ok: unregistered, the check fails: %s" % msg[:300])
        cl.kubectl("delete", "namespace", lns, "--wait=false")


class HighlyAvailable(unittest.TestCase):
    """Three replicas behind the chart's Service: the replicas the API
    server sends admissions to (at least two, check_spread) answer them; the worker ids of the slices they
    admit together are dense and agree (one id per host, one
    TPU_WORKER_HOSTNAMES per slice) over 8 slices; and with one replica
    taken away in the middle of a scale-up (its endpoint marked
    terminating, then SIGTERM, as Kubernetes deletes a pod), the scale-up
    completes, every slice still right, and the pods created after it are
    all admitted."""
    # A cluster of its own (test_variants.py's OwnCluster set-up and
    # tear-down; tests/CMakeLists.txt makes entries of the classes that
    # derive from unittest.TestCase in this file), shared with the
    # classes above: the last of them, it brings it down.
    UP_ARGS, CLUSTER = HA_ARGS, "ha"
    setUpClass = vars(OwnCluster)["setUpClass"]
    tearDownClass = vars(OwnCluster)["tearDownClass"]

    def test_replicas_share_the_work(self):
        e = cl.env()
        self.assertEqual(e["WH_ENDPOINT_ROUTING"], "1")
        svc = cl.get_json("service", "kuberay-tpu-webhook", "-n", "ray-system")
        self.assertEqual(svc["spec"]["type"], "ClusterIP", "the chart's Service as installed")
        before = [mutate_calls(i) for i in range(REPLICAS)]

        cl.create_namespace("ha-load")
        ns = "ha-kuberay"
        ld = load("ha-load")
        ld.start()
        try:
            eight_slices(ns)
            pods = T.judge(ns, secs=300)
            self.assertEqual(len(pods), 32)
            calls = [mutate_calls(i) - before[i] for i in range(REPLICAS)]
            print("ok: 8 slices, 32 worker pods right; /mutate calls per replica: %s" % calls)
            check_spread(calls)
            check_slices_shared(ns)

            # One replica taken away while KubeRay creates 4 more slices.
            set_slices(ns, 12)
            cl.wait_for(lambda: len(cl.pods(ns, T.WORKERS)) > 36, 120, "the scale-up under way")
            endpoint_ready(REPLICAS - 1, False)
            time.sleep(2)  # the API server's EndpointSlice informer
            os.kill(cl.webhook_pid(REPLICAS - 1), signal.SIGTERM)
            killed = time.time()
            pods = T.judge(ns, secs=300)
            self.assertEqual(len(pods), 48)
            print("ok: replica %d taken away mid-scale: 12 slices, 48 worker pods right" % (REPLICAS - 1))
            created = ld.created
            cl.wait_for(lambda: ld.created >= created + 20, 120, "20 more load pods admitted")
        finally:
            ld.stop()
        late = [f for t, f in ld.failures if t > killed + 5]
        print("ok: %d load pods admitted; refused: %d (%d after the replica left): %s"
              % (ld.created, len(ld.failures), len(late), ld.failures[:3]))
        self.assertEqual(late, [], "admissions refused after the replica had gone")
        check_load(ld)

if __name__ == "__main__":
    unittest.main()
