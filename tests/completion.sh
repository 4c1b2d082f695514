#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# completion.sh PROGRAM: the bash completion (deploy/gpuipc_test.bash) as bash
# runs it on a command line typed so far: the options (every one --help
# lists), mechanism names after --only and --require (also after a comma),
# file names after --json, --serve and --connect. Exits 1 at the first
# difference; without bash, says so and exits 0.
prog=$(cd "$(dirname "${1:-./gpuipc_test}")" && pwd)/$(basename "${1:-./gpuipc_test}")
root=$(cd "$(dirname "$0")/.." && pwd)
command -v bash >/dev/null || { echo "completion: NOT RUN: no bash here"; exit 0; }
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
fail() { echo "completion: $*"; exit 1; }
# offered WORDS...: what the completion offers for the last word, one a line
# (sorted), the program being PROGRAM.
offered() {
    (cd "$tmp" && bash -c '. "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1))
        _gpuipc_test; printf "%s\n" "${COMPREPLY[@]}"' sh "$root/deploy/gpuipc_test.bash" \
        "$prog" "$@" | sort)
}
expect() { # expect 'WANT (lines)' WORDS...
    want=$1
    shift
    got=$(offered "$@")
    [ "$got" = "$want" ] || fail "for 'gpuipc_test $*' it offers [$(echo "$got" | tr '\n' ' ')], not [$(echo "$want" | tr '\n' ' ')]"
}
expect '--only' --on
expect '--require' --req
expect "$(printf 'memfd\nmemfd-chunks\nmemfd-pidfd')" --only memf
expect 'vmm,memfd-pidfd' --only vmm,memfd-p
expect 'fabric' --size 1M --require fab
expect 'all' --device ''
expect 'none' --deadline n
: > "$tmp/result.json" && mkdir "$tmp/run"
expect "$(printf 'result.json\nrun')" --json ''
expect 'run' --serve ru
# Every option --help lists, and nothing else, for a bare '-'.
"$prog" --help | sed -n '/^Options:$/,/^Mechanisms:$/p' |
    grep -oE '^  (-[a-zA-Z], )?--[a-z][a-z-]*' | tr ',' '\n' | tr -d ' ' | sort > "$tmp/opts"
expect "$(cat "$tmp/opts")" -
echo "completion: options ($(wc -l < "$tmp/opts")), mechanism names (after a comma too) and files complete"
