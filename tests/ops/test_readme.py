#!/usr/bin/python3
"""Every command of README.md runs as written on a fresh clone (issue 25,
items 5 and 6).

The repository is cloned (its HEAD commit; a tree without git is copied)
into a temporary folder and the README read from there:

- the README is at most 200 lines;
- Quick start is exactly two commands, `bash scripts/serve-dev.sh` and
  `bash scripts/test.sh`, and .ci/run calls the second. test.sh cannot run
  inside ctest (it runs ctest), so it is only checked to exist; serve-dev.sh
  runs for real in the clone with npm unreachable (a PATH shim that records
  any call and fails, npm_config_registry on a closed port): it builds,
  serves, answers the curl line it prints, its decode line works with no
  python3 or jq on PATH, and npm is never called;
- every other command of a ```sh block runs in the clone with exit 0; the two
  that need a cluster run their offline twins on the same arguments:
  `helm install` renders the chart (tests/deploy/helmrender, the --set values
  applied) and `kubectl apply -k DIR` is `kubectl kustomize DIR`; the
  block of scripts/cluster.sh is left to the cluster suite (ctest -L
  cluster), which runs its steps against a real control plane;
- every relative link of the README names a file that exists, and a
  heading of it when the link has an #anchor.

usage: test_readme.py REPO_ROOT   (environment: WH_HELMRENDER)"""
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

ROOT = os.path.realpath(sys.argv[1])
sys.path.insert(0, os.path.join(ROOT, "tests", "deploy"))
import deploylib  # noqa: E402  (kubectl >= 1.21, as tests/deploy find it)

QUICK_START = ["bash scripts/serve-dev.sh", "bash scripts/test.sh"]


def fresh_clone(dest):
    if os.path.isdir(os.path.join(ROOT, ".git")) or os.path.isfile(os.path.join(ROOT, ".git")):
        head = subprocess.run(["git", "-C", ROOT, "rev-parse", "HEAD"], capture_output=True, text=True,
                              check=True).stdout.strip()
        subprocess.run(["git", "clone", "-q", "--shared", "--no-checkout", ROOT, dest], check=True)
        subprocess.run(["git", "-C", dest, "checkout", "-q", head], check=True)
    else:
        shutil.copytree(ROOT, dest, ignore=shutil.ignore_patterns("build*", "certs/dev"))


def sh_commands(readme):
    """[(block number, command)] of the ```sh blocks, continuation lines joined."""
    out = []
    for n, block in enumerate(re.findall(r"^```sh\n(.*?)^```", readme, re.S | re.M)):
        block = re.sub(r"\\\n\s*", " ", block)
        for line in block.splitlines():
            if line.strip() and not line.strip().startswith("#"):
                out.append((n, line.strip()))
    return out


def without_comment(cmd):
    return " ".join(shlex.split(cmd, comments=True))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def set_values(args):
    """The nested values of helm's --set a.b=c arguments."""
    values = {}
    for i, a in enumerate(args):
        if a == "--set":
            key, _, val = args[i + 1].partition("=")
            node = values
            parts = key.split(".")
            for p in parts[:-1]:
                node = node.setdefault(p, {})
            node[parts[-1]] = {"true": True, "false": False}.get(val, val)
    return values


