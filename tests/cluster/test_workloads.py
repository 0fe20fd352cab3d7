"""JobSet (v0.12.0) and LeaderWorkerSet (v0.9.0) through their real
controllers, with their own admission webhooks, and the real Job and
StatefulSet controllers (issue 32, item 4). The workloads opt in as
docs/workloads.md says (label tpu-webhook/inject: enabled on the pod
template); the stored pods are judged by the project's physics
(tests/engine/physics.py: ids dense per slice, one peer list per slice
whose entry i is worker i's name, torchrun world = MEGASCALE world,
distinct ports per pod), and their count must be what the workload asks.
Each class works in its own namespace."""

import json
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import clusterlib as cl  # noqa: E402
import operators as op  # noqa: E402
from clusterlib import physics  # noqa: E402

EXCLUSIVE = "alpha.jobset.sigs.k8s.io/exclusive-topology"


def fixture(name, ns):
    return op.in_namespace(os.path.join(cl.WORKLOADS, name), ns)["items"]


def jobset(ns):
    """docs/workloads.md's worked example 4 (two v5p 2x2x4 slices) without
    exclusive placement: no scheduler runs, and JobSet's pod webhook holds
    an exclusive JobSet's followers until the leader has a node."""
    js = fixture("jobset-v5p-2x2x4-two-slices.yaml", ns)[0]
    (js["metadata"].get("annotations") or {}).pop(EXCLUSIVE, None)
    return js


def jobset_pods(ns, js):
    want = sum(r["replicas"] * r["template"]["spec"]["parallelism"] for r in js["spec"]["replicatedJobs"])
    return op.settled_pods(ns, "jobset.sigs.k8s.io/jobset-name=" + js["metadata"]["name"], want)


def check_jobset(pods):
    physics.check_slices(pods)
    for p in pods:
        e = physics.env_of(p["spec"]["containers"][0])
        assert e["MEGASCALE_NUM_SLICES"] == "2", (p["metadata"]["name"], e["MEGASCALE_NUM_SLICES"])


def lws_pods(ns, lws):
    want = lws["spec"]["replicas"] * lws["spec"]["leaderWorkerTemplate"]["size"]
    return op.settled_pods(ns, "leaderworkerset.sigs.k8s.io/name=" + lws["metadata"]["name"], want)


def check_lws(pods):
    """The physics, and the two webhooks agree: LWS's TPU identity (its pod
    webhook's) is the torchrun rank and TorchTPU host order this one wrote;
    env_of refuses a variable stored twice."""
    physics.check_slices(pods)
    for p in pods:
        e = physics.env_of(physics.tpu_containers(p)[0])
        assert e["PET_NODE_RANK"] == e["TPU_WORKER_ID"], (p["metadata"]["name"], e["PET_NODE_RANK"], e["TPU_WORKER_ID"])
        hosts = []
        for a in e["TORCH_TPU_SLICEBUILDER_ADDRESSES"].split(","):
            if a.rpartition(":")[0] not in hosts:
                hosts.append(a.rpartition(":")[0])
        assert hosts == e["TPU_WORKER_HOSTNAMES"].split(","), (p["metadata"]["name"], hosts, e["TPU_WORKER_HOSTNAMES"])


class WorkloadCase(unittest.TestCase):
    def setUp(self):
        cl.kubectl("get", "--raw", "/readyz")

    def ns(self, name):
        cl.create_namespace(name)
        self.addCleanup(cl.kubectl, "delete", "namespace", name, "--wait=false", check=False)
        return name


class JobSet(WorkloadCase):
    """A two-slice JobSet: 8 pods stored (2 replicas x parallelism 4), one
    dense slice per child Job, MEGASCALE joining both."""

    def test_two_slices(self):
        ns = self.ns("wl-jobset")
        js = jobset(ns)
        op.apply_obj(js)
        pods = jobset_pods(ns, js)
        check_jobset(pods)
        print("ok: JobSet %s: %d pods stored" % (js["metadata"]["name"], len(pods)))


class JobSetUnregistered(WorkloadCase):
    """The negative control: without the webhook's configurations the
    JobSet's stored pods fail the check."""

    def test_unregistered(self):
        ns = self.ns("wl-jobset-unregistered")
        js = jobset(ns)
        with op.webhook_unregistered():
            op.apply_obj(js)
            pods = jobset_pods(ns, js)
        print("ok: the check fails: %s" % op.fails(check_jobset, pods))


