/* SPDX-License-Identifier: Apache-2.0 */
/* bench.h: --bench's results, what is derived from the raw figures, and
 * how they are printed (Markdown tables) and saved (JSON). None of it is
 * GPU code: bench_run.c measures, this file reports, and the tests feed it
 * known samples. */
#ifndef GPUIPC_BENCH_H
#define GPUIPC_BENCH_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/err.h"
#include "core/json.h"
#include "run/cellset.h"
#include "run/doc_scan.h"
#include "session/laps.h"

/* A growing list of samples. */
typedef struct gpuipc_samples {
    double *v;
    size_t n, cap;
} gpuipc_samples;

/* Appends x. Returns 0 or -ENOMEM. */
int gpuipc_samples_add(gpuipc_samples *s, double x);
void gpuipc_samples_free(gpuipc_samples *s);

/* The stages of one shared allocation, as the latency tables show them. */
enum gpuipc_stage {
    GPUIPC_STAGE_ALLOC,     /* producer: allocate and map */
    GPUIPC_STAGE_EXPORT,    /* producer: every export call */
    GPUIPC_STAGE_TRANSFER,  /* OFFER (and FDS) one way: sendmsg began to recvmsg returned,
                             * plus pidfd_getfd */
    GPUIPC_STAGE_IMPORT,    /* consumer: the import calls less reserve, map, access, fetch */
    GPUIPC_STAGE_RESERVE,
    GPUIPC_STAGE_MAP,
    GPUIPC_STAGE_ACCESS,
    GPUIPC_STAGE_TOUCH,     /* consumer: the first kernel over the memory, host-timed */
    GPUIPC_STAGE_RELEASE_C, /* consumer's teardown */
    GPUIPC_STAGE_RELEASE_P, /* producer's teardown */
    GPUIPC_STAGE_E2E,       /* export began (producer) to import returned (consumer) */
    GPUIPC_STAGE_COUNT
};

/* Short names for headers and JSON keys: "alloc", "export", ... */
extern const char *const gpuipc_stage_names[GPUIPC_STAGE_COUNT];

/* Derives each stage's duration in ns from one scenario's raw figures. */
void gpuipc_bench_derive(const gpuipc_timing *t, double st[GPUIPC_STAGE_COUNT]);

/* One latency row: a mechanism at one size and chunk count. */
typedef struct gpuipc_bench_lat {
    char name[32];
    uint64_t size;   /* bytes shared */
    unsigned chunks; /* allocations (1 unless chunked) */
    gpuipc_samples st[GPUIPC_STAGE_COUNT];
    uint64_t hwm_producer, hwm_consumer; /* peak RSS seen in the row's scenarios */
    char note[GPUIPC_ERR_LEN]; /* why the row has no samples, or "" */
} gpuipc_bench_lat;

/* One bandwidth row: consumer on GPU b over memory of the producer's GPU a. */
typedef struct gpuipc_bench_bw {
    int a, b;
    uint64_t size;
    gpuipc_samples ns[GPUIPC_BW_COUNT];
    uint64_t hwm_consumer;
    char note[GPUIPC_ERR_LEN];
} gpuipc_bench_bw;

#define GPUIPC_BENCH_ROWS 24
#define GPUIPC_BENCH_CROSS 64

/* The most GPUs the floor lists one by one (app/cuda's copy of gpu/gpu.h's
 * GPUIPC_GPU_FLOOR_GPUS; the bench may not include gpu/); beyond them,
 * each GPU's context counts in the sum only. */
#define GPUIPC_BENCH_FLOOR_GPUS 64

/* The floor of a default run: what a process of its own pays before it can
 * run a cell on every GPU, measured before this process touches CUDA:
 * cuInit with every GPU visible, then each GPU's primary context retained
 * and made current, one after the other, each timed on CLOCK_MONOTONIC. */
typedef struct gpuipc_bench_floor {
    int measured;              /* the figures below are whole */
    uint64_t init_ns;          /* cuInit */
    int ngpus;                 /* the GPUs whose contexts were timed */
    uint64_t ctx_ns[GPUIPC_BENCH_FLOOR_GPUS]; /* each GPU's context, by ordinal */
    uint64_t ctx_sum_ns;       /* every GPU's context together */
    char note[GPUIPC_ERR_LEN]; /* why it was not measured, or "" */
} gpuipc_bench_floor;

/* The cells of one more default run (untimed for the median), read back
 * from its --json document. */
