/* SPDX-License-Identifier: Apache-2.0 */
/* test_roles.c: the producer and consumer roles, each in its own process
 * over a real socketpair, on memfd: a whole session, independent scenarios,
 * a peer that dies or hangs at each step, and sabotaged bytes. The role under
 * test runs in the test process, so that its FDs can be counted. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "run/matrix.h"
#include "core/clock.h"
#include "session/consumer.h"
#include "session/link.h"
#include "mech/memfd.h"
#include "session/producer.h"
#include "session/role.h"
#include "core/step.h"
#include "helpers.h"
#include "suites.h"

#define SIZE (1u << 20)
#define TIMEOUT_NS (5 * GPUIPC_NS_PER_S)

static void act(gpuipc_env *env, gpuipc_wire *w, int action, unsigned step)
{
    (void)env;
    (void)w;
    (void)step;
    if (action == GPUIPC_FAULT_EXIT)
        _exit(GPUIPC_FAIL);
    if (action == GPUIPC_FAULT_KILL)
        raise(SIGKILL);
    for (;;)
        pause();
}

/* An env whose log goes to a memfd the test can read back. */
static void env_for(gpuipc_env *env, int role, const char *fault, const char *sabotage,
                    uint64_t timeout_ns)
{
    gpuipc_err e;

    th_env(env, role, "log", timeout_ns);
    env->act = act;
    ck_assert_int_eq(gpuipc_inject_parse(fault, sabotage, &env->inject, &e), 0);
}

static void read_log(const gpuipc_env *env, char *buf, size_t len)
{
    ssize_t n = pread(env->log.fd, buf, len - 1, 0);

    buf[n > 0 ? n : 0] = '\0';
}

static int fail_alloc(struct gpuipc_scenario *sc, uint64_t size, gpuipc_buf *buf, gpuipc_err *err)
{
    (void)sc;
    (void)size;
    (void)buf;
    return gpuipc_err_set(err, -ENOMEM, "simulated allocation failure");
}

static gpuipc_mech broken_mech(void)
{
    gpuipc_mech m = gpuipc_mech_memfd;

    m.name = "broken";
    m.alloc = fail_alloc;
    return m;
}

static gpuipc_mech ghost_mech(void)
{
    gpuipc_mech m = gpuipc_mech_memfd;

    m.name = "ghost";
    return m;
}

/* --pairs' link figures over memfd (session/link.h): the consumer's
 * env->link, where installed, is a fake that measures nothing but gives
 * figures as bench/cuda/link_rate.c would, GPU 1 reading GPU 0's memory at
 * the rates set here, or fails as a driver call would; its wire may lie on
 * the way out. Set before the consumer forks. */
static struct {
    int installed;
    double read, write, local; /* GB/s */
    int fail;                  /* the fake returns an error instead */
    gpuipc_wire_tamper_fn tamper;
} link_fake;

static int fake_link(struct gpuipc_scenario *sc, const gpuipc_view *view, uint64_t seed,
                     const gpuipc_written *once, int write, gpuipc_link_figures *f,
                     gpuipc_err *err)
{
    const double rate[GPUIPC_LINK_RUNS] = {link_fake.read, link_fake.write, link_fake.local};
    uint64_t total;
    unsigned i;
    int kind;

    (void)sc;
    (void)seed;
    memset(f, 0, sizeof(*f));
    if (link_fake.fail) {
        gpuipc_err_set(err, -EIO, "cuPointerGetAttribute: CUDA_ERROR_INVALID_VALUE");
        gpuipc_err_what(err, "cuPointerGetAttribute", 0, 1);
        return -EIO;
    }
    f->passes = gpuipc_link_passes(view->size);
    f->batches = GPUIPC_LINK_BATCHES;
    f->bytes = view->size;
    f->pointer_ordinal = 0;
    f->home_ordinal = 0;
    f->own_ordinal = 1;
    f->wrote = write;
    total = f->passes * f->batches;
    for (kind = 0; kind < GPUIPC_LINK_RUNS; kind++) {
        if (kind == GPUIPC_LINK_WRITE && !write)
            continue;
        f->run[kind].words = total * once->words;
        f->run[kind].digest = total * once->digest;
        for (i = 0; i < GPUIPC_LINK_BATCHES; i++)
            f->run[kind].ns[i] = (uint64_t)((double)(f->passes * f->bytes) / rate[kind]);
    }
    return 0;
}

/* Whether the next consumer forked takes PHASE (the forked mode's). */
static int phases_on;
/* The next consumer's --timeout, where not 0 (else TIMEOUT_NS). */
static uint64_t consumer_timeout_ns;

/* Forks a consumer serving mechs over sv[1]; returns its pid. */
static pid_t spawn_consumer(int sv[2], const gpuipc_mech *const *mechs, size_t n,
                            const char *fault, const char *sabotage)
{
    pid_t pid = fork();

    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        gpuipc_env env;
        gpuipc_wire *w;
        gpuipc_err e;

        close(sv[0]);
        env_for(&env, GPUIPC_ROLE_CONSUMER, fault, sabotage,
                consumer_timeout_ns != 0 ? consumer_timeout_ns : TIMEOUT_NS);
        env.phases = phases_on;
        if (gpuipc_wire_open(&w, sv[1], "producer", &e) < 0)
            _exit(3);
        if (link_fake.installed)
            env.link = fake_link;
        if (link_fake.tamper != NULL)
            gpuipc_wire_set_tamper(w, link_fake.tamper, NULL);
        {
            gpuipc_session_end end;

            _exit(gpuipc_consumer_serve(&env, w, mechs, n, &end));
        }
    }
    close(sv[1]);
    return pid;
}

static void pair(int sv[2])
{
    ck_assert_int_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
}

/* Starts a session: a consumer serving mechs (with its own test hooks) in a
 * child, the producer's wire in this process, HELLO exchanged. */
static pid_t open_session(gpuipc_env *env, gpuipc_wire **w, const gpuipc_mech *const *mechs,
                          size_t n, const char *fault, const char *sabotage)
{
    int sv[2], peer = 0;
    gpuipc_err e;
    pid_t pid;

    ck_assert_int_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
    pid = spawn_consumer(sv, mechs, n, fault, sabotage);
    ck_assert_int_eq(gpuipc_wire_open(w, sv[0], "consumer", &e), 0);
    ck_assert_int_eq(gpuipc_producer_hello(env, *w, 0, &peer, &e), 0);
    ck_assert_int_eq(peer, pid);
    return pid;
}

/* Ends the session with verdict code: BYE, and the consumer's BYE_ACK,
 * whose status this returns (GPUIPC_PASS if its last checks passed). */
static int bye(gpuipc_env *env, gpuipc_wire *w, int code)
{
    /* A passing verdict counts what passed: the one scenario these tests
     * see pass before they say it. */
    gpuipc_msg_bye verdict = {.code = code, .passed = code == GPUIPC_PASS};
    gpuipc_status ack;
    gpuipc_err e;

    ck_assert_msg(gpuipc_producer_bye(env, w, &verdict, &ack, &e) == 0, "BYE: %s", e.msg);
    return ack.code;
}

