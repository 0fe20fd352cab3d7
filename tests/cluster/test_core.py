"""The cluster suite's core cases (issue 32, item 4): the webhook installed
from the project's chart into a real kube-apiserver, judged on what the API
server stored. One ctest entry per class (tests/cluster/CMakeLists.txt),
all against the cluster of the fixture cluster.up, one at a time (they stop
and pause the shared webhook). Each class works in its own namespace."""

import base64
import json
import os
import signal
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import clusterlib as cl  # noqa: E402
from clusterlib import physics  # noqa: E402

INDEXED_JOB = os.path.join(cl.WORKLOADS, "indexed-job-v6e-4x4.yaml")


class ClusterCase(unittest.TestCase):
    """A base: the cluster must answer, or every case of the class fails."""

    @classmethod
    def setUpClass(cls):
        cl.require_cluster()


def legacy_worker_pod(name, ns, cluster="rc", group="tpu-group"):
    """A KubeRay TPU worker pod as KubeRay 1.5 makes it without its
    multi-host indexing: no index label, so the webhook claims a legacy
    worker id through a Lease (the only side effect it has)."""
    return json.dumps({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": ns, "labels": {
            "ray.io/cluster": cluster, "ray.io/group": group, "ray.io/node-type": "worker",
            "app.kubernetes.io/created-by": "kuberay-operator",
            "app.kubernetes.io/name": "kuberay", "ray.io/is-ray-node": "yes"}},
        "spec": {"nodeSelector": {"cloud.google.com/gke-tpu-accelerator": "tpu-v6e-slice",
                                  "cloud.google.com/gke-tpu-topology": "4x4"},
                 "containers": [{"name": "ray-worker", "image": "rayproject/ray:2.52.0",
                                 "resources": {"limits": {"google.com/tpu": "4"},
                                               "requests": {"google.com/tpu": "4"}}}]}})


def run_indexed_job(ns):
    """The Indexed Job of docs/workloads.md (example 3) in ns; its pods."""
    cl.kubectl("apply", "-n", ns, "-f", INDEXED_JOB)
    return cl.wait_pods(ns, 4, selector="job-name=train-v6e")


class IndexedJob(ClusterCase):
    """An Indexed Job opted in as docs/workloads.md says: the Job controller
    makes the 4 pods the Job asks, each stored with one identity of one
    dense slice."""

    def test_stored_pods(self):
        ns = "cl-indexed-job"
        cl.create_namespace(ns)
        pods = run_indexed_job(ns)
        physics.check_slices(pods)
        ids, lists = set(), set()
        for p in pods:
            idx = p["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"]
            e = physics.env_of(p["spec"]["containers"][0])
            self.assertEqual(e["TPU_WORKER_ID"], idx, p["metadata"]["name"])
            self.assertEqual(p["spec"]["hostname"], "train-v6e-" + idx)
            ids.add(int(idx))
            lists.add(e["TPU_WORKER_HOSTNAMES"])
            names = cl.env_names(p)
            self.assertEqual(len(names), len(set(names)), "duplicate env name in %s" % names)
            self.assertEqual(e["TORCH_TPU_TOPOLOGY"], "4,4,1")
        self.assertEqual(ids, {0, 1, 2, 3})
        self.assertEqual(lists, {",".join("train-v6e-%d.train-v6e" % i for i in range(4))})


class DryRunNoLease(ClusterCase):
    """sideEffects NoneOnDryRun is honoured: a server-side dry run of a
    legacy KubeRay worker pod comes back mutated and leaves no Lease; the
    same pod created for real claims one (the control)."""

    def leases(self):
        return cl.get_json("leases", "-n", "ray-system")["items"]

    def test_dry_run(self):
        ns = "cl-dry-run"
        cl.create_namespace(ns)
        before = len(self.leases())
        p = cl.kubectl("apply", "--dry-run=server", "-o", "json", "-f", "-",
                       input=legacy_worker_pod("dry", ns))
        self.assertIn('"TPU_WORKER_ID"', p.stdout, "the dry run was not mutated")
        time.sleep(2)
        self.assertEqual(len(self.leases()), before, "a dry run left a Lease")
        self.assertEqual(cl.pods(ns), [], "a dry run stored a pod")
        cl.kubectl("apply", "-f", "-", input=legacy_worker_pod("real", ns))
        cl.wait_for(lambda: len(self.leases()) > before, 30,
                    "a Lease for the pod created for real (the control)")


