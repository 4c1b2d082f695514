#!/bin/sh
# slurm-healthcheck.sh: a Slurm HealthCheckProgram (slurm.conf) or prolog
# step that drains a node whose GPU memory sharing fails.
#
# slurmd kills a HealthCheckProgram after 60 s; a default run takes about a
# second on an H100, and every wait in it ends within --timeout, so
# --timeout 20s bounds the whole check well below that. A node with no GPU
# (exit 77) is left alone; any other failure drains it with the one-line
# reason. DRAIN: the command that drains (default: scontrol); the reason is
# its last argument.
#
# GPUIPC_TEST: the program (default: gpuipc_test on PATH); GPUIPC_ARGS: more
# options.
line=$(${GPUIPC_TEST:-gpuipc_test} --brief --timeout 20s ${GPUIPC_ARGS:-})
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