static int wait_exit(pid_t pid)
{
    int status;

    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    return status;
}

/* ---- the forked mode's phases: a phase's cells at once, on workers ----------------------- */

typedef struct phase_worker {
    gpuipc_env env;
    gpuipc_wire *w;
    gpuipc_result res[2];
} phase_worker;

static void *run_phase_worker(void *arg)
{
    phase_worker *k = arg;
    unsigned i;

    for (i = 0; i < 2; i++)
        th_scenario(&k->env, k->w, &gpuipc_mech_memfd, SIZE, i, &k->res[i]);
    return NULL;
}

/* Sends PHASE (flags, phase; workers' connections where fds) and returns
 * the consumer's PHASE_ACK status into st. */
static void phase_msg(gpuipc_wire *w, unsigned flags, unsigned cells, int *fds, unsigned nfds,
                      gpuipc_msg *ack)
{
    int rfds[GPUIPC_WIRE_MAX_FDS];
    gpuipc_msg m;
    gpuipc_err e;

    memset(&m, 0, sizeof(m));
    m.type = GPUIPC_MSG_PHASE;
    m.nfds = (uint16_t)nfds;
    m.u.phase.phase = 1;
    m.u.phase.flags = flags;
    m.u.phase.workers = nfds;
    m.u.phase.cells = cells;
    ck_assert_msg(gpuipc_wire_send(w, &m, fds, gpuipc_clock_deadline(TIMEOUT_NS),
                                   GPUIPC_STEP_BEGIN, &e) == 0, "PHASE: %s", e.msg);
    ck_assert_msg(gpuipc_wire_recv(w, GPUIPC_MSG_BIT(GPUIPC_MSG_PHASE_ACK), ack, rfds,
                                   gpuipc_clock_deadline(TIMEOUT_NS), GPUIPC_STEP_BEGIN, &e) == 0,
                  "PHASE_ACK: %s", e.msg);
}

/* A session whose consumer takes PHASE (the forked mode's), sabotage its
 * hook, HELLO exchanged. */
static pid_t open_phased(gpuipc_env *env, gpuipc_wire **w, const char *sabotage)
{
    static const gpuipc_mech *const mechs[] = {&gpuipc_mech_memfd};
    pid_t pid;

    phases_on = 1;
    pid = open_session(env, w, mechs, 1, NULL, sabotage);
    phases_on = 0;
    return pid;
}

/* Two workers' scenarios at once: the session's PHASE brings their
 * connections, the consumer serves each on a thread of its own, their
 * scenarios pass and count at BYE, and the phase's end finds the consumer
 * holding what it held at its beginning. With sabotage (the consumer keeps
 * each buffer), the scenarios' own checks, which count a worker's driver
 * objects alone, pass, and the phase's end names what the process holds
 * more: a drift for the producer to run again one cell at a time. */
static void run_phase(const char *sabotage)
{
    phase_worker k[2];
    pthread_t t[2];
    int sv[2][2], fds[2], before, status, i;
    gpuipc_env env;
    gpuipc_wire *w;
    gpuipc_msg ack;
    gpuipc_err e;
    pid_t pid;

    env_for(&env, GPUIPC_ROLE_PRODUCER, NULL, NULL, TIMEOUT_NS);
    before = th_fd_count();
    pid = open_phased(&env, &w, sabotage);
    for (i = 0; i < 2; i++) {
        pair(sv[i]);
        fds[i] = sv[i][1];
    }
    phase_msg(w, GPUIPC_PHASE_BEGIN, 0, fds, 2, &ack);
    ck_assert_msg(ack.u.phase_ack.st.code == GPUIPC_PASS, "%s", ack.u.phase_ack.st.reason);
    for (i = 0; i < 2; i++) {
        close(sv[i][1]);
        k[i].env = env;
        k[i].env.per_phase = 1;
        ck_assert_int_eq(gpuipc_wire_open(&k[i].w, sv[i][0], "consumer", &e), 0);
        ck_assert_int_eq(pthread_create(&t[i], NULL, run_phase_worker, &k[i]), 0);
    }
    for (i = 0; i < 2; i++) {
        pthread_join(t[i], NULL);
        ck_assert_msg(k[i].res[0].status == GPUIPC_PASS && k[i].res[1].status == GPUIPC_PASS,
                      "worker %d: %s %s", i, k[i].res[0].reason, k[i].res[1].reason);
    }
    phase_msg(w, GPUIPC_PHASE_END, 4, NULL, 0, &ack);
    if (sabotage == NULL) {
        ck_assert_msg(ack.u.phase_ack.st.code == GPUIPC_PASS, "%s", ack.u.phase_ack.st.reason);
    } else {
        ck_assert_int_eq(ack.u.phase_ack.st.code, GPUIPC_FAIL);
        ck_assert_msg(strstr(ack.u.phase_ack.st.reason, "phase 1: the consumer holds what it "
                                                        "did not at the phase's beginning") !=
                          NULL, "%s", ack.u.phase_ack.st.reason);
    }
    for (i = 0; i < 2; i++)
        gpuipc_wire_close(k[i].w);
    if (sabotage == NULL) {
        ck_assert_int_eq(bye(&env, w, GPUIPC_PASS), GPUIPC_PASS);
        status = wait_exit(pid);
        ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    } else {
        kill(pid, SIGKILL);
        wait_exit(pid);
    }
    gpuipc_wire_close(w);
    ck_assert_int_eq(th_fd_count(), before);
}

/* A PHASE out of its order (an end with no beginning) fails the consumer's
 * session, not only the phase: BYE_ACK says so and the consumer exits 1. */
START_TEST(test_roles_a_phase_out_of_order_fails_the_session)
{
    gpuipc_env env;
    gpuipc_wire *w;
    gpuipc_msg ack;
    int status;
    pid_t pid;

    env_for(&env, GPUIPC_ROLE_PRODUCER, NULL, NULL, TIMEOUT_NS);
    pid = open_phased(&env, &w, NULL);
    phase_msg(w, GPUIPC_PHASE_END, 0, NULL, 0, &ack);
    ck_assert_int_eq(ack.u.phase_ack.st.code, GPUIPC_FAIL);
    ck_assert_msg(strstr(ack.u.phase_ack.st.reason, "an end with no beginning") != NULL, "%s",
                  ack.u.phase_ack.st.reason);
    ck_assert_int_eq(bye(&env, w, GPUIPC_SKIP), GPUIPC_FAIL);
    status = wait_exit(pid);
    ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 1);
    gpuipc_wire_close(w);
}
END_TEST

START_TEST(test_roles_a_phase_runs_two_workers_at_once)
{
    run_phase(NULL);
}
END_TEST

START_TEST(test_roles_a_phase_end_names_what_the_consumer_kept)
{
    run_phase("consumer:leak");
}
END_TEST

