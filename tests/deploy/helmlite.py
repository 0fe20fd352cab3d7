"""A small renderer for the subset of Helm's Go templates that the chart in
deploy/helm/kuberay-tpu-webhook uses. Helm itself is not packaged for Debian
12, so the tests render the chart with this instead.

What it models, following Go's text/template and Helm/Sprig semantics:
  * text and {{ actions }}, with the {{- and -}} whitespace trim markers and
    {{/* comments */}};
  * if / else if / else / end, with / else / end, range (lists, and maps in
    key order) / else / end, define / include / template;
  * pipelines `a b | f c` (the piped value is the last argument), nested
    (parentheses), fields .A.B and $.A.B, string/number/bool literals;
  * .Files.Get "path" (a chart file; a missing one is an error here, where
    Helm would render an empty string);
  * functions: include, toYaml, nindent, indent, quote, default, int, eq, ne,
    lt, le, gt, ge, and, or, not, omit, printf (%s %d %v), required, trunc,
    trimSuffix.
Anything else (variables, other functions, missing map keys) is an error, so
a template that leaves the subset fails loudly instead of rendering wrongly.
It does not claim to reproduce Helm byte for byte (toYaml quoting may
differ); the tests compare parsed YAML, not text.
"""
import re

import yaml


class TemplateError(Exception):
    pass


ACTION = re.compile(r"\{\{(-\s)?(.*?)(\s-)?\}\}", re.S)
TOKEN = re.compile(r'\s*(?:(?P<str>"(?:[^"\\]|\\.)*")|(?P<num>-?\d+)|(?P<pipe>\|)|(?P<lp>\()|(?P<rp>\))'
                   r'|(?P<field>\$?(?:\.[A-Za-z_]\w*)+|\.|\$)|(?P<ident>[A-Za-z_]\w*)|(?P<bad>\S+))')
KEYWORDS = {"if", "else", "end", "range", "with", "define", "template", "block"}


def lex(src):
    """Template text -> [("text", s) | ("act", s)], trim markers applied."""
    out, pos = [], 0
    for m in ACTION.finditer(src):
        text = src[pos:m.start()]
        if m.group(1):
            text = text.rstrip(" \t\r\n")
        if out and out[-1][0] == "trim":
            out.pop()
            text = text.lstrip(" \t\r\n")
        out.append(("text", text))
        body = m.group(2).strip()
        if not (body.startswith("/*") and body.endswith("*/")):
            out.append(("act", body))
        if m.group(3):
            out.append(("trim", ""))
        pos = m.end()
    text = src[pos:]
    if out and out[-1][0] == "trim":
        out.pop()
        text = text.lstrip(" \t\r\n")
    out.append(("text", text))
    return [t for t in out if t != ("text", "")]


def tokens(expr):
    out = []
    for m in TOKEN.finditer(expr):
        kind = m.lastgroup
        if kind is None:
            continue
        if kind == "bad":
            raise TemplateError("unsupported syntax %r in {{ %s }}" % (m.group(kind), expr))
        out.append((kind, m.group(kind)))
    return out


def parse_pipeline(toks, i=0, closing=None):
    """-> (list of commands, next index); a command is a list of operands."""
    cmds, cur = [], []
    while i < len(toks):
        kind, val = toks[i]
        if kind == "rp":
            if closing != "rp":
                raise TemplateError("unbalanced )")
            break
        if kind == "pipe":
            if not cur:
                raise TemplateError("empty command before |")
            cmds.append(cur)
            cur = []
            i += 1
            continue
        if kind == "lp":
            sub, i = parse_pipeline(toks, i + 1, "rp")
            if i >= len(toks) or toks[i][0] != "rp":
                raise TemplateError("missing )")
            cur.append(("pipe", sub))
            i += 1
            continue
        cur.append((kind, val))
        i += 1
    if not cur:
        raise TemplateError("empty pipeline")
    cmds.append(cur)
    return cmds, i


def compile_expr(expr):
    toks = tokens(expr)
    cmds, i = parse_pipeline(toks)
    if i != len(toks):
        raise TemplateError("trailing tokens in {{ %s }}" % expr)
    return cmds


