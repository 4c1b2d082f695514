/* SPDX-License-Identifier: Apache-2.0 */
/* proc.c: bounded waits for child processes, and host memory. */
#include "core/proc.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/names.h"
#include "core/procstat.h"
#include "core/watch.h"

int gpuipc_proc_map_count(unsigned *now, unsigned *max)
{
    char buf[65536];
    unsigned long long m = 0;
    ssize_t n, i;
    FILE *f;
    int fd;

    if ((f = fopen("/proc/sys/vm/max_map_count", "re")) == NULL)
        return -1;
    if (fscanf(f, "%llu", &m) != 1 || m == 0 || m > UINT_MAX) {
        fclose(f);
        return -1;
    }
    fclose(f);
    if ((fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC)) < 0)
        return -1;
    *now = 0;
    while ((n = read(fd, buf, sizeof(buf))) > 0)
        for (i = 0; i < n; i++)
            *now += buf[i] == '\n';
    close(fd);
    *max = (unsigned)m;
    return n < 0 ? -1 : 0;
}

int gpuipc_proc_hold_std_fds(void)
{
    int fd, n = 0;

    signal(SIGPIPE, SIG_IGN);
    for (fd = 0; fd < 3; fd++) {
        int p[2], want, other;

        if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF)
            continue;
        /* The lowest free numbers: fd itself is one of them. */
        if (pipe(p) < 0)
            return -1;
        want = fd == 0 ? p[0] : p[1];
        other = fd == 0 ? p[1] : p[0];
        if (want != fd) {
            if (dup2(want, fd) < 0)
                return -1;
            close(want);
        }
        if (other != fd)
            close(other);
        n++;
    }
    return n;
}

static int (*stop_test)(void);

void gpuipc_proc_set_stop_test(int (*stopped)(void))
{
    stop_test = stopped;
}

static int wait_until(pid_t pid, uint64_t deadline_ns, int *status)
{
    int stopped = 0;

    for (;;) {
        pid_t r = waitpid(pid, status, WNOHANG);
        uint64_t now;

        if (r == pid)
            return 0;
        if (r < 0 && errno != EINTR)
            return -errno;
        now = gpuipc_clock_ns();
        /* A stop signal: the other process has it too, and a short while
         * to end. */
        if (!stopped && stop_test != NULL && stop_test() != 0) {
            stopped = 1;
            if (deadline_ns > now + GPUIPC_PROC_STOP_GRACE_NS)
                deadline_ns = now + GPUIPC_PROC_STOP_GRACE_NS;
        }
        if (now >= deadline_ns)
            return -ETIMEDOUT;
        gpuipc_clock_sleep(2 * GPUIPC_NS_PER_MS);
    }
}

int gpuipc_proc_wait(pid_t pid, uint64_t deadline_ns, int *status, gpuipc_err *err)
{
    int rc, stopped;

    gpuipc_watch_call("waitpid"); /* waiting for another process, as in a poll */
    rc = wait_until(pid, deadline_ns, status);
    gpuipc_watch_call(NULL);
    gpuipc_watch_checkpoint();

    if (rc == 0)
        return 0;
    if (rc != -ETIMEDOUT)
        return gpuipc_err_set(err, rc, "waitpid %d: %s", (int)pid, strerror(-rc));
    stopped = gpuipc_proc_is_stopped(pid);
    kill(pid, SIGKILL);
    rc = wait_until(pid, gpuipc_clock_deadline(5 * GPUIPC_NS_PER_S), status);
    if (rc == 0)
        return stopped ? 2 : 1;
    return gpuipc_err_set(err, rc, "process %d did not exit even after SIGKILL (stuck in "
                          "the kernel or the driver?)", (int)pid);
}

