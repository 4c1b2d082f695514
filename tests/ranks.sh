#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# ranks.sh: gpuipc_test --ranks under a real PMIx launcher (Open MPI's
# mpirun), 4 ranks on this machine over the host-memory mechanisms:
#   1. every ordered pair proven (12), in phases and (GPUIPC_PHASES=off)
#      in rounds, every rank exits 0, rank 0's --json
#      holds every pair and no other rank writes it; its --prom file passes
#      `promtool check metrics` and its --junit file `xmllint --noout`
#      (each check said SKIP where its tool is missing), each with 12 pairs
#      x 2 mechanisms;
#      A rank that leaks an FD in each session (GPUIPC_SABOTAGE): each
#      phase's count names it, its pairs fail;
#   2. a rank killed by SIGKILL during a pair (GPUIPC_FAULT), with
#      Open MPI's abort setting off: the others name it and finish, each
#      exiting 1, long before --timeout; rank 0's --json names it alone
#      among the culprits, with its node and each of its 6 pairs;
#   3. a rank whose proof at HELLO is made with a wrong token
#      (GPUIPC_SABOTAGE): each consumer refuses it before it sends any fact,
#      its pairs fail, the others' pass;
#      A rank that sends a frame not sealed under its session's key
#      (GPUIPC_FAULT corrupt): each consumer refuses it, named;
#   4. a rank given another boot id (the facts' GPUIPC_TEST_SYSROOT hook),
#      which the launcher placed on this node: its pairs are skipped, said
#      once, the run passes; two "nodes" of two ranks (GPUIPC_TEST_BOOT_ID)
#      meet over TCP on loopback: the pairs across them are met and their
#      FD mechanisms left out; a frame not sealed refused over TCP; a rank
#      of the other node killed, named; the same two nodes in two network
#      namespaces joined by veth (NOT RUN without root, iproute2 or python3);
#      the plan by NVLink domain from the stand-in CUDA and NVML libraries
#      (two cliques skipped, failed under --require fabric; a health fault
#      and a fabric not started failed; a zero cluster skipped);
#   5. ranks with other options than rank 0's: every rank exits 2;
#   6. a rank that hangs (GPUIPC_FAULT): its pairs fail, each naming where
#      it is stuck, rank 0's verdict comes by the deadline;
#      a rank wedged at import (memfd): the same, with culprits;
#   7. rank 0 wedged: its verdict thread gives the verdict by the deadline,
#      each pair's state said, --json FAIL; and rank 0 killed: rank 1, the
#      lowest living rank, gives the verdict and writes --json;
#   8. --ranks with no launcher, and with --device: usage errors (exit 2);
#   9. a stranger of the same user that reads every rank's listener name in
#      /proc/net/unix: it cannot bind one (taken before anyone knew it), and
#      each connection it makes, with a made-up HELLO, is refused by the
#      rank it tried and named by that rank and by rank 0; every pair is
#      still proven.
# Each rank runs under a small shell that prints how it exited ("EXIT
# <rank> <status>") and exits with that number, which also keeps Open MPI
# 4.1's mpirun from hanging after a rank dies of a signal with the abort
# setting off (it waits for ever for such a job: docs/ranks.md).
#
# Usage: sh tests/ranks.sh [program]. Skipped, saying so, where there is no
# mpirun or no libpmix.so.2; exits 1 on any failure.
prog=${1:-./gpuipc_test}
echo "== tests/ranks.sh (--ranks under mpirun)"
if ! command -v mpirun >/dev/null 2>&1; then
    echo "SKIP: tests/ranks.sh: no mpirun here (Debian: apt-get install openmpi-bin libpmix-dev)"
    exit 0
fi
[ -x "$prog" ] || { echo "FAIL: tests/ranks.sh: no $prog"; exit 1; }

tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"; [ -z "${ns:-}" ] || ip netns del "$ns" 2>/dev/null' EXIT INT TERM
fails=0
fail() {
    echo "FAIL: ranks: $*"
    fails=$((fails + 1))
    sed 's/^/    /' "$tmp/out" | cut -c1-300 | tail -30
}
cat >"$tmp/rank" <<'EOS'
#!/bin/sh
"$@"
rc=$?
echo "EXIT $PMIX_RANK $rc"
exit $rc
EOS
chmod +x "$tmp/rank"
only="--only memfd,memfd-pidfd"
# mpirun with what this machine needs (root is refused without the flag; 4
# ranks may exceed the cores), the abort setting off, and a bound on all.
run() {
    timeout 60 mpirun --allow-run-as-root --oversubscribe --mca orte_abort_on_non_zero_status 0 \
        "$@" >"$tmp/out" 2>&1
}
# How many pairs the lines matching the ERE $1 cover: rank 0 says lines
# alike once, the first pair's, and "  and N more alike: ..." (or "alike
# but for their figures") below it.
alike() {
    awk -v pat="$1" '$0 ~ pat { n++; hit = 1; next }
        hit && /^  and [0-9]+ more alike( but for their figures)?: / { n += $2 } { hit = 0 }
        END { print n + 0 }' "$tmp/out"
}
exits() { # the ranks' exit statuses, in rank order
    sed -n 's/^EXIT \([0-9]*\) \([0-9]*\)$/\1 \2/p' "$tmp/out" | sort -n | cut -d' ' -f2 | tr '\n' ' '
}

# 1. Four ranks.
started=$(date +%s)
run -np 4 "$tmp/rank" "$prog" --ranks $only --json "$tmp/doc.json" --prom "$tmp/run.prom" \
    --junit "$tmp/run.xml"
if grep -q 'libpmix.so.2.*cannot\|result: SKIP: joining the job' "$tmp/out"; then
    echo "SKIP: tests/ranks.sh: $(grep -m1 'result: SKIP' "$tmp/out")"
    exit 0
fi
[ "$(exits)" = "0 0 0 0 " ] || fail "4 ranks: exit statuses '$(exits)', not 0 for each"
grep -q '^result: PASS: 4 ranks, 12 ordered pairs: 12 proven, 0 failed, 0 skipped (their scenarios: 24 passed, 0 failed, 0 skipped)' "$tmp/out" ||
    fail "4 ranks: no PASS with 12 of 12 pairs proven"
[ "$(grep -c '^rank [1-3]: result: PASS: the run.s, from rank 0 (exit 0)$' "$tmp/out")" = 3 ] ||
    fail "4 ranks: not every other rank took rank 0's verdict"
python3 - "$tmp/doc.json" >"$tmp/doc.txt" 2>&1 <<'EOP' || fail "4 ranks: --json: $(cat "$tmp/doc.txt")"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["schema"] == "gpuipc-ranks/1" and d["verdict"] == "PASS" and d["exit_code"] == 0, d
assert d["size"] == 4 and d["pairs_proven"] == 12 and len(d["ranks"]) == 4, d
pairs = {(p["producer"], p["consumer"]) for p in d["pairs"] if p["verdict"] == "PASS"}
assert pairs == {(a, b) for a in range(4) for b in range(4) if a != b}, pairs
for p in d["pairs"]:
    assert sorted(s["mechanism"] for s in p["scenarios"]) == ["memfd", "memfd-pidfd"], p
    assert all(s["status"] == "PASS" for s in p["scenarios"]), p
EOP
[ "$(ls "$tmp" | grep -c json)" = 1 ] || fail "4 ranks: files beside rank 0's --json: $(ls "$tmp")"
# --prom and --junit: what their tools take, and a row per scenario of
# each ordered pair (12 x 2), named by ranks.
checked=
if command -v promtool >/dev/null 2>&1; then
    promtool check metrics <"$tmp/run.prom" >"$tmp/tool.txt" 2>&1 ||
        fail "4 ranks: promtool refuses --prom: $(cat "$tmp/tool.txt")"
    checked="$checked promtool"
else
    echo "SKIP: ranks: --prom not checked by promtool (not installed; Debian: prometheus)"
fi
if command -v xmllint >/dev/null 2>&1; then
    xmllint --noout "$tmp/run.xml" >"$tmp/tool.txt" 2>&1 ||
        fail "4 ranks: xmllint refuses --junit: $(cat "$tmp/tool.txt")"
    checked="$checked xmllint"
