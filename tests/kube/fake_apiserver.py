#!/usr/bin/python3
"""A fake Kubernetes API server for the cache and client tests (stdlib only).

Serves LIST and WATCH of /api/v1/pods and /api/v1/nodes (and LIST of
/api/v1/services, and of namespaced pods and services) with label
selectors (k=v, k!=v, k, !k), paging (limit/continue), resourceVersion,
watch bookmarks, 410 Gone for compacted versions, bearer-token checking
(or a client certificate signed by --client-ca) and TLS. Listens on
127.0.0.1 only; plain requests keep their connection alive (HTTP/1.1).

coordination.k8s.io/v1 Leases (what the worker-id claims use) behave as
the real API server's: POST creates or answers 409 AlreadyExists, PUT with
a stale metadata.resourceVersion answers 409 Conflict, DELETE honours
DeleteOptions.preconditions (uid, resourceVersion: 409 Conflict on a
mismatch), GET and LIST (label selectors) read them. Every object gets a
uid and a resourceVersion. Deleting a pod or node deletes the Leases whose
metadata.ownerReferences name its uid (the garbage collector, at once).

Faults for plain API requests (not watches, not the control plane), set by
POST /_control/faults {"latency_ms": 10, "error_rate": 0.05, "errors":
["500", "429", "timeout", "reset"], "only": "leases", "method": "GET"}
("only" and "method" optional: a part of the path, an HTTP method): each
matching request waits
latency_ms, then with probability error_rate fails in one of the listed
ways, picked at random: 500 InternalError, 429 TooManyRequests with
Retry-After: 1, a timeout (the request is carried out, the answer comes
only after --fault-timeout seconds, so the client gives up not knowing
whether it happened) or a connection reset before anything is done.

A gate for making races happen in a chosen order: POST /_control/hold
{"method": "POST", "only": "leases"} makes every matching plain request
wait, after its body was read and before it is carried out, until
/_control/hold {} opens the gate (or 30 s pass); stats "held" counts the
requests that have waited at it, "held_names" lists the names of the
objects they carried (metadata.name of the body), oldest first.

Core v1 Events POSTed to /api/v1/namespaces/NS/events are kept (faults
and the hold gate apply, "only": "events"); /_control/stats lists the last
200 as "posted_events", counts every Event POST that arrived (before any
fault or the gate) as "event_posts" and every one kept as "events_posted".
LeaderWorkerSets (leaderworkerset.x-k8s.io/v1), put with
/_control/leaderworkersets[/delete], are read with GET .../namespaces/NS/
leaderworkersets/NAME (404 when absent; faults and the gate apply, "only":
"leaderworkersets"); "lws_gets" counts every such GET that arrived. Jobs and
JobSets likewise (/_control/jobs, /_control/jobsets; GET .../namespaces/NS/
jobs/NAME of batch/v1, .../jobsets/NAME of jobset.x-k8s.io/v1alpha2: the
Events' uid check), counted in "owner_gets".

Fault kinds also include "403" (Forbidden, as RBAC answers a missing rule)
and "404" (NotFound).

LISTs for doctor's scale and hostility tests: POST /_control/expire_continue
{"count": N} answers the next N LIST requests that carry a continue token
410 Expired (as the API server does once it compacted the list's snapshot);
/_control/list_error {"code": 503, "body": "text", "count": N} answers the
next N LISTs with that status and raw body (text/plain, as a proxy would);
/_control/filler {"count": 100000, "bytes": 1500} adds that many virtual
non-TPU pods of about that size (namespace "filler", label app=filler)
after the real ones in every pod LIST, generated as they are sent, so that a
big cluster costs the fake no memory. A LIST is written in pieces with its
Content-Length computed first, paged or not.

A control plane under /_control/ (no auth) lets tests change objects,
rotate the accepted tokens, compact history, cut open watches and read
counters. SIGTERM saves the state (--state) and exits at once, dropping
open watches mid-stream; starting again with the same --state and --port
is a restart: history before it is gone, so a client resuming from an old
resourceVersion gets 410 and must relist.
"""
import argparse
import bisect
import json
import os
import random
import re
import signal
import socket
import ssl
import struct
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class State:
    def __init__(self):
        self.cv = threading.Condition()
        self.rv = 1
        self.min_rv = 1          # watches from below this get 410
        self.objs = {"pods": {}, "nodes": {}, "leases": {}, "services": {}, "rayclusters": {},
                     "leaderworkersets": {}, "jobs": {}, "jobsets": {}}
        self.uid = 0
        self.faults = {}
        self.hold = {}           # see /_control/hold
        self.held_names = []
        self.posted_events = []  # Events POSTed by the webhook, oldest first
        self.events = []         # (rv, kind, type, obj)
        self.tokens = set()
        self.forbidden = set()   # tokens that authenticate but RBAC denies (403)
        self.epoch = 0           # bumped to cut open watches
        self.gone_epoch = -1     # the epoch whose cut sends a 410 ERROR first
        self.stalled = False     # open watches go silent (a half-dead connection)
        self.watch_error_html = False  # ... answered as a proxy's HTML page instead
        self.watch_error = 0     # non-zero: every new watch gets an ERROR event with this code
        self.expire_continue = 0  # LISTs with a continue token still to answer 410
        self.list_error = {}     # see /_control/list_error
        self.filler = {"count": 0, "bytes": 0}  # see /_control/filler
        self.stats = {"lists": 0, "watches": 0, "gone": 0, "unauthorized": 0, "events": 0,
                      "lease_creates": 0, "lease_conflicts": 0, "lease_deletes": 0,
                      "faults": 0, "held": 0, "list_paths": {}, "raycluster_gets": 0,
                      "event_posts": 0, "events_posted": 0, "lws_gets": 0,
                      "owner_gets": 0}

    @staticmethod
    def key(kind, obj):
        m = obj.get("metadata", {})
        return ((m.get("namespace", ""), m["name"]) if kind in ("pods", "leases", "services", "rayclusters", "leaderworkersets",
                                                      "jobs", "jobsets")
                else m["name"])

    def put(self, kind, obj, typ=None, silent=False):
        """Caller holds cv. silent: no watch event (as if history was lost)."""
        self.rv += 1
        obj = json.loads(json.dumps(obj))
        obj.setdefault("metadata", {})["resourceVersion"] = str(self.rv)
        k = self.key(kind, obj)
        if typ is None:
            typ = "MODIFIED" if k in self.objs[kind] else "ADDED"
        if typ == "DELETED":
            self.objs[kind].pop(k, None)
            uid = obj["metadata"].get("uid")
            if uid and kind != "leases":
                self.collect(uid, silent)
        else:
            if not obj["metadata"].get("uid"):
                self.uid += 1
                obj["metadata"]["uid"] = "fake-uid-%d" % self.uid
            self.objs[kind][k] = obj
        if not silent:
            self.events.append((self.rv, kind, typ, obj))
        if len(self.events) > 200000:
            drop = len(self.events) - 100000
            self.min_rv = self.events[drop][0]
            del self.events[:drop]

    def collect(self, owner_uid, silent):
        """The garbage collector: Leases owned by a deleted object go too."""
        for k, o in list(self.objs["leases"].items()):
            refs = o["metadata"].get("ownerReferences") or []
            if any(r.get("uid") == owner_uid for r in refs):
                self.put("leases", o, "DELETED", silent)

    def save(self, path):
        with open(path + ".tmp", "w") as f:
            json.dump({"rv": self.rv, "uid": self.uid,
                       "pods": list(self.objs["pods"].values()),
                       "nodes": list(self.objs["nodes"].values()),
                       "leases": list(self.objs["leases"].values())}, f)
        os.replace(path + ".tmp", path)

    def load(self, path):
        with open(path) as f:
            d = json.load(f)
        self.rv = d["rv"]
        self.uid = d.get("uid", 0)
        self.min_rv = self.rv + 1  # history is lost across a restart
        for kind in ("pods", "nodes", "leases"):
            for o in d.get(kind, []):
                self.objs[kind][self.key(kind, o)] = o


