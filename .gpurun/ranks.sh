#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# GPU run of --ranks (not part of the tree).
set -u
out=${OUT:-/tmp}
nvidia-smi -L
echo "== -np 2, default set"
timeout 120 mpirun --allow-run-as-root -np 2 ./gpuipc_test --ranks --json "$out/ranks2.json" 2>&1 | tee "$out/np2.txt" | tail -40
echo "rc=$?"
echo "== -np 2, -v, vmm only"
timeout 60 mpirun --allow-run-as-root -np 2 ./gpuipc_test --ranks --only vmm -v 2>&1 | tail -30
echo "== with an IMEX channel (private mount namespace)"
major=$(awk '$2=="nvidia-caps-imex-channels"{print $1}' /proc/devices)
made=0
[ -d /dev/nvidia-caps-imex-channels ] || { mkdir /dev/nvidia-caps-imex-channels && made=1; }
unshare -m sh -c "mount -t tmpfs none /dev/nvidia-caps-imex-channels && mknod -m 0600 /dev/nvidia-caps-imex-channels/channel0 c $major 0 && timeout 120 mpirun --allow-run-as-root -np 2 ./gpuipc_test --ranks 2>&1" | tee "$out/np2imex.txt" | tail -30
[ $made = 1 ] && rmdir /dev/nvidia-caps-imex-channels
echo "== -np 4 on the GPU(s)"
timeout 120 mpirun --allow-run-as-root --oversubscribe -np 4 ./gpuipc_test --ranks 2>&1 | tail -25
echo "== forked default run (baseline)"
./gpuipc_test 2>&1 | tail -4
