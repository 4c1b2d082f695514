/* SPDX-License-Identifier: Apache-2.0 */
/* test_twoterm.c: two-terminal mode (--serve/--connect) and its security
 * rules, stop signals in both modes, the --repeat soak and --fault-matrix,
 * all with real processes over real sockets and the memfd mechanism. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "run/pair.h"
#include "helpers.h"
#include "suites.h"

#define NOBODY 65534

static th_run run;
static gpuipc_pair pair;
static char dir[64], path[80];

#define OUT_HAS(text) ck_assert_msg(strstr(run.out, (text)) != NULL, "output lacks '%s':\n%s", \
                                    (text), run.out)

/* A private directory per test, removed with what is left in it. */
static void setup(void)
{
    snprintf(dir, sizeof(dir), "/tmp/gpuipc-2t-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/sock", dir);
}

static void teardown(void)
{
    unlink(path);
    rmdir(dir);
}

static int exists(const char *p)
{
    struct stat st;

    return lstat(p, &st) == 0;
}

/* A socket bound at p; listening if listen_too, else closed at once, which
 * leaves a stale socket file behind. Returns the FD or -1. */
static int bind_at(const char *p, int listen_too)
{
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

    snprintf(a.sun_path, sizeof(a.sun_path), "%s", p);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    if (listen_too) {
        ck_assert_int_eq(listen(fd, 1), 0);
        return fd;
    }
    close(fd);
    return -1;
}

START_TEST(test_twoterm_memfd_round_trip_through_a_socket_file)
{
    const char *args[] = {"--only", "memfd,memfd-chunks", "--size", "2M", "--timeout", "5", NULL};
    const char *cargs[] = {"--timeout", "5", NULL};
    gpuipc_err err;

    ck_assert_int_eq(gpuipc_pair_run(th_program(), path, args, cargs, NULL, 20, 5, &pair, &err),
                     0);
    ck_assert_msg(pair.proc[0].exited && WIFEXITED(pair.proc[0].status) &&
                  WEXITSTATUS(pair.proc[0].status) == 0, "producer:\n%s", pair.proc[0].out);
    ck_assert_msg(pair.proc[1].exited && WIFEXITED(pair.proc[1].status) &&
                  WEXITSTATUS(pair.proc[1].status) == 0, "consumer:\n%s", pair.proc[1].out);
    ck_assert_msg(strstr(pair.proc[0].out, "(mode 0600)") &&
                  strstr(pair.proc[0].out, "result: PASS: 2 passed, 0 failed, 0 skipped") &&
                  strstr(pair.proc[0].out, "memfd-chunks PASS   2 MiB"),
                  "producer:\n%s", pair.proc[0].out);
    ck_assert_msg(strstr(pair.proc[1].out, "memfd            verify   0 mismatches") &&
                  strstr(pair.proc[1].out, "result: PASS: the session with ") &&
                  strstr(pair.proc[1].out, "the producer concluded PASS: 2 passed, 0 failed, 0 "
                                           "skipped; this side passed (exit 0)"),
                  "consumer:\n%s", pair.proc[1].out);
    ck_assert_msg(!exists(path), "the socket file is still there");
}
END_TEST

static mode_t seen_mode;

static void stat_when_listening(const char *line, pid_t pgid, void *arg)
{
    struct stat st;

    (void)pgid;
    (void)arg;
    if (strstr(line, "listening on") != NULL && lstat(path, &st) == 0)
        seen_mode = st.st_mode;
}

/* The socket is 0600 while it waits, and goes when the wait times out. */
START_TEST(test_twoterm_socket_is_0600_and_removed_after_a_timeout)
{
    const char *args[] = {"--serve", path, "--only", "memfd", "--timeout", "2", NULL};

    seen_mode = 0;
    ck_assert_int_eq(th_spawn(&run, args, NULL, 10, 1, stat_when_listening, NULL), 0);
    ck_assert_msg(S_ISSOCK(seen_mode) && (seen_mode & 07777) == 0600, "mode 0%o", seen_mode);
    ck_assert_msg(th_exited(&run, 1), "status 0x%x:\n%s", run.status, run.out);
    OUT_HAS("timed out during hello: no consumer connected before the deadline");
    ck_assert_msg(run.seconds < 2.0 + 3.0, "took %.2f s", run.seconds);
    ck_assert_msg(!exists(path), "the socket file is still there");
}
END_TEST

