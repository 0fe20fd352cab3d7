"""RBAC is exactly what the code calls. Every Kubernetes API call in
src/shell (wh_kube_request, wh_kube_get, wh_kube_stream) is read from the
source, with its verb (the HTTP method; a GET of a collection is list, of
one object get; a stream is watch) and the API path it is made on (the
path literal it is built from, or the file's path literals when it is built
from a stored base); the rules bound to the webhook's ServiceAccount in the
chart (real Helm) and in the kustomize base must grant exactly those,
nothing missing and nothing more. A call added later (say, creating Events)
demands its rule here without any edit to this test.

`tpu-webhook doctor` (src/shell/cli/cmd_doctor.c) runs with someone else's
credentials and has its own ClusterRole (deploy/kustomize/components/
doctor-rbac): its LISTs must equal that role's rules, which stay read-only.
"""
import os
import re
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import deploylib as dl  # noqa: E402
import realhelm as rh  # noqa: E402

SRC = os.path.join(dl.ROOT, "src", "shell")
DOCTOR = os.path.join(SRC, "cli", "cmd_doctor.c")
CLIENT = os.path.join(SRC, "kube", "kube.c")  # defines the calls
CALL = re.compile(r"\bwh_kube_(request|get|stream)\s*\(")
API_LITERAL = re.compile(r'"(/apis?/[^"]*)"')
METHOD_VERBS = {"POST": "create", "DELETE": "delete", "PUT": "update", "PATCH": "patch"}


def parse_api_path(lit):
    """(group, resource, names an object) of an API path (format) literal."""
    m = re.match(r"/api/v1/(?:namespaces/%s/)?([a-z]+)(/%s)?", lit) or \
        re.match(r"/apis/([^/]+)/[^/]+/(?:namespaces/%s/)?([a-z]+)(/%s)?", lit)
    if not m:
        raise AssertionError("cannot read the API path %r" % lit)
    if lit.startswith("/api/v1/"):
        return "", m.group(1), bool(m.group(2))
    return m.group(1), m.group(2), bool(m.group(3))


def args_of(text, start):
    """The top-level arguments of the call whose '(' is at text[start]."""
    depth, args, cur, i = 0, [], "", start
    while i < len(text):
        ch = text[i]
        if ch == '"':
            j = i + 1
            while text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            cur += text[i:j + 1]
            i = j + 1
            continue
        if ch == "(":
            depth += 1
            if depth == 1:
                i += 1
                continue
        elif ch == ")":
            depth -= 1
            if depth == 0:
                args.append(cur.strip())
                return args
        elif ch == "," and depth == 1:
            args.append(cur.strip())
            cur = ""
            i += 1
            continue
        cur += ch
        i += 1
    raise AssertionError("unterminated call")


def path_format(func_text, expr):
    """The format string the path expression was last built with in this
    function (snprintf(var, ...) or wh_buf_addf(&var, ...)), or None."""
    var = re.sub(r"^wh_buf_ptr\(&(\w+)\)$", r"\1", expr)
    if not re.match(r"^\w+$", var):
        return None
    builds = list(re.finditer(r"(?:snprintf\(\s*%s\s*,[^\"]*|wh_buf_addf\(\s*&%s\s*,\s*)((?:\"(?:[^\"\\\\]|\\\\.)*\"\s*)+)"
                              % (var, var), func_text))
    if not builds:
        return None
    return "".join(re.findall(r'"((?:[^"\\]|\\.)*)"', builds[-1].group(1)))


def code_calls():
    """{(group, resource, verb): [where]} over src/shell but doctor."""
    out = {}
    for d, _, files in os.walk(SRC):
        for fn in sorted(files):
            path = os.path.join(d, fn)
            if not fn.endswith(".c") or path in (DOCTOR, CLIENT):
                continue
            with open(path, encoding="utf-8") as f:
                text = f.read()
            literals = [parse_api_path(lit) for lit in API_LITERAL.findall(text)]
            for m in CALL.finditer(text):
                where = "%s:%d" % (os.path.relpath(path, dl.ROOT), text.count("\n", 0, m.start()) + 1)
                args = args_of(text, m.end() - 1)
                kind = m.group(1)
                if kind == "request":
                    if not re.match(r'^"[A-Z]+"$', args[1]):
                        raise AssertionError("%s: the method is not a literal" % where)
                    method, expr = args[1].strip('"'), args[2]
                else:
                    method, expr = ("WATCH" if kind == "stream" else "GET"), args[1]
                func = text[text.rfind("\n{", 0, m.start()):m.start()]
                fmt = path_format(func, expr)
                targets = literals
                if fmt and API_LITERAL.search('"%s"' % fmt):
                    targets = [parse_api_path(fmt)]
                    item = targets[0][2]
                else:
                    # Built on a stored base (c->path, w->base): "%s/%s"
                    # adds an object's name to the collection.
                    item = bool(fmt and re.match(r"^%s/%s", fmt))
                if not targets:
                    raise AssertionError("%s: a Kubernetes API call on no API path this file names" % where)
                if method == "GET":
                    verb = "get" if item else "list"
                elif method == "WATCH":
                    verb = "watch"
                else:
                    verb = METHOD_VERBS[method]
                for group, resource, _ in targets:
                    out.setdefault((group, resource, verb), []).append(where)
    return out


