"""The kustomize manifests (deploy/kustomize/{base,default}) and certs/:
every file parses, every kustomization renders offline with kubectl, and the
rendered objects form a consistent webhook install (deploylib.check_install).
"""
import copy
import glob
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import deploylib as dl  # noqa: E402

BASE = os.path.join(dl.ROOT, "deploy", "kustomize", "base")
DEFAULT = os.path.join(dl.ROOT, "deploy", "kustomize", "default")


def key(o):
    return (o["kind"], o["metadata"]["name"], o["metadata"].get("namespace"))


class Manifests(unittest.TestCase):
    def test_every_manifest_parses(self):
        files = [f for f in glob.glob(os.path.join(dl.ROOT, "deploy", "kustomize", "**", "*.yaml"), recursive=True)
                 + glob.glob(os.path.join(dl.ROOT, "certs", "*.yaml"))]
        self.assertGreaterEqual(len(files), 10)
        for f in files:
            with self.subTest(file=f):
                docs = dl.load_file(f)
                self.assertTrue(docs, "%s has no document" % f)

    def test_kustomizations_structurally(self):
        # Independent of kubectl: every listed file exists and parses, and the
        # union of resources is a complete install (patches merged by hand).
        for kdir, cm in ((BASE, False), (DEFAULT, True)):
            with self.subTest(kustomization=kdir):
                files = dl.kustomization_files(kdir)
                objs, patches = [], []
                for path, docs, is_patch in files:
                    (patches if is_patch else objs).extend(docs)
                for p in patches:
                    target = dl.find(objs, p["kind"], p["metadata"]["name"])
                    self.assertEqual(len(target), 1, "patch %s targets nothing" % (key(p),))
                    target[0]["metadata"].setdefault("annotations", {}).update(p["metadata"]["annotations"])
                self.assertEqual(dl.check_install(objs, cert_manager=cm), [])

    def test_kustomize_renders_offline(self):
        self.assertIsNotNone(dl.kubectl(), "kubectl not found: run scripts/setup.sh (Debian's kubernetes-client)")
        rendered = {}
        for kdir, cm in ((BASE, False), (DEFAULT, True)):
            with self.subTest(kustomization=kdir):
                objs = dl.kustomize_render(kdir)
                rendered[kdir] = objs
                self.assertEqual(dl.check_install(objs, cert_manager=cm), [])
                self.assertEqual(dl.schema_errors(objs), [])
                keys = [key(o) for o in objs]
                self.assertEqual(len(keys), len(set(keys)), "duplicate objects")
        extra = {key(o) for o in rendered[DEFAULT]} - {key(o) for o in rendered[BASE]}
        self.assertEqual(extra, {("Issuer", "selfsigned-issuer", "ray-system"),
                                 ("Certificate", dl.SECRET, "ray-system")})

    def test_checker_catches_breakage(self):
        objs = dl.kustomize_render(DEFAULT) if dl.kubectl() else None
        self.assertIsNotNone(objs, "kubectl not found: run scripts/setup.sh")
        for desc, broken in dl.broken_copies(objs):
            with self.subTest(broken=desc):
                self.assertNotEqual(dl.check_install(broken, cert_manager=True), [], desc)
        # A misspelt field is caught by the schema check.
        broken = dl.find(copy.deepcopy(objs), "Deployment")[0]
        broken["spec"]["template"]["spec"]["containers"][0]["securityContext"]["readOnlyRootFileSystem"] = True
        self.assertNotEqual(dl.schema_errors([broken]), [])
        # Without cert-manager the annotation is a dangling reference.
        self.assertNotEqual(dl.check_install(objs, cert_manager=False), [])

    def test_default_overlay_only_adds_certificates(self):
        # The base must not depend on cert-manager (it is the install path for
        # clusters without it), and must carry no stale caBundle.
        for path, docs, _ in dl.kustomization_files(BASE):
            for o in docs:
                self.assertNotIn("cert-manager.io", o["apiVersion"], path)
                self.assertNotIn("annotations", o["metadata"], "%s: %s" % (path, key(o)))
                for w in o.get("webhooks", []):
                    self.assertNotIn("caBundle", w.get("clientConfig", {}), path)


if __name__ == "__main__":
    unittest.main(verbosity=2)
