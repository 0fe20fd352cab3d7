#!/usr/bin/env python3
"""The /mutate-workload path (issue 12): TPU pods of Jobs, Indexed Jobs,
JobSets, LeaderWorkerSets and plain pods, built exactly as their controllers
create them (docs/workloads.md, "What each controller puts on a pod").

The worked examples and their expected values are those of
docs/workloads.md (copied there from the project's TPU-workloads reference,
§10). Every patch is applied with python3-jsonpatch by whreview.run, and the
resulting pod is checked against the API server's rules for env entries."""
import copy
import json
import subprocess
import tempfile
import re
import sys
import os
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import whreview as W  # noqa: E402
from whreview import review_of  # noqa: E402

# Kubernetes validates env names with IsEnvVarName: [-._a-zA-Z][-._a-zA-Z0-9]*.
ENV_NAME = re.compile(r"^[-._a-zA-Z][-._a-zA-Z0-9]*$")
NEVER = ("WORLD_SIZE", "RANK", "LOCAL_RANK", "TPU_VISIBLE_CHIPS")
OURS = ("TPU_WORKER_ID", "TPU_WORKER_HOSTNAMES", "TPU_PROCESS_ADDRESSES", "TPU_PROCESS_PORT",
        "MEGASCALE_NUM_SLICES", "MEGASCALE_SLICE_ID", "MEGASCALE_COORDINATOR_ADDRESS",
        "TORCH_TPU_TOPOLOGY", "TORCH_TPU_SLICEBUILDER_ADDRESSES", "PET_NNODES", "PET_NODE_RANK",
        "PET_MASTER_ADDR", "PET_MASTER_PORT", "PET_NPROC_PER_NODE")


def tpu_container(name="trainer", chips=4, env=None, limits_only=True):
    res = {"limits": {"google.com/tpu": str(chips)}}
    if not limits_only:
        res["requests"] = {"google.com/tpu": str(chips)}
    c = {"name": name, "image": "IMAGE", "resources": res}
    if env is not None:
        c["env"] = copy.deepcopy(env)
    return c


def selector(accel, topo):
    sel = {}
    if accel:
        sel["cloud.google.com/gke-tpu-accelerator"] = accel
    if topo:
        sel["cloud.google.com/gke-tpu-topology"] = topo
    return sel


def job_labels(job, uid="11111111-2222-3333-4444-555555555555"):
    return {"batch.kubernetes.io/job-name": job, "job-name": job,
            "batch.kubernetes.io/controller-uid": uid, "controller-uid": uid}


def indexed_job_pod(job="train-v6e", index=2, subdomain="train-v6e", accel="tpu-v6e-slice",
                    topo="4x4", containers=None, ns="default", extra_labels=None):
    """An Indexed-Job pod as the Job controller creates it (Kubernetes
    1.28+, PodIndexLabel on): index annotation and label, hostname,
    generateName, JOB_COMPLETION_INDEX in every container."""
    labels = job_labels(job)
    labels["batch.kubernetes.io/job-completion-index"] = str(index)
    labels["tpu-webhook/inject"] = "enabled"
    labels.update(extra_labels or {})
    containers = containers or [tpu_container()]
    for c in containers:
        env = c.setdefault("env", [])
        if not any(e["name"] == "JOB_COMPLETION_INDEX" for e in env):
            env.append({"name": "JOB_COMPLETION_INDEX", "valueFrom": {"fieldRef": {
                "fieldPath": "metadata.labels['batch.kubernetes.io/job-completion-index']"}}})
    spec = {"hostname": "%s-%d" % (job, index), "restartPolicy": "Never",
            "nodeSelector": selector(accel, topo), "containers": containers}
    if subdomain:
        spec["subdomain"] = subdomain
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"generateName": "%s-%d-" % (job, index), "namespace": ns, "labels": labels,
                         "annotations": {"batch.kubernetes.io/job-completion-index": str(index)},
                         "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": job,
                                              "uid": "11111111-2222-3333-4444-555555555555",
                                              "controller": True}]},
            "spec": spec}


def jobset_pod(js="llm", rj="slice", replicas=2, job=1, index=3, accel="tpu-v5p-slice",
               topo="2x2x4", chips=4, subdomain="llm", global_replicas=None, env=None):
    """A JobSet pod: the JobSet keys as labels and annotations, plus the
    Indexed-Job keys of its child Job <js>-<rj>-<job>."""
    child = "%s-%s-%d" % (js, rj, job)
    keys = {"jobset.sigs.k8s.io/jobset-name": js, "jobset.sigs.k8s.io/jobset-uid": "uid-js",
            "jobset.sigs.k8s.io/replicatedjob-name": rj,
            "jobset.sigs.k8s.io/replicatedjob-replicas": str(replicas),
            "jobset.sigs.k8s.io/global-replicas": str(global_replicas or replicas),
            "jobset.sigs.k8s.io/job-index": str(job), "jobset.sigs.k8s.io/job-global-index": str(job),
            "jobset.sigs.k8s.io/job-key": "0123456789abcdef0123456789abcdef01234567",
            "jobset.sigs.k8s.io/restart-attempt": "0", "jobset.sigs.k8s.io/group-name": "default",
            "jobset.sigs.k8s.io/group-replicas": str(replicas),
            "jobset.sigs.k8s.io/job-group-index": str(job)}
    labels = dict(keys)
    labels.update(job_labels(child))
    labels["batch.kubernetes.io/job-completion-index"] = str(index)
    labels["tpu-webhook/inject"] = "enabled"
    ann = dict(keys)
    ann["alpha.jobset.sigs.k8s.io/exclusive-topology"] = "cloud.google.com/gke-nodepool"
    ann["batch.kubernetes.io/job-completion-index"] = str(index)
    c = tpu_container(chips=chips, env=env)
    c["ports"] = [{"containerPort": 8471}, {"containerPort": 8080}]
    c.setdefault("env", []).append({"name": "JOB_COMPLETION_INDEX", "valueFrom": {"fieldRef": {
        "fieldPath": "metadata.labels['batch.kubernetes.io/job-completion-index']"}}})
    spec = {"hostname": "%s-%d" % (child, index), "hostNetwork": True,
            "dnsPolicy": "ClusterFirstWithHostNet", "restartPolicy": "OnFailure",
            "nodeSelector": selector(accel, topo), "containers": [c]}
    if subdomain:
        spec["subdomain"] = subdomain
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"generateName": "%s-%d-" % (child, index), "namespace": "default",
                         "labels": labels, "annotations": ann},
            "spec": spec}


def lws_pod(lws="vllm", group=1, worker=2, size=4, leader_tpus=True, accel="tpu-v5-lite-podslice",
            topo="4x4", chips=4, lws_env=True, worker_label=True):
    """A LeaderWorkerSet pod as its StatefulSet creates it and LWS's own pod
    webhook completes it (worker 0 is the leader)."""
    leader = "%s-%d" % (lws, group)
    name = leader if worker == 0 else "%s-%d" % (leader, worker)
    labels = {"leaderworkerset.sigs.k8s.io/name": lws,
              "leaderworkerset.sigs.k8s.io/group-index": str(group),
              "leaderworkerset.sigs.k8s.io/group-key": "abc123",
              "leaderworkerset.sigs.k8s.io/template-revision-hash": "h1",
              "tpu-webhook/inject": "enabled"}
    if worker_label:
        labels["leaderworkerset.sigs.k8s.io/worker-index"] = str(worker)
    ann = {"leaderworkerset.sigs.k8s.io/size": str(size)}
    if worker:
        ann["leaderworkerset.sigs.k8s.io/leader-name"] = leader
        if leader_tpus:
            ann["leaderworkerset.sigs.k8s.io/leader-requests-tpus"] = "true"
    env = []
    if lws_env:
        first = 0 if leader_tpus else 1
        hosts = ([leader + ".vllm"] if leader_tpus else []) + \
            ["%s-%d.vllm" % (leader, i) for i in range(1, size)]
        env = [{"name": "TPU_WORKER_HOSTNAMES", "value": ",".join(hosts)},
               {"name": "TPU_WORKER_ID", "value": str(worker - first)},
               {"name": "TPU_NAME", "value": leader},
               {"name": "TPU_PROCESS_ADDRESSES", "value": ",".join(h + ":8476" for h in hosts)},
               {"name": "TPU_PROCESS_PORT", "value": "8476"},
               {"name": "LWS_LEADER_ADDRESS", "value": "%s.vllm.default" % leader},
               {"name": "LWS_GROUP_SIZE", "value": str(size)},
               {"name": "LWS_WORKER_INDEX", "value": str(worker)}]
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "labels": labels, "annotations": ann},
            "spec": {"hostname": name, "subdomain": lws, "nodeSelector": selector(accel, topo),
                     "containers": [tpu_container("vllm", chips=chips, env=env)]}}


def polyaxon_pod(preset="2,2,1,2", accel=None, chips=4):
    """§10.1: a Polyaxon job pod (operator-made non-indexed Job) on one TPU7x
    2x2x1 host, opted in through environment.labels."""
    env = [{"name": "TORCH_TPU_TOPOLOGY", "value": preset}] if preset is not None else []
    sel = {"cloud.google.com/gke-nodepool": "YOUR_TPU_POOL",
           "cloud.google.com/gke-tpu-topology": "2x2x1",
           "cloud.google.com/placement-policy-name": "YOUR_PLACEMENT_POLICY"}
    if accel:
        sel["cloud.google.com/gke-tpu-accelerator"] = accel
    labels = {"app.kubernetes.io/managed-by": "polyaxon", "app.kubernetes.io/component": "polyaxon-jobs",
              "app.kubernetes.io/part-of": "polyaxon-runs", "tpu-webhook/inject": "enabled"}
    labels.update(job_labels("plx-run-0123"))
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"generateName": "plx-run-0123-", "namespace": "polyaxon", "labels": labels,
                         "annotations": {"cloud.google.com/gke-tpu-slice-topology": "2x2x1",
                                         "operation.polyaxon.com/kind": "job"}},
            "spec": {"hostNetwork": True, "dnsPolicy": "ClusterFirstWithHostNet", "nodeSelector": sel,
                     "initContainers": [{"name": "polyaxon-init-auth", "image": "polyaxon/init"}],
                     "containers": [tpu_container("polyaxon-main", chips=chips, env=env, limits_only=False),
                                    {"name": "polyaxon-sidecar", "image": "polyaxon/sidecar"}]}}


