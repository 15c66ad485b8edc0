#!/usr/bin/env bash
# bench/fleet.sh — issue 36's targets for `firstfault report`: 10,000 job diagnoses in under
# a minute with a peak RSS under 200 MiB, here (2 cores). And that memory stays bounded:
# the same report over 10x the jobs (BENCH_FLEET_JOBS=100000) keeps about the same RSS.
#
#   bench/fleet.sh                          # 10,000 jobs (made once, cached)
#   BENCH_FLEET_JOBS=100000 bench/fleet.sh
#   FIRSTFAULT=path/to/firstfault bench/fleet.sh
#   BENCH_FLEET_REPEAT=10 bench/fleet.sh    # then once more with the folder named 10 times:
#                                           # 100,000 diagnoses read, the same bounded memory
#
# The fleet is made by tests/gen/fleet.py from the corpus's real logs into
# ${XDG_CACHE_HOME:-~/.cache}/firstfault-bench/fleet-N (never into the repository) and
# reused; the report runs with the files in the page cache (a first run reads them once),
# best of BENCH_RUNS, and GNU time's maximum resident set size is its peak RSS.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bin="${FIRSTFAULT:-$root/build/firstfault}"
jobs="${BENCH_FLEET_JOBS:-10000}"
runs="${BENCH_RUNS:-3}"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/firstfault-bench/fleet-$jobs"
[ -x "$bin" ] || { echo "bench: no $bin (build it first)" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "bench: GNU time (/usr/bin/time) is missing" >&2; exit 2; }
if [ ! -f "$cache/expect.json" ]; then
  echo "bench: making $jobs job folders in $cache" >&2
  rm -rf "$cache"; mkdir -p "$cache"
  python3 "$root/tests/gen/fleet.py" "$cache" --firstfault "$bin" --jobs "$jobs" > "$cache/expect.json.tmp"
  mv "$cache/expect.json.tmp" "$cache/expect.json"
fi
json_bytes=$(find "$cache/jobs" -name '*.firstfault.json' -printf '%s\n' | awk '{s+=$1} END {print s}')
"$bin" report "$cache/jobs" -f json -o "$cache/warm.json" 2>/dev/null  # warm the page cache
best=""; rss=0
for _ in $(seq "$runs"); do
  /usr/bin/time -f '%e %M' -o "$cache/time.txt" "$bin" report "$cache/jobs" --since 2026-10-29 \
    --compare-to 2026-10-01..2026-10-29 -f html -o "$cache/fleet.html" 2>/dev/null
  read -r secs kb < "$cache/time.txt"
  if [ -z "$best" ] || awk "BEGIN{exit !($secs < $best)}"; then best=$secs; fi
  [ "$kb" -gt "$rss" ] && rss=$kb
done
mib=$(awk "BEGIN{printf \"%.1f\", $rss/1024}")
echo "report over $jobs jobs ($(awk "BEGIN{printf \"%.0f\", $json_bytes/1048576}") MiB of diagnoses): best ${best} s of $runs, peak RSS ${mib} MiB"
if [ "$jobs" = 10000 ]; then
  awk "BEGIN{exit !($best < 60)}" && echo "target: under 60 s: met" || echo "target: under 60 s: MISSED"
  awk "BEGIN{exit !($mib < 200)}" && echo "target: under 200 MiB: met" || echo "target: under 200 MiB: MISSED"
fi
repeat="${BENCH_FLEET_REPEAT:-1}"
if [ "$repeat" -gt 1 ]; then
  args=(); for _ in $(seq "$repeat"); do args+=("$cache/jobs"); done
  /usr/bin/time -f '%e %M' -o "$cache/time.txt" "$bin" report "${args[@]}" -f html -o "$cache/fleet.html" 2>/dev/null
  read -r secs kb < "$cache/time.txt"
  echo "report over $((jobs * repeat)) diagnoses (the folder named $repeat times): ${secs} s, peak RSS $(awk "BEGIN{printf \"%.1f\", $kb/1024}") MiB"
fi
