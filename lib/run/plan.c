/* SPDX-License-Identifier: Apache-2.0 */
/* plan.c: the plan of a run over a node's GPUs, and its verdicts (plan.h). */
#include "run/plan.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"

/* Reads an ordinal at *p (decimal digits, no sign, below
 * GPUIPC_PLAN_DEVICES_MAX). Returns it, or -1. */
static long ordinal_at(const char **p)
{
    long v = 0;
    int digits = 0;

    while (**p >= '0' && **p <= '9') {
        v = v * 10 + (**p - '0');
        if (v >= GPUIPC_PLAN_DEVICES_MAX)
            return -1;
        (*p)++;
        digits++;
    }
    return digits > 0 ? v : -1;
}

int gpuipc_plan_devices(const char *spec, int count, int *out, size_t cap, size_t *n,
                        gpuipc_err *why)
{
    const char *p = spec;
    size_t k = 0, i;

    *n = 0;
    if (spec == NULL || spec[0] == '\0')
        return gpuipc_err_set(why, -EINVAL, "--device: empty; give 'all' or ordinals such as "
                              "0 or 0,2 or 4-7");
    if (strcmp(spec, "all") == 0) {
        if (count < 0)
            return 0;
        if (count == 0)
            return gpuipc_err_set(why, -EINVAL, "--device all: this process sees no GPU");
        for (i = 0; i < (size_t)count; i++) {
            if (k == cap)
                return gpuipc_err_set(why, -EINVAL, "--device all: more than %zu GPUs", cap);
            out[k++] = (int)i;
        }
        *n = k;
        return 0;
    }
    while (*p != '\0') {
        const char *start = p;
        long lo = ordinal_at(&p), hi = lo, v;
        size_t len;

        if (lo >= 0 && *p == '-') {
            p++;
            hi = ordinal_at(&p);
        }
        len = strcspn(start, ",");
        if (lo < 0 || hi < 0 || (*p != ',' && *p != '\0') || hi < lo)
            return gpuipc_err_set(why, -EINVAL, "--device: '%.*s' is not an ordinal or a range "
                                  "a-b (give 'all', or ordinals such as 0 or 0,2 or 4-7)",
                                  (int)len, start);
        if (count >= 0 && hi >= count)
            return gpuipc_err_set(why, -EINVAL, "--device: '%.*s': no GPU %ld here (%d visible%s; "
                                  "see --list)", (int)len, start, hi, count,
                                  count > 0 ? ", ordinals from 0" : "");
        for (v = lo; v <= hi; v++) {
            for (i = 0; i < k; i++)
                if (out[i] == (int)v)
                    return gpuipc_err_set(why, -EINVAL, "--device: GPU %ld is named twice", v);
            if (k == cap)
                return gpuipc_err_set(why, -EINVAL, "--device: more than %zu GPUs", cap);
            out[k++] = (int)v;
        }
        if (*p == ',') {
            p++;
            if (*p == '\0')
                return gpuipc_err_set(why, -EINVAL, "--device: '%s' ends with a comma", spec);
        }
    }
    *n = k;
    return 0;
}

size_t gpuipc_plan_ring(const int *gpus, size_t n, gpuipc_plan_pair *out)
{
    size_t i;

    if (n < 2)
        return 0;
    for (i = 0; i < n; i++) {
        out[i].a = gpus[i];
        out[i].b = gpus[(i + 1) % n];
        /* Pair i shares a GPU with pairs i - 1 and i + 1 only: even and odd
         * pairs alternate, and the last of an odd ring takes a third round. */
        out[i].round = (n % 2 == 1 && i == n - 1) ? 2 : (unsigned)(i % 2);
    }
    if (n == 2)
        out[1].round = 1; /* 0->1 and 1->0 share both GPUs */
    return n;
}

gpuipc_plan_pair *gpuipc_plan_phases(const int *gpus, size_t n, unsigned *nphases)
{
    gpuipc_plan_pair *out;
    size_t k, i, j = 0;

    *nphases = 0;
    if (n < 2 || n > SIZE_MAX / sizeof(*out) / n)
        return NULL;
    if ((out = malloc(n * (n - 1) * sizeof(*out))) == NULL)
        return NULL;
    for (k = 1; k < n; k++)
        for (i = 0; i < n; i++) {
            out[j].a = gpus[i];
            out[j].b = gpus[(i + k) % n];
            out[j].round = (unsigned)k;
            j++;
        }
    *nphases = (unsigned)(n - 1);
    return out;
}

int gpuipc_plan_phase_peers(const gpuipc_plan_pair *plan, const int *gpus, size_t n,
                            unsigned k, size_t i, int *to, int *from)
{
    size_t j;
    int t = 0, f = 0, found = 0;

    if (plan == NULL || n < 2 || k < 1 || k >= n || i >= n)
        return -1;
    /* Phase k's n pairs, as gpuipc_plan_phases lays them out. */
    for (j = (size_t)(k - 1) * n; j < (size_t)k * n; j++) {
        if (plan[j].round != k)
            return -1;
        if (plan[j].a == gpus[i]) {
            t = plan[j].b;
            found |= 1;
        }
        if (plan[j].b == gpus[i]) {
            f = plan[j].a;
            found |= 2;
        }
    }
    if (found != 3)
        return -1;
    *to = t;
    *from = f;
    return 0;
}

