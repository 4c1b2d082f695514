/* SPDX-License-Identifier: Apache-2.0 */
/* endpoint.c: listening, accepting and connecting for --serve and --connect,
 * with the rules of endpoint.h. */
#include "wire/endpoint.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "core/names.h"
#include "core/clock.h"
#include "core/stop.h"
#include "core/watch.h"
#include "wire/wire.h"

#define RETRY_MS 10 /* --connect: how often it tries while nothing listens */

/* Fills a with path; "@name" is abstract. Returns the address length. */
static socklen_t make_addr(struct sockaddr_un *a, const char *path)
{
    size_t len = strlen(path);

    memset(a, 0, sizeof(*a));
    a->sun_family = AF_UNIX;
    if (len >= sizeof(a->sun_path))
        len = sizeof(a->sun_path) - 1;
    if (path[0] == '@') {
        memcpy(a->sun_path + 1, path + 1, len - 1);
        return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len);
    }
    memcpy(a->sun_path, path, len);
    return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len + 1);
}

static const char *file_kind(mode_t mode)
{
    return S_ISREG(mode) ? "a regular file" : S_ISDIR(mode) ? "a directory"
         : S_ISLNK(mode) ? "a symbolic link" : S_ISFIFO(mode) ? "a FIFO"
         : S_ISCHR(mode) || S_ISBLK(mode) ? "a device" : "not a socket";
}

/* The directory that holds path must be writable by its owner only, and be
 * owned by this user or root. */
