/* SPDX-License-Identifier: Apache-2.0 */
/* deadline.c: --deadline for each role (deadline.h). Each process starts a
 * watchdog (core/watch.h) after the fork, with run/deadline.h's view of
 * the run as its arg: made here before the watchdog can fire, filled with
 * the run's cells and place, the options' values and, for the result
 * files, what only the driver says (the GPUs' UUIDs, the machine, taken
 * here, never by the watchdog). What the watchdog does at the deadline is
 * run/deadline.c's; the document is prepared by deadline_doc.c. */
#include <stdint.h>
#include <stdlib.h>

#include "app/cuda/deadline.h"
#include "app/cuda/deadline_doc.h"
#include "app/cuda/doc_data.h"
#include "app/cuda/process.h"
#include "app/cuda/producer_run.h"
#include "core/log.h"
#include "core/step.h"
#include "core/stop.h"
#include "core/units.h"
#include "core/watch.h"
#include "gpu/gpu.h"
#include "run/outputs.h"
#include "run/report_files.h"

/* A watchdog's view, for role from t0 with o's options; NULL (said why)
 * where there is no memory for it. */
static gpuipc_deadline *deadline_new(const gpuipc_options *o, int role, uint64_t t0)
{
    gpuipc_deadline *dl = malloc(sizeof(*dl));
    gpuipc_doc_program prog;

    if (dl == NULL) {
        gpuipc_log_say("--deadline: the watchdog: out of memory");
        return NULL;
    }
    gpuipc_deadline_init(dl, role, t0, gpuipc_doc_program_of(o, &prog));
    return dl;
}

int gpuipc_app_deadline_producer(gpuipc_producer_run *run, uint64_t t0)
{
    gpuipc_deadline *dl = deadline_new(run->o, GPUIPC_ROLE_PRODUCER, t0);
    uint64_t at;
    gpuipc_err err;

    if (dl == NULL)
        return -1;
    /* Without a deadline it still takes the stops no other thread can. */
    at = run->o->deadline_ns == 0 ? UINT64_MAX : t0 + run->o->deadline_ns;
    dl->cells = &run->cells;
    dl->where = run->where;
    dl->forked = run->child > 0;
    dl->unlink_sock = gpuipc_app_sock_unlink;
    run->deadline = dl;
    gpuipc_app_deadline_document(run);
    if (gpuipc_watch_start(at, gpuipc_deadline_producer_fire, dl, &err) < 0) {
        gpuipc_log_say("--deadline: %s", err.msg);
        return -1;
    }
    return 0;
}

/* dl's uuid_text, for the GPUs the driver shows (once they are opened). */
static void take_uuids(gpuipc_deadline *dl)
{
    uint8_t uuid[GPUIPC_UUID_LEN];
    gpuipc_err err;
    int n = 0, g;

    if (gpuipc_gpu_count(&n, &err) < 0)
        return;
    for (g = 0; g < n && g < GPUIPC_DOC_GPUS_MAX; g++)
        if (dl->uuid_text[g][0] == '\0' && gpuipc_gpu_uuid_of(g, uuid, &err) == 0)
            gpuipc_units_format_uuid(uuid, dl->uuid_text[g], sizeof(dl->uuid_text[g]));
}

void gpuipc_app_deadline_document(gpuipc_producer_run *run)
{
    gpuipc_deadline *dl = run->deadline;
    gpuipc_doc_program prog;
    gpuipc_deadline_doc *doc;
    char driver[128];

    if (dl == NULL || !gpuipc_outputs_wanted(gpuipc_doc_program_of(run->o, &prog)))
        return;
    if (run->cuda == 0)
        take_uuids(dl);
    gpuipc_files_prepare(gpuipc_doc_driver(driver, sizeof(driver)));
    if (run->o->json_path == NULL)
        return;
    /* The first is ready before the watchdog can fire; the second (once the
     * probes are done) takes its place whole, and the first is kept until
     * the run claims its end (the watchdog may be reading it). No third is
     * made. */
    if (dl->older != NULL)
        return;
    doc = gpuipc_deadline_doc_make(run->o, run, (const char (*)[GPUIPC_OUTCOME_UUID_LEN])
                                                dl->uuid_text);
    if (doc != NULL && gpuipc_deadline_set_doc(dl, doc) < 0)
        gpuipc_deadline_doc_free(doc);
}

void gpuipc_app_deadline_done(gpuipc_deadline *dl)
{
    if (dl != NULL) { /* freed whole: both documents, then the view */
        gpuipc_deadline_doc_free(dl->doc);
        gpuipc_deadline_doc_free(dl->older);
        free(dl);
    }
}

int gpuipc_app_deadline_consumer(const gpuipc_options *o, uint64_t t0, gpuipc_deadline **made)
{
    gpuipc_deadline *dl = deadline_new(o, GPUIPC_ROLE_CONSUMER, t0);
    gpuipc_err err;
    uint64_t at;

    *made = dl;
    if (dl == NULL)
        return -1;
    /* Forked, the producer ends the run: this is a backstop after it.
     * Without a deadline it still takes the stops no other thread can. */
    at = o->deadline_ns == 0 ? UINT64_MAX
         : t0 + o->deadline_ns + (gpuipc_stop_parent() > 0 ? GPUIPC_APP_DEADLINE_BACKSTOP_NS : 0);
    if (gpuipc_stop_parent() == 0 && o->json_path != NULL)
        dl->doc = gpuipc_deadline_doc_make(o, NULL, NULL);
    if (gpuipc_watch_start(at, gpuipc_deadline_consumer_fire, dl, &err) < 0) {
        gpuipc_log_say("--deadline: %s", err.msg);
        return -1;
    }
    return 0;
}