gpuipc_plan_pair *gpuipc_plan_all_pairs(const int *gpus, size_t n, unsigned *nrounds)
{
    /* The circle method: seat m (n rounded up to even) players, one of them
     * a rest where n is odd; keep seat 0 and turn the others by one each
     * round; seat s meets seat m - 1 - s. */
    size_t m = n + (n % 2), r, s, k = 0;
    gpuipc_plan_pair *out;
    size_t *seat;

    *nrounds = 0;
    if (n < 2)
        return NULL;
    out = malloc(n * (n - 1) * sizeof(*out));
    seat = malloc(m * sizeof(*seat));
    if (out == NULL || seat == NULL) {
        free(out);
        free(seat);
        return NULL;
    }
    for (s = 0; s < m; s++)
        seat[s] = s;
    for (r = 0; r < m - 1; r++) {
        int way;

        for (way = 0; way < 2; way++)
            for (s = 0; s < m / 2; s++) {
                size_t x = seat[s], y = seat[m - 1 - s];

                if (x >= n || y >= n) /* the rest */
                    continue;
                out[k].a = gpus[way ? y : x];
                out[k].b = gpus[way ? x : y];
                out[k].round = (unsigned)(2 * r + (size_t)way);
                k++;
            }
        /* Turn: the last seat moves to seat 1, the others one on. */
        {
            size_t last = seat[m - 1];

            for (s = m - 1; s > 1; s--)
                seat[s] = seat[s - 1];
            seat[1] = last;
        }
    }
    free(seat);
    *nrounds = (unsigned)(2 * (m - 1));
    return out;
}

int gpuipc_plan_verdicts_init(gpuipc_plan_verdicts *v, const int *gpus, size_t n)
{
    memset(v, 0, sizeof(*v));
    v->gpus = malloc((n ? n : 1) * sizeof(*v->gpus));
    v->per_gpu = calloc(n ? n : 1, sizeof(*v->per_gpu));
    v->matrix = calloc(n ? n * n : 1, sizeof(*v->matrix));
    if (v->gpus == NULL || v->per_gpu == NULL || v->matrix == NULL) {
        gpuipc_plan_verdicts_free(v);
        return -ENOMEM;
    }
    memcpy(v->gpus, gpus, n * sizeof(*gpus));
    v->n = n;
    return 0;
}

int gpuipc_plan_verdicts_index(const gpuipc_plan_verdicts *v, int ordinal)
{
    size_t i;

    for (i = 0; i < v->n; i++)
        if (v->gpus[i] == ordinal)
            return (int)i;
    return -1;
}

static void count(gpuipc_plan_tally *t, int status)
{
    t->passed += status == GPUIPC_PASS;
    t->failed += status == GPUIPC_FAIL;
    t->skipped += status == GPUIPC_SKIP;
    t->stopped += status == GPUIPC_STOPPED;
}

void gpuipc_plan_verdicts_add(gpuipc_plan_verdicts *v, int a, int b, int status)
{
    int i = gpuipc_plan_verdicts_index(v, a), j = gpuipc_plan_verdicts_index(v, b);

    if (i < 0 || j < 0 || (status != GPUIPC_PASS && status != GPUIPC_FAIL &&
                           status != GPUIPC_SKIP && status != GPUIPC_STOPPED))
        return;
    count(&v->matrix[(size_t)i * v->n + (size_t)j], status);
    count(&v->per_gpu[i], status);
    if (j != i)
        count(&v->per_gpu[j], status);
}

int gpuipc_plan_tally_verdict(const gpuipc_plan_tally *t)
{
    return gpuipc_status_verdict(t->passed, t->failed, t->stopped);
}

/* The GPUs that failed on their own (one of their scenarios within them
 * failed), gathered in one pass over the results: a bit for each ordinal
 * below GPUIPC_PLAN_DEVICES_MAX, and whether any other number failed on
 * its own (then that one is looked for in the results). On the stack, no
 * memory of its own, for the watchdog. Looking each GPU up in every row
 * instead made a verdict read the rows once per failure across GPUs: with
 * every pair of 72 GPUs failed (12 mechanisms, 61,344 failures), the 72
 * verdicts took about a minute. */
typedef struct own_failures {
    unsigned char bits[GPUIPC_PLAN_DEVICES_MAX / 8];
    int others;
} own_failures;

static int own_row_failed(const gpuipc_result *r)
{
    return r->peer_gpu < 0 && r->status == GPUIPC_FAIL;
}

