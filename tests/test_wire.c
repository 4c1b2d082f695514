/* SPDX-License-Identifier: Apache-2.0 */
/* test_wire.c: the protocol: framing of every message type, rejection of
 * every kind of malformed input (with its exact reason and no FD left
 * behind), FD passing, deadlines and a lost peer, and the frames on a stream
 * (a Unix SOCK_STREAM pair, and TCP on 127.0.0.1). */
#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/step.h"
#include "wire/wire.h"
#include "helpers.h"
#include "suites.h"

/* Offsets into a frame, as wire/msg.h lays it out. */
#define OFF_VERSION 4
#define OFF_TYPE 6
#define OFF_SEQ 8
#define OFF_LEN 12
#define OFF_NFDS 16
#define OFF_RESERVED 18
#define OFF_STATUS_REASON (GPUIPC_WIRE_HEADER_LEN + 8)
#define OFF_OFFER_SIZE (GPUIPC_WIRE_HEADER_LEN + 8 + GPUIPC_WIRE_REASON_LEN + 8 + GPUIPC_WIRE_CALL_LEN)
#define OFF_BEGIN_NAME GPUIPC_WIRE_HEADER_LEN
#define OFF_HELLO_NONCE (GPUIPC_WIRE_HEADER_LEN + 12)
#define OFF_HELLO_FACTS (OFF_HELLO_NONCE + GPUIPC_WIRE_NONCE_LEN + 8 + GPUIPC_WIRE_MAC_LEN) /* ns[], then uid, seccomp, yama ... */
#define OFF_AUTH_PID GPUIPC_WIRE_HEADER_LEN
#define OFF_HELLO_SECCOMP (OFF_HELLO_FACTS + 8 * GPUIPC_NS_COUNT + 4)
#define OFF_HELLO_KERNEL (OFF_HELLO_FACTS + 8 * GPUIPC_NS_COUNT + 32)

static void pair(int sv[2])
{
    ck_assert_int_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
}

/* A connected TCP connection on 127.0.0.1, as ranks on two nodes meet:
 * sv[0] the end that connected, sv[1] the end that accepted. */
static void tcp_pair(int sv[2])
{
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t alen = sizeof(addr);
    int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

    ck_assert_int_ge(l, 0);
    ck_assert_int_eq(bind(l, (struct sockaddr *)&addr, sizeof(addr)), 0); /* port 0: any */
    ck_assert_int_eq(listen(l, 1), 0);
    ck_assert_int_eq(getsockname(l, (struct sockaddr *)&addr, &alen), 0);
    sv[0] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ck_assert_int_ge(sv[0], 0);
    ck_assert_int_eq(connect(sv[0], (struct sockaddr *)&addr, sizeof(addr)), 0);
    sv[1] = accept4(l, NULL, NULL, SOCK_CLOEXEC);
    ck_assert_int_ge(sv[1], 0);
    close(l);
}

