"""docs/cli.md holds what it promises, "every command, flag, route and
metric", checked against the binary's own tables (issue 36, item 5):

- every command `tpu-webhook --help` lists has a section of docs/cli.md
  whose heading names it (`tpu-webhook <command>`), and every flag its
  `--help` lists is named in that section (`--flag` in backquotes);
- the routes and metrics are checked against a running server in
  tests/monitoring/test_scrape.py (the 404 answer lists the route table,
  /metrics the metric families of both modes).

A flag added to a command's table without a word in docs/cli.md fails
here, and so does a command.

Usage: test_cli_docs.py BINARY SOURCE_DIR
"""
import os
import re
import subprocess
import sys
import unittest

BINARY, ROOT = sys.argv[1], sys.argv[2]
del sys.argv[1:3]
DOC = os.path.join(ROOT, "docs", "cli.md")


def run(*args):
    r = subprocess.run([BINARY] + list(args), capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, (args, r.stderr)
    return r.stdout


def commands():
    """The commands `tpu-webhook --help` lists."""
    block = run("--help").split("\ncommands:\n", 1)[1].split("\n\n", 1)[0]
    return re.findall(r"(?m)^  ([\w-]+) ", block)


def flags(command):
    """The long names of the flags `<command> --help` lists."""
    out = run(command, "--help")
    block = out.split("\nflags:\n", 1)[1] if "\nflags:\n" in out else ""
    return re.findall(r"(?m)^  (?:-\w, |    )--([\w-]+)", block)


def sections(text):
    """{command: its section}: from a heading that names `tpu-webhook
    <command>` to the next heading of the same or a higher level."""
    heads = list(re.finditer(r"(?m)^(#+) (.*)$", text))
    out = {}
    for i, h in enumerate(heads):
        m = re.search(r"`tpu-webhook ([\w-]+)`", h.group(2))
        if not m:
            continue
        end = next((h2.start() for h2 in heads[i + 1:] if len(h2.group(1)) <= len(h.group(1))),
                   len(text))
        out[m.group(1)] = text[h.start():end]
    return out


def missing(text):
    """[(command, flag or None)] that text leaves out."""
    secs = sections(text)
    out = []
    for cmd in commands():
        if cmd not in secs:
            out.append((cmd, None))
            continue
        out += [(cmd, f) for f in flags(cmd)
                if not re.search(r"`--%s(?:[`= \[]|$)" % re.escape(f), secs[cmd])]
    return out


class CliDocs(unittest.TestCase):
    def setUp(self):
        with open(DOC, encoding="utf-8") as f:
            self.text = f.read()

    def test_every_command_and_flag_is_documented(self):
        self.assertGreaterEqual(len(commands()), 8)
        self.assertEqual(missing(self.text), [])

    def test_a_missing_flag_or_command_is_caught(self):
        secs = sections(self.text)
        no_flag = self.text.replace("`--max-client-memory`", "`--max-memory`")
        self.assertIn(("serve", "max-client-memory"), missing(no_flag))
        no_doctor = self.text.replace(secs["doctor"], "")
        self.assertIn(("doctor", None), missing(no_doctor))


if __name__ == "__main__":
    unittest.main(verbosity=2)
