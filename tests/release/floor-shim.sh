#!/bin/sh
# floor-shim.sh CXX [ROOT] [QEMU]: the glibc floor (src/app/glibc_floor.cc) on its own,
# without the whole portable build: floor_probe.cc linked the portable way with the wraps
# of glibc_floor.def must need no glibc version newer than 2.28 (tools/release-check) and
# run: here, in the Debian 11 root ROOT when it is there and this is root (glibc 2.31), and,
# for a cross CXX (aarch64-linux-gnu-g++), under QEMU (qemu-aarch64-static) with the cross
# glibc as its root. The same probe linked without the floor must fail the check, or the
# check proves nothing. Exit 77 where CXX cannot build it.
set -u
cxx=$1
root=${2:-}
qemu=${3:-}
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
work=$(mktemp -d) || exit 2
trap 'rm -rf "$work"' EXIT
wraps=$(sed -n 's/^FF_\(OLD\|SHIM\)(\([A-Za-z0-9_]*\).*$/-Wl,--wrap=\2/p' "$src/src/app/glibc_floor.def")
# A compiler that cannot build the probe (absent, or no C++20 library for its target) skips;
# one that builds the probe but not glibc_floor.cc fails: that is the code under test.
"$cxx" -std=c++20 -O2 -c "$here/floor_probe.cc" -o "$work/probe.o" 2>"$work/cc.err" \
  || { cat "$work/cc.err"; echo "floor-shim: $cxx cannot build the probe: skipped"; exit 77; }
"$cxx" -std=c++20 -O2 -c -I"$src/src/app" "$src/src/app/glibc_floor.cc" -o "$work/floor.o" 2>"$work/cc.err" \
  || { cat "$work/cc.err"; echo "floor-shim: src/app/glibc_floor.cc does not compile with $cxx" >&2; exit 1; }
# shellcheck disable=SC2086
"$cxx" -static-libstdc++ -static-libgcc "$work/probe.o" "$work/floor.o" $wraps \
  -Wl,--push-state,--no-as-needed -l:libpthread.so.0 -l:libdl.so.2 -Wl,--pop-state -o "$work/probe" || exit 1
sh "$src/tools/release-check" "$work/probe" 2.28 || { echo "floor-shim: the probe needs a newer glibc" >&2; exit 1; }
"$cxx" -static-libstdc++ -static-libgcc "$work/probe.o" -o "$work/unfloored" 2>/dev/null \
  && sh "$src/tools/release-check" "$work/unfloored" 2.28 >/dev/null 2>&1 \
  && { echo "floor-shim: the probe without the floor passed the check too: it proves nothing" >&2; exit 1; }
if [ -n "$qemu" ]; then
  # Debian's cross toolchains keep the target's glibc in /usr/<triplet> (-print-sysroot says /).
  sysroot=/usr/$("$cxx" -dumpmachine)
  "$qemu" -L "$sysroot" "$work/probe" || { echo "floor-shim: the probe failed under $qemu" >&2; exit 1; }
else
  "$work/probe" || exit 1
fi
if [ -n "$root" ] && [ -z "$qemu" ] && [ -f "$root/etc/os-release" ] && [ "$(id -u)" = 0 ]; then
  inner=$(mktemp -d "$root/tmp/ff-floor.XXXXXX") || exit 2
  cp "$work/probe" "$inner/probe"
  chroot=$(command -v chroot || echo /usr/sbin/chroot)
  env -i PATH=/usr/bin:/bin "$chroot" "$root" "${inner#"$root"}/probe"; rc=$?
  rm -rf "$inner"
  [ "$rc" -eq 0 ] || { echo "floor-shim: the probe failed in $root" >&2; exit 1; }
  echo "floor-shim: ran in $(. "$root/etc/os-release"; echo "$PRETTY_NAME")"
fi