else
    echo "SKIP: ranks: --junit not checked by xmllint (not installed; Debian: libxml2-utils)"
fi
[ "$(grep -c '^gpuipc_test_scenario_success{mechanism="memfd\(-pidfd\)\{0,1\}",gpu="[0-3]",peer_gpu="[0-3]"} 1$' "$tmp/run.prom")" = 24 ] &&
    grep -q '^gpuipc_test_success 1$' "$tmp/run.prom" &&
    grep -q '^gpuipc_test_run_info{.*mode="ranks",role="rank 0"} 1$' "$tmp/run.prom" ||
    fail "4 ranks: --prom does not hold 24 passed scenarios: $(grep -v '^#' "$tmp/run.prom" | head -20)"
[ "$(grep -c '<testcase name="memfd\(-pidfd\)\{0,1\} [0-3]-&gt;[0-3]" classname="gpuipc_test.gpu[0-3]" time="[0-9.]*"/>$' "$tmp/run.xml")" = 24 ] &&
    grep -q '<testcase name="memfd-pidfd 3-&gt;2"' "$tmp/run.xml" &&
    grep -q '^<testsuites name="gpuipc_test" tests="25" failures="0" errors="0" skipped="0"' "$tmp/run.xml" ||
    fail "4 ranks: --junit does not hold 24 passed testcases: $(head -c 600 "$tmp/run.xml")"
[ $fails = 0 ] && echo "PASS: ranks: 4 ranks, 12 of 12 ordered pairs proven over memfd and memfd-pidfd, each rank exit 0, rank 0's --json alone, --prom and --junit with 24 scenarios (checked by:${checked:- nothing}) ($(($(date +%s) - started)) s)"

# 1a. The same four ranks one pair at a time, in rounds (GPUIPC_PHASES=off):
# every ordered pair still proven, each rank exit 0; the phases' lines
# say which schedule ran.
before=$fails
grep -q '^ranks: 4 ranks .*each ordered pair in phases' "$tmp/out" ||
    fail "4 ranks: the run does not say it plays phases"
run -np 4 env GPUIPC_PHASES=off "$tmp/rank" "$prog" --ranks $only
[ "$(exits)" = "0 0 0 0 " ] &&
    grep -q '^ranks: 4 ranks .*each ordered pair in rounds of disjoint pairs (GPUIPC_PHASES=off)' "$tmp/out" &&
    grep -q '^result: PASS: 4 ranks, 12 ordered pairs: 12 proven, 0 failed, 0 skipped (their scenarios: 24 passed' "$tmp/out" ||
    fail "4 ranks in rounds: not 12 of 12 pairs proven, each rank exit 0 ('$(exits)')"
[ $fails = $before ] && echo "PASS: ranks: the same 4 ranks in rounds (GPUIPC_PHASES=off): 12 of 12 pairs proven, each rank exit 0"

# 1c. A rank whose every session leaks an FD after its scenarios' own
# counts (GPUIPC_SABOTAGE consumer:leak-fd): in phases a session counts
# its driver objects alone, so each phase's count at its end must catch
# it: both of that rank's pairs of each phase fail, named "a drift not tied
# to a cell", the pairs between the others are proven, every rank exit 1.
before=$fails
run -np 1 "$tmp/rank" "$prog" --ranks $only : \
    -np 1 env GPUIPC_SABOTAGE=consumer:leak-fd "$tmp/rank" "$prog" --ranks $only : \
    -np 1 "$tmp/rank" "$prog" --ranks $only
[ "$(exits)" = "1 1 1 " ] || fail "leaking rank: exit statuses '$(exits)', not 1 1 1"
grep -q '^result: FAIL: 3 ranks, 6 ordered pairs: 2 proven, 4 failed' "$tmp/out" ||
    fail "leaking rank: not its 4 pairs failed and the other 2 proven"
[ "$(alike '^FAIL [0-2] -> [0-2]: .*phase [12]: rank 1 \([^)]*\) holds what it did not at the phase.s beginning: [0-9]+ FDs? leaked: fd [0-9]+ \(/dev/null\)')" = 4 ] ||
    fail "leaking rank: its 4 pairs do not each name the phase's drift"
[ $fails = $before ] && echo "PASS: ranks: a rank that leaks an FD in each session: each phase's count names it, its 4 pairs fail as a drift not tied to a cell, the other 2 are proven, every rank exit 1"

# 1b. --brief: the job's output is one line, the verdict's, from the rank
# that gave it (the ranks' "EXIT" lines are the wrapper's); a failure
# names its first pair with the more specific side's cause.
# The lines of the program's (a verdict, a rank's line, a result, a step):
# the launcher may add its own (Open MPI's hwloc in a chroot: "[hwloc/linux]
# failed to find sysfs cpu topology directory").
ours() {
    grep -cE '^(PASS|FAIL|SKIP|STOPPED|USAGE ERROR)[: ]|^rank [0-9]+: |^result: |^ranks: |^ +[0-9.]+ ms ' "$tmp/out"
}
before=$fails
run -np 4 "$tmp/rank" "$prog" --ranks $only --brief
[ "$(exits)" = "0 0 0 0 " ] && [ "$(ours)" = 1 ] &&
    grep -q '^PASS: 4 ranks, 12 ordered pairs: 12 proven, 0 failed, 0 skipped (their scenarios: 24 passed, 0 failed, 0 skipped), in [0-9.]* s (exit 0)$' "$tmp/out" ||
    fail "--brief: not one PASS line, each rank exit 0"
run -np 3 "$tmp/rank" "$prog" --ranks --only memfd --brief : \
    -np 1 env GPUIPC_SABOTAGE=producer:wrong-token "$tmp/rank" "$prog" --ranks --only memfd --brief
[ "$(exits)" = "1 1 1 1 " ] && [ "$(ours)" = 1 ] &&
    grep -q '^FAIL: 4 ranks, 12 ordered pairs: 9 proven, 3 failed, 0 skipped .* | first failure: 3 -> 0: hello: refused the producer (pid [0-9]*): its AUTH does not prove this job.s token.*; the producer: ' "$tmp/out" ||
    fail "--brief: a wrong token's run is not one FAIL line naming the refusal first"
[ $fails = $before ] && echo "PASS: ranks: --brief: the job says one line, the verdict's (PASS of 12 pairs; a wrong token's FAIL naming the consumer's refusal before the producer's loss)"

# 2. Rank 2 killed (SIGKILL) at its first BEGIN as a producer.
before=$fails
started=$(date +%s)
rm -f "$tmp/doc.json"
run -np 2 "$tmp/rank" "$prog" --ranks $only --json "$tmp/doc.json" : \
    -np 1 env GPUIPC_FAULT=producer:begin:kill "$tmp/rank" "$prog" --ranks $only \
        --json "$tmp/doc.json" : \
    -np 1 "$tmp/rank" "$prog" --ranks $only --json "$tmp/doc.json"
took=$(($(date +%s) - started))
[ "$(exits)" = "1 1 137 1 " ] || fail "rank killed: exit statuses '$(exits)', not 1 1 137 1"
grep -q '^FAIL 2 -> [013]: rank 2 ([^)]*) never reported (it died, hung' "$tmp/out" &&
    grep -q '^FAIL [013] -> 2: .*rank 2 ([^)]*) \(is gone\|gone during\)' "$tmp/out" ||
    fail "rank killed: rank 0 does not say rank 2 is gone"
grep -q 'peer gone during begin' "$tmp/out" || fail "rank killed: the step it died in is not named"
grep -q '^result: FAIL: 4 ranks, 12 ordered pairs: [1-9][0-9]* proven' "$tmp/out" ||
    fail "rank killed: the others' pairs were not proven"
