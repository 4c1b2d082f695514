/* test_chunks.c: the plan that splits --size into chunks, its description in
 * an offer (and every malformed one), the chunk-order sabotage's slots, and
 * the producer's FD room under a lowered RLIMIT_NOFILE. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "mech/chunks.h"
#include "core/units.h"
#include "helpers.h"
#include "suites.h"

#define MIB (1ull << 20)

START_TEST(test_chunks_plan_splits_and_rounds_up)
{
    gpuipc_chunk_plan p;
    gpuipc_err e;

    ck_assert_int_eq(gpuipc_chunks_plan(64 * MIB, 8, 2 * MIB, &p, &e), 0);
    ck_assert_uint_eq(p.count, 8);
    ck_assert_uint_eq(p.chunk, 8 * MIB);
    ck_assert_uint_eq(p.total, 64 * MIB);
    /* 64 MiB over 4096 chunks is 16 KiB each: at least one granule apiece. */
    ck_assert_int_eq(gpuipc_chunks_plan(64 * MIB, 4096, 2 * MIB, &p, &e), 0);
    ck_assert_uint_eq(p.chunk, 2 * MIB);
    ck_assert_uint_eq(p.total, 8192 * MIB);
    /* An uneven split rounds each chunk up to the granularity. */
    ck_assert_int_eq(gpuipc_chunks_plan(10 * MIB, 3, 2 * MIB, &p, &e), 0);
    ck_assert_uint_eq(p.chunk, 4 * MIB);
    ck_assert_uint_eq(p.total, 12 * MIB);
}
END_TEST

START_TEST(test_chunks_plan_refuses_the_impossible)
{
    gpuipc_chunk_plan p;
    gpuipc_err e;

    ck_assert_int_eq(gpuipc_chunks_plan(64 * MIB, 0, 2 * MIB, &p, &e), -EINVAL);
    ck_assert_msg(strstr(e.msg, "0 chunks: the count must be 1 to 65536"), "%s", e.msg);
    ck_assert_int_eq(gpuipc_chunks_plan(64 * MIB, 65537, 2 * MIB, &p, &e), -EINVAL);
    ck_assert_int_eq(gpuipc_chunks_plan(64 * MIB, 8, 3 * MIB, &p, &e), -EINVAL);
    ck_assert_int_eq(gpuipc_chunks_plan(GPUIPC_SIZE_MAX, 65536, 1ull << 30, &p, &e), -EINVAL);
    ck_assert_msg(strstr(e.msg, "exceed the 16 TiB limit"), "%s", e.msg);
}
END_TEST

static void offer_of(unsigned count, uint64_t chunk, gpuipc_msg_offer *o)
{
    gpuipc_chunk_plan p = {.count = count, .chunk = chunk, .total = count * chunk};

    memset(o, 0, sizeof(*o));
    gpuipc_chunks_offer(&p, 2 * MIB, o);
}

START_TEST(test_chunks_offer_round_trips)
{
    gpuipc_chunk_plan p;
    gpuipc_msg_offer o;
    gpuipc_err e;

    offer_of(4096, 2 * MIB, &o);
    ck_assert_uint_eq(o.size, 8192 * MIB);
    ck_assert_uint_eq(o.granularity, 2 * MIB);
    ck_assert_uint_eq(o.fds_total, 4096);
    ck_assert_int_eq(gpuipc_chunks_from_offer(&o, &p, &e), 0);
    ck_assert_uint_eq(p.count, 4096);
    ck_assert_uint_eq(p.chunk, 2 * MIB);
    ck_assert_uint_eq(p.total, 8192 * MIB);
}
END_TEST

START_TEST(test_chunks_offer_rejects_what_does_not_add_up)
{
    gpuipc_chunk_plan p;
    gpuipc_msg_offer o;
    gpuipc_err e;

    offer_of(8, 2 * MIB, &o);
    o.fds_total = 7;
    ck_assert_int_eq(gpuipc_chunks_from_offer(&o, &p, &e), -EPROTO);
    ck_assert_msg(strstr(e.msg, "8 chunks, but 7 FDs announced"), "%s", e.msg);
    offer_of(8, 2 * MIB, &o);
    o.size += 2 * MIB;
    ck_assert_int_eq(gpuipc_chunks_from_offer(&o, &p, &e), -EPROTO);
    ck_assert_msg(strstr(e.msg, "are not the 18874368 bytes offered"), "%s", e.msg);
    offer_of(8, 3 * MIB, &o);
    ck_assert_int_eq(gpuipc_chunks_from_offer(&o, &p, &e), -EPROTO);
    ck_assert_msg(strstr(e.msg, "is not a multiple of granularity"), "%s", e.msg);
    offer_of(8, 2 * MIB, &o);
    o.blob_len = 4;
    ck_assert_int_eq(gpuipc_chunks_from_offer(&o, &p, &e), -EPROTO);
    offer_of(8, 2 * MIB, &o);
    o.blob[5] = 1;
    ck_assert_int_eq(gpuipc_chunks_from_offer(&o, &p, &e), -EPROTO);
    ck_assert_msg(strstr(e.msg, "reserved blob field"), "%s", e.msg);
    /* A count times chunk size that wraps around must not pass. */
    offer_of(8, 2 * MIB, &o);
    o.blob[8 + 7] = 0x80;
    ck_assert_int_eq(gpuipc_chunks_from_offer(&o, &p, &e), -EPROTO);
}
END_TEST

