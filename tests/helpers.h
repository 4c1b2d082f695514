/* SPDX-License-Identifier: Apache-2.0 */
/* helpers.h: what the suites share: FD counting, running the program as a
 * real process group under a deadline, and sending raw frames. */
#ifndef GPUIPC_TESTS_HELPERS_H
#define GPUIPC_TESTS_HELPERS_H

#include <check.h>
#include <stddef.h>

#include "jschema.h"
#include "session/producer.h"
#include <stdint.h>
#include <sys/types.h>

/* Runs scenario index of mech over size bytes as the producer, on no
 * device, with the consumer at the other end of w, into res. */
void th_scenario(gpuipc_env *env, gpuipc_wire *w, const gpuipc_mech *mech, uint64_t size,
                 unsigned index, gpuipc_result *res);

/* Sets env up for a role driven alone by a test: zeroed, the log at
 * --quiet into a memfd of its own (name; read it back with pread), waits
 * bounded by timeout_ns. */
void th_env(gpuipc_env *env, int role, const char *name, uint64_t timeout_ns);

/* Returns the number of FDs open in this process. */
int th_fd_count(void);

/* Returns how many FD numbers below limit a program started by th_spawn
 * holds from its start: 0, 1 and 2 (the program holds all three), and every
 * other FD of this process that exec keeps (no FD_CLOEXEC). Under
 * ulimit -n limit, limit minus this many numbers are free to it. */
int th_fds_inherited_below(int limit);

/* The outcome of running the program. */
typedef struct th_run {
    int status;          /* wait status of the program (the producer) */
    int finished;        /* it exited before the deadline */
    double seconds;      /* from start to its exit */
    int leftover;        /* processes of its group that outlived the grace period */
    char out[1 << 16];   /* stdout and stderr together, NUL-terminated */
    size_t len;
} th_run;

/* Called for every complete output line; pgid is the run's process group. */
typedef void (*th_line_fn)(const char *line, pid_t pgid, void *arg);

/* Returns the program under test: $GPUIPC_TEST_BIN, or ./gpuipc_test. */
const char *th_program(void);

/* The path of name beside this suite's binary (build/tests/NAME): the
 * helpers built with it, such as wrap. A static buffer, one per call site
 * reuse: copy it to keep two. */
const char *th_beside(const char *name);

/* Runs the program with args (NULL-terminated, without argv[0]) and the
 * extra environment entries in env ("NAME=value", NULL-terminated, may be
 * NULL) in a new process group, collecting its output, until it exits or
 * timeout_s passes (then the group is killed). Afterwards it allows
 * grace_s for the rest of the group to exit, then kills and counts what is
 * left. Returns 0, or -1 if the run could not be started. */
int th_spawn(th_run *r, const char *const *args, const char *const *env, double timeout_s,
             double grace_s, th_line_fn on_line, void *arg);

/* Runs file instead of the program, in the same way as th_spawn(). The
 * child starts without any CK_* variable of this process (th_spawn() too);
 * entries in env are applied after that, so they may set CK_* ones. */
int th_spawn_file(th_run *r, const char *file, const char *const *args, const char *const *env,
                  double timeout_s, double grace_s, th_line_fn on_line, void *arg);

/* n runs of the program at once, for suites of many slow cases: run i with
 * args[i], env[i] (NULL: none) and on_line[i] (NULL: none, called with
 * arg[i]), each as th_spawn() does, in a process of its own, into runs[i],
 * which must come from th_runs_alloc (the processes share it). Returns 0,
 * or -1 if one could not be started. */
th_run *th_runs_alloc(size_t n);
void th_runs_free(th_run *runs, size_t n);
int th_spawn_all(th_run *runs, size_t n, const char *const *const *args,
                 const char *const *const *env, double timeout_s, double grace_s,
                 th_line_fn const *on_line, void *const *arg);

/* Returns 1 if the program exited with code. */
int th_exited(const th_run *r, int code);

/* Sends len raw bytes and nfds FDs in one sendmsg(). Returns its result. */
ssize_t th_send_raw(int sock, const void *buf, size_t len, const int *fds, int nfds);

/* Returns the pid of a child of parent (from /proc), or -1. */
pid_t th_child_of(pid_t parent);

/* Returns 1 if one line of text contains both a and b. */
int th_line_has(const char *text, const char *a, const char *b);

/* Checks that the n bytes at text are one well-formed XML document in
 * UTF-8: an XML declaration first, then one root element with its elements
 * properly nested and closed, attribute values quoted, no control character
 * (NUL included), and '&' only in the five predefined entities or a
 * character reference. No DTD is read (a DOCTYPE is rejected). Returns 1,
 * or 0 with the offset and what was wrong in why (len bytes). */
int th_xml_valid(const char *text, size_t n, char *why, size_t len);

/* Removes every CK_* variable from this process's environment (as th_spawn
 * does in its child), for a test that starts the program itself. Returns 0,
 * or -1 if memory ran out. */
int th_unset_check_variables(void);

/* Reads the whole file at path. Returns its bytes with a NUL after them
 * (which the caller frees) and their number in *n, or NULL with errno set. */
char *th_read_file(const char *path, size_t *n);

/* Adds test to tc unless the suites run under valgrind (make valgrind sets
 * GPUIPC_VALGRIND), which cannot run it, for the reason why: it is then left
 * out, not passed, and a line on stderr names it. make check and make asan
 * run it. */
void th_add_unless_valgrind(TCase *tc, const TTest *test, const char *why);

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

/* The result document at path, parsed, after it held to
 * docs/result.schema.json (read from the source tree); the caller frees it
 * with js_free. NULL with why where it is missing, does not parse or is not
 * the schema's. */
jnode *th_result_doc(const char *path, char *why, size_t len);

#endif