def parse_selector(text):
    terms = []
    for t in filter(None, (x.strip() for x in (text or "").split(","))):
        if "!=" in t:
            k, v = t.split("!=", 1)
            terms.append(("ne", k, v))
        elif "=" in t:
            k, v = t.split("=", 1)
            terms.append(("eq", k.rstrip("="), v))
        elif t.startswith("!"):
            terms.append(("absent", t[1:], None))
        else:
            terms.append(("exists", t, None))
    return terms


def matches(terms, obj):
    labels = obj.get("metadata", {}).get("labels") or {}
    for op, k, v in terms:
        if op == "eq" and labels.get(k) != v:
            return False
        if op == "ne" and labels.get(k) == v:
            return False
        if op == "exists" and k not in labels:
            return False
        if op == "absent" and k in labels:
            return False
    return True


def gen_pods(n, hosts=16):
    """n synthetic TPU worker pods: 16-host slices, one group per 1,024 pods."""
    out = []
    for i in range(n):
        c, r, h = i // 1024, (i % 1024) // hosts, i % hosts
        out.append({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "c%d-tpu-worker-%05d" % (c, i), "namespace": "ns%d" % (c % 8),
                         "uid": "uid-%d" % i,
                         "labels": {"ray.io/cluster": "c%d" % c, "ray.io/group": "tpu",
                                    "ray.io/node-type": "worker",
                                    "app.kubernetes.io/created-by": "kuberay-operator",
                                    "replicaIndex": "tpu-%d" % r}},
            "spec": {"containers": [{"name": "ray-worker",
                                     "resources": {"limits": {"google.com/tpu": "4"}},
                                     "env": [{"name": "TPU_WORKER_ID", "value": str(h)}]}]}})
    return out


