/* SPDX-License-Identifier: Apache-2.0 */
/* test_lies.c: every lie one message can tell, generated rather than picked
 * by hand. A liar runs the real role over a real socket; at one state of a
 * session of one memfd scenario (its n-th message, after its READY or OFFER
 * said PASS, SKIP or FAIL) its wire sends instead a message of each type,
 * with each status, its claims (what it read, wrote or counted) made or
 * withheld. The real program is the honest side: --serve against a lying
 * consumer, --connect against a lying producer. Held for every case:
 * - the program ends by itself before its deadline, with an exit status it
 *   chose (no signal), and leaves no process behind;
 * - it passes only where the liar said exactly what the real role said;
 * - it never says 77 (nothing could run) after a scenario passed, or where
 *   the lie claims bytes read or written or scenarios counted;
 * - its result line says why it did not pass.
 *
 *   T1 for the case: the liar starts (listening, or connecting), the
 *   program starts; T2 the session runs, the liar's wire rewrites its
 *   messages; T3 the program exits; the liar is ended; T4 the verdict is
 *   held to the rules above. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/facts.h"
#include "core/step.h"
#include "mech/memfd.h"
#include "session/producer.h"
#include "wire/endpoint.h"
#include "helpers.h"
#include "suites.h"

#define SIZE (64u << 10)
#define WORDS (SIZE / 8)
#define LIAR_TIMEOUT_NS (10 * GPUIPC_NS_PER_S)
#define MARK "LIAR-MARK"
/* The liar's messages in a session of one scenario with a probe: HELLO,
 * PROBE_ACK, READY, REPORT, END_ACK, BYE_ACK (a consumer); HELLO, PROBE,
 * BEGIN, OFFER, END, BYE (a producer). */
#define AT_MAX 6
/* Where the liar's READY (a consumer) or OFFER (a producer) goes. */
#define READY_AT 3
#define OFFER_AT 4
/* How many programs run at once. */
#define BATCH 24

typedef struct lie {
    int liar;      /* the liar's role: GPUIPC_ROLE_CONSUMER or GPUIPC_ROLE_PRODUCER */
    int prefix;    /* what its READY or OFFER said, if the lie comes later */
    unsigned at;   /* the liar's message, from 1 (HELLO), that is replaced */
    unsigned type; /* by a message of this type */
    int status;    /* with this status (-1: the type carries none) */
    int claims;    /* 1: it claims reads, writes or counts; 0: it claims none */
} lie;

/* What the liar did, shared with this process (one per case). */
typedef struct told {
    unsigned sent;
    int changed; /* a message the liar sent was not the real role's */
} told;

typedef struct liar_arg {
    const lie *l;
    told *t;
} liar_arg;

/* The types that carry a status, and those that carry claims. */
static int has_status(unsigned type)
{
    return type != GPUIPC_MSG_HELLO && type != GPUIPC_MSG_BEGIN && type != GPUIPC_MSG_PROBE &&
           type != GPUIPC_MSG_TIMES && type != GPUIPC_MSG_AUTH && type != GPUIPC_MSG_PHASE;
}

static int has_claims(unsigned type)
{
    return type == GPUIPC_MSG_OFFER || type == GPUIPC_MSG_REPORT || type == GPUIPC_MSG_END ||
           type == GPUIPC_MSG_BYE;
}

static gpuipc_status *status_of(gpuipc_msg *m)
{
    switch (m->type) {
    case GPUIPC_MSG_READY:
        return &m->u.ready;
    case GPUIPC_MSG_OFFER:
        return &m->u.offer.st;
    case GPUIPC_MSG_REPORT:
        return &m->u.report.st;
    case GPUIPC_MSG_END:
        return &m->u.end.st;
    case GPUIPC_MSG_END_ACK:
        return &m->u.end_ack.st;
    case GPUIPC_MSG_BYE_ACK:
        return &m->u.bye_ack;
    case GPUIPC_MSG_PHASE_ACK:
        return &m->u.phase_ack.st;
    case GPUIPC_MSG_PROBE_ACK:
        return &m->u.probe_ack;
    case GPUIPC_MSG_FDS:
        return &m->u.fds.st;
    default:
        return NULL;
    }
}

