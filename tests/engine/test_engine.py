#!/usr/bin/env python3
"""Fixture suite of the admission engine (issue 2).

Each test names the rule it checks: a section of
the reference webhook's behaviour (anchor, e.g. "§2.4") or a deliberate
difference of issue 2 (D1..D9). Reviews go through the real binary; every
patch is applied with python3-jsonpatch (see whreview.run)."""
import base64
import copy
import glob
import json
import os
import sys
import unittest

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import whreview as W  # noqa: E402
from whreview import container, mutate, node, pod, review_of, run  # noqa: E402

SAMPLES = None
FIXTURES = None


def env_names(ops):
    out = []
    for op in ops:
        v = op["value"]
        if op["path"].endswith("/env"):
            out += [e["name"] for e in v]
        elif "/env/" in op["path"]:
            out.append(v["name"])
    return out


def existing(group="tpu-group", replica=0, host=0, cluster="rc", ns="default", ncont=1,
             chips="4", wid=None, tpu=True, deleting=False, label=True, accel="tpu-v6e-slice"):
    """An already-admitted legacy pod as the pod cache holds it."""
    envs = []
    for c in range(ncont):
        w = wid if wid is not None else host * (ncont if accel.startswith("tpu7x") else 1) + c
        envs.append([] if w == "" else [{"name": "TPU_WORKER_ID", "value": str(w)}])
    p = pod(cluster=cluster, group=group, ns=ns, chips=chips if tpu else None, accel=accel,
            containers=[container("c%d" % c, chips if tpu else None, envs[c]) for c in range(ncont)])
    p["metadata"]["name"] = "%s-%s-worker-%d%d" % (cluster, group, replica, host)
    if label:
        p["metadata"]["labels"]["replicaIndex"] = "%s-%d" % (group, replica)
    if deleting:
        p["metadata"]["deletionTimestamp"] = "2026-11-29T00:00:00Z"
    return p


class Gates(unittest.TestCase):
    def test_non_create_is_admitted_unchanged_D4(self):
        for op in ("UPDATE", "DELETE", "CONNECT"):
            r = run(review_of(pod(), op=op))
            self.assertTrue(r.allowed)
            self.assertIsNone(r.patch)

    def test_missing_containers_denied_D1(self):
        p = pod()
        del p["spec"]["containers"]
        r = mutate(p)
        self.assertFalse(r.allowed)
        self.assertIn("spec.containers", r.message)
        self.assertIn("default/rc-tpu-group-worker-", r.message)

    def test_empty_container_list_admitted(self):
        p = pod(containers=[])
        r = mutate(p)
        self.assertTrue(r.allowed)
        self.assertIsNone(r.patch)

    def test_non_tpu_pod_admitted_unchanged_2_2(self):
        r = mutate(pod(chips=None))
        self.assertTrue(r.allowed)
        self.assertIsNone(r.patch)
        r = mutate(pod(chips="0"))
        self.assertIsNone(r.patch)

    def test_tpu_by_limits_or_requests_only_2_2(self):
        for kw in ({"limits_only": True}, {"requests_only": True}):
            p = pod(containers=[container(chips="4", **kw)], native=(0, 0))
            r = mutate(p)
            self.assertTrue(r.allowed)
            self.assertEqual(r.env()["TPU_WORKER_ID"], "0")

    def test_bad_quantity_denied_D1(self):
        r = mutate(pod(chips="four"))
        self.assertFalse(r.allowed)
        self.assertIn("google.com/tpu", r.message)
        self.assertIn("four", r.message)

    def test_missing_cluster_label_denied_D1(self):
        r = mutate(pod(labels={"ray.io/cluster": None}))
        self.assertFalse(r.allowed)
        self.assertIn('"ray.io/cluster"', r.message)
        self.assertIn("KubeRay", r.message)

    def test_missing_group_label_denied_D1(self):
        r = mutate(pod(labels={"ray.io/group": ""}))
        self.assertFalse(r.allowed)
        self.assertIn('"ray.io/group"', r.message)
        self.assertIn('RayCluster "rc"', r.message)

    def test_missing_topology_denied_D1(self):
        r = mutate(pod(topo=None))
        self.assertFalse(r.allowed)
        self.assertIn("cloud.google.com/gke-tpu-topology", r.message)
        self.assertIn('worker group "tpu-group"', r.message)

    def test_empty_annotation_topology_denied_2_2(self):
        r = mutate(pod(annotations={"cloud.google.com/gke-tpu-slice-topology": ""}))
        self.assertFalse(r.allowed)
        self.assertIn("gke-tpu-slice-topology", r.message)

    def test_unparsable_topology_denied_D1(self):
        r = mutate(pod(topo="4xfour"))
        self.assertFalse(r.allowed)
        self.assertIn('"4xfour"', r.message)
        self.assertIn("AxB", r.message)

    def test_absurd_topology_denied(self):
        r = mutate(pod(topo="4096x4096", chips="1", native=(0, 0)))
        self.assertFalse(r.allowed)
        self.assertIn("hosts", r.message)


class Hosts(unittest.TestCase):
    """§2.3 examples: numOfHosts = max(chips / chipsPerHost, 1)."""
    CASES = [("tpu-v4-podslice", "2x2x1", "4", 1, 1), ("tpu-v4-podslice", "2x2x2", "4", 1, 2),
             ("tpu-v4-podslice", "2x2x4", "4", 1, 4), ("tpu-v5-lite-podslice", "2x4", "8", 1, 1),
             ("tpu-v5-lite-podslice", "2x4", "4", 1, 2), ("tpu-v5-lite-podslice", "4x4", "4", 1, 4),
             ("tpu-v6e-slice", "2x4", "8", 1, 1), ("tpu-v6e-slice", "4x4", "4", 1, 4),
             ("tpu7x", "2x2x1", "4", 1, 1), ("tpu7x", "2x2x2", "4", 1, 2),
             ("tpu7x", "2x2x2", "2", 2, 2)]

    def test_host_counts(self):
        for accel, topo, chips, ncont, hosts in self.CASES:
            with self.subTest(accel=accel, topo=topo, chips=chips, ncont=ncont):
                r = mutate(pod(accel=accel, topo=topo, chips=chips, ncont=ncont, native=(0, 0)))
                env = r.env()
                if hosts == 1:
                    self.assertNotIn("hostname", r.obj["spec"])
                    self.assertNotIn("TPU_WORKER_HOSTNAMES", env)
                else:
                    self.assertEqual(len(env["TPU_WORKER_HOSTNAMES"].split(",")), hosts)
                    self.assertEqual(r.obj["spec"]["hostname"], "tpu-group-0-0")


