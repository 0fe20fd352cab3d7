"""test_kubeconfig_cli.py: the commands that talk to the API server read
kubeconfigs through the one client (issue 36, item 2): `doctor` with an
exec credential plugin (GKE's case: exec_plugin.sh stands in for
gke-gcloud-auth-plugin and counts its runs), `--kubeconfig` with the
reference's `--kube-config-path` as an alias on doctor and serve, a FIFO
refused at once, a failing plugin's stdout never shown, and the warning
before a token goes over plain http:// to the loopback.

usage: test_kubeconfig_cli.py TPU_WEBHOOK [unittest args]"""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "doctor"))
import fakeapi  # noqa: E402  (the fake API server over loopback http)

BINARY = sys.argv.pop(1)
PLUGIN = os.path.join(HERE, "exec_plugin.sh")
TOKEN = "cli-exec-token-77"


class KubeconfigCli(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="whkc.")
        cls.api, cls.port, _ = fakeapi.start(cls.tmp, TOKEN)

    @classmethod
    def tearDownClass(cls):
        cls.api.kill()
        cls.api.wait()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def setUp(self):
        self.pdir = tempfile.mkdtemp(dir=self.tmp)
        with open(os.path.join(self.pdir, "token"), "w") as f:
            f.write(TOKEN)

    def kubeconfig(self, api="v1", mode=None):
        if mode:
            with open(os.path.join(self.pdir, "mode"), "w") as f:
                f.write(mode)
        path = os.path.join(self.pdir, "kubeconfig")
        with open(path, "w") as f:
            f.write("apiVersion: v1\nkind: Config\ncurrent-context: t\n"
                    "contexts:\n- name: t\n  context: {cluster: c, user: u}\n"
                    "clusters:\n- name: c\n  cluster:\n    server: http://127.0.0.1:%d\n"
                    "users:\n- name: u\n  user:\n    exec:\n"
                    "      apiVersion: client.authentication.k8s.io/%s\n"
                    "      command: %s\n      args: [client.authentication.k8s.io/%s]\n"
                    "      interactiveMode: IfAvailable\n"
                    "      env: [{name: PLUGIN_DIR, value: %s}]\n"
                    % (self.port, api, PLUGIN, api, self.pdir))
        return path

    def runs(self):
        try:
            with open(os.path.join(self.pdir, "runs")) as f:
                return len(f.readlines())
        except FileNotFoundError:
            return 0

    def doctor(self, *args):
        return subprocess.run([BINARY, "doctor", "-o", "json"] + list(args),
                              capture_output=True, text=True, timeout=120,
                              stdin=subprocess.DEVNULL)

    def test_doctor_exec_plugin_both_flag_names(self):
        for flag, api in (("--kubeconfig", "v1"), ("--kube-config-path", "v1beta1")):
            kc = self.kubeconfig(api)
            before = self.runs()
            p = self.doctor(flag, kc)
            self.assertIn(p.returncode, (0, 1), p.stderr)
            self.assertIn('"slices"', p.stdout)
            self.assertEqual(self.runs(), before + 1)
            # Loopback http://: allowed, with a warning that names the risk.
            self.assertIn("warning:", p.stderr)
            self.assertIn("plain http://", p.stderr)
            self.assertNotIn(TOKEN, p.stderr + p.stdout)

    def test_doctor_from_kubeconfig_env(self):
        kc = self.kubeconfig()
        env = dict(os.environ, KUBECONFIG="/nonexistent/one:" + kc, HOME=self.pdir)
        p = subprocess.run([BINARY, "doctor", "-o", "json"], capture_output=True, text=True,
                           timeout=120, env=env, stdin=subprocess.DEVNULL)
        self.assertIn(p.returncode, (0, 1), p.stderr)
        self.assertEqual(self.runs(), 1)

    def test_doctor_failing_plugin(self):
        p = self.doctor("--kubeconfig", self.kubeconfig(mode="fail"))
        self.assertEqual(p.returncode, 2)
        self.assertIn("exited with status 3", p.stderr)
        self.assertIn("login required", p.stderr)
        self.assertNotIn("SECRET-STDOUT", p.stderr + p.stdout)

    def test_fifo_kubeconfig_refused_at_once(self):
        fifo = os.path.join(self.pdir, "fifo")
        os.mkfifo(fifo)
        key, crt = os.path.join(self.pdir, "tls.key"), os.path.join(self.pdir, "tls.crt")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                        "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", key, "-out", crt,
                        "-subj", "/CN=localhost", "-days", "1"], check=True,
                       capture_output=True)
        serve = ["--bind-address", "127.0.0.1:0", "--tls-cert-file", crt,
                 "--tls-private-key-file", key]
        for cmd in (["doctor", "--kubeconfig", fifo],
                    ["serve", "--kube-config-path", fifo] + serve,
                    ["serve", "--kubeconfig", fifo] + serve):
            # A block on the FIFO ends in TimeoutExpired, far above the
            # expected time; no elapsed-time assertion.
            p = subprocess.run([BINARY] + cmd, capture_output=True, text=True, timeout=60,
                               stdin=subprocess.DEVNULL)
            self.assertNotEqual(p.returncode, 0, cmd)
            self.assertIn("not a regular file", p.stderr + p.stdout, cmd)


if __name__ == "__main__":
    unittest.main()
