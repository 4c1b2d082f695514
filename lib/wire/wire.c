/* SPDX-License-Identifier: Apache-2.0 */
/* wire.c: framing, validation and FD passing for the producer/consumer protocol. */
#include "wire/wire.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/account.h"
#include "core/clock.h"
#include "core/names.h"
#include "core/step.h"
#include "core/stop.h"
#include "core/units.h"
#include "core/watch.h"

#define STATUS_LEN (4 + 4 + GPUIPC_WIRE_REASON_LEN + 4 + 4 + GPUIPC_WIRE_CALL_LEN)
#define CHECK_LEN (7 * 8)
#define WRITTEN_LEN (3 * 8)
#define USAGE_LEN (4 * 8)
/* The facts (put_facts): namespaces, 8 numbers, the kernel release, 9 more
 * numbers and the boot id. */
#define FACTS_LEN (8 * GPUIPC_NS_COUNT + 32 + GPUIPC_FACTS_KERNEL_LEN + 36 + GPUIPC_FACTS_BOOT_ID_LEN)

/* Each type's payload length and the most FDs it may carry. Only OFFER and
 * FDS carry FDs; how many is the mechanism's business (a VMM allocation needs
 * one, chunked memory one per chunk in batches of up to 253, a legacy IPC
 * handle none). */
static const struct {
    const char *name;
    size_t len;
    unsigned max_fds;
} types[GPUIPC_MSG_TYPE_MAX + 1] = {
    [GPUIPC_MSG_HELLO] = {"HELLO", 12 + GPUIPC_WIRE_NONCE_LEN + 8 + GPUIPC_WIRE_MAC_LEN + FACTS_LEN, 0},
    [GPUIPC_MSG_BEGIN] = {"BEGIN", GPUIPC_WIRE_NAME_LEN + 4 + 4 + 4 + 8 + 2 * GPUIPC_UUID_LEN,
                          0},
    [GPUIPC_MSG_READY] = {"READY", STATUS_LEN, 0},
    [GPUIPC_MSG_OFFER] = {"OFFER",
                          STATUS_LEN + 3 * 8 + GPUIPC_UUID_LEN + 4 + GPUIPC_WIRE_BLOB_LEN + 4 +
                              WRITTEN_LEN,
                          GPUIPC_WIRE_MAX_FDS},
    [GPUIPC_MSG_REPORT] = {"REPORT", STATUS_LEN + CHECK_LEN + 8 + 4 + WRITTEN_LEN, 0},
    [GPUIPC_MSG_END] = {"END", STATUS_LEN + CHECK_LEN, 0},
    [GPUIPC_MSG_END_ACK] = {"END_ACK", STATUS_LEN + USAGE_LEN, 0},
    [GPUIPC_MSG_BYE] = {"BYE", 4 * 4, 0},
    [GPUIPC_MSG_PROBE] = {"PROBE", GPUIPC_WIRE_NAME_LEN + 2 * GPUIPC_UUID_LEN, 0},
    [GPUIPC_MSG_PROBE_ACK] = {"PROBE_ACK", STATUS_LEN, 0},
    [GPUIPC_MSG_FDS] = {"FDS", STATUS_LEN + 4, GPUIPC_WIRE_MAX_FDS},
    [GPUIPC_MSG_TIMES] = {"TIMES", 4 * 4 + 8 * GPUIPC_WIRE_TIMES_MAX, 0},
    [GPUIPC_MSG_BYE_ACK] = {"BYE_ACK", STATUS_LEN, 0},
    [GPUIPC_MSG_AUTH] = {"AUTH", 4 + GPUIPC_WIRE_MAC_LEN + FACTS_LEN, 0},
};

const char *gpuipc_wire_type_name(unsigned type)
{
    return (type >= 1 && type <= GPUIPC_MSG_TYPE_MAX) ? types[type].name : "unknown";
}

void gpuipc_wire_status(gpuipc_status *st, int code, unsigned step, const char *reason)
{
    memset(st, 0, sizeof(*st));
    st->code = code;
    st->step = step;
    gpuipc_err_copy_printable(st->reason, sizeof(st->reason), reason ? reason : "");
}

void gpuipc_wire_status_what(gpuipc_status *st, const gpuipc_err *e)
{
    size_t i;

    st->errnum = e->errnum;
    st->cu = e->cu;
    /* A call name is an identifier; anything else would not travel. */
    for (i = 0; i + 1 < sizeof(st->call) && e->call[i] != '\0'; i++)
        st->call[i] = isalnum((unsigned char)e->call[i]) || e->call[i] == '_' ? e->call[i] : '-';
    st->call[i] = '\0';
}

/* A failure at step in st, what failed taken from e (NULL: nothing), unless
 * st holds one already. */
static void status_vfail(gpuipc_status *st, unsigned step, const gpuipc_err *e, const char *fmt,
                         va_list ap)
{
    char text[GPUIPC_WIRE_REASON_LEN];

    if (st->code == GPUIPC_FAIL)
        return;
    vsnprintf(text, sizeof(text), fmt, ap);
    gpuipc_wire_status(st, GPUIPC_FAIL, step, text);
    if (e != NULL)
        gpuipc_wire_status_what(st, e);
}

void gpuipc_wire_status_fail(gpuipc_status *st, unsigned step, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    status_vfail(st, step, NULL, fmt, ap);
    va_end(ap);
}

void gpuipc_wire_status_err(gpuipc_status *st, unsigned step, const gpuipc_err *e,
                            const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    status_vfail(st, step, e, fmt, ap);
    va_end(ap);
}

/* ---- encoding -------------------------------------------------------------------------- */

typedef struct cursor {
    uint8_t *p;
    const uint8_t *q;
} cursor;

static void put_u16(cursor *c, uint16_t v)
{
    c->p[0] = (uint8_t)v;
    c->p[1] = (uint8_t)(v >> 8);
    c->p += 2;
}

static void put_u32(cursor *c, uint32_t v)
{
    put_u16(c, (uint16_t)v);
    put_u16(c, (uint16_t)(v >> 16));
}

static void put_u64(cursor *c, uint64_t v)
{
    put_u32(c, (uint32_t)v);
    put_u32(c, (uint32_t)(v >> 32));
}

static void put_bytes(cursor *c, const void *src, size_t n)
{
    memcpy(c->p, src, n);
    c->p += n;
}

static void put_status(cursor *c, const gpuipc_status *st)
{
    put_u32(c, (uint32_t)st->code);
    put_u32(c, st->step);
    put_bytes(c, st->reason, sizeof(st->reason));
    put_u32(c, (uint32_t)st->errnum);
    put_u32(c, (uint32_t)st->cu);
    put_bytes(c, st->call, sizeof(st->call));
}

static void put_check(cursor *c, const gpuipc_check *k)
{
    put_u64(c, k->words);
    put_u64(c, k->mismatches);
    put_u64(c, k->first_bad);
    put_u64(c, k->expected);
    put_u64(c, k->got);
    put_u64(c, k->digest);
    put_u64(c, k->ns);
}

static void put_written(cursor *c, const gpuipc_written *w)
{
    put_u64(c, w->words);
    put_u64(c, w->digest);
    put_u64(c, w->ns);
}

