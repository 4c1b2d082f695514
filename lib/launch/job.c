/* SPDX-License-Identifier: Apache-2.0 */
/* job.c: the job token, the ranks' cards, and the same-node rule. */
#include "launch/job.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/fabric.h"
#include "core/facts.h"
#include "core/procstat.h"
#include "core/random.h"
#include "core/units.h"

#define CARD_MAGIC "gpuipc-card/3"
#define GPU_MAGIC "gpuipc-gpucard/3"

struct gpuipc_job {
    gpuipc_job_token token;
    uint32_t rank, size;
    uint32_t node_index, node_count;
    gpuipc_job_card *cards; /* size of them, by rank */
    unsigned char *where;   /* enum gpuipc_job_where of each rank, from this one */
};

/* ---- the token ------------------------------------------------------------------------- */

int gpuipc_job_token_new(gpuipc_job_token *t, gpuipc_err *err)
{
    unsigned char raw[GPUIPC_JOB_TOKEN_BYTES];
    int e;

    memset(t, 0, sizeof(*t));
    if ((e = gpuipc_random_bytes(raw, sizeof(raw))) != 0)
        return gpuipc_err_sys(err, "getrandom", e, "getrandom: %s: no job token",
                              strerror(e));
    gpuipc_random_hex(t->hex, raw, sizeof(raw));
    return 0;
}

int gpuipc_job_token_parse(gpuipc_job_token *t, const char *text, gpuipc_err *err)
{
    uint8_t raw[GPUIPC_JOB_TOKEN_BYTES];

    memset(t, 0, sizeof(*t));
    if (gpuipc_random_unhex(raw, text, sizeof(raw)) < 0 || text[GPUIPC_JOB_TOKEN_HEX] != '\0')
        return gpuipc_err_set(err, -EINVAL,
                              "job token \"%.40s\": not %d lowercase hex digits", text,
                              GPUIPC_JOB_TOKEN_HEX);
    memcpy(t->hex, text, GPUIPC_JOB_TOKEN_HEX + 1);
    return 0;
}

int gpuipc_job_token_matches(const gpuipc_job_token *t, const void *offered, size_t len)
{
    const unsigned char *o = offered;
    unsigned char diff = 0;
    size_t i;

    /* The length and whether this side has a token are no secret; the
     * bytes are compared all the way, whatever differs first. */
    if (len != GPUIPC_JOB_TOKEN_HEX || t->hex[0] == '\0' || offered == NULL)
        return 0;
    for (i = 0; i < GPUIPC_JOB_TOKEN_HEX; i++)
        diff |= (unsigned char)((unsigned char)t->hex[i] ^ o[i]);
    return diff == 0;
}

/* Whether name is a listener's: "@gpuipc-" and 32 lowercase hex digits. */
static int endpoint_ok(const char *name)
{
    uint8_t raw[GPUIPC_JOB_TOKEN_BYTES];
    size_t n = strlen("@gpuipc-");

    return strncmp(name, "@gpuipc-", n) == 0 &&
           gpuipc_random_unhex(raw, name + n, sizeof(raw)) == 0 &&
           name[n + GPUIPC_JOB_TOKEN_HEX] == '\0';
}

/* ---- the card ------------------------------------------------------------------------- */

static int host_byte_ok(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '.' || c == '_' || c == '-';
}

void gpuipc_job_card_make(gpuipc_job_card *c, uint32_t rank, const gpuipc_facts *f,
                          const char *host, const char *endpoint, const char *tcp)
{
    size_t i;

    memset(c, 0, sizeof(*c));
    c->rank = rank;
    c->pid = f->pid;
    memcpy(c->boot_id, f->boot_id, sizeof(c->boot_id));
    c->mnt_ns = f->ns[GPUIPC_NS_MNT];
    c->net_ns = f->ns[GPUIPC_NS_NET];
    c->pid_ns = f->ns[GPUIPC_NS_PID];
    for (i = 0; host != NULL && host[i] != '\0' && i < GPUIPC_JOB_HOST_LEN - 1; i++)
        c->host[i] = host_byte_ok(host[i]) ? host[i] : '_';
    if (i == 0)
        snprintf(c->host, sizeof(c->host), "unknown");
    snprintf(c->endpoint, sizeof(c->endpoint), "%s", endpoint);
    snprintf(c->tcp, sizeof(c->tcp), "%s", tcp != NULL && tcp[0] != '\0' ? tcp : "none");
}