def batch_job_pod():
    """§10.2: a non-indexed Job, v6e 1x1."""
    labels = job_labels("torchtpu-smoke")
    labels["tpu-webhook/inject"] = "enabled"
    c = tpu_container("smoke", chips=1, limits_only=False)
    c["command"] = ["python", "/app/smoke.py"]
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"generateName": "torchtpu-smoke-", "namespace": "default", "labels": labels},
            "spec": {"restartPolicy": "Never", "nodeSelector": selector("tpu-v6e-slice", "1x1"),
                     "containers": [c]}}


def addrs(hosts, ports):
    return ",".join("%s:%d" % (h, 8471 + k) for h in hosts for k in range(ports))


def check_api_rules(test, before, after):
    """The mutated pod as the API server would judge it, plus the rules of
    this path: only env entries are added, only to TPU containers, no name
    twice, never WORLD_SIZE/RANK/LOCAL_RANK unless the user wrote them."""
    b, a = copy.deepcopy(before), copy.deepcopy(after)
    for i, (cb, ca) in enumerate(zip(b["spec"]["containers"], a["spec"]["containers"])):
        envb, enva = cb.pop("env", []), ca.pop("env", [])
        test.assertEqual(cb, ca, "only env changes")
        test.assertEqual(enva[:len(envb)], envb, "existing entries untouched, container %d" % i)
        names = [e["name"] for e in enva]
        test.assertEqual(len(names), len(set(names)), "one entry per name: %s" % names)
        for e in enva[len(envb):]:
            test.assertRegex(e["name"], ENV_NAME)
            test.assertIn(e["name"], OURS)
            test.assertIsInstance(e["value"], str)
        tpu = "google.com/tpu" in str(cb.get("resources"))
        if not tpu:
            test.assertEqual(enva, envb, "non-TPU container %s touched" % cb["name"])
    a["spec"]["containers"] = b["spec"]["containers"]
    test.assertEqual(a, b, "nothing but container env changes")


class WorkloadCase(unittest.TestCase):
    def mutate(self, p, allowed=True, nodes=None):
        r = W.run(review_of(p), nodes=nodes, workload=True)
        self.assertEqual(r.allowed, allowed, r.message)
        if allowed:
            check_api_rules(self, p, r.obj)
            again = W.run(review_of(r.obj), nodes=nodes, workload=True)  # idempotence
            self.assertTrue(again.allowed)
            self.assertIsNone(again.patch, "second review patched: %s" % again.patch)
        return r


class WorkedExamples(WorkloadCase):
    """docs/workloads.md, worked examples 1-5."""

    def test_polyaxon_tpu7x_2x2x1(self):
        r = self.mutate(polyaxon_pod())
        self.assertEqual(r.env(), {
            "TORCH_TPU_TOPOLOGY": "2,2,1,2",
            "TPU_WORKER_ID": "0", "TPU_WORKER_HOSTNAMES": "localhost",
            "TORCH_TPU_SLICEBUILDER_ADDRESSES": addrs(["localhost"], 8),
            "PET_NNODES": "1", "PET_NODE_RANK": "0", "PET_MASTER_ADDR": "localhost",
            "PET_MASTER_PORT": "29500", "PET_NPROC_PER_NODE": "8"})
        self.assertEqual(r.obj["spec"]["containers"][0]["env"][0],
                         {"name": "TORCH_TPU_TOPOLOGY", "value": "2,2,1,2"})  # kept, first
        self.assertEqual(r.warnings, [])

    def test_polyaxon_with_accelerator_computes_topology(self):
        r = self.mutate(polyaxon_pod(preset=None, accel="tpu7x"))
        self.assertEqual(r.env()["TORCH_TPU_TOPOLOGY"], "2,2,1,2")
        self.assertEqual(r.env()["PET_NPROC_PER_NODE"], "8")

    def test_batch_job_v6e_1x1(self):
        r = self.mutate(batch_job_pod())
        self.assertEqual(r.env(), {
            "TPU_WORKER_ID": "0", "TPU_WORKER_HOSTNAMES": "localhost",
            "TORCH_TPU_TOPOLOGY": "1,1,1", "TORCH_TPU_SLICEBUILDER_ADDRESSES": "localhost:8471",
            "PET_NNODES": "1", "PET_NODE_RANK": "0", "PET_MASTER_ADDR": "localhost",
            "PET_MASTER_PORT": "29500", "PET_NPROC_PER_NODE": "1"})

    def test_indexed_job_v6e_4x4_index_2(self):
        r = self.mutate(indexed_job_pod())
        hosts = ["train-v6e-%d.train-v6e" % i for i in range(4)]
        env = r.env()
        self.assertEqual(env["TPU_WORKER_ID"], "2")
        self.assertEqual(env["TPU_WORKER_HOSTNAMES"], ",".join(hosts))
        self.assertEqual(env["TORCH_TPU_TOPOLOGY"], "4,4,1")
        self.assertEqual(env["TORCH_TPU_SLICEBUILDER_ADDRESSES"], addrs(hosts, 4))
        self.assertEqual(env["TORCH_TPU_SLICEBUILDER_ADDRESSES"].split(",")[8:12],
                         ["train-v6e-2.train-v6e:%d" % p for p in range(8471, 8475)])
        self.assertEqual([env[k] for k in ("PET_NNODES", "PET_NODE_RANK", "PET_MASTER_ADDR",
                                           "PET_MASTER_PORT", "PET_NPROC_PER_NODE")],
                         ["4", "2", "train-v6e-0.train-v6e", "29500", "4"])
        self.assertIn("JOB_COMPLETION_INDEX", env)  # the Job controller's, untouched

    def test_jobset_v5p_2x2x4_two_slices(self):
        r = self.mutate(jobset_pod())
        hosts = ["llm-slice-1-%d.llm" % i for i in range(4)]
        env = r.env()
        self.assertEqual(env["TPU_WORKER_ID"], "3")
        self.assertEqual(env["TPU_WORKER_HOSTNAMES"], ",".join(hosts))
        self.assertEqual([env["MEGASCALE_NUM_SLICES"], env["MEGASCALE_SLICE_ID"],
                          env["MEGASCALE_COORDINATOR_ADDRESS"]], ["2", "1", "llm-slice-0-0.llm"])
        self.assertNotIn("MEGASCALE_PORT", env)
        self.assertEqual(env["TORCH_TPU_TOPOLOGY"], "2,2,4")
        self.assertEqual(env["TORCH_TPU_SLICEBUILDER_ADDRESSES"], addrs(hosts, 4))
        self.assertEqual([env[k] for k in ("PET_NNODES", "PET_NODE_RANK", "PET_MASTER_ADDR",
                                           "PET_MASTER_PORT", "PET_NPROC_PER_NODE")],
                         ["8", "7", "llm-slice-0-0.llm", "29500", "4"])
        # ranks 28..31 take entries 28 mod 16 = 12..15 of their own slice's list
        self.assertEqual(env["TORCH_TPU_SLICEBUILDER_ADDRESSES"].split(",")[12:16],
                         ["llm-slice-1-3.llm:%d" % p for p in range(8471, 8475)])

    def test_lws_v5e_4x4_worker_2(self):
        p = lws_pod()
        r = self.mutate(p)
        hosts = ["vllm-1.vllm", "vllm-1-1.vllm", "vllm-1-2.vllm", "vllm-1-3.vllm"]
        env = r.env()
        added = {k: env[k] for k in env if k not in {e["name"] for e in p["spec"]["containers"][0]["env"]}}
        self.assertEqual(added, {
            "TORCH_TPU_TOPOLOGY": "4,4,1", "TORCH_TPU_SLICEBUILDER_ADDRESSES": addrs(hosts, 4),
            "PET_NNODES": "4", "PET_NODE_RANK": "2", "PET_MASTER_ADDR": "vllm-1.vllm",
            "PET_MASTER_PORT": "29500", "PET_NPROC_PER_NODE": "4"})


