/* SPDX-License-Identifier: Apache-2.0 */
/* test_ranks.c: the parts of --ranks that need no launcher, over real
 * processes and sockets: the job's token in HELLO (a session between two
 * forked processes is refused before anything else where either side's
 * token is not the other's); the presence socket that tells a dead rank at
 * once, and a pair's rendezvous; and the records each rank reports of its
 * pairs (run/cells): encoded and decoded, every malformed or impossible
 * record refused, and a pair's verdict from both sides, where the sides
 * disagreeing, a side missing and a pair on another node each decide;
 * the records held in memory as sparse as they came (a side owns its
 * scenarios, no more), and a report refused half way keeps nothing (run
 * this case under valgrind for the leaks: docs/testing.md). The mode itself
 * runs under mpirun in tests/ranks.sh. */
#include <errno.h>
#include <malloc.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/err.h"
#include "core/procstat.h"
#include "core/random.h"
#include "core/step.h"
#include "launch/meet.h"
#include "mech/memfd.h"
#include "run/cells.h"
#include "session/consumer.h"
#include "session/env.h"
#include "session/producer.h"
#include "session/proof.h"
#include "wire/tcp.h"
#include "helpers.h"
#include "suites.h"

#define TOKEN_A "0123456789abcdef0123456789abcdef"
#define TOKEN_B "0123456789abcdef0123456789abcdee"
#define TIMEOUT_NS (5ull * 1000000000ull)

static void env_for(gpuipc_env *env, int role, const char *token, const char *sabotage)
{
    gpuipc_err e;

    th_env(env, role, "log", TIMEOUT_NS);
    env->token = token;
    ck_assert_int_eq(gpuipc_inject_parse(NULL, sabotage, &env->inject, &e), 0);
}

/* A consumer with token (and sabotage; NULL: none) in a child, over sv[1],
 * as rank 1 waiting for rank 0 where ranked; where tamper is set its wire
 * calls it on every message it sends. Its exit status and the reason its
 * session ended come back through consumer_end(). */
static pid_t consumer_child(int sv[2], int p[2], const char *token, const char *sabotage,
                            int ranked, gpuipc_wire_tamper_fn tamper)
{
    const gpuipc_mech *const mechs[] = {&gpuipc_mech_memfd};
    pid_t pid;

    ck_assert_int_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
    ck_assert_int_eq(pipe(p), 0);
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        gpuipc_session_end end;
        gpuipc_env env;
        gpuipc_wire *w;
        gpuipc_err e;
        int code;

        close(sv[0]);
        close(p[0]);
        env_for(&env, GPUIPC_ROLE_CONSUMER, token, sabotage);
        if (ranked) {
            env.rank = 1;
            env.peer_rank = 0;
        }
        if (gpuipc_wire_open(&w, sv[1], "producer", &e) < 0)
            _exit(3);
        if (tamper != NULL)
            gpuipc_wire_set_tamper(w, tamper, NULL);
        code = gpuipc_consumer_serve(&env, w, mechs, 1, &end);
        (void)!write(p[1], end.reason, strlen(end.reason));
        _exit(code);
    }
    close(sv[1]);
    close(p[1]);
    return pid;
}