/* A worker's scenario that starts a moment after the producer's PHASE END
 * (its cells' END_ACKs and the consumer's count may cross): the end waits
 * for it within the consumer's --timeout, here 900 ms, all of it. */
typedef struct late_worker {
    gpuipc_env env;
    gpuipc_wire *w;
    gpuipc_result res;
} late_worker;

static void *run_late_worker(void *arg)
{
    late_worker *k = arg;

    gpuipc_clock_sleep(300 * GPUIPC_NS_PER_MS);
    th_scenario(&k->env, k->w, &gpuipc_mech_memfd, SIZE, 0, &k->res);
    return NULL;
}

START_TEST(test_roles_a_phase_end_waits_a_timeout_under_a_second)
{
    late_worker k;
    pthread_t t;
    int sv[2], before, status;
    gpuipc_env env;
    gpuipc_wire *w;
    gpuipc_msg ack;
    gpuipc_err e;
    pid_t pid;

    env_for(&env, GPUIPC_ROLE_PRODUCER, NULL, NULL, TIMEOUT_NS);
    before = th_fd_count();
    consumer_timeout_ns = 900 * GPUIPC_NS_PER_MS;
    pid = open_phased(&env, &w, NULL);
    consumer_timeout_ns = 0;
    pair(sv);
    phase_msg(w, GPUIPC_PHASE_BEGIN, 0, &sv[1], 1, &ack);
    ck_assert_msg(ack.u.phase_ack.st.code == GPUIPC_PASS, "%s", ack.u.phase_ack.st.reason);
    close(sv[1]);
    memset(&k, 0, sizeof(k));
    k.env = env;
    k.env.per_phase = 1;
    ck_assert_int_eq(gpuipc_wire_open(&k.w, sv[0], "consumer", &e), 0);
    ck_assert_int_eq(pthread_create(&t, NULL, run_late_worker, &k), 0);
    phase_msg(w, GPUIPC_PHASE_END, 1, NULL, 0, &ack);
    pthread_join(t, NULL);
    ck_assert_msg(k.res.status == GPUIPC_PASS, "worker: %s", k.res.reason);
    ck_assert_msg(ack.u.phase_ack.st.code == GPUIPC_PASS, "PHASE_ACK at the end: %s",
                  ack.u.phase_ack.st.reason);
    gpuipc_wire_close(k.w);
    ck_assert_int_eq(bye(&env, w, GPUIPC_PASS), GPUIPC_PASS);
    status = wait_exit(pid);
    ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    gpuipc_wire_close(w);
    ck_assert_int_eq(th_fd_count(), before);
}
END_TEST

START_TEST(test_roles_memfd_round_trip)
{
    const gpuipc_mech *mechs[] = {&gpuipc_mech_memfd};
    int before, status;
    gpuipc_result res;
    gpuipc_env env;
    gpuipc_wire *w;
    pid_t pid;

    env_for(&env, GPUIPC_ROLE_PRODUCER, NULL, NULL, TIMEOUT_NS);
    before = th_fd_count();
    pid = open_session(&env, &w, mechs, 1, NULL, NULL);
    th_scenario(&env, w, &gpuipc_mech_memfd, SIZE, 0, &res);
    ck_assert_msg(res.status == GPUIPC_PASS, "memfd: %s", res.reason);
    ck_assert_uint_eq(res.size, SIZE);
    ck_assert_uint_eq(res.forward.words, SIZE / 8);
    ck_assert_uint_eq(res.forward.mismatches, 0);
    ck_assert_uint_eq(res.backward.words, SIZE / 8);
    ck_assert_uint_eq(res.backward.mismatches, 0);
    ck_assert_int_eq(bye(&env, w, GPUIPC_PASS), GPUIPC_PASS);
    status = wait_exit(pid);
    ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    gpuipc_wire_close(w);
    ck_assert_int_eq(th_fd_count(), before);
}
END_TEST

/* A scenario that fails on the producer's side (its allocation) ends with the
 * same message exchange as one that passes, so the next scenario runs. */
START_TEST(test_roles_failed_alloc_does_not_desync_the_next_scenario)
{
    gpuipc_mech broken = broken_mech();
    const gpuipc_mech *mechs[] = {&gpuipc_mech_memfd, &broken};
    int status;
    gpuipc_result res;
    gpuipc_env env;
    gpuipc_wire *w;
    pid_t pid;

    env_for(&env, GPUIPC_ROLE_PRODUCER, NULL, NULL, TIMEOUT_NS);
    pid = open_session(&env, &w, mechs, 2, NULL, NULL);
    th_scenario(&env, w, &broken, SIZE, 0, &res);
    ck_assert_int_eq(res.status, GPUIPC_FAIL);
    ck_assert_str_eq(res.reason, "alloc: simulated allocation failure");
    th_scenario(&env, w, &gpuipc_mech_memfd, SIZE, 1, &res);
    ck_assert_msg(res.status == GPUIPC_PASS, "second scenario: %s", res.reason);
    /* The consumer's side passed both; it exits with the session's verdict. */
    ck_assert_int_eq(bye(&env, w, GPUIPC_FAIL), GPUIPC_PASS);
    status = wait_exit(pid);
    ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == GPUIPC_FAIL);
    gpuipc_wire_close(w);
}
END_TEST

/* A scenario the consumer cannot take part in fails, the next one passes,
 * and the consumer's exit code carries its own failure. */
START_TEST(test_roles_consumer_refusal_does_not_desync_the_next_scenario)
{
    gpuipc_mech ghost = ghost_mech();
    const gpuipc_mech *mechs[] = {&gpuipc_mech_memfd};
    int status;
    gpuipc_result res;
    gpuipc_env env;
    gpuipc_wire *w;
    pid_t pid;

    env_for(&env, GPUIPC_ROLE_PRODUCER, NULL, NULL, TIMEOUT_NS);
    pid = open_session(&env, &w, mechs, 1, NULL, NULL);
    th_scenario(&env, w, &ghost, SIZE, 0, &res);
    ck_assert_int_eq(res.status, GPUIPC_FAIL);
    ck_assert_str_eq(res.reason, "consumer probe: this consumer has no such mechanism");
    th_scenario(&env, w, &gpuipc_mech_memfd, SIZE, 1, &res);
    ck_assert_msg(res.status == GPUIPC_PASS, "second scenario: %s", res.reason);
    /* Even a producer that (wrongly) concludes a pass cannot make the
     * consumer's own failure vanish: it answers FAIL and exits 1. */
    ck_assert_int_eq(bye(&env, w, GPUIPC_PASS), GPUIPC_FAIL);
    status = wait_exit(pid);
    ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == GPUIPC_FAIL);
    gpuipc_wire_close(w);
}
END_TEST

/* The fault matrix's cases (run/matrix.h) where role dies, killed or by
 * exiting, at a step that this suite's sessions reach. They run in-process:
 * the producer calls the roles' functions itself and is not the program, so
 * two steps are left out on purpose. Returns the count, cases in out. */
