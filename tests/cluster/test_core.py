"""The cluster suite's core cases (issue 32, item 4): the webhook installed
from the project's chart into a real kube-apiserver, judged on what the API
server stored. One ctest entry per class (tests/cluster/CMakeLists.txt),
all against the cluster of the fixture cluster.up, one at a time (they stop
and pause the shared webhook). Each class works in its own namespace."""

import base64
import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import clusterlib as cl  # noqa: E402
import operators as op  # noqa: E402
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


def claim_lease_name(ns, cluster, group, replica, worker_id):
    """The name of the Lease a legacy worker-id claim is made as, as
    wh_claims_name() gives it (include/shell/admit/wh/claims.h):
    "tpu-worker-id-" and 40 hex digits of SHA-256 over the five fields,
    each followed by a NUL. DryRunNoLeaseNotDry finds the Lease of a pod
    by it, so a drift from the C fails that control."""
    fields = (ns, cluster, group, str(replica), str(worker_id))
    return "tpu-worker-id-" + hashlib.sha256(b"".join(f.encode() + b"\0" for f in fields)).hexdigest()[:40]


def own_lease_name(pod):
    """The Lease the admission of pod (an answer or a stored pod) claims:
    the one named after its namespace, cluster, group, replica (the
    replicaIndex label "<group>-<r>" the webhook wrote) and TPU_WORKER_ID."""
    meta = pod["metadata"]
    labels = meta["labels"]
    replica = labels["replicaIndex"].rsplit("-", 1)[1]
    wid = physics.env_of(pod["spec"]["containers"][0])["TPU_WORKER_ID"]
    return claim_lease_name(meta["namespace"], labels["ray.io/cluster"], labels["ray.io/group"],
                            replica, wid)


def lease(name):
    """The Lease ray-system/name, or None."""
    p = cl.kubectl("get", "lease", name, "-n", "ray-system", "-o", "json", check=False)
    if p.returncode == 0:
        return json.loads(p.stdout)
    assert "NotFound" in p.stderr, p.stderr
    return None


def apply_legacy(ns, name, dry_run):
    """A legacy KubeRay worker pod applied (a server-side dry run, or for
    real); the pod that came back (the dry run's mutated answer, or the
    stored pod)."""
    args = ["apply", "-o", "json", "-f", "-"] + (["--dry-run=server"] if dry_run else [])
    return json.loads(cl.kubectl(*args, input=legacy_worker_pod(name, ns)).stdout)


def check_dry_run(ns, pod):
    """DryRunNoLease's checks: the answer was mutated, the Lease its
    admission would claim was not created, no pod was stored. A claim is
    made before its answer is written (claims.h: an id is used only once
    its Lease is seen created), so the Lease would exist by now; it is
    looked for for 2 s all the same, so a late one shows too."""
    assert "TPU_WORKER_ID" in cl.env_names(pod), "the dry run was not mutated"
    name = own_lease_name(pod)
    end = time.time() + 2
    while True:
        got = lease(name)
        assert got is None, "a dry run left a Lease: %s (nonce %s)" % (
            name, got["metadata"]["annotations"].get("tpu-webhook/claim-nonce"))
        if time.time() >= end:
            break
        time.sleep(0.5)
    assert cl.pods(ns) == [], "a dry run stored a pod"


class DryRunNoLease(ClusterCase):
    """sideEffects NoneOnDryRun is honoured: a server-side dry run of a
    legacy KubeRay worker pod comes back mutated and leaves no Lease; the
    same pod created for real claims its Lease (the control)."""

    def test_dry_run(self):
        ns = "cl-dry-run"
        cl.create_namespace(ns)
        check_dry_run(ns, apply_legacy(ns, "dry", dry_run=True))
        pod = apply_legacy(ns, "real", dry_run=False)
        self.assertIsNotNone(lease(own_lease_name(pod)), "no Lease for the pod created for real (the control)")


class DryRunNoLeaseNotDry(ClusterCase):
    """DryRunNoLease's negative control: the same pod applied without
    --dry-run=server (what a webhook that ignored the dry-run flag would
    do with the dry run) fails its checks on its own Lease: the one named
    after its worker id, carrying the claim nonce the stored pod carries
    (so it is this admission's claim, and the case finds the Lease of a
    pod where the webhook puts it)."""

    def test_not_dry(self):
        ns = "cl-dry-run-not-dry"
        cl.create_namespace(ns)
        pod = apply_legacy(ns, "wet", dry_run=False)
        nonce = pod["metadata"]["annotations"]["tpu-webhook/claim-nonce"]
        msg = op.fails(check_dry_run, ns, pod)
        self.assertIn("left a Lease: %s (nonce %s)" % (own_lease_name(pod), nonce), msg)
        print("ok: the check fails: %s" % msg)


