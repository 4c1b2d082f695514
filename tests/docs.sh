#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# docs.sh [--update] PROGRAM: every sample of the program's output that the docs mark
# with <!-- sample: ARGS --> on the line before a fenced block must be what
# `PROGRAM ARGS` prints now, byte for byte, except for what differs from one
# machine to the next (the RLIMIT_NOFILE numbers) or one commit to the next
# (the commit --list names) or one place to the next (where --help finds the
# documentation: the source tree's lines are shown as an installed copy
# prints them, /usr/local/share/doc/gpuipc-test). The --list sample shows a
# machine without a CUDA driver: where this one has a driver, it is not
# compared, and the script says so. Exits 1 at any difference, showing it.
# With --update it writes the program's output into every marked block
# instead (after a change to --help or --list), and says which files changed.
update=0
if [ "${1:-}" = --update ]; then
    update=1
    shift
fi
prog=${1:-./gpuipc_test}
root=$(cd "$(dirname "$0")/.." && pwd)
# --help's last lines, run in the source tree, as an installed copy prints
# them (make install's default PREFIX): the samples read as users see them.
installed='s|^  .* (the source tree this program is in)$|  /usr/local/share/doc/gpuipc-test|
s|^  man -l .*/docs/gpuipc_test\.1$|  man gpuipc_test|'
if [ "$update" = 1 ]; then
    for md in "$root"/README.md "$root"/docs/*.md; do
        grep -q '^<!-- sample: .* -->$' "$md" 2>/dev/null || continue
        new=$(mktemp) || exit 2
        # Each marked block's contents become the output of PROGRAM ARGS.
        installed=$installed awk -v prog="$prog" '
            /^<!-- sample: .* -->$/ { print; args = $0; sub(/^<!-- sample: /, "", args);
                                      sub(/ -->$/, "", args); want = 1; next }
            want && /^```/ && !inside { print; inside = 1
                                        cmd = prog " " args " 2>&1 | sed \"$installed\""
                                        while ((cmd | getline l) > 0)
                                            print l
                                        close(cmd); next }
            inside && /^```/ { print; inside = 0; want = 0; next }
            inside { next }
            { want = 0; print }
        ' "$md" > "$new"
        if cmp -s "$new" "$md"; then
            rm -f "$new"
        else
            cat "$new" > "$md" && rm -f "$new" && echo "docs: updated the samples in $md"
        fi
    done
    exit 0
fi
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
normalise() {
    sed -e "$installed" -e 's/RLIMIT_NOFILE [0-9a-z]* (hard [0-9a-z]*)/RLIMIT_NOFILE N (hard N)/' \
        -e 's/(commit \([0-9a-f]\{12\}\(-dirty\)\{0,1\}\|unknown\))/(commit C)/'
}
bad=0 n=0
for md in "$root"/README.md "$root"/docs/*.md; do
    [ -f "$md" ] || continue
    # One file per sample: its arguments on the first line, then the block.
    awk -v dir="$tmp" -v base="$(basename "$md")" '
        /^<!-- sample: .* -->$/ { args = $0; sub(/^<!-- sample: /, "", args);
                                  sub(/ -->$/, "", args); want = 1; next }
        want && /^```/ { if (inside) { close(f); inside = 0; want = 0; next }
                         k++; f = dir "/" base "." k; print args > f; inside = 1; next }
        inside { print > f }
        want && !inside && !/^```/ { want = 0 }
    ' "$md"
done
for f in "$tmp"/*.md.*; do
    [ -f "$f" ] || continue
    n=$((n + 1))
    args=$(head -n 1 "$f")
    where=${f##*/}
    where=${where%.*}
    # A sample shows what a user's machine prints: never this machine's
    # checkout, nor a build of uncommitted changes.
    if tail -n +2 "$f" | grep -q '(the source tree this program is in)$\|(commit [0-9a-f]*-dirty)'; then
        echo "docs: $where: the '$args' sample shows a build machine's checkout or a -dirty" \
             "commit (sh tests/docs.sh --update from a clean tree writes the installed paths)"
        bad=1
    fi
    tail -n +2 "$f" | normalise > "$f.want"
    # shellcheck disable=SC2086 # the arguments are words
    "$prog" $args 2>&1 | normalise > "$f.got"
    case " $args " in
    *" --list "*)
        if ! grep -q '^CUDA: not available: no CUDA driver' "$f.got"; then
            echo "docs: $where: the '$args' sample shows a machine without a CUDA driver;" \
                 "this one has one, so it is not compared here"
            continue
        fi ;;
    esac
    if ! diff -u "$f.want" "$f.got" > "$f.diff"; then
        echo "docs: $where: the sample of 'gpuipc_test $args' differs from the program's" \
             "output (- docs, + program):"
        cat "$f.diff"
        bad=1
    fi
done
if [ "$n" -lt 2 ]; then
    echo "docs: found $n marked samples; docs/output.md must mark the --help and --list ones"
    exit 1
fi
[ "$bad" = 0 ] && echo "docs: $n samples in README.md and docs/ match the program's output"
exit $bad
