/* SPDX-License-Identifier: Apache-2.0 */
/* th_files.h: files and file systems for the suites: reading a file whole
 * or looking for text in it, reading and schema-checking a result document,
 * removing a test's directory, filling a file system, and a private mount
 * namespace to mount a small one in. */
#ifndef GPUIPC_TESTS_TH_FILES_H
#define GPUIPC_TESTS_TH_FILES_H

#include <stddef.h>

#include "jschema.h"

/* Reads the whole file at path. Returns its bytes with a NUL after them
 * (which the caller frees) and their number in *n, or NULL with errno set. */
char *th_read_file(const char *path, size_t *n);

/* Returns 1 if the file at path can be read and holds text, else 0. */
int th_file_has(const char *path, const char *text);

/* Removes dir and everything below it, staying on dir's file system (a
 * file system mounted inside is left alone), going on past what cannot be
 * removed. */
void th_remove_tree(const char *dir);

/* The result document at path, parsed, after it held to
 * docs/result.schema.json (read from the source tree); the caller frees it
 * with js_free. NULL with why where it is missing, does not parse or is not
 * the schema's. */
jnode *th_result_doc(const char *path, char *why, size_t len);

/* Whether this process may make a private mount namespace and mount a
 * tmpfs in it (tried in a child, which then exits; not in a chroot, whose
 * root is no mount point); why not into why. */
int th_mounts_work(char *why, size_t len);

/* Puts this process (a Check test's own: one per test) in a private mount
 * namespace, nothing propagating back out. Returns 0, or -1 with why. */
int th_private_mounts(char *why, size_t len);

/* Writes zeros to path (created) until its file system is full. Returns 0,
 * or -1 (errno set) where path cannot be created. */
int th_fill(const char *path);

#endif
