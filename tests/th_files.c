/* SPDX-License-Identifier: Apache-2.0 */
/* th_files.c: reading, filling and mounting files for the suites
 * (th_files.h). */
#include "th_files.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

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

int th_file_has(const char *path, const char *text)
{
    size_t n;
    char *all = th_read_file(path, &n);
    int has = all != NULL && strstr(all, text) != NULL;

    free(all);
    return has;
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    remove(path);
    return 0;
}

void th_remove_tree(const char *dir)
{
    nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
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