def parse(items, i=0, stop=("end",)):
    """Token list -> node list; returns (nodes, index, stop word, stop arg)."""
    nodes = []
    while i < len(items):
        kind, body = items[i]
        if kind == "text":
            nodes.append(("text", body))
            i += 1
            continue
        word, _, rest = body.partition(" ")
        rest = rest.strip()
        if word in ("end", "else"):
            if word not in stop:
                raise TemplateError("unexpected {{ %s }}" % body)
            return nodes, i + 1, word, rest
        if word in ("if", "with", "range"):
            if word == "range" and ":=" in rest:
                raise TemplateError("range variables are not in the subset: {{ %s }}" % body)
            node, i = parse_branches(word, rest, items, i + 1)
            nodes.append(node)
        elif word == "define":
            name = compile_expr(rest)[0][0]
            if name[0] != "str":
                raise TemplateError("define needs a string name")
            body_nodes, i, w, _ = parse(items, i + 1, ("end",))
            nodes.append(("define", yaml.safe_load(name[1]), body_nodes))
        elif word == "template":
            nodes.append(("expr", compile_expr("include " + rest)))
            i += 1
        elif word in KEYWORDS or ":=" in body or body.startswith("$") and "=" in body:
            raise TemplateError("not in the subset: {{ %s }}" % body)
        else:
            nodes.append(("expr", compile_expr(body)))
            i += 1
    if stop != ("eof",):
        raise TemplateError("missing {{ end }}")
    return nodes, i, "eof", ""


def parse_branches(word, cond, items, i):
    branches = []  # (condition pipeline or None, nodes)
    cur = compile_expr(cond)
    while True:
        nodes, i, stop, rest = parse(items, i, ("end", "else"))
        branches.append((cur, nodes))
        if stop == "end":
            return (word, branches), i
        if rest.startswith("if ") and word == "if":
            cur = compile_expr(rest[3:])
        elif rest == "":
            nodes, i, stop, _ = parse(items, i, ("end",))
            branches.append((None, nodes))
            return (word, branches), i
        else:
            raise TemplateError("unsupported {{ else %s }}" % rest)


def truthy(v):
    return not (v is None or v is False or v == 0 and not isinstance(v, bool) or v == "" or v == [] or v == {})


def to_yaml(v):
    if v is None:
        return "null"
    return yaml.safe_dump(v, default_flow_style=False, sort_keys=True).rstrip("\n").removesuffix("\n...")


def go_printf(fmt, *args):
    out, ai = [], 0
    for m in re.finditer(r"%[sdv%]|[^%]+|%", fmt):
        t = m.group(0)
        if t == "%%":
            out.append("%")
        elif t in ("%s", "%d", "%v"):
            if ai >= len(args):
                raise TemplateError("printf: too few arguments for %r" % fmt)
            out.append(to_text(args[ai]))
            ai += 1
        elif t == "%":
            raise TemplateError("printf: unsupported verb in %r" % fmt)
        else:
            out.append(t)
    return "".join(out)


def to_text(v):
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (dict, list)):
        raise TemplateError("cannot print a %s directly (use toYaml): %r" % (type(v).__name__, v))
    return str(v)


def to_int(v):
    if isinstance(v, bool) or v is None:
        raise TemplateError("int of %r" % v)
    try:
        return int(v)
    except (TypeError, ValueError):
        raise TemplateError("int of %r" % v) from None


def compare(op):
    def f(a, b):
        if type(a) is not type(b) and not (isinstance(a, (int, float)) and isinstance(b, (int, float))):
            raise TemplateError("incompatible types for comparison: %r %r" % (a, b))
        return op(a, b)
    return f