static int check_directory(const char *path, gpuipc_err *err)
{
    char dir[108];
    const char *slash = strrchr(path, '/');
    struct stat st;

    if (slash == NULL)
        snprintf(dir, sizeof(dir), ".");
    else if (slash == path)
        snprintf(dir, sizeof(dir), "/");
    else
        snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
    if (stat(dir, &st) < 0)
        return gpuipc_err_set(err, -errno, "--serve %s: stat of its directory %s: %s", path,
                              dir, strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return gpuipc_err_set(err, -ENOTDIR, "--serve %s: %s is not a directory", path, dir);
    if (st.st_mode & (S_IWGRP | S_IWOTH))
        return gpuipc_err_set(err, -EPERM, "--serve %s: refused: its directory %s is writable "
                              "by %s (mode %04o), so another user could replace the socket; "
                              "use a private directory (mkdir -m 700 DIR) or an abstract "
                              "name (@name)", path, dir,
                              (st.st_mode & S_IWOTH) ? "everyone" : "its group",
                              (unsigned)(st.st_mode & 07777));
    if (st.st_uid != geteuid() && st.st_uid != 0)
        return gpuipc_err_set(err, -EPERM, "--serve %s: refused: its directory %s belongs to "
                              "uid %u, who could replace the socket; use a directory of your "
                              "own", path, dir, (unsigned)st.st_uid);
    return 0;
}

/* Probes an existing socket file: 0 if it is stale (nothing listens), or a
 * negative errno if a server is alive there or the probe failed. */
static int probe_stale(const char *path, gpuipc_err *err)
{
    struct sockaddr_un a;
    socklen_t alen = make_addr(&a, path);
    int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    int rc, e;

    if (fd < 0)
        return gpuipc_err_set(err, -errno, "--serve %s: socket: %s", path, strerror(errno));
    rc = connect(fd, (struct sockaddr *)&a, alen);
    e = errno;
    close(fd);
    if (rc == 0 || e == EAGAIN || e == EINPROGRESS)
        return gpuipc_err_set(err, -EADDRINUSE, "--serve %s: a server is listening there "
                              "already (another gpuipc_test --serve?); stop it or choose "
                              "another path", path);
    if (e == ECONNREFUSED)
        return 0;
    return gpuipc_err_set(err, -e, "--serve %s: connect, to see whether the socket there is "
                          "stale: %s", path, strerror(e));
}

/* The rules for a file path, with a stale socket found there removed only
 * if remove is set. */
static int check_path(const char *path, int remove, gpuipc_err *err)
{
    struct stat st;
    int rc;

    if (path[0] == '@')
        return 0;
    if ((rc = check_directory(path, err)) < 0)
        return rc;
    if (lstat(path, &st) == 0) {
        if (!S_ISSOCK(st.st_mode))
            return gpuipc_err_set(err, -EEXIST, "--serve %s: the path exists and is %s; "
                                  "refusing to remove it (choose another path)", path,
                                  file_kind(st.st_mode));
        struct stat again;

        if ((rc = probe_stale(path, err)) < 0)
            return rc;
        /* The stale socket that was probed, and nothing put there since. */
        if (remove && lstat(path, &again) == 0 &&
            (!S_ISSOCK(again.st_mode) || again.st_dev != st.st_dev ||
             again.st_ino != st.st_ino))
            return gpuipc_err_set(err, -EEXIST, "--serve %s: the path changed while it was "
                                  "looked at (now %s); refusing to remove it", path,
                                  file_kind(again.st_mode));
        if (remove && unlink(path) < 0 && errno != ENOENT)
            return gpuipc_err_set(err, -errno, "--serve %s: unlink of the stale socket: %s",
                                  path, strerror(errno));
    } else if (errno != ENOENT) {
        return gpuipc_err_set(err, -errno, "--serve %s: lstat: %s", path, strerror(errno));
    }
    return 0;
}

/* Opens path's directory (O_PATH) into ep->dirfd and its last component
 * into ep->base. Returns 0 or a negative errno with err. */
static int hold_directory(gpuipc_endpoint *ep, gpuipc_err *err)
{
    const char *slash = strrchr(ep->path, '/');
    char dir[108];

    if (slash == NULL)
        snprintf(dir, sizeof(dir), ".");
    else if (slash == ep->path)
        snprintf(dir, sizeof(dir), "/");
    else
        snprintf(dir, sizeof(dir), "%.*s", (int)(slash - ep->path), ep->path);
    snprintf(ep->base, sizeof(ep->base), "%s", slash != NULL ? slash + 1 : ep->path);
    ep->dirfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (ep->dirfd < 0)
        return gpuipc_err_sys(err, "open", errno, "--serve %s: its directory %s: %s", ep->path,
                              dir, strerror(errno));
    return 0;
}

int gpuipc_endpoint_check(const char *path, gpuipc_err *err)
{
    return check_path(path, 0, err);
}

int gpuipc_endpoint_listen(gpuipc_endpoint *ep, const char *path, gpuipc_err *err)
{
    struct sockaddr_un a;
    socklen_t alen = make_addr(&a, path);
    struct stat st;
    mode_t old;
    int fd, rc;

    memset(ep, 0, sizeof(*ep));
    ep->fd = -1;
    ep->dirfd = -1;
    snprintf(ep->path, sizeof(ep->path), "%s", path);
    if ((rc = check_path(path, 1, err)) < 0)
        return rc;
    if (path[0] != '@' && (rc = hold_directory(ep, err)) < 0)
        return rc;
    fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
        rc = gpuipc_err_set(err, -errno, "--serve %s: socket AF_UNIX SOCK_SEQPACKET: %s",
                            path, strerror(errno));
        gpuipc_endpoint_close(ep); /* the directory held */
        return rc;
    }
    /* The mode comes from the umask at bind(); nothing else runs yet. */
    old = umask(0177);
    rc = bind(fd, (struct sockaddr *)&a, alen);
    umask(old);
    if (rc < 0) {
        rc = gpuipc_err_set(err, -errno, "--serve %s: bind: %s%s", path, strerror(errno),
                            errno == EADDRINUSE ? " (a server is using that name)" : "");
        close(fd);
        gpuipc_endpoint_close(ep);
        return rc;
    }
    ep->fd = fd;
    /* What was bound, to remove that and nothing else. */
    if (path[0] != '@' && fstatat(ep->dirfd, ep->base, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
        S_ISSOCK(st.st_mode)) {
        ep->file = 1;
        ep->dev = st.st_dev;
        ep->ino = st.st_ino;
    }
    if (path[0] != '@' && !ep->file) {
        rc = gpuipc_err_set(err, -EEXIST, "--serve %s: after bind, the path is no longer the "
                            "socket bound there (replaced at once?)", path);
        gpuipc_endpoint_close(ep);
        return rc;
    }
    if (ep->file && (st.st_mode & 0777) != 0600) {
        rc = gpuipc_err_set(err, -EPERM, "--serve %s: the socket's mode is %04o, not 0600",
                            path, (unsigned)(st.st_mode & 07777));
        gpuipc_endpoint_close(ep);
        return rc;
    }
    if (listen(fd, 4) < 0) {
        rc = gpuipc_err_set(err, -errno, "--serve %s: listen: %s", path, strerror(errno));
        gpuipc_endpoint_close(ep);
        return rc;
    }
    return 0;
}

void gpuipc_endpoint_close(gpuipc_endpoint *ep)
{
    if (ep->fd >= 0)
        close(ep->fd);
    ep->fd = -1;
    if (ep->file)
        gpuipc_endpoint_unlink(ep);
    ep->file = 0;
    if (ep->dirfd >= 0)
        close(ep->dirfd);
    ep->dirfd = -1;
}

int gpuipc_endpoint_unlink(const gpuipc_endpoint *ep)
{
    struct stat st;

    if (!ep->file || ep->dirfd < 0 ||
        fstatat(ep->dirfd, ep->base, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISSOCK(st.st_mode) ||
        st.st_dev != ep->dev || st.st_ino != ep->ino)
        return 0;
    return unlinkat(ep->dirfd, ep->base, 0) == 0;
}

/* Reads the peer's credentials; 0 or a negative errno. */
/* Reads who is at the other end of fd into peer and decides whether that
 * user may take part: this user, or allow_uid (if not negative). Returns 1
 * (admitted: fd stays open), 0 (refused: fd is closed), or a negative errno
 * with err (fd is closed). */
static int admit(int fd, long allow_uid, gpuipc_peer *peer, gpuipc_err *err)
{
    struct ucred cred;
    socklen_t len = sizeof(cred);

    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) {
        int e = errno;

        close(fd);
        return gpuipc_err_set(err, -e, "getsockopt SO_PEERCRED: %s", strerror(e));
    }
    peer->pid = cred.pid;
    peer->uid = cred.uid;
    if (peer->uid == geteuid() || (allow_uid >= 0 && (long)peer->uid == allow_uid))
        return 1;
    close(fd);
    return 0;
}

int gpuipc_endpoint_accept(gpuipc_endpoint *ep, long allow_uid, uint64_t deadline_ns,
                           gpuipc_endpoint_refused_fn refused, void *arg, gpuipc_peer *peer,
                           gpuipc_err *err)
{
    for (;;) {
        struct pollfd pfd[2] = {{.fd = ep->fd, .events = POLLIN},
                                {.fd = gpuipc_stop_fd(), .events = POLLIN}};
        char why[256];
        int fd, rc;

        if (gpuipc_stop_signal())
            return gpuipc_err_set(err, -EINTR, "--serve %s: interrupted by a signal while "
                                  "waiting for a consumer", ep->path);
        gpuipc_watch_call("poll");
        rc = poll(pfd, pfd[1].fd >= 0 ? 2 : 1, gpuipc_clock_ms_left(deadline_ns));
        gpuipc_watch_call(NULL);
        if ((rc < 0 && errno == EINTR) || (rc > 0 && pfd[0].revents == 0))
            continue;
        if (rc < 0)
            return gpuipc_err_set(err, -errno, "--serve %s: poll: %s", ep->path,
                                  strerror(errno));
        if (rc == 0)
            return gpuipc_err_set(err, -ETIMEDOUT, "--serve %s: timed out during hello: no "
                                  "consumer connected before the deadline (start gpuipc_test "
                                  "--connect %s, or raise --timeout)", ep->path, ep->path);
        fd = accept4(ep->fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0) {
            if (errno == EAGAIN || errno == EINTR || errno == ECONNABORTED)
                continue;
            return gpuipc_err_set(err, -errno, "--serve %s: accept: %s", ep->path,
                                  strerror(errno));
        }
        if ((rc = admit(fd, allow_uid, peer, err)) < 0)
            return rc;
        if (rc == 1)
            return fd;
        snprintf(why, sizeof(why), "refused a connection from pid %d, uid %u: only uid %u "
                 "(this user) may connect%s", (int)peer->pid, (unsigned)peer->uid,
                 (unsigned)geteuid(), allow_uid >= 0 ? " and the uid given to --allow-uid" : "");
        if (refused != NULL)
            refused(why, peer, arg);
    }
}

int gpuipc_endpoint_connect(const char *path, long allow_uid, uint64_t deadline_ns,
                            gpuipc_peer *peer, gpuipc_err *err)
{
    struct sockaddr_un a;
    socklen_t alen = make_addr(&a, path);
    int last = 0;

    for (;;) {
        struct timespec pause = {0, RETRY_MS * 1000000L};
        int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        int rc;

        if (fd < 0)
            return gpuipc_err_set(err, -errno, "--connect %s: socket AF_UNIX SOCK_SEQPACKET: %s",
                                  path, strerror(errno));
        if (connect(fd, (struct sockaddr *)&a, alen) == 0) {
            if ((rc = admit(fd, allow_uid, peer, err)) < 0)
                return rc;
            if (rc == 1)
                return fd;
            return gpuipc_err_set(err, -EPERM, "%s: refused: the server there (pid %d) runs as "
                                  "uid %u, not as this user (uid %u), and would hand over its "
                                  "memory", path, (int)peer->pid, (unsigned)peer->uid,
                                  (unsigned)geteuid());
        }
        last = errno;
        close(fd);
        /* A file that is not a socket refuses every connect: say so now. */
        if (last == ECONNREFUSED && path[0] != '@') {
            struct stat st;

            if (lstat(path, &st) == 0 && !S_ISSOCK(st.st_mode))
                return gpuipc_err_set(err, -ENOTSOCK, "--connect %s: the path is %s, not a "
                                      "socket: give the path gpuipc_test --serve listens on",
                                      path, file_kind(st.st_mode));
        }
        /* Nothing listens yet, or its backlog is full: try again. */
        if (last != ENOENT && last != ECONNREFUSED && last != EAGAIN)
            return gpuipc_err_set(err, -last, "--connect %s: connect: %s%s", path,
                                  strerror(last), last == EACCES ? " (no permission on the "
                                  "socket or its directory: it belongs to another user?)" : "");
        if (gpuipc_stop_signal())
            return gpuipc_err_set(err, -EINTR, "--connect %s: interrupted by a signal while "
                                  "waiting for the server", path);
        if (gpuipc_clock_ms_left(deadline_ns) == 0)
            break;
        nanosleep(&pause, NULL);
    }
    return gpuipc_err_set(err, -ETIMEDOUT, "--connect %s: timed out during hello: no server "
                          "accepted before the deadline (%s: %s; start gpuipc_test --serve %s "
                          "first, or raise --timeout%s)", path, gpuipc_errno_name(last) ? gpuipc_errno_name(last) : "?",
                          strerror(last), path,
                          path[0] == '@' ? "; an abstract name belongs to one network "
                                           "namespace, so a server in another one (another "
                                           "container or pod) cannot be reached by it: use a "
                                           "socket file in a directory both see" : "");
}
