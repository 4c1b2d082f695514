#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# golden.sh: the golden corpus. A fixed set of runs of the program on a
# machine without a CUDA driver (the host mechanisms only), each output
# normalised and compared byte for byte with tests/golden/: the text on
# standard output and standard error with the exit status (CASE.out), the
# --brief line (CASE.brief), the result document (CASE.json, through
# golden_norm), the Prometheus textfile (CASE.prom) and the JUnit report
# (CASE.xml), where the mode writes them. It holds the writers of every
# output to what they wrote when the corpus was recorded, so that moving
# them (issue 35) changes no word, key, order, count, status or reason.
#
# Only what differs from run to run or machine to machine is normalised:
# the sed rules below for the texts, the key paths in tests/golden_norm.c
# for the documents. One line per case: "PASS: golden: CASE", or "FAIL:
# golden: CASE: FORMAT differs" with the diff; "SKIP: golden: ..." for what
# cannot run here (no mpirun, a CUDA driver present).
#
# Usage: sh tests/golden.sh PROG NORM (NORM: build/tests/golden_norm).
# GOLDEN_UPDATE=1 rewrites tests/golden/ from this run instead of comparing:
# review the diff (git diff tests/golden) before committing it.
set -u
prog=${1:?usage: golden.sh PROG NORM}
norm=${2:?usage: golden.sh PROG NORM}
update=${GOLDEN_UPDATE:-0}
golden=$(cd "$(dirname "$0")" && pwd)/golden
# Every run goes on in a directory of its own (its files named there
# relatively, so that argv in the documents holds no temporary path).
case $prog in /*) ;; *) prog=$(pwd)/$prog ;; esac
case $norm in /*) ;; *) norm=$(pwd)/$norm ;; esac
echo "== tests/golden.sh (the outputs of fixed runs against tests/golden/)"
[ -x "$prog" ] || { echo "FAIL: golden: no $prog"; exit 1; }
[ -x "$norm" ] || { echo "FAIL: golden: no $norm (make $norm)"; exit 1; }

# What the program reads from the environment, made the same for every run:
# the test hooks, Check's selection and reports, the settings the document
# records, the variables that say Slurm, Kubernetes or a PMIx job, and the
# C locale.
unset GPUIPC_FAULT GPUIPC_SABOTAGE GPUIPC_TEST_SYSROOT GPUIPC_TEST_ABORT \
    CK_RUN_SUITE CK_RUN_CASE CK_INCLUDE_TAGS CK_EXCLUDE_TAGS CK_EXCLUDE_LIST CK_FORK \
    CK_VERBOSITY CK_TAP_LOG_FILE_NAME CK_XML_LOG_FILE_NAME CK_LOG_FILE_NAME \
    CK_DEFAULT_TIMEOUT CK_TIMEOUT_MULTIPLIER \
    NCCL_CUMEM_ENABLE NCCL_P2P_DISABLE NCCL_P2P_LEVEL NCCL_SHM_DISABLE NCCL_MNNVL_ENABLE \
    PYTORCH_CUDA_ALLOC_CONF CUDA_VISIBLE_DEVICES NVIDIA_VISIBLE_DEVICES \
    CUDA_DEVICE_MAX_CONNECTIONS CUDA_MPS_PIPE_DIRECTORY SLURM_JOB_ID KUBERNETES_SERVICE_HOST \
    PMIX_NAMESPACE PMIX_RANK
LC_ALL=C
export LC_ALL

# The corpus is of a machine without a CUDA driver: with one, --list and
# every summary say other things.
if ! "$prog" --list 2>&1 | grep -q '^CUDA: not available: no CUDA driver'; then
    echo "SKIP: golden: a CUDA driver is here, and the corpus is of a machine without one"
    exit 0
fi

tmp=$(mktemp -d) || exit 1
bg=
trap 'for p in $bg; do kill "$p" 2>/dev/null; done; rm -rf "$tmp"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
mkdir "$tmp/got" || exit 1
fails=0

# The rules for the texts (every format goes through them, the documents
# after golden_norm). Each replaces one kind of value that changes between
# runs or machines, and only in the context it appears in.
cat >"$tmp/rules.sed" <<'EOS'
# A step's time since the start, and its duration.
s/^ *[0-9]+\.[0-9]{3} ms  (producer|consumer)  /<t> ms  \1  /
s/  \[[0-9]+\.[0-9]{3} ms\]$/  [<t> ms]/
# A scenario's time in the summary's last column.
s/^(  [a-z].*[^0-9.])[0-9]+\.[0-9] ms( \(cause below\))?$/\1<t> ms\2/
# The run's wall time, and how long a process was stuck or waited.
s/, in [0-9]+\.[0-9]+ s /, in <t> s /
s/ for [0-9]+\.[0-9]+ s([,;]| \()/ for <t> s\1/g
# The summary's cells: line, the cells' times added and the run's.
s/; their times add to [0-9]+\.[0-9]{3} s of the run's [0-9]+\.[0-9]{3} s$/; their times add to <t> s of the run's <t> s/
s/; their times in the last of ([0-9]+) rounds add to [0-9]+\.[0-9]{3} s$/; their times in the last of \1 rounds add to <t> s/
# --repeat's rounds: each one's time, the soak's, and the mean.
s/; [0-9]+\.[0-9] s$/; <t> s/
s/; [0-9]+\.[0-9] s \([0-9]+\.[0-9] ms a round\)$/; <t> s (<t> ms a round)/
# Copy rates.
s/[0-9]+\.[0-9]+ GB\/s/<n> GB\/s/g
# Patterns: seeds are random per run, so are the words and digests made of
# them; the zero digest (nothing read) is no such value and stays.
s/0x0{16}/0x<ZERO>/g
s/0x[0-9a-f]{16}/0x<hex>/g
s/0x<ZERO>/0x0000000000000000/g
# Processes, users and FD numbers (the latter move with inherited FDs).
s/pid [0-9]+/pid <pid>/g
s/\(uid [0-9]+\)/(uid <uid>)/g
s/ fd [0-9]+ \(/ fd <n> (/g
s/(producer|consumer): [0-9]+ FDs/\1: <n> FDs/g
# This script's socket names.
s/@gpuipc-golden-[0-9]+/@gpuipc-golden-<n>/g
# The build's commit, which every change moves.
s/\(commit ([0-9a-f]{12}(-dirty)?|unknown)\)/(commit <commit>)/
s/commit="[^"]*"/commit="<commit>"/
s/name="commit" value="[^"]*"/name="commit" value="<commit>"/
# The machine: host name, boot id, kernel, file limits, PMIx.
s/(hostname|boot_id|kernel)="[^"]*"/\1="<\1>"/g
s/name="(hostname|boot_id|kernel)" value="[^"]*"/name="\1" value="<\1>"/
s/\(host [^)]*\)/(host <hostname>)/g
s/RLIMIT_NOFILE [0-9]+ \(hard [0-9]+\)/RLIMIT_NOFILE <n> (hard <n>)/
s/^(ranks: [0-9]+ ranks )\(.*\)(; [0-9]+ on this node)/\1(<pmix>)\2/
# Wall-clock times: JUnit's timestamps and times, the textfile's.
s/[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?Z?/<timestamp>/g
s/ time="[0-9.]+"/ time="<t>"/g
s/^(gpuipc_test_(start|end)_timestamp_seconds|gpuipc_test_duration_seconds) [0-9.e+]+$/\1 <t>/
s/^(gpuipc_test_scenario_duration_seconds\{[^}]*\}) [0-9.e+]+$/\1 <t>/
EOS

# run CASE WHAT CMD...: CMD in CASE's own directory $tmp/CASE/WHAT, its
# output kept there (stdout, stderr, rc), bounded in time.
run() {
    r_dir=$tmp/$1/$2
    shift 2
    mkdir -p "$r_dir" || exit 1
    (cd "$r_dir" && timeout 120 "$@" >stdout 2>stderr; echo $? >rc)
}

# text DIR: what the run in DIR said, as one text: its exit status, its
# standard output, then its standard error (a line moved from one to the
# other is a difference).
text() {
    echo "exit $(cat "$1/rc")"
    cat "$1/stdout"
    echo "-- stderr"
    cat "$1/stderr"
}

# file PATH [json]: the file a run wrote, normalised (documents through
# golden_norm first), or a line that says it was not written.
file() {
    if [ ! -f "$1" ]; then
        echo "(no file written)"
    elif [ "${2:-}" = json ]; then
        "$norm" "$1" 2>&1 | sed -E -f "$tmp/rules.sed"
    else
        sed -E -f "$tmp/rules.sed" "$1"
    fi
}

# got CASE WHAT FILES: the normalised outputs of the run in $tmp/CASE/WHAT
# into $tmp/got/CASE.*: .out (main) or .brief (brief), and the files FILES
# asks for (j: .json, p: .prom, x: .xml; P: .prom that the case's own
# options name, as a refused one).
got() {
    g_dir=$tmp/$1/$2
    if [ "$2" = brief ]; then
        text "$g_dir" | sed -E -f "$tmp/rules.sed" >"$tmp/got/$1.brief"
        return
    fi
    text "$g_dir" | sed -E -f "$tmp/rules.sed" >"$tmp/got/$1.out"
    case $3 in *j*) file "$g_dir/out.json" json >"$tmp/got/$1.json" ;; esac
    case $3 in *[pP]*) file "$g_dir/out.prom" >"$tmp/got/$1.prom" ;; esac
    case $3 in *x*) file "$g_dir/out.xml" >"$tmp/got/$1.xml" ;; esac
}

# compare CASE NAME...: each of the case's normalised outputs against its
# golden file (or, with GOLDEN_UPDATE=1, into it); one line for the case.
compare() {
    c_case=$1 c_bad=0 c_what=
    shift
    for c_name in "$@"; do
        c_fmt=${c_name#"$c_case"}
        c_fmt=${c_fmt#[.-]}
        c_what="$c_what${c_what:+, }$c_fmt"
        if [ "$update" = 1 ]; then
            cp "$tmp/got/$c_name" "$golden/$c_name" || c_bad=1
        elif [ ! -f "$golden/$c_name" ]; then
            echo "FAIL: golden: $c_case: $c_fmt: no tests/golden/$c_name (GOLDEN_UPDATE=1 writes it)"
            c_bad=1
        elif ! cmp -s "$golden/$c_name" "$tmp/got/$c_name"; then
            echo "FAIL: golden: $c_case: $c_fmt differs (tests/golden/$c_name)"
            diff -u "$golden/$c_name" "$tmp/got/$c_name" | sed 's/^/    /' | head -60
            c_bad=1
        fi
    done
    if [ "$update" = 1 ]; then
        echo "golden: $c_case: rewritten ($c_what)"
    elif [ $c_bad = 0 ]; then
        echo "PASS: golden: $c_case ($c_what)"
    else
        fails=$((fails + 1))
    fi
}

# names CASE FILES: the case's golden file names, .out and .brief first.
names() {
    n_list="$1.out $1.brief"
    case $2 in *j*) n_list="$n_list $1.json" ;; esac
    case $2 in *[pP]*) n_list="$n_list $1.prom" ;; esac
    case $2 in *x*) n_list="$n_list $1.xml" ;; esac
    echo "$n_list"
}

# start CASE FILES [VAR=VALUE...] -- ARGS...: the one-shot kind of case:
# PROG ARGS with the variables, writing the files FILES asks for, then the
# same with --brief, the two at once, in the background (their pids in
# s_pids). finish CASE FILES compares what they wrote; one CASE ... does
# both, and the slow cases let the others run between the two.
start() {
    s_case=$1 s_files=$2 s_env=
    shift 2
    while [ "$1" != -- ]; do
        s_env="$s_env $1"
        shift
    done
    shift
    s_out=
    case $s_files in *j*) s_out="$s_out --json out.json" ;; esac
    case $s_files in *p*) s_out="$s_out --prom out.prom" ;; esac
    case $s_files in *x*) s_out="$s_out --junit out.xml" ;; esac
    # shellcheck disable=SC2086 # the variables and file options are words
    run "$s_case" main env $s_env "$prog" "$@" $s_out &
    s_pids=$!
    # shellcheck disable=SC2086
    run "$s_case" brief env $s_env "$prog" "$@" --brief &
    s_pids="$s_pids $!"
}
finish() {
    got "$1" main "$2"
    got "$1" brief "$2"
    # shellcheck disable=SC2046 # a list of names
    compare "$1" $(names "$1" "$2")
}
one() {
    start "$@"
    for p in $s_pids; do
        wait "$p"
    done
    finish "$1" "$2"
}

[ "$update" != 1 ] || mkdir -p "$golden" || exit 1
started=$(date +%s)

# The slow ones first, in the background: the fault matrix (126 pairs, the
# hang cases each waiting out --timeout) and the deadline (1 s, twice).
start fault-matrix j -- --fault-matrix --only memfd --timeout 0.5
bg="$bg $s_pids"
start deadline jpx GPUIPC_FAULT=producer:check:wedge -- --only memfd --size 1M --deadline 1
bg="$bg $s_pids"

# A pass, a run with nothing to run here (exit 77), a usage error, a
# refused output option, a peer killed, --repeat.
one memfd-pass jpx -- --only memfd,memfd-chunks --size 1M
one no-gpu jpx --
one usage-size jpx -- --size banana
one list-prom-refused jP -- --list --prom out.prom
one fault-consumer-verify-kill jpx GPUIPC_FAULT=consumer:verify:kill -- --only memfd --size 1M
one repeat jpx -- --only memfd --size 1M --repeat 2

# Each sabotage that memfd can show, on each side that has it.
for what in wrong-seed skip-write leak leak-fd read-nothing read-partial flip-one flip-last \
    flip-past-4g; do
    for role in producer consumer; do
        one "sabotage-$role-$what" jpx "GPUIPC_SABOTAGE=$role:$what" -- --only memfd --size 1M
    done
done
for what in offer-memfd offer-pipe offer-size; do
    one "sabotage-producer-$what" jpx "GPUIPC_SABOTAGE=producer:$what" -- --only memfd --size 1M
done
for role in producer consumer; do
    one "sabotage-$role-chunk-order" jpx "GPUIPC_SABOTAGE=$role:chunk-order" -- \
        --only memfd-chunks --size 1M
done
# A sabotage given to the side that cannot do it: a usage error.
one sabotage-consumer-offer-size jpx GPUIPC_SABOTAGE=consumer:offer-size -- --only memfd --size 1M
# Taking an FD from a producer that is not dumpable needs CAP_SYS_PTRACE:
# root's outcome is the one recorded.
if [ "$(id -u)" = 0 ]; then
    one sabotage-producer-not-dumpable jpx GPUIPC_SABOTAGE=producer:not-dumpable -- \
        --only memfd-pidfd --size 1M
else
    echo "SKIP: golden: sabotage-producer-not-dumpable: not root (the corpus has root's outcome)"
fi

# --list, as text, and as a document (which, given a file, it writes
# instead of the text).
one list '' -- --list
one list-json j -- --list

# --serve and --connect: both sides, each with its files, then both with
# --brief. The connecting side waits for the listener (--timeout).
twoterm() {
    t_name=@gpuipc-golden-$$
    run twoterm-serve main "$prog" --serve "$t_name" --only memfd --size 1M \
        --json out.json --prom out.prom --junit out.xml &
    t_pid=$!
    run twoterm-connect main "$prog" --connect "$t_name" --json out.json --prom out.prom \
        --junit out.xml
    wait $t_pid
    t_name=@gpuipc-golden-$$-brief
    run twoterm-serve brief "$prog" --serve "$t_name" --only memfd --size 1M --brief &
    t_pid=$!
    run twoterm-connect brief "$prog" --connect "$t_name" --brief
    wait $t_pid
    for t_side in serve connect; do
        got "twoterm-$t_side" main jpx
        got "twoterm-$t_side" brief jpx
    done
    # shellcheck disable=SC2046
    compare twoterm $(names twoterm-serve jpx) $(names twoterm-connect jpx)
}
twoterm

# --ranks under mpirun, 3 ranks over memfd. mpirun writes each rank's
# output to a file of its own (--output-filename), so that the ranks'
# lines are never interleaved by the moment they came; a small shell
# around each rank records its exit status (Open MPI's abort setting off,
# so that every rank ends by itself and says so). Its session directory
# goes under this run's own (TMPDIR): two mpiruns started at once on one
# machine otherwise race to create /tmp/ompi.HOST.UID, and one fails.
ranks_text() {
    echo "exit $(cat "$1/rc")"
    for r in 0 1 2; do
        echo "== rank $r: exit $(cat "$1/rc.$r" 2>/dev/null || echo '(none)')"
        cat "$1"/ranks/*/rank.$r/stdout 2>/dev/null
        echo "-- stderr"
        cat "$1"/ranks/*/rank.$r/stderr 2>/dev/null
    done
    # mpirun's own words, where no rank wrote anything (it did not start
    # them): they show in the difference.
    ls "$1"/ranks/*/rank.0/stdout >/dev/null 2>&1 || cat "$1/stderr"
}
ranks() {
    if ! command -v mpirun >/dev/null 2>&1; then
        echo "SKIP: golden: ranks: no mpirun here (Debian: apt-get install openmpi-bin libpmix-dev)"
        return
    fi
    cat >"$tmp/rank" <<'EOS'
#!/bin/sh
"$@"
rc=$?
echo $rc >"rc.$PMIX_RANK"
exit $rc
EOS
    chmod +x "$tmp/rank"
    for what in main brief; do
        if [ $what = main ]; then set -- --json out.json; else set -- --brief; fi
        run ranks $what env TMPDIR="$tmp" timeout 60 mpirun --allow-run-as-root --oversubscribe \
            --mca orte_abort_on_non_zero_status 0 --output-filename ranks -np 3 "$tmp/rank" \
            "$prog" --ranks --only memfd --size 1M "$@"
    done
    if grep -q 'libpmix.so.2.*cannot\|result: SKIP: joining the job' \
        "$tmp"/ranks/main/ranks/*/rank.0/stdout 2>/dev/null; then
        echo "SKIP: golden: ranks: no libpmix.so.2 here (Debian: apt-get install libpmix-dev)"
        return
    fi
    ranks_text "$tmp/ranks/main" | sed -E -f "$tmp/rules.sed" >"$tmp/got/ranks.out"
    ranks_text "$tmp/ranks/brief" | sed -E -f "$tmp/rules.sed" >"$tmp/got/ranks.brief"
    file "$tmp/ranks/main/out.json" json >"$tmp/got/ranks.json"
    compare ranks ranks.out ranks.brief ranks.json
}
ranks

for p in $bg; do
    wait "$p"
done
bg=
finish deadline jpx
finish fault-matrix j

took=$(($(date +%s) - started))
if [ "$update" = 1 ]; then
    echo "golden: tests/golden/ rewritten in $took s: review it with git diff tests/golden"
elif [ $fails = 0 ]; then
    echo "golden: every case matches tests/golden/ ($took s)"
else
    echo "FAIL: tests/golden.sh: $fails cases differ from tests/golden/ ($took s)"
    exit 1
fi
