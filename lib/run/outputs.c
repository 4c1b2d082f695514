/* SPDX-License-Identifier: Apache-2.0 */
/* outputs.c: the run's result files together: --json, then --junit, then
 * --prom, from one gpuipc_doc, with what a file that cannot be written does
 * to the exit status. */
#include "run/outputs.h"

#include <stdio.h>
#include <string.h>

#include "core/err.h"
#include "core/log.h"
#include "core/status.h"
#include "run/report_files.h"
#include "run/result_doc.h"

void gpuipc_outputs_drop(void)
{
    gpuipc_doc_drop_file();
    gpuipc_files_drop();
}

int gpuipc_outputs_wanted(const gpuipc_doc_program *o)
{
    return o->json_path != NULL || gpuipc_files_wanted(o);
}

/* Writes output k of d (0: --json, 1: --junit, 2: --prom) with exit status
 * code. Returns 0, or -1 with why. */
static int write_output(const gpuipc_doc *d, int k, int code, gpuipc_err *why)
{
    gpuipc_doc with = *d;

    with.exit_code = code;
    if (k == 0)
        return gpuipc_doc_write(&with, why);
    return gpuipc_files_write(&with, k == 1 ? GPUIPC_FILE_JUNIT : GPUIPC_FILE_PROM, code, why);
}

int gpuipc_outputs_finish(const gpuipc_doc *d, int exit_code)
{
    char line[GPUIPC_ERR_LEN + 160];
    int code = exit_code, failed[3] = {0, 0, 0}, round, k, changed;
    int to_stdout = d->o->json_path != NULL && strcmp(d->o->json_path, "-") == 0;
    gpuipc_err why;

    /* The document first, then the JUnit report, the textfile last: a
     * write that fails turns a pass into a failure, and the files written
     * before it are then written again, saying so. */
    for (round = 0; round < 2; round++) {
        changed = 0;
        for (k = 0; k < 3; k++) {
            if (failed[k] || (round > 0 && k == 0 && to_stdout)) /* said once, or sent */
                continue;
            if (write_output(d, k, code, &why) == 0)
                continue;
            failed[k] = 1;
            /* The verdict said above stands only where it was no pass: a
             * result file that a pipeline reads and cannot find is a
             * failure. */
            if (code != GPUIPC_PASS && code != GPUIPC_SKIP) {
                gpuipc_log_say("%s (the exit status stays %d)", why.msg, code);
                continue;
            }
            snprintf(line, sizeof(line), "result: %s: the run ended with exit %d (said above), "
                     "but %.500s (exit %d)", gpuipc_exit_word(GPUIPC_FAIL), code, why.msg,
                     GPUIPC_FAIL);
            gpuipc_log_line(1, line);
            code = GPUIPC_FAIL;
            changed = 1;
        }
        if (!changed)
            break;
    }
    return code;
}

