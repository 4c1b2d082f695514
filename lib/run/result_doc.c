/* SPDX-License-Identifier: Apache-2.0 */
/* result_doc.c: the result document (result_doc.h). */
#include "run/result_doc.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "core/cause.h"
#include "core/fabric.h"
#include "core/json.h"
#include "core/log.h"
#include "core/names.h"
#include "core/outfile.h"
#include "core/random.h"
#include "core/runinfo.h"
#include "core/status.h"
#include "core/step.h"
#include "core/units.h"
#include "run/cellset.h"
#include "run/rank_results.h"
#include "session/report.h"
#include "wire/msg.h"

/* What the document's writer keeps of this process, in one place: set up
 * by main and the modes before the run (the checked file, the standard
 * output set aside, a mode's payload), read by the watchdog at the
 * deadline without a lock (file and out, by gpuipc_doc_write_kit), and
 * written marks whether a document was. */
static struct {
    gpuipc_outfile file; /* --json FILE, checked before the run (dirfd -1: none) */
    int out;             /* --json -: the standard output main set aside, or -1 */
    int written;         /* gpuipc_doc_write ran */
    struct {
        const char *key;
        gpuipc_doc_payload_fn fn;
        void *arg;
        void (*release)(void *arg);
    } payload;
} state = {.file = {.dirfd = -1}, .out = -1};

void gpuipc_doc_set_payload(const char *key, gpuipc_doc_payload_fn fn, void *arg,
                            void (*release)(void *arg))
{
    gpuipc_doc_drop_payload();
    state.payload.key = key;
    state.payload.fn = fn;
    state.payload.arg = arg;
    state.payload.release = release;
}

void gpuipc_doc_drop_payload(void)
{
    if (state.payload.release != NULL)
        state.payload.release(state.payload.arg);
    memset(&state.payload, 0, sizeof(state.payload));
}

int gpuipc_doc_written(void)
{
    return state.written;
}

int gpuipc_doc_take_stdout(void)
{
    fflush(stdout);
    if ((state.out = fcntl(1, F_DUPFD_CLOEXEC, 3)) < 0 || dup2(2, 1) < 0) {
        gpuipc_log_say("--json -: dup: %s", strerror(errno));
        return -1;
    }
    return 0;
}


/* The rendering below (json_body and what it calls) uses no stdio, no
 * malloc and no locale: the watchdog renders the deadline's document with
 * it. What needs more (the environment's effects, the machine) is gathered
 * before. */

/* errno's name for a device file's open, "ok" for 0. */
static void json_open(gpuipc_json *j, const char *key, uint32_t e)
{
    const char *name = e == 0 ? "ok" : gpuipc_errno_name((int)e);
    char text[24];
    gpuipc_sbuf b;

    if (name == NULL) {
        gpuipc_sbuf_init(&b, text, sizeof(text));
        gpuipc_sbuf_str(&b, "errno ");
        gpuipc_sbuf_uint(&b, e);
        name = text;
    }
    gpuipc_json_string(j, key, name);
}

/* 16 bytes as a UUID's text (8-4-4-4-12 lowercase hex digits) into out
 * (37 bytes), with core/random's hex writer. */
static void put_uuid(char *out, const uint8_t p[16])
{
    static const size_t group[] = {4, 2, 2, 2, 6};
    size_t g;

    for (g = 0; g < sizeof(group) / sizeof(group[0]); g++) {
        gpuipc_random_hex(out, p, group[g]);
        out += 2 * group[g];
        p += group[g];
        if (g + 1 < sizeof(group) / sizeof(group[0]))
            *out++ = '-';
    }
}

/* A GPU's fabric info (NVML), null where not reported (known 0). */
static void json_fabric(gpuipc_json *j, int known, const gpuipc_doc_fabric *f)
{
    char faults[200];

    if (!known || f->state < 0 || f->state > 3) {
        gpuipc_json_string(j, "fabric", NULL);
        return;
    }
    gpuipc_json_object(j, "fabric");
    gpuipc_json_string(j, "state", gpuipc_fabric_state_name(f->state));
    gpuipc_json_int(j, "status", f->status);
    /* "GPU-" and the UUID: the cluster's UUID alone. */
    gpuipc_json_string(j, "cluster_uuid", strncmp(f->cluster, "GPU-", 4) == 0 ? f->cluster + 4
                                                                             : f->cluster);
    gpuipc_json_int(j, "clique", f->clique);
    gpuipc_json_int(j, "health_mask", f->health_mask);
    gpuipc_json_string(j, "health_summary", f->health_summary >= 0 && f->health_summary <= 3
                                                ? gpuipc_fabric_summary_name(f->health_summary)
                                                : NULL);
    gpuipc_fabric_health_faults(f->health_mask, f->health_summary, faults, sizeof(faults));
    gpuipc_json_string(j, "health_faults", faults);
    gpuipc_json_end(j, '}');
}

