/* SPDX-License-Identifier: Apache-2.0 */
/* imex_ctl.c: asking nvidia-imex-ctl, read-only, whether this node's IMEX
 * daemon is ready and which nodes its domain lists.
 *
 * Each question is one run of the tool:
 *   1. the tool is checked: an absolute path to a regular, executable file;
 *   2. it is spawned by that path (no shell, no PATH lookup) with a clean
 *      environment, stdin from /dev/null, stdout and stderr to pipes of
 *      their own, in a new process group;
 *   3. its output is read with poll() until both pipes end or the deadline;
 *   4. its process group is killed whole (whatever it left behind, or all of
 *      it at the deadline), then the child is reaped, within a bound;
 *   5. the answer is parsed: -q's first line, -N -j's JSON.
 *
 * What the tool prints, as found in public sources (see the report of the
 * commit that added this file):
 *   -q prints one line, "READY\n" when the local daemon is ready (the DRA
 *   driver's compute-domain daemon compares its output with exactly that),
 *   otherwise another state word (INITIALIZING, WAITING_FOR_PEERS, ...,
 *   UNAVAILABLE, as DCGM names the daemon's states).
 *   -N -j prints one object: {"nodes": {"0": {"status": "READY", "host":
 *   "10.0.0.1", "hostName": "...", "connections": {...}, "version": "..."},
 *   ...}, "timestamp": "...", "status": "UP"}. "host" is the address that
 *   nodes_config.cfg lists, "hostName" comes with -H. Every configured node
 *   has an entry, also one whose daemon is down ("UNAVAILABLE").
 * The reader below takes the nodes from the top-level "nodes" member only
 * (an object of nodes, or an array of them, in case a version lists them
 * so): each connection inside a node also has a "host" and a "status", so a
 * reader that took any object with those two fields would count each
 * connection as a node. Members it does not know are skipped. */
#include "mech/imex_ctl.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/random.h"

/* How long the child may take to be reaped once SIGKILL was sent. Only a
 * process in an uninterruptible sleep (a hung NFS read) outlasts SIGKILL;
 * it is then left, and named, rather than waited for without end. */
#define REAP_AFTER_KILL_NS (5ull * GPUIPC_NS_PER_S)

/* The part of the tool's stderr that is kept for the error line. */
#define STDERR_KEEP 96

/* The deepest the reader follows nested JSON values. */
#define JSON_DEPTH_MAX 32

const char *gpuipc_imex_ctl_path(void)
{
    const char *hook = getenv("GPUIPC_TEST_IMEX_CTL");

    return hook != NULL && hook[0] != '\0' ? hook : GPUIPC_IMEX_CTL;
}

/* Appends a reason to d->error, after "; " where one is there already; the
 * text is made printable, and cut where the field ends. */
