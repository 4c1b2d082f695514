/* gpuipc_test.c: the program. It proves that GPU memory sharing between
 * processes works here by moving real bytes both ways, and says so through
 * its exit code and Check's reports.
 *
 *   main     parse the command line; socketpair(SOCK_SEQPACKET); fork, before
 *            any CUDA call (a child forked after cuInit cannot use CUDA)
 *   parent   the producer: HELLO; cuInit and open --device; probe every
 *            selected mechanism; run each runnable one as a Check test
 *            (CK_NOFORK: this process holds the CUDA context); BYE; reap the
 *            consumer within the deadline; print the summary
 *   child    the consumer: PR_SET_PDEATHSIG; serve scenario after scenario
 *            until BYE; exit 0 only if its side of every scenario passed */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/account.h"
#include "bench/cuda/bandwidth.h"
#include "bench/bench.h"
#include "bench/cuda/bench_run.h"
#include "core/clock.h"
#include "session/consumer.h"
#include "gpu/cudrv.h"
#include "wire/endpoint.h"
#include "session/env.h"
#include "gpu/gpu.h"
#include "mech/imex.h"
#include "session/inject.h"
#include "core/json.h"
#include "core/log.h"
#include "app/matrix.h"
#include "gpu/nvml.h"
#include "session/mech.h"
#include "app/options.h"
#include "core/proc.h"
#include "mech/pidfd.h"
#include "session/producer.h"
#include "session/report.h"
#include "core/step.h"
#include "core/units.h"
#include "wire/wire.h"

#define GPUIPC_VERSION "0.1.0"

/* The version of the --list --json document's layout (README: Capability
 * report). It changes whenever a field is renamed, removed or changes type. */
#define GPUIPC_LIST_SCHEMA_VERSION 1

/* How long a consumer may take to exit once the session broke. */
#define END_GRACE_NS (2ull * GPUIPC_NS_PER_S)

static const gpuipc_mech *const registry[] = {
    &gpuipc_mech_vmm,
    &gpuipc_mech_vmm_pidfd,
    &gpuipc_mech_vmm_chunks,
    &gpuipc_mech_vmm_offset,
    &gpuipc_mech_vmm_compressible,
    &gpuipc_mech_vmm_host_numa,
    &gpuipc_mech_vmm_alias,
    &gpuipc_mech_vmm_readonly,
    &gpuipc_mech_vmm_readonly_fault,
    &gpuipc_mech_legacy_ipc,
    &gpuipc_mech_mempool_ipc,
    &gpuipc_mech_fabric,
    &gpuipc_mech_memfd,
    &gpuipc_mech_memfd_chunks,
};
#define NMECH (sizeof(registry) / sizeof(registry[0]))

static void usage(FILE *out)
{
    size_t i;

    fprintf(out,
            "Usage: gpuipc_test [OPTIONS]\n"
            "\n"
            "Proves that GPU memory sharing between processes works on this machine. A\n"
            "producer process allocates and exports memory; a consumer process, forked\n"
            "from it before either touches CUDA, imports and maps it. The consumer checks\n"
            "the producer's pattern and writes its own, which the producer checks in turn.\n"
            "Each mechanism runs as a Check test; the exit status says whether all that\n"
            "ran passed.\n"
            "\n"
            "Options:\n"
            "  --size SIZE     bytes per scenario; suffixes K, M, G, T are powers of 1024\n"
            "                  (default 64M, larger than any GPU's L2 cache)\n"
            "  --device N      CUDA device ordinal of the producer (default 0); the\n"
            "                  consumer finds the same device by UUID\n"
            "  --chunks K      allocations of the chunked mechanisms, 1 to 65536\n"
            "                  (default 8): --size is split among them, each rounded up\n"
            "                  to the allocation granularity (at least one granule)\n"
            "  --only LIST     comma-separated mechanisms to run (default: every GPU\n"
            "                  mechanism)\n"
            "  --pairs LIST    run vmm between devices: the producer on GPU a, the\n"
            "                  consumer on GPU b, for 'all' ordered pairs or a list\n"
            "                  such as 0:1,1:0 (needs two or more GPUs)\n"
            "  --destructive   also run vmm-ro-fault: a kernel store into a read-only\n"
            "                  mapping must fault; it runs in a sacrificial consumer of\n"
            "                  its own, whose CUDA context the fault ruins\n"
            "  --require LIST  mechanisms that must run: a skip of one of them is a\n"
            "                  failure (exit 1), for pipelines that insist on them\n"
            "  --timeout SECS  deadline of every wait for the other process: 30, 2.5 or\n"
            "                  500ms (default 30)\n"
            "  --repeat N      run the scenario set N times in this process pair (a\n"
            "                  soak): after each round what each process holds (FDs,\n"
            "                  driver objects, shared memory, GPU memory by NVML) must\n"
            "                  be as after round 1; it stops at the first failure or\n"
            "                  drift\n"
            "  --serve PATH    two-terminal mode: be the producer, listening on the Unix\n"
            "                  socket PATH (mode 0600; its directory must be writable by\n"
            "                  its owner only) or @NAME (abstract namespace), for one\n"
            "                  consumer; the same scenarios and report, and both\n"
            "                  processes exit with the session's status\n"
            "  --connect PATH  two-terminal mode: be the consumer of the producer at PATH,\n"
            "                  waiting for it up to --timeout; the producer chooses\n"
            "                  --size, --only and the rest\n"
            "  --allow-uid UID with --serve or --connect: also admit a peer running as\n"
            "                  UID (otherwise only this user's processes may connect)\n"
            "  --fault-matrix  run every GPUIPC_FAULT step x action of both roles as a\n"
            "                  --serve/--connect pair of this program over --only (one\n"
            "                  mechanism, default vmm), and check that the survivor\n"
            "                  reports it in time and leaks nothing (--timeout default 2)\n"
            "  --list          report what this machine can do: driver, each GPU's\n"
            "                  attributes and granularity, RLIMIT_NOFILE, pidfd, IMEX,\n"
            "                  and whether each mechanism can run here (and why not)\n"
            "  --json [FILE]   with --list: the same report as a JSON document (on stdout,\n"
            "                  or in FILE); with --bench: every sample, the device, the\n"
            "                  driver, the options and the time, written to FILE\n"
            "  --bench         measure instead: 5 timed default runs, then per mechanism\n"
            "                  the latency of each step of sharing one allocation; the\n"
            "                  kernels' and a copy's bandwidth through imported and local\n"
            "                  memory at 64M, 1G and 4G; scaling with size (2M to 16G) and\n"
            "                  chunk count (1 to 4096); and with two or more GPUs every\n"
            "                  device pair. Markdown tables on stdout, progress on stderr;\n"
            "                  every measurement is a full scenario, checked both ways\n"
            "  --iters N       with --bench: timed runs per measurement, after a warm-up,\n"
            "                  1 to 1000 (default 20); tables give median (min-max)\n"
            "  -q, --quiet     print only failures and the summary\n"
            "  -v, --verbose   also print each driver call and its time\n"
            "  -h, --help      print this help and exit\n"
            "  -V, --version   print the version and exit\n"
            "\n"
            "Mechanisms:\n");
    for (i = 0; i < NMECH; i++)
        fprintf(out, "  %-16s %s %s\n", registry[i]->name,
                registry[i]->by_default ? "(default)" : "         ", registry[i]->summary);
    fprintf(out,
            "\n"
            "Exit status:\n"
            "  0   every scenario that ran passed, both ways\n"
            "  1   a scenario failed on either side, a process leaked, or the\n"
            "      consumer did not end with the session's status\n"
            "  2   usage error: a bad option, an impossible size, or a refused socket path\n"
            "  77  nothing could run here (no CUDA driver or no GPU); one line says why\n"
            "  130 stopped by SIGINT (Ctrl-C), 143 by SIGTERM, after releasing what both\n"
            "      processes held; a second signal ends the process at once\n"
            "\n"
            "Check's CK_RUN_SUITE=<mechanism>, CK_TAP_LOG_FILE_NAME and CK_XML_LOG_FILE_NAME\n"
            "work as usual. GPUIPC_FAULT and GPUIPC_SABOTAGE are test-only hooks (README).\n");
}

/* ---- signals, and what every process checks at its end ----------------------------------- */

/* The socket file --serve made while it waits for a consumer: a stop signal
 * removes it at once. */
static char g_sock_path[108];
static volatile sig_atomic_t g_sock_removed;

/* SIGINT (Ctrl-C) and SIGTERM stop the session: every wait ends with the
 * signal's name (gpuipc_wire_stop), each role releases what it holds, and
 * the process exits 128 + the signal. A second signal ends it at once. */
static void on_stop(int sig)
{
    if (g_sock_path[0] != '\0' && !g_sock_removed) {
        unlink(g_sock_path);
        g_sock_removed = 1;
    }
    if (gpuipc_wire_stop != 0)
        _exit(128 + sig);
    gpuipc_wire_stop = sig;
}

static void catch_stop_signals(void)
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
static void stop_signals_blocked(int block)
{
    sigset_t set;

    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigprocmask(block ? SIG_BLOCK : SIG_UNBLOCK, &set, NULL);
}

/* The exit code once the session is over: 128 + the stop signal if one came. */
static int stop_code(int code)
{
    return gpuipc_wire_stop != 0 ? 128 + (int)gpuipc_wire_stop : code;
}

/* The FDs open when the program started. A process that never loaded the
 * CUDA driver must end with exactly these (the driver keeps FDs of its own
 * open until exit, so a process that loaded it relies on the per-scenario
 * accounting instead). */
static gpuipc_fds g_fds_at_start;
static int g_have_fds_at_start;

/* Counts the FDs this process holds now that it did not hold when the
 * program started, leaving out the connections keep[0] and keep[1] (-1:
 * none), and names them in why. 0 in a process that loaded the CUDA driver. */
static size_t fds_since_start(const int keep[2], gpuipc_err *why)
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
static size_t last_check_fds(gpuipc_env *env, gpuipc_err *why)
{
    const int keep[2] = {env->wire != NULL ? gpuipc_wire_fd(env->wire) : -1, -1};

    return fds_since_start(keep, why);
}

/* Returns code, or GPUIPC_FAIL after naming the FDs this process leaked. */
static int check_fds_at_exit(const gpuipc_log *log, int code)
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

/* ---- the consumer ---------------------------------------------------------------------- */

static pid_t g_parent_pid; /* the forked mode's producer; 0 with --connect */
static gpuipc_env *g_consumer_env;
static int g_cred_pid;     /* --serve/--connect: the peer's pid (gpuipc_env.cred_pid) */

static size_t append(char *buf, size_t used, size_t cap, const char *s)
{
    while (*s != '\0' && used + 1 < cap)
        buf[used++] = *s++;
    buf[used] = '\0';
    return used;
}

