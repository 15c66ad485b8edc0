#!/bin/sh
# check-fails.sh CXX: tools/release-check must fail on what it is there to catch, or it
# proves nothing: a tiny program that calls arc4random (GLIBC_2.36) linked the ordinary
# way is refused, with the symbol named; the same program with libstdc++ linked shared is
# refused for needing libstdc++.so.6. A program that calls nothing new passes with the floor
# at this machine's glibc and fails with it at 2.33 (its crt1.o asks __libc_start_main@2.34:
# the glibc floor of the portable build is its own work, src/app/glibc_floor.cc).
set -u
cxx=$1
here=$(cd "$(dirname "$0")" && pwd)
check=$here/../../tools/release-check
work=$(mktemp -d) || exit 2
trap 'rm -rf "$work"' EXIT
cat >"$work/t.cc" <<'CC'
#include <stdlib.h>
#include <stdio.h>
int main() { printf("%u\n", arc4random()); return 0; }
CC
"$cxx" -O1 -static-libstdc++ -static-libgcc "$work/t.cc" -o "$work/newer" 2>"$work/cc.err" \
  || { echo "check-fails: $cxx cannot build a program calling arc4random (glibc older than 2.36?): skipped"; cat "$work/cc.err"; exit 77; }
out=$(sh "$check" "$work/newer" 2>&1); rc=$?
printf '%s\n' "$out"
[ "$rc" -eq 1 ] || { echo "check-fails: release-check passed a binary that needs arc4random (exit $rc)" >&2; exit 1; }
printf '%s\n' "$out" | grep -q 'GLIBC_2.36.*arc4random' || { echo "check-fails: arc4random not named" >&2; exit 1; }
"$cxx" -O1 "$work/t.cc" -o "$work/shared" -Wl,--no-as-needed -lstdc++ || exit 2
out=$(sh "$check" "$work/shared" 2>&1); rc=$?
[ "$rc" -eq 1 ] && printf '%s\n' "$out" | grep -q 'needs libstdc++' \
  || { echo "check-fails: release-check passed a binary that needs libstdc++.so.6: $out" >&2; exit 1; }
printf 'int main() { return 0; }\n' >"$work/clean.cc"
"$cxx" -O1 -static-libstdc++ -static-libgcc "$work/clean.cc" -o "$work/clean" || exit 2
here_glibc=$(getconf GNU_LIBC_VERSION | sed 's/^glibc //')
sh "$check" "$work/clean" "$here_glibc" || { echo "check-fails: a program that needs nothing newer than glibc $here_glibc was refused" >&2; exit 1; }
sh "$check" "$work/clean" 2.33 >/dev/null 2>&1 && { echo "check-fails: a floor below the binary's need (2.33) passed" >&2; exit 1; }
# The machine: the clean binary passes as what CXX makes and is refused as the other one
# (the arm64 release must not be an x86-64 file, nor the reverse).
case "$(readelf -h "$work/clean" | sed -n 's/.*Machine: *//p')" in
  AArch64) own=aarch64; other=x86_64 ;;
  *X86-64) own=x86_64; other=aarch64 ;;
  *) own=""; other="" ;;
esac
if [ -n "$own" ]; then
  sh "$check" "$work/clean" "$here_glibc" "$own" >/dev/null || { echo "check-fails: an $own binary was refused as $own" >&2; exit 1; }
  sh "$check" "$work/clean" "$here_glibc" "$other" >/dev/null 2>&1 && { echo "check-fails: an $own binary passed as $other" >&2; exit 1; }
fi
echo "check-fails: release-check refuses arc4random (2.36), libstdc++.so.6, a floor below the need${own:+ and an $own binary as $other}; passes a clean binary"
