#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# ci-job.sh: the GPU-runner step of a CI job. It runs the check once, keeps
# its JUnit XML report (--junit: a testsuite per GPU, a testcase per
# scenario, as GitLab and Jenkins read it) and the result document as
# artifacts (in ./artifacts), and fails the job with the program's status.
# One line goes to the log.
#
# GPUIPC_TEST: the program (default: gpuipc_test on PATH); GPUIPC_ARGS: more
# options; GPUIPC_EXPECT_GPUS: the GPUs the runner must show (default: its
# /dev/nvidiaN device nodes, at least 1, so that a runner that lost a GPU
# fails the job rather than skipping it; "none" to check nothing).
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
mkdir -p artifacts
${GPUIPC_TEST:-gpuipc_test} --brief --junit artifacts/gpuipc-junit.xml \
    --json artifacts/gpuipc-result.json $expect ${GPUIPC_ARGS:-}