class Classification(WorkloadCase):
    def test_kuberay_pod_goes_to_kuberay_engine(self):
        p = W.pod(native=(0, 1))
        r = W.run(review_of(p), workload=True)
        ref = W.run(review_of(p))
        self.assertEqual(r.patch, ref.patch)
        self.assertEqual(r.obj["spec"]["hostname"], "tpu-group-0-1")

    def test_non_tpu_pod_unchanged(self):
        p = batch_job_pod()
        del p["spec"]["containers"][0]["resources"]
        r = self.mutate(p)
        self.assertIsNone(r.patch)

    def test_opt_out_label(self):
        p = batch_job_pod()
        p["metadata"]["labels"]["tpu-webhook/inject"] = "disabled"
        self.assertIsNone(self.mutate(p).patch)

    def test_only_tpu_containers_touched(self):
        p = polyaxon_pod()
        r = self.mutate(p)
        self.assertNotIn("env", r.obj["spec"]["containers"][1])
        self.assertNotIn("env", r.obj["spec"]["initContainers"][0])

    def test_non_create_unchanged(self):
        for op in ("UPDATE", "DELETE"):
            r = W.run(review_of(indexed_job_pod(), op=op), workload=True)
            self.assertTrue(r.allowed)
            self.assertIsNone(r.patch)

    def test_lws_worker_index_from_name_when_label_absent(self):
        r = self.mutate(lws_pod(worker=3, worker_label=False))
        self.assertEqual(r.env()["PET_NODE_RANK"], "3")

    def test_lws_leader_without_tpus(self):
        # size 5: a CPU leader plus 4 TPU workers; worker 1 is TPU host 0
        r = self.mutate(lws_pod(worker=1, size=5, leader_tpus=False))
        env = r.env()
        self.assertEqual(env["PET_NODE_RANK"], "0")
        self.assertEqual(env["PET_MASTER_ADDR"], "vllm-1-1.vllm")
        self.assertEqual(env["TORCH_TPU_SLICEBUILDER_ADDRESSES"].split(",")[0], "vllm-1-1.vllm:8471")

    def test_lws_template_worker_id_denied(self):
        # Issue 24 (G1): the template carried TPU_WORKER_ID, so LWS's pod
        # webhook injected no identity: the pod has no TPU_WORKER_HOSTNAMES.
        wid_ref = {"name": "TPU_WORKER_ID", "valueFrom": {"fieldRef": {
            "fieldPath": "metadata.labels['leaderworkerset.sigs.k8s.io/worker-index']"}}}
        for worker, tmpl, env in ((2, "workerTemplate", wid_ref),
                                  (0, "leaderTemplate", {"name": "TPU_WORKER_ID", "value": "0"})):
            p = lws_pod(worker=worker, lws_env=False)
            p["spec"]["containers"][0]["env"] = [env]
            r = self.mutate(p, allowed=False)
            for x in ('LeaderWorkerSet "default/vllm"', 'container "vllm"', tmpl,
                      "sets TPU_WORKER_ID", "remove it: LWS sets the TPU identity"):
                self.assertIn(x, r.message)
        # LWS injected (both present), or nothing was set: admitted
        self.mutate(lws_pod(worker=2))
        self.mutate(lws_pod(worker=2, lws_env=False))
        # single-host group: LWS skipped, one host needs no peers
        p = lws_pod(worker=0, size=1, topo="2x2", lws_env=False)
        p["spec"]["containers"][0]["env"] = [{"name": "TPU_WORKER_ID", "value": "0"}]
        self.mutate(p)

    def test_lws_size_mismatch_denied(self):
        r = self.mutate(lws_pod(size=3), allowed=False)
        self.assertIn("size 3", r.message)
        self.assertIn("LeaderWorkerSet \"default/vllm\"", r.message)
        self.assertIn("spec.leaderWorkerTemplate.size to 4", r.message)


class Coexistence(WorkloadCase):
    def test_gke_values_kept(self):
        gke = [{"name": "TPU_WORKER_ID", "value": "2"},
               {"name": "TPU_WORKER_HOSTNAMES", "value": "10.0.0.1,10.0.0.2,10.0.0.3,10.0.0.4"}]
        c = tpu_container(env=gke)
        r = self.mutate(indexed_job_pod(containers=[c]))
        env = r.env()
        self.assertEqual(env["TPU_WORKER_HOSTNAMES"], "10.0.0.1,10.0.0.2,10.0.0.3,10.0.0.4")
        self.assertEqual(env["PET_NODE_RANK"], "2")

    def test_empty_and_valuefrom_entries_count_as_present(self):
        pre = [{"name": "TPU_WORKER_ID", "value": ""},
               {"name": "PET_NODE_RANK", "valueFrom": {"fieldRef": {
                   "fieldPath": "metadata.annotations['batch.kubernetes.io/job-completion-index']"}}}]
        r = self.mutate(indexed_job_pod(containers=[tpu_container(env=pre)]))
        env = r.env()
        self.assertEqual(env["TPU_WORKER_ID"], "")
        self.assertIn("fieldRef", env["PET_NODE_RANK"])

    def test_user_torchrun_values_kept(self):
        r = self.mutate(batch_job_pod_with_env([{"name": "PET_MASTER_PORT", "value": "1234"}]))
        self.assertEqual(r.env()["PET_MASTER_PORT"], "1234")

    def test_never_world_size(self):
        for p in (polyaxon_pod(), batch_job_pod(), indexed_job_pod(), jobset_pod(), lws_pod()):
            env = W.run(review_of(p), workload=True).env()
            for k in NEVER:
                self.assertNotIn(k, env)

    def test_preset_topology_contradiction_warns(self):
        r = self.mutate(batch_job_pod_with_env([{"name": "TORCH_TPU_TOPOLOGY", "value": "2,1,1"}]))
        env = r.env()
        self.assertEqual(env["TORCH_TPU_TOPOLOGY"], "2,1,1")
        # the user's grid is what torch_tpu uses: one address per process of it
        self.assertEqual(env["TORCH_TPU_SLICEBUILDER_ADDRESSES"], addrs(["localhost"], 2))
        self.assertEqual(len(r.warnings), 1)
        self.assertIn("TORCH_TPU_TOPOLOGY", r.warnings[0])
        self.assertIn("2,2,1", r.warnings[0])
        self.assertIn("preset TORCH_TPU_TOPOLOGY", r.notes)
        # agreeing preset: no warning
        r = self.mutate(batch_job_pod_with_env([{"name": "TORCH_TPU_TOPOLOGY", "value": "2,2,1"}]))
        self.assertEqual(r.warnings, [])

    def test_megascale_opt_out_by_empty_value(self):
        r = self.mutate(jobset_pod(env=[{"name": "MEGASCALE_NUM_SLICES", "value": ""}]))
        env = r.env()
        self.assertNotIn("MEGASCALE_SLICE_ID", env)
        self.assertNotIn("MEGASCALE_COORDINATOR_ADDRESS", env)

    def test_megascale_ambiguous_with_other_replicated_jobs(self):
        r = self.mutate(jobset_pod(global_replicas=3))
        self.assertNotIn("MEGASCALE_NUM_SLICES", r.env())
        r = self.mutate(jobset_pod(global_replicas=3, env=[{"name": "MEGASCALE_NUM_SLICES", "value": "2"}]))
        self.assertEqual(r.env()["MEGASCALE_SLICE_ID"], "1")

    def test_single_slice_jobset_has_no_megascale(self):
        r = self.mutate(jobset_pod(replicas=1, job=0))
        self.assertNotIn("MEGASCALE_NUM_SLICES", r.env())
        self.assertEqual(r.env()["PET_NNODES"], "4")


def batch_job_pod_with_env(env):
    p = batch_job_pod()
    p["spec"]["containers"][0]["env"] = env
    p["spec"]["nodeSelector"]["cloud.google.com/gke-tpu-topology"] = "2x2"
    p["spec"]["containers"][0]["resources"] = {"limits": {"google.com/tpu": "4"}}
    return p


class Denials(WorkloadCase):
    def test_indexed_job_without_subdomain(self):
        r = self.mutate(indexed_job_pod(subdomain=None), allowed=False)
        for part in ('Indexed Job "default/train-v6e"', "spec.subdomain", "4 hosts",
                     "headless Service", "job-name=train-v6e"):
            self.assertIn(part, r.message)

    def test_chips_do_not_divide_topology(self):
        r = self.mutate(indexed_job_pod(containers=[tpu_container(chips=3)]), allowed=False)
        for part in ("3 google.com/tpu", "16 chips", "4x4"):
            self.assertIn(part, r.message)

    def test_index_beyond_hosts(self):
        r = self.mutate(indexed_job_pod(index=4), allowed=False)
        for part in ("completion index 4", "4 hosts", "parallelism and completions to 4"):
            self.assertIn(part, r.message)

    def test_jobset_without_subdomain(self):
        r = self.mutate(jobset_pod(subdomain=None), allowed=False)
        self.assertIn('JobSet "default/llm"', r.message)
        self.assertIn("enableDNSHostnames", r.message)

    def test_bad_completion_index(self):
        p = indexed_job_pod()
        p["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"] = "x"
        r = self.mutate(p, allowed=False)
        self.assertIn('"x"', r.message)

    def test_duplicate_injected_env_denied(self):
        # Issue 10: the kubelet uses the last entry of a name, the webhook
        # edited the first; a second TPU_WORKER_HOSTNAMES hid the injected one.
        env = [{"name": "TPU_WORKER_HOSTNAMES", "value": "a"},
               {"name": "TPU_WORKER_HOSTNAMES", "value": "localhost"}]
        r = self.mutate(indexed_job_pod(containers=[tpu_container(env=env)]), allowed=False)
        for part in ('container "trainer"', "TPU_WORKER_HOSTNAMES twice", "env[0] and env[1]",
                     "keep one TPU_WORKER_HOSTNAMES entry"):
            self.assertIn(part, r.message)

    def test_patch_over_limit_denied(self):
        # Issue 10: answers are bounded; a TPU7x 16x32x32 Indexed Job with
        # long names asks for several MB of addresses per pod. (Issue 24: 4
        # chips per pod, a TPU7x VM's; it was 16x32x64 with 8, which no VM has.)
        p = indexed_job_pod(job="j" * 40, subdomain="j" * 40, accel="tpu7x", topo="16x32x32",
                            containers=[tpu_container(chips=4)], index=5)
        r = self.mutate(p, allowed=False)
        for part in ('Indexed Job "default/' + "j" * 40, "16x32x32", "4096 hosts",
                     "1048576-byte limit"):
            self.assertIn(part, r.message)

    def test_bad_topology(self):
        r = self.mutate(indexed_job_pod(topo="4xfour"), allowed=False)
        self.assertIn("4xfour", r.message)
        self.assertIn("cloud.google.com/gke-tpu-topology", r.message)


