#!/usr/bin/env python3
"""Issue 36: `firstfault report` over a generated fleet of 10,000 job folders made from the
corpus's real logs (tests/gen/fleet.py): its JSON must count what the generator made (jobs,
interruptions, hardware vs software, GPU-hours, per category, the bad nodes' repeated
hardware findings), --since/--until and --compare-to must split by the jobs' end dates,
and the HTML and Markdown must be written. The page itself is checked in Chromium by
tests/site/check-fleet.mjs.

  report.py FIRSTFAULT [JOBS]       exit 77: the corpus is not beside the checkout
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
binary = os.path.abspath(sys.argv[1])
jobs = int(sys.argv[2]) if len(sys.argv) > 2 else 10000
corpus = os.path.join(here, "../../../shared/corpus")
if not os.path.isdir(corpus):
    print("skip: ../shared/corpus is not beside the checkout")
    sys.exit(77)
failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def report(*args):
    r = subprocess.run([binary, "report", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False)
    if r.returncode != 0:
        print(r.stderr.decode(errors="replace"))
    return r


tmp = tempfile.mkdtemp(prefix="ff-fleet-")
try:
    gen = subprocess.run([sys.executable, os.path.join(here, "../gen/fleet.py"), tmp, "--firstfault", binary,
                          "--jobs", str(jobs)], stdout=subprocess.PIPE, check=True)
    want = json.loads(gen.stdout)
    # A file that is not a diagnosis is skipped and counted; a link is not followed.
    with open(os.path.join(tmp, "jobs", "junk.firstfault.json"), "w") as f:
        f.write("not json")
    some = next(os.path.join(d, n) for d, _, ns in os.walk(os.path.join(tmp, "jobs")) for n in ns
                if n.endswith(".out.firstfault.json"))
    os.symlink(some, os.path.join(tmp, "jobs", "link.firstfault.json"))
    r = report(os.path.join(tmp, "jobs"), "-f", "json")
    check(r.returncode == 0, "report exits 0")
    got = json.loads(r.stdout)
    cur = got["current"]
    check(got["read"] == want["jobs"] and got["skipped"] == 1 and "junk.firstfault.json" in got["problems"][0],
          f"read {got['read']} diagnoses of {want['jobs']}, the junk file skipped, the link not followed")
    check(cur["jobs"] == want["jobs"], f"jobs {cur['jobs']} == {want['jobs']}")
    check(cur["failures"] == want["failures"], f"interruptions {cur['failures']} == {want['failures']}")
    check(cur["hardware"] == want["hardware"] and cur["software"] == want["software"],
          f"hardware/software {cur['hardware']}/{cur['software']} == {want['hardware']}/{want['software']}")
    check(abs(cur["gpu_hours_lost"] - want["gpu_hours"]) < 1e-6 * max(1, want["gpu_hours"]),
          f"GPU-hours {cur['gpu_hours_lost']:.1f} == {want['gpu_hours']:.1f}")
    cats = {c["category"]: c["failures"] for c in cur["by_category"]}
    check(cats == want["by_category"], f"per category {cats}")
    check(cats.get("hardware", 0) > 0 and len(cats) >= 6, "the fleet has hardware and several software categories")
    nodes = {n["node"]: n["hardware"] for n in got["repeat_hardware_nodes"]}
    want_nodes = {n: k for n, k in want["hardware_by_node"].items() if k >= 2 and n}
    check(nodes == want_nodes, f"nodes with repeated hardware findings: {len(nodes)}")
    check(set(want["bad_nodes"]) <= set(nodes), "the bad nodes are among them")
    check(len(got["recurring"]) > 0 and all(f["count"] >= 2 and f["first_seen"] <= f["last_seen"]
                                            for f in got["recurring"]), "recurring fingerprints with first/last seen")
    per_day = sum(sum(d["by_category"].values()) for d in got["per_day"])
    check(per_day == want["failures"], "the days add up to the interruptions")

    # Two periods: the last four weeks against the four before.
    days = sorted(want["jobs_by_day"])
    since, until, before = "2026-10-29", "2026-11-26", "2026-10-01"
    r = report(os.path.join(tmp, "jobs"), "-f", "json", "--since", since, "--until", until,
               "--compare-to", f"{before}..{since}")
    got = json.loads(r.stdout)
    in_now = sum(n for d, n in want["jobs_by_day"].items() if since <= d < until)
    in_before = sum(n for d, n in want["jobs_by_day"].items() if before <= d < since)
    f_now = sum(n for d, n in want["failures_by_day"].items() if since <= d < until)
    check(got["current"]["jobs"] == in_now and got["previous"]["jobs"] == in_before,
          f"--since/--compare-to split {got['current']['jobs']}/{got['previous']['jobs']} == {in_now}/{in_before}")
    check(got["current"]["failures"] == f_now, "the period's interruptions")
    check(got["outside_periods"] == want["jobs"] - in_now - in_before, "the jobs outside both are counted")

    html = os.path.join(tmp, "fleet.html")
    r = report(os.path.join(tmp, "jobs"), "-f", "html", "-o", html, "--since", since, "--compare-to",
               f"{before}..{since}")
    page = open(html, encoding="utf-8").read() if os.path.exists(html) else ""
    check(r.returncode == 0 and "<svg" in page and "What changed" in page and "<script" not in page,
          "the HTML page is written, with its chart and the comparison, and no script")
    r = report(os.path.join(tmp, "jobs"), "-f", "markdown")
    md = r.stdout.decode()
    check(md.startswith("# Fleet report") and "| category | class |" in md, "the Markdown summary")
    # Bad input: a folder that is not there, a bad date.
    check(report(os.path.join(tmp, "nosuch")).returncode == 2, "a missing folder: exit 2")
    check(report(tmp, "--since", "last week").returncode == 2, "a bad date: exit 2")
finally:
    shutil.rmtree(tmp, ignore_errors=True)
print(f"{len(failures)} check(s) failed" if failures else "all checks passed")
sys.exit(1 if failures else 0)
