/* SPDX-License-Identifier: Apache-2.0 */
/* ranks_doc.c: rank 0's gpuipc-ranks/1 document (ranks_doc.h). */
#include "run/ranks_doc.h"

#include <stdio.h>
#include <unistd.h>

#include "core/cause.h"
#include "core/json.h"
#include "core/status.h"
#include "core/step.h"
#include "wire/msg.h"

/* The document's first members, the same in the verdict's document and in
 * the one of a run under way: the object opened on j, writing through f. */
static void put_head(gpuipc_json *j, gpuipc_sink *f, const char *version, int code,
                     const char *verdict)
{
    char program[96];

    snprintf(program, sizeof(program), "gpuipc_test %s", version);
    gpuipc_json_init(j, f);
    gpuipc_json_object(j, NULL);
    gpuipc_json_string(j, "schema", "gpuipc-ranks/1");
    gpuipc_json_string(j, "program", program);
    gpuipc_json_int(j, "protocol", GPUIPC_WIRE_VERSION);
    gpuipc_json_string(j, "mode", "ranks");
    gpuipc_json_int(j, "exit_code", code);
    gpuipc_json_string(j, "verdict", verdict);
}

/* The document of the run's verdict, into f. */
static void write_json(const gpuipc_ranks_doc *d, const char *version, gpuipc_sink *f)
{
    gpuipc_json j;
    uint32_t r, p, c;
    size_t i;

    put_head(&j, f, version, d->code, gpuipc_exit_word(d->code));
    gpuipc_json_double(&j, "wall_s", (double)d->wall_ns / 1e9);
    gpuipc_json_string(&j, "pmix", d->pmix);
    gpuipc_json_int(&j, "size", d->size);
    gpuipc_json_int(&j, "pairs_proven", d->proven);
    gpuipc_json_int(&j, "pairs_failed", d->failed);
    gpuipc_json_int(&j, "pairs_skipped", d->skipped);
    gpuipc_json_array(&j, "ranks");
    for (r = 0; r < d->size; r++) {
        const gpuipc_ranks_doc_rank *k = &d->ranks[r];

        gpuipc_json_object(&j, NULL);
        gpuipc_json_int(&j, "rank", r);
        gpuipc_json_string(&j, "host", k->host);
        gpuipc_json_int(&j, "pid", k->pid);
        gpuipc_json_int(&j, "gpu", k->gpu);
        gpuipc_json_string(&j, "gpu_uuid", k->gpu >= 0 ? k->gpu_uuid : NULL);
        gpuipc_json_bool(&j, "on_this_node", k->on_this_node);
        gpuipc_json_string(&j, "where", k->where);
        gpuipc_json_end(&j, '}');
    }
    gpuipc_json_end(&j, ']');
    gpuipc_json_array(&j, "pairs");
    for (p = 0; p < d->size; p++)
        for (c = 0; c < d->size; c++) {
            const gpuipc_cell *cell = &d->cells[(size_t)p * d->size + c];
            char why[GPUIPC_ERR_LEN];
            int v;

            if (p == c)
                continue;
            v = gpuipc_cell_verdict(cell, d->who, d->mechs, d->nmech, why, sizeof(why), NULL,
                                    NULL, NULL);
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

int gpuipc_ranks_doc_write(gpuipc_outfile *file, int *checked, const char *path,
                           const char *version, const gpuipc_ranks_doc *d)
{
    char mem[32 * 1024];
    gpuipc_sink f;
    gpuipc_err err;
    int fd, closed;

    gpuipc_err_clear(&err);
    if (!*checked)
        return 0;
    if ((fd = gpuipc_outfile_open(file, &err)) < 0) {
        gpuipc_outfile_abort(file);
        printf("rank 0: --json %s: not written: %s\n", path, err.msg);
        return -1;
    }
    gpuipc_sink_init(&f, fd, mem, sizeof(mem));
    if (d != NULL) {
        write_json(d, version, &f);
    } else {
        gpuipc_json j;

        put_head(&j, &f, version, GPUIPC_FAIL, "NOT FINISHED");
        gpuipc_json_string(&j, "reason", "the run is under way, or it ended before rank 0's "
                           "verdict (the deadline, a signal, a crash: each rank's output says "
                           "which)");
        gpuipc_json_end(&j, '}');
        gpuipc_json_finish(&j);
    }
    /* A write that failed leaves the file out (as stdio's fclose did). */
    closed = close(fd);
    if (f.err != 0 || closed != 0 || gpuipc_outfile_commit(file, &err) < 0) {
        gpuipc_outfile_abort(file);
        printf("rank 0: --json %s: not written: %s\n", path,
               err.msg[0] ? err.msg : "a write failed");
        return -1;
    }
    if (d != NULL)
        return 0;
    /* The verdict's writing replaces this file, a regular file of ours. */
    gpuipc_outfile_close(file);
    if (gpuipc_outfile_check(file, path, &err) < 0) {
        *checked = 0;
        printf("rank 0: --json %s: %s\n", path, err.msg);
        return -1;
    }
    return 0;
}
