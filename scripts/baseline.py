#!/usr/bin/env python3
"""The answers baseline (issue 33, step 0): what the CLI says today about
every input the repo holds, recorded so that a refactor that must not change
behaviour is diffed against it.

For each input it runs the real binary and records the exit status, stdout
and stderr of:
  - reviews (fixtures, golden vectors, fuzz corpora): `review -o json`, and
    `review --workload -o json` (a Pod as /mutate-workload answers it);
  - manifests (fixtures, KubeRay samples, the YAML fuzz corpus):
    `render -o json`, `render --env -o json`, `check -o json`,
    `check --strict -o json`, and `doctor -o json` over the pods render
    printed (--pods -, with the test cluster's TPU nodes as --nodes), the
    pods as the cluster would hold them once admitted;
  - the Pods of the fixture reviews as written: `doctor -o json`.

The records live in tests/fixtures/baseline/, one file per input folder,
one section per input and command. Paths are given relative to the repo
root, so the records hold no machine's paths; the CLI's answers hold no
clock or random value (render derives KubeRay's random suffixes from names).

  scripts/baseline.py --runner build/tests/baseline/baseline_run           # diff
  scripts/baseline.py --runner build/tests/baseline/baseline_run --update  # re-record
  scripts/baseline.py --exec build/tpu-webhook    # diff, one process per case

baseline_run (tests/baseline/) runs every command line in one process
through the binary's entry point: seconds instead of minutes. --exec runs
the binary itself once per case, to show the runner answers as it does.

A change of an answer fails naming the first differing record file and
section, with a diff of that section. An intended change is re-recorded with
--update and lands in its own commit that says what changed and why.
"""

import argparse
import concurrent.futures
import difflib
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = "tests/fixtures/baseline"
NODES = "tests/cluster/fixtures/nodes.yaml"

# (record file, folder, kind of input, file filter). Every folder must exist
# and hold inputs: a baseline that silently shrinks is no baseline.
GROUPS = [
    ("reviews", "tests/fixtures/reviews", "review", lambda n: n.endswith(".json")),
    ("reviews-updates", "tests/fixtures/reviews/updates", "review",
     lambda n: n.endswith(".json") and n != "EXPECT.json"),
    ("golden", "tests/fixtures/golden", "review", lambda n: n.endswith(".review.json")),
    ("fuzz-corpus", "tests/fuzz/corpus", "review", None),
    ("fuzz-jparse-corpus", "tests/fuzz/jparse-corpus", "review", None),
    ("manifests", "tests/fixtures/manifests", "manifest", None),
    ("workloads", "tests/fixtures/workloads", "manifest", None),
    ("offline", "tests/fixtures/offline", "manifest", None),
    ("fixes", "tests/fixtures/fixes", "manifest", lambda n: n.endswith(".yaml")),
    ("kuberay-samples", "tests/fixtures/kuberay-samples", "manifest",
     lambda n: n.endswith(".yaml")),
    ("bad-manifests", "tests/fixtures/bad-manifests", "manifest", None),
    ("strict", "tests/fixtures/strict", "manifest", None),
    ("render-corpus", "tests/render/corpus", "manifest", None),
]

# Reviews of these folders also have their Pod checked by doctor (the fuzz
# corpora are left out: their inputs are mostly not Pods, and doubling them
# buys little).
DOCTOR_REVIEWS = {"reviews", "reviews-updates", "golden"}


def section(title, rc, out, err):
    text = "### %s\nexit %d\n--- stdout\n" % (title, rc)
    text += out.decode("utf-8", "backslashreplace")
    if out and not out.endswith(b"\n"):
        text += "\n(no newline at end)\n"
    text += "--- stderr\n" + err.decode("utf-8", "backslashreplace")
    if err and not err.endswith(b"\n"):
        text += "\n(no newline at end)\n"
    return text


def review_pod(path):
    """The request's object as a one-Pod list for doctor, or None."""
    import json
    try:
        with open(os.path.join(ROOT, path), "rb") as f:
            doc = json.load(f)
        obj = doc["request"]["object"]
    except (ValueError, KeyError, TypeError):
        return None
    if not isinstance(obj, dict) or obj.get("kind") != "Pod":
        return None
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": [obj]}).encode()


def inputs(folder, keep):
    full = os.path.join(ROOT, folder)
    names = sorted(n for n in os.listdir(full)
                   if os.path.isfile(os.path.join(full, n)) and (keep is None or keep(n)))
    if not names:
        sys.exit("baseline: %s holds no inputs" % folder)
    return [os.path.join(folder, n) for n in names]


class Case:
    """One command line; its answer is filled in by a Runner."""

    def __init__(self, args, title=None, stdin=None):
        self.args, self.title, self.stdin = args, title or " ".join(args), stdin
        self.answer = None

    def text(self):
        return section(self.title, *self.answer)


