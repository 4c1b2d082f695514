#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# recipes.sh PROGRAM: runs the health-check recipes of docs/health-checks.md
# (docs/recipes/*.sh, and the NHC check gpuipc.nhc under tests/nhc-stub.sh,
# NHC's interface: Debian has no NHC) as written, on memfd, and checks what
# each exits with and prints: a pass, a failure made on purpose, and, for
# the Slurm recipe, that a failure drains the node with the one-line
# reason; the --prom files they write pass tests/promcheck.c and `promtool check
# metrics` where it is installed, the CI
# job's --junit report `xmllint` with the failure in it. Exits 1 at the
# first difference.
prog=$(cd "$(dirname "${1:-./gpuipc_test}")" && pwd)/$(basename "${1:-./gpuipc_test}")
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
fail() { echo "recipes: $*"; exit 1; }
# No GPU here: the recipes' --expect-gpus is off, but for the case that
# shows what it does on a node that lost its GPUs.
export GPUIPC_TEST="$prog" GPUIPC_ARGS="--only memfd --size 1M" GPUIPC_EXPECT_GPUS=none

# node-problem-detector: exit 0 and one line for a pass; 1 for a failure.
out=$(sh "$root/docs/recipes/npd-plugin.sh"); rc=$?
[ "$rc" = 0 ] || fail "npd-plugin.sh exited $rc on a pass: $out"
[ "$(printf '%s\n' "$out" | wc -l)" = 1 ] || fail "npd-plugin.sh printed more than a line: $out"
case $out in PASS:*) ;; *) fail "npd-plugin.sh: '$out' is not a PASS line" ;; esac
out=$(GPUIPC_SABOTAGE=consumer:flip-one sh "$root/docs/recipes/npd-plugin.sh"); rc=$?
[ "$rc" = 1 ] || fail "npd-plugin.sh exited $rc on a failure: $out"
case $out in FAIL:*"first failure:"*) ;; *) fail "npd-plugin.sh: '$out' names no failure" ;; esac
out=$(GPUIPC_ARGS="--size banana" sh "$root/docs/recipes/npd-plugin.sh"); rc=$?
[ "$rc" = 2 ] || fail "npd-plugin.sh exited $rc on a usage error (NPD's unknown is 2): $out"
out=$(CUDA_VISIBLE_DEVICES= GPUIPC_EXPECT_GPUS=2 sh "$root/docs/recipes/npd-plugin.sh"); rc=$?
[ "$rc" = 1 ] || fail "npd-plugin.sh exited $rc on a node without its GPUs: $out"
case $out in FAIL:*"--expect-gpus 2"*) ;; *) fail "npd-plugin.sh: '$out' names no GPU count" ;; esac

# Without GPUIPC_EXPECT_GPUS the recipes expect as many GPUs as the node has
# /dev/nvidiaN device nodes (here a made-up /dev with two, and no GPU).
mkdir "$tmp/dev" && : > "$tmp/dev/nvidia0" && : > "$tmp/dev/nvidia1" && : > "$tmp/dev/nvidiactl"
out=$(env -u GPUIPC_EXPECT_GPUS GPUIPC_DEV_DIR="$tmp/dev" CUDA_VISIBLE_DEVICES= \
      sh "$root/docs/recipes/npd-plugin.sh"); rc=$?
[ "$rc" = 1 ] || fail "npd-plugin.sh exited $rc expecting the device nodes' 2 GPUs: $out"
case $out in FAIL:*"--expect-gpus 2"*) ;; *) fail "npd-plugin.sh: '$out' does not expect 2 GPUs" ;; esac

# node-problem-detector with GPUIPC_PROM: the textfile is written and is
# the format, with the verdict.
# Each textfile is held to tests/promcheck.c and, where it is installed (CI
# installs Debian's prometheus), to promtool.
promcheck=${PROMCHECK:-$root/build/tests/promcheck}
[ -x "$promcheck" ] || fail "$promcheck is missing (make builds it)"
prom_ok() {
    "$promcheck" < "$1" || return 1
    if command -v promtool >/dev/null; then promtool check metrics < "$1" || return 1; fi
}
command -v xmllint >/dev/null || fail "xmllint is missing (apt-get install libxml2-utils)"
out=$(GPUIPC_PROM="$tmp/npd.prom" GPUIPC_SABOTAGE=consumer:flip-one \
      sh "$root/docs/recipes/npd-plugin.sh"); rc=$?
[ "$rc" = 1 ] || fail "npd-plugin.sh with GPUIPC_PROM exited $rc on a failure: $out"
prom_ok "$tmp/npd.prom" || fail "npd-plugin.sh: its textfile is not the format"
grep -qx 'gpuipc_test_success 0' "$tmp/npd.prom" || fail "npd-plugin.sh: no failure in the textfile"

