"""CLI papercuts of issue 25: `certs --extra-san` repeats (every name kept)
and the certificate covers ::1; `check` on a directory holding a Helm chart
skips the chart's templates (and files that do not parse) with one note,
so `check deploy/` passes on this repository, while a bad manifest under a
chart is still judged. Issue 36: a skipped chart file takes back only what
it added, so every row of every file read before it stays, whatever order
the walk meets manifests and charts in.

Usage: test_cli.py BINARY SOURCE_DIR
"""
import json
import os
import re
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


MANIFESTS = os.path.join(ROOT, "tests", "fixtures", "manifests")
SUMMARY = re.compile(r"^(\d+) file\(s\), (\d+) object\(s\), (\d+) TPU worker group\(s\): "
                     r"(\d+) rejected, (\d+) error\(s\)$", re.M)


class CliCheckChartOrder(Cli):
    """Manifests and charts side by side, the chart met first, last and in
    between: each manifest's row is in the table and in -o json, and the
    summary counts the rows shown."""

    def apps(self, name, *fixtures):
        d = os.path.join(self.work, name)
        os.makedirs(d)
        for f in fixtures:
            shutil.copy(os.path.join(MANIFESTS, f), d)
        return [os.path.join(name, f) for f in fixtures]

    def chart(self, name):
        d = os.path.join(self.work, name)
        os.makedirs(os.path.join(d, "templates"))
        with open(os.path.join(d, "Chart.yaml"), "w") as f:
            f.write("apiVersion: v2\nname: x\nversion: 0.1.0\n")
        with open(os.path.join(d, "templates", "a.yaml"), "w") as f:
            f.write("kind: {{ .Values.kind }}\n")
        with open(os.path.join(d, "templates", "z.yaml"), "w") as f:
            f.write("kind: {{ .Values.kind }}\n")
        with open(os.path.join(d, "broken.yaml"), "w") as f:
            f.write("a: [\n")  # does not parse: skipped too
        # A manifest in the chart that parses is judged (rejected).
        shutil.copy(os.path.join(MANIFESTS, "bad-long-group.yaml"), d)
        return [os.path.join(name, "bad-long-group.yaml")]

    def check_layout(self, want_files, want_rejected):
        r = run("check", ".", cwd=self.work)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("skipped 3 file(s)", r.stderr)
        lines = r.stdout.split("\n")
        self.assertTrue(lines[0].startswith("FILE "), r.stdout)
        rows = lines[1:lines.index("")]
        got = sorted(row.split(":")[0] for row in rows)
        self.assertEqual(got, sorted("./" + f for f in want_files), r.stdout)
        m = SUMMARY.search(r.stdout)
        self.assertIsNotNone(m, r.stdout)
        self.assertEqual(int(m.group(3)), len(rows), r.stdout)
        self.assertEqual(int(m.group(4)), want_rejected, r.stdout)
        self.assertEqual(int(m.group(4)), sum(" rejected " in row for row in rows), r.stdout)
        for f in want_files:  # every denial names its file
            if "bad-" in f:
                self.assertRegex(r.stdout, re.escape("./" + f) + r":\d+: rejected ")

        r = run("check", "-o", "json", ".", cwd=self.work)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        report = json.loads(r.stdout)
        self.assertEqual(sorted(row["file"] for row in report["rows"]),
                         sorted("./" + f for f in want_files), r.stdout)
        self.assertEqual(report["rejected"], want_rejected)
        self.assertEqual(report["rejected"],
                         sum(row["verdict"] == "rejected" for row in report["rows"]))
        self.assertEqual(report["errors"], 0)
        self.assertEqual(report["objects"], len(want_files))

    def test_chart_after_manifests(self):
        files = self.apps("a-apps", "bad-numofhosts.yaml", "multi-doc-v5e.yaml")
        files += self.chart("b-chart")
        self.check_layout(files, 2)

    def test_chart_before_manifests(self):
        files = self.chart("a-chart")
        files += self.apps("b-apps", "bad-numofhosts.yaml", "multi-doc-v5e.yaml")
        self.check_layout(files, 2)

    def test_chart_between_manifests(self):
        files = self.apps("a-apps", "bad-numofhosts.yaml")
        files += self.chart("b-chart")
        files += self.apps("c-apps", "multi-doc-v5e.yaml", "tpu7x-single-host.yaml")
        self.check_layout(files, 2)


if __name__ == "__main__":
    unittest.main(verbosity=2)
