/* SPDX-License-Identifier: Apache-2.0 */
/* producer_proc.c: the producer's run, in every mode, from its set-up to
 * its scenarios: the run set up for the selection, HELLO, the probes of
 * both sides (skips for a GPU's compute mode, WSL2 or no GPU), --pairs and
 * several GPUs, the scenarios (rounds.c) or --bench, and --require. Its
 * GPUs are opened in producer_devices.c, its session ended in
 * producer_end.c and its outcome said in producer_summary.c. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "app/cuda/bench_mode.h"
#include "app/cuda/deadline.h"
#include "app/cuda/process.h"
#include "app/cuda/producer_devices.h"
#include "app/cuda/producer_run.h"
#include "app/cuda/scenario_ask.h"
#include "core/log.h"
#include "core/step.h"
#include "core/stop.h"
#include "core/watch.h"
#include "gpu/gpu.h"
#include "session/report.h"
#include "session/role.h"

/* Asks the consumer about scenario i (ask), which this side can run;
 * records its skip or failure in r. */
static void probe_consumer(gpuipc_producer_run *run, const gpuipc_scenario_ask *ask,
                           gpuipc_result *r)
{
    const gpuipc_mech *m = ask->mech;
    gpuipc_status st;
    gpuipc_err err;

    if (gpuipc_producer_probe(&run->env, gpuipc_app_wire_for(run, m), ask, &st, &err) < 0) {
        gpuipc_result_set(r, gpuipc_stop_signal() != 0 ? GPUIPC_STOPPED : GPUIPC_FAIL,
                          GPUIPC_ROLE_PRODUCER, GPUIPC_STEP_PROBE, &err, "%s", err.msg);
        gpuipc_log_step(&run->env.log, GPUIPC_LOG_QUIET, m->name, GPUIPC_STEP_PROBE,
                        GPUIPC_LOG_NO_TIME, "%s %s", gpuipc_stop_fail_word(), err.msg);
    } else if (st.code != GPUIPC_PASS) {
        gpuipc_result_of_status(r, st.code, GPUIPC_ROLE_CONSUMER, &st);
    }
}

/* Whether scenario i's GPU (or either GPU of a pair) is in a compute mode
 * that keeps two processes apart: then r is a skip with that cause, and 1
 * is returned; the driver is not asked (the consumer never opens it). */
static int mode_blocks(gpuipc_producer_run *run, size_t i, gpuipc_result *r)
{
    int a = run->cells.pair[i][0] >= 0 ? run->cells.pair[i][0] : run->o->device;
    int b = run->cells.pair[i][0] >= 0 ? run->cells.pair[i][1] : a;
    gpuipc_cause why;
    int who = -1;

    if (gpuipc_app_modes_block(&run->cmodes, a, &why))
        who = a;
    else if (b != a && gpuipc_app_modes_block(&run->cmodes, b, &why))
        who = b;
    if (who < 0)
        return 0;
    gpuipc_result_set(r, GPUIPC_SKIP, GPUIPC_ROLE_PRODUCER, GPUIPC_STEP_PROBE, NULL,
                      "probe: not run: two processes cannot both hold a context on GPU %d "
                      "(its compute mode, or MPS; below)", who);
    r->cause = why;
    return 1;
}

/* A cell that maps GPU a's memory for GPU b where no peer path joins them
 * (run/plan.h's rule: the driver says no and NVML shows no NVLink): a skip
 * with that cause, the topology's, not a fault. Host memory needs none. */
static int peer_blocks(gpuipc_producer_run *run, size_t i, gpuipc_result *r)
{
    int a = run->cells.pair[i][0], b = run->cells.pair[i][1];
    gpuipc_plan_peer f;
    gpuipc_cause why;

    if (a < 0 || a == b || run->cells.sel[i]->memory != GPUIPC_MECH_DEVICE)
        return 0;
    gpuipc_gpu_peer_facts(a, b, &f);
    if (!gpuipc_plan_no_peer_path(a, b, &f, &why))
        return 0;
    gpuipc_result_set(r, GPUIPC_SKIP, GPUIPC_ROLE_PRODUCER, GPUIPC_STEP_PROBE, NULL,
                      "probe: not run: no peer path from GPU %d to GPU %d's memory (below)", b,
                      a);
    r->cause = why;
    return 1;
}

/* WSL2 on either side: the driver there shares no GPU memory between
 * processes, so each GPU scenario is a skip with that one cause (said once
 * in the summary), not a list of failures; --require turns it into one. */
