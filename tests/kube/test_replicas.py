#!/usr/bin/python3
"""Several `tpu-webhook serve` replicas against one fake API server never hand
out the same legacy TPU_WORKER_ID (docs/legacy-indices.md, "Several replicas").

usage: test_replicas.py TPU_WEBHOOK SCENARIO

Three replicas share fake_apiserver.py (next to this file). A round sends 64
concurrent legacy admissions of one 16-host worker group (a new RayCluster
each round), each to a random replica, and creates every admitted pod in the
fake API server at once, as the API server would. A denied or failed
admission is sent again, to a random live replica, as KubeRay retries.
Every round must end with slices 0..3, each with TPU_WORKER_ID 0..15 exactly
once.

Scenarios:
  exact      8 rounds
  latency    4 rounds, every API request 10 ms late
  errors     4 rounds, 5% of API requests fail (500, 429 + Retry-After,
             timeouts that still carry out the request, connection resets)
  kill       one replica is killed (SIGKILL) mid-round; the admissions it
             never answered are retried once its claims have expired, then
             2 more rounds on the 2 live replicas
  no_claims  claims turned off (TPU_WEBHOOK_TEST_DISABLE_CLAIMS=1): the
             same rounds must show a duplicate id, so the check can fail
  lease_429  every Lease request answered 429 + Retry-After for 15 s (API
             Priority and Fairness throttling the webhook): /readyz of every
             replica stays 200 throughout, native pods are admitted, legacy
             pods are denied naming the API server's answer and saying
             KubeRay retries, the failures are counted; afterwards legacy
             pods are admitted again
  forged     4 rounds, each with 32 more admissions of the same group whose
             pods name a RayCluster owner uid the cluster does not have (a
             pod author writes ownerReferences); the fake API server knows
             the RayCluster and its real uid. Across all 96 admitted pods no
             (replicaIndex, TPU_WORKER_ID) pair may appear twice, and all 64
             legitimate pods must be admitted (issue 23: forged uids made
             the webhook supersede live claims)
  slow_claims  one replica with --threads=2, every Lease POST 2.5 s late:
             while 8 legacy pods wait for their claims, /healthz and native
             /mutate keep being answered (counted: answers that arrive before
             the first legacy answer), then 40 legacy pods at once: those
             beyond the workers and their queue are denied at once saying
             KubeRay will retry; no answer is a 5xx
"""
import base64
import ctypes
import json
import os
import random
import re
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import http.client

HERE = os.path.dirname(os.path.abspath(__file__))
TOKEN = "replica-test-token"
HOSTS, SLICES = 16, 4
LIFETIME_S = 6
NS = "tpu-webhook"


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def die_with_parent():
    """Children never outlive the test (a ctest timeout kills only us)."""
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