/* The facts of /dev/shm, the device files, the platform and the boot. */
static void json_facts_more(gpuipc_json *j, const gpuipc_facts *f)
{
    static const uint8_t zero[GPUIPC_FACTS_BOOT_ID_LEN];
    char boot[2 * GPUIPC_FACTS_BOOT_ID_LEN + 8];
    int n;

    gpuipc_json_object(j, "shm");
    gpuipc_json_bool(j, "present", !(f->flags & GPUIPC_FACT_SHM_ABSENT));
    gpuipc_json_bool(j, "read_only", (f->flags & GPUIPC_FACT_SHM_RO) != 0);
    gpuipc_json_int(j, "dev", (long long)f->shm_dev);
    gpuipc_json_int(j, "size", (long long)f->shm_size);
    gpuipc_json_int(j, "available", (long long)f->shm_avail);
    gpuipc_json_end(j, '}');
    gpuipc_json_object(j, "device_files");
    json_open(j, "nvidiactl", f->ctl_errno);
    json_open(j, "nvidia_uvm", f->uvm_errno);
    gpuipc_json_end(j, '}');
    gpuipc_json_object(j, "imex");
    json_open(j, "directory", f->imex_errno);
    gpuipc_json_array(j, "channels");
    for (n = 0; n < 64; n++)
        if (f->imex_channels & (1ull << n))
            gpuipc_json_int(j, NULL, n);
    gpuipc_json_end(j, ']');
    gpuipc_json_bool(j, "more", (f->flags & GPUIPC_FACT_IMEX_MORE) != 0);
    gpuipc_json_end(j, '}');
    gpuipc_json_bool(j, "wsl", (f->flags & GPUIPC_FACT_WSL) != 0);
    gpuipc_json_bool(j, "selinux_enforcing", (f->flags & GPUIPC_FACT_SELINUX) != 0);
    gpuipc_json_bool(j, "slurm", (f->flags & GPUIPC_FACT_SLURM) != 0);
    gpuipc_json_bool(j, "kubernetes", (f->flags & GPUIPC_FACT_KUBERNETES) != 0);
    gpuipc_json_bool(j, "container", (f->flags & GPUIPC_FACT_CONTAINER) != 0);
    if (memcmp(f->boot_id, zero, sizeof(zero)) == 0) {
        gpuipc_json_string(j, "boot_id", NULL);
        return;
    }
    put_uuid(boot, f->boot_id);
    gpuipc_json_string(j, "boot_id", boot);
}

/* The settings that change what applications on this node do, as found,
 * and what they make NCCL and PyTorch do (effects, gathered before). */
static void json_environment(gpuipc_json *j, const char *effects)
{
    int i;

    gpuipc_json_object(j, "environment");
    gpuipc_json_object(j, "settings");
    for (i = 0; i < GPUIPC_FACTS_ENV_COUNT; i++)
        gpuipc_json_string(j, gpuipc_facts_env_names[i],
                           gpuipc_facts_env_get(gpuipc_facts_env_names[i]));
    gpuipc_json_end(j, '}');
    gpuipc_json_string(j, "effects", effects[0] ? effects : NULL);
    gpuipc_json_end(j, '}');
}

static void json_facts(gpuipc_json *j, const char *key, const gpuipc_facts *f)
{
    char hex[24];
    uint8_t cap[8];
    int i;

    if (f == NULL) {
        gpuipc_json_string(j, key, NULL);
        return;
    }
    gpuipc_json_object(j, key);
    gpuipc_json_object(j, "namespaces");
    for (i = 0; i < GPUIPC_NS_COUNT; i++)
        gpuipc_json_int(j, gpuipc_facts_ns_name(i), (long long)f->ns[i]);
    gpuipc_json_end(j, '}');
    gpuipc_json_int(j, "pid", f->pid);
    gpuipc_json_int(j, "uid", f->uid);
#define FACT(name, v)                                                                     \
    do {                                                                                  \
        if ((v) == GPUIPC_FACTS_UNKNOWN)                                                  \
            gpuipc_json_string(j, name, NULL);                                            \
        else                                                                              \
            gpuipc_json_int(j, name, (long long)(v));                                     \
    } while (0)
    FACT("seccomp", f->seccomp);
    FACT("yama_ptrace_scope", f->yama);
    FACT("dumpable", f->dumpable);
    FACT("nofile_soft", f->nofile_soft);
    FACT("nofile_hard", f->nofile_hard);
#undef FACT
    for (i = 0; i < 8; i++)
        cap[i] = (uint8_t)(f->cap_eff >> (56 - 8 * i));
    hex[0] = '0';
    hex[1] = 'x';
    gpuipc_random_hex(hex + 2, cap, sizeof(cap));
    for (i = 2; hex[i] == '0' && hex[i + 1] != '\0'; i++)
        ; /* as %llx: no leading zeros */
    memmove(hex + 2, hex + i, strlen(hex + i) + 1);
    gpuipc_json_string(j, "cap_eff", hex);
    gpuipc_json_string(j, "kernel", f->kernel);
    json_facts_more(j, f);
    gpuipc_json_end(j, '}');
}

