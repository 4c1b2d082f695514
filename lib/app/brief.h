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

/* Puts standard output and error back, and writes the one line for a run
 * that exits with exit_code, taken from what it printed. */
void gpuipc_brief_end(gpuipc_brief *b, int exit_code);

/* The line for output text (len bytes) and exit_code, into out (out_len
 * bytes, no newline): the last "result: " line (or the program's last own
 * "gpuipc_test: " line, a SKIP or an error), with the first "cause: " line
 * after " | " where there is one, and "(exit N)". Never empty. */
void gpuipc_brief_compose(const char *text, size_t len, int exit_code, char *out,
                          size_t out_len);

#endif
