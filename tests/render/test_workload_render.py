#!/usr/bin/env python3
"""render/check/review of Jobs, JobSets and LeaderWorkerSets (issue 12,
docs/workloads.md), through the real binary, on tests/fixtures/workloads.

Usage: test_workload_render.py BINARY FIXTURES_DIR"""
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "engine"))
import physics  # noqa: E402

BINARY = FIX = None
ENV_NAME = re.compile(r"^[-._a-zA-Z][-._a-zA-Z0-9]*$")


def run(*args, stdin=None):
    return subprocess.run([BINARY] + list(args), input=stdin, capture_output=True, timeout=120)


def render(name):
    p = run("render", "--output", "json", os.path.join(FIX, name))
    assert p.returncode == 0, p.stderr.decode()
    return json.loads(p.stdout)["items"]


def tpu_env(pod):
    for c in pod["spec"]["containers"]:
        if "google.com/tpu" in json.dumps(c.get("resources", {})):
            names = [e["name"] for e in c.get("env", [])]
            assert len(names) == len(set(names)), names
            for n in names:
                assert ENV_NAME.match(n), n
            return {e["name"]: e.get("value", e.get("valueFrom")) for e in c.get("env", [])}
    raise AssertionError("no TPU container")


class Render(unittest.TestCase):
    def test_two_slice_jobset(self):
        pods = render("jobset-v5p-2x2x4-two-slices.yaml")
        self.assertEqual(len(pods), 8)
        by_slice = {}
        for p in pods:
            lab = p["metadata"]["labels"]
            self.assertEqual(p["metadata"]["annotations"]["jobset.sigs.k8s.io/job-index"],
                             lab["jobset.sigs.k8s.io/job-index"])
            self.assertEqual(p["spec"]["subdomain"], "llm")
            j, i = lab["jobset.sigs.k8s.io/job-index"], lab["batch.kubernetes.io/job-completion-index"]
            self.assertEqual(p["spec"]["hostname"], "llm-slice-%s-%s" % (j, i))
            self.assertEqual(p["metadata"]["generateName"], "llm-slice-%s-%s-" % (j, i))
            self.assertEqual(lab["batch.kubernetes.io/job-name"], "llm-slice-%s" % j)
            self.assertEqual(p["metadata"]["annotations"]["alpha.jobset.sigs.k8s.io/exclusive-topology"],
                             "cloud.google.com/gke-nodepool")
            by_slice.setdefault(j, []).append(tpu_env(p))
        self.assertEqual(sorted(by_slice), ["0", "1"])
        for j, envs in by_slice.items():
            self.assertEqual(sorted(int(e["TPU_WORKER_ID"]) for e in envs), [0, 1, 2, 3])
            self.assertEqual(len({e["TPU_WORKER_HOSTNAMES"] for e in envs}), 1)
            self.assertEqual(len({e["TORCH_TPU_SLICEBUILDER_ADDRESSES"] for e in envs}), 1)
            self.assertEqual({e["MEGASCALE_SLICE_ID"] for e in envs}, {j})
            self.assertTrue(envs[0]["TPU_WORKER_HOSTNAMES"].startswith("llm-slice-%s-0.llm," % j))
        envs = [e for v in by_slice.values() for e in v]
        self.assertEqual({(e["MEGASCALE_NUM_SLICES"], e["MEGASCALE_COORDINATOR_ADDRESS"]) for e in envs},
                         {("2", "llm-slice-0-0.llm")})
        self.assertEqual(sorted(int(e["PET_NODE_RANK"]) for e in envs), list(range(8)))

    def test_four_host_indexed_job(self):
        pods = render("indexed-job-v6e-4x4.yaml")  # the Service is skipped
        self.assertEqual(len(pods), 4)
        envs = [tpu_env(p) for p in pods]
        self.assertEqual([e["TPU_WORKER_ID"] for e in envs], ["0", "1", "2", "3"])
        self.assertEqual(len({e["TPU_WORKER_HOSTNAMES"] for e in envs}), 1)
        self.assertEqual(envs[2]["TPU_WORKER_HOSTNAMES"],
                         ",".join("train-v6e-%d.train-v6e" % i for i in range(4)))
        self.assertEqual([p["spec"]["hostname"] for p in pods], ["train-v6e-%d" % i for i in range(4)])
        for e in envs:
            self.assertIn("fieldRef", e["JOB_COMPLETION_INDEX"])
            for k in ("WORLD_SIZE", "RANK", "LOCAL_RANK"):
                self.assertNotIn(k, e)

    def test_list_with_lws_and_plain_job(self):
        pods = render("lws-and-smoke-job.json")
        self.assertEqual(len(pods), 9)
        lws, smoke = pods[:8], pods[8]
        for p in lws:
            e = tpu_env(p)
            w = int(p["metadata"]["labels"]["leaderworkerset.sigs.k8s.io/worker-index"])
            self.assertEqual(e["TPU_WORKER_ID"], str(w))  # LWS's own, kept
            self.assertEqual(e["TPU_PROCESS_PORT"], "8476")
            self.assertEqual(e["PET_NODE_RANK"], str(w))
            g = p["metadata"]["labels"]["leaderworkerset.sigs.k8s.io/group-index"]
            self.assertEqual(e["PET_MASTER_ADDR"], "vllm-%s.vllm" % g)
            self.assertEqual(p["metadata"]["namespace"], "serving")
        e = tpu_env(smoke)
        self.assertEqual((e["TORCH_TPU_TOPOLOGY"], e["TORCH_TPU_SLICEBUILDER_ADDRESSES"], e["PET_NPROC_PER_NODE"]),
                         ("1,1,1", "localhost:8471", "1"))
        self.assertEqual(smoke["metadata"]["generateName"], "torchtpu-smoke-")

    def test_summary(self):
        p = run("render", "--summary", os.path.join(FIX, "jobset-v5p-2x2x4-two-slices.yaml"))
        self.assertEqual(p.returncode, 0, p.stderr)
        out = p.stdout.decode()
        self.assertIn("JobSet default/llm: allowed, 8 pod(s)", out)
        self.assertRegex(out, r"llm-slice-1-3\s+3\s+4\s+1\s+8\s+7\s+2,2,4\s+16")

    def test_rejected_job(self):
        p = run("render", os.path.join(FIX, "bad-job-parallelism.yaml"))
        self.assertEqual(p.returncode, 1)
        err = p.stderr.decode()
        self.assertIn("would be rejected", err)
        self.assertIn("spec.parallelism is 2, expected 4", err)
        self.assertIn("spec.template.spec.subdomain is unset", err)

    def test_rendered_pods_review_unchanged(self):
        # A second review of what the webhook produced yields no patch.
        for name in ("jobset-v5p-2x2x4-two-slices.yaml", "indexed-job-v6e-4x4.yaml"):
            for pod in render(name)[:2]:
                rv = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                      "request": {"uid": "u", "kind": {"group": "", "version": "v1", "kind": "Pod"},
                                  "resource": {"group": "", "version": "v1", "resource": "pods"},
                                  "namespace": "default", "operation": "CREATE", "object": pod}}
                p = run("review", "--workload", stdin=json.dumps(rv).encode())
                self.assertEqual(p.returncode, 0, p.stderr)
                resp = json.loads(p.stdout)["response"]
                self.assertTrue(resp["allowed"])
                self.assertNotIn("patch", resp)


