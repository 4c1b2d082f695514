/* test_wire.c: the protocol: framing of every message type, rejection of
 * every kind of malformed input (with its exact reason and no FD left
 * behind), FD passing, deadlines and a lost peer. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/step.h"
#include "wire/wire.h"
#include "helpers.h"
#include "suites.h"

/* Offsets into a frame, as wire.h lays it out. */
#define OFF_VERSION 4
#define OFF_TYPE 6
#define OFF_SEQ 8
#define OFF_LEN 12
#define OFF_NFDS 16
#define OFF_RESERVED 18
#define OFF_STATUS_REASON (GPUIPC_WIRE_HEADER_LEN + 8)
#define OFF_OFFER_SIZE (GPUIPC_WIRE_HEADER_LEN + 8 + GPUIPC_WIRE_REASON_LEN)
#define OFF_BEGIN_NAME GPUIPC_WIRE_HEADER_LEN

static void pair(int sv[2])
{
    ck_assert_int_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
}

/* A valid message of every type, with every field set to something that
 * would show if it were lost. */
static void sample(unsigned type, gpuipc_msg *m)
{
    memset(m, 0, sizeof(*m));
    m->type = (uint16_t)type;
    switch (type) {
    case GPUIPC_MSG_HELLO:
        m->u.hello.pid = 4242;
        m->u.hello.role = GPUIPC_ROLE_PRODUCER;
        m->u.hello.flags = GPUIPC_HELLO_NEEDS_CUDA;
        break;
    case GPUIPC_MSG_BEGIN:
        strcpy(m->u.begin.mech, "vmm");
        m->u.begin.index = 3;
        m->u.begin.flags = GPUIPC_BEGIN_TIMES | GPUIPC_BEGIN_BANDWIDTH;
        m->u.begin.iters = 20;
        m->u.begin.size = 64u << 20;
        memset(m->u.begin.uuid, 0xab, sizeof(m->u.begin.uuid));
        memset(m->u.begin.consumer_uuid, 0x12, sizeof(m->u.begin.consumer_uuid));
        break;
    case GPUIPC_MSG_READY:
        gpuipc_wire_status(&m->u.ready, GPUIPC_FAIL, GPUIPC_STEP_PROBE, "no such device");
        break;
    case GPUIPC_MSG_OFFER:
        gpuipc_wire_status(&m->u.offer.st, GPUIPC_PASS, GPUIPC_STEP_NONE, "");
        m->u.offer.size = 6u << 20;
        m->u.offer.granularity = 2u << 20;
        m->u.offer.seed = 0x1122334455667788ull;
        memset(m->u.offer.uuid, 0xcd, sizeof(m->u.offer.uuid));
        m->u.offer.blob_len = 3;
        memcpy(m->u.offer.blob, "xyz", 3);
        m->u.offer.fds_total = 1000;
        m->u.offer.wrote.words = (6u << 20) / 8;
        m->u.offer.wrote.digest = 0xfeedfacecafebeefull;
        break;
    case GPUIPC_MSG_REPORT:
        gpuipc_wire_status(&m->u.report.st, GPUIPC_FAIL, GPUIPC_STEP_VERIFY, "12 mismatches");
        m->u.report.check.words = 1000;
        m->u.report.check.mismatches = 12;
        m->u.report.check.first_bad = 7;
        m->u.report.check.digest = 0x0102030405060708ull;
        m->u.report.wrote.words = 1000;
        m->u.report.wrote.digest = 0x8877665544332211ull;
        m->u.report.check.expected = 0xdeadbeefull;
        m->u.report.check.got = 0xfeedull;
        m->u.report.seed = 99;
        m->u.report.flags = GPUIPC_REPORT_WROTE;
        break;
    case GPUIPC_MSG_END:
        gpuipc_wire_status(&m->u.end.st, GPUIPC_PASS, GPUIPC_STEP_CHECK, "");
        m->u.end.check.words = 8;
        break;
    case GPUIPC_MSG_END_ACK:
        gpuipc_wire_status(&m->u.end_ack.st, GPUIPC_SKIP, GPUIPC_STEP_RELEASE, "skipped");
        m->u.end_ack.usage.fds = 33;
        m->u.end_ack.usage.objects = 4;
        m->u.end_ack.usage.shmem = 8192;
        m->u.end_ack.usage.gpu = GPUIPC_USAGE_UNKNOWN;
        break;
    case GPUIPC_MSG_BYE:
        m->u.bye.code = GPUIPC_SKIP;
        m->u.bye.passed = 0;
        m->u.bye.skipped = 9;
        break;
    case GPUIPC_MSG_BYE_ACK:
        gpuipc_wire_status(&m->u.bye_ack, GPUIPC_FAIL, GPUIPC_STEP_BYE_ACK, "1 FD leaked");
        break;
    case GPUIPC_MSG_PROBE:
        strcpy(m->u.probe.mech, "vmm-compressible");
        memset(m->u.probe.uuid, 0x5c, sizeof(m->u.probe.uuid));
        memset(m->u.probe.consumer_uuid, 0x34, sizeof(m->u.probe.consumer_uuid));
        break;
    case GPUIPC_MSG_PROBE_ACK:
        gpuipc_wire_status(&m->u.probe_ack, GPUIPC_SKIP, GPUIPC_STEP_PROBE,
                           "pidfd_getfd: EPERM");
        break;
    case GPUIPC_MSG_FDS: /* a failed batch: it carries no FDs */
        gpuipc_wire_status(&m->u.fds.st, GPUIPC_FAIL, GPUIPC_STEP_EXPORT, "EMFILE");
        m->u.fds.first = 253;
        break;
    case GPUIPC_MSG_TIMES:
        m->u.times.series = 2;
        m->u.times.first = 64;
        m->u.times.count = 3;
        m->u.times.flags = GPUIPC_TIMES_LAST;
        m->u.times.v[0] = 1;
        m->u.times.v[1] = 0xfedcba9876543210ull;
        m->u.times.v[2] = 3;
        break;
    default:
        break;
    }
}

static size_t encode(unsigned type, uint32_t seq, uint8_t *buf)
{
    gpuipc_msg m;
    size_t len;

    sample(type, &m);
    len = gpuipc_wire_encode(&m, seq, buf, GPUIPC_WIRE_MAX_MSG);
    ck_assert_uint_gt(len, 0);
    return len;
}

