/* SPDX-License-Identifier: Apache-2.0 */
/* process.c: what every process of the program shares: how a stop signal
 * ends it (130, 143), the FDs it had when it started, a role's environment,
 * and the test hooks' faults carried out. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "app/cuda/process.h"
#include "core/account.h"
#include "core/err.h"
#include "core/proc.h"
#include "core/status.h"
#include "core/step.h"
#include "core/stop.h"
#include "gpu/cudrv.h"
#include "wire/endpoint.h"

void gpuipc_app_sock_publish(const gpuipc_endpoint *ep)
{
    sigset_t stops, old;

    sigemptyset(&stops);
    sigaddset(&stops, SIGINT);
    sigaddset(&stops, SIGTERM);
    sigaddset(&stops, SIGHUP);
    sigprocmask(SIG_BLOCK, &stops, &old);
    gpuipc_stop_set_file(ep != NULL && ep->file ? ep : NULL);
    sigprocmask(SIG_SETMASK, &old, NULL);
}

void gpuipc_app_sock_unlink(void)
{
    /* Published by gpuipc_app_sock_publish: an endpoint. */
    const gpuipc_endpoint *ep = gpuipc_stop_file();

    if (ep != NULL && !gpuipc_stop_file_removed()) {
        gpuipc_endpoint_unlink(ep);
        gpuipc_stop_file_gone();
    }
}

/* SIGINT (Ctrl-C), SIGTERM and SIGHUP stop the session: every wait, in this
 * process and in every process of the run, ends with the signal's name, each
 * role releases what it holds, and the process exits 128 + the signal. The
 * stop channel carries the signal to the other processes of the run and
 * wakes their waits; a SIGINT passed on to them wakes one that is in a
 * pause or a blocking call too (always SIGINT: a SIGTERM from the producer
 * is how the consumer learns of its death). A passed-on SIGINT only makes a
 * process look at the channel, and does not count as a second signal; a
 * second signal from outside the run ends the process at once.
 * Async-signal-safe; errno is kept. */
void gpuipc_app_on_stop(int sig, const siginfo_t *info)
{
    int saved = errno, i;
    pid_t peer;

    if (info != NULL && info->si_code == SI_USER && sig == SIGINT &&
        (info->si_pid == gpuipc_stop_peer(0) || info->si_pid == gpuipc_stop_peer(1))) {
        gpuipc_stop_signal(); /* the channel says which signal */
        errno = saved;
        return;
    }
    gpuipc_app_sock_unlink();
    if (gpuipc_stop_count_received() > 0)
        _exit(128 + sig);
    gpuipc_stop_raise(sig);
    for (i = 0; i < 2; i++)
        if ((peer = gpuipc_stop_peer(i)) > 0)
            kill(peer, SIGINT);
    errno = saved;
}

static void on_stop(int sig, siginfo_t *info, void *context)
{
    (void)context;
    gpuipc_app_on_stop(sig, info);
}

void gpuipc_app_catch_stop_signals(void)
{
    struct sigaction sa;

    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = on_stop; /* no SA_RESTART: a blocking call returns EINTR */
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    /* A wait for a process ends soon after a stop, too. */
    gpuipc_proc_set_stop_test(gpuipc_stop_signal);
}

/* Blocks (1) or unblocks (0) the stop signals in this process. A signal
 * that arrives while they are blocked is delivered when they are unblocked. */
void gpuipc_app_block_stop_signals(int block)
{
    sigset_t set;

    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    sigprocmask(block ? SIG_BLOCK : SIG_UNBLOCK, &set, NULL);
}

/* The exit code once the session is over: 128 + the stop signal if one came. */
int gpuipc_app_stop_code(int code)
{
    int sig = gpuipc_stop_signal();

    return sig != 0 ? 128 + sig : code;
}

/* The FDs open when the program started (p->fds). A process that never
 * loaded the CUDA driver must end with exactly these (the driver keeps FDs
 * of its own open until exit, so a process that loaded it relies on the
 * per-scenario accounting instead). */
void gpuipc_app_note_fds_at_start(gpuipc_app_proc *p)
{
    gpuipc_err err;

    /* --ranks notes them again once its job is set up (PMIx, its listener),
     * and at each pair (the connections held for later pairs). */
    if (p->have_fds)
        gpuipc_account_free(&p->fds);
    p->have_fds = gpuipc_account_snapshot(&p->fds, &err) == 0;
}

void gpuipc_app_proc_free(gpuipc_app_proc *p)
{
    if (p->have_fds)
        gpuipc_account_free(&p->fds);
    p->have_fds = 0;
}

/* Counts the FDs this process holds now that it did not hold when the
 * program started, leaving out the connections keep[0] and keep[1] (-1:
 * none), and names them in why. 0 in a process that loaded the CUDA driver. */
