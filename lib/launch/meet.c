/* SPDX-License-Identifier: Apache-2.0 */
/* meet.c: the presence socket of a rank, and the rendezvous of a pair's
 * session (meet.h says how), over wire/endpoint's abstract sockets. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/names.h"
#include "launch/meet.h"

/* An abstract name, "@x", as a sockaddr_un (the '@' becomes the NUL). */
static socklen_t abstract_addr(struct sockaddr_un *a, const char *name)
{
    size_t n = strlen(name);

    memset(a, 0, sizeof(*a));
    a->sun_family = AF_UNIX;
    if (n > sizeof(a->sun_path))
        n = sizeof(a->sun_path);
    memcpy(a->sun_path, name, n);
    a->sun_path[0] = '\0';
    return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n);
}

int gpuipc_meet_present(gpuipc_meet_presence *p, const char *endpoint, gpuipc_err *err)
{
    struct sockaddr_un a;
    socklen_t alen;
    int fd, e;

    p->fd = -1;
    snprintf(p->name, sizeof(p->name), "%s", endpoint);
    if (endpoint[0] != '@' || strlen(endpoint) >= sizeof(a.sun_path))
        return gpuipc_err_set(err, -EINVAL, "presence %s: not an abstract socket name",
                              endpoint);
    alen = abstract_addr(&a, endpoint);
    if ((fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0)) < 0)
        return gpuipc_err_set(err, -errno, "presence %s: socket AF_UNIX SOCK_SEQPACKET: %s",
                              endpoint, strerror(errno));
    /* A queue of one: probes are never accepted; once it is full a probe
     * gets EAGAIN, which says alive as well. */
    if (bind(fd, (struct sockaddr *)&a, alen) < 0 || listen(fd, 0) < 0) {
        e = errno;
        close(fd);
        return gpuipc_err_set(err, -e, "presence %s: %s: %s%s", endpoint,
                              e == EADDRINUSE ? "bind" : "bind or listen", strerror(e),
                              e == EADDRINUSE ? " (another process holds this rank's name: "
                              "a rank of the same job started twice?)" : "");
    }
    p->fd = fd;
    return 0;
}

void gpuipc_meet_absent(gpuipc_meet_presence *p)
{
    if (p->fd >= 0)
        close(p->fd);
    p->fd = -1;
}

int gpuipc_meet_alive(const char *endpoint, int *why_errno)
{
    struct sockaddr_un a;
    socklen_t alen = abstract_addr(&a, endpoint);
    int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    int rc, e;

    if (fd < 0) {
        *why_errno = errno;
        return -1;
    }
    rc = connect(fd, (struct sockaddr *)&a, alen);
    e = errno;
    close(fd);
    if (rc == 0 || e == EAGAIN || e == EINPROGRESS)
        return 1;
    if (e == ECONNREFUSED || e == ENOENT)
        return 0;
    *why_errno = e;
    return -1;
}

void gpuipc_meet_pair_name(const char *token_hex, uint32_t p, uint32_t c, char *buf,
                           size_t len)
{
    snprintf(buf, len, "@gpuipc-%.32s-%u-%u", token_hex, p, c);
}

/* The end of one slice of a wait for who: the peer is gone, the deadline
 * has passed, or the wait goes on (0). */
static int slice_over(const char *peer_endpoint, const char *who, const char *doing,
                      uint64_t deadline_ns, gpuipc_err *err)
{
    int e = 0, alive = gpuipc_meet_alive(peer_endpoint, &e);

    if (alive == 0)
        return gpuipc_err_set(err, GPUIPC_MEET_GONE, "hello: %s is gone: its presence "
                              "socket %s is closed, so its process has ended (killed, "
                              "crashed, or it exited; the launcher's output and the node's "
                              "log say why)", who, peer_endpoint);
    if (gpuipc_clock_ms_left(deadline_ns) == 0)
        return gpuipc_err_set(err, -ETIMEDOUT, "hello: timed out %s %s: it is alive%s but "
                              "did not come before the deadline (it is stuck in an earlier "
                              "pair, or far slower; raise --timeout, or see its own output)",
                              doing, who, alive < 0 ? " (or not known: a probe failed)" : "");
    (void)e;
    return 0;
}

static uint64_t slice_end(uint64_t deadline_ns)
{
    uint64_t next = gpuipc_clock_deadline((uint64_t)GPUIPC_MEET_SLICE_MS * 1000000ull);

    return next < deadline_ns ? next : deadline_ns;
}

int gpuipc_meet_accept(const char *name, const char *peer_endpoint, const char *who,
                       uint64_t deadline_ns, gpuipc_peer *peer, gpuipc_err *err)
{
    gpuipc_endpoint ep;
    int rc;

    if ((rc = gpuipc_endpoint_listen(&ep, name, err)) < 0)
        return rc;
    for (;;) {
        rc = gpuipc_endpoint_accept(&ep, -1, slice_end(deadline_ns), NULL, NULL, peer, err);
        if (rc >= 0 || rc != -ETIMEDOUT)
            break;
        if ((rc = slice_over(peer_endpoint, who, "waiting for", deadline_ns, err)) < 0)
            break;
    }
    gpuipc_endpoint_close(&ep);
    return rc;
}

int gpuipc_meet_connect(const char *name, const char *peer_endpoint, const char *who,
                        uint64_t deadline_ns, gpuipc_peer *peer, gpuipc_err *err)
{
    int rc;

    for (;;) {
        rc = gpuipc_endpoint_connect(name, -1, slice_end(deadline_ns), peer, err);
        if (rc >= 0 || rc != -ETIMEDOUT)
            return rc;
        if ((rc = slice_over(peer_endpoint, who, "connecting to", deadline_ns, err)) < 0)
            return rc;
    }
}
