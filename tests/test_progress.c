/* SPDX-License-Identifier: Apache-2.0 */
/* test_progress.c: the live progress line. Its text; and the program on a
 * pseudo-terminal, where --fault-matrix over memfd shows it after 2 s and
 * -q and --brief do not; and with standard error a pipe, where it never
 * shows. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/progress.h"
#include "helpers.h"
#include "suites.h"

START_TEST(test_progress_line_text)
{
    char line[256];

    gpuipc_progress_format(line, sizeof(line), "fault matrix over vmm", "cases", 37, 126,
                           12300000000ull);
    ck_assert_str_eq(line, "fault matrix over vmm: 37 of 126 cases (29%), 12.3 s, about 30 s "
                     "left");
    gpuipc_progress_format(line, sizeof(line), "exporting chunks", "chunks", 0, 4096,
                           2000000000ull);
    ck_assert_str_eq(line, "exporting chunks: 0 of 4096 chunks (0%), 2.0 s");
    gpuipc_progress_format(line, sizeof(line), "x", "MiB", 9, 8, 1000000000ull);
    ck_assert_str_eq(line, "x: 8 of 8 MiB (100%), 1.0 s");
    gpuipc_progress_format(line, 12, "a long name", "cases", 1, 2, 0);
    ck_assert_uint_eq(strlen(line), 11); /* cut to the buffer, NUL kept */
}
END_TEST

/* Runs the program with args on a new pseudo-terminal (its stdin, stdout
 * and stderr, and its controlling terminal) for run_s, then sends SIGINT to
 * its process group and collects the rest. Returns what the terminal
 * showed (the caller frees it) and the wait status in *status. */
static char *run_on_pty(const char *const *args, double run_s, int *status)
{
    size_t cap = 1 << 16, len = 0;
    char *out = malloc(cap);
    const char *argv[16];
    int master, slave, i, sent = 0;
    uint64_t t0 = gpuipc_clock_ns(), stop = t0 + (uint64_t)(run_s * 1e9);
    pid_t pid;

    ck_assert_ptr_nonnull(out);
    ck_assert_msg(openpty(&master, &slave, NULL, NULL, NULL) == 0,
                  "openpty: %s (this test needs /dev/ptmx and /dev/pts)", strerror(errno));
    argv[0] = th_program();
    for (i = 0; args[i] != NULL && i < 14; i++)
        argv[i + 1] = args[i];
    argv[i + 1] = NULL;
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        close(master);
        th_unset_check_variables();
        setsid();
        ioctl(slave, TIOCSCTTY, 0);
        dup2(slave, 0);
        dup2(slave, 1);
        dup2(slave, 2);
        if (slave > 2)
            close(slave);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    close(slave);
    for (;;) {
        struct pollfd p = {.fd = master, .events = POLLIN};
        uint64_t now = gpuipc_clock_ns();
        ssize_t n;

        if (!sent && now >= stop) {
            kill(-pid, SIGINT);
            sent = 1;
        }
        if (now > stop + 20000000000ull)
            kill(-pid, SIGKILL);
        if (poll(&p, 1, 100) <= 0)
            continue;
        if (len + 4096 > cap) {
            char *bigger = realloc(out, cap * 2);

            ck_assert_ptr_nonnull(bigger);
            out = bigger;
            cap *= 2;
        }
        n = read(master, out + len, cap - len - 1);
        if (n <= 0 && errno != EINTR)
            break; /* EIO: the last holder of the terminal has gone */
        if (n > 0)
            len += (size_t)n;
    }
    out[len] = '\0';
    close(master);
    ck_assert_int_eq(waitpid(pid, status, 0), pid);
    return out;
}

/* TERM=dumb (or unset): the line is drawn and erased with '\r' and spaces,
 * never an escape sequence such a terminal would print as text. */
