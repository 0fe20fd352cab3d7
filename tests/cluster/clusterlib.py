"""Helpers of the cluster suite's Python cases (tests/cluster/test_*.py): the
cluster of scripts/cluster.sh, read from $WH_CLUSTER_DIR/env, and the
kubectl calls the cases make. Each case judges what the real API server
stored (kubectl get -o json), with tests/engine/physics.py's rules.

A case that finds no cluster fails (it never skips): the ctest fixture
cluster.up brings one up first."""

import json
import os
import re
import ssl
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "engine"))
import physics  # noqa: E402,F401  (re-exported for the cases)

CLUSTER_SH = os.path.join(REPO, "scripts", "cluster.sh")
WORKLOADS = os.path.join(REPO, "tests", "fixtures", "workloads")


def cluster_env():
    d = os.environ.get("WH_CLUSTER_DIR") or os.path.join(REPO, "build-cluster")
    path = os.path.join(d, "env")
    if not os.path.exists(path):
        raise AssertionError("no cluster at %s (no env file): bash scripts/cluster.sh up, "
                             "or run the ctest fixture cluster.up" % d)
    env = {}
    with open(path) as f:
        lines = f.read().splitlines()
    for line in lines:
        m = re.match(r"^export ([A-Z_]+)=(.*)$", line.strip())
        if m:
            env[m.group(1)] = m.group(2).strip('"')
    env["PATH"] = env["CLUSTER_BIN"] + ":" + os.environ.get("PATH", "")
    return env


ENV = None


def env():
    global ENV
    if ENV is None:
        ENV = cluster_env()
    return ENV


def run(args, input=None, check=True, timeout=120):
    """Runs a command with the cluster's environment; returns the completed
    process (text). check: fail the case naming the command and its stderr."""
    e = dict(os.environ)
    e.update(env())
    p = subprocess.run(args, input=input, capture_output=True, text=True, env=e, timeout=timeout)
    if check and p.returncode != 0:
        raise AssertionError("%s: exit %d\n%s%s" % (" ".join(args), p.returncode, p.stdout[-2000:],
                                                     p.stderr[-4000:]))
    return p


def kubectl(*args, **kw):
    return run([os.path.join(env()["CLUSTER_BIN"], "kubectl")] + list(args), **kw)


def get_json(*args):
    return json.loads(kubectl("get", "-o", "json", *args).stdout)


def apply_yaml(text, ns=None, extra=()):
    args = ["apply", "-f", "-"] + (["-n", ns] if ns else []) + list(extra)
    return kubectl(*args, input=text)


def create_namespace(name, labels=None):
    """A fresh namespace (deleted first if a former run left it), whose
    ServiceAccount default exists before it is returned."""
    kubectl("delete", "namespace", name, "--ignore-not-found", "--wait=true", timeout=180)
    kubectl("create", "-f", "-", input=json.dumps({
        "apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": name, "labels": labels or {}}}))
    wait_for(lambda: kubectl("get", "sa", "default", "-n", name, check=False).returncode == 0,
             60, "ServiceAccount %s/default (kube-controller-manager's serviceaccount-controller)" % name)


def wait_for(pred, secs, what):
    end = time.time() + secs
    last = None
    while time.time() < end:
        try:
            v = pred()
            if v:
                return v
        except AssertionError as e:
            last = e
        time.sleep(0.5)
    raise AssertionError("%s: not after %d s%s" % (what, secs, "; last: %s" % last if last else ""))


def pods(ns, selector=None):
    args = ["pods", "-n", ns] + (["-l", selector] if selector else [])
    return get_json(*args)["items"]


def wait_pods(ns, count, selector=None, secs=90, settle=3):
    """The stored pods once there are count of them, and still count after
    settle seconds (a controller that made too many shows it)."""
    wait_for(lambda: len(pods(ns, selector)) >= count, secs,
             "%d pods in %s%s" % (count, ns, " (-l %s)" % selector if selector else ""))
    time.sleep(settle)
    got = pods(ns, selector)
    assert len(got) == count, "%d pods stored in %s, the workload asks %d: %s" % (
        len(got), ns, count, [p["metadata"]["name"] for p in got])
    return got


def webhook(action):
    run(["bash", CLUSTER_SH, "webhook", action], timeout=300)


def webhook_pid(i=0):
    with open(os.path.join(env()["WH_CLUSTER_DIR"], "pids", "tpu-webhook-%d" % i)) as f:
        return int(f.read())


