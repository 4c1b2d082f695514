/* SPDX-License-Identifier: Apache-2.0 */
/* options.h: the command line. */
#ifndef GPUIPC_OPTIONS_H
#define GPUIPC_OPTIONS_H

#include <stdint.h>

#include "core/err.h"
#include "mech/chunks.h"

#define GPUIPC_DEFAULT_SIZE (64ull << 20)              /* larger than any GPU's L2 */
#define GPUIPC_DEFAULT_TIMEOUT_NS (30ull * 1000000000ull)
#define GPUIPC_DEFAULT_DEADLINE_NS (50ull * 1000000000ull) /* the one-shot run's */
#define GPUIPC_REPEAT_MAX 1000000
#define GPUIPC_SOCKET_PATH_MAX 107 /* sun_path less its NUL */
#define GPUIPC_DEFAULT_ITERS 20
#define GPUIPC_ITERS_MAX 1000 /* GPUIPC_BENCH_ITERS_MAX */
#define GPUIPC_MIN_GBPS_MAX 1e6 /* --min-gbps: a petabyte a second is no link's speed */

typedef struct gpuipc_options {
    int argc;            /* the command line, as main got it (the result files print it) */
    char **argv;
    uint64_t size;       /* --size: bytes per scenario */
    int device;          /* --device: the producer's first (or only) CUDA ordinal */
    const char *devices; /* --device as given: "all", or ordinals and ranges (run/plan.h) */
    int device_set;      /* --device was given */
    unsigned chunks;     /* --chunks: allocations of a chunked mechanism */
    const char *only;    /* --only: comma-separated mechanisms, or NULL */
    const char *require; /* --require: mechanisms whose skip is a failure, or NULL */
    int expect_gpus;     /* --expect-gpus: fewer GPUs than this is a failure; 0: none */
    const char *pairs;   /* --pairs: "all" or "a:b,c:d", or NULL (also for "ring") */
    int ring;            /* --pairs ring: the run's cells across GPUs in the quicker
                          * ring (run/plan.h), not every ordered pair */
    double min_gbps;     /* --min-gbps: the slowest read or write a pair may show; 0: none */
    uint64_t timeout_ns; /* --timeout: the deadline of every wait */
    uint64_t deadline_ns; /* --deadline: the whole run's, from its start; 0: none */
    int deadline_set;    /* --deadline was given */
    int level;           /* enum gpuipc_log_level: --quiet, --verbose */
    int list;            /* --list */
    int json;            /* --json: --list as a JSON document, or --bench's samples */
    const char *json_path; /* --json FILE, or NULL: --list's document on stdout */
    const char *prom_path; /* --prom FILE: the run for node-exporter's textfile collector */
    const char *junit_path; /* --junit FILE: the run as JUnit XML */
    int bench;           /* --bench: measure instead of only testing */
    unsigned iters;      /* --iters: timed runs per measurement (default 20) */
    int iters_set;       /* --iters was given */
    int destructive;     /* --destructive: run the destructive mechanisms too */
    const char *serve;   /* --serve: the producer listens here ("@name": abstract) */
    const char *connect; /* --connect: the consumer connects here */
    long allow_uid;      /* --allow-uid: a second uid that may connect; -1: none */
    unsigned repeat;     /* --repeat: rounds of the scenario set (default 1) */
    int fault_matrix;    /* --fault-matrix: drive every fault step x action */
    int ranks;           /* --ranks: one rank of a job a PMIx launcher started */
    const char *ranks_net; /* --ranks-net: the interface or CIDR ranks of other nodes
                            * meet on (wire/tcp.h); NULL: GPUIPC_RANKS_NET, or the host
                            * name's address */
    int brief;           /* --brief: one line on standard output (implies --quiet) */
    int size_set;        /* --size was given */
    int chunks_set;      /* --chunks was given */
    int timeout_set;     /* --timeout was given */
    int help;            /* --help */
    int version;         /* --version */
} gpuipc_options;

/* Fills o with the defaults, then parses argv. Returns 0, or -EINVAL with a
 * reason that names the option ("--size: 'banana' is not a size ..."); the
 * program then exits 2. o->only points into argv. */
int gpuipc_options_parse(gpuipc_options *o, int argc, char **argv, gpuipc_err *err);

/* The mode o asks for, by its name in the result files: "one-shot",
 * "repeat", "pairs", "serve", "connect", "list", "bench" or
 * "fault-matrix". Async-signal-safe. */
const char *gpuipc_options_mode_name(const gpuipc_options *o);

/* After gpuipc_options_parse refused argv: o as the defaults with only the
 * result files argv names (--json, --prom, --junit; the first of each) and
 * --brief, read the way the parser reads them and whatever else argv holds,
 * so that the files say the options were refused ("however the run ends").
 * --json - is dropped under --brief (its line owns standard output). */
void gpuipc_options_outputs(gpuipc_options *o, int argc, char **argv);

/* The GPUs the producer's scenarios run on, as a run/plan.h device list:
 * --device as given; "all" for the forked one-shot run (and --repeat)
 * without it; NULL where the mode takes the one GPU o->device (--serve,
 * --bench, --fault-matrix, --list without --device) or names its own
 * (--pairs), or a rank of --ranks (its GPU comes from its place on the node). */
const char *gpuipc_options_devices(const gpuipc_options *o);

/* The most device pairs --pairs may name as a list. */
#define GPUIPC_PAIRS_MAX 1024

/* Expands --pairs for a machine with ngpus GPUs: "all" is every ordered pair
 * (a, b) with a != b, in the phases of run/plan.h (in phase k each GPU
 * exports to the one k places after it); otherwise a comma-separated list of a:b
 * ordinals. Writes up to cap pairs (producer's device, consumer's) into
 * pairs. Returns 0, or -EINVAL naming the bad entry, a repeated or
 * same-device pair, an ordinal with no GPU, or fewer than 2 GPUs. */
int gpuipc_options_pairs(const char *text, int ngpus, int (*pairs)[2], size_t cap, size_t *n,
                         gpuipc_err *err);

#endif
