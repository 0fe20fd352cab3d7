#!/usr/bin/python3
"""checksrc.py [ROOT]: source rules of the C code in src/ and include/ that
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
    "src/shell/claims.c:sscanf": "Lease time parsing; the file is being changed by the "
                                 "cross-replica claims work, fix it once that has landed",
    "src/shell/claims.c:EVP_Digest": "as above",
    "src/shell/metrics.c:fscanf": "/proc/self/statm; metrics.c is being changed by the "
                                  "cross-replica claims work, fix it once that has landed",
    "src/shell/ledger.c:clock_gettime": "as above (ledger.c)",
}
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


def exported_functions(code):
    """(name, position) of every function defined at file scope without
    static: a top-level chunk ending in `{` whose head is `... name(...)`."""
    code = re.sub(r"^\s*#.*(?:\\\n.*)*", lambda m: re.sub(r"[^\n]", " ", m.group(0)), code,
                  flags=re.M)
    depth, start = 0, 0
    for i, c in enumerate(code):
        if c == "{":
            if depth == 0:
                head = code[start:i]
                m = re.search(r"(" + IDENT + r")\s*\([^()]*(?:\([^()]*\)[^()]*)*\)\s*$", head)
                if m and "=" not in head and not re.search(r"\bstatic\b", head):
                    yield m.group(1), start + m.start(1)
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                start = i + 1
        elif c == ";" and depth == 0:
            start = i + 1


def problems_of(name, text):
    out = []
    code = strip(text)
    for m in BANNED_CALL.finditer(code):
        if "%s:%s" % (name, m.group(1)) not in WAIVED:
            out.append("%s:%d: %s() is banned (unbounded, undefined on bad input or hidden "
                       "state); see scripts/checksrc.py" % (name, line_of(code, m.start()),
                                                            m.group(1)))
    if name.endswith(".c"):
        for fn, pos in exported_functions(code):
            if not fn.startswith("wh_") and fn != "main":
                out.append("%s:%d: %s() is exported without the wh_ prefix; make it static or "
                           "name it wh_..." % (name, line_of(code, pos), fn))
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


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
    found, count = [], 0
    for top in ("src", "include"):
        for d, subdirs, files in os.walk(os.path.join(root, top)):
            subdirs.sort()
            for f in sorted(files):
                if not f.endswith((".c", ".h")):
                    continue
                path = os.path.join(d, f)
                with open(path, encoding="utf-8", errors="replace") as fh:
                    found += problems_of(os.path.relpath(path, root), fh.read())
                count += 1
    for p in found:
        print("checksrc: " + p)
    if count == 0:
        print("checksrc: no C file under %s/src or include" % root)
        return 1
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
