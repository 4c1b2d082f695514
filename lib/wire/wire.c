/* SPDX-License-Identifier: Apache-2.0 */
/* wire.c: one end of a connection: messages sent and received under deadlines,
 * as datagrams with FDs passed as SCM_RIGHTS or as length-prefixed frames on a
 * stream, the test-only lies and fault frames, and why a connection became
 * unusable. */
#include "wire/wire.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/account.h"
#include "core/clock.h"
#include "core/names.h"
#include "core/sha256.h"
#include "core/step.h"
#include "core/stop.h"
#include "core/watch.h"
#include "wire/frame.h"

/* On a stream, each frame is preceded by its length: 4 bytes, little-endian. */
#define STREAM_PREFIX_LEN 4

struct gpuipc_wire {
    int fd;
    int stream;        /* a SOCK_STREAM socket (TCP): frames carry their length */
    uint32_t sent;     /* sequence number of the last message sent */
    uint32_t received; /* sequence number of the last message received */
    char peer[16];
    char broken[GPUIPC_ERR_LEN];
    gpuipc_wire_tamper_fn tamper; /* test-only: a lying peer */
    void *tamper_arg;
    int sealed;        /* gpuipc_wire_seal: the frames carry a MAC under key */
    uint8_t key[GPUIPC_WIRE_KEY_LEN];
    uint8_t my_role, peer_role;
};

int gpuipc_wire_open(gpuipc_wire **out, int fd, const char *peer, gpuipc_err *err)
{
    gpuipc_wire *w = calloc(1, sizeof(*w));
    socklen_t tlen = sizeof(int);
    int type = 0;

    if (w == NULL)
        return gpuipc_err_set(err, -ENOMEM, "wire: out of memory");
    w->fd = fd;
    /* A stream keeps no message boundaries, so the wire frames on it; what is
     * not a socket (a test's pipe or file) is taken as today's datagrams. */
    w->stream = getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tlen) == 0 && type == SOCK_STREAM;
    snprintf(w->peer, sizeof(w->peer), "%s", peer);
    *out = w;
    return 0;
}

void gpuipc_wire_set_tamper(gpuipc_wire *w, gpuipc_wire_tamper_fn fn, void *arg)
{
    w->tamper = fn;
    w->tamper_arg = arg;
}

void gpuipc_wire_seal(gpuipc_wire *w, const uint8_t key[GPUIPC_WIRE_KEY_LEN], int my_role,
                      int peer_role)
{
    memcpy(w->key, key, sizeof(w->key));
    w->my_role = (uint8_t)my_role;
    w->peer_role = (uint8_t)peer_role;
    w->sealed = 1;
}

int gpuipc_wire_sealed(const gpuipc_wire *w)
{
    return w->sealed;
}

int gpuipc_wire_stream(const gpuipc_wire *w)
{
    return w->stream;
}

/* The seal of the len bytes at frame and the nfds FDs that go with it, as
 * role sends them under w's key. An FD stands in it for the file it opens
 * (its device and inode, which SCM_RIGHTS keeps): a relay that swaps the
 * memory a frame hands over breaks the seal as surely as one that alters a
 * byte. */
static void seal_of(const gpuipc_wire *w, uint8_t role, const uint8_t *frame, size_t len,
                    const int *fds, unsigned nfds, uint8_t out[GPUIPC_WIRE_SEAL_LEN])
{
    uint8_t full[GPUIPC_SHA256_LEN];
    gpuipc_hmac h;
    unsigned i;

    gpuipc_hmac_init(&h, w->key, sizeof(w->key));
    gpuipc_hmac_update(&h, &role, 1);
    gpuipc_hmac_update(&h, frame, len);
    for (i = 0; i < nfds; i++) {
        struct stat st;
        uint64_t id[2] = {0, 0};

        if (fstat(fds[i], &st) == 0) {
            id[0] = (uint64_t)st.st_dev;
            id[1] = (uint64_t)st.st_ino;
        }
        gpuipc_hmac_update(&h, id, sizeof(id));
    }
    gpuipc_hmac_final(&h, full);
    memcpy(out, full, GPUIPC_WIRE_SEAL_LEN);
    explicit_bzero(full, sizeof(full));
}

