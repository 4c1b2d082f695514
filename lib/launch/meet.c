/* SPDX-License-Identifier: Apache-2.0 */
/* meet.c: a rank's listener under a random name, the rendezvous of a pair's
 * session on it, and the pidfds that tell a rank has ended (meet.h says
 * how), over wire/endpoint's abstract sockets. */
#include "launch/meet.h"

#include <errno.h>
#include <pthread.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/procstat.h"
#include "core/random.h"
#include "core/sha256.h"
#include "core/stop.h"
#include "core/watch.h"
#include "wire/tcp.h"
#include "wire/wire.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434 /* the same number on every architecture (Linux 5.3) */
#endif

struct gpuipc_meet {
    gpuipc_endpoint ep;
    char name[GPUIPC_MEET_NAME_LEN];
    uint32_t size, self;
    int32_t *pid;          /* each rank's, by its card; 0: not known here */
    int *pidfd;            /* -1: none (not known, or no pidfd_open: kill(pid, 0) then) */
    unsigned char *ended;  /* seen ended */
    int *held;             /* a connection of that rank, come early for a later pair; -1 */
    unsigned refused;
    char first[256];
    /* ended, refused and first: a rank's two sessions of a phase meet
     * their peers at once, each on a thread of its own (the accepting one
     * alone touches held, pend and the listeners). */
    pthread_mutex_t mu;
    /* Ranks of other nodes: the TCP listener (-1: none) and its address,
     * which of the ranks are elsewhere and their listeners' addresses, the
     * job's token (the challenge's key), and the connections accepted that
     * have not answered their challenge yet. */
    int tcp_fd;
    char tcp_name[GPUIPC_TCP_TEXT_LEN];
    unsigned char *remote;
    gpuipc_tcp_addr *raddr;
    uint64_t *probed; /* when each rank elsewhere was last probed (ns) */
    unsigned char *reached; /* met once, either way (its listener sent a challenge, or
                             * it answered this one's): a refusal since says it has
                             * ended, not that the address is wrong */
    unsigned char *clash;   /* its listener's address is one of this machine's too */
    unsigned probes;        /* probes' marks taken (not strangers) */
    uint64_t tcp_stall;     /* no accept on the TCP listener until then (EMFILE) */
    int ready;              /* every array's entries set (pidfd, held -1) */
    uint8_t key[GPUIPC_MEET_KEY_LEN];
    int have_key;
    struct pend {
        int fd; /* -1: a free slot */
        uint64_t until;
        uint8_t nonce[GPUIPC_MEET_NONCE_LEN];
        uint8_t answer[GPUIPC_MEET_ANSWER_LEN];
        size_t got;
        char from[GPUIPC_TCP_TEXT_LEN];
    } pend[GPUIPC_MEET_PENDING];
};

/* "@gpuipc-<32 hex digits from getrandom>" into name. Returns 0 or an errno. */
static int random_name(char name[GPUIPC_MEET_NAME_LEN])
{
    unsigned char raw[16];
    int e;

    if ((e = gpuipc_random_bytes(raw, sizeof(raw))) != 0)
        return e;
    memcpy(name, "@gpuipc-", 8);
    gpuipc_random_hex(name + 8, raw, sizeof(raw));
    return 0;
}

int gpuipc_meet_open(gpuipc_meet **out, uint32_t size, uint32_t self, gpuipc_err *err)
{
    gpuipc_meet *m = calloc(1, sizeof(*m));
    uint32_t r;
    int rc = -ENOMEM, tries, e;

    *out = NULL;
    if (m == NULL)
        return gpuipc_err_set(err, -ENOMEM, "its listener: out of memory");
    m->ep.fd = -1;
    m->tcp_fd = -1;
    for (r = 0; r < GPUIPC_MEET_PENDING; r++)
        m->pend[r].fd = -1;
    pthread_mutex_init(&m->mu, NULL);
    m->size = size;
    m->self = self;
    m->pid = calloc(size, sizeof(*m->pid));
    m->pidfd = calloc(size, sizeof(*m->pidfd));
    m->ended = calloc(size, 1);
    m->held = calloc(size, sizeof(*m->held));
    m->remote = calloc(size, 1);
    m->raddr = calloc(size, sizeof(*m->raddr));
    m->probed = calloc(size, sizeof(*m->probed));
    m->reached = calloc(size, 1);
    m->clash = calloc(size, 1);
    if (m->probed == NULL || m->reached == NULL || m->clash == NULL || m->pid == NULL || m->pidfd == NULL || m->ended == NULL || m->held == NULL ||
        m->remote == NULL || m->raddr == NULL) {
        gpuipc_err_set(err, -ENOMEM, "its listener: out of memory for %u ranks", size);
        goto fail;
    }
    for (r = 0; r < size; r++)
        m->pidfd[r] = m->held[r] = -1;
    m->ready = 1;
    /* A name in use can only be another process's that drew the same 128
     * bits, or one that guessed them: a new draw, then give up. */
    for (tries = 0; tries < 3; tries++) {
        if ((e = random_name(m->name)) != 0) {
            rc = gpuipc_err_sys(err, "getrandom", e, "its listener: getrandom: %s: no name",
                                strerror(e));
            goto fail;
        }
        if ((rc = gpuipc_endpoint_listen(&m->ep, m->name, err)) != -EADDRINUSE)
            break;
    }
    if (rc < 0) {
        m->ep.fd = -1;
        gpuipc_err_prefix(err, "its listener");
        goto fail;
    }
    *out = m;
    return 0;

fail:
    gpuipc_meet_close(m);
    return rc;
}

