/* SPDX-License-Identifier: Apache-2.0 */
/* check_shim.c: what the program changes of Check's behaviour, by wrapping
 * two C library calls at link time (-Wl,--wrap=mkstemp,--wrap=sigaction, in
 * the Makefile). Check is linked statically; these wrappers are the only
 * way in, and they leave every other caller's call as it is.
 *
 * Its temporary file. Check passes its test results through a file it
 * makes with mkstemp("$TEMP/check_XXXXXX") (/tmp when TEMP is unset) and
 * unlinks at once; where that cannot be created (a container's read-only
 * root file system, a full /tmp) it gives up with exit(2) before the first
 * scenario. A call for Check's template that fails for want of a writable
 * directory gets an anonymous memfd instead, which needs no file system at
 * all, and the template is emptied so that Check's unlink() of it touches
 * nothing.
 *
 * Its signal handlers. srunner_run_all() installs handlers for SIGINT and
 * SIGTERM that SIGKILL the process group (meant for its forked tests). The
 * program runs the scenarios in its own process, with CUDA's and NVML's
 * threads beside it: a stop signal sent to the process may be delivered to
 * any of those threads, whatever the main thread blocks, and Check's
 * handler would then kill both processes mid-scenario (exit 137, nothing
 * released, nothing said). While the program runs its scenarios through
 * Check (gpuipc_check_shield), a handler without SA_SIGINFO for SIGINT or
 * SIGTERM (Check's) is not installed: the program's own stays. Whether the
 * shield is up is kept by core/stop, with the rest of what the program's
 * stop handling knows of the process (a wrapper of sigaction gets no
 * argument of the program's). */
#include "app/check_shim.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "core/stop.h"

int __real_mkstemp(char *template);
int __wrap_mkstemp(char *template);
int __real_sigaction(int sig, const struct sigaction *act, struct sigaction *old);
int __wrap_sigaction(int sig, const struct sigaction *act, struct sigaction *old);

void gpuipc_check_shield(int on)
{
    gpuipc_stop_shield(on);
}

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

int __wrap_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
    if (gpuipc_stop_shielded() && act != NULL && (sig == SIGINT || sig == SIGTERM) &&
        !(act->sa_flags & SA_SIGINFO) && act->sa_handler != SIG_DFL &&
        act->sa_handler != SIG_IGN)
        return __real_sigaction(sig, NULL, old); /* what is there stays there */
    return __real_sigaction(sig, act, old);
}