void gpuipc_wire_close(gpuipc_wire *w)
{
    if (w == NULL)
        return;
    if (w->fd >= 0)
        close(w->fd);
    explicit_bzero(w->key, sizeof(w->key));
    free(w);
}

int gpuipc_wire_fd(const gpuipc_wire *w)
{
    return w->fd;
}

const char *gpuipc_wire_broken(const gpuipc_wire *w)
{
    return w->broken[0] ? w->broken : NULL;
}

void gpuipc_wire_close_fds(int *fds, unsigned n)
{
    unsigned i;

    for (i = 0; i < n; i++) {
        if (fds[i] >= 0)
            close(fds[i]);
        fds[i] = -1;
    }
}

/* Records err as the reason the wire is unusable and returns rc. */
static int wire_fail(gpuipc_wire *w, int rc, gpuipc_err *err)
{
    snprintf(w->broken, sizeof(w->broken), "%s", err ? err->msg : "failed");
    return rc;
}

static int peer_gone(gpuipc_wire *w, unsigned step, const char *how, gpuipc_err *err)
{
    gpuipc_err_set(err, -EPIPE, "peer gone during %s: the %s %s", gpuipc_step_name(step),
                   w->peer, how);
    return wire_fail(w, -EPIPE, err);
}

static int timed_out(gpuipc_wire *w, unsigned step, const char *what, gpuipc_err *err)
{
    char where[256];
    int role = strstr(w->peer, "producer") != NULL ? GPUIPC_ROLE_PRODUCER : GPUIPC_ROLE_CONSUMER;
    int seen;

    /* Forked, the status page both share says where the silent one is, and
     * whether it is stopped. */
    seen = gpuipc_watch_describe(role, where, sizeof(where));
    if (seen == 2)
        gpuipc_err_set(err, -ETIMEDOUT,
                       "timed out during %s: %s the %s within --timeout; the %s is %s (the "
                       "status page both share): it runs no further until it is resumed",
                       gpuipc_step_name(step), what, w->peer, w->peer, where);
    else if (seen)
        gpuipc_err_set(err, -ETIMEDOUT,
                       "timed out during %s: %s the %s within --timeout; the %s is %s (the "
                       "status page both share): stuck there, or slow (then raise --timeout)",
                       gpuipc_step_name(step), what, w->peer, w->peer, where);
    else
        gpuipc_err_set(err, -ETIMEDOUT,
                       "timed out during %s: %s the %s within --timeout (the %s may be stuck; "
                       "raise --timeout if it is only slow)",
                       gpuipc_step_name(step), what, w->peer, w->peer);
    return wire_fail(w, -ETIMEDOUT, err);
}

static int unusable(const gpuipc_wire *w, gpuipc_err *err)
{
    return gpuipc_err_set(err, -EPIPE, "connection unusable since: %s", w->broken);
}

/* Waits for events on fd until deadline_ns, and for a stop. Returns what
 * poll() did for fd (its revents in *revents): 1, 0 at the deadline, -1 with
 * errno (EINTR included), or -2 for a stop. */
static int wait_for(int fd, short events, uint64_t deadline_ns, short *revents)
{
    struct pollfd p[2] = {{.fd = fd, .events = events},
                          {.fd = gpuipc_stop_fd(), .events = POLLIN}};
    int rc;

    *revents = 0;
    if (gpuipc_stop_signal())
        return -2;
    gpuipc_watch_call("poll");
    rc = poll(p, p[1].fd >= 0 ? 2 : 1, gpuipc_clock_ms_left(deadline_ns));
    gpuipc_watch_call(NULL);
    gpuipc_watch_checkpoint();
    if (rc > 0 && p[1].revents != 0 && gpuipc_stop_signal())
        return -2;
    *revents = p[0].revents;
    return rc < 0 ? -1 : p[0].revents != 0;
}