static void put_usage(cursor *c, const gpuipc_usage_figures *u)
{
    put_u64(c, u->fds);
    put_u64(c, u->objects);
    put_u64(c, u->shmem);
    put_u64(c, u->gpu);
}

static void put_facts(cursor *c, const gpuipc_facts *f)
{
    int i;

    for (i = 0; i < GPUIPC_NS_COUNT; i++)
        put_u64(c, f->ns[i]);
    put_u32(c, f->uid);
    put_u32(c, f->seccomp);
    put_u32(c, f->yama);
    put_u32(c, f->dumpable);
    put_u32(c, f->nofile_soft);
    put_u32(c, f->nofile_hard);
    put_u64(c, f->cap_eff);
    put_bytes(c, f->kernel, GPUIPC_FACTS_KERNEL_LEN);
    put_u32(c, f->flags);
    put_u64(c, f->shm_dev);
    put_u64(c, f->shm_size);
    put_u64(c, f->shm_avail);
    put_u32(c, f->ctl_errno);
    put_u32(c, f->uvm_errno);
    put_bytes(c, f->boot_id, GPUIPC_FACTS_BOOT_ID_LEN);
}

size_t gpuipc_wire_encode(const gpuipc_msg *msg, uint32_t seq, uint8_t *buf, size_t cap)
{
    cursor c = {.p = buf};
    size_t len;

    if (msg->type < 1 || msg->type > GPUIPC_MSG_TYPE_MAX)
        return 0;
    len = types[msg->type].len;
    if (cap < GPUIPC_WIRE_HEADER_LEN + len)
        return 0;
    put_u32(&c, GPUIPC_WIRE_MAGIC);
    put_u16(&c, GPUIPC_WIRE_VERSION);
    put_u16(&c, msg->type);
    put_u32(&c, seq);
    put_u32(&c, (uint32_t)len);
    put_u16(&c, msg->nfds);
    put_u16(&c, 0);
    switch (msg->type) {
    case GPUIPC_MSG_HELLO:
        put_u32(&c, msg->u.hello.pid);
        put_u32(&c, msg->u.hello.role);
        put_u32(&c, msg->u.hello.flags);
        put_bytes(&c, msg->u.hello.nonce, GPUIPC_WIRE_NONCE_LEN);
        put_u32(&c, msg->u.hello.rank);
        put_u32(&c, msg->u.hello.peer_rank);
        put_bytes(&c, msg->u.hello.mac, GPUIPC_WIRE_MAC_LEN);
        put_facts(&c, &msg->u.hello.facts);
        break;
    case GPUIPC_MSG_AUTH:
        put_u32(&c, msg->u.auth.pid);
        put_bytes(&c, msg->u.auth.mac, GPUIPC_WIRE_MAC_LEN);
        put_facts(&c, &msg->u.auth.facts);
        break;
    case GPUIPC_MSG_BEGIN:
        put_bytes(&c, msg->u.begin.mech, GPUIPC_WIRE_NAME_LEN);
        put_u32(&c, msg->u.begin.index);
        put_u32(&c, msg->u.begin.flags);
        put_u32(&c, msg->u.begin.iters);
        put_u64(&c, msg->u.begin.size);
        put_bytes(&c, msg->u.begin.uuid, GPUIPC_UUID_LEN);
        put_bytes(&c, msg->u.begin.consumer_uuid, GPUIPC_UUID_LEN);
        break;
    case GPUIPC_MSG_READY:
        put_status(&c, &msg->u.ready);
        break;
    case GPUIPC_MSG_OFFER:
        put_status(&c, &msg->u.offer.st);
        put_u64(&c, msg->u.offer.size);
        put_u64(&c, msg->u.offer.granularity);
        put_u64(&c, msg->u.offer.seed);
        put_bytes(&c, msg->u.offer.uuid, GPUIPC_UUID_LEN);
        put_u32(&c, msg->u.offer.blob_len);
        put_bytes(&c, msg->u.offer.blob, GPUIPC_WIRE_BLOB_LEN);
        put_u32(&c, msg->u.offer.fds_total);
        put_written(&c, &msg->u.offer.wrote);
        break;
    case GPUIPC_MSG_REPORT:
        put_status(&c, &msg->u.report.st);
        put_check(&c, &msg->u.report.check);
        put_u64(&c, msg->u.report.seed);
        put_u32(&c, msg->u.report.flags);
        put_written(&c, &msg->u.report.wrote);
        break;
    case GPUIPC_MSG_END:
        put_status(&c, &msg->u.end.st);
        put_check(&c, &msg->u.end.check);
        break;
    case GPUIPC_MSG_END_ACK:
        put_status(&c, &msg->u.end_ack.st);
        put_usage(&c, &msg->u.end_ack.usage);
        break;
    case GPUIPC_MSG_BYE:
        put_u32(&c, (uint32_t)msg->u.bye.code);
        put_u32(&c, msg->u.bye.passed);
        put_u32(&c, msg->u.bye.failed);
        put_u32(&c, msg->u.bye.skipped);
        break;
    case GPUIPC_MSG_BYE_ACK:
        put_status(&c, &msg->u.bye_ack);
        break;
    case GPUIPC_MSG_PROBE:
        put_bytes(&c, msg->u.probe.mech, GPUIPC_WIRE_NAME_LEN);
        put_bytes(&c, msg->u.probe.uuid, GPUIPC_UUID_LEN);
        put_bytes(&c, msg->u.probe.consumer_uuid, GPUIPC_UUID_LEN);
        break;
    case GPUIPC_MSG_PROBE_ACK:
        put_status(&c, &msg->u.probe_ack);
        break;
    case GPUIPC_MSG_FDS:
        put_status(&c, &msg->u.fds.st);
        put_u32(&c, msg->u.fds.first);
        break;
    case GPUIPC_MSG_TIMES: {
        unsigned i;

        put_u32(&c, msg->u.times.series);
        put_u32(&c, msg->u.times.first);
        put_u32(&c, msg->u.times.count);
        put_u32(&c, msg->u.times.flags);
        for (i = 0; i < GPUIPC_WIRE_TIMES_MAX; i++)
            put_u64(&c, msg->u.times.v[i]);
        break;
    }
    }
    return (size_t)(c.p - buf);
}

/* ---- decoding -------------------------------------------------------------------------- */

static uint16_t get_u16(cursor *c)
{
    uint16_t v = (uint16_t)(c->q[0] | (c->q[1] << 8));

    c->q += 2;
    return v;
}

static uint32_t get_u32(cursor *c)
{
    uint32_t lo = get_u16(c);

    return lo | ((uint32_t)get_u16(c) << 16);
}

static uint64_t get_u64(cursor *c)
{
    uint64_t lo = get_u32(c);

    return lo | ((uint64_t)get_u32(c) << 32);
}

static void get_bytes(cursor *c, void *dst, size_t n)
{
    memcpy(dst, c->q, n);
    c->q += n;
}

/* A text field must hold a NUL, and only printable ASCII before it, so that
 * nothing a peer sends can run off the end or drive the terminal. */
static int check_text(const char *field, const char *s, size_t cap, gpuipc_err *err)
{
    size_t i;

    for (i = 0; i < cap && s[i] != '\0'; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch < 0x20 || ch >= 0x7f)
            return gpuipc_err_set(err, -EPROTO, "%s has a non-printable byte 0x%02x at %zu",
                                  field, ch, i);
    }
    if (i == cap)
        return gpuipc_err_set(err, -EPROTO, "%s is not NUL-terminated", field);
    return 0;
}

