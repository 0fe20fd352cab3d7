#!/usr/bin/env python3
"""render and check as the cluster (issue 34, item 5), through the real
binary, on tests/fixtures/offline: shapes the cluster suite does not apply
as they are (a suspended object makes no pod; a generateName cannot go
through `kubectl apply`), with what the real controllers do with them.

Usage: test_offline_shapes.py BINARY FIXTURES_DIR"""
import json
import os
import re
import subprocess
import sys
import unittest

BINARY = FIX = None


def run(*args, stdin=None):
    return subprocess.run([BINARY] + list(args), input=stdin, capture_output=True, timeout=120)


def path(name):
    return os.path.join(FIX, name)


def slurp(workload):
    """A fixture of tests/fixtures/workloads, as text."""
    with open(os.path.join(FIX, "..", "workloads", workload)) as f:
        return f.read()


def notes(stderr):
    return [l.split(": note: ", 1)[1] for l in stderr.decode().splitlines() if ": note: " in l]


class Suspended(unittest.TestCase):
    """A suspended RayCluster (KubeRay: no head or worker pod while
    spec.suspend is true), JobSet (its Jobs created suspended) or Job (no
    pod) renders no pod and says so; the pods of its resume are still
    judged, by render and check."""

    CASES = (("raycluster-suspended.yaml", "KubeRay creates no head or worker pod", 4),
             ("jobset-suspended.yaml", "JobSet creates its Jobs suspended", 8))

    def test_render_shows_no_pod(self):
        for name, what, n in self.CASES:
            with self.subTest(fixture=name):
                p = run("render", "--output", "json", path(name))
                self.assertEqual(p.returncode, 0, p.stderr.decode())
                self.assertEqual(json.loads(p.stdout)["items"], [])
                ns = notes(p.stderr)
                self.assertEqual(len(ns), 1, p.stderr.decode())
                self.assertIn("spec.suspend is true: " + what, ns[0])
                self.assertIn("judged the %d pod(s)" % n, ns[0])
                p = run("render", "--summary", path(name))
                self.assertEqual(p.returncode, 0, p.stderr.decode())
                self.assertRegex(p.stdout.decode(), r"allowed, 0 (worker )?pod\(s\)")

    def test_env_shows_no_pod(self):
        p = run("render", "--env", "--output", "json", path("jobset-suspended.yaml"))
        self.assertEqual(p.returncode, 0, p.stderr.decode())
        self.assertEqual(json.loads(p.stdout)["items"], [])

    def test_resumed_renders_pods(self):
        for name, _, n in self.CASES:
            with open(path(name)) as f:
                text = f.read().replace("  suspend: true\n", "  suspend: false\n")
            p = run("render", "--output", "json", "-", stdin=text.encode())
            self.assertEqual(p.returncode, 0, p.stderr.decode())
            self.assertEqual(len(json.loads(p.stdout)["items"]), n, name)
            self.assertEqual(notes(p.stderr), [])

    def test_suspended_job(self):
        job = """apiVersion: batch/v1
kind: Job
metadata: {name: held}
spec:
  suspend: true
  completionMode: Indexed
  parallelism: 4
  completions: 4
  template:
    spec:
      subdomain: held
      restartPolicy: Never
      nodeSelector:
        cloud.google.com/gke-tpu-accelerator: tpu-v6e-slice
        cloud.google.com/gke-tpu-topology: 4x4
      containers:
      - name: trainer
        image: IMAGE
        resources: {limits: {google.com/tpu: %s}}
"""
        p = run("render", "--output", "json", "-", stdin=(job % 4).encode())
        self.assertEqual(p.returncode, 0, p.stderr.decode())
        self.assertEqual(json.loads(p.stdout)["items"], [])
        self.assertIn("the Job controller creates no pod", notes(p.stderr)[0])
        # a resume that would be denied is still a denial
        p = run("render", "-", stdin=(job % 8).encode())
        self.assertEqual(p.returncode, 1, p.stderr.decode())
        self.assertIn("would be rejected", p.stderr.decode())

    def test_check_notes_not_failures(self):
        p = run("check", "--output", "json", path("raycluster-suspended.yaml"),
                path("jobset-suspended.yaml"))
        self.assertEqual(p.returncode, 0, p.stdout.decode() + p.stderr.decode())
        rows = json.loads(p.stdout)["rows"]
        self.assertEqual([(r["kind"], r["verdict"]) for r in rows], [("RayCluster", "ok"), ("JobSet", "ok")])
        for r in rows:
            self.assertEqual(len(r["notes"]), 1, r)
            self.assertIn("spec.suspend is true", r["notes"][0])
            self.assertEqual(r["warnings"], [])
        p = run("check", path("raycluster-suspended.yaml"))
        self.assertEqual(p.returncode, 0)
        self.assertIn(": note tpu-group: spec.suspend is true", p.stdout.decode())


DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


