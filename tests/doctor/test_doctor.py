#!/usr/bin/env python3
"""tpu-webhook doctor (issue 26, docs/troubleshooting.md) through the real binary.

Slices are built as their controllers create them: `tpu-webhook render`
builds the pods KubeRay (1.6 native labels, 1.4 legacy path), the Job,
JobSet and LeaderWorkerSet controllers would create from the fixtures and
runs each through the engine's mutation; this test then names them as the
API server would, schedules them on nodes of one node pool per slice and adds
the headless Services. Each test breaks one thing the way a cluster breaks
it and checks that doctor names exactly that slice, that pod and that
problem, and exits 1; the healthy slices exit 0 without a problem line.

Usage: test_doctor.py BINARY FIXTURES_DIR"""
import copy
import json
import os
import subprocess
import sys
import tempfile
import unittest

BINARY = FIX = None
TMP = tempfile.mkdtemp(prefix="doctor-test-")

FIXTURES = {
    "kuberay-native": ("manifests/v6e-multislice.yaml", "1.6"),
    "kuberay-legacy": ("manifests/v6e-multislice.yaml", "1.4"),
    "tpu7x": ("manifests/tpu7x-two-container-numa.yaml", "1.6"),
    "job": ("workloads/indexed-job-v6e-4x4.yaml", None),
    "jobset": ("workloads/jobset-v5p-2x2x4-two-slices.yaml", None),
    "lws": ("workloads/lws-and-smoke-job.json", None),
}


def tpu(c):
    return "google.com/tpu" in json.dumps(c.get("resources", {}))


def slice_of(p):
    lab = p["metadata"].get("labels", {})
    ann = p["metadata"].get("annotations", {})
    if "ray.io/cluster" in lab:
        return ("ray.io/cluster", lab["ray.io/cluster"],
                lab.get("ray.io/worker-group-replica-index") or lab.get("replicaIndex"))
    if "leaderworkerset.sigs.k8s.io/name" in lab:
        return ("leaderworkerset.sigs.k8s.io/name", lab["leaderworkerset.sigs.k8s.io/name"],
                ann.get("leaderworkerset.sigs.k8s.io/leader-name", p["metadata"]["name"]))
    if "jobset.sigs.k8s.io/jobset-name" in lab:
        return ("jobset.sigs.k8s.io/jobset-name", lab["jobset.sigs.k8s.io/jobset-name"],
                lab["batch.kubernetes.io/job-name"])
    if "batch.kubernetes.io/job-name" in lab:
        return ("batch.kubernetes.io/job-name", lab["batch.kubernetes.io/job-name"], "")
    return ("", p["metadata"]["name"], "")


def cluster(name, edit=None):
    """pods, nodes, services of a healthy cluster running the fixture's slices
    (edit: a function of the manifest's text, applied before render)."""
    path, version = FIXTURES[name]
    path = os.path.join(FIX, path)
    if edit:
        with open(path) as f:
            text = edit(f.read())
        path = os.path.join(TMP, "edited-" + os.path.basename(path))
        with open(path, "w") as f:
            f.write(text)
    args = [BINARY, "render", "-o", "json", path]
    if version:
        args += ["--kuberay-version", version]
    p = subprocess.run(args, capture_output=True, timeout=120)
    assert p.returncode == 0, p.stderr.decode()
    pods = json.loads(p.stdout)["items"]
    nodes, services, pools = [], {}, {}
    for i, pod in enumerate(pods):
        m = pod["metadata"]
        if "name" not in m:
            m["name"] = m["generateName"] + "x%04d" % i
        spec = pod["spec"]
        pod["status"] = {"phase": "Running"}
        key, owner, sl = slice_of(pod)
        pool = pools.setdefault((owner, sl), "pool-%d" % len(pools))
        node = "node-%d" % i
        spec["nodeName"] = node
        sel = spec.get("nodeSelector", {})
        labels = {"cloud.google.com/gke-nodepool": pool}
        for k in ("cloud.google.com/gke-tpu-accelerator", "cloud.google.com/gke-tpu-topology"):
            if k in sel:
                labels[k] = sel[k]
        nodes.append({"metadata": {"name": node, "labels": labels}})
        if spec.get("subdomain") and key:
            services[(m.get("namespace", "default"), spec["subdomain"])] = {
                "metadata": {"name": spec["subdomain"], "namespace": m.get("namespace", "default")},
                "spec": {"clusterIP": "None", "publishNotReadyAddresses": True,
                         "selector": {key: owner}}}
    return {"pods": pods, "nodes": nodes, "services": list(services.values())}


