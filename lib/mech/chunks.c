/* SPDX-License-Identifier: Apache-2.0 */
/* chunks.c: the chunk engine: the plan, the offer's description, FD room,
 * and the producer's and consumer's sides of chunked memory over the
 * operations (gpuipc_chunk_ops) of one kind of memory. */
#include "mech/chunks.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "core/account.h"
#include "core/clock.h"
#include "core/progress.h"
#include "core/log.h"
#include "core/step.h"
#include "core/units.h"

#define FD_MARGIN 16 /* FDs a process may open besides a batch (driver, /proc) */

int gpuipc_chunks_plan(uint64_t size, unsigned count, uint64_t gran, gpuipc_chunk_plan *plan,
                       gpuipc_err *err)
{
    uint64_t chunk;

    memset(plan, 0, sizeof(*plan));
    if (count == 0 || count > GPUIPC_WIRE_MAX_OFFER_FDS)
        return gpuipc_err_set(err, -EINVAL, "%u chunks: the count must be 1 to %d", count,
                              GPUIPC_WIRE_MAX_OFFER_FDS);
    if (gran == 0 || (gran & (gran - 1)) != 0 || size == 0 || size > GPUIPC_SIZE_MAX)
        return gpuipc_err_set(err, -EINVAL, "chunks of %llu bytes at granularity %llu: no "
                              "plan", (unsigned long long)size, (unsigned long long)gran);
    chunk = (size + count - 1) / count;
    chunk = (chunk + gran - 1) / gran * gran;
    if (chunk > GPUIPC_SIZE_MAX / count)
        return gpuipc_err_set(err, -EINVAL, "%u chunks of %llu bytes exceed the 16 TiB limit",
                              count, (unsigned long long)chunk);
    plan->count = count;
    plan->chunk = chunk;
    plan->total = chunk * count;
    return 0;
}

