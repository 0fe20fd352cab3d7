#!/usr/bin/python3
"""Integration tests of `tpu-webhook render`, `check` and YAML `review`.

usage: test_render.py BINARY SAMPLES_DIR FIXTURES_DIR [unittest arguments]

Renders every KubeRay TPU sample and our own manifests with native (1.6)
and legacy (1.4) KubeRay, and checks what must hold for TPU workloads to
start: pod counts, TPU_WORKER_ID 0..n-1 per replica, one TPU_NAME and one
peer list per replica, different ones across replicas. The expected numbers
are computed here from the manifest, independently of the C code.
"""
import glob
import json
import os
import subprocess
import sys
import shutil
import tempfile
import time
import unittest

import yaml

BINARY, SAMPLES, FIXTURES = sys.argv[1:4]
MANIFESTS = os.path.join(FIXTURES, "manifests")
BAD = os.path.join(FIXTURES, "bad-manifests")
FAILURES = []


def run(args, stdin=None, timeout=120):
    p = subprocess.run([BINARY] + args, input=stdin, capture_output=True, timeout=timeout)
    return p.returncode, p.stdout.decode(), p.stderr.decode()


def check(cond, what):
    if not cond:
        FAILURES.append(what)
        print("FAIL:", what)


def env_of(container):
    env = container.get("env") or []
    names = [e["name"] for e in env]
    dups = sorted({n for n in names if names.count(n) > 1 and n.startswith(("TPU_", "MEGASCALE_"))})
    assert not dups, "duplicate TPU env %s" % dups
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in env}


def tpu_chips(c):
    res = c.get("resources") or {}
    for kind in ("requests", "limits"):
        v = (res.get(kind) or {}).get("google.com/tpu")
        if v not in (None, "0", 0):
            return int(v)
    return 0


def cluster_of(obj):
    kind = obj["kind"]
    if kind == "RayCluster":
        return obj["spec"], obj["metadata"].get("namespace", "default")
    field = "rayClusterSpec" if kind == "RayJob" else "rayClusterConfig"
    return obj["spec"][field], obj["metadata"].get("namespace", "default")


def desired(group):
    lo = group.get("minReplicas", 0)
    hi = group.get("maxReplicas", 2 ** 31 - 1)
    r = group.get("replicas", lo)
    r = max(lo, min(hi, r))
    return r, max(1, group.get("numOfHosts", 1))


def verify_render(path, version):
    """Render path with KubeRay version; check every invariant."""
    label = "%s (KubeRay %s)" % (os.path.basename(path), version)
    rc, out, err = run(["render", "--output", "json", "--kuberay-version", version, path])
    check(rc == 0, "%s: render rc %d: %s" % (label, rc, err))
    if rc:
        return
    pods = json.loads(out)["items"]
    with open(path) as f:
        objs = [o for o in yaml.safe_load_all(f)
                if o and o.get("kind") in ("RayCluster", "RayJob", "RayService")]
    expected_total = 0
    for obj in objs:
        spec, ns = cluster_of(obj)
        for g in spec.get("workerGroupSpecs") or []:
            replicas, hosts = desired(g)
            expected_total += replicas * hosts
            gname = g["groupName"]
            mine = [p for p in pods if p["metadata"]["labels"]["ray.io/group"] == gname]
            check(len(mine) == replicas * hosts,
                  "%s: group %s has %d pods, want %d" % (label, gname, len(mine), replicas * hosts))
            tmpl = g["template"]["spec"]
            tpu_containers = [c for c in tmpl["containers"] if tpu_chips(c)]
            for p in mine:
                check(p["metadata"]["namespace"] == ns, "%s: namespace %s" % (label, ns))
                check(p["metadata"]["generateName"].endswith("-worker-") and
                      "name" not in p["metadata"], "%s: generateName only" % label)
                labels = p["metadata"]["labels"]
                check(labels["app.kubernetes.io/created-by"] == "kuberay-operator" and
                      labels["ray.io/node-type"] == "worker", "%s: KubeRay labels" % label)
                check(p["spec"]["initContainers"][-1]["name"] == "wait-gcs-ready",
                      "%s: wait-gcs-ready" % label)
                if obj["kind"] == "RayService":
                    check(labels.get("ray.io/serve") == "true", "%s: ray.io/serve" % label)
                    check("RAY_SERVE_KV_TIMEOUT_S" in env_of(p["spec"]["containers"][0]),
                          "%s: RayService env" % label)
            if not tpu_containers:
                for p in mine:
                    check("TPU_WORKER_ID" not in env_of(p["spec"]["containers"][0]),
                          "%s: non-TPU group %s mutated" % (label, gname))
                continue
            verify_slices(label, obj, spec, g, mine, replicas, hosts, version)
    check(len(pods) == expected_total, "%s: %d pods, want %d" % (label, len(pods), expected_total))

    # The default YAML output is the same pods (PyYAML reads our emitter).
    rc, yout, err = run(["render", "--kuberay-version", version, path])
    check(rc == 0, "%s: YAML render rc %d" % (label, rc))
    ydocs = [d for d in yaml.safe_load_all(yout) if d]
    check(ydocs == pods, "%s: YAML output differs from JSON output" % label)


