"""Helpers for driving `tpu-webhook review` from Python tests.

Builds Pod / RayCluster AdmissionReviews the way KubeRay and the API server
would, runs them through the binary, decodes the JSON patch and applies it
with python3-jsonpatch, checking the invariants every response must hold.
"""
import argparse
import base64
import copy
import json
import os
import subprocess
import sys
import tempfile
import unittest

import jsonpatch

BINARY = None  # set by the test runner (parse_args)


def parse_args(*extra):
    """The command line of a test program: --binary (sets BINARY) and each
    option of extra (e.g. "--fixtures"), all required; (args, rest), rest
    for unittest_main (a class name there runs that class only)."""
    global BINARY
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", required=True)
    for opt in extra:
        ap.add_argument(opt, required=True)
    args, rest = ap.parse_known_args()
    BINARY = args.binary
    return args, rest


def unittest_main(rest):
    """The test classes of the program run as __main__, with the arguments
    parse_args left."""
    unittest.main(module="__main__", argv=[sys.argv[0]] + rest, verbosity=1)


def main():
    """A test program that takes --binary only."""
    unittest_main(parse_args()[1])

UID = "705ab4f5-6393-11e8-b7cc-42010a800002"


def container(name="ray-worker", chips="4", env=None, limits_only=False, requests_only=False):
    res = {"limits": {"cpu": "8", "memory": "40G"}, "requests": {"cpu": "8", "memory": "40G"}}
    if chips is not None:
        if not requests_only:
            res["limits"]["google.com/tpu"] = chips
        if not limits_only:
            res["requests"]["google.com/tpu"] = chips
    c = {"name": name, "image": "rayproject/ray:2.52.0-py310", "resources": res}
    if env is not None:
        c["env"] = copy.deepcopy(env)
    return c


def pod(cluster="rc", group="tpu-group", ns="default", chips="4", accel="tpu-v6e-slice",
        topo="4x4", native=None, replica_name=True, env=None, ncont=1, labels=None,
        annotations=None, containers=None, affinity=None):
    """A KubeRay TPU worker pod as the mutating webhook sees it (generateName,
    no name). native=(replica, host) adds the KubeRay 1.6+ index labels."""
    lab = {"ray.io/cluster": cluster, "ray.io/group": group, "ray.io/node-type": "worker",
           "app.kubernetes.io/created-by": "kuberay-operator",
           "app.kubernetes.io/name": "kuberay", "ray.io/is-ray-node": "yes"}
    if native is not None:
        lab["ray.io/worker-group-replica-index"] = str(native[0])
        lab["ray.io/replica-host-index"] = str(native[1])
        if replica_name:
            lab["ray.io/worker-group-replica-name"] = "%s-%s-r%s" % (cluster, group, native[0])
    for k, v in (labels or {}).items():
        if v is None:
            lab.pop(k, None)
        else:
            lab[k] = v
    if containers is None:
        containers = [container("ray-worker" if i == 0 else "ray-worker-%d" % i, chips, env)
                      for i in range(ncont)]
    sel = {}
    if accel:
        sel["cloud.google.com/gke-tpu-accelerator"] = accel
    if topo:
        sel["cloud.google.com/gke-tpu-topology"] = topo
    meta = {"generateName": "%s-%s-worker-" % (cluster, group), "namespace": ns, "labels": lab}
    if annotations:
        meta["annotations"] = annotations
    spec = {"containers": containers, "nodeSelector": sel}
    if affinity is not None:
        spec["affinity"] = affinity
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def review_of(obj, kind=None, op="CREATE", uid=UID):
    kind = kind or obj.get("kind", "Pod")
    group = "" if kind == "Pod" else "ray.io"
    res = {"Pod": "pods", "RayCluster": "rayclusters"}.get(kind, kind.lower() + "s")
    ns = (obj.get("metadata") or {}).get("namespace", "default") if isinstance(obj, dict) else "default"
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "request": {"uid": uid, "kind": {"group": group, "version": "v1", "kind": kind},
                        "resource": {"group": group, "version": "v1", "resource": res},
                        "namespace": ns, "operation": op,
                        "userInfo": {"username": "system:serviceaccount:ray-system:kuberay-operator"},
                        "object": obj, "oldObject": None, "dryRun": False}}


