/* SPDX-License-Identifier: Apache-2.0 */
/* log.h: the step log, one line per step, labelled with the role, the
 * scenario and the time since the run started. */
#ifndef GPUIPC_LOG_H
#define GPUIPC_LOG_H

#include <stdint.h>

enum gpuipc_log_level {
    GPUIPC_LOG_QUIET = 0,   /* failures and the summary only */
    GPUIPC_LOG_NORMAL = 1,  /* one line per step */
    GPUIPC_LOG_VERBOSE = 2, /* also each driver call and its time */
};

#define GPUIPC_LOG_NO_TIME UINT64_MAX

typedef struct gpuipc_log {
    int role;       /* enum gpuipc_role */
    int level;      /* lines above this level are dropped */
    uint64_t t0_ns; /* start of the run, shared by both roles */
    int fd;         /* where lines go, normally 1 */
} gpuipc_log;

/* Writes one line if level <= log->level:
 * "<ms since t0> <role> <scenario> <step> <text> [<dur_ns as ms>]".
 * scenario may be NULL, step may be GPUIPC_STEP_NONE, and dur_ns may be
 * GPUIPC_LOG_NO_TIME. The line goes out in a single write() so that the two
 * roles' lines never interleave mid-line. */
void gpuipc_log_step(const gpuipc_log *log, int level, const char *scenario, unsigned step,
                     uint64_t dur_ns, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));

/* Writes text and a newline to fd in a single write(). A "result: " line
 * is also kept, for gpuipc_log_last_result, and a "gpuipc_test: " line for
 * gpuipc_log_last_said. */
void gpuipc_log_line(int fd, const char *text);

/* The last "result: " line this process wrote, without "result: " ("" if
 * none). */
const char *gpuipc_log_last_result(void);

/* Keeps text (without "result: ") as the last result line, for a line a
 * mode wrote in a form of its own ("rank 2: result: ..."). */
void gpuipc_log_keep_result(const char *text);

/* Writes the program's own line "gpuipc_test: <text>" to standard error (a
 * usage error, a SKIP, a failure before any session), and keeps it for
 * gpuipc_log_last_said. */
void gpuipc_log_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The last of the program's own lines ("gpuipc_test: ..." through
 * gpuipc_log_line or gpuipc_log_say), without "gpuipc_test: " ("" if
 * none). */
const char *gpuipc_log_last_said(void);

#endif
