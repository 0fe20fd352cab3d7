#!/usr/bin/env python3
"""strict-schemas.py: the field sets of `check --strict`, from the OpenAPI schemas.

Two steps, each reproducible, so that the committed outputs cannot drift:

  extract OUTDIR   reads the upstream schemas from the Go module cache (the
                   modules and versions are those tests/cluster/modules/*/go.mod
                   require: one place for the versions) and writes trimmed
                   copies to OUTDIR (tests/fixtures/schemas): structure only
                   (type, properties, items, additionalProperties,
                   x-kubernetes-preserve-unknown-fields, $ref); descriptions,
                   defaults and validations dropped.
  gen SCHEMADIR OUT.c
                   turns the trimmed copies into the C table the binary embeds
                   (src/offline/strict_fields.c; the types are in
                   include/offline/wh/strict.h).
  check            both, into a temporary folder, diffed against the committed
                   files (--offline: only gen, which needs no network).

Rules (docs/cli.md, "check --strict"):
  - an object schema with properties is closed: any other key is unknown,
    unless it also has additionalProperties (the rest are map values) or
    x-kubernetes-preserve-unknown-fields (the rest are open);
  - an object with only additionalProperties is a map; an object with
    neither properties nor additionalProperties is free-form (open), as
    FieldsV1 or a CRD's top-level `metadata: {type: object}`;
  - a CRD kind's top-level metadata is the core ObjectMeta, which the API
    server applies to every object (the CRD schema says only "object");
  - identical sub-schemas share one node (the CRDs inline PodSpec many times).
"""
import hashlib
import json
import os
import subprocess
import sys
import tempfile

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODULES = os.path.join(ROOT, "tests", "cluster", "modules")

# (trimmed file, module folder under tests/cluster/modules, Go module, files in it)
CORE = ("core.json", "k8s", "k8s.io/kubernetes",
        ["api/openapi-spec/v3/api__v1_openapi.json",
         "api/openapi-spec/v3/apis__batch__v1_openapi.json"])
CRDS = [
    ("kuberay.json", "kuberay", "github.com/ray-project/kuberay/ray-operator",
     ["config/crd/bases/ray.io_rayclusters.yaml", "config/crd/bases/ray.io_rayjobs.yaml",
      "config/crd/bases/ray.io_rayservices.yaml"]),
    ("jobset.json", "jobset", "sigs.k8s.io/jobset",
     ["config/components/crd/bases/jobset.x-k8s.io_jobsets.yaml"]),
    ("lws.json", "lws", "sigs.k8s.io/lws",
     ["config/crd/bases/leaderworkerset.x-k8s.io_leaderworkersets.yaml"]),
]
# The core kinds whose fields check judges (the CRDs' kinds are all judged).
CORE_ROOTS = {"v1/Pod": "io.k8s.api.core.v1.Pod", "batch/v1/Job": "io.k8s.api.batch.v1.Job"}
OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"

KEEP = ("type", "properties", "items", "additionalProperties",
        "x-kubernetes-preserve-unknown-fields", "$ref")


def module_dir(folder, module):
    """The module's folder in the Go module cache, downloaded if need be."""
    env = dict(os.environ, PATH="/usr/local/go/bin:" + os.environ.get("PATH", ""),
               GOFLAGS="-mod=mod")
    try:
        p = subprocess.run(["go", "mod", "download", "-json", module],
                           cwd=os.path.join(MODULES, folder), env=env, capture_output=True, text=True)
    except FileNotFoundError:
        sys.exit("strict-schemas: no go on PATH or in /usr/local/go/bin: the upstream schemas are "
                 "read from the Go module cache (Go 1.26, scripts/setup.sh test says how)")
    if p.returncode and not p.stdout.strip():
        sys.exit("strict-schemas: go mod download %s failed (Go 1.26 and the module proxy are "
                 "needed): %s" % (module, p.stderr.strip()))
    info = json.loads(p.stdout)
    if info.get("Error"):
        sys.exit("strict-schemas: %s: %s" % (module, info["Error"]))
    return info["Dir"], info["Version"]


def trim(s):
    """Structure only: what decides which keys an object may hold."""
    if isinstance(s, bool):
        return s
    out = {}
    for k in KEEP:
        if k not in s:
            continue
        v = s[k]
        if k == "properties":
            v = {name: trim(p) for name, p in sorted(v.items())}
        elif k in ("items", "additionalProperties") and isinstance(v, dict):
            v = trim(v)
        out[k] = v
    if "allOf" in s and len(s["allOf"]) == 1 and "$ref" in s["allOf"][0]:
        out["$ref"] = s["allOf"][0]["$ref"]  # the v3 spec's way of annotating a reference
    if out.get("$ref"):
        out["$ref"] = out["$ref"].rsplit("/", 1)[1]
    return out


