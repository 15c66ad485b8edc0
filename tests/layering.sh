#!/usr/bin/env bash
# The layering check (tools/check-layering) passes on the tree, and fails on a planted
# include that crosses ARCHITECTURE.md's table: record reaching up into scan, and analyze
# using a record header other than event.h.
set -euo pipefail
root=$1
"$root/tools/check-layering" "$root"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
plant() {  # plant FILE LINE EXPECTED-MESSAGE
  rm -rf "$tmp/copy"; mkdir -p "$tmp/copy/tools"
  cp -r "$root/src" "$root/ARCHITECTURE.md" "$tmp/copy/"
  cp "$root/tools/check-layering" "$tmp/copy/tools/"
  printf '%s\n' "$2" >> "$tmp/copy/$1"
  if "$tmp/copy/tools/check-layering" "$tmp/copy" 2>"$tmp/err" >/dev/null; then
    echo "FAIL: the planted '$2' in $1 was not reported"; exit 1
  fi
  grep -qF "$3" "$tmp/err" || { echo "FAIL: expected '$3' in:"; cat "$tmp/err"; exit 1; }
  echo "ok: planted '$2' in $1 is reported: $(head -1 "$tmp/err")"
}
plant src/record/event.cc '#include "scan/scan.h"' 'record includes scan/scan.h'
plant src/analyze/rules.cc '#include "record/record.h"' 'of record, not record.h'
plant src/fleet/fleet.report.cc '#include "analyze/diagnosis.h"' 'fleet includes analyze/diagnosis.h'
