/* SPDX-License-Identifier: Apache-2.0 */
/* job.h: who takes part in a job started by a launcher, and which of them
 * share this node. Rank 0 makes a random job token and every rank gets it
 * through PMIx; each rank then publishes its card (boot id, mount, network
 * and PID namespaces, pid, host name, and the random name of the listener
 * it bound before: launch/meet.h), and every rank reads every card after
 * one fence. A peer is on this node only where its boot id and its mount,
 * network and PID namespaces are this rank's: the launcher's own notion of
 * a node (its local rank) is not proof that an abstract socket or a
 * /dev/shm is shared, nor that a pid names the same process. A connecting
 * rank proves it is of this job by the token at HELLO (session/proof.h),
 * which never travels, and the kernel vouches for its pid (SO_PEERCRED).
 *
 *   rank 0: token = getrandom(16), put gpuipc.token; commit
 *   all:    fence "token"; get gpuipc.token of rank 0
 *   all:    listen on "@gpuipc-<32 random hex>"; put gpuipc.card (its card); commit
 *   all:    fence "cards"; get gpuipc.card of every rank; judge each: same node or not */
#ifndef GPUIPC_LAUNCH_JOB_H
#define GPUIPC_LAUNCH_JOB_H

#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "core/facts.h"
#include "launch/pmix.h"
#include "wire/tcp.h"

#define GPUIPC_JOB_TOKEN_BYTES 16
#define GPUIPC_JOB_TOKEN_HEX (2 * GPUIPC_JOB_TOKEN_BYTES)
#define GPUIPC_JOB_HOST_LEN 65      /* a host name of at most 64 bytes, with its NUL */
#define GPUIPC_JOB_ENDPOINT_LEN 108 /* sun_path's size: '@' stands for the leading NUL */
#define GPUIPC_JOB_CARD_TEXT_LEN 512
#define GPUIPC_JOB_RANKS_MAX 65536

/* The PMIx keys the job's wire-up uses. */
#define GPUIPC_JOB_KEY_TOKEN "gpuipc.token"
#define GPUIPC_JOB_KEY_CARD "gpuipc.card"

/* The job token: 16 random bytes as 32 lowercase hex digits. */
typedef struct gpuipc_job_token {
    char hex[GPUIPC_JOB_TOKEN_HEX + 1];
} gpuipc_job_token;

/* One rank's card, as it published it. */
typedef struct gpuipc_job_card {
    uint32_t rank;
    uint32_t pid;                            /* in the rank's own PID namespace */
    uint64_t start;                          /* when that process started (clock ticks
                                              * after boot, core/proc.h); 0 where unknown */
    uint8_t boot_id[GPUIPC_FACTS_BOOT_ID_LEN]; /* all zero where unknown */
    uint64_t mnt_ns, net_ns, pid_ns;         /* namespace inodes; 0 where unknown */
    char host[GPUIPC_JOB_HOST_LEN];
    char endpoint[GPUIPC_JOB_ENDPOINT_LEN];  /* its listener, "@gpuipc-<32 random hex>" */
    char tcp[GPUIPC_TCP_TEXT_LEN];           /* its TCP listener for ranks of other nodes
                                              * (wire/tcp.h), "none" where it has none */
} gpuipc_job_card;

/* Where a peer is, as this rank judges it from both cards. */
enum gpuipc_job_where {
    GPUIPC_JOB_SAME_NODE,  /* same boot, same mount, network and PID namespaces */
    GPUIPC_JOB_OTHER_NODE, /* another boot id: another machine (or boot) */
    GPUIPC_JOB_OTHER_NS,   /* this machine, another mount, network or PID namespace */
    GPUIPC_JOB_UNKNOWN     /* a boot id or namespace not known on one side */
};

/* Makes a new token from getrandom(). Returns 0, or a negative errno with
 * err. */
int gpuipc_job_token_new(gpuipc_job_token *t, gpuipc_err *err);

/* Takes text as a token: exactly 32 lowercase hex digits. Returns 0, or
 * -EINVAL with err. */
int gpuipc_job_token_parse(gpuipc_job_token *t, const char *text, gpuipc_err *err);

