#!/usr/bin/python3
"""Events on the workload of a warned pod (issue 24, item 5; docs/troubleshooting.md,
"Events on the workload"), against fake_apiserver.py.

One `tpu-webhook serve` replica (--threads=2) in Kubernetes mode:
  delivered  an Indexed-Job pod without a topology is warned on /mutate-workload;
             one core v1 Event arrives at the fake: type Warning, reason
             TPUTopologyUnknown, involvedObject the Job (uid from the pod's
             ownerReferences), a message naming the pod and the fix.
  burst      20 such pods of one Job at once: one Event, 19 counted as
             deduplicated (tpu_webhook_events_total).
  failing    every Event POST answered 500, then 429: each admission still
             answers at once, with its warning; the failures are counted.
  held       every Event POST held at the fake's gate: 100 warned pods of 100
             Jobs are each answered at once (none waits for the API server),
             those past the queue are counted as dropped; /healthz answers.
  owners     the Event of a JobSet pod names the JobSet (jobset.x-k8s.io/v1alpha2, uid from
             the pod's jobset.sigs.k8s.io/jobset-uid label); an LWS pod's names the LWS
             (leaderworkerset.x-k8s.io/v1) without a uid (its pods carry none).
  distinct   within the window: two Jobs with the same warning get one Event each; one
             Job with two different warnings gets one Event per reason.
  window     a second replica started with --events-window=1ms: a warning offered after
             the window (the first Event has reached the fake) gets a new Event of count 1.
Usage: test_events.py BINARY
"""
import json
import os
import sys
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_replicas as R  # noqa: E402


def job_pod(job, index=1, name=None, ns="team-a"):
    """An Indexed-Job pod as the Job controller creates it, whose template
    lacks the topology (so the pod path warns: topology-unknown)."""
    uid = str(uuid.uuid5(uuid.NAMESPACE_DNS, job))
    labels = {"batch.kubernetes.io/job-name": job, "job-name": job,
              "batch.kubernetes.io/controller-uid": uid, "controller-uid": uid,
              "batch.kubernetes.io/job-completion-index": str(index)}
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name or "%s-%d-abcde" % (job, index), "namespace": ns,
                         "labels": labels,
                         "annotations": {"batch.kubernetes.io/job-completion-index": str(index)},
                         "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": job,
                                              "uid": uid, "controller": True}]},
            "spec": {"hostname": "%s-%d" % (job, index), "subdomain": job,
                     "nodeSelector": {"cloud.google.com/gke-tpu-accelerator": "tpu-v6e-slice"},
                     "containers": [{"name": "trainer", "image": "IMAGE", "resources": {
                         "limits": {"google.com/tpu": "4"}}}]}}


def jobset_pod(js, uid, ns="team-a"):
    """A JobSet pod as the Job controller creates it from the JobSet's child
    Job (labels as the JobSet controller writes them, docs/workloads.md),
    whose template lacks the topology."""
    job = js + "-workers-0"
    pod = job_pod(job, index=0, ns=ns)
    md = pod["metadata"]
    for k, v in (("jobset.sigs.k8s.io/jobset-name", js), ("jobset.sigs.k8s.io/jobset-uid", uid),
                 ("jobset.sigs.k8s.io/replicatedjob-name", "workers"),
                 ("jobset.sigs.k8s.io/replicatedjob-replicas", "1"),
                 ("jobset.sigs.k8s.io/job-index", "0")):
        md["labels"][k] = v
        md["annotations"][k] = v
    return pod


def lws_pod(lws, ns="team-a"):
    """An LWS leader pod (labels as LWS writes them), without a topology."""
    pod = job_pod(lws, index=0, ns=ns, name=lws + "-0")
    md = pod["metadata"]
    md["labels"] = {"leaderworkerset.sigs.k8s.io/name": lws,
                    "leaderworkerset.sigs.k8s.io/group-index": "0",
                    "leaderworkerset.sigs.k8s.io/worker-index": "0"}
    md["annotations"] = {"leaderworkerset.sigs.k8s.io/size": "1"}
    md["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": lws,
                              "uid": str(uuid.uuid4()), "controller": True}]
    return pod


def review(pod):
    return json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                       "request": {"uid": str(uuid.uuid4()),
                                   "kind": {"group": "", "version": "v1", "kind": "Pod"},
                                   "resource": {"group": "", "version": "v1", "resource": "pods"},
                                   "namespace": pod["metadata"]["namespace"],
                                   "operation": "CREATE", "object": pod}})


