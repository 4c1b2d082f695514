#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# package.sh deb|rpm BINARY (make deb, make rpm): a package of what make
# install puts under /usr, with BINARY as /usr/bin/gpuipc_test, into
# build-pkg/. The package is gpuipc-test (dpkg refuses an underscore in a
# package name); the command stays gpuipc_test.
#
#   deb: dpkg-deb --root-owner-group: build-pkg/gpuipc-test_<version>_<arch>.deb
#   rpm: rpmbuild -bb with a spec written here from the same staged tree:
#        build-pkg/gpuipc-test-<version>-1.<arch>.rpm
#
# Both list the same files (tests/packages.sh compares dpkg-deb -c with
# rpm -qlp). The version is lib/app/version.h's.
set -eu
kind=${1:?usage: package.sh deb|rpm BINARY}
bin=${2:?usage: package.sh deb|rpm BINARY}
cd "$(dirname "$0")/.."
case $kind in deb | rpm) ;; *) echo "package: '$kind' is neither deb nor rpm" >&2; exit 2 ;; esac
[ -x "$bin" ] || { echo "package: $bin: no such program (make, or make release)" >&2; exit 2; }
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

# The binary's glibc floor: the highest GLIBC_ symbol version it needs, and
# never below 2.28, the floor the release binary is held to (tests/glibc.sh)
# and tested at; a local build on a newer glibc needs more, and says so.
floor=$(sh tests/glibc.sh "$bin" 99 | sed -n 's/.* needs glibc \([0-9.]*\) at most.*/\1/p')
[ -n "$floor" ] || { echo "package: tests/glibc.sh could not read $bin's glibc symbols" >&2; exit 1; }
floor=$(printf '%s\n2.28\n' "$floor" | sort -t. -k1,1n -k2,2n | tail -n 1)

mkdir -p build-pkg
stage=$(mktemp -d "$PWD/build-pkg/stage.XXXXXX")
chmod 0755 "$stage"  # the package's ./: never make / 0700
trap 'rm -rf "$stage"' EXIT
make -s install DESTDIR="$stage" PREFIX=/usr INSTALL_BIN="$bin" >/dev/null
echo "package: $kind of gpuipc_test $version (commit $commit) with $bin ($which); needs glibc $floor"

if [ "$kind" = deb ]; then
    arch=$(dpkg --print-architecture)
    mkdir "$stage/DEBIAN"
    # Suggests: libcuda.so.1 comes from the NVIDIA driver, which the program
    # loads at run time and runs without (exit 77 saying so, or a failure
    # under --expect-gpus). libcuda1 names it on Debian (non-free
    # nvidia-graphics-drivers) and on Ubuntu, whose libnvidia-compute-NNN
    # packages provide libcuda1 (canonical/nvidia-graphics-drivers#26). Not a
    # Depends: on GPU nodes the driver is often not a package at all (NVIDIA's
    # .run installer, the GPU operator's driver container), and the memfd
    # mechanisms need none.
    cat > "$stage/DEBIAN/control" <<EOF
Package: gpuipc-test
Version: $version
Architecture: $arch
Maintainer: ${MAINTAINER:-gpuipc_test developers <dev@gpuipc.invalid>}
Installed-Size: $(du -sk --exclude=DEBIAN "$stage" | cut -f1)
Depends: libc6 (>= $floor)
Suggests: libcuda1
Section: admin
Priority: optional
Description: proves that GPU memory sharing between processes works
 gpuipc_test runs a producer and a consumer process that share GPU memory
 by each mechanism the CUDA driver offers (VMM handles over file
 descriptors, pidfd_getfd, legacy IPC, memory pools, IPC events, FABRIC),
 on every GPU of the node, checks every word both ways and checks that
 neither process leaks. Its exit status is the verdict: for GPU node
 bring-up, health checks and CI. Built from commit $commit.
EOF
    out=build-pkg/gpuipc-test_${version}_$arch.deb
    dpkg-deb --root-owner-group -Zxz --build "$stage" "$out" >/dev/null
    echo "package: $out"
    exit 0
fi

command -v rpmbuild >/dev/null || { echo "package: no rpmbuild here (Debian: apt-get install rpm)" >&2; exit 2; }
top=$stage.rpm
mkdir -p "$top/SPECS" "$top/RPMS" "$top/BUILD"
trap 'rm -rf "$stage" "$top"' EXIT
# The files as make install staged them; the documentation's own
# directories are the package's too, so that removing it removes them.
files=$(cd "$stage" && find . ! -type d | sed 's|^\.||' | sort)
dirs=$(cd "$stage" && find ./usr/share/doc/gpuipc-test -type d | sed 's|^\.||' | sort)
# The staged tree is copied as it is: no strip, no debuginfo, no compressing
# of what is compressed already, no build-id links, so that the .rpm holds
# exactly the .deb's files. Requires: rpmbuild adds the glibc symbol
# versions the binary needs (libc.so.6(GLIBC_2.x)); Suggests: libcuda.so.1,
# as the NVIDIA driver's packages (NVIDIA's CUDA repositories, RPM Fusion)
# provide it, a suggestion for the reasons the .deb gives.
cat > "$top/SPECS/gpuipc-test.spec" <<EOF
Name: gpuipc-test
Version: $version
Release: 1
Summary: Proves that GPU memory sharing between processes works
License: Apache-2.0 AND LGPL-2.1-or-later
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

%install
cp -a "$stage/." "%{buildroot}/"
rm -rf "%{buildroot}/DEBIAN"

%files
%defattr(-,root,root,-)
$(printf '%s\n' "$dirs" | sed 's/^/%dir /')
$files
EOF
rpmbuild -bb --quiet --define "_topdir $top" --define "_rpmdir $top/RPMS" \
    --define "_build_name_fmt %%{NAME}-%%{VERSION}-%%{RELEASE}.%%{ARCH}.rpm" \
    "$top/SPECS/gpuipc-test.spec" > "$top/rpmbuild.log" 2>&1 ||
    { tail -n 20 "$top/rpmbuild.log" >&2; echo "package: rpmbuild failed" >&2; exit 1; }
for f in "$top"/RPMS/*.rpm; do
    cp "$f" build-pkg/
    echo "package: build-pkg/${f##*/}"
done
