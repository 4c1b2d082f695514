/* SPDX-License-Identifier: Apache-2.0 */
/* test_launch.c: lib/launch without a launcher: the job token (its format,
 * parsing, the constant-time check), the rank sockets' names, the cards
 * (encoded, decoded, every malformed one refused), the same-node rule over
 * faked boot ids and namespaces, PMIx's version text, the status names, and
 * what joining says where no launcher started the process. The exchange
 * itself runs under mpirun in tests/launch.sh. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "launch/job.h"
#include "launch/pmix.h"
#include "helpers.h"
#include "suites.h"

static const char tok_a[] = "0123456789abcdef0123456789abcdef";

static gpuipc_job_token token_of(const char *hex)
{
    gpuipc_job_token t;
    gpuipc_err e;

    ck_assert_int_eq(gpuipc_job_token_parse(&t, hex, &e), 0);
    return t;
}

/* A card as a faked rank would publish it. */
#define EP "@gpuipc-0123456789abcdef0123456789abcdef"

static gpuipc_job_card card_pidns(uint32_t rank, uint8_t boot, uint64_t mnt, uint64_t net,
                                  uint64_t pidns)
{
    gpuipc_job_card c;
    gpuipc_facts f;

    memset(&f, 0, sizeof(f));
    memset(f.boot_id, boot, sizeof(f.boot_id));
    f.ns[GPUIPC_NS_MNT] = mnt;
    f.ns[GPUIPC_NS_NET] = net;
    f.ns[GPUIPC_NS_PID] = pidns;
    f.pid = 100 + rank;
    gpuipc_job_card_make(&c, rank, &f, "node1", EP, NULL);
    return c;
}

static gpuipc_job_card card(uint32_t rank, uint8_t boot, uint64_t mnt, uint64_t net)
{
    return card_pidns(rank, boot, mnt, net, 30);
}

START_TEST(test_launch_token_is_32_lowercase_hex_and_new_each_time)
{
    gpuipc_job_token a, b, back;
    gpuipc_err e;
    size_t i;

    ck_assert_int_eq(gpuipc_job_token_new(&a, &e), 0);
    ck_assert_int_eq(gpuipc_job_token_new(&b, &e), 0);
    ck_assert_uint_eq(strlen(a.hex), 32);
    for (i = 0; i < 32; i++)
        ck_assert_msg(strchr("0123456789abcdef", a.hex[i]) != NULL, "byte %zu of %s", i, a.hex);
    ck_assert_str_ne(a.hex, b.hex);
    ck_assert_int_eq(gpuipc_job_token_parse(&back, a.hex, &e), 0);
    ck_assert_str_eq(back.hex, a.hex);
}
END_TEST

static const char *const bad_tokens[] = {
    "",
    "0123456789abcdef0123456789abcde",   /* 31 */
    "0123456789abcdef0123456789abcdef0", /* 33 */
    "0123456789ABCDEF0123456789abcdef",  /* upper case */
    "0123456789abcdef0123456789abcdeg",
    "0123456789abcdef 123456789abcdef",
    "0123456789abcdef0123456789abcde\n",
};

START_TEST(test_launch_token_parse_refuses_what_is_not_one)
{
    gpuipc_job_token t;
    gpuipc_err e;

    ck_assert_int_eq(gpuipc_job_token_parse(&t, bad_tokens[_i], &e), -EINVAL);
    ck_assert_msg(strstr(e.msg, "not 32 lowercase hex digits") != NULL, "%s", e.msg);
    ck_assert_str_eq(t.hex, "");
}
END_TEST

START_TEST(test_launch_token_matches_only_itself)
{
    gpuipc_job_token t = token_of(tok_a), empty;
    char off[33];

    ck_assert_int_eq(gpuipc_job_token_matches(&t, tok_a, 32), 1);
    memcpy(off, tok_a, sizeof(off));
    off[0] ^= 1;
    ck_assert_int_eq(gpuipc_job_token_matches(&t, off, 32), 0);
    memcpy(off, tok_a, sizeof(off));
    off[31] ^= 1;
    ck_assert_int_eq(gpuipc_job_token_matches(&t, off, 32), 0);
    ck_assert_int_eq(gpuipc_job_token_matches(&t, tok_a, 31), 0);
    ck_assert_int_eq(gpuipc_job_token_matches(&t, tok_a, 33), 0);
    ck_assert_int_eq(gpuipc_job_token_matches(&t, NULL, 32), 0);
    memset(&empty, 0, sizeof(empty));
    ck_assert_int_eq(gpuipc_job_token_matches(&empty, "", 0), 0);
    ck_assert_int_eq(gpuipc_job_token_matches(&empty, tok_a, 32), 0);
}
END_TEST

