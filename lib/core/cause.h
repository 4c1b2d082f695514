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

/* For a writer of a cause: what_len, the length snprintf gave what, so
 * that filling both parts is one expression:
 *   return gpuipc_cause_said(snprintf(c->what, ...), snprintf(c->fix, ...)) > 0; */
int gpuipc_cause_said(int what_len, int fix_len);

/* Empties c. */
void gpuipc_cause_clear(gpuipc_cause *c);

/* c as the text outputs print it, into buf (len bytes, cut to fit): "cause:
 * WHAT; fix: FIX", "cause: WHAT" without a fix, "" without a cause. Returns
 * buf. Async-signal-safe (the watchdog's JUnit report). */
const char *gpuipc_cause_line(const gpuipc_cause *c, char *buf, size_t len);

/* Whether a and b say the same (both parts). */
int gpuipc_cause_same(const gpuipc_cause *a, const gpuipc_cause *b);

#endif
