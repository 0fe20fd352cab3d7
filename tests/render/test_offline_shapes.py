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

    def test_rayjob_without_shutdown(self):
        """KubeRay 1.1+ refuses to suspend a RayJob whose
        shutdownAfterJobFinishes is not true (ValidationFailed, never left:
        no RayCluster, resumed or not): render fails saying so, check warns;
        with shutdownAfterJobFinishes: true it is an ordinary suspended
        RayJob, and KubeRay 1.0 did not refuse it."""
        name = path("rayjob-suspended-no-shutdown.yaml")
        for args in ((), ("--output", "json")):
            p = run("render", *args, name)
            self.assertEqual(p.returncode, 2, p.stderr.decode())
            self.assertEqual(p.stdout, b"")
            self.assertIn("spec.shutdownAfterJobFinishes is not: KubeRay 1.1+ refuses to suspend",
                          p.stderr.decode())
        p = run("check", "--output", "json", name)
        self.assertEqual(p.returncode, 0, p.stdout.decode())
        rows = json.loads(p.stdout)["rows"]
        self.assertEqual(len(rows), 1)
        self.assertTrue(any("set spec.shutdownAfterJobFinishes to true" in w for w in rows[0]["warnings"]), rows)
        with open(name) as f:
            text = f.read()
        ok = text.replace("shutdownAfterJobFinishes: false", "shutdownAfterJobFinishes: true")
        p = run("render", "--output", "json", "-", stdin=ok.encode())
        self.assertEqual(p.returncode, 0, p.stderr.decode())
        self.assertEqual(json.loads(p.stdout)["items"], [])
        self.assertIn("KubeRay creates no RayCluster", notes(p.stderr)[0])
        p = run("render", "--kuberay-version", "1.0", "--output", "json", name)
        self.assertEqual(p.returncode, 0, p.stderr.decode())
        self.assertEqual(json.loads(p.stdout)["items"], [])

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


LWS_KEY = "leaderworkerset.sigs.k8s.io/"


def env(container):
    return {e["name"]: e.get("value") for e in container.get("env") or []}


def lws_docs():
    """The three LWS of tests/fixtures/offline/lws-subgroups.yaml, by name,
    as YAML text."""
    with open(path("lws-subgroups.yaml")) as f:
        docs = f.read().split("---\n")
    return dict(zip(("sg", "sgl", "sgu"), docs))


def opted_out(text):
    """An LWS with the opt-out on the object and its pods: the webhook
    judges and injects nothing, and render shows what LWS alone writes."""
    return text.replace("metadata:\n  name: sgl", "metadata:\n  name: sgl\n  labels: {tpu-webhook/inject: disabled}") \
        .replace("{tpu-webhook/inject: enabled}", "{tpu-webhook/inject: disabled}")


