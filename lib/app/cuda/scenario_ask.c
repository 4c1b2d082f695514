/* SPDX-License-Identifier: Apache-2.0 */
/* scenario_ask.c: one scenario of the producer's run, shared by its probe,
 * its Check test and the summary: the connection it goes over, what the
 * consumer is asked and on which GPUs, the judgement of a pair's link
 * (--min-gbps), and the consumer's figures after the last that passed. */
#include <stdio.h>
#include <string.h>

#include "app/cuda/producer_run.h"
#include "app/cuda/scenario_ask.h"
#include "bench/bench.h"
#include "core/step.h"
#include "core/units.h"
#include "gpu/gpu.h"
#include "session/diagnose.h"
#include "session/link.h"

/* A destructive mechanism talks to the sacrificial consumer. */
gpuipc_wire *gpuipc_app_wire_for(const gpuipc_producer_run *run, const gpuipc_mech *m)
{
    return m->destructive ? run->w2 : run->w;
}

int gpuipc_app_scenario_ask(gpuipc_producer_run *run, size_t i, gpuipc_scenario_ask *ask,
                            gpuipc_app_devices *dev, gpuipc_err *err)
{
    return gpuipc_app_scenario_ask_on(run, &run->env, i, ask, dev, err);
}

int gpuipc_app_scenario_ask_on(gpuipc_producer_run *run, gpuipc_env *env, size_t i,
                               gpuipc_scenario_ask *ask, gpuipc_app_devices *dev,
                               gpuipc_err *err)
{
    int rc = 0;

    memset(ask, 0, sizeof(*ask));
    memset(dev, 0, sizeof(*dev));
    ask->mech = run->cells.sel[i];
    ask->size = run->o->size;
    ask->index = (unsigned)i;
    ask->chunks = run->o->chunks;
    ask->uuid = dev->uuid;
    ask->peer_uuid = dev->peer_uuid;
    if (run->cells.pair[i][0] < 0) {
        memcpy(dev->uuid, run->uuid, GPUIPC_UUID_LEN);
        /* --ranks: the consumer rank's GPU, where it holds another. */
        if (memcmp(run->peer_uuid, run->uuid, GPUIPC_UUID_LEN) != 0)
            memcpy(dev->peer_uuid, run->peer_uuid, GPUIPC_UUID_LEN);
        return 0;
    }
    if ((rc = gpuipc_gpu_point(env, run->cells.pair[i][0], run->cells.pair[i][1], dev->uuid,
                               dev->peer_uuid, err)) < 0) {
        if (run->cells.pair[i][0] == run->cells.pair[i][1])
            gpuipc_err_prefix(err, "GPU %d", run->cells.pair[i][0]);
        else
            gpuipc_err_prefix(err, "GPU pair %d->%d", run->cells.pair[i][0], run->cells.pair[i][1]);
    }
    return rc;
}

int gpuipc_app_asks_link(const gpuipc_producer_run *run, size_t i)
{
    int a = run->cells.pair[i][0], b = run->cells.pair[i][1];

    return run->o->pairs != NULL && a >= 0 && a != b &&
           run->cells.sel[i]->memory == GPUIPC_MECH_DEVICE &&
           run->o->size >= GPUIPC_LINK_MIN_SIZE;
}

/* The detail line's words before the link's name, into buf, and the read
 * and write figures --min-gbps judges (*write_judged: whether a write is
 * judged at all). */
static void say_figures(const gpuipc_producer_run *run, size_t i, double *rd, double *wr,
                        int *write_judged, char *buf, size_t len)
{
    const gpuipc_result *r = &run->cells.results[i];
    const gpuipc_link_figures *f = &r->link;
    int a = run->cells.pair[i][0], b = run->cells.pair[i][1];
    char rs[32], ws[48];

    *write_judged = 1;
    if (f->passes > 0) {
        /* The link's figures, which both sides held to their sums. */
        *rd = gpuipc_link_gbps(f, GPUIPC_LINK_READ);
        *wr = gpuipc_link_gbps(f, GPUIPC_LINK_WRITE);
        *write_judged = f->wrote;
        gpuipc_link_pair_words(f, a, b, buf, len);
        return;
    }
    if (gpuipc_app_asks_link(run, i)) {
        /* Asked for: figures come only from a scenario that passed, and
         * one that passed without them was failed for it. */
        *rd = *wr = 0;
        snprintf(buf, len, "across the link, GPU %d reading GPU %d's memory: no figures (the "
                 "scenario did not pass)", b, a);
        return;
    }
    /* The ring, or host memory: the scenario's own pass each way, which
     * includes the first touch of the mapping and is not the link's rate. */
    *rd = r->forward.words > 0 ? gpuipc_units_gbps(r->size, r->forward.ns) : 0;
    *wr = r->consumer_wrote.words > 0 ? gpuipc_units_gbps(r->size, r->consumer_wrote.ns) : 0;
    *write_judged = run->cells.sel[i]->prove_read_only == NULL;
    if (!*write_judged)
        snprintf(ws, sizeof(ws), "nothing to it, a read-only mapping");
    else
        snprintf(ws, sizeof(ws), "%s to it", gpuipc_link_gbps_text(*wr, rs, sizeof(rs)));
    snprintf(buf, len, "in one pass each way (the first touch included%s), GPU %d read %s from "
             "GPU %d and wrote %s", run->o->pairs == NULL ? "; --pairs measures the link"
             : run->cells.sel[i]->memory != GPUIPC_MECH_DEVICE ? "; host memory: no GPU link "
             "to measure" : "; no link figures below --size 8M, where a pass costs what a "
             "kernel launch does", b, gpuipc_link_gbps_text(*rd, rs, sizeof(rs)), a, ws);
}

