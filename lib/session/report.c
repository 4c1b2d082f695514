/* SPDX-License-Identifier: Apache-2.0 */
/* report.c: the end-of-run summary. */
#include "session/report.h"

#include <stdio.h>
#include <string.h>

#include "core/log.h"
#include "core/status.h"
#include "core/units.h"

int gpuipc_report_exit_code(const gpuipc_result *results, size_t n, int consumer_ok)
{
    size_t i, passed = 0, failed = 0;

    for (i = 0; i < n; i++) {
        passed += results[i].status == GPUIPC_PASS;
        failed += results[i].status == GPUIPC_FAIL;
    }
    return gpuipc_status_verdict(passed, failed + !consumer_ok, 0);
}

/* A scenario's word in the summary's table; "-" for one that did not run. */
static const char *status_name(int status)
{
    return status < 0 ? "-" : gpuipc_status_word(status);
}

static void direction(const gpuipc_check *k, char *buf, size_t len)
{
    if (k->words == 0)
        snprintf(buf, len, "not checked");
    else
        snprintf(buf, len, "%llu/%llu bad", (unsigned long long)k->mismatches,
                 (unsigned long long)k->words);
}

/* The first result before i (or i itself) whose FAIL or SKIP reason is
 * results[i]'s, and how many results share it. */
/* Whether a scenario of status has a reason to print under its row. */
static int has_reason(int status)
{
    return status == GPUIPC_FAIL || status == GPUIPC_SKIP || status == GPUIPC_STOPPED;
}

static size_t first_with_reason(const gpuipc_result *results, size_t n, size_t i, size_t *count)
{
    size_t j, first = i;

    *count = 0;
    for (j = 0; j < n; j++) {
        if (!has_reason(results[j].status) ||
            strcmp(results[j].reason, results[i].reason) != 0)
            continue;
        if (*count == 0)
            first = j;
        (*count)++;
    }
    return first;
}

/* The cause the facts name, under its reason. */
static void cause_line(int fd, int w, const gpuipc_result *r)
{
    char line[1024], cause[GPUIPC_ERR_LEN];

    if (r->cause.what[0] == '\0')
        return;
    snprintf(line, sizeof(line), "  %*s %s", w, "",
             gpuipc_cause_line(&r->cause, cause, sizeof(cause)));
    gpuipc_log_line(fd, line);
}

const char *gpuipc_report_name(const gpuipc_result *r, char *buf, size_t len)
{
    if (r->group != NULL && r->group[0] != '\0' && r->gpu >= 0 && r->peer_gpu < 0)
        snprintf(buf, len, "%s on GPU %d", r->mech, r->gpu);
    else
        snprintf(buf, len, "%s", r->mech);
    return buf;
}

/* Below the table: each reason that stopped two or more scenarios, once,
 * after the list of the scenarios it stopped. */
static void shared_reasons(int fd, const gpuipc_result *results, size_t n)
{
    char name[96];

    char line[2048];
    size_t i, j, count, used;

    for (i = 0; i < n; i++) {
        if ((results[i].status != GPUIPC_FAIL && results[i].status != GPUIPC_SKIP) ||
            first_with_reason(results, n, i, &count) != i || count < 2)
            continue;
        used = (size_t)snprintf(line, sizeof(line), "  the same cause for %zu scenarios (", count);
        for (j = i; j < n && used < sizeof(line); j++)
            if (has_reason(results[j].status) &&
                strcmp(results[j].reason, results[i].reason) == 0)
                used += (size_t)snprintf(line + used, sizeof(line) - used, "%s%s",
                                         j == i ? "" : ", ",
                                         gpuipc_report_name(&results[j], name, sizeof(name)));
        if (used < sizeof(line))
            snprintf(line + used, sizeof(line) - used, "): %s", results[i].reason);
        gpuipc_log_line(fd, line);
        cause_line(fd, 2, &results[i]);
    }
}