const char *gpuipc_meet_name(const gpuipc_meet *m)
{
    return m->name;
}

int gpuipc_meet_listen_tcp(gpuipc_meet *m, const char *net, char *how, size_t hlen,
                           gpuipc_err *err)
{
    gpuipc_tcp_addr a;
    int fd;

    if ((fd = gpuipc_tcp_choose(net, &a, how, hlen, err)) < 0 ||
        (fd = gpuipc_tcp_listen(&a, err)) < 0) {
        gpuipc_err_prefix(err, "its TCP listener");
        return fd;
    }
    m->tcp_fd = fd;
    gpuipc_tcp_text(&a, m->tcp_name, sizeof(m->tcp_name));
    return 0;
}

const char *gpuipc_meet_tcp_name(const gpuipc_meet *m)
{
    return m->tcp_name;
}

int gpuipc_meet_key(gpuipc_meet *m, const char *token_hex)
{
    if (strlen(token_hex) != 2 * GPUIPC_MEET_KEY_LEN ||
        gpuipc_random_unhex(m->key, token_hex, GPUIPC_MEET_KEY_LEN) < 0)
        return -EINVAL;
    m->have_key = 1;
    return 0;
}

int gpuipc_meet_know_remote(gpuipc_meet *m, uint32_t rank, const char *tcp_name,
                            gpuipc_err *err)
{
    if (rank >= m->size || rank == m->self)
        return gpuipc_err_set(err, -EINVAL, "rank %u: not another rank of this job", rank);
    m->remote[rank] = 1;
    if (tcp_name[0] != '\0' && gpuipc_tcp_parse(tcp_name, &m->raddr[rank]) < 0)
        return gpuipc_err_set(err, -EINVAL, "rank %u: its TCP listener %s is no address",
                              rank, tcp_name);
    /* Another node that publishes an address this machine has too (a NAT
     * or bridge address every node has) would be dialled here. */
    m->clash[rank] = tcp_name[0] != '\0' && gpuipc_tcp_is_mine(&m->raddr[rank]);
    return 0;
}

int gpuipc_meet_remote_clash(const gpuipc_meet *m, uint32_t rank)
{
    return rank < m->size && m->clash[rank];
}

int gpuipc_meet_remote(const gpuipc_meet *m, uint32_t rank)
{
    return rank < m->size && m->remote[rank];
}

int gpuipc_meet_know(gpuipc_meet *m, uint32_t rank, int32_t pid, uint64_t start,
                     gpuipc_err *err)
{
    long fd;

    if (rank >= m->size || rank == m->self || pid <= 0)
        return gpuipc_err_set(err, -EINVAL, "rank %u, pid %d: not another rank of this job",
                              rank, (int)pid);
    m->pid[rank] = pid;
    fd = syscall(SYS_pidfd_open, (pid_t)pid, 0);
    if (fd >= 0) {
        /* The pidfd names whatever process has the number now: the card's
         * start time says whether it is still the rank's. */
        if (start != 0 && gpuipc_proc_start_ticks(pid) != start) {
            close((int)fd);
            m->ended[rank] = 1;
            return 0;
        }
        m->pidfd[rank] = (int)fd;
        return 0;
    }
    if (errno == ESRCH) {
        m->ended[rank] = 1;
        return 0;
    }
    if (errno == ENOSYS || errno == EPERM)
        return 0; /* before Linux 5.3, or a seccomp filter: kill(pid, 0) below */
    return gpuipc_err_sys(err, "pidfd_open", errno, "rank %u (pid %d): pidfd_open: %s", rank,
                          (int)pid, strerror(errno));
}

static int ended_locked(gpuipc_meet *m, uint32_t rank)
{
    struct pollfd p;

    if (m->ended[rank])
        return 1;
    if (m->pidfd[rank] >= 0) {
        /* A pidfd is readable once its process has ended. */
        p.fd = m->pidfd[rank];
        p.events = POLLIN;
        p.revents = 0;
        if (poll(&p, 1, 0) > 0 && (p.revents & POLLIN)) {
            m->ended[rank] = 1;
            return 1;
        }
        return 0;
    }
    if (m->pid[rank] > 0 && kill(m->pid[rank], 0) < 0 && errno == ESRCH) {
        m->ended[rank] = 1;
        return 1;
    }
    return 0;
}

static int make_answer(const uint8_t key[GPUIPC_MEET_KEY_LEN], const uint8_t *challenge,
                       uint32_t p, uint32_t c, uint8_t answer[GPUIPC_MEET_ANSWER_LEN]);

/* The mark of a probe of rank c's listener: c twice, and HMAC-SHA256 keyed
 * by the job's token over GPUIPC_MEET_PROBE_LABEL and c. It answers no
 * challenge, so one seen on the way could be sent again: it gets nothing
 * but the connection, dropped, and proves only that the job's token made
 * it once. */
