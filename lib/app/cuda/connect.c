/* SPDX-License-Identifier: Apache-2.0 */
/* connect.c: --connect PATH: the consumer's role with the producer that
 * serves there; its last line says the session's status and what each side
 * concluded. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "app/cuda/consumer_proc.h"
#include "app/cuda/doc_data.h"
#include "app/cuda/modes.h"
#include "app/cuda/process.h"
#include "core/clock.h"
#include "core/facts.h"
#include "core/status.h"
#include "core/step.h"
#include "core/stop.h"
#include "run/outputs.h"
#include "run/result_doc.h"
#include "wire/endpoint.h"

/* The consumer's last line in two-terminal mode: the session's status, which
 * the producer's is too, and what each side concluded. */
static void consumer_result_line(const char *path, int code, const gpuipc_session_end *end,
                                 char *line, size_t len)
{
    char producer[160];

    if (end->said_bye)
        snprintf(producer, sizeof(producer), "the producer concluded %s: %u passed, %u failed, "
                 "%u skipped", gpuipc_exit_word(end->bye.code), end->bye.passed, end->bye.failed,
                 end->bye.skipped);
    else
        snprintf(producer, sizeof(producer), "the session ended without the producer's verdict");
    if (gpuipc_stop_signal() != 0)
        code = 128 + gpuipc_stop_signal();
    snprintf(line, len, "result: %s: the session with %s; %s; this side %s%.300s (exit %d)",
             gpuipc_exit_word(code), path, producer,
             end->own == GPUIPC_PASS ? "passed" : "failed: ",
             end->own == GPUIPC_PASS ? "" : end->reason, code);
}

/* --json: the consumer's document, with the producer's verdict if it gave
 * one. */
static int write_doc(const gpuipc_options *o, int code, uint64_t t0,
                     const gpuipc_session_end *end, const char *lost)
{
    gpuipc_facts own;
    gpuipc_doc_program prog;
    gpuipc_doc d = {.o = gpuipc_doc_program_of(o, &prog), .role = "consumer", .exit_code = code,
                    .wall_ns = gpuipc_clock_ns() - t0, .lost = lost, .own = &own};

    if (!gpuipc_outputs_wanted(d.o))
        return code;
    gpuipc_facts_gather(&own);
    if (end != NULL && end->said_bye)
        d.verdict = &end->bye;
    return gpuipc_doc_finish(&d, code);
}

/* --connect PATH: the consumer's role, its process's state in proc. */
static int connect_run(const gpuipc_options *o, const gpuipc_inject *inject, uint64_t t0,
                       gpuipc_app_proc *proc)
{
    gpuipc_log log = {GPUIPC_ROLE_CONSUMER, o->level, t0, 1};
    gpuipc_session_end end;
    gpuipc_peer peer;
    gpuipc_err err;
    char line[1024];
    int sock, code;

    gpuipc_app_note_fds_at_start(proc);
    gpuipc_app_catch_stop_signals();
    sock = gpuipc_endpoint_connect(o->connect, o->allow_uid,
                                   gpuipc_clock_deadline(o->timeout_ns), &peer, &err);
    if (sock == -EPERM) {
        /* A server of another uid: this mode can trust it. */
        char said[GPUIPC_ERR_LEN];

        snprintf(said, sizeof(said), "%s", err.msg);
        gpuipc_err_set(&err, -EPERM, "--connect %.400s; --allow-uid %u trusts it", said,
                       (unsigned)peer.uid);
    }
    if (sock < 0) {
        /* The result line says why, once. */
        /* A path that is no socket is a bad argument, said at once. */
        code = gpuipc_app_check_fds_at_exit(proc, &log, gpuipc_app_stop_code(
            sock == -ENOTSOCK ? GPUIPC_USAGE : GPUIPC_FAIL));
        snprintf(line, sizeof(line), "result: %s: no session with %s: %.400s (exit %d)",
                 gpuipc_exit_word(code),
                 o->connect, err.msg, code);
        gpuipc_log_line(1, line);
        return write_doc(o, code, t0, NULL, err.msg);
    }
    gpuipc_log_step(&log, GPUIPC_LOG_NORMAL, NULL, GPUIPC_STEP_HELLO, GPUIPC_LOG_NO_TIME,
                    "connected to %s: producer pid %d (uid %u)", o->connect, (int)peer.pid,
                    (unsigned)peer.uid);
    gpuipc_stop_set_parent(0);
    code = gpuipc_app_consumer_main(sock, o, inject, t0, peer.pid > 0 ? (int)peer.pid : -1,
                                    proc, &end);
    consumer_result_line(o->connect, code, &end, line, sizeof(line));
    gpuipc_log_line(1, line);
    return write_doc(o, code, t0, &end, NULL);
}

int gpuipc_app_connect(const gpuipc_options *o, const gpuipc_inject *inject, uint64_t t0)
{
    gpuipc_app_proc proc = {0};
    int code = connect_run(o, inject, t0, &proc);

    gpuipc_app_proc_free(&proc);
    return code;
}