INJECT = {"tpu-webhook/inject": "enabled"}
WORKLOAD_MUTATING = "tpu-webhook-workload-mutating-cfg"


def check_refused_down(ns, p):
    """WebhookDown's first check: the create was refused with the API
    server's "failed calling webhook", and stored nothing."""
    assert p.returncode != 0, "a TPU pod was admitted with the webhook down"
    assert "failed calling webhook" in p.stderr, p.stderr
    assert cl.pods(ns) == [], "a pod was stored"


def check_mutated(ns, name):
    """The pod ns/name was stored mutated (TPU_WORKER_ID)."""
    assert "TPU_WORKER_ID" in cl.env_names(cl.get_json("pod", name, "-n", ns)), \
        "pod %s/%s stored without TPU_WORKER_ID" % (ns, name)


def create(pod, *args, **kw):
    """kubectl create of pod (JSON text) with args; the completed process,
    refused or not."""
    return cl.kubectl("create", *args, "-f", "-", check=False, input=pod, **kw)


def dry_run_admitted(ns):
    """A labelled TPU pod's server-side dry run in ns is admitted."""
    return create(cl.tpu_pod("probe", ns, INJECT), "--dry-run=server").returncode == 0


class WebhookDown(ClusterCase):
    """failurePolicy Fail: with the webhook stopped a TPU pod is refused with
    the API server's "failed calling webhook", and admitted (mutated) once
    it is back."""

    def test_down_then_back(self):
        ns = "cl-webhook-down"
        cl.create_namespace(ns)
        cl.webhook("stop")
        try:
            check_refused_down(ns, create(cl.tpu_pod("p1", ns, INJECT)))
        finally:
            cl.webhook("start")
        cl.wait_webhook_active()
        cl.kubectl("create", "-f", "-", input=cl.tpu_pod("p1", ns, INJECT))
        check_mutated(ns, "p1")


class WebhookDownFailurePolicyIgnore(ClusterCase):
    """WebhookDown's negative control: the workload webhooks' failurePolicy
    set to Ignore, the webhook stopped: the TPU pod is admitted, so the
    case's refusal check fails, and it is stored unmutated, so its
    mutation check fails too. It is failurePolicy Fail the case shows, not
    an API server that refuses pods anyway."""

    def test_ignore(self):
        ns = "cl-webhook-down-ignore"
        cl.create_namespace(ns)
        patch = [{"op": "replace", "path": "/webhooks/%d/failurePolicy" % i, "value": "Ignore"}
                 for i in (0, 1)]
        cl.webhook("stop")
        try:
            with op.configuration_patched(WORKLOAD_MUTATING, patch, lambda: dry_run_admitted(ns)):
                p = create(cl.tpu_pod("p1", ns, INJECT))
                refused, mutated = op.fails(check_refused_down, ns, p), op.fails(check_mutated, ns, "p1")
        finally:
            cl.webhook("start")
        self.assertIn("admitted with the webhook down", refused)
        self.assertIn("stored without TPU_WORKER_ID", mutated)
        print("ok: the refusal check fails: %s\nok: the mutation check fails: %s" % (refused, mutated))
        cl.wait_webhook_active()


def create_timed(ns, name, pause):
    """A labelled TPU pod created, the webhook paused (SIGSTOP) while it is
    if pause; the completed kubectl and the seconds it took."""
    cl.wait_webhook_active()
    pid = cl.webhook_pid()
    if pause:
        os.kill(pid, signal.SIGSTOP)
    try:
        t0 = time.monotonic()
        p = create(cl.tpu_pod(name, ns, INJECT), timeout=90)
        return p, time.monotonic() - t0
    finally:
        if pause:
            os.kill(pid, signal.SIGCONT)


def check_refused_in_time(p, took):
    """SlowWebhook's checks: refused by the API server for the webhook's
    timeout, in well under 30 s (timeoutSeconds is 5 in the chart)."""
    assert p.returncode != 0, "admitted while the webhook was paused"
    assert "failed calling webhook" in p.stderr, p.stderr
    assert re.search("deadline exceeded|timeout|Timeout", p.stderr), p.stderr
    assert took < 30, "refused only after %.1f s (timeoutSeconds is 5)" % took


