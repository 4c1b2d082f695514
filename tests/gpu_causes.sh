#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# gpu_causes.sh: the /dev/shm causes on a GPU, made for real in private mount
# namespaces (root and unshare(1) needed), and WSL2 through the test-only
# facts hook: each run must end with the expected status and name its
# cause. Run by `make check-gpu` after the GPU suite. Prints one line per
# case and exits 1 if any case did not hold.
set -u
prog=${GPUIPC_TEST_BIN:-./gpuipc_test}
tmp=$(mktemp -d /tmp/gpuipc-causes.XXXXXX) || exit 1
trap 'rm -rf --one-file-system "$tmp"' EXIT
failed=0

# expect NAME STATUS TEXT OUTPUT-FILE: the run's status and a text in its output.
expect() {
    local name=$1 want=$2 text=$3 out=$4 got
    got=$(cat "$out.rc")
    if [ "$got" = "$want" ] && grep -qF -- "$text" "$out"; then
        echo "ok: $name: exit $got, says: $text"
    else
        echo "FAILED: $name: exit $got (want $want), or no '$text' in:"
        sed 's/^/    /' "$out"
        failed=1
    fi
}

# Runs the program in a private mount namespace after the given set-up.
in_ns() {
    local out=$1 setup=$2
    shift 2
    unshare -m --propagation private sh -c "$setup && exec \"\$0\" \"\$@\"" "$prog" "$@" \
        >"$out" 2>&1
    echo $? >"$out.rc"
}

if ! unshare -m --propagation private true 2>/dev/null; then
    echo "FAILED: unshare -m does not work here (root is needed)"
    exit 1
fi

in_ns "$tmp/small" 'mount -t tmpfs -o size=64k tmpfs /dev/shm' --device 0 --only ipc-event
expect "/dev/shm of 64 KiB" 1 "and the producer has /dev/shm 64 KiB" "$tmp/small"

in_ns "$tmp/ro" 'mount -t tmpfs -o size=64k,ro tmpfs /dev/shm' --device 0 --only ipc-event
expect "read-only /dev/shm" 1 ", read-only; fix: a writable /dev/shm with room" "$tmp/ro"

# No /dev/shm: /dev replaced by a tmpfs that holds only the device files the
# program and the driver need, bound from the real /dev.
nodes='null zero random urandom nvidiactl nvidia-uvm nvidia-uvm-tools nvidia0 nvidia1 nvidia2 nvidia3 nvidia4 nvidia5 nvidia6 nvidia7'
absent="mkdir -p $tmp/dev && mount --bind /dev $tmp/dev && mount -t tmpfs tmpfs /dev && \
for n in $nodes; do [ -e $tmp/dev/\$n ] || continue; touch /dev/\$n; mount --bind $tmp/dev/\$n /dev/\$n; done"
in_ns "$tmp/absent" "$absent" --device 0 --only ipc-event
expect "no /dev/shm" 1 "and the producer has no /dev/shm" "$tmp/absent"

# Two terminals, two /dev/shm: the producer in this namespace, the consumer
# in one with a /dev/shm of its own (a container without --ipc=host).
sock="@gpuipc-causes-$$"
"$prog" --serve "$sock" --device 0 --only ipc-event >"$tmp/serve" 2>&1 &
serve=$!
sleep 1
in_ns "$tmp/connect" 'mount -t tmpfs -o size=1g tmpfs /dev/shm' --connect "$sock"
wait $serve
echo $? >"$tmp/serve.rc"
expect "two /dev/shm, --serve" 1 "cause: the producer and the consumer see different /dev/shm" \
    "$tmp/serve"
expect "two /dev/shm, --connect" 1 "result: FAIL" "$tmp/connect"

# WSL2, through the facts hook: every GPU scenario a skip (exit 77: nothing
# could run here), its cause said once on the one SKIP line.
mkdir -p "$tmp/wsl/proc/sys/kernel"
echo 5.15.167.4-microsoft-standard-WSL2 >"$tmp/wsl/proc/sys/kernel/osrelease"
GPUIPC_TEST_SYSROOT=$tmp/wsl "$prog" --device 0 >"$tmp/wsl.out" 2>&1
echo $? >"$tmp/wsl.out.rc"
expect "WSL2 (hook)" 77 "probe: not run: both processes run under WSL2 (below) (cause: both processes run under WSL2 (kernel 5.15.167.4-microsoft-standard-WSL2)" \
    "$tmp/wsl.out"
n=$(grep -o 'cause:' "$tmp/wsl.out" | wc -l)
if [ "$n" = 1 ]; then echo "ok: WSL2 said once"; else echo "FAILED: WSL2: $n causes said"; failed=1; fi

exit $failed
