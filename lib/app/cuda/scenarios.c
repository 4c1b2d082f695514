/* SPDX-License-Identifier: Apache-2.0 */
/* scenarios.c: the producer's scenarios: their tables, sized once the run
 * knows its GPUs, and their names; the expansion of the selection over the
 * GPUs of the run (every mechanism on each GPU, and across GPUs every
 * ordered pair in the phases of run/plan.h, or --pairs ring's ring, with the
 * mechanisms that work between devices) or over the pairs of --pairs. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "app/cuda/producer_run.h"
#include "app/cuda/registry.h"
#include "core/log.h"
#include "core/units.h"
#include "gpu/cudrv.h"
#include "gpu/gpu.h"
#include "run/plan.h"

void gpuipc_app_scenarios_free(gpuipc_producer_run *run)
{
    gpuipc_cellset_free(&run->cells);
    free(run->played);
    run->played = NULL;
    free(run->gpus);
    run->gpus = NULL;
    run->ngpus = 0;
    gpuipc_app_modes_free(&run->cmodes);
}

/* The names of the mechanisms of sel[0..nsel) that cross GPUs, ", "
 * between them, into buf (len bytes, cut to fit). */
static void crossing_names(const gpuipc_mech *const *sel, size_t nsel, char *buf, size_t len)
{
    size_t i;

    buf[0] = '\0';
    for (i = 0; i < nsel; i++)
        if (sel[i]->cross_device)
            snprintf(buf + strlen(buf), len - strlen(buf), "%s%s", buf[0] ? ", " : "",
                     sel[i]->name);
}

int gpuipc_app_expand_pairs(gpuipc_producer_run *run)
{
    const gpuipc_mech *sel[GPUIPC_APP_NMECH_MAX];
    size_t cap, np, i, k, nsel = run->cells.n;
    char names[160] = "";
    int (*pairs)[2];
    gpuipc_err err;
    int n = 0, rc = 0;

    if (gpuipc_gpu_count(&n, &err) < 0) {
        gpuipc_log_say("%s", err.msg);
        return GPUIPC_USAGE;
    }
    /* Room for every ordered pair, or for each entry of a list. */
    cap = n > 1 ? (size_t)n * (size_t)(n - 1) : 1;
    for (i = 0; run->o->pairs[i] != '\0'; i++)
        cap += run->o->pairs[i] == ',';
    cap += 1;
    /* Each crosses GPUs: the registry took no other for --pairs. */
    memcpy(sel, run->cells.sel, nsel * sizeof(sel[0]));
    crossing_names(sel, nsel, names, sizeof(names));
    if ((pairs = calloc(cap, sizeof(*pairs))) == NULL) {
        gpuipc_log_say("--pairs: out of memory");
        return GPUIPC_FAIL;
    }
    if (gpuipc_options_pairs(run->o->pairs, n, pairs, cap, &np, &err) < 0) {
        gpuipc_log_say("%s", err.msg);
        rc = GPUIPC_USAGE;
    } else if (gpuipc_cellset_size(&run->cells, np * nsel) < 0) {
        gpuipc_log_say("--pairs: out of memory for %zu scenarios", np * nsel);
        rc = GPUIPC_FAIL;
    } else {
        /* Each pair with every mechanism selected, pair after pair. */
        for (i = 0; i < np; i++)
            for (k = 0; k < nsel; k++)
                gpuipc_cellset_name(&run->cells, i * nsel + k, sel[k], pairs[i][0],
                                    pairs[i][1], run->o->device);
        gpuipc_cellset_publish(&run->cells, np * nsel);
        if (nsel == 1)
            snprintf(run->where, sizeof(run->where), "%zu device pair%s among %d GPUs (the %s "
                     "mechanism, producer->consumer)", np, np == 1 ? "" : "s", n, sel[0]->name);
        else
            snprintf(run->where, sizeof(run->where), "%zu device pair%s among %d GPUs (the "
                     "mechanisms %.150s, producer->consumer)", np, np == 1 ? "" : "s", n,
                     names);
    }
    free(pairs);
    return rc;
}