/* The driver and every GPU this process sees, as the program gathered them. */
void gpuipc_doc_imex_daemon(gpuipc_json *j, const char *key, const char *tool,
                            const gpuipc_imex_daemon *d)
{
    int i;

    if (d == NULL) {
        gpuipc_json_string(j, key, NULL);
        return;
    }
    gpuipc_json_object(j, key);
    gpuipc_json_string(j, "tool", tool);
    gpuipc_json_bool(j, "installed", d->tool);
    if (d->ready < 0)
        gpuipc_json_string(j, "ready", NULL);
    else
        gpuipc_json_bool(j, "ready", d->ready);
    gpuipc_json_string(j, "state", d->tool && d->state[0] ? d->state : NULL);
    if (d->nnodes < 0) {
        gpuipc_json_string(j, "nodes", NULL);
    } else {
        gpuipc_json_array(j, "nodes");
        for (i = 0; i < d->nnodes && i < GPUIPC_IMEX_MAX_NODES; i++) {
            gpuipc_json_object(j, NULL);
            gpuipc_json_string(j, "address", d->node[i].addr);
            gpuipc_json_string(j, "host", d->node[i].host[0] ? d->node[i].host : NULL);
            gpuipc_json_string(j, "status", d->node[i].status);
            gpuipc_json_end(j, '}');
        }
        gpuipc_json_end(j, ']');
    }
    gpuipc_json_string(j, "error", d->error[0] ? d->error : NULL);
    gpuipc_json_end(j, '}');
}

static void json_machine(gpuipc_json *j, const gpuipc_doc_machine *m)
{
    struct utsname u;
    char version[64];
    size_t i, len;

    const gpuipc_runinfo *who = gpuipc_runinfo_get();

    gpuipc_json_object(j, "machine");
    gpuipc_json_string(j, "hostname", who->hostname[0] ? who->hostname : NULL);
    gpuipc_json_string(j, "boot_id", who->boot_id[0] ? who->boot_id : NULL);
    gpuipc_json_string(j, "kernel", uname(&u) == 0 ? u.release : NULL);
    gpuipc_doc_imex_daemon(j, "imex_daemon", m != NULL ? m->imex_tool : NULL,
                           m != NULL ? m->imex : NULL);
    if (m == NULL || !m->have_driver) {
        gpuipc_json_string(j, "driver", NULL);
        gpuipc_json_string(j, "cuda_driver_version", NULL);
        gpuipc_json_array(j, "gpus");
        gpuipc_json_end(j, ']');
        gpuipc_json_end(j, '}');
        return;
    }
    /* Cut where the document always cut it (64 bytes). */
    len = strnlen(m->driver, sizeof(version) - 1);
    memcpy(version, m->driver, len);
    version[len] = '\0';
    gpuipc_json_string(j, "driver", version);
    gpuipc_json_int(j, "cuda_driver_version", m->cuda_driver_version);
    gpuipc_json_array(j, "gpus");
    for (i = 0; i < m->ngpus; i++) {
        const gpuipc_doc_gpu *g = &m->gpus[i];

        gpuipc_json_object(j, NULL);
        gpuipc_json_int(j, "ordinal", g->ordinal);
        if (g->have_uuid) {
            gpuipc_json_string(j, "uuid", g->uuid);
            gpuipc_json_string(j, "modes", g->modes);
        } else {
            gpuipc_json_string(j, "uuid", NULL);
            gpuipc_json_string(j, "modes", NULL);
        }
        json_fabric(j, g->have_uuid, &g->fabric);
        gpuipc_json_string(j, "name", g->name);
        gpuipc_json_string(j, "pci_bus_id", g->bus[0] ? g->bus : NULL);
        gpuipc_json_end(j, '}');
    }
    gpuipc_json_end(j, ']');
    gpuipc_json_end(j, '}');
}

/* GB/s of a timed pass over words, or null where none was timed. */
static void json_gbps(gpuipc_json *j, const char *key, uint64_t words, uint64_t size,
                      uint64_t ns)
{
    if (words > 0 && ns > 0)
        gpuipc_json_double(j, key, gpuipc_units_gbps(size, ns));
    else
        gpuipc_json_string(j, key, NULL);
}

/* One direction's check: words, mismatches, the first bad word, GB/s (the
 * link's figure where one was measured, link_gbps > 0, else the check's own
 * pass). */
static void json_check(gpuipc_json *j, const char *key, const gpuipc_check *k, uint64_t size,
                       double link_gbps)
{
    gpuipc_json_object(j, key);
    gpuipc_json_int(j, "words", (long long)k->words);
    gpuipc_json_int(j, "mismatches", (long long)k->mismatches);
    if (k->mismatches > 0)
        gpuipc_json_int(j, "first_bad", (long long)k->first_bad);
    else
        gpuipc_json_string(j, "first_bad", NULL);
    if (link_gbps > 0)
        gpuipc_json_double(j, "read_gbps", link_gbps);
    else
        json_gbps(j, "read_gbps", k->words, size, k->ns);
    gpuipc_json_end(j, '}');
}

static void json_usage(gpuipc_json *j, const char *key, const gpuipc_usage_figures *u)
{
    gpuipc_json_object(j, key);
    if (u->fds == GPUIPC_USAGE_UNKNOWN) /* the FDs could not be listed */
        gpuipc_json_string(j, "fds", NULL);
    else
        gpuipc_json_int(j, "fds", (long long)u->fds);
    gpuipc_json_int(j, "driver_objects", (long long)u->objects);
    if (u->shmem == GPUIPC_USAGE_UNKNOWN)
        gpuipc_json_string(j, "shared_memory_bytes", NULL);
    else
        gpuipc_json_int(j, "shared_memory_bytes", (long long)u->shmem);
    if (u->gpu == GPUIPC_USAGE_UNKNOWN)
        gpuipc_json_string(j, "gpu_memory_bytes", NULL);
    else
        gpuipc_json_int(j, "gpu_memory_bytes", (long long)u->gpu);
    gpuipc_json_end(j, '}');
}

