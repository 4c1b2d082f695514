/* SPDX-License-Identifier: Apache-2.0 */
/* outcome.h: how a run ended, as the files that fleet tools read are made
 * from it (--prom: run/prom.h, --junit: run/junit.h): who and where, the
 * verdict and exit status, and each scenario's result by GPU. The program's
 * glue (app/cuda/report_files.c) fills it from the run's data at its end,
 * from the watchdog's at the deadline, and with running set at its start.
 * The renderers use no stdio and no malloc: the watchdog calls them. */
#ifndef GPUIPC_RUN_OUTCOME_H
#define GPUIPC_RUN_OUTCOME_H

#include <stddef.h>
#include <stdint.h>

#include "core/runinfo.h"
#include "core/sink.h"
#include "session/producer.h"

/* The room for one GPU UUID's text ("GPU-" and 36 characters). */
#define GPUIPC_OUTCOME_UUID_LEN 48
/* The room for a scenario's name ("vmm-compressible 12->13"). */
#define GPUIPC_OUTCOME_LABEL_LEN 48

typedef struct gpuipc_outcome {
    const char *version, *commit; /* the program's */
    int protocol;
    const char *mode, *role;      /* as the result document names them */
    const gpuipc_runinfo *who;    /* host name, boot id, kernel, the start */
    const char *driver;           /* "580.159.04 (CUDA 13.0)", or NULL: none loaded */
    int running;                  /* the run is under way: no verdict, no end yet */
    int exit_code;                /* the process's exit status */
    const char *result;           /* the result line without "result: ", or "" */
    uint64_t end_ns;              /* the end, in ns since the Unix epoch */
    uint64_t wall_ns;             /* the run's wall time */
    unsigned passed, failed, skipped, stopped; /* the run's counts */
    const gpuipc_result *results; /* the scenarios (NULL, n 0: none in this process) */
    size_t n;
    /* Each scenario's name (the watchdog's copy), or NULL: results[i].mech. */
    const char (*labels)[GPUIPC_OUTCOME_LABEL_LEN];
    /* Each GPU's UUID by ordinal (uuids[g], "" where unknown), nuuids long. */
    const char (*uuids)[GPUIPC_OUTCOME_UUID_LEN];
    size_t nuuids;
} gpuipc_outcome;

/* A scenario's verdict as the files name it: "pass", "fail", "skip",
 * "stopped", "not run". */
const char *gpuipc_outcome_verdict(int status);

/* GPU g's UUID text, or NULL where it is not known. */
const char *gpuipc_outcome_uuid(const gpuipc_outcome *oc, int g);

#endif