class LwsSubgroups(unittest.TestCase):
    """LeaderWorkerSet subgroups (spec.leaderWorkerTemplate.subGroupPolicy)
    render as LWS v0.9.0 builds them (tests/fixtures/offline/lws-subgroups.yaml):
    the controller's annotations (subgroup-size on every pod,
    subgroup-policy-type on leaders, the LWS's subgroup-exclusive-topology),
    the pod webhook's labels (subgroup-index from the pod-name ordinal,
    subgroup-key per subgroup) and its per-subgroup TPU identity
    (addTPUVariablesSubGroup: first TPU container, one port); then this
    webhook's: each subgroup's own TPU_NAME and its TorchTPU and torchrun
    values (issue 34). The expected values are LWS's: its getSubGroupIndex,
    and its own unit test cases of TestAddTPUVariablesSubGroup
    (pkg/utils/accelerators/tpu_test.go)."""

    @classmethod
    def setUpClass(cls):
        cls.docs = lws_docs()
        p = run("render", "--output", "json", "-", stdin=cls.docs["sg"].encode())
        assert p.returncode == 0, p.stderr.decode()
        cls.pods = {x["metadata"]["name"]: x for x in json.loads(p.stdout)["items"]}
        cls.stderr = p.stderr.decode()
        p = run("render", "--output", "json", "-", stdin=opted_out(cls.docs["sgl"]).encode())
        assert p.returncode == 0, p.stderr.decode()
        cls.pods.update({x["metadata"]["name"]: x for x in json.loads(p.stdout)["items"]})

    def meta(self, name, what):
        return self.pods[name]["metadata"].get(what) or {}

    def test_labels_and_annotations(self):
        for g in (0, 1):
            leader = "sg-%d" % g
            self.assertEqual(self.meta(leader, "annotations")[LWS_KEY + "subgroup-policy-type"], "LeaderWorker")
            keys = {}
            for w in range(9):
                name = leader if w == 0 else "%s-%d" % (leader, w)
                a, l = self.meta(name, "annotations"), self.meta(name, "labels")
                self.assertEqual(a[LWS_KEY + "subgroup-size"], "4", name)
                self.assertEqual(a[LWS_KEY + "subgroup-exclusive-topology"], "cloud.google.com/gke-nodepool")
                if w:
                    self.assertNotIn(LWS_KEY + "subgroup-policy-type", a, name)
                want = 0 if w == 0 else (w - 1) // 4  # size - 1 = 8 divides by 4
                self.assertEqual(l[LWS_KEY + "subgroup-index"], str(want), name)
                keys.setdefault(want, set()).add(l[LWS_KEY + "subgroup-key"])
            self.assertEqual([len(k) for k in keys.values()], [1, 1])
            self.assertNotEqual(keys[0], keys[1])

    def test_tpu_identity_per_subgroup(self):
        for g in (0, 1):
            leader = "sg-%d" % g
            self.assertEqual(env(self.pods[leader]["spec"]["containers"][0]).get("TPU_WORKER_ID"), None)
            for w in range(1, 9):
                name = "%s-%d" % (leader, w)
                e = env(self.pods[name]["spec"]["containers"][0])
                first = 1 + 4 * ((w - 1) // 4)
                hosts = ["%s-%d.sg" % (leader, k) for k in range(first, first + 4)]
                self.assertEqual(e["TPU_WORKER_HOSTNAMES"], ",".join(hosts), name)
                self.assertEqual(e["TPU_PROCESS_ADDRESSES"], ",".join(h + ":8476" for h in hosts), name)
                self.assertEqual(hosts[int(e["TPU_WORKER_ID"])], "%s.sg" % name)
                self.assertEqual(e["TPU_NAME"], "%s-subgroup-%d" % (leader, (w - 1) // 4), name)
                self.assertEqual(e["TPU_PROCESS_PORT"], "8476")
                self.assertEqual((e["PET_NODE_RANK"], e["PET_NNODES"], e["PET_MASTER_ADDR"]),
                                 (e["TPU_WORKER_ID"], "4", hosts[0]), name)

    def test_leader_with_tpus(self):
        """What LWS alone writes (the webhook opted out): its unit test
        "Leader requests TPU resources, worker with subgroup index > 0"
        (worker 7 of subgroup size 4: hosts 4-7, id 3), and the leader's -1
        that its subgroup path writes, which /validate-workload refuses."""
        e = {n: env(self.pods[n]["spec"]["containers"][0]) for n in self.pods if n.startswith("sgl-")}
        self.assertEqual(e["sgl-0-7"]["TPU_WORKER_HOSTNAMES"], ",".join("sgl-0-%d.sgl" % k for k in range(4, 8)))
        self.assertEqual(e["sgl-0-7"]["TPU_WORKER_ID"], "3")
        sg0 = "sgl-0.sgl,sgl-0-1.sgl,sgl-0-2.sgl,sgl-0-3.sgl"
        for n, want in (("sgl-0", "-1"), ("sgl-0-1", "1"), ("sgl-0-3", "3")):
            self.assertEqual(e[n]["TPU_WORKER_HOSTNAMES"], sg0, n)
            self.assertEqual(e[n]["TPU_WORKER_ID"], want, n)
        self.assertEqual(self.meta("sgl-0-1", "annotations")[LWS_KEY + "leader-requests-tpus"], "true")
        self.assertEqual(self.meta("sgl-0-1", "labels")[LWS_KEY + "subgroup-index"], "0")
        self.assertEqual(self.meta("sgl-0-4", "labels")[LWS_KEY + "subgroup-index"], "1")

    def test_judged_as_the_webhook_judges_them(self):
        """check and render agree with /validate-workload: sg is admitted
        without a warning, the two shapes whose slices cannot start are
        rejected with the field to change."""
        self.assertNotIn("rejected", self.stderr)
        self.assertNotIn("no TPU env injected", self.stderr)
        p = run("check", "--output", "json", path("lws-subgroups.yaml"))
        self.assertEqual(p.returncode, 1, p.stdout.decode() + p.stderr.decode())
        rows = json.loads(p.stdout)["rows"]
        self.assertEqual([r["verdict"] for r in rows], ["ok", "rejected", "rejected"])
        out = p.stdout.decode()
        self.assertIn("spec.leaderWorkerTemplate.leaderTemplate is absent", out)
        self.assertIn("spec.leaderWorkerTemplate.size is 8, expected 5 or 9", out)

    def test_refused_shapes(self):
        """What LWS itself refuses: its webhook, a subGroupSize that divides
        neither size nor size - 1; its pod webhook, a LeaderExcluded leader
        that requests TPUs (no subgroup index to parse)."""
        text = opted_out(self.docs["sgl"])
        p = run("render", "-", stdin=text.replace("size: 8", "size: 10").encode())
        self.assertEqual(p.returncode, 2)  # an object that cannot be rendered
        self.assertIn("size or size - 1 must be divisible by subGroupSize", p.stderr.decode())
        excluded = text.replace("size: 8", "size: 9").replace(
            "subGroupSize: 4", "subGroupSize: 4\n      subGroupPolicyType: LeaderExcluded")
        p = run("render", "-", stdin=excluded.encode())
        self.assertEqual(p.returncode, 2)  # an object that cannot be rendered
        self.assertIn("leader pod sgl-0 requests google.com/tpu but subGroupPolicyType LeaderExcluded",
                      p.stderr.decode())


def main():
    global BINARY, FIX
    BINARY, FIX = sys.argv[1], sys.argv[2]
    unittest.main(argv=[sys.argv[0]] + sys.argv[3:], verbosity=1)


if __name__ == "__main__":
    main()