START_TEST(test_launch_card_round_trip)
{
    gpuipc_job_card c = card(3, 0xa5, 4026531841ull, 18446744073709551615ull), back;
    char text[GPUIPC_JOB_CARD_TEXT_LEN];
    gpuipc_err e;

    c.start = 987654321;

    ck_assert_int_eq(gpuipc_job_card_encode(&c, text, sizeof(text)), 0);
    ck_assert_str_eq(text, "gpuipc-card/3 rank=3 pid=103 start=987654321 "
                           "boot=a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5 mnt=4026531841 "
                           "net=18446744073709551615 pidns=30 host=node1 "
                           "ep=@gpuipc-0123456789abcdef0123456789abcdef tcp=none");
    ck_assert_int_eq(gpuipc_job_card_decode(&back, text, &e), 0);
    ck_assert_mem_eq(&back, &c, sizeof(c));
    /* A TCP listener's address, IPv4 and IPv6, as it was. */
    snprintf(c.tcp, sizeof(c.tcp), "[fd00::2]:41234");
    ck_assert_int_eq(gpuipc_job_card_encode(&c, text, sizeof(text)), 0);
    ck_assert_ptr_nonnull(strstr(text, " tcp=[fd00::2]:41234"));
    ck_assert_int_eq(gpuipc_job_card_decode(&back, text, &e), 0);
    ck_assert_str_eq(back.tcp, "[fd00::2]:41234");
    snprintf(c.tcp, sizeof(c.tcp), "192.0.2.2:1");
    ck_assert_int_eq(gpuipc_job_card_encode(&c, text, sizeof(text)), 0);
    ck_assert_int_eq(gpuipc_job_card_decode(&back, text, &e), 0);
    ck_assert_str_eq(back.tcp, "192.0.2.2:1");
    /* Too small a buffer is said, not cut. */
    ck_assert_int_eq(gpuipc_job_card_encode(&c, text, 40), -ENOSPC);
}
END_TEST

START_TEST(test_launch_card_host_is_made_safe)
{
    char text[GPUIPC_JOB_CARD_TEXT_LEN], longname[200];
    gpuipc_job_card c, back;
    gpuipc_facts f;
    gpuipc_err e;

    memset(&f, 0, sizeof(f));
    gpuipc_job_card_make(&c, 0, &f, "node 1=x\n", EP, NULL);
    ck_assert_str_eq(c.host, "node_1_x_");
    gpuipc_job_card_make(&c, 0, &f, "", EP, NULL);
    ck_assert_str_eq(c.host, "unknown");
    memset(longname, 'h', sizeof(longname) - 1);
    longname[sizeof(longname) - 1] = '\0';
    gpuipc_job_card_make(&c, 0, &f, longname, EP, NULL);
    ck_assert_uint_eq(strlen(c.host), 64);
    ck_assert_int_eq(gpuipc_job_card_encode(&c, text, sizeof(text)), 0);
    ck_assert_int_eq(gpuipc_job_card_decode(&back, text, &e), 0);
    ck_assert_str_eq(back.host, c.host);
}
END_TEST

