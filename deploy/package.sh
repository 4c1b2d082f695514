#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# package.sh deb|rpm BINARY (make deb, make rpm): a package of what make
# install puts under /usr, with BINARY as /usr/bin/gpuipc_test, and one of
# its debug information, into build-pkg/. The package is gpuipc-test (dpkg
# refuses an underscore in a package name); the command stays gpuipc_test.
#
#   deb: dpkg-deb --root-owner-group:
#        build-pkg/gpuipc-test_<version>_<arch>.deb
#        build-pkg/gpuipc-test-dbgsym_<version>_<arch>.deb
#   rpm: rpmbuild -bb with a spec written here from the same staged trees:
#        build-pkg/gpuipc-test-<version>-1.<arch>.rpm
#        build-pkg/gpuipc-test-debuginfo-<version>-1.<arch>.rpm
#
# The packaged program is BINARY stripped (a copy: BINARY is never changed),
# its debug information in /usr/lib/debug/.build-id/xx/yyyy.debug of the
# debug package, as Debian's dh_strip lays it out; gdb finds it by the
# program's build-id. Both main packages list the same files but for what
# each distribution wants of its own (tests/packages.sh compares dpkg-deb -c
# with rpm -qlp): the .deb's changelog.gz, the .rpm's licence texts in
# /usr/share/licenses/gpuipc-test (RHEL has no /usr/share/common-licenses,
# which deploy/copyright points to). The version is lib/app/version.h's.
#
# Two runs on one tree give the same bytes: every date in the packages is
# SOURCE_DATE_EPOCH, the caller's, else the commit's (git, or .commit in a
# tree without .git, stamped by git archive), and nothing of the machine,
# the directory or the clock goes in.
set -eu
kind=${1:?usage: package.sh deb|rpm BINARY}
bin=${2:?usage: package.sh deb|rpm BINARY}
cd "$(dirname "$0")/.."
# What this makes is the package's: modes that do not depend on the
# caller's umask (a 0700 directory in a .deb is a broken package).
umask 022
case $kind in deb | rpm) ;; *) echo "package: '$kind' is neither deb nor rpm" >&2; exit 2 ;; esac
[ -x "$bin" ] || { echo "package: $bin: no such program (make, or make release)" >&2; exit 2; }
for tool in objcopy strip readelf; do
    command -v $tool >/dev/null ||
        { echo "package: no $tool here, to split the debug information (apt-get install binutils)" >&2; exit 2; }
done
# A name without a slash (make's default, gpuipc_test) would be looked up in
# PATH when it is run below: it is the file here.
case $bin in */*) ;; *) bin=./$bin ;; esac
case $bin in
build-release/*) which="the release binary, for glibc 2.28 and later" ;;
*) which="the local build, for this machine's glibc (make release first for the one for glibc 2.28)" ;;
esac
version=$(sed -n 's/^#define GPUIPC_VERSION "\(.*\)"$/\1/p' lib/app/version.h)
[ -n "$version" ] || { echo "package: no GPUIPC_VERSION in lib/app/version.h" >&2; exit 2; }
commit=$("$bin" --version | sed -n 's/.*(commit \([^,]*\),.*/\1/p')
# A binary left from an older commit (a stale build-release/) would be
# packaged as this version: refuse it, naming both commits. Without git
# (a tarball) there is nothing to compare with.
head=$(git rev-parse --short=12 HEAD 2>/dev/null || true)
if [ -n "$head" ] && [ "${commit%-dirty}" != "$head" ] && [ "${ALLOW_OTHER_COMMIT:-}" != 1 ]; then
    echo "package: $bin is of commit ${commit:-unknown}, the tree is at $head: rebuild it" \
        "(make release, or make), or set ALLOW_OTHER_COMMIT=1" >&2
    exit 1
fi
maintainer=${MAINTAINER:-gpuipc_test developers <dev@gpuipc.invalid>}

