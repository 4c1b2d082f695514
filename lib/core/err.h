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

/* A reason names the step, the call that failed and its error, e.g.
 * "recvmsg: message truncated (MSG_CTRUNC)". Library functions fill it and
 * return a negative errno; the caller decides what to print. */
typedef struct gpuipc_err {
    char msg[GPUIPC_ERR_LEN];
} gpuipc_err;

/* Replaces the reason in err (which may be NULL) with the formatted text and
 * returns rc unchanged, so that `return gpuipc_err_set(err, -EPROTO, ...)` is
 * one statement. */
int gpuipc_err_set(gpuipc_err *err, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

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