class Native(unittest.TestCase):
    def test_native_indices_2_4(self):
        r = mutate(pod(native=(2, 3)))
        self.assertEqual(r.obj["spec"]["hostname"], "tpu-group-2-3")
        env = r.env()
        self.assertEqual(env["TPU_WORKER_ID"], "3")
        self.assertEqual(env["TPU_NAME"], "tpu-group-2")
        # native path: no replicaIndex label when the replica-name label exists
        self.assertNotIn("replicaIndex", r.obj["metadata"]["labels"])

    def test_bad_native_label_denied_D1(self):
        r = mutate(pod(native=("abc", 0)))
        self.assertFalse(r.allowed)
        self.assertIn("ray.io/worker-group-replica-index", r.message)
        self.assertIn('"abc"', r.message)
        r = mutate(pod(native=(0, "-1")))
        self.assertFalse(r.allowed)
        self.assertIn("ray.io/replica-host-index", r.message)

    def test_host_index_beyond_slice_denied(self):
        r = mutate(pod(native=(0, 4)))
        self.assertFalse(r.allowed)
        self.assertIn("4 hosts", r.message)

    def test_native_without_replica_name_gets_label_D7(self):
        r = mutate(pod(native=(1, 2), replica_name=False))
        self.assertEqual(r.obj["metadata"]["labels"]["replicaIndex"], "tpu-group-1")
        req = r.obj["spec"]["affinity"]["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        self.assertEqual(req[0]["labelSelector"]["matchExpressions"][0],
                         {"key": "replicaIndex", "operator": "In", "values": ["tpu-group-1"]})

    def test_native_does_not_read_state(self):
        broken = [existing(host=0), existing(host=0)]  # duplicates would deny a legacy pod
        r = mutate(pod(native=(0, 1)), pods=broken)
        self.assertTrue(r.allowed)


class Legacy(unittest.TestCase):
    def ids(self, state, **kw):
        r = mutate(pod(**kw), pods=state)
        self.assertTrue(r.allowed, r.message)
        return r

    def test_first_pod_gets_0_0_and_label_first_2_4(self):
        r = self.ids([])
        self.assertEqual(r.ops()[0], {"op": "add", "path": "/metadata/labels/replicaIndex",
                                      "value": "tpu-group-0"})
        self.assertEqual(r.env()["TPU_WORKER_ID"], "0")
        self.assertEqual(r.obj["spec"]["hostname"], "tpu-group-0-0")

    def test_fills_lowest_incomplete_replica(self):
        state = [existing(replica=0, host=h) for h in range(4)] + [existing(replica=1, host=0)]
        r = self.ids(state)
        self.assertEqual(r.obj["metadata"]["labels"]["replicaIndex"], "tpu-group-1")
        self.assertEqual(r.env()["TPU_WORKER_ID"], "1")

    def test_lowest_unused_host_id(self):
        state = [existing(host=h) for h in (0, 1, 3)]
        r = self.ids(state)
        self.assertEqual(r.env()["TPU_WORKER_ID"], "2")
        self.assertEqual(r.obj["spec"]["hostname"], "tpu-group-0-2")

    def test_gap_in_replicas_is_filled(self):
        state = [existing(replica=1, host=h) for h in range(4)]
        r = self.ids(state)
        self.assertEqual(r.env()["TPU_NAME"], "tpu-group-0")

    def test_single_host_each_pod_new_replica(self):
        state = [existing(replica=i, host=0) for i in (0, 1, 2)]
        r = self.ids(state, topo="2x2", chips="4")
        self.assertEqual(r.env()["TPU_NAME"], "tpu-group-3")
        self.assertEqual(r.env()["TPU_WORKER_ID"], "0")
        self.assertNotIn("hostname", r.obj["spec"])
        state = [existing(replica=i, host=0) for i in (0, 2)]
        r = self.ids(state, topo="2x2", chips="4")
        self.assertEqual(r.env()["TPU_NAME"], "tpu-group-1")

    def test_duplicate_ids_denied_D1(self):
        state = [existing(host=0), existing(host=0)]
        r = mutate(pod(), pods=state)
        self.assertFalse(r.allowed)
        self.assertIn("same TPU_WORKER_ID", r.message)
        self.assertIn("replica 0", r.message)

    def test_non_tpu_pod_does_not_end_scan_D7(self):
        state = [existing(host=0, tpu=False), existing(host=0), existing(host=1)]
        r = self.ids(state)
        self.assertEqual(r.env()["TPU_WORKER_ID"], "2")

    def test_pod_without_worker_id_skipped_D7(self):
        state = [existing(host=0), existing(host=1, wid=""), existing(host=1)]
        r = self.ids(state)
        self.assertEqual(r.env()["TPU_WORKER_ID"], "2")

    def test_deleting_other_namespace_and_unlabelled_pods_ignored(self):
        state = [existing(host=0, deleting=True), existing(host=0, ns="other"),
                 existing(host=0, label=False), existing(host=0, cluster="other-rc"),
                 existing(host=0, group="other-group")]
        r = self.ids(state)
        self.assertEqual(r.env()["TPU_WORKER_ID"], "0")
        self.assertEqual(r.env()["TPU_NAME"], "tpu-group-0")

    def test_pods_not_from_kuberay_are_not_cached(self):
        p = existing(host=0)
        p["metadata"]["labels"]["app.kubernetes.io/created-by"] = "someone"
        r = self.ids([p])
        self.assertEqual(r.env()["TPU_WORKER_ID"], "0")

    def test_other_multi_container_ids_not_divided(self):
        # Outside TPU7x every TPU container carries the host index itself
        # (§2.7.3), so existing pods are read back as host = id (the
        # reference divides by the container count and misreads them).
        state = [existing(host=h, ncont=2, chips="2") for h in (0, 1)]
        r = self.ids(state, topo="4x4", chips="2", ncont=2)
        self.assertEqual(r.env(0)["TPU_WORKER_ID"], "2")
        self.assertEqual(r.env(1)["TPU_WORKER_ID"], "2")

    def test_tpu7x_existing_ids_divided_by_containers(self):
        # host 0 holds ids 0,1; host 1 holds 2,3 -> next host is 2 -> ids 4,5
        state = [existing(host=h, ncont=2, chips="2", accel="tpu7x") for h in (0, 1)]
        r = self.ids(state, accel="tpu7x", topo="2x2x4", chips="2", ncont=2)
        self.assertEqual(r.env(0)["TPU_WORKER_ID"], "4")
        self.assertEqual(r.env(1)["TPU_WORKER_ID"], "5")


class Names(unittest.TestCase):
    def test_headless_name_not_truncated_D2(self):
        cluster = "really-really-extremely-long-test-raycluster-name"  # 49 chars
        r = mutate(pod(cluster=cluster, native=(0, 0)))
        self.assertEqual(r.obj["spec"]["subdomain"], cluster + "-headless")
        self.assertTrue(r.env()["TPU_WORKER_HOSTNAMES"].startswith(
            "tpu-group-0-0.%s-headless," % cluster))

    def test_hostnames_list_2_5(self):
        r = mutate(pod(native=(1, 0)))
        self.assertEqual(r.env()["TPU_WORKER_HOSTNAMES"],
                         ",".join("tpu-group-1-%d.rc-headless" % h for h in range(4)))

    def test_long_hostname_denied_D9(self):
        group = "g" * 60
        r = mutate(pod(group=group, native=(0, 0)))
        self.assertFalse(r.allowed)
        self.assertIn("63", r.message)
        self.assertIn("groupName", r.message)
        # single-host pods get no hostname, so the same group is fine
        r = mutate(pod(group=group, topo="2x2", native=(0, 0)))
        self.assertTrue(r.allowed)


