/* SPDX-License-Identifier: Apache-2.0 */
/* log.c: the step log. */
#include "core/log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/progress.h"
#include "core/step.h"
#include "core/watch.h"

/* What --brief reads back: the verdict lines this process wrote. */
static char last_result[1024];
static char last_said[1024];

const char *gpuipc_log_last_result(void)
{
    return last_result;
}

void gpuipc_log_keep_result(const char *text)
{
    snprintf(last_result, sizeof(last_result), "%s", text);
}

const char *gpuipc_log_last_said(void)
{
    return last_said;
}

void gpuipc_log_say(const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    int n = snprintf(line, sizeof(line), "gpuipc_test: ");

    va_start(ap, fmt);
    vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
    va_end(ap);
    gpuipc_log_line(2, line);
}

void gpuipc_log_line(int fd, const char *text)
{
    char line[1024];
    size_t len = strlen(text);
    size_t off = 0;

    gpuipc_watch_checkpoint(); /* the watchdog has the run: nothing more from here */
    if (strncmp(text, "result: ", 8) == 0)
        snprintf(last_result, sizeof(last_result), "%s", text + 8);
    else if (strncmp(text, "gpuipc_test: ", 13) == 0)
        snprintf(last_said, sizeof(last_said), "%s", text + 13);
    gpuipc_progress_clear(); /* a live progress line is not left under it */

    if (len > sizeof(line) - 2)
        len = sizeof(line) - 2;
    memcpy(line, text, len);
    line[len++] = '\n';
    while (off < len) {
        ssize_t n = write(fd, line + off, len - off);

        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return;
        off += (size_t)n;
    }
}

void gpuipc_log_step(const gpuipc_log *log, int level, const char *scenario, unsigned step,
                     uint64_t dur_ns, const char *fmt, ...)
{
    char text[768];
    char line[1024];
    double since = (double)(gpuipc_clock_ns() - log->t0_ns) / 1e6;
    va_list ap;

    if (level > log->level)
        return;
    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    if (dur_ns == GPUIPC_LOG_NO_TIME)
        snprintf(line, sizeof(line), "%10.3f ms  %-8s  %-16s %-8s %s", since,
                 gpuipc_role_name(log->role), scenario ? scenario : "-",
                 step ? gpuipc_step_name(step) : "-", text);
    else
        snprintf(line, sizeof(line), "%10.3f ms  %-8s  %-16s %-8s %s  [%.3f ms]", since,
                 gpuipc_role_name(log->role), scenario ? scenario : "-",
                 step ? gpuipc_step_name(step) : "-", text, (double)dur_ns / 1e6);
    gpuipc_log_line(log->fd, line);
}