static void put_le(uint8_t *p, uint64_t v, unsigned bytes)
{
    unsigned i;

    for (i = 0; i < bytes; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get_le(const uint8_t *p, unsigned bytes)
{
    uint64_t v = 0;
    unsigned i;

    for (i = 0; i < bytes; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

#define BLOB_LEN 16

void gpuipc_chunks_offer(const gpuipc_chunk_plan *plan, uint64_t gran, gpuipc_msg_offer *offer)
{
    offer->size = plan->total;
    offer->granularity = gran;
    offer->fds_total = plan->count;
    offer->blob_len = BLOB_LEN;
    memset(offer->blob, 0, sizeof(offer->blob));
    put_le(offer->blob, plan->count, 4);
    put_le(offer->blob + 8, plan->chunk, 8);
}

int gpuipc_chunks_from_offer(const gpuipc_msg_offer *offer, gpuipc_chunk_plan *plan,
                             gpuipc_err *err)
{
    memset(plan, 0, sizeof(*plan));
    if (offer->blob_len != BLOB_LEN)
        return gpuipc_err_set(err, -EPROTO, "chunked offer: blob of %u bytes, expected %d",
                              offer->blob_len, BLOB_LEN);
    plan->count = (unsigned)get_le(offer->blob, 4);
    plan->chunk = get_le(offer->blob + 8, 8);
    if (get_le(offer->blob + 4, 4) != 0)
        return gpuipc_err_set(err, -EPROTO, "chunked offer: reserved blob field is not 0");
    if (plan->count == 0 || plan->count != offer->fds_total)
        return gpuipc_err_set(err, -EPROTO, "chunked offer: %u chunks, but %u FDs announced",
                              plan->count, offer->fds_total);
    if (plan->chunk == 0 || offer->granularity == 0 || plan->chunk % offer->granularity != 0)
        return gpuipc_err_set(err, -EPROTO, "chunked offer: chunk size %llu is not a multiple "
                              "of granularity %llu", (unsigned long long)plan->chunk,
                              (unsigned long long)offer->granularity);
    if (plan->chunk > offer->size / plan->count || plan->chunk * plan->count != offer->size)
        return gpuipc_err_set(err, -EPROTO, "chunked offer: %u chunks of %llu bytes are not "
                              "the %llu bytes offered", plan->count,
                              (unsigned long long)plan->chunk, (unsigned long long)offer->size);
    plan->total = offer->size;
    return 0;
}

unsigned gpuipc_chunks_slot(unsigned i, unsigned count, int swap)
{
    if (swap && count >= 2 && i < 2)
        return 1 - i;
    return i;
}

int gpuipc_chunks_fd_room(unsigned n, const char *what, char *note, size_t cap,
                          gpuipc_err *err)
{
    unsigned want = n + FD_MARGIN, have;
    struct rlimit rl, raised;

    note[0] = '\0';
    if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
        return gpuipc_err_set(err, -errno, "getrlimit RLIMIT_NOFILE: %s", strerror(errno));
    if (rl.rlim_cur == RLIM_INFINITY)
        return 0;
    have = gpuipc_account_free_below(rl.rlim_cur, want);
    if (have >= want)
        return 0;
    raised = rl;
    raised.rlim_cur = rl.rlim_cur + (want - have);
    if (rl.rlim_max != RLIM_INFINITY && raised.rlim_cur > rl.rlim_max)
        raised.rlim_max = raised.rlim_cur;
    if (setrlimit(RLIMIT_NOFILE, &raised) < 0) {
        int e = errno;

        return gpuipc_err_set(err, -EMFILE, "%u more FDs (%s) do not fit: RLIMIT_NOFILE is "
                              "%llu (hard %llu) and only %u FD numbers are free below it, of "
                              "the %u needed (these and %u kept free for the driver and /proc); "
                              "raising it to %llu failed (%s): run with ulimit -n %llu or more (a "
                              "receiver under the same limit would lose FDs: MSG_CTRUNC)",
                              n, what, (unsigned long long)rl.rlim_cur,
                              (unsigned long long)rl.rlim_max, have, want, FD_MARGIN,
                              (unsigned long long)raised.rlim_cur, strerror(e),
                              (unsigned long long)raised.rlim_cur);
    }
    snprintf(note, cap, "RLIMIT_NOFILE raised from %llu to %llu%s to hold %u more FDs (%s)",
             (unsigned long long)rl.rlim_cur, (unsigned long long)raised.rlim_cur,
             raised.rlim_max != rl.rlim_max ? " (hard limit too)" : "", n, what);
    return 0;
}

/* Frees c: unmaps and frees the range, releases the handles held, going on
 * past failures. Returns 0 or the first failure (in err). */
static int destroy(gpuipc_chunks *c, gpuipc_err *err)
{
    unsigned i;
    int first = 0, rc;

    if (c->base != 0)
        first = c->ops->unmap(c, err);
    for (i = 0; c->held != NULL && i < c->plan.count; i++)
        if (c->held[i] && (rc = c->ops->drop(c->h[i], first < 0 ? NULL : err)) < 0 &&
            first == 0)
            first = rc;
    free(c->h);
    free(c->held);
    free(c->mapped);
    free(c->mem);
    free(c);
    return first;
}

/* Sets up the bookkeeping of plan and reserves the range. Returns c, or
 * NULL with err and nothing held. */
static gpuipc_chunks *create(gpuipc_scenario *sc, const gpuipc_chunk_ops *ops,
                             const gpuipc_chunk_plan *plan, uint64_t gran, gpuipc_err *err)
{
    gpuipc_chunks *c = calloc(1, sizeof(*c));
    int rc;

    if (c == NULL || (c->h = calloc(plan->count, sizeof(*c->h))) == NULL ||
        (c->held = calloc(plan->count, 1)) == NULL ||
        (c->mapped = calloc(plan->count, 1)) == NULL ||
        (c->mem = calloc(1, ops->mem_size ? ops->mem_size : 1)) == NULL) {
        if (c != NULL) {
            c->ops = ops;
            destroy(c, NULL);
        }
        gpuipc_err_set(err, -ENOMEM, "%s: out of memory for %u chunks", ops->mech, plan->count);
        return NULL;
    }
    c->ops = ops;
    c->plan = *plan;
    c->gran = gran;
    c->swap = gpuipc_inject_sabotage(&sc->env->inject, sc->env->role, GPUIPC_SABOTAGE_CHUNK_ORDER);
    if ((rc = ops->reserve(sc, c, err)) < 0) {
        c->base = 0;
        destroy(c, NULL);
        return NULL;
    }
    return c;
}

/* Makes room for n more FDs, saying so in the step log if the limit rose. */
static int fd_room(gpuipc_scenario *sc, const gpuipc_chunk_ops *ops, unsigned n, const char *what,
                   unsigned step, gpuipc_err *err)
{
    char note[192];
    int rc = gpuipc_chunks_fd_room(n, what, note, sizeof(note), err);

    if (rc == 0 && note[0] != '\0')
        gpuipc_log_step(&sc->env->log, GPUIPC_LOG_NORMAL, ops->mech, step, GPUIPC_LOG_NO_TIME,
                        "%s", note);
    return rc;
}

/* Maps handle h at slot, once. */
static int map_slot(gpuipc_chunks *c, unsigned slot, uint64_t h, gpuipc_err *err)
{
    int rc;

    if (c->mapped[slot])
        return gpuipc_err_set(err, -EPROTO, "slot %u is mapped already", slot);
    if ((rc = c->ops->map(c, slot, h, err)) < 0)
        return rc;
    c->mapped[slot] = 1;
    return 0;
}

static int grant(gpuipc_chunks *c, unsigned first, unsigned n, gpuipc_err *err)
{
    return c->ops->grant != NULL ? c->ops->grant(c, first, n, err) : 0;
}

static void done(gpuipc_scenario *sc, gpuipc_chunks *c, unsigned step)
{
    if (c->ops->done != NULL)
        c->ops->done(sc, c, step);
}

int gpuipc_chunks_alloc(gpuipc_scenario *sc, const gpuipc_chunk_ops *ops, uint64_t size,
                        gpuipc_buf *buf, gpuipc_err *err)
{
    uint64_t gran, t = gpuipc_clock_ns();
    gpuipc_chunk_plan plan;
    gpuipc_chunks *c;
    unsigned i = 0;
    int rc;

    memset(buf, 0, sizeof(*buf));
    if ((rc = ops->granularity(sc, &gran, err)) < 0 ||
        (rc = gpuipc_chunks_plan(size, sc->chunks ? sc->chunks : GPUIPC_DEFAULT_CHUNKS, gran,
                                 &plan, err)) < 0 ||
        (ops->fits != NULL && (rc = ops->fits(sc, &plan, err)) < 0))
        return rc;
    /* A side whose chunks are FDs keeps them all, and a batch of duplicates
     * (a message's worth, or fewer where there are fewer chunks). */
    if (ops->held_fds != NULL &&
        (rc = fd_room(sc, ops, plan.count + (plan.count < GPUIPC_WIRE_MAX_FDS
                                             ? plan.count : GPUIPC_WIRE_MAX_FDS),
                      ops->held_fds, GPUIPC_STEP_ALLOC, err)) < 0)
        return rc;
    if ((c = create(sc, ops, &plan, gran, err)) == NULL)
        return -ENOMEM;
    for (i = 0; i < plan.count; i++) {
        if ((rc = ops->create(c, i, err)) < 0)
            break;
        c->held[i] = 1;
        if ((rc = map_slot(c, i, c->h[i], err)) < 0)
            break;
    }
    if (rc == 0 && (rc = grant(c, 0, plan.count, err)) < 0)
        i = 0;
    if (rc < 0) {
        gpuipc_err_prefix(err, "chunk %u of %u", i, plan.count);
        destroy(c, NULL);
        return rc;
    }
    /* This side maps its chunks in order; the sabotage swaps them on export. */
    buf->size = plan.total;
    buf->granularity = gran;
    buf->priv = c;
    ops->describe(c, buf, 0, gpuipc_clock_ns() - t);
    done(sc, c, GPUIPC_STEP_ALLOC);
    return 0;
}

/* New FDs for FD numbers first .. first+n-1 into fds: all, or none. One
 * driver call per chunk, on this thread: exports on several threads were
 * measured on an H100 (4 threads, batches of 253) and made the end-to-end
 * time worse, not better: the producer's share fell from 60.7 to 55.6 us a
 * chunk, while the consumer's imports, running at the same time and the
 * slower stage of the pipeline, rose from 43.8 to 52.5 us a chunk. */
static int export_batch(gpuipc_scenario *sc, gpuipc_chunks *c, unsigned first, unsigned n, int *fds,
                        gpuipc_err *err)
{
    unsigned k;
    int rc;

    if (first >= c->plan.count)
        return gpuipc_err_set(err, -EINVAL, "no chunk %u: there are %u", first, c->plan.count);
    if (c->ops->held_fds == NULL &&
        (rc = fd_room(sc, c->ops, n, "a batch of exported FDs", GPUIPC_STEP_EXPORT, err)) < 0)
        return rc;
    for (k = 0; k < n; k++) {
        unsigned chunk = gpuipc_chunks_slot(first + k, c->plan.count, c->swap);

        if ((fds[k] = c->ops->export_fd(sc, c, c->h[chunk], err)) < 0) {
            rc = fds[k];
            gpuipc_err_prefix(err, "chunk %u", chunk);
            gpuipc_wire_close_fds(fds, k);
            gpuipc_progress_end();
            return rc;
        }
    }
    /* Thousands of chunks take seconds: progress.h's line, on a terminal,
     * for an export of more than one batch. */
    if (first == 0 && n < c->plan.count)
        gpuipc_progress_begin("exporting chunks", "chunks", c->plan.count);
    if (n < c->plan.count)
        gpuipc_progress_update(first + n);
    if (first + n == c->plan.count) {
        if (n < c->plan.count)
            gpuipc_progress_end();
        done(sc, c, GPUIPC_STEP_EXPORT);
    }
    return 0;
}

int gpuipc_chunks_export(gpuipc_scenario *sc, gpuipc_buf *buf, gpuipc_msg_offer *offer, int *fds,
                         unsigned *nfds, gpuipc_err *err)
{
    gpuipc_chunks *c = buf->priv;
    unsigned n = c->plan.count < GPUIPC_WIRE_MAX_FDS ? c->plan.count : GPUIPC_WIRE_MAX_FDS;
    int rc;

    if ((rc = export_batch(sc, c, 0, n, fds, err)) < 0)
        return rc;
    *nfds = n;
    gpuipc_chunks_offer(&c->plan, c->gran, offer);
    return 0;
}

int gpuipc_chunks_export_more(gpuipc_scenario *sc, gpuipc_buf *buf, unsigned first, int *fds,
                              unsigned max, unsigned *nfds, gpuipc_err *err)
{
    gpuipc_chunks *c = buf->priv;
    unsigned n = first < c->plan.count && c->plan.count - first < max ? c->plan.count - first
                                                                      : max;
    int rc;

    if ((rc = export_batch(sc, c, first, n, fds, err)) < 0)
        return rc;
    *nfds = n;
    return 0;
}

int gpuipc_chunks_import_more(gpuipc_scenario *sc, gpuipc_buf *buf, unsigned first, const int *fds,
                              unsigned nfds, gpuipc_err *err)
{
    gpuipc_chunks *c = buf->priv;
    uint64_t t = gpuipc_clock_ns();
    unsigned k;
    int rc;

    if (first > c->plan.count || nfds == 0 || nfds > c->plan.count - first)
        return gpuipc_err_set(err, -EPROTO, "FDs %u to %u: the offer has %u chunks", first,
                              first + nfds - 1, c->plan.count);
    for (k = 0; k < nfds; k++) {
        unsigned i = first + k;

        if ((rc = c->ops->import_fd(sc, c, i, fds[k], err)) < 0)
            break;
        c->held[i] = rc == 1;
        if ((rc = map_slot(c, gpuipc_chunks_slot(i, c->plan.count, c->swap), c->h[i],
                           err)) < 0)
            break;
    }
    /* With the sabotage, slots 0 and 1 trade places; both are in the batch. */
    if (k == nfds && (rc = grant(c, first, nfds, err)) < 0)
        k = 0;
    if (rc < 0) {
        gpuipc_err_prefix(err, "chunk %u", first + k);
        return rc;
    }
    gpuipc_log_step(&sc->env->log, GPUIPC_LOG_VERBOSE, c->ops->mech, GPUIPC_STEP_IMPORT,
                    gpuipc_clock_ns() - t, "chunks %u to %u: import, map%s", first,
                    first + nfds - 1, c->ops->grant != NULL ? ", access" : "");
    if (first + nfds == c->plan.count)
        done(sc, c, GPUIPC_STEP_IMPORT);
    return 0;
}

int gpuipc_chunks_import(gpuipc_scenario *sc, const gpuipc_chunk_ops *ops,
                         const gpuipc_msg_offer *offer, const int *fds, unsigned nfds,
                         gpuipc_buf *buf, gpuipc_err *err)
{
    gpuipc_chunk_plan plan;
    gpuipc_chunks *c;
    uint64_t gran;
    int rc;

    memset(buf, 0, sizeof(*buf));
    if ((rc = gpuipc_chunks_from_offer(offer, &plan, err)) < 0 ||
        (rc = ops->granularity(sc, &gran, err)) < 0)
        return rc;
    if (plan.chunk % gran != 0)
        return gpuipc_err_set(err, -EPROTO, "offered chunk size %llu is not a multiple of this "
                              "side's granularity %llu", (unsigned long long)plan.chunk,
                              (unsigned long long)gran);
    if ((c = create(sc, ops, &plan, gran, err)) == NULL)
        return -ENOMEM;
    buf->priv = c;
    if ((rc = gpuipc_chunks_import_more(sc, buf, 0, fds, nfds, err)) < 0) {
        destroy(c, NULL);
        memset(buf, 0, sizeof(*buf));
        return rc;
    }
    buf->size = plan.total;
    buf->granularity = gran;
    ops->describe(c, buf, 1, 0);
    return 0;
}

int gpuipc_chunks_release(gpuipc_scenario *sc, gpuipc_buf *buf, gpuipc_err *err)
{
    gpuipc_chunks *c = buf->priv;
    int rc;

    (void)sc;
    if (c == NULL)
        return 0;
    if (c->plan.count > GPUIPC_WIRE_MAX_FDS)
        gpuipc_progress_end(); /* an export that stopped half-way */
    rc = destroy(c, err);
    memset(buf, 0, sizeof(*buf));
    return rc;
}
