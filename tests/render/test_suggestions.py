#!/usr/bin/env python3
"""Denials whose fix works (issue 34, item 4), through the real binary.

`check -o json` gives each denial's fix as data beside its message (a row's
"fixes": the problem, and its options, each a set of edits that change
together: {"field", "pointer", "value"}, "tpuChipsPerPod" for a pod
template's google.com/tpu). This test walks every manifest of the test
corpora (tests/fixtures/{fixes,manifests,workloads,offline,
kuberay-samples,bad-manifests,strict} and tests/render/corpus: the inputs
the answers baseline records), applies every option of every fix to the document the
row is about, checks it again, and asserts:

  - the message names every value and every field of the option (text
    and data say the same thing: both are written from the same edits);
  - no row is skipped (each input reads as JSON, each row's document is
    found to edit);
  - after the edit, the row's object is admitted, or, when it has other
    problems the fix is not about, none of them names a field the option
    changed (the fixed rule no longer fires, and the fix did not move the
    problem to a field it touched);
  - the fixtures of this item (the seed-004 TPU7x group written per device,
    a chip count that does not divide the topology, each workload kind) are
    admitted outright with the first option of each fix;
  - a denial of chips per pod that names valid values or a divisor carries
    a fix.

Usage: test_suggestions.py BINARY FIXTURES_DIR RENDER_CORPUS_DIR"""
import copy
import glob
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest

import yaml

BINARY = FIX = CORPUS = None

FOLDERS = ("fixes", "manifests", "workloads", "offline", "kuberay-samples", "bad-manifests",
           "strict")
# Each must be admitted once the first option of each of its fixes is applied.
MUST_ADMIT = ("fixes/raycluster-tpu7x-per-device.yaml", "fixes/workloads-chips.yaml",
              "fixes/job-unset-mode-chips.yaml", "fixes/lws-subgroups-chips.yaml",
              "fixes/jobset-replicas-chips.yaml", "manifests/bad-numofhosts.yaml")
CHIPS_DENIAL = re.compile(r"google\.com/tpu\W{0,3} is \d+ per pod[^;]*;[^;]*valid values: \d|"
                          r"does not divide the \d+ chips")


def check(path):
    p = subprocess.run([BINARY, "check", "-o", "json", path], capture_output=True, timeout=120)
    try:
        out = json.loads(p.stdout)
    except ValueError:
        return None
    return out["rows"] if isinstance(out, dict) else out


def inputs():
    for folder in FOLDERS:
        for p in sorted(glob.glob(os.path.join(FIX, folder, "*"))):
            if os.path.isfile(p) and not p.endswith(".md"):
                yield p
    for p in sorted(glob.glob(os.path.join(CORPUS, "*"))):
        yield p


def load(path):
    """The file's documents as PyYAML reads them; None when it reads them
    otherwise than the webhook might (not YAML 1.1 it can load)."""
    try:
        with open(path, encoding="utf-8") as f:
            return list(yaml.safe_load_all(f))
    except Exception:  # pylint: disable=broad-except
        return None


def doc_of(docs, row):
    """The document a row is about: the n-th of its kind and name, n its
    place among the rows of the same kind and name."""
    same = [d for d in docs if isinstance(d, dict) and d.get("kind") == row["kind"]
            and isinstance(d.get("metadata"), dict)
            and (d["metadata"].get("name") or "") == row["name"]]
    return same[0] if len(same) == 1 else None


def unescape(part):
    return part.replace("~1", "/").replace("~0", "~")


def resolve(doc, pointer):
    """(parent, key) of an RFC 6901 pointer into doc."""
    parts = [unescape(p) for p in pointer.split("/")[1:]]
    node = doc
    for p in parts[:-1]:
        node = node[int(p)] if isinstance(node, list) else node.setdefault(p, {})
    last = parts[-1]
    return node, int(last) if isinstance(node, list) else last


