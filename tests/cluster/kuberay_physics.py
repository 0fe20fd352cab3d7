"""The physics of KubeRay TPU worker pods as the API server stored them
(docs/behaviour.md, "How it decides"; tests/engine/physics.py for the
other kinds), judged over a whole RayCluster:

- a slice is one replica of a worker group: KubeRay's own
  ray.io/worker-group-replica-name when it indexes multi-host groups, else
  the replicaIndex label the webhook gives each legacy pod;
- ids dense per slice: TPU_WORKER_ID = host x TPU containers + container,
  0 .. hosts x containers - 1, each once;
- multi-host: every pod has hostname and subdomain <cluster>-headless,
  one TPU_WORKER_HOSTNAMES per slice whose entry i is worker i's
  hostname.subdomain, and the headless Service exists;
- TPU_NAME one per slice, distinct across the group's slices;
- TORCH_TPU_TOPOLOGY the topology with commas (Z=1 in 2-D, a 4th field 2
  on TPU7x); TORCH_TPU_SLICEBUILDER_ADDRESSES one entry per device,
  host-major, ports from 8471 (localhost on one host);
- TPU7x with several processes per slice: TPU_PROCESS_ADDRESSES one entry
  per TPU container, host-major, port 8471 + container, and
  TPU_PROCESS_PORT the container's;
- MEGASCALE_*: in a group that asks for it, MEGASCALE_NUM_SLICES the
  group's slice count, MEGASCALE_SLICE_ID dense over the slices, one
  coordinator: slice 0's worker 0;
- no env name twice in any container; distinct ports per pod
  (physics.check_ports)."""

import physics

TPU7X = "tpu7x"


def labels(pod):
    return pod["metadata"].get("labels") or {}


def is_tpu(pod):
    return bool(physics.tpu_containers(pod))


def slice_key(pod):
    lb = labels(pod)
    rep = lb.get("ray.io/worker-group-replica-name") or lb.get("replicaIndex")
    assert rep, "pod %s has no replica label (ray.io/worker-group-replica-name or replicaIndex): %s" \
        % (pod["metadata"].get("name"), lb)
    return lb["ray.io/cluster"], lb["ray.io/group"], rep


def chips(c):
    r = c.get("resources") or {}
    v = (r.get("limits") or {}).get("google.com/tpu") or (r.get("requests") or {}).get("google.com/tpu")
    return int(v)


def topology_of(pod):
    ann = pod["metadata"].get("annotations") or {}
    sel = pod["spec"].get("nodeSelector") or {}
    return (ann.get("cloud.google.com/gke-tpu-slice-topology") or sel["cloud.google.com/gke-tpu-topology"],
            sel.get("cloud.google.com/gke-tpu-accelerator", ""))


def torch_topology(topo, accel):
    dims = topo.split("x")
    if len(dims) == 2:
        dims.append("1")
    if accel == TPU7X:
        dims.append("2")
    return ",".join(dims)


def env(c):
    return physics.env_of(c)


def check_cluster(worker_pods, headless_services=()):
    """Raises AssertionError naming the first broken rule over the stored
    worker pods of one or more RayClusters (non-TPU pods are only checked
    for duplicate env names)."""
    for p in worker_pods:
        for c in p["spec"]["containers"] + (p["spec"].get("initContainers") or []):
            env(c)  # no name twice
    tpu = [p for p in worker_pods if is_tpu(p)]
    slices = {}
    for p in tpu:
        slices.setdefault(slice_key(p), []).append(p)
    groups = {}
    for key, sp in slices.items():
        check_slice(key, sp, headless_services)
        groups.setdefault(key[:2], []).append(key)
    for g, keys in groups.items():
        check_group(g, keys, slices)
    for p in tpu:
        physics.check_ports(p)


