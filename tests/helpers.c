/* helpers.c: running real processes and counting their resources for the suites. */
#include "helpers.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int th_fd_count(void)
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *de;
    int n = 0;

    if (d == NULL)
        return -1;
    while ((de = readdir(d)) != NULL)
        if (de->d_name[0] != '.')
            n++;
    closedir(d);
    return n - 1; /* the directory's own FD */
}

const char *th_program(void)
{
    const char *bin = getenv("GPUIPC_TEST_BIN");

    return bin != NULL && bin[0] != '\0' ? bin : "./gpuipc_test";
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

int th_spawn(th_run *r, const char *const *args, const char *const *env, double timeout_s,
             double grace_s, th_line_fn on_line, void *arg)
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
    argv[0] = th_program();
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
        /* The test runner's own Check selection is not the program's. */
        unsetenv("CK_RUN_SUITE");
        unsetenv("CK_RUN_CASE");
        for (i = 0; env != NULL && env[i] != NULL; i++)
            putenv((char *)env[i]);
        execv(argv[0], (char *const *)argv);
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

int th_exited(const th_run *r, int code)
{
    return r->finished && WIFEXITED(r->status) && WEXITSTATUS(r->status) == code;
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

int th_line_has(const char *text, const char *a, const char *b)
{
    const char *line = text;

    while (*line != '\0') {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        char buf[2048];

        if (len >= sizeof(buf))
            len = sizeof(buf) - 1;
        memcpy(buf, line, len);
        buf[len] = '\0';
        if (strstr(buf, a) != NULL && strstr(buf, b) != NULL)
            return 1;
        if (end == NULL)
            break;
        line = end + 1;
    }
    return 0;
}

pid_t th_child_of(pid_t parent)
{
    DIR *d = opendir("/proc");
    struct dirent *de;
    pid_t found = -1;

    while (d != NULL && (de = readdir(d)) != NULL && found < 0) {
        char path[300], buf[512], *p;
        FILE *f;
        int ppid;

        if (de->d_name[0] < '1' || de->d_name[0] > '9')
            continue;
        snprintf(path, sizeof(path), "/proc/%s/stat", de->d_name);
        f = fopen(path, "re");
        if (f == NULL)
            continue;
        /* The command name may hold spaces and parentheses: parse after the last ')'. */
        if (fgets(buf, sizeof(buf), f) != NULL && (p = strrchr(buf, ')')) != NULL &&
            sscanf(p + 2, "%*c %d", &ppid) == 1 && ppid == parent)
            found = atoi(de->d_name);
        fclose(f);
    }
    if (d != NULL)
        closedir(d);
    return found;
}

/* ---- a JSON validator, so that tests can parse what the program writes ---- */

typedef struct jp {
    const char *s, *p;
    char *why;
    size_t len;
    int depth;
} jp;

static int jp_fail(jp *j, const char *what)
{
    snprintf(j->why, j->len, "at offset %ld: %s", (long)(j->p - j->s), what);
    return 0;
}

static void jp_ws(jp *j)
{
    while (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r')
        j->p++;
}

static int jp_value(jp *j);

static int jp_string(jp *j)
{
    if (*j->p != '"')
        return jp_fail(j, "expected a string");
    for (j->p++; *j->p != '"'; j->p++) {
        if ((unsigned char)*j->p < 0x20)
            return jp_fail(j, "control character in a string");
        if (*j->p == '\\') {
            j->p++;
            if (*j->p == 'u') {
                int k;

                for (k = 1; k <= 4; k++)
                    if (!isxdigit((unsigned char)j->p[k]))
                        return jp_fail(j, "bad \\u escape");
                j->p += 4;
            } else if (strchr("\"\\/bfnrt", *j->p) == NULL || *j->p == '\0') {
                return jp_fail(j, "bad escape");
            }
        }
    }
    j->p++;
    return 1;
}

static int jp_number(jp *j)
{
    const char *start = j->p;

    if (*j->p == '-')
        j->p++;
    if (*j->p == '0')
        j->p++;
    else if (*j->p >= '1' && *j->p <= '9')
        while (isdigit((unsigned char)*j->p))
            j->p++;
    else
        return jp_fail(j, "expected a value");
    if (*j->p == '.') {
        j->p++;
        if (!isdigit((unsigned char)*j->p))
            return jp_fail(j, "bad fraction");
        while (isdigit((unsigned char)*j->p))
            j->p++;
    }
    if (*j->p == 'e' || *j->p == 'E') {
        j->p++;
        if (*j->p == '+' || *j->p == '-')
            j->p++;
        if (!isdigit((unsigned char)*j->p))
            return jp_fail(j, "bad exponent");
        while (isdigit((unsigned char)*j->p))
            j->p++;
    }
    return j->p > start;
}

static int jp_members(jp *j, char close, int keyed)
{
    j->p++;
    jp_ws(j);
    if (*j->p == close) {
        j->p++;
        return 1;
    }
    for (;;) {
        jp_ws(j);
        if (keyed) {
            if (!jp_string(j))
                return 0;
            jp_ws(j);
            if (*j->p++ != ':')
                return jp_fail(j, "expected ':'");
        }
        if (!jp_value(j))
            return 0;
        jp_ws(j);
        if (*j->p == ',') {
            j->p++;
            continue;
        }
        if (*j->p++ != close)
            return jp_fail(j, keyed ? "expected ',' or '}'" : "expected ',' or ']'");
        return 1;
    }
}

static int jp_value(jp *j)
{
    int ok;

    jp_ws(j);
    if (++j->depth > 64)
        return jp_fail(j, "nested too deep");
    if (*j->p == '{')
        ok = jp_members(j, '}', 1);
    else if (*j->p == '[')
        ok = jp_members(j, ']', 0);
    else if (*j->p == '"')
        ok = jp_string(j);
    else if (strncmp(j->p, "true", 4) == 0 || strncmp(j->p, "null", 4) == 0)
        ok = (j->p += 4, 1);
    else if (strncmp(j->p, "false", 5) == 0)
        ok = (j->p += 5, 1);
    else
        ok = jp_number(j);
    j->depth--;
    return ok;
}

int th_json_valid(const char *text, char *why, size_t len)
{
    jp j = {.s = text, .p = text, .why = why, .len = len};

    why[0] = '\0';
    if (!jp_value(&j))
        return 0;
    jp_ws(&j);
    if (*j.p != '\0')
        return jp_fail(&j, "text after the value");
    return 1;
}

void th_add_unless_valgrind(TCase *tc, const TTest *test, const char *why)
{
    const char *v = getenv("GPUIPC_VALGRIND");

    if (v == NULL || v[0] == '\0') {
        tcase_add_test(tc, test);
        return;
    }
    fprintf(stderr, "NOT RUN under valgrind: %s: %s\n", test->name, why);
}
