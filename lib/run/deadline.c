/* SPDX-License-Identifier: Apache-2.0 */
/* deadline.c: the end of a run at its --deadline, however it is stuck
 * (deadline.h): the watchdog's verdict, from the view the program filled
 * and the status page, written with system calls and the view's memory. */
#include "run/deadline.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/names.h"
#include "core/procstat.h"
#include "core/status.h"
#include "core/step.h"
#include "core/stop.h"
#include "run/brief.h"
#include "run/report_files.h"

_Static_assert(sizeof(((gpuipc_cellset *)0)->label[0]) == GPUIPC_OUTCOME_LABEL_LEN,
               "the cells' names as run/doc.h reads them");

/* How long the producer's watchdog waits for the consumers it killed. */
#define REAP_NS (1000ull * 1000000ull)

void gpuipc_deadline_init(gpuipc_deadline *dl, int role, uint64_t t0,
                          const gpuipc_doc_program *prog)
{
    memset(dl, 0, sizeof(*dl));
    dl->role = role;
    dl->t0 = t0;
    dl->prog = *prog;
}

int gpuipc_deadline_set_doc(gpuipc_deadline *dl, gpuipc_deadline_doc *doc)
{
    if (dl->older != NULL)
        return -1;
    dl->older = dl->doc;
    __atomic_store_n(&dl->doc, doc, __ATOMIC_RELEASE);
    return 0;
}

/* What the deadline decides, for doc_write. */
typedef struct deadline_end {
    const gpuipc_cellset *cells; /* the producer's cells, or NULL */
    const char *verdict;       /* the result line's text, after "result: " */
    const char *consumer;      /* how the consumer ended, or NULL (a consumer's own) */
    uint64_t wall_ns;          /* the run's time so far */
    int code;                  /* the exit status of the watchdog's verdict */
} deadline_end;

/* Writes dd's document, finished with end and the cells the run's thread
 * has published (a cell under way is a failure "under way when the deadline
 * passed"), through the file checked before the run or to standard output.
 * Async-signal-safe: system calls and dd's memory only; nothing of the run
 * is changed. Returns 0 (also where no document is wanted: dd NULL), or -1
 * where it could not be written whole. */
static int doc_write(gpuipc_deadline_doc *dd, const deadline_end *end)
{
    const gpuipc_cellset *cells = end->cells;
    gpuipc_doc d;

    if (dd == NULL)
        return 0;
    d = dd->d;
    d.exit_code = end->code;
    d.result = end->verdict;
    d.wall_ns = end->wall_ns;
    d.consumer = end->consumer;
    if (cells != NULL && (d.n = gpuipc_cellset_count(cells)) > 0) {
        /* The tables are whole and at least d.n long once the count is read. */
        d.results = cells->results;
        d.labels = (const char (*)[GPUIPC_OUTCOME_LABEL_LEN])cells->label;
        d.steps = cells->steps;
        d.have_steps = cells->have_steps;
    }
    return gpuipc_doc_write_kit(&d, &dd->kit);
}

/* Whether a side of the page waits for the other process (in a wire poll)
 * rather than being stuck in a call or in its own code. */
static int waits(const gpuipc_watch_side *s)
{
    return strncmp(s->call, "poll", 4) == 0 || strcmp(s->call, "waitpid") == 0;
}

/* "at <step> in <call> for N.NNN s (scenario <s>)" for side s, now at now. */
static void put_state(gpuipc_sbuf *b, const gpuipc_watch_side *s, uint64_t now)
{
    gpuipc_sbuf_str(b, s->step ? "at " : "");
    gpuipc_sbuf_str(b, s->step ? gpuipc_step_name(s->step)
                               : "outside a session (before its HELLO or after its last step)");
    if (s->call[0] != '\0') {
        gpuipc_sbuf_str(b, " in ");
        gpuipc_sbuf_str(b, s->call);
        if (s->since_ns != 0 && now > s->since_ns) {
            gpuipc_sbuf_str(b, " for ");
            gpuipc_sbuf_secs(b, now - s->since_ns, 3);
            gpuipc_sbuf_str(b, " s");
        }
    } else {
        gpuipc_sbuf_str(b, " (no call in flight)");
    }
    if (s->scenario[0] != '\0') {
        gpuipc_sbuf_str(b, ", scenario ");
        gpuipc_sbuf_str(b, s->scenario);
    }
}