int gpuipc_proc_ask_child(void (*fn)(void *arg, void *answer), void *arg, void *answer,
                          size_t len, uint64_t deadline_ns, gpuipc_err *err)
{
    struct pollfd p;
    int fds[2], status, rc = 0;
    pid_t pid;

    if (len > PIPE_BUF) /* larger writes to a pipe may be split */
        return gpuipc_err_set(err, -EINVAL, "an answer of %zu bytes: at most %d", len,
                              PIPE_BUF);
    if (pipe2(fds, O_CLOEXEC) < 0)
        return gpuipc_err_set(err, -errno, "pipe2: %s", strerror(errno));
    fflush(NULL);
    pid = fork();
    if (pid < 0) {
        rc = gpuipc_err_set(err, -errno, "fork: %s", strerror(errno));
        close(fds[0]);
        close(fds[1]);
        return rc;
    }
    if (pid == 0) {
        memset(answer, 0, len);
        fn(arg, answer);
        _exit(write(fds[1], answer, len) == (ssize_t)len ? 0 : 1);
    }
    close(fds[1]);
    p.fd = fds[0];
    p.events = POLLIN;
    if (poll(&p, 1, gpuipc_clock_ms_left(deadline_ns)) != 1 ||
        read(fds[0], answer, len) != (ssize_t)len)
        rc = gpuipc_err_set(err, -EIO, "the process forked for it gave no answer");
    close(fds[0]);
    /* A child that hangs is killed here, once the deadline has passed. */
    gpuipc_proc_wait(pid, deadline_ns, &status, NULL);
    return rc;
}

char *gpuipc_proc_describe(int status, char *buf, size_t len)
{
    if (WIFEXITED(status))
        snprintf(buf, len, "exited %d", WEXITSTATUS(status));
    else if (WIFSIGNALED(status))
        snprintf(buf, len, "killed by signal %d (SIG%s)", WTERMSIG(status),
                 gpuipc_sig_abbrev(WTERMSIG(status)) ? gpuipc_sig_abbrev(WTERMSIG(status)) : "?");
    else
        snprintf(buf, len, "wait status 0x%x", (unsigned)status);
    return buf;
}

/* Reads the "<key> <n> kB" line of a /proc file into *bytes. Returns 0, or
 * -ENOENT if the file or the line is missing. */
static int read_kib_line(const char *path, const char *key, uint64_t *bytes)
{
    FILE *f = fopen(path, "re");
    unsigned long long kib = 0;
    size_t klen = strlen(key);
    char line[256];
    int rc = -ENOENT;

    if (f == NULL)
        return -ENOENT;
    while (fgets(line, sizeof(line), f) != NULL) {
        if (strncmp(line, key, klen) == 0 && sscanf(line + klen, "%llu kB", &kib) == 1) {
            *bytes = (uint64_t)kib * 1024;
            rc = 0;
            break;
        }
    }
    fclose(f);
    return rc;
}

/* The same, 0 if absent. */
static uint64_t read_kib(const char *path, const char *key)
{
    uint64_t bytes = 0;

    read_kib_line(path, key, &bytes);
    return bytes;
}

int gpuipc_proc_is_driver_pool(const char *path)
{
    return strncmp(path, GPUIPC_DRIVER_POOL_PREFIX, strlen(GPUIPC_DRIVER_POOL_PREFIX)) == 0;
}

/* The resident bytes of the mappings of the driver's event pool. */
static uint64_t driver_pool_rss(void)
{
    FILE *f = fopen("/proc/self/smaps", "re");
    unsigned long long kib;
    uint64_t total = 0;
    int in_pool = 0;
    char line[512];

    if (f == NULL)
        return 0;
    while (fgets(line, sizeof(line), f) != NULL) {
        char *path;

        /* A mapping's first line: "start-end perms offset dev inode [path]". */
        if (line[0] != ' ' && strchr(line, '-') != NULL && strchr(line, '-') < strchr(line, ' ')) {
            path = strchr(line, '/');
            in_pool = path != NULL && gpuipc_proc_is_driver_pool(path);
            continue;
        }
        if (in_pool && sscanf(line, "Rss: %llu kB", &kib) == 1)
            total += (uint64_t)kib * 1024;
    }
    fclose(f);
    return total;
}

/* Counts the pages of [start, end) that are present in this process's page
 * tables (bit 63 of each page's entry in /proc/self/pagemap, which an
 * unprivileged process may read of itself), into *pages. Returns 0, or -1
 * where pagemap cannot be read. */
