/* SPDX-License-Identifier: Apache-2.0 */
/* helpers.h: what the suites share, one header for them all:
 *   th_spawn.h  running the program under a deadline as a process group
 *   th_proc.h   this process's FDs and children; leaving tests out under valgrind
 *   th_files.h  reading files and result documents, filling a file system, mounts
 *   th_text.h   a line holding two strings; a well-formed XML document
 *   th_drive.h  driving a role in-process: its env, a scenario, raw frames
 *   jschema.h   the one JSON reader, and the result schema's checker */
#ifndef GPUIPC_TESTS_HELPERS_H
#define GPUIPC_TESTS_HELPERS_H

#include <check.h>

#include "jschema.h"
#include "th_drive.h"
#include "th_files.h"
#include "th_proc.h"
#include "th_spawn.h"
#include "th_text.h"

#endif