static void probe_mark(const uint8_t key[GPUIPC_MEET_KEY_LEN], uint32_t c,
                       uint8_t mark[GPUIPC_MEET_ANSWER_LEN])
{
    gpuipc_hmac h;
    int i;

    for (i = 0; i < 4; i++)
        mark[i] = mark[4 + i] = (uint8_t)(c >> (8 * i));
    gpuipc_hmac_init(&h, key, GPUIPC_MEET_KEY_LEN);
    gpuipc_hmac_update(&h, GPUIPC_MEET_PROBE_LABEL, strlen(GPUIPC_MEET_PROBE_LABEL));
    gpuipc_hmac_update(&h, mark, 4);
    gpuipc_hmac_final(&h, mark + 8);
}

/* Whether rank, of another node, has ended, as its TCP listener says: it
 * refuses a connection (nothing listens at its port any more). One that
 * takes it is sent the probe's mark (the listener's rank twice, which it
 * drops uncounted) and closed; one that does not answer within
 * GPUIPC_MEET_PROBE_MS is not taken for ended. At most one probe each
 * GPUIPC_MEET_PROBE_EVERY_MS. */
static int probe_ended(gpuipc_meet *m, uint32_t rank)
{
    uint8_t ans[GPUIPC_MEET_ANSWER_LEN];
    uint64_t now = gpuipc_clock_ns(), until;
    gpuipc_err err;
    int fd;

    pthread_mutex_lock(&m->mu);
    if (m->raddr[rank].len == 0 || !m->reached[rank] || m->clash[rank] ||
        now - m->probed[rank] < GPUIPC_MEET_PROBE_EVERY_MS * 1000000ull) {
        pthread_mutex_unlock(&m->mu);
        return 0;
    }
    m->probed[rank] = now;
    pthread_mutex_unlock(&m->mu);
    until = gpuipc_clock_deadline(GPUIPC_MEET_PROBE_MS * 1000000ull);
    fd = gpuipc_tcp_connect(&m->raddr[rank], until, &err);
    if (fd == -ECONNREFUSED)
        return 1;
    if (fd < 0)
        return 0;
    /* The probe's mark, sent at once (the listener reads it whenever it
     * looks, without a challenge of its own). */
    probe_mark(m->key, rank, ans);
    (void)!send(fd, ans, sizeof(ans), MSG_NOSIGNAL | MSG_DONTWAIT);
    close(fd);
    return 0;
}

int gpuipc_meet_ended(gpuipc_meet *m, uint32_t rank)
{
    int ended;

    if (rank >= m->size || rank == m->self)
        return 0;
    pthread_mutex_lock(&m->mu);
    ended = m->ended[rank];
    pthread_mutex_unlock(&m->mu);
    if (m->remote[rank] && !ended && probe_ended(m, rank)) {
        pthread_mutex_lock(&m->mu);
        m->ended[rank] = 1;
        pthread_mutex_unlock(&m->mu);
    }
    pthread_mutex_lock(&m->mu);
    ended = ended_locked(m, rank);
    pthread_mutex_unlock(&m->mu);
    return ended;
}

/* The rank whose card names pid and runs still, or -1 (none: no rank of
 * this job). Read after the kernel named pid, a pidfd that says the rank
 * runs shows that pid is still its process, not a number used again. */
static int rank_of(gpuipc_meet *m, pid_t pid)
{
    uint32_t r;

    for (r = 0; r < m->size; r++)
        if (r != m->self && m->pid[r] > 0 && m->pid[r] == (int32_t)pid)
            return gpuipc_meet_ended(m, r) ? -1 : (int)r;
    return -1;
}

static void note_refused(gpuipc_meet *m, const char *why)
{
    pthread_mutex_lock(&m->mu);
    if (m->refused++ == 0)
        snprintf(m->first, sizeof(m->first), "%s", why);
    pthread_mutex_unlock(&m->mu);
}

/* ---- the challenge at the TCP listener --------------------------------------------- */

/* The MAC of a connecting rank p's answer to listener c's challenge nonce:
 * HMAC-SHA256 keyed by the job's token over the label, the nonce and both
 * ranks. */
static void answer_mac(const uint8_t key[GPUIPC_MEET_KEY_LEN],
                       const uint8_t nonce[GPUIPC_MEET_NONCE_LEN], uint32_t p, uint32_t c,
                       uint8_t mac[GPUIPC_SHA256_LEN])
{
    uint8_t nums[8];
    gpuipc_hmac h;
    int i;

    for (i = 0; i < 4; i++) {
        nums[i] = (uint8_t)(p >> (8 * i));
        nums[4 + i] = (uint8_t)(c >> (8 * i));
    }
    gpuipc_hmac_init(&h, key, GPUIPC_MEET_KEY_LEN);
    gpuipc_hmac_update(&h, GPUIPC_MEET_LABEL, strlen(GPUIPC_MEET_LABEL));
    gpuipc_hmac_update(&h, nonce, GPUIPC_MEET_NONCE_LEN);
    gpuipc_hmac_update(&h, nums, sizeof(nums));
    gpuipc_hmac_final(&h, mac);
}

/* Rank p's answer to the challenge of rank c's listener, under key.
 * Returns 0, or -EPROTO where the challenge is not one. */
