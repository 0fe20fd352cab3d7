#!/usr/bin/env python3
"""tpu-webhook doctor against the fake API server (tests/kube/fake_apiserver.py):
10,000 TPU pods in 1,000 slices (Indexed Jobs of 10 v5p hosts, rendered by
`tpu-webhook render` as the Job controller and the webhook make them), one of
them broken. Checks the answer (exactly that slice and pod, exit 1), that
doctor listed each resource in pages of 500 (the fake counts LIST requests
by path: one per page), the namespaced paths of -n, and prints the time
doctor took (a figure, not an assertion: the machine is shared).

Usage: test_doctor_cluster.py BINARY"""
import json
import os
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import fakeapi  # noqa: E402  (the fake API server, its kubeconfig)
BINARY = None
TOKEN = "doctor-token"
SLICES, HOSTS = 1000, 10
PAGE = 500  # doctor's page size (kubectl's and client-go's)
JOB = """apiVersion: batch/v1
kind: Job
metadata: {name: sj0000, namespace: team}
spec:
  completionMode: Indexed
  parallelism: 10
  completions: 10
  template:
    metadata: {labels: {tpu-webhook/inject: enabled}}
    spec:
      subdomain: sj0000
      restartPolicy: Never
      nodeSelector:
        cloud.google.com/gke-tpu-accelerator: tpu-v5p-slice
        cloud.google.com/gke-tpu-topology: 2x4x5
      containers:
      - name: trainer
        image: IMAGE
        resources: {limits: {google.com/tpu: 4}}
"""


