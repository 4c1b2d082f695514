/* SPDX-License-Identifier: Apache-2.0 */
/* ranks_json.c: rank 0's --json under --ranks: each rank's card, GPU and
 * place gathered for the gpuipc-ranks/1 document's writer (run/result_doc.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/cuda/ranks_run.h"
#include "app/version.h"
#include "core/clock.h"
#include "core/units.h"
#include "run/rank_results.h"
#include "run/result_doc.h"

/* Each rank's node and group (run/result_doc.h), by its card: the first
 * rank with its boot id, and the first on its node in its namespaces. */
static void places(const ranks_run *rr, gpuipc_ranks_doc_rank *ranks)
{
    static const uint8_t zero[GPUIPC_FACTS_BOOT_ID_LEN];
    uint32_t r, q;
    char why[8];

    for (r = 0; r < rr->size; r++) {
        const gpuipc_job_card *a = gpuipc_job_card_of(rr->job, r);

        ranks[r].node = ranks[r].group = -1;
        if (memcmp(a->boot_id, zero, sizeof(zero)) == 0)
            continue;
        /* Against the first rank of each node and group seen so far. */
        for (q = 0; q <= r && (ranks[r].node < 0 || ranks[r].group < 0); q++) {
            const gpuipc_job_card *b = gpuipc_job_card_of(rr->job, q);

            if ((ranks[q].node != (int)q && ranks[q].group != (int)q) || q == r)
                continue;
            if (ranks[r].node < 0 && ranks[q].node == (int)q &&
                memcmp(a->boot_id, b->boot_id, sizeof(zero)) == 0)
                ranks[r].node = (int)q;
            if (ranks[r].group < 0 && ranks[q].group == (int)q &&
                gpuipc_job_where(b, a, why, sizeof(why)) == GPUIPC_JOB_SAME_NODE)
                ranks[r].group = (int)q;
        }
        if (ranks[r].node < 0)
            ranks[r].node = (int)r;
        if (ranks[r].group < 0)
            ranks[r].group = (int)r;
    }
}

/* Writes the --json document (cells NULL: the run under way, not
 * finished) in place of whatever is at its path (a regular file: the check
 * before the run, or the last writing, said so). Returns 0, or -1 where it
 * could not be written (said). */
int gpuipc_ranks_json_write(ranks_run *rr, const gpuipc_cell *cells, int code, unsigned proven,
                      unsigned pf, unsigned ps)
{
    gpuipc_ranks_doc d = {.code = code, .size = rr->size, .proven = proven, .failed = pf,
                          .skipped = ps, .cells = cells, .who = rr->whop, .mechs = rr->mechs,
                          .nmech = rr->s->nsel};
    gpuipc_ranks_doc_rank *ranks;
    uint32_t r, *culprits = NULL;
    int rc;

    if (!rr->json_checked)
        return 0;
    if (cells == NULL)
        return gpuipc_ranks_doc_write(&rr->json, &rr->json_checked, rr->o->json_path,
                                      GPUIPC_VERSION, NULL);
    if ((ranks = calloc(rr->size, sizeof(*ranks))) == NULL ||
        gpuipc_rank_culprits(cells, rr->size, rr->whop, rr->mechs, rr->s->nsel,
                             &culprits) < 0) {
        printf("rank %u: --json %s: not written: out of memory\n", rr->rank, rr->o->json_path);
        free(ranks);
        return -1;
    }
    d.culprits = culprits;
    d.wall_ns = gpuipc_clock_ns() - rr->t0;
    d.pmix = gpuipc_launch_version(rr->l);
    for (r = 0; r < rr->size; r++) {
        const gpuipc_job_card *card = gpuipc_job_card_of(rr->job, r);

        ranks[r].host = card ? card->host : NULL;
        ranks[r].pid = card ? card->pid : 0;
        ranks[r].gpu = rr->gpus[r].ordinal;
        if (rr->gpus[r].ordinal >= 0)
            gpuipc_units_format_uuid(rr->gpus[r].uuid, ranks[r].gpu_uuid,
                                     sizeof(ranks[r].gpu_uuid));
        ranks[r].fabric.state = rr->gpus[r].fabric;
        ranks[r].fabric.status = rr->gpus[r].fabric_status;
        ranks[r].fabric.clique = rr->gpus[r].clique;
        ranks[r].fabric.health_mask = rr->gpus[r].health;
        ranks[r].fabric.health_summary = rr->gpus[r].summary;
        gpuipc_units_format_uuid(rr->gpus[r].cluster, ranks[r].fabric.cluster,
                                 sizeof(ranks[r].fabric.cluster));
        ranks[r].on_this_node = gpuipc_job_where_is(rr->job, r, ranks[r].where,
                                                    sizeof(ranks[r].where)) ==
                                GPUIPC_JOB_SAME_NODE;
    }
    places(rr, ranks);
    d.ranks = ranks;
    rc = gpuipc_ranks_doc_write(&rr->json, &rr->json_checked, rr->o->json_path, GPUIPC_VERSION,
                                &d);
    free(ranks);
    free(culprits);
    return rc;
}