/* Where side s (called name) is a stopped process (its state in
 * /proc/<pid>/stat: SIGSTOP, job control, a debugger), says so into b, with
 * where it was, and returns 1; else 0. A stopped process waits for nothing:
 * it runs no further until it is resumed. */
static int put_stopped(const gpuipc_deadline *dl, gpuipc_sbuf *b, const gpuipc_watch_side *s,
                       const char *name, uint64_t now)
{
    size_t i = (size_t)(s - dl->snap.side);
    char state[2] = {i < sizeof(dl->snap_state) ? dl->snap_state[i] : '\0', '\0'};

    if (state[0] != 'T' && state[0] != 't')
        return 0;
    gpuipc_sbuf_str(b, "the ");
    gpuipc_sbuf_str(b, name);
    gpuipc_sbuf_str(b, " (pid ");
    gpuipc_sbuf_uint(b, (uint64_t)s->pid);
    gpuipc_sbuf_str(b, ") is stopped (state ");
    gpuipc_sbuf_str(b, state);
    gpuipc_sbuf_str(b, " in /proc/");
    gpuipc_sbuf_uint(b, (uint64_t)s->pid);
    gpuipc_sbuf_str(b, state[0] == 't' ? "/stat: held by a debugger), last "
                                       : "/stat: SIGSTOP or job control; SIGCONT resumes it), "
                                         "last ");
    put_state(b, s, now);
    return 1;
}

/* How many of a phase's workers the result line names at most; the rest
 * are counted. */
#define WORKERS_NAMED 6

/* How many of a phase's workers are at work on page pg, and of those how
 * many are stuck (in a call or a step of their own, not waiting). */
static unsigned count_workers(const gpuipc_watch_page *pg, unsigned *stuck)
{
    unsigned at_work = 0, r, i;

    *stuck = 0;
    for (r = 0; r < 2; r++)
        for (i = 0; i < GPUIPC_WATCH_WORKERS; i++) {
            const gpuipc_watch_side *s = &pg->worker[r][i];

            if (s->pid == 0 || s->step == 0)
                continue;
            at_work++;
            *stuck += !waits(s);
        }
    return at_work;
}

/* The workers of the phase under way, where the run is in one (each cell in
 * flight, on its worker's side of the page): the ones stuck first (in a
 * call or a step of their own), then, where none is, the ones that wait.
 * Into b. Returns how many are at work (0: no phase under way). */
static unsigned put_workers(gpuipc_sbuf *b, const gpuipc_watch_page *pg, uint64_t now)
{
    unsigned stuck, named = 0, r, i;
    unsigned at_work = count_workers(pg, &stuck);
    int pass;

    if (at_work == 0)
        return 0;
    gpuipc_sbuf_str(b, "a phase's cells at once, ");
    gpuipc_sbuf_uint(b, at_work);
    gpuipc_sbuf_str(b, at_work == 1 ? " worker at work: " : " workers at work: ");
    for (pass = 0; pass < 2; pass++)
        for (r = 0; r < 2; r++)
            for (i = 0; i < GPUIPC_WATCH_WORKERS; i++) {
                const gpuipc_watch_side *s = &pg->worker[r][i];

                if (s->pid == 0 || s->step == 0 || waits(s) != pass ||
                    (pass == 1 && stuck > 0))
                    continue;
                if (named == WORKERS_NAMED) {
                    named++;
                    continue;
                }
                if (named++ > 0)
                    gpuipc_sbuf_str(b, "; ");
                gpuipc_sbuf_str(b, r == 0 ? "the producer's worker " : "the consumer's worker ");
                gpuipc_sbuf_uint(b, i);
                if (s->gpu >= 0) {
                    gpuipc_sbuf_str(b, " (GPU ");
                    gpuipc_sbuf_uint(b, (uint64_t)s->gpu);
                    gpuipc_sbuf_str(b, ")");
                }
                gpuipc_sbuf_str(b, pass == 0 ? " is stuck " : " waits ");
                put_state(b, s, now);
            }
    if (named > WORKERS_NAMED) {
        gpuipc_sbuf_str(b, "; and ");
        gpuipc_sbuf_uint(b, named - WORKERS_NAMED);
        gpuipc_sbuf_str(b, " more");
    }
    if (stuck == 0)
        gpuipc_sbuf_str(b, " (none stuck in a call or a step of its own: each waits)");
    return at_work;
}