class PodOps(unittest.TestCase):
    def test_op_order_2_7_2(self):
        r = mutate(pod(env=[{"name": "MEGASCALE_NUM_SLICES", "value": "2"}]))
        paths = [o["path"] for o in r.ops()]
        self.assertEqual(paths[:4], ["/metadata/labels/replicaIndex", "/spec/hostname",
                                     "/spec/subdomain", "/spec/affinity"])
        self.assertEqual(env_names(r.ops()), [
            "MEGASCALE_SLICE_ID", "MEGASCALE_COORDINATOR_ADDRESS", "MEGASCALE_PORT",
            "TPU_WORKER_HOSTNAMES", "TORCH_TPU_TOPOLOGY", "TORCH_TPU_SLICEBUILDER_ADDRESSES",
            "TPU_WORKER_ID", "TPU_NAME", "TPU_DEVICE_PLUGIN_HOST_IP", "TPU_DEVICE_PLUGIN_ADDR"])

    def test_env_array_created_then_appended_2_7(self):
        r = mutate(pod(native=(0, 0)))
        env_ops = [o for o in r.ops() if "/env" in o["path"]]
        self.assertEqual(env_ops[0]["path"], "/spec/containers/0/env")
        self.assertIsInstance(env_ops[0]["value"], list)
        self.assertTrue(all(o["path"] == "/spec/containers/0/env/-" for o in env_ops[1:]))
        r = mutate(pod(native=(0, 0), env=[{"name": "A", "value": "1"}]))
        env_ops = [o for o in r.ops() if "/env" in o["path"]]
        self.assertTrue(all(o["path"] == "/spec/containers/0/env/-" for o in env_ops))

    def test_affinity_terms_2_6(self):
        r = mutate(pod(native=(0, 0)))
        aff = r.obj["spec"]["affinity"]
        rn = "rc-tpu-group-r0"
        self.assertEqual(aff["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"], [
            {"labelSelector": {"matchExpressions": [
                {"key": "ray.io/worker-group-replica-name", "operator": "In", "values": [rn]},
                {"key": "ray.io/cluster", "operator": "In", "values": ["rc"]}]},
             "topologyKey": "cloud.google.com/gke-nodepool"}])
        self.assertEqual(aff["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"], [
            {"labelSelector": {"matchExpressions": [
                {"key": "ray.io/worker-group-replica-name", "operator": "NotIn", "values": [rn]},
                {"key": "ray.io/cluster", "operator": "In", "values": ["rc"]}]},
             "topologyKey": "cloud.google.com/gke-nodepool"},
            {"labelSelector": {"matchExpressions": [
                {"key": "ray.io/cluster", "operator": "NotIn", "values": ["rc"]},
                {"key": "ray.io/worker-group-replica-name", "operator": "Exists"}]},
             "topologyKey": "cloud.google.com/gke-nodepool",
             "namespaceSelector": {"matchExpressions": [
                 {"key": "kubernetes.io/metadata.name", "operator": "NotIn",
                  "values": ["kube-system"]}]}}])

    def test_affinity_merge_keeps_user_terms_first_2_6(self):
        user_term = {"labelSelector": {"matchLabels": {"a": "b"}},
                     "topologyKey": "cloud.google.com/gce-topology-block"}
        node_aff = {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "x", "operator": "Exists"}]}]}}
        pref = [{"weight": 1, "podAffinityTerm": user_term}]
        aff = {"nodeAffinity": node_aff,
               "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [user_term],
                               "preferredDuringSchedulingIgnoredDuringExecution": pref}}
        r = mutate(pod(native=(0, 0), affinity=aff))
        out = r.obj["spec"]["affinity"]
        self.assertEqual(out["nodeAffinity"], node_aff)
        req = out["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        self.assertEqual(req[0], user_term)
        self.assertEqual(len(req), 2)
        self.assertEqual(out["podAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"], pref)
        # (a) the user's cloud.google.com/ key is the topology key
        self.assertEqual(req[1]["topologyKey"], "cloud.google.com/gce-topology-block")

    def test_topology_key_from_kueue_annotation_2_6(self):
        ann = {"kueue.x-k8s.io/podset-required-topology": "cloud.google.com/gce-topology-block"}
        r = mutate(pod(native=(0, 0), annotations=ann))
        t = r.obj["spec"]["affinity"]["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        self.assertEqual(t[0]["topologyKey"], "cloud.google.com/gce-topology-block")
        ann = {"kueue.x-k8s.io/podset-required-topology": "kubernetes.io/hostname"}
        r = mutate(pod(native=(0, 0), annotations=ann))
        t = r.obj["spec"]["affinity"]["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        self.assertEqual(t[0]["topologyKey"], "cloud.google.com/gke-nodepool")


class Env(unittest.TestCase):
    def test_device_plugin_and_name_2_7_7(self):
        env = mutate(pod(native=(0, 0))).env()
        self.assertEqual(env["TPU_DEVICE_PLUGIN_HOST_IP"], {"fieldRef": {"fieldPath": "status.hostIP"}})
        self.assertEqual(env["TPU_DEVICE_PLUGIN_ADDR"], "$(TPU_DEVICE_PLUGIN_HOST_IP):2112")
        self.assertEqual(env["TPU_NAME"], "tpu-group-0")

    def test_default_worker_id_replaced_in_place_D5(self):
        r = mutate(pod(native=(0, 3), env=[{"name": "TPU_WORKER_ID", "value": "0"},
                                           {"name": "X", "value": "y"}]))
        self.assertIn({"op": "replace", "path": "/spec/containers/0/env/0",
                       "value": {"name": "TPU_WORKER_ID", "value": "3"}}, r.ops())
        self.assertEqual(r.env()["TPU_WORKER_ID"], "3")

    def test_user_worker_id_kept_2_7_6(self):
        r = mutate(pod(native=(0, 3), env=[{"name": "TPU_WORKER_ID", "value": "7"}]))
        self.assertEqual(r.env()["TPU_WORKER_ID"], "7")

    def test_localhost_hostnames_replaced_D5(self):
        r = mutate(pod(native=(0, 1), env=[{"name": "TPU_WORKER_HOSTNAMES", "value": "localhost"}]))
        self.assertEqual(len(r.env()["TPU_WORKER_HOSTNAMES"].split(",")), 4)

    def test_user_hostnames_kept_and_used_by_torch_2_7_8(self):
        r = mutate(pod(native=(0, 1), env=[{"name": "TPU_WORKER_HOSTNAMES", "value": "a,b"}]))
        env = r.env()
        self.assertEqual(env["TPU_WORKER_HOSTNAMES"], "a,b")
        addrs = env["TORCH_TPU_SLICEBUILDER_ADDRESSES"].split(",")
        self.assertEqual(addrs, ["a:%d" % p for p in range(8471, 8479)] +
                         ["b:%d" % p for p in range(8471, 8479)])

    def test_empty_entry_replaced_not_duplicated_D5(self):
        r = mutate(pod(native=(0, 0), env=[{"name": "TPU_NAME", "value": ""}]))
        self.assertEqual(r.env()["TPU_NAME"], "tpu-group-0")

    def test_valuefrom_counts_as_empty_2_7_1(self):
        vf = {"name": "TPU_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}
        r = mutate(pod(native=(0, 0), env=[vf]))
        self.assertEqual(r.env()["TPU_NAME"], "tpu-group-0")
        hip = {"name": "TPU_DEVICE_PLUGIN_HOST_IP", "value": "10.0.0.1"}
        r = mutate(pod(native=(0, 0), env=[hip]))
        self.assertEqual(r.env()["TPU_DEVICE_PLUGIN_HOST_IP"], "10.0.0.1")

    def test_megascale_2_7_4(self):
        ms = [{"name": "MEGASCALE_NUM_SLICES", "value": "2"}]
        env = mutate(pod(native=(1, 0), env=ms)).env()
        self.assertEqual(env["MEGASCALE_SLICE_ID"], "1")
        self.assertEqual(env["MEGASCALE_COORDINATOR_ADDRESS"], "tpu-group-0-0.rc-headless")
        self.assertEqual(env["MEGASCALE_PORT"], "8081")
        # single-host groups get them too
        env = mutate(pod(native=(1, 0), topo="2x2", env=ms)).env()
        self.assertEqual(env["MEGASCALE_SLICE_ID"], "1")
        # not without MEGASCALE_NUM_SLICES
        self.assertNotIn("MEGASCALE_SLICE_ID", mutate(pod(native=(1, 0))).env())
        # user values kept
        env = mutate(pod(native=(1, 0), env=ms + [{"name": "MEGASCALE_PORT", "value": "9"}])).env()
        self.assertEqual(env["MEGASCALE_PORT"], "9")

    def test_tpu7x_megascale_per_container(self):
        ms = [{"name": "MEGASCALE_NUM_SLICES", "value": "2"}]
        r = mutate(pod(native=(0, 0), accel="tpu7x", topo="2x2x2", chips="2", ncont=2, env=ms))
        self.assertEqual(r.env(0)["MEGASCALE_COORDINATOR_ADDRESS"], "tpu-group-0-0.rc-headless:8081")
        self.assertEqual(r.env(0)["MEGASCALE_PORT"], "8081")
        self.assertEqual(r.env(1)["MEGASCALE_PORT"], "8082")


class Tpu7x(unittest.TestCase):
    def test_multi_host_multi_container_2_7_5(self):
        r = mutate(pod(cluster="c7", native=(0, 1), accel="tpu7x", topo="2x2x2", chips="2", ncont=2))
        e0, e1 = r.env(0), r.env(1)
        self.assertEqual((e0["TPU_WORKER_ID"], e1["TPU_WORKER_ID"]), ("2", "3"))
        self.assertEqual((e0["TPU_PROCESS_PORT"], e1["TPU_PROCESS_PORT"]), ("8471", "8472"))
        want = ",".join("tpu-group-0-%d.c7-headless:%d" % (h, p) for h in (0, 1) for p in (8471, 8472))
        self.assertEqual(e0["TPU_PROCESS_ADDRESSES"], want)
        self.assertEqual(e1["TPU_PROCESS_ADDRESSES"], want)
        self.assertEqual(e0["TORCH_TPU_TOPOLOGY"], "2,2,2,2")
        torch = e0["TORCH_TPU_SLICEBUILDER_ADDRESSES"].split(",")
        self.assertEqual(len(torch), 16)  # 8 devices per 4-chip host
        self.assertEqual(e0["TORCH_TPU_SLICEBUILDER_ADDRESSES"], e1["TORCH_TPU_SLICEBUILDER_ADDRESSES"])
        self.assertEqual(r.obj["spec"]["hostname"], "tpu-group-0-1")

    def test_localhost_process_addresses_replaced_D5(self):
        env = [{"name": "TPU_PROCESS_ADDRESSES", "value": "localhost:8471"}]
        r = mutate(pod(native=(0, 0), accel="tpu7x", topo="2x2x2", chips="4", env=env))
        self.assertNotIn("localhost", r.env()["TPU_PROCESS_ADDRESSES"])

    def test_single_host_single_container_no_process_vars(self):
        env = mutate(pod(native=(0, 0), accel="tpu7x", topo="2x2x1", chips="4")).env()
        self.assertNotIn("TPU_PROCESS_ADDRESSES", env)
        self.assertEqual(env["TORCH_TPU_TOPOLOGY"], "2,2,1,2")
        self.assertEqual(env["TORCH_TPU_SLICEBUILDER_ADDRESSES"],
                         ",".join("localhost:%d" % p for p in range(8471, 8479)))
        self.assertEqual(env["TPU_WORKER_ID"], "0")

    def test_single_host_two_containers_get_process_ports(self):
        # Deliberate decision on the reference's open question (docs/behaviour.md).
        r = mutate(pod(native=(0, 0), accel="tpu7x-standard-4t", topo="2x2x1", chips="2", ncont=2))
        for c in (0, 1):
            env = r.env(c)
            self.assertEqual(env["TPU_PROCESS_ADDRESSES"], "localhost:8471,localhost:8472")
            self.assertEqual(env["TPU_PROCESS_PORT"], str(8471 + c))
            self.assertEqual(env["TPU_WORKER_ID"], str(c))
            self.assertNotIn("TPU_WORKER_HOSTNAMES", env)


class Torch(unittest.TestCase):
    def test_v6e_single_host_2_7_8(self):
        env = mutate(pod(native=(0, 0), topo="2x4", chips="8")).env()
        self.assertEqual(env["TORCH_TPU_TOPOLOGY"], "2,4,1")
        self.assertEqual(env["TORCH_TPU_SLICEBUILDER_ADDRESSES"],
                         ",".join("localhost:%d" % p for p in range(8471, 8479)))

    def test_v4_multi_host(self):
        env = mutate(pod(native=(0, 0), accel="tpu-v4-podslice", topo="2x2x2")).env()
        self.assertEqual(env["TORCH_TPU_TOPOLOGY"], "2,2,2")
        self.assertEqual(len(env["TORCH_TPU_SLICEBUILDER_ADDRESSES"].split(",")), 8)

    def test_more_user_hosts_than_chips_denied(self):
        # Issue 10: 9 names on a v4 2x2x2 pod (8 chips) gave 0 addresses per
        # host, and the unterminated address buffer carried stale heap bytes
        # (an earlier request's) into TORCH_TPU_SLICEBUILDER_ADDRESSES.
        names = ",".join("h%d" % i for i in range(9))
        for accel in ("tpu-v4-podslice", "tpu7x"):
            p = pod(native=(0, 0), accel=accel, topo="2x2x2",
                    env=[{"name": "TPU_WORKER_HOSTNAMES", "value": names}])
            r = mutate(p)
            self.assertFalse(r.allowed, accel)
            for want in ("ray-worker", "TPU_WORKER_HOSTNAMES", "9 hosts", "2x2x2", "8 chips",
                         "TORCH_TPU_TOPOLOGY"):
                self.assertIn(want, r.message)
        # 8 names on 8 chips: one address each
        names = ",".join("h%d" % i for i in range(8))
        env = mutate(pod(native=(0, 0), accel="tpu-v4-podslice", topo="2x2x2",
                         env=[{"name": "TPU_WORKER_HOSTNAMES", "value": names}])).env()
        self.assertEqual(env["TORCH_TPU_SLICEBUILDER_ADDRESSES"],
                         ",".join("h%d:8471" % i for i in range(8)))

    def test_skipped_when_topology_set(self):
        env0 = [{"name": "TORCH_TPU_TOPOLOGY", "value": "1,1,1"}]
        env = mutate(pod(native=(0, 0), env=env0)).env()
        self.assertEqual(env["TORCH_TPU_TOPOLOGY"], "1,1,1")
        self.assertNotIn("TORCH_TPU_SLICEBUILDER_ADDRESSES", env)

    def test_subslice_topology_everywhere_D3(self):
        ann = {"cloud.google.com/gke-tpu-slice-topology": "2x4"}
        r = mutate(pod(native=(0, 1), topo="4x4", annotations=ann))
        env = r.env()
        self.assertEqual(env["TORCH_TPU_TOPOLOGY"], "2,4,1")
        self.assertEqual(len(env["TPU_WORKER_HOSTNAMES"].split(",")), 2)
        self.assertEqual(len(env["TORCH_TPU_SLICEBUILDER_ADDRESSES"].split(",")), 8)  # 4 per host

    def test_annotation_only_pod_mutated_D3(self):
        ann = {"cloud.google.com/gke-tpu-slice-topology": "2x4"}
        r = mutate(pod(native=(0, 0), topo=None, annotations=ann))
        self.assertTrue(r.allowed, r.message)
        self.assertEqual(r.env()["TORCH_TPU_TOPOLOGY"], "2,4,1")


class Subslice(unittest.TestCase):
    ANN = {"cloud.google.com/gke-tpu-slice-topology": "2x4"}

    def nodes(self, per_host_groups):
        out = []
        for i, g in enumerate(per_host_groups):
            out.append(node("n%d" % i, {
                "cloud.google.com/gke-tpu-accelerator": "tpu-v6e-slice",
                "cloud.google.com/gke-tpu-topology": "4x4",
                "cloud.google.com/gce-topology-subblock": g,
                "cloud.google.com/gke-nodepool": "pool"}))
        return out

    def test_affinity_key_from_nodes_4_4(self):
        r = mutate(pod(native=(0, 0), annotations=self.ANN), nodes=self.nodes(["a", "a", "b", "b"]))
        t = r.obj["spec"]["affinity"]["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        self.assertEqual(t[0]["topologyKey"], "cloud.google.com/gce-topology-subblock")

    def test_no_nodes_keeps_default_key(self):
        r = mutate(pod(native=(0, 0), annotations=self.ANN), nodes=[])
        t = r.obj["spec"]["affinity"]["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        self.assertEqual(t[0]["topologyKey"], "cloud.google.com/gke-nodepool")

    def test_nodes_but_no_fit_denied_D1(self):
        r = mutate(pod(native=(0, 0), annotations=self.ANN), nodes=self.nodes(["a", "a", "a"]))
        self.assertFalse(r.allowed)
        self.assertIn("could not find affinity rule to schedule 2 hosts", r.message)

    def test_managed_pods_skip_discovery_4_3(self):
        ann = dict(self.ANN, **{"cloud.google.com/skip-tpu-webhook-check": "true"})
        r = mutate(pod(native=(0, 0), annotations=ann), nodes=self.nodes(["a", "a", "a"]))
        self.assertTrue(r.allowed)


class Idempotent(unittest.TestCase):
    """D6: a second review of the mutated pod yields no patch."""

    def again(self, p, pods=None):
        r1 = mutate(p, pods=pods)
        self.assertTrue(r1.allowed, r1.message)
        self.assertIsNotNone(r1.patch)
        r2 = mutate(r1.obj, pods=pods)
        self.assertTrue(r2.allowed)
        self.assertIsNone(r2.patch, r2.patch)

    def test_native(self):
        self.again(pod(native=(0, 2)))

    def test_native_fallback_label(self):
        self.again(pod(native=(0, 2), replica_name=False))

    def test_legacy_keeps_its_assignment(self):
        state = [existing(host=0), existing(host=1)]
        self.again(pod(), pods=state)

    def test_legacy_with_user_worker_id(self):
        # A user TPU_WORKER_ID is kept (§2.7.6), so it cannot be the evidence
        # of a previous review: label + hostname are.
        user = [{"name": "TPU_WORKER_ID", "value": "7"}]
        self.again(pod(env=user), pods=[existing(host=0), existing(host=1)])
        self.again(pod(env=user, topo="2x2"), pods=[existing(replica=0, host=0)])

    def test_tpu7x_multicontainer_megascale(self):
        self.again(pod(native=(0, 1), accel="tpu7x", topo="2x2x2", chips="2", ncont=2,
                       env=[{"name": "MEGASCALE_NUM_SLICES", "value": "2"}]))
        self.again(pod(native=(0, 0), accel="tpu7x", topo="2x2x1", chips="2", ncont=2))

    def test_with_user_affinity_and_overrides(self):
        aff = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"a": "b"}}, "topologyKey": "kubernetes.io/hostname"}]}}
        self.again(pod(native=(0, 3), affinity=aff,
                       env=[{"name": "TPU_WORKER_ID", "value": "0"},
                            {"name": "TPU_WORKER_HOSTNAMES", "value": "localhost"}]))


