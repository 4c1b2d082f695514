/* SPDX-License-Identifier: Apache-2.0 */
/* decode.c: a frame as a message, validated: the header (magic, version,
 * type, sequence, lengths, FD count) and every field of the payload, so that
 * nothing a peer sends reaches the roles unchecked. */
#include "wire/msg.h"

#include <ctype.h>
#include <errno.h>
#include <string.h>

#include "core/step.h"
#include "core/units.h"
#include "wire/frame.h"

typedef struct cursor {
    const uint8_t *q;
} cursor;

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

/* PHASE: a beginning or an end; a beginning carries as many FDs as it says
 * workers (none after the first), an end none. */
static int decode_phase(cursor *c, gpuipc_msg *msg, gpuipc_err *err)
{
    gpuipc_msg_phase *p = &msg->u.phase;

    p->phase = get_u32(c);
    p->flags = get_u32(c);
    p->workers = get_u32(c);
    p->cells = get_u32(c);
    if (p->flags != GPUIPC_PHASE_BEGIN && p->flags != GPUIPC_PHASE_END)
        return gpuipc_err_set(err, -EPROTO, "flags 0x%x are neither BEGIN nor END", p->flags);
    if (p->phase > GPUIPC_PHASE_MAX_WORKERS)
        return gpuipc_err_set(err, -EPROTO, "phase %u of more GPUs than %u", p->phase,
                              GPUIPC_PHASE_MAX_WORKERS);
    if (p->workers > GPUIPC_PHASE_MAX_WORKERS || p->workers != msg->nfds)
        return gpuipc_err_set(err, -EPROTO, "%u workers with %u FDs", p->workers, msg->nfds);
    if (p->flags == GPUIPC_PHASE_END && p->workers != 0)
        return gpuipc_err_set(err, -EPROTO, "an end of a phase carries %u workers", p->workers);
    if (p->cells > GPUIPC_BYE_MAX_SCENARIOS)
        return gpuipc_err_set(err, -EPROTO, "%u cells exceed %d", p->cells,
                              GPUIPC_BYE_MAX_SCENARIOS);
    return 0;
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
 * bandwidth runs are asked for, and those only with TIMES to report them.
 * The link figures (--pairs) come in a TIMES series of their own, with or
 * without the laps. */
static int check_begin_bench(const gpuipc_msg_begin *b, gpuipc_err *err)
{
    if (b->flags & ~(GPUIPC_BEGIN_TIMES | GPUIPC_BEGIN_BANDWIDTH | GPUIPC_BEGIN_LINK))
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
    f->imex_channels = get_u64(c);
    f->imex_errno = get_u32(c);
    if (f->flags & ~GPUIPC_FACT_FLAGS_ALL)
        return gpuipc_err_set(err, -EPROTO, "facts: unknown flags 0x%x", f->flags);
    if (f->shm_avail > f->shm_size)
        return gpuipc_err_set(err, -EPROTO, "facts: /dev/shm has %llu bytes free of %llu",
                              (unsigned long long)f->shm_avail,
                              (unsigned long long)f->shm_size);
    if ((rc = check_fact("nvidiactl errno", f->ctl_errno, 4095, err)) < 0 ||
        (rc = check_fact("nvidia-uvm errno", f->uvm_errno, 4095, err)) < 0 ||
        (rc = check_fact("IMEX channels' errno", f->imex_errno, 4095, err)) < 0)
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
    case GPUIPC_MSG_PHASE:
        return decode_phase(c, msg, err);
    case GPUIPC_MSG_PHASE_ACK:
        if ((rc = get_status(c, &msg->u.phase_ack.st, err)) < 0)
            return rc;
        get_usage(c, &msg->u.phase_ack.usage);
        return 0;
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

int gpuipc_wire_decode(const uint8_t *buf, size_t len, unsigned nfds, uint32_t expect_seq,
                       unsigned accept, gpuipc_msg *msg, gpuipc_err *err)
{
    cursor c = {.q = buf};
    uint32_t magic, seq, plen;
    uint16_t version, type, hdr_fds, reserved;
    const char *name;
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
    name = gpuipc_wire_type_name(type);
    /* FDs first: a message with FDs it may not carry is named for them,
     * whatever else is wrong with it. */
    if (hdr_fds != nfds)
        return gpuipc_err_set(err, -EPROTO, "%s: header says %u FDs, %u arrived",
                              name, hdr_fds, nfds);
    if (nfds > gpuipc_wire_type_fds(type))
        return gpuipc_err_set(err, -EPROTO, "%s: carries %u FDs, at most %u allowed",
                              name, nfds, gpuipc_wire_type_fds(type));
    if (accept != 0 && !(accept & GPUIPC_MSG_BIT(type))) {
        gpuipc_wire_describe_accept(accept, want, sizeof(want));
        return gpuipc_err_set(err, -EPROTO, "got %s, expected %s", name, want);
    }
    if (reserved != 0)
        return gpuipc_err_set(err, -EPROTO, "%s: reserved header field is 0x%04x, not 0",
                              name, reserved);
    if (seq != expect_seq)
        return gpuipc_err_set(err, -EPROTO, "%s: sequence number %u, expected %u (a message "
                              "was lost or repeated)", name, seq, expect_seq);
    if (plen != len - GPUIPC_WIRE_HEADER_LEN)
        return gpuipc_err_set(err, -EPROTO, "%s: header says %u payload bytes, %zu arrived",
                              name, plen, len - GPUIPC_WIRE_HEADER_LEN);
    if (plen != gpuipc_wire_type_len(type))
        return gpuipc_err_set(err, -EPROTO, "%s: payload is %u bytes, expected %zu",
                              name, plen, gpuipc_wire_type_len(type));
    msg->type = type;
    msg->seq = seq;
    msg->nfds = hdr_fds;
    rc = decode_payload(&c, msg, err);
    if (rc < 0)
        gpuipc_err_prefix(err, "%s", name);
    return rc;
}
