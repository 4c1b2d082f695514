/* SPDX-License-Identifier: Apache-2.0 */
/* th_proc.h: what /proc says of this test process: the FDs it holds and
 * those a program it starts inherits, its children; and whether valgrind
 * runs the suites, which leaves some tests out. */
#ifndef GPUIPC_TESTS_TH_PROC_H
#define GPUIPC_TESTS_TH_PROC_H

#include <check.h>
#include <sys/types.h>

/* Returns the number of FDs open in this process. */
int th_fd_count(void);

/* Returns how many FD numbers below limit a program started by th_spawn
 * holds from its start: 0, 1 and 2 (the program holds all three), and every
 * other FD of this process that exec keeps (no FD_CLOEXEC). Under
 * ulimit -n limit, limit minus this many numbers are free to it. */
int th_fds_inherited_below(int limit);

/* Returns the pid of a child of parent (from /proc), or -1. */
pid_t th_child_of(pid_t parent);

/* Adds test to tc unless the suites run under valgrind (make valgrind sets
 * GPUIPC_VALGRIND), which cannot run it, for the reason why: it is then left
 * out, not passed, and a line on stderr names it. make check and make asan
 * run it. */
void th_add_unless_valgrind(TCase *tc, const TTest *test, const char *why);

#endif
