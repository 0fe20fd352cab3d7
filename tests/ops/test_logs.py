"""The log lines of a whole run of `serve` (issue 25): start, admissions (one
of them a dry run), a certificate reload, SIGTERM; a start-up failure. Once
serve runs, every line stderr gets is one JSON object, with no key twice, and
carries time (RFC 3339, UTC), severity (Cloud Logging's names), a message
and an event; stdout stays empty. At --v=0 (the shipped verbosity) the
start-up line (version, mode, address, flags), TLS load and reload,
listening with the chosen port of --bind-address=:0, readiness and shutdown
are written and admissions are not; at --v=1 one line per admission, with
dry_run. A bad flag is refused before serve runs, in plain text, as every
command refuses one (issue 36).

Usage: test_logs.py BINARY DATA_DIR (tests/server/data)
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
import time
import unittest
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "server"))
import servelib  # noqa: E402

BINARY, DATA = sys.argv[1], sys.argv[2]
del sys.argv[1:3]
SEVERITIES = {"DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"}
TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$")


def no_duplicates(pairs):
    keys = [k for k, _ in pairs]
    dup = {k for k in keys if keys.count(k) > 1}
    if dup:
        raise ValueError("key(s) %s twice" % sorted(dup))
    return dict(pairs)


def parse_lines(test, text, where):
    """Every line of text as a checked JSON object."""
    out = []
    test.assertTrue(text.endswith("\n") or not text, "%s: unterminated last line" % where)
    for n, line in enumerate(text.splitlines(), 1):
        with test.subTest(where=where, line=n):
            try:
                obj = json.loads(line, object_pairs_hook=no_duplicates)
            except ValueError as e:
                test.fail("%s line %d is not one JSON object (%s): %r" % (where, n, e, line))
            test.assertIsInstance(obj, dict)
            test.assertRegex(obj.get("time", ""), TIME, line)
            test.assertIn(obj.get("severity"), SEVERITIES, line)
            test.assertTrue(isinstance(obj.get("message"), str) and obj["message"], line)
            test.assertTrue(isinstance(obj.get("event"), str) and obj["event"], line)
            out.append(obj)
    return out


def post(port, ctx, path, body):
    req = urllib.request.Request("https://127.0.0.1:%d%s" % (port, path), data=body,
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, context=ctx, timeout=10) as r:
        return json.loads(r.read())


def wait_for(log_path, event, timeout=10):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        with open(log_path, encoding="utf-8") as f:
            if '"event":"%s"' % event in f.read():
                return True
        time.sleep(0.05)
    return False


class Logs(unittest.TestCase):
    def setUp(self):
        self.work = tempfile.mkdtemp(prefix="whlogs.")
        self.ctx = servelib.make_certs(BINARY, self.work)
        with open(os.path.join(DATA, "review-pod.json"), "rb") as f:
            self.review = json.loads(f.read())

    def tearDown(self):
        shutil.rmtree(self.work, ignore_errors=True)

    def full_run(self, verbosity):
        """start, a review, a dry-run review, a certificate reload, SIGTERM;
        the parsed lines."""
        proc, port, log_path = servelib.start_server(
            BINARY, self.work, ["--v=%d" % verbosity, "--cert-poll-interval=100ms"])
        try:
            for dry in (False, True):
                r = dict(self.review, request=dict(self.review["request"], dryRun=dry,
                                                   uid="uid-dry-%s" % dry))
                ans = post(port, self.ctx, "/mutate", json.dumps(r).encode())
                self.assertTrue(ans["response"]["allowed"])
            time.sleep(1.1)  # a new certificate a second later: another mtime
            subprocess.run([BINARY, "certs", "--dir=" + self.work + "/certs"], check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            self.assertTrue(wait_for(log_path, "tls_reloaded"), open(log_path).read())
        finally:
            proc.send_signal(signal.SIGTERM)
            self.assertEqual(proc.wait(timeout=30), 0)
        with open(log_path, encoding="utf-8") as f:
            return parse_lines(self, f.read(), "serve --v=%d" % verbosity)


class LogsDefault(Logs):
    def test_default_verbosity(self):
        lines = self.full_run(0)
        events = [l["event"] for l in lines]
        self.assertEqual(events[0], "starting")
        start = lines[0]
        for key in ("version", "commit", "mode", "bind_address", "flags"):
            self.assertIn(key, start)
        self.assertEqual(start["mode"], "standalone")
        self.assertEqual(start["flags"].get("standalone"), "true")
        self.assertEqual(start["flags"].get("bind-address"), "127.0.0.1:0")
        for ev in ("tls_loaded", "listening", "readiness_changed", "tls_reloaded", "shutting_down",
                   "shutdown"):
            self.assertIn(ev, events)
        listening = lines[events.index("listening")]
        self.assertGreater(listening["port"], 0)
        self.assertNotIn("admission", events)
        self.assertEqual(events[-1], "shutdown")
        self.assertTrue(lines[-1]["clean"])
        self.assertEqual(len(events), len(set(events)), "a line written twice: %s" % events)


class LogsAdmission(Logs):
    def test_admission_lines(self):
        lines = self.full_run(1)
        adm = [l for l in lines if l["event"] == "admission"]
        self.assertEqual(len(adm), 2, adm)
        self.assertEqual([a["dry_run"] for a in adm], [False, True])
        for a in adm:
            self.assertEqual(a["severity"], "INFO")
            self.assertEqual(a["decision"], "allowed")
        self.assertIn("dry run", adm[1]["message"])


class LogsStartupFailure(Logs):
    def test_bad_flag_and_startup_failure(self):
        # A bad flag is refused before serve runs: plain text naming the
        # flag and the --help hint, as every command says it (issue 36).
        for args, want in ((["--no-such-flag"], "flag provided but not defined: -no-such-flag"),
                           (["--v=x"], 'invalid value "x" for flag -v'),
                           (["--bind-address=nowhere"], "--bind-address")):
            r = subprocess.run([BINARY, "serve"] + args, capture_output=True, text=True,
                               timeout=30)
            with self.subTest(args=args):
                self.assertEqual(r.returncode, 2, r.stderr)
                self.assertEqual(r.stdout, "")
                first, hint = r.stderr.splitlines()
                self.assertTrue(first.startswith("tpu-webhook serve: "), r.stderr)
                self.assertIn(want, first)
                self.assertEqual(hint, "Run 'tpu-webhook serve --help' for the flags.")
        # Once serve runs, its log is JSON: a start-up failure is a log line.
        args = ["--bind-address=127.0.0.1:0", "--tls-cert-file=/nonexistent/tls.crt",
                "--tls-private-key-file=/nonexistent/tls.key"]
        r = subprocess.run([BINARY, "serve"] + args, capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertEqual(r.stdout, "")
        lines = parse_lines(self, r.stderr, " ".join(args))
        self.assertEqual(lines[-1]["event"], "startup_failed")
        self.assertIn(lines[-1]["severity"], ("ERROR", "CRITICAL"))


if __name__ == "__main__":
    unittest.main(verbosity=2)