static size_t append_uint(char *buf, size_t used, size_t cap, unsigned long v)
{
    char digits[24];
    int i = (int)sizeof(digits) - 1;

    digits[i] = '\0';
    do {
        digits[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v != 0 && i > 0);
    return append(buf, used, cap, digits + i);
}

/* SIGTERM, which PR_SET_PDEATHSIG sends when the producer dies, arrives even
 * while this process is inside a driver call; it reports the step it was in
 * with async-signal-safe calls only. A SIGTERM from anyone else keeps its
 * usual meaning. The sender is told apart by si_pid, which the kernel sets to
 * the dying parent, and not by getppid(): every thread has its own parent
 * pointer, the kernel updates them one thread at a time while it sends the
 * signal, and a CUDA driver thread that handles it may still see the dead
 * parent (seen on an H100: the consumer died silently of SIGTERM). */
static void on_parent_death(int sig, siginfo_t *info, void *context)
{
    const char *step;
    char line[256];
    size_t n = 0;

    (void)context;
    if (info == NULL || info->si_pid != g_parent_pid) {
        signal(sig, SIG_DFL);
        raise(sig);
        return;
    }
    /* The role has already printed why the connection broke. */
    if (g_consumer_env != NULL && g_consumer_env->lost_reported)
        _exit(GPUIPC_FAIL);
    step = gpuipc_step_name(g_consumer_env ? (unsigned)g_consumer_env->step : 0);
    /* The step log's columns, without the time: snprintf is not safe here. */
    n = append(line, n, sizeof(line), "         -     consumer  -                ");
    n = append(line, n, sizeof(line), step);
    while (n < 50 && n + 1 < sizeof(line)) /* pad the step column to 8 */
        line[n++] = ' ';
    n = append(line, n, sizeof(line), " FAIL peer gone during ");
    n = append(line, n, sizeof(line), step);
    n = append(line, n, sizeof(line), ": the producer (pid ");
    n = append_uint(line, n, sizeof(line), (unsigned long)g_parent_pid);
    n = append(line, n, sizeof(line), ") died (parent-death signal)\n");
    (void)!write(1, line, n);
    _exit(GPUIPC_FAIL);
}

static void consumer_prepare_cuda(gpuipc_env *env)
{
    (void)env;
    /* The result is kept; a failure is reported by the probe that needs it. */
    gpuipc_gpu_init(NULL);
}

/* Carries out a fault injected by GPUIPC_FAULT: the library decides when,
 * the program decides how a process ends. */
static void act_fault(gpuipc_env *env, int action, unsigned step)
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
        if (env->wire != NULL)
            gpuipc_wire_send_fault(env->wire, action == GPUIPC_FAULT_CORRUPT
                                                  ? GPUIPC_WIRE_FAULT_CORRUPT
                                                  : GPUIPC_WIRE_FAULT_EXTRA_FDS,
                                   gpuipc_clock_deadline(env->timeout_ns), step, NULL);
        break;
    case GPUIPC_FAULT_CLOSE:
        if (env->wire != NULL)
            shutdown(gpuipc_wire_fd(env->wire), SHUT_RDWR);
        break;
    default:
        break;
    }
}

static void env_init(gpuipc_env *env, int role, const gpuipc_options *o,
                     const gpuipc_inject *inject, uint64_t t0)
{
    memset(env, 0, sizeof(*env));
    env->role = role;
    env->log.role = role;
    env->log.level = o->level;
    env->log.t0_ns = t0;
    env->log.fd = 1;
    env->timeout_ns = o->timeout_ns;
    env->chunks = o->chunks;
    env->inject = *inject;
    env->act = act_fault;
    env->cred_pid = g_cred_pid;
    env->session_check = 1;
}

/* The consumer's role over sock; the session's end goes into *end.
 * Returns the exit status. */
static int consumer_main(int sock, const gpuipc_options *o, const gpuipc_inject *inject,
                         uint64_t t0, gpuipc_session_end *end)
{
    struct sigaction sa;
    gpuipc_env env;
    gpuipc_wire *w;
    gpuipc_err err;
    int verdict;

    env_init(&env, GPUIPC_ROLE_CONSUMER, o, inject, t0);
    /* A soak's consumer would repeat its step log every round. */
    if ((o->repeat > 1 || o->bench) && env.log.level < GPUIPC_LOG_VERBOSE)
        env.log.level = GPUIPC_LOG_QUIET;
    env.prepare_cuda = consumer_prepare_cuda;
    env.bandwidth = gpuipc_bandwidth_run;
    env.gpu_bytes = gpuipc_gpu_process_bytes;
    env.last_check = last_check_fds;
    env.step = GPUIPC_STEP_HELLO; /* from birth it waits for the producer's HELLO */
    g_consumer_env = &env;
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = on_parent_death;
    sa.sa_flags = SA_SIGINFO;
    if (g_parent_pid > 0)
        sigaction(SIGTERM, &sa, NULL);
    if (g_parent_pid > 0 && prctl(PR_SET_PDEATHSIG, SIGTERM) < 0)
        gpuipc_log_step(&env.log, GPUIPC_LOG_VERBOSE, NULL, GPUIPC_STEP_HELLO,
                        GPUIPC_LOG_NO_TIME, "prctl PR_SET_PDEATHSIG: %s", strerror(errno));
    /* The producer may have died before the request took effect, and then
     * no signal will ever come. */
    memset(end, 0, sizeof(*end));
    end->code = GPUIPC_FAIL;
    if (g_parent_pid > 0 && getppid() != g_parent_pid) {
        gpuipc_log_step(&env.log, GPUIPC_LOG_QUIET, NULL, GPUIPC_STEP_HELLO, GPUIPC_LOG_NO_TIME,
                        "FAIL peer gone during hello: the producer (pid %d) exited before "
                        "the consumer started", (int)g_parent_pid);
        close(sock);
        return GPUIPC_FAIL;
    }
    if (gpuipc_wire_open(&w, sock, "producer", &err) < 0) {
        close(sock);
        snprintf(end->reason, sizeof(end->reason), "%s", err.msg);
        return GPUIPC_FAIL;
    }
    verdict = gpuipc_consumer_serve(&env, w, registry, NMECH, end);
    gpuipc_gpu_close(env.gpu);
    env.gpu = NULL;
    gpuipc_wire_close(w);
    /* A session that ended with BYE had its last checks then (and its status
     * is the one both sides agreed on); one that broke is checked now. */
    if (end->said_bye)
        return stop_code(verdict);
    return check_fds_at_exit(&env.log, stop_code(verdict));
}

/* ---- the producer ---------------------------------------------------------------------- */

/* The most scenarios one run holds: every mechanism once, or --pairs. */
#define MAX_SCEN 64

typedef struct producer_run {
    gpuipc_env env;
    gpuipc_wire *w;
    const gpuipc_options *o;
    const gpuipc_mech *sel[MAX_SCEN];
    gpuipc_result results[MAX_SCEN];
    int pair[MAX_SCEN][2];       /* --pairs: producer's and consumer's GPU; -1: none */
    char label[MAX_SCEN][24];    /* the summary's name: "vmm", or "vmm 0->1" */
    char ck_name[MAX_SCEN][24];  /* Check's suite and case: "vmm", or "vmm-0to1" */
    size_t nsel;
    const gpuipc_mech *req[NMECH]; /* --require */
    size_t nreq;
    pid_t child;        /* the forked consumer; -1 with --serve */
    unsigned hello;     /* HELLO flags: what the scenarios need */
    int opened;         /* producer_open ran */
    int cuda;           /* 0: GPU open; 1: no driver or GPU; -1: the driver failed */
    gpuipc_err cuda_why;
    int started;        /* HELLO went both ways */
    int checked;        /* the last checks ran before BYE (the exit's are not needed) */
    char lost[GPUIPC_ERR_LEN]; /* why the session did not start, or broke before BYE */
    char last[GPUIPC_ERR_LEN]; /* the producer's end-of-session check, if it failed */
    /* --destructive: the sacrificial consumer, its connection, and how it ended. */
    gpuipc_wire *w2;
    pid_t child2;       /* -1: none */
    int child2_done;    /* reaped */
    int child2_ok;      /* it exited 0 */
    char child2_desc[GPUIPC_ERR_LEN];
    char where[640];
} producer_run;

static producer_run *g_run;

/* A destructive mechanism talks to the sacrificial consumer. */
static gpuipc_wire *wire_for(const producer_run *run, const gpuipc_mech *m)
{
    return m->destructive ? run->w2 : run->w;
}

/* Waits for consumer pid to exit within the deadline, closing *w first if
 * it is broken (so that a live consumer sees EOF, with only a short grace).
 * Stores its wait status in *status and says how it ended in desc. Returns
 * 1 if it exited by itself, 0 if it had to be killed or the wait failed. */
static int reap(producer_run *run, gpuipc_wire **w, pid_t pid, int *status, char *desc,
                size_t len)
{
    uint64_t wait_ns = run->o->timeout_ns;
    gpuipc_err err;
    int rc;

    *status = -1;
    if (*w == NULL || gpuipc_wire_broken(*w) != NULL) {
        gpuipc_wire_close(*w);
        *w = NULL;
        if (wait_ns > END_GRACE_NS)
            wait_ns = END_GRACE_NS;
    }
    rc = gpuipc_proc_wait(pid, gpuipc_clock_deadline(wait_ns), status, &err);
    gpuipc_wire_close(*w);
    *w = NULL;
    if (rc < 0) {
        snprintf(desc, len, "%s", err.msg);
        return 0;
    }
    gpuipc_proc_describe(*status, desc, len);
    if (rc == 1) {
        size_t used = strlen(desc);

        snprintf(desc + used, len - used, " (by the producer: it had not exited in time)");
        return 0;
    }
    return 1;
}

/* env->reap_peer: a destructive scenario's consumer exits after END_ACK. */
static int reap_sacrificial(gpuipc_env *env, gpuipc_err *err)
{
    producer_run *run = g_run;

    int status;

    if (run == NULL || run->child2 <= 0 || run->child2_done)
        return gpuipc_err_set(err, -ECHILD, "no sacrificial consumer is left to wait for");
    run->child2_ok = reap(run, &run->w2, run->child2, &status, run->child2_desc,
                          sizeof(run->child2_desc)) &&
                     WIFEXITED(status) && WEXITSTATUS(status) == 0;
    run->child2_done = 1;
    gpuipc_log_step(&env->log, GPUIPC_LOG_NORMAL, env->mech ? env->mech->name : NULL,
                    GPUIPC_STEP_END_ACK, GPUIPC_LOG_NO_TIME, "sacrificial consumer %s",
                    run->child2_desc);
    if (!run->child2_ok)
        return gpuipc_err_set(err, -ECHILD, "%s", run->child2_desc);
    return 0;
}

/* Points the producer at scenario i's devices: for a --pairs scenario, its
 * own GPU (opened if need be) and the one the consumer is to use. Returns 0
 * or a negative errno with why. */
static int scenario_devices(producer_run *run, size_t i, gpuipc_err *err)
{
    int rc;

    memset(run->env.peer_uuid, 0, GPUIPC_UUID_LEN);
    if (run->pair[i][0] < 0)
        return 0;
    if ((rc = gpuipc_gpu_point(&run->env, run->pair[i][0], run->pair[i][1], err)) < 0)
        gpuipc_err_prefix(err, "GPU pair %d->%d", run->pair[i][0], run->pair[i][1]);
    return rc;
}

/* Names scenario i: the mechanism, and the devices for a pair. */
static void name_scenario(producer_run *run, size_t i, const gpuipc_mech *m, int a, int b)
{
    run->sel[i] = m;
    run->pair[i][0] = a;
    run->pair[i][1] = b;
    if (a < 0) {
        snprintf(run->label[i], sizeof(run->label[i]), "%s", m->name);
        snprintf(run->ck_name[i], sizeof(run->ck_name[i]), "%s", m->name);
    } else {
        snprintf(run->label[i], sizeof(run->label[i]), "%s %d->%d", m->name, a, b);
        snprintf(run->ck_name[i], sizeof(run->ck_name[i]), "%s-%dto%d", m->name, a, b);
    }
    run->results[i].mech = run->label[i];
}

/* --pairs: replaces the selection (vmm) by one scenario per device pair.
 * Returns 0, or GPUIPC_USAGE after saying why on stderr. */
static int expand_pairs(producer_run *run)
{
    int pairs[GPUIPC_PAIRS_MAX][2], n = 0;
    const gpuipc_mech *m = run->sel[0];
    gpuipc_err err;
    size_t np, i;

    if (gpuipc_gpu_count(&n, &err) < 0 ||
        gpuipc_options_pairs(run->o->pairs, n, pairs, GPUIPC_PAIRS_MAX, &np, &err) < 0) {
        fprintf(stderr, "gpuipc_test: %s\n", err.msg);
        return GPUIPC_USAGE;
    }
    for (i = 0; i < np; i++)
        name_scenario(run, i, m, pairs[i][0], pairs[i][1]);
    run->nsel = np;
    snprintf(run->where, sizeof(run->where), "%zu device pair%s among %d GPUs (the vmm "
             "mechanism, producer->consumer)", np, np == 1 ? "" : "s", n);
    return 0;
}