static int make_answer(const uint8_t key[GPUIPC_MEET_KEY_LEN], const uint8_t *challenge,
                       uint32_t p, uint32_t c, uint8_t answer[GPUIPC_MEET_ANSWER_LEN])
{
    int i;

    if (memcmp(challenge, GPUIPC_MEET_MAGIC, GPUIPC_MEET_MAGIC_LEN) != 0)
        return -EPROTO;
    for (i = 0; i < 4; i++) {
        answer[i] = (uint8_t)(p >> (8 * i));
        answer[4 + i] = (uint8_t)(c >> (8 * i));
    }
    answer_mac(key, challenge + GPUIPC_MEET_MAGIC_LEN, p, c, answer + 8);
    return 0;
}

int gpuipc_meet_probe_mark(const char *token_hex, uint32_t c,
                           uint8_t mark[GPUIPC_MEET_ANSWER_LEN])
{
    uint8_t key[GPUIPC_MEET_KEY_LEN];

    if (strlen(token_hex) != 2 * GPUIPC_MEET_KEY_LEN ||
        gpuipc_random_unhex(key, token_hex, sizeof(key)) < 0)
        return -EINVAL;
    probe_mark(key, c, mark);
    explicit_bzero(key, sizeof(key));
    return 0;
}

int gpuipc_meet_answer(const char *token_hex, const uint8_t *challenge, uint32_t p, uint32_t c,
                       uint8_t answer[GPUIPC_MEET_ANSWER_LEN])
{
    uint8_t key[GPUIPC_MEET_KEY_LEN];
    int rc;

    if (strlen(token_hex) != 2 * GPUIPC_MEET_KEY_LEN ||
        gpuipc_random_unhex(key, token_hex, sizeof(key)) < 0)
        return -EINVAL;
    rc = make_answer(key, challenge, p, c, answer);
    explicit_bzero(key, sizeof(key));
    return rc;
}

static uint32_t u32_at(const uint8_t *b)
{
    return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

static void note_refused(gpuipc_meet *m, const char *why);

/* Drops pending connection i, refused for why (NULL: not counted). */
static void pend_drop(gpuipc_meet *m, struct pend *q, const char *why)
{
    char line[256];

    close(q->fd);
    q->fd = -1;
    if (why == NULL)
        return;
    snprintf(line, sizeof(line), "refused a TCP connection from %s: %s", q->from, why);
    note_refused(m, line);
}

/* A connection just accepted at the TCP listener: its challenge sent, and
 * kept until it answers (or GPUIPC_MEET_ANSWER_MS pass). */
static void pend_step(gpuipc_meet *m, struct pend *q);

static void pend_add(gpuipc_meet *m, int fd, const char *from)
{
    uint8_t challenge[GPUIPC_MEET_CHALLENGE_LEN];
    char line[256];
    struct pend *q = NULL;
    ssize_t n;
    int i;

    for (i = 0; i < GPUIPC_MEET_PENDING && q == NULL; i++)
        if (m->pend[i].fd < 0)
            q = &m->pend[i];
    if (q == NULL) {
        /* Every slot taken: the one that has waited longest makes room (a
         * rank answers within milliseconds; strangers that say nothing
         * cannot keep one out). */
        for (i = 0, q = &m->pend[0]; i < GPUIPC_MEET_PENDING; i++)
            if (m->pend[i].until < q->until)
                q = &m->pend[i];
        pend_step(m, q);
        if (q->fd >= 0)
            pend_drop(m, q, "it had not answered its challenge when a newer connection needed "
                      "its place (no rank of this job)");
    }
    if (!m->have_key) {
        close(fd);
        snprintf(line, sizeof(line), "refused a TCP connection from %s before the job's "
                 "token was known", from);
        note_refused(m, line);
        return;
    }
    q->fd = fd;
    q->got = 0;
    q->until = gpuipc_clock_deadline((uint64_t)GPUIPC_MEET_ANSWER_MS * 1000000ull);
    snprintf(q->from, sizeof(q->from), "%s", from);
    memcpy(challenge, GPUIPC_MEET_MAGIC, GPUIPC_MEET_MAGIC_LEN);
    if (gpuipc_random_bytes(q->nonce, sizeof(q->nonce)) != 0) {
        pend_drop(m, q, "no random bytes for its challenge (getrandom failed)");
        return;
    }
    memcpy(challenge + GPUIPC_MEET_MAGIC_LEN, q->nonce, sizeof(q->nonce));
    do
        n = send(fd, challenge, sizeof(challenge), MSG_NOSIGNAL | MSG_DONTWAIT);
    while (n < 0 && errno == EINTR);
    if (n != (ssize_t)sizeof(challenge))
        pend_drop(m, q, "it closed before its challenge was sent");
    else
        pend_step(m, q); /* a probe's mark may be there already */
}

static int sort_rank(gpuipc_meet *m, int peer, int r, int fd);

/* Reads what pending connection q has answered so far, without waiting:
 * an answer that holds makes it its rank's (sorted as any), one that does
 * not, an end or the time passing refuses it. */
static void pend_step(gpuipc_meet *m, struct pend *q)
{
    uint8_t want[GPUIPC_MEET_ANSWER_LEN];
    char why[160];
    uint32_t p, c;
    ssize_t n;

    do
        n = recv(q->fd, q->answer + q->got, sizeof(q->answer) - q->got, MSG_DONTWAIT);
    while (n < 0 && errno == EINTR);
    if (n > 0)
        q->got += (size_t)n;
    if (q->got < sizeof(q->answer)) {
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK))
            pend_drop(m, q, "it closed without answering the challenge (no rank of this job)");
        else if (gpuipc_clock_ns() >= q->until)
            pend_drop(m, q, "no answer to the challenge within 5 s (no rank of this job)");
        return;
    }
    p = u32_at(q->answer);
    c = u32_at(q->answer + 4);
    if (c == m->self && p == m->self) {
        /* A rank elsewhere asking whether this one runs (probe_mark): not
         * a stranger where its mark holds. */
        probe_mark(m->key, m->self, want);
        if (!gpuipc_ct_equal(want, q->answer, sizeof(want))) {
            pend_drop(m, q, "its probe's mark does not hold under the job's token (not of "
                      "this job)");
            return;
        }
        pthread_mutex_lock(&m->mu);
        m->probes++;
        pthread_mutex_unlock(&m->mu);
        pend_drop(m, q, NULL);
        return;
    }
    answer_mac(m->key, q->nonce, p, c, want);
    if (!gpuipc_ct_equal(want, q->answer + 8, GPUIPC_SHA256_LEN)) {
        pend_drop(m, q, "its answer to the challenge does not hold under the job's token "
                  "(not of this job, or a replay)");
        return;
    }
    if (c != m->self || p >= m->size || p == m->self || !m->remote[p]) {
        snprintf(why, sizeof(why), "its answer, for rank %u to rank %u, is for no pair of "
                 "this rank with a rank of another node", p, c);
        pend_drop(m, q, why);
        return;
    }
    /* Met: a refusal at its listener from now on says it has ended. */
    pthread_mutex_lock(&m->mu);
    m->reached[p] = 1;
    pthread_mutex_unlock(&m->mu);
    (void)sort_rank(m, -1, (int)p, q->fd);
    q->fd = -1;
}

