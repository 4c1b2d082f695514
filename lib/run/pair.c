/* SPDX-License-Identifier: Apache-2.0 */
/* pair.c: a --serve / --connect pair of processes under a deadline. */
#include "run/pair.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/stop.h"
#include "wire/wire.h"

static double seconds_since(uint64_t t0)
{
    return (double)(gpuipc_clock_ns() - t0) / 1e9;
}

/* Whether a Unix socket bound to sock (a path, or @name in the abstract
 * namespace, as /proc/net/unix shows both) is listening: 1, 0, or -1 where
 * /proc/net/unix cannot be read. */
static int listening(const char *sock)
{
    FILE *f = fopen("/proc/net/unix", "re");
    char line[512], path[256];
    unsigned long flags;
    int found = 0;

    if (f == NULL)
        return -1;
    while (!found && fgets(line, sizeof(line), f) != NULL)
        found = sscanf(line, "%*s %*s %*s %lx %*s %*s %*s %255s", &flags, path) == 2 &&
                (flags & 0x10000) != 0 /* __SO_ACCEPTCON: listen() was called */ &&
                strcmp(path, sock) == 0;
    fclose(f);
    return found;
}

/* Waits until the server pid listens on sock, exits, or limit seconds since
 * t0 pass, so that the consumer's own wait for a server (its --timeout,
 * which may be a fraction of a second here) starts when there is one: on a
 * loaded machine, or under a sanitizer, the server may take longer than
 * that to start. */
static void await_listening(pid_t pid, const char *sock, uint64_t t0, double limit)
{
    while (seconds_since(t0) < limit && gpuipc_stop_signal() == 0 && listening(sock) == 0) {
        siginfo_t si;

        memset(&si, 0, sizeof(si));
        if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == pid)
            return; /* it ended without listening: the consumer will say so */
        usleep(2000);
    }
}

void gpuipc_pair_clear_check_env(void)
{
    extern char **environ;
    char name[256];
    size_t i;

    /* Unsetting shifts environ, so look again from the start each time. */
    for (i = 0; environ[i] != NULL;) {
        const char *eq = strchr(environ[i], '=');
        size_t len = eq != NULL ? (size_t)(eq - environ[i]) : strlen(environ[i]);

        if (strncmp(environ[i], "CK_", 3) != 0 || len >= sizeof(name)) {
            i++;
            continue;
        }
        memcpy(name, environ[i], len);
        name[len] = '\0';
        unsetenv(name);
        i = 0;
    }
}

/* Whether entry ("NAME=value") sets the variable that item sets. */
static int same_name(const char *entry, const char *item)
{
    size_t n = strcspn(item, "=");

    return strncmp(entry, item, n) == 0 && entry[n] == '=';
}

/* The environment of a process of the pair, built before the fork: this
 * process's without Check's CK_* (the caller's own Check selection and
 * reports are not the pair's), then env and own ("NAME=value", later ones
 * replacing earlier ones of the same name). NULL if out of memory; the
 * caller frees the array (not the strings). */
static char **pair_environ(const char *const *env, const char *const *own)
{
    extern char **environ;
    const char *const *add[2] = {env, own};
    size_t n = 0, cap = 1, i, j, k;
    char **out;

    for (i = 0; environ[i] != NULL; i++)
        cap++;
    for (k = 0; k < 2; k++)
        for (i = 0; add[k] != NULL && add[k][i] != NULL; i++)
            cap++;
    if ((out = calloc(cap, sizeof(*out))) == NULL)
        return NULL;
    for (i = 0; environ[i] != NULL; i++)
        if (strncmp(environ[i], "CK_", 3) != 0)
            out[n++] = environ[i];
    for (k = 0; k < 2; k++)
        for (i = 0; add[k] != NULL && add[k][i] != NULL; i++) {
            for (j = 0; j < n && !same_name(out[j], add[k][i]); j++)
                ;
            out[j] = (char *)add[k][i];
            if (j == n)
                n++;
        }
    out[n] = NULL;
    return out;
}

/* The file execvp would run for name (a name without '/' is looked up on
 * the PATH), into buf; found before the fork. Returns buf, or name itself
 * where nothing on the PATH runs (execve then fails, and the child says so
 * by its status 127). */