static int get_status(cursor *c, gpuipc_status *st, gpuipc_err *err)
{
    size_t i;
    int rc;

    st->code = (int32_t)get_u32(c);
    st->step = get_u32(c);
    get_bytes(c, st->reason, sizeof(st->reason));
    st->errnum = (int32_t)get_u32(c);
    st->cu = (int32_t)get_u32(c);
    get_bytes(c, st->call, sizeof(st->call));
    if (st->code != GPUIPC_PASS && st->code != GPUIPC_FAIL && st->code != GPUIPC_SKIP)
        return gpuipc_err_set(err, -EPROTO, "status code %d is none of 0, 1, 77", st->code);
    if (st->step >= GPUIPC_STEP_COUNT)
        return gpuipc_err_set(err, -EPROTO, "status step %u is unknown", st->step);
    if (st->errnum < 0 || st->errnum > 4095)
        return gpuipc_err_set(err, -EPROTO, "status errno %d is not 0 to 4095", st->errnum);
    if (st->cu < 0)
        return gpuipc_err_set(err, -EPROTO, "status CUresult %d is negative", st->cu);
    if ((rc = check_text("status reason", st->reason, sizeof(st->reason), err)) < 0 ||
        (rc = check_text("status call", st->call, sizeof(st->call), err)) < 0)
        return rc;
    for (i = 0; st->call[i] != '\0'; i++)
        if (!isalnum((unsigned char)st->call[i]) && st->call[i] != '_' && st->call[i] != '-')
            return gpuipc_err_set(err, -EPROTO, "status call has byte 0x%02x at %zu (only "
                                  "A-Z, a-z, 0-9, _ and -)", (unsigned char)st->call[i], i);
    return 0;
}

static int get_check(cursor *c, gpuipc_check *k, gpuipc_err *err)
{
    k->words = get_u64(c);
    k->mismatches = get_u64(c);
    k->first_bad = get_u64(c);
    k->expected = get_u64(c);
    k->got = get_u64(c);
    k->digest = get_u64(c);
    k->ns = get_u64(c);
    if (k->mismatches > k->words)
        return gpuipc_err_set(err, -EPROTO, "check counts %llu mismatches in %llu words",
                              (unsigned long long)k->mismatches,
                              (unsigned long long)k->words);
    return 0;
}

/* The words of a fill can be no more than the largest buffer holds. */
static int get_written(cursor *c, gpuipc_written *w, gpuipc_err *err)
{
    w->words = get_u64(c);
    w->digest = get_u64(c);
    w->ns = get_u64(c);
    if (w->words > GPUIPC_SIZE_MAX / 8)
        return gpuipc_err_set(err, -EPROTO, "%llu words written, more than 16 TiB holds",
                              (unsigned long long)w->words);
    return 0;
}

static void get_usage(cursor *c, gpuipc_usage_figures *u)
{
    u->fds = get_u64(c);
    u->objects = get_u64(c);
    u->shmem = get_u64(c);
    u->gpu = get_u64(c);
}

/* BYE: an exit status the producer can decide (0, 1, 2, 77) and counts that
 * no session can exceed. */
static int decode_bye(cursor *c, gpuipc_msg_bye *b, gpuipc_err *err)
{
    b->code = (int32_t)get_u32(c);
    b->passed = get_u32(c);
    b->failed = get_u32(c);
    b->skipped = get_u32(c);
    if (b->code != GPUIPC_PASS && b->code != GPUIPC_FAIL && b->code != GPUIPC_USAGE &&
        b->code != GPUIPC_SKIP)
        return gpuipc_err_set(err, -EPROTO, "verdict %d is none of 0, 1, 2, 77", b->code);
    if (b->passed > GPUIPC_BYE_MAX_SCENARIOS || b->failed > GPUIPC_BYE_MAX_SCENARIOS ||
        b->skipped > GPUIPC_BYE_MAX_SCENARIOS)
        return gpuipc_err_set(err, -EPROTO, "scenario counts %u, %u, %u exceed %d", b->passed,
                              b->failed, b->skipped, GPUIPC_BYE_MAX_SCENARIOS);
    /* A verdict its own counts deny. A producer with nothing passed says
     * SKIP, not PASS (--bench's measurements count as passed scenarios). */
    if (b->code == GPUIPC_PASS && b->failed > 0)
        return gpuipc_err_set(err, -EPROTO, "a self-contradictory message: BYE says PASS, but "
                              "counts %u failed", b->failed);
    if (b->code == GPUIPC_PASS && b->passed == 0)
        return gpuipc_err_set(err, -EPROTO, "a self-contradictory message: BYE says PASS, but "
                              "counts no scenario passed");
    if (b->code == GPUIPC_SKIP && (b->passed > 0 || b->failed > 0))
        return gpuipc_err_set(err, -EPROTO, "a self-contradictory message: BYE says SKIP "
                              "(nothing could run), but counts %u passed and %u failed",
                              b->passed, b->failed);
    return 0;
}

/* A check that a status of PASS comes with: no word found bad. */
static int check_consistent(const char *what, const gpuipc_status *st, const gpuipc_check *k,
                            gpuipc_err *err)
{
    if (st->code == GPUIPC_PASS && k->mismatches > 0)
        return gpuipc_err_set(err, -EPROTO, "a self-contradictory message: %s says PASS, but "
                              "its check counts %llu mismatches in %llu words", what,
                              (unsigned long long)k->mismatches, (unsigned long long)k->words);
    return 0;
}

static int check_size(const char *field, uint64_t size, gpuipc_err *err)
{
    if (size == 0)
        return gpuipc_err_set(err, -EPROTO, "%s is 0", field);
    if (size > GPUIPC_SIZE_MAX)
        return gpuipc_err_set(err, -EPROTO, "%s %llu exceeds the 16 TiB limit", field,
                              (unsigned long long)size);
    return 0;
}

static int check_name(const char *name, gpuipc_err *err)
{
    size_t i;

    if (name[0] == '\0')
        return gpuipc_err_set(err, -EPROTO, "mechanism name is empty");
    for (i = 0; i < GPUIPC_WIRE_NAME_LEN && name[i] != '\0'; i++) {
        char ch = name[i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '-'))
            return gpuipc_err_set(err, -EPROTO,
                                  "mechanism name has byte 0x%02x at %zu (only a-z, 0-9, -)",
                                  (unsigned char)ch, i);
    }
    if (i == GPUIPC_WIRE_NAME_LEN)
        return gpuipc_err_set(err, -EPROTO, "mechanism name is not NUL-terminated");
    return 0;
}

