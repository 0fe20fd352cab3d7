"""The physics of a mutated workload, judged over all its pods (issue 24,
item 7; docs/workloads.md, "One world"): not one byte layout, but what
libtpu, MEGASCALE and torchrun need of the whole set of pods.

check_slices(pods) takes the pods as the webhook left them (each a Pod
object whose TPU containers carry their env) and raises AssertionError
naming the first broken rule (check_slice_names: one TPU_NAME per slice,
distinct between slices):
- worker ids are dense per slice (0..hosts x TPU containers - 1);
- one peer list per slice, whose entry i is worker i's hostname.subdomain
  (an LWS subgroup is a slice);
- the torchrun world (PET_*) is the set of slices MEGASCALE joins: all the
  slices that carry MEGASCALE_NUM_SLICES, else each slice alone; ranks are
  dense over that world and PET_MASTER_ADDR is its first host (the
  MEGASCALE coordinator's host when MEGASCALE is on);
- the processes of one pod (one network) bind distinct MEGASCALE and TPU
  process ports, and the coordinator's port is slice 0 worker 0's.
Env fieldRefs to the pod's own labels and annotations are resolved first,
as the kubelet does."""

import copy
import re

JS = "jobset.sigs.k8s.io/"


def tpu_containers(pod):
    return [c for c in pod["spec"]["containers"]
            if "google.com/tpu" in str(c.get("resources", {}))]


def env_of(c):
    out = {}
    for e in c.get("env") or []:
        assert e["name"] not in out, "%s twice in %s" % (e["name"], c["name"])
        out[e["name"]] = e.get("value", e.get("valueFrom"))
    return out


def meta(pod, key):
    m = pod["metadata"]
    return (m.get("labels") or {}).get(key, (m.get("annotations") or {}).get(key))


def slice_of(pod):
    """(replicated job, slice index) of a pod; an LWS group's subgroup (LWS's
    subgroup-index label: each subgroup is a slice); one slice for other
    kinds."""
    rj = meta(pod, JS + "replicatedjob-name")
    if rj is not None:
        return rj, int(meta(pod, JS + "job-index"))
    return (meta(pod, "leaderworkerset.sigs.k8s.io/group-index") or "",
            int(meta(pod, "leaderworkerset.sigs.k8s.io/subgroup-index") or 0))


def check_slice_names(pods):
    """TPU_NAME names the slice (Ray's TPU slice resource): one value on
    every TPU container of a slice, another on each other slice."""
    names = {}
    for p in pods:
        for c in tpu_containers(p):
            names.setdefault(slice_of(p), set()).add(env_of(c).get("TPU_NAME"))
    for key, n in names.items():
        assert len(n) == 1 and None not in n, "slice %s has TPU_NAME %s" % (key, sorted(map(str, n)))
    seen = {}
    for key, n in names.items():
        name = next(iter(n))
        assert name not in seen, "slices %s and %s share TPU_NAME %s" % (seen.get(name), key, name)
        seen[name] = key


def fqdn(pod):
    return "%s.%s" % (pod["spec"]["hostname"], pod["spec"]["subdomain"])


def resolve_field_refs(pod):
    """The pod with each env valueFrom.fieldRef to one of its own labels or
    annotations replaced by the value, as the kubelet resolves it at start
    (GKE's TPU_WORKER_ID fieldRef to the completion index, xpk's
    MEGASCALE_NUM_SLICES fieldRef to replicatedjob-replicas); others stay."""
    pod = copy.deepcopy(pod)
    md = pod["metadata"]
    for c in pod["spec"]["containers"]:
        for e in c.get("env") or []:
            path = ((e.get("valueFrom") or {}).get("fieldRef") or {}).get("fieldPath", "")
            m = re.match(r"^metadata\.(labels|annotations)\['([^']+)'\]$", path)
            v = m and (md.get(m.group(1)) or {}).get(m.group(2))
            if v is not None and m:
                del e["valueFrom"]
                e["value"] = v
    return pod


