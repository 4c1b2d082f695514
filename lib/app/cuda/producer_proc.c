/* SPDX-License-Identifier: Apache-2.0 */
/* producer_proc.c: the producer's run, in every mode: setting it up, the
 * GPU and --size before a consumer takes part, HELLO, the probes, --pairs,
 * the end of the session (the last checks, BYE and BYE_ACK, the consumers'
 * exits) and the summary. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "app/brief.h"
#include "app/cuda/app.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/names.h"
#include "core/proc.h"
#include "core/status.h"
#include "core/step.h"
#include "core/stop.h"
#include "core/units.h"
#include "core/watch.h"
#include "app/cuda/result_doc.h"
#include "gpu/cudrv.h"
#include "gpu/gpu.h"
#include "run/plan.h"
#include "session/diagnose.h"
#include "session/report.h"
#include "session/role.h"

/* A destructive mechanism talks to the sacrificial consumer. */
gpuipc_wire *gpuipc_app_wire_for(const gpuipc_producer_run *run, const gpuipc_mech *m)
{
    return m->destructive ? run->w2 : run->w;
}

/* Waits for consumer pid to exit within the deadline, closing *w first if
 * it is broken (so that a live consumer sees EOF, with only a short grace).
 * Stores its wait status in *status and says how it ended in desc. Returns
 * 1 if it exited by itself, 0 if it had to be killed or the wait failed. */
static int reap(gpuipc_producer_run *run, gpuipc_wire **w, pid_t pid, int *status, char *desc,
                size_t len)
{
    uint64_t wait_ns = run->o->timeout_ns;
    gpuipc_err err;
    int rc;

    *status = -1;
    if (*w == NULL || gpuipc_wire_broken(*w) != NULL) {
        gpuipc_wire_close(*w);
        *w = NULL;
        if (wait_ns > GPUIPC_APP_END_GRACE_NS)
            wait_ns = GPUIPC_APP_END_GRACE_NS;
    }
    rc = gpuipc_proc_wait(pid, gpuipc_clock_deadline(wait_ns), status, &err);
    gpuipc_wire_close(*w);
    *w = NULL;
    if (rc >= 0) /* reaped: its number may be another process's from now */
        gpuipc_app_forget_peer(pid);
    if (rc < 0) {
        snprintf(desc, len, "%s", err.msg);
        return 0;
    }
    gpuipc_proc_describe(*status, desc, len);
    if (rc >= 1) {
        size_t used = strlen(desc);

        snprintf(desc + used, len - used, " (by the producer: it had not exited in time%s)",
                 rc == 2 ? "; it was stopped: SIGSTOP, job control or a debugger" : "");
        return 0;
    }
    return 1;
}

/* env->reap_peer: a destructive scenario's consumer exits after END_ACK. */
int gpuipc_app_reap_sacrificial(gpuipc_env *env, gpuipc_err *err)
{
    /* The run's env is its first member: the run is where the env is. */
    gpuipc_producer_run *run = (gpuipc_producer_run *)(void *)env;
    int status;

    if (run == NULL || run->child2 <= 0 || run->child2_done)
        return gpuipc_err_set(err, -ECHILD, "no sacrificial consumer is left to wait for");
    run->child2_ok = reap(run, &run->w2, run->child2, &status, run->child2_desc,
                          sizeof(run->child2_desc)) &&
                     WIFEXITED(status) && WEXITSTATUS(status) == 0;
    run->child2_done = 1;
    gpuipc_log_step(&env->log, GPUIPC_LOG_NORMAL, run->destructive, GPUIPC_STEP_END_ACK,
                    GPUIPC_LOG_NO_TIME, "sacrificial consumer %s", run->child2_desc);
    if (!run->child2_ok)
        return gpuipc_err_set(err, -ECHILD, "%s", run->child2_desc);
    return 0;
}

int gpuipc_app_scenario_ask(gpuipc_producer_run *run, size_t i, gpuipc_scenario_ask *ask,
                            gpuipc_app_devices *dev, gpuipc_err *err)
{
    int rc = 0;

    memset(ask, 0, sizeof(*ask));
    memset(dev, 0, sizeof(*dev));
    ask->mech = run->sel[i];
    ask->size = run->o->size;
    ask->index = (unsigned)i;
    ask->chunks = run->o->chunks;
    ask->uuid = dev->uuid;
    ask->peer_uuid = dev->peer_uuid;
    if (run->pair[i][0] < 0) {
        memcpy(dev->uuid, run->uuid, GPUIPC_UUID_LEN);
        /* --ranks: the consumer rank's GPU, where it holds another. */
        if (memcmp(run->peer_uuid, run->uuid, GPUIPC_UUID_LEN) != 0)
            memcpy(dev->peer_uuid, run->peer_uuid, GPUIPC_UUID_LEN);
        return 0;
    }
    if ((rc = gpuipc_gpu_point(&run->env, run->pair[i][0], run->pair[i][1], dev->uuid,
                               dev->peer_uuid, err)) < 0) {
        if (run->pair[i][0] == run->pair[i][1])
            gpuipc_err_prefix(err, "GPU %d", run->pair[i][0]);
        else
            gpuipc_err_prefix(err, "GPU pair %d->%d", run->pair[i][0], run->pair[i][1]);
    }
    return rc;
}