static int present_pages(int pagemap, uint64_t start, uint64_t end, uint64_t *pages)
{
    uint64_t entry[512], page = (uint64_t)sysconf(_SC_PAGESIZE), at, n, i;
    ssize_t got;

    for (at = start / page; at < end / page; at += n) {
        n = end / page - at < 512 ? end / page - at : 512;
        got = pread(pagemap, entry, (size_t)n * sizeof(entry[0]), (off_t)(at * sizeof(entry[0])));
        if (got != (ssize_t)(n * sizeof(entry[0])))
            return -1;
        for (i = 0; i < n; i++)
            *pages += entry[i] >> 63;
    }
    return 0;
}

/* The resident bytes of the mappings of the driver's event pool, into
 * *bytes: the pool's ranges from /proc/self/maps (no walk of any page), and
 * of those ranges' pages, the ones present here from /proc/self/pagemap.
 * What smaps' Rss of those mappings says, without smaps' walk of every
 * mapping's pages (a CUDA process maps much, and this runs four times a
 * scenario once the pool is mapped). Returns 0 (*bytes 0 where the pool is
 * not mapped), or -1 where maps or pagemap could not be read. */
static int driver_pool_resident(uint64_t *bytes)
{
    FILE *f = fopen("/proc/self/maps", "re");
    uint64_t pages = 0;
    char line[512];
    int pagemap = -1, rc = 0;

    *bytes = 0;
    if (f == NULL)
        return -1;
    while (rc == 0 && fgets(line, sizeof(line), f) != NULL) {
        unsigned long long start, end;
        char *path = strchr(line, '/');

        if (path == NULL || !gpuipc_proc_is_driver_pool(path) ||
            sscanf(line, "%llx-%llx ", &start, &end) != 2 || end <= start)
            continue;
        if (pagemap < 0 && (pagemap = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC)) < 0)
            rc = -1;
        else if (present_pages(pagemap, start, end, &pages) < 0)
            rc = -1;
    }
    fclose(f);
    if (pagemap >= 0)
        close(pagemap);
    *bytes = pages * (uint64_t)sysconf(_SC_PAGESIZE);
    return rc;
}

int gpuipc_proc_shmem(uint64_t *bytes)
{
    uint64_t pool;
    int rc = read_kib_line("/proc/self/status", "RssShmem:", bytes);

    if (rc == 0 && *bytes > 0) {
        /* The pool's pages by pagemap; where that cannot be read, smaps'
         * Rss of the pool (each of its lines a walk of a mapping). */
        if (driver_pool_resident(&pool) < 0)
            pool = driver_pool_rss();
        *bytes = pool < *bytes ? *bytes - pool : 0;
    }
    return rc;
}

int gpuipc_proc_parse_ns(const char *link, const char *type, uint64_t *inode)
{
    size_t tlen = strlen(type);
    unsigned long long v;
    char *end;

    if (strncmp(link, type, tlen) != 0 || strncmp(link + tlen, ":[", 2) != 0 ||
        link[tlen + 2] < '0' || link[tlen + 2] > '9')
        return -EINVAL;
    errno = 0;
    v = strtoull(link + tlen + 2, &end, 10);
    if (errno != 0 || strcmp(end, "]") != 0)
        return -EINVAL;
    *inode = v;
    return 0;
}

int gpuipc_proc_pid_ns(uint64_t *inode, gpuipc_err *err)
{
    char link[64];
    ssize_t n = readlink("/proc/self/ns/pid", link, sizeof(link) - 1);

    if (n < 0)
        return gpuipc_err_set(err, -errno, "readlink /proc/self/ns/pid: %s", strerror(errno));
    link[n] = '\0';
    if (gpuipc_proc_parse_ns(link, "pid", inode) < 0)
        return gpuipc_err_set(err, -EINVAL, "/proc/self/ns/pid reads '%s', not pid:[inode]",
                              link);
    return 0;
}

uint64_t gpuipc_proc_mem_available(void)
{
    return read_kib("/proc/meminfo", "MemAvailable:");
}

uint64_t gpuipc_proc_hwm(void)
{
    return read_kib("/proc/self/status", "VmHWM:");
}

int gpuipc_proc_reset_hwm(void)
{
    int fd = open("/proc/self/clear_refs", O_WRONLY | O_CLOEXEC);
    ssize_t n;

    if (fd < 0)
        return -errno;
    n = write(fd, "5", 1);
    if (n != 1) {
        int e = n < 0 ? errno : EIO;

        close(fd);
        return -e;
    }
    close(fd);
    return 0;
}