[ "$took" -lt 20 ] || fail "rank killed: took $took s (--timeout is 30): the dead rank was waited for"
# The culprits: rank 2 with each of its 6 pairs; any other rank only for a
# pair that failed too (the others' pairs pass, but a slow machine may fail
# one, and that pair's ranks are then culprits of their own).
python3 - "$tmp/doc.json" "$(hostname)" >"$tmp/doc.txt" 2>&1 <<'EOP' || fail "rank killed: --json's culprits: $(cat "$tmp/doc.txt")"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["verdict"] == "FAIL", d["verdict"]
culprits = {c["rank"]: c for c in d["culprits"]}
assert 2 in culprits, d["culprits"]
two = culprits[2]
assert two["node"] == sys.argv[2] and two["gpu_uuid"] is None, two
assert sorted(two["pairs"]) == sorted(["%d->%d" % p for p in
        [(2, 0), (2, 1), (2, 3), (0, 2), (1, 2), (3, 2)]]), two
failed = {"%d->%d" % (p["producer"], p["consumer"]) for p in d["pairs"] if p["verdict"] == "FAIL"}
for c in d["culprits"]:
    assert set(c["pairs"]) <= failed, (c, failed)
    assert all(str(c["rank"]) in p.split("->") for p in c["pairs"]), c
EOP
[ $fails = $before ] && echo "PASS: ranks: a rank killed during its first pair as producer is named gone (during begin), the 3 others finish and exit 1, in $took s; --json names it among the culprits with its 6 pairs"

# 3. Rank 3's proof as a producer is made with a wrong token.
before=$fails
run -np 3 "$tmp/rank" "$prog" --ranks --only memfd --json "$tmp/doc.json" : \
    -np 1 env GPUIPC_SABOTAGE=producer:wrong-token "$tmp/rank" "$prog" --ranks --only memfd