typedef struct gpuipc_bench_cells {
    int measured;        /* its document was read, and the run exited 0 */
    int read;            /* its document was read (the figures below are its) */
    gpuipc_cellset_census census; /* its cells, where they ran, their times added */
    unsigned ngpus;      /* the GPUs they ran on, as exporter or importer */
    double wall_ns;      /* the run's own wall time, as its document says */
    char note[GPUIPC_ERR_LEN]; /* why it was not measured, or "" */
} gpuipc_bench_cells;

/* The default run's target (issue 38): its whole-process median at most
 * the floor + this factor x (the cells' times added / the GPUs). */
#define GPUIPC_BENCH_CELLS_FACTOR 1.25

/* Fills *c (zeroed first) from the document s of a default run that ended
 * with wait status status: every cell counted where it ran, their times
 * added, the GPUs they ran on (not-run cells left out, as the document's
 * gpus); measured only where the run exited 0, else a note says how it
 * ended. */
void gpuipc_bench_cells_of(gpuipc_bench_cells *c, const gpuipc_doc_scan *s, int status);

typedef struct gpuipc_bench {
    char device[128];   /* the producer's GPU */
    char uuid[48];
    char driver[96];    /* "580.159.04 (CUDA 13.0)" */
    char timestamp[32]; /* UTC, ISO 8601 */
    char version[32];   /* this program's */
    char reference[32]; /* the reference mechanism: the targets' one allocation */
    int ordinal, ngpus;
    unsigned iters;
    uint64_t size;      /* --size: the latency rows' */
    uint64_t l2_bytes;  /* the device's L2 cache */
    uint64_t timeout_ns;
    gpuipc_samples oneshot_ns;  /* wall time of whole default runs */
    int oneshot_failed;         /* one of them did not exit 0 */
    gpuipc_bench_lat lat[GPUIPC_BENCH_ROWS];
    size_t nlat;
    gpuipc_bench_bw bw[GPUIPC_BENCH_ROWS];
    size_t nbw;
    gpuipc_bench_lat sizes[GPUIPC_BENCH_ROWS];
    size_t nsizes;
    gpuipc_bench_lat chunks[GPUIPC_BENCH_ROWS];
    size_t nchunks;
    gpuipc_bench_bw cross[GPUIPC_BENCH_CROSS];
    size_t ncross;
    uint64_t hwm_producer; /* peak RSS of the producer over the GPU sections */
    uint64_t bare_hwm;     /* peak RSS of a bare CUDA context (cuInit, primary context),
                            * the driver's share of every process; 0 if not measured */
    gpuipc_bench_floor floor; /* the default run's floor */
    gpuipc_bench_cells cells; /* the default run's cells */
    unsigned passed, failed; /* the scenarios the measurements ran, by their verdicts */
} gpuipc_bench;

/* Frees every sample list in b (b itself is the caller's). */
void gpuipc_bench_free(gpuipc_bench *b);

/* The targets of the H100 as a verdict each: name, target, achieved. */
typedef struct gpuipc_bench_target {
    char name[96];
    char target[48];
    char achieved[96];
    int met;      /* 1 met, 0 missed, -1 not measured */
} gpuipc_bench_target;

#define GPUIPC_BENCH_TARGETS 8

/* The default run against its floor and cells, each term in ns (NaN where
 * not measured): met 1 or 0, or -1 with why (what was not measured). */
typedef struct gpuipc_bench_floor_target {
    double oneshot_ns, floor_ns, per_gpu_ns, limit_ns;
    int met;
    char why[GPUIPC_ERR_LEN + 64];
} gpuipc_bench_floor_target;

/* Evaluates the default run's target on b. */
void gpuipc_bench_floor_target_of(const gpuipc_bench *b, gpuipc_bench_floor_target *t);

/* Evaluates the targets on b's medians. Returns how many it wrote into t. */
size_t gpuipc_bench_targets(const gpuipc_bench *b, gpuipc_bench_target *t, size_t cap);

/* Prints the tables of the sections that have rows, as Markdown. */
void gpuipc_bench_print_latency(FILE *out, const gpuipc_bench *b);
void gpuipc_bench_print_bandwidth(FILE *out, const gpuipc_bench *b);
void gpuipc_bench_print_scaling(FILE *out, const gpuipc_bench *b);
void gpuipc_bench_print_cross(FILE *out, const gpuipc_bench *b);
void gpuipc_bench_print_targets(FILE *out, const gpuipc_bench *b);
/* The default run against its floor: the one-shot median, the floor's
 * terms, the cells' and the target, each measured figure or why not. */
void gpuipc_bench_print_floor(FILE *out, const gpuipc_bench *b);

/* Writes b, every sample included, as the object key (NULL: a value) into
 * j: --json's document holds it as its "bench" member. */
void gpuipc_bench_json(gpuipc_json *j, const char *key, const gpuipc_bench *b);

#endif
