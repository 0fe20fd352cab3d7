"""Every metric, label and label value the alert rules and the dashboard
use exists in the /metrics of a running `tpu-webhook serve` after a mix of
requests (admissions allowed and denied, a bad review, probes, an unknown
path): once `--standalone`, once in Kubernetes mode against the fake API
server of tests/kube (the caches, and whatever only that mode exports). A
renamed metric or label fails here. docs/cli.md names every metric family
either mode exports and every route the server's 404 answer lists (the
route table itself), so a metric or route added without a word there fails
too.
"""
import copy
import http.client
import json
import os
import re
import ssl
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import monlib as ml  # noqa: E402

BINARY = os.environ.get("WH_BINARY", "")
DATA = os.path.join(ml.ROOT, "tests", "server", "data")
FAKE_API = os.path.join(ml.ROOT, "tests", "kube", "fake_apiserver.py")
TOKEN = "monitoring-test-token"
SAMPLE = re.compile(r'^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$')
LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def parse_exposition(text):
    """{metric: [labels dict]} of the sample lines; raises on a bad line."""
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = SAMPLE.match(line)
        if not m:
            raise AssertionError("not a sample line: %r" % line)
        float(m.group(3))
        out.setdefault(m.group(1), []).append(dict(LABEL.findall(m.group(2) or "")))
    return out


def wait_for(what, pred, seconds=30):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        got = pred()
        if got:
            return got
        time.sleep(0.05)
    raise AssertionError("timed out waiting for " + what)


class FakeAPIServer:
    """tests/kube/fake_apiserver.py over TLS with a bearer token and four TPU
    nodes, and a kubeconfig for it."""

    def __init__(self, tmp):
        port_file = os.path.join(tmp, "api.port")
        self.proc = subprocess.Popen(
            [sys.executable, FAKE_API, "--port-file", port_file, "--cert", os.path.join(tmp, "tls.crt"),
             "--key", os.path.join(tmp, "tls.key"), "--token", TOKEN, "--gen-nodes", "4",
             "--bookmark-interval", "0.5"])
        def port_written():
            if os.path.exists(port_file):
                with open(port_file) as f:
                    return f.read()
            return None
        port = wait_for("the fake API server", port_written)
        self.kubeconfig = os.path.join(tmp, "kubeconfig")
        with open(self.kubeconfig, "w") as f:
            f.write("apiVersion: v1\nkind: Config\nclusters:\n- name: fake\n  cluster:\n"
                    "    server: https://127.0.0.1:%s/\n    certificate-authority: %s\n"
                    "users:\n- name: u\n  user:\n    token: %s\n"
                    "contexts:\n- name: c\n  context: {cluster: fake, user: u}\ncurrent-context: c\n"
                    % (port, os.path.join(tmp, "ca.crt"), TOKEN))

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=30)


class Server:
    def __init__(self, tmp, mode_args):
        self.log = open(os.path.join(tmp, "server-%d.log" % len(os.listdir(tmp))), "w+")
        self.proc = subprocess.Popen(
            [BINARY, "serve", "--v=1", "--bind-address=127.0.0.1:0",
             "--tls-cert-file=" + os.path.join(tmp, "tls.crt"),
             "--tls-private-key-file=" + os.path.join(tmp, "tls.key")] + mode_args,
            stdout=self.log, stderr=subprocess.STDOUT, env=dict(os.environ, POD_NAMESPACE="ray-system"))
        self.port = self._wait_port()
        self.ctx = ssl.create_default_context(cafile=os.path.join(tmp, "ca.crt"))
        try:
            wait_for("/readyz 200", lambda: self.call("GET", "/readyz")[0] == 200)
        except AssertionError:
            self.stop()
            raise

    def _wait_port(self):
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            self.log.seek(0)
            for line in self.log:
                if '"event":"listening"' in line:
                    return json.loads(line)["port"]
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        self.log.seek(0)
        raise AssertionError("server did not start:\n" + self.log.read())

    def call(self, method, path, body=None):
        c = http.client.HTTPSConnection("127.0.0.1", self.port, context=self.ctx, timeout=10)
        headers = {"Content-Type": "application/json"} if body is not None else {}
        c.request(method, path, body=body, headers=headers)
        r = c.getresponse()
        data = r.read()
        c.close()
        return r.status, data

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=30)
        self.log.close()

    def run(self, traffic):
        """(statuses of the traffic, text of /metrics after it); stops."""
        try:
            statuses = traffic(self)
            status, body = self.call("GET", "/metrics")
            assert status == 200, status
            return statuses, body.decode()
        finally:
            self.stop()


def load(name):
    with open(os.path.join(DATA, name)) as f:
        return json.load(f)