/* Gives m the status code (BYE: its verdict). A failed or skipped offer
 * carries no FDs. */
static void set_status(gpuipc_msg *m, int code)
{
    gpuipc_status *st = status_of(m);

    if (m->type == GPUIPC_MSG_BYE) {
        m->u.bye.code = code;
        return;
    }
    if (st == NULL)
        return;
    if (st->code != code)
        gpuipc_wire_status(st, code, code == GPUIPC_PASS ? GPUIPC_STEP_NONE : GPUIPC_STEP_READY,
                           code == GPUIPC_PASS ? NULL : MARK ": the liar says so");
    if (m->type == GPUIPC_MSG_OFFER && code != GPUIPC_PASS) {
        m->nfds = 0;
        m->u.offer.fds_total = 0;
    }
}

/* Makes m a well-formed message of type, with what the liar's own message
 * brought where it fits (an offer's FDs). */
static void synthesize(gpuipc_msg *m, unsigned type, int role)
{
    uint16_t nfds = m->nfds;

    memset(&m->u, 0, sizeof(m->u));
    m->type = (uint16_t)type;
    m->nfds = type == GPUIPC_MSG_OFFER || type == GPUIPC_MSG_FDS ? nfds : 0;
    if (has_status(type) && type != GPUIPC_MSG_BYE)
        gpuipc_wire_status(status_of(m), GPUIPC_PASS, GPUIPC_STEP_NONE, NULL);
    switch (type) {
    case GPUIPC_MSG_HELLO:
        m->u.hello.pid = (uint32_t)getpid();
        m->u.hello.role = (uint32_t)role;
        gpuipc_facts_gather(&m->u.hello.facts);
        break;
    case GPUIPC_MSG_AUTH:
        m->u.auth.pid = (uint32_t)getpid();
        gpuipc_facts_gather(&m->u.auth.facts);
        break;
    case GPUIPC_MSG_BEGIN:
        snprintf(m->u.begin.mech, sizeof(m->u.begin.mech), "memfd");
        m->u.begin.size = SIZE;
        break;
    case GPUIPC_MSG_PROBE:
        snprintf(m->u.probe.mech, sizeof(m->u.probe.mech), "memfd");
        break;
    case GPUIPC_MSG_OFFER:
        m->u.offer.size = SIZE;
        m->u.offer.granularity = 4096;
        m->u.offer.seed = 0x5eed;
        m->u.offer.fds_total = m->nfds;
        break;
    case GPUIPC_MSG_FDS:
        m->u.fds.first = 1;
        break;
    case GPUIPC_MSG_TIMES:
        m->u.times.count = 1;
        m->u.times.flags = GPUIPC_TIMES_LAST;
        break;
    case GPUIPC_MSG_PHASE:
        m->u.phase.flags = GPUIPC_PHASE_END;
        break;
    default:
        break;
    }
}

/* Makes m claim what it read, wrote or counted (made up where the real
 * role claimed nothing), or claim none of it. */
