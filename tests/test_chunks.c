/* SPDX-License-Identifier: Apache-2.0 */
/* test_chunks.c: the plan that splits --size into chunks, its description in
 * an offer (and every malformed one), the chunk-order sabotage's slots, the
 * producer's FD room under a lowered RLIMIT_NOFILE, and the chunk engine's
 * bookkeeping over a fake kind of memory that fails where told. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "mech/chunks.h"
#include "core/step.h"
#include "core/units.h"
#include "session/role.h"
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

/* ---- the engine, over operations that count what they are asked ---- */

static struct {
    unsigned fail_create, fail_import; /* the chunk or FD number that fails; ~0u: none */
    unsigned reserves, creates, maps, grants, imports, unmaps, drops;
    uint64_t dropped[16];
} fake;

static int fake_gran(gpuipc_scenario *sc, uint64_t *gran, gpuipc_err *err)
{
    (void)sc;
    (void)err;
    *gran = 4096;
    return 0;
}

static int fake_reserve(gpuipc_scenario *sc, gpuipc_chunks *c, gpuipc_err *err)
{
    (void)sc;
    (void)err;
    fake.reserves++;
    c->base = 1ull << 40;
    return 0;
}

static int fake_create(gpuipc_chunks *c, unsigned i, gpuipc_err *err)
{
    if (i == fake.fail_create)
        return gpuipc_err_set(err, -EIO, "create refused");
    fake.creates++;
    c->h[i] = 1000 + i;
    return 0;
}

static int fake_map(gpuipc_chunks *c, unsigned slot, uint64_t h, gpuipc_err *err)
{
    (void)c;
    (void)slot;
    (void)h;
    (void)err;
    fake.maps++;
    return 0;
}

static int fake_grant(gpuipc_chunks *c, unsigned first, unsigned n, gpuipc_err *err)
{
    (void)c;
    (void)first;
    (void)n;
    (void)err;
    fake.grants++;
    return 0;
}

static int fake_export(gpuipc_scenario *sc, gpuipc_chunks *c, uint64_t h, gpuipc_err *err)
{
    int fd;

    (void)sc;
    (void)c;
    (void)h;
    fd = open("/dev/null", O_RDONLY | O_CLOEXEC);

    if (fd < 0)
        return gpuipc_err_set(err, -errno, "open /dev/null: %s", strerror(errno));
    return fd;
}

static int fake_import(gpuipc_scenario *sc, gpuipc_chunks *c, unsigned i, int fd, gpuipc_err *err)
{
    (void)sc;
    (void)fd;
    if (i == fake.fail_import)
        return gpuipc_err_set(err, -EIO, "import refused");
    fake.imports++;
    c->h[i] = 2000 + i;
    return 1;
}

static int fake_unmap(gpuipc_chunks *c, gpuipc_err *err)
{
    (void)c;
    (void)err;
    fake.unmaps++;
    return 0;
}

static int fake_drop(uint64_t h, gpuipc_err *err)
{
    (void)err;
    if (fake.drops < 16)
        fake.dropped[fake.drops] = h;
    fake.drops++;
    return 0;
}

static void fake_describe(gpuipc_chunks *c, gpuipc_buf *buf, int imported, uint64_t ns)
{
    (void)imported;
    (void)ns;
    buf->view.size = c->plan.total;
}

static const gpuipc_chunk_ops fake_ops = {
    .mech = "fake-chunks",
    .granularity = fake_gran,
    .reserve = fake_reserve,
    .create = fake_create,
    .map = fake_map,
    .grant = fake_grant,
    .export_fd = fake_export,
    .import_fd = fake_import,
    .unmap = fake_unmap,
    .drop = fake_drop,
    .describe = fake_describe,
};

/* A process env of role and a scenario in it, of chunks allocations. */
static void fake_env(gpuipc_env *env, gpuipc_scenario *sc, int role, unsigned chunks)
{
    memset(env, 0, sizeof(*env));
    memset(&fake, 0, sizeof(fake));
    fake.fail_create = fake.fail_import = ~0u;
    env->role = role;
    env->log.level = GPUIPC_LOG_QUIET;
    env->log.fd = 2;
    gpuipc_role_start(sc, env, NULL, NULL, "fake-chunks");
    sc->chunks = chunks;
}

/* A chunk that cannot be created: the ones before it are dropped, the range
 * is freed once, and the error names the chunk. */
START_TEST(test_chunks_engine_alloc_failure_releases_what_was_made)
{
    gpuipc_env env;
    gpuipc_scenario sc;
    gpuipc_buf buf;
    gpuipc_err e;

    fake_env(&env, &sc, GPUIPC_ROLE_PRODUCER, 8);
    fake.fail_create = 3;
    ck_assert_int_eq(gpuipc_chunks_alloc(&sc, &fake_ops, 64 * 4096, &buf, &e), -EIO);
    ck_assert_msg(strstr(e.msg, "chunk 3 of 8") && strstr(e.msg, "create refused"), "%s",
                  e.msg);
    ck_assert_uint_eq(fake.creates, 3);
    ck_assert_uint_eq(fake.maps, 3);
    ck_assert_uint_eq(fake.unmaps, 1);
    ck_assert_uint_eq(fake.drops, 3);
    ck_assert_uint_eq(fake.dropped[0], 1000);
    ck_assert_uint_eq(fake.dropped[2], 1002);
    ck_assert_ptr_null(buf.priv);
}
END_TEST

