/* SPDX-License-Identifier: Apache-2.0 */
/* th_spawn.h: running the program (or a helper built beside the suite) as
 * a process group of its own under a deadline, collecting its output line
 * by line, then reaping or killing and counting what its group left. */
#ifndef GPUIPC_TESTS_TH_SPAWN_H
#define GPUIPC_TESTS_TH_SPAWN_H

#include <stddef.h>
#include <sys/types.h>

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

/* Removes every CK_* variable from this process's environment (as th_spawn
 * does in its child), for a test that starts the program itself. Returns 0,
 * or -1 if memory ran out. */
int th_unset_check_variables(void);

#endif
