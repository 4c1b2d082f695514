#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# npd-plugin.sh: a node-problem-detector custom plugin (custom-plugin-monitor)
# that checks GPU memory sharing between processes on this node.
#
# node-problem-detector reads a plugin's exit status (0 OK, 1 a problem, any
# other value unknown) and its first line of output as the message.
# gpuipc_test --brief prints that one line; its statuses map as:
#   0 -> 0 (every mechanism that ran passed, both ways)
#   1 -> 1 (a failure: wrong bytes, a leak, a peer that died or hung, or fewer
#     GPUs than GPUIPC_EXPECT_GPUS, no driver or no device: a GPU node whose
#     driver vanished or that lost a GPU is a problem, not an unknown)
#   77 (nothing could run for another reason) -> 2, unknown
#   2 (a usage error: this plugin's configuration) -> 2, unknown
# --deadline 40 ends the check with a verdict by 40 s, a wedged driver call
# or a stuck peer included; set the plugin's timeout above it (45s in the
# rule of docs/health-checks.md). A default run takes about a second on an
# H100.
#
# GPUIPC_TEST: the program (default: gpuipc_test on PATH); GPUIPC_ARGS: more
# options (for example --only vmm,legacy-ipc); GPUIPC_EXPECT_GPUS: the GPUs
# this node must show (default: its /dev/nvidiaN device nodes; "none" on a
# node with no GPU). The default run proves every GPU of the node.
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
line=$(${GPUIPC_TEST:-gpuipc_test} --brief --deadline 40 $expect $prom ${GPUIPC_ARGS:-})
status=$?
echo "$line"
case $status in
0) exit 0 ;;
1) exit 1 ;;
*) exit 2 ;;
esac
