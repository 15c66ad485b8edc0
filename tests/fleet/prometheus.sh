#!/usr/bin/env bash
# Issue 36: the real epilog's textfile read by Debian's prometheus-node-exporter (its
# textfile collector), scraped by Debian's prometheus, queried with PromQL, and an example
# rule of docs/fleet-rules.yml firing. Everything on loopback, in a temporary folder.
#
# The epilog is `firstfault slurm-epilog` as Slurm runs it, with a fake scontrol first on
# PATH answering the record shape of a real slurmctld 22.05 (tests/slurm/run.sh runs the
# epilog under the real daemons). Three failed jobs: two whose node gpu-0042 failed
# (Slurm's NODE FAILURE line, category hardware) and one out of host memory on gpu-0007.
#
# usage: tests/fleet/prometheus.sh FIRSTFAULT      exit 77: a program it needs is absent
set -euo pipefail
ff=$(realpath "$1")
root=$(cd "$(dirname "$0")/../.." && pwd)
for c in prometheus-node-exporter prometheus promtool curl python3; do
  command -v "$c" >/dev/null || { echo "skip: $c is not installed (tools/install-deps installs it)"; exit 77; }
done
tmp=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; for f in "$tmp"/*.log; do echo "--- $f"; tail -20 "$f"; done; exit 1; }
. "$root/tests/fleet/promlib.sh"

mkdir -p "$tmp/bin" "$tmp/jobs" "$tmp/textfile"
chmod 0755 "$tmp/textfile"
cat > "$tmp/bin/scontrol" <<'SH'
#!/bin/sh
[ "$1" = update ] && exit 0
exec cat "$FAKE_DIR/scontrol.$4"
SH
chmod 0755 "$tmp/bin/scontrol"
user=$(id -un)
job() {  # job ID NODE PARTITION GPUS LOG-TEXT
  local id=$1 node=$2 part=$3 gpus=$4 text=$5
  printf '%s\n' "$text" > "$tmp/jobs/train-$id.out"
  printf 'JobId=%s JobName=train UserId=%s(%s) GroupId=%s(%s) MCS_label=N/A Priority=1 Nice=0 Account=vision QOS=normal JobState=COMPLETING Reason=NonZeroExitCode Dependency=(null) Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=1:0 RunTime=02:00:00 TimeLimit=UNLIMITED TimeMin=N/A SubmitTime=2026-12-01T08:00:00 Partition=%s AllocNode:Sid=login:1 NodeList=%s BatchHost=%s NumNodes=1 NumCPUs=8 CPUs/Task=1 ReqB:S:C:T=0:0:*:* TRES=cpu=8,node=1,billing=8,gres/gpu=%s Command=%s/job.sh WorkDir=%s StdErr=%s StdIn=/dev/null StdOut=%s Power= \n' \
    "$id" "$user" "$(id -u)" "$(id -gn)" "$(id -g)" "$part" "$node" "$node" "$gpus" "$tmp/jobs" "$tmp/jobs" \
    "$tmp/jobs/train-$id.out" "$tmp/jobs/train-$id.out" > "$tmp/scontrol.$id"
  # As slurmd runs the Epilog: the job's id, exit code, owner and this node in the environment.
  env PATH="$tmp/bin:$PATH" FAKE_DIR="$tmp" FIRSTFAULT_CACHE_DIR="$tmp/cache" SLURM_JOB_ID="$id" \
    SLURM_JOB_EXIT_CODE2=1:0 SLURM_JOB_UID="$(id -u)" SLURM_JOB_GID="$(id -g)" SLURMD_NODENAME="$node" \
    SLURM_SCRIPT_CONTEXT=epilog_slurmd \
    "$ff" slurm-epilog --no-history --no-comment --textfile-dir "$tmp/textfile" --metric-labels partition,account \
    2>> "$tmp/epilog.log"
}
nodefail() { printf '0: step 10 loss 2.31\n0: step 11 loss 2.29\nslurmstepd: error: *** JOB %s ON %s CANCELLED AT 2026-12-01T10:00:00 DUE TO NODE FAILURE, SEE SLURMCTLD LOG FOR DETAILS ***' "$1" "$2"; }
job 101 gpu-0042 gpu 8 "$(nodefail 101 gpu-0042)"
job 102 gpu-0042 gpu 8 "$(nodefail 102 gpu-0042)"
job 103 gpu-0007 cpu 0 "$(printf 'Traceback (most recent call last):\n  File "/scratch/train.py", line 14, in <module>\n    batch = make_batch(step, 64)\nMemoryError')"
prom="$tmp/textfile/firstfault.prom"
[ -f "$prom" ] || fail "the epilog wrote no $prom"
[ "$(stat -c %a "$prom")" = 644 ] || fail "mode $(stat -c %a "$prom"), not 644"
echo "--- $prom"; cat "$prom"
promtool check metrics < "$prom" || fail "promtool check metrics"
grep -q '^firstfault_job_failures_total{entry="slurm.node.failure",category="hardware",class="hardware",node="gpu-0042",partition="gpu",account="vision"} 2$' "$prom" \
  || fail "no count of 2 node failures on gpu-0042"
grep -q '^firstfault_gpu_seconds_lost_total{entry="slurm.node.failure",.*node="gpu-0042".*} 115200$' "$prom" \
  || fail "GPU-seconds: 2 jobs x 8 GPUs x 2 h"

# node_exporter's own textfile collector reads the folder.
start_node_exporter "$tmp/textfile" "$tmp/node_exporter.log" || fail "node_exporter did not answer"
grep -q '^node_textfile_scrape_error 0' "$tmp/metrics.txt" || fail "node_exporter's textfile collector reported an error"
grep -q '^firstfault_job_failures_total{account="vision",category="hardware",class="hardware",entry="slurm.node.failure",node="gpu-0042",partition="gpu"} 2' "$tmp/metrics.txt" \
  || fail "node_exporter does not serve the failure count"
echo "ok: node_exporter's textfile collector serves the epilog's counters"

# Prometheus scrapes node_exporter every second and evaluates the example rules.
start_prometheus "$tmp" "$np" "$root" "$tmp/prometheus.log"
by_node=$(prom_wait 'sum by (node, category) (firstfault_job_failures_total)')
echo "failures by node and category: $by_node"
python3 - "$by_node" <<'PY' || fail "PromQL: failures by node and category"
import json, sys
got = {(r["metric"]["node"], r["metric"]["category"]): float(r["value"][1]) for r in json.loads(sys.argv[1])}
want = {("gpu-0042", "hardware"): 2.0, ("gpu-0007", "host-memory"): 1.0}
assert got == want, got
PY
alert=$(prom_wait 'ALERTS{alertname="FirstfaultNodeRepeatedHardwareFailures",alertstate="firing"}' 100)
echo "alert: $alert"
python3 - "$alert" <<'PY' || fail "FirstfaultNodeRepeatedHardwareFailures did not fire for gpu-0042 alone"
import json, sys
r = json.loads(sys.argv[1])
assert [a["metric"]["node"] for a in r] == ["gpu-0042"], r
PY
echo "ok: Prometheus counts the failures by node and category, and the repeated-hardware alert fires for gpu-0042"