class SlowWebhook(ClusterCase):
    """A webhook slower than timeoutSeconds (5 s in the chart) is refused in
    about that time, never hung: the process is paused (SIGSTOP) while a TPU
    pod is created."""

    def test_paused(self):
        ns = "cl-slow-webhook"
        cl.create_namespace(ns)
        p, took = create_timed(ns, "p1", pause=True)
        check_refused_in_time(p, took)
        print("paused webhook: refused after %.1f s" % took)
        cl.wait_webhook_active()
        cl.kubectl("create", "-f", "-", input=cl.tpu_pod("p1", ns, INJECT))


def timeout_above(ns, secs):
    """Whether the API server waits more than secs for the paused webhook: a
    labelled TPU pod's dry run, with kubectl's --request-timeout at secs + 4,
    refused only after secs (the chart's 5 s answers in about 5)."""
    pid = cl.webhook_pid()
    os.kill(pid, signal.SIGSTOP)
    try:
        t0 = time.monotonic()
        create(cl.tpu_pod("probe", ns, INJECT), "--dry-run=server", "--request-timeout=%ds" % (secs + 4))
        return time.monotonic() - t0 > secs
    finally:
        os.kill(pid, signal.SIGCONT)


class SlowWebhookControls(ClusterCase):
    """SlowWebhook's negative controls: its checks fail with the webhook
    not paused (the pod is admitted: the case's refusal is the pause's) and
    with the workload webhooks' timeoutSeconds raised to 30, the API
    server's maximum (the refusal comes only after 30 s: the case's time
    bound is the chart's timeoutSeconds, not the API server's own limit)."""

    def test_fast_and_long(self):
        ns = "cl-slow-webhook-controls"
        cl.create_namespace(ns)
        msg = op.fails(check_refused_in_time, *create_timed(ns, "fast", pause=False))
        self.assertIn("admitted while the webhook was paused", msg)
        print("ok: not paused, the check fails: %s" % msg)
        patch = [{"op": "replace", "path": "/webhooks/%d/timeoutSeconds" % i, "value": 30} for i in (0, 1)]
        with op.configuration_patched(WORKLOAD_MUTATING, patch, lambda: timeout_above(ns, 10)):
            p, took = create_timed(ns, "long", pause=True)
        msg = op.fails(check_refused_in_time, p, took)
        self.assertIn("refused only after", msg)
        print("ok: timeoutSeconds 30, the check fails: %s" % msg)
        cl.wait_webhook_active()


def workload_calls():
    """/mutate-workload requests the webhook answered (its /metrics)."""
    return cl.metric_sum(cl.metrics(), "tpu_webhook_http_requests_total", path="/mutate-workload")


def create_non_tpu(ns):
    """5 pods without a TPU and a KubeRay head pod (no TPU, not a worker)
    created in ns; the /mutate-workload calls they made."""
    before = workload_calls()
    for i in range(5):
        cl.kubectl("create", "-f", "-", input=cl.plain_pod("cpu-%d" % i, ns))
    cl.kubectl("create", "-f", "-", input=cl.plain_pod("head", ns, {
        "app.kubernetes.io/name": "kuberay", "ray.io/node-type": "head"}))
    return workload_calls() - before


def check_not_sent(calls):
    assert calls == 0, "pods without a TPU reached /mutate-workload (%d calls)" % calls


class NonTpuPodsNotSent(ClusterCase):
    """The real API server evaluates the chart's selectors and
    matchConditions: pods without a TPU, even in an opted-in namespace, never
    reach /mutate-workload (its count in the webhook's /metrics stays), a TPU
    pod does (the control)."""

    def test_counted(self):
        ns = "cl-non-tpu"
        cl.create_namespace(ns, INJECT)
        check_not_sent(create_non_tpu(ns))
        before = workload_calls()
        cl.kubectl("create", "-f", "-", input=cl.tpu_pod("tpu", ns))
        self.assertEqual(workload_calls(), before + 1, "the TPU pod (control) was not counted once")


def plain_dry_run_sent(ns):
    """A pod without a TPU, created with a server-side dry run in ns,
    reaches /mutate-workload."""
    before = workload_calls()
    cl.kubectl("create", "--dry-run=server", "-f", "-", input=cl.plain_pod("probe", ns))
    return workload_calls() > before


