"""Renewals without a gap (issue 23): the cert-manager objects of the chart
and of kustomize (deploy/kustomize/default, certs/) form a CA chain, and the
caBundle they inject (the CA) verifies a serving certificate and its
renewal, and still does after the CA itself is renewed with the same key.

The chain is played with the openssl CLI as cert-manager would issue it from
the rendered specs (key algorithm and size, isCA, dnsNames, issuers): CA
from the self-signed Issuer, leaf 1 and leaf 2 (a renewal: rotationPolicy
Always gives a new key) from the CA Issuer, CA renewed (rotationPolicy Never
keeps the key). That the server picks up renewed files without a restart, read through
the kubelet's ..data symlink swap while clients that trust only the CA
connect, is server.real.cert_renew_kubelet (tests/server/server_it.c)."""
import os
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import deploylib as dl  # noqa: E402
import test_helm as th  # noqa: E402


def openssl(*args, cwd):
    p = subprocess.run(["openssl"] + list(args), cwd=cwd, capture_output=True, text=True, timeout=60)
    if p.returncode:
        raise AssertionError("openssl %s: %s" % (" ".join(args), p.stderr))
    return p.stdout


def key(spec, name, d):
    pk = spec.get("privateKey") or {}
    assert pk.get("algorithm") == "ECDSA" and pk.get("size") == 256, pk
    openssl("ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", name, cwd=d)


class Chain(unittest.TestCase):
    def renders(self):
        out = [("kustomize", dl.kustomize_render(os.path.join(dl.ROOT, "deploy", "kustomize", "default")))]
        objs, _ = th.render()
        out.append(("helm", objs))
        return out


class ChainStructure(Chain):
    def test_structure(self):
        for what, objs in self.renders():
            with self.subTest(render=what):
                self.assertEqual(dl.ca_chain_errors(objs), [])
                for cfg in objs:
                    if cfg["kind"].endswith("WebhookConfiguration"):
                        self.assertEqual(cfg["metadata"]["annotations"]["cert-manager.io/inject-ca-from"],
                                         "ray-system/" + dl.CA_CERT)


class ChainRenderings(Chain):
    def test_every_rendering(self):
        # The issue's quality bar over every shipped rendering, kustomize and
        # chart, with and without cert-manager and the workload webhooks: the
        # caBundle is injected from the CA Certificate (never the serving
        # leaf, never baked in), and every webhook that can claim a worker
        # id declares NoneOnDryRun (dl.side_effect_errors: None elsewhere).
        k = os.path.join(dl.ROOT, "deploy", "kustomize")
        renders = [("kustomize " + b, dl.kustomize_render(os.path.join(k, b)), b != "base")
                   for b in ("base", "default", "workloads")]
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "kustomization.yaml"), "w") as f:
                f.write(th.KUSTOMIZE_OVERLAY % {"kustomize": os.path.relpath(k, d), "base": "workloads"})
            renders.append(("kustomize workloads + match-conditions", dl.kustomize_render(d), True))
        for cm in (True, False):
            for wl in (False, True):
                objs, _ = th.render(th.tv(certManager={"enabled": cm}, workloads={"enabled": wl}))
                renders.append(("helm certManager=%s workloads=%s" % (cm, wl), objs, cm))
        for what, objs, cm in renders:
            with self.subTest(render=what):
                cfgs = [o for o in objs if o["kind"].endswith("WebhookConfiguration")]
                self.assertGreaterEqual(len(cfgs), 2)
                self.assertEqual(dl.side_effect_errors(objs), [])
                claiming = [w for c in cfgs for w in c["webhooks"]
                            if w["clientConfig"]["service"]["path"] in dl.CLAIMING_PATHS]
                self.assertGreaterEqual(len(claiming), 1)
                self.assertEqual({w["sideEffects"] for w in claiming}, {"NoneOnDryRun"})
                for c in cfgs:
                    for w in c["webhooks"]:
                        self.assertNotIn("caBundle", w["clientConfig"])
                    inject = (c["metadata"].get("annotations") or {}).get("cert-manager.io/inject-ca-from")
                    if cm:
                        self.assertEqual(inject, "ray-system/" + dl.CA_CERT, c["metadata"]["name"])
                    else:
                        self.assertIsNone(inject, c["metadata"]["name"])
                if cm:
                    self.assertEqual(dl.ca_chain_errors(objs), [])
                    ca = dl.find(objs, "Certificate", dl.CA_CERT)[0]["spec"]
                    self.assertIs(ca["isCA"], True)
                    self.assertNotEqual(ca["secretName"], dl.SECRET)  # not the leaf's secret
                else:
                    self.assertEqual(dl.find(objs, "Certificate"), [])