gpuipc_counts gpuipc_report_count(const gpuipc_result *results, size_t n)
{
    gpuipc_counts c = {0, 0, 0, 0};
    size_t i;

    for (i = 0; i < n; i++) {
        c.passed += results[i].status == GPUIPC_PASS;
        c.failed += results[i].status == GPUIPC_FAIL;
        c.skipped += results[i].status == GPUIPC_SKIP;
        c.stopped += results[i].status == GPUIPC_STOPPED;
    }
    return c;
}

void gpuipc_report_summary(int fd, const char *where, const gpuipc_result *results, size_t n,
                           const char *const *notes, const char *consumer, int exit_code,
                           uint64_t wall_ns)
{
    char line[1024], size[32], fwd[48], back[48], stopped[32] = "";
    gpuipc_counts counts = gpuipc_report_count(results, n);
    size_t i, count;
    int w = (int)strlen("scenario");

    /* The first column is as wide as the longest scenario's name. */
    for (i = 0; i < n; i++)
        if ((int)strlen(results[i].mech) > w)
            w = (int)strlen(results[i].mech);
    snprintf(line, sizeof(line), "summary: %s", where);
    gpuipc_log_line(fd, line);
    snprintf(line, sizeof(line), "  %-*s %-6s %-10s %-22s %-22s %s", w, "scenario", "result",
             "size", "producer->consumer", "consumer->producer", "time");
    gpuipc_log_line(fd, line);
    for (i = 0; i < n; i++) {
        const gpuipc_result *r = &results[i];

        /* A run over several GPUs: each GPU's rows under its heading. */
        if (r->group != NULL && r->group[0] != '\0' &&
            (i == 0 || results[i - 1].group == NULL ||
             strcmp(results[i - 1].group, r->group) != 0)) {
            snprintf(line, sizeof(line), " %s", r->group);
            gpuipc_log_line(fd, line);
        }
        direction(&r->forward, fwd, sizeof(fwd));
        direction(&r->backward, back, sizeof(back));
        count = 0;
        if (has_reason(r->status))
            first_with_reason(results, n, i, &count);
        /* A scenario that never ran (skipped, refused before it started) has
         * no size, checks or time to show. */
        if (r->status == GPUIPC_SKIP || r->status < 0 || r->ns == 0)
            snprintf(line, sizeof(line), "  %-*s %s%s", w, r->mech, status_name(r->status),
                     count >= 2 ? "   (a cause shared with others: below)" : "");
        else
            snprintf(line, sizeof(line), "  %-*s %-6s %-10s %-22s %-22s %.1f ms%s", w, r->mech,
                     status_name(r->status), gpuipc_units_format_size(r->size, size, sizeof(size)),
                     fwd, back, (double)r->ns / 1e6, count >= 2 ? " (cause below)" : "");
        gpuipc_log_line(fd, line);
        if (r->detail[0] != '\0') {
            snprintf(line, sizeof(line), "  %*s %s", w, "", r->detail);
            gpuipc_log_line(fd, line);
        }
        if (count == 1) {
            snprintf(line, sizeof(line), "  %*s %s", w, "", r->reason);
            gpuipc_log_line(fd, line);
            cause_line(fd, w, r);
        } else if (r->status < 0) {
            snprintf(line, sizeof(line), "  %*s %s", w, "", r->reason[0] != '\0' ? r->reason
                     : "not run (not selected by CK_RUN_SUITE/CK_RUN_CASE)");
            gpuipc_log_line(fd, line);
        }
    }
    shared_reasons(fd, results, n);
    for (i = 0; notes != NULL && notes[i] != NULL; i++)
        gpuipc_log_line(fd, notes[i]);
    snprintf(line, sizeof(line), "consumer: %s", consumer);
    gpuipc_log_line(fd, line);
    if (counts.stopped > 0)
        snprintf(stopped, sizeof(stopped), ", %u stopped", counts.stopped);
    snprintf(line, sizeof(line), "result: %s: %u passed, %u failed, %u skipped%s, in %.2f s "
             "(exit %d)",
             gpuipc_exit_word(exit_code), counts.passed, counts.failed, counts.skipped, stopped, (double)wall_ns / 1e9,
             exit_code);
    gpuipc_log_line(fd, line);
}
