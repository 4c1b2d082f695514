/* SPDX-License-Identifier: Apache-2.0 */
/* procstat.h: a process's state and start time, read from /proc/<pid>/stat
 * with system calls only (a watchdog reads them). */
#ifndef GPUIPC_PROCSTAT_H
#define GPUIPC_PROCSTAT_H

#include <stdint.h>
#include <sys/types.h>

/* The state letter of process pid, from /proc/<pid>/stat: 'R', 'S', 'D',
 * 'T' (stopped by a signal: SIGSTOP, SIGTSTP, job control), 't' (stopped
 * by a debugger), 'Z', ...; 0 where it cannot be read (no such process, no
 * FD). System calls only, for a watchdog. */
char gpuipc_proc_state(pid_t pid);

/* When process pid started, in clock ticks after boot (/proc/<pid>/stat's
 * starttime): with the pid, what names one process for as long as the
 * machine runs, since a pid is used again once its process has ended. 0
 * where it cannot be read. System calls only. */
uint64_t gpuipc_proc_start_ticks(pid_t pid);

/* Whether process pid is stopped ('T' or 't'): it runs no further until
 * SIGCONT or its debugger lets it go. */
int gpuipc_proc_is_stopped(pid_t pid);

#endif
