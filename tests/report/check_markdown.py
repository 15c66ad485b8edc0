#!/usr/bin/env python3
"""The Markdown report, parsed as GitHub parses it (cmark-gfm, Debian's build of GitHub's
CommonMark fork, with its table extension), renders as intended: the verdict as a heading,
the decisive line in a code block exactly as the log wrote it, the fix as a numbered list
with every step, the verify command in a code block, tables with their rows, and nothing
from a log turned into markup (no raw HTML, links, emphasis or broken tables).

    check_markdown.py FIRSTFAULT SOURCE_DIR
Exit: 0 pass, 1 fail, 77 skipped (no cmark-gfm: tools/install-deps installs it).
"""
import html.parser
import json
import os
import shutil
import subprocess
import sys
import tempfile

binary, source = sys.argv[1], sys.argv[2]
cmark = shutil.which("cmark-gfm")
if not cmark:
    print("SKIP: cmark-gfm is missing (tools/install-deps installs it)")
    sys.exit(77)

failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


class Tree(html.parser.HTMLParser):
    """The parts of the rendered page the checks look at: each element's text, by tag."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.open = []  # (tag, text so far)
        self.by_tag = {}
        self.ol_items, self.tables = [], []

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self.tables.append([])
        if tag == "tr":
            self.tables[-1].append([])
        self.open.append([tag, ""])

    def handle_endtag(self, tag):
        while self.open:
            t, text = self.open.pop()
            if t == tag:
                break
        inside = {t for t, _ in self.open}
        key = "pre" if tag == "code" and "pre" in inside else tag
        self.by_tag.setdefault(key, []).append(text.rstrip("\n") if key == "pre" else text)
        if tag == "li" and "ol" in inside:
            self.ol_items.append(text)
        if tag in ("td", "th"):
            self.tables[-1][-1].append(text)

    def handle_data(self, data):
        for o in self.open:
            o[1] += data


def render(log):
    env = dict(os.environ, FIRSTFAULT_CACHE_DIR=os.path.join(tempfile.gettempdir(), f"ff-md-cache-{os.getpid()}"))
    md = subprocess.run([binary, "diagnose", "--format", "markdown", log], capture_output=True, text=True, env=env)
    js = subprocess.run([binary, "diagnose", "--format", "json", log], capture_output=True, text=True, env=env)
    page = subprocess.run([cmark, "-e", "table"], input=md.stdout, capture_output=True, text=True, check=True).stdout
    tree = Tree()
    tree.feed(page)
    return md, json.loads(js.stdout), page, tree


with tempfile.TemporaryDirectory() as tmp:
    # A log whose failing line is full of Markdown and HTML: it must come out as text.
    hostile = os.path.join(tmp, "hostile.log")
    nasty = "RuntimeError: bad | cell <script>alert(1)</script> ``` **bold** [link](http://example.invalid) _x_ ~~y~~"
    with open(hostile, "w") as f:
        f.write("step 1 | loss 2.0\nTraceback (most recent call last):\n  File \"train.py\", line 3, in <module>\n"
                "    main()\n" + nasty + "\n")
    cases = [os.path.join(source, "tests/data", n) for n in
             ("01_rank_exception__tee.log", "06_hang.log", "03_loss_scale_terminal__tee.log", "05_signal_kill__tee.log",
              "09_healthy__tee.log")] + [hostile]
    for log in cases:
        name = os.path.basename(log)
        md, d, page, tree = render(log)
        check(md.returncode == d["exit_code"], f"{name}: exit status {md.returncode} is the verdict's")
        check("raw HTML omitted" not in page, f"{name}: no raw HTML in the Markdown")
        check(bool(tree.by_tag.get("h3", [])) and tree.by_tag.get("h3", [])[0].startswith(d["verdict"].upper()), f"{name}: the verdict is the heading")
        p = d["primary"]
        if p:
            decisive = p["evidence"][0]["text"]
            check(decisive in tree.by_tag.get("pre", []), f"{name}: the decisive line is a code block, exactly as logged")
            check(tree.ol_items[:len(p["fix_steps"])] and len(tree.ol_items) >= len(p["fix_steps"]),
                  f"{name}: the {len(p['fix_steps'])} fix steps are a numbered list")
            check(any("firstfault verify --before" in b for b in tree.by_tag.get("pre", [])), f"{name}: the verify command is a code block")
        for t in tree.tables:
            widths = {len(r) for r in t}
            check(len(widths) == 1, f"{name}: every row of a table has the header's cells ({sorted(widths)})")
        if d["collateral"]:
            coll = [t for t in tree.tables if t and t[0] and t[0][0].strip() == "entry"]
            rows = len(coll[0]) - 1 if coll else 0
            check(rows == min(len(d["collateral"]), 10) + (1 if len(d["collateral"]) > 10 else 0),
                  f"{name}: the collateral table has a row per incident ({rows})")
        if log == hostile:
            made = {t: v for t, v in tree.by_tag.items() if t in ("script", "a", "del", "img")}
            check(not made, f"{name}: no link, script or strike made from log text ({made})")
            ours = {"Fix", "Verify", "Root cause:", "Why this verdict", "Collateral", "Other candidates", "Numbers",
                    "Timeline", "First failure:"}
            stray = [t for t in tree.by_tag.get("strong", []) if t not in ours]
            check(not stray, f"{name}: bold only for the report's own labels ({stray})")
            check(nasty in tree.by_tag.get("pre", []), f"{name}: the line with markup in it is shown as written")

print(f"{len(failures)} check(s) failed" if failures else "all checks passed")
sys.exit(1 if failures else 0)