static int consumer_end(pid_t pid, int p[2], char *reason, size_t len)
{
    int status;
    ssize_t n = read(p[0], reason, len - 1);

    reason[n > 0 ? n : 0] = '\0';
    close(p[0]);
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* Where set, both sides' wires of hello_between call it on every message
 * they send. */
static gpuipc_wire_tamper_fn tamper_all;

/* The consumer's facts as the producer of the last hello_between took them. */
static gpuipc_facts hello_peer_facts;

/* A session's HELLO between this process (the producer, with ptoken) and a
 * forked consumer (ctoken, and its sabotage). Returns the producer's
 * gpuipc_producer_hello result; the consumer's exit status and the reason
 * its session ended go into *cexit and creason (the child writes it to a
 * pipe). */
static int hello_between(const char *ptoken, const char *ctoken, const char *csabotage,
                         int *cexit, char *creason, size_t len, char *preason, size_t plen)
{
    int sv[2], p[2], peer = 0, rc;
    gpuipc_env env;
    gpuipc_wire *w;
    gpuipc_err e;
    pid_t pid = consumer_child(sv, p, ctoken, csabotage, 0, tamper_all);

    env_for(&env, GPUIPC_ROLE_PRODUCER, ptoken, NULL);
    ck_assert_int_eq(gpuipc_wire_open(&w, sv[0], "consumer", &e), 0);
    gpuipc_wire_set_tamper(w, tamper_all, NULL);
    rc = gpuipc_producer_hello(&env, w, 0, &peer, &e);
    snprintf(preason, plen, "%s", rc < 0 ? e.msg : "");
    hello_peer_facts = env.peer_facts;
    if (rc == 0) {
        gpuipc_msg_bye bye = {.code = GPUIPC_SKIP};
        gpuipc_status ack;

        (void)gpuipc_producer_bye(&env, w, &bye, &ack, &e);
    }
    gpuipc_wire_close(w);
    close(env.log.fd);
    *cexit = consumer_end(pid, p, creason, len);
    return rc;
}

/* Every frame either side sends, as encoded, for the token test. */
static uint8_t *frames;
static size_t *frames_len;
#define FRAMES_CAP (1u << 16)

static void record_frame(gpuipc_msg *m, void *arg)
{
    uint8_t buf[GPUIPC_WIRE_MAX_MSG];
    size_t n = gpuipc_wire_encode(m, 1, buf, sizeof(buf));

    (void)arg;
    if (n > 0 && *frames_len + n <= FRAMES_CAP) {
        memcpy(frames + *frames_len, buf, n);
        *frames_len += n;
    }
}

static int has_bytes(const uint8_t *hay, size_t n, const void *needle, size_t k)
{
    size_t i;

    for (i = 0; i + k <= n; i++)
        if (memcmp(hay + i, needle, k) == 0)
            return 1;
    return 0;
}

START_TEST(test_ranks_hello_with_the_jobs_token_passes)
{
    char creason[GPUIPC_ERR_LEN], preason[GPUIPC_ERR_LEN];
    int cexit;

    gpuipc_facts mine;
    int i;

    ck_assert_msg(hello_between(TOKEN_A, TOKEN_A, NULL, &cexit, creason, sizeof(creason),
                                preason, sizeof(preason)) == 0, "%s", preason);
    ck_assert_int_eq(cexit, GPUIPC_SKIP); /* the session's status: BYE said SKIP */
    /* The consumer's facts, from its AUTH, as they are (it is a child of this
     * process: the same namespaces, user, kernel, boot and IMEX channels).
     * Before: the producer copied them within the message's union, and
     * every fact past the first bytes was another's. */
    gpuipc_facts_gather(&mine);
    for (i = 0; i < GPUIPC_NS_COUNT; i++)
        ck_assert_uint_eq(hello_peer_facts.ns[i], mine.ns[i]);
    ck_assert_uint_eq(hello_peer_facts.uid, mine.uid);
    ck_assert_str_eq(hello_peer_facts.kernel, mine.kernel);
    ck_assert_uint_eq(hello_peer_facts.flags, mine.flags);
    ck_assert_uint_eq(hello_peer_facts.ctl_errno, mine.ctl_errno);
    ck_assert_mem_eq(hello_peer_facts.boot_id, mine.boot_id, sizeof(mine.boot_id));
    ck_assert_uint_eq(hello_peer_facts.imex_channels, mine.imex_channels);
    ck_assert_uint_eq(hello_peer_facts.imex_errno, mine.imex_errno);
}
END_TEST

/* The token never travels: in no frame of a whole HELLO exchange, both
 * ways, as its hex digits or as its 16 bytes. */
START_TEST(test_ranks_the_token_never_travels)
{
    static const uint8_t raw[16] = {0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef,
                                    0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef};
    char creason[GPUIPC_ERR_LEN], preason[GPUIPC_ERR_LEN];
    void *m = mmap(NULL, FRAMES_CAP + sizeof(size_t), PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    int cexit;

    ck_assert(m != MAP_FAILED);
    frames_len = m;
    frames = (uint8_t *)m + sizeof(size_t);
    *frames_len = 0;
    tamper_all = record_frame;
    ck_assert_msg(hello_between(TOKEN_A, TOKEN_A, NULL, &cexit, creason, sizeof(creason),
                                preason, sizeof(preason)) == 0, "%s", preason);
    tamper_all = NULL;
    /* HELLO and AUTH both ways, and BYE and BYE_ACK. */
    ck_assert_uint_gt(*frames_len, 4 * GPUIPC_WIRE_HEADER_LEN);
    ck_assert_msg(!has_bytes(frames, *frames_len, TOKEN_A, 32), "the token's hex travelled");
    ck_assert_msg(!has_bytes(frames, *frames_len, TOKEN_A, 8), "part of the token's hex "
                  "travelled");
    ck_assert_msg(!has_bytes(frames, *frames_len, raw, 8), "the token's bytes travelled");
    munmap(m, FRAMES_CAP + sizeof(size_t));
}
END_TEST

/* A producer of another job (another token) gets the consumer's nonce and
 * proof, which prove nothing to it: it refuses the consumer, which then has
 * said nothing more (no facts). */
START_TEST(test_ranks_a_producer_of_another_job_refuses_the_consumer)
{
    char creason[GPUIPC_ERR_LEN], preason[GPUIPC_ERR_LEN];
    int cexit;

    ck_assert_int_eq(hello_between(TOKEN_B, TOKEN_A, NULL, &cexit, creason, sizeof(creason),
                                   preason, sizeof(preason)), -EACCES);
    ck_assert_msg(strstr(preason, "refused the consumer") != NULL &&
                  strstr(preason, "does not prove this job's token") != NULL, "%s", preason);
    ck_assert_int_eq(cexit, GPUIPC_FAIL);
    ck_assert_msg(strstr(creason, "hello") != NULL, "consumer: %s", creason);
}
END_TEST

START_TEST(test_ranks_producer_refuses_a_consumer_with_a_wrong_token)
{
    char creason[GPUIPC_ERR_LEN], preason[GPUIPC_ERR_LEN];
    int cexit;

    /* The consumer's proof made with a token one digit off (the sabotage). */
    ck_assert_int_eq(hello_between(TOKEN_A, TOKEN_A, "consumer:wrong-token", &cexit, creason,
                                   sizeof(creason), preason, sizeof(preason)), -EACCES);
    ck_assert_msg(strstr(preason, "refused the consumer") != NULL, "%s", preason);
    ck_assert_int_eq(cexit, GPUIPC_FAIL);
}
END_TEST

/* ---- a stranger at HELLO: made up, replayed, reflected --------------------------------- */

/* The stranger's HELLO as rank 0's producer, with nonce (its own, or one
 * replayed), and what the consumer answers: its HELLO. */
static void stranger_hello(gpuipc_wire *w, const uint8_t *nonce, gpuipc_msg *answer)
{
    int fds[GPUIPC_WIRE_MAX_FDS];
    gpuipc_msg m;
    gpuipc_err e;

    memset(&m, 0, sizeof(m));
    m.type = GPUIPC_MSG_HELLO;
    m.u.hello.pid = (uint32_t)getpid();
    m.u.hello.role = GPUIPC_ROLE_PRODUCER;
    m.u.hello.rank = 0;
    m.u.hello.peer_rank = 1;
    memcpy(m.u.hello.nonce, nonce, GPUIPC_WIRE_NONCE_LEN);
    ck_assert_msg(gpuipc_wire_send(w, &m, NULL, gpuipc_clock_deadline(TIMEOUT_NS),
                                   GPUIPC_STEP_HELLO, &e) == 0, "%s", e.msg);
    ck_assert_msg(gpuipc_wire_recv(w, GPUIPC_MSG_BIT(GPUIPC_MSG_HELLO), answer, fds,
                                   gpuipc_clock_deadline(TIMEOUT_NS), GPUIPC_STEP_HELLO,
                                   &e) == 0, "%s", e.msg);
    /* The consumer's HELLO says nothing of it but a nonce and a proof. */
    ck_assert_uint_eq(answer->u.hello.facts.uid, 0);
    ck_assert_uint_eq(answer->u.hello.facts.ns[GPUIPC_NS_PID], 0);
    ck_assert_str_eq(answer->u.hello.facts.kernel, "");
}

/* Sends AUTH with mac and reads what comes back: nothing but the end of
 * the connection, for a stranger. */
static void stranger_auth(gpuipc_wire *w, const uint8_t *mac)
{
    int fds[GPUIPC_WIRE_MAX_FDS];
    gpuipc_msg m;
    gpuipc_err e;

    memset(&m, 0, sizeof(m));
    m.type = GPUIPC_MSG_AUTH;
    m.u.auth.pid = (uint32_t)getpid();
    memcpy(m.u.auth.mac, mac, GPUIPC_WIRE_MAC_LEN);
    ck_assert_msg(gpuipc_wire_send(w, &m, NULL, gpuipc_clock_deadline(TIMEOUT_NS),
                                   GPUIPC_STEP_HELLO, &e) == 0, "%s", e.msg);
    ck_assert_int_lt(gpuipc_wire_recv(w, GPUIPC_MSG_BIT(GPUIPC_MSG_AUTH), &m, fds,
                                      gpuipc_clock_deadline(TIMEOUT_NS), GPUIPC_STEP_HELLO,
                                      &e), 0);
}

/* A made-up proof (random bytes), the consumer's own proof sent back to it
 * (reflected), and a real producer's HELLO and AUTH recorded and replayed
 * to a new session: each refused by the consumer, named, and no facts of
 * its ever sent. */
START_TEST(test_ranks_a_made_up_reflected_or_replayed_hello_is_refused)
{
    static const uint8_t nonce[GPUIPC_WIRE_NONCE_LEN] = {1, 2, 3};
    uint8_t made_up[GPUIPC_WIRE_MAC_LEN], recorded_mac[GPUIPC_WIRE_MAC_LEN];
    uint8_t recorded_nonce[GPUIPC_WIRE_NONCE_LEN];
    char reason[GPUIPC_ERR_LEN];
    int sv[2], p[2], round;
    gpuipc_msg answer;
    gpuipc_env penv;
    gpuipc_wire *w;
    gpuipc_err e;
    pid_t pid;

    memset(made_up, 0x77, sizeof(made_up));
    /* A real producer's proof for a real session, recorded: the nonce it
     * sent, and the proof it made for the consumer's nonce then. */
    env_for(&penv, GPUIPC_ROLE_PRODUCER, TOKEN_A, NULL);
    penv.rank = 0;
    penv.peer_rank = 1;
    for (round = 0; round < 3; round++) {
        pid = consumer_child(sv, p, TOKEN_A, NULL, 1, NULL);
        ck_assert_int_eq(gpuipc_wire_open(&w, sv[0], "consumer", &e), 0);
        if (round == 0) {
            stranger_hello(w, nonce, &answer);
            stranger_auth(w, made_up);
        } else if (round == 1) {
            stranger_hello(w, nonce, &answer);
            stranger_auth(w, answer.u.hello.mac); /* its own proof, reflected */
        } else {
            /* Record a proof made for some consumer nonce, then replay the
             * HELLO and the proof against a consumer that picks its own. */
            memcpy(recorded_nonce, nonce, sizeof(recorded_nonce));
            ck_assert_int_eq(gpuipc_proof_make(&penv, GPUIPC_ROLE_PRODUCER, recorded_nonce,
                                               made_up, 0, 1, recorded_mac), 0);
            stranger_hello(w, recorded_nonce, &answer);
            ck_assert_msg(memcmp(answer.u.hello.nonce, made_up, GPUIPC_WIRE_NONCE_LEN) != 0,
                          "the consumer's nonce is the recorded one");
            stranger_auth(w, recorded_mac);
        }
        gpuipc_wire_close(w);
        ck_assert_int_eq(consumer_end(pid, p, reason, sizeof(reason)), GPUIPC_FAIL);
        ck_assert_msg(strstr(reason, "refused the producer") != NULL &&
                      strstr(reason, "does not prove this job's token") != NULL,
                      "round %d: %s", round, reason);
    }
    close(penv.log.fd);
}
END_TEST

/* The session's key: HMAC-SHA256(token, "gpuipc session" || nonce_p ||
 * nonce_c || p || c || flags) as RFC 2104 gives it (the value below is
 * Python's hmac module's), the same for both sides, and another for
 * another token, either nonce, either rank or the HELLO's flags. */
START_TEST(test_ranks_the_session_key_binds_token_nonces_ranks_and_flags)
{
    static const char want_hex[] =
        "e9a48afea618d156bfc924a07c642dc2bbb26a96f6ebdb85d9b7660c48444480";
    uint8_t np[GPUIPC_WIRE_NONCE_LEN], nc[GPUIPC_WIRE_NONCE_LEN];
    uint8_t key[GPUIPC_WIRE_KEY_LEN], other[GPUIPC_WIRE_KEY_LEN], want[GPUIPC_WIRE_KEY_LEN];
    gpuipc_env penv, cenv, benv;
    unsigned i;

    for (i = 0; i < GPUIPC_WIRE_NONCE_LEN; i++) {
        np[i] = (uint8_t)(1 + i);
        nc[i] = (uint8_t)(101 + i);
    }
    ck_assert_int_eq(gpuipc_random_unhex(want, want_hex, sizeof(want)), 0);
    env_for(&penv, GPUIPC_ROLE_PRODUCER, TOKEN_A, NULL);
    env_for(&cenv, GPUIPC_ROLE_CONSUMER, TOKEN_A, NULL);
    env_for(&benv, GPUIPC_ROLE_CONSUMER, TOKEN_B, NULL);
    ck_assert_int_eq(gpuipc_proof_session_key(&penv, np, nc, 3, 5, 1, key), 0);
    ck_assert_msg(memcmp(key, want, sizeof(key)) == 0, "not the key RFC 2104 gives");
    ck_assert_int_eq(gpuipc_proof_session_key(&cenv, np, nc, 3, 5, 1, other), 0);
    ck_assert_int_eq(memcmp(key, other, sizeof(key)), 0); /* both sides alike */
    ck_assert_int_eq(gpuipc_proof_session_key(&benv, np, nc, 3, 5, 1, other), 0);
    ck_assert_int_ne(memcmp(key, other, sizeof(key)), 0);
    ck_assert_int_eq(gpuipc_proof_session_key(&penv, nc, np, 3, 5, 1, other), 0);
    ck_assert_int_ne(memcmp(key, other, sizeof(key)), 0);
    np[15] ^= 1;
    ck_assert_int_eq(gpuipc_proof_session_key(&penv, np, nc, 3, 5, 1, other), 0);
    ck_assert_int_ne(memcmp(key, other, sizeof(key)), 0);
    np[15] ^= 1;
    nc[0] ^= 1;
    ck_assert_int_eq(gpuipc_proof_session_key(&penv, np, nc, 3, 5, 1, other), 0);
    ck_assert_int_ne(memcmp(key, other, sizeof(key)), 0);
    nc[0] ^= 1;
    ck_assert_int_eq(gpuipc_proof_session_key(&penv, np, nc, 5, 3, 1, other), 0);
    ck_assert_int_ne(memcmp(key, other, sizeof(key)), 0);
    ck_assert_int_eq(gpuipc_proof_session_key(&penv, np, nc, 3, 6, 1, other), 0);
    ck_assert_int_ne(memcmp(key, other, sizeof(key)), 0);
    ck_assert_int_eq(gpuipc_proof_session_key(&penv, np, nc, 3, 5, 0, other), 0);
    ck_assert_int_ne(memcmp(key, other, sizeof(key)), 0);
    close(penv.log.fd);
    close(cenv.log.fd);
    close(benv.log.fd);
}
END_TEST

/* A HELLO for another pair (rank 2's, to rank 1) is refused before the
 * consumer says anything at all. */
START_TEST(test_ranks_a_hello_for_another_pair_is_refused)
{
    static const uint8_t nonce[GPUIPC_WIRE_NONCE_LEN] = {9};
    int fds[GPUIPC_WIRE_MAX_FDS], sv[2], p[2];
    char reason[GPUIPC_ERR_LEN];
    gpuipc_wire *w;
    gpuipc_msg m;
    gpuipc_err e;
    pid_t pid = consumer_child(sv, p, TOKEN_A, NULL, 1, NULL);

    ck_assert_int_eq(gpuipc_wire_open(&w, sv[0], "consumer", &e), 0);
    memset(&m, 0, sizeof(m));
    m.type = GPUIPC_MSG_HELLO;
    m.u.hello.pid = (uint32_t)getpid();
    m.u.hello.role = GPUIPC_ROLE_PRODUCER;
    m.u.hello.rank = 2;
    m.u.hello.peer_rank = 1;
    memcpy(m.u.hello.nonce, nonce, sizeof(nonce));
    ck_assert_int_eq(gpuipc_wire_send(w, &m, NULL, gpuipc_clock_deadline(TIMEOUT_NS),
                                      GPUIPC_STEP_HELLO, &e), 0);
    ck_assert_int_lt(gpuipc_wire_recv(w, GPUIPC_MSG_BIT(GPUIPC_MSG_HELLO), &m, fds,
                                      gpuipc_clock_deadline(TIMEOUT_NS), GPUIPC_STEP_HELLO,
                                      &e), 0);
    gpuipc_wire_close(w);
    ck_assert_int_eq(consumer_end(pid, p, reason, sizeof(reason)), GPUIPC_FAIL);
    ck_assert_msg(strstr(reason, "its HELLO is for pair 2 -> 1, and this is pair 0 -> 1") !=
                  NULL, "%s", reason);
}
END_TEST

/* ---- the listener and the rendezvous ------------------------------------------------ */

/* Whether name is "@gpuipc-" and 32 lowercase hex digits. */
static int random_looking(const char *name)
{
    size_t i;

    if (strncmp(name, "@gpuipc-", 8) != 0 || strlen(name) != 8 + 32)
        return 0;
    for (i = 8; name[i] != '\0'; i++)
        if (!((name[i] >= '0' && name[i] <= '9') || (name[i] >= 'a' && name[i] <= 'f')))
            return 0;
    return 1;
}

/* Whether /proc/net/unix lists the abstract name (its '@' shown as '@'). */
static int listed(const char *name)
{
    size_t n;
    char *text = th_read_file("/proc/net/unix", &n);
    int found = text != NULL && strstr(text, name) != NULL;

    free(text);
    return found;
}

/* Each listener's name is 128 random bits, not derived from anything a
 * stranger can know: two differ, and one in use cannot be bound by another
 * process (a same-user process that reads it in /proc/net/unix cannot take
 * it). */
START_TEST(test_ranks_a_listener_name_is_random_and_cannot_be_taken)
{
    gpuipc_meet *a, *b;
    gpuipc_endpoint ep;
    gpuipc_err e;
    int fds = th_fd_count();

    ck_assert_msg(gpuipc_meet_open(&a, 2, 0, &e) == 0, "%s", e.msg);
    ck_assert_msg(gpuipc_meet_open(&b, 2, 1, &e) == 0, "%s", e.msg);
    ck_assert_msg(random_looking(gpuipc_meet_name(a)), "%s", gpuipc_meet_name(a));
    ck_assert_str_ne(gpuipc_meet_name(a), gpuipc_meet_name(b));
    ck_assert_msg(listed(gpuipc_meet_name(a)), "%s is not in /proc/net/unix: the test proves "
                  "nothing", gpuipc_meet_name(a));
    ck_assert_int_eq(gpuipc_endpoint_listen(&ep, gpuipc_meet_name(a), &e), -EADDRINUSE);
    gpuipc_meet_close(a);
    gpuipc_meet_close(b);
    gpuipc_meet_close(NULL);
    ck_assert_int_eq(th_fd_count(), fds);
}
END_TEST

/* A rank in a child (rank 1 of 2; this process is rank 0, with the
 * listener named parent): it opens its own listener (SO_PEERCRED names the
 * process that listens, so the rank itself must) and sends its name back
 * over names; then it connects as the producer of rank 0 (connect set) or
 * waits as its consumer, and writes one byte over the session's socket.
 * With die set it dies at once instead. */
static pid_t rank_child(const char *parent, int connect, int die, int names[2])
{
    pid_t ppid = getpid(), pid = fork();

    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        gpuipc_meet *m;
        gpuipc_peer cred;
        gpuipc_err e;
        int s;

        close(names[0]);
        if (die) {
            usleep(200 * 1000);
            raise(SIGKILL);
        }
        if (gpuipc_meet_open(&m, 2, 1, &e) < 0 || gpuipc_meet_know(m, 0, ppid, gpuipc_proc_start_ticks(ppid), &e) < 0)
            _exit(3);
        (void)!write(names[1], gpuipc_meet_name(m), strlen(gpuipc_meet_name(m)) + 1);
        s = connect ? gpuipc_meet_connect(m, 0, parent, "the test",
                                          gpuipc_clock_deadline(TIMEOUT_NS), &cred, &e)
                    : gpuipc_meet_accept(m, 0, "the test", gpuipc_clock_deadline(TIMEOUT_NS),
                                         &cred, &e);
        if (s < 0)
            _exit(4);
        (void)!write(s, "x", 1);
        usleep(100 * 1000);
        _exit(0);
    }
    close(names[1]);
    return pid;
}

static void read_x(int s)
{
    struct pollfd pfd = {s, POLLIN, 0};
    char c = 0;

    ck_assert_int_eq(poll(&pfd, 1, 5000), 1);
    ck_assert_int_eq(read(s, &c, 1), 1);
    ck_assert_int_eq(c, 'x');
}

/* This process is rank 0, the child rank 1: as consumer (side 0) it
 * accepts the child's connection; as producer (side 1) it connects to the
 * child's listener. */
START_TEST(test_ranks_pair_meets_either_side)
{
    int side;

    for (side = 0; side < 2; side++) {
        gpuipc_meet *me;
        gpuipc_peer cred;
        gpuipc_err e;
        pid_t child;
        char name[GPUIPC_MEET_NAME_LEN] = "";
        int s, status, names[2], fds = th_fd_count();

        ck_assert_int_eq(gpuipc_meet_open(&me, 2, 0, &e), 0);
        ck_assert_int_eq(pipe(names), 0);
        child = rank_child(gpuipc_meet_name(me), side == 0, 0, names);
        ck_assert_int_gt(read(names[0], name, sizeof(name)), 0);
        close(names[0]);
        ck_assert_int_eq(gpuipc_meet_know(me, 1, child, gpuipc_proc_start_ticks(child), &e), 0);
        s = side == 0 ? gpuipc_meet_accept(me, 1, "rank 1", gpuipc_clock_deadline(TIMEOUT_NS),
                                           &cred, &e)
                      : gpuipc_meet_connect(me, 1, name, "rank 1",
                                            gpuipc_clock_deadline(TIMEOUT_NS), &cred, &e);
        ck_assert_msg(s >= 0, "side %d: %s", side, e.msg);
        ck_assert_int_eq(cred.pid, child);
        read_x(s);
        close(s);
        ck_assert_int_eq(waitpid(child, &status, 0), child);
        ck_assert_int_eq(status, 0);
        gpuipc_meet_close(me);
        ck_assert_int_eq(th_fd_count(), fds);
    }
}
END_TEST

/* A process that is no rank (it read the name in /proc/net/unix) connects
 * first: refused at once, counted and named; a rank whose pair with this
 * one comes later (rank 2) connects early: held, and told GO only once
 * that pair comes; the rank awaited now (rank 1) is accepted in between. */
static void rank_at(const char *name, int rank, uint64_t *go_ns)
{
    struct pollfd pfd;
    gpuipc_peer p;
    gpuipc_err se;
    char buf[64];
    ssize_t n;
    int fd = gpuipc_endpoint_connect(name, -1, gpuipc_clock_deadline(TIMEOUT_NS), &p, &se);

    if (fd < 0)
        _exit(3);
    pfd.fd = fd;
    pfd.events = POLLIN;
    if (poll(&pfd, 1, 5000) != 1 || (n = read(fd, buf, sizeof(buf))) !=
        (ssize_t)strlen(GPUIPC_MEET_GO) || memcmp(buf, GPUIPC_MEET_GO, (size_t)n) != 0)
        _exit(4);
    go_ns[rank] = gpuipc_clock_ns();
    (void)!write(fd, "x", 1);
    if (poll(&pfd, 1, 5000) != 1 || read(fd, buf, 1) != 1 || buf[0] != 'y')
        _exit(5);
    _exit(0);
}

START_TEST(test_ranks_a_stranger_is_refused_and_an_early_rank_held)
{
    uint64_t *go_ns = mmap(NULL, 4 * sizeof(uint64_t), PROT_READ | PROT_WRITE,
                           MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    uint64_t second;
    gpuipc_meet *me;
    gpuipc_peer cred;
    gpuipc_err e;
    pid_t stranger, early, awaited;
    char first[256];
    int s, status, fds, sv[2], queued[2];

    ck_assert(go_ns != MAP_FAILED);
    memset(go_ns, 0, 4 * sizeof(uint64_t));
    fds = th_fd_count();
    ck_assert_int_eq(gpuipc_meet_open(&me, 3, 0, &e), 0);
    ck_assert_msg(listed(gpuipc_meet_name(me)), "not in /proc/net/unix");
    /* The stranger: connects, says so (its connection is then in the
     * listener's queue, ahead of the ranks', however slow the machine),
     * and tells the test what came of it. */
    ck_assert_int_eq(pipe(sv), 0);
    ck_assert_int_eq(pipe(queued), 0);
    stranger = fork();
    ck_assert_int_ge(stranger, 0);
    if (stranger == 0) {
        gpuipc_peer p;
        gpuipc_err se;
        char c;
        int fd = gpuipc_endpoint_connect(gpuipc_meet_name(me), -1,
                                         gpuipc_clock_deadline(TIMEOUT_NS), &p, &se);

        (void)!write(queued[1], "q", 1);
        /* Refused: the connection ends without a byte (no GO). */
        {
            struct pollfd pfd = {fd, POLLIN, 0};

            c = fd >= 0 && poll(&pfd, 1, 5000) == 1 && read(fd, &c, 1) == 0 ? 'r' : 'a';
        }
        (void)!write(sv[1], &c, 1);
        _exit(0);
    }
    close(sv[1]);
    close(queued[1]);
    {
        char q;

        ck_assert_int_eq(read(queued[0], &q, 1), 1);
        close(queued[0]);
    }
    early = fork();
    ck_assert_int_ge(early, 0);
    if (early == 0) {
        usleep(150 * 1000);
        rank_at(gpuipc_meet_name(me), 2, go_ns);
    }
    awaited = fork();
    ck_assert_int_ge(awaited, 0);
    if (awaited == 0) {
        usleep(400 * 1000);
        rank_at(gpuipc_meet_name(me), 1, go_ns);
    }
    ck_assert_int_eq(gpuipc_meet_know(me, 1, awaited, gpuipc_proc_start_ticks(awaited), &e), 0);
    ck_assert_int_eq(gpuipc_meet_know(me, 2, early, gpuipc_proc_start_ticks(early), &e), 0);
    s = gpuipc_meet_accept(me, 1, "rank 1", gpuipc_clock_deadline(TIMEOUT_NS), &cred, &e);
    ck_assert_msg(s >= 0, "%s", e.msg);
    ck_assert_int_eq(cred.pid, awaited);
    read_x(s);
    ck_assert_int_eq(write(s, "y", 1), 1);
    close(s);
    {
        char c = 0;

        ck_assert_int_eq(read(sv[0], &c, 1), 1);
        ck_assert_msg(c == 'r', "the stranger was not refused");
        close(sv[0]);
    }
    ck_assert_uint_eq(gpuipc_meet_refused(me, first, sizeof(first)), 1);
    ck_assert_msg(strstr(first, "refused a connection from pid ") != NULL &&
                  strstr(first, "no rank of this job") != NULL, "%s", first);
    /* Rank 2 came first, but heard GO only now, at its pair. */
    usleep(200 * 1000);
    ck_assert_uint_eq(go_ns[2], 0);
    second = gpuipc_clock_ns();
    s = gpuipc_meet_accept(me, 2, "rank 2", gpuipc_clock_deadline(TIMEOUT_NS), &cred, &e);
    ck_assert_msg(s >= 0, "%s", e.msg);
    ck_assert_int_eq(cred.pid, early);
    read_x(s);
    ck_assert_uint_ge(go_ns[2], second);
    ck_assert_int_eq(write(s, "y", 1), 1);
    close(s);
    ck_assert_int_eq(waitpid(stranger, &status, 0), stranger);
    ck_assert_int_eq(waitpid(awaited, &status, 0), awaited);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "rank 1: 0x%x", status);
    ck_assert_int_eq(waitpid(early, &status, 0), early);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "rank 2: 0x%x", status);
    ck_assert_uint_eq(gpuipc_meet_refused(me, first, sizeof(first)), 1);
    gpuipc_meet_close(me);
    ck_assert_int_eq(th_fd_count(), fds);
    munmap(go_ns, 4 * sizeof(uint64_t));
}
END_TEST

