/* SPDX-License-Identifier: Apache-2.0 */
/* msg.h: the framed, versioned messages that producer and consumer exchange:
 * the frame's constants, every message's fields, the status a step's outcome
 * travels in, and the codec that turns a message into a frame and a frame,
 * validated, back into a message. The frame, every message and the order they
 * come in are described once, in docs/protocol.md; the declarations below
 * are its code. wire.h sends and receives them. */
#ifndef GPUIPC_WIRE_MSG_H
#define GPUIPC_WIRE_MSG_H

#include <stddef.h>
#include <stdint.h>

#include "core/account.h"
#include "core/err.h"
#include "core/facts.h"

#define GPUIPC_WIRE_MAGIC 0x43504947u /* the bytes "GIPC" */
#define GPUIPC_WIRE_VERSION 14
#define GPUIPC_WIRE_HEADER_LEN 20
#define GPUIPC_WIRE_MAX_FDS 253 /* the kernel's SCM_MAX_FD: the most FDs in one message */
#define GPUIPC_WIRE_MAX_OFFER_FDS 65536 /* the most FDs one offer may hand over, in batches */
#define GPUIPC_WIRE_MAX_MSG 4096 /* receive buffer; larger datagrams are refused */
#define GPUIPC_WIRE_REASON_LEN 384
#define GPUIPC_WIRE_NAME_LEN 32
#define GPUIPC_WIRE_CALL_LEN 32 /* GPUIPC_ERR_CALL_LEN */
#define GPUIPC_WIRE_BLOB_LEN 128
#define GPUIPC_UUID_LEN 16
#define GPUIPC_WIRE_TOKEN_LEN 32 /* a job's token as hex digits (--ranks): launch/job.h */
#define GPUIPC_WIRE_NONCE_LEN 16 /* HELLO's fresh random bytes */
#define GPUIPC_WIRE_MAC_LEN 32   /* HMAC-SHA256 (core/sha256.h) */
#define GPUIPC_WIRE_KEY_LEN 32   /* a job session's key (session/proof.h) */
#define GPUIPC_WIRE_SEAL_LEN 16  /* a sealed frame's MAC, after its bytes */

enum gpuipc_msg_type {
    GPUIPC_MSG_HELLO = 1,   /* both ways, first: pid, role, flags */
    GPUIPC_MSG_BEGIN = 2,   /* producer: a scenario starts */
    GPUIPC_MSG_READY = 3,   /* consumer: whether it can take part */
    GPUIPC_MSG_OFFER = 4,   /* producer: the memory, with its FDs */
    GPUIPC_MSG_REPORT = 5,  /* consumer: its check of the producer's bytes */
    GPUIPC_MSG_END = 6,     /* producer: its check of the consumer's bytes */
    GPUIPC_MSG_END_ACK = 7, /* consumer: its verdict after teardown */
    GPUIPC_MSG_BYE = 8,     /* producer: no more scenarios, and its verdict */
    GPUIPC_MSG_PROBE = 9,   /* producer: can you run this mechanism? */
    GPUIPC_MSG_PROBE_ACK = 10, /* consumer: yes, or why not */
    GPUIPC_MSG_FDS = 11,    /* producer: the next batch of an offer's FDs */
    GPUIPC_MSG_TIMES = 12,  /* consumer, --bench: its timings, after END_ACK */
    GPUIPC_MSG_BYE_ACK = 13, /* consumer: its last checks, after BYE */
    GPUIPC_MSG_AUTH = 14,   /* both ways, after HELLO, in a job (--ranks): the proof, and
                             * the facts that HELLO then withheld */
    GPUIPC_MSG_PHASE = 15,  /* producer, forked mode: a phase of cells at once begins (the
                             * first time with the workers' connections) or ends */
    GPUIPC_MSG_PHASE_ACK = 16, /* consumer: its count of what it holds at the phase's end */
    GPUIPC_MSG_TYPE_MAX = 16
};

#define GPUIPC_MSG_BIT(type) (1u << (type))