class GenerateName(unittest.TestCase):
    """metadata.generateName (the API server names the object when it stores
    it, after mutating admission, before validation): render and check judge
    the object on generateName + "xxxxx", a placeholder as long as the name
    will be and valid wherever the API server validates it, and say in a
    note, not a failure, what depends on the name."""

    def render(self, name, text=None):
        p = run("render", "--output", "json", "-" if text else path(name),
                stdin=text.encode() if text else None)
        self.assertEqual(p.returncode, 0, p.stderr.decode())
        ns = notes(p.stderr)
        self.assertEqual(len(ns), 1, p.stderr.decode())
        return json.loads(p.stdout)["items"], ns[0]

    def test_raycluster(self):
        pods, note = self.render("raycluster-generatename.yaml")
        self.assertEqual(len(pods), 2)
        for p in pods:
            self.assertEqual(p["metadata"]["labels"]["ray.io/cluster"], "tpu-v4-xxxxx")
            self.assertEqual(p["spec"]["subdomain"], "tpu-v4-xxxxx-headless")
            for v in (p["spec"]["subdomain"], p["spec"]["hostname"]):
                self.assertRegex(v, DNS_LABEL)
        for part in ('metadata.generateName is "tpu-v4-"', '"tpu-v4-xxxxx"', "spec.subdomain",
                     "env TPU_WORKER_HOSTNAMES", "metadata.labels[ray.io/cluster]", "kubectl create"):
            self.assertIn(part, note)

    def test_job(self):
        pods, note = self.render("job-generatename.yaml")
        self.assertEqual([p["spec"]["hostname"] for p in pods], ["sweep-xxxxx-%d" % i for i in range(4)])
        self.assertEqual({p["metadata"]["generateName"] for p in pods},
                         {"sweep-xxxxx-%d-" % i for i in range(4)})
        for part in ("spec.hostname", "env TPU_WORKER_HOSTNAMES", "metadata.labels[batch.kubernetes.io/job-name]"):
            self.assertIn(part, note)
        self.assertNotIn("spec.subdomain", note)  # the user's, not the name's

    def test_jobset_and_lws(self):
        for kind, text, want in (
                ("JobSet", slurp("jobset-pathways-coordinator.yaml")
                 .replace("  name: pathways\n", "  generateName: pathways-\n"),
                 "pathways-xxxxx-head-0-0.pathways-xxxxx"),
                ("LeaderWorkerSet", slurp("lws-unique-per-replica.yaml")
                 .replace("  name: serve\n", "  generateName: serve-\n"), "serve-xxxxx-0")):
            with self.subTest(kind=kind):
                pods, note = self.render(None, text)
                self.assertIn('"%s"' % want.split("-0")[0].split("-head")[0], note)
                blob = json.dumps(pods)
                self.assertIn(want, blob)
                self.assertIn("env TPU_WORKER_HOSTNAMES", note)

    def test_check_notes_not_failures(self):
        p = run("check", "--output", "json", path("raycluster-generatename.yaml"), path("job-generatename.yaml"))
        self.assertEqual(p.returncode, 0, p.stdout.decode() + p.stderr.decode())
        rows = json.loads(p.stdout)["rows"]
        self.assertEqual([(r["kind"], r["verdict"]) for r in rows], [("RayCluster", "ok"), ("Job", "ok")])
        self.assertEqual(rows[0]["cluster"], "tpu-v4-xxxxx")
        for r in rows:
            self.assertEqual(r["warnings"], [])
            self.assertIn("metadata.generateName", r["notes"][0])

    def test_name_rules_on_the_length(self):
        with open(path("raycluster-generatename.yaml")) as f:
            text = f.read()
        # 48 + 5 = 53 characters: KubeRay's limit, accepted
        self.render(None, text.replace("generateName: tpu-v4-", "generateName: " + "g" * 48))
        p = run("render", "-", stdin=text.replace("generateName: tpu-v4-", "generateName: " + "g" * 49).encode())
        self.assertEqual(p.returncode, 2, p.stderr.decode())
        self.assertIn("shorten the generateName to at most 48", p.stderr.decode())

    def test_name_wins_and_neither_refused(self):
        with open(path("raycluster-generatename.yaml")) as f:
            text = f.read()
        p = run("render", "--output", "json", "-",
                stdin=text.replace("generateName: tpu-v4-", "name: given\n  generateName: tpu-v4-").encode())
        self.assertEqual(p.returncode, 0, p.stderr.decode())
        self.assertEqual(notes(p.stderr), [])
        self.assertEqual(json.loads(p.stdout)["items"][0]["metadata"]["labels"]["ray.io/cluster"], "given")
        for name in ("raycluster-generatename.yaml", "job-generatename.yaml"):
            with open(path(name)) as f:
                text = f.read().replace("generateName:", "labels: {}\n  x-generateName:")
            p = run("render", "-", stdin=text.encode())
            self.assertEqual(p.returncode, 2, p.stderr.decode())
            self.assertIn("neither metadata.name nor metadata.generateName", p.stderr.decode())


def main():
    global BINARY, FIX
    BINARY, FIX = sys.argv[1], sys.argv[2]
    unittest.main(argv=[sys.argv[0]] + sys.argv[3:], verbosity=1)


if __name__ == "__main__":
    main()
