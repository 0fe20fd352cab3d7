"""Install variants of the cluster suite: each class brings up a cluster of
its own (scripts/cluster.sh up, in a directory beside the shared one, with
the shared cluster's tpu-webhook binary and no operators) and brings it
down at the end, whatever happened."""

import json
import os
import re
import subprocess
import sys
import time
import ssl
import unittest
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import clusterlib as cl  # noqa: E402
import operators as op  # noqa: E402
from clusterlib import physics  # noqa: E402
from test_core import legacy_worker_pod  # noqa: E402

INDEXED_JOB = os.path.join(cl.WORKLOADS, "indexed-job-v6e-4x4.yaml")


# The shared cluster's env, read once: a class's set-up points
# WH_CLUSTER_DIR at its own cluster for the classes after it in a process.
SHARED = {}


class OwnCluster(unittest.TestCase):
    """A base: its own cluster, up with UP_ARGS, in <shared dir>-<CLUSTER,
    else the class's name in lower case>.

    Classes that name the same CLUSTER (with the same UP_ARGS) share one
    cluster, to save its `up`: a class with KEEP leaves it up for the
    next, which reuses it when every process of it still runs (cluster.sh
    status) and it was brought up with the same arguments; otherwise it
    brings up a fresh one. ctest runs a file's entries in the order of its
    classes (the suite runs serially: RESOURCE_LOCK), so the last class of
    a CLUSTER, without KEEP, brings it down; a class run alone leaves a
    KEEP cluster to the fixture cluster.down, which stops every
    <shared dir>-*."""
    UP_ARGS = []
    CLUSTER = None
    KEEP = False

    @classmethod
    def setUpClass(cls):
        shared = SHARED or SHARED.update(cl.env()) or SHARED
        name = getattr(cls, "CLUSTER", None)
        d = shared["WH_CLUSTER_DIR"] + "-" + (name or cls.__name__.lower())
        env = dict(os.environ, WH_CLUSTER_DIR=d)
        # Inner timeouts stay under ctest's (600 s, tests/cluster/CMakeLists.txt)
        # so that tearDownClass runs; a class ctest kills anyway is stopped by
        # cluster.down, which stops every <shared dir>-* too.
        cls.down = lambda: subprocess.run(["bash", cl.CLUSTER_SH, "down"], env=env,
                                          capture_output=True, timeout=90)
        args = ["--components", "", "--webhook", shared["WH_WEBHOOK_BINARY"], "--keep-logs"] + cls.UP_ARGS
        stamp = os.path.join(d, "own-cluster-args")
        cls.reused = False
        if name and os.path.isfile(stamp) and os.path.isfile(os.path.join(d, "env")):
            with open(stamp) as f:
                same = f.read() == json.dumps(args)
            cls.reused = same and subprocess.run(["bash", cl.CLUSTER_SH, "status"], env=env,
                                                 capture_output=True, timeout=60).returncode == 0
        t0 = time.time()
        if not cls.reused:
            cls.down()
            p = subprocess.run(["bash", cl.CLUSTER_SH, "up"] + args,
                               env=env, capture_output=True, text=True, timeout=300)
            if p.returncode:
                cls.down()
                raise AssertionError("cluster.sh up %s: exit %d\n%s" % (
                    " ".join(cls.UP_ARGS), p.returncode, p.stderr[-4000:]))
            with open(stamp, "w") as f:
                f.write(json.dumps(args))
        print("cluster %s: %s" % (d, "reused" if cls.reused else "up in %.0f s" % (time.time() - t0)))
        os.environ["WH_CLUSTER_DIR"] = d
        cl.ENV = None

    @classmethod
    def tearDownClass(cls):
        if not getattr(cls, "KEEP", False):
            cls.down()


KUSTOMIZE = ["--install", "kustomize"]


def kustomize_indexed_job(ns):
    """The Indexed Job's stored pods in a fresh ns."""
    cl.create_namespace(ns)
    cl.kubectl("apply", "-n", ns, "-f", INDEXED_JOB)
    return cl.wait_pods(ns, 4, selector="job-name=train-v6e")