/* A process that only waits to be killed: a rank's pid that never comes. */
static pid_t idle_process(void)
{
    pid_t pid = fork();

    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        pause();
        _exit(0);
    }
    return pid;
}

static void end_process(pid_t pid)
{
    int status;

    kill(pid, SIGKILL);
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
}

/* The name of rank 1 (by its card) answered by another process (here: a
 * listener of this one, the card naming a child): the producer refuses
 * it, naming both pids. */
START_TEST(test_ranks_the_producer_refuses_another_process_at_the_name)
{
    gpuipc_meet *me, *impostor;
    gpuipc_peer cred;
    gpuipc_err e;
    pid_t card = idle_process();

    ck_assert_int_eq(gpuipc_meet_open(&me, 2, 0, &e), 0);
    ck_assert_int_eq(gpuipc_meet_open(&impostor, 2, 1, &e), 0);
    ck_assert_int_eq(gpuipc_meet_know(me, 1, card, gpuipc_proc_start_ticks(card), &e), 0);
    ck_assert_int_eq(gpuipc_meet_connect(me, 1, gpuipc_meet_name(impostor), "rank 1",
                                         gpuipc_clock_deadline(TIMEOUT_NS), &cred, &e),
                     -EACCES);
    ck_assert_msg(strstr(e.msg, "refused the process at rank 1's name") != NULL, "%s", e.msg);
    end_process(card);
    gpuipc_meet_close(impostor);
    gpuipc_meet_close(me);
}
END_TEST

START_TEST(test_ranks_a_dead_peer_is_named_at_once_not_at_the_deadline)
{
    int side;

    for (side = 0; side < 2; side++) {
        gpuipc_meet *me;
        gpuipc_peer cred;
        gpuipc_err e;
        uint64_t t;
        pid_t child;
        int s, status, names[2], fds = th_fd_count();

        ck_assert_int_eq(gpuipc_meet_open(&me, 2, 0, &e), 0);
        ck_assert_int_eq(pipe(names), 0);
        child = rank_child(gpuipc_meet_name(me), 0, 1, names);
        close(names[0]);
        ck_assert_int_eq(gpuipc_meet_know(me, 1, child, gpuipc_proc_start_ticks(child), &e), 0);
        usleep(50 * 1000);
        t = gpuipc_clock_ns();
        /* As the producer it connects to a name nobody listens on: what
         * ends the wait is the pidfd, not the deadline. */
        s = side == 0 ? gpuipc_meet_connect(me, 1, "@gpuipc-00000000000000000000000000000000",
                                            "rank 1", gpuipc_clock_deadline(TIMEOUT_NS), &cred,
                                            &e)
                      : gpuipc_meet_accept(me, 1, "rank 1", gpuipc_clock_deadline(TIMEOUT_NS),
                                           &cred, &e);
        ck_assert_int_eq(s, GPUIPC_MEET_GONE);
        ck_assert_msg(strstr(e.msg, "rank 1 is gone: its process (pid") != NULL, "%s", e.msg);
        ck_assert_msg(gpuipc_clock_ns() - t < TIMEOUT_NS / 2, "took %.2f s",
                      (double)(gpuipc_clock_ns() - t) / 1e9);
        ck_assert_int_eq(gpuipc_meet_ended(me, 1), 1);
        ck_assert_int_eq(waitpid(child, &status, 0), child);
        gpuipc_meet_close(me);
        ck_assert_int_eq(th_fd_count(), fds);
    }
}
END_TEST

/* A card's pid that another process has now (its start time differs: the
 * number was used again after the rank ended): the rank is taken for
 * ended at once, and a connection from that process is a stranger's,
 * refused and counted, not the rank's. */
START_TEST(test_ranks_a_pid_used_again_is_no_rank)
{
    gpuipc_meet *me;
    gpuipc_peer cred;
    gpuipc_err e;
    pid_t reused;
    char first[256];
    int names[2];

    ck_assert_int_eq(gpuipc_meet_open(&me, 2, 0, &e), 0);
    ck_assert_int_eq(pipe(names), 0);
    reused = fork();
    ck_assert_int_ge(reused, 0);
    if (reused == 0) {
        gpuipc_peer p;
        gpuipc_err se;
        int fd = gpuipc_endpoint_connect(gpuipc_meet_name(me), -1,
                                         gpuipc_clock_deadline(TIMEOUT_NS), &p, &se);

        (void)!write(names[1], fd >= 0 ? "c" : "n", 1);
        pause();
        _exit(0);
    }
    close(names[1]);
    {
        char c = 0;

        ck_assert_int_eq(read(names[0], &c, 1), 1);
        ck_assert_int_eq(c, 'c');
        close(names[0]);
    }
    ck_assert_uint_gt(gpuipc_proc_start_ticks(reused), 0);
    /* The card says rank 1 started one tick before the process that has
     * its number now, and which has connected. */
    ck_assert_int_eq(gpuipc_meet_know(me, 1, reused, gpuipc_proc_start_ticks(reused) - 1, &e),
                     0);
    ck_assert_int_eq(gpuipc_meet_ended(me, 1), 1);
    ck_assert_int_eq(gpuipc_meet_accept(me, 1, "rank 1", gpuipc_clock_deadline(TIMEOUT_NS),
                                        &cred, &e), GPUIPC_MEET_GONE);
    ck_assert_uint_eq(gpuipc_meet_refused(me, first, sizeof(first)), 1);
    ck_assert_msg(strstr(first, "no rank of this job") != NULL, "%s", first);
    end_process(reused);
    gpuipc_meet_close(me);
}
END_TEST

START_TEST(test_ranks_a_live_peer_that_never_comes_times_out_naming_it)
{
    gpuipc_meet *me;
    gpuipc_peer cred;
    gpuipc_err e;
    pid_t other = idle_process();

    ck_assert_int_eq(gpuipc_meet_open(&me, 2, 0, &e), 0);
    ck_assert_int_eq(gpuipc_meet_know(me, 1, other, gpuipc_proc_start_ticks(other), &e), 0);
    ck_assert_int_eq(gpuipc_meet_ended(me, 1), 0);
    ck_assert_int_eq(gpuipc_meet_accept(me, 1, "rank 1", gpuipc_clock_deadline(300000000ull),
                                        &cred, &e), -ETIMEDOUT);
    ck_assert_msg(strstr(e.msg, "rank 1: it is alive") != NULL, "%s", e.msg);
    end_process(other);
    gpuipc_meet_close(me);
}
END_TEST

/* Ranks of another user (as root: a child that becomes uid 65534): a
 * stranger of that uid at this rank's listener, and this rank connecting to
 * a listener of that uid, are refused in --ranks' words: neither --connect
 * nor --allow-uid, which --ranks does not take, is named. */
START_TEST(test_ranks_another_user_is_refused_in_the_modes_words)
{
    gpuipc_meet *me, *theirs;
    gpuipc_peer cred;
    gpuipc_err e;
    char first[512], name[64];
    int sv[2], fd;
    pid_t other = idle_process(), child;

    ck_assert_int_eq(gpuipc_meet_open(&me, 2, 0, &e), 0);
    ck_assert_int_eq(gpuipc_meet_know(me, 1, other, gpuipc_proc_start_ticks(other), &e), 0);
    /* The stranger: uid 65534, at this rank's listener. */
    child = fork();
    ck_assert_int_ge(child, 0);
    if (child == 0) {
        gpuipc_peer p;
        gpuipc_err ce;

        if (setresgid(65534, 65534, 65534) < 0 || setresuid(65534, 65534, 65534) < 0)
            _exit(3);
        fd = gpuipc_endpoint_connect(gpuipc_meet_name(me), -1,
                                     gpuipc_clock_deadline(TIMEOUT_NS), &p, &ce);
        _exit(fd >= 0 ? 0 : 4);
    }
    /* Its connection is in the listener's queue before the accept starts
     * (the kernel keeps a connection whose process has ended, with its
     * credentials), so the accept's short wait sees it however slow the
     * machine is. */
    ck_assert_int_eq(waitpid(child, NULL, 0), child);
    ck_assert_int_eq(gpuipc_meet_accept(me, 1, "rank 1", gpuipc_clock_deadline(500000000ull),
                                        &cred, &e), -ETIMEDOUT);
    ck_assert_uint_eq(gpuipc_meet_refused(me, first, sizeof(first)), 1);
    ck_assert_msg(strstr(first, "uid 65534") != NULL && strstr(first, "--allow-uid") == NULL &&
                  strstr(first, "--connect") == NULL, "%s", first);
    end_process(other);
    gpuipc_meet_close(me);
    /* This rank connecting to a listener of uid 65534 (rank 1's), whose
     * process lives until the test closes its end of the socket pair (a
     * pipe's write end would not wait: read(2) on it fails at once, and the
     * rank would end before the connect looks at it). */
    ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    child = fork();
    ck_assert_int_ge(child, 0);
    if (child == 0) {
        char c;

        close(sv[0]);
        if (setresgid(65534, 65534, 65534) < 0 || setresuid(65534, 65534, 65534) < 0 ||
            gpuipc_meet_open(&theirs, 2, 1, &e) < 0)
            _exit(3);
        (void)!write(sv[1], gpuipc_meet_name(theirs), strlen(gpuipc_meet_name(theirs)) + 1);
        (void)!read(sv[1], &c, 1); /* until the test closes its end */
        _exit(0);
    }
    close(sv[1]);
    ck_assert_int_gt(read(sv[0], name, sizeof(name)), 0);
    ck_assert_int_eq(gpuipc_meet_open(&me, 2, 0, &e), 0);
    ck_assert_int_eq(gpuipc_meet_know(me, 1, child, gpuipc_proc_start_ticks(child), &e), 0);
    fd = gpuipc_meet_connect(me, 1, name, "rank 1", gpuipc_clock_deadline(TIMEOUT_NS), &cred, &e);
    ck_assert_int_lt(fd, 0);
    ck_assert_msg(strstr(e.msg, "uid 65534") != NULL && strstr(e.msg, "--allow-uid") == NULL &&
                  strstr(e.msg, "--connect") == NULL, "%s", e.msg);
    close(sv[0]);
    ck_assert_int_eq(waitpid(child, NULL, 0), child);
    gpuipc_meet_close(me);
}
END_TEST

/* ---- the records and the verdict ------------------------------------------------------ */

/* A producer's record of passed + failed memfd scenarios into s (what s
 * held freed first). */
static void producer_side(gpuipc_cell_side *s, unsigned passed, unsigned failed)
{
    unsigned i;

    gpuipc_cell_side_free(s);
    s->code = failed ? GPUIPC_FAIL : GPUIPC_PASS;
    s->met = 1;
    ck_assert_int_eq(gpuipc_cell_side_reserve(s, passed + failed), 0);
    for (i = 0; i < s->n; i++) {
        snprintf(s->s[i].mech, sizeof(s->s[i].mech), "memfd");
        s->s[i].status = i < passed ? GPUIPC_PASS : GPUIPC_FAIL;
        s->s[i].side = i < passed ? 0 : 2;
        s->s[i].step = i < passed ? 0 : 7;
        snprintf(s->s[i].reason, sizeof(s->s[i].reason), "reason\twith a tab %u", i);
        snprintf(s->s[i].what, sizeof(s->s[i].what), "%s", i < passed ? "" : "x\ty");
        snprintf(s->s[i].fix, sizeof(s->s[i].fix), "%s", i < passed ? "" : "do z");
        snprintf(s->s[i].call, sizeof(s->s[i].call), "%s", i < passed ? "" : "cuMemMap");
        s->s[i].errnum = i < passed ? 0 : EPERM;
        s->s[i].cu = i < passed ? 0 : 801;
    }
}

/* A consumer's record into s (what s held freed first). */
static void consumer_side(gpuipc_cell_side *s, unsigned passed, unsigned failed, int own)
{
    gpuipc_cell_side_free(s);
    s->code = failed || own ? GPUIPC_FAIL : GPUIPC_PASS;
    s->met = 1;
    s->said_bye = 1;
    s->passed = passed;
    s->failed = failed;
    s->own = own ? GPUIPC_FAIL : GPUIPC_PASS;
    snprintf(s->note, sizeof(s->note), "%s", own ? "verify: 3 mismatches\nin the bytes" : "");
}

