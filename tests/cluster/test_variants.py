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


if __name__ == "__main__":
    unittest.main()