def check_slice(key, sp, headless_services):
    cs0 = physics.tpu_containers(sp[0])
    n_c = len(cs0)
    topo, accel = topology_of(sp[0])
    dev = 2 if accel == TPU7X else 1
    per_host = sum(chips(c) for c in cs0) * dev
    by_host = {}
    ids = []
    for p in sp:
        cs = physics.tpu_containers(p)
        assert len(cs) == n_c, "slice %s: pods with %d and %d TPU containers" % (key, n_c, len(cs))
        first = int(env(cs[0])["TPU_WORKER_ID"])
        assert first % n_c == 0, "slice %s: pod %s first TPU container has id %d" % (key, p["metadata"].get("name"), first)
        for k, c in enumerate(cs):
            wid = int(env(c)["TPU_WORKER_ID"])
            assert wid == first + k, "slice %s: container %s id %d, want %d" % (key, c["name"], wid, first + k)
            ids.append(wid)
        by_host[first // n_c] = p
    assert sorted(ids) == list(range(len(sp) * n_c)), "slice %s: ids %s" % (key, sorted(ids))
    envs = [env(c) for p in sp for c in physics.tpu_containers(p)]
    if len(sp) > 1:
        cluster = key[0]
        for p in sp:
            assert p["spec"].get("subdomain") == cluster + "-headless", \
                "slice %s: pod %s subdomain %r" % (key, p["metadata"].get("name"), p["spec"].get("subdomain"))
            assert p["spec"].get("hostname"), "slice %s: pod %s has no hostname" % (key, p["metadata"].get("name"))
        if headless_services is not None:
            assert cluster + "-headless" in headless_services, \
                "no Service %s-headless: the peers' names cannot resolve" % cluster
        lists = {e.get("TPU_WORKER_HOSTNAMES") for e in envs}
        assert len(lists) == 1, "slice %s has %d peer lists: %s" % (key, len(lists), lists)
        hosts = lists.pop().split(",")
        want = [physics.fqdn(by_host[h]) for h in range(len(sp))]
        assert hosts == want, "slice %s: TPU_WORKER_HOSTNAMES %s, hosts by id %s" % (key, hosts, want)
    else:
        hosts = ["localhost"]
        assert {e.get("TPU_WORKER_HOSTNAMES") for e in envs} <= {None, "localhost"}, \
            "single-host slice %s: TPU_WORKER_HOSTNAMES %s" % (key, {e.get("TPU_WORKER_HOSTNAMES") for e in envs})
    names = {e.get("TPU_NAME") for e in envs}
    assert len(names) == 1 and None not in names, "slice %s: TPU_NAME %s" % (key, names)
    tt = torch_topology(topo, accel)
    sb = ",".join("%s:%d" % (h, 8471 + d) for h in hosts for d in range(per_host))
    for p in sp:
        for k, c in enumerate(physics.tpu_containers(p)):
            e = env(c)
            assert e.get("TORCH_TPU_TOPOLOGY") == tt, \
                "slice %s container %s: TORCH_TPU_TOPOLOGY %r, want %r" % (key, c["name"], e.get("TORCH_TPU_TOPOLOGY"), tt)
            assert e.get("TORCH_TPU_SLICEBUILDER_ADDRESSES") == sb, \
                "slice %s container %s: TORCH_TPU_SLICEBUILDER_ADDRESSES %r, want %r" \
                % (key, c["name"], e.get("TORCH_TPU_SLICEBUILDER_ADDRESSES"), sb)
            if accel == TPU7X and len(hosts) * n_c > 1:
                pa = ",".join("%s:%d" % (h, 8471 + j) for h in hosts for j in range(n_c))
                assert e.get("TPU_PROCESS_ADDRESSES") == pa, \
                    "slice %s container %s: TPU_PROCESS_ADDRESSES %r, want %r" % (key, c["name"], e.get("TPU_PROCESS_ADDRESSES"), pa)
                assert e.get("TPU_PROCESS_PORT") == str(8471 + k), \
                    "slice %s container %s: TPU_PROCESS_PORT %r" % (key, c["name"], e.get("TPU_PROCESS_PORT"))


def check_group(group, keys, slices):
    names = [env(physics.tpu_containers(slices[k][0])[0]).get("TPU_NAME") for k in keys]
    assert len(set(names)) == len(names), "group %s: slices share a TPU_NAME: %s" % (group, names)
    envs = {k: [env(c) for p in slices[k] for c in physics.tpu_containers(p)] for k in keys}
    counts = {e.get("MEGASCALE_NUM_SLICES") for k in keys for e in envs[k]}
    if counts in ({None}, {""}):
        return
    assert counts == {str(len(keys))}, "group %s: MEGASCALE_NUM_SLICES %s over %d slices" % (group, counts, len(keys))
    sid = {}
    for k in keys:
        s = {e.get("MEGASCALE_SLICE_ID") for e in envs[k]}
        assert len(s) == 1, "group %s slice %s: MEGASCALE_SLICE_ID %s" % (group, k, s)
        sid[s.pop()] = k
    assert sorted(sid) == [str(i) for i in range(len(keys))], "group %s: MEGASCALE_SLICE_ID %s" % (group, sorted(sid))
    coord = {e.get("MEGASCALE_COORDINATOR_ADDRESS") for k in keys for e in envs[k]}
    assert len(coord) == 1, "group %s: coordinators %s" % (group, coord)
    host = coord.pop().partition(":")[0]
    s0 = slices[sid["0"]]
    w0 = [p for p in s0 if env(physics.tpu_containers(p)[0])["TPU_WORKER_ID"] == "0"][0]
    want = physics.fqdn(w0) if len(s0) > 1 or len(keys) > 1 else "localhost"
    assert host == want, "group %s: MEGASCALE_COORDINATOR_ADDRESS host %s, slice 0 worker 0 is %s" % (group, host, want)
