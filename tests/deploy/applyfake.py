"""Just enough of a Kubernetes API server for `kubectl apply` (client-side
apply) of the webhook's objects, so that an upgrade (the reference's
manifests applied, then this project's) can be played with the real
kubectl: its three-way merge, its last-applied-configuration annotation.

Serves legacy discovery (/api, /apis, /api/v1, /apis/G/V) for the kinds in
RESOURCES, GET of one object (404 NotFound when absent), POST (create; 409
AlreadyExists) and PATCH of an object. A strategic merge patch (built-in
kinds) is applied by `kubectl patch --local`, that is by kubectl's own
strategic-merge code; a JSON merge patch (cert-manager's kinds) per RFC
7386. No authentication, no defaulting, no admission, no garbage
collection: the stored objects are exactly what the patches make of them.
Listens on 127.0.0.1 (an ephemeral port) in a thread of the test process.
"""
import json
import os
import subprocess
import tempfile
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# group/version -> [(resource, kind, namespaced)]
RESOURCES = {
    "v1": [("namespaces", "Namespace", False), ("serviceaccounts", "ServiceAccount", True),
           ("services", "Service", True), ("secrets", "Secret", True)],
    "apps/v1": [("deployments", "Deployment", True)],
    "policy/v1": [("poddisruptionbudgets", "PodDisruptionBudget", True)],
    "rbac.authorization.k8s.io/v1": [("clusterroles", "ClusterRole", False),
                                     ("clusterrolebindings", "ClusterRoleBinding", False),
                                     ("roles", "Role", True), ("rolebindings", "RoleBinding", True)],
    "admissionregistration.k8s.io/v1": [
        ("mutatingwebhookconfigurations", "MutatingWebhookConfiguration", False),
        ("validatingwebhookconfigurations", "ValidatingWebhookConfiguration", False)],
    "cert-manager.io/v1": [("issuers", "Issuer", True), ("certificates", "Certificate", True)],
    "monitoring.coreos.com/v1": [("servicemonitors", "ServiceMonitor", True),
                                 ("prometheusrules", "PrometheusRule", True)],
}
VERBS = ["create", "delete", "get", "list", "patch", "update", "watch"]


def merge_patch(target, patch):
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return patch
    out = dict(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = merge_patch(out.get(k), v)
    return out


def strategic_patch(kubectl, obj, patch):
    """obj with the strategic merge patch applied by kubectl itself."""
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "live.json")
        with open(path, "w") as f:
            json.dump(obj, f)
        env = {"PATH": os.environ.get("PATH", ""), "HOME": d}
        p = subprocess.run([kubectl, "patch", "--local", "-f", path, "--type", "strategic",
                            "-p", json.dumps(patch), "-o", "json"],
                           capture_output=True, text=True, timeout=60, env=env)
    if p.returncode != 0:
        raise ValueError("kubectl patch --local: " + p.stderr.strip())
    return json.loads(p.stdout)


