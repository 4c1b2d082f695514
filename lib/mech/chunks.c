/* chunks.c: the plan, the offer's description and FD room for chunked memory. */
#include "mech/chunks.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

#include "core/account.h"
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
                              "%llu (hard %llu) and only %u FD numbers are free below it; "
                              "raising it to %llu failed (%s): run with ulimit -n %llu or more (a "
                              "receiver under the same limit would lose FDs: MSG_CTRUNC)",
                              n, what, (unsigned long long)rl.rlim_cur,
                              (unsigned long long)rl.rlim_max, have,
                              (unsigned long long)raised.rlim_cur, strerror(e),
                              (unsigned long long)raised.rlim_cur);
    }
    snprintf(note, cap, "RLIMIT_NOFILE raised from %llu to %llu%s to hold %u more FDs (%s)",
             (unsigned long long)rl.rlim_cur, (unsigned long long)raised.rlim_cur,
             raised.rlim_max != rl.rlim_max ? " (hard limit too)" : "", n, what);
    return 0;
}
