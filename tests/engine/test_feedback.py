#!/usr/bin/env python3
"""Feedback where the user looks (issue 24, item 5; docs/workloads.md,
"Feedback where the user looks").

Every warning the pod path (/mutate-workload) can give a pod a controller
created is also given by /validate-workload on the workload object, or that
object is denied. The warning kinds are read from the code
(src/core/podwarn.c's table): a kind added there without a case here fails,
and so does a warning the pod path gives outside the table (every
wh_decision_warn of the pod path's sources must record an Event note next to
it). Each case builds the pod as its controller would (test_workload.py's
builders) and the workload object the user applies, and checks that the
pod's warning text ends a warning of the object (or the object's denial
names the rule), on CREATE and on an UPDATE that changes nothing (the
ratchet keeps a warning a warning, and admits a denial already there)."""
import copy
import os
import re
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import whreview as W  # noqa: E402
import test_workload as T  # noqa: E402

TORCH = [{"name": "TORCH_TPU_TOPOLOGY", "value": "2,2,1,2"}]
OWN_WORLD = [{"name": "MEGASCALE_NUM_SLICES", "value": "3"},
             {"name": "MEGASCALE_SLICE_ID", "value": "1"}]


def table():
    """key -> (reason, at_workload) from src/core/podwarn.c."""
    with open(os.path.join(ROOT, "src/core/podwarn.c")) as f:
        src = f.read()
    body = src[src.index("wh_pod_warnings[WH_PW_COUNT] = {"):]
    body = body[:body.index("\n};")]
    out = {}
    for m in re.finditer(r'\[WH_PW_\w+\]\s*=\s*\{\s*"([^"]+)",\s*"([^"]+)",(.*?)\},', body, re.S):
        strings = re.findall(r'"((?:[^"\\]|\\.)*)"', m.group(3))
        out[m.group(1)] = (m.group(2), strings[-1])
    with open(os.path.join(ROOT, "include/core/wh/podwarn.h")) as f:
        n = len(re.findall(r"^\s*WH_PW_\w+,", f.read(), re.M))
    assert n == len(out), ("enum and table differ", n, out)
    return out


def workload_of(kind, tmpl, **kw):
    if kind == "Job":
        spec = {"completionMode": kw.get("mode", "Indexed"), "parallelism": 4, "completions": 4,
                "template": tmpl}
        if kw.get("mode", "Indexed") is None:
            del spec["completionMode"]
        return {"apiVersion": "batch/v1", "kind": "Job",
                "metadata": {"name": "train", "namespace": "default"}, "spec": spec}
    if kind == "JobSet":
        return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
                "metadata": {"name": "llm", "namespace": "default", "annotations": {
                    "alpha.jobset.sigs.k8s.io/exclusive-topology": "cloud.google.com/gke-nodepool"}},
                "spec": {"replicatedJobs": [{"name": "slice", "replicas": kw.get("replicas", 2),
                                             "template": {"spec": {
                    "parallelism": 4, "completions": 4, "template": tmpl}}}]}}
    lwt = {"size": 4, "workerTemplate": tmpl}
    if "subgroup" in kw:
        lwt["subGroupPolicy"] = {"subGroupSize": kw["subgroup"]}
    return {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
            "metadata": {"name": "vllm", "namespace": "default"},
            "spec": {"replicas": 1, "leaderWorkerTemplate": lwt}}


def template(accel, topo, env=None, subdomain="train"):
    t = T.tpu_template(topo=topo, accel=accel, subdomain=subdomain)
    if env:
        t["spec"]["containers"][0]["env"] = copy.deepcopy(env)
    return t


def non_indexed_pod():
    """A pod of a Job without completionMode Indexed, on 4 of v6e 4x4's 16
    chips: one of 4 hosts with no index."""
    p = T.batch_job_pod()
    p["spec"]["nodeSelector"] = T.selector("tpu-v6e-slice", "4x4")
    p["spec"]["containers"][0]["resources"] = {"limits": {"google.com/tpu": "4"},
                                               "requests": {"google.com/tpu": "4"}}
    return p


def subgroup_pod():
    p = T.lws_pod()
    p["metadata"]["annotations"]["leaderworkerset.sigs.k8s.io/subgroup-size"] = "4"
    return p


def torch_pod(accel="tpu-v6e-slice", topo="4x4"):
    return T.indexed_job_pod(accel=accel, topo=topo,
                             containers=[T.tpu_container(env=TORCH)])