/* Takes every TCP connection that waits, and reads every answer that came. */
static void tcp_sweep(gpuipc_meet *m)
{
    char from[GPUIPC_TCP_TEXT_LEN];
    int fd, i;

    if (m->tcp_fd < 0)
        return;
    /* What came on the connections taken first: each answered one frees
     * its slot for those waiting in the backlog. */
    for (i = 0; i < GPUIPC_MEET_PENDING; i++)
        if (m->pend[i].fd >= 0)
            pend_step(m, &m->pend[i]);
    if (gpuipc_clock_ns() < m->tcp_stall)
        return;
    while ((fd = gpuipc_tcp_accept(m->tcp_fd, from, sizeof(from))) >= 0 || fd == -ECONNABORTED)
        if (fd >= 0)
            pend_add(m, fd, from);
    /* Out of FDs: the connection stays in the backlog, and the listener
     * readable; it is looked at again a slice later, not at once. */
    if (fd == -EMFILE || fd == -ENFILE)
        m->tcp_stall = gpuipc_clock_deadline((uint64_t)GPUIPC_MEET_SLICE_MS * 1000000ull);
}

/* endpoint's refusal of another uid: counted as any stranger. */
static void refused_uid(const char *why, const gpuipc_peer *peer, void *arg)
{
    (void)peer; /* why names it */
    note_refused(arg, why);
}

/* The end of one slice of a wait for who (rank peer): it has ended, the
 * deadline has passed, or the wait goes on (0). */
static int slice_over(gpuipc_meet *m, uint32_t peer, const char *who, const char *doing,
                      uint64_t deadline_ns, gpuipc_err *err)
{
    if (gpuipc_meet_ended(m, peer) && m->remote[peer]) {
        char name[GPUIPC_TCP_TEXT_LEN];

        gpuipc_tcp_text(&m->raddr[peer], name, sizeof(name));
        return gpuipc_err_set(err, GPUIPC_MEET_GONE, "hello: %s is gone: its TCP listener %s "
                              "refuses connections (its process has ended, or a firewall "
                              "rejects the port)", who, name);
    }
    if (gpuipc_clock_ms_left(deadline_ns) == 0 && m->remote[peer])
        return gpuipc_err_set(err, -ETIMEDOUT, "hello: timed out %s %s, on another node: it "
                              "did not come before the deadline (its process ended, it is "
                              "stuck in an earlier pair or far slower, or a firewall between "
                              "the nodes drops the connection; its own output says which)",
                              doing, who);
    if (gpuipc_meet_ended(m, peer))
        return gpuipc_err_set(err, GPUIPC_MEET_GONE, "hello: %s is gone: its process (pid %d "
                              "by its card) has ended (killed, crashed, or it exited; the "
                              "launcher's output and the node's log say why)", who,
                              (int)m->pid[peer]);
    if (gpuipc_clock_ms_left(deadline_ns) == 0)
        return gpuipc_err_set(err, -ETIMEDOUT, "hello: timed out %s %s: it is alive but did "
                              "not come before the deadline (it is stuck in an earlier pair, "
                              "or far slower; raise --timeout, or see its own output)", doing,
                              who);
    return 0;
}

