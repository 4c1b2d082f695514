/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz_seeds.c: writes the fuzzer's seed corpus, one valid message of each
 * type (with the FDs its header announces) in fuzz_wire.c's input format,
 * into the directory named by argv[1]. Run by make fuzz-seeds; the files it
 * writes are kept in tests/corpus/wire. */
#include <stdio.h>
#include <string.h>

#include "core/step.h"
#include "session/laps.h"
#include "wire/wire.h"

static int write_seed(const char *dir, const char *name, const gpuipc_msg *msg, unsigned flags)
{
    uint8_t buf[5 + GPUIPC_WIRE_MAX_MSG];
    char path[512];
    size_t n = gpuipc_wire_encode(msg, 1, buf + 5, sizeof(buf) - 5);
    FILE *f;

    if (n == 0)
        return -1;
    buf[0] = (uint8_t)flags;
    buf[1] = (uint8_t)msg->nfds;
    buf[2] = buf[3] = 0; /* any type */
    buf[4] = GPUIPC_STEP_OFFER;
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    f = fopen(path, "wb");
    if (f == NULL || fwrite(buf, 1, n + 5, f) != n + 5) {
        perror(path);
        if (f != NULL)
            fclose(f);
        return -1;
    }
    return fclose(f);
}

static void status(gpuipc_status *st, int code, const char *reason)
{
    gpuipc_wire_status(st, code, code == 0 ? GPUIPC_STEP_NONE : GPUIPC_STEP_IMPORT, reason);
}

