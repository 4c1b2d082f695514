#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# bench/per_gpu.sh [PROGRAM] [RUNS]: what each GPU beyond the first adds to a
# default run. Times the whole process of `PROGRAM -q --device 0` and of
# `PROGRAM -q` (every GPU), RUNS times each (default 7), interleaved so that
# both see the same machine, and prints a Markdown table: the medians (min
# to max), the GPUs, the time each GPU beyond the first adds, and the target
# (at most 150 ms a GPU). On one GPU it says so and prints the one-GPU time,
# the part a second GPU would repeat. Exits 1 if a run failed.
set -u
prog=${1:-./gpuipc_test}
runs=${2:-7}
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT

now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
# One timed run of the program with its arguments; its time in ms to $tmp/$1.
timed() {
    key=$1
    shift
    t0=$(now_ms)
    "$prog" -q "$@" >"$tmp/out" 2>&1
    rc=$?
    t1=$(now_ms)
    if [ "$rc" != 0 ]; then
        echo "per_gpu: $prog -q $* exited $rc:" >&2
        tail -n 5 "$tmp/out" >&2
        exit 1
    fi
    echo $((t1 - t0)) >>"$tmp/$key"
}
# "median (min-max)" of the numbers in a file.
stats() {
    sort -n "$1" | awk '{ v[NR] = $1 } END { printf "%d %d %d\n", v[int((NR + 1) / 2)], v[1], v[NR] }'
}

gpus=$("$prog" --list 2>/dev/null | grep -c '^GPU ')
[ "$gpus" -ge 1 ] || { echo "per_gpu: no GPU here (see $prog --list)" >&2; exit 77; }
"$prog" -q >/dev/null 2>&1 # a warm-up: the driver's first start in a while is slower
i=0
while [ "$i" -lt "$runs" ]; do
    timed one --device 0
    [ "$gpus" -lt 2 ] || timed all
    i=$((i + 1))
done
set -- $(stats "$tmp/one")
one=$1 one_min=$2 one_max=$3
name=$("$prog" --list 2>/dev/null | sed -n 's/^GPU 0: \([^(]*[^ (]\).*/\1/p' | head -n 1)
echo "| run (whole process, $runs runs, median (min-max)) | time |"
echo "| --- | --- |"
echo "| \`gpuipc_test -q --device 0\` on ${name:-GPU 0} | $one ms ($one_min-$one_max) |"
if [ "$gpus" -lt 2 ]; then
    echo
    echo "One GPU here: a second GPU would add its own scenarios and context (part of the"
    echo "$one ms above); measure on a machine of two or more GPUs."
    exit 0
fi
set -- $(stats "$tmp/all")
all=$1 all_min=$2 all_max=$3
per=$(( (all - one) / (gpus - 1) ))
echo "| \`gpuipc_test -q\`, every GPU ($gpus) | $all ms ($all_min-$all_max) |"
echo "| each GPU beyond the first | $per ms (target at most 150 ms: $( [ "$per" -le 150 ] && echo met || echo MISSED)) |"
