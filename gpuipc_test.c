/* SPDX-License-Identifier: Apache-2.0 */
/* gpuipc_test.c: the program's entry. It proves that GPU memory sharing
 * between processes works here by moving real bytes both ways, and says so
 * through its exit status: it parses the command line, chooses the
 * mechanisms, runs the mode asked for (each lives in lib/app/cuda/, one file
 * per mode) and returns the mode's status:
 *
 *   0 all that ran passed   1 a failure   2 a usage error
 *   77 nothing could run here (one line says why)   130, 143 stopped by a signal */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "app/cuda/doc_data.h"
#include "app/cuda/modes.h"
#include "app/cuda/registry.h"
#include "app/options.h"
#include "app/usage.h"
#include "app/version.h"
#include "core/clock.h"
#include "core/facts.h"
#include "core/log.h"
#include "core/proc.h"
#include "core/progress.h"
#include "core/runinfo.h"
#include "core/status.h"
#include "core/stop.h"
#include "core/watch.h"
#include "gpu/cudrv.h"
#include "gpu/nvml.h"
#include "run/brief.h"
#include "run/outputs.h"
#include "run/report_files.h"
#include "run/result_doc.h"
#include "session/inject.h"
#include "wire/wire.h"

/* How long the end of the run waits for NVML's start-up thread. */
#define NVML_FINISH_NS (2ull * 1000000000ull)

/* Runs the mode the options ask for. */
static int run_mode(const gpuipc_options *o, const gpuipc_app_selection *sel,
                    const gpuipc_inject *inject, uint64_t t0)
{
    if (o->list)
        return gpuipc_app_list(o, inject, t0);
    if (o->fault_matrix)
        return gpuipc_app_fault_matrix(o, sel);
    if (o->serve != NULL)
        return gpuipc_app_serve(o, sel, inject, t0);
    if (o->connect != NULL)
        return gpuipc_app_connect(o, inject, t0);
    if (o->ranks)
        return gpuipc_app_ranks(o, sel, inject, t0);
    return gpuipc_app_oneshot(o, sel, inject, t0);
}

/* The options were refused (exit 2): the result files argv names still
 * say so, "however the run ends", and a --prom or --junit file from an
 * earlier run is replaced rather than left to claim its verdict. A path
 * that is no file of ours is refused as always, untouched. Returns the
 * exit status. */
static int refused_options(int argc, char **argv, const gpuipc_err *why, uint64_t t0)
{
    char lost[GPUIPC_ERR_LEN + 40];
    gpuipc_options o;
    gpuipc_facts own;
    gpuipc_err err;
    gpuipc_doc_program prog;
    gpuipc_doc d = {.o = &prog, .exit_code = GPUIPC_USAGE, .role = "none", .own = &own,
                    .lost = lost};

    gpuipc_options_outputs(&o, argc, argv);
    if (!gpuipc_outputs_wanted(gpuipc_doc_program_of(&o, &prog)))
        return GPUIPC_USAGE;
    gpuipc_runinfo_gather(t0);
    if (gpuipc_files_check(&prog, &err) < 0 ||
        (o.json_path != NULL && gpuipc_doc_check_path(o.json_path, &err) < 0)) {
        gpuipc_log_say("%s", err.msg);
        return GPUIPC_USAGE;
    }
    snprintf(lost, sizeof(lost), "the options were refused: %s", why->msg);
    gpuipc_facts_gather(&own);
    d.wall_ns = gpuipc_clock_ns() - t0;
    return gpuipc_doc_finish(&d, GPUIPC_USAGE);
}