class Unknown(WorkloadCase):
    """Admitted unchanged with a warning and a log line naming what to add."""

    def test_no_topology(self):
        r = self.mutate(indexed_job_pod(topo=None))
        self.assertIsNone(r.patch)
        self.assertIn("cloud.google.com/gke-tpu-topology", r.warnings[0])
        self.assertIn('Indexed Job "default/train-v6e"', r.notes)

    def test_no_generation(self):
        r = self.mutate(polyaxon_pod(preset=None))
        self.assertIsNone(r.patch)
        self.assertIn("cloud.google.com/gke-tpu-accelerator", r.warnings[0])
        self.assertIn("gke-tpu-accelerator", r.notes)

    def test_node_pool_gives_generation_and_topology(self):
        p = polyaxon_pod(preset=None)
        del p["spec"]["nodeSelector"]["cloud.google.com/gke-tpu-topology"]
        del p["metadata"]["annotations"]["cloud.google.com/gke-tpu-slice-topology"]
        nodes = [W.node("other", {"cloud.google.com/gke-nodepool": "other-pool",
                                  "cloud.google.com/gke-tpu-accelerator": "tpu-v6e-slice",
                                  "cloud.google.com/gke-tpu-topology": "4x4"}),
                 W.node("n1", {"cloud.google.com/gke-nodepool": "YOUR_TPU_POOL",
                               "cloud.google.com/gke-tpu-accelerator": "tpu7x",
                               "cloud.google.com/gke-tpu-topology": "2x2x1"})]
        r = self.mutate(p, nodes=nodes)
        self.assertEqual(r.env()["TORCH_TPU_TOPOLOGY"], "2,2,1,2")
        self.assertEqual(r.env()["PET_NPROC_PER_NODE"], "8")

    def test_single_pod_sized_for_several_hosts(self):
        # (Issue 24: was 1 chip on 2x4, a shape no VM makes, now denied.)
        p = batch_job_pod()
        p["spec"]["nodeSelector"]["cloud.google.com/gke-tpu-topology"] = "2x4"
        for c in p["spec"]["containers"]:
            c["resources"] = {"limits": {"google.com/tpu": "4"}, "requests": {"google.com/tpu": "4"}}
        r = self.mutate(p)
        self.assertIsNone(r.patch)
        self.assertIn("Indexed Job", r.warnings[0])
        self.assertIn("4 of the 8 chips of topology 2x4", r.notes)
        p["spec"]["containers"][0]["resources"] = {"limits": {"google.com/tpu": "1"}}
        r = self.mutate(p, allowed=False)
        self.assertIn("v6e topology 2x4 takes 4 chips per pod", r.message)


class Tpu7xMultiContainer(WorkloadCase):
    """Per-container rules of the KubeRay path: each TPU container is a worker."""

    def test_single_host_two_containers(self):
        cs = [tpu_container("c0", chips=2), tpu_container("c1", chips=2)]
        p = indexed_job_pod(index=0, topo="2x2x1", accel="tpu7x", containers=cs)
        r = self.mutate(p)
        for ci in (0, 1):
            env = r.env(ci)
            self.assertEqual(env["TPU_WORKER_ID"], str(ci))
            self.assertEqual(env["TPU_PROCESS_ADDRESSES"], "localhost:8471,localhost:8472")
            self.assertEqual(env["TPU_PROCESS_PORT"], str(8471 + ci))
            self.assertEqual(env["PET_NNODES"], "2")
            self.assertEqual(env["PET_NODE_RANK"], str(ci))
            self.assertEqual(env["PET_NPROC_PER_NODE"], "4")

    def test_multi_host_two_containers(self):
        cs = [tpu_container("c0", chips=2), tpu_container("c1", chips=2)]
        p = indexed_job_pod(job="t7", subdomain="t7", index=1, topo="2x2x2", accel="tpu7x",
                            containers=cs)
        r = self.mutate(p)
        env = r.env(1)
        self.assertEqual(env["TPU_WORKER_ID"], "3")
        self.assertEqual(env["TPU_WORKER_HOSTNAMES"], "t7-0.t7,t7-1.t7")
        self.assertEqual(env["TPU_PROCESS_ADDRESSES"], "t7-0.t7:8471,t7-0.t7:8472,t7-1.t7:8471,t7-1.t7:8472")
        self.assertEqual(env["PET_NODE_RANK"], "3")
        self.assertEqual(env["PET_NNODES"], "4")


class WholeWorkloads(unittest.TestCase):
    """Every pod of a workload: unique ids 0..n-1 per slice, one peer list
    per slice, MEGASCALE values that agree across slices."""

    def envs(self, pods):
        out = []
        for p in pods:
            r = W.run(review_of(p), workload=True)
            self.assertTrue(r.allowed, r.message)
            out.append(r.env())
        return out

    def test_two_slice_jobset(self):
        envs = self.envs([jobset_pod(job=j, index=i) for j in range(2) for i in range(4)])
        for j in range(2):
            sl = envs[4 * j:4 * j + 4]
            self.assertEqual(sorted(int(e["TPU_WORKER_ID"]) for e in sl), [0, 1, 2, 3])
            self.assertEqual(len({e["TPU_WORKER_HOSTNAMES"] for e in sl}), 1)
            self.assertEqual(len({e["TORCH_TPU_SLICEBUILDER_ADDRESSES"] for e in sl}), 1)
            self.assertEqual({e["MEGASCALE_SLICE_ID"] for e in sl}, {str(j)})
        self.assertEqual({(e["MEGASCALE_NUM_SLICES"], e["MEGASCALE_COORDINATOR_ADDRESS"],
                           e["PET_MASTER_ADDR"], e["PET_NNODES"]) for e in envs},
                         {("2", "llm-slice-0-0.llm", "llm-slice-0-0.llm", "8")})
        self.assertEqual(sorted(int(e["PET_NODE_RANK"]) for e in envs), list(range(8)))

    def test_four_host_indexed_job(self):
        envs = self.envs([indexed_job_pod(index=i) for i in range(4)])
        self.assertEqual([e["TPU_WORKER_ID"] for e in envs], ["0", "1", "2", "3"])
        self.assertEqual([e["PET_NODE_RANK"] for e in envs], ["0", "1", "2", "3"])
        self.assertEqual(len({e["TPU_WORKER_HOSTNAMES"] for e in envs}), 1)


def tpu_template(topo="4x4", accel="tpu-v6e-slice", chips=4, subdomain=None):
    spec = {"restartPolicy": "Never", "nodeSelector": selector(accel, topo),
            "containers": [tpu_container(chips=chips)]}
    if subdomain:
        spec["subdomain"] = subdomain
    return {"metadata": {"labels": {"tpu-webhook/inject": "enabled"}}, "spec": spec}


def job(name="train-v6e", mode="Indexed", parallelism=4, completions=4, **kw):
    spec = {"template": tpu_template(subdomain=kw.pop("subdomain", name), **kw)}
    if mode:
        spec["completionMode"] = mode
    if parallelism is not None:
        spec["parallelism"] = parallelism
    if completions is not None:
        spec["completions"] = completions
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "namespace": "default"}, "spec": spec}


def jobset(parallelism=4, replicas=2, dns=None, exclusive=True):
    js = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
          "metadata": {"name": "llm", "namespace": "default"},
          "spec": {"replicatedJobs": [
              {"name": "coord", "replicas": 1, "template": {"spec": {"template": {"spec": {
                  "containers": [{"name": "c", "image": "IMAGE"}]}}}}},
              {"name": "slice", "replicas": replicas, "template": {"spec": {
                  "parallelism": parallelism, "completions": 4,
                  "template": tpu_template("2x2x4", "tpu-v5p-slice")}}}]}}
    if exclusive:
        js["metadata"]["annotations"] = {
            "alpha.jobset.sigs.k8s.io/exclusive-topology": "cloud.google.com/gke-nodepool"}
    if dns is not None:
        js["spec"]["network"] = {"enableDNSHostnames": dns}
    return js


def lws(size=4, leader=None, subgroup=None):
    lwt = {"size": size, "workerTemplate": tpu_template("4x4", "tpu-v5-lite-podslice")}
    if leader is not None:
        lwt["leaderTemplate"] = leader
    if subgroup is not None:
        lwt["subGroupPolicy"] = {"subGroupSize": subgroup}
    return {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
            "metadata": {"name": "vllm", "namespace": "default"},
            "spec": {"replicas": 2, "leaderWorkerTemplate": lwt}}