static void own_failures_gather(own_failures *o, const gpuipc_result *results, size_t n)
{
    size_t k;

    memset(o, 0, sizeof(*o));
    for (k = 0; k < n; k++) {
        int g = results[k].gpu;

        if (!own_row_failed(&results[k]))
            continue;
        if (g >= 0 && g < GPUIPC_PLAN_DEVICES_MAX)
            o->bits[g / 8] |= (unsigned char)(1u << (g % 8));
        else
            o->others = 1;
    }
}

/* Whether one of GPU g's own scenarios (within it) failed. */
static int own_failed(const own_failures *o, const gpuipc_result *results, size_t n, int g)
{
    size_t k;

    if (g >= 0 && g < GPUIPC_PLAN_DEVICES_MAX)
        return (o->bits[g / 8] >> (g % 8)) & 1;
    for (k = 0; k < n && o->others; k++)
        if (results[k].gpu == g && own_row_failed(&results[k]))
            return 1;
    return 0;
}

int gpuipc_plan_gpu_verdict(const gpuipc_result *results, size_t n, int g,
                            gpuipc_plan_tally *t)
{
    gpuipc_plan_tally rest;
    own_failures own;
    int fails = 0;
    size_t k;

    own_failures_gather(&own, results, n);
    t->passed = t->failed = t->skipped = t->stopped = 0;
    for (k = 0; k < n; k++) {
        const gpuipc_result *r = &results[k];

        if (r->gpu != g && r->peer_gpu != g)
            continue;
        count(t, r->status);
        if (r->status != GPUIPC_FAIL)
            continue;
        /* Across GPUs, the failure is the other GPU's where that one
         * failed on its own. */
        if (r->peer_gpu < 0 || !own_failed(&own, results, n, r->gpu == g ? r->peer_gpu : r->gpu))
            fails++;
    }
    if (fails > 0)
        return GPUIPC_FAIL;
    rest = *t;
    rest.failed = 0;
    return gpuipc_plan_tally_verdict(&rest);
}

void gpuipc_plan_verdicts_free(gpuipc_plan_verdicts *v)
{
    free(v->gpus);
    free(v->per_gpu);
    free(v->matrix);
    memset(v, 0, sizeof(*v));
}

int gpuipc_plan_no_peer_path(int a, int b, const gpuipc_plan_peer *f, gpuipc_cause *why)
{
    if (f->can_access != 0 || f->nvlink == 1)
        return 0;
    gpuipc_cause_what(why,
                      "no peer path from GPU %d to GPU %d's memory: the driver says GPU %d "
                      "cannot access GPU %d (cuDeviceCanAccessPeer 0) and NVML %s; one GPU's "
                      "memory cannot be mapped for the other here (a topology without "
                      "peer-to-peer: PCIe root ports apart, a virtual machine, or a platform "
                      "that disables it)",
                      b, a, b, a, f->nvlink == 0 ? "shows no NVLink between them"
                                                 : "cannot say whether an NVLink joins them");
    gpuipc_cause_fix(why,
                     "none needed if the topology is meant so: share host memory between these "
                     "GPUs (vmm-host-numa, memfd); for peer-to-peer, put both GPUs under one "
                     "PCIe switch with ACS redirection off for peer traffic and the IOMMU in "
                     "passthrough (or join them by NVLink)");
    return 1;
}

int gpuipc_plan_mode_blocks(int ordinal, int mode, int mps, const char *mps_dir,
                            gpuipc_cause *why)
{
    if (mode == GPUIPC_PLAN_MODE_PROHIBITED) {
        gpuipc_cause_what(
            why,
            "GPU %d is in compute mode PROHIBITED: no process may hold a context on it, so "
            "nothing can be shared there (the site's choice, nvidia-smi -q -d COMPUTE shows "
            "it)",
            ordinal);
        gpuipc_cause_fix(
            why,
            "none needed for this check; to use the GPU, an administrator sets DEFAULT "
            "(nvidia-smi -i %d -c DEFAULT)",
            ordinal);
        return 1;
    }
    if (mode == GPUIPC_PLAN_MODE_EXCLUSIVE_PROCESS && !mps) {
        gpuipc_cause_what(
            why,
            "GPU %d is in compute mode EXCLUSIVE_PROCESS: one process at a time may hold a "
            "context on it, so a second process cannot map what the first exports (the site's "
            "choice, often for MPS or a scheduler; nvidia-smi -q -d COMPUTE shows it)",
            ordinal);
        gpuipc_cause_fix(why,
                         "none needed for this check; to share its memory between processes, an "
                         "administrator sets DEFAULT (nvidia-smi -i %d -c DEFAULT)",
                         ordinal);
        return 1;
    }
    if (mps) {
        gpuipc_cause_what(
            why,
            "an MPS control daemon serves the GPUs (its pipe directory %s): the two processes "
            "would be clients of one MPS server rather than processes with contexts of their "
            "own, which this check does not test",
            mps_dir != NULL ? mps_dir : "/tmp/nvidia-mps");
        gpuipc_cause_fix(
            why, "run it where no MPS daemon runs (echo quit | nvidia-cuda-mps-control), or set "
                 "CUDA_MPS_PIPE_DIRECTORY to a directory without one");
        return 1;
    }
    return 0;
}
