/* SPDX-License-Identifier: Apache-2.0 */
/* json.h: a small streaming JSON writer for the documents: objects,
 * arrays, strings (escaped), integers, numbers, booleans and null, with
 * two-space indentation. Keys are given with each member; inside arrays,
 * key is NULL. It writes through a sink (core/sink.h), with no stdio, no
 * malloc and no locale: a watchdog may write a document with it. */
#ifndef GPUIPC_JSON_H
#define GPUIPC_JSON_H

#include <stddef.h>
#include <stdint.h>

#include "core/sink.h"

#define GPUIPC_JSON_DEPTH 16

typedef struct gpuipc_json {
    gpuipc_sink *out;
    int depth;
    int count[GPUIPC_JSON_DEPTH]; /* members written at each level */
    int error;                    /* nesting went wrong: the document is invalid */
} gpuipc_json;

/* Starts a document written through out (the caller's, at least 16 KiB). */
void gpuipc_json_init(gpuipc_json *j, gpuipc_sink *out);
void gpuipc_json_object(gpuipc_json *j, const char *key);   /* { */
void gpuipc_json_array(gpuipc_json *j, const char *key);    /* [ */
void gpuipc_json_end(gpuipc_json *j, char close);           /* } or ] */
void gpuipc_json_string(gpuipc_json *j, const char *key, const char *value); /* NULL: null */
void gpuipc_json_int(gpuipc_json *j, const char *key, long long value);
void gpuipc_json_bool(gpuipc_json *j, const char *key, int value);
/* A number with up to 15 significant digits (integers below 10^15 exactly);
 * NaN and infinities, which JSON cannot hold, become null. */
void gpuipc_json_double(gpuipc_json *j, const char *key, double value);
/* An array of n numbers, as gpuipc_json_double writes them, on one line. */
void gpuipc_json_numbers(gpuipc_json *j, const char *key, const double *v, size_t n);

/* Ends the document with a newline and writes out the sink's buffer.
 * Returns 0, or -1 if the nesting was unbalanced or writing failed (errno
 * says why, for a failed write). */
int gpuipc_json_finish(gpuipc_json *j);

#endif
