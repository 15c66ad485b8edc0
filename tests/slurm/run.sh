#!/usr/bin/env bash
# The Slurm epilog on a real Slurm (issue 21): starts munged, slurmctld and slurmd
# (Debian's slurm-wlm and munge) on loopback with a slurm.conf written here, firstfault
# slurm-epilog as the Epilog, submits real jobs with sbatch and checks what the epilog did.
#
#   tests/slurm/run.sh FIRSTFAULT_BINARY [CAPTURE_DIR]
#
# Jobs, run as the user nobody (so the root epilog must read and write as the job's owner):
#   failed    srun --label python3 train.py: a real MemoryError from real code at step 3
#   healthy   srun --label python3 train.py --steps 4: completes
#   timeout   --time=0:05 and a loop that never ends: slurmctld cancels it (TIME LIMIT)
#   forged    --comment "x UserId=root(0) GroupId=root(0)"; the job fails after replacing
#             its output with a link to a root-only file (issue 31)
#   newline   a job name with a line break, its first line "x StdOut=<root-only> ..." (issue 31)
# Checks: the failed job's <StdOut>.firstfault.json/.md name the MemoryError on rank 0 and
# are owned by nobody; the epilog tried AdminComment and says why it was refused; the
# time-limit job's diagnosis is slurm.job.time-limit; the healthy job gets no files and its
# epilog takes under 0.5 s; no file of the jobs' folder (the forged and newline jobs'
# diagnoses among them) holds a byte of the root-only file. With CAPTURE_DIR, the real outputs are copied there with the
# machine's paths replaced (tests/data/real/slurm-*.log are made so).
# Exit 0 pass, 1 fail, 77 skipped (no slurm-wlm/munge, not root, or slurmd cannot start).
set -u
ff=${1:?usage: run.sh FIRSTFAULT_BINARY [CAPTURE_DIR]}
capture=${2:-}
skip() { echo "SKIP: $*"; exit 77; }
for c in munged slurmctld slurmd sbatch scontrol sinfo python3 setpriv; do
  command -v "$c" >/dev/null || skip "$c not installed (tools/install-deps installs slurm-wlm and munge)"
done
[ "$(id -u)" = 0 ] || skip "slurmd must run as root to start jobs as another user"
getent passwd nobody >/dev/null || skip "no user nobody to run the jobs as"
ff=$(readlink -f "$ff")