static uint64_t slice_end(uint64_t deadline_ns)
{
    uint64_t next = gpuipc_clock_deadline((uint64_t)GPUIPC_MEET_SLICE_MS * 1000000ull);

    return next < deadline_ns ? next : deadline_ns;
}

/* Says GO on fd: this side is at the pair now. Returns 0, or -1 where the
 * producer has given up on it (the connection is closed then). */
static int say_go(int fd)
{
    ssize_t n;

    do
        n = send(fd, GPUIPC_MEET_GO, strlen(GPUIPC_MEET_GO), MSG_NOSIGNAL | MSG_DONTWAIT);
    while (n < 0 && errno == EINTR);
    if (n == (ssize_t)strlen(GPUIPC_MEET_GO))
        return 0;
    close(fd);
    return -1;
}

/* Sorts out a connection just accepted from cred: a rank's other than
 * peer's is held for its pair, a stranger's refused and counted. Returns
 * 1 where it is peer's (fd is the caller's), else 0 (fd taken care of). */
static int sort_rank(gpuipc_meet *m, int peer, int r, int fd)
{
    if (r == peer)
        return 1;
    /* A rank that reached its later pair with this one early: held until
     * that pair comes, when it hears GO (a second connection of it
     * replaces the first, which it gave up on). */
    if (m->held[r] >= 0)
        close(m->held[r]);
    m->held[r] = fd;
    return 0;
}

static int sort_out(gpuipc_meet *m, int peer, int fd, const gpuipc_peer *cred)
{
    char why[160];
    int r = rank_of(m, cred->pid);

    if (r >= 0)
        return sort_rank(m, peer, r, fd);
    close(fd);
    snprintf(why, sizeof(why), "refused a connection from pid %d (uid %u): no rank of this "
             "job (no card names that pid)", (int)cred->pid, (unsigned)cred->uid);
    note_refused(m, why);
    return 0;
}

void gpuipc_meet_sweep(gpuipc_meet *m)
{
    gpuipc_peer cred;
    gpuipc_err err;
    int fd;

    while ((fd = gpuipc_endpoint_accept(&m->ep, -1, 0, refused_uid, m, &cred, &err)) >= 0)
        (void)sort_out(m, -1, fd, &cred);
    tcp_sweep(m);
}

/* Waits until one of m's listeners or unanswered connections has something,
 * until deadline_ns. Returns 0, or -EINTR for a stop. */
static int wait_listeners(gpuipc_meet *m, uint64_t deadline_ns)
{
    struct pollfd p[3 + GPUIPC_MEET_PENDING];
    nfds_t n = 0;
    int i;

    p[n++] = (struct pollfd){.fd = gpuipc_stop_fd(), .events = POLLIN};
    p[n++] = (struct pollfd){.fd = m->ep.fd, .events = POLLIN};
    if (m->tcp_fd >= 0 && gpuipc_clock_ns() >= m->tcp_stall)
        p[n++] = (struct pollfd){.fd = m->tcp_fd, .events = POLLIN};
    for (i = 0; i < GPUIPC_MEET_PENDING; i++)
        if (m->pend[i].fd >= 0)
            p[n++] = (struct pollfd){.fd = m->pend[i].fd, .events = POLLIN};
    if (gpuipc_stop_signal())
        return -EINTR;
    gpuipc_watch_call("poll");
    /* An unanswered connection's time runs out in a slice at most. */
    (void)poll(p, n, (int)gpuipc_clock_ms_left(deadline_ns));
    gpuipc_watch_call(NULL);
    return gpuipc_stop_signal() ? -EINTR : 0;
}

int gpuipc_meet_accept(gpuipc_meet *m, uint32_t peer, const char *who, uint64_t deadline_ns,
                       gpuipc_peer *cred, gpuipc_err *err)
{
    int fd;

    if (peer >= m->size || peer == m->self || (m->pid[peer] <= 0 && !m->remote[peer]))
        return gpuipc_err_set(err, -EINVAL, "hello: %s is not a rank this one can meet", who);
    for (;;) {
        /* What came meanwhile: strangers refused, ranks held for their
         * pairs, this pair's among them. */
        gpuipc_meet_sweep(m);
        if (m->held[peer] >= 0) {
            fd = m->held[peer];
            m->held[peer] = -1;
            if (say_go(fd) == 0) {
                cred->pid = m->remote[peer] ? 0 : m->pid[peer];
                cred->uid = geteuid();
                return fd;
            }
            continue;
        }
        if ((fd = slice_over(m, peer, who, "waiting for", deadline_ns, err)) < 0)
            return fd;
        if (wait_listeners(m, slice_end(deadline_ns)) < 0)
            return gpuipc_err_set(err, -EINTR, "hello: interrupted by a signal while waiting "
                                  "for %s", who);
    }
}

/* The producer's wait on fd for the consumer's GO, until deadline_ns while
 * peer runs. Returns 0; 1 where the connection ended first (the consumer
 * let it go: it is tried again while the consumer runs); or a negative
 * errno with err. */