# The packages' one date (file times, the changelog, the .rpm's build
# time): the caller's SOURCE_DATE_EPOCH, else the commit's. git is asked
# only where this tree is the top of its own checkout: a tarball unpacked
# inside another repository would get that repository's date. In a tarball
# from git archive, .commit's date line carries it (export-subst); one that
# still reads $Format...$ was not stamped and says nothing.
SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-}
if [ -z "$SOURCE_DATE_EPOCH" ]; then
    if [ "$(git rev-parse --show-toplevel 2>/dev/null)" = "$(pwd -P)" ]; then
        SOURCE_DATE_EPOCH=$(git log -1 --format=%ct HEAD 2>/dev/null || true)
    fi
    [ -n "$SOURCE_DATE_EPOCH" ] ||
        SOURCE_DATE_EPOCH=$(sed -n 's/^date: \([0-9][0-9]*\)$/\1/p' .commit 2>/dev/null || true)
    if [ -z "$SOURCE_DATE_EPOCH" ]; then
        SOURCE_DATE_EPOCH=$(date +%s)
        echo "package: no commit date (no .git, and .commit not stamped by git archive): dated" \
            "now, so two builds differ; set SOURCE_DATE_EPOCH for the same bytes" >&2
    fi
fi
case $SOURCE_DATE_EPOCH in
'' | *[!0-9]*)
    echo "package: SOURCE_DATE_EPOCH='$SOURCE_DATE_EPOCH' is not seconds since 1970 (git log -1 --format=%ct)" >&2
    exit 2 ;;
esac
# dpkg-deb and rpmbuild read it from the environment.
export SOURCE_DATE_EPOCH

# The binary's glibc floor: the highest GLIBC_ symbol version it needs, and
# never below 2.28, the floor the release binary is held to (tests/glibc.sh)
# and tested at; a local build on a newer glibc needs more, and says so.
floor=$(sh tests/glibc.sh "$bin" 99 | sed -n 's/.* needs glibc \([0-9.]*\) at most.*/\1/p')
[ -n "$floor" ] || { echo "package: tests/glibc.sh could not read $bin's glibc symbols" >&2; exit 1; }
floor=$(printf '%s\n2.28\n' "$floor" | sort -t. -k1,1n -k2,2n | tail -n 1)

mkdir -p build-pkg
stage=$(mktemp -d "$PWD/build-pkg/stage.XXXXXX")
dbg=$stage.dbg
top=$stage.rpm
trap 'rm -rf "$stage" "$dbg" "$top"' EXIT
chmod 0755 "$stage"  # the package's ./: never make / 0700
mkdir "$dbg"
make -s install DESTDIR="$stage" PREFIX=/usr INSTALL_BIN="$bin" >/dev/null

