#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# packages.sh DEB [RPM]: the .deb holds what make install puts under /usr,
# file for file (dpkg-deb -c against a make install DESTDIR=... PREFIX=/usr of
# the same tree), and the .rpm the same files as the .deb (rpm -qlp), compared
# as sets; the documentation's own directories are in both. The only
# differences allowed are each distribution's own, named below: the .deb's
# changelog, the .rpm's licence texts. The .deb's control: package
# gpuipc-test, Depends on libc6 at the glibc floor (2.28 or above), the
# driver only suggested. DEB and RPM are the program's packages, not the
# debug ones (-dbgsym, -debuginfo). Exits 1 at the first difference.
set -eu
deb=${1:?usage: packages.sh DEB [RPM]}
rpm=${2:-}
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "packages: $*"; exit 1; }
# What a package holds beyond make install's files, by its distribution's
# rules (deploy/package.sh): the .deb a changelog (Debian policy 12.7), the
# .rpm the licence texts where Fedora and RHEL keep them, as they have no
# /usr/share/common-licenses, which the copyright file points to.
deb_only=/usr/share/doc/gpuipc-test/changelog.gz
rpm_licdir=/usr/share/licenses/gpuipc-test
[ -f "$deb" ] || fail "$deb: no such file"
# dpkg-deb -c: "mode owner size date time ./path" (a link: "... -> target").
dpkg-deb -c "$deb" | awk '$1 !~ /^d/ { sub(/^\./, "", $6); print $6 }' | sort > "$tmp/deb.files"
dpkg-deb -c "$deb" | awk '$1 ~ /^d/ { sub(/^\./, "", $6); sub(/\/$/, "", $6); print $6 }' |
    grep '^/usr/share/doc/gpuipc-test' | sort > "$tmp/deb.dirs"
make -s -C "$root" install DESTDIR="$tmp/stage" PREFIX=/usr INSTALL_BIN=/bin/true \
    ALLOW_OTHER_COMMIT=1 >/dev/null 2>&1 ||
    fail "make install DESTDIR=$tmp/stage failed"
{ (cd "$tmp/stage" && find . ! -type d | sed 's|^\.||'); echo "$deb_only"; } | sort > "$tmp/install.files"
if ! diff -u "$tmp/install.files" "$tmp/deb.files" > "$tmp/diff"; then
    echo "packages: $deb does not hold what make install puts under /usr, and $deb_only" \
        "(- install, + deb):"
    cat "$tmp/diff"
    exit 1
fi
control=$(dpkg-deb -f "$deb" Package Depends Suggests)
printf '%s\n' "$control" | grep -qx 'Package: gpuipc-test' || fail "$deb: not package gpuipc-test: $control"
floor=$(printf '%s\n' "$control" | sed -n 's/^Depends: libc6 (>= \([0-9.]*\))$/\1/p')
[ -n "$floor" ] || fail "$deb: Depends is not libc6 (>= VERSION) alone: $control"
[ "$(printf '%s\n2.28\n' "$floor" | sort -t. -k1,1n -k2,2n | head -n 1)" = 2.28 ] ||
    fail "$deb: Depends on libc6 $floor, below the 2.28 floor"
printf '%s\n' "$control" | grep -q '^Suggests: .*libcuda1' || fail "$deb: does not suggest libcuda1"
said="$deb holds make install's $(($(wc -l < "$tmp/deb.files") - 1)) files and a changelog, Depends: libc6 (>= $floor)"
if [ -n "$rpm" ]; then
    [ -f "$rpm" ] || fail "$rpm: no such file"
    rpm -qlp "$rpm" 2>/dev/null | sort > "$tmp/rpm.all"
    { cat "$tmp/deb.dirs"; echo "$rpm_licdir"; } | sort > "$tmp/rpm.want.dirs"
    grep -vxF -f "$tmp/rpm.want.dirs" "$tmp/rpm.all" > "$tmp/rpm.files" || true
    { grep -vxF "$deb_only" "$tmp/deb.files"; printf '%s\n' "$rpm_licdir/LICENSE" "$rpm_licdir/LGPL-2.1"; } |
        sort > "$tmp/rpm.want"
    if ! diff -u "$tmp/rpm.want" "$tmp/rpm.files" > "$tmp/diff"; then
        echo "packages: $rpm does not list $deb's files, less $deb_only, and the licence texts" \
            "in $rpm_licdir (- wanted, + rpm):"
        cat "$tmp/diff"
        exit 1
    fi
    grep -xF -f "$tmp/rpm.want.dirs" "$tmp/rpm.all" > "$tmp/rpm.dirs" || true
    diff -q "$tmp/rpm.want.dirs" "$tmp/rpm.dirs" >/dev/null ||
        fail "$rpm does not own the documentation's directories as $deb does, and $rpm_licdir"
    said="$said; $rpm lists the same files (the licence texts in place of the changelog)"
fi
echo "packages: $said"
