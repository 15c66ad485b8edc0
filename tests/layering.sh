#!/usr/bin/env bash
# The layering check (tools/check-layering) passes on the tree, and fails on a planted
# include that crosses ARCHITECTURE.md's table: record reaching up into scan, analyze
# using a record header other than event.h; and for each module split out of app (issue 37),
# a module below it reaching up into it, and it reaching up into app or across into
# another surface.
set -euo pipefail
root=$1
"$root/tools/check-layering" "$root"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
plant() {  # plant FILE LINE EXPECTED-MESSAGE
  rm -rf "$tmp/copy"; mkdir -p "$tmp/copy/tools"
  cp -r "$root/src" "$root/ARCHITECTURE.md" "$tmp/copy/"
  cp "$root/tools/check-layering" "$tmp/copy/tools/"
  printf '\n%s\n' "$2" >> "$tmp/copy/$1"  # on a line of its own, whatever the file ends with
  if "$tmp/copy/tools/check-layering" "$tmp/copy" 2>"$tmp/err" >/dev/null; then
    echo "FAIL: the planted '$2' in $1 was not reported"; exit 1
  fi
  grep -qF "$3" "$tmp/err" || { echo "FAIL: expected '$3' in:"; cat "$tmp/err"; exit 1; }
  echo "ok: planted '$2' in $1 is reported: $(head -1 "$tmp/err")"
}
plant src/record/event.cc '#include "scan/scan.h"' 'record includes scan/scan.h'
plant src/analyze/rules.cc '#include "record/record.h"' 'of record, not record.h'
plant src/fleet/fleet.report.cc '#include "analyze/diagnosis.h"' 'fleet includes analyze/diagnosis.h'
# Into each module split out of app, from below; and out of it, upwards or sideways.
plant src/analyze/analyze.cc '#include "history/history.h"' 'analyze includes history/history.h'
plant src/history/history.cc '#include "app/commands.h"' 'history includes app/commands.h'
plant src/history/history.cc '#include "pipeline/pipeline.h"' 'history includes pipeline/pipeline.h'
plant src/pipeline/pipeline.cc '#include "app/commands.h"' 'pipeline includes app/commands.h'
plant src/kb/kb.load.cc '#include "kb_check/kb_check.h"' 'kb includes kb_check/kb_check.h'
plant src/kb_check/kb_check.cc '#include "pipeline/pipeline.h"' 'kb_check includes pipeline/pipeline.h'
plant src/pipeline/pipeline.diagnose.cc '#include "watch/live.h"' 'pipeline includes watch/live.h'
plant src/watch/live.cc '#include "app/commands.h"' 'watch includes app/commands.h'
plant src/pipeline/pipeline.cc '#include "lsp/lsp.h"' 'pipeline includes lsp/lsp.h'
plant src/lsp/lsp.hover.cc '#include "app/commands.h"' 'lsp includes app/commands.h'
plant src/lsp/lsp.documents.cc '#include "watch/live.h"' 'lsp includes watch/live.h'
plant src/history/history.cc '#include "schedulers/schedulers.h"' 'history includes schedulers/schedulers.h'
plant src/schedulers/schedulers.k8s.cc '#include "app/commands.h"' 'schedulers includes app/commands.h'
plant src/kb_check/kb_check.cc '#include "controls/controls.h"' 'kb_check includes controls/controls.h'
plant src/controls/controls.cc '#include "lsp/lsp.h"' 'controls includes lsp/lsp.h'
plant src/pipeline/redaction.cc '#include "bundle/bundle.h"' 'pipeline includes bundle/bundle.h'
plant src/bundle/bundle.cc '#include "app/commands.h"' 'bundle includes app/commands.h'
plant src/base/strings.cc '#include "shell/shell.h"' 'base includes shell/shell.h'
plant src/shell/shell.cc '#include "pipeline/pipeline.h"' 'shell includes pipeline/pipeline.h'
