/* SPDX-License-Identifier: Apache-2.0 */
/* test_watch.c: the watchdog (core/watch.c) and the one writer of output
 * files (core/outfile.c), called directly:
 * - exactly one of the run's own thread and the watchdog ends a run: a run
 *   that claimed its end before the deadline is not ended by the watchdog;
 *   one that had not claimed it is; a claim after the watchdog fired parks
 *   (the watchdog's verdict stands); a run that claimed but does not end is
 *   ended GPUIPC_WATCH_END_GRACE_NS after the deadline, with its own code;
 * - text dropped from a full buffer, or a failed write, is reported;
 * - a thread given a side of its own (a rank's two sessions of a phase)
 *   writes that side, the process's other threads the process's;
 * - on a file system without renameat2's flags (NFS), a new file is linked
 *   into place (never replacing what appeared meanwhile), and a regular
 *   file is written in place, the same file; what became a symbolic link
 *   during the run is left as it is.
 * Each watchdog case runs in a child of the test, which the watchdog may end. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/outfile.h"
#include "core/watch.h"
#include "suites.h"

static int marks[2];  /* the fire function writes 'F' to marks[1] */
static int firing[2]; /* and, when slow, 'f' to firing[1] as it starts */
static int slow_fire;

static void fire(void *arg, int sig)
{
    (void)arg;
    (void)sig;
    if (slow_fire) {
        struct timespec ts = {0, 300 * 1000000L};

        (void)!write(firing[1], "f", 1);
        nanosleep(&ts, NULL);
    }
    (void)!write(marks[1], "F", 1);
    _exit(1);
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

/* What the last run_child wrote to its standard error (the watchdog's own
 * lines), kept here rather than let onto the suite's console. */
static char said[1024];

/* Forks a child that starts a watchdog deadline_ms from now, sleeps
 * before_ms (-1: until a slow fire function has started, 5 s at most),
 * claims (with code 0) if claim, sleeps after_ms and exits 0. Returns its
 * wait status; *fired says whether the fire function ran. */
static int run_child(long deadline_ms, long before_ms, int claim, long after_ms, int *fired)
{
    int err_fd = memfd_create("watch-stderr", MFD_CLOEXEC);
    ssize_t n;
    char c;
    int status;
    pid_t pid;

    ck_assert_int_ge(err_fd, 0);
    ck_assert_int_eq(pipe2(marks, O_CLOEXEC), 0);
    ck_assert_int_eq(pipe2(firing, O_CLOEXEC), 0);
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        gpuipc_err err;

        dup2(err_fd, 2);
        close(marks[0]);
        if (gpuipc_watch_start(gpuipc_clock_ns() + (uint64_t)deadline_ms * 1000000ull, fire,
                               NULL, &err) < 0)
            _exit(3);
        if (before_ms >= 0) {
            sleep_ms(before_ms);
        } else {
            struct pollfd p = {.fd = firing[0], .events = POLLIN};

            (void)poll(&p, 1, 5000);
        }
        if (claim)
            gpuipc_watch_claim(0);
        sleep_ms(after_ms);
        _exit(0);
    }
    close(marks[1]);
    close(firing[0]);
    close(firing[1]);
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    *fired = read(marks[0], &c, 1) == 1;
    close(marks[0]);
    n = pread(err_fd, said, sizeof(said) - 1, 0);
    said[n > 0 ? n : 0] = '\0';
    close(err_fd);
    return status;
}

START_TEST(test_watch_a_claimed_run_is_not_ended_at_the_deadline)
{
    /* It claims at once and lives on past the deadline by 300 ms (a second
     * of room for the claim on a loaded machine). */
    int fired, status = run_child(1000, 0, 1, 1300, &fired);

    ck_assert_msg(!fired, "the watchdog fired after the run had claimed its end");
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status 0x%x", status);
}
END_TEST

START_TEST(test_watch_an_unclaimed_run_is_ended_at_the_deadline)
{
    int fired, status = run_child(50, 300, 0, 0, &fired);

    ck_assert_msg(fired, "the watchdog did not fire");
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 1, "status 0x%x", status);
}
END_TEST

/* The watchdog fired (and takes its time to speak); the run's thread then
 * tries to claim: it must wait, not exit 0 beside the watchdog's verdict. */
START_TEST(test_watch_a_claim_after_the_deadline_parks)
{
    int fired, status;

    slow_fire = 1;
    status = run_child(50, -1, 1, 0, &fired);
    ck_assert_msg(fired, "the watchdog's verdict was cut off by the run's own exit");
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 1, "status 0x%x", status);
}
END_TEST

/* A run that claimed its end and then does not end: the watchdog ends it
 * after the grace, with the code it claimed (here 0: said as 0). */
