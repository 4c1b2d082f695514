/* process.c: what every process of the program shares: how a stop signal
 * ends it (130, 143), the FDs it had when it started, a role's environment,
 * and the test hooks' faults carried out. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "app/cuda/app.h"
#include "core/account.h"
#include "core/step.h"
#include "gpu/cudrv.h"

/* The socket file --serve made while it waits for a consumer: a stop signal
 * removes it at once. */
char gpuipc_app_sock_path[108];

volatile sig_atomic_t gpuipc_app_sock_removed;

/* SIGINT (Ctrl-C) and SIGTERM stop the session: every wait ends with the
 * signal's name (gpuipc_wire_stop), each role releases what it holds, and
 * the process exits 128 + the signal. A second signal ends it at once. */
static void on_stop(int sig)
{
    if (gpuipc_app_sock_path[0] != '\0' && !gpuipc_app_sock_removed) {
        unlink(gpuipc_app_sock_path);
        gpuipc_app_sock_removed = 1;
    }
    if (gpuipc_wire_stop != 0)
        _exit(128 + sig);
    gpuipc_wire_stop = sig;
}

void gpuipc_app_catch_stop_signals(void)
{
    struct sigaction sa;

    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_stop; /* no SA_RESTART: a blocking call returns EINTR */
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

/* Blocks (1) or unblocks (0) SIGINT and SIGTERM in this process. A signal
 * that arrives while they are blocked is delivered when they are unblocked. */
void gpuipc_app_block_stop_signals(int block)
{
    sigset_t set;

    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigprocmask(block ? SIG_BLOCK : SIG_UNBLOCK, &set, NULL);
}

/* The exit code once the session is over: 128 + the stop signal if one came. */
int gpuipc_app_stop_code(int code)
{
    return gpuipc_wire_stop != 0 ? 128 + (int)gpuipc_wire_stop : code;
}

/* The FDs open when the program started. A process that never loaded the
 * CUDA driver must end with exactly these (the driver keeps FDs of its own
 * open until exit, so a process that loaded it relies on the per-scenario
 * accounting instead). */
static gpuipc_fds g_fds_at_start;

static int g_have_fds_at_start;

void gpuipc_app_note_fds_at_start(void)
{
    gpuipc_err err;

    g_have_fds_at_start = gpuipc_account_snapshot(&g_fds_at_start, &err) == 0;
}

/* Counts the FDs this process holds now that it did not hold when the
 * program started, leaving out the connections keep[0] and keep[1] (-1:
 * none), and names them in why. 0 in a process that loaded the CUDA driver. */
size_t gpuipc_app_fds_since_start(const int keep[2], gpuipc_err *why)
{
    gpuipc_fds now;
    size_t i, j, n;

    if (!g_have_fds_at_start || gpuipc_cu.driver_version != 0 ||
        gpuipc_account_snapshot(&now, why) < 0)
        return 0;
    for (i = j = 0; i < now.n; i++)
        if (now.fd[i] != keep[0] && now.fd[i] != keep[1])
            now.fd[j++] = now.fd[i];
    now.n = j;
    n = gpuipc_account_leaks(&g_fds_at_start, &now, why);
    gpuipc_account_free(&now);
    if (n > 0) {
        char text[GPUIPC_ERR_LEN];

        snprintf(text, sizeof(text), "%.440s (open now, not when the program started)",
                 why->msg);
        snprintf(why->msg, sizeof(why->msg), "%s", text);
    }
    return n;
}

/* env->last_check: the FDs of a process that never loaded CUDA, at the end
 * of its session, its connection aside. */
size_t gpuipc_app_last_check_fds(gpuipc_env *env, gpuipc_wire *w, gpuipc_err *why)
{
    const int keep[2] = {w != NULL ? gpuipc_wire_fd(w) : -1, -1};

    (void)env;
    return gpuipc_app_fds_since_start(keep, why);
}

/* Returns code, or GPUIPC_FAIL after naming the FDs this process leaked. */
int gpuipc_app_check_fds_at_exit(const gpuipc_log *log, int code)
{
    gpuipc_fds now;
    gpuipc_err e;

    if (!g_have_fds_at_start || gpuipc_cu.driver_version != 0 ||
        gpuipc_account_snapshot(&now, &e) < 0)
        return code;
    if (gpuipc_account_leaks(&g_fds_at_start, &now, &e) > 0) {
        gpuipc_log_step(log, GPUIPC_LOG_QUIET, NULL, GPUIPC_STEP_BYE, GPUIPC_LOG_NO_TIME,
                        "FAIL at exit: %s (open now, not when the program started)", e.msg);
        if (code == GPUIPC_PASS || code == GPUIPC_SKIP)
            code = GPUIPC_FAIL;
    } else {
        gpuipc_log_step(log, GPUIPC_LOG_VERBOSE, NULL, GPUIPC_STEP_BYE, GPUIPC_LOG_NO_TIME,
                        "at exit: %zu FDs open, the same as at the start", now.n);
    }
    gpuipc_account_free(&now);
    return code;
}

int gpuipc_app_cred_pid;     /* --serve/--connect: the peer's pid (gpuipc_env.cred_pid) */

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
         * wait, this one too. */
        while (gpuipc_wire_stop == 0)
            pause();
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
    env->cred_pid = gpuipc_app_cred_pid;
    env->session_check = 1;
}

const char *gpuipc_app_verdict_name(int code)
{
    return code == GPUIPC_PASS ? "PASS" : code == GPUIPC_SKIP ? "SKIP"
         : code == GPUIPC_USAGE ? "USAGE ERROR" : "FAIL";
}