class Result:
    def __init__(self, response, patch, obj):
        self.response = response
        self.patch = patch          # list of ops, or None
        self.obj = obj              # the object after the patch (or as sent)

    @property
    def allowed(self):
        return self.response["allowed"]

    @property
    def message(self):
        return (self.response.get("status") or {}).get("message", "")

    @property
    def warnings(self):
        return self.response.get("warnings", [])

    def ops(self):
        return self.patch or []

    def env(self, i=0):
        """name -> value (or valueFrom dict) of container i after the patch;
        asserts one entry per name (D5)."""
        env = self.obj["spec"]["containers"][i].get("env") or []
        names = [e["name"] for e in env]
        dups = sorted({n for n in names if names.count(n) > 1})
        assert not dups, "duplicate env names %s in container %d" % (dups, i)
        return {e["name"]: e.get("value", e.get("valueFrom")) for e in env}


def run(review, pods=None, nodes=None, raw=None, expect_rc=0, workload=False):
    """Run one review through the binary; returns Result (or (rc, stderr)
    when expect_rc != 0). workload=True answers as /mutate-workload."""
    with tempfile.TemporaryDirectory() as d:
        args = [BINARY, "review"] + (["--workload"] if workload else [])
        if pods is not None:
            p = os.path.join(d, "pods.json")
            with open(p, "w") as f:
                json.dump({"apiVersion": "v1", "kind": "PodList", "items": pods}, f)
            args += ["--pods", p]
        if nodes is not None:
            p = os.path.join(d, "nodes.json")
            with open(p, "w") as f:
                json.dump({"apiVersion": "v1", "kind": "NodeList", "items": nodes}, f)
            args += ["--nodes", p]
        data = raw if raw is not None else json.dumps(review).encode()
        proc = subprocess.run(args, input=data, capture_output=True, timeout=60)
    if expect_rc != 0:
        assert proc.returncode == expect_rc, (proc.returncode, proc.stderr)
        return proc.returncode, proc.stderr.decode()
    assert proc.returncode == 0, proc.stderr.decode()
    out = json.loads(proc.stdout.decode("utf-8"))  # every answer is valid UTF-8 (issue 10)
    assert out["apiVersion"] == "admission.k8s.io/v1" and out["kind"] == "AdmissionReview"
    resp = out["response"]
    assert resp["uid"] == review["request"]["uid"]
    obj = review["request"].get("object")
    patch = None
    if "patch" in resp:
        assert resp["allowed"] is True and resp["patchType"] == "JSONPatch"
        patch = json.loads(base64.b64decode(resp["patch"]))
        assert isinstance(patch, list) and patch, "an empty patch must be omitted"
        obj = jsonpatch.JsonPatch(patch).apply(copy.deepcopy(obj))  # must apply cleanly
    if not resp["allowed"]:
        assert resp["status"]["code"] == 400 and resp["status"]["message"]
        assert "patch" not in resp, "a denial never carries a patch"
    for w in resp.get("warnings", []):
        assert len(w) < 120, w
    res = Result(resp, patch, obj)
    res.notes = proc.stderr.decode()  # the engine's log notes
    return res


def run_raw(data):
    """The answer to raw bytes, as JSON decoded from strict UTF-8."""
    proc = subprocess.run([BINARY, "review"], input=data, capture_output=True, timeout=60)
    assert proc.returncode == 0, proc.stderr.decode()
    return json.loads(proc.stdout.decode("utf-8"))


def mutate(p, **kw):
    return run(review_of(p), **kw)


def node(name, labels):
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels}}