# The culprit is rank 3 alone: each consumer's refusal of its token leads
# the pair's verdict, and blames the producer.
python3 - "$tmp/doc.json" >"$tmp/doc.txt" 2>&1 <<'EOP' || fail "wrong token: --json's culprits: $(cat "$tmp/doc.txt")"
import json, sys
d = json.load(open(sys.argv[1]))
c = d["culprits"]
assert [x["rank"] for x in c] == [3], c
assert sorted(c[0]["pairs"]) == ["3->0", "3->1", "3->2"], c
EOP
[ "$(exits)" = "1 1 1 1 " ] || fail "wrong token: exit statuses '$(exits)', not 1 for each"
[ "$(grep -c "^rank [0-2]: FAIL as consumer: hello: refused the producer (pid [0-9]*): its AUTH does not prove this job's token" "$tmp/out")" = 3 ] ||
    fail "wrong token: not every consumer refused rank 3"
[ "$(alike '^FAIL 3 -> [0-2]: ')" = 3 ] || fail "wrong token: rank 3's pairs did not fail"
grep -q '^result: FAIL: 4 ranks, 12 ordered pairs: 9 proven, 3 failed' "$tmp/out" ||
    fail "wrong token: not 9 pairs proven and 3 failed"
[ $fails = $before ] && echo "PASS: ranks: a producer whose proof at HELLO is not of the job's token is refused by each consumer before it learns any fact; the other 9 pairs pass"

# 3b. Rank 1 sends a frame that is not sealed under its session's key
# (GPUIPC_FAULT producer:begin:corrupt, written past the seal, as a relay
# that altered it would): each of its consumers refuses it before
# believing any of it and names why, its 2 pairs fail, the other 4 pass.
before=$fails
run -np 1 "$tmp/rank" "$prog" --ranks $only : \
    -np 1 env GPUIPC_FAULT=producer:begin:corrupt "$tmp/rank" "$prog" --ranks $only : \
    -np 1 "$tmp/rank" "$prog" --ranks $only
[ "$(exits)" = "1 1 1 " ] || fail "unsealed frame: exit statuses '$(exits)', not 1 1 1"
[ "$(grep -c "^rank [02]: FAIL as consumer: bad message from the producer during begin: its seal does not hold under the session's key (altered on the way" "$tmp/out")" = 2 ] ||
    fail "unsealed frame: its 2 consumers do not refuse it, named"
grep -q '^result: FAIL: 3 ranks, 6 ordered pairs: 4 proven, 2 failed' "$tmp/out" ||
    fail "unsealed frame: not 4 proven and 2 failed"
[ $fails = $before ] && echo "PASS: ranks: a frame not sealed under the session's key is refused by each consumer, named; its 2 pairs fail, the other 4 pass"

# 4. Rank 3 in another boot.
before=$fails
mkdir -p "$tmp/root/proc/sys/kernel/random"
ln -s /proc/self "$tmp/root/proc/self"
echo 0badb007-0000-4000-8000-00000000beef >"$tmp/root/proc/sys/kernel/random/boot_id"
run -np 3 "$tmp/rank" "$prog" --ranks $only : \
    -np 1 env GPUIPC_TEST_SYSROOT="$tmp/root" "$tmp/rank" "$prog" --ranks $only
[ "$(exits)" = "0 0 0 0 " ] || fail "another boot: exit statuses '$(exits)', not 0 for each"
# The launcher placed every rank on this node, so none listens on TCP: the
# 6 pairs with rank 3 are skipped, said once with the pairs alike.
[ "$(grep -c '^SKIP [0-3] -> [0-3]: rank [0-3] ([^)]*) is on another node by its boot id, but the launcher placed every rank on this node' "$tmp/out")" = 1 ] &&
    grep -q '^  and 5 more alike: [0-3] -> [0-3], .*; ranks [0-3], [0-3], [0-3], [0-3]; nodes ' "$tmp/out" ||
    fail "another boot: its 6 pairs not skipped as on another node, said once"
grep -q '^result: PASS: 4 ranks, 12 ordered pairs: 6 proven, 0 failed, 6 skipped' "$tmp/out" ||
    fail "another boot: not 6 proven and 6 skipped"
[ $fails = $before ] && echo "PASS: ranks: a rank in another boot, all placed on this node by the launcher: its 6 pairs skipped with that cause, said once, the run passes"

# Rank 0's --json ($1) of two nodes, ranks 0-1 and 2-3, over memfd and
# memfd-pidfd: PASS; each pair within a node met over Unix, each across
# over TCP, its 2 scenarios left out (the producer records them only after
# the session took place). What went wrong into $tmp/doc.txt.
two_nodes_json() {
    python3 - "$1" >"$tmp/doc.txt" 2>&1 <<'EOP'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["verdict"] == "PASS", d["verdict"]
for p in d["pairs"]:
    apart = (p["producer"] < 2) != (p["consumer"] < 2)
    assert p["transport"] == ("tcp" if apart else "unix"), p
    if apart:
        assert [s["status"] for s in p["scenarios"]] == ["SKIP", "SKIP"], p
EOP
}

# 4c. Two "nodes" of two ranks (GPUIPC_TEST_BOOT_ID on ranks 2 and 3), met
# over TCP on loopback (--ranks-net=lo): the 4 pairs within a node are
# proven; the 8 across nodes meet (HELLO both ways, sealed) and each of
# their scenarios is left out as FD-based, which the producer records only
# after the session took place (--json); rank 0 says what is left out once.
before=$fails
boot=0badb007000040008000feed0000beef
run -np 2 "$tmp/rank" "$prog" --ranks $only --ranks-net=lo -v --json "$tmp/tcp.json" : \
    -np 2 env GPUIPC_TEST_BOOT_ID=$boot "$tmp/rank" "$prog" --ranks $only --ranks-net=lo -v \
        --json "$tmp/tcp.json"
[ "$(exits)" = "0 0 0 0 " ] || fail "over TCP: exit statuses '$(exits)', not 0 for each"
[ "$(grep -c '^rank [0-3]: listens for ranks of other nodes on 127.0.0.1:[1-9][0-9]*: 127.0.0.1 of lo, chosen by lo$' "$tmp/out")" = 4 ] ||
    fail "over TCP: not every rank listens on loopback"
[ "$(grep -c '^ranks: across nodes only what crosses nodes runs (fabric); left out of the 8 ordered pairs across nodes, as they share memory within one node (by an FD or a pid): memfd, memfd-pidfd$' "$tmp/out")" = 1 ] ||
    fail "over TCP: rank 0 does not say once what is left out across nodes"
grep -q '^SKIP ' "$tmp/out" && fail "over TCP: a pair's left-out mechanism said again"
grep -q '^result: PASS: 4 ranks, 12 ordered pairs: 4 proven, 0 failed, 8 skipped (their scenarios: 8 passed, 0 failed, 16 skipped)' "$tmp/out" ||
    fail "over TCP: not 4 proven and 8 met and skipped"
two_nodes_json "$tmp/tcp.json" || fail "over TCP: --json: $(cat "$tmp/doc.txt")"
[ $fails = $before ] && echo "PASS: ranks: two nodes of two ranks over TCP on loopback: 4 pairs proven within the nodes, the 8 across met and their FD mechanisms left out, said once"

# 4d. Rank 2 of the second node sends a frame not sealed under its
# session's key (at BYE: a session across nodes runs no scenario here):
# its consumers refuse it, those across the nodes (0 and 1, over TCP) as
# the one on its node (3).
before=$fails
run -np 2 "$tmp/rank" "$prog" --ranks $only --ranks-net=lo : \
    -np 1 env GPUIPC_TEST_BOOT_ID=$boot GPUIPC_FAULT=producer:bye:corrupt "$tmp/rank" \
        "$prog" --ranks $only --ranks-net=lo : \
    -np 1 env GPUIPC_TEST_BOOT_ID=$boot "$tmp/rank" "$prog" --ranks $only --ranks-net=lo
[ "$(exits)" = "1 1 1 1 " ] || fail "unsealed over TCP: exit statuses '$(exits)', not 1 for each"
[ "$(grep -c "^rank [013]: FAIL as consumer: bad message from the producer during [a-z-]*: its seal does not hold under the session's key" "$tmp/out")" = 3 ] ||
    fail "unsealed over TCP: its 3 consumers do not refuse it, named"
[ $fails = $before ] && echo "PASS: ranks: a frame not sealed under the session's key is refused over TCP as on the node, named by each of its 3 consumers"

# 4e. Rank 3 of the second node killed at its first BEGIN as a producer:
# the others name it and finish long before --timeout; rank 0, of the
# other node, learns it from its TCP listener, which refuses connections,
# and waits for no results of it.
before=$fails
started=$(date +%s)
run -np 2 "$tmp/rank" "$prog" --ranks $only --ranks-net=lo --timeout 8 : \
    -np 1 env GPUIPC_TEST_BOOT_ID=$boot "$tmp/rank" "$prog" --ranks $only --ranks-net=lo \
        --timeout 8 : \
    -np 1 env GPUIPC_TEST_BOOT_ID=$boot GPUIPC_FAULT=producer:begin:kill "$tmp/rank" "$prog" \
        --ranks $only --ranks-net=lo --timeout 8
took=$(($(date +%s) - started))
[ "$(exits)" = "1 1 1 137 " ] || fail "killed over TCP: exit statuses '$(exits)', not 1 1 1 137"
grep -q '^FAIL 3 -> [0-2]: rank 3 ([^)]*) never reported (it died, hung' "$tmp/out" ||
    fail "killed over TCP: rank 0 does not name rank 3"
grep -q "^rank 0: rank 3 ([^)]*)'s results never came: rank 3 ([^)]*) is gone (its process has ended)" "$tmp/out" ||
    fail "killed over TCP: rank 0 does not know rank 3 is gone (its TCP listener refuses connections)"
[ "$took" -lt 20 ] || fail "killed over TCP: took $took s (--timeout is 8, --deadline none)"
[ $fails = $before ] && echo "PASS: ranks: a rank of another node killed in a pair is named gone by rank 0 (its TCP listener refuses connections), in $took s"

# 4b. The same, rank 2 leaking an FD in each of its consumer's sessions
# (GPUIPC_SABOTAGE consumer:leak-fd): the drifts of its phases 1 and 2 fail
# the 3 pairs it met in them (1 -> 2, 0 -> 2, 2 -> 0), never a pair with
# rank 3, which did not meet and stays skipped as not on this node; in
# phase 3 its consumer's pair (3 -> 2) did not meet, nothing leaked, and
# 2 -> 1 is proven.
before=$fails
run -np 2 "$tmp/rank" "$prog" --ranks $only : \
    -np 1 env GPUIPC_SABOTAGE=consumer:leak-fd "$tmp/rank" "$prog" --ranks $only : \
    -np 1 env GPUIPC_TEST_SYSROOT="$tmp/root" "$tmp/rank" "$prog" --ranks $only
[ "$(exits)" = "1 1 1 1 " ] || fail "another boot and a leak: exit statuses '$(exits)', not 1 for each"
grep -q '^result: FAIL: 4 ranks, 12 ordered pairs: 3 proven, 3 failed, 6 skipped' "$tmp/out" ||
    fail "another boot and a leak: not 3 proven, 3 failed, 6 skipped"
grep -q '^FAIL [0-3] -> 3\|^FAIL 3 -> ' "$tmp/out" &&
    fail "another boot and a leak: a pair with the rank in another boot failed"
[ $fails = $before ] && echo "PASS: ranks: a leaking rank's drifts fail the 3 pairs it met in those phases; its pairs with a rank in another boot stay skipped"

# 4g. Rank 1, of the other node, slow to look (its TCP connects delayed
# 1.5 s by an LD_PRELOAD shim, as a loaded node or a slow path would): rank
# 0 gives its verdict and stays until rank 1 has left (its TCP listener
# refuses a probe), so rank 1 takes rank 0's verdict and never takes it
# for dead. (Before: rank 0 left at once, and rank 1 gave a second verdict,
# FAIL.) Needs cc; else NOT RUN.
before=$fails
if command -v cc >/dev/null 2>&1 && cat >"$tmp/slow.c" <<'EOC' &&
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>
int connect(int fd, const struct sockaddr *sa, socklen_t len)
{
    static int (*real)(int, const struct sockaddr *, socklen_t);
    const char *ms = getenv("SLOW_CONNECT_MS");

    if (real == NULL)
        real = (int (*)(int, const struct sockaddr *, socklen_t))dlsym(RTLD_NEXT, "connect");
    if (ms != NULL && sa != NULL && sa->sa_family == AF_INET)
        usleep((useconds_t)atoi(ms) * 1000);
    return real(fd, sa, len);
}
EOC
    cc -shared -fPIC -o "$tmp/slow.so" "$tmp/slow.c" -ldl 2>"$tmp/cc.err"; then
    run -np 1 "$tmp/rank" "$prog" --ranks $only --ranks-net=lo : \
        -np 1 env GPUIPC_TEST_BOOT_ID=$boot LD_PRELOAD="$tmp/slow.so" SLOW_CONNECT_MS=1500 \
            "$tmp/rank" "$prog" --ranks $only --ranks-net=lo
    [ "$(exits)" = "77 77 " ] || fail "slow rank elsewhere: exit statuses '$(exits)', not 77 77"
    grep -q 'rank 0 is gone' "$tmp/out" && fail "slow rank elsewhere: rank 1 took rank 0 for dead"
    [ $fails = $before ] && echo "PASS: ranks: rank 0 stays until a slow rank of another node has taken its verdict"
else
    echo "ranks: NOT RUN: a slow rank of another node: no cc to build the shim that delays its connects ($(head -1 "$tmp/cc.err" 2>/dev/null))"
fi

# 4h. The plan by NVLink domain, end to end without the hardware: the
# stand-in CUDA driver shows each rank a GPU and the stand-in NVML
# (tests/standin/, GPUIPC_STANDIN_DIR) answers each rank's fabric info from
# a file; two ranks as two nodes, fabric alone. Two cliques of one cluster:
# both pairs SKIP naming both cliques, never tried (no GPU opened), exit 77;
# --require fabric: FAIL, exit 1. A health fault on rank 1 (degraded
# bandwidth), or a fabric not started (an older driver's version 2 info):
# FAIL, exit 1, naming it. A zero cluster (an H100 or H200 board): SKIP,
# not a multi-node NVLink system.
standin=${GPUIPC_STANDIN_DIR:-build/tests/standin}
if [ ! -f "$standin/libcuda.so.1" ] || [ ! -f "$standin/libnvidia-ml.so.1" ]; then
    echo "NOT RUN: ranks: the plan by NVLink domain: no stand-in libraries in $standin (make builds them)"
else
    standin=$(cd "$standin" && pwd)
    domain() { # $1: the fabric file's lines, the rest: options
        printf '%s\n' "$1" >"$tmp/fabric.conf"
        shift
        run -np 1 env LD_LIBRARY_PATH="$standin" GPUIPC_STANDIN_NVML="$tmp/fabric.conf" \
            "$tmp/rank" "$prog" --ranks --only fabric --ranks-net=lo "$@" : \
            -np 1 env LD_LIBRARY_PATH="$standin" GPUIPC_STANDIN_NVML="$tmp/fabric.conf" \
            GPUIPC_TEST_BOOT_ID=$boot "$tmp/rank" "$prog" --ranks --only fabric --ranks-net=lo "$@"
    }
    cl=abababababababababababababababab
    before=$fails
    domain "0 3 0 $cl 1 0 1
1 3 0 $cl 2 0 1" --json "$tmp/domain.json"
    [ "$(exits)" = "77 77 " ] || fail "two cliques: exit statuses '$(exits)', not 77 for each"
    python3 - "$tmp/domain.json" >"$tmp/doc.txt" 2>&1 <<'EOP' || fail "two cliques: --json: $(cat "$tmp/doc.txt")"
import json, sys
d = json.load(open(sys.argv[1]))
f = [r["fabric"] for r in d["ranks"]]
assert [x["clique"] for x in f] == [1, 2], f
assert all(x["state"] == "completed" and x["health_summary"] == "healthy" and
           x["health_faults"] == "" and x["cluster_uuid"] == "abababab-abab-abab-abab-abababababab"
           for x in f), f
assert [p["scenarios"][0]["status"] for p in d["pairs"]] == ["SKIP", "SKIP"], d["pairs"]
EOP
    grep -q "^SKIP 0 -> 1 fabric: not run: not one NVLink domain: rank 0's GPU is in fabric cluster abababab-abab-abab-abab-abababababab, clique 1, and rank 1's in cluster abababab-abab-abab-abab-abababababab, clique 2 (one cluster, two cliques: two NVLink partitions)$" "$tmp/out" ||
        fail "two cliques: 0 -> 1 not skipped naming both cliques"
    [ "$(alike 'fabric: not run: not one NVLink domain')" = 2 ] || fail "two cliques: not both pairs skipped"
    grep -q 'opening its GPU\|CUDA_ERROR_NOT_SUPPORTED' "$tmp/out" && fail "two cliques: a GPU was opened or a call tried"
    grep -q '^result: SKIP: 2 ranks, 2 ordered pairs: 0 proven, 0 failed, 2 skipped' "$tmp/out" ||
        fail "two cliques: no SKIP verdict"
    domain "0 3 0 $cl 1 0 1
1 3 0 $cl 2 0 1" --require fabric
    [ "$(exits)" = "1 1 " ] || fail "two cliques, --require fabric: exit statuses '$(exits)', not 1 for each"
    grep -q "^FAIL 0 -> 1 fabric: not run: not one NVLink domain: .*clique 2 (one cluster, two cliques: two NVLink partitions) (--require fabric)$" "$tmp/out" ||
        fail "two cliques, --require fabric: 0 -> 1 not failed as required"
    grep -q '^result: FAIL: 2 ranks, 2 ordered pairs: 0 proven, 2 failed, 0 skipped' "$tmp/out" ||
        fail "two cliques, --require fabric: no FAIL verdict"
    domain "0 3 0 $cl 1 0 1
1 3 0 $cl 1 1 1"
    [ "$(exits)" = "1 1 " ] || fail "degraded bandwidth: exit statuses '$(exits)', not 1 for each"
    grep -q "^FAIL 0 -> 1 fabric: not run: rank 1's GPU fabric is not healthy: bandwidth degraded (NVML health mask 0x1, summary healthy)" "$tmp/out" ||
        fail "degraded bandwidth: rank 1's health fault not named"
    domain "0 3 0 $cl 1 0 1
1 1 0 0 0 0 -1"
    [ "$(exits)" = "1 1 " ] || fail "fabric not started: exit statuses '$(exits)', not 1 for each"
    grep -q "^FAIL 0 -> 1 fabric: not run: rank 1's GPU fabric is not started (NVML status 0)" "$tmp/out" ||
        fail "fabric not started: not named"
    domain "* 3 0 0 0 0 1"
    [ "$(exits)" = "77 77 " ] || fail "zero cluster: exit statuses '$(exits)', not 77 for each"
    grep -q "^SKIP 0 -> 1 fabric: not run: rank 0's GPU fabric completed with a zero cluster UUID (clique 0): not a multi-node NVLink system" "$tmp/out" ||
        fail "zero cluster: not named as no multi-node NVLink system"
    [ $fails = $before ] && echo "PASS: ranks: the plan by NVLink domain from stand-in NVML: two cliques skipped naming both (failed under --require fabric), a health fault and a fabric not started failed, a zero cluster skipped, no GPU opened"

    # 4i. One domain: the pairs are tried, and fail where the stand-in
    # driver can do no more (it opens no GPU); beside each failure, what
    # this node's IMEX daemon says (a stand-in nvidia-imex-ctl, through
    # GPUIPC_TEST_IMEX_CTL, whose domain lists three other nodes) and the
    # driver's Xid line of this GPU from a recorded kernel log
    # (GPUIPC_TEST_KMSG; the stand-in's GPU 0 is 0000:10:00.0; a line of
    # another GPU is left out).
    before=$fails
    mkdir -p "$tmp/imex"
    cp tests/standin/nvidia-imex-ctl tests/standin/domain-3-nodes.json "$tmp/imex/"
    printf 'GPUIPC_STANDIN_IMEX_N=%s\n' "$tmp/imex/domain-3-nodes.json" >"$tmp/imex/standin.conf"
    printf '%s\n' '3,901,99999999990000,-;NVRM: Xid (PCI:0000:11:00): 13, pid=1, name=other, Graphics Exception' \
        '3,902,99999999990001,-;NVRM: Xid (PCI:0000:10:00): 79, pid=2, name=gpuipc_test, GPU has fallen off the bus.' >"$tmp/kmsg"
    GPUIPC_TEST_IMEX_CTL="$tmp/imex/nvidia-imex-ctl" GPUIPC_TEST_KMSG="$tmp/kmsg" \
        domain "* 3 0 $cl 1 0 1" -v
    [ "$(exits)" = "1 1 " ] || fail "one domain, stand-in driver: exit statuses '$(exits)', not 1 for each"
    grep -q "cause: .*; this node's IMEX daemon (READY) lists 3 nodes, none of them rank 1's address 127.0.0.1 or host [^ ]* (nvidia-imex-ctl -N); kernel log since the run began: \[+[0-9.]* s\] NVRM: Xid (PCI:0000:10:00): 79, pid=2, name=gpuipc_test, GPU ha.*; fix: " "$tmp/out" ||
        fail "one domain, stand-in driver: the IMEX daemon's view and the Xid line not beside the failure"
    grep -q "kernel log: .*Xid (PCI:0000:11:00)" "$tmp/out" && fail "one domain, stand-in driver: another GPU's Xid line kept"
    [ $fails = $before ] && echo "PASS: ranks: beside a cross-node failure, this node's IMEX daemon (a stand-in: READY, the peer's node not listed) and the GPU's Xid line from a recorded kernel log"
    # Review: on a node of two GPUs (the stand-in's GPU 1 is 0000:11:00.0),
    # the Xid line of the GPU the rank does not use is no cause of its
    # failure.
    before=$fails
    GPUIPC_STANDIN_CUDA_GPUS=2 GPUIPC_TEST_IMEX_CTL="$tmp/imex/nvidia-imex-ctl" GPUIPC_TEST_KMSG="$tmp/kmsg" \
        domain "* 3 0 $cl 1 0 1" -v
    [ "$(exits)" = "1 1 " ] || fail "two GPUs a node, stand-in driver: exit statuses '$(exits)', not 1 for each"
    grep -q "kernel log: .*Xid (PCI:0000:10:00)" "$tmp/out" || fail "two GPUs a node: its own GPU's Xid line not kept"
    grep -q "kernel log: .*Xid (PCI:0000:11:00)" "$tmp/out" && fail "two GPUs a node: the Xid line of a GPU the rank does not use kept"
    [ $fails = $before ] && echo "PASS: ranks: on a node of two GPUs, only the Xid line of the rank's own GPU beside its failure"
fi

# 4f. The same two nodes in two network namespaces joined by veth (root,
# iproute2, nsenter and python3 needed; else NOT RUN, never a pass): ranks
# 2 and 3 run in a network namespace of their own (nsenter: their mount and
# PID namespaces stay this node's, so the two of them are one node), and
# the two nodes meet over the veth link (198.18.99.0/24, a range kept for
# tests). mpirun's PMIx server
# listens on 127.0.0.1 of this namespace only, so two small relays carry
# the PMIx connection of ranks 2 and 3 over the link to it.
netns_case() {
    ns=gpuipc$$ va=gpv$$a vb=gpv$$b why=
    [ "$(id -u)" = 0 ] || why="not root (a network namespace and a veth link need it)"
    [ -z "$why" ] && ! command -v ip >/dev/null 2>&1 && why="no ip (Debian: iproute2)"
    [ -z "$why" ] && ! command -v python3 >/dev/null 2>&1 && why="no python3 for the PMIx relays"
    [ -z "$why" ] && ! command -v nsenter >/dev/null 2>&1 && why="no nsenter (Debian: util-linux)"
    if [ -z "$why" ] && ! ip netns add "$ns" 2>"$tmp/ns.err"; then
        why="ip netns add: $(head -1 "$tmp/ns.err")"
    fi
    if [ -z "$why" ] && ! { ip link add "$va" type veth peer name "$vb" &&
        ip link set "$vb" netns "$ns" && ip addr add 198.18.99.1/24 dev "$va" &&
        ip link set "$va" up && ip netns exec "$ns" ip addr add 198.18.99.2/24 dev "$vb" &&
        ip netns exec "$ns" ip link set "$vb" up &&
        ip netns exec "$ns" ip link set lo up; } 2>"$tmp/ns.err"; then
        why="a veth link: $(head -1 "$tmp/ns.err")"
    fi
    if [ -n "$why" ]; then
        ip netns del "$ns" 2>/dev/null
        echo "ranks: NOT RUN: two nodes in two network namespaces joined by veth: $why"
        return
    fi
    cat >"$tmp/relay.py" <<'EOP'
import socket, sys, threading, time
# relay.py LISTEN_HOST PORT TO_HOST READY_FILE: carries each connection to
# LISTEN_HOST:PORT on to TO_HOST:PORT, for 60 s at most.
host, port, to, ready = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
l = socket.socket()
l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
l.bind((host, port))
l.listen(16)
open(ready, "w").close()
def pump(a, b):
    try:
        while True:
            d = a.recv(65536)
            if not d:
                break
            b.sendall(d)
    except OSError:
        pass
    for s in (a, b):
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
def serve():
    while True:
        c, _ = l.accept()
        o = socket.create_connection((to, port))
        for a, b in ((c, o), (o, c)):
            threading.Thread(target=pump, args=(a, b), daemon=True).start()
threading.Thread(target=serve, daemon=True).start()
time.sleep(60)
EOP
    cat >"$tmp/nsrank" <<EOS
#!/bin/sh
# Ranks 2 and 3: in the namespace $ns, of another boot, their PMIx
# connection carried by the relays (started once, by whichever comes first).
if [ "\$PMIX_RANK" -ge 2 ]; then
    port=\$(printf '%s' "\${PMIX_SERVER_URI4:-\${PMIX_SERVER_URI3:-\$PMIX_SERVER_URI2}}" |
        sed -n 's/^[^;]*;tcp4:\/\/127\.0\.0\.1:\([0-9]*\).*/\1/p')
    (
        flock 9
        if [ ! -e "$tmp/relay.\$port" ]; then
            python3 "$tmp/relay.py" 198.18.99.1 "\$port" 127.0.0.1 "$tmp/relay.\$port.out" \
                </dev/null >/dev/null 2>&1 9>&- &
            echo \$! >>"$tmp/relay.pids"
            ip netns exec $ns python3 "$tmp/relay.py" 127.0.0.1 "\$port" 198.18.99.1 \
                "$tmp/relay.\$port.in" </dev/null >/dev/null 2>&1 9>&- &
            echo \$! >>"$tmp/relay.pids"
            for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do
                [ -e "$tmp/relay.\$port.out" ] && [ -e "$tmp/relay.\$port.in" ] && break
                sleep 0.1
            done
            touch "$tmp/relay.\$port"
        fi
    ) 9>"$tmp/relay.lock"
    export GPUIPC_TEST_BOOT_ID=$boot
    exec nsenter --net=/run/netns/$ns "$tmp/rank" "\$@"
fi
exec "$tmp/rank" "\$@"
EOS
    chmod +x "$tmp/nsrank"
    before=$fails
    run -np 4 "$tmp/nsrank" "$prog" --ranks $only --ranks-net=198.18.99.0/24 -v \
        --json "$tmp/ns.json"
    [ "$(exits)" = "0 0 0 0 " ] || fail "namespaces: exit statuses '$(exits)', not 0 for each"
    [ "$(grep -c '^rank [01]: listens for ranks of other nodes on 198.18.99.1:[1-9][0-9]*: 198.18.99.1 of ' "$tmp/out")" = 2 ] &&
        [ "$(grep -c '^rank [23]: listens for ranks of other nodes on 198.18.99.2:[1-9][0-9]*: 198.18.99.2 of ' "$tmp/out")" = 2 ] ||
        fail "namespaces: the ranks do not listen on their ends of the veth link"
    grep -q '^result: PASS: 4 ranks, 12 ordered pairs: 4 proven, 0 failed, 8 skipped (their scenarios: 8 passed, 0 failed, 16 skipped)' "$tmp/out" ||
        fail "namespaces: not 4 proven and 8 met and skipped"
    two_nodes_json "$tmp/ns.json" || fail "namespaces: --json: $(cat "$tmp/doc.txt")"
    [ $fails = $before ] && echo "PASS: ranks: two nodes in two network namespaces joined by veth: the 8 pairs across met over the link, the 4 within proven"
    [ -e "$tmp/relay.pids" ] && kill $(cat "$tmp/relay.pids") 2>/dev/null
    ip netns del "$ns" 2>/dev/null
    ip link del "$va" 2>/dev/null
    ns=
}
netns_case

# 5. A rank whose options differ: every rank says so and exits 2, before
# any pair (a pair of another selection would prove less than rank 0 says).
before=$fails
run -np 1 "$tmp/rank" "$prog" --ranks $only : -np 2 "$tmp/rank" "$prog" --ranks --only memfd
[ "$(exits)" = "2 2 2 " ] || fail "options differ: exit statuses '$(exits)', not 2 for each"
[ "$(grep -c "^rank [0-2]: result: USAGE ERROR: rank 1's options differ from rank 0's" "$tmp/out")" = 3 ] ||
    fail "options differ: not said by every rank"
[ $fails = $before ] && echo "PASS: ranks: ranks given other options than rank 0's: every rank says so and exits 2"

# 6. A hung rank: rank 1 never answers HELLO as a consumer (phase 1: 0 ->
# 1, while its own 1 -> 2 runs beside it and passes). The pairs with it
# fail but that one, those between the others are proven, and rank 0's
# verdict comes by the deadline: rank 1's verdict thread publishes where it
# is stuck when the verdict's reserve begins (20 s less 4), and rank 0
# names it in each of its pairs that did not end (mpirun ends with every
# rank, the hung one ended by its verdict thread).
before=$fails
started=$(date +%s)
run -np 1 "$tmp/rank" "$prog" --ranks $only --timeout 2 --deadline 20 --json "$tmp/doc.json" : \
    -np 1 env GPUIPC_FAULT=consumer:hello:hang "$tmp/rank" "$prog" --ranks $only --timeout 2 \
        --deadline 20 : \
    -np 1 "$tmp/rank" "$prog" --ranks $only --timeout 2 --deadline 20
took=$(sed -n 's/^result: .*, in \([0-9]*\)\.[0-9]* s (exit [0-9]*)$/\1/p' "$tmp/out")
[ "$(exits)" = "1 1 1 " ] || fail "hung rank: exit statuses '$(exits)', not 1 1 1"
grep -q '^result: FAIL: 3 ranks, 6 ordered pairs: [23] proven, [34] failed' "$tmp/out" ||
    fail "hung rank: rank 0's verdict is not 2 or 3 proven, the rest failed"
[ "$(grep -c '^FAIL [0-2] -> [0-2]: .*rank 1 ([^)]*) was in pair 0 -> 1 as its consumer, at hello in GPUIPC_FAULT hang for [0-9.]* s' "$tmp/out")" -ge 3 ] ||
    fail "hung rank: rank 0 does not name where rank 1 is stuck in each pair it did not end"
grep -q '^FAIL 0 -> 1: under way when the verdict.s time came (--deadline less its reserve): rank 1 ' "$tmp/out" ||
    fail "hung rank: the pair under way is not named first by the stuck side"
grep -q '^FAIL 2 -> 1: not reached: rank 1 ([^)]*) was in pair 0 -> 1 .*; the producer: hello: timed out' "$tmp/out" ||
    fail "hung rank: the timeout, not the stuck rank's own state, leads the pair 2 -> 1"
grep -q '^FAIL 1 -> 2' "$tmp/out" &&
    fail "hung rank: its pair 1 -> 2, which ran beside the hung one, is not proven"
[ -n "$took" ] && [ "$took" -lt 20 ] ||
    fail "hung rank: rank 0's verdict came after ${took:-no} s: not by the deadline (20 s)"
grep -q '"verdict": "FAIL"' "$tmp/doc.json" || fail "hung rank: --json: $(head -c 300 "$tmp/doc.json")"
python3 - "$tmp/doc.json" >"$tmp/doc.txt" 2>&1 <<'EOP' || fail "hung rank: --json's culprits: $(cat "$tmp/doc.txt")"
import json, sys
c = json.load(open(sys.argv[1]))["culprits"]
assert [x["rank"] for x in c] == [1], c  # the hung rank alone, by its own record
EOP
[ $fails = $before ] && echo "PASS: ranks: a hung rank's pairs fail, each naming where it is stuck (its own record, published at the verdict's time), and rank 0's verdict (FAIL, also in --json) comes in $took s, before the deadline"

# 6c. The same across nodes: rank 2, of the second node, never answers
# HELLO as the consumer of 1 -> 2 (phase 1, over TCP). Rank 0's verdict
# comes by the deadline, naming where rank 2 is stuck (its own record,
# published over PMIx at the verdict's time), with rank 2 alone the culprit.
before=$fails
run -np 2 "$tmp/rank" "$prog" --ranks $only --ranks-net=lo --timeout 2 --deadline 20 \
        --json "$tmp/doc.json" : \
    -np 1 env GPUIPC_TEST_BOOT_ID=$boot GPUIPC_FAULT=consumer:hello:hang "$tmp/rank" "$prog" \
        --ranks $only --ranks-net=lo --timeout 2 --deadline 20 : \
    -np 1 env GPUIPC_TEST_BOOT_ID=$boot "$tmp/rank" "$prog" --ranks $only --ranks-net=lo \
        --timeout 2 --deadline 20
took=$(sed -n 's/^result: .*, in \([0-9]*\)\.[0-9]* s (exit [0-9]*)$/\1/p' "$tmp/out")
[ "$(exits)" = "1 1 1 1 " ] || fail "hung rank elsewhere: exit statuses '$(exits)', not 1 for each"
grep -q '^FAIL [0-3] -> [0-3]: .*rank 2 ([^)]*) was in pair 1 -> 2 as its consumer, at hello in GPUIPC_FAULT hang for [0-9.]* s' "$tmp/out" ||
    fail "hung rank elsewhere: rank 0 does not name where rank 2 is stuck"
[ -n "$took" ] && [ "$took" -lt 20 ] ||
    fail "hung rank elsewhere: rank 0's verdict came after ${took:-no} s: not by the deadline (20 s)"
python3 - "$tmp/doc.json" >"$tmp/doc.txt" 2>&1 <<'EOP' || fail "hung rank elsewhere: --json's culprits: $(cat "$tmp/doc.txt")"
import json, sys
c = json.load(open(sys.argv[1]))["culprits"]
assert [x["rank"] for x in c] == [2], c
EOP
[ $fails = $before ] && echo "PASS: ranks: a rank of another node hung at HELLO over TCP: rank 0 names where it is stuck and gives the verdict in $took s, before the deadline; culprit rank 2 alone"

# 6b. A wedged rank (GPUIPC_FAULT wedge: every signal blocked, a sleep
# nothing ends) in a memfd step: rank 2 as a consumer, at import. Every
# pair's state is said by the deadline, the pair under way with rank 2's
# own state, and the culprits name rank 2 alone; the wedged rank is ended
# by its verdict thread, and every rank exits 1.
before=$fails
run -np 2 "$tmp/rank" "$prog" --ranks --only memfd --timeout 2 --deadline 8 \
        --json "$tmp/doc.json" : \
    -np 1 env GPUIPC_FAULT=consumer:import:wedge "$tmp/rank" "$prog" --ranks --only memfd \
        --timeout 2 --deadline 8
took=$(sed -n 's/^result: .*, in \([0-9]*\)\.[0-9]* s (exit [0-9]*)$/\1/p' "$tmp/out")
[ "$(exits)" = "1 1 1 " ] || fail "wedged rank: exit statuses '$(exits)', not 1 1 1"
[ "$(grep -c '^FAIL [0-2] -> [0-2]: ' "$tmp/out")" -ge 3 ] &&
    [ "$(grep -c '^FAIL [0-2] -> [0-2]: .*rank 2 ([^)]*) was in pair [01] -> 2 as its consumer, at import' "$tmp/out")" -ge 1 ] ||
    fail "wedged rank: the pairs it did not end do not name where it is wedged"
grep -q '^FAIL [01] -> 2: .*under way when the verdict.s time came (--deadline less its reserve): rank 2 ([^)]*) was in pair [01] -> 2 as its consumer, at import in GPUIPC_FAULT wedge' "$tmp/out" ||
    fail "wedged rank: the pair under way does not name its own state"
[ -n "$took" ] && [ "$took" -lt 8 ] || fail "wedged rank: the verdict came at ${took:-no} s, not by the deadline (8 s)"
python3 - "$tmp/doc.json" >"$tmp/doc.txt" 2>&1 <<'EOP' || fail "wedged rank: --json's culprits: $(cat "$tmp/doc.txt")"
import json, sys
c = json.load(open(sys.argv[1]))["culprits"]
assert [x["rank"] for x in c] == [2], c
EOP
[ $fails = $before ] && echo "PASS: ranks: a rank wedged at import (memfd): every pair's state said by the deadline (verdict in $took s of 8), its own state named in the pair under way, culprits rank 2 alone, every rank exit 1"

# 7. Rank 0 wedged (GPUIPC_FAULT wedge: every signal blocked, a sleep
# nothing ends) in its first pair as producer: its verdict thread still
# gives the verdict by the deadline, the wedged pair's state said, --json
# written (not the earlier run's PASS, and not NOT FINISHED), and both
# ranks exit 1. Its pair as consumer, beside it in the phase, is proven:
# the wedge holds its own thread only.
before=$fails
run -np 1 env GPUIPC_FAULT=producer:export:wedge "$tmp/rank" "$prog" --ranks $only --timeout 2 \
        --deadline 6 --json "$tmp/doc.json" --prom "$tmp/run.prom" --junit "$tmp/run.xml" : \
    -np 1 "$tmp/rank" "$prog" --ranks $only --timeout 2 --deadline 6
took=$(sed -n 's/^result: .*, in \([0-9]*\)\.[0-9]* s (exit [0-9]*)$/\1/p' "$tmp/out")
[ "$(exits)" = "1 1 " ] || fail "rank 0 wedged: exit statuses '$(exits)', not 1 1"
grep -q '"verdict": "FAIL"' "$tmp/doc.json" ||
    fail "rank 0 wedged: --json: $(head -c 300 "$tmp/doc.json")"
grep -q '^rank 0: the verdict.s time came (--deadline less 2.0 s) before its pairs ended: rank 0 ([^)]*) was in pair 0 -> 1 as its producer, at export' "$tmp/out" ||
    fail "rank 0 wedged: it does not say where it is stuck"
grep -q '^FAIL 0 -> 1: under way when the verdict.s time came' "$tmp/out" ||
    fail "rank 0 wedged: the wedged pair's state is not said"
grep -q '^result: FAIL: 2 ranks, 2 ordered pairs: 1 proven, 1 failed' "$tmp/out" ||
    fail "rank 0 wedged: no verdict, or not 1 -> 0 proven beside the wedge"
grep -q '^gpuipc_test_running 0$' "$tmp/run.prom" && grep -q '^gpuipc_test_success 0$' "$tmp/run.prom" ||
    fail "rank 0 wedged: --prom has no verdict: $(grep -v '^#' "$tmp/run.prom" | head -5)"
grep -q '<failure message="under way when the verdict&apos;s time came' "$tmp/run.xml" ||
    fail "rank 0 wedged: --junit has no verdict: $(head -c 600 "$tmp/run.xml")"
[ -n "$took" ] && [ "$took" -lt 6 ] || fail "rank 0 wedged: the verdict came at ${took:-no} s, not by the deadline (6 s)"
[ $fails = $before ] && echo "PASS: ranks: rank 0 wedged in its first pair as producer: its verdict thread gives the verdict in $took s (deadline 6), the wedged pair's state said, its pair as consumer proven beside it, --json, --prom and --junit FAIL, every rank exit 1"

# 7b. Rank 0 killed (SIGKILL) at its first BEGIN as a producer: the
# lowest living rank (1) gives the verdict and writes --json in its place.
before=$fails
echo '{"verdict": "PASS"}' >"$tmp/doc.json"
run -np 1 env GPUIPC_FAULT=producer:begin:kill "$tmp/rank" "$prog" --ranks $only \
        --json "$tmp/doc.json" : \
    -np 2 "$tmp/rank" "$prog" --ranks $only --json "$tmp/doc.json"
[ "$(exits)" = "137 1 1 " ] || fail "rank 0 killed: exit statuses '$(exits)', not 137 1 1"
grep -q '^rank 1: rank 0 is gone (its process has ended): the lowest living rank, this one, gives the run.s verdict$' "$tmp/out" ||
    fail "rank 0 killed: rank 1 does not take the verdict over"
grep -q '^result: FAIL: 3 ranks, 6 ordered pairs: 2 proven, 4 failed' "$tmp/out" ||
    fail "rank 0 killed: no verdict of the 6 pairs (2 proven between ranks 1 and 2)"
grep -q '^rank 2: result: FAIL: the run.s, from rank 1 (exit 1)$' "$tmp/out" ||
    fail "rank 0 killed: rank 2 did not take rank 1's verdict"
python3 - "$tmp/doc.json" >"$tmp/doc.txt" 2>&1 <<'EOP' || fail "rank 0 killed: --json: $(cat "$tmp/doc.txt")"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["schema"] == "gpuipc-ranks/1" and d["verdict"] == "FAIL" and d["pairs_proven"] == 2, d
EOP
[ $fails = $before ] && echo "PASS: ranks: rank 0 killed in its first pair: rank 1, the lowest living rank, gives the verdict (2 of 6 pairs proven) and writes --json; rank 2 takes it from rank 1"

# 8. Usage errors.
before=$fails
"$prog" --ranks --only memfd >"$tmp/out" 2>&1
rc=$?
[ $rc = 2 ] && grep -q 'not started by a PMIx launcher' "$tmp/out" ||
    fail "no launcher: exit $rc, not 2 with the cause"
"$prog" --ranks --device 1 >"$tmp/out" 2>&1
rc=$?
[ $rc = 2 ] && grep -q -- '--ranks: does not combine with --device' "$tmp/out" ||
    fail "--device: exit $rc, not 2"
[ $fails = $before ] && echo "PASS: ranks: --ranks without a launcher, and with --device, are usage errors (exit 2)"

# 9. A stranger at the listeners (python3, as above).
before=$fails
cat >"$tmp/stranger.py" <<'EOP'
import errno, os, re, socket, sys, time
# Only this case's listeners: another run on this machine (make check beside
# make check) has names of the same form, and a connection to them would fail
# its counts. Ours is held by a process with sys.argv[2] (the rank wrapper,
# or mpirun) in its own or an ancestor's command line.
# True: ours; False: another run's; None: no holder found this time (one
# that was starting or ending): asked again at the next look.
def ours(inode):
    want = "socket:[%s]" % inode
    held = None
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if not any(os.readlink("/proc/%s/fd/%s" % (pid, fd)) == want
                       for fd in os.listdir("/proc/%s/fd" % pid)):
                continue
            held = False
            while pid not in ("0", "1"):
                if sys.argv[2].encode() in open("/proc/%s/cmdline" % pid, "rb").read():
                    return True
                pid = open("/proc/%s/stat" % pid).read().rsplit(")", 1)[1].split()[1]
        except OSError:
            continue
    return held
seen, others, socks, took, in_use, met = set(), set(), [], 0, 0, 0
end = time.time() + 20
while time.time() < end and not os.path.exists(sys.argv[1]):
    for line in open("/proc/net/unix"):
        m = re.search(r"@(gpuipc-[0-9a-f]{32})$", line.strip())
        if m is None or m.group(1) in seen or m.group(1) in others:
            continue
        mine = ours(line.split()[6])
        if mine is None:
            continue
        if not mine:
            others.add(m.group(1))
            continue
        name = "\0" + m.group(1)  # abstract
        seen.add(m.group(1))
        b = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            b.bind(name)
            took += 1
        except OSError as e:
            in_use += e.errno == errno.EADDRINUSE
        b.close()
        s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            s.connect(name)
            s.send(os.urandom(300))  # a made-up HELLO
            socks.append(s)
            met += 1
        except OSError:
            s.close()
    time.sleep(0.01)
refused = 0
for s in socks:  # each ended without a word: refused, its HELLO unread
    s.settimeout(5)
    try:
        refused += s.recv(64) == b""
    except ConnectionResetError:
        refused += 1
    except OSError:
        pass
    s.close()
print("stranger: %d names seen, %d taken, %d in use, %d connected, %d refused"
      % (len(seen), took, in_use, met, refused))
EOP
rm -f "$tmp/done"
python3 "$tmp/stranger.py" "$tmp/done" "$tmp/rank" >"$tmp/stranger.out" 2>&1 &
spid=$!
run -np 3 "$tmp/rank" "$prog" --ranks --only memfd --size 512M
touch "$tmp/done"
wait $spid
cat "$tmp/stranger.out" >>"$tmp/out"
[ "$(exits)" = "0 0 0 " ] || fail "stranger: exit statuses '$(exits)', not 0 for each"
grep -q '^result: PASS: 3 ranks, 6 ordered pairs: 6 proven' "$tmp/out" ||
    fail "stranger: not every pair proven"
grep -q '^stranger: 3 names seen, 0 taken, 3 in use, 3 connected, 3 refused$' "$tmp/out" ||
    fail "stranger: $(cat "$tmp/stranger.out")"
[ "$(grep -c '^rank [0-2]: refused 1 connection to its listener from processes that are no rank of this job (the first: refused a connection from pid [0-9]* (uid [0-9]*): no rank of this job' "$tmp/out")" = 3 ] ||
    fail "stranger: not each rank named the connection it refused"
[ "$(grep -c '^rank 0: rank [0-2] ([^)]*) refused 1 connection to its listener from processes that are no rank of this job' "$tmp/out")" = 3 ] ||
    fail "stranger: rank 0 does not name each rank's refusal"
[ $fails = $before ] && echo "PASS: ranks: a stranger that reads every listener's name in /proc/net/unix takes none (each in use) and is refused at each, named by that rank and by rank 0; the pairs are proven"

[ $fails = 0 ] || { echo "FAIL: tests/ranks.sh: $fails failed"; exit 1; }
echo "tests/ranks.sh: all passed"