int gpuipc_job_card_encode(const gpuipc_job_card *c, char *buf, size_t len)
{
    char boot[2 * GPUIPC_FACTS_BOOT_ID_LEN + 1];
    int n;

    gpuipc_random_hex(boot, c->boot_id, GPUIPC_FACTS_BOOT_ID_LEN);
    n = snprintf(buf, len,
                 CARD_MAGIC " rank=%" PRIu32 " pid=%" PRIu32 " start=%" PRIu64 " boot=%s mnt=%"
                            PRIu64 " net=%" PRIu64 " pidns=%" PRIu64 " host=%s ep=%s tcp=%s",
                 c->rank, c->pid, c->start, boot, c->mnt_ns, c->net_ns, c->pid_ns, c->host,
                 c->endpoint, c->tcp);
    return n < 0 || (size_t)n >= len ? -ENOSPC : 0;
}

/* Takes the field "<name>=<value>" at *p (followed by one space, or the end
 * where last) into out (cap bytes). */
static int take_field(const char **p, const char *name, int last, char *out, size_t cap,
                      gpuipc_err *err)
{
    size_t nl = strlen(name), n;
    const char *v;

    if (strncmp(*p, name, nl) != 0 || (*p)[nl] != '=')
        return gpuipc_err_set(err, -EPROTO, "card: \"%s=\" expected at \"%.24s\"", name, *p);
    v = *p + nl + 1;
    n = strcspn(v, " ");
    if (n == 0 || n >= cap)
        return gpuipc_err_set(err, -EPROTO, "card: %s: %s value", name, n == 0 ? "an empty"
                                                                            : "too long a");
    memcpy(out, v, n);
    out[n] = '\0';
    if (last ? v[n] != '\0' : v[n] != ' ' || v[n + 1] == ' ')
        return gpuipc_err_set(err, -EPROTO, "card: %s: %s", name,
                              last ? "text after the last field"
                                   : "the next field is missing, or fields are not one "
                                     "space apart");
    *p = v + n + (last ? 0 : 1);
    return 0;
}

/* A decimal number without sign or leading zero, at most max. */
static int parse_dec(const char *s, uint64_t max, uint64_t *v)
{
    uint64_t x = 0;

    if (s[0] == '\0' || (s[0] == '0' && s[1] != '\0'))
        return -1;
    for (; *s != '\0'; s++) {
        /* (a digit above max itself: max - digit would wrap) */
        if (*s < '0' || *s > '9' || (uint64_t)(*s - '0') > max ||
            x > (max - (uint64_t)(*s - '0')) / 10)
            return -1;
        x = x * 10 + (uint64_t)(*s - '0');
    }
    *v = x;
    return 0;
}

