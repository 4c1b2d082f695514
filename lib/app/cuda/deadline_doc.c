/* SPDX-License-Identifier: Apache-2.0 */
/* deadline_doc.c: the --json document at the deadline (deadline.c's
 * watchdog): the template written before the run (result_doc.h) with its
 * markers filled from the results as far as they got (exit status, result
 * line, wall time, scenarios, counts, how the consumer ended, GPUs, end
 * time), written to the file checked before the run or to standard output.
 * All of it with write(2) and the watchdog's own buffer, no stdio or
 * malloc: the stuck thread may hold their locks. */
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "app/cuda/deadline_doc.h"
#include "app/cuda/producer_run.h"
#include "core/names.h"
#include "core/outfile.h"
#include "core/runinfo.h"
#include "core/status.h"
#include "core/watch.h"
#include "gpu/gpu.h"
#include "run/plan.h"
#include "run/result_doc.h"

/* How many scenarios the run has, as its thread published them (the
 * tables are whole and at least this long once it is read). */
size_t gpuipc_deadline_nscen(const gpuipc_producer_run *run)
{
    return run != NULL ? gpuipc_cellset_count(&run->cells) : 0;
}

/* The counts of the producer's results that ended. */
void gpuipc_deadline_counts(const gpuipc_producer_run *run, unsigned *passed, unsigned *failed,
                            unsigned *skipped)
{
    if (run != NULL)
        gpuipc_cellset_tally(&run->cells, passed, failed, skipped);
    else
        *passed = *failed = *skipped = 0;
}

/* An ordinal, or null for -1. */
static void put_ordinal(gpuipc_sbuf *b, int g)
{
    if (g < 0)
        gpuipc_sbuf_str(b, "null");
    else
        gpuipc_sbuf_uint(b, (uint64_t)g);
}

/* The document's gpus: each GPU the scenarios ran on, with the verdicts of
 * those it took part in, counted now. */
static void put_gpus(gpuipc_sbuf *b, const gpuipc_deadline_doc *d)
{
    int gpus[GPUIPC_GPU_OPEN_MAX];
    size_t ns = gpuipc_deadline_nscen(d->run), i,
           n = ns > 0 ? gpuipc_doc_gpus_of(d->run->cells.results, ns, gpus, GPUIPC_GPU_OPEN_MAX)
                      : 0;

    gpuipc_sbuf_str(b, "[");
    for (i = 0; i < n; i++) {
        gpuipc_plan_tally t;
        int v = gpuipc_plan_gpu_verdict(d->run->cells.results, ns, gpus[i], &t);

        gpuipc_sbuf_str(b, i ? ",\n    {\"ordinal\": " : "\n    {\"ordinal\": ");
        gpuipc_sbuf_uint(b, (uint64_t)gpus[i]);
        gpuipc_sbuf_str(b, ", \"uuid\": ");
        gpuipc_sbuf_json(b, gpus[i] < GPUIPC_GPU_OPEN_MAX && d->uuids[gpus[i]][0] != '\0'
                                ? d->uuids[gpus[i]] : NULL);
        gpuipc_sbuf_str(b, ", \"verdict\": \"");
        gpuipc_sbuf_str(b, gpuipc_status_name(v));
        gpuipc_sbuf_str(b, "\", \"passed\": ");
        gpuipc_sbuf_uint(b, t.passed);
        gpuipc_sbuf_str(b, ", \"failed\": ");
        gpuipc_sbuf_uint(b, t.failed);
        gpuipc_sbuf_str(b, ", \"skipped\": ");
        gpuipc_sbuf_uint(b, t.skipped);
        gpuipc_sbuf_str(b, ", \"stopped\": ");
        gpuipc_sbuf_uint(b, t.stopped);
        gpuipc_sbuf_str(b, "}");
    }
    gpuipc_sbuf_str(b, n > 0 ? "\n  ]" : "]");
}

