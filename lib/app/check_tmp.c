/* check_tmp.c: a temporary file for Check wherever the program runs.
 *
 * Check (linked statically) passes its test results through a temporary
 * file it makes with mkstemp("$TEMP/check_XXXXXX"), /tmp when TEMP is
 * unset, and unlinks at once; where that cannot be created (a container's
 * read-only root file system, a full /tmp) it gives up with exit(2) before
 * the first scenario. The link wraps mkstemp (-Wl,--wrap=mkstemp, in the
 * Makefile): a call for Check's template that fails for want of a writable
 * directory gets an anonymous memfd instead, which needs no file system at
 * all, and the template is emptied so that Check's unlink() of it touches
 * nothing. Every other call, and every call that succeeds, is the C
 * library's own. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

int __real_mkstemp(char *template);
int __wrap_mkstemp(char *template);

/* Whether template is Check's: ".../check_XXXXXX". */
static int checks_template(const char *template)
{
    static const char tail[] = "/check_XXXXXX";
    size_t n = strlen(template);

    return n >= sizeof(tail) - 1 && strcmp(template + n - (sizeof(tail) - 1), tail) == 0;
}

int __wrap_mkstemp(char *template)
{
    int check = checks_template(template), fd, e;

    fd = __real_mkstemp(template);
    if (fd >= 0 || !check)
        return fd;
    e = errno;
    if (e != EROFS && e != EACCES && e != EPERM && e != ENOENT && e != ENOSPC && e != EDQUOT &&
        e != ENOTDIR)
        return fd;
    fd = memfd_create("check-messages", MFD_CLOEXEC);
    if (fd < 0) {
        errno = e;
        return -1;
    }
    template[0] = '\0'; /* unlink("") fails with ENOENT, removing nothing */
    return fd;
}