def set_chips(template, chips):
    """google.com/tpu of the template's TPU containers, split evenly."""
    cs = [c for c in template["spec"]["containers"]
          if any("google.com/tpu" in ((c.get("resources") or {}).get(k) or {})
                 for k in ("limits", "requests"))]
    assert cs and chips % len(cs) == 0, "cannot split %d chips over %d TPU containers" % (
        chips, len(cs))
    for c in cs:
        for k in ("limits", "requests"):
            res = c["resources"].get(k) or {}
            if "google.com/tpu" in res:
                old = res["google.com/tpu"]
                res["google.com/tpu"] = str(chips // len(cs)) if isinstance(old, str) \
                    else chips // len(cs)


def apply(doc, option):
    for e in option:
        if e.get("tpuChipsPerPod"):
            parent, key = resolve(doc, e["pointer"])
            set_chips(parent[key], e["value"])
        else:
            parent, key = resolve(doc, e["pointer"])
            parent[key] = e["value"]


def leaf(edit):
    """The field an edit changes, as any message names it."""
    if edit.get("tpuChipsPerPod"):
        return "google.com/tpu"
    return unescape(edit["pointer"].rsplit("/", 1)[1])


def names_field(message, name):
    return re.search(r"(?<![A-Za-z])%s(?![A-Za-z])" % re.escape(name), message) is not None


def recheck(docs, doc, edited, row):
    """The row of the edited document, the others as they were."""
    out = [edited if d is doc else d for d in docs]
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        yaml.safe_dump_all(out, f, sort_keys=False)
        name = f.name
    try:
        rows = check(name)
    finally:
        os.unlink(name)
    for r in rows or []:
        if (r["kind"], r["name"], r["group"]) == (row["kind"], row["name"], row["group"]):
            return r
    return None


def rejected_rows(skipped):
    """(path, row) of every rejected row of every input; an input check
    cannot read is added to skipped."""
    for path in inputs():
        rows = check(path)
        if rows is None:
            skipped.append("%s: check gave no JSON" % path)
        for row in rows or []:
            if row.get("verdict") == "rejected":
                yield path, row


class EveryFix(unittest.TestCase):
    """Every option of every fix of every denial of the corpora, applied."""

    def test_every_fix_applied(self):
        n_fixes = n_options = 0
        skipped = []
        for path, row in rejected_rows(skipped):
            rel = os.path.relpath(path, os.path.dirname(FIX))
            fixes = row.get("fixes") or []
            if not fixes and CHIPS_DENIAL.search(row["message"]):
                self.fail("%s: %s: a chips denial without a fix: %s" % (rel, row["group"],
                                                                        row["message"]))
            if not fixes:
                continue
            docs = load(path)
            doc = doc_of(docs, row) if docs else None
            if doc is None:  # a fix no edit can be tried on is a fix untested
                skipped.append("%s: %s: no document to edit" % (rel, row["group"]))
                continue
            for fix in fixes:
                n_fixes += 1
                self.assertTrue(fix["options"], fix)
                for option in fix["options"]:
                    n_options += 1
                    with self.subTest(input=rel, group=row["group"], option=option):
                        for e in option:
                            v = str(e["value"])
                            self.assertTrue(re.search(r"(?<![0-9])%s(?![0-9])" % re.escape(v),
                                                      fix["problem"]),
                                            "the message does not name %s: %s" % (v, fix["problem"]))
                            self.assertTrue(names_field(fix["problem"], leaf(e)),
                                            "the message does not name the edit of %s: %s"
                                            % (leaf(e), fix["problem"]))
                        edited = copy.deepcopy(doc)
                        apply(edited, option)
                        after = recheck(docs, doc, edited, row)
                        self.assertIsNotNone(after, "no row after the edit")
                        if after["verdict"] == "ok":
                            continue
                        self.assertEqual(after["verdict"], "rejected", after)
                        for e in option:
                            self.assertFalse(names_field(after["message"], leaf(e)),
                                             "after %s the denial still names %s: %s"
                                             % (option, leaf(e), after["message"]))
        self.assertEqual(skipped, [], "rows whose fixes were not applied")
        # The corpora hold fixes of each kind (this item's fixtures): a test
        # that finds none has lost its inputs.
        self.assertGreaterEqual(n_fixes, 6)
        self.assertGreaterEqual(n_options, 6)


class Admitted(unittest.TestCase):
    """This item's fixtures, every fix applied at once: admitted."""

    def test_admitted(self):
        for name in MUST_ADMIT:
            path = os.path.join(FIX, name)
            docs = load(path)
            rows = [r for r in check(path) if r["verdict"] == "rejected"]
            self.assertTrue(rows, "%s: expected denials" % name)
            for row in rows:
                with self.subTest(input=name, kind=row["kind"], group=row["group"]):
                    self.assertTrue(row.get("fixes"), row["message"])
                    doc = doc_of(docs, row)
                    edited = copy.deepcopy(doc)
                    for fix in row["fixes"]:
                        apply(edited, fix["options"][0])
                    after = recheck(docs, doc, edited, row)
                    self.assertEqual(after["verdict"], "ok", after["message"])

    def test_seed_004(self):
        """The TPU7x 2x2x2 group with 8 chips per pod: 4 chips with
        numOfHosts 2, never 1 (the 1-chip VM makes 1x1x1 only)."""
        rows = check(os.path.join(FIX, "fixes", "raycluster-tpu7x-per-device.yaml"))
        row = [r for r in rows if r["group"] == "tpu7x-8"][0]
        self.assertIn("valid values: 4 with numOfHosts 2", row["message"])
        self.assertNotIn("valid values: 1", row["message"])
        (option,) = row["fixes"][0]["options"]
        self.assertEqual({(leaf(e), e["value"]) for e in option},
                         {("google.com/tpu", 4), ("numOfHosts", 2)})


if __name__ == "__main__":
    BINARY, FIX, CORPUS = sys.argv[1:4]
    unittest.main(argv=[sys.argv[0]] + sys.argv[4:])
