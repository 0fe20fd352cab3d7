"""CLI papercuts of issue 25: `certs --extra-san` repeats (every name kept)
and the certificate covers ::1; `check` on a directory holding a Helm chart
skips the chart's templates (and files that do not parse) with one note,
so `check deploy/` passes on this repository, while a bad manifest under a
chart is still judged.

Usage: test_cli.py BINARY SOURCE_DIR
"""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

BINARY, ROOT = sys.argv[1], sys.argv[2]
del sys.argv[1:3]


def run(*args, **kw):
    return subprocess.run([BINARY] + list(args), capture_output=True, text=True, timeout=60, **kw)


class Cli(unittest.TestCase):
    def setUp(self):
        self.work = tempfile.mkdtemp(prefix="whcli.")

    def tearDown(self):
        shutil.rmtree(self.work, ignore_errors=True)


class CliCerts(Cli):
    def test_extra_san_repeats_and_ipv6_loopback(self):
        d = os.path.join(self.work, "certs")
        r = run("certs", "--dir=" + d, "--extra-san", "DNS:one.example", "--extra-san=IP:10.1.2.3",
                "--extra-san", "DNS:two.example")
        self.assertEqual(r.returncode, 0, r.stderr)
        sans = subprocess.run(["openssl", "x509", "-in", os.path.join(d, "tls.crt"), "-noout",
                               "-ext", "subjectAltName"], capture_output=True, text=True,
                              check=True).stdout
        for want in ("DNS:one.example", "IP Address:10.1.2.3", "DNS:two.example",
                     "IP Address:127.0.0.1", "IP Address:0:0:0:0:0:0:0:1", "DNS:localhost"):
            self.assertIn(want, sans)


class CliCheckDeploy(Cli):
    def test_check_deploy_passes(self):
        r = run("check", "deploy/", cwd=ROOT)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(r.stderr.count("\n"), 1, r.stderr)
        self.assertIn("skipped", r.stderr)
        self.assertIn("deploy/helm/kuberay-tpu-webhook", r.stderr)

    def test_chart_manifest_still_judged(self):
        chart = os.path.join(self.work, "chart")
        os.makedirs(os.path.join(chart, "templates"))
        with open(os.path.join(chart, "Chart.yaml"), "w") as f:
            f.write("apiVersion: v2\nname: x\nversion: 0.1.0\n")
        with open(os.path.join(chart, "templates", "a.yaml"), "w") as f:
            f.write("kind: {{ .Values.kind }}\n")
        # Parses, and is rejected (numOfHosts against the topology).
        shutil.copy(os.path.join(ROOT, "tests", "fixtures", "manifests", "bad-numofhosts.yaml"),
                    os.path.join(chart, "examples.yaml"))
        r = run("check", self.work)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn(" 1 rejected", r.stdout)
        self.assertIn("skipped 1 file", r.stderr)
        # Outside a chart a template is an error, as before.
        r = run("check", os.path.join(chart, "templates", "a.yaml"))
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