class ChainRenewal(Chain):
    def test_ca_bundle_verifies_renewed_leaves(self):
        for what, objs in self.renders():
            with self.subTest(render=what), tempfile.TemporaryDirectory() as d:
                ca = dl.find(objs, "Certificate", dl.CA_CERT)[0]["spec"]
                leaf = dl.find(objs, "Certificate", dl.SECRET)[0]["spec"]
                key(ca, "ca.key", d)
                with open(os.path.join(d, "ca.cnf"), "w") as f:
                    f.write("[v]\nbasicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign,cRLSign\n")
                days = str(int(ca["duration"].rstrip("h")) // 24)

                def issue_ca(out):
                    openssl("req", "-x509", "-new", "-key", "ca.key", "-subj", "/CN=" + ca["commonName"],
                            "-days", days, "-extensions", "v", "-config", "ca.cnf", "-out", out, cwd=d)
                issue_ca("ca1.crt")
                with open(os.path.join(d, "leaf.cnf"), "w") as f:
                    f.write("[v]\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n"
                            "subjectAltName=%s\n" % ",".join("DNS:" + n for n in leaf["dnsNames"]))
                for n in (1, 2):  # the first leaf and its renewal, each with a new key
                    key(leaf, "leaf%d.key" % n, d)
                    openssl("req", "-new", "-key", "leaf%d.key" % n, "-subj", "/", "-out", "leaf%d.csr" % n,
                            cwd=d)
                    openssl("x509", "-req", "-in", "leaf%d.csr" % n, "-CA", "ca1.crt", "-CAkey", "ca.key",
                            "-CAcreateserial", "-days", str(int(leaf["duration"].rstrip("h")) // 24),
                            "-extfile", "leaf.cnf", "-extensions", "v", "-out", "leaf%d.crt" % n, cwd=d)
                self.assertNotEqual(open(os.path.join(d, "leaf1.crt")).read(),
                                    open(os.path.join(d, "leaf2.crt")).read())
                # The caBundle (the CA, unchanged by the leaf's renewal) verifies both.
                host = leaf["dnsNames"][0]
                for n in (1, 2):
                    out = openssl("verify", "-CAfile", "ca1.crt", "-purpose", "sslserver",
                                  "-verify_hostname", host, "leaf%d.crt" % n, cwd=d)
                    self.assertIn("OK", out)
                # The CA renewed with the same key (rotationPolicy: Never): the
                # new caBundle still verifies the leaves the old CA signed.
                issue_ca("ca2.crt")
                for n in (1, 2):
                    self.assertIn("OK", openssl("verify", "-CAfile", "ca2.crt", "leaf%d.crt" % n, cwd=d))
                # A leaf signed by itself (the old scheme) is not trusted by it.
                openssl("req", "-x509", "-new", "-key", "leaf1.key", "-subj", "/CN=self", "-days", "1",
                        "-out", "self.crt", cwd=d)
                p = subprocess.run(["openssl", "verify", "-CAfile", "ca1.crt", "self.crt"], cwd=d,
                                   capture_output=True, text=True)
                self.assertNotEqual(p.returncode, 0)


if __name__ == "__main__":
    unittest.main(verbosity=2)