def webhook_address(i=0):
    """The address webhook replica i listens on (cluster.sh's
    WH_WEBHOOK_ADDRESSES; one a replica)."""
    return env()["WH_WEBHOOK_ADDRESSES"].split()[i]


def metrics(i=0):
    """The webhook replica i's /metrics, as {(name, labels text): value}."""
    port = env()["WH_WEBHOOK_PORT"]
    ctx = ssl.create_default_context(cafile=env()["WH_WEBHOOK_CA"])
    ctx.check_hostname = False
    with urllib.request.urlopen("https://%s:%s/metrics" % (webhook_address(i), port), context=ctx,
                                timeout=10) as r:
        text = r.read().decode()
    out = {}
    for line in text.splitlines():
        m = re.match(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? ([0-9.eE+-]+|NaN)$", line)
        if m:
            out[(m.group(1), m.group(2) or "")] = float(m.group(3))
    return out


def metric_sum(ms, name, **labels):
    total = 0.0
    for (n, lab), v in ms.items():
        if n == name and all('%s="%s"' % (k, v2) in lab for k, v2 in labels.items()):
            total += v
    return total


def webhook_active():
    """A server-side dry run of a labelled TPU pod comes back mutated."""
    p = kubectl("create", "--dry-run=server", "-o", "json", "-f", "-", check=False,
                input=tpu_pod("probe", "default", labels={"tpu-webhook/inject": "enabled"}))
    return p.returncode == 0 and '"TPU_WORKER_ID"' in p.stdout


def wait_webhook_active(secs=120):
    wait_for(webhook_active, secs, "the webhook configuration active (a dry-run TPU pod mutated)")


def tpu_pod(name, ns, labels=None, topology="2x2", chips=4, accel="tpu-v6e-slice"):
    return json.dumps({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": ns, "labels": labels or {}},
        "spec": {"nodeSelector": {"cloud.google.com/gke-tpu-accelerator": accel,
                                  "cloud.google.com/gke-tpu-topology": topology},
                 "containers": [{"name": "c", "image": "busybox",
                                 "resources": {"limits": {"google.com/tpu": str(chips)}}}]}})


def plain_pod(name, ns, labels=None):
    return json.dumps({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": ns, "labels": labels or {}},
        "spec": {"containers": [{"name": "c", "image": "busybox",
                                 "resources": {"limits": {"cpu": "1"}}}]}})


def env_names(pod):
    return [e["name"] for c in pod["spec"]["containers"] for e in c.get("env") or []]


def require_cluster():
    """Fails (never skips) unless the cluster answers: a case's setUpClass."""
    env()
    kubectl("get", "--raw", "/readyz")


class Load:
    """Threads creating pods in ns through the API server (admin client
    certificate, one connection each) until stop(): pod(name, ns) gives
    each body (JSON text). The count created, and every refusal with its
    time and message, are kept."""

    def __init__(self, ns, pod, threads=6, prefix="load"):
        e = env()
        d = e["WH_CLUSTER_DIR"]
        self.ctx = ssl.create_default_context(cafile=e["WH_CLUSTER_CA"])
        self.ctx.load_cert_chain(os.path.join(d, "pki", "admin.crt"), os.path.join(d, "pki", "admin.key"))
        self.url = "%s/api/v1/namespaces/%s/pods" % (e["WH_APISERVER"], ns)
        self.ns, self.pod, self.prefix, self.created, self.failures = ns, pod, prefix, 0, []
        self.lock, self.halt = threading.Lock(), threading.Event()
        self.threads = [threading.Thread(target=self.run, args=(t,), daemon=True) for t in range(threads)]

    def create(self, name):
        req = urllib.request.Request(self.url, data=self.pod(name, self.ns).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, context=self.ctx, timeout=60) as r:
                r.read()
            return None
        except urllib.error.HTTPError as e:
            return "%d %s" % (e.code, e.read().decode(errors="replace")[:1000])
        except OSError as e:
            return str(e)

    def run(self, t):
        k = 0
        while not self.halt.is_set():
            err = self.create("%s-%d-%d" % (self.prefix, t, k))
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

    def unmutated(self):
        """The load's stored pods without TPU_WORKER_ID (the webhook did
        not admit them)."""
        return [p["metadata"]["name"] for p in pods(self.ns)
                if p["metadata"]["name"].startswith(self.prefix + "-") and "TPU_WORKER_ID" not in env_names(p)]
