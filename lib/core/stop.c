/* SPDX-License-Identifier: Apache-2.0 */
/* stop.c: the stop channel that carries a stop signal to every process of
 * the run, and what the program's signal handlers know of this process. */
#include "core/stop.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>

#include "core/err.h"
#include "core/status.h"

/* What a signal handler of this process reads or writes, all of it here: a
 * handler gets no argument of the program's, so whatever it needs has to be
 * reachable without one, and this is the one place the program keeps such
 * state (the layers above keep theirs on the run objects they pass). The
 * handlers are the stop signals' (SIGINT, SIGTERM, SIGHUP), the consumer's
 * parent-death SIGTERM, and the deadline's watchdog, which does what a
 * handler does. A field a handler writes is a volatile sig_atomic_t; the
 * others are written outside the handlers, a pointer with the stop signals
 * blocked where a handler may read it half-written. */
static struct stop_state {
    /* The stop signal this process learned of, or 0. */
    volatile sig_atomic_t sig;
    /* The stop channel: [0] is polled and peeked (never read: every
     * process and every wait sees the first stop), [1] is written by the
     * handlers. */
    int chan[2];
    /* How many stop signals this process received from outside the run
     * (not stops passed on by another process of it). */
    volatile sig_atomic_t received;
    /* The other processes of the forked run, which a stop is passed on to:
     * the consumers (producer side), or the producer (consumer side); -1:
     * none. */
    pid_t peers[2];
    /* The forked mode's producer (this process, on the producer's side);
     * 0 with --serve, --connect and --ranks. */
    pid_t parent;
    /* The socket file --serve made, while it waits for a consumer: an
     * endpoint (wire/endpoint.h) that this layer keeps for the handlers
     * without knowing it; NULL otherwise. removed: a handler or the
     * watchdog removed its file. */
    const void *volatile file;
    volatile sig_atomic_t file_removed;
    /* The consumer's role, for the parent-death report: the step it is in
     * and whether it already said why its connection broke (its env's
     * fields); NULL before the role starts. */
    const volatile sig_atomic_t *role_step;
    const volatile sig_atomic_t *role_lost_reported;
    /* Set while the program runs its scenarios through Check: Check's own
     * SIGINT and SIGTERM handlers are kept out (app/check_shim.c). */
    volatile sig_atomic_t shield;
} st = {.chan = {-1, -1}, .peers = {-1, -1}};

int gpuipc_stop_open(gpuipc_err *err)
{
    if (st.chan[0] >= 0)
        return 0;
    if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, st.chan) < 0)
        return gpuipc_err_sys(err, "socketpair", errno, "the stop channel: socketpair: %s",
                              strerror(errno));
    return 0;
}

void gpuipc_stop_raise(int sig)
{
    unsigned char b = (unsigned char)sig;
    int saved = errno;

    if (st.sig == 0)
        st.sig = sig;
    if (st.chan[1] >= 0)
        (void)!send(st.chan[1], &b, 1, MSG_DONTWAIT | MSG_NOSIGNAL);
    errno = saved;
}

int gpuipc_stop_signal(void)
{
    unsigned char b;

    if (st.sig != 0 || st.chan[0] < 0)
        return st.sig;
    if (recv(st.chan[0], &b, 1, MSG_PEEK | MSG_DONTWAIT) == 1 && b != 0)
        st.sig = b;
    return st.sig;
}

const char *gpuipc_stop_fail_word(void)
{
    return gpuipc_status_word(gpuipc_stop_signal() != 0 ? GPUIPC_STOPPED : GPUIPC_FAIL);
}

int gpuipc_stop_fd(void)
{
    return st.chan[0];
}

int gpuipc_stop_count_received(void)
{
    return st.received++;
}

void gpuipc_stop_set_peers(pid_t a, pid_t b)
{
    st.peers[0] = a;
    st.peers[1] = b;
}

void gpuipc_stop_forget_peer(pid_t pid)
{
    int i;

    for (i = 0; i < 2; i++)
        if (st.peers[i] == pid)
            st.peers[i] = -1;
}

pid_t gpuipc_stop_peer(int i)
{
    return i >= 0 && i < 2 ? st.peers[i] : -1;
}

void gpuipc_stop_set_parent(pid_t pid)
{
    st.parent = pid;
}

pid_t gpuipc_stop_parent(void)
{
    return st.parent;
}

void gpuipc_stop_set_file(const void *file)
{
    st.file = file;
}

const void *gpuipc_stop_file(void)
{
    return st.file;
}

void gpuipc_stop_file_gone(void)
{
    st.file_removed = 1;
}

int gpuipc_stop_file_removed(void)
{
    return st.file_removed;
}

void gpuipc_stop_set_role(const volatile sig_atomic_t *step,
                          const volatile sig_atomic_t *lost_reported)
{
    st.role_step = step;
    st.role_lost_reported = lost_reported;
}

int gpuipc_stop_role_step(void)
{
    return st.role_step != NULL ? *st.role_step : 0;
}

int gpuipc_stop_role_lost_reported(void)
{
    return st.role_lost_reported != NULL && *st.role_lost_reported;
}

void gpuipc_stop_shield(int on)
{
    st.shield = on;
}

int gpuipc_stop_shielded(void)
{
    return st.shield;
}