/* The heading of GPU g's group in the summary: its ordinal, name, UUID and
 * PCI bus id. */
static void heading(int g, char *buf, size_t len)
{
    char uuid_text[48], bus[32], name[96];
    uint8_t uuid[GPUIPC_UUID_LEN];
    gpuipc_err err;

    if (gpuipc_gpu_uuid_of(g, uuid, &err) < 0) {
        snprintf(buf, len, "GPU %d", g);
        return;
    }
    gpuipc_gpu_describe_ordinal(g, name, sizeof(name), bus, sizeof(bus));
    snprintf(buf, len, "GPU %d: %s (%s%s%s)", g, name,
             gpuipc_units_format_uuid(uuid, uuid_text, sizeof(uuid_text)), bus[0] ? ", " : "",
             bus);
}

/* The heading of the group of cells across GPUs that pair p belongs to:
 * the ring's one, or its phase's of every ordered pair. */
static void across_heading(const gpuipc_producer_run *run, const gpuipc_plan_pair *p,
                           unsigned nphases, const char *names, char *buf, size_t len)
{
    if (run->o->ring)
        snprintf(buf, len, "across GPUs, the ring (--pairs ring): each GPU exports to the next "
                 "(%.100s)", names);
    else if (p->round == 1)
        snprintf(buf, len, "across GPUs, every ordered pair, phase 1 of %u: each GPU exports to "
                 "the next (%.100s)", nphases, names);
    else
        snprintf(buf, len, "across GPUs, every ordered pair, phase %u of %u: each GPU exports "
                 "to the one %u after it (%.100s)", p->round, nphases, p->round, names);
}

int gpuipc_app_expand_devices(gpuipc_producer_run *run)
{
    const gpuipc_mech *sel[GPUIPC_APP_NMECH_MAX];
    size_t nsel = run->cells.n, n = run->ngpus, npairs, nusable = 0, k = 0, i, g, total;
    gpuipc_plan_pair *pairs = NULL;
    unsigned nphases = 0;
    char names[160] = "";
    gpuipc_cause why;
    int *usable, first = -1;

    memcpy(sel, run->cells.sel, nsel * sizeof(sel[0]));
    usable = calloc(n, sizeof(*usable));
    if (usable == NULL)
        return -1;
    /* The pairs go through the GPUs two processes can share, so that each
     * of them exports and imports across devices even where one between
     * them is kept apart by its compute mode (whose own rows say so). */
    for (g = 0; g < n; g++)
        if (!gpuipc_app_modes_block(&run->cmodes, run->gpus[g], &why))
            usable[nusable++] = run->gpus[g];
    /* Every ordered pair in the phases of run/plan.h, or --pairs ring's
     * quicker ring. */
    if (run->o->ring) {
        if ((pairs = calloc(nusable > 0 ? nusable : 1, sizeof(*pairs))) == NULL) {
            free(usable);
            return -1;
        }
        npairs = gpuipc_plan_ring(usable, nusable, pairs);
    } else {
        pairs = gpuipc_plan_phases(usable, nusable, &nphases);
        if (pairs == NULL && nusable >= 2) {
            free(usable);
            return -1;
        }
        npairs = nusable >= 2 ? nusable * (nusable - 1) : 0;
    }
    first = nusable > 0 ? usable[0] : run->gpus[0];
    /* Host memory once; every GPU mechanism on each GPU (a destructive one
     * on the first usable only: its consumer is spent after one scenario);
     * the pairs with the mechanisms that work across devices. */
    total = 0;
    for (i = 0; i < nsel; i++)
        total += !sel[i]->needs_cuda ? 1 : sel[i]->destructive ? 1 : n;
    for (i = 0; i < nsel; i++)
        total += sel[i]->cross_device ? npairs : 0;
    if (gpuipc_cellset_size(&run->cells, total) < 0) {
        free(pairs);
        free(usable);
        return -1;
    }
    for (g = 0; g < n; g++) {
        char head[192];

        heading(run->gpus[g], head, sizeof(head));
        for (i = 0; i < nsel; i++) {
            if (!sel[i]->needs_cuda || (sel[i]->destructive && run->gpus[g] != first))
                continue;
            gpuipc_cellset_name(&run->cells, k, sel[i], run->gpus[g], run->gpus[g], run->o->device);
            snprintf(run->cells.group[k], sizeof(run->cells.group[k]), "%s", head);
            k++;
        }
    }
    if (npairs > 0)
        crossing_names(sel, nsel, names, sizeof(names));
    /* Where the list would be long and every GPU mechanism of the
     * selection crosses GPUs (a destructive one aside), it says so. */
    for (i = 0, g = 0; i < nsel; i++)
        g += sel[i]->needs_cuda && !sel[i]->destructive && !sel[i]->cross_device;
    if (g == 0 && strlen(names) > 60)
        snprintf(names, sizeof(names), "every GPU mechanism above");
    for (g = 0; g < npairs; g++)
        for (i = 0; i < nsel; i++) {
            if (!sel[i]->cross_device)
                continue;
            gpuipc_cellset_name(&run->cells, k, sel[i], pairs[g].a, pairs[g].b, run->o->device);
            across_heading(run, &pairs[g], nphases, names, run->cells.group[k],
                           sizeof(run->cells.group[k]));
            k++;
        }
    for (i = 0; i < nsel; i++)
        if (!sel[i]->needs_cuda) {
            gpuipc_cellset_name(&run->cells, k, sel[i], -1, -1, run->o->device);
            snprintf(run->cells.group[k], sizeof(run->cells.group[k]), "host memory (no GPU)");
            k++;
        }
    gpuipc_cellset_publish(&run->cells, total); /* k == total: each counted cell is named */
    free(pairs);
    free(usable);
    return 0;
}