/* One scenario, driven together with the consumer over the socket. The
 * scenario releases everything it took before it returns, so the assertion
 * below (which longjmps in CK_NOFORK mode) can leave nothing behind. */
START_TEST(test_scenario_both_ways)
{
    gpuipc_result *res = &g_run->results[_i];
    gpuipc_err err;

    /* srunner_run_all() installs SIGINT and SIGTERM handlers of its own,
     * which SIGKILL the process group (meant for its forked tests): this
     * process's handlers must be the ones that answer while a scenario runs,
     * and outside the scenarios the signals wait, blocked (run_suites). */
    catch_stop_signals();
    stop_signals_blocked(0);
    if (scenario_devices(g_run, (size_t)_i, &err) < 0) {
        res->status = GPUIPC_FAIL;
        snprintf(res->reason, sizeof(res->reason), "%s", err.msg);
    } else if (wire_for(g_run, g_run->sel[_i]) == NULL) {
        res->status = GPUIPC_FAIL;
        snprintf(res->reason, sizeof(res->reason), "the sacrificial consumer is gone: %.400s",
                 g_run->child2_desc);
    } else {
        gpuipc_producer_scenario(&g_run->env, wire_for(g_run, g_run->sel[_i]), g_run->sel[_i],
                                 g_run->o->size, (unsigned)_i, res);
    }
    res->mech = g_run->label[_i];
    stop_signals_blocked(1);
    ck_assert_msg(res->status == GPUIPC_PASS, "%s: %s", res->mech, res->reason);
}
END_TEST

static int run_suites(producer_run *run, int silent)
{
    SRunner *sr = srunner_create(NULL);
    size_t i;
    int failed;

    for (i = 0; i < run->nsel; i++) {
        Suite *s;
        TCase *tc;

        if (run->results[i].status != -1)
            continue;
        /* Suite and case are both named after the mechanism: Check's TAP
         * and XML name a test by its case, and CK_RUN_CASE selects by it. */
        s = suite_create(run->ck_name[i]);
        tc = tcase_create(run->ck_name[i]);
        tcase_add_loop_test(tc, test_scenario_both_ways, (int)i, (int)i + 1);
        suite_add_tcase(s, tc);
        srunner_add_suite(sr, s);
    }
    /* The parent holds a CUDA context, and a child forked from it could not
     * use CUDA, so the scenarios run in this process; every wait in them has
     * its own deadline, since Check's timeouts work only in fork mode. */
    srunner_set_fork_status(sr, CK_NOFORK);
    g_run = run;
    /* Between scenarios Check's own SIGINT handler would SIGKILL the whole
     * process group (exit 137, nothing released, nothing said): a stop
     * signal waits, blocked, for the next scenario or the end. */
    stop_signals_blocked(1);
    srunner_run_all(sr, silent || run->o->level == GPUIPC_LOG_QUIET ? CK_SILENT : CK_NORMAL);
    stop_signals_blocked(0);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    g_run = NULL;
    return failed;
}

/* --repeat: what the producer and the consumer held after round 1, which
 * every later round must come back to. Round 1 sets it, since the driver
 * allocates some of its own structures on first use. Both sides' figures
 * are their own (FDs, driver objects, shared memory, GPU memory by NVML),
 * so another process on the GPU cannot make a round drift. */
typedef struct soak {
    gpuipc_usage ref;                  /* the producer's, after round 1 */
    int have_ref;
    gpuipc_usage_figures consumer_ref; /* the consumer's, after round 1 */
    int have_consumer_ref;
    unsigned passed; /* scenarios passed in all rounds */
    char why[GPUIPC_ERR_LEN + 128];
} soak;

/* The consumer's figures after the round: from the END_ACK of the round's
 * last scenario that ran. Returns 1 if there is one. */
static int consumer_figures(const producer_run *run, gpuipc_usage_figures *f)
{
    size_t i;

    for (i = run->nsel; i > 0; i--) {
        if (run->results[i - 1].status == GPUIPC_PASS) {
            *f = run->results[i - 1].consumer_usage;
            return 1;
        }
    }
    return 0;
}

/* Checks round (1-based) for failures and drift on either side. Returns 0
 * to go on, or -1 to stop, with why. */
static int soak_round(producer_run *run, unsigned round, soak *k, uint64_t t0)
{
    unsigned every = run->o->repeat >= 10 ? run->o->repeat / 10 : 1, failed = 0;
    gpuipc_usage_figures theirs, mine;
    int have_theirs = consumer_figures(run, &theirs);
    char drift[GPUIPC_ERR_LEN];
    gpuipc_err e;
    size_t i;

    for (i = 0; i < run->nsel; i++) {
        if (run->results[i].status == GPUIPC_FAIL)
            failed++;
        else if (run->results[i].status == GPUIPC_PASS)
            k->passed++;
    }
    if (failed > 0) {
        snprintf(k->why, sizeof(k->why), "round %u: %u scenario%s failed", round, failed,
                 failed == 1 ? "" : "s");
        return -1;
    }
    if (!k->have_ref) {
        if (gpuipc_usage_take(&k->ref, run->env.gpu_bytes, &e) < 0) {
            snprintf(k->why, sizeof(k->why), "round %u: FD accounting: %s", round, e.msg);
            gpuipc_usage_free(&k->ref);
            return -1;
        }
        k->have_ref = 1;
        k->have_consumer_ref = have_theirs;
        k->consumer_ref = theirs;
    } else {
        if (gpuipc_usage_leaks(&k->ref, run->env.gpu_bytes, GPUIPC_ENV_SETTLE_NS, &e) > 0) {
            snprintf(k->why, sizeof(k->why), "round %u: drift since round 1: %s", round, e.msg);
            return -1;
        }
        if (k->have_consumer_ref && have_theirs &&
            gpuipc_usage_drift(&k->consumer_ref, &theirs, "consumer", drift, sizeof(drift))) {
            snprintf(k->why, sizeof(k->why), "round %u: drift since round 1: %s", round, drift);
            return -1;
        }
    }
    if (round % every == 0 || round == run->o->repeat || run->o->level == GPUIPC_LOG_VERBOSE) {
        gpuipc_usage_figures_of(&k->ref, &mine);
        gpuipc_log_step(&run->env.log, GPUIPC_LOG_QUIET, NULL, GPUIPC_STEP_NONE,
                        GPUIPC_LOG_NO_TIME, "round %u/%u passed; both sides hold what they held "
                        "after round 1 (producer: %llu FDs, %llu driver objects; consumer: "
                        "%llu FDs, %llu driver objects); %.1f s", round, run->o->repeat,
                        (unsigned long long)mine.fds, (unsigned long long)mine.objects,
                        (unsigned long long)(have_theirs ? theirs.fds : 0),
                        (unsigned long long)(have_theirs ? theirs.objects : 0),
                        (double)(gpuipc_clock_ns() - t0) / 1e9);
    }
    return 0;
}

/* Runs the scenarios that can run, --repeat times. Returns 0, or GPUIPC_FAIL
 * if the soak stopped at a failure or a drift (said on stdout). */
static int run_rounds(producer_run *run)
{
    static gpuipc_result probed[MAX_SCEN];
    uint64_t start = gpuipc_clock_ns();
    unsigned round;
    soak k;
    size_t i;
    int code = GPUIPC_PASS;

    for (i = 0; i < run->nsel; i++)
        if (run->results[i].status == -1)
            break;
    if (i == run->nsel) /* nothing can run */
        return GPUIPC_PASS;
    memset(&k, 0, sizeof(k));
    memcpy(probed, run->results, run->nsel * sizeof(probed[0]));
    for (round = 1; round <= run->o->repeat; round++) {
        if (round > 1) {
            memcpy(run->results, probed, run->nsel * sizeof(probed[0]));
            /* After round 1, only failures and the progress lines. */
            if (run->env.log.level < GPUIPC_LOG_VERBOSE)
                run->env.log.level = GPUIPC_LOG_QUIET;
        }
        run_suites(run, round > 1);
        if (run->o->repeat == 1)
            break;
        if (gpuipc_wire_stop != 0 || soak_round(run, round, &k, start) < 0) {
            if (gpuipc_wire_stop == 0)
                gpuipc_log_step(&run->env.log, GPUIPC_LOG_QUIET, NULL, GPUIPC_STEP_NONE,
                                GPUIPC_LOG_NO_TIME, "FAIL soak stopped at %s", k.why);
            code = GPUIPC_FAIL;
            break;
        }
    }
    if (run->o->repeat > 1 && code == GPUIPC_PASS)
        gpuipc_log_step(&run->env.log, GPUIPC_LOG_QUIET, NULL, GPUIPC_STEP_NONE,
                        GPUIPC_LOG_NO_TIME, "soak: %u rounds, %u scenarios passed; drift: 0 "
                        "FDs, 0 driver objects, 0 bytes of shared memory, 0 bytes of GPU "
                        "memory%s, on both sides; %.1f s (%.1f ms a round)",
                        run->o->repeat, k.passed,
                        k.ref.gpu == GPUIPC_USAGE_UNKNOWN ? " (NVML: not attributable here)"
                                                          : " by NVML",
                        (double)(gpuipc_clock_ns() - start) / 1e9,
                        (double)(gpuipc_clock_ns() - start) / 1e6 / run->o->repeat);
    if (k.have_ref)
        gpuipc_usage_free(&k.ref);
    return code;
}

/* Opens the GPU for the CUDA mechanisms. Returns 0 with the GPU open, 1 if
 * there is no driver or no GPU (why says which), GPUIPC_USAGE for a bad
 * --device or --size (reported here), or -1 for a driver that failed. */
static int producer_open_gpu(producer_run *run, gpuipc_err *why)
{
    const gpuipc_options *o = run->o;
    char a[32], b[32], uuid[48];
    uint64_t free_b, total, t = gpuipc_clock_ns();
    int rc, n;

    rc = gpuipc_gpu_init(why);
    if (rc == -ENOENT || rc == -ENODEV)
        return 1;
    if (rc < 0 || (rc = gpuipc_gpu_count(&n, why)) < 0)
        return -1;
    if (o->device >= n) {
        fprintf(stderr, "gpuipc_test: --device %d: no such GPU (%d visible: ordinals 0 to %d; "
                "see --list)\n", o->device, n, n - 1);
        return GPUIPC_USAGE;
    }
    if (gpuipc_gpu_open(&run->env.gpu, o->device, why) < 0)
        return -1;
    memcpy(run->env.uuid, gpuipc_gpu_uuid(run->env.gpu), GPUIPC_UUID_LEN);
    if (gpuipc_gpu_mem_info(run->env.gpu, &free_b, &total, why) != CUDA_SUCCESS)
        return -1;
    snprintf(run->where, sizeof(run->where), "GPU %d: %s (%s), CUDA driver %d.%d", o->device,
             gpuipc_gpu_name(run->env.gpu),
             gpuipc_units_format_uuid(run->env.uuid, uuid, sizeof(uuid)),
             gpuipc_cu.driver_version / 1000, gpuipc_cu.driver_version % 1000 / 10);
    gpuipc_log_step(&run->env.log, GPUIPC_LOG_NORMAL, NULL, GPUIPC_STEP_NONE,
                    gpuipc_clock_ns() - t, "%s; %s free of %s; kernels self-tested",
                    run->where, gpuipc_units_format_size(free_b, a, sizeof(a)),
                    gpuipc_units_format_size(total, b, sizeof(b)));
    gpuipc_log_step(&run->env.log, GPUIPC_LOG_VERBOSE, NULL, GPUIPC_STEP_NONE,
                    GPUIPC_LOG_NO_TIME, "%s", gpuipc_gpu_self_test(run->env.gpu));
    if (o->size > free_b) {
        fprintf(stderr, "gpuipc_test: --size %s: larger than the free memory of GPU %d (%s "
                "free of %s)\n", gpuipc_units_format_size(o->size, uuid, sizeof(uuid)),
                o->device, a, b);
        return GPUIPC_USAGE;
    }
    return 0;
}