class Readme(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="wh-readme-")
        cls.clone = os.path.join(cls.tmp, "tpu-webhook")
        fresh_clone(cls.clone)
        with open(os.path.join(cls.clone, "README.md"), encoding="utf-8") as f:
            cls.text = f.read()
        cls.commands = sh_commands(cls.text)
        cls.served = None

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_1_short(self):
        self.assertLessEqual(len(self.text.splitlines()), 200)

    def test_2_quick_start(self):
        first = [without_comment(c) for n, c in self.commands if n == 0]
        self.assertEqual(first, QUICK_START)
        self.assertIn("## Quick start", self.text.split("```sh")[0])
        for c in QUICK_START:
            self.assertTrue(os.path.isfile(os.path.join(self.clone, c.split()[1])), c)
        with open(os.path.join(self.clone, ".ci", "run"), encoding="utf-8") as f:
            self.assertRegex(f.read(), r"(?m)^exec bash scripts/test\.sh$")

    def test_3_serve_dev_builds_and_serves_without_npm(self):
        shims = os.path.join(self.tmp, "shims")
        os.makedirs(shims, exist_ok=True)
        log = os.path.join(self.tmp, "npm.log")
        for tool in ("npm", "npx", "node"):
            with open(os.path.join(shims, tool), "w") as f:
                f.write('#!/bin/sh\necho "%s $*" >>%s\necho "ECONNREFUSED 127.0.0.1:9" >&2\nexit 1\n'
                        % (tool, shlex.quote(log)))
            os.chmod(os.path.join(shims, tool), 0o755)
        addr = "127.0.0.1:%d" % free_port()
        env = dict(os.environ, PATH=shims + ":" + os.environ["PATH"], WH_DEV_ADDRESS=addr,
                   npm_config_registry="http://127.0.0.1:9", HTTPS_PROXY="http://127.0.0.1:9",
                   HTTP_PROXY="http://127.0.0.1:9")
        out = open(os.path.join(self.tmp, "serve-dev.out"), "w+")
        p = subprocess.Popen(["bash", "scripts/serve-dev.sh"], cwd=self.clone, env=env, stdout=out,
                             stderr=subprocess.STDOUT, start_new_session=True)
        try:
            deadline = time.time() + 900  # a fresh build on a shared machine
            text = ""
            while time.time() < deadline and p.poll() is None:
                out.seek(0)
                text = out.read()
                if '"event":"listening"' in text:
                    break
                time.sleep(1)
            self.assertIn('"event":"listening"', text, "serve-dev.sh did not serve:\n" + text[-3000:])
            curl = [l for l in text.splitlines() if l.startswith("curl ")]
            # The review, then its patch decoded (the metrics line is indented).
            self.assertEqual(len(curl), 2, text[-3000:])
            r = subprocess.run(["bash", "-c", curl[0]], cwd=self.clone, capture_output=True, text=True, timeout=30)
            self.assertEqual(r.returncode, 0, r.stderr)
            answer = json.loads(r.stdout)["response"]
            self.assertTrue(answer["allowed"])
            self.assertTrue(answer["patch"])
            # The decode line needs nothing serve-dev.sh did not install:
            # python3 and jq answer "not found" on its PATH.
            for tool in ("python3", "python", "jq"):
                with open(os.path.join(shims, tool), "w") as f:
                    f.write('#!/bin/sh\necho "%s: not installed" >&2\nexit 127\n' % tool)
                os.chmod(os.path.join(shims, tool), 0o755)
            bare = dict(os.environ, PATH=shims + ":" + os.environ["PATH"])  # no proxy
            r = subprocess.run(["bash", "-c", curl[1]], cwd=self.clone, env=bare,
                               capture_output=True, text=True, timeout=30)
            self.assertEqual((r.returncode, r.stderr), (0, ""), curl[1])
            self.assertEqual(json.loads(r.stdout)[0]["op"], "add", r.stdout[:500])
        finally:
            os.killpg(p.pid, signal.SIGTERM)
            rc = p.wait(timeout=60)
            out.close()
        self.assertEqual(rc, 0)
        self.assertFalse(os.path.exists(log), "serve-dev.sh called npm: " + (open(log).read() if os.path.exists(log) else ""))
        type(self).served = True

    def run_offline_twin(self, cmd):
        args = shlex.split(cmd, comments=True)
        if args[:2] == ["helm", "install"]:
            binary = os.environ.get("WH_HELMRENDER", "")
            self.assertTrue(binary and os.access(binary, os.X_OK), "WH_HELMRENDER=%r: helmrender not built" % binary)
            values = os.path.join(self.tmp, "values.json")
            with open(values, "w") as f:
                json.dump(set_values(args[4:]), f)
            return subprocess.run([binary, os.path.join(self.clone, args[3]), args[2], "default", values],
                                  cwd=self.clone, capture_output=True, text=True, timeout=120)
        if args[:3] == ["kubectl", "apply", "-k"] and len(args) == 4:
            kubectl = deploylib.kubectl()
            self.assertTrue(kubectl, "no kubectl >= 1.21: run scripts/setup.sh test")
            return subprocess.run([kubectl, "kustomize", args[3]], cwd=self.clone, capture_output=True, text=True,
                                  timeout=120)
        return None

    def test_4_every_other_command_runs(self):
        if not self.served:
            # The commands use ./build/tpu-webhook, which serve-dev.sh built.
            subprocess.run(["cmake", "-S", ".", "-B", "build"], cwd=self.clone, check=True, capture_output=True)
            subprocess.run(["cmake", "--build", "build", "-j2", "--target", "tpu-webhook"], cwd=self.clone,
                           check=True, capture_output=True)
        # The block of scripts/cluster.sh needs the control plane's Go build
        # (tens of minutes cold): the cluster suite runs its steps instead
        # (ctest -L cluster: cluster.up, cluster.core.IndexedJob on the same
        # manifest, cluster.down).
        cluster = {n for n, c in self.commands if c.startswith("bash scripts/cluster.sh ")}
        rest = [c for n, c in self.commands if n > 0 and n not in cluster]
        self.assertGreaterEqual(len(rest), 6)
        for cmd in rest:
            with self.subTest(cmd=cmd):
                p = self.run_offline_twin(cmd)
                if p is None:
                    p = subprocess.run(["bash", "-c", cmd], cwd=self.clone, capture_output=True, text=True,
                                       timeout=120)
                self.assertEqual(p.returncode, 0, "%s\n%s%s" % (cmd, p.stdout[-2000:], p.stderr[-2000:]))
                self.assertTrue(p.stdout.strip(), cmd)

    def test_5_links_exist(self):
        links = re.findall(r"\]\(([^)#\s]+)(?:#([^)]*))?\)", self.text)
        self.assertTrue(links)
        for target, anchor in links:
            if re.match(r"\w+://", target):
                continue
            path = os.path.join(self.clone, target)
            self.assertTrue(os.path.exists(path), target)
            if anchor:
                with open(path, encoding="utf-8") as f:
                    slugs = {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-")
                             for h in re.findall(r"^#+ (.*)$", f.read(), re.M)}
                self.assertIn(anchor, slugs, "%s#%s" % (target, anchor))


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