size_t gpuipc_deadline_workers_text(const gpuipc_watch_page *pg, uint64_t now, char *buf,
                                    size_t len)
{
    gpuipc_sbuf b;

    gpuipc_sbuf_init(&b, buf, len);
    if (put_workers(&b, pg, now) == 0)
        return 0;
    if (len > 0)
        buf[b.len < len ? b.len : len - 1] = '\0';
    return b.len;
}

/* Who held the run up, from the page: the workers of the phase under way
 * where one of them is stuck, else the side not waiting for the other, or
 * both where both wait (workers that only wait between cells say nothing
 * of who holds the run up: a session's thread may be stuck meanwhile).
 * Into b. */
static void put_stuck(const gpuipc_deadline *dl, gpuipc_sbuf *b, uint64_t now)
{
    const gpuipc_watch_page *pg = dl->have_snap ? &dl->snap : NULL;
    const gpuipc_watch_side *me, *other;
    const char *me_name = gpuipc_role_name(dl->role);
    const char *other_name = dl->role == GPUIPC_ROLE_PRODUCER ? "consumer" : "producer";
    unsigned stuck = 0;

    if (pg != NULL && !dl->peer_died && count_workers(pg, &stuck) > 0 && stuck > 0) {
        put_workers(b, pg, now);
        return;
    }
    if (pg == NULL) {
        gpuipc_sbuf_str(b, "the ");
        gpuipc_sbuf_str(b, me_name);
        gpuipc_sbuf_str(b, "'s state is unknown");
        return;
    }
    me = &pg->side[dl->role];
    other = &pg->side[dl->role == GPUIPC_ROLE_PRODUCER ? GPUIPC_ROLE_CONSUMER
                                                       : GPUIPC_ROLE_PRODUCER];
    /* --destructive: the sacrificial consumer, where it is the one at work. */
    if (dl->role == GPUIPC_ROLE_PRODUCER && pg->side[GPUIPC_WATCH_SACRIFICIAL].pid != 0 &&
        pg->side[GPUIPC_WATCH_SACRIFICIAL].step != 0 &&
        !waits(&pg->side[GPUIPC_WATCH_SACRIFICIAL]) && (other->pid == 0 || waits(other))) {
        other = &pg->side[GPUIPC_WATCH_SACRIFICIAL];
        other_name = "sacrificial consumer";
    }
    if (dl->role == GPUIPC_ROLE_PRODUCER && dl->peer_died) {
        /* What waited for it, and how it had ended. */
        gpuipc_sbuf_str(b, "the producer ");
        gpuipc_sbuf_str(b, waits(me) ? "waits " : "is stuck ");
        put_state(b, me, now);
        gpuipc_sbuf_str(b, "; the consumer ");
        gpuipc_sbuf_str(b, dl->peer_end);
        if (other->step != 0) {
            gpuipc_sbuf_str(b, " (it was last ");
            put_state(b, other, now);
            gpuipc_sbuf_str(b, ")");
        }
        return;
    }
    if (other->pid != 0 && put_stopped(dl, b, other, other_name, now)) {
        gpuipc_sbuf_str(b, "; the ");
        gpuipc_sbuf_str(b, me_name);
        gpuipc_sbuf_str(b, waits(me) ? " waits " : " is stuck ");
        put_state(b, me, now);
        return;
    }
    if (other->pid == 0 || !waits(me)) {
        /* This side is stuck (or the other is out of sight: --serve,
         * --connect). */
        gpuipc_sbuf_str(b, "the ");
        gpuipc_sbuf_str(b, me_name);
        gpuipc_sbuf_str(b, waits(me) ? " waits for the " : " is stuck ");
        if (waits(me)) {
            gpuipc_sbuf_str(b, other_name);
            gpuipc_sbuf_str(b, " ");
        }
        put_state(b, me, now);
        if (other->pid == 0)
            return;
        gpuipc_sbuf_str(b, "; the ");
        gpuipc_sbuf_str(b, other_name);
        gpuipc_sbuf_str(b, waits(other) ? " waits " : " is ");
        put_state(b, other, now);
        return;
    }
    gpuipc_sbuf_str(b, waits(other) ? "both wait for each other: the " : "the ");
    gpuipc_sbuf_str(b, other_name);
    gpuipc_sbuf_str(b, waits(other) ? " " : " is stuck ");
    put_state(b, other, now);
    gpuipc_sbuf_str(b, "; the ");
    gpuipc_sbuf_str(b, me_name);
    gpuipc_sbuf_str(b, " waits ");
    put_state(b, me, now);
}