class Kustomize(OwnCluster):
    """The webhook installed from deploy/kustomize (base and the workload
    webhooks, no cert-manager) instead of the chart: the Indexed Job's
    stored pods pass the same physics."""
    UP_ARGS, CLUSTER, KEEP = KUSTOMIZE, "kustomize", True

    def test_indexed_job(self):
        self.assertEqual(cl.env()["WH_WEBHOOK_INSTALL"], "kustomize")
        cfg = cl.get_json("mutatingwebhookconfiguration", "tpu-webhook-workload-mutating-cfg")
        self.assertNotIn("helm.sh/chart", json.dumps(cfg["metadata"]))
        physics.check_slices(kustomize_indexed_job("cl-kustomize"))


class KustomizeUnregistered(OwnCluster):
    """Kustomize's negative control, on its cluster: with the install's
    mutating configurations deleted, the same Indexed Job's stored pods
    fail the physics."""
    UP_ARGS, CLUSTER, KEEP = KUSTOMIZE, "kustomize", True

    def test_unregistered(self):
        with op.webhook_unregistered():
            pods = kustomize_indexed_job("cl-kustomize-unregistered")
        print("ok: the check fails: %s" % op.fails(physics.check_slices, pods))


# The labels of everything an install and the webhook create (docs/deploy.md,
# "Uninstall"): the install's own objects, and the claim Leases.
PROJECT_SELECTORS = ("app.kubernetes.io/name=kuberay-tpu-webhook",
                     "app.kubernetes.io/managed-by=tpu-webhook,app.kubernetes.io/component=worker-id-claim")
WEBHOOK_KINDS = "mutatingwebhookconfiguration,validatingwebhookconfiguration"


def uninstall_blocks():
    """The sh blocks of docs/deploy.md's Uninstall section, in order: the
    webhook configurations, the Helm one, the kustomize (by-hand) one, the
    claim Leases."""
    with open(os.path.join(cl.REPO, "docs", "deploy.md")) as f:
        doc = f.read()
    section = doc.split("\n## Uninstall\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```sh\n(.*?)```", section, re.S)
    assert len(blocks) == 4, "docs/deploy.md's Uninstall: %d sh blocks, not 4: %s" % (len(blocks), blocks)
    return blocks


def labelled():
    """Every object, of every listable kind but Events (which expire), with
    the project's labels."""
    kinds = [k for k in cl.kubectl("api-resources", "--verbs=list", "-o", "name").stdout.split()
             if k.split(".")[0] != "events"]
    return [o for sel in PROJECT_SELECTORS
            for o in cl.kubectl("get", ",".join(kinds), "-A", "-l", sel, "-o", "name").stdout.split()]


def admit_and_claim(case, ns):
    """Pods admitted through the install and a legacy worker id claimed, so
    that the uninstall has runtime objects (the claim Lease) to remove."""
    cl.create_namespace(ns)
    cl.kubectl("create", "-f", "-", input=cl.tpu_pod("p", ns, {"tpu-webhook/inject": "enabled"}))
    cl.kubectl("create", "-f", "-", input=legacy_worker_pod("legacy", ns))
    for name in ("p", "legacy"):
        assert "TPU_WORKER_ID" in cl.env_names(cl.get_json("pod", name, "-n", ns)), \
            "pod %s/%s stored without TPU_WORKER_ID: the webhook did not admit it" % (ns, name)
    cl.wait_for(lambda: any(o.startswith("lease.") for o in labelled()), 30,
                "the legacy worker id's Lease")
    case.assertIn("deployment.apps/kuberay-tpu-webhook", labelled())


def run_steps(steps):
    path = os.path.join(cl.REPO, "build-tools", "helm4") + ":" + cl.env()["PATH"]
    for step in steps:
        cl.run(["bash", "-euo", "pipefail", "-c", "export PATH=%s\n%s" % (path, step)], timeout=180)


class UninstallKustomizeUnregistered(OwnCluster):
    """UninstallKustomize's negative control, on the kustomize cluster
    (before that case removes the install): admit_and_claim fails with the
    install's mutating configurations deleted."""
    UP_ARGS, CLUSTER, KEEP = KUSTOMIZE, "kustomize", True

    def test_unregistered(self):
        with op.webhook_unregistered():
            print("ok: the check fails: %s" % op.fails(admit_and_claim, self, "cl-uninstall-kustomize-unreg"))