class WebhookDown(ClusterCase):
    """failurePolicy Fail: with the webhook stopped a TPU pod is refused with
    the API server's "failed calling webhook", and admitted (mutated) once
    it is back."""

    def test_down_then_back(self):
        ns = "cl-webhook-down"
        cl.create_namespace(ns)
        lab = {"tpu-webhook/inject": "enabled"}
        cl.webhook("stop")
        try:
            p = cl.kubectl("create", "-f", "-", check=False, input=cl.tpu_pod("p1", ns, lab))
            self.assertNotEqual(p.returncode, 0, "a TPU pod was admitted with the webhook down")
            self.assertIn("failed calling webhook", p.stderr)
            self.assertEqual(cl.pods(ns), [])
        finally:
            cl.webhook("start")
        cl.wait_webhook_active()
        cl.kubectl("create", "-f", "-", input=cl.tpu_pod("p1", ns, lab))
        pod = cl.get_json("pod", "p1", "-n", ns)
        self.assertIn("TPU_WORKER_ID", cl.env_names(pod))


class SlowWebhook(ClusterCase):
    """A webhook slower than timeoutSeconds (5 s in the chart) is refused in
    about that time, never hung: the process is paused (SIGSTOP) while a TPU
    pod is created."""

    def test_paused(self):
        ns = "cl-slow-webhook"
        cl.create_namespace(ns)
        lab = {"tpu-webhook/inject": "enabled"}
        cl.wait_webhook_active()
        pid = cl.webhook_pid()
        os.kill(pid, signal.SIGSTOP)
        try:
            t0 = time.monotonic()
            p = cl.kubectl("create", "-f", "-", check=False, timeout=60,
                           input=cl.tpu_pod("p1", ns, lab))
            took = time.monotonic() - t0
        finally:
            os.kill(pid, signal.SIGCONT)
        self.assertNotEqual(p.returncode, 0, "admitted while the webhook was paused")
        self.assertIn("failed calling webhook", p.stderr)
        self.assertRegex(p.stderr, "deadline exceeded|timeout|Timeout")
        self.assertLess(took, 30, "refused only after %.1f s (timeoutSeconds is 5)" % took)
        print("paused webhook: refused after %.1f s" % took)
        cl.wait_webhook_active()
        cl.kubectl("create", "-f", "-", input=cl.tpu_pod("p1", ns, lab))


class NonTpuPodsNotSent(ClusterCase):
    """The real API server evaluates the chart's selectors and
    matchConditions: pods without a TPU, even in an opted-in namespace, never
    reach /mutate-workload (its count in the webhook's /metrics stays), a TPU
    pod does (the control)."""

    def count(self):
        return cl.metric_sum(cl.metrics(), "tpu_webhook_http_requests_total", path="/mutate-workload")

    def test_counted(self):
        ns = "cl-non-tpu"
        cl.create_namespace(ns, {"tpu-webhook/inject": "enabled"})
        before = self.count()
        for i in range(5):
            cl.kubectl("create", "-f", "-", input=cl.plain_pod("cpu-%d" % i, ns))
        # A KubeRay head pod (no TPU, not a worker) in the same namespace.
        cl.kubectl("create", "-f", "-", input=cl.plain_pod("head", ns, {
            "app.kubernetes.io/name": "kuberay", "ray.io/node-type": "head"}))
        self.assertEqual(self.count(), before, "a pod without a TPU reached /mutate-workload")
        cl.kubectl("create", "-f", "-", input=cl.tpu_pod("tpu", ns))
        self.assertEqual(self.count(), before + 1, "the TPU pod (control) was not counted once")


REINVOKE_SERVER = r'''
import base64, http.server, json, ssl, sys
class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass
    def do_POST(self):
        review = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        pod = review["request"]["object"]
        ops = []
        for i, c in enumerate(pod["spec"]["containers"]):
            if not any(e["name"] == "OTHER_WEBHOOK" for e in c.get("env") or []):
                if "env" not in c:
                    ops.append({"op": "add", "path": "/spec/containers/%d/env" % i, "value": []})
                ops.append({"op": "add", "path": "/spec/containers/%d/env/-" % i,
                            "value": {"name": "OTHER_WEBHOOK", "value": "1"}})
        resp = {"uid": review["request"]["uid"], "allowed": True}
        if ops:
            resp["patchType"] = "JSONPatch"
            resp["patch"] = base64.b64encode(json.dumps(ops).encode()).decode()
        body = json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                           "response": resp}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(sys.argv[1] + "/tls.crt", sys.argv[1] + "/tls.key")
srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
print(srv.server_address[1], flush=True)
srv.serve_forever()
'''