/* What the producer decides before a consumer takes part: the GPU, if a
 * scenario needs one, and whether --size fits. Returns 0, GPUIPC_USAGE (said
 * on stderr), or, where every selected scenario needs the GPU that cannot
 * be had, GPUIPC_SKIP (no driver or GPU) or GPUIPC_FAIL (the driver failed),
 * with the reason in run->cuda_why; otherwise such scenarios are skipped
 * later, one by one. */
static int producer_open(producer_run *run)
{
    const gpuipc_options *o = run->o;
    size_t i, need_cuda = 0;

    run->opened = 1;
    for (i = 0; i < run->nsel; i++)
        need_cuda += run->sel[i]->needs_cuda;
    if (run->hello & GPUIPC_HELLO_NEEDS_CUDA) {
        run->cuda = producer_open_gpu(run, &run->cuda_why);
        if (run->cuda == GPUIPC_USAGE)
            return GPUIPC_USAGE;
        if (run->cuda != 0) {
            snprintf(run->where, sizeof(run->where), "GPU %d not opened (%s)", o->device,
                     run->cuda == 1 ? "no driver or no device" : "the driver failed");
            if (need_cuda == run->nsel)
                return run->cuda == 1 ? GPUIPC_SKIP : GPUIPC_FAIL;
        }
    }
    for (i = 0; i < run->nsel; i++) {
        uint64_t avail;
        char a[32], b[32];

        if (run->sel[i]->needs_cuda) /* host memory: memfd and its kin */
            continue;
        avail = gpuipc_proc_mem_available();
        if (avail != 0 && o->size > avail) {
            fprintf(stderr, "gpuipc_test: --size %s: larger than the host's available memory "
                    "for %s (MemAvailable %s)\n",
                    gpuipc_units_format_size(o->size, a, sizeof(a)), run->sel[i]->name,
                    gpuipc_units_format_size(avail, b, sizeof(b)));
            return GPUIPC_USAGE;
        }
    }
    return 0;
}

/* Asks the consumer about a mechanism this side can run; records its skip
 * or failure in r. */
static void probe_consumer(producer_run *run, const gpuipc_mech *m, gpuipc_result *r)
{
    gpuipc_status st;
    gpuipc_err err;

    if (gpuipc_producer_probe(&run->env, wire_for(run, m), m, &st, &err) < 0) {
        r->status = GPUIPC_FAIL;
        snprintf(r->reason, sizeof(r->reason), "%s", err.msg);
        gpuipc_log_step(&run->env.log, GPUIPC_LOG_QUIET, m->name, GPUIPC_STEP_PROBE,
                        GPUIPC_LOG_NO_TIME, "FAIL %s", err.msg);
    } else if (st.code != GPUIPC_PASS) {
        r->status = st.code;
        snprintf(r->reason, sizeof(r->reason), "consumer %s", st.reason);
    }
}

/* Decides, before any scenario runs, which can: both sides probe each
 * mechanism. One that needs CUDA where there is none, or that either side
 * cannot run here, is skipped with the reason (a failure if --require names
 * it); a probe that itself fails is a failure. Only the rest become Check
 * tests, so that no skip is ever counted as a passed test. */
static void probe_all(producer_run *run, int cuda, const gpuipc_err *cuda_why)
{
    size_t i;

    for (i = 0; i < run->nsel; i++) {
        const gpuipc_mech *m = run->sel[i];
        gpuipc_result *r = &run->results[i];
        gpuipc_err why;
        int rc;

        r->status = -1;
        run->env.mech = m;
        if (m->needs_cuda && cuda == 0 && scenario_devices(run, i, &why) < 0) {
            r->status = GPUIPC_FAIL;
            snprintf(r->reason, sizeof(r->reason), "%s", why.msg);
        } else if (m->needs_cuda && cuda != 0) {
            r->status = cuda == 1 ? GPUIPC_SKIP : GPUIPC_FAIL;
            snprintf(r->reason, sizeof(r->reason), "%s", cuda_why->msg);
        } else if ((rc = m->probe(&run->env, &why)) < 0) {
            r->status = rc == -ENOTSUP ? GPUIPC_SKIP : GPUIPC_FAIL;
            snprintf(r->reason, sizeof(r->reason), "probe: %.500s", why.msg);
        } else {
            probe_consumer(run, m, r);
        }
        if (r->status == GPUIPC_SKIP && gpuipc_mech_find(run->req, run->nreq, m->name) != NULL) {
            char reason[GPUIPC_ERR_LEN];

            snprintf(reason, sizeof(reason), "%s", r->reason);
            r->status = GPUIPC_FAIL;
            snprintf(r->reason, sizeof(r->reason), "required by --require, but skipped: %.440s",
                     reason);
        }
    }
}

/* The scenario counts of the results. */
static void count_results(const producer_run *run, gpuipc_msg_bye *bye)
{
    size_t i;

    for (i = 0; i < run->nsel; i++) {
        bye->passed += run->results[i].status == GPUIPC_PASS;
        bye->failed += run->results[i].status == GPUIPC_FAIL;
        bye->skipped += run->results[i].status == GPUIPC_SKIP;
    }
}

/* The producer's last checks, before its verdict goes out: what it holds
 * against the reference of its scenarios, and for a process that never
 * loaded CUDA, its FDs against the program's start. Returns 1 if they
 * failed, said in run->last. */
static int producer_last_check(producer_run *run)
{
    const int keep[2] = {run->w != NULL ? gpuipc_wire_fd(run->w) : -1,
                         run->w2 != NULL ? gpuipc_wire_fd(run->w2) : -1};
    gpuipc_err e;

    if (gpuipc_session_usage_leaks(&run->env.session, run->env.gpu_bytes,
                                   GPUIPC_ENV_SETTLE_NS, &e) == 0 &&
        fds_since_start(keep, &e) == 0) {
        gpuipc_log_step(&run->env.log, GPUIPC_LOG_VERBOSE, NULL, GPUIPC_STEP_BYE,
                        GPUIPC_LOG_NO_TIME, "at the end of the session: nothing held that was "
                        "not held at the first scenario%s", gpuipc_cu.driver_version != 0 ? ""
                        : "; the FDs open are the same as at the start, the connections aside");
        return 0;
    }
    snprintf(run->last, sizeof(run->last), "producer, at the end of the session: %.440s",
             e.msg);
    gpuipc_log_step(&run->env.log, GPUIPC_LOG_QUIET, NULL, GPUIPC_STEP_BYE, GPUIPC_LOG_NO_TIME,
                    "FAIL %s", run->last);
    return 1;
}

/* Ends the session with the verdict code: the producer's last checks, BYE
 * with the verdict and the consumer's BYE_ACK with its last checks, then
 * (forked mode) the consumer's exit, which must carry the same status, and
 * the sacrificial consumer's. Returns the session's status: code, or
 * GPUIPC_FAIL if a last check failed, the consumer did not answer, or it
 * ended otherwise than the session did. Describes the consumer's end in
 * desc. */
static int end_session(producer_run *run, int code, char *desc, size_t len)
{
    char said[GPUIPC_ERR_LEN + 64] = "";
    gpuipc_msg_bye bye;
    gpuipc_status ack;
    gpuipc_err err;
    int answered = 0, status;

    /* The sacrificial consumer's connection (if any) is no longer needed, and
     * the checks below are about this process alone. */
    if (run->w != NULL && run->started && gpuipc_wire_stop == 0 &&
        (code == GPUIPC_PASS || code == GPUIPC_SKIP)) {
        run->checked = 1;
        if (producer_last_check(run))
            code = GPUIPC_FAIL;
    }
    memset(&bye, 0, sizeof(bye));
    bye.code = code;
    count_results(run, &bye);
    if (run->w != NULL && run->started && gpuipc_wire_broken(run->w) == NULL &&
        gpuipc_wire_stop == 0) {
        if (gpuipc_producer_bye(&run->env, run->w, &bye, &ack, &err) == 0) {
            answered = 1;
            if (ack.code != GPUIPC_PASS && ack.step == GPUIPC_STEP_BYE_ACK) {
                code = GPUIPC_FAIL;
                snprintf(said, sizeof(said), "; its last checks failed: %s", ack.reason);
                gpuipc_log_step(&run->env.log, GPUIPC_LOG_QUIET, NULL, GPUIPC_STEP_BYE_ACK,
                                GPUIPC_LOG_NO_TIME, "FAIL the consumer: %s", ack.reason);
            } else if (ack.code != GPUIPC_PASS) {
                code = GPUIPC_FAIL;
                snprintf(said, sizeof(said), "; its side failed (said above)");
            } else {
                snprintf(said, sizeof(said), "; its last checks passed");
            }
        } else {
            code = GPUIPC_FAIL;
            snprintf(said, sizeof(said), "; it did not answer BYE: %s", err.msg);
            gpuipc_log_step(&run->env.log, GPUIPC_LOG_QUIET, NULL, GPUIPC_STEP_BYE,
                            GPUIPC_LOG_NO_TIME, "FAIL %s", err.msg);
        }
    } else if (run->started && gpuipc_wire_stop == 0) {
        /* The connection broke before BYE; a scenario has failed for it. */
        code = GPUIPC_FAIL;
    }
    if (run->child > 0) {
        int exited = reap(run, &run->w, run->child, &status, desc, len);

        if (gpuipc_wire_stop == 0 && (!exited || !WIFEXITED(status) ||
                                      WEXITSTATUS(status) != code)) {
            if (answered && exited && WIFEXITED(status)) {
                size_t used = strlen(desc);

                snprintf(desc + used, len - used, ", but the session's status is %d", code);
            }
            code = GPUIPC_FAIL;
        }
        if (answered) {
            size_t used = strlen(desc);

            snprintf(desc + used, len - used, "%s", said);
        }
    } else {
        snprintf(desc, len, "pid %d, connected to --serve %s, %s%s", run->env.peer_pid,
                 run->o->serve, answered ? "answered BYE" : "connection lost", said);
        gpuipc_wire_close(run->w);
        run->w = NULL;
    }
    if (run->child2 > 0 && !run->child2_done) {
        run->child2_ok = reap(run, &run->w2, run->child2, &status, run->child2_desc,
                              sizeof(run->child2_desc)) &&
                         WIFEXITED(status) && WEXITSTATUS(status) == 0;
        run->child2_done = 1;
    }
    if (run->child2 > 0) {
        size_t used = strlen(desc);

        snprintf(desc + used, len - used, "; sacrificial consumer: %s", run->child2_desc);
        if (!run->child2_ok)
            code = GPUIPC_FAIL;
    }
    return code;
}

/* The one-line reason for exit 77: the shared reason if CUDA is missing,
 * else each mechanism's. */
static void print_skip_line(const producer_run *run, int cuda, const gpuipc_err *cuda_why)
{
    char line[2048] = "gpuipc_test: SKIP: ";
    size_t i, used = strlen(line);

    if (cuda == 1) {
        snprintf(line + used, sizeof(line) - used, "%s", cuda_why->msg);
    } else {
        for (i = 0; i < run->nsel && used < sizeof(line); i++)
            used += (size_t)snprintf(line + used, sizeof(line) - used, "%s%s: %s",
                                     i ? "; " : "", run->results[i].mech,
                                     run->results[i].status < 0
                                         ? "not selected by CK_RUN_SUITE/CK_RUN_CASE"
                                         : run->results[i].reason);
    }
    gpuipc_log_line(1, line);
}

/* ---- --bench ------------------------------------------------------------------------------ */

#define ONESHOT_RUNS 5
#define ONESHOT_TIMEOUT_NS (120ull * 1000000000ull)