class UninstallKustomize(OwnCluster):
    """docs/deploy.md's uninstall of a kustomize install (cluster.sh
    --install kustomize: deploy/kustomize/base and the workload webhooks),
    its commands read from that file: the webhook configurations, the
    by-hand block (each line but those the doc marks for cert-manager or
    monitoring installs, which this one is not) and the claim Leases. Then
    every object the install applied is gone but the Namespace (kept, as
    the doc says), nothing of the project's labels is left, no webhook
    configuration names the webhook, and with the webhook processes
    stopped too a TPU pod is created, unmutated: nothing calls a webhook
    that is not there."""
    UP_ARGS, CLUSTER = KUSTOMIZE, "kustomize"
    SKIPPED = re.compile(r"#\s*(cert-manager|monitoring) installs\s*$")

    def installed(self):
        """(kind, namespace, name) of each object cluster.sh applied."""
        import yaml
        path = os.path.join(cl.env()["WH_CLUSTER_DIR"], "kustomize", "installed.yaml")
        with open(path) as f:
            docs = [d for d in yaml.safe_load_all(f) if d]
        return [(d["kind"], d["metadata"].get("namespace", ""), d["metadata"]["name"]) for d in docs]

    def test_everything_removed(self):
        self.assertEqual(cl.env()["WH_WEBHOOK_INSTALL"], "kustomize")
        objs = self.installed()
        hooks = [o for o in objs if o[0].endswith("WebhookConfiguration")]
        self.assertEqual(len(hooks), 4, hooks)
        ns = "cl-uninstall-kustomize"
        admit_and_claim(self, ns)
        first, _, by_hand, leases = uninstall_blocks()
        lines = [ln for ln in by_hand.splitlines() if ln.strip()]
        kept = [ln for ln in lines if not self.SKIPPED.search(ln)]
        # The two lines for installs with cert-manager or monitoring, whose
        # kinds this cluster does not serve.
        self.assertEqual(len(lines) - len(kept), 2, lines)
        run_steps([first, "\n".join(kept), leases])
        cl.wait_for(lambda: labelled() == [], 60, "no object of the project's labels (left: %s)" % labelled())
        for kind, namespace, name in objs:
            if kind == "Namespace":
                continue
            with self.subTest(kind=kind, name=name):
                args = ["get", kind, name, "--ignore-not-found", "-o", "name"]
                args += ["-n", namespace] if namespace else []
                self.assertEqual(cl.kubectl(*args).stdout.strip(), "", "%s %s/%s left" % (kind, namespace, name))
        left = cl.kubectl("get", WEBHOOK_KINDS, "-o", "name").stdout.split()
        self.assertEqual([o for o in left if "tpu-webhook" in o], [])
        cl.webhook("stop")
        for name, labels in (("after", None), ("after-inject", {"tpu-webhook/inject": "enabled"})):
            cl.kubectl("create", "-f", "-", input=cl.tpu_pod(name, ns, labels))
            pod = cl.get_json("pod", "-n", ns, name)
            self.assertNotIn("TPU_WORKER_ID", cl.env_names(pod))


class UninstallUnregistered(OwnCluster):
    """Uninstall's negative control, on its cluster: with the webhook's
    mutating configurations deleted, the pods the case creates before
    the uninstall are stored unmutated and no worker id is claimed, so
    its first check (admit_and_claim) fails."""
    CLUSTER, KEEP = "uninstall", True

    def test_unregistered(self):
        with op.webhook_unregistered():
            print("ok: the check fails: %s" % op.fails(admit_and_claim, self, "cl-uninstall-unregistered"))


class Uninstall(OwnCluster):
    """docs/deploy.md's uninstall of a Helm install, its own commands read
    from that file (the webhook configurations first, `helm uninstall`, the
    claim Leases), after the webhook has admitted pods and claimed a legacy
    worker id: no object of any listable kind but Events is left with the
    chart's label or the claims' labels, and a TPU pod is then created as
    if the webhook had never been installed."""
    CLUSTER = "uninstall"

    def test_nothing_labelled_left(self):
        ns = "cl-uninstall"
        admit_and_claim(self, ns)
        first, helm, _, leases = uninstall_blocks()
        self.assertIn("helm uninstall", helm)
        run_steps([first, helm, leases])
        cl.wait_for(lambda: labelled() == [], 60, "no object of the project's labels (left: %s)" % labelled())
        cl.kubectl("create", "-f", "-", input=cl.tpu_pod("after", ns))
        cl.kubectl("get", "pod", "-n", ns, "after")


