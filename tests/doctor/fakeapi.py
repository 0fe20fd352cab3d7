"""fakeapi.py: what the doctor tests that talk to a cluster share:
tests/kube/fake_apiserver.py started on a free loopback port, a kubeconfig
that points at it with a bearer token, and its /_control endpoint (loads
objects, reads its counters)."""
import json
import os
import subprocess
import sys
import time
import urllib.request

FAKE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "kube",
                    "fake_apiserver.py")


def start(tmp, token, *extra):
    """The fake API server (extra: its flags) writing its port under tmp,
    and tmp/kubeconfig for it; (process, port, kubeconfig path). The caller
    stops the process."""
    port_file = os.path.join(tmp, "port")
    proc = subprocess.Popen([sys.executable, FAKE, "--port-file", port_file, "--token", token]
                            + list(extra), stdout=subprocess.DEVNULL)
    end = time.monotonic() + 30
    while not os.path.exists(port_file) and time.monotonic() < end:
        time.sleep(0.05)
    with open(port_file) as f:
        port = int(f.read())
    kubeconfig = os.path.join(tmp, "kubeconfig")
    with open(kubeconfig, "w") as f:
        f.write("apiVersion: v1\nkind: Config\ncurrent-context: t\n"
                "contexts:\n- name: t\n  context: {cluster: fake, user: u}\n"
                "clusters:\n- name: fake\n  cluster:\n    server: http://127.0.0.1:%d\n"
                "users:\n- name: u\n  user:\n    token: %s\n" % (port, token))
    return proc, port, kubeconfig


def control(port, what, body, timeout=60):
    """POST body to the fake's /_control/<what>; its JSON answer."""
    req = urllib.request.Request("http://127.0.0.1:%d/_control/%s" % (port, what),
                                 data=json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return json.loads(r.read())