def raycluster(groups, name="rc", ns="default", labels=None, head_env=None):
    head = {"rayStartParams": {}, "template": {"spec": {"containers": [
        {"name": "ray-head", "image": "rayproject/ray:2.52.0", "env": head_env or []}]}}}
    meta = {"name": name, "namespace": ns}
    if labels:
        meta["labels"] = labels
    return {"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": meta,
            "spec": {"headGroupSpec": head, "workerGroupSpecs": groups}}


def group(name="tpu-group", hosts=4, topo="4x4", accel="tpu-v6e-slice", chips="4", ncont=1,
          env=None, annotations=None, resources=None, containers=None, labels=None):
    if containers is None:
        containers = [container("ray-worker-%d" % i, chips, env) for i in range(ncont)]
    sel = {}
    if accel:
        sel["cloud.google.com/gke-tpu-accelerator"] = accel
    if topo:
        sel["cloud.google.com/gke-tpu-topology"] = topo
    tmpl = {"spec": {"containers": containers, "nodeSelector": sel}}
    meta = {}
    if annotations:
        meta["annotations"] = annotations
    if labels:
        meta["labels"] = labels
    if meta:
        tmpl["metadata"] = meta
    g = {"groupName": name, "replicas": 1, "minReplicas": 0, "maxReplicas": 1,
         "rayStartParams": {}, "template": tmpl}
    if resources:
        g["rayStartParams"]["resources"] = resources
    if hosts is not None:
        g["numOfHosts"] = hosts
    return g