class LeaderWorkerSet(WorkloadCase):
    """LeaderWorkerSets with the Shared (default) and the UniquePerReplica
    subdomain policy next to a smoke Job: LWS's pod webhook injects the TPU
    identity, this one the TorchTPU and torchrun values, and they agree."""

    def test_two_webhooks(self):
        ns = self.ns("wl-lws")
        objs = fixture("lws-and-smoke-job.json", ns) + fixture("lws-unique-per-replica.yaml", ns)
        op.apply_obj({"apiVersion": "v1", "kind": "List", "items": objs})
        for o in objs:
            if o["kind"] == "LeaderWorkerSet":
                pods = lws_pods(ns, o)
                check_lws(pods)
                print("ok: LeaderWorkerSet %s (%s): %d pods stored" % (
                    o["metadata"]["name"], (o["spec"].get("networkConfig") or {}).get("subdomainPolicy", "Shared"),
                    len(pods)))
            elif o["kind"] == "Job":
                physics.check_slices(op.settled_pods(ns, "job-name=" + o["metadata"]["name"], 1))
                print("ok: Job %s: 1 pod stored" % o["metadata"]["name"])


class LeaderWorkerSetUnregistered(WorkloadCase):
    """The negative control: without this webhook, LWS's pods lack the
    values it adds and fail the check."""

    def test_unregistered(self):
        ns = self.ns("wl-lws-unregistered")
        lws = fixture("lws-unique-per-replica.yaml", ns)[0]
        with op.webhook_unregistered():
            op.apply_obj(lws)
            pods = lws_pods(ns, lws)
        print("ok: the check fails: %s" % op.fails(check_lws, pods))


LWS_KEY = "leaderworkerset.sigs.k8s.io/"
TPU_VARS = ("TPU_WORKER_HOSTNAMES", "TPU_WORKER_ID", "TPU_NAME", "TPU_PROCESS_ADDRESSES", "TPU_PROCESS_PORT")


def subgroup_view(pod):
    """What render must agree on for an LWS subgroup pod: its subgroup
    labels and annotations (subgroup-key's value is a hash of server state:
    only which pods share it), and every container's TPU, TorchTPU, torchrun
    and MEGASCALE variables (LWS's pod webhook's and this one's)."""
    m = pod["metadata"]
    ann = {k: v for k, v in (m.get("annotations") or {}).items()
           if k.startswith(LWS_KEY + "subgroup-") or k == LWS_KEY + "leader-requests-tpus"}
    lab = {k: v for k, v in (m.get("labels") or {}).items() if k == LWS_KEY + "subgroup-index"}
    env = {c["name"]: {e["name"]: e.get("value") for e in c.get("env") or []
                       if e["name"].startswith(("TPU_", "TORCH_TPU_", "PET_", "MEGASCALE_"))}
           for c in pod["spec"]["containers"]}
    return {"annotations": ann, "labels": lab, "env": env,
            "has_subgroup_key": LWS_KEY + "subgroup-key" in (m.get("labels") or {})}


def subgroup_partition(pods):
    """The pods grouped by subgroup-key, as sorted name lists."""
    by = {}
    for p in pods:
        k = (p["metadata"].get("labels") or {}).get(LWS_KEY + "subgroup-key")
        by.setdefault(k, []).append(p["metadata"]["name"])
    return sorted(sorted(v) for v in by.values())


def subslice_job(ns, sub):
    """An Indexed Job asking for subslice `sub` of the v5p 2x2x4 pool
    (tests/cluster/fixtures/nodes.yaml), 4 chips per pod."""
    hosts = 1
    for d in sub.split("x"):
        hosts *= int(d)
    hosts //= 4
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "sub", "namespace": ns},
            "spec": {"completionMode": "Indexed", "parallelism": hosts, "completions": hosts,
                     "template": {
                         "metadata": {"labels": {"tpu-webhook/inject": "enabled"},
                                      "annotations": {"cloud.google.com/gke-tpu-slice-topology": sub}},
                         "spec": {"restartPolicy": "Never", "subdomain": "sub",
                                  "nodeSelector": {
                                      "cloud.google.com/gke-nodepool": "tpu-v5p-2x2x4-a",
                                      "cloud.google.com/gke-tpu-accelerator": "tpu-v5p-slice",
                                      "cloud.google.com/gke-tpu-topology": "2x2x4"},
                                  "containers": [{"name": "trainer", "image": "IMAGE",
                                                  "resources": {"limits": {"google.com/tpu": "4"}}}]}}}}


