/* SPDX-License-Identifier: Apache-2.0 */
/* producer_summary.c: how the producer says its outcome: the session ended
 * (producer_end.c), then one line for exit 77, the reason where no scenario
 * ran, or the summary with its notes (the leak accounting, the producer's
 * last check, this node's settings); --brief's notes; --json's document. */
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
#include "run/outputs.h"
#include "run/result_doc.h"
#include "session/report.h"

/* Whether every scenario was skipped with the same reason and cause. */
static int one_cause(const gpuipc_producer_run *run)
{
    size_t i;

    if (run->cells.n < 2 || run->cells.results[0].cause.what[0] == '\0')
        return 0;
    for (i = 1; i < run->cells.n; i++)
        if (run->cells.results[i].status != run->cells.results[0].status ||
            strcmp(run->cells.results[i].reason, run->cells.results[0].reason) != 0 ||
            !gpuipc_cause_same(&run->cells.results[i].cause, &run->cells.results[0].cause))
            return 0;
    return 1;
}

/* The one-line reason for exit 77: the shared reason if CUDA is missing,
 * else each mechanism's. Where the check of the FDs at exit turned the
 * status into exit_code 1, the line says so. */
void gpuipc_app_print_skip_line(const gpuipc_producer_run *run, int cuda,
                                const gpuipc_err *cuda_why, int exit_code)
{
    char line[2048], cause[GPUIPC_ERR_LEN];
    size_t i, used;

    used = (size_t)snprintf(line, sizeof(line), "gpuipc_test: %s%s: ", gpuipc_exit_word(exit_code),
                            exit_code == GPUIPC_SKIP ? ""
                            : " (an FD left open, said above) after nothing could run");

    if (cuda == 1) {
        if (run->cells.n > 0)
            gpuipc_cause_line(&run->cells.results[0].cause, cause, sizeof(cause));
        else
            cause[0] = '\0';
        snprintf(line + used, sizeof(line) - used, "%s%s%s%s", cuda_why->msg,
                 cause[0] ? " (" : "", cause, cause[0] ? ")" : "");
    } else if (one_cause(run)) {
        /* One reason and cause for all (WSL2, a compute mode): said once. */
        for (i = 0; i < run->cells.n && used < sizeof(line); i++)
            used += (size_t)snprintf(line + used, sizeof(line) - used, "%s%s", i ? ", " : "",
                                     run->cells.results[i].mech);
        if (used < sizeof(line))
            snprintf(line + used, sizeof(line) - used, ": %s (%s)", run->cells.results[0].reason,
                     gpuipc_cause_line(&run->cells.results[0].cause, cause, sizeof(cause)));
    } else {
        /* Each reason with the cause the summary would name under it. */
        for (i = 0; i < run->cells.n && used < sizeof(line); i++) {
            const gpuipc_result *r = &run->cells.results[i];

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
    snprintf(buf, len, "accounting: per process, both sides: FDs, driver objects, resident "
             "shared memory; GPU memory by NVML: producer %s%.200s%s, consumer %s",
             mine ? "measured" : "not attributable (", mine ? "" : why.msg, mine ? "" : ")",
             !gpuipc_app_consumer_figures(run, &theirs) ? "not reported"
             : theirs.gpu != GPUIPC_USAGE_UNKNOWN ? "measured"
                                                   : "not attributable (its log says why)");
}

static int finish(gpuipc_producer_run *run, int code, uint64_t t0, char *consumer, size_t len);

/* Less /dev/shm than this is named in the summary (Docker's default is 64
 * MiB, which NCCL's shared-memory transport outgrows on a node of GPUs). */
#define GPUIPC_SHM_NOTE_BELOW (256ull << 20)

/* --brief's notes, from the results as data: the first failure, as "<side>
 * <scenario> <step>: <reason>" (the reason as that side recorded it, its
 * leading step name dropped), or why no scenario ran; and the first cause,
 * the failure's where it has one, else the first that any result has. */
static void note_outcome(const gpuipc_producer_run *run, int code, const char *consumer)
{
    const gpuipc_result *failed = NULL, *explained = NULL;
    char first[GPUIPC_ERR_LEN + 160], cause[GPUIPC_ERR_LEN];
    size_t i;

    for (i = 0; i < run->cells.n; i++) {
        const gpuipc_result *r = &run->cells.results[i];

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
    } else if (!run->started || run->halted) {
        snprintf(first, sizeof(first), "%.500s", run->lost);
    } else if (code == GPUIPC_FAIL) {
        /* No scenario failed: the end of the session did (the producer's
         * last check, or how the consumer ended). */
        if (run->last[0] != '\0')
            snprintf(first, sizeof(first), "%.500s", run->last);
        else
            snprintf(first, sizeof(first), "consumer: %.500s", consumer);
    }
    gpuipc_brief_note(first, explained != NULL ? gpuipc_cause_line(&explained->cause, cause,
                                                                   sizeof(cause))
                                               : NULL);
}

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
    char accounting[512], line[GPUIPC_ERR_LEN + 256], node[1536];
    const char *notes[4] = {NULL, NULL, NULL, NULL};
    size_t nn = 0;
    int started = run->started, exit_code;

    if (started && gpuipc_stop_signal() == 0)
        accounting_note(run, accounting, sizeof(accounting));
    code = gpuipc_app_producer_end(run, code, consumer, len);
    note_outcome(run, code, consumer);
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
        gpuipc_app_print_skip_line(run, run->cuda, &run->cuda_why, exit_code);
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
    if (gpuipc_stop_signal() == 0)
        notes[nn++] = accounting;
    if (run->last[0] != '\0')
        notes[nn++] = run->last;
    if (node_note(run, node, sizeof(node)))
        notes[nn++] = node;
    gpuipc_report_summary(1, run->where, run->cells.results, run->cells.n, notes, consumer,
                          exit_code, gpuipc_clock_ns() - t0);
    return exit_code;
}
