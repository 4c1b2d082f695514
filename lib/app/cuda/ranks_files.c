/* SPDX-License-Identifier: Apache-2.0 */
/* ranks_files.c: --prom FILE and --junit FILE under --ranks: the rank that
 * gives the verdict checks the paths (rank 0 before the run, and marks the
 * files under way at its start; another rank at the verdict, where rank 0
 * is gone), and writes them from the cells it judged, as rows of
 * run/rank_results.h, through run/report_files.h's writer and renderers.
 * The numbers the files' gpu labels hold are ranks: each rank's GPU is
 * named by its UUID. */
#include <stdio.h>
#include <stdlib.h>

#include "app/cuda/doc_data.h"
#include "app/cuda/ranks_run.h"
#include "core/clock.h"
#include "core/status.h"
#include "core/units.h"
#include "run/rank_results.h"
#include "run/report_files.h"

/* The files' program: the options' values, in the mode's own name. */
static const gpuipc_doc_program *program_of(const ranks_run *rr, gpuipc_doc_program *prog)
{
    gpuipc_doc_program_of(rr->o, prog);
    prog->mode = "ranks";
    return prog;
}

/* Checks both paths; before the run (before set) a refusal is the run's
 * usage error, at the verdict a file not written. Returns 0 or -1 (said). */
static int check(ranks_run *rr, const gpuipc_doc_program *prog, int before)
{
    gpuipc_err err;

    if (gpuipc_files_check(prog, &err) < 0) {
        if (before)
            printf("rank %u: result: %s: %s (exit %d)\n", rr->rank,
                   gpuipc_exit_word(GPUIPC_USAGE), err.msg, GPUIPC_USAGE);
        else
            printf("rank %u: not written: %s\n", rr->rank, err.msg);
        return -1;
    }
    rr->files_checked = 1;
    return 0;
}

int gpuipc_ranks_files_check(ranks_run *rr)
{
    gpuipc_doc_program prog;

    if (rr->rank != 0 || !gpuipc_files_wanted(program_of(rr, &prog)))
        return 0;
    return check(rr, &prog, 1);
}

void gpuipc_ranks_files_begin(ranks_run *rr)
{
    gpuipc_doc_program prog;
    char role[32];

    if (!rr->files_checked)
        return;
    snprintf(role, sizeof(role), "rank %u", rr->rank);
    gpuipc_files_begin_as(program_of(rr, &prog), role);
}

void gpuipc_ranks_files_close(ranks_run *rr)
{
    if (rr->files_checked)
        gpuipc_files_drop();
    rr->files_checked = 0;
}

/* Each rank's GPU's UUID, by rank ("" for none). Returns the table
 * (malloc'd) or NULL out of memory. */
static char (*uuids_by_rank(const ranks_run *rr))[GPUIPC_OUTCOME_UUID_LEN]
{
    char (*uuids)[GPUIPC_OUTCOME_UUID_LEN] = calloc(rr->size, sizeof(*uuids));
    uint32_t r;

    for (r = 0; uuids != NULL && r < rr->size; r++)
        if (rr->gpus[r].ordinal >= 0)
            gpuipc_units_format_uuid(rr->gpus[r].uuid, uuids[r], sizeof(uuids[r]));
    return uuids;
}

int gpuipc_ranks_files_write(ranks_run *rr, const gpuipc_cell *cells, int code,
                             const gpuipc_cells_tally *t)
{
    static const int order[] = {GPUIPC_FILE_JUNIT, GPUIPC_FILE_PROM}; /* as the forked mode's */
    char result[GPUIPC_ERR_LEN + 160], role[32], driver[128];
    char (*uuids)[GPUIPC_OUTCOME_UUID_LEN] = NULL;
    int failed[GPUIPC_FILE_COUNT] = {0, 0}, rc = 0, round, changed;
    gpuipc_rank_results rows = {NULL, 0, NULL};
    gpuipc_doc_program prog;
    gpuipc_err why;
    gpuipc_doc d;
    size_t k;

    if (!gpuipc_files_wanted(program_of(rr, &prog)))
        return 0;
    /* A rank other than rank 0 gives the verdict: its paths are looked at
     * now, for the first time. */
    if (!rr->files_checked && check(rr, &prog, 0) < 0)
        rc = -1;
    if (rc == 0 && (gpuipc_rank_results_make(&rows, cells, rr->size, rr->whop, rr->mechs,
                                             rr->s->nsel) < 0 ||
                    (uuids = uuids_by_rank(rr)) == NULL)) {
        printf("rank %u: --prom and --junit: not written: out of memory for the rows of %u "
               "ranks' pairs\n", rr->rank, rr->size);
        rc = -1;
    }
    if (rc < 0) {
        /* No file says this verdict: it is no pass, and --json says so. */
        if ((code == GPUIPC_PASS || code == GPUIPC_SKIP) &&
            gpuipc_ranks_json_write(rr, cells, GPUIPC_FAIL, t->proven, t->failed,
                                    t->skipped) < 0)
            printf("rank %u: --json: the verdict it holds may be the run's before the "
                   "files failed\n", rr->rank);
        gpuipc_rank_results_free(&rows);
        free(uuids);
        return -1;
    }
    gpuipc_files_prepare(gpuipc_doc_driver(driver, sizeof(driver)));
    snprintf(role, sizeof(role), "rank %u", rr->rank);
    gpuipc_rank_results_line(result, sizeof(result), code, rr->size, t, 0);
    d = (gpuipc_doc){.o = &prog, .role = role, .wall_ns = gpuipc_clock_ns() - rr->t0,
                     .results = rows.results, .n = rows.n, .result = result,
                     .uuids = (const char (*)[GPUIPC_OUTCOME_UUID_LEN])uuids,
                     .nuuids = rr->size};
    /* The JUnit report, then the textfile: one that cannot be written turns
     * a pass into a failure, and what was written before it (the other
     * file, --json) is written again, saying so. */
    for (round = 0; round < 2; round++) {
        changed = 0;
        for (k = 0; k < sizeof(order) / sizeof(order[0]); k++) {
            if (failed[order[k]])
                continue;
            d.exit_code = code;
            if (gpuipc_files_write(&d, order[k], code, &why) == 0)
                continue;
            failed[order[k]] = 1;
            rc = -1;
            printf("rank %u: %s\n", rr->rank, why.msg);
            if (code != GPUIPC_PASS && code != GPUIPC_SKIP)
                continue;
            snprintf(result, sizeof(result), "%s: the run's verdict was exit %d, but %.500s "
                     "(exit %d)", gpuipc_exit_word(GPUIPC_FAIL), code, why.msg, GPUIPC_FAIL);
            code = GPUIPC_FAIL;
            changed = 1;
        }
        if (!changed)
            break;
        (void)gpuipc_ranks_json_write(rr, cells, code, t->proven, t->failed, t->skipped);
    }
    gpuipc_rank_results_free(&rows);
    free(uuids);
    return rc;
}