static int wsl_blocks(gpuipc_producer_run *run, gpuipc_result *r)
{
    const gpuipc_facts *p = &run->env.facts;
    const gpuipc_facts *k = run->env.have_peer_facts ? &run->env.peer_facts : NULL;
    const char *who;

    if ((p->flags & GPUIPC_FACT_WSL) && k != NULL && (k->flags & GPUIPC_FACT_WSL))
        who = "both processes run";
    else if (p->flags & GPUIPC_FACT_WSL)
        who = "the producer runs";
    else if (k != NULL && (k->flags & GPUIPC_FACT_WSL))
        who = "the consumer runs";
    else
        return 0;
    gpuipc_result_set(r, GPUIPC_SKIP, GPUIPC_ROLE_PRODUCER, GPUIPC_STEP_PROBE, NULL,
                      "probe: not run: %s under WSL2 (below)", who);
    gpuipc_cause_what(&r->cause,
                      "%s under WSL2 (kernel %s), whose GPU "
                      "driver shares no GPU memory between processes (no CUDA IPC: legacy, VMM and "
                      "memory-pool handles fail there)",
                      who, (p->flags & GPUIPC_FACT_WSL) ? p->kernel : k->kernel);
    gpuipc_cause_fix(&r->cause, "run on native Linux to test sharing; "
                                "within one process WSL2 works");
    return 1;
}

/* Decides, before any scenario runs, which can: both sides probe each
 * mechanism. One that needs CUDA where there is none, or that either side
 * cannot run here, is skipped with the reason (a failure if --require names
 * it); a probe that itself fails is a failure. Only the rest become Check
 * tests, so that no skip is ever counted as a passed test. */
static void probe_all(gpuipc_producer_run *run, int cuda, const gpuipc_err *cuda_why)
{
    size_t i;

    for (i = 0; i < run->cells.n; i++) {
        const gpuipc_mech *m = run->cells.sel[i];
        gpuipc_result *r = &run->cells.results[i];
        gpuipc_scenario_ask ask;
        gpuipc_app_devices dev;
        gpuipc_scenario sc;
        gpuipc_err why;
        int rc;

        r->status = -1;
        if (gpuipc_stop_signal() != 0) {
            snprintf(r->reason, sizeof(r->reason), "not run: the run was stopped before it");
        } else if (m->needs_cuda && cuda == 0 && mode_blocks(run, i, r)) {
            /* Skipped, its cause said: the GPU's compute mode. */
        } else if (m->needs_cuda && cuda == 0 && wsl_blocks(run, r)) {
            /* Skipped, its cause said: WSL2. */
        } else if (m->needs_cuda && cuda == 0 && peer_blocks(run, i, r)) {
            /* Skipped, its cause said: no peer path between its GPUs. */
        } else if (m->needs_cuda && cuda != 0) {
            gpuipc_result_set(r, cuda == 1 ? GPUIPC_SKIP : GPUIPC_FAIL, GPUIPC_ROLE_PRODUCER,
                              GPUIPC_STEP_PROBE, cuda_why, "%s", cuda_why->msg);
        } else if (gpuipc_app_scenario_ask(run, i, &ask, &dev, &why) < 0) {
            gpuipc_result_set(r, GPUIPC_FAIL, GPUIPC_ROLE_PRODUCER, GPUIPC_STEP_PROBE, &why,
                              "%s", why.msg);
        } else {
            /* This side's probe is a scenario of its own on those devices. */
            gpuipc_role_start(&sc, &run->env, gpuipc_app_wire_for(run, m), m, m->name);
            memcpy(sc.uuid, dev.uuid, GPUIPC_UUID_LEN);
            memcpy(sc.peer_uuid, dev.peer_uuid, GPUIPC_UUID_LEN);
            if ((rc = m->probe(&sc, &why)) < 0)
                gpuipc_result_set(r, rc == -ENOTSUP ? GPUIPC_SKIP : GPUIPC_FAIL,
                                  GPUIPC_ROLE_PRODUCER, GPUIPC_STEP_PROBE, &why,
                                  "probe: %.500s", why.msg);
            else
                probe_consumer(run, &ask, r);
        }
    }
}