int gpuipc_job_card_decode(gpuipc_job_card *c, const char *text, gpuipc_err *err)
{
    static const char *const numbers[] = {"rank", "pid"};
    char v[GPUIPC_JOB_ENDPOINT_LEN + 2];
    gpuipc_tcp_addr tcp;
    const char *p = text;
    uint64_t x;
    size_t i;
    int rc = 0;

    memset(c, 0, sizeof(*c));
    if (strncmp(p, CARD_MAGIC " ", strlen(CARD_MAGIC) + 1) != 0)
        return gpuipc_err_set(err, -EPROTO, "card: \"%.20s\": not a %s card (another version "
                                            "of gpuipc_test?)", text, CARD_MAGIC);
    p += strlen(CARD_MAGIC) + 1;
    for (i = 0; rc == 0 && i < 2; i++) {
        rc = take_field(&p, numbers[i], 0, v, sizeof(v), err);
        if (rc == 0 && parse_dec(v, UINT32_MAX, &x) < 0)
            rc = gpuipc_err_set(err, -EPROTO, "card: %s \"%s\": not a 32-bit number",
                                numbers[i], v);
        if (rc == 0 && i == 0)
            c->rank = (uint32_t)x;
        else if (rc == 0)
            c->pid = (uint32_t)x;
    }
    if (rc == 0)
        rc = take_field(&p, "start", 0, v, sizeof(v), err);
    if (rc == 0 && parse_dec(v, UINT64_MAX, &c->start) < 0)
        rc = gpuipc_err_set(err, -EPROTO, "card: start \"%.24s\": not a number", v);
    if (rc == 0)
        rc = take_field(&p, "boot", 0, v, sizeof(v), err);
    if (rc == 0 && (gpuipc_random_unhex(c->boot_id, v, GPUIPC_FACTS_BOOT_ID_LEN) < 0 ||
                    v[2 * GPUIPC_FACTS_BOOT_ID_LEN] != '\0'))
        rc = gpuipc_err_set(err, -EPROTO, "card: boot \"%.40s\": not 32 hex digits", v);
    if (rc == 0)
        rc = take_field(&p, "mnt", 0, v, sizeof(v), err);
    if (rc == 0 && parse_dec(v, UINT64_MAX, &c->mnt_ns) < 0)
        rc = gpuipc_err_set(err, -EPROTO, "card: mnt \"%.24s\": not a number", v);
    if (rc == 0)
        rc = take_field(&p, "net", 0, v, sizeof(v), err);
    if (rc == 0 && parse_dec(v, UINT64_MAX, &c->net_ns) < 0)
        rc = gpuipc_err_set(err, -EPROTO, "card: net \"%.24s\": not a number", v);
    if (rc == 0)
        rc = take_field(&p, "pidns", 0, v, sizeof(v), err);
    if (rc == 0 && parse_dec(v, UINT64_MAX, &c->pid_ns) < 0)
        rc = gpuipc_err_set(err, -EPROTO, "card: pidns \"%.24s\": not a number", v);
    if (rc == 0)
        rc = take_field(&p, "host", 0, c->host, sizeof(c->host), err);
    for (i = 0; rc == 0 && c->host[i] != '\0'; i++)
        if (!host_byte_ok(c->host[i]))
            rc = gpuipc_err_set(err, -EPROTO, "card: host \"%.64s\": a byte other than "
                                              "a-z, A-Z, 0-9, '.', '_', '-'", c->host);
    if (rc == 0)
        rc = take_field(&p, "ep", 0, c->endpoint, sizeof(c->endpoint), err);
    if (rc == 0 && !endpoint_ok(c->endpoint))
        rc = gpuipc_err_set(err, -EPROTO, "card: ep \"%.64s\": not a listener's name "
                                          "(@gpuipc- and 32 lowercase hex digits)", c->endpoint);
    if (rc == 0)
        rc = take_field(&p, "tcp", 1, c->tcp, sizeof(c->tcp), err);
    if (rc == 0 && strcmp(c->tcp, "none") != 0 && gpuipc_tcp_parse(c->tcp, &tcp) < 0)
        rc = gpuipc_err_set(err, -EPROTO, "card: tcp \"%.64s\": neither none nor an address "
                                          "and port (192.0.2.2:41234, [fd00::2]:41234)", c->tcp);
    /* Nothing of a refused card is left to be taken for a rank's. */
    if (rc < 0)
        memset(c, 0, sizeof(*c));
    return rc;
}

/* ---- the same-node rule --------------------------------------------------------------- */

static int boot_known(const uint8_t *id)
{
    static const uint8_t zero[GPUIPC_FACTS_BOOT_ID_LEN];

    return memcmp(id, zero, sizeof(zero)) != 0;
}

