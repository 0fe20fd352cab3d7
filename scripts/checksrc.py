#!/usr/bin/python3
"""checksrc.py [--lengths] [ROOT]: source rules of the C code in src/ and include/ that
the compilers do not enforce. Prints one line per violation, exits 1 if any.

- banned calls: functions without a bound on what they write (strcpy,
  strcat, sprintf, gets, ...), with undefined behaviour on bad input
  (atoi, atol, sscanf's %d), or with hidden state (strtok). Use snprintf,
  memcpy with a computed length, wh_parse_long / strtol, wh_buf.
- exported names: every function a .c file defines without `static` starts
  with wh_ (the project's prefix; main excepted), so the layers' libraries
  never collide with a symbol of a library they link.
- include comments: `#include <x.h> /* a, b */` names what the file uses of
  x.h; every such name (a single identifier, `struct t`, or a prefix `wh_x_*`)
  must still occur in the file's code, so the comments do not drift.
- length, in src/ only: no function over FUNC_MAX (80) lines, counted from
  the first line of its head (the return type) to its closing brace, and no
  file over FILE_MAX (800) lines, unless the code says why it is long. The
  limits are smell detectors, not a layout tool: the check asks for a split
  by meaning or a reason, and a reason a reader would accept is an answer. The
  marker is a comment that starts with `/* long: ` and gives a reason of at
  least ten characters, e.g. `/* long: one state machine, read top to
  bottom */`. For a function it stands in the comments just above the
  function's first line (no blank line between); for a file, in the comments
  just above its first line of code (the first #include, usually). Files
  that other work is splitting are in WAIVED_LONG until it has landed.
  `checksrc.py --lengths [ROOT]` lists every function and file over the
  limits, marked or not, longest first.

Comments and string literals are not code: a banned name mentioned there is
not a call."""
import os
import re
import sys

BANNED = ["strcpy", "strcat", "strncpy", "strncat", "sprintf", "vsprintf", "sscanf",
          "vsscanf", "scanf", "fscanf", "atoi", "atol", "atoll", "atof", "strtok", "gets",
          "tmpnam", "mktemp", "asctime", "ctime", "gmtime", "localtime", "rand", "alloca"]
BANNED_CALL = re.compile(r"(?<![\w.>])(" + "|".join(BANNED) + r")\s*\(")
# Waivers: "path:name" (a banned call or an include-comment name) the rules
# do not apply to, each with its reason. Remove an entry with its cause.
WAIVED = {
    "src/shell/http/mhd/mhderr.c:gnutls_record_send": "interposes GnuTLS's function (mhderr.h)",
    "src/shell/http/mhd/mhderr.c:gnutls_deinit": "interposes GnuTLS's function (mhderr.h)",
    "src/shell/http/mhd/mhderr.c:gnutls_record_recv": "interposes GnuTLS's function (mhderr.h)",
}
FUNC_MAX = 80
FILE_MAX = 800
LONG_MARK = re.compile(r"/\*\s*long:\s*\S.{9}")
# TEMPORARY: files ("path", skipped whole) and functions ("path:name") being
# split or changed by other work right now, which the length rule skips
# until that work lands. Remove each entry when its split has
# landed (then the file must pass or carry a /* long: */ reason).
WAIVED_LONG = {}
IDENT = r"[A-Za-z_]\w*"
INCLUDE = re.compile(r'^\s*#\s*include\s*[<"][^>"]+[>"]\s*/\*(.*?)\*/\s*$')
SYMBOL = re.compile(r"^(?:(?:struct|enum|union)\s+)?(" + IDENT + r")(\*)?$")


def strip(text):
    """Comments and string/char literals blanked (newlines kept), so that
    positions and line numbers stay those of the file."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(c + re.sub(r"[^\n]", " ", text[i + 1:j - 1]) + c)
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def line_of(text, pos):
    return text.count("\n", 0, pos) + 1


def functions(code):
    """(name, first line, last line, static) of every function defined at
    file scope: a top-level chunk ending in `{` whose head is `... name(...)`;
    its first line is the head's (the return type's), its last the closing
    brace's."""
    code = re.sub(r"^\s*#.*(?:\\\n.*)*", lambda m: re.sub(r"[^\n]", " ", m.group(0)), code,
                  flags=re.M)
    depth, start, head = 0, 0, None
    for i, c in enumerate(code):
        if c == "{":
            if depth == 0:
                text = code[start:i]
                m = re.search(r"(" + IDENT + r")\s*\([^()]*(?:\([^()]*\)[^()]*)*\)\s*$", text)
                head = None
                if m and "=" not in text:
                    first = start + len(text) - len(text.lstrip())
                    head = (m.group(1), first, bool(re.search(r"\bstatic\b", text)))
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                if head:
                    yield head[0], line_of(code, head[1]), line_of(code, i), head[2]
                head = None
                start = i + 1
        elif c == ";" and depth == 0:
            start = i + 1


