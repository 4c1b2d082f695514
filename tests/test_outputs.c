/* SPDX-License-Identifier: Apache-2.0 */
/* test_outputs.c: harmless as root, and no false failure from where it
 * runs. The program runs for real (memfd, no GPU):
 * - --json at a FIFO, a device node, a directory, a symbolic link, in a
 *   missing directory: refused before the run (exit 2), the path untouched;
 *   a temporary name planted beforehand is not followed; a read-only
 *   directory with a regular file mounted in it is written in place; a full
 *   file system fails a passing run (exit 1), --json - too;
 * - FDs 0, 1, 2 closed, each and all; stdout a pipe closed after a byte
 *   (| head -c1), with --json and with --serve;
 * - a read-only /tmp (Check's temporary file); hard RLIMIT_NOFILE of 64,
 *   128 and 256 with a few chunks; --chunks beyond vm.max_map_count;
 * - --serve's socket path: a file put in its place, another socket there,
 *   its directory swapped; --connect to a regular file.
 * Device nodes and mounts are made in the test's own temporary directory
 * and private mount namespace, never at a real device's path; what cannot
 * be made here is named as not run. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "app/check_shim.h"
#include "run/pair.h"
#include "core/proc.h"
#include "helpers.h"
#include "jschema.h"
#include "suites.h"

static char dir[64];
static th_run run;

#define OUT_HAS(text) ck_assert_msg(strstr(run.out, (text)) != NULL, "output lacks '%s':\n%s", \
                                    (text), run.out)

static void setup(void)
{
    snprintf(dir, sizeof(dir), "/tmp/gpuipc-out-XXXXXX");
    ck_assert_msg(mkdtemp(dir) != NULL, "mkdtemp: %s", strerror(errno));
}

static void teardown(void)
{
    th_remove_tree(dir);
}

static char *in_dir(char *buf, size_t len, const char *name)
{
    snprintf(buf, len, "%s/%s", dir, name);
    return buf;
}

static void write_text(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

    ck_assert_msg(fd >= 0, "%s: %s", path, strerror(errno));
    ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
}

static int text_is(const char *path, const char *text)
{
    char buf[256] = "";
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;

    if (fd >= 0)
        close(fd);
    return n >= 0 && (buf[n] = '\0', strcmp(buf, text) == 0);
}

/* The document at path parses and holds to the schema; its exit status. */
static int valid_doc(const char *path)
{
    char why[512];
    jnode *doc = th_result_doc(path, why, sizeof(why));
    int status;

    ck_assert_msg(doc != NULL, "%s: %s", path, why);
    status = (int)js_num(js_get(js_get(doc, "exit"), "status"));
    js_free(doc);
    return status;
}

/* ---- the program with its standard FDs as a test wants them ---- */

/* Starts the program with args, env added, and FDs 0, 1 and 2 as in, out,
 * err (-1: closed), in a process group of its own. */