int main(int argc, char **argv)
{
    uint64_t t0 = gpuipc_clock_ns();
    gpuipc_app_selection sel;
    gpuipc_options o;
    gpuipc_inject inject;
    gpuipc_brief brief;
    gpuipc_doc_program prog;
    gpuipc_err err;
    int rc, frc = 0, json_refused = 0;

    /* Before anything opens a file: FDs 0, 1 and 2 closed by the caller are
     * held by pipes, and a closed output pipe is no signal of death. */
    if (gpuipc_proc_hold_std_fds() < 0) {
        fprintf(stderr, "gpuipc_test: FDs 0, 1 and 2: closed, and no pipe to hold them\n");
        return GPUIPC_FAIL;
    }
    /* The environment settings the result records, before the program sets
     * one of them itself (CUDA_DEVICE_MAX_CONNECTIONS). */
    gpuipc_facts_env_snapshot();
    /* Check prints through stdio, the step log with write(): line buffering
     * keeps the two in order, and nothing is pending when the process forks. */
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (gpuipc_options_parse(&o, argc, argv, &err) < 0) {
        if (gpuipc_brief_wanted(argc, argv)) {
            printf("%s: %s (exit %d)\n", gpuipc_exit_word(GPUIPC_USAGE), err.msg, GPUIPC_USAGE);
        } else {
            /* Kept as the last line said: the --junit report's reason. */
            gpuipc_log_say("%s", err.msg);
            fprintf(stderr, "Try 'gpuipc_test --help'.\n");
        }
        return refused_options(argc, argv, &err, t0);
    }
    if (o.help) {
        gpuipc_app_usage(stdout, gpuipc_app_registry, gpuipc_app_nmech);
        return GPUIPC_PASS;
    }
    if (o.version) {
        printf("gpuipc_test %s (commit %s, protocol %d, the CUDA driver API as of %d.%d)\n",
               GPUIPC_VERSION, gpuipc_version_commit(), GPUIPC_WIRE_VERSION,
               GPUIPC_CUDA_API_VERSION / 1000,
               GPUIPC_CUDA_API_VERSION % 1000 / 10);
        return GPUIPC_PASS;
    }
    /* --brief: whatever the run prints goes to memory; one line comes out. */
    if (o.brief && gpuipc_brief_begin(&brief, &err) < 0) {
        printf("%s: %s (exit %d)\n", gpuipc_exit_word(GPUIPC_FAIL), err.msg, GPUIPC_FAIL);
        return GPUIPC_FAIL;
    }
    /* A live progress line for long work: on a terminal, never with -q or
     * --brief (both make the level quiet). */
    gpuipc_progress_enable(o.level != GPUIPC_LOG_QUIET);
    gpuipc_doc_program_of(&o, &prog);
    gpuipc_runinfo_gather(t0);
    if (o.json_path != NULL && strcmp(o.json_path, "-") == 0 && !o.list &&
        gpuipc_doc_take_stdout() < 0)
        return GPUIPC_FAIL;
    if (gpuipc_inject_parse(getenv("GPUIPC_FAULT"), getenv("GPUIPC_SABOTAGE"), &inject,
                            &err) < 0) {
        gpuipc_log_say("%s", err.msg);
        rc = GPUIPC_USAGE;
    } else if ((frc = o.ranks ? 0 : gpuipc_files_check(&prog, &err)) < 0 ||
               (o.json_path != NULL && !o.ranks &&
                gpuipc_doc_check_path(o.json_path, &err) < 0)) {
        /* Said before the run, not after minutes of --fault-matrix; every
         * file is left as it was, but for a fleet file that could not be
         * looked at for want of an FD, which was made to claim nothing
         * (the run fails: its paths may well be right). */
        gpuipc_log_say("%s", err.msg);
        rc = frc == -EMFILE || frc == -ENFILE ? GPUIPC_FAIL : GPUIPC_USAGE;
        json_refused = 1;
    } else {
        /* From here no earlier run's verdict stays in --prom's or --junit's
         * file, however this one ends: before anything else that can fail.
         * --ranks: rank 0's alone, checked and begun by the mode. */
        if (!o.ranks)
            gpuipc_files_begin(&prog);
        /* Before any fork, so that a stop reaches every process of the run,
         * and before the FDs at the start are noted, which it is one of. */
        if (gpuipc_stop_open(&err) < 0) {
            gpuipc_log_say("%s", err.msg);
            rc = GPUIPC_FAIL;
        } else if ((rc = gpuipc_app_select(&o, &sel)) == 0) {
            rc = run_mode(&o, &sel, &inject, t0);
        }
    }
    /* From here this thread ends the run, not a watchdog (which, if it has
     * fired, ends it itself: this then waits for that). */
    gpuipc_watch_claim(rc);
    /* A run that failed before its mode said a verdict (no FD for the stop
     * channel, the status page or the session's socket) still ends on a
     * result line, naming what it said last. --ranks says its own. */
    if (rc == GPUIPC_FAIL && !o.ranks && gpuipc_log_last_result()[0] == '\0') {
        char line[1024];

        snprintf(line, sizeof(line), "result: %s: no scenario ran: %.900s (exit %d)",
                 gpuipc_exit_word(GPUIPC_FAIL), gpuipc_log_last_said()[0] != '\0'
                 ? gpuipc_log_last_said() : "the run ended before its verdict", GPUIPC_FAIL);
        gpuipc_log_line(1, line);
    }
    /* --json: a run that ended before its mode wrote the document (a
     * refused socket path, a bad --only) still leaves one. --ranks writes
     * its own, from rank 0 only. */
    if (gpuipc_outputs_wanted(gpuipc_doc_program_of(&o, &prog)) && !json_refused &&
        !gpuipc_doc_written() && !o.ranks) {
        int alone = o.list || o.fault_matrix; /* no pair of its own in this process */
        gpuipc_facts own;
        gpuipc_doc d = {.o = &prog, .exit_code = rc, .wall_ns = gpuipc_clock_ns() - t0,
                        .role = alone ? "none" : o.connect ? "consumer" : "producer",
                        .own = &own,
                        .lost = alone ? NULL
                                      : "the run ended before a session; standard error says "
                                        "why"};

        gpuipc_facts_gather(&own);
        rc = gpuipc_doc_finish(&d, rc);
    }
    gpuipc_watch_claim(rc);
    gpuipc_doc_drop_payload(); /* a mode's part of the document, written or not */
    if (o.brief)
        gpuipc_brief_end(&brief, rc);
    /* NVML's start-up thread, if it is still inside nvmlInit_v2 (a sick
     * GPU), gets a short while; then the process leaves without the
     * libraries' exit handlers, which must not run under it. */
    if (gpuipc_nvml_finish(NVML_FINISH_NS) < 0) {
        fflush(NULL);
        _exit(rc);
    }
    return rc;
}
