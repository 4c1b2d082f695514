/* SPDX-License-Identifier: Apache-2.0 */
/* jschema.h: the tests' one JSON reader, a strict RFC 8259 parser into a
 * tree, and a checker of the part of JSON Schema that
 * docs/result.schema.json uses (type, with "integer" and lists of types;
 * required; properties; additionalProperties: false; items; enum of
 * strings; const of numbers; minimum; anyOf; $ref to #/$defs). Tests
 * only: the program reads no JSON but its own result document, with a
 * scanner of its own (lib/run/doc_scan.c). */
#ifndef GPUIPC_TESTS_JSCHEMA_H
#define GPUIPC_TESTS_JSCHEMA_H

#include <stddef.h>

typedef struct jnode jnode;

/* Parses text, which must be exactly one JSON value (RFC 8259), whitespace
 * aside, into a tree that the caller frees with js_free. Returns NULL with
 * the offset and what was wrong in why. */
jnode *js_parse(const char *text, char *why, size_t len);
void js_free(jnode *n);

/* Returns 1 if js_parse() takes text, or 0 with its reason in why. */
int js_valid(const char *text, char *why, size_t len);

/* Checks doc against schema. Returns 1, or 0 with the first violation and
 * its path ("$.scenarios[0].verdict: ...") in why. */
int js_check(const jnode *schema, const jnode *doc, char *why, size_t len);

/* The member key of object n, or NULL. */
const jnode *js_get(const jnode *n, const char *key);

/* A string node's text, or NULL for any other node. */
const char *js_str(const jnode *n);

/* A number node's value, or NaN for any other node (a missing one too). */
double js_num(const jnode *n);

/* A boolean's value: 1 for true, 0 for false, -1 for anything else. */
int js_bool(const jnode *n);

/* An array's length (0 for any other node), and its element i. */
size_t js_len(const jnode *n);
const jnode *js_at(const jnode *n, size_t i);

#endif