def admit(env, pod):
    """(response, seconds) of /mutate-workload for pod."""
    t0 = time.monotonic()
    st, out = env.request(env.replicas[0]["port"], "POST", "/mutate-workload", review(pod),
                          timeout=10)
    dt = time.monotonic() - t0
    if st != 200:
        R.fail("/mutate-workload: HTTP %d %r" % (st, out[:300]))
    return json.loads(out)["response"], dt


def counters(env):
    st, out = env.request(env.replicas[0]["port"], "GET", "/metrics")
    got = {}
    for line in out.decode().split("\n"):
        if line.startswith("tpu_webhook_events_total{"):
            got[line.split('"')[1]] = int(line.split()[-1])
    if set(got) != {"sent", "failed", "dropped", "deduplicated"}:
        R.fail("tpu_webhook_events_total missing: %r" % got)
    return got


def events_of(env, job):
    evs = env.control("stats", {})["posted_events"]
    return [e for e in evs if (e.get("involvedObject") or {}).get("name") == job]


def wait_for(what, fn, secs=10):
    end = time.monotonic() + secs
    while time.monotonic() < end:
        v = fn()
        if v:
            return v
        time.sleep(0.1)
    R.fail("timed out waiting for " + what)


def warned(resp):
    if not resp.get("allowed") or not any("gke-tpu-topology" in w for w in resp.get("warnings", [])):
        R.fail("expected an allowed pod with the topology warning: %r" % resp)


def delivered(env):
    pod = job_pod("train-a")
    resp, _ = admit(env, pod)
    warned(resp)
    evs = wait_for("the Event of train-a", lambda: events_of(env, "train-a"))
    if len(evs) != 1:
        R.fail("one Event expected, got %r" % evs)
    e = evs[0]
    io = e["involvedObject"]
    want = {"apiVersion": "batch/v1", "kind": "Job", "namespace": "team-a", "name": "train-a",
            "uid": pod["metadata"]["ownerReferences"][0]["uid"]}
    if io != want:
        R.fail("involvedObject %r, expected %r" % (io, want))
    if e["_path_namespace"] != "team-a" or e["metadata"]["namespace"] != "team-a":
        R.fail("Event posted to the wrong namespace: %r" % e)
    if e["type"] != "Warning" or e["reason"] != "TPUTopologyUnknown" or e["count"] != 1:
        R.fail("type/reason/count: %r" % e)
    msg = e["message"]
    for part in ('pod "train-a-1-abcde"', "cloud.google.com/gke-tpu-topology",
                 'Indexed Job "team-a/train-a"'):
        if part not in msg:
            R.fail("message %r lacks %r" % (msg, part))
    if not e["metadata"]["name"].startswith("train-a.") or e["source"]["component"] != "tpu-webhook":
        R.fail("metadata/source: %r" % e)
    # The server counts an Event sent when the POST's answer is back, a
    # moment after the fake has recorded it: wait for the count, then it
    # must be exactly one.
    wait_for("the sent count", lambda: counters(env)["sent"] >= 1)
    c = counters(env)
    if c["sent"] != 1:
        R.fail("sent %r" % c)
    print("delivered: %s" % msg)


def burst(env):
    before = counters(env)
    for i in range(20):
        warned(admit(env, job_pod("train-b", index=i % 4, name="train-b-%d-x%02d" % (i % 4, i)))[0])
    wait_for("the Event of train-b", lambda: events_of(env, "train-b"))
    time.sleep(1.0)  # a second Event would have arrived by now
    evs = events_of(env, "train-b")
    c = counters(env)
    if len(evs) != 1 or c["deduplicated"] - before["deduplicated"] != 19:
        R.fail("burst: %d Events, counters %r" % (len(evs), c))
    print("burst: 20 warned pods, 1 Event, 19 deduplicated")


def failing(env):
    for code in ("500", "429"):
        before = counters(env)
        env.control("faults", {"error_rate": 1.0, "errors": [code], "only": "events"})
        worst = 0
        for k in range(5):
            resp, dt = admit(env, job_pod("train-f%s-%d" % (code, k)))
            warned(resp)
            worst = max(worst, dt)
        wait_for("5 failed Events (%s)" % code,
                 lambda: counters(env)["failed"] - before["failed"] >= 5)
        env.control("faults", {})
        if worst > 1.0:
            R.fail("an admission took %.2f s while Events failed with %s" % (worst, code))
        print("failing %s: 5 admissions, slowest %.3f s, 5 Events counted as failed" % (code, worst))