static void put16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

static void put32(uint8_t *p, uint32_t v)
{
    put16(p, (uint16_t)v);
    put16(p + 2, (uint16_t)(v >> 16));
}

static void put64(uint8_t *p, uint64_t v)
{
    put32(p, (uint32_t)v);
    put32(p + 4, (uint32_t)(v >> 32));
}

static int new_memfd(void)
{
    int fd = memfd_create("wire-test", MFD_CLOEXEC);

    ck_assert_int_ge(fd, 0);
    return fd;
}

/* Sends frame with nfds fresh FDs, receives it through a wire that accepts
 * the types in accept, and checks that it is refused with -EPROTO and a
 * reason containing needle, that the wire is now marked broken, and that
 * every FD is closed again once both ends are. */
static void expect_rejected(const uint8_t *frame, size_t len, int nfds, unsigned accept,
                            const char *needle)
{
    int before = th_fd_count(), sv[2], fds[GPUIPC_WIRE_MAX_FDS], i, rc;
    gpuipc_wire *w;
    gpuipc_msg m;
    gpuipc_err e;

    pair(sv);
    for (i = 0; i < nfds; i++)
        fds[i] = new_memfd();
    ck_assert_int_eq(th_send_raw(sv[0], frame, len, fds, nfds), (ssize_t)len);
    for (i = 0; i < nfds; i++)
        close(fds[i]);
    ck_assert_int_eq(gpuipc_wire_open(&w, sv[1], "producer", &e), 0);
    rc = gpuipc_wire_recv(w, accept, &m, fds, gpuipc_clock_deadline(GPUIPC_NS_PER_S),
                          GPUIPC_STEP_OFFER, &e);
    ck_assert_int_eq(rc, -EPROTO);
    ck_assert_msg(strstr(e.msg, needle) != NULL, "reason '%s' does not say '%s'", e.msg, needle);
    ck_assert_msg(strstr(e.msg, "during offer") != NULL, "reason '%s' names no step", e.msg);
    ck_assert_ptr_nonnull(gpuipc_wire_broken(w));
    gpuipc_wire_close(w);
    close(sv[0]);
    ck_assert_int_eq(th_fd_count(), before);
}

#define ANY 0u

START_TEST(test_wire_round_trips_every_type)
{
    unsigned type = (unsigned)_i;
    uint8_t buf[GPUIPC_WIRE_MAX_MSG];
    gpuipc_msg want, got;
    gpuipc_err e;
    size_t len;

    sample(type, &want);
    len = gpuipc_wire_encode(&want, 5, buf, sizeof(buf));
    ck_assert_uint_gt(len, GPUIPC_WIRE_HEADER_LEN - 1);
    ck_assert_int_eq(gpuipc_wire_decode(buf, len, 0, 5, GPUIPC_MSG_BIT(type), &got, &e), 0);
    ck_assert_uint_eq(got.type, type);
    ck_assert_uint_eq(got.seq, 5);
    ck_assert_msg(memcmp(&got.u, &want.u, sizeof(want.u)) == 0, "%s changed in transit",
                  gpuipc_wire_type_name(type));
}
END_TEST

START_TEST(test_wire_encode_refuses_a_small_buffer)
{
    uint8_t buf[GPUIPC_WIRE_HEADER_LEN + 10];
    gpuipc_msg m;

    sample(GPUIPC_MSG_OFFER, &m);
    ck_assert_uint_eq(gpuipc_wire_encode(&m, 1, buf, sizeof(buf)), 0);
}
END_TEST

START_TEST(test_wire_sends_every_type_over_a_socket)
{
    int sv[2], fds[GPUIPC_WIRE_MAX_FDS];
    gpuipc_wire *a, *b;
    gpuipc_msg m;
    gpuipc_err e;
    unsigned t;

    pair(sv);
    ck_assert_int_eq(gpuipc_wire_open(&a, sv[0], "consumer", &e), 0);
    ck_assert_int_eq(gpuipc_wire_open(&b, sv[1], "producer", &e), 0);
    for (t = 1; t <= GPUIPC_MSG_TYPE_MAX; t++) {
        sample(t, &m);
        ck_assert_int_eq(gpuipc_wire_send(a, &m, NULL, gpuipc_clock_deadline(GPUIPC_NS_PER_S),
                                          GPUIPC_STEP_BEGIN, &e), 0);
        ck_assert_int_eq(gpuipc_wire_recv(b, GPUIPC_MSG_BIT(t), &m, fds,
                                          gpuipc_clock_deadline(GPUIPC_NS_PER_S),
                                          GPUIPC_STEP_BEGIN, &e), 0);
        ck_assert_uint_eq(m.type, t);
        ck_assert_uint_eq(m.seq, t); /* each direction counts from 1 */
    }
    gpuipc_wire_close(a);
    gpuipc_wire_close(b);
}
END_TEST

START_TEST(test_wire_rejects_bad_magic)
{
    uint8_t buf[GPUIPC_WIRE_MAX_MSG];
    size_t len = encode(GPUIPC_MSG_HELLO, 1, buf);

    put32(buf, 0x12345678);
    expect_rejected(buf, len, 0, ANY, "bad magic 0x12345678");
}
END_TEST

START_TEST(test_wire_rejects_wrong_version)
{
    uint8_t buf[GPUIPC_WIRE_MAX_MSG];
    size_t len = encode(GPUIPC_MSG_HELLO, 1, buf);

    put16(buf + OFF_VERSION, 9);
    expect_rejected(buf, len, 0, ANY, "protocol version 9");
}
END_TEST

START_TEST(test_wire_rejects_unknown_type)
{
    uint8_t buf[GPUIPC_WIRE_MAX_MSG];
    size_t len = encode(GPUIPC_MSG_HELLO, 1, buf);

    put16(buf + OFF_TYPE, 77);
    expect_rejected(buf, len, 0, ANY, "unknown message type 77");
}
END_TEST