/* cell with neither side's record (their scenarios freed), and no pair. */
#define empty_cell(cell) (gpuipc_cells_free((cell), 1), (cell)->p = (cell)->c = 0)

/* Frees cells (size x size) and their scenarios. */
static void free_cells(gpuipc_cell *cells, uint32_t size)
{
    gpuipc_cells_free(cells, size);
    free(cells);
}

static const char *const who3[] = {"rank 0 (n, GPU 0)", "rank 1 (n, GPU 0)",
                                   "rank 2 (n, GPU 0)"};

START_TEST(test_ranks_records_round_trip)
{
    gpuipc_cell_side ps = {0}, cs = {0};
    gpuipc_cell *cells = calloc(9, sizeof(*cells));
    char *buf = NULL, *buf1 = NULL;
    size_t len = 0, cap = 0, len1 = 0, cap1 = 0;
    gpuipc_err e;

    producer_side(&ps, 2, 1);
    ps.gone = 1;
    consumer_side(&cs, 3, 0, 1);
    ck_assert_int_eq(gpuipc_cells_encode(&buf, &len, &cap, 1, 2, 0, &ps), 0);
    ck_assert_int_eq(gpuipc_cells_encode(&buf1, &len1, &cap1, 2, 2, 1, &cs), 0);
    ck_assert_msg(gpuipc_cells_decode(buf, 2, 3, cells, &e) == 0, "%s: %s", e.msg, buf);
    ck_assert_msg(gpuipc_cells_decode(buf1, 1, 3, cells, &e) == 0, "%s: %s", e.msg, buf1);
    ck_assert(cells[2 * 3 + 0].prod.have);
    ck_assert_uint_eq(cells[2 * 3 + 0].prod.n, 3);
    ck_assert_int_eq(cells[2 * 3 + 0].prod.s[2].status, GPUIPC_FAIL);
    ck_assert_uint_eq(cells[2 * 3 + 0].prod.s[2].step, 7);
    ck_assert_str_eq(cells[2 * 3 + 0].prod.s[0].reason, "reason with a tab 0");
    /* The failure and its cause come back as fields, not a line. */
    ck_assert_str_eq(cells[2 * 3 + 0].prod.s[2].what, "x y");
    ck_assert_str_eq(cells[2 * 3 + 0].prod.s[2].fix, "do z");
    ck_assert_str_eq(cells[2 * 3 + 0].prod.s[2].call, "cuMemMap");
    ck_assert_int_eq(cells[2 * 3 + 0].prod.s[2].errnum, EPERM);
    ck_assert_int_eq(cells[2 * 3 + 0].prod.s[2].cu, 801);
    ck_assert_str_eq(cells[2 * 3 + 0].prod.s[0].what, "");
    ck_assert_str_eq(cells[2 * 3 + 0].prod.s[0].call, "");
    ck_assert_int_eq(cells[2 * 3 + 0].prod.gone, 1);
    ck_assert_int_eq(cells[2 * 3 + 1].cons.gone, 0);
    ck_assert(cells[2 * 3 + 1].cons.have);
    ck_assert_int_eq(cells[2 * 3 + 1].cons.own, GPUIPC_FAIL);
    ck_assert_str_eq(cells[2 * 3 + 1].cons.note, "verify: 3 mismatches in the bytes");
    free(buf);
    free(buf1);
    gpuipc_cell_side_free(&ps);
    gpuipc_cell_side_free(&cs);
    free_cells(cells, 3);
}
END_TEST

START_TEST(test_ranks_records_that_lie_are_refused)
{
    /* Each as rank 1 of 3 would send it; each must be refused whole. */
    static const char *const bad[] = {
        "R 1 0 2 0 1 0 0 0 0 0 0 1 0 0\tnot its pair\n",         /* producer of 0 -> 2 */
        "R 2 0 2 0 1 0 0 0 0 0 0 1 0 0\tnot its pair\n",         /* consumer of 0 -> 2 */
        "R 1 1 3 0 1 0 0 0 0 0 0 1 0 0\tno rank 3\n",            /* out of range */
        "R 1 1 1 0 1 0 0 0 0 0 0 1 0 0\tto itself\n",
        "R 1 1 2 5 1 0 0 0 0 0 0 1 0 0\tno such status\n",
        "R 1 1 2 0 1 0 0 0 0 0 0 1 0 1\tone scenario promised\n", /* its S line missing */
        "R 1 1 2 0 1 0 0 0 0 0 0 1 0 1\tbad mech\nS 0 0 0 0 0 Memfd\t\t\t\t\n",
        "R 1 1 2 0 1 0 0 0 0 0 0 1 0 1\tbad status\nS 2 0 0 0 0 memfd\t\t\t\t\n",
        "R 1 1 2 0 1 0 0 0 0 0 0 1 0 1\tbad call\nS 1 2 7 1 0 memfd\tcu Mem\t\t\t\n",
        "R 1 1 2 0 1 0 0 0 0 0 0 1 0 1\tbad errno\nS 1 2 7 -1 0 memfd\t\t\t\t\n",
        "R 1 1 2 0 1 0 0 0 0 0 0 1 0 1\tbad CUresult\nS 1 2 7 0 -5 memfd\t\t\t\t\n",
        "R 1 1 2 0 1 0 0 0 0 0 0 1 0 1\tno fix field\nS 1 2 7 0 0 memfd\t\t\tcause\n",
        "R 1 1 2 0 1 0 0 0 0 0 0 1 0 1\tthe old form\nS 1 2 7 memfd\treason\tcause\n",
        "R 1 1 2 0 1 0 0 0 0 0 0 1 0 0\tonce\nR 1 1 2 0 1 0 0 0 0 0 0 1 0 0\ttwice\n",
        "R 2 0 1 0 1 1 0 0 0 0 0 1 0 3\ta consumer with scenarios\n",
        "R 1 1 2 0 1 0 0 0 0 0 0 1 0 0\tno newline",
        "R 1 1 2 0 1 0 0 0 0 0 0 4 0 0\tno such weight\n",
        "R 1 1 2 0 1 0 0 0 0 0 0 1 4 0\tno such blame\n",
        "R 1 1 2 0 1 0 0 0 0 0 0 0 1 0 0\tan extra field\n",
        "X nothing\n",
        "R 1 1 2 0 1 0 99999999999999999999 0 0 0 0 1 0 0\toverflow\n",
    };
    gpuipc_cell *cells = calloc(9, sizeof(*cells));
    char big[2 * GPUIPC_CELL_TEXT_LEN];
    gpuipc_err e;
    size_t i;

    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        memset(cells, 0, 9 * sizeof(*cells));
        ck_assert_msg(gpuipc_cells_decode(bad[i], 1, 3, cells, &e) == -EPROTO,
                      "case %zu accepted: %s", i, bad[i]);
        ck_assert_msg(strstr(e.msg, "rank 1's results") != NULL, "%s", e.msg);
    }
    /* A scenario in the form of an older build: said as maybe that. */
    memset(cells, 0, 9 * sizeof(*cells));
    ck_assert_int_eq(gpuipc_cells_decode("R 1 1 2 0 1 0 0 0 0 0 0 1 0 1\told\n"
                                         "S 1 2 7 memfd\treason\tcause: x\n", 1, 3, cells, &e),
                     -EPROTO);
    ck_assert_msg(strstr(e.msg, "line 2: a bad scenario (does every rank run the same build")
                  != NULL, "%s", e.msg);
    /* A note longer than a record carries. */
    memset(cells, 0, 9 * sizeof(*cells));
    snprintf(big, sizeof(big), "R 1 1 2 0 1 0 0 0 0 0 0 1 0 0\t%0*d\n", GPUIPC_CELL_TEXT_LEN, 0);
    ck_assert_int_eq(gpuipc_cells_decode(big, 1, 3, cells, &e), -EPROTO);
    /* The empty report is no lie: nothing to take. */
    ck_assert_int_eq(gpuipc_cells_decode("", 1, 3, cells, &e), 0);
    free_cells(cells, 3);
}
END_TEST

/* A pair with no session: the side whose note says more leads (a rank's
 * own state, or a refusal, before the other's timeout waiting for it),
 * and the weight travels in the record. */
START_TEST(test_ranks_the_more_specific_side_leads)
{
    gpuipc_cell cell = {0};
    char why[GPUIPC_ERR_LEN], *buf = NULL;
    size_t len = 0, cap = 0;
    gpuipc_cell *cells = calloc(9, sizeof(*cells));
    gpuipc_err e;

    empty_cell(&cell);
    cell.p = 0;
    cell.c = 1;
    cell.prod.have = cell.cons.have = 1;
    cell.prod.code = cell.cons.code = GPUIPC_FAIL;
    cell.prod.weight = GPUIPC_CELL_VAGUE;
    snprintf(cell.prod.note, sizeof(cell.prod.note), "hello: timed out connecting to rank 1");
    cell.cons.weight = GPUIPC_CELL_STUCK;
    snprintf(cell.cons.note, sizeof(cell.cons.note), "not reached: rank 1 was at import in "
             "cuMemImportFromShareableHandle");
    ck_assert_int_eq(gpuipc_cell_verdict(&cell, who3, NULL, 0, why, sizeof(why), NULL, NULL,
                                         NULL), GPUIPC_FAIL);
    ck_assert_str_eq(why, "not reached: rank 1 was at import in cuMemImportFromShareableHandle; "
                          "the producer: hello: timed out connecting to rank 1");
    /* Of equal weight, the producer's first, as before. */
    cell.cons.weight = GPUIPC_CELL_VAGUE;
    gpuipc_cell_verdict(&cell, who3, NULL, 0, why, sizeof(why), NULL, NULL, NULL);
    ck_assert_str_eq(why, "hello: timed out connecting to rank 1; the consumer: not reached: "
                          "rank 1 was at import in cuMemImportFromShareableHandle");
    /* A refusal at HELLO outweighs the producer's loss of its peer. */
    cell.prod.weight = GPUIPC_CELL_PLAIN;
    cell.cons.weight = GPUIPC_CELL_SURE;
    gpuipc_cell_verdict(&cell, who3, NULL, 0, why, sizeof(why), NULL, NULL, NULL);
    ck_assert_msg(strncmp(why, "not reached: rank 1", 19) == 0, "%s", why);
    /* The weight comes back from the record as it went. */
    ck_assert_int_eq(gpuipc_cells_encode(&buf, &len, &cap, 2, 0, 1, &cell.cons), 0);
    ck_assert_msg(gpuipc_cells_decode(buf, 1, 3, cells, &e) == 0, "%s", e.msg);
    ck_assert_int_eq(cells[0 * 3 + 1].cons.weight, GPUIPC_CELL_SURE);
    free(buf);
    free_cells(cells, 3);
}
END_TEST

/* Rank 0's words for a run of 3 ranks: the pairs that are not proven, each
 * scenario that did not pass with its cause marked, lines alike said once
 * with the other pairs named, each cause once (the same cause of two pairs
 * is said once), and the counts. */
START_TEST(test_ranks_judge_says_each_cause_once)
{
    gpuipc_cell *cells = calloc(9, sizeof(*cells));
    gpuipc_cells_tally t;
    char *text = NULL;
    size_t len = 0, i;
    FILE *out = open_memstream(&text, &len);
    const char *at;
    int n = 0;

    ck_assert_ptr_nonnull(cells);
    ck_assert_ptr_nonnull(out);
    for (i = 0; i < 9; i++) {
        if (i / 3 == i % 3)
            continue;
        producer_side(&cells[i].prod, 2, 0);
        cells[i].prod.have = 1;
        consumer_side(&cells[i].cons, 2, 0, 0);
        cells[i].cons.have = 1;
    }
    /* 0 -> 1 and 2 -> 0: a scenario failed, for one cause; 1 -> 2: the
     * consumer never reported. */
    producer_side(&cells[0 * 3 + 1].prod, 1, 1);
    cells[0 * 3 + 1].prod.have = 1;
    consumer_side(&cells[0 * 3 + 1].cons, 1, 1, 0);
    cells[0 * 3 + 1].cons.have = 1;
    producer_side(&cells[2 * 3 + 0].prod, 1, 1);
    cells[2 * 3 + 0].prod.have = 1;
    consumer_side(&cells[2 * 3 + 0].cons, 1, 1, 0);
    cells[2 * 3 + 0].cons.have = 1;
    cells[1 * 3 + 2].cons.have = 0;
    ck_assert_int_eq(gpuipc_cells_judge(cells, 3, who3, NULL, 0, NULL, out, &t), 0);
    fclose(out);
    ck_assert_uint_eq(t.proven, 3);
    ck_assert_uint_eq(t.failed, 3);
    ck_assert_uint_eq(t.skipped, 0);
    /* The two alike said once, the second pair named below the first. */
    ck_assert_msg(strstr(text, "FAIL 0 -> 1 memfd: reason\twith a tab 1 [cause below]\n"
                               "  and 1 more alike: 2 -> 0; ranks 0, 1, 2\n") &&
                  strstr(text, "FAIL 2 -> 0 memfd") == NULL &&
                  strstr(text, "FAIL 1 -> 2: ") != NULL, "%s", text);
    for (at = text; (at = strstr(at, "  cause: x")) != NULL; at++)
        n++;
    ck_assert_msg(n == 1, "the cause said %d times:\n%s", n, text);
    ck_assert_msg(strstr(text, "  cause: x\ty; fix: do z\n") != NULL, "%s", text);
    free(text);
    free_cells(cells, 3);
}
END_TEST

/* Two pairs whose causes differ only by their figures (the kernel log's
 * time of an Xid line, as each producer read it): said once, "alike but
 * for their figures", and one cause line; a cause with other words is
 * another line. */
START_TEST(test_ranks_judge_groups_causes_alike_but_for_figures)
{
    gpuipc_cell *cells = calloc(9, sizeof(*cells));
    gpuipc_cells_tally t;
    char *text = NULL;
    size_t len = 0, i;
    FILE *out = open_memstream(&text, &len);
    const char *at;
    int n = 0;

    ck_assert_ptr_nonnull(cells);
    for (i = 0; i < 9; i++) {
        if (i / 3 == i % 3)
            continue;
        producer_side(&cells[i].prod, 1, 0);
        cells[i].prod.have = 1;
        consumer_side(&cells[i].cons, 1, 0, 0);
        cells[i].cons.have = 1;
    }
    for (i = 0; i < 3; i++) {
        size_t k = (size_t[]){0 * 3 + 1, 1 * 3 + 2, 2 * 3 + 0}[i];

        producer_side(&cells[k].prod, 1, 1);
        cells[k].prod.have = 1;
        consumer_side(&cells[k].cons, 1, 1, 0);
        cells[k].cons.have = 1;
    }
    snprintf(cells[0 * 3 + 1].prod.s[1].what, GPUIPC_CELL_TEXT_LEN,
             "rule; kernel log since the run began: [+0.412 s] Xid 79");
    snprintf(cells[2 * 3 + 0].prod.s[1].what, GPUIPC_CELL_TEXT_LEN,
             "rule; kernel log since the run began: [+1.907 s] Xid 79");
    snprintf(cells[1 * 3 + 2].prod.s[1].what, GPUIPC_CELL_TEXT_LEN, "another rule");
    ck_assert_int_eq(gpuipc_cells_judge(cells, 3, who3, NULL, 0, NULL, out, &t), 0);
    fclose(out);
    ck_assert_uint_eq(t.failed, 3);
    ck_assert_msg(strstr(text, "FAIL 0 -> 1 memfd: reason\twith a tab 1 [cause below]\n"
                               "  and 1 more alike but for their figures: 2 -> 0; ranks 0, 1, "
                               "2\n") != NULL, "%s", text);
    ck_assert_msg(strstr(text, "FAIL 1 -> 2 memfd: ") != NULL, "%s", text);
    for (at = text; (at = strstr(at, "  cause: rule;")) != NULL; at++)
        n++;
    ck_assert_msg(n == 1, "the cause said %d times:\n%s", n, text);
    ck_assert_msg(strstr(text, "  cause: another rule; fix: ") != NULL, "%s", text);
    free(text);
    free_cells(cells, 3);
}
END_TEST