def check_slices(pods):
    pods = [resolve_field_refs(p) for p in pods]
    slices = {}
    for p in pods:
        slices.setdefault(slice_of(p), []).append(p)
    worker0 = {}
    for key, sp in slices.items():
        n = len(tpu_containers(sp[0]))
        ids, lists, by_id = set(), set(), {}
        for p in sp:
            for ci, c in enumerate(tpu_containers(p)):
                e = env_of(c)
                wid = int(e["TPU_WORKER_ID"])
                assert wid not in ids, "worker id %d twice in slice %s" % (wid, key)
                ids.add(wid)
                lists.add(e["TPU_WORKER_HOSTNAMES"])
                by_id[wid] = p
        assert ids == set(range(len(sp) * n)), "ids of slice %s: %s" % (key, sorted(ids))
        assert len(lists) == 1, "slice %s has %d peer lists" % (key, len(lists))
        peers = lists.pop().split(",")
        if len(sp) == 1:
            assert peers == ["localhost"], peers
        else:
            want = [fqdn(by_id[i * n]) for i in range(len(sp))]
            assert peers == want, "slice %s peers %s, hosts %s" % (key, peers, want)
        worker0[key] = by_id[0]
    check_world(pods, slices, worker0)
    for p in pods:
        check_ports(p)


def count_of(e):
    """MEGASCALE_NUM_SLICES of an env: its text, "valueFrom", or None."""
    v = e.get("MEGASCALE_NUM_SLICES")
    return "valueFrom" if isinstance(v, dict) else v


def check_world(pods, slices, worker0):
    """torchrun world = MEGASCALE world."""
    worlds = {}
    for key, sp in slices.items():
        ms = {count_of(env_of(c)) for p in sp for c in tpu_containers(p)}
        assert len(ms) == 1, "slice %s: MEGASCALE_NUM_SLICES %s differ" % (key, ms)
        ms = ms.pop()
        wkey = (key[0],) if ms not in (None, "") else key
        worlds.setdefault(wkey, []).append(key)
    for wkey, keys in worlds.items():
        members = [(c, p) for k in keys for p in slices[k] for c in tpu_containers(p)]
        envs = [env_of(c) for c, _ in members]
        ranks = sorted(int(e["PET_NODE_RANK"]) for e in envs)
        assert ranks == list(range(len(members))), "world %s ranks %s" % (wkey, ranks)
        assert {e["PET_NNODES"] for e in envs} == {str(len(members))}, wkey
        masters = {e["PET_MASTER_ADDR"] for e in envs}
        assert len(masters) == 1, "world %s masters %s" % (wkey, masters)
        first = worker0[min(keys)]
        master = masters.pop()
        assert master == (fqdn(first) if len(slices[min(keys)]) > 1 or len(keys) > 1 else "localhost"), \
            (wkey, master)
        if len(wkey) == 1:  # MEGASCALE on: its world, its coordinator
            assert {count_of(e) for e in envs} <= {str(len(keys)), "valueFrom"}, wkey
            for k in keys:
                assert {env_of(c)["MEGASCALE_SLICE_ID"] for p in slices[k]
                        for c in tpu_containers(p)} == {str(k[1])}, k
            coord = {e["MEGASCALE_COORDINATOR_ADDRESS"] for e in envs}
            assert len(coord) == 1, coord
            host, _, port = coord.pop().partition(":")
            assert host == master, (host, master)
            c0 = env_of(tpu_containers(first)[0])
            if port:
                assert port == c0["MEGASCALE_PORT"], (port, c0.get("MEGASCALE_PORT"))
            else:
                assert len(tpu_containers(first)) == 1, "several libtpu per pod, no coordinator port"
        else:
            for e in envs:
                assert "MEGASCALE_SLICE_ID" not in e, wkey


def check_ports(pod):
    """One network per pod: each libtpu process its own ports."""
    cs = [env_of(c) for c in tpu_containers(pod)]
    if len(cs) < 2:
        return
    for var in ("MEGASCALE_PORT", "TPU_PROCESS_PORT"):
        ports = [e.get(var) for e in cs]
        if var == "MEGASCALE_PORT" and all(count_of(e) in (None, "") for e in cs):
            continue
        assert None not in ports, "%s missing in a container of %s" % (var, pod["spec"].get("hostname"))
        assert len(set(ports)) == len(ports), "%s %s shared in one pod" % (var, ports)