/* The default one-shot runs, timed as whole processes before this process
 * or its consumer touches CUDA, so that no context of ours speeds them up. */
static gpuipc_samples g_oneshot;
static int g_oneshot_failed;

static void measure_oneshots(const gpuipc_options *o)
{
    extern char **environ;
    char *argv[] = {"gpuipc_test", NULL};
    posix_spawn_file_actions_t fa;
    int i, status = 0;

    if (posix_spawn_file_actions_init(&fa) != 0)
        return;
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    for (i = 0; i < ONESHOT_RUNS && gpuipc_wire_stop == 0; i++) {
        uint64_t t = gpuipc_clock_ns(), ns;
        gpuipc_err err;
        pid_t pid;
        int rc = posix_spawn(&pid, "/proc/self/exe", &fa, NULL, argv, environ);

        if (rc != 0) {
            fprintf(stderr, "gpuipc_test: --bench: one-shot run: posix_spawn /proc/self/exe: "
                    "%s\n", strerror(rc));
            g_oneshot_failed = 1;
            break;
        }
        if (gpuipc_proc_wait(pid, gpuipc_clock_deadline(ONESHOT_TIMEOUT_NS), &status, &err) < 0) {
            fprintf(stderr, "gpuipc_test: --bench: one-shot run: %s\n", err.msg);
            g_oneshot_failed = 1;
            break;
        }
        ns = gpuipc_clock_ns() - t;
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
            g_oneshot_failed = 1;
        /* 77: nothing can run here, which the bench itself says next. */
        if (WIFEXITED(status) && WEXITSTATUS(status) == GPUIPC_SKIP)
            break;
        if (o->level != GPUIPC_LOG_QUIET)
            fprintf(stderr, "bench: one-shot run %d of %d (./gpuipc_test, whole process): "
                    "%.3f s, exit %d\n", i + 1, ONESHOT_RUNS, (double)ns / 1e9,
                    WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
        if (g_oneshot_failed || gpuipc_samples_add(&g_oneshot, (double)ns) < 0)
            break;
    }
    posix_spawn_file_actions_destroy(&fa);
}

/* --bench in the producer, once both sides have probed the selection.
 * Returns the exit code. */
static int run_bench(producer_run *run, int cuda, const gpuipc_err *cuda_why)
{
    static gpuipc_bench b;
    const gpuipc_mech *lat[MAX_SCEN];
    gpuipc_bench_cfg cfg;
    size_t i, nlat = 0;
    FILE *probe;
    int rc;

    if (cuda == 1) {
        char line[GPUIPC_ERR_LEN + 64];

        snprintf(line, sizeof(line), "gpuipc_test: SKIP: --bench measures GPU memory sharing: "
                 "%s", cuda_why->msg);
        gpuipc_log_line(1, line);
        return GPUIPC_SKIP;
    }
    if (cuda != 0) {
        fprintf(stderr, "gpuipc_test: --bench: %s\n", cuda_why->msg);
        return GPUIPC_FAIL;
    }
    /* An unwritable --json fails now, not after the measurements. */
    if (run->o->json_path != NULL) {
        if ((probe = fopen(run->o->json_path, "we")) == NULL) {
            fprintf(stderr, "gpuipc_test: --json %s: %s\n", run->o->json_path, strerror(errno));
            return GPUIPC_USAGE;
        }
        fclose(probe);
    }
    for (i = 0; i < run->nsel; i++) {
        if (run->results[i].status == -1)
            lat[nlat++] = run->sel[i];
        else if (run->o->level != GPUIPC_LOG_QUIET)
            fprintf(stderr, "bench: %s is not measured: %s\n", run->sel[i]->name,
                    run->results[i].reason);
    }
    memset(&cfg, 0, sizeof(cfg));
    cfg.lat = lat;
    cfg.nlat = nlat;
    cfg.vmm = gpuipc_mech_find(lat, nlat, "vmm");
    cfg.chunks = gpuipc_mech_find(lat, nlat, "vmm-chunks");
    cfg.iters = run->o->iters;
    cfg.size = run->o->size;
    cfg.latency_chunks = run->o->chunks;
    cfg.device = run->o->device;
    cfg.json_path = run->o->json_path;
    cfg.version = GPUIPC_VERSION;
    cfg.progress = run->o->level != GPUIPC_LOG_QUIET;
    b.oneshot_ns = g_oneshot;
    memset(&g_oneshot, 0, sizeof(g_oneshot));
    b.oneshot_failed = g_oneshot_failed;
    rc = gpuipc_bench_run(&run->env, run->w, &cfg, &b);
    gpuipc_bench_free(&b);
    return rc == 0 ? GPUIPC_PASS : GPUIPC_FAIL;
}

/* Sets run up for the selection, before any connection. */
static void producer_init(producer_run *run, const gpuipc_options *o, const gpuipc_mech **sel,
                          size_t nsel, const gpuipc_mech **req, size_t nreq,
                          const gpuipc_inject *inject, uint64_t t0)
{
    size_t i;

    memset(run, 0, sizeof(*run));
    env_init(&run->env, GPUIPC_ROLE_PRODUCER, o, inject, t0);
    /* --bench's output is its tables: the scenarios' step log stays quiet. */
    if (o->bench && run->env.log.level < GPUIPC_LOG_VERBOSE)
        run->env.log.level = GPUIPC_LOG_QUIET;
    run->env.gpu_bytes = gpuipc_gpu_process_bytes;
    run->o = o;
    run->child = -1;
    run->child2 = -1;
    run->nsel = nsel;
    for (i = 0; i < nsel; i++) {
        name_scenario(run, i, sel[i], -1, -1);
        if (sel[i]->needs_cuda || o->bench) /* --bench always describes a GPU */
            run->hello |= GPUIPC_HELLO_NEEDS_CUDA;
    }
    run->nreq = nreq;
    memcpy(run->req, req, nreq * sizeof(run->req[0]));
    snprintf(run->where, sizeof(run->where), "host memory only, no GPU scenario selected");
}

/* HELLO with the consumer (the sacrificial one first: the main one's pid is
 * the one that stays in env->peer_pid, for the pidfd mechanism). Returns 0
 * or a negative errno with err. */
static int producer_hello(producer_run *run, gpuipc_err *err)
{
    int peer = 0, rc;

    if ((run->w2 != NULL && (rc = gpuipc_producer_hello(&run->env, run->w2, run->hello, &peer,
                                                        err)) < 0) ||
        (rc = gpuipc_producer_hello(&run->env, run->w, run->hello, &peer, err)) < 0)
        return rc;
    run->started = 1;
    gpuipc_log_step(&run->env.log, GPUIPC_LOG_VERBOSE, NULL, GPUIPC_STEP_HELLO,
                    GPUIPC_LOG_NO_TIME, "producer pid %d, consumer pid %d, protocol %d",
                    (int)getpid(), peer, GPUIPC_WIRE_VERSION);
    return 0;
}

/* Once HELLO went both ways: the GPU (unless opened before), the pairs,
 * the probes and the scenarios or the bench. Returns the verdict so far. */
static int producer_scenarios(producer_run *run)
{
    int code;

    if (!run->opened && (code = producer_open(run)) == GPUIPC_USAGE)
        return code;
    if (run->cuda == 0 && run->o->pairs != NULL && (code = expand_pairs(run)) != 0)
        return code;
    probe_all(run, run->cuda, &run->cuda_why);
    if (run->o->bench)
        return run_bench(run, run->cuda, &run->cuda_why);
    code = run_rounds(run);
    if (code == GPUIPC_PASS)
        code = gpuipc_report_exit_code(run->results, run->nsel, 1);
    return code;
}

/* The summary's line on the leak accounting: what was counted, and where
 * NVML could not attribute GPU memory to a process. */
static void accounting_note(producer_run *run, char *buf, size_t len)
{
    gpuipc_usage_figures theirs;
    gpuipc_err why;
    uint64_t bytes;
    int mine;

    if (run->env.gpu == NULL) {
        snprintf(buf, len, "accounting: per process, both sides: FDs, driver objects and "
                 "resident shared memory (no GPU opened here)");
        return;
    }
    mine = run->env.gpu_bytes(&bytes, &why) == 0;
    snprintf(buf, len, "accounting: per process, both sides: FDs, driver objects, resident "
             "shared memory; GPU memory by NVML: producer %s%.200s%s, consumer %s",
             mine ? "measured" : "not attributable (", mine ? "" : why.msg, mine ? "" : ")",
             !consumer_figures(run, &theirs) ? "not reported"
             : theirs.gpu != GPUIPC_USAGE_UNKNOWN ? "measured"
                                                   : "not attributable (its log says why)");
}

/* Ends the session (end_session) and prints the outcome: one line for 77,
 * else the summary, or, for a session that never started or a usage error,
 * the reason and a result line. Returns the exit status. */
static int producer_finish(producer_run *run, int code, uint64_t t0)
{
    char consumer[GPUIPC_ERR_LEN + 160], accounting[512], line[GPUIPC_ERR_LEN + 256];
    const char *notes[3] = {NULL, NULL, NULL};
    int started = run->started;

    if (!started && code == GPUIPC_PASS)
        code = GPUIPC_FAIL;
    if (started && gpuipc_wire_stop == 0)
        accounting_note(run, accounting, sizeof(accounting));
    code = end_session(run, code, consumer, sizeof(consumer));
    gpuipc_session_usage_free(&run->env.session);
    gpuipc_wire_close(run->w);
    run->w = NULL;
    gpuipc_gpu_close(run->env.gpu);
    run->env.gpu = NULL;
    if (run->o->bench && started) {
        if (code != GPUIPC_SKIP)
            fprintf(stderr, "result: %s: --bench on %s; consumer: %s; %.1f s (exit %d)\n",
                    code == GPUIPC_PASS ? "PASS" : "FAIL", run->where, consumer,
                    (double)(gpuipc_clock_ns() - t0) / 1e9, stop_code(code));
        return stop_code(code);
    }
    if (code == GPUIPC_SKIP && gpuipc_wire_stop == 0) {
        print_skip_line(run, run->cuda, &run->cuda_why);
        return check_fds_at_exit(&run->env.log, code);
    }
    if (!started || code == GPUIPC_USAGE) {
        snprintf(line, sizeof(line), "summary: %s", run->where);
        gpuipc_log_line(1, line);
        snprintf(line, sizeof(line), "consumer: %s", consumer);
        gpuipc_log_line(1, line);
        snprintf(line, sizeof(line), "result: %s: no scenario ran: %.400s (exit %d)",
                 code == GPUIPC_USAGE ? "USAGE ERROR" : "FAIL",
                 code == GPUIPC_USAGE ? "the producer refused its options (said above)"
                                      : run->lost, stop_code(code));
        gpuipc_log_line(1, line);
        return check_fds_at_exit(&run->env.log, stop_code(code));
    }
    if (gpuipc_wire_stop == 0)
        notes[0] = accounting;
    if (run->last[0] != '\0')
        notes[notes[0] != NULL] = run->last;
    gpuipc_report_summary(1, run->where, run->results, run->nsel, notes, consumer,
                          stop_code(code), gpuipc_clock_ns() - t0);
    if (gpuipc_wire_stop != 0) {
        const char *name = sigabbrev_np((int)gpuipc_wire_stop);

        fprintf(stderr, "gpuipc_test: stopped by SIG%s: what both processes held is released "
                "(exit %d)\n", name ? name : "?", stop_code(code));
    }
    return run->checked ? stop_code(code) : check_fds_at_exit(&run->env.log, stop_code(code));
}

/* The forked mode's producer, over sock with child (and the sacrificial
 * consumer's sock2 and child2, or -1). */
static int producer_main(int sock, pid_t child, int sock2, pid_t child2, const gpuipc_options *o,
                         const gpuipc_mech **sel, size_t nsel, const gpuipc_mech **req,
                         size_t nreq, const gpuipc_inject *inject, uint64_t t0)
{
    static producer_run run;
    gpuipc_err err;
    int code;

    producer_init(&run, o, sel, nsel, req, nreq, inject, t0);
    run.child = child;
    run.child2 = child2;
    run.env.reap_peer = child2 > 0 ? reap_sacrificial : NULL;
    if (gpuipc_wire_open(&run.w, sock, "consumer", &err) < 0 ||
        (child2 > 0 && gpuipc_wire_open(&run.w2, sock2, "sacrificial consumer", &err) < 0)) {
        if (run.w == NULL)
            close(sock);
        if (child2 > 0 && run.w2 == NULL)
            close(sock2);
        snprintf(run.lost, sizeof(run.lost), "%s", err.msg);
        return producer_finish(&run, GPUIPC_FAIL, t0);
    }
    if (producer_hello(&run, &err) < 0) {
        gpuipc_log_step(&run.env.log, GPUIPC_LOG_QUIET, NULL, GPUIPC_STEP_HELLO,
                        GPUIPC_LOG_NO_TIME, "FAIL %s", err.msg);
        snprintf(run.lost, sizeof(run.lost), "%s", err.msg);
        return producer_finish(&run, GPUIPC_FAIL, t0);
    }
    code = producer_scenarios(&run);
    return producer_finish(&run, code, t0);
}

/* ---- --list ------------------------------------------------------------------------------ */

/* The attributes that decide the mechanisms. MULTICAST_SUPPORTED is only
 * reported: cuMulticastCreate is never called, because on shared NVSwitch
 * hosts multicast can take GPUs out of service for everyone. */
static const struct {
    CUdevice_attribute attr;
    const char *name; /* in the text listing */
    const char *key;  /* in the JSON document */
} list_attrs[] = {
#define ATTR(a) {CU_DEVICE_ATTRIBUTE_##a, #a, #a}
    ATTR(VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED),
    ATTR(HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED),
    ATTR(HANDLE_TYPE_FABRIC_SUPPORTED),
    ATTR(GENERIC_COMPRESSION_SUPPORTED),
    ATTR(MEMORY_POOLS_SUPPORTED),
    ATTR(MEMPOOL_SUPPORTED_HANDLE_TYPES),
    ATTR(UNIFIED_ADDRESSING),
    ATTR(HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED),
    ATTR(HOST_NUMA_ID),
    {CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED, "MULTICAST_SUPPORTED (reported only)",
     "MULTICAST_SUPPORTED"},
#undef ATTR
};

/* Whether a child may take its parent's FDs with pidfd_getfd, as the
 * consumer does in vmm-pidfd: a child forked for the question answers it
 * through a pipe. Returns 0, or -ENOTSUP / another errno with why. Call
 * before cuInit, like every fork here. */
static int list_pidfd(gpuipc_err *why)
{
    int fds[2], status = 0, rc = -EIO;
    gpuipc_err answer;
    pid_t child;

    gpuipc_err_set(why, -EIO, "pidfd: the check did not run");
    if (pipe2(fds, O_CLOEXEC) < 0)
        return gpuipc_err_set(why, -errno, "pipe2: %s", strerror(errno));
    fflush(NULL);
    child = fork();
    if (child < 0) {
        close(fds[0]);
        close(fds[1]);
        return gpuipc_err_set(why, -errno, "fork: %s", strerror(errno));
    }
    if (child == 0) {
        int r = gpuipc_pidfd_probe((int)getppid(), &answer);

        if (write(fds[1], &r, sizeof(r)) < 0 || write(fds[1], &answer, sizeof(answer)) < 0)
            _exit(1);
        _exit(0);
    }
    close(fds[1]);
    if (read(fds[0], &rc, sizeof(rc)) == (ssize_t)sizeof(rc) &&
        read(fds[0], &answer, sizeof(answer)) == (ssize_t)sizeof(answer)) {
        answer.msg[sizeof(answer.msg) - 1] = '\0';
        if (rc < 0)
            gpuipc_err_set(why, rc, "%s", answer.msg);
    } else {
        rc = gpuipc_err_set(why, -EIO, "pidfd: the checking process gave no answer");
    }
    close(fds[0]);
    gpuipc_proc_wait(child, gpuipc_clock_deadline(5 * GPUIPC_NS_PER_S), &status, NULL);
    return rc;
}

/* The granularity of pinned device memory exportable as a POSIX FD. */
static void list_granularity(CUdevice dev, uint64_t *min, uint64_t *rec)
{
    CUmemAllocationProp prop;
    size_t g = 0;

    memset(&prop, 0, sizeof(prop));
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = (int)dev;
    prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    *min = *rec = 0;
    if (gpuipc_cu.cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM) ==
        CUDA_SUCCESS)
        *min = g;
    if (gpuipc_cu.cuMemGetAllocationGranularity(&g, &prop,
                                                CU_MEM_ALLOC_GRANULARITY_RECOMMENDED) ==
        CUDA_SUCCESS)
        *rec = g;
}