static unsigned list_deaths(int role, gpuipc_matrix_case *out)
{
    gpuipc_matrix_case all[GPUIPC_MATRIX_MAX];
    unsigned n = gpuipc_matrix_cases(all, GPUIPC_MATRIX_MAX), i, k = 0;

    for (i = 0; i < n; i++) {
        if (all[i].role != role ||
            (all[i].action != GPUIPC_FAULT_EXIT && all[i].action != GPUIPC_FAULT_KILL))
            continue;
        /* The producer here goes straight to its scenario: it never sends a
         * PROBE of its own (the program does, before the scenarios), so a
         * producer's fault at probe would never strike. */
        if (role == GPUIPC_ROLE_PRODUCER && all[i].step == GPUIPC_STEP_PROBE)
            continue;
        /* The producer watching a consumer die says no BYE, so a consumer's
         * fault at bye-ack would never strike. */
        if (role == GPUIPC_ROLE_CONSUMER && all[i].step == GPUIPC_STEP_BYE_ACK)
            continue;
        out[k++] = all[i];
    }
    return k;
}

/* The step the survivor is waiting in when c strikes, which its report must
 * name: the matrix's, but for one. With no PROBE exchange the consumer's
 * first probe is its scenario's own, made while the producer waits for
 * READY. */
static unsigned waiting_in_process(const gpuipc_matrix_case *c)
{
    if (c->role == GPUIPC_ROLE_CONSUMER && c->step == GPUIPC_STEP_PROBE)
        return GPUIPC_STEP_READY;
    return gpuipc_matrix_waiting(c->role, c->step);
}

/* Filled by roles_suite(). */
static gpuipc_matrix_case consumer_deaths[GPUIPC_MATRIX_MAX];
static gpuipc_matrix_case producer_deaths[GPUIPC_MATRIX_MAX];

START_TEST(test_roles_producer_reports_a_consumer_that_dies)
{
    const gpuipc_mech *mechs[] = {&gpuipc_mech_memfd};
    const gpuipc_matrix_case *c = &consumer_deaths[_i];
    char fault[64], want[64];
    int sv[2], peer, before, status, rc;
    uint64_t t0;
    gpuipc_result res;
    gpuipc_env env;
    gpuipc_wire *w;
    gpuipc_err e;
    pid_t pid;

    snprintf(fault, sizeof(fault), "consumer:%s:%s", gpuipc_step_name(c->step),
             gpuipc_inject_action_name(c->action));
    snprintf(want, sizeof(want), "peer gone during %s", gpuipc_step_name(waiting_in_process(c)));
    env_for(&env, GPUIPC_ROLE_PRODUCER, NULL, NULL, TIMEOUT_NS);
    before = th_fd_count();
    pair(sv);
    pid = spawn_consumer(sv, mechs, 1, fault, NULL);
    ck_assert_int_eq(gpuipc_wire_open(&w, sv[0], "consumer", &e), 0);
    t0 = gpuipc_clock_ns();
    rc = gpuipc_producer_hello(&env, w, 0, &peer, &e);
    if (rc == 0) {
        th_scenario(&env, w, &gpuipc_mech_memfd, SIZE, 0, &res);
        ck_assert_int_eq(res.status, GPUIPC_FAIL);
        snprintf(e.msg, sizeof(e.msg), "%s", res.reason);
    }
    ck_assert_msg(strstr(e.msg, want) != NULL, "%s: reason '%s' lacks '%s'", fault, e.msg, want);
    ck_assert_msg(gpuipc_clock_ns() - t0 < GPUIPC_NS_PER_S, "%s: noticed after %.2f s", fault,
                  (double)(gpuipc_clock_ns() - t0) / 1e9);
    status = wait_exit(pid);
    if (c->action == GPUIPC_FAULT_KILL)
        ck_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    else
        ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == GPUIPC_FAIL);
    gpuipc_wire_close(w);
    ck_assert_int_eq(th_fd_count(), before);
}
END_TEST

/* The producer, forked, runs one scenario and says BYE. */
static pid_t spawn_producer(int sv[2], const char *fault, const char *sabotage)
{
    pid_t pid = fork();

    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        gpuipc_result res;
        gpuipc_env env;
        gpuipc_wire *w;
        gpuipc_err e;
        int peer;

        close(sv[1]);
        env_for(&env, GPUIPC_ROLE_PRODUCER, fault, sabotage, TIMEOUT_NS);
        if (gpuipc_wire_open(&w, sv[0], "consumer", &e) < 0 ||
            gpuipc_producer_hello(&env, w, 0, &peer, &e) < 0)
            _exit(3);
        th_scenario(&env, w, &gpuipc_mech_memfd, SIZE, 0, &res);
        {
            gpuipc_msg_bye verdict = {.code = res.status, .passed = res.status == GPUIPC_PASS};
            gpuipc_status ack;

            gpuipc_producer_bye(&env, w, &verdict, &ack, &e);
        }
        _exit(res.status);
    }
    close(sv[0]);
    return pid;
}

START_TEST(test_roles_consumer_reports_a_producer_that_dies)
{
    const gpuipc_mech *mechs[] = {&gpuipc_mech_memfd};
    const gpuipc_matrix_case *c = &producer_deaths[_i];
    char fault[64], want[64], log[4096];
    int sv[2], before, verdict;
    gpuipc_session_end end;
    uint64_t t0;
    gpuipc_env env;
    gpuipc_wire *w;
    gpuipc_err e;
    pid_t pid;

    snprintf(fault, sizeof(fault), "producer:%s:%s", gpuipc_step_name(c->step),
             gpuipc_inject_action_name(c->action));
    snprintf(want, sizeof(want), "peer gone during %s", gpuipc_step_name(waiting_in_process(c)));
    env_for(&env, GPUIPC_ROLE_CONSUMER, NULL, NULL, TIMEOUT_NS);
    before = th_fd_count();
    pair(sv);
    pid = spawn_producer(sv, fault, NULL);
    ck_assert_int_eq(gpuipc_wire_open(&w, sv[1], "producer", &e), 0);
    t0 = gpuipc_clock_ns();
    verdict = gpuipc_consumer_serve(&env, w, mechs, 1, &end);
    ck_assert_msg(gpuipc_clock_ns() - t0 < GPUIPC_NS_PER_S, "%s: noticed after %.2f s", fault,
                  (double)(gpuipc_clock_ns() - t0) / 1e9);
    ck_assert_int_eq(verdict, GPUIPC_FAIL);
    read_log(&env, log, sizeof(log));
    ck_assert_msg(strstr(log, want) != NULL, "%s: log '%s' lacks '%s'", fault, log, want);
    wait_exit(pid);
    gpuipc_wire_close(w);
    ck_assert_int_eq(th_fd_count(), before);
}
END_TEST

