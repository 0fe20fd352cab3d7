"""Install variants of the cluster suite: each class brings up a cluster of
its own (scripts/cluster.sh up, in a directory beside the shared one, with
the shared cluster's tpu-webhook binary and no operators) and brings it
down at the end, whatever happened."""

import json
import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import clusterlib as cl  # noqa: E402
from clusterlib import physics  # noqa: E402
from test_core import legacy_worker_pod  # noqa: E402

INDEXED_JOB = os.path.join(cl.WORKLOADS, "indexed-job-v6e-4x4.yaml")


class OwnCluster(unittest.TestCase):
    """A base: its own cluster, up with UP_ARGS, in <shared dir>-<name>."""
    UP_ARGS = []

    @classmethod
    def setUpClass(cls):
        shared = cl.env()
        d = shared["WH_CLUSTER_DIR"] + "-" + cls.__name__.lower()
        env = dict(os.environ, WH_CLUSTER_DIR=d)
        cls.down = lambda: subprocess.run(["bash", cl.CLUSTER_SH, "down"], env=env,
                                          capture_output=True, timeout=300)
        cls.down()
        p = subprocess.run(["bash", cl.CLUSTER_SH, "up", "--components", "", "--webhook",
                            shared["WH_WEBHOOK_BINARY"], "--keep-logs"] + cls.UP_ARGS,
                           env=env, capture_output=True, text=True, timeout=900)
        if p.returncode:
            cls.down()
            raise AssertionError("cluster.sh up %s: exit %d\n%s" % (
                " ".join(cls.UP_ARGS), p.returncode, p.stderr[-4000:]))
        os.environ["WH_CLUSTER_DIR"] = d
        cl.ENV = None

    @classmethod
    def tearDownClass(cls):
        cls.down()


class Kustomize(OwnCluster):
    """The webhook installed from deploy/kustomize (base and the workload
    webhooks, no cert-manager) instead of the chart: the Indexed Job's
    stored pods pass the same physics."""
    UP_ARGS = ["--install", "kustomize"]

    def test_indexed_job(self):
        self.assertEqual(cl.env()["WH_WEBHOOK_INSTALL"], "kustomize")
        cfg = cl.get_json("mutatingwebhookconfiguration", "tpu-webhook-workload-mutating-cfg")
        self.assertNotIn("helm.sh/chart", json.dumps(cfg["metadata"]))
        ns = "cl-kustomize"
        cl.create_namespace(ns)
        cl.kubectl("apply", "-n", ns, "-f", INDEXED_JOB)
        pods = cl.wait_pods(ns, 4, selector="job-name=train-v6e")
        physics.check_slices(pods)



class Uninstall(OwnCluster):
    """docs/deploy.md's uninstall (the webhook configurations first, then
    `helm uninstall`), after the webhook has admitted pods and claimed a
    legacy worker id: no object of any listable kind is left with the
    chart's label app.kubernetes.io/name=kuberay-tpu-webhook."""

    def test_nothing_labelled_left(self):
        ns = "cl-uninstall"
        cl.create_namespace(ns)
        cl.kubectl("create", "-f", "-", input=cl.tpu_pod("p", ns, {"tpu-webhook/inject": "enabled"}))
        cl.kubectl("create", "-f", "-", input=legacy_worker_pod("legacy", ns))
        cl.wait_for(lambda: cl.get_json("leases", "-n", "ray-system")["items"], 30,
                    "the legacy worker id's Lease")
        kinds = cl.kubectl("api-resources", "--verbs=list", "-o", "name").stdout.split()
        sel = "app.kubernetes.io/name=kuberay-tpu-webhook"

        def labelled():
            return cl.kubectl("get", ",".join(kinds), "-A", "-l", sel, "-o", "name").stdout.split()
        self.assertIn("deployment.apps/kuberay-tpu-webhook", labelled())
        for kind in ("mutatingwebhookconfiguration", "validatingwebhookconfiguration"):
            cl.kubectl("delete", kind, "-l", sel)
        cl.run([os.path.join(cl.REPO, "build-tools", "helm4", "helm"), "uninstall", "tpu-webhook",
                "-n", "ray-system", "--kubeconfig", cl.env()["KUBECONFIG"]])
        cl.wait_for(lambda: labelled() == [], 60, "no object labelled %s (left: %s)" % (sel, labelled()))


if __name__ == "__main__":
    unittest.main()