static void list_devices(int device, gpuipc_json *j)
{
    char version[64];
    int n = 0, i;
    size_t a;

    if (gpuipc_gpu_count(&n, NULL) < 0)
        return;
    gpuipc_cudrv_version(version, sizeof(version));
    if (j != NULL) {
        gpuipc_json_string(j, "driver", version);
        gpuipc_json_int(j, "driver_cuda_version", gpuipc_cu.driver_version);
        gpuipc_json_array(j, "devices");
    } else {
        printf("CUDA driver: %s, libcuda.so.1; built with CUDA %d.%d headers; %d GPU%s\n",
               version, CUDA_VERSION / 1000, CUDA_VERSION % 1000 / 10, n, n == 1 ? "" : "s");
    }
    for (i = 0; i < n; i++) {
        char name[128] = "?", uuid[48] = "?", g1[32], g2[32];
        int major = 0, minor = 0;
        uint64_t gmin, grec;
        CUdevice dev;
        CUuuid u;

        if (gpuipc_cu.cuDeviceGet(&dev, i) != CUDA_SUCCESS)
            continue;
        gpuipc_cu.cuDeviceGetName(name, (int)sizeof(name), dev);
        if (gpuipc_cu.cuDeviceGetUuid(&u, dev) == CUDA_SUCCESS)
            gpuipc_units_format_uuid((const uint8_t *)u.bytes, uuid, sizeof(uuid));
        gpuipc_cu.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
        gpuipc_cu.cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
        list_granularity(dev, &gmin, &grec);
        if (j != NULL) {
            gpuipc_json_object(j, NULL);
            gpuipc_json_int(j, "ordinal", i);
            gpuipc_json_string(j, "name", name);
            gpuipc_json_string(j, "uuid", uuid);
            gpuipc_json_int(j, "compute_major", major);
            gpuipc_json_int(j, "compute_minor", minor);
            gpuipc_json_object(j, "granularity_posix_fd");
            gpuipc_json_int(j, "minimum", (long long)gmin);
            gpuipc_json_int(j, "recommended", (long long)grec);
            gpuipc_json_end(j, '}');
            gpuipc_json_object(j, "attributes");
        } else {
            printf("GPU %d%s: %s, %s, compute %d.%d\n", i, i == device ? " (--device)" : "",
                   name, uuid, major, minor);
            printf("  %-46s minimum %s, recommended %s\n", "allocation granularity (POSIX FD)",
                   gpuipc_units_format_size(gmin, g1, sizeof(g1)),
                   gpuipc_units_format_size(grec, g2, sizeof(g2)));
        }
        for (a = 0; a < sizeof(list_attrs) / sizeof(list_attrs[0]); a++) {
            int v = -1;
            int known = gpuipc_cu.cuDeviceGetAttribute(&v, list_attrs[a].attr, dev) ==
                        CUDA_SUCCESS;

            if (j != NULL && known)
                gpuipc_json_int(j, list_attrs[a].key, v);
            else if (j != NULL)
                gpuipc_json_string(j, list_attrs[a].key, NULL);
            else if (known)
                printf("  %-46s %d\n", list_attrs[a].name, v);
            else
                printf("  %-46s unknown to this driver\n", list_attrs[a].name);
        }
        if (j != NULL) {
            gpuipc_json_end(j, '}');
            gpuipc_json_end(j, '}');
        }
    }
    if (j != NULL)
        gpuipc_json_end(j, ']');
}

/* One line, or one JSON object, for a host capability. */
static void list_verdict(gpuipc_json *j, const char *key, const char *label, int ok,
                         const char *why)
{
    if (j != NULL) {
        gpuipc_json_object(j, key);
        gpuipc_json_bool(j, "works", ok);
        gpuipc_json_string(j, "reason", ok ? NULL : why);
        gpuipc_json_end(j, '}');
    } else {
        printf("host: %s: %s%s\n", label, ok ? "yes" : "no: ", ok ? "" : why);
    }
}

static int run_list(const gpuipc_options *o, const gpuipc_inject *inject, uint64_t t0)
{
    gpuipc_err cuda_why, why, pidfd_why, imex_why;
    int cuda = -1, have_driver, pidfd, imex;
    gpuipc_json json, *j = NULL;
    FILE *list_out = stdout;
    gpuipc_env env;
    struct rlimit rl;
    size_t i;

    env_init(&env, GPUIPC_ROLE_PRODUCER, o, inject, t0);
    /* The listing is the output; probes keep their step-log lines to themselves. */
    env.log.level = GPUIPC_LOG_QUIET;
    pidfd = list_pidfd(&pidfd_why); /* forks: before any CUDA call */
    imex = gpuipc_imex_check(GPUIPC_IMEX_DEVICES, GPUIPC_IMEX_CHANNELS, &imex_why);
    if (o->json && o->json_path != NULL && (list_out = fopen(o->json_path, "we")) == NULL) {
        fprintf(stderr, "gpuipc_test: --json %s: %s\n", o->json_path, strerror(errno));
        return GPUIPC_USAGE;
    }
    if (o->json) {
        j = &json;
        gpuipc_json_init(j, list_out);
        gpuipc_json_object(j, NULL);
        gpuipc_json_string(j, "schema", "gpuipc_test/capabilities");
        gpuipc_json_int(j, "schema_version", GPUIPC_LIST_SCHEMA_VERSION);
        gpuipc_json_string(j, "version", GPUIPC_VERSION);
        gpuipc_json_int(j, "protocol", GPUIPC_WIRE_VERSION);
        gpuipc_json_int(j, "cuda_headers", CUDA_VERSION);
    } else {
        printf("gpuipc_test %s, protocol %d\n", GPUIPC_VERSION, GPUIPC_WIRE_VERSION);
    }
    have_driver = gpuipc_gpu_init(&cuda_why) == 0;
    if (j != NULL) {
        gpuipc_json_bool(j, "cuda", have_driver);
        gpuipc_json_string(j, "cuda_reason", have_driver ? NULL : cuda_why.msg);
    }
    if (have_driver) {
        list_devices(o->device, j);
        cuda = gpuipc_gpu_open(&env.gpu, o->device, &cuda_why);
        if (cuda == 0)
            memcpy(env.uuid, gpuipc_gpu_uuid(env.gpu), GPUIPC_UUID_LEN);
    } else if (j == NULL) {
        printf("CUDA: not available: %s\n", cuda_why.msg);
    } else {
        gpuipc_json_string(j, "driver", NULL);
        gpuipc_json_int(j, "driver_cuda_version", 0);
        gpuipc_json_array(j, "devices");
        gpuipc_json_end(j, ']');
    }
    if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
        rl.rlim_cur = rl.rlim_max = 0;
    if (j != NULL) {
        gpuipc_json_object(j, "host");
        gpuipc_json_object(j, "rlimit_nofile");
        gpuipc_json_int(j, "soft", rl.rlim_cur == RLIM_INFINITY ? -1 : (long long)rl.rlim_cur);
        gpuipc_json_int(j, "hard", rl.rlim_max == RLIM_INFINITY ? -1 : (long long)rl.rlim_max);
        gpuipc_json_end(j, '}');
    } else {
        printf("host: RLIMIT_NOFILE %llu (hard %llu): receiving a batch of chunk FDs takes "
               "%d free FD numbers below the soft limit\n", (unsigned long long)rl.rlim_cur,
               (unsigned long long)rl.rlim_max, GPUIPC_WIRE_MAX_FDS);
    }
    list_verdict(j, "pidfd_getfd", "pidfd_getfd from a child to its parent", pidfd == 0,
                 pidfd_why.msg);
    list_verdict(j, "imex_channel", "IMEX channel for FABRIC handles", imex == 0, imex_why.msg);
    if (j != NULL) {
        gpuipc_json_end(j, '}');
        gpuipc_json_array(j, "mechanisms");
    } else {
        printf("mechanisms (probed on GPU %d where they need one):\n", o->device);
    }
    for (i = 0; i < NMECH; i++) {
        const gpuipc_mech *m = registry[i];
        const char *text = NULL;

        env.mech = m;
        if (m->needs_cuda && cuda != 0)
            text = cuda_why.msg;
        else if (m->probe(&env, &why) < 0)
            text = why.msg;
        if (j != NULL) {
            gpuipc_json_object(j, NULL);
            gpuipc_json_string(j, "name", m->name);
            gpuipc_json_bool(j, "default", m->by_default);
            gpuipc_json_bool(j, "destructive", m->destructive);
            gpuipc_json_bool(j, "needs_cuda", m->needs_cuda);
            gpuipc_json_bool(j, "runs", text == NULL);
            gpuipc_json_string(j, "reason", text);
            gpuipc_json_string(j, "summary", m->summary);
            gpuipc_json_end(j, '}');
            continue;
        }
        printf("  %-16s %-3s %s %s\n", m->name, text == NULL ? "yes" : "no",
               m->by_default ? "(default)" : "         ", m->summary);
        if (text != NULL)
            printf("                   %s\n", text);
    }
    gpuipc_gpu_close(env.gpu);
    if (j != NULL) {
        gpuipc_json_end(j, ']');
        gpuipc_json_end(j, '}');
        if (gpuipc_json_finish(j) < 0 || (list_out != stdout && fclose(list_out) != 0)) {
            fprintf(stderr, "gpuipc_test: --list --json: writing the report failed\n");
            return GPUIPC_FAIL;
        }
    }
    return GPUIPC_PASS;
}