/* A scenario's steps, in ns from both processes' clocks, or null. */
static void json_steps(gpuipc_json *j, const double *st, size_t nstages,
                       const char *const *names)
{
    size_t k;

    if (st == NULL) {
        gpuipc_json_string(j, "steps_ns", NULL);
        return;
    }
    gpuipc_json_object(j, "steps_ns");
    for (k = 0; k < nstages; k++)
        gpuipc_json_int(j, names[k], st[k] > 0 ? (long long)st[k] : 0);
    gpuipc_json_end(j, '}');
}

/* A scenario's reason: none for a pass; for a failure or skip without one,
 * d->under_way where the document says so (it was under way). */
static const char *scenario_reason(const gpuipc_doc *d, const gpuipc_result *r)
{
    if (r->status == GPUIPC_PASS)
        return NULL;
    if (r->reason[0] != '\0')
        return r->reason;
    return r->status == GPUIPC_FAIL || r->status == GPUIPC_SKIP ? d->under_way : NULL;
}

/* Scenario i, its cause and fix apart. */
static void json_scenario(gpuipc_json *j, const gpuipc_doc *d, size_t i, const double *steps)
{
    const gpuipc_result *r = &d->results[i];

    gpuipc_json_object(j, NULL);
    gpuipc_json_string(j, "name", d->labels != NULL ? d->labels[i] : r->mech);
    gpuipc_json_string(j, "verdict", gpuipc_status_name(r->status));
    if (r->gpu >= 0)
        gpuipc_json_int(j, "gpu", r->gpu);
    else
        gpuipc_json_string(j, "gpu", NULL);
    if (r->peer_gpu >= 0)
        gpuipc_json_int(j, "peer_gpu", r->peer_gpu);
    else
        gpuipc_json_string(j, "peer_gpu", NULL);
    gpuipc_json_int(j, "size", (long long)r->size);
    /* --pairs: across the link, its figures (session/link.h), the medians
     * of timed batches, in place of the scenario's one pass each way. */
    json_check(j, "producer_to_consumer", &r->forward, r->size,
               gpuipc_link_gbps(&r->link, GPUIPC_LINK_READ));
    json_check(j, "consumer_to_producer", &r->backward, r->size, 0);
    if (r->link.passes > 0 && r->link.wrote)
        gpuipc_json_double(j, "consumer_write_gbps", gpuipc_link_gbps(&r->link,
                                                                      GPUIPC_LINK_WRITE));
    else if (r->link.passes > 0) /* a read-only mapping: nothing written */
        gpuipc_json_string(j, "consumer_write_gbps", NULL);
    else
        json_gbps(j, "consumer_write_gbps", r->consumer_wrote.words, r->size,
                  r->consumer_wrote.ns);
    gpuipc_json_double(j, "time_ms", (double)r->ns / 1e6);
    json_steps(j, steps, d->nstages, d->stage_names);
    gpuipc_json_string(j, "reason", scenario_reason(d, r));
    gpuipc_json_string(j, "cause", r->cause.what[0] ? r->cause.what : NULL);
    gpuipc_json_string(j, "fix", r->cause.what[0] && r->cause.fix[0] ? r->cause.fix : NULL);
    gpuipc_json_string(j, "detail", r->detail[0] ? r->detail : NULL);
    if (r->ns > 0)
        json_usage(j, "consumer_holds_after", &r->consumer_usage);
    gpuipc_json_end(j, '}');
}

size_t gpuipc_doc_gpus_of(const gpuipc_result *results, size_t n, int *gpus, size_t cap)
{
    size_t i, k = 0, m;
    int side;

    for (i = 0; i < n; i++)
        for (side = 0; side < 2; side++) {
            int g = side ? results[i].peer_gpu : results[i].gpu;

            if (g < 0 || results[i].status < 0)
                continue;
            for (m = 0; m < k && gpus[m] != g; m++)
                ;
            if (m == k && k < cap)
                gpus[k++] = g;
        }
    return k;
}

/* gpus: each GPU the scenarios ran on, with its verdict (run/plan.h's
 * rule) and the counts of the scenarios it took part in. */
static void json_gpus(gpuipc_json *j, const gpuipc_doc *d)
{
    int gpus[GPUIPC_DOC_GPUS_MAX];
    size_t n = gpuipc_doc_gpus_of(d->results, d->n, gpus, GPUIPC_DOC_GPUS_MAX), i;

    gpuipc_json_array(j, "gpus");
    for (i = 0; i < n; i++) {
        gpuipc_plan_tally t;
        int v = gpuipc_plan_gpu_verdict(d->results, d->n, gpus[i], &t);
        const char *uuid = d->machine != NULL && gpus[i] < GPUIPC_DOC_GPUS_MAX &&
                           d->machine->uuids[gpus[i]][0] != '\0' ? d->machine->uuids[gpus[i]]
                                                                 : NULL;

        gpuipc_json_object(j, NULL);
        gpuipc_json_int(j, "ordinal", gpus[i]);
        gpuipc_json_string(j, "uuid", uuid);
        gpuipc_json_string(j, "verdict", gpuipc_status_name(v));
        gpuipc_json_int(j, "passed", t.passed);
        gpuipc_json_int(j, "failed", t.failed);
        gpuipc_json_int(j, "skipped", t.skipped);
        gpuipc_json_int(j, "stopped", t.stopped);
        gpuipc_json_end(j, '}');
    }
    gpuipc_json_end(j, ']');
}