class Physics(unittest.TestCase):
    """Issue 24, item 7: the rendered pods of each fixture judged as a whole
    (tests/engine/physics.py): ids dense per slice, one peer list per slice
    whose entry i is worker i's hostname.subdomain, torchrun world =
    MEGASCALE world, distinct ports per pod."""

    def test_fixtures(self):
        for name in ("jobset-v5p-2x2x4-two-slices.yaml", "indexed-job-v6e-4x4.yaml",
                     "lws-unique-per-replica.yaml"):
            with self.subTest(fixture=name):
                physics.check_slices(render(name))
        pods = render("lws-and-smoke-job.json")
        physics.check_slices(pods[:8])

    def test_allowed_variants(self):
        """The shapes of issue 24 that are admitted: GKE's per-pod
        TPU_WORKER_ID (a fieldRef to the completion index), hostNetwork with
        ClusterFirstWithHostNet, a kept TORCH_TPU_TOPOLOGY on a 2-host TPU7x
        slice (warned, not denied), TPU7x pods of two TPU containers in a
        JobSet with a CPU driver and a declared slice count. Each rendered,
        validated and judged as a whole."""
        def sub(text, *pairs):
            for old, new in zip(pairs[::2], pairs[1::2]):
                self.assertIn(old, text)
                text = text.replace(old, new)
            return text

        with open(os.path.join(FIX, "indexed-job-v6e-4x4.yaml")) as f:
            job = f.read()
        with open(os.path.join(FIX, "jobset-v5p-2x2x4-two-slices.yaml")) as f:
            jobset = f.read()
        trainer = "      - name: trainer\n"
        gke_id = sub(job, trainer, trainer + (
            "        env: [{name: TPU_WORKER_ID, valueFrom: {fieldRef: {fieldPath:"
            " \"metadata.annotations['batch.kubernetes.io/job-completion-index']\"}}}]\n"))
        host_network = sub(job, "      subdomain: train-v6e\n",
                           "      subdomain: train-v6e\n      hostNetwork: true\n"
                           "      dnsPolicy: ClusterFirstWithHostNet\n")
        tpu7x = sub(job, "tpu-v6e-slice", "tpu7x", "topology: 4x4", "topology: 2x2x2",
                    "parallelism: 4", "parallelism: 2", "completions: 4", "completions: 2",
                    trainer, trainer + "        env: [{name: TORCH_TPU_TOPOLOGY, value: \"2,2,1,2\"}]\n")
        driver = ("  replicatedJobs:\n  - name: driver\n    replicas: 1\n    template:\n"
                  "      spec: {parallelism: 1, completions: 1,\n"
                  "             template: {spec: {containers: [{name: d, image: IMAGE}]}}}\n")
        numa = "".join("            - name: numa%d\n              image: IMAGE\n"
                       "              env: [{name: MEGASCALE_NUM_SLICES, value: \"2\"}]\n"
                       "              resources: {limits: {google.com/tpu: 2}}\n" % i for i in (0, 1))
        two_containers = sub(jobset, "  replicatedJobs:\n", driver, "tpu-v5p-slice", "tpu7x",
                             "2x2x4\n", "2x2x2\n", "parallelism: 4", "parallelism: 2",
                             "completions: 4", "completions: 2")
        two_containers = two_containers.split("            - name: trainer\n")[0] + numa
        variants = {
            "gke-worker-id": (gke_id, 4, None),
            "host-network": (host_network, 4, None),
            "kept-torch-topology": (tpu7x, 2, 'TORCH_TPU_TOPOLOGY "2,2,1,2" kept'),
            "tpu7x-two-containers-beside-a-driver": (two_containers, 5, None),
        }
        rendered = {}
        for name, (text, n, warning) in variants.items():
            with self.subTest(variant=name):
                p = run("render", "--output", "json", "-", stdin=text.encode())
                self.assertEqual(p.returncode, 0, p.stderr.decode())
                notes = [l for l in p.stderr.decode().splitlines() if "warning: " in l]
                self.assertEqual(len(notes), 1 if warning else 0, notes)
                if warning:
                    self.assertIn(warning, notes[0])
                pods = rendered[name] = json.loads(p.stdout)["items"]
                self.assertEqual(len(pods), n)
                physics.check_slices([q for q in pods if physics.tpu_containers(q)])
        # physics judged the resolved fieldRef; the pods keep GKE's form
        self.assertIn("fieldRef", tpu_env(rendered["gke-worker-id"][2])["TPU_WORKER_ID"])
        pod = rendered["tpu7x-two-containers-beside-a-driver"][1]
        self.assertEqual([physics.env_of(c)["MEGASCALE_PORT"] for c in physics.tpu_containers(pod)],
                         ["8081", "8082"])


