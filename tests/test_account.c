/* SPDX-License-Identifier: Apache-2.0 */
/* test_account.c: FD accounting names what leaked. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/account.h"
#include "core/ledger.h"
#include "core/proc.h"
#include "mech/memfd.h"
#include "suites.h"

START_TEST(test_account_sees_no_leak_when_nothing_changed)
{
    gpuipc_fds a, b;
    gpuipc_err e;

    ck_assert_int_eq(gpuipc_account_snapshot(&a, &e), 0);
    ck_assert_int_eq(gpuipc_account_snapshot(&b, &e), 0);
    ck_assert_uint_eq(gpuipc_account_leaks(&a, &b, &e), 0);
    gpuipc_account_free(&a);
    gpuipc_account_free(&b);
}
END_TEST

START_TEST(test_account_names_a_leaked_fd)
{
    gpuipc_fds a, b;
    gpuipc_err e;
    char want[64];
    int fd;

    ck_assert_int_eq(gpuipc_account_snapshot(&a, &e), 0);
    fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    ck_assert_int_eq(gpuipc_account_snapshot(&b, &e), 0);
    ck_assert_uint_eq(gpuipc_account_leaks(&a, &b, &e), 1);
    snprintf(want, sizeof(want), "1 FD leaked: fd %d (/dev/null)", fd);
    ck_assert_str_eq(e.msg, want);
    close(fd);
    gpuipc_account_free(&a);
    gpuipc_account_free(&b);
}
END_TEST

START_TEST(test_account_an_fd_added_to_the_snapshot_is_no_leak)
{
    gpuipc_fds a, b;
    gpuipc_err e;
    char want[64];
    int held, leaked;

    ck_assert_int_eq(gpuipc_account_snapshot(&a, &e), 0);
    held = open("/dev/null", O_RDONLY | O_CLOEXEC);
    leaked = open("/dev/zero", O_RDONLY | O_CLOEXEC);
    ck_assert_int_ge(held, 0);
    ck_assert_int_ge(leaked, 0);
    /* A connection held for a later pair: added, in order, once. */
    ck_assert_int_eq(gpuipc_account_add(&a, held), 0);
    ck_assert_int_eq(gpuipc_account_add(&a, held), 0);
    ck_assert_int_eq(gpuipc_account_snapshot(&b, &e), 0);
    ck_assert_uint_eq(gpuipc_account_leaks(&a, &b, &e), 1);
    snprintf(want, sizeof(want), "1 FD leaked: fd %d (/dev/zero)", leaked);
    ck_assert_str_eq(e.msg, want);
    close(held);
    close(leaked);
    gpuipc_account_free(&a);
    gpuipc_account_free(&b);
}
END_TEST

START_TEST(test_account_ignores_closed_fds)
{
    gpuipc_fds a, b;
    gpuipc_err e;
    int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);

    ck_assert_int_eq(gpuipc_account_snapshot(&a, &e), 0);
    close(fd);
    ck_assert_int_eq(gpuipc_account_snapshot(&b, &e), 0);
    ck_assert_uint_eq(gpuipc_account_leaks(&a, &b, &e), 0);
    ck_assert_uint_eq(a.n, b.n + 1);
    gpuipc_account_free(&a);
    gpuipc_account_free(&b);
}
END_TEST

/* The driver's event pool in /dev/shm is the driver's: its FD and its
 * resident pages are left out, while another /dev/shm file of the same size
 * is counted, both as an FD and as shared memory. */
START_TEST(test_account_leaves_out_the_driver_pool_only)
{
    const size_t len = 256 * 1024;
    char pool[96], other[96];
    uint64_t shm0, shm1, shm2;
    gpuipc_fds a, b;
    gpuipc_err e;
    void *m1, *m2;
    int f1, f2;

    snprintf(pool, sizeof(pool), GPUIPC_DRIVER_POOL_PREFIX "gpuipc-test.%d", (int)getpid());
    snprintf(other, sizeof(other), "/dev/shm/gpuipc-test.%d", (int)getpid());
    if (gpuipc_proc_shmem(&shm0) < 0)
        return; /* no RssShmem on this kernel: nothing to compare */
    ck_assert_int_eq(gpuipc_account_snapshot(&a, &e), 0);
    f1 = open(pool, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    ck_assert_int_ge(f1, 0);
    unlink(pool);
    ck_assert_int_eq(ftruncate(f1, (off_t)len), 0);
    m1 = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, f1, 0);
    ck_assert_ptr_ne(m1, MAP_FAILED);
    memset(m1, 1, len);
    ck_assert_int_eq(gpuipc_account_snapshot(&b, &e), 0);
    ck_assert_uint_eq(gpuipc_account_leaks(&a, &b, &e), 0);
    ck_assert_int_eq(gpuipc_proc_shmem(&shm1), 0);
    ck_assert_msg(shm1 < shm0 + len / 2, "the pool's pages were counted: %llu -> %llu",
                  (unsigned long long)shm0, (unsigned long long)shm1);
    gpuipc_account_free(&b);
    /* The same, under another name, is this process's. */
    f2 = open(other, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    ck_assert_int_ge(f2, 0);
    unlink(other);
    ck_assert_int_eq(ftruncate(f2, (off_t)len), 0);
    m2 = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, f2, 0);
    ck_assert_ptr_ne(m2, MAP_FAILED);
    memset(m2, 1, len);
    ck_assert_int_eq(gpuipc_account_snapshot(&b, &e), 0);
    ck_assert_uint_eq(gpuipc_account_leaks(&a, &b, &e), 1);
    ck_assert_int_eq(gpuipc_proc_shmem(&shm2), 0);
    ck_assert_msg(shm2 >= shm1 + len, "another /dev/shm file was not counted: %llu -> %llu",
                  (unsigned long long)shm1, (unsigned long long)shm2);
    munmap(m1, len);
    munmap(m2, len);
    close(f1);
    close(f2);
    gpuipc_account_free(&a);
    gpuipc_account_free(&b);
}
END_TEST

