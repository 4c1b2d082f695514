/* SPDX-License-Identifier: Apache-2.0 */
/* ranks_job.c: the job as one rank of --ranks sees it: each rank's GPU and
 * options shared after a fence (its index among the ranks of this node,
 * modulo the GPUs it sees; every rank's options held to rank 0's), the
 * ranks named for messages, and which of them are gone (their pidfds) or
 * stuck. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "app/cuda/ranks_run.h"
#include "core/log.h"
#include "core/sha256.h"
#include "core/status.h"
#include "gpu/gpu.h"
#include "gpu/nvml.h"

void gpuipc_ranks_say_result(const ranks_run *rr, const char *fmt, ...)
{
    char text[1024];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    if (rr->l != NULL)
        printf("rank %u: result: %s\n", rr->rank, text);
    else
        printf("gpuipc_test: result: %s\n", text);
    fflush(stdout);
    gpuipc_log_keep_result(text);
}

/* The name of rank r for messages. */
const char *gpuipc_ranks_who(const ranks_run *rr, uint32_t r)
{
    return rr->who[r];
}

void gpuipc_ranks_name(ranks_run *rr)
{
    uint32_t r;

    for (r = 0; r < rr->size; r++) {
        const gpuipc_job_card *c = gpuipc_job_card_of(rr->job, r);

        if (rr->gpus[r].ordinal >= 0)
            snprintf(rr->who[r], WHO_LEN, "rank %u (%.64s, GPU %d)", r, c ? c->host : "?",
                     rr->gpus[r].ordinal);
        else
            snprintf(rr->who[r], WHO_LEN, "rank %u (%.64s)", r, c ? c->host : "?");
        rr->whop[r] = rr->who[r];
    }
}

/* ---- the GPU of each rank ---------------------------------------------------------- */

/* The options every rank must share, as the first 64 bits of the SHA-256
 * (core/sha256) of their text: the mechanisms, --require, --size and
 * --chunks. */
static uint64_t config_digest(const ranks_run *rr)
{
    uint8_t sum[GPUIPC_SHA256_LEN];
    char text[2048];
    size_t i, n = 0;
    uint64_t h = 0;

    for (i = 0; i < rr->s->nsel && n + 40 < sizeof(text); i++)
        n += (size_t)snprintf(text + n, sizeof(text) - n, "%s,", rr->s->sel[i]->name);
    for (i = 0; i < rr->s->nreq && n + 40 < sizeof(text); i++)
        n += (size_t)snprintf(text + n, sizeof(text) - n, "req=%s,", rr->s->req[i]->name);
    snprintf(text + n, sizeof(text) - n, "size=%llu,chunks=%u",
             (unsigned long long)rr->o->size, rr->o->chunks);
    gpuipc_sha256_digest(text, strlen(text), sum);
    for (i = 0; i < 8; i++)
        h = h << 8 | sum[i];
    return h;
}

_Static_assert(GPUIPC_JOB_GPU_UUID_LEN == GPUIPC_UUID_LEN, "a GPU card's UUID is a GPU's");

/* The fabric info of g's GPU, from NVML (gpu/nvml.h), into g; left not
 * reported (-1) where NVML says nothing of it. */
static void fabric_of(gpuipc_job_gpu *g, const ranks_run *rr)
{
    gpuipc_nvml_modes m;
    gpuipc_err why;

    /* (A state this program does not know, a newer driver's: not reported.) */
    if (gpuipc_nvml_gpu_modes(g->uuid, &m, &why) < 0 || m.fabric_state < 0 ||
        m.fabric_state > 3)
        return;
    g->fabric = m.fabric_state;
    g->fabric_status = m.fabric_status;
    memcpy(g->cluster, m.cluster_uuid, sizeof(g->cluster));
    g->clique = m.clique_id;
    g->health = m.health_mask;
    g->summary = m.health_summary;
    if (rr->o->level >= GPUIPC_LOG_VERBOSE)
        printf("rank %u: its GPU's %s\n", rr->rank, m.text);
}

/* This rank's GPU: its index among the ranks of this node, modulo the GPUs
 * this process sees (several ranks share a GPU where there are fewer),
 * published with its options' digest and whether rank 0 refused its own
 * (refused) in its GPU card (launch/job.h); then every rank's, after a
 * fence. Returns 0; GPUIPC_USAGE where a rank's options differ from rank
 * 0's or rank 0 refused its own (every rank finds that alike, and says
 * it); or a negative errno with err. */