/* A directory that others may write to is refused, for everyone and for a group. */
START_TEST(test_twoterm_refuses_a_directory_writable_by_others)
{
    const char *args[] = {"--serve", path, "--only", "memfd", "--timeout", "1", NULL};
    static const mode_t modes[] = {0777, 0770};
    static const char *const who[] = {"writable by everyone (mode 0777)",
                                      "writable by its group (mode 0770)"};

    ck_assert_int_eq(chmod(dir, modes[_i]), 0);
    ck_assert_int_eq(th_spawn(&run, args, NULL, 10, 1, NULL, NULL), 0);
    ck_assert_msg(th_exited(&run, 2), "status 0x%x:\n%s", run.status, run.out);
    OUT_HAS("refused: its directory");
    OUT_HAS(who[_i]);
    ck_assert_msg(!exists(path), "a socket was created");
}
END_TEST

START_TEST(test_twoterm_never_removes_a_path_that_is_not_a_socket)
{
    const char *args[] = {"--serve", path, "--only", "memfd", "--timeout", "1", NULL};
    char text[16] = "";
    int fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);

    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, "precious", 8), 8);
    close(fd);
    ck_assert_int_eq(th_spawn(&run, args, NULL, 10, 1, NULL, NULL), 0);
    ck_assert_msg(th_exited(&run, 2), "status 0x%x:\n%s", run.status, run.out);
    OUT_HAS("the path exists and is a regular file; refusing to remove it");
    fd = open(path, O_RDONLY | O_CLOEXEC);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(read(fd, text, sizeof(text) - 1), 8);
    close(fd);
    ck_assert_str_eq(text, "precious");
}
END_TEST

START_TEST(test_twoterm_replaces_a_stale_socket)
{
    const char *args[] = {"--only", "memfd", "--size", "1M", "--timeout", "5", NULL};
    const char *cargs[] = {"--timeout", "5", NULL};
    gpuipc_err err;

    bind_at(path, 0);
    ck_assert(exists(path));
    ck_assert_int_eq(gpuipc_pair_run(th_program(), path, args, cargs, NULL, 20, 5, &pair, &err),
                     0);
    ck_assert_msg(WIFEXITED(pair.proc[0].status) && WEXITSTATUS(pair.proc[0].status) == 0,
                  "producer:\n%s", pair.proc[0].out);
    ck_assert_msg(WIFEXITED(pair.proc[1].status) && WEXITSTATUS(pair.proc[1].status) == 0,
                  "consumer:\n%s", pair.proc[1].out);
    ck_assert(!exists(path));
}
END_TEST

START_TEST(test_twoterm_refuses_a_live_server)
{
    const char *args[] = {"--serve", path, "--only", "memfd", "--timeout", "1", NULL};
    int fd = bind_at(path, 1);

    ck_assert_int_eq(th_spawn(&run, args, NULL, 10, 1, NULL, NULL), 0);
    ck_assert_msg(th_exited(&run, 2), "status 0x%x:\n%s", run.status, run.out);
    OUT_HAS("a server is listening there already");
    ck_assert_msg(exists(path), "the live server's socket was removed");
    close(fd);
}
END_TEST

/* Starts "gpuipc_test --connect <where> --timeout 5" as this user, in the
 * background, its output in out_path (NULL: /dev/null). Returns its pid. */