#define GOOD_BOOT "boot=a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5"
#define GOOD_EP "ep=@gpuipc-0123456789abcdef0123456789abcdef tcp=none"
static const struct {
    const char *text, *says;
} bad_cards[] = {
    {"gpuipc-card/1 rank=3 pid=1 start=5 " GOOD_BOOT " mnt=1 net=2 pidns=3 host=n " GOOD_EP, "not a gpuipc-card/3"},
    {"", "not a gpuipc-card/3"},
    {"gpuipc-card/3 pid=1 rank=3 " GOOD_BOOT " mnt=1 net=2 pidns=3 host=n " GOOD_EP, "\"rank=\" expected"},
    {"gpuipc-card/3 rank=3 pid=1 start=5 " GOOD_BOOT " mnt=1 pidns=3 host=n " GOOD_EP, "\"net=\" expected"},
    {"gpuipc-card/3 rank=3  pid=1 start=5 " GOOD_BOOT " mnt=1 net=2 pidns=3 host=n " GOOD_EP, "one space"},
    {"gpuipc-card/3 rank=3 pid=1 start=5 " GOOD_BOOT " mnt=1 net=2 pidns=3 host=n " GOOD_EP " ", "after the last"},
    {"gpuipc-card/3 rank=3 pid=1 start=5 " GOOD_BOOT " mnt=1 net=2 pidns=3 host=n", "missing"},
    {"gpuipc-card/3 rank=03 pid=1 start=5 " GOOD_BOOT " mnt=1 net=2 pidns=3 host=n " GOOD_EP, "rank \"03\""},
    {"gpuipc-card/3 rank=-3 pid=1 start=5 " GOOD_BOOT " mnt=1 net=2 pidns=3 host=n " GOOD_EP, "rank \"-3\""},
    {"gpuipc-card/3 rank=4294967296 pid=1 start=5 " GOOD_BOOT " mnt=1 net=2 pidns=3 host=n " GOOD_EP,
     "not a 32-bit number"},
    {"gpuipc-card/3 rank=3 pid= start=5 " GOOD_BOOT " mnt=1 net=2 pidns=3 host=n " GOOD_EP, "an empty value"},
    {"gpuipc-card/3 rank=3 pid=1 start=5 boot=a5a5 mnt=1 net=2 pidns=3 host=n " GOOD_EP, "not 32 hex digits"},
    {"gpuipc-card/3 rank=3 pid=1 start=5 boot=A5A5A5A5A5A5A5A5A5A5A5A5A5A5A5A5 mnt=1 net=2 pidns=3 host=n " GOOD_EP,
     "not 32 hex digits"},
    {"gpuipc-card/3 rank=3 pid=1 start=5 " GOOD_BOOT " mnt=18446744073709551616 net=2 pidns=3 host=n " GOOD_EP,
     "mnt \"18446744073709551616\""},
    {"gpuipc-card/3 rank=3 pid=1 start=5 " GOOD_BOOT " mnt=1 net=x pidns=3 host=n " GOOD_EP, "net \"x\""},
    {"gpuipc-card/3 rank=3 pid=1 start=5 " GOOD_BOOT " mnt=1 net=2 pidns=3 host=a/b " GOOD_EP, "host \"a/b\""},
    {"gpuipc-card/3 rank=3 pid=1 start=5 " GOOD_BOOT " mnt=1 net=2 pidns=3 host=n ep=/tmp/sock tcp=none", "not a listener's name"},
    {"gpuipc-card/3 rank=3 pid=1 start=5 " GOOD_BOOT " mnt=1 net=2 pidns=3 host=n ep=@ tcp=none", "not a listener's name"},
    {"gpuipc-card/3 rank=3 pid=1 start=5 " GOOD_BOOT " mnt=1 net=2 pidns=3 host=n ep=@a/../b tcp=none", "not a listener's name"},
    {"gpuipc-card/3 rank=3 pid=1 start=5 " GOOD_BOOT " mnt=1 net=2 pidns=3 host=n ep=@a\tb tcp=none", "not a listener's name"},
    {"gpuipc-card/3 rank=3 pid=1 start=5 " GOOD_BOOT " mnt=1 net=2 pidns=3 host=n "
     "ep=@gpuipc-0123456789abcdef0123456789abcdef-3 tcp=none", "not a listener's name"},
    {"gpuipc-card/3 rank=3 pid=1 start=5 " GOOD_BOOT " mnt=1 net=2 pidns=3 host=n "
     "ep=@gpuipc-0123456789ABCDEF0123456789abcdef tcp=none", "not a listener's name"},
    {"gpuipc-card/3 rank=3 pid=1 start=5 " GOOD_BOOT " mnt=1 net=2 host=n " GOOD_EP, "\"pidns=\" expected"},
    {"gpuipc-card/3 rank=3 pid=1 start=5 " GOOD_BOOT " mnt=1 net=2 pidns=-1 host=n " GOOD_EP, "pidns \"-1\""},
    {"gpuipc-card/3 rank=3 pid=1 " GOOD_BOOT " mnt=1 net=2 pidns=3 host=n " GOOD_EP,
     "\"start=\" expected"},
    {"gpuipc-card/3 rank=3 pid=1 start=x " GOOD_BOOT " mnt=1 net=2 pidns=3 host=n " GOOD_EP,
     "start \"x\""},
    {"gpuipc-card/3 rank=3 pid=1 start=5 " GOOD_BOOT " mnt=1 net=2 pidns=3 host=n ep=@gpuipc-0123456789abcdef0123456789abcdef "
     "tcp=192.0.2.2", "tcp \"192.0.2.2\""},
    {"gpuipc-card/3 rank=3 pid=1 start=5 " GOOD_BOOT " mnt=1 net=2 pidns=3 host=n ep=@gpuipc-0123456789abcdef0123456789abcdef "
     "tcp=192.0.2.2:0", "neither none nor an address"},
    {"gpuipc-card/3 rank=3 pid=1 start=5 " GOOD_BOOT " mnt=1 net=2 pidns=3 host=n ep=@gpuipc-0123456789abcdef0123456789abcdef "
     "tcp=192.0.2.2:65536", "neither none nor an address"},
    {"gpuipc-card/3 rank=3 pid=1 start=5 " GOOD_BOOT " mnt=1 net=2 pidns=3 host=n ep=@gpuipc-0123456789abcdef0123456789abcdef "
     "tcp=192.0.2.2:080", "neither none nor an address"},
    {"gpuipc-card/3 rank=3 pid=1 start=5 " GOOD_BOOT " mnt=1 net=2 pidns=3 host=n ep=@gpuipc-0123456789abcdef0123456789abcdef "
     "tcp=node1:80", "neither none nor an address"},
    {"gpuipc-card/3 rank=3 pid=1 start=5 " GOOD_BOOT " mnt=1 net=2 pidns=3 host=n ep=@gpuipc-0123456789abcdef0123456789abcdef "
     "tcp=fd00::2:80", "neither none nor an address"},
    {"gpuipc-card/3 rank=3 pid=1 start=5 " GOOD_BOOT " mnt=1 net=2 pidns=3 host=n ep=@gpuipc-0123456789abcdef0123456789abcdef "
     "tcp=[fd00::2]80", "neither none nor an address"},
    {"gpuipc-card/3 rank=3 pid=1 start=5 " GOOD_BOOT " mnt=1 net=2 pidns=3 host=n ep=@gpuipc-0123456789abcdef0123456789abcdef "
     "tcp=", "an empty value"},
    {"gpuipc-card/3 rank=3 pid=1 start=5 " GOOD_BOOT " mnt=1 net=2 pidns=3 host=n "
     "ep=@gpuipc-0123456789abcdef0123456789abcdef", "missing"},
};