void gpuipc_app_judge_pair(gpuipc_producer_run *run, size_t i)
{
    gpuipc_result *r = &run->results[i];
    double rd, wr, min = run->o->min_gbps;
    char link[1024], rs[32], ws[32];
    int a = run->pair[i][0], b = run->pair[i][1];

    if (a < 0 || a == b || r->ns == 0) /* within one GPU: no link */
        return;
    rd = r->forward.words > 0 ? gpuipc_units_gbps(r->size, r->forward.ns) : 0;
    wr = r->consumer_wrote.words > 0 ? gpuipc_units_gbps(r->size, r->consumer_wrote.ns) : 0;
    snprintf(rs, sizeof(rs), rd > 0 ? "%.1f GB/s" : "not measured", rd);
    snprintf(ws, sizeof(ws), wr > 0 ? "%.1f GB/s" : "not measured", wr);
    gpuipc_gpu_link_describe(a, b, link, sizeof(link));
    snprintf(r->detail, sizeof(r->detail), "across the link, GPU %d read %s from GPU %d and "
             "wrote %s to it; link: %.360s", b, rs, a, ws, link);
    if (min <= 0 || r->status != GPUIPC_PASS)
        return;
    if (rd <= 0 || wr <= 0 || rd < min || wr < min) {
        gpuipc_err what;

        /* As data: the judgement that failed is --min-gbps's. */
        gpuipc_err_clear(&what);
        gpuipc_err_what(&what, GPUIPC_DIAG_MIN_GBPS, 0, 0);
        gpuipc_result_set(r, GPUIPC_FAIL, GPUIPC_ROLE_PRODUCER, GPUIPC_STEP_CHECK, &what,
                          "GPU pair %d->%d: %s %s across the link, below --min-gbps %g", a, b,
                          rd <= 0 || (wr > 0 && rd <= wr) ? "read" : "wrote",
                          rd <= 0 || (wr > 0 && rd <= wr) ? rs : ws, min);
    }
}

/* The first of the run's GPUs (o->device alone, or run->gpus) that two
 * processes can share, or -1 with the first one's cause in why where none
 * can be (run->kept_apart set). */
static int first_usable(gpuipc_producer_run *run, gpuipc_err *why)
{
    char cause[GPUIPC_ERR_LEN], first_cause[GPUIPC_ERR_LEN] = "";
    size_t i, n = run->ngpus > 0 ? run->ngpus : 1;

    for (i = 0; i < n; i++) {
        int g = run->ngpus > 0 ? run->gpus[i] : run->o->device;

        if (!gpuipc_app_modes_block(&run->cmodes, g, cause, sizeof(cause)))
            return g;
        if (first_cause[0] == '\0')
            snprintf(first_cause, sizeof(first_cause), "%s", cause);
    }
    run->kept_apart = 1;
    gpuipc_err_set(why, -EBUSY, "no GPU here that two processes can share: %.900s",
                   first_cause);
    return -1;
}

/* Opens the run's GPUs that two processes can share (the others are
 * skipped, with their mode's cause), all at once. */
static void open_gpus(gpuipc_producer_run *run)
{
    int *open = calloc(run->ngpus, sizeof(*open));
    char why[GPUIPC_ERR_LEN];
    size_t i, k = 0;
    gpuipc_err err;
    uint64_t t = gpuipc_clock_ns();

    if (open == NULL)
        return;
    for (i = 0; i < run->ngpus; i++)
        if (!gpuipc_app_modes_block(&run->cmodes, run->gpus[i], why, sizeof(why)))
            open[k++] = run->gpus[i];
    if (gpuipc_gpu_open_all(open, k, &err) < 0)
        gpuipc_log_step(&run->env.log, GPUIPC_LOG_VERBOSE, NULL, GPUIPC_STEP_NONE,
                        GPUIPC_LOG_NO_TIME, "opening the GPUs: %s (said again by the scenarios "
                        "of that GPU)", err.msg);
    gpuipc_log_step(&run->env.log, GPUIPC_LOG_VERBOSE, NULL, GPUIPC_STEP_NONE,
                    gpuipc_clock_ns() - t, "%zu GPUs opened at once", k);
    free(open);
}

/* run->where for several GPUs: how many, which, and the driver. */
static void where_gpus(gpuipc_producer_run *run)
{
    char list[96] = "";
    size_t i;

    for (i = 0; i < run->ngpus && strlen(list) + 16 < sizeof(list); i++)
        snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%d", i ? ", " : "",
                 run->gpus[i]);
    if (i < run->ngpus)
        snprintf(list + strlen(list), sizeof(list) - strlen(list), ", ...");
    snprintf(run->where, sizeof(run->where), "%zu GPUs (%s), each on its own and in a ring "
             "across them (GPU i exports to GPU i+1, the last to the first); CUDA driver %d.%d",
             run->ngpus, list, gpuipc_cu.driver_version / 1000,
             gpuipc_cu.driver_version % 1000 / 10);
}