def validate(rc, op="CREATE", nodes=None):
    return run(review_of(rc, kind="RayCluster", op=op), nodes=nodes)


class Validation(unittest.TestCase):
    def test_samples_admitted_3(self):
        files = sorted(glob.glob(os.path.join(SAMPLES, "*.yaml")))
        self.assertEqual(len(files), 5)
        for f in files:
            with self.subTest(sample=os.path.basename(f)):
                with open(f) as fh:
                    rc = yaml.safe_load(fh)
                r = validate(rc)
                self.assertTrue(r.allowed, r.message)
                self.assertEqual(r.warnings, [])

    def test_mismatch_denied_with_details_D1(self):
        r = validate(raycluster([group(hosts=2)]))
        self.assertFalse(r.allowed)
        m = r.message
        self.assertIn("Number of workers in worker group not equal to specified topology", m)
        for part in ('"tpu-group"', "4x4", "4 chips", "must be 4", "not 2", "numOfHosts: 4"):
            self.assertIn(part, m)

    def test_every_failing_group_reported_D1(self):
        rc = raycluster([group("a", hosts=2), group("cpu", containers=[container(chips=None)]),
                         group("b", hosts=0), group("c", topo=None)])
        r = validate(rc)
        self.assertFalse(r.allowed)
        for g in ('"a"', '"b"', '"c"'):
            self.assertIn("worker group %s" % g, r.message)
        self.assertNotIn('"cpu"', r.message)
        self.assertIn("numOfHosts is 0", r.message)
        self.assertIn("TPU topology not specified", r.message)

    def test_omitted_num_of_hosts_denied_D1(self):
        r = validate(raycluster([group(hosts=None)]))
        self.assertFalse(r.allowed)
        self.assertIn("numOfHosts is not set", r.message)

    def test_num_of_hosts_of_wrong_type_denied_D1(self):
        for bad, shown in (("2", '"2"'), (1.5, "1.5"), (-2, "negative")):
            g = group(hosts=bad)
            r = validate(raycluster([g]))
            self.assertFalse(r.allowed)
            self.assertIn("numOfHosts is " + shown, r.message)

    def test_group_without_containers_denied_D1(self):
        r = validate(raycluster([group(containers=[])]))
        self.assertFalse(r.allowed)
        self.assertIn("template.spec.containers", r.message)

    def test_cpu_and_gpu_groups_ignored_3(self):
        gpu = container(chips=None)
        gpu["resources"]["limits"]["nvidia.com/gpu"] = "1"
        r = validate(raycluster([group("gpu", hosts=1, containers=[gpu]), group()]))
        self.assertTrue(r.allowed)

    def test_update_validated_other_ops_admitted_D8(self):
        bad = raycluster([group(hosts=3)])
        self.assertFalse(validate(bad, op="UPDATE").allowed)
        self.assertTrue(validate(bad, op="DELETE").allowed)

    def test_chips_not_dividing_topology_denied_D8(self):
        r = validate(raycluster([group(hosts=5, topo="4x4", chips="3")]))
        self.assertFalse(r.allowed)
        self.assertIn("does not divide", r.message)
        r = validate(raycluster([group(hosts=1, topo="2x2", chips="8")]))
        self.assertFalse(r.allowed)

    def test_sum_of_containers_is_chips_per_host_2_3(self):
        r = validate(raycluster([group(hosts=2, accel="tpu7x", topo="2x2x2", chips="2", ncont=2)]))
        self.assertTrue(r.allowed, r.message)

    def test_warning_megascale_single_host_D8(self):
        env = [{"name": "MEGASCALE_NUM_SLICES", "value": "2"}]
        g = group(hosts=1, topo="2x2", env=env)
        g.update(replicas=2, maxReplicas=2)  # issue 24: the count must be the replicas
        r = validate(raycluster([g]))
        self.assertTrue(r.allowed, r.message)
        self.assertEqual(len(r.warnings), 1)
        self.assertIn("MEGASCALE_NUM_SLICES", r.warnings[0])

    def test_topology_shape_denied(self):
        # D8 warned; issue 24 denies it at the RayCluster: no VM of the
        # generation takes the topology, so the pods would never schedule.
        r = validate(raycluster([group(hosts=4, topo="2x2x4", accel="tpu-v6e-slice")]))
        self.assertFalse(r.allowed)
        for part in ("gke-tpu-topology", '"2x2x4", a 3-D topology', "v6e", "valid values: 1x1"):
            self.assertIn(part, r.message)
        r = validate(raycluster([group(hosts=4, topo="4x4", accel="tpu-v4-podslice")]))
        self.assertFalse(r.allowed)
        self.assertIn("2-D topology", r.message)

    def test_chips_the_topology_has_no_vm_for_denied(self):
        # Issue 24: 8-chip VMs make only the single-host 2x4, 1-chip VMs only
        # 1x1 / 1x1x1; such a group's pods would never schedule.
        for hosts, accel, topo, chips, part in (
                (2, "tpu-v6e-slice", "4x4", "8",
                 "v6e topology 4x4 takes 4 chips per pod (4 VMs of ct6e-standard-4t)"),
                (8, "tpu-v5-lite-podslice", "8x8", "8", "v5e topology 8x8 takes 4 chips"),
                (8, "tpu-v6e-slice", "2x4", "1", "or 8 (1 VM of ct6e-standard-8t)"),
                (4, "tpu-v5-lite-podslice", "2x2", "1", "v5e topology 2x2 takes 4 chips"),
                (8, "tpu7x", "2x2x2", "1", "tpu7x topology 2x2x2 takes 4 chips")):
            with self.subTest(shape=(accel, topo, chips)):
                r = validate(raycluster([group(hosts=hosts, topo=topo, accel=accel, chips=chips)]))
                self.assertFalse(r.allowed)
                for want in ('resources[google.com/tpu]', part, "valid values"):
                    self.assertIn(want, r.message)
        for hosts, topo, chips in ((1, "2x4", "8"), (2, "2x4", "4"), (1, "1x1", "1")):
            r = validate(raycluster([group(hosts=hosts, topo=topo, chips=chips)]))
            self.assertTrue(r.allowed, r.message)

    def test_warning_tpu7x_resource_per_chip_D8(self):
        g = group(hosts=2, accel="tpu7x", topo="2x2x2", chips="4", resources='"{\\"TPU\\": 8}"')
        r = validate(raycluster([g]))
        self.assertTrue(r.allowed)
        self.assertTrue(any("RAY_TPU_RESOURCE_PER_CHIP" in w for w in r.warnings), r.warnings)
        both = [{"name": "RAY_TPU_RESOURCE_PER_CHIP", "value": "2"}]
        g = group(hosts=2, accel="tpu7x", topo="2x2x2", chips="4", resources='{"TPU": 8}', env=both)
        r = validate(raycluster([g], head_env=both))
        self.assertEqual(r.warnings, [])

    def test_garbage_object_denied(self):
        r = run(review_of("not an object", kind="RayCluster"))
        self.assertFalse(r.allowed)