/* One check of the document's scenarios. */
static void put_check(gpuipc_sbuf *b, const gpuipc_check *k)
{
    gpuipc_sbuf_str(b, "{\"words\": ");
    gpuipc_sbuf_uint(b, k->words);
    gpuipc_sbuf_str(b, ", \"mismatches\": ");
    gpuipc_sbuf_uint(b, k->mismatches);
    gpuipc_sbuf_str(b, ", \"first_bad\": ");
    if (k->mismatches > 0)
        gpuipc_sbuf_uint(b, k->first_bad);
    else
        gpuipc_sbuf_str(b, "null");
    gpuipc_sbuf_str(b, ", \"read_gbps\": null}");
}

/* Whether a write of the deadline's document failed (or text had to be
 * dropped): the document is then not put in place. */
static int doc_bad;

static void doc_put(int fd, const char *p, size_t n)
{
    if (gpuipc_write_all(fd, p, n) < 0)
        doc_bad = 1;
}

/* Writes b's text to fd and starts b afresh in the watchdog's buffer. */
static void doc_flush(gpuipc_sbuf *b, int fd, const gpuipc_deadline_doc *d)
{
    if (gpuipc_sbuf_write(b, fd) < 0)
        doc_bad = 1;
    gpuipc_sbuf_init(b, d->text, d->text_len);
}

/* The document's scenarios: each as far as it got, each written to fd as it
 * is made (b is the text buffer). */
static void put_scenarios(gpuipc_sbuf *b, int fd, const gpuipc_deadline_doc *d)
{
    size_t n = gpuipc_deadline_nscen(d->run), i;

    gpuipc_sbuf_str(b, "[");
    for (i = 0; i < n; i++) {
        const gpuipc_result *r = &d->run->cells.results[i];
        int st = r->status;

        doc_flush(b, fd, d);
        gpuipc_sbuf_str(b, i ? ",\n    {\"name\": " : "\n    {\"name\": ");
        gpuipc_sbuf_json(b, d->run->cells.label[i]);
        gpuipc_sbuf_str(b, ", \"verdict\": \"");
        gpuipc_sbuf_str(b, gpuipc_status_name(st));
        gpuipc_sbuf_str(b, "\", \"gpu\": ");
        put_ordinal(b, r->gpu);
        gpuipc_sbuf_str(b, ", \"peer_gpu\": ");
        put_ordinal(b, r->peer_gpu);
        gpuipc_sbuf_str(b, ", \"size\": ");
        gpuipc_sbuf_uint(b, r->size);
        gpuipc_sbuf_str(b, ", \"producer_to_consumer\": ");
        put_check(b, &r->forward);
        gpuipc_sbuf_str(b, ", \"consumer_to_producer\": ");
        put_check(b, &r->backward);
        gpuipc_sbuf_str(b, ", \"consumer_write_gbps\": null, \"time_ms\": ");
        gpuipc_sbuf_uint(b, r->ns / 1000000ull);
        gpuipc_sbuf_str(b, ", \"reason\": ");
        gpuipc_sbuf_json(b, st != GPUIPC_FAIL && st != GPUIPC_SKIP ? NULL
                            : r->reason[0] != '\0' ? r->reason
                                                   : "under way when the deadline passed");
        gpuipc_sbuf_str(b, ", \"cause\": null, \"fix\": null, \"detail\": null}");
    }
    gpuipc_sbuf_str(b, n > 0 ? "\n  ]" : "]");
}

/* The exit member of the watchdog's document. */
static void put_exit_member(gpuipc_sbuf *b, int code, int sig)
{
    const char *name = gpuipc_sig_abbrev(sig);

    gpuipc_sbuf_str(b, "{\"status\": ");
    gpuipc_sbuf_uint(b, (uint64_t)code);
    if (sig == 0) {
        gpuipc_sbuf_str(b, ", \"meaning\": \"a failure\"}");
        return;
    }
    gpuipc_sbuf_str(b, ", \"meaning\": \"stopped by SIG");
    gpuipc_sbuf_str(b, name != NULL ? name : "?");
    gpuipc_sbuf_str(b, "\"}");
}

