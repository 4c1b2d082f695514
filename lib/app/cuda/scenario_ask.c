/* SPDX-License-Identifier: Apache-2.0 */
/* scenario_ask.c: one scenario of the producer's run, shared by its probe,
 * its Check test and the summary: the connection it goes over, what the
 * consumer is asked and on which GPUs, the judgement of a pair's link
 * (--min-gbps), and the consumer's figures after the last that passed. */
#include <stdio.h>
#include <string.h>

#include "app/cuda/producer_run.h"
#include "app/cuda/scenario_ask.h"
#include "core/step.h"
#include "core/units.h"
#include "gpu/gpu.h"
#include "session/diagnose.h"

/* A destructive mechanism talks to the sacrificial consumer. */
gpuipc_wire *gpuipc_app_wire_for(const gpuipc_producer_run *run, const gpuipc_mech *m)
{
    return m->destructive ? run->w2 : run->w;
}

int gpuipc_app_scenario_ask(gpuipc_producer_run *run, size_t i, gpuipc_scenario_ask *ask,
                            gpuipc_app_devices *dev, gpuipc_err *err)
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
    if ((rc = gpuipc_gpu_point(&run->env, run->cells.pair[i][0], run->cells.pair[i][1], dev->uuid,
                               dev->peer_uuid, err)) < 0) {
        if (run->cells.pair[i][0] == run->cells.pair[i][1])
            gpuipc_err_prefix(err, "GPU %d", run->cells.pair[i][0]);
        else
            gpuipc_err_prefix(err, "GPU pair %d->%d", run->cells.pair[i][0], run->cells.pair[i][1]);
    }
    return rc;
}

void gpuipc_app_judge_pair(gpuipc_producer_run *run, size_t i)
{
    gpuipc_result *r = &run->cells.results[i];
    double rd, wr, min = run->o->min_gbps;
    char link[1024], rs[32], ws[32];
    int a = run->cells.pair[i][0], b = run->cells.pair[i][1];

    if (a < 0 || a == b || r->ns == 0) /* within one GPU: no link */
        return;
    rd = r->forward.words > 0 ? gpuipc_units_gbps(r->size, r->forward.ns) : 0;
    wr = r->consumer_wrote.words > 0 ? gpuipc_units_gbps(r->size, r->consumer_wrote.ns) : 0;
    snprintf(rs, sizeof(rs), rd > 0 ? "%.1f GB/s" : "not measured", rd);
    snprintf(ws, sizeof(ws), wr > 0 ? "%.1f GB/s" : "not measured", wr);
    gpuipc_gpu_link_describe(a, b, link, sizeof(link));
    snprintf(r->detail, sizeof(r->detail), "across the link, GPU %d read %s from GPU %d and "
             "wrote %s to it; link: %.360s", b, rs, a, ws, link);
    if (min <= 0 || r->status != GPUIPC_PASS)
        return;
    if (rd <= 0 || wr <= 0 || rd < min || wr < min) {
        gpuipc_err what;

        /* As data: the judgement that failed is --min-gbps's. */
        gpuipc_err_clear(&what);
        gpuipc_err_what(&what, GPUIPC_DIAG_MIN_GBPS, 0, 0);
        gpuipc_result_set(r, GPUIPC_FAIL, GPUIPC_ROLE_PRODUCER, GPUIPC_STEP_CHECK, &what,
                          "GPU pair %d->%d: %s %s across the link, below --min-gbps %g", a, b,
                          rd <= 0 || (wr > 0 && rd <= wr) ? "read" : "wrote",
                          rd <= 0 || (wr > 0 && rd <= wr) ? rs : ws, min);
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