class Validation(unittest.TestCase):
    """/validate-workload: multi-host TPU templates of Jobs, JobSets, LWS."""

    def judge(self, obj, op="CREATE"):
        group = {"Job": "batch", "JobSet": "jobset.x-k8s.io",
                 "LeaderWorkerSet": "leaderworkerset.x-k8s.io"}[obj["kind"]]
        rv = review_of(obj, op=op)
        rv["request"]["kind"] = {"group": group, "version": obj["apiVersion"].split("/")[-1],
                                 "kind": obj["kind"]}
        return W.run(rv)

    def test_worked_examples_pass(self):
        for obj in (job(), jobset(), lws()):
            r = self.judge(obj)
            self.assertTrue(r.allowed, r.message)
            self.assertIsNone(r.patch)

    def test_job_every_part_reported(self):
        for op in ("CREATE", "UPDATE"):
            r = self.judge(job(mode=None, parallelism=2, completions=None, subdomain=None), op=op)
            self.assertFalse(r.allowed)
            m = r.message
            for part in ('Job "default/train-v6e": spec.completionMode is unset, expected "Indexed"',
                         "spec.parallelism is 2, expected 4", "spec.completions is unset, expected 4",
                         "spec.template.spec.subdomain is unset", "topology 4x4 with 4 chips per pod"):
                self.assertIn(part, m)
            self.assertEqual(m.count('Job "default/train-v6e"'), 4)

    def test_single_host_job_not_judged(self):
        r = self.judge(job(mode=None, parallelism=8, completions=None, subdomain=None, topo="2x2"))
        self.assertTrue(r.allowed)

    def test_chips_not_dividing(self):
        r = self.judge(job(chips=3))
        self.assertFalse(r.allowed)
        self.assertIn("3 google.com/tpu per pod", r.message)

    def test_jobset_per_replicated_job(self):
        r = self.judge(jobset(parallelism=2, dns=False))
        self.assertFalse(r.allowed)
        self.assertIn('spec.replicatedJobs[1] ("slice").template.spec.parallelism is 2, expected 4',
                      r.message)
        self.assertIn("spec.network.enableDNSHostnames is false", r.message)
        self.assertNotIn("replicatedJobs[0]", r.message)

    def test_jobset_without_exclusive_placement_warns(self):
        r = self.judge(jobset(exclusive=False))
        self.assertTrue(r.allowed)
        self.assertIn("exclusive-topology", r.warnings[0])

    def test_lws_size(self):
        r = self.judge(lws(size=3))
        self.assertFalse(r.allowed)
        self.assertIn("spec.leaderWorkerTemplate.size is 3, expected 4", r.message)
        cpu_leader = {"spec": {"containers": [{"name": "l", "image": "IMAGE"}]}}
        self.assertTrue(self.judge(lws(size=5, leader=cpu_leader)).allowed)
        r = self.judge(lws(size=4, leader=cpu_leader))
        self.assertIn("expected 5", r.message)
        self.assertIn("leader without TPUs", r.message)

    def test_lws_subgroups(self):
        """Issue 34: each subgroup is a slice, and only a leader without TPUs
        followed by whole subgroups of workers makes slices that start
        (docs/workloads.md, "LeaderWorkerSet subgroups")."""
        cpu_leader = {"spec": {"containers": [{"name": "l", "image": "IMAGE"}]}}
        self.assertTrue(self.judge(lws(size=9, subgroup=4, leader=cpu_leader)).allowed)
        self.assertTrue(self.judge(lws(size=5, subgroup=4, leader=cpu_leader)).allowed)
        r = self.judge(lws(size=9, subgroup=2, leader=cpu_leader))
        self.assertIn("subGroupSize is 2, expected 4", r.message)
        # A leader with TPUs: LWS v0.9.0 gives it TPU_WORKER_ID -1.
        r = self.judge(lws(size=8, subgroup=4))
        self.assertFalse(r.allowed)
        self.assertIn("spec.leaderWorkerTemplate.leaderTemplate is absent, so the leader is a "
                      "workerTemplate pod and requests google.com/tpu", r.message)
        self.assertIn("TPU_WORKER_ID -1", r.message)
        self.assertIn("set spec.leaderWorkerTemplate.size to 9 (2 subgroups of 4", r.message)
        r = self.judge(lws(size=8, subgroup=4, leader=tpu_template("4x4", "tpu-v5-lite-podslice")))
        self.assertIn("spec.leaderWorkerTemplate.leaderTemplate requests google.com/tpu", r.message)
        # The suggestion is admitted.
        self.assertTrue(self.judge(lws(size=9, subgroup=4, leader=cpu_leader)).allowed)
        # Workers that are not whole subgroups: the last lists absent hosts.
        r = self.judge(lws(size=8, subgroup=4, leader=cpu_leader))
        self.assertFalse(r.allowed)
        self.assertIn("spec.leaderWorkerTemplate.size is 8, expected 5 or 9: its 7 TPU workers",
                      r.message)
        for size in (5, 9):
            self.assertTrue(self.judge(lws(size=size, subgroup=4, leader=cpu_leader)).allowed)

    def test_bad_numbers(self):
        r = self.judge(job(parallelism="4"))
        self.assertIn('spec.parallelism is "4", expected 4', r.message)
        r = self.judge(job(parallelism=1e300))
        self.assertIn("expected 4", r.message)

    def test_opt_out_and_other_operations(self):
        o = job(parallelism=2)
        o["metadata"]["labels"] = {"tpu-webhook/inject": "disabled"}
        self.assertTrue(self.judge(o).allowed)
        self.assertTrue(self.judge(job(parallelism=2), op="DELETE").allowed)


# Issue 24, item 1: shapes no TPU VM has. (accelerator, topology, chips per
# pod, the field named, the value named, a part of the valid values.)
BAD_SHAPES = (
    ("tpu-v6e-podslice", "4x4", 4, "gke-tpu-accelerator", '"tpu-v6e-podslice"', "tpu-v6e-slice"),
    ("tpu-v5p-slice", "2x2x4", 8, 'resources["google.com/tpu"]', "8 per pod", "valid values: 4"),
    ("tpu-v6e-slice", "2x2x1", 4, "gke-tpu-topology", '"2x2x1", a 3-D topology', "1x1, 2x2, 2x4"),
    ("tpu-v6e-slice", "4x4x", 4, "gke-tpu-topology", '"4x4x"', "1x1, 2x2, 2x4"),
    ("tpu-v6e-slice", "0x4", 4, "gke-tpu-topology", '"0x4"', "1x1, 2x2, 2x4"),
    # chip counts the generation has, but not for the topology (8-chip VMs
    # make only the single-host 2x4, 1-chip VMs only 1x1 / 1x1x1)
    ("tpu-v6e-slice", "4x4", 8, 'resources["google.com/tpu"]', "8 per pod",
     "v6e topology 4x4 takes 4 chips per pod (4 VMs of ct6e-standard-4t); valid values: 4"),
    ("tpu-v5-lite-podslice", "8x8", 8, 'resources["google.com/tpu"]', "8 per pod",
     "v5e topology 8x8 takes 4 chips per pod (16 VMs of ct5lp-hightpu-4t); valid values: 4"),
    ("tpu-v6e-slice", "2x4", 1, 'resources["google.com/tpu"]', "1 per pod",
     "v6e topology 2x4 takes 4 chips per pod (2 VMs of ct6e-standard-4t) or 8 (1 VM of "
     "ct6e-standard-8t); valid values: 4"),  # the workload names its host counts too
    ("tpu-v5-lite-podslice", "2x2", 1, 'resources["google.com/tpu"]', "1 per pod",
     "v5e topology 2x2 takes 4 chips per pod (1 VM of ct5lp-hightpu-4t); valid values: 4"),
    ("tpu7x", "2x2x2", 1, 'resources["google.com/tpu"]', "1 per pod",
     "tpu7x topology 2x2x2 takes 4 chips per pod (2 VMs of tpu7x-standard-4t); valid values: 4"),
)


def shaped_template(accel, topo, chips):
    return tpu_template(topo, accel, chips, subdomain="s")


class Shapes(unittest.TestCase):
    """Issue 24, item 1: the generation table's rules, at the object the user
    applies (Job, JobSet, LWS) and at the pod for plain pods."""

    judge = Validation.judge

    def objects(self, accel, topo, chips):
        t = shaped_template(accel, topo, chips)
        j = job()
        j["spec"]["template"] = t
        js = jobset()
        js["spec"]["replicatedJobs"][1]["template"]["spec"]["template"] = copy.deepcopy(t)
        lw = lws()
        lw["spec"]["leaderWorkerTemplate"]["workerTemplate"] = copy.deepcopy(t)
        return (j, "spec.template."), (js, "spec.replicatedJobs[1]"), \
            (lw, "spec.leaderWorkerTemplate.workerTemplate.")

    def test_denied_at_the_workload(self):
        for accel, topo, chips, field, value, valid in BAD_SHAPES:
            for obj, where in self.objects(accel, topo, chips):
                with self.subTest(kind=obj["kind"], shape=(accel, topo, chips)):
                    r = self.judge(obj)
                    self.assertFalse(r.allowed, obj["kind"])
                    for part in (where, field, value, "valid values", valid):
                        self.assertIn(part, r.message)
                    r = self.judge(obj, op="UPDATE")
                    self.assertFalse(r.allowed)

    def test_denied_at_a_plain_pod(self):
        for accel, topo, chips, field, value, valid in BAD_SHAPES:
            with self.subTest(shape=(accel, topo, chips)):
                p = batch_job_pod()
                p["spec"]["nodeSelector"] = selector(accel, topo)
                p["spec"]["containers"][0]["resources"] = {"limits": {"google.com/tpu": str(chips)}}
                r = W.run(review_of(p), workload=True)
                self.assertFalse(r.allowed)
                self.assertIn('Job "default/torchtpu-smoke"', r.message)
                self.assertIn(value.split(",")[0].split(" ")[0], r.message)

    def test_possible_shapes_pass(self):
        for accel, topo, chips in (("tpu-v5-lite-device", "2x2", 4), ("tpu-v5p-slice", "2x2x4", 4),
                                   ("tpu7x", "2x2x2", 4), ("tpu-v6e-slice", "2x4", 8),
                                   ("tpu-v4-podslice", "2x2x1", 4),
                                   # issue 24: 2x4 is one 8t VM or two 4t VMs; 1t is 1x1
                                   ("tpu-v6e-slice", "2x4", 4), ("tpu-v6e-slice", "1x1", 1),
                                   ("tpu-v5-lite-podslice", "2x4", 4),
                                   ("tpu-v5-lite-podslice", "1x1", 1),
                                   ("tpu-v5-lite-podslice", "8x8", 4), ("tpu7x", "1x1x1", 1)):
            for obj, _ in self.objects(accel, topo, chips):
                hosts = 1
                for d in topo.split("x"):
                    hosts *= int(d)
                hosts //= chips
                if obj["kind"] == "Job":
                    obj["spec"]["parallelism"] = obj["spec"]["completions"] = hosts
                elif obj["kind"] == "JobSet":
                    rj = obj["spec"]["replicatedJobs"][1]["template"]["spec"]
                    rj["parallelism"] = rj["completions"] = hosts
                else:
                    obj["spec"]["leaderWorkerTemplate"]["size"] = hosts
                with self.subTest(kind=obj["kind"], shape=(accel, topo)):
                    r = self.judge(obj)
                    self.assertTrue(r.allowed, r.message)