START_TEST(test_chunks_slot_swaps_only_under_sabotage)
{
    ck_assert_uint_eq(gpuipc_chunks_slot(0, 8, 0), 0);
    ck_assert_uint_eq(gpuipc_chunks_slot(1, 8, 0), 1);
    ck_assert_uint_eq(gpuipc_chunks_slot(0, 8, 1), 1);
    ck_assert_uint_eq(gpuipc_chunks_slot(1, 8, 1), 0);
    ck_assert_uint_eq(gpuipc_chunks_slot(2, 8, 1), 2);
    ck_assert_uint_eq(gpuipc_chunks_slot(0, 1, 1), 0); /* one chunk cannot be swapped */
}
END_TEST

/* The sender raises its soft limit to hold a batch, within the hard limit. */
START_TEST(test_chunks_fd_room_raises_the_soft_limit)
{
    struct rlimit rl, low, now;
    char note[160];
    gpuipc_err e;

    ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
    if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < 400)
        ck_abort_msg("this test needs a hard RLIMIT_NOFILE of 400 or more, not %llu",
                     (unsigned long long)rl.rlim_max);
    low = rl;
    low.rlim_cur = 64;
    ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &low), 0);
    ck_assert_int_eq(gpuipc_chunks_fd_room(253, "a batch", note, sizeof(note), &e), 0);
    ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &now), 0);
    ck_assert_uint_ge(now.rlim_cur, 253 + 16);
    ck_assert_msg(strstr(note, "RLIMIT_NOFILE raised from 64 to") &&
                  strstr(note, "to hold 253 more FDs (a batch)"), "note: %s", note);
    /* With room enough, nothing changes and nothing is said. */
    ck_assert_int_eq(gpuipc_chunks_fd_room(10, "a batch", note, sizeof(note), &e), 0);
    ck_assert_str_eq(note, "");
}
END_TEST

/* Where the hard limit is too low and may not be raised, both numbers and
 * the fix are given. Without CAP_SYS_RESOURCE the raise must fail. */
START_TEST(test_chunks_fd_room_names_both_numbers)
{
    struct rlimit low = {.rlim_cur = 64, .rlim_max = 64};
    char note[160];
    gpuipc_err e;
    int rc;

    ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &low), 0);
    rc = gpuipc_chunks_fd_room(253, "a batch", note, sizeof(note), &e);
    if (rc == 0) {
        /* This process may raise hard limits (CAP_SYS_RESOURCE): it did. */
        ck_assert_msg(strstr(note, "(hard limit too)"), "note: %s", note);
        return;
    }
    ck_assert_int_eq(rc, -EMFILE);
    ck_assert_msg(strstr(e.msg, "253 more FDs (a batch) do not fit: RLIMIT_NOFILE is 64 "
                                "(hard 64)") &&
                  strstr(e.msg, "run with ulimit -n"), "reason: %s", e.msg);
}
END_TEST

Suite *chunks_suite(void)
{
    Suite *s = suite_create("chunks");
    TCase *plan = tcase_create("plan");
    TCase *room = tcase_create("fd_room");

    tcase_add_test(plan, test_chunks_plan_splits_and_rounds_up);
    tcase_add_test(plan, test_chunks_plan_refuses_the_impossible);
    tcase_add_test(plan, test_chunks_offer_round_trips);
    tcase_add_test(plan, test_chunks_offer_rejects_what_does_not_add_up);
    tcase_add_test(plan, test_chunks_slot_swaps_only_under_sabotage);
    tcase_add_test(room, test_chunks_fd_room_raises_the_soft_limit);
    th_add_unless_valgrind(room, test_chunks_fd_room_names_both_numbers,
                           "valgrind refuses to lower RLIMIT_NOFILE (it keeps FDs of its own at the top)");
    suite_add_tcase(s, plan);
    suite_add_tcase(s, room);
    return s;
}
