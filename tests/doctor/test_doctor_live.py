#!/usr/bin/env python3
"""The live slice check of `tpu-webhook serve` agrees with `tpu-webhook doctor`
on the same pods (issue 26, item 2; docs/troubleshooting.md, "Alert
TPUWebhookSliceBroken").

The KubeRay slices of the doctor fixtures (1.6 native labels, 1.4 legacy,
TPU7x two containers; built by test_doctor.py's cluster(), i.e. `tpu-webhook
render` as KubeRay and the webhook make them), each in a namespace of its
own, are loaded into the fake API server (tests/kube/fake_apiserver.py) with
their nodes and Services, two of them broken. serve runs against it with
--debug-slices; /metrics and /debug/slices must name the same broken slices
with the same problem counts as doctor against the same fake, minus what the
live check cannot see (Services are not cached, drift is not judged:
wh/slices.h). Then a pod is updated (broken) and one deleted, and the
metrics must follow, again equal to doctor's. Counting, not timing: waits
poll for the expected state with a generous deadline.

Usage: test_doctor_live.py BINARY FIXTURES_DIR"""
import copy
import http.client
import json
import os
import re
import ssl
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import test_doctor as td  # noqa: E402  (cluster(), env(): the fixtures' slices)

import fakeapi  # noqa: E402  (the fake API server, its kubeconfig)
TOKEN = "live-token"
BINARY = None
NOT_LIVE = ("drift",)  # never judged live; service-* cannot appear (no Services cached)
SERIES = re.compile(r'^tpu_webhook_slice_problems\{namespace="([^"]*)",kind="([^"]*)",'
                    r'problem="([^"]*)"\} (\d+)$', re.M)


def control(port, what, body):
    return fakeapi.control(port, what, body, timeout=60)


def in_namespace(c, ns, prefix):
    """The cluster's objects moved to namespace ns, nodes and pools renamed."""
    c = json.loads(json.dumps(c).replace('"node-', '"%snode-' % prefix)
                   .replace('"pool-', '"%spool-' % prefix))
    for o in c["pods"] + c["services"]:
        o["metadata"]["namespace"] = ns
    return c


def tpu_env(pod, name):
    return td.env(pod, name)