int gpuipc_job_where(const gpuipc_job_card *mine, const gpuipc_job_card *peer, char *why,
                     size_t len)
{
    if (!boot_known(mine->boot_id) || !boot_known(peer->boot_id)) {
        snprintf(why, len,
                 "not on this node: rank %" PRIu32 " (host %s): %s boot id is unknown, so "
                 "the same node cannot be shown (/proc/sys/kernel/random/boot_id unreadable)",
                 peer->rank, peer->host, boot_known(mine->boot_id) ? "its" : "this rank's");
        return GPUIPC_JOB_UNKNOWN;
    }
    if (memcmp(mine->boot_id, peer->boot_id, GPUIPC_FACTS_BOOT_ID_LEN) != 0) {
        snprintf(why, len,
                 "not on this node: rank %" PRIu32 " (host %s) runs in another boot "
                 "(boot id %02x%02x%02x%02x... vs %02x%02x%02x%02x... here): another machine",
                 peer->rank, peer->host, peer->boot_id[0], peer->boot_id[1], peer->boot_id[2],
                 peer->boot_id[3], mine->boot_id[0], mine->boot_id[1], mine->boot_id[2],
                 mine->boot_id[3]);
        return GPUIPC_JOB_OTHER_NODE;
    }
    if (mine->mnt_ns == 0 || peer->mnt_ns == 0 || mine->net_ns == 0 || peer->net_ns == 0 ||
        mine->pid_ns == 0 || peer->pid_ns == 0) {
        snprintf(why, len,
                 "not on this node: rank %" PRIu32 " (host %s) runs on this machine, but a "
                 "mount, network or PID namespace is unknown (/proc/self/ns unreadable), so "
                 "sharing them cannot be shown", peer->rank, peer->host);
        return GPUIPC_JOB_UNKNOWN;
    }
    if (mine->mnt_ns != peer->mnt_ns || mine->net_ns != peer->net_ns) {
        snprintf(why, len,
                 "not on this node: rank %" PRIu32 " (host %s) runs on this machine but in "
                 "another %s namespace (%s:[%" PRIu64 "] vs [%" PRIu64 "] here): a container "
                 "of its own, whose abstract sockets and files this rank cannot reach",
                 peer->rank, peer->host, mine->net_ns != peer->net_ns ? "network" : "mount",
                 mine->net_ns != peer->net_ns ? "net" : "mnt",
                 mine->net_ns != peer->net_ns ? peer->net_ns : peer->mnt_ns,
                 mine->net_ns != peer->net_ns ? mine->net_ns : mine->mnt_ns);
        return GPUIPC_JOB_OTHER_NS;
    }
    if (mine->pid_ns != peer->pid_ns) {
        snprintf(why, len,
                 "not on this node: rank %" PRIu32 " (host %s) runs on this machine but in "
                 "another PID namespace (pid:[%" PRIu64 "] vs [%" PRIu64 "] here): its pid "
                 "means nothing here, so the kernel cannot vouch for who connects (start the "
                 "ranks in one PID namespace)", peer->rank, peer->host, peer->pid_ns,
                 mine->pid_ns);
        return GPUIPC_JOB_OTHER_NS;
    }
    snprintf(why, len,
             "same node: rank %" PRIu32 " (host %s) shares this rank's boot id and mount, "
             "network and PID namespaces", peer->rank, peer->host);
    return GPUIPC_JOB_SAME_NODE;
}

/* ---- the exchange ---------------------------------------------------------------------- */

/* Reads rank k's card through l into *c and checks it is k's, in this job. */
static int read_card(gpuipc_launch *l, uint32_t k, gpuipc_job_card *c, gpuipc_err *err)
{
    char text[GPUIPC_JOB_CARD_TEXT_LEN];
    int rc = gpuipc_launch_get(l, k, GPUIPC_JOB_KEY_CARD, text, sizeof(text), err);

    if (rc < 0)
        return rc;
    rc = gpuipc_job_card_decode(c, text, err);
    if (rc < 0) {
        gpuipc_err_prefix(err, "rank %" PRIu32 "'s card", k);
        return rc;
    }
    if (c->rank != k)
        return gpuipc_err_set(err, -EPROTO, "rank %" PRIu32 "'s card says rank %" PRIu32, k,
                              c->rank);
    return 0;
}

