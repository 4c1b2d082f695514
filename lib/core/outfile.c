/* SPDX-License-Identifier: Apache-2.0 */
/* outfile.c: see outfile.h. */
#include "core/outfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/random.h"
#include "core/watch.h"

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1 << 0)
#endif
#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif

/* What a file of mode m is, for a refusal. */
static const char *kind(mode_t m)
{
    switch (m & S_IFMT) {
    case S_IFLNK:
        return "a symbolic link (not followed: name the file itself)";
    case S_IFCHR:
        return "a character device";
    case S_IFBLK:
        return "a block device";
    case S_IFIFO:
        return "a FIFO";
    case S_IFDIR:
        return "a directory";
    case S_IFSOCK:
        return "a socket";
    default:
        return "not a regular file";
    }
}

/* Splits path into its directory (into dir, cap bytes) and last component
 * (into f->base). Returns 0, or -EINVAL with err. */
static int split(gpuipc_outfile *f, const char *path, char *dir, size_t cap, gpuipc_err *err)
{
    const char *slash = strrchr(path, '/');
    const char *base = slash != NULL ? slash + 1 : path;
    size_t dlen = slash == NULL ? 0 : slash == path ? 1 : (size_t)(slash - path);

    if (*base == '\0' || strcmp(base, ".") == 0 || strcmp(base, "..") == 0)
        return gpuipc_err_set(err, -EINVAL, "names a directory, not a file");
    /* Room for the temporary name's 38 more bytes within a file name's 255. */
    if (strlen(base) + 1 > sizeof(f->base) - 40 || dlen + 1 > cap)
        return gpuipc_err_set(err, -ENAMETOOLONG, "the name is too long");
    memcpy(f->base, base, strlen(base) + 1);
    if (slash == NULL) {
        memcpy(dir, ".", 2);
    } else {
        memcpy(dir, path, dlen);
        dir[dlen] = '\0';
    }
    return 0;
}

int gpuipc_outfile_check(gpuipc_outfile *f, const char *path, gpuipc_err *err)
{
    char dir[4096];
    struct stat st;
    int rc;

    memset(f, 0, sizeof(*f));
    f->dirfd = -1;
    if (path[0] == '\0')
        return gpuipc_err_set(err, -EINVAL, "the file name is empty");
    if ((rc = split(f, path, dir, sizeof(dir), err)) < 0)
        return rc;
    f->dirfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (f->dirfd < 0) {
        rc = errno;
        return gpuipc_err_sys(err, "open", rc, "its directory %s: %s", dir,
                              rc == ENOENT ? "does not exist" : rc == ENOTDIR
                              ? "is not a directory" : strerror(rc));
    }
    if (fstatat(f->dirfd, f->base, &st, AT_SYMLINK_NOFOLLOW) < 0) {
        rc = errno;
        if (rc != ENOENT) {
            gpuipc_outfile_close(f);
            return gpuipc_err_sys(err, "fstatat", rc, "%s", strerror(rc));
        }
        if (faccessat(f->dirfd, ".", W_OK | X_OK, AT_EACCESS) < 0) {
            rc = errno;
            gpuipc_outfile_close(f);
            return gpuipc_err_sys(err, "faccessat", rc, "does not exist, and its directory %s "
                                  "cannot be written (%s)", dir, strerror(rc));
        }
        return 0;
    }
    if (!S_ISREG(st.st_mode)) {
        gpuipc_outfile_close(f);
        return gpuipc_err_set(err, -EINVAL, "is %s; the program writes only a new or a "
                              "regular file, and replaces nothing else", kind(st.st_mode));
    }
    /* The new file takes its place with its permissions and owner. */
    f->replaces = 1;
    f->mode = st.st_mode & 0777;
    f->uid = st.st_uid;
    f->gid = st.st_gid;
    if (faccessat(f->dirfd, ".", W_OK | X_OK, AT_EACCESS) == 0)
        return 0;
    /* A regular file in a directory that cannot be written: in place. */
    rc = errno;
    if (st.st_nlink != 1) {
        gpuipc_outfile_close(f);
        return gpuipc_err_set(err, -EINVAL, "its directory %s cannot be written (%s), and the "
                              "file has %lu links: written in place it would change them all",
                              dir, strerror(rc), (unsigned long)st.st_nlink);
    }
    if (faccessat(f->dirfd, f->base, W_OK, AT_EACCESS) < 0) {
        rc = errno;
        gpuipc_outfile_close(f);
        return gpuipc_err_sys(err, "faccessat", rc, "cannot be written (%s), nor its directory "
                              "%s", strerror(rc), dir);
    }
    f->in_place = 1;
    f->dev = st.st_dev;
    f->ino = st.st_ino;
    return 0;
}

