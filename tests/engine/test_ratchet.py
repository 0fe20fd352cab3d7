"""UPDATEs judged by what they change (issue 23, src/core/ratchet.c):
every review in tests/fixtures/reviews/updates goes through the real
`tpu-webhook review` and must get the verdict EXPECT.json gives it; a review
admitted because its problems were already in oldObject carries a warning
naming them, and the same review without oldObject (or as CREATE) is
denied, so the admission comes from the ratchet and not from a rule that
went away. Covers RayCluster, Job, JobSet and LeaderWorkerSet."""
import argparse
import copy
import glob
import json
import os
import subprocess
import sys
import unittest

BINARY = FIXTURES = None


def review(rv):
    p = subprocess.run([BINARY, "review", "-"], input=json.dumps(rv).encode(),
                       capture_output=True, timeout=60)
    if p.returncode != 0:
        raise AssertionError("review exited %d: %s" % (p.returncode, p.stderr.decode()))
    return json.loads(p.stdout)["response"]


class Updates(unittest.TestCase):
    def setUp(self):
        self.dir = os.path.join(FIXTURES, "reviews", "updates")
        with open(os.path.join(self.dir, "EXPECT.json")) as f:
            self.expect = json.load(f)["reviews"]

    def load(self, name):
        with open(os.path.join(self.dir, name)) as f:
            return json.load(f)

    def test_every_fixture_has_a_verdict(self):
        files = {os.path.basename(p) for p in glob.glob(os.path.join(self.dir, "*.json"))}
        files.discard("EXPECT.json")
        self.assertEqual(files, set(self.expect))
        kinds = {self.load(n)["request"]["kind"]["kind"] for n in files}
        self.assertEqual(kinds, {"RayCluster", "Job", "JobSet", "LeaderWorkerSet"})
        # Each kind has the three cases the issue names.
        for prefix in ("raycluster", "job", "jobset", "lws"):
            for case in ("-deleting-invalid-finalizer-removed", "-valid-broken"):
                self.assertIn(prefix + case + ".json", files)
            self.assertTrue(any(n.startswith(prefix + "-invalid-") and self.expect[n]["warning"]
                                for n in files), prefix)

    def test_verdicts(self):
        for name, want in sorted(self.expect.items()):
            with self.subTest(review=name, why=want["why"]):
                r = review(self.load(name))
                self.assertEqual(r["allowed"], want["allowed"], r.get("status"))
                warnings = r.get("warnings") or []
                if want["warning"]:
                    self.assertTrue(any(want["warning"] in w for w in warnings), warnings)
                else:
                    self.assertFalse(any("already broken" in w for w in warnings), warnings)
                if not want["allowed"]:
                    self.assertEqual(r["status"]["code"], 400)
                    self.assertTrue(r["status"]["message"])

    def test_admitted_updates_are_invalid_on_their_own(self):
        """Each admitted UPDATE's object is denied as a CREATE and as an
        UPDATE without oldObject: the admission is the ratchet's."""
        for name, want in sorted(self.expect.items()):
            rv = self.load(name)
            if not want["allowed"] or rv["request"]["operation"] != "UPDATE":
                continue
            obj = rv["request"]["object"]
            obj_live = copy.deepcopy(obj)
            obj_live["metadata"].pop("deletionTimestamp", None)
            for op, old in (("CREATE", None), ("UPDATE", None)):
                with self.subTest(review=name, op=op):
                    alone = copy.deepcopy(rv)
                    alone["request"].update(operation=op, oldObject=old, object=obj_live)
                    self.assertFalse(review(alone)["allowed"])

    def test_warning_names_the_rule(self):
        r = review(self.load("raycluster-invalid-replicas-changed.json"))
        self.assertTrue(any('worker group "tpu-group" numOfHosts' in w for w in r["warnings"]),
                        r["warnings"])
        self.assertTrue(all(len(w) <= 119 for w in r["warnings"]))

    def test_new_violation_denied_and_named(self):
        r = review(self.load("raycluster-invalid-new-violation.json"))
        self.assertFalse(r["allowed"])
        self.assertIn('"tpu-group-2"', r["status"]["message"])

    def test_renaming_a_broken_group_is_a_new_violation(self):
        rv = self.load("raycluster-invalid-replicas-changed.json")
        rv["request"]["object"]["spec"]["workerGroupSpecs"][0]["groupName"] = "renamed"
        self.assertFalse(review(rv)["allowed"])

    def test_many_broken_groups_moved_and_one_new(self):
        """Problems are looked up by key among oldObject's (sorted, not a
        scan of every pair): 300 broken groups listed in reverse are the
        same problems (admitted); one more broken group is new (denied,
        named), wherever it stands in the list."""
        rv = self.load("raycluster-invalid-replicas-changed.json")
        req = rv["request"]
        base_new = req["object"]["spec"]["workerGroupSpecs"][0]
        base_old = req["oldObject"]["spec"]["workerGroupSpecs"][0]

        def groups(base, names):
            out = []
            for n in names:
                g = copy.deepcopy(base)
                g["groupName"] = n
                out.append(g)
            return out

        names = ["g-%03d" % i for i in range(300)]
        req["oldObject"]["spec"]["workerGroupSpecs"] = groups(base_old, names)
        req["object"]["spec"]["workerGroupSpecs"] = groups(base_new, names[::-1])
        r = review(rv)
        self.assertTrue(r["allowed"], r.get("status"))
        self.assertTrue(any("and 297 more problems already there" in w
                            for w in r.get("warnings") or []), r.get("warnings"))
        for at in (0, 150, 300):
            with self.subTest(at=at):
                new = names[::-1]
                new.insert(at, "g-new")
                req["object"]["spec"]["workerGroupSpecs"] = groups(base_new, new)
                r = review(rv)
                self.assertFalse(r["allowed"])
                msg = r["status"]["message"]
                self.assertTrue(msg.startswith("new in this update (not in oldObject): "
                                               'worker group "g-new"'), msg[:300])

    def test_deleting_but_not_update_is_judged(self):
        """deletionTimestamp admits an UPDATE only; a CREATE carrying one is
        judged (the API server never sends one, but the webhook must not
        take the object's word for it on CREATE)."""
        rv = self.load("raycluster-deleting-invalid-finalizer-removed.json")
        rv["request"].update(operation="CREATE", oldObject=None)
        self.assertFalse(review(rv)["allowed"])

    def test_unreadable_old_object_is_judged_as_new(self):
        rv = self.load("raycluster-invalid-replicas-changed.json")
        for old in ("text", [], 3):
            with self.subTest(old=old):
                rv["request"]["oldObject"] = old
                self.assertFalse(review(rv)["allowed"])