int main(int argc, char **argv)
{
    gpuipc_msg m;
    int rc = 0;

    if (argc != 2) {
        fprintf(stderr, "usage: fuzz_seeds DIR\n");
        return 2;
    }
    memset(&m, 0, sizeof(m));
    m.type = GPUIPC_MSG_HELLO;
    m.u.hello.pid = 4242;
    m.u.hello.role = GPUIPC_ROLE_PRODUCER;
    m.u.hello.flags = GPUIPC_HELLO_NEEDS_CUDA;
    /* Facts as a container's process has them: its own PID namespace,
     * pid 1 there, a seccomp filter, root without CAP_SYS_PTRACE. */
    m.u.hello.facts.ns[GPUIPC_NS_PID] = 4026532001u;
    m.u.hello.facts.ns[GPUIPC_NS_NET] = 4026532004u;
    m.u.hello.facts.seccomp = 2;
    m.u.hello.facts.yama = GPUIPC_FACTS_UNKNOWN;
    m.u.hello.facts.dumpable = 1;
    m.u.hello.facts.nofile_soft = 1024;
    m.u.hello.facts.nofile_hard = 524288;
    m.u.hello.facts.cap_eff = 0xa80425fbull;
    snprintf(m.u.hello.facts.kernel, sizeof(m.u.hello.facts.kernel), "6.1.0-27-amd64");
    m.u.hello.facts.imex_channels = (1ull << 0) | (1ull << 5);
    m.u.hello.facts.flags |= GPUIPC_FACT_IMEX_MORE;
    rc |= write_seed(argv[1], "hello", &m, 0);
    /* A rank's HELLO (--ranks): a nonce, the pair, the consumer's proof. */
    memset(m.u.hello.nonce, 0x5e, sizeof(m.u.hello.nonce));
    m.u.hello.rank = 3;
    m.u.hello.peer_rank = 1;
    memset(m.u.hello.mac, 0xc4, sizeof(m.u.hello.mac));
    memset(&m.u.hello.facts, 0, sizeof(m.u.hello.facts));
    rc |= write_seed(argv[1], "hello_rank", &m, 0);

    memset(&m, 0, sizeof(m));
    m.type = GPUIPC_MSG_AUTH;
    m.u.auth.pid = 4242;
    memset(m.u.auth.mac, 0x9d, sizeof(m.u.auth.mac));
    m.u.auth.facts.seccomp = 2;
    m.u.auth.facts.nofile_soft = 1024;
    snprintf(m.u.auth.facts.kernel, sizeof(m.u.auth.facts.kernel), "6.1.0-27-amd64");
    rc |= write_seed(argv[1], "auth", &m, 0);

    memset(&m, 0, sizeof(m));
    m.type = GPUIPC_MSG_BEGIN;
    snprintf(m.u.begin.mech, sizeof(m.u.begin.mech), "vmm-chunks");
    m.u.begin.index = 3;
    m.u.begin.size = 64ull << 20;
    memset(m.u.begin.uuid, 0xab, sizeof(m.u.begin.uuid));
    rc |= write_seed(argv[1], "begin", &m, 0);
    m.u.begin.flags = GPUIPC_BEGIN_TIMES | GPUIPC_BEGIN_BANDWIDTH;
    m.u.begin.iters = 20;
    rc |= write_seed(argv[1], "begin_bench", &m, 0);
    m.u.begin.flags = GPUIPC_BEGIN_LINK; /* --pairs */
    m.u.begin.iters = 0;
    memset(m.u.begin.consumer_uuid, 0x12, sizeof(m.u.begin.consumer_uuid));
    rc |= write_seed(argv[1], "begin_link", &m, 0);

    memset(&m, 0, sizeof(m));
    m.type = GPUIPC_MSG_PROBE;
    snprintf(m.u.probe.mech, sizeof(m.u.probe.mech), "memfd");
    rc |= write_seed(argv[1], "probe", &m, 0);

    memset(&m, 0, sizeof(m));
    m.type = GPUIPC_MSG_READY;
    status(&m.u.ready, 0, NULL);
    rc |= write_seed(argv[1], "ready", &m, 0);

    memset(&m, 0, sizeof(m));
    m.type = GPUIPC_MSG_PROBE_ACK;
    status(&m.u.probe_ack, 77, "unsupported by this driver");
    rc |= write_seed(argv[1], "probe_ack_skip", &m, 0);

    memset(&m, 0, sizeof(m));
    m.type = GPUIPC_MSG_OFFER;
    status(&m.u.offer.st, 0, NULL);
    m.u.offer.size = 4ull << 20;
    m.u.offer.granularity = 2ull << 20;
    m.u.offer.seed = 0x1234567890abcdefull;
    m.u.offer.blob_len = 16;
    memset(m.u.offer.blob, 7, 16);
    m.u.offer.fds_total = 300;
    m.u.offer.wrote.words = (4ull << 20) / 8;
    m.u.offer.wrote.digest = 0xabcdef;
    m.nfds = 253;
    rc |= write_seed(argv[1], "offer_253_of_300", &m, 0);
    m.u.offer.fds_total = 1;
    m.nfds = 1;
    rc |= write_seed(argv[1], "offer_1", &m, 0);
    rc |= write_seed(argv[1], "offer_1_ctrunc", &m, 1);

    memset(&m, 0, sizeof(m));
    m.type = GPUIPC_MSG_FDS;
    status(&m.u.fds.st, 0, NULL);
    m.u.fds.first = 253;
    m.nfds = 47;
    rc |= write_seed(argv[1], "fds_47", &m, 0);

    memset(&m, 0, sizeof(m));
    m.type = GPUIPC_MSG_REPORT;
    status(&m.u.report.st, 1, "verify: 3 mismatches");
    m.u.report.check.words = 100;
    m.u.report.check.mismatches = 3;
    m.u.report.check.first_bad = 5;
    m.u.report.check.expected = 1;
    m.u.report.check.got = 2;
    m.u.report.check.digest = 0x1234;
    m.u.report.seed = 99;
    m.u.report.flags = GPUIPC_REPORT_WROTE;
    m.u.report.wrote.words = 100;
    m.u.report.wrote.digest = 0x5678;
    rc |= write_seed(argv[1], "report_fail", &m, 0);

    memset(&m, 0, sizeof(m));
    m.type = GPUIPC_MSG_END;
    status(&m.u.end.st, 0, NULL);
    m.u.end.check.words = 8388608;
    rc |= write_seed(argv[1], "end", &m, 0);

    memset(&m, 0, sizeof(m));
    m.type = GPUIPC_MSG_END_ACK;
    status(&m.u.end_ack.st, 0, NULL);
    m.u.end_ack.usage.fds = 37;
    m.u.end_ack.usage.objects = 4;
    m.u.end_ack.usage.shmem = 0;
    m.u.end_ack.usage.gpu = GPUIPC_USAGE_UNKNOWN;
    rc |= write_seed(argv[1], "end_ack", &m, 0);

    memset(&m, 0, sizeof(m));
    m.type = GPUIPC_MSG_TIMES;
    m.u.times.series = 2;
    m.u.times.first = 64;
    m.u.times.count = 3;
    m.u.times.flags = GPUIPC_TIMES_LAST;
    m.u.times.v[0] = 1500000;
    m.u.times.v[1] = 1490000;
    m.u.times.v[2] = 1510000;
    rc |= write_seed(argv[1], "times_last", &m, 0);
    memset(&m.u.times, 0, sizeof(m.u.times));
    m.u.times.series = GPUIPC_SERIES_LINK; /* --pairs' link figures */
    m.u.times.count = GPUIPC_LINK_VALUES;
    m.u.times.flags = GPUIPC_TIMES_LAST;
    m.u.times.v[0] = 16;             /* passes */
    m.u.times.v[1] = 5;              /* batches */
    m.u.times.v[2] = 64ull << 20;    /* bytes */
    m.u.times.v[5] = 1;              /* the consumer's GPU */
    m.u.times.v[6] = 1;              /* it wrote */
    m.u.times.v[7] = 80 * (8ull << 20); /* the read run's words */
    m.u.times.v[10] = 2902005;       /* its first batch, ns */
    rc |= write_seed(argv[1], "times_link", &m, 0);

    memset(&m, 0, sizeof(m));
    m.type = GPUIPC_MSG_BYE;
    m.u.bye.code = 0;
    m.u.bye.passed = 9;
    m.u.bye.skipped = 2;
    rc |= write_seed(argv[1], "bye", &m, 0);
    rc |= write_seed(argv[1], "bye_hup_creds", &m, 4 | 8);

    memset(&m, 0, sizeof(m));
    m.type = GPUIPC_MSG_BYE_ACK;
    status(&m.u.bye_ack, 1, "1 FD leaked: fd 9 (/dev/null)");
    rc |= write_seed(argv[1], "bye_ack_fail", &m, 0);
    return rc == 0 ? 0 : 1;
}
