/* SPDX-License-Identifier: Apache-2.0 */
/* procstat.c: a process's state and start time from /proc/<pid>/stat, with
 * system calls only. */
#include "core/procstat.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

/* /proc/<pid>/stat into buf (cap bytes, a string), and where its fields
 * after "(comm)" begin: the state first. Returns that, or NULL where it
 * cannot be read. System calls only. */
static const char *read_stat(pid_t pid, char *buf, size_t cap)
{
    char path[40] = "/proc/", digits[16];
    size_t n, i, d = 0;
    ssize_t got;
    int fd;
    unsigned long v = (unsigned long)pid;

    if (pid <= 0)
        return NULL;
    do
        digits[d++] = (char)('0' + v % 10);
    while ((v /= 10) != 0 && d < sizeof(digits));
    n = strlen(path);
    while (d > 0)
        path[n++] = digits[--d];
    memcpy(path + n, "/stat", 6);
    if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
        return NULL;
    do
        got = read(fd, buf, cap - 1);
    while (got < 0 && errno == EINTR);
    close(fd);
    if (got <= 0)
        return NULL;
    buf[got] = '\0';
    /* "pid (comm) S ...": comm may hold anything, ')' too, so the last ')'
     * ends it. */
    for (i = (size_t)got; i > 0 && buf[i - 1] != ')'; i--)
        ;
    if (i == 0 || i + 1 >= (size_t)got)
        return NULL;
    return buf + i + 1;
}

char gpuipc_proc_state(pid_t pid)
{
    char buf[512];
    const char *f = read_stat(pid, buf, sizeof(buf));

    return f != NULL ? f[0] : 0;
}

uint64_t gpuipc_proc_start_ticks(pid_t pid)
{
    char buf[1024];
    const char *f = read_stat(pid, buf, sizeof(buf));
    uint64_t v = 0;
    int field = 3; /* the state's number in proc(5) */

    if (f == NULL)
        return 0;
    /* Field 22, starttime: clock ticks after boot when the process started. */
    while (*f != '\0' && field < 22) {
        if (*f++ == ' ')
            field++;
    }
    while (*f >= '0' && *f <= '9')
        v = v * 10 + (uint64_t)(*f++ - '0');
    return v;
}

int gpuipc_proc_is_stopped(pid_t pid)
{
    char st = gpuipc_proc_state(pid);

    return st == 'T' || st == 't';
}
