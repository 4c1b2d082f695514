/* SPDX-License-Identifier: Apache-2.0 */
/* wrap.c: runs a command with a confinement made on purpose, for the
 * container suite's deliberate refusals:
 *
 *   wrap [--deny-pidfd-getfd] [--deny-memfd-create FLAGS] [--drop-cap-sys-ptrace]
 *        [--uid N] -- CMD ARGS...
 *
 * --deny-pidfd-getfd   a seccomp filter that answers pidfd_getfd with EPERM,
 *                      as Docker's default profile does without CAP_SYS_PTRACE
 *                      (needs no privilege: no_new_privs is set first)
 * --deny-memfd-create FLAGS  the same for memfd_create called with exactly
 *                      FLAGS (1: MFD_CLOEXEC alone, as a memfd for Check's
 *                      messages is made, while the mechanisms' sealed ones
 *                      still can be)
 * --drop-cap-sys-ptrace  CAP_SYS_PTRACE leaves the bounding set, so that CMD
 *                      runs without it even as root (needs CAP_SETPCAP)
 * --uid N              CMD runs as uid and gid N, with no supplementary
 *                      groups (needs root)
 * Exits 126 naming the step that failed, or becomes CMD. */
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <grp.h>
#include <unistd.h>

#ifndef SYS_pidfd_getfd
#define SYS_pidfd_getfd 438
#endif
#ifndef SYS_memfd_create
#error "wrap.c: this C library does not name memfd_create's system call"
#endif
#define CAP_SYS_PTRACE_NR 19

#if defined(__x86_64__)
#define THIS_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define THIS_ARCH AUDIT_ARCH_AARCH64
#else
#error "wrap.c: add this architecture's AUDIT_ARCH"
#endif

static int fail(const char *step)
{
    fprintf(stderr, "wrap: %s: %s\n", step, strerror(errno));
    return 126;
}

/* A seccomp filter that answers system call nr with EPERM; with arg1 not
 * negative, only where its second argument's low 32 bits are arg1. */
static int deny(unsigned nr, long arg1)
{
    struct sock_filter code[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, THIS_ARCH, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, nr, 0, 3),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[1])),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)arg1, 0, arg1 < 0 ? 0 : 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {.len = sizeof(code) / sizeof(code[0]), .filter = code};

    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
        return -1;
    return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0);
}

int main(int argc, char **argv)
{
    int i, deny_getfd = 0, drop = 0;
    long deny_memfd = -1;
    long uid = -1;

    for (i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) {
        if (strcmp(argv[i], "--deny-pidfd-getfd") == 0)
            deny_getfd = 1;
        else if (strcmp(argv[i], "--deny-memfd-create") == 0 && i + 1 < argc)
            deny_memfd = strtol(argv[++i], NULL, 0);
        else if (strcmp(argv[i], "--drop-cap-sys-ptrace") == 0)
            drop = 1;
        else if (strcmp(argv[i], "--uid") == 0 && i + 1 < argc)
            uid = strtol(argv[++i], NULL, 10);
        else
            break;
    }
    if (i + 1 >= argc || strcmp(argv[i], "--") != 0) {
        fprintf(stderr, "usage: wrap [--deny-pidfd-getfd] [--deny-memfd-create FLAGS] "
                        "[--drop-cap-sys-ptrace] [--uid N] -- CMD ARGS...\n");
        return 2;
    }
    if (drop && prctl(PR_CAPBSET_DROP, CAP_SYS_PTRACE_NR, 0, 0, 0) < 0)
        return fail("prctl PR_CAPBSET_DROP CAP_SYS_PTRACE");
    if (uid >= 0 && (setgroups(0, NULL) < 0 || setgid((gid_t)uid) < 0 || setuid((uid_t)uid) < 0))
        return fail("setgroups/setgid/setuid");
    /* Last: the filter then covers the exec and everything after it. */
    if (deny_getfd && deny(SYS_pidfd_getfd, -1) < 0)
        return fail("seccomp filter");
    if (deny_memfd >= 0 && deny(SYS_memfd_create, deny_memfd) < 0)
        return fail("seccomp filter");
    execvp(argv[i + 1], argv + i + 1);
    return fail(argv[i + 1]);
}