START_TEST(test_wire_rejects_unexpected_type)
{
    uint8_t buf[GPUIPC_WIRE_MAX_MSG];
    size_t len = encode(GPUIPC_MSG_BYE, 1, buf);

    expect_rejected(buf, len, 0, GPUIPC_MSG_BIT(GPUIPC_MSG_READY), "got BYE, expected READY");
}
END_TEST

START_TEST(test_wire_rejects_short_header)
{
    uint8_t buf[GPUIPC_WIRE_MAX_MSG];

    encode(GPUIPC_MSG_HELLO, 1, buf);
    expect_rejected(buf, 12, 0, ANY, "short message: 12 bytes");
}
END_TEST

START_TEST(test_wire_rejects_short_payload)
{
    uint8_t buf[GPUIPC_WIRE_MAX_MSG];
    size_t len = encode(GPUIPC_MSG_READY, 1, buf);

    put32(buf + OFF_LEN, (uint32_t)(len - GPUIPC_WIRE_HEADER_LEN - 8));
    expect_rejected(buf, len - 8, 0, ANY, "READY: payload is 384 bytes, expected 392");
}
END_TEST

START_TEST(test_wire_rejects_long_payload)
{
    uint8_t buf[GPUIPC_WIRE_MAX_MSG];
    size_t len = encode(GPUIPC_MSG_HELLO, 1, buf);

    memset(buf + len, 0, 4);
    put32(buf + OFF_LEN, (uint32_t)(len - GPUIPC_WIRE_HEADER_LEN + 4));
    expect_rejected(buf, len + 4, 0, ANY, "HELLO: payload is 16 bytes, expected 12");
}
END_TEST

START_TEST(test_wire_rejects_length_field_that_lies)
{
    uint8_t buf[GPUIPC_WIRE_MAX_MSG];
    size_t len = encode(GPUIPC_MSG_HELLO, 1, buf);

    put32(buf + OFF_LEN, 100);
    expect_rejected(buf, len, 0, ANY, "header says 100 payload bytes, 12 arrived");
}
END_TEST

START_TEST(test_wire_rejects_wrong_sequence)
{
    uint8_t buf[GPUIPC_WIRE_MAX_MSG];
    size_t len = encode(GPUIPC_MSG_HELLO, 4, buf);

    expect_rejected(buf, len, 0, ANY, "sequence number 4, expected 1");
}
END_TEST

START_TEST(test_wire_rejects_nonzero_reserved_field)
{
    uint8_t buf[GPUIPC_WIRE_MAX_MSG];
    size_t len = encode(GPUIPC_MSG_HELLO, 1, buf);

    put16(buf + OFF_RESERVED, 1);
    expect_rejected(buf, len, 0, ANY, "reserved header field is 0x0001");
}
END_TEST

START_TEST(test_wire_rejects_missing_fd)
{
    uint8_t buf[GPUIPC_WIRE_MAX_MSG];
    size_t len = encode(GPUIPC_MSG_OFFER, 1, buf);

    put16(buf + OFF_NFDS, 1);
    expect_rejected(buf, len, 0, ANY, "OFFER: header says 1 FDs, 0 arrived");
}
END_TEST

START_TEST(test_wire_rejects_extra_fds)
{
    uint8_t buf[GPUIPC_WIRE_MAX_MSG];
    size_t len = encode(GPUIPC_MSG_OFFER, 1, buf);

    put16(buf + OFF_NFDS, 1);
    expect_rejected(buf, len, 3, ANY, "OFFER: header says 1 FDs, 3 arrived");
}
END_TEST

START_TEST(test_wire_rejects_fds_on_a_type_that_carries_none)
{
    uint8_t buf[GPUIPC_WIRE_MAX_MSG];
    size_t len = encode(GPUIPC_MSG_READY, 1, buf);

    put16(buf + OFF_NFDS, 2);
    expect_rejected(buf, len, 2, ANY, "READY: carries 2 FDs, at most 0 allowed");
}
END_TEST

START_TEST(test_wire_rejects_fds_on_a_failed_offer)
{
    uint8_t buf[GPUIPC_WIRE_MAX_MSG];
    size_t len;
    gpuipc_msg m;

    sample(GPUIPC_MSG_OFFER, &m);
    gpuipc_wire_status(&m.u.offer.st, GPUIPC_FAIL, GPUIPC_STEP_ALLOC, "out of memory");
    m.nfds = 1;
    m.u.offer.fds_total = 0;
    len = gpuipc_wire_encode(&m, 1, buf, sizeof(buf));
    expect_rejected(buf, len, 1, ANY, "a failed offer carries 1 FDs and announces 0");
}
END_TEST

START_TEST(test_wire_rejects_zero_size)
{
    uint8_t buf[GPUIPC_WIRE_MAX_MSG];
    size_t len = encode(GPUIPC_MSG_OFFER, 1, buf);

    put64(buf + OFF_OFFER_SIZE, 0);
    expect_rejected(buf, len, 0, ANY, "OFFER: size is 0");
}
END_TEST

START_TEST(test_wire_rejects_oversized_size)
{
    uint8_t buf[GPUIPC_WIRE_MAX_MSG];
    size_t len = encode(GPUIPC_MSG_OFFER, 1, buf);

    put64(buf + OFF_OFFER_SIZE, 1ull << 50);
    expect_rejected(buf, len, 0, ANY, "exceeds the 16 TiB limit");
}
END_TEST

START_TEST(test_wire_rejects_size_not_a_multiple_of_granularity)
{
    uint8_t buf[GPUIPC_WIRE_MAX_MSG];
    size_t len = encode(GPUIPC_MSG_OFFER, 1, buf);

    put64(buf + OFF_OFFER_SIZE, (6u << 20) + 4096);
    expect_rejected(buf, len, 0, ANY, "is not a multiple of granularity 2097152");
}
END_TEST

START_TEST(test_wire_rejects_granularity_not_a_power_of_two)
{
    uint8_t buf[GPUIPC_WIRE_MAX_MSG];
    size_t len = encode(GPUIPC_MSG_OFFER, 1, buf);

    put64(buf + OFF_OFFER_SIZE + 8, 3u << 20);
    expect_rejected(buf, len, 0, ANY, "granularity 3145728 is not a power of two");
}
END_TEST

