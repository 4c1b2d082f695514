#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# tests/check.sh BUILD PROG: make check's run. Each step's output is shown as
# it comes and counted; every step runs, whatever the one before it did; the
# last line is the whole run's count:
#
#   make check: N passed, N failed, N skipped
#
# and the exit status is 1 where anything failed. What counts:
#   - Check's line "NN%: Checks: N, Failures: F, Errors: E": N-F-E passed,
#     F+E failed;
#   - a line "PASS: ...", "FAIL: ..." or "SKIP: ..." (tests/launch.sh,
#     tests/ranks.sh, the program's own run): one each;
#   - a line "<name>: NOT RUN ..." or "<name>: skipped ..." (a tool that is
#     not installed here): one skipped;
#   - a step that said none of these: one passed where it exited 0, else one
#     failed; and a step that exited non-zero without a failure counted is
#     one failed more (a crash says no FAIL line).
# The program's run (the GPU scenarios) exits 77 on a machine without a GPU:
# one skipped, never a pass.
set -u
build=${1:?usage: check.sh BUILD PROG}
prog=${2:?usage: check.sh BUILD PROG}
make=${MAKE:-make}
mkdir -p "$build" || exit 1
tmp=$(mktemp -d "$build/check.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
passed=0 failed=0 skipped=0 failed_steps=

# count LOG RC: "P F S", what a step that said LOG and exited RC counts.
count() {
    c_rc=$2
    set -- $(awk '
        /^[0-9]+%: Checks: [0-9]+, Failures: [0-9]+, Errors: [0-9]+/ {
            gsub(/,/, ""); p += $3 - $5 - $7; f += $5 + $7; any = 1; next }
        /^PASS: / { p++; any = 1; next }
        /^FAIL: / { f++; any = 1; next }
        /^SKIP: / { s++; any = 1; next }
        /^[A-Za-z0-9_.\/-]+: (NOT RUN|skipped)/ { s++; any = 1; next }
        END { print p + 0, f + 0, s + 0, any + 0 }' "$1")
    if [ "$4" = 0 ]; then
        if [ "$c_rc" = 0 ]; then echo 1 0 0; else echo 0 1 0; fi
    elif [ "$c_rc" != 0 ] && [ "$2" = 0 ]; then
        echo "$1" 1 "$3"
    else
        echo "$1" "$2" "$3"
    fi
}

# step LABEL CMD ARGS...: runs CMD, shows and counts what it says.
step() {
    label=$1
    shift
    { "$@" 2>&1; echo $? > "$tmp/rc"; } | tee "$tmp/log"
    rc=$(cat "$tmp/rc" 2>/dev/null || echo 1)
    set -- $(count "$tmp/log" "$rc")
    # A failure counted for no line that says it is said here.
    if [ "$rc" != 0 ] && ! grep -q -e '^FAIL: ' -e '^[0-9]*%: Checks: ' "$tmp/log"; then
        echo "FAIL: $label exited $rc" | tee -a "$tmp/failures"
    fi
    passed=$((passed + $1)) failed=$((failed + $2)) skipped=$((skipped + $3))
    [ "$2" = 0 ] || failed_steps="$failed_steps${failed_steps:+, }$label"
    # Each failure's own line, said again at the end: a log read from its
    # tail (CI's) names the test, not only the step.
    grep -E -e '^[^ :]+:[0-9]+:[FE]:' -e '^FAIL: ' "$tmp/log" >> "$tmp/failures"
}

# The counting itself, held to what each kind of step says: this step fails
# where a rule above is broken.
count_holds() {
    bad=0 n=0
    while IFS='|' read -r want want_rc text; do
        printf '%b\n' "$text" > "$tmp/sample"
        got=$(count "$tmp/sample" "$want_rc")
        n=$((n + 1))
        [ "$got" = "$want" ] ||
            { printf "FAIL: counting '%s' (exit %s): '%s', not '%s'\n" "$text" "$want_rc" \
                "$got" "$want"; bad=1; }
    done <<'SAMPLES'
7 2 0|1|Running suite(s): x\n81%: Checks: 9, Failures: 1, Errors: 1
9 0 0|0|100%: Checks: 9, Failures: 0, Errors: 0
2 1 1|1|PASS: a\nPASS: b\nFAIL: c\nSKIP: d
2 1 0|139|PASS: a\nPASS: b\n(a crash says no FAIL line)
0 0 1|0|manifests: NOT RUN: no PyYAML here
0 0 1|0|cuda-check: skipped: no CUDA toolkit header
1 0 0|0|layers: every include in lib/ goes to the same layer or one below
0 1 0|2|layers: lib/core/x.c includes app/y.h
1 0 0|0|manifests: ran both pairs (apart: NOT RUN in PID namespaces of their own)
SAMPLES
    [ $bad = 0 ] && echo "check: the counting holds for each kind of step ($n samples)"
}

manifests() {
    if command -v python3 >/dev/null; then
        python3 tests/manifests.py "$prog"
    else
        echo "manifests: NOT RUN: no python3 (Debian: python3, python3-yaml)"
    fi
}

# The GPU scenarios: 77 (no GPU here) is a skip, never a pass.
gpu_run() {
    echo "== $prog (the GPU scenarios)"
    "$prog" --quiet
    rc=$?
    case $rc in
    0) echo "PASS: $prog" ;;
    77) echo "SKIP: $prog exited 77: no GPU scenario could run here (not a pass)" ;;
    *) echo "FAIL: $prog exited $rc"; return 1 ;;
    esac
}

step tests/check.sh count_holds
step cuda-check "$make" --no-print-directory -s cuda-check
step pmix-check "$make" --no-print-directory -s pmix-check
step tests/layers.sh sh tests/layers.sh
step tests/licence.sh sh tests/licence.sh
step tests/docs.sh sh tests/docs.sh "$prog"
step tests/manpage.sh sh tests/manpage.sh "$prog"
step tests/completion.sh sh tests/completion.sh "$prog"
step tests/install.sh sh tests/install.sh "$prog"
step tests/manifests.py manifests
step tests/recipes.sh env PROMCHECK="$build/tests/promcheck" sh tests/recipes.sh "$prog"
echo "GPUIPC_TEST_BIN=$prog $build/tests/check_nogpu"
step check_nogpu env GPUIPC_TEST_BIN="$prog" "$build/tests/check_nogpu"
step tests/launch.sh sh tests/launch.sh "$build/tests/pmix_probe"
step tests/ranks.sh sh tests/ranks.sh "$prog"
step tests/golden.sh sh tests/golden.sh "$prog" "$build/tests/golden_norm"
step "$prog" gpu_run

if [ -n "$failed_steps" ]; then
    echo "make check: failed in: $failed_steps"
    sed 's/^/make check: failed: /' "$tmp/failures" 2>/dev/null | head -n 40
fi
echo "make check: $passed passed, $failed failed, $skipped skipped"
[ "$failed" = 0 ]