/* The exit status of the watchdog's verdict: 1 at the deadline, 128 + sig
 * for a stop the run did not end by itself. */
static int fire_code(int sig)
{
    return sig != 0 ? 128 + sig : GPUIPC_FAIL;
}

/* What ended the run: "FAIL: --deadline 2.000 s passed: " or "STOPPED:
 * stopped by SIGINT, but the run did not end within 1.5 s: ". */
static void put_why(const gpuipc_deadline *dl, gpuipc_sbuf *b, int sig)
{
    const char *name = gpuipc_sig_abbrev(sig);

    if (sig == 0) {
        gpuipc_sbuf_str(b, gpuipc_status_word(GPUIPC_FAIL));
        gpuipc_sbuf_str(b, ": --deadline ");
        gpuipc_sbuf_secs(b, dl->prog.deadline_ns, 3);
        gpuipc_sbuf_str(b, " s passed: ");
        return;
    }
    gpuipc_sbuf_str(b, gpuipc_status_word(GPUIPC_STOPPED));
    gpuipc_sbuf_str(b, ": stopped by SIG");
    gpuipc_sbuf_str(b, name != NULL ? name : "?");
    gpuipc_sbuf_str(b, ", but the run did not end within ");
    gpuipc_sbuf_secs(b, GPUIPC_WATCH_STOP_GRACE_NS, 1);
    gpuipc_sbuf_str(b, " s: ");
}

/* " (exit N)" for the watchdog's verdict. */
static void put_exit(gpuipc_sbuf *b, int sig)
{
    gpuipc_sbuf_str(b, " (exit ");
    gpuipc_sbuf_uint(b, (uint64_t)fire_code(sig));
    gpuipc_sbuf_str(b, ")");
}

/* How many cells the run's thread has published (none in a consumer). */
static size_t published(const gpuipc_deadline *dl)
{
    return dl->cells != NULL ? gpuipc_cellset_count(dl->cells) : 0;
}

/* The result line's text, after "result: ", for the run ended now by the
 * deadline (sig 0) or a stop signal. */