/* The counts' cells: how many the run has and where they ran (run/
 * cellset.h); null on the consumer's side, which holds none of them (its
 * counts are the producer's, from BYE). */
static void json_census(gpuipc_json *j, const gpuipc_doc *d)
{
    static const char *const keys[] = {"cells", "cells_on_one_gpu", "cells_across_gpus",
                                       "cells_in_host_memory"};
    gpuipc_cellset_census c = gpuipc_cellset_census_of(d->results, d->n);
    const unsigned v[] = {c.cells, c.one_gpu, c.across_gpus, c.host_memory};
    size_t k;

    for (k = 0; k < sizeof(keys) / sizeof(keys[0]); k++)
        if (d->role != NULL && strcmp(d->role, "consumer") == 0)
            gpuipc_json_string(j, keys[k], NULL);
        else
            gpuipc_json_int(j, keys[k], v[k]);
}

/* The scenarios and their counts (the consumer's: as the producer counted). */
static void json_scenarios(gpuipc_json *j, const gpuipc_doc *d, gpuipc_counts counts)
{
    size_t i;

    gpuipc_json_array(j, "scenarios");
    for (i = 0; i < d->n; i++) {
        /* The flag is set after the times (a watchdog may render now). */
        int have = d->steps != NULL && __atomic_load_n(&d->have_steps[i], __ATOMIC_ACQUIRE);

        json_scenario(j, d, i, have ? d->steps + i * d->nstages : NULL);
    }
    gpuipc_json_end(j, ']');
    gpuipc_json_object(j, "counts");
    if (d->verdict != NULL) {
        counts.passed = d->verdict->passed;
        counts.failed = d->verdict->failed;
        counts.skipped = d->verdict->skipped;
    }
    gpuipc_json_int(j, "passed", counts.passed);
    gpuipc_json_int(j, "failed", counts.failed);
    gpuipc_json_int(j, "skipped", counts.skipped);
    if (counts.stopped > 0)
        gpuipc_json_int(j, "stopped", counts.stopped);
    json_census(j, d);
    gpuipc_json_end(j, '}');
    json_gpus(j, d);
}

/* The document; a mode's payload where with_payload is set. */
static void json_body(gpuipc_json *j, const gpuipc_doc *d, const char *effects,
                      int with_payload)
{
    const gpuipc_doc_program *o = d->o;
    const char *result;
    char stamp[32], when[40];
    gpuipc_sbuf tb;
    gpuipc_counts counts = gpuipc_report_count(d->results, d->n);
    size_t i;
    int a;

    gpuipc_json_object(j, NULL);
    gpuipc_json_int(j, "schema_version", GPUIPC_RESULT_SCHEMA_VERSION);
    gpuipc_json_object(j, "program");
    gpuipc_json_string(j, "name", "gpuipc_test");
    gpuipc_json_string(j, "version", o->version);
    gpuipc_json_string(j, "commit", o->commit);
    gpuipc_json_int(j, "protocol", GPUIPC_WIRE_VERSION);
    gpuipc_json_end(j, '}');
    gpuipc_sbuf_init(&tb, stamp, sizeof(stamp));
    gpuipc_sbuf_utc(&tb, gpuipc_runinfo_now_ns(), 0);
    gpuipc_sbuf_str(&tb, "Z");
    gpuipc_json_string(j, "time", stamp);
    /* The run's start and end, to the millisecond. */
    gpuipc_sbuf_init(&tb, when, sizeof(when));
    gpuipc_sbuf_utc(&tb, gpuipc_runinfo_get()->start_real_ns, 1);
    gpuipc_json_string(j, "start_time", when);
    gpuipc_sbuf_init(&tb, when, sizeof(when));
    gpuipc_sbuf_utc(&tb, gpuipc_runinfo_now_ns(), 1);
    gpuipc_json_string(j, "end_time", when);
    gpuipc_json_string(j, "mode", o->mode);
    gpuipc_json_string(j, "role", d->role);
    gpuipc_json_array(j, "argv");
    for (a = 1; a < o->argc; a++)
        gpuipc_json_string(j, NULL, o->argv[a]);
    gpuipc_json_end(j, ']');
    gpuipc_json_object(j, "options");
    gpuipc_json_int(j, "size", (long long)o->size);
    gpuipc_json_int(j, "device", o->device);
    gpuipc_json_string(j, "devices", o->devices);
    gpuipc_json_int(j, "chunks", o->chunks);
    gpuipc_json_double(j, "timeout_s", (double)o->timeout_ns / 1e9);
    if (o->deadline_ns > 0)
        gpuipc_json_double(j, "deadline_s", (double)o->deadline_ns / 1e9);
    else
        gpuipc_json_string(j, "deadline_s", NULL);
    gpuipc_json_int(j, "repeat", o->repeat);
    gpuipc_json_string(j, "only", o->only);
    gpuipc_json_string(j, "require", o->require);
    gpuipc_json_string(j, "pairs", o->pairs);
    if (o->min_gbps > 0)
        gpuipc_json_double(j, "min_gbps", o->min_gbps);
    else
        gpuipc_json_string(j, "min_gbps", NULL);
    gpuipc_json_end(j, '}');
    gpuipc_json_object(j, "exit");
    gpuipc_json_int(j, "status", d->exit_code);
    gpuipc_json_string(j, "meaning", gpuipc_exit_meaning(d->exit_code));
    gpuipc_json_end(j, '}');
    result = d->result != NULL ? d->result : gpuipc_log_last_result();
    gpuipc_json_string(j, "result", result[0] ? result : NULL);
    gpuipc_json_double(j, "wall_s", (double)d->wall_ns / 1e9);
    json_machine(j, d->machine);
    gpuipc_json_object(j, "facts");
    json_facts(j, "self", d->own);
    json_facts(j, "peer", d->peer);
    gpuipc_json_end(j, '}');
    json_environment(j, effects);
    gpuipc_json_string(j, "where", d->where);
    gpuipc_json_string(j, "no_session", d->lost);
    json_scenarios(j, d, counts);
    gpuipc_json_int(j, "rounds", d->rounds);
    gpuipc_json_array(j, "round_records");
    for (i = 0; i < d->nround_records; i++) {
        const gpuipc_round_record *r = &d->round_records[i];

        gpuipc_json_object(j, NULL);
        gpuipc_json_int(j, "round", r->round);
        gpuipc_json_int(j, "passed", r->passed);
        gpuipc_json_int(j, "failed", r->failed);
        gpuipc_json_int(j, "skipped", r->skipped);
        gpuipc_json_double(j, "time_ms", (double)r->ns / 1e6);
        json_usage(j, "producer_holds_after", &r->producer);
        if (r->have_consumer)
            json_usage(j, "consumer_holds_after", &r->consumer);
        else
            gpuipc_json_string(j, "consumer_holds_after", NULL);
        gpuipc_json_end(j, '}');
    }
    gpuipc_json_end(j, ']');
    gpuipc_json_int(j, "round_records_left_out", (long long)d->round_records_left_out);
    gpuipc_json_string(j, "consumer", d->consumer);
    if (d->verdict != NULL) {
        gpuipc_json_object(j, "producer_verdict");
        gpuipc_json_int(j, "status", d->verdict->code);
        gpuipc_json_string(j, "meaning", gpuipc_exit_meaning(d->verdict->code));
        gpuipc_json_end(j, '}');
    } else {
        gpuipc_json_string(j, "producer_verdict", NULL);
    }
    if (with_payload && state.payload.fn != NULL)
        state.payload.fn(j, state.payload.key, state.payload.arg);
    gpuipc_json_end(j, '}');
}

