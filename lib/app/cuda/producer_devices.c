/* SPDX-License-Identifier: Apache-2.0 */
/* producer_devices.c: the producer's GPUs before a consumer takes part:
 * --expect-gpus, --device's list, the GPUs two processes can share (their
 * compute modes), opening them (several at once), the run's "where" line,
 * and whether --size fits the GPU or the host. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/cuda/producer_devices.h"
#include "app/cuda/producer_run.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/proc.h"
#include "core/step.h"
#include "core/units.h"
#include "gpu/cudrv.h"
#include "gpu/gpu.h"
#include "run/plan.h"

/* The first of the run's GPUs (o->device alone, or run->gpus) that two
 * processes can share, or -1 with the first one's cause in why where none
 * can be (run->kept_apart set). */
static int first_usable(gpuipc_producer_run *run, gpuipc_err *why)
{
    char first_cause[GPUIPC_ERR_LEN] = "";
    size_t i, n = run->ngpus > 0 ? run->ngpus : 1;
    gpuipc_cause cause;

    for (i = 0; i < n; i++) {
        int g = run->ngpus > 0 ? run->gpus[i] : run->o->device;

        if (!gpuipc_app_modes_block(&run->cmodes, g, &cause))
            return g;
        if (first_cause[0] == '\0')
            gpuipc_cause_line(&cause, first_cause, sizeof(first_cause));
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
    gpuipc_cause why;
    size_t i, k = 0;
    gpuipc_err err;
    uint64_t t = gpuipc_clock_ns();

    if (open == NULL)
        return;
    for (i = 0; i < run->ngpus; i++)
        if (!gpuipc_app_modes_block(&run->cmodes, run->gpus[i], &why))
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
    snprintf(run->where, sizeof(run->where), "%zu GPUs (%s), each on its own and %s; CUDA "
             "driver %d.%d", run->ngpus, list, run->o->ring ? "in a ring across them (GPU i "
             "exports to GPU i+1, the last to the first)" : "every ordered pair of them (in "
             "phase k, GPU i exports to GPU i+k)", gpuipc_cu.driver_version / 1000,
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
    for (i = 0; i < run->cells.n; i++)
        need_cuda += run->cells.sel[i]->needs_cuda;
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
            if (need_cuda == run->cells.n && run->cuda == 1 && run->nreq > 0)
                gpuipc_err_prefix(&run->cuda_why, "required by --require, but skipped");
            if (need_cuda == run->cells.n)
                return run->cuda == 1 && run->nreq == 0 ? GPUIPC_SKIP : GPUIPC_FAIL;
        }
    }
    for (i = 0; i < run->cells.n; i++) {
        uint64_t avail;
        char a[32], b[32];

        if (run->cells.sel[i]->needs_cuda) /* host memory: memfd and its kin */
            continue;
        avail = gpuipc_proc_mem_available();
        if (avail != 0 && o->size > avail) {
            gpuipc_log_say("--size %s: larger than the host's available memory "
                    "for %s (MemAvailable %s)",
                    gpuipc_units_format_size(o->size, a, sizeof(a)), run->cells.sel[i]->name,
                    gpuipc_units_format_size(avail, b, sizeof(b)));
            return GPUIPC_USAGE;
        }
    }
    return 0;
}
