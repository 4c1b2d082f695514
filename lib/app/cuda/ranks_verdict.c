/* SPDX-License-Identifier: Apache-2.0 */
/* ranks_verdict.c: the end of --ranks: each rank publishes its records of
 * its pairs (run/cells); rank 0 gathers every rank's (after a fence where
 * every rank is alive, else as each comes), makes each ordered pair's
 * verdict from both sides, prints the failing and skipped ones with each
 * cause once and a count, writes --json, publishes the run's status and
 * stays until this node's other ranks have left; the others take that
 * status or say why it never came. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "app/cuda/ranks_run.h"
#include "core/cause.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/status.h"
#include "core/stop.h"

/* ---- the verdict ------------------------------------------------------------------ */

/* This rank's records as text, for KEY_RESULTS. Returns it (malloc'd) or
 * NULL out of memory. */
static char *my_results(const ranks_run *rr)
{
    char *buf = NULL;
    size_t len = 0, cap = 0;
    uint32_t peer;

    if ((buf = malloc(1)) == NULL)
        return NULL;
    buf[0] = '\0';
    cap = 1;
    for (peer = 0; peer < rr->size; peer++) {
        if (peer == rr->rank)
            continue;
        if (gpuipc_cells_encode(&buf, &len, &cap, 1, rr->rank, peer,
                                &rr->mine[(size_t)peer * 2]) < 0 ||
            gpuipc_cells_encode(&buf, &len, &cap, 2, peer, rr->rank,
                                &rr->mine[(size_t)peer * 2 + 1]) < 0) {
            free(buf);
            return NULL;
        }
    }
    return buf;
}

/* Looks at every rank: the PMIx layer then never waits for a gone one. */
static void look_at_all(ranks_run *rr)
{
    uint32_t r;

    for (r = 0; r < rr->size; r++)
        if (r != rr->rank)
            (void)gpuipc_ranks_is_gone(rr, r);
}

/* Rank 0, its verdict committed: stays until every other rank of this node
 * has left (its process ended), at most --timeout, so that none of them
 * finds rank 0 gone and takes it for dead before its verdict. */
static void linger(ranks_run *rr)
{
    uint64_t deadline = gpuipc_clock_deadline(rr->o->timeout_ns);
    struct timespec pause = {0, 20 * 1000000L};
    uint32_t r;

    for (;;) {
        for (r = 1; r < rr->size; r++) {
            char why[256];

            if (!rr->gone[r] &&
                gpuipc_job_where_is(rr->job, r, why, sizeof(why)) == GPUIPC_JOB_SAME_NODE &&
                !gpuipc_meet_ended(rr->meet, r))
                break;
        }
        if (r == rr->size || gpuipc_clock_ms_left(deadline) == 0 || gpuipc_stop_signal())
            return;
        nanosleep(&pause, NULL);
    }
}

/* Rank 0: every rank's records, each pair's verdict, the summary. Returns
 * the run's status. */