def doctor(c, *extra, lists=("pods", "nodes", "services")):
    args = [BINARY, "doctor", "-o", "json"]
    for k in lists:
        f = os.path.join(TMP, k + ".json")
        with open(f, "w") as fh:
            json.dump({"kind": "List", "apiVersion": "v1", "items": c[k]}, fh)
        args += ["--" + k, f]
    p = subprocess.run(args + list(extra), capture_output=True, timeout=120)
    rep = json.loads(p.stdout) if p.returncode in (0, 1) else None
    return p.returncode, rep, p.stderr.decode()


def problems(rep):
    return [(s["name"], pr["problem"], pr["pod"]) for s in rep["slices"] for pr in s["problems"]]


def env(pod, name, ci=0, value=None, delete=False):
    cs = [c for c in pod["spec"]["containers"] if tpu(c)]
    es = cs[ci].setdefault("env", [])
    for e in es:
        if e["name"] == name:
            if delete:
                es.remove(e)
            elif value is not None:
                e["value"] = value
                e.pop("valueFrom", None)
            return e.get("value")
    if value is not None:
        es.append({"name": name, "value": value})
    return None


def by_name(c, suffix):
    for p in c["pods"]:
        if p["spec"].get("hostname", p["metadata"]["name"]).endswith(suffix):
            return p
    raise KeyError(suffix)


