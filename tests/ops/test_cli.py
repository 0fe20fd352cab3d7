"""CLI papercuts of issue 25: `certs --extra-san` repeats (every name kept)
and the certificate covers ::1; `check` on a directory holding a Helm chart
skips the chart's templates (and files that do not parse) with one note,
so `check deploy/` passes on this repository, while a bad manifest under a
chart is still judged. Issue 36: a skipped chart file takes back only what
it added, so every row of every file read before it stays, whatever order
the walk meets manifests and charts in; and one CLI convention, kubectl's:
-o json|yaml on every command that prints data, JSON printed one way, bad
command lines refused in plain text on stderr, help on a bare invocation,
and completion scripts made from the same flag tables as --help.

Usage: test_cli.py BINARY SOURCE_DIR
"""
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import unittest

import yaml

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


SAMPLE = os.path.join(MANIFESTS, "multi-doc-v5e.yaml")
REVIEW = os.path.join(ROOT, "tests", "fixtures", "reviews", "v6e-16-legacy.json")
# Every command that prints data, its -o choices, and the arguments it
# prints data for.
DATA_COMMANDS = (
    ("version", "json|yaml", []),
    ("review", "wire|json|yaml", [REVIEW]),
    ("render", "yaml|json", [SAMPLE]),
    ("check", "table|json|yaml", [SAMPLE]),
    ("doctor", "table|json|yaml", ["--pods", "PODS"]),
)
COMMANDS = ("serve", "certs", "review", "render", "check", "doctor", "version", "completion")


def help_flags(cmd):
    """The flags `cmd --help` lists, as completion offers them: --name, and
    -x for a one-letter name or a short form."""
    r = run(cmd, "--help")
    assert r.returncode == 0, r.stderr
    block = r.stdout.split("\nflags:\n", 1)[1] if "\nflags:\n" in r.stdout else ""
    flags = set()
    for short, name in re.findall(r"(?m)^  (?:(-\w), |    )--([\w-]+)", block):
        flags.add(("-" if len(name) == 1 else "--") + name)
        if short:
            flags.add(short)
    return flags