SINGLE_HOST_ID = [{"name": "TPU_WORKER_ID", "value": "0"},
                  {"name": "TPU_WORKER_HOSTNAMES", "value": "localhost"}]


class Identity(WorkloadCase):
    """Issue 24, item 2: a slice has one identity. A single-host identity
    copied into a multi-host template is refused at the pod and at the
    template; GKE's per-pod values stay."""

    judge = Validation.judge

    def pods(self, env, n=4):
        return [indexed_job_pod(index=i, accel="tpu-v5p-slice", topo="2x2x4",
                                containers=[tpu_container(env=env)]) for i in range(n)]

    def test_copied_single_host_identity_denied_at_every_pod(self):
        for p in self.pods(SINGLE_HOST_ID):
            r = self.mutate(p, allowed=False)
            for part in ('container "trainer" (spec.containers[0])', "TPU_WORKER_HOSTNAMES",
                         '"localhost"', "4 hosts", "remove it"):
                self.assertIn(part, r.message)

    def test_literal_worker_id_other_than_the_index_denied(self):
        env = [{"name": "TPU_WORKER_ID", "value": "0"}]
        pods = self.pods(env)
        self.mutate(pods[0])  # equal to the index: GKE's own value
        for i, p in enumerate(pods[1:], 1):
            r = self.mutate(p, allowed=False)
            for part in ('container "trainer"', 'TPU_WORKER_ID "0"', "host %d of the 4" % i,
                         "remove it"):
                self.assertIn(part, r.message)

    def test_gke_values_respected(self):
        ref = [{"name": "TPU_WORKER_ID", "valueFrom": {"fieldRef": {
            "fieldPath": "metadata.annotations['batch.kubernetes.io/job-completion-index']"}}}]
        envs = []
        for i in range(4):
            own = [{"name": "TPU_WORKER_ID", "value": str(i)}]
            for env in (ref, own):
                p = indexed_job_pod(index=i, accel="tpu-v5p-slice", topo="2x2x4",
                                    containers=[tpu_container(env=env)])
                envs.append(self.mutate(p).env())
        hosts = {e["TPU_WORKER_HOSTNAMES"] for e in envs}
        self.assertEqual(hosts, {",".join("train-v6e-%d.train-v6e" % k for k in range(4))})

    def test_single_host_values_on_one_host_kept(self):
        p = indexed_job_pod(index=0, topo="2x2", containers=[tpu_container(env=SINGLE_HOST_ID)])
        self.assertEqual(self.mutate(p).env()["TPU_WORKER_HOSTNAMES"], "localhost")

    def test_denied_at_the_template(self):
        for env, part in ((SINGLE_HOST_ID[:1], 'TPU_WORKER_ID "0"'),
                          (SINGLE_HOST_ID[1:], 'TPU_WORKER_HOSTNAMES "localhost"')):
            j = job()
            j["spec"]["template"]["spec"]["containers"][0]["env"] = copy.deepcopy(env)
            js = jobset()
            js["spec"]["replicatedJobs"][1]["template"]["spec"]["template"]["spec"]["containers"][0][
                "env"] = copy.deepcopy(env)
            for obj, where in ((j, "spec.template.spec.containers[0]"),
                               (js, "spec.replicatedJobs[1]")):
                r = self.judge(obj)
                self.assertFalse(r.allowed, obj["kind"])
                for x in ('container "trainer"', where, part, "remove it"):
                    self.assertIn(x, r.message)
        lw = lws()
        lw["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]["env"] = \
            copy.deepcopy(SINGLE_HOST_ID[1:])
        r = self.judge(lw)
        self.assertFalse(r.allowed)
        self.assertIn('TPU_WORKER_HOSTNAMES "localhost"', r.message)
        # Issue 24 (G1), a changed verdict: LWS's pod webhook injects no TPU
        # identity when the first TPU container carries TPU_WORKER_ID or
        # TPU_WORKER_HOSTNAMES, so a multi-host group with either (a literal,
        # or a fieldRef to the worker index) has no peers: denied, at the
        # worker and at the leader template.
        wid_ref = {"name": "TPU_WORKER_ID", "valueFrom": {"fieldRef": {
            "fieldPath": "metadata.labels['leaderworkerset.sigs.k8s.io/worker-index']"}}}
        for env in (SINGLE_HOST_ID[:1], [wid_ref],
                    [{"name": "TPU_WORKER_HOSTNAMES", "value": "a.vllm,b.vllm,c.vllm,d.vllm"}]):
            for tmpl in ("workerTemplate", "leaderTemplate"):
                lw = lws()
                lwt = lw["spec"]["leaderWorkerTemplate"]
                lwt.setdefault("leaderTemplate", copy.deepcopy(lwt["workerTemplate"]))
                lwt[tmpl]["spec"]["containers"][0]["env"] = copy.deepcopy(env)
                r = self.judge(lw)
                self.assertFalse(r.allowed, (tmpl, env))
                for x in ('LeaderWorkerSet "default/vllm"', 'container "trainer"',
                          "spec.leaderWorkerTemplate.%s.spec.containers[0]" % tmpl,
                          "sets " + env[0]["name"],
                          "remove it: LWS sets the TPU identity of each pod only when the "
                          "template carries neither"):
                    self.assertIn(x, r.message)
        # a single-host LWS group: LWS skips, and one host needs no peers
        lw = lws(size=1)
        lw["spec"]["leaderWorkerTemplate"]["workerTemplate"] = tpu_template(
            "2x2", "tpu-v5-lite-podslice")
        lw["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]["env"] = \
            copy.deepcopy(SINGLE_HOST_ID[:1])
        r = self.judge(lw)
        self.assertTrue(r.allowed, r.message)
        # single-host template: the values are right
        j = job(topo="2x2", parallelism=1, completions=1)
        j["spec"]["template"]["spec"]["containers"][0]["env"] = copy.deepcopy(SINGLE_HOST_ID)
        self.assertTrue(self.judge(j).allowed)


class Names(WorkloadCase):
    """Issue 24, item 3: a hostNetwork pod resolves the cluster-DNS names
    the webhook writes only with dnsPolicy ClusterFirstWithHostNet."""

    judge = Validation.judge

    def test_hostnetwork_without_dns_policy_denied_at_the_pod(self):
        for policy in (None, "ClusterFirst", "Default"):
            p = jobset_pod()
            if policy:
                p["spec"]["dnsPolicy"] = policy
            else:
                del p["spec"]["dnsPolicy"]
            r = self.mutate(p, allowed=False)
            for part in ("spec.hostNetwork is true", "spec.dnsPolicy is", "ClusterFirstWithHostNet",
                         "8 pods"):
                self.assertIn(part, r.message)
        self.mutate(jobset_pod())  # with ClusterFirstWithHostNet: admitted

    def test_single_host_pod_on_host_network_not_judged(self):
        p = batch_job_pod()
        p["spec"]["hostNetwork"] = True
        self.mutate(p)

    def test_denied_at_the_template(self):
        js = jobset()
        t = js["spec"]["replicatedJobs"][1]["template"]["spec"]["template"]["spec"]
        t["hostNetwork"] = True
        r = self.judge(js)
        self.assertFalse(r.allowed)
        for part in ('spec.replicatedJobs[1] ("slice").template.spec.template.spec.hostNetwork is true',
                     "dnsPolicy is unset", "ClusterFirstWithHostNet"):
            self.assertIn(part, r.message)
        t["dnsPolicy"] = "ClusterFirstWithHostNet"
        self.assertTrue(self.judge(js).allowed)
        j = job()
        j["spec"]["template"]["spec"]["hostNetwork"] = True
        r = self.judge(j)
        self.assertIn("spec.template.spec.dnsPolicy", r.message)


class Topologies(unittest.TestCase):
    """Issue 34, items 2 and 3, through the binary: the RayCluster's subslice
    rule at the workload object, and the generation table's documented
    topologies (docs/workloads.md, "Subslices", "TPU generations")."""

    judge = Validation.judge

    def subslice_job(self, sub, parent, parallelism):
        j = job(parallelism=parallelism, completions=parallelism, topo=parent, accel="tpu7x")
        j["spec"]["template"]["metadata"]["annotations"] = {
            "cloud.google.com/gke-tpu-slice-topology": sub}
        return j

    def test_subslice_bigger_than_its_pool_is_denied(self):
        # 2x2x4 of 4 chips per pod is 4 pods; the pool is 2x2x2 (2 hosts)
        for op in ("CREATE", "UPDATE"):
            r = self.judge(self.subslice_job("2x2x4", "2x2x2", 4), op=op)
            self.assertFalse(r.allowed)
            for part in ('Job "default/train-v6e": spec.template.metadata.annotations['
                         '"cloud.google.com/gke-tpu-slice-topology"]: subslice "2x2x4" is not '
                         'smaller than parent "2x2x2"', "dimension by dimension",
                         'spec.template.spec.nodeSelector["cloud.google.com/gke-tpu-topology"]'):
                self.assertIn(part, r.message)

    def test_subslice_in_another_axis_order_names_the_order(self):
        # 4x2x2 has the chips of 2x2x4, but the topology names the pool's axes
        # in order: refused on both paths, the message naming the orders
        want = 'write the same shape as "2x2x4" or "2x4x2"'
        r = self.judge(self.subslice_job("4x2x2", "2x4x4", 4))
        self.assertFalse(r.allowed)
        self.assertIn('subslice "4x2x2" is not smaller than parent "2x4x4"', r.message)
        self.assertIn(want, r.message)
        self.assertTrue(self.judge(self.subslice_job("2x2x4", "2x4x4", 4)).allowed)
        rc = {"apiVersion": "ray.io/v1", "kind": "RayCluster",
              "metadata": {"name": "rc", "namespace": "default"},
              "spec": {"workerGroupSpecs": [{
                  "groupName": "sub", "numOfHosts": 4, "replicas": 1,
                  "template": {"metadata": {"annotations": {
                      "cloud.google.com/gke-tpu-slice-topology": "4x2x2"}},
                      "spec": {"nodeSelector": selector("tpu7x", "2x4x4"),
                               "containers": [tpu_container()]}}}]}}
        rv = review_of(rc)
        rv["request"]["kind"] = {"group": "ray.io", "version": "v1", "kind": "RayCluster"}
        r = W.run(rv)
        self.assertFalse(r.allowed)
        self.assertIn('subslice "4x2x2" is not smaller than parent "2x4x4"', r.message)
        self.assertIn(want, r.message)

    def test_subslice_that_fits_is_admitted(self):
        for sub, parent, n in (("2x2x2", "2x2x4", 2), ("2x2x4", "2x2x4", 4)):
            with self.subTest(sub=sub):
                r = self.judge(self.subslice_job(sub, parent, n))
                self.assertTrue(r.allowed, r.message)
                self.assertEqual(r.warnings, [])

    def test_undocumented_topology_is_warned_not_refused(self):
        # the issue's example: TPU7x 2x2x3 is in no documented list
        r = self.judge(job(parallelism=3, completions=3, topo="2x2x3", accel="tpu7x"))
        self.assertTrue(r.allowed, r.message)
        self.assertEqual(r.warnings, ["tpu7x topology 2x2x3 is no documented GKE shape: its pods "
                                      "may stay Pending"])
        # v5p 2x2x3 (3 hosts of 4 chips): a multiple of 4 in no dimension but the
        # last, so neither enumerated nor the cube rule's
        js = jobset()
        js["spec"]["replicatedJobs"][1]["template"]["spec"]["template"] = tpu_template(
            "2x2x3", "tpu-v5p-slice")
        js["spec"]["replicatedJobs"][1]["template"]["spec"]["parallelism"] = 3
        js["spec"]["replicatedJobs"][1]["template"]["spec"]["completions"] = 3
        r = self.judge(js)
        self.assertTrue(r.allowed, r.message)
        self.assertIn('replicated job "slice": v5p topology 2x2x3 is no documented GKE shape: '
                      'its pods may stay Pending', r.warnings)

    def test_documented_topologies_are_not_warned(self):
        # the cube rule's shapes (v4, v5p, TPU7x: multiples of 4 up to the
        # generation's cubes) as well as the enumerated ones
        for accel, topo, n in (("tpu7x", "2x2x4", 4), ("tpu-v4-podslice", "4x4x12", 48),
                               ("tpu-v4-podslice", "16x16x16", 1024),
                               ("tpu-v5p-slice", "2x4x4", 8), ("tpu-v5p-slice", "4x4x12", 48),
                               ("tpu-v5p-slice", "8x8x12", 192), ("tpu7x", "4x4x12", 48),
                               ("tpu-v6e-slice", "8x16", 32)):
            with self.subTest(accel=accel, topo=topo):
                r = self.judge(job(parallelism=n, completions=n, topo=topo, accel=accel))
                self.assertTrue(r.allowed, r.message)
                self.assertEqual(r.warnings, [])

    def test_raycluster_group_is_warned(self):
        rc = {"apiVersion": "ray.io/v1", "kind": "RayCluster",
              "metadata": {"name": "rc", "namespace": "default"},
              "spec": {"workerGroupSpecs": [{
                  "groupName": "odd", "numOfHosts": 3, "replicas": 1,
                  "template": {"spec": {"nodeSelector": selector("tpu7x", "2x2x3"),
                                        "containers": [tpu_container()]}}}]}}
        rv = review_of(rc)
        rv["request"]["kind"] = {"group": "ray.io", "version": "v1", "kind": "RayCluster"}
        r = W.run(rv)
        self.assertTrue(r.allowed, r.message)
        self.assertEqual(r.warnings, ['group "odd": tpu7x topology 2x2x3 is no documented GKE '
                                      'shape: its pods may stay Pending'])


class Routing(unittest.TestCase):
    def test_workload_route_refuses_non_pods(self):
        rc, err = W.run(review_of({"apiVersion": "batch/v1", "kind": "Job",
                                   "metadata": {"name": "j", "namespace": "default"}}),
                        workload=True, expect_rc=2)
        self.assertIn("/mutate-workload", err)


class PresetVerdicts(unittest.TestCase):
    """/validate-workload on preset torchrun values the slice contradicts
    (docs/workloads.md, "Preset values the slice contradicts"): denied or
    warned at the Job, JobSet or LWS, with the object, the field, the value
    and the value that works."""

    FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures",
                            "workloads")

    def judge(self, obj):
        return Validation.judge(self, obj)

    def with_env(self, obj, env, path=("spec", "template")):
        tmpl = obj
        for k in path:
            tmpl = tmpl[k]
        tmpl["spec"]["containers"][0]["env"] = env
        return obj

    def test_nproc_above_devices_denied(self):
        # v6e 4x4, 4 chips per pod: 4 devices per host
        r = self.judge(self.with_env(job(), [{"name": "PET_NPROC_PER_NODE", "value": "24"}]))
        self.assertFalse(r.allowed)
        self.assertIn('Job "default/train-v6e": container "trainer" '
                      '(spec.template.spec.containers[0]) sets PET_NPROC_PER_NODE "24" (env[0]) '
                      "but the container has 4 TPU devices", r.message)
        self.assertIn('set "4"', r.message)
        for ok in ("4", ""):
            r = self.judge(self.with_env(job(), [{"name": "PET_NPROC_PER_NODE", "value": ok}]))
            self.assertTrue(r.allowed, r.message)
            self.assertEqual(r.warnings, [])

    def test_nproc_auto_denied(self):
        r = self.judge(self.with_env(job(), [{"name": "PET_NPROC_PER_NODE", "value": "auto"}]))
        self.assertFalse(r.allowed)
        self.assertIn("one process per CPU of the host", r.message)
        self.assertIn('set "4"', r.message)

    def test_nproc_below_devices_warned(self):
        r = self.judge(self.with_env(job(), [{"name": "PET_NPROC_PER_NODE", "value": "1"}]))
        self.assertTrue(r.allowed, r.message)
        self.assertEqual(r.warnings, ['container "trainer": PET_NPROC_PER_NODE "1" leaves 3 of '
                                      '4 TPU devices idle; set "4"'])

    def test_tpu7x_counts_two_devices_per_chip(self):
        o = job(topo="2x2x1", accel="tpu7x", parallelism=1, completions=1)
        env = lambda v: [{"name": "PET_NPROC_PER_NODE", "value": v}]  # noqa: E731
        self.assertEqual(self.judge(self.with_env(copy.deepcopy(o), env("8"))).warnings, [])
        self.assertTrue(self.judge(self.with_env(copy.deepcopy(o), env("8"))).allowed)
        r = self.judge(self.with_env(copy.deepcopy(o), env("4")))
        self.assertTrue(r.allowed, r.message)
        self.assertIn('leaves 4 of 8 TPU devices idle; set "8"', r.warnings[0])
        r = self.judge(self.with_env(copy.deepcopy(o), env("16")))
        self.assertFalse(r.allowed)
        self.assertIn('the container has 8 TPU devices', r.message)

    def test_nnodes_is_the_world(self):
        r = self.judge(self.with_env(job(), [{"name": "PET_NNODES", "value": "2"}]))
        self.assertFalse(r.allowed)
        self.assertIn('sets PET_NNODES "2" (env[0]) but its torchrun world has 4 nodes', r.message)
        self.assertIn('set "4"', r.message)
        self.assertTrue(self.judge(self.with_env(job(), [{"name": "PET_NNODES",
                                                          "value": "4"}])).allowed)

    def test_nnodes_of_a_multislice_jobset(self):
        # 2 slices of v5p 2x2x4 (4 hosts), alone in the JobSet: MEGASCALE
        # joins them, so torchrun's world is 8 nodes.
        js = jobset()
        js["spec"]["replicatedJobs"].pop(0)
        path = ("spec", "replicatedJobs", 0, "template", "spec", "template")
        r = self.judge(self.with_env(copy.deepcopy(js), [{"name": "PET_NNODES", "value": "4"}],
                                     path))
        self.assertFalse(r.allowed)
        self.assertIn('spec.replicatedJobs[0] ("slice").template.spec.template.spec.'
                      'containers[0]) sets PET_NNODES "4"', r.message)
        self.assertIn('has 8 nodes', r.message)
        self.assertTrue(self.judge(self.with_env(copy.deepcopy(js), [
            {"name": "PET_NNODES", "value": "8"}], path)).allowed)
        # Independent slices (MEGASCALE turned off): each slice is a world.
        r = self.judge(self.with_env(copy.deepcopy(js), [
            {"name": "MEGASCALE_NUM_SLICES", "value": ""}, {"name": "PET_NNODES", "value": "8"}],
            path))
        self.assertFalse(r.allowed)
        self.assertIn('has 4 nodes', r.message)

    def test_literal_node_rank_on_multi_host_denied(self):
        r = self.judge(self.with_env(job(), [{"name": "PET_NODE_RANK", "value": "0"}]))
        self.assertFalse(r.allowed)
        self.assertIn('sets PET_NODE_RANK "0" (env[0]) in a template of 4 pods', r.message)
        self.assertIn("valueFrom", r.message)
        ref = {"fieldRef": {"fieldPath":
                            "metadata.annotations['batch.kubernetes.io/job-completion-index']"}}
        self.assertTrue(self.judge(self.with_env(job(), [{"name": "PET_NODE_RANK",
                                                          "valueFrom": ref}])).allowed)
        single = job(topo="2x2", parallelism=1, completions=1)
        self.assertTrue(self.judge(self.with_env(single, [{"name": "PET_NODE_RANK",
                                                           "value": "0"}])).allowed)

    def test_lws_judged(self):
        o = lws()
        o["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]["env"] = [
            {"name": "PET_NPROC_PER_NODE", "value": "8"}]
        r = self.judge(o)
        self.assertFalse(r.allowed)
        self.assertIn('LeaderWorkerSet "default/vllm": container "trainer" '
                      '(spec.leaderWorkerTemplate.workerTemplate.spec.containers[0]) sets '
                      'PET_NPROC_PER_NODE "8"', r.message)

    def lws_leader(self, leader_env):
        # v6e 4x4, 4 chips per pod: a group of 4 pods, the leader one of them.
        o = lws()
        lwt = o["spec"]["leaderWorkerTemplate"]
        lwt["workerTemplate"] = tpu_template("4x4", "tpu-v6e-slice")
        lwt["leaderTemplate"] = tpu_template("4x4", "tpu-v6e-slice")
        lwt["leaderTemplate"]["spec"]["containers"][0]["env"] = leader_env
        return o

    def test_lws_leader_is_rank_0(self):
        # The leaderTemplate makes one pod of each group, rank 0.
        r = self.judge(self.lws_leader([{"name": "PET_NODE_RANK", "value": "0"}]))
        self.assertTrue(r.allowed, r.message)
        self.assertEqual(r.warnings, [])
        r = self.judge(self.lws_leader([{"name": "PET_NODE_RANK", "value": "1"}]))
        self.assertFalse(r.allowed)
        self.assertIn('(spec.leaderWorkerTemplate.leaderTemplate.spec.containers[0]) sets '
                      'PET_NODE_RANK "1" (env[0]) but the container is node 0 of its torchrun '
                      'world; set "0"', r.message)
        # The workerTemplate makes the other pods: a literal is shared.
        o = self.lws_leader([])
        o["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]["env"] = [
            {"name": "PET_NODE_RANK", "value": "1"}]
        r = self.judge(o)
        self.assertFalse(r.allowed)
        self.assertIn("in a template of 4 pods", r.message)

    def with_command(self, obj, command=None, args=None):
        c = obj["spec"]["template"]["spec"]["containers"][0]
        if command is not None:
            c["command"] = command
        if args is not None:
            c["args"] = args
        return obj

    def test_command_line_flag_wins(self):
        # torchrun reads PET_<OPT> only as the default of --<opt>.
        auto = [{"name": "PET_NPROC_PER_NODE", "value": "auto"}]
        for command, args in ((["torchrun", "--nproc_per_node=4", "train.py"], None),
                              (["torchrun"], ["--nproc-per-node", "4", "train.py"]),
                              (["bash", "-c", "torchrun --nproc_per_node=4 train.py"], None)):
            with self.subTest(command=command, args=args):
                r = self.judge(self.with_command(self.with_env(job(), auto), command, args))
                self.assertTrue(r.allowed, r.message)
                self.assertEqual(r.warnings, [])
        r = self.judge(self.with_command(self.with_env(job(), auto),
                                         ["torchrun", "--nnodes=4", "train.py"]))
        self.assertFalse(r.allowed)
        self.assertIn('PET_NPROC_PER_NODE "auto"', r.message)
        env = [{"name": "PET_NNODES", "value": "2"}, {"name": "PET_NODE_RANK", "value": "0"}]
        r = self.judge(self.with_command(self.with_env(job(), env),
                                         ["torchrun", "--nnodes", "4", "--node_rank=$(R)"]))
        self.assertTrue(r.allowed, r.message)

    def check_yaml(self, obj):
        import tempfile
        import yaml
        with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
            yaml.safe_dump(obj, f)
        try:
            out = subprocess.run([W.BINARY, "check", "-o", "json", f.name], capture_output=True,
                                 text=True, timeout=60)
        finally:
            os.unlink(f.name)
        return out.returncode, json.loads(out.stdout)["rows"][0]

    def test_check_takes_the_leader_rank_and_the_flag(self):
        rc, row = self.check_yaml(self.lws_leader([{"name": "PET_NODE_RANK", "value": "0"}]))
        self.assertEqual(rc, 0, row)
        self.assertNotEqual(row["verdict"], "rejected", row)
        o = self.with_command(self.with_env(job(), [{"name": "PET_NPROC_PER_NODE",
                                                     "value": "auto"}]),
                              ["torchrun", "--nproc_per_node=4", "train.py"])
        rc, row = self.check_yaml(o)
        self.assertEqual(rc, 0, row)
        self.assertNotEqual(row["verdict"], "rejected", row)

    def test_trainjob_jobset_names_its_trainjob(self):
        # Built as Kubeflow Trainer v2 builds it (the fixture says from what).
        import yaml
        with open(os.path.join(self.FIXTURES, "trainjob-v6e-4x4-nproc-auto.yaml")) as f:
            js = yaml.safe_load(f)
        r = self.judge(js)
        self.assertFalse(r.allowed)
        self.assertIn('JobSet "default/mnist": container "node" (spec.replicatedJobs[0] '
                      '("node").template.spec.template.spec.containers[0]) sets '
                      'PET_NPROC_PER_NODE "24" (env[1])', r.message)
        self.assertIn('set "4", through TrainJob "default/mnist", which owns this JobSet: its '
                      "spec.trainer.numProcPerNode", r.message)
        # Trainer's other values (PET_NNODES 4, the rank's fieldRef) agree.
        self.assertNotIn("PET_NNODES", r.message)
        self.assertNotIn("PET_NODE_RANK", r.message)
        env = js["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"][
            "containers"][0]["env"]
        env[1]["value"] = "4"  # numProcPerNode: 4
        self.assertTrue(self.judge(js).allowed)
        # Not Trainer's: no TrainJob named.
        env[1]["value"] = "24"
        del js["metadata"]["ownerReferences"]
        r = self.judge(js)
        self.assertFalse(r.allowed)
        self.assertNotIn("TrainJob", r.message)

    def review_pod(self, pod, container, env):
        for c in pod["spec"]["containers"]:
            if c["name"] == container:
                c.setdefault("env", []).extend(env)
        r = W.run(review_of(pod), workload=True)
        self.assertTrue(r.allowed, r.message)  # the pod path keeps it: warned, not denied
        return r

    def test_pod_path_warns_and_keeps(self):
        # Polyaxon's TPU7x 2x2x1 host: 4 chips, 8 devices.
        r = self.review_pod(polyaxon_pod(), "polyaxon-main",
                            [{"name": "PET_NPROC_PER_NODE", "value": "16"}])
        self.assertIn('container "polyaxon-main": PET_NPROC_PER_NODE "16" is above its 8 TPU '
                      'devices; set "8"', r.warnings)
        self.assertEqual(r.env()["PET_NPROC_PER_NODE"], "16")
        r = self.review_pod(polyaxon_pod(), "polyaxon-main",
                            [{"name": "PET_NPROC_PER_NODE", "value": "8"}])
        self.assertEqual(r.warnings, [])
        r = self.review_pod(batch_job_pod(), "smoke", [{"name": "PET_NPROC_PER_NODE",
                                                        "value": "auto"}])
        self.assertEqual(r.warnings, ['container "smoke": PET_NPROC_PER_NODE "auto" is no TPU '
                                      'device count; set "1"'])

    def test_pod_path_judges_the_pods_own_rank_and_world(self):
        r = self.review_pod(indexed_job_pod(index=2), "trainer",
                            [{"name": "PET_NODE_RANK", "value": "0"},
                             {"name": "PET_NNODES", "value": "2"}])
        self.assertIn('container "trainer": PET_NNODES "2" is not the world\'s 4 nodes; set "4"',
                      r.warnings)
        self.assertIn('container "trainer": PET_NODE_RANK "0" is not its rank; set "2"',
                      r.warnings)
        r = self.review_pod(indexed_job_pod(index=2), "trainer",
                            [{"name": "PET_NODE_RANK", "value": "2"},
                             {"name": "PET_NNODES", "value": "4"}])
        self.assertEqual(r.warnings, [])

    def test_render_env_says_it(self):
        o = self.with_env(job(topo="2x2", parallelism=1, completions=1),
                          [{"name": "PET_NPROC_PER_NODE", "value": "2"}])
        with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
            json.dump(o, f)
            f.flush()
            out = subprocess.run([W.BINARY, "render", "--env", f.name], capture_output=True,
                                 text=True, timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertRegex(out.stdout, r"PET_NPROC_PER_NODE +user +2\n")
        self.assertIn('  ! container "trainer": PET_NPROC_PER_NODE "2" leaves 2 of 4 TPU devices '
                      'idle; set "4"', out.stdout)

    def test_check_says_it(self):
        out = subprocess.run([W.BINARY, "check", "-o", "json", os.path.join(
            self.FIXTURES, "trainjob-v6e-4x4-nproc-auto.yaml")], capture_output=True, text=True,
            timeout=60)
        self.assertEqual(out.returncode, 1, out.stderr)
        row = json.loads(out.stdout)["rows"][0]
        self.assertEqual(row["verdict"], "rejected")
        self.assertIn('TrainJob "default/mnist"', row["message"])


if __name__ == "__main__":
    W.main()