START_TEST(test_watch_a_claimed_run_that_hangs_ends_after_the_grace)
{
    uint64_t t0 = gpuipc_clock_ns();
    int fired, status = run_child(1000, 0, 1, 60 * 1000, &fired);
    double s = (double)(gpuipc_clock_ns() - t0) / 1e9;

    ck_assert_msg(!fired, "the watchdog's verdict was said after the run's own");
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status 0x%x", status);
    ck_assert_msg(s > 5.5 && s < 10.0, "ended after %.2f s, not the deadline and 5 s", s);
    ck_assert_msg(strstr(said, "the run was still ending 5 s after its --deadline") != NULL,
                  "the watchdog did not say why it ended the run: '%s'", said);
}
END_TEST

START_TEST(test_watch_sbuf_reports_dropped_text_and_failed_writes)
{
    char mem[8];
    gpuipc_sbuf b;
    int p[2];

    ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
    gpuipc_sbuf_init(&b, mem, sizeof(mem));
    gpuipc_sbuf_str(&b, "1234567");
    ck_assert_int_eq(gpuipc_sbuf_write(&b, p[1]), 0);
    gpuipc_sbuf_str(&b, "8");
    ck_assert_int_eq(b.dropped, 1);
    ck_assert_int_eq(gpuipc_sbuf_write(&b, p[1]), -1);
    ck_assert_int_eq(errno, ENOBUFS);
    close(p[0]);
    gpuipc_sbuf_init(&b, mem, sizeof(mem));
    gpuipc_sbuf_str(&b, "x");
    ck_assert_int_eq(gpuipc_sbuf_write(&b, -1), -1); /* EBADF */
    close(p[1]);
}
END_TEST

/* ---- the writer, on a file system without renameat2's flags ---- */

static char dir[64], path[96];

static int no_flags(int dirfd, const char *from, const char *to, unsigned flags)
{
    (void)dirfd;
    (void)from;
    (void)to;
    (void)flags;
    errno = EINVAL; /* as NFS answers */
    return -1;
}

static void setup(void)
{
    snprintf(dir, sizeof(dir), "/tmp/gpuipc-watch-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/r.json", dir);
    gpuipc_outfile_renameat2_hook = no_flags;
}

static void teardown(void)
{
    char other[128];

    snprintf(other, sizeof(other), "%s/other", dir);
    unlink(path);
    unlink(other);
    rmdir(dir);
    gpuipc_outfile_renameat2_hook = NULL;
}

/* Writes text through f (checked at path already). Returns _commit's. */
static int write_through(gpuipc_outfile *f, const char *text, gpuipc_err *err)
{
    int fd = gpuipc_outfile_open(f, err);

    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    ck_assert_int_eq(close(fd), 0);
    return gpuipc_outfile_commit(f, err);
}

static void has_text(const char *p, const char *text)
{
    char buf[64] = "";
    int fd = open(p, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;

    if (fd >= 0)
        close(fd);
    ck_assert_msg(n >= 0 && strcmp(buf, text) == 0, "%s holds '%s', not '%s'", p,
                  n >= 0 ? buf : "(unreadable)", text);
}

/* The directory holds path and nothing else (no temporary file left). */
static void alone(void)
{
    char cmd[128];
    FILE *ls;
    int n = 0;

    snprintf(cmd, sizeof(cmd), "ls -A %s", dir);
    ls = popen(cmd, "r");
    ck_assert_ptr_nonnull(ls);
    while (fgets(cmd, sizeof(cmd), ls) != NULL)
        n++;
    pclose(ls);
    ck_assert_int_eq(n, 1);
}

START_TEST(test_watch_outfile_links_a_new_file_without_rename_flags)
{
    gpuipc_outfile f;
    gpuipc_err err;

    ck_assert_int_eq(gpuipc_outfile_check(&f, path, &err), 0);
    ck_assert_msg(write_through(&f, "new", &err) == 0, "%s", err.msg);
    has_text(path, "new");
    alone();
    gpuipc_outfile_close(&f);
}
END_TEST

START_TEST(test_watch_outfile_writes_a_regular_file_in_place_without_rename_flags)
{
    struct stat before, after;
    gpuipc_outfile f;
    gpuipc_err err;
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);

    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, "an older and longer document", 28), 28);
    close(fd);
    ck_assert_int_eq(stat(path, &before), 0);
    ck_assert_int_eq(gpuipc_outfile_check(&f, path, &err), 0);
    ck_assert_msg(write_through(&f, "new", &err) == 0, "%s", err.msg);
    has_text(path, "new");
    ck_assert_int_eq(stat(path, &after), 0);
    ck_assert_msg(after.st_ino == before.st_ino, "not written in place");
    alone();
    gpuipc_outfile_close(&f);
}
END_TEST

/* What the check saw was absent, then a link appeared there (another user,
 * during the run): it is neither followed nor replaced. */