def filler_pod(i, size):
    """Virtual pod i of /_control/filler as JSON bytes: a CPU pod, padded by
    an annotation to about size bytes (every one the same length)."""
    pod = {"metadata": {"name": "filler-%08d" % i, "namespace": "filler",
                        "uid": "filler-uid-%08d" % i, "labels": {"app": "filler"},
                        "annotations": {"pad": ""}},
           "spec": {"containers": [{"name": "app", "image": "registry.example/app:1",
                                    "resources": {"requests": {"cpu": "100m"}}}]},
           "status": {"phase": "Running"}}
    text = json.dumps(pod).encode()
    pad = b"x" * max(0, size - len(text))
    return text.replace(b'"pad": ""', b'"pad": "' + pad + b'"')


STATE = State()
SNAPSHOTS = {}
ARGS = None


# Core v1 Events: POST stores one (GET /_control/posted_events lists them).
EVENTS = re.compile(r"^/api/v1/namespaces/([^/]+)/events$")
LEASES = re.compile(r"^/apis/coordination\.k8s\.io/v1/namespaces/([^/]+)/leases(?:/([^/]+))?$")
# GET of one RayCluster (the claims' owner check); objects come from
# /_control/rayclusters.
RAYCLUSTER = re.compile(r"^/apis/ray\.io/v1/namespaces/([^/]+)/rayclusters/([^/]+)$")
# GET of one LeaderWorkerSet (the Events' uid of an LWS); objects come from
# /_control/leaderworkersets.
LWS = re.compile(r"^/apis/leaderworkerset\.x-k8s\.io/v1/namespaces/([^/]+)/leaderworkersets/([^/]+)$")
# GET of one Job or JobSet (the Events' check of the uid a pod names);
# objects come from /_control/jobs and /_control/jobsets.
OWNER = re.compile(r"^/apis/(?:batch/v1|jobset\.x-k8s\.io/v1alpha2|leaderworkerset\.x-k8s\.io/v1)/"
                   r"namespaces/([^/]+)/(jobs|jobsets|leaderworkersets)/([^/]+)$")


def now_micro():
    t = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + ".%06dZ" % int(t % 1 * 1e6)