def doctor_calls():
    with open(DOCTOR, encoding="utf-8") as f:
        text = f.read()
    self_check = re.search(r'"/api/v1/%s', text)
    if not self_check:
        raise AssertionError("cmd_doctor.c no longer lists with /api/v1/<resource>: update this test")
    # doctor lists the core resources of its table (cmd_doctor.c's
    # resources[], one paged LIST each through wh_kube_list).
    table = re.search(r'\bresources\[\]\s*=\s*\{([^}]*)\}', text)
    if not table:
        raise AssertionError("cmd_doctor.c has no resources[] table of the lists it makes: update this test")
    names = re.findall(r'"([a-z]+)"', table.group(1))
    if not names:
        raise AssertionError("cmd_doctor.c's resources[] names no resource: update this test")
    return {("", r, "list") for r in names}


def granted(rules):
    out = set()
    for r in rules:
        for g in r.get("apiGroups", []):
            for res in r.get("resources", []):
                for v in r.get("verbs", []):
                    out.add((g, res, v))
    return out


def webhook_rules(objs):
    """Rules of every Role and ClusterRole bound to the webhook's
    ServiceAccount, as (group, resource, verb)."""
    roles = {(o["kind"], o["metadata"]["name"]): o for o in objs if o["kind"] in ("Role", "ClusterRole")}
    out = set()
    for b in objs:
        if b["kind"] not in ("RoleBinding", "ClusterRoleBinding"):
            continue
        if not any(s.get("kind") == "ServiceAccount" and s.get("name") == dl.NAME for s in b.get("subjects", [])):
            continue
        ref = b["roleRef"]
        role = roles.get((ref["kind"], ref["name"]))
        if role is None:
            raise AssertionError("%s %s binds a missing %s %s" % (b["kind"], b["metadata"]["name"],
                                                                  ref["kind"], ref["name"]))
        out |= granted(role.get("rules", []))
    return out


def compare(code, rules):
    errs = ["the code calls %s %s (%s) at %s, which no rule grants" %
            (v, r, g or "core", ", ".join(code[(g, r, v)])) for g, r, v in sorted(set(code) - rules)]
    errs += ["a rule grants %s %s (%s), which the code never calls" % (v, r, g or "core")
             for g, r, v in sorted(rules - set(code))]
    return errs


class RBAC(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.code = code_calls()


class RBACExtractor(RBAC):
    def test_extractor_reads_the_known_calls(self):
        # What the extractor must at least find today (a check of the
        # extractor itself; the comparisons below use whatever it finds).
        for want in (("", "pods", "list"), ("", "pods", "watch"), ("", "nodes", "list"), ("", "nodes", "watch"),
                     ("ray.io", "rayclusters", "get"), ("coordination.k8s.io", "leases", "create"),
                     ("coordination.k8s.io", "leases", "get"), ("coordination.k8s.io", "leases", "list"),
                     ("coordination.k8s.io", "leases", "delete"), ("", "events", "create"),
                     ("leaderworkerset.x-k8s.io", "leaderworkersets", "get")):
            self.assertIn(want, self.code)
        # The client itself (skipped: it defines the calls) makes none of
        # its own on an API path.
        with open(CLIENT, encoding="utf-8") as f:
            self.assertIsNone(API_LITERAL.search(f.read()))


class RBACGrants(RBAC):
    def test_chart_grants_exactly_the_calls(self):
        for label, helm in rh.helms():
            for name, vargs in (("defaults", []), ("workloads", ["--set", "tpuWebhook.workloads.enabled=true"])):
                with self.subTest(helm=label, values=name):
                    rc, objs, err = rh.template(helm, vargs)
                    self.assertEqual(rc, 0, err)
                    self.assertEqual(compare(self.code, webhook_rules(objs)), [])

    def test_kustomize_grants_exactly_the_calls(self):
        self.assertIsNotNone(dl.kubectl(), "kubectl not found: run scripts/setup.sh")
        for k in ("base", "default", "workloads"):
            with self.subTest(kustomization=k):
                objs = dl.kustomize_render(os.path.join(dl.ROOT, "deploy", "kustomize", k))
                self.assertEqual(compare(self.code, webhook_rules(objs)), [])

    def test_doctor_role_is_its_lists(self):
        objs = dl.kustomize_render(os.path.join(dl.ROOT, "deploy", "kustomize", "components", "doctor-rbac"))
        role, = [o for o in objs if o["kind"] == "ClusterRole"]
        rules = granted(role["rules"])
        self.assertEqual(sorted(rules), sorted(doctor_calls()))
        self.assertLessEqual({v for _, _, v in rules}, {"get", "list", "watch"})


class RBACNewCall(RBAC):
    def test_extractor_sees_a_new_call(self):
        # A POST of Events in a new file is demanded as "create events".
        import tempfile
        global SRC
        with tempfile.TemporaryDirectory() as d:
            os.makedirs(os.path.join(d, "kube"))
            with open(os.path.join(d, "kube", "events.c"), "w") as f:
                f.write('static void emit(struct wh_kube *k, const char *ns)\n{\n    char path[300];\n'
                        '    snprintf(path, sizeof(path), "/api/v1/namespaces/%s/events", ns);\n'
                        '    (void)wh_kube_request(k, "POST", path, b, n, 100, &r, &a, e);\n}\n')
            old, SRC = SRC, d
            try:
                calls = code_calls()
            finally:
                SRC = old
        self.assertEqual(sorted(calls), [("", "events", "create")])
        self.assertEqual(compare(calls, set()), ["the code calls create events (core) at %s, which no rule "
                                                 "grants" % calls[("", "events", "create")][0]])


if __name__ == "__main__":
    unittest.main(verbosity=2)