/* --json FILE: checked before the run, written through the one writer of
 * output files (core/outfile.h). */
int gpuipc_doc_check_path(const char *path, gpuipc_err *err)
{
    int rc;

    if (strcmp(path, "-") == 0)
        return 0;
    if ((rc = gpuipc_outfile_check(&state.file, path, err)) < 0)
        gpuipc_err_prefix(err, "--json %s", path);
    return rc;
}

void gpuipc_doc_drop_file(void)
{
    gpuipc_outfile_close(&state.file);
}

/* The room the writer's sink buffers text in. */
#define DOC_BUF (32 * 1024)

/* d rendered to fd through a sink in mem. Returns 0, or -1 (errno). */
static int render_to(int fd, const gpuipc_doc *d, const char *effects, int with_payload,
                     char *mem, size_t cap)
{
    gpuipc_sink sink;
    gpuipc_json j;

    gpuipc_sink_init(&sink, fd, mem, cap);
    gpuipc_json_init(&j, &sink);
    json_body(&j, d, effects, with_payload);
    return gpuipc_json_finish(&j);
}

int gpuipc_doc_write(const gpuipc_doc *d, gpuipc_err *why)
{
    const char *path = d->o->json_path;
    char mem[DOC_BUF], effects[GPUIPC_DOC_EFFECTS_LEN];
    int fd, to_stdout = path != NULL && strcmp(path, "-") == 0, rc, e;

    state.written = 1;
    if (path == NULL)
        return 0;
    if (to_stdout)
        fd = fcntl(state.out >= 0 ? state.out : 1, F_DUPFD_CLOEXEC, 3);
    else if (state.file.dirfd < 0)
        return gpuipc_err_set(why, -EINVAL, "--json %s: not checked before the run", path);
    else
        fd = gpuipc_outfile_open(&state.file, why);
    if (fd < 0) {
        if (to_stdout)
            return gpuipc_err_sys(why, "fcntl", errno, "--json -: %s", strerror(errno));
        gpuipc_err_prefix(why, "--json %s", path);
        return -1;
    }
    gpuipc_facts_env_effects(effects, sizeof(effects));
    rc = render_to(fd, d, effects, 1, mem, sizeof(mem));
    e = errno;
    if (close(fd) != 0 && rc == 0) {
        rc = -1;
        e = errno;
    }
    if (rc < 0) {
        if (!to_stdout)
            gpuipc_outfile_abort(&state.file);
        return gpuipc_err_sys(why, "write", e, "--json %s: writing the document: %s", path,
                              strerror(e));
    }
    if (!to_stdout && gpuipc_outfile_commit(&state.file, why) < 0) {
        gpuipc_err_prefix(why, "--json %s", path);
        return -1;
    }
    return 0;
}