/* The GPUs the scenarios run on, of the n there are (run->gpus, ngpus):
 * --device's list, or every GPU for the forked one-shot run; none kept
 * where the run has one GPU by o->device. Returns 0, or GPUIPC_USAGE after
 * saying why. */
static int resolve_devices(gpuipc_producer_run *run, int n)
{
    const char *spec = gpuipc_options_devices(run->o);
    gpuipc_err err;
    size_t k;
    int *ids;

    if (spec == NULL || n <= 0)
        return 0;
    if ((ids = calloc((size_t)n, sizeof(*ids))) == NULL) {
        gpuipc_log_say("--device: out of memory");
        return GPUIPC_USAGE;
    }
    if (gpuipc_plan_devices(spec, n, ids, (size_t)n, &k, &err) < 0) {
        gpuipc_log_say("%s", err.msg);
        free(ids);
        return GPUIPC_USAGE;
    }
    free(run->gpus);
    run->gpus = ids;
    run->ngpus = k;
    return 0;
}

/* Opens the GPU for the CUDA mechanisms. Returns 0 with the GPU open, 1 if
 * there is no driver or no GPU (why says which), GPUIPC_USAGE for a bad
 * --device or --size (reported here), or -1 for a driver that failed. */
static int producer_open_gpu(gpuipc_producer_run *run, gpuipc_err *why)
{
    const gpuipc_options *o = run->o;
    char a[32], b[32], uuid[48];
    uint64_t free_b, total, t = gpuipc_clock_ns();
    int rc, n, first;

    rc = gpuipc_gpu_init(why);
    if (rc == -ENOENT || rc == -ENODEV)
        return 1;
    if (rc < 0 || (rc = gpuipc_gpu_count(&n, why)) < 0)
        return -1;
    if ((rc = resolve_devices(run, n)) != 0)
        return rc;
    if (o->device >= n) {
        gpuipc_log_say("--device %d: no such GPU (%d visible: ordinals 0 to %d; "
                "see --list)", o->device, n, n - 1);
        return GPUIPC_USAGE;
    }
    if (gpuipc_app_modes_read(&run->cmodes, n) < 0) {
        gpuipc_err_set(why, -ENOMEM, "reading the GPUs' compute modes: out of memory");
        return -1;
    }
    /* This process's first GPU: the first of the run's that two processes
     * can share; none (every one kept apart by its compute mode, or MPS):
     * nothing can run, and each scenario says why. */
    if ((first = first_usable(run, why)) < 0)
        return 1;
    /* Several GPUs: their contexts start together, on threads of their
     * own; one that fails is reported by its scenarios, not here. */
    if (run->ngpus > 1)
        open_gpus(run);
    if (gpuipc_gpu_uuid_of(first, run->uuid, why) < 0 ||
        gpuipc_gpu_attach_uuid(&run->env, run->uuid, why) < 0)
        return -1;
    if (gpuipc_gpu_mem_info(run->env.gpu, &free_b, &total, why) != CUDA_SUCCESS)
        return -1;
    snprintf(run->where, sizeof(run->where), "GPU %d: %s (%s), CUDA driver %d.%d", o->device,
             gpuipc_gpu_name(run->env.gpu),
             gpuipc_units_format_uuid(run->uuid, uuid, sizeof(uuid)),
             gpuipc_cu.driver_version / 1000, gpuipc_cu.driver_version % 1000 / 10);
    if (run->ngpus > 1)
        where_gpus(run);
    gpuipc_log_step(&run->env.log, GPUIPC_LOG_NORMAL, NULL, GPUIPC_STEP_NONE,
                    gpuipc_clock_ns() - t, "%s; %s free of %s; kernels self-tested",
                    run->where, gpuipc_units_format_size(free_b, a, sizeof(a)),
                    gpuipc_units_format_size(total, b, sizeof(b)));
    gpuipc_log_step(&run->env.log, GPUIPC_LOG_VERBOSE, NULL, GPUIPC_STEP_NONE,
                    GPUIPC_LOG_NO_TIME, "%s", gpuipc_gpu_self_test(run->env.gpu));
    gpuipc_log_step(&run->env.log, GPUIPC_LOG_VERBOSE, NULL, GPUIPC_STEP_NONE,
                    GPUIPC_LOG_NO_TIME, "GPU %d opened: %s", o->device,
                    gpuipc_gpu_open_times(run->env.gpu));
    gpuipc_log_step(&run->env.log, GPUIPC_LOG_VERBOSE, NULL, GPUIPC_STEP_NONE,
                    GPUIPC_LOG_NO_TIME, "%s=%s (%s)", GPUIPC_GPU_CONNECTIONS_ENV,
                    getenv(GPUIPC_GPU_CONNECTIONS_ENV) != NULL
                        ? getenv(GPUIPC_GPU_CONNECTIONS_ENV) : "(unset)",
                    gpuipc_gpu_connections_set ? "set by gpuipc_test: one hardware queue per "
                    "context, which starts and ends faster; set it to keep another value"
                    : "as set before gpuipc_test started");
    gpuipc_nvml_gpu_modes(run->uuid, &run->modes, why);
    gpuipc_log_step(&run->env.log, GPUIPC_LOG_VERBOSE, NULL, GPUIPC_STEP_NONE,
                    GPUIPC_LOG_NO_TIME, "GPU %d's modes (NVML): %s", o->device, run->modes.text);
    if (o->size > free_b) {
        gpuipc_log_say("--size %s: larger than the free memory of GPU %d (%s "
                "free of %s)", gpuipc_units_format_size(o->size, uuid, sizeof(uuid)),
                o->device, a, b);
        return GPUIPC_USAGE;
    }
    return 0;
}