class Reinvocation(ClusterCase):
    """Another mutating webhook, called after this one (its configuration's
    name sorts later), changes every pod: the API server calls this webhook
    again (reinvocationPolicy IfNeeded), and the stored pods of an Indexed
    Job still carry each variable once and one dense slice."""

    def test_other_webhook_after(self):
        ns = "cl-reinvocation"
        cl.create_namespace(ns)
        d = cl.env()["WH_CLUSTER_DIR"]
        certs = os.path.join(d, "other-webhook")
        cl.run(["bash", "-c", '. "$0/tests/cluster/lib/common.sh" && cluster_cert "$1" other 127.0.0.1',
                cl.REPO, certs])
        srv = subprocess.Popen([sys.executable, "-c", REINVOKE_SERVER, certs],
                               stdout=subprocess.PIPE, text=True)
        self.addCleanup(srv.stdout.close)
        self.addCleanup(srv.wait)
        self.addCleanup(srv.terminate)
        port = int(srv.stdout.readline())
        with open(os.path.join(certs, "ca.crt"), "rb") as f:
            ca = f.read()
        cfg = {
            "apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
            "metadata": {"name": "zz-cluster-test-other-webhook"},
            "webhooks": [{
                "name": "other.cluster-test.example", "admissionReviewVersions": ["v1"],
                "clientConfig": {"url": "https://127.0.0.1:%d/mutate" % port,
                                 "caBundle": base64.b64encode(ca).decode()},
                "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                           "resources": ["pods"], "scope": "Namespaced"}],
                "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": ns}},
                "failurePolicy": "Fail", "sideEffects": "None", "timeoutSeconds": 5,
                "reinvocationPolicy": "IfNeeded"}]}
        cl.kubectl("create", "-f", "-", input=json.dumps(cfg))
        self.addCleanup(cl.kubectl, "delete", "mutatingwebhookconfiguration",
                        "zz-cluster-test-other-webhook", "--ignore-not-found")
        # Active once a dry-run pod of ns carries both webhooks' env.
        cl.wait_for(lambda: "OTHER_WEBHOOK" in cl.kubectl(
            "create", "--dry-run=server", "-o", "json", "-f", "-", check=False,
            input=cl.tpu_pod("probe", ns, {"tpu-webhook/inject": "enabled"})).stdout,
            60, "the other webhook's configuration active")
        before = cl.metric_sum(cl.metrics(), "tpu_webhook_http_requests_total", path="/mutate-workload")
        pods = run_indexed_job(ns)
        after = cl.metric_sum(cl.metrics(), "tpu_webhook_http_requests_total", path="/mutate-workload")
        physics.check_slices(pods)
        for p in pods:
            for c in p["spec"]["containers"]:
                self.assertEqual([e["name"] for e in c["env"]].count("OTHER_WEBHOOK"), 1)
        # Each pod's first call, and the reinvocation after the other webhook.
        self.assertGreaterEqual(after - before, 8, "this webhook was not called again (%d calls)"
                                % (after - before))


