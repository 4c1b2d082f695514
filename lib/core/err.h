/* SPDX-License-Identifier: Apache-2.0 */
/* err.h: the caller-supplied buffer that carries the human-readable reason for a failure. */
#ifndef GPUIPC_ERR_H
#define GPUIPC_ERR_H

#include <stddef.h>

#define GPUIPC_ERR_LEN 512

/* Outcome codes shared by scenarios, roles and the program's exit status. */
#define GPUIPC_PASS 0
#define GPUIPC_FAIL 1
#define GPUIPC_USAGE 2
#define GPUIPC_SKIP 77
/* A scenario that a stop signal (SIGINT, SIGTERM, SIGHUP) ended before it
 * had a verdict: a result only, never an exit status. */
#define GPUIPC_STOPPED 3

#define GPUIPC_ERR_CALL_LEN 32

/* A reason names the step, the call that failed and its error, e.g.
 * "recvmsg: message truncated (MSG_CTRUNC)". Library functions fill it and
 * return a negative errno; the caller decides what to print. What failed
 * is also kept as data, for the rules that name a cause (diagnose.c), which
 * never read the text: the call, and its errno or the driver's CUresult. */
typedef struct gpuipc_err {
    char msg[GPUIPC_ERR_LEN];
    int errnum; /* the errno the call failed with (positive), or 0 */
    int cu;     /* the CUresult the driver call returned, or 0 */
    char call[GPUIPC_ERR_CALL_LEN]; /* "pidfd_getfd", "cuIpcOpenMemHandle", or "" */
} gpuipc_err;

/* Replaces the reason in err (which may be NULL) with the formatted text and
 * returns rc unchanged, so that `return gpuipc_err_set(err, -EPROTO, ...)` is
 * one statement. What failed (call, errno, CUresult) is cleared: a new
 * reason is a new failure. */
int gpuipc_err_set(gpuipc_err *err, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* As gpuipc_err_set, and records that call failed with errno e (positive).
 * Returns -e. */
int gpuipc_err_sys(gpuipc_err *err, const char *call, int e, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* As gpuipc_err_set, but what failed is what src records (src may be err,
 * and its text among the arguments): a reason that wraps another's text.
 * Returns rc. */
int gpuipc_err_wrap(gpuipc_err *err, const gpuipc_err *src, int rc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Records what failed: call, with errno e (or 0) and CUresult cu (or 0),
 * leaving the reason's text as it is. */
void gpuipc_err_what(gpuipc_err *err, const char *call, int e, int cu);

/* Puts "<formatted text>: " in front of the reason already in err. */
void gpuipc_err_prefix(gpuipc_err *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Clears the reason. */
void gpuipc_err_clear(gpuipc_err *err);

/* Copies src into dst (size cap, cap > 0), always NUL-terminating and
 * replacing every byte outside printable ASCII with '?', so that text from a
 * peer or a driver can be printed and sent safely. */
void gpuipc_err_copy_printable(char *dst, size_t cap, const char *src);

#endif