START_TEST(test_roles_producer_times_out_on_a_hung_consumer)
{
    const gpuipc_mech *mechs[] = {&gpuipc_mech_memfd};
    uint64_t t0;
    double took;
    gpuipc_result res;
    gpuipc_env env;
    gpuipc_wire *w;
    pid_t pid;

    env_for(&env, GPUIPC_ROLE_PRODUCER, NULL, NULL, 300 * GPUIPC_NS_PER_MS);
    pid = open_session(&env, &w, mechs, 1, "consumer:report:hang", NULL);
    t0 = gpuipc_clock_ns();
    th_scenario(&env, w, &gpuipc_mech_memfd, SIZE, 0, &res);
    took = (double)(gpuipc_clock_ns() - t0) / 1e9;
    ck_assert_int_eq(res.status, GPUIPC_FAIL);
    ck_assert_msg(strstr(res.reason, "timed out during report: no REPORT from the consumer"),
                  "reason: %s", res.reason);
    ck_assert_msg(took >= 0.3 && took < 3.3, "deadline 0.3 s, took %.2f s", took);
    kill(pid, SIGKILL);
    wait_exit(pid);
    gpuipc_wire_close(w);
}
END_TEST

START_TEST(test_roles_consumer_times_out_on_a_hung_producer)
{
    const gpuipc_mech *mechs[] = {&gpuipc_mech_memfd};
    gpuipc_session_end end;
    char log[4096];
    int sv[2];
    gpuipc_env env;
    gpuipc_wire *w;
    gpuipc_err e;
    pid_t pid;

    /* A second for HELLO from a producer forked just now, on a loaded
     * machine too: the wait that must time out is the OFFER's. */
    env_for(&env, GPUIPC_ROLE_CONSUMER, NULL, NULL, 1000 * GPUIPC_NS_PER_MS);
    pair(sv);
    pid = spawn_producer(sv, "producer:fill:hang", NULL);
    ck_assert_int_eq(gpuipc_wire_open(&w, sv[1], "producer", &e), 0);
    ck_assert_int_eq(gpuipc_consumer_serve(&env, w, mechs, 1, &end), GPUIPC_FAIL);
    read_log(&env, log, sizeof(log));
    ck_assert_msg(strstr(log, "timed out during offer: no OFFER from the producer") != NULL,
                  "log: %s", log);
    kill(pid, SIGKILL);
    wait_exit(pid);
    gpuipc_wire_close(w);
}
END_TEST

static const struct {
    const char *sabotage;
    const char *reason;
} sabotages[] = {
    {"producer:skip-write", "consumer verify: the producer's bytes: 131072 mismatches "
                            "in 131072 words; first bad word 0"},
    {"producer:wrong-seed", "consumer verify: the producer's bytes: 131072 mismatches "
                            "in 131072 words; first bad word 0"},
    {"consumer:skip-write", "check: the consumer's bytes: 131072 mismatches in 131072 words; "
                            "first bad word 0"},
    {"consumer:wrong-seed", "check: the consumer's bytes: 131072 mismatches in 131072 words; "
                            "first bad word 0"},
};

START_TEST(test_roles_sabotaged_bytes_fail_the_scenario)
{
    const gpuipc_mech *mechs[] = {&gpuipc_mech_memfd};
    const char *sab = sabotages[_i].sabotage;
    int producer_side = strncmp(sab, "producer", 8) == 0;
    gpuipc_result res;
    gpuipc_env env;
    gpuipc_wire *w;
    pid_t pid;

    env_for(&env, GPUIPC_ROLE_PRODUCER, NULL, producer_side ? sab : NULL, TIMEOUT_NS);
    pid = open_session(&env, &w, mechs, 1, NULL, producer_side ? NULL : sab);
    th_scenario(&env, w, &gpuipc_mech_memfd, SIZE, 0, &res);
    ck_assert_int_eq(res.status, GPUIPC_FAIL);
    ck_assert_msg(strstr(res.reason, sabotages[_i].reason) != NULL, "%s: reason '%s'", sab,
                  res.reason);
    bye(&env, w, res.status);
    wait_exit(pid);
    gpuipc_wire_close(w);
}
END_TEST

/* The accounting must be able to fail: a producer that skips its release
 * keeps the memfd open, and the scenario fails naming it. */
START_TEST(test_roles_producer_leak_fails_the_scenario_and_names_the_fd)
{
    const gpuipc_mech *mechs[] = {&gpuipc_mech_memfd};
    gpuipc_result res;
    gpuipc_env env;
    gpuipc_wire *w;
    pid_t pid;

    env_for(&env, GPUIPC_ROLE_PRODUCER, NULL, "producer:leak", TIMEOUT_NS);
    pid = open_session(&env, &w, mechs, 1, NULL, NULL);
    th_scenario(&env, w, &gpuipc_mech_memfd, SIZE, 0, &res);
    ck_assert_int_eq(res.status, GPUIPC_FAIL);
    ck_assert_msg(strstr(res.reason, "producer leaked: 1 FD leaked: fd ") != NULL &&
                  strstr(res.reason, "(/memfd:gpuipc_test (deleted))") != NULL,
                  "reason: %s", res.reason);
    ck_assert_uint_eq(res.forward.mismatches, 0); /* the bytes themselves were fine */
    bye(&env, w, res.status);
    wait_exit(pid);
    gpuipc_wire_close(w);
}
END_TEST

/* A consumer that leaks an FD fails its side, and the producer's result says so. */
static int leaky_import(struct gpuipc_scenario *sc, const gpuipc_msg_offer *offer, const int *fds,
                        unsigned nfds, gpuipc_buf *buf, gpuipc_err *err)
{
    int rc = gpuipc_mech_memfd.import(sc, offer, fds, nfds, buf, err);

    if (rc == 0 && fcntl(fds[0], F_DUPFD_CLOEXEC, 0) < 0) /* kept, never closed */
        rc = -errno;
    return rc;
}

START_TEST(test_roles_consumer_leak_fails_the_scenario_and_names_the_fd)
{
    gpuipc_mech leaky = gpuipc_mech_memfd;
    const gpuipc_mech *mechs[] = {&leaky};
    int status;
    gpuipc_result res;
    gpuipc_env env;
    gpuipc_wire *w;
    pid_t pid;

    leaky.import = leaky_import;
    env_for(&env, GPUIPC_ROLE_PRODUCER, NULL, NULL, TIMEOUT_NS);
    pid = open_session(&env, &w, mechs, 1, NULL, NULL);
    th_scenario(&env, w, &gpuipc_mech_memfd, SIZE, 0, &res);
    ck_assert_int_eq(res.status, GPUIPC_FAIL);
    ck_assert_msg(strstr(res.reason, "consumer release: consumer leaked: 1 FD leaked: "
                         "fd ") != NULL &&
                  strstr(res.reason, "(/memfd:gpuipc_test (deleted))") != NULL,
                  "reason: %s", res.reason);
    bye(&env, w, res.status);
    status = wait_exit(pid);
    ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == GPUIPC_FAIL);
    gpuipc_wire_close(w);
}
END_TEST

