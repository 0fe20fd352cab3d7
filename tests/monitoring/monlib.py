"""Shared by the monitoring tests: where the rules, the dashboard and their
generated copies live, and a small reader of the PromQL they contain (which
metrics, which labels, which label values each selector uses).
"""
import json
import os
import re

import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
MONITORING = os.path.join(ROOT, "deploy", "monitoring")
RULES = os.path.join(MONITORING, "tpu-webhook.rules.yaml")
DASHBOARD = os.path.join(MONITORING, "tpu-webhook-dashboard.json")
TROUBLESHOOTING = os.path.join(ROOT, "docs", "troubleshooting.md")

# Labels Prometheus adds to every scraped series; not in the exposition.
TARGET_LABELS = {"job", "instance"}
# Metrics that are not in /metrics: Prometheus makes them per target.
SYNTHETIC = {"up"}

STRING = r'"(?:[^"\\]|\\.)*"'
SELECTOR = re.compile(r'(?<![\w:$])([a-zA-Z_:][\w:]*)\s*(\{[^}]*\})?')
MATCHER = re.compile(r'(\w+)\s*(=~|!~|!=|=)\s*(' + STRING + ')')
GROUPING = re.compile(r'\b(?:by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)')
KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "offset",
            "and", "or", "unless", "inf", "nan"}


def alert_rules():
    with open(RULES) as f:
        doc = yaml.safe_load(f)
    return [r for g in doc["groups"] for r in g["rules"] if "alert" in r]


def dashboard():
    with open(DASHBOARD) as f:
        return json.load(f)


def dashboard_panels(dash):
    """Every panel, rows' nested panels included."""
    out = []
    for p in dash.get("panels", []):
        out.append(p)
        out.extend(p.get("panels", []))
    return out


def dashboard_exprs(dash):
    return [t.get("expr", "") for p in dashboard_panels(dash) for t in p.get("targets", [])]


def github_anchor(heading):
    """The anchor GitHub gives a Markdown heading: its text (link targets,
    emphasis and code marks dropped) lowercased, every character but
    letters, digits, spaces, hyphens and underscores removed, spaces made
    hyphens."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip())
    return re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")


def doc_anchors(path):
    """GitHub's anchors of the Markdown headings of a file: ATX headings
    outside fenced code blocks; a repeated anchor gets -1, -2, ..."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    anchors, fence = set(), None
    for line in lines:
        m = re.match(r"^\s{0,3}(`{3,}|~{3,})", line)
        if m:
            if fence is None:
                fence = m.group(1)[0]
            elif m.group(1)[0] == fence:
                fence = None
            continue
        if fence is not None:
            continue
        m = re.match(r"^\s{0,3}#{1,6}\s+(.*?)(?:\s+#+)?\s*$", line)
        if not m:
            continue
        slug, n = github_anchor(m.group(1)), 0
        while (slug if n == 0 else "%s-%d" % (slug, n)) in anchors:
            n += 1
        anchors.add(slug if n == 0 else "%s-%d" % (slug, n))
    return anchors


def selectors(expr):
    """[(metric, [(label, op, value)])] of a PromQL expression; function
    names, keywords and the label lists of by/on/... are not metrics."""
    grouping = []
    for m in GROUPING.finditer(expr):
        grouping += [x.strip() for x in m.group(1).split(",") if x.strip()]
    text = GROUPING.sub(" ", expr)
    text = re.sub(r"\[[^\]]*\]", " ", text)  # ranges [5m]
    out = []
    for m in SELECTOR.finditer(re.sub(STRING, lambda s: '"' + "x" * (len(s.group(0)) - 2) + '"', text)):
        name, braces = m.group(1), m.group(2)
        rest = text[m.end():].lstrip()
        if name in KEYWORDS or rest.startswith("(") or re.fullmatch(r"\d.*", name):
            continue  # a function call, a keyword or a number
        matchers = []
        if braces:
            real = text[m.start(2):m.end(2)]
            matchers = [(a, op, json.loads(v)) for a, op, v in MATCHER.findall(real)]
        out.append((name, matchers))
    return out, grouping


# What every runbook_url of the rules file starts with: the page's path in
# the release (the project publishes no address; an operator who serves the
# docs sets an absolute base).
DEFAULT_RUNBOOK_BASE = "docs/troubleshooting.md"


def default_runbook_base():
    return DEFAULT_RUNBOOK_BASE


def chart_runbook_base():
    """The chart's default metrics.prometheusRule.runbookBaseURL."""
    with open(os.path.join(ROOT, "deploy", "helm", "kuberay-tpu-webhook", "values.yaml")) as f:
        return yaml.safe_load(f)["tpuWebhook"]["metrics"]["prometheusRule"]["runbookBaseURL"]