/* The template with its markers replaced, to fd. */
static void write_doc_to(int fd, const gpuipc_deadline_doc *d)
{
    static const struct {
        const char *mark;
        int what;
    } marks[] = {{GPUIPC_DOC_MARK_EXIT, 0}, {GPUIPC_DOC_MARK_RESULT, 1},
                 {GPUIPC_DOC_MARK_WALL, 2}, {GPUIPC_DOC_MARK_SCENARIOS, 3},
                 {GPUIPC_DOC_MARK_COUNTS, 4}, {GPUIPC_DOC_MARK_CONSUMER, 5},
                 {GPUIPC_DOC_MARK_GPUS, 6}, {GPUIPC_DOC_MARK_END, 7}};
    const char *p = d->tmpl, *at;
    gpuipc_sbuf b;
    unsigned pa, f, s;
    size_t i;

    while ((at = strstr(p, "@@")) != NULL) {
        gpuipc_sbuf_init(&b, d->text, d->text_len);
        for (i = 0; i < sizeof(marks) / sizeof(marks[0]); i++)
            if (strncmp(at, marks[i].mark, strlen(marks[i].mark)) == 0)
                break;
        if (i == sizeof(marks) / sizeof(marks[0])) { /* "@@" of the run's own text */
            doc_put(fd, p, (size_t)(at + 2 - p));
            p = at + 2;
            continue;
        }
        doc_put(fd, p, (size_t)(at - p));
        switch (marks[i].what) {
        case 0:
            put_exit_member(&b, d->code, d->sig);
            break;
        case 1:
            gpuipc_sbuf_json(&b, d->verdict);
            break;
        case 2:
            gpuipc_sbuf_secs(&b, d->wall_ns, 3);
            break;
        case 3:
            put_scenarios(&b, fd, d);
            break;
        case 4:
            gpuipc_deadline_counts(d->run, &pa, &f, &s);
            gpuipc_sbuf_str(&b, "{\"passed\": ");
            gpuipc_sbuf_uint(&b, pa);
            gpuipc_sbuf_str(&b, ", \"failed\": ");
            gpuipc_sbuf_uint(&b, f);
            gpuipc_sbuf_str(&b, ", \"skipped\": ");
            gpuipc_sbuf_uint(&b, s);
            gpuipc_sbuf_str(&b, "}");
            break;
        case 6:
            put_gpus(&b, d);
            break;
        case 7:
            gpuipc_sbuf_str(&b, "\"");
            gpuipc_sbuf_utc(&b, gpuipc_runinfo_now_ns(), 1);
            gpuipc_sbuf_str(&b, "\"");
            break;
        default:
            gpuipc_sbuf_json(&b, d->consumer);
        }
        doc_flush(&b, fd, d);
        p = at + strlen(marks[i].mark);
    }
    doc_put(fd, p, strlen(p));
}

/* The run's own thread has not begun its document (it writes it only once
 * it has claimed the end: gpuipc_watch_claim). */
int gpuipc_deadline_doc_write(const gpuipc_deadline_doc *d)
{
    const char *path = d->path;
    gpuipc_outfile *f = gpuipc_doc_outfile();
    int fd;

    if (path == NULL || d->tmpl == NULL)
        return 0;
    doc_bad = 0;
    if (strcmp(path, "-") == 0) {
        write_doc_to(gpuipc_doc_stdout_fd(), d);
        return doc_bad ? -1 : 0;
    }
    if (f == NULL || (fd = gpuipc_outfile_open(f, NULL)) < 0)
        return -1;
    write_doc_to(fd, d);
    if (close(fd) < 0)
        doc_bad = 1;
    if (doc_bad || gpuipc_outfile_commit(f, NULL) < 0) {
        gpuipc_outfile_abort(f);
        return -1;
    }
    return 0;
}