def verify_slices(label, obj, spec, g, mine, replicas, hosts, version):
    gname = g["groupName"]
    sel = g["template"]["spec"].get("nodeSelector") or {}
    tpu7x = sel.get("cloud.google.com/gke-tpu-accelerator", "").startswith("tpu7x")
    ntpu = len([c for c in g["template"]["spec"]["containers"] if tpu_chips(c)])
    by_name = {}
    for p in mine:
        envs = [env_of(c) for c in p["spec"]["containers"] if tpu_chips(c)]
        by_name.setdefault(envs[0]["TPU_NAME"], []).append((p, envs))
    check(len(by_name) == replicas, "%s: %d distinct TPU_NAMEs, want %d replicas"
          % (label, len(by_name), replicas))
    check(sorted(by_name) == sorted("%s-%d" % (gname, r) for r in range(replicas)),
          "%s: TPU_NAMEs %s" % (label, sorted(by_name)))
    peer_lists = set()
    for tname, members in by_name.items():
        r = int(tname.rsplit("-", 1)[1])
        check(len(members) == hosts, "%s: replica %s has %d pods, want %d"
              % (label, tname, len(members), hosts))
        ids = []
        hostnames = set()
        procs = set()
        for p, envs in members:
            for e in envs:
                check(e["TPU_NAME"] == tname, "%s: TPU_NAME differs inside a container" % label)
                ids.append(int(e["TPU_WORKER_ID"]))
                hostnames.add(e.get("TPU_WORKER_HOSTNAMES"))
                procs.add(e.get("TPU_PROCESS_ADDRESSES"))
                if "MEGASCALE_NUM_SLICES" in e:
                    check(e["MEGASCALE_SLICE_ID"] == str(r), "%s: MEGASCALE_SLICE_ID" % label)
                    check(e["MEGASCALE_COORDINATOR_ADDRESS"].startswith("%s-0-0." % gname),
                          "%s: megascale coordinator" % label)
            labels = p["metadata"]["labels"]
            if version == "1.4":
                check(labels.get("replicaIndex") == tname, "%s: legacy replicaIndex" % label)
                check("ray.io/worker-group-replica-index" not in labels,
                      "%s: no native labels before 1.5" % label)
            else:
                check(labels.get("ray.io/worker-group-replica-index") == str(r),
                      "%s: native replica index label" % label)
            if hosts > 1:
                h = int(p["spec"]["hostname"].rsplit("-", 1)[1])
                check(p["spec"]["hostname"] == "%s-%d-%d" % (gname, r, h), "%s: hostname" % label)
                check(p["spec"]["subdomain"].endswith("-headless"), "%s: subdomain" % label)
        per = ntpu if tpu7x else 1
        check(sorted(ids) == list(range(hosts * per)) if tpu7x else
              sorted(ids) == list(range(hosts)),
              "%s: replica %s TPU_WORKER_IDs %s" % (label, tname, sorted(ids)))
        check(len(hostnames) == 1, "%s: replica %s peer lists differ" % (label, tname))
        check(len(procs) == 1, "%s: replica %s process lists differ" % (label, tname))
        if hosts > 1:
            hl = next(iter(hostnames))
            check(hl is not None and len(hl.split(",")) == hosts,
                  "%s: TPU_WORKER_HOSTNAMES %s" % (label, hl))
            if tpu7x:
                pl = next(iter(procs))
                check(pl is not None and len(pl.split(",")) == hosts * ntpu,
                      "%s: TPU_PROCESS_ADDRESSES %s" % (label, pl))
            peer_lists.add(hl)
    if hosts > 1:
        check(len(peer_lists) == replicas, "%s: peer lists not distinct across replicas" % label)