static int decode_offer(cursor *c, gpuipc_msg *msg, gpuipc_err *err)
{
    gpuipc_msg_offer *o = &msg->u.offer;
    int rc;

    if ((rc = get_status(c, &o->st, err)) < 0)
        return rc;
    o->size = get_u64(c);
    o->granularity = get_u64(c);
    o->seed = get_u64(c);
    get_bytes(c, o->uuid, GPUIPC_UUID_LEN);
    o->blob_len = get_u32(c);
    get_bytes(c, o->blob, GPUIPC_WIRE_BLOB_LEN);
    o->fds_total = get_u32(c);
    if ((rc = get_written(c, &o->wrote, err)) < 0)
        return rc;
    if (o->blob_len > GPUIPC_WIRE_BLOB_LEN)
        return gpuipc_err_set(err, -EPROTO, "blob length %u exceeds %d", o->blob_len,
                              GPUIPC_WIRE_BLOB_LEN);
    if (o->st.code != GPUIPC_PASS) {
        if (msg->nfds != 0 || o->fds_total != 0)
            return gpuipc_err_set(err, -EPROTO, "a failed offer carries %u FDs and announces "
                                  "%u", msg->nfds, o->fds_total);
        return 0;
    }
    if (o->fds_total > GPUIPC_WIRE_MAX_OFFER_FDS)
        return gpuipc_err_set(err, -EPROTO, "offer announces %u FDs, at most %d allowed",
                              o->fds_total, GPUIPC_WIRE_MAX_OFFER_FDS);
    if (msg->nfds > o->fds_total)
        return gpuipc_err_set(err, -EPROTO, "offer carries %u FDs but announces only %u in all",
                              msg->nfds, o->fds_total);

    if ((rc = check_size("size", o->size, err)) < 0)
        return rc;
    if (o->granularity == 0 || (o->granularity & (o->granularity - 1)) != 0)
        return gpuipc_err_set(err, -EPROTO, "granularity %llu is not a power of two",
                              (unsigned long long)o->granularity);
    if (o->size % o->granularity != 0)
        return gpuipc_err_set(err, -EPROTO, "size %llu is not a multiple of granularity %llu",
                              (unsigned long long)o->size,
                              (unsigned long long)o->granularity);
    return 0;
}

/* BEGIN's --bench fields: known flags; an iteration count exactly when the
 * bandwidth runs are asked for, and those only with TIMES to report them. */
static int check_begin_bench(const gpuipc_msg_begin *b, gpuipc_err *err)
{
    if (b->flags & ~(GPUIPC_BEGIN_TIMES | GPUIPC_BEGIN_BANDWIDTH))
        return gpuipc_err_set(err, -EPROTO, "unknown flags 0x%x", b->flags);
    if ((b->flags & GPUIPC_BEGIN_BANDWIDTH) && !(b->flags & GPUIPC_BEGIN_TIMES))
        return gpuipc_err_set(err, -EPROTO, "bandwidth runs asked for without TIMES to "
                              "report them");
    if ((b->flags & GPUIPC_BEGIN_BANDWIDTH) &&
        (b->iters == 0 || b->iters > GPUIPC_BENCH_ITERS_MAX))
        return gpuipc_err_set(err, -EPROTO, "%u iterations, outside 1 to %d", b->iters,
                              GPUIPC_BENCH_ITERS_MAX);
    if (!(b->flags & GPUIPC_BEGIN_BANDWIDTH) && b->iters != 0)
        return gpuipc_err_set(err, -EPROTO, "%u iterations without bandwidth runs", b->iters);
    return 0;
}

/* TIMES: a known series, a count that fits, a slice inside the series, and
 * nothing in the unused values. */
static int decode_times(cursor *c, gpuipc_msg_times *t, gpuipc_err *err)
{
    unsigned i;

    t->series = get_u32(c);
    t->first = get_u32(c);
    t->count = get_u32(c);
    t->flags = get_u32(c);
    for (i = 0; i < GPUIPC_WIRE_TIMES_MAX; i++)
        t->v[i] = get_u64(c);
    if (t->series >= GPUIPC_WIRE_SERIES_MAX)
        return gpuipc_err_set(err, -EPROTO, "series %u is unknown (0 to %d)", t->series,
                              GPUIPC_WIRE_SERIES_MAX - 1);
    if (t->count == 0 || t->count > GPUIPC_WIRE_TIMES_MAX)
        return gpuipc_err_set(err, -EPROTO, "%u values, outside 1 to %d", t->count,
                              GPUIPC_WIRE_TIMES_MAX);
    if (t->first > GPUIPC_WIRE_SERIES_LEN - t->count)
        return gpuipc_err_set(err, -EPROTO, "values %u to %u lie beyond a series' %d", t->first,
                              t->first + t->count - 1, GPUIPC_WIRE_SERIES_LEN);
    if (t->flags & ~GPUIPC_TIMES_LAST)
        return gpuipc_err_set(err, -EPROTO, "unknown flags 0x%x", t->flags);
    for (i = t->count; i < GPUIPC_WIRE_TIMES_MAX; i++)
        if (t->v[i] != 0)
            return gpuipc_err_set(err, -EPROTO, "value %u is set beyond the count %u", i,
                                  t->count);
    return 0;
}

/* A 32-bit fact must be one of its values, or unknown. */
static int check_fact(const char *name, uint32_t v, uint32_t max, gpuipc_err *err)
{
    if (v > max && v != GPUIPC_FACTS_UNKNOWN)
        return gpuipc_err_set(err, -EPROTO, "facts: %s %u is not 0 to %u", name, v, max);
    return 0;
}

static int get_facts(cursor *c, gpuipc_facts *f, uint32_t pid, gpuipc_err *err)
{
    int i, rc;

    memset(f, 0, sizeof(*f));
    f->pid = pid;
    for (i = 0; i < GPUIPC_NS_COUNT; i++)
        f->ns[i] = get_u64(c);
    f->uid = get_u32(c);
    f->seccomp = get_u32(c);
    f->yama = get_u32(c);
    f->dumpable = get_u32(c);
    f->nofile_soft = get_u32(c);
    f->nofile_hard = get_u32(c);
    f->cap_eff = get_u64(c);
    get_bytes(c, f->kernel, GPUIPC_FACTS_KERNEL_LEN);
    f->flags = get_u32(c);
    f->shm_dev = get_u64(c);
    f->shm_size = get_u64(c);
    f->shm_avail = get_u64(c);
    f->ctl_errno = get_u32(c);
    f->uvm_errno = get_u32(c);
    get_bytes(c, f->boot_id, GPUIPC_FACTS_BOOT_ID_LEN);
    if (f->flags & ~GPUIPC_FACT_FLAGS_ALL)
        return gpuipc_err_set(err, -EPROTO, "facts: unknown flags 0x%x", f->flags);
    if (f->shm_avail > f->shm_size)
        return gpuipc_err_set(err, -EPROTO, "facts: /dev/shm has %llu bytes free of %llu",
                              (unsigned long long)f->shm_avail,
                              (unsigned long long)f->shm_size);
    if ((rc = check_fact("nvidiactl errno", f->ctl_errno, 4095, err)) < 0 ||
        (rc = check_fact("nvidia-uvm errno", f->uvm_errno, 4095, err)) < 0)
        return rc;
    if ((rc = check_fact("seccomp", f->seccomp, 2, err)) < 0 ||
        (rc = check_fact("ptrace_scope", f->yama, 3, err)) < 0 ||
        (rc = check_fact("dumpable", f->dumpable, 2, err)) < 0)
        return rc;
    return check_text("facts: kernel release", f->kernel, sizeof(f->kernel), err);
}

