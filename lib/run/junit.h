/* SPDX-License-Identifier: Apache-2.0 */
/* junit.h: --junit FILE, the run as JUnit XML the way GitLab and Jenkins
 * read it: <testsuites> holding a <testsuite> per GPU (one for host memory)
 * with a <testcase> per scenario, and a last <testsuite name="run"> whose
 * one testcase is the run's verdict (its exit status), so that a failure
 * no scenario explains (a leak at the end, a consumer that died, the
 * deadline, too few GPUs) fails the report too. Skips carry their reason,
 * failures their first failure and its cause and fix. */
#ifndef GPUIPC_RUN_JUNIT_H
#define GPUIPC_RUN_JUNIT_H

#include "run/outcome.h"

/* Writes oc to fd. A running outcome is a report whose one testcase is an
 * <error>: the run started and has not written its verdict (what a reader
 * finds if it never does). System calls only. Returns 0, or a negative
 * errno of the write that failed. */
int gpuipc_junit_write(int fd, const gpuipc_outcome *oc);

#endif
