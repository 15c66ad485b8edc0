#!/bin/sh
# run-smoke.sh BINARY ROOT: the portable binary's smoke tests (smoke.sh) inside ROOT, a
# Debian 11 root (glibc 2.31) that tools/release-root made with debootstrap: a real older
# userland, not this machine's. Needs no network; needs root for chroot. Exit 77 (skipped)
# where it cannot run: not root, or no root made (tools/release-root makes it).
# ROOT "-": the same tests on this machine, no chroot.
set -u
bin=$(readlink -f "$1")
root=$2
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
if [ "$root" = - ]; then
  root=""
else
  [ -f "$root/etc/os-release" ] || { echo "run-smoke: no root at $root (tools/release-root makes it): skipped"; exit 77; }
  [ "$(id -u)" = 0 ] || { echo "run-smoke: chroot needs root: skipped"; exit 77; }
  chroot=$(command -v chroot || echo /usr/sbin/chroot)
fi
work=$(mktemp -d "${root:-${TMPDIR:-/tmp}}/tmp/ff-smoke.XXXXXX" 2>/dev/null || mktemp -d) || exit 2
trap 'rm -rf "$work"' EXIT
inner=${work#"$root"}
cp "$bin" "$work/firstfault"
cp "$here/smoke.sh" "$work/smoke.sh"
cp "$src/tests/data/real/pdsh_two_hosts_rank_raised.log" "$work/job.log"
mkdir -p "$work/kb-bad"
printf 'entries:\n  - id: [unclosed\n    title: "x\n' >"$work/kb-bad/bad.yaml"
if [ -z "$root" ]; then
  sh "$work/smoke.sh" "$work/firstfault" "$work"
  exit
fi
echo "run-smoke: $(. "$root/etc/os-release"; echo "$PRETTY_NAME") in $root"
# The root's own environment: its PATH, no variable of this machine's.
env -i PATH=/usr/local/bin:/usr/bin:/bin HOME=/root "$chroot" "$root" /bin/sh "$inner/smoke.sh" "$inner/firstfault" "$inner"
