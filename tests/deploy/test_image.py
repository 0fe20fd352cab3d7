"""The Dockerfile, checked against the real build since no Docker engine runs
here: the build stage installs what the CMake build needs and builds exactly
as scripts/test.sh does; the runtime stage installs packages that provide
every shared library the built binary loads (ldd, mapped to packages with
dpkg -S, through the Depends closure of the listed packages), and nothing
unneeded.

Environment: WH_BINARY = path of the built tpu-webhook (set by CMake).
"""
import os
import re
import shlex
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import deploylib as dl  # noqa: E402

DOCKERFILE = os.path.join(dl.ROOT, "Dockerfile")


def instructions(text):
    """Dockerfile -> [(stage index, INSTRUCTION, argument text)]."""
    out, stage, buf = [], -1, ""
    for line in text.splitlines():
        s = line.strip()
        if not buf and (not s or s.startswith("#")):
            continue
        if s.startswith("#"):
            continue
        if s.endswith("\\"):
            buf += s[:-1] + " "
            continue
        buf += s
        word, _, rest = buf.partition(" ")
        word = word.upper()
        if word == "FROM":
            stage += 1
        out.append((stage, word, rest.strip()))
        buf = ""
    return out


def shell_commands(run_arg):
    """A RUN line's shell text -> list of argv lists (split at && and ;)."""
    cmds = []
    for part in re.split(r"&&|;", run_arg):
        argv = shlex.split(part)
        if argv:
            cmds.append(argv)
    return cmds


def apt_packages(insts, stage):
    pkgs = []
    for st, word, arg in insts:
        if st != stage or word != "RUN":
            continue
        for argv in shell_commands(arg):
            if argv[:2] == ["apt-get", "install"]:
                pkgs += [a for a in argv[2:] if not a.startswith("-")]
    return pkgs


def cmake_calls(text_cmds):
    """argv lists that run cmake, from shell command lists."""
    return [a for a in text_cmds if a and a[0] == "cmake"]


def script_commands(path):
    """Shell commands of a bash script (one per line, continuation joined),
    with output redirections dropped."""
    cmds, buf = [], ""
    with open(path, encoding="utf-8") as f:
        for line in f:
            s = line.strip()
            if s.startswith("#") or not s:
                continue
            if s.endswith("\\"):
                buf += s[:-1] + " "
                continue
            buf += s
            buf = re.sub(r"\s*[12]?>\s*/dev/null", "", buf)
            try:
                cmds += [shlex.split(p) for p in re.split(r"&&|;", buf) if p.strip()]
            except ValueError:
                pass
            buf = ""
    return cmds


def path_spellings(path):
    """The path and its merged-/usr spellings (dpkg records either)."""
    cands = []
    for p in (path, os.path.realpath(path)):
        cands.append(p)
        if p.startswith("/usr/lib/"):
            cands.append(p[4:])
        elif p.startswith("/lib/") or p.startswith("/lib64/"):
            cands.append("/usr" + p)
    return cands


def dpkg_owners(paths):
    """{path: owning package} for every path; fails naming an unowned one.
    One dpkg -S call for all spellings (it is slow per call)."""
    spell = {p: path_spellings(p) for p in paths}
    allc = sorted({c for cs in spell.values() for c in cs})
    r = subprocess.run(["dpkg", "-S"] + allc, capture_output=True, text=True)
    found = {}
    for line in r.stdout.splitlines():
        pkgs, _, f = line.partition(": ")
        found[f.strip()] = pkgs.split(",")[0].split(":")[0].strip()
    out = {}
    for p, cs in spell.items():
        owner = next((found[c] for c in cs if c in found), None)
        if owner is None:
            raise AssertionError("no Debian package owns %s (tried %s)" % (p, cs))
        out[p] = owner
    return out


def dpkg_owner(path):
    return dpkg_owners([path])[path]