/* Cells of a phase run at once, each on a thread of its own: what one
 * cell's thread still holds is its own (its tag), whatever another holds
 * meanwhile; an untagged mark sees every thread's. */
struct tagged {
    uint32_t tag;
    uint64_t key;
    int keep;
    size_t seen;
    char text[256];
};

static void *tagged_cell(void *arg)
{
    struct tagged *t = arg;
    gpuipc_ledger_mark m;

    gpuipc_ledger_set_tag(t->tag);
    gpuipc_ledger_mark_now(&m);
    gpuipc_ledger_add(GPUIPC_LEDGER_HANDLE, t->key, 4096);
    gpuipc_ledger_add(GPUIPC_LEDGER_MAPPING, t->key + 1, 4096);
    usleep(20000); /* the other cell adds its own meanwhile */
    gpuipc_ledger_remove(GPUIPC_LEDGER_MAPPING, t->key + 1);
    if (!t->keep)
        gpuipc_ledger_remove(GPUIPC_LEDGER_HANDLE, t->key);
    t->seen = gpuipc_ledger_since(&m, NULL, t->text, sizeof(t->text));
    gpuipc_ledger_set_tag(0);
    return NULL;
}

START_TEST(test_account_ledger_names_a_leak_by_its_cell)
{
    struct tagged a = {7, 0x1000, 0, 0, ""}, b = {9, 0x9000, 1, 0, ""};
    gpuipc_ledger_mark all;
    pthread_t ta, tb;

    gpuipc_ledger_reset();
    gpuipc_ledger_mark_now(&all);
    ck_assert_int_eq(pthread_create(&ta, NULL, tagged_cell, &a), 0);
    ck_assert_int_eq(pthread_create(&tb, NULL, tagged_cell, &b), 0);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    /* Cell 7 let go of all it took, though cell 9 held objects then. */
    ck_assert_msg(a.seen == 0, "cell 7 charged with %zu: %s", a.seen, a.text);
    /* Cell 9 kept its handle: named, and only it. */
    ck_assert_uint_eq(b.seen, 1);
    ck_assert_msg(strstr(b.text, "handle 0x9000") != NULL, "%s", b.text);
    /* Untagged, the process's own count sees it too. */
    ck_assert_uint_eq(gpuipc_ledger_since(&all, NULL, NULL, 0), 1);
    gpuipc_ledger_reset();
}
END_TEST

/* What an FD is, as a message about a wrong-kind offer names it. */
START_TEST(test_account_names_what_an_fd_is)
{
    char kind[160];
    int p[2], sv[2], m = memfd_create("named", MFD_CLOEXEC);

    ck_assert_int_eq(pipe(p), 0);
    ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    ck_assert_str_eq(gpuipc_account_fd_kind(p[0], kind, sizeof(kind)), "a pipe");
    ck_assert_str_eq(gpuipc_account_fd_kind(sv[0], kind, sizeof(kind)), "a socket");
    ck_assert_str_eq(gpuipc_account_fd_kind(m, kind, sizeof(kind)), "a memfd (memfd:named)");
    close(p[0]);
    ck_assert_str_eq(gpuipc_account_fd_kind(p[0], kind, sizeof(kind)),
                     "no FD (Bad file descriptor)");
    close(p[1]);
    close(sv[0]);
    close(sv[1]);
    close(m);
}
END_TEST

/* A memfd sealed against writing is named so, not left to mmap's EPERM;
 * an FD that is no memfd is named by what it is. */