static void put_verdict(const gpuipc_deadline *dl, gpuipc_sbuf *b, uint64_t now, int sig)
{
    unsigned p = 0, f = 0, s = 0;

    if (dl->cells != NULL)
        gpuipc_cellset_tally(dl->cells, &p, &f, &s);
    put_why(dl, b, sig);
    put_stuck(dl, b, now);
    gpuipc_sbuf_str(b, "; ");
    gpuipc_sbuf_uint(b, p);
    gpuipc_sbuf_str(b, " passed, ");
    gpuipc_sbuf_uint(b, f);
    gpuipc_sbuf_str(b, " failed, ");
    gpuipc_sbuf_uint(b, s);
    gpuipc_sbuf_str(b, " skipped, in ");
    gpuipc_sbuf_secs(b, now - dl->t0, 2);
    gpuipc_sbuf_str(b, " s");
    put_exit(b, sig);
}

/* The summary's rows: each scenario with what it reached before the
 * deadline, each written to fd as it is made (b is the text buffer). */
static void put_rows(gpuipc_deadline *dl, gpuipc_sbuf *b, int fd)
{
    size_t n = published(dl), i;

    gpuipc_sbuf_str(b, "summary (at the deadline): ");
    gpuipc_sbuf_str(b, dl->where);
    gpuipc_sbuf_str(b, "\n");
    for (i = 0; i < n; i++) {
        const gpuipc_result *r = &dl->cells->results[i];
        int st = r->status;

        (void)gpuipc_sbuf_write(b, fd); /* a closed output ends the printing only */
        gpuipc_sbuf_init(b, dl->text, sizeof(dl->text));
        gpuipc_sbuf_str(b, "  ");
        gpuipc_sbuf_str(b, dl->cells->label[i]);
        if (r->group != NULL && r->group[0] != '\0' && r->gpu >= 0 && r->peer_gpu < 0) {
            gpuipc_sbuf_str(b, " on GPU ");
            gpuipc_sbuf_uint(b, (uint64_t)r->gpu);
        }
        gpuipc_sbuf_str(b, "  ");
        gpuipc_sbuf_str(b, st < 0 ? "not run (or under way)" : gpuipc_status_word(st));
        if (st == GPUIPC_FAIL || st == GPUIPC_SKIP || st == GPUIPC_STOPPED) {
            gpuipc_sbuf_str(b, "\n      ");
            gpuipc_sbuf_str(b, r->reason[0] != '\0' ? r->reason
                                                     : "under way when the deadline passed");
        }
        gpuipc_sbuf_str(b, "\n");
    }
}

/* How the consumer ended, for the producer's summary and document. */
static const char *consumer_end(const gpuipc_deadline *dl)
{
    return dl->forked ? dl->peer_end
                      : "another process (--serve): its connection closes with this one";
}

/* --json at the deadline (dl->doc, prepared at the start), for the run ended now by the
 * deadline (sig 0) or a stop signal, with verdict as its result line.
 * Returns 0, or -1 where the document could not be written whole. */
static int write_doc(gpuipc_deadline *dl, uint64_t now, const char *verdict, int sig)
{
    const deadline_end end = {
        .cells = dl->cells,
        .verdict = verdict,
        .consumer = dl->role == GPUIPC_ROLE_PRODUCER ? consumer_end(dl) : NULL,
        .wall_ns = now - dl->t0,
        .code = fire_code(sig),
    };

    return doc_write(__atomic_load_n(&dl->doc, __ATOMIC_ACQUIRE), &end);
}

/* peer_end: how a consumer that ended by itself ended, from its status. */
static void put_status(gpuipc_sbuf *b, int status)
{
    if (WIFEXITED(status)) {
        gpuipc_sbuf_str(b, "exited ");
        gpuipc_sbuf_uint(b, (uint64_t)WEXITSTATUS(status));
    } else if (WIFSIGNALED(status)) {
        const char *name = gpuipc_sig_abbrev(WTERMSIG(status));

        gpuipc_sbuf_str(b, "killed by signal ");
        gpuipc_sbuf_uint(b, (uint64_t)WTERMSIG(status));
        gpuipc_sbuf_str(b, " (SIG");
        gpuipc_sbuf_str(b, name != NULL ? name : "?");
        gpuipc_sbuf_str(b, ")");
    } else {
        gpuipc_sbuf_str(b, "ended");
    }
}

