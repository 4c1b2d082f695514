/* SPDX-License-Identifier: Apache-2.0 */
/* stop.c: the stop channel that carries a stop signal to every process of the run. */
#include "core/stop.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>

#include "core/err.h"
#include "core/status.h"

/* The stop signal this process learned of, or 0. */
static volatile sig_atomic_t stop_sig;

/* The stop channel: [0] is polled and peeked (never read: every process and
 * every wait sees the first stop), [1] is written by the handlers. */
static int stop_chan[2] = {-1, -1};

int gpuipc_stop_open(gpuipc_err *err)
{
    if (stop_chan[0] >= 0)
        return 0;
    if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, stop_chan) < 0)
        return gpuipc_err_sys(err, "socketpair", errno, "the stop channel: socketpair: %s",
                              strerror(errno));
    return 0;
}

void gpuipc_stop_raise(int sig)
{
    unsigned char b = (unsigned char)sig;
    int saved = errno;

    if (stop_sig == 0)
        stop_sig = sig;
    if (stop_chan[1] >= 0)
        (void)!send(stop_chan[1], &b, 1, MSG_DONTWAIT | MSG_NOSIGNAL);
    errno = saved;
}

int gpuipc_stop_signal(void)
{
    unsigned char b;

    if (stop_sig != 0 || stop_chan[0] < 0)
        return stop_sig;
    if (recv(stop_chan[0], &b, 1, MSG_PEEK | MSG_DONTWAIT) == 1 && b != 0)
        stop_sig = b;
    return stop_sig;
}

const char *gpuipc_stop_fail_word(void)
{
    return gpuipc_status_word(gpuipc_stop_signal() != 0 ? GPUIPC_STOPPED : GPUIPC_FAIL);
}

int gpuipc_stop_fd(void)
{
    return stop_chan[0];
}
