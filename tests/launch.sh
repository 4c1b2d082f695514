#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# launch.sh: lib/launch under a real PMIx launcher (Open MPI's mpirun, 4
# ranks on this machine): every rank gets the same token and 4 cards and
# agrees they share this node; a rank given a faked boot id (through the
# facts' GPUIPC_TEST_SYSROOT hook) is "not on this node" to the others and
# they to it; a fence that one rank never enters ends in every other rank
# with PMIx_Fence's named timeout, within the timeout and its grace. Each
# rank also proves that PMIx's own FDs are left out of the FD accounting
# and gone after PMIx_Finalize (tests/pmix_probe.c).
#
# Usage: sh tests/launch.sh [build/tests/pmix_probe]. Skipped, saying so,
# where there is no mpirun or no libpmix.so.2; exits 1 on any failure.
probe=${1:-build/tests/pmix_probe}
echo "== tests/launch.sh (lib/launch under mpirun)"
if ! command -v mpirun >/dev/null 2>&1; then
    echo "SKIP: tests/launch.sh: no mpirun here (Debian: apt-get install openmpi-bin libpmix-dev)"
    exit 0
fi
[ -x "$probe" ] || { echo "FAIL: tests/launch.sh: no $probe (make $probe)"; exit 1; }

tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
fails=0
fail() {
    echo "FAIL: launch: $*"
    fails=$((fails + 1))
}

# mpirun with what this machine needs: root is refused without the flag,
# and 4 ranks may exceed the cores. A bound on the whole run: a hang is a
# failure, never a stuck make check.
run() {
    timeout 60 mpirun --allow-run-as-root --oversubscribe "$@" >"$tmp/out" 2>&1
}

# 1. Four ranks on this node.
started=$(date +%s)
run -np 4 "$probe" --timeout 10
rc=$?
if grep -q '^SKIP: ' "$tmp/out"; then
    echo "SKIP: tests/launch.sh: $(grep -m1 '^SKIP: ' "$tmp/out" | cut -c7-)"
    exit 0
fi
[ $rc = 0 ] || fail "4 ranks: mpirun exited $rc"
n=$(grep -c '^rank [0-3]: PASS$' "$tmp/out")
[ "$n" = 4 ] || fail "4 ranks: $n of 4 ranks passed"
tokens=$(sed -n 's/^rank [0-3]: token \([0-9a-f]\{32\}\)$/\1/p' "$tmp/out" | sort -u)
[ "$(sed -n 's/^rank [0-3]: token //p' "$tmp/out" | wc -l)" = 4 ] &&
    [ "$(echo "$tokens" | grep -c .)" = 1 ] ||
    fail "4 ranks: not one token of 32 hex digits for all: $(sed -n 's/^rank [0-3]: token //p' "$tmp/out" | tr '\n' ' ')"
n=$(grep -c '^rank [0-3]: card [0-3]: same node: ' "$tmp/out")
[ "$n" = 16 ] || fail "4 ranks: $n of 16 cards on this node"
n=$(grep -c '^rank [0-3]: fds: \([0-9]*\) at start, [0-9]* open with PMIx up of which [1-9][0-9]* PMIx.s (left out), \1 after finalize$' "$tmp/out")
[ "$n" = 4 ] || fail "4 ranks: $n of 4 ranks ended with the FDs they started with, PMIx's left out while up"
for r in 0 1 2 3; do
    grep -q "^rank $r: node place $r of 4\$" "$tmp/out" || fail "4 ranks: rank $r is not place $r of 4 on this node"
done
if [ $fails = 0 ]; then
    echo "PASS: launch: 4 ranks, one token ($tokens), 16 of 16 cards on this node, FDs as at the start ($(($(date +%s) - started)) s)"
else
    sed 's/^/    /' "$tmp/out"
fi

# 2. Rank 3 with a faked boot id: the facts read it under a root whose
# proc/self is the real one, so only the boot id differs.
before=$fails
mkdir -p "$tmp/root/proc/sys/kernel/random"
ln -s /proc/self "$tmp/root/proc/self"
echo 0badb007-0000-4000-8000-00000000beef >"$tmp/root/proc/sys/kernel/random/boot_id"
run -np 3 "$probe" --timeout 10 : -np 1 env GPUIPC_TEST_SYSROOT="$tmp/root" "$probe" --timeout 10
rc=$?
[ $rc = 0 ] || fail "faked boot id: mpirun exited $rc"
n=$(grep -c '^rank [0-2]: card 3: not on this node: rank 3 (host [^)]*) runs in another boot (boot id 0badb007\.\.\. vs ' "$tmp/out")
[ "$n" = 3 ] || fail "faked boot id: $n of 3 ranks say rank 3 is not on this node"
n=$(grep -c '^rank 3: card [0-2]: not on this node: rank [0-2] (host [^)]*) runs in another boot (boot id [0-9a-f]*\.\.\. vs 0badb007\.\.\. here)' "$tmp/out")
[ "$n" = 3 ] || fail "faked boot id: rank 3 says $n of 3 others are not on this node"
n=$(grep -c '^rank [0-2]: card [0-2]: same node: ' "$tmp/out")
[ "$n" = 9 ] || fail "faked boot id: $n of 9 cards among ranks 0 to 2 on this node"
grep -q '^rank 3: node place 0 of 1$' "$tmp/out" || fail "faked boot id: rank 3 is not alone on its node"
grep -q '^rank 2: node place 2 of 3$' "$tmp/out" || fail "faked boot id: rank 2 is not place 2 of 3"
if [ $fails = "$before" ]; then
    echo "PASS: launch: a faked boot id on rank 3: 3 of 3 others say \"not on this node\", and it of them"
else
    sed 's/^/    /' "$tmp/out"
fi

# 3. Rank 3 never enters the fence: the others time out, named, in time.
before=$fails
started=$(date +%s)
run -np 4 "$probe" --timeout 2 --skip-fence 3
rc=$?
took=$(($(date +%s) - started))
[ $rc = 0 ] || fail "a rank away from the fence: mpirun exited $rc"
# Each of the others ends it one of three ways, named: the server's
# PMIX_TIMEOUT; this side's own deadline (a server that ignores the
# timeout); or, where the server ends the fence with success regardless
# (OpenPMIx 5.0.1a1 under Open MPI 4.1.6 did, on some ranks), the missing
# rank's mark, fetched with the same timeout.
n=$(grep -cE '^rank [0-2]: fence timed out after [0-6]\.[0-9]* s: PMIx_Fence \(probe, 4 ranks, PMIX_TIMEOUT 2 s\)(: PMIX_ERR_TIMEOUT \(-24\); a rank did not reach the fence in time| no answer within 4 s|: the server ended the fence, but rank 3 never reached it)' "$tmp/out")
[ "$n" = 3 ] || fail "a rank away from the fence: $n of 3 ranks came out of it with a named timeout within 2 + 2 + 2 s"
[ $took -le 20 ] || fail "a rank away from the fence: the run took $took s"
if [ $fails = "$before" ]; then
    echo "PASS: launch: rank 3 away from a fence: 3 of 3 others out of it in $(sed -n 's/^rank [0-2]: fence timed out after \([0-9.]*\) s.*/\1/p' "$tmp/out" | sort -n | tail -1) s at most, named ($took s in all)"
else
    sed 's/^/    /' "$tmp/out"
fi

[ $fails = 0 ] || { echo "FAIL: tests/launch.sh: $fails failure(s)"; exit 1; }
exit 0