class Scrape(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not BINARY:
            raise AssertionError("WH_BINARY (the tpu-webhook binary) is not set")
        cls.tmp = tempfile.TemporaryDirectory()
        tmp = cls.tmp.name
        subprocess.run([BINARY, "certs", "--dir", tmp], check=True, capture_output=True)
        cls.statuses, cls.text = Server(tmp, ["--standalone"]).run(cls.traffic)
        api = FakeAPIServer(tmp)
        try:
            cls.kube_statuses, cls.kube_text = Server(tmp, ["--kube-config-path", api.kubeconfig]).run(cls.traffic)
        finally:
            api.stop()
        # With --client-ca-file: its metrics (rendered only then); no traffic,
        # the admission routes would want a client certificate.
        _, cls.ca_text = Server(tmp, ["--standalone", "--client-ca-file=" + os.path.join(tmp, "ca.crt")]).run(
            lambda s: [])
        # What a rule or panel may use: any series any mode exports.
        cls.metrics = {}
        for text in (cls.text, cls.kube_text, cls.ca_text):
            for name, samples in parse_exposition(text).items():
                cls.metrics.setdefault(name, []).extend(samples)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    @staticmethod
    def traffic(s):
        pod, rc = load("review-pod.json"), load("review-raycluster.json")
        bad_rc = copy.deepcopy(rc)
        bad_rc["request"]["object"]["spec"]["workerGroupSpecs"][0]["numOfHosts"] = 3
        got = []
        for method, path, body in [
                ("POST", "/mutate", json.dumps(pod)),          # legacy-path TPU pod: patched
                ("POST", "/validate", json.dumps(rc)),         # allowed
                ("POST", "/validate", json.dumps(bad_rc)),     # denied: wrong numOfHosts
                ("POST", "/mutate", "{not json"),              # 400
                ("GET", "/", None), ("GET", "/healthz", None), ("GET", "/readyz", None),
                ("GET", "/nope", None)]:
            status, data = s.call(method, path, body)
            got.append((path, status))
            if status == 404:  # the route table, as the server lists it
                Scrape.not_found = json.loads(data)["message"]
        return got

    def test_traffic_was_answered_as_intended(self):
        for statuses in (self.statuses, self.kube_statuses):
            self.assertEqual([st for _, st in statuses], [200, 200, 200, 400, 200, 200, 200, 404])
        for text in (self.text, self.kube_text):
            self.assertIn('tpu_webhook_admissions_total{path="/validate",kind="RayCluster",'
                          'decision="denied",reason="invalid"} 1\n', text)
            self.assertIn('tpu_webhook_admissions_total{path="/mutate",kind="Pod",'
                          'decision="allowed",reason="patched"} 1\n', text)
            self.assertIn("tpu_webhook_legacy_reviews_total 1\n", text)
            self.assertIn("tpu_webhook_ready 1\n", text)

    def test_kubernetes_mode_caches(self):
        """The cache series come from real caches fed by the fake API server."""
        t = self.kube_text
        for line in ('tpu_webhook_cache_synced{resource="pods"} 1', 'tpu_webhook_cache_synced{resource="nodes"} 1',
                     'tpu_webhook_cache_watch_down_seconds{resource="pods"} 0',
                     "tpu_webhook_cache_pods_trusted 1", "tpu_webhook_cache_nodes 4"):
            self.assertIn(line + "\n", t)

    def check_expr(self, where, expr):
        sels, grouping = ml.selectors(expr)
        self.assertTrue(sels, "%s: no metric in %r" % (where, expr))
        labels_seen = set()
        for name, matchers in sels:
            if name in ml.SYNTHETIC:
                continue
            self.assertIn(name, self.metrics, "%s: metric %s is not exposed" % (where, name))
            samples = self.metrics[name]
            for s in samples:
                labels_seen |= set(s)
            for label, op, value in matchers:
                if label in ml.TARGET_LABELS:
                    continue
                values = {s.get(label) for s in samples} - {None}
                self.assertTrue(values, "%s: %s has no label %s" % (where, name, label))
                if op == "=" and "$" not in value:
                    self.assertIn(value, values, "%s: %s{%s} never has the value %r" % (where, name, label, value))
        for label in set(grouping) - ml.TARGET_LABELS:
            self.assertIn(label, labels_seen, "%s: grouping label %s is on none of its metrics" % (where, label))

    def test_alert_rules_use_exposed_metrics(self):
        for rule in ml.alert_rules():
            self.check_expr(rule["alert"], rule["expr"])
            for ref in re.findall(r"\$labels\.(\w+)", json.dumps(rule["annotations"])):
                sels, grouping = ml.selectors(rule["expr"])
                names = [n for n, _ in sels if n not in ml.SYNTHETIC]
                exposed = set(ml.TARGET_LABELS).union(*[set(s) for n in names for s in self.metrics[n]])
                self.assertIn(ref, exposed, "%s: annotation uses $labels.%s" % (rule["alert"], ref))

    def test_dashboard_uses_exposed_metrics(self):
        dash = ml.dashboard()
        for p in ml.dashboard_panels(dash):
            for t in p.get("targets", []):
                self.check_expr("panel %r" % p["title"], t["expr"])
                for ref in re.findall(r"\{\{\s*(\w+)\s*\}\}", t.get("legendFormat", "")):
                    sels, _ = ml.selectors(t["expr"])
                    ok = ref in ml.TARGET_LABELS or any(ref in s for n, _ in sels for s in self.metrics.get(n, []))
                    self.assertTrue(ok, "panel %r: legend uses {{%s}}" % (p["title"], ref))

    def test_docs_name_every_metric_and_route(self):
        with open(os.path.join(ml.ROOT, "docs", "cli.md"), encoding="utf-8") as f:
            doc = f.read()
        families = set()
        for text in (self.text, self.kube_text, self.ca_text):
            families |= set(re.findall(r"(?m)^# TYPE (\S+) ", text))
        self.assertGreater(len(families), 20)
        self.assertEqual(sorted(f for f in families if "`%s`" % f not in doc), [],
                         "metrics missing from docs/cli.md's metrics table")
        # "no such path; the webhook serves POST /a, /b and /c, GET /d, ..."
        m = re.match(r"no such path; the webhook serves POST (.*), GET (.*)$", self.not_found)
        self.assertIsNotNone(m, self.not_found)
        routes = [("POST", p) for p in re.split(r", | and ", m.group(1))]
        routes += [("GET", p) for p in re.split(r", | and ", m.group(2))]
        self.assertIn(("GET", "/debug/slices"), routes)
        self.assertEqual([r for r in routes if "| `%s %s` |" % r not in doc], [],
                         "routes missing from docs/cli.md's route table")

    def test_checker_catches_a_renamed_metric(self):
        with self.assertRaises(AssertionError):
            self.check_expr("renamed", 'rate(tpu_webhook_admission_total{decision="denied"}[5m])')
        with self.assertRaises(AssertionError):
            self.check_expr("renamed label", 'sum by (pod) (tpu_webhook_ledger_reservations)')
        with self.assertRaises(AssertionError):
            self.check_expr("renamed value", 'tpu_webhook_admissions_total{reason="api_down"}')

    def test_label_values_are_bounded(self):
        """No label carries a pod, cluster, namespace or client name."""
        allowed = {"path", "code", "le", "kind", "decision", "reason", "result", "resource", "state"}
        # The live slice check's problems carry the namespace, bounded by a
        # cap on the series (wh/slices.h, WH_SLICES_MAX_SERIES: 200).
        slice_problems = {"namespace", "kind", "problem"}
        # The build's one series: two labels fixed for the process's life.
        build_info = {"version", "commit"}
        for name, samples in self.metrics.items():
            for s in samples:
                ok = allowed | build_info if name == "tpu_webhook_build_info" else allowed
                if name == "tpu_webhook_slice_problems":
                    ok = slice_problems
                self.assertLessEqual(set(s), ok, "%s has labels %s" % (name, sorted(s)))
            if name == "tpu_webhook_build_info":
                self.assertEqual(len({tuple(sorted(s.items())) for s in samples}), 1, samples)
            if name == "tpu_webhook_slice_problems":
                self.assertLessEqual(len(samples), 200, name)
                continue
            for label in ("kind", "reason", "path"):
                values = {s[label] for s in samples if label in s}
                self.assertLessEqual(len(values), 8, "%s{%s} has %d values" % (name, label, len(values)))
        names_of_things = {"tpu-cluster", "tpu-group", "default"}
        for name, samples in self.metrics.items():
            for s in samples:
                self.assertFalse(names_of_things & set(s.values()), "%s carries an object name: %s" % (name, s))

    def test_naming_conventions(self):
        """Prometheus' conventions: counters end in _total, a unit suffix on
        what has a unit, the namespace prefix on everything of ours."""
        for name in self.metrics:
            self.assertRegex(name, r"^(tpu_webhook_|process_)")
        types = dict(re.findall(r"^# TYPE (\S+) (\S+)$", self.text + self.kube_text, re.M))
        self.assertLessEqual(set(types), set(self.metrics) | {n for n in types if types[n] == "histogram"})
        for name, typ in types.items():
            if typ == "counter":
                self.assertTrue(name.endswith("_total"), name)
            else:
                self.assertFalse(name.endswith("_total"), name)
            if re.search(r"(duration|_wait_|_time_|_timestamp_|_down_)", name):
                self.assertRegex(name, r"_seconds(_total)?$", "%s has no unit" % name)
            if "memory" in name:
                self.assertTrue(name.endswith("_bytes"), name)


if __name__ == "__main__":
    unittest.main(verbosity=2)
