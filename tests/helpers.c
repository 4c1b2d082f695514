/* SPDX-License-Identifier: Apache-2.0 */
/* helpers.c: running real processes, counting their resources and checking the
 * documents they write, for the suites. */
#include "helpers.h"
#include "jschema.h"
#include "core/clock.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
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

int th_fds_inherited_below(int limit)
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *de;
    int n = 3;

    if (d == NULL)
        return -1;
    while ((de = readdir(d)) != NULL) {
        int fd = atoi(de->d_name), flags;

        if (de->d_name[0] == '.' || fd < 3 || fd >= limit || fd == dirfd(d))
            continue;
        flags = fcntl(fd, F_GETFD);
        n += flags >= 0 && !(flags & FD_CLOEXEC);
    }
    closedir(d);
    return n;
}

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

/* ---- an XML checker, so that tests can parse the reports Check writes ---- */

/* Elements nested deeper than this are reported rather than followed. */
#define XP_DEPTH 64

typedef struct xp {
    const char *s, *p, *e;
    char *why;
    size_t len;
} xp;

__attribute__((format(printf, 2, 3))) static int xp_fail(xp *x, const char *fmt, ...)
{
    int n = snprintf(x->why, x->len, "at offset %ld: ", (long)(x->p - x->s));
    va_list ap;

    if (n >= 0 && (size_t)n < x->len) {
        va_start(ap, fmt);
        vsnprintf(x->why + n, x->len - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return 0;
}

/* Returns 1 if the text at x->p starts with lit. */
static int xp_at(const xp *x, const char *lit)
{
    size_t n = strlen(lit);

    return (size_t)(x->e - x->p) >= n && memcmp(x->p, lit, n) == 0;
}

static int xp_is_ws(const xp *x)
{
    return x->p < x->e && (*x->p == ' ' || *x->p == '\t' || *x->p == '\n' || *x->p == '\r');
}

/* Skips whitespace. Returns 1 if there was any. */
static int xp_ws(xp *x)
{
    const char *start = x->p;

    while (xp_is_ws(x))
        x->p++;
    return x->p > start;
}

/* Returns 1 if c may stand in a name (first: at its start). Any byte of a
 * multi-byte UTF-8 character is let through. */
static int xp_name_char(int c, int first)
{
    return isalpha(c) || c == '_' || c == ':' || c >= 0x80 ||
           (!first && (isdigit(c) || c == '-' || c == '.'));
}

/* Skips a name. Returns its length, 0 where there is none. */
static size_t xp_name(xp *x)
{
    const char *start = x->p;

    while (x->p < x->e && xp_name_char((unsigned char)*x->p, x->p == start))
        x->p++;
    return (size_t)(x->p - start);
}

/* Checks and skips one character of text or of a value: XML allows no
 * control character but tab, newline and carriage return (and so no NUL,
 * which a file written over by another process may hold). */
static int xp_char(xp *x)
{
    unsigned char c = (unsigned char)*x->p;

    if (c < 0x20 && c != '\t' && c != '\n' && c != '\r')
        return xp_fail(x, "control character 0x%02x", c);
    x->p++;
    return 1;
}

/* Checks and skips the reference at '&': one of the five predefined
 * entities (a document without a DTD has no others), or a character
 * reference to a character that XML allows. */
static int xp_reference(xp *x)
{
    static const char *const named[] = {"&lt;", "&gt;", "&amp;", "&quot;", "&apos;"};
    unsigned long c = 0;
    const char *d, *end;
    size_t i;
    int hex;

    for (i = 0; i < sizeof(named) / sizeof(named[0]); i++)
        if (xp_at(x, named[i])) {
            x->p += strlen(named[i]);
            return 1;
        }
    if (!xp_at(x, "&#"))
        return xp_fail(x, "'&' starts neither a predefined entity nor a character reference");
    hex = xp_at(x, "&#x");
    d = x->p + 2 + hex;
    for (end = d; end < x->e && c <= 0x10FFFF; end++) {
        int ch = (unsigned char)*end;

        if (isdigit(ch))
            c = c * (hex ? 16 : 10) + (unsigned long)(ch - '0');
        else if (hex && isxdigit(ch))
            c = c * 16 + (unsigned long)(tolower(ch) - 'a' + 10);
        else
            break;
    }
    if (end == d || end >= x->e || *end != ';')
        return xp_fail(x, "a malformed character reference");
    if (!(c == 0x9 || c == 0xA || c == 0xD || (c >= 0x20 && c <= 0xD7FF) ||
          (c >= 0xE000 && c <= 0xFFFD) || (c >= 0x10000 && c <= 0x10FFFF)))
        return xp_fail(x, "a character reference to U+%lX, which XML does not allow", c);
    x->p = end + 1;
    return 1;
}

/* Skips past the first end, checking the characters on the way. */
static int xp_until(xp *x, const char *end, const char *what)
{
    while (!xp_at(x, end)) {
        if (x->p >= x->e)
            return xp_fail(x, "%s is not closed with '%s'", what, end);
        if (!xp_char(x))
            return 0;
    }
    x->p += strlen(end);
    return 1;
}

/* Checks and skips the comment at "<!--"; XML allows no "--" inside one. */
static int xp_comment(xp *x)
{
    x->p += 4;
    while (!xp_at(x, "-->")) {
        if (x->p >= x->e)
            return xp_fail(x, "a comment is not closed with '-->'");
        if (xp_at(x, "--"))
            return xp_fail(x, "'--' inside a comment");
        if (!xp_char(x))
            return 0;
    }
    x->p += 3;
    return 1;
}

/* Checks and skips the processing instruction at "<?" (not the XML
 * declaration, which only the start of the document may hold). */
static int xp_pi(xp *x)
{
    const char *target = x->p + 2;
    size_t n;

    x->p = target;
    n = xp_name(x);
    if (n == 0)
        return xp_fail(x, "a processing instruction without a target");
    if (n == 3 && strncasecmp(target, "xml", 3) == 0) {
        x->p = target - 2;
        return xp_fail(x, "an XML declaration that is not at the start");
    }
    if (xp_at(x, "?>")) {
        x->p += 2;
        return 1;
    }
    if (!xp_ws(x))
        return xp_fail(x, "expected whitespace or '?>' after the target");
    return xp_until(x, "?>", "a processing instruction");
}

/* Checks the attributes of a start tag up to the '>' or "/>" that ends it,
 * which is left to the caller. Each is name="value" or name='value', once
 * per tag. */
static int xp_attributes(xp *x)
{
    const char *names[32];
    size_t lens[32], k;
    int n = 0;

    for (;;) {
        int ws = xp_ws(x);
        const char *name;
        size_t nl;
        char q;

        if (x->p >= x->e)
            return xp_fail(x, "a tag is not closed");
        if (*x->p == '>' || xp_at(x, "/>"))
            return 1;
        if (!ws)
            return xp_fail(x, "expected whitespace, '>' or '/>'");
        name = x->p;
        nl = xp_name(x);
        if (nl == 0)
            return xp_fail(x, "expected an attribute name");
        for (k = 0; k < (size_t)n && k < 32; k++)
            if (lens[k] == nl && memcmp(names[k], name, nl) == 0)
                return xp_fail(x, "attribute %.*s appears twice", (int)nl, name);
        if (n < 32) {
            names[n] = name;
            lens[n] = nl;
        }
        n++;
        xp_ws(x);
        if (x->p >= x->e || *x->p != '=')
            return xp_fail(x, "attribute %.*s has no '='", (int)nl, name);
        x->p++;
        xp_ws(x);
        if (x->p >= x->e || (*x->p != '"' && *x->p != '\''))
            return xp_fail(x, "the value of %.*s is not quoted", (int)nl, name);
        q = *x->p++;
        while (x->p < x->e && *x->p != q) {
            if (*x->p == '<')
                return xp_fail(x, "'<' in the value of %.*s", (int)nl, name);
            if (*x->p == '&' ? !xp_reference(x) : !xp_char(x))
                return 0;
        }
        if (x->p >= x->e)
            return xp_fail(x, "the value of %.*s is not closed", (int)nl, name);
        x->p++;
    }
}

/* Returns 1 if the value from v to end may stand in the XML declaration
 * for its version (which: 0), encoding (1) or standalone (2). */
static int xp_declaration_value(int which, const char *v, const char *end)
{
    size_t n = (size_t)(end - v), k;

    if (which == 0) {
        for (k = 2; k < n && isdigit((unsigned char)v[k]); k++)
            ;
        return n >= 3 && v[0] == '1' && v[1] == '.' && k == n;
    }
    if (which == 1) {
        for (k = 1; k < n && (isalnum((unsigned char)v[k]) || strchr("._-", v[k]) != NULL); k++)
            ;
        return n >= 1 && isalpha((unsigned char)v[0]) && k == n;
    }
    return (n == 3 && memcmp(v, "yes", 3) == 0) || (n == 2 && memcmp(v, "no", 2) == 0);
}

/* Checks and skips the XML declaration, which must open the document:
 * version="1.n", then optionally encoding and standalone, in that order. */
static int xp_declaration(xp *x)
{
    static const char *const names[] = {"version", "encoding", "standalone"};
    int i;

    if (!xp_at(x, "<?xml") || x->e - x->p < 6 || strchr(" \t\r\n", x->p[5]) == NULL)
        return xp_fail(x, "no XML declaration ('<?xml version=...?>') at the start");
    x->p += 5;
    for (i = 0; i < 3; i++) {
        const char *before = x->p, *v;
        char q;

        if (!xp_ws(x) || !xp_at(x, names[i])) {
            x->p = before;
            if (i == 0)
                return xp_fail(x, "the XML declaration does not start with its version");
            continue;
        }
        x->p += strlen(names[i]);
        xp_ws(x);
        if (x->p >= x->e || *x->p != '=')
            return xp_fail(x, "%s has no '=' in the XML declaration", names[i]);
        x->p++;
        xp_ws(x);
        if (x->p >= x->e || (*x->p != '"' && *x->p != '\''))
            return xp_fail(x, "the value of %s is not quoted in the XML declaration", names[i]);
        q = *x->p++;
        v = x->p;
        while (x->p < x->e && *x->p != q)
            x->p++;
        if (x->p >= x->e)
            return xp_fail(x, "the value of %s is not closed in the XML declaration", names[i]);
        if (!xp_declaration_value(i, v, x->p)) {
            x->p = v;
            return xp_fail(x, "a value of %s that the XML declaration does not allow",
                           names[i]);
        }
        x->p++;
    }
    xp_ws(x);
    if (!xp_at(x, "?>"))
        return xp_fail(x, "expected '?>' to end the XML declaration");
    x->p += 2;
    return 1;
}

/* Skips whitespace, comments and processing instructions. */
static int xp_misc(xp *x)
{
    for (;;) {
        xp_ws(x);
        if (xp_at(x, "<!--")) {
            if (!xp_comment(x))
                return 0;
        } else if (xp_at(x, "<?")) {
            if (!xp_pi(x))
                return 0;
        } else {
            return 1;
        }
    }
}

/* Checks and skips the element at '<' followed by a name, with everything
 * inside it. Open elements are kept on a stack, not in recursion. */
static int xp_element(xp *x)
{
    const char *open[XP_DEPTH];
    size_t open_len[XP_DEPTH];
    int depth = 0;

    for (;;) {
        if (x->p >= x->e)
            return xp_fail(x, "<%.*s> is not closed", (int)open_len[depth - 1], open[depth - 1]);
        if (xp_at(x, "</")) {
            const char *name = x->p + 2;
            size_t nl;

            x->p = name;
            nl = xp_name(x);
            if (nl != open_len[depth - 1] || memcmp(name, open[depth - 1], nl) != 0)
                return xp_fail(x, "</%.*s> closes <%.*s>", (int)nl, name,
                               (int)open_len[depth - 1], open[depth - 1]);
            xp_ws(x);
            if (x->p >= x->e || *x->p != '>')
                return xp_fail(x, "expected '>' to end </%.*s", (int)nl, name);
            x->p++;
            if (--depth == 0)
                return 1;
        } else if (xp_at(x, "<!--")) {
            if (!xp_comment(x))
                return 0;
        } else if (xp_at(x, "<![CDATA[")) {
            x->p += 9;
            if (!xp_until(x, "]]>", "a CDATA section"))
                return 0;
        } else if (xp_at(x, "<?")) {
            if (!xp_pi(x))
                return 0;
        } else if (*x->p == '<') {
            const char *name = x->p + 1;
            size_t nl;

            x->p = name;
            nl = xp_name(x);
            if (nl == 0) {
                x->p = name - 1;
                return xp_fail(x, "a '<' that starts no tag");
            }
            if (!xp_attributes(x))
                return 0;
            if (*x->p == '/') {
                x->p += 2;
                if (depth == 0)
                    return 1;
            } else {
                if (depth == XP_DEPTH)
                    return xp_fail(x, "elements nested more than %d deep", XP_DEPTH);
                open[depth] = name;
                open_len[depth++] = nl;
                x->p++;
            }
        } else if (*x->p == '&') {
            if (!xp_reference(x))
                return 0;
        } else if (xp_at(x, "]]>")) {
            return xp_fail(x, "']]>' in text");
        } else if (!xp_char(x)) {
            return 0;
        }
    }
}

/* Checks that the whole text is UTF-8, which a document whose declaration
 * names no encoding is: no stray continuation byte, no truncated or
 * overlong sequence, no surrogate, nothing above U+10FFFF. */
static int xp_utf8(xp *x)
{
    while (x->p < x->e) {
        const unsigned char *u = (const unsigned char *)x->p;
        size_t need = (size_t)(x->e - x->p), k, n;
        unsigned long c;

        if (u[0] < 0x80) {
            x->p++;
            continue;
        }
        if (u[0] >= 0xC2 && u[0] <= 0xDF)
            n = 2, c = u[0] & 0x1F;
        else if (u[0] >= 0xE0 && u[0] <= 0xEF)
            n = 3, c = u[0] & 0x0F;
        else if (u[0] >= 0xF0 && u[0] <= 0xF4)
            n = 4, c = u[0] & 0x07;
        else
            return xp_fail(x, "byte 0x%02x is not UTF-8", u[0]);
        if (need < n)
            return xp_fail(x, "a UTF-8 sequence cut short by the end");
        for (k = 1; k < n; k++) {
            if ((u[k] & 0xC0) != 0x80)
                return xp_fail(x, "a UTF-8 sequence cut short by byte 0x%02x", u[k]);
            c = c << 6 | (u[k] & 0x3F);
        }
        if ((n == 3 && c < 0x800) || (n == 4 && c < 0x10000) || c > 0x10FFFF ||
            (c >= 0xD800 && c <= 0xDFFF) || c == 0xFFFE || c == 0xFFFF)
            return xp_fail(x, "a UTF-8 sequence for U+%lX, which XML does not allow", c);
        x->p += n;
    }
    x->p = x->s;
    return 1;
}

int th_xml_valid(const char *text, size_t n, char *why, size_t len)
{
    xp x = {.s = text, .p = text, .e = text + n, .why = why, .len = len};

    why[0] = '\0';
    if (!xp_utf8(&x) || !xp_declaration(&x) || !xp_misc(&x))
        return 0;
    if (!xp_at(&x, "<") || x.e - x.p < 2 || !xp_name_char((unsigned char)x.p[1], 1))
        return xp_fail(&x, "expected the root element");
    if (!xp_element(&x) || !xp_misc(&x))
        return 0;
    if (x.p != x.e)
        return xp_fail(&x, "text after the root element, from byte 0x%02x on",
                       (unsigned char)*x.p);
    return 1;
}

char *th_read_file(const char *path, size_t *n)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC), saved;
    size_t cap = 0, len = 0;
    char *buf = NULL;

    if (fd < 0)
        return NULL;
    for (;;) {
        ssize_t got;

        if (len + 1 >= cap) {
            char *bigger = realloc(buf, cap = cap == 0 ? 4096 : 2 * cap);

            if (bigger == NULL)
                goto out_fail;
            buf = bigger;
        }
        got = read(fd, buf + len, cap - 1 - len);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0)
            goto out_fail;
        if (got == 0)
            break;
        len += (size_t)got;
    }
    close(fd);
    buf[len] = '\0';
    *n = len;
    return buf;

