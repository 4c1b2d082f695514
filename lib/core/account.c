/* SPDX-License-Identifier: Apache-2.0 */
/* account.c: what this process holds: FDs through /proc/self/fd, driver
 * objects through the ledger, shared memory through /proc/self/status, GPU
 * memory through the caller's NVML reader. */
#include "core/account.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/proc.h"
#include "core/units.h"

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;

    return (x > y) - (x < y);
}

/* The FDs that are not ours to count (account.h): process-wide, as the FDs
 * themselves are. The owner is a string literal of the caller's. */
static struct {
    int fd;
    dev_t dev;
    ino_t ino;
    const char *owner;
} foreign[GPUIPC_ACCOUNT_FOREIGN_MAX];
static int n_foreign;

/* Whether fd is registered and still the file it was then. */
static int is_foreign(int fd)
{
    struct stat st;
    int i;

    for (i = 0; i < n_foreign; i++)
        if (foreign[i].fd == fd)
            return fstat(fd, &st) == 0 && st.st_dev == foreign[i].dev &&
                   st.st_ino == foreign[i].ino;
    return 0;
}

int gpuipc_account_foreign_since(const gpuipc_fds *before, const char *owner, gpuipc_err *err)
{
    gpuipc_fds now;
    size_t i, j = 0;
    int added = 0, rc, first = n_foreign;

    rc = gpuipc_account_snapshot(&now, err);
    if (rc < 0)
        return rc;
    for (i = 0; i < now.n; i++) {
        struct stat st;

        while (j < before->n && before->fd[j] < now.fd[i])
            j++;
        if (j < before->n && before->fd[j] == now.fd[i])
            continue;
        if (n_foreign == GPUIPC_ACCOUNT_FOREIGN_MAX) {
            n_foreign = first;
            gpuipc_account_free(&now);
            return gpuipc_err_set(err, -ENOSPC,
                                  "%s opened more than %d FDs of its own: too many to leave "
                                  "out of the FD accounting", owner, GPUIPC_ACCOUNT_FOREIGN_MAX);
        }
        if (fstat(now.fd[i], &st) < 0)
            continue; /* closed again since the snapshot: nothing to leave out */
        foreign[n_foreign].fd = now.fd[i];
        foreign[n_foreign].dev = st.st_dev;
        foreign[n_foreign].ino = st.st_ino;
        foreign[n_foreign].owner = owner;
        n_foreign++;
        added++;
    }
    gpuipc_account_free(&now);
    return added;
}

int gpuipc_account_foreign_forget(const char *owner)
{
    int i, j = 0, gone = 0;

    for (i = 0; i < n_foreign; i++) {
        if (strcmp(foreign[i].owner, owner) == 0)
            gone++;
        else
            foreign[j++] = foreign[i];
    }
    n_foreign = j;
    return gone;
}

int gpuipc_account_foreign_count(void)
{
    return n_foreign;
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
        {
            char path[64], target[256];
            ssize_t len;

            /* The driver's event pool is the driver's (core/proc.h). */
            snprintf(path, sizeof(path), "/proc/self/fd/%ld", v);
            len = readlink(path, target, sizeof(target) - 1);
            if (len > 0) {
                target[len] = '\0';
                if (gpuipc_proc_is_driver_pool(target))
                    continue;
            }
        }
        /* A library's own FDs (PMIx's), registered as not ours. */
        if (n_foreign > 0 && is_foreign((int)v))
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

const char *gpuipc_account_fd_kind(int fd, char *buf, size_t len)
{
    char path[64], target[256];
    struct stat st;
    ssize_t n;

    if (fstat(fd, &st) < 0) {
        snprintf(buf, len, "no FD (%s)", strerror(errno));
        return buf;
    }
    snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
    n = readlink(path, target, sizeof(target) - 1);
    target[n > 0 ? n : 0] = '\0';
    if (S_ISFIFO(st.st_mode))
        snprintf(buf, len, "a pipe");
    else if (S_ISSOCK(st.st_mode))
        snprintf(buf, len, "a socket");
    else if (S_ISDIR(st.st_mode))
        snprintf(buf, len, "a directory %s", target);
    else if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode))
        snprintf(buf, len, "a %s device %s (%u:%u)", S_ISCHR(st.st_mode) ? "character" : "block",
                 target, major(st.st_rdev), minor(st.st_rdev));
    else if (strncmp(target, "/memfd:", 7) == 0)
        snprintf(buf, len, "a memfd (%.*s)", (int)strcspn(target + 1, " "), target + 1);
    else if (strncmp(target, "anon_inode:", 11) == 0)
        snprintf(buf, len, "an anonymous inode %s", target + 11);
    else if (S_ISREG(st.st_mode))
        snprintf(buf, len, "a regular file %s", target);
    else
        snprintf(buf, len, "%s", target[0] ? target : "an FD of an unknown kind");
    return buf;
}

