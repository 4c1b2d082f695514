/* SPDX-License-Identifier: Apache-2.0 */
/* doc.h: the run's data for its result files (--json, --junit, --prom):
 * what the document writer (result_doc.h) and the fleet files'
 * (report_files.h) both read, and nothing else, so that neither needs the
 * other. All of it is plain data: what only the program knows (its
 * version, its options, the driver and the GPUs) the program gathers into
 * gpuipc_doc_program and gpuipc_doc_machine (app/cuda/doc_data.h), so that
 * the writers need neither the command line's parser nor the driver. */
#ifndef GPUIPC_DOC_H
#define GPUIPC_DOC_H

#include <stddef.h>
#include <stdint.h>

#include "core/imex_facts.h"
#include "core/account.h"
#include "core/facts.h"
#include "run/outcome.h"
#include "run/plan.h"
#include "session/producer.h"
#include "wire/wire.h"

/* One --repeat round, for the document: its counts, its time, and what
 * each side held after it (the figures the soak compares with round 1). */
typedef struct gpuipc_round_record {
    unsigned round, passed, failed, skipped;
    uint64_t ns;
    gpuipc_usage_figures producer, consumer;
    int have_consumer;
} gpuipc_round_record;

/* The most round records one document holds; later rounds are counted as
 * left out (a soak of --repeat 100000 would otherwise write megabytes). */
#define GPUIPC_DOC_ROUNDS_MAX 10000

/* The program and the options of its command line that the files print. */
typedef struct gpuipc_doc_program {
    const char *version, *commit; /* the program's (app/version.h) */
    const char *mode;             /* the mode's name (gpuipc_options_mode_name) */
    int argc;                     /* the command line, as main got it */
    char **argv;
    const char *json_path, *prom_path, *junit_path; /* --json, --prom, --junit, or NULL */
    const char *connect;          /* --connect, or NULL */
    uint64_t size;
    int device;
    const char *devices;
    unsigned chunks;
    uint64_t timeout_ns, deadline_ns; /* deadline_ns 0: none */
    unsigned repeat;
    const char *only, *require, *pairs;
    double min_gbps;              /* 0: none */
} gpuipc_doc_program;

/* The most GPUs a document names by ordinal (gpu/gpu.h's GPUIPC_GPU_OPEN_MAX). */
#define GPUIPC_DOC_GPUS_MAX 1024

/* One GPU of the machine, as the driver and NVML describe it. */
/* NVML's GPU fabric info (gpu/nvml.h, core/fabric.h): state 0 not
 * supported, 1 not started, 2 in progress, 3 completed, -1 not reported
 * (the rest then unset); status an NVML return code (0 success); the
 * cluster's UUID ("GPU-" and 36 characters, as a GPU's is written), the
 * clique, the health mask and summary (-1 not reported). */
typedef struct gpuipc_doc_fabric {
    int state;
    unsigned status, clique, health_mask;
    int health_summary;
    char cluster[48];
} gpuipc_doc_fabric;

typedef struct gpuipc_doc_gpu {
    int ordinal;
    char name[128], bus[32];   /* bus "": unknown */
    int have_uuid;             /* uuid and modes known */
    char uuid[48], modes[384];
    gpuipc_doc_fabric fabric;
} gpuipc_doc_gpu;

/* The driver and the GPUs this process sees, gathered by the program where
 * a document is written (gpuipc_doc_machine_gather). */
typedef struct gpuipc_doc_machine {
    int have_driver;           /* a driver loaded, its GPUs counted */
    char driver[128];          /* its version in words (gpu/cudrv.h) */
    int cuda_driver_version;
    size_t ngpus;              /* gpus[0..ngpus): every GPU the driver lists */
    gpuipc_doc_gpu *gpus;
    /* The UUID of each GPU the results name, by ordinal ("": unknown). */
    char uuids[GPUIPC_DOC_GPUS_MAX][GPUIPC_OUTCOME_UUID_LEN];
    /* This node's IMEX daemon as nvidia-imex-ctl (imex_tool) said it, at
     * the run's end (core/imex_facts.h); NULL: not asked (the deadline's
     * document). */
    const gpuipc_imex_daemon *imex;
    const char *imex_tool;
} gpuipc_doc_machine;

typedef struct gpuipc_doc {
    const gpuipc_doc_program *o;
    const gpuipc_doc_machine *machine; /* NULL: no driver, no GPU known */
    const char *role;              /* "producer" or "consumer" */
    int exit_code;
    uint64_t wall_ns;
    const char *where;             /* the summary's first line, or NULL */
    const char *consumer;          /* how the consumer ended (producer side), or NULL */
    const char *lost;              /* why no scenario ran, or NULL */
    const gpuipc_result *results;  /* the producer's scenarios (NULL on the consumer) */
    size_t n;
    const double *steps;           /* each scenario's nstages steps in ns, or NULL */
    const unsigned char *have_steps; /* which scenarios have them */
    size_t nstages;
    const char *const *stage_names; /* the steps' names (bench/bench.h) */
    unsigned rounds;               /* --repeat rounds run */
    const gpuipc_round_record *round_records; /* --repeat: each round's, or NULL */
    size_t nround_records, round_records_left_out;
    const gpuipc_facts *own;
    const gpuipc_facts *peer;      /* NULL if it never said HELLO */
    const gpuipc_msg_bye *verdict; /* consumer side: the producer's BYE, or NULL */
    /* The result line without "result: ", or NULL: the step log's last
     * (core/log.h). The watchdog's document gives its own. */
    const char *result;
    /* Each scenario's name (labels[i]), or NULL: results[i].mech. */
    const char (*labels)[GPUIPC_OUTCOME_LABEL_LEN];
    /* The UUIDs of the numbers results' gpu and peer_gpu hold, nuuids long,
     * where those are not this machine's GPUs by ordinal (--ranks: ranks,
     * each its GPU's UUID, "" for none); NULL: d->machine's. */
    const char (*uuids)[GPUIPC_OUTCOME_UUID_LEN];
    size_t nuuids;
    /* The reason written for a scenario that failed or was skipped without
     * one: it was under way when the document was written (the watchdog's,
     * at the deadline), or NULL: none is. */
    const char *under_way;
} gpuipc_doc;

#endif