tmp=$(mktemp -d /tmp/ff-slurm.XXXXXX)
chmod 755 "$tmp"
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${pids[@]}"; do
    for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$p" 2>/dev/null
  done
  # Any slurmstepd left behind (its job's processes end with it).
  for f in "$tmp"/spool/*.pid; do [ -f "$f" ] && kill -9 "$(cat "$f")" 2>/dev/null; done
  if [ -n "${FF_SLURM_KEEP:-}" ]; then echo "kept $tmp"; else rm -rf "$tmp"; fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# munged with a key of its own, its socket in the temp folder.
mkdir -m 755 "$tmp/munge"
head -c 1024 /dev/urandom > "$tmp/munge/munge.key"
chmod 400 "$tmp/munge/munge.key"
munged -f -F --socket="$tmp/munge/socket" --key-file="$tmp/munge/munge.key" --log-file="$tmp/munge/log" \
  --pid-file="$tmp/munge/pid" --seed-file="$tmp/munge/seed" > "$tmp/munge/stderr" 2>&1 &
pids+=($!)
for _ in $(seq 50); do [ -S "$tmp/munge/socket" ] && break; sleep 0.1; done
[ -S "$tmp/munge/socket" ] || skip "munged did not start: $(tail -n 3 "$tmp/munge/log" 2>/dev/null)"

read -r ctld_port slurmd_port dbd_port db_port < <(python3 -c '
import socket
ss = [socket.socket() for _ in range(4)]
for s in ss: s.bind(("127.0.0.1", 0))
print(*[s.getsockname()[1] for s in ss])')
mkdir -p "$tmp/state" "$tmp/spool" "$tmp/log" "$tmp/cache"
mkdir -m 755 "$tmp/textfile"  # node_exporter's textfile folder (issue 36)

# Accounting, where MariaDB and slurmdbd are installed: a job that has finished can only be
# annotated in its accounting record (slurmctld refuses updates to it), so with them the
# AdminComment is checked for real; without them, the epilog's account of the refusal is.
with_db=0
if command -v mariadbd >/dev/null && command -v mariadb-install-db >/dev/null && command -v mariadb >/dev/null &&
   command -v slurmdbd >/dev/null && command -v sacct >/dev/null && command -v sacctmgr >/dev/null; then
  if mariadb-install-db --no-defaults --datadir="$tmp/db" --auth-root-authentication-method=normal --skip-test-db \
       --user=root > "$tmp/log/db-install.log" 2>&1; then
    mariadbd --no-defaults --datadir="$tmp/db" --socket="$tmp/db.sock" --port="$db_port" --bind-address=127.0.0.1 \
      --user=root --pid-file="$tmp/db.pid" --log-error="$tmp/log/mariadb.log" > /dev/null 2>&1 &
    pids+=($!)
    for _ in $(seq 100); do mariadb --no-defaults -S "$tmp/db.sock" -uroot -e 'select 1' >/dev/null 2>&1 && break; sleep 0.2; done
    mariadb --no-defaults -S "$tmp/db.sock" -uroot -e "CREATE USER 'slurm'@'127.0.0.1' IDENTIFIED BY 'slurm';
      GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';" 2>>"$tmp/log/mariadb.log" && with_db=1
  fi
fi
if [ "$with_db" = 1 ]; then
  cat > "$tmp/slurmdbd.conf" <<EOF
AuthType=auth/munge
AuthInfo=socket=$tmp/munge/socket
DbdHost=localhost
DbdAddr=127.0.0.1
DbdPort=$dbd_port
SlurmUser=root
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$db_port
StorageUser=slurm
StoragePass=slurm
LogFile=$tmp/log/slurmdbd.log
PidFile=$tmp/slurmdbd.pid
EOF
  chmod 600 "$tmp/slurmdbd.conf"
  accounting="AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
AccountingStoragePort=$dbd_port
AccountingStoragePass=$tmp/munge/socket
JobCompType=jobcomp/none
AccountingStoreFlags=job_script
MinJobAge=2"
else
  accounting="AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MinJobAge=600"
fi

# The epilog: a wrapper, as an operator writes one (Slurm passes no arguments).
cat > "$tmp/epilog" <<EOF
#!/bin/sh
export SLURM_CONF="$tmp/slurm.conf" FIRSTFAULT_CACHE_DIR="$tmp/cache"
start=\$(date +%s.%N)
{ echo "job \$SLURM_JOB_ID: \$(env | grep -E '^SLURM_(JOB_EXIT_CODE|JOB_EXIT_CODE2|JOB_DERIVED_EC|SCRIPT_CONTEXT)=' | sort | tr '\\n' ' ')"; } >> "$tmp/epilog.env"
"$ff" slurm-epilog --timeout 20 --textfile-dir "$tmp/textfile" --history "$tmp/history.db" 2>>"$tmp/epilog.log"
rc=\$?
echo "\$SLURM_JOB_ID \$start \$(date +%s.%N) \$rc" >> "$tmp/epilog.times"
scontrol show job -o "\$SLURM_JOB_ID" | grep -o 'JobState=[^ ]* Reason=[^ ]*\|ExitCode=[^ ]*' | tr '\\n' ' ' >> "$tmp/epilog.env"
echo >> "$tmp/epilog.env"
exit \$rc
EOF
chmod 755 "$tmp/epilog"
cat > "$tmp/slurm.conf" <<EOF
ClusterName=fftest
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$tmp/munge/socket
StateSaveLocation=$tmp/state
SlurmdSpoolDir=$tmp/spool
SlurmctldPidFile=$tmp/slurmctld.pid
SlurmdPidFile=$tmp/slurmd.pid
SlurmctldLogFile=$tmp/log/slurmctld.log
SlurmdLogFile=$tmp/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
$accounting
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
KillWait=2
InactiveLimit=0
Epilog=$tmp/epilog
NodeName=localhost NodeAddr=127.0.0.1 CPUs=$(nproc) State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF="$tmp/slurm.conf"
# The compiled KB, as an installed epilog finds it after its first run (the first one
# compiles it: seconds).
FIRSTFAULT_CACHE_DIR="$tmp/cache" "$ff" diagnose "$tmp/slurm.conf" > /dev/null 2>&1
if [ "$with_db" = 1 ]; then
  slurmdbd -D > "$tmp/log/slurmdbd.out" 2>&1 &
  pids+=($!)
  for _ in $(seq 100); do sacctmgr -n -P list cluster >/dev/null 2>&1 && break; sleep 0.2; done
  if sacctmgr -i add cluster fftest > "$tmp/log/sacctmgr.out" 2>&1; then
    echo "accounting: slurmdbd on 127.0.0.1:$dbd_port, MariaDB on 127.0.0.1:$db_port"
  else
    skip "slurmdbd did not come up: $(tail -n 3 "$tmp/log/slurmdbd.log" "$tmp/log/sacctmgr.out")"
  fi
fi
slurmctld -D -f "$SLURM_CONF" > "$tmp/log/slurmctld.out" 2>&1 &
pids+=($!)
slurmd -D -f "$SLURM_CONF" -N localhost > "$tmp/log/slurmd.out" 2>&1 &
pids+=($!)
state=""
for _ in $(seq 100); do
  state=$(sinfo -h -n localhost -o %T 2>/dev/null)
  [ "$state" = idle ] && break
  sleep 0.2
done
[ "$state" = idle ] || skip "slurmd did not come up (node state '$state'): $(tail -n 5 "$tmp/log/slurmd.log" "$tmp/log/slurmctld.log" 2>/dev/null)"
echo "slurmctld and slurmd up on 127.0.0.1:$ctld_port/$slurmd_port"

# The jobs: a real python3 program, as a training loop is written.
jobs="$tmp/jobs"
mkdir -m 755 "$jobs"
chown nobody "$jobs"
cat > "$jobs/train.py" <<'EOF'
import argparse, sys, time

def make_batch(step, batch_size):
    # A buffer that grows with the step, as a data loader with an unbounded cache does.
    size = 1 << (20 + 12 * step) if step >= 3 else batch_size * 1024
    return bytearray(size)

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=10)
args = p.parse_args()
print(f"starting training: {args.steps} steps", flush=True)
for step in range(1, args.steps + 1):
    batch = make_batch(step, 64)
    loss = 2.5 / step
    print(f"step {step}/{args.steps} loss {loss:.4f}", flush=True)
    time.sleep(0.1)
print("training complete", flush=True)
EOF
cat > "$jobs/failed.sbatch" <<'EOF'
#!/bin/sh
#SBATCH --job-name=train-failed
#SBATCH --output=%x-%j.out
srun --label python3 train.py --steps 10
EOF
cat > "$jobs/healthy.sbatch" <<'EOF'
#!/bin/sh
#SBATCH --job-name=train-healthy
#SBATCH --output=%x-%j.out
srun --label python3 train.py --steps 2
EOF
cat > "$jobs/timeout.sbatch" <<'EOF'
#!/bin/sh
#SBATCH --job-name=train-timeout
#SBATCH --output=%x-%j.out
#SBATCH --time=0:05
srun --label python3 -c '
import time
step = 0
while True:
    step += 1
    print(f"step {step} loss {1.0 / step:.4f}", flush=True)
    time.sleep(1)
'
EOF
# Issue 31: a root-only file, and two jobs of nobody's that try to make the root epilog
# quote it: a comment that forges the owner (the job then swaps its output for a link to
# the file and fails), and a job name with a line break whose first line forges the paths.
secret="$tmp/root-only.log"
printf 'starting\n0: Traceback (most recent call last):\n0: MemoryError: ROOTSECRET-%s\n' "$$" > "$secret"
chmod 600 "$secret"
printf '#!/bin/sh\necho MemoryError\nrm -f "%s"\nln -s "%s" "%s"\nexit 1\n' \
  "$jobs/forged.out" "$secret" "$jobs/forged.out" > "$jobs/forged.sbatch"
printf '#!/bin/sh\necho MemoryError\nexit 1\n' > "$jobs/newline.sbatch"
[ -n "$jobs" ] && chmod 644 "$jobs"/*
submit() { (cd "$jobs" && setpriv --reuid=nobody --regid=nogroup --clear-groups sbatch --parsable "$@" | cut -d';' -f1); }
timeout_job=$(submit timeout.sbatch)
failed_job=$(submit failed.sbatch)
healthy_job=$(submit healthy.sbatch)
forged_job=$(submit --comment "x UserId=root(0) GroupId=root(0)" --output="$jobs/forged.out" forged.sbatch)
newline_job=$(submit --job-name="x StdOut=$secret StdErr=$secret
b" --output="$jobs/newline.out" newline.sbatch)
[ -n "$timeout_job" ] && [ -n "$failed_job" ] && [ -n "$healthy_job" ] || { fail "sbatch failed"; exit 1; }
[ -n "$forged_job" ] && [ -n "$newline_job" ] || { fail "sbatch of the forged jobs failed"; exit 1; }
echo "submitted: failed $failed_job, healthy $healthy_job, timeout $timeout_job, forged $forged_job, newline $newline_job"

# Done when every job's epilog has run (slurmctld's time-limit check runs every 30 s).
for _ in $(seq 900); do
  [ -f "$tmp/epilog.times" ] && [ "$(wc -l < "$tmp/epilog.times")" -ge 5 ] && break
  sleep 0.2
done
[ -f "$tmp/epilog.times" ] && [ "$(wc -l < "$tmp/epilog.times")" -ge 5 ] || fail "the epilogs did not all run in 180 s"
echo "--- epilog stderr"; cat "$tmp/epilog.log" 2>/dev/null
echo "--- epilog times (job start end rc)"; cat "$tmp/epilog.times" 2>/dev/null
echo "--- epilog environment and the job's record then"; cat "$tmp/epilog.env" 2>/dev/null

seconds() { awk -v j="$1" '$1 == j { printf "%.3f", $3 - $2 }' "$tmp/epilog.times"; }
rc_of() { awk -v j="$1" '$1 == j { print $4 }' "$tmp/epilog.times"; }
json_get() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); p=d.get("primary") or {}; print(eval(sys.argv[2]))' "$1" "$2"; }

# The failed job.
out="$jobs/train-failed-$failed_job.out"
echo "--- $out"; cat "$out"
[ -f "$out.firstfault.json" ] || fail "no $out.firstfault.json"
[ -f "$out.firstfault.md" ] || fail "no $out.firstfault.md"
if [ -f "$out.firstfault.json" ]; then
  v=$(json_get "$out.firstfault.json" 'd["verdict"]')
  id=$(json_get "$out.firstfault.json" 'p.get("id")')
  rank=$(json_get "$out.firstfault.json" 'p.get("rank")')
  line=$(json_get "$out.firstfault.json" 'p["evidence"][0]["text"]')
  echo "failed job: verdict $v, primary $id, rank $rank, decisive: $line"
  [ "$v" = failed ] || fail "failed job: verdict $v"
  [ "$id" = python.memory.memory-error ] || fail "failed job: primary $id, not python.memory.memory-error"
  [ "$rank" = 0 ] || fail "failed job: rank $rank, not 0 (srun --label)"
  case "$line" in *MemoryError*) ;; *) fail "failed job: decisive line '$line'" ;; esac
  owner=$(stat -c %U "$out.firstfault.json")
  [ "$owner" = nobody ] || fail "the diagnosis is owned by $owner, not the job's user"
  grep -q "MemoryError" "$out.firstfault.md" || fail "the markdown does not name the MemoryError"
fi
[ "$(rc_of "$failed_job")" = 0 ] || fail "the epilog exited $(rc_of "$failed_job")"
summary=$(grep "job $failed_job: firstfault: failed:" "$tmp/epilog.log")
case "$summary" in
  *"firstfault: failed: Python MemoryError"*"rank 0"*"train-failed-$failed_job.out:"*) ;;
  *) fail "no one-line summary for the failed job in the epilog's stderr: '$summary'" ;;
esac
# AdminComment: slurmctld refuses any update to a finished job, and a job in its epilog
# is one (COMPLETING); without slurmdbd sacctmgr cannot annotate the accounting record
# either. The epilog must have tried both and said so.
if [ "$with_db" = 1 ]; then
  comment=""
  for _ in $(seq 50); do
    comment=$(sacct -j "$failed_job" -X -n -P -o AdminComment 2>/dev/null)
    [ -n "$comment" ] && break
    sleep 0.2
  done
  echo "AdminComment (sacct): $comment"
  # sacctmgr before 23.02 lowers the case of what it sets (SchedMD commit 933bf55510
  # "do not force AdminComment/Comment/SystemComment to lower-case").
  case "${comment,,}" in "firstfault: failed: python memoryerror"*"(rank 0, train-failed-$failed_job.out:"*) ;;
    *) fail "AdminComment is '$comment'" ;; esac
  case "$summary" in *"AdminComment set in the accounting database (sacctmgr)"*) ;;
    *) fail "the epilog did not say it set AdminComment" ;; esac
  hc=$(sacct -j "$healthy_job" -X -n -P -o AdminComment 2>/dev/null)
  [ -z "$hc" ] || fail "the healthy job has an AdminComment: $hc"
else
  case "$summary" in
    *"AdminComment not set: scontrol update: exit 1: Job has already finished"*"sacctmgr modify job:"*)
      echo "AdminComment: refused by slurmctld (the job had finished), as the epilog said" ;;
    *) fail "AdminComment neither set nor its refusal said" ;;
  esac
fi

# The forged jobs: nothing of the root-only file in any file of the jobs' folder nor in any
# diagnosis anywhere (beside the root-only file itself, say), and what the epilog wrote in
# the jobs' folder is nobody's.
leaked=$( (grep -rl "ROOTSECRET-$$" "$jobs"; grep -rl --include='*.firstfault.*' "ROOTSECRET-$$" "$tmp") 2>/dev/null)
[ -z "$leaked" ] || fail "the root-only file's words are in: $leaked"
for j in "$forged_job" "$newline_job"; do
  [ "$(rc_of "$j")" = 0 ] || fail "the epilog of job $j exited $(rc_of "$j")"
  echo "job $j: $(grep "job $j:" "$tmp/epilog.log" | head -3)"
done
for f in "$jobs"/*.firstfault.*; do
  [ -e "$f" ] || continue
  [ "$(stat -c %U "$f")" = nobody ] || fail "$f is owned by $(stat -c %U "$f"), not the job's user"
done

# The healthy job: nothing written, and its teardown not delayed.
hout="$jobs/train-healthy-$healthy_job.out"
grep -q "training complete" "$hout" || fail "the healthy job did not complete: $(cat "$hout")"
ls "$hout".firstfault.* >/dev/null 2>&1 && fail "the healthy job got a diagnosis"
grep -q "job $healthy_job:" "$tmp/epilog.log" && fail "the epilog said something about the healthy job"
hs=$(seconds "$healthy_job")
echo "epilog time: healthy ${hs}s, failed $(seconds "$failed_job")s, timeout $(seconds "$timeout_job")s"
awk -v s="$hs" 'BEGIN { exit !(s < 0.5) }' || fail "the healthy job's epilog took ${hs}s"
[ "$(rc_of "$healthy_job")" = 0 ] || fail "the healthy job's epilog exited $(rc_of "$healthy_job")"

# The time-limit cancel, as slurmstepd writes it.
tout="$jobs/train-timeout-$timeout_job.out"
echo "--- $tout"; cat "$tout"
grep -q "CANCELLED AT .* DUE TO TIME LIMIT" "$tout" || fail "no time-limit message in $tout"
if [ -f "$tout.firstfault.json" ]; then
  id=$(json_get "$tout.firstfault.json" 'p.get("id")')
  echo "timeout job: primary $id"
  [ "$id" = slurm.job.time-limit ] || fail "timeout job: primary $id"
else
  fail "no diagnosis for the time-limit job"
fi
state=$(sinfo -h -n localhost -o %T)
case "$state" in idle|mixed|completing) ;; *) fail "the node is $state after the epilogs (a failed Epilog drains it)" ;; esac

# `firstfault slurm JOBID` on the same job: through scontrol, or with accounting (MinJobAge=2:
# slurmctld has forgotten the job by now) through the real sacct of Slurm 22.05, which has
# no StdOut field: the sbatch line's --output, else slurm-%j.out in WorkDir.
"$ff" slurm "$failed_job" --format json > "$tmp/slurm-cmd.json" 2> "$tmp/slurm-cmd.err"
rc=$?
echo "firstfault slurm $failed_job: $(cat "$tmp/slurm-cmd.err")"
[ "$rc" = 1 ] || fail "firstfault slurm $failed_job exited $rc: $(cat "$tmp/slurm-cmd.err")"
[ "$(json_get "$tmp/slurm-cmd.json" 'p.get("id")')" = python.memory.memory-error ] || fail "firstfault slurm: $(head -c 300 "$tmp/slurm-cmd.json")"
"$ff" slurm 999999 > /dev/null 2> "$tmp/slurm-none.err"
rc=$?
[ "$rc" = 2 ] && grep -q "Invalid job id" "$tmp/slurm-none.err" || fail "firstfault slurm 999999: exit $rc, $(cat "$tmp/slurm-none.err")"

# Issue 36: the epilog kept its diagnoses in the history with the scheduler's facts, and
# Debian's node_exporter's textfile collector reads the counters it wrote.
FIRSTFAULT_NO_HISTORY=0 FIRSTFAULT_HISTORY="$tmp/history.db" "$ff" history --format json > "$tmp/history.json" 2>&1 \
  || fail "firstfault history: $(cat "$tmp/history.json")"
python3 - "$tmp/history.json" "$failed_job" "$timeout_job" <<'PY' || fail "the history lacks the epilog's rows and their facts"
import json, sys
rows = {r.get("scheduler", {}).get("job_id"): r for r in json.load(open(sys.argv[1]))}
for job, entry in ((sys.argv[2], "python.memory.memory-error"), (sys.argv[3], "slurm.job.time-limit")):
    r = rows[job]
    assert r["command"] == "slurm-epilog" and r["entry"] == entry, r
    s = r["scheduler"]
    assert s["user"] == "nobody" and s["partition"] and s["node_list"] == "localhost", s
print("history:", {j: (r["entry"], r["scheduler"]["partition"]) for j, r in rows.items()})
PY
prom="$tmp/textfile/firstfault.prom"
if [ -f "$prom" ]; then
  [ "$(stat -c %a "$prom")" = 644 ] || fail "$prom has mode $(stat -c %a "$prom")"
  grep -q '^firstfault_job_failures_total{entry="python.memory.memory-error",.*node="localhost".*} 1$' "$prom" \
    || fail "no failure counted in $prom: $(cat "$prom")"
  grep -q '^firstfault_job_failures_total{entry="slurm.job.time-limit",' "$prom" || fail "the time-limit job is not counted"
  if command -v prometheus-node-exporter >/dev/null && command -v curl >/dev/null; then
    . "$(dirname "$0")/../fleet/promlib.sh"
    start_node_exporter "$tmp/textfile" "$tmp/log/node_exporter.log" || fail "node_exporter did not answer"
    grep -q '^node_textfile_scrape_error 0' "$tmp/log/metrics.txt" || fail "node_exporter's textfile collector: $(grep textfile "$tmp/log/metrics.txt")"
    grep -q '^firstfault_job_failures_total{.*entry="python.memory.memory-error".*} 1' "$tmp/log/metrics.txt" \
      && echo "node_exporter serves the real epilog's counters" || fail "node_exporter does not serve the epilog's counters"
    # Issue 36: Prometheus scrapes that node_exporter, and PromQL (with docs/fleet-rules.yml's
    # recording rules) adds the real jobs up by node and category.
    if command -v prometheus >/dev/null; then
      mkdir -p "$tmp/prom"
      start_prometheus "$tmp/prom" "$np" "$(cd "$(dirname "$0")/../.." && pwd)" "$tmp/log/prometheus.log"
      by_node=$(prom_wait 'sum by (node, category) (firstfault_job_failures_total)')
      echo "Prometheus, failures by node and category: $by_node"
      python3 - "$by_node" <<'PY' || fail "PromQL: the real jobs' failures by node and category"
import json, sys
got = {(r["metric"]["node"], r["metric"]["category"]): float(r["value"][1]) for r in json.loads(sys.argv[1])}
assert got.get(("localhost", "host-memory")) == 1.0, got   # the MemoryError job
assert got.get(("localhost", "launcher"), 0) >= 1.0, got    # the time-limit job (slurm.job.time-limit)
PY
      rule=$(prom_wait 'node_class:firstfault_job_failures:1d{node="localhost"}')
      echo "recording rule node_class:firstfault_job_failures:1d: $rule"
      [ "$rule" != "[]" ] || fail "docs/fleet-rules.yml's recording rule has no value for the real node"
    else
      echo "note: prometheus not installed; node_exporter's page is checked, not a scrape"
    fi
  else
    echo "note: prometheus-node-exporter or curl not installed; the textfile is checked as text only"
  fi
else
  fail "the epilog wrote no $prom"
fi

if [ -n "$capture" ]; then
  mkdir -p "$capture"
  neutral() { sed -e "s|$tmp|/scratch/ff-slurm|g" "$1"; }
  neutral "$out" > "$capture/slurm_srun_label_memory_error.log"
  neutral "$tout" > "$capture/slurm_time_limit_cancel.log"
  echo "captured into $capture"
fi
echo "--- slurmd log (epilog lines)"; grep -i epilog "$tmp/log/slurmd.log" | tail -5
[ "$fails" = 0 ] && echo "PASS" || { echo "$fails check(s) failed"; exit 1; }
