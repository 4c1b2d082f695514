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
#include "core/stop.h"
#include "core/watch.h"
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
     * alone touches held and the listener). */
    pthread_mutex_t mu;
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
    pthread_mutex_init(&m->mu, NULL);
    m->size = size;
    m->self = self;
    m->pid = calloc(size, sizeof(*m->pid));
    m->pidfd = calloc(size, sizeof(*m->pidfd));
    m->ended = calloc(size, 1);
    m->held = calloc(size, sizeof(*m->held));
    if (m->pid == NULL || m->pidfd == NULL || m->ended == NULL || m->held == NULL) {
        gpuipc_err_set(err, -ENOMEM, "its listener: out of memory for %u ranks", size);
        goto fail;
    }
    for (r = 0; r < size; r++)
        m->pidfd[r] = m->held[r] = -1;
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

int gpuipc_meet_ended(gpuipc_meet *m, uint32_t rank)
{
    int ended;

    if (rank >= m->size || rank == m->self)
        return 0;
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
static int sort_out(gpuipc_meet *m, int peer, int fd, const gpuipc_peer *cred)
{
    char why[160];
    int r = rank_of(m, cred->pid);

    if (r >= 0 && r == peer)
        return 1;
    if (r >= 0) {
        /* A rank that reached its later pair with this one early: held
         * until that pair comes, when it hears GO (a second connection of
         * it replaces the first, which it gave up on). */
        if (m->held[r] >= 0)
            close(m->held[r]);
        m->held[r] = fd;
        return 0;
    }
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
}

int gpuipc_meet_accept(gpuipc_meet *m, uint32_t peer, const char *who, uint64_t deadline_ns,
                       gpuipc_peer *cred, gpuipc_err *err)
{
    int fd;

    if (peer >= m->size || peer == m->self || m->pid[peer] <= 0)
        return gpuipc_err_set(err, -EINVAL, "hello: %s is not a rank this one can meet", who);
    /* What came meanwhile first: strangers are refused now, not left
     * queued while this rank serves a connection it holds. */
    gpuipc_meet_sweep(m);
    if (m->held[peer] >= 0) {
        /* It came early, and has waited since for GO. */
        fd = m->held[peer];
        m->held[peer] = -1;
        if (say_go(fd) == 0) {
            cred->pid = m->pid[peer];
            cred->uid = geteuid();
            return fd;
        }
    }
    for (;;) {
        fd = gpuipc_endpoint_accept(&m->ep, -1, slice_end(deadline_ns), refused_uid, m, cred,
                                    err);
        if (fd == -ETIMEDOUT) {
            if ((fd = slice_over(m, peer, who, "waiting for", deadline_ns, err)) < 0)
                return fd;
            continue;
        }
        if (fd < 0)
            return fd;
        if (sort_out(m, (int)peer, fd, cred) && say_go(fd) == 0)
            return fd;
    }
}

/* The producer's wait on fd for the consumer's GO, until deadline_ns while
 * peer runs. Returns 0; 1 where the connection ended first (the consumer
 * let it go: it is tried again while the consumer runs); or a negative
 * errno with err. */
static int await_go(gpuipc_meet *m, uint32_t peer, int fd, const char *who,
                    uint64_t deadline_ns, gpuipc_err *err)
{
    char buf[64];
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
            n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
            if (n == (ssize_t)strlen(GPUIPC_MEET_GO) &&
                memcmp(buf, GPUIPC_MEET_GO, (size_t)n) == 0)
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

int gpuipc_meet_connect(gpuipc_meet *m, uint32_t peer, const char *name, const char *who,
                        uint64_t deadline_ns, gpuipc_peer *cred, gpuipc_err *err)
{
    int fd, rc;

    if (peer >= m->size || peer == m->self || m->pid[peer] <= 0)
        return gpuipc_err_set(err, -EINVAL, "hello: %s is not a rank this one can meet", who);
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
    for (r = 0; r < m->size && m->pidfd != NULL && m->held != NULL; r++) {
        if (m->pidfd[r] >= 0)
            close(m->pidfd[r]);
        if (m->held[r] >= 0)
            close(m->held[r]);
    }
    free(m->pid);
    free(m->pidfd);
    free(m->ended);
    free(m->held);
    pthread_mutex_destroy(&m->mu);
    free(m);
}