class CliConvention(Cli):
    def setUp(self):
        super().setUp()
        self.pods = os.path.join(self.work, "pods.json")
        with open(self.pods, "w") as f:
            json.dump({"apiVersion": "v1", "kind": "PodList", "items": []}, f)

    def args(self, args):
        return [self.pods if a == "PODS" else a for a in args]

    def test_bare_invocation_is_help(self):
        for args in ([], ["--help"], ["help"], ["-h"]):
            r = run(*args)
            self.assertEqual((r.returncode, r.stderr), (0, ""), args)
            self.assertTrue(r.stdout.startswith("usage: tpu-webhook <command>"), r.stdout)
            for cmd in COMMANDS:
                self.assertRegex(r.stdout, r"(?m)^  %s +\S" % cmd)
        r = run("nosuch")
        self.assertEqual((r.returncode, r.stdout), (2, ""))
        self.assertEqual(r.stderr, 'tpu-webhook: unknown command "nosuch"\n'
                                   "Run 'tpu-webhook --help' for the commands.\n")

    def test_output_json_and_yaml_everywhere(self):
        for cmd, choices, args in DATA_COMMANDS:
            with self.subTest(cmd=cmd):
                self.assertIn("-o, --output " + choices, run(cmd, "--help").stdout)
                j = run(cmd, "-o", "json", *self.args(args))
                self.assertIn(j.returncode, (0, 1), j.stderr)
                doc = json.loads(j.stdout)
                # One JSON form: two-space indent, kubectl's.
                self.assertEqual(j.stdout, json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
                y = run(cmd, "--output=yaml", *self.args(args))
                self.assertEqual(y.returncode, j.returncode, y.stderr)
                if cmd == "render":  # YAML documents, one a pod; JSON one v1 List
                    self.assertEqual([d for d in yaml.safe_load_all(y.stdout) if d is not None],
                                     doc["items"])
                else:
                    self.assertEqual(yaml.safe_load(y.stdout), doc)

    def test_version_json_alias(self):
        self.assertEqual(run("version", "--json").stdout, run("version", "-o", "json").stdout)
        r = run("version", "--json", "-o", "yaml")
        self.assertEqual((r.returncode, r.stdout), (2, ""))
        self.assertIn("give one", r.stderr)

    def test_review_wire_is_the_answer_unchanged(self):
        wire = run("review", REVIEW)
        self.assertEqual(wire.returncode, 0, wire.stderr)
        self.assertEqual(wire.stdout.count("\n"), 1)  # the bytes the server sends, one line
        self.assertEqual(run("review", "-o", "wire", REVIEW).stdout, wire.stdout)
        self.assertEqual(json.loads(run("review", "-o", "json", REVIEW).stdout),
                         json.loads(wire.stdout))

    def test_bad_command_line_is_plain_text(self):
        for cmd in COMMANDS:
            for bad in (["--no-such-flag"], ["-o", "xml"]):
                if bad[0] == "-o" and cmd not in [c for c, _, _ in DATA_COMMANDS]:
                    continue
                with self.subTest(cmd=cmd, bad=bad):
                    r = run(cmd, *bad)
                    self.assertEqual((r.returncode, r.stdout), (2, ""), r.stderr)
                    first, hint = r.stderr.splitlines()
                    self.assertTrue(first.startswith("tpu-webhook %s: " % cmd), first)
                    self.assertEqual(hint, "Run 'tpu-webhook %s --help' for the flags." % cmd)

    def script(self, shell):
        r = run("completion", shell)
        self.assertEqual((r.returncode, r.stderr), (0, ""))
        path = os.path.join(self.work, "completion." + shell)
        with open(path, "w") as f:
            f.write(r.stdout)
        return path

    def test_completion_bash(self):
        path = self.script("bash")
        probe = """source %s
t() { COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]}-1)); COMPREPLY=(); _tpu_webhook
      echo "${COMPREPLY[*]}"; }
""" % shlex.quote(path)
        cases = [("tpu-webhook ''", set(COMMANDS) | {"help"}),
                 ("tpu-webhook check -o ''", {"table", "json", "yaml"}),
                 ("tpu-webhook review --output = ''", {"wire", "json", "yaml"}),
                 ("tpu-webhook completion ''", {"bash", "zsh"})]
        cases += [("tpu-webhook %s -" % cmd, help_flags(cmd)) for cmd in COMMANDS]
        for words, want in cases:
            with self.subTest(words=words):
                r = subprocess.run(["bash", "-c", probe + "t " + words], capture_output=True,
                                   text=True, timeout=30)
                self.assertEqual(r.stderr, "")
                self.assertEqual(set(r.stdout.split()), want)

    def test_completion_zsh(self):
        path = self.script("zsh")
        # compadd and _default stand in for zsh's completion system, which
        # only runs inside a widget; compdef records the registration.
        probe = """compadd() { [[ $1 == -- ]] && shift; print -r -- "$@" }
_files() { print FILES }
_default() { print FILES }
compdef() { print "compdef $*" }
source %s
t() { words=("$@"); CURRENT=${#words}; _tpu_webhook }
""" % shlex.quote(path)
        r = subprocess.run(["zsh", "-f", "-c", probe], capture_output=True, text=True, timeout=30)
        self.assertEqual((r.returncode, r.stdout, r.stderr),
                         (0, "compdef _tpu_webhook tpu-webhook\n", ""))
        cases = [("tpu-webhook ''", set(COMMANDS) | {"help"}),
                 ("tpu-webhook doctor -o ''", {"table", "json", "yaml"}),
                 ("tpu-webhook check x", {"FILES"}),
                 ("tpu-webhook completion ''", {"bash", "zsh"})]
        cases += [("tpu-webhook %s -" % cmd, help_flags(cmd)) for cmd in COMMANDS]
        for words, want in cases:
            with self.subTest(words=words):
                r = subprocess.run(["zsh", "-f", "-c", probe + "t " + words], capture_output=True,
                                   text=True, timeout=30)
                self.assertEqual(r.stderr, "")
                self.assertEqual(set(r.stdout.split()) - {"compdef", "_tpu_webhook", "tpu-webhook"},
                                 want)


if __name__ == "__main__":
    unittest.main(verbosity=2)