static void note(gpuipc_imex_daemon *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void note(gpuipc_imex_daemon *d, const char *fmt, ...)
{
    char text[sizeof(d->error)];
    size_t used = strlen(d->error);
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    if (used > 0 && used + 2 < sizeof(d->error)) {
        memcpy(d->error + used, "; ", 3);
        used += 2;
    }
    if (used + 1 < sizeof(d->error))
        gpuipc_err_copy_printable(d->error + used, sizeof(d->error) - used, text);
}

/* What one run of the tool gave. */
struct run {
    char *out;               /* its stdout, NUL-terminated (malloc'd; may be NULL) */
    size_t len;              /* bytes in out */
    size_t cap;              /* bytes out can hold, less its NUL */
    char err[STDERR_KEEP];   /* the start of its stderr, NUL-terminated */
    size_t errlen;
    int spawn_errno;         /* posix_spawn failed for a reason of the tool's */
    int timed_out;           /* the deadline passed: killed */
    int too_long;            /* more than GPUIPC_IMEX_CTL_OUTPUT_MAX on stdout: killed */
    int reaped;              /* status holds its wait status */
    int status;
    int lost;                /* its exit could not be read (SIGCHLD ignored?) */
};

/* Reads what fd has into r's stdout buffer. Returns 1 at end of file, 0 if
 * more may come, or a negative errno (ENOMEM is this process's own). */
static int take_stdout(int fd, struct run *r)
{
    ssize_t n;

    if (r->len == r->cap) {
        size_t cap = r->cap == 0 ? 4096 : r->cap * 2;
        char *grown;

        /* One byte past the limit, so that a longer output is seen as such. */
        if (cap > GPUIPC_IMEX_CTL_OUTPUT_MAX + 1)
            cap = GPUIPC_IMEX_CTL_OUTPUT_MAX + 1;
        grown = realloc(r->out, cap + 1);
        if (grown == NULL)
            return -ENOMEM;
        r->out = grown;
        r->cap = cap;
    }
    n = read(fd, r->out + r->len, r->cap - r->len);
    if (n < 0)
        return errno == EINTR || errno == EAGAIN ? 0 : -errno;
    if (n == 0)
        return 1;
    r->len += (size_t)n;
    r->out[r->len] = '\0';
    if (r->len > GPUIPC_IMEX_CTL_OUTPUT_MAX)
        r->too_long = 1;
    return 0;
}

/* Reads what fd has of the tool's stderr, keeping its start only. Returns
 * 1 at end of file, 0 if more may come, or a negative errno. */
static int take_stderr(int fd, struct run *r)
{
    char buf[512];
    ssize_t n = read(fd, buf, sizeof(buf));
    size_t keep;

    if (n < 0)
        return errno == EINTR || errno == EAGAIN ? 0 : -errno;
    if (n == 0)
        return 1;
    keep = sizeof(r->err) - 1 - r->errlen;
    if (keep > (size_t)n)
        keep = (size_t)n;
    memcpy(r->err + r->errlen, buf, keep);
    r->errlen += keep;
    r->err[r->errlen] = '\0';
    return 0;
}

/* Whether the child has ended, without reaping it (WNOWAIT), so that its
 * pid, and the process group named after it, stay this process's until it
 * is reaped: killing that group can then never hit a stranger that took the
 * number. Returns 1 ended, 0 not yet, -1 its end cannot be seen (ECHILD: a
 * caller that ignores SIGCHLD has the kernel reap it). */
static int has_ended(pid_t pid)
{
    siginfo_t si;

    for (;;) {
        memset(&si, 0, sizeof(si));
        if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0)
            return si.si_pid == pid;
        if (errno != EINTR)
            return -1;
    }
}

/* Kills the child's whole process group and reaps the child, waiting at
 * most REAP_AFTER_KILL_NS. */
static void end_group(pid_t pid, struct run *r)
{
    uint64_t until;
    uint64_t nap = 1000000ull;

    /* The child made the group (POSIX_SPAWN_SETPGROUP with 0), so the group's
     * id is its pid; it is not reaped yet, so the id is still its. */
    kill(-pid, SIGKILL);
    if (r->lost)
        return;
    until = gpuipc_clock_deadline(REAP_AFTER_KILL_NS);
    for (;;) {
        pid_t got = waitpid(pid, &r->status, WNOHANG);

        if (got == pid) {
            r->reaped = 1;
            return;
        }
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0) {
            r->lost = 1;
            return;
        }
        if (gpuipc_clock_ns() >= until)
            return;
        gpuipc_clock_sleep(nap);
        if (nap < 20000000ull)
            nap *= 2;
    }
}

/* Closes, in the child, every FD above 2 that this process holds: a
 * descriptor without close-on-exec (the launcher's, or the CUDA driver's
 * for a handle another thread has just exported) must not live on in the
 * tool, as root, for as long as it runs. glibc 2.34 and later close them
 * all at once (looked up at run time: the release build runs on older
 * ones); before, each FD open now is named (a later one was opened
 * close-on-exec by this program, and a closed one is no error). */
static int close_the_rest(posix_spawn_file_actions_t *fa)
{
    int (*closefrom)(posix_spawn_file_actions_t *, int);
    struct dirent *e;
    DIR *dir;
    int rc = 0;

    *(void **)&closefrom = dlsym(RTLD_DEFAULT, "posix_spawn_file_actions_addclosefrom_np");
    /* A test's way to the older glibc's path on a newer one
     * (docs/testing.md). */
    if (getenv("GPUIPC_TEST_NO_CLOSEFROM") != NULL)
        closefrom = NULL;
    if (closefrom != NULL)
        return closefrom(fa, 3);
    if ((dir = opendir("/proc/self/fd")) == NULL)
        return 0; /* no /proc: what is close-on-exec is all that closes */
    while (rc == 0 && (e = readdir(dir)) != NULL) {
        char *end;
        long fd = strtol(e->d_name, &end, 10);

        if (*end == '\0' && end != e->d_name && fd > 2 && fd != dirfd(dir))
            rc = posix_spawn_file_actions_addclose(fa, (int)fd);
    }
    closedir(dir);
    return rc;
}
/* Runs tool with argv under timeout_ms and fills r. Returns 0 when r says
 * what happened (the spawn failing for a reason of the tool's included), or
 * a negative errno with why for this process's own failures. */