START_TEST(test_launch_card_decode_refuses_malformed)
{
    gpuipc_job_card c;
    gpuipc_err e;

    ck_assert_int_eq(gpuipc_job_card_decode(&c, bad_cards[_i].text, &e), -EPROTO);
    ck_assert_msg(strstr(e.msg, bad_cards[_i].says) != NULL, "case %d: \"%s\" does not say \"%s\"",
                  _i, e.msg, bad_cards[_i].says);
    ck_assert_uint_eq(c.rank, 0);
    ck_assert_str_eq(c.host, "");
}
END_TEST

/* A rank's GPU card: a round trip, and each malformed one refused whole. */
#define GPUCARD "gpuipc-gpucard/3 rank=1 "
#define NOFABRIC " fabric=-1 fstatus=0 cluster=none clique=0 health=00000000 summary=-1"
#define HEALTHY " health=00000000 summary=1"
START_TEST(test_launch_gpu_card_round_trip_and_refusals)
{
    static const char *const bad[] = {
        "gpuipc-gpucard/1 rank=1 ordinal=-1 uuid=none digest=0123456789abcdef refused=0",
        GPUCARD "ordinal=0 uuid=none digest=0123456789abcdef refused=0" NOFABRIC,
        GPUCARD "ordinal=-1 uuid=00112233445566778899aabbccddeeff "
        "digest=0123456789abcdef refused=0" NOFABRIC,
        GPUCARD "ordinal=-2 uuid=none digest=0123456789abcdef refused=0" NOFABRIC,
        GPUCARD "ordinal=65536 uuid=00112233445566778899aabbccddeeff "
        "digest=0123456789abcdef refused=0" NOFABRIC,
        GPUCARD "ordinal=0 uuid=00112233445566778899aabbccddeeFF "
        "digest=0123456789abcdef refused=0" NOFABRIC,
        GPUCARD "ordinal=-1 uuid=none digest=0123456789abcde refused=0" NOFABRIC,
        GPUCARD "ordinal=-1 uuid=none digest=0123456789abcdef refused=2" NOFABRIC,
        GPUCARD "ordinal=-1 uuid=none digest=0123456789abcdef refused=0" NOFABRIC " x=1",
        GPUCARD "uuid=none ordinal=-1 digest=0123456789abcdef refused=0" NOFABRIC,
        GPUCARD "ordinal=-1 uuid=none digest=0123456789abcdef refused=0",
        GPUCARD "ordinal=-1 uuid=none digest=0123456789abcdef refused=0 fabric=4 fstatus=0 "
        "cluster=00112233445566778899aabbccddeeff clique=0" HEALTHY,
        GPUCARD "ordinal=-1 uuid=none digest=0123456789abcdef refused=0 fabric=3 fstatus=0 "
        "cluster=none clique=0" HEALTHY,
        GPUCARD "ordinal=-1 uuid=none digest=0123456789abcdef refused=0 fabric=-1 fstatus=0 "
        "cluster=00112233445566778899aabbccddeeff clique=0",
        GPUCARD "ordinal=-1 uuid=none digest=0123456789abcdef refused=0 fabric=3 fstatus=0 "
        "cluster=00112233445566778899aabbccddeeff clique=-1" HEALTHY,
    };
    gpuipc_job_gpu g = {.rank = 7, .ordinal = 3, .digest = 0x0123456789abcdefull,
                        .refused = 1, .fabric = 3, .fabric_status = 0, .clique = 9,
                        .health = 0x1a2, .summary = 3}, back;
    char text[300];
    gpuipc_err e;
    size_t i;

    for (i = 0; i < sizeof(g.uuid); i++) {
        g.uuid[i] = (uint8_t)(0x11 * i);
        g.cluster[i] = (uint8_t)(0xf0 - i);
    }
    ck_assert_int_eq(gpuipc_job_gpu_encode(&g, text, sizeof(text)), 0);
    ck_assert_msg(gpuipc_job_gpu_decode(&back, text, &e) == 0, "%s: %s", e.msg, text);
    ck_assert_uint_eq(back.rank, 7);
    ck_assert_int_eq(back.ordinal, 3);
    ck_assert_mem_eq(back.uuid, g.uuid, sizeof(g.uuid));
    ck_assert(back.digest == g.digest);
    ck_assert_int_eq(back.refused, 1);
    ck_assert_int_eq(back.fabric, 3);
    ck_assert_mem_eq(back.cluster, g.cluster, sizeof(g.cluster));
    ck_assert_uint_eq(back.clique, 9);
    ck_assert_uint_eq(back.health, 0x1a2);
    ck_assert_int_eq(back.summary, 3);
    g.ordinal = -1;
    g.refused = 0;
    g.fabric = -1;
    ck_assert_int_eq(gpuipc_job_gpu_encode(&g, text, sizeof(text)), 0);
    ck_assert_str_eq(text, "gpuipc-gpucard/3 rank=7 ordinal=-1 uuid=none "
                           "digest=0123456789abcdef refused=0" NOFABRIC);
    ck_assert_int_eq(gpuipc_job_gpu_decode(&back, text, &e), 0);
    ck_assert_int_eq(back.ordinal, -1);
    ck_assert_int_eq(back.fabric, -1);
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        ck_assert_msg(gpuipc_job_gpu_decode(&back, bad[i], &e) == -EPROTO, "accepted: %s",
                      bad[i]);
        ck_assert_uint_eq(back.rank, 0); /* nothing of it kept */
    }
}
END_TEST