def test_renders():
    samples = sorted(glob.glob(os.path.join(SAMPLES, "*.yaml")))
    check(len(samples) >= 5, "expected the 5 KubeRay TPU samples in %s" % SAMPLES)
    good = [m for m in sorted(glob.glob(os.path.join(MANIFESTS, "*")))
            if not os.path.basename(m).startswith("bad-")]
    check(len(good) >= 6, "expected our manifests in %s" % MANIFESTS)
    for path in samples + good:
        for version in ("1.6", "1.4"):
            verify_render(path, version)


def test_sample_details():
    """KubeRay's pod for the v6e-16 sample, replica 0 host 0 (docs/kuberay-pods.md §4)."""
    path = os.path.join(SAMPLES, "ray-cluster.tpu-v6e-16-multihost.yaml")
    rc, out, err = run(["render", "--output", "json", path])
    pods = json.loads(out)["items"]
    p = pods[0]
    check(p["metadata"]["generateName"] == "raycluster-tpu-v6e-multihost-tpu-group-worker-",
          "generateName of v6e-16")
    c = p["spec"]["containers"][0]
    start = ("ray start  --address=raycluster-tpu-v6e-multihost-head-svc.default.svc.cluster.local:6379"
             "  --block  --dashboard-agent-listen-port=52365  --memory=200000000000  "
             "--metrics-export-port=8080  --num-cpus=24  --resources='{\"TPU\":4}' ")
    check(env_of(c)["KUBERAY_GEN_RAY_START_CMD"] == start, "ray start command of v6e-16")
    check(c["args"] == ["ulimit -n 65536; " + start], "args of v6e-16 (KubeRay 1.6)")
    check(p["spec"]["volumes"][-1] == {"name": "shared-mem",
                                       "emptyDir": {"medium": "Memory", "sizeLimit": "200G"}},
          "shared-mem volume")
    names = {p["metadata"]["labels"]["ray.io/worker-group-replica-name"] for p in pods}
    check(len(names) == 1, "one replica name for the 4 hosts")
    check(p["spec"]["subdomain"] == "raycluster-tpu-v6e-multihost-headless", "subdomain")
    # Rendering is deterministic.
    rc2, out2, _ = run(["render", "--output", "json", path])
    check(out == out2, "render is not deterministic")
    # stdin works the same.
    with open(path, "rb") as f:
        rc3, out3, _ = run(["render", "--output", "json", "-"], stdin=f.read())
    check(rc3 == 0 and out3 == out, "render from stdin")
    # A v1 List (kubectl get -o json) renders its Ray items.
    with open(path) as f:
        lst = {"apiVersion": "v1", "kind": "List",
               "items": [yaml.safe_load(f), {"kind": "ConfigMap", "metadata": {"name": "c"}}]}
    rc4, out4, err4 = run(["render", "--output", "json", "-"], stdin=json.dumps(lst).encode())
    check(rc4 == 0 and out4 == out and "skipped ConfigMap c" in err4, "render of a List: %s" % err4)


def test_summary():
    rc, out, err = run(["render", "--summary", os.path.join(MANIFESTS, "tpu7x-two-container-numa.yaml")])
    check(rc == 0 and "TPU_NAME=numa-0" in out, "summary names the replica: %s" % out)
    check(" 0,1 " in out and " 2,3 " in out, "summary shows per-container worker ids: %s" % out)


