#!/usr/bin/env python3
"""docs/workloads.md's section "Injected variables" is the table of
src/core/envtab.c (issue 33, step 3).

envtab_doc (tests/repo/envtab_doc.c) prints the section from wh_envtab:
every variable the webhook injects, what it means, and its verb on each
mutation path. This test compares it with the block of the doc between the
markers; with --write it puts it there instead (after a change of the
table).

Usage: test_envtab_doc.py PRINTER DOC [--write] [unittest args]"""
import os
import subprocess
import sys
import unittest

PRINTER = sys.argv[1]
DOC = sys.argv[2]
del sys.argv[1:3]
WRITE = "--write" in sys.argv
if WRITE:
    sys.argv.remove("--write")

BEGIN = "<!-- envtab: generated from src/core/envtab.c by tests/repo/test_envtab_doc.py --write -->\n"
END = "<!-- envtab end -->\n"
# The section "Preset values the slice contradicts", from src/core/envverdict.c.
VBEGIN = ("<!-- envverdict: generated from src/core/envverdict.c by "
          "tests/repo/test_envtab_doc.py --write -->\n")
VEND = "<!-- envverdict end -->\n"


def generated(*args):
    return subprocess.run([PRINTER, *args], check=True, capture_output=True, text=True).stdout


def split(text, begin=BEGIN, end=END):
    """(before, block, after) around the markers; ValueError when they are
    missing or out of order."""
    b = text.index(begin) + len(begin)
    e = text.index(end, b)
    return text[:b], text[b:e], text[e:]


class Section(unittest.TestCase):
    def check(self, begin, end, args, table):
        with open(DOC, encoding="utf-8") as f:
            text = f.read()
        try:
            before, block, after = split(text, begin, end)
        except ValueError:
            self.fail("%s: no block between %r and %r" % (DOC, begin.strip(), end.strip()))
        want = generated(*args)
        if WRITE:
            with open(DOC, "w", encoding="utf-8") as f:
                f.write(before + want + after)
            return
        self.assertEqual(block, want, "%s is not the table of %s; run "
                         "tests/repo/test_envtab_doc.py PRINTER DOC --write" % (DOC, table))

    def test_doc_is_the_table(self):
        self.check(BEGIN, END, (), "src/core/envtab.c")

    def test_doc_is_the_verdicts(self):
        self.check(VBEGIN, VEND, ("verdicts",), "src/core/envverdict.c")


class Catches(unittest.TestCase):
    """The comparison fails on a doc that lost a row, and on one without
    its markers."""

    def test_lost_row(self):
        want = generated()
        rows = [l for l in want.splitlines(True) if l.startswith("| `")]
        self.assertGreater(len(rows), 10)
        self.assertIn("| `TPU_WORKER_ID` |", want)
        self.assertNotEqual(want.replace(rows[3], ""), want)

    def test_lost_verdict(self):
        want = generated("verdicts")
        rows = [l for l in want.splitlines(True) if l.startswith("| `PET_NPROC_PER_NODE`")]
        self.assertEqual(len(rows), 3)
        self.assertNotEqual(want.replace(rows[1], ""), want)

    def test_no_markers(self):
        with self.assertRaises(ValueError):
            split("# a doc\n" + END)


if __name__ == "__main__":
    unittest.main()