class ValidationSubslice(unittest.TestCase):
    ANN = {"cloud.google.com/gke-tpu-slice-topology": "2x4"}

    def nodes(self, key, groups):
        return [node("n%d" % i, {"cloud.google.com/gke-tpu-accelerator": "tpu-v6e-slice",
                                 "cloud.google.com/gke-tpu-topology": "4x4", key: g,
                                 "cloud.google.com/gke-nodepool": "pool"})
                for i, g in enumerate(groups)]

    def test_parent_topology_required_3_3(self):
        r = validate(raycluster([group(hosts=2, topo=None, annotations=self.ANN)]))
        self.assertFalse(r.allowed)
        self.assertIn("must specify parent topology", r.message)

    def test_child_not_smaller_3_3(self):
        ann = {"cloud.google.com/gke-tpu-slice-topology": "4x8"}
        r = validate(raycluster([group(hosts=8, topo="4x4", annotations=ann)]))
        self.assertFalse(r.allowed)
        self.assertIn('subslice "4x8" is not smaller than parent "4x4"', r.message)

    def test_zero_nodes_warns_3_3(self):
        r = validate(raycluster([group(hosts=2, annotations=self.ANN)]), nodes=[])
        self.assertTrue(r.allowed)
        self.assertEqual(len(r.warnings), 1)
        self.assertIn("zero nodes", r.warnings[0])

    def test_pool_only_denied_3_3(self):
        nodes = [node("n%d" % i, {"cloud.google.com/gke-tpu-accelerator": "tpu-v6e-slice",
                                  "cloud.google.com/gke-tpu-topology": "4x4",
                                  "cloud.google.com/gke-nodepool": "pool"}) for i in range(4)]
        r = validate(raycluster([group(hosts=2, annotations=self.ANN)]), nodes=nodes)
        self.assertFalse(r.allowed)
        self.assertIn("without Dynamic Slicing", r.message)

    def test_ambiguous_denied_and_fit_admitted_4_2(self):
        key = "cloud.google.com/gce-topology-block"
        r = validate(raycluster([group(hosts=2, annotations=self.ANN)]),
                     nodes=self.nodes(key, ["a", "a", "a"]))
        self.assertFalse(r.allowed)
        self.assertIn("ambiguous subslice: could not find affinity rule to schedule 2 hosts", r.message)
        r = validate(raycluster([group(hosts=2, annotations=self.ANN)]),
                     nodes=self.nodes(key, ["a", "a", "b"]))
        self.assertTrue(r.allowed, r.message)

    def test_managed_bypass_4_3(self):
        key = "cloud.google.com/gce-topology-block"
        rc = raycluster([group(hosts=2, annotations=self.ANN)],
                        labels={"kueue.x-k8s.io/queue-name": "q"})
        r = validate(rc, nodes=self.nodes(key, ["a", "a", "a"]))
        self.assertTrue(r.allowed)
        self.assertEqual(r.warnings, [])