static int run_tool(const char *tool, char *const argv[], unsigned timeout_ms, struct run *r,
                    gpuipc_err *why)
{
    static char *const envp[] = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C", NULL};
    uint64_t deadline = gpuipc_clock_deadline((uint64_t)timeout_ms * GPUIPC_NS_PER_MS);
    int out[2] = {-1, -1}, err[2] = {-1, -1};
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    struct pollfd pfd[2];
    sigset_t none, defaults;
    int rc, open_ends;
    uint64_t nap = 1000000ull;
    pid_t pid;

    memset(r, 0, sizeof(*r));
    /* O_CLOEXEC on every end: the child gets them only as its FDs 1 and 2,
     * through the dup2 actions below (which clear the flag on the copy).
     * The program holds FDs 0, 1 and 2 from its start (core/proc.h), so a
     * pipe never takes one of those numbers. */
    if (pipe2(out, O_CLOEXEC) < 0)
        return gpuipc_err_sys(why, "pipe2", errno, "pipe2: %s", strerror(errno));
    if (pipe2(err, O_CLOEXEC) < 0) {
        rc = gpuipc_err_sys(why, "pipe2", errno, "pipe2: %s", strerror(errno));
        goto out_close_out;
    }
    rc = posix_spawn_file_actions_init(&fa);
    if (rc != 0) {
        rc = gpuipc_err_sys(why, "posix_spawn_file_actions_init", rc,
                            "posix_spawn_file_actions_init: %s", strerror(rc));
        goto out_close_err;
    }
    rc = posix_spawnattr_init(&attr);
    if (rc != 0) {
        rc = gpuipc_err_sys(why, "posix_spawnattr_init", rc, "posix_spawnattr_init: %s",
                            strerror(rc));
        goto out_actions;
    }
    /* The child starts with no signal blocked (the caller's threads may block
     * some for ppoll) and with SIGPIPE at its default (the program ignores
     * it, and an ignored signal stays ignored across exec). The caller's own
     * dispositions are not touched. */
    sigemptyset(&none);
    sigemptyset(&defaults);
    sigaddset(&defaults, SIGPIPE);
    rc = posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    if (rc == 0)
        rc = posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    if (rc == 0)
        rc = posix_spawn_file_actions_adddup2(&fa, err[1], 2);
    if (rc == 0)
        rc = close_the_rest(&fa);
    if (rc == 0)
        rc = posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
                                                 POSIX_SPAWN_SETSIGDEF);
    if (rc == 0)
        rc = posix_spawnattr_setpgroup(&attr, 0);
    if (rc == 0)
        rc = posix_spawnattr_setsigmask(&attr, &none);
    if (rc == 0)
        rc = posix_spawnattr_setsigdefault(&attr, &defaults);
    if (rc != 0) {
        rc = gpuipc_err_sys(why, "posix_spawnattr", rc, "posix_spawn set-up: %s", strerror(rc));
        goto out_attr;
    }
    rc = posix_spawn(&pid, tool, &fa, &attr, argv, envp);
    if (rc == ENOMEM || rc == EAGAIN || rc == EMFILE || rc == ENFILE) {
        rc = gpuipc_err_sys(why, "posix_spawn", rc, "posix_spawn %s: %s", tool, strerror(rc));
        goto out_attr;
    }
    if (rc != 0) {
        /* Not executable after all (a noexec mount, a missing interpreter,
         * not a program): the tool's fault, said in d. */
        r->spawn_errno = rc;
        rc = 0;
        goto out_attr;
    }
    close(out[1]);
    close(err[1]);
    out[1] = err[1] = -1;

    pfd[0].fd = out[0];
    pfd[1].fd = err[0];
    pfd[0].events = pfd[1].events = POLLIN;
    open_ends = 2;
    while (open_ends > 0 && !r->too_long) {
        int ms = gpuipc_clock_ms_left(deadline), n, i;

        if (ms == 0) {
            r->timed_out = 1;
            break;
        }
        n = poll(pfd, 2, ms);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            rc = gpuipc_err_sys(why, "poll", errno, "poll: %s", strerror(errno));
            break;
        }
        for (i = 0; i < 2 && rc == 0; i++) {
            int got;

            if (pfd[i].fd < 0 || pfd[i].revents == 0)
                continue;
            got = i == 0 ? take_stdout(pfd[i].fd, r) : take_stderr(pfd[i].fd, r);
            if (got < 0) {
                rc = gpuipc_err_sys(why, "read", -got, "reading %s's output: %s", tool,
                                    strerror(-got));
            } else if (got == 1) {
                pfd[i].fd = -1;
                open_ends--;
            }
        }
        if (rc != 0)
            break;
    }
    /* Both pipes ended: the tool has closed its output, and normally it is
     * exiting. It still gets the rest of the deadline to do so. */
    while (rc == 0 && !r->timed_out && !r->too_long) {
        int ended = has_ended(pid);

        if (ended != 0) {
            r->lost = ended < 0;
            break;
        }
        if (gpuipc_clock_ns() >= deadline) {
            r->timed_out = 1;
            break;
        }
        gpuipc_clock_sleep(nap);
        if (nap < 20000000ull)
            nap *= 2;
    }
    /* Always, not only at the deadline: a read-only query leaves nothing
     * running, and whatever it left in its group would pile up on a node
     * that asks every few minutes. */
    end_group(pid, r);