/* Whether the len bytes at offered are the token t (a HELLO's claim), in
 * time that does not depend on where they differ. A wrong length (which is
 * no secret) or an empty t never matches. Returns 1 or 0. */
int gpuipc_job_token_matches(const gpuipc_job_token *t, const void *offered, size_t len);

/* This rank's card: the boot id and namespaces from f (core/facts), the pid
 * from f, host as given (bytes other than a-z, A-Z, 0-9, '.', '_' and '-'
 * become '_'; at most 64 kept), endpoint, its listener's name, and tcp,
 * its TCP listener's address (NULL or "": none). */
void gpuipc_job_card_make(gpuipc_job_card *c, uint32_t rank, const gpuipc_facts *f,
                          const char *host, const char *endpoint, const char *tcp);

/* The card as one line of text, "gpuipc-card/3 rank=3 pid=4711
 * start=123456 boot=<32 hex> mnt=4026531841 net=4026531840
 * pidns=4026531836 host=node1 ep=@gpuipc-<32 hex> tcp=192.0.2.2:41234"
 * ("tcp=none" where it listens on no TCP port), into buf (len bytes).
 * Returns 0, or -ENOSPC. */
int gpuipc_job_card_encode(const gpuipc_job_card *c, char *buf, size_t len);

/* Parses a card's text, strictly: that version, every field once and in
 * that order, decimal numbers without sign or leading zeros that fit, a
 * boot id of 32 hex digits, a host name of the allowed bytes and a
 * listener's name ("@gpuipc-" and 32 lowercase hex digits), and a TCP
 * listener that is "none" or an address and port. Returns 0, or
 * -EPROTO with err naming the field. */
int gpuipc_job_card_decode(gpuipc_job_card *c, const char *text, gpuipc_err *err);

/* Where peer is, as mine judges it (enum gpuipc_job_where), with one
 * sentence into why (len bytes) that starts "same node" or "not on this
 * node" and says which fact decided. */
int gpuipc_job_where(const gpuipc_job_card *mine, const gpuipc_job_card *peer, char *why,
                     size_t len);

/* ---- the exchange ---------------------------------------------------------------------- */

/* The job as this rank knows it after the exchange. */
typedef struct gpuipc_job gpuipc_job;

/* Runs the exchange above over l: the token, then every rank's card, each
 * checked (its rank, a listener's name). This rank's card comes from its
 * own facts (core/facts, so GPUIPC_TEST_SYSROOT applies, which is how the
 * tests fake another node), gethostname(), tcp (its TCP listener's address,
 * NULL or "" for none) and endpoint, the name of the
 * listener it bound. Returns 0 with *out owned by the caller
 * (gpuipc_job_free), or a negative errno with err (as gpuipc_launch_fence
 * and gpuipc_launch_get, or -EPROTO for a bad card). */
int gpuipc_job_join(gpuipc_launch *l, const char *endpoint, const char *tcp, gpuipc_job **out,
                    gpuipc_err *err);

/* ---- each rank's GPU ------------------------------------------------------------------- */

/* The PMIx key of a rank's GPU card. */
#define GPUIPC_JOB_KEY_GPU "gpuipc.gpu"
#define GPUIPC_JOB_GPU_UUID_LEN 16

/* What a rank publishes once it knows its place on its node (after the
 * cards): its GPU, and what every rank must share with rank 0. */
typedef struct gpuipc_job_gpu {
    uint32_t rank;
    int ordinal;                            /* -1: none (no driver, no GPU, or none needed) */
    uint8_t uuid[GPUIPC_JOB_GPU_UUID_LEN];  /* all zero with no GPU */
    uint64_t digest;                        /* of the options every rank must share */
    int refused;                            /* rank 0 refused its own options (its files) */
    /* NVML's GPU fabric info of it (gpu/nvml.h): its state (0 not
     * supported, 1 not started, 2 in progress, 3 completed; -1 not
     * reported), its status (an NVML return code, 0 healthy), cluster UUID
     * and clique: GPUs of one NVLink domain share both. */
    int fabric;
    uint32_t fabric_status;
    uint8_t cluster[GPUIPC_JOB_GPU_UUID_LEN];
    uint32_t clique;
    /* Its fabric's health (core/fabric.h): NVML's mask, and its summary
     * (-1 not reported, an older driver's). */
    uint32_t health;
    int summary;
} gpuipc_job_gpu;

