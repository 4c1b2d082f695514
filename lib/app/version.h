/* SPDX-License-Identifier: Apache-2.0 */
/* version.h: the program's version, in its output and its JSON documents:
 * the one place it is set (CHANGELOG.md says what each one brought), and
 * the commit it was built from. */
#ifndef GPUIPC_APP_VERSION_H
#define GPUIPC_APP_VERSION_H

#define GPUIPC_VERSION "0.2.0"

/* The commit this build comes from: 12 hex digits, "-dirty" after them for
 * a tree with changes not committed, or "unknown". */
const char *gpuipc_version_commit(void);

#endif