/* Review: every card a rank encodes is one the others decode. NVML's
 * fabric state is a byte (ranks_job.c's fabric_of copies it as it comes):
 * a state this build does not know (4, from a newer driver) must not make
 * every other rank refuse this rank's card and so stop the whole job;
 * gpuipc_job_gpu_domain already says "unknown" for it. */
START_TEST(test_launch_gpu_card_of_an_unknown_fabric_state_is_read)
{
    gpuipc_job_gpu g = {.rank = 2, .ordinal = 0, .fabric = 4}, back;
    char text[300];
    gpuipc_err e;

    memset(g.cluster, 0xab, sizeof(g.cluster));
    ck_assert_int_eq(gpuipc_job_gpu_encode(&g, text, sizeof(text)), 0);
    ck_assert_msg(gpuipc_job_gpu_decode(&back, text, &e) == 0, "%s: %s", e.msg, text);
}
END_TEST

/* Review: read strictly, as job.h says: where NVML said nothing of the
 * fabric (fabric=-1), fstatus and clique are 0. */
START_TEST(test_launch_gpu_card_without_fabric_has_no_status_or_clique)
{
    gpuipc_job_gpu back;
    gpuipc_err e;

    ck_assert_int_eq(gpuipc_job_gpu_decode(&back, "gpuipc-gpucard/3 rank=1 ordinal=-1 uuid=none "
                                           "digest=0123456789abcdef refused=0 fabric=-1 "
                                           "fstatus=7 cluster=none clique=9 health=00000000 "
                                           "summary=-1", &e), -EPROTO);
}
END_TEST

/* Two nodes' GPUs and their NVLink domain, from their fabric info: not
 * reported, or the same cluster and clique: tried; another clique or
 * cluster: apart, naming both; no fabric support, or a zero cluster (H100,
 * H200 boards): none; a fabric not completed, completed with an error, or
 * with a fault in its health mask or summary: not ready. */
