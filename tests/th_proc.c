/* SPDX-License-Identifier: Apache-2.0 */
/* th_proc.c: counting this process's FDs and finding its children in
 * /proc, for the suites (th_proc.h). */
#include "th_proc.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>

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

void th_add_unless_valgrind(TCase *tc, const TTest *test, const char *why)
{
    const char *v = getenv("GPUIPC_VALGRIND");

    if (v == NULL || v[0] == '\0') {
        tcase_add_test(tc, test);
        return;
    }
    fprintf(stderr, "NOT RUN under valgrind: %s: %s\n", test->name, why);
}
