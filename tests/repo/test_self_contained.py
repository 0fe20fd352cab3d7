#!/usr/bin/python3
"""Every file of the repository stays inside it: no tracked file names a path
outside the checkout (a sibling folder of the checkout, an absolute path
of the machine that wrote it, a relative path that climbs above the root),
and no comment cites a background document that is not in the repository:
a docs/*.md path named anywhere exists, no note is cited by a nickname
("anchor §2.4"), and every comment of a C file that cites a section (§)
names the document it is in (docs/....md, or an RFC).

usage: test_self_contained.py REPO_ROOT

The files are those git tracks (a checkout) or, without git, every file
under the root except build folders (a tarball)."""
import os
import re
import subprocess
import sys

ROOT = os.path.realpath(sys.argv[1])
SELF = os.path.relpath(os.path.realpath(__file__), ROOT)

# Background notes the project was written from live outside the
# repository; citing them by file name points a reader nowhere. Spelt in
# pieces so that this file does not match itself.
OUTSIDE_DOCS = ["anchor" + "-behaviour", "tpu" + "-facts", "kuberay" + "-pods",
                "tpu" + "-workloads", "exem" + "plars"]
ABSOLUTE = re.compile(r"(?<![\w.~/-])/(?:work|home|tmp/fc|root)/[\w.-]")
SIBLING = re.compile(r"(?<![\w.])\.\./" + "shared" + r"\b|\bshared/(?:reference|style)\b")
CLIMB = re.compile(r"(?<![\w.])((?:\.\./)+)([\w.-]+)")
CMAKE_UP = re.compile(r"\$\{(PROJECT_SOURCE_DIR|CMAKE_SOURCE_DIR|CMAKE_CURRENT_SOURCE_DIR)\}((?:/\.\.)+)")
DOCS_PATH = re.compile(r"(?<![\w/.-])docs/[\w/.-]*[\w-]\.md")
NICKNAME = re.compile(r"\b(?:anchor|facts|workloads|reference)\s*§")
C_COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
DOC_REF = re.compile(r"(?<![\w/-])(?:docs/)?(" + "|".join(OUTSIDE_DOCS) + r")\.md")


def files():
    try:
        out = subprocess.run(["git", "-C", ROOT, "ls-files", "-z"], capture_output=True,
                             check=True).stdout.decode()
        names = [n for n in out.split("\0") if n]
        if names:
            return names
    except (OSError, subprocess.CalledProcessError):
        pass
    names = []
    for d, subdirs, fs in os.walk(ROOT):
        subdirs[:] = [s for s in subdirs if not s.startswith(("build", ".git"))]
        names += [os.path.relpath(os.path.join(d, f), ROOT) for f in fs]
    return names


def inside(base_dir, rel):
    """True when rel, read relative to base_dir (inside ROOT), stays in ROOT."""
    target = os.path.normpath(os.path.join(ROOT, base_dir, rel))
    return target == ROOT or target.startswith(ROOT + os.sep)


def problems_of(name, text):
    out = []
    d = os.path.dirname(name)
    for no, line in enumerate(text.splitlines(), 1):
        for m in ABSOLUTE.finditer(line):
            out.append("%s:%d: absolute path %r" % (name, no, m.group(0)))
        for m in SIBLING.finditer(line):
            out.append("%s:%d: path outside the repository %r" % (name, no, m.group(0)))
        for m in CLIMB.finditer(line):
            if not inside(d, m.group(1) + m.group(2)):
                out.append("%s:%d: %r climbs above the repository root" % (name, no, m.group(0)))
        for m in CMAKE_UP.finditer(line):
            base = "" if m.group(1) != "CMAKE_CURRENT_SOURCE_DIR" else d
            if not inside(base, m.group(2).lstrip("/")):
                out.append("%s:%d: %r leaves the source tree" % (name, no, m.group(0)))
        for m in DOC_REF.finditer(line):
            if not os.path.exists(os.path.join(ROOT, "docs", m.group(1) + ".md")):
                out.append("%s:%d: cites %r, which is not in the repository (docs/)" %
                           (name, no, m.group(0)))
        for m in DOCS_PATH.finditer(line):
            if not os.path.isfile(os.path.join(ROOT, m.group(0))):
                out.append("%s:%d: cites %r, which does not exist" % (name, no, m.group(0)))
        for m in NICKNAME.finditer(line):
            out.append("%s:%d: %r cites a note by a nickname; cite a document in docs/ by its "
                       "path" % (name, no, m.group(0)))
    if name.endswith((".c", ".h")):
        for m in C_COMMENT.finditer(text):
            c = m.group(0)
            if "§" in c and ".md" not in c and "RFC" not in c:
                no = text.count("\n", 0, m.start()) + 1
                out.append("%s:%d: a comment cites a section (§) without naming its document "
                           "(docs/....md)" % (name, no))
    return out


def main():
    names = files()
    if len(names) < 20:
        print("FAIL: found only %d files under %s" % (len(names), ROOT))
        return 1
    found = []
    for name in names:
        if name == SELF:
            continue
        path = os.path.join(ROOT, name)
        if not os.path.isfile(path) or os.path.islink(path):
            continue
        with open(path, "rb") as f:
            data = f.read()
        if b"\0" in data[:8192]:
            continue  # binary
        found += problems_of(name, data.decode("utf-8", "replace"))
    # The checker itself must see what it is meant to catch.
    probe = problems_of("tests/x.c", "see ../" + "shared/reference/x\n/wo" + "rk/main/y\n"
                        "../../../etc\n" + OUTSIDE_DOCS[0] + ".md\n"
                        "/* as in anchor " + "§2.4 */\n/* see docs/no-such-" + "note.md */\n"
                        "/* the lookup rule (" + "§2.7.1) */\n")
    if len(probe) < 8:
        print("FAIL: the checker misses planted outside paths: %s" % probe)
        return 1
    for p in found:
        print(p)
    print("%d files, %d references outside the repository" % (len(names), len(found)))
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