/* Review: the figures that make causes alike are a time or a count, not
 * an Xid line's own: two pairs whose kernel log says Xid 43 (an
 * application's channel stopped) and Xid 79 (the GPU fell off the bus),
 * their lines cut to fit a cause (producer_end's cause_add) where only the
 * code and the pid are left, have two causes, each said, not the first
 * said for both. */
START_TEST(test_ranks_judge_keeps_apart_causes_of_other_xid_codes)
{
    gpuipc_cell *cells = calloc(9, sizeof(*cells));
    gpuipc_cells_tally t;
    char *text = NULL;
    size_t len = 0, i;
    FILE *out = open_memstream(&text, &len);

    ck_assert_ptr_nonnull(cells);
    for (i = 0; i < 9; i++) {
        if (i / 3 == i % 3)
            continue;
        producer_side(&cells[i].prod, 1, i == 0 * 3 + 1 || i == 2 * 3 + 0);
        cells[i].prod.have = 1;
        consumer_side(&cells[i].cons, 1, i == 0 * 3 + 1 || i == 2 * 3 + 0, 0);
        cells[i].cons.have = 1;
    }
    snprintf(cells[0 * 3 + 1].prod.s[1].what, GPUIPC_CELL_TEXT_LEN,
             "rule; kernel log since the run began: [+0.412 s] NVRM: Xid (PCI:0000:10:00): 43, "
             "pid=2, name=gpuipc_test, ...");
    snprintf(cells[2 * 3 + 0].prod.s[1].what, GPUIPC_CELL_TEXT_LEN,
             "rule; kernel log since the run began: [+1.907 s] NVRM: Xid (PCI:0000:10:00): 79, "
             "pid=5, name=gpuipc_test, ...");
    ck_assert_int_eq(gpuipc_cells_judge(cells, 3, who3, NULL, 0, NULL, out, &t), 0);
    fclose(out);
    ck_assert_uint_eq(t.failed, 2);
    ck_assert_msg(strstr(text, "): 43, pid=2") != NULL, "%s", text);
    ck_assert_msg(strstr(text, "): 79, pid=5") != NULL, "Xid 79 hidden behind Xid 43:\n%s",
                  text);
    ck_assert_msg(strstr(text, "alike but for their figures") == NULL, "%s", text);
    free(text);
    free_cells(cells, 3);
}
END_TEST

/* Pair 0 -> 2 of test_ranks_judge_groups_only_what_is_alike: its ranks
 * are on two nodes. */
static int apart_02(uint32_t p, uint32_t c, const char *mech, void *arg)
{
    (void)arg;
    return p == 0 && c == 2 && strcmp(mech, "memfd") == 0;
}

/* Lines alike are grouped by data and text, never across what differs in
 * meaning: 4 ranks, every pair with one scenario that did not pass. Pairs
 * 0 -> 1 and 2 -> 3 fail alike but for a figure ("fd 13" and "fd 17"); 1
 * -> 0 fails with another text; 1 -> 2 is skipped with the same text as 0
 * -> 1's; 3 -> 2 fails with the same text on another mechanism. Said: the
 * first with "and 1 more alike but for their figures: 2 -> 3", nodes and
 * GPUs from where, and every other line on its own. Pair 0 -> 2, whose
 * ranks are apart (where's left_out), has its scenario left out by the plan
 * (skipped on no side): counted, not said again. */
START_TEST(test_ranks_judge_groups_only_what_is_alike)
{
    static const char *const who4[] = {"rank 0 (a)", "rank 1 (a)", "rank 2 (b)", "rank 3 (b)"};
    static const char *const node4[] = {"a", "a", "b", "b"};
    static const char *const gpu4[] = {"a:0", "a:1", "b:0", "b:1"};
    const gpuipc_cells_where where = {node4, gpu4, apart_02, NULL};
    gpuipc_cell *cells = calloc(16, sizeof(*cells));
    gpuipc_cells_tally t;
    char *text = NULL;
    size_t len = 0, i;
    FILE *out = open_memstream(&text, &len);
    const struct {
        int cell, status;
        const char *mech, *reason;
    } lines[] = {
        {0 * 4 + 1, GPUIPC_FAIL, "memfd", "verify: fd 13 leaked"},
        {2 * 4 + 3, GPUIPC_FAIL, "memfd", "verify: fd 17 leaked"},
        {1 * 4 + 0, GPUIPC_FAIL, "memfd", "import: refused"},
        {1 * 4 + 2, GPUIPC_SKIP, "memfd", "verify: fd 13 leaked"},
        {3 * 4 + 2, GPUIPC_FAIL, "memfd-pidfd", "verify: fd 13 leaked"},
        {0 * 4 + 2, GPUIPC_SKIP, "memfd", "not run: on two nodes"},
    };

    ck_assert_ptr_nonnull(cells);
    for (i = 0; i < 16; i++) {
        if (i / 4 == i % 4)
            continue;
        producer_side(&cells[i].prod, 1, 0);
        cells[i].prod.have = 1;
        consumer_side(&cells[i].cons, 1, 0, 0);
        cells[i].cons.have = 1;
    }
    for (i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
        gpuipc_cell *c = &cells[lines[i].cell];
        gpuipc_cell_scenario *sc = &c->prod.s[0];

        sc->status = lines[i].status;
        sc->side = lines[i].cell == 0 * 4 + 2 ? 0 : 2;
        snprintf(sc->mech, sizeof(sc->mech), "%s", lines[i].mech);
        snprintf(sc->reason, sizeof(sc->reason), "%s", lines[i].reason);
        sc->what[0] = sc->fix[0] = '\0';
        c->prod.code = lines[i].status;
        consumer_side(&c->cons, 0, lines[i].status == GPUIPC_FAIL, 0);
        c->cons.have = 1;
        if (lines[i].status == GPUIPC_SKIP && lines[i].cell != 0 * 4 + 2)
            c->cons.skipped = 1;
    }
    ck_assert_int_eq(gpuipc_cells_judge(cells, 4, who4, NULL, 0, &where, out, &t), 0);
    fclose(out);
    ck_assert_uint_eq(t.failed, 4);
    ck_assert_uint_eq(t.skipped, 2);
    ck_assert_msg(strstr(text, "0 -> 2") == NULL, "%s", text);
    ck_assert_msg(strstr(text, "FAIL 0 -> 1 memfd: verify: fd 13 leaked\n"
                               "  and 1 more alike but for their figures: 2 -> 3; ranks 0, 1, "
                               "2, 3; nodes a, b; GPUs a:0, a:1, b:0, b:1\n") != NULL, "%s", text);
    ck_assert_msg(strstr(text, "FAIL 1 -> 0 memfd: import: refused\n") != NULL, "%s", text);
    ck_assert_msg(strstr(text, "SKIP 1 -> 2 memfd: verify: fd 13 leaked\n") != NULL, "%s", text);
    ck_assert_msg(strstr(text, "FAIL 3 -> 2 memfd-pidfd: verify: fd 13 leaked\n") != NULL, "%s",
                  text);
    ck_assert_msg(strstr(text, "FAIL 2 -> 3") == NULL, "%s", text);
    free(text);
    free_cells(cells, 4);
}
END_TEST

/* Review: a pair failed as a whole because the consumer's side failed
 * (its verify, in memfd, with no cause) says no cause borrowed from another
 * scenario that failed on the producer's side (fabric's allocation, with
 * its own cause): "[cause below]" would then explain the wrong failure,
 * and --brief's cause with it. */
START_TEST(test_ranks_judge_gives_a_whole_pair_no_other_scenarios_cause)
{
    gpuipc_cell *cells = calloc(4, sizeof(*cells));
    gpuipc_cell *c01;
    gpuipc_cells_tally t;
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);

    ck_assert_ptr_nonnull(cells);
    producer_side(&cells[2].prod, 1, 0); /* 1 -> 0: proven */
    cells[2].prod.have = 1;
    consumer_side(&cells[2].cons, 1, 0, 0);
    cells[2].cons.have = 1;
    c01 = &cells[1];
    producer_side(&c01->prod, 0, 2);
    c01->prod.have = 1;
    /* Its first: fabric, failed on the producer's side, with a cause. */
    snprintf(c01->prod.s[0].mech, sizeof(c01->prod.s[0].mech), "fabric");
    c01->prod.s[0].side = GPUIPC_ROLE_PRODUCER;
    snprintf(c01->prod.s[0].what, sizeof(c01->prod.s[0].what), "the producer may open no "
             "IMEX channel");
    snprintf(c01->prod.s[0].fix, sizeof(c01->prod.s[0].fix), "give it one");
    /* Its second: memfd, failed at the consumer's verify, no cause. */
    c01->prod.s[1].side = GPUIPC_ROLE_CONSUMER;
    c01->prod.s[1].what[0] = c01->prod.s[1].fix[0] = '\0';
    consumer_side(&c01->cons, 0, 2, 1); /* its note: "verify: 3 mismatches ..." */
    c01->cons.have = 1;
    ck_assert_int_eq(gpuipc_cells_judge(cells, 2, who3, NULL, 0, NULL, out, &t), 0);
    fclose(out);
    ck_assert_uint_eq(t.failed, 1);
    ck_assert_msg(strstr(text, "verify: 3 mismatches") != NULL &&
                  strstr(text, "[cause below]") == NULL && strstr(t.cause, "IMEX") == NULL,
                  "the consumer's verify given fabric's cause: %s(--brief: %s)", text, t.cause);
    free(text);
    free_cells(cells, 2);
}
END_TEST

/* A scenario the plan failed without running it (on no side: a GPU's
 * fabric not ready between two nodes, or --require fabric across two
 * NVLink domains) is not in the consumer's BYE counts: the pair fails for
 * that scenario, and the ranks do not "disagree". */
START_TEST(test_ranks_a_scenario_the_plan_failed_is_the_pairs_failure)
{
    gpuipc_cell cell = {0};
    char why[GPUIPC_ERR_LEN];
    unsigned p = 0, f = 0, s = 0;

    empty_cell(&cell);
    cell.c = 1;
    producer_side(&cell.prod, 1, 1);
    cell.prod.s[1].side = 0;
    snprintf(cell.prod.s[1].reason, sizeof(cell.prod.s[1].reason), "not run: rank 1's GPU "
             "fabric is in progress");
    cell.prod.have = 1;
    consumer_side(&cell.cons, 1, 0, 0);
    cell.cons.have = 1;
    ck_assert_int_eq(gpuipc_cell_verdict(&cell, who3, NULL, 0, why, sizeof(why), &p, &f, &s),
                     GPUIPC_FAIL);
    ck_assert_msg(why[0] == '\0', "%s", why);
    ck_assert_uint_eq(f, 1);
    /* Told of it in BYE as well: they disagree (the consumer was told of a
     * failure the session did not have). */
    consumer_side(&cell.cons, 1, 1, 0);
    cell.cons.have = 1;
    ck_assert_int_eq(gpuipc_cell_verdict(&cell, who3, NULL, 0, why, sizeof(why), NULL, NULL,
                                         NULL), GPUIPC_FAIL);
    ck_assert_msg(strstr(why, "the ranks disagree") != NULL, "%s", why);
    gpuipc_cells_free(&cell, 1);
}
END_TEST

/* A pair failed as a whole (the consumer's side of the session failed)
 * whose failed scenario has a cause: its line says "[cause below]" and the
 * cause is said; two such pairs of one text but different causes (one
 * across nodes, one not) are two lines, never one. */
START_TEST(test_ranks_judge_says_a_whole_pairs_cause_and_parts_by_it)
{
    gpuipc_cell *cells = calloc(9, sizeof(*cells));
    gpuipc_cells_tally t;
    char *text = NULL;
    size_t len = 0, i;
    FILE *out = open_memstream(&text, &len);

    ck_assert_ptr_nonnull(cells);
    for (i = 0; i < 9; i++) {
        if (i / 3 == i % 3)
            continue;
        producer_side(&cells[i].prod, 1, 0);
        cells[i].prod.have = 1;
        consumer_side(&cells[i].cons, 1, 0, 0);
        cells[i].cons.have = 1;
    }
    /* 0 -> 2 and 1 -> 2: rank 2's side failed at import; 0 -> 2's scenario
     * with cause A, 1 -> 2's with none. */
    for (i = 0; i < 2; i++) {
        gpuipc_cell *c = &cells[i * 3 + 2];

        producer_side(&c->prod, 0, 1);
        c->prod.have = 1;
        if (i == 1)
            c->prod.s[0].what[0] = c->prod.s[0].fix[0] = '\0';
        consumer_side(&c->cons, 0, 1, 1);
        c->cons.have = 1;
        snprintf(c->cons.note, sizeof(c->cons.note), "fabric: import: cuMemSetAccess");
    }
    ck_assert_int_eq(gpuipc_cells_judge(cells, 3, who3, NULL, 0, NULL, out, &t), 0);
    fclose(out);
    ck_assert_uint_eq(t.failed, 2);
    ck_assert_msg(strstr(text, "FAIL 0 -> 2: rank 2 (n, GPU 0)'s side of the session failed: "
                               "fabric: import: cuMemSetAccess [cause below]\n") != NULL &&
                  strstr(text, "FAIL 1 -> 2: rank 2 (n, GPU 0)'s side of the session failed: "
                               "fabric: import: cuMemSetAccess\n") != NULL &&
                  strstr(text, "more alike") == NULL &&
                  strstr(text, "  cause: x\ty; fix: do z\n") != NULL, "%s", text);
    ck_assert_msg(strstr(t.cause, "cause: x\ty") != NULL, "%s", t.cause);
    free(text);
    free_cells(cells, 3);
}
END_TEST

