/* json.h: a small streaming JSON writer for reports on stdout: objects,
 * arrays, strings (escaped), integers, booleans and null, with two-space
 * indentation. Keys are given with each member; inside arrays, key is NULL. */
#ifndef GPUIPC_JSON_H
#define GPUIPC_JSON_H

#include <stdint.h>
#include <stdio.h>

#define GPUIPC_JSON_DEPTH 16

typedef struct gpuipc_json {
    FILE *out;
    int depth;
    int count[GPUIPC_JSON_DEPTH]; /* members written at each level */
    int error;                    /* nesting went wrong: the document is invalid */
} gpuipc_json;

void gpuipc_json_init(gpuipc_json *j, FILE *out);
void gpuipc_json_object(gpuipc_json *j, const char *key);   /* { */
void gpuipc_json_array(gpuipc_json *j, const char *key);    /* [ */
void gpuipc_json_end(gpuipc_json *j, char close);           /* } or ] */
void gpuipc_json_string(gpuipc_json *j, const char *key, const char *value); /* NULL: null */
void gpuipc_json_int(gpuipc_json *j, const char *key, long long value);
void gpuipc_json_bool(gpuipc_json *j, const char *key, int value);

/* Ends the document with a newline. Returns 0, or -1 if the nesting was
 * unbalanced or writing failed. */
int gpuipc_json_finish(gpuipc_json *j);

#endif
