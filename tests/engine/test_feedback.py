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
import json
import re
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import whreview as W  # noqa: E402
import test_workload as T  # noqa: E402

TORCH = [{"name": "TORCH_TPU_TOPOLOGY", "value": "2,2,1,2"}]
NPROC_BELOW = [{"name": "PET_NPROC_PER_NODE", "value": "1"}]
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
    # The one preset rule that warns at the object too (envverdict.h); the
    # others deny there (tests/engine/test_workload.py, PresetVerdicts).
    "torch-preset-contradicts": [
        (T.indexed_job_pod(containers=[T.tpu_container(env=NPROC_BELOW)]),
         workload_of("Job", template("tpu-v6e-slice", "4x4", env=NPROC_BELOW))),
        (T.jobset_pod(env=NPROC_BELOW), workload_of("JobSet", template("tpu-v5p-slice", "2x2x4",
                                                                       env=NPROC_BELOW))),
    ],
}


# The KubeRay pod path's warnings: text of the warning call in
# src/core/mutate.c or tpuenv.c -> the validate.c function that denies the RayCluster
# for the same rule. The pod is warned, not denied: a cluster admitted before
# the rule (or kept by the ratchet) must still get its pods.
KUBERAY_POD_WARNINGS = {
    "hostNetwork needs dnsPolicy ClusterFirstWithHostNet": "check_host_network",
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
        legacy.c) records an Event note of a table kind; the KubeRay path's
        only warnings (mutate.c, tpuenv.c) are those of KUBERAY_POD_WARNINGS,
        each a rule the RayCluster is denied by at /validate (validate.c)."""
        with open(os.path.join(ROOT, "src/core/validate.c")) as f:
            validate = f.read()
        used = set()
        for name in ("workload.c", "workload_pod.c", "workload_topology.c",
                     "workload_identity.c", "workload_env.c", "mutate.c", "tpuenv.c",
                     "affinity.c", "patch.c", "names.c", "legacy.c"):
            with open(os.path.join(ROOT, "src/core", name)) as f:
                lines = f.read().split("\n")
            for i, line in enumerate(lines):
                if not re.search(r"\bwh_decision_warn(_text)?\(", line):
                    continue
                near = "\n".join(lines[i:i + 14])
                if name in ("mutate.c", "tpuenv.c"):
                    call = re.sub(r'"\s*\n\s*"', "", near)
                    hit = [m for m in KUBERAY_POD_WARNINGS if m in call]
                    self.assertEqual(len(hit), 1, "%s:%d warns, not a listed rule" % (name, i + 1))
                    self.assertIn("static enum wh_err %s(" % KUBERAY_POD_WARNINGS[hit[0]], validate)
                    used.add(hit[0])
                    continue
                self.assertRegex(near, r"wh_decision_event\(\s*w->d,\s*wh_pod_warnings\[",
                                 "%s:%d warns without an Event note of the table" % (name, i + 1))
        self.assertEqual(sorted(set(KUBERAY_POD_WARNINGS) - used), [], "listed, never warned")


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


# ---- Every pod-path denial, at the object the user applies ---------------
#
# Issue 24's rule: a mistake the webhook can see is refused on the object the
# user applies. Each reason the pod path (src/core/mutate.c for KubeRay pods,
# src/core/workload*.c for the others) denies a TPU pod is listed here: either
# in DENIALS, with the workload objects that carry it (their pods built as the
# controllers build them from the template), or in POD_ONLY with why no
# template shows it. A deny call added to those sources that matches no
# marker fails test_every_denial_is_listed.

def rj_spec(obj):
    return obj["spec"]["replicatedJobs"][0]["template"]["spec"]


def obj_of(kind, tmpl, hosts=4, replicas=2, **kw):
    """The workload the user applies, right for `hosts` hosts per slice."""
    tmpl = copy.deepcopy(tmpl)
    if kind == "Job":
        return {"apiVersion": "batch/v1", "kind": "Job",
                "metadata": {"name": "train", "namespace": "default"},
                "spec": {"completionMode": "Indexed", "parallelism": kw.get("n", hosts),
                         "completions": kw.get("n", hosts), "template": tmpl}}
    if kind == "JobSet":
        js = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
              "metadata": {"name": "llm", "namespace": "default", "annotations": {
                  "alpha.jobset.sigs.k8s.io/exclusive-topology": "cloud.google.com/gke-nodepool"}},
              "spec": {"replicatedJobs": [{"name": "slice", "replicas": replicas, "template": {
                  "spec": {"parallelism": hosts, "completions": hosts, "template": tmpl}}}]}}
        if kw.get("dns") is False:
            js["spec"]["network"] = {"enableDNSHostnames": False}
        return js
    if kind == "LeaderWorkerSet":
        lwt = {"size": kw.get("n", hosts), "workerTemplate": tmpl}
        if "subgroup" in kw:
            lwt["subGroupPolicy"] = {"subGroupSize": kw["subgroup"]}
        if "leader" in kw:
            lwt["leaderTemplate"] = copy.deepcopy(kw["leader"])
        return {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
                "metadata": {"name": "vllm", "namespace": "default"},
                "spec": {"replicas": 1, "leaderWorkerTemplate": lwt}}
    return {"apiVersion": "ray.io/v1", "kind": "RayCluster",
            "metadata": {"name": "rc", "namespace": "default"},
            "spec": {"headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": [
                {"name": "ray-head", "image": "IMAGE"}]}}},
                "workerGroupSpecs": [{"groupName": kw.get("group", "tpu-group"),
                                      "replicas": replicas, "minReplicas": replicas,
                                      "maxReplicas": replicas, "numOfHosts": kw.get("n", hosts),
                                      "rayStartParams": {}, "template": tmpl}]}}


def pod_from(builder_pod, tmpl, keep=("hostname", "subdomain")):
    """builder_pod's metadata and controller-set fields, the template's spec
    and metadata: what a controller creates from the template."""
    p = copy.deepcopy(builder_pod)
    spec = copy.deepcopy(tmpl["spec"])
    for k in keep:
        if k in p["spec"]:
            spec[k] = p["spec"][k]
        else:
            spec.pop(k, None)
    extra = [e for c in p["spec"]["containers"] for e in c.get("env", [])
             if e["name"] in ("JOB_COMPLETION_INDEX",)]
    for c in spec.get("containers") or []:
        c.setdefault("env", []).extend(copy.deepcopy(extra))
    p["spec"] = spec
    for m in ("annotations", "labels"):
        p["metadata"].setdefault(m, {}).update((tmpl.get("metadata") or {}).get(m) or {})
    return p


def pods_of(obj, indices):
    """Pods of obj at (slice/replica, host) indices, as its controller
    creates them (test_workload.py's builders for the controller's part)."""
    kind = obj["kind"]
    out = []
    for j, i in indices:
        if kind == "Job":
            tmpl = obj["spec"]["template"]
            b = T.indexed_job_pod(job="train", index=i, subdomain=tmpl["spec"].get("subdomain"))
            out.append(pod_from(b, tmpl, keep=("hostname",)))
        elif kind == "JobSet":
            rj = obj["spec"]["replicatedJobs"][0]
            dns = (obj["spec"].get("network") or {}).get("enableDNSHostnames", True)
            b = T.jobset_pod(replicas=rj["replicas"], job=j, index=i,
                             subdomain="llm" if dns else None)
            out.append(pod_from(b, rj["template"]["spec"]["template"]))
        elif kind == "LeaderWorkerSet":
            lwt = obj["spec"]["leaderWorkerTemplate"]
            leader = lwt.get("leaderTemplate")
            leader_tpus = leader is None or "google.com/tpu" in json.dumps(leader)
            b = T.lws_pod(worker=i, size=lwt["size"], leader_tpus=leader_tpus)
            p = pod_from(b, lwt["workerTemplate"] if i or leader is None else leader)
            if "subGroupPolicy" in lwt:  # LWS's annotation on every pod of the group
                p["metadata"]["annotations"]["leaderworkerset.sigs.k8s.io/subgroup-size"] = str(
                    lwt["subGroupPolicy"]["subGroupSize"])
            lws_env = b["spec"]["containers"][0]["env"]  # what LWS's pod webhook adds
            first = {e["name"] for e in p["spec"]["containers"][0].get("env", [])}
            if first & {"TPU_WORKER_ID", "TPU_WORKER_HOSTNAMES"}:
                lws_env = []  # LWS injects nothing then (docs/workloads.md)
            for c in p["spec"]["containers"]:
                have = {e["name"] for e in c.get("env", [])}
                c["env"] = [e for e in lws_env if e["name"] not in have] + c.get("env", [])
            out.append(p)
        else:
            g = obj["spec"]["workerGroupSpecs"][0]
            b = W.pod(cluster="rc", group=g["groupName"], native=(j, i))
            out.append(pod_from(b, g["template"], keep=()))
    return out


def tm(accel="tpu-v6e-slice", topo="4x4", chips=4, env=None, subdomain="train", containers=None,
       **spec):
    t = template(accel, topo, env=env, subdomain=subdomain)
    t["spec"]["containers"][0]["resources"] = {"limits": {"google.com/tpu": str(chips)}}
    if containers is not None:
        t["spec"]["containers"] = copy.deepcopy(containers)
    t["spec"].update(spec)
    return t


def envs(*pairs):
    return [{"name": n, "value": v} for n, v in pairs]


CPU_LEADER = {"spec": {"containers": [{"name": "leader", "image": "IMAGE"}]}}
DUP = envs(("TPU_WORKER_ID", "0"), ("TPU_WORKER_ID", "1"))
HOSTS17 = envs(("TPU_WORKER_HOSTNAMES", ",".join("h%d" % i for i in range(17))))
BIG_TORCH = envs(("TORCH_TPU_TOPOLOGY", "256,256,2"))
TPU7X_PORTS = [T.tpu_container("c0", chips=2, env=envs(("MEGASCALE_PORT", "9000"))),
               T.tpu_container("c1", chips=2, env=envs(("MEGASCALE_PORT", "9000")))]
FIRST_LAST = [(0, 0), (1, 3)]

# key -> (source marker(s), [(object, pod indices, parts of the object's
# denial, part of the pods' denial)]). A marker is text of the deny call in
# the pod path's sources (POD_PATH_FILES): KubeRay's ("k:"), the other
# kinds' ("w:") or the guards every kind shares ("p:").
def subslice(t, sub):
    """Template t asking for subslice sub of its pool (issue 34, item 2)."""
    t.setdefault("metadata", {}).setdefault("annotations", {})[
        "cloud.google.com/gke-tpu-slice-topology"] = sub
    return t


DENIALS = {
    "env-duplicate": (["p:sets %s twice"], [
        (obj_of("Job", tm(env=DUP)), FIRST_LAST, ["TPU_WORKER_ID twice", "keep one"], "twice"),
        (obj_of("JobSet", tm(env=DUP)), FIRST_LAST, ["TPU_WORKER_ID twice"], "twice"),
        (obj_of("LeaderWorkerSet", tm("tpu-v5-lite-podslice", env=DUP)), [(0, 1)],
         ["TPU_WORKER_ID twice"], "twice"),
        (obj_of("RayCluster", tm(env=DUP)), FIRST_LAST, ["TPU_WORKER_ID twice"], "twice"),
    ]),
    "quantity": (["p:\"%s: %s\", p->who, why"], [
        (obj_of("Job", tm(chips="four")), FIRST_LAST, ["google.com/tpu"], "google.com/tpu"),
        (obj_of("RayCluster", tm(chips="four")), FIRST_LAST, ["google.com/tpu"], "google.com/tpu"),
    ]),
    "topology-form": (["k:use the form AxB or AxBxC", "w:use the form AxB or AxBxC"], [
        (obj_of("Job", tm(topo="4x4x")), FIRST_LAST, ['"4x4x"', "valid values"], "4x4x"),
        (obj_of("JobSet", tm(topo="0x4")), FIRST_LAST, ['"0x4"'], "0x4"),
        (obj_of("RayCluster", tm(topo="4x4x")), FIRST_LAST, ["4x4x", "AxB or AxBxC"], "4x4x"),
    ]),
    "topology-missing": (["k:requests google.com/tpu but %s; set"], [
        (obj_of("RayCluster", tm(topo=None)), FIRST_LAST, ["TPU topology not specified"],
         "has no TPU topology"),
    ]),
    "shape": (["w:deny(w, \"%s\", p.text"], [
        (obj_of("Job", tm(accel="tpu-v6e-podslice")), FIRST_LAST,
         ['"tpu-v6e-podslice", not a GKE TPU accelerator'], "not a GKE TPU accelerator"),
        (obj_of("JobSet", tm(accel="tpu-v5p-slice", topo="2x2x4", chips=8), hosts=2), [(1, 1)],
         ["no v5p VM has 8 chips"], "no v5p VM has 8 chips"),
        (obj_of("LeaderWorkerSet", tm(accel="tpu-v6e-slice", topo="2x2x1")), [(0, 2)],
         ["a 3-D topology"], "a 3-D topology"),
    ]),
    "subslice": (["w:(the parent is %s), so the pod would stay Pending"], [
        (obj_of("Job", subslice(tm("tpu7x", "2x2x2"), "2x2x4")), FIRST_LAST,
         ['subslice "2x2x4" is not smaller than parent "2x2x2"'], "is not smaller than parent"),
        (obj_of("JobSet", subslice(tm("tpu-v6e-slice", "2x4"), "4x4")), FIRST_LAST,
         ['subslice "4x4" is not smaller than parent "2x4"'], "is not smaller than parent"),
        (obj_of("LeaderWorkerSet", subslice(tm("tpu-v5-lite-podslice", "4x4"), "4x8"), hosts=8),
         [(0, 2)], ['subslice "4x8" is not smaller than parent "4x4"'],
         "is not smaller than parent"),
    ]),
    "chips-divide": (["w:which does not divide"], [
        (obj_of("Job", tm(accel="tpu-v6e-slice", topo="2x2", chips=8)), [(0, 0)],
         ["does not divide the 4 chips"], "does not divide the 4 chips"),
    ]),
    "too-many-hosts": (["k:at most %ld hosts per slice are supported",
                        "w:at most %ld are supported"], [
        (obj_of("Job", tm(accel="tpu-v5-lite-podslice", topo="256x128", chips=4), hosts=8192),
         [(0, 0)], ["8192 hosts", "at most 4096"], "at most 4096"),
        (obj_of("RayCluster", tm(accel="tpu-v5-lite-podslice", topo="256x128", chips=4),
                hosts=8192), [(0, 0)], ["8192 hosts", "over the 4096"], "at most 4096"),
    ]),
    "host-index": (["k:has %ld hosts (0..%ld); check"], [
        (obj_of("RayCluster", tm(), n=5), [(0, 4)], ["numOfHosts must be 4, not 5"],
         "has 4 hosts (0..3)"),
    ]),
    "names": (["k:deny(c, \"%s\", why"], [
        (obj_of("RayCluster", tm(), group="TPUGroup"), [(0, 0)], ["TPUGroup"], "TPUGroup"),
    ]),
    "peers-beyond-chips": (["k:sets TPU_WORKER_HOSTNAMES to %ld hosts"], [
        (obj_of("RayCluster", tm(env=HOSTS17)), FIRST_LAST,
         ["TPU_WORKER_HOSTNAMES to 17 hosts", "only 16 chips"], "to 17 hosts"),
    ]),
    "job-subdomain": (["w:spec.subdomain is empty but topology"], [
        (obj_of("Job", tm(subdomain=None)), FIRST_LAST, ["template.spec.subdomain is unset"],
         "spec.subdomain is empty"),
    ]),
    "completion-index": (["w:chips per pod; set parallelism and completions to",
                          "w:set parallelism and completions of replicated"], [
        (obj_of("Job", tm(), n=5), [(0, 4)], ["parallelism is 5, expected 4"], "is beyond"),
        (obj_of("JobSet", tm(), hosts=4), [], [], None),  # JobSet: below
    ]),
    "jobset-subdomain": (["w:must reach each other by name; do not set"], [
        (obj_of("JobSet", tm(), dns=False), FIRST_LAST, ["enableDNSHostnames is false"],
         "spec.subdomain is empty"),
    ]),
    "lws-size": (["w:size %ld gives %ld TPU hosts per group"], [
        (obj_of("LeaderWorkerSet", tm("tpu-v5-lite-podslice"), n=3), [(0, 1)],
         ["size is 3, expected 4"], "size 3 gives 3 TPU hosts"),
    ]),
    "identity": (["w:(spec.containers[%d]) %s%s%s"], [
        (obj_of("Job", tm(env=envs(("TPU_WORKER_ID", "0")))), [(0, 2)], ['container "trainer"',
                                                                         "TPU_WORKER_ID"],
         "TPU_WORKER_ID"),
        (obj_of("JobSet", tm(env=envs(("TPU_WORKER_HOSTNAMES", "localhost")))), FIRST_LAST,
         ["localhost"], "localhost"),
    ]),
    # LWS subgroups (issue 34): each subgroup one slice; one rule for both
    # paths (wh_lws_subgroup_fault), so one deny call.
    "lws-subgroups": (["w:deny(w, \"%s\", fix"], [
        (obj_of("LeaderWorkerSet", tm("tpu-v5-lite-podslice"), n=9, subgroup=2, leader=CPU_LEADER),
         [(0, 1), (0, 8)], ["subGroupSize is 2, expected 4"], "subGroupSize is 2, expected 4"),
        (obj_of("LeaderWorkerSet", tm("tpu-v5-lite-podslice"), n=8, subgroup=4), [(0, 0), (0, 5)],
         ["leaderTemplate is absent", "TPU_WORKER_ID -1", "size to 9"], "TPU_WORKER_ID -1"),
        (obj_of("LeaderWorkerSet", tm("tpu-v5-lite-podslice"), n=8, subgroup=4, leader=CPU_LEADER),
         [(0, 1), (0, 7)], ["size is 8, expected 5 or 9"], "size is 8, expected 5 or 9"),
    ]),
    "lws-identity": (["w:so LWS injected none of"], [
        (obj_of("LeaderWorkerSet", tm("tpu-v5-lite-podslice", env=[{
            "name": "TPU_WORKER_ID", "valueFrom": {"fieldRef": {"fieldPath":
                "metadata.labels['leaderworkerset.sigs.k8s.io/worker-index']"}}}])), [(0, 1)],
         ["sets TPU_WORKER_ID", "remove it"], "LWS injected none"),
    ]),
    "hostnet-dns": (["w:deny(w, \"%s\", dns"], [
        (obj_of("Job", tm(hostNetwork=True)), FIRST_LAST, ["hostNetwork", "ClusterFirstWithHostNet"],
         "ClusterFirstWithHostNet"),
    ]),
    "megascale-count": (["w:sets MEGASCALE_NUM_SLICES"], [
        (obj_of("JobSet", tm(accel="tpu-v5p-slice", topo="2x2x4",
                             env=envs(("MEGASCALE_NUM_SLICES", "3")))), FIRST_LAST,
         ['MEGASCALE_NUM_SLICES "3"', "has 2 replicas"], 'MEGASCALE_NUM_SLICES "3"'),
    ]),
    "megascale-slice-id": (["w:sets MEGASCALE_SLICE_ID"], [
        # the pod whose job index the literal is not (slice 1 of "0")
        (obj_of("JobSet", tm(accel="tpu-v5p-slice", topo="2x2x4",
                             env=envs(("MEGASCALE_SLICE_ID", "0")))), [(1, 0), (1, 3)],
         ['MEGASCALE_SLICE_ID "0"', "share this template"], 'MEGASCALE_SLICE_ID "0"'),
    ]),
    "megascale-port": (["w:both use MEGASCALE_PORT"], [
        (obj_of("JobSet", tm(accel="tpu7x", topo="2x2x2", containers=TPU7X_PORTS), hosts=2),
         [(0, 0), (1, 1)], ['"c0"', '"c1"', "MEGASCALE_PORT 9000"], "MEGASCALE_PORT 9000"),
    ]),
    "torch-addresses": (["k:TORCH_TPU_SLICEBUILDER_ADDRESSES for topology %s would have more",
                         "w:TORCH_TPU_SLICEBUILDER_ADDRESSES for topology %s would have more"], [
        (obj_of("Job", tm(env=BIG_TORCH)), FIRST_LAST, ["TORCH_TPU_TOPOLOGY \"256,256,2\"",
                                                        "131072 entries"], "more than 65536"),
    ]),
}
del DENIALS["completion-index"][1][1]  # see test_jobset_completion_index

# Reasons no template shows, and why.
POD_ONLY = {
    "k:which sets it to the RayCluster name": "ray.io/cluster: KubeRay sets it, never the template",
    "k:which sets it to the worker group name": "ray.io/group: set by KubeRay",
    "k:not a whole number >= 0; KubeRay sets": "index labels: set by KubeRay per pod",
    "k:needs a TPU worker id assigned": "legacy ids: the cluster's pods at creation time",
    "k:already has two pods with the same": "legacy ids: the cluster's pods at creation time",
    "k:schedule pod for subslice": ("the cluster's nodes at creation time (the RayCluster is "
                                    "judged against the same nodes: check_subslice)"),
    "k:the mutation patch is %zu bytes": "the patch's size is known once written, not estimated",
    "k:the mutation patch would be": "the patch's size is known once written, not estimated",
    "k:spec.containers is %s": "a pod without a container list: the API server refuses it",
    "p:p->d->bad_name": "the patch writers' guard; the names are judged by the names rule",
    "k:request.object is not a Pod": "not a pod",
    "w:not a whole number >= 0; it is set by the controller": "controller-set labels",
    "w:label \\\"%s\\\" is missing, so the names": "job-name: set by the Job controller",
    "w:label \\\"%s\\\" is missing; let the JobSet": "replicatedjob-name: set by JobSet",
    "w:\\\"%s\\\" is %ld but \\\"%s\\\" is %ld": "job-index: set by JobSet below the replicas",
    "w:no label \\\"%s\\\" and the pod name": "worker-index: set by LWS",
    "w:worker index %ld is outside": "worker-index: set by LWS below the size (size rule)",
    "w:the %ld hosts of the group must reach": "subdomain: set by LWS on every pod",
    "w:request.object is not a Pod": "not a pod",
    "w:the mutation patch for topology": "the patch's size is known once written, not estimated",
}


# The pod path's sources in src/core and the key of their markers.
POD_PATH_FILES = {"mutate.c": "k", "identity_kuberay.c": "k", "pipeline.c": "p"}


def deny_sites():
    """(file key, call text) of every deny call of the pod path's sources."""
    files = sorted(POD_PATH_FILES.items()) + [
        (n, "w") for n in sorted(os.listdir(os.path.join(ROOT, "src/core")))
        if n.startswith("workload") and n.endswith(".c") and n != "workload_validate.c"]
    out = []
    for name, key in files:
        with open(os.path.join(ROOT, "src/core", name)) as f:
            src = f.read()
        for m in re.finditer(r"\b(deny|wh_tpu_pod_deny|wh_decision_deny)\(\s*[\w&>.-]+\s*,\s*\"", src):
            end = re.compile(r"\);[ \t]*(/\*.*)?\n").search(src, m.end()).start()
            # adjacent literals joined, spaces collapsed: markers do not
            # depend on where clang-format breaks a message
            call = re.sub(r"\s+", " ", re.sub(r'"\s*\n\s*"', "", src[m.start():end]))
            if re.search(r"wh_decision_deny\(\w+->d, \"%s(: %s)?\", (w->who, msg|text\.ptr)",
                         src[m.start() - 7:end]):
                continue  # the helper wh_tpu_pod_deny() itself
            out.append((key, name, src[:m.start()].count("\n") + 1, call))
    return out


