#!/usr/bin/env python3
"""Names the API server accepts, by construction (docs/kuberay-pods.md §5).

Table-driven over worker group names (upper case, dots, underscores, 50-63
characters, a leading digit, unicode) x (legacy, native) x (single-host,
multi-host, multi-slice, TPU7x two containers). Each pod review either is
denied with a message naming the group, the value, the rule and the fix, or
its patch, applied with python3-jsonpatch (whreview.run), yields a pod whose
hostname, subdomain, written label values and env var names pass the API
server's rules. Which of the two is expected is computed here, from the
rules, independently of the C code. The RayCluster of the same group is
denied by /validate (CREATE and UPDATE) and by `check` with the same text."""
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import whreview as W  # noqa: E402
from whreview import container, pod, review_of, run  # noqa: E402

DNS1123 = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
ENV_NAME = re.compile(r"^[-._a-zA-Z][-._a-zA-Z0-9]*$")


def dns_label_ok(s):
    return len(s) <= 63 and DNS1123.match(s) is not None


def label_value_ok(s):
    return len(s) <= 63 and LABEL_VALUE.match(s) is not None


GROUPS = {
    "upper": "TPUGroup",
    "dots": "tpu.group",
    "underscore": "tpu_group",
    "50": "g" * 50,
    "59": "g" * 59,
    "60": "g" * 60,
    "61": "a" + "-b" * 30,
    "62": "g" * 62,
    "63": "g" * 63,
    "digit": "1tpu-group",
    "unicode": "gr\u00fcppe",
    "plain": "tpu-group",
}

# shape -> pod() arguments and the group()'s for validation
SHAPES = {
    "single-host": dict(topo="2x2", chips="4"),
    "multi-host": dict(topo="4x4", chips="4"),
    "multi-slice": dict(topo="4x4", chips="4",
                        env=[{"name": "MEGASCALE_NUM_SLICES", "value": "2"}]),
    "tpu7x-two-containers": dict(accel="tpu7x", topo="2x2x2", chips="2", ncont=2),
}


def hosts_of(shape):
    return {"single-host": 1, "multi-host": 4, "multi-slice": 4, "tpu7x-two-containers": 2}[shape]


def expect_denied(group, replica, host, hosts, label_written):
    if hosts > 1 and not dns_label_ok("%s-%d-%d" % (group, replica, host)):
        return True
    return label_written and not label_value_ok("%s-%d" % (group, replica))


def why(message):
    """The part of a denial the engine's names module wrote."""
    i = message.find("the pod ")
    j = message.find("the label replicaIndex")
    k = [x for x in (i, j) if x >= 0]
    return message[min(k):] if k else message


class Pods(unittest.TestCase):
    def check_result(self, r, sent):
        """Every name the patch wrote passes the API server's rules."""
        spec = r.obj["spec"]
        for field in ("hostname", "subdomain"):
            if field in spec:
                self.assertTrue(dns_label_ok(spec[field]), "%s %r" % (field, spec[field]))
        before = sent["metadata"]["labels"]
        for k, v in r.obj["metadata"]["labels"].items():
            if before.get(k) != v:
                self.assertTrue(label_value_ok(v), "label %s=%r" % (k, v))
        for c in spec["containers"]:
            for e in c.get("env") or []:
                self.assertTrue(ENV_NAME.match(e["name"]), "env name %r" % e["name"])
        # each host's DNS name is its own hostname in the cluster's Service
        env = r.env(0)
        if "hostname" in spec:
            own = "%s.%s" % (spec["hostname"], spec["subdomain"])
            self.assertIn(own, env["TPU_WORKER_HOSTNAMES"].split(","))

    def check_denial(self, r, group):
        self.assertFalse(r.allowed)
        m = r.message
        self.assertIn('worker group "%s"' % group, m)
        self.assertIn("rename worker group %s (groupName) to a DNS-1123 label" % group, m)
        self.assertTrue("is not a DNS-1123 label" in m or "is not a label value" in m or
                        "over the 63 of" in m, m)
        sugg = m.rsplit(" such as ", 1)[1]
        self.assertTrue(dns_label_ok(sugg), sugg)

    def test_table(self):
        for gname, group in GROUPS.items():
            for mode in ("legacy", "native"):
                for shape, kw in SHAPES.items():
                    with self.subTest(group=gname, mode=mode, shape=shape):
                        hosts = hosts_of(shape)
                        host = hosts - 1
                        p = pod(group=group, native=(0, host) if mode == "native" else None, **kw)
                        # legacy: the pods of hosts 0..host-1 exist already
                        existing = [] if mode == "native" else [
                            self.existing(group, h, kw) for h in range(host)]
                        r = run(review_of(p), pods=existing)
                        label = mode == "legacy"
                        if expect_denied(group, 0, host, hosts, label):
                            self.check_denial(r, group)
                        else:
                            self.assertTrue(r.allowed, r.message)
                            self.check_result(r, p)
                            if hosts > 1:
                                self.assertEqual(r.obj["spec"]["hostname"],
                                                 "%s-0-%d" % (group, host))

    @staticmethod
    def existing(group, host, kw):
        """An admitted legacy pod of replica 0 (as the pod cache holds it)."""
        ncont = kw.get("ncont", 1)
        p = pod(group=group, **kw)
        for c, k in enumerate(p["spec"]["containers"]):
            k["env"] = [{"name": "TPU_WORKER_ID", "value": str(host * ncont + c)}]
        p["metadata"]["name"] = "rc-w-%d" % host
        p["metadata"]["labels"]["replicaIndex"] = "%s-0" % group
        return p

    def test_native_without_replica_name_writes_the_label(self):
        # KubeRay without the replica-name label: the webhook labels the
        # replica itself, so a 62-character group is denied even though
        # <group>-0-1 ... would be checked second.
        for group, ok in (("g" * 50, True), ("TPUGroup", False)):
            r = run(review_of(pod(group=group, native=(0, 1), replica_name=False)))
            self.assertEqual(r.allowed, ok, r.message)
            if ok:
                self.check_result(r, pod(group=group, native=(0, 1), replica_name=False))

    def test_replica_ten_of_a_61_character_group(self):
        """<group>-9 fits in 63 characters, <group>-10 does not."""
        group = "g" * 61
        kw = SHAPES["single-host"]
        pods = []
        for rep in range(10):
            p = self.existing(group, 0, kw)
            p["metadata"]["name"] = "rc-w-r%d" % rep
            p["metadata"]["labels"]["replicaIndex"] = "%s-%d" % (group, rep)
            pods.append(p)
        r = run(review_of(pod(group=group, **kw)), pods=pods[:9])
        self.assertTrue(r.allowed, r.message)
        self.assertEqual(r.obj["metadata"]["labels"]["replicaIndex"], group + "-9")
        r = run(review_of(pod(group=group, **kw)), pods=pods)
        self.check_denial(r, group)
        self.assertIn('"%s-10" would have 64 characters' % group, r.message)

    def test_subdomain_of_a_long_cluster_name(self):
        cluster = "c" * 55  # KubeRay 1.4+ refuses it; older ones create the pods
        r = run(review_of(pod(cluster=cluster, native=(0, 0))))
        self.assertFalse(r.allowed)
        self.assertIn('"%s-headless" would have 64 characters' % cluster, r.message)
        self.assertIn("rename RayCluster %s to a DNS-1035 label" % cluster, r.message)