out_attr:
    posix_spawnattr_destroy(&attr);
out_actions:
    posix_spawn_file_actions_destroy(&fa);
out_close_err:
    if (err[1] >= 0)
        close(err[1]);
    close(err[0]);
out_close_out:
    if (out[1] >= 0)
        close(out[1]);
    close(out[0]);
    if (rc != 0) {
        free(r->out);
        r->out = NULL;
    }
    return rc;
}

/* Says in d why run r of "<name> <what>" gave no usable answer, and
 * returns 0; returns 1 if the tool exited 0 within the deadline. */
static int judge_run(gpuipc_imex_daemon *d, const char *name, const char *what,
                     unsigned timeout_ms, const struct run *r)
{
    char said[STDERR_KEEP + 4] = "";

    if (r->errlen > 0) {
        size_t n = strcspn(r->err, "\r\n");

        snprintf(said, sizeof(said), ": %.*s", (int)n, r->err);
    }
    if (r->spawn_errno != 0) {
        note(d, "%s %s: posix_spawn: %s", name, what, strerror(r->spawn_errno));
        return 0;
    }
    if (r->timed_out) {
        note(d, "%s %s: no answer within %u ms (killed)%s", name, what, timeout_ms,
             r->reaped || r->lost ? "" : " (still not reaped 5 s after SIGKILL)");
        return 0;
    }
    if (r->too_long) {
        note(d, "%s %s: more than %u bytes of output (killed)", name, what,
             GPUIPC_IMEX_CTL_OUTPUT_MAX);
        return 0;
    }
    if (r->lost) {
        note(d, "%s %s: its exit status could not be read (waitid: %s)", name, what,
             strerror(ECHILD));
        return 0;
    }
    if (!r->reaped) {
        note(d, "%s %s: still not reaped 5 s after SIGKILL", name, what);
        return 0;
    }
    if (WIFSIGNALED(r->status)) {
        note(d, "%s %s: killed by signal %d%s", name, what, WTERMSIG(r->status), said);
        return 0;
    }
    if (WEXITSTATUS(r->status) != 0) {
        note(d, "%s %s: exit status %d%s", name, what, WEXITSTATUS(r->status), said);
        return 0;
    }
    return 1;
}

/* Puts the first line of -q's output, trimmed, into d->state, and says
 * whether it is READY (exit_ok: the tool exited 0; otherwise the line is
 * kept for the reader but the answer is not known). */