class Renderer:
    def __init__(self, chart_dir_files, values, release, chart, chart_files=None):
        """chart_dir_files: {template file name: text}; chart_files: {path
        in the chart (files/x.json): text}, for .Files.Get."""
        self.files = chart_dir_files
        self.root = {"Values": values, "Release": release, "Chart": chart,
                     "Files": {"Get": self.files_get}}
        self.chart_files = chart_files or {}
        self.defines = {}
        self.trees = {}
        for name, text in sorted(chart_dir_files.items()):
            nodes, _, _, _ = parse(lex(text), 0, ("eof",))
            self.trees[name] = nodes
            self.collect_defines(nodes)

    def collect_defines(self, nodes):
        for n in nodes:
            if n[0] == "define":
                if n[1] in self.defines:
                    raise TemplateError("template %r defined twice" % n[1])
                self.defines[n[1]] = n[2]

    def funcs(self):
        cmp = compare
        return {
            "include": lambda name, ctx: self.run(self.defines_get(name), ctx),
            "toYaml": to_yaml,
            "nindent": lambda n, s: "\n" + self.indent(n, s),
            "indent": self.indent,
            "quote": lambda v: '"%s"' % to_text(v).replace("\\", "\\\\").replace('"', '\\"'),
            "default": lambda d, v=None: v if truthy(v) else d,
            "int": to_int,
            "eq": lambda a, b: a == b, "ne": lambda a, b: a != b,
            "lt": cmp(lambda a, b: a < b), "le": cmp(lambda a, b: a <= b),
            "gt": cmp(lambda a, b: a > b), "ge": cmp(lambda a, b: a >= b),
            "and": lambda *a: next((x for x in a if not truthy(x)), a[-1]),
            "or": lambda *a: next((x for x in a if truthy(x)), a[-1]),
            "not": lambda v: not truthy(v),
            "omit": lambda d, *keys: {k: v for k, v in (d or {}).items() if k not in keys},
            "printf": go_printf,
            "required": self.required,
            "trunc": lambda n, s: s[:n] if n >= 0 else s[n:],
            "trimSuffix": lambda suf, s: s[:-len(suf)] if suf and s.endswith(suf) else s,
        }

    def files_get(self, path):
        if path not in self.chart_files:
            raise TemplateError(".Files.Get of %r: no such chart file" % path)
        return self.chart_files[path]

    @staticmethod
    def required(msg, v=None):
        if not truthy(v) and v is not False:
            raise TemplateError("required value missing: %s" % msg)
        return v

    @staticmethod
    def indent(n, s):
        pad = " " * to_int(n)
        return pad + to_text(s).replace("\n", "\n" + pad)

    def defines_get(self, name):
        if name not in self.defines:
            raise TemplateError("include of undefined template %r" % name)
        return self.defines[name]

    def field(self, path, dot):
        if path == ".":
            return dot
        if path == "$":
            return self.root
        cur = self.root if path.startswith("$") else dot
        for part in path.lstrip("$").split(".")[1:]:
            if not isinstance(cur, dict):
                raise TemplateError("field %s of a non-map (%r)" % (path, cur))
            if part not in cur:
                raise TemplateError("missing key %r in %s" % (part, path))
            cur = cur[part]
        return cur

    def operand(self, op, dot):
        kind, val = op
        if kind == "str":
            return yaml.safe_load(val)
        if kind == "num":
            return int(val)
        if kind == "field":
            return self.field(val, dot)
        if kind == "pipe":
            return self.pipeline(val, dot)
        if kind == "ident":
            if val in ("true", "false"):
                return val == "true"
            if val == "nil":
                return None
        raise TemplateError("unexpected operand %r" % (val,))

    def pipeline(self, cmds, dot):
        funcs, value, piped = self.funcs(), None, False
        for cmd in cmds:
            head = cmd[0]
            if head[0] == "ident" and head[1] not in ("true", "false", "nil"):
                if head[1] not in funcs:
                    raise TemplateError("function %r is not in the subset" % head[1])
                args = [self.operand(o, dot) for o in cmd[1:]]
                if piped:
                    args.append(value)
                try:
                    value = funcs[head[1]](*args)
                except TypeError as e:
                    raise TemplateError("%s: wrong arguments %r (%s)" % (head[1], args, e)) from None
            else:
                target = self.operand(head, dot)
                if callable(target):  # a method such as .Files.Get
                    args = [self.operand(o, dot) for o in cmd[1:]] + ([value] if piped else [])
                    value = target(*args)
                    piped = True
                    continue
                if len(cmd) != 1 or piped:
                    raise TemplateError("cannot apply arguments to %r" % (head[1],))
                value = target
            piped = True
        return value

    def run(self, nodes, dot):
        out = []
        for n in nodes:
            kind = n[0]
            if kind == "text":
                out.append(n[1])
            elif kind == "expr":
                out.append(to_text(self.pipeline(n[1], dot)))
            elif kind == "define":
                continue
            elif kind == "if":
                for cond, body in n[1]:
                    if cond is None or truthy(self.pipeline(cond, dot)):
                        out.append(self.run(body, dot))
                        break
            elif kind == "with":
                (cond, body), rest = n[1][0], n[1][1:]
                v = self.pipeline(cond, dot)
                if truthy(v):
                    out.append(self.run(body, v))
                elif rest:
                    out.append(self.run(rest[0][1], dot))
            elif kind == "range":
                (cond, body), rest = n[1][0], n[1][1:]
                v = self.pipeline(cond, dot)
                items = [v[k] for k in sorted(v)] if isinstance(v, dict) else (v or [])
                if not isinstance(items, list):
                    raise TemplateError("range over %r" % v)
                for item in items:
                    out.append(self.run(body, item))
                if not items and rest:
                    out.append(self.run(rest[0][1], dot))
        return "".join(out)

    def render(self, name):
        return self.run(self.trees[name], self.root)


def deep_merge(base, over):
    """Helm's values merge: maps merge recursively, anything else replaces."""
    out = dict(base)
    for k, v in over.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = deep_merge(out[k], v)
        else:
            out[k] = v
    return out