static int judge(ranks_run *rr, const char *own, int fenced)
{
    gpuipc_cell *cells = calloc((size_t)rr->size * rr->size, sizeof(*cells));
    char *got = malloc(GPUIPC_LAUNCH_VALUE_MAX);
    unsigned silent = 0;
    gpuipc_cells_tally t;
    char refused[400];
    uint32_t r, p;
    gpuipc_err err;
    int code;

    if (cells == NULL || got == NULL) {
        free(cells);
        free(got);
        printf("rank 0: result: %s: out of memory for the verdicts of %u ranks (exit %d)\n",
               gpuipc_exit_word(GPUIPC_FAIL), rr->size, GPUIPC_FAIL);
        return GPUIPC_FAIL;
    }
    for (r = 0; r < rr->size; r++) {
        const char *text = own;

        if (r != 0) {
            /* A get of a key that a dead rank never put can wait for ever,
             * whatever its timeout (OpenPMIx 4.2, after the rank's exit):
             * a rank of this node whose process has ended is not asked. */
            if (gpuipc_ranks_is_gone(rr, r)) {
                printf("rank 0: %s's results never came: it is gone (its process has "
                       "ended)\n", gpuipc_ranks_who(rr, r));
                silent++;
                continue;
            }
            if (rr->stuck[r]) {
                printf("rank 0: %s's results are not waited for: it did not come to its pair "
                       "with rank 0 in time\n", gpuipc_ranks_who(rr, r));
                silent++;
                continue;
            }
            if (gpuipc_launch_get(rr->l, r, KEY_RESULTS, got, GPUIPC_LAUNCH_VALUE_MAX,
                                  &err) < 0) {
                printf("rank 0: %s's results never came%s: %s\n", gpuipc_ranks_who(rr, r),
                       fenced ? "" : " (without a fence: a rank is gone, stuck, or out of "
                       "the fence)", err.msg);
                silent++;
                continue;
            }
            text = got;
            /* What the rank refused at its listener, named here too. */
            if (gpuipc_launch_get(rr->l, r, KEY_REFUSED, refused, sizeof(refused), &err) ==
                    0 && strncmp(refused, "refused ", 8) == 0)
                printf("rank 0: %s %s\n", gpuipc_ranks_who(rr, r), refused);
        }
        if (gpuipc_cells_decode(text, r, rr->size, cells, &err) < 0) {
            /* Nothing of a rank that reports nonsense is taken. */
            printf("rank 0: %s's results are refused: %s\n", gpuipc_ranks_who(rr, r), err.msg);
            for (p = 0; p < rr->size; p++) {
                cells[(size_t)r * rr->size + p].prod.have = 0;
                cells[(size_t)p * rr->size + r].cons.have = 0;
            }
            silent++;
        }
    }
    if (gpuipc_cells_judge(cells, rr->size, rr->whop, rr->mechs, rr->s->nsel, stdout, &t) < 0) {
        printf("rank 0: out of memory for the causes of %u ranks' pairs\n", rr->size);
        silent++;
    }
    code = gpuipc_status_verdict(t.proven, t.failed + silent, 0);
    code = gpuipc_app_stop_code(code);
    if (gpuipc_ranks_json_write(rr, cells, code, t.proven, t.failed, t.skipped) < 0)
        code = GPUIPC_FAIL; /* a verdict that cannot be written is no pass */
    if (gpuipc_ranks_files_write(rr, cells, code, &t) < 0)
        code = GPUIPC_FAIL;
    printf("result: %s: %u ranks, %u ordered pairs: %u proven, %u failed, %u skipped "
           "(their scenarios: %u passed, %u failed, %u skipped), in %.2f s (exit %d)\n",
           gpuipc_exit_word(code), rr->size,
           rr->size * (rr->size - 1), t.proven, t.failed, t.skipped, t.passed, t.sfailed,
           t.sskipped,
           (double)(gpuipc_clock_ns() - rr->t0) / 1e9, code);
    fflush(stdout);
    free(cells);
    free(got);
    return code;
}

/* Every rank: publishes its records; rank 0 judges and publishes the
 * status; the others take it. Returns the status this rank exits with. */