START_TEST(test_wire_rejects_unterminated_reason)
{
    uint8_t buf[GPUIPC_WIRE_MAX_MSG];
    size_t len = encode(GPUIPC_MSG_READY, 1, buf);

    memset(buf + OFF_STATUS_REASON, 'x', GPUIPC_WIRE_REASON_LEN);
    expect_rejected(buf, len, 0, ANY, "status reason is not NUL-terminated");
}
END_TEST

START_TEST(test_wire_rejects_nonprintable_reason)
{
    uint8_t buf[GPUIPC_WIRE_MAX_MSG];
    size_t len = encode(GPUIPC_MSG_READY, 1, buf);

    buf[OFF_STATUS_REASON + 2] = 0x1b; /* ESC: a terminal escape sequence */
    expect_rejected(buf, len, 0, ANY, "non-printable byte 0x1b at 2");
}
END_TEST

START_TEST(test_wire_rejects_unknown_status_code)
{
    uint8_t buf[GPUIPC_WIRE_MAX_MSG];
    size_t len = encode(GPUIPC_MSG_END_ACK, 1, buf);

    put32(buf + GPUIPC_WIRE_HEADER_LEN, 5);
    expect_rejected(buf, len, 0, ANY, "status code 5 is none of 0, 1, 77");
}
END_TEST

START_TEST(test_wire_rejects_bad_mechanism_name)
{
    uint8_t buf[GPUIPC_WIRE_MAX_MSG];
    size_t len = encode(GPUIPC_MSG_BEGIN, 1, buf);

    buf[OFF_BEGIN_NAME + 1] = '/';
    expect_rejected(buf, len, 0, ANY, "mechanism name has byte 0x2f at 1");
}
END_TEST

START_TEST(test_wire_rejects_more_mismatches_than_words)
{
    uint8_t buf[GPUIPC_WIRE_MAX_MSG];
    size_t len;
    gpuipc_msg m;

    sample(GPUIPC_MSG_REPORT, &m);
    m.u.report.check.mismatches = 2000;
    len = gpuipc_wire_encode(&m, 1, buf, sizeof(buf));
    expect_rejected(buf, len, 0, ANY, "check counts 2000 mismatches in 1000 words");
}
END_TEST

START_TEST(test_wire_rejects_oversized_datagram)
{
    uint8_t buf[GPUIPC_WIRE_MAX_MSG + 1000];

    memset(buf, 0, sizeof(buf));
    encode(GPUIPC_MSG_HELLO, 1, buf);
    expect_rejected(buf, sizeof(buf), 2, ANY, "message truncated (MSG_TRUNC)");
}
END_TEST

START_TEST(test_wire_rejects_empty_datagram)
{
    uint8_t buf[1] = {0};

    expect_rejected(buf, 0, 0, ANY, "short message: 0 bytes");
}
END_TEST

START_TEST(test_wire_rejects_foreign_control_message)
{
    uint8_t buf[GPUIPC_WIRE_MAX_MSG];
    int sv[2], one = 1, fds[GPUIPC_WIRE_MAX_FDS], before = th_fd_count();
    size_t len = encode(GPUIPC_MSG_HELLO, 1, buf);
    gpuipc_wire *w;
    gpuipc_msg m;
    gpuipc_err e;

    /* With SO_PASSCRED the kernel attaches SCM_CREDENTIALS to every message. */
    pair(sv);
    ck_assert_int_eq(setsockopt(sv[1], SOL_SOCKET, SO_PASSCRED, &one, sizeof(one)), 0);
    ck_assert_int_eq(th_send_raw(sv[0], buf, len, NULL, 0), (ssize_t)len);
    ck_assert_int_eq(gpuipc_wire_open(&w, sv[1], "producer", &e), 0);
    ck_assert_int_eq(gpuipc_wire_recv(w, ANY, &m, fds, gpuipc_clock_deadline(GPUIPC_NS_PER_S),
                                      GPUIPC_STEP_HELLO, &e), -EPROTO);
    ck_assert_msg(strstr(e.msg, "unexpected control message") && strstr(e.msg, "SCM_CREDENTIALS"),
                  "reason: %s", e.msg);
    gpuipc_wire_close(w);
    close(sv[0]);
    ck_assert_int_eq(th_fd_count(), before);
}
END_TEST

/* Returns the smallest FD limit that leaves exactly one unused FD number
 * below it. */
static int one_free_slot_limit(void)
{
    int limit, fd, free_slots;

    for (limit = 1;; limit++) {
        free_slots = 0;
        for (fd = 0; fd < limit; fd++)
            free_slots += fcntl(fd, F_GETFD) < 0;
        if (free_slots == 1)
            return limit;
    }
}

/* FDs the receiver cannot install (RLIMIT_NOFILE) are dropped by the kernel,
 * which sets MSG_CTRUNC: the wire must say so with both numbers, close what
 * did arrive, and stay usable, so that the caller can report it and go on. */