/* HELLO flags. */
#define GPUIPC_HELLO_NEEDS_CUDA 0x1u /* the consumer may start cuInit now */

/* BEGIN flags (--bench, --json, --pairs). */
#define GPUIPC_BEGIN_TIMES 0x1u     /* after END_ACK, send TIMES with the consumer's laps */
#define GPUIPC_BEGIN_BANDWIDTH 0x2u /* before REPORT, time the kernels and a copy over the
                                     * imported memory and local memory, iters times each
                                     * (needs GPUIPC_BEGIN_TIMES, to send them) */
#define GPUIPC_BEGIN_LINK 0x4u      /* --pairs: before REPORT, once this side's checks
                                     * passed, measure the link (session/link.h) and
                                     * after END_ACK send the figures in TIMES series
                                     * GPUIPC_SERIES_LINK */
#define GPUIPC_BENCH_ITERS_MAX 1000

/* TIMES: one slice of a series of u64 figures (see laps.h for the series). */
#define GPUIPC_WIRE_TIMES_MAX 64        /* values in one message */
#define GPUIPC_WIRE_SERIES_MAX 9        /* series numbers 0 to 8 */
#define GPUIPC_WIRE_SERIES_LEN 65536    /* the most values of one series */
#define GPUIPC_TIMES_LAST 0x1u          /* no TIMES follows for this scenario */

/* BYE: the most scenarios one session can count (what a verdict may claim). */
#define GPUIPC_BYE_MAX_SCENARIOS 65536

/* REPORT flags. */
#define GPUIPC_REPORT_WROTE 0x1u /* the consumer wrote its pattern */

/* One side's outcome of a step: GPUIPC_PASS, GPUIPC_FAIL or GPUIPC_SKIP, the
 * step it refers to, a printable reason, and what failed as data (the call,
 * its errno or CUresult, as gpuipc_err records them), which the rules that
 * name a cause read instead of the reason's text. */
typedef struct gpuipc_status {
    int32_t code;
    uint32_t step;
    char reason[GPUIPC_WIRE_REASON_LEN];
    int32_t errnum;                  /* positive errno, or 0 */
    int32_t cu;                      /* CUresult, or 0 */
    char call[GPUIPC_WIRE_CALL_LEN]; /* [A-Za-z0-9_-]*, "" for none */
} gpuipc_status;

/* A verification: the words read (as the reading loop counted them, not as
 * the size implies), the mismatches, the first bad word's pattern index with
 * what was expected there and what was found, and the digest of every word
 * read (gpuipc_pattern_digest_term summed), which the writer's own digest of
 * what it wrote must equal. */
typedef struct gpuipc_check {
    uint64_t words;
    uint64_t mismatches;
    uint64_t first_bad;
    uint64_t expected;
    uint64_t got;
    uint64_t digest;
    uint64_t ns; /* how long the read took, by the reader's clock; 0 if not timed */
} gpuipc_check;

/* What a fill wrote: the words, as the writing loop counted them, and the
 * digest of the values written. */
typedef struct gpuipc_written {
    uint64_t words;
    uint64_t digest;
    uint64_t ns; /* how long the fill took, by the writer's clock; 0 if not timed */
} gpuipc_written;

typedef struct gpuipc_msg_hello {
    uint32_t pid;
    uint32_t role; /* enum gpuipc_role */
    uint32_t flags;
    /* --ranks (session/proof.h): fresh random bytes, the sender's rank and
     * the rank it means to meet, and, in the consumer's HELLO, its proof
     * that it holds the job's token: HMAC-SHA256 over both nonces and both
     * ranks, keyed by the token, which never travels. All zero outside a
     * job. */
    uint8_t nonce[GPUIPC_WIRE_NONCE_LEN];
    uint32_t rank;
    uint32_t peer_rank;
    uint8_t mac[GPUIPC_WIRE_MAC_LEN];
    /* The sender's confinement (facts.pid is pid); in a job all zero here,
     * sent in AUTH once the other side's proof held. */
    gpuipc_facts facts;
} gpuipc_msg_hello;

