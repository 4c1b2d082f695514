/* SPDX-License-Identifier: Apache-2.0 */
/* bench_mode.c: --bench's parts in the program: first, before any CUDA
 * call, the one-shot runs timed as whole processes, one more default run
 * read back for its cells' times, and the floor (cuInit and every GPU's
 * context in a process of its own); then the measurements in the
 * producer. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
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
#include "run/cellset.h"
#include "run/doc_scan.h"
#include "run/result_doc.h"

#define ONESHOT_RUNS 5

#define ONESHOT_TIMEOUT_NS (120ull * 1000000000ull)

/* The floor child's answer, written back whole through a pipe. */
typedef struct floor_answer {
    int rc;
    gpuipc_gpu_floor f;
    gpuipc_err err;
} floor_answer;

_Static_assert(sizeof(floor_answer) <= PIPE_BUF, "the floor's answer must fit one pipe write");

/* In the child: cuInit, then every GPU's primary context (GPU *(int *)arg
 * first, for the bare context's peak RSS), each timed, all released. */
static void floor_ask(void *arg, void *answer)
{
    floor_answer *a = answer;

    a->rc = gpuipc_gpu_bare_floor(*(const int *)arg, &a->f, &a->err);
}

/* Measures the floor and os->bare_hwm in a child of its own, before this
 * process touches CUDA; says why on stderr (and in the floor's note) if it
 * cannot. */
static void bare_floor(const gpuipc_options *o, gpuipc_app_oneshots *os)
{
    gpuipc_bench_floor *fl = &os->floor;
    floor_answer a;
    gpuipc_err err;
    uint64_t lo = UINT64_MAX, hi = 0;
    int g;

    if (gpuipc_proc_ask_child(floor_ask, (void *)&o->device, &a, sizeof(a),
                              gpuipc_clock_deadline(ONESHOT_TIMEOUT_NS), &err) < 0) {
        snprintf(fl->note, sizeof(fl->note), "the process forked for it: %.400s", err.msg);
        gpuipc_log_say("--bench: the floor: %s", fl->note);
        return;
    }
    a.err.msg[sizeof(a.err.msg) - 1] = '\0';
    if (a.f.hwm != 0) {
        os->bare_hwm = a.f.hwm;
        if (o->level != GPUIPC_LOG_QUIET && isatty(2))
            fprintf(stderr, "bench: a bare CUDA context (cuInit, the primary context of GPU %d): "
                    "peak RSS %.1f MiB\n", o->device, (double)os->bare_hwm / 1048576.0);
    }
    if (a.rc < 0) {
        snprintf(fl->note, sizeof(fl->note), "%s", a.err.msg);
        /* No driver, or cuInit found no GPU: the bench itself says so next.
         * A GPU that failed after cuInit is said here. */
        if (a.rc != -ENOENT && !(a.rc == -ENODEV && a.f.init_ns == 0))
            gpuipc_log_say("--bench: the floor: %s", fl->note);
        return;
    }
    fl->measured = 1;
    fl->init_ns = a.f.init_ns;
    fl->ngpus = a.f.ngpus;
    fl->ctx_sum_ns = a.f.ctx_sum_ns;
    for (g = 0; g < a.f.ngpus && g < GPUIPC_BENCH_FLOOR_GPUS && g < GPUIPC_GPU_FLOOR_GPUS; g++) {
        fl->ctx_ns[g] = a.f.ctx_ns[g];
        lo = fl->ctx_ns[g] < lo ? fl->ctx_ns[g] : lo;
        hi = fl->ctx_ns[g] > hi ? fl->ctx_ns[g] : hi;
    }
    if (o->level != GPUIPC_LOG_QUIET && isatty(2))
        fprintf(stderr, "bench: the floor (a process of its own: cuInit, then each GPU's primary "
                "context): cuInit %.3f s, %d context%s %.3f s (%.3f to %.3f s each), %.3f s in "
                "all\n", (double)fl->init_ns / 1e9, fl->ngpus, fl->ngpus == 1 ? "" : "s",
                (double)fl->ctx_sum_ns / 1e9, (double)lo / 1e9, (double)hi / 1e9,
                (double)(fl->init_ns + fl->ctx_sum_ns) / 1e9);
}

/* The most of a document read back from a run. */
#define DOC_MAX (64u << 20)

/* Reads fd until its end into *text (malloc, NUL-terminated; the caller
 * frees it, also after a failure), by deadline_ns, in slices short enough
 * to see a stop signal. Returns 0, or a negative errno with err: the read,
 * the deadline, a stop signal, a text over DOC_MAX, no memory. */
static int read_all(int fd, uint64_t deadline_ns, char **text, size_t *len, gpuipc_err *err)
{
    size_t cap = 0;

    *text = NULL;
    *len = 0;
    for (;;) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int ms = gpuipc_clock_ms_left(deadline_ns), r;
        ssize_t got;

        if (gpuipc_stop_signal() != 0)
            return gpuipc_err_set(err, -EINTR, "stopped by a signal");
        if (ms <= 0)
            return gpuipc_err_set(err, -ETIMEDOUT, "no end of its output in %.0f s",
                                  (double)ONESHOT_TIMEOUT_NS / 1e9);
        r = poll(&p, 1, ms < 100 ? ms : 100);
        if (r < 0 && errno != EINTR)
            return gpuipc_err_sys(err, "poll", errno, "poll: %s", strerror(errno));
        if (r <= 0)
            continue;
        if (*len + 65536 + 1 > cap) {
            size_t more = cap ? 2 * cap : 262144;
            char *bigger;

            if (more > DOC_MAX + 1)
                more = DOC_MAX + 1;
            if (*len + 1 >= more)
                return gpuipc_err_set(err, -EFBIG, "its document is larger than %u MiB",
                                      DOC_MAX >> 20);
            if ((bigger = realloc(*text, more)) == NULL)
                return gpuipc_err_set(err, -ENOMEM, "out of memory for its document");
            *text = bigger;
            cap = more;
        }
        got = read(fd, *text + *len, cap - *len - 1);
        if (got < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (got < 0)
            return gpuipc_err_sys(err, "read", errno, "read: %s", strerror(errno));
        if (got == 0)
            break;
        *len += (size_t)got;
        (*text)[*len] = '\0';
    }
    if (*text == NULL && (*text = calloc(1, 1)) == NULL)
        return gpuipc_err_set(err, -ENOMEM, "out of memory");
    return 0;
}