static pid_t start_connect(const char *where, const char *out_path)
{
    pid_t pid = fork();

    if (pid == 0) {
        const char *argv[] = {th_program(), "--connect", where, "--timeout", "5", NULL};
        int fd = out_path ? open(out_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600)
                          : open("/dev/null", O_WRONLY);

        dup2(fd, 1);
        dup2(fd, 2);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    return pid;
}

/* Waits up to 10 s for pid. Returns its wait status, or -1. */
static int wait_for(pid_t pid)
{
    int status, i;

    for (i = 0; i < 1000; i++) {
        pid_t r = waitpid(pid, &status, WNOHANG);

        if (r == pid)
            return status;
        if (r < 0) /* reaped already (th_spawn reaps every child it finds) */
            return -1;
        usleep(10000);
    }
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    return -1;
}

static int second_status;
static pid_t consumer_pid;
static char consumer_out[96];

/* The consumer's result line, from its output file: whether it says
 * PASS with exit 0. The consumer may already be reaped by th_spawn. */
static int consumer_passed(char *text, size_t len)
{
    FILE *f;
    size_t n = 0;
    int i;

    for (i = 0; i < 500; i++) { /* up to 5 s for its last line */
        f = fopen(consumer_out, "re");
        n = f != NULL ? fread(text, 1, len - 1, f) : 0;
        if (f != NULL)
            fclose(f);
        text[n] = '\0';
        if (strstr(text, "result: ") != NULL)
            break;
        usleep(10000);
    }
    unlink(consumer_out);
    return strstr(text, "result: PASS: ") != NULL && strstr(text, "(exit 0)") != NULL;
}

/* While the first --serve listens: a second --serve on the same path (which
 * probes the socket by connecting to it) is refused, and then the real
 * consumer connects. */
static void second_server_then_consumer(const char *line, pid_t pgid, void *arg)
{
    (void)pgid;
    (void)arg;
    if (strstr(line, "listening on") == NULL || consumer_pid != 0)
        return;
    {
        pid_t pid = fork();

        if (pid == 0) {
            const char *argv[] = {th_program(), "--serve", path, "--only", "memfd", "--timeout",
                                  "2", NULL};
            int null = open("/dev/null", O_WRONLY);

            dup2(null, 1);
            dup2(null, 2);
            execv(argv[0], (char *const *)argv);
            _exit(127);
        }
        second_status = wait_for(pid);
    }
    consumer_pid = start_connect(path, consumer_out);
}

/* A second --serve checks whether the first is alive by connecting to it;
 * the first must not take that connection for its consumer, and must go on
 * to serve the real one. */
START_TEST(test_twoterm_a_live_server_survives_the_liveness_check)
{
    const char *args[] = {"--serve", path, "--only", "memfd", "--size", "1M", "--timeout", "5",
                          NULL};
    char text[8192];

    second_status = -1;
    consumer_pid = 0;
    snprintf(consumer_out, sizeof(consumer_out), "%s.consumer", path);
    ck_assert_int_eq(th_spawn(&run, args, NULL, 20, 3, second_server_then_consumer, NULL), 0);
    ck_assert_msg(second_status != -1 && WIFEXITED(second_status) &&
                  WEXITSTATUS(second_status) == 2, "the second --serve: status 0x%x",
                  (unsigned)second_status);
    ck_assert_int_gt(consumer_pid, 0);
    ck_assert_msg(th_exited(&run, 0), "status 0x%x:\n%s", run.status, run.out);
    ck_assert_msg(consumer_passed(text, sizeof(text)), "consumer:\n%s", text);
    OUT_HAS("result: PASS: 1 passed");
}
END_TEST

/* Connects to path and closes at once, n times: peers that never say HELLO. */
static void knock(const char *p, int n)
{
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    int i;

    snprintf(a.sun_path, sizeof(a.sun_path), "%s", p);
    for (i = 0; i < n; i++) {
        int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

        if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0)
            usleep(20000); /* let the server accept it before it closes */
        if (fd >= 0)
            close(fd);
    }
}

static void knock_then_consumer(const char *line, pid_t pgid, void *arg)
{
    (void)pgid;
    (void)arg;
    if (strstr(line, "listening on") == NULL || consumer_pid != 0)
        return;
    knock(path, 3);
    consumer_pid = start_connect(path, consumer_out);
}

/* Connections that close before their HELLO are dropped, and the consumer
 * that comes after them is served. */
START_TEST(test_twoterm_connections_closed_before_hello_are_dropped)
{
    const char *args[] = {"--serve", path, "--only", "memfd", "--size", "1M", "--timeout", "5",
                          "-v", NULL};
    char text[8192];

    consumer_pid = 0;
    snprintf(consumer_out, sizeof(consumer_out), "%s.consumer", path);
    ck_assert_int_eq(th_spawn(&run, args, NULL, 20, 3, knock_then_consumer, NULL), 0);
    ck_assert_int_gt(consumer_pid, 0);
    ck_assert_msg(th_exited(&run, 0), "status 0x%x:\n%s", run.status, run.out);
    ck_assert_msg(consumer_passed(text, sizeof(text)), "consumer:\n%s", text);
    OUT_HAS("that closed before its HELLO (3 so far); still waiting");
    OUT_HAS("result: PASS: 1 passed");
}
END_TEST

/* What the producer can decide alone (an impossible --size, a GPU it cannot
 * have) is refused before a socket exists: nobody waits for nothing. */
static const struct {
    const char *opt, *val, *says;
    int code;
} early[] = {
    {"--size", "8T", "larger than the host's available memory", 2},
    {"--device", "99", NULL, -1}, /* 77 without a GPU, 2 with one */
};

START_TEST(test_twoterm_an_impossible_session_is_refused_before_listening)
{
    const char *args[] = {"--serve", path, "--only", _i == 0 ? "memfd" : "vmm", early[_i].opt,
                          early[_i].val, "--timeout", "5", NULL};

    ck_assert_int_eq(th_spawn(&run, args, NULL, 10, 1, NULL, NULL), 0);
    if (early[_i].code >= 0)
        ck_assert_msg(th_exited(&run, early[_i].code), "status 0x%x:\n%s", run.status, run.out);
    else
        ck_assert_msg(th_exited(&run, 77) || th_exited(&run, 2), "status 0x%x:\n%s", run.status,
                      run.out);
    if (early[_i].says != NULL)
        OUT_HAS(early[_i].says);
    ck_assert_msg(strstr(run.out, "listening on") == NULL, "it listened:\n%s", run.out);
    ck_assert_msg(!exists(path), "a socket was created");
    ck_assert_msg(run.seconds < 3, "took %.2f s", run.seconds);
}
END_TEST