class DeleteWithWebhookDown(ClusterCase):
    """Issue 35 item 6: an opted-in Job with a finalizer (the test's own) is
    deleted while the webhook is stopped. Removing the finalizer is an
    UPDATE of an object being deleted; the chart's validating webhooks must
    not be called for it (a deletionTimestamp matchCondition), or the
    object hangs for as long as the webhook is down. The control: an
    UPDATE of the same Job before its deletion is refused with the
    webhook down, so its UPDATEs do reach the webhook (without the
    webhook registered, the finalizer removal alone would pass too)."""

    def test_finalizer_removed(self):
        ns = "cl-delete-down"
        cl.create_namespace(ns, {"tpu-webhook/inject": "enabled"})
        with open(INDEXED_JOB) as f:
            job = f.read()
        job = job.replace("metadata: {name: train-v6e}\nspec:\n  completionMode",
                          "metadata: {name: train-v6e, finalizers: [cluster-test.tpu-webhook/hold]}\n"
                          "spec:\n  completionMode")
        self.assertIn("cluster-test.tpu-webhook/hold", job)
        cl.kubectl("apply", "-n", ns, "-f", "-", input=job)
        cl.webhook("stop")
        try:
            p = cl.kubectl("label", "job", "train-v6e", "-n", ns, "cluster-test=control", check=False)
            self.assertNotEqual(p.returncode, 0, "an UPDATE of the Job was admitted with the webhook down: "
                                "its UPDATEs never reach the webhook, so the case shows nothing")
            self.assertIn("failed calling webhook", p.stderr)
            cl.kubectl("delete", "job", "train-v6e", "-n", ns, "--wait=false")
            p = cl.kubectl("patch", "job", "train-v6e", "-n", ns, "--type=json", "-p",
                           '[{"op":"remove","path":"/metadata/finalizers"}]', check=False)
            self.assertEqual(p.returncode, 0, "finalizer removal refused with the webhook down: "
                             + p.stderr)
            cl.wait_for(lambda: cl.kubectl("get", "job", "train-v6e", "-n", ns,
                                           check=False).returncode != 0, 30, "the Job gone")
        finally:
            cl.webhook("start")
            cl.kubectl("patch", "job", "train-v6e", "-n", ns, "--type=json", "-p",
                       '[{"op":"remove","path":"/metadata/finalizers"}]', check=False)
        cl.wait_webhook_active()


class NegativeControl(ClusterCase):
    """The judge can fail: with the webhook's configurations removed, the
    Indexed Job's stored pods fail the physics checks the other cases pass.
    The configurations are put back (and seen active) afterwards."""

    CONFIGS = [("mutatingwebhookconfiguration", "tpu-webhook-workload-mutating-cfg"),
               ("mutatingwebhookconfiguration", "kuberay-tpu-mutating-webhook-cfg"),
               ("validatingwebhookconfiguration", "tpu-webhook-workload-validating-cfg"),
               ("validatingwebhookconfiguration", "kuberay-tpu-validating-webhook-cfg")]

    def test_unregistered(self):
        ns = "cl-negative-control"
        cl.create_namespace(ns)
        saved = []
        for kind, name in self.CONFIGS:
            obj = cl.get_json(kind, name)
            for k in ("resourceVersion", "uid", "creationTimestamp", "generation", "managedFields"):
                obj["metadata"].pop(k, None)
            saved.append(obj)
        try:
            for kind, name in self.CONFIGS:
                cl.kubectl("delete", kind, name)
            # Unregistered once a dry-run TPU pod comes back unmutated.
            cl.wait_for(lambda: not cl.webhook_active(), 60, "the configuration gone")
            pods = run_indexed_job(ns)
            with self.assertRaises((AssertionError, KeyError)):
                physics.check_slices(pods)
        finally:
            for obj in saved:
                cl.kubectl("create", "-f", "-", input=json.dumps(obj))
        cl.wait_webhook_active()



def served_serial(port, addr):
    """The serial of the certificate the webhook at addr hands out in a
    handshake for the Service's name, as the API server sees it."""
    p = subprocess.run(
        "openssl s_client -connect %s:%s -servername kuberay-tpu-webhook.ray-system.svc "
        "</dev/null 2>/dev/null | openssl x509 -noout -serial" % (addr, port),
        shell=True, capture_output=True, text=True, timeout=30)
    return p.stdout.strip()


def file_serial(path):
    return subprocess.run(["openssl", "x509", "-noout", "-serial", "-in", path],
                          capture_output=True, text=True, check=True).stdout.strip()


def admissions(i):
    """/mutate and /mutate-workload requests replica i answered."""
    ms = cl.metrics(i)
    return sum(cl.metric_sum(ms, "tpu_webhook_http_requests_total", path=r) for r in ("/mutate", "/mutate-workload"))