/* 300 chunks: an offer with 253 FDs, then one batch of 47; every FD is
 * new; the release drops each chunk once. */
START_TEST(test_chunks_engine_exports_in_batches_and_releases_every_chunk)
{
    int fds[GPUIPC_WIRE_MAX_FDS], before = th_fd_count();
    gpuipc_msg_offer offer;
    gpuipc_chunk_plan plan;
    unsigned n = 0;
    gpuipc_env env;
    gpuipc_scenario sc;
    gpuipc_buf buf;
    gpuipc_err e;

    fake_env(&env, &sc, GPUIPC_ROLE_PRODUCER, 300);
    ck_assert_int_eq(gpuipc_chunks_alloc(&sc, &fake_ops, 300 * 4096, &buf, &e), 0);
    ck_assert_uint_eq(fake.creates, 300);
    ck_assert_uint_eq(fake.grants, 1);
    ck_assert_uint_eq(buf.size, 300 * 4096);
    memset(&offer, 0, sizeof(offer));
    ck_assert_int_eq(gpuipc_chunks_export(&sc, &buf, &offer, fds, &n, &e), 0);
    ck_assert_uint_eq(n, GPUIPC_WIRE_MAX_FDS);
    ck_assert_int_eq(gpuipc_chunks_from_offer(&offer, &plan, &e), 0);
    ck_assert_uint_eq(plan.count, 300);
    gpuipc_wire_close_fds(fds, n);
    ck_assert_int_eq(gpuipc_chunks_export_more(&sc, &buf, n, fds, GPUIPC_WIRE_MAX_FDS, &n, &e),
                     0);
    ck_assert_uint_eq(n, 300 - GPUIPC_WIRE_MAX_FDS);
    gpuipc_wire_close_fds(fds, n);
    ck_assert_int_eq(gpuipc_chunks_export_more(&sc, &buf, 300, fds, 1, &n, &e), -EINVAL);
    ck_assert_int_eq(gpuipc_chunks_release(&sc, &buf, &e), 0);
    ck_assert_uint_eq(fake.drops, 300);
    ck_assert_uint_eq(fake.unmaps, 1);
    ck_assert_int_eq(th_fd_count(), before);
}
END_TEST

/* The consumer: an FD that cannot be imported releases the handles already
 * imported and the range; a batch beyond the offer is refused. */
START_TEST(test_chunks_engine_import_failure_releases_what_was_imported)
{
    int fds[4] = {0, 0, 0, 0};
    gpuipc_msg_offer offer;
    gpuipc_chunk_plan plan;
    gpuipc_env env;
    gpuipc_scenario sc;
    gpuipc_buf buf;
    gpuipc_err e;

    ck_assert_int_eq(gpuipc_chunks_plan(4 * 4096, 4, 4096, &plan, &e), 0);
    memset(&offer, 0, sizeof(offer));
    gpuipc_chunks_offer(&plan, 4096, &offer);
    fake_env(&env, &sc, GPUIPC_ROLE_CONSUMER, 0);
    fake.fail_import = 2;
    ck_assert_int_eq(gpuipc_chunks_import(&sc, &fake_ops, &offer, fds, 4, &buf, &e), -EIO);
    ck_assert_msg(strstr(e.msg, "chunk 2") && strstr(e.msg, "import refused"), "%s", e.msg);
    ck_assert_uint_eq(fake.imports, 2);
    ck_assert_uint_eq(fake.drops, 2);
    ck_assert_uint_eq(fake.dropped[1], 2001);
    ck_assert_uint_eq(fake.unmaps, 1);
    ck_assert_ptr_null(buf.priv);

    fake_env(&env, &sc, GPUIPC_ROLE_CONSUMER, 0);
    ck_assert_int_eq(gpuipc_chunks_import(&sc, &fake_ops, &offer, fds, 2, &buf, &e), 0);
    ck_assert_int_eq(gpuipc_chunks_import_more(&sc, &buf, 2, fds, 3, &e), -EPROTO);
    ck_assert_msg(strstr(e.msg, "the offer has 4 chunks"), "%s", e.msg);
    ck_assert_int_eq(gpuipc_chunks_import_more(&sc, &buf, 2, fds, 2, &e), 0);
    ck_assert_uint_eq(fake.grants, 2);
    ck_assert_int_eq(gpuipc_chunks_release(&sc, &buf, &e), 0);
    ck_assert_uint_eq(fake.drops, 4);
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
    plan = tcase_create("engine");
    tcase_add_test(plan, test_chunks_engine_alloc_failure_releases_what_was_made);
    tcase_add_test(plan, test_chunks_engine_exports_in_batches_and_releases_every_chunk);
    tcase_add_test(plan, test_chunks_engine_import_failure_releases_what_was_imported);
    suite_add_tcase(s, plan);
    return s;
}
