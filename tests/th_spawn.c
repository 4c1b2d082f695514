/* SPDX-License-Identifier: Apache-2.0 */
/* th_spawn.c: running the program under a deadline as a process group,
 * for the suites (th_spawn.h). */
#include "th_spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

const char *th_program(void)
{
    const char *bin = getenv("GPUIPC_TEST_BIN");

    return bin != NULL && bin[0] != '\0' ? bin : "./gpuipc_test";
}

const char *th_beside(const char *name)
{
    static char path[512];
    ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
    char *slash;

    path[n > 0 ? n : 0] = '\0';
    if (n <= 0 || (slash = strrchr(path, '/')) == NULL) {
        snprintf(path, sizeof(path), "build/tests/%s", name);
        return path;
    }
    snprintf(slash + 1, sizeof(path) - (size_t)(slash + 1 - path), "%s", name);
    return path;
}

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void reap_all(void)
{
    while (waitpid(-1, NULL, WNOHANG) > 0)
        ;
}

/* Reads what is available into r, calling on_line for each whole line.
 * Returns 0 at EOF, 1 otherwise. */
static int drain(int fd, th_run *r, size_t *line_start, pid_t pgid, th_line_fn on_line,
                 void *arg)
{
    char buf[4096];
    ssize_t n = read(fd, buf, sizeof(buf));

    if (n == 0)
        return 0;
    if (n < 0)
        return errno == EINTR || errno == EAGAIN ? 1 : 0;
    if ((size_t)n > sizeof(r->out) - 1 - r->len)
        n = (ssize_t)(sizeof(r->out) - 1 - r->len);
    memcpy(r->out + r->len, buf, (size_t)n);
    r->len += (size_t)n;
    r->out[r->len] = '\0';
    for (;;) {
        char *nl = memchr(r->out + *line_start, '\n', r->len - *line_start);
        char line[2048];
        size_t ll;

        if (nl == NULL)
            break;
        ll = (size_t)(nl - (r->out + *line_start));
        if (ll >= sizeof(line))
            ll = sizeof(line) - 1;
        memcpy(line, r->out + *line_start, ll);
        line[ll] = '\0';
        *line_start = (size_t)(nl - r->out) + 1;
        if (on_line != NULL)
            on_line(line, pgid, arg);
    }
    return 1;
}

/* The names are copied out first: unsetenv() moves the later entries of
 * environ down, so a scan that unset as it went would step over the entry
 * after each one it removed. */
int th_unset_check_variables(void)
{
    size_t n = 0, k = 0, i;
    char **names;
    int rc = 0;

    for (i = 0; environ[i] != NULL; i++)
        if (strncmp(environ[i], "CK_", 3) == 0)
            n++;
    names = calloc(n + 1, sizeof(*names));
    if (names == NULL)
        return -1;
    for (i = 0; environ[i] != NULL && k < n; i++)
        if (strncmp(environ[i], "CK_", 3) == 0)
            names[k++] = strndup(environ[i], strcspn(environ[i], "="));
    for (i = 0; i < k; i++) {
        if (names[i] == NULL || unsetenv(names[i]) < 0)
            rc = -1;
        free(names[i]);
    }
    free(names);
    return rc;
}

int th_spawn(th_run *r, const char *const *args, const char *const *env, double timeout_s,
             double grace_s, th_line_fn on_line, void *arg)
{
    return th_spawn_file(r, th_program(), args, env, timeout_s, grace_s, on_line, arg);
}

