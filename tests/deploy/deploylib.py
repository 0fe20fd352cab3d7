"""Checks shared by the deploy tests: load manifests, and verify a rendered set
of Kubernetes objects (kustomize output or Helm chart output) for the things
that silently break an admission webhook.

check_install(objs, ...) returns a list of problems (strings); empty means
the set is consistent. The tests assert on that list, and also feed it
deliberately broken copies to prove that each check can fail.
"""
import copy
import functools
import json
import os
import re
import shutil
import subprocess

import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

NAME = "kuberay-tpu-webhook"
SECRET = "kuberay-tpu-webhook-certs"
# The CA Certificate whose certificate is the caBundle (certs/issuer.yaml).
CA_CERT = "kuberay-tpu-webhook-ca"
ROLE = "kuberay-tpu-webhook-pod-reader"
MUTATING = "kuberay-tpu-mutating-webhook-cfg"
VALIDATING = "kuberay-tpu-validating-webhook-cfg"
TLS_DIR = "/etc/kuberay-tpu-webhook/tls"

# What `tpu-webhook serve` serves (issue 3) and the flags it accepts.
SERVER_ROUTES = {"/", "/mutate", "/validate", "/healthz", "/readyz", "/metrics"}
SERVER_FLAGS = {"bind-address", "tls-cert-file", "tls-private-key-file",
                "server-cert", "server-key", "kube-config-path", "v",
                "standalone", "max-body-bytes"}


def load_docs(text, where):
    """All non-empty YAML documents of text, as dicts."""
    docs = [d for d in yaml.safe_load_all(text) if d is not None]
    for d in docs:
        if not isinstance(d, dict) or "kind" not in d or "apiVersion" not in d:
            raise ValueError("%s: a document without kind/apiVersion: %r" % (where, d))
    return docs


def load_file(path):
    with open(path, encoding="utf-8") as f:
        return load_docs(f.read(), path)


def _kubectl_minor(path):
    try:
        p = subprocess.run([path, "version", "--client", "-o", "json"],
                           capture_output=True, text=True, timeout=60)
        return int(re.sub(r"\D.*", "", json.loads(p.stdout)["clientVersion"]["minor"]))
    except (OSError, ValueError, KeyError, subprocess.SubprocessError):
        return 0


@functools.lru_cache(maxsize=None)
def kubectl():
    """Path of a kubectl of 1.21 or later (its kustomize reads our
    kustomizations), or None: the one on PATH, else the test-only one
    scripts/setup.sh puts in build-tools/."""
    for path in (shutil.which("kubectl"), os.path.join(ROOT, "build-tools", "kubectl")):
        if path and os.access(path, os.X_OK) and _kubectl_minor(path) >= 21:
            return path
    return None