int gpuipc_job_join(gpuipc_launch *l, const char *endpoint, const char *tcp, gpuipc_job **out,
                    gpuipc_err *err)
{
    char text[GPUIPC_JOB_CARD_TEXT_LEN], host[256] = "", why[GPUIPC_ERR_LEN];
    gpuipc_facts facts;
    gpuipc_job *j;
    uint32_t k;
    int rc;

    *out = NULL;
    if (gpuipc_launch_size(l) > GPUIPC_JOB_RANKS_MAX)
        return gpuipc_err_set(err, -E2BIG, "a job of %" PRIu32 " ranks: at most %d",
                              gpuipc_launch_size(l), GPUIPC_JOB_RANKS_MAX);
    j = calloc(1, sizeof(*j));
    if (j == NULL)
        return gpuipc_err_set(err, -ENOMEM, "job: out of memory");
    j->rank = gpuipc_launch_rank(l);
    j->size = gpuipc_launch_size(l);
    j->cards = calloc(j->size, sizeof(*j->cards));
    j->where = calloc(j->size, 1);
    if (j->cards == NULL || j->where == NULL) {
        rc = gpuipc_err_set(err, -ENOMEM, "job of %" PRIu32 " ranks: out of memory", j->size);
        goto out_free;
    }

    /* The token: rank 0's, to everyone. */
    if (j->rank == 0) {
        rc = gpuipc_job_token_new(&j->token, err);
        if (rc == 0)
            rc = gpuipc_launch_put(l, GPUIPC_JOB_KEY_TOKEN, j->token.hex, err);
        if (rc == 0)
            rc = gpuipc_launch_commit(l, err);
        if (rc < 0)
            goto out_free;
    }
    rc = gpuipc_launch_fence(l, "token", err);
    if (rc < 0)
        goto out_free;
    if (j->rank != 0) {
        rc = gpuipc_launch_get(l, 0, GPUIPC_JOB_KEY_TOKEN, text, sizeof(text), err);
        if (rc == 0)
            rc = gpuipc_job_token_parse(&j->token, text, err);
        if (rc < 0)
            goto out_free;
    }

    /* The cards: this rank's out, everyone's in. */
    gpuipc_facts_gather(&facts);
    if (gethostname(host, sizeof(host) - 1) < 0)
        host[0] = '\0';
    gpuipc_job_card_make(&j->cards[j->rank], j->rank, &facts, host, endpoint, tcp);
    j->cards[j->rank].start = gpuipc_proc_start_ticks(getpid());
    rc = gpuipc_job_card_encode(&j->cards[j->rank], text, sizeof(text));
    if (rc < 0) {
        gpuipc_err_set(err, rc, "this rank's card does not fit %d bytes",
                       GPUIPC_JOB_CARD_TEXT_LEN);
        goto out_free;
    }
    rc = gpuipc_launch_put(l, GPUIPC_JOB_KEY_CARD, text, err);
    if (rc == 0)
        rc = gpuipc_launch_commit(l, err);
    if (rc == 0)
        rc = gpuipc_launch_fence(l, "cards", err);
    for (k = 0; rc == 0 && k < j->size; k++)
        if (k != j->rank)
            rc = read_card(l, k, &j->cards[k], err);
    if (rc < 0)
        goto out_free;

    for (k = 0; k < j->size; k++) {
        j->where[k] = (unsigned char)gpuipc_job_where(&j->cards[j->rank], &j->cards[k], why,
                                                      sizeof(why));
        if (j->where[k] == GPUIPC_JOB_SAME_NODE) {
            j->node_index += k < j->rank;
            j->node_count++;
        }
    }
    *out = j;
    return 0;

out_free:
    gpuipc_job_free(j);
    return rc;
}

/* ---- each rank's GPU ------------------------------------------------------------------- */

int gpuipc_job_gpu_encode(const gpuipc_job_gpu *g, char *buf, size_t len)
{
    char uuid[2 * GPUIPC_JOB_GPU_UUID_LEN + 1], cluster[2 * GPUIPC_JOB_GPU_UUID_LEN + 1];
    int n, known;

    if (g->ordinal >= 0)
        gpuipc_random_hex(uuid, g->uuid, GPUIPC_JOB_GPU_UUID_LEN);
    else
        snprintf(uuid, sizeof(uuid), "none");
    /* A state this program does not know (a newer driver's), or a GPU
     * that is none, is said as not reported. */
    known = g->ordinal >= 0 && g->fabric >= 0 && g->fabric <= 3;
    if (known)
        gpuipc_random_hex(cluster, g->cluster, GPUIPC_JOB_GPU_UUID_LEN);
    else
        snprintf(cluster, sizeof(cluster), "none");
    n = snprintf(buf, len, GPU_MAGIC " rank=%" PRIu32 " ordinal=%d uuid=%s digest=%016" PRIx64
                           " refused=%d fabric=%d fstatus=%" PRIu32 " cluster=%s clique=%" PRIu32
                           " health=%08" PRIx32 " summary=%d",
                 g->rank, g->ordinal >= 0 ? g->ordinal : -1, uuid, g->digest, g->refused != 0,
                 known ? g->fabric : -1, known ? g->fabric_status : 0, cluster,
                 known ? g->clique : 0, known ? g->health : 0,
                 known && g->summary >= 0 && g->summary <= 3 ? g->summary : -1);
    return n < 0 || (size_t)n >= len ? -ENOSPC : 0;
}