class Live(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="doctor-live-")
        cls.procs = []
        cls.api, cls.port, cls.kubeconfig = fakeapi.start(cls.tmp, TOKEN, "--bookmark-interval",
                                                          "0.5")
        cls.procs.append(cls.api)
        parts = [in_namespace(td.cluster("kuberay-native"), "live-native", "n"),
                 in_namespace(td.cluster("kuberay-legacy"), "live-legacy", "l"),
                 in_namespace(td.cluster("tpu7x"), "live-tpu7x", "t")]
        cls.pods = [p for c in parts for p in c["pods"]]
        # Every pod is one the server's pod watch selects (cache.h): else the
        # comparison below would pass over pods the live check never saw.
        for p in cls.pods:
            lab = p["metadata"]["labels"]
            assert lab.get("ray.io/node-type") == "worker", p["metadata"]["name"]
            assert lab.get("app.kubernetes.io/created-by") == "kuberay-operator", lab
        # Broken at the start: a legacy pod holds another's TPU_WORKER_ID; a
        # native pod's TPU_WORKER_HOSTNAMES differs from its slice's.
        legacy = [p for p in parts[1]["pods"]
                  if p["metadata"]["labels"].get("replicaIndex") == "slices-1"]
        td.env(legacy[2], "TPU_WORKER_ID", value=td.env(legacy[1], "TPU_WORKER_ID"))
        cls.native = [p for p in parts[0]["pods"]
                      if p["metadata"]["labels"].get("ray.io/worker-group-replica-index") == "0"]
        h = td.env(cls.native[1], "TPU_WORKER_HOSTNAMES")
        td.env(cls.native[1], "TPU_WORKER_HOSTNAMES", value=h + ",extra-host")
        control(cls.port, "pods", cls.pods)
        control(cls.port, "nodes", [n for c in parts for n in c["nodes"]])
        control(cls.port, "services", [s for c in parts for s in c["services"]])
        subprocess.run([BINARY, "certs", "--dir", cls.tmp], check=True, capture_output=True)
        cls.log = open(os.path.join(cls.tmp, "serve.log"), "w+")
        cls.srv = subprocess.Popen(
            [BINARY, "serve", "--bind-address=127.0.0.1:0", "--kube-config-path", cls.kubeconfig,
             "--tls-cert-file=" + os.path.join(cls.tmp, "tls.crt"),
             "--tls-private-key-file=" + os.path.join(cls.tmp, "tls.key"),
             "--debug-slices", "--slice-check-interval=200ms"],
            stdout=cls.log, stderr=subprocess.STDOUT, env=dict(os.environ, POD_NAMESPACE="ray-system"))
        cls.procs.append(cls.srv)
        cls.srv_port = cls.wait_port()
        cls.ctx = ssl.create_default_context(cafile=os.path.join(cls.tmp, "ca.crt"))

    @classmethod
    def tearDownClass(cls):
        for p in reversed(cls.procs):
            p.terminate()
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        cls.log.close()

    @classmethod
    def wait_port(cls):
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            cls.log.seek(0)
            for line in cls.log:
                if '"event":"listening"' in line:
                    return json.loads(line)["port"]
            if cls.srv.poll() is not None:
                break
            time.sleep(0.05)
        cls.log.seek(0)
        raise AssertionError("serve did not start:\n" + cls.log.read())

    def get(self, path):
        c = http.client.HTTPSConnection("127.0.0.1", self.srv_port, context=self.ctx, timeout=10)
        c.request("GET", path)
        r = c.getresponse()
        body = r.read().decode()
        c.close()
        return r.status, body

    def doctor(self):
        """Doctor against the same fake: {(ns, kind, slice): Counter of problems}."""
        p = subprocess.run([BINARY, "doctor", "-o", "json", "--kubeconfig", self.kubeconfig],
                           capture_output=True, timeout=120)
        self.assertIn(p.returncode, (0, 1), p.stderr.decode())
        return json.loads(p.stdout)

    @staticmethod
    def judged(rep):
        """Broken slices -> sorted problem ids, and (ns, kind, problem) -> count,
        over what the live check can judge."""
        broken, counts = {}, {}
        for s in rep["slices"]:
            probs = [pr["problem"] for pr in s["problems"] if pr["problem"] not in NOT_LIVE]
            for pr in probs:
                k = (s["namespace"], s["kind"], pr)
                counts[k] = counts.get(k, 0) + 1
            if any(pr["severity"] == "error" for pr in s["problems"]
                   if pr["problem"] not in NOT_LIVE):
                broken[(s["namespace"], s["kind"], s["name"])] = sorted(probs)
        return broken, counts

    def live(self):
        st, text = self.get("/metrics")
        self.assertEqual(st, 200)
        st, body = self.get("/debug/slices")
        self.assertEqual(st, 200, body)
        doc = json.loads(body)
        counts = {(m[0], m[1], m[2]): int(m[3]) for m in SERIES.findall(text)}
        ok = int(re.search(r'^tpu_webhook_slices\{state="ok"\} (\d+)$', text, re.M).group(1))
        nbroken = int(re.search(r'^tpu_webhook_slices\{state="broken"\} (\d+)$', text,
                                re.M).group(1))
        broken = {(s["namespace"], s["kind"], s["name"]): sorted(p["problem"] for p in s["problems"])
                  for s in doc.get("slices", [])}
        return {"ok": ok, "broken": nbroken, "counts": counts, "slices": broken, "doc": doc,
                "pods": doc.get("pods")}

    def agree(self, expect_broken):
        """Poll until the live view equals doctor's; returns it."""
        rep = self.doctor()
        d_broken, d_counts = self.judged(rep)
        self.assertEqual(set(k[2] for k in d_broken), expect_broken, d_broken)
        want = {"ok": len(rep["slices"]) - len(d_broken), "broken": len(d_broken),
                "counts": d_counts, "slices": d_broken, "pods": rep["pods"]}
        deadline, got = time.monotonic() + 60, None
        while time.monotonic() < deadline:
            got = self.live()
            if all(got[k] == want[k] for k in want):
                return got
            time.sleep(0.2)
        self.assertEqual({k: got[k] for k in want}, want)

    def test_1_agrees_then_follows_update_and_delete(self):
        got = self.agree({"v6e-multislice/slices/1", "v6e-multislice/slices/0"})
        self.assertGreater(got["pods"], 10)
        self.assertIn("duplicate-worker-id", got["slices"][("live-legacy", "RayCluster",
                                                            "v6e-multislice/slices/1")])
        self.assertIn("hostnames-differ", got["slices"][("live-native", "RayCluster",
                                                         "v6e-multislice/slices/0")])
        self.assertTrue(got["doc"]["checked"])
        # An UPDATE: the first native replica heals; the TPU7x slice breaks
        # (one pod's TPU_WORKER_ID out of range).
        fixed = copy.deepcopy(self.native[1])
        td.env(fixed, "TPU_WORKER_HOSTNAMES", value=td.env(self.native[0], "TPU_WORKER_HOSTNAMES"))
        t7 = [p for p in self.pods if p["metadata"]["namespace"] == "live-tpu7x"]
        bad7 = copy.deepcopy(t7[0])
        td.env(bad7, "TPU_WORKER_ID", value="97")
        control(self.port, "pods", [fixed, bad7])
        got = self.agree({"v6e-multislice/slices/1", t7_slice(bad7)})
        # A DELETE: the pod holding the duplicate id goes; its slice now
        # misses a host instead.
        legacy = [p for p in self.pods if p["metadata"]["namespace"] == "live-legacy" and
                  p["metadata"]["labels"].get("replicaIndex") == "slices-1"]
        control(self.port, "pods/delete", [legacy[2]])
        got = self.agree({"v6e-multislice/slices/1", t7_slice(bad7)})
        self.assertIn("missing-hosts", got["slices"][("live-legacy", "RayCluster",
                                                      "v6e-multislice/slices/1")])
        self.assertNotIn("duplicate-worker-id", got["slices"][("live-legacy", "RayCluster",
                                                               "v6e-multislice/slices/1")])

    def test_2_metric_text(self):
        _, text = self.get("/metrics")
        self.assertIn("# TYPE tpu_webhook_slices gauge\n", text)
        self.assertIn("# TYPE tpu_webhook_slice_problems gauge\n", text)
        self.assertRegex(text, r"tpu_webhook_slice_checks_total [1-9]")
        # The help text says what the live check cannot see.
        self.assertIn("Service", text)
        self.assertIn("KubeRay worker slices only", text)

    def test_3_problem_series_are_capped(self):
        """210 namespaces with a broken slice each: 199 series of their own,
        the rest summed in one (other) series, the total still doctor's."""
        base = td.cluster("tpu7x")
        pods, nodes, services = [], [], []
        for i in range(210):
            c = in_namespace(base, "cap-%03d" % i, "c%03d" % i)
            pods.append(c["pods"][0])  # host 1 missing: missing-hosts
            nodes += c["nodes"]
            services += c["services"]
        control(self.port, "nodes", nodes)
        control(self.port, "services", services)
        control(self.port, "pods", pods)
        rep = self.doctor()
        _, d_counts = self.judged(rep)
        self.assertGreater(len(d_counts), 200)
        deadline, got = time.monotonic() + 60, None
        while time.monotonic() < deadline:
            got = self.live()
            if sum(got["counts"].values()) == sum(d_counts.values()):
                break
            time.sleep(0.2)
        self.assertEqual(sum(got["counts"].values()), sum(d_counts.values()))
        self.assertEqual(len(got["counts"]), 200)
        other = got["counts"][("(other)", "(other)", "(other)")]
        self.assertEqual(other, sum(v for k, v in d_counts.items() if k not in got["counts"]))
        self.assertEqual(got["broken"], sum(1 for s in rep["slices"] if s["status"] == "broken"))


def t7_slice(pod):
    lab = pod["metadata"]["labels"]
    return "%s/%s/%s" % (lab["ray.io/cluster"], lab["ray.io/group"],
                         lab["ray.io/worker-group-replica-index"])


if __name__ == "__main__":
    BINARY, td.FIX = sys.argv[1], sys.argv[2]
    td.BINARY = BINARY
    unittest.main(argv=sys.argv[:1], verbosity=2)
