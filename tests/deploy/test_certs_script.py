"""certs/install-without-cert-manager.sh: shell syntax and shellcheck, the
kubectl commands of --dry-run, a real run against a fake kubectl that records
its calls, and refusal of certificates the API server would reject.

Environment: WH_BINARY = the built tpu-webhook (used once `certs` exists).
"""
import base64
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import deploylib as dl  # noqa: E402

SCRIPT = os.path.join(dl.ROOT, "certs", "install-without-cert-manager.sh")

# Records every call (argv, one line per call written at once, arguments
# separated by \x1f: the two ends of a pipeline run concurrently) and what an
# `apply -f -` got on stdin; answers `get` with $FAKE_WEBHOOKS or fails when
# $FAKE_GET_FAILS is set, and a caBundle query with $FAKE_CABUNDLE.
FAKE_KUBECTL = r"""#!/usr/bin/env bash
rec=$(printf '%s\x1f' "$@"); printf '%s\n' "$rec" >> "$FAKE_LOG"
case "$*" in
  *"create secret"*) printf 'kind: Secret\nmetadata:\n  name: fake\n' ;;
  "apply -f -") cat > "$FAKE_LOG.stdin" ;;
  get*caBundle*) printf '%s' "$FAKE_CABUNDLE" ;;
  get*) [ -z "$FAKE_GET_FAILS" ] || { echo 'Error from server (NotFound)' >&2; exit 1; }
        printf '%s' "$FAKE_WEBHOOKS" ;;
esac
"""


def openssl(*args, cwd):
    subprocess.run(["openssl"] + list(args), cwd=cwd, check=True, capture_output=True)


def make_certs(d, ns="ray-system", svc="kuberay-tpu-webhook"):
    """A CA and a server certificate for svc.ns.svc in d (openssl CLI)."""
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", "ca.key", "-out", "ca.crt", "-days", "2", "-subj", "/CN=test-ca", cwd=d)
    openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", "tls.key", "-out", "tls.csr", "-subj", "/CN=%s.%s.svc" % (svc, ns), cwd=d)
    with open(os.path.join(d, "san.ext"), "w") as f:
        f.write("subjectAltName=DNS:%s.%s.svc,DNS:%s.%s.svc.cluster.local\n" % (svc, ns, svc, ns))
    openssl("x509", "-req", "-in", "tls.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
            "-days", "2", "-out", "tls.crt", "-extfile", "san.ext", cwd=d)