class DoctorAgrees(unittest.TestCase):
    """doctor judges the rendered pods of a JobSet as render built them: with
    MEGASCALE off (declared "") each slice is its own torchrun world, which
    is no torchrun-differ (docs/workloads.md, "One world")."""

    def doctor(self, pods):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "pods.json")
            with open(path, "w") as f:
                json.dump({"apiVersion": "v1", "kind": "List", "items": pods}, f)
            p = run("doctor", "--pods", path, "-o", "json")
        return p.returncode, json.loads(p.stdout)

    def test_per_slice_worlds(self):
        with open(os.path.join(FIX, "jobset-v5p-2x2x4-two-slices.yaml")) as f:
            text = f.read()
        for declared in (None, ""):
            t = text if declared is None else text.replace(
                "            - name: trainer\n",
                "            - name: trainer\n              env: [{name: MEGASCALE_NUM_SLICES, value: \"\"}]\n")
            self.assertEqual(t == text, declared is None)
            p = run("render", "--output", "json", "-", stdin=t.encode())
            self.assertEqual(p.returncode, 0, p.stderr)
            pods = json.loads(p.stdout)["items"]
            for i, q in enumerate(pods):  # as the API server names them
                q["metadata"]["name"] = q["metadata"]["generateName"] + "x%04d" % i
            physics.check_slices(pods)
            rc, report = self.doctor(pods)
            problems = [pr["problem"] for s in report["slices"] for pr in s["problems"]]
            self.assertEqual(problems, [], declared)
            self.assertEqual(rc, 0)