int gpuipc_job_gpu_domain(const gpuipc_job_gpu *a, const gpuipc_job_gpu *b, char *why,
                          size_t len)
{
    static const uint8_t zero[GPUIPC_JOB_GPU_UUID_LEN];
    const gpuipc_job_gpu *g[2] = {a, b};
    char ca[48], cb[48], faults[200];
    int i;

    why[0] = '\0';
    for (i = 0; i < 2; i++)
        if (g[i]->fabric == GPUIPC_FABRIC_NOT_SUPPORTED) {
            snprintf(why, len, "rank %" PRIu32 "'s GPU has no GPU fabric (NVML: not "
                     "supported): no multi-node NVLink, so FABRIC memory does not cross to "
                     "another node", g[i]->rank);
            return GPUIPC_JOB_DOMAIN_NONE;
        }
    for (i = 0; i < 2; i++)
        if (g[i]->fabric > 0 && (g[i]->fabric != GPUIPC_FABRIC_COMPLETED ||
                                 g[i]->fabric_status != 0)) {
            snprintf(why, len, "rank %" PRIu32 "'s GPU fabric is %s%s (NVML status %" PRIu32
                     "): the GPU has not joined its NVLink fabric (see nvidia-fabricmanager "
                     "and nvidia-imex on that node, and its GPU's Xid lines in the kernel log)",
                     g[i]->rank, gpuipc_fabric_state_name(g[i]->fabric),
                     g[i]->fabric == GPUIPC_FABRIC_COMPLETED ? " with an error" : "",
                     g[i]->fabric_status);
            return GPUIPC_JOB_DOMAIN_NOT_READY;
        }
    /* A zero cluster is a GPU no NVLink switch fabric has taken in: an H100
     * or H200 of an 8-GPU board says so, and is no multi-node NVLink system.
     * Said before its health (a fault of its own board's NVSwitches does not
     * make a pair that cannot cross nodes a failure) and before a peer not
     * reported (the pair cannot be one domain either way). */
    for (i = 0; i < 2; i++)
        if (g[i]->fabric == GPUIPC_FABRIC_COMPLETED &&
            memcmp(g[i]->cluster, zero, sizeof(zero)) == 0) {
            snprintf(why, len, "rank %" PRIu32 "'s GPU fabric completed with a zero cluster "
                     "UUID (clique %" PRIu32 "): not a multi-node NVLink system (an H100 or "
                     "H200 board's NVLink joins the GPUs of one node only), so FABRIC memory "
                     "does not cross to another node", g[i]->rank, g[i]->clique);
            return GPUIPC_JOB_DOMAIN_NONE;
        }
    for (i = 0; i < 2; i++)
        if (g[i]->fabric == GPUIPC_FABRIC_COMPLETED &&
            gpuipc_fabric_health_faults(g[i]->health, g[i]->summary, faults, sizeof(faults))) {
            snprintf(why, len, "rank %" PRIu32 "'s GPU fabric is not healthy: %s (NVML health "
                     "mask 0x%" PRIx32 ", summary %s): see nvidia-smi -q's Fabric section, "
                     "the NVLink switches' fabric manager, and its GPU's Xid lines in the "
                     "kernel log", g[i]->rank, faults, g[i]->health,
                     gpuipc_fabric_summary_name(g[i]->summary));
            return GPUIPC_JOB_DOMAIN_NOT_READY;
        }
    /* Both completed and healthy (or not reported: tried). */
    if (a->fabric != GPUIPC_FABRIC_COMPLETED || b->fabric != GPUIPC_FABRIC_COMPLETED)
        return GPUIPC_JOB_DOMAIN_ONE;
    if (memcmp(a->cluster, b->cluster, sizeof(zero)) == 0 && a->clique == b->clique)
        return GPUIPC_JOB_DOMAIN_ONE;
    gpuipc_units_format_uuid(a->cluster, ca, sizeof(ca));
    gpuipc_units_format_uuid(b->cluster, cb, sizeof(cb));
    snprintf(why, len, "not one NVLink domain: rank %" PRIu32 "'s GPU is in fabric cluster %s, "
             "clique %" PRIu32 ", and rank %" PRIu32 "'s in cluster %s, clique %" PRIu32 "%s",
             a->rank, ca + 4, a->clique, b->rank, cb + 4, b->clique,
             memcmp(a->cluster, b->cluster, sizeof(zero)) == 0
                 ? " (one cluster, two cliques: two NVLink partitions)" : "");
    return GPUIPC_JOB_DOMAIN_APART;
}