# key -> [(pod, workload object, what the object must get)], one per kind
# of object the pod path serves where the shape exists there.
CASES = {
    "topology-unknown": [
        (T.indexed_job_pod(topo=None), workload_of("Job", template("tpu-v6e-slice", None))),
        (T.jobset_pod(topo=None), workload_of("JobSet", template("tpu-v5p-slice", None))),
        (T.lws_pod(topo=None), workload_of("LeaderWorkerSet",
                                           template("tpu-v5-lite-podslice", None))),
    ],
    "generation-unknown": [
        (T.indexed_job_pod(accel=None), workload_of("Job", template(None, "4x4"))),
        (T.jobset_pod(accel=None), workload_of("JobSet", template(None, "2x2x4"))),
    ],
    "lws-subgroups": [
        (subgroup_pod(), workload_of("LeaderWorkerSet", template("tpu-v5-lite-podslice", "4x4"),
                                     subgroup=4)),
    ],
    "not-indexed": [
        (non_indexed_pod(), workload_of("Job", template("tpu-v6e-slice", "4x4"), mode=None)),
    ],
    "torch-topology-kept": [
        (torch_pod(), workload_of("Job", template("tpu-v6e-slice", "4x4", env=TORCH))),
        (T.jobset_pod(env=TORCH), workload_of("JobSet", template("tpu-v5p-slice", "2x2x4",
                                                                 env=TORCH))),
    ],
    "megascale-own-world": [
        # One slice per replicated job: a literal slice id in a template of
        # several slices is denied (every slice would get it).
        (T.jobset_pod(env=OWN_WORLD, replicas=1, job=0, global_replicas=3),
         workload_of("JobSet", template("tpu-v5p-slice", "2x2x4", env=OWN_WORLD), replicas=1)),
    ],
}


def judge(obj, op="CREATE", old=None):
    group = {"Job": "batch", "JobSet": "jobset.x-k8s.io",
             "LeaderWorkerSet": "leaderworkerset.x-k8s.io"}[obj["kind"]]
    rv = W.review_of(obj, op=op)
    rv["request"]["kind"] = {"group": group, "version": obj["apiVersion"].split("/")[-1],
                             "kind": obj["kind"]}
    if old is not None:
        rv["request"]["oldObject"] = old
    return W.run(rv)


class FeedbackTable(unittest.TestCase):
    def test_every_kind_has_a_case(self):
        t = table()
        self.assertEqual(sorted(t), sorted(CASES), "a pod-path warning kind without a case")
        self.assertGreaterEqual(len(t), 5)

    def test_pod_path_warns_only_through_the_table(self):
        """Each warning of the pod path's sources (workload*.c, and the
        KubeRay path mutate.c, tpuenv.c, affinity.c, patch.c, names.c,
        legacy.c, which give none) records an Event note of a table kind."""
        for name in ("workload.c", "workload_pod.c", "workload_topology.c",
                     "workload_identity.c", "workload_env.c", "mutate.c", "tpuenv.c",
                     "affinity.c", "patch.c", "names.c", "legacy.c"):
            with open(os.path.join(ROOT, "src/core", name)) as f:
                lines = f.read().split("\n")
            for i, line in enumerate(lines):
                if re.search(r"\bwh_decision_warn(_text)?\(", line):
                    near = "\n".join(lines[i:i + 14])
                    self.assertRegex(near, r"wh_decision_event\(\s*w->d,\s*wh_pod_warnings\[",
                                     "%s:%d warns without an Event note of the table" % (name, i + 1))


class FeedbackWorkloads(unittest.TestCase):
    def test_workload_object_gets_the_pod_warning(self):
        t = table()
        for key, cases in CASES.items():
            for pod, obj in cases:
                with self.subTest(key=key, kind=obj["kind"]):
                    pr = W.run(W.review_of(pod), workload=True)
                    self.assertTrue(pr.allowed, pr.message)
                    self.assertEqual(len(pr.warnings), 1, pr.warnings)
                    pw = pr.warnings[0]
                    wr = judge(obj)
                    if t[key][1].startswith("denial"):
                        self.assertFalse(wr.allowed)
                        self.assertIn("completionMode", wr.message)
                        self.assertIn('expected "Indexed"', wr.message)
                        # An UPDATE that changes nothing is admitted (the
                        # problem was there), with the problem named.
                        ur = judge(obj, op="UPDATE", old=obj)
                        self.assertTrue(ur.allowed, ur.message)
                        self.assertTrue(any("completionMode" in w for w in ur.warnings),
                                        ur.warnings)
                        continue
                    self.assertTrue(wr.allowed, wr.message)
                    self.assertTrue(any(w.endswith(pw) for w in wr.warnings),
                                    "pod: %r, workload: %r" % (pw, wr.warnings))
                    ur = judge(obj, op="UPDATE", old=obj)
                    self.assertTrue(ur.allowed, ur.message)
                    self.assertTrue(any(w.endswith(pw) for w in ur.warnings), ur.warnings)

    def test_right_shapes_get_no_warning(self):
        """The counter-cases: the same objects with the field fixed warn
        neither on the pod nor on the object."""
        fixed = [
            (T.indexed_job_pod(), workload_of("Job", template("tpu-v6e-slice", "4x4"))),
            (T.lws_pod(), workload_of("LeaderWorkerSet", template("tpu-v5-lite-podslice", "4x4"))),
            (T.jobset_pod(), workload_of("JobSet", template("tpu-v5p-slice", "2x2x4"))),
        ]
        for pod, obj in fixed:
            with self.subTest(kind=obj["kind"]):
                self.assertEqual(W.run(W.review_of(pod), workload=True).warnings, [])
                self.assertEqual(judge(obj).warnings, [])

    def test_node_pool_may_tell_the_topology(self):
        """A template naming a node pool gets its topology from the pool's
        nodes on the pod path: no warning at the object."""
        tm = template("tpu-v6e-slice", None)
        tm["spec"]["nodeSelector"]["cloud.google.com/gke-nodepool"] = "pool-a"
        self.assertEqual(judge(workload_of("Job", tm)).warnings, [])


if __name__ == "__main__":
    W.main()