/* Forks a consumer that serves on sv[1]; the other pair's ends (-1: none)
 * are closed in it. Returns its pid, the parent keeping sv[0] only, or -1
 * after saying why (both ends of sv closed). */
static pid_t fork_consumer(int sv[2], const int other[2], const gpuipc_options *o,
                           const gpuipc_inject *inject, uint64_t t0)
{
    pid_t pid;

    fflush(NULL);
    pid = fork();
    if (pid < 0) {
        fprintf(stderr, "gpuipc_test: fork: %s\n", strerror(errno));
        close(sv[0]);
        close(sv[1]);
        return -1;
    }
    if (pid == 0) {
        gpuipc_session_end end;
        int verdict;

        close(sv[0]);
        if (other[0] >= 0)
            close(other[0]);
        if (other[1] >= 0)
            close(other[1]);
        verdict = consumer_main(sv[1], o, inject, t0, &end);
        fflush(NULL);
        _exit(verdict);
    }
    close(sv[1]);
    return pid;
}

/* ---- --serve and --connect -------------------------------------------------------------- */

/* Refused connections (another uid): the first is said in full, the rest
 * counted, so that a peer that connects in a loop cannot flood the log. */
typedef struct refusals {
    const gpuipc_log *log;
    unsigned count;
} refusals;

static void log_refused(const char *why, void *arg)
{
    refusals *r = arg;

    if (r->count++ == 0)
        gpuipc_log_step(r->log, GPUIPC_LOG_QUIET, NULL, GPUIPC_STEP_HELLO, GPUIPC_LOG_NO_TIME,
                        "%s", why);
}

static void say_refusals(const refusals *r)
{
    if (r->count > 1)
        gpuipc_log_step(r->log, GPUIPC_LOG_QUIET, NULL, GPUIPC_STEP_HELLO, GPUIPC_LOG_NO_TIME,
                        "refused %u connections in all from processes of other users (the "
                        "first is named above)", r->count);
}

/* A refused path is a bad argument (exit 2); anything else a failure. */
static int listen_code(int rc)
{
    return rc == -EPERM || rc == -EEXIST || rc == -ENOTDIR || rc == -EADDRINUSE ||
                   rc == -ENOENT || rc == -EACCES
               ? GPUIPC_USAGE
               : GPUIPC_FAIL;
}

/* How many connections that close before their HELLO (a liveness check of
 * a second --serve, a port scanner) --serve drops while it waits for its
 * consumer, before it gives up. */
#define MAX_DROPPED 64

/* Waits on ep, until deadline_ns, for a consumer that says HELLO: a
 * connection refused for its uid, or one that closes before its HELLO, is
 * dropped and the wait goes on. Returns 0 with run->w open and HELLO done, or
 * a negative errno with err. */
static int accept_consumer(producer_run *run, gpuipc_endpoint *ep, uint64_t deadline_ns,
                           refusals *refused, gpuipc_err *err)
{
    unsigned dropped = 0;
    gpuipc_peer peer;
    int sock, rc;

    for (;;) {
        sock = gpuipc_endpoint_accept(ep, run->o->allow_uid, deadline_ns, log_refused, refused,
                                      &peer, err);
        if (sock < 0 && dropped > 0) {
            size_t used = strlen(err->msg);

            snprintf(err->msg + used, sizeof(err->msg) - used, "; %u connection%s closed "
                     "before its HELLO and %s dropped", dropped, dropped == 1 ? "" : "s",
                     dropped == 1 ? "was" : "were");
        }
        if (sock < 0)
            return sock;
        g_cred_pid = peer.pid > 0 ? (int)peer.pid : -1;
        run->env.cred_pid = g_cred_pid;
        if ((rc = gpuipc_wire_open(&run->w, sock, "consumer", err)) < 0) {
            close(sock);
            return rc;
        }
        rc = producer_hello(run, err);
        if (rc == 0) {
            gpuipc_log_step(&run->env.log, GPUIPC_LOG_NORMAL, NULL, GPUIPC_STEP_HELLO,
                            GPUIPC_LOG_NO_TIME, "consumer pid %d (uid %u) connected",
                            (int)peer.pid, (unsigned)peer.uid);
            return 0;
        }
        gpuipc_wire_close(run->w);
        run->w = NULL;
        /* A peer that closed before its HELLO was not a consumer: wait on. */
        if (rc != -EPIPE || gpuipc_wire_stop != 0)
            return rc;
        if (++dropped > MAX_DROPPED)
            return gpuipc_err_set(err, -EPIPE, "--serve %s: gave up during hello: %u "
                                  "connections closed before their HELLO", run->o->serve,
                                  dropped);
        if (gpuipc_clock_ms_left(deadline_ns) == 0)
            return gpuipc_err_set(err, -ETIMEDOUT, "--serve %s: timed out during hello: the "
                                  "last of %u connections closed before its HELLO and was "
                                  "dropped", run->o->serve, dropped);
        gpuipc_log_step(&run->env.log, GPUIPC_LOG_VERBOSE, NULL, GPUIPC_STEP_HELLO,
                        GPUIPC_LOG_NO_TIME, "dropped a connection from pid %d that closed "
                        "before its HELLO (%u so far); still waiting", (int)peer.pid, dropped);
    }
}

/* --serve PATH: the producer's role, for one consumer that connects there.
 * What can be decided without a consumer (no GPU, an impossible --size) is
 * decided before the socket exists. */
static int serve_main(const gpuipc_options *o, const gpuipc_mech **sel, size_t nsel,
                      const gpuipc_mech **req, size_t nreq, const gpuipc_inject *inject,
                      uint64_t t0)
{
    static producer_run run;
    gpuipc_log log = {GPUIPC_ROLE_PRODUCER, o->level, t0, 1};
    refusals refused = {&log, 0};
    gpuipc_endpoint ep;
    gpuipc_err err;
    char line[GPUIPC_ERR_LEN + 128];
    int code, rc;

    catch_stop_signals();
    if ((rc = gpuipc_endpoint_check(o->serve, &err)) < 0) {
        fprintf(stderr, "gpuipc_test: %s\n", err.msg);
        return listen_code(rc);
    }
    producer_init(&run, o, sel, nsel, req, nreq, inject, t0);
    code = producer_open(&run);
    if (code == GPUIPC_USAGE) {
        gpuipc_gpu_close(run.env.gpu);
        return code;
    }
    if (code == GPUIPC_SKIP) {
        print_skip_line(&run, run.cuda, &run.cuda_why);
        return GPUIPC_SKIP;
    }
    if (code != 0) {
        snprintf(line, sizeof(line), "result: FAIL: --serve %s: not listening: %.400s (exit 1)",
                 o->serve, run.cuda_why.msg);
        gpuipc_log_line(1, line);
        return GPUIPC_FAIL;
    }
    if ((rc = gpuipc_endpoint_listen(&ep, o->serve, &err)) < 0) {
        fprintf(stderr, "gpuipc_test: %s\n", err.msg);
        gpuipc_gpu_close(run.env.gpu);
        return listen_code(rc);
    }
    if (ep.file)
        snprintf(g_sock_path, sizeof(g_sock_path), "%s", ep.path);
    gpuipc_log_step(&log, GPUIPC_LOG_NORMAL, NULL, GPUIPC_STEP_HELLO, GPUIPC_LOG_NO_TIME,
                    "listening on %s%s; waiting up to %.1f s for gpuipc_test --connect %s",
                    o->serve, ep.file ? " (mode 0600)" : " (abstract)",
                    (double)o->timeout_ns / 1e9, o->serve);
    rc = accept_consumer(&run, &ep, gpuipc_clock_deadline(o->timeout_ns), &refused, &err);
    say_refusals(&refused);
    /* One consumer per run: the name goes as soon as it has connected. */
    if (g_sock_removed)
        ep.file = 0;
    g_sock_path[0] = '\0';
    gpuipc_endpoint_close(&ep);
    if (rc < 0) {
        gpuipc_log_step(&log, GPUIPC_LOG_QUIET, NULL, GPUIPC_STEP_HELLO, GPUIPC_LOG_NO_TIME,
                        "FAIL %s", err.msg);
        snprintf(run.lost, sizeof(run.lost), "%s", err.msg);
        return producer_finish(&run, GPUIPC_FAIL, t0);
    }
    code = producer_scenarios(&run);
    return producer_finish(&run, code, t0);
}

static const char *verdict_name(int code)
{
    return code == GPUIPC_PASS ? "PASS" : code == GPUIPC_SKIP ? "SKIP"
         : code == GPUIPC_USAGE ? "USAGE ERROR" : "FAIL";
}

/* The consumer's last line in two-terminal mode: the session's status, which
 * the producer's is too, and what each side concluded. */
static void consumer_result_line(const char *path, int code, const gpuipc_session_end *end,
                                 char *line, size_t len)
{
    char producer[160];

    if (end->said_bye)
        snprintf(producer, sizeof(producer), "the producer concluded %s: %u passed, %u failed, "
                 "%u skipped", verdict_name(end->bye.code), end->bye.passed, end->bye.failed,
                 end->bye.skipped);
    else
        snprintf(producer, sizeof(producer), "the session ended without the producer's verdict");
    if (gpuipc_wire_stop != 0)
        code = 128 + (int)gpuipc_wire_stop;
    snprintf(line, len, "result: %s: the session with %s; %s; this side %s%.300s (exit %d)",
             code >= 128 ? "STOPPED" : verdict_name(code), path, producer,
             end->own == GPUIPC_PASS ? "passed" : "failed: ",
             end->own == GPUIPC_PASS ? "" : end->reason, code);
}

