#!/usr/bin/env python3
"""`check --strict` through the real binary (issue 36 item 6, docs/cli.md):
unknown fields, kinds and versions of the known API groups, from the
OpenAPI schemas in tests/fixtures/schemas; files with no Kubernetes object
listed as not checked, failing the run only under --strict.

Usage: test_check_strict.py BINARY FIXTURES_DIR"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

import yaml

BINARY = FIX = None


def check(*args, stdin=None):
    p = subprocess.run([BINARY, "check"] + list(args), input=stdin, capture_output=True,
                       timeout=120, text=True)
    return p.returncode, p.stdout, p.stderr


def report(*args):
    rc, out, err = check("-o", "json", *args)
    return rc, json.loads(out)


def strict_rows(rep):
    return [r for r in rep["rows"] if r["verdict"] == "strict"]


class Typos(unittest.TestCase):
    def test_unknown_kind(self):
        path = os.path.join(FIX, "strict", "rayjob-kind-typo.yaml")
        rc, rep = report(path)  # today's behaviour without --strict: nothing to see
        self.assertEqual((rc, rep["objects"], rep["rows"]), (0, 0, []))
        rc, rep = report("--strict", path)
        self.assertEqual(rc, 1, rep)
        self.assertFalse(rep["ok"])
        (row,) = strict_rows(rep)
        self.assertEqual((row["kind"], row["name"], row["field"], row["suggestion"]),
                         ("RayJobb", "typo-kind", "kind", "RayJob"))
        self.assertEqual(row["message"], "kind RayJobb: unknown kind in ray.io/v1; known kinds: "
                         "RayCluster, RayJob, RayService; did you mean RayJob?")
        rc, out, err = check("--strict", path)
        self.assertEqual(rc, 1)
        self.assertIn("rayjob-kind-typo.yaml:2: strict RayJobb/typo-kind: kind RayJobb: unknown "
                      "kind in ray.io/v1", out)
        self.assertIn("1 strict finding(s)", out)

    def test_numofhost(self):
        path = os.path.join(FIX, "strict", "raycluster-numofhost.yaml")
        rc, rep = report(path)
        self.assertEqual(strict_rows(rep), [])
        rc, rep = report("--strict", path)
        self.assertEqual(rc, 1)
        (row,) = strict_rows(rep)
        self.assertEqual(row["message"], "spec.workerGroupSpecs[0].numOfHost: unknown field; "
                         "did you mean numOfHosts?")
        self.assertEqual((row["field"], row["suggestion"], row["kind"], row["name"]),
                         ("spec.workerGroupSpecs[0].numOfHost", "numOfHosts", "RayCluster",
                          "typo-numofhost"))
        # The group is still judged, as the API server would see it.
        (group,) = [r for r in rep["rows"] if r["group"] == "tpu-group"]
        self.assertEqual((group["verdict"], group["numOfHosts"]), ("rejected", 1))

    def test_nested_container_typo(self):
        path = os.path.join(FIX, "strict", "job-container-typo.yaml")
        rc, rep = report(path)
        self.assertEqual(rc, 0, rep)
        rc, rep = report("--strict", path)
        self.assertEqual(rc, 1)
        (row,) = strict_rows(rep)
        self.assertEqual(row["message"], "spec.template.spec.containers[0].imagePullPolicyy: "
                         "unknown field; did you mean imagePullPolicy?")

    def test_stdin_and_list_items(self):
        doc = {"apiVersion": "v1", "kind": "List", "items": [
            {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
             "spec": {"containers": [{"name": "c", "imagee": "x"}]}},
            {"apiVersion": "v1", "kind": "Servicee", "metadata": {"name": "s"}}]}
        rc, out, err = check("-o", "json", "--strict", "-", stdin=json.dumps(doc))
        rows = strict_rows(json.loads(out))
        self.assertEqual(rc, 1)
        self.assertEqual([(r["kind"], r["field"], r["suggestion"]) for r in rows],
                         [("Pod", "spec.containers[0].imagee", "image"),
                          ("Servicee", "kind", "Service")])


class NotObjects(unittest.TestCase):
    def test_values_and_polyaxonfile(self):
        for name in ("values.yaml", "polyaxonfile.yaml"):
            path = os.path.join(FIX, "strict", name)
            rc, rep = report(path)
            self.assertEqual(rc, 0, rep)  # listed, not a failure
            (row,) = rep["rows"]
            self.assertEqual(row["verdict"], "not-checked")
            self.assertIn("holds no Kubernetes object", row["message"])
            self.assertEqual(rep["notChecked"], 1)
            rc, rep = report("--strict", path)
            self.assertEqual(rc, 1, rep)
            self.assertFalse(rep["ok"])
            rc, out, err = check(path)
            self.assertIn("%s:" % path, out)
            self.assertIn("not checked: the file holds no Kubernetes object", out)

    def test_document_without_kind_beside_objects(self):
        with tempfile.NamedTemporaryFile("w", suffix=".yaml") as f:
            f.write("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n---\nfoo: bar\n")
            f.flush()
            rc, rep = report(f.name)
            self.assertEqual((rc, rep["rows"]), (0, []))
            rc, rep = report("--strict", f.name)
            self.assertEqual(rc, 1)
            (row,) = strict_rows(rep)
            self.assertEqual(row["field"], "apiVersion")


class ValidFixtures(unittest.TestCase):
    """Every valid object of the repo's fixtures and KubeRay's samples passes
    --strict with no finding, and --strict changes none of their rows."""

    def test_fixtures_pass_strict(self):
        dirs = [os.path.join(FIX, d) for d in ("kuberay-samples", "manifests", "workloads")]
        rc, rep = report(*dirs)
        rc_s, rep_s = report("--strict", *dirs)
        self.assertEqual(strict_rows(rep_s), [])
        self.assertEqual(rep_s["notChecked"], 0)
        self.assertEqual((rc_s, rep_s["rows"]), (rc, rep["rows"]))
        kinds = set()
        for d in dirs:
            for name in os.listdir(d):
                if name.endswith((".yaml", ".json")):
                    with open(os.path.join(d, name)) as f:
                        kinds.update(doc.get("kind") for doc in yaml.safe_load_all(f) if doc)
        for kind in ("RayCluster", "RayJob", "RayService", "Job", "JobSet", "LeaderWorkerSet"):
            self.assertIn(kind, kinds, "no %s among the fixtures checked" % kind)


class ReviewObjects(unittest.TestCase):
    """The objects of the AdmissionReview fixtures (Pods as the API server
    sends them, metadata and status included; RayClusters, Jobs, JobSets and
    LWS of the UPDATE cases) have no strict finding either."""

    def test_review_objects_pass_strict(self):
        items = []
        for root, _, files in os.walk(os.path.join(FIX, "reviews")):
            for name in sorted(files):
                with open(os.path.join(root, name)) as f:
                    req = json.load(f).get("request") or {}
                items += [req[k] for k in ("object", "oldObject") if req.get(k)]
        kinds = {o["kind"] for o in items}
        self.assertTrue({"Pod", "RayCluster", "Job", "JobSet", "LeaderWorkerSet"} <= kinds, kinds)
        rc, out, err = check("-o", "json", "--strict", "-",
                             stdin=json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
        rep = json.loads(out)
        self.assertEqual(strict_rows(rep), [])
        self.assertEqual(rep["notChecked"], 0)


def main():
    global BINARY, FIX
    BINARY, FIX = sys.argv[1], sys.argv[2]
    unittest.main(argv=[sys.argv[0]] + sys.argv[3:], verbosity=1)


if __name__ == "__main__":
    main()
