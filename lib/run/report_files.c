/* SPDX-License-Identifier: Apache-2.0 */
/* report_files.c: --prom FILE and --junit FILE (report_files.h). */
#include "run/report_files.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/log.h"
#include "core/names.h"
#include "core/outfile.h"
#include "core/units.h"
#include "run/junit.h"
#include "run/prom.h"
#include "session/report.h"
#include "wire/wire.h"

static const struct {
    const char *option;
    int (*render)(int fd, const gpuipc_outcome *oc);
} kinds[GPUIPC_FILE_COUNT] = {
    [GPUIPC_FILE_PROM] = {"--prom", gpuipc_prom_write},
    [GPUIPC_FILE_JUNIT] = {"--junit", gpuipc_junit_write},
};

/* What the fleet files keep of this process, set up before the run and
 * read by the watchdog at the deadline without a lock: each file, checked
 * before the run (dirfd -1: not given, or refused), and the driver's
 * version in words ("" before it is known), which the watchdog cannot ask
 * for itself. */
static struct {
    gpuipc_outfile files[GPUIPC_FILE_COUNT];
    char driver[128];
} state = {.files = {{.dirfd = -1}, {.dirfd = -1}}};

static const char *path_of(const gpuipc_doc_program *o, int which)
{
    return which == GPUIPC_FILE_PROM ? o->prom_path : o->junit_path;
}

int gpuipc_files_wanted(const gpuipc_doc_program *o)
{
    return o->prom_path != NULL || o->junit_path != NULL;
}

/* No FD was free to check file which with: every fleet file given is made
 * to claim nothing (an earlier run's pass must not stand for this one),
 * and err says so. */
static void void_all(const gpuipc_doc_program *o, int which, gpuipc_err *err)
{
    int k, failed = 0;

    for (k = 0; k < GPUIPC_FILE_COUNT; k++) {
        if (path_of(o, k) == NULL)
            continue;
        if (state.files[k].dirfd >= 0)
            failed |= gpuipc_outfile_void(&state.files[k]) < 0;
        else
            failed |= gpuipc_outfile_void_path(path_of(o, k)) < 0;
        gpuipc_outfile_close(&state.files[k]);
    }
    gpuipc_err_prefix(err, "%s %s", kinds[which].option, path_of(o, which));
    if (strlen(err->msg) + 120 < sizeof(err->msg))
        strcat(err->msg, failed ? "; not every file given could be emptied: one may still "
                                  "say what an earlier run said"
                                : "; every file given was emptied (or removed) instead: none "
                                  "claims anything (raise ulimit -n)");
}

int gpuipc_files_check(const gpuipc_doc_program *o, gpuipc_err *err)
{
    int k, rc;

    for (k = 0; k < GPUIPC_FILE_COUNT; k++) {
        if (path_of(o, k) == NULL)
            continue;
        if ((rc = gpuipc_outfile_check(&state.files[k], path_of(o, k), err)) < 0) {
            if (rc == -EMFILE || rc == -ENFILE)
                void_all(o, k, err);
            else
                gpuipc_err_prefix(err, "%s %s", kinds[k].option, path_of(o, k));
            return rc;
        }
    }
    return 0;
}

void gpuipc_files_drop(void)
{
    int k;

    for (k = 0; k < GPUIPC_FILE_COUNT; k++)
        gpuipc_outfile_close(&state.files[k]);
}

void gpuipc_files_prepare(const char *driver)
{
    if (state.driver[0] == '\0' && driver != NULL)
        snprintf(state.driver, sizeof(state.driver), "%s", driver);
}

/* Renders oc into file which. With err NULL, system calls only (the
 * watchdog). Where the content cannot be written whole and empty is set, an
 * empty file is put in place instead (it claims nothing). Returns 0, or -1
 * (err says why: the step is the caller's to add). */
static int put(int which, const gpuipc_outcome *oc, int empty, gpuipc_err *err)
{
    gpuipc_outfile *f = &state.files[which];
    int fd, rc;

    if (f->dirfd < 0)
        return 0;
    if ((fd = gpuipc_outfile_open(f, err)) < 0) {
        /* No new content: what a run before this one wrote must not stand
         * for this one's (at the start), so the file is made to claim
         * nothing. */
        if (empty) {
            int v = gpuipc_outfile_void(f);

            if (err != NULL && strlen(err->msg) + 96 < sizeof(err->msg))
                strcat(err->msg, v == 0 ? "; the file was emptied (or removed) instead: it "
                                          "claims nothing"
                                        : "; nor could it be emptied: it is as it was");
        }
        return -1;
    }
    rc = kinds[which].render(fd, oc);
    if (rc < 0 && f->in_place)
        (void)!ftruncate(fd, 0); /* in place: no part of a verdict may stay */
    if (rc < 0 && empty && ftruncate(fd, 0) == 0) {
        int replaced;

        close(fd);
        replaced = gpuipc_outfile_commit(f, NULL) == 0 || gpuipc_outfile_void(f) == 0;
        if (err != NULL)
            gpuipc_err_sys(err, "write", -rc, "write: %s (%s); %s", strerror(-rc),
                           gpuipc_errno_name(-rc), replaced ? "an empty file took its place"
                           : "nor could an empty file take its place: the file is as it was");
        return -1;
    }
    if (close(fd) < 0 && rc == 0)
        rc = -errno;
    if (rc < 0) {
        gpuipc_outfile_abort(f);
        if (err != NULL)
            gpuipc_err_sys(err, "write", -rc, "write: %s (%s)", strerror(-rc),
                           gpuipc_errno_name(-rc));
        return -1;
    }
    return gpuipc_outfile_commit(f, err) < 0 ? -1 : 0;
}