class ByValue(unittest.TestCase):
    """A ratchet by value (issue 35): a problem is the rule, what it is
    about and the values of the fields the rule reads (topology, chips per
    pod, numOfHosts, the group's name; never replicas, minReplicas or
    maxReplicas, which the autoscaler writes), counted as often as it
    occurs."""

    def load(self, name):
        with open(os.path.join(FIXTURES, "reviews", "updates", name)) as f:
            return json.load(f)

    def broken(self):
        """A v6e 4x4 group of 4 chips per pod with numOfHosts 2 (needs 4),
        unchanged: admitted by the ratchet."""
        rv = self.load("raycluster-invalid-replicas-changed.json")
        req = rv["request"]
        req["object"] = copy.deepcopy(req["oldObject"])
        return rv, req["object"]["spec"]["workerGroupSpecs"][0]

    def test_another_impossible_shape_denied(self):
        rv, g = self.broken()
        g["template"]["spec"]["nodeSelector"]["cloud.google.com/gke-tpu-topology"] = "16x16"
        g["replicas"] = 1000
        r = review(rv)
        self.assertFalse(r["allowed"])
        self.assertTrue(r["status"]["message"].startswith("new in this update"), r["status"])
        self.assertIn("16x16", r["status"]["message"])

    def test_broken_field_into_another_broken_value_denied(self):
        for field, value in (("numOfHosts", 3), ("numOfHosts", 8)):
            with self.subTest(field=field, value=value):
                rv, g = self.broken()
                g[field] = value
                self.assertFalse(review(rv)["allowed"])
        rv, g = self.broken()
        g["template"]["spec"]["containers"][0]["resources"]["limits"]["google.com/tpu"] = "8"
        self.assertFalse(review(rv)["allowed"])  # 8 chips of a 4x4: 2 hosts, still wrong

    def test_second_broken_group_of_the_same_name_denied(self):
        rv, g = self.broken()
        rv["request"]["object"]["spec"]["workerGroupSpecs"].append(copy.deepcopy(g))
        r = review(rv)
        self.assertFalse(r["allowed"])
        msg = r["status"]["message"]
        self.assertTrue(msg.startswith('new in this update (not in oldObject): worker group '
                                       '"tpu-group"'), msg)
        self.assertIn("spec.workerGroupSpecs[1]", msg)

    def test_fixing_the_field_admitted(self):
        rv, g = self.broken()
        g["numOfHosts"] = 4
        r = review(rv)
        self.assertTrue(r["allowed"], r.get("status"))
        self.assertFalse(r.get("warnings"))

    def test_autoscaler_fields_keep_the_value(self):
        for change in ({"replicas": 7}, {"minReplicas": 2, "maxReplicas": 9},
                       {"replicas": 0, "minReplicas": 0, "maxReplicas": 1000}):
            with self.subTest(change=change):
                rv, g = self.broken()
                g.update(change)
                r = review(rv)
                self.assertTrue(r["allowed"], r.get("status"))
                self.assertTrue(any("already broken" in w for w in r["warnings"]), r["warnings"])

    def test_workload_value_changed_denied_replicas_kept(self):
        """/validate-workload ratchets by value too: a Job's wrong
        parallelism changed into another wrong one is denied; a JobSet's
        replicas changed on a broken replicated job are not its value."""
        rv = self.load("job-invalid-suspended.json")
        spec = rv["request"]["object"]["spec"]
        spec["parallelism"] = spec.get("parallelism", 1) + 1
        self.assertFalse(review(rv)["allowed"])
        rv = self.load("jobset-invalid-replicas-changed.json")
        rj = rv["request"]["object"]["spec"]["replicatedJobs"][0]
        rj["replicas"] = 9
        self.assertTrue(review(rv)["allowed"])


