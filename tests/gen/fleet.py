#!/usr/bin/env python3
"""A fleet of job folders made from the corpus's real logs (issue 36), for `firstfault report`.

  fleet.py OUT_DIR --firstfault BIN [--jobs 10000] [--nodes 512] [--days 56]
           [--start 2026-10-01] [--seed 1] [--corpus DIR]...

Each job gets a folder OUT_DIR/jobs/<day>/job-<id>/ holding its output, `train-<id>.out`,
and the diagnosis beside it as the Slurm epilog leaves it, `train-<id>.out.firstfault.json`
(the diagnosis JSON with the epilog's "job" object: id, user, partition, account, nodes,
GPUs, run time, GPU-hours, when it ended).

The outputs are the corpus's real logs (../shared/corpus/pytorch-runs*/cases by default),
each diagnosed once by the real binary (`firstfault diagnose -f json`); a job's folder
holds a hard link to its template's copy and the template's diagnosis with the job's facts
added. The hardware jobs are a real training log cut after its first steps and ended by
Slurm's own node-failure line naming the job's node (`slurmstepd: error: *** JOB <id> ON
<node> CANCELLED AT <time> DUE TO NODE FAILURE ...`, the text of slurmstepd; the KB's
slurm.node.failure): those are diagnosed per node, so the node in the diagnosis is the
binary's answer, not the generator's. A few nodes are bad (most of the hardware failures
land on them). Node names (gpu-0000 ...), users, partitions and dates are synthetic.

Prints on stdout, as JSON, what the report must find: jobs, failures, hardware, software,
GPU-hours, per category, the bad nodes' hardware counts.
"""
import argparse
import datetime as dt
import glob
import json
import os
import random
import subprocess
import sys


def diagnose(binary, path):
    r = subprocess.run([binary, "diagnose", "--no-history", "-f", "json", path],
                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, check=False)
    if r.returncode not in (0, 1, 3, 4, 5):
        sys.exit(f"fleet.py: firstfault diagnose {path}: exit {r.returncode}")
    return json.loads(r.stdout)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--firstfault", required=True)
    ap.add_argument("--jobs", type=int, default=10000)
    ap.add_argument("--nodes", type=int, default=512)
    ap.add_argument("--days", type=int, default=56)
    ap.add_argument("--start", default="2026-10-01")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--corpus", action="append")
    ap.add_argument("--hardware-share", type=float, default=0.08)
    a = ap.parse_args()
    here = os.path.dirname(os.path.abspath(__file__))
    corpora = a.corpus or sorted(glob.glob(os.path.join(here, "../../../shared/corpus/pytorch-runs*/cases")))
    logs = sorted(p for c in corpora for p in glob.glob(os.path.join(c, "*.log")))
    if not logs:
        sys.exit("fleet.py: no corpus logs (../shared/corpus/pytorch-runs*/cases)")
    rng = random.Random(a.seed)
    tdir = os.path.join(a.out, "templates")
    os.makedirs(tdir, exist_ok=True)

    # The software templates: each real log once, with its diagnosis.
    templates = []
    for i, p in enumerate(logs):
        dst = os.path.join(tdir, f"t{i:03d}.out")
        with open(p, "rb") as f, open(dst, "wb") as g:
            g.write(f.read())
        d = diagnose(a.firstfault, dst)
        d.pop("inputs", None)  # the template's path, not the job's
        templates.append((dst, d))

    # The hardware template's head: the first lines of a real run's output.
    head_src = next((p for p in logs if "healthy" in os.path.basename(p)), logs[0])
    with open(head_src, "rb") as f:
        head = b"".join(f.readlines()[:40])

    nodes = [f"gpu-{n:04d}" for n in range(a.nodes)]
    bad = rng.sample(nodes, 6)
    start = dt.datetime.fromisoformat(a.start).replace(tzinfo=dt.timezone.utc)
    partitions = [("gpu", "vision"), ("gpu", "language"), ("long", "language"), ("debug", "infra")]
    users = [f"user{n:02d}" for n in range(40)]
    hw_cache = {}  # node -> (output path, diagnosis) of its node-failure output
    expect = {"jobs": 0, "failures": 0, "hardware": 0, "software": 0, "gpu_hours": 0.0,
              "by_category": {}, "hardware_by_node": {}, "bad_nodes": bad, "jobs_by_day": {},
              "failures_by_day": {}}
    jobs_dir = os.path.join(a.out, "jobs")
    for j in range(a.jobs):
        job_id = str(100000 + j)
        ended = start + dt.timedelta(seconds=rng.randrange(a.days * 86400))
        node = rng.choice(nodes)
        gpus = rng.choice([8, 8, 8, 16, 32])
        run_s = rng.randrange(600, 24 * 3600)
        part, account = rng.choice(partitions)
        if rng.random() < a.hardware_share:
            node = rng.choice(bad) if rng.random() < 0.7 else node
            if node not in hw_cache:
                # A name that says no node (a name like gpu-0042.out would: source-name formats).
                p = os.path.join(tdir, f"train-{len(hw_cache) + 1}.out")
                with open(p, "wb") as g:
                    g.write(head + (f"slurmstepd: error: *** JOB 1 ON {node} CANCELLED AT 2026-10-01T00:00:00 "
                                    "DUE TO NODE FAILURE, SEE SLURMCTLD LOG FOR DETAILS ***\n").encode())
                d = diagnose(a.firstfault, p)
                d.pop("inputs", None)
                hw_cache[node] = (p, d)
            src, d = hw_cache[node]
        else:
            src, d = rng.choice(templates)
        folder = os.path.join(jobs_dir, ended.strftime("%Y-%m-%d"), f"job-{job_id}")
        os.makedirs(folder, exist_ok=True)
        out = os.path.join(folder, f"train-{job_id}.out")
        os.link(src, out)
        gpu_hours = gpus * run_s / 3600.0
        d = dict(d)
        d["job"] = {"scheduler": "slurm", "id": job_id, "name": "train", "user": rng.choice(users),
                    "partition": part, "account": account, "node_list": node, "state": "FAILED",
                    "exit_code": "1:0", "gpus": gpus, "run_seconds": run_s, "gpu_hours": gpu_hours,
                    "ended": ended.strftime("%Y-%m-%dT%H:%M:%SZ")}
        with open(out + ".firstfault.json", "w") as g:
            json.dump(d, g, indent=2)
        expect["jobs"] += 1
        day = ended.strftime("%Y-%m-%d")
        expect["jobs_by_day"][day] = expect["jobs_by_day"].get(day, 0) + 1
        p = d.get("primary")
        if p:
            expect["failures_by_day"][day] = expect["failures_by_day"].get(day, 0) + 1
            cat = p["category"]
            expect["failures"] += 1
            expect["gpu_hours"] += gpu_hours
            expect["by_category"][cat] = expect["by_category"].get(cat, 0) + 1
            if cat == "hardware":
                expect["hardware"] += 1
                n = p.get("node") or ""
                expect["hardware_by_node"][n] = expect["hardware_by_node"].get(n, 0) + 1
            else:
                expect["software"] += 1
    json.dump(expect, sys.stdout, indent=1, sort_keys=True)
    print()


if __name__ == "__main__":
    main()