static int connect_main(const gpuipc_options *o, const gpuipc_inject *inject, uint64_t t0)
{
    gpuipc_log log = {GPUIPC_ROLE_CONSUMER, o->level, t0, 1};
    gpuipc_session_end end;
    gpuipc_peer peer;
    gpuipc_err err;
    char line[1024];
    int sock, code;

    catch_stop_signals();
    sock = gpuipc_endpoint_connect(o->connect, o->allow_uid,
                                   gpuipc_clock_deadline(o->timeout_ns), &peer, &err);
    if (sock < 0) {
        gpuipc_log_step(&log, GPUIPC_LOG_QUIET, NULL, GPUIPC_STEP_HELLO, GPUIPC_LOG_NO_TIME,
                        "FAIL %s", err.msg);
        code = check_fds_at_exit(&log, stop_code(GPUIPC_FAIL));
        snprintf(line, sizeof(line), "result: %s: no session with %s: %.400s (exit %d)",
                 code >= 128 ? "STOPPED" : "FAIL", o->connect, err.msg, code);
        gpuipc_log_line(1, line);
        return code;
    }
    gpuipc_log_step(&log, GPUIPC_LOG_NORMAL, NULL, GPUIPC_STEP_HELLO, GPUIPC_LOG_NO_TIME,
                    "connected to %s: producer pid %d (uid %u)", o->connect, (int)peer.pid,
                    (unsigned)peer.uid);
    g_parent_pid = 0;
    g_cred_pid = peer.pid > 0 ? (int)peer.pid : -1;
    code = consumer_main(sock, o, inject, t0, &end);
    consumer_result_line(o->connect, code, &end, line, sizeof(line));
    gpuipc_log_line(1, line);
    return code;
}

/* ---- --fault-matrix ---------------------------------------------------------------------- */

/* matrix holds_gpu: whether the driver still lists pid as holding GPU
 * memory (NVML). */
static int matrix_holds_gpu(void *arg, pid_t pid)
{
    uint64_t bytes = 0;
    int listed = 0;

    (void)arg;
    if (gpuipc_nvml_pid_bytes(pid, &bytes, &listed, NULL) < 0)
        return -EIO;
    return listed;
}

/* --fault-matrix: every step x action of both roles, each a --serve and
 * --connect pair of this program, over --only (default vmm). A stop signal
 * ends the pair under way and the matrix, with 130 or 143. */
static int run_fault_matrix(const gpuipc_options *o, const gpuipc_mech *const *sel,
                            size_t nsel)
{
    char prog[4096], size[32], line[512], checked[GPUIPC_ERR_LEN + 64] = "";
    gpuipc_matrix_opts mo;
    gpuipc_matrix_totals t;
    gpuipc_err err;
    uint64_t bytes;
    ssize_t n;
    int rc, listed, count = 0;

    if (o->only != NULL && nsel != 1) {
        fprintf(stderr, "gpuipc_test: --fault-matrix: name one mechanism with --only\n");
        return GPUIPC_USAGE;
    }
    if (o->only == NULL) /* the default selection is every GPU mechanism: vmm stands for it */
        sel = NULL;
    n = readlink("/proc/self/exe", prog, sizeof(prog) - 1);
    if (n <= 0) {
        fprintf(stderr, "gpuipc_test: --fault-matrix: readlink /proc/self/exe: %s\n",
                strerror(errno));
        return GPUIPC_FAIL;
    }
    prog[n] = '\0';
    catch_stop_signals();
    memset(&mo, 0, sizeof(mo));
    mo.prog = prog;
    mo.mech = sel != NULL ? sel[0]->name : "vmm";
    snprintf(size, sizeof(size), "%llu", (unsigned long long)(o->size_set ? o->size : 8ull << 20));
    mo.size = size;
    mo.timeout_s = o->timeout_set ? (double)o->timeout_ns / 1e9 : 2.0;
    mo.margin_s = 3.0;
    mo.verbose = o->level == GPUIPC_LOG_VERBOSE;
    mo.fd = 1;
    if (sel == NULL || sel[0]->needs_cuda) {
        /* The pairs exec at once, so this process may start the driver;
         * it opens no context of its own. */
        if (gpuipc_gpu_count(&count, &err) < 0 || o->device >= count) {
            if (count > 0)
                gpuipc_err_set(&err, -ENODEV, "no GPU %d (%d visible)", o->device, count);
            printf("gpuipc_test: SKIP: --fault-matrix %s: %s\n", mo.mech, err.msg);
            return GPUIPC_SKIP;
        }
        if (gpuipc_nvml_pid_bytes(getpid(), &bytes, &listed, &err) == 0) {
            mo.holds_gpu = matrix_holds_gpu;
            snprintf(checked, sizeof(checked), "; after each case, NVML must list neither "
                     "process as holding GPU memory");
        } else {
            snprintf(checked, sizeof(checked), "; whether the driver released the pair's GPU "
                     "memory is not checked: %.400s", err.msg);
        }
    }
    printf("fault matrix over %s: every step x action of both roles (%s), each a --serve and "
           "--connect pair; --timeout %.2f s, margin %.1f s%s\n", mo.mech,
           "exit, kill, hang, corrupt, extra-fds, close", mo.timeout_s, mo.margin_s, checked);
    fflush(stdout);
    rc = gpuipc_matrix_run(&mo, &t, &err);
    if (rc == -EINTR || gpuipc_wire_stop != 0) {
        const char *name = sigabbrev_np((int)gpuipc_wire_stop);

        snprintf(line, sizeof(line), "result: STOPPED: fault matrix over %s: stopped by SIG%s "
                 "after %u cases; the pair under way was killed, nothing is left running "
                 "(exit %d)", mo.mech, name ? name : "?", t.cases, stop_code(GPUIPC_FAIL));
        gpuipc_log_line(1, line);
        return stop_code(GPUIPC_FAIL);
    }
    if (rc < 0) {
        fprintf(stderr, "gpuipc_test: --fault-matrix: %s\n", err.msg);
        return GPUIPC_FAIL;
    }
    snprintf(line, sizeof(line), "result: %s: fault matrix over %s: %u cases, %u survived, "
             "%u hangs, %u leaks, %u wrong reports, in %.1f s (exit %d)",
             rc == 0 ? "PASS" : "FAIL", mo.mech, t.cases, t.survived, t.hangs, t.leaks,
             t.wrong, t.seconds, rc == 0 ? GPUIPC_PASS : GPUIPC_FAIL);
    gpuipc_log_line(1, line);
    return rc == 0 ? GPUIPC_PASS : GPUIPC_FAIL;
}

/* ---- main ---------------------------------------------------------------------------------- */

int main(int argc, char **argv)
{
    const gpuipc_mech *sel[NMECH], *req[NMECH];
    uint64_t t0 = gpuipc_clock_ns();
    gpuipc_options o;
    gpuipc_inject inject;
    gpuipc_err err;
    size_t nsel, nreq, i;
    int sv[2], sv2[2] = {-1, -1};
    pid_t child, child2 = -1;

    /* Check prints through stdio, the step log with write(): line buffering
     * keeps the two in order, and nothing is pending when the process forks. */
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (gpuipc_options_parse(&o, argc, argv, &err) < 0) {
        fprintf(stderr, "gpuipc_test: %s\nTry 'gpuipc_test --help'.\n", err.msg);
        return GPUIPC_USAGE;
    }
    if (o.help) {
        usage(stdout);
        return GPUIPC_PASS;
    }
    if (o.version) {
        printf("gpuipc_test %s (protocol %d, CUDA %d.%d headers)\n", GPUIPC_VERSION,
               GPUIPC_WIRE_VERSION, CUDA_VERSION / 1000, CUDA_VERSION % 1000 / 10);
        return GPUIPC_PASS;
    }
    if (gpuipc_inject_parse(getenv("GPUIPC_FAULT"), getenv("GPUIPC_SABOTAGE"), &inject,
                            &err) < 0) {
        fprintf(stderr, "gpuipc_test: %s\n", err.msg);
        return GPUIPC_USAGE;
    }
    if (gpuipc_mech_select(registry, NMECH, o.pairs != NULL ? "vmm" : o.only, sel, &nsel,
                           &err) < 0) {
        fprintf(stderr, "gpuipc_test: --only: %s\nTry 'gpuipc_test --help'.\n", err.msg);
        return GPUIPC_USAGE;
    }
    /* --bench measures the host baseline (memfd) beside the default set. */
    if (o.bench && o.only == NULL && nsel < NMECH &&
        gpuipc_mech_find(sel, nsel, "memfd") == NULL)
        sel[nsel++] = gpuipc_mech_find(registry, NMECH, "memfd");
    /* --destructive adds the destructive mechanisms to the default set; one
     * named by --only needs the flag all the same. */
    if (o.destructive && o.only == NULL && o.pairs == NULL)
        for (i = 0; i < NMECH && nsel < NMECH; i++)
            if (registry[i]->destructive)
                sel[nsel++] = registry[i];
    for (i = 0; i < nsel; i++) {
        if (sel[i]->destructive && !o.destructive) {
            fprintf(stderr, "gpuipc_test: --only %s: that mechanism makes a GPU kernel fault "
                    "on purpose, which ruins the CUDA context of a consumer forked for it; "
                    "add --destructive to run it\nTry 'gpuipc_test --help'.\n", sel[i]->name);
            return GPUIPC_USAGE;
        }
    }
    nreq = 0;
    if (o.require != NULL &&
        gpuipc_mech_select(registry, NMECH, o.require, req, &nreq, &err) < 0) {
        fprintf(stderr, "gpuipc_test: --require: %s\nTry 'gpuipc_test --help'.\n", err.msg);
        return GPUIPC_USAGE;
    }
    for (i = 0; i < nreq; i++) {
        if (gpuipc_mech_find(sel, nsel, req[i]->name) == NULL) {
            fprintf(stderr, "gpuipc_test: --require %s: that mechanism is not selected to run "
                    "(add it to --only)\n", req[i]->name);
            return GPUIPC_USAGE;
        }
    }
    if (o.list)
        return run_list(&o, &inject, t0);
    if (o.fault_matrix)
        return run_fault_matrix(&o, sel, nsel);
    g_have_fds_at_start = gpuipc_account_snapshot(&g_fds_at_start, &err) == 0;
    if (o.serve != NULL)
        return serve_main(&o, sel, nsel, req, nreq, &inject, t0);
    if (o.connect != NULL)
        return connect_main(&o, &inject, t0);
    catch_stop_signals();
    if (o.bench)
        measure_oneshots(&o);

    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
        fprintf(stderr, "gpuipc_test: socketpair AF_UNIX SOCK_SEQPACKET: %s\n", strerror(errno));
        return GPUIPC_FAIL;
    }
    g_parent_pid = getpid();
    /* A destructive scenario gets a sacrificial consumer of its own, forked
     * like the other before any CUDA call. */
    for (i = 0; i < nsel; i++)
        if (sel[i]->destructive)
            break;
    if (i < nsel) {
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv2) < 0) {
            fprintf(stderr, "gpuipc_test: socketpair AF_UNIX SOCK_SEQPACKET: %s\n",
                    strerror(errno));
            close(sv[0]);
            close(sv[1]);
            return GPUIPC_FAIL;
        }
        child2 = fork_consumer(sv2, sv, &o, &inject, t0);
        if (child2 < 0) {
            close(sv[0]);
            close(sv[1]);
            return GPUIPC_FAIL;
        }
    }
    child = fork_consumer(sv, sv2, &o, &inject, t0);
    if (child < 0) {
        if (child2 > 0) {
            close(sv2[0]);
            kill(child2, SIGKILL);
            waitpid(child2, NULL, 0);
        }
        return GPUIPC_FAIL;
    }
    return producer_main(sv[0], child, sv2[0], child2, &o, sel, nsel, req, nreq, &inject, t0);
}
