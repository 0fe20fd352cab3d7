"""A CEL evaluator for the subset the chart's matchConditions use, so that
the tests run them on objects (Debian packages no CEL implementation).

Subset (cel-spec, github.com/google/cel-spec, langdef.md): string, int,
bool and null literals; identifiers; member selection a.b and index a['b'];
has(a.b); the macros e.exists(x, p) and e.all(x, p) over lists; operators
!, &&, ||, ==, !=, in. Semantics kept from the spec: selecting a missing map
key is an error, has() tests presence; && and || are commutative over
errors (false && error is false, true || error is true); `in` on something
that is neither a list nor a map is an error. Anything outside the subset is
a syntax error, so an expression the subset cannot read fails the test
instead of passing it."""
import re

TOKEN = re.compile(r"\s*(?:(?P<str>'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\")|(?P<int>\d+)"
                   r"|(?P<op>&&|\|\||==|!=|[!().,\[\]])|(?P<id>[A-Za-z_]\w*))")


class CelSyntaxError(Exception):
    pass


class CelError:
    """An evaluation error, a value as in CEL (absorbed by && and ||)."""
    def __init__(self, why):
        self.why = why

    def __repr__(self):
        return "CelError(%r)" % self.why


def tokens(src):
    out, pos = [], 0
    src = src.rstrip()
    while pos < len(src):
        m = TOKEN.match(src, pos)
        if not m or m.end() == pos:
            raise CelSyntaxError("unexpected text at %d: %r" % (pos, src[pos:pos + 20]))
        kind = m.lastgroup
        out.append((kind, m.group(kind)))
        pos = m.end()
    return out + [("end", "")]


class Parser:
    def __init__(self, src):
        self.t, self.i = tokens(src), 0

    def peek(self):
        return self.t[self.i]

    def take(self, value=None):
        tok = self.t[self.i]
        if value is not None and tok[1] != value:
            raise CelSyntaxError("expected %r, got %r" % (value, tok[1]))
        self.i += 1
        return tok

    def parse(self):
        e = self.or_()
        if self.peek()[0] != "end":
            raise CelSyntaxError("trailing %r" % (self.peek()[1],))
        return e

    def or_(self):
        e = self.and_()
        while self.peek()[1] == "||":
            self.take()
            e = ("or", e, self.and_())
        return e

    def and_(self):
        e = self.rel()
        while self.peek()[1] == "&&":
            self.take()
            e = ("and", e, self.rel())
        return e

    def rel(self):
        e = self.unary()
        while self.peek()[1] in ("==", "!=", "in"):
            op = self.take()[1]
            e = (op, e, self.unary())
        return e

    def unary(self):
        if self.peek()[1] == "!":
            self.take()
            return ("not", self.unary())
        return self.member()

    def member(self):
        e = self.primary()
        while True:
            v = self.peek()[1]
            if v == ".":
                self.take()
                kind, name = self.take()
                if kind != "id":
                    raise CelSyntaxError("expected a field name after '.'")
                if self.peek()[1] == "(":
                    if name not in ("exists", "all"):
                        raise CelSyntaxError("method %s is outside the subset" % name)
                    self.take("(")
                    kind, var = self.take()
                    if kind != "id":
                        raise CelSyntaxError("expected a variable in %s()" % name)
                    self.take(",")
                    body = self.or_()
                    self.take(")")
                    e = (name, e, var, body)
                else:
                    e = ("sel", e, name)
            elif v == "[":
                self.take()
                idx = self.or_()
                self.take("]")
                e = ("index", e, idx)
            else:
                return e

    def primary(self):
        kind, v = self.take()
        if kind == "str":
            return ("lit", re.sub(r"\\(.)", r"\1", v[1:-1]))
        if kind == "int":
            return ("lit", int(v))
        if kind == "id" and v in ("true", "false", "null"):
            return ("lit", {"true": True, "false": False, "null": None}[v])
        if kind == "id" and v == "has":
            self.take("(")
            arg = self.member()
            self.take(")")
            if arg[0] != "sel":
                raise CelSyntaxError("has() takes a field selection")
            return ("has", arg)
        if kind == "id" and v != "in":
            if self.peek()[1] == "(":
                raise CelSyntaxError("function %s is outside the subset" % v)
            return ("id", v)
        if v == "(":
            e = self.or_()
            self.take(")")
            return e
        raise CelSyntaxError("unexpected %r" % v)


def parse(src):
    return Parser(src).parse()


def ev(e, env):
    op = e[0]
    if op == "lit":
        return e[1]
    if op == "id":
        return env[e[1]] if e[1] in env else CelError("undeclared %s" % e[1])
    if op == "sel":
        base = ev(e[1], env)
        if isinstance(base, CelError):
            return base
        if not isinstance(base, dict):
            return CelError("select %s on %r" % (e[2], type(base).__name__))
        return base[e[2]] if e[2] in base else CelError("no such key: %s" % e[2])
    if op == "index":
        base, idx = ev(e[1], env), ev(e[2], env)
        for x in (base, idx):
            if isinstance(x, CelError):
                return x
        if isinstance(base, dict):
            return base[idx] if idx in base else CelError("no such key: %r" % (idx,))
        if isinstance(base, list) and isinstance(idx, int):
            return base[idx] if 0 <= idx < len(base) else CelError("index out of range")
        return CelError("index %r" % type(base).__name__)
    if op == "has":
        base = ev(e[1][1], env)
        if isinstance(base, CelError):
            return base
        if not isinstance(base, dict):
            return CelError("has() on %r" % type(base).__name__)
        return e[1][2] in base
    if op == "not":
        v = ev(e[1], env)
        return v if isinstance(v, CelError) else (not v if isinstance(v, bool) else CelError("! of non-bool"))
    if op in ("and", "or"):
        a, b = ev(e[1], env), ev(e[2], env)
        short = op == "or"
        for x in (a, b):
            if x is short:
                return short
        for x in (a, b):
            if isinstance(x, CelError):
                return x
            if not isinstance(x, bool):
                return CelError("%s of non-bool" % op)
        return not short
    if op in ("==", "!="):
        a, b = ev(e[1], env), ev(e[2], env)
        for x in (a, b):
            if isinstance(x, CelError):
                return x
        return (a == b) == (op == "==")
    if op == "in":
        a, b = ev(e[1], env), ev(e[2], env)
        for x in (a, b):
            if isinstance(x, CelError):
                return x
        if isinstance(b, (dict, list)):
            return a in b
        return CelError("in %r" % type(b).__name__)
    if op in ("exists", "all"):
        base = ev(e[1], env)
        if isinstance(base, CelError):
            return base
        if not isinstance(base, list):
            return CelError("%s over %r" % (op, type(base).__name__))
        results = [ev(e[3], dict(env, **{e[2]: x})) for x in base]
        return _fold(op, results) if results else op == "all"
    raise CelSyntaxError("unknown node %r" % (op,))


def _fold(op, results):
    acc = results[0]
    for r in results[1:]:
        acc = ev(("or" if op == "exists" else "and", ("lit", acc), ("lit", r)), {})
    return acc


def evaluate(src, **env):
    """The value of expression src with the given variables (object,
    oldObject, ...): True, False, or a CelError."""
    return ev(parse(src), env)
