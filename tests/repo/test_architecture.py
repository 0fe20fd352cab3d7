"""docs/internals/architecture.md is the map of the code (issue 33, step 5):

- every .c file under src/ is named there by its path (src/<layer>/x.c), so
  a module added without a word on its job fails here;
- every path the document names (src/..., include/..., tests/...,
  scripts/..., a file name such as `server_route.c` in backquotes) exists,
  so a file moved or deleted without its map fails here too; so does every
  one CONTRIBUTING.md names in its walks of the common changes.

Usage: test_architecture.py SOURCE_DIR [unittest args]
"""
import os
import re
import shutil
import sys
import tempfile
import unittest

ROOT = os.path.realpath(sys.argv[1])
del sys.argv[1]
DOC = os.path.join("docs", "internals", "architecture.md")
GUIDE = "CONTRIBUTING.md"  # its walks name files too: checked for stale ones

# A path of the repository named in the text: a top folder, then path
# characters, ending in a file name with an extension. A pattern such as
# src/shell/cli/cmd_*.c or tests/<layer>/test_<module>.c is not a path.
PATH = re.compile(r"(?<![\w/.<*-])((?:src|include|tests|scripts|bench|deploy)/"
                  r"[\w./-]*\w\.(?:c|h|py|sh|txt|md))(?![\w*<>])")
# A bare file name in backquotes: `server_route.c`, `wh/server.h`.
NAME = re.compile(r"`((?:wh/|mhd/)?[\w-]+\.[ch])`")
SKIP_DIRS = {".git"}


def source_files(root, top):
    """Every file under root/top, as paths relative to root."""
    out = []
    for d, subdirs, files in os.walk(os.path.join(root, top)):
        subdirs[:] = sorted(s for s in subdirs if s not in SKIP_DIRS and not s.startswith("build"))
        out += [os.path.relpath(os.path.join(d, f), root) for f in sorted(files)]
    return out


def stale(root, doc, text):
    """The paths and file names doc names that do not exist."""
    out = []
    for p in sorted(set(PATH.findall(text))):
        if not os.path.exists(os.path.join(root, p)):
            out.append("%s: names %s, which does not exist; fix or drop it" % (doc, p))
    basenames = set()
    for top in ("src", "include", "tests"):
        for p in source_files(root, top):
            parts = p.split(os.sep)
            basenames.add(parts[-1])
            basenames.add("/".join(parts[-2:]))
    for n in sorted(set(NAME.findall(text))):
        if n not in basenames:
            out.append("%s: names `%s`, which no file under src/, include/ or tests/ is; "
                       "fix or drop it" % (doc, n))
    return out


def problems(root):
    """What the map (and CONTRIBUTING.md's walks) and the tree disagree
    on, one line each."""
    doc_path = os.path.join(root, DOC)
    if not os.path.isfile(doc_path):
        return ["%s: missing" % DOC]
    with open(doc_path, encoding="utf-8") as f:
        text = f.read()
    modules = [p for p in source_files(root, "src") if p.endswith(".c")]
    if not modules:
        return ["src/: no .c file found under %s" % root]
    named = set(PATH.findall(text))
    out = []
    for m in modules:
        if m not in named:
            out.append("%s: %s is not in the module list; add a row with its job"
                       % (DOC, m))
    out += stale(root, DOC, text)
    guide = os.path.join(root, GUIDE)
    if os.path.isfile(guide):
        with open(guide, encoding="utf-8") as f:
            out += stale(root, GUIDE, f.read())
    return out


class Tree(unittest.TestCase):
    """The repository's own map and tree agree."""

    def test_map_matches_tree(self):
        found = problems(ROOT)
        self.assertEqual(found, [], "\n" + "\n".join(found))


class Catches(unittest.TestCase):
    """The check reports each kind of disagreement, naming the file, on a
    small tree of its own (so that Tree cannot pass by checking nothing)."""

    def setUp(self):
        self.root = tempfile.mkdtemp(prefix="wh-arch-")
        self.addCleanup(shutil.rmtree, self.root)
        for p in ("src/core/a.c", "src/core/b.c", "src/shell/sys/c.c"):
            self.write(p, "")

    def write(self, rel, text):
        path = os.path.join(self.root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)

    def test_complete_map_passes(self):
        self.write(DOC, "| `src/core/a.c` | a |\n| `src/core/b.c` | b `a.c` |\n"
                   "| `src/shell/sys/c.c` | c, not `src/shell/*/x.c` |\n")
        self.assertEqual(problems(self.root), [])

    def test_missing_module(self):
        self.write(DOC, "| `src/core/a.c` | a |\n| `src/shell/sys/c.c` | c |\n")
        found = problems(self.root)
        self.assertEqual(len(found), 1, found)
        self.assertIn("src/core/b.c is not in the module list", found[0])

    def test_stale_path(self):
        self.write(DOC, "src/core/a.c src/core/b.c src/shell/sys/c.c src/core/gone.c\n")
        found = problems(self.root)
        self.assertEqual(len(found), 1, found)
        self.assertIn("names src/core/gone.c, which does not exist", found[0])

    def test_stale_file_name(self):
        self.write(DOC, "src/core/a.c src/core/b.c src/shell/sys/c.c, then `moved.c`\n")
        found = problems(self.root)
        self.assertEqual(len(found), 1, found)
        self.assertIn("`moved.c`", found[0])

    def test_stale_path_in_guide(self):
        self.write(DOC, "src/core/a.c src/core/b.c src/shell/sys/c.c\n")
        self.write(GUIDE, "1. `src/core/a.c`, then `src/offline/gone.c`\n")
        found = problems(self.root)
        self.assertEqual(len(found), 1, found)
        self.assertIn("CONTRIBUTING.md: names src/offline/gone.c", found[0])

    def test_no_sources_is_a_failure(self):
        shutil.rmtree(os.path.join(self.root, "src"))
        self.write(DOC, "nothing\n")
        self.assertTrue(problems(self.root))


if __name__ == "__main__":
    unittest.main()