int gpuipc_app_drive_cell(gpuipc_producer_run *run, size_t i, gpuipc_env *env, gpuipc_wire *w,
                          gpuipc_timing *t)
{
    gpuipc_result *res = &run->cells.results[i];
    gpuipc_scenario_ask ask;
    gpuipc_app_devices dev;
    gpuipc_err err;
    int have;

    if (gpuipc_app_scenario_ask_on(run, env, i, &ask, &dev, &err) < 0) {
        gpuipc_result_set(res, GPUIPC_FAIL, GPUIPC_ROLE_PRODUCER, GPUIPC_STEP_BEGIN, &err, "%s",
                          err.msg);
        return 0;
    }
    /* --json: the consumer sends its step times too (one message more),
     * and the document gets each step's time from both clocks. --pairs:
     * the consumer measures the link and sends its figures. */
    memset(t, 0, sizeof(*t));
    if (run->o->json_path != NULL)
        t->flags |= GPUIPC_BEGIN_TIMES;
    if (gpuipc_app_asks_link(run, i))
        t->flags |= GPUIPC_BEGIN_LINK;
    ask.timing = t->flags != 0 ? t : NULL;
    gpuipc_producer_scenario(env, w, &ask, res);
    have = (t->flags & GPUIPC_BEGIN_TIMES) && res->status == GPUIPC_PASS &&
           t->nlaps == GPUIPC_LAP_COUNT;
    /* The times first, then the flag a watchdog reads them by. */
    if (have)
        gpuipc_bench_derive(t, &run->cells.steps[i * run->cells.nstages]);
    __atomic_store_n(&run->cells.have_steps[i], (unsigned char)have, __ATOMIC_RELEASE);
    return 1;
}

void gpuipc_app_judge_pair(gpuipc_producer_run *run, size_t i)
{
    gpuipc_result *r = &run->cells.results[i];
    double rd, wr, min = run->o->min_gbps;
    char link[1024], figures[320], rs[32], ws[32];
    int a = run->cells.pair[i][0], b = run->cells.pair[i][1], write_judged;
    const char *slow;

    if (a < 0 || a == b || r->ns == 0) /* within one GPU: no link */
        return;
    say_figures(run, i, &rd, &wr, &write_judged, figures, sizeof(figures));
    gpuipc_gpu_link_describe(a, b, link, sizeof(link));
    snprintf(r->detail, sizeof(r->detail), "%.200s; link: %.300s", figures, link);
    if (min <= 0 || r->status != GPUIPC_PASS)
        return;
    if ((slow = gpuipc_link_below(rd, wr, write_judged, min)) != NULL) {
        gpuipc_err what;

        /* As data: the judgement that failed is --min-gbps's. */
        gpuipc_err_clear(&what);
        gpuipc_err_what(&what, GPUIPC_DIAG_MIN_GBPS, 0, 0);
        gpuipc_result_set(r, GPUIPC_FAIL, GPUIPC_ROLE_PRODUCER, GPUIPC_STEP_CHECK, &what,
                          "GPU pair %d->%d: %s %s across the link, below --min-gbps %g", a, b,
                          slow, slow[0] == 'r' ? gpuipc_link_gbps_text(rd, rs, sizeof(rs))
                          : gpuipc_link_gbps_text(wr, ws, sizeof(ws)), min);
    }
}

/* The consumer's figures after the round: from the END_ACK of the round's
 * last scenario that passed. Returns 1 if there is one. */
int gpuipc_app_consumer_figures(const gpuipc_producer_run *run, gpuipc_usage_figures *f)
{
    size_t i;

    for (i = run->cells.n; i > 0; i--) {
        if (run->cells.results[i - 1].status == GPUIPC_PASS) {
            *f = run->cells.results[i - 1].consumer_usage;
            return 1;
        }
    }
    return 0;
}