def create_labelled_tpu_pod(ns):
    """A TPU pod opted in to the workload webhook, created in a fresh ns
    (not a dry run: the API server stores what the webhook made of it)."""
    cl.create_namespace(ns)
    return cl.kubectl("create", "-f", "-", check=False,
                      input=cl.tpu_pod("p", ns, labels={"tpu-webhook/inject": "enabled"}))


class ClientCert(OwnCluster):
    """docs/deploy.md, "Client certificates", on a real kube-apiserver: the
    webhook runs with --client-ca-file, and kube-apiserver's
    --admission-control-config-file gives its webhook calls a client
    certificate of that CA (a WebhookAdmissionConfiguration's
    kubeConfigFile): a TPU pod is mutated, no handshake is refused, and a
    client without a certificate still reads /metrics (probes and
    Prometheus) but gets 403 on /mutate."""
    UP_ARGS = ["--webhook-client-cert", "on"]

    def test_tpu_pod_mutated(self):
        self.assertEqual(cl.env()["WH_WEBHOOK_CLIENT_CERT"], "on")
        p = create_labelled_tpu_pod("cl-clientcert")
        self.assertEqual(p.returncode, 0, p.stderr)
        pod = cl.get_json("pod", "p", "-n", "cl-clientcert")
        self.assertIn("TPU_WORKER_ID", [e["name"] for e in pod["spec"]["containers"][0].get("env", [])])
        with open(os.path.join(cl.env()["WH_CLUSTER_DIR"], "webhook", "run-0.sh")) as f:
            self.assertIn("--client-ca-file", f.read())
        ms = cl.metrics()  # no client certificate: /metrics answers
        self.assertEqual(cl.metric_sum(ms, "tpu_webhook_tls_client_certs_refused_total"), 0)
        self.assertEqual(cl.metric_sum(ms, "tpu_webhook_tls_cert_refused"), 0)
        ctx = ssl.create_default_context(cafile=cl.env()["WH_WEBHOOK_CA"])
        ctx.check_hostname = False
        req = urllib.request.Request("https://%s:%s/mutate" % (cl.webhook_address(), cl.env()["WH_WEBHOOK_PORT"]),
                                     data=b"{}", headers={"Content-Type": "application/json"})
        with self.assertRaises(urllib.error.HTTPError) as cm:
            urllib.request.urlopen(req, context=ctx, timeout=10)
        self.assertEqual(cm.exception.code, 403)


class ClientCertMissing(OwnCluster):
    """ClientCert's negative control: the webhook requires the certificate
    but kube-apiserver has no admission configuration, so it presents none;
    the webhook answers its call 403, the call fails and, failurePolicy
    Fail, the TPU pod is refused and not stored."""
    UP_ARGS = ["--webhook-client-cert", "missing"]

    def test_tpu_pod_refused(self):
        self.assertEqual(cl.env()["WH_WEBHOOK_CLIENT_CERT"], "missing")
        p = create_labelled_tpu_pod("cl-clientcert-missing")
        self.assertNotEqual(p.returncode, 0, "the pod was admitted: %s" % p.stdout)
        self.assertIn("failed calling webhook", p.stderr)
        self.assertEqual(cl.pods("cl-clientcert-missing"), [])
        self.assertIn("client certificate", p.stderr)  # the webhook's 403 Status, relayed
        print("ok: refused: %s" % p.stderr.strip()[:300])


def create_job(ns, name, tpu):
    """An Indexed Job of one pod in ns; with tpu, its TPU pod template lacks
    the topology (the webhook warns its pods); without, it is suspended and
    asks for no TPU (nothing to warn). Its uid."""
    spec = {"restartPolicy": "Never",
            "containers": [{"name": "c", "image": "busybox"}]}
    if tpu:
        spec["nodeSelector"] = {"cloud.google.com/gke-tpu-accelerator": "tpu-v6e-slice"}
        spec["containers"][0]["resources"] = {"limits": {"google.com/tpu": "4"}}
    cl.kubectl("create", "-n", ns, "-f", "-", input=json.dumps({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": name},
        "spec": {"completions": 1, "parallelism": 1, "completionMode": "Indexed",
                 "suspend": not tpu, "template": {"spec": spec}}}))
    return cl.get_json("job", name, "-n", ns)["metadata"]["uid"]