# Slurm: a pass drains nothing; a failure drains with the reason.
printf '#!/bin/sh\necho "$@" > %s/drained\n' "$tmp" > "$tmp/drain"
chmod +x "$tmp/drain"
GPUIPC_PROM="$tmp/slurm.prom" DRAIN="$tmp/drain" sh "$root/docs/recipes/slurm-healthcheck.sh"
rc=$?
[ "$rc" = 0 ] || fail "slurm-healthcheck.sh exited $rc on a pass"
prom_ok "$tmp/slurm.prom" || fail "slurm-healthcheck.sh: its textfile is not the format"
grep -qx 'gpuipc_test_success 1' "$tmp/slurm.prom" || fail "slurm-healthcheck.sh: no pass in the textfile"
[ ! -e "$tmp/drained" ] || fail "slurm-healthcheck.sh drained on a pass: $(cat "$tmp/drained")"
GPUIPC_SABOTAGE=consumer:flip-one DRAIN="$tmp/drain" sh "$root/docs/recipes/slurm-healthcheck.sh"
rc=$?
[ "$rc" = 1 ] || fail "slurm-healthcheck.sh exited $rc on a failure"
grep -q "gpuipc_test exit 1: FAIL: 0 passed, 1 failed" "$tmp/drained" ||
    fail "slurm-healthcheck.sh drained without the reason: $(cat "$tmp/drained" 2>&1)"
# A wedged call (every signal blocked, as a stuck driver call) ends by the
# deadline, and the node is drained with the stuck step named.
rm -f "$tmp/drained"
GPUIPC_FAULT=consumer:import:wedge GPUIPC_ARGS="$GPUIPC_ARGS --deadline 1" DRAIN="$tmp/drain" \
    sh "$root/docs/recipes/slurm-healthcheck.sh"
rc=$?
[ "$rc" = 1 ] || fail "slurm-healthcheck.sh exited $rc on a wedged consumer"
grep -q "gpuipc_test exit 1: FAIL: --deadline 1.000 s passed: the consumer is stuck at import" \
    "$tmp/drained" || fail "slurm-healthcheck.sh: a wedge drained without its reason: \
$(cat "$tmp/drained" 2>&1)"

# CI: the JUnit XML and the JSON document are kept, and the job fails.
mkdir "$tmp/artifacts"
(cd "$tmp" && GPUIPC_SABOTAGE=consumer:flip-one sh "$root/docs/recipes/ci-job.sh") > /dev/null
rc=$?
[ "$rc" = 1 ] || fail "ci-job.sh exited $rc on a failure"
xmllint --noout "$tmp/artifacts/gpuipc-junit.xml" || fail "ci-job.sh: its JUnit XML is not XML"
[ "$(xmllint --xpath 'string(/testsuites/@failures)' "$tmp/artifacts/gpuipc-junit.xml")" = 2 ] ||
    fail "ci-job.sh: the JUnit XML does not count the scenario's and the run's failures"
[ "$(xmllint --xpath 'count(//testcase[@name="memfd"]/failure)' \
     "$tmp/artifacts/gpuipc-junit.xml")" = 1 ] || fail "ci-job.sh: no failed memfd testcase"
grep -q '"verdict": "fail"' "$tmp/artifacts/gpuipc-result.json" || fail "ci-job.sh kept no JSON"

# NHC: the check passes quietly, and dies with the one-line reason on a
# failure and on a node without the GPUs it must show.
mkdir "$tmp/nhc" && cp "$root/docs/recipes/gpuipc.nhc" "$tmp/nhc/"
echo '* || check_gpuipc -p '"$tmp/nhc.prom"' -o "--only memfd --size 1M"' > "$tmp/nhc.conf"
out=$(bash "$root/tests/nhc-stub.sh" "$tmp/nhc.conf" "$tmp/nhc"); rc=$?
[ "$rc" = 0 ] && [ -z "$out" ] || fail "check_gpuipc on a pass: exit $rc: $out"
prom_ok "$tmp/nhc.prom" || fail "check_gpuipc: its textfile is not the format"
out=$(GPUIPC_SABOTAGE=consumer:flip-one bash "$root/tests/nhc-stub.sh" "$tmp/nhc.conf" "$tmp/nhc")
rc=$?
[ "$rc" = 1 ] || fail "check_gpuipc on a failure: exit $rc: $out"
case $out in "DIED 1: check_gpuipc: gpuipc_test exit 1: FAIL: 0 passed, 1 failed"*) ;;
*) fail "check_gpuipc died without the reason: $out" ;; esac
grep -qx 'gpuipc_test_success 0' "$tmp/nhc.prom" || fail "check_gpuipc: no failure in the textfile"
echo '* || check_gpuipc -e 2 -o "--only memfd"' > "$tmp/nhc.conf"
out=$(CUDA_VISIBLE_DEVICES= bash "$root/tests/nhc-stub.sh" "$tmp/nhc.conf" "$tmp/nhc"); rc=$?
case $rc:$out in 1:"DIED 1: check_gpuipc: gpuipc_test exit 1: FAIL:"*"--expect-gpus 2"*) ;;
*) fail "check_gpuipc -e 2 without GPUs: exit $rc: $out" ;; esac
if command -v promtool >/dev/null; then held="tests/promcheck.c and promtool"
else held="tests/promcheck.c (promtool: not installed here; CI runs it too)"; fi
echo "recipes: the npd, Slurm, CI and NHC recipes of docs/health-checks.md behave as written; their textfiles held to $held"