/* Kills the consumers not yet reaped and waits for them, a bounded time;
 * says in peer_end how the consumer ended (one that had died before the
 * deadline keeps its own cause, and sets peer_died). */
static void kill_consumers(gpuipc_deadline *dl, int sig)
{
    struct timespec ts = {0, 10 * 1000000L};
    pid_t pids[2] = {gpuipc_stop_peer(0), gpuipc_stop_peer(1)};
    uint64_t until = gpuipc_clock_ns() + REAP_NS;
    const char *when = sig != 0 ? "the stop" : "the deadline";
    gpuipc_sbuf b;
    int i, left = 0, status;

    gpuipc_sbuf_init(&b, dl->peer_end, sizeof(dl->peer_end));
    if (pids[0] <= 0) {
        gpuipc_sbuf_str(&b, "ended before ");
        gpuipc_sbuf_str(&b, when);
    } else if (waitpid(pids[0], &status, WNOHANG) == pids[0]) {
        /* Ended already, of its own accord or its own cause. */
        pids[0] = -1;
        dl->peer_died = 1;
        gpuipc_sbuf_str(&b, sig != 0 ? "had ended: " : "had ended before the deadline: ");
        put_status(&b, status);
    } else {
        gpuipc_sbuf_str(&b, "killed by the producer at ");
        gpuipc_sbuf_str(&b, when);
        gpuipc_sbuf_str(&b, " (SIGKILL)");
    }
    for (i = 0; i < 2; i++)
        if (pids[i] > 0 && kill(pids[i], SIGKILL) == 0)
            left++;
    while (left > 0 && gpuipc_clock_ns() < until) {
        for (i = 0; i < 2; i++) {
            pid_t r = pids[i] > 0 ? waitpid(pids[i], NULL, WNOHANG) : 0;

            /* ECHILD: the run's own thread reaped it meanwhile. */
            if (r == pids[i] || (r < 0 && errno == ECHILD)) {
                pids[i] = -1;
                left--;
            }
        }
        if (left > 0)
            nanosleep(&ts, NULL);
    }
}

/* The page as it is now, before anything moves. */
static void take_snapshot(gpuipc_deadline *dl)
{
    const gpuipc_watch_page *pg = gpuipc_watch_page_get();
    size_t i;

    if (pg != NULL) {
        memcpy(&dl->snap, (const void *)pg, sizeof(dl->snap));
        dl->have_snap = 1;
        for (i = 0; i < sizeof(dl->snap_state); i++) {
            int32_t pid = dl->snap.side[i].pid;

            dl->snap_state[i] = pid > 0 && pid != (int32_t)getpid() ? gpuipc_proc_state((pid_t)pid)
                                                                    : 0;
        }
    }
}

/* --prom and --junit at the deadline (report_files.h), from the results as
 * far as they got (the producer's; none on a --connect consumer). */
static void write_files(gpuipc_deadline *dl, uint64_t now, const char *verdict, int sig)
{
    if (!gpuipc_files_wanted(&dl->prog))
        return;
    dl->files_failed = gpuipc_files_at_deadline(
        &dl->prog, gpuipc_role_name(dl->role), dl->cells != NULL ? dl->cells->results : NULL,
        dl->cells != NULL ? (const char (*)[GPUIPC_OUTCOME_LABEL_LEN])dl->cells->label : NULL,
        published(dl), (const char (*)[GPUIPC_OUTCOME_UUID_LEN])dl->uuid_text,
        GPUIPC_DOC_GPUS_MAX,
        fire_code(sig), verdict, now - dl->t0) < 0;
}