/* Sets run up for the selection, before any connection. */
void gpuipc_app_producer_init(gpuipc_producer_run *run, const gpuipc_options *o,
                              const gpuipc_mech *const *sel, size_t nsel,
                              const gpuipc_mech *const *req, size_t nreq,
                              const gpuipc_inject *inject, uint64_t t0)
{
    size_t i;

    memset(run, 0, sizeof(*run));
    gpuipc_watch_role(GPUIPC_ROLE_PRODUCER);
    gpuipc_app_env_init(&run->env, GPUIPC_ROLE_PRODUCER, o, inject, t0);
    /* --bench's output is its tables: the scenarios' step log stays quiet. */
    if (o->bench && run->env.log.level < GPUIPC_LOG_VERBOSE)
        run->env.log.level = GPUIPC_LOG_QUIET;
    run->env.gpu_bytes = gpuipc_gpu_process_bytes;
    run->o = o;
    run->child = -1;
    run->child2 = -1;
    gpuipc_cellset_init(&run->cells, GPUIPC_STAGE_COUNT);
    if (gpuipc_cellset_size(&run->cells, nsel) < 0) {
        run->halted = 1; /* said at the start of the session */
        snprintf(run->lost, sizeof(run->lost), "out of memory for %zu scenarios", nsel);
        return;
    }
    for (i = 0; i < nsel; i++) {
        gpuipc_cellset_name(&run->cells, i, sel[i], -1, -1, run->o->device);
        if (sel[i]->needs_cuda || o->bench) /* --bench always describes a GPU */
            run->hello |= GPUIPC_HELLO_NEEDS_CUDA;
        if (sel[i]->destructive)
            run->destructive = sel[i]->name;
    }
    gpuipc_cellset_publish(&run->cells, nsel);
    run->nreq = nreq;
    memcpy(run->req, req, nreq * sizeof(run->req[0]));
    snprintf(run->where, sizeof(run->where), "host memory only, no GPU scenario selected");
}

/* HELLO with the consumer (the sacrificial one first: the main one's pid is
 * the one that stays in env->peer_pid, for the pidfd mechanism). Returns 0
 * or a negative errno with err. */
int gpuipc_app_producer_hello(gpuipc_producer_run *run, gpuipc_err *err)
{
    int peer = 0, rc;

    if ((run->w2 != NULL && (rc = gpuipc_producer_hello(&run->env, run->w2, run->hello, &peer,
                                                        err)) < 0) ||
        (rc = gpuipc_producer_hello(&run->env, run->w, run->hello, &peer, err)) < 0)
        return rc;
    run->started = 1;
    gpuipc_log_step(&run->env.log, GPUIPC_LOG_VERBOSE, NULL, GPUIPC_STEP_HELLO,
                    GPUIPC_LOG_NO_TIME, "producer pid %d, consumer pid %d, protocol %d",
                    (int)getpid(), peer, GPUIPC_WIRE_VERSION);
    return 0;
}

/* --require: a required mechanism fails the run unless every scenario of it
 * passed, whatever kept one from passing: a skip on either side, or
 * CK_RUN_SUITE and CK_RUN_CASE leaving it out of the Check run (it then
 * vanished from the counts). */
static void hold_required(gpuipc_producer_run *run)
{
    size_t i;

    for (i = 0; i < run->cells.n; i++) {
        gpuipc_result *r = &run->cells.results[i];
        gpuipc_status was = r->failure;
        char reason[GPUIPC_ERR_LEN];

        if (r->status == GPUIPC_PASS || r->status == GPUIPC_FAIL ||
            gpuipc_mech_find(run->req, run->nreq, run->cells.sel[i]->name) == NULL)
            continue;
        snprintf(reason, sizeof(reason), "%s", r->status == GPUIPC_SKIP ? r->reason
                 : "not selected by CK_RUN_SUITE/CK_RUN_CASE, so it never ran");
        gpuipc_result_set(r, GPUIPC_FAIL, r->failed_side ? r->failed_side : GPUIPC_ROLE_PRODUCER,
                          was.step, NULL, "required by --require, but %s: %.420s",
                          r->status == GPUIPC_SKIP ? "skipped" : "not run", reason);
        r->failure.errnum = was.errnum;
        r->failure.cu = was.cu;
        memcpy(r->failure.call, was.call, sizeof(r->failure.call));
    }
}

/* Once HELLO went both ways: the GPU (unless opened before), the pairs,
 * the probes and the scenarios or the bench. Returns the verdict so far. */
int gpuipc_app_producer_scenarios(gpuipc_producer_run *run)
{
    int code;

    if (!run->opened && (code = gpuipc_app_producer_open(run)) == GPUIPC_USAGE)
        return code;
    if (run->halted)
        return GPUIPC_FAIL;
    if (run->cuda == 0 && run->o->pairs != NULL && (code = gpuipc_app_expand_pairs(run)) != 0)
        return code;
    if (run->cuda == 0 && run->ngpus > 1 && gpuipc_app_expand_devices(run) < 0) {
        snprintf(run->lost, sizeof(run->lost), "out of memory for the scenarios of %zu GPUs",
                 run->ngpus);
        return GPUIPC_FAIL;
    }
    probe_all(run, run->cuda, &run->cuda_why);
    /* The deadline's document, now with the peer's facts and the GPU. */
    gpuipc_app_deadline_document(run);
    if (run->o->bench)
        return gpuipc_app_run_bench(run, run->cuda, &run->cuda_why);
    code = gpuipc_app_run_rounds(run);
    hold_required(run);
    if (code == GPUIPC_PASS)
        code = gpuipc_report_exit_code(run->cells.results, run->cells.n, 1);
    return code;
}