class Handler(BaseHTTPRequestHandler):
    # Plain requests keep the connection alive; a watch answers
    # "Connection: close" and its body runs until the close.
    protocol_version = "HTTP/1.1"
    # Answers leave at once (TCP_NODELAY): with Nagle, an answer written in
    # pieces waited up to the client's delayed-ACK time (~40 ms) per request.
    disable_nagle_algorithm = True

    def log_message(self, fmt, *a):
        if ARGS.verbose:
            sys.stderr.write("fake-apiserver: " + fmt % a + "\n")

    def send_json(self, code, obj, headers=None):
        body = json.dumps(obj).encode()
        self.send_response(code)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        # Headers and body in one TLS record and one segment: a second small
        # write would wait for the client's delayed ACK were Nagle on.
        self._headers_buffer.append(b"\r\n" + body)
        self.flush_headers()

    def status(self, code, reason, msg):
        self.send_json(code, {"kind": "Status", "apiVersion": "v1", "metadata": {},
                              "status": "Failure", "message": msg, "reason": reason, "code": code})

    def authorized(self):
        if ARGS.client_ca and self.connection.getpeercert():
            return True
        auth = self.headers.get("Authorization", "")
        with STATE.cv:
            ok = auth.startswith("Bearer ") and auth[7:] in STATE.tokens
            if not ok:
                STATE.stats["unauthorized"] += 1
        return ok

    def read_body(self):
        n = int(self.headers.get("Content-Length") or 0)
        return json.loads(self.rfile.read(n) or b"null")

    def fault(self, method, path):
        """Injected latency and errors. True when the request is answered
        (or cut) here; "timeout" returns the delay to add after doing it."""
        with STATE.cv:
            f = dict(STATE.faults)
        if f.get("only") and f["only"] not in path:
            return None
        if f.get("method") and f["method"] != method:
            return None
        if f.get("latency_ms"):
            time.sleep(f["latency_ms"] / 1000.0)
        if not f.get("error_rate") or random.random() >= f["error_rate"]:
            return None
        kind = random.choice(f.get("errors") or ["500"])
        with STATE.cv:
            STATE.stats["faults"] += 1
        if kind == "500":
            self.status(500, "InternalError", "Internal error occurred: etcdserver: leader changed")
        elif kind == "429":
            self.send_json(429, {"kind": "Status", "apiVersion": "v1", "metadata": {},
                                 "status": "Failure", "reason": "TooManyRequests", "code": 429,
                                 "message": "storage is (re)initializing"},
                           {"Retry-After": "1"})
        elif kind == "reset":
            self.close_connection = True
            try:  # RST instead of FIN: the client sees "connection reset"
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                           struct.pack("ii", 1, 0))
                self.connection.close()
            except OSError:
                pass
        elif kind in ("403", "404"):
            self.status(int(kind), "Forbidden" if kind == "403" else "NotFound",
                        "injected %s for %s" % (kind, path))
        elif kind == "timeout":
            return "timeout"
        return True

    def wait_at_gate(self, method, path):
        with STATE.cv:
            h = STATE.hold
            if not h or h.get("method", method) != method or h.get("only", "") not in path:
                return
            STATE.stats["held"] += 1
            STATE.held_names.append(
                ((getattr(self, "held_body", None) or {}).get("metadata") or {}).get("name", ""))
            end = time.monotonic() + 30
            while STATE.hold and time.monotonic() < end:
                STATE.cv.wait(0.1)

    def api(self, method):
        """Leases (any method) and fault injection; False: not handled here."""
        u = urllib.parse.urlparse(self.path)
        if u.path.startswith("/_control/"):
            return False
        # Every API request's User-Agent, counted (stats "user_agents"), so
        # tests can check that each call says which client and build it is.
        with STATE.cv:
            ua = self.headers.get("User-Agent", "(none)")
            agents = STATE.stats.setdefault("user_agents", {})
            if ua in agents or len(agents) < 100:
                agents[ua] = agents.get(ua, 0) + 1
        q = dict(urllib.parse.parse_qsl(u.query, keep_blank_values=True))
        if q.get("watch") in ("1", "true"):
            return False
        m = LEASES.match(u.path)
        ev = EVENTS.match(u.path) if method == "POST" else None
        with STATE.cv:  # arrivals, before the gate and any fault
            if ev:
                STATE.stats["event_posts"] += 1
            if method == "GET" and LWS.match(u.path):
                STATE.stats["lws_gets"] += 1
            if method == "GET" and OWNER.match(u.path) and not LWS.match(u.path):
                STATE.stats["owner_gets"] += 1
        # The body is read first, so that an injected answer leaves the
        # kept-alive connection at the start of the next request.
        body = self.read_body() if (m or ev) and method in ("POST", "PUT", "DELETE") else None
        self.held_body = body if isinstance(body, dict) else None
        self.wait_at_gate(method, u.path)
        f = self.fault(method, u.path)
        if f is True:
            return True
        if ev:
            if not self.authorized():
                self.status(401, "Unauthorized", "Unauthorized")
                return True
            with STATE.cv:
                STATE.posted_events.append(dict(body or {}, _path_namespace=ev.group(1)))
                STATE.stats["events_posted"] += 1
            if f == "timeout":
                time.sleep(ARGS.fault_timeout)
            self.send_json(201, body)
            return True
        if not m:
            if f == "timeout":
                time.sleep(ARGS.fault_timeout)
            return False
        if not self.authorized():
            self.status(401, "Unauthorized", "Unauthorized")
            return True
        code, out = self.leases(method, m.group(1), m.group(2), q, body)
        if f == "timeout":
            time.sleep(ARGS.fault_timeout)
        self.send_json(code, out)
        return True

    @staticmethod
    def st(code, reason, msg, name=None):
        o = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
             "message": msg, "reason": reason, "code": code}
        if name:
            o["details"] = {"name": name, "group": "coordination.k8s.io", "kind": "leases"}
        return code, o

    def leases(self, method, ns, name, q, body):
        with STATE.cv:
            objs = STATE.objs["leases"]
            if name is None and method == "GET":
                terms = parse_selector(q.get("labelSelector"))
                items = [o for (n, _), o in sorted(objs.items()) if n == ns and matches(terms, o)]
                return 200, {"kind": "LeaseList", "apiVersion": "coordination.k8s.io/v1",
                             "metadata": {"resourceVersion": str(STATE.rv)}, "items": items}
            if name is None and method == "POST":
                meta = (body or {}).get("metadata") or {}
                name = meta.get("name")
                if not name or meta.get("namespace", ns) != ns:
                    return self.st(422, "Invalid", "Lease is invalid: metadata.name: Required")
                if (ns, name) in objs:
                    STATE.stats["lease_conflicts"] += 1
                    return self.st(409, "AlreadyExists",
                                   'leases.coordination.k8s.io "%s" already exists' % name, name)
                body["metadata"]["namespace"] = ns
                body["metadata"].pop("uid", None)
                body["metadata"]["creationTimestamp"] = now_micro()[:19] + "Z"
                STATE.put("leases", body, "ADDED")
                STATE.stats["lease_creates"] += 1
                return 201, objs[(ns, name)]
            cur = objs.get((ns, name)) if name else None
            if name is None or method not in ("GET", "PUT", "DELETE"):
                return self.st(405, "MethodNotAllowed", "the server does not allow this method")
            if cur is None:
                return self.st(404, "NotFound",
                               'leases.coordination.k8s.io "%s" not found' % name, name)
            if method == "GET":
                return 200, cur
            if method == "PUT":
                want = ((body or {}).get("metadata") or {}).get("resourceVersion")
                if want and want != cur["metadata"]["resourceVersion"]:
                    STATE.stats["lease_conflicts"] += 1
                    return self.st(409, "Conflict",
                                   'Operation cannot be fulfilled on leases.coordination.k8s.io '
                                   '"%s": the object has been modified; please apply your '
                                   'changes to the latest version and try again' % name, name)
                body["metadata"]["uid"] = cur["metadata"]["uid"]
                body["metadata"]["namespace"] = ns
                STATE.put("leases", body, "MODIFIED")
                return 200, objs[(ns, name)]
            pre = (body or {}).get("preconditions") or {}
            for field in ("uid", "resourceVersion"):
                if pre.get(field) and pre[field] != cur["metadata"].get(field):
                    STATE.stats["lease_conflicts"] += 1
                    return self.st(409, "Conflict",
                                   'Operation cannot be fulfilled on leases.coordination.k8s.io '
                                   '"%s": Precondition failed: %s: %s, ObjectMeta.%s: %s'
                                   % (name, field, pre[field], field,
                                      cur["metadata"].get(field)), name)
            STATE.put("leases", cur, "DELETED")
            STATE.stats["lease_deletes"] += 1
            return 200, {"kind": "Status", "apiVersion": "v1", "metadata": {},
                         "status": "Success", "details": {"name": name}}

    def do_PUT(self):
        if not self.api("PUT"):
            self.status(404, "NotFound", "the server could not find the requested resource")

    def do_DELETE(self):
        if not self.api("DELETE"):
            self.status(404, "NotFound", "the server could not find the requested resource")

    def do_POST(self):
        if self.api("POST"):
            return
        body = self.read_body()
        u = urllib.parse.urlparse(self.path)
        path = u.path
        silent = "silent=1" in u.query
        parts = path.split("/")[2:]  # /_control/<what>[/delete]
        with STATE.cv:
            if parts[0] in ("pods", "nodes", "services", "rayclusters", "leases", "leaderworkersets",
                            "jobs", "jobsets"):
                kind = parts[0]
                for o in body:
                    if len(parts) > 1 and parts[1] == "delete":
                        k = STATE.key(kind, o)
                        cur = STATE.objs[kind].get(k)
                        if cur is not None:
                            STATE.put(kind, cur, "DELETED", silent)
                    else:
                        STATE.put(kind, o, None, silent)
            elif parts[0] == "expire":
                # History is gone: every open watch gets a 410 ERROR event
                # (body {"in_stream": true}) or is cut, and resuming from any
                # version seen so far is refused with 410.
                STATE.rv += 1
                STATE.events.clear()
                STATE.min_rv = STATE.rv + 1
                STATE.epoch += 1
                STATE.gone_epoch = STATE.epoch if (body or {}).get("in_stream") else -1
            elif parts[0] == "stall":
                # {"on": true}: open watches send nothing (events are held
                # back, no bookmarks) until {"on": false}.
                STATE.stalled = bool((body or {}).get("on"))
            elif parts[0] == "watch_error":
                # {"code": 500}: every new watch answers one ERROR event and
                # ends (a sick API server); {"code": 0} heals it.
                STATE.watch_error = int((body or {}).get("code") or 0)
                STATE.watch_error_html = bool((body or {}).get("html"))
            elif parts[0] == "hold":
                STATE.hold = dict(body or {})
            elif parts[0] == "expire_continue":
                STATE.expire_continue = int((body or {}).get("count") or 0)
            elif parts[0] == "list_error":
                STATE.list_error = dict(body or {})
            elif parts[0] == "filler":
                STATE.filler = {"count": int((body or {}).get("count") or 0),
                                "bytes": int((body or {}).get("bytes") or 0)}
            elif parts[0] == "faults":
                STATE.faults = dict(body or {})
            elif parts[0] == "tokens":
                STATE.tokens = set(body)
            elif parts[0] == "forbidden":
                STATE.forbidden = set(body)
            elif parts[0] == "compact":
                STATE.events.clear()
                STATE.min_rv = STATE.rv + 1
            elif parts[0] == "close_watches":
                STATE.epoch += 1
            elif parts[0] != "stats":
                self.status(404, "NotFound", "no control " + path)
                return
            STATE.cv.notify_all()
            out = dict(STATE.stats, list_paths=dict(STATE.stats["list_paths"]), held_names=STATE.held_names[-100:], posted_events=STATE.posted_events[-200:], rv=STATE.rv, pods=len(STATE.objs["pods"]),
                       nodes=len(STATE.objs["nodes"]), leases=len(STATE.objs["leases"]))
        self.send_json(200, out)

    def raycluster(self, path):
        """GET /apis/ray.io/v1/namespaces/NS/rayclusters/NAME; False: not one."""
        m = RAYCLUSTER.match(path)
        if not m:
            return False
        if not self.authorized():
            self.status(401, "Unauthorized", "Unauthorized")
            return True
        with STATE.cv:
            STATE.stats["raycluster_gets"] += 1
            o = STATE.objs["rayclusters"].get((m.group(1), m.group(2)))
        if o is None:
            self.status(404, "NotFound", 'rayclusters.ray.io "%s" not found' % m.group(2))
        else:
            self.send_json(200, o)
        return True

    def owner(self, path):
        """GET of one Job (batch/v1), JobSet (jobset.x-k8s.io/v1alpha2) or
        LeaderWorkerSet (leaderworkerset.x-k8s.io/v1)."""
        m = OWNER.match(path)
        if not m:
            return False
        if not self.authorized():
            self.status(401, "Unauthorized", "Unauthorized")
            return True
        ns, kind, name = (urllib.parse.unquote(g) for g in m.groups())
        with STATE.cv:
            o = STATE.objs[kind].get((ns, name))
        if o is None:
            self.status(404, "NotFound", '%s "%s" not found' % (kind, name))
        else:
            self.send_json(200, o)
        return True

    def do_GET(self):
        if self.api("GET"):
            return
        u = urllib.parse.urlparse(self.path)
        if self.raycluster(u.path) or self.owner(u.path):
            return
        q = dict(urllib.parse.parse_qsl(u.query, keep_blank_values=True))
        kind = {"/api/v1/pods": "pods", "/api/v1/nodes": "nodes",
                "/api/v1/services": "services"}.get(u.path)
        ns = None
        m = re.match(r"^/api/v1/namespaces/([^/]+)/(pods|services)$", u.path)
        if m:
            ns, kind = urllib.parse.unquote(m.group(1)), m.group(2)
        if kind is None:
            self.status(404, "NotFound", "the server could not find the requested resource")
            return
        if not self.authorized():
            self.status(401, "Unauthorized", "Unauthorized")
            return
        if self.headers.get("Authorization", "")[7:] in STATE.forbidden:
            self.status(403, "Forbidden", '%s is forbidden: User "system:serviceaccount:x:y" '
                        'cannot list resource "%s" in API group "" at the cluster scope'
                        % (kind, kind))
            return
        terms = parse_selector(q.get("labelSelector"))
        if q.get("watch") in ("1", "true") and kind != "services" and ns is None:
            self.watch(kind, terms, q)
        else:
            with STATE.cv:  # every LIST counted by path ("list_paths" in the stats)
                lp = STATE.stats["list_paths"]
                lp[u.path] = lp.get(u.path, 0) + 1
            self.list(kind, terms, q, ns)

    def list(self, kind, terms, q, ns=None):
        limit = int(q.get("limit") or 0)
        start = 0
        with STATE.cv:
            STATE.stats["lists"] += 1
            err = STATE.list_error
            if err.get("count"):
                err["count"] -= 1
                self.send_raw(int(err.get("code") or 500), "text/plain",
                              [err.get("body", "").encode("utf-8", "surrogateescape")])
                return
            if q.get("continue"):
                list_rv, start = map(int, q["continue"].split(":"))
                if list_rv < STATE.min_rv - 1 or STATE.expire_continue:
                    STATE.expire_continue = max(0, STATE.expire_continue - 1)
                    STATE.stats["gone"] += 1
                    self.status(410, "Expired", "The provided continue parameter is too old "
                                "to display a consistent list result. You can start a new list "
                                "without the continue parameter.")
                    return
            else:
                list_rv = STATE.rv
            fill = dict(STATE.filler) if kind == "pods" and ns in (None, "filler") else None
            if fill and not matches(terms, {"metadata": {"labels": {"app": "filler"}}}):
                fill = None
            n_fill = fill["count"] if fill else 0
            # One snapshot per paged LIST, so pages are consistent and cheap.
            snap_key = (kind, list_rv, q.get("labelSelector"), ns)
            items = SNAPSHOTS.get(snap_key)
            if items is None:
                keys = sorted(STATE.objs[kind])
                items = [STATE.objs[kind][k] for k in keys]
                items = [o for o in items if matches(terms, o) and
                         (ns is None or o["metadata"].get("namespace") == ns)]
                if limit and len(items) + n_fill > limit:
                    SNAPSHOTS.clear()
                    SNAPSHOTS[snap_key] = items
        total = len(items) + n_fill
        end = min(start + limit, total) if limit else total
        meta = {"resourceVersion": str(list_rv)}
        if end < total:
            meta["continue"] = "%d:%d" % (list_rv, end)
        head = ('{"kind": "%s", "apiVersion": "v1", "metadata": %s, "items": ['
                % ({"pods": "PodList", "nodes": "NodeList", "services": "ServiceList"}[kind],
                   json.dumps(meta))).encode()
        real = [json.dumps(o).encode() for o in items[start:min(end, len(items))]]
        fills = range(max(start, len(items)) - len(items), end - len(items))
        fill_len = len(filler_pod(0, fill["bytes"])) if fill else 0
        count = len(real) + len(fills)

        def pieces():
            yield head
            for i, r in enumerate(real):
                yield (b"," if i else b"") + r
            batch = []
            for j, i in enumerate(fills):
                batch.append((b"," if real or j else b"") + filler_pod(i, fill["bytes"]))
                if len(batch) == 256:
                    yield b"".join(batch)
                    batch = []
            if batch:
                yield b"".join(batch)
            yield b"]}"
        length = (len(head) + sum(len(r) for r in real) + len(fills) * fill_len
                  + max(0, count - 1) + 2)
        self.send_raw(200, "application/json", pieces(), length)

    def send_raw(self, code, ctype, pieces, length=None):
        """An answer written piece by piece (pieces: bytes), its length known."""
        if length is None:
            pieces = list(pieces)
            length = sum(len(x) for x in pieces)
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(length))
        self.end_headers()
        try:
            for x in pieces:
                self.wfile.write(x)
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError, OSError):
            self.close_connection = True

    def watch(self, kind, terms, q):
        rv = int(q.get("resourceVersion") or 0)
        timeout = float(q.get("timeoutSeconds") or 300)
        bookmarks = q.get("allowWatchBookmarks") in ("1", "true")
        deadline = time.monotonic() + timeout
        with STATE.cv:
            STATE.stats["watches"] += 1
            epoch = STATE.epoch
            gone = rv < STATE.min_rv - 1 or (rv and rv > STATE.rv)
            if gone:
                STATE.stats["gone"] += 1
            sick = STATE.watch_error
            html = STATE.watch_error_html
        if sick and html and not gone:
            page = b"<html><body><h1>502 Bad Gateway</h1></body></html>\n"
            self.close_connection = True
            self.send_response(sick)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(page)))
            self.end_headers()
            self.wfile.write(page)
            return
        self.close_connection = True
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Connection", "close")
        self.end_headers()

        def send(ev):
            self.wfile.write(json.dumps(ev).encode() + b"\n")
            self.wfile.flush()

        try:
            if sick and not html and not gone:
                send({"type": "ERROR", "object": {
                    "kind": "Status", "apiVersion": "v1", "status": "Failure", "code": sick,
                    "reason": "InternalError", "message": "etcdserver: request timed out"}})
                return
            if gone:
                send({"type": "ERROR", "object": {
                    "kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 410,
                    "reason": "Expired", "message": "too old resource version: %d (%d)"
                    % (rv, STATE.min_rv)}})
                return
            last_bookmark = time.monotonic()
            while True:
                with STATE.cv:
                    while True:
                        if STATE.epoch != epoch:
                            if STATE.gone_epoch == STATE.epoch:
                                STATE.stats["gone"] += 1
                                send({"type": "ERROR", "object": {
                                    "kind": "Status", "apiVersion": "v1", "status": "Failure",
                                    "code": 410, "reason": "Expired",
                                    "message": "too old resource version"}})
                            return
                        if STATE.stalled and time.monotonic() < deadline:
                            STATE.cv.wait(0.2)
                            continue
                        i = bisect.bisect_right(STATE.events, rv, key=lambda e: e[0])
                        pending = [e for e in STATE.events[i:] if e[1] == kind]
                        now = time.monotonic()
                        if pending or now >= deadline:
                            break
                        if bookmarks and now - last_bookmark >= ARGS.bookmark_interval:
                            break
                        STATE.cv.wait(min(deadline - now, ARGS.bookmark_interval, 0.5))
                    cur_rv = STATE.rv
                if not pending and time.monotonic() >= deadline:
                    return
                for erv, _, typ, obj in pending:
                    rv = erv
                    if matches(terms, obj):
                        send({"type": typ, "object": obj})
                        with STATE.cv:
                            STATE.stats["events"] += 1
                if not pending and bookmarks:
                    rv = max(rv, cur_rv)
                    send({"type": "BOOKMARK", "object": {
                        "kind": "Pod" if kind == "pods" else "Node", "apiVersion": "v1",
                        "metadata": {"resourceVersion": str(rv)}}})
                    last_bookmark = time.monotonic()
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError, OSError):
            return


