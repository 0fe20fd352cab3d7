#!/usr/bin/env python3
"""The doctor examples in docs/troubleshooting.md are real output.

Each problem's example there was produced by the test of test_doctor.py that
breaks a slice that way (the cluster it hands to doctor is captured here and
run again through `tpu-webhook doctor`, table output). This test runs every
example again and compares the lines the doc shows with the command's lines
for that problem; the first example's whole output is compared. With --write
it rewrites the blocks in the doc instead (after a change of wording).

Usage: test_doctor_docs.py BINARY FIXTURES_DIR DOC [--write]"""
import copy
import json
import os
import re
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_doctor as td  # noqa: E402

DOC = None
WRITE = False
# problem id -> the test of test_doctor.py that breaks a slice that way
EXAMPLES = [
    ("duplicate-worker-id", "Broken.test_duplicate_worker_id_legacy"),
    ("missing-hosts", "Broken.test_missing_host"),
    ("extra-host", "Broken.test_extra_host"),
    ("worker-id-missing", "Broken.test_worker_id_missing"),
    ("worker-id-out-of-range", "Broken.test_worker_id_out_of_range"),
    ("worker-id-not-host", "Broken.test_worker_id_not_host"),
    ("tpu7x-container-ids", "Broken.test_tpu7x_per_container_ids"),
    ("hostname-missing", "Broken.test_hostname_missing"),
    ("hostnames-differ", "Broken.test_hostnames_differ"),
    ("hostnames-entry", "Broken.test_hostnames_entry"),
    ("slicebuilder-differ", "Broken.test_slicebuilder_differ"),
    ("slicebuilder-entry", "Broken.test_slicebuilder_entry"),
    ("torchrun-differ", "Broken.test_torchrun_differ"),
    ("service-missing", "Broken.test_service_missing"),
    ("service-not-headless", "Broken.test_service_not_headless"),
    ("service-not-selecting", "Broken.test_service_not_selecting"),
    ("service-not-publishing", "Broken.test_service_not_publishing"),
    ("hostnetwork-dns", "Broken.test_hostnetwork_dns"),
    ("mixed-node-pools", "Broken.test_mixed_node_pools"),
    ("mixed-placement-groups", "Broken.test_mixed_placement_groups"),
    ("node-labels-disagree", "Broken.test_node_labels_disagree"),
    ("unschedulable", "Broken.test_unschedulable"),
    ("megascale-num-slices", "Broken.test_megascale_num_slices"),
    ("megascale-slice-id", "Broken.test_megascale_slice_id"),
    ("megascale-coordinator", "Broken.test_megascale_coordinator"),
    ("drift", "Broken.test_drift_with_the_diff"),
    ("topology-unknown", "Broken.test_topology_unknown"),
]
CMD = "$ tpu-webhook doctor --pods pods.json --nodes nodes.json --services services.json"


def captured_cluster(test):
    """The cluster the test hands to doctor (its last call)."""
    seen = []
    orig = td.doctor

    def spy(c, *a, **k):
        seen.append(copy.deepcopy(c))
        return orig(c, *a, **k)
    td.doctor = spy
    try:
        cls, meth = test.split(".")
        # Broken's tests sit in its subclasses (one ctest entry each).
        base = getattr(td, cls)
        case = next(c for c in [base] + base.__subclasses__() if meth in vars(c))
        r = unittest.TextTestRunner(stream=open(os.devnull, "w")).run(case(meth))
        assert r.wasSuccessful(), (test, r.failures, r.errors)
    finally:
        td.doctor = orig
    return seen[-1]


def table(c):
    args = [td.BINARY, "doctor"]
    for k in ("pods", "nodes", "services"):
        f = os.path.join(td.TMP, k + ".json")
        with open(f, "w") as fh:
            json.dump({"kind": "List", "apiVersion": "v1", "items": c[k]}, fh)
        args += ["--" + k, f]
    p = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert p.returncode in (0, 1), p.stderr
    return p.stdout.rstrip("\n").split("\n"), p.returncode


def block_re(pid):
    return re.compile(r"(### `%s`\n.*?```text\n)(.*?)(```)" % re.escape(pid), re.S)


def example_lines(pid, out):
    return [l for l in out if "[%s]" % pid in l]


class Docs(unittest.TestCase):
    def test_examples_are_real_output(self):
        text = open(DOC).read()
        new = text
        for i, (pid, test) in enumerate(EXAMPLES):
            out, rc = table(captured_cluster(test))
            shown = out if i == 0 else example_lines(pid, out)
            body = "\n".join([CMD] + shown + ["(exit status %d)" % rc]) + "\n"
            m = block_re(pid).search(new)
            self.assertIsNotNone(m, "docs/troubleshooting.md has no example for %s" % pid)
            if WRITE:
                new = new[:m.start(2)] + body + new[m.end(2):]
            else:
                self.assertEqual(m.group(2), body, pid)
        if WRITE:
            with open(DOC, "w") as f:
                f.write(new)


if __name__ == "__main__":
    td.BINARY, td.FIX, DOC = sys.argv[1], sys.argv[2], sys.argv[3]
    WRITE = "--write" in sys.argv[4:]
    unittest.main(argv=sys.argv[:1], verbosity=1)