static void read_state(gpuipc_imex_daemon *d, const char *name, const struct run *r, int exit_ok)
{
    const char *line = r->out != NULL ? r->out : "";
    size_t n;
    char first[sizeof(d->state)];

    line += strspn(line, " \t");
    n = strcspn(line, "\r\n");
    while (n > 0 && (line[n - 1] == ' ' || line[n - 1] == '\t'))
        n--;
    snprintf(first, sizeof(first), "%.*s", (int)n, line);
    gpuipc_err_copy_printable(d->state, sizeof(d->state), first);
    if (!exit_ok)
        return;
    if (n == 0) {
        note(d, "%s -q: no answer (empty output)", name);
        return;
    }
    /* As the tool prints it: upper case, the whole line. */
    d->ready = n == 5 && memcmp(line, "READY", 5) == 0;
}

/* A small JSON reader for -N -j's document: it checks the whole text is one
 * JSON value and keeps, of each node under the top-level "nodes", its
 * "host", "hostName" and "status" strings. */
enum jrole { J_ROOT, J_NODES, J_NODE, J_SKIP };

struct jread {
    const char *start, *p, *end;
    int depth;
    const char *bad;   /* what is wrong, or NULL */
    const char *bad_at;
    int has_nodes;     /* the top-level object has a "nodes" object or array */
    int count;         /* nodes found */
    gpuipc_imex_daemon *d;
    /* Where a node past d's room is read: it is counted, then dropped. */
    struct { char addr[64], host[64], status[32]; } spare;
};

static int jfail(struct jread *j, const char *what)
{
    if (j->bad == NULL) {
        j->bad = what;
        j->bad_at = j->p;
    }
    return -1;
}

static void jspace(struct jread *j)
{
    while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r'))
        j->p++;
}

/* Reads a string (j->p at its quote) into dst (cap bytes, NUL-terminated,
 * cut where it ends; NULL: only checked). A character the escapes give
 * outside ASCII becomes '?'; bytes outside printable ASCII are replaced
 * later, by the copy into d. */
static int jstring(struct jread *j, char *dst, size_t cap)
{
    size_t n = 0;

    if (j->p >= j->end || *j->p != '"')
        return jfail(j, "a string expected");
    j->p++;
    for (;;) {
        char c;

        if (j->p >= j->end)
            return jfail(j, "a string not ended");
        c = *j->p++;
        if (c == '"')
            break;
        if ((unsigned char)c < 0x20)
            return jfail(j, "a control character in a string");
        if (c == '\\') {
            if (j->p >= j->end)
                return jfail(j, "a string not ended");
            c = *j->p++;
            switch (c) {
            case '"': case '\\': case '/': break;
            case 'b': c = '\b'; break;
            case 'f': c = '\f'; break;
            case 'n': c = '\n'; break;
            case 'r': c = '\r'; break;
            case 't': c = '\t'; break;
            case 'u': {
                int k, v = 0;

                if (j->end - j->p < 4)
                    return jfail(j, "a \\u escape cut short");
                for (k = 0; k < 4; k++) {
                    int h = gpuipc_random_hex_value(j->p[k]);

                    if (h < 0)
                        return jfail(j, "a bad \\u escape");
                    v = v * 16 + h;
                }
                j->p += 4;
                c = v > 0 && v < 0x80 ? (char)v : '?';
                break;
            }
            default:
                return jfail(j, "a bad escape in a string");
            }
        }
        if (dst != NULL && n + 1 < cap)
            dst[n++] = c;
    }
    if (dst != NULL && cap > 0)
        dst[n] = '\0';
    return 0;
}

static int jword(struct jread *j, const char *word)
{
    size_t n = strlen(word);

    if ((size_t)(j->end - j->p) < n || memcmp(j->p, word, n) != 0)
        return jfail(j, "an unexpected character");
    j->p += n;
    return 0;
}

static int jdigits(struct jread *j)
{
    const char *from = j->p;

    while (j->p < j->end && *j->p >= '0' && *j->p <= '9')
        j->p++;
    return j->p > from ? 0 : jfail(j, "a bad number");
}

