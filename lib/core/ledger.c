/* SPDX-License-Identifier: Apache-2.0 */
/* ledger.c: the process's count of driver objects it holds.
 *
 * Live objects sit in a slab of entries chained into hash buckets by
 * (kind, key); released entries go back on a free list, so a soak of a
 * thousand rounds keeps the storage of one round. Every entry has a serial
 * number from one counter, which is what "added since a mark" compares. A
 * mutex guards everything: the driver may be called from several threads. */
#include "core/ledger.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/units.h"

#define BUCKETS 16384u /* a power of two; chunked memory holds up to 2 x 65536 objects */
#define NONE UINT32_MAX
#define NAMED 4 /* objects named in a leak description */

typedef struct entry {
    uint64_t key;
    uint64_t size;
    uint64_t serial;
    uint32_t tag;  /* the adding thread's tag (gpuipc_ledger_set_tag) */
    uint32_t next; /* the next entry of the bucket, or of the free list */
    int kind;      /* -1: free */
} entry;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static entry *slab;
static uint32_t cap, used, free_head = NONE;
static uint32_t *bucket; /* BUCKETS heads, or NULL before the first add */
static uint64_t serial, live, live_bytes;
static __thread uint32_t my_tag; /* this thread's tag for what it adds */

void gpuipc_ledger_set_tag(uint32_t tag)
{
    my_tag = tag;
}

static const char *const names[GPUIPC_LEDGER_KINDS] = {
    [GPUIPC_LEDGER_HANDLE] = "handle",   [GPUIPC_LEDGER_RANGE] = "address range",
    [GPUIPC_LEDGER_MAPPING] = "mapping", [GPUIPC_LEDGER_ALLOC] = "allocation",
    [GPUIPC_LEDGER_IPC] = "IPC open",    [GPUIPC_LEDGER_POOL] = "memory pool",
    [GPUIPC_LEDGER_EVENT] = "event",     [GPUIPC_LEDGER_CONTEXT] = "primary context",
};

const char *gpuipc_ledger_kind_name(int kind)
{
    return kind >= 0 && kind < GPUIPC_LEDGER_KINDS ? names[kind] : "object";
}

static uint32_t hash(int kind, uint64_t key)
{
    uint64_t x = (key ^ ((uint64_t)kind << 59)) * 0x9E3779B97F4A7C15ull;

    return (uint32_t)(x >> 40) & (BUCKETS - 1);
}

/* Takes a free entry, growing the slab if need be. Returns its index or NONE. */
static uint32_t take_entry(void)
{
    uint32_t i;

    if (free_head != NONE) {
        i = free_head;
        free_head = slab[i].next;
        return i;
    }
    if (used == cap) {
        uint32_t bigger = cap ? 2 * cap : 256;
        entry *p = realloc(slab, (size_t)bigger * sizeof(*slab));

        if (p == NULL)
            return NONE;
        slab = p;
        cap = bigger;
    }
    return used++;
}

int gpuipc_ledger_add(int kind, uint64_t key, uint64_t size)
{
    uint32_t i, b;
    int rc = 0;

    pthread_mutex_lock(&lock);
    if (bucket == NULL) {
        bucket = malloc(BUCKETS * sizeof(*bucket));
        if (bucket != NULL)
            memset(bucket, 0xff, BUCKETS * sizeof(*bucket)); /* every head NONE */
    }
    i = bucket != NULL ? take_entry() : NONE;
    if (i == NONE) {
        rc = -ENOMEM;
        goto out;
    }
    b = hash(kind, key);
    slab[i].key = key;
    slab[i].size = size;
    slab[i].serial = ++serial;
    slab[i].tag = my_tag;
    slab[i].kind = kind;
    slab[i].next = bucket[b];
    bucket[b] = i;
    live++;
    live_bytes += size;
out:
    pthread_mutex_unlock(&lock);
    return rc;
}

/* Unlinks entry i, whose predecessor in bucket b is prev (NONE: the head). */
static void drop(uint32_t b, uint32_t prev, uint32_t i)
{
    if (prev == NONE)
        bucket[b] = slab[i].next;
    else
        slab[prev].next = slab[i].next;
    live--;
    live_bytes -= slab[i].size;
    slab[i].kind = -1;
    slab[i].next = free_head;
    free_head = i;
}

