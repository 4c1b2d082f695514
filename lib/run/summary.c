/* SPDX-License-Identifier: Apache-2.0 */
/* summary.c: the producer's outcome said in words, from its cells
 * (summary.h). */
#include "run/summary.h"

#include <stdio.h>
#include <string.h>

#include "core/cause.h"
#include "core/log.h"
#include "core/status.h"
#include "core/step.h"
#include "run/brief.h"
#include "session/report.h"

/* Whether every scenario was skipped with the same reason and cause. */
static int one_cause(const gpuipc_cellset *cs)
{
    size_t i;

    if (cs->n < 2 || cs->results[0].cause.what[0] == '\0')
        return 0;
    for (i = 1; i < cs->n; i++)
        if (cs->results[i].status != cs->results[0].status ||
            strcmp(cs->results[i].reason, cs->results[0].reason) != 0 ||
            !gpuipc_cause_same(&cs->results[i].cause, &cs->results[0].cause))
            return 0;
    return 1;
}

/* The one-line reason for exit 77: the shared reason if CUDA is missing,
 * else each mechanism's. Where the check of the FDs at exit turned the
 * status into exit_code 1, the line says so. */
void gpuipc_summary_skip_line(const gpuipc_cellset *cs, int cuda, const gpuipc_err *cuda_why,
                              int exit_code)
{
    char line[2048], cause[GPUIPC_ERR_LEN];
    size_t i, used;

    used = (size_t)snprintf(line, sizeof(line), "gpuipc_test: %s%s: ", gpuipc_exit_word(exit_code),
                            exit_code == GPUIPC_SKIP ? ""
                            : " (an FD left open, said above) after nothing could run");

    if (cuda == 1) {
        if (cs->n > 0)
            gpuipc_cause_line(&cs->results[0].cause, cause, sizeof(cause));
        else
            cause[0] = '\0';
        snprintf(line + used, sizeof(line) - used, "%s%s%s%s", cuda_why->msg,
                 cause[0] ? " (" : "", cause, cause[0] ? ")" : "");
    } else if (one_cause(cs)) {
        /* One reason and cause for all (WSL2, a compute mode): said once. */
        for (i = 0; i < cs->n && used < sizeof(line); i++)
            used += (size_t)snprintf(line + used, sizeof(line) - used, "%s%s", i ? ", " : "",
                                     cs->results[i].mech);
        if (used < sizeof(line))
            snprintf(line + used, sizeof(line) - used, ": %s (%s)", cs->results[0].reason,
                     gpuipc_cause_line(&cs->results[0].cause, cause, sizeof(cause)));
    } else {
        /* Each reason with the cause the summary would name under it. */
        for (i = 0; i < cs->n && used < sizeof(line); i++) {
            const gpuipc_result *r = &cs->results[i];

            gpuipc_cause_line(&r->cause, cause, sizeof(cause));
            used += (size_t)snprintf(line + used, sizeof(line) - used, "%s%s: %s%s%s%s",
                                     i ? "; " : "", r->mech,
                                     r->status < 0 ? "not selected by CK_RUN_SUITE/CK_RUN_CASE"
                                                   : r->reason,
                                     cause[0] ? " (" : "", cause, cause[0] ? ")" : "");
        }
    }
    gpuipc_log_line(1, line);
}

void gpuipc_summary_brief_notes(const gpuipc_cellset *cs, int code, const char *consumer,
                                const char *lost, const char *last)
{
    const gpuipc_result *failed = NULL, *explained = NULL;
    char first[GPUIPC_ERR_LEN + 160], cause[GPUIPC_ERR_LEN];
    size_t i;

    for (i = 0; i < cs->n; i++) {
        const gpuipc_result *r = &cs->results[i];

        if (r->status == GPUIPC_FAIL && failed == NULL)
            failed = r;
        if ((r->status == GPUIPC_FAIL || r->status == GPUIPC_SKIP) && r->cause.what[0] != '\0' &&
            (explained == NULL || (r == failed && explained != failed)))
            explained = r;
    }
    first[0] = '\0';
    if (failed != NULL) {
        const char *step = gpuipc_step_name(failed->failure.step);
        const char *why = failed->failure.reason;
        size_t n = strlen(step);

        if (failed->failure.step != GPUIPC_STEP_NONE && strncmp(why, step, n) == 0 &&
            strncmp(why + n, ": ", 2) == 0)
            why += n + 2;
        char name[96];

        /* Over several GPUs the failing one is named. */
        snprintf(first, sizeof(first), "%s %s %s: %.440s", gpuipc_role_name(failed->failed_side),
                 gpuipc_report_name(failed, name, sizeof(name)), failed->failure.step ? step : "-",
                 why);
    } else if (lost != NULL) {
        snprintf(first, sizeof(first), "%.500s", lost);
    } else if (code == GPUIPC_FAIL) {
        /* No scenario failed: the end of the session did (the producer's
         * last check, or how the consumer ended). */
        if (last[0] != '\0')
            snprintf(first, sizeof(first), "%.500s", last);
        else
            snprintf(first, sizeof(first), "consumer: %.500s", consumer);
    }
    gpuipc_brief_note(first, explained != NULL ? gpuipc_cause_line(&explained->cause, cause,
                                                                   sizeof(cause))
                                               : NULL);
}