/* "--prom FILE: <step>: <call>: " in front of err's reason, where the
 * reason does not name its call already. */
static void name_it(gpuipc_err *err, const gpuipc_doc_program *o, int which,
                    const char *step)
{
    char call[GPUIPC_ERR_CALL_LEN + 48] = "";

    if (err->call[0] != '\0' && strncmp(err->msg, err->call, strlen(err->call)) != 0)
        snprintf(call, sizeof(call), " (%s: %s)", err->call,
                 err->errnum ? gpuipc_errno_name(err->errnum) : "?");
    gpuipc_err_prefix(err, "%s %s: %s", kinds[which].option, path_of(o, which), step);
    if (call[0] != '\0' && strlen(err->msg) + strlen(call) < sizeof(err->msg))
        strcat(err->msg, call);
}

/* What every outcome of this process has: the program, who and where. */
static void outcome_base(gpuipc_outcome *oc, const gpuipc_doc_program *o, const char *role)
{
    memset(oc, 0, sizeof(*oc));
    oc->version = o->version;
    oc->commit = o->commit;
    oc->protocol = GPUIPC_WIRE_VERSION;
    oc->mode = o->mode;
    oc->role = role;
    oc->who = gpuipc_runinfo_get();
    oc->driver = state.driver[0] != '\0' ? state.driver : NULL;
}

void gpuipc_files_begin(const gpuipc_doc_program *o)
{
    gpuipc_files_begin_as(o, o->connect != NULL ? "consumer" : "producer");
}

void gpuipc_files_begin_as(const gpuipc_doc_program *o, const char *role)
{
    gpuipc_outcome oc;
    gpuipc_err err;
    int k;

    outcome_base(&oc, o, role);
    oc.running = 1;
    for (k = 0; k < GPUIPC_FILE_COUNT; k++)
        if (put(k, &oc, 1, &err) < 0) {
            name_it(&err, o, k, "marking the run under way at its start");
            gpuipc_log_say("%s", err.msg);
        }
}

int gpuipc_files_write(const gpuipc_doc *d, int which, int exit_code, gpuipc_err *why)
{
    const char *result = d->result != NULL ? d->result : gpuipc_log_last_result();
    gpuipc_counts c = gpuipc_report_count(d->results, d->n);
    gpuipc_outcome oc;

    if (state.files[which].dirfd < 0)
        return 0;
    gpuipc_files_prepare(d->machine != NULL && d->machine->driver[0] != '\0'
                         ? d->machine->driver : NULL);
    outcome_base(&oc, d->o, d->role);
    oc.exit_code = exit_code;
    oc.result = result[0] != '\0' ? result : gpuipc_log_last_said();
    oc.end_ns = gpuipc_runinfo_now_ns();
    oc.wall_ns = d->wall_ns;
    oc.results = d->results;
    oc.n = d->n;
    if (d->verdict != NULL) { /* the consumer: the producer's counts */
        c.passed = d->verdict->passed;
        c.failed = d->verdict->failed;
        c.skipped = d->verdict->skipped;
    }
    oc.passed = c.passed;
    oc.failed = c.failed;
    oc.skipped = c.skipped;
    oc.stopped = c.stopped;
    if (d->uuids != NULL) { /* the numbers are not the machine's GPUs (--ranks) */
        oc.uuids = d->uuids;
        oc.nuuids = d->nuuids;
    } else if (d->machine != NULL) { /* the GPUs' UUIDs, as the program gathered them */
        oc.uuids = d->machine->uuids;
        oc.nuuids = GPUIPC_DOC_GPUS_MAX;
    }
    if (put(which, &oc, 0, why) < 0) {
        name_it(why, d->o, which, "writing the run's verdict at its end");
        return -1;
    }
    return 0;
}

int gpuipc_files_at_deadline(const gpuipc_doc_program *o, const char *role,
                             const gpuipc_result *results,
                             const char (*labels)[GPUIPC_OUTCOME_LABEL_LEN],
                             size_t n, const char (*uuids)[GPUIPC_OUTCOME_UUID_LEN],
                             size_t nuuids, int exit_code, const char *result, uint64_t wall_ns)
{
    gpuipc_outcome oc;
    size_t i;
    int k, rc = 0;

    outcome_base(&oc, o, role);
    oc.exit_code = exit_code;
    oc.result = result;
    oc.end_ns = gpuipc_runinfo_now_ns();
    oc.wall_ns = wall_ns;
    oc.results = results;
    oc.labels = labels;
    oc.n = n;
    oc.uuids = uuids;
    oc.nuuids = nuuids;
    for (i = 0; i < n; i++) {
        oc.passed += results[i].status == GPUIPC_PASS;
        oc.failed += results[i].status == GPUIPC_FAIL;
        oc.skipped += results[i].status == GPUIPC_SKIP;
        oc.stopped += results[i].status == GPUIPC_STOPPED;
    }
    for (k = 0; k < GPUIPC_FILE_COUNT; k++)
        if (put(k, &oc, 0, NULL) < 0)
            rc = -1;
    return rc;
}