START_TEST(test_ranks_a_pair_is_proven_only_where_both_sides_agree)
{
    gpuipc_cell cell = {0};
    char why[GPUIPC_ERR_LEN];
    unsigned p = 0, f = 0, s = 0;

    /* Both agree: proven. */
    empty_cell(&cell);
    cell.p = 0;
    cell.c = 1;
    producer_side(&cell.prod, 2, 0);
    cell.prod.have = 1;
    consumer_side(&cell.cons, 2, 0, 0);
    cell.cons.have = 1;
    ck_assert_int_eq(gpuipc_cell_verdict(&cell, who3, NULL, 0, why, sizeof(why), &p, &f, &s),
                     GPUIPC_PASS);
    ck_assert_str_eq(why, "");
    ck_assert_uint_eq(p, 2);
    /* The consumer was told other counts than the producer's record. */
    cell.cons.passed = 1;
    ck_assert_int_eq(gpuipc_cell_verdict(&cell, who3, NULL, 0, why, sizeof(why), NULL, NULL, NULL),
                     GPUIPC_FAIL);
    ck_assert_msg(strstr(why, "the ranks disagree") != NULL, "%s", why);
    /* The consumer's own checks failed though the producer says pass. */
    consumer_side(&cell.cons, 2, 0, 1);
    cell.cons.have = 1;
    ck_assert_int_eq(gpuipc_cell_verdict(&cell, who3, NULL, 0, why, sizeof(why), NULL, NULL, NULL),
                     GPUIPC_FAIL);
    ck_assert_msg(strstr(why, "rank 1 (n, GPU 0)'s side of the session failed: verify") != NULL,
                  "%s", why);
    /* The producer never reported: gone, whatever the consumer says. */
    consumer_side(&cell.cons, 2, 0, 0);
    cell.cons.have = 1;
    cell.prod.have = 0;
    ck_assert_int_eq(gpuipc_cell_verdict(&cell, who3, NULL, 0, why, sizeof(why), NULL, NULL, NULL),
                     GPUIPC_FAIL);
    ck_assert_msg(strstr(why, "rank 0 (n, GPU 0) never reported (it died") != NULL, "%s", why);
    /* No session, both sides skip: not on this node. */
    empty_cell(&cell);
    cell.c = 2;
    cell.prod.have = cell.cons.have = 1;
    cell.prod.code = cell.cons.code = GPUIPC_SKIP;
    snprintf(cell.prod.note, sizeof(cell.prod.note), "not on this node: rank 2");
    snprintf(cell.cons.note, sizeof(cell.cons.note), "not on this node: rank 0");
    ck_assert_int_eq(gpuipc_cell_verdict(&cell, who3, NULL, 0, why, sizeof(why), NULL, NULL, NULL),
                     GPUIPC_SKIP);
    ck_assert_str_eq(why, "not on this node: rank 2");
    /* A skip on one side and a failure on the other is a failure. */
    cell.cons.code = GPUIPC_FAIL;
    ck_assert_int_eq(gpuipc_cell_verdict(&cell, who3, NULL, 0, why, sizeof(why), NULL, NULL, NULL),
                     GPUIPC_FAIL);
    /* The consumer died during the session: one reason for the pair. */
    empty_cell(&cell);
    cell.c = 1;
    producer_side(&cell.prod, 0, 2);
    cell.prod.have = 1;
    cell.prod.gone = 1;
    snprintf(cell.prod.note, sizeof(cell.prod.note), "rank 1 (n, GPU 0) gone during report");
    ck_assert_int_eq(gpuipc_cell_verdict(&cell, who3, NULL, 0, why, sizeof(why), NULL, NULL, NULL),
                     GPUIPC_FAIL);
    ck_assert_str_eq(why, "rank 1 (n, GPU 0) gone during report");
    /* The consumer never reported its side: not proven. */
    empty_cell(&cell);
    cell.c = 1;
    producer_side(&cell.prod, 2, 0);
    cell.prod.have = 1;
    ck_assert_int_eq(gpuipc_cell_verdict(&cell, who3, NULL, 0, why, sizeof(why), NULL, NULL, NULL),
                     GPUIPC_FAIL);
    ck_assert_msg(strstr(why, "rank 1 (n, GPU 0) never reported its side") != NULL, "%s", why);
    /* A scenario that never ran (CK_RUN_CASE left it out) proves nothing. */
    consumer_side(&cell.cons, 1, 0, 0);
    cell.cons.have = 1;
    cell.prod.s[1].status = -1;
    ck_assert_int_eq(gpuipc_cell_verdict(&cell, who3, NULL, 0, why, sizeof(why), NULL, NULL, NULL),
                     GPUIPC_FAIL);
    /* The record must hold the run's mechanisms, each once. */
    {
        const char *const run[] = {"memfd", "memfd-pidfd"};
        const char *const same[] = {"memfd"};

        producer_side(&cell.prod, 1, 0);
        cell.prod.have = 1;
        consumer_side(&cell.cons, 1, 0, 0);
        cell.cons.have = 1;
        ck_assert_int_eq(gpuipc_cell_verdict(&cell, who3, same, 1, why, sizeof(why), NULL,
                                             NULL, NULL), GPUIPC_PASS);
        ck_assert_int_eq(gpuipc_cell_verdict(&cell, who3, run, 2, why, sizeof(why), NULL,
                                             NULL, NULL), GPUIPC_FAIL);
        ck_assert_msg(strstr(why, "does not hold the run's mechanisms (memfd-pidfd missing)") !=
                          NULL, "%s", why);
        producer_side(&cell.prod, 2, 0); /* memfd twice */
        cell.prod.have = 1;
        consumer_side(&cell.cons, 2, 0, 0);
        cell.cons.have = 1;
        ck_assert_int_eq(gpuipc_cell_verdict(&cell, who3, run, 2, why, sizeof(why), NULL,
                                             NULL, NULL), GPUIPC_FAIL);
    }
    /* A session whose scenarios passed but whose end failed. */
    empty_cell(&cell);
    cell.c = 1;
    producer_side(&cell.prod, 1, 0);
    cell.prod.have = 1;
    consumer_side(&cell.cons, 1, 0, 0);
    cell.cons.have = 1;
    cell.prod.code = GPUIPC_FAIL;
    snprintf(cell.prod.note, sizeof(cell.prod.note), "producer, at the end: 1 FD leaked");
    ck_assert_int_eq(gpuipc_cell_verdict(&cell, who3, NULL, 0, why, sizeof(why), NULL, NULL, NULL),
                     GPUIPC_FAIL);
    ck_assert_msg(strstr(why, "1 FD leaked") != NULL, "%s", why);
    empty_cell(&cell);
}
END_TEST

/* The records of 72 ranks (an NVL72 rack), every ordered pair reported by
 * both sides, producers of 0, 1 or 2 scenarios: each side decoded holds
 * its own scenarios, no more (an allocation of n, none for 0), and a side
 * without them is small, so that what the verdict's rank holds grows with
 * the scenarios the records carry, not with their bound. */
START_TEST(test_ranks_records_of_many_ranks_hold_only_their_scenarios)
{
    const uint32_t size = 72;
    gpuipc_cell *cells = calloc((size_t)size * size, sizeof(*cells));
    gpuipc_cell_side ps = {0}, cs = {0};
    gpuipc_cells_tally t;
    FILE *out = fopen("/dev/null", "w");
    const char *who[72];
    size_t held = 0;
    uint32_t r, k;
    gpuipc_err e;

    ck_assert_ptr_nonnull(cells);
    ck_assert_ptr_nonnull(out);
    ck_assert_msg(sizeof(gpuipc_cell_side) < 1024, "a side is %zu bytes",
                  sizeof(gpuipc_cell_side));
    for (r = 0; r < size; r++)
        who[r] = "rank";
    for (r = 0; r < size; r++) {
        char *buf = NULL;
        size_t len = 0, cap = 0;

        for (k = 0; k < size; k++) {
            if (k == r)
                continue;
            producer_side(&ps, (r + k) % 3, 0);
            consumer_side(&cs, (r + k) % 3, 0, 0);
            ck_assert_int_eq(gpuipc_cells_encode(&buf, &len, &cap, 1, r, k, &ps), 0);
            ck_assert_int_eq(gpuipc_cells_encode(&buf, &len, &cap, 2, k, r, &cs), 0);
        }
        ck_assert_msg(gpuipc_cells_decode(buf, r, size, cells, &e) == 0, "rank %u: %s", r,
                      e.msg);
        free(buf);
    }
    for (r = 0; r < size; r++)
        for (k = 0; k < size; k++) {
            const gpuipc_cell *c = &cells[(size_t)r * size + k];
            size_t n = r == k ? 0 : (r + k) % 3;

            ck_assert_int_eq(c->prod.have, r != k);
            ck_assert_int_eq(c->cons.have, r != k);
            ck_assert_uint_eq(c->prod.n, n);
            ck_assert_ptr_null(c->cons.s);
            if (n == 0) {
                ck_assert_ptr_null(c->prod.s);
                continue;
            }
            ck_assert_ptr_nonnull(c->prod.s);
            ck_assert_msg(malloc_usable_size(c->prod.s) < (n + 1) * sizeof(gpuipc_cell_scenario),
                          "%u -> %u: %zu bytes for %zu scenarios", r, k,
                          malloc_usable_size(c->prod.s), n);
            ck_assert_str_eq(c->prod.s[n - 1].mech, "memfd");
            held += n;
        }
    /* One in three pairs holds 2 scenarios, one in three 1. */
    ck_assert_uint_eq(held, (size_t)size * (size - 1));
    ck_assert_int_eq(gpuipc_cells_judge(cells, size, who, NULL, 0, NULL, out, &t), 0);
    ck_assert_uint_eq(t.passed, held);
    ck_assert_uint_eq(t.proven + t.skipped, size * (size - 1));
    fclose(out);
    gpuipc_cell_side_free(&ps);
    free_cells(cells, size);
}
END_TEST

/* Rank 1's report: a record it may make, then one whose second scenario is
 * a lie. Refused whole: every side it recorded is empty again, the
 * scenarios decoded before the lie freed (valgrind says whether any
 * leaked). */
START_TEST(test_ranks_a_report_refused_half_way_keeps_nothing)
{
    static const char *const bad[] = {
        "R 1 1 0 0 1 0 0 0 0 0 0 1 0 2\tgood\n"
        "S 0 0 0 0 0 memfd\t\tok\t\t\n"
        "S 0 0 0 0 0 memfd-pidfd\t\tok\t\t\n"
        "R 2 0 1 0 1 1 2 0 0 0 0 1 0 0\tgood too\n"
        "R 1 1 2 0 1 0 0 0 0 0 0 1 0 3\tthe lie\n"
        "S 0 0 0 0 0 memfd\t\tok\t\t\n"
        "S 0 0 0 0 0 Memfd\t\tbad name\t\t\n"
        "S 0 0 0 0 0 memfd\t\tok\t\t\n",
        /* The last scenario promised never comes. */
        "R 1 1 0 0 1 0 0 0 0 0 0 1 0 2\tgood\n"
        "S 0 0 0 0 0 memfd\t\tok\t\t\n"
        "S 0 0 0 0 0 memfd-pidfd\t\tok\t\t\n"
        "R 1 1 2 0 1 0 0 0 0 0 0 1 0 2\tcut short\n"
        "S 0 0 0 0 0 memfd\t\tok\t\t\n",
    };
    gpuipc_cell *cells = calloc(9, sizeof(*cells));
    gpuipc_err e;
    size_t i, k;

    ck_assert_ptr_nonnull(cells);
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        /* What another rank reported stays. */
        ck_assert_msg(gpuipc_cells_decode("R 1 2 1 0 1 0 0 0 0 0 0 1 0 1\tother\n"
                                          "S 0 0 0 0 0 memfd\t\tok\t\t\n", 2, 3, cells,
                                          &e) == 0, "%s", e.msg);
        ck_assert_int_eq(gpuipc_cells_decode(bad[i], 1, 3, cells, &e), -EPROTO);
        for (k = 0; k < 9; k++) {
            const gpuipc_cell *c = &cells[k];

            if (k == 2 * 3 + 1) {
                ck_assert(c->prod.have);
                ck_assert_uint_eq(c->prod.n, 1);
                ck_assert_ptr_nonnull(c->prod.s);
                continue;
            }
            ck_assert_msg(!c->prod.have && c->prod.n == 0 && c->prod.s == NULL,
                          "case %zu: cell %zu's producer's side kept", i, k);
            ck_assert_msg(!c->cons.have && c->cons.n == 0 && c->cons.s == NULL,
                          "case %zu: cell %zu's consumer's side kept", i, k);
        }
        gpuipc_cells_free(cells, 3);
    }
    free(cells);
}
END_TEST

/* The owned scenarios: reserved zeroed, moved (the source left empty),
 * freed (the side empty again); more than a record carries refused. */
START_TEST(test_ranks_a_side_owns_its_scenarios)
{
    gpuipc_cell_side a = {0}, b = {0};

    ck_assert_int_eq(gpuipc_cell_side_reserve(&a, 0), 0);
    ck_assert_ptr_null(a.s);
    ck_assert_uint_eq(a.n, 0);
    ck_assert_int_eq(gpuipc_cell_side_reserve(&a, GPUIPC_CELLS_SCENARIOS_MAX + 1), -EINVAL);
    ck_assert_ptr_null(a.s);
    ck_assert_int_eq(gpuipc_cell_side_reserve(&a, 2), 0);
    ck_assert_uint_eq(a.n, 2);
    ck_assert_int_eq(a.s[1].status, 0);
    ck_assert_str_eq(a.s[1].mech, "");
    a.have = 1;
    snprintf(a.s[1].mech, sizeof(a.s[1].mech), "memfd");
    producer_side(&b, 3, 0); /* freed by the move */
    gpuipc_cell_side_move(&b, &a);
    ck_assert_int_eq(a.have, 0);
    ck_assert_ptr_null(a.s);
    ck_assert_uint_eq(a.n, 0);
    ck_assert_int_eq(b.have, 1);
    ck_assert_uint_eq(b.n, 2);
    ck_assert_str_eq(b.s[1].mech, "memfd");
    gpuipc_cell_side_free(&b);
    ck_assert_ptr_null(b.s);
    ck_assert_uint_eq(b.n, 0);
    ck_assert_int_eq(b.have, 0);
}
END_TEST

/* ---- ranks of other nodes: the TCP listener's challenge ------------------------------- */

#define TCP_TOKEN "00112233445566778899aabbccddeeff"

/* A TCP connection to the listener at name, and its 24-byte challenge read
 * into challenge. */
static int tcp_dial(const char *name, uint8_t *challenge)
{
    gpuipc_tcp_addr a;
    gpuipc_err e;
    size_t got;
    int fd;

    ck_assert_int_eq(gpuipc_tcp_parse(name, &a), 0);
    fd = gpuipc_tcp_connect(&a, gpuipc_clock_deadline(TIMEOUT_NS), &e);
    ck_assert_msg(fd >= 0, "%s", e.msg);
    ck_assert_int_eq(gpuipc_tcp_read_exact(fd, challenge, GPUIPC_MEET_CHALLENGE_LEN,
                                           gpuipc_clock_deadline(TIMEOUT_NS), &got), 0);
    ck_assert_mem_eq(challenge, GPUIPC_MEET_MAGIC, GPUIPC_MEET_MAGIC_LEN);
    return fd;
}

/* Whether the listener closed fd (it refused what was sent), within 5 s. */
static int closed_by_peer(int fd)
{
    struct pollfd p = {fd, POLLIN, 0};
    char c;

    return poll(&p, 1, 5000) == 1 && read(fd, &c, 1) == 0;
}