# The debug information, split as dh_strip splits it: the DWARF (compressed)
# into the debug package, named by the build-id (which gdb, eu-stack and
# systemd-coredump look it up by); then the stage's copy stripped of its
# symbols and of .comment and .note (the compiler's version strings, which
# lintian counts as unneeded), and told the debug file's name and checksum
# (.gnu_debuglink). The build-id note (.note.gnu.build-id) stays.
prog=$stage/usr/bin/gpuipc_test
id=$(readelf -n "$prog" | sed -n 's/^ *Build ID: \([0-9a-f]*\)$/\1/p')
[ -n "$id" ] || { echo "package: readelf -n: $bin has no GNU build-id (link it with -Wl,--build-id)" >&2; exit 1; }
idfile=${id#??}
debugfile=/usr/lib/debug/.build-id/${id%"$idfile"}/$idfile.debug
mkdir -p "$dbg${debugfile%/*}"
objcopy --only-keep-debug --compress-debug-sections "$prog" "$dbg$debugfile" ||
    { echo "package: objcopy --only-keep-debug $bin failed" >&2; exit 1; }
chmod 0644 "$dbg$debugfile"
strip --strip-unneeded --remove-section=.comment --remove-section=.note "$prog" ||
    { echo "package: strip of the staged $bin failed" >&2; exit 1; }
objcopy --add-gnu-debuglink="$dbg$debugfile" "$prog" ||
    { echo "package: objcopy --add-gnu-debuglink failed" >&2; exit 1; }
date_rfc=$(LC_ALL=C date -u -d "@$SOURCE_DATE_EPOCH" -R)
echo "package: $kind of gpuipc_test $version (commit $commit) with $bin ($which); needs glibc $floor;" \
    "dated $date_rfc"

if [ "$kind" = deb ]; then
    arch=$(dpkg --print-architecture)
    # A native package's changelog (Debian policy 12.7): this version, the
    # commit and where the changes are told, CHANGELOG.md beside it.
    {
        printf 'gpuipc-test (%s) unstable; urgency=medium\n\n' "$version"
        printf '  * gpuipc_test %s, built from commit %s.\n' "$version" "$commit"
        printf '    What changed is told in /usr/share/doc/gpuipc-test/CHANGELOG.md.\n\n'
        printf ' -- %s  %s\n' "$maintainer" "$date_rfc"
    } | gzip -9n > "$stage/usr/share/doc/gpuipc-test/changelog.gz"
    homepage=${PACKAGE_URL:+Homepage: $PACKAGE_URL
}
    # control ROOT NAME < FIELDS: ROOT's DEBIAN/control and md5sums.
    # Installed-Size is counted as dpkg-gencontrol counts it (KiB per file,
    # rounded up, and 1 per directory), not with du, whose answer depends on
    # the file system's blocks.
    control() {
        mkdir "$1/DEBIAN"
        (cd "$1" && find usr -type f -exec md5sum {} + | LC_ALL=C sort -k 2) > "$1/DEBIAN/md5sums"
        size=$(cd "$1" && find . -path ./DEBIAN -prune -o -type f -printf 'f %s\n' -o -printf 'o 0\n' |
            awk '{ n += $1 == "f" ? int(($2 + 1023) / 1024) : 1 } END { print n }')
        printf 'Package: %s\nVersion: %s\nArchitecture: %s\nMaintainer: %s\nInstalled-Size: %s\n' \
            "$2" "$version" "$arch" "$maintainer" "$size" > "$1/DEBIAN/control"
        cat >> "$1/DEBIAN/control"
    }
    # Suggests: libcuda.so.1 comes from the NVIDIA driver, which the program
    # loads at run time and runs without (exit 77 saying so, or a failure
    # under --expect-gpus). libcuda1 names it on Debian (non-free
    # nvidia-graphics-drivers) and on Ubuntu, whose libnvidia-compute-NNN
    # packages provide libcuda1 (canonical/nvidia-graphics-drivers#26). Not a
    # Depends: on GPU nodes the driver is often not a package at all (NVIDIA's
    # .run installer, the GPU operator's driver container), and the memfd
    # mechanisms need none.
    control "$stage" gpuipc-test <<EOF
Depends: libc6 (>= $floor)
Suggests: libcuda1
Section: admin
Priority: optional
${homepage}Description: proves that GPU memory sharing between processes works
 gpuipc_test runs a producer and a consumer process that share GPU memory
 by each mechanism the CUDA driver offers (VMM handles over file
 descriptors, pidfd_getfd, legacy IPC, memory pools, IPC events, FABRIC),
 on every GPU of the node, checks every word both ways and checks that
 neither process leaks. Its exit status is the verdict: for GPU node
 bring-up, health checks and CI. Built from commit $commit.
EOF
    # The debug package as debhelper makes a -dbgsym: its documentation
    # directory a link to the program's (whose copyright and changelog are
    # its own, the Depends keeping them there), and the control that
    # dh_gencontrol writes, Auto-Built-Package and Build-Ids included.
    mkdir -p "$dbg/usr/share/doc"
    ln -s gpuipc-test "$dbg/usr/share/doc/gpuipc-test-dbgsym"
    control "$dbg" gpuipc-test-dbgsym <<EOF
Source: gpuipc-test
Auto-Built-Package: debug-symbols
Depends: gpuipc-test (= $version)
Section: debug
Priority: optional
Build-Ids: $id
${homepage}Description: debug symbols for gpuipc-test
EOF
    for root in "$stage" "$dbg"; do
        name=$(sed -n 's/^Package: //p' "$root/DEBIAN/control")
        out=build-pkg/${name}_${version}_$arch.deb
        dpkg-deb --root-owner-group -Zxz --build "$root" "$out" >/dev/null ||
            { echo "package: dpkg-deb --build $out failed" >&2; exit 1; }
        echo "package: $out"
    done
    exit 0
fi

command -v rpmbuild >/dev/null || { echo "package: no rpmbuild here (Debian: apt-get install rpm)" >&2; exit 2; }
mkdir -p "$top/SPECS" "$top/RPMS" "$top/BUILD"
# The licence texts, for systems without Debian's common-licenses, where
# Fedora and RHEL keep them (%license).
lic=/usr/share/licenses/gpuipc-test
mkdir -p "$stage$lic"
cp LICENSE deploy/LGPL-2.1 "$stage$lic/"
# The files as make install staged them; the documentation's and the
# licences' own directories are the package's too, so that removing it
# removes them.
files=$(cd "$stage" && find . ! -type d ! -path "./${lic#/}/*" | sed 's|^\.||' | sort)
dirs=$( (cd "$stage" && find ./usr/share/doc/gpuipc-test ".$lic" -type d) | sed 's|^\.||' | sort)
changelog_day=$(LC_ALL=C date -u -d "@$SOURCE_DATE_EPOCH" '+%a %b %d %Y')
url=${PACKAGE_URL:+URL: $PACKAGE_URL}
# The staged trees are copied as they are: rpmbuild's own strip, debuginfo
# and build-id links are off (the stripping is done above, the same for
# both package kinds), and so is its compressing of what is compressed
# already, so that the .rpm holds the .deb's bytes. Requires: rpmbuild adds
# the glibc symbol versions the binary needs (libc.so.6(GLIBC_2.x));
# Suggests: libcuda.so.1, as the NVIDIA driver's packages (NVIDIA's CUDA
# repositories, RPM Fusion) provide it, a suggestion for the reasons the
# .deb gives. Group: from rpm's list (GROUPS), and for the debuginfo
# package the one rpm's own debug_package gives its. The debuginfo package
# provides debuginfo(build-id), for dnf debuginfo-install, through rpm's
# own dependency generator (debuginfo.attr), and requires the program's
# version, as the .deb's dbgsym does: its licence texts are the program's.
# The version alone, not the release: rpmlint warns of a Requires on a
# release (requires-on-release), and each version has one release.
cat > "$top/SPECS/gpuipc-test.spec" <<EOF
Name: gpuipc-test
Version: $version
Release: 1
Summary: Proves that GPU memory sharing between processes works
License: Apache-2.0 AND LGPL-2.1-or-later
Group: Applications/System
Packager: $maintainer
$url
Requires: glibc >= $floor
Suggests: libcuda.so.1()(64bit)
%global debug_package %{nil}
%global __os_install_post %{nil}
%global _build_id_links none

%description
gpuipc_test runs a producer and a consumer process that share GPU memory by
each mechanism the CUDA driver offers, on every GPU of the node, checks
every word both ways and checks that neither process leaks. Its exit status
is the verdict: for GPU node bring-up, health checks and CI. Built from
commit $commit.

%package debuginfo
Summary: Debug information for package gpuipc-test
Group: Development/Debug
Requires: gpuipc-test = %{version}

%description debuginfo
The debug information of gpuipc_test (commit $commit), for gdb
and crash reports: /usr/bin/gpuipc_test is stripped, and this package holds
what was stripped, named by the program's build-id.

%install
cp -a "$stage/." "$dbg/." "%{buildroot}/"

%files
%defattr(-,root,root,-)
$(printf '%s\n' "$dirs" | sed 's/^/%dir /')
$files
%license $lic/LICENSE
%license $lic/LGPL-2.1

%files debuginfo
%defattr(-,root,root,-)
%dir ${debugfile%/*}
$debugfile

%changelog
* $changelog_day $maintainer - $version-1
- gpuipc_test $version, built from commit $commit.
  What changed is told in /usr/share/doc/gpuipc-test/CHANGELOG.md.
EOF
# The same bytes from two builds: the build time and every file's time are
# SOURCE_DATE_EPOCH, the build host a fixed name, not this machine's, and
# the payload's compression named (gzip, which every rpm reads, RHEL 7's
# included) rather than left to this rpm's default.
rpmbuild -bb --quiet --define "_topdir $top" --define "_rpmdir $top/RPMS" \
    --define "_build_name_fmt %%{NAME}-%%{VERSION}-%%{RELEASE}.%%{ARCH}.rpm" \
    --define "source_date_epoch_from_changelog 0" \
    --define "use_source_date_epoch_as_buildtime 1" \
    --define "clamp_mtime_to_source_date_epoch 1" \
    --define "_buildhost reproducible" \
    --define "_binary_payload w9.gzdio" \
    "$top/SPECS/gpuipc-test.spec" > "$top/rpmbuild.log" 2>&1 ||
    { tail -n 20 "$top/rpmbuild.log" >&2; echo "package: rpmbuild failed" >&2; exit 1; }
for f in "$top"/RPMS/*.rpm; do
    cp "$f" build-pkg/
    echo "package: build-pkg/${f##*/}"
done
