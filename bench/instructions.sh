#!/usr/bin/env bash
# bench/instructions.sh — the speed gate (issue 32, item 4): the whole process's
# instructions per input byte (callgrind: start-up, KB load, scan, merge, analysis and the
# report, every thread), on a fixed 16 MB slice of the benchmark log, against the baseline
# committed in bench/instructions-baseline.txt. Fails when the count is more than 5% over
# the baseline. Instruction counts do not depend on the machine's load, so this holds on
# a busy CI runner where wall times do not.
#
#   bench/instructions.sh [BINARY]          # check against the baseline
#   bench/instructions.sh --update [BINARY] # write the measured count as the new baseline
#                                           # (commit it with the reason in the message)
#
# The slice: the first 16 MiB of `bench/genlog.py --ranks 64 --steps 100000 --seed 1`
# (cut at a line end), made under $TMPDIR; the caches are warmed by a first run.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
update=0
if [ "${1:-}" = --update ]; then update=1; shift; fi
bin="${1:-$root/build/firstfault}"
baseline_file="$root/bench/instructions-baseline.txt"
limit_pct=5
command -v valgrind >/dev/null || { echo "instructions: valgrind is missing (tools/install-deps installs it)" >&2; exit 2; }
[ -x "$bin" ] || { echo "instructions: $bin is not built" >&2; exit 2; }
work="$(mktemp -d "${TMPDIR:-/tmp}/ff-instructions.XXXXXX")"
trap 'rm -rf "$work"' EXIT
python3 "$root/bench/genlog.py" --ranks 64 --steps 100000 --seed 1 2>/dev/null | head -c 16777216 > "$work/cut.log" || true
# Drop the last, cut line.
python3 - "$work/cut.log" "$work/slice.log" <<'PY'
import sys
data = open(sys.argv[1], "rb").read()
open(sys.argv[2], "wb").write(data[: data.rfind(b"\n") + 1])
PY
bytes=$(stat -c %s "$work/slice.log")
export FIRSTFAULT_CACHE_DIR="$work/cache" FIRSTFAULT_NO_HISTORY=1
# Warm the caches under valgrind itself: Vectorscan compiles its databases for the CPU it
# sees, and valgrind's emulated CPU is not the machine's, so a native warm-up would leave
# the measured run compiling them again (a start-up the cache spares every real run: 97%
# of the count without this).
valgrind --tool=none "$bin" diagnose --threads 1 --format json "$work/slice.log" >/dev/null 2>&1 || true
valgrind --tool=callgrind --callgrind-out-file="$work/cg.out" \
  "$bin" diagnose --threads 1 --format json "$work/slice.log" >/dev/null 2>"$work/valgrind.err" || true
total=$(sed -n 's/^summary: *\([0-9]*\).*/\1/p' "$work/cg.out" | head -1)
[ -n "$total" ] || { echo "instructions: callgrind gave no total" >&2; cat "$work/valgrind.err" >&2; exit 2; }
per_byte=$(python3 -c "print(f'{$total / $bytes:.3f}')")
echo "instructions: $total for $bytes bytes: $per_byte per byte"
if [ "$update" = 1 ]; then
  printf '# instructions per input byte of `bench/instructions.sh` (whole process, 16 MiB slice)\n%s\n' "$per_byte" > "$baseline_file"
  echo "instructions: baseline written to $baseline_file"
  exit 0
fi
base=$(grep -v '^#' "$baseline_file" | head -1)
python3 - "$per_byte" "$base" "$limit_pct" <<'PY'
import sys
now, base, limit = float(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
change = (now / base - 1) * 100
print(f"instructions: baseline {base:.3f} per byte, now {now:.3f} ({change:+.1f}%, limit +{limit:.0f}%)")
sys.exit(1 if change > limit else 0)
PY
