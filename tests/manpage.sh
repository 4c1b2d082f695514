#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# manpage.sh PROGRAM: the manual page docs/gpuipc_test.1 against the program:
# the options its OPTIONS section describes are the options `PROGRAM --help`
# lists, no more and no fewer (each one missing is named, and where); its
# title names the version `PROGRAM --version` prints; and it renders without
# a warning by groff (-man -Tutf8 -ww) and by man -l, where they are
# installed (where not, it says so). Exits 1 at the first difference.
prog=${1:-./gpuipc_test}
root=$(cd "$(dirname "$0")/.." && pwd)
page=$root/docs/gpuipc_test.1
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
fail() { echo "manpage: $*"; exit 1; }
[ -f "$page" ] || fail "$page: no such file"
"$prog" --help > "$tmp/help" 2>&1 || fail "$prog --help exited $?"

# --help: each option line of the Options: section ("  -q, --quiet ...").
sed -n '/^Options:$/,/^Mechanisms:$/p' "$tmp/help" |
    grep -oE '^  (-[a-zA-Z], )?--[a-z][a-z-]*' | tr ',' '\n' | tr -d ' ' | sort -u > "$tmp/help.opts"
# The page: the tag line after each .TP of OPTIONS, \- read as -, fonts dropped.
sed -n '/^\.SH OPTIONS/,/^\.SH /p' "$page" |
    awk '/^\.TP/ { tag = 1; next } tag { print; tag = 0 }' |
    sed -e 's/\\-/-/g' -e 's/\\f[BIRP]//g' -e 's/^\.[A-Z]* //' |
    grep -oE '(^| )--?[a-zA-Z][a-z-]*' | tr -d ' ' | sort -u > "$tmp/man.opts"
[ -s "$tmp/help.opts" ] || fail "found no option in '$prog --help'"
bad=0
for o in $(comm -23 "$tmp/help.opts" "$tmp/man.opts"); do
    echo "manpage: $o is in '$prog --help' but not in docs/gpuipc_test.1 (its OPTIONS section: add a .TP entry)"
    bad=1
done
for o in $(comm -13 "$tmp/help.opts" "$tmp/man.opts"); do
    echo "manpage: $o is in docs/gpuipc_test.1 (OPTIONS) but not in '$prog --help' (lib/app/usage.c)"
    bad=1
done
[ "$bad" = 0 ] || exit 1

# The title's version is the program's.
version=$("$prog" --version | sed -n 's/^gpuipc_test \([^ ]*\) .*/\1/p')
grep -q "^\.TH GPUIPC_TEST 1 [0-9-]* \"gpuipc_test $version\"" "$page" ||
    fail "the .TH line of docs/gpuipc_test.1 does not name gpuipc_test $version (--version's)"

# Rendering: no warning from groff, and man -l renders the page.
if command -v groff >/dev/null; then
    groff -man -Tutf8 -ww -z "$page" > "$tmp/groff" 2>&1 || fail "groff failed: $(cat "$tmp/groff")"
    [ ! -s "$tmp/groff" ] || fail "groff -man -Tutf8 -ww warns: $(cat "$tmp/groff")"
    rendered="groff -ww renders it without a warning"
else
    rendered="not rendered: no groff here (Debian: groff-base)"
fi
if command -v man >/dev/null; then
    MANWIDTH=80 man -l "$page" > "$tmp/man" 2> "$tmp/man.err" || fail "man -l failed: $(cat "$tmp/man.err")"
    [ ! -s "$tmp/man.err" ] || fail "man -l warns: $(cat "$tmp/man.err")"
    grep -q 'gpuipc_test - prove that GPU memory sharing' "$tmp/man" || fail "man -l rendered no NAME"
    rendered="$rendered; man -l renders it"
else
    rendered="$rendered; no man here (Debian: man-db)"
fi
echo "manpage: its $(wc -l < "$tmp/help.opts") options are --help's; $rendered"