START_TEST(test_account_memfd_check_names_a_write_seal_and_a_stranger)
{
    gpuipc_err err;
    int m = memfd_create("sealed", MFD_CLOEXEC | MFD_ALLOW_SEALING), p[2];

    ck_assert_int_eq(ftruncate(m, 4096), 0);
    ck_assert_int_eq(fcntl(m, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE), 0);
    ck_assert_int_lt(gpuipc_memfd_check(m, 4096, &err), 0);
    ck_assert_msg(strstr(err.msg, "sealed against writing (F_SEAL_WRITE)") != NULL, "%s",
                  err.msg);
    ck_assert_int_eq(pipe(p), 0);
    ck_assert_int_lt(gpuipc_memfd_check(p[0], 4096, &err), 0);
    ck_assert_msg(strstr(err.msg, "the FD offered as a memfd is a pipe, not a memfd") != NULL,
                  "%s", err.msg);
    close(m);
    close(p[0]);
    close(p[1]);
}
END_TEST

/* A library's own FDs (PMIx's) are left out while they are the files they
 * were; a number reused for another file counts again, and so does every
 * one once forgotten. */
START_TEST(test_account_leaves_out_foreign_fds_while_they_are_the_same_file)
{
    gpuipc_fds before, now;
    gpuipc_err e;
    int a, b, other;

    ck_assert_int_eq(gpuipc_account_snapshot(&before, &e), 0);
    a = open("/dev/null", O_RDONLY | O_CLOEXEC);
    b = open("/dev/zero", O_RDONLY | O_CLOEXEC);
    ck_assert_int_ge(b, 0);
    ck_assert_int_eq(gpuipc_account_foreign_since(&before, "test", &e), 2);
    ck_assert_int_eq(gpuipc_account_foreign_count(), 2);
    ck_assert_uint_eq(gpuipc_account_leaks_now(&before, &e), 0);

    /* b's number now names another file: that one is this program's. */
    other = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    ck_assert_int_eq(dup3(other, b, O_CLOEXEC), b);
    close(other);
    ck_assert_int_eq(gpuipc_account_snapshot(&now, &e), 0);
    ck_assert_uint_eq(gpuipc_account_leaks(&before, &now, &e), 1);
    ck_assert_msg(strstr(e.msg, "/dev/urandom") != NULL, "%s", e.msg);
    gpuipc_account_free(&now);

    /* Forgotten: a and b count again; another owner's are not forgotten. */
    ck_assert_int_eq(gpuipc_account_foreign_forget("other"), 0);
    ck_assert_int_eq(gpuipc_account_foreign_forget("test"), 2);
    ck_assert_int_eq(gpuipc_account_foreign_count(), 0);
    ck_assert_uint_eq(gpuipc_account_leaks_now(&before, &e), 2);
    close(a);
    close(b);
    gpuipc_account_free(&before);
}
END_TEST

/* More FDs than the table holds: none is registered, and it says why. */
START_TEST(test_account_refuses_more_foreign_fds_than_it_holds)
{
    int fds[GPUIPC_ACCOUNT_FOREIGN_MAX + 1], i;
    gpuipc_fds before;
    gpuipc_err e;

    ck_assert_int_eq(gpuipc_account_snapshot(&before, &e), 0);
    for (i = 0; i <= GPUIPC_ACCOUNT_FOREIGN_MAX; i++)
        ck_assert_int_ge(fds[i] = open("/dev/null", O_RDONLY | O_CLOEXEC), 0);
    ck_assert_int_eq(gpuipc_account_foreign_since(&before, "many", &e), -ENOSPC);
    ck_assert_msg(strstr(e.msg, "many opened more than 64 FDs") != NULL, "%s", e.msg);
    ck_assert_int_eq(gpuipc_account_foreign_count(), 0);
    for (i = 0; i <= GPUIPC_ACCOUNT_FOREIGN_MAX; i++)
        close(fds[i]);
    gpuipc_account_free(&before);
}
END_TEST

Suite *account_suite(void)
{
    Suite *s = suite_create("account");
    TCase *tc = tcase_create("fds");

    tcase_add_test(tc, test_account_sees_no_leak_when_nothing_changed);
    tcase_add_test(tc, test_account_names_a_leaked_fd);
    tcase_add_test(tc, test_account_ignores_closed_fds);
    tcase_add_test(tc, test_account_leaves_out_the_driver_pool_only);
    tcase_add_test(tc, test_account_names_what_an_fd_is);
    tcase_add_test(tc, test_account_ledger_names_a_leak_by_its_cell);
    tcase_add_test(tc, test_account_memfd_check_names_a_write_seal_and_a_stranger);
    tcase_add_test(tc, test_account_leaves_out_foreign_fds_while_they_are_the_same_file);
    tcase_add_test(tc, test_account_refuses_more_foreign_fds_than_it_holds);
    tcase_add_test(tc, test_account_an_fd_added_to_the_snapshot_is_no_leak);
    suite_add_tcase(s, tc);
    return s;
}
