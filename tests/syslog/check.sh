#!/usr/bin/env bash
# Logs that went through the systems that keep them (issue "Where the jobs run"):
#  1. a real rsyslogd (Debian's package) on a loopback TCP port, fed a real corpus run's
#     log line by line by util-linux `logger`, writing the traditional (RFC 3164), the
#     high-precision and the RFC 5424 file formats: each file gives the original's
#     diagnosis (verdict, entry, rank, decisive text and line);
#  2. the same log as systemd journal entries (host, unit, pid), made into a real journal
#     file by systemd-journal-remote and read back by journalctl -o export and -o json:
#     the same diagnosis;
#  3. two hosts' runs interleaved in one journal: --host and --unit pick each run out.
# Usage: tests/syslog/check.sh path/to/firstfault SOURCE_DIR. Exit 0 pass, 1 fail, 77
# skipped (rsyslogd, logger, journalctl or systemd-journal-remote missing: tools/install-deps).
set -uo pipefail
bin="$1"; src="$2"
for tool in rsyslogd logger journalctl python3; do
  command -v "$tool" >/dev/null || { echo "SKIP: $tool is missing (tools/install-deps installs it)"; exit 77; }
done
remote=/lib/systemd/systemd-journal-remote
[ -x "$remote" ] || { echo "SKIP: $remote is missing (package systemd-journal-remote)"; exit 77; }
corpus="$src/../shared/corpus/pytorch-runs/cases"
failed_log="$corpus/01_rank_exception__rankprefix.log"
# The corpus lives beside the checkout (README); a clone without it skips, as the other
# corpus tests do.
[ -f "$failed_log" ] || { echo "SKIP: no corpus at $failed_log"; exit 77; }
healthy_log="$corpus/09_healthy.log"
tmp="$(mktemp -d)"
pid=""
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
export FIRSTFAULT_CACHE_DIR="${FIRSTFAULT_CACHE_DIR:-$tmp/cache}"
fails=0
check() { if [ "$1" = 0 ]; then echo "ok   $2"; else echo "FAIL $2"; fails=$((fails + 1)); fi; }

# What the comparison looks at: verdict, entry, rank, decisive text (and its line, with
# "line" as the 2nd argument: a file with one line per line of the original).
summary() {
  "$bin" diagnose --format json "${@:3}" "$1" 2>/dev/null | python3 -c '
import json, sys
d = json.load(sys.stdin); p = d.get("primary") or {}; ev = (p.get("evidence") or [{}])[0]
keep_line = sys.argv[1] == "line"
print(d["verdict"], p.get("id"), p.get("rank"), repr(ev.get("text")), ev.get("line") if keep_line else "")' "$2"
}
want_line="$(summary "$failed_log" line)"
want="$(summary "$failed_log" noline)"
echo "original: $want_line"

# --- 1. rsyslog ----------------------------------------------------------------------
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
cat > "$tmp/rsyslog.conf" <<CONF
global(workDirectory="$tmp" maxMessageSize="64k" parser.escapeControlCharactersOnReceive="off")
module(load="imtcp")
input(type="imtcp" address="127.0.0.1" port="$port")
*.* action(type="omfile" file="$tmp/traditional.log" template="RSYSLOG_TraditionalFileFormat")
*.* action(type="omfile" file="$tmp/precise.log" template="RSYSLOG_FileFormat")
*.* action(type="omfile" file="$tmp/rfc5424.log" template="RSYSLOG_SyslogProtocol23Format")
CONF
rsyslogd -n -f "$tmp/rsyslog.conf" -i "$tmp/rsyslogd.pid" > "$tmp/rsyslogd.out" 2>&1 &
pid=$!
for _ in $(seq 50); do python3 -c "import socket; socket.create_connection(('127.0.0.1', $port), 0.2)" 2>/dev/null && break; sleep 0.1; done
lines="$(wc -l < "$failed_log")"
logger --tcp -n 127.0.0.1 -P "$port" -t train --id=4242 --size 65536 -f "$failed_log"
for f in traditional precise rfc5424; do
  for _ in $(seq 100); do [ "$(wc -l < "$tmp/$f.log" 2>/dev/null || echo 0)" -ge "$lines" ] && break; sleep 0.1; done