static void claim(gpuipc_msg *m, int claims)
{
    gpuipc_msg_bye *b = &m->u.bye;

    switch (m->type) {
    case GPUIPC_MSG_OFFER:
        if (!claims)
            memset(&m->u.offer.wrote, 0, sizeof(m->u.offer.wrote));
        else if (m->u.offer.wrote.words == 0)
            m->u.offer.wrote = (gpuipc_written){.words = WORDS, .digest = 0xd1};
        break;
    case GPUIPC_MSG_REPORT:
        if (!claims) {
            memset(&m->u.report.check, 0, sizeof(m->u.report.check));
            memset(&m->u.report.wrote, 0, sizeof(m->u.report.wrote));
            m->u.report.seed = 0;
            m->u.report.flags = 0;
            break;
        }
        if (m->u.report.check.words == 0)
            m->u.report.check = (gpuipc_check){.words = WORDS, .digest = 0xd2};
        if (!(m->u.report.flags & GPUIPC_REPORT_WROTE)) {
            m->u.report.flags = GPUIPC_REPORT_WROTE;
            m->u.report.seed = 0x5eed2;
            m->u.report.wrote = (gpuipc_written){.words = WORDS, .digest = 0xd3};
        }
        break;
    case GPUIPC_MSG_END:
        if (!claims)
            memset(&m->u.end.check, 0, sizeof(m->u.end.check));
        else if (m->u.end.check.words == 0)
            m->u.end.check = (gpuipc_check){.words = WORDS, .digest = 0xd4};
        break;
    case GPUIPC_MSG_BYE:
        if (!claims) {
            b->passed = b->failed = b->skipped = 0;
        } else if (b->passed + b->failed + b->skipped == 0) {
            b->passed = b->code == GPUIPC_PASS;
            b->failed = b->code == GPUIPC_FAIL || b->code == GPUIPC_USAGE;
            b->skipped = b->code == GPUIPC_SKIP;
        }
        break;
    default:
        break;
    }
}

/* Whether a and b would go out as different frames. */
static int differs(const gpuipc_msg *a, const gpuipc_msg *b)
{
    uint8_t ea[GPUIPC_WIRE_MAX_MSG], eb[GPUIPC_WIRE_MAX_MSG];
    size_t na = gpuipc_wire_encode(a, 1, ea, sizeof(ea));
    size_t nb = gpuipc_wire_encode(b, 1, eb, sizeof(eb));

    return a->nfds != b->nfds || na != nb || memcmp(ea, eb, na) != 0;
}

static unsigned prefix_at(const lie *l)
{
    return l->liar == GPUIPC_ROLE_CONSUMER ? READY_AT : OFFER_AT;
}

/* The liar's wire: its READY or OFFER says the case's prefix, its message
 * number at is the lie. */
static void tell(gpuipc_msg *m, void *arg)
{
    liar_arg *a = arg;
    const lie *l = a->l;
    unsigned n = ++a->t->sent;
    gpuipc_msg orig = *m;

    if (n == prefix_at(l) && n != l->at)
        set_status(m, l->prefix);
    if (n == l->at) {
        if (m->type != l->type)
            synthesize(m, l->type, l->liar);
        if (l->status >= 0)
            set_status(m, l->status);
        claim(m, l->claims);
    }
    if (differs(&orig, m))
        a->t->changed = 1;
}

static void liar_env(gpuipc_env *env, int role)
{
    th_env(env, role, "lies-log", LIAR_TIMEOUT_NS);
}

/* The lying producer: accepts on ep, probes and runs one memfd scenario
 * whatever the probe said, and says BYE with its own verdict. */
static void lying_producer(gpuipc_endpoint *ep, liar_arg *a)
{
    gpuipc_scenario_ask ask = {.mech = &gpuipc_mech_memfd, .size = SIZE};
    gpuipc_msg_bye verdict = {.code = GPUIPC_SKIP};
    gpuipc_status st;
    gpuipc_result res;
    gpuipc_peer peer;
    gpuipc_env env;
    gpuipc_wire *w;
    gpuipc_err e;
    int fd, peer_pid;

    liar_env(&env, GPUIPC_ROLE_PRODUCER);
    fd = gpuipc_endpoint_accept(ep, -1, gpuipc_clock_deadline(LIAR_TIMEOUT_NS), NULL, NULL,
                                &peer, &e);
    gpuipc_endpoint_close(ep);
    if (fd < 0 || gpuipc_wire_open(&w, fd, "consumer", &e) < 0)
        _exit(3);
    env.cred_pid = peer.pid > 0 ? peer.pid : -1;
    gpuipc_wire_set_tamper(w, tell, a);
    if (gpuipc_producer_hello(&env, w, 0, &peer_pid, &e) < 0 ||
        gpuipc_producer_probe(&env, w, &ask, &st, &e) < 0)
        _exit(4);
    th_scenario(&env, w, &gpuipc_mech_memfd, SIZE, 0, &res);
    verdict.passed = res.status == GPUIPC_PASS;
    verdict.failed = res.status == GPUIPC_FAIL;
    verdict.skipped = res.status == GPUIPC_SKIP;
    verdict.code = res.status == GPUIPC_STOPPED ? GPUIPC_FAIL : res.status;
    gpuipc_producer_bye(&env, w, &verdict, &st, &e);
    gpuipc_wire_close(w);
    _exit(0);
}

