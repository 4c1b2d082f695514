/* SPDX-License-Identifier: Apache-2.0 */
/* bench_mode.c: --bench's parts in the program: the one-shot runs timed as
 * whole processes first, then the measurements in the producer. */
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "app/cuda/bench_mode.h"
#include "app/cuda/producer_run.h"
#include "app/cuda/registry.h"
#include "app/version.h"
#include "bench/bench.h"
#include "bench/cuda/bench_run.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/proc.h"
#include "core/stats.h"
#include "core/stop.h"
#include "gpu/gpu.h"
#include "run/result_doc.h"

#define ONESHOT_RUNS 5

#define ONESHOT_TIMEOUT_NS (120ull * 1000000000ull)

typedef struct bare_answer {
    int rc;
    uint64_t hwm;
    gpuipc_err err;
} bare_answer;

/* In the child: a bare context on GPU *(int *)arg, and its peak RSS. */
static void bare_ask(void *arg, void *answer)
{
    bare_answer *a = answer;

    a->rc = gpuipc_gpu_bare_context_hwm(*(const int *)arg, &a->hwm, &a->err);
}

/* Measures os->bare_hwm in a child of its own; says why on stderr if it
 * cannot. */
static void bare_context(const gpuipc_options *o, gpuipc_app_oneshots *os)
{
    bare_answer a;
    gpuipc_err err;

    if (gpuipc_proc_ask_child(bare_ask, (void *)&o->device, &a, sizeof(a),
                              gpuipc_clock_deadline(ONESHOT_TIMEOUT_NS), &err) < 0) {
        gpuipc_log_say("--bench: bare context: %s", err.msg);
        return;
    }
    /* No driver or no GPU: the bench itself says so next. */
    if (a.rc == -ENOENT || a.rc == -ENODEV)
        return;
    if (a.rc < 0) {
        a.err.msg[sizeof(a.err.msg) - 1] = '\0';
        gpuipc_log_say("--bench: bare context: %s", a.err.msg);
        return;
    }
    os->bare_hwm = a.hwm;
    if (o->level != GPUIPC_LOG_QUIET && isatty(2))
        fprintf(stderr, "bench: a bare CUDA context (cuInit, the primary context of GPU %d): "
                "peak RSS %.1f MiB\n", o->device, (double)os->bare_hwm / 1048576.0);
}