class Store:
    def __init__(self):
        self.objs = {}  # (group/version, namespace or "", resource, name) -> object
        self.lock = threading.Lock()
        self.rv = 0
        self.requests = []  # (method, path, content type)

    def stamp(self, obj, new):
        self.rv += 1
        md = obj.setdefault("metadata", {})
        if new:
            md["uid"] = str(uuid.uuid4())
            md["creationTimestamp"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        md["resourceVersion"] = str(self.rv)

    def objects(self):
        """Stored objects without what only the server adds."""
        out = []
        with self.lock:
            for o in self.objs.values():
                o = json.loads(json.dumps(o))
                for k in ("uid", "resourceVersion", "creationTimestamp"):
                    o["metadata"].pop(k, None)
                out.append(o)
        return out


def route(path):
    """(group/version, namespace, resource, name) of an API path, or None."""
    parts = [p for p in path.split("?", 1)[0].split("/") if p]
    if parts[:2] == ["api", "v1"]:
        gv, rest = "v1", parts[2:]
    elif parts[:1] == ["apis"] and len(parts) >= 3:
        gv, rest = parts[1] + "/" + parts[2], parts[3:]
    else:
        return None
    ns = ""
    if len(rest) >= 3 and rest[0] == "namespaces":
        ns, rest = rest[1], rest[2:]
    if not rest or len(rest) > 2:
        return None
    return gv, ns, rest[0], rest[1] if len(rest) == 2 else None


def status(code, reason, message):
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "reason": reason, "message": message, "code": code}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def send(self, code, body):
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def body(self):
        n = int(self.headers.get("Content-Length") or 0)
        return json.loads(self.rfile.read(n) or b"null")

    def discovery(self, path):
        if path == "/api":
            return {"kind": "APIVersions", "versions": ["v1"],
                    "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}]}
        if path == "/apis":
            groups = []
            for gv in RESOURCES:
                if "/" in gv:
                    g, v = gv.split("/")
                    ver = {"groupVersion": gv, "version": v}
                    groups.append({"name": g, "versions": [ver], "preferredVersion": ver})
            return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}
        if path == "/version":
            return {"major": "1", "minor": "30", "gitVersion": "v1.30.0"}
        gv = "v1" if path == "/api/v1" else path[len("/apis/"):] if path.startswith("/apis/") else None
        if gv in RESOURCES:
            return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv,
                    "resources": [{"name": r, "singularName": k.lower(), "namespaced": n, "kind": k,
                                   "verbs": VERBS} for r, k, n in RESOURCES[gv]]}
        return None

    def target(self):
        store = self.server.store
        store.requests.append((self.command, self.path, self.headers.get("Content-Type")))
        r = route(self.path)
        if r is None or r[2] not in [x[0] for x in RESOURCES.get(r[0], [])]:
            self.send(404, status(404, "NotFound", "no such path %s" % self.path))
            return None, None
        return store, r

    def do_GET(self):
        path = self.path.split("?", 1)[0]
        d = self.discovery(path)
        if d is not None:
            self.send(200, d)
            return
        store, r = self.target()
        if store is None:
            return
        with store.lock:
            obj = store.objs.get(r) if r[3] else None
        if obj is None:
            self.send(404, status(404, "NotFound", '%s "%s" not found' % (r[2], r[3])))
        else:
            self.send(200, obj)

    def do_POST(self):
        store, r = self.target()
        if store is None:
            return
        obj = self.body()
        key = (r[0], r[1], r[2], obj["metadata"]["name"])
        with store.lock:
            if key in store.objs:
                self.send(409, status(409, "AlreadyExists", "%s exists" % (key,)))
                return
            store.stamp(obj, True)
            store.objs[key] = obj
        self.send(201, obj)

    def do_PATCH(self):
        store, r = self.target()
        if store is None:
            return
        patch, ctype = self.body(), self.headers.get("Content-Type", "")
        with store.lock:
            live = store.objs.get(r)
        if live is None:
            self.send(404, status(404, "NotFound", '%s "%s" not found' % (r[2], r[3])))
            return
        try:
            if ctype.startswith("application/strategic-merge-patch+json"):
                new = strategic_patch(self.server.kubectl, live, patch)
            elif ctype.startswith("application/merge-patch+json"):
                new = merge_patch(live, patch)
            else:
                self.send(415, status(415, "UnsupportedMediaType", ctype))
                return
        except ValueError as e:
            self.send(422, status(422, "Invalid", str(e)))
            return
        with store.lock:
            store.stamp(new, False)
            store.objs[r] = new
        self.send(200, new)


class FakeAPIServer:
    """with FakeAPIServer(kubectl) as api: api.kubectl("apply", "-f", ...)"""

    def __init__(self, kubectl):
        self.kubectl_path = kubectl
        self.store = Store()
        self.dir = tempfile.TemporaryDirectory()

    def __enter__(self):
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.store = self.store
        self.httpd.kubectl = self.kubectl_path
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()
        self.kubeconfig = os.path.join(self.dir.name, "kubeconfig")
        with open(self.kubeconfig, "w") as f:
            json.dump({"apiVersion": "v1", "kind": "Config", "current-context": "fake",
                       "clusters": [{"name": "fake", "cluster": {
                           "server": "http://127.0.0.1:%d" % self.httpd.server_address[1]}}],
                       "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "fake"}}],
                       "users": [{"name": "fake", "user": {}}]}, f)
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()
        self.dir.cleanup()

    def kubectl(self, *args, cwd=None):
        """Run kubectl against this server; raises on failure."""
        env = {"PATH": os.environ.get("PATH", ""), "HOME": self.dir.name, "KUBECONFIG": self.kubeconfig}
        for k in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY"):
            env[k] = "http://127.0.0.1:9"  # no remote bases; the server is on loopback
        env["NO_PROXY"] = env["no_proxy"] = "127.0.0.1"
        p = subprocess.run([self.kubectl_path, "--cache-dir", os.path.join(self.dir.name, "cache")]
                           + list(args), capture_output=True, text=True, timeout=180, env=env, cwd=cwd)
        if p.returncode != 0:
            raise AssertionError("kubectl %s failed: %s%s" % (" ".join(args), p.stdout, p.stderr))
        return p.stdout, p.stderr