class LwsSubdomainPolicy(unittest.TestCase):
    """Issue 24, item 6: render does what LWS's controller does with
    spec.networkConfig.subdomainPolicy."""

    def test_unique_per_replica(self):
        pods = render("lws-unique-per-replica.yaml")
        self.assertEqual(len(pods), 8)
        for p in pods:
            g = p["metadata"]["labels"]["leaderworkerset.sigs.k8s.io/group-index"]
            leader = "serve-%s" % g
            self.assertEqual(p["spec"]["subdomain"], leader)  # one Service per group
            self.assertEqual(p["metadata"]["annotations"]["leaderworkerset.sigs.k8s.io/subdomainPolicy"],
                             "UniquePerReplica")
            e = tpu_env(p)
            self.assertEqual(e["TPU_WORKER_HOSTNAMES"],
                             ",".join([leader + "." + leader] +
                                      ["%s-%d.%s" % (leader, i, leader) for i in range(1, 4)]))
            self.assertEqual(e["PET_MASTER_ADDR"], "%s.%s" % (leader, leader))
            self.assertEqual(e["LWS_LEADER_ADDRESS"], "%s.%s.serving" % (leader, leader))
        physics.check_slices(pods)

    def test_shared_is_the_default(self):
        for p in render("lws-and-smoke-job.json")[:8]:
            self.assertEqual(p["spec"]["subdomain"], "vllm")
            self.assertTrue(tpu_env(p)["TPU_WORKER_HOSTNAMES"].endswith(".vllm"))
        with open(os.path.join(FIX, "lws-unique-per-replica.yaml")) as f:
            text = f.read()
        p = run("render", "--output", "json", "-",
                stdin=text.replace("UniquePerReplica", "Shared").encode())
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual({q["spec"]["subdomain"] for q in json.loads(p.stdout)["items"]}, {"serve"})

    def test_unknown_policy_named(self):
        with open(os.path.join(FIX, "lws-unique-per-replica.yaml")) as f:
            text = f.read().replace("UniquePerReplica", "PerGroup")
        p = run("render", "-", stdin=text.encode())
        self.assertNotEqual(p.returncode, 0)
        self.assertIn('spec.networkConfig.subdomainPolicy is "PerGroup"', p.stderr.decode())


