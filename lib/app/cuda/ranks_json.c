/* SPDX-License-Identifier: Apache-2.0 */
/* ranks_json.c: rank 0's --json under --ranks, the gpuipc-ranks/1 document:
 * every rank (host, pid, GPU, where it is) and every ordered pair with its
 * verdict and its scenarios, or, before the verdict, a document saying the
 * run is under way; written through the one safe file writer. */
#include <stdio.h>
#include <unistd.h>

#include "app/cuda/ranks_run.h"
#include "app/version.h"
#include "core/cause.h"
#include "core/clock.h"
#include "core/json.h"
#include "core/outfile.h"
#include "core/status.h"
#include "core/step.h"
#include "core/units.h"

/* The document's first members, the same in the verdict's document and in
 * the one of a run under way: the object opened on j, writing to f. */
static void put_head(gpuipc_json *j, FILE *f, int code, const char *verdict)
{
    gpuipc_json_init(j, f);
    gpuipc_json_object(j, NULL);
    gpuipc_json_string(j, "schema", "gpuipc-ranks/1");
    gpuipc_json_string(j, "program", "gpuipc_test " GPUIPC_VERSION);
    gpuipc_json_int(j, "protocol", GPUIPC_WIRE_VERSION);
    gpuipc_json_string(j, "mode", "ranks");
    gpuipc_json_int(j, "exit_code", code);
    gpuipc_json_string(j, "verdict", verdict);
}

/* The --json document of the run (rank 0), into f. */
static void write_json(const ranks_run *rr, FILE *f, const gpuipc_cell *cells, int code,
                       unsigned proven, unsigned pf, unsigned ps)
{
    gpuipc_json j;
    char uuid[48];
    uint32_t r, p, c;
    size_t i;

    put_head(&j, f, code, gpuipc_exit_word(code));
    gpuipc_json_double(&j, "wall_s", (double)(gpuipc_clock_ns() - rr->t0) / 1e9);
    gpuipc_json_string(&j, "pmix", gpuipc_launch_version(rr->l));
    gpuipc_json_int(&j, "size", rr->size);
    gpuipc_json_int(&j, "pairs_proven", proven);
    gpuipc_json_int(&j, "pairs_failed", pf);
    gpuipc_json_int(&j, "pairs_skipped", ps);
    gpuipc_json_array(&j, "ranks");
    for (r = 0; r < rr->size; r++) {
        const gpuipc_job_card *card = gpuipc_job_card_of(rr->job, r);
        char why[512];

        gpuipc_json_object(&j, NULL);
        gpuipc_json_int(&j, "rank", r);
        gpuipc_json_string(&j, "host", card ? card->host : NULL);
        gpuipc_json_int(&j, "pid", card ? card->pid : 0);
        gpuipc_json_int(&j, "gpu", rr->gpus[r].ordinal);
        gpuipc_json_string(&j, "gpu_uuid", rr->gpus[r].ordinal >= 0
                           ? gpuipc_units_format_uuid(rr->gpus[r].uuid, uuid, sizeof(uuid))
                           : NULL);
        gpuipc_json_bool(&j, "on_this_node",
                         gpuipc_job_where_is(rr->job, r, why, sizeof(why)) ==
                             GPUIPC_JOB_SAME_NODE);
        gpuipc_json_string(&j, "where", why);
        gpuipc_json_end(&j, '}');
    }
    gpuipc_json_end(&j, ']');
    gpuipc_json_array(&j, "pairs");
    for (p = 0; p < rr->size; p++)
        for (c = 0; c < rr->size; c++) {
            const gpuipc_cell *cell = &cells[(size_t)p * rr->size + c];
            char why[GPUIPC_ERR_LEN];
            int v;

            if (p == c)
                continue;
            v = gpuipc_cell_verdict(cell, rr->whop, rr->mechs, rr->s->nsel, why, sizeof(why),
                                    NULL, NULL, NULL);
            gpuipc_json_object(&j, NULL);
            gpuipc_json_int(&j, "producer", p);
            gpuipc_json_int(&j, "consumer", c);
            gpuipc_json_string(&j, "verdict", gpuipc_exit_word(v));
            gpuipc_json_string(&j, "reason", why[0] ? why : NULL);
            gpuipc_json_array(&j, "scenarios");
            for (i = 0; cell->prod.have && i < cell->prod.n; i++) {
                const gpuipc_cell_scenario *s = &cell->prod.s[i];
                char line[2 * GPUIPC_CELL_TEXT_LEN + 32];

                gpuipc_json_object(&j, NULL);
                gpuipc_json_string(&j, "mechanism", s->mech);
                gpuipc_json_string(&j, "status", s->status < 0 ? "NOT RUN"
                                   : gpuipc_status_word(s->status));
                gpuipc_json_string(&j, "side", s->side ? gpuipc_role_name(s->side) : NULL);
                gpuipc_json_string(&j, "step", s->step ? gpuipc_step_name(s->step) : NULL);
                gpuipc_json_string(&j, "reason", s->reason[0] ? s->reason : NULL);
                gpuipc_json_string(&j, "cause", s->what[0] ? gpuipc_cause_line_of(s->what, s->fix,
                                                        line, sizeof(line)) : NULL);
                gpuipc_json_end(&j, '}');
            }
            gpuipc_json_end(&j, ']');
            gpuipc_json_end(&j, '}');
        }
    gpuipc_json_end(&j, ']');
    gpuipc_json_end(&j, '}');
    gpuipc_json_finish(&j);
}

/* Writes the --json document (cells NULL: the run under way, not
 * finished) in place of whatever is at its path (a regular file: the check
 * before the run, or the last writing, said so). Returns 0, or -1 where it
 * could not be written (said). */
int gpuipc_ranks_json_write(ranks_run *rr, const gpuipc_cell *cells, int code, unsigned proven,
                      unsigned pf, unsigned ps)
{
    gpuipc_err err;
    FILE *f;
    int fd;

    gpuipc_err_clear(&err);
    if (!rr->json_checked)
        return 0;
    if ((fd = gpuipc_outfile_open(&rr->json, &err)) < 0 || (f = fdopen(fd, "w")) == NULL) {
        if (fd >= 0)
            close(fd);
        gpuipc_outfile_abort(&rr->json);
        printf("rank 0: --json %s: not written: %s\n", rr->o->json_path, err.msg);
        return -1;
    }
    if (cells != NULL) {
        write_json(rr, f, cells, code, proven, pf, ps);
    } else {
        gpuipc_json j;

        put_head(&j, f, GPUIPC_FAIL, "NOT FINISHED");
        gpuipc_json_string(&j, "reason", "the run is under way, or it ended before rank 0's "
                           "verdict (the deadline, a signal, a crash: each rank's output says "
                           "which)");
        gpuipc_json_end(&j, '}');
        gpuipc_json_finish(&j);
    }
    if (fclose(f) != 0 || gpuipc_outfile_commit(&rr->json, &err) < 0) {
        gpuipc_outfile_abort(&rr->json);
        printf("rank 0: --json %s: not written: %s\n", rr->o->json_path,
               err.msg[0] ? err.msg : "a write failed");
        return -1;
    }
    if (cells != NULL)
        return 0;
    /* The verdict's writing replaces this file, a regular file of ours. */
    gpuipc_outfile_close(&rr->json);
    if (gpuipc_outfile_check(&rr->json, rr->o->json_path, &err) < 0) {
        rr->json_checked = 0;
        printf("rank 0: --json %s: %s\n", rr->o->json_path, err.msg);
        return -1;
    }
    return 0;
}