def test_rejections_and_errors():
    rc, out, err = run(["render", os.path.join(MANIFESTS, "bad-numofhosts.yaml")])
    check(rc == 1 and "numOfHosts" in err and "wrong-hosts" in err and out == "",
          "rejected render: rc %d err %s" % (rc, err))
    check("bad-numofhosts.yaml: line 2: RayCluster wrong-hosts would be rejected" in err,
          "a rejection names the file and line: %s" % err)
    rc, out, err = run(["render", os.path.join(MANIFESTS, "bad-long-group.yaml")])
    check(rc == 1 and "over the 63 of a DNS-1123 label" in err and "(groupName)" in err and
          out == "", "long group name rejected: rc %d err %s" % (rc, err))
    rc, out, err = run(["render", os.path.join(BAD, "malformed.yaml")])
    check(rc == 2 and "line 6, column 5" in err, "malformed YAML: %d %s" % (rc, err))
    rc, out, err = run(["render", os.path.join(BAD, "unknown-kind.yaml")])
    check(rc == 2 and "Deployment" in err and "no RayCluster" in err, "unknown kind: %s" % err)
    rc, out, err = run(["render", os.path.join(BAD, "rayjob-selector.yaml")])
    check(rc == 2 and "clusterSelector" in err, "RayJob without cluster spec: %s" % err)
    t = time.time()
    rc, out, err = run(["render", os.path.join(BAD, "alias-bomb.yaml")], timeout=30)
    check(rc == 2 and "alias bomb" in err, "alias bomb: %d %s" % (rc, err))
    check(time.time() - t < 20, "alias bomb took %.1f s" % (time.time() - t))
    rc, out, err = run(["render", "/nonexistent/file.yaml"])
    check(rc == 2 and "cannot open" in err, "missing file: %s" % err)
    rc, out, err = run(["render", "--kuberay-version", "2.x", os.path.join(SAMPLES, "ray-cluster.tpu-v4-singlehost.yaml")])
    check(rc == 2 and "1.MINOR" in err, "bad version: %s" % err)
    with tempfile.TemporaryDirectory() as d:
        huge = os.path.join(d, "huge.yaml")
        with open(huge, "w") as f:
            f.write("kind: RayCluster\nmetadata:\n  name: x\n  annotations:\n")
            line = "    k%08d: " + "v" * 100 + "\n"
            for i in range(160000):
                f.write(line % i)
        rc, out, err = run(["render", huge])
        check(rc == 2 and "limit" in err, "huge document: %d %s" % (rc, err))
        deep = os.path.join(d, "deep.yaml")
        with open(deep, "w") as f:
            f.write("#\n" + "[" * 5000 + "]" * 5000 + "\n")
        rc, out, err = run(["render", deep])
        check(rc == 2 and "nesting" in err, "deep document: %d %s" % (rc, err))
        garbage = os.path.join(d, "garbage.yaml")
        with open(garbage, "wb") as f:
            f.write(b"\x00\xff\xfe binary \x01\x02")
        rc, out, err = run(["render", garbage])
        check(rc == 2 and err.strip(), "binary input: %d %s" % (rc, err))


