/* SPDX-License-Identifier: Apache-2.0 */
/* brief.h: --brief, the whole run in one line on standard output, for
 * health checks and CI logs (node-problem-detector plugins, Slurm's
 * HealthCheckProgram): the verdict, the counts and the first cause, with the
 * usual exit status. Everything the run would print (on standard output and
 * standard error, by this process and the consumer it forks) goes to a
 * memory file instead, from which the line is taken at the end. */
#ifndef GPUIPC_BRIEF_H
#define GPUIPC_BRIEF_H

#include <stddef.h>

#include "core/err.h"

#define GPUIPC_BRIEF_LEN 1000 /* the line, at most, without its newline */

typedef struct gpuipc_brief {
    int saved_out; /* the real standard output */
    int saved_err; /* the real standard error, for a failure of --brief itself */
    int mem;       /* the memory file standard output and error now write to */
} gpuipc_brief;

/* Whether argv asks for --brief (before any "--"), for a command line that
 * does not parse: its usage error still takes one line. */
int gpuipc_brief_wanted(int argc, char **argv);

/* Sends standard output and standard error to a memory file. Returns 0, or
 * a negative errno with why (nothing changed). */
int gpuipc_brief_begin(gpuipc_brief *b, gpuipc_err *why);

/* The real standard output while --brief is in force (for a watchdog that
 * must write the one line itself), or -1. */
int gpuipc_brief_fd(void);

/* Puts standard output and error back, and writes the one line for a run
 * that exits with exit_code, taken from what it printed. */
void gpuipc_brief_end(gpuipc_brief *b, int exit_code);

/* This process writes no line at gpuipc_brief_end (a rank of --ranks that
 * took the run's verdict from the rank that gave it, whose line is the
 * run's). */
void gpuipc_brief_quiet(void);

/* For a thread that ends the process itself (--ranks's verdict thread,
 * whose run's thread is stuck): writes the one line for exit_code to the
 * real standard output now, as gpuipc_brief_end would (nothing where
 * --brief is not in force, or gpuipc_brief_quiet was called). */
void gpuipc_brief_now(int exit_code);

/* What a run decided, as data, for its one line: the first failure, named
 * "<side> <scenario> <step>: <reason>", and the first cause ("cause: ...;
 * fix: ..."), each kept by the code that decided it; the first note of
 * each wins. NULL or "" leaves it as it is. */
void gpuipc_brief_note(const char *first_failure, const char *cause);

/* What the line is made of: the run's own last result line (without
 * "result: "), its own last "gpuipc_test: " line (without it), and the
 * notes; "" where there is none. Never text read back from the output. */
typedef struct gpuipc_brief_facts {
    const char *result;
    const char *said;
    const char *first;
    const char *cause;
} gpuipc_brief_facts;

/* The line for a run that exits with exit_code, into out (out_len bytes, no
 * newline): the verdict (the result line, else the program's own line, a
 * SKIP or an error), " | first failure: ..." and " | cause: ..." where there
 * are, and "(exit N)". Never empty. */
void gpuipc_brief_compose(const gpuipc_brief_facts *f, int exit_code, char *out,
                          size_t out_len);

#endif