def main():
    global ARGS
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--port-file")
    p.add_argument("--cert")
    p.add_argument("--key")
    p.add_argument("--client-ca")
    p.add_argument("--token", action="append", default=[])
    p.add_argument("--state")
    p.add_argument("--gen-pods", type=int, default=0)
    p.add_argument("--gen-nodes", type=int, default=0)
    p.add_argument("--bookmark-interval", type=float, default=1.0)
    p.add_argument("--fault-timeout", type=float, default=5.0)
    p.add_argument("--verbose", action="store_true")
    ARGS = p.parse_args()
    STATE.tokens = set(ARGS.token)
    if ARGS.state and os.path.exists(ARGS.state):
        STATE.load(ARGS.state)
    with STATE.cv:
        for o in gen_pods(ARGS.gen_pods):
            STATE.put("pods", o)
        for i in range(ARGS.gen_nodes):
            STATE.put("nodes", {"metadata": {"name": "tpu-node-%d" % i, "labels": {
                "cloud.google.com/gke-tpu-accelerator": "tpu-v6e-slice",
                "cloud.google.com/gke-tpu-topology": "4x4",
                "cloud.google.com/gke-nodepool": "pool-%d" % (i // 4)}}})
    class Server(ThreadingHTTPServer):
        daemon_threads = True
        allow_reuse_address = True
        request_queue_size = 256

        def handle_error(self, request, client_address):
            if ARGS.verbose:  # refused handshakes are expected in the TLS tests
                super().handle_error(request, client_address)

    srv = Server(("127.0.0.1", ARGS.port), Handler)
    if ARGS.cert:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(ARGS.cert, ARGS.key)
        if ARGS.client_ca:
            ctx.verify_mode = ssl.CERT_OPTIONAL
            ctx.load_verify_locations(ARGS.client_ca)
        # Handshakes happen in the handler threads, not in the accept loop.
        srv.socket = ctx.wrap_socket(srv.socket, server_side=True,
                                     do_handshake_on_connect=False)

    def stop(*_):
        if ARGS.state:
            with STATE.cv:
                STATE.save(ARGS.state)
        os._exit(0)

    signal.signal(signal.SIGTERM, stop)
    if ARGS.port_file:
        with open(ARGS.port_file + ".tmp", "w") as f:
            f.write(str(srv.server_address[1]))
        os.replace(ARGS.port_file + ".tmp", ARGS.port_file)
    srv.serve_forever()


if __name__ == "__main__":
    main()