/* Starts case i's liar for the program to meet at name. */
static pid_t start_liar(const lie *l, told *t, const char *name)
{
    liar_arg a = {l, t};
    gpuipc_endpoint ep;
    gpuipc_err e;
    pid_t pid;

    if (l->liar == GPUIPC_ROLE_PRODUCER)
        ck_assert_msg(gpuipc_endpoint_listen(&ep, name, &e) == 0, "listen %s: %s", name, e.msg);
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        if (l->liar == GPUIPC_ROLE_PRODUCER)
            lying_producer(&ep, &a);
        th_lying_consumer(name, tell, &a, "lies-log", LIAR_TIMEOUT_NS);
    }
    if (l->liar == GPUIPC_ROLE_PRODUCER)
        close(ep.fd);
    return pid;
}

static void end_liar(pid_t pid)
{
    int status;
    unsigned i;

    /* It ends with the session; a liar still waiting for a peer that gave
     * up on it has nothing left to say. */
    for (i = 0; i < 50 && waitpid(pid, &status, WNOHANG) == 0; i++)
        usleep(10000);
    if (i == 50) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
    }
}

static const char *type_name(unsigned type)
{
    return gpuipc_wire_type_name(type);
}

static const char *code_name(int code)
{
    return code == GPUIPC_PASS ? "PASS" : code == GPUIPC_FAIL ? "FAIL"
           : code == GPUIPC_SKIP ? "SKIP" : code < 0 ? "-" : "?";
}

static void describe(const lie *l, char *buf, size_t len)
{
    snprintf(buf, len, "%s liar, its %s %s, message %u sent as %s status %s claims %s",
             l->liar == GPUIPC_ROLE_CONSUMER ? "consumer" : "producer",
             l->liar == GPUIPC_ROLE_CONSUMER ? "READY" : "OFFER", code_name(l->prefix), l->at,
             type_name(l->type), code_name(l->status), l->claims ? "all" : "none");
}

/* The first line of out that begins with start, or NULL. */
static const char *line_at(const char *out, const char *start)
{
    const char *p = strstr(out, start);

    while (p != NULL && p != out && p[-1] != '\n')
        p = strstr(p + 1, start);
    return p;
}

/* The verdict's line: "result: ...", or for 77 the one line of its reason,
 * "gpuipc_test: SKIP: ...". */
static const char *result_line(const char *out)
{
    const char *p = line_at(out, "result: ");

    return p != NULL ? p : line_at(out, "gpuipc_test: SKIP: ");
}

/* Whether the output names why the run failed: the liar's own words, a
 * refused message, a lost peer, the other side's verdict, a step that
 * failed (its log line), or a summary row's cause; and never "said above"
 * where nothing above said it. */