int gpuipc_ranks_share_gpus(ranks_run *rr, int refused, gpuipc_err *err)
{
    gpuipc_job_gpu mine;
    uint32_t index = 0, count = 1, r;
    gpuipc_err why;
    int n = 0, rc, differs = -1;

    memset(&mine, 0, sizeof(mine));
    mine.rank = rr->rank;
    mine.ordinal = -1;
    mine.fabric = -1;
    mine.summary = -1;
    mine.digest = config_digest(rr);
    mine.refused = refused;
    gpuipc_err_clear(&why);
    gpuipc_job_node_place(rr->job, &index, &count);
    if (rr->needs_cuda && gpuipc_gpu_init(&why) == 0 && gpuipc_gpu_count(&n, &why) == 0 &&
        n > 0 && gpuipc_gpu_uuid_of((int)(index % (uint32_t)n), mine.uuid, &why) == 0)
        mine.ordinal = (int)(index % (uint32_t)n);
    if (rr->needs_cuda && mine.ordinal < 0)
        printf("rank %u: no GPU for this rank: %s (its GPU scenarios say so too)\n", rr->rank,
               why.msg[0] ? why.msg : "the driver shows none");
    if (mine.ordinal >= 0)
        fabric_of(&mine, rr);
    if ((rc = gpuipc_job_share_gpus(rr->job, rr->l, &mine, rr->gpus, err)) < 0)
        return rc;
    if (rr->gpus[0].refused) {
        if (rr->rank != 0)
            gpuipc_ranks_say_result(rr, "%s: rank 0 refused its options (it says why) (exit "
                                    "%d)", gpuipc_exit_word(GPUIPC_USAGE), GPUIPC_USAGE);
        return GPUIPC_USAGE;
    }
    for (r = 1; r < rr->size && differs < 0; r++)
        if (rr->gpus[r].digest != rr->gpus[0].digest)
            differs = (int)r;
    if (differs >= 0) {
        gpuipc_ranks_say_result(rr, "%s: rank %d's options differ from rank 0's (--only, "
                                "--require, --size and --chunks must be the same on every "
                                "rank: give every rank one command line) (exit %d)",
                                gpuipc_exit_word(GPUIPC_USAGE), differs, GPUIPC_USAGE);
        return GPUIPC_USAGE;
    }
    return 0;
}

/* The marks are made by the sessions' threads of a phase and read by the
 * verdict's thread as well: under rr->marks, once it is made. */
static void lock_marks(ranks_run *rr)
{
    if (rr->marks_ready)
        pthread_mutex_lock(&rr->marks);
}

static void unlock_marks(ranks_run *rr)
{
    if (rr->marks_ready)
        pthread_mutex_unlock(&rr->marks);
}

int gpuipc_ranks_apart(uint32_t p, uint32_t q, void *arg)
{
    const ranks_run *rr = arg;
    char why[8];

    return gpuipc_job_where(gpuipc_job_card_of(rr->job, p), gpuipc_job_card_of(rr->job, q), why,
                            sizeof(why)) == GPUIPC_JOB_OTHER_NODE;
}

int gpuipc_ranks_left_out(uint32_t p, uint32_t q, const char *mech, void *arg)
{
    const ranks_run *rr = arg;
    size_t i;

    for (i = 0; i < rr->s->nsel; i++)
        if (strcmp(rr->s->sel[i]->name, mech) == 0)
            return !rr->s->sel[i]->cross_node && gpuipc_ranks_apart(p, q, arg);
    return 0;
}

/* Rank r is gone: its later pairs are not waited for, nor its PMIx keys. */
void gpuipc_ranks_mark_gone(ranks_run *rr, uint32_t r)
{
    lock_marks(rr);
    rr->gone[r] = 1;
    gpuipc_launch_forget(rr->l, r);
    unlock_marks(rr);
}

/* Whether rank r is known to be gone: seen so in a pair, or its process
 * ended now (on this node its pidfd; elsewhere its TCP listener, which a
 * probe may take up to GPUIPC_MEET_PROBE_MS to ask: not under the lock). */
int gpuipc_ranks_is_gone(ranks_run *rr, uint32_t r)
{
    int gone;

    lock_marks(rr);
    gone = rr->gone[r];
    unlock_marks(rr);
    if (!gone)
        gone = gpuipc_meet_ended(rr->meet, r);
    lock_marks(rr);
    if (gone)
        rr->gone[r] = 1;
    if (rr->gone[r])
        gpuipc_launch_forget(rr->l, r);
    gone = rr->gone[r];
    unlock_marks(rr);
    return gone;
}

/* Rank r is alive but did not come to a pair in time (stuck in a call, or
 * far slower): its later pairs are not waited for either, so that one
 * stuck rank does not make every pair after it wait out --timeout. */
void gpuipc_ranks_mark_stuck(ranks_run *rr, uint32_t r)
{
    lock_marks(rr);
    rr->stuck[r] = 1;
    unlock_marks(rr);
}

void gpuipc_ranks_marks(ranks_run *rr, uint32_t r, int *gone, int *stuck)
{
    lock_marks(rr);
    *gone = rr->gone[r];
    *stuck = rr->stuck[r];
    unlock_marks(rr);
}
