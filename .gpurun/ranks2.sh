#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# GPU run of --ranks on a 2-GPU machine (not part of the tree).
set -u
out=${OUT:-/tmp}
nvidia-smi -L
MPI="timeout 120 mpirun --allow-run-as-root --oversubscribe"
echo "== a) one GPU (CUDA_VISIBLE_DEVICES=0), -np 2, default set"
CUDA_VISIBLE_DEVICES=0 $MPI -x CUDA_VISIBLE_DEVICES -np 2 ./gpuipc_test --ranks --json "$out/one_gpu.json" > "$out/a.txt" 2>&1; echo "mpirun rc=$?" >> "$out/a.txt"; tail -8 "$out/a.txt"
echo "== b) one GPU, -np 2, with an IMEX channel"
major=$(awk '$2=="nvidia-caps-imex-channels"{print $1}' /proc/devices)
made=0
[ -d /dev/nvidia-caps-imex-channels ] || { mkdir /dev/nvidia-caps-imex-channels && made=1; }
CUDA_VISIBLE_DEVICES=0 unshare -m sh -c "mount -t tmpfs none /dev/nvidia-caps-imex-channels && mknod -m 0600 /dev/nvidia-caps-imex-channels/channel0 c $major 0 && $MPI -x CUDA_VISIBLE_DEVICES -np 2 ./gpuipc_test --ranks --json $out/imex.json" > "$out/b.txt" 2>&1; echo "mpirun rc=$?" >> "$out/b.txt"; tail -8 "$out/b.txt"
[ $made = 1 ] && rmdir /dev/nvidia-caps-imex-channels
echo "== c) two GPUs, -np 2"
$MPI -np 2 ./gpuipc_test --ranks --json "$out/two_gpus.json" > "$out/c.txt" 2>&1; echo "mpirun rc=$?" >> "$out/c.txt"; tail -25 "$out/c.txt"
echo "== d) two GPUs, -np 4"
$MPI -np 4 ./gpuipc_test --ranks > "$out/d.txt" 2>&1; echo "mpirun rc=$?" >> "$out/d.txt"; tail -6 "$out/d.txt"
echo "== e) one GPU, -np 3, rank 1 killed during its consumer's import (abort off)"
cat > /tmp/rank.sh <<'EOS'
#!/bin/sh
"$@"; rc=$?; echo "EXIT $PMIX_RANK $rc"; exit $rc
EOS
chmod +x /tmp/rank.sh
CUDA_VISIBLE_DEVICES=0 $MPI -x CUDA_VISIBLE_DEVICES --mca orte_abort_on_non_zero_status 0 -np 1 /tmp/rank.sh ./gpuipc_test --ranks : -np 1 env GPUIPC_FAULT=consumer:import:kill /tmp/rank.sh ./gpuipc_test --ranks : -np 1 /tmp/rank.sh ./gpuipc_test --ranks > "$out/e.txt" 2>&1; echo "mpirun rc=$?" >> "$out/e.txt"; grep -v "^    " "$out/e.txt" | cut -c1-300 | tail -14
echo "== f) forked default run, check_gpu, gpu_causes"
./gpuipc_test 2>&1 | tail -3
GPUIPC_TEST_BIN=./gpuipc_test GPUIPC_CHURN_BIN=build/tests/gpu_churn build/tests/check_gpu 2>&1 | tail -3
GPUIPC_TEST_BIN=./gpuipc_test bash tests/gpu_causes.sh 2>&1 | tail -9