int th_spawn_file(th_run *r, const char *file, const char *const *args, const char *const *env,
                  double timeout_s, double grace_s, th_line_fn on_line, void *arg)
{
    const char *argv[32];
    size_t line_start = 0;
    int pipefd[2], open_pipe = 1, i;
    double start, limit;
    pid_t pid;

    memset(r, 0, sizeof(*r));
    /* Orphans of the run become this process's children, so that they can
     * be counted and reaped. */
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    if (pipe2(pipefd, O_CLOEXEC) < 0)
        return -1;
    argv[0] = file;
    for (i = 0; i < 30 && args[i] != NULL; i++)
        argv[i + 1] = args[i];
    argv[i + 1] = NULL;
    start = now_s();
    pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        setpgid(0, 0);
        dup2(pipefd[1], 1);
        dup2(pipefd[1], 2);
        /* The test runner's Check settings are not the program's: with its
         * CK_RUN_SUITE the program would select nothing, and with its
         * CK_TAP_LOG_FILE_NAME, CK_XML_LOG_FILE_NAME or CK_LOG_FILE_NAME
         * the program would write its own report over the runner's. What a
         * test passes in env is applied afterwards, so it still can set them. */
        if (th_unset_check_variables() < 0) {
            fprintf(stderr, "th_spawn: removing the CK_* variables: out of memory\n");
            _exit(127);
        }
        for (i = 0; env != NULL && env[i] != NULL; i++)
            putenv((char *)env[i]);
        execv(argv[0], (char *const *)argv);
        fprintf(stderr, "th_spawn: execv %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    setpgid(pid, pid);
    close(pipefd[1]);

    limit = start + timeout_s;
    while (!r->finished) {
        struct pollfd p = {.fd = pipefd[0], .events = POLLIN};
        int status;
        double left = limit - now_s();

        if (left <= 0)
            break;
        if (open_pipe && poll(&p, 1, left > 0.05 ? 50 : (int)(left * 1000) + 1) > 0)
            open_pipe = drain(pipefd[0], r, &line_start, pid, on_line, arg);
        else if (!open_pipe)
            usleep(2000);
        if (waitpid(pid, &status, WNOHANG) == pid) {
            r->status = status;
            r->finished = 1;
            r->seconds = now_s() - start;
        }
    }
    if (!r->finished) {
        kill(-pid, SIGKILL);
        waitpid(pid, &r->status, 0);
        r->seconds = now_s() - start;
    }
    /* The rest of the group (the consumer) has grace_s to finish. */
    limit = now_s() + grace_s;
    while (now_s() < limit) {
        struct pollfd p = {.fd = pipefd[0], .events = POLLIN};

        reap_all();
        if (kill(-pid, 0) < 0 && errno == ESRCH)
            break;
        if (open_pipe && poll(&p, 1, 20) > 0)
            open_pipe = drain(pipefd[0], r, &line_start, pid, on_line, arg);
        else
            usleep(2000);
    }
    reap_all();
    if (kill(-pid, 0) == 0) {
        r->leftover = 1;
        kill(-pid, SIGKILL);
        usleep(20000);
        reap_all();
    }
    while (open_pipe) {
        struct pollfd p = {.fd = pipefd[0], .events = POLLIN};

        if (poll(&p, 1, 100) <= 0)
            break;
        open_pipe = drain(pipefd[0], r, &line_start, pid, on_line, arg);
    }
    close(pipefd[0]);
    return 0;
}

th_run *th_runs_alloc(size_t n)
{
    void *m = mmap(NULL, n * sizeof(th_run), PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS, -1, 0);

    return m == MAP_FAILED ? NULL : m;
}

void th_runs_free(th_run *runs, size_t n)
{
    if (runs != NULL)
        munmap(runs, n * sizeof(th_run));
}

int th_spawn_all(th_run *runs, size_t n, const char *const *const *args,
                 const char *const *const *env, double timeout_s, double grace_s,
                 th_line_fn const *on_line, void *const *arg)
{
    pid_t *pids = calloc(n, sizeof(pid_t));
    size_t i;
    int rc = 0;

    if (pids == NULL)
        return -1;
    for (i = 0; i < n; i++) {
        pids[i] = fork();
        if (pids[i] < 0) {
            fprintf(stderr, "th_spawn_all: fork %zu of %zu: %s\n", i + 1, n, strerror(errno));
            rc = -1;
            break;
        }
        if (pids[i] == 0) {
            int failed = th_spawn(&runs[i], args[i], env != NULL ? env[i] : NULL, timeout_s,
                                  grace_s, on_line != NULL ? on_line[i] : NULL,
                                  arg != NULL ? arg[i] : NULL) < 0;

            free(pids); /* a leak valgrind would count, and turn into exit 99 */
            _exit(failed);
        }
    }
    while (i-- > 0) {
        int status;

        if (waitpid(pids[i], &status, 0) != pids[i] || !WIFEXITED(status) ||
            WEXITSTATUS(status) != 0)
            rc = -1;
    }
    free(pids);
    return rc;
}

int th_exited(const th_run *r, int code)
{
    return r->finished && WIFEXITED(r->status) && WEXITSTATUS(r->status) == code;
}