/* A test-only mechanism that gives the consumer a second view: the memfd
 * mapped twice, or (broken) a private zero mapping that shares nothing. */
static int second_view_broken;

static int twice_import(struct gpuipc_scenario *sc, const gpuipc_msg_offer *offer, const int *fds,
                        unsigned nfds, gpuipc_buf *buf, gpuipc_err *err)
{
    int rc = gpuipc_mech_memfd.import(sc, offer, fds, nfds, buf, err);
    void *m;

    if (rc < 0)
        return rc;
    m = second_view_broken
            ? mmap(NULL, buf->size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
            : mmap(NULL, buf->size, PROT_READ | PROT_WRITE, MAP_SHARED, fds[0], 0);
    if (m == MAP_FAILED)
        return -errno;
    buf->alt = buf->view;
    buf->alt.host = m;
    snprintf(buf->alt_name, sizeof(buf->alt_name), "a second mapping");
    return 0;
}

static int twice_release(struct gpuipc_scenario *sc, gpuipc_buf *buf, gpuipc_err *err)
{
    if (buf->alt.host != NULL)
        munmap(buf->alt.host, buf->size);
    return gpuipc_mech_memfd.release(sc, buf, err);
}

/* Runs one scenario of mech with a consumer that serves only it. */
static gpuipc_result run_one(const gpuipc_mech *mech)
{
    const gpuipc_mech *mechs[] = {mech};
    gpuipc_result res;
    gpuipc_env env;
    gpuipc_wire *w;
    pid_t pid;

    env_for(&env, GPUIPC_ROLE_PRODUCER, NULL, NULL, TIMEOUT_NS);
    pid = open_session(&env, &w, mechs, 1, NULL, NULL);
    th_scenario(&env, w, mech, SIZE, 0, &res);
    bye(&env, w, res.status);
    wait_exit(pid);
    gpuipc_wire_close(w);
    return res;
}

static gpuipc_result run_twice(int broken)
{
    gpuipc_mech twice = gpuipc_mech_memfd;

    twice.import = twice_import;
    twice.release = twice_release;
    second_view_broken = broken;
    return run_one(&twice);
}

START_TEST(test_roles_consumer_verifies_the_second_view)
{
    gpuipc_result res = run_twice(0);

    ck_assert_msg(res.status == GPUIPC_PASS, "%s", res.reason);
}
END_TEST

START_TEST(test_roles_a_second_view_that_shares_nothing_fails)
{
    gpuipc_result res = run_twice(1);

    ck_assert_int_eq(res.status, GPUIPC_FAIL);
    ck_assert_msg(strstr(res.reason, "the producer's bytes read through a second mapping: 131072 "
                                     "mismatches in 131072 words; first bad word 0") != NULL,
                  "reason: %s", res.reason);
}
END_TEST

/* A test-only read-only mechanism: memfd mapped PROT_READ in the consumer.
 * Broken, its "refused" write lands anyway, which the producer must see. */
static int read_only_broken;

static int ro_import(struct gpuipc_scenario *sc, const gpuipc_msg_offer *offer, const int *fds,
                     unsigned nfds, gpuipc_buf *buf, gpuipc_err *err)
{
    int rc = gpuipc_mech_memfd.import(sc, offer, fds, nfds, buf, err);

    if (rc == 0 && mprotect(buf->view.host, buf->size, PROT_READ) < 0)
        rc = -errno;
    return rc;
}

static int ro_prove(struct gpuipc_scenario *sc, gpuipc_buf *buf, gpuipc_err *err)
{
    (void)sc;
    if (read_only_broken) {
        if (mprotect(buf->view.host, buf->size, PROT_READ | PROT_WRITE) < 0)
            return -errno;
        ((uint64_t *)buf->view.host)[0] ^= 1;
    }
    return gpuipc_err_set(err, 0, "mapped PROT_READ");
}

static gpuipc_result run_read_only(int broken)
{
    gpuipc_mech ro = gpuipc_mech_memfd;

    ro.import = ro_import;
    ro.prove_read_only = ro_prove;
    read_only_broken = broken;
    return run_one(&ro);
}

START_TEST(test_roles_read_only_consumer_leaves_the_bytes_unchanged)
{
    gpuipc_result res = run_read_only(0);

    ck_assert_msg(res.status == GPUIPC_PASS, "%s", res.reason);
    ck_assert_uint_eq(res.forward.mismatches, 0);
    /* The producer read its own pattern back: every word, none changed. */
    ck_assert_uint_eq(res.backward.words, SIZE / 8);
    ck_assert_uint_eq(res.backward.mismatches, 0);
}
END_TEST

START_TEST(test_roles_a_write_through_a_read_only_mapping_is_caught)
{
    gpuipc_result res = run_read_only(1);

    ck_assert_int_eq(res.status, GPUIPC_FAIL);
    ck_assert_msg(strstr(res.reason, "the producer's bytes changed under a read-only mapping: 1 "
                                     "mismatches in 131072 words; first bad word 0") != NULL,
                  "reason: %s", res.reason);
}
END_TEST

/* One scenario of mech, asking for the link's figures as --pairs does (and
 * for the step times, as --json does, where times is set; the laps that
 * came are counted into *nlaps). */
static gpuipc_result run_link_times(const gpuipc_mech *mech, int times, unsigned *nlaps)
{
    const gpuipc_mech *mechs[] = {mech};
    gpuipc_timing t;
    gpuipc_scenario_ask ask = {.mech = mech, .size = SIZE, .index = 0, .timing = &t};
    gpuipc_result res;
    gpuipc_env env;
    gpuipc_wire *w;
    pid_t pid;

    memset(&t, 0, sizeof(t));
    t.flags = GPUIPC_BEGIN_LINK | (times ? GPUIPC_BEGIN_TIMES : 0);
    env_for(&env, GPUIPC_ROLE_PRODUCER, NULL, NULL, TIMEOUT_NS);
    pid = open_session(&env, &w, mechs, 1, NULL, NULL);
    gpuipc_producer_scenario(&env, w, &ask, &res);
    bye(&env, w, res.status);
    wait_exit(pid);
    gpuipc_wire_close(w);
    if (nlaps != NULL)
        *nlaps = t.nlaps;
    return res;
}

static gpuipc_result run_link(const gpuipc_mech *mech)
{
    return run_link_times(mech, 0, NULL);
}

static void fake_rates(double read, double write, double local)
{
    link_fake.installed = 1;
    link_fake.read = read;
    link_fake.write = write;
    link_fake.local = local;
}

/* The figures travel in TIMES after END_ACK, both sides hold them, and the
 * result carries them. */
START_TEST(test_roles_link_figures_reach_the_producer)
{
    gpuipc_result res;

    fake_rates(370, 365, 3000);
    res = run_link(&gpuipc_mech_memfd);
    ck_assert_msg(res.status == GPUIPC_PASS, "%s", res.reason);
    ck_assert_uint_eq(res.link.passes, gpuipc_link_passes(SIZE));
    ck_assert_uint_eq(res.link.bytes, SIZE);
    ck_assert_int_eq(res.link.wrote, 1);
    ck_assert_double_eq_tol(gpuipc_link_gbps(&res.link, GPUIPC_LINK_READ), 370, 0.1);
    ck_assert_double_eq_tol(gpuipc_link_gbps(&res.link, GPUIPC_LINK_WRITE), 365, 0.1);
    ck_assert_double_eq_tol(gpuipc_link_gbps(&res.link, GPUIPC_LINK_LOCAL), 3000, 0.1);
}
END_TEST

/* With --json too, the step times and the figures come in one series of
 * TIMES, the figures last. */
START_TEST(test_roles_link_figures_come_after_the_step_times)
{
    unsigned nlaps = 0;
    gpuipc_result res;

    fake_rates(370, 365, 3000);
    res = run_link_times(&gpuipc_mech_memfd, 1, &nlaps);
    ck_assert_msg(res.status == GPUIPC_PASS, "%s", res.reason);
    ck_assert_uint_eq(nlaps, GPUIPC_LAP_COUNT);
    ck_assert_double_eq_tol(gpuipc_link_gbps(&res.link, GPUIPC_LINK_READ), 370, 0.1);
}
END_TEST

/* A read across the link as fast as a read of local memory: the consumer
 * fails the scenario, naming both figures, and no figure is kept. */
START_TEST(test_roles_link_no_slower_than_local_fails_the_consumer)
{
    gpuipc_result res;

    fake_rates(3000, 365, 3000);
    res = run_link(&gpuipc_mech_memfd);
    ck_assert_int_eq(res.status, GPUIPC_FAIL);
    ck_assert_msg(strstr(res.reason, "consumer write: link figures: the read across the link "
                                     "(3000.0 GB/s) is not 1.5 times slower than the read of "
                                     "GPU 1's own memory (3000.0 GB/s)") != NULL, "reason: %s",
                  res.reason);
    ck_assert_uint_eq(res.link.passes, 0);
}
END_TEST

/* A driver call that fails in the measurement fails the scenario with the
 * call named, as data too. */
START_TEST(test_roles_link_failed_call_is_named)
{
    gpuipc_result res;

    fake_rates(370, 365, 3000);
    link_fake.fail = 1;
    res = run_link(&gpuipc_mech_memfd);
    ck_assert_int_eq(res.status, GPUIPC_FAIL);
    ck_assert_msg(strstr(res.reason, "link figures: cuPointerGetAttribute: "
                                     "CUDA_ERROR_INVALID_VALUE") != NULL, "reason: %s",
                  res.reason);
    ck_assert_str_eq(res.failure.call, "cuPointerGetAttribute");
}
END_TEST

/* A consumer without CUDA cannot measure a link it is asked for. */
START_TEST(test_roles_link_without_cuda_fails)
{
    gpuipc_result res;

    memset(&link_fake, 0, sizeof(link_fake));
    res = run_link(&gpuipc_mech_memfd);
    ck_assert_int_eq(res.status, GPUIPC_FAIL);
    ck_assert_msg(strstr(res.reason, "link figures: this consumer has no CUDA support") != NULL,
                  "reason: %s", res.reason);
}
END_TEST

/* Under a read-only mapping there is no write run; the figures still hold. */
START_TEST(test_roles_link_read_only_measures_no_write)
{
    gpuipc_mech ro = gpuipc_mech_memfd;
    gpuipc_result res;

    ro.import = ro_import;
    ro.prove_read_only = ro_prove;
    read_only_broken = 0;
    fake_rates(370, 365, 3000);
    res = run_link(&ro);
    ck_assert_msg(res.status == GPUIPC_PASS, "%s", res.reason);
    ck_assert_int_eq(res.link.wrote, 0);
    ck_assert_double_eq(gpuipc_link_gbps(&res.link, GPUIPC_LINK_WRITE), 0);
    ck_assert_double_eq_tol(gpuipc_link_gbps(&res.link, GPUIPC_LINK_READ), 370, 0.1);
}
END_TEST

/* The lies, on the consumer's wire: its own verdict passed, but the figures
 * it sends do not hold. */
static void link_read_nothing(gpuipc_msg *m, void *arg)
{
    gpuipc_link_figures f;

    (void)arg;
    if (m->type != GPUIPC_MSG_TIMES || m->u.times.series != GPUIPC_SERIES_LINK)
        return;
    gpuipc_link_from_values(m->u.times.v, &f);
    f.run[GPUIPC_LINK_READ].words = 0;
    gpuipc_link_to_values(&f, m->u.times.v);
}

static void link_none(gpuipc_msg *m, void *arg)
{
    (void)arg;
    if (m->type == GPUIPC_MSG_TIMES && m->u.times.series == GPUIPC_SERIES_LINK)
        memset(m->u.times.v, 0, GPUIPC_LINK_VALUES * sizeof(uint64_t));
}

/* The producer holds the figures to the digest it read back itself: a
 * figure from kernels that read nothing fails the scenario as the
 * consumer's, and is not kept. */
START_TEST(test_roles_link_figures_that_read_nothing_fail_at_the_producer)
{
    gpuipc_result res;

    fake_rates(370, 365, 3000);
    link_fake.tamper = link_read_nothing;
    res = run_link(&gpuipc_mech_memfd);
    ck_assert_int_eq(res.status, GPUIPC_FAIL);
    ck_assert_int_eq(res.failed_side, GPUIPC_ROLE_CONSUMER);
    ck_assert_msg(strstr(res.reason, "the consumer's link figures do not hold: the read across "
                                     "the link: the kernels counted 0 words") != NULL,
                  "reason: %s", res.reason);
    ck_assert_uint_eq(res.link.passes, 0);
}
END_TEST

/* The consumer's word of where the memory lies, made unknown on the way
 * out: both ordinals out of an int's range, which decode to -1 alike. */
static void link_gpus_unknown(gpuipc_msg *m, void *arg)
{
    (void)arg;
    if (m->type != GPUIPC_MSG_TIMES || m->u.times.series != GPUIPC_SERIES_LINK)
        return;
    m->u.times.v[3] = 1ull << 32; /* the pointer's GPU */
    m->u.times.v[4] = 1ull << 33; /* the producer's GPU */
}

/* Figures that do not say where the memory lies are not taken as memory on
 * the producer's GPU: the producer fails them as the consumer's. */
START_TEST(test_roles_link_figures_with_unknown_gpus_fail_at_the_producer)
{
    gpuipc_result res;

    fake_rates(370, 365, 3000);
    link_fake.tamper = link_gpus_unknown;
    res = run_link(&gpuipc_mech_memfd);
    ck_assert_msg(res.status == GPUIPC_FAIL, "passed with unknown GPUs: %s", res.reason);
    ck_assert_int_eq(res.failed_side, GPUIPC_ROLE_CONSUMER);
    ck_assert_msg(strstr(res.reason, "the consumer's link figures do not hold") != NULL,
                  "reason: %s", res.reason);
    ck_assert_uint_eq(res.link.passes, 0);
}
END_TEST

START_TEST(test_roles_link_figures_missing_fail_at_the_producer)
{
    gpuipc_result res;

    fake_rates(370, 365, 3000);
    link_fake.tamper = link_none;
    res = run_link(&gpuipc_mech_memfd);
    ck_assert_int_eq(res.status, GPUIPC_FAIL);
    ck_assert_msg(strstr(res.reason, "the consumer's link figures do not hold: no link figures: "
                                     "nothing was measured") != NULL, "reason: %s", res.reason);
}
END_TEST

/* A scenario that does not ask for the link never gets figures. */
START_TEST(test_roles_link_not_asked_not_measured)
{
    gpuipc_result res;

    fake_rates(370, 365, 3000);
    res = run_one(&gpuipc_mech_memfd);
    ck_assert_msg(res.status == GPUIPC_PASS, "%s", res.reason);
    ck_assert_uint_eq(res.link.passes, 0);
}
END_TEST

/* A scenario that holds no buffer: a read or a write of its view must not
 * run. Outside the test suites the scenario fails, with the hole named. */
START_TEST(test_roles_no_view_op_runs_without_a_held_buffer)
{
    gpuipc_scenario sc;
    gpuipc_written w = {0, 0, 0};
    gpuipc_check k;
    gpuipc_env env;
    int skipped;

    unsetenv("GPUIPC_TEST_ABORT");
    env_for(&env, GPUIPC_ROLE_PRODUCER, NULL, NULL, TIMEOUT_NS);
    gpuipc_role_start(&sc, &env, NULL, &gpuipc_mech_memfd, "memfd");
    memset(&k, 0xff, sizeof(k));
    ck_assert_int_eq(gpuipc_role_check(&sc, GPUIPC_STEP_CHECK, &sc.buf.view, 1, &w, &k,
                                       "the consumer's bytes", ""), -1);
    ck_assert_uint_eq(k.words, 0);
    ck_assert_int_eq(sc.mine.code, GPUIPC_FAIL);
    ck_assert_msg(strstr(sc.mine.reason, "internal error: reading the buffer with no buffer "
                         "held") != NULL, "reason: %s", sc.mine.reason);
    gpuipc_role_start(&sc, &env, NULL, &gpuipc_mech_memfd, "memfd");
    ck_assert_int_eq(gpuipc_role_fill(&sc, GPUIPC_STEP_FILL, 1, &skipped), -1);
    ck_assert_msg(strstr(sc.mine.reason, "writing the pattern with no buffer held") != NULL,
                  "reason: %s", sc.mine.reason);
    close(env.log.fd);
}
END_TEST

/* Under the test suites (GPUIPC_TEST_ABORT, as check_nogpu sets it) the
 * same hole aborts the process, loudly. */
START_TEST(test_roles_a_view_op_without_a_buffer_aborts_under_the_tests)
{
    gpuipc_scenario sc;
    gpuipc_written w = {0, 0, 0};
    gpuipc_check k;
    gpuipc_env env;

    setenv("GPUIPC_TEST_ABORT", "1", 1);
    env_for(&env, GPUIPC_ROLE_CONSUMER, NULL, NULL, TIMEOUT_NS);
    gpuipc_role_start(&sc, &env, NULL, &gpuipc_mech_memfd, "memfd");
    gpuipc_role_check(&sc, GPUIPC_STEP_VERIFY, &sc.buf.view, 1, &w, &k, "the bytes", "");
}
END_TEST

Suite *roles_suite(void)
{
    Suite *s = suite_create("roles");
    TCase *session = tcase_create("session");
    TCase *death = tcase_create("peer_death");
    TCase *sab = tcase_create("sabotage");

    tcase_add_test(session, test_roles_memfd_round_trip);
    tcase_add_test(session, test_roles_a_phase_runs_two_workers_at_once);
    tcase_add_test(session, test_roles_a_phase_out_of_order_fails_the_session);
    tcase_add_test(session, test_roles_a_phase_end_names_what_the_consumer_kept);
    tcase_add_test(session, test_roles_a_phase_end_waits_a_timeout_under_a_second);
    tcase_add_test(session, test_roles_failed_alloc_does_not_desync_the_next_scenario);
    tcase_add_test(session, test_roles_consumer_refusal_does_not_desync_the_next_scenario);
    tcase_add_test(session, test_roles_consumer_verifies_the_second_view);
    tcase_add_test(session, test_roles_a_second_view_that_shares_nothing_fails);
    tcase_add_test(session, test_roles_read_only_consumer_leaves_the_bytes_unchanged);
    tcase_add_test(session, test_roles_a_write_through_a_read_only_mapping_is_caught);
    tcase_add_test(session, test_roles_link_figures_reach_the_producer);
    tcase_add_test(session, test_roles_link_figures_come_after_the_step_times);
    tcase_add_test(session, test_roles_link_no_slower_than_local_fails_the_consumer);
    tcase_add_test(session, test_roles_link_failed_call_is_named);
    tcase_add_test(session, test_roles_link_without_cuda_fails);
    tcase_add_test(session, test_roles_link_read_only_measures_no_write);
    tcase_add_test(session, test_roles_link_figures_that_read_nothing_fail_at_the_producer);
    tcase_add_test(session, test_roles_link_figures_missing_fail_at_the_producer);
    tcase_add_test(session, test_roles_link_figures_with_unknown_gpus_fail_at_the_producer);
    tcase_add_test(session, test_roles_link_not_asked_not_measured);
    tcase_add_test(session, test_roles_no_view_op_runs_without_a_held_buffer);
    tcase_add_test_raise_signal(session, test_roles_a_view_op_without_a_buffer_aborts_under_the_tests,
                                SIGABRT);
    tcase_add_loop_test(death, test_roles_producer_reports_a_consumer_that_dies, 0,
                        (int)list_deaths(GPUIPC_ROLE_CONSUMER, consumer_deaths));
    tcase_add_loop_test(death, test_roles_consumer_reports_a_producer_that_dies, 0,
                        (int)list_deaths(GPUIPC_ROLE_PRODUCER, producer_deaths));
    tcase_add_test(death, test_roles_producer_times_out_on_a_hung_consumer);
    tcase_add_test(death, test_roles_consumer_times_out_on_a_hung_producer);
    tcase_add_loop_test(sab, test_roles_sabotaged_bytes_fail_the_scenario, 0,
                        (int)(sizeof(sabotages) / sizeof(sabotages[0])));
    tcase_add_test(sab, test_roles_producer_leak_fails_the_scenario_and_names_the_fd);
    tcase_add_test(sab, test_roles_consumer_leak_fails_the_scenario_and_names_the_fd);
    suite_add_tcase(s, session);
    suite_add_tcase(s, death);
    suite_add_tcase(s, sab);
    return s;
}