class DryRun(unittest.TestCase):
    """sideEffects: NoneOnDryRun (deploy/): a dry run reserves nothing, and
    its answer says so about the id it shows."""

    def legacy(self, dry):
        with open(os.path.join(FIXTURES, "reviews", "v6e-16-legacy.json")) as f:
            rv = json.load(f)
        rv["request"]["dryRun"] = dry
        return review(rv)

    def test_dry_run_answer_warns_the_id_is_not_reserved(self):
        r = self.legacy(True)
        self.assertTrue(r["allowed"])
        self.assertTrue(r.get("patch"))
        w = [x for x in r.get("warnings") or [] if x.startswith("dry run:")]
        self.assertEqual(len(w), 1, r.get("warnings"))
        self.assertIn("TPU_WORKER_ID 0 (replica 0) is not reserved", w[0])

    def test_real_request_has_no_such_warning(self):
        r = self.legacy(False)
        self.assertTrue(r["allowed"])
        self.assertFalse([x for x in r.get("warnings") or [] if x.startswith("dry run:")])

    def test_native_pod_dry_run_has_nothing_to_reserve(self):
        with open(os.path.join(FIXTURES, "reviews", "v6e-16-native-host1.json")) as f:
            rv = json.load(f)
        rv["request"]["dryRun"] = True
        r = review(rv)
        self.assertTrue(r["allowed"])
        self.assertFalse([x for x in r.get("warnings") or [] if x.startswith("dry run:")])


def main():
    global BINARY, FIXTURES
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", required=True)
    ap.add_argument("--fixtures", required=True)
    args, rest = ap.parse_known_args()
    BINARY, FIXTURES = args.binary, args.fixtures
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=1)


if __name__ == "__main__":
    main()