/* A wait that a stop signal ended. */
static int stopped(gpuipc_wire *w, unsigned step, gpuipc_err *err)
{
    const char *name = gpuipc_sig_abbrev(gpuipc_stop_signal());

    gpuipc_err_set(err, -EINTR, "interrupted by SIG%s during %s", name ? name : "?",
                   gpuipc_step_name(step));
    return wire_fail(w, -EINTR, err);
}

/* After a send of what (by call) failed with errno e: waits for buffer
 * space where there was none. Returns 1 to send again, or the failure,
 * recorded on w. */
static int send_again(gpuipc_wire *w, int e, const char *call, uint64_t deadline_ns,
                      unsigned step, const char *what, gpuipc_err *err)
{
    short revents;
    int rc;

    if (e == EINTR)
        return 1;
    if (e == EPIPE || e == ECONNRESET || e == ENOTCONN)
        return peer_gone(w, step, e == EPIPE ? "closed the connection (EPIPE)"
                                             : "reset the connection (ECONNRESET)",
                         err);
    if (e != EAGAIN && e != EWOULDBLOCK) {
        gpuipc_err_set(err, -e, "%s %s during %s: %s", call, what, gpuipc_step_name(step),
                       strerror(e));
        return wire_fail(w, -e, err);
    }
    rc = wait_for(w->fd, POLLOUT, deadline_ns, &revents);
    if (rc == -2)
        return stopped(w, step, err);
    if (rc < 0 && errno != EINTR) {
        e = errno;
        gpuipc_err_set(err, -e, "poll during %s: %s", gpuipc_step_name(step), strerror(e));
        return wire_fail(w, -e, err);
    }
    if (rc == 0)
        return timed_out(w, step, "no room to send to", err);
    return 1;
}

/* Sends one encoded frame of len bytes with nfds FDs as one datagram. */
static int send_datagram(gpuipc_wire *w, const uint8_t *buf, size_t len, const int *fds,
                         unsigned nfds, uint64_t deadline_ns, unsigned step, const char *what,
                         gpuipc_err *err)
{
    union {
        struct cmsghdr align;
        char buf[CMSG_SPACE(GPUIPC_WIRE_MAX_FDS * sizeof(int))];
    } ctrl;
    struct iovec iov;
    struct msghdr mh;
    ssize_t n;
    int rc;

    memset(&mh, 0, sizeof(mh));
    iov.iov_base = (void *)buf;
    iov.iov_len = len;
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    if (nfds > 0) {
        struct cmsghdr *cm;

        memset(&ctrl, 0, sizeof(ctrl));
        mh.msg_control = ctrl.buf;
        mh.msg_controllen = CMSG_SPACE(nfds * sizeof(int));
        cm = CMSG_FIRSTHDR(&mh);
        cm->cmsg_level = SOL_SOCKET;
        cm->cmsg_type = SCM_RIGHTS;
        cm->cmsg_len = CMSG_LEN(nfds * sizeof(int));
        memcpy(CMSG_DATA(cm), fds, nfds * sizeof(int));
    }

    for (;;) {
        if (gpuipc_stop_signal())
            return stopped(w, step, err);
        n = sendmsg(w->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n >= 0)
            break;
        rc = send_again(w, errno, "sendmsg", deadline_ns, step, what, err);
        if (rc < 0)
            return rc;
    }
    if ((size_t)n != len) {
        gpuipc_err_set(err, -EIO, "sendmsg %s during %s: sent %zd of %zu bytes", what,
                       gpuipc_step_name(step), n, len);
        return wire_fail(w, -EIO, err);
    }
    return 0;
}

/* Sends one encoded frame of len bytes on a stream, after its length, as
 * much at a time as the socket takes. A deadline part-way leaves half a
 * frame on the stream, so it breaks the wire like any timeout. */
