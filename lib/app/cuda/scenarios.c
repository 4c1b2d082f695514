/* SPDX-License-Identifier: Apache-2.0 */
/* scenarios.c: the producer's scenarios: their tables, sized once the run
 * knows its GPUs, and their names; the expansion of the selection over the
 * GPUs of the run (every mechanism on each GPU, and across GPUs the ring of
 * run/plan.h with the mechanisms that work between devices) or over the
 * pairs of --pairs. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "app/cuda/app.h"
#include "core/log.h"
#include "core/units.h"
#include "gpu/cudrv.h"
#include "gpu/gpu.h"
#include "run/plan.h"

/* The run's tables: where each one's pointer is kept, and one entry's
 * size. Every table has an entry per scenario. */
#define NTABLES 8

static void tables_of(gpuipc_producer_run *run, void *where[NTABLES], size_t size[NTABLES])
{
    where[0] = &run->sel, size[0] = sizeof(*run->sel);
    where[1] = &run->results, size[1] = sizeof(*run->results);
    where[2] = &run->pair, size[2] = sizeof(*run->pair);
    where[3] = &run->label, size[3] = sizeof(*run->label);
    where[4] = &run->group, size[4] = sizeof(*run->group);
    where[5] = &run->ck_case, size[5] = sizeof(*run->ck_case);
    where[6] = &run->steps, size[6] = sizeof(*run->steps);
    where[7] = &run->have_steps, size[7] = sizeof(*run->have_steps);
}

/* The table pointer kept at where (each is an object pointer), or its new
 * value. */
static void *table_get(void *where)
{
    void *p;

    memcpy(&p, where, sizeof(p));
    return p;
}

static void table_set(void *where, void *p)
{
    memcpy(where, &p, sizeof(p));
}

/* Tables replaced, kept until the run's end (a watchdog may be reading
 * them). */
typedef struct retired {
    struct retired *next;
    void *table[NTABLES];
} retired;

/* Puts the run's tables on its retired list, and leaves it with none. */
static void retire(gpuipc_producer_run *run)
{
    void *where[NTABLES];
    size_t size[NTABLES];
    retired *r;
    int t;

    if (run->sel == NULL)
        return;
    if ((r = calloc(1, sizeof(*r))) == NULL)
        return; /* kept in place, never freed: a small leak rather than a use after free */
    tables_of(run, where, size);
    for (t = 0; t < NTABLES; t++)
        r->table[t] = table_get(where[t]);
    r->next = run->retired;
    run->retired = r;
}

int gpuipc_app_scenarios_size(gpuipc_producer_run *run, size_t n)
{
    /* At least as long as the tables they replace: a watchdog that read the
     * old count just before the swap stays inside the new ones. */
    size_t k = n > run->nsel ? n : run->nsel > 0 ? run->nsel : 1, size[NTABLES], i;
    void *where[NTABLES], *fresh[NTABLES];
    gpuipc_result *results;
    int t, ok = 1;

    tables_of(run, where, size);
    for (t = 0; t < NTABLES; t++)
        ok &= (fresh[t] = calloc(k, size[t])) != NULL;
    if (!ok) {
        for (t = 0; t < NTABLES; t++)
            free(fresh[t]);
        return -1;
    }
    results = fresh[1];
    for (i = 0; i < k; i++)
        results[i].status = -1; /* not run */
    retire(run);
    /* A watchdog reads nsel (acquire) and then the tables: each pointer is
     * stored before the count that goes with it is released, and each
     * table is as long as the old count, so an old count with new tables
     * stays inside them too. */
    for (t = 0; t < NTABLES; t++)
        table_set(where[t], fresh[t]);
    __atomic_store_n(&run->nsel, n, __ATOMIC_RELEASE);
    return 0;
}

void gpuipc_app_scenarios_free(gpuipc_producer_run *run)
{
    void *where[NTABLES];
    size_t size[NTABLES];
    retired *r, *next;
    int t;

    retire(run);
    for (r = run->retired; r != NULL; r = next) {
        next = r->next;
        for (t = 0; t < NTABLES; t++)
            free(r->table[t]);
        free(r);
    }
    run->retired = NULL;
    __atomic_store_n(&run->nsel, 0, __ATOMIC_RELEASE);
    tables_of(run, where, size);
    for (t = 0; t < NTABLES; t++)
        table_set(where[t], NULL);
    free(run->gpus);
    run->gpus = NULL;
    run->ngpus = 0;
    gpuipc_app_modes_free(&run->cmodes);
}