void gpuipc_app_bench_oneshots(const gpuipc_options *o, gpuipc_app_oneshots *os)
{
    extern char **environ;
    char *argv[] = {"gpuipc_test", NULL};
    posix_spawn_file_actions_t fa;
    int i, status = 0, skip = 0;

    memset(os, 0, sizeof(*os));
    if (posix_spawn_file_actions_init(&fa) != 0)
        return;
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    for (i = 0; i < ONESHOT_RUNS && gpuipc_stop_signal() == 0; i++) {
        uint64_t t = gpuipc_clock_ns(), ns;
        gpuipc_err err;
        pid_t pid;
        int rc = posix_spawn(&pid, "/proc/self/exe", &fa, NULL, argv, environ);

        if (rc != 0) {
            gpuipc_log_say("--bench: one-shot run: posix_spawn /proc/self/exe: "
                    "%s", strerror(rc));
            os->failed = 1;
            break;
        }
        if (gpuipc_proc_wait(pid, gpuipc_clock_deadline(ONESHOT_TIMEOUT_NS), &status, &err) < 0) {
            gpuipc_log_say("--bench: one-shot run: %s", err.msg);
            os->failed = 1;
            break;
        }
        ns = gpuipc_clock_ns() - t;
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
            os->failed = 1;
        /* 77: nothing can run here, which the bench itself says next. */
        if (WIFEXITED(status) && WEXITSTATUS(status) == GPUIPC_SKIP) {
            skip = 1;
            break;
        }
        if (o->level != GPUIPC_LOG_QUIET && isatty(2))
            fprintf(stderr, "bench: one-shot run %d of %d (./gpuipc_test, whole process): "
                    "%.3f s, exit %d\n", i + 1, ONESHOT_RUNS, (double)ns / 1e9,
                    WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
        if (os->failed || gpuipc_samples_add(&os->ns, (double)ns) < 0)
            break;
    }
    posix_spawn_file_actions_destroy(&fa);
    if (gpuipc_stop_signal() == 0 && !skip)
        bare_context(o, os);
}

static void bench_payload(gpuipc_json *j, const char *key, const void *arg)
{
    gpuipc_bench_json(j, key, arg);
}

/* What the document's writer lets go of once it is done with the results. */
static void bench_release(void *arg)
{
    gpuipc_bench_free(arg);
    free(arg);
}

/* --bench in the producer, once both sides have probed the selection.
 * Returns the exit code. */
int gpuipc_app_run_bench(gpuipc_producer_run *run, int cuda, const gpuipc_err *cuda_why)
{
    gpuipc_bench *b;
    const gpuipc_mech *lat[GPUIPC_APP_NMECH_MAX]; /* --bench: one GPU, each mechanism once */
    gpuipc_bench_cfg cfg;
    size_t i, nlat = 0;
    int rc;

    if (cuda == 1) {
        char line[GPUIPC_ERR_LEN + 64];

        snprintf(line, sizeof(line), "gpuipc_test: SKIP: --bench measures GPU memory sharing: "
                 "%s", cuda_why->msg);
        gpuipc_log_line(1, line);
        return GPUIPC_SKIP;
    }
    if (cuda != 0) {
        gpuipc_log_say("--bench: %s", cuda_why->msg);
        return GPUIPC_FAIL;
    }
    /* --bench runs on one GPU: each mechanism once, nsel of them at most. */
    for (i = 0; i < run->cells.n && nlat < GPUIPC_APP_NMECH_MAX; i++) {
        if (run->cells.results[i].status == -1)
            lat[nlat++] = run->cells.sel[i];
        else if (run->o->level != GPUIPC_LOG_QUIET)
            fprintf(stderr, "bench: %s is not measured: %s\n", run->cells.sel[i]->name,
                    run->cells.results[i].reason);
    }
    memset(&cfg, 0, sizeof(cfg));
    cfg.lat = lat;
    cfg.nlat = nlat;
    /* The reference mechanism (the table says which) for the bandwidth,
     * size and cross-device sections; the first chunked GPU one for chunk
     * scaling. */
    for (i = 0; i < nlat; i++) {
        if (lat[i]->reference && cfg.reference == NULL)
            cfg.reference = lat[i];
        if (lat[i]->chunked && lat[i]->needs_cuda && cfg.chunked == NULL)
            cfg.chunked = lat[i];
    }
    cfg.iters = run->o->iters;
    cfg.size = run->o->size;
    cfg.latency_chunks = run->o->chunks;
    cfg.device = run->o->device;
    cfg.json_path = run->o->json_path;
    cfg.version = GPUIPC_VERSION;
    /* Its progress lines, like every progress line, only on a terminal. */
    cfg.progress = run->o->level != GPUIPC_LOG_QUIET && isatty(2);
    if ((b = calloc(1, sizeof(*b))) == NULL) {
        gpuipc_log_say("--bench: out of memory");
        return GPUIPC_FAIL;
    }
    if (run->oneshots != NULL) {
        b->oneshot_ns = run->oneshots->ns; /* the bench owns them from here */
        memset(&run->oneshots->ns, 0, sizeof(run->oneshots->ns));
        b->oneshot_failed = run->oneshots->failed;
        b->bare_hwm = run->oneshots->bare_hwm;
    }
    rc = gpuipc_bench_run(&run->env, run->w, &cfg, b);
    /* BYE counts them: the consumer saw each of them pass or fail. */
    run->bench_passed = b->passed;
    run->bench_failed = b->failed;
    /* --json: the results go into the run's document, which the end of the
     * session writes; its writer holds b until then. */
    if (run->o->json_path != NULL)
        gpuipc_doc_set_payload("bench", bench_payload, b, bench_release);
    else
        bench_release(b);
    return rc == 0 ? GPUIPC_PASS : GPUIPC_FAIL;
}
