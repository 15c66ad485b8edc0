#!/usr/bin/env bash
# bench/run.sh — issue 6's measurements, in one run on the same files:
#   wc -l, rg -c -F -f bench/literals.txt, firstfault diagnose (1 thread and one per core),
#   a .gz input against `zcat | firstfault diagnose -`, a 10-line input (cold process),
#   peak RSS; prints GB/s and the ratios (to rg and to wc -l) and writes them to a CSV.
#
#   bench/run.sh                 # 1 GiB and 4 GiB 64-rank logs (made once, cached)
#   BENCH_SIZES=1G bench/run.sh  # only 1 GiB
#   FIRSTFAULT=path/to/firstfault BENCH_RUNS=5 bench/run.sh
#
# The logs are made by bench/genlog.py into ${XDG_CACHE_HOME:-~/.cache}/firstfault-bench
# (never into the repository) and reused. Timings are the best of BENCH_RUNS runs with
# the file in the page cache; this machine's other load shows up as noise (±15-25%).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bin="${FIRSTFAULT:-$root/build/firstfault}"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/firstfault-bench"
sizes="${BENCH_SIZES:-1G 4G}"
runs="${BENCH_RUNS:-3}"
threads="$(nproc)"
mkdir -p "$cache"

if [ ! -x "$bin" ]; then
  echo "bench: building $bin (make build)" >&2
  make -C "$root" build >/dev/null
fi
for tool in rg python3 zcat gzip; do
  command -v "$tool" >/dev/null || { echo "bench: $tool is missing (tools/install-deps installs it)" >&2; exit 2; }
done

# Wall time (s) and peak RSS (KiB, the largest process of the command) of one command,
# measured by a fresh python process.
measure() {
  python3 - "$@" <<'PY'
import resource, subprocess, sys, time
t = time.perf_counter()
subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
wall = time.perf_counter() - t
print(f"{wall:.4f} {resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}")
PY
}

# Best wall time of $runs runs; RSS of that run.
best() {
  local best_t="" best_m=""
  for _ in $(seq "$runs"); do
    read -r t m < <(measure "$@")
    if [ -z "$best_t" ] || python3 -c "import sys; sys.exit(0 if $t < $best_t else 1)"; then best_t=$t; best_m=$m; fi
  done
  echo "$best_t $best_m"
}

"$bin" kb literals > "$root/bench/literals.txt"
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), $(free -g | awk '/Mem:/{print $2}') GiB RAM; $(date -u +%Y-%m-%d)"
echo "firstfault: $bin; literals: $(wc -l < "$root/bench/literals.txt") (bench/literals.txt)"
csv="$cache/results-$(date -u +%Y%m%d-%H%M%S).csv"
echo "size,what,seconds,gb_per_s,rss_mib" > "$csv"

for size in $sizes; do
  log="$cache/r64-$size.log"
  if [ ! -s "$log" ]; then
    need=$(python3 -c "s='$size'; m={'K':1<<10,'M':1<<20,'G':1<<30}; print(int(float(s[:-1])*m[s[-1]]*1.6) if s[-1] in m else int(s))")
    avail=$(df -B1 --output=avail "$cache" | tail -1)
    if [ "$avail" -lt "$need" ]; then echo "bench: not enough disk for $size in $cache" >&2; continue; fi
    echo "bench: making $log (bench/genlog.py --ranks 64 --size $size --seed 1)" >&2
    python3 "$root/bench/genlog.py" --ranks 64 --size "$size" --seed 1 > "$log.tmp" 2>/dev/null
    mv "$log.tmp" "$log"
  fi
  bytes=$(stat -c %s "$log")
  cat "$log" > /dev/null  # page cache warm
  echo
  echo "== $size 64-rank log: $log ($bytes bytes)"
  declare -A T M
  run() {  # name, command...
    local name=$1 t m; shift
    read -r t m < <(best "$@")
    T["$name"]=$t
    M["$name"]=$m
    python3 -c "b=$bytes; t=$t; m=$m; print(f'  {\"$name\":<34} {t:7.3f} s  {b/t/1e9:6.2f} GB/s  {m/1024:7.1f} MiB')"
    echo "$size,$name,$t,$(python3 -c "print(f'{$bytes/$t/1e9:.3f}')"),$(python3 -c "print(f'{$m/1024:.1f}')")" >> "$csv"
  }
  run "wc -l" wc -l "$log"
  run "rg -c -F -f literals" rg -c -F -f "$root/bench/literals.txt" "$log"
  run "firstfault --threads 1" "$bin" diagnose --threads 1 "$log"
  run "firstfault --threads $threads" "$bin" diagnose --threads "$threads" "$log"
  if [ "$size" = "$(echo "$sizes" | awk '{print $1}')" ]; then
    if [ ! -s "$log.gz" ]; then echo "bench: making $log.gz" >&2; gzip -1 -c "$log" > "$log.gz.tmp" && mv "$log.gz.tmp" "$log.gz"; fi
    cat "$log.gz" > /dev/null
    run "firstfault FILE.gz" "$bin" diagnose "$log.gz"
    run "zcat FILE.gz | firstfault -" sh -c "zcat '$log.gz' | '$bin' diagnose -"
  fi
  ff=${T["firstfault --threads $threads"]}
  python3 - <<PY
rg, wc, ff, ff1 = ${T["rg -c -F -f literals"]}, ${T["wc -l"]}, $ff, ${T["firstfault --threads 1"]}
print(f"  ratios: rg / firstfault = {rg/ff:.2f}x (target >= 2, aim 4); wc -l / firstfault = {wc/ff:.2f} (aim >= 0.5);"
      f" {ff1/ff:.2f}x from 1 to $threads threads")
PY
  if [ -n "${T["firstfault FILE.gz"]:-}" ]; then
    python3 -c "g=${T["firstfault FILE.gz"]}; z=${T["zcat FILE.gz | firstfault -"]}; print(f'  .gz: {g:.3f} s, zcat | firstfault -: {z:.3f} s ({\"no slower\" if g <= z*1.05 else \"SLOWER\"})')"
  fi
  unset T M
done

# A 10-line paste, a fresh process each time: the median of 20.
small="$cache/ten-lines.log"
head -10 "$cache/r64-$(echo "$sizes" | awk '{print $1}').log" > "$small" 2>/dev/null || python3 "$root/bench/genlog.py" --ranks 2 --steps 2 2>/dev/null | head -10 > "$small"
"$bin" diagnose "$small" >/dev/null 2>&1 || true  # the compiled-pattern cache is made once
python3 - "$bin" "$small" <<'PY'
import subprocess, sys, time, statistics
ts = []
for _ in range(20):
    t = time.perf_counter()
    subprocess.run([sys.argv[1], "diagnose", sys.argv[2]], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    ts.append(time.perf_counter() - t)
print(f"\n== 10-line input, cold process: median {statistics.median(ts)*1000:.1f} ms, best {min(ts)*1000:.1f} ms (target <= 10 ms)")
PY
echo "results: $csv"
