#!/usr/bin/env bash
# Writes the logs in tests/data/real/ again, by running the programs here for real
# (Debian's python3, python3-rich, g++, ninja; nvcc for the CUDA one). The programs run in
# /tmp/<name>, so the paths in the logs are the same on every machine.
#   tests/data/real/programs/make-logs.sh
set -u
here="$(cd "$(dirname "$0")" && pwd)"
out="$here/.."
run_in() {  # run_in DIR LOG COMMAND...: copy DIR's programs (and build_extension.py, which
            # runs ninja as torch.utils.cpp_extension does) to /tmp/DIR, run there
  local dir=$1 log=$2
  shift 2
  rm -rf "/tmp/$dir" && mkdir -p "/tmp/$dir" && cp -r "$here/$dir/." "/tmp/$dir/" 2>/dev/null
  cp "$here/build_extension.py" "/tmp/$dir/"
  (cd "/tmp/$dir" && "$@") > "$out/$log" 2>&1
}
run_in fused_ops build_missing_header__ninja.log /usr/bin/python3 build_extension.py fused_ops
run_in flash_kernels build_nvcc_arch__ninja.log /usr/bin/python3 build_extension.py flash_kernels
mkdir -p /tmp/train_job && cp "$here"/*.py /tmp/train_job/
(cd /tmp/train_job && COLUMNS=100 TERM=dumb /usr/bin/python3 train.py) > "$out/rich_traceback.log" 2>&1
(cd /tmp/train_job && /usr/bin/python3 resolve.py) > "$out/name_resolution.log" 2>&1
for s in crash:segfault killed:killed abort:aborted; do
  printf '#!/bin/bash\n/usr/bin/python3 %s.py\n' "${s%%:*}" > /tmp/train_job/run.sh
  chmod +x /tmp/train_job/run.sh
  (cd /tmp/train_job && ./run.sh) > "$out/shell_${s##*:}.log" 2>&1
done
# Tolerant framing and ranks from the text (Debian's python3-torch, python3-tqdm, pdsh):
# tqdm's bar with a DataLoader worker's segfault report glued to it, a
# torch.multiprocessing.spawn job whose process 1 raises, and a two-host pdsh launch.
(cd /tmp/train_job && /usr/bin/python3 loader_segv.py) > "$out/tqdm_glued_worker_segfault.log" 2>&1
(cd /tmp/train_job && /usr/bin/python3 spawn_raise.py) > "$out/mp_spawn_process_raised.log" 2>&1
cp "$here/pdsh_job.sh" /tmp/train_job/ && (cd /tmp/train_job && ./pdsh_job.sh) > "$out/pdsh_two_hosts_rank_raised.log" 2>&1
echo "logs written to $out"
# slurm_srun_label_memory_error.log and slurm_time_limit_cancel.log: written by the real
# slurmctld/slurmd test (needs slurm-wlm, munge and root), its temp folder as /scratch/ff-slurm:
#   tests/slurm/run.sh build/firstfault tests/data/real
