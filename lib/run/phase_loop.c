/* SPDX-License-Identifier: Apache-2.0 */
/* phase_loop.c: phases whose cells run at once, counted at each phase's
 * ends, a drift run again one cell at a time (phase_loop.h). */
#include "run/phase_loop.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/step.h"

/* A line of the step log, where l has one. */
static void say(const gpuipc_phase_loop *l, int level, const char *scenario, unsigned step,
                uint64_t dur_ns, const char *fmt, ...) __attribute__((format(printf, 6, 7)));

static void say(const gpuipc_phase_loop *l, int level, const char *scenario, unsigned step,
                uint64_t dur_ns, const char *fmt, ...)
{
    char text[GPUIPC_ERR_LEN + 256];
    va_list ap;

    if (l->log == NULL)
        return;
    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    gpuipc_log_step(l->log, level, scenario, step, dur_ns, "%s", text);
}

static int stopped(const gpuipc_phase_loop *l)
{
    return l->stopped != NULL && l->stopped(l->arg);
}

/* What phase k's drift does: its cells run again one at a time where they
 * can; the drift stands where none of them names it (or they cannot). */
static void settle(const gpuipc_phase_loop *l, size_t k, size_t n, const char *drift)
{
    char text[GPUIPC_ERR_LEN + 160];

    if (l->again == NULL) {
        if (stopped(l))
            return;
        snprintf(text, sizeof(text), "phase %zu: %.380s, while its cells ran at once; they "
                 "cannot run again one at a time here: a drift not tied to a cell", k, drift);
        say(l, GPUIPC_LOG_QUIET, NULL, GPUIPC_STEP_RELEASE, GPUIPC_LOG_NO_TIME,
                        "%s", text);
        l->stands(l->arg, k, text);
        return;
    }
    say(l, GPUIPC_LOG_QUIET, NULL, GPUIPC_STEP_RELEASE, GPUIPC_LOG_NO_TIME,
                    "phase %zu: %s; its %zu cells run again one at a time, each counting "
                    "everything", k, drift, n);
    /* A stop in the second run leaves cells unrun: none of them cleared of
     * the drift, and none blamed for it either. */
    if (l->again(l->arg, k) == 0 && !stopped(l)) {
        snprintf(text, sizeof(text), "phase %zu: %.380s, while its cells ran at once; run "
                 "again one at a time, each of them counted no leak: a drift not tied to a "
                 "cell", k, drift);
        l->stands(l->arg, k, text);
    }
}

int gpuipc_phase_loop_run(const gpuipc_phase_loop *l, gpuipc_err *err)
{
    size_t k;
    int rc;

    for (k = 0; k < l->nphases && !stopped(l); k++) {
        size_t n = l->cells(l->arg, k);
        char drift[GPUIPC_ERR_LEN] = "", peer[GPUIPC_ERR_LEN] = "";
        gpuipc_usage base;
        gpuipc_err e;
        int have_base;

        if (n == 0)
            continue;
        if (l->begin != NULL && (rc = l->begin(l->arg, k, err)) != 0)
            return rc;
        /* Taken once the phase has begun, not before: the beginning may
         * close FDs (the peer's ends of the workers' connections), whose
         * numbers a cell's leaked FD would take, unseen. */
        have_base = gpuipc_usage_take(&base, l->gpu_bytes, &e) == 0;
        if (!have_base) {
            /* No count at the beginning: the phase's own counts cannot
             * speak for it, so its cells run again one at a time. */
            snprintf(drift, sizeof(drift), "%s could not count what it held at the phase's "
                     "beginning: %.380s", l->who, e.msg);
            gpuipc_usage_free(&base);
        }
        say(l, GPUIPC_LOG_VERBOSE, NULL, GPUIPC_STEP_BEGIN,
                        GPUIPC_LOG_NO_TIME, "phase %zu: %zu cells at once", k, n);
        l->play(l->arg, k);
        if (l->end != NULL && (rc = l->end(l->arg, k, peer, sizeof(peer), err)) < 0) {
            if (have_base)
                gpuipc_usage_free(&base);
            return rc;
        }
        if (peer[0] != '\0' && drift[0] == '\0')
            snprintf(drift, sizeof(drift), "%s", peer);
        if (have_base) {
            if (l->not_cells != NULL)
                l->not_cells(l->arg, k, &base);
            if (gpuipc_usage_leaks(&base, l->gpu_bytes, l->settle_ns, &e) > 0 &&
                drift[0] == '\0')
                snprintf(drift, sizeof(drift), "%s holds what it did not at the phase's "
                         "beginning: %.400s", l->who, e.msg);
            gpuipc_usage_free(&base);
        }
        if (drift[0] != '\0')
            settle(l, k, n, drift);
        if (l->ended != NULL)
            l->ended(l->arg, k);
    }
    return 0;
}