int gpuipc_account_add(gpuipc_fds *s, int fd)
{
    size_t i = 0;
    int *grown;

    while (i < s->n && s->fd[i] < fd)
        i++;
    if (i < s->n && s->fd[i] == fd)
        return 0;
    if ((grown = realloc(s->fd, (s->n + 1) * sizeof(*grown))) == NULL)
        return -ENOMEM;
    s->fd = grown;
    memmove(s->fd + i + 1, s->fd + i, (s->n - i) * sizeof(*s->fd));
    s->fd[i] = fd;
    s->n++;
    return 0;
}

void gpuipc_account_remove(gpuipc_fds *s, int fd)
{
    size_t i = 0;

    while (i < s->n && s->fd[i] < fd)
        i++;
    if (i == s->n || s->fd[i] != fd)
        return;
    memmove(s->fd + i, s->fd + i + 1, (s->n - i - 1) * sizeof(*s->fd));
    s->n--;
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

/* ---- what one process holds ------------------------------------------------------------ */

/* What the counts have cost this process, for gpuipc_usage_cost(). */
static uint64_t cost_ns;
static unsigned cost_n;

void gpuipc_usage_cost(uint64_t *ns, unsigned *n)
{
    *ns = cost_ns;
    *n = cost_n;
}

int gpuipc_usage_take(gpuipc_usage *u, gpuipc_usage_gpu_fn gpu, gpuipc_err *err)
{
    uint64_t t = gpuipc_clock_ns();
    int rc;

    memset(u, 0, sizeof(*u));
    gpuipc_ledger_mark_now(&u->objects);
    if (gpuipc_proc_shmem(&u->shmem) < 0)
        u->shmem = GPUIPC_USAGE_UNKNOWN;
    u->gpu = GPUIPC_USAGE_UNKNOWN;
    if (gpu == NULL)
        gpuipc_err_set(&u->gpu_why, -ENOTSUP, "no GPU is open in this process");
    else if (gpu(&u->gpu, &u->gpu_why) < 0)
        u->gpu = GPUIPC_USAGE_UNKNOWN;
    rc = gpuipc_account_snapshot(&u->fds, err);
    u->have_fds = rc == 0;
    cost_ns += gpuipc_clock_ns() - t;
    cost_n++;
    return rc;
}

void gpuipc_usage_take_objects(gpuipc_usage *u)
{
    memset(u, 0, sizeof(*u));
    gpuipc_ledger_mark_now(&u->objects);
    u->shmem = GPUIPC_USAGE_UNKNOWN;
    u->gpu = GPUIPC_USAGE_UNKNOWN;
    gpuipc_err_set(&u->gpu_why, -ENOTSUP, "counted per phase: other cells run beside this one");
    u->have_fds = 0;
}

/* Appends "; " and text to err's message, or sets it if it is the first. */
static void add_reason(gpuipc_err *err, int first, const char *text)
{
    size_t used = first ? 0 : strlen(err->msg);

    snprintf(err->msg + used, sizeof(err->msg) - used, "%s%s", first ? "" : "; ", text);
}

int gpuipc_usage_leaks(const gpuipc_usage *before, gpuipc_usage_gpu_fn gpu, uint64_t settle_ns,
                       gpuipc_err *err)
{
    char text[GPUIPC_ERR_LEN], a[32], b[32], c[32];
    uint64_t bytes = 0, now = 0, t = gpuipc_clock_ns();
    gpuipc_err e;
    size_t n;
    int found = 0;

    gpuipc_err_clear(err);
    if (before->have_fds && gpuipc_account_leaks_now(&before->fds, &e) > 0)
        add_reason(err, found++ == 0, e.msg);
    n = gpuipc_ledger_since(&before->objects, &bytes, text, sizeof(text));
    if (n > 0) {
        char line[GPUIPC_ERR_LEN];

        snprintf(line, sizeof(line), "%zu driver object%s still held (%s known): %.400s", n,
                 n == 1 ? "" : "s", gpuipc_units_format_size(bytes, a, sizeof(a)), text);
        add_reason(err, found++ == 0, line);
    }
    if (before->shmem != GPUIPC_USAGE_UNKNOWN && gpuipc_proc_shmem(&now) == 0 &&
        now > before->shmem) {
        snprintf(text, sizeof(text), "%s more shared memory resident in this process "
                 "(RssShmem %s before, %s after)",
                 gpuipc_units_format_size(now - before->shmem, a, sizeof(a)),
                 gpuipc_units_format_size(before->shmem, b, sizeof(b)),
                 gpuipc_units_format_size(now, c, sizeof(c)));
        add_reason(err, found++ == 0, text);
    }
    if (before->gpu != GPUIPC_USAGE_UNKNOWN && gpu != NULL) {
        uint64_t deadline = gpuipc_clock_deadline(settle_ns);
        int rc;

        /* The driver may account a release a moment late: re-read before
         * calling it a leak, within the bound (each read asks the driver). */
        while ((rc = gpu(&now, &e)) == 0 && now > before->gpu &&
               gpuipc_clock_ms_left(deadline) > 0)
            gpuipc_clock_sleep(10 * GPUIPC_NS_PER_MS);
        if (rc == 0 && now > before->gpu) {
            snprintf(text, sizeof(text), "%s more GPU memory held by this process, as NVML "
                     "reports it (%s before, %s after)",
                     gpuipc_units_format_size(now - before->gpu, a, sizeof(a)),
                     gpuipc_units_format_size(before->gpu, b, sizeof(b)),
                     gpuipc_units_format_size(now, c, sizeof(c)));
            add_reason(err, found++ == 0, text);
        }
    }
    cost_ns += gpuipc_clock_ns() - t;
    cost_n++;
    return found;
}

void gpuipc_usage_figures_of(const gpuipc_usage *u, gpuipc_usage_figures *f)
{
    f->fds = u->have_fds ? u->fds.n : GPUIPC_USAGE_UNKNOWN;
    f->objects = u->objects.live;
    f->shmem = u->shmem;
    f->gpu = u->gpu;
}

int gpuipc_usage_drift(const gpuipc_usage_figures *ref, const gpuipc_usage_figures *now,
                       const char *who, char *why, size_t len)
{
    char a[32], b[32];

#define KNOWN(field) (ref->field != GPUIPC_USAGE_UNKNOWN && now->field != GPUIPC_USAGE_UNKNOWN)
    if (KNOWN(fds) && now->fds > ref->fds)
        snprintf(why, len, "the %s has %llu FDs open, %llu more than after round 1", who,
                 (unsigned long long)now->fds, (unsigned long long)(now->fds - ref->fds));
    else if (KNOWN(objects) && now->objects > ref->objects)
        snprintf(why, len, "the %s holds %llu driver objects, %llu more than after round 1",
                 who, (unsigned long long)now->objects,
                 (unsigned long long)(now->objects - ref->objects));
    else if (KNOWN(shmem) && now->shmem > ref->shmem)
        snprintf(why, len, "the %s has %s of shared memory resident, %s more than after "
                 "round 1", who, gpuipc_units_format_size(now->shmem, a, sizeof(a)),
                 gpuipc_units_format_size(now->shmem - ref->shmem, b, sizeof(b)));
    else if (KNOWN(gpu) && now->gpu > ref->gpu)
        snprintf(why, len, "the %s holds %s of GPU memory by NVML, %s more than after round 1",
                 who, gpuipc_units_format_size(now->gpu, a, sizeof(a)),
                 gpuipc_units_format_size(now->gpu - ref->gpu, b, sizeof(b)));
    else
        return 0;
#undef KNOWN
    return 1;
}

void gpuipc_usage_free(gpuipc_usage *u)
{
    if (u->have_fds)
        gpuipc_account_free(&u->fds);
    u->have_fds = 0;
}

void gpuipc_session_usage_note(gpuipc_session_usage *s, const uint8_t device[16],
                               gpuipc_usage_gpu_fn gpu)
{
    gpuipc_err e;

    if (s->have && memcmp(s->device, device, sizeof(s->device)) == 0)
        return;
    if (s->have)
        gpuipc_usage_free(&s->ref);
    gpuipc_usage_take(&s->ref, gpu, &e);
    memcpy(s->device, device, sizeof(s->device));
    s->have = 1;
}

int gpuipc_session_usage_leaks(gpuipc_session_usage *s, gpuipc_usage_gpu_fn gpu,
                               uint64_t settle_ns, gpuipc_err *err)
{
    int n;

    gpuipc_err_clear(err);
    if (!s->have)
        return 0;
    n = gpuipc_usage_leaks(&s->ref, gpu, settle_ns, err);
    gpuipc_usage_free(&s->ref);
    s->have = 0;
    return n;
}

void gpuipc_session_usage_free(gpuipc_session_usage *s)
{
    if (s->have)
        gpuipc_usage_free(&s->ref);
    s->have = 0;
}
