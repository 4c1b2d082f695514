/* SPDX-License-Identifier: Apache-2.0 */
/* cellset.c: the cells of a run, their names and results, in tables a
 * watchdog may read at any time (cellset.h). */
#include "run/cellset.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"

/* The set's tables: where each one's pointer is kept, and one entry's
 * size. Every table has an entry per cell. */
#define NTABLES 8

static void tables_of(gpuipc_cellset *cs, void *where[NTABLES], size_t size[NTABLES])
{
    where[0] = &cs->sel, size[0] = sizeof(*cs->sel);
    where[1] = &cs->results, size[1] = sizeof(*cs->results);
    where[2] = &cs->pair, size[2] = sizeof(*cs->pair);
    where[3] = &cs->label, size[3] = sizeof(*cs->label);
    where[4] = &cs->group, size[4] = sizeof(*cs->group);
    where[5] = &cs->ck_case, size[5] = sizeof(*cs->ck_case);
    where[6] = &cs->steps, size[6] = (cs->nstages > 0 ? cs->nstages : 1) * sizeof(*cs->steps);
    where[7] = &cs->have_steps, size[7] = sizeof(*cs->have_steps);
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

/* Tables replaced, kept until the set is freed (a watchdog may be reading
 * them). */
typedef struct retired {
    struct retired *next;
    void *table[NTABLES];
} retired;

/* Puts the set's tables on its retired list, and leaves it with none. */
static void retire(gpuipc_cellset *cs)
{
    void *where[NTABLES];
    size_t size[NTABLES];
    retired *r;
    int t;

    if (cs->sel == NULL)
        return;
    if ((r = calloc(1, sizeof(*r))) == NULL)
        return; /* kept in place, never freed: a small leak rather than a use after free */
    tables_of(cs, where, size);
    for (t = 0; t < NTABLES; t++)
        r->table[t] = table_get(where[t]);
    r->next = cs->retired;
    cs->retired = r;
}

void gpuipc_cellset_init(gpuipc_cellset *cs, size_t nstages)
{
    memset(cs, 0, sizeof(*cs));
    cs->nstages = nstages;
}

int gpuipc_cellset_size(gpuipc_cellset *cs, size_t n)
{
    /* At least as long as the tables they replace: a watchdog that read the
     * old count just before the swap stays inside the new ones. */
    size_t k = n > cs->n ? n : cs->n > 0 ? cs->n : 1, size[NTABLES], i;
    void *where[NTABLES], *fresh[NTABLES];
    gpuipc_result *results;
    int t, ok = 1;

    tables_of(cs, where, size);
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
    retire(cs);
    /* A watchdog reads n (acquire) and then the tables. No cell is shown
     * until the new ones are named (gpuipc_cellset_publish); each table is
     * as long as the old count, so a reader that read the old count just
     * before stays inside the new tables too. */
    __atomic_store_n(&cs->n, 0, __ATOMIC_RELEASE);
    for (t = 0; t < NTABLES; t++)
        table_set(where[t], fresh[t]);
    (void)n;
    return 0;
}

void gpuipc_cellset_publish(gpuipc_cellset *cs, size_t n)
{
    __atomic_store_n(&cs->n, n, __ATOMIC_RELEASE);
}

void gpuipc_cellset_free(gpuipc_cellset *cs)
{
    void *where[NTABLES];
    size_t size[NTABLES];
    retired *r, *next;
    int t;

    retire(cs);
    for (r = cs->retired; r != NULL; r = next) {
        next = r->next;
        for (t = 0; t < NTABLES; t++)
            free(r->table[t]);
        free(r);
    }
    cs->retired = NULL;
    __atomic_store_n(&cs->n, 0, __ATOMIC_RELEASE);
    tables_of(cs, where, size);
    for (t = 0; t < NTABLES; t++)
        table_set(where[t], NULL);
}

size_t gpuipc_cellset_count(const gpuipc_cellset *cs)
{
    return cs != NULL ? __atomic_load_n(&cs->n, __ATOMIC_ACQUIRE) : 0;
}

void gpuipc_cellset_name(gpuipc_cellset *cs, size_t i, const gpuipc_mech *m, int a, int b,
                         int device)
{
    gpuipc_result *r = &cs->results[i];

    cs->sel[i] = m;
    cs->pair[i][0] = a;
    cs->pair[i][1] = b;
    cs->group[i][0] = '\0';
    if (a < 0) {
        snprintf(cs->label[i], sizeof(cs->label[i]), "%s", m->name);
        if (m->needs_cuda)
            snprintf(cs->ck_case[i], sizeof(cs->ck_case[i]), "%s-gpu%d", m->name, device);
        else
            snprintf(cs->ck_case[i], sizeof(cs->ck_case[i]), "%s-host", m->name);
    } else if (a == b) {
        /* Under its GPU's heading in the summary; the result's gpu says it
         * where the name stands alone (--brief, the document). */
        snprintf(cs->label[i], sizeof(cs->label[i]), "%s", m->name);
        snprintf(cs->ck_case[i], sizeof(cs->ck_case[i]), "%s-gpu%d", m->name, a);
    } else {
        snprintf(cs->label[i], sizeof(cs->label[i]), "%s %d->%d", m->name, a, b);
        snprintf(cs->ck_case[i], sizeof(cs->ck_case[i]), "%s-gpu%dto%d", m->name, a, b);
    }
    r->mech = cs->label[i];
    r->mechanism = m->name;
    r->group = cs->group[i];
    r->gpu = a >= 0 ? a : m->needs_cuda ? device : -1;
    r->peer_gpu = a >= 0 && b != a ? b : -1;
    /* Not run until the probes or a round say otherwise: a cell that never
     * ran must never count as passed (a zeroed result would). */
    r->status = -1;
}

void gpuipc_cellset_tally(const gpuipc_cellset *cs, unsigned *passed, unsigned *failed,
                          unsigned *skipped)
{
    size_t n = gpuipc_cellset_count(cs), i;

    *passed = *failed = *skipped = 0;
    for (i = 0; i < n; i++) {
        int st = cs->results[i].status;

        *passed += st == GPUIPC_PASS;
        *failed += st == GPUIPC_FAIL;
        *skipped += st == GPUIPC_SKIP;
    }
}

enum gpuipc_cell_where gpuipc_cell_where_of(int gpu, int peer_gpu)
{
    if (gpu < 0)
        return GPUIPC_CELL_HOST_MEMORY;
    return peer_gpu >= 0 && peer_gpu != gpu ? GPUIPC_CELL_ACROSS_GPUS : GPUIPC_CELL_ONE_GPU;
}

gpuipc_cellset_census gpuipc_cellset_census_of(const gpuipc_result *results, size_t n)
{
    gpuipc_cellset_census c = {0, 0, 0, 0, 0};
    size_t i;

    for (i = 0; i < n; i++) {
        switch (gpuipc_cell_where_of(results[i].gpu, results[i].peer_gpu)) {
        case GPUIPC_CELL_ONE_GPU:
            c.one_gpu++;
            break;
        case GPUIPC_CELL_ACROSS_GPUS:
            c.across_gpus++;
            break;
        case GPUIPC_CELL_HOST_MEMORY:
            c.host_memory++;
            break;
        }
        c.cells++;
        c.ns += results[i].ns;
    }
    return c;
}

char *gpuipc_cellset_census_text(const gpuipc_cellset_census *c, char *buf, size_t len)
{
    const struct {
        unsigned n;
        const char *where;
    } parts[] = {{c->one_gpu, "on one GPU"}, {c->across_gpus, "across GPUs"},
                 {c->host_memory, "in host memory"}};
    size_t used, i, shown = 0;

    used = (size_t)snprintf(buf, len, "%u", c->cells);
    for (i = 0; i < sizeof(parts) / sizeof(parts[0]) && used < len; i++) {
        if (parts[i].n == 0)
            continue;
        used += (size_t)snprintf(buf + used, len - used, "%s%u %s", shown++ ? ", " : " (",
                                 parts[i].n, parts[i].where);
    }
    if (shown && used < len)
        snprintf(buf + used, len - used, ")");
    return buf;
}
