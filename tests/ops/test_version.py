"""One version everywhere (issue 25): CMakeLists.txt's project(VERSION), the
Dockerfile's VERSION build argument, the chart's appVersion, the kustomize
image tag, `tpu-webhook version`/`--version`/`serve --version`, the first
log line of `serve`, /metrics' tpu_webhook_build_info and (tests/kube,
test_user_agent_on_every_call) the User-Agent of API calls all say the same
version, and the binary, the log line and the metric the same commit: the
one built (git HEAD of the tree, "-dirty" when tracked files differ).

Usage: test_version.py BINARY SOURCE_DIR
"""
import json
import os
import re
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import unittest
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "server"))
import servelib  # noqa: E402

BINARY, ROOT = sys.argv[1], sys.argv[2]
del sys.argv[1:3]


def read(*parts):
    with open(os.path.join(ROOT, *parts), encoding="utf-8") as f:
        return f.read()


def cmake_version():
    return re.search(r"project\(tpu-webhook VERSION (\S+)", read("CMakeLists.txt")).group(1)


def run(*args):
    return subprocess.run([BINARY] + list(args), capture_output=True, text=True, check=True,
                          timeout=30)


class Version(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.version = cmake_version()
        cls.info = json.loads(run("version", "--json").stdout)


class VersionSources(Version):
    def test_sources_agree(self):
        v = self.version
        self.assertRegex(v, r"^\d+\.\d+\.\d+$")
        docker = re.search(r"^ARG VERSION=(\S+)$", read("Dockerfile"), re.M)
        self.assertTrue(docker, "Dockerfile: no ARG VERSION=<default>")
        self.assertEqual(docker.group(1), v, "Dockerfile ARG VERSION")
        chart = re.search(r'^appVersion:\s*"?([^"\s]+)"?\s*$',
                          read("deploy", "helm", "kuberay-tpu-webhook", "Chart.yaml"), re.M)
        self.assertEqual(chart.group(1), v, "Chart.yaml appVersion")
        tag = re.search(r"image:\s*tpu-webhook:(\S+)",
                        read("deploy", "kustomize", "base", "deployment.yaml"))
        self.assertEqual(tag.group(1), v, "kustomize base image tag")
        labels = read("Dockerfile")
        for key in ("title", "description", "version", "revision", "created", "source",
                    "licenses"):
            self.assertIn("org.opencontainers.image.%s=" % key, labels)
        # Each fed by the build argument scripts/release.sh passes from git.
        for key, arg in (("version", "VERSION"), ("revision", "REVISION"),
                         ("created", "CREATED"), ("source", "SOURCE")):
            self.assertIn('org.opencontainers.image.%s="$%s"' % (key, arg), labels)


class VersionBinary(Version):
    def test_binary(self):
        self.assertEqual(self.info["version"], self.version)
        libs = self.info["libraries"]
        self.assertEqual(sorted(libs), ["cjson", "gnutls", "libcurl", "libmicrohttpd", "libyaml",
                                        "openssl"])
        for name, v in libs.items():
            self.assertRegex(v, r"\d+\.\d+", name)
        self.assertRegex(self.info["build_date"], r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ|unknown)$")
        git = shutil.which("git")
        head = subprocess.run([git, "-C", ROOT, "rev-parse", "--short=12", "HEAD"],
                              capture_output=True, text=True) if git else None
        if head and head.returncode == 0:
            # Built from this tree: its commit (the build may predate a
            # change to the tree, so "-dirty" is not compared).
            self.assertEqual(self.info["commit"].split("-")[0], head.stdout.strip())
        else:
            self.assertEqual(self.info["commit"], "unknown")
        text = "tpu-webhook %s\ncommit: %s\nbuild date: %s\n" % (
            self.version, self.info["commit"], self.info["build_date"])
        for args in (["version"], ["--version"], ["serve", "--version"]):
            out = run(*args).stdout
            with self.subTest(args=args):
                self.assertTrue(out.startswith(text), out)
                for lib in ("libmicrohttpd", "GnuTLS", "libcurl", "cJSON", "libyaml", "OpenSSL"):
                    self.assertRegex(out, r"\n%s: \S" % lib)


class VersionFirstLogLine(Version):
    def test_first_log_line_and_build_info(self):
        work = tempfile.mkdtemp(prefix="whver.")
        try:
            ctx = servelib.make_certs(BINARY, work)
            proc, port, log_path = servelib.start_server(BINARY, work, ["--v=0"])
            try:
                with urllib.request.urlopen("https://127.0.0.1:%d/metrics" % port, context=ctx,
                                            timeout=10) as r:
                    metrics = r.read().decode()
            finally:
                proc.send_signal(signal.SIGTERM)
                proc.wait(timeout=30)
            with open(log_path, encoding="utf-8") as f:
                first = json.loads(f.readline())
        finally:
            shutil.rmtree(work, ignore_errors=True)
        self.assertEqual(first["event"], "starting")
        self.assertEqual(first["version"], self.version)
        self.assertEqual(first["commit"], self.info["commit"])
        self.assertIn(self.version, first["message"])
        want = 'tpu_webhook_build_info{version="%s",commit="%s"} 1\n' % (self.version,
                                                                         self.info["commit"])
        self.assertIn(want, metrics)


if __name__ == "__main__":
    unittest.main(verbosity=2)
