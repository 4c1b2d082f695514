/* SPDX-License-Identifier: Apache-2.0 */
/* ranks_watch.c: the watchdog's side of --ranks: where this rank is (its
 * rank, the pair it is in and its role there), kept in the run's volatile
 * ranks_where (in a phase, two pairs at once: the one it exports in and
 * the one it imports in, each with its side of the status page), which
 * the watchdog gets as its argument, and the watchdog's
 * line at --deadline or after a stop the rank did not end by itself, made
 * with write(2) and no malloc or stdio (the stuck thread may hold their
 * locks). */
#include <stdint.h>
#include <unistd.h>

#include "app/cuda/ranks_run.h"
#include "core/clock.h"
#include "core/status.h"
#include "core/step.h"
#include "core/watch.h"
#include "run/brief.h"

/* ", in pair P -> C as its producer, at STEP in CALL for S s" for slot k. */
static void say_slot(gpuipc_sbuf *b, const ranks_where *where, int k)
{
    const gpuipc_watch_page *page = gpuipc_watch_page_get();
    int role = k == RANKS_EXPORTS ? GPUIPC_ROLE_PRODUCER : GPUIPC_ROLE_CONSUMER;
    const gpuipc_watch_side *w = page != NULL ? &page->side[role] : NULL;
    uint32_t peer = where->as[k].peer;

    gpuipc_sbuf_str(b, " in pair ");
    gpuipc_sbuf_uint(b, k == RANKS_EXPORTS ? where->rank : peer);
    gpuipc_sbuf_str(b, " -> ");
    gpuipc_sbuf_uint(b, k == RANKS_EXPORTS ? peer : where->rank);
    gpuipc_sbuf_str(b, k == RANKS_EXPORTS ? " as its producer" : " as its consumer");
    if (w != NULL && w->step == GPUIPC_STEP_NONE) {
        gpuipc_sbuf_str(b, ", waiting for its peer to come");
    } else if (w != NULL) {
        gpuipc_sbuf_str(b, ", at ");
        gpuipc_sbuf_str(b, gpuipc_step_name(w->step));
        if (w->call[0] != '\0' && w->since_ns != 0) {
            gpuipc_sbuf_str(b, " in ");
            gpuipc_sbuf_str(b, w->call);
            gpuipc_sbuf_str(b, " for ");
            gpuipc_sbuf_secs(b, gpuipc_clock_ns() - w->since_ns, 1);
            gpuipc_sbuf_str(b, " s");
        }
    }
}

static void on_deadline(void *arg, int sig)
{
    const ranks_where *where = arg;
    char mem[768];
    gpuipc_sbuf b;
    int k, said = 0;

    gpuipc_sbuf_init(&b, mem, sizeof(mem));
    gpuipc_sbuf_str(&b, "rank ");
    gpuipc_sbuf_uint(&b, where->rank);
    gpuipc_sbuf_str(&b, ": result: ");
    gpuipc_sbuf_str(&b, gpuipc_status_word(sig ? GPUIPC_STOPPED : GPUIPC_FAIL));
    gpuipc_sbuf_str(&b, sig ? ": it did not end in time after the stop signal"
                            : ": --deadline (");
    if (!sig) {
        gpuipc_sbuf_uint(&b, where->deadline_s);
        gpuipc_sbuf_str(&b, " s) passed");
    }
    for (k = RANKS_EXPORTS; k <= RANKS_IMPORTS; k++) {
        if (!where->as[k].in_pair)
            continue;
        if (said++)
            gpuipc_sbuf_str(&b, ", and");
        say_slot(&b, where, k);
    }
    if (!said)
        gpuipc_sbuf_str(&b, " outside any pair (joining the job, or gathering the results)");
    if (sig) {
        gpuipc_sbuf_str(&b, " (exit ");
        gpuipc_sbuf_uint(&b, 128u + (unsigned)sig);
        gpuipc_sbuf_str(&b, ")\n");
    } else {
        gpuipc_sbuf_str(&b, "; the run's verdict is lost with it (exit 1)\n");
    }
    /* Under --brief, this line is the rank's one line. */
    gpuipc_sbuf_write(&b, gpuipc_brief_fd() >= 0 ? gpuipc_brief_fd() : 1);
    _exit(sig ? 128 + sig : GPUIPC_FAIL);
}

int gpuipc_ranks_watch_start(ranks_run *rr, uint64_t deadline_ns, uint64_t t0, gpuipc_err *err)
{
    int rc;

    rr->where.rank = rr->rank;
    rr->where.deadline_s = deadline_ns / 1000000000ull;
    if ((rc = gpuipc_watch_map(err)) < 0)
        return rc;
    if (deadline_ns > 0 &&
        (rc = gpuipc_watch_start(t0 + deadline_ns, on_deadline, &rr->where, err)) < 0)
        return rc;
    return 0;
}

void gpuipc_ranks_watch_pair(ranks_run *rr, uint32_t p, uint32_t c, int role)
{
    int k = role == GPUIPC_ROLE_PRODUCER ? RANKS_EXPORTS : RANKS_IMPORTS;

    rr->where.as[k].peer = k == RANKS_EXPORTS ? c : p;
    rr->where.as[k].in_pair = 1;
}

void gpuipc_ranks_watch_no_pair(ranks_run *rr, int k)
{
    rr->where.as[k].in_pair = 0;
}