done
kill "$pid"; wait "$pid" 2>/dev/null; pid=""
for f in traditional precise rfc5424; do
  got_lines="$(wc -l < "$tmp/$f.log")"
  head -c 300 "$tmp/$f.log" | head -1 | sed "s/^/  $f: /"
  if [ "$got_lines" = "$lines" ]; then got="$(summary "$tmp/$f.log" line)"; ref="$want_line"; else got="$(summary "$tmp/$f.log" noline)"; ref="$want"; fi
  [ "$got" = "$ref" ]; check $? "rsyslog $f file ($got_lines of $lines lines): $got"
done

# --- 2. journald -----------------------------------------------------------------------
# Journal entries for a log: one per line, as journald stores a service's output.
to_export() {  # LOG HOST UNIT PID START_US STEP_US
  python3 - "$@" <<'PY'
import sys
log, host, unit, pid, t0, step = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]), int(sys.argv[6])
out = sys.stdout.buffer
for i, line in enumerate(open(log, 'rb').read().split(b'\n')[:-1]):
    out.write(b'__REALTIME_TIMESTAMP=%d\n__MONOTONIC_TIMESTAMP=%d\n_BOOT_ID=0123456789abcdef0123456789abcdef\n' % (t0 + i * step, 1000 + i * step))
    out.write(b'_HOSTNAME=%s\nSYSLOG_IDENTIFIER=python3\n_SYSTEMD_UNIT=%s\n_PID=%s\n' % (host.encode(), unit.encode(), pid.encode()))
    out.write(b'MESSAGE\n' + len(line).to_bytes(8, 'little') + line + b'\n\n')
PY
}
to_export "$failed_log" gpu-node-7 train.service 4242 1764500000000000 1000 > "$tmp/one.export"
"$remote" -o "$tmp/one.journal" "$tmp/one.export" >/dev/null 2>&1
journalctl --file "$tmp/one.journal" -o export > "$tmp/journal.export"
journalctl --file "$tmp/one.journal" -o json > "$tmp/journal.json"
for f in journal.export journal.json; do
  got="$(summary "$tmp/$f" line)"
  [ "$got" = "$want_line" ]; check $? "journalctl -o ${f#journal.}: $got"
done
node="$("$bin" diagnose --format json "$tmp/journal.json" 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["primary"]["node"])')"
[ "$node" = gpu-node-7 ]; check $? "the journal's host is the node ($node)"

# --- 3. one shared stream, two runs ------------------------------------------------------
to_export "$failed_log" gpu-node-7 train.service 4242 1764500000000000 2000 > "$tmp/a.export"
to_export "$healthy_log" gpu-node-9.cluster.example eval.service 777 1764500000001000 2000 > "$tmp/b.export"
"$remote" -o "$tmp/both.journal" "$tmp/a.export" "$tmp/b.export" >/dev/null 2>&1
journalctl --file "$tmp/both.journal" -o json > "$tmp/both.json"
mixed="$(summary "$tmp/both.json" noline)"
only_b="$(summary "$tmp/both.json" noline --host gpu-node-9)"
want_b="$(summary "$healthy_log" noline)"
[ "$only_b" = "$want_b" ]; check $? "--host gpu-node-9 (the FQDN in the journal) gives the healthy run's answer: $only_b"
only_a="$(summary "$tmp/both.json" noline --unit train)"
[ "$only_a" = "$want" ]; check $? "--unit train gives the failed run's answer: $only_a"
note="$("$bin" diagnose --format json --host gpu-node-9 "$tmp/both.json" 2>/dev/null | python3 -c 'import json,sys; print([n for n in json.load(sys.stdin)["inputs"]["notes"] if "left out" in n])')"
case "$note" in *"lines of other hosts"*) check 0 "the lines left out are counted: $note" ;; *) check 1 "the lines left out are counted: $note" ;; esac
echo "mixed stream without a filter: $mixed"

[ "$fails" = 0 ] && { echo "all checks passed"; exit 0; }
echo "$fails check(s) failed"; exit 1