def renew_twice(case, load):
    """The serving certificate of every replica (one pair of files, as the
    Secret is mounted in every pod) renewed twice, new key and serial, same
    CA, files replaced as the kubelet updates a mounted Secret, while load
    creates pods: each replica's handshake shows each new serial, no
    admission fails, every pod is mutated, no replica restarts. Returns
    the serials and the admissions each replica answered after each
    renewal (the API server keeps its connections, so a replica it holds
    none to answers none: printed, not asserted)."""
    e = cl.env()
    port, d = e["WH_WEBHOOK_PORT"], e["WH_CLUSTER_DIR"]
    crt = os.path.join(d, "webhook", "tls.crt")
    addrs = e["WH_WEBHOOK_ADDRESSES"].split()
    names = ["kuberay-tpu-webhook.ray-system.svc"] + addrs
    pids = [cl.webhook_pid(i) for i in range(len(addrs))]
    cl.wait_webhook_active()
    seen = [file_serial(crt)]
    case.assertEqual([served_serial(port, a) for a in addrs], seen * len(addrs))
    calls = []
    load.start()
    try:
        for _ in range(2):
            time.sleep(3)
            before = [admissions(i) for i in range(len(addrs))]
            cl.run(["bash", "-c", '. "$0/tests/cluster/lib/common.sh" && cluster_cert "$@"',
                    cl.REPO, os.path.join(d, "webhook")] + names[:1] + names)
            new = file_serial(crt)
            case.assertNotIn(new, seen)
            for a in addrs:
                cl.wait_for(lambda a=a, new=new: served_serial(port, a) == new, 30, "the webhook at %s serving %s" % (a, new))
            seen.append(new)
            time.sleep(3)
            calls.append([admissions(i) - before[i] for i in range(len(addrs))])
    finally:
        load.stop()
    case.assertEqual(load.failures, [], "admissions failed during the renewals")
    case.assertGreater(load.created, 3)
    case.assertEqual([cl.webhook_pid(i) for i in range(len(addrs))], pids, "a webhook was restarted")
    case.assertEqual(len(set(seen)), 3, seen)
    case.assertEqual(load.unmutated(), [], "pods stored unmutated during the renewals")
    print("renewals: %d pods created, 0 refused; serials %s, each served by every replica (%s); "
          "admissions per replica after each renewal: %s" % (load.created, seen, " ".join(addrs), calls))
    return seen, calls


class CertRenewal(ClusterCase):
    """The serving certificate renewed twice (new key and serial, same CA,
    files replaced as cert-manager's Secret update does) while TPU pods are
    being created: no admission fails, and the handshakes show the new
    serial after each renewal, with no restart."""

    def test_renewed_twice(self):
        ns = "cl-cert-renewal"
        cl.create_namespace(ns, {"tpu-webhook/inject": "enabled"})
        renew_twice(self, cl.Load(ns, cl.tpu_pod, threads=1))


class Doctor(ClusterCase):
    """`tpu-webhook doctor` pointed at the cluster (admin kubeconfig) reads
    the stored pods, Nodes and Services: the Indexed Job the webhook
    mutated is ok (exit 0); the same Job not opted in, with a fixed
    TPU_WORKER_ID=0 in its template (every host claims id 0), is named
    broken, with duplicate-worker-id on its pods (exit 1)."""

    def doctor(self, ns):
        p = cl.run([cl.env()["WH_WEBHOOK_BINARY"], "doctor", "-o", "json", "-n", ns,
                    "--kubeconfig", cl.env()["KUBECONFIG"]], check=False)
        self.assertIn(p.returncode, (0, 1), p.stderr)
        return p.returncode, json.loads(p.stdout)

    def test_broken_slice_named(self):
        good, bad = "cl-doctor-ok", "cl-doctor-broken"
        cl.create_namespace(good)
        cl.create_namespace(bad)
        run_indexed_job(good)
        with open(INDEXED_JOB) as f:
            job = f.read()
        job = job.replace(
            "labels: {tpu-webhook/inject: enabled}", "labels: {}").replace(
            "        resources: {limits: {google.com/tpu: 4}}",
            "        resources: {limits: {google.com/tpu: 4}}\n"
            "        env: [{name: TPU_WORKER_ID, value: \"0\"}]")
        self.assertIn("TPU_WORKER_ID", job)
        cl.kubectl("apply", "-n", bad, "-f", "-", input=job)
        cl.wait_pods(bad, 4, selector="job-name=train-v6e")
        rc, rep = self.doctor(good)
        self.assertEqual(rc, 0, rep)
        self.assertEqual([s["status"] for s in rep["slices"]], ["ok"], rep)
        rc, rep = self.doctor(bad)
        self.assertEqual(rc, 1, rep)
        broken = [s for s in rep["slices"] if s["status"] == "broken"]
        self.assertEqual([s["name"] for s in broken], ["train-v6e"], rep)
        problems = {pr["problem"] for pr in broken[0]["problems"]}
        self.assertIn("duplicate-worker-id", problems, broken[0])


if __name__ == "__main__":
    unittest.main()
