/* SPDX-License-Identifier: Apache-2.0 */
/* matrix.c: the fault matrix, case by case. */
#include "run/matrix.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/log.h"
#include "core/progress.h"
#include "core/step.h"
#include "session/inject.h"

unsigned gpuipc_matrix_cases(gpuipc_matrix_case *cases, unsigned cap)
{
    static const int roles[] = {GPUIPC_ROLE_PRODUCER, GPUIPC_ROLE_CONSUMER};
    unsigned n = 0, r, step;
    int action;

    for (r = 0; r < 2; r++)
        for (step = 1; step < GPUIPC_STEP_COUNT; step++) {
            if (!(gpuipc_step_roles(step) & (unsigned)roles[r]))
                continue;
            /* wedge is the deadline's business (its own tests): a pair
             * without --deadline would wait for it to the runner's limit. */
            for (action = 1; action <= GPUIPC_FAULT_CLOSE && n < cap; action++) {
                cases[n].role = roles[r];
                cases[n].step = step;
                cases[n++].action = action;
            }
        }
    return n;
}

unsigned gpuipc_matrix_waiting(int role, unsigned step)
{
    if (role == GPUIPC_ROLE_CONSUMER) {
        switch (step) {
        case GPUIPC_STEP_IMPORT:
        case GPUIPC_STEP_VERIFY:
        case GPUIPC_STEP_WRITE:
            return GPUIPC_STEP_REPORT; /* the producer waits for REPORT */
        case GPUIPC_STEP_RELEASE:
            return GPUIPC_STEP_END_ACK;
        default:
            return step; /* hello, probe, ready, report, end-ack: the message itself */
        }
    }
    switch (step) {
    case GPUIPC_STEP_PROBE:
    case GPUIPC_STEP_RELEASE:
    case GPUIPC_STEP_BYE:
        return GPUIPC_STEP_BEGIN; /* the consumer waits for the next PROBE, BEGIN or BYE */
    case GPUIPC_STEP_ALLOC:
    case GPUIPC_STEP_FILL:
    case GPUIPC_STEP_EXPORT:
        return GPUIPC_STEP_OFFER;
    case GPUIPC_STEP_CHECK:
        return GPUIPC_STEP_END;
    default:
        return step; /* hello, begin, offer, end */
    }
}

const char *gpuipc_matrix_phrase(int role, unsigned step, int action)
{
    /* A consumer that ends its connection before its HELLO looks to --serve
     * like a liveness check: dropped, and the wait goes on to its end. */
    if (role == GPUIPC_ROLE_CONSUMER && step == GPUIPC_STEP_HELLO &&
        (action == GPUIPC_FAULT_EXIT || action == GPUIPC_FAULT_KILL ||
         action == GPUIPC_FAULT_CLOSE))
        return "closed before its HELLO";
    switch (action) {
    case GPUIPC_FAULT_HANG:
        return "timed out during";
    case GPUIPC_FAULT_CORRUPT:
        return "bad magic";
    case GPUIPC_FAULT_EXTRA_FDS:
        return "HELLO: carries 2 FDs, at most 0 allowed";
    default: /* exit, kill, close */
        return "peer gone during";
    }
}

int gpuipc_matrix_judge(const gpuipc_matrix_case *c, const gpuipc_pair *r, double limit_s,
                        int *hang, int *leak, char *why, size_t len)
{
    const gpuipc_pair_proc *s = &r->proc[c->role == GPUIPC_ROLE_PRODUCER ? 1 : 0];
    const char *survivor = c->role == GPUIPC_ROLE_PRODUCER ? "consumer" : "producer";
    char during[48];

    *hang = *leak = 0;
    const char *phrase = gpuipc_matrix_phrase(c->role, c->step, c->action);

    snprintf(during, sizeof(during), "during %s", gpuipc_step_name(gpuipc_matrix_waiting(
                                                      c->role, c->step)));
    if (strstr(s->out, "leaked") != NULL) {
        *leak = 1;
        snprintf(why, len, "the %s reports a leak", survivor);
        return 0;
    }
    if (!s->exited || s->seconds > limit_s || r->leftover) {
        *hang = 1;
        if (r->leftover)
            snprintf(why, len, "a process of the pair was left behind");
        else if (!s->exited)
            snprintf(why, len, "the %s did not exit by itself (killed after %.2f s)",
                     survivor, s->seconds);
        else
            snprintf(why, len, "the %s took %.2f s, more than the deadline and margin "
                     "(%.2f s)", survivor, s->seconds, limit_s);
        return 0;
    }
    if (!WIFEXITED(s->status) || WEXITSTATUS(s->status) != 1) {
        snprintf(why, len, "the %s ended with wait status 0x%x, not exit 1", survivor,
                 (unsigned)s->status);
        return 0;
    }
    if (strstr(s->out, during) == NULL || strstr(s->out, phrase) == NULL) {
        snprintf(why, len, "the %s's report lacks '%s' or '%s'", survivor, during, phrase);
        return 0;
    }
    snprintf(why, len, "the %s exited 1 in %.2f s", survivor, s->seconds);
    return 1;
}