START_TEST(test_launch_gpus_of_two_nodes_and_their_nvlink_domain)
{
    gpuipc_job_gpu a = {.rank = 0, .fabric = 3, .clique = 1, .summary = 1},
                   b = {.rank = 5, .fabric = 3, .clique = 1, .summary = -1};
    char why[400];

    memset(a.cluster, 0xab, sizeof(a.cluster));
    memset(b.cluster, 0xab, sizeof(b.cluster));
    ck_assert_int_eq(gpuipc_job_gpu_domain(&a, &b, why, sizeof(why)), GPUIPC_JOB_DOMAIN_ONE);
    ck_assert_str_eq(why, "");
    b.clique = 2;
    ck_assert_int_eq(gpuipc_job_gpu_domain(&a, &b, why, sizeof(why)), GPUIPC_JOB_DOMAIN_APART);
    ck_assert_str_eq(why, "not one NVLink domain: rank 0's GPU is in fabric cluster "
                          "abababab-abab-abab-abab-abababababab, clique 1, and rank 5's in "
                          "cluster abababab-abab-abab-abab-abababababab, clique 2 (one cluster, "
                          "two cliques: two NVLink partitions)");
    b.clique = 1;
    b.cluster[15] = 0xac;
    ck_assert_int_eq(gpuipc_job_gpu_domain(&a, &b, why, sizeof(why)), GPUIPC_JOB_DOMAIN_APART);
    ck_assert_msg(strstr(why, "partitions") == NULL, "%s", why);
    /* A zero cluster: an H100 or H200 of an 8-GPU board. */
    memset(b.cluster, 0, sizeof(b.cluster));
    ck_assert_int_eq(gpuipc_job_gpu_domain(&a, &b, why, sizeof(why)), GPUIPC_JOB_DOMAIN_NONE);
    ck_assert_msg(strstr(why, "rank 5's GPU fabric completed with a zero cluster UUID (clique "
                              "1): not a multi-node NVLink system") == why, "%s", why);
    b.fabric = -1;
    ck_assert_int_eq(gpuipc_job_gpu_domain(&a, &b, why, sizeof(why)), GPUIPC_JOB_DOMAIN_ONE);
    b.fabric = 0;
    ck_assert_int_eq(gpuipc_job_gpu_domain(&a, &b, why, sizeof(why)), GPUIPC_JOB_DOMAIN_NONE);
    ck_assert_msg(strstr(why, "rank 5's GPU has no GPU fabric") != NULL, "%s", why);
    b.fabric = 2;
    ck_assert_int_eq(gpuipc_job_gpu_domain(&a, &b, why, sizeof(why)),
                     GPUIPC_JOB_DOMAIN_NOT_READY);
    ck_assert_msg(strstr(why, "rank 5's GPU fabric is in progress (NVML status 0)") != NULL,
                  "%s", why);
    b.fabric = 3;
    b.fabric_status = 5;
    ck_assert_int_eq(gpuipc_job_gpu_domain(&a, &b, why, sizeof(why)),
                     GPUIPC_JOB_DOMAIN_NOT_READY);
    ck_assert_msg(strstr(why, "is completed with an error (NVML status 5)") != NULL, "%s", why);
    /* Health: degraded bandwidth (bits 0-1 = 1) and too few NVLinks
     * (bits 8-11 = 5) on rank 0's; healthy fields (2: false, and 1: no
     * incorrect configuration) are no fault. */
    b.fabric_status = 0;
    memset(b.cluster, 0xab, sizeof(b.cluster));
    a.health = 0x0501;
    ck_assert_int_eq(gpuipc_job_gpu_domain(&a, &b, why, sizeof(why)),
                     GPUIPC_JOB_DOMAIN_NOT_READY);
    ck_assert_msg(strstr(why, "rank 0's GPU fabric is not healthy: bandwidth degraded, incorrect "
                              "configuration: too few NVLinks (NVML health mask 0x501, summary "
                              "healthy)") == why, "%s", why);
    a.health = 0x01aa; /* every pair false, configuration none */
    ck_assert_int_eq(gpuipc_job_gpu_domain(&a, &b, why, sizeof(why)), GPUIPC_JOB_DOMAIN_ONE);
    a.health = 0x0010; /* route unhealthy */
    ck_assert_int_eq(gpuipc_job_gpu_domain(&a, &b, why, sizeof(why)),
                     GPUIPC_JOB_DOMAIN_NOT_READY);
    ck_assert_msg(strstr(why, "route unhealthy") != NULL, "%s", why);
    a.health = 0;
    b.summary = 2;
    ck_assert_int_eq(gpuipc_job_gpu_domain(&a, &b, why, sizeof(why)),
                     GPUIPC_JOB_DOMAIN_NOT_READY);
    ck_assert_msg(strstr(why, "rank 5's GPU fabric is not healthy: health summary unhealthy") ==
                  why, "%s", why);
    b.summary = 3;
    ck_assert_int_eq(gpuipc_job_gpu_domain(&a, &b, why, sizeof(why)),
                     GPUIPC_JOB_DOMAIN_NOT_READY);
    ck_assert_msg(strstr(why, "limited capacity") != NULL, "%s", why);
}
END_TEST

/* Review: a GPU whose fabric completed with a zero cluster UUID (an H100
 * or H200 of an 8-GPU board) is in no multi-node NVLink system, so FABRIC
 * memory cannot cross from it to another node whatever else is known: a
 * fault in its own board's NVSwitch health must not turn that skip into a
 * failure, and a peer whose fabric is not reported must not make the pair
 * one to try. */
START_TEST(test_launch_zero_cluster_is_no_domain_whatever_its_health_or_peer)
{
    gpuipc_job_gpu a = {.rank = 0, .fabric = 3, .health = 0x0401, .summary = 2},
                   b = {.rank = 5, .fabric = 3, .clique = 1, .summary = 1};
    char why[400];

    memset(b.cluster, 0xab, sizeof(b.cluster));
    ck_assert_int_eq(gpuipc_job_gpu_domain(&a, &b, why, sizeof(why)), GPUIPC_JOB_DOMAIN_NONE);
    ck_assert_msg(strstr(why, "rank 0's GPU fabric completed with a zero cluster UUID") == why,
                  "%s", why);
    a.health = 0;
    a.summary = 1;
    b.fabric = -1;
    b.summary = -1;
    ck_assert_int_eq(gpuipc_job_gpu_domain(&a, &b, why, sizeof(why)), GPUIPC_JOB_DOMAIN_NONE);
    ck_assert_int_eq(gpuipc_job_gpu_domain(&b, &a, why, sizeof(why)), GPUIPC_JOB_DOMAIN_NONE);
}
END_TEST