def pages(n):
    """The LIST requests of n objects in pages of PAGE (the last page's
    continue token is empty; an empty collection is one page)."""
    return max(1, -(-n // PAGE))


def control(port, what, body):
    return fakeapi.control(port, what, body, timeout=120)


class Cluster(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        t0 = time.monotonic()
        cls.tmp = tempfile.mkdtemp(prefix="doctor-cluster-")
        cls.api, cls.port, cls.kubeconfig = fakeapi.start(cls.tmp, TOKEN)
        man = os.path.join(cls.tmp, "job.yaml")
        with open(man, "w") as f:
            f.write(JOB)
        p = subprocess.run([BINARY, "render", "-o", "json", man], capture_output=True,
                           timeout=120, check=True)
        template = json.dumps(json.loads(p.stdout)["items"])
        pods, nodes, services = [], [], []
        for s in range(SLICES):
            name = "sj%04d" % s
            for h, pod in enumerate(json.loads(template.replace("sj0000", name))):
                pod["metadata"]["name"] = pod["metadata"]["generateName"] + "abcde"
                node = "node-%d-%d" % (s, h)
                pod["spec"]["nodeName"] = node
                pod["status"] = {"phase": "Running"}
                pods.append(pod)
                nodes.append({"metadata": {"name": node, "labels": {
                    "cloud.google.com/gke-nodepool": "pool-%d" % s,
                    "cloud.google.com/gke-tpu-accelerator": "tpu-v5p-slice",
                    "cloud.google.com/gke-tpu-topology": "2x4x5"}}})
            services.append({"metadata": {"name": name, "namespace": "team"},
                             "spec": {"clusterIP": "None", "publishNotReadyAddresses": True,
                                      "selector": {"batch.kubernetes.io/job-name": name}}})
        # the one broken slice: host 7 of sj0421 holds host 3's TPU_WORKER_ID
        bad = pods[421 * HOSTS + 7]
        for e in bad["spec"]["containers"][0]["env"]:
            if e["name"] == "TPU_WORKER_ID":
                e["value"] = "3"
        cls.bad_pod = bad["metadata"]["name"]
        for i in range(0, len(pods), 2000):
            control(cls.port, "pods", pods[i:i + 2000])
        control(cls.port, "nodes", nodes)
        control(cls.port, "services", services)
        # a healthy slice in another namespace, not read with -n other's peers
        other = json.loads(template.replace("sj0000", "elsewhere").replace('"team"', '"other"'))
        for h, pod in enumerate(other):
            pod["metadata"]["name"] = pod["metadata"]["generateName"] + "abcde"
            pod["spec"]["nodeName"] = "node-other-%d" % h
            pod["status"] = {"phase": "Running"}
        control(cls.port, "pods", other)
        control(cls.port, "nodes", [{"metadata": {"name": "node-other-%d" % h, "labels": {
            "cloud.google.com/gke-nodepool": "pool-other",
            "cloud.google.com/gke-tpu-accelerator": "tpu-v5p-slice",
            "cloud.google.com/gke-tpu-topology": "2x4x5"}}} for h in range(HOSTS)])
        control(cls.port, "services", [{"metadata": {"name": "elsewhere", "namespace": "other"},
                                        "spec": {"clusterIP": "None",
                                                 "publishNotReadyAddresses": True,
                                                 "selector": {"job-name": "elsewhere"}}}])

        print("\nset-up (render, post to the fake): %.1f s" % (time.monotonic() - t0),
              file=sys.stderr)

    @classmethod
    def tearDownClass(cls):
        cls.api.kill()
        cls.api.wait()

    def run_doctor(self, *args):
        before = control(self.port, "stats", {})["list_paths"]
        t = time.monotonic()
        p = subprocess.run([BINARY, "doctor", "-o", "json", "--kubeconfig", self.kubeconfig] +
                           list(args), capture_output=True, timeout=300)
        took = time.monotonic() - t
        after = control(self.port, "stats", {})["list_paths"]
        lists = {k: v - before.get(k, 0) for k, v in after.items() if v != before.get(k, 0)}
        return p, took, lists

    def test_10000_pods_in_1000_slices(self):
        p, took, lists = self.run_doctor("--all-namespaces")
        print("\ndoctor over %d pods in %d slices from the fake API server: %.2f s"
              % (SLICES * HOSTS + HOSTS, SLICES + 1, took), file=sys.stderr)
        self.assertEqual(p.returncode, 1, p.stderr.decode())
        rep = json.loads(p.stdout)
        self.assertEqual(rep["pods"], SLICES * HOSTS + HOSTS)
        self.assertEqual(len(rep["slices"]), SLICES + 1)
        self.assertEqual(rep["broken"], 1)
        broken = [s for s in rep["slices"] if s["status"] != "ok"]
        self.assertEqual([s["name"] for s in broken], ["sj0421"])
        found = [(pr["problem"], pr["pod"]) for pr in broken[0]["problems"]]
        self.assertIn(("duplicate-worker-id", self.bad_pod), found)
        self.assertTrue(all(pod == self.bad_pod for _, pod in found), found)
        self.assertEqual(lists, {"/api/v1/pods": pages(SLICES * HOSTS + HOSTS),
                                 "/api/v1/nodes": pages(SLICES * HOSTS + HOSTS),
                                 "/api/v1/services": pages(SLICES + 1)})

    def test_one_namespace(self):
        p, _, lists = self.run_doctor("-n", "other")
        self.assertEqual(p.returncode, 0, p.stderr.decode())
        rep = json.loads(p.stdout)
        self.assertEqual([s["name"] for s in rep["slices"]], ["elsewhere"])
        self.assertEqual(lists, {"/api/v1/namespaces/other/pods": 1,
                                 "/api/v1/nodes": pages(SLICES * HOSTS + HOSTS),
                                 "/api/v1/namespaces/other/services": 1})

    def test_selector_and_refused_token(self):
        p, _, lists = self.run_doctor("-l", "batch.kubernetes.io/job-name=sj0005")
        self.assertEqual(p.returncode, 0, p.stderr.decode())
        self.assertEqual([s["name"] for s in json.loads(p.stdout)["slices"]], ["sj0005"])
        bad = os.path.join(self.tmp, "bad-kubeconfig")
        with open(self.kubeconfig) as f:
            text = f.read()
        with open(bad, "w") as f:
            f.write(text.replace(TOKEN, "wrong"))
        p = subprocess.run([BINARY, "doctor", "--kubeconfig", bad], capture_output=True,
                           timeout=60, text=True)
        self.assertEqual(p.returncode, 2)
        self.assertIn("HTTP 401", p.stderr)


if __name__ == "__main__":
    BINARY = sys.argv[1]
    unittest.main(argv=sys.argv[:1], verbosity=1)