START_TEST(test_wire_reports_truncated_fds_and_stays_usable)
{
    uint8_t buf[GPUIPC_WIRE_MAX_MSG];
    int sv[2], fds[GPUIPC_WIRE_MAX_FDS], sent[3], i, before;
    struct rlimit rl, tight;
    char limit[64];
    gpuipc_wire *w;
    gpuipc_msg m;
    gpuipc_err e;
    size_t len = encode(GPUIPC_MSG_OFFER, 1, buf);

    put16(buf + OFF_NFDS, 3);
    pair(sv);
    for (i = 0; i < 3; i++)
        sent[i] = new_memfd();
    ck_assert_int_eq(th_send_raw(sv[0], buf, len, sent, 3), (ssize_t)len);
    for (i = 0; i < 3; i++)
        close(sent[i]);
    len = encode(GPUIPC_MSG_FDS, 2, buf);
    ck_assert_int_eq(th_send_raw(sv[0], buf, len, NULL, 0), (ssize_t)len);
    ck_assert_int_eq(gpuipc_wire_open(&w, sv[1], "producer", &e), 0);
    before = th_fd_count();
    ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
    /* Room for exactly one more FD: the first arrives, the other two are
     * dropped. Open FDs need not be numbered densely, so find the limit that
     * leaves one free number below it. */
    tight = rl;
    tight.rlim_cur = (rlim_t)one_free_slot_limit();
    ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &tight), 0);
    ck_assert_int_eq(gpuipc_wire_recv(w, ANY, &m, fds, gpuipc_clock_deadline(GPUIPC_NS_PER_S),
                                      GPUIPC_STEP_OFFER, &e), -EMFILE);
    ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
    snprintf(limit, sizeof(limit), "RLIMIT_NOFILE is %llu and only 1 FD numbers were free",
             (unsigned long long)tight.rlim_cur);
    ck_assert_msg(strstr(e.msg, "MSG_CTRUNC") && strstr(e.msg, "3 FDs sent, 1 arrived") &&
                  strstr(e.msg, limit) && strstr(e.msg, "raise it by at least 2"),
                  "reason: %s", e.msg);
    /* The message itself is delivered, with no FD left to the caller. */
    ck_assert_uint_eq(m.type, GPUIPC_MSG_OFFER);
    ck_assert_uint_eq(m.nfds, 3);
    ck_assert_uint_eq(m.u.offer.fds_total, 1000);
    for (i = 0; i < 3; i++)
        ck_assert_int_eq(fds[i], -1);
    ck_assert_int_eq(th_fd_count(), before);
    /* And the connection goes on. */
    ck_assert_ptr_null(gpuipc_wire_broken(w));
    ck_assert_int_eq(gpuipc_wire_recv(w, ANY, &m, fds, gpuipc_clock_deadline(GPUIPC_NS_PER_S),
                                      GPUIPC_STEP_OFFER, &e), 0);
    ck_assert_uint_eq(m.type, GPUIPC_MSG_FDS);
    gpuipc_wire_close(w);
    close(sv[0]);
}
END_TEST

/* A malformed message whose FDs were truncated too is still malformed. */
START_TEST(test_wire_rejects_truncated_fds_on_a_bad_message)
{
    uint8_t buf[GPUIPC_WIRE_MAX_MSG];
    int sv[2], fds[GPUIPC_WIRE_MAX_FDS], sent[3], i;
    struct rlimit rl, tight;
    gpuipc_wire *w;
    gpuipc_msg m;
    gpuipc_err e;
    size_t len = encode(GPUIPC_MSG_OFFER, 1, buf);

    put16(buf + OFF_NFDS, 3);
    put64(buf + OFF_OFFER_SIZE, 0);
    pair(sv);
    for (i = 0; i < 3; i++)
        sent[i] = new_memfd();
    ck_assert_int_eq(th_send_raw(sv[0], buf, len, sent, 3), (ssize_t)len);
    for (i = 0; i < 3; i++)
        close(sent[i]);
    ck_assert_int_eq(gpuipc_wire_open(&w, sv[1], "producer", &e), 0);
    ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
    tight = rl;
    tight.rlim_cur = (rlim_t)one_free_slot_limit();
    ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &tight), 0);
    ck_assert_int_eq(gpuipc_wire_recv(w, ANY, &m, fds, gpuipc_clock_deadline(GPUIPC_NS_PER_S),
                                      GPUIPC_STEP_OFFER, &e), -EPROTO);
    ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
    ck_assert_msg(strstr(e.msg, "size is 0") != NULL, "reason: %s", e.msg);
    ck_assert_ptr_nonnull(gpuipc_wire_broken(w));
    gpuipc_wire_close(w);
    close(sv[0]);
}
END_TEST

START_TEST(test_wire_rejects_bad_fd_batches)
{
    uint8_t buf[GPUIPC_WIRE_MAX_MSG];
    gpuipc_msg m;
    size_t len;

    /* A batch that reports success must carry FDs ... */
    sample(GPUIPC_MSG_FDS, &m);
    gpuipc_wire_status(&m.u.fds.st, GPUIPC_PASS, GPUIPC_STEP_NONE, "");
    len = gpuipc_wire_encode(&m, 1, buf, sizeof(buf));
    expect_rejected(buf, len, 0, ANY, "a batch that reports success carries no FDs");
    /* ... a failed one none ... */
    sample(GPUIPC_MSG_FDS, &m);
    m.nfds = 2;
    len = gpuipc_wire_encode(&m, 1, buf, sizeof(buf));
    expect_rejected(buf, len, 2, ANY, "a failed batch carries 2 FDs");
    /* ... and FD number 0 always travels with OFFER. */
    sample(GPUIPC_MSG_FDS, &m);
    m.u.fds.first = 0;
    len = gpuipc_wire_encode(&m, 1, buf, sizeof(buf));
    expect_rejected(buf, len, 0, ANY, "first FD number 0 is outside 1 to 65535");
}
END_TEST

START_TEST(test_wire_rejects_bad_fd_totals)
{
    uint8_t buf[GPUIPC_WIRE_MAX_MSG];
    gpuipc_msg m;
    size_t len;

    sample(GPUIPC_MSG_OFFER, &m);
    m.u.offer.fds_total = GPUIPC_WIRE_MAX_OFFER_FDS + 1;
    len = gpuipc_wire_encode(&m, 1, buf, sizeof(buf));
    expect_rejected(buf, len, 0, ANY, "offer announces 65537 FDs, at most 65536 allowed");
    sample(GPUIPC_MSG_OFFER, &m);
    m.u.offer.fds_total = 1;
    m.nfds = 2;
    len = gpuipc_wire_encode(&m, 1, buf, sizeof(buf));
    expect_rejected(buf, len, 2, ANY, "offer carries 2 FDs but announces only 1 in all");
    sample(GPUIPC_MSG_OFFER, &m);
    gpuipc_wire_status(&m.u.offer.st, GPUIPC_FAIL, GPUIPC_STEP_ALLOC, "out of memory");
    len = gpuipc_wire_encode(&m, 1, buf, sizeof(buf));
    expect_rejected(buf, len, 0, ANY, "a failed offer carries 0 FDs and announces 1000");
}
END_TEST