class Env:
    def __init__(self, binary, claims=True, replicas=3, threads=8, extra_args=()):
        self.binary = binary
        self.extra_args = list(extra_args)  # more `serve` flags for every replica
        self.threads = threads
        self.dir = tempfile.mkdtemp(prefix="wh-replicas-")
        self.procs = []
        self.api = None
        self.claims = claims
        self.make_certs()
        self.start_api()
        self.replicas = [self.start_replica(i) for i in range(replicas)]
        self.live = list(range(replicas))
        with open(os.path.join(HERE, "legacy-v6e-16.json")) as f:
            self.tmpl = f.read()
        self.ctx = ssl.create_default_context(cafile=self.path("ca.crt"))

    def path(self, name):
        return os.path.join(self.dir, name)

    def make_certs(self):
        d = self.dir
        with open(self.path("san.ext"), "w") as f:
            f.write("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
        ec = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes"
        for cmd in ("openssl req -x509 %s -keyout ca.key -out ca.crt -subj /CN=ca -days 1" % ec,
                    "openssl req %s -keyout srv.key -out srv.csr -subj /CN=localhost" % ec,
                    "openssl x509 -req -in srv.csr -CA ca.crt -CAkey ca.key -CAcreateserial "
                    "-out srv.crt -days 1 -extfile san.ext"):
            subprocess.run(cmd.split(), cwd=d, check=True, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)

    def start_api(self):
        port_file = self.path("api.port")
        self.api = subprocess.Popen(
            ["/usr/bin/python3", os.path.join(HERE, "fake_apiserver.py"), "--port-file",
             port_file, "--cert", self.path("srv.crt"), "--key", self.path("srv.key"),
             "--token", TOKEN, "--bookmark-interval", "0.2", "--fault-timeout", "2"],
            stdout=subprocess.DEVNULL, preexec_fn=die_with_parent)
        self.procs.append(self.api)
        self.api_port = int(self.wait_file(port_file, 30))
        with open(self.path("kubeconfig"), "w") as f:
            f.write("apiVersion: v1\nkind: Config\ncurrent-context: t\n"
                    "contexts:\n- name: t\n  context: {cluster: fake, user: u}\n"
                    "clusters:\n- name: fake\n  cluster:\n    server: https://127.0.0.1:%d\n"
                    "    certificate-authority: %s\n"
                    "users:\n- name: u\n  user:\n    token: %s\n"
                    % (self.api_port, self.path("ca.crt"), TOKEN))

    def wait_file(self, p, secs):
        end = time.monotonic() + secs
        while time.monotonic() < end:
            try:
                with open(p) as f:
                    t = f.read().strip()
                if t:
                    return t
            except FileNotFoundError:
                pass
            time.sleep(0.05)
        fail("%s did not appear" % p)

    def start_replica(self, i):
        log = self.path("replica%d.log" % i)
        env = dict(os.environ, POD_NAME="replica-%d" % i)
        env.pop("TPU_WEBHOOK_TEST_DISABLE_CLAIMS", None)
        if not self.claims:
            env["TPU_WEBHOOK_TEST_DISABLE_CLAIMS"] = "1"
        p = subprocess.Popen(
            [self.binary, "serve", "--bind-address=127.0.0.1:0", "--v=1"] +
            (["--threads=%d" % self.threads] if self.threads else []) +
            ["--tls-cert-file=" + self.path("srv.crt"),
             "--tls-private-key-file=" + self.path("srv.key"),
             "--kube-config-path=" + self.path("kubeconfig"), "--claims-namespace=" + NS,
             "--claim-lifetime=%ds" % LIFETIME_S, "--reservation-ttl=%ds" % LIFETIME_S,
             "--shutdown-delay=0s"] + self.extra_args,
            env=env, stdout=subprocess.DEVNULL, stderr=open(log, "w"), preexec_fn=die_with_parent)
        self.procs.append(p)
        end = time.monotonic() + 30
        while time.monotonic() < end:
            with open(log) as f:
                m = re.search(r'"event":"listening".*?"port":(\d+)', f.read())
            if m:
                return {"proc": p, "port": int(m.group(1)), "log": log}
            if p.poll() is not None:
                fail("replica %d exited: %s" % (i, open(log).read()[-2000:]))
            time.sleep(0.05)
        fail("replica %d did not listen" % i)

    def request(self, port, method, path, body=None, timeout=30):
        c = http.client.HTTPSConnection("127.0.0.1", port, context=self.ctx, timeout=timeout)
        try:
            c.request(method, path, body=body, headers={"Content-Type": "application/json",
                                                         "Authorization": "Bearer " + TOKEN})
            r = c.getresponse()
            return r.status, r.read()
        finally:
            c.close()

    def control(self, what, body):
        st, out = self.request(self.api_port, "POST", "/_control/" + what, json.dumps(body))
        if st != 200:
            fail("control %s: HTTP %d" % (what, st))
        return json.loads(out)

    def wait_ready(self):
        end = time.monotonic() + 60
        for i in self.live:
            while True:
                try:
                    st, _ = self.request(self.replicas[i]["port"], "GET", "/readyz", timeout=5)
                    if st == 200:
                        break
                except OSError:
                    pass
                if time.monotonic() > end:
                    fail("replica %d not ready" % i)
                time.sleep(0.1)

    def kill(self, i):
        self.live.remove(i)  # first: a request that fails from here on knows why
        self.replicas[i]["proc"].send_signal(signal.SIGKILL)
        self.replicas[i]["proc"].wait()

    def stop_replicas(self):
        """SIGTERM the live replicas: each must have stayed up and exit 0
        (under the sanitizers a report or a leak makes the exit code
        non-zero)."""
        for i in self.live:
            p = self.replicas[i]["proc"]
            if p.poll() is not None:
                fail("replica %d died (exit %s): %s" % (i, p.returncode,
                                                         open(self.replicas[i]["log"]).read()[-3000:]))
            p.terminate()
        for i in self.live:
            p = self.replicas[i]["proc"]
            try:
                rc = p.wait(60)
            except subprocess.TimeoutExpired:
                fail("replica %d did not exit within 60 s of SIGTERM" % i)
            if rc != 0:
                fail("replica %d exited %d: %s" % (i, rc,
                                                   open(self.replicas[i]["log"]).read()[-3000:]))

    def close(self):
        for p in self.procs:
            if p.poll() is None:
                p.terminate()
        for p in self.procs:
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
        shutil.rmtree(self.dir, ignore_errors=True)


def admitted_ids(resp):
    """(replica label, TPU_WORKER_ID) from an allowed response, else None."""
    r = json.loads(resp)["response"]
    if not r.get("allowed"):
        return None, r.get("status", {}).get("message", "")
    label, wid = None, None
    for op in json.loads(base64.b64decode(r["patch"])):
        if op["path"] == "/metadata/labels/replicaIndex":
            label = op["value"]
        vals = op["value"] if isinstance(op["value"], list) else [op["value"]]
        for v in vals:
            if isinstance(v, dict) and v.get("name") == "TPU_WORKER_ID":
                wid = int(v["value"])
    return (label, wid), None


def pod_of(review, name, label, wid):
    pod = json.loads(review)["request"]["object"]
    pod["metadata"]["name"] = name
    pod["metadata"]["uid"] = "uid-" + name
    pod["metadata"]["labels"]["replicaIndex"] = label
    pod["spec"]["containers"][0].setdefault("env", []).append(
        {"name": "TPU_WORKER_ID", "value": str(wid)})
    return pod


def owned(review, cluster, uid=None):
    """The review with the ownerReference KubeRay sets on its pods (docs/kuberay-pods.md):
    claims record the cluster's uid, and every 409 is read back. uid: another
    (forged) owner uid."""
    r = json.loads(review)
    r["request"]["object"]["metadata"]["ownerReferences"] = [{
        "apiVersion": "ray.io/v1", "kind": "RayCluster", "name": cluster,
        "uid": uid or "uid-" + cluster, "controller": True, "blockOwnerDeletion": True}]
    return json.dumps(r)


def run_round(env, rnd, kill_after=None, forged=0):
    """64 concurrent admissions (and forged ones); returns {(label, wid): count}
    of the legitimate ones, the denials, and {(label, wid): count} of all."""
    cluster = "r%d" % rnd
    plain = env.tmpl.replace("@CLUSTER@", cluster).replace("@GROUP@", "tpu")
    review = owned(plain, cluster)
    if forged:
        req = json.loads(review)["request"]
        ns = req["object"]["metadata"].get("namespace") or req.get("namespace")
        env.control("rayclusters", [{"apiVersion": "ray.io/v1", "kind": "RayCluster",
                                     "metadata": {"name": cluster, "namespace": ns,
                                                  "uid": "uid-" + cluster}}])
    got, everyone, lock = {}, {}, threading.Lock()
    orphaned = []      # admissions the killed replica never answered
    denials = []
    answered = [0]
    killed = threading.Event()

    def one(k):
        fake = k >= HOSTS * SLICES
        body = owned(plain, cluster, "forged-%d-%d" % (rnd, k)) if fake else review
        tries = 0
        while True:
            tries += 1
            if fake and tries > 5:
                return  # an attacker's pod may stay denied
            if tries > 50:
                with lock:
                    denials.append("admission %d: gave up after 50 tries" % k)
                return
            with lock:
                i = random.choice(env.live)
            try:
                st, out = env.request(env.replicas[i]["port"], "POST", "/mutate",
                                      body.replace("705ab4f5", "%08x" % (rnd * 1000 + k)))
            except OSError:
                if killed.is_set() and i not in env.live:
                    with lock:
                        orphaned.append(k)
                    return
                time.sleep(0.05)
                continue
            if st != 200:
                time.sleep(0.05)
                continue
            ids, why = admitted_ids(out)
            if ids is None and fake:
                time.sleep(0.05 * tries)
                continue
            if ids is None:  # denied: KubeRay retries
                with lock:
                    denials.append(why)
                if "two pods with the same TPU_WORKER_ID" in why:
                    return  # the slice is broken for good: retrying cannot help
                time.sleep(0.05 * tries)
                continue
            env.control("pods", [pod_of(body, "%s-tpu-%d" % (cluster, k), ids[0], ids[1])])
            with lock:
                everyone[ids] = everyone.get(ids, 0) + 1
                if fake:
                    return
                got[ids] = got.get(ids, 0) + 1
                answered[0] += 1
                if kill_after is not None and answered[0] == kill_after and not killed.is_set():
                    killed.set()
                    env.kill(env.live[-1])
            return

    def run(ks):
        ts = [threading.Thread(target=one, args=(k,)) for k in ks]
        for t in ts:
            t.start()
        for t in ts:
            t.join()

    run(range(HOSTS * SLICES + forged))
    if orphaned:
        # KubeRay creates the missing pods again; the dead replica's
        # claims block their ids until they expire (the claim lifetime),
        # another replica's sweeper deletes them (two sweep periods), and
        # the live replicas forget what they learned from them (the
        # reservation TTL, also LIFETIME_S here). A retry before that takes
        # a free id elsewhere (docs/legacy-indices.md, Known limits).
        time.sleep(2 * LIFETIME_S + 3)
        print("round %d: %d admissions lost with the killed replica, retried" %
              (rnd, len(orphaned)))
        run(orphaned)
    return got, denials, everyone


def check_round(got, rnd):
    want = {("tpu-%d" % r, h): 1 for r in range(SLICES) for h in range(HOSTS)}
    dups = {k: v for k, v in got.items() if v > 1}
    if got != want:
        extra = sorted(k for k in got if k not in want)
        missing = sorted(k for k in want if k not in got)
        return "round %d: duplicates %s, unexpected %s, missing %s" % (
            rnd, sorted(dups.items())[:8], extra[:8], missing[:8])
    return None


def metric(text, name):
    m = re.search(r"^%s (\d+)" % re.escape(name), text, re.M)
    return int(m.group(1)) if m else None


def lease_429(env):
    """Counts answers and states while every Lease request is refused; the
    15 s is the length of the fault, not a bound on any answer."""
    with open(os.path.join(HERE, "native-v6e-16.json")) as f:
        native = f.read().replace("@CLUSTER@", "n429").replace("@GROUP@", "tpu")
    legacy = owned(env.tmpl.replace("@CLUSTER@", "l429").replace("@GROUP@", "tpu"), "l429")
    env.control("faults", {"error_rate": 1.0, "errors": ["429"], "only": "leases"})
    c = {"ready": 0, "unready": [], "native_ok": 0, "native_bad": [], "legacy_denied": 0,
         "legacy_bad": []}
    lock = threading.Lock()
    end = time.monotonic() + 15

    def probes():
        while time.monotonic() < end:
            for i in env.live:
                st, out = env.request(env.replicas[i]["port"], "GET", "/readyz", timeout=10)
                with lock:
                    if st == 200:
                        c["ready"] += 1
                    else:
                        c["unready"].append("replica %d: %d %s" % (i, st, out[:200]))
            time.sleep(0.2)

    def natives(k):
        n = 0
        while time.monotonic() < end:
            n += 1
            i = env.live[n % len(env.live)]
            st, out = env.request(env.replicas[i]["port"], "POST", "/mutate",
                                  native.replace("705ab4f5", "%08x" % (k * 100000 + n)))
            ids, why = admitted_ids(out) if st == 200 else (None, "HTTP %d" % st)
            with lock:
                if ids is not None and ids[1] is not None:
                    c["native_ok"] += 1
                else:
                    c["native_bad"].append(why)

    def legacies(k):
        n = 0
        while time.monotonic() < end:
            n += 1
            i = env.live[n % len(env.live)]
            st, out = env.request(env.replicas[i]["port"], "POST", "/mutate",
                                  legacy.replace("705ab4f5", "%08x" % (k * 100000 + n)))
            ids, why = admitted_ids(out) if st == 200 else (None, "HTTP %d" % st)
            with lock:
                if ids is None and "HTTP 429" in why and "KubeRay will retry" in why:
                    c["legacy_denied"] += 1
                else:
                    c["legacy_bad"].append(why or "admitted %s" % (ids,))

    ts = [threading.Thread(target=probes)]
    ts += [threading.Thread(target=natives, args=(k,)) for k in range(2)]
    ts += [threading.Thread(target=legacies, args=(k,)) for k in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    env.control("faults", {})
    failed = 0
    for i in env.live:
        st, out = env.request(env.replicas[i]["port"], "GET", "/metrics")
        failed += metric(out.decode(), 'tpu_webhook_claims_total{result="failed"}') or 0
    stats = env.control("stats", {})
    print("lease_429: /readyz 200 x%d, other x%d; native admitted %d, other %d; legacy denied "
          "as throttled %d, other %d; claims failed (metrics) %d; API faults %d" % (
              c["ready"], len(c["unready"]), c["native_ok"], len(c["native_bad"]),
              c["legacy_denied"], len(c["legacy_bad"]), failed, stats["faults"]))
    if c["unready"]:
        fail("/readyz not 200 during Lease 429s: %s" % c["unready"][:3])
    if c["native_bad"] or not c["native_ok"]:
        fail("native pods not admitted during Lease 429s: %s" % c["native_bad"][:3])
    if c["legacy_bad"] or not c["legacy_denied"]:
        fail("legacy answers other than the throttled denial: %s" % c["legacy_bad"][:3])
    if failed < c["legacy_denied"]:
        fail("%d legacy denials but tpu_webhook_claims_total{result=\"failed\"} sums to %d" %
             (c["legacy_denied"], failed))
    if not c["ready"]:
        fail("no /readyz answered")
    # After the fault: the next legacy pod is admitted.
    st, out = env.request(env.replicas[env.live[0]]["port"], "POST", "/mutate",
                          legacy.replace("705ab4f5", "fffffff0"))
    ids, why = admitted_ids(out)
    if st != 200 or ids is None:
        fail("legacy pod not admitted once Leases answer again: %s %s" % (st, why))


def slow_claims(env):
    """Counts, not times: which answers arrive while claims wait."""
    with open(os.path.join(HERE, "native-v6e-16.json")) as f:
        native = f.read().replace("@CLUSTER@", "nslow").replace("@GROUP@", "tpu")
    port = env.replicas[0]["port"]
    env.control("faults", {"latency_ms": 2500, "only": "leases", "method": "POST"})
    lock = threading.Lock()
    legacy_answers = []
    first_legacy = threading.Event()

    def legacy(cluster, k):
        review = owned(env.tmpl.replace("@CLUSTER@", cluster).replace("@GROUP@", "tpu"), cluster)
        try:
            st, out = env.request(port, "POST", "/mutate",
                                  review.replace("705ab4f5", "%08x" % k), timeout=60)
        except OSError as e:
            st, out = 0, str(e).encode()
        with lock:
            legacy_answers.append((st, out))
        first_legacy.set()

    ts = [threading.Thread(target=legacy, args=("slow%d" % k, k)) for k in range(8)]
    for t in ts:
        t.start()
    time.sleep(0.3)  # the 8 are on the wire (the claims take 2.5 s and more)
    health = natives = 0
    other = []
    n = 0
    while not first_legacy.is_set():
        n += 1
        st, out = env.request(port, "GET", "/healthz", timeout=30)
        if first_legacy.is_set():
            break
        health += st == 200
        st, out = env.request(port, "POST", "/mutate",
                              native.replace("705ab4f5", "%08x" % (0x100000 + n)), timeout=30)
        if first_legacy.is_set():
            break
        ids, why = admitted_ids(out) if st == 200 else (None, "HTTP %d" % st)
        if ids is not None and ids[1] is not None:
            natives += 1
        else:
            other.append(why)
    for t in ts:
        t.join()
    print("slow_claims: while 8 legacy claims waited: /healthz answered %d, native admitted %d, "
          "other %d; legacy answers %s" % (health, natives, len(other),
                                           sorted(st for st, _ in legacy_answers)))
    if other:
        fail("native answers other than admitted while claims waited: %s" % other[:3])
    if health < 3 or natives < 3:
        fail("/healthz (%d) and native /mutate (%d) waited behind the claims" % (health, natives))
    if any(st != 200 for st, _ in legacy_answers):
        fail("legacy answers not 200: %s" % [(st, out[:200]) for st, out in legacy_answers])
    # More legacy pods at once than the workers and their queue hold.
    legacy_answers.clear()
    ts = [threading.Thread(target=legacy, args=("burst%d" % k, 1000 + k)) for k in range(40)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    env.control("faults", {})
    busy = 0
    for st, out in legacy_answers:
        if st != 200:
            fail("a legacy answer of HTTP %d: %s" % (st, out[:300]))
        ids, why = admitted_ids(out)
        if ids is None and "workers" in why and "KubeRay will retry" in why:
            busy += 1
    print("slow_claims: 40 legacy pods at once: %d denied at once as busy, %d decided" %
          (busy, len(legacy_answers) - busy))
    if not busy:
        fail("40 legacy pods at once with 2.5 s claims: none refused as busy")


def main():
    if len(sys.argv) != 3:
        fail(__doc__)
    binary, scenario = sys.argv[1], sys.argv[2]
    random.seed(os.getpid())
    env = Env(binary, claims=scenario != "no_claims",
              replicas=1 if scenario == "slow_claims" else 3,
              threads=2 if scenario == "slow_claims" else 8)
    try:
        env.wait_ready()
        if scenario == "slow_claims":
            slow_claims(env)
            env.stop_replicas()
            print("PASS %s" % scenario)
            return
        if scenario == "lease_429":
            lease_429(env)
            env.stop_replicas()
            print("PASS %s" % scenario)
            return
        rounds = {"exact": 8, "latency": 4, "errors": 4, "kill": 3, "no_claims": 6,
                  "forged": 4}[scenario]
        if scenario == "latency":
            env.control("faults", {"latency_ms": 10})
        if scenario == "errors":
            env.control("faults", {"error_rate": 0.05,
                                   "errors": ["500", "429", "timeout", "reset"]})
        problems = []
        denied = 0
        for rnd in range(rounds):
            got, denials, everyone = run_round(
                env, rnd, kill_after=20 if scenario == "kill" and rnd == 0 else None,
                forged=32 if scenario == "forged" else 0)
            denied += len(denials)
            if scenario == "forged":
                dups = sorted(k for k, v in everyone.items() if v > 1)
                n_legit = sum(got.values())
                forged_ok = sum(everyone.values()) - n_legit
                print("round %d: %d legitimate pods admitted, %d forged, %d duplicate pairs"
                      % (rnd, n_legit, forged_ok, len(dups)))
                p = None
                if dups or n_legit != HOSTS * SLICES:
                    p = "round %d: duplicates %s, %d of %d legitimate pods admitted" % (
                        rnd, dups[:8], n_legit, HOSTS * SLICES)
            else:
                p = check_round(got, rnd)
            if p:
                problems.append(p)
                if scenario == "no_claims":
                    break
            if denials:
                print("round %d: %d denials (retried), e.g. %s" % (rnd, len(denials),
                                                                    denials[0][:300]))
        stats = env.control("stats", {})
        print("%s: %d rounds, %d denials retried, API stats %s" % (
            scenario, rnd + 1, denied, json.dumps(stats)))
        if scenario == "no_claims":
            if not problems:
                fail("without claims, %d rounds of 3 replicas showed no duplicate: the test "
                     "cannot tell claims from luck" % rounds)
            print("without claims: %s" % problems[0])
            env.stop_replicas()
            return
        if problems:
            fail("\n".join(problems))
        # Bounded: claims go away by themselves (lifetime + sweeps; the
        # deletes are one request each, so a loaded machine needs a while).
        end = time.monotonic() + 60
        while env.control("stats", {})["leases"] and time.monotonic() < end:
            time.sleep(0.2)
        left = env.control("stats", {})["leases"]
        if left:
            fail("%d claim Leases left 60 s after the last round" % left)
        env.stop_replicas()
        print("PASS %s" % scenario)
    finally:
        env.close()


if __name__ == "__main__":
    main()