class Runner:
    """Runs cases: through baseline_run (one process for all), or with
    --exec through the binary, one process each (the slow, obvious way,
    to show the runner gives the same bytes)."""

    def __init__(self, runner=None, binary=None, jobs=2):
        self.runner, self.binary, self.jobs = runner, binary, jobs

    def run(self, cases, tmp):
        if self.binary:
            def one(c):
                data = None
                if c.stdin:
                    with open(c.stdin, "rb") as f:
                        data = f.read()
                p = subprocess.run([self.binary] + c.args, cwd=ROOT, input=data,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
                c.answer = (p.returncode, p.stdout, p.stderr)
            with concurrent.futures.ThreadPoolExecutor(max_workers=self.jobs) as pool:
                list(pool.map(one, cases))
            return
        lines = []
        for c in cases:
            if any("\t" in a or "\n" in a for a in c.args):
                sys.exit("baseline: an argument holds a tab or newline: %r" % c.args)
            lines.append("\t".join([c.stdin or "-"] + c.args) + "\n")
        p = subprocess.run([self.runner], cwd=ROOT, input="".join(lines).encode(),
                           stdout=subprocess.PIPE, timeout=600)
        if p.returncode != 0:
            sys.exit("baseline: %s exited %d" % (self.runner, p.returncode))
        data, at = p.stdout, 0
        for c in cases:
            end = data.index(b"\n", at)
            rc, out_len, err_len = (int(x) for x in data[at:end].split())
            at = end + 1
            c.answer = (rc, data[at:at + out_len], data[at + out_len:at + out_len + err_len])
            at += out_len + err_len
        if at != len(data):
            sys.exit("baseline: %s wrote more than its records" % self.runner)


def build(runner):
    """Record file name -> its text, every group."""
    inputs_ = []  # (record file, path, [Case])
    first = []
    for name, folder, kind, keep in GROUPS:
        for path in inputs(folder, keep):
            if kind == "review":
                cases = [Case(["review", "-o", "json", path]),
                         Case(["review", "--workload", "-o", "json", path])]
            else:
                cases = [Case(["render", "-o", "json", path]),
                         Case(["render", "--env", "-o", "json", path]),
                         Case(["check", "-o", "json", path]),
                         Case(["check", "--strict", "-o", "json", path])]
            inputs_.append((name, kind, path, cases))
            first.extend(cases)
    with tempfile.TemporaryDirectory(prefix="wh-baseline-") as tmp:
        runner.run(first, tmp)
        # Second pass: doctor over what the first gave (render's pods) or
        # over the review's Pod.
        second = []
        for i, (name, kind, path, cases) in enumerate(inputs_):
            pods = None
            if kind == "review" and name in DOCTOR_REVIEWS:
                pods, how = review_pod(path), "pod of"
                extra = []
            elif kind == "manifest" and cases[0].answer[0] == 0 and cases[0].answer[1]:
                pods, how = cases[0].answer[1], "render of"
                extra = ["--nodes", NODES]
            if pods is None:
                continue
            stdin = os.path.join(tmp, "%d.json" % i)
            with open(stdin, "wb") as f:
                f.write(pods)
            args = ["doctor", "-o", "json", "--pods", "-"] + extra
            c = Case(args, "%s < %s %s" % (" ".join(args), how, path), stdin)
            cases.append(c)
            second.append(c)
        runner.run(second, tmp)
    files = {}
    for name, _, path, cases in inputs_:
        text = "".join(c.text() for c in cases)
        files.setdefault(name + ".txt", []).append("# input %s\n%s" % (path, text))
    return {k: "".join(v) for k, v in files.items()}


def first_difference(name, want, got):
    """A message naming the record file, input and command that first differ."""
    split = lambda t: t.split("\n### ")
    a, b = want.split("\n# input "), got.split("\n# input ")
    for x, y in zip(a + [""] * (len(b) - len(a)), b + [""] * (len(a) - len(b))):
        if x != y:
            where = (y or x).split("\n", 1)[0].replace("# input ", "")
            for sx, sy in zip(split(x) + [""] * 9, split(y) + [""] * 9):
                if sx != sy:
                    cmd = (sy or sx).split("\n", 1)[0].lstrip("# ")
                    diff = difflib.unified_diff(sx.splitlines(), sy.splitlines(),
                                                "recorded", "now", lineterm="", n=2)
                    lines = list(diff)
                    more = "\n... (%d more lines)" % (len(lines) - 60) if len(lines) > 60 else ""
                    return ("%s/%s: input %s, `%s` differs:\n%s%s"
                            % (OUT, name, where, cmd, "\n".join(lines[:60]), more))
    return "%s/%s differs" % (OUT, name)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    how = ap.add_mutually_exclusive_group(required=True)
    how.add_argument("--runner", help="tests/baseline's baseline_run (fast)")
    how.add_argument("--exec", help="the tpu-webhook binary, one process per case (slow)")
    ap.add_argument("--update", action="store_true", help="re-record the baseline")
    ap.add_argument("-j", type=int, default=2, help="processes at once (default 2)")
    opts = ap.parse_args()
    runner = Runner(runner=opts.runner and os.path.abspath(opts.runner),
                    binary=opts.exec and os.path.abspath(opts.exec), jobs=opts.j)
    now = build(runner)
    outdir = os.path.join(ROOT, OUT)
    if opts.update:
        os.makedirs(outdir, exist_ok=True)
        for stale in set(os.listdir(outdir)) - set(now) - {"README.md"}:
            os.remove(os.path.join(outdir, stale))
        for name, text in now.items():
            with open(os.path.join(outdir, name), "w", encoding="utf-8") as f:
                f.write(text)
        print("baseline: recorded %d files in %s" % (len(now), OUT))
        return 0
    recorded = set(os.listdir(outdir)) - {"README.md"} if os.path.isdir(outdir) else set()
    for name in sorted(set(now) | recorded):
        if name not in recorded:
            print("%s/%s: not recorded (scripts/baseline.py --update)" % (OUT, name))
            return 1
        if name not in now:
            print("%s/%s: recorded but no longer produced" % (OUT, name))
            return 1
        with open(os.path.join(outdir, name), encoding="utf-8") as f:
            want = f.read()
        if want != now[name]:
            print(first_difference(name, want, now[name]))
            print("(an intended change: scripts/baseline.py --runner RUNNER --update, "
                  "in its own commit saying why)")
            return 1
    print("baseline: %d files, every answer as recorded" % len(now))
    return 0


if __name__ == "__main__":
    sys.exit(main())