/* --expect-gpus N: fewer than N GPUs reported by the driver to this process
 * (after CUDA_VISIBLE_DEVICES), no driver or no device is a failure: a node
 * that lost a GPU must fail its health check, not skip it. Returns 0, or -1
 * with run halted and the reason in run->lost (and cuda_why). */
static int expect_gpus(gpuipc_producer_run *run)
{
    const char *cvd = getenv("CUDA_VISIBLE_DEVICES");
    int n = 0, want = run->o->expect_gpus;
    char seen[96];
    gpuipc_err why;

    gpuipc_err_clear(&why);
    if (gpuipc_gpu_init(&why) == 0 && gpuipc_gpu_count(&n, &why) == 0 && n >= want)
        return 0;
    snprintf(seen, sizeof(seen), "%s%s%s", cvd ? " (CUDA_VISIBLE_DEVICES=" : "",
             cvd ? cvd : "", cvd ? ")" : "");
    if (n == 0 && why.msg[0] != '\0')
        snprintf(run->lost, sizeof(run->lost), "--expect-gpus %d: no GPU here%s: %.380s", want,
                 seen, why.msg);
    else
        snprintf(run->lost, sizeof(run->lost), "--expect-gpus %d: the driver shows this "
                 "process %d GPU%s%s; a GPU that fell off the bus (Xid 79 in dmesg), one the "
                 "driver lost, or one hidden by CUDA_VISIBLE_DEVICES or the container; fix: "
                 "nvidia-smi -L, dmesg, and the job's or container's GPU list", want, n,
                 n == 1 ? "" : "s", seen);
    gpuipc_err_set(&run->cuda_why, -ENODEV, "%s", run->lost);
    run->halted = 1;
    run->cuda = -1;
    return -1;
}

/* What the producer decides before a consumer takes part: the GPU, if a
 * scenario needs one, and whether --size fits. Returns 0, GPUIPC_USAGE (said
 * on stderr), or, where every selected scenario needs the GPU that cannot
 * be had, GPUIPC_SKIP (no driver or GPU) or GPUIPC_FAIL (the driver failed),
 * with the reason in run->cuda_why; otherwise such scenarios are skipped
 * later, one by one. */
