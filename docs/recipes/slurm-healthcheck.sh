#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# slurm-healthcheck.sh: a Slurm HealthCheckProgram (slurm.conf) or prolog
# step that drains a node whose GPU memory sharing fails.
#
# slurmd kills a HealthCheckProgram after 60 s; a default run takes about a
# second on an H100, and --deadline 50 (a one-shot run's default, said here
# to be plain) ends the whole check with a verdict by 50 s, a wedged driver
# call or a stuck peer included: the node is drained with the reason before
# slurmd gives up on the check. A GPU node that
# shows fewer GPUs than GPUIPC_EXPECT_GPUS (its count in gres.conf), or no
# driver at all, fails and is drained; so is any other failure, with the
# one-line reason. Exit 77 (nothing could run for another reason) leaves the
# node alone. DRAIN: the command that drains (default: scontrol); the reason
# is its last argument.
#
# GPUIPC_TEST: the program (default: gpuipc_test on PATH); GPUIPC_ARGS: more
# options; GPUIPC_EXPECT_GPUS: the GPUs this node must show (default: its
# /dev/nvidiaN device nodes; "none" on a node with no GPU).
#
# The default run opens every GPU of the node, two contexts each, for about a
# second: run it where no job holds the GPUs, HealthCheckNodeState=IDLE in
# slurm.conf (or in the prolog of an exclusive job), not on nodes in use.
# The GPUs this node (or container) must show: GPUIPC_EXPECT_GPUS, else as
# many as it was given device nodes (/dev/nvidia0, /dev/nvidia1, ...: they
# stay when a GPU falls off the bus, and a container has its own GPUs' only).
if [ -n "${GPUIPC_EXPECT_GPUS:-}" ]; then
    expect=$GPUIPC_EXPECT_GPUS
else
    expect=$(ls "${GPUIPC_DEV_DIR:-/dev}" 2>/dev/null | grep -c '^nvidia[0-9][0-9]*$')
    [ "$expect" -gt 0 ] || expect=1
fi
[ "$expect" = none ] && expect= || expect="--expect-gpus $expect"
# GPUIPC_PROM: also write the run for node-exporter's textfile collector
# there (--prom FILE, renamed into place as the collector requires),
# for example /var/lib/node_exporter/textfile_collector/gpuipc.prom.
prom=${GPUIPC_PROM:+--prom $GPUIPC_PROM}
line=$(${GPUIPC_TEST:-gpuipc_test} --brief --deadline 50 $expect $prom ${GPUIPC_ARGS:-})
status=$?
case $status in
0 | 77) exit 0 ;;
esac
node=$(hostname -s 2>/dev/null || hostname)
reason=$(printf 'gpuipc_test exit %s: %.200s' "$status" "$line")
if [ -n "${DRAIN:-}" ]; then
    $DRAIN "$node" "$reason"
else
    scontrol update nodename="$node" state=drain reason="$reason"
fi
exit 1
