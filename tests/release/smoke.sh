#!/bin/sh
# smoke.sh BINARY DIR: the portable binary's smoke tests, run where it is to be trusted
# (inside the Debian 11 root: tests/release/older-glibc.sh; under qemu for arm64). DIR
# holds the inputs the caller copied in: job.log (a real log that failed), kb-bad/ (a
# knowledge base whose YAML does not parse). Needs sh and curl. Exits 1 on the first failure.
#  1. -V lists serve and --metrics, and says the build is portable;
#  2. diagnose a real log: exit 1, a FAILED verdict;
#  3. kb check: the embedded knowledge base passes;
#  4. C++ exceptions unwind through the binary: a bad option (CLI11 throws, main catches:
#     exit 2 with a message, not an abort) and a --kb folder whose YAML yaml-cpp rejects
#     (thrown inside libyaml-cpp.a, caught by the loader: an error naming the file);
#  5. serve answers on 127.0.0.1 (/healthz, then a log POSTed to /api/diagnose);
#  6. watch --metrics: Prometheus's text format scraped from 127.0.0.1.
set -u
bin=$1
dir=$2
say() { echo "smoke: $*"; }
die() { echo "smoke: FAILED: $*" >&2; [ -n "${pid:-}" ] && kill "$pid" 2>/dev/null; exit 1; }
export FIRSTFAULT_CACHE_DIR="$dir/cache" FIRSTFAULT_NO_HISTORY=1 NO_COLOR=1
say "${FF_SMOKE_LIBC:-$(ldd --version 2>&1 | head -1)}"

v=$("$bin" -V) || die "-V: exit $?"
printf '%s\n' "$v" | grep -q '^includes: .*serve' || die "-V does not list serve: $v"
printf '%s\n' "$v" | grep -q '^includes: .*, --metrics' || die "-V does not list --metrics: $v"
printf '%s\n' "$v" | grep -q '^build: .*, portable' || die "-V does not say portable: $v"
say "-V: $(printf '%s\n' "$v" | grep '^includes:'); $(printf '%s\n' "$v" | grep '^build:')"

out=$("$bin" diagnose --color never "$dir/job.log"); rc=$?
[ "$rc" -eq 1 ] || die "diagnose: exit $rc, expected 1"
printf '%s\n' "$out" | grep -q '^FAILED' || die "diagnose: no FAILED verdict"
say "diagnose: $(printf '%s\n' "$out" | grep -m1 '^FAILED')"

out=$("$bin" kb check 2>&1); rc=$?
[ "$rc" -eq 0 ] || die "kb check: exit $rc: $(printf '%s\n' "$out" | tail -3)"
say "kb check: $(printf '%s\n' "$out" | tail -1)"

out=$("$bin" diagnose --no-such-option 2>&1); rc=$?
[ "$rc" -eq 2 ] || die "a bad option: exit $rc, expected 2 (an exception not caught?): $out"
out=$("$bin" --kb "$dir/kb-bad" kb check 2>&1); rc=$?
[ "$rc" -ne 0 ] && [ "$rc" -lt 128 ] || die "a KB that does not parse: exit $rc: $out"
printf '%s\n' "$out" | grep -q 'bad.yaml' || die "a KB that does not parse: the file is not named: $out"
say "exceptions: a bad option (exit 2) and yaml-cpp's parse error (exit $rc) caught"

# serve on a free port, read from its first line.
"$bin" serve --port 0 >"$dir/serve.out" 2>&1 &
pid=$!
url=""
for _ in $(seq 1 100); do
  url=$(sed -n 's|^firstfault serve: \(http://127.0.0.1:[0-9]*/\).*|\1|p' "$dir/serve.out")
  [ -n "$url" ] && break
  kill -0 "$pid" 2>/dev/null || die "serve exited: $(cat "$dir/serve.out")"
  sleep 0.1
done
[ -n "$url" ] || die "serve printed no address: $(cat "$dir/serve.out")"
curl -fsS "${url}healthz" >/dev/null || die "serve: GET /healthz"
answer=$(curl -fsS -H 'Content-Type: text/plain' --data-binary @"$dir/job.log" "${url}api/diagnose") \
  || die "serve: POST /api/diagnose"
printf '%s' "$answer" | grep -q '"verdict"' || die "serve: no verdict in the answer: $(printf '%s' "$answer" | head -c 300)"
kill "$pid"; wait "$pid" 2>/dev/null; pid=""
say "serve: ${url} answered /healthz and diagnosed a POSTed log"

# watch --metrics on a free port: the address is on stderr.
"$bin" watch "$dir/job.log" --metrics 127.0.0.1:0 --idle-exit 60s >/dev/null 2>"$dir/watch.err" &
pid=$!
murl=""
for _ in $(seq 1 100); do
  murl=$(sed -n 's|^firstfault: metrics on \(http://127.0.0.1:[0-9]*/metrics\).*|\1|p' "$dir/watch.err")
  [ -n "$murl" ] && break
  kill -0 "$pid" 2>/dev/null || die "watch exited: $(cat "$dir/watch.err")"
  sleep 0.1
done
[ -n "$murl" ] || die "watch printed no metrics address: $(cat "$dir/watch.err")"
metrics=""
for _ in $(seq 1 50); do
  metrics=$(curl -fsS "$murl") && printf '%s\n' "$metrics" | grep -q '^firstfault_lines_read_total [1-9]' && break
  sleep 0.2
done
printf '%s\n' "$metrics" | grep -q '^firstfault_lines_read_total [1-9]' || die "--metrics: no lines read in $murl: $(printf '%s\n' "$metrics" | head -5)"
kill "$pid"; wait "$pid" 2>/dev/null; pid=""
say "--metrics: $murl: $(printf '%s\n' "$metrics" | grep '^firstfault_lines_read_total')"
say "all passed"