/* f->tmp = ".<base>.<32 hex digits from getrandom>.tmp". Returns 0 or an
 * errno. System calls only. */
static int random_name(gpuipc_outfile *f)
{
    unsigned char raw[16];
    char digits[2 * sizeof(raw) + 1];
    gpuipc_sbuf b;
    int e;

    f->tmp[0] = '\0';
    if ((e = gpuipc_random_bytes(raw, sizeof(raw))) != 0)
        return e;
    gpuipc_random_hex(digits, raw, sizeof(raw));
    gpuipc_sbuf_init(&b, f->tmp, sizeof(f->tmp));
    gpuipc_sbuf_str(&b, ".");
    gpuipc_sbuf_str(&b, f->base);
    gpuipc_sbuf_str(&b, ".");
    gpuipc_sbuf_str(&b, digits);
    gpuipc_sbuf_str(&b, ".tmp");
    return 0;
}

static int fail(gpuipc_err *err, const char *call, int e, const char *what)
{
    if (err != NULL)
        return gpuipc_err_sys(err, call, e, "%s: %s", what, strerror(e));
    return -e;
}

int gpuipc_outfile_open(gpuipc_outfile *f, gpuipc_err *err)
{
    struct stat st;
    unsigned n;
    int fd, e;

    f->tmp[0] = '\0';
    if (f->in_place) {
        fd = openat(f->dirfd, f->base, O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
        if (fd < 0)
            return fail(err, "openat", errno, "opening it in place");
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_nlink != 1 ||
            st.st_dev != f->dev || st.st_ino != f->ino) {
            close(fd);
            return fail(err, "fstat", EINVAL, "it is no longer the regular file seen before "
                        "the run; left as it is");
        }
        if (ftruncate(fd, 0) < 0) {
            e = errno;
            close(fd);
            return fail(err, "ftruncate", e, "emptying it");
        }
        return fd;
    }
    /* A name nobody can foresee (128 random bits), created here or not at
     * all: one made of the pid could be planted beforehand by another user
     * of a world-writable directory, to make the run fail. */
    for (n = 0; n < 4; n++) {
        if ((e = random_name(f)) != 0)
            return fail(err, "getrandom", e, "naming its temporary file");
        fd = openat(f->dirfd, f->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                    0644);
        if (fd >= 0) {
            /* Not wider than the file it replaces (0640 stays 0640), and as
             * root, its owner's; a failure here only leaves this user's. */
            if (f->replaces) {
                if (geteuid() == 0)
                    (void)!fchown(fd, f->uid, f->gid);
                (void)!fchmod(fd, f->mode);
            }
            return fd;
        }
        if (errno != EEXIST)
            break;
    }
    e = errno;
    f->tmp[0] = '\0';
    return fail(err, "openat", e, "creating its temporary file beside it");
}

/* Copies the temporary file's content into the regular file at f->base,
 * in place: opened without following a link (O_PATH), checked to be a
 * regular file of one link, and reopened for writing through its own FD
 * (/proc/self/fd), so that what is written is the file that was checked.
 * Returns 0 or an errno. System calls only. */
static int copy_over(gpuipc_outfile *f)
{
    char proc[48], buf[4096];
    gpuipc_sbuf pb;
    struct stat st, st2;
    int pfd, src = -1, dst = -1, e = 0;
    ssize_t n;

    if ((pfd = openat(f->dirfd, f->base, O_PATH | O_NOFOLLOW | O_CLOEXEC)) < 0)
        return errno;
    if (fstat(pfd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_nlink != 1) {
        e = EINVAL;
        goto out;
    }
    gpuipc_sbuf_init(&pb, proc, sizeof(proc));
    gpuipc_sbuf_str(&pb, "/proc/self/fd/");
    gpuipc_sbuf_uint(&pb, (uint64_t)pfd);
    if ((dst = open(proc, O_WRONLY | O_TRUNC | O_CLOEXEC)) < 0 || fstat(dst, &st2) < 0 ||
        (src = openat(f->dirfd, f->tmp, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) < 0) {
        e = errno;
        goto out;
    }
    if (st2.st_dev != st.st_dev || st2.st_ino != st.st_ino) {
        e = EINVAL;
        goto out;
    }
    while ((n = read(src, buf, sizeof(buf))) != 0) {
        ssize_t off = 0, w;

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            e = errno;
            goto out;
        }
        while (off < n) {
            w = write(dst, buf + off, (size_t)(n - off));
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0) {
                e = w < 0 ? errno : EIO;
                goto out;
            }
            off += w;
        }
    }
    if (close(dst) < 0)
        e = errno;
    dst = -1;
out:
    if (dst >= 0)
        close(dst);
    if (src >= 0)
        close(src);
    close(pfd);
    return e;
}