static int decode_payload(cursor *c, gpuipc_msg *msg, gpuipc_err *err)
{
    int rc;

    switch (msg->type) {
    case GPUIPC_MSG_HELLO:
        msg->u.hello.pid = get_u32(c);
        msg->u.hello.role = get_u32(c);
        msg->u.hello.flags = get_u32(c);
        get_bytes(c, msg->u.hello.nonce, GPUIPC_WIRE_NONCE_LEN);
        msg->u.hello.rank = get_u32(c);
        msg->u.hello.peer_rank = get_u32(c);
        get_bytes(c, msg->u.hello.mac, GPUIPC_WIRE_MAC_LEN);
        if (msg->u.hello.pid == 0 || msg->u.hello.pid > INT32_MAX)
            return gpuipc_err_set(err, -EPROTO, "pid %u is not a process id",
                                  msg->u.hello.pid);
        if (msg->u.hello.role != GPUIPC_ROLE_PRODUCER &&
            msg->u.hello.role != GPUIPC_ROLE_CONSUMER)
            return gpuipc_err_set(err, -EPROTO, "role %u is unknown", msg->u.hello.role);
        if (msg->u.hello.flags & ~GPUIPC_HELLO_NEEDS_CUDA)
            return gpuipc_err_set(err, -EPROTO, "unknown flags 0x%x", msg->u.hello.flags);
        return get_facts(c, &msg->u.hello.facts, msg->u.hello.pid, err);
    case GPUIPC_MSG_AUTH:
        msg->u.auth.pid = get_u32(c);
        get_bytes(c, msg->u.auth.mac, GPUIPC_WIRE_MAC_LEN);
        if (msg->u.auth.pid == 0 || msg->u.auth.pid > INT32_MAX)
            return gpuipc_err_set(err, -EPROTO, "pid %u is not a process id", msg->u.auth.pid);
        return get_facts(c, &msg->u.auth.facts, msg->u.auth.pid, err);
    case GPUIPC_MSG_BEGIN:
        get_bytes(c, msg->u.begin.mech, GPUIPC_WIRE_NAME_LEN);
        msg->u.begin.index = get_u32(c);
        msg->u.begin.flags = get_u32(c);
        msg->u.begin.iters = get_u32(c);
        msg->u.begin.size = get_u64(c);
        get_bytes(c, msg->u.begin.uuid, GPUIPC_UUID_LEN);
        get_bytes(c, msg->u.begin.consumer_uuid, GPUIPC_UUID_LEN);
        if ((rc = check_name(msg->u.begin.mech, err)) < 0)
            return rc;
        if ((rc = check_begin_bench(&msg->u.begin, err)) < 0)
            return rc;
        return check_size("size", msg->u.begin.size, err);
    case GPUIPC_MSG_READY:
        return get_status(c, &msg->u.ready, err);
    case GPUIPC_MSG_OFFER:
        return decode_offer(c, msg, err);
    case GPUIPC_MSG_REPORT:
        if ((rc = get_status(c, &msg->u.report.st, err)) < 0)
            return rc;
        if ((rc = get_check(c, &msg->u.report.check, err)) < 0)
            return rc;
        msg->u.report.seed = get_u64(c);
        msg->u.report.flags = get_u32(c);
        if ((rc = get_written(c, &msg->u.report.wrote, err)) < 0)
            return rc;
        if (msg->u.report.flags & ~GPUIPC_REPORT_WROTE)
            return gpuipc_err_set(err, -EPROTO, "unknown flags 0x%x", msg->u.report.flags);
        return check_consistent("REPORT", &msg->u.report.st, &msg->u.report.check, err);
    case GPUIPC_MSG_END:
        if ((rc = get_status(c, &msg->u.end.st, err)) < 0)
            return rc;
        if ((rc = get_check(c, &msg->u.end.check, err)) < 0)
            return rc;
        return check_consistent("END", &msg->u.end.st, &msg->u.end.check, err);
    case GPUIPC_MSG_END_ACK:
        if ((rc = get_status(c, &msg->u.end_ack.st, err)) < 0)
            return rc;
        get_usage(c, &msg->u.end_ack.usage);
        return 0;
    case GPUIPC_MSG_BYE:
        return decode_bye(c, &msg->u.bye, err);
    case GPUIPC_MSG_BYE_ACK:
        return get_status(c, &msg->u.bye_ack, err);
    case GPUIPC_MSG_PROBE:
        get_bytes(c, msg->u.probe.mech, GPUIPC_WIRE_NAME_LEN);
        get_bytes(c, msg->u.probe.uuid, GPUIPC_UUID_LEN);
        get_bytes(c, msg->u.probe.consumer_uuid, GPUIPC_UUID_LEN);
        return check_name(msg->u.probe.mech, err);
    case GPUIPC_MSG_PROBE_ACK:
        return get_status(c, &msg->u.probe_ack, err);
    case GPUIPC_MSG_FDS:
        if ((rc = get_status(c, &msg->u.fds.st, err)) < 0)
            return rc;
        msg->u.fds.first = get_u32(c);
        if (msg->u.fds.first == 0 || msg->u.fds.first >= GPUIPC_WIRE_MAX_OFFER_FDS)
            return gpuipc_err_set(err, -EPROTO, "first FD number %u is outside 1 to %d",
                                  msg->u.fds.first, GPUIPC_WIRE_MAX_OFFER_FDS - 1);
        if (msg->u.fds.st.code == GPUIPC_PASS && msg->nfds == 0)
            return gpuipc_err_set(err, -EPROTO, "a batch that reports success carries no FDs");
        if (msg->u.fds.st.code != GPUIPC_PASS && msg->nfds != 0)
            return gpuipc_err_set(err, -EPROTO, "a failed batch carries %u FDs", msg->nfds);
        return 0;
    case GPUIPC_MSG_TIMES:
        return decode_times(c, &msg->u.times, err);
    default:
        return 0;
    }
}

static void describe_accept(unsigned accept, char *buf, size_t len)
{
    unsigned t;
    size_t used = 0;

    buf[0] = '\0';
    for (t = 1; t <= GPUIPC_MSG_TYPE_MAX; t++) {
        if (!(accept & GPUIPC_MSG_BIT(t)))
            continue;
        used += (size_t)snprintf(buf + used, len - used, "%s%s", used ? " or " : "",
                                 types[t].name);
        if (used >= len)
            return;
    }
}