size_t gpuipc_app_fds_since_start(const gpuipc_app_proc *p, const int keep[2], gpuipc_err *why)
{
    gpuipc_fds now;
    size_t i, j, n;

    if (p == NULL || !p->have_fds || gpuipc_cu.driver_version != 0 ||
        gpuipc_account_snapshot(&now, why) < 0)
        return 0;
    for (i = j = 0; i < now.n; i++)
        if (now.fd[i] != keep[0] && now.fd[i] != keep[1])
            now.fd[j++] = now.fd[i];
    now.n = j;
    n = gpuipc_account_leaks(&p->fds, &now, why);
    gpuipc_account_free(&now);
    if (n > 0) {
        char text[GPUIPC_ERR_LEN];

        snprintf(text, sizeof(text), "%.440s (open now, not when the program started)",
                 why->msg);
        snprintf(why->msg, sizeof(why->msg), "%s", text);
    }
    return n;
}

/* A consumer's last check: the FDs of a process that never loaded CUDA, at
 * the end of its session, its connection aside. */
size_t gpuipc_app_last_check_fds(const gpuipc_app_proc *p, gpuipc_wire *w, gpuipc_err *why)
{
    const int keep[2] = {w != NULL ? gpuipc_wire_fd(w) : -1, -1};

    return gpuipc_app_fds_since_start(p, keep, why);
}

/* Returns code, or GPUIPC_FAIL after naming the FDs this process leaked. */
int gpuipc_app_check_fds_at_exit(const gpuipc_app_proc *p, const gpuipc_log *log, int code)
{
    gpuipc_fds now;
    gpuipc_err e;

    if (p == NULL || !p->have_fds || gpuipc_cu.driver_version != 0 ||
        gpuipc_account_snapshot(&now, &e) < 0)
        return code;
    if (gpuipc_account_leaks(&p->fds, &now, &e) > 0) {
        gpuipc_log_step(log, GPUIPC_LOG_QUIET, NULL, GPUIPC_STEP_BYE, GPUIPC_LOG_NO_TIME,
                        "%s at exit: %s (open now, not when the program started)",
                        gpuipc_status_word(GPUIPC_FAIL), e.msg);
        if (code == GPUIPC_PASS || code == GPUIPC_SKIP)
            code = GPUIPC_FAIL;
    } else {
        gpuipc_log_step(log, GPUIPC_LOG_VERBOSE, NULL, GPUIPC_STEP_BYE, GPUIPC_LOG_NO_TIME,
                        "at exit: %zu FDs open, the same as at the start", now.n);
    }
    gpuipc_account_free(&now);
    return code;
}


/* Carries out a fault injected by GPUIPC_FAULT: the library decides when,
 * the program decides how a process ends. */
static void act_fault(gpuipc_env *env, gpuipc_wire *w, int action, unsigned step)
{
    gpuipc_log_step(&env->log, GPUIPC_LOG_QUIET, NULL, step, GPUIPC_LOG_NO_TIME,
                    "FAULT INJECTED: %s at %s (GPUIPC_FAULT test hook)",
                    gpuipc_inject_action_name(action), gpuipc_step_name(step));
    switch (action) {
    case GPUIPC_FAULT_EXIT:
        _exit(GPUIPC_FAIL);
    case GPUIPC_FAULT_KILL:
        raise(SIGKILL);
        break;
    case GPUIPC_FAULT_HANG:
        /* Stuck until killed, or until a stop signal (Ctrl-C) ends every
         * wait, this one too: a poll of the stop channel, which a stop
         * raised in any process of the run makes readable (a pause() would
         * miss a signal that lands just before it). */
        gpuipc_watch_call("GPUIPC_FAULT hang");
        while (gpuipc_stop_signal() == 0) {
            struct pollfd p = {.fd = gpuipc_stop_fd(), .events = POLLIN};

            if (p.fd < 0)
                pause();
            else
                poll(&p, 1, -1);
        }
        gpuipc_watch_call(NULL);
        break;
    case GPUIPC_FAULT_CORRUPT:
    case GPUIPC_FAULT_EXTRA_FDS:
        /* The failure of the send, if any, shows at this role's next step. */
        if (w != NULL)
            gpuipc_wire_send_fault(w, action == GPUIPC_FAULT_CORRUPT
                                                  ? GPUIPC_WIRE_FAULT_CORRUPT
                                                  : GPUIPC_WIRE_FAULT_EXTRA_FDS,
                                   gpuipc_clock_deadline(env->timeout_ns), step, NULL);
        break;
    case GPUIPC_FAULT_WEDGE:
        gpuipc_watch_arm_wedge();
        break;
    case GPUIPC_FAULT_CLOSE:
        if (w != NULL)
            shutdown(gpuipc_wire_fd(w), SHUT_RDWR);
        break;
    default:
        break;
    }
}

void gpuipc_app_env_init(gpuipc_env *env, int role, const gpuipc_options *o,
                     const gpuipc_inject *inject, uint64_t t0)
{
    memset(env, 0, sizeof(*env));
    env->role = role;
    env->log.role = role;
    env->log.level = o->level;
    env->log.t0_ns = t0;
    env->log.fd = 1;
    env->timeout_ns = o->timeout_ns;
    env->inject = *inject;
    env->act = act_fault;
    env->cred_pid = 0; /* the forked mode's; --serve, --connect and --ranks set the peer's */
    env->session_check = 1;
}