START_TEST(test_wire_passes_one_fd)
{
    int sv[2], fds[GPUIPC_WIRE_MAX_FDS], fd = new_memfd(), before;
    char text[16] = "";
    gpuipc_wire *a, *b;
    gpuipc_msg m;
    gpuipc_err e;

    ck_assert_int_eq(write(fd, "shared", 6), 6);
    pair(sv);
    ck_assert_int_eq(gpuipc_wire_open(&a, sv[0], "consumer", &e), 0);
    ck_assert_int_eq(gpuipc_wire_open(&b, sv[1], "producer", &e), 0);
    sample(GPUIPC_MSG_OFFER, &m);
    m.nfds = 1;
    ck_assert_int_eq(gpuipc_wire_send(a, &m, &fd, gpuipc_clock_deadline(GPUIPC_NS_PER_S),
                                      GPUIPC_STEP_OFFER, &e), 0);
    close(fd);
    before = th_fd_count();
    ck_assert_int_eq(gpuipc_wire_recv(b, GPUIPC_MSG_BIT(GPUIPC_MSG_OFFER), &m, fds,
                                      gpuipc_clock_deadline(GPUIPC_NS_PER_S), GPUIPC_STEP_OFFER,
                                      &e), 0);
    ck_assert_uint_eq(m.nfds, 1);
    ck_assert_int_eq(th_fd_count(), before + 1);
    ck_assert_int_eq(pread(fds[0], text, 6, 0), 6);
    ck_assert_str_eq(text, "shared");
    ck_assert_int_eq(fcntl(fds[0], F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
    close(fds[0]);
    gpuipc_wire_close(a);
    gpuipc_wire_close(b);
}
END_TEST

START_TEST(test_wire_passes_253_fds)
{
    int sv[2], fds[GPUIPC_WIRE_MAX_FDS], got[GPUIPC_WIRE_MAX_FDS], i, before = th_fd_count();
    gpuipc_wire *a, *b;
    gpuipc_msg m;
    gpuipc_err e;

    pair(sv);
    ck_assert_int_eq(gpuipc_wire_open(&a, sv[0], "consumer", &e), 0);
    ck_assert_int_eq(gpuipc_wire_open(&b, sv[1], "producer", &e), 0);
    for (i = 0; i < GPUIPC_WIRE_MAX_FDS; i++) {
        fds[i] = new_memfd();
        ck_assert_int_eq(ftruncate(fds[i], i + 1), 0);
    }
    sample(GPUIPC_MSG_OFFER, &m);
    m.nfds = GPUIPC_WIRE_MAX_FDS;
    ck_assert_int_eq(gpuipc_wire_send(a, &m, fds, gpuipc_clock_deadline(GPUIPC_NS_PER_S),
                                      GPUIPC_STEP_OFFER, &e), 0);
    for (i = 0; i < GPUIPC_WIRE_MAX_FDS; i++)
        close(fds[i]);
    ck_assert_int_eq(gpuipc_wire_recv(b, GPUIPC_MSG_BIT(GPUIPC_MSG_OFFER), &m, got,
                                      gpuipc_clock_deadline(GPUIPC_NS_PER_S), GPUIPC_STEP_OFFER,
                                      &e), 0);
    ck_assert_uint_eq(m.nfds, GPUIPC_WIRE_MAX_FDS);
    for (i = 0; i < GPUIPC_WIRE_MAX_FDS; i++) /* in order: each is the size it was given */
        ck_assert_int_eq(lseek(got[i], 0, SEEK_END), i + 1);
    gpuipc_wire_close_fds(got, GPUIPC_WIRE_MAX_FDS);
    gpuipc_wire_close(a);
    gpuipc_wire_close(b);
    ck_assert_int_eq(th_fd_count(), before);
}
END_TEST

START_TEST(test_wire_refuses_to_send_254_fds)
{
    int sv[2], fds[GPUIPC_WIRE_MAX_FDS + 1] = {0};
    gpuipc_wire *a;
    gpuipc_msg m;
    gpuipc_err e;

    pair(sv);
    ck_assert_int_eq(gpuipc_wire_open(&a, sv[0], "consumer", &e), 0);
    sample(GPUIPC_MSG_OFFER, &m);
    m.nfds = GPUIPC_WIRE_MAX_FDS + 1;
    ck_assert_int_eq(gpuipc_wire_send(a, &m, fds, gpuipc_clock_deadline(GPUIPC_NS_PER_S),
                                      GPUIPC_STEP_OFFER, &e), -EINVAL);
    ck_assert_msg(strstr(e.msg, "254 FDs exceed the 253") != NULL, "reason: %s", e.msg);
    gpuipc_wire_close(a);
    close(sv[1]);
}
END_TEST

START_TEST(test_wire_times_out_when_peer_is_silent)
{
    int sv[2], fds[GPUIPC_WIRE_MAX_FDS];
    uint64_t t0;
    double took;
    gpuipc_wire *w;
    gpuipc_msg m;
    gpuipc_err e;

    pair(sv);
    ck_assert_int_eq(gpuipc_wire_open(&w, sv[1], "consumer", &e), 0);
    t0 = gpuipc_clock_ns();
    ck_assert_int_eq(gpuipc_wire_recv(w, GPUIPC_MSG_BIT(GPUIPC_MSG_REPORT), &m, fds,
                                      gpuipc_clock_deadline(200 * GPUIPC_NS_PER_MS),
                                      GPUIPC_STEP_REPORT, &e), -ETIMEDOUT);
    took = (double)(gpuipc_clock_ns() - t0) / 1e9;
    ck_assert_msg(took >= 0.199 && took < 1.0, "deadline 0.2 s, waited %.3f s", took);
    ck_assert_msg(strstr(e.msg, "timed out during report: no REPORT from the consumer") != NULL,
                  "reason: %s", e.msg);
    gpuipc_wire_close(w);
    close(sv[0]);
}
END_TEST

START_TEST(test_wire_send_times_out_when_peer_never_reads)
{
    int sv[2], small = 4096, i, rc = 0;
    gpuipc_wire *w;
    gpuipc_msg m;
    gpuipc_err e;

    pair(sv);
    ck_assert_int_eq(setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof(small)), 0);
    ck_assert_int_eq(gpuipc_wire_open(&w, sv[0], "consumer", &e), 0);
    sample(GPUIPC_MSG_OFFER, &m);
    for (i = 0; i < 10000 && rc == 0; i++)
        rc = gpuipc_wire_send(w, &m, NULL, gpuipc_clock_deadline(100 * GPUIPC_NS_PER_MS),
                              GPUIPC_STEP_OFFER, &e);
    ck_assert_int_eq(rc, -ETIMEDOUT);
    ck_assert_msg(strstr(e.msg, "timed out during offer: no room to send to the consumer"),
                  "reason: %s", e.msg);
    gpuipc_wire_close(w);
    close(sv[1]);
}
END_TEST

START_TEST(test_wire_reports_peer_gone_on_close)
{
    int sv[2], fds[GPUIPC_WIRE_MAX_FDS];
    gpuipc_wire *w;
    gpuipc_msg m;
    gpuipc_err e;

    pair(sv);
    ck_assert_int_eq(gpuipc_wire_open(&w, sv[1], "consumer", &e), 0);
    close(sv[0]);
    ck_assert_int_eq(gpuipc_wire_recv(w, GPUIPC_MSG_BIT(GPUIPC_MSG_READY), &m, fds,
                                      gpuipc_clock_deadline(GPUIPC_NS_PER_S), GPUIPC_STEP_READY,
                                      &e), -EPIPE);
    ck_assert_str_eq(e.msg, "peer gone during ready: the consumer closed the connection (EOF)");
    gpuipc_wire_close(w);
}
END_TEST

START_TEST(test_wire_reports_peer_gone_on_send_without_sigpipe)
{
    int sv[2];
    gpuipc_wire *w;
    gpuipc_msg m;
    gpuipc_err e;

    pair(sv);
    ck_assert_int_eq(gpuipc_wire_open(&w, sv[0], "consumer", &e), 0);
    close(sv[1]);
    sample(GPUIPC_MSG_BEGIN, &m);
    /* Without MSG_NOSIGNAL this would kill the test with SIGPIPE. */
    ck_assert_int_eq(gpuipc_wire_send(w, &m, NULL, gpuipc_clock_deadline(GPUIPC_NS_PER_S),
                                      GPUIPC_STEP_BEGIN, &e), -EPIPE);
    ck_assert_msg(strstr(e.msg, "peer gone during begin: the consumer") != NULL, "reason: %s",
                  e.msg);
    gpuipc_wire_close(w);
}
END_TEST

START_TEST(test_wire_reports_killed_peer_within_deadline)
{
    int sv[2], fds[GPUIPC_WIRE_MAX_FDS], status;
    uint64_t t0;
    gpuipc_wire *w;
    gpuipc_msg m;
    gpuipc_err e;
    pid_t pid;

    pair(sv);
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        close(sv[1]);
        pause();
        _exit(0);
    }
    close(sv[0]);
    ck_assert_int_eq(gpuipc_wire_open(&w, sv[1], "consumer", &e), 0);
    usleep(50000);
    kill(pid, SIGKILL);
    t0 = gpuipc_clock_ns();
    ck_assert_int_eq(gpuipc_wire_recv(w, GPUIPC_MSG_BIT(GPUIPC_MSG_REPORT), &m, fds,
                                      gpuipc_clock_deadline(5 * GPUIPC_NS_PER_S),
                                      GPUIPC_STEP_REPORT, &e), -EPIPE);
    ck_assert_msg(gpuipc_clock_ns() - t0 < GPUIPC_NS_PER_S, "noticed only after %.3f s",
                  (double)(gpuipc_clock_ns() - t0) / 1e9);
    ck_assert_msg(strstr(e.msg, "peer gone during report") != NULL, "reason: %s", e.msg);
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    gpuipc_wire_close(w);
}
END_TEST

