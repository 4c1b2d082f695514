/* SPDX-License-Identifier: Apache-2.0 */
/* cause.h: what explains a failure or a skip, as data: the cause and what to
 * do about it, each a text of its own, which the result document keeps
 * apart and the text outputs print as one line, "cause: ...; fix: ...". */
#ifndef GPUIPC_CAUSE_H
#define GPUIPC_CAUSE_H

#include <stddef.h>

#include "core/err.h"

typedef struct gpuipc_cause {
    char what[GPUIPC_ERR_LEN]; /* the cause, "" where none is known */
    char fix[GPUIPC_ERR_LEN];  /* what to do about it, "" where none is said */
} gpuipc_cause;

/* The cause's two texts, each written as printf writes (cut to fit). A
 * rule that fires sets both, then says so:
 *   gpuipc_cause_what(out, "RLIMIT_NOFILE is %u ...", n);
 *   gpuipc_cause_fix(out, "ulimit -n 1024 or more");
 *   return 1; */
void gpuipc_cause_what(gpuipc_cause *c, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));
void gpuipc_cause_fix(gpuipc_cause *c, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));

/* Both texts as they are (cut to fit), for a rule whose words need no
 * figure: returns 1, the "it fired" of a rule that ends with it:
 *   return gpuipc_cause_set(out, "MIG is on ...", "run both on one MIG device"); */
int gpuipc_cause_set(gpuipc_cause *c, const char *what, const char *fix);

/* Empties c. */
void gpuipc_cause_clear(gpuipc_cause *c);

/* c as the text outputs print it, into buf (len bytes, cut to fit): "cause:
 * WHAT; fix: FIX", "cause: WHAT" without a fix, "" without a cause. Returns
 * buf. Async-signal-safe (the watchdog's JUnit report). */
const char *gpuipc_cause_line(const gpuipc_cause *c, char *buf, size_t len);

/* The same line from the two texts, where they are held apart from a
 * gpuipc_cause (a rank's record of a pair). */
const char *gpuipc_cause_line_of(const char *what, const char *fix, char *buf, size_t len);

/* Whether a and b say the same (both parts). */
int gpuipc_cause_same(const gpuipc_cause *a, const gpuipc_cause *b);

#endif