def long_waived(lines, first):
    """Whether the comments right above line `first` (1-based; no blank line
    between) hold a LONG_MARK; for a file, first is its first line of code."""
    no = first - 1
    while no >= 1:
        line = lines[no - 1].strip()
        if not line or not (line.startswith(("/*", "*")) or line.endswith("*/")):
            return False
        if LONG_MARK.match(line):
            return True
        no -= 1
    return False


def file_marked(lines, code):
    """Whether a LONG_MARK stands in the comments above the first line of code."""
    first = next((no for no, l in enumerate(code.splitlines(), 1) if l.strip()), 1)
    return long_waived(lines, first)


def length_problems(name, text, code):
    out = []
    if name in WAIVED_LONG:
        return out
    lines = text.splitlines()
    if len(lines) > FILE_MAX:
        if not file_marked(lines, code):
            out.append("%s: %d lines, over %d, a sign it may hold more than one thing; "
                       "split it where its meaning splits (never just to fit the number), or "
                       "say why it is one piece in a /* long: <reason> */ comment above its "
                       "first line of code" % (name, len(lines), FILE_MAX))
    for fn, first, last, _ in functions(code):
        n = last - first + 1
        if (n > FUNC_MAX and not long_waived(lines, first)
                and "%s:%s" % (name, fn) not in WAIVED_LONG):
            out.append("%s:%d: %s() is %d lines, over %d, a sign it may do more than one "
                       "thing; split it where its meaning splits (never just to fit the "
                       "number), or say why it is one piece in a /* long: <reason> */ comment "
                       "just above it" % (name, first, fn, n, FUNC_MAX))
    return out


def problems_of(name, text):
    out = []
    code = strip(text)
    for m in BANNED_CALL.finditer(code):
        if "%s:%s" % (name, m.group(1)) not in WAIVED:
            out.append("%s:%d: %s() is banned (unbounded, undefined on bad input or hidden "
                       "state); see scripts/checksrc.py" % (name, line_of(code, m.start()),
                                                            m.group(1)))
    if name.endswith(".c"):
        for fn, first, _, static in functions(code):
            if (not static and not fn.startswith("wh_") and fn != "main" and
                    "%s:%s" % (name, fn) not in WAIVED):
                out.append("%s:%d: %s() is exported without the wh_ prefix; make it static or "
                           "name it wh_..." % (name, first, fn))
        if name.startswith("src" + os.sep) or name.startswith("src/"):
            out += length_problems(name, text, code)
    body = "\n".join(l for l in code.splitlines() if not re.match(r"\s*#\s*include", l))
    words = set(re.findall(IDENT, body))
    for no, line in enumerate(text.splitlines(), 1):
        m = INCLUDE.match(line)
        if not m:
            continue
        for part in m.group(1).split(","):
            s = SYMBOL.match(part.strip())
            if not s:
                continue  # prose, not a symbol list
            sym, prefix = s.group(1), s.group(2)
            used = any(w.startswith(sym) for w in words) if prefix else sym in words
            if not used and "%s:%s" % (name, sym) not in WAIVED:
                out.append("%s:%d: the include comment names %s%s, which the file no longer "
                           "uses; update the comment" % (name, no, sym, prefix or ""))
    return out


def sources(root, tops):
    """(name relative to root, text) of every .c and .h under root/tops."""
    for top in tops:
        for d, subdirs, files in os.walk(os.path.join(root, top)):
            subdirs.sort()
            for f in sorted(files):
                if f.endswith((".c", ".h")):
                    path = os.path.join(d, f)
                    with open(path, encoding="utf-8", errors="replace") as fh:
                        yield os.path.relpath(path, root), fh.read()


def list_lengths(root):
    """Every function and file in src/ over the limits, longest first, with
    what excuses it (a /* long: */ marker, a WAIVED_LONG entry) if anything."""
    rows = []
    for name, text in sources(root, ("src",)):
        code, lines = strip(text), text.splitlines()
        if len(lines) > FILE_MAX:
            rows.append((len(lines), name, "(file)",
                         name in WAIVED_LONG or file_marked(lines, code)))
        for fn, first, last, _ in functions(code):
            if last - first + 1 > FUNC_MAX:
                excused = (long_waived(lines, first) or name in WAIVED_LONG
                           or "%s:%s" % (name, fn) in WAIVED_LONG)
                rows.append((last - first + 1, "%s:%d" % (name, first), fn + "()", excused))
    for n, where, what, excused in sorted(rows, key=lambda r: (-r[0], r[1])):
        print("%5d  %-32s %s%s" % (n, where, what, "  (excused)" if excused else ""))
    return 0


def main():
    args = sys.argv[1:]
    lengths = bool(args) and args[0] == "--lengths"
    args = args[1:] if lengths else args
    root = args[0] if args else os.path.join(os.path.dirname(__file__), "..")
    if lengths:
        return list_lengths(root)
    found, count = [], 0
    for name, text in sources(root, ("src", "include")):
        found += problems_of(name, text)
        count += 1
    for p in found:
        print("checksrc: " + p)
    if count == 0:
        print("checksrc: no C file under %s/src or include" % root)
        return 1
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
