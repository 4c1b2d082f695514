/* SPDX-License-Identifier: Apache-2.0 */
/* producer_summary.c: how the producer says its outcome: the session ended
 * (producer_end.c), then one line for exit 77, the reason where no scenario
 * ran, or the summary with its notes (the run's cells, the leak accounting,
 * the producer's last check, this node's settings); --brief's notes;
 * --json's document. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/cuda/doc_data.h"
#include "app/cuda/deadline.h"
#include "app/cuda/process.h"
#include "app/cuda/producer_end.h"
#include "app/cuda/producer_run.h"
#include "app/cuda/producer_summary.h"
#include "app/cuda/scenario_ask.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/names.h"
#include "core/status.h"
#include "core/step.h"
#include "core/stop.h"
#include "core/watch.h"
#include "run/brief.h"
#include "run/cellset.h"
#include "run/outputs.h"
#include "run/result_doc.h"
#include "run/summary.h"
#include "session/report.h"

/* The summary's line on the leak accounting: what was counted, and where
 * NVML could not attribute GPU memory to a process. */
static void accounting_note(gpuipc_producer_run *run, char *buf, size_t len)
{
    gpuipc_usage_figures theirs;
    gpuipc_err why;
    uint64_t bytes;
    int mine;

    if (run->env.gpu == NULL) {
        snprintf(buf, len, "accounting: per process, both sides: FDs, driver objects and "
                 "resident shared memory (no GPU opened here)");
        return;
    }
    mine = run->env.gpu_bytes(&bytes, &why) == 0;
    if (run->played != NULL) {
        snprintf(buf, len, "accounting: per process, both sides, at each phase's beginning and "
                 "end (its cells at once): FDs, driver objects, resident shared memory, GPU "
                 "memory by NVML (producer %s%.200s%s); per cell: its own driver objects; a "
                 "phase that grew ran its cells again one at a time, counting everything",
                 mine ? "measured" : "not attributable: ", mine ? "" : why.msg, "");
        return;
    }
    snprintf(buf, len, "accounting: per process, both sides: FDs, driver objects, resident "
             "shared memory; GPU memory by NVML: producer %s%.200s%s, consumer %s",
             mine ? "measured" : "not attributable (", mine ? "" : why.msg, mine ? "" : ")",
             !gpuipc_app_consumer_figures(run, &theirs) ? "not reported"
             : theirs.gpu != GPUIPC_USAGE_UNKNOWN ? "measured"
                                                   : "not attributable (its log says why)");
}

/* The summary's line on the run's cells: how many, where they ran (run/
 * cellset.h's rule: on one GPU, across GPUs, in host memory), and what
 * their times add up to against the run's wall time, wall_ns (with
 * --repeat, the last round's times). */
static void cells_note(const gpuipc_producer_run *run, uint64_t wall_ns, char *buf, size_t len)
{
    gpuipc_cellset_census c = gpuipc_cellset_census_of(run->cells.results, run->cells.n);
    char count[160];

    gpuipc_cellset_census_text(&c, count, sizeof(count));
    if (run->rounds > 1)
        snprintf(buf, len, "cells: %s; their times in the last of %u rounds add to %.3f s",
                 count, run->rounds, (double)c.ns / 1e9);
    else if (run->played != NULL)
        snprintf(buf, len, "cells: %s; their times add to %.3f s, a phase's cells at once, in "
                 "the run's %.3f s", count, (double)c.ns / 1e9, (double)wall_ns / 1e9);
    else
        snprintf(buf, len, "cells: %s; their times add to %.3f s of the run's %.3f s", count,
                 (double)c.ns / 1e9, (double)wall_ns / 1e9);
}

static int finish(gpuipc_producer_run *run, int code, uint64_t t0, char *consumer, size_t len);

/* Less /dev/shm than this is named in the summary (Docker's default is 64
 * MiB, which NCCL's shared-memory transport outgrows on a node of GPUs). */
#define GPUIPC_SHM_NOTE_BELOW (256ull << 20)

/* Ends the session and prints the outcome (finish), then writes --json's
 * document, whatever the outcome. Returns the exit status. */
int gpuipc_app_producer_finish(gpuipc_producer_run *run, int code, uint64_t t0)
{
    char consumer[GPUIPC_ERR_LEN + 160] = "";
    int exit_code = finish(run, code, t0, consumer, sizeof(consumer));

    gpuipc_doc_program prog;

    if (gpuipc_outputs_wanted(gpuipc_doc_program_of(run->o, &prog)) && !run->o->list) {
        gpuipc_doc d = {
            .o = &prog,
            .role = "producer",
            .exit_code = exit_code,
            .wall_ns = gpuipc_clock_ns() - t0,
            .where = run->where[0] ? run->where : NULL,
            .consumer = consumer[0] ? consumer : NULL,
            .lost = run->started ? NULL : run->lost[0] ? run->lost : NULL,
            .results = run->started ? run->cells.results : NULL,
            .n = run->started ? run->cells.n : 0,
            .steps = run->cells.steps,
            .have_steps = run->cells.have_steps,
            .nstages = run->cells.nstages,
            .stage_names = gpuipc_stage_names,
            .rounds = run->rounds,
            .round_records = run->round_records,
            .nround_records = run->nround_records,
            .round_records_left_out = run->round_records_left_out,
            .own = &run->env.facts,
            .peer = run->env.have_peer_facts ? &run->env.peer_facts : NULL,
        };

        exit_code = gpuipc_doc_finish(&d, exit_code);
    }
    free(run->round_records);
    run->round_records = NULL;
    run->nround_records = run->round_records_cap = 0;
    /* The run has claimed its end: no watchdog reads the tables now. */
    gpuipc_app_scenarios_free(run);
    return exit_code;
}