class JobSetCoordinator(unittest.TestCase):
    """Issue 34, item 5: spec.coordinator as JobSet v0.12.0's controller
    writes it (CoordinatorEndpoint, labelAndAnnotateObject): label and
    annotation jobset.sigs.k8s.io/coordinator = <jobset>-<replicatedJob>-
    <jobIndex>-<podIndex>.<subdomain> on every pod, so a Pathways worker's
    fieldRef to it resolves; a coordinator JobSet's webhook refuses is
    refused with the reason."""

    KEY = "jobset.sigs.k8s.io/coordinator"

    def text(self):
        with open(os.path.join(FIX, "jobset-pathways-coordinator.yaml")) as f:
            return f.read()

    def render_text(self, text):
        p = run("render", "--output", "json", "-", stdin=text.encode())
        self.assertEqual(p.returncode, 0, p.stderr.decode())
        return json.loads(p.stdout)["items"]

    def test_every_pod_labelled_and_annotated(self):
        pods = render("jobset-pathways-coordinator.yaml")
        self.assertEqual(len(pods), 3)
        for p in pods:
            md = p["metadata"]
            self.assertEqual(md["labels"][self.KEY], "pathways-head-0-0.pathways")
            self.assertEqual(md["annotations"][self.KEY], "pathways-head-0-0.pathways")
        # the coordinator is a pod that exists: its hostname.subdomain
        head = pods[0]
        self.assertEqual("%s.%s" % (head["spec"]["hostname"], head["spec"]["subdomain"]),
                         "pathways-head-0-0.pathways")
        for w in pods[1:]:
            env = physics.env_of(physics.resolve_field_refs(w)["spec"]["containers"][0])
            self.assertEqual(env["PATHWAYS_HEAD"], "pathways-head-0-0.pathways")

    def test_indices_and_subdomain(self):
        text = self.text().replace("    replicatedJob: head\n",
                                   "    replicatedJob: worker\n    podIndex: 1\n")
        text = text.replace("spec:\n  coordinator:", "spec:\n  network: {subdomain: pw}\n  coordinator:")
        for p in self.render_text(text):
            self.assertEqual(p["metadata"]["labels"][self.KEY], "pathways-worker-0-1.pw")
            self.assertEqual(p["spec"]["subdomain"], "pw")

    def test_none_without_coordinator(self):
        text = self.text().replace("  coordinator:\n    replicatedJob: head\n", "")
        for p in self.render_text(text):
            self.assertNotIn(self.KEY, p["metadata"]["labels"])
            self.assertNotIn(self.KEY, p["metadata"]["annotations"])

    def test_refused_as_jobset_refuses(self):
        for old, new, part in (
                ("replicatedJob: head", "replicatedJob: boss", 'replicatedJob "boss" is not a replicated job'),
                ("replicatedJob: head", "replicatedJob: head\n    jobIndex: 1", "jobIndex 1 is not a Job"),
                ("replicatedJob: head", "replicatedJob: worker\n    podIndex: 2", "podIndex 2 is not a pod"),
                ("name: pathways\n", "name: %s\n" % ("p" * 50), "shorten the JobSet")):
            text = self.text().replace(old, new, 1)
            p = run("render", "-", stdin=text.encode())
            self.assertEqual(p.returncode, 2, p.stderr.decode())
            self.assertIn(part, p.stderr.decode())
            self.assertIn("JobSet's webhook refuses it", p.stderr.decode())


def review_workload(pod):
    """The webhook's /mutate-workload answer for pod (a CREATE)."""
    rv = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
          "request": {"uid": "u", "kind": {"group": "", "version": "v1", "kind": "Pod"},
                      "resource": {"group": "", "version": "v1", "resource": "pods"},
                      "namespace": pod["metadata"].get("namespace", "default"),
                      "operation": "CREATE", "object": pod}}
    p = run("review", "--workload", stdin=json.dumps(rv).encode())
    assert p.returncode == 0, p.stderr.decode()
    return json.loads(p.stdout)["response"]


class LwsTpu7xPorts(unittest.TestCase):
    """Issue 34, item 5: a TPU7x LWS pod with two TPU containers (one libtpu
    each) gets LWS v0.9.0's per-container process ports: container i listens
    on its own TPU_PROCESS_PORT (8476 + i unless declared) and
    TPU_PROCESS_ADDRESSES lists every host's containers on theirs, in
    TPU_WORKER_HOSTNAMES order (LWS's AddTPUVariables)."""

    def check(self, pods, ports):
        self.assertEqual(len(pods), 2)
        for p in pods:
            cs = p["spec"]["containers"]
            envs = [{e["name"]: e.get("value") for e in c["env"]} for c in cs]
            self.assertEqual([e["TPU_PROCESS_PORT"] for e in envs], ports)
            hosts = envs[0]["TPU_WORKER_HOSTNAMES"].split(",")
            self.assertEqual(hosts, ["ironwood-0.ironwood"] * 2 + ["ironwood-0-1.ironwood"] * 2)
            want = ",".join("%s:%s" % (h, ports[i % 2]) for i, h in enumerate(hosts))
            for e in envs:
                self.assertEqual(e["TPU_PROCESS_ADDRESSES"], want)
                self.assertEqual(e["TPU_WORKER_HOSTNAMES"], envs[0]["TPU_WORKER_HOSTNAMES"])
            # entry TPU_WORKER_ID of the list is this container's own address
            for c, e in zip(cs, envs):
                own = "%s.%s:%s" % (p["spec"]["hostname"], p["spec"]["subdomain"], e["TPU_PROCESS_PORT"])
                self.assertEqual(want.split(",")[int(e["TPU_WORKER_ID"])], own, c["name"])
            # the webhook's own admission of the pod as render shows it: nothing to add
            resp = review_workload(p)
            self.assertTrue(resp["allowed"], resp)
            self.assertNotIn("patch", resp)

    def test_default_ports(self):
        self.check(render("lws-tpu7x-two-containers.yaml"), ["8476", "8477"])

    def test_declared_port_kept(self):
        with open(os.path.join(FIX, "lws-tpu7x-two-containers.yaml")) as f:
            text = f.read()
        numa1 = "        - name: numa1\n          image: IMAGE\n"
        self.assertIn(numa1, text)
        text = text.replace(numa1, numa1 + '          env: [{name: TPU_PROCESS_PORT, value: "9000"}]\n')
        p = run("render", "--output", "json", "-", stdin=text.encode())
        self.assertEqual(p.returncode, 0, p.stderr.decode())
        self.check(json.loads(p.stdout)["items"], ["8476", "9000"])