class SubsliceJob(WorkloadCase):
    """Issue 34, item 2: a Job whose subslice (4x4x4, 16 pods) is bigger
    than its pool (2x2x4) is refused at kubectl apply, naming the rule; one
    that fits (2x2x2) is stored and its pods created."""

    def test_bigger_than_its_pool_refused(self):
        ns = self.ns("wl-subslice")
        p = cl.kubectl("apply", "-f", "-", input=json.dumps(subslice_job(ns, "4x4x4")), check=False)
        self.assertNotEqual(p.returncode, 0, p.stdout)
        self.assertIn('subslice \"4x4x4\" is not smaller than parent \"2x2x4\"', p.stderr)
        op.apply_obj(subslice_job(ns, "2x2x2"))
        pods = op.settled_pods(ns, "job-name=sub", 2)
        physics.check_slices(pods)
        print("ok: subslice 4x4x4 of a 2x2x4 pool refused; 2x2x2: %d pods stored" % len(pods))


class LeaderWorkerSetSubgroups(WorkloadCase):
    """LWS subgroups (issue 34): tests/fixtures/offline/lws-subgroups.yaml
    through the real LWS controller and pod webhook. The two shapes whose
    slices cannot start are refused at the LWS object, naming the field:
    sgl (a leader with TPUs, to which LWS v0.9.0 gives TPU_WORKER_ID -1)
    and sgu (7 workers in subgroups of 4). sg (two v6e 4x4 subgroups per
    group, a leader without TPUs) is stored, and its pods are judged on the
    physics, each subgroup a slice: ids dense per subgroup, one host list
    per subgroup whose entry i is worker i's name, the torchrun world the
    subgroup, one TPU_NAME per subgroup and distinct between them; and
    `tpu-webhook render` of the same object agrees with the stored pods on
    names, subgroup labels and annotations, which pods share a
    subgroup-key, and every TPU, TorchTPU and torchrun variable."""

    def test_refused_or_stored_as_rendered(self):
        # The namespace opts in (docs/workloads.md): the LWS objects are
        # judged at /validate-workload, their TPU pods mutated.
        ns = "wl-lws-subgroups"
        cl.create_namespace(ns, labels={"tpu-webhook/inject": "enabled"})
        self.addCleanup(cl.kubectl, "delete", "namespace", ns, "--wait=false", check=False)
        path = os.path.join(os.path.dirname(cl.WORKLOADS), "offline", "lws-subgroups.yaml")
        objs = op.in_namespace(path, ns)
        by = {o["metadata"]["name"]: o for o in objs["items"]}
        for name, field in (("sgl", "spec.leaderWorkerTemplate.leaderTemplate is absent"),
                            ("sgu", "spec.leaderWorkerTemplate.size is 8, expected 5 or 9")):
            p = cl.kubectl("apply", "-f", "-", input=json.dumps(by[name]), check=False)
            self.assertNotEqual(p.returncode, 0, p.stdout)
            self.assertIn(field, p.stderr)
        good = dict(objs, items=[by["sg"]])
        op.apply_obj(good)
        p = cl.run([cl.env()["WH_WEBHOOK_BINARY"], "render", "--output", "json", "-"], input=json.dumps(good))
        rendered = json.loads(p.stdout)["items"]
        stored = lws_pods(ns, by["sg"])
        tpu = [s for s in stored if physics.tpu_containers(s)]
        self.assertEqual(len(tpu), 16)
        physics.check_slices(tpu)
        physics.check_slice_names(tpu)
        want = {r["metadata"]["name"]: subgroup_view(r) for r in rendered}
        got = {s["metadata"]["name"]: subgroup_view(s) for s in stored}
        self.assertEqual(sorted(got), sorted(want))
        for n in sorted(got):
            self.assertEqual(got[n], want[n], n)
        self.assertEqual(subgroup_partition(stored), subgroup_partition(rendered))
        names = sorted({physics.env_of(physics.tpu_containers(s)[0])["TPU_NAME"] for s in tpu})
        print("ok: sgl and sgu refused; sg: %d stored pods as rendered, 4 slices %s" % (len(stored), names))


if __name__ == "__main__":
    unittest.main()
