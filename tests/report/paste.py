#!/usr/bin/env python3
"""What a person pastes from firstfault's output runs (issue 33): the verify code of every
KB entry, as `explain` prints it and as the `diagnose` report prints it, copied from the
output at 60, 80 and 120 columns, is the entry's own code, whole, and passes its
interpreter's syntax check: `bash -n` for `where: shell` and `where: rerun`, Python's
compile() for `where: in-process`.

  paste.py FIRSTFAULT KB_DIR DATA_DIR

explain runs (in batches of ids, one run showing many pages) for every entry at 80 columns,
and at 60 and 120 for every entry with a code line wider than 56 columns (a shorter one fits any of the three widths as it is); diagnose
runs on every real log of DATA_DIR at the three widths. Exits 1 with a line per defect.
"""
import concurrent.futures
import glob
import json
import os
import subprocess
import sys

import yaml

ff, kb_dir, data_dir = sys.argv[1:4]
env = dict(os.environ, NO_COLOR="1", FIRSTFAULT_NO_HISTORY="1")
problems = []


def entries():
    for path in sorted(glob.glob(os.path.join(kb_dir, "**", "*.yaml"), recursive=True)):
        if os.sep + "formats" + os.sep in path:
            continue
        doc = yaml.safe_load(open(path, encoding="utf-8"))
        v = doc.get("verify") if isinstance(doc, dict) else None
        if isinstance(v, dict) and v.get("command"):
            yield doc["id"], v.get("where", "shell"), v["command"].strip()


def check(code, where, want, what):
    """The pasted code must be the entry's code and pass its syntax check."""
    if [l.strip() for l in code.strip().splitlines()] != [l.strip() for l in want.strip().splitlines()]:
        problems.append(f"{what}: the printed code is not the entry's:\n  printed: {code!r}\n  entry:   {want!r}")
        return
    if where == "in-process":
        try:
            compile(code, what, "exec")
        except SyntaxError as e:
            problems.append(f"{what}: Python does not compile it: {e}")
    else:
        r = subprocess.run(["bash", "-n"], input=code, text=True, capture_output=True)
        if r.returncode != 0:
            problems.append(f"{what}: bash -n: {r.stderr.strip()}")


def explain(batch):
    """One explain run for every id of the batch at one width (explain takes several ids and
    separates the pages with a line of dashes): each page's Verify code is checked."""
    width, group = batch
    r = subprocess.run([ff, "explain"] + [eid for eid, _, _ in group], env=dict(env, COLUMNS=str(width)),
                       capture_output=True, text=True)
    if r.returncode != 0:
        return [f"explain at {width} columns exited {r.returncode}: {r.stderr.strip()}"]
    pages = [[]]
    for l in r.stdout.splitlines():
        if l and set(l) == {"-"} and len(l) >= min(width, 72) and (not pages[-1] or pages[-1][-1] == ""):
            pages.append([])
        else:
            pages[-1].append(l)
    if len(pages) != len(group):
        return [f"explain at {width} columns: {len(pages)} pages for {len(group)} ids"]
    out = []
    for (eid, where, want), lines in zip(group, pages):
        if eid not in lines[:8]:  # the title (wrapped at 60 columns), then the id
            out.append(f"explain at {width}: the page for {eid} is not where it should be")
            continue
        at = next((i for i, l in enumerate(lines) if l.startswith("Verify:")), None)
        if at is None:
            out.append(f"explain {eid} at {width}: no Verify section")
            continue
        code = []
        for l in lines[at + 1:]:
            if not l.startswith("    "):
                break
            code.append(l[4:])
        check("\n".join(code), where, want, f"explain {eid} at {width} columns")
    return out


def diagnose(item):
    log, width = item
    j = json.loads(subprocess.run([ff, "diagnose", "--format", "json", log], env=env, capture_output=True, text=True).stdout)
    p = j.get("primary")
    if not p or p.get("id") not in by_id:
        return
    where, want = by_id[p["id"]]
    out = subprocess.run([ff, "diagnose", log], env=dict(env, COLUMNS=str(width)), capture_output=True, text=True).stdout
    lines = out.splitlines()
    at = next((i for i, l in enumerate(lines) if l == "Verify"), None)
    if at is None:
        problems.append(f"diagnose {log} at {width}: no Verify section")
        return
    code = []
    for l in lines[at + 1:]:
        if l.startswith("  Expect:") or l.startswith("  Then check") or not l.startswith("  "):
            break
        code.append(l[2:])
    if code and code[0].endswith(":") and not want.endswith(":"):
        code = code[1:]  # the line that says where it runs
    check("\n".join(code), where, want, f"diagnose {os.path.basename(log)} at {width} columns")


by_id = {}
by_width = {60: [], 80: [], 120: []}
for eid, where, want in entries():
    by_id[eid] = (where, want)
    wide = any(len(l) > 56 for l in want.splitlines())
    for width in ((60, 80, 120) if wide else (80,)):
        by_width[width].append((eid, where, want))
# Batches of 100 ids, so that the four workers share the work.
batches = [(w, ids[i:i + 100]) for w, ids in by_width.items() for i in range(0, len(ids), 100)]
n_explained = sum(len(ids) for ids in by_width.values())
logs = sorted(glob.glob(os.path.join(data_dir, "*.log")))
with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
    for r in pool.map(explain, batches):
        problems.extend(r)
    list(pool.map(diagnose, [(log, w) for log in logs for w in (60, 80, 120)]))
print(f"paste: {n_explained} explain outputs and {len(logs) * 3} diagnose reports checked, {len(problems)} problems")
for p in problems:
    print(p)
sys.exit(1 if problems else 0)
