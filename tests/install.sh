#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# install.sh [BINARY]: make install into a new DESTDIR, then make uninstall:
# install puts the program, the gzipped manual page, the bash completion, the
# licence and README.md, CHANGELOG.md and docs/ in place; the installed
# program's --help names the installed documentation; man -l renders the
# installed page (where man is); uninstall leaves nothing under DESTDIR (no
# file, and no directory: under a DESTDIR the empty ones install made go;
# a file put beside them stays, and its directories). BINARY (default
# ./gpuipc_test) is what is installed. Exits 1 at the first difference.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${1:-./gpuipc_test}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "install: $*"; exit 1; }
dest=$tmp/dest
prefix=/opt/gpuipc
# make install builds nothing where the program is there: no Check needed
# (PKG_CONFIG=false stands for a machine without it), and the program is not
# remade for this PREFIX (the tests after this one run it).
sum=$(cd "$root" && cksum < "$bin")
PKG_CONFIG=false make -s -C "$root" install DESTDIR="$dest" PREFIX="$prefix" INSTALL_BIN="$bin" \
    > "$tmp/log" 2>&1 || fail "make install failed: $(cat "$tmp/log")"
[ "$(cd "$root" && cksum < "$bin")" = "$sum" ] || fail "make install remade $bin"
p=$dest$prefix
doc=$p/share/doc/gpuipc-test
for f in bin/gpuipc_test share/man/man1/gpuipc_test.1.gz share/bash-completion/completions/gpuipc_test \
         share/doc/gpuipc-test/copyright share/doc/gpuipc-test/README.md \
         share/doc/gpuipc-test/CHANGELOG.md share/doc/gpuipc-test/docs/testing.md \
         share/doc/gpuipc-test/docs/result.schema.json share/doc/gpuipc-test/docs/recipes/npd-plugin.sh \
         share/doc/gpuipc-test/docs/recipes/gpuipc.nhc; do
    [ -f "$p/$f" ] || fail "make install put no $prefix/$f"
done
[ -x "$doc/docs/recipes/npd-plugin.sh" ] || fail "the recipes are not installed executable"
[ ! -x "$doc/docs/recipes/gpuipc.nhc" ] || fail "NHC's check file is installed executable (NHC sources it)"
n=$(find "$dest" ! -type d | wc -l)
# Where the program is installed, its --help names the documentation there.
"$p/bin/gpuipc_test" --help | grep -qx "  $doc" ||
    fail "the installed --help does not name $doc: $("$p/bin/gpuipc_test" --help | tail -n 3)"
if command -v man >/dev/null; then
    MANWIDTH=80 man -l "$p/share/man/man1/gpuipc_test.1.gz" 2>&1 | grep -q '^NAME' ||
        fail "man -l does not render the installed page"
    man=", man -l renders the installed page"
else
    man=", no man here to render the installed page"
fi
make -s -C "$root" uninstall DESTDIR="$dest" PREFIX="$prefix" > "$tmp/log" 2>&1 ||
    fail "make uninstall failed: $(cat "$tmp/log")"
left=$(find "$dest" ! -type d)
[ -z "$left" ] || fail "make uninstall left: $left"
[ ! -e "$doc" ] || fail "make uninstall left $doc"
[ -z "$(ls -A "$dest")" ] || fail "make uninstall left directories: $(cd "$dest" && find . -mindepth 1)"
# A file someone else put in a shared directory stays, and so does its path.
make -s -C "$root" install DESTDIR="$dest" PREFIX="$prefix" INSTALL_BIN="$bin" > "$tmp/log" 2>&1 ||
    fail "make install (again) failed: $(cat "$tmp/log")"
: > "$p/bin/other-tool"
make -s -C "$root" uninstall DESTDIR="$dest" PREFIX="$prefix" > "$tmp/log" 2>&1 ||
    fail "make uninstall (again) failed: $(cat "$tmp/log")"
[ "$(cd "$dest" && find . ! -type d)" = "./opt/gpuipc/bin/other-tool" ] ||
    fail "make uninstall did not leave exactly another's file: $(cd "$dest" && find . ! -type d)"
[ ! -e "$p/share" ] || fail "make uninstall left $prefix/share with another's file in bin"
# A program of another commit (a build-release/ left from an older tree) is
# refused, both commits named, and nothing is installed.
stale=
if git -C "$root" rev-parse --verify -q HEAD >/dev/null 2>&1; then
    printf '#!/bin/sh\necho "gpuipc_test 0.0.1 (commit 000000000000, protocol 1)"\n' > "$tmp/old"
    chmod 0755 "$tmp/old"
    rm -rf "$tmp/stale"
    if make -s -C "$root" install DESTDIR="$tmp/stale" PREFIX="$prefix" INSTALL_BIN="$tmp/old" \
        > "$tmp/log" 2>&1; then
        fail "make install took a program of another commit: $(cat "$tmp/log")"
    fi
    grep -q "is of commit 000000000000, the tree is at " "$tmp/log" ||
        fail "make install refused the old program without naming its commit: $(cat "$tmp/log")"
    [ ! -e "$tmp/stale" ] || fail "make install put files in place for a program it refused"
    stale="; a program of another commit refused"
fi
echo "install: make install put $n files under DESTDIR$prefix, --help names its docs$man; make uninstall removed every one and every directory it made, not another's file$stale"