START_TEST(test_launch_same_node_needs_boot_mnt_and_net)
{
    gpuipc_job_card me = card(0, 0x11, 10, 20), peer;
    char why[GPUIPC_ERR_LEN];

    peer = card(1, 0x11, 10, 20);
    ck_assert_int_eq(gpuipc_job_where(&me, &peer, why, sizeof(why)), GPUIPC_JOB_SAME_NODE);
    ck_assert_msg(strncmp(why, "same node: rank 1 (host node1)", 30) == 0, "%s", why);
}
END_TEST

START_TEST(test_launch_another_boot_id_is_another_node)
{
    gpuipc_job_card me = card(0, 0x11, 10, 20), peer = card(2, 0x22, 10, 20);
    char why[GPUIPC_ERR_LEN];

    ck_assert_int_eq(gpuipc_job_where(&me, &peer, why, sizeof(why)), GPUIPC_JOB_OTHER_NODE);
    ck_assert_msg(strstr(why, "not on this node: rank 2 (host node1) runs in another boot "
                              "(boot id 22222222... vs 11111111... here)") == why,
                  "%s", why);
}
END_TEST

START_TEST(test_launch_another_namespace_is_not_this_node)
{
    gpuipc_job_card me = card(0, 0x11, 10, 20), peer;
    char why[GPUIPC_ERR_LEN];

    peer = card(1, 0x11, 10, 21);
    ck_assert_int_eq(gpuipc_job_where(&me, &peer, why, sizeof(why)), GPUIPC_JOB_OTHER_NS);
    ck_assert_msg(strstr(why, "not on this node: rank 1 (host node1) runs on this machine but "
                              "in another network namespace (net:[21] vs [20] here)") == why,
                  "%s", why);
    peer = card(1, 0x11, 11, 20);
    ck_assert_int_eq(gpuipc_job_where(&me, &peer, why, sizeof(why)), GPUIPC_JOB_OTHER_NS);
    ck_assert_msg(strstr(why, "another mount namespace (mnt:[11] vs [10] here)") != NULL, "%s",
                  why);
    /* Another PID namespace: its pid means nothing here, and SO_PEERCRED
     * could not vouch for it. */
    peer = card_pidns(1, 0x11, 10, 20, 31);
    ck_assert_int_eq(gpuipc_job_where(&me, &peer, why, sizeof(why)), GPUIPC_JOB_OTHER_NS);
    ck_assert_msg(strstr(why, "another PID namespace (pid:[31] vs [30] here)") != NULL, "%s",
                  why);
}
END_TEST

START_TEST(test_launch_unknown_facts_are_not_this_node)
{
    gpuipc_job_card me = card(0, 0x11, 10, 20), peer;
    char why[GPUIPC_ERR_LEN];

    peer = card(1, 0, 10, 20);
    ck_assert_int_eq(gpuipc_job_where(&me, &peer, why, sizeof(why)), GPUIPC_JOB_UNKNOWN);
    ck_assert_msg(strstr(why, "not on this node: rank 1 (host node1): its boot id is unknown") ==
                  why, "%s", why);
    ck_assert_int_eq(gpuipc_job_where(&peer, &me, why, sizeof(why)), GPUIPC_JOB_UNKNOWN);
    ck_assert_msg(strstr(why, "this rank's boot id is unknown") != NULL, "%s", why);
    peer = card(1, 0x11, 0, 20);
    ck_assert_int_eq(gpuipc_job_where(&me, &peer, why, sizeof(why)), GPUIPC_JOB_UNKNOWN);
    ck_assert_msg(strstr(why, "a mount, network or PID namespace is unknown") != NULL, "%s",
                  why);
    peer = card_pidns(1, 0x11, 10, 20, 0);
    ck_assert_int_eq(gpuipc_job_where(&me, &peer, why, sizeof(why)), GPUIPC_JOB_UNKNOWN);
}
END_TEST

static const struct {
    const char *text;
    int major;
} versions[] = {
    {"OpenPMIx 4.2.2rc2 (PMIx Standard: 4.2, Stable ABI: 0.0, Provisional ABI: 0.0)", 4},
    {"OpenPMIx 5.0.1 (PMIx Standard: 5.0, Stable ABI: 5.0, Provisional ABI: 0.0)", 5},
    {"OpenPMIx 3.2.3 (PMIx Standard: 3.1, Stable ABI: 0.0, Provisional ABI: 0.0)", 3},
    {"PMIx v2.2.5", 2},
    {"PMIx 1.2.5", 1},
    {"OpenPMIx 10.1.0", 10},
    {"OpenPMIx", -1},
    {"libpmix", -1},
    {"", -1},
};

START_TEST(test_launch_pmix_major_from_version_text)
{
    ck_assert_int_eq(gpuipc_launch_pmix_major(versions[_i].text), versions[_i].major);
    ck_assert_int_eq(gpuipc_launch_pmix_major(NULL), -1);
}
END_TEST