int gpuipc_wire_decode(const uint8_t *buf, size_t len, unsigned nfds, uint32_t expect_seq,
                       unsigned accept, gpuipc_msg *msg, gpuipc_err *err)
{
    cursor c = {.q = buf};
    uint32_t magic, seq, plen;
    uint16_t version, type, hdr_fds, reserved;
    char want[64];
    int rc;

    memset(msg, 0, sizeof(*msg));
    if (len < GPUIPC_WIRE_HEADER_LEN)
        return gpuipc_err_set(err, -EPROTO, "short message: %zu bytes, the header alone is %d",
                              len, GPUIPC_WIRE_HEADER_LEN);
    magic = get_u32(&c);
    version = get_u16(&c);
    type = get_u16(&c);
    seq = get_u32(&c);
    plen = get_u32(&c);
    hdr_fds = get_u16(&c);
    reserved = get_u16(&c);
    if (magic != GPUIPC_WIRE_MAGIC)
        return gpuipc_err_set(err, -EPROTO, "bad magic 0x%08x (expected 0x%08x): a "
                              "corrupt message, or not a gpuipc_test peer", magic, GPUIPC_WIRE_MAGIC);
    if (version != GPUIPC_WIRE_VERSION)
        return gpuipc_err_set(err, -EPROTO, "protocol version %u, this side speaks %u (run "
                              "the same gpuipc_test build on both sides)",
                              version, GPUIPC_WIRE_VERSION);
    if (type < 1 || type > GPUIPC_MSG_TYPE_MAX)
        return gpuipc_err_set(err, -EPROTO, "unknown message type %u", type);
    /* FDs first: a message with FDs it may not carry is named for them,
     * whatever else is wrong with it. */
    if (hdr_fds != nfds)
        return gpuipc_err_set(err, -EPROTO, "%s: header says %u FDs, %u arrived",
                              types[type].name, hdr_fds, nfds);
    if (nfds > types[type].max_fds)
        return gpuipc_err_set(err, -EPROTO, "%s: carries %u FDs, at most %u allowed",
                              types[type].name, nfds, types[type].max_fds);
    if (accept != 0 && !(accept & GPUIPC_MSG_BIT(type))) {
        describe_accept(accept, want, sizeof(want));
        return gpuipc_err_set(err, -EPROTO, "got %s, expected %s", types[type].name, want);
    }
    if (reserved != 0)
        return gpuipc_err_set(err, -EPROTO, "%s: reserved header field is 0x%04x, not 0",
                              types[type].name, reserved);
    if (seq != expect_seq)
        return gpuipc_err_set(err, -EPROTO, "%s: sequence number %u, expected %u (a message "
                              "was lost or repeated)", types[type].name, seq, expect_seq);
    if (plen != len - GPUIPC_WIRE_HEADER_LEN)
        return gpuipc_err_set(err, -EPROTO, "%s: header says %u payload bytes, %zu arrived",
                              types[type].name, plen, len - GPUIPC_WIRE_HEADER_LEN);
    if (plen != types[type].len)
        return gpuipc_err_set(err, -EPROTO, "%s: payload is %u bytes, expected %zu",
                              types[type].name, plen, types[type].len);
    msg->type = type;
    msg->seq = seq;
    msg->nfds = hdr_fds;
    rc = decode_payload(&c, msg, err);
    if (rc < 0)
        gpuipc_err_prefix(err, "%s", types[type].name);
    return rc;
}

/* ---- the connection -------------------------------------------------------------------- */

struct gpuipc_wire {
    int fd;
    uint32_t sent;     /* sequence number of the last message sent */
    uint32_t received; /* sequence number of the last message received */
    char peer[16];
    char broken[GPUIPC_ERR_LEN];
    gpuipc_wire_tamper_fn tamper; /* test-only: a lying peer */
    void *tamper_arg;
};

int gpuipc_wire_open(gpuipc_wire **out, int fd, const char *peer, gpuipc_err *err)
{
    gpuipc_wire *w = calloc(1, sizeof(*w));

    if (w == NULL)
        return gpuipc_err_set(err, -ENOMEM, "wire: out of memory");
    w->fd = fd;
    snprintf(w->peer, sizeof(w->peer), "%s", peer);
    *out = w;
    return 0;
}

void gpuipc_wire_set_tamper(gpuipc_wire *w, gpuipc_wire_tamper_fn fn, void *arg)
{
    w->tamper = fn;
    w->tamper_arg = arg;
}

void gpuipc_wire_close(gpuipc_wire *w)
{
    if (w == NULL)
        return;
    if (w->fd >= 0)
        close(w->fd);
    free(w);
}

int gpuipc_wire_fd(const gpuipc_wire *w)
{
    return w->fd;
}

const char *gpuipc_wire_broken(const gpuipc_wire *w)
{
    return w->broken[0] ? w->broken : NULL;
}

void gpuipc_wire_close_fds(int *fds, unsigned n)
{
    unsigned i;

    for (i = 0; i < n; i++) {
        if (fds[i] >= 0)
            close(fds[i]);
        fds[i] = -1;
    }
}

/* Records err as the reason the wire is unusable and returns rc. */
static int wire_fail(gpuipc_wire *w, int rc, gpuipc_err *err)
{
    snprintf(w->broken, sizeof(w->broken), "%s", err ? err->msg : "failed");
    return rc;
}

static int peer_gone(gpuipc_wire *w, unsigned step, const char *how, gpuipc_err *err)
{
    gpuipc_err_set(err, -EPIPE, "peer gone during %s: the %s %s", gpuipc_step_name(step),
                   w->peer, how);
    return wire_fail(w, -EPIPE, err);
}

static int timed_out(gpuipc_wire *w, unsigned step, const char *what, gpuipc_err *err)
{
    char where[256];
    int role = strstr(w->peer, "producer") != NULL ? GPUIPC_ROLE_PRODUCER : GPUIPC_ROLE_CONSUMER;
    int seen;

    /* Forked, the status page both share says where the silent one is, and
     * whether it is stopped. */
    seen = gpuipc_watch_describe(role, where, sizeof(where));
    if (seen == 2)
        gpuipc_err_set(err, -ETIMEDOUT,
                       "timed out during %s: %s the %s within --timeout; the %s is %s (the "
                       "status page both share): it runs no further until it is resumed",
                       gpuipc_step_name(step), what, w->peer, w->peer, where);
    else if (seen)
        gpuipc_err_set(err, -ETIMEDOUT,
                       "timed out during %s: %s the %s within --timeout; the %s is %s (the "
                       "status page both share): stuck there, or slow (then raise --timeout)",
                       gpuipc_step_name(step), what, w->peer, w->peer, where);
    else
        gpuipc_err_set(err, -ETIMEDOUT,
                       "timed out during %s: %s the %s within --timeout (the %s may be stuck; "
                       "raise --timeout if it is only slow)",
                       gpuipc_step_name(step), what, w->peer, w->peer);
    return wire_fail(w, -ETIMEDOUT, err);
}

static int unusable(const gpuipc_wire *w, gpuipc_err *err)
{
    return gpuipc_err_set(err, -EPIPE, "connection unusable since: %s", w->broken);
}

/* Waits for events on fd until deadline_ns, and for a stop. Returns what
 * poll() did for fd (its revents in *revents): 1, 0 at the deadline, -1 with
 * errno (EINTR included), or -2 for a stop. */
static int wait_for(int fd, short events, uint64_t deadline_ns, short *revents)
{
    struct pollfd p[2] = {{.fd = fd, .events = events},
                          {.fd = gpuipc_stop_fd(), .events = POLLIN}};
    int rc;

    *revents = 0;
    if (gpuipc_stop_signal())
        return -2;
    gpuipc_watch_call("poll");
    rc = poll(p, p[1].fd >= 0 ? 2 : 1, gpuipc_clock_ms_left(deadline_ns));
    gpuipc_watch_call(NULL);
    gpuipc_watch_checkpoint();
    if (rc > 0 && p[1].revents != 0 && gpuipc_stop_signal())
        return -2;
    *revents = p[0].revents;
    return rc < 0 ? -1 : p[0].revents != 0;
}

/* A wait that a stop signal ended. */
static int stopped(gpuipc_wire *w, unsigned step, gpuipc_err *err)
{
    const char *name = gpuipc_sig_abbrev(gpuipc_stop_signal());

    gpuipc_err_set(err, -EINTR, "interrupted by SIG%s during %s", name ? name : "?",
                   gpuipc_step_name(step));
    return wire_fail(w, -EINTR, err);
}