int gpuipc_ranks_conclude(ranks_run *rr)
{
    char *own = my_results(rr), got[32], first[256], refused[400] = "none";
    unsigned n;
    gpuipc_err err;
    int fenced = 0, code = GPUIPC_FAIL, own_code = GPUIPC_PASS, rc;
    uint32_t i, gone = 0;

    for (i = 0; i < rr->size * 2; i++)
        if (i / 2 != rr->rank && rr->mine[i].code != GPUIPC_PASS &&
            rr->mine[i].code != GPUIPC_SKIP)
            own_code = GPUIPC_FAIL;
    /* Whatever came to its listener and waits still is refused now, and
     * counted with the rest. */
    gpuipc_meet_sweep(rr->meet);
    gpuipc_ranks_say_refused(rr);
    n = gpuipc_meet_refused(rr->meet, first, sizeof(first));
    if (n > 0)
        snprintf(refused, sizeof(refused), "refused %u connection%s from processes that are "
                 "no rank of this job (the first: %.250s)", n, n == 1 ? "" : "s", first);
    if (rr->rank == 0 && n > 0)
        printf("rank 0: %s %s\n", gpuipc_ranks_who(rr, 0), refused);
    if (own == NULL || gpuipc_launch_put(rr->l, KEY_RESULTS, own, &err) < 0 ||
        gpuipc_launch_put(rr->l, KEY_REFUSED, refused, &err) < 0 ||
        gpuipc_launch_commit(rr->l, &err) < 0) {
        code = gpuipc_app_stop_code(GPUIPC_FAIL);
        printf("rank %u: result: %s: its results could not be published: %s (exit %d)\n",
               rr->rank, gpuipc_exit_word(code), own == NULL ? "out of memory" : err.msg, code);
        free(own);
        return GPUIPC_FAIL;
    }
    /* With every rank alive, one fence gathers the results. A fence over a
     * job with a dead rank may end at once or only at its timeout: then
     * none, and rank 0 reads each rank's results as they come (a get waits
     * for that rank's commit). */
    look_at_all(rr);
    for (i = 0; i < rr->size; i++)
        gone += rr->gone[i] || rr->stuck[i];
    if (gone == 0) {
        fenced = gpuipc_launch_fence(rr->l, "results", &err) == 0;
        if (!fenced)
            printf("rank %u: %s\n", rr->rank, err.msg);
    }
    gpuipc_ranks_watch_no_pair(rr);
    if (rr->rank == 0) {
        code = judge(rr, own, fenced);
        free(own);
        /* The others wait for this commit (no fence: a dead rank would
         * hold it), and rank 0 stays until they have it. */
        snprintf(got, sizeof(got), "%d", code);
        if (gpuipc_launch_put(rr->l, KEY_VERDICT, got, &err) < 0 ||
            gpuipc_launch_commit(rr->l, &err) < 0)
            printf("rank 0: the verdict may not reach every rank: %s\n", err.msg);
        linger(rr);
        return code;
    }
    free(own);
    /* A get wakes at rank 0's next commit, of whatever key: ask again
     * while rank 0 is alive, until its verdict or the deadline. */
    for (;;) {
        if (gpuipc_ranks_is_gone(rr, 0)) {
            gpuipc_err_set(&err, -ESRCH, "%s is gone", gpuipc_ranks_who(rr, 0));
            break;
        }
        rc = gpuipc_launch_get(rr->l, 0, KEY_VERDICT, got, sizeof(got), &err);
        if (rc == 0 &&
            (strcmp(got, "0") == 0 || strcmp(got, "1") == 0 || strcmp(got, "2") == 0 ||
             strcmp(got, "77") == 0 || (atoi(got) > 128 && atoi(got) < 160))) {
            code = atoi(got);
            if (rr->o->level >= GPUIPC_LOG_NORMAL)
                printf("rank %u: result: %s: the run's, from rank 0 (exit %d)\n", rr->rank,
                       gpuipc_exit_word(code), code);
            return code;
        }
        if (rc == 0) {
            gpuipc_err_set(&err, -EPROTO, "'%.20s' is no exit status", got);
            break;
        }
        if (rc != -ENOENT || gpuipc_stop_signal() != 0 ||
            (rr->o->deadline_ns > 0 && gpuipc_clock_ns() >= rr->t0 + rr->o->deadline_ns))
            break;
    }
    code = gpuipc_app_stop_code(GPUIPC_FAIL);
    printf("rank %u: result: %s: rank 0's verdict never came (%s); this rank's own pairs "
           "%s (exit %d)\n", rr->rank, gpuipc_exit_word(code), err.msg,
           own_code == GPUIPC_PASS ? "passed" : "failed", code);
    return GPUIPC_FAIL;
}