def raycluster(group, shape, replicas=None):
    kw = SHAPES[shape]
    if replicas is None:  # MEGASCALE_NUM_SLICES is the replicas (issue 24)
        replicas = 2 if shape == "multi-slice" else 1
    sel = {"cloud.google.com/gke-tpu-accelerator": kw.get("accel", "tpu-v6e-slice"),
           "cloud.google.com/gke-tpu-topology": kw["topo"]}
    conts = [container("ray-worker-%d" % i, kw["chips"], kw.get("env"))
             for i in range(kw.get("ncont", 1))]
    g = {"groupName": group, "replicas": replicas, "minReplicas": 0, "maxReplicas": replicas,
         "numOfHosts": hosts_of(shape), "rayStartParams": {},
         "template": {"spec": {"containers": conts, "nodeSelector": sel}}}
    head = {"rayStartParams": {}, "template": {"spec": {"containers": [
        {"name": "ray-head", "image": "rayproject/ray:2.52.0"}]}}}
    return {"apiVersion": "ray.io/v1", "kind": "RayCluster",
            "metadata": {"name": "rc", "namespace": "default"},
            "spec": {"headGroupSpec": head, "workerGroupSpecs": [g]}}


class RayClusters(unittest.TestCase):
    def test_table(self):
        """Validation denies a group iff some pod of it would be denied (the
        replicaIndex label is assumed written: KubeRay's version decides)."""
        for gname, group in GROUPS.items():
            for shape in SHAPES:
                hosts = hosts_of(shape)
                bad = any(expect_denied(group, 0, h, hosts, True) for h in range(hosts))
                rc = raycluster(group, shape)
                for op in ("CREATE", "UPDATE"):
                    with self.subTest(group=gname, shape=shape, op=op):
                        r = run(review_of(rc, kind="RayCluster", op=op))
                        self.assertEqual(r.allowed, not bad, r.message)
                        if bad:
                            self.assertIn('worker group "%s" (spec.workerGroupSpecs[0])' % group,
                                          r.message)
                            self.assertIn("rename worker group %s (groupName)" % group, r.message)
                if not bad:
                    continue
                # the first pod (replica 0, host 0) gets the same text
                kw = SHAPES[shape]
                pr = run(review_of(pod(group=group, native=(0, 0), replica_name=False, **kw)))
                if not pr.allowed:
                    with self.subTest(group=gname, shape=shape, same_text=True):
                        self.assertIn(why(pr.message), r.message)

    def test_largest_replica_index(self):
        group = "g" * 61
        self.assertTrue(run(review_of(raycluster(group, "single-host", 10),
                                      kind="RayCluster")).allowed)
        r = run(review_of(raycluster(group, "single-host", 11), kind="RayCluster"))
        self.assertFalse(r.allowed)
        self.assertIn('"%s-10" would have 64 characters' % group, r.message)

    def test_check_says_the_same(self):
        with tempfile.TemporaryDirectory() as d:
            rcs = [raycluster(g, s) for g, s in (("TPUGroup", "multi-host"),
                                                ("g" * 62, "single-host"),
                                                ("tpu.group", "single-host"))]
            for i, rc in enumerate(rcs):
                rc["metadata"]["name"] = "rc%d" % i
            path = os.path.join(d, "c.yaml")
            with open(path, "w") as f:
                yaml.safe_dump_all(rcs, f)
            p = subprocess.run([W.BINARY, "check", "--output", "json", path],
                               capture_output=True, text=True, timeout=60)
            self.assertEqual(p.returncode, 1, p.stderr)
            rows = {r["cluster"]: r for r in json.loads(p.stdout)["rows"]}
            for i, rc in enumerate(rcs):
                with self.subTest(cluster=i):
                    v = run(review_of(rc, kind="RayCluster"))
                    row = rows["rc%d" % i]
                    if v.allowed:
                        self.assertEqual(row["verdict"], "ok")
                    else:
                        self.assertEqual(row["verdict"], "rejected")
                        self.assertIn(why(v.message), row["message"])


if __name__ == "__main__":
    W.main()