/* Sends one encoded frame of len bytes with nfds FDs, waiting for buffer
 * space until deadline_ns. what names it in messages. */
static int send_frame(gpuipc_wire *w, const uint8_t *buf, size_t len, const int *fds,
                      unsigned nfds, uint64_t deadline_ns, unsigned step, const char *what,
                      gpuipc_err *err)
{
    union {
        struct cmsghdr align;
        char buf[CMSG_SPACE(GPUIPC_WIRE_MAX_FDS * sizeof(int))];
    } ctrl;
    struct iovec iov;
    struct msghdr mh;
    struct pollfd pfd;
    ssize_t n;

    memset(&mh, 0, sizeof(mh));
    iov.iov_base = (void *)buf;
    iov.iov_len = len;
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    if (nfds > 0) {
        struct cmsghdr *cm;

        memset(&ctrl, 0, sizeof(ctrl));
        mh.msg_control = ctrl.buf;
        mh.msg_controllen = CMSG_SPACE(nfds * sizeof(int));
        cm = CMSG_FIRSTHDR(&mh);
        cm->cmsg_level = SOL_SOCKET;
        cm->cmsg_type = SCM_RIGHTS;
        cm->cmsg_len = CMSG_LEN(nfds * sizeof(int));
        memcpy(CMSG_DATA(cm), fds, nfds * sizeof(int));
    }

    for (;;) {
        if (gpuipc_stop_signal())
            return stopped(w, step, err);
        n = sendmsg(w->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n >= 0)
            break;
        if (errno == EINTR)
            continue;
        if (errno == EPIPE || errno == ECONNRESET || errno == ENOTCONN)
            return peer_gone(w, step, errno == EPIPE ? "closed the connection (EPIPE)"
                                                     : "reset the connection (ECONNRESET)",
                             err);
        if (errno != EAGAIN && errno != EWOULDBLOCK) {
            int e = errno;

            gpuipc_err_set(err, -e, "sendmsg %s during %s: %s", what, gpuipc_step_name(step),
                           strerror(e));
            return wire_fail(w, -e, err);
        }
        n = wait_for(w->fd, POLLOUT, deadline_ns, &pfd.revents);
        if (n == -2)
            return stopped(w, step, err);
        if (n < 0 && errno != EINTR) {
            int e = errno;

            gpuipc_err_set(err, -e, "poll during %s: %s", gpuipc_step_name(step), strerror(e));
            return wire_fail(w, -e, err);
        }
        if (n == 0)
            return timed_out(w, step, "no room to send to", err);
    }
    if ((size_t)n != len) {
        gpuipc_err_set(err, -EIO, "sendmsg %s during %s: sent %zd of %zu bytes", what,
                       gpuipc_step_name(step), n, len);
        return wire_fail(w, -EIO, err);
    }
    w->sent++;
    return 0;
}

int gpuipc_wire_send(gpuipc_wire *w, gpuipc_msg *msg, const int *fds, uint64_t deadline_ns,
                     unsigned step, gpuipc_err *err)
{
    uint8_t buf[GPUIPC_WIRE_MAX_MSG];
    unsigned nfds = msg->nfds;
    size_t len;
    int rc;

    if (w->broken[0])
        return unusable(w, err);
    if (msg->nfds > GPUIPC_WIRE_MAX_FDS)
        return gpuipc_err_set(err, -EINVAL, "send %s: %u FDs exceed the %d a message carries",
                              gpuipc_wire_type_name(msg->type), msg->nfds,
                              GPUIPC_WIRE_MAX_FDS);
    if (w->tamper != NULL) {
        gpuipc_msg lie = *msg;

        w->tamper(&lie, w->tamper_arg);
        /* A lie may leave FDs behind (a failed offer carries none), never
         * add one the caller does not hold. */
        if (lie.nfds < nfds)
            nfds = lie.nfds;
        lie.nfds = (uint16_t)nfds;
        len = gpuipc_wire_encode(&lie, w->sent + 1, buf, sizeof(buf));
    } else {
        len = gpuipc_wire_encode(msg, w->sent + 1, buf, sizeof(buf));
    }
    if (len == 0)
        return gpuipc_err_set(err, -EINVAL, "send: cannot encode message type %u", msg->type);
    rc = send_frame(w, buf, len, fds, nfds, deadline_ns, step,
                    gpuipc_wire_type_name(msg->type), err);
    if (rc == 0)
        msg->seq = w->sent;
    return rc;
}

int gpuipc_wire_send_fault(gpuipc_wire *w, int kind, uint64_t deadline_ns, unsigned step,
                           gpuipc_err *err)
{
    uint8_t buf[GPUIPC_WIRE_MAX_MSG];
    int fds[2] = {-1, -1};
    gpuipc_msg msg;
    size_t len;
    int rc;

    if (w->broken[0])
        return unusable(w, err);
    memset(&msg, 0, sizeof(msg));
    msg.type = GPUIPC_MSG_HELLO;
    msg.u.hello.pid = (uint32_t)getpid();
    msg.u.hello.role = GPUIPC_ROLE_PRODUCER; /* either: the frame is refused for its FDs or magic */
    if (kind == GPUIPC_WIRE_FAULT_EXTRA_FDS) {
        fds[0] = open("/dev/null", O_RDONLY | O_CLOEXEC);
        fds[1] = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (fds[0] < 0 || fds[1] < 0) {
            rc = gpuipc_err_set(err, -errno, "open /dev/null: %s", strerror(errno));
            gpuipc_wire_close_fds(fds, 2);
            return rc;
        }
        msg.nfds = 2;
    }
    len = gpuipc_wire_encode(&msg, w->sent + 1, buf, sizeof(buf));
    if (len == 0) {
        gpuipc_wire_close_fds(fds, 2);
        return gpuipc_err_set(err, -EINVAL, "send: cannot encode the fault frame");
    }
    if (kind == GPUIPC_WIRE_FAULT_CORRUPT)
        buf[0] ^= 0xff; /* the magic */
    rc = send_frame(w, buf, len, fds, msg.nfds, deadline_ns, step,
                    kind == GPUIPC_WIRE_FAULT_CORRUPT ? "a corrupt frame" : "HELLO with 2 FDs",
                    err);
    gpuipc_wire_close_fds(fds, 2);
    return rc;
}

/* Collects the FDs of every SCM_RIGHTS header into fds and reports the
 * first foreign control message, if any. Returns the FD count. */
static unsigned collect_fds(struct msghdr *mh, int *fds, char *foreign, size_t flen)
{
    struct cmsghdr *cm;
    unsigned n = 0;

    foreign[0] = '\0';
    for (cm = CMSG_FIRSTHDR(mh); cm != NULL; cm = CMSG_NXTHDR(mh, cm)) {
        if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS) {
            size_t k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
            size_t i;

            for (i = 0; i < k; i++) {
                int fd;

                memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
                if (n < GPUIPC_WIRE_MAX_FDS)
                    fds[n++] = fd;
                else
                    close(fd);
            }
        } else if (foreign[0] == '\0') {
            snprintf(foreign, flen, "level %d type %d%s", cm->cmsg_level, cm->cmsg_type,
                     (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_CREDENTIALS)
                         ? " (SCM_CREDENTIALS)" : "");
        }
    }
    return n;
}

