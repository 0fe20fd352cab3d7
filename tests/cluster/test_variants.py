"""Install variants of the cluster suite: each class brings up a cluster of
its own (scripts/cluster.sh up, in a directory beside the shared one, with
the shared cluster's tpu-webhook binary and no operators) and brings it
down at the end, whatever happened."""

import json
import os
import re
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
        # Inner timeouts stay under ctest's (600 s, tests/cluster/CMakeLists.txt)
        # so that tearDownClass runs; a class ctest kills anyway is stopped by
        # cluster.down, which stops every <shared dir>-* too.
        cls.down = lambda: subprocess.run(["bash", cl.CLUSTER_SH, "down"], env=env,
                                          capture_output=True, timeout=90)
        cls.down()
        p = subprocess.run(["bash", cl.CLUSTER_SH, "up", "--components", "", "--webhook",
                            shared["WH_WEBHOOK_BINARY"], "--keep-logs"] + cls.UP_ARGS,
                           env=env, capture_output=True, text=True, timeout=300)
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
    """docs/deploy.md's uninstall of a Helm install, its own commands read
    from that file (the webhook configurations first, `helm uninstall`, the
    claim Leases), after the webhook has admitted pods and claimed a legacy
    worker id: no object of any listable kind but Events is left with the
    chart's label or the claims' labels, and a TPU pod is then created as
    if the webhook had never been installed."""

    SELECTORS = ("app.kubernetes.io/name=kuberay-tpu-webhook",
                 "app.kubernetes.io/managed-by=tpu-webhook,app.kubernetes.io/component=worker-id-claim")

    @staticmethod
    def documented_steps():
        """The sh blocks of docs/deploy.md's Uninstall section a Helm
        install runs: all but the by-hand (kustomize) one."""
        with open(os.path.join(cl.REPO, "docs", "deploy.md")) as f:
            doc = f.read()
        section = doc.split("\n## Uninstall\n", 1)[1].split("\n## ", 1)[0]
        blocks = re.findall(r"```sh\n(.*?)```", section, re.S)
        return [b for b in blocks if "helm" in b or "kuberay-tpu-webhook-certs" not in b]

    def test_nothing_labelled_left(self):
        ns = "cl-uninstall"
        cl.create_namespace(ns)
        cl.kubectl("create", "-f", "-", input=cl.tpu_pod("p", ns, {"tpu-webhook/inject": "enabled"}))
        cl.kubectl("create", "-f", "-", input=legacy_worker_pod("legacy", ns))
        kinds = [k for k in cl.kubectl("api-resources", "--verbs=list", "-o", "name").stdout.split()
                 if k.split(".")[0] != "events"]

        def labelled():
            return [o for sel in self.SELECTORS
                    for o in cl.kubectl("get", ",".join(kinds), "-A", "-l", sel, "-o", "name").stdout.split()]
        cl.wait_for(lambda: any(o.startswith("lease.") for o in labelled()), 30,
                    "the legacy worker id's Lease")
        self.assertIn("deployment.apps/kuberay-tpu-webhook", labelled())
        steps = self.documented_steps()
        self.assertEqual(len(steps), 3, steps)
        path = os.path.join(cl.REPO, "build-tools", "helm4") + ":" + cl.env()["PATH"]
        for step in steps:
            cl.run(["bash", "-euo", "pipefail", "-c", "export PATH=%s\n%s" % (path, step)], timeout=180)
        cl.wait_for(lambda: labelled() == [], 60, "no object of the project's labels (left: %s)" % labelled())
        cl.kubectl("create", "-f", "-", input=cl.tpu_pod("after", ns))
        cl.kubectl("get", "pod", "-n", ns, "after")


if __name__ == "__main__":
    unittest.main()
