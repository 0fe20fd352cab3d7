"""No circle of includes among the modules of one layer (issue 33: "no
circle among core files"). A module is x.c under src/<layer>/ (its own
folder's files included) with its public header include/<layer>/wh/x.h; a
header alone is a module too. Module a uses b when a's .c or .h includes
"wh/b.h" and b.h is the layer's own. A circle means two modules that
cannot be read, tested or moved one without the other: put the piece both
need in a module of its own (as violations.h and node.h were).

Usage: test_circles.py SOURCE_DIR [unittest args]
"""
import os
import re
import shutil
import sys
import tempfile
import unittest

ROOT = os.path.realpath(sys.argv[1])
del sys.argv[1]
LAYERS = ("util", "core", "offline")
INCLUDE = re.compile(r'^\s*#\s*include\s+"wh/([\w-]+)\.h"', re.M)


def graph(root, layer):
    """module -> the layer's modules it includes."""
    hdr_dir = os.path.join(root, "include", layer, "wh")
    own = {f[:-2] for f in os.listdir(hdr_dir) if f.endswith(".h")} if os.path.isdir(hdr_dir) else set()
    files = [os.path.join(hdr_dir, f + ".h") for f in own]
    for d, subdirs, names in os.walk(os.path.join(root, "src", layer)):
        subdirs[:] = []  # a room's folder (offline/doctor) has private headers of its own
        files += [os.path.join(d, n) for n in names if n.endswith(".c")]
    g = {}
    for path in files:
        mod = os.path.basename(path)[:-2]
        with open(path, encoding="utf-8") as f:
            deps = {h for h in INCLUDE.findall(f.read()) if h in own and h != mod}
        g.setdefault(mod, set()).update(deps)
    return g


def circles(g):
    """The strongly connected groups of more than one module (Tarjan)."""
    index, low, stack, on, out, n = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = n[0]
        n[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(g.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(sorted(group))

    for v in sorted(g):
        if v not in index:
            visit(v)
    return out


def problems(root):
    out = []
    for layer in LAYERS:
        for group in circles(graph(root, layer)):
            out.append("%s: a circle of includes among %s; move what they share into a module "
                       "of its own" % (layer, ", ".join(group)))
    return out


class Tree(unittest.TestCase):
    def test_no_circle(self):
        self.assertEqual(problems(ROOT), [])


class Catches(unittest.TestCase):
    """The check finds a circle it is shown."""

    def test_two_modules_in_a_circle(self):
        tmp = tempfile.mkdtemp()
        try:
            os.makedirs(os.path.join(tmp, "include", "core", "wh"))
            os.makedirs(os.path.join(tmp, "src", "core"))
            for a, b in (("a", "b"), ("b", "a")):
                with open(os.path.join(tmp, "src", "core", a + ".c"), "w") as f:
                    f.write('#include "wh/%s.h"\n#include "wh/%s.h"\n' % (a, b))
                open(os.path.join(tmp, "include", "core", "wh", a + ".h"), "w").close()
            with open(os.path.join(tmp, "src", "core", "c.c"), "w") as f:
                f.write('#include "wh/a.h"\n')
            self.assertEqual(problems(tmp),
                             ["core: a circle of includes among a, b; move what they share "
                              "into a module of its own"])
        finally:
            shutil.rmtree(tmp)


if __name__ == "__main__":
    unittest.main()