class NonTpuPodsNotSentWithoutMatchConditions(ClusterCase):
    """NonTpuPodsNotSent's negative control: with the matchConditions of
    the workload mutating webhooks removed, the same pods reach
    /mutate-workload (counted in the webhook's /metrics; it admits them
    unchanged), so the case's check fails: the count it reads sees calls,
    and it is the chart's matchConditions, evaluated by the API server,
    that keep them away."""

    def test_sent(self):
        ns = "cl-non-tpu-sent"
        cl.create_namespace(ns, INJECT)
        patch = [{"op": "remove", "path": "/webhooks/%d/matchConditions" % i} for i in (0, 1)]
        with op.configuration_patched(WORKLOAD_MUTATING, patch, lambda: plain_dry_run_sent(ns)):
            calls = create_non_tpu(ns)
        msg = op.fails(check_not_sent, calls)
        # The 5 pods; the head is kept away by the objectSelector still.
        self.assertEqual(calls, 5, msg)
        print("ok: the check fails: %s" % msg)


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


def other_webhook(case, ns):
    """Another mutating webhook (REINVOKE_SERVER, TLS on loopback, its own
    CA) registered for ns's pods, after this one (its configuration's name
    sorts later), reinvocationPolicy IfNeeded; seen active (a dry-run pod
    of ns carries its env); removed at the case's clean-up."""
    d = cl.env()["WH_CLUSTER_DIR"]
    certs = os.path.join(d, "other-webhook")
    cl.run(["bash", "-c", '. "$0/tests/cluster/lib/common.sh" && cluster_cert "$1" other 127.0.0.1',
            cl.REPO, certs])
    srv = subprocess.Popen([sys.executable, "-c", REINVOKE_SERVER, certs],
                           stdout=subprocess.PIPE, text=True)
    case.addCleanup(srv.stdout.close)
    case.addCleanup(srv.wait)
    case.addCleanup(srv.terminate)
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
    case.addCleanup(cl.kubectl, "delete", "mutatingwebhookconfiguration",
                    "zz-cluster-test-other-webhook", "--ignore-not-found")
    cl.wait_for(lambda: "OTHER_WEBHOOK" in create(cl.tpu_pod("probe", ns, INJECT), "--dry-run=server",
                                                  "-o", "json").stdout,
                60, "the other webhook's configuration active")


def reinvoked_job(ns):
    """The Indexed Job's stored pods, and the /mutate-workload calls their
    creation made."""
    before = workload_calls()
    pods = run_indexed_job(ns)
    return pods, workload_calls() - before


def check_reinvoked(pods, calls):
    """Reinvocation's checks: one dense slice, OTHER_WEBHOOK once in each
    container, and each pod's first call followed by its reinvocation after
    the other webhook."""
    physics.check_slices(pods)
    for p in pods:
        for c in p["spec"]["containers"]:
            n = [e["name"] for e in c["env"]].count("OTHER_WEBHOOK")
            assert n == 1, "OTHER_WEBHOOK %d times in %s" % (n, p["metadata"]["name"])
    assert calls >= 2 * len(pods), "this webhook was not called again (%d calls for %d pods)" % (calls, len(pods))


class Reinvocation(ClusterCase):
    """Another mutating webhook, called after this one (its configuration's
    name sorts later), changes every pod: the API server calls this webhook
    again (reinvocationPolicy IfNeeded), and the stored pods of an Indexed
    Job still carry each variable once and one dense slice."""

    def test_other_webhook_after(self):
        ns = "cl-reinvocation"
        cl.create_namespace(ns)
        other_webhook(self, ns)
        check_reinvoked(*reinvoked_job(ns))


def dry_run_calls(ns):
    """/mutate-workload calls of one labelled TPU pod's server-side dry run
    in ns."""
    before = workload_calls()
    cl.kubectl("create", "--dry-run=server", "-f", "-", input=cl.tpu_pod("probe", ns, INJECT))
    return workload_calls() - before


class ReinvocationNever(ClusterCase):
    """Reinvocation's negative control: with the workload mutating
    webhooks' reinvocationPolicy set to Never, the same Indexed Job after
    the same other webhook makes one call a pod, so the case's check of
    the reinvocation fails: it is the chart's IfNeeded it sees."""

    def test_never(self):
        ns = "cl-reinvocation-never"
        cl.create_namespace(ns)
        other_webhook(self, ns)
        patch = [{"op": "replace", "path": "/webhooks/%d/reinvocationPolicy" % i, "value": "Never"}
                 for i in (0, 1)]
        # Restored once a pod's dry run makes exactly its two calls again
        # (the first and the reinvocation, IfNeeded), not merely other
        # than one: a count off from both would be a fault of its own.
        with op.configuration_patched(WORKLOAD_MUTATING, patch, lambda: dry_run_calls(ns) == 1,
                                      restored=lambda: dry_run_calls(ns) == 2):
            pods, calls = reinvoked_job(ns)
        msg = op.fails(check_reinvoked, pods, calls)
        self.assertIn("not called again", msg)
        print("ok: the check fails: %s" % msg)


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