/* MSG_CTRUNC: the kernel installed only arrived of the FDs the header
 * announces, and dropped the rest. The FDs that arrived are still open. */
static int describe_ctrunc(unsigned step, unsigned arrived, unsigned announced,
                           gpuipc_err *err)
{
    struct rlimit rl;
    unsigned free_slots;

    if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
        rl.rlim_cur = RLIM_INFINITY;
    if (rl.rlim_cur == RLIM_INFINITY)
        return gpuipc_err_set(err, -EMFILE,
                              "recvmsg during %s: control data truncated (MSG_CTRUNC): %u FDs "
                              "sent, %u arrived; the kernel dropped the rest (a security "
                              "module may have refused them)",
                              gpuipc_step_name(step), announced, arrived);
    /* The arrived FDs occupy slots that were free before the receive. */
    free_slots = gpuipc_account_free_below(rl.rlim_cur, UINT_MAX) + arrived;
    return gpuipc_err_set(err, -EMFILE,
                          "recvmsg during %s: control data truncated (MSG_CTRUNC): %u FDs "
                          "sent, %u arrived; the kernel dropped the rest because this "
                          "process's RLIMIT_NOFILE is %llu and only %u FD numbers were free "
                          "below it: raise it by at least %u (ulimit -n %llu)",
                          gpuipc_step_name(step), announced, arrived,
                          (unsigned long long)rl.rlim_cur, free_slots,
                          announced > free_slots ? announced - free_slots : 1,
                          (unsigned long long)rl.rlim_cur +
                              (announced > free_slots ? announced - free_slots : 1));
}

int gpuipc_wire_recv(gpuipc_wire *w, unsigned accept, gpuipc_msg *msg, int *fds,
                     uint64_t deadline_ns, unsigned step, gpuipc_err *err)
{
    uint8_t buf[GPUIPC_WIRE_MAX_MSG];
    union {
        struct cmsghdr align;
        char buf[CMSG_SPACE(GPUIPC_WIRE_MAX_FDS * sizeof(int))];
    } ctrl;
    char want[64];
    struct iovec iov;
    struct msghdr mh;
    struct pollfd pfd;
    ssize_t n;
    int rc;

    memset(msg, 0, sizeof(*msg));
    if (w->broken[0])
        return unusable(w, err);
    describe_accept(accept, want, sizeof(want));
    for (;;) {
        rc = wait_for(w->fd, POLLIN, deadline_ns, &pfd.revents);
        if (rc == -2)
            return stopped(w, step, err);
        if (rc < 0) {
            int e = errno;

            if (e == EINTR)
                continue;
            gpuipc_err_set(err, -e, "poll during %s: %s", gpuipc_step_name(step), strerror(e));
            return wire_fail(w, -e, err);
        }
        if (rc == 0) {
            char what[96];

            snprintf(what, sizeof(what), "no %s from", want);
            return timed_out(w, step, what, err);
        }
        if (pfd.revents & POLLNVAL) {
            gpuipc_err_set(err, -EBADF, "poll during %s: socket %d is not open",
                           gpuipc_step_name(step), w->fd);
            return wire_fail(w, -EBADF, err);
        }

        memset(&mh, 0, sizeof(mh));
        iov.iov_base = buf;
        iov.iov_len = sizeof(buf);
        mh.msg_iov = &iov;
        mh.msg_iovlen = 1;
        mh.msg_control = ctrl.buf;
        mh.msg_controllen = sizeof(ctrl.buf);
        n = recvmsg(w->fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
        if (n < 0) {
            if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)
                continue;
            int e = errno;

            if (e == ECONNRESET)
                return peer_gone(w, step, "reset the connection (ECONNRESET)", err);
            gpuipc_err_set(err, -e, "recvmsg during %s: %s", gpuipc_step_name(step), strerror(e));
            return wire_fail(w, -e, err);
        }
        break;
    }

    return gpuipc_wire_take(w, buf, (size_t)n, &mh, pfd.revents, accept, msg, fds, step,
                            err);
}

int gpuipc_wire_take(gpuipc_wire *w, const uint8_t *buf, size_t n, struct msghdr *mh,
                     short revents, unsigned accept, gpuipc_msg *msg, int *fds, unsigned step,
                     gpuipc_err *err)
{
    char foreign[64];
    unsigned nfds;
    int rc;

    memset(msg, 0, sizeof(*msg));
    nfds = collect_fds(mh, fds, foreign, sizeof(foreign));
    if (n == 0 && nfds == 0 && (revents & (POLLHUP | POLLRDHUP | POLLERR)))
        return peer_gone(w, step, "closed the connection (EOF)", err);
    if ((mh->msg_flags & MSG_CTRUNC) && !(mh->msg_flags & MSG_TRUNC) && foreign[0] == '\0' &&
        n >= GPUIPC_WIRE_HEADER_LEN) {
        /* A sound message whose FDs did not all fit in this process: the
         * wire stays usable, so that the caller can report it and carry on. */
        unsigned announced = (unsigned)(buf[16] | (buf[17] << 8));

        rc = gpuipc_wire_decode(buf, n, announced, w->received + 1, accept, msg, err);
        if (rc == 0 && nfds < announced) {
            unsigned i;

            describe_ctrunc(step, nfds, announced, err);
            gpuipc_wire_close_fds(fds, nfds);
            for (i = 0; i < announced; i++)
                fds[i] = -1;
            w->received++;
            return -EMFILE;
        }
        if (rc == 0)
            rc = gpuipc_err_set(err, -EPROTO, "recvmsg during %s: control data truncated "
                                "(MSG_CTRUNC) although all %u FDs arrived",
                                gpuipc_step_name(step), nfds);
        else
            gpuipc_err_prefix(err, "bad message from the %s during %s (its FDs were "
                              "truncated too)", w->peer, gpuipc_step_name(step));
    } else if (mh->msg_flags & MSG_CTRUNC)
        rc = gpuipc_err_set(err, -EPROTO, "recvmsg during %s: control data truncated "
                            "(MSG_CTRUNC) on a malformed message", gpuipc_step_name(step));
    else if (mh->msg_flags & MSG_TRUNC)
        rc = gpuipc_err_set(err, -EPROTO, "recvmsg during %s: message truncated (MSG_TRUNC): "
                            "larger than %d bytes", gpuipc_step_name(step),
                            GPUIPC_WIRE_MAX_MSG);
    else if (foreign[0])
        rc = gpuipc_err_set(err, -EPROTO, "recvmsg during %s: unexpected control message %s "
                            "(only SOL_SOCKET/SCM_RIGHTS is accepted)",
                            gpuipc_step_name(step), foreign);
    else {
        rc = gpuipc_wire_decode(buf, n, nfds, w->received + 1, accept, msg, err);
        if (rc < 0)
            gpuipc_err_prefix(err, "bad message from the %s during %s", w->peer,
                              gpuipc_step_name(step));
    }
    if (rc < 0) {
        gpuipc_wire_close_fds(fds, nfds);
        memset(msg, 0, sizeof(*msg));
        return wire_fail(w, rc, err);
    }
    w->received++;
    return 0;
}
