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
import ssl
import sys
import threading
import time
import unittest
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import clusterlib as cl  # noqa: E402
import operators as op  # noqa: E402
import test_kuberay as T  # noqa: E402
from test_core import legacy_worker_pod  # noqa: E402
from test_variants import OwnCluster  # noqa: E402

REPLICAS = 3


def mutate_calls(i):
    """/mutate requests replica i answered (its own /metrics)."""
    return cl.metric_sum(cl.metrics(i), "tpu_webhook_http_requests_total", path="/mutate")


class Load:
    """Threads creating legacy KubeRay worker pods in ns through the API
    server (admin client certificate, one connection each), until stop();
    every refusal is kept with its message."""

    def __init__(self, ns, threads=6):
        e = cl.env()
        d = e["WH_CLUSTER_DIR"]
        self.ctx = ssl.create_default_context(cafile=e["WH_CLUSTER_CA"])
        self.ctx.load_cert_chain(os.path.join(d, "pki", "admin.crt"), os.path.join(d, "pki", "admin.key"))
        self.url = "%s/api/v1/namespaces/%s/pods" % (e["WH_APISERVER"], ns)
        self.ns, self.created, self.failures = ns, 0, []
        self.lock, self.halt = threading.Lock(), threading.Event()
        self.threads = [threading.Thread(target=self.run, args=(t,), daemon=True) for t in range(threads)]

    def create(self, name):
        body = legacy_worker_pod(name, self.ns, cluster=name).encode()
        req = urllib.request.Request(self.url, data=body, method="POST",
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, context=self.ctx, timeout=60) as r:
                r.read()
            return None
        except urllib.error.HTTPError as e:
            return "%d %s" % (e.code, e.read().decode(errors="replace")[:300])
        except OSError as e:
            return str(e)

    def run(self, t):
        k = 0
        while not self.halt.is_set():
            err = self.create("load-%d-%d" % (t, k))
            k += 1
            with self.lock:
                if err:
                    self.failures.append((time.time(), err))
                else:
                    self.created += 1

    def start(self):
        for t in self.threads:
            t.start()

    def stop(self):
        self.halt.set()
        for t in self.threads:
            t.join(90)


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


class HighlyAvailable(unittest.TestCase):
    """Three replicas behind the chart's Service: every replica answers
    admissions the API server sends it; the worker ids of the slices they
    admit together are dense and agree (one id per host, one
    TPU_WORKER_HOSTNAMES per slice) over 8 slices; and with one replica
    taken away in the middle of a scale-up (its endpoint marked
    terminating, then SIGTERM, as Kubernetes deletes a pod), the scale-up
    completes, every slice still right, and the pods created after it are
    all admitted."""
    UP_ARGS = ["--replicas", str(REPLICAS), "--components", "kuberay", "--kuberay-indexing", "off"]
    # A cluster of its own: test_variants.py's OwnCluster set-up and
    # tear-down (tests/CMakeLists.txt makes entries of the classes that
    # derive from unittest.TestCase in this file).
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
        cl.create_namespace(ns)
        rc = op.load_docs(T.V6E16)[0]
        rc["metadata"]["namespace"] = ns
        rc["spec"]["workerGroupSpecs"][0].update(replicas=8, maxReplicas=8)
        load = Load("ha-load")
        load.start()
        try:
            op.apply_obj(rc)
            pods = T.judge(ns, secs=300)
            self.assertEqual(len(pods), 32)
            calls = [mutate_calls(i) - before[i] for i in range(REPLICAS)]
            print("ok: 8 slices, 32 worker pods right; /mutate calls per replica: %s" % calls)
            for i, c in enumerate(calls):
                self.assertGreater(c, 0, "replica %d answered no admission: %s" % (i, calls))
            holders = slice_holders(ns)
            shared = sorted(r for r, h in holders.items() if len(h) > 1)
            print("ok: KubeRay slices whose ids were claimed by more than one replica: %s of %d (%s)"
                  % (len(shared), len(holders), {r: sorted(h) for r, h in holders.items()}))
            self.assertTrue(shared, "no slice was admitted by more than one replica: the case "
                            "did not show their ids agreeing across replicas")

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
            created = load.created
            cl.wait_for(lambda: load.created >= created + 20, 120, "20 more load pods admitted")
        finally:
            load.stop()
        late = [f for t, f in load.failures if t > killed + 5]
        print("ok: %d load pods admitted; refused: %d (%d after the replica left): %s"
              % (load.created, len(load.failures), len(late), load.failures[:3]))
        self.assertEqual(late, [], "admissions refused after the replica had gone")
        self.assertEqual(load.failures, [], "admissions refused while a replica left")


if __name__ == "__main__":
    unittest.main()