/* A line saying that the document was not written, where it was not. */
static void put_doc_failure(const gpuipc_deadline *dl, gpuipc_sbuf *b)
{
    if (dl->files_failed)
        gpuipc_sbuf_str(b, "gpuipc_test: --prom/--junit: a file of the deadline could not be "
                           "written whole (a full disk, a quota?); it is left saying that the "
                           "run is under way, with no verdict\n");
    if (!dl->doc_failed)
        return;
    gpuipc_sbuf_str(b, "gpuipc_test: --json ");
    gpuipc_sbuf_str(b, dl->prog.json_path);
    gpuipc_sbuf_str(b, ": the document of the deadline could not be written whole (a full "
                       "disk, a quota, or a closed output?); a file that was there is left "
                       "as it was\n");
}

/* The producer's watchdog at the deadline, or after a stop the run did not
 * end by itself (sig). */
void gpuipc_deadline_producer_fire(void *arg, int sig)
{
    uint64_t now = gpuipc_clock_ns();
    int out = gpuipc_brief_fd() >= 0 ? gpuipc_brief_fd() : 1;
    gpuipc_deadline *dl = arg;
    gpuipc_sbuf b;

    take_snapshot(dl);
    if (dl->unlink_sock != NULL)
        dl->unlink_sock();
    kill_consumers(dl, sig);
    gpuipc_sbuf_init(&b, dl->line, sizeof(dl->line));
    put_verdict(dl, &b, now, sig);
    dl->doc_failed = write_doc(dl, now, dl->line, sig) < 0;
    write_files(dl, now, dl->line, sig);
    gpuipc_sbuf_init(&b, dl->text, sizeof(dl->text));
    if (gpuipc_brief_fd() < 0) {
        put_rows(dl, &b, out);
        put_doc_failure(dl, &b);
        gpuipc_sbuf_str(&b, "consumer: ");
        gpuipc_sbuf_str(&b, consumer_end(dl));
        gpuipc_sbuf_str(&b, "\n");
        gpuipc_sbuf_str(&b, "result: ");
    }
    gpuipc_sbuf_str(&b, dl->line);
    gpuipc_sbuf_str(&b, "\n");
    gpuipc_sbuf_write(&b, out);
    _exit(fire_code(sig));
}

/* A consumer's watchdog: a --connect consumer reports itself (its result
 * line); the forked one, whose producer should have ended the run, says so
 * in a line of its own (the producer's result line is the run's). */
void gpuipc_deadline_consumer_fire(void *arg, int sig)
{
    uint64_t now = gpuipc_clock_ns();
    int out = gpuipc_brief_fd() >= 0 ? gpuipc_brief_fd() : 1;
    int forked = gpuipc_stop_parent() > 0;
    gpuipc_deadline *dl = arg;
    gpuipc_sbuf b;

    take_snapshot(dl);
    gpuipc_sbuf_init(&b, dl->line, sizeof(dl->line));
    put_why(dl, &b, sig);
    put_stuck(dl, &b, now);
    if (forked)
        gpuipc_sbuf_str(&b, sig == 0 ? "; the producer did not end the run, so this consumer "
                                       "ends itself" : "; this consumer ends itself");
    put_exit(&b, sig);
    dl->doc_failed = write_doc(dl, now, dl->line, sig) < 0;
    if (!forked) /* the forked consumer's files are the producer's */
        write_files(dl, now, dl->line, sig);
    gpuipc_sbuf_init(&b, dl->text, sizeof(dl->text));
    if (gpuipc_brief_fd() < 0)
        put_doc_failure(dl, &b);
    if (gpuipc_brief_fd() < 0 || !forked)
        gpuipc_sbuf_str(&b, forked ? "gpuipc_test: consumer: " : gpuipc_brief_fd() < 0
                                                                 ? "result: " : "");
    gpuipc_sbuf_str(&b, dl->line);
    gpuipc_sbuf_str(&b, "\n");
    if (!forked || gpuipc_brief_fd() < 0) /* --brief's one line is the producer's */
        gpuipc_sbuf_write(&b, out);
    _exit(fire_code(sig));
}