/* The GPU card as one line, "gpuipc-gpucard/3 rank=3 ordinal=1 uuid=<32 hex>
 * digest=<16 hex> refused=0 fabric=3 fstatus=0 cluster=<32 hex> clique=7
 * health=<8 hex> summary=1" ("uuid=none" and "ordinal=-1" for no GPU;
 * "fabric=-1 fstatus=0 cluster=none clique=0 health=00000000 summary=-1"
 * where NVML said nothing of it, there is no GPU, or the state is one above
 * 3, which this program does not know; a summary above 3 is said as -1),
 * into buf (len bytes). Returns 0, or -ENOSPC. */
int gpuipc_job_gpu_encode(const gpuipc_job_gpu *g, char *buf, size_t len);

/* Parses a GPU card's text, strictly (every field once, in that order, an
 * ordinal of -1 to 65535 that is -1 exactly where the uuid is "none", 16
 * hex digits of digest, refused 0 or 1, a fabric of -1 to 3 that is -1
 * exactly where the cluster is "none" (and then with fstatus and clique 0,
 * health 0 and summary -1), and -1 where the ordinal is; 8 hex digits of
 * health, a summary of -1 to 3). Returns 0, or -EPROTO with err naming the
 * field. */
int gpuipc_job_gpu_decode(gpuipc_job_gpu *g, const char *text, gpuipc_err *err);

/* Whether the GPUs of cards a and b, of two nodes, can share FABRIC memory
 * as their fabric info says: GPUIPC_JOB_DOMAIN_ONE (one NVLink domain, or
 * not known: tried), _APART (both completed, with clusters or cliques that
 * differ: never one domain, not tried), _NONE (a GPU without fabric
 * support, or one that completed with a zero cluster UUID, as an H100 or
 * H200 not in a multi-node NVLink system does: not tried) or _NOT_READY (a
 * GPU's fabric not started or in progress, completed with an error status,
 * or with a fault in its health mask or summary: fails); why (len bytes)
 * names the values. */
enum gpuipc_job_domain {
    GPUIPC_JOB_DOMAIN_ONE,
    GPUIPC_JOB_DOMAIN_APART,
    GPUIPC_JOB_DOMAIN_NONE,
    GPUIPC_JOB_DOMAIN_NOT_READY,
};
int gpuipc_job_gpu_domain(const gpuipc_job_gpu *a, const gpuipc_job_gpu *b, char *why,
                          size_t len);

/* Publishes mine (its rank is this one's) and reads every rank's GPU card
 * after a fence ("gpus") into out[0..size), each checked to be that
 * rank's. Returns 0, or a negative errno with err (as gpuipc_launch_fence
 * and gpuipc_launch_get, or -EPROTO for a bad card). */
int gpuipc_job_share_gpus(const gpuipc_job *j, gpuipc_launch *l, const gpuipc_job_gpu *mine,
                          gpuipc_job_gpu *out, gpuipc_err *err);

/* The job's token, this rank, and the job's size. */
const gpuipc_job_token *gpuipc_job_token_of(const gpuipc_job *j);
uint32_t gpuipc_job_rank(const gpuipc_job *j);
uint32_t gpuipc_job_size(const gpuipc_job *j);

/* Rank's card (rank < size), or NULL. */
const gpuipc_job_card *gpuipc_job_card_of(const gpuipc_job *j, uint32_t rank);

/* Where rank is from this rank (enum gpuipc_job_where), why as
 * gpuipc_job_where writes it. */
int gpuipc_job_where_is(const gpuipc_job *j, uint32_t rank, char *why, size_t len);

/* How many ranks are on this node by the rule above (this one included),
 * and this rank's index among them in rank order: the local rank that
 * chooses this rank's GPU. Compare with gpuipc_launch_local_rank and
 * gpuipc_launch_local_size, the launcher's view. */
void gpuipc_job_node_place(const gpuipc_job *j, uint32_t *index, uint32_t *count);

/* Frees j (NULL is allowed). */
void gpuipc_job_free(gpuipc_job *j);

#endif
