#!/usr/bin/env bash
# The function-size check (tools/check-function-size) passes on the tree, and fails on a
# planted function of 81 lines, on one of 81 lines whose body hides braces in strings and
# comments, and on an allow-list entry that names no long function; a planted function of
# 80 lines passes.
set -euo pipefail
root=$1
"$root/tools/check-function-size" "$root"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
copy() {
  rm -rf "$tmp/copy"; mkdir -p "$tmp/copy/tools"
  cp -r "$root/src" "$tmp/copy/"
  cp "$root/tools/check-function-size" "$root/tools/function-size-allow.txt" "$tmp/copy/tools/"
}
long_function() {  # long_function NAME LINES: a function of LINES lines, braces included
  printf '\nint %s(int x) {\n' "$1"
  for ((i = 0; i < $2 - 3; ++i)); do printf '  x += %d;\n' "$i"; done
  printf '  return x;\n}\n'
}
expect_fail() {  # expect_fail WHAT EXPECTED-MESSAGE
  if "$tmp/copy/tools/check-function-size" "$tmp/copy" 2>"$tmp/err" >/dev/null; then
    echo "FAIL: $1 was not reported"; exit 1
  fi
  grep -qF "$2" "$tmp/err" || { echo "FAIL: expected '$2' in:"; cat "$tmp/err"; exit 1; }
  echo "ok: $1 is reported: $(grep -F "$2" "$tmp/err" | head -1)"
}
copy
long_function planted_long 81 >>"$tmp/copy/src/base/strings.cc"
expect_fail "a planted function of 81 lines in base" "function planted_long is 81 lines, over 80"
copy
{ printf '\nnamespace planted {\nint braces(int x) {\n  const char* s = "}}}";  // }}\n  /* } */ char c = '"'}'"';\n'
  for ((i = 0; i < 76; ++i)); do printf '  x += %d;\n' "$i"; done
  printf '  return x + c + s[0];\n}\n}  // namespace planted\n'; } >>"$tmp/copy/src/watch/live.cc"
expect_fail "a planted function of 81 lines with braces in strings and comments" "function braces is 81 lines"
copy
long_function planted_fits 80 >>"$tmp/copy/src/base/strings.cc"
"$tmp/copy/tools/check-function-size" "$tmp/copy" >/dev/null || { echo "FAIL: a function of 80 lines was reported"; exit 1; }
echo "ok: a planted function of 80 lines passes"
copy
printf 'src/base/strings.cc no_such_function  planted\n' >>"$tmp/copy/tools/function-size-allow.txt"
expect_fail "an allow-list entry for no long function" "no_such_function is no function over 80 lines"