int gpuipc_ledger_remove(int kind, uint64_t key)
{
    uint32_t b, i, prev = NONE, best = NONE, best_prev = NONE;

    pthread_mutex_lock(&lock);
    if (bucket == NULL) {
        pthread_mutex_unlock(&lock);
        return 0;
    }
    b = hash(kind, key);
    for (i = bucket[b]; i != NONE; prev = i, i = slab[i].next) {
        if (slab[i].kind != kind || slab[i].key != key)
            continue;
        if (best == NONE || slab[i].serial > slab[best].serial) {
            best = i;
            best_prev = prev;
        }
    }
    if (best != NONE)
        drop(b, best_prev, best);
    pthread_mutex_unlock(&lock);
    return best != NONE;
}

size_t gpuipc_ledger_remove_range(int kind, uint64_t start, uint64_t size)
{
    size_t n = 0;
    uint32_t b;

    pthread_mutex_lock(&lock);
    for (b = 0; bucket != NULL && b < BUCKETS; b++) {
        uint32_t i = bucket[b], prev = NONE;

        while (i != NONE) {
            uint32_t next = slab[i].next;

            if (slab[i].kind == kind && slab[i].key >= start && slab[i].key - start < size) {
                drop(b, prev, i);
                n++;
            } else {
                prev = i;
            }
            i = next;
        }
    }
    pthread_mutex_unlock(&lock);
    return n;
}

void gpuipc_ledger_mark_now(gpuipc_ledger_mark *m)
{
    pthread_mutex_lock(&lock);
    m->serial = serial;
    m->live = live;
    m->bytes = live_bytes;
    m->tag = my_tag;
    pthread_mutex_unlock(&lock);
}

static void describe(const entry *e, char *buf, size_t len)
{
    char size[32];

    if (e->kind == GPUIPC_LEDGER_HANDLE || e->kind == GPUIPC_LEDGER_POOL ||
        e->kind == GPUIPC_LEDGER_EVENT)
        snprintf(buf, len, "%s 0x%llx%s%s", names[e->kind], (unsigned long long)e->key,
                 e->size ? " of " : "",
                 e->size ? gpuipc_units_format_size(e->size, size, sizeof(size)) : "");
    else if (e->kind == GPUIPC_LEDGER_CONTEXT)
        snprintf(buf, len, "%s of device %llu", names[e->kind], (unsigned long long)e->key);
    else if (e->size)
        snprintf(buf, len, "%s of %s at 0x%llx", names[e->kind],
                 gpuipc_units_format_size(e->size, size, sizeof(size)),
                 (unsigned long long)e->key);
    else
        snprintf(buf, len, "%s at 0x%llx", names[e->kind], (unsigned long long)e->key);
}

size_t gpuipc_ledger_since(const gpuipc_ledger_mark *m, uint64_t *bytes, char *text, size_t len)
{
    uint32_t oldest[NAMED], i;
    size_t n = 0, k, shown = 0;
    uint64_t sum = 0;

    pthread_mutex_lock(&lock);
    for (i = 0; i < used; i++) {
        if (slab[i].kind < 0 || slab[i].serial <= m->serial ||
            (m->tag != 0 && slab[i].tag != m->tag))
            continue;
        sum += slab[i].size;
        /* Keep the NAMED oldest in oldest[0..shown), in order of serial. */
        for (k = shown; k > 0 && slab[oldest[k - 1]].serial > slab[i].serial; k--)
            if (k < NAMED)
                oldest[k] = oldest[k - 1];
        if (k < NAMED) {
            oldest[k] = i;
            if (shown < NAMED)
                shown++;
        }
        n++;
    }
    if (text != NULL && len > 0) {
        size_t at = 0;

        text[0] = '\0';
        for (k = 0; k < shown && at < len; k++) {
            char one[128];

            describe(&slab[oldest[k]], one, sizeof(one));
            at += (size_t)snprintf(text + at, len - at, "%s%s", k ? ", " : "", one);
        }
        if (n > shown && at < len)
            snprintf(text + at, len - at, " and %zu more", n - shown);
    }
    pthread_mutex_unlock(&lock);
    if (bytes != NULL)
        *bytes = sum;
    return n;
}

void gpuipc_ledger_reset(void)
{
    pthread_mutex_lock(&lock);
    free(slab);
    free(bucket);
    slab = NULL;
    bucket = NULL;
    cap = used = 0;
    free_head = NONE;
    live = live_bytes = 0;
    pthread_mutex_unlock(&lock);
}