static int send_stream(gpuipc_wire *w, const uint8_t *frame, size_t len, uint64_t deadline_ns,
                       unsigned step, const char *what, gpuipc_err *err)
{
    uint8_t buf[STREAM_PREFIX_LEN + GPUIPC_WIRE_MAX_MSG];
    size_t total = STREAM_PREFIX_LEN + len, done = 0;
    ssize_t n;
    int rc;

    buf[0] = (uint8_t)len;
    buf[1] = (uint8_t)(len >> 8);
    buf[2] = (uint8_t)(len >> 16);
    buf[3] = (uint8_t)(len >> 24);
    memcpy(buf + STREAM_PREFIX_LEN, frame, len);
    while (done < total) {
        if (gpuipc_stop_signal())
            return stopped(w, step, err);
        n = send(w->fd, buf + done, total - done, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n >= 0) {
            done += (size_t)n;
            continue;
        }
        rc = send_again(w, errno, "send", deadline_ns, step, what, err);
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* Sends one encoded frame of len bytes (at most GPUIPC_WIRE_MAX_MSG) with
 * nfds FDs, waiting for buffer space until deadline_ns. what names it in
 * messages. */
static int send_frame(gpuipc_wire *w, const uint8_t *buf, size_t len, const int *fds,
                      unsigned nfds, uint64_t deadline_ns, unsigned step, const char *what,
                      gpuipc_err *err)
{
    int rc;

    /* The caller's mistake, found before a byte is sent: the wire stays
     * usable. */
    if (w->stream && nfds > 0)
        return gpuipc_err_set(err, -EINVAL, "send %s: a TCP connection carries no FDs (%u given)",
                              what, nfds);
    if (w->stream)
        rc = send_stream(w, buf, len, deadline_ns, step, what, err);
    else
        rc = send_datagram(w, buf, len, fds, nfds, deadline_ns, step, what, err);
    if (rc == 0)
        w->sent++;
    return rc;
}

int gpuipc_wire_send(gpuipc_wire *w, gpuipc_msg *msg, const int *fds, uint64_t deadline_ns,
                     unsigned step, gpuipc_err *err)
{
    uint8_t buf[GPUIPC_WIRE_MAX_MSG];
    unsigned nfds = msg->nfds;
    size_t len;
    int rc;

    if (w->broken[0])
        return unusable(w, err);
    if (msg->nfds > GPUIPC_WIRE_MAX_FDS)
        return gpuipc_err_set(err, -EINVAL, "send %s: %u FDs exceed the %d a message carries",
                              gpuipc_wire_type_name(msg->type), msg->nfds,
                              GPUIPC_WIRE_MAX_FDS);
    if (w->tamper != NULL) {
        gpuipc_msg lie = *msg;

        w->tamper(&lie, w->tamper_arg);
        /* A lie may leave FDs behind (a failed offer carries none), never
         * add one the caller does not hold. */
        if (lie.nfds < nfds)
            nfds = lie.nfds;
        lie.nfds = (uint16_t)nfds;
        len = gpuipc_wire_encode(&lie, w->sent + 1, buf, sizeof(buf));
    } else {
        len = gpuipc_wire_encode(msg, w->sent + 1, buf, sizeof(buf));
    }
    if (len == 0)
        return gpuipc_err_set(err, -EINVAL, "send: cannot encode message type %u", msg->type);
    if (w->sealed) {
        if (len + GPUIPC_WIRE_SEAL_LEN > sizeof(buf))
            return gpuipc_err_set(err, -EINVAL, "send %s: no room for its seal",
                                  gpuipc_wire_type_name(msg->type));
        seal_of(w, w->my_role, buf, len, fds, nfds, buf + len);
        len += GPUIPC_WIRE_SEAL_LEN;
    }
    rc = send_frame(w, buf, len, fds, nfds, deadline_ns, step,
                    gpuipc_wire_type_name(msg->type), err);
    if (rc == 0)
        msg->seq = w->sent;
    return rc;
}

int gpuipc_wire_send_fault(gpuipc_wire *w, int kind, uint64_t deadline_ns, unsigned step,
                           gpuipc_err *err)
{
    uint8_t buf[GPUIPC_WIRE_MAX_MSG];
    int fds[2] = {-1, -1};
    gpuipc_msg msg;
    size_t len;
    int rc;

    if (w->broken[0])
        return unusable(w, err);
    memset(&msg, 0, sizeof(msg));
    msg.type = GPUIPC_MSG_HELLO;
    msg.u.hello.pid = (uint32_t)getpid();
    msg.u.hello.role = GPUIPC_ROLE_PRODUCER; /* either: the frame is refused for its FDs or magic */
    if (kind == GPUIPC_WIRE_FAULT_EXTRA_FDS) {
        fds[0] = open("/dev/null", O_RDONLY | O_CLOEXEC);
        fds[1] = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (fds[0] < 0 || fds[1] < 0) {
            rc = gpuipc_err_set(err, -errno, "open /dev/null: %s", strerror(errno));
            gpuipc_wire_close_fds(fds, 2);
            return rc;
        }
        msg.nfds = 2;
    }
    len = gpuipc_wire_encode(&msg, w->sent + 1, buf, sizeof(buf));
    if (len == 0) {
        gpuipc_wire_close_fds(fds, 2);
        return gpuipc_err_set(err, -EINVAL, "send: cannot encode the fault frame");
    }
    if (kind == GPUIPC_WIRE_FAULT_CORRUPT)
        buf[0] ^= 0xff; /* the magic */
    rc = send_frame(w, buf, len, fds, msg.nfds, deadline_ns, step,
                    kind == GPUIPC_WIRE_FAULT_CORRUPT ? "a corrupt frame" : "HELLO with 2 FDs",
                    err);
    gpuipc_wire_close_fds(fds, 2);
    return rc;
}

/* Collects the FDs of every SCM_RIGHTS header into fds and reports the
 * first foreign control message, if any. Returns the FD count. */
static unsigned collect_fds(struct msghdr *mh, int *fds, char *foreign, size_t flen)
{
    struct cmsghdr *cm;
    unsigned n = 0;

    foreign[0] = '\0';
    for (cm = CMSG_FIRSTHDR(mh); cm != NULL; cm = CMSG_NXTHDR(mh, cm)) {
        if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS) {
            size_t k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
            size_t i;

            for (i = 0; i < k; i++) {
                int fd;

                memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
                if (n < GPUIPC_WIRE_MAX_FDS)
                    fds[n++] = fd;
                else
                    close(fd);
            }
        } else if (foreign[0] == '\0') {
            snprintf(foreign, flen, "level %d type %d%s", cm->cmsg_level, cm->cmsg_type,
                     (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_CREDENTIALS)
                         ? " (SCM_CREDENTIALS)" : "");
        }
    }
    return n;
}

/* MSG_CTRUNC: the kernel installed only arrived of the FDs the header
 * announces, and dropped the rest. The FDs that arrived are still open. */
static int describe_ctrunc(unsigned step, unsigned arrived, unsigned announced,
                           gpuipc_err *err)
{
    struct rlimit rl;
    unsigned free_slots;

    if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
        rl.rlim_cur = RLIM_INFINITY;
    if (rl.rlim_cur == RLIM_INFINITY)
        return gpuipc_err_set(err, -EMFILE,
                              "recvmsg during %s: control data truncated (MSG_CTRUNC): %u FDs "
                              "sent, %u arrived; the kernel dropped the rest (a security "
                              "module may have refused them)",
                              gpuipc_step_name(step), announced, arrived);
    /* The arrived FDs occupy slots that were free before the receive. */
    free_slots = gpuipc_account_free_below(rl.rlim_cur, UINT_MAX) + arrived;
    return gpuipc_err_set(err, -EMFILE,
                          "recvmsg during %s: control data truncated (MSG_CTRUNC): %u FDs "
                          "sent, %u arrived; the kernel dropped the rest because this "
                          "process's RLIMIT_NOFILE is %llu and only %u FD numbers were free "
                          "below it: raise it by at least %u (ulimit -n %llu)",
                          gpuipc_step_name(step), announced, arrived,
                          (unsigned long long)rl.rlim_cur, free_slots,
                          announced > free_slots ? announced - free_slots : 1,
                          (unsigned long long)rl.rlim_cur +
                              (announced > free_slots ? announced - free_slots : 1));
}

/* Waits until deadline_ns for something to read, a message of the types in
 * want. Returns 1 when there is, 0 to wait again (EINTR), or the failure,
 * recorded on w. revents gets what poll() said. */
static int recv_wait(gpuipc_wire *w, const char *want, uint64_t deadline_ns, unsigned step,
                     short *revents, gpuipc_err *err)
{
    int rc = wait_for(w->fd, POLLIN, deadline_ns, revents);

    if (rc == -2)
        return stopped(w, step, err);
    if (rc < 0) {
        int e = errno;

        if (e == EINTR)
            return 0;
        gpuipc_err_set(err, -e, "poll during %s: %s", gpuipc_step_name(step), strerror(e));
        return wire_fail(w, -e, err);
    }
    if (rc == 0) {
        char what[96];

        snprintf(what, sizeof(what), "no %s from", want);
        return timed_out(w, step, what, err);
    }
    if (*revents & POLLNVAL) {
        gpuipc_err_set(err, -EBADF, "poll during %s: socket %d is not open",
                       gpuipc_step_name(step), w->fd);
        return wire_fail(w, -EBADF, err);
    }
    return 1;
}

/* After a read (by call) failed with errno e: returns 0 to wait and read
 * again, or the failure, recorded on w. */
static int recv_again(gpuipc_wire *w, int e, const char *call, unsigned step, gpuipc_err *err)
{
    if (e == EINTR || e == EAGAIN || e == EWOULDBLOCK)
        return 0;
    if (e == ECONNRESET)
        return peer_gone(w, step, "reset the connection (ECONNRESET)", err);
    gpuipc_err_set(err, -e, "%s during %s: %s", call, gpuipc_step_name(step), strerror(e));
    return wire_fail(w, -e, err);
}

/* Reads exactly len bytes from the stream into buf, each read after a wait
 * under the one deadline, and never a byte more: the next frame stays in
 * the socket. whole says whether an EOF before the first byte is a clean
 * close (between frames) or half a frame. Returns 0 or the failure,
 * recorded on w. */
static int stream_read(gpuipc_wire *w, uint8_t *buf, size_t len, int whole, const char *want,
                       uint64_t deadline_ns, unsigned step, gpuipc_err *err)
{
    size_t got = 0;
    short revents;
    ssize_t n;
    int rc;

    while (got < len) {
        rc = recv_wait(w, want, deadline_ns, step, &revents, err);
        if (rc <= 0) {
            if (rc < 0)
                return rc;
            continue;
        }
        n = recv(w->fd, buf + got, len - got, MSG_DONTWAIT);
        if (n > 0) {
            got += (size_t)n;
        } else if (n == 0) {
            char how[128];

            if (whole && got == 0)
                return peer_gone(w, step, "closed the connection (EOF)", err);
            snprintf(how, sizeof(how), "closed the connection in the middle of a frame (EOF "
                     "after %zu of %zu bytes)", got, len);
            return peer_gone(w, step, how, err);
        } else {
            rc = recv_again(w, errno, "recv", step, err);
            if (rc < 0)
                return rc;
        }
    }
    return 0;
}

/* gpuipc_wire_recv on a stream: the length, then exactly the frame it
 * announces, handed to gpuipc_wire_take as a datagram without control data
 * would be. */
static int recv_stream(gpuipc_wire *w, const char *want, unsigned accept, gpuipc_msg *msg,
                       int *fds, uint64_t deadline_ns, unsigned step, gpuipc_err *err)
{
    uint8_t prefix[STREAM_PREFIX_LEN], buf[GPUIPC_WIRE_MAX_MSG];
    struct msghdr mh;
    uint32_t len;
    int rc;

    rc = stream_read(w, prefix, sizeof(prefix), 1, want, deadline_ns, step, err);
    if (rc < 0)
        return rc;
    len = (uint32_t)prefix[0] | (uint32_t)prefix[1] << 8 | (uint32_t)prefix[2] << 16 |
          (uint32_t)prefix[3] << 24;
    if (len < GPUIPC_WIRE_HEADER_LEN || len > GPUIPC_WIRE_MAX_MSG) {
        gpuipc_err_set(err, -EPROTO, "bad message from the %s during %s: a frame of %u bytes "
                       "announced on the stream (from %d to %d allowed)", w->peer,
                       gpuipc_step_name(step), len, GPUIPC_WIRE_HEADER_LEN, GPUIPC_WIRE_MAX_MSG);
        return wire_fail(w, -EPROTO, err);
    }
    rc = stream_read(w, buf, len, 0, want, deadline_ns, step, err);
    if (rc < 0)
        return rc;
    memset(&mh, 0, sizeof(mh));
    return gpuipc_wire_take(w, buf, len, &mh, 0, accept, msg, fds, step, err);
}

int gpuipc_wire_recv(gpuipc_wire *w, unsigned accept, gpuipc_msg *msg, int *fds,
                     uint64_t deadline_ns, unsigned step, gpuipc_err *err)
{
    uint8_t buf[GPUIPC_WIRE_MAX_MSG];
    union {
        struct cmsghdr align;
        char buf[CMSG_SPACE(GPUIPC_WIRE_MAX_FDS * sizeof(int))];
    } ctrl;
    char want[64];
    struct iovec iov;
    struct msghdr mh;
    short revents;
    ssize_t n;
    int rc;

    memset(msg, 0, sizeof(*msg));
    if (w->broken[0])
        return unusable(w, err);
    gpuipc_wire_describe_accept(accept, want, sizeof(want));
    if (w->stream)
        return recv_stream(w, want, accept, msg, fds, deadline_ns, step, err);
    for (;;) {
        rc = recv_wait(w, want, deadline_ns, step, &revents, err);
        if (rc < 0)
            return rc;
        if (rc == 0)
            continue;
        memset(&mh, 0, sizeof(mh));
        iov.iov_base = buf;
        iov.iov_len = sizeof(buf);
        mh.msg_iov = &iov;
        mh.msg_iovlen = 1;
        mh.msg_control = ctrl.buf;
        mh.msg_controllen = sizeof(ctrl.buf);
        n = recvmsg(w->fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
        if (n >= 0)
            break;
        rc = recv_again(w, errno, "recvmsg", step, err);
        if (rc < 0)
            return rc;
    }

    return gpuipc_wire_take(w, buf, (size_t)n, &mh, revents, accept, msg, fds, step, err);
}

int gpuipc_wire_take(gpuipc_wire *w, const uint8_t *buf, size_t n, struct msghdr *mh,
                     short revents, unsigned accept, gpuipc_msg *msg, int *fds, unsigned step,
                     gpuipc_err *err)
{
    char foreign[64];
    unsigned nfds;
    int rc;

    memset(msg, 0, sizeof(*msg));
    nfds = collect_fds(mh, fds, foreign, sizeof(foreign));
    if (n == 0 && nfds == 0 && (revents & (POLLHUP | POLLRDHUP | POLLERR)))
        return peer_gone(w, step, "closed the connection (EOF)", err);
    if (w->sealed && !(mh->msg_flags & MSG_TRUNC)) {
        uint8_t want[GPUIPC_WIRE_SEAL_LEN];

        /* Before anything of the frame is believed: its seal, over its bytes
         * and the files its FDs open. Where not all of its FDs arrived
         * (MSG_CTRUNC: this process's RLIMIT_NOFILE), it cannot be checked,
         * so nothing of the frame is taken. */
        if (mh->msg_flags & MSG_CTRUNC)
            rc = gpuipc_err_set(err, -EMFILE, "recvmsg during %s: control data truncated "
                                "(MSG_CTRUNC): %u FDs arrived, not all that came, so the "
                                "frame's seal cannot be checked (raise RLIMIT_NOFILE: ulimit "
                                "-n)", gpuipc_step_name(step), nfds);
        else if (n < GPUIPC_WIRE_HEADER_LEN + GPUIPC_WIRE_SEAL_LEN)
            rc = gpuipc_err_set(err, -EBADMSG, "bad message from the %s during %s: %zu "
                                "bytes, too few for a sealed frame (the session is sealed "
                                "since AUTH)", w->peer, gpuipc_step_name(step), n);
        else {
            seal_of(w, w->peer_role, buf, n - GPUIPC_WIRE_SEAL_LEN, fds, nfds, want);
            rc = gpuipc_ct_equal(want, buf + n - GPUIPC_WIRE_SEAL_LEN, sizeof(want))
                     ? 0
                     : gpuipc_err_set(err, -EBADMSG, "bad message from the %s during %s: "
                                      "its seal does not hold under the session's key "
                                      "(altered on the way, or not sent by the rank that "
                                      "proved the job's token at HELLO)", w->peer,
                                      gpuipc_step_name(step));
        }
        if (rc < 0) {
            gpuipc_wire_close_fds(fds, nfds);
            memset(msg, 0, sizeof(*msg));
            return wire_fail(w, rc, err);
        }
        n -= GPUIPC_WIRE_SEAL_LEN;
    }
    if ((mh->msg_flags & MSG_CTRUNC) && !(mh->msg_flags & MSG_TRUNC) && foreign[0] == '\0' &&
        n >= GPUIPC_WIRE_HEADER_LEN) {
        /* A sound message whose FDs did not all fit in this process: the
         * wire stays usable, so that the caller can report it and carry on. */
        unsigned announced = (unsigned)(buf[16] | (buf[17] << 8));

        rc = gpuipc_wire_decode(buf, n, announced, w->received + 1, accept, msg, err);
        if (rc == 0 && nfds < announced) {
            unsigned i;

            describe_ctrunc(step, nfds, announced, err);
            gpuipc_wire_close_fds(fds, nfds);
            for (i = 0; i < announced; i++)
                fds[i] = -1;
            w->received++;
            return -EMFILE;
        }
        if (rc == 0)
            rc = gpuipc_err_set(err, -EPROTO, "recvmsg during %s: control data truncated "
                                "(MSG_CTRUNC) although all %u FDs arrived",
                                gpuipc_step_name(step), nfds);
        else
            gpuipc_err_prefix(err, "bad message from the %s during %s (its FDs were "
                              "truncated too)", w->peer, gpuipc_step_name(step));
    } else if (mh->msg_flags & MSG_CTRUNC)
        rc = gpuipc_err_set(err, -EPROTO, "recvmsg during %s: control data truncated "
                            "(MSG_CTRUNC) on a malformed message", gpuipc_step_name(step));
    else if (mh->msg_flags & MSG_TRUNC)
        rc = gpuipc_err_set(err, -EPROTO, "recvmsg during %s: message truncated (MSG_TRUNC): "
                            "larger than %d bytes", gpuipc_step_name(step),
                            GPUIPC_WIRE_MAX_MSG);
    else if (foreign[0])
        rc = gpuipc_err_set(err, -EPROTO, "recvmsg during %s: unexpected control message %s "
                            "(only SOL_SOCKET/SCM_RIGHTS is accepted)",
                            gpuipc_step_name(step), foreign);
    else {
        rc = gpuipc_wire_decode(buf, n, nfds, w->received + 1, accept, msg, err);
        if (rc < 0)
            gpuipc_err_prefix(err, "bad message from the %s during %s", w->peer,
                              gpuipc_step_name(step));
    }
    if (rc < 0) {
        gpuipc_wire_close_fds(fds, nfds);
        memset(msg, 0, sizeof(*msg));
        return wire_fail(w, rc, err);
    }
    w->received++;
    return 0;
}