def test_check():
    rc, out, err = run(["check", SAMPLES])
    check(rc == 0, "check samples rc %d: %s %s" % (rc, out, err))
    check(out.count(" ok ") == 5, "check: 5 ok rows:\n%s" % out)
    rc, out, err = run(["check", "--output", "json", MANIFESTS, SAMPLES])
    check(rc == 1, "check manifests rc %d (bad-numofhosts must fail)" % rc)
    rep = json.loads(out)
    check(rep["rejected"] == 2 and rep["errors"] == 0 and rep["ok"] is False, "check report %s" % rep)
    bad = [r for r in rep["rows"] if r["verdict"] == "rejected"]
    check(len(bad) == 2 and bad[0]["cluster"] == "long-group" and "63" in bad[0]["message"],
          "pod-level rejection row %s" % bad)
    check(len(bad) == 2 and bad[1]["cluster"] == "wrong-hosts" and bad[1]["hostsExpected"] == 4
          and bad[1]["numOfHosts"] == 2 and "numOfHosts" in bad[1]["message"],
          "rejected row %s" % bad)
    numa = [r for r in rep["rows"] if r["cluster"] == "tpu7x-numa"]
    check(len(numa) == 1 and numa[0]["chipsPerHost"] == 4 and numa[0]["hostsExpected"] == 2,
          "NUMA row %s" % numa)
    groups = [r["group"] for r in rep["rows"] if r["cluster"] == "v6e-multislice"]
    check(groups == ["slices"], "only TPU groups get rows: %s" % groups)
    rc, out, err = run(["check", "--output", "json", BAD])
    rep = json.loads(out)
    check(rc == 1 and rep["errors"] == 3, "bad manifests: rc %d %s" % (rc, rep))
    rc, out, err = run(["check", "/nonexistent"])
    check(rc == 1 and "cannot read" in out, "check missing path: %d %s" % (rc, out))
    rc, out, err = run(["check"])
    check(rc == 2, "check without paths")
    # In a searched directory only regular files are read (a FIFO named
    # x.yaml, or a symlink to one, would block the read). Directories past
    # the depth limit give an error row; they were once skipped silently.
    with tempfile.TemporaryDirectory() as d:
        shutil.copy(os.path.join(MANIFESTS, "tpu7x-single-host.yaml"), os.path.join(d, "a.yaml"))
        os.mkfifo(os.path.join(d, "fifo.yaml"))
        os.symlink(os.path.join(d, "fifo.yaml"), os.path.join(d, "link.yaml"))
        deep = os.path.join(d, *(["d"] * 40))
        os.makedirs(deep)
        try:
            rc, out, err = run(["check", "--output", "json", d], timeout=20)
            rep = json.loads(out)
            check(rc == 1 and rep["files"] == 2 and rep["errors"] == 1
                  and "deeper than" in rep["rows"][-1]["message"],
                  "check skips FIFOs and reports deep dirs: %d %s" % (rc, rep))
        except subprocess.TimeoutExpired:
            check(False, "check hung on a FIFO in a directory")


def test_review_yaml():
    reviews = sorted(glob.glob(os.path.join(FIXTURES, "reviews", "*.json")))
    check(reviews, "review fixtures present")
    for path in reviews[:5]:
        with open(path) as f:
            review = json.load(f)
        rc1, out1, _ = run(["review", path])
        rc2, out2, err2 = run(["review", "-"], stdin=yaml.safe_dump(review).encode())
        check(rc1 == rc2 and out1 == out2, "YAML review differs for %s: %s" % (path, err2))
    rc, out, err = run(["review", "-"], stdin=b"request: [1,\n")
    check(rc == 2 and "line" in err, "malformed YAML review: %d %s" % (rc, err))