def renew_files(d, names):
    """A renewal as cert-manager's Secret update does it: a new key and
    serial from the same CA, written over the pair in d (the files the
    webhook serves); the new serial."""
    cl.run(["bash", "-c", '. "$0/tests/cluster/lib/common.sh" && cluster_cert "$@"',
            cl.REPO, d] + names[:1] + names)
    return file_serial(os.path.join(d, "tls.crt"))


def renew_twice(case, load, renew=renew_files):
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
            new = renew(os.path.join(d, "webhook"), names)
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


class CertRenewalNotServed(ClusterCase):
    """CertRenewal's negative control: the renewed pair written beside the
    files the webhook serves (a Secret update that never reaches the
    mount), so the webhook keeps serving the old certificate: the case's
    check of each new serial in the handshakes fails."""

    def test_not_served(self):
        ns = "cl-cert-renewal-not-served"
        cl.create_namespace(ns, INJECT)
        def elsewhere(d, names):
            return renew_files(d + "-not-served", names)
        msg = op.fails(renew_twice, self, cl.Load(ns, cl.tpu_pod, threads=1), elsewhere)
        self.assertRegex(msg, "the webhook at .* serving .*: not after")
        print("ok: the check fails: %s" % msg)


def doctor(ns):
    """`tpu-webhook doctor -o json -n ns` against the cluster (admin
    kubeconfig): its exit code (0 or 1) and report."""
    p = cl.run([cl.env()["WH_WEBHOOK_BINARY"], "doctor", "-o", "json", "-n", ns,
                "--kubeconfig", cl.env()["KUBECONFIG"]], check=False)
    assert p.returncode in (0, 1), p.stderr
    return p.returncode, json.loads(p.stdout)


def check_doctor_ok(rc, rep):
    assert rc == 0 and [s["status"] for s in rep["slices"]] == ["ok"], \
        "doctor did not find one ok slice (exit %d): %s" % (rc, rep)


def check_doctor_duplicate(rc, rep):
    """Doctor's finding on the broken Job: exit 1, train-v6e broken with
    duplicate-worker-id."""
    broken = [s for s in rep["slices"] if s["status"] == "broken"]
    assert rc == 1 and [s["name"] for s in broken] == ["train-v6e"], \
        "doctor did not name train-v6e broken (exit %d): %s" % (rc, rep)
    problems = {pr["problem"] for pr in broken[0]["problems"]}
    assert "duplicate-worker-id" in problems, "no duplicate-worker-id: %s" % broken[0]


class Doctor(ClusterCase):
    """`tpu-webhook doctor` pointed at the cluster (admin kubeconfig) reads
    the stored pods, Nodes and Services: the Indexed Job the webhook
    mutated is ok (exit 0); the same Job not opted in, with a fixed
    TPU_WORKER_ID=0 in its template (every host claims id 0), is named
    broken, with duplicate-worker-id on its pods (exit 1)."""

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
        check_doctor_ok(*doctor(good))
        check_doctor_duplicate(*doctor(bad))


class DoctorUnregistered(ClusterCase):
    """Doctor's negative control: with the webhook's mutating
    configurations deleted, the opted-in Indexed Job's pods are stored
    without their identity, and doctor does not call that slice ok, nor
    find the duplicate ids it finds in the broken Job: both of the case's
    checks fail on it, so the ok is the webhook's mutation and the
    duplicate the broken template's."""

    def test_unregistered(self):
        ns = "cl-doctor-unregistered"
        cl.create_namespace(ns)
        with op.webhook_unregistered():
            run_indexed_job(ns)
        rc, rep = doctor(ns)
        problems = sorted({pr["problem"] for s in rep["slices"] for pr in s["problems"]})
        print("doctor on the unmutated Job: exit %d, problems %s" % (rc, problems))
        ok, dup = op.fails(check_doctor_ok, rc, rep), op.fails(check_doctor_duplicate, rc, rep)
        self.assertIn("did not find one ok slice", ok)
        self.assertIn("no duplicate-worker-id", dup)
        print("ok: the ok check fails: %s\nok: the duplicate check fails: %s" % (ok[:200], dup[:200]))


if __name__ == "__main__":
    unittest.main()