START_TEST(test_twoterm_connect_honours_the_deadline)
{
    const char *args[] = {"--connect", path, "--timeout", "300ms", NULL};

    ck_assert_int_eq(th_spawn(&run, args, NULL, 10, 1, NULL, NULL), 0);
    ck_assert_msg(th_exited(&run, 1), "status 0x%x:\n%s", run.status, run.out);
    OUT_HAS("timed out during hello: no server accepted before the deadline (ENOENT");
    ck_assert_msg(run.seconds < 0.3 + 3.0, "took %.2f s", run.seconds);
}
END_TEST

/* ---- peers of another uid (these need root, to run a peer as nobody) ---- */

static char abstract[64];
static int stranger_saw_eof;

/* A process of uid nobody connects and waits for the server to let go. */
static int connect_as_nobody(void)
{
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    socklen_t len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(abstract));
    pid_t pid = fork();
    int status = 0;

    if (pid == 0) {
        char c;
        int fd;

        memcpy(a.sun_path + 1, abstract + 1, strlen(abstract) - 1);
        if (setgid(NOBODY) < 0 || setuid(NOBODY) < 0)
            _exit(3);
        fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
        if (fd < 0 || connect(fd, (struct sockaddr *)&a, len) < 0)
            _exit(4);
        alarm(5);
        _exit(read(fd, &c, 1) == 0 ? 0 : 5); /* EOF: the server closed it */
    }
    waitpid(pid, &status, 0);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/* Starts "gpuipc_test --connect <abstract> extra..." as uid (or as this user
 * for uid -1), in the background. */