static int names_cause(const char *out)
{
    static const char *const words[] = {MARK, "bad message", "peer gone", "timed out",
                                        "concluded FAIL", "concluded SKIP", "self-contradictory"};
    int said = 0;
    size_t i;

    for (i = 0; i < sizeof(words) / sizeof(words[0]); i++)
        said |= strstr(out, words[i]) != NULL;
    /* A step's failure in the step log ("  report   FAIL the ..."), or the
     * cause under a summary row (indented to the result column). */
    said |= strstr(out, "   FAIL ") != NULL || line_at(out, "           ") != NULL;
    if (strstr(out, "(said above)") != NULL)
        return strstr(out, "   FAIL ") != NULL || line_at(out, "           ") != NULL;
    return said;
}

/* Judges one case. Returns NULL if it held, else why not (in buf). */
static const char *judge(const lie *l, const told *t, const th_run *r, char *buf, size_t len)
{
    int data_passed = l->prefix == GPUIPC_PASS && l->at == AT_MAX;
    int claims_data = l->claims && (l->type == GPUIPC_MSG_OFFER ||
                                    l->type == GPUIPC_MSG_REPORT || l->type == GPUIPC_MSG_END ||
                                    (l->type == GPUIPC_MSG_BYE && l->status != GPUIPC_SKIP));
    const char *line = result_line(r->out);
    int code;

    if (!r->finished)
        return snprintf(buf, len, "hung: still running after %.0f s", r->seconds), buf;
    if (!WIFEXITED(r->status))
        return snprintf(buf, len, "ended by signal %d", WTERMSIG(r->status)), buf;
    if (r->leftover != 0)
        return snprintf(buf, len, "left %d processes behind", r->leftover), buf;
    if (line == NULL)
        return snprintf(buf, len, "no result line"), buf;
    code = WEXITSTATUS(r->status);
    if (!t->changed)
        return code == 0 ? NULL : (snprintf(buf, len, "the liar told no lie, yet exit %d", code),
                                   buf);
    if (code == 0)
        return snprintf(buf, len, "PASS (exit 0) against a lie"), buf;
    if (code != 1 && code != 77)
        return snprintf(buf, len, "exit %d: neither 1 nor 77", code), buf;
    if (code == 77 && data_passed)
        return snprintf(buf, len, "exit 77 after a scenario passed"), buf;
    if (code == 77 && claims_data)
        return snprintf(buf, len, "exit 77 where the lie claims bytes or scenarios"), buf;
    if (code == 1 && strstr(line, "FAIL") == NULL)
        return snprintf(buf, len, "exit 1 without FAIL on the result line"), buf;
    if (code == 77 && strstr(line, "SKIP") == NULL)
        return snprintf(buf, len, "exit 77 without SKIP on the result line"), buf;
    if (!names_cause(r->out))
        return snprintf(buf, len, "the output does not name why"), buf;
    return NULL;
}

/* Every case of the liar's role with the lie at message at. */
static size_t make_cases(int liar, unsigned at, lie *cases, size_t cap)
{
    static const int codes[] = {GPUIPC_PASS, GPUIPC_FAIL, GPUIPC_SKIP};
    size_t n = 0;
    unsigned type, p, s, c;

    for (p = 0; p < 3; p++) {
        /* The prefix matters only where the lie comes after it. */
        if (p > 0 && at <= (liar == GPUIPC_ROLE_CONSUMER ? READY_AT : OFFER_AT))
            break;
        for (type = 1; type <= GPUIPC_MSG_TYPE_MAX; type++)
            for (s = 0; s < (has_status(type) ? 3u : 1u); s++)
                for (c = 0; c < (has_claims(type) ? 2u : 1u); c++) {
                    ck_assert_uint_lt(n, cap);
                    cases[n++] = (lie){.liar = liar, .prefix = codes[p], .at = at,
                                       .type = type,
                                       .status = has_status(type) ? codes[s] : -1,
                                       .claims = has_claims(type) ? (int)c : 0};
                }
    }
    return n;
}

/* Runs cases[0..n) against the program, BATCH at a time, and asserts that
 * every one held (listing those that did not). */