PATCH_MAX = 1024 * 1024  # WH_PATCH_MAX_BYTES (include/core/wh/decision.h)
MESSAGE_MAX = 16 * 1024  # WH_MESSAGE_MAX


class Hostile(unittest.TestCase):
    """Issue 10: reviews built to make the answer huge or not UTF-8."""

    def test_3mb_raycluster_answers_capped_warnings(self):
        # Issue 22: 8,000 single-host groups with two warnings each
        # (MEGASCALE_NUM_SLICES on one host; TPU=2x chips on tpu7x without
        # RAY_TPU_RESOURCE_PER_CHIP), 16,000 in all: the answer lists 50 and
        # says how many more there were.
        env = [{"name": "MEGASCALE_NUM_SLICES", "value": "1"}]  # the replicas (issue 24)
        groups = [group(name="g%d" % i, hosts=1, accel="tpu7x", topo="2x2x1", env=env,
                        resources='{"TPU": 8}') for i in range(8000)]
        rc = raycluster(groups)
        raw = json.dumps(review_of(rc, kind="RayCluster"))
        self.assertGreater(len(raw), 3000000)
        r = validate(rc)
        self.assertTrue(r.allowed, r.message[:300])
        self.assertEqual(len(r.warnings), 51, r.warnings[-3:])
        self.assertTrue(all("MEGASCALE" in w or "RAY_TPU_RESOURCE_PER_CHIP" in w
                            for w in r.warnings[:50]),
                        r.warnings[:50])
        self.assertIn('group "g0"', r.warnings[0])
        self.assertIn("and 15950 more warnings", r.warnings[50])
        self.assertLess(sum(len(w) for w in r.warnings), 7000)

    def test_amplifying_pod_denied_with_group_size_and_limit(self):
        # 1.9 KB in, 46 MB of patch out before the limit; and the same with
        # long names and one container.
        cases = [pod(native=(0, 5), accel="tpu7x", topo="16x32x64", chips="1", ncont=8),
                 pod(native=(0, 5), accel="tpu7x", topo="16x32x64", chips="8", group="g" * 50,
                     cluster="c" * 40)]
        for p in cases:
            raw = json.dumps(review_of(p)).encode()
            self.assertLess(len(raw), 3000)
            r = mutate(p)
            self.assertFalse(r.allowed)
            group = p["metadata"]["labels"]["ray.io/group"]
            for want in ('worker group "%s"' % group, "1048576-byte limit", "16x32x64",
                         "4096 hosts", "TORCH_TPU_TOPOLOGY"):
                self.assertIn(want, r.message)
            size = int(r.message.split("would be about ")[1].split(" ")[0])
            self.assertGreater(size, PATCH_MAX)

    def test_patch_over_the_limit_once_escaped_denied(self):
        # The patch's text is measured exactly, escapes included, as it is
        # written; the denial says how much it needed at least. The user's
        # own 4 hosts of 50,000 control characters: 16 TorchTPU addresses of
        # ~800 KB, ~4.8 MB as text (6 bytes each).
        hosts = ",".join(["\x01" * 50000] * 4)
        r = mutate(pod(native=(0, 1), env=[{"name": "TPU_WORKER_HOSTNAMES", "value": hosts}]))
        self.assertFalse(r.allowed)
        for want in ("the mutation patch is", "over the 1048576-byte limit",
                     'worker group "tpu-group"'):
            self.assertIn(want, r.message)
        self.assertNotIn("patch", r.response)
        size = int(r.message.split("the mutation patch is ")[1].split(" ")[0])
        self.assertGreater(size, PATCH_MAX)

    def test_value_over_the_room_left_denied_with_a_size_over_the_limit(self):
        # The user's 4 hosts of 100,000 letters: 16 TorchTPU addresses of
        # 1.6 MB do not fit in what is left of the patch before any operation
        # is written, so no operation measured its need; the denial still
        # names a size over the limit (as before the patch was written as text).
        hosts = ",".join(["a" * 100000] * 4)
        r = mutate(pod(native=(0, 1), env=[{"name": "TPU_WORKER_HOSTNAMES", "value": hosts}]))
        self.assertFalse(r.allowed)
        self.assertNotIn("patch", r.response)
        for want in ("over the 1048576-byte limit", 'worker group "tpu-group"',
                     "TORCH_TPU_TOPOLOGY"):
            self.assertIn(want, r.message)
        size = int(r.message.split("would be about ")[1].split(" ")[0])
        self.assertGreater(size, PATCH_MAX)

    def test_largest_slices_fit(self):
        # v5p-12288 (6,144 chips) and a 9,216-chip TPU7x slice stay under the limit.
        for accel, topo in (("tpu-v5p-slice", "16x16x24"), ("tpu7x", "16x16x36")):
            r = mutate(pod(native=(0, 5), accel=accel, topo=topo, chips="4"))
            self.assertTrue(r.allowed, r.message)
            self.assertLess(len(base64.b64decode(r.response["patch"])), PATCH_MAX)

    def test_thousand_failing_groups_denied(self):
        # Their problems passed the message limit: HTTP 400 "size limit exceeded".
        groups = [group("g%04d-%s" % (i, "x" * 50), hosts=3) for i in range(1000)]
        r = validate(raycluster(groups))
        self.assertFalse(r.allowed)
        self.assertLessEqual(len(r.message.encode()), MESSAGE_MAX)
        self.assertIn('worker group "g0000-', r.message)
        self.assertRegex(r.message, r"and \d+ more problems of 1000 in all")

    def test_answers_are_utf8_whatever_the_input(self):
        # Bytes that are not UTF-8 are written as U+FFFD, never echoed, and a
        # cut never splits a character ("%.64s" did).
        p = pod(native=(0, 0), topo="@TOPO@")
        p["metadata"]["generateName"] = "@NAME@"
        raw = json.dumps(review_of(p)).encode()
        raw = raw.replace(b"@TOPO@", ("é" * 40).encode())
        raw = raw.replace(b"@NAME@", b"bad\xff\xc3(")
        r = run(review_of(p), raw=raw)  # run() decodes the answer as strict UTF-8
        self.assertFalse(r.allowed)
        self.assertIn("bad\ufffd\ufffd(", r.message)
        self.assertIn("é" * 32, r.message)
        # the same in the uid echoed by every answer
        rv = review_of(pod(chips=None))
        raw = json.dumps(rv).encode().replace(W.UID.encode(), b"\x80uid\xed\xa0\x80")
        proc_out = W.run_raw(raw)
        self.assertEqual(proc_out["response"]["uid"], "\ufffduid\ufffd\ufffd\ufffd")