int (*gpuipc_outfile_renameat2_hook)(int dirfd, const char *from, const char *to,
                                     unsigned flags);

static int rename2(int dirfd, const char *from, const char *to, unsigned flags)
{
    if (gpuipc_outfile_renameat2_hook != NULL)
        return gpuipc_outfile_renameat2_hook(dirfd, from, to, flags);
    return (int)syscall(SYS_renameat2, dirfd, from, dirfd, to, flags);
}

int gpuipc_outfile_commit(gpuipc_outfile *f, gpuipc_err *err)
{
    struct stat st;
    int e;

    if (f->in_place || f->tmp[0] == '\0')
        return 0;
    if (rename2(f->dirfd, f->tmp, f->base, RENAME_NOREPLACE) == 0)
        goto done;
    e = errno;
    if (e == EEXIST && rename2(f->dirfd, f->tmp, f->base, RENAME_EXCHANGE) == 0) {
        /* What it displaced is under the temporary name now: only a
         * regular file may go; anything else goes back. */
        if (fstatat(f->dirfd, f->tmp, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode)) {
            unlinkat(f->dirfd, f->tmp, 0);
            goto done;
        }
        rename2(f->dirfd, f->tmp, f->base, RENAME_EXCHANGE);
        gpuipc_outfile_abort(f);
        return fail(err, "renameat2", EINVAL, "it became something other than a regular file "
                    "during the run; left as it is");
    }
    if (e == EEXIST)
        e = errno;
    if (e == EINVAL || e == ENOSYS) {
        /* A file system without renameat2's flags (NFS, say). A link never
         * replaces anything; a regular file there gets the content copied
         * into it, opened as the very file that was looked at. A look and
         * then a rename would replace whatever came between the two. */
        if (linkat(f->dirfd, f->tmp, f->dirfd, f->base, 0) == 0) {
            unlinkat(f->dirfd, f->tmp, 0);
            goto done;
        }
        e = errno;
        if (e == EEXIST) {
            e = copy_over(f);
            gpuipc_outfile_abort(f);
            if (e == 0)
                return 0;
            return fail(err, "open", e, e == EINVAL ? "it became something other than a "
                        "regular file with one link during the run; left as it is"
                        : "writing over it in place (its file system renames only plainly)");
        }
    }
    gpuipc_outfile_abort(f);
    return fail(err, "renameat2", e, "renaming its temporary file over it");
done:
    f->tmp[0] = '\0';
    return 0;
}

/* Makes the regular file of one link name (in dirfd) claim nothing: emptied
 * through an FD checked to be that very file, or else, where may_unlink,
 * its name removed. Returns 0 (nothing there is fine), or a negative errno
 * (the file is as it was). System calls only. */
static int void_at(int dirfd, const char *name, int may_unlink)
{
    struct stat st, st2;
    int fd, ok;

    if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
        return errno == ENOENT ? 0 : -errno;
    if (!S_ISREG(st.st_mode) || st.st_nlink != 1)
        return -EINVAL;
    fd = openat(dirfd, name, O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd >= 0) {
        ok = fstat(fd, &st2) == 0 && S_ISREG(st2.st_mode) && st2.st_dev == st.st_dev &&
             st2.st_ino == st.st_ino && ftruncate(fd, 0) == 0;
        close(fd);
        if (ok)
            return 0;
    }
    if (!may_unlink)
        return -EIO;
    return unlinkat(dirfd, name, 0) == 0 ? 0 : -errno;
}

int gpuipc_outfile_void(gpuipc_outfile *f)
{
    if (f->dirfd < 0)
        return -EBADF;
    return void_at(f->dirfd, f->base, !f->in_place);
}

int gpuipc_outfile_void_path(const char *path)
{
    return void_at(AT_FDCWD, path, 1);
}

void gpuipc_outfile_abort(gpuipc_outfile *f)
{
    if (!f->in_place && f->tmp[0] != '\0' && f->dirfd >= 0)
        unlinkat(f->dirfd, f->tmp, 0);
    f->tmp[0] = '\0';
}

void gpuipc_outfile_close(gpuipc_outfile *f)
{
    if (f->dirfd >= 0)
        close(f->dirfd);
    f->dirfd = -1;
}