/* The survivor's line that says what happened: its first FAIL line. */
static void first_fail(const gpuipc_pair *r, const gpuipc_matrix_case *c, char *buf, size_t len)
{
    const char *out = r->proc[c->role == GPUIPC_ROLE_PRODUCER ? 1 : 0].out;
    const char *p = strstr(out, "FAIL ");
    size_t n = 0;

    buf[0] = '\0';
    if (p == NULL)
        return;
    p += 5;
    while (p[n] != '\0' && p[n] != '\n' && n + 1 < len)
        n++;
    memcpy(buf, p, n);
    buf[n] = '\0';
}

/* Waits up to 3 s for the driver to let go of both processes of the pair.
 * Returns 1 once it has (or where it cannot tell), else 0 with the pid it
 * still lists in *pid. */
static int gpu_released(const gpuipc_matrix_opts *o, const gpuipc_pair *r, pid_t *pid)
{
    uint64_t deadline = gpuipc_clock_deadline(3ull * GPUIPC_NS_PER_S);
    int i;

    for (;;) {
        int held = 0;

        for (i = 0; i < 2 && !held; i++)
            if (o->holds_gpu(o->arg, r->proc[i].pid) == 1) {
                held = 1;
                *pid = r->proc[i].pid;
            }
        if (!held)
            return 1;
        if (gpuipc_clock_ms_left(deadline) == 0)
            return 0;
        gpuipc_clock_sleep(50ull * 1000000ull);
    }
}

int gpuipc_matrix_run(const gpuipc_matrix_opts *o, gpuipc_matrix_totals *t, gpuipc_err *err)
{
    /* On the stack (about 66 KiB, the pair's output most of it): the
     * progress line keeps what until gpuipc_progress_end, on every return
     * below. */
    gpuipc_matrix_case cases[GPUIPC_MATRIX_MAX];
    gpuipc_pair pair = {0};
    uint64_t t0 = gpuipc_clock_ns();
    char timeout[32], line[1024], said[300], why[256], sock[64], fault[96], what[96];
    unsigned n = gpuipc_matrix_cases(cases, GPUIPC_MATRIX_MAX), i;
    int rc;

    memset(t, 0, sizeof(*t));
    snprintf(timeout, sizeof(timeout), "%.3f", o->timeout_s);
    snprintf(what, sizeof(what), "fault matrix over %s", o->mech);
    gpuipc_progress_begin(what, "cases", n);
    for (i = 0; i < n; i++) {
        const gpuipc_matrix_case *c = &cases[i];
        const char *args[] = {"--only", o->mech, "--size", o->size, "--timeout", timeout,
                              "--quiet", NULL};
        const char *cargs[] = {"--timeout", timeout, "--quiet", NULL};
        const char *env[] = {fault, NULL};
        pid_t holder = 0;
        int ok, hang, leak;

        snprintf(fault, sizeof(fault), "GPUIPC_FAULT=%s:%s:%s", gpuipc_role_name(c->role),
                 gpuipc_step_name(c->step), gpuipc_inject_action_name(c->action));
        snprintf(sock, sizeof(sock), "@gpuipc-fault-matrix-%d-%u", (int)getpid(), i);
        rc = gpuipc_pair_run(o->prog, sock, args, cargs, env, o->timeout_s * 2 + o->margin_s + 5,
                             c->action == GPUIPC_FAULT_HANG ? 0.2 : o->timeout_s + o->margin_s,
                             &pair, err);
        if (rc < 0) {
            gpuipc_progress_end();
            t->seconds = (double)(gpuipc_clock_ns() - t0) / 1e9;
            return rc;
        }
        t->cases++;
        gpuipc_progress_update(t->cases);
        ok = gpuipc_matrix_judge(c, &pair, o->timeout_s + o->margin_s, &hang, &leak, why,
                                 sizeof(why));
        if (ok && o->holds_gpu != NULL && !gpu_released(o, &pair, &holder)) {
            ok = 0;
            leak = 1;
            snprintf(why, sizeof(why), "the driver still lists pid %d as holding GPU memory "
                     "3 s after the pair ended", (int)holder);
        }
        t->survived += (unsigned)ok;
        t->hangs += (unsigned)hang;
        t->leaks += (unsigned)leak;
        t->wrong += (unsigned)(!ok && !hang && !leak);
        if (ok && !o->verbose)
            continue;
        first_fail(&pair, c, said, sizeof(said));
        snprintf(line, sizeof(line), "%-3u %-8s %-8s %-9s %s: %s%s%s", i + 1,
                 gpuipc_role_name(c->role), gpuipc_step_name(c->step),
                 gpuipc_inject_action_name(c->action), ok ? "survived" : "FAILED", why,
                 said[0] ? "; it said: " : "", said);
        gpuipc_log_line(o->fd, line);
    }
    gpuipc_progress_end();
    t->seconds = (double)(gpuipc_clock_ns() - t0) / 1e9;
    return t->survived == t->cases ? 0 : 1;
}
