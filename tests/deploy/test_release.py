"""scripts/release.sh (issue 36, item 3): one version, commit, date and
source from git on every artefact. No container engine runs here, so
--dry-run stands in for the image build: its build arguments and labels are
checked against git and the Dockerfile; the chart package, the CLI tarball
and SHA256SUMS are built for real (Helm 3 from build-tools/, as
test_helm_real.py: missing, it fails) and opened.

Environment: WH_BINARY (the tpu-webhook built from this tree)."""
import hashlib
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
import time
import unittest

import yaml

import deploylib as dl
import realhelm

SCRIPT = os.path.join(dl.ROOT, "scripts", "release.sh")
BINARY = os.environ.get("WH_BINARY", "")
HELM = dict((name, path) for name, path, _ in realhelm.HELMS)["helm3"]
REGISTRY = "example.test/tpu"
SOURCE = "https://example.test/tpu-webhook"


def git(*args):
    return subprocess.run(["git", "-C", dl.ROOT] + list(args), capture_output=True, text=True,
                          check=True).stdout.strip()


def read(*parts):
    with open(os.path.join(dl.ROOT, *parts)) as f:
        return f.read()


class Release(unittest.TestCase):
    def setUp(self):
        self.assertTrue(BINARY and os.access(BINARY, os.X_OK), "WH_BINARY=%r" % BINARY)
        self.assertTrue(os.access(HELM, os.X_OK),
                        "%s missing: run scripts/fetch-test-helm.sh" % HELM)
        self.tmp = tempfile.mkdtemp(prefix="whrel.")
        self.addCleanup(shutil.rmtree, self.tmp, ignore_errors=True)

    def release(self, *extra, binary=None):
        return subprocess.run(
            ["bash", SCRIPT, "--dry-run", "--allow-dirty", "--registry", REGISTRY,
             "--source", SOURCE, "--binary", binary or BINARY, "--helm", HELM,
             "--out", self.tmp] + list(extra),
            capture_output=True, text=True, timeout=300, cwd=dl.ROOT)

    def test_dry_run_builds_chart_and_tarball(self):
        p = self.release()
        self.assertEqual(p.returncode, 0, p.stderr)
        version = re.search(r"^project\(tpu-webhook VERSION (\S+)", read("CMakeLists.txt"),
                            re.M).group(1)
        head = git("rev-parse", "--short=12", "HEAD")
        epoch = int(git("log", "-1", "--format=%ct", "HEAD"))
        created = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))
        out = p.stdout
        build = re.search(r"^dry run: would run: docker build (.*)$", out, re.M)
        self.assertTrue(build, out)
        args = dict(re.findall(r"--build-arg (\w+)=(\S+)", build.group(1)))
        self.assertEqual(args["VERSION"], version)
        self.assertEqual(args["REVISION"].split("-")[0], head)
        self.assertEqual(args["CREATED"], created)
        self.assertEqual(args["SOURCE"], SOURCE)
        self.assertEqual(args["SOURCE_DATE_EPOCH"], str(epoch))
        self.assertIn("-t %s/tpu-webhook:%s ." % (REGISTRY, version), build.group(1))
        # Every build argument is declared, and every label reads its own.
        dockerfile = read("Dockerfile")
        for name in args:
            self.assertRegex(dockerfile, r"(?m)^ARG %s\b" % name)
        for key, arg in (("version", "VERSION"), ("revision", "REVISION"),
                         ("created", "CREATED"), ("source", "SOURCE")):
            self.assertIn('org.opencontainers.image.%s="$%s"' % (key, arg), dockerfile)
            self.assertIn("label org.opencontainers.image.%s=%s" % (key, args[arg]), out)
        self.assertIn("the binary logs: tpu-webhook %s (%s)" % (version, args["REVISION"]), out)

        # The chart: versions of Chart.yaml, the registry's image.
        chart_version = re.search(r"(?m)^version: (\S+)",
                                  read("deploy", "helm", "kuberay-tpu-webhook", "Chart.yaml")).group(1)
        chart_tgz = os.path.join(self.tmp, "kuberay-tpu-webhook-%s.tgz" % chart_version)
        with tarfile.open(chart_tgz) as t:
            chart = yaml.safe_load(t.extractfile("kuberay-tpu-webhook/Chart.yaml"))
            values = yaml.safe_load(t.extractfile("kuberay-tpu-webhook/values.yaml"))
        self.assertEqual(str(chart["appVersion"]), version)
        self.assertEqual(str(chart["version"]), chart_version)
        self.assertEqual(values["tpuWebhook"]["image"]["repository"], REGISTRY + "/tpu-webhook")
        rendered = subprocess.run([HELM, "template", "t", chart_tgz], capture_output=True,
                                  text=True, timeout=120)
        self.assertEqual(rendered.returncode, 0, rendered.stderr)
        images = re.findall(r"image: \"?([^\"\s]+)", rendered.stdout)
        self.assertEqual(set(images), {"%s/tpu-webhook:%s" % (REGISTRY, version)})

        # The CLI tarball: the binary that says the release's version.
        arch = {"x86_64": "amd64", "aarch64": "arm64"}.get(os.uname().machine, os.uname().machine)
        name = "tpu-webhook-%s-linux-%s" % (version, arch)
        tgz = os.path.join(self.tmp, name + ".tar.gz")
        with tarfile.open(tgz) as t:
            names = sorted(t.getnames())
            docs = sorted(f for f in os.listdir(os.path.join(dl.ROOT, "docs")) if f.endswith(".md"))
            self.assertIn("troubleshooting.md", docs)  # the alerts' runbook_url
            self.assertEqual(names, sorted([name, name + "/LICENSE", name + "/README.md", name + "/docs",
                                            name + "/tpu-webhook"] + [name + "/docs/" + f for f in docs]))
            for m in t.getmembers():
                self.assertEqual((m.uid, m.gid, int(m.mtime)), (0, 0, epoch), m.name)
            t.extract(name + "/tpu-webhook", self.tmp)
        v = subprocess.run([os.path.join(self.tmp, name, "tpu-webhook"), "--version"],
                           capture_output=True, text=True, timeout=30).stdout
        self.assertTrue(v.startswith("tpu-webhook %s\ncommit: %s" % (version, head)), v)

        # SHA256SUMS over both, as sha256sum -c reads it.
        sums = {}
        for line in read(self.tmp, "SHA256SUMS").splitlines():
            digest, file = line.split("  ")
            sums[file] = digest
        self.assertEqual(sorted(sums), sorted([name + ".tar.gz", os.path.basename(chart_tgz)]))
        for file, digest in sums.items():
            with open(os.path.join(self.tmp, file), "rb") as f:
                self.assertEqual(hashlib.sha256(f.read()).hexdigest(), digest, file)
        self.assertIn("ready to push:", out)

    def test_dockerfile_without_source_label_refused(self):
        bad = os.path.join(self.tmp, "Dockerfile")
        with open(bad, "w") as f:
            f.write(re.sub(r"(?m)^.*org\.opencontainers\.image\.source=.*\n", "",
                           read("Dockerfile")))
        p = self.release("--dockerfile", bad)
        self.assertEqual(p.returncode, 1)
        self.assertIn('no label org.opencontainers.image.source="$SOURCE"', p.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "SHA256SUMS")))

    def test_binary_of_another_release_refused(self):
        fake = os.path.join(self.tmp, "tpu-webhook")
        with open(fake, "w") as f:
            f.write("#!/bin/sh\nprintf 'tpu-webhook 9.9.9\\ncommit: 0123456789ab\\n'\n")
        os.chmod(fake, 0o755)
        p = self.release(binary=fake)
        self.assertEqual(p.returncode, 1)
        self.assertIn("rebuild it from this commit", p.stderr)

    def test_registry_required(self):
        p = subprocess.run(["bash", SCRIPT, "--dry-run"], capture_output=True, text=True,
                           timeout=60, cwd=dl.ROOT)
        self.assertEqual(p.returncode, 1)
        self.assertIn("--registry REGISTRY is required", p.stderr)


if __name__ == "__main__":
    unittest.main()