int gpuipc_doc_kit_make(gpuipc_doc_kit *k)
{
    gpuipc_facts_env_effects(k->effects, sizeof(k->effects));
    k->cap = 4 * DOC_BUF;
    return (k->mem = malloc(k->cap)) != NULL ? 0 : -1;
}

void gpuipc_doc_kit_free(gpuipc_doc_kit *k)
{
    free(k->mem);
    k->mem = NULL;
}

/* The run's own thread has not begun its document (it writes it only once
 * it has claimed the end: core/watch.h's gpuipc_watch_claim). */
int gpuipc_doc_write_kit(const gpuipc_doc *d, gpuipc_doc_kit *k)
{
    const char *path = d->o->json_path;
    int fd, rc;

    if (path == NULL || k->mem == NULL)
        return path == NULL ? 0 : -1;
    if (strcmp(path, "-") == 0)
        return render_to(state.out >= 0 ? state.out : 1, d, k->effects, 0, k->mem, k->cap);
    if (state.file.dirfd < 0 || (fd = gpuipc_outfile_open(&state.file, NULL)) < 0)
        return -1;
    rc = render_to(fd, d, k->effects, 0, k->mem, k->cap);
    if (close(fd) < 0)
        rc = -1;
    if (rc < 0 || gpuipc_outfile_commit(&state.file, NULL) < 0) {
        gpuipc_outfile_abort(&state.file);
        return -1;
    }
    return 0;
}

/* ---- --ranks: rank 0's gpuipc-ranks/1 document ---------------------------------------- */

/* The document's first members, the same in the verdict's document and in
 * the one of a run under way: the object opened on j, writing through f. */
static void ranks_put_head(gpuipc_json *j, gpuipc_sink *f, const char *version, int code,
                     const char *verdict)
{
    char program[96];

    snprintf(program, sizeof(program), "gpuipc_test %s", version);
    gpuipc_json_init(j, f);
    gpuipc_json_object(j, NULL);
    gpuipc_json_string(j, "schema", "gpuipc-ranks/1");
    gpuipc_json_string(j, "program", program);
    gpuipc_json_int(j, "protocol", GPUIPC_WIRE_VERSION);
    gpuipc_json_string(j, "mode", "ranks");
    gpuipc_json_int(j, "exit_code", code);
    gpuipc_json_string(j, "verdict", verdict);
}

/* Pair p -> c in rank r's entry of "culprits" where the pair's culprits
 * (d->culprits) name r; the entry is opened at its first pair (*open). */
static void ranks_culprit_pair(gpuipc_json *j, const gpuipc_ranks_doc *d, uint32_t r,
                               uint32_t p, uint32_t c, int *open)
{
    const uint32_t *at = d->culprits + ((size_t)p * d->size + c) * 2;
    char text[32];

    if (p == c || (at[0] != r && at[1] != r))
        return;
    if (!*open) {
        const gpuipc_ranks_doc_rank *k = &d->ranks[r];

        gpuipc_json_object(j, NULL);
        gpuipc_json_int(j, "rank", r);
        gpuipc_json_string(j, "node", k->host);
        gpuipc_json_string(j, "gpu_uuid", k->gpu >= 0 ? k->gpu_uuid : NULL);
        gpuipc_json_array(j, "pairs");
        *open = 1;
    }
    snprintf(text, sizeof(text), "%u->%u", p, c);
    gpuipc_json_string(j, NULL, text);
}

/* "culprits": each rank a failed pair implicates (run/rank_results.h),
 * with its node, its GPU and those pairs, for the automation that drains
 * a node or a GPU; empty where no pair failed. */
static void ranks_culprits(gpuipc_json *j, const gpuipc_ranks_doc *d)
{
    uint32_t r, p, c;
    int open;

    gpuipc_json_array(j, "culprits");
    for (r = 0; r < d->size && d->culprits != NULL; r++) {
        open = 0;
        for (p = 0; p < d->size; p++)
            for (c = 0; c < d->size; c++)
                ranks_culprit_pair(j, d, r, p, c, &open);
        if (open) {
            gpuipc_json_end(j, ']');
            gpuipc_json_end(j, '}');
        }
    }
    gpuipc_json_end(j, ']');
}

/* How a pair of these ranks meets: "unix" within a group, "tcp" between
 * nodes, NULL otherwise. */
static const char *transport_of(const gpuipc_ranks_doc_rank *a, const gpuipc_ranks_doc_rank *b)
{
    if (a->group >= 0 && a->group == b->group)
        return "unix";
    if (a->node >= 0 && b->node >= 0 && a->node != b->node)
        return "tcp";
    return NULL;
}

