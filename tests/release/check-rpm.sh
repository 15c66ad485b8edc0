#!/bin/sh
# check-rpm.sh BUILD_DIR [ARCH]: the portable build's RPM (cpack -G RPM, rpmbuild from Debian's rpm
# package), read back with rpm -qlp and --requires: the `make install` files under /usr
# (the binary, the man page, the completions) and nothing required beyond glibc's libraries
# (and rtld(GNU_HASH), which rpmbuild adds for every such binary and glibc provides),
# none at a version newer than GLIBC_2.28, and its architecture ARCH (x86_64, aarch64) when
# given. Exit 77 where rpmbuild is missing.
set -u
build=$(cd "$1" && pwd)
want_arch=${2:-}
command -v rpmbuild >/dev/null && command -v rpm >/dev/null || { echo "check-rpm: no rpmbuild (Debian: rpm): skipped"; exit 77; }
work=$(mktemp -d) || exit 2
trap 'rm -rf "$work"' EXIT
(cd "$build" && cpack -G RPM -B "$work" >"$work/cpack.log" 2>&1) || { tail -20 "$work/cpack.log"; echo "check-rpm: cpack -G RPM failed" >&2; exit 1; }
rpmfile=$(ls "$work"/*.rpm 2>/dev/null | head -1)
[ -n "$rpmfile" ] || { echo "check-rpm: no .rpm made" >&2; exit 1; }
echo "check-rpm: $(basename "$rpmfile"), $(wc -c <"$rpmfile") bytes"
if [ -n "$want_arch" ]; then
  arch=$(rpm -qp --qf '%{ARCH}' "$rpmfile" 2>/dev/null)
  [ "$arch" = "$want_arch" ] || { echo "check-rpm: the package is for $arch, not $want_arch" >&2; exit 1; }
fi
files=$(rpm -qlp "$rpmfile" 2>/dev/null)
for want in /usr/bin/firstfault /usr/share/man/man1/firstfault.1 /usr/share/bash-completion/completions/firstfault \
            /usr/share/zsh/site-functions/_firstfault /usr/share/fish/vendor_completions.d/firstfault.fish; do
  printf '%s\n' "$files" | grep -qx "$want" || { echo "check-rpm: $want not in the package: $files" >&2; exit 1; }
done
requires=$(rpm -qp --requires "$rpmfile" 2>/dev/null | grep -v '^rpmlib(')
echo "check-rpm: requires: $(echo $requires)"
bad=$(printf '%s\n' "$requires" | grep -v -E '^(/bin/sh|rtld\(GNU_HASH\)|(libc|libm|libpthread|libdl|librt|ld-linux-[a-z0-9_-]+)\.so\.[0-9.]+(\(\)|\((GLIBC_[0-9.]+)?\))?(\(64bit\))?)$' || true)
[ -z "$bad" ] || { echo "check-rpm: requires more than glibc: $bad" >&2; exit 1; }
newer=$(printf '%s\n' "$requires" | grep -o 'GLIBC_[0-9.]*' | sort -uV | awk -F'[_.]' '$2 > 2 || ($2 == 2 && $3 > 28)')
[ -z "$newer" ] || { echo "check-rpm: requires glibc newer than 2.28: $newer" >&2; exit 1; }
echo "check-rpm: $(printf '%s\n' "$files" | wc -l) files; glibc only, none newer than GLIBC_2.28"