static int jnumber(struct jread *j)
{
    if (j->p < j->end && *j->p == '-')
        j->p++;
    if (jdigits(j) < 0)
        return -1;
    if (j->p < j->end && *j->p == '.') {
        j->p++;
        if (jdigits(j) < 0)
            return -1;
    }
    if (j->p < j->end && (*j->p == 'e' || *j->p == 'E')) {
        j->p++;
        if (j->p < j->end && (*j->p == '+' || *j->p == '-'))
            j->p++;
        if (jdigits(j) < 0)
            return -1;
    }
    return 0;
}

static int jvalue(struct jread *j, enum jrole role);

/* A string member of a node, kept where it is one (anything else there is
 * read past, as an unknown member is). */
static int jnode_field(struct jread *j, char *field, size_t cap)
{
    char text[64];

    if (j->p < j->end && *j->p == '"') {
        if (jstring(j, text, sizeof(text)) < 0)
            return -1;
        gpuipc_err_copy_printable(field, cap, text);
        return 0;
    }
    return jvalue(j, J_SKIP);
}

static int jobject(struct jread *j, enum jrole role)
{
    char *addr = j->spare.addr, *host = j->spare.host, *status = j->spare.status;
    int first = 1;

    if (role == J_NODE) {
        if (j->count < GPUIPC_IMEX_MAX_NODES) {
            addr = j->d->node[j->count].addr;
            host = j->d->node[j->count].host;
            status = j->d->node[j->count].status;
        }
        j->count++;
    }
    j->p++; /* { */
    for (;;) {
        char key[16];
        enum jrole inner = J_SKIP;

        jspace(j);
        if (j->p < j->end && *j->p == '}' && first) {
            j->p++;
            return 0;
        }
        if (jstring(j, key, sizeof(key)) < 0)
            return -1;
        jspace(j);
        if (j->p >= j->end || *j->p != ':')
            return jfail(j, "':' expected after a member's name");
        j->p++;
        jspace(j);
        if (role == J_NODE && strcmp(key, "host") == 0) {
            if (jnode_field(j, addr, 64) < 0)
                return -1;
        } else if (role == J_NODE && strcmp(key, "hostName") == 0) {
            if (jnode_field(j, host, 64) < 0)
                return -1;
        } else if (role == J_NODE && strcmp(key, "status") == 0) {
            if (jnode_field(j, status, 32) < 0)
                return -1;
        } else {
            if (role == J_ROOT && strcmp(key, "nodes") == 0) {
                /* A second list would add its nodes to the first's. */
                if (j->has_nodes)
                    return jfail(j, "a second \"nodes\" member");
                if (j->p < j->end && (*j->p == '{' || *j->p == '['))
                    j->has_nodes = 1;
                inner = J_NODES;
            } else if (role == J_NODES) {
                inner = J_NODE;
            }
            if (jvalue(j, inner) < 0)
                return -1;
        }
        first = 0;
        jspace(j);
        if (j->p < j->end && *j->p == ',') {
            j->p++;
            continue;
        }
        if (j->p < j->end && *j->p == '}') {
            j->p++;
            return 0;
        }
        return jfail(j, "',' or '}' expected in an object");
    }
}

static int jarray(struct jread *j, enum jrole role)
{
    int first = 1;

    j->p++; /* [ */
    for (;;) {
        jspace(j);
        if (j->p < j->end && *j->p == ']' && first) {
            j->p++;
            return 0;
        }
        if (jvalue(j, role == J_NODES ? J_NODE : J_SKIP) < 0)
            return -1;
        first = 0;
        jspace(j);
        if (j->p < j->end && *j->p == ',') {
            j->p++;
            continue;
        }
        if (j->p < j->end && *j->p == ']') {
            j->p++;
            return 0;
        }
        return jfail(j, "',' or ']' expected in an array");
    }
}

static int jvalue(struct jread *j, enum jrole role)
{
    int rc;

    jspace(j);
    if (j->p >= j->end)
        return jfail(j, "a value expected");
    if (role == J_ROOT && *j->p != '{')
        return jfail(j, "the document is not an object");
    /* Only an object is a node: anything else among the nodes is skipped. */
    if (role == J_NODE && *j->p != '{')
        role = J_SKIP;
    if (++j->depth > JSON_DEPTH_MAX)
        return jfail(j, "nested too deep");
    switch (*j->p) {
    case '{': rc = jobject(j, role); break;
    case '[': rc = jarray(j, role); break;
    case '"': rc = jstring(j, NULL, 0); break;
    case 't': rc = jword(j, "true"); break;
    case 'f': rc = jword(j, "false"); break;
    case 'n': rc = jword(j, "null"); break;
    default: rc = jnumber(j); break;
    }
    j->depth--;
    return rc;
}

