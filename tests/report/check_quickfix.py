#!/usr/bin/env python3
"""`firstfault diagnose --format vimgrep` read by Vim itself: the errorformat the README
gives turns every line into a valid quickfix entry, the first the decisive line (type e)
at the line the JSON report names, then the collateral (i) and the user's frame (n).

  check_quickfix.py FIRSTFAULT REPO_ROOT      exit 0 ok, 1 failed, 77 skipped (no vim)
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

binary, root = sys.argv[1], sys.argv[2]
vim = shutil.which("vim")
if not vim:
    print("SKIP: no vim")
    sys.exit(77)
readme = open(os.path.join(root, "README.md"), encoding="utf-8").read()
efm = re.search(r"^:set errorformat=(.+)$", readme, re.M).group(1)
log = os.path.join(root, "tests/data/01_rank_exception__rankprefix.log")


def diagnose(fmt):
    return subprocess.run([binary, "diagnose", "--format", fmt, log], capture_output=True, text=True).stdout


report = json.loads(diagnose("json"))
failures = 0


def check(ok, what):
    global failures
    print(("ok   " if ok else "FAIL ") + what)
    failures += not ok


with tempfile.TemporaryDirectory() as tmp:
    qf = os.path.join(tmp, "qf.txt")
    out = os.path.join(tmp, "qf.json")
    open(qf, "w", encoding="utf-8").write(diagnose("vimgrep"))
    subprocess.run([vim, "-es", "-N", "-u", "NONE", "-i", "NONE", "-c", f"set errorformat={efm}", "-c", f"cgetfile {qf}",
                    "-c", "call writefile([json_encode(map(getqflist(), {_, e -> extend(e, {'file': bufname(e.bufnr)})}))], '"
                    + out + "')", "-c", "qa!"], check=False, timeout=60, stdin=subprocess.DEVNULL)
    entries = json.load(open(out, encoding="utf-8"))
    p = report["primary"]
    check(len(entries) == 2 + len(report["collateral"]), f"one entry per line ({len(entries)})")
    check(all(e["valid"] == 1 for e in entries), "every line parses")
    check(entries[0]["type"] == "e" and entries[0]["lnum"] == p["evidence"][0]["line"]
          and entries[0]["file"] == log, "the decisive line first, an error, at the JSON's line")
    check([e["lnum"] for e in entries[1:-1]] == [c["first"]["line"] for c in report["collateral"]]
          and all(e["type"] == "i" for e in entries[1:-1]), "the collateral lines, info")
    check(entries[-1]["type"] == "n" and entries[-1]["file"] == p["user_frame"]["file"]
          and entries[-1]["lnum"] == p["user_frame"]["line"], "the user's frame last, a note, in their code")
sys.exit(1 if failures else 0)