void gpuipc_app_name_scenario(gpuipc_producer_run *run, size_t i, const gpuipc_mech *m, int a,
                              int b)
{
    gpuipc_result *r = &run->results[i];

    run->sel[i] = m;
    run->pair[i][0] = a;
    run->pair[i][1] = b;
    run->group[i][0] = '\0';
    if (a < 0) {
        snprintf(run->label[i], sizeof(run->label[i]), "%s", m->name);
        if (m->needs_cuda)
            snprintf(run->ck_case[i], sizeof(run->ck_case[i]), "%s-gpu%d", m->name,
                     run->o->device);
        else
            snprintf(run->ck_case[i], sizeof(run->ck_case[i]), "%s-host", m->name);
    } else if (a == b) {
        /* Under its GPU's heading in the summary; the result's gpu says it
         * where the name stands alone (--brief, the document). */
        snprintf(run->label[i], sizeof(run->label[i]), "%s", m->name);
        snprintf(run->ck_case[i], sizeof(run->ck_case[i]), "%s-gpu%d", m->name, a);
    } else {
        snprintf(run->label[i], sizeof(run->label[i]), "%s %d->%d", m->name, a, b);
        snprintf(run->ck_case[i], sizeof(run->ck_case[i]), "%s-gpu%dto%d", m->name, a, b);
    }
    r->mech = run->label[i];
    r->mechanism = m->name;
    r->group = run->group[i];
    r->gpu = a >= 0 ? a : m->needs_cuda ? run->o->device : -1;
    r->peer_gpu = a >= 0 && b != a ? b : -1;
    /* Not run until the probes or a round say otherwise: a scenario that
     * never ran must never count as passed (a zeroed result would). */
    r->status = -1;
}

int gpuipc_app_expand_pairs(gpuipc_producer_run *run)
{
    const gpuipc_mech *m = run->sel[0];
    size_t cap, np, i;
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
    if ((pairs = calloc(cap, sizeof(*pairs))) == NULL) {
        gpuipc_log_say("--pairs: out of memory");
        return GPUIPC_FAIL;
    }
    if (gpuipc_options_pairs(run->o->pairs, n, pairs, cap, &np, &err) < 0) {
        gpuipc_log_say("%s", err.msg);
        rc = GPUIPC_USAGE;
    } else if (gpuipc_app_scenarios_size(run, np) < 0) {
        gpuipc_log_say("--pairs: out of memory for %zu scenarios", np);
        rc = GPUIPC_FAIL;
    } else {
        for (i = 0; i < np; i++)
            gpuipc_app_name_scenario(run, i, m, pairs[i][0], pairs[i][1]);
        snprintf(run->where, sizeof(run->where), "%zu device pair%s among %d GPUs (the %s "
                 "mechanism, producer->consumer)", np, np == 1 ? "" : "s", n, m->name);
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

int gpuipc_app_expand_devices(gpuipc_producer_run *run)
{
    const gpuipc_mech *sel[GPUIPC_APP_NMECH_MAX];
    size_t nsel = run->nsel, n = run->ngpus, nring, nusable = 0, k = 0, i, g, total;
    gpuipc_plan_pair *ring;
    char names[160] = "";
    gpuipc_cause why;
    int *usable, first = -1;

    memcpy(sel, run->sel, nsel * sizeof(sel[0]));
    ring = calloc(n, sizeof(*ring));
    usable = calloc(n, sizeof(*usable));
    if (ring == NULL || usable == NULL) {
        free(ring);
        free(usable);
        return -1;
    }
    /* The ring goes through the GPUs two processes can share, so that each
     * of them exports and imports across devices even where one between
     * them is kept apart by its compute mode (whose own rows say so). */
    for (g = 0; g < n; g++)
        if (!gpuipc_app_modes_block(&run->cmodes, run->gpus[g], &why))
            usable[nusable++] = run->gpus[g];
    nring = gpuipc_plan_ring(usable, nusable, ring);
    first = nusable > 0 ? usable[0] : run->gpus[0];
    /* Host memory once; every GPU mechanism on each GPU (a destructive one
     * on the first usable only: its consumer is spent after one scenario);
     * the ring with the mechanisms that work across devices. */
    total = 0;
    for (i = 0; i < nsel; i++)
        total += !sel[i]->needs_cuda ? 1 : sel[i]->destructive ? 1 : n;
    for (i = 0; i < nsel; i++)
        total += sel[i]->cross_device ? nring : 0;
    if (gpuipc_app_scenarios_size(run, total) < 0) {
        free(ring);
        free(usable);
        return -1;
    }
    for (g = 0; g < n; g++) {
        char head[192];

        heading(run->gpus[g], head, sizeof(head));
        for (i = 0; i < nsel; i++) {
            if (!sel[i]->needs_cuda || (sel[i]->destructive && run->gpus[g] != first))
                continue;
            gpuipc_app_name_scenario(run, k, sel[i], run->gpus[g], run->gpus[g]);
            snprintf(run->group[k], sizeof(run->group[k]), "%s", head);
            k++;
        }
    }
    for (i = 0; i < nsel && nring > 0; i++) {
        if (!sel[i]->cross_device)
            continue;
        snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s",
                 names[0] ? ", " : "", sel[i]->name);
    }
    for (g = 0; g < nring; g++)
        for (i = 0; i < nsel; i++) {
            if (!sel[i]->cross_device)
                continue;
            gpuipc_app_name_scenario(run, k, sel[i], ring[g].a, ring[g].b);
            snprintf(run->group[k], sizeof(run->group[k]), "across GPUs, the ring: each GPU "
                     "exports to the next (%.130s)", names);
            k++;
        }
    for (i = 0; i < nsel; i++)
        if (!sel[i]->needs_cuda) {
            gpuipc_app_name_scenario(run, k, sel[i], -1, -1);
            snprintf(run->group[k], sizeof(run->group[k]), "host memory (no GPU)");
            k++;
        }
    free(ring);
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