/* The summary's line on what this node's settings make applications do
 * that this run did not: the environment (NCCL, PyTorch, CUDA) and a small
 * or unusable /dev/shm. Returns 0 where there is nothing to say. */
static int node_note(const gpuipc_producer_run *run, char *buf, size_t len)
{
    const gpuipc_facts *f = &run->env.facts;
    char effects[1024] = "", shm[96];
    int n = gpuipc_facts_env_effects(effects, sizeof(effects));
    int shm_note = (f->flags & (GPUIPC_FACT_SHM_ABSENT | GPUIPC_FACT_SHM_RO)) ||
                   f->shm_size < GPUIPC_SHM_NOTE_BELOW;

    if (n == 0 && !shm_note)
        return 0;
    gpuipc_facts_describe_shm(f, shm, sizeof(shm));
    snprintf(buf, len, "this node: %s%s%s%s%s", effects, n && shm_note ? "; " : "",
             shm_note ? shm : "", shm_note ? ": NCCL's shared-memory transport and PyTorch's "
             "DataLoader workers need more (docker run --shm-size=1g or --ipc=host; Kubernetes: "
             "an emptyDir with medium: Memory at /dev/shm)" : "",
             n ? " (NCCL and PyTorch settings do not change what this run tests)" : "");
    return 1;
}

/* Ends the session (end_session) and prints the outcome: one line for 77,
 * else the summary, or, for a session that never started or a usage error,
 * the reason and a result line; how the consumer ended goes into consumer.
 * Returns the exit status. */
static int finish(gpuipc_producer_run *run, int code, uint64_t t0, char *consumer, size_t len)
{
    char accounting[512], line[GPUIPC_ERR_LEN + 256], node[1536], cells[256];
    const char *notes[5] = {NULL, NULL, NULL, NULL, NULL};
    size_t nn = 0;
    int started = run->started, exit_code;
    uint64_t wall_ns;

    if (started && gpuipc_stop_signal() == 0)
        accounting_note(run, accounting, sizeof(accounting));
    code = gpuipc_app_producer_end(run, code, consumer, len);
    gpuipc_summary_brief_notes(&run->cells, code, consumer,
                               !run->started || run->halted ? run->lost : NULL, run->last);
    /* From here this thread says the verdict, not the watchdog (or, if the
     * deadline has fired already, it parks and the watchdog's stands). */
    gpuipc_watch_claim(gpuipc_app_stop_code(code));
    gpuipc_app_deadline_done(run->deadline);
    run->deadline = NULL;
    if (run->o->bench && started) {
        if (code != GPUIPC_SKIP) {
            char bench_line[1024];

            snprintf(bench_line, sizeof(bench_line), "result: %s: --bench on %.300s; consumer: "
                     "%.300s; %.1f s (exit %d)",
                     gpuipc_exit_word(code == GPUIPC_PASS ? GPUIPC_PASS : GPUIPC_FAIL),
                     run->where, consumer, (double)(gpuipc_clock_ns() - t0) / 1e9,
                     gpuipc_app_stop_code(code));
            gpuipc_log_line(2, bench_line);
        }
        return gpuipc_app_stop_code(code);
    }

    /* Everything that can change the exit status is decided before the
     * first line of the outcome, so that the result: line is the last and
     * says the status the program exits with. */
    exit_code = gpuipc_app_stop_code(code);
    if (!run->checked)
        exit_code = gpuipc_app_check_fds_at_exit(run->proc, &run->env.log, exit_code);
    if (gpuipc_stop_signal() != 0) {
        const char *name = gpuipc_sig_abbrev(gpuipc_stop_signal());

        gpuipc_log_say("stopped by SIG%s: what both processes held is released "
                "(exit %d)", name ? name : "?", exit_code);
    }
    if (code == GPUIPC_SKIP && gpuipc_stop_signal() == 0) {
        gpuipc_summary_skip_line(&run->cells, run->cuda, &run->cuda_why, exit_code);
        return exit_code;
    }
    if (code == GPUIPC_USAGE && gpuipc_stop_signal() == 0) {
        /* Options refused before any scenario: the one reason is the
         * verdict (the consumer ended as told, so it has nothing to add). */
        snprintf(line, sizeof(line), "result: %s: %.600s (exit %d)", gpuipc_exit_word(code),
                 gpuipc_log_last_said()[0] != '\0' ? gpuipc_log_last_said()
                 : "the producer refused its options", exit_code);
        gpuipc_log_line(1, line);
        return exit_code;
    }
    if (!started || code == GPUIPC_USAGE || run->halted) {
        snprintf(line, sizeof(line), "summary: %s", run->where);
        gpuipc_log_line(1, line);
        snprintf(line, sizeof(line), "consumer: %s", consumer);
        gpuipc_log_line(1, line);
        snprintf(line, sizeof(line), "result: %s: no scenario ran: %.400s (exit %d)",
                 gpuipc_exit_word(code == GPUIPC_USAGE ? code : exit_code > 128 ? exit_code
                                                                 : GPUIPC_FAIL),
                 code == GPUIPC_USAGE ? "the producer refused its options" : run->lost,
                 exit_code);
        gpuipc_log_line(1, line);
        return exit_code;
    }
    /* One wall time for the cells' line and the result line. */
    wall_ns = gpuipc_clock_ns() - t0;
    cells_note(run, wall_ns, cells, sizeof(cells));
    notes[nn++] = cells;
    if (gpuipc_stop_signal() == 0)
        notes[nn++] = accounting;
    if (run->last[0] != '\0')
        notes[nn++] = run->last;
    if (node_note(run, node, sizeof(node)))
        notes[nn++] = node;
    gpuipc_report_summary(1, run->where, run->cells.results, run->cells.n, notes, consumer,
                          exit_code, wall_ns);
    return exit_code;
}