JOB = """apiVersion: batch/v1
kind: Job
metadata: {name: train}
spec:
  completionMode: Indexed
  parallelism: 4
  completions: 4
  template:
    spec:
      subdomain: train
      restartPolicy: Never
      nodeSelector:
        cloud.google.com/gke-tpu-accelerator: tpu-v6e-slice
        cloud.google.com/gke-tpu-topology: 4x4
      containers:
      - name: trainer
        image: IMAGE
        resources: {limits: {google.com/tpu: 4}}
"""
SERVICE = """---
apiVersion: v1
kind: Service
metadata: {name: %s}
spec: {clusterIP: %s, publishNotReadyAddresses: %s, selector: {job-name: %s}}
"""


class Services(unittest.TestCase):
    """Issue 24, item 3: render and check warn about the headless Service of
    a multi-host Job, with doctor's Service rules, against the Services of
    the same input (docs/workloads.md, "Names that resolve")."""

    def warnings(self, text):
        """(check's warnings of the Job row, render's warning lines)."""
        p = run("check", "--output", "json", "-", stdin=text.encode())
        self.assertEqual(p.returncode, 0, p.stdout.decode() + p.stderr.decode())
        row = json.loads(p.stdout)["rows"][0]
        self.assertEqual(row["verdict"], "ok")
        r = run("render", "--summary", "-", stdin=text.encode())
        self.assertEqual(r.returncode, 0, r.stderr.decode())
        lines = [l for l in r.stderr.decode().splitlines() if "warning: " in l]
        return row["warnings"], lines

    def assertOne(self, text, *parts):
        checked, rendered = self.warnings(text)
        for ws in (checked, rendered):
            svc = [w for w in ws if "[service-" in w]
            self.assertEqual(len(svc), 1, ws)
            for part in parts:
                self.assertIn(part, svc[0])

    def test_good_service_no_warning(self):
        for text in (JOB + SERVICE % ("train", "None", "true", "train"),
                     open(os.path.join(FIX, "indexed-job-v6e-4x4.yaml")).read()):
            checked, rendered = self.warnings(text)
            self.assertEqual([w for w in checked + rendered if "[service-" in w], [])

    def test_no_service_in_the_input(self):
        self.assertOne(JOB, "no Service in the input: [service-missing]", 'create a Service "train"',
                       "clusterIP: None", "publishNotReadyAddresses: true")

    def test_other_service_only(self):
        self.assertOne(JOB + SERVICE % ("other", "None", "true", "other"), "[service-missing]",
                       'no Service "default/train"')

    def test_not_selecting(self):
        self.assertOne(JOB + SERVICE % ("train", "None", "true", "trian"), "[service-not-selecting]",
                       "metadata.labels[job-name] holds train", "job-name=trian")

    def test_not_publishing(self):
        self.assertOne(JOB + SERVICE % ("train", "None", "false", "train"),
                       "[service-not-publishing]", "publishNotReadyAddresses")

    def test_not_headless(self):
        self.assertOne(JOB + SERVICE % ("train", "10.0.0.9", "true", "train"),
                       "[service-not-headless]", "clusterIP")

    def test_controllers_own_their_services(self):
        for name in ("jobset-v5p-2x2x4-two-slices.yaml", "lws-unique-per-replica.yaml"):
            with open(os.path.join(FIX, name)) as f:
                checked, rendered = self.warnings(f.read())
            self.assertEqual([w for w in checked + rendered if "[service-" in w], [], name)


