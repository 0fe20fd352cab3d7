"""The monitoring objects of the Helm chart and of the kustomize components:
the copies written by scripts/gen-monitoring.py match deploy/monitoring/;
the ServiceMonitor finds the Service, its port and the Secret with the CA
the webhook is served with, and verifies the name the certificate carries;
the PrometheusRule holds exactly the rules file and the dashboard ConfigMap
exactly the dashboard; the prometheus.io/* annotations name the container's
port; and all of it is optional (absent by default).
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "deploy"))
import deploylib as dl  # noqa: E402
import monlib as ml  # noqa: E402
import test_helm as helm  # noqa: E402

KUSTOMIZE = os.path.join(ml.ROOT, "deploy", "kustomize")
MONITORING_KINDS = ("ServiceMonitor", "PrometheusRule")
ALL_ON = {"metrics": {"podAnnotations": True, "serviceMonitor": {"enabled": True, "labels": {"release": "prom"}},
                      "prometheusRule": {"enabled": True}, "dashboard": {"enabled": True}}}


def monitoring_problems(objs, ns="ray-system"):
    """What keeps the ServiceMonitor from scraping, or the rule/dashboard
    objects from matching their source files."""
    errs = []
    svc = dl.find(objs, "Service", dl.NAME)[0]
    dep = dl.find(objs, "Deployment", dl.NAME)[0]
    sms = dl.find(objs, "ServiceMonitor")
    if len(sms) != 1:
        return ["expected one ServiceMonitor, found %d" % len(sms)]
    sm = sms[0]["spec"]
    svc_labels = svc["metadata"].get("labels", {})
    for k, v in sm["selector"]["matchLabels"].items():
        if svc_labels.get(k) != v:
            errs.append("ServiceMonitor selects %s=%s; the Service has %r" % (k, v, svc_labels.get(k)))
    if sm.get("namespaceSelector", {}).get("matchNames") != [svc["metadata"]["namespace"]]:
        errs.append("ServiceMonitor looks in %r, the Service is in %s" % (sm.get("namespaceSelector"), ns))
    ep = sm["endpoints"][0]
    if ep["port"] not in [p["name"] for p in svc["spec"]["ports"]]:
        errs.append("ServiceMonitor port %r is not a port of the Service" % ep["port"])
    if ep.get("scheme") != "https" or ep.get("path") != "/metrics":
        errs.append("ServiceMonitor must scrape https /metrics, not %s %s" % (ep.get("scheme"), ep.get("path")))
    tls = ep.get("tlsConfig", {})
    secret = [v["secret"]["secretName"] for v in dep["spec"]["template"]["spec"]["volumes"] if v["name"] == "tls"][0]
    if tls.get("ca", {}).get("secret") != {"name": secret, "key": "ca.crt"}:
        errs.append("ServiceMonitor CA %r is not ca.crt of the served Secret %s" % (tls.get("ca"), secret))
    if tls.get("insecureSkipVerify"):
        errs.append("ServiceMonitor skips certificate verification")
    if tls.get("serverName") != "%s.%s.svc" % (dl.NAME, ns):
        errs.append("ServiceMonitor serverName %r is not the Service's DNS name" % tls.get("serverName"))
    certs = dl.find(objs, "Certificate", dl.SECRET)  # the serving one, not the CA
    if certs and tls.get("serverName") not in certs[0]["spec"]["dnsNames"]:
        errs.append("the certificate does not name %r" % tls.get("serverName"))
    if {"action": "replace", "targetLabel": "job", "replacement": "kuberay-tpu-webhook"} not in ep.get("relabelings", []):
        errs.append("ServiceMonitor does not set the job label the rules select")

    rules = dl.find(objs, "PrometheusRule")
    with open(ml.RULES) as f:
        want_rules = yaml.safe_load(f)
    if len(rules) != 1 or rules[0]["spec"] != want_rules:
        errs.append("PrometheusRule spec differs from deploy/monitoring/tpu-webhook.rules.yaml")
    cms = [o for o in dl.find(objs, "ConfigMap") if o["metadata"].get("labels", {}).get("grafana_dashboard") == "1"]
    if len(cms) != 1:
        errs.append("expected one ConfigMap labelled grafana_dashboard=1, found %d" % len(cms))
    else:
        data = cms[0]["data"]
        if list(data) != ["tpu-webhook-dashboard.json"] or json.loads(data["tpu-webhook-dashboard.json"]) != ml.dashboard():
            errs.append("dashboard ConfigMap differs from deploy/monitoring/tpu-webhook-dashboard.json")
    return errs


def scrape_annotations(objs):
    dep = dl.find(objs, "Deployment", dl.NAME)[0]
    ann = dep["spec"]["template"]["metadata"].get("annotations") or {}
    return {k: v for k, v in ann.items() if k.startswith("prometheus.io/")}


def container_port(objs):
    dep = dl.find(objs, "Deployment", dl.NAME)[0]
    return [p["containerPort"] for p in dep["spec"]["template"]["spec"]["containers"][0]["ports"]
            if p["name"] == "https"][0]


def kustomize_with(*components):
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "kustomization.yaml"), "w") as f:
            yaml.safe_dump({"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
                            # kustomize takes only relative paths
                            "resources": [os.path.relpath(os.path.join(KUSTOMIZE, "default"), d)],
                            "components": [os.path.relpath(os.path.join(KUSTOMIZE, "components", c), d)
                                           for c in components]}, f)
        return dl.kustomize_render(d)


class Generated(unittest.TestCase):
    def test_copies_match_their_source(self):
        r = subprocess.run([sys.executable, os.path.join(ml.ROOT, "scripts", "gen-monitoring.py"), "--check"],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)


class Chart(unittest.TestCase):
    def test_off_by_default(self):
        objs, _ = helm.render()
        self.assertEqual([o["kind"] for o in objs if o["kind"] in MONITORING_KINDS], [])
        self.assertEqual(dl.find(objs, "ConfigMap"), [])
        self.assertEqual(scrape_annotations(objs), {})

    def test_all_on(self):
        objs, _ = helm.render(helm.tv(**ALL_ON))
        self.assertEqual(dl.check_install(objs), [])
        self.assertEqual(monitoring_problems(objs), [])
        sm = dl.find(objs, "ServiceMonitor")[0]
        self.assertEqual(sm["metadata"]["labels"]["release"], "prom")
        self.assertEqual(scrape_annotations(objs), {
            "prometheus.io/scrape": "true", "prometheus.io/scheme": "https",
            "prometheus.io/port": str(container_port(objs)), "prometheus.io/path": "/metrics"})

    def test_other_namespace_port_and_dashboard_namespace(self):
        over = dict(ALL_ON["metrics"], dashboard={"enabled": True, "namespace": "grafana",
                                                   "annotations": {"grafana_folder": "TPU"}})
        objs, _ = helm.render(helm.tv(namespace={"name": "tpu", "create": True, "labels": {}},
                                      deployment={"bindPort": 9443}, metrics=over))
        self.assertEqual(monitoring_problems(objs, ns="tpu"), [])
        cm = [o for o in dl.find(objs, "ConfigMap")][0]
        self.assertEqual(cm["metadata"]["namespace"], "grafana")
        self.assertEqual(cm["metadata"]["annotations"], {"grafana_folder": "TPU"})
        self.assertEqual(scrape_annotations(objs)["prometheus.io/port"], "9443")

    def test_checker_catches_breakage(self):
        objs, _ = helm.render(helm.tv(**ALL_ON))
        sm = dl.find(objs, "ServiceMonitor")[0]["spec"]["endpoints"][0]
        sm["tlsConfig"]["serverName"] = "10.0.0.1"
        self.assertTrue(monitoring_problems(objs))
        sm["tlsConfig"]["serverName"] = "kuberay-tpu-webhook.ray-system.svc"
        dl.find(objs, "PrometheusRule")[0]["spec"]["groups"][0]["rules"].pop()
        self.assertTrue(monitoring_problems(objs))


class Kustomize(unittest.TestCase):
    def test_base_and_default_have_none(self):
        for kdir in ("base", "default"):
            objs = dl.kustomize_render(os.path.join(KUSTOMIZE, kdir))
            self.assertEqual([o["kind"] for o in objs if o["kind"] in MONITORING_KINDS], [])
            self.assertEqual(scrape_annotations(objs), {})

    def test_monitoring_overlay(self):
        objs = dl.kustomize_render(os.path.join(KUSTOMIZE, "monitoring"))
        self.assertEqual(dl.check_install(objs), [])
        self.assertEqual(monitoring_problems(objs), [])
        # Everything the default install has, plus the three objects.
        default = dl.kustomize_render(os.path.join(KUSTOMIZE, "default"))
        self.assertEqual(len(objs), len(default) + 3)

    def test_annotations_component(self):
        objs = kustomize_with("prometheus-annotations")
        self.assertEqual(scrape_annotations(objs), {
            "prometheus.io/scrape": "true", "prometheus.io/scheme": "https",
            "prometheus.io/port": str(container_port(objs)), "prometheus.io/path": "/metrics"})
        self.assertEqual(dl.check_install(objs), [])


if __name__ == "__main__":
    unittest.main(verbosity=2)
