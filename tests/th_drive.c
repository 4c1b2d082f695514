/* SPDX-License-Identifier: Apache-2.0 */
/* th_drive.c: a role's environment, a scenario, a lying consumer and raw
 * frames, for suites that drive the library in-process (th_drive.h). */
#include "th_drive.h"
#include "core/clock.h"
#include "core/step.h"
#include "mech/memfd.h"
#include "session/consumer.h"
#include "wire/endpoint.h"

#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

void th_scenario(gpuipc_env *env, gpuipc_wire *w, const gpuipc_mech *mech, uint64_t size,
                 unsigned index, gpuipc_result *res)
{
    gpuipc_scenario_ask ask = {.mech = mech, .size = size, .index = index};

    gpuipc_producer_scenario(env, w, &ask, res);
}

void th_env(gpuipc_env *env, int role, const char *name, uint64_t timeout_ns)
{
    memset(env, 0, sizeof(*env));
    env->role = role;
    env->log.role = role;
    env->log.level = GPUIPC_LOG_QUIET;
    env->log.t0_ns = gpuipc_clock_ns();
    env->log.fd = memfd_create(name, MFD_CLOEXEC);
    env->timeout_ns = timeout_ns;
}

void th_lying_consumer(const char *path, gpuipc_wire_tamper_fn fn, void *arg,
                       const char *log_name, uint64_t timeout_ns)
{
    const gpuipc_mech *mechs[] = {&gpuipc_mech_memfd};
    gpuipc_session_end end;
    gpuipc_peer peer;
    gpuipc_env env;
    gpuipc_wire *w;
    gpuipc_err e;
    int fd;

    th_env(&env, GPUIPC_ROLE_CONSUMER, log_name, timeout_ns);
    fd = gpuipc_endpoint_connect(path, -1, gpuipc_clock_deadline(timeout_ns), &peer, &e);
    if (fd < 0 || gpuipc_wire_open(&w, fd, "producer", &e) < 0)
        _exit(3);
    env.cred_pid = peer.pid > 0 ? peer.pid : -1;
    gpuipc_wire_set_tamper(w, fn, arg);
    gpuipc_consumer_serve(&env, w, mechs, 1, &end);
    gpuipc_wire_close(w);
    _exit(0);
}

ssize_t th_send_raw(int sock, const void *buf, size_t len, const int *fds, int nfds)
{
    union {
        struct cmsghdr align;
        char buf[CMSG_SPACE(253 * sizeof(int))];
    } ctrl;
    struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};
    struct msghdr mh;

    memset(&mh, 0, sizeof(mh));
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    if (nfds > 0) {
        struct cmsghdr *cm;

        memset(&ctrl, 0, sizeof(ctrl));
        mh.msg_control = ctrl.buf;
        mh.msg_controllen = CMSG_SPACE((size_t)nfds * sizeof(int));
        cm = CMSG_FIRSTHDR(&mh);
        cm->cmsg_level = SOL_SOCKET;
        cm->cmsg_type = SCM_RIGHTS;
        cm->cmsg_len = CMSG_LEN((size_t)nfds * sizeof(int));
        memcpy(CMSG_DATA(cm), fds, (size_t)nfds * sizeof(int));
    }
    return sendmsg(sock, &mh, MSG_NOSIGNAL);
}