static int await_go(gpuipc_meet *m, uint32_t peer, int fd, const char *who,
                    uint64_t deadline_ns, gpuipc_err *err)
{
    const size_t go = strlen(GPUIPC_MEET_GO);
    char buf[64];
    size_t have = 0;
    int rc;

    for (;;) {
        struct pollfd p[2] = {{.fd = fd, .events = POLLIN},
                              {.fd = gpuipc_stop_fd(), .events = POLLIN}};
        ssize_t n;

        if (gpuipc_stop_signal())
            return gpuipc_err_set(err, -EINTR, "hello: interrupted by a signal while waiting "
                                  "for %s", who);
        gpuipc_watch_call("poll");
        rc = poll(p, p[1].fd >= 0 ? 2 : 1, (int)gpuipc_clock_ms_left(slice_end(deadline_ns)));
        gpuipc_watch_call(NULL);
        if (rc < 0 && errno != EINTR)
            return gpuipc_err_set(err, -errno, "hello: poll: %s", strerror(errno));
        if (rc > 0 && p[0].revents != 0) {
            /* A stream (TCP) may bring GO in parts, and the session's
             * first frame right after it: exactly GO's bytes are read. */
            n = recv(fd, buf + have, m->remote[peer] ? go - have : sizeof(buf), MSG_DONTWAIT);
            if (n > 0 && m->remote[peer] && (have += (size_t)n) < go)
                continue;
            if (n > 0 && m->remote[peer])
                n = (ssize_t)have;
            if (n == (ssize_t)go && memcmp(buf, GPUIPC_MEET_GO, go) == 0)
                return 0;
            if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
                return 1;
            if (n > 0)
                return gpuipc_err_set(err, -EPROTO, "hello: %s said %zd bytes, not GO, at the "
                                      "rendezvous", who, n);
            continue;
        }
        if ((rc = slice_over(m, peer, who, "waiting at the pair for", deadline_ns, err)) < 0)
            return rc;
    }
}

/* Answers the challenge of the listener at fd, rank peer's, as this rank,
 * until deadline_ns. Returns 0; 1 where the connection ended first (tried
 * again); or a negative errno with err. */
static int answer(gpuipc_meet *m, uint32_t peer, int fd, const char *who, const char *name,
                  uint64_t deadline_ns, gpuipc_err *err)
{
    uint8_t challenge[GPUIPC_MEET_CHALLENGE_LEN], ans[GPUIPC_MEET_ANSWER_LEN];
    size_t got;
    ssize_t n;
    int rc;

    rc = gpuipc_tcp_read_exact(fd, challenge, sizeof(challenge), deadline_ns, &got);
    if (rc == -EPIPE)
        return 1;
    if (rc == -EINTR)
        return gpuipc_err_set(err, -EINTR, "hello: interrupted by a signal while connecting "
                              "to %s", who);
    if (rc < 0)
        return gpuipc_err_set(err, rc, "hello: %s's TCP listener sent %zu of the %zu bytes of "
                              "its challenge: %s", who, got, sizeof(challenge),
                              rc == -ETIMEDOUT ? "no more before the deadline"
                                               : strerror(-rc));
    if (make_answer(m->key, challenge, m->self, peer, ans) < 0)
        return gpuipc_err_set(err, -EPROTO, "hello: refused %s's TCP listener %s: its "
                              "challenge is not gpuipc_test's (another program listens at "
                              "that port)", who, name);
    pthread_mutex_lock(&m->mu);
    m->reached[peer] = 1;
    pthread_mutex_unlock(&m->mu);
    do
        n = send(fd, ans, sizeof(ans), MSG_NOSIGNAL | MSG_DONTWAIT);
    while (n < 0 && errno == EINTR);
    return n == (ssize_t)sizeof(ans) ? 0 : 1;
}

/* The producer's side with a rank of another node: its TCP listener, the
 * challenge answered, then GO awaited as on this node. */
static int connect_tcp(gpuipc_meet *m, uint32_t peer, const char *who, uint64_t deadline_ns,
                       gpuipc_peer *cred, gpuipc_err *err)
{
    char name[GPUIPC_TCP_TEXT_LEN];
    int fd, rc;

    gpuipc_tcp_text(&m->raddr[peer], name, sizeof(name));
    if (m->raddr[peer].len == 0)
        return gpuipc_err_set(err, -ENOTCONN, "hello: %s, on another node, publishes no TCP "
                              "listener (its own output says why: choose its network with "
                              "--ranks-net)", who);
    if (m->clash[peer])
        return gpuipc_err_set(err, -EADDRINUSE, "hello: %s, on another node, publishes %s, "
                              "an address of this machine too (a NAT or bridge address every "
                              "node has): it cannot be dialled there; choose the network the "
                              "nodes share with --ranks-net or GPUIPC_RANKS_NET", who, name);
    cred->pid = 0;
    cred->uid = 0;
    for (;;) {
        fd = gpuipc_tcp_connect(&m->raddr[peer], slice_end(deadline_ns), err);
        if (fd == -ECONNREFUSED && m->reached[peer]) {
            pthread_mutex_lock(&m->mu);
            m->ended[peer] = 1;
            pthread_mutex_unlock(&m->mu);
            return gpuipc_err_set(err, GPUIPC_MEET_GONE, "hello: %s is gone: its TCP listener "
                                  "%s, reached before, refuses connections now (its process "
                                  "has ended)", who, name);
        }
        if (fd == -ECONNREFUSED)
            return gpuipc_err_set(err, -ECONNREFUSED, "hello: %s's TCP listener %s refuses "
                                  "connections, and was never reached: nothing listens at that "
                                  "address and port (its process ended early, or the address "
                                  "is another machine's: choose the network with "
                                  "--ranks-net), or a firewall rejects the port", who, name);
        if (fd == -ETIMEDOUT) {
            if ((fd = slice_over(m, peer, who, "connecting to", deadline_ns, err)) < 0)
                return fd;
            continue;
        }
        if (fd < 0) {
            gpuipc_err_prefix(err, "hello: %s", who);
            return fd;
        }
        if ((rc = answer(m, peer, fd, who, name, deadline_ns, err)) == 0 &&
            (rc = await_go(m, peer, fd, who, deadline_ns, err)) == 0)
            return fd;
        close(fd);
        if (rc < 0)
            return rc;
        if ((rc = slice_over(m, peer, who, "connecting to", deadline_ns, err)) < 0)
            return rc;
    }
}

