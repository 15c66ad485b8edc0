#!/bin/sh
# run-smoke.sh BINARY ROOT: the portable binary's smoke tests (smoke.sh) inside ROOT, a
# Debian 11 root (glibc 2.31) that tools/release-root made with debootstrap: a real older
# userland, not this machine's. Needs no network; needs root for chroot. Exit 77 (skipped)
# where it cannot run: not root, or no root made (tools/release-root makes it).
# ROOT "-": the same tests on this machine, no chroot.
# run-smoke.sh BINARY ROOT QEMU LIBROOT: a binary of another architecture (the arm64 one)
# run under QEMU (qemu-aarch64-static) with the loader and glibc of ROOT (an arm64 Debian 11
# root: FF_ARCH=arm64 tools/release-root) or, for ROOT "-", of LIBROOT (Debian's cross
# glibc, /usr/aarch64-linux-gnu): qemu -L, no chroot, so no root needed. The tests and curl
# are this machine's; only firstfault runs under QEMU. Exit 77 where QEMU is missing.
set -u
bin=$(readlink -f "$1")
root=$2
qemu=${3:-}
libroot=${4:-}
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
chroot=""
if [ -n "$qemu" ]; then
  machine=$(readelf -h "$bin" 2>/dev/null | sed -n 's/.*Machine: *//p')
  qemu=$(command -v "$qemu") || { echo "run-smoke: no $3 to run the $machine binary here (Debian: qemu-user-static): skipped"; exit 77; }
  if [ "$root" != - ]; then
    [ -f "$root/etc/os-release" ] || { echo "run-smoke: no root at $root (FF_ARCH=arm64 tools/release-root makes it): skipped"; exit 77; }
    libroot=$root
  fi
  [ -d "$libroot/lib" ] || { echo "run-smoke: no glibc for $qemu in $libroot: skipped"; exit 77; }
  root=""
elif [ "$root" = - ]; then
  root=""
else
  [ -f "$root/etc/os-release" ] || { echo "run-smoke: no root at $root (tools/release-root makes it): skipped"; exit 77; }
  [ "$(id -u)" = 0 ] || { echo "run-smoke: chroot needs root: skipped"; exit 77; }
  chroot=$(command -v chroot || echo /usr/sbin/chroot)
fi
work=$(mktemp -d "${root:-${TMPDIR:-/tmp}}/tmp/ff-smoke.XXXXXX" 2>/dev/null || mktemp -d) || exit 2
trap 'rm -rf "$work"' EXIT
inner=${work#"$root"}
cp "$here/smoke.sh" "$work/smoke.sh"
cp "$src/tests/data/real/pdsh_two_hosts_rank_raised.log" "$work/job.log"
mkdir -p "$work/kb-bad"
printf 'entries:\n  - id: [unclosed\n    title: "x\n' >"$work/kb-bad/bad.yaml"
if [ -n "$qemu" ]; then
  # The binary the tests run is QEMU in its place (exec: a background job's pid is QEMU's).
  cp "$bin" "$work/firstfault.bin"
  printf '#!/bin/sh\nexec "%s" -L "%s" "%s" "$@"\n' "$qemu" "$libroot" "$work/firstfault.bin" >"$work/firstfault"
  chmod +x "$work/firstfault"
  libc=$(ls "$libroot"/lib/*-linux-gnu/libc.so.6 "$libroot"/lib/libc.so.6 2>/dev/null | head -1)
  system=$( [ -f "$libroot/etc/os-release" ] && . "$libroot/etc/os-release" && echo "$PRETTY_NAME, ")
  FF_SMOKE_LIBC="$machine under $(basename "$qemu") -L $libroot: $system$("$qemu" -L "$libroot" "$libc" 2>/dev/null | head -1)"
  export FF_SMOKE_LIBC  # smoke.sh's first line
  sh "$work/smoke.sh" "$work/firstfault" "$work"
  exit
fi
cp "$bin" "$work/firstfault"
if [ -z "$root" ]; then
  sh "$work/smoke.sh" "$work/firstfault" "$work"
  exit
fi
echo "run-smoke: $(. "$root/etc/os-release"; echo "$PRETTY_NAME") in $root"
# The root's own environment: its PATH, no variable of this machine's.
env -i PATH=/usr/local/bin:/usr/bin:/bin HOME=/root "$chroot" "$root" /bin/sh "$inner/smoke.sh" "$inner/firstfault" "$inner"