/* AUTH (--ranks): the producer's proof (the consumer's mac is all zero: its
 * proof came in its HELLO) and the sender's facts, which only a peer that
 * proved the token gets. pid is the sender's HELLO's. */
typedef struct gpuipc_msg_auth {
    uint32_t pid;
    uint8_t mac[GPUIPC_WIRE_MAC_LEN];
    gpuipc_facts facts;
} gpuipc_msg_auth;

typedef struct gpuipc_msg_begin {
    char mech[GPUIPC_WIRE_NAME_LEN]; /* [a-z0-9-], NUL-terminated */
    uint32_t index;                  /* scenario number in this session */
    uint32_t flags;                  /* GPUIPC_BEGIN_TIMES, _BANDWIDTH, _LINK */
    uint32_t iters;                  /* with GPUIPC_BEGIN_BANDWIDTH: 1 to
                                      * GPUIPC_BENCH_ITERS_MAX; else 0 */
    uint64_t size;                   /* bytes requested */
    uint8_t uuid[GPUIPC_UUID_LEN];   /* producer's device, zero if none */
    uint8_t consumer_uuid[GPUIPC_UUID_LEN]; /* the device the consumer is to use, when
                                             * not the producer's (--pairs); zero if not */
} gpuipc_msg_begin;

/* PROBE names a mechanism and the devices, like BEGIN without a size. */
typedef struct gpuipc_msg_probe {
    char mech[GPUIPC_WIRE_NAME_LEN];
    uint8_t uuid[GPUIPC_UUID_LEN];
    uint8_t consumer_uuid[GPUIPC_UUID_LEN];
} gpuipc_msg_probe;

typedef struct gpuipc_msg_offer {
    gpuipc_status st; /* not PASS: nothing offered, no FDs */
    uint64_t size;    /* bytes to map, a multiple of granularity */
    uint64_t granularity;
    uint64_t seed;    /* the producer's pattern seed */
    uint8_t uuid[GPUIPC_UUID_LEN];
    uint32_t blob_len; /* mechanism-specific in-band data */
    uint8_t blob[GPUIPC_WIRE_BLOB_LEN];
    /* Every FD the offer hands over: those on OFFER itself, then FDS
     * messages with the rest, numbered on from there. */
    uint32_t fds_total;
    gpuipc_written wrote; /* what the producer's fill wrote */
} gpuipc_msg_offer;

/* FDS: one more batch of an offer's FDs, the first of them being FD number
 * first of the offer. A status other than PASS carries no FDs: the producer
 * could not export the rest, and no more batches follow. */
typedef struct gpuipc_msg_fds {
    gpuipc_status st;
    uint32_t first;
} gpuipc_msg_fds;

typedef struct gpuipc_msg_report {
    gpuipc_status st;
    gpuipc_check check;   /* the consumer's verification of the producer's bytes */
    uint64_t seed;        /* the seed of the pattern the consumer wrote */
    uint32_t flags;       /* GPUIPC_REPORT_WROTE */
    gpuipc_written wrote; /* what the consumer's fill wrote */
} gpuipc_msg_report;

typedef struct gpuipc_msg_end {
    gpuipc_status st;
    gpuipc_check check; /* the producer's verification of the consumer's bytes */
} gpuipc_msg_end;

/* END_ACK: the consumer's verdict after its release and accounting, and what
 * it holds then, which the soak compares round by round. */
typedef struct gpuipc_msg_end_ack {
    gpuipc_status st;
    gpuipc_usage_figures usage;
} gpuipc_msg_end_ack;

/* BYE: the producer's verdict on the session so far (an exit status: 0, 1,
 * 2 or 77) and its scenario counts. The consumer answers BYE_ACK with its
 * own last checks; both then exit with the session's status: the
 * producer's, or 1 if the consumer's last checks failed. */
typedef struct gpuipc_msg_bye {
    int32_t code;
    uint32_t passed;
    uint32_t failed;
    uint32_t skipped;
} gpuipc_msg_bye;