/* One more default run, untimed, started as the timed ones are but with
 * --json - and its standard output a pipe (where --json - puts only the
 * document; the text goes to its standard error, /dev/null here): its
 * document, read back (run/doc_scan.h), gives each cell's time and where
 * it ran. Says why on stderr (and in the cells' note) if it cannot. */
static void cell_times(const gpuipc_options *o, gpuipc_app_oneshots *os)
{
    extern char **environ;
    char *argv[] = {"gpuipc_test", "--json", "-", NULL};
    uint64_t deadline = gpuipc_clock_deadline(ONESHOT_TIMEOUT_NS);
    gpuipc_bench_cells *c = &os->cells;
    posix_spawn_file_actions_t fa;
    gpuipc_doc_scan d = {0};
    gpuipc_err err, werr;
    char *text = NULL, how[96], count[160];
    size_t len = 0;
    int fds[2], status = 0, rc, waited;
    pid_t pid;

    if (pipe2(fds, O_CLOEXEC) < 0) {
        snprintf(c->note, sizeof(c->note), "pipe2: %s", strerror(errno));
        goto say;
    }
    if ((rc = posix_spawn_file_actions_init(&fa)) != 0) {
        snprintf(c->note, sizeof(c->note), "posix_spawn_file_actions_init: %s", strerror(rc));
        close(fds[0]);
        close(fds[1]);
        goto say;
    }
    /* dup2 clears FD_CLOEXEC on the copy, and exec closes both ends. */
    if ((rc = posix_spawn_file_actions_adddup2(&fa, fds[1], 1)) != 0 ||
        (rc = posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0)) != 0 ||
        (rc = posix_spawn(&pid, "/proc/self/exe", &fa, NULL, argv, environ)) != 0) {
        snprintf(c->note, sizeof(c->note), "posix_spawn /proc/self/exe --json -: %s",
                 strerror(rc));
        posix_spawn_file_actions_destroy(&fa);
        close(fds[0]);
        close(fds[1]);
        goto say;
    }
    posix_spawn_file_actions_destroy(&fa);
    close(fds[1]);
    rc = read_all(fds[0], deadline, &text, &len, &err);
    close(fds[0]);
    /* A run whose output could not be read is killed now; one stopped by a
     * signal (which it has too) gets the stop's grace first. */
    waited = gpuipc_proc_wait(pid, rc < 0 && rc != -EINTR ? gpuipc_clock_ns() : deadline,
                              &status, &werr);
    if (gpuipc_stop_signal() != 0) {
        snprintf(c->note, sizeof(c->note), "stopped by a signal");
        goto out;
    }
    if (rc < 0) {
        snprintf(c->note, sizeof(c->note), "reading its document: %.400s", err.msg);
        goto say;
    }
    if (waited < 0) {
        snprintf(c->note, sizeof(c->note), "%s", werr.msg);
        goto say;
    }
    /* 77: nothing can run here, which the bench itself says next. */
    if (WIFEXITED(status) && WEXITSTATUS(status) == GPUIPC_SKIP) {
        snprintf(c->note, sizeof(c->note), "the run %s (nothing could run)",
                 gpuipc_proc_describe(status, how, sizeof(how)));
        goto out;
    }
    if (gpuipc_doc_scan_read(text, len, &d, &err) < 0) {
        snprintf(c->note, sizeof(c->note), "the run %.80s; %.400s",
                 gpuipc_proc_describe(status, how, sizeof(how)), err.msg);
        goto say;
    }
    gpuipc_bench_cells_of(c, &d, status);
    if (!c->measured)
        goto say;
    if (o->level != GPUIPC_LOG_QUIET && isatty(2))
        fprintf(stderr, "bench: one more default run (--json -, untimed, for its cells): "
                "cells: %s, on %u GPU%s; their times add to %.3f s of its %.3f s; exit 0\n",
                gpuipc_cellset_census_text(&c->census, count, sizeof(count)), c->ngpus,
                c->ngpus == 1 ? "" : "s", (double)c->census.ns / 1e9, c->wall_ns / 1e9);
    goto out;
say:
    gpuipc_log_say("--bench: the cells of a default run: %s", c->note);
out:
    gpuipc_doc_scan_free(&d);
    free(text);
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
        cell_times(o, os);
    if (gpuipc_stop_signal() == 0 && !skip)
        bare_floor(o, os);
    if (skip) {
        snprintf(os->cells.note, sizeof(os->cells.note), "nothing can run here");
        snprintf(os->floor.note, sizeof(os->floor.note), "nothing can run here");
    }
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
        b->floor = run->oneshots->floor;
        b->cells = run->oneshots->cells;
    } else {
        snprintf(b->floor.note, sizeof(b->floor.note), "measured in the forked mode only");
        snprintf(b->cells.note, sizeof(b->cells.note), "measured in the forked mode only");
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