class Check(unittest.TestCase):
    def test_gates_ci(self):
        good = [os.path.join(FIX, n) for n in ("jobset-v5p-2x2x4-two-slices.yaml",
                                               "indexed-job-v6e-4x4.yaml", "lws-and-smoke-job.json")]
        p = run("check", *good)
        self.assertEqual(p.returncode, 0, p.stdout.decode() + p.stderr.decode())
        self.assertIn("0 rejected", p.stdout.decode())
        p = run("check", "--output", "json", FIX)  # the directory, bad file included
        self.assertEqual(p.returncode, 1)
        report = json.loads(p.stdout)
        rows = {(r["kind"], r["name"]): r for r in report["rows"]}
        self.assertEqual(set(rows), {("JobSet", "llm"), ("Job", "train-v6e"), ("LeaderWorkerSet", "vllm"),
                                     ("Job", "torchtpu-smoke"), ("Job", "train-short"),
                                     ("LeaderWorkerSet", "serve"), ("LeaderWorkerSet", "ironwood"),
                                     ("JobSet", "pathways"), ("JobSet", "mnist")})
        self.assertEqual(rows[("JobSet", "mnist")]["verdict"], "rejected")  # Trainer's, nproc 24
        bad = rows[("Job", "train-short")]
        self.assertEqual(bad["verdict"], "rejected")
        self.assertIn('Job "default/train-short": spec.parallelism is 2, expected 4', bad["message"])
        self.assertEqual((bad["topology"], bad["chipsPerHost"], bad["hostsExpected"]), ("4x4", 4, 4))
        self.assertEqual(rows[("JobSet", "llm")]["verdict"], "ok")

    def test_impossible_shapes_rejected(self):
        """Issue 24: check agrees with /validate-workload on the generation
        table's rules (an unknown accelerator, 8 chips on v5p, 3-D on v6e,
        a malformed topology, chips per pod no VM of that topology has)."""
        base = """apiVersion: batch/v1
kind: Job
metadata: {name: shape}
spec:
  completionMode: Indexed
  parallelism: 4
  completions: 4
  template:
    spec:
      subdomain: shape
      restartPolicy: Never
      nodeSelector:
        cloud.google.com/gke-tpu-accelerator: %s
        cloud.google.com/gke-tpu-topology: "%s"
      containers:
      - name: trainer
        image: IMAGE
        resources: {limits: {google.com/tpu: %d}}
"""
        for accel, topo, chips, part in (("tpu-v6e-podslice", "4x4", 4, "not a GKE TPU accelerator"),
                                         ("tpu-v5p-slice", "2x4x4", 8, "no v5p VM has 8 chips"),
                                         ("tpu-v6e-slice", "2x2x1", 4, "a 3-D topology"),
                                         ("tpu-v6e-slice", "4x4x", 4, '"4x4x"'),
                                         # chips the generation has, not for this topology
                                         ("tpu-v6e-slice", "4x4", 8,
                                          "v6e topology 4x4 takes 4 chips per pod (4 VMs of "
                                          "ct6e-standard-4t)"),
                                         ("tpu-v5-lite-podslice", "8x8", 8,
                                          "v5e topology 8x8 takes 4 chips per pod"),
                                         ("tpu-v6e-slice", "2x4", 1,
                                          "or 8 (1 VM of ct6e-standard-8t)"),
                                         ("tpu-v5-lite-podslice", "2x2", 1,
                                          "v5e topology 2x2 takes 4 chips per pod"),
                                         ("tpu7x", "2x2x2", 1,
                                          "tpu7x topology 2x2x2 takes 4 chips per pod")):
            p = run("check", "--output", "json", "-", stdin=(base % (accel, topo, chips)).encode())
            self.assertEqual(p.returncode, 1, p.stdout.decode() + p.stderr.decode())
            row = json.loads(p.stdout)["rows"][0]
            self.assertEqual(row["verdict"], "rejected")
            self.assertIn(part, row["message"])
            self.assertIn("valid values", row["message"])
        p = run("check", "-", stdin=(base % ("tpu-v5p-slice", "2x2x4", 4)).encode())
        self.assertEqual(p.returncode, 0, p.stdout.decode())
        # v6e 2x4 is one 8-chip VM or two 4-chip VMs; 1x1 is one 1-chip VM
        for accel, topo, chips, hosts in (("tpu-v6e-slice", "2x4", 8, 1),
                                          ("tpu-v6e-slice", "2x4", 4, 2),
                                          ("tpu-v6e-slice", "1x1", 1, 1)):
            doc = (base % (accel, topo, chips)).replace(": 4\n", ": %d\n" % hosts)
            p = run("check", "-", stdin=doc.encode())
            self.assertEqual(p.returncode, 0, doc + p.stdout.decode())

    def test_single_host_identity_in_a_slice_rejected(self):
        """Issue 24, item 2: the Indexed Job of the issue (v5p 2x2x4, a
        single-host identity copied into its template): check rejects it
        with the webhook's reason."""
        job = """apiVersion: batch/v1
kind: Job
metadata: {name: copied}
spec:
  completionMode: Indexed
  parallelism: 4
  completions: 4
  template:
    spec:
      subdomain: copied
      restartPolicy: Never
      nodeSelector:
        cloud.google.com/gke-tpu-accelerator: tpu-v5p-slice
        cloud.google.com/gke-tpu-topology: 2x2x4
      containers:
      - name: trainer
        image: IMAGE
        env: [{name: TPU_WORKER_ID, value: "0"}, {name: TPU_WORKER_HOSTNAMES, value: localhost}]
        resources: {limits: {google.com/tpu: 4}}
"""
        p = run("check", "--output", "json", "-", stdin=job.encode())
        self.assertEqual(p.returncode, 1, p.stdout.decode() + p.stderr.decode())
        row = json.loads(p.stdout)["rows"][0]
        self.assertEqual(row["verdict"], "rejected")
        for part in ('container "trainer"', 'TPU_WORKER_ID "0"', 'TPU_WORKER_HOSTNAMES "localhost"',
                     "remove it"):
            self.assertIn(part, row["message"])

    def test_pod_denial_of_a_long_non_ascii_name_is_utf8(self):
        """A denial names the Job cut to 253 bytes (the Job's own denial since
        issue 24, its pods' before); the cut must fall between characters or
        the JSON report is not UTF-8."""
        name = "\u00e9" * 200  # 400 bytes: a byte cut at 253 splits a character
        job = """apiVersion: batch/v1
kind: Job
metadata: {name: %s}
spec:
  completionMode: Indexed
  parallelism: 4
  completions: 4
  template:
    spec:
      subdomain: train
      restartPolicy: Never
      nodeSelector:
        cloud.google.com/gke-tpu-accelerator: tpu-v6e-slice
        cloud.google.com/gke-tpu-topology: 4x4
      containers:
      - name: trainer
        image: IMAGE
        env: [{name: TPU_NAME, value: a}, {name: TPU_NAME, value: b}]
        resources: {limits: {google.com/tpu: 4}}
""" % name
        p = run("check", "--output", "json", "-", stdin=job.encode())
        self.assertEqual(p.returncode, 1, p.stderr.decode())
        message = json.loads(p.stdout.decode("utf-8"))["rows"][0]["message"]  # strict UTF-8
        self.assertIn("sets TPU_NAME twice", message)
        # the Job itself is denied now (issue 24: the pod path's reason, at the
        # object), its name cut between characters as the pod denial's was
        self.assertIn('Job "default/%s"' % ("\u00e9" * 126), message)
        self.assertNotIn("\ufffd", message)
        # A long container name makes the pod denial longer than check keeps.
        job = job.replace("- name: trainer", '- name: "%s"' % ("\u00e9" * 1000))
        p = run("check", "--output", "json", "-", stdin=job.encode())
        self.assertEqual(p.returncode, 1, p.stderr.decode())
        message = json.loads(p.stdout.decode("utf-8"))["rows"][0]["message"]
        self.assertIn("sets TPU_NAME twice", message)
        self.assertNotIn("\ufffd", message)


def main():
    global BINARY, FIX
    BINARY, FIX = sys.argv[1], sys.argv[2]
    unittest.main(argv=[sys.argv[0]] + sys.argv[3:], verbosity=1)


if __name__ == "__main__":
    main()