/* Whether the listener closed fd within 5 s, after whatever it sent (its
 * challenge, where it was not read). */
static int closed_after_all(int fd)
{
    char buf[64];
    ssize_t n;

    do {
        struct pollfd p = {fd, POLLIN, 0};

        if (poll(&p, 1, 5000) != 1)
            return 0;
        n = read(fd, buf, sizeof(buf));
    } while (n > 0);
    return n == 0;
}

/* This process is rank 0 of 3, listening on loopback; ranks 1 and 2 are of
 * another node. A child dials it as: a stranger answering with bytes of
 * no MAC; one replaying an answer made for another connection's challenge
 * (what a relay that saw one could send); one answering rightly but for
 * rank 0 of another listener (rank 5); one answering for a rank of this
 * node; then rank 1 rightly. The four are refused, each counted (and the
 * connection whose answer was replayed, closed unanswered), the first
 * named; rank 1 is accepted and told GO; nothing is left open. */
START_TEST(test_ranks_a_tcp_stranger_or_replay_is_refused_and_a_rank_met)
{
    uint8_t ch[GPUIPC_MEET_CHALLENGE_LEN], ch2[GPUIPC_MEET_CHALLENGE_LEN];
    uint8_t ans[GPUIPC_MEET_ANSWER_LEN];
    char name[GPUIPC_TCP_TEXT_LEN], how[256], first[256], go[32] = "";
    gpuipc_meet *me;
    gpuipc_peer cred;
    gpuipc_err e;
    pid_t child;
    int s, status, fds = th_fd_count();

    ck_assert_int_eq(gpuipc_meet_open(&me, 4, 0, &e), 0);
    ck_assert_msg(gpuipc_meet_listen_tcp(me, "lo", how, sizeof(how), &e) == 0, "%s", e.msg);
    ck_assert_msg(strncmp(gpuipc_meet_tcp_name(me), "127.0.0.1:", 10) == 0, "%s",
                  gpuipc_meet_tcp_name(me));
    ck_assert_int_eq(gpuipc_meet_key(me, TCP_TOKEN), 0);
    ck_assert_int_eq(gpuipc_meet_know_remote(me, 1, "", &e), 0);
    ck_assert_int_eq(gpuipc_meet_know_remote(me, 2, "", &e), 0);
    snprintf(name, sizeof(name), "%s", gpuipc_meet_tcp_name(me));
    child = fork();
    ck_assert_int_ge(child, 0);
    if (child == 0) {
        int a, b, bad = 0;
        ssize_t n;

        /* A stranger. */
        a = tcp_dial(name, ch);
        memset(ans, 0x5a, sizeof(ans));
        bad |= write(a, ans, sizeof(ans)) != (ssize_t)sizeof(ans) || !closed_by_peer(a);
        close(a);
        /* A replay: the right answer to a's challenge, sent on b. */
        a = tcp_dial(name, ch);
        b = tcp_dial(name, ch2);
        bad |= gpuipc_meet_answer(TCP_TOKEN, ch, 1, 0, ans) != 0;
        bad |= write(b, ans, sizeof(ans)) != (ssize_t)sizeof(ans) || !closed_by_peer(b) ? 2 : 0;
        close(a);
        close(b);
        /* Right, but for another listener's rank, then for a rank of
         * this node (3, not made known as remote). */
        a = tcp_dial(name, ch);
        bad |= gpuipc_meet_answer(TCP_TOKEN, ch, 1, 5, ans) != 0;
        bad |= write(a, ans, sizeof(ans)) != (ssize_t)sizeof(ans) || !closed_by_peer(a) ? 4 : 0;
        close(a);
        a = tcp_dial(name, ch);
        bad |= gpuipc_meet_answer(TCP_TOKEN, ch, 3, 0, ans) != 0;
        bad |= write(a, ans, sizeof(ans)) != (ssize_t)sizeof(ans) || !closed_by_peer(a) ? 8 : 0;
        close(a);
        /* Rank 1, rightly: GO comes. */
        a = tcp_dial(name, ch);
        bad |= gpuipc_meet_answer(TCP_TOKEN, ch, 1, 0, ans) != 0;
        bad |= write(a, ans, sizeof(ans)) != (ssize_t)sizeof(ans) ? 16 : 0;
        n = recv(a, go, strlen(GPUIPC_MEET_GO), MSG_WAITALL);
        bad |= n != (ssize_t)strlen(GPUIPC_MEET_GO) || memcmp(go, GPUIPC_MEET_GO, (size_t)n) ? 32 : 0;
        bad |= write(a, "x", 1) != 1 ? 64 : 0;
        usleep(100 * 1000);
        _exit(bad);
    }
    s = gpuipc_meet_accept(me, 1, "rank 1", gpuipc_clock_deadline(TIMEOUT_NS), &cred, &e);
    ck_assert_msg(s >= 0, "%s", e.msg);
    ck_assert_int_eq(cred.pid, 0); /* no pid of another node */
    read_x(s);
    close(s);
    ck_assert_int_eq(waitpid(child, &status, 0), child);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child: status 0x%x",
                  status);
    /* The four, and the replay's first connection, closed unanswered. */
    ck_assert_uint_eq(gpuipc_meet_refused(me, first, sizeof(first)), 5);
    ck_assert_msg(strstr(first, "refused a TCP connection from 127.0.0.1:") &&
                  strstr(first, "does not hold under the job's token"), "%s", first);
    gpuipc_meet_close(me);
    ck_assert_int_eq(th_fd_count(), fds);
}
END_TEST

/* The producer's side with ranks of another node. One whose listener was
 * never reached and refuses (nothing listens at that port: the address may
 * be another machine's) fails the pair saying so, and is not taken for
 * dead; one that publishes no listener is refused, saying so. One met
 * once whose listener refuses since (its process ended) is named gone by
 * a probe at once, and at the next pair, not at the deadline. */
START_TEST(test_ranks_a_tcp_peer_whose_listener_is_gone_is_named_at_once)
{
    gpuipc_tcp_addr a;
    gpuipc_meet *me;
    gpuipc_peer cred;
    gpuipc_err e;
    char name[GPUIPC_TCP_TEXT_LEN], how[256];
    uint64_t t0;
    pid_t child;
    int l, s, status, names[2], fds = th_fd_count();

    /* A port that was listened on and is closed now. */
    ck_assert_int_eq(gpuipc_tcp_choose("lo", &a, how, sizeof(how), &e), 0);
    l = gpuipc_tcp_listen(&a, &e);
    ck_assert_int_ge(l, 0);
    gpuipc_tcp_text(&a, name, sizeof(name));
    close(l);
    ck_assert_int_eq(gpuipc_meet_open(&me, 3, 0, &e), 0);
    ck_assert_int_eq(gpuipc_meet_key(me, TCP_TOKEN), 0);
    ck_assert_int_eq(gpuipc_meet_know_remote(me, 1, name, &e), 0);
    ck_assert_int_eq(gpuipc_meet_know_remote(me, 2, "", &e), 0);
    s = gpuipc_meet_connect(me, 1, NULL, "rank 1", gpuipc_clock_deadline(TIMEOUT_NS), &cred, &e);
    ck_assert_int_eq(s, -ECONNREFUSED);
    ck_assert_msg(strstr(e.msg, "refuses connections, and was never reached"), "%s", e.msg);
    ck_assert_int_eq(gpuipc_meet_ended(me, 1), 0);
    s = gpuipc_meet_connect(me, 2, NULL, "rank 2", gpuipc_clock_deadline(TIMEOUT_NS), &cred, &e);
    ck_assert_int_eq(s, -ENOTCONN);
    ck_assert_msg(strstr(e.msg, "publishes no TCP listener"), "%s", e.msg);
    gpuipc_meet_close(me);

    /* Rank 1 in a child: met once as the consumer of 0 -> 1, then gone. */
    ck_assert_int_eq(pipe(names), 0);
    child = fork();
    ck_assert_int_ge(child, 0);
    if (child == 0) {
        gpuipc_meet *r1;
        char c;
        int fd;

        close(names[0]);
        if (gpuipc_meet_open(&r1, 2, 1, &e) < 0 ||
            gpuipc_meet_listen_tcp(r1, "lo", how, sizeof(how), &e) < 0 ||
            gpuipc_meet_key(r1, TCP_TOKEN) < 0 || gpuipc_meet_know_remote(r1, 0, "", &e) < 0)
            _exit(2);
        (void)!write(names[1], gpuipc_meet_tcp_name(r1), strlen(gpuipc_meet_tcp_name(r1)) + 1);
        fd = gpuipc_meet_accept(r1, 0, "rank 0", gpuipc_clock_deadline(TIMEOUT_NS), &cred, &e);
        if (fd < 0 || read(fd, &c, 1) != 1)
            _exit(3);
        _exit(0);
    }
    close(names[1]);
    memset(name, 0, sizeof(name));
    ck_assert_int_gt(read(names[0], name, sizeof(name) - 1), 0);
    close(names[0]);
    ck_assert_int_eq(gpuipc_meet_open(&me, 2, 0, &e), 0);
    ck_assert_int_eq(gpuipc_meet_key(me, TCP_TOKEN), 0);
    ck_assert_int_eq(gpuipc_meet_know_remote(me, 1, name, &e), 0);
    s = gpuipc_meet_connect(me, 1, NULL, "rank 1", gpuipc_clock_deadline(TIMEOUT_NS), &cred, &e);
    ck_assert_msg(s >= 0, "%s", e.msg);
    ck_assert_int_eq(write(s, "x", 1), 1);
    ck_assert_int_eq(waitpid(child, &status, 0), child);
    ck_assert_int_eq(status, 0);
    close(s);
    t0 = gpuipc_clock_ns();
    ck_assert_int_eq(gpuipc_meet_ended(me, 1), 1);
    ck_assert_uint_lt(gpuipc_clock_ns() - t0, 1000000000ull);
    s = gpuipc_meet_connect(me, 1, NULL, "rank 1", gpuipc_clock_deadline(TIMEOUT_NS), &cred, &e);
    ck_assert_int_eq(s, GPUIPC_MEET_GONE);
    ck_assert_msg(strstr(e.msg, "rank 1 is gone"), "%s", e.msg);
    gpuipc_meet_close(me);
    ck_assert_int_eq(th_fd_count(), fds);
}
END_TEST

/* A rank elsewhere that met this one only by connecting to it (it
 * answered this listener's challenge, this one never dialled its listener)
 * and then died is named gone by a probe: meeting either way makes its
 * listener's refusal a death. (Before: only a listener this rank had
 * dialled counted, and a rank elsewhere that died before anyone dialled it
 * was waited for until the gathering's end: .ci/run, 55 s.) */
START_TEST(test_ranks_a_tcp_peer_met_by_its_own_connect_is_named_gone)
{
    char name[GPUIPC_TCP_TEXT_LEN], how[256], mine[GPUIPC_TCP_TEXT_LEN];
    gpuipc_meet *me;
    gpuipc_peer cred;
    gpuipc_err e;
    pid_t child;
    char c;
    int s, status, names[2], fds = th_fd_count();

    ck_assert_int_eq(gpuipc_meet_open(&me, 2, 0, &e), 0);
    ck_assert_msg(gpuipc_meet_listen_tcp(me, "lo", how, sizeof(how), &e) == 0, "%s", e.msg);
    ck_assert_int_eq(gpuipc_meet_key(me, TCP_TOKEN), 0);
    snprintf(mine, sizeof(mine), "%s", gpuipc_meet_tcp_name(me));
    ck_assert_int_eq(pipe(names), 0);
    child = fork();
    ck_assert_int_ge(child, 0);
    if (child == 0) {
        gpuipc_meet *r1;
        int fd;

        close(names[0]);
        if (gpuipc_meet_open(&r1, 2, 1, &e) < 0 ||
            gpuipc_meet_listen_tcp(r1, "lo", how, sizeof(how), &e) < 0 ||
            gpuipc_meet_key(r1, TCP_TOKEN) < 0 || gpuipc_meet_know_remote(r1, 0, mine, &e) < 0)
            _exit(2);
        (void)!write(names[1], gpuipc_meet_tcp_name(r1), strlen(gpuipc_meet_tcp_name(r1)) + 1);
        fd = gpuipc_meet_connect(r1, 0, NULL, "rank 0", gpuipc_clock_deadline(TIMEOUT_NS), &cred,
                                 &e);
        if (fd < 0 || write(fd, "x", 1) != 1)
            _exit(3);
        usleep(100 * 1000);
        _exit(0);
    }
    close(names[1]);
    memset(name, 0, sizeof(name));
    ck_assert_int_gt(read(names[0], name, sizeof(name) - 1), 0);
    close(names[0]);
    ck_assert_int_eq(gpuipc_meet_know_remote(me, 1, name, &e), 0);
    s = gpuipc_meet_accept(me, 1, "rank 1", gpuipc_clock_deadline(TIMEOUT_NS), &cred, &e);
    ck_assert_msg(s >= 0, "%s", e.msg);
    ck_assert_int_eq(read(s, &c, 1), 1);
    close(s);
    ck_assert_int_eq(waitpid(child, &status, 0), child);
    ck_assert_int_eq(status, 0);
    ck_assert_int_eq(gpuipc_meet_ended(me, 1), 1);
    gpuipc_meet_close(me);
    ck_assert_int_eq(th_fd_count(), fds);
}
END_TEST

/* The address a rank listens on: by an interface's name, by a CIDR, never
 * a loopback one unless named; text and back; what is neither refused. */
START_TEST(test_ranks_tcp_address_choice_and_text)
{
    gpuipc_tcp_addr a, b;
    char how[256], text[GPUIPC_TCP_TEXT_LEN];
    gpuipc_err e;

    ck_assert_msg(gpuipc_tcp_choose("lo", &a, how, sizeof(how), &e) == 0, "%s", e.msg);
    gpuipc_tcp_text(&a, text, sizeof(text));
    ck_assert_str_eq(text, "127.0.0.1:0");
    ck_assert_msg(strstr(how, "of lo, chosen by lo") != NULL, "%s", how);
    ck_assert_msg(gpuipc_tcp_choose("127.0.0.0/8", &a, how, sizeof(how), &e) == 0, "%s", e.msg);
    gpuipc_tcp_text(&a, text, sizeof(text));
    ck_assert_str_eq(text, "127.0.0.1:0");
    /* The default is never loopback (or it fails, saying why). */
    if (gpuipc_tcp_choose(NULL, &a, how, sizeof(how), &e) == 0) {
        gpuipc_tcp_text(&a, text, sizeof(text));
        ck_assert_msg(strncmp(text, "127.", 4) != 0 && strncmp(text, "[::1]", 5) != 0,
                      "%s: %s", text, how);
    } else {
        ck_assert_msg(strstr(e.msg, "no address another node could reach"), "%s", e.msg);
    }
    ck_assert_int_eq(gpuipc_tcp_choose("nosuchif0", &a, how, sizeof(how), &e), -ENOENT);
    ck_assert_int_eq(gpuipc_tcp_choose("10.0.0.0/33", &a, how, sizeof(how), &e), -EINVAL);
    ck_assert_int_eq(gpuipc_tcp_net_check("fd00::/8", &e), 0);
    ck_assert_int_eq(gpuipc_tcp_net_check("", &e), -EINVAL);
    ck_assert_int_eq(gpuipc_tcp_net_check("a:b", &e), -EINVAL);
    ck_assert_int_eq(gpuipc_tcp_net_check("0123456789abcdef", &e), -EINVAL);
    ck_assert_int_eq(gpuipc_tcp_parse("[fd00::2]:41234", &b), 0);
    gpuipc_tcp_text(&b, text, sizeof(text));
    ck_assert_str_eq(text, "[fd00::2]:41234");
    ck_assert_int_eq(gpuipc_tcp_parse("192.0.2.2:65535", &b), 0);
    ck_assert_int_eq(gpuipc_tcp_parse("192.0.2.2:65536", &b), -EINVAL);
    ck_assert_int_eq(gpuipc_tcp_parse("192.0.2.2:", &b), -EINVAL);
    ck_assert_int_eq(gpuipc_tcp_parse("node1:80", &b), -EINVAL);
    ck_assert_int_eq(gpuipc_tcp_parse("[fd00::2]", &b), -EINVAL);
}
END_TEST