START_TEST(test_wire_stays_broken_after_a_failure)
{
    int sv[2], fds[GPUIPC_WIRE_MAX_FDS];
    uint64_t t0;
    gpuipc_wire *w;
    gpuipc_msg m;
    gpuipc_err e;

    pair(sv);
    ck_assert_int_eq(gpuipc_wire_open(&w, sv[1], "consumer", &e), 0);
    ck_assert_int_eq(gpuipc_wire_recv(w, ANY, &m, fds, gpuipc_clock_deadline(50 * GPUIPC_NS_PER_MS),
                                      GPUIPC_STEP_READY, &e), -ETIMEDOUT);
    /* A late message must not be taken for the answer to a later question. */
    sample(GPUIPC_MSG_READY, &m);
    t0 = gpuipc_clock_ns();
    ck_assert_int_eq(gpuipc_wire_recv(w, ANY, &m, fds, gpuipc_clock_deadline(GPUIPC_NS_PER_S),
                                      GPUIPC_STEP_REPORT, &e), -EPIPE);
    ck_assert_uint_lt(gpuipc_clock_ns() - t0, 100 * GPUIPC_NS_PER_MS);
    ck_assert_msg(strstr(e.msg, "connection unusable since: timed out during ready") != NULL,
                  "reason: %s", e.msg);
    gpuipc_wire_close(w);
    close(sv[0]);
}
END_TEST

/* BEGIN's --bench fields, each wrong in one way. */
START_TEST(test_wire_rejects_bad_bench_requests)
{
    static const struct {
        unsigned flags, iters;
        const char *needle;
    } bad[] = {
        {0x4, 0, "unknown flags 0x4"},
        {GPUIPC_BEGIN_BANDWIDTH, 20, "without TIMES"},
        {GPUIPC_BEGIN_TIMES | GPUIPC_BEGIN_BANDWIDTH, 0, "0 iterations, outside 1 to 1000"},
        {GPUIPC_BEGIN_TIMES | GPUIPC_BEGIN_BANDWIDTH, 1001, "1001 iterations"},
        {GPUIPC_BEGIN_TIMES, 5, "5 iterations without bandwidth runs"},
    };
    uint8_t buf[GPUIPC_WIRE_MAX_MSG];
    gpuipc_msg m;
    size_t i, len;

    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        sample(GPUIPC_MSG_BEGIN, &m);
        m.u.begin.flags = bad[i].flags;
        m.u.begin.iters = bad[i].iters;
        len = gpuipc_wire_encode(&m, 1, buf, sizeof(buf));
        expect_rejected(buf, len, 0, ANY, bad[i].needle);
    }
}
END_TEST

