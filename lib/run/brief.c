/* SPDX-License-Identifier: Apache-2.0 */
/* brief.c: --brief (brief.h): the one line, from the run's data. */
#include "run/brief.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/log.h"
#include "core/status.h"


int gpuipc_brief_wanted(int argc, char **argv)
{
    int i;

    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0)
            return 0;
        if (strcmp(argv[i], "--brief") == 0)
            return 1;
    }
    return 0;
}

/* What --brief keeps of this process, in one place and not on the caller's
 * gpuipc_brief: the watchdog thread reads out without a lock (it writes the
 * one line itself at the deadline), and the notes come from the code that
 * decided them (the producer's end and summary), which holds no gpuipc_brief.
 * Set by gpuipc_brief_begin and gpuipc_brief_note; out is put back by
 * gpuipc_brief_end. */
static struct {
    int out;                         /* the real standard output, or -1 */
    char first[GPUIPC_BRIEF_LEN];    /* the first failure noted */
    char cause[GPUIPC_BRIEF_LEN];    /* the first cause noted */
    int quiet;                       /* no line from this process */
} state = {.out = -1};

void gpuipc_brief_quiet(void)
{
    state.quiet = 1;
}

/* The line for exit_code, from the run's data. */
static void compose_now(int exit_code, char *line, size_t len)
{
    gpuipc_brief_facts f = {gpuipc_log_last_result(), gpuipc_log_last_said(), state.first,
                            state.cause};

    gpuipc_brief_compose(&f, exit_code, line, len);
}

void gpuipc_brief_now(int exit_code)
{
    char line[GPUIPC_BRIEF_LEN];

    if (state.out < 0 || state.quiet)
        return;
    fflush(stdout);
    fflush(stderr);
    compose_now(exit_code, line, sizeof(line));
    gpuipc_log_line(state.out, line);
}

int gpuipc_brief_fd(void)
{
    return state.out;
}

int gpuipc_brief_begin(gpuipc_brief *b, gpuipc_err *why)
{
    int e;

    b->saved_out = b->saved_err = b->mem = -1;
    fflush(stdout);
    fflush(stderr);
    if ((b->mem = memfd_create("gpuipc-brief", MFD_CLOEXEC)) < 0)
        return gpuipc_err_set(why, -errno, "--brief: memfd_create: %s", strerror(errno));
    if ((b->saved_out = fcntl(1, F_DUPFD_CLOEXEC, 3)) < 0 || (b->saved_err = fcntl(2, F_DUPFD_CLOEXEC, 3)) < 0 ||
        dup2(b->mem, 1) < 0 || dup2(b->mem, 2) < 0) {
        e = errno;
        if (b->saved_out >= 0)
            dup2(b->saved_out, 1);
        if (b->saved_err >= 0)
            dup2(b->saved_err, 2);
        close(b->mem);
        if (b->saved_out >= 0)
            close(b->saved_out);
        if (b->saved_err >= 0)
            close(b->saved_err);
        b->saved_out = b->saved_err = b->mem = -1;
        return gpuipc_err_set(why, -e, "--brief: dup2: %s", strerror(e));
    }
    state.out = b->saved_out;
    return 0;
}

void gpuipc_brief_note(const char *first_failure, const char *cause)
{
    if (state.first[0] == '\0' && first_failure != NULL)
        snprintf(state.first, sizeof(state.first), "%s", first_failure);
    if (state.cause[0] == '\0' && cause != NULL)
        snprintf(state.cause, sizeof(state.cause), "%s", cause);
}

void gpuipc_brief_compose(const gpuipc_brief_facts *f, int exit_code, char *out,
                          size_t out_len)
{
    char verdict[GPUIPC_BRIEF_LEN + 32], tail[32];
    size_t used;

    if (f->result[0] != '\0')
        snprintf(verdict, sizeof(verdict), "%s", f->result);
    else if (f->said[0] != '\0')
        snprintf(verdict, sizeof(verdict), "%s%s%s",
                 strncmp(f->said, "SKIP: ", 6) == 0 ? "" : gpuipc_exit_word(exit_code),
                 strncmp(f->said, "SKIP: ", 6) == 0 ? "" : ": ", f->said);
    else
        snprintf(verdict, sizeof(verdict), "%s: the run printed no result line",
                 gpuipc_exit_word(exit_code));
    used = (size_t)snprintf(out, out_len, "%s", verdict);
    if (f->first[0] != '\0' && used < out_len && strstr(verdict, f->first) == NULL)
        used += (size_t)snprintf(out + used, out_len - used, " | first failure: %s", f->first);
    if (f->cause[0] != '\0' && used < out_len && strstr(verdict, f->cause) == NULL)
        used += (size_t)snprintf(out + used, out_len - used, " | %s", f->cause);
    snprintf(tail, sizeof(tail), "(exit %d)", exit_code);
    if (strstr(out, tail) == NULL && used < out_len)
        used += (size_t)snprintf(out + used, out_len - used, " %s", tail);
    (void)used;
}

void gpuipc_brief_end(gpuipc_brief *b, int exit_code)
{
    char line[GPUIPC_BRIEF_LEN];

    if (b->mem < 0)
        return;
    fflush(stdout);
    fflush(stderr);
    compose_now(exit_code, line, sizeof(line));
    state.out = -1;
    dup2(b->saved_out, 1);
    dup2(b->saved_err, 2);
    close(b->saved_out);
    close(b->saved_err);
    close(b->mem);
    b->saved_out = b->saved_err = b->mem = -1;
    if (!state.quiet)
        gpuipc_log_line(1, line);
}