def extract(outdir):
    os.makedirs(outdir, exist_ok=True)
    name, folder, module, files = CORE
    mdir, version = module_dir(folder, module)
    schemas, kinds = {}, {}
    for f in files:
        doc = json.load(open(os.path.join(mdir, f)))
        schemas.update(doc["components"]["schemas"])
        for ops in doc["paths"].values():
            for op in ops.values():
                gvk = isinstance(op, dict) and op.get("x-kubernetes-group-version-kind")
                if gvk and op.get("x-kubernetes-action") in ("post", "put"):
                    gv = (gvk["group"] + "/" if gvk["group"] else "") + gvk["version"]
                    kinds.setdefault(gv, set()).add(gvk["kind"])
    # Only the kinds of the files' own group-versions (v1 also answers for
    # policy's Eviction, autoscaling's Scale, ...).
    kinds = {gv: sorted(k) for gv, k in sorted(kinds.items()) if gv in ("v1", "batch/v1")}
    kinds["v1"] = sorted(kinds["v1"] + ["List"])  # kubectl's List
    keep, todo = {}, list(CORE_ROOTS.values())
    while todo:
        n = todo.pop()
        if n in keep:
            continue
        keep[n] = trim(schemas[n])
        todo.extend(refs(keep[n]))
    write(outdir, name, {"source": module, "version": version, "files": files,
                         "licence": "Apache-2.0", "kinds": kinds, "roots": CORE_ROOTS,
                         "schemas": dict(sorted(keep.items()))})
    for name, folder, module, files in CRDS:
        mdir, version = module_dir(folder, module)
        crds = []
        for f in files:
            crd = yaml.safe_load(open(os.path.join(mdir, f)))
            spec = crd["spec"]
            crds.append({"group": spec["group"], "kind": spec["names"]["kind"],
                         "versions": {v["name"]: trim(v["schema"]["openAPIV3Schema"])
                                      for v in spec["versions"] if v.get("served")}})
        write(outdir, name, {"source": module, "version": version, "files": files,
                             "licence": "Apache-2.0", "crds": crds})


def refs(s):
    if isinstance(s, dict):
        if "$ref" in s:
            yield s["$ref"]
        for k in ("properties",):
            for p in s.get(k, {}).values():
                yield from refs(p)
        for k in ("items", "additionalProperties"):
            if isinstance(s.get(k), dict):
                yield from refs(s[k])


def write(outdir, name, doc):
    with open(os.path.join(outdir, name), "w") as f:
        # One line per top-level key, the rest compact: the CRDs inline PodSpec
        # many times, and an indented copy would be three times the size.
        f.write("{\n" + ",\n".join("%s: %s" % (json.dumps(k), json.dumps(v, separators=(",", ":")))
                                    for k, v in doc.items()) + "\n}\n")


# ---- gen: the C table ----------------------------------------------------

SCALAR, OPEN, OBJECT, ARRAY, MAP = "WH_SN_SCALAR", "WH_SN_OPEN", "WH_SN_OBJECT", "WH_SN_ARRAY", "WH_SN_MAP"


class Table:
    """Nodes, hash-consed: identical sub-schemas are one node."""

    def __init__(self):
        self.nodes = []  # (kind, fields [(name, node)], child, rest)
        self.index = {}
        self.node(SCALAR, [], -1, -1)  # 0
        self.node(OPEN, [], -1, -1)    # 1

    def node(self, kind, fields, child, rest):
        key = (kind, tuple(fields), child, rest)
        if key not in self.index:
            self.index[key] = len(self.nodes)
            self.nodes.append(key)
        return self.index[key]

    def build(self, s, resolve, depth=0):
        if depth > 64:
            raise SystemExit("strict-schemas: schema nested deeper than 64 (a cycle?)")
        if isinstance(s, bool):
            return 1
        if "$ref" in s:
            return self.build(resolve(s["$ref"]), resolve, depth + 1)
        if s.get("type") == "array":
            return self.node(ARRAY, [], self.build(s.get("items", {}), resolve, depth + 1), -1)
        props, addl = s.get("properties"), s.get("additionalProperties")
        open_rest = s.get("x-kubernetes-preserve-unknown-fields") is True
        if props is None and addl is None:
            if s.get("type") == "object" or open_rest:
                return 1  # free-form
            return 0
        if props is None:
            return self.node(MAP, [], self.build(addl, resolve, depth + 1), -1)
        fields = [(n, self.build(p, resolve, depth + 1)) for n, p in sorted(props.items())]
        rest = 1 if open_rest or addl is True else (
            self.build(addl, resolve, depth + 1) if isinstance(addl, dict) else -1)
        return self.node(OBJECT, fields, -1, rest)