/* TIMES slices, each wrong in one way; and the largest valid one passes. */
START_TEST(test_wire_rejects_bad_times)
{
    static const struct {
        uint32_t series, first, count, flags;
        uint64_t stray; /* written to v[count] when count < 64 */
        const char *needle;
    } bad[] = {
        {8, 0, 1, 0, 0, "series 8 is unknown"},
        {0, 0, 0, 0, 0, "0 values, outside 1 to 64"},
        {0, 0, 65, 0, 0, "65 values"},
        {1, 65535, 2, 0, 0, "values 65535 to 65536 lie beyond"},
        {1, 0xffffffffu, 2, 0, 0, "lie beyond"},
        {2, 0, 2, 0x2, 0, "unknown flags 0x2"},
        {2, 0, 2, 0, 7, "value 2 is set beyond the count 2"},
    };
    uint8_t buf[GPUIPC_WIRE_MAX_MSG];
    gpuipc_msg m, got;
    gpuipc_err e;
    size_t i, len;

    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        sample(GPUIPC_MSG_TIMES, &m);
        m.u.times.series = bad[i].series;
        m.u.times.first = bad[i].first;
        m.u.times.count = bad[i].count;
        m.u.times.flags = bad[i].flags;
        if (bad[i].count < GPUIPC_WIRE_TIMES_MAX)
            m.u.times.v[bad[i].count] = bad[i].stray;
        len = gpuipc_wire_encode(&m, 1, buf, sizeof(buf));
        expect_rejected(buf, len, 0, ANY, bad[i].needle);
    }
    sample(GPUIPC_MSG_TIMES, &m);
    m.u.times.series = GPUIPC_WIRE_SERIES_MAX - 1;
    m.u.times.first = GPUIPC_WIRE_SERIES_LEN - GPUIPC_WIRE_TIMES_MAX;
    m.u.times.count = GPUIPC_WIRE_TIMES_MAX;
    for (i = 0; i < GPUIPC_WIRE_TIMES_MAX; i++)
        m.u.times.v[i] = UINT64_MAX - i;
    len = gpuipc_wire_encode(&m, 1, buf, sizeof(buf));
    ck_assert_int_eq(gpuipc_wire_decode(buf, len, 0, 1, ANY, &got, &e), 0);
    ck_assert_uint_eq(got.u.times.v[63], UINT64_MAX - 63);
}
END_TEST

Suite *wire_suite(void)
{
    Suite *s = suite_create("wire");
    TCase *codec = tcase_create("codec");
    TCase *bad = tcase_create("malformed");
    TCase *fds = tcase_create("fds");
    TCase *peer = tcase_create("deadlines_and_peers");

    tcase_add_loop_test(codec, test_wire_round_trips_every_type, 1, GPUIPC_MSG_TYPE_MAX + 1);
    tcase_add_test(codec, test_wire_encode_refuses_a_small_buffer);
    tcase_add_test(codec, test_wire_sends_every_type_over_a_socket);
    tcase_add_test(bad, test_wire_rejects_bad_magic);
    tcase_add_test(bad, test_wire_rejects_wrong_version);
    tcase_add_test(bad, test_wire_rejects_unknown_type);
    tcase_add_test(bad, test_wire_rejects_unexpected_type);
    tcase_add_test(bad, test_wire_rejects_short_header);
    tcase_add_test(bad, test_wire_rejects_short_payload);
    tcase_add_test(bad, test_wire_rejects_long_payload);
    tcase_add_test(bad, test_wire_rejects_length_field_that_lies);
    tcase_add_test(bad, test_wire_rejects_wrong_sequence);
    tcase_add_test(bad, test_wire_rejects_nonzero_reserved_field);
    tcase_add_test(bad, test_wire_rejects_missing_fd);
    tcase_add_test(bad, test_wire_rejects_extra_fds);
    tcase_add_test(bad, test_wire_rejects_fds_on_a_type_that_carries_none);
    tcase_add_test(bad, test_wire_rejects_fds_on_a_failed_offer);
    tcase_add_test(bad, test_wire_rejects_zero_size);
    tcase_add_test(bad, test_wire_rejects_oversized_size);
    tcase_add_test(bad, test_wire_rejects_size_not_a_multiple_of_granularity);
    tcase_add_test(bad, test_wire_rejects_granularity_not_a_power_of_two);
    tcase_add_test(bad, test_wire_rejects_unterminated_reason);
    tcase_add_test(bad, test_wire_rejects_nonprintable_reason);
    tcase_add_test(bad, test_wire_rejects_unknown_status_code);
    tcase_add_test(bad, test_wire_rejects_bad_mechanism_name);
    tcase_add_test(bad, test_wire_rejects_bad_bench_requests);
    tcase_add_test(bad, test_wire_rejects_bad_times);
    tcase_add_test(bad, test_wire_rejects_more_mismatches_than_words);
    tcase_add_test(bad, test_wire_rejects_oversized_datagram);
    tcase_add_test(bad, test_wire_rejects_empty_datagram);
    tcase_add_test(bad, test_wire_rejects_foreign_control_message);
    th_add_unless_valgrind(bad, test_wire_reports_truncated_fds_and_stays_usable,
                           "valgrind refuses to lower RLIMIT_NOFILE (it keeps FDs of its own at the top)");
    tcase_add_test(bad, test_wire_rejects_truncated_fds_on_a_bad_message);
    tcase_add_test(bad, test_wire_rejects_bad_fd_batches);
    tcase_add_test(bad, test_wire_rejects_bad_fd_totals);
    tcase_add_test(fds, test_wire_passes_one_fd);
    tcase_add_test(fds, test_wire_passes_253_fds);
    tcase_add_test(fds, test_wire_refuses_to_send_254_fds);
    tcase_add_test(peer, test_wire_times_out_when_peer_is_silent);
    tcase_add_test(peer, test_wire_send_times_out_when_peer_never_reads);
    tcase_add_test(peer, test_wire_reports_peer_gone_on_close);
    tcase_add_test(peer, test_wire_reports_peer_gone_on_send_without_sigpipe);
    tcase_add_test(peer, test_wire_reports_killed_peer_within_deadline);
    tcase_add_test(peer, test_wire_stays_broken_after_a_failure);
    suite_add_tcase(s, codec);
    suite_add_tcase(s, bad);
    suite_add_tcase(s, fds);
    suite_add_tcase(s, peer);
    return s;
}