/* The driver's compute modes are run/plan.h's. */
_Static_assert((int)GPUIPC_PLAN_MODE_DEFAULT == (int)CU_COMPUTEMODE_DEFAULT &&
               (int)GPUIPC_PLAN_MODE_PROHIBITED == (int)CU_COMPUTEMODE_PROHIBITED &&
               (int)GPUIPC_PLAN_MODE_EXCLUSIVE_PROCESS == (int)CU_COMPUTEMODE_EXCLUSIVE_PROCESS,
               "run/plan.h's compute modes are CUDA's");

int gpuipc_app_modes_read(gpuipc_app_modes *m, int n)
{
    const char *dir = getenv("CUDA_MPS_PIPE_DIRECTORY");
    char control[300];
    struct stat st;
    int i;

    gpuipc_app_modes_free(m);
    if ((m->mode = calloc(n > 0 ? (size_t)n : 1, sizeof(*m->mode))) == NULL)
        return -ENOMEM;
    m->n = n;
    for (i = 0; i < n; i++)
        m->mode[i] = gpuipc_gpu_compute_mode(i);
    /* A running MPS control daemon keeps its control pipe in its directory.
     * Only a pipe or socket of root's or this user's counts: /tmp is
     * everyone's, and a file another user put there must not turn a root
     * health check's scenarios into skips. */
    snprintf(m->mps_dir, sizeof(m->mps_dir), "%s", dir != NULL && dir[0] != '\0' ? dir
                                                                               : "/tmp/nvidia-mps");
    snprintf(control, sizeof(control), "%s/control", m->mps_dir);
    m->mps = lstat(control, &st) == 0 && (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode)) &&
             (st.st_uid == 0 || st.st_uid == geteuid());
    return 0;
}

int gpuipc_app_modes_block(const gpuipc_app_modes *m, int ordinal, gpuipc_cause *why)
{
    int mode = m->mode != NULL && ordinal >= 0 && ordinal < m->n ? m->mode[ordinal] : -1;

    if (m->mode == NULL)
        return 0;
    return gpuipc_plan_mode_blocks(ordinal, mode, m->mps, m->mps_dir, why);
}

void gpuipc_app_modes_free(gpuipc_app_modes *m)
{
    free(m->mode);
    memset(m, 0, sizeof(*m));
}