int gpuipc_job_gpu_decode(gpuipc_job_gpu *g, const char *text, gpuipc_err *err)
{
    uint8_t digest[8], health[4];
    const char *p = text;
    char v[2 * GPUIPC_JOB_GPU_UUID_LEN + 2];
    uint64_t x = 0;
    size_t i;
    int rc;

    memset(g, 0, sizeof(*g));
    if (strncmp(p, GPU_MAGIC " ", strlen(GPU_MAGIC) + 1) != 0)
        return gpuipc_err_set(err, -EPROTO, "card: \"%.20s\": not a %s card (another version "
                                            "of gpuipc_test?)", text, GPU_MAGIC);
    p += strlen(GPU_MAGIC) + 1;
    rc = take_field(&p, "rank", 0, v, sizeof(v), err);
    if (rc == 0 && parse_dec(v, UINT32_MAX, &x) < 0)
        rc = gpuipc_err_set(err, -EPROTO, "card: rank \"%s\": not a 32-bit number", v);
    g->rank = (uint32_t)x;
    if (rc == 0)
        rc = take_field(&p, "ordinal", 0, v, sizeof(v), err);
    if (rc == 0 && strcmp(v, "-1") == 0)
        g->ordinal = -1;
    else if (rc == 0 && parse_dec(v, 65535, &x) < 0)
        rc = gpuipc_err_set(err, -EPROTO, "card: ordinal \"%.8s\": not -1 to 65535", v);
    else if (rc == 0)
        g->ordinal = (int)x;
    if (rc == 0)
        rc = take_field(&p, "uuid", 0, v, sizeof(v), err);
    if (rc == 0 && (strcmp(v, "none") == 0) != (g->ordinal < 0))
        rc = gpuipc_err_set(err, -EPROTO, "card: uuid \"%.36s\" with ordinal %d: a GPU has "
                                          "both, none has neither", v, g->ordinal);
    else if (rc == 0 && g->ordinal >= 0 &&
             (gpuipc_random_unhex(g->uuid, v, GPUIPC_JOB_GPU_UUID_LEN) < 0 ||
              v[2 * GPUIPC_JOB_GPU_UUID_LEN] != '\0'))
        rc = gpuipc_err_set(err, -EPROTO, "card: uuid \"%.36s\": not 32 hex digits", v);
    if (rc == 0)
        rc = take_field(&p, "digest", 0, v, sizeof(v), err);
    if (rc == 0 && (gpuipc_random_unhex(digest, v, sizeof(digest)) < 0 || v[16] != '\0'))
        rc = gpuipc_err_set(err, -EPROTO, "card: digest \"%.20s\": not 16 hex digits", v);
    for (i = 0; rc == 0 && i < sizeof(digest); i++)
        g->digest = g->digest << 8 | digest[i];
    if (rc == 0)
        rc = take_field(&p, "refused", 0, v, sizeof(v), err);
    if (rc == 0 && strcmp(v, "0") != 0 && strcmp(v, "1") != 0)
        rc = gpuipc_err_set(err, -EPROTO, "card: refused \"%.8s\": not 0 or 1", v);
    g->refused = rc == 0 && v[0] == '1';
    if (rc == 0)
        rc = take_field(&p, "fabric", 0, v, sizeof(v), err);
    if (rc == 0 && strcmp(v, "-1") == 0)
        g->fabric = -1;
    else if (rc == 0 && parse_dec(v, 3, &x) < 0)
        rc = gpuipc_err_set(err, -EPROTO, "card: fabric \"%.8s\": not -1 to 3", v);
    else if (rc == 0)
        g->fabric = (int)x;
    if (rc == 0)
        rc = take_field(&p, "fstatus", 0, v, sizeof(v), err);
    if (rc == 0 && parse_dec(v, UINT32_MAX, &x) < 0)
        rc = gpuipc_err_set(err, -EPROTO, "card: fstatus \"%.12s\": not a 32-bit number", v);
    g->fabric_status = (uint32_t)x;
    if (rc == 0)
        rc = take_field(&p, "cluster", 0, v, sizeof(v), err);
    if (rc == 0 && (strcmp(v, "none") == 0) != (g->fabric < 0))
        rc = gpuipc_err_set(err, -EPROTO, "card: cluster \"%.36s\" with fabric %d: a GPU "
                                          "whose fabric is reported has one, else none", v,
                            g->fabric);
    else if (rc == 0 && g->fabric >= 0 &&
             (gpuipc_random_unhex(g->cluster, v, GPUIPC_JOB_GPU_UUID_LEN) < 0 ||
              v[2 * GPUIPC_JOB_GPU_UUID_LEN] != '\0'))
        rc = gpuipc_err_set(err, -EPROTO, "card: cluster \"%.36s\": not 32 hex digits", v);
    if (rc == 0)
        rc = take_field(&p, "clique", 0, v, sizeof(v), err);
    if (rc == 0 && parse_dec(v, UINT32_MAX, &x) < 0)
        rc = gpuipc_err_set(err, -EPROTO, "card: clique \"%.12s\": not a 32-bit number", v);
    g->clique = (uint32_t)x;
    if (rc == 0)
        rc = take_field(&p, "health", 0, v, sizeof(v), err);
    if (rc == 0 && (gpuipc_random_unhex(health, v, sizeof(health)) < 0 || v[8] != '\0'))
        rc = gpuipc_err_set(err, -EPROTO, "card: health \"%.12s\": not 8 hex digits", v);
    for (i = 0; rc == 0 && i < sizeof(health); i++)
        g->health = g->health << 8 | health[i];
    if (rc == 0)
        rc = take_field(&p, "summary", 1, v, sizeof(v), err);
    if (rc == 0 && strcmp(v, "-1") == 0)
        g->summary = -1;
    else if (rc == 0 && parse_dec(v, 3, &x) < 0)
        rc = gpuipc_err_set(err, -EPROTO, "card: summary \"%.8s\": not -1 to 3", v);
    else if (rc == 0)
        g->summary = (int)x;
    if (rc == 0 && g->fabric < 0 &&
        (g->fabric_status != 0 || g->clique != 0 || g->health != 0 || g->summary != -1))
        rc = gpuipc_err_set(err, -EPROTO, "card: fstatus %" PRIu32 ", clique %" PRIu32
                                          ", health %08" PRIx32 " and summary %d with fabric "
                                          "-1: a fabric not reported has none of them",
                            g->fabric_status, g->clique, g->health, g->summary);
    if (rc == 0 && g->ordinal < 0 && g->fabric >= 0)
        rc = gpuipc_err_set(err, -EPROTO, "card: fabric %d with ordinal -1: no GPU has no "
                                          "fabric", g->fabric);
    if (rc < 0)
        memset(g, 0, sizeof(*g));
    return rc;
}