def judge_any(obj, op="CREATE", old=None):
    if obj["kind"] == "RayCluster":
        rv = W.review_of(obj, op=op)
        rv["request"]["oldObject"] = old
        return W.run(rv)
    return judge(obj, op=op, old=old)


def check_code(obj):
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "obj.json")
        with open(path, "w") as f:
            json.dump(obj, f)
        p = subprocess.run([W.BINARY, "check", path], capture_output=True, timeout=120)
    return p.returncode, p.stdout.decode() + p.stderr.decode()


class PodDenials(unittest.TestCase):
    def test_every_denial_is_listed(self):
        markers = [m for ms, _ in DENIALS.values() for m in ms] + list(POD_ONLY)
        used = set()
        for key, name, line, call in deny_sites():
            hit = [m for m in markers if m[0] == key and m[2:] in call]
            self.assertEqual(len(hit), 1, "%s:%d: %d markers for %r" % (name, line, len(hit), call))
            used.add(hit[0])
        self.assertEqual(sorted(set(markers) - used), [], "markers of no deny call")

    def test_object_is_denied_as_its_pods_are(self):
        for key, (_, cases) in DENIALS.items():
            for obj, indices, parts, pod_part in cases:
                with self.subTest(key=key, kind=obj["kind"]):
                    r = judge_any(obj)
                    self.assertFalse(r.allowed, "the %s is admitted" % obj["kind"])
                    for part in parts:
                        self.assertIn(part, r.message)
                    code, out = check_code(obj)
                    self.assertEqual(code, 1, out)  # check agrees
                    u = judge_any(obj, op="UPDATE", old=copy.deepcopy(obj))
                    self.assertTrue(u.allowed, u.message)  # the ratchet
                    for p in pods_of(obj, indices):
                        pr = W.run(W.review_of(p), workload=obj["kind"] != "RayCluster")
                        self.assertFalse(pr.allowed, "pod %s admitted" % (p["metadata"],))
                        self.assertIn(pod_part, pr.message)

    def test_jobset_completion_index(self):
        """A replicated job's completions over its hosts: the JobSet is
        denied, and so is its pod past the hosts."""
        obj = obj_of("JobSet", tm())
        rj_spec(obj).update(parallelism=5, completions=5)
        r = judge_any(obj)
        self.assertFalse(r.allowed)
        self.assertIn("parallelism is 5, expected 4", r.message)
        pr = W.run(W.review_of(pods_of(obj, [(0, 4)])[0]), workload=True)
        self.assertFalse(pr.allowed)
        self.assertIn("is beyond the 4 hosts", pr.message)

    def test_right_objects_and_pods_are_admitted(self):
        """The counter-cases: the builders give admitted objects and pods."""
        for obj in (obj_of("Job", tm()), obj_of("JobSet", tm()), obj_of("RayCluster", tm()),
                    obj_of("LeaderWorkerSet", tm("tpu-v5-lite-podslice"))):
            with self.subTest(kind=obj["kind"]):
                r = judge_any(obj)
                self.assertTrue(r.allowed, r.message)
                for p in pods_of(obj, [(0, 0), (1, 3)]):
                    pr = W.run(W.review_of(p), workload=obj["kind"] != "RayCluster")
                    self.assertTrue(pr.allowed, pr.message)


if __name__ == "__main__":
    W.main()
