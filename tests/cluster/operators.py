"""What the operator cases (test_kuberay.py, test_workloads.py) add to
clusterlib: manifests moved into a case's namespace, waiting for a pod set
to settle at an exact count (scale-downs included), and the webhook's
mutating configurations taken away, or changed, for the negative
controls."""

import contextlib
import json
import os
import time

import yaml

import clusterlib as cl


def load_docs(path):
    """The objects of a YAML (multi-document, List) or JSON manifest."""
    with open(path) as f:
        docs = [json.load(f)] if path.endswith(".json") else [d for d in yaml.safe_load_all(f) if d]
    return [i for d in docs for i in (d["items"] if d.get("kind") == "List" else [d])]


def in_namespace(path, ns):
    """The manifest's objects with metadata.namespace set to ns (fixtures
    that name their own namespace share it otherwise), as one List."""
    items = load_docs(path)
    for d in items:
        d.setdefault("metadata", {})["namespace"] = ns
    return {"apiVersion": "v1", "kind": "List", "items": items}


def apply_obj(obj):
    """`kubectl apply -f -` of obj, as a user applies a manifest."""
    return cl.kubectl("apply", "-f", "-", input=json.dumps(obj))


def settled_pods(ns, selector, count, secs=240, settle=2):
    """The pods of selector once exactly count exist, none terminating, the
    set unchanged for settle seconds (a controller that overshoots, or
    has not finished deleting, shows)."""
    last, since = None, 0.0
    end = time.time() + secs
    while True:
        ps = [p for p in cl.pods(ns, selector) if not p["metadata"].get("deletionTimestamp")]
        names = sorted(p["metadata"]["name"] for p in ps)
        if names != last:
            last, since = names, time.time()
        elif len(ps) == count and time.time() - since >= settle:
            return ps
        if time.time() > end:
            raise AssertionError("-l %s in %s: %d pods stored, the workload asks %d (after %d s): %s"
                                 % (selector, ns, len(ps), count, secs, names))
        time.sleep(0.5)


MUTATING = ("kuberay-tpu-mutating-webhook-cfg", "tpu-webhook-workload-mutating-cfg")


@contextlib.contextmanager
def webhook_unregistered(configs=None, probe=None):
    """The webhook's configurations (default: its mutating ones; else
    [(kind, name)]) deleted for the body, seen gone (no answer of probe()
    true; default: a dry-run TPU pod comes back unmutated), then created
    again as they were and seen active (every answer of probe() true)."""
    configs = configs or [("mutatingwebhookconfiguration", n) for n in MUTATING]
    probe = probe or (lambda: (cl.webhook_active(),))
    saved = []
    for kind, name in configs:
        obj = cl.get_json(kind, name)
        for k in ("resourceVersion", "uid", "creationTimestamp", "generation", "managedFields"):
            obj["metadata"].pop(k, None)
        saved.append(obj)
    try:
        for kind, name in configs:
            cl.kubectl("delete", kind, name)
        cl.wait_for(lambda: not any(probe()), 60, "the webhook's configurations gone")
        yield
    finally:
        for obj in saved:
            cl.kubectl("create", "-f", "-", input=json.dumps(obj))
        cl.wait_for(lambda: all(probe()), 120, "the webhook's configurations active again")


def fails(check, *args):
    """What check(*args) raises (AssertionError, or KeyError for a variable
    missing); AssertionError when it passes: the judge must be able to
    fail."""
    try:
        check(*args)
    except (AssertionError, KeyError) as e:
        return "%s: %s" % (type(e).__name__, e)
    raise AssertionError("%s passed with what it judges taken away (the webhook, or the setting its case "
                         "shows): the check cannot fail" % getattr(check, "__name__", check))


@contextlib.contextmanager
def configuration_patched(name, patch, in_effect, kind="mutatingwebhookconfiguration", restored=None):
    """The webhook configuration name changed by the JSON patch (a list of
    RFC 6902 operations) for the body, seen in effect (in_effect() true:
    the API server's informer lags its store), then given its webhooks
    back as they were and seen back (restored() true; by default
    in_effect() false)."""
    saved = cl.get_json(kind, name)["webhooks"]
    cl.kubectl("patch", kind, name, "--type", "json", "-p", json.dumps(patch))
    try:
        cl.wait_for(in_effect, 60, "%s %s patched %s: in effect" % (kind, name, json.dumps(patch)))
        yield
    finally:
        cur = cl.get_json(kind, name)
        cur["webhooks"] = saved
        cl.kubectl("replace", "-f", "-", input=json.dumps(cur))
        cl.wait_for(restored or (lambda: not in_effect()), 60, "%s %s as installed again" % (kind, name))