int gpuipc_meet_connect(gpuipc_meet *m, uint32_t peer, const char *name, const char *who,
                        uint64_t deadline_ns, gpuipc_peer *cred, gpuipc_err *err)
{
    int fd, rc;

    if (peer >= m->size || peer == m->self || (m->pid[peer] <= 0 && !m->remote[peer]))
        return gpuipc_err_set(err, -EINVAL, "hello: %s is not a rank this one can meet", who);
    if (m->remote[peer])
        return connect_tcp(m, peer, who, deadline_ns, cred, err);
    for (;;) {
        fd = gpuipc_endpoint_connect(name, -1, slice_end(deadline_ns), cred, err);
        if (fd == -EPERM)
            return gpuipc_err_set(err, -EPERM, "hello: refused %s's listener %s: its process "
                                  "(pid %d) runs as uid %u, not as this rank's user (uid %u), "
                                  "and would take this rank's memory; the ranks of one job run "
                                  "as one user", who, name, (int)cred->pid,
                                  (unsigned)cred->uid, (unsigned)geteuid());
        if (fd == -ETIMEDOUT) {
            if ((fd = slice_over(m, peer, who, "connecting to", deadline_ns, err)) < 0)
                return fd;
            continue;
        }
        if (fd < 0)
            return fd;
        if (cred->pid != m->pid[peer] || gpuipc_meet_ended(m, peer)) {
            close(fd);
            if (gpuipc_meet_ended(m, peer))
                return gpuipc_err_set(err, GPUIPC_MEET_GONE, "hello: %s is gone: its process "
                                      "(pid %d by its card) has ended, and another process "
                                      "(pid %d, perhaps its number used again) holds its name "
                                      "%s now", who, (int)m->pid[peer], (int)cred->pid, name);
            return gpuipc_err_set(err, -EACCES, "hello: refused the process at %s's name %s: "
                                  "it is pid %d (uid %u), and %s is pid %d by its card", who,
                                  name, (int)cred->pid, (unsigned)cred->uid, who,
                                  (int)m->pid[peer]);
        }
        /* Connected: the consumer may be at an earlier pair still; its GO
         * says it is at this one. */
        rc = await_go(m, peer, fd, who, deadline_ns, err);
        if (rc == 0)
            return fd;
        close(fd);
        if (rc < 0)
            return rc;
    }
}

size_t gpuipc_meet_held(const gpuipc_meet *m, int *fds, size_t max)
{
    size_t n = 0;
    uint32_t r;

    for (r = 0; r < m->size; r++)
        if (m->held[r] >= 0) {
            if (n < max)
                fds[n] = m->held[r];
            n++;
        }
    for (r = 0; r < GPUIPC_MEET_PENDING; r++)
        if (m->pend[r].fd >= 0) {
            if (n < max)
                fds[n] = m->pend[r].fd;
            n++;
        }
    return n;
}

unsigned gpuipc_meet_refused(gpuipc_meet *m, char *first, size_t len)
{
    unsigned n;

    pthread_mutex_lock(&m->mu);
    snprintf(first, len, "%s", m->refused > 0 ? m->first : "");
    n = m->refused;
    pthread_mutex_unlock(&m->mu);
    return n;
}

void gpuipc_meet_close(gpuipc_meet *m)
{
    uint32_t r;

    if (m == NULL)
        return;
    if (m->ep.fd >= 0)
        gpuipc_endpoint_close(&m->ep);
    if (m->tcp_fd >= 0)
        close(m->tcp_fd);
    for (r = 0; r < GPUIPC_MEET_PENDING; r++)
        if (m->pend[r].fd >= 0)
            close(m->pend[r].fd);
    explicit_bzero(m->key, sizeof(m->key));
    for (r = 0; r < m->size && m->ready; r++) {
        if (m->pidfd[r] >= 0)
            close(m->pidfd[r]);
        if (m->held[r] >= 0)
            close(m->held[r]);
    }
    free(m->pid);
    free(m->pidfd);
    free(m->ended);
    free(m->held);
    free(m->remote);
    free(m->raddr);
    free(m->probed);
    free(m->reached);
    free(m->clash);
    pthread_mutex_destroy(&m->mu);
    free(m);
}