/* PHASE flags: a phase begins, or ends. */
#define GPUIPC_PHASE_BEGIN 0x1u
#define GPUIPC_PHASE_END 0x2u
/* The most workers (connections) a run's phases use: one per GPU. */
#define GPUIPC_PHASE_MAX_WORKERS 64u

/* PHASE: in the forked mode, the cells of a phase run at once, each
 * exporter GPU's on a worker of its own with its own connection. BEGIN
 * (the first time with workers FDs, one connection per worker, which the
 * consumer serves on threads of its own): the consumer counts what it holds
 * now. END: once the consumer's workers have ended cells scenarios in all
 * (counted over the run), it counts again and answers PHASE_ACK: what it
 * holds that it did not at BEGIN is a drift of the phase. */
typedef struct gpuipc_msg_phase {
    uint32_t phase;   /* 0 (each GPU alone) to the run's last */
    uint32_t flags;   /* GPUIPC_PHASE_BEGIN or GPUIPC_PHASE_END */
    uint32_t workers; /* BEGIN: the connections it carries (0 after the first) */
    uint32_t cells;   /* END: the scenarios the workers have ended, over the run */
} gpuipc_msg_phase;

/* TIMES: values first to first + count - 1 of series; v[count..] are 0. */
typedef struct gpuipc_msg_times {
    uint32_t series;
    uint32_t first;
    uint32_t count; /* 1 to GPUIPC_WIRE_TIMES_MAX */
    uint32_t flags; /* GPUIPC_TIMES_LAST */
    uint64_t v[GPUIPC_WIRE_TIMES_MAX];
} gpuipc_msg_times;

typedef struct gpuipc_msg {
    uint16_t type;
    uint16_t nfds; /* FDs travelling with it */
    uint32_t seq;  /* set by the wire */
    union {
        gpuipc_msg_hello hello;
        gpuipc_msg_begin begin;
        gpuipc_status ready;
        gpuipc_msg_offer offer;
        gpuipc_msg_report report;
        gpuipc_msg_end end;
        gpuipc_msg_end_ack end_ack;
        gpuipc_msg_bye bye;
        gpuipc_status bye_ack;
        gpuipc_msg_probe probe;
        gpuipc_status probe_ack;
        gpuipc_msg_fds fds;
        gpuipc_msg_times times;
        gpuipc_msg_auth auth;
        gpuipc_msg_phase phase;
        gpuipc_msg_end_ack phase_ack; /* the consumer's status and what it holds */
    } u;
} gpuipc_msg;

/* Returns "HELLO", "OFFER", ... or "unknown". */
const char *gpuipc_wire_type_name(unsigned type);

/* Fills st with code, step and a printable copy of reason (NULL: empty). */
void gpuipc_wire_status(gpuipc_status *st, int code, unsigned step, const char *reason);

/* Records a failure at step in st, unless st already holds one: the first
 * failure is the one worth reporting. */
void gpuipc_wire_status_fail(gpuipc_status *st, unsigned step, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The same, with what failed (call, errno, CUresult) taken from e. */
void gpuipc_wire_status_err(gpuipc_status *st, unsigned step, const gpuipc_err *e,
                            const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* Copies what failed from e into st (a status that says why, as data). */
void gpuipc_wire_status_what(gpuipc_status *st, const gpuipc_err *e);

/* Encodes msg with sequence number seq into buf. Returns the frame length,
 * or 0 if the type is unknown or cap is too small. */
size_t gpuipc_wire_encode(const gpuipc_msg *msg, uint32_t seq, uint8_t *buf, size_t cap);

/* Decodes and validates one frame of len bytes that arrived with nfds FDs:
 * magic, version, type (one of the bits in accept, or any known type if
 * accept is 0), reserved bits, sequence (must be expect_seq), payload length,
 * FD count (header against arrival, and against the type's limit) and every
 * payload field. Returns 0, or -EPROTO with what was wrong. Owns no FDs. */
int gpuipc_wire_decode(const uint8_t *buf, size_t len, unsigned nfds, uint32_t expect_seq,
                       unsigned accept, gpuipc_msg *msg, gpuipc_err *err);

#endif