class Healthy(unittest.TestCase):
    def test_every_kind_starts(self):
        for name in FIXTURES:
            with self.subTest(name):
                rc, rep, err = doctor(cluster(name))
                self.assertEqual(rc, 0, err)
                self.assertEqual(problems(rep), [])
                self.assertGreater(rep["pods"], 1)
                self.assertTrue(all(s["status"] == "ok" for s in rep["slices"]))

    def test_job_of_the_old_name_label(self):
        # Before Kubernetes 1.27 a Job's pods carry only the job-name label;
        # the webhook names their peers by it (wh_wl_job_name), so doctor
        # files them under that Job, not as pods alone.
        c = cluster("job")
        for p in c["pods"]:
            p["metadata"]["labels"].pop("batch.kubernetes.io/job-name")
        for s in c["services"]:
            sel = s["spec"]["selector"]
            sel["job-name"] = sel.pop("batch.kubernetes.io/job-name")
        rc, rep, err = doctor(c)
        self.assertEqual(rc, 0, err)
        self.assertEqual(problems(rep), [])
        self.assertEqual([(s["kind"], s["hostsPresent"]) for s in rep["slices"]],
                         [("Job", len(c["pods"]))])

    def test_table_has_no_problem_line(self):
        c = cluster("job")
        args = [BINARY, "doctor"]
        for k in ("pods", "nodes", "services"):
            f = os.path.join(TMP, k + ".json")
            with open(f, "w") as fh:
                json.dump({"kind": "List", "items": c[k]}, fh)
            args += ["--" + k, f]
        p = subprocess.run(args, capture_output=True, timeout=60, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("train-v6e", p.stdout)
        self.assertNotIn("error:", p.stdout)
        self.assertNotIn("warning:", p.stdout)


# A healthy cluster broken one way per test; the subclasses group the tests
# by what is broken, one ctest entry each (tests/doctor/CMakeLists.txt).
class Broken(unittest.TestCase):
    def expect(self, c, slice_name, problem, pod, also=()):
        rc, rep, err = doctor(c)
        self.assertEqual(rc, 1 if problem != "drift" else 0, err)
        found = problems(rep)
        main = [f for f in found if f[1] == problem]
        self.assertEqual(main, [(slice_name, problem, pod)], found)
        rest = [f for f in found if f[1] != problem and f[1] not in also]
        self.assertEqual(rest, [], found)
        self.assertTrue(all(f[0] == slice_name for f in found), found)
        return rep


class BrokenHosts(Broken):
    def test_missing_host(self):
        c = cluster("job")
        c["pods"] = [p for p in c["pods"] if p["spec"]["hostname"] != "train-v6e-2"]
        self.expect(c, "train-v6e", "missing-hosts", "")

    def test_extra_host(self):
        c = cluster("job")
        dup = copy.deepcopy(by_name(c, "train-v6e-1"))
        dup["metadata"]["name"] = "train-v6e-1-again"
        c["pods"].append(dup)
        self.expect(c, "train-v6e", "extra-host", "train-v6e-1-again",
                    also=("duplicate-worker-id",))


class BrokenWorkerIds(Broken):
    def test_duplicate_worker_id_legacy(self):
        c = cluster("kuberay-legacy")
        pods = [p for p in c["pods"] if p["metadata"]["labels"].get("replicaIndex") == "slices-1"]
        env(pods[2], "TPU_WORKER_ID", value=env(pods[1], "TPU_WORKER_ID"))
        self.expect(c, "v6e-multislice/slices/1", "duplicate-worker-id",
                    pods[2]["metadata"]["name"], also=("drift",))

    def test_worker_id_out_of_range(self):
        c = cluster("kuberay-native")
        p = by_name(c, "slices-0-3")
        env(p, "TPU_WORKER_ID", value="4")
        self.expect(c, "v6e-multislice/slices/0", "worker-id-out-of-range",
                    p["metadata"]["name"], also=("drift", "missing-hosts"))

    def test_worker_id_missing(self):
        c = cluster("jobset")
        p = by_name(c, "llm-slice-1-2")
        env(p, "TPU_WORKER_ID", delete=True)
        self.expect(c, "llm/slice/1", "worker-id-missing", p["metadata"]["name"],
                    also=("drift",))

    def test_worker_id_not_host(self):
        c = cluster("job")
        a, b = by_name(c, "train-v6e-1"), by_name(c, "train-v6e-2")
        env(a, "TPU_WORKER_ID", value="2")
        env(b, "TPU_WORKER_ID", value="1")
        rc, rep, _ = doctor(c)
        self.assertEqual(rc, 1)
        self.assertEqual(sorted(f for f in problems(rep) if f[1] != "drift"),
                         [("train-v6e", "worker-id-not-host", a["metadata"]["name"]),
                          ("train-v6e", "worker-id-not-host", b["metadata"]["name"])])

    def test_tpu7x_per_container_ids(self):
        c = cluster("tpu7x")
        p = c["pods"][1]
        env(p, "TPU_WORKER_ID", ci=1, value=env(p, "TPU_WORKER_ID", ci=0))
        self.expect(c, "tpu7x-numa/numa/0", "tpu7x-container-ids", p["metadata"]["name"],
                    also=("drift",))


class BrokenHostnames(Broken):
    def test_hostnames_differ(self):
        c = cluster("lws")
        p = by_name(c, "vllm-1-2")
        hosts = env(p, "TPU_WORKER_HOSTNAMES").split(",")
        hosts[3] = "vllm-1-9.vllm"
        env(p, "TPU_WORKER_HOSTNAMES", value=",".join(hosts))
        self.expect(c, "vllm/vllm-1", "hostnames-differ", p["metadata"]["name"],
                    also=("drift",))

    def test_hostnames_entry(self):
        c = cluster("job")
        for p in c["pods"]:
            hosts = env(p, "TPU_WORKER_HOSTNAMES").split(",")
            hosts[1], hosts[2] = hosts[2], hosts[1]
            env(p, "TPU_WORKER_HOSTNAMES", value=",".join(hosts))
        rep = self.expect(c, "train-v6e", "hostnames-entry",
                          by_name(c, "train-v6e-1")["metadata"]["name"], also=("drift",))
        pr = rep["slices"][0]["problems"][0]
        self.assertEqual(pr["holds"], "train-v6e-2.train-v6e")
        self.assertEqual(pr["expected"], "train-v6e-1.train-v6e")

    def test_hostname_missing(self):
        c = cluster("jobset")
        p = by_name(c, "llm-slice-0-3")
        del p["spec"]["subdomain"]
        self.expect(c, "llm/slice/0", "hostname-missing", p["metadata"]["name"],
                    also=("drift", "hostnames-entry", "slicebuilder-entry"))


class BrokenTorch(Broken):
    def test_slicebuilder_differ(self):
        c = cluster("job")
        p = by_name(c, "train-v6e-3")
        env(p, "TORCH_TPU_SLICEBUILDER_ADDRESSES", value=env(p, "TORCH_TPU_SLICEBUILDER_ADDRESSES").replace("8474", "8475"))
        self.expect(c, "train-v6e", "slicebuilder-differ", p["metadata"]["name"],
                    also=("drift",))

    def test_slicebuilder_entry(self):
        c = cluster("jobset")
        for p in c["pods"]:
            if p["metadata"]["labels"]["jobset.sigs.k8s.io/job-index"] == "0":
                v = env(p, "TORCH_TPU_SLICEBUILDER_ADDRESSES")
                env(p, "TORCH_TPU_SLICEBUILDER_ADDRESSES", value=v.replace("llm-slice-0-3.", "llm-slice-1-3."))
        self.expect(c, "llm/slice/0", "slicebuilder-entry",
                    by_name(c, "llm-slice-0-3")["metadata"]["name"], also=("drift",))

    def test_torchrun_differ(self):
        c = cluster("jobset")
        p = by_name(c, "llm-slice-1-0")
        for i, p in enumerate(c["pods"]):
            if p["spec"].get("hostname", "").startswith("llm-slice-1-"):
                env(p, "PET_MASTER_ADDR", value="llm-slice-1-0.llm")
        self.expect(c, "llm/slice/1", "torchrun-differ",
                    by_name(c, "llm-slice-1-0")["metadata"]["name"], also=("drift",))


class BrokenServices(Broken):
    def test_service_missing(self):
        c = cluster("job")
        c["services"] = []
        self.expect(c, "train-v6e", "service-missing", by_name(c, "train-v6e-0")["metadata"]["name"])

    def test_service_not_headless(self):
        c = cluster("lws")
        c["services"][0]["spec"]["clusterIP"] = "10.0.0.7"
        rc, rep, _ = doctor(c)
        self.assertEqual(rc, 1)
        # one Service for both groups of the LeaderWorkerSet: each is told
        self.assertEqual(problems(rep), [("vllm/vllm-0", "service-not-headless", ""),
                                         ("vllm/vllm-1", "service-not-headless", "")])

    def test_service_not_selecting(self):
        c = cluster("kuberay-native")
        c["services"][0]["spec"]["selector"] = {"ray.io/cluster": "other"}
        rc, rep, _ = doctor(c)
        self.assertEqual(rc, 1)
        self.assertEqual(sorted(set(f[1] for f in problems(rep))), ["service-not-selecting"])
        self.assertEqual(len(problems(rep)), 2)  # both slices, first pod of each

    def test_service_not_publishing(self):
        c = cluster("jobset")
        del c["services"][0]["spec"]["publishNotReadyAddresses"]
        rc, rep, _ = doctor(c)
        self.assertEqual(rc, 1)
        self.assertEqual(problems(rep), [("llm/slice/0", "service-not-publishing", ""),
                                         ("llm/slice/1", "service-not-publishing", "")])

    def test_hostnetwork_dns(self):
        c = cluster("job")
        p = by_name(c, "train-v6e-2")
        p["spec"]["hostNetwork"] = True
        # The webhook itself now refuses such a pod (docs/workloads.md, "Names
        # that resolve"), so the drift check says so for the same pod.
        rep = self.expect(c, "train-v6e", "hostnetwork-dns", p["metadata"]["name"], also=("drift",))
        drift = [f for f in problems(rep) if f[1] == "drift"]
        self.assertEqual(drift, [("train-v6e", "drift", p["metadata"]["name"])])
        self.assertIn("ClusterFirstWithHostNet", json.dumps(rep))


class BrokenPlacement(Broken):
    def test_mixed_node_pools(self):
        c = cluster("kuberay-native")
        p = by_name(c, "slices-1-2")
        node = [n for n in c["nodes"] if n["metadata"]["name"] == p["spec"]["nodeName"]][0]
        node["metadata"]["labels"]["cloud.google.com/gke-nodepool"] = "pool-other"
        self.expect(c, "v6e-multislice/slices/1", "mixed-node-pools", p["metadata"]["name"])

    def test_mixed_placement_groups(self):
        c = cluster("job")
        for i, n in enumerate(c["nodes"]):
            n["metadata"]["labels"]["cloud.google.com/gke-placement-group"] = "pg-%d" % (i == 3)
        p = [p for p in c["pods"] if p["spec"]["nodeName"] == "node-3"][0]
        self.expect(c, "train-v6e", "mixed-placement-groups", p["metadata"]["name"])

    def test_node_labels_disagree(self):
        c = cluster("tpu7x")
        p = c["pods"][0]
        node = [n for n in c["nodes"] if n["metadata"]["name"] == p["spec"]["nodeName"]][0]
        node["metadata"]["labels"]["cloud.google.com/gke-tpu-topology"] = "2x2x1"
        self.expect(c, "tpu7x-numa/numa/0", "node-labels-disagree", p["metadata"]["name"])

    def test_unschedulable(self):
        c = cluster("job")
        p = by_name(c, "train-v6e-3")
        del p["spec"]["nodeName"]
        p["status"] = {"phase": "Pending"}
        p["spec"]["nodeSelector"]["cloud.google.com/gke-tpu-topology"] = "8x8"
        self.expect(c, "train-v6e", "unschedulable", p["metadata"]["name"], also=("drift",))


class BrokenMegascale(Broken):
    def test_megascale_num_slices(self):
        c = cluster("jobset")
        for p in c["pods"]:
            if p["spec"].get("hostname", "").startswith("llm-slice-1-"):
                env(p, "MEGASCALE_NUM_SLICES", value="3")
        self.expect(c, "llm/slice/1", "megascale-num-slices",
                    by_name(c, "llm-slice-1-0")["metadata"]["name"], also=("drift",))

    def test_megascale_slice_id(self):
        c = cluster("kuberay-native")
        for p in c["pods"]:
            if p["spec"].get("hostname", "").startswith("slices-1-"):
                env(p, "MEGASCALE_SLICE_ID", value="0")
        first = [p for p in c["pods"] if p["spec"].get("hostname", "").startswith("slices-1-")][0]
        self.expect(c, "v6e-multislice/slices/1", "megascale-slice-id",
                    first["metadata"]["name"], also=("drift",))

    def test_megascale_coordinator(self):
        c = cluster("kuberay-legacy")
        for p in c["pods"]:
            if p["spec"].get("hostname", "").startswith("slices-1-"):
                env(p, "MEGASCALE_COORDINATOR_ADDRESS", value="somewhere-else:8081")
        # two slices disagree: the first slice's value is the one held to
        first = [p for p in c["pods"] if p["spec"].get("hostname", "").startswith("slices-1-")][0]
        self.expect(c, "v6e-multislice/slices/1", "megascale-coordinator",
                          first["metadata"]["name"], also=("drift",))


class BrokenOther(Broken):
    def test_drift_with_the_diff(self):
        c = cluster("kuberay-native")
        p = by_name(c, "slices-0-1")
        env(p, "TPU_NAME", value="edited-by-hand")
        rep = self.expect(c, "v6e-multislice/slices/0", "drift", p["metadata"]["name"])
        pr = [x for s in rep["slices"] for x in s["problems"]][0]
        self.assertEqual(pr["severity"], "warning")
        self.assertEqual(pr["holds"], "TPU_NAME=edited-by-hand")
        self.assertEqual(pr["expected"], "TPU_NAME=slices-0")


    def test_topology_unknown(self):
        c = cluster("job")
        for p in c["pods"]:
            del p["spec"]["nodeSelector"]["cloud.google.com/gke-tpu-topology"]
        for n in c["nodes"]:
            del n["metadata"]["labels"]["cloud.google.com/gke-tpu-topology"]
        rc, rep, err = doctor(c)
        self.assertEqual(rc, 0, err)  # a warning: nothing proves the slice broken
        self.assertEqual([f for f in problems(rep) if f[1] != "drift"],
                         [("train-v6e", "topology-unknown", by_name(c, "train-v6e-0")["metadata"]["name"])])
        self.assertEqual(rep["slices"][0]["status"], "warning")
        self.assertEqual(rep["slices"][0]["hostsExpected"], -1)


class KeptByTheUser(unittest.TestCase):
    """A value the user set and the webhook keeps by its verb
    (include/core/wh/envtab.h) is no drift: a KubeRay user's
    TORCH_TPU_TOPOLOGY ("set if unset") turns TorchTPU's values off on
    purpose. An edit of a value the webhook always writes still is."""

    def test_torch_topology_kept(self):
        for name in ("kuberay-native", "kuberay-legacy"):
            with self.subTest(name):
                c = cluster(name, lambda t: t.replace(
                    "          - name: MEGASCALE_NUM_SLICES\n",
                    "          - name: TORCH_TPU_TOPOLOGY\n            value: \"off\"\n"
                    "          - name: MEGASCALE_NUM_SLICES\n"))
                tpu_pods = [p for p in c["pods"] if any(tpu(x) for x in p["spec"]["containers"])]
                self.assertTrue(tpu_pods)
                for p in tpu_pods:
                    self.assertEqual(env(p, "TORCH_TPU_TOPOLOGY"), "off")
                    self.assertIsNone(env(p, "TORCH_TPU_SLICEBUILDER_ADDRESSES"))
                rc, rep, err = doctor(c)
                self.assertEqual(rc, 0, err)
                self.assertEqual(problems(rep), [])
                env(tpu_pods[1], "TPU_WORKER_HOSTNAMES", value="edited-by-hand")
                rc, rep, err = doctor(c)
                self.assertIn(("drift", tpu_pods[1]["metadata"]["name"]), [f[1:] for f in problems(rep)])


class BadInput(unittest.TestCase):
    def run_doctor(self, *args):
        return subprocess.run([BINARY, "doctor"] + list(args), capture_output=True, text=True,
                              timeout=60)

    def test_not_a_list(self):
        f = os.path.join(TMP, "bad.json")
        with open(f, "w") as fh:
            json.dump({"kind": "Pod", "metadata": {"name": "x"}}, fh)
        p = self.run_doctor("--pods", f)
        self.assertEqual(p.returncode, 2)
        self.assertIn("not a list", p.stderr)

    def test_wrong_kind(self):
        f = os.path.join(TMP, "bad.json")
        with open(f, "w") as fh:
            json.dump({"kind": "List", "items": [{"kind": "Node", "metadata": {"name": "n"}}]}, fh)
        p = self.run_doctor("--pods", f)
        self.assertEqual(p.returncode, 2)
        self.assertIn("items[0] is a Node, expected a Pod", p.stderr)

    def test_missing_file_and_syntax(self):
        p = self.run_doctor("--pods", os.path.join(TMP, "nope.json"))
        self.assertEqual(p.returncode, 2)
        self.assertIn("nope.json", p.stderr)
        f = os.path.join(TMP, "bad.yaml")
        with open(f, "w") as fh:
            fh.write("items: [\n")
        p = self.run_doctor("--pods", f)
        self.assertEqual(p.returncode, 2)
        self.assertIn("bad.yaml", p.stderr)

    def test_names_longer_than_kubernetes_allows(self):
        # Slice keys are built from the namespace and the slice labels; two
        # pods whose labels differ past what a key holds must not be judged as
        # one slice: such a list (no API server returns it) is refused.
        pods = []
        for i in range(2):
            pods.append({"kind": "Pod", "metadata": {
                "name": "p%d" % i, "namespace": "ns",
                "labels": {"jobset.sigs.k8s.io/jobset-name": "j" * 1500 + str(i),
                           "jobset.sigs.k8s.io/replicatedjob-name": "w",
                           "jobset.sigs.k8s.io/job-index": "0",
                           "batch.kubernetes.io/job-completion-index": str(i)}},
                "spec": {"containers": [{"name": "c", "resources": {
                    "limits": {"google.com/tpu": "4"}}}]}})
        f = os.path.join(TMP, "long.json")
        with open(f, "w") as fh:
            json.dump({"kind": "List", "items": pods}, fh)
        p = self.run_doctor("--pods", f)
        self.assertEqual(p.returncode, 2, p.stdout)
        self.assertIn("pod ns/p0: its namespace, name or slice labels are longer than Kubernetes allows",
                      p.stderr)

    def test_nodes_without_pods(self):
        p = self.run_doctor("--nodes", "x.json")
        self.assertEqual(p.returncode, 2)
        self.assertIn("--pods", p.stderr)

    def test_yaml_list(self):
        f = os.path.join(TMP, "pods.yaml")
        with open(f, "w") as fh:
            fh.write("apiVersion: v1\nkind: List\nitems: []\n")
        p = self.run_doctor("--pods", f)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("0 TPU pods in 0 slices", p.stdout)


if __name__ == "__main__":
    BINARY, FIX = sys.argv[1], sys.argv[2]
    unittest.main(argv=sys.argv[:1] + sys.argv[3:], verbosity=1)