static void run_cases(const lie *cases, size_t n)
{
    th_run *runs = th_runs_alloc(BATCH);
    told *t = mmap(NULL, BATCH * sizeof(told), PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    static char report[1 << 14];
    char names[BATCH][64], what[256], why[256];
    const char *args[BATCH][14];
    const char *const *argv[BATCH];
    pid_t liars[BATCH];
    size_t first, i, bad = 0, used = 0, honest = 0;

    ck_assert_ptr_nonnull(runs);
    ck_assert_ptr_ne(t, MAP_FAILED);
    report[0] = '\0';
    for (first = 0; first < n; first += BATCH) {
        size_t k = n - first < BATCH ? n - first : BATCH;

        memset(t, 0, BATCH * sizeof(told));
        for (i = 0; i < k; i++) {
            const lie *l = &cases[first + i];
            const char *serve[] = {"--serve", names[i], "--only", "memfd", "--size", "64K",
                                   "--timeout", "5", "--deadline", "15", NULL};
            const char *connect[] = {"--connect", names[i], "--timeout", "5", "--deadline",
                                     "15", NULL};
            const char **src = l->liar == GPUIPC_ROLE_CONSUMER ? serve : connect;
            size_t j;

            snprintf(names[i], sizeof(names[i]), "@gpuipc-lies-%d-%zu", (int)getpid(), i);
            for (j = 0; src[j] != NULL; j++)
                args[i][j] = src[j];
            args[i][j] = NULL;
            argv[i] = args[i];
            liars[i] = start_liar(l, &t[i], names[i]);
        }
        ck_assert_int_eq(th_spawn_all(runs, k, argv, NULL, 30, 2, NULL, NULL), 0);
        for (i = 0; i < k; i++)
            end_liar(liars[i]);
        for (i = 0; i < k; i++) {
            const lie *l = &cases[first + i];

            honest += !t[i].changed;
            if (judge(l, &t[i], &runs[i], why, sizeof(why)) == NULL)
                continue;
            bad++;
            describe(l, what, sizeof(what));
            if (used + 600 < sizeof(report)) {
                const char *line = result_line(runs[i].out);

                used += (size_t)snprintf(report + used, sizeof(report) - used,
                                         "\n  %s: %s\n    %.300s", what, why,
                                         line != NULL ? line : runs[i].out);
            }
        }
    }
    th_runs_free(runs, BATCH);
    munmap(t, BATCH * sizeof(told));
    /* Each position has its honest case: the liar's own message sent as it
     * is, which must pass, so that every other case fails for its lie. */
    ck_assert_msg(honest >= 1, "no case told the truth: the rules above were never held "
                  "against a pass");
    ck_assert_msg(bad == 0, "%zu of %zu cases did not hold:%s", bad, n, report);
}

static void run_liar_at(int liar, unsigned at)
{
    lie cases[3 * 64];
    size_t n = make_cases(liar, at, cases, sizeof(cases) / sizeof(cases[0]));

    run_cases(cases, n);
}

/* The program as --serve's producer, against a consumer whose message
 * number _i + 1 lies. */
START_TEST(test_lies_a_consumer_lies_at_each_message)
{
    run_liar_at(GPUIPC_ROLE_CONSUMER, (unsigned)_i + 1);
}
END_TEST

/* The program as --connect's consumer, against a producer whose message
 * number _i + 1 lies. */
START_TEST(test_lies_a_producer_lies_at_each_message)
{
    run_liar_at(GPUIPC_ROLE_PRODUCER, (unsigned)_i + 1);
}
END_TEST

Suite *lies_suite(void)
{
    Suite *s = suite_create("lies");
    TCase *tc = tcase_create("every-lie");

    tcase_set_timeout(tc, 300);
    tcase_add_loop_test(tc, test_lies_a_consumer_lies_at_each_message, 0, AT_MAX);
    tcase_add_loop_test(tc, test_lies_a_producer_lies_at_each_message, 0, AT_MAX);
    suite_add_tcase(s, tc);
    return s;
}
