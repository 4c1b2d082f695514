/* report.c: the end-of-run summary. */
#include "session/report.h"

#include <stdio.h>
#include <string.h>

#include "core/log.h"
#include "core/units.h"

int gpuipc_report_exit_code(const gpuipc_result *results, size_t n, int consumer_ok)
{
    size_t i, passed = 0, failed = 0;

    for (i = 0; i < n; i++) {
        passed += results[i].status == GPUIPC_PASS;
        failed += results[i].status == GPUIPC_FAIL;
    }
    if (failed > 0 || !consumer_ok)
        return GPUIPC_FAIL;
    return passed > 0 ? GPUIPC_PASS : GPUIPC_SKIP;
}

static const char *status_name(int status)
{
    switch (status) {
    case GPUIPC_PASS:
        return "PASS";
    case GPUIPC_FAIL:
        return "FAIL";
    case GPUIPC_SKIP:
        return "SKIP";
    default:
        return "-";
    }
}

static void direction(const gpuipc_check *k, char *buf, size_t len)
{
    if (k->words == 0)
        snprintf(buf, len, "not checked");
    else
        snprintf(buf, len, "%llu/%llu bad", (unsigned long long)k->mismatches,
                 (unsigned long long)k->words);
}

void gpuipc_report_summary(int fd, const char *where, const gpuipc_result *results, size_t n,
                           const char *const *notes, const char *consumer, int exit_code,
                           uint64_t wall_ns)
{
    char line[1024], size[32], fwd[48], back[48];
    size_t i, counts[3] = {0, 0, 0};

    snprintf(line, sizeof(line), "summary: %s", where);
    gpuipc_log_line(fd, line);
    snprintf(line, sizeof(line), "  %-16s %-6s %-10s %-22s %-22s %s", "scenario", "result", "size",
             "producer->consumer", "consumer->producer", "time");
    gpuipc_log_line(fd, line);
    for (i = 0; i < n; i++) {
        const gpuipc_result *r = &results[i];

        counts[0] += r->status == GPUIPC_PASS;
        counts[1] += r->status == GPUIPC_FAIL;
        counts[2] += r->status == GPUIPC_SKIP;
        direction(&r->forward, fwd, sizeof(fwd));
        direction(&r->backward, back, sizeof(back));
        /* A scenario that never ran (skipped, refused before it started) has
         * no size, checks or time to show. */
        if (r->status == GPUIPC_SKIP || r->status < 0 || r->ns == 0)
            snprintf(line, sizeof(line), "  %-16s %s", r->mech, status_name(r->status));
        else
            snprintf(line, sizeof(line), "  %-16s %-6s %-10s %-22s %-22s %.1f ms", r->mech,
                     status_name(r->status), gpuipc_units_format_size(r->size, size, sizeof(size)),
                     fwd, back, (double)r->ns / 1e6);
        gpuipc_log_line(fd, line);
        if (r->status == GPUIPC_FAIL || r->status == GPUIPC_SKIP) {
            snprintf(line, sizeof(line), "                   %s", r->reason);
            gpuipc_log_line(fd, line);
        } else if (r->status < 0) {
            gpuipc_log_line(fd, "                   not run (not selected by CK_RUN_SUITE/CK_RUN_CASE)");
        }
    }
    for (i = 0; notes != NULL && notes[i] != NULL; i++)
        gpuipc_log_line(fd, notes[i]);
    snprintf(line, sizeof(line), "consumer: %s", consumer);
    gpuipc_log_line(fd, line);
    snprintf(line, sizeof(line), "result: %s: %zu passed, %zu failed, %zu skipped, in %.2f s "
             "(exit %d)",
             exit_code == GPUIPC_PASS ? "PASS" : exit_code == GPUIPC_SKIP ? "SKIP" : "FAIL",
             counts[0], counts[1], counts[2], (double)wall_ns / 1e9, exit_code);
    gpuipc_log_line(fd, line);
}
