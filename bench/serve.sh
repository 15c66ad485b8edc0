#!/usr/bin/env bash
# Load benchmark of `firstfault serve` on loopback with Debian's wrk: CONNECTIONS clients
# (default 50) POST a 1 MB real log (the corpus's rank-exception run, repeated) to
# /api/diagnose for SECONDS (default 20); prints wrk's figures, the answers that were not
# the CLI's verdict, and the server's peak RSS. Targets in BENCHMARKS.md.
#   bench/serve.sh [SECONDS] [CONNECTIONS]     FIRSTFAULT=path/to/firstfault picks the binary
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bin="${FIRSTFAULT:-$root/build/firstfault}"
seconds="${1:-20}"
conns="${2:-50}"
command -v wrk >/dev/null || { echo "bench/serve.sh: needs wrk (apt-get install wrk; tools/install-deps adds it)" >&2; exit 2; }
tmp="$(mktemp -d)"
trap 'kill "$pid" 2>/dev/null || true; rm -rf "$tmp"' EXIT
one="$root/../shared/corpus/pytorch-runs/cases/01_rank_exception__rankprefix.log"
[ -f "$one" ] || one="$root/tests/data/01_rank_exception__rankprefix.log"
while [ "$(stat -c %s "$tmp/log" 2>/dev/null || echo 0)" -lt 1048576 ]; do cat "$one" >> "$tmp/log"; done
verdict="$("$bin" diagnose --format json "$tmp/log" | python3 -c 'import json,sys; print(json.load(sys.stdin)["verdict"])')" || true
"$bin" serve --port 0 --queue 256 > "$tmp/out" 2>&1 &
pid=$!
for _ in $(seq 100); do grep -q http "$tmp/out" 2>/dev/null && break; sleep 0.1; done
url="$(grep -o 'http://[^ ]*' "$tmp/out")"
echo "firstfault serve at $url; $(stat -c %s "$tmp/log") byte log, CLI verdict: $verdict; $conns connections for $seconds s"
FF_BENCH_LOG="$tmp/log" FF_BENCH_VERDICT="$verdict" wrk -t2 -c"$conns" -d"${seconds}s" --timeout 60s --latency \
  -s "$root/bench/serve-post.lua" "${url}api/diagnose"
echo "server peak RSS: $(awk '/VmHWM/ {printf "%.0f MiB", $2/1024}' /proc/$pid/status)"