/* A connected stream: TCP where tcp is set, else a Unix SOCK_STREAM pair. */
static void stream_pair(int sv[2], int tcp)
{
    if (tcp)
        tcp_pair(sv);
    else
        ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
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
        memset(m->u.hello.nonce, 0xa5, sizeof(m->u.hello.nonce));
        m->u.hello.rank = 7;
        m->u.hello.peer_rank = 70000;
        memset(m->u.hello.mac, 0x5a, sizeof(m->u.hello.mac));
        gpuipc_facts_gather(&m->u.hello.facts);
        m->u.hello.facts.pid = 4242; /* travels as the HELLO's pid */
        break;
    case GPUIPC_MSG_AUTH:
        m->u.auth.pid = 4343;
        memset(m->u.auth.mac, 0x3c, sizeof(m->u.auth.mac));
        gpuipc_facts_gather(&m->u.auth.facts);
        m->u.auth.facts.pid = 4343; /* travels as AUTH's pid */
        break;
    case GPUIPC_MSG_BEGIN:
        strcpy(m->u.begin.mech, "vmm");
        m->u.begin.index = 3;
        m->u.begin.flags = GPUIPC_BEGIN_TIMES | GPUIPC_BEGIN_BANDWIDTH | GPUIPC_BEGIN_LINK;
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
    case GPUIPC_MSG_PHASE:
        m->u.phase.phase = 3;
        m->u.phase.flags = GPUIPC_PHASE_END;
        m->u.phase.cells = 144;
        break;
    case GPUIPC_MSG_PHASE_ACK:
        gpuipc_wire_status(&m->u.phase_ack.st, GPUIPC_FAIL, GPUIPC_STEP_NONE, "2 FDs more");
        m->u.phase_ack.usage.fds = 91;
        m->u.phase_ack.usage.objects = 4;
        m->u.phase_ack.usage.shmem = 16781312;
        m->u.phase_ack.usage.gpu = GPUIPC_USAGE_UNKNOWN;
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
 * every FD is closed again once both ends are. Each failure names the case. */
static void expect_rejected(const char *name, const uint8_t *frame, size_t len, int nfds,
                            unsigned accept, const char *needle)
{
    int before = th_fd_count(), sv[2], fds[GPUIPC_WIRE_MAX_FDS], i, rc;
    ssize_t sent;
    gpuipc_wire *w;
    gpuipc_msg m;
    gpuipc_err e;

    pair(sv);
    for (i = 0; i < nfds; i++)
        fds[i] = new_memfd();
    sent = th_send_raw(sv[0], frame, len, fds, nfds);
    ck_assert_msg(sent == (ssize_t)len, "%s: sent %zd of %zu bytes", name, sent, len);
    for (i = 0; i < nfds; i++)
        close(fds[i]);
    ck_assert_msg(gpuipc_wire_open(&w, sv[1], "producer", &e) == 0, "%s: open: %s", name, e.msg);
    rc = gpuipc_wire_recv(w, accept, &m, fds, gpuipc_clock_deadline(GPUIPC_NS_PER_S),
                          GPUIPC_STEP_OFFER, &e);
    ck_assert_msg(rc == -EPROTO, "%s: recv returned %d, not -EPROTO (%d): '%s'", name, rc,
                  -EPROTO, rc < 0 ? e.msg : "");
    ck_assert_msg(strstr(e.msg, needle) != NULL, "%s: reason '%s' does not say '%s'", name, e.msg,
                  needle);
    ck_assert_msg(strstr(e.msg, "during offer") != NULL, "%s: reason '%s' names no step", name,
                  e.msg);
    ck_assert_msg(gpuipc_wire_broken(w) != NULL, "%s: the wire is not marked broken", name);
    gpuipc_wire_close(w);
    close(sv[0]);
    ck_assert_msg(th_fd_count() == before, "%s: %d FDs open after, %d before", name,
                  th_fd_count(), before);
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
    /* Sealed (a job's session), it still fits the receiver's buffer. */
    ck_assert_msg(len + GPUIPC_WIRE_SEAL_LEN <= GPUIPC_WIRE_MAX_MSG, "%s: %zu bytes, no room "
                  "for its seal", gpuipc_wire_type_name(type), len);
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

/* TIMES: the largest valid slice (the last series, its last 64 values, each
 * near UINT64_MAX) decodes, so the limits below reject nothing valid. */
START_TEST(test_wire_accepts_the_largest_times_slice)
{
    uint8_t buf[GPUIPC_WIRE_MAX_MSG];
    gpuipc_msg m, got;
    gpuipc_err e;
    size_t i, len;

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

/* One field of a message, set before it is encoded: to value, or where text
 * is given, to that string (the rest of the field zeroed). */
typedef struct msg_field {
    size_t at, size;
    uint64_t value;
    const char *text;
} msg_field;

#define SET(f, v) {offsetof(gpuipc_msg, f), sizeof(((gpuipc_msg *)0)->f), (uint64_t)(v), NULL}
#define SET_TEXT(f, s) {offsetof(gpuipc_msg, f), sizeof(((gpuipc_msg *)0)->f), 0, (s)}

/* Bytes of an encoded frame overwritten after encoding: value, little-endian,
 * in width bytes at offset at, repeat times over (0: no change). */
typedef struct frame_poke {
    size_t at;
    unsigned width;
    uint64_t value;
    size_t repeat;
} frame_poke;

#define U8(at, v) {(at), 1, (v), 1}
#define U16(at, v) {(at), 2, (v), 1}
#define U32(at, v) {(at), 4, (v), 1}
#define U64(at, v) {(at), 8, (v), 1}
#define FILL(at, byte, n) {(at), 1, (byte), (n)}

/* Every malformed message the receiver must refuse, each as one spoiled
 * sample(): a message field set before encoding, or a frame field after,
 * or the length sent changed; with the FDs sent along, the types the
 * receiver accepts, and what its reason must say. A new case is a row. */
static const struct bad_message {
    const char *name;
    unsigned type;       /* the sample() it starts from; 0: none, an empty datagram */
    uint32_t seq;        /* the sequence number it carries; 0: 1, the expected one */
    msg_field set[5];    /* message fields, before encoding */
    frame_poke poke;     /* frame bytes, after encoding */
    int payload;         /* bytes added to the payload (negative: cut), the header agreeing */
    size_t length;       /* bytes sent, zeros past the frame; 0: the frame as it is */
    int nfds;            /* fresh FDs sent with it */
    unsigned accept;     /* the types the receiver accepts; 0: any */
    const char *reason;  /* what the rejection must say */
} bad_messages[] = {
    /* The frame and its header. */
    {.name = "bad magic", .type = GPUIPC_MSG_HELLO, .poke = U32(0, 0x12345678),
     .reason = "bad magic 0x12345678"},
    {.name = "wrong version", .type = GPUIPC_MSG_HELLO, .poke = U16(OFF_VERSION, 9),
     .reason = "protocol version 9"},
    {.name = "unknown type", .type = GPUIPC_MSG_HELLO, .poke = U16(OFF_TYPE, 77),
     .reason = "unknown message type 77"},
    {.name = "unexpected type", .type = GPUIPC_MSG_BYE,
     .accept = GPUIPC_MSG_BIT(GPUIPC_MSG_READY), .reason = "got BYE, expected READY"},
    {.name = "empty datagram", .type = 0, .reason = "short message: 0 bytes"},
    {.name = "short header", .type = GPUIPC_MSG_HELLO, .length = 12,
     .reason = "short message: 12 bytes"},
    {.name = "short payload", .type = GPUIPC_MSG_READY, .payload = -8,
     .reason = "READY: payload is 424 bytes, expected 432"},
    {.name = "long payload", .type = GPUIPC_MSG_HELLO, .payload = 4,
     .reason = "HELLO: payload is 264 bytes, expected 260"},
    {.name = "AUTH from pid 0", .type = GPUIPC_MSG_AUTH, .poke = U32(OFF_AUTH_PID, 0),
     .reason = "AUTH: pid 0 is not a process id"},
    {.name = "facts: an unknown seccomp mode", .type = GPUIPC_MSG_HELLO,
     .poke = U32(OFF_HELLO_SECCOMP, 7), .reason = "facts: seccomp 7 is not 0 to 2"},
    {.name = "facts: a kernel release with a control byte", .type = GPUIPC_MSG_HELLO,
     .poke = U8(OFF_HELLO_KERNEL, 0x1b),
     .reason = "facts: kernel release has a non-printable byte 0x1b at 0"},
    {.name = "facts: a dumpable value that does not exist", .type = GPUIPC_MSG_HELLO,
     .poke = U32(OFF_HELLO_SECCOMP + 8, 5), .reason = "facts: dumpable 5 is not 0 to 2"},
    {.name = "length field that lies", .type = GPUIPC_MSG_HELLO, .poke = U32(OFF_LEN, 100),
     .reason = "header says 100 payload bytes, 260 arrived"},
    {.name = "oversized datagram", .type = GPUIPC_MSG_HELLO,
     .length = GPUIPC_WIRE_MAX_MSG + 1000, .nfds = 2, .reason = "message truncated (MSG_TRUNC)"},
    {.name = "wrong sequence", .type = GPUIPC_MSG_HELLO, .seq = 4,
     .reason = "sequence number 4, expected 1"},
    {.name = "nonzero reserved field", .type = GPUIPC_MSG_HELLO, .poke = U16(OFF_RESERVED, 1),
     .reason = "reserved header field is 0x0001"},
    /* FDs against the header and the message. */
    {.name = "missing fd", .type = GPUIPC_MSG_OFFER, .poke = U16(OFF_NFDS, 1),
     .reason = "OFFER: header says 1 FDs, 0 arrived"},
    {.name = "extra fds", .type = GPUIPC_MSG_OFFER, .poke = U16(OFF_NFDS, 1), .nfds = 3,
     .reason = "OFFER: header says 1 FDs, 3 arrived"},
    {.name = "fds on a type that carries none", .type = GPUIPC_MSG_READY,
     .poke = U16(OFF_NFDS, 2), .nfds = 2, .reason = "READY: carries 2 FDs, at most 0 allowed"},
    {.name = "fds on a failed offer", .type = GPUIPC_MSG_OFFER,
     .set = {SET(u.offer.st.code, GPUIPC_FAIL), SET(u.offer.st.step, GPUIPC_STEP_ALLOC),
             SET_TEXT(u.offer.st.reason, "out of memory"), SET(nfds, 1),
             SET(u.offer.fds_total, 0)},
     .nfds = 1, .reason = "a failed offer carries 1 FDs and announces 0"},
    {.name = "offer announcing too many fds", .type = GPUIPC_MSG_OFFER,
     .set = {SET(u.offer.fds_total, GPUIPC_WIRE_MAX_OFFER_FDS + 1)},
     .reason = "offer announces 65537 FDs, at most 65536 allowed"},
    {.name = "offer carrying more fds than it announces", .type = GPUIPC_MSG_OFFER,
     .set = {SET(u.offer.fds_total, 1), SET(nfds, 2)}, .nfds = 2,
     .reason = "offer carries 2 FDs but announces only 1 in all"},
    {.name = "failed offer announcing fds", .type = GPUIPC_MSG_OFFER,
     .set = {SET(u.offer.st.code, GPUIPC_FAIL), SET(u.offer.st.step, GPUIPC_STEP_ALLOC),
             SET_TEXT(u.offer.st.reason, "out of memory")},
     .reason = "a failed offer carries 0 FDs and announces 1000"},
    {.name = "fd batch reporting success without fds", .type = GPUIPC_MSG_FDS,
     .set = {SET(u.fds.st.code, GPUIPC_PASS), SET(u.fds.st.step, GPUIPC_STEP_NONE),
             SET_TEXT(u.fds.st.reason, "")},
     .reason = "a batch that reports success carries no FDs"},
    {.name = "failed fd batch with fds", .type = GPUIPC_MSG_FDS, .set = {SET(nfds, 2)},
     .nfds = 2, .reason = "a failed batch carries 2 FDs"},
    {.name = "fd batch starting at fd number 0", .type = GPUIPC_MSG_FDS,
     .set = {SET(u.fds.first, 0)}, .reason = "first FD number 0 is outside 1 to 65535"},
    /* Status fields. */
    {.name = "unterminated reason", .type = GPUIPC_MSG_READY,
     .poke = FILL(OFF_STATUS_REASON, 'x', GPUIPC_WIRE_REASON_LEN),
     .reason = "status reason is not NUL-terminated"},
    {.name = "nonprintable reason", .type = GPUIPC_MSG_READY,
     .poke = U8(OFF_STATUS_REASON + 2, 0x1b), /* ESC: a terminal escape sequence */
     .reason = "non-printable byte 0x1b at 2"},
    {.name = "unknown status code", .type = GPUIPC_MSG_END_ACK,
     .poke = U32(GPUIPC_WIRE_HEADER_LEN, 5), .reason = "status code 5 is none of 0, 1, 77"},
    /* OFFER's sizes. */
    {.name = "zero size", .type = GPUIPC_MSG_OFFER, .poke = U64(OFF_OFFER_SIZE, 0),
     .reason = "OFFER: size is 0"},
    {.name = "oversized size", .type = GPUIPC_MSG_OFFER, .poke = U64(OFF_OFFER_SIZE, 1ull << 50),
     .reason = "exceeds the 16 TiB limit"},
    {.name = "size not a multiple of granularity", .type = GPUIPC_MSG_OFFER,
     .poke = U64(OFF_OFFER_SIZE, (6u << 20) + 4096),
     .reason = "is not a multiple of granularity 2097152"},
    {.name = "granularity not a power of two", .type = GPUIPC_MSG_OFFER,
     .poke = U64(OFF_OFFER_SIZE + 8, 3u << 20),
     .reason = "granularity 3145728 is not a power of two"},
    /* BEGIN: the mechanism's name and the --bench fields. */
    {.name = "bad mechanism name", .type = GPUIPC_MSG_BEGIN, .poke = U8(OFF_BEGIN_NAME + 1, '/'),
     .reason = "mechanism name has byte 0x2f at 1"},
    {.name = "bench: unknown flags", .type = GPUIPC_MSG_BEGIN,
     .set = {SET(u.begin.flags, 0x8), SET(u.begin.iters, 0)}, .reason = "unknown flags 0x8"},
    {.name = "bench: bandwidth without times", .type = GPUIPC_MSG_BEGIN,
     .set = {SET(u.begin.flags, GPUIPC_BEGIN_BANDWIDTH), SET(u.begin.iters, 20)},
     .reason = "without TIMES"},
    {.name = "bench: 0 iterations", .type = GPUIPC_MSG_BEGIN,
     .set = {SET(u.begin.flags, GPUIPC_BEGIN_TIMES | GPUIPC_BEGIN_BANDWIDTH),
             SET(u.begin.iters, 0)},
     .reason = "0 iterations, outside 1 to 1000"},
    {.name = "bench: 1001 iterations", .type = GPUIPC_MSG_BEGIN,
     .set = {SET(u.begin.flags, GPUIPC_BEGIN_TIMES | GPUIPC_BEGIN_BANDWIDTH),
             SET(u.begin.iters, 1001)},
     .reason = "1001 iterations"},
    {.name = "bench: iterations without bandwidth", .type = GPUIPC_MSG_BEGIN,
     .set = {SET(u.begin.flags, GPUIPC_BEGIN_TIMES), SET(u.begin.iters, 5)},
     .reason = "5 iterations without bandwidth runs"},
    {.name = "link: iterations without bandwidth", .type = GPUIPC_MSG_BEGIN,
     .set = {SET(u.begin.flags, GPUIPC_BEGIN_LINK), SET(u.begin.iters, 5)},
     .reason = "5 iterations without bandwidth runs"},
    /* REPORT. */
    {.name = "more mismatches than words", .type = GPUIPC_MSG_REPORT,
     .set = {SET(u.report.check.mismatches, 2000)},
     .reason = "check counts 2000 mismatches in 1000 words"},
    /* Verdicts their own figures deny. */
    {.name = "a report of pass with bad words", .type = GPUIPC_MSG_REPORT,
     .set = {SET(u.report.st.code, GPUIPC_PASS)},
     .reason = "REPORT: a self-contradictory message: REPORT says PASS, but its check counts "
               "12 mismatches in 1000 words"},
    {.name = "an end of pass with bad words", .type = GPUIPC_MSG_END,
     .set = {SET(u.end.check.mismatches, 3)},
     .reason = "END: a self-contradictory message: END says PASS, but its check counts 3 "
               "mismatches in 8 words"},
    {.name = "a bye of pass with failures", .type = GPUIPC_MSG_BYE,
     .set = {SET(u.bye.code, GPUIPC_PASS), SET(u.bye.passed, 4), SET(u.bye.failed, 5)},
     .reason = "BYE: a self-contradictory message: BYE says PASS, but counts 5 failed"},
    {.name = "a bye of skip with scenarios run", .type = GPUIPC_MSG_BYE,
     .set = {SET(u.bye.passed, 2)},
     .reason = "BYE says SKIP (nothing could run), but counts 2 passed and 0 failed"},
    /* TIMES slices. Each sets the value just past its count too: to zero,
     * but in the last row, where that value is the fault. */
    {.name = "times: unknown series", .type = GPUIPC_MSG_TIMES,
     .set = {SET(u.times.series, 9), SET(u.times.first, 0), SET(u.times.count, 1),
             SET(u.times.flags, 0), SET(u.times.v[1], 0)},
     .reason = "series 9 is unknown"},
    {.name = "times: 0 values", .type = GPUIPC_MSG_TIMES,
     .set = {SET(u.times.series, 0), SET(u.times.first, 0), SET(u.times.count, 0),
             SET(u.times.flags, 0), SET(u.times.v[0], 0)},
     .reason = "0 values, outside 1 to 64"},
    {.name = "times: 65 values", .type = GPUIPC_MSG_TIMES,
     .set = {SET(u.times.series, 0), SET(u.times.first, 0), SET(u.times.count, 65),
             SET(u.times.flags, 0)},
     .reason = "65 values"},
    {.name = "times: values past the series", .type = GPUIPC_MSG_TIMES,
     .set = {SET(u.times.series, 1), SET(u.times.first, 65535), SET(u.times.count, 2),
             SET(u.times.flags, 0), SET(u.times.v[2], 0)},
     .reason = "values 65535 to 65536 lie beyond"},
    {.name = "times: first value wrapping around", .type = GPUIPC_MSG_TIMES,
     .set = {SET(u.times.series, 1), SET(u.times.first, 0xffffffffu), SET(u.times.count, 2),
             SET(u.times.flags, 0), SET(u.times.v[2], 0)},
     .reason = "lie beyond"},
    {.name = "times: unknown flags", .type = GPUIPC_MSG_TIMES,
     .set = {SET(u.times.series, 2), SET(u.times.first, 0), SET(u.times.count, 2),
             SET(u.times.flags, 0x2), SET(u.times.v[2], 0)},
     .reason = "unknown flags 0x2"},
    {.name = "times: value set past the count", .type = GPUIPC_MSG_TIMES,
     .set = {SET(u.times.series, 2), SET(u.times.first, 0), SET(u.times.count, 2),
             SET(u.times.flags, 0), SET(u.times.v[2], 7)},
     .reason = "value 2 is set beyond the count 2"},
    /* PHASE: a beginning or an end, its workers as many as its FDs. */
    {.name = "phase: neither begin nor end", .type = GPUIPC_MSG_PHASE,
     .set = {SET(u.phase.flags, 3)}, .reason = "flags 0x3 are neither BEGIN nor END"},
    {.name = "phase: workers without their FDs", .type = GPUIPC_MSG_PHASE,
     .set = {SET(u.phase.flags, GPUIPC_PHASE_BEGIN), SET(u.phase.workers, 2)},
     .reason = "2 workers with 0 FDs"},
    {.name = "phase: an end with workers", .type = GPUIPC_MSG_PHASE,
     .set = {SET(u.phase.workers, 1), SET(nfds, 1)}, .nfds = 1,
     .reason = "an end of a phase carries 1 workers"},
    {.name = "phase: too many cells", .type = GPUIPC_MSG_PHASE,
     .set = {SET(u.phase.cells, 0xffffffff)}, .reason = "4294967295 cells exceed"},
};
#define N_BAD_MESSAGES (int)(sizeof(bad_messages) / sizeof(bad_messages[0]))

static void set_field(gpuipc_msg *m, const msg_field *f, const char *name)
{
    uint8_t *p = (uint8_t *)m + f->at;
    uint16_t v16 = (uint16_t)f->value;
    uint32_t v32 = (uint32_t)f->value;

    if (f->text != NULL) {
        memset(p, 0, f->size);
        snprintf((char *)p, f->size, "%s", f->text);
        return;
    }
    switch (f->size) {
    case 1:
        *p = (uint8_t)f->value;
        break;
    case 2:
        memcpy(p, &v16, 2);
        break;
    case 4:
        memcpy(p, &v32, 4);
        break;
    case 8:
        memcpy(p, &f->value, 8);
        break;
    default:
        ck_abort_msg("%s: a field of %zu bytes", name, f->size);
    }
}

/* Builds row's message in buf (cap bytes, zeroed first). Returns the bytes
 * to send. */
static size_t build_bad_message(const struct bad_message *row, uint8_t *buf, size_t cap)
{
    gpuipc_msg m;
    size_t len, i, j;
    unsigned b;

    memset(buf, 0, cap);
    if (row->type == 0)
        return 0;
    sample(row->type, &m);
    for (i = 0; i < sizeof(row->set) / sizeof(row->set[0]) && row->set[i].size > 0; i++)
        set_field(&m, &row->set[i], row->name);
    len = gpuipc_wire_encode(&m, row->seq ? row->seq : 1, buf, GPUIPC_WIRE_MAX_MSG);
    ck_assert_msg(len > 0, "%s: the message does not encode", row->name);
    for (j = 0; j < row->poke.repeat; j++)
        for (b = 0; b < row->poke.width; b++)
            buf[row->poke.at + j * row->poke.width + b] = (uint8_t)(row->poke.value >> (8 * b));
    if (row->payload != 0) {
        len = (size_t)((long)len + row->payload);
        put32(buf + OFF_LEN, (uint32_t)(len - GPUIPC_WIRE_HEADER_LEN));
    }
    return row->length ? row->length : len;
}

START_TEST(test_wire_rejects_a_malformed_message)
{
    const struct bad_message *row = &bad_messages[_i];
    uint8_t buf[GPUIPC_WIRE_MAX_MSG + 1000];
    size_t len = build_bad_message(row, buf, sizeof(buf));

    ck_assert_msg(len <= sizeof(buf), "%s: %zu bytes to send, room for %zu", row->name, len,
                  sizeof(buf));
    expect_rejected(row->name, buf, len, row->nfds, row->accept ? row->accept : ANY,
                    row->reason);
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

/* Waits 0.2 s for a REPORT on w, from a consumer that sends none whole:
 * the receive must end at its deadline, say so, and break the wire. */
static void expect_report_timeout(gpuipc_wire *w)
{
    int fds[GPUIPC_WIRE_MAX_FDS];
    uint64_t t0;
    double took;
    gpuipc_msg m;
    gpuipc_err e;

    t0 = gpuipc_clock_ns();
    ck_assert_int_eq(gpuipc_wire_recv(w, GPUIPC_MSG_BIT(GPUIPC_MSG_REPORT), &m, fds,
                                      gpuipc_clock_deadline(200 * GPUIPC_NS_PER_MS),
                                      GPUIPC_STEP_REPORT, &e), -ETIMEDOUT);
    took = (double)(gpuipc_clock_ns() - t0) / 1e9;
    ck_assert_msg(took >= 0.199 && took < 2.0, "deadline 0.2 s, waited %.3f s", took);
    ck_assert_msg(strstr(e.msg, "timed out during report: no REPORT from the consumer") != NULL,
                  "reason: %s", e.msg);
    ck_assert_ptr_nonnull(gpuipc_wire_broken(w));
}

START_TEST(test_wire_times_out_when_peer_is_silent)
{
    int sv[2];
    gpuipc_wire *w;
    gpuipc_err e;

    pair(sv);
    ck_assert_int_eq(gpuipc_wire_open(&w, sv[1], "consumer", &e), 0);
    expect_report_timeout(w);
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

/* Reads exactly n bytes from the stream fd into buf. */
static void read_exactly(int fd, uint8_t *buf, size_t n)
{
    size_t got = 0;
    ssize_t r;

    while (got < n) {
        r = recv(fd, buf + got, n - got, 0);
        ck_assert_msg(r > 0, "recv: %zd after %zu of %zu bytes", r, got, n);
        got += (size_t)r;
    }
}

/* Reads one frame off the stream fd as the wire sends it: its 4-byte
 * little-endian length, which must be a frame's, then the frame. Returns
 * the bytes in buf, the length's 4 with them. */
static size_t read_stream_frame(int fd, uint8_t *buf)
{
    uint32_t len;

    read_exactly(fd, buf, 4);
    len = (uint32_t)buf[0] | (uint32_t)buf[1] << 8 | (uint32_t)buf[2] << 16 |
          (uint32_t)buf[3] << 24;
    ck_assert_msg(len >= GPUIPC_WIRE_HEADER_LEN && len <= GPUIPC_WIRE_MAX_MSG,
                  "the stream's first 4 bytes announce %u bytes, no frame's length", len);
    read_exactly(fd, buf + 4, len);
    return 4 + len;
}

/* A sealed session (--ranks, from AUTH): what one side sends, as a relay
 * between the two sockets may alter it. The producer's wire writes into
 * a[0]; the relay reads the frame at a[1] and writes it, altered as told
 * (flip_at counts from the frame's first byte, after a stream's length),
 * into b[0]; the consumer's wire reads it at b[1]. The sockets are
 * SOCK_SEQPACKET, or Unix streams where stream is set. Returns what the
 * consumer's receive returned, its reason in e. */
static int relay_one(int stream, const uint8_t key_p[GPUIPC_WIRE_KEY_LEN],
                     const uint8_t key_c[GPUIPC_WIRE_KEY_LEN], int flip_at, int reflect,
                     gpuipc_err *e)
{
    int a[2], b[2], fds[GPUIPC_WIRE_MAX_FDS], rc, skip = stream ? 4 : 0;
    gpuipc_wire *p, *c;
    uint8_t frame[4 + GPUIPC_WIRE_MAX_MSG];
    gpuipc_msg m;
    ssize_t n;

    if (stream) {
        stream_pair(a, 0);
        stream_pair(b, 0);
    } else {
        pair(a);
        pair(b);
    }
    ck_assert_int_eq(gpuipc_wire_open(&p, a[0], "consumer", e), 0);
    ck_assert_int_eq(gpuipc_wire_open(&c, b[1], "producer", e), 0);
    gpuipc_wire_seal(p, key_p, GPUIPC_ROLE_PRODUCER, GPUIPC_ROLE_CONSUMER);
    gpuipc_wire_seal(c, key_c, reflect ? GPUIPC_ROLE_PRODUCER : GPUIPC_ROLE_CONSUMER,
                     reflect ? GPUIPC_ROLE_CONSUMER : GPUIPC_ROLE_PRODUCER);
    ck_assert(gpuipc_wire_sealed(p) && gpuipc_wire_sealed(c));
    sample(GPUIPC_MSG_BEGIN, &m);
    ck_assert_int_eq(gpuipc_wire_send(p, &m, NULL, gpuipc_clock_deadline(GPUIPC_NS_PER_S),
                                      GPUIPC_STEP_BEGIN, e), 0);
    n = stream ? (ssize_t)read_stream_frame(a[1], frame) : recv(a[1], frame, sizeof(frame), 0);
    ck_assert_int_gt(n, skip + GPUIPC_WIRE_HEADER_LEN + GPUIPC_WIRE_SEAL_LEN);
    if (flip_at >= 0)
        frame[skip + flip_at < n ? skip + flip_at : n - 1] ^= 0x01;
    ck_assert_int_eq(send(b[0], frame, (size_t)n, 0), n);
    rc = gpuipc_wire_recv(c, GPUIPC_MSG_BIT(GPUIPC_MSG_BEGIN), &m, fds,
                          gpuipc_clock_deadline(GPUIPC_NS_PER_S), GPUIPC_STEP_BEGIN, e);
    gpuipc_wire_close(p);
    gpuipc_wire_close(c);
    close(a[1]);
    close(b[0]);
    return rc;
}

/* On SOCK_SEQPACKET (_i 0) and on a stream (_i 1), where the length before
 * the frame is not sealed but the frame it announces is. */
START_TEST(test_wire_seal_refuses_altered_reflected_and_foreign_frames)
{
    uint8_t key[GPUIPC_WIRE_KEY_LEN], other[GPUIPC_WIRE_KEY_LEN];
    gpuipc_err e;
    int at;

    memset(key, 0x3c, sizeof(key));
    memcpy(other, key, sizeof(other));
    other[31] ^= 0x80;
    /* As sent: taken. */
    ck_assert_int_eq(relay_one(_i, key, key, -1, 0, &e), 0);
    /* A bit changed anywhere after a stream's length, header, body or the
     * seal itself: refused. */
    for (at = 0; at < 200; at += 13) {
        ck_assert_int_eq(relay_one(_i, key, key, at, 0, &e), -EBADMSG);
        ck_assert_msg(strstr(e.msg, "bad message from the producer during begin: its seal does "
                             "not hold under the session's key (altered on the way") != NULL,
                      "%s", e.msg);
    }
    /* Sealed under another key (a process without the job's token). */
    ck_assert_int_eq(relay_one(_i, key, other, -1, 0, &e), -EBADMSG);
    /* The producer's own frame sent back to a producer: refused (the
     * sender's role is in the seal). */
    ck_assert_int_eq(relay_one(_i, key, key, -1, 1, &e), -EBADMSG);
}
END_TEST

/* Moves one frame and its one FD from socket from to socket to, the FD
 * swapped for swap where swap >= 0 (a relay that hands over other memory). */
static void relay_with_fd(int from, int to, int swap)
{
    uint8_t frame[GPUIPC_WIRE_MAX_MSG];
    union {
        struct cmsghdr align;
        char buf[CMSG_SPACE(sizeof(int))];
    } ctrl;
    struct iovec iov = {frame, sizeof(frame)};
    struct msghdr mh;
    struct cmsghdr *cm;
    ssize_t n;
    int fd;

    memset(&mh, 0, sizeof(mh));
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    mh.msg_control = ctrl.buf;
    mh.msg_controllen = sizeof(ctrl.buf);
    n = recvmsg(from, &mh, MSG_CMSG_CLOEXEC);
    ck_assert_int_gt(n, 0);
    cm = CMSG_FIRSTHDR(&mh);
    ck_assert_ptr_nonnull(cm);
    memcpy(&fd, CMSG_DATA(cm), sizeof(fd));
    if (swap >= 0)
        memcpy(CMSG_DATA(cm), &swap, sizeof(swap));
    iov.iov_len = (size_t)n;
    ck_assert_int_eq(sendmsg(to, &mh, 0), n);
    close(fd);
}

START_TEST(test_wire_seal_refuses_a_swapped_fd)
{
    uint8_t key[GPUIPC_WIRE_KEY_LEN];
    int a[2], b[2], fds[GPUIPC_WIRE_MAX_FDS], round;

    memset(key, 0x5e, sizeof(key));
    for (round = 0; round < 2; round++) {
        int fd = new_memfd(), other = open("/dev/null", O_RDONLY | O_CLOEXEC);
        gpuipc_wire *p, *c;
        gpuipc_msg m;
        gpuipc_err e;

        pair(a);
        pair(b);
        ck_assert_int_eq(gpuipc_wire_open(&p, a[0], "consumer", &e), 0);
        ck_assert_int_eq(gpuipc_wire_open(&c, b[1], "producer", &e), 0);
        gpuipc_wire_seal(p, key, GPUIPC_ROLE_PRODUCER, GPUIPC_ROLE_CONSUMER);
        gpuipc_wire_seal(c, key, GPUIPC_ROLE_CONSUMER, GPUIPC_ROLE_PRODUCER);
        sample(GPUIPC_MSG_OFFER, &m);
        m.nfds = 1;
        ck_assert_int_eq(gpuipc_wire_send(p, &m, &fd, gpuipc_clock_deadline(GPUIPC_NS_PER_S),
                                          GPUIPC_STEP_OFFER, &e), 0);
        /* Round 0: forwarded as it came; round 1: another file in its place. */
        relay_with_fd(a[1], b[0], round == 0 ? -1 : other);
        if (round == 0) {
            ck_assert_int_eq(gpuipc_wire_recv(c, GPUIPC_MSG_BIT(GPUIPC_MSG_OFFER), &m, fds,
                                              gpuipc_clock_deadline(GPUIPC_NS_PER_S),
                                              GPUIPC_STEP_OFFER, &e), 0);
            close(fds[0]);
        } else {
            ck_assert_int_eq(gpuipc_wire_recv(c, GPUIPC_MSG_BIT(GPUIPC_MSG_OFFER), &m, fds,
                                              gpuipc_clock_deadline(GPUIPC_NS_PER_S),
                                              GPUIPC_STEP_OFFER, &e), -EBADMSG);
            ck_assert_msg(strstr(e.msg, "its seal does not hold") != NULL, "%s", e.msg);
        }
        close(fd);
        close(other);
        close(a[1]);
        close(b[0]);
        gpuipc_wire_close(p);
        gpuipc_wire_close(c);
    }
}
END_TEST

START_TEST(test_wire_a_sealed_wire_refuses_an_unsealed_frame)
{
    uint8_t key[GPUIPC_WIRE_KEY_LEN];
    int sv[2], fds[GPUIPC_WIRE_MAX_FDS];
    gpuipc_wire *p, *c;
    gpuipc_msg m;
    gpuipc_err e;

    memset(key, 0x11, sizeof(key));
    pair(sv);
    ck_assert_int_eq(gpuipc_wire_open(&p, sv[0], "consumer", &e), 0);
    ck_assert_int_eq(gpuipc_wire_open(&c, sv[1], "producer", &e), 0);
    gpuipc_wire_seal(c, key, GPUIPC_ROLE_CONSUMER, GPUIPC_ROLE_PRODUCER);
    sample(GPUIPC_MSG_BYE, &m);
    ck_assert_int_eq(gpuipc_wire_send(p, &m, NULL, gpuipc_clock_deadline(GPUIPC_NS_PER_S),
                                      GPUIPC_STEP_BYE, &e), 0);
    ck_assert_int_eq(gpuipc_wire_recv(c, GPUIPC_MSG_BIT(GPUIPC_MSG_BYE), &m, fds,
                                      gpuipc_clock_deadline(GPUIPC_NS_PER_S), GPUIPC_STEP_BYE,
                                      &e), -EBADMSG);
    /* And the wire is unusable from then on. */
    ck_assert_int_lt(gpuipc_wire_send(c, &m, NULL, gpuipc_clock_deadline(GPUIPC_NS_PER_S),
                                      GPUIPC_STEP_BYE, &e), 0);
    gpuipc_wire_close(p);
    gpuipc_wire_close(c);
}
END_TEST

/* Receives READY on w, whose peer (the consumer) has closed the
 * connection: the receive must fail with -EPIPE and the reason want. Closes
 * w. */
static void expect_peer_gone(gpuipc_wire *w, const char *want)
{
    int fds[GPUIPC_WIRE_MAX_FDS];
    gpuipc_msg m;
    gpuipc_err e;

    ck_assert_int_eq(gpuipc_wire_recv(w, GPUIPC_MSG_BIT(GPUIPC_MSG_READY), &m, fds,
                                      gpuipc_clock_deadline(GPUIPC_NS_PER_S), GPUIPC_STEP_READY,
                                      &e), -EPIPE);
    ck_assert_str_eq(e.msg, want);
    gpuipc_wire_close(w);
}

START_TEST(test_wire_reports_peer_gone_on_close)
{
    int sv[2];
    gpuipc_wire *w;
    gpuipc_err e;

    pair(sv);
    ck_assert_int_eq(gpuipc_wire_open(&w, sv[1], "consumer", &e), 0);
    close(sv[0]);
    expect_peer_gone(w, "peer gone during ready: the consumer closed the connection (EOF)");
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

/* The stream tests: sv[0] is the sending end, sv[1] the receiving one. A
 * test that writes raw bytes builds them with stream_frame. */

/* The sample of type as a stream carries it, with sequence number seq: its
 * length, then its frame. Returns the bytes in buf (room for
 * 4 + GPUIPC_WIRE_MAX_MSG). */
static size_t stream_frame(unsigned type, uint32_t seq, uint8_t *buf)
{
    size_t len = encode(type, seq, buf + 4);

    put32(buf, (uint32_t)len);
    return 4 + len;
}

static void send_all(int fd, const uint8_t *buf, size_t len)
{
    ck_assert_int_eq(send(fd, buf, len, MSG_NOSIGNAL), (ssize_t)len);
}

/* Opens the two ends of sv: *a the consumer's wire (its peer "consumer") on
 * sv[0], *b the producer's on sv[1]. */
static void open_both(const int sv[2], gpuipc_wire **a, gpuipc_wire **b)
{
    gpuipc_err e;

    ck_assert_msg(gpuipc_wire_open(a, sv[0], "consumer", &e) == 0, "open: %s", e.msg);
    ck_assert_msg(gpuipc_wire_open(b, sv[1], "producer", &e) == 0, "open: %s", e.msg);
}

/* Sends the sample of type on w; it must go within a second. */
static void send_sample(gpuipc_wire *w, unsigned type)
{
    gpuipc_msg m;
    gpuipc_err e;

    sample(type, &m);
    ck_assert_msg(gpuipc_wire_send(w, &m, NULL, gpuipc_clock_deadline(GPUIPC_NS_PER_S),
                                   GPUIPC_STEP_BEGIN, &e) == 0,
                  "send %s: %s", gpuipc_wire_type_name(type), e.msg);
}

/* Receives a message of type on w into m; it must come within 5 seconds,
 * as the sample of type was sent. */
static void recv_sample(gpuipc_wire *w, unsigned type, gpuipc_msg *m)
{
    int fds[GPUIPC_WIRE_MAX_FDS];
    gpuipc_msg want;
    gpuipc_err e;

    ck_assert_msg(gpuipc_wire_recv(w, GPUIPC_MSG_BIT(type), m, fds,
                                   gpuipc_clock_deadline(5 * GPUIPC_NS_PER_S), GPUIPC_STEP_BEGIN,
                                   &e) == 0,
                  "recv %s: %s", gpuipc_wire_type_name(type), e.msg);
    sample(type, &want);
    ck_assert_msg(memcmp(&m->u, &want.u, sizeof(want.u)) == 0, "%s changed on the way",
                  gpuipc_wire_type_name(type));
}

START_TEST(test_wire_open_tells_a_stream_from_datagrams)
{
    static const char *const kinds[] = {"SOCK_SEQPACKET", "a pipe", "a Unix stream", "TCP"};
    int sv[2], kind;
    gpuipc_wire *w;
    gpuipc_err e;

    for (kind = 0; kind < 4; kind++) {
        if (kind == 0)
            pair(sv);
        else if (kind == 1)
            ck_assert_int_eq(pipe2(sv, O_CLOEXEC), 0);
        else
            stream_pair(sv, kind == 3);
        ck_assert_int_eq(gpuipc_wire_open(&w, sv[0], "consumer", &e), 0);
        ck_assert_msg(gpuipc_wire_stream(w) == (kind >= 2), "%s: gpuipc_wire_stream says %d",
                      kinds[kind], gpuipc_wire_stream(w));
        gpuipc_wire_close(w);
        close(sv[1]);
    }
}
END_TEST

/* The stream holds them back to back, and only their lengths keep them
 * apart. Every type, all sent before any is received, over a Unix stream (_i 0)
 * or TCP (_i 1). */
START_TEST(test_wire_stream_round_trips_every_type)
{
    int sv[2];
    gpuipc_wire *a, *b;
    gpuipc_msg got;
    unsigned t;

    stream_pair(sv, _i);
    open_both(sv, &a, &b);
    for (t = 1; t <= GPUIPC_MSG_TYPE_MAX; t++)
        send_sample(a, t);
    for (t = 1; t <= GPUIPC_MSG_TYPE_MAX; t++) {
        recv_sample(b, t, &got);
        ck_assert_uint_eq(got.seq, t);
    }
    gpuipc_wire_close(a);
    gpuipc_wire_close(b);
}
END_TEST

/* A job's session between nodes: sealed both ways over TCP. */
START_TEST(test_wire_stream_round_trips_sealed)
{
    static const unsigned types[] = {GPUIPC_MSG_BEGIN, GPUIPC_MSG_REPORT, GPUIPC_MSG_END_ACK};
    uint8_t key[GPUIPC_WIRE_KEY_LEN];
    int sv[2];
    gpuipc_wire *p, *c;
    gpuipc_msg got;
    unsigned i;

    memset(key, 0x7a, sizeof(key));
    tcp_pair(sv);
    open_both(sv, &p, &c);
    gpuipc_wire_seal(p, key, GPUIPC_ROLE_PRODUCER, GPUIPC_ROLE_CONSUMER);
    gpuipc_wire_seal(c, key, GPUIPC_ROLE_CONSUMER, GPUIPC_ROLE_PRODUCER);
    for (i = 0; i < 3; i++)
        send_sample(p, types[i]);
    for (i = 0; i < 3; i++)
        recv_sample(c, types[i], &got);
    /* And the other way. */
    send_sample(c, GPUIPC_MSG_PHASE_ACK);
    recv_sample(p, GPUIPC_MSG_PHASE_ACK, &got);
    gpuipc_wire_close(p);
    gpuipc_wire_close(c);
}
END_TEST

/* P1 a child writes a frame one byte at a time, P2 it exits; C1 the wire
 * reads the frame whole, however the bytes came. */
START_TEST(test_wire_stream_takes_a_frame_written_a_byte_at_a_time)
{
    uint8_t buf[4 + GPUIPC_WIRE_MAX_MSG];
    size_t len = stream_frame(GPUIPC_MSG_REPORT, 1, buf);
    int sv[2], status;
    gpuipc_wire *w;
    gpuipc_msg got;
    gpuipc_err e;
    pid_t pid;

    stream_pair(sv, 0);
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        struct timespec gap = {0, 200000}; /* 0.2 ms */
        size_t i;

        close(sv[1]);
        for (i = 0; i < len; i++) {
            if (send(sv[0], buf + i, 1, MSG_NOSIGNAL) != 1)
                _exit(1);
            nanosleep(&gap, NULL);
        }
        _exit(0);
    }
    close(sv[0]);
    ck_assert_int_eq(gpuipc_wire_open(&w, sv[1], "consumer", &e), 0);
    recv_sample(w, GPUIPC_MSG_REPORT, &got);
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "writer: status 0x%x", status);
    gpuipc_wire_close(w);
}
END_TEST

static const uint32_t bad_lengths[] = {3, GPUIPC_WIRE_MAX_MSG + 904}; /* 5000 */

START_TEST(test_wire_stream_refuses_a_length_out_of_range)
{
    uint32_t len = bad_lengths[_i];
    uint8_t prefix[4];
    int sv[2], fds[GPUIPC_WIRE_MAX_FDS];
    char want[GPUIPC_ERR_LEN];
    gpuipc_wire *w;
    gpuipc_msg m;
    gpuipc_err e;

    stream_pair(sv, 0);
    put32(prefix, len);
    send_all(sv[0], prefix, sizeof(prefix));
    ck_assert_int_eq(gpuipc_wire_open(&w, sv[1], "producer", &e), 0);
    ck_assert_int_eq(gpuipc_wire_recv(w, ANY, &m, fds, gpuipc_clock_deadline(GPUIPC_NS_PER_S),
                                      GPUIPC_STEP_OFFER, &e), -EPROTO);
    snprintf(want, sizeof(want), "bad message from the producer during offer: a frame of %u "
             "bytes announced on the stream (from 20 to 4096 allowed)", len);
    ck_assert_str_eq(e.msg, want);
    ck_assert_ptr_nonnull(gpuipc_wire_broken(w));
    gpuipc_wire_close(w);
    close(sv[0]);
}
END_TEST

/* A wire on the accepting end of a TCP connection whose peer, the consumer,
 * wrote the n bytes at bytes raw, then hung up (peer NULL) or held on (its
 * end in *peer). */
static gpuipc_wire *after_raw_bytes(const uint8_t *bytes, size_t n, int *peer)
{
    gpuipc_wire *w;
    gpuipc_err e;
    int sv[2];

    tcp_pair(sv);
    send_all(sv[0], bytes, n);
    if (peer != NULL)
        *peer = sv[0];
    else
        close(sv[0]);
    ck_assert_int_eq(gpuipc_wire_open(&w, sv[1], "consumer", &e), 0);
    return w;
}

/* The peer closes after part of a frame: in its length (_i 0) or in the
 * frame after it (_i 1). */
START_TEST(test_wire_stream_reports_eof_in_the_middle_of_a_frame)
{
    uint8_t buf[4 + GPUIPC_WIRE_MAX_MSG];
    size_t len = stream_frame(GPUIPC_MSG_READY, 1, buf), cut = _i ? len / 2 : 2;
    gpuipc_wire *w = after_raw_bytes(buf, cut, NULL);
    char want[GPUIPC_ERR_LEN];

    snprintf(want, sizeof(want), "peer gone during ready: the consumer closed the connection "
             "in the middle of a frame (EOF after %zu of %zu bytes)", _i ? cut - 4 : cut,
             _i ? len - 4 : (size_t)4);
    expect_peer_gone(w, want);
}
END_TEST

/* A close after a whole frame is a clean one: the frame is taken, then the
 * peer is gone. */
START_TEST(test_wire_stream_reports_peer_gone_between_frames)
{
    uint8_t buf[4 + GPUIPC_WIRE_MAX_MSG];
    size_t len = stream_frame(GPUIPC_MSG_READY, 1, buf);
    gpuipc_wire *w = after_raw_bytes(buf, len, NULL);
    gpuipc_msg m;

    recv_sample(w, GPUIPC_MSG_READY, &m);
    expect_peer_gone(w, "peer gone during ready: the consumer closed the connection (EOF)");
}
END_TEST

START_TEST(test_wire_stream_refuses_to_send_an_fd)
{
    int sv[2], fd = new_memfd();
    gpuipc_wire *a, *b;
    gpuipc_msg m;
    gpuipc_err e;

    stream_pair(sv, 0);
    open_both(sv, &a, &b);
    sample(GPUIPC_MSG_OFFER, &m);
    m.nfds = 1;
    ck_assert_int_eq(gpuipc_wire_send(a, &m, &fd, gpuipc_clock_deadline(GPUIPC_NS_PER_S),
                                      GPUIPC_STEP_OFFER, &e), -EINVAL);
    ck_assert_str_eq(e.msg, "send OFFER: a TCP connection carries no FDs (1 given)");
    /* The caller's mistake: nothing was sent, and the wire goes on. */
    ck_assert_ptr_null(gpuipc_wire_broken(a));
    send_sample(a, GPUIPC_MSG_BEGIN);
    recv_sample(b, GPUIPC_MSG_BEGIN, &m);
    ck_assert_uint_eq(m.seq, 1);
    close(fd);
    gpuipc_wire_close(a);
    gpuipc_wire_close(b);
}
END_TEST

START_TEST(test_wire_stream_refuses_the_extra_fds_fault)
{
    int sv[2], before;
    gpuipc_wire *w;
    gpuipc_err e;

    stream_pair(sv, 0);
    ck_assert_int_eq(gpuipc_wire_open(&w, sv[0], "consumer", &e), 0);
    before = th_fd_count();
    ck_assert_int_eq(gpuipc_wire_send_fault(w, GPUIPC_WIRE_FAULT_EXTRA_FDS,
                                            gpuipc_clock_deadline(GPUIPC_NS_PER_S),
                                            GPUIPC_STEP_HELLO, &e), -EINVAL);
    ck_assert_str_eq(e.msg, "send HELLO with 2 FDs: a TCP connection carries no FDs (2 given)");
    ck_assert_ptr_null(gpuipc_wire_broken(w));
    ck_assert_int_eq(th_fd_count(), before);
    gpuipc_wire_close(w);
    close(sv[1]);
}
END_TEST

START_TEST(test_wire_stream_carries_the_corrupt_fault)
{
    uint8_t buf[4 + GPUIPC_WIRE_MAX_MSG], hello[GPUIPC_WIRE_MAX_MSG];
    int sv[2];
    gpuipc_wire *w;
    gpuipc_err e;

    stream_pair(sv, 0);
    ck_assert_int_eq(gpuipc_wire_open(&w, sv[0], "consumer", &e), 0);
    ck_assert_int_eq(gpuipc_wire_send_fault(w, GPUIPC_WIRE_FAULT_CORRUPT,
                                            gpuipc_clock_deadline(GPUIPC_NS_PER_S),
                                            GPUIPC_STEP_HELLO, &e), 0);
    /* A HELLO's length, then a HELLO's frame with its magic flipped. */
    ck_assert_uint_eq(read_stream_frame(sv[1], buf), 4 + encode(GPUIPC_MSG_HELLO, 1, hello));
    ck_assert_uint_eq(buf[4], (uint8_t)~'G');
    gpuipc_wire_close(w);
    close(sv[1]);
}
END_TEST

/* The peer sends half a frame and stalls: the receive ends at its
 * deadline, and says so. */
START_TEST(test_wire_stream_times_out_on_half_a_frame)
{
    uint8_t buf[4 + GPUIPC_WIRE_MAX_MSG];
    size_t len = stream_frame(GPUIPC_MSG_REPORT, 1, buf);
    int peer;
    gpuipc_wire *w = after_raw_bytes(buf, len / 2, &peer);

    expect_report_timeout(w);
    gpuipc_wire_close(w);
    close(peer);
}
END_TEST

/* A stream (TCP where tcp is set) on which *a sent BEGIN and BYE back to
 * back, and *b has received neither. */
static void two_frames_sent(int tcp, gpuipc_wire **a, gpuipc_wire **b)
{
    int sv[2];

    stream_pair(sv, tcp);
    open_both(sv, a, b);
    send_sample(*a, GPUIPC_MSG_BEGIN);
    send_sample(*a, GPUIPC_MSG_BYE);
}

START_TEST(test_wire_stream_keeps_two_frames_apart)
{
    gpuipc_wire *a, *b;
    gpuipc_msg m;

    two_frames_sent(1, &a, &b);
    recv_sample(b, GPUIPC_MSG_BEGIN, &m);
    ck_assert_uint_eq(m.seq, 1);
    recv_sample(b, GPUIPC_MSG_BYE, &m);
    ck_assert_uint_eq(m.seq, 2);
    gpuipc_wire_close(a);
    gpuipc_wire_close(b);
}
END_TEST

/* A receive reads its own frame and not a byte of the next: what follows
 * is still in the socket, whole. */
START_TEST(test_wire_stream_reads_no_further_than_its_frame)
{
    uint8_t want[4 + GPUIPC_WIRE_MAX_MSG], got[4 + GPUIPC_WIRE_MAX_MSG];
    gpuipc_wire *a, *b;
    gpuipc_msg m;
    size_t len;

    two_frames_sent(0, &a, &b);
    recv_sample(b, GPUIPC_MSG_BEGIN, &m);
    len = stream_frame(GPUIPC_MSG_BYE, 2, want);
    ck_assert_uint_eq(read_stream_frame(gpuipc_wire_fd(b), got), len);
    ck_assert_msg(memcmp(got, want, len) == 0, "the BYE left in the socket is not as sent");
    gpuipc_wire_close(a);
    gpuipc_wire_close(b);
}
END_TEST

/* P1 the sender's socket is full; P2 the wire sends a frame, waiting for
 * room; C1 a child drains the filler, then C2 reads the frame, length first. */
START_TEST(test_wire_stream_send_waits_for_room)
{
    uint8_t junk[1024], want[4 + GPUIPC_WIRE_MAX_MSG];
    size_t len = stream_frame(GPUIPC_MSG_OFFER, 1, want), filled = 0;
    int sv[2], small = 4096, status;
    gpuipc_wire *w;
    gpuipc_msg m;
    gpuipc_err e;
    uint64_t t0;
    ssize_t n;
    pid_t pid;

    /* A Unix stream: what the peer has not read counts against the sender's
     * buffer, so the socket stays full until the child reads. */
    stream_pair(sv, 0);
    ck_assert_int_eq(setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof(small)), 0);
    memset(junk, 0xee, sizeof(junk));
    while ((n = send(sv[0], junk, sizeof(junk), MSG_DONTWAIT | MSG_NOSIGNAL)) > 0)
        filled += (size_t)n;
    ck_assert_msg(n < 0 && errno == EAGAIN, "filling: send returned %zd (%s)", n,
                  strerror(errno));
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        struct timespec wait = {0, 100000000}; /* 0.1 s */
        struct timeval most = {2, 0};          /* a frame short fails, not hangs */
        uint8_t got[4 + GPUIPC_WIRE_MAX_MSG];
        size_t at = 0;

        close(sv[0]);
        setsockopt(sv[1], SOL_SOCKET, SO_RCVTIMEO, &most, sizeof(most));
        nanosleep(&wait, NULL);
        for (; filled > 0; filled -= (size_t)n)
            if ((n = recv(sv[1], junk, filled < sizeof(junk) ? filled : sizeof(junk), 0)) <= 0)
                _exit(1);
        for (; at < len; at += (size_t)n)
            if ((n = recv(sv[1], got + at, len - at, 0)) <= 0)
                _exit(2);
        _exit(memcmp(got, want, len) == 0 ? 0 : 3);
    }
    close(sv[1]);
    ck_assert_int_eq(gpuipc_wire_open(&w, sv[0], "consumer", &e), 0);
    sample(GPUIPC_MSG_OFFER, &m);
    t0 = gpuipc_clock_ns();
    ck_assert_msg(gpuipc_wire_send(w, &m, NULL, gpuipc_clock_deadline(5 * GPUIPC_NS_PER_S),
                                   GPUIPC_STEP_OFFER, &e) == 0, "send: %s", e.msg);
    ck_assert_msg(gpuipc_clock_ns() - t0 >= 50 * GPUIPC_NS_PER_MS, "sent at once: no wait");
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                  "reader: status 0x%x (1 filler short, 2 frame short, 3 frame not as sent)",
                  status);
    gpuipc_wire_close(w);
}
END_TEST

Suite *wire_suite(void)
{
    Suite *s = suite_create("wire");
    TCase *codec = tcase_create("codec");
    TCase *bad = tcase_create("malformed");
    TCase *fds = tcase_create("fds");
    TCase *peer = tcase_create("deadlines_and_peers");
    TCase *stream = tcase_create("stream");

    tcase_add_loop_test(codec, test_wire_round_trips_every_type, 1, GPUIPC_MSG_TYPE_MAX + 1);
    tcase_add_test(codec, test_wire_encode_refuses_a_small_buffer);
    tcase_add_test(codec, test_wire_sends_every_type_over_a_socket);
    tcase_add_test(codec, test_wire_accepts_the_largest_times_slice);
    tcase_add_loop_test(bad, test_wire_rejects_a_malformed_message, 0, N_BAD_MESSAGES);
    tcase_add_test(bad, test_wire_rejects_foreign_control_message);
    th_add_unless_valgrind(bad, test_wire_reports_truncated_fds_and_stays_usable,
                           "valgrind refuses to lower RLIMIT_NOFILE (it keeps FDs of its own at the top)");
    tcase_add_test(bad, test_wire_rejects_truncated_fds_on_a_bad_message);
    tcase_add_test(fds, test_wire_passes_one_fd);
    tcase_add_test(fds, test_wire_passes_253_fds);
    tcase_add_test(fds, test_wire_refuses_to_send_254_fds);
    tcase_add_test(peer, test_wire_times_out_when_peer_is_silent);
    tcase_add_test(peer, test_wire_send_times_out_when_peer_never_reads);
    tcase_add_test(peer, test_wire_reports_peer_gone_on_close);
    tcase_add_test(peer, test_wire_reports_peer_gone_on_send_without_sigpipe);
    tcase_add_test(peer, test_wire_reports_killed_peer_within_deadline);
    tcase_add_test(peer, test_wire_stays_broken_after_a_failure);
    tcase_add_loop_test(peer, test_wire_seal_refuses_altered_reflected_and_foreign_frames, 0, 1);
    tcase_add_test(peer, test_wire_a_sealed_wire_refuses_an_unsealed_frame);
    tcase_add_test(peer, test_wire_seal_refuses_a_swapped_fd);
    tcase_add_test(stream, test_wire_open_tells_a_stream_from_datagrams);
    tcase_add_loop_test(stream, test_wire_stream_round_trips_every_type, 0, 2);
    tcase_add_test(stream, test_wire_stream_round_trips_sealed);
    tcase_add_loop_test(stream, test_wire_seal_refuses_altered_reflected_and_foreign_frames, 1, 2);
    tcase_add_test(stream, test_wire_stream_takes_a_frame_written_a_byte_at_a_time);
    tcase_add_loop_test(stream, test_wire_stream_refuses_a_length_out_of_range, 0, 2);
    tcase_add_loop_test(stream, test_wire_stream_reports_eof_in_the_middle_of_a_frame, 0, 2);
    tcase_add_test(stream, test_wire_stream_reports_peer_gone_between_frames);
    tcase_add_test(stream, test_wire_stream_refuses_to_send_an_fd);
    tcase_add_test(stream, test_wire_stream_refuses_the_extra_fds_fault);
    tcase_add_test(stream, test_wire_stream_carries_the_corrupt_fault);
    tcase_add_test(stream, test_wire_stream_times_out_on_half_a_frame);
    tcase_add_test(stream, test_wire_stream_keeps_two_frames_apart);
    tcase_add_test(stream, test_wire_stream_reads_no_further_than_its_frame);
    tcase_add_test(stream, test_wire_stream_send_waits_for_room);
    suite_add_tcase(s, codec);
    suite_add_tcase(s, bad);
    suite_add_tcase(s, fds);
    suite_add_tcase(s, peer);
    suite_add_tcase(s, stream);
    return s;
}