static const char *find_program(const char *name, char *buf, size_t len)
{
    const char *path = getenv("PATH"), *p;

    if (strchr(name, '/') != NULL)
        return name;
    for (p = path != NULL ? path : "/usr/local/bin:/usr/bin:/bin"; *p != '\0';) {
        size_t n = strcspn(p, ":");

        snprintf(buf, len, "%.*s/%s", (int)(n ? n : 1), n ? p : ".", name);
        if (access(buf, X_OK) == 0)
            return buf;
        p += n + (p[n] == ':');
    }
    return name;
}

/* Starts prog with role ("--serve" or "--connect"), sock and args, under
 * the command wrap (NULL-terminated, may be NULL: unshare ... , found on the
 * PATH), output to out_fd, in process group pgid (0: a new one). Returns the
 * pid or -1. Everything is made ready before the fork: this process may run
 * threads (NVML's, the driver's), and the child, until it execs, makes only
 * async-signal-safe calls (no setenv, no malloc, no PATH search). */
static pid_t start(const char *prog, const char *const *wrap, const char *role,
                   const char *sock, const char *const *args, const char *const *env,
                   const char *const *own, int out_fd, pid_t pgid)
{
    const char *argv[2 * GPUIPC_PAIR_ARGS + 4], *file;
    char found[4096], **envp;
    pid_t pid, parent = getpid();
    size_t i, n = 0;

    for (i = 0; wrap != NULL && wrap[i] != NULL && i < GPUIPC_PAIR_ARGS; i++)
        argv[n++] = wrap[i];
    argv[n++] = prog;
    argv[n++] = role;
    argv[n++] = sock;
    for (i = 0; args != NULL && args[i] != NULL && i < GPUIPC_PAIR_ARGS; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    file = wrap != NULL && wrap[0] != NULL ? find_program(wrap[0], found, sizeof(found)) : prog;
    if ((envp = pair_environ(env, own)) == NULL)
        return -1;
    pid = fork();
    if (pid != 0) {
        if (pid > 0)
            setpgid(pid, pgid ? pgid : pid);
        free(envp);
        return pid;
    }
    setpgid(0, pgid);
    /* The pair lives in its own process group, out of reach of the
     * terminal's Ctrl-C: if the runner dies, however it dies, so does the
     * pair, and nothing is left running under PID 1. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
        _exit(127);
    dup2(out_fd, 1);
    dup2(out_fd, 2);
    execve(file, (char *const *)argv, envp);
    _exit(127);
}

/* Reads what is there on fd into p. Returns 0 at EOF. */
static int drain(int fd, gpuipc_pair_proc *p)
{
    char buf[4096];
    ssize_t n = read(fd, buf, sizeof(buf));

    if (n <= 0)
        return n < 0 && (errno == EAGAIN || errno == EINTR);
    if (p->len + 1 < sizeof(p->out)) {
        size_t k = (size_t)n < sizeof(p->out) - 1 - p->len ? (size_t)n
                                                          : sizeof(p->out) - 1 - p->len;

        memcpy(p->out + p->len, buf, k);
        p->len += k;
        p->out[p->len] = '\0';
    }
    return 1;
}

int gpuipc_pair_run(const char *prog, const char *sock, const char *const *args,
                    const char *const *cargs, const char *const *env, double timeout_s,
                    double grace_s, gpuipc_pair *r, gpuipc_err *err)
{
    return gpuipc_pair_run_env(prog, sock, args, cargs, env, NULL, timeout_s, grace_s, r, err);
}

int gpuipc_pair_run_env(const char *prog, const char *sock, const char *const *args,
                        const char *const *cargs, const char *const *env,
                        const char *const *cenv, double timeout_s, double grace_s,
                        gpuipc_pair *r, gpuipc_err *err)
{
    const gpuipc_pair_side p = {.sock = sock, .args = args};
    const gpuipc_pair_side c = {.sock = sock, .args = cargs, .env = cenv};

    return gpuipc_pair_run_sides(prog, &p, &c, env, 1, timeout_s, grace_s, r, err);
}

int gpuipc_pair_run_sides(const char *prog, const gpuipc_pair_side *ps,
                          const gpuipc_pair_side *cs, const char *const *env, int await,
                          double timeout_s, double grace_s, gpuipc_pair *r, gpuipc_err *err)
{
    int pipes[2][2] = {{-1, -1}, {-1, -1}}, open_pipe[2] = {1, 1}, done[2] = {0, 0};
    int stopped = 0;
    uint64_t t0 = gpuipc_clock_ns();
    double limit = timeout_s;
    pid_t pgid;
    int i;

    memset(r, 0, sizeof(*r));
    for (i = 0; i < 2; i++) {
        if (pipe2(pipes[i], O_CLOEXEC) < 0) {
            int e = errno;

            for (i = 0; i < 2; i++) {
                if (pipes[i][0] >= 0)
                    close(pipes[i][0]);
                if (pipes[i][1] >= 0)
                    close(pipes[i][1]);
            }
            return gpuipc_err_set(err, -e, "pipe2: %s", strerror(e));
        }
    }
    fflush(NULL);
    r->proc[0].pid = start(prog, ps->wrap, "--serve", ps->sock, ps->args, env, ps->env,
                           pipes[0][1], 0);
    pgid = r->proc[0].pid;
    if (pgid > 0 && await)
        await_listening(pgid, ps->sock, t0, limit);
    r->proc[1].pid = pgid > 0 ? start(prog, cs->wrap, "--connect", cs->sock, cs->args, env,
                                      cs->env, pipes[1][1], pgid)
                              : -1;
    close(pipes[0][1]);
    close(pipes[1][1]);
    if (r->proc[0].pid < 0 || r->proc[1].pid < 0) {
        int e = errno;

        if (pgid > 0) {
            kill(-pgid, SIGKILL);
            waitpid(pgid, NULL, 0);
        }
        close(pipes[0][0]);
        close(pipes[1][0]);
        return gpuipc_err_set(err, -e, "fork: %s", strerror(e));
    }
    for (i = 0; i < 2; i++)
        fcntl(pipes[i][0], F_SETFL, O_NONBLOCK);

    while (!(done[0] && done[1]) || open_pipe[0] || open_pipe[1]) {
        struct pollfd p[2];
        int np = 0, status;

        /* A stop signal ends the pair at once, as the deadline would. */
        if (gpuipc_stop_signal() != 0) {
            stopped = 1;
            limit = 0;
        }
        if (!(done[0] && done[1]) && seconds_since(t0) >= limit) {
            kill(-pgid, SIGKILL);
            for (i = 0; i < 2; i++) {
                if (!done[i] && waitpid(r->proc[i].pid, &status, 0) == r->proc[i].pid) {
                    r->proc[i].status = status;
                    r->proc[i].seconds = seconds_since(t0);
                    done[i] = 1;
                }
            }
        }
        for (i = 0; i < 2; i++) {
            if (!done[i] && waitpid(r->proc[i].pid, &status, WNOHANG) == r->proc[i].pid) {
                r->proc[i].status = status;
                r->proc[i].exited = 1;
                r->proc[i].seconds = seconds_since(t0);
                done[i] = 1;
                /* The other gets the grace, within the overall limit. */
                if (seconds_since(t0) + grace_s < limit)
                    limit = seconds_since(t0) + grace_s;
            }
        }
        for (i = 0; i < 2; i++) {
            if (open_pipe[i]) {
                p[np].fd = pipes[i][0];
                p[np].events = POLLIN;
                p[np++].revents = 0;
            }
        }
        /* Once both ended, a pipe still open belongs to a straggler of the
         * group: read what is there, then stop. */
        if (np == 0)
            usleep(5000);
        else if (poll(p, (nfds_t)np, done[0] && done[1] ? 100 : 20) <= 0 && done[0] && done[1])
            break;
        for (i = 0; i < 2; i++)
            if (open_pipe[i])
                open_pipe[i] = drain(pipes[i][0], &r->proc[i]);
    }
    close(pipes[0][0]);
    close(pipes[1][0]);
    if (kill(-pgid, 0) == 0) {
        r->leftover = 1;
        kill(-pgid, SIGKILL);
    }
    if (stopped)
        return gpuipc_err_set(err, -EINTR, "stopped by a signal: the pair was killed and "
                              "reaped");
    return 0;
}