class CertsScript(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name
        self.certs = os.path.join(self.dir, "certs")
        os.mkdir(self.certs)
        make_certs(self.certs)
        self.bin = os.path.join(self.dir, "bin")
        os.mkdir(self.bin)
        self.kubectl = os.path.join(self.bin, "kubectl")
        with open(self.kubectl, "w") as f:
            f.write(FAKE_KUBECTL)
        os.chmod(self.kubectl, 0o755)
        self.log = os.path.join(self.dir, "calls")
        self.env = dict(os.environ, PATH=self.bin + os.pathsep + os.environ["PATH"], FAKE_LOG=self.log,
                        FAKE_WEBHOOKS="one", FAKE_GET_FAILS="", FAKE_CABUNDLE="")
        self.env.pop("KUBECTL", None)

    def tearDown(self):
        self.tmp.cleanup()

    def run_script(self, *args, **env):
        e = dict(self.env, **env)
        return subprocess.run(["bash", SCRIPT] + list(args), env=e, capture_output=True, text=True, timeout=60)

    def calls(self):
        if not os.path.exists(self.log):
            return []
        with open(self.log) as f:
            return [c.rstrip("\x1f").split("\x1f") for c in f.read().split("\n") if c]

    def ca_b64(self):
        with open(os.path.join(self.certs, "ca.crt"), "rb") as f:
            return base64.b64encode(f.read()).decode()


class CertsScriptChecks(CertsScript):
    def test_syntax_and_shellcheck(self):
        subprocess.run(["bash", "-n", SCRIPT], check=True)
        self.assertIsNotNone(shutil.which("shellcheck"), "shellcheck not found: run scripts/setup.sh")
        p = subprocess.run(["shellcheck", SCRIPT], capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stdout)
        self.assertTrue(os.access(SCRIPT, os.X_OK), "script is not executable")

    def test_dry_run_prints_commands_and_calls_nothing(self):
        p = self.run_script("--dry-run", "--cert-dir", self.certs)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(self.calls(), [], "dry run called kubectl")
        lines = [shlex.split(line) for line in p.stdout.splitlines()]
        self.assertEqual(len(lines), 3, p.stdout)
        # caBundle first, then the secret (see test_rotation_keeps_old_ca).
        lines = lines[2:] + lines[:2]
        create, apply_ = lines[0][:lines[0].index("|")], lines[0][lines[0].index("|") + 1:]
        self.assertEqual(create[:6], ["kubectl", "-n", "ray-system", "create", "secret", "generic"])
        self.assertEqual(create[6], dl.SECRET)
        for k in ("ca.crt", "tls.crt", "tls.key"):
            self.assertIn("--from-file=%s=%s" % (k, os.path.join(self.certs, k)), create)
        self.assertIn("--type=kubernetes.io/tls", create)
        self.assertEqual(apply_, ["kubectl", "apply", "-f", "-"])
        for line, kind, name in ((lines[1], "mutatingwebhookconfiguration", dl.MUTATING),
                                 (lines[2], "validatingwebhookconfiguration", dl.VALIDATING)):
            self.assertEqual(line[:5], ["kubectl", "patch", kind, name, "--type=json"])
            patch = json.loads(line[line.index("-p") + 1])
            self.assertEqual(patch, [{"op": "add", "path": "/webhooks/0/clientConfig/caBundle",
                                      "value": self.ca_b64()}])


class CertsScriptRuns(CertsScript):
    def verbs(self):
        return [c[0] if c[0] != "-n" else c[2] for c in self.calls()]

    def patches(self):
        return {c[1]: json.loads(c[c.index("-p") + 1]) for c in self.calls() if c[0] == "patch"}

    def test_workloads_flag_patches_the_workload_configurations(self):
        p = self.run_script("--cert-dir", self.certs, "--workloads", FAKE_WEBHOOKS="first second")
        self.assertEqual(p.returncode, 0, p.stderr)
        names = [c[2] for c in self.calls() if c[0] == "patch"]
        self.assertEqual(names, ["kuberay-tpu-mutating-webhook-cfg", "kuberay-tpu-validating-webhook-cfg",
                                 "tpu-webhook-workload-mutating-cfg", "tpu-webhook-workload-validating-cfg"])
        with open(os.path.join(dl.ROOT, "deploy", "kustomize", "workloads", "workload-webhooks.yaml")) as f:
            shipped = {d["metadata"]["name"] for d in dl.load_docs(f.read(), "workload-webhooks.yaml")}
        self.assertEqual(shipped, set(names[2:]))

    def test_real_run_against_fake_kubectl(self):
        p = self.run_script("--cert-dir", self.certs, FAKE_WEBHOOKS="first second")
        self.assertEqual(p.returncode, 0, p.stderr)
        calls, verbs = self.calls(), self.verbs()
        # caBundles before the secret; the pipeline's two ends in any order.
        self.assertEqual(verbs[:6], ["get", "get", "patch", "get", "get", "patch"], calls)
        self.assertEqual(sorted(verbs[6:]), ["apply", "create"], calls)
        create = calls[verbs.index("create")]
        self.assertEqual(create[:2], ["-n", "ray-system"])
        self.assertIn("--dry-run=client", create)
        with open(self.log + ".stdin") as f:
            self.assertIn("kind: Secret", f.read())
        patches = self.patches()
        self.assertEqual(sorted(patches), ["mutatingwebhookconfiguration", "validatingwebhookconfiguration"])
        for patch in patches.values():
            self.assertEqual([op["path"] for op in patch], ["/webhooks/0/clientConfig/caBundle",
                                                            "/webhooks/1/clientConfig/caBundle"])
            self.assertTrue(all(op["value"] == self.ca_b64() for op in patch))

    def test_rotation_keeps_old_ca(self):
        old = os.path.join(self.dir, "old")
        os.mkdir(old)
        make_certs(old)
        with open(os.path.join(old, "ca.crt"), "rb") as f:
            old_pem = f.read()
        with open(os.path.join(self.certs, "ca.crt"), "rb") as f:
            new_pem = f.read()
        # The current bundle already holds two CAs: only its first is kept.
        current = base64.b64encode(old_pem + new_pem).decode()
        p = self.run_script("--cert-dir", self.certs, FAKE_CABUNDLE=current)
        self.assertEqual(p.returncode, 0, p.stderr)
        for patch in self.patches().values():
            self.assertEqual(base64.b64decode(patch[0]["value"]), new_pem + old_pem)
        # Same CA as before: no duplicate.
        os.remove(self.log)
        p = self.run_script("--cert-dir", self.certs, FAKE_CABUNDLE=self.ca_b64())
        self.assertEqual(p.returncode, 0, p.stderr)
        for patch in self.patches().values():
            self.assertEqual(base64.b64decode(patch[0]["value"]), new_pem)


class CertsScriptRefusals(CertsScript):
    def test_missing_configuration_is_a_clear_error(self):
        p = self.run_script("--cert-dir", self.certs, FAKE_GET_FAILS="1")
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("apply the manifests first", p.stderr)

    def test_refuses_certificate_for_another_service(self):
        p = self.run_script("--dry-run", "--cert-dir", self.certs, "--namespace", "other")
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("not valid for kuberay-tpu-webhook.other.svc", p.stderr)
        self.assertEqual(p.stdout, "")

    def test_refuses_key_of_another_certificate(self):
        other = os.path.join(self.dir, "other")
        os.mkdir(other)
        make_certs(other)
        shutil.copy(os.path.join(other, "tls.key"), os.path.join(self.certs, "tls.key"))
        p = self.run_script("--dry-run", "--cert-dir", self.certs)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("does not belong to", p.stderr)

    def test_refuses_certificate_of_another_ca(self):
        other = os.path.join(self.dir, "other")
        os.mkdir(other)
        make_certs(other)
        shutil.copy(os.path.join(other, "ca.crt"), os.path.join(self.certs, "ca.crt"))
        p = self.run_script("--dry-run", "--cert-dir", self.certs)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("not signed by", p.stderr)

    def test_bad_arguments(self):
        for args, msg in ((["--bogus"], "unknown argument"), (["--namespace"], "needs a value"),
                          (["--cert-dir", "/nonexistent"], "missing or empty")):
            p = self.run_script(*args)
            self.assertNotEqual(p.returncode, 0, args)
            self.assertIn(msg, p.stderr, args)


class CertsScriptGenerate(CertsScript):
    def test_generates_certificates_with_tpu_webhook(self):
        binary = os.environ.get("WH_BINARY")
        self.assertTrue(binary and os.access(binary, os.X_OK), "WH_BINARY=%r" % binary)
        out = os.path.join(self.dir, "generated")
        os.mkdir(out)
        # The script checks the SANs, the chain and the key pair itself.
        p = self.run_script("--dry-run", "--tpu-webhook", binary, "--out", out, "--namespace", "tpu")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn(" -n tpu create secret", p.stdout)
        for k in ("ca.crt", "tls.crt", "tls.key"):
            self.assertTrue(os.path.getsize(os.path.join(out, k)) > 0, k)
        # A second run reuses the CA in --out, so the caBundle does not change.
        with open(os.path.join(out, "ca.crt"), "rb") as f:
            first_ca = f.read()
        p = self.run_script("--dry-run", "--tpu-webhook", binary, "--out", out, "--namespace", "tpu")
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(os.path.join(out, "ca.crt"), "rb") as f:
            self.assertEqual(f.read(), first_ca)


if __name__ == "__main__":
    unittest.main(verbosity=2)