out_fail:
    saved = errno;
    free(buf);
    close(fd);
    errno = saved;
    return NULL;
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

/* Whether this process may make a private mount namespace and mount a
 * tmpfs in it (tried in a child, which then exits); why not into why. */
int th_mounts_work(char *why, size_t len)
{
    char at[] = "/tmp/gpuipc-mnt-XXXXXX";
    pid_t pid;
    int status = 0;

    if (mkdtemp(at) == NULL) {
        snprintf(why, len, "mkdtemp: %s", strerror(errno));
        return 0;
    }
    pid = fork();
    if (pid == 0)
        _exit(unshare(CLONE_NEWNS) < 0 ? 1
              : mount("none", "/", "none", MS_REC | MS_PRIVATE, NULL) < 0 ? 2
              : mount("tmpfs", at, "tmpfs", 0, "size=64k") < 0 ? 3 : 0);
    waitpid(pid, &status, 0);
    rmdir(at);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return 1;
    snprintf(why, len, "%s failed here (a container without CAP_SYS_ADMIN?)",
             WEXITSTATUS(status) == 1 ? "unshare(CLONE_NEWNS)"
             : WEXITSTATUS(status) == 2 ? "making / private" : "mounting a tmpfs");
    return 0;
}

int th_private_mounts(char *why, size_t len)
{
    if (unshare(CLONE_NEWNS) < 0) {
        snprintf(why, len, "unshare CLONE_NEWNS: %s", strerror(errno));
        return -1;
    }
    if (mount("none", "/", "none", MS_REC | MS_PRIVATE, NULL) < 0) {
        snprintf(why, len, "mount --make-rprivate /: %s", strerror(errno));
        return -1;
    }
    return 0;
}

int th_fill(const char *path)
{
    static char block[4096];
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

    if (fd < 0)
        return -1;
    while (write(fd, block, sizeof(block)) > 0)
        ;
    while (write(fd, block, 1) > 0)
        ;
    close(fd);
    return 0;
}

jnode *th_result_doc(const char *path, char *why, size_t len)
{
    size_t n;
    char *schema_text = th_read_file("docs/result.schema.json", &n);
    char *text = th_read_file(path, &n);
    jnode *schema = NULL, *doc = NULL;

    if (schema_text == NULL)
        snprintf(why, len, "docs/result.schema.json: not readable (run from the source tree)");
    else if (text == NULL)
        snprintf(why, len, "%s: no document was written", path);
    else if ((schema = js_parse(schema_text, why, len)) == NULL)
        ; /* why says it */
    else if ((doc = js_parse(text, why, len)) == NULL)
        ; /* why says it */
    else if (!js_check(schema, doc, why, len)) {
        js_free(doc);
        doc = NULL;
    }
    js_free(schema);
    free(schema_text);
    free(text);
    return doc;
}
