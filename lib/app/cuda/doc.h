/* SPDX-License-Identifier: Apache-2.0 */
/* doc.h: the run's data for its result files (--json, --junit, --prom):
 * what the document writer (result_doc.h) and the fleet files'
 * (report_files.h) both read, and nothing else, so that neither needs the
 * other. */
#ifndef GPUIPC_DOC_H
#define GPUIPC_DOC_H

#include <stddef.h>
#include <stdint.h>

#include "app/options.h"
#include "bench/bench.h"
#include "core/account.h"
#include "core/facts.h"
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

typedef struct gpuipc_doc {
    const gpuipc_options *o;
    const char *role;              /* "producer" or "consumer" */
    int exit_code;
    uint64_t wall_ns;
    const char *where;             /* the summary's first line, or NULL */
    const char *consumer;          /* how the consumer ended (producer side), or NULL */
    const char *lost;              /* why no scenario ran, or NULL */
    const gpuipc_result *results;  /* the producer's scenarios (NULL on the consumer) */
    size_t n;
    const double (*steps)[GPUIPC_STAGE_COUNT]; /* each scenario's steps in ns, or NULL */
    const unsigned char *have_steps;           /* which scenarios have them */
    unsigned rounds;               /* --repeat rounds run */
    const gpuipc_round_record *round_records; /* --repeat: each round's, or NULL */
    size_t nround_records, round_records_left_out;
    const gpuipc_facts *own;
    const gpuipc_facts *peer;      /* NULL if it never said HELLO */
    const gpuipc_msg_bye *verdict; /* consumer side: the producer's BYE, or NULL */
    /* The deadline's template (gpuipc_doc_template): the members only the
     * deadline decides are markers. */
    int deadline_template;
} gpuipc_doc;

#endif