def held(env):
    before = counters(env)
    env.control("hold", {"method": "POST", "only": "events"})
    worst = 0
    for k in range(100):
        resp, dt = admit(env, job_pod("train-h-%d" % k))
        warned(resp)
        worst = max(worst, dt)
    st, _ = env.request(env.replicas[0]["port"], "GET", "/healthz", timeout=2)
    c = counters(env)
    env.control("hold", {})
    dropped = c["dropped"] - before["dropped"]
    if worst > 1.0 or st != 200:
        R.fail("held: slowest admission %.2f s, /healthz %d" % (worst, st))
    # The queue holds 64; the POST at the gate gives up after 2 s (failed)
    # and the worker takes the next, so a few more than 64 get through.
    if dropped < 20:
        R.fail("held: only %d dropped of 100 (counters %r)" % (dropped, c))

    def settled():
        now = counters(env)
        return (now["sent"] + now["failed"] - before["sent"] - before["failed"]) == 100 - dropped
    wait_for("every queued Event posted or failed after the gate opened", settled, 30)
    print("held: 100 admissions, slowest %.3f s, %d Events dropped and counted" % (worst, dropped))


def owners(env):
    uid = str(uuid.uuid4())
    warned(admit(env, jobset_pod("js-a", uid))[0])
    evs = wait_for("the Event of js-a", lambda: events_of(env, "js-a"))
    want = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "namespace": "team-a",
            "name": "js-a", "uid": uid}
    if len(evs) != 1 or evs[0]["involvedObject"] != want:
        R.fail("JobSet Event %r, expected one naming %r" % (evs, want))
    warned(admit(env, lws_pod("lws-a"))[0])
    evs = wait_for("the Event of lws-a", lambda: events_of(env, "lws-a"))
    want = {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
            "namespace": "team-a", "name": "lws-a"}
    if len(evs) != 1 or evs[0]["involvedObject"] != want:
        R.fail("LWS Event %r, expected one naming %r" % (evs, want))
    print("owners: JobSet Event with the jobset-uid label's uid, LWS Event without uid")


def generation_unknown_pod(job, index):
    """A pod of job whose template names the topology but no accelerator
    (another warning: TPUGenerationUnknown)."""
    pod = job_pod(job, index=index, name="%s-%d-g" % (job, index))
    pod["spec"]["nodeSelector"] = {"cloud.google.com/gke-tpu-topology": "4x4"}
    return pod


def distinct(env):
    before = counters(env)
    for job in ("train-x", "train-y"):
        warned(admit(env, job_pod(job))[0])
    resp = admit(env, generation_unknown_pod("train-x", 2))[0]
    if not resp.get("allowed") or not resp.get("warnings"):
        R.fail("expected an allowed, warned pod: %r" % resp)
    wait_for("three Events", lambda: len(events_of(env, "train-x")) == 2 and
             len(events_of(env, "train-y")) == 1)
    reasons = sorted(e["reason"] for e in events_of(env, "train-x"))
    if reasons != ["TPUGenerationUnknown", "TPUTopologyUnknown"]:
        R.fail("train-x reasons %r" % reasons)
    c = counters(env)
    if c["deduplicated"] != before["deduplicated"] or c["sent"] - before["sent"] != 3:
        R.fail("distinct: counters %r, before %r" % (c, before))
    print("distinct: 2 Jobs x 1 warning and 1 Job x 2 warnings: 3 Events, none merged")


def window(binary):
    env = R.Env(binary, claims=True, replicas=1, threads=2, extra_args=["--events-window=1ms"])
    try:
        env.wait_ready()
        warned(admit(env, job_pod("train-w", index=0))[0])
        wait_for("the first Event of train-w", lambda: events_of(env, "train-w"))
        warned(admit(env, job_pod("train-w", index=1))[0])
        evs = wait_for("the second Event of train-w", lambda: len(events_of(env, "train-w")) == 2
                       and events_of(env, "train-w"))
        c = counters(env)
        if [e["count"] for e in evs] != [1, 1] or c["deduplicated"] != 0 or c["sent"] != 2:
            R.fail("window: Events %r, counters %r" % (evs, c))
        env.stop_replicas()
    finally:
        env.close()
    print("window: after the window, the same warning gets a new Event")


def main():
    if len(sys.argv) != 2:
        R.fail(__doc__)
    env = R.Env(sys.argv[1], claims=True, replicas=1, threads=2)
    try:
        env.wait_ready()
        delivered(env)
        burst(env)
        failing(env)
        owners(env)
        distinct(env)
        held(env)
        env.stop_replicas()
    finally:
        env.close()
    window(sys.argv[1])
    print("PASS")


if __name__ == "__main__":
    main()