class DuplicateEnv(unittest.TestCase):
    """Issue 10: the webhook edited the first entry of a name, the kubelet uses
    the last, so a user's second entry hid the injected value. A TPU container
    with two entries of a name the webhook reads or writes is denied."""

    def test_duplicates_denied_naming_container_variable_fix(self):
        for name, v1, v2 in (("TPU_WORKER_HOSTNAMES", "", "localhost"),
                             ("TPU_WORKER_ID", "0", "0"),
                             ("MEGASCALE_SLICE_ID", "", "5"),
                             ("TORCH_TPU_TOPOLOGY", "1,1,1", "2,2,1"),
                             ("MEGASCALE_NUM_SLICES", "2", "2")):
            env = [{"name": "A", "value": "x"}, {"name": name, "value": v1},
                   {"name": "B", "value": "y"}, {"name": name, "value": v2}]
            for native in ((0, 1), None):
                with self.subTest(name=name, native=native):
                    r = mutate(pod(native=native, env=env), pods=[] if native is None else None)
                    self.assertFalse(r.allowed)
                    for part in ('container "ray-worker"', "%s twice" % name,
                                 "spec.containers[0].env[1] and env[3]",
                                 "keep one %s entry" % name, 'worker group "tpu-group"'):
                        self.assertIn(part, r.message)

    def test_raycluster_with_duplicates_denied(self):
        env = [{"name": "TPU_WORKER_ID", "value": "0"}, {"name": "TPU_WORKER_ID", "value": "1"}]
        r = validate(raycluster([group(hosts=4, env=env)]))
        self.assertFalse(r.allowed)
        for part in ('worker group "tpu-group"', 'container "ray-worker-0"', "TPU_WORKER_ID twice",
                     "template.spec.containers[0].env[0] and env[1]", "keep one TPU_WORKER_ID"):
            self.assertIn(part, r.message)

    def test_second_container_and_other_names(self):
        dup = [{"name": "TPU_NAME", "value": "a"}, {"name": "TPU_NAME", "value": "b"}]
        p = pod(native=(0, 0), accel="tpu7x", topo="2x2x1", chips="2", ncont=2)
        p["spec"]["containers"][1]["env"] = dup
        r = mutate(p)
        self.assertFalse(r.allowed)
        self.assertIn('container "ray-worker-1"', r.message)
        self.assertIn("spec.containers[1].env[0] and env[1]", r.message)
        # names the webhook neither reads nor writes may repeat, and so may
        # injected names in containers without TPUs
        env = [{"name": "PATH", "value": "/a"}, {"name": "PATH", "value": "/b"}]
        self.assertTrue(mutate(pod(native=(0, 0), env=env)).allowed)
        p = pod(native=(0, 0))
        p["spec"]["containers"].append(container("sidecar", None, dup))
        self.assertTrue(mutate(p).allowed)


class Contract(unittest.TestCase):
    def test_unreadable_input_exit_2(self):
        for raw in (b"", b"{", b"[]", b"null", b'{"kind":"Pod"}', b'{"request":5}',
                    b'{"kind":"AdmissionReview","request":{"uid":7}}', b"\xff\xfe\x00garbage"):
            with self.subTest(raw=raw):
                rc, err = run(None, raw=raw, expect_rc=2)
                self.assertEqual(len(err.strip().splitlines()), 1, err)

    def test_other_kinds_admitted(self):
        cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}
        r = run(review_of(cm))
        self.assertTrue(r.allowed)
        self.assertIsNone(r.patch)

    def test_uid_echoed_and_shape(self):
        rv = review_of(pod(native=(0, 0)), uid="abc-\"quoted\"-uid")
        r = run(rv)
        self.assertEqual(r.response["uid"], 'abc-"quoted"-uid')

    def test_fixture_reviews(self):
        for f in sorted(glob.glob(os.path.join(FIXTURES, "reviews", "*.json"))):
            with self.subTest(fixture=os.path.basename(f)):
                with open(f) as fh:
                    r = run(json.load(fh))
                self.assertTrue(r.allowed, r.message)

    def test_golden_patches(self):
        """Byte-exact op sequences, checked by hand against
        docs/internals/reference-behaviour.md §2."""
        for f in sorted(glob.glob(os.path.join(FIXTURES, "golden", "*.review.json"))):
            with self.subTest(fixture=os.path.basename(f)):
                with open(f) as fh:
                    r = run(json.load(fh))
                with open(f.replace(".review.json", ".patch.json")) as fh:
                    want = json.load(fh)
                self.assertEqual(r.patch, want)


def main():
    global SAMPLES, FIXTURES
    args, rest = W.parse_args("--samples", "--fixtures")
    SAMPLES = args.samples
    FIXTURES = args.fixtures
    W.unittest_main(rest)


if __name__ == "__main__":
    main()