static pid_t start_io(const char *const *args, const char *const *env, int in, int out,
                      int err)
{
    const char *argv[24];
    pid_t pid;
    size_t i, n = 0;

    argv[n++] = th_program();
    for (i = 0; args[i] != NULL && n < 23; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    fflush(NULL);
    pid = fork();
    if (pid == 0) {
        int fds[3] = {in, out, err}, k;

        setpgid(0, 0);
        for (k = 0; k < 3; k++)
            fds[k] = fds[k] >= 0 ? fcntl(fds[k], F_DUPFD, 10) : -1;
        for (k = 0; k < 3; k++) {
            if (fds[k] < 0)
                close(k);
            else
                dup2(fds[k], k);
        }
        gpuipc_pair_clear_check_env(); /* this runner's Check selection is not the run's */
        for (i = 0; env != NULL && env[i] != NULL; i++)
            putenv((char *)env[i]);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    return pid;
}

/* Waits for pid up to timeout_s (then kills its group); its wait status,
 * or -1 if it had to be killed. Nothing of its group may be left. */
static int wait_io(pid_t pid, double timeout_s)
{
    struct timespec tick = {0, 10 * 1000000L};
    int status, waited;

    for (waited = 0; waited < (int)(timeout_s * 100); waited++) {
        if (waitpid(pid, &status, WNOHANG) == pid) {
            usleep(100000);
            ck_assert_msg(kill(-pid, 0) < 0, "a process of the run outlived it");
            return status;
        }
        nanosleep(&tick, NULL);
    }
    kill(-pid, SIGKILL);
    waitpid(pid, &status, 0);
    return -1;
}

static int exited(int status, int code)
{
    return status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == code;
}

/* ---- --json's path ---- */

enum { T_FIFO, T_DEVICE, T_DIRECTORY, T_SYMLINK, T_DANGLING, T_MISSING_DIR, T_COUNT };

static const struct {
    const char *name, *says;
    int needs_root;
} targets[T_COUNT] = {
    [T_FIFO] = {"a FIFO", "is a FIFO;", 0},
    [T_DEVICE] = {"a device node (1:3, as /dev/null)", "is a character device;", 1},
    [T_DIRECTORY] = {"a directory", "is a directory;", 0},
    [T_SYMLINK] = {"a symbolic link to another file", "is a symbolic link (not followed", 0},
    [T_DANGLING] = {"a symbolic link to nothing", "is a symbolic link (not followed", 0},
    [T_MISSING_DIR] = {"a file in a missing directory", "does not exist", 0},
};

static int kinds[T_COUNT], nkinds;

/* Each refused before the run, exit 2, and left as it was. */
START_TEST(test_outputs_json_refuses_what_is_no_regular_file)
{
    int t = kinds[_i];
    char path[128], victim[128], target[128];
    const char *args[] = {"--only", "memfd", "--size", "64K", "-q", "--json", path, NULL};
    struct stat before, after;

    in_dir(path, sizeof(path), "r.json");
    in_dir(victim, sizeof(victim), "victim");
    write_text(victim, "keep me");
    switch (t) {
    case T_FIFO:
        ck_assert_int_eq(mkfifo(path, 0644), 0);
        break;
    case T_DEVICE:
        ck_assert_int_eq(mknod(path, S_IFCHR | 0666, makedev(1, 3)), 0);
        break;
    case T_DIRECTORY:
        ck_assert_int_eq(mkdir(path, 0755), 0);
        break;
    case T_SYMLINK:
        ck_assert_int_eq(symlink(victim, path), 0);
        break;
    case T_DANGLING:
        ck_assert_int_eq(symlink(in_dir(target, sizeof(target), "nothing"), path), 0);
        break;
    default:
        in_dir(path, sizeof(path), "missing/r.json");
        break;
    }
    lstat(path, &before);
    ck_assert_int_eq(th_spawn(&run, args, NULL, 20, 3, NULL, NULL), 0);
    ck_assert_msg(th_exited(&run, 2), "%s: status 0x%x:\n%s", targets[t].name, run.status,
                  run.out);
    OUT_HAS(targets[t].says);
    ck_assert_msg(strstr(run.out, "summary") == NULL, "%s: the run ran:\n%s", targets[t].name,
                  run.out);
    if (t != T_MISSING_DIR) {
        ck_assert_int_eq(lstat(path, &after), 0);
        ck_assert_msg((after.st_mode & S_IFMT) == (before.st_mode & S_IFMT) &&
                      after.st_ino == before.st_ino, "%s: replaced", targets[t].name);
    }
    ck_assert_msg(text_is(victim, "keep me"), "%s: the file it points at was written",
                  targets[t].name);
    if (t == T_DANGLING)
        ck_assert_msg(access(target, F_OK) < 0, "a file was made through the link");
}
END_TEST

/* Symbolic links planted at the temporary names the writer could pick (the
 * old scheme's PATH.<pid>.tmp, and this one's first) are left alone: the
 * document is written, the file they point at is not. */
static char plant_victim[128], plant_path[128];

static void plant_links(const char *line, pid_t pgid, void *arg)
{
    static int done;
    char name[192];

    (void)line;
    (void)arg;
    if (done++)
        return;
    snprintf(name, sizeof(name), "%s.%d.tmp", plant_path, (int)pgid);
    symlink(plant_victim, name);
    snprintf(name, sizeof(name), "%s/.r.json.%d.0.tmp", dir, (int)pgid);
    symlink(plant_victim, name);
}

START_TEST(test_outputs_json_never_follows_a_planted_temporary_name)
{
    const char *args[] = {"--only", "memfd", "--size", "1M", "--json", plant_path, NULL};

    in_dir(plant_path, sizeof(plant_path), "r.json");
    in_dir(plant_victim, sizeof(plant_victim), "victim");
    write_text(plant_victim, "keep me");
    ck_assert_int_eq(th_spawn(&run, args, NULL, 20, 3, plant_links, NULL), 0);
    ck_assert_msg(th_exited(&run, 0), "status 0x%x:\n%s", run.status, run.out);
    ck_assert_msg(text_is(plant_victim, "keep me"), "the planted link was followed");
    ck_assert_int_eq(valid_doc(plant_path), 0);
}
END_TEST

/* Every name the writer once made of its pid (.NAME.<pid>.<0..99>.tmp),
 * planted by another user (uid 65534) in a world-writable directory before
 * the files are written at the end, for --json, --prom and --junit: a pass
 * was turned into exit 1. The names are random now: the run passes, writes
 * all three, and leaves what was planted as it was. */
static char planted_dir[64];
static int planted;

static void plant_every_pid_name(const char *line, pid_t pgid, void *arg)
{
    static const char *const bases[] = {"r.json", "p.prom", "j.xml"};
    char name[192];
    size_t b;
    int n, fd;

    (void)line;
    (void)arg;
    if (planted > 0)
        return;
    for (b = 0; b < sizeof(bases) / sizeof(bases[0]); b++)
        for (n = 0; n < 100; n++) {
            snprintf(name, sizeof(name), "%s/.%s.%d.%d.tmp", planted_dir, bases[b], (int)pgid,
                     n);
            fd = open(name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
            if (fd < 0)
                continue;
            planted += write(fd, "planted", 7) == 7;
            (void)!fchown(fd, 65534, 65534);
            close(fd);
        }
}

START_TEST(test_outputs_planted_temporary_names_cannot_fail_a_run)
{
    char json[128], promf[128], junitf[128], name[320];
    const char *args[] = {"--only", "memfd", "--size", "1M", "--json", json, "--prom", promf,
                          "--junit", junitf, NULL};
    struct dirent *de;
    int kept = 0, other = 0;
    DIR *d;

    snprintf(planted_dir, sizeof(planted_dir), "%s", dir);
    planted = 0;
    ck_assert_int_eq(chmod(dir, 01777), 0); /* world-writable and sticky, as /tmp */
    in_dir(json, sizeof(json), "r.json");
    in_dir(promf, sizeof(promf), "p.prom");
    in_dir(junitf, sizeof(junitf), "j.xml");
    ck_assert_int_eq(th_spawn(&run, args, NULL, 20, 3, plant_every_pid_name, NULL), 0);
    /* (A name the writer held at that moment, under the old scheme, could
     * not be planted.) */
    ck_assert_int_ge(planted, 290);
    ck_assert_msg(th_exited(&run, 0), "status 0x%x:\n%s", run.status, run.out);
    ck_assert_int_eq(valid_doc(json), 0);
    ck_assert_msg(th_file_has(promf, "gpuipc_test_success 1"), "--prom: no pass written");
    ck_assert_msg(th_file_has(junitf, "failures=\"0\" errors=\"0\""), "--junit: no pass written");
    /* What was planted is there as it was; no temporary file of the run's
     * is left. */
    ck_assert_ptr_nonnull(d = opendir(dir));
    while ((de = readdir(d)) != NULL) {
        size_t len = strlen(de->d_name);

        if (len < 4 || strcmp(de->d_name + len - 4, ".tmp") != 0)
            continue;
        snprintf(name, sizeof(name), "%s/%s", dir, de->d_name);
        if (text_is(name, "planted"))
            kept++;
        else
            other++;
    }
    closedir(d);
    ck_assert_int_eq(kept, planted);
    ck_assert_int_eq(other, 0);
}
END_TEST

/* A private mount namespace, in this test's own process (Check forks one
 * per test), with nothing propagating back out. */
static void private_mounts(void)
{
    char why[160];

    ck_assert_msg(th_private_mounts(why, sizeof(why)) == 0, "%s", why);
}

static void mount_tmpfs(const char *at, const char *opts)
{
    mkdir(at, 0755);
    ck_assert_msg(mount("tmpfs", at, "tmpfs", 0, opts) == 0, "mount tmpfs %s: %s", at,
                  strerror(errno));
}

/* A regular file mounted into a read-only directory (a container's result
 * file): written in place, its directory untouched. */
START_TEST(test_outputs_json_in_place_in_a_read_only_directory)
{
    char rw[128], ro[128], src[160], path[160];
    const char *args[] = {"--only", "memfd", "--size", "1M", "-q", "--json", path, NULL};

    private_mounts();
    mount_tmpfs(in_dir(rw, sizeof(rw), "rw"), "size=1m");
    mount_tmpfs(in_dir(ro, sizeof(ro), "ro"), "size=1m");
    snprintf(src, sizeof(src), "%s/result.json", rw);
    snprintf(path, sizeof(path), "%s/result.json", ro);
    write_text(src, "old");
    write_text(path, "");
    ck_assert_int_eq(mount("none", ro, "none", MS_REMOUNT | MS_RDONLY, NULL), 0);
    ck_assert_int_eq(mount(src, path, "none", MS_BIND, NULL), 0);
    ck_assert_int_eq(th_spawn(&run, args, NULL, 20, 3, NULL, NULL), 0);
    ck_assert_msg(th_exited(&run, 0), "status 0x%x:\n%s", run.status, run.out);
    ck_assert_int_eq(valid_doc(src), 0);
}
END_TEST

/* No room for the document: a run that passed fails (exit 1), saying why;
 * the same for --json - into a full file system. */
static void fill(const char *path)
{
    ck_assert_msg(th_fill(path) == 0, "%s: %s", path, strerror(errno));
}

START_TEST(test_outputs_a_full_disk_fails_a_passing_run)
{
    char full[128], path[160], filler[160], out[160];
    const char *args[] = {"--only", "memfd", "--size", "1M", "-q", "--json", path, NULL};
    const char *to_stdout[] = {"--only", "memfd", "--size", "1M", "-q", "--json", "-", NULL};
    int pipes[2], fd, status;
    ssize_t n;

    private_mounts();
    mount_tmpfs(in_dir(full, sizeof(full), "full"), "size=64k");
    snprintf(path, sizeof(path), "%s/r.json", full);
    snprintf(filler, sizeof(filler), "%s/filler", full);
    fill(filler);
    ck_assert_int_eq(th_spawn(&run, args, NULL, 20, 3, NULL, NULL), 0);
    ck_assert_msg(th_exited(&run, 1), "status 0x%x:\n%s", run.status, run.out);
    OUT_HAS("result: FAIL: the run ended with exit 0 (said above), but --json ");
    OUT_HAS("No space left on device (exit 1)");
    ck_assert_msg(access(path, F_OK) < 0, "a document was left there");

    /* --json -: standard output is a file on the full file system. */
    snprintf(out, sizeof(out), "%s/out", full);
    unlink(filler);
    write_text(out, "");
    fill(filler);
    fd = open(out, O_WRONLY | O_APPEND | O_CLOEXEC);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(pipe2(pipes, O_CLOEXEC), 0);
    status = wait_io(start_io(to_stdout, NULL, -1, fd, pipes[1]), 20);
    close(pipes[1]);
    close(fd);
    memset(run.out, 0, sizeof(run.out));
    n = read(pipes[0], run.out, sizeof(run.out) - 1);
    close(pipes[0]);
    ck_assert_msg(n > 0 && exited(status, 1), "--json - to a full disk: status 0x%x:\n%s",
                  status, run.out);
    OUT_HAS("No space left on device (exit 1)");
}
END_TEST

/* The deadline's document on a full file system: not written whole, so the
 * document that was there stays, and the output says so; the verdict is
 * the deadline's all the same. */
START_TEST(test_outputs_a_full_disk_at_the_deadline_keeps_the_old_document)
{
    char full[128], path[160], filler[160];
    const char *env[] = {"GPUIPC_FAULT=producer:check:wedge", NULL};
    const char *args[] = {"--only", "memfd", "--size", "1M", "-q", "--deadline", "1",
                          "--json", path, NULL};

    private_mounts();
    mount_tmpfs(in_dir(full, sizeof(full), "full"), "size=64k");
    snprintf(path, sizeof(path), "%s/r.json", full);
    snprintf(filler, sizeof(filler), "%s/filler", full);
    write_text(path, "an older document");
    fill(filler);
    ck_assert_int_eq(th_spawn(&run, args, env, 20, 3, NULL, NULL), 0);
    ck_assert_msg(th_exited(&run, 1), "status 0x%x:\n%s", run.status, run.out);
    OUT_HAS("result: FAIL: --deadline 1.000 s passed: the producer is stuck at check");
    OUT_HAS(": the document of the deadline could not be written whole");
    ck_assert_msg(text_is(path, "an older document"), "the document that was there is gone");
}
END_TEST

/* ---- the standard streams ---- */

static const struct {
    const char *name;
    int closed[3];
} closings[] = {
    {"stdin", {1, 0, 0}}, {"stdout", {0, 1, 0}}, {"stderr", {0, 0, 1}}, {"all three", {1, 1, 1}},
};

/* Each closed, and all: the run passes and its document is written. */
START_TEST(test_outputs_closed_standard_streams)
{
    char path[128];
    const char *args[] = {"--only", "memfd,memfd-chunks", "--size", "1M", "--json", path, NULL};
    int sink[2], status;
    char buf[1 << 15];
    ssize_t n, got = 0;

    in_dir(path, sizeof(path), "r.json");
    ck_assert_int_eq(pipe2(sink, O_CLOEXEC), 0);
    status = wait_io(start_io(args, NULL, closings[_i].closed[0] ? -1 : 0,
                              closings[_i].closed[1] ? -1 : sink[1],
                              closings[_i].closed[2] ? -1 : sink[1]), 20);
    close(sink[1]);
    while ((n = read(sink[0], buf + got, sizeof(buf) - 1 - (size_t)got)) > 0)
        got += n;
    buf[got] = '\0';
    close(sink[0]);
    ck_assert_msg(exited(status, 0), "%s closed: status 0x%x:\n%s", closings[_i].name, status,
                  buf);
    ck_assert_int_eq(valid_doc(path), 0);
    if (!closings[_i].closed[1])
        ck_assert_msg(strstr(buf, "result: PASS") != NULL, "%s closed:\n%s", closings[_i].name,
                      buf);
}
END_TEST

/* | head -c1: standard output a pipe whose reader goes away after a byte.
 * The printing ends, not the run: exit 0, the document written. */
START_TEST(test_outputs_a_closed_output_pipe_ends_the_printing_only)
{
    char path[128], c;
    const char *args[] = {"--only", "memfd,memfd-chunks", "--size", "1M", "--json", path, NULL};
    int p[2], status;

    in_dir(path, sizeof(path), "r.json");
    ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
    {
        pid_t pid = start_io(args, NULL, 0, p[1], p[1]);

        close(p[1]);
        ck_assert_int_eq(read(p[0], &c, 1), 1);
        close(p[0]);
        status = wait_io(pid, 20);
    }
    ck_assert_msg(exited(status, 0), "status 0x%x", status);
    ck_assert_int_eq(valid_doc(path), 0);
}
END_TEST

/* The same for --serve, whose consumer connects from another process: the
 * server passes, the consumer passes, the socket file goes. */
START_TEST(test_outputs_serve_with_a_closed_output_pipe)
{
    char sock[128], c;
    const char *args[] = {"--serve", sock, "--only", "memfd", "--size", "1M", "--timeout", "10",
                          NULL};
    const char *cargs[] = {"--connect", sock, "--timeout", "10", NULL};
    char log[128];
    int p[2], status, cstatus, out, i;
    pid_t pid;

    in_dir(sock, sizeof(sock), "s");
    ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
    pid = start_io(args, NULL, 0, p[1], p[1]);
    close(p[1]);
    ck_assert_int_eq(read(p[0], &c, 1), 1);
    close(p[0]);
    for (i = 0; i < 500 && access(sock, F_OK) < 0; i++)
        usleep(10000);
    /* Not th_spawn: it reaps every child, the server's status with them. */
    out = open(in_dir(log, sizeof(log), "consumer.log"), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    ck_assert_int_ge(out, 0);
    cstatus = wait_io(start_io(cargs, NULL, 0, out, out), 20);
    close(out);
    status = wait_io(pid, 20);
    ck_assert_msg(exited(status, 0), "the server: status 0x%x", status);
    ck_assert_msg(exited(cstatus, 0), "the consumer: status 0x%x", cstatus);
    ck_assert_msg(access(sock, F_OK) < 0, "the socket file is left");
}
END_TEST

/* ---- the environment ---- */

/* /tmp read-only and TEMP unset: Check's temporary file has nowhere to go
 * on disk; the run passes all the same, its one --brief line says so, and
 * its document is written where it was asked for. */
START_TEST(test_outputs_a_read_only_tmp)
{
    char out[128], path[160];
    const char *args[] = {"--only", "memfd", "--size", "1M", "--brief", "--json", path, NULL};

    private_mounts();
    in_dir(out, sizeof(out), "out");
    mkdir(out, 0755);
    ck_assert_int_eq(mount("/tmp", "/tmp", "none", MS_BIND, NULL), 0);
    ck_assert_int_eq(mount("none", "/tmp", "none", MS_REMOUNT | MS_BIND | MS_RDONLY, NULL), 0);
    mount_tmpfs(out, "size=1m");
    ck_assert_msg(mkdir("/tmp/gpuipc-ro-probe", 0700) < 0 && errno == EROFS, "/tmp is writable");
    unsetenv("TEMP");
    snprintf(path, sizeof(path), "%s/r.json", out);
    ck_assert_int_eq(th_spawn(&run, args, NULL, 20, 3, NULL, NULL), 0);
    ck_assert_msg(th_exited(&run, 0), "status 0x%x:\n%s", run.status, run.out);
    ck_assert_msg(strncmp(run.out, "PASS: 1 passed", 14) == 0, "%s", run.out);
    ck_assert_int_eq(valid_doc(path), 0);
}
END_TEST

/* Hard FD limits of 64, 128 and 256 with 2 and the default 8 chunks: a
 * scenario asks for the FDs it needs, and passes. */
static const unsigned fd_limits[] = {64, 128, 256};

START_TEST(test_outputs_chunks_under_a_hard_fd_limit)
{
    struct rlimit low = {.rlim_cur = fd_limits[_i / 2], .rlim_max = fd_limits[_i / 2]};
    const char *chunks = _i % 2 ? "8" : "2";
    const char *args[] = {"--only", "memfd-chunks", "--chunks", chunks, "--size", "1M", "-q",
                          NULL};

    ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &low), 0);
    ck_assert_int_eq(th_spawn(&run, args, NULL, 20, 3, NULL, NULL), 0);
    ck_assert_msg(th_exited(&run, 0), "ulimit -n %u, --chunks %s: status 0x%x:\n%s",
                  fd_limits[_i / 2], chunks, run.status, run.out);
}
END_TEST

/* More chunks than vm.max_map_count lets a process map: said before the
 * first mmap, naming the sysctl. */
static unsigned max_map_count;

START_TEST(test_outputs_chunks_beyond_max_map_count_are_named)
{
    const char *args[] = {"--only", "memfd-chunks", "--chunks", "65536", "--size", "256M", "-q",
                          NULL};
    char want[96];

    ck_assert_int_eq(th_spawn(&run, args, NULL, 30, 3, NULL, NULL), 0);
    ck_assert_msg(th_exited(&run, 1), "status 0x%x:\n%s", run.status, run.out);
    snprintf(want, sizeof(want), "and vm.max_map_count is %u: raise it (sysctl -w "
             "vm.max_map_count=", max_map_count);
    OUT_HAS(want);
    ck_assert_msg(run.seconds < 5.0, "took %.2f s", run.seconds);
}
END_TEST

/* ---- --serve's socket file, and --connect's path ---- */

static int bind_at(const char *path)
{
    struct sockaddr_un a;
    int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

    memset(&a, 0, sizeof(a));
    a.sun_family = AF_UNIX;
    ck_assert_uint_lt(strlen(path), sizeof(a.sun_path));
    memcpy(a.sun_path, path, strlen(path));
    ck_assert_int_ge(fd, 0);
    ck_assert_msg(bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0, "bind %s: %s", path,
                  strerror(errno));
    ck_assert_int_eq(listen(fd, 1), 0);
    return fd;
}

enum { R_FILE, R_SOCKET, R_SWAPPED_DIR, R_COUNT };

static const char *const races[R_COUNT] = {
    [R_FILE] = "a regular file put in its place",
    [R_SOCKET] = "another server's socket bound in its place",
    [R_SWAPPED_DIR] = "its directory swapped for another with a file of that name",
};

static char race_sock[160], race_dir[128];
static int race_kind, race_fd = -1;

/* Once the server listens: the race of the test. */
static void race(const char *line, pid_t pgid, void *arg)
{
    char old[160];

    (void)pgid;
    (void)arg;
    if (strstr(line, "listening on") == NULL)
        return;
    switch (race_kind) {
    case R_FILE:
        unlink(race_sock);
        write_text(race_sock, "keep me");
        break;
    case R_SOCKET:
        unlink(race_sock);
        race_fd = bind_at(race_sock);
        break;
    default:
        snprintf(old, sizeof(old), "%s.old", race_dir);
        rename(race_dir, old);
        mkdir(race_dir, 0700);
        write_text(race_sock, "keep me");
        break;
    }
}

START_TEST(test_outputs_serve_removes_only_its_own_socket)
{
    const char *args[] = {"--serve", race_sock, "--only", "memfd", "--timeout", "1", NULL};
    struct sockaddr_un a;
    struct stat st;
    char old[192];
    int probe;

    race_kind = _i;
    in_dir(race_dir, sizeof(race_dir), "srv");
    ck_assert_int_eq(mkdir(race_dir, 0700), 0);
    snprintf(race_sock, sizeof(race_sock), "%s/s", race_dir);
    ck_assert_int_eq(th_spawn(&run, args, NULL, 20, 3, race, NULL), 0);
    ck_assert_msg(th_exited(&run, 1), "%s: status 0x%x:\n%s", races[_i], run.status, run.out);
    ck_assert_msg(lstat(race_sock, &st) == 0, "%s: removed", races[_i]);
    if (_i == R_SOCKET) {
        /* Still the test's own listening socket: a connect reaches it. */
        memset(&a, 0, sizeof(a));
        a.sun_family = AF_UNIX;
        memcpy(a.sun_path, race_sock, strlen(race_sock));
        probe = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
        ck_assert_msg(S_ISSOCK(st.st_mode) &&
                      connect(probe, (struct sockaddr *)&a, sizeof(a)) == 0,
                      "the other socket is gone or dead: %s", strerror(errno));
        close(probe);
        close(race_fd);
    } else {
        ck_assert_msg(text_is(race_sock, "keep me"), "%s: changed", races[_i]);
    }
    if (_i == R_SWAPPED_DIR) {
        /* its own socket, in the directory it bound it in, went */
        snprintf(old, sizeof(old), "%s.old/s", race_dir);
        ck_assert_msg(lstat(old, &st) < 0, "its own socket is left in the old directory");
    }
}
END_TEST

/* A regular file where a socket should be: said at once, exit 2, not a
 * --timeout of retries. */
START_TEST(test_outputs_connect_to_a_regular_file_says_so_at_once)
{
    char path[128];
    const char *args[] = {"--connect", path, "--timeout", "10", NULL};

    write_text(in_dir(path, sizeof(path), "not-a-socket"), "x");
    ck_assert_int_eq(th_spawn(&run, args, NULL, 20, 3, NULL, NULL), 0);
    ck_assert_msg(th_exited(&run, 2), "status 0x%x:\n%s", run.status, run.out);
    OUT_HAS("the path is a regular file, not a socket");
    ck_assert_msg(run.seconds < 5.0, "took %.2f s", run.seconds);
    ck_assert_msg(text_is(path, "x"), "the file changed");
}
END_TEST

/* The shield keeps a handler like Check's (no SA_SIGINFO), which would
 * SIGKILL the process group, out while the program's scenarios run, and
 * lets the program's own (SA_SIGINFO) and everything else through. */
static void plain_handler(int sig)
{
    (void)sig;
}

static void info_handler(int sig, siginfo_t *info, void *context)
{
    (void)sig;
    (void)info;
    (void)context;
}

START_TEST(test_outputs_the_shield_keeps_checks_handler_out)
{
    struct sigaction ours, checks, now;

    memset(&ours, 0, sizeof(ours));
    ours.sa_sigaction = info_handler;
    ours.sa_flags = SA_SIGINFO;
    memset(&checks, 0, sizeof(checks));
    checks.sa_handler = plain_handler;
    ck_assert_int_eq(sigaction(SIGINT, &ours, NULL), 0);
    gpuipc_check_shield(1);
    ck_assert_int_eq(sigaction(SIGINT, &checks, NULL), 0);
    ck_assert_int_eq(sigaction(SIGINT, NULL, &now), 0);
    ck_assert_msg(now.sa_sigaction == info_handler, "Check's handler got in");
    ck_assert_int_eq(sigaction(SIGUSR1, &checks, NULL), 0); /* other signals: as asked */
    ck_assert_int_eq(sigaction(SIGUSR1, NULL, &now), 0);
    ck_assert_msg(now.sa_handler == plain_handler, "SIGUSR1's handler was refused");
    gpuipc_check_shield(0);
    ck_assert_int_eq(sigaction(SIGINT, &checks, NULL), 0);
    ck_assert_int_eq(sigaction(SIGINT, NULL, &now), 0);
    ck_assert_msg(now.sa_handler == plain_handler, "the shield stayed up");
}
END_TEST

Suite *outputs_suite(void)
{
    Suite *s = suite_create("outputs");
    TCase *paths = tcase_create("paths"), *env = tcase_create("environment");
    char why[160];
    unsigned now;
    int t;

    tcase_add_checked_fixture(paths, setup, teardown);
    tcase_add_checked_fixture(env, setup, teardown);
    tcase_set_timeout(paths, 60);
    tcase_set_timeout(env, 60);
    for (t = 0; t < T_COUNT; t++) {
        if (targets[t].needs_root && geteuid() != 0)
            fprintf(stderr, "NOT RUN: outputs: --json at %s: making one needs root\n",
                    targets[t].name);
        else
            kinds[nkinds++] = t;
    }
    tcase_add_loop_test(paths, test_outputs_json_refuses_what_is_no_regular_file, 0, nkinds);
    tcase_add_test(paths, test_outputs_json_never_follows_a_planted_temporary_name);
    tcase_add_test(paths, test_outputs_planted_temporary_names_cannot_fail_a_run);
    tcase_add_loop_test(paths, test_outputs_serve_removes_only_its_own_socket, 0, R_COUNT);
    tcase_add_test(paths, test_outputs_connect_to_a_regular_file_says_so_at_once);
    tcase_add_loop_test(env, test_outputs_closed_standard_streams, 0,
                        (int)(sizeof(closings) / sizeof(closings[0])));
    tcase_add_test(env, test_outputs_a_closed_output_pipe_ends_the_printing_only);
    tcase_add_test(env, test_outputs_serve_with_a_closed_output_pipe);
    tcase_add_test(env, test_outputs_the_shield_keeps_checks_handler_out);
    if (getenv("GPUIPC_VALGRIND") == NULL || getenv("GPUIPC_VALGRIND")[0] == '\0')
        tcase_add_loop_test(env, test_outputs_chunks_under_a_hard_fd_limit, 0,
                            2 * (int)(sizeof(fd_limits) / sizeof(fd_limits[0])));
    else
        fprintf(stderr, "NOT RUN under valgrind: test_outputs_chunks_under_a_hard_fd_limit: "
                "valgrind refuses to lower RLIMIT_NOFILE (it keeps FDs of its own at the "
                "top)\n");
    if (th_mounts_work(why, sizeof(why))) {
        tcase_add_test(paths, test_outputs_json_in_place_in_a_read_only_directory);
        tcase_add_test(paths, test_outputs_a_full_disk_fails_a_passing_run);
        tcase_add_test(paths, test_outputs_a_full_disk_at_the_deadline_keeps_the_old_document);
        tcase_add_test(env, test_outputs_a_read_only_tmp);
    } else {
        fprintf(stderr, "NOT RUN: outputs: a read-only directory, a full disk and a read-only "
                "/tmp: %s\n", why);
    }
    if (gpuipc_proc_map_count(&now, &max_map_count) == 0 && max_map_count < 65536)
        tcase_add_test(env, test_outputs_chunks_beyond_max_map_count_are_named);
    else
        fprintf(stderr, "NOT RUN: outputs: --chunks 65536 beyond vm.max_map_count: it is %u "
                "here, enough\n", max_map_count);
    suite_add_tcase(s, paths);
    suite_add_tcase(s, env);
    return s;
}