int gpuipc_app_producer_open(gpuipc_producer_run *run)
{
    const gpuipc_options *o = run->o;
    size_t i, need_cuda = 0;

    run->opened = 1;
    for (i = 0; i < run->nsel; i++)
        need_cuda += run->sel[i]->needs_cuda;
    if (o->expect_gpus > 0 && expect_gpus(run) < 0)
        return GPUIPC_FAIL;
    if (run->hello & GPUIPC_HELLO_NEEDS_CUDA) {
        run->cuda = producer_open_gpu(run, &run->cuda_why);
        if (run->cuda == GPUIPC_USAGE)
            return GPUIPC_USAGE;
        if (run->cuda != 0) {
            snprintf(run->where, sizeof(run->where), "GPU %d not opened (%s)", o->device,
                     run->kept_apart ? "no GPU two processes can share: its compute mode, or "
                     "MPS" : run->cuda == 1 ? "no driver or no device" : "the driver failed");
            /* Nothing can run here: a skip, unless --require asked for one
             * of them, whose skip is a failure. */
            if (need_cuda == run->nsel && run->cuda == 1 && run->nreq > 0)
                gpuipc_err_prefix(&run->cuda_why, "required by --require, but skipped");
            if (need_cuda == run->nsel)
                return run->cuda == 1 && run->nreq == 0 ? GPUIPC_SKIP : GPUIPC_FAIL;
        }
    }
    for (i = 0; i < run->nsel; i++) {
        uint64_t avail;
        char a[32], b[32];

        if (run->sel[i]->needs_cuda) /* host memory: memfd and its kin */
            continue;
        avail = gpuipc_proc_mem_available();
        if (avail != 0 && o->size > avail) {
            gpuipc_log_say("--size %s: larger than the host's available memory "
                    "for %s (MemAvailable %s)",
                    gpuipc_units_format_size(o->size, a, sizeof(a)), run->sel[i]->name,
                    gpuipc_units_format_size(avail, b, sizeof(b)));
            return GPUIPC_USAGE;
        }
    }
    return 0;
}

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
    int a = run->pair[i][0] >= 0 ? run->pair[i][0] : run->o->device;
    int b = run->pair[i][0] >= 0 ? run->pair[i][1] : a;
    char why[GPUIPC_ERR_LEN];
    int who = -1;

    if (gpuipc_app_modes_block(&run->cmodes, a, why, sizeof(why)))
        who = a;
    else if (b != a && gpuipc_app_modes_block(&run->cmodes, b, why, sizeof(why)))
        who = b;
    if (who < 0)
        return 0;
    gpuipc_result_set(r, GPUIPC_SKIP, GPUIPC_ROLE_PRODUCER, GPUIPC_STEP_PROBE, NULL,
                      "probe: not run: two processes cannot both hold a context on GPU %d "
                      "(its compute mode, or MPS; below)", who);
    snprintf(r->cause, sizeof(r->cause), "%s", why);
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
    snprintf(r->cause, sizeof(r->cause), "cause: %s under WSL2 (kernel %s), whose GPU "
             "driver shares no GPU memory between processes (no CUDA IPC: legacy, VMM and "
             "memory-pool handles fail there); fix: run on native Linux to test sharing; "
             "within one process WSL2 works", who,
             (p->flags & GPUIPC_FACT_WSL) ? p->kernel : k->kernel);
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

    for (i = 0; i < run->nsel; i++) {
        const gpuipc_mech *m = run->sel[i];
        gpuipc_result *r = &run->results[i];
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

/* BYE for the main consumer: the counts of the scenarios of its session
 * (a destructive one ran with the sacrificial consumer, which the main one
 * never saw and could not vouch for), and the run's verdict, except that a
 * session of which nothing passed while the run passed (every scenario but
 * the sacrificial one's skipped) ends for this consumer as a skip. */
static void say_bye(const gpuipc_producer_run *run, int code, gpuipc_msg_bye *bye)
{
    gpuipc_counts c = {0, 0, 0, 0};
    size_t i;

    for (i = 0; i < run->nsel; i++) {
        if (run->sel[i]->destructive)
            continue;
        c.passed += run->results[i].status == GPUIPC_PASS;
        c.failed += run->results[i].status == GPUIPC_FAIL;
        c.skipped += run->results[i].status == GPUIPC_SKIP;
    }
    /* --bench's measurements are scenarios of the session too. */
    c.passed += run->bench_passed;
    c.failed += run->bench_failed;
    memset(bye, 0, sizeof(*bye));
    bye->code = code == GPUIPC_PASS && c.passed == 0 ? GPUIPC_SKIP : code;
    bye->passed = c.passed;
    bye->failed = c.failed;
    bye->skipped = c.skipped;
}

/* The producer's last checks, before its verdict goes out: what it holds
 * against the reference of its scenarios, and for a process that never
 * loaded CUDA, its FDs against the program's start. Returns 1 if they
 * failed, said in run->last. */
static int producer_last_check(gpuipc_producer_run *run)
{
    const int keep[2] = {run->w != NULL ? gpuipc_wire_fd(run->w) : -1,
                         run->w2 != NULL ? gpuipc_wire_fd(run->w2) : -1};
    gpuipc_err e;

    if (gpuipc_session_usage_leaks(&run->env.session, run->env.gpu_bytes,
                                   GPUIPC_ENV_SETTLE_NS, &e) == 0 &&
        gpuipc_app_fds_since_start(keep, &e) == 0) {
        uint64_t ns;
        unsigned n;

        gpuipc_usage_cost(&ns, &n);
        gpuipc_log_step(&run->env.log, GPUIPC_LOG_VERBOSE, NULL, GPUIPC_STEP_BYE,
                        GPUIPC_LOG_NO_TIME, "at the end of the session: nothing held that was "
                        "not held at the first scenario%s; %u counts of what this process "
                        "holds took %.1f ms; peak RSS %.1f MiB", gpuipc_cu.driver_version != 0
                        ? "" : "; the FDs open are the same as at the start, the connections "
                        "aside", n, (double)ns / 1e6, (double)gpuipc_proc_hwm() / 1048576.0);
        return 0;
    }
    snprintf(run->last, sizeof(run->last), "producer, at the end of the session: %.440s",
             e.msg);
    gpuipc_log_step(&run->env.log, GPUIPC_LOG_QUIET, NULL, GPUIPC_STEP_BYE, GPUIPC_LOG_NO_TIME,
                    "%s %s", gpuipc_stop_fail_word(), run->last);
    gpuipc_brief_note(run->last, NULL);
    return 1;
}

/* A failure at the end of the session, by who at step: said in the step
 * log ("FAIL <prefix><text>") and noted for --brief. */
static void end_failed(gpuipc_producer_run *run, const char *who, unsigned step,
                       const char *prefix, const char *text)
{
    char line[GPUIPC_ERR_LEN];

    snprintf(line, sizeof(line), "%s - %s: %.440s", who, gpuipc_step_name(step), text);
    gpuipc_brief_note(line, NULL);
    gpuipc_log_step(&run->env.log, GPUIPC_LOG_QUIET, NULL, step, GPUIPC_LOG_NO_TIME, "%s %s%s",
                    gpuipc_stop_fail_word(), prefix, text);
}

/* Whether a scenario of the run failed on the consumer's side (its row
 * then names the cause). */
static int consumer_failed_one(const gpuipc_producer_run *run)
{
    size_t i;

    for (i = 0; i < run->nsel; i++)
        if (run->results[i].status == GPUIPC_FAIL &&
            run->results[i].failed_side == GPUIPC_ROLE_CONSUMER)
            return 1;
    return 0;
}

/* BYE with the verdict bye and the consumer's BYE_ACK: a failure of its last
 * checks, of its side, or no answer fails *code. What it said goes into
 * said. Returns 1 if it answered. */
static int exchange_bye(gpuipc_producer_run *run, const gpuipc_msg_bye *bye, int *code,
                        char *said, size_t len)
{
    gpuipc_status ack;
    gpuipc_err err;

    if (gpuipc_producer_bye(&run->env, run->w, bye, &ack, &err) < 0) {
        *code = GPUIPC_FAIL;
        snprintf(said, len, "; it did not answer BYE: %s", err.msg);
        end_failed(run, "producer", GPUIPC_STEP_BYE, "", err.msg);
        return 0;
    }
    if (ack.code != GPUIPC_PASS && ack.step == GPUIPC_STEP_BYE_ACK) {
        *code = GPUIPC_FAIL;
        snprintf(said, len, "; its last checks failed: %s", ack.reason);
        end_failed(run, "consumer", GPUIPC_STEP_BYE_ACK, "the consumer: ", ack.reason);
    } else if (ack.code != GPUIPC_PASS && consumer_failed_one(run)) {
        *code = GPUIPC_FAIL;
        snprintf(said, len, "; its side failed (said above)");
    } else if (ack.code != GPUIPC_PASS) {
        /* A failure of its side that no scenario's END_ACK carried: said
         * here, since nothing above says it. */
        *code = GPUIPC_FAIL;
        snprintf(said, len, "; its side failed: %.300s", ack.reason);
        end_failed(run, "consumer", GPUIPC_STEP_BYE_ACK, "the consumer: ", ack.reason);
    } else {
        snprintf(said, len, "; its last checks passed");
    }
    return 1;
}

/* Ends the session with the verdict code: the producer's last checks, BYE
 * with the verdict and the consumer's BYE_ACK with its last checks, then
 * (forked mode) the consumer's exit, which must carry the same status, and
 * the sacrificial consumer's. Returns the session's status: code, or
 * GPUIPC_FAIL if a last check failed, the consumer did not answer, or it
 * ended otherwise than the session did. Describes the consumer's end in
 * desc. */
static int end_session(gpuipc_producer_run *run, int code, char *desc, size_t len)
{
    char said[GPUIPC_ERR_LEN + 64] = "";
    gpuipc_msg_bye bye;
    int answered = 0, status;

    /* The sacrificial consumer's connection (if any) is no longer needed, and
     * the checks below are about this process alone. */
    if (run->w != NULL && run->started && gpuipc_stop_signal() == 0 &&
        (code == GPUIPC_PASS || code == GPUIPC_SKIP)) {
        run->checked = 1;
        if (producer_last_check(run))
            code = GPUIPC_FAIL;
    }
    say_bye(run, code, &bye);
    if (run->w != NULL && run->started && gpuipc_wire_broken(run->w) == NULL &&
        gpuipc_stop_signal() == 0) {
        answered = exchange_bye(run, &bye, &code, said, sizeof(said));
    } else if (run->started && gpuipc_stop_signal() == 0) {
        /* The connection broke before BYE; a scenario has failed for it. */
        code = GPUIPC_FAIL;
    }
    /* This process's context ends while the consumer's does (each takes
     * tens of ms); nothing below needs it. */
    gpuipc_gpu_close_all();
    run->env.gpu = NULL;
    if (run->child > 0) {
        /* The consumer ends with its session's status: what BYE told it, or
         * a failure that came since. */
        int exited = reap(run, &run->w, run->child, &status, desc, len);
        int expect = code != GPUIPC_FAIL ? bye.code : code;

        if (gpuipc_stop_signal() == 0 && (!exited || !WIFEXITED(status) ||
                                      WEXITSTATUS(status) != expect)) {
            if (answered && exited && WIFEXITED(status)) {
                size_t used = strlen(desc);

                snprintf(desc + used, len - used, ", but the session's status is %d", expect);
            }
            code = GPUIPC_FAIL;
        }
        if (answered) {
            size_t used = strlen(desc);

            snprintf(desc + used, len - used, "%s", said);
        }
    } else {
        char who[96];

        if (run->env.peer_pid > 0)
            snprintf(who, sizeof(who), "pid %d", run->env.peer_pid);
        else if (run->env.have_peer_facts)
            snprintf(who, sizeof(who), "pid %u in its own PID namespace (pid:[%llu])",
                     run->env.peer_facts.pid,
                     (unsigned long long)run->env.peer_facts.ns[GPUIPC_NS_PID]);
        else
            snprintf(who, sizeof(who), "a consumer that never said HELLO");
        if (run->peer_label != NULL)
            snprintf(desc, len, "%.200s, %s%.300s", run->peer_label,
                     !run->started ? "never said HELLO" : answered ? "answered BYE"
                     : "connection lost", said);
        else if (!run->started)
            snprintf(desc, len, "none took part in --serve %s", run->o->serve);
        else
            snprintf(desc, len, "%s, connected to --serve %.200s, %s%.300s", who,
                     run->o->serve, answered ? "answered BYE" : "connection lost", said);
        gpuipc_wire_close(run->w);
        run->w = NULL;
    }
    if (run->child2 > 0 && !run->child2_done) {
        run->child2_ok = reap(run, &run->w2, run->child2, &status, run->child2_desc,
                              sizeof(run->child2_desc)) &&
                         WIFEXITED(status) && WEXITSTATUS(status) == 0;
        run->child2_done = 1;
    }
    if (run->child2 > 0) {
        size_t used = strlen(desc);

        snprintf(desc + used, len - used, "; sacrificial consumer: %s", run->child2_desc);
        if (!run->child2_ok)
            code = GPUIPC_FAIL;
    }
    return code;
}

/* Whether every scenario was skipped with the same reason and cause. */
static int one_cause(const gpuipc_producer_run *run)
{
    size_t i;

    if (run->nsel < 2 || run->results[0].cause[0] == '\0')
        return 0;
    for (i = 1; i < run->nsel; i++)
        if (run->results[i].status != run->results[0].status ||
            strcmp(run->results[i].reason, run->results[0].reason) != 0 ||
            strcmp(run->results[i].cause, run->results[0].cause) != 0)
            return 0;
    return 1;
}

/* The one-line reason for exit 77: the shared reason if CUDA is missing,
 * else each mechanism's. Where the check of the FDs at exit turned the
 * status into exit_code 1, the line says so. */
void gpuipc_app_print_skip_line(const gpuipc_producer_run *run, int cuda,
                                const gpuipc_err *cuda_why, int exit_code)
{
    char line[2048];
    size_t i, used;

    used = (size_t)snprintf(line, sizeof(line), "gpuipc_test: %s%s: ", gpuipc_exit_word(exit_code),
                            exit_code == GPUIPC_SKIP ? ""
                            : " (an FD left open, said above) after nothing could run");

    if (cuda == 1) {
        const char *cause = run->nsel > 0 ? run->results[0].cause : "";

        snprintf(line + used, sizeof(line) - used, "%s%s%s%s", cuda_why->msg,
                 cause[0] ? " (" : "", cause, cause[0] ? ")" : "");
    } else if (one_cause(run)) {
        /* One reason and cause for all (WSL2, a compute mode): said once. */
        for (i = 0; i < run->nsel && used < sizeof(line); i++)
            used += (size_t)snprintf(line + used, sizeof(line) - used, "%s%s", i ? ", " : "",
                                     run->results[i].mech);
        if (used < sizeof(line))
            snprintf(line + used, sizeof(line) - used, ": %s (%s)", run->results[0].reason,
                     run->results[0].cause);
    } else {
        /* Each reason with the cause the summary would name under it. */
        for (i = 0; i < run->nsel && used < sizeof(line); i++) {
            const gpuipc_result *r = &run->results[i];

            used += (size_t)snprintf(line + used, sizeof(line) - used, "%s%s: %s%s%s%s",
                                     i ? "; " : "", r->mech,
                                     r->status < 0 ? "not selected by CK_RUN_SUITE/CK_RUN_CASE"
                                                   : r->reason,
                                     r->cause[0] ? " (" : "", r->cause, r->cause[0] ? ")" : "");
        }
    }
    gpuipc_log_line(1, line);
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
    if (gpuipc_app_scenarios_size(run, nsel) < 0) {
        run->halted = 1; /* said at the start of the session */
        snprintf(run->lost, sizeof(run->lost), "out of memory for %zu scenarios", nsel);
        return;
    }
    for (i = 0; i < nsel; i++) {
        gpuipc_app_name_scenario(run, i, sel[i], -1, -1);
        if (sel[i]->needs_cuda || o->bench) /* --bench always describes a GPU */
            run->hello |= GPUIPC_HELLO_NEEDS_CUDA;
        if (sel[i]->destructive)
            run->destructive = sel[i]->name;
    }
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

    for (i = 0; i < run->nsel; i++) {
        gpuipc_result *r = &run->results[i];
        gpuipc_status was = r->failure;
        char reason[GPUIPC_ERR_LEN];

        if (r->status == GPUIPC_PASS || r->status == GPUIPC_FAIL ||
            gpuipc_mech_find(run->req, run->nreq, run->sel[i]->name) == NULL)
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
        code = gpuipc_report_exit_code(run->results, run->nsel, 1);
    return code;
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

/* "0=GPU-1d269889 1=GPU-..." for the GPUs this process sees, into buf;
 * "" where the driver is not loaded. */
static void gpu_map(char *buf, size_t len)
{
    uint8_t uuid[GPUIPC_UUID_LEN];
    char text[48];
    size_t used = 0;
    gpuipc_err e;
    int i, n = 0;

    buf[0] = '\0';
    if (gpuipc_cu.driver_version == 0 || gpuipc_gpu_count(&n, &e) < 0)
        return;
    for (i = 0; i < n && used < len; i++)
        if (gpuipc_gpu_uuid_of(i, uuid, &e) == 0)
            used += (size_t)snprintf(buf + used, len - used, "%s%d=%.12s", used ? " " : "", i,
                                     gpuipc_units_format_uuid(uuid, text, sizeof(text)));
}

/* Names the cause of every failure and skip from both sides' facts. */
static void diagnose_results(gpuipc_producer_run *run)
{
    char gpus[256], fabric[256] = "", link[1024];
    gpuipc_err why;
    size_t i;

    gpu_map(gpus, sizeof(gpus));
    for (i = 0; i < run->nsel; i++)
        if (run->results[i].failure.cu == GPUIPC_DIAG_CU_SYSTEM_NOT_READY &&
            gpuipc_nvml_fabric_states(fabric, sizeof(fabric), &why) < 0)
            snprintf(fabric, sizeof(fabric), "not known (%.200s)", why.msg);
    for (i = 0; i < run->nsel; i++) {
        gpuipc_result *r = &run->results[i];
        int a = run->pair != NULL ? run->pair[i][0] : -1;
        int b = run->pair != NULL ? run->pair[i][1] : -1;
        int pair = run->cuda == 0 && a >= 0 && a != b && r->status == GPUIPC_FAIL;
        gpuipc_diag_case c = {
            .mech = run->sel[i]->name,
            .fetched_fd = run->sel[i]->fetched_fd,
            .side = r->failed_side,
            .failure = &r->failure,
            .producer = &run->env.facts,
            .consumer = run->env.have_peer_facts ? &run->env.peer_facts : NULL,
            .producer_gpus = gpus[0] ? gpus : NULL,
            .mig = run->cuda == 0 ? run->modes.mig : -1,
            .cc = run->cuda == 0 ? run->modes.cc : -1,
            .min_gbps = run->o->min_gbps,
            .fabric = fabric[0] ? fabric : NULL,
            .link = NULL,
            .peer_claimed = pair ? gpuipc_gpu_peer_claimed(a, b) : -1,
        };

        if (pair) {
            gpuipc_gpu_link_describe(a, b, link, sizeof(link));
            c.link = link;
        }

        /* A cause said already (a GPU's compute mode) stands. */
        if ((r->status == GPUIPC_FAIL || r->status == GPUIPC_SKIP) && r->cause[0] == '\0')
            gpuipc_diagnose(&c, r->cause, sizeof(r->cause));
    }
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
    char first[GPUIPC_ERR_LEN + 160];
    size_t i;

    for (i = 0; i < run->nsel; i++) {
        const gpuipc_result *r = &run->results[i];

        if (r->status == GPUIPC_FAIL && failed == NULL)
            failed = r;
        if ((r->status == GPUIPC_FAIL || r->status == GPUIPC_SKIP) && r->cause[0] != '\0' &&
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
    gpuipc_brief_note(first, explained != NULL ? explained->cause : NULL);
}

/* Ends the session and prints the outcome (finish), then writes --json's
 * document, whatever the outcome. Returns the exit status. */
int gpuipc_app_producer_finish(gpuipc_producer_run *run, int code, uint64_t t0)
{
    char consumer[GPUIPC_ERR_LEN + 160] = "";
    int exit_code = finish(run, code, t0, consumer, sizeof(consumer));

    if (gpuipc_doc_wanted(run->o) && !run->o->list) {
        gpuipc_doc d = {
            .o = run->o,
            .role = "producer",
            .exit_code = exit_code,
            .wall_ns = gpuipc_clock_ns() - t0,
            .where = run->where[0] ? run->where : NULL,
            .consumer = consumer[0] ? consumer : NULL,
            .lost = run->started ? NULL : run->lost[0] ? run->lost : NULL,
            .results = run->started ? run->results : NULL,
            .n = run->started ? run->nsel : 0,
            .steps = (const double (*)[GPUIPC_STAGE_COUNT])run->steps,
            .have_steps = run->have_steps,
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

int gpuipc_app_producer_end(gpuipc_producer_run *run, int code, char *consumer, size_t len)
{
    if (!run->started && code == GPUIPC_PASS)
        code = GPUIPC_FAIL;
    if (run->started)
        diagnose_results(run);
    code = end_session(run, code, consumer, len);
    gpuipc_session_usage_free(&run->env.session);
    gpuipc_wire_close(run->w);
    run->w = NULL;
    gpuipc_gpu_close_all();
    run->env.gpu = NULL;
    return code;
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
        exit_code = gpuipc_app_check_fds_at_exit(&run->env.log, exit_code);
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
    gpuipc_report_summary(1, run->where, run->results, run->nsel, notes, consumer, exit_code,
                          gpuipc_clock_ns() - t0);
    return exit_code;
}