int gpuipc_job_share_gpus(const gpuipc_job *j, gpuipc_launch *l, const gpuipc_job_gpu *mine,
                          gpuipc_job_gpu *out, gpuipc_err *err)
{
    char text[GPUIPC_JOB_CARD_TEXT_LEN];
    uint32_t k;
    int rc;

    if ((rc = gpuipc_job_gpu_encode(mine, text, sizeof(text))) < 0)
        return gpuipc_err_set(err, rc, "its GPU card: too long");
    if ((rc = gpuipc_launch_put(l, GPUIPC_JOB_KEY_GPU, text, err)) < 0 ||
        (rc = gpuipc_launch_commit(l, err)) < 0 || (rc = gpuipc_launch_fence(l, "gpus", err)) < 0)
        return rc;
    for (k = 0; k < j->size; k++) {
        if (k == j->rank) {
            out[k] = *mine;
            continue;
        }
        if ((rc = gpuipc_launch_get(l, k, GPUIPC_JOB_KEY_GPU, text, sizeof(text), err)) < 0)
            return rc;
        if ((rc = gpuipc_job_gpu_decode(&out[k], text, err)) < 0) {
            gpuipc_err_prefix(err, "rank %" PRIu32 "'s GPU card", k);
            return rc;
        }
        if (out[k].rank != k)
            return gpuipc_err_set(err, -EPROTO, "rank %" PRIu32 "'s GPU card says rank %" PRIu32,
                                  k, out[k].rank);
    }
    return 0;
}

const gpuipc_job_token *gpuipc_job_token_of(const gpuipc_job *j)
{
    return &j->token;
}

uint32_t gpuipc_job_rank(const gpuipc_job *j)
{
    return j->rank;
}

uint32_t gpuipc_job_size(const gpuipc_job *j)
{
    return j->size;
}

const gpuipc_job_card *gpuipc_job_card_of(const gpuipc_job *j, uint32_t rank)
{
    return rank < j->size ? &j->cards[rank] : NULL;
}

int gpuipc_job_where_is(const gpuipc_job *j, uint32_t rank, char *why, size_t len)
{
    if (rank >= j->size) {
        snprintf(why, len, "not on this node: rank %" PRIu32 " is not in this job of %" PRIu32
                           " ranks", rank, j->size);
        return GPUIPC_JOB_UNKNOWN;
    }
    return gpuipc_job_where(&j->cards[j->rank], &j->cards[rank], why, len);
}

void gpuipc_job_node_place(const gpuipc_job *j, uint32_t *index, uint32_t *count)
{
    *index = j->node_index;
    *count = j->node_count;
}

void gpuipc_job_free(gpuipc_job *j)
{
    if (j == NULL)
        return;
    free(j->cards);
    free(j->where);
    free(j);
}
