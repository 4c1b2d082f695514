/* SPDX-License-Identifier: Apache-2.0 */
/* test_pidfd.c: taking another process's FD with pidfd_getfd, and every way
 * it can be refused, each provoked for real. */
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mech/pidfd.h"
#include "helpers.h"
#include "suites.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

/* A child that holds a memfd containing "held" and waits to be killed. It
 * reports the memfd's number through the pipe. */
static pid_t holder(int *fd_number)
{
    int p[2], fd;
    pid_t pid;

    ck_assert_int_eq(pipe(p), 0);
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        close(p[0]);
        fd = memfd_create("held", 0);
        if (fd < 0 || write(fd, "held", 4) != 4 || write(p[1], &fd, sizeof(fd)) != sizeof(fd))
            _exit(1);
        for (;;)
            pause();
    }
    close(p[1]);
    ck_assert_int_eq(read(p[0], fd_number, sizeof(*fd_number)), (ssize_t)sizeof(*fd_number));
    close(p[0]);
    return pid;
}

static void stop(pid_t pid)
{
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
}

START_TEST(test_pidfd_fetches_an_fd_from_another_process)
{
    int number, got, before = th_fd_count();
    char text[8] = "";
    pid_t pid = holder(&number);
    gpuipc_err e;

    got = gpuipc_pidfd_fetch(pid, number, &e);
    ck_assert_msg(got >= 0, "fetch: %s", e.msg);
    ck_assert_int_eq(pread(got, text, 4, 0), 4);
    ck_assert_str_eq(text, "held");
    ck_assert_int_eq(fcntl(got, F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
    close(got);
    ck_assert_int_eq(gpuipc_pidfd_probe(pid, &e), 0);
    stop(pid);
    ck_assert_int_eq(th_fd_count(), before);
}
END_TEST

START_TEST(test_pidfd_reports_a_missing_fd)
{
    int number;
    pid_t pid = holder(&number);
    gpuipc_err e;

    ck_assert_int_eq(gpuipc_pidfd_fetch(pid, 999, &e), -EBADF);
    ck_assert_msg(strstr(e.msg, "pidfd_getfd(pid ") && strstr(e.msg, "fd 999") &&
                  strstr(e.msg, "the process has no such FD"), "reason: %s", e.msg);
    stop(pid);
}
END_TEST

START_TEST(test_pidfd_reports_a_process_that_is_gone)
{
    pid_t pid = fork();
    gpuipc_err e;

    ck_assert_int_ge(pid, 0);
    if (pid == 0)
        _exit(0);
    waitpid(pid, NULL, 0);
    ck_assert_int_eq(gpuipc_pidfd_fetch(pid, 0, &e), -ESRCH);
    ck_assert_msg(strstr(e.msg, "pidfd_open(pid ") && strstr(e.msg, "the process is gone"),
                  "reason: %s", e.msg);
    ck_assert_int_eq(gpuipc_pidfd_probe(pid, &e), -ESRCH);
}
END_TEST

/* Without ptrace permission over the target the kernel says EPERM: as root,
 * drop to nobody and ask a root process; otherwise ask init. */
START_TEST(test_pidfd_reports_missing_ptrace_permission)
{
    int number = 0, status;
    pid_t target = 1, pid;

    if (getuid() == 0)
        target = holder(&number);
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        gpuipc_err e;
        int rc;

        if (getuid() == 0 && (setgid(65534) < 0 || setuid(65534) < 0))
            _exit(10);
        rc = gpuipc_pidfd_fetch(target, number, &e);
        if (rc != -EPERM)
            _exit(11);
        if (strstr(e.msg, "no ptrace permission over the producer") == NULL ||
            strstr(e.msg, "CAP_SYS_PTRACE") == NULL)
            _exit(12);
        _exit(gpuipc_pidfd_probe(target, &e) == -ENOTSUP ? 0 : 13);
    }
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    if (target != 1)
        stop(target);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                  "child status 0x%x (10 setuid, 11 not EPERM, 12 reason, 13 probe)", status);
}
END_TEST

/* A seccomp filter makes pidfd_open fail with ENOSYS, as on a kernel older
 * than 5.6 or under a container profile that blocks it. */
START_TEST(test_pidfd_reports_a_kernel_without_pidfd)
{
    struct sock_filter code[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_pidfd_open, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (ENOSYS & SECCOMP_RET_DATA)),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {.len = sizeof(code) / sizeof(code[0]), .filter = code};
    gpuipc_err e;

    ck_assert_int_eq(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), 0);
    ck_assert_int_eq(prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog), 0);
    ck_assert_int_eq(gpuipc_pidfd_fetch(getppid(), 0, &e), -ENOSYS);
    ck_assert_msg(strstr(e.msg, "Linux 5.6 or later is needed") != NULL, "reason: %s", e.msg);
    ck_assert_int_eq(gpuipc_pidfd_probe(getppid(), &e), -ENOTSUP);
}
END_TEST

Suite *pidfd_suite(void)
{
    Suite *s = suite_create("pidfd");
    TCase *tc = tcase_create("pidfd");

    th_add_unless_valgrind(tc, test_pidfd_fetches_an_fd_from_another_process,
                           "valgrind 3.19 does not implement pidfd_open/pidfd_getfd (ENOSYS)");
    th_add_unless_valgrind(tc, test_pidfd_reports_a_missing_fd,
                           "valgrind 3.19 does not implement pidfd_open/pidfd_getfd (ENOSYS)");
    th_add_unless_valgrind(tc, test_pidfd_reports_a_process_that_is_gone,
                           "valgrind 3.19 does not implement pidfd_open/pidfd_getfd (ENOSYS)");
    th_add_unless_valgrind(tc, test_pidfd_reports_missing_ptrace_permission,
                           "valgrind 3.19 does not implement pidfd_open/pidfd_getfd (ENOSYS)");
    tcase_add_test(tc, test_pidfd_reports_a_kernel_without_pidfd);
    suite_add_tcase(s, tc);
    return s;
}