START_TEST(test_launch_status_names)
{
    ck_assert_str_eq(gpuipc_launch_status_name(-24), "PMIX_ERR_TIMEOUT");
    ck_assert_str_eq(gpuipc_launch_status_name(0), "PMIX_SUCCESS");
    ck_assert_str_eq(gpuipc_launch_status_name(-61), "PMIX_ERR_LOST_CONNECTION");
    /* No library loaded here: an unknown code is its number. */
    ck_assert_str_eq(gpuipc_launch_status_name(-9999), "PMIx status -9999");
}
END_TEST

static void clear_pmix_env(void)
{
    extern char **environ;
    char name[256];
    size_t i = 0;

    while (environ[i] != NULL) {
        if (strncmp(environ[i], "PMIX_", 5) == 0) {
            snprintf(name, sizeof(name), "%.*s", (int)strcspn(environ[i], "="), environ[i]);
            unsetenv(name);
            i = 0;
            continue;
        }
        i++;
    }
}

START_TEST(test_launch_detects_the_launcher_by_its_variables)
{
    char why[GPUIPC_ERR_LEN] = "";

    clear_pmix_env();
    ck_assert_int_eq(gpuipc_launch_detect(why, sizeof(why)), 0);
    ck_assert_msg(strstr(why, "not started by a PMIx launcher") == why &&
                  strstr(why, "mpirun -np <GPUs> gpuipc_test --ranks") != NULL &&
                  strstr(why, "srun --mpi=pmix") != NULL, "%s", why);
    setenv("PMIX_SERVER_URI41", "pmix-server.1;tcp4://127.0.0.1:1", 1);
    ck_assert_int_eq(gpuipc_launch_detect(why, sizeof(why)), 1);
    clear_pmix_env();
    setenv("PMIX_RANK", "0", 1);
    ck_assert_int_eq(gpuipc_launch_detect(why, sizeof(why)), 1);
    clear_pmix_env();
    setenv("PMIX_NAMESPACE", "job", 1);
    ck_assert_int_eq(gpuipc_launch_detect(why, sizeof(why)), 1);
    /* A name that only starts alike is not the launcher's. */
    clear_pmix_env();
    setenv("PMIX_SERVER_UR", "x", 1);
    ck_assert_int_eq(gpuipc_launch_detect(why, sizeof(why)), 0);
}
END_TEST

START_TEST(test_launch_init_without_a_launcher_says_so_and_holds_nothing)
{
    gpuipc_launch *l = (gpuipc_launch *)&l;
    gpuipc_err e;
    int before;

    clear_pmix_env();
    before = th_fd_count();
    ck_assert_int_eq(gpuipc_launch_init(&l, 1000000000ull, &e), -ENOENT);
    ck_assert_ptr_null(l);
    ck_assert_msg(strstr(e.msg, "not started by a PMIx launcher") == e.msg, "%s", e.msg);
    ck_assert_str_eq(e.call, "getenv");
    ck_assert_int_eq(th_fd_count(), before);
    ck_assert_int_eq(gpuipc_launch_finalize(&l, &e), 0); /* NULL is allowed */
}
END_TEST

Suite *launch_suite(void)
{
    Suite *s = suite_create("launch");
    TCase *tc = tcase_create("launch");

    tcase_add_test(tc, test_launch_token_is_32_lowercase_hex_and_new_each_time);
    tcase_add_loop_test(tc, test_launch_token_parse_refuses_what_is_not_one, 0,
                        (int)(sizeof(bad_tokens) / sizeof(bad_tokens[0])));
    tcase_add_test(tc, test_launch_token_matches_only_itself);
    tcase_add_test(tc, test_launch_card_round_trip);
    tcase_add_test(tc, test_launch_card_host_is_made_safe);
    tcase_add_loop_test(tc, test_launch_card_decode_refuses_malformed, 0,
                        (int)(sizeof(bad_cards) / sizeof(bad_cards[0])));
    tcase_add_test(tc, test_launch_gpu_card_round_trip_and_refusals);
    tcase_add_test(tc, test_launch_gpus_of_two_nodes_and_their_nvlink_domain);
    tcase_add_test(tc, test_launch_zero_cluster_is_no_domain_whatever_its_health_or_peer);
    tcase_add_test(tc, test_launch_gpu_card_of_an_unknown_fabric_state_is_read);
    tcase_add_test(tc, test_launch_gpu_card_without_fabric_has_no_status_or_clique);
    tcase_add_test(tc, test_launch_same_node_needs_boot_mnt_and_net);
    tcase_add_test(tc, test_launch_another_boot_id_is_another_node);
    tcase_add_test(tc, test_launch_another_namespace_is_not_this_node);
    tcase_add_test(tc, test_launch_unknown_facts_are_not_this_node);
    tcase_add_loop_test(tc, test_launch_pmix_major_from_version_text, 0,
                        (int)(sizeof(versions) / sizeof(versions[0])));
    tcase_add_test(tc, test_launch_status_names);
    tcase_add_test(tc, test_launch_detects_the_launcher_by_its_variables);
    tcase_add_test(tc, test_launch_init_without_a_launcher_says_so_and_holds_nothing);
    suite_add_tcase(s, tc);
    return s;
}