static void start_consumer(long uid, const char *extra)
{
    if (fork() == 0) {
        const char *argv[] = {th_program(), "--connect", abstract, "--timeout", "5", extra,
                              extra ? "0" : NULL, NULL};
        int null = open("/dev/null", O_WRONLY);

        dup2(null, 1);
        dup2(null, 2);
        if (uid >= 0 && (setgid((gid_t)uid) < 0 || setuid((uid_t)uid) < 0))
            _exit(3);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
}

static void stranger_then_consumer(const char *line, pid_t pgid, void *arg)
{
    (void)pgid;
    (void)arg;
    if (strstr(line, "listening on") != NULL) {
        stranger_saw_eof = connect_as_nobody();
        start_consumer(-1, NULL);
    }
}

START_TEST(test_twoterm_refuses_a_client_of_another_uid)
{
    const char *args[] = {"--serve", abstract, "--only", "memfd", "--size", "1M", "--timeout",
                          "5", NULL};

    snprintf(abstract, sizeof(abstract), "@gpuipc-2t-uid-%d", (int)getpid());
    stranger_saw_eof = 0;
    ck_assert_int_eq(th_spawn(&run, args, NULL, 20, 3, stranger_then_consumer, NULL), 0);
    ck_assert_msg(stranger_saw_eof, "the stranger was not shut out:\n%s", run.out);
    OUT_HAS("uid 65534: only uid 0 (this user) may connect; --allow-uid 65534 would admit it");
    ck_assert_msg(th_exited(&run, 0), "status 0x%x:\n%s", run.status, run.out);
    OUT_HAS("(uid 0) connected");
    OUT_HAS("result: PASS: 1 passed");
}
END_TEST

static void consumer_as_nobody(const char *line, pid_t pgid, void *arg)
{
    (void)pgid;
    (void)arg;
    if (strstr(line, "listening on") != NULL)
        start_consumer(NOBODY, "--allow-uid");
}

START_TEST(test_twoterm_allow_uid_admits_that_uid)
{
    const char *args[] = {"--serve", abstract, "--only", "memfd", "--size", "1M", "--timeout",
                          "5", "--allow-uid", "65534", NULL};

    snprintf(abstract, sizeof(abstract), "@gpuipc-2t-allow-%d", (int)getpid());
    ck_assert_int_eq(th_spawn(&run, args, NULL, 20, 3, consumer_as_nobody, NULL), 0);
    ck_assert_msg(th_exited(&run, 0), "status 0x%x:\n%s", run.status, run.out);
    OUT_HAS("(uid 65534) connected");
    OUT_HAS("result: PASS: 1 passed");
}
END_TEST

/* A process of another uid that connects in a loop gets each connection
 * refused, but the log names the first and counts the rest. */
static void flood_then_consumer(const char *line, pid_t pgid, void *arg)
{
    (void)pgid;
    (void)arg;
    if (strstr(line, "listening on") == NULL || consumer_pid != 0)
        return;
    {
        pid_t pid = fork();

        if (pid == 0) {
            int i;

            if (setgid(NOBODY) < 0 || setuid(NOBODY) < 0)
                _exit(3);
            for (i = 0; i < 300; i++) {
                struct sockaddr_un a = {.sun_family = AF_UNIX};
                socklen_t len =
                    (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(abstract));
                int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
                char c;

                memcpy(a.sun_path + 1, abstract + 1, strlen(abstract) - 1);
                if (fd < 0 || connect(fd, (struct sockaddr *)&a, len) < 0)
                    _exit(4);
                if (read(fd, &c, 1) != 0) /* refused: the server closes it */
                    _exit(5);
                close(fd);
            }
            _exit(0);
        }
        second_status = wait_for(pid);
    }
    consumer_pid = start_connect(abstract, NULL);
}

START_TEST(test_twoterm_a_flood_of_refusals_is_counted_not_logged)
{
    const char *args[] = {"--serve", abstract, "--only", "memfd", "--size", "1M", "--timeout",
                          "10", NULL};
    const char *p;
    int lines = 0;

    snprintf(abstract, sizeof(abstract), "@gpuipc-2t-flood-%d", (int)getpid());
    consumer_pid = 0;
    second_status = -1;
    ck_assert_int_eq(th_spawn(&run, args, NULL, 30, 3, flood_then_consumer, NULL), 0);
    ck_assert_msg(second_status != -1 && WIFEXITED(second_status) &&
                  WEXITSTATUS(second_status) == 0, "the flood: status 0x%x",
                  (unsigned)second_status);
    wait_for(consumer_pid);
    ck_assert_msg(th_exited(&run, 0), "status 0x%x:\n%s", run.status, run.out);
    for (p = run.out; (p = strstr(p, "refused a connection from pid")) != NULL; p++)
        lines++;
    ck_assert_msg(lines == 1, "%d refusal lines:\n%.3000s", lines, run.out);
    OUT_HAS("refused 300 connections in all from processes of other users");
    OUT_HAS("result: PASS: 1 passed");
}
END_TEST

START_TEST(test_twoterm_client_refuses_a_server_of_another_uid)
{
    const char *args[] = {"--connect", abstract, "--timeout", "2", NULL};
    pid_t server;
    int status;

    snprintf(abstract, sizeof(abstract), "@gpuipc-2t-srv-%d", (int)getpid());
    server = fork();
    if (server == 0) {
        const char *argv[] = {th_program(), "--serve", abstract, "--only", "memfd",
                              "--timeout", "3", NULL};
        int null = open("/dev/null", O_WRONLY);

        dup2(null, 1);
        dup2(null, 2);
        if (setgid(NOBODY) < 0 || setuid(NOBODY) < 0)
            _exit(3);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    ck_assert_int_eq(th_spawn(&run, args, NULL, 10, 1, NULL, NULL), 0);
    kill(server, SIGKILL);
    waitpid(server, &status, 0);
    ck_assert_msg(th_exited(&run, 1), "status 0x%x:\n%s", run.status, run.out);
    OUT_HAS("runs as uid 65534, not as this user (uid 0)");
    OUT_HAS("--allow-uid 65534 trusts it");
}
END_TEST

/* ---- stop signals ---- */

static const struct {
    int sig, code;
    const char *name;
} stops[] = {{SIGINT, 130, "SIGINT"}, {SIGTERM, 143, "SIGTERM"}, {SIGHUP, 129, "SIGHUP"}};

static void signal_when_listening(const char *line, pid_t pgid, void *arg)
{
    if (strstr(line, "listening on") != NULL)
        kill(-pgid, *(const int *)arg);
}

START_TEST(test_twoterm_serve_removes_its_socket_on_a_stop_signal)
{
    const char *args[] = {"--serve", path, "--only", "memfd", "--timeout", "10", NULL};
    int sig = stops[_i].sig;

    ck_assert_int_eq(th_spawn(&run, args, NULL, 10, 1, signal_when_listening, &sig), 0);
    ck_assert_msg(th_exited(&run, stops[_i].code), "status 0x%x:\n%s", run.status, run.out);
    OUT_HAS("interrupted by a signal while waiting for a consumer");
    ck_assert_msg(run.seconds < 3, "took %.2f s", run.seconds);
    ck_assert_msg(!exists(path), "the socket file is still there");
}
END_TEST

static void ctrl_c_when_hung(const char *line, pid_t pgid, void *arg)
{
    (void)arg;
    if (strstr(line, "FAULT INJECTED: hang at report") != NULL)
        kill(-pgid, SIGINT); /* as a terminal's Ctrl-C: the whole group */
}

/* Ctrl-C in the forked mode stops both processes, each releasing what it
 * holds, and the program exits 130. */
START_TEST(test_twoterm_ctrl_c_stops_both_processes_with_130)
{
    const char *env[] = {"GPUIPC_FAULT=consumer:report:hang", NULL};
    const char *args[] = {"--only", "memfd", "--size", "1M", "--timeout", "10", NULL};

    ck_assert_int_eq(th_spawn(&run, args, env, 20, 3, ctrl_c_when_hung, NULL), 0);
    ck_assert_msg(th_exited(&run, 130), "status 0x%x:\n%s", run.status, run.out);
    OUT_HAS("STOPPED interrupted by SIGINT during report");
    OUT_HAS("consumer: exited 130");
    OUT_HAS("stopped by SIGINT: what both processes held is released (exit 130)");
    ck_assert_msg(strstr(run.out, "leaked") == NULL, "a leak:\n%s", run.out);
    ck_assert_msg(run.seconds < 5, "took %.2f s", run.seconds);
    ck_assert_int_eq(run.leftover, 0);
}
END_TEST

/* ---- --repeat ---- */

START_TEST(test_twoterm_repeat_soaks_without_drift)
{
    const char *args[] = {"--only", "memfd,memfd-chunks", "--size", "1M", "--repeat", "20",
                          "--quiet", NULL};

    ck_assert_int_eq(th_spawn(&run, args, NULL, 30, 3, NULL, NULL), 0);
    ck_assert_msg(th_exited(&run, 0), "status 0x%x:\n%s", run.status, run.out);
    OUT_HAS("soak: 20 rounds, 40 scenarios passed; drift: 0 FDs");
    /* -q prints failures and the summary only: no line per round. */
    ck_assert_msg(strstr(run.out, "round 1/20") == NULL && strstr(run.out, "round 20/20") == NULL,
                  "-q printed the rounds:\n%s", run.out);
}
END_TEST

/* Without -q, every round says how it went. */
START_TEST(test_twoterm_repeat_says_each_round_unless_quiet)
{
    const char *args[] = {"--only", "memfd", "--size", "1M", "--repeat", "3", NULL};

    ck_assert_int_eq(th_spawn(&run, args, NULL, 30, 3, NULL, NULL), 0);
    ck_assert_msg(th_exited(&run, 0), "status 0x%x:\n%s", run.status, run.out);
    OUT_HAS("round 1/3 passed");
    OUT_HAS("round 3/3 passed");
}
END_TEST

/* An FD kept outside any scenario's own count is drift, found after the
 * next round. */
START_TEST(test_twoterm_repeat_stops_at_the_first_drift)
{
    const char *env[] = {"GPUIPC_SABOTAGE=producer:leak-fd", NULL};
    const char *args[] = {"--only", "memfd", "--size", "1M", "--repeat", "5", "--quiet", NULL};

    ck_assert_int_eq(th_spawn(&run, args, env, 30, 3, NULL, NULL), 0);
    ck_assert_msg(th_exited(&run, 1), "status 0x%x:\n%s", run.status, run.out);
    OUT_HAS("FAIL soak stopped at round 2: drift since round 1: 1 FD leaked: fd ");
    ck_assert_msg(strstr(run.out, "round 3/5") == NULL, "it went on:\n%s", run.out);
}
END_TEST

START_TEST(test_twoterm_fault_matrix_mode_over_memfd)
{
    const char *args[] = {"--fault-matrix", "--only", "memfd", "--size", "1M", "--timeout",
                          "200ms", NULL};

    ck_assert_int_eq(th_spawn(&run, args, NULL, 120, 3, NULL, NULL), 0);
    ck_assert_msg(th_exited(&run, 0), "status 0x%x:\n%s", run.status, run.out);
    OUT_HAS("result: PASS: fault matrix over memfd: 126 cases, 126 survived, 0 hangs, 0 leaks, "
            "0 wrong reports");
}
END_TEST

static int matrix_sig;

/* Once the matrix reports its second case, its third (the producer hangs in
 * hello, for the whole --timeout) is under way: stop the matrix the way a
 * terminal does, by signalling its process group. The pair it started lives
 * in a group of its own, out of the signal's reach. */
static void stop_matrix_in_case_3(const char *line, pid_t pgid, void *arg)
{
    (void)arg;
    if (strncmp(line, "2   producer hello", 18) == 0)
        kill(-pgid, matrix_sig);
}

/* Ctrl-C (or SIGTERM) on --fault-matrix ends the pair under way and the
 * matrix, with 130 or 143, and leaves no process behind. */
START_TEST(test_twoterm_a_stopped_fault_matrix_leaves_no_process)
{
    const char *args[] = {"--fault-matrix", "--only", "memfd", "--size", "1M", "--timeout", "5",
                          "-v", NULL};
    pid_t left;
    int i;

    matrix_sig = stops[_i].sig;
    ck_assert_int_eq(th_spawn(&run, args, NULL, 30, 3, stop_matrix_in_case_3, NULL), 0);
    ck_assert_msg(th_exited(&run, stops[_i].code), "status 0x%x:\n%s", run.status, run.out);
    OUT_HAS("result: STOPPED: fault matrix over memfd: stopped by ");
    OUT_HAS(stops[_i].name);
    ck_assert_msg(run.seconds < 5, "took %.2f s (the hang lasts 5 s)", run.seconds);
    /* th_spawn made this process the subreaper: an orphan of the pair would
     * be its child now. */
    for (i = 0, left = 0; i < 100 && (left = th_child_of(getpid())) > 0; i++)
        usleep(20000);
    ck_assert_msg(left <= 0, "process %d was left behind:\n%s", (int)left, run.out);
    ck_assert_int_eq(run.leftover, 0);
}
END_TEST

/* Both processes of a two-terminal session exit with the session's status,
 * whichever side decided it, and the consumer says what the producer
 * concluded. */
static const struct {
    const char *env, *concluded;
    int code;
} session_ends[] = {
    {"GPUIPC_SABOTAGE=consumer:skip-write", "the producer concluded FAIL", 1},
    {"GPUIPC_SABOTAGE=producer:skip-write", "the producer concluded FAIL", 1},
    {"CK_RUN_SUITE=nothing-matches", "the producer concluded SKIP", 77},
};

START_TEST(test_twoterm_both_sides_exit_with_the_session_status)
{
    const char *env[] = {session_ends[_i].env, NULL};
    const char *args[] = {"--only", "memfd", "--size", "1M", "--timeout", "5", NULL};
    const char *cargs[] = {"--timeout", "5", NULL};
    char sock[64];
    gpuipc_err err;
    int k;

    snprintf(sock, sizeof(sock), "@gpuipc-2t-status-%d-%d", (int)getpid(), _i);
    ck_assert_int_eq(gpuipc_pair_run(th_program(), sock, args, cargs, env, 20, 5, &pair, &err),
                     0);
    for (k = 0; k < 2; k++)
        ck_assert_msg(pair.proc[k].exited && WIFEXITED(pair.proc[k].status) &&
                      WEXITSTATUS(pair.proc[k].status) == session_ends[_i].code,
                      "%s: %s status 0x%x:\n%s", env[0], k ? "consumer" : "producer",
                      (unsigned)pair.proc[k].status, pair.proc[k].out);
    ck_assert_msg(strstr(pair.proc[1].out, session_ends[_i].concluded) != NULL,
                  "%s: consumer:\n%s", env[0], pair.proc[1].out);
}
END_TEST

/* Two terminals have no shared status page: each side's own watchdog ends
 * it at its --deadline. A consumer wedged at verify (every signal blocked)
 * ends by its deadline, naming itself, its step and call, and the producer
 * reports the connection lost; both exit 1. */
START_TEST(test_twoterm_each_side_ends_itself_by_its_deadline)
{
    const char *env[] = {"GPUIPC_FAULT=consumer:verify:wedge", NULL};
    const char *args[] = {"--only", "memfd", "--size", "1M", "--deadline", "3", NULL};
    const char *cargs[] = {"--deadline", "1", NULL};
    char sock[64];
    gpuipc_err err;
    int k;

    snprintf(sock, sizeof(sock), "@gpuipc-2t-deadline-%d", (int)getpid());
    ck_assert_int_eq(gpuipc_pair_run(th_program(), sock, args, cargs, env, 20, 5, &pair, &err),
                     0);
    for (k = 0; k < 2; k++)
        ck_assert_msg(pair.proc[k].exited && WIFEXITED(pair.proc[k].status) &&
                      WEXITSTATUS(pair.proc[k].status) == 1, "%s status 0x%x:\n%s",
                      k ? "consumer" : "producer", (unsigned)pair.proc[k].status,
                      pair.proc[k].out);
    ck_assert_msg(strstr(pair.proc[1].out, "result: FAIL: --deadline 1.000 s passed: the consumer "
                         "is stuck at verify in GPUIPC_FAULT wedge") != NULL, "consumer:\n%s",
                  pair.proc[1].out);
    ck_assert_msg(strstr(pair.proc[0].out, "peer gone during report") != NULL, "producer:\n%s",
                  pair.proc[0].out);
}
END_TEST

/* ---- usage ---- */

static const struct {
    const char *args[6];
    const char *says;
} usage[] = {
    {{"--serve", "/tmp/a", "--connect", "/tmp/b"}, "one process takes one role"},
    {{"--connect", "/tmp/a", "--size", "1M"}, "--connect: --size is the producer's choice"},
    {{"--connect", "/tmp/a", "--only", "memfd"}, "--connect: --only is the producer's choice"},
    {{"--serve", "/tmp/a", "--destructive"}, "--destructive needs the forked mode"},
    {{"--allow-uid", "5"}, "--allow-uid: only with --serve or --connect"},
    {{"--allow-uid", "x", "--serve", "@a"}, "--allow-uid: 'x' is not a user id"},
    {{"--serve", "@"}, "--serve: the socket path is empty"},
    {{"--repeat", "0"}, "--repeat: '0' is not a round count from 1 to 1000000"},
    {{"--fault-matrix", "--repeat", "2"}, "--fault-matrix: does not combine with --repeat"},
    {{"--fault-matrix", "--only", "memfd,vmm"}, "--fault-matrix: name one mechanism with --only"},
    {{"--serve",
      "/tmp/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"},
     "a Unix socket path holds at most 107"},
};

START_TEST(test_twoterm_usage_errors_exit_2)
{
    ck_assert_int_eq(th_spawn(&run, usage[_i].args, NULL, 10, 1, NULL, NULL), 0);
    ck_assert_msg(th_exited(&run, 2), "status 0x%x:\n%s", run.status, run.out);
    OUT_HAS(usage[_i].says);
}
END_TEST

Suite *twoterm_suite(void)
{
    Suite *s = suite_create("twoterm");
    TCase *files = tcase_create("socket files");
    TCase *uids = tcase_create("uids");
    TCase *more = tcase_create("signals, soak, matrix, usage");

    tcase_add_checked_fixture(files, setup, teardown);
    tcase_set_timeout(files, 30);
    tcase_add_test(files, test_twoterm_memfd_round_trip_through_a_socket_file);
    tcase_add_test(files, test_twoterm_socket_is_0600_and_removed_after_a_timeout);
    tcase_add_loop_test(files, test_twoterm_refuses_a_directory_writable_by_others, 0, 2);
    tcase_add_test(files, test_twoterm_never_removes_a_path_that_is_not_a_socket);
    tcase_add_test(files, test_twoterm_replaces_a_stale_socket);
    tcase_add_test(files, test_twoterm_refuses_a_live_server);
    tcase_add_test(files, test_twoterm_connect_honours_the_deadline);
    tcase_add_test(files, test_twoterm_each_side_ends_itself_by_its_deadline);
    tcase_add_loop_test(files, test_twoterm_serve_removes_its_socket_on_a_stop_signal, 0, 3);
    tcase_add_test(files, test_twoterm_a_live_server_survives_the_liveness_check);
    tcase_add_test(files, test_twoterm_connections_closed_before_hello_are_dropped);
    tcase_add_loop_test(files, test_twoterm_an_impossible_session_is_refused_before_listening, 0,
                        (int)(sizeof(early) / sizeof(early[0])));
    suite_add_tcase(s, files);

    /* A peer of another uid takes root to start. Without it these three
     * are not registered, and the runner says so: they are not passes. */
    tcase_set_timeout(uids, 30);
    if (geteuid() == 0) {
        tcase_add_test(uids, test_twoterm_refuses_a_client_of_another_uid);
        tcase_add_test(uids, test_twoterm_allow_uid_admits_that_uid);
        tcase_add_test(uids, test_twoterm_client_refuses_a_server_of_another_uid);
        tcase_add_test(uids, test_twoterm_a_flood_of_refusals_is_counted_not_logged);
        suite_add_tcase(s, uids);
    } else {
        fprintf(stderr, "twoterm: 4 uid tests NOT RUN: they need root to start a peer as "
                "uid %d\n", NOBODY);
    }

    tcase_set_timeout(more, 120);
    tcase_add_test(more, test_twoterm_ctrl_c_stops_both_processes_with_130);
    tcase_add_test(more, test_twoterm_repeat_soaks_without_drift);
    tcase_add_test(more, test_twoterm_repeat_says_each_round_unless_quiet);
    tcase_add_test(more, test_twoterm_repeat_stops_at_the_first_drift);
    tcase_add_test(more, test_twoterm_fault_matrix_mode_over_memfd);
    tcase_add_loop_test(more, test_twoterm_a_stopped_fault_matrix_leaves_no_process, 0, 2);
    tcase_add_loop_test(more, test_twoterm_both_sides_exit_with_the_session_status, 0,
                        (int)(sizeof(session_ends) / sizeof(session_ends[0])));
    tcase_add_loop_test(more, test_twoterm_usage_errors_exit_2, 0,
                        (int)(sizeof(usage) / sizeof(usage[0])));
    suite_add_tcase(s, more);
    return s;
}