def installed_db():
    """Installed packages -> (depends list of alternatives, provides set)."""
    fmt = "${Package}\t${Status}\t${Pre-Depends}\t${Depends}\t${Provides}\n"
    out = subprocess.run(["dpkg-query", "-W", "-f", fmt], capture_output=True, text=True, check=True).stdout
    db, provided_by = {}, {}

    def names(field):
        alts = []
        for dep in filter(None, (d.strip() for d in field.split(","))):
            alts.append([re.sub(r"\s*\(.*?\)|:\w+", "", a).strip() for a in dep.split("|")])
        return alts

    for line in out.splitlines():
        pkg, status, pre, dep, prov = (line.split("\t") + [""] * 5)[:5]
        if not status.endswith("installed"):
            continue
        db[pkg] = names(pre) + names(dep)
        for alt in names(prov):
            provided_by.setdefault(alt[0], set()).add(pkg)
    return db, provided_by


def depends_closure(pkgs):
    db, provided_by = installed_db()
    seen, todo = set(), list(pkgs)
    while todo:
        p = todo.pop()
        if p in seen:
            continue
        if p not in db:
            raise AssertionError("package %s is not installed here, so its dependencies cannot be "
                                 "checked: run scripts/setup.sh" % p)
        seen.add(p)
        for alts in db[p]:
            for a in alts:
                real = [a] if a in db else sorted(provided_by.get(a, ()))
                if real:
                    todo.append(real[0])
                    break
    return seen


def ldd_libraries(binary):
    out = subprocess.run(["ldd", binary], capture_output=True, text=True, check=True).stdout
    libs = {}
    for line in out.splitlines():
        s = line.strip()
        if "not found" in s:
            raise AssertionError("ldd: %s" % s)
        m = re.match(r"(\S+) => (\S+) \(", s) or re.match(r"(/\S+) \(", s)
        if m and m.group(m.lastindex).startswith("/"):
            libs[m.group(1)] = m.group(m.lastindex)
    return libs


