#!/usr/bin/env python3
"""`render --env` (issue 24, item 5; docs/workloads.md, "Feedback where the
user looks"): per pod and TPU container, each TPU variable with where it came
from (injected by the webhook, kept from the user, kept from GKE's or LWS's
per-pod values) and the pod's contradictions; human text and -o json agree.

Usage: test_render_env.py BINARY"""
import json
import subprocess
import sys
import tempfile
import unittest

BINARY = None
SEL = {"cloud.google.com/gke-tpu-accelerator": "tpu-v6e-slice",
       "cloud.google.com/gke-tpu-topology": "4x4"}


def job(env=None):
    c = {"name": "trainer", "image": "IMAGE", "resources": {"limits": {"google.com/tpu": "4"}}}
    if env:
        c["env"] = env
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "train", "namespace": "ml"},
            "spec": {"completionMode": "Indexed", "parallelism": 4, "completions": 4, "template": {
                "spec": {"subdomain": "train", "nodeSelector": SEL, "containers": [c]}}}}


def lws():
    return {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
            "metadata": {"name": "vllm", "namespace": "default"},
            "spec": {"replicas": 1, "leaderWorkerTemplate": {"size": 4, "workerTemplate": {"spec": {
                "subdomain": "vllm",
                "nodeSelector": {"cloud.google.com/gke-tpu-accelerator": "tpu-v5-lite-podslice",
                                 "cloud.google.com/gke-tpu-topology": "4x4"},
                "containers": [{"name": "vllm", "image": "IMAGE",
                                "resources": {"limits": {"google.com/tpu": "4"}},
                                "env": [{"name": "TORCH_TPU_TOPOLOGY", "value": "2,2,1,2"}]}]}}}}}


def render(obj, *flags):
    with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
        json.dump(obj, f)
        f.flush()
        p = subprocess.run([BINARY, "render", "--env"] + list(flags) + [f.name],
                           capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout, p.stderr


def records(obj):
    rc, out, err = render(obj, "-o", "json")
    assert rc == 0, (rc, err)
    return json.loads(out)["items"]


def sources(rec):
    return {v["name"]: v["source"] for v in rec["containers"][0]["env"]}


class RenderEnvJob(unittest.TestCase):
    def test_job_all_injected(self):
        recs = records(job())
        # generateName: the API server names the pods.
        self.assertEqual([r["pod"] for r in recs], ["train-%d-" % i for i in range(4)])
        for i, r in enumerate(recs):
            s = sources(r)
            self.assertEqual(set(s.values()), {"injected"}, s)
            self.assertIn("TPU_WORKER_ID", s)
            self.assertEqual(r["contradictions"], [])
            ids = {v["name"]: v["value"] for v in r["containers"][0]["env"]}
            self.assertEqual(ids["TPU_WORKER_ID"], str(i))

    def test_gke_fieldref_and_user_value_kept(self):
        env = [{"name": "TPU_WORKER_ID", "valueFrom": {"fieldRef": {
                    "fieldPath": "metadata.annotations['batch.kubernetes.io/job-completion-index']"}}},
               {"name": "PET_MASTER_PORT", "value": "23456"}]
        for r in records(job(env)):
            s = sources(r)
            self.assertEqual(s["TPU_WORKER_ID"], "gke")
            self.assertEqual(s["PET_MASTER_PORT"], "user")
            self.assertEqual(s["TPU_WORKER_HOSTNAMES"], "injected")


class RenderEnvLws(unittest.TestCase):
    def test_lws_values_and_contradiction(self):
        recs = records(lws())
        self.assertEqual(len(recs), 4)
        for r in recs:
            s = sources(r)
            for n in ("TPU_WORKER_ID", "TPU_WORKER_HOSTNAMES", "TPU_NAME"):
                self.assertEqual(s[n], "lws", (n, s))
            self.assertEqual(s["TORCH_TPU_TOPOLOGY"], "user")
            self.assertEqual(s["PET_NNODES"], "injected")
            self.assertEqual(len(r["contradictions"]), 1)
            self.assertIn('TORCH_TPU_TOPOLOGY "2,2,1,2" kept; topology 4x4 gives "4,4,1"',
                          r["contradictions"][0])

    def test_human_text_says_the_same(self):
        recs = records(lws())
        rc, out, _ = render(lws())
        self.assertEqual(rc, 0)
        lines = out.split("\n")
        for r in recs:
            self.assertIn("pod %s" % r["pod"], lines)
        for v in recs[1]["containers"][0]["env"]:
            self.assertTrue(any(l.split()[:2] == [v["name"], v["source"]] for l in lines), v)
        self.assertEqual(sum(1 for l in lines if l.startswith("  ! ")), 4)


class RenderEnvRefused(unittest.TestCase):
    def test_contradicting_worker_id_is_refused(self):
        """A literal TPU_WORKER_ID that contradicts the index is not kept
        (item 2): render prints the denial naming the container."""
        rc, out, err = render(job([{"name": "TPU_WORKER_ID", "value": "0"}]))
        self.assertEqual(rc, 1, (out, err))
        self.assertIn("TPU_WORKER_ID", err + out)
        self.assertIn("trainer", err + out)


if __name__ == "__main__":
    BINARY = sys.argv.pop(1)
    unittest.main(verbosity=1)