def job_events(ns):
    """The webhook's Events (reason TPU...) on Jobs of ns."""
    return [e for e in cl.get_json("events", "-n", ns)["items"]
            if e["involvedObject"].get("kind") == "Job" and e["reason"].startswith("TPU")]


def check_job_events(ns, name, uid):
    """JobEventUid's checks: the webhook's Events on the Jobs of ns (waited
    for) are each about Job name and carry its uid, and no Event was held
    back as unverified. The Events."""
    evs = cl.wait_for(lambda: job_events(ns), 60, "the webhook's Event on Job %s/%s" % (ns, name))
    for e in evs:
        o = e["involvedObject"]
        assert o["name"] == name, "an Event about Job %s/%s, which the request does not name: %s" % (
            ns, o["name"], e["metadata"]["name"])
        assert o.get("uid") == uid, "an Event on Job %s/%s with uid %s, not the Job's %s" % (
            ns, name, o.get("uid"), uid)
    unverified = cl.metric_sum(cl.metrics(), "tpu_webhook_events_total", result="unverified")
    assert unverified == 0, "%d Event(s) held back as unverified" % unverified
    return evs


class JobEventUid(OwnCluster):
    """An Event about a Job names the uid the API server confirmed (issue
    35, item 2: the Events thread GETs the Job a pod names, with the
    chart's RBAC, before it writes): a real Indexed Job whose TPU pod
    template lacks the topology; the Job controller's pods are warned, and
    the Event on the Job carries the Job's own uid, so `kubectl describe
    job` lists it. Its cluster is kept for JobEventUidForged."""
    UP_ARGS, CLUSTER, KEEP = [], "jobeventuid", True

    def test_event_carries_the_job_uid(self):
        ns = "cl-job-event-uid"
        cl.create_namespace(ns, labels={"tpu-webhook/inject": "enabled"})
        uid = create_job(ns, "no-topology", tpu=True)
        evs = check_job_events(ns, "no-topology", uid)
        print("ok: %d Event(s) on the Job with its uid %s: %s" % (len(evs), uid, evs[0]["reason"]))


FORGED_UID = "00000000-0000-4000-8000-00000000dead"


def forge_event(ns, genuine, name, uid):
    """A copy of the webhook's Event genuine, as the webhook would write it,
    about Job ns/name with uid; its name."""
    ev = {k: v for k, v in genuine.items() if k not in ("metadata", "involvedObject")}
    ev["metadata"] = {"name": "forged.%s.%d" % (name, time.time_ns()), "namespace": ns}
    ev["involvedObject"] = dict(genuine["involvedObject"], name=name, uid=uid)
    cl.kubectl("create", "-f", "-", input=json.dumps(ev))
    return ev["metadata"]["name"]


class JobEventUidForged(OwnCluster):
    """JobEventUid's negative control: beside the webhook's genuine Event
    (the case's check passes on it first), an Event written as the webhook
    writes its own, but naming the Job with a uid that is not the Job's,
    then another about a real Job of the namespace that no request named:
    the case's check fails on each, so a webhook that wrote either would
    fail the case. Removed, the check passes again."""
    UP_ARGS, CLUSTER = [], "jobeventuid"

    def test_forged_events_fail_the_check(self):
        ns = "cl-job-event-uid-forged"
        cl.create_namespace(ns, labels={"tpu-webhook/inject": "enabled"})
        uid = create_job(ns, "no-topology", tpu=True)
        genuine = check_job_events(ns, "no-topology", uid)[0]
        create_job(ns, "bystander", tpu=False)
        msgs = []
        for name, forged_uid, want in (("no-topology", FORGED_UID, "with uid %s, not the Job's" % FORGED_UID),
                                       ("bystander", cl.get_json("job", "bystander", "-n", ns)["metadata"]["uid"],
                                        "Job %s/bystander, which the request does not name" % ns)):
            ev = forge_event(ns, genuine, name, forged_uid)
            try:
                msg = op.fails(check_job_events, ns, "no-topology", uid)
            finally:
                cl.kubectl("delete", "event", ev, "-n", ns)
            self.assertIn(want, msg)
            msgs.append(msg)
        check_job_events(ns, "no-topology", uid)
        print("ok: the check fails on a wrong uid: %s\nok: and on another Job: %s" % tuple(msgs))


if __name__ == "__main__":
    unittest.main()