/* Fills d's node list from -N -j's output, or says why it cannot. */
static void read_nodes(gpuipc_imex_daemon *d, const char *name, const struct run *r)
{
    struct jread j;

    memset(&j, 0, sizeof(j));
    j.start = j.p = r->out != NULL ? r->out : "";
    j.end = j.start + r->len;
    j.d = d;
    if (memchr(j.start, '\0', r->len) != NULL) {
        note(d, "%s -N -j: not JSON: a NUL byte in the output", name);
        return;
    }
    if (jvalue(&j, J_ROOT) == 0) {
        jspace(&j);
        if (j.p != j.end)
            jfail(&j, "text after the document");
    }
    if (j.bad == NULL && !j.has_nodes)
        jfail(&j, "no \"nodes\" object or array");
    if (j.bad != NULL) {
        note(d, "%s -N -j: not the JSON expected: %s at byte %zu", name, j.bad,
             (size_t)(j.bad_at - j.start));
        memset(d->node, 0, sizeof(d->node));
        return;
    }
    if (j.count > GPUIPC_IMEX_MAX_NODES) {
        note(d, "%s -N -j: lists %d nodes, more than the %d kept", name, j.count,
             GPUIPC_IMEX_MAX_NODES);
        memset(d->node, 0, sizeof(d->node));
        return;
    }
    d->nnodes = j.count;
}

int gpuipc_imex_daemon_ask(const char *tool, unsigned timeout_ms, gpuipc_imex_daemon *d,
                           gpuipc_err *why)
{
    char *const ask_state[] = {"nvidia-imex-ctl", "-q", NULL};
    char *const ask_nodes[] = {"nvidia-imex-ctl", "-N", "-j", NULL};
    const char *name;
    struct stat st;
    struct run r;
    int rc;

    memset(d, 0, sizeof(*d));
    d->ready = -1;
    d->nnodes = -1;
    if (tool == NULL)
        tool = gpuipc_imex_ctl_path();
    if (tool[0] != '/') {
        char shown[128];

        gpuipc_err_copy_printable(shown, sizeof(shown), tool);
        return gpuipc_err_set(why, -EINVAL, "%s: not an absolute path (the IMEX control tool "
                              "is run by its absolute path only)", shown);
    }
    name = strrchr(tool, '/') + 1;
    /* stat follows a link (a driver package may link the tool into
     * /usr/bin); what it reaches must be a regular, executable file. */
    if (stat(tool, &st) < 0) {
        if (errno != ENOENT && errno != ENOTDIR)
            note(d, "stat %s: %s", tool, strerror(errno));
        return 0;
    }
    if (!S_ISREG(st.st_mode)) {
        note(d, "%s: not a regular file (%s): not run", tool,
             S_ISDIR(st.st_mode) ? "a directory" : "a device, pipe or socket");
        return 0;
    }
    if ((st.st_mode & (S_IXUSR | S_IXGRP | S_IXOTH)) == 0) {
        note(d, "%s: not executable (mode %04o): not run", tool, (unsigned)(st.st_mode & 07777));
        return 0;
    }
    d->tool = 1;

    rc = run_tool(tool, ask_state, timeout_ms, &r, why);
    if (rc < 0)
        return rc;
    read_state(d, name, &r, judge_run(d, name, "-q", timeout_ms, &r));
    free(r.out);

    rc = run_tool(tool, ask_nodes, timeout_ms, &r, why);
    if (rc < 0)
        return rc;
    if (judge_run(d, name, "-N -j", timeout_ms, &r))
        read_nodes(d, name, &r);
    free(r.out);
    return 0;
}

/* Whether host names a and b name one host: the same, whatever their case,
 * or the same up to the first dot of the shorter (a short name and its
 * fully qualified one). */
static int same_host(const char *a, const char *b)
{
    size_t la = strcspn(a, "."), lb = strcspn(b, ".");

    if (a[0] == '\0' || b[0] == '\0')
        return 0;
    if (strcasecmp(a, b) == 0)
        return 1;
    return la == lb && strncasecmp(a, b, la) == 0 && (a[la] == '\0' || b[lb] == '\0');
}

