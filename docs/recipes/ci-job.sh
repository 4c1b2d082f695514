#!/bin/sh
# ci-job.sh: the GPU-runner step of a CI job. It runs the check once, keeps
# Check's JUnit XML and the result document as artifacts (in ./artifacts),
# and fails the job with the program's status. One line goes to the log.
#
# GPUIPC_TEST: the program (default: gpuipc_test on PATH); GPUIPC_ARGS: more
# options; GPUIPC_EXPECT_GPUS: the GPUs the runner must show (default 1, so
# that a runner that lost its GPU fails the job rather than skipping it;
# "none" to check nothing).
expect=${GPUIPC_EXPECT_GPUS:-1}
[ "$expect" = none ] && expect= || expect="--expect-gpus $expect"
mkdir -p artifacts
CK_XML_LOG_FILE_NAME=artifacts/gpuipc-junit.xml \
    ${GPUIPC_TEST:-gpuipc_test} --brief --json artifacts/gpuipc-result.json $expect \
    ${GPUIPC_ARGS:-}