def gen(schemadir, out):
    core = json.load(open(os.path.join(schemadir, "core.json")))
    crd_docs = [json.load(open(os.path.join(schemadir, c[0]))) for c in CRDS]
    t = Table()

    def resolve(name):
        return core["schemas"][name]

    meta = t.build(core["schemas"][OBJECT_META], resolve)
    kinds = []  # (apiVersion, kind, root node or -1)
    for gv, ks in core["kinds"].items():
        for k in ks:
            root = core["roots"].get(gv + "/" + k)
            kinds.append((gv, k, t.build(resolve(root), resolve) if root else -1))
    for doc in crd_docs:
        for crd in doc["crds"]:
            for v, s in crd["versions"].items():
                s = dict(s, properties=dict(s["properties"], metadata={"$ref": OBJECT_META}))
                kinds.append((crd["group"] + "/" + v, crd["kind"], t.build(s, resolve)))
    del meta
    kinds.sort()
    fields, starts = [], []
    for kind, fl, child, rest in t.nodes:
        starts.append(len(fields))
        fields.extend(fl)
    lines = []
    w = lines.append
    w("/* strict_fields.c: GENERATED by scripts/strict-schemas.py from")
    w(" * tests/fixtures/schemas (see SOURCES.md there); do not edit. The field")
    w(" * sets of `check --strict`: wh_strict_nodes[i] is one schema node; an")
    w(" * object's fields are wh_strict_fields[first..first+n), sorted by name")
    w(" * (strcmp), each with the node of its value. */")
    w("/* long: a generated table, one entry a line; its source is the schemas. */")
    w('#include "wh/strict.h"')
    w("")
    w("/* clang-format off */")
    w("const char *const wh_strict_sources =")
    sources = [(core["source"], core["version"])] + [(d["source"], d["version"]) for d in crd_docs]
    w("\n".join('    "%s@%s%s"' % (m, v, ", " if i + 1 < len(sources) else "")
                for i, (m, v) in enumerate(sources)) + ";")
    w("")
    w("const struct wh_strict_field wh_strict_fields[] = {")
    for name, node in fields:
        w('    {"%s", %d},' % (name, node))
    w("};")
    w("")
    w("const struct wh_strict_node wh_strict_nodes[] = {")
    for i, (kind, fl, child, rest) in enumerate(t.nodes):
        w("    {%s, %d, %d, %d, %d}," % (kind, starts[i], len(fl), child, rest))
    w("};")
    w("const size_t wh_strict_n_nodes = sizeof(wh_strict_nodes) / sizeof(wh_strict_nodes[0]);")
    w("")
    w("const struct wh_strict_kind wh_strict_kinds[] = {")
    for gv, k, root in kinds:
        w('    {"%s", "%s", %d},' % (gv, k, root))
    w("};")
    w("const size_t wh_strict_n_kinds = sizeof(wh_strict_kinds) / sizeof(wh_strict_kinds[0]);")
    w("/* clang-format on */")
    text = "\n".join(lines) + "\n"
    if out == "-":
        sys.stdout.write(text)
    else:
        with open(out, "w") as f:
            f.write(text)


def check(offline):
    schemadir = os.path.join(ROOT, "tests", "fixtures", "schemas")
    table = os.path.join(ROOT, "src", "offline", "strict_fields.c")
    bad = []
    with tempfile.TemporaryDirectory() as tmp:
        if not offline:
            extract(tmp)
            for name in [CORE[0]] + [c[0] for c in CRDS]:
                if open(os.path.join(tmp, name)).read() != open(os.path.join(schemadir, name)).read():
                    bad.append("tests/fixtures/schemas/" + name)
        gen(schemadir, os.path.join(tmp, "strict_fields.c"))
        if open(os.path.join(tmp, "strict_fields.c")).read() != open(table).read():
            bad.append("src/offline/strict_fields.c")
    if bad:
        sys.exit("strict-schemas: out of date: %s; run scripts/strict-schemas.py extract "
                 "tests/fixtures/schemas && scripts/strict-schemas.py gen tests/fixtures/schemas "
                 "src/offline/strict_fields.c" % ", ".join(bad))
    print("strict-schemas: %s up to date" % ("table" if offline else "schemas and table"))


def main(argv):
    if len(argv) == 2 and argv[0] == "extract":
        extract(argv[1])
    elif len(argv) == 3 and argv[0] == "gen":
        gen(argv[1], argv[2])
    elif argv[:1] == ["check"] and argv[1:] in ([], ["--offline"]):
        check(argv[1:] == ["--offline"])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
