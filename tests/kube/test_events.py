#!/usr/bin/python3
"""Events on the workload of a warned pod (issue 24, item 5; docs/troubleshooting.md,
"Events on the workload"), against fake_apiserver.py.

One `tpu-webhook serve` replica (--threads=2) in Kubernetes mode per group. The
checks count what the server (tpu_webhook_events_total) and the fake (Event POSTs that
arrived, Events kept, LWS GETs, requests at its gate) recorded; none bounds a time.
group main:
  delivered  an Indexed-Job pod without a topology is warned on /mutate-workload;
             one core v1 Event arrives at the fake: type Warning, reason
             TPUTopologyUnknown, involvedObject the Job (uid from the pod's
             ownerReferences), a message naming the pod and the fix.
  burst      20 such pods of one Job: one Event posted once, 19 deduplicated.
  failing    every Event POST answered 500, 429 (Retry-After waited out), reset
             (libcurl's one resend on a dead kept-alive connection at most), or
             answered after the 2 s POST timeout, or slowed by 300 ms: each admission
             answered with its warning; each Event counted failed (or sent) once, one
             POST each, never sent again by the webhook.
  owners     the Event of a JobSet pod names the JobSet (jobset.x-k8s.io/v1alpha2, uid from
             the pod's jobset.sigs.k8s.io/jobset-uid label).
  distinct   within the window: two Jobs with the same warning get one Event each; one
             Job with two different warnings gets one Event per reason.
  foreign    a made-up review whose object names another namespace (kube-system) than
             request.namespace is denied (its admission log line says so) and writes no
             Event; one without request.namespace writes none either.
  forged_owner  pods naming a Job with a uid the API server does not give it, a Job
             that does not exist, a JobSet with another uid: answered, no Event about
             them (3 unverified, 3 event_owner_mismatch lines); a Job's real pod: its
             Event with the uid the GET confirmed; the GET refused (403): the Event
             without uid.
  limited    40 warned Jobs of one namespace: 30 Events, 10 limited; another namespace
             still gets its Event.
  held       every Event POST held at the fake's gate: 100 warned pods of 100 Jobs are
             answered while the fake has kept no Event; those past the queue are counted
             as dropped, the rest posted once each when the gate opens; /healthz answers.
group lws (LeaderWorkerSet pods carry no uid of it; the worker GETs it):
  uid        answered: the Event names the LWS with its uid; a second Event, no second GET.
  refused    403: the Event without uid, the refusal remembered (1 GET for 2
             Events), one event_uid_unknown log line.
  forged     pods naming an LWS that does not exist (404): answered, no Event about
             it (2 unverified, 2 event_owner_mismatch lines, 2 GETs: not remembered);
             a real LWS's Event after them carries its uid.
  failed     500, 429, reset, or the GET held at the gate past its 2 s: the Event without
             uid, not remembered: the next Event's GET gives the uid.
group window: --events-window=1ms: a warning after the window gets a new Event of count 1;
  5 Events of one LWS make 1 GET (the uid cache).
group dedupe: --events-window=2s: 10 warnings within the window and one after it: the
  Events' counts add up to 11.
Usage: test_events.py BINARY main|lws|window|dedupe
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


def lws_pod(lws, ns="team-a", generation_unknown=False):
    """An LWS leader pod (labels as LWS writes them), without a topology
    (TPUTopologyUnknown) or, with generation_unknown, with a topology but no
    accelerator (TPUGenerationUnknown). Owned by the leader StatefulSet: no
    uid of the LWS anywhere on it."""
    pod = job_pod(lws, index=0, ns=ns, name=lws + "-0")
    md = pod["metadata"]
    md["labels"] = {"leaderworkerset.sigs.k8s.io/name": lws,
                    "leaderworkerset.sigs.k8s.io/group-index": "0",
                    "leaderworkerset.sigs.k8s.io/worker-index": "0"}
    md["annotations"] = {"leaderworkerset.sigs.k8s.io/size": "1"}
    md["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": lws,
                              "uid": str(uuid.uuid4()), "controller": True}]
    if generation_unknown:
        pod["spec"]["nodeSelector"] = {"cloud.google.com/gke-tpu-topology": "4x4"}
    return pod


def put_lws(env, name, ns="team-a"):
    """A LeaderWorkerSet at the fake; its uid."""
    uid = str(uuid.uuid4())
    env.control("leaderworkersets", [{"apiVersion": "leaderworkerset.x-k8s.io/v1",
                                      "kind": "LeaderWorkerSet",
                                      "metadata": {"name": name, "namespace": ns, "uid": uid}}])
    return uid


def review(pod):
    return json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                       "request": {"uid": str(uuid.uuid4()),
                                   "kind": {"group": "", "version": "v1", "kind": "Pod"},
                                   "resource": {"group": "", "version": "v1", "resource": "pods"},
                                   "namespace": pod["metadata"]["namespace"],
                                   "operation": "CREATE", "object": pod}})


def put_owner(env, pod):
    """The Job or JobSet pod names, at the fake with the uid pod states (the
    Events thread checks it with a GET): the workload exists as its pod
    says."""
    md = pod["metadata"]
    js = md["labels"].get("jobset.sigs.k8s.io/jobset-name")
    if js:
        env.control("jobsets", [{"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
                                 "metadata": {"name": js, "namespace": md["namespace"],
                                              "uid": md["labels"]["jobset.sigs.k8s.io/jobset-uid"]}}])
        return
    for ref in md.get("ownerReferences", []):
        if ref.get("controller") and ref["kind"] == "Job":
            env.control("jobs", [{"apiVersion": "batch/v1", "kind": "Job",
                                  "metadata": {"name": ref["name"], "namespace": md["namespace"],
                                               "uid": ref["uid"]}}])


def admit(env, pod):
    """(response, seconds) of /mutate-workload for pod, its workload put
    at the fake first (put_owner)."""
    put_owner(env, pod)
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
    if set(got) != {"sent", "failed", "dropped", "deduplicated", "limited", "unverified"}:
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


def fake(env):
    """What the fake API server recorded: Event POSTs that arrived
    (event_posts), Events it kept (events_posted), LWS GETs that arrived
    (lws_gets), requests that waited at its gate (held)."""
    st = env.control("stats", {})
    return {k: st[k] for k in ("event_posts", "events_posted", "lws_gets", "held", "owner_gets")}


def delta(now, before):
    return {k: now[k] - before[k] for k in now}


def burst(env):
    before, fb = counters(env), fake(env)
    for i in range(20):
        warned(admit(env, job_pod("train-b", index=i % 4, name="train-b-%d-x%02d" % (i % 4, i)))[0])
    # Every warning is accounted for the moment its admission is answered:
    # queued (one), deduplicated or dropped. 19 + 0 + the one sent leaves
    # nothing that could make a second Event.
    wait_for("the sent count", lambda: counters(env)["sent"] - before["sent"] >= 1)
    d = delta(counters(env), before)
    f = delta(fake(env), fb)
    evs = events_of(env, "train-b")
    if d != {"sent": 1, "failed": 0, "dropped": 0, "deduplicated": 19, "limited": 0,
              "unverified": 0} or \
            f["event_posts"] != 1 or f["events_posted"] != 1 or len(evs) != 1 or evs[0]["count"] != 1:
        R.fail("burst: %d Events %r, counters %r, fake %r" % (len(evs), evs, d, f))
    print("burst: 20 warned pods, 1 Event (count 1) posted once, 19 deduplicated")


def faulted(env, label, faults, jobs, posts):
    """jobs Jobs warned while every Event POST meets faults: each admission
    answered with its warning; each Event failed, counted once; posts(n)
    says how many POSTs the fake may have seen for n Events (no Event is
    retried by the webhook)."""
    before, fb = counters(env), fake(env)
    env.control("faults", dict(faults, only="events"))
    try:
        for k in range(jobs):  # a namespace each: under its Events' limit
            warned(admit(env, job_pod("train-%s-%d" % (label, k), ns="team-" + label))[0])
        wait_for("%d failed Events (%s)" % (jobs, label),
                 lambda: counters(env)["failed"] - before["failed"] >= jobs, 60)
    finally:
        env.control("faults", {})
    d = delta(counters(env), before)
    f = delta(fake(env), fb)
    if d != {"sent": 0, "failed": jobs, "dropped": 0, "deduplicated": 0, "limited": 0,
             "unverified": 0} or \
            not posts(jobs, f["event_posts"]) or f["lws_gets"] or f["held"]:
        R.fail("%s: counters %r, fake %r" % (label, d, f))
    return f


def failing(env):
    # 500 and 429: one POST per Event, none kept (429: the worker waits out
    # Retry-After, 1 s, before its next request).
    for code in ("500", "429"):
        f = faulted(env, "f" + code, {"error_rate": 1.0, "errors": [code]}, 5,
                    lambda n, got: got == n)
        if f["events_posted"]:
            R.fail("%s: the fake kept %r" % (code, f))
        print("failing %s: 5 admissions warned, 5 POSTs, 5 Events failed, none kept" % code)
    # A reset: libcurl sends a request again, once, when a kept-alive
    # connection turns out dead; never more.
    f = faulted(env, "reset", {"error_rate": 1.0, "errors": ["reset"]}, 5,
                lambda n, got: n <= got <= 2 * n)
    if f["events_posted"]:
        R.fail("reset: the fake kept %r" % f)
    print("failing reset: 5 Events failed in %d POSTs, none kept" % f["event_posts"])
    # No answer within the POST's 2 s (the fake waits 3 s, then keeps it):
    # counted failed, not sent again, and kept by the fake all the same.
    fb = fake(env)
    f = faulted(env, "late", {"latency_ms": 3000}, 3, lambda n, got: got == n)
    wait_for("the late Events kept", lambda: delta(fake(env), fb)["events_posted"] == 3)
    if delta(fake(env), fb)["event_posts"] != 3:
        R.fail("late: %r" % delta(fake(env), fb))
    print("failing late: 3 Events failed (no answer in 2 s), 3 POSTs, kept by the fake")
    # Latency below the timeout: every Event arrives, once, count 1.
    before, fb = counters(env), fake(env)
    env.control("faults", {"latency_ms": 300, "only": "events"})
    try:
        for k in range(5):
            warned(admit(env, job_pod("train-slow-%d" % k, ns="team-slow"))[0])
        wait_for("5 slow Events sent", lambda: counters(env)["sent"] - before["sent"] >= 5, 60)
    finally:
        env.control("faults", {})
    d, f = delta(counters(env), before), delta(fake(env), fb)
    counts = [e["count"] for k in range(5) for e in events_of(env, "train-slow-%d" % k)]
    if d != {"sent": 5, "failed": 0, "dropped": 0, "deduplicated": 0, "limited": 0,
             "unverified": 0} or \
            f["event_posts"] != 5 or f["events_posted"] != 5 or counts != [1] * 5:
        R.fail("latency: counters %r, fake %r, counts %r" % (d, f, counts))
    print("latency 300 ms: 5 Events, 5 POSTs, each count 1")


def held(env):
    before, fb = counters(env), fake(env)
    env.control("hold", {"method": "POST", "only": "events"})
    try:
        for k in range(100):  # 25 in each of 4 namespaces: under the limit of 30
            warned(admit(env, job_pod("train-h-%d" % k, ns="team-h%d" % (k % 4)))[0])
        st, _ = env.request(env.replicas[0]["port"], "GET", "/healthz", timeout=2)
        c = counters(env)
        f = delta(fake(env), fb)
    finally:
        env.control("hold", {})
    d = delta(c, before)
    # 100 admissions answered with their warnings while the fake had kept
    # no Event: none of them waited for one.
    if st != 200 or f["events_posted"] != 0 or f["held"] < 1:
        R.fail("held: /healthz %d, fake %r" % (st, f))
    # The queue holds 64; the worker has taken at most the ones that reached
    # the gate (each gives up after 2 s) and one more on its way.
    if d["dropped"] < 100 - 64 - (f["held"] + 1) or d["deduplicated"] != 0 or d["limited"]:
        R.fail("held: %r dropped of 100, fake %r" % (d, f))

    def settled():
        now = delta(counters(env), before)
        return now["sent"] + now["failed"] == 100 - d["dropped"]
    wait_for("every queued Event posted or failed after the gate opened", settled, 60)
    wait_for("every POST that reached the fake kept",
             lambda: delta(fake(env), fb)["events_posted"] == delta(fake(env), fb)["event_posts"], 30)
    f = delta(fake(env), fb)
    now = delta(counters(env), before)
    if f["event_posts"] != now["sent"] + now["failed"]:
        R.fail("held: %r POSTs for %r" % (f, now))
    print("held: 100 admissions answered with 0 Events kept, %d dropped, %d queued and posted once"
          % (d["dropped"], f["event_posts"]))


def owners(env):
    uid = str(uuid.uuid4())
    warned(admit(env, jobset_pod("js-a", uid))[0])
    evs = wait_for("the Event of js-a", lambda: events_of(env, "js-a"))
    want = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "namespace": "team-a",
            "name": "js-a", "uid": uid}
    if len(evs) != 1 or evs[0]["involvedObject"] != want:
        R.fail("JobSet Event %r, expected one naming %r" % (evs, want))
    print("owners: JobSet Event with the jobset-uid label's uid")


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


def lws_io(name, uid=None):
    io = {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
          "namespace": "team-a", "name": name}
    if uid:
        io["uid"] = uid
    return io


def next_event(env, name, pod, want_io):
    """Admit pod (warned), wait for one more Event of name; it must name
    want_io and have count 1."""
    n = len(events_of(env, name))
    resp = admit(env, pod)[0]
    if not resp.get("allowed") or not resp.get("warnings"):
        R.fail("expected an allowed, warned pod: %r" % resp)
    evs = wait_for("Event %d of %s" % (n + 1, name), lambda: len(events_of(env, name)) > n and
                   events_of(env, name), 30)
    if len(evs) != n + 1 or evs[-1]["involvedObject"] != want_io or evs[-1]["count"] != 1:
        R.fail("%s: Events %r, expected Event %d naming %r" % (name, evs, n + 1, want_io))
    return evs[-1]


def uid_log_lines(env, name):
    with open(env.replicas[0]["log"]) as f:
        return [json.loads(line) for line in f if '"event_uid_unknown"' in line and
                json.loads(line).get("name") == name]


def lws_uid(env):
    """An LWS's Event carries the uid its GET answers; a second Event of it
    (another reason) costs no second GET."""
    uid = put_lws(env, "lws-a")
    fb = fake(env)
    next_event(env, "lws-a", lws_pod("lws-a"), lws_io("lws-a", uid))
    next_event(env, "lws-a", lws_pod("lws-a", generation_unknown=True), lws_io("lws-a", uid))
    f = delta(fake(env), fb)
    if f["lws_gets"] != 1 or f["events_posted"] != 2:
        R.fail("lws uid: fake %r" % f)
    print("lws: 2 Events of lws-a with its uid %s, 1 GET" % uid)


def lws_refused(env):
    """Refused (403: an RBAC without get leaderworkersets): the Event goes
    out without a uid, the refusal is remembered (a second Event makes no
    second GET), one log line."""
    for code in ("403",):
        name = "lws-r" + code
        put_lws(env, name)
        env.control("faults", {"error_rate": 1.0, "errors": ["403"], "only": "leaderworkersets"})
        fb = fake(env)
        try:
            next_event(env, name, lws_pod(name), lws_io(name))
        finally:
            env.control("faults", {})
        next_event(env, name, lws_pod(name, generation_unknown=True), lws_io(name))
        f = delta(fake(env), fb)
        lines = uid_log_lines(env, name)
        if f["lws_gets"] != 1 or f["events_posted"] != 2 or len(lines) != 1 or \
                lines[0]["status"] != int(code) or lines[0]["remembered"] is not True:
            R.fail("lws %s: fake %r, log %r" % (code, f, lines))
        print("lws %s: 2 Events of %s without uid, 1 GET, 1 log line" % (code, name))


def lws_forged(env):
    """An LWS pod carries no uid of its LWS: the Event names the uid the API
    server gives (lws_uid). A pod whose labels name an LWS the API server
    does not have (404) is answered with its warning and no Event is written
    about that LWS (counted unverified, one event_owner_mismatch line a
    pod); the 404 is not remembered (the LWS may be made), so a second pod
    makes a second GET. The Events thread takes its queue in order: once
    the Event of a real LWS sent after them has arrived, theirs would have
    too."""
    before, fb = counters(env), fake(env)
    for pod in (lws_pod("ghost-lws"), lws_pod("ghost-lws", generation_unknown=True)):
        resp = forged(review(pod))(env)  # not admit(): no LWS put at the fake
        if not resp.get("allowed") or not resp.get("warnings"):
            R.fail("expected an allowed, warned pod: %r" % resp)
    uid = put_lws(env, "after-lws")
    next_event(env, "after-lws", lws_pod("after-lws"), lws_io("after-lws", uid))
    d, f = delta(counters(env), before), delta(fake(env), fb)
    lines = mismatch_lines(env, "ghost-lws")
    if events_of(env, "ghost-lws") or d["unverified"] != 2 or d["sent"] != 1 or \
            f["lws_gets"] != 3 or len(lines) != 2 or lines[0]["api_uid"] != "":
        R.fail("forged LWS: Events %r, counters %r, fake %r, log %r"
               % (events_of(env, "ghost-lws"), d, f, lines))
    print("forged LWS: no such LWS, 2 pods: no Event, 2 unverified, 2 GETs; a real one's Event "
          "with its uid")


def lws_failed(env):
    """500, 429, a reset or a GET held past its 2 s: the Event goes out at
    once without a uid, nothing is remembered, and the next Event's GET
    (answered) gives the uid."""
    for label, ctl, faults, gets in (
            ("500", "faults", {"error_rate": 1.0, "errors": ["500"]}, (1, 1)),
            ("429", "faults", {"error_rate": 1.0, "errors": ["429"]}, (1, 1)),
            ("reset", "faults", {"error_rate": 1.0, "errors": ["reset"]}, (1, 2)),
            ("held", "hold", {"method": "GET"}, (1, 1))):
        name = "lws-f" + label
        uid = put_lws(env, name)
        fb = fake(env)
        env.control(ctl, dict(faults, only="leaderworkersets"))
        try:
            ev = next_event(env, name, lws_pod(name), lws_io(name))
            f = delta(fake(env), fb)
        finally:
            env.control(ctl, {})
        if not gets[0] <= f["lws_gets"] <= gets[1] or f["events_posted"] != 1 or \
                (label == "held" and f["held"] != 1):
            R.fail("lws %s: fake %r, Event %r" % (label, f, ev))
        first = f["lws_gets"]
        next_event(env, name, lws_pod(name, generation_unknown=True), lws_io(name, uid))
        f = delta(fake(env), fb)
        lines = uid_log_lines(env, name)
        if f["lws_gets"] != first + 1 or len(lines) != 1 or lines[0]["remembered"] is not False:
            R.fail("lws %s, then answered: fake %r, log %r" % (label, f, lines))
        print("lws %s: Event without uid (%d GET), then one with it (1 more GET)" % (label, first))


def window(binary):
    """--events-window=1ms: a warning after the window (the first Event has
    reached the fake) gets a new Event of count 1; an LWS's five Events make
    one GET."""
    env = R.Env(binary, claims=True, replicas=1, threads=2, extra_args=["--events-window=1ms"])
    try:
        env.wait_ready()
        warned(admit(env, job_pod("train-w", index=0))[0])
        wait_for("the first Event of train-w", lambda: events_of(env, "train-w"))
        warned(admit(env, job_pod("train-w", index=1))[0])
        evs = wait_for("the second Event of train-w", lambda: len(events_of(env, "train-w")) == 2
                       and events_of(env, "train-w"))
        wait_for("the sent count", lambda: counters(env)["sent"] >= 2)
        c = counters(env)
        if [e["count"] for e in evs] != [1, 1] or c["deduplicated"] != 0 or c["sent"] != 2:
            R.fail("window: Events %r, counters %r" % (evs, c))
        print("window: after the window, the same warning gets a new Event")
        uid = put_lws(env, "lws-w")
        fb = fake(env)
        for k in range(5):
            next_event(env, "lws-w", lws_pod("lws-w"), lws_io("lws-w", uid))
        f = delta(fake(env), fb)
        if f["lws_gets"] != 1 or f["events_posted"] != 5:
            R.fail("lws cache: fake %r" % f)
        print("window: 5 Events of lws-w with its uid, 1 GET")
        env.stop_replicas()
    finally:
        env.close()


DEDUPE_WINDOW_S = 2


def dedupe(binary):
    """--events-window=2s: 10 warnings of one Job, then one more once the
    window has passed since the last of them. Each warning is in exactly one
    Event's count: the counts add up to 11, whatever the load did to where
    the window fell; the 10 came within 2 s, so some were held back and the
    last Event carries them."""
    env = R.Env(binary, claims=True, replicas=1, threads=2,
                extra_args=["--events-window=%ds" % DEDUPE_WINDOW_S])
    try:
        env.wait_ready()
        for i in range(10):
            warned(admit(env, job_pod("train-d", index=i % 4, name="train-d-%d" % i))[0])
        # The last Event of these was queued before the last answer; a
        # warning a window after that answer opens a new one.
        time.sleep(DEDUPE_WINDOW_S + 0.3)
        warned(admit(env, job_pod("train-d", index=0, name="train-d-last"))[0])
        wait_for("the last Event of train-d", lambda: any(
            "train-d-last" in e["message"] for e in events_of(env, "train-d")), 30)
        wait_for("the sent count", lambda: counters(env)["sent"] == len(events_of(env, "train-d")))
        evs = events_of(env, "train-d")
        counts = [e["count"] for e in evs]
        c = counters(env)
        if sum(counts) != 11 or len(evs) < 2 or \
                c["deduplicated"] != 11 - len(evs) or c["deduplicated"] < 1 or c["dropped"]:
            R.fail("dedupe: counts %r, counters %r" % (counts, c))
        env.stop_replicas()
    finally:
        env.close()
    print("dedupe: 11 warnings, Events with counts %r (sum 11)" % counts)


def forged(review_text):
    """A made-up AdmissionReview sent as is."""
    def send(env):
        st, out = env.request(env.replicas[0]["port"], "POST", "/mutate-workload", review_text,
                              timeout=10)
        if st != 200:
            R.fail("/mutate-workload: HTTP %d %r" % (st, out[:300]))
        return json.loads(out)["response"]
    return send


def foreign(env):
    """The webhook speaks only for the request in front of it (issue 35
    item 2): a review whose object names another namespace than
    request.namespace is denied and writes nothing; one without
    request.namespace is answered and writes no Event. The Events thread
    takes its queue in order, so once a legitimate Event sent after them
    has arrived, theirs would have too."""
    before = counters(env)
    pod = job_pod("forged-a", ns="kube-system")
    rv = json.loads(review(pod))
    rv["request"]["namespace"] = "team-a"
    resp = forged(json.dumps(rv))(env)
    if resp.get("allowed") or 'object.metadata.namespace "kube-system" is not request.namespace ' \
            '"team-a"' not in resp["status"]["message"]:
        R.fail("a review of another namespace's object: %r" % resp)
    rv = json.loads(review(job_pod("forged-b")))
    del rv["request"]["namespace"]
    warned(forged(json.dumps(rv))(env))
    warned(admit(env, job_pod("after-forged"))[0])
    evs = wait_for("the Event of after-forged", lambda: events_of(env, "after-forged"))
    if evs[0]["_path_namespace"] != "team-a":
        R.fail("after-forged: %r" % evs)
    wait_for("the sent count", lambda: counters(env)["sent"] - before["sent"] >= 1)
    posted = env.control("stats", {})["posted_events"]
    bad = [e for e in posted if (e.get("involvedObject") or {}).get("name", "").startswith("forged")
           or e.get("_path_namespace") == "kube-system"]
    d = delta(counters(env), before)
    if bad or d["sent"] != 1:
        R.fail("foreign: Events %r, counters %r" % (bad, d))
    with open(env.replicas[0]["log"]) as f:
        lines = [json.loads(line) for line in f if '"event":"admission"' in line and
                 "forged-a" in line]
    if len(lines) != 1 or lines[0].get("decision") != "denied" or \
            "is not request.namespace" not in lines[0].get("message", ""):
        R.fail("foreign: the log lines of the review of another namespace's object: %r" % lines)
    print("foreign: another namespace's object denied, a review without namespace writes no "
          "Event")


def mismatch_lines(env, name):
    with open(env.replicas[0]["log"]) as f:
        return [json.loads(line) for line in f if '"event_owner_mismatch"' in line and
                json.loads(line).get("name") == name]


def forged_owner(env):
    """The uid a pod states for its workload is checked with a GET (issue 35
    item 2): a pod naming Job real-j with a uid the API server does not give
    it, a Job that does not exist, or JobSet real-js with another uid, is
    answered with its warning, and no Event is written about that workload
    (counted unverified, one event_owner_mismatch line each). The Events
    thread takes its queue in order: once a legitimate Event sent after
    them has arrived, theirs would have too."""
    before, fb = counters(env), fake(env)
    real_uid, js_uid = str(uuid.uuid4()), str(uuid.uuid4())
    env.control("jobs", [{"apiVersion": "batch/v1", "kind": "Job",
                          "metadata": {"name": "real-j", "namespace": "team-o", "uid": real_uid}}])
    env.control("jobsets", [{"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
                             "metadata": {"name": "real-js", "namespace": "team-o",
                                          "uid": js_uid}}])
    for pod in (job_pod("real-j", ns="team-o"), job_pod("ghost-j", ns="team-o"),
                jobset_pod("real-js", str(uuid.uuid4()), ns="team-o")):
        warned(forged(review(pod))(env))  # not admit(): nothing put at the fake
    warned(admit(env, job_pod("after-owner", ns="team-o"))[0])
    wait_for("the Event of after-owner", lambda: events_of(env, "after-owner"))
    wait_for("the sent count", lambda: counters(env)["sent"] - before["sent"] >= 1)
    d, f = delta(counters(env), before), delta(fake(env), fb)
    bad = [e for name in ("real-j", "ghost-j", "real-js") for e in events_of(env, name)]
    lines = {name: len(mismatch_lines(env, name)) for name in ("real-j", "ghost-j", "real-js")}
    if bad or d["unverified"] != 3 or d["sent"] != 1 or f["owner_gets"] != 4 or \
            lines != {"real-j": 1, "ghost-j": 1, "real-js": 1}:
        R.fail("forged owners: Events %r, counters %r, fake %r, log lines %r" % (bad, d, f, lines))
    ev = events_of(env, "after-owner")[0]
    if ev["involvedObject"].get("uid") != job_pod("after-owner")["metadata"]["ownerReferences"][0]["uid"]:
        R.fail("after-owner: %r" % ev)
    print("forged owners: another uid, no such Job, another JobSet uid: no Event, 3 unverified")
    # The GET refused (403: an RBAC without get jobs): the uid cannot be
    # checked, so the Event goes without it.
    env.control("faults", {"error_rate": 1.0, "errors": ["403"], "only": "/jobs/"})
    try:
        warned(admit(env, job_pod("noauth-j", ns="team-o"))[0])
        evs = wait_for("the Event of noauth-j", lambda: events_of(env, "noauth-j"))
    finally:
        env.control("faults", {})
    if "uid" in evs[0]["involvedObject"] or len(uid_log_lines(env, "noauth-j")) != 1:
        R.fail("a Job's uid not checked (403): Event %r, log %r"
               % (evs, uid_log_lines(env, "noauth-j")))
    print("forged owners: the Job's GET refused: its Event without uid")


def limited(env):
    """At most 30 Events per namespace per window: 40 Jobs of one namespace
    warned get 30 Events, 10 counted limited; another namespace still gets
    its own."""
    before = counters(env)
    for k in range(40):
        warned(admit(env, job_pod("train-l-%d" % k, ns="team-l"))[0])
    warned(admit(env, job_pod("train-l-other", ns="team-m"))[0])
    wait_for("31 Events sent", lambda: counters(env)["sent"] - before["sent"] >= 31, 60)
    d = delta(counters(env), before)
    n = sum(len(events_of(env, "train-l-%d" % k)) for k in range(40))
    if d["limited"] != 10 or d["sent"] != 31 or n != 30 or not events_of(env, "train-l-other"):
        R.fail("limited: %d Events of team-l, counters %r" % (n, d))
    print("limited: 40 warned Jobs of one namespace, 30 Events, 10 limited; another namespace's "
          "Event sent")


def main_group(binary):
    env = R.Env(binary, claims=True, replicas=1, threads=2)
    try:
        env.wait_ready()
        delivered(env)
        burst(env)
        failing(env)
        owners(env)
        distinct(env)
        foreign(env)
        forged_owner(env)
        limited(env)
        held(env)
        env.stop_replicas()
    finally:
        env.close()


def lws_group(binary):
    env = R.Env(binary, claims=True, replicas=1, threads=2)
    try:
        env.wait_ready()
        lws_uid(env)
        lws_refused(env)
        lws_forged(env)
        lws_failed(env)
        env.stop_replicas()
    finally:
        env.close()


GROUPS = {"main": main_group, "lws": lws_group, "window": window, "dedupe": dedupe}


def main():
    if len(sys.argv) != 3 or sys.argv[2] not in GROUPS:
        R.fail(__doc__)
    GROUPS[sys.argv[2]](sys.argv[1])
    print("PASS")


if __name__ == "__main__":
    main()
