"""Real Helm for the chart tests: the Helm 3 and Helm 4 binaries that
scripts/fetch-test-helm.sh puts into build-tools/ (Helm is not packaged for
Debian 12). A missing binary is an error, never a skip: the chart's schema
and templates would otherwise go untested.

Every run is offline and leaves nothing behind: HOME-like directories in a
temporary directory, no kubeconfig, every proxy a closed local port.
"""
import atexit
import json
import os
import shutil
import subprocess
import tempfile

import yaml

import deploylib as dl

CHART = os.path.join(dl.ROOT, "deploy", "helm", "kuberay-tpu-webhook")
# (label, path, the version scripts/fetch-test-helm.sh pins)
HELMS = (("helm3", os.path.join(dl.ROOT, "build-tools", "helm3", "helm"), "v3."),
         ("helm4", os.path.join(dl.ROOT, "build-tools", "helm4", "helm"), "v4."))
_TMP = tempfile.mkdtemp(prefix="wh-helm-")
atexit.register(shutil.rmtree, _TMP, True)


def env():
    e = dict(os.environ)
    for k in ("HELM_CACHE_HOME", "HELM_CONFIG_HOME", "HELM_DATA_HOME"):
        e[k] = os.path.join(_TMP, k.lower())
    e["KUBECONFIG"] = os.path.join(_TMP, "no-kubeconfig")
    for k in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY"):
        e[k] = "http://127.0.0.1:9"
    e.pop("no_proxy", None)
    e.pop("NO_PROXY", None)
    return e


def helms():
    """[(label, path)] of both binaries; AssertionError naming the fix when
    one is missing or is not the pinned major version."""
    out = []
    for label, path, major in HELMS:
        if not os.access(path, os.X_OK):
            raise AssertionError("%s missing: run scripts/fetch-test-helm.sh (scripts/setup.sh does); "
                                 "the chart tests need a real Helm 3 and Helm 4" % path)
        p = subprocess.run([path, "version", "--template", "{{.Version}}"], capture_output=True,
                           text=True, timeout=60, env=env())
        if p.returncode != 0 or not p.stdout.startswith(major):
            raise AssertionError("%s does not run as Helm %s*: %r %r (rerun scripts/fetch-test-helm.sh)" %
                                 (path, major, p.stdout, p.stderr))
        out.append((label, path))
    return out


def run(helm, args, timeout=120):
    return subprocess.run([helm] + list(args), capture_output=True, text=True, timeout=timeout, env=env())


def value_args(values=None, files=(), sets=()):
    """-f for each file, then the values dict as one more file, then --set."""
    args = []
    for f in files:
        args += ["-f", f]
    if values is not None:
        fd, path = tempfile.mkstemp(suffix=".yaml", dir=_TMP)
        with os.fdopen(fd, "w") as f:
            yaml.safe_dump(values, f)
        args += ["-f", path]
    for s in sets:
        args += ["--set", s]
    return args


def template(helm, vargs, kube=None, release="tpu-webhook"):
    """(returncode, objects or None, stderr) of `helm template`."""
    args = ["template", release, CHART] + list(vargs)
    if kube:
        args += ["--kube-version", kube]
    p = run(helm, args)
    if p.returncode != 0:
        return p.returncode, None, p.stderr
    return 0, dl.load_docs(p.stdout, "helm template"), p.stderr


def lint(helm, vargs):
    """(returncode, output) of `helm lint --strict`."""
    p = run(helm, ["lint", "--strict", CHART] + list(vargs))
    return p.returncode, p.stdout + p.stderr


NOTES_PROBE = """apiVersion: v1
kind: ConfigMap
metadata:
  name: notes-probe
data:
  notes: {{ tpl (.Files.Get "files/NOTES.probe") . | quote }}
"""


def notes(helm, vargs, release="tpu-webhook"):
    """NOTES.txt as Helm renders it. `helm template` leaves NOTES out and
    Helm 3's `install --dry-run=client` wants a cluster, so a copy of the
    chart renders the same text with tpl in a ConfigMap."""
    with tempfile.TemporaryDirectory(dir=_TMP) as d:
        chart = os.path.join(d, os.path.basename(CHART))
        shutil.copytree(CHART, chart)
        shutil.copy(os.path.join(CHART, "templates", "NOTES.txt"), os.path.join(chart, "files", "NOTES.probe"))
        with open(os.path.join(chart, "templates", "zz-notes-probe.yaml"), "w") as f:
            f.write(NOTES_PROBE)
        p = run(helm, ["template", release, chart, "--show-only", "templates/zz-notes-probe.yaml"] + list(vargs))
    if p.returncode != 0:
        raise AssertionError("rendering NOTES.txt failed: %s" % p.stderr)
    return yaml.safe_load(p.stdout)["data"]["notes"]


def package(helm, dest):
    """Path of the chart packaged as `helm package` does (what users get)."""
    p = run(helm, ["package", CHART, "-d", dest])
    if p.returncode != 0:
        raise AssertionError("helm package failed: %s" % p.stderr)
    return os.path.join(dest, [f for f in os.listdir(dest) if f.endswith(".tgz")][0])