START_TEST(test_watch_outfile_leaves_a_link_planted_during_the_run)
{
    char other[128], target[160];
    gpuipc_outfile f;
    gpuipc_err err;
    ssize_t n;
    int fd;

    snprintf(other, sizeof(other), "%s/other", dir);
    fd = open(other, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, "theirs", 6), 6);
    close(fd);
    ck_assert_int_eq(gpuipc_outfile_check(&f, path, &err), 0);
    ck_assert_int_eq(symlink(other, path), 0);
    ck_assert_int_ne(write_through(&f, "new", &err), 0);
    n = readlink(path, target, sizeof(target) - 1);
    ck_assert_msg(n > 0 && (target[n] = '\0', strcmp(target, other) == 0),
                  "the planted link was replaced");
    has_text(other, "theirs");
    gpuipc_outfile_close(&f);
}
END_TEST

/* A file replaced by rename keeps its permissions (0640 is not widened to
 * the new file's 0644), and as root its owner. */
START_TEST(test_watch_outfile_keeps_the_mode_and_owner_it_replaces)
{
    struct stat st;
    gpuipc_outfile f;
    gpuipc_err err;
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);

    gpuipc_outfile_renameat2_hook = NULL; /* renameat2 as the file system has it */
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(fchmod(fd, 0640), 0);
    if (geteuid() == 0)
        ck_assert_int_eq(fchown(fd, 65534, 65534), 0);
    close(fd);
    ck_assert_int_eq(gpuipc_outfile_check(&f, path, &err), 0);
    ck_assert_msg(write_through(&f, "new", &err) == 0, "%s", err.msg);
    has_text(path, "new");
    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert_msg((st.st_mode & 0777) == 0640, "mode %o", st.st_mode & 0777);
    if (geteuid() == 0)
        ck_assert_msg(st.st_uid == 65534 && st.st_gid == 65534, "owner %u:%u", st.st_uid,
                      st.st_gid);
    alone();
    gpuipc_outfile_close(&f);
}
END_TEST

/* A thread with a side of its own writes that side; the process's other
 * threads go on writing the process's. */
static void *consumer_thread(void *arg)
{
    (void)arg;
    gpuipc_watch_thread_role(2); /* GPUIPC_ROLE_CONSUMER */
    gpuipc_watch_step(7, "memfd");
    gpuipc_watch_call("poll");
    gpuipc_watch_role(2); /* in such a thread: the thread's side */
    gpuipc_watch_thread_role(0);
    return NULL;
}

START_TEST(test_watch_a_thread_writes_a_side_of_its_own)
{
    const gpuipc_watch_page *pg;
    gpuipc_err e;
    pthread_t t;

    ck_assert_int_eq(gpuipc_watch_map(&e), 0);
    gpuipc_watch_role(1); /* GPUIPC_ROLE_PRODUCER */
    gpuipc_watch_step(3, "vmm");
    ck_assert_int_eq(pthread_create(&t, NULL, consumer_thread, NULL), 0);
    pthread_join(t, NULL);
    pg = gpuipc_watch_page_get();
    ck_assert_ptr_nonnull(pg);
    ck_assert_uint_eq(pg->side[1].step, 3);
    ck_assert_str_eq(pg->side[1].scenario, "vmm");
    ck_assert_str_eq(pg->side[1].call, "");
    ck_assert_uint_eq(pg->side[2].step, 7);
    ck_assert_str_eq(pg->side[2].scenario, "memfd");
    ck_assert_str_eq(pg->side[2].call, "poll");
    ck_assert_int_eq(pg->side[2].pid, (int32_t)getpid());
    /* The process's side is still the producer's. */
    gpuipc_watch_step(4, NULL);
    ck_assert_uint_eq(pg->side[1].step, 4);
    ck_assert_uint_eq(pg->side[2].step, 7);
}
END_TEST

Suite *watch_suite(void)
{
    Suite *s = suite_create("watch");
    TCase *dog = tcase_create("watchdog"), *writer = tcase_create("writer");

    tcase_set_timeout(dog, 20);
    tcase_add_test(dog, test_watch_a_claimed_run_is_not_ended_at_the_deadline);
    tcase_add_test(dog, test_watch_an_unclaimed_run_is_ended_at_the_deadline);
    tcase_add_test(dog, test_watch_a_claim_after_the_deadline_parks);
    tcase_add_test(dog, test_watch_a_claimed_run_that_hangs_ends_after_the_grace);
    tcase_add_test(dog, test_watch_sbuf_reports_dropped_text_and_failed_writes);
    tcase_add_test(dog, test_watch_a_thread_writes_a_side_of_its_own);
    tcase_add_checked_fixture(writer, setup, teardown);
    tcase_add_test(writer, test_watch_outfile_links_a_new_file_without_rename_flags);
    tcase_add_test(writer, test_watch_outfile_writes_a_regular_file_in_place_without_rename_flags);
    tcase_add_test(writer, test_watch_outfile_leaves_a_link_planted_during_the_run);
    tcase_add_test(writer, test_watch_outfile_keeps_the_mode_and_owner_it_replaces);
    suite_add_tcase(s, dog);
    suite_add_tcase(s, writer);
    return s;
}