/* ---- review findings (tcase "review"): each fails until its defect is fixed ----------- */

/* This process is rank 0 of 2, listening on loopback, rank 1 of another
 * node. Returns the meeting place, its TCP name into name. */
static gpuipc_meet *review_listener(char name[GPUIPC_TCP_TEXT_LEN])
{
    gpuipc_meet *me;
    gpuipc_err e;
    char how[256];

    ck_assert_int_eq(gpuipc_meet_open(&me, 2, 0, &e), 0);
    ck_assert_msg(gpuipc_meet_listen_tcp(me, "lo", how, sizeof(how), &e) == 0, "%s", e.msg);
    ck_assert_int_eq(gpuipc_meet_key(me, TCP_TOKEN), 0);
    ck_assert_int_eq(gpuipc_meet_know_remote(me, 1, "", &e), 0);
    snprintf(name, GPUIPC_TCP_TEXT_LEN, "%s", gpuipc_meet_tcp_name(me));
    return me;
}

/* A child that is rank 1 of another node, connecting to rank 0's listener
 * at name as the producer of 1 -> 0 within ms: exits 0 where it met rank 0
 * (GO came), 1 where it did not. */
static pid_t review_rank1(const char *name, unsigned ms)
{
    pid_t child = fork();

    ck_assert_int_ge(child, 0);
    if (child == 0) {
        gpuipc_meet *r1;
        gpuipc_peer cred;
        gpuipc_err e;
        int s;

        if (gpuipc_meet_open(&r1, 2, 1, &e) < 0 || gpuipc_meet_key(r1, TCP_TOKEN) < 0 ||
            gpuipc_meet_know_remote(r1, 0, name, &e) < 0)
            _exit(2);
        s = gpuipc_meet_connect(r1, 0, NULL, "rank 0",
                                gpuipc_clock_deadline((uint64_t)ms * 1000000ull), &cred, &e);
        if (s < 0) {
            fprintf(stderr, "review: rank 1 did not meet rank 0: %s\n", e.msg);
            _exit(1);
        }
        (void)!write(s, "x", 1);
        usleep(100 * 1000);
        _exit(0);
    }
    return child;
}

/* Strangers (no token) that open GPUIPC_MEET_PENDING connections to a
 * rank's TCP listener and say nothing keep every rank of the job out for
 * as long as they hold them (5 s each, and they may dial again): rank 1,
 * which holds the token, cannot meet rank 0 within 3 s. A stranger should
 * cost a slot, not a real rank's pair (suggested: refuse a new connection
 * to make room by dropping the oldest pending one, or limit pending per
 * source address). */
START_TEST(test_review_tcp_strangers_holding_every_pending_slot_keep_no_rank_out)
{
    char name[GPUIPC_TCP_TEXT_LEN];
    gpuipc_meet *me = review_listener(name);
    gpuipc_tcp_addr a;
    gpuipc_peer cred;
    gpuipc_err e;
    pid_t strangers, rank1;
    char g;
    int s, status, i, go[2];

    ck_assert_int_eq(pipe(go), 0);
    strangers = fork();
    ck_assert_int_ge(strangers, 0);
    if (strangers == 0) {
        int fds[GPUIPC_MEET_PENDING];

        close(go[0]);
        if (gpuipc_tcp_parse(name, &a) < 0)
            _exit(2);
        for (i = 0; i < GPUIPC_MEET_PENDING; i++)
            if ((fds[i] = gpuipc_tcp_connect(&a, gpuipc_clock_deadline(TIMEOUT_NS), &e)) < 0)
                _exit(3);
        (void)!write(go[1], "g", 1);
        sleep(4); /* within GPUIPC_MEET_ANSWER_MS: never refused meanwhile */
        _exit(0);
    }
    close(go[1]);
    ck_assert_int_eq(read(go[0], &g, 1), 1);
    close(go[0]);
    /* Their connections taken (as the accepting thread does while it waits). */
    gpuipc_meet_sweep(me);
    rank1 = review_rank1(name, 3000);
    s = gpuipc_meet_accept(me, 1, "rank 1", gpuipc_clock_deadline(3000ull * 1000000ull), &cred,
                           &e);
    ck_assert_int_eq(waitpid(rank1, &status, 0), rank1);
    ck_assert_int_eq(waitpid(strangers, NULL, 0), strangers);
    ck_assert_msg(s >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0,
                  "16 silent strangers kept rank 1 out: rank 0: %s", s >= 0 ? "met" : e.msg);
    close(s);
    gpuipc_meet_close(me);
}
END_TEST

/* Probes of a rank elsewhere (gpuipc_meet_ended: each sends its mark at
 * once) pile up in the listener's backlog while the rank is in a session
 * and sweeps nothing: 20 of them, more than GPUIPC_MEET_PENDING, then one
 * sweep. Each mark is read as its connection is taken, so none waits for a
 * slot and none is counted as a stranger. (Before: those beyond the slots
 * were refused as "too many have not answered", counted.) */
START_TEST(test_review_tcp_probes_that_pile_up_are_not_counted_as_strangers)
{
    char name[GPUIPC_TCP_TEXT_LEN], first[256];
    gpuipc_meet *me = review_listener(name);
    uint8_t mark[GPUIPC_MEET_ANSWER_LEN];
    gpuipc_tcp_addr a;
    gpuipc_err e;
    int fds[20], i;

    ck_assert_int_eq(gpuipc_meet_probe_mark(TCP_TOKEN, 0, mark), 0);
    ck_assert_int_eq(gpuipc_tcp_parse(name, &a), 0);
    for (i = 0; i < 20; i++) {
        fds[i] = gpuipc_tcp_connect(&a, gpuipc_clock_deadline(TIMEOUT_NS), &e);
        ck_assert_msg(fds[i] >= 0, "%s", e.msg);
        ck_assert_int_eq(write(fds[i], mark, sizeof(mark)), (ssize_t)sizeof(mark));
    }
    usleep(100 * 1000);
    gpuipc_meet_sweep(me);
    gpuipc_meet_sweep(me);
    ck_assert_msg(gpuipc_meet_refused(me, first, sizeof(first)) == 0,
                  "probes counted as strangers: %u, the first: %s",
                  gpuipc_meet_refused(me, first, sizeof(first)), first);
    for (i = 0; i < 20; i++)
        ck_assert_msg(closed_after_all(fds[i]), "probe %d not dropped", i);
    for (i = 0; i < 20; i++)
        close(fds[i]);
    gpuipc_meet_close(me);
}
END_TEST

/* The probe's mark (p == c == the listener's rank, no MAC) is taken from
 * anyone: a stranger without the token that sends it is dropped uncounted,
 * so one that holds pending slots (above) and ends with the mark leaves no
 * trace in "refused N connections". */
START_TEST(test_review_tcp_a_stranger_sending_the_probe_mark_is_counted)
{
    char name[GPUIPC_TCP_TEXT_LEN], first[256];
    uint8_t ch[GPUIPC_MEET_CHALLENGE_LEN], mark[GPUIPC_MEET_ANSWER_LEN];
    gpuipc_meet *me = review_listener(name);
    pid_t child;
    int status;

    child = fork();
    ck_assert_int_ge(child, 0);
    if (child == 0) {
        int a = tcp_dial(name, ch);

        memset(mark, 0x5a, sizeof(mark));
        memset(mark, 0, 8); /* rank 0 twice */
        if (write(a, mark, sizeof(mark)) != (ssize_t)sizeof(mark) || !closed_by_peer(a))
            _exit(1);
        _exit(0);
    }
    while (waitpid(child, &status, WNOHANG) == 0) {
        gpuipc_meet_sweep(me);
        usleep(10 * 1000);
    }
    ck_assert_int_eq(status, 0);
    ck_assert_msg(gpuipc_meet_refused(me, first, sizeof(first)) == 1,
                  "a stranger with the probe's mark and no MAC was not counted");
    gpuipc_meet_close(me);
}
END_TEST

static const char *const who12[] = {"rank 0 (n)", "rank 1 (n)", "rank 2 (n)", "rank 3 (n)",
                                    "rank 4 (n)", "rank 5 (n)", "rank 6 (n)", "rank 7 (n)",
                                    "rank 8 (n)", "rank 9 (n)", "rank 10 (n)", "rank 11 (n)"};

/* Lines alike whose ranks' list starts with a rank of two digits: the
 * list's check for a label already there (covers_add) finds "0" inside
 * "10" at the list's second byte and reads the byte before the list
 * (at[-2]). Under make asan: stack-buffer-underflow in covers_add. */
START_TEST(test_review_judge_alike_list_reads_within_its_buffer)
{
    gpuipc_cell *cells = calloc(144, sizeof(*cells));
    gpuipc_cells_tally t;
    char *text = NULL;
    size_t len = 0, i;
    FILE *out = open_memstream(&text, &len);

    ck_assert_ptr_nonnull(cells);
    for (i = 0; i < 144; i++) {
        if (i / 12 == i % 12)
            continue;
        producer_side(&cells[i].prod, 2, 0);
        cells[i].prod.have = 1;
        consumer_side(&cells[i].cons, 2, 0, 0);
        cells[i].cons.have = 1;
    }
    /* 10 -> 0 and 11 -> 0: the consumer never reported, alike. */
    cells[10 * 12 + 0].cons.have = 0;
    cells[11 * 12 + 0].cons.have = 0;
    ck_assert_int_eq(gpuipc_cells_judge(cells, 12, who12, NULL, 0, NULL, out, &t), 0);
    fclose(out);
    ck_assert_msg(strstr(text, "  and 1 more alike: 11 -> 0; ranks 10, 0, 11\n") != NULL, "%s",
                  text);
    free(text);
    free_cells(cells, 12);
}
END_TEST

Suite *ranks_suite(void)
{
    Suite *s = suite_create("ranks");
    TCase *tc = tcase_create("ranks");

    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_ranks_hello_with_the_jobs_token_passes);
    tcase_add_test(tc, test_ranks_the_token_never_travels);
    tcase_add_test(tc, test_ranks_a_producer_of_another_job_refuses_the_consumer);
    tcase_add_test(tc, test_ranks_producer_refuses_a_consumer_with_a_wrong_token);
    tcase_add_test(tc, test_ranks_a_made_up_reflected_or_replayed_hello_is_refused);
    tcase_add_test(tc, test_ranks_a_hello_for_another_pair_is_refused);
    tcase_add_test(tc, test_ranks_the_session_key_binds_token_nonces_ranks_and_flags);
    tcase_add_test(tc, test_ranks_a_listener_name_is_random_and_cannot_be_taken);
    tcase_add_test(tc, test_ranks_pair_meets_either_side);
    tcase_add_test(tc, test_ranks_a_stranger_is_refused_and_an_early_rank_held);
    tcase_add_test(tc, test_ranks_the_producer_refuses_another_process_at_the_name);
    tcase_add_test(tc, test_ranks_a_tcp_stranger_or_replay_is_refused_and_a_rank_met);
    tcase_add_test(tc, test_ranks_a_tcp_peer_whose_listener_is_gone_is_named_at_once);
    tcase_add_test(tc, test_ranks_a_tcp_peer_met_by_its_own_connect_is_named_gone);
    tcase_add_test(tc, test_ranks_tcp_address_choice_and_text);
    /* What tells these a rank has ended is its pidfd, and valgrind has no
     * pidfd_open: the fallback, kill(pid, 0), cannot tell either. */
    th_add_unless_valgrind(tc, test_ranks_a_pid_used_again_is_no_rank,
                           "valgrind 3.19 does not implement pidfd_open (ENOSYS)");
    th_add_unless_valgrind(tc, test_ranks_a_dead_peer_is_named_at_once_not_at_the_deadline,
                           "valgrind 3.19 does not implement pidfd_open (ENOSYS)");
    tcase_add_test(tc, test_ranks_a_live_peer_that_never_comes_times_out_naming_it);
    if (geteuid() == 0) /* another uid needs root (CI runs as root) */
        tcase_add_test(tc, test_ranks_another_user_is_refused_in_the_modes_words);
    suite_add_tcase(s, tc);
    /* The records and the verdict: no process, no socket (under valgrind,
     * CK_RUN_CASE=records runs them alone: docs/testing.md). */
    tc = tcase_create("records");
    tcase_add_test(tc, test_ranks_records_round_trip);
    tcase_add_test(tc, test_ranks_judge_groups_only_what_is_alike);
    tcase_add_test(tc, test_ranks_judge_groups_causes_alike_but_for_figures);
    tcase_add_test(tc, test_ranks_judge_keeps_apart_causes_of_other_xid_codes);
    tcase_add_test(tc, test_ranks_judge_says_a_whole_pairs_cause_and_parts_by_it);
    tcase_add_test(tc, test_ranks_a_scenario_the_plan_failed_is_the_pairs_failure);
    tcase_add_test(tc, test_ranks_judge_gives_a_whole_pair_no_other_scenarios_cause);
    tcase_add_test(tc, test_ranks_records_that_lie_are_refused);
    tcase_add_test(tc, test_ranks_a_pair_is_proven_only_where_both_sides_agree);
    tcase_add_test(tc, test_ranks_judge_says_each_cause_once);
    tcase_add_test(tc, test_ranks_the_more_specific_side_leads);
    tcase_add_test(tc, test_ranks_a_side_owns_its_scenarios);
    tcase_add_test(tc, test_ranks_records_of_many_ranks_hold_only_their_scenarios);
    tcase_add_test(tc, test_ranks_a_report_refused_half_way_keeps_nothing);
    suite_add_tcase(s, tc);
    /* A review's findings, each failing until its defect is fixed
     * (CK_RUN_CASE=review runs them alone). */
    tc = tcase_create("review");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_review_tcp_strangers_holding_every_pending_slot_keep_no_rank_out);
    tcase_add_test(tc, test_review_tcp_probes_that_pile_up_are_not_counted_as_strangers);
    tcase_add_test(tc, test_review_tcp_a_stranger_sending_the_probe_mark_is_counted);
    tcase_add_test(tc, test_review_judge_alike_list_reads_within_its_buffer);
    suite_add_tcase(s, tc);
    return s;
}