class Image(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        with open(DOCKERFILE, encoding="utf-8") as f:
            cls.insts = instructions(f.read())
        cls.stages = [arg for _, w, arg in cls.insts if w == "FROM"]
        cls.final = len(cls.stages) - 1


class ImageStages(Image):
    def test_stages(self):
        self.assertEqual(len(self.stages), 2, self.stages)
        self.assertEqual(self.stages[0].split()[0], "debian:12")
        self.assertEqual(self.stages[1], "debian:12-slim")

    def test_runtime_stage_shape(self):
        final = [(w, a) for st, w, a in self.insts if st == self.final]
        words = [w for w, _ in final]
        self.assertNotIn("HEALTHCHECK", [w for _, w, _ in self.insts])
        self.assertIn(("EXPOSE", "443"), final)
        entry = [a for w, a in final if w == "ENTRYPOINT"]
        self.assertEqual(entry, ['["/usr/local/bin/tpu-webhook", "serve"]'])
        self.assertNotIn("CMD", words, "args come from the Deployment; a CMD would be replaced anyway")
        user = [a for w, a in final if w == "USER"]
        self.assertEqual(len(user), 1)
        uid = user[0].split(":")[0]
        self.assertTrue(uid.isdigit() and int(uid) != 0, "USER must be a numeric non-root uid: %s" % user)
        # The manifests run as the same uid.
        dep = dl.find(dl.load_file(os.path.join(dl.ROOT, "deploy", "kustomize", "base", "deployment.yaml")),
                      "Deployment")[0]
        self.assertEqual(dep["spec"]["template"]["spec"]["securityContext"]["runAsUser"], int(uid))
        copies = [a for w, a in final if w == "COPY"]
        self.assertEqual(len(copies), 1)
        self.assertTrue(copies[0].startswith("--from=build ") and copies[0].endswith(" /usr/local/bin/tpu-webhook"))
        self.assertTrue(all(not p.endswith("-dev") for p in apt_packages(self.insts, self.final)))

    def test_build_context_excludes_keys_and_build_trees(self):
        with open(os.path.join(dl.ROOT, ".dockerignore")) as f:
            ignored = {line.strip() for line in f if line.strip() and not line.startswith("#")}
        self.assertLessEqual({".git", "build", "build-*", "certs/dev", "**/*.key"}, ignored)


class ImageBuildStage(Image):
    def test_build_stage_matches_scripts(self):
        build_pkgs = set(apt_packages(self.insts, 0))
        # Every library CMake looks up with pkg-config comes from a package the
        # build stage installs.
        with open(os.path.join(dl.ROOT, "CMakeLists.txt"), encoding="utf-8") as f:
            mods = re.findall(r"pkg_check_modules\(\s*\w+\s+REQUIRED\s+IMPORTED_TARGET\s+(\S+?)\s*\)", f.read())
        self.assertGreaterEqual(len(mods), 5, mods)
        for m in mods:
            pc = subprocess.run(["pkg-config", "--path", m], capture_output=True, text=True, check=True).stdout.strip()
            with self.subTest(module=m):
                self.assertIn(dpkg_owner(pc), build_pkgs)
        for tool in ("build-essential", "cmake", "pkg-config"):
            self.assertIn(tool, build_pkgs)
        # ... and nothing the project's setup does not install too.
        # (its build part: what serve-dev.sh installs)
        setup_pkgs = set(subprocess.run(["bash", os.path.join(dl.ROOT, "scripts", "setup.sh"), "build", "--print"],
                                        capture_output=True, text=True, check=True, timeout=30).stdout.split())
        self.assertLessEqual(build_pkgs, setup_pkgs)

        # Same configure line as scripts/test.sh's gcc build (not its sanitizer
        # builds, ASan/UBSan or TSan, nor its WH_PORTABLE build of the SIMD
        # paths' portable twins); tests off only.
        dcmds = []
        for st, w, a in self.insts:
            if st == 0 and w == "RUN":
                dcmds += shell_commands(a)
        dcfg = [c for c in cmake_calls(dcmds) if "-S" in c]
        tcfg = [c for c in cmake_calls(script_commands(os.path.join(dl.ROOT, "scripts", "test.sh")))
                if "-S" in c and "-DCMAKE_C_COMPILER=gcc" in c and not any("SANITIZE" in x or "WH_TSAN" in x or "WH_PORTABLE" in x for x in c)]
        self.assertEqual(len(dcfg), 1, dcfg)
        self.assertEqual(len(tcfg), 1, tcfg)
        self.assertEqual(sorted(set(dcfg[0]) - {"-DBUILD_TESTING=OFF"}), sorted(tcfg[0]))
        dbuild = [c for c in cmake_calls(dcmds) if "--build" in c]
        self.assertEqual(len(dbuild), 1)
        self.assertEqual(dbuild[0][dbuild[0].index("--build") + 1], tcfg[0][tcfg[0].index("-B") + 1])
        self.assertIn("tpu-webhook", dbuild[0])


class ImageRuntime(Image):
    def test_runtime_packages_cover_the_binary(self):
        binary = os.environ.get("WH_BINARY")
        self.assertTrue(binary and os.access(binary, os.X_OK), "WH_BINARY=%r is not a built binary" % binary)
        runtime = apt_packages(self.insts, self.final)
        self.assertTrue(runtime)
        libs = ldd_libraries(binary)
        self.assertIn("libc.so.6", libs)
        closure = depends_closure(runtime)
        owners, by_path = {}, dpkg_owners(list(libs.values()))
        for soname, path in sorted(libs.items()):
            owner = by_path[path]
            owners.setdefault(owner, []).append(soname)
            with self.subTest(library=soname):
                self.assertIn(owner, closure, "%s (%s, package %s) is not installed by the runtime stage's "
                              "packages %s" % (soname, path, owner, runtime))
        # Every listed package is one the binary loads a library from; until
        # `serve` is in the tree the binary does not link the server's
        # libraries yet (the linker drops unused ones), so only then.
        if not dl.server_source_text():
            return
        for p in runtime:
            with self.subTest(package=p):
                self.assertIn(p, owners, "runtime package %s provides none of %s" % (p, sorted(libs)))

    def test_runtime_check_can_fail(self):
        # Dropping any runtime package whose library nothing else pulls in
        # must be caught: libcjson1 is one (nothing in the list depends on it).
        binary = os.environ.get("WH_BINARY")
        self.assertTrue(binary)
        runtime = [p for p in apt_packages(self.insts, self.final) if p != "libcjson1"]
        closure = depends_closure(runtime)
        libs = ldd_libraries(binary)
        self.assertIn("libcjson1", set(dpkg_owners(list(libs.values())).values()))
        self.assertNotIn("libcjson1", closure)


if __name__ == "__main__":
    unittest.main(verbosity=2)
