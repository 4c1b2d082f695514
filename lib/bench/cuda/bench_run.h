/* SPDX-License-Identifier: Apache-2.0 */
/* bench_run.h: --bench, the producer's side: runs the measurement plan with
 * the consumer over one connection and reports it (bench.h). */
#ifndef GPUIPC_BENCH_RUN_H
#define GPUIPC_BENCH_RUN_H

#include <stddef.h>
#include <stdint.h>

#include "bench/bench.h"
#include "session/env.h"
#include "session/mech.h"
#include "wire/wire.h"

typedef struct gpuipc_bench_cfg {
    const gpuipc_mech *const *lat; /* the latency section's mechanisms (both sides can run) */
    size_t nlat;
    const gpuipc_mech *reference;  /* for bandwidth, size scaling, cross-device; or NULL */
    const gpuipc_mech *chunked;    /* a chunked GPU mechanism, for chunk scaling; or NULL */
    unsigned iters;
    uint64_t size;                 /* the latency section's size */
    unsigned latency_chunks;       /* --chunks: the latency row of a chunked mechanism */
    int device;                    /* the producer's GPU */
    const char *json_path;         /* --json FILE, or NULL */
    const char *version;
    int progress;                  /* print progress on stderr */
} gpuipc_bench_cfg;

/* Runs every section (env->gpu open, the consumer connected on w), printing
 * each section's tables on stdout as it completes and, with json_path, the
 * JSON document at the end. b holds the one-shot wall times measured before
 * (or none) and receives the rest; the caller frees it. Returns 0 if every
 * measurement ran, 1 if one failed (its row says why), 2 if the JSON file
 * could not be written. */
int gpuipc_bench_run(gpuipc_env *env, gpuipc_wire *w, const gpuipc_bench_cfg *cfg,
                     gpuipc_bench *b);

#endif