def test_argv():
    """The command lines of review, render and check (parsed by wh_flags):
    flags before, between and after the arguments, -o, --name=value, '-'
    for stdin, '--'; each bad command line exits 2 naming the flag or the
    argument and the fix."""
    sample = os.path.join(SAMPLES, "ray-cluster.tpu-v4-singlehost.yaml")
    review = sorted(glob.glob(os.path.join(FIXTURES, "reviews", "*.json")))[0]
    with open(sample, "rb") as f:
        sample_text = f.read()
    with open(review, "rb") as f:
        review_text = f.read()
    # Accepted: the same answer whichever way the line is written.
    rc, base, err = run(["render", "--output", "json", sample])
    check(rc == 0 and base.startswith("{"), "render --output json: %d %s" % (rc, err))
    for args, stdin in ((["render", sample, "--output", "json"], None),
                        (["render", "-o", "json", sample], None),
                        (["render", "--output=json", "--", sample], None),
                        (["render", "-", "-output=json"], sample_text),
                        (["render", "--kuberay-version=1.6", "-o=json", sample], None)):
        rc, out, err = run(args, stdin=stdin)
        check(rc == 0 and out == base, "render %s: %d %s" % (args, rc, err))
    rc, out, err = run(["render", sample, "--summary"])
    check(rc == 0 and "TPU_WORKER_ID" in out, "render FILE --summary: %d %s" % (rc, err))
    rc, base, err = run(["check", "--output", "json", sample])
    check(rc == 0 and json.loads(base)["files"] == 1, "check --output json: %d %s" % (rc, err))
    for args in (["check", sample, "-o", "json"], ["check", "--output=json", "--", sample]):
        rc, out, err = run(args)
        check(rc == 0 and out == base, "check %s: %d %s" % (args, rc, err))
    rc, out, err = run(["check", sample, "-o", "json", MANIFESTS])
    check(rc == 1 and json.loads(out)["files"] > 1, "check PATH -o json PATH: %d %s" % (rc, err))
    rc, base, err = run(["review", review])
    check(rc == 0 and base.strip().startswith("{"), "review FILE: %d %s" % (rc, err))
    for args, stdin in ((["review", "-"], review_text), (["review"], review_text),
                        (["review", "--", review], None), (["review", review, "--workload=false"], None)):
        rc, out, err = run(args, stdin=stdin)
        check(rc == 0 and out == base, "review %s: %d %s" % (args, rc, err))
    # Refused: exit 2, the flag or argument named, and what to do.
    for args, want in ((["render"], "missing FILE argument: give a FILE, or '-' for stdin"),
                       (["render", sample, sample], 'one FILE only: "%s" and "%s" given' % (sample, sample)),
                       (["render", "--output", "xml", sample], 'invalid value "xml" for flag -output: expected yaml or json'),
                       (["render", "-o"], "flag needs an argument: -o"),
                       (["render", "--kuberay-version", "2.x", sample], "flag -kuberay-version: KubeRay version '2.x'"),
                       (["render", "--summary=maybe", sample], 'invalid value "maybe" for flag -summary'),
                       (["render", "--bogus", sample], "flag provided but not defined: -bogus"),
                       (["check"], "missing PATH argument: give the files or directories to check"),
                       (["check", "-o", "xml", sample], 'invalid value "xml" for flag -o: expected table, json or yaml'),
                       (["check", "--output"], "flag needs an argument: -output"),
                       (["check", "--bogus", sample], "flag provided but not defined: -bogus"),
                       (["review", review, review], 'one FILE only: "%s" and "%s" given' % (review, review)),
                       (["review", "--pods"], "flag needs an argument: -pods"),
                       (["review", "--nodes"], "flag needs an argument: -nodes"),
                       (["review", "--workload=2", review], 'invalid value "2" for flag -workload'),
                       (["review", "--bogus", review], "flag provided but not defined: -bogus")):
        rc, out, err = run(args)
        check(rc == 2 and want in err and out == "", "%s: exit 2 and \"%s\": %d %s" % (args, want, rc, err))
    for cmd, flag in (("review", "--workload"), ("render", "--output"), ("check", "--output")):
        rc, out, err = run([cmd, "--help"])
        check(rc == 0 and out.startswith("usage: tpu-webhook " + cmd) and flag in out,
              "%s --help: %d %s" % (cmd, rc, out))

class Checked(unittest.TestCase):
    """Runs one of the test functions above, which report through check();
    the test fails when the function added a failure."""

    def checked(self, fn):
        before = len(FAILURES)
        fn()
        self.assertEqual(FAILURES[before:], [], fn.__name__)


# One class per test function, one ctest entry each (tests/render/CMakeLists.txt).
class Renders(Checked):
    def test_renders(self):
        self.checked(test_renders)


class SampleDetails(Checked):
    def test_sample_details(self):
        self.checked(test_sample_details)


class Summary(Checked):
    def test_summary(self):
        self.checked(test_summary)


class RejectionsAndErrors(Checked):
    def test_rejections_and_errors(self):
        self.checked(test_rejections_and_errors)


class Check(Checked):
    def test_check(self):
        self.checked(test_check)


class ReviewYaml(Checked):
    def test_review_yaml(self):
        self.checked(test_review_yaml)


class Argv(Checked):
    def test_argv(self):
        self.checked(test_argv)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1] + sys.argv[4:], verbosity=1)