START_TEST(test_progress_no_escape_sequences_on_a_dumb_terminal)
{
    char out[4096];
    int master, slave;
    ssize_t n, len = 0;

    ck_assert_msg(openpty(&master, &slave, NULL, NULL, NULL) == 0, "openpty: %s",
                  strerror(errno));
    ck_assert_int_eq(dup2(slave, 2), 2);
    setenv("TERM", "dumb", 1);
    gpuipc_progress_enable(1);
    gpuipc_progress_begin("work", "steps", 10);
    usleep(2100000); /* the line shows after 2 s */
    gpuipc_progress_update(5);
    gpuipc_progress_end();
    fcntl(master, F_SETFL, O_NONBLOCK);
    while ((n = read(master, out + len, sizeof(out) - 1 - (size_t)len)) > 0)
        len += n;
    out[len] = '\0';
    ck_assert_msg(strstr(out, "\rwork: 5 of 10 steps (50%)") != NULL, "no line:\n%s", out);
    ck_assert_msg(strchr(out, '\033') == NULL, "an escape sequence:\n%s", out);
    ck_assert_msg(strstr(out, "                    \r") != NULL, "not erased with spaces:\n%s",
                  out);
}
END_TEST

/* On a terminal the matrix draws its line in place ('\r', then the text),
 * once it has run for 2 s; the end of the run clears it. */
START_TEST(test_progress_shows_on_a_terminal)
{
    const char *args[] = {"--fault-matrix", "--only", "memfd", "--size", "4K", NULL};
    int status;
    /* Cases end every 0.2 to 2 s here; the line is drawn at the first case
     * that ends after 2 s. */
    char *out = run_on_pty(args, 6.5, &status);

    ck_assert_msg(strstr(out, "\rfault matrix over memfd: ") != NULL &&
                  strstr(out, " of 126 cases (") != NULL, "no progress line in:\n%s", out);
    ck_assert_msg(strstr(out, "\r\033[K") != NULL, "the line was never cleared:\n%s", out);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 130, "status 0x%x:\n%s", status,
                  out);
    free(out);
}
END_TEST

/* The matrix on a terminal with flag: no progress line (neither its text
 * nor the erasing that goes with it), and its last line, which must hold
 * last. */
static void no_progress_with(const char *flag, const char *last)
{
    const char *args[] = {"--fault-matrix", "--only", "memfd", "--size", "4K", flag, NULL};
    int status;
    char *out = run_on_pty(args, 4.5, &status);

    ck_assert_msg(strstr(out, " of 126 cases") == NULL && strstr(out, "\033[K") == NULL,
                  "progress with %s:\n%s", flag, out);
    ck_assert_msg(strstr(out, last) != NULL, "no '%s' with %s:\n%s", last, flag, out);
    free(out);
}

/* -q: nothing but failures and the result, on a terminal too. */
START_TEST(test_progress_never_with_quiet)
{
    no_progress_with("-q", "result: STOPPED");
}
END_TEST

/* --brief: its one line, and no progress line before it. */
START_TEST(test_progress_never_with_brief)
{
    no_progress_with("--brief", "(exit 130)");
}
END_TEST

/* Standard error a pipe (as in CI): no progress line. */
START_TEST(test_progress_never_on_a_pipe)
{
    const char *args[] = {"--fault-matrix", "--only", "memfd", "--size", "4K", NULL};
    static th_run run;

    ck_assert_int_eq(th_spawn(&run, args, NULL, 4.5, 3, NULL, NULL), 0);
    ck_assert_msg(strstr(run.out, "fault matrix over memfd: every step") != NULL,
                  "the matrix did not start:\n%s", run.out);
    ck_assert_msg(strstr(run.out, " of 126 cases") == NULL && strchr(run.out, '\r') == NULL,
                  "progress on a pipe:\n%s", run.out);
}
END_TEST

Suite *progress_suite(void)
{
    Suite *s = suite_create("progress");
    TCase *tc = tcase_create("progress");

    tcase_set_timeout(tc, 40);
    tcase_add_test(tc, test_progress_line_text);
    tcase_add_test(tc, test_progress_shows_on_a_terminal);
    tcase_add_test(tc, test_progress_no_escape_sequences_on_a_dumb_terminal);
    tcase_add_test(tc, test_progress_never_with_quiet);
    tcase_add_test(tc, test_progress_never_with_brief);
    tcase_add_test(tc, test_progress_never_on_a_pipe);
    suite_add_tcase(s, tc);
    return s;
}