/* The document of the run's verdict, into f. */
static void ranks_write_json(const gpuipc_ranks_doc *d, const char *version, gpuipc_sink *f)
{
    gpuipc_json j;
    uint32_t r, p, c;
    size_t i;

    ranks_put_head(&j, f, version, d->code, gpuipc_exit_word(d->code));
    gpuipc_json_double(&j, "wall_s", (double)d->wall_ns / 1e9);
    gpuipc_json_string(&j, "pmix", d->pmix);
    gpuipc_json_int(&j, "size", d->size);
    gpuipc_json_int(&j, "pairs_proven", d->proven);
    gpuipc_json_int(&j, "pairs_failed", d->failed);
    gpuipc_json_int(&j, "pairs_skipped", d->skipped);
    gpuipc_json_array(&j, "ranks");
    for (r = 0; r < d->size; r++) {
        const gpuipc_ranks_doc_rank *k = &d->ranks[r];

        gpuipc_json_object(&j, NULL);
        gpuipc_json_int(&j, "rank", r);
        gpuipc_json_string(&j, "host", k->host);
        gpuipc_json_int(&j, "pid", k->pid);
        gpuipc_json_int(&j, "gpu", k->gpu);
        gpuipc_json_string(&j, "gpu_uuid", k->gpu >= 0 ? k->gpu_uuid : NULL);
        json_fabric(&j, k->gpu >= 0, &k->fabric);
        gpuipc_json_bool(&j, "on_this_node", k->on_this_node);
        gpuipc_json_string(&j, "where", k->where);
        gpuipc_json_end(&j, '}');
    }
    gpuipc_json_end(&j, ']');
    gpuipc_json_array(&j, "pairs");
    for (p = 0; p < d->size; p++)
        for (c = 0; c < d->size; c++) {
            const gpuipc_cell *cell = &d->cells[(size_t)p * d->size + c];
            char why[GPUIPC_ERR_LEN];
            int v;

            if (p == c)
                continue;
            v = gpuipc_cell_verdict(cell, d->who, d->mechs, d->nmech, why, sizeof(why), NULL,
                                    NULL, NULL);
            gpuipc_json_object(&j, NULL);
            gpuipc_json_int(&j, "producer", p);
            gpuipc_json_int(&j, "consumer", c);
            gpuipc_json_string(&j, "verdict", gpuipc_exit_word(v));
            gpuipc_json_string(&j, "reason", why[0] ? why : NULL);
            gpuipc_json_string(&j, "transport", cell->prod.met || cell->cons.met
                                                    ? transport_of(&d->ranks[p], &d->ranks[c])
                                                    : NULL);
            gpuipc_json_array(&j, "scenarios");
            for (i = 0; cell->prod.have && i < cell->prod.n; i++) {
                const gpuipc_cell_scenario *s = &cell->prod.s[i];
                char line[2 * GPUIPC_CELL_TEXT_LEN + 32];

                gpuipc_json_object(&j, NULL);
                gpuipc_json_string(&j, "mechanism", s->mech);
                gpuipc_json_string(&j, "status", s->status < 0 ? "NOT RUN"
                                   : gpuipc_status_word(s->status));
                gpuipc_json_string(&j, "side", s->side ? gpuipc_role_name(s->side) : NULL);
                gpuipc_json_string(&j, "step", s->step ? gpuipc_step_name(s->step) : NULL);
                gpuipc_json_string(&j, "reason", s->reason[0] ? s->reason : NULL);
                gpuipc_json_string(&j, "cause", s->what[0] ? gpuipc_cause_line_of(s->what, s->fix,
                                                        line, sizeof(line)) : NULL);
                gpuipc_json_end(&j, '}');
            }
            gpuipc_json_end(&j, ']');
            gpuipc_json_end(&j, '}');
        }
    gpuipc_json_end(&j, ']');
    ranks_culprits(&j, d);
    gpuipc_json_end(&j, '}');
    gpuipc_json_finish(&j);
}

int gpuipc_ranks_doc_write(gpuipc_outfile *file, int *checked, const char *path,
                           const char *version, const gpuipc_ranks_doc *d)
{
    char mem[32 * 1024];
    gpuipc_sink f;
    gpuipc_err err;
    int fd, closed;

    gpuipc_err_clear(&err);
    if (!*checked)
        return 0;
    if ((fd = gpuipc_outfile_open(file, &err)) < 0) {
        gpuipc_outfile_abort(file);
        printf("rank 0: --json %s: not written: %s\n", path, err.msg);
        return -1;
    }
    gpuipc_sink_init(&f, fd, mem, sizeof(mem));
    if (d != NULL) {
        ranks_write_json(d, version, &f);
    } else {
        gpuipc_json j;

        ranks_put_head(&j, &f, version, GPUIPC_FAIL, "NOT FINISHED");
        gpuipc_json_string(&j, "reason", "the run is under way, or it ended before rank 0's "
                           "verdict (the deadline, a signal, a crash: each rank's output says "
                           "which)");
        gpuipc_json_end(&j, '}');
        gpuipc_json_finish(&j);
    }
    /* A write that failed leaves the file out (as stdio's fclose did). */
    closed = close(fd);
    if (f.err != 0 || closed != 0 || gpuipc_outfile_commit(file, &err) < 0) {
        gpuipc_outfile_abort(file);
        printf("rank 0: --json %s: not written: %s\n", path,
               err.msg[0] ? err.msg : "a write failed");
        return -1;
    }
    if (d != NULL)
        return 0;
    /* The verdict's writing replaces this file, a regular file of ours. */
    gpuipc_outfile_close(file);
    if (gpuipc_outfile_check(file, path, &err) < 0) {
        *checked = 0;
        printf("rank 0: --json %s: %s\n", path, err.msg);
        return -1;
    }
    return 0;
}