def kustomize_render(kdir):
    """Render a kustomization with `kubectl kustomize`, with every proxy set to
    a closed local port so that any attempt to fetch a remote base fails."""
    env = dict(os.environ)
    for k in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY"):
        env[k] = "http://127.0.0.1:9"
    env.pop("no_proxy", None)
    env.pop("NO_PROXY", None)
    p = subprocess.run([kubectl(), "kustomize", kdir], env=env,
                       capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        raise AssertionError("kubectl kustomize %s failed (kubectl 1.21 or later is needed: "
                             "its kustomize v4+ reads directories under resources): %s" %
                             (kdir, p.stderr))
    # A deprecated field today is a failed install with tomorrow's kubectl.
    if p.stderr.strip():
        raise AssertionError("kubectl kustomize %s warns: %s" % (kdir, p.stderr))
    return load_docs(p.stdout, "kubectl kustomize " + kdir)


def kustomization_files(kdir):
    """Structural view of a kustomization: every file it names (recursively
    through directory entries), as (path, docs, is_patch)."""
    kpath = os.path.join(kdir, "kustomization.yaml")
    with open(kpath, encoding="utf-8") as f:
        k = yaml.safe_load(f)
    out = []
    for field in ("resources", "patches"):
        for entry in k.get(field) or []:
            if field == "patches":
                if set(entry) != {"path"}:
                    raise AssertionError("%s: patches entry %s: only {path: FILE} is modelled" %
                                         (kpath, entry))
                entry = entry["path"]
            p = os.path.normpath(os.path.join(kdir, entry))
            if os.path.isdir(p):
                out.extend(kustomization_files(p))
            elif os.path.isfile(p):
                out.append((p, load_file(p), field == "patches"))
            else:
                raise AssertionError("%s: %s entry %s does not exist" % (kpath, field, entry))
    unknown = set(k) - {"apiVersion", "kind", "resources", "patches"}
    if unknown:
        raise AssertionError("%s: fields the structural check does not model: %s" % (kpath, unknown))
    return out


def find(objs, kind, name=None):
    return [o for o in objs if o.get("kind") == kind
            and (name is None or o.get("metadata", {}).get("name") == name)]


def one(objs, kind, name, errs):
    found = find(objs, kind, name)
    if len(found) != 1:
        errs.append("expected exactly one %s %s, found %d" % (kind, name, len(found)))
        return None
    return found[0]


def parse_args(args):
    """--flag=value / --flag value / --flag -> dict (last one wins)."""
    out, i = {}, 0
    while i < len(args):
        a = args[i]
        if not a.startswith("--"):
            raise ValueError("argument %r is not a --flag" % a)
        if "=" in a:
            k, v = a[2:].split("=", 1)
        elif i + 1 < len(args) and not args[i + 1].startswith("--"):
            k, v = a[2:], args[i + 1]
            i += 1
        else:
            k, v = a[2:], True
        out[k] = v
        i += 1
    return out


def duration_s(text):
    """A Go duration of the forms the manifests use (5s, 2500ms, 1m, 1m30s)
    in seconds; None when it is not one."""
    units = {"ms": 0.001, "s": 1, "m": 60, "h": 3600}
    parts = re.findall(r"(\d+(?:\.\d+)?)(ms|s|m|h)", str(text))
    if not parts or "".join(n + u for n, u in parts) != str(text):
        return None
    return sum(float(n) * units[u] for n, u in parts)


def labels_match(selector, labels):
    return all(labels.get(k) == v for k, v in (selector or {}).items())


def server_source_text():
    """All C sources of the server, or "" when `serve` is not in this tree yet
    (it lands in parallel); flag and route names are then checked against the
    lists above only."""
    main = os.path.join(ROOT, "src", "main.c")
    with open(main, encoding="utf-8") as f:
        if '"serve"' not in f.read():
            return ""
    text = []
    for d in ("src/shell", "src/offline", "src/core", "src/util"):
        for top, subdirs, files in os.walk(os.path.join(ROOT, d)):
            subdirs.sort()
            for n in sorted(files):
                if n.endswith(".c"):
                    with open(os.path.join(top, n), encoding="utf-8") as f:
                        text.append(f.read())
    with open(main, encoding="utf-8") as f:
        text.append(f.read())
    return "\n".join(text)


def server_flags():
    """Flags of `tpu-webhook serve`: read from its flag table once the server
    is in the tree, else the list above."""
    path = os.path.join(ROOT, "src", "shell", "cli", "cmd_serve.c")
    with open(path, encoding="utf-8") as f:
        found = set(re.findall(r'\{\s*"([a-z][a-z0-9-]*)",\s*WH_FLAG_', f.read()))
    if not SERVER_FLAGS <= found:
        raise AssertionError("cmd_serve.c lacks flags the deployment relies on: %s" % sorted(SERVER_FLAGS - found))
    return found


# Paths whose answers can claim a TPU_WORKER_ID through the API server (a
# Lease, src/shell/admit/claims.c), except on a dry run; the others have none.
CLAIMING_PATHS = ("/mutate", "/mutate-workload")


def side_effect_errors(objs):
    """Every webhook of every configuration in objs declares what it does:
    NoneOnDryRun where it can claim, None elsewhere (issue 23)."""
    errs = []
    for cfg in objs:
        if cfg.get("kind") not in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
            continue
        for w in cfg.get("webhooks") or []:
            path = ((w.get("clientConfig") or {}).get("service") or {}).get("path")
            want = "NoneOnDryRun" if path in CLAIMING_PATHS else "None"
            if w.get("sideEffects") != want:
                errs.append("%s %s webhook %s (%s) sideEffects is %r, expected %r"
                            % (cfg["kind"], cfg["metadata"]["name"], w.get("name"), path,
                               w.get("sideEffects"), want))
    return errs


def ca_chain_errors(objs):
    """cert-manager mode is a CA chain (certs/issuer.yaml): a self-signed
    Issuer signs the CA Certificate (isCA, its key kept at renewal), a CA
    Issuer signs the serving Certificate with the CA's secret; the caBundle is
    injected from the CA."""
    errs = []
    ca = find(objs, "Certificate", CA_CERT)
    if len(ca) != 1:
        return ["%d Certificates %s (the CA), expected 1" % (len(ca), CA_CERT)]
    cs = ca[0]["spec"]
    if cs.get("isCA") is not True:
        errs.append("Certificate %s is not isCA" % CA_CERT)
    if (cs.get("privateKey") or {}).get("rotationPolicy") != "Never":
        errs.append("CA %s changes its key at renewal: leaves it signed stop verifying" % CA_CERT)
    root = find(objs, "Issuer", (cs.get("issuerRef") or {}).get("name"))
    if len(root) != 1 or "selfSigned" not in root[0]["spec"]:
        errs.append("CA %s is not signed by a self-signed Issuer of this install" % CA_CERT)
    leaf = find(objs, "Certificate", SECRET)
    ref = (leaf[0]["spec"].get("issuerRef") or {}).get("name") if leaf else None
    ca_issuer = find(objs, "Issuer", ref)
    if len(ca_issuer) != 1 or (ca_issuer[0]["spec"].get("ca") or {}).get("secretName") != cs.get("secretName"):
        errs.append("serving Certificate %s is not signed by a CA Issuer of secret %s"
                    % (SECRET, cs.get("secretName")))
    if leaf and leaf[0]["spec"].get("isCA"):
        errs.append("serving Certificate %s is a CA" % SECRET)
    return errs


def check_install(objs, ns="ray-system", cert_manager=True):
    """Problems with a complete install of the webhook (see module doc)."""
    errs = []
    src = server_source_text()
    known_flags = server_flags()
    svc_dns = "%s.%s.svc" % (NAME, ns)

    for o in objs:
        md = o.get("metadata", {})
        if o["kind"] in ("Namespace", "ClusterRole", "ClusterRoleBinding",
                         "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
            if "namespace" in md:
                errs.append("%s %s is cluster-scoped but has a namespace" % (o["kind"], md.get("name")))
        elif md.get("namespace") != ns:
            errs.append("%s %s is in namespace %r, not %r" % (o["kind"], md.get("name"), md.get("namespace"), ns))

    # The Namespace is optional (the chart's namespace.create is off by
    # default: it usually exists); when rendered, it is the one named ns.
    namespaces = find(objs, "Namespace")
    if namespaces and [o["metadata"]["name"] for o in namespaces] != [ns]:
        errs.append("Namespaces %s rendered; expected none or only %s" %
                    ([o["metadata"]["name"] for o in namespaces], ns))
    sa = one(objs, "ServiceAccount", NAME, errs)
    role = one(objs, "ClusterRole", ROLE, errs)
    crb = one(objs, "ClusterRoleBinding", ROLE, errs)
    dep = one(objs, "Deployment", NAME, errs)
    svc = one(objs, "Service", NAME, errs)
    mwc = one(objs, "MutatingWebhookConfiguration", MUTATING, errs)
    vwc = one(objs, "ValidatingWebhookConfiguration", VALIDATING, errs)
    if None in (sa, role, crb, dep, svc, mwc, vwc):
        return errs

    # RBAC: the caches LIST and WATCH pods and nodes (and never GET one:
    # test_rbac.py compares every rule with the code's calls).
    for res in ("pods", "nodes"):
        verbs = set()
        for r in role.get("rules", []):
            if "" in r.get("apiGroups", []) and (res in r.get("resources", []) or "*" in r.get("resources", [])):
                verbs |= set(r.get("verbs", []))
        if not ({"list", "watch"} <= verbs or "*" in verbs):
            errs.append("ClusterRole %s grants %s only %s (needs list, watch)" % (ROLE, res, sorted(verbs)))
    # RBAC: a claim is superseded only after the RayCluster's uid is read
    # (get, nothing more: the webhook writes no RayCluster).
    rc_verbs = set()
    for r in role.get("rules", []):
        if "ray.io" in r.get("apiGroups", []) and "rayclusters" in r.get("resources", []):
            rc_verbs |= set(r.get("verbs", []))
    if rc_verbs != {"get"}:
        errs.append("ClusterRole %s grants rayclusters %s (superseding a claim needs exactly get)"
                    % (ROLE, sorted(rc_verbs)))
    # RBAC: Events on warned pods' workloads (src/shell/admit/events.c
    # POSTs core v1 events in the workload's namespace): create, nothing more.
    ev_verbs = set()
    for r in role.get("rules", []):
        if "" in r.get("apiGroups", []) and "events" in r.get("resources", []):
            ev_verbs |= set(r.get("verbs", []))
    if ev_verbs != {"create"}:
        errs.append("ClusterRole %s grants events %s (the webhook's Events need exactly create)"
                    % (ROLE, sorted(ev_verbs)))
    # RBAC: an LWS's Event needs its uid, read with one GET of the
    # LeaderWorkerSet (events.c): get, nothing more.
    lws_verbs = set()
    for r in role.get("rules", []):
        if "leaderworkerset.x-k8s.io" in r.get("apiGroups", []) and \
                "leaderworkersets" in r.get("resources", []):
            lws_verbs |= set(r.get("verbs", []))
    if lws_verbs != {"get"}:
        errs.append("ClusterRole %s grants leaderworkersets %s (an LWS Event's uid needs exactly get)"
                    % (ROLE, sorted(lws_verbs)))
    # RBAC: the worker-id claims, Leases in the webhook's own namespace only.
    claims = [o for o in objs if o["kind"] == "Role"
              and any("leases" in r.get("resources", []) for r in o.get("rules", []))]
    if len(claims) != 1:
        errs.append("%d Roles grant leases (the worker-id claims need one)" % len(claims))
    else:
        verbs = set()
        for r in claims[0]["rules"]:
            if "coordination.k8s.io" in r.get("apiGroups", []) and "leases" in r.get("resources", []):
                verbs |= set(r.get("verbs", []))
        need = {"create", "get", "list", "delete"}
        if verbs != need:
            errs.append("Role %s grants leases %s (the claims need exactly %s)"
                        % (claims[0]["metadata"]["name"], sorted(verbs), sorted(need)))
        rbs = [o for o in objs if o["kind"] == "RoleBinding"
               and o["roleRef"].get("name") == claims[0]["metadata"]["name"]]
        if not any(s.get("kind") == "ServiceAccount" and s.get("name") == NAME and s.get("namespace") == ns
                   for rb in rbs for s in rb.get("subjects", [])):
            errs.append("no RoleBinding gives the claims Role to ServiceAccount %s/%s" % (ns, NAME))
    if crb["roleRef"].get("name") != ROLE or crb["roleRef"].get("kind") != "ClusterRole":
        errs.append("ClusterRoleBinding does not bind ClusterRole %s" % ROLE)
    if not any(s.get("kind") == "ServiceAccount" and s.get("name") == NAME and s.get("namespace") == ns
               for s in crb.get("subjects", [])):
        errs.append("ClusterRoleBinding has no subject ServiceAccount %s/%s" % (ns, NAME))

    # Deployment: selector compatible with the reference (immutable field).
    spec = dep["spec"]
    pod = spec["template"]["spec"]
    tlabels = spec["template"]["metadata"].get("labels", {})
    if spec["selector"].get("matchLabels") != {"app": NAME} or spec["selector"].get("matchExpressions"):
        errs.append("Deployment selector %r differs from the reference's {app: %s}; "
                    "kubectl apply over the reference would fail" % (spec["selector"], NAME))
    if not labels_match(spec["selector"].get("matchLabels"), tlabels):
        errs.append("Deployment selector does not match its pod template labels")
    if pod.get("serviceAccountName") != NAME:
        errs.append("Deployment runs as service account %r, not %s" % (pod.get("serviceAccountName"), NAME))
    replicas = spec.get("replicas", 1)
    if not isinstance(replicas, int) or replicas < 1:
        errs.append("Deployment replicas %r is not a positive integer" % replicas)

    containers = [c for c in pod["containers"] if c.get("name") == NAME]
    if len(containers) != 1:
        errs.append("Deployment has no container named %s (the reference's name)" % NAME)
        return errs
    c = containers[0]
    try:
        flags = parse_args(c.get("args", []))
    except ValueError as e:
        errs.append("container args: %s" % e)
        return errs
    for f in flags:
        if f not in known_flags:
            errs.append("container flag --%s is not a flag of tpu-webhook serve" % f)
    if c.get("command"):
        errs.append("container overrides the image entrypoint (command); pass args only")

    m = re.fullmatch(r"[^:]*:(\d+)", str(flags.get("bind-address", ":443")))
    if not m:
        errs.append("--bind-address %r has no port" % flags.get("bind-address"))
        return errs
    port = int(m.group(1))
    https = [p for p in c.get("ports", []) if p.get("name") == "https"]
    if len(https) != 1 or https[0].get("containerPort") != port:
        errs.append("container port 'https' %r does not match --bind-address port %d" % (https, port))
    if "v" not in flags:
        errs.append("container args lack --v=N")

    # Shutdown: serve on for a while after SIGTERM (the endpoint is being
    # dropped), and let the kubelet wait for delay + drain.
    delay = duration_s(flags.get("shutdown-delay", "0s"))
    drain = duration_s(flags.get("shutdown-timeout", "20s"))
    grace = pod.get("terminationGracePeriodSeconds", 30)
    if delay is None or drain is None:
        errs.append("--shutdown-delay/--shutdown-timeout %r/%r are not durations"
                    % (flags.get("shutdown-delay"), flags.get("shutdown-timeout")))
    elif delay <= 0:
        errs.append("--shutdown-delay is 0: requests routed to a terminating pod are refused")
    elif not isinstance(grace, int) or grace < delay + drain + 1:
        errs.append("terminationGracePeriodSeconds %r is shorter than --shutdown-delay + "
                    "--shutdown-timeout (%gs) plus a second" % (grace, delay + drain))

    # TLS: files from the certificate secret, named as in a kubernetes.io/tls secret.
    vols = {v["name"]: v for v in pod.get("volumes", [])}
    mounts = [vm for vm in c.get("volumeMounts", []) if vols.get(vm["name"], {}).get("secret", {}).get("secretName") == SECRET]
    if len(mounts) != 1:
        errs.append("secret %s is not mounted exactly once in the container" % SECRET)
    else:
        mp = mounts[0]["mountPath"].rstrip("/")
        if mp != TLS_DIR:
            errs.append("certificate mounted at %s, the reference's path is %s" % (mp, TLS_DIR))
        if not mounts[0].get("readOnly"):
            errs.append("certificate volume is not mounted read-only")
        for flag, key in (("tls-cert-file", "tls.crt"), ("tls-private-key-file", "tls.key")):
            if flags.get(flag) != "%s/%s" % (mp, key):
                errs.append("--%s is %r, expected %s/%s (from secret %s) so renewals are re-read"
                            % (flag, flags.get(flag), mp, key, SECRET))
    if "server-cert" in flags or "server-key" in flags:
        errs.append("--server-cert/--server-key combined with the file flags is a start-up error")

    # Probes: existing routes, on the https port, over HTTPS.
    for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
        pr = c.get(probe)
        if not pr or "httpGet" not in pr:
            errs.append("container has no %s httpGet" % probe)
            continue
        g = pr["httpGet"]
        if g.get("path") != path:
            errs.append("%s path %r, expected %s" % (probe, g.get("path"), path))
        if g.get("path") not in SERVER_ROUTES or (src and '"%s"' % g.get("path") not in src):
            errs.append("%s path %r is not a route of the server" % (probe, g.get("path")))
        if g.get("port") not in ("https", port):
            errs.append("%s port %r is not the https port" % (probe, g.get("port")))
        if g.get("scheme") != "HTTPS":
            errs.append("%s scheme %r: the server only speaks HTTPS" % (probe, g.get("scheme")))

    # Hardening.
    psc, csc = pod.get("securityContext") or {}, c.get("securityContext") or {}
    eff = dict(psc)
    eff.update(csc)
    if not eff.get("runAsNonRoot") or eff.get("runAsUser", 0) == 0:
        errs.append("container may run as root (runAsNonRoot/runAsUser)")
    if csc.get("allowPrivilegeEscalation") is not False:
        errs.append("allowPrivilegeEscalation is not false")
    if csc.get("readOnlyRootFilesystem") is not True:
        errs.append("root filesystem is not read-only")
    if (eff.get("seccompProfile") or {}).get("type") != "RuntimeDefault":
        errs.append("seccomp profile is not RuntimeDefault")
    caps = csc.get("capabilities") or {}
    if caps.get("drop") != ["ALL"]:
        errs.append("capabilities drop %r, expected [ALL]" % caps.get("drop"))
    want_add = ["NET_BIND_SERVICE"] if port < 1024 else []
    if (caps.get("add") or []) != want_add:
        errs.append("capabilities add %r, expected %r for port %d" % (caps.get("add"), want_add, port))
    if port < 1024:
        sysctl = {s["name"]: s["value"] for s in psc.get("sysctls", [])}
        start = sysctl.get("net.ipv4.ip_unprivileged_port_start")
        if start is None or int(start) > port:
            errs.append("non-root process binds port %d without net.ipv4.ip_unprivileged_port_start <= %d"
                        % (port, port))
    res = c.get("resources") or {}
    for part, keys in (("requests", ("cpu", "memory")), ("limits", ("memory",))):
        for k in keys:
            if k not in (res.get(part) or {}):
                errs.append("container resources.%s.%s is not set" % (part, k))

    # Service: 443 to the https port of the webhook pods.
    sp = svc["spec"]
    if not labels_match(sp.get("selector"), tlabels) or not sp.get("selector"):
        errs.append("Service selector %r does not select the webhook pods" % sp.get("selector"))
    sports = sp.get("ports", [])
    if len(sports) != 1 or sports[0].get("port") != 443 or sports[0].get("targetPort") not in ("https", port):
        errs.append("Service ports %r: expected 443 -> https" % sports)

    # PodDisruptionBudget: present with >1 replica, and never blocks a drain for good.
    pdbs = find(objs, "PodDisruptionBudget")
    if isinstance(replicas, int) and replicas > 1 and len(pdbs) != 1:
        errs.append("%d replicas but %d PodDisruptionBudgets" % (replicas, len(pdbs)))
    for pdb in pdbs:
        ps = pdb["spec"]
        if not labels_match(ps.get("selector", {}).get("matchLabels"), tlabels):
            errs.append("PodDisruptionBudget does not select the webhook pods")
        if isinstance(ps.get("minAvailable"), int) and isinstance(replicas, int) and ps["minAvailable"] >= replicas:
            errs.append("PodDisruptionBudget minAvailable %r >= replicas %d: drains would block"
                        % (ps["minAvailable"], replicas))

    # Webhook configurations.
    errs += side_effect_errors(objs)
    svc_port = sports[0].get("port") if sports else None
    for cfg, hook, path in ((mwc, svc_dns, "/mutate"), (vwc, "raycluster-" + svc_dns, "/validate")):
        what = "%s %s" % (cfg["kind"], cfg["metadata"]["name"])
        hooks = cfg.get("webhooks", [])
        if len(hooks) != 1:
            errs.append("%s has %d webhooks, expected 1" % (what, len(hooks)))
            continue
        w = hooks[0]
        if w.get("name") != hook:
            errs.append("%s webhook name %r, the reference's is %r" % (what, w.get("name"), hook))
        cs = (w.get("clientConfig") or {}).get("service") or {}
        if cs.get("name") != NAME or cs.get("namespace") != ns:
            errs.append("%s calls service %s/%s, not %s/%s" % (what, cs.get("namespace"), cs.get("name"), ns, NAME))
        if cs.get("port", 443) != svc_port:
            errs.append("%s calls port %r, the Service listens on %r" % (what, cs.get("port", 443), svc_port))
        if cs.get("path") != path or path not in SERVER_ROUTES or (src and '"%s"' % path not in src):
            errs.append("%s path %r, expected the server route %s" % (what, cs.get("path"), path))
        if "url" in (w.get("clientConfig") or {}):
            errs.append("%s uses a url instead of the service" % what)
        for k, v in (("failurePolicy", "Fail"), ("timeoutSeconds", 5),
                     ("admissionReviewVersions", ["v1"]), ("matchPolicy", "Equivalent")):
            if w.get(k) != v:
                errs.append("%s %s is %r, expected %r" % (what, k, w.get(k), v))
        nsel = (w.get("namespaceSelector") or {}).get("matchExpressions") or []
        if not any(e.get("key") == "kubernetes.io/metadata.name" and e.get("operator") == "NotIn"
                   and {"kube-system", "kube-node-lease"} <= set(e.get("values", [])) for e in nsel):
            errs.append("%s does not exclude kube-system and kube-node-lease" % what)
        ann = cfg["metadata"].get("annotations") or {}
        inject = ann.get("cert-manager.io/inject-ca-from")
        if cert_manager:
            if inject != "%s/%s" % (ns, CA_CERT):
                errs.append("%s inject-ca-from %r, expected the CA %s/%s (not the serving leaf)"
                            % (what, inject, ns, CA_CERT))
        elif inject is not None:
            errs.append("%s asks cert-manager for CA injection without cert-manager" % what)
        rules = w.get("rules") or []
        if len(rules) != 1:
            errs.append("%s has %d rules, expected 1" % (what, len(rules)))
            continue
        r = rules[0]
        if path == "/mutate":
            want = ([""], ["v1"], ["CREATE"], ["pods"])
            if (w.get("objectSelector") or {}).get("matchLabels") != {"app.kubernetes.io/name": "kuberay"}:
                errs.append("%s objectSelector %r, expected app.kubernetes.io/name: kuberay"
                            % (what, w.get("objectSelector")))
            if w.get("reinvocationPolicy") not in ("IfNeeded", "Never"):
                errs.append("%s reinvocationPolicy %r" % (what, w.get("reinvocationPolicy")))
        else:
            want = (["ray.io"], ["*"], ["CREATE", "UPDATE"], ["rayclusters"])
            if w.get("objectSelector"):
                errs.append("%s has an objectSelector; RayClusters carry no fixed label" % what)
        got = (r.get("apiGroups"), r.get("apiVersions"), sorted(r.get("operations") or []), r.get("resources"))
        if got != (want[0], want[1], sorted(want[2]), want[3]) or r.get("scope") != "Namespaced":
            errs.append("%s rule %r, expected groups/versions/operations/resources %r, Namespaced" % (what, r, want))

    # cert-manager: the Certificate writes the secret the pods mount.
    certs, issuers = find(objs, "Certificate"), find(objs, "Issuer")
    if cert_manager:
        cert = one(objs, "Certificate", SECRET, errs)
        if cert:
            cs = cert["spec"]
            if cs.get("secretName") != SECRET:
                errs.append("Certificate writes secret %r, the pods mount %s" % (cs.get("secretName"), SECRET))
            want_dns = {svc_dns, svc_dns + ".cluster.local"}
            if not want_dns <= set(cs.get("dnsNames") or []):
                errs.append("Certificate dnsNames %r lack %s" % (cs.get("dnsNames"), sorted(want_dns)))
            if (cs.get("duration"), cs.get("renewBefore")) != ("2160h", "360h"):
                errs.append("Certificate duration/renewBefore %r/%r, expected 2160h/360h"
                            % (cs.get("duration"), cs.get("renewBefore")))
            ref = cs.get("issuerRef") or {}
            if ref.get("kind", "Issuer") != "Issuer" or not find(objs, "Issuer", ref.get("name")):
                errs.append("Certificate issuerRef %r names no Issuer of this install" % ref)
        errs += ca_chain_errors(objs)
    elif certs or issuers:
        errs.append("cert-manager objects present although cert-manager is off")
    return errs


def broken_copies(objs):
    """(description, broken copy) pairs: each must make check_install fail."""
    def mutate(desc, fn):
        c = copy.deepcopy(objs)
        fn(c)
        return desc, c

    def dep(c):
        return find(c, "Deployment", NAME)[0]

    def cont(c):
        return dep(c)["spec"]["template"]["spec"]["containers"][0]

    def args_sub(c, old, new):
        a = cont(c)["args"]
        cont(c)["args"] = [re.sub(old, new, x) for x in a]

    def first(c, kind):
        return find(c, kind)[0]

    out = [
        mutate("service renamed", lambda c: first(c, "Service")["metadata"].update(name="tpu-webhook")),
        mutate("nodes missing from RBAC", lambda c: first(c, "ClusterRole")["rules"][0].update(resources=["pods"])),
        mutate("watch verb missing", lambda c: first(c, "ClusterRole")["rules"][0].update(verbs=["get", "list"])),
        mutate("rayclusters get missing", lambda c: first(c, "ClusterRole").update(
            rules=first(c, "ClusterRole")["rules"][:1])),
        mutate("leaderworkersets get missing", lambda c: first(c, "ClusterRole").update(
            rules=[r for r in first(c, "ClusterRole")["rules"]
                   if "leaderworkersets" not in r.get("resources", [])])),
        mutate("lease delete verb missing",
               lambda c: first(c, "Role")["rules"][0].update(verbs=["create", "get", "list"])),
        mutate("leases granted everything", lambda c: first(c, "Role")["rules"][0].update(verbs=["*"])),
        mutate("readiness on a missing route",
               lambda c: cont(c)["readinessProbe"]["httpGet"].update(path="/ready")),
        mutate("probe over HTTP", lambda c: cont(c)["livenessProbe"]["httpGet"].update(scheme="HTTP")),
        mutate("webhook path typo",
               lambda c: first(c, "MutatingWebhookConfiguration")["webhooks"][0]["clientConfig"]["service"]
               .update(path="/mutate/")),
        mutate("webhook in another namespace",
               lambda c: first(c, "ValidatingWebhookConfiguration")["webhooks"][0]["clientConfig"]["service"]
               .update(namespace="default")),
        mutate("secret name mismatch",
               lambda c: dep(c)["spec"]["template"]["spec"]["volumes"][0]["secret"].update(secretName="certs")),
        mutate("tls file flag off the mount", lambda c: args_sub(c, r"^--tls-cert-file=.*", "--tls-cert-file=/tls/tls.crt")),
        mutate("no shutdown delay", lambda c: args_sub(c, r"^--shutdown-delay=.*", "--shutdown-delay=0s")),
        mutate("grace period shorter than delay + drain",
               lambda c: dep(c)["spec"]["template"]["spec"].update(terminationGracePeriodSeconds=20)),
        mutate("bind port differs from container port", lambda c: args_sub(c, r"^--bind-address=.*", "--bind-address=:9443")),
        mutate("selector changed", lambda c: dep(c)["spec"]["selector"].update(matchLabels={"app.kubernetes.io/name": NAME})),
        mutate("failurePolicy Ignore",
               lambda c: first(c, "MutatingWebhookConfiguration")["webhooks"][0].update(failurePolicy="Ignore")),
        mutate("validator without UPDATE",
               lambda c: first(c, "ValidatingWebhookConfiguration")["webhooks"][0]["rules"][0]
               .update(operations=["CREATE"])),
        mutate("root filesystem writable", lambda c: cont(c)["securityContext"].update(readOnlyRootFilesystem=False)),
        mutate("no memory limit", lambda c: cont(c)["resources"].pop("limits")),
        mutate("unknown flag", lambda c: cont(c)["args"].append("--port=443")),
        mutate("namespace drift", lambda c: first(c, "Service")["metadata"].update(namespace="default")),
    ]
    if find(objs, "Certificate"):
        out.append(mutate("certificate secret mismatch",
                          lambda c: find(c, "Certificate", SECRET)[0]["spec"].update(secretName="other")))
        out.append(mutate("certificate dnsName missing",
                          lambda c: find(c, "Certificate", SECRET)[0]["spec"].update(dnsNames=["kuberay-tpu-webhook"])))
        out.append(mutate("serving certificate self-signed", lambda c: [
            o["spec"].update(issuerRef={"kind": "Issuer", "name": "selfsigned-issuer"})
            for o in c if o["kind"] == "Certificate" and o["metadata"]["name"] == SECRET]))
    return out


# Fields newer than the Kubernetes API models Debian 12 packages
# (python3-kubernetes 22.6, API 1.22): (model, field) -> minimum version.
NEWER_FIELDS = {("V1PodDisruptionBudgetSpec", "unhealthyPodEvictionPolicy"): "1.26",
                ("V1MutatingWebhook", "matchConditions"): "1.28",
                ("V1ValidatingWebhook", "matchConditions"): "1.28"}


def match_conditions_errors(v, path):
    """admissionregistration.k8s.io/v1 MatchCondition (Kubernetes 1.28+),
    which the models above predate: a list of at most 64 {name, expression},
    names unique qualified names, expressions non-empty strings (their CEL:
    tests/deploy/cel.py)."""
    if not isinstance(v, list):
        return ["%s: expected a list, got %r" % (path, v)]
    errs, names = [], set()
    if len(v) > 64:
        errs.append("%s: %d conditions, at most 64" % (path, len(v)))
    for i, c in enumerate(v):
        where = "%s[%d]" % (path, i)
        if not isinstance(c, dict) or set(c) != {"name", "expression"}:
            errs.append("%s: expected exactly name and expression, got %r" % (where, c))
            continue
        n, e = c["name"], c["expression"]
        if not (isinstance(n, str) and len(n) <= 63
                and re.fullmatch(r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?", n)):
            errs.append("%s.name: %r is not a qualified name" % (where, n))
        if n in names:
            errs.append("%s.name: %r repeated" % (where, n))
        names.add(n)
        if not isinstance(e, str) or not e.strip():
            errs.append("%s.expression: %r is not a CEL expression" % (where, e))
    return errs

MODELS = {
    ("v1", "Namespace"): "V1Namespace",
    ("v1", "ServiceAccount"): "V1ServiceAccount",
    ("v1", "Service"): "V1Service",
    ("rbac.authorization.k8s.io/v1", "ClusterRole"): "V1ClusterRole",
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"): "V1ClusterRoleBinding",
    ("rbac.authorization.k8s.io/v1", "Role"): "V1Role",
    ("rbac.authorization.k8s.io/v1", "RoleBinding"): "V1RoleBinding",
    ("apps/v1", "Deployment"): "V1Deployment",
    ("policy/v1", "PodDisruptionBudget"): "V1PodDisruptionBudget",
    ("networking.k8s.io/v1", "NetworkPolicy"): "V1NetworkPolicy",
    ("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration"): "V1MutatingWebhookConfiguration",
    ("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration"): "V1ValidatingWebhookConfiguration",
}


def schema_errors(objs):
    """Unknown fields and wrongly typed values, checked against the API models
    of python3-kubernetes (what `kubectl apply --validate=strict` would reject
    on a live cluster). cert-manager objects have no model there and are
    skipped; check_install covers their fields."""
    import kubernetes.client as kc

    errs = []

    def walk(v, t, path):
        if t == "object" or t == "datetime":
            return
        if t in ("str", "int", "bool"):
            ok = {"str": isinstance(v, str), "int": isinstance(v, int) and not isinstance(v, bool),
                  "bool": isinstance(v, bool)}[t]
            if not ok:
                errs.append("%s: %r is not a %s" % (path, v, t))
            return
        m = re.fullmatch(r"list\[(.+)\]", t)
        if m:
            if not isinstance(v, list):
                errs.append("%s: expected a list, got %r" % (path, v))
                return
            for i, item in enumerate(v):
                walk(item, m.group(1), "%s[%d]" % (path, i))
            return
        m = re.fullmatch(r"dict\(str, (.+)\)", t)
        if m:
            if not isinstance(v, dict):
                errs.append("%s: expected a map, got %r" % (path, v))
                return
            for k, item in v.items():
                walk(item, m.group(1), "%s.%s" % (path, k))
            return
        model = getattr(kc, t)
        if not isinstance(v, dict):
            errs.append("%s: expected a %s object, got %r" % (path, t, v))
            return
        fields = {j: p for p, j in model.attribute_map.items()}
        for k, item in v.items():
            if (t, k) in NEWER_FIELDS:
                if k == "matchConditions":
                    errs.extend(match_conditions_errors(item, "%s.%s" % (path, k)))
                continue
            if k not in fields:
                errs.append("%s: unknown field %r in %s" % (path, k, t))
                continue
            walk(item, model.openapi_types[fields[k]], "%s.%s" % (path, k))

    for o in objs:
        t = MODELS.get((o.get("apiVersion"), o.get("kind")))
        if t is None:
            if not o.get("apiVersion", "").startswith("cert-manager.io/"):
                errs.append("%s %s: no API model to check it against" % (o.get("apiVersion"), o.get("kind")))
            continue
        walk(o, t, "%s/%s" % (o["kind"], o["metadata"].get("name")))
    return errs
