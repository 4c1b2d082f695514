/* SPDX-License-Identifier: Apache-2.0 */
/* proc.h: waiting for a child under a deadline, describing how it ended,
 * and the host facts a role checks before it allocates. */
#ifndef GPUIPC_PROC_H
#define GPUIPC_PROC_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/err.h"

/* First thing in main: gives each of FD 0, 1 and 2 that is closed an end
 * of a pipe of its own, so that no file or socket the program opens later
 * takes its number (a protocol socket at FD 1 would get the step log): 0 the
 * read end of a pipe with no writer (end of file), 1 and 2 the write end of
 * one with no reader (EPIPE: a closed output, which the log takes as such).
 * /dev/null is not used: a container may lack it, or have something else
 * there. And ignores SIGPIPE: a closed output pipe ends the printing, never
 * the run. Returns the number of FDs it occupied, or -1 if it could not
 * (then the program must not go on). */
int gpuipc_proc_hold_std_fds(void);

/* The memory mappings this process has (lines of /proc/self/maps) and the
 * most it may have (vm.max_map_count). Returns 0, or -1 where either cannot
 * be read. */
int gpuipc_proc_map_count(unsigned *now, unsigned *max);

/* How long gpuipc_proc_wait still waits once the run is stopped: a little
 * longer than a stopped process's own watchdog gives it (1.5 s), so that one
 * that is stuck ends itself, saying where, rather than being killed. */
#define GPUIPC_PROC_STOP_GRACE_NS (1800ull * 1000000ull)

/* Waits for child pid until deadline_ns, or, once the stop test (below)
 * says the run is stopped, GPUIPC_PROC_STOP_GRACE_NS at the most from then;
 * then sends it SIGKILL and waits up to 5 s more. Stores the wait status in
 * *status. Returns 0 if it exited in time, 1 if it had to be killed, 2 if
 * it had to be killed and was stopped then (SIGSTOP, job control, a
 * debugger: it could not have exited), or a negative errno (err says why). */
int gpuipc_proc_wait(pid_t pid, uint64_t deadline_ns, int *status, gpuipc_err *err);

/* The test of whether the run is stopped (non-zero: by that signal), for
 * gpuipc_proc_wait; NULL: none. */
void gpuipc_proc_set_stop_test(int (*stopped)(void));

/* Asks a child forked for the question: it runs fn(arg, answer) and writes
 * the len bytes of answer (at most PIPE_BUF: one atomic write) back through
 * a pipe. Waits for the answer and for the child until deadline_ns, then
 * kills it. For a question that must be asked in a process of its own (the
 * caller has not started CUDA, and the child's CUDA is its own). Returns 0
 * with answer filled, or a negative errno with err: the pipe or the fork
 * failed, or no whole answer came in time. */
int gpuipc_proc_ask_child(void (*fn)(void *arg, void *answer), void *arg, void *answer,
                          size_t len, uint64_t deadline_ns, gpuipc_err *err);

/* Writes "exited 0", "exited 1" or "killed by signal 9 (SIGKILL)" for a wait
 * status into buf and returns buf. */
char *gpuipc_proc_describe(int status, char *buf, size_t len);

/* Returns MemAvailable from /proc/meminfo in bytes, or 0 if unknown. */
uint64_t gpuipc_proc_mem_available(void);

/* This process's peak resident set (VmHWM of /proc/self/status), in bytes;
 * 0 if it cannot be read. */
uint64_t gpuipc_proc_hwm(void);

/* The CUDA driver's pool for interprocess events: a file it creates in
 * /dev/shm for a process that exports one, and maps (and keeps open) for
 * the life of every process that uses one, whatever events come and go.
 * The accounting leaves it out, as it leaves out the context's own
 * resources; an event that is not destroyed is still in the ledger. */
#define GPUIPC_DRIVER_POOL_PREFIX "/dev/shm/cuda.shm."

/* Whether path (an FD's or a mapping's target) is the driver's event pool. */
int gpuipc_proc_is_driver_pool(const char *path);

/* This process's shared memory that is resident (RssShmem of
 * /proc/self/status: memfd, tmpfs and System V pages mapped here), less the
 * driver's event pool (its mappings' pages present here, by /proc/self/maps
 * and /proc/self/pagemap; by their Rss in /proc/self/smaps where pagemap
 * cannot be read), in bytes,
 * into *bytes. Returns 0, or -ENOENT where the kernel does not report it. */
int gpuipc_proc_shmem(uint64_t *bytes);

/* Parses a namespace link's text, "<type>:[<inode>]" (as readlink of
 * /proc/self/ns/<type> gives it), into *inode. Returns 0 or -EINVAL. */
int gpuipc_proc_parse_ns(const char *link, const char *type, uint64_t *inode);

/* Reads the inode of this process's PID namespace into *inode. Returns 0 or
 * a negative errno with why. */
int gpuipc_proc_pid_ns(uint64_t *inode, gpuipc_err *err);

/* Starts the peak over at the current resident set (writes 5 to
 * /proc/self/clear_refs, Linux 4.0 and later). Returns 0 or -errno. */
int gpuipc_proc_reset_hwm(void);

#endif
