/* account.c: FD accounting through /proc/self/fd. */
#include "account.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;

    return (x > y) - (x < y);
}

int gpuipc_account_snapshot(gpuipc_fds *s, gpuipc_err *err)
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *de;
    size_t cap = 64;
    int self;

    s->n = 0;
    s->fd = NULL;
    if (d == NULL)
        return gpuipc_err_set(err, -errno, "opendir /proc/self/fd: %s", strerror(errno));
    self = dirfd(d);
    s->fd = malloc(cap * sizeof(int));
    if (s->fd == NULL) {
        closedir(d);
        return gpuipc_err_set(err, -ENOMEM, "FD accounting: out of memory");
    }
    while ((de = readdir(d)) != NULL) {
        char *end;
        long v;

        if (de->d_name[0] == '.')
            continue;
        v = strtol(de->d_name, &end, 10);
        if (*end != '\0' || v == self)
            continue;
        if (s->n == cap) {
            int *bigger = realloc(s->fd, 2 * cap * sizeof(int));

            if (bigger == NULL) {
                closedir(d);
                gpuipc_account_free(s);
                return gpuipc_err_set(err, -ENOMEM, "FD accounting: out of memory");
            }
            s->fd = bigger;
            cap *= 2;
        }
        s->fd[s->n++] = (int)v;
    }
    closedir(d);
    qsort(s->fd, s->n, sizeof(int), cmp_int);
    return 0;
}

size_t gpuipc_account_leaks(const gpuipc_fds *before, const gpuipc_fds *now, gpuipc_err *err)
{
    char text[GPUIPC_ERR_LEN] = "";
    size_t used = 0, leaked = 0, i = 0, j;

    for (j = 0; j < now->n; j++) {
        char path[64], target[128];
        ssize_t len;

        while (i < before->n && before->fd[i] < now->fd[j])
            i++;
        if (i < before->n && before->fd[i] == now->fd[j])
            continue;
        leaked++;
        snprintf(path, sizeof(path), "/proc/self/fd/%d", now->fd[j]);
        len = readlink(path, target, sizeof(target) - 1);
        target[len > 0 ? len : 0] = '\0';
        if (used < sizeof(text))
            used += (size_t)snprintf(text + used, sizeof(text) - used, "%sfd %d (%s)",
                                     leaked > 1 ? ", " : "", now->fd[j],
                                     len > 0 ? target : "?");
    }
    if (leaked)
        gpuipc_err_set(err, 0, "%zu FD%s leaked: %s", leaked, leaked > 1 ? "s" : "", text);
    return leaked;
}

void gpuipc_account_free(gpuipc_fds *s)
{
    free(s->fd);
    s->fd = NULL;
    s->n = 0;
}

size_t gpuipc_account_leaks_now(const gpuipc_fds *before, gpuipc_err *err)
{
    gpuipc_fds now;
    size_t n;

    if (gpuipc_account_snapshot(&now, err) < 0)
        return 0;
    n = gpuipc_account_leaks(before, &now, err);
    gpuipc_account_free(&now);
    return n;
}

unsigned gpuipc_account_free_below(uint64_t limit, unsigned want)
{
    unsigned n = 0;
    uint64_t fd;

    for (fd = 0; fd < limit && fd < 1u << 20 && n < want; fd++)
        n += fcntl((int)fd, F_GETFD) < 0 && errno == EBADF;
    return n;
}