int gpuipc_imex_daemon_lists(const gpuipc_imex_daemon *d, const char *addr, const char *host,
                             const char **status)
{
    int i;

    if (d->nnodes < 0)
        return -1;
    for (i = 0; i < d->nnodes && i < GPUIPC_IMEX_MAX_NODES; i++) {
        const char *a = d->node[i].addr, *h = d->node[i].host;
        int hit = (addr != NULL && addr[0] != '\0' && strcmp(a, addr) == 0) ||
                  (host != NULL && (same_host(h, host) || strcasecmp(a, host) == 0));

        if (hit) {
            if (status != NULL)
                *status = d->node[i].status;
            return 1;
        }
    }
    return 0;
}

void gpuipc_imex_daemon_text(const gpuipc_imex_daemon *d, char *buf, size_t len)
{
    size_t used;
    int i, n;

    if (!d->tool) {
        snprintf(buf, len, "%s%s%s", d->error[0] ? "not usable: " : "not installed (",
                 d->error[0] ? d->error : gpuipc_imex_ctl_path(), d->error[0] ? "" : ")");
        return;
    }
    if (d->ready == 1)
        n = snprintf(buf, len, "READY");
    else if (d->ready == 0)
        n = snprintf(buf, len, "not READY (-q says \"%s\")", d->state);
    else
        n = snprintf(buf, len, "state not known (-q: %s)", d->error[0] ? d->error : "no answer");
    used = n < 0 ? len : (size_t)n;
    /* The error is -q's where -q said nothing, else -N -j's. */
    if (used < len && d->nnodes < 0 && d->ready != -1 && d->error[0])
        n = snprintf(buf + used, len - used, "; its domain's nodes not known (-N -j: %s)",
                     d->error);
    else if (used < len && d->nnodes < 0)
        n = snprintf(buf + used, len - used, "; its domain's nodes not known");
    else if (used < len)
        n = snprintf(buf + used, len - used, "; its domain lists %d node%s", d->nnodes,
                     d->nnodes == 1 ? "" : "s");
    used = n < 0 ? len : used + (size_t)n;
    for (i = 0; i < d->nnodes && i < GPUIPC_IMEX_MAX_NODES && used < len; i++) {
        n = snprintf(buf + used, len - used, "%s%s%s%s%s %s", i ? ", " : ": ", d->node[i].addr,
                     d->node[i].host[0] ? " (" : "", d->node[i].host,
                     d->node[i].host[0] ? ")" : "", d->node[i].status);
        used = n < 0 ? len : used + (size_t)n;
    }
}

void gpuipc_imex_daemon_of_peer(const gpuipc_imex_daemon *d, const char *addr, const char *host,
                                unsigned rank, char *buf, size_t len)
{
    const char *status = NULL;
    int listed = gpuipc_imex_daemon_lists(d, addr, host, &status);

    if (d->ready == 0)
        snprintf(buf, len, "this node's IMEX daemon is not READY (nvidia-imex-ctl -q: %s)",
                 d->state);
    else if (d->ready < 0)
        snprintf(buf, len, "this node's IMEX daemon did not say its state (nvidia-imex-ctl "
                 "-q: %.120s)", d->error);
    else if (listed == 0)
        snprintf(buf, len, "this node's IMEX daemon (READY) lists %d node%s, none of them rank "
                 "%u's address %.64s or host %.64s (nvidia-imex-ctl -N)", d->nnodes,
                 d->nnodes == 1 ? "" : "s", rank, addr != NULL && addr[0] ? addr : "(not known)",
                 host != NULL && host[0] ? host : "(not known)");
    else if (listed == 1 && strcmp(status, "READY") != 0)
        snprintf(buf, len, "this node's IMEX daemon (READY) lists rank %u's node as %.31s: the "
                 "daemon there is down or out of reach (nvidia-imex-ctl -N)", rank, status);
    else if (listed == 1)
        snprintf(buf, len, "this node's IMEX daemon is READY and lists rank %u's node as READY",
                 rank);
    else
        snprintf(buf, len, "this node's IMEX daemon is READY; its domain's nodes not known "
                 "(nvidia-imex-ctl -N -j: %.120s)", d->error);
}
