/* SPDX-License-Identifier: Apache-2.0 */
/* fault_matrix.c: --fault-matrix: every step x action of both roles, each a
 * --serve and --connect pair of this program; a stop signal ends the pair
 * under way and the matrix. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "app/cuda/modes.h"
#include "app/cuda/process.h"
#include "app/cuda/registry.h"
#include "run/matrix.h"
#include "core/log.h"
#include "core/names.h"
#include "core/status.h"
#include "core/stop.h"
#include "gpu/gpu.h"
#include "gpu/nvml.h"
#include "run/result_doc.h"
#include "wire/wire.h"

/* matrix holds_gpu: whether the driver still lists pid as holding GPU
 * memory (NVML). */
static int matrix_holds_gpu(void *arg, pid_t pid)
{
    uint64_t bytes = 0;
    int listed = 0;

    (void)arg;
    if (gpuipc_nvml_pid_bytes(pid, &bytes, &listed, NULL) < 0)
        return -EIO;
    return listed;
}

/* --fault-matrix: every step x action of both roles, each a --serve and
 * --connect pair of this program, over --only (default: the reference
 * mechanism). A stop signal ends the pair under way and the matrix, with 130
 * or 143. */
/* What --json's document says of the matrix (the document's writer holds
 * it until main has written it). */
typedef struct matrix_doc {
    const char *mech;
    double timeout_s, margin_s;
    int ran, stopped;
    gpuipc_matrix_totals t;
} matrix_doc;

static void doc_payload(gpuipc_json *j, const char *key, const void *arg)
{
    const matrix_doc *doc = arg;

    gpuipc_json_object(j, key);
    gpuipc_json_string(j, "mechanism", doc->mech);
    gpuipc_json_double(j, "timeout_s", doc->timeout_s);
    gpuipc_json_double(j, "margin_s", doc->margin_s);
    gpuipc_json_bool(j, "ran", doc->ran);
    gpuipc_json_bool(j, "stopped", doc->stopped);
    gpuipc_json_int(j, "cases", doc->t.cases);
    gpuipc_json_int(j, "survived", doc->t.survived);
    gpuipc_json_int(j, "hangs", doc->t.hangs);
    gpuipc_json_int(j, "leaks", doc->t.leaks);
    gpuipc_json_int(j, "wrong_reports", doc->t.wrong);
    gpuipc_json_double(j, "seconds", doc->t.seconds);
    gpuipc_json_end(j, '}');
}

int gpuipc_app_fault_matrix(const gpuipc_options *o, const gpuipc_app_selection *s)
{
    const gpuipc_mech *subject = o->only != NULL ? s->sel[0] : gpuipc_app_reference();
    char prog[4096], size[32], line[GPUIPC_ERR_LEN + 96], checked[GPUIPC_ERR_LEN + 64] = "";
    gpuipc_matrix_opts mo;
    gpuipc_matrix_totals t;
    matrix_doc *doc;
    gpuipc_err err;
    uint64_t bytes;
    ssize_t n;
    int rc, listed, count = 0, code;

    if (o->only != NULL && s->nsel != 1) {
        gpuipc_log_say("--fault-matrix: name one mechanism with --only");
        return GPUIPC_USAGE;
    }
    n = readlink("/proc/self/exe", prog, sizeof(prog) - 1);
    if (n <= 0) {
        gpuipc_log_say("--fault-matrix: readlink /proc/self/exe: %s",
                strerror(errno));
        return GPUIPC_FAIL;
    }
    prog[n] = '\0';
    gpuipc_app_catch_stop_signals();
    memset(&mo, 0, sizeof(mo));
    mo.prog = prog;
    mo.mech = subject->name;
    snprintf(size, sizeof(size), "%llu", (unsigned long long)(o->size_set ? o->size : 8ull << 20));
    mo.size = size;
    mo.timeout_s = o->timeout_set ? (double)o->timeout_ns / 1e9 : 2.0;
    mo.margin_s = 3.0;
    mo.verbose = o->level == GPUIPC_LOG_VERBOSE;
    mo.fd = 1;
    if ((doc = calloc(1, sizeof(*doc))) == NULL) {
        gpuipc_log_say("--fault-matrix: out of memory");
        return GPUIPC_FAIL;
    }
    doc->mech = mo.mech;
    doc->timeout_s = mo.timeout_s;
    doc->margin_s = mo.margin_s;
    gpuipc_doc_set_payload("fault_matrix", doc_payload, doc, free);
    if (subject->needs_cuda) {
        /* The pairs exec at once, so this process may start the driver;
         * it opens no context of its own. */
        if (gpuipc_gpu_count(&count, &err) < 0 || o->device >= count) {
            if (count > 0)
                gpuipc_err_set(&err, -ENODEV, "no GPU %d (%d visible)", o->device, count);
            snprintf(line, sizeof(line), "gpuipc_test: SKIP: --fault-matrix %s: %s", mo.mech,
                     err.msg);
            gpuipc_log_line(1, line);
            return GPUIPC_SKIP;
        }
        if (gpuipc_nvml_pid_bytes(getpid(), &bytes, &listed, &err) == 0) {
            mo.holds_gpu = matrix_holds_gpu;
            snprintf(checked, sizeof(checked), "; after each case, NVML must list neither "
                     "process as holding GPU memory");
        } else {
            snprintf(checked, sizeof(checked), "; whether the driver released the pair's GPU "
                     "memory is not checked: %.400s", err.msg);
        }
    }
    printf("fault matrix over %s: every step x action of both roles (%s), each a --serve and "
           "--connect pair; --timeout %.2f s, margin %.1f s%s\n", mo.mech,
           "exit, kill, hang, corrupt, extra-fds, close", mo.timeout_s, mo.margin_s, checked);
    fflush(stdout);
    rc = gpuipc_matrix_run(&mo, &t, &err);
    doc->t = t;
    doc->ran = rc >= 0 || rc == -EINTR;
    doc->stopped = rc == -EINTR || gpuipc_stop_signal() != 0;
    if (rc == -EINTR || gpuipc_stop_signal() != 0) {
        const char *name = gpuipc_sig_abbrev(gpuipc_stop_signal());

        code = gpuipc_app_stop_code(GPUIPC_FAIL);
        snprintf(line, sizeof(line), "result: %s: fault matrix over %s: stopped by SIG%s after "
                 "%u cases; the pair under way was killed, nothing is left running (exit %d)",
                 gpuipc_exit_word(code), mo.mech, name ? name : "?", t.cases, code);
        gpuipc_log_line(1, line);
        return code;
    }
    if (rc < 0) {
        gpuipc_log_say("--fault-matrix: %s", err.msg);
        return GPUIPC_FAIL;
    }
    code = rc == 0 ? GPUIPC_PASS : GPUIPC_FAIL;
    snprintf(line, sizeof(line), "result: %s: fault matrix over %s: %u cases, %u survived, "
             "%u hangs, %u leaks, %u wrong reports, in %.1f s (exit %d)",
             gpuipc_exit_word(code), mo.mech, t.cases, t.survived, t.hangs, t.leaks, t.wrong,
             t.seconds, code);
    gpuipc_log_line(1, line);
    return code;
}
