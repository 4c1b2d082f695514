/* SPDX-License-Identifier: Apache-2.0 */
/* options.c: parsing the command line, with an error that names the option. */
#include "app/options.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/units.h"
#include "run/plan.h"
#include "session/link.h"
#include "wire/tcp.h"

enum {
    OPT_SIZE = 256,
    OPT_DEVICE,
    OPT_ONLY,
    OPT_REQUIRE,
    OPT_TIMEOUT,
    OPT_LIST,
    OPT_CHUNKS,
    OPT_JSON,
    OPT_PAIRS,
    OPT_MIN_GBPS,
    OPT_DESTRUCTIVE,
    OPT_SERVE,
    OPT_CONNECT,
    OPT_ALLOW_UID,
    OPT_REPEAT,
    OPT_FAULT_MATRIX,
    OPT_RANKS,
    OPT_BRIEF,
    OPT_BENCH,
    OPT_ITERS,
    OPT_EXPECT_GPUS,
    OPT_DEADLINE,
    OPT_PROM,
    OPT_JUNIT,
    OPT_RANKS_NET,
};

static const struct option longopts[] = {
    {"size", required_argument, NULL, OPT_SIZE},
    {"device", required_argument, NULL, OPT_DEVICE},
    {"chunks", required_argument, NULL, OPT_CHUNKS},
    {"only", required_argument, NULL, OPT_ONLY},
    {"require", required_argument, NULL, OPT_REQUIRE},
    {"expect-gpus", required_argument, NULL, OPT_EXPECT_GPUS},
    {"deadline", required_argument, NULL, OPT_DEADLINE},
    {"timeout", required_argument, NULL, OPT_TIMEOUT},
    {"list", no_argument, NULL, OPT_LIST},
    {"json", optional_argument, NULL, OPT_JSON},
    {"prom", required_argument, NULL, OPT_PROM},
    {"junit", required_argument, NULL, OPT_JUNIT},
    {"bench", no_argument, NULL, OPT_BENCH},
    {"iters", required_argument, NULL, OPT_ITERS},
    {"pairs", required_argument, NULL, OPT_PAIRS},
    {"min-gbps", required_argument, NULL, OPT_MIN_GBPS},
    {"destructive", no_argument, NULL, OPT_DESTRUCTIVE},
    {"serve", required_argument, NULL, OPT_SERVE},
    {"connect", required_argument, NULL, OPT_CONNECT},
    {"allow-uid", required_argument, NULL, OPT_ALLOW_UID},
    {"repeat", required_argument, NULL, OPT_REPEAT},
    {"fault-matrix", no_argument, NULL, OPT_FAULT_MATRIX},
    {"ranks", no_argument, NULL, OPT_RANKS},
    {"ranks-net", required_argument, NULL, OPT_RANKS_NET},
    {"brief", no_argument, NULL, OPT_BRIEF},
    {"quiet", no_argument, NULL, 'q'},
    {"verbose", no_argument, NULL, 'v'},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, 'V'},
    {NULL, 0, NULL, 0},
};

/* A list option given twice would silently drop the first list: refused.
 * Returns 0, or -EINVAL naming both. */
static int once(const char *name, const char *before, const char *now, gpuipc_err *err)
{
    if (before == NULL)
        return 0;
    return gpuipc_err_set(err, -EINVAL, "%s given twice ('%s', then '%s'): give one "
                          "comma-separated list", name, before, now);
}

/* --device: "all" or ordinals and ranges (run/plan.h), checked for their
 * form here and against the GPUs there are once the driver counts them.
 * The first (0 for "all") is o->device. */
static int parse_device(const char *text, gpuipc_options *o, gpuipc_err *err)
{
    int first[GPUIPC_PLAN_DEVICES_MAX];
    size_t n;
    int rc;

    if ((rc = once("--device", o->devices, text, err)) < 0)
        return rc;
    if ((rc = gpuipc_plan_devices(text, -1, first, GPUIPC_PLAN_DEVICES_MAX, &n, err)) < 0)
        return rc;
    o->devices = text;
    o->device = n > 0 ? first[0] : 0;
    o->device_set = 1;
    return 0;
}

/* Whether --device names more than one GPU ("all" counts as more). */
static int several_devices(const gpuipc_options *o)
{
    int ids[GPUIPC_PLAN_DEVICES_MAX];
    gpuipc_err err;
    size_t n = 0;

    if (o->devices == NULL)
        return 0;
    return strcmp(o->devices, "all") == 0 ||
           gpuipc_plan_devices(o->devices, -1, ids, GPUIPC_PLAN_DEVICES_MAX, &n, &err) < 0 ||
           n > 1;
}

const char *gpuipc_options_devices(const gpuipc_options *o)
{
    if (o->devices != NULL)
        return o->pairs != NULL ? NULL : o->devices;
    if (o->serve != NULL || o->connect != NULL || o->bench || o->fault_matrix || o->list ||
        o->pairs != NULL || o->ranks)
        return NULL;
    return "all";
}

static int parse_chunks(const char *text, unsigned *chunks, gpuipc_err *err)
{
    char *end;
    long v;

    errno = 0;
    v = strtol(text, &end, 10);
    if (text[0] < '0' || text[0] > '9' || *end != '\0' || errno != 0 || v < 1 ||
        v > GPUIPC_CHUNKS_MAX)
        return gpuipc_err_set(err, -EINVAL, "--chunks: '%s' is not a chunk count from 1 to %d",
                              text, GPUIPC_CHUNKS_MAX);
    *chunks = (unsigned)v;
    return 0;
}

/* A decimal number from min to max, for option name. */
static int parse_number(const char *name, const char *what, const char *text, long min,
                        long max, long *v, gpuipc_err *err)
{
    char *end;

    errno = 0;
    *v = strtol(text, &end, 10);
    if (text[0] < '0' || text[0] > '9' || *end != '\0' || errno != 0 || *v < min || *v > max)
        return gpuipc_err_set(err, -EINVAL, "%s: '%s' is not %s from %ld to %ld", name, text,
                              what, min, max);
    return 0;
}

/* --min-gbps: a positive number of GB/s (10^9 bytes a second). */
static int parse_gbps(const char *text, double *out, gpuipc_err *err)
{
    char *end;
    double v;

    errno = 0;
    v = strtod(text, &end);
    if (end == text || *end != '\0' || errno != 0 || !(v > 0) || v > GPUIPC_MIN_GBPS_MAX)
        return gpuipc_err_set(err, -EINVAL, "--min-gbps: '%.40s' is not a speed in GB/s "
                              "(a number above 0 and at most %.0f, such as 100 or 12.5)", text,
                              GPUIPC_MIN_GBPS_MAX);
    *out = v;
    return 0;
}

/* A socket path for --serve or --connect: a file path, or @name for the
 * abstract namespace, short enough for sun_path. */
static int check_socket_path(const char *name, const char *path, gpuipc_err *err)
{
    size_t len = strlen(path);

    if (len == 0 || (path[0] == '@' && len == 1))
        return gpuipc_err_set(err, -EINVAL, "%s: the socket path is empty", name);
    if (len > GPUIPC_SOCKET_PATH_MAX)
        return gpuipc_err_set(err, -EINVAL, "%s: '%.40s...' is %zu bytes; a Unix socket path "
                              "holds at most %d (use a shorter directory)", name, path, len,
                              GPUIPC_SOCKET_PATH_MAX);
    return 0;
}

/* The options that only the producer's side decides, which --connect refuses. */
static int check_connect(const gpuipc_options *o, gpuipc_err *err)
{
    const char *bad = o->size_set ? "--size" : o->chunks_set ? "--chunks"
                    : o->bench ? "--bench" : o->iters_set ? "--iters"
                    : o->only ? "--only" : o->require ? "--require"
                    : o->pairs || o->ring ? "--pairs"
                    : o->expect_gpus ? "--expect-gpus"
                    : o->min_gbps > 0 ? "--min-gbps"
                    : o->destructive ? "--destructive" : o->repeat != 1 ? "--repeat"
                    : o->device_set ? "--device" : NULL;

    if (bad != NULL)
        return gpuipc_err_set(err, -EINVAL, "--connect: %s is the producer's choice; give it "
                              "to gpuipc_test --serve instead", bad);
    return 0;
}

/* --prom and --junit: files of a run's verdict, so only for the modes that
 * end with one (the one-shot run, --repeat, --pairs, --serve, --connect,
 * --ranks);
 * never standard output (the textfile collector reads whole files, put in
 * place by a rename), and never one file for two writers. */
static int check_report_files(const gpuipc_options *o, gpuipc_err *err)
{
    const char *const names[] = {"--json", "--prom", "--junit"};
    const char *paths[] = {o->json_path, o->prom_path, o->junit_path};
    const char *mode = o->list ? "--list" : o->bench ? "--bench"
                     : o->fault_matrix ? "--fault-matrix" : NULL;
    int a, b;

    for (a = 1; a < 3; a++) {
        if (paths[a] == NULL)
            continue;
        if (mode != NULL)
            return gpuipc_err_set(err, -EINVAL, "%s: does not combine with %s, which reports "
                                  "no verdict of GPU scenarios (its results are --json "
                                  "FILE's)", names[a], mode);
        if (strcmp(paths[a], "-") == 0)
            return gpuipc_err_set(err, -EINVAL, "%s: give a FILE, not standard output (%s)",
                                  names[a], a == 1 ? "node-exporter's textfile collector "
                                  "reads whole files, renamed into place"
                                  : "a CI server reads the report as a file");
    }
    for (a = 0; a < 3; a++)
        for (b = a + 1; b < 3; b++)
            if (paths[a] != NULL && paths[b] != NULL && strcmp(paths[a], "-") != 0 &&
                strcmp(paths[a], paths[b]) == 0)
                return gpuipc_err_set(err, -EINVAL, "%s and %s: both name %s; give each "
                                      "its own file", names[a], names[b], paths[a]);
    return 0;
}

/* --ranks: what a rank takes from its command line. Its GPU comes from its
 * place on the node, its peers from the launcher; a mode of its own is
 * none of the others. */
static int check_ranks(const gpuipc_options *o, gpuipc_err *err)
{
    const char *bad = o->serve ? "--serve" : o->connect ? "--connect" : o->list ? "--list"
                    : o->bench ? "--bench" : o->fault_matrix ? "--fault-matrix"
                    : o->pairs || o->ring ? "--pairs (the ranks are the pairs: every ordered "
                                            "pair of them)"
                    : o->device_set ? "--device (each rank takes the GPU of its place on the "
                                      "node; give the launcher's GPU binding instead)"
                    : o->destructive ? "--destructive (vmm-ro-fault needs a consumer forked "
                                       "for it)"
                    : o->repeat != 1 ? "--repeat" : o->expect_gpus ? "--expect-gpus"
                    : o->allow_uid >= 0 ? "--allow-uid (every rank runs as one user)"
                    : o->min_gbps > 0 ? "--min-gbps" : o->iters_set ? "--iters"
                    : NULL;

    if (bad != NULL)
        return gpuipc_err_set(err, -EINVAL, "--ranks: does not combine with %s", bad);
    if (o->ranks_net != NULL && gpuipc_tcp_net_check(o->ranks_net, err) < 0) {
        gpuipc_err_prefix(err, "--ranks-net");
        return -EINVAL;
    }
    if (o->json && (o->json_path == NULL || strcmp(o->json_path, "-") == 0))
        return gpuipc_err_set(err, -EINVAL, "--json: --ranks writes rank 0's document to a "
                              "FILE (every rank shares standard output through the launcher)");
    /* --prom and --junit: rank 0's files, as the forked mode's. */
    return check_report_files(o, err);
}

/* Which options combine with which. */
static int check_modes(const gpuipc_options *o, gpuipc_err *err)
{
    int rc;

    if (o->ranks)
        return check_ranks(o, err);
    if (o->ranks_net != NULL)
        return gpuipc_err_set(err, -EINVAL, "--ranks-net: only with --ranks (it picks the "
                              "network ranks of other nodes meet on)");
    if ((rc = check_report_files(o, err)) < 0)
        return rc;
    if (o->bench && o->json && (o->json_path == NULL || strcmp(o->json_path, "-") == 0))
        return gpuipc_err_set(err, -EINVAL, "--json: --bench writes its JSON to a file: give "
                              "--json FILE (the tables go to stdout)");
    if (o->json && !o->list && o->json_path == NULL)
        return gpuipc_err_set(err, -EINVAL, "--json: give a FILE (or - for standard output); "
                              "only --list writes its report to standard output by default");
    if (o->json && o->brief && o->json_path != NULL && strcmp(o->json_path, "-") == 0)
        return gpuipc_err_set(err, -EINVAL, "--json - and --brief: both want standard output; "
                              "give --json a FILE");
    if (o->brief && (o->list || o->bench))
        return gpuipc_err_set(err, -EINVAL, "--brief: a verdict in one line; %s reports more "
                              "than a verdict", o->list ? "--list" : "--bench");
    if (o->iters_set && !o->bench)
        return gpuipc_err_set(err, -EINVAL, "--iters: only with --bench");
    if (o->bench && (o->list || o->fault_matrix || o->repeat != 1 || o->pairs != NULL ||
                     o->destructive || o->serve != NULL))
        return gpuipc_err_set(err, -EINVAL, "--bench: does not combine with %s",
                              o->list ? "--list" : o->fault_matrix ? "--fault-matrix"
                              : o->repeat != 1 ? "--repeat"
                              : o->pairs ? "--pairs (it measures every device pair itself)"
                              : o->destructive ? "--destructive" : "--serve");
    if (o->serve != NULL && o->connect != NULL)
        return gpuipc_err_set(err, -EINVAL, "--serve and --connect: one process takes one "
                              "role; run the other in a second command");
    if ((o->serve != NULL || o->connect != NULL) && (o->list || o->fault_matrix))
        return gpuipc_err_set(err, -EINVAL, "%s: does not combine with %s",
                              o->serve ? "--serve" : "--connect",
                              o->list ? "--list" : "--fault-matrix");
    if (o->serve != NULL && o->destructive)
        return gpuipc_err_set(err, -EINVAL, "--serve: --destructive needs the forked mode, "
                              "whose sacrificial consumer is forked before CUDA starts");
    if (o->allow_uid >= 0 && o->serve == NULL && o->connect == NULL)
        return gpuipc_err_set(err, -EINVAL, "--allow-uid: only with --serve or --connect");
    if (o->connect != NULL)
        return check_connect(o, err);
    if (o->min_gbps > 0 && o->pairs == NULL)
        return gpuipc_err_set(err, -EINVAL, "--min-gbps: only with --pairs all or a list of "
                              "pairs (it judges the link between two GPUs)");
    if (o->min_gbps > 0 && o->size < GPUIPC_LINK_MIN_SIZE)
        return gpuipc_err_set(err, -EINVAL, "--min-gbps: --size %llu bytes is below the 8M "
                              "that the link's figures take (below it a pass costs what a "
                              "kernel launch does, not what the link does)",
                              (unsigned long long)o->size);
    if (o->fault_matrix && (o->list || o->repeat != 1 || o->destructive || o->pairs))
        return gpuipc_err_set(err, -EINVAL, "--fault-matrix: does not combine with %s",
                              o->list ? "--list" : o->repeat != 1 ? "--repeat"
                              : o->destructive ? "--destructive" : "--pairs");
    if (o->list && o->repeat != 1)
        return gpuipc_err_set(err, -EINVAL, "--repeat: does not combine with --list");
    if (o->list && o->deadline_set)
        return gpuipc_err_set(err, -EINVAL, "--deadline: does not combine with --list");
    if (o->ring && (o->serve != NULL || o->list || o->bench || o->fault_matrix))
        return gpuipc_err_set(err, -EINVAL, "--pairs ring: only for the forked run over "
                              "several GPUs (the one-shot run or --repeat); %s works on one GPU",
                              o->serve ? "--serve" : o->list ? "--list" : o->bench ? "--bench"
                              : "--fault-matrix");
    if (o->device_set && o->pairs != NULL)
        return gpuipc_err_set(err, -EINVAL, "--device: does not combine with --pairs (each "
                              "pair names its two GPUs)");
    if (several_devices(o) && (o->bench || o->fault_matrix || o->list))
        return gpuipc_err_set(err, -EINVAL, "--device %s: %s works on one GPU; give one "
                              "ordinal", o->devices, o->bench ? "--bench"
                              : o->fault_matrix ? "--fault-matrix" : "--list");
    if (o->expect_gpus > 0 && (o->list || o->fault_matrix))
        return gpuipc_err_set(err, -EINVAL, "--expect-gpus: does not combine with %s (it "
                              "fails a run that finds fewer GPUs)",
                              o->list ? "--list" : "--fault-matrix");
    return 0;
}

/* The error for an option getopt_long refused: arg as given. A long
 * option that takes no value, given one (--quiet=3), is named as such:
 * getopt reports it by its short letter, which is not what was typed. */
static int unknown(const char *arg, gpuipc_err *err)
{
    const char *eq = strchr(arg, '=');
    size_t i, n;

    if (strncmp(arg, "--", 2) == 0) {
        n = eq != NULL ? (size_t)(eq - arg) - 2 : strlen(arg) - 2;
        for (i = 0; longopts[i].name != NULL; i++)
            if (eq != NULL && strlen(longopts[i].name) == n &&
                strncmp(longopts[i].name, arg + 2, n) == 0 && longopts[i].has_arg == no_argument)
                return gpuipc_err_set(err, -EINVAL, "--%s takes no value (given '%s')",
                                      longopts[i].name, eq + 1);
        return gpuipc_err_set(err, -EINVAL, "unknown option '%.*s'", (int)(n + 2), arg);
    }
    if (optopt != 0)
        return gpuipc_err_set(err, -EINVAL, "unknown option '-%c'", optopt);
    return gpuipc_err_set(err, -EINVAL, "unknown option '%s'", arg);
}

static void defaults(gpuipc_options *o)
{
    memset(o, 0, sizeof(*o));
    o->size = GPUIPC_DEFAULT_SIZE;
    o->chunks = GPUIPC_DEFAULT_CHUNKS;
    o->timeout_ns = GPUIPC_DEFAULT_TIMEOUT_NS;
    o->level = GPUIPC_LOG_NORMAL;
    o->allow_uid = -1;
    o->repeat = 1;
    o->iters = GPUIPC_DEFAULT_ITERS;
}

/* --json's FILE: its optarg, or the next word where that is no option
 * (--json FILE as well as --json=FILE; a bare --json, for --list, is
 * followed by nothing or by another option). Advances optind past it. */
static char *json_file(int argc, char **argv)
{
    if (optarg == NULL && optind < argc &&
        (argv[optind][0] != '-' || strcmp(argv[optind], "-") == 0))
        return argv[optind++];
    return optarg;
}

void gpuipc_options_outputs(gpuipc_options *o, int argc, char **argv)
{
    const char *path;
    int c;

    defaults(o);
    o->argc = argc;
    o->argv = argv;
    opterr = 0;
    optind = 0;
    while ((c = getopt_long(argc, argv, ":qvhV", longopts, NULL)) != -1) {
        path = c == OPT_JSON ? json_file(argc, argv) : optarg;
        if (c == OPT_BRIEF)
            o->brief = 1;
        if (path == NULL || path[0] == '\0')
            continue;
        if (c == OPT_JSON && o->json_path == NULL)
            o->json = 1, o->json_path = path;
        else if (c == OPT_PROM && o->prom_path == NULL)
            o->prom_path = path;
        else if (c == OPT_JUNIT && o->junit_path == NULL)
            o->junit_path = path;
    }
    if (o->brief && o->json_path != NULL && strcmp(o->json_path, "-") == 0)
        o->json = 0, o->json_path = NULL;
    /* Never standard output for the fleet files, never one file twice. */
    if (o->prom_path != NULL && (strcmp(o->prom_path, "-") == 0 ||
                                 (o->json_path != NULL && strcmp(o->prom_path, o->json_path) == 0)))
        o->prom_path = NULL;
    if (o->junit_path != NULL &&
        (strcmp(o->junit_path, "-") == 0 ||
         (o->json_path != NULL && strcmp(o->junit_path, o->json_path) == 0) ||
         (o->prom_path != NULL && strcmp(o->junit_path, o->prom_path) == 0)))
        o->junit_path = NULL;
    if (o->brief)
        o->level = GPUIPC_LOG_QUIET;
}

const char *gpuipc_options_mode_name(const gpuipc_options *o)
{
    return o->list ? "list" : o->bench ? "bench" : o->fault_matrix ? "fault-matrix"
         : o->connect ? "connect" : o->serve ? "serve" : o->pairs ? "pairs"
         : o->repeat > 1 ? "repeat" : "one-shot";
}

int gpuipc_options_parse(gpuipc_options *o, int argc, char **argv, gpuipc_err *err)
{
    long v;
    int quiet = 0, verbose = 0, c, rc;

    defaults(o);
    o->argc = argc;
    o->argv = argv;
    opterr = 0; /* this function words every error itself */
    optind = 0; /* start afresh, so that tests may parse many times */
    while ((c = getopt_long(argc, argv, ":qvhV", longopts, NULL)) != -1) {
        switch (c) {
        case OPT_SIZE:
            if ((rc = gpuipc_units_parse_size(optarg, &o->size, err)) < 0) {
                gpuipc_err_prefix(err, "--size");
                return -EINVAL;
            }
            o->size_set = 1;
            break;
        case OPT_DEVICE:
            if ((rc = parse_device(optarg, o, err)) < 0)
                return rc;
            break;
        case OPT_CHUNKS:
            if ((rc = parse_chunks(optarg, &o->chunks, err)) < 0)
                return rc;
            o->chunks_set = 1;
            break;
        case OPT_ONLY:
            if ((rc = once("--only", o->only, optarg, err)) < 0)
                return rc;
            o->only = optarg;
            break;
        case OPT_REQUIRE:
            if ((rc = once("--require", o->require, optarg, err)) < 0)
                return rc;
            o->require = optarg;
            break;
        case OPT_DEADLINE:
            o->deadline_set = 1;
            if (strcmp(optarg, "none") == 0) {
                o->deadline_ns = 0;
                break;
            }
            if ((rc = gpuipc_units_parse_duration(optarg, &o->deadline_ns, err)) < 0) {
                gpuipc_err_prefix(err, "--deadline");
                return -EINVAL;
            }
            break;
        case OPT_EXPECT_GPUS:
            if ((rc = parse_number("--expect-gpus", "a GPU count", optarg, 1, 1024, &v,
                                   err)) < 0)
                return rc;
            o->expect_gpus = (int)v;
            break;
        case OPT_TIMEOUT:
            if ((rc = gpuipc_units_parse_duration(optarg, &o->timeout_ns, err)) < 0) {
                gpuipc_err_prefix(err, "--timeout");
                return -EINVAL;
            }
            o->timeout_set = 1;
            break;
        case OPT_LIST:
            o->list = 1;
            break;
        case OPT_JSON:
            o->json = 1;
            optarg = json_file(argc, argv);
            if (optarg != NULL && optarg[0] == '\0')
                return gpuipc_err_set(err, -EINVAL, "--json: the file name is empty");
            o->json_path = optarg;
            break;
        case OPT_PROM:
        case OPT_JUNIT:
            if (optarg[0] == '\0')
                return gpuipc_err_set(err, -EINVAL, "%s: the file name is empty",
                                      c == OPT_PROM ? "--prom" : "--junit");
            if ((c == OPT_PROM ? o->prom_path : o->junit_path) != NULL)
                return gpuipc_err_set(err, -EINVAL, "%s given twice ('%s', then '%s'): one "
                                      "file each", c == OPT_PROM ? "--prom" : "--junit",
                                      c == OPT_PROM ? o->prom_path : o->junit_path, optarg);
            if (c == OPT_PROM)
                o->prom_path = optarg;
            else
                o->junit_path = optarg;
            break;
        case OPT_BENCH:
            o->bench = 1;
            break;
        case OPT_ITERS:
            if ((rc = parse_number("--iters", "an iteration count", optarg, 1, GPUIPC_ITERS_MAX,
                                   &v, err)) < 0)
                return rc;
            o->iters = (unsigned)v;
            o->iters_set = 1;
            break;
        case OPT_PAIRS:
            if ((rc = once("--pairs", o->ring ? "ring" : o->pairs, optarg, err)) < 0)
                return rc;
            if (strcmp(optarg, "ring") == 0) {
                o->ring = 1; /* the one-shot run's shape, with the ring across GPUs */
            } else {
                /* A list's form is checked here (its syntax, a pair of one
                 * GPU, a pair named twice), its ordinals once the GPUs are
                 * counted: a bad form is a usage error on any machine. No
                 * ordinal is held to a count here (INT_MAX), and the list
                 * has room for each of its entries, as at run time. */
                size_t n, entries = 1, i;
                int (*form)[2];

                if (strcmp(optarg, "all") != 0) {
                    for (i = 0; optarg[i] != '\0'; i++)
                        entries += optarg[i] == ',';
                    if ((form = calloc(entries, sizeof(*form))) == NULL)
                        return gpuipc_err_set(err, -ENOMEM, "--pairs: out of memory");
                    rc = gpuipc_options_pairs(optarg, INT_MAX, form, entries, &n, err);
                    free(form);
                    if (rc < 0)
                        return rc;
                }
                o->pairs = optarg;
            }
            break;
        case OPT_MIN_GBPS:
            if ((rc = parse_gbps(optarg, &o->min_gbps, err)) < 0)
                return rc;
            break;
        case OPT_DESTRUCTIVE:
            o->destructive = 1;
            break;
        case OPT_SERVE:
        case OPT_CONNECT:
            if ((rc = check_socket_path(c == OPT_SERVE ? "--serve" : "--connect", optarg,
                                        err)) < 0)
                return rc;
            if (c == OPT_SERVE)
                o->serve = optarg;
            else
                o->connect = optarg;
            break;
        case OPT_ALLOW_UID:
            if ((rc = parse_number("--allow-uid", "a user id", optarg, 0, 4294967294L, &v,
                                   err)) < 0)
                return rc;
            o->allow_uid = v;
            break;
        case OPT_REPEAT:
            if ((rc = parse_number("--repeat", "a round count", optarg, 1, GPUIPC_REPEAT_MAX,
                                   &v, err)) < 0)
                return rc;
            o->repeat = (unsigned)v;
            break;
        case OPT_FAULT_MATRIX:
            o->fault_matrix = 1;
            break;
        case OPT_RANKS:
            o->ranks = 1;
            break;
        case OPT_RANKS_NET:
            o->ranks_net = optarg;
            break;
        case OPT_BRIEF:
            o->brief = 1;
            break;
        case 'q':
            quiet = 1;
            break;
        case 'v':
            verbose = 1;
            break;
        case 'h':
            o->help = 1;
            break;
        case 'V':
            o->version = 1;
            break;
        case ':':
            return gpuipc_err_set(err, -EINVAL, "%s: missing value", argv[optind - 1]);
        default:
            return unknown(argv[optind - 1], err);
        }
    }
    if (optind < argc)
        return gpuipc_err_set(err, -EINVAL, "unexpected argument '%s'", argv[optind]);
    if ((rc = check_modes(o, err)) < 0)
        return rc;
    if (o->json && o->list && o->json_path == NULL)
        o->json_path = "-"; /* --list --json: the report on standard output */
    /* The one-shot run is the health checks' mode: it ends by 50 s unless
     * told otherwise, inside Slurm's 60 s. A soak, a benchmark, the fault
     * matrix and the two-terminal sides run as long as they are given. */
    if (!o->deadline_set && o->repeat == 1 && !o->bench && !o->fault_matrix && !o->list &&
        o->serve == NULL && o->connect == NULL)
        o->deadline_ns = GPUIPC_DEFAULT_DEADLINE_NS;
    if (quiet && verbose)
        return gpuipc_err_set(err, -EINVAL, "--quiet and --verbose contradict each other");
    if (quiet || o->brief)
        o->level = GPUIPC_LOG_QUIET;
    if (verbose)
        o->level = GPUIPC_LOG_VERBOSE;
    return 0;
}

int gpuipc_options_pairs(const char *text, int ngpus, int (*pairs)[2], size_t cap, size_t *n,
                         gpuipc_err *err)
{
    const char *p = text;
    size_t i;
    int a;

    *n = 0;
    if (ngpus < 2)
        return gpuipc_err_set(err, -EINVAL, "--pairs: this machine has %d GPU%s; pairs need "
                              "two or more", ngpus, ngpus == 1 ? "" : "s");
    if (strcmp(text, "all") == 0) {
        /* In the phases of run/plan.h: in each, every GPU exports once. */
        int ids[GPUIPC_PLAN_DEVICES_MAX];
        gpuipc_plan_pair *all;
        unsigned rounds;

        if ((size_t)ngpus * (size_t)(ngpus - 1) > cap || ngpus > GPUIPC_PLAN_DEVICES_MAX)
            return gpuipc_err_set(err, -EINVAL, "--pairs all: %d GPUs make more than %zu "
                                  "pairs; name them", ngpus, cap);
        for (a = 0; a < ngpus; a++)
            ids[a] = a;
        if ((all = gpuipc_plan_phases(ids, (size_t)ngpus, &rounds)) == NULL)
            return gpuipc_err_set(err, -ENOMEM, "--pairs all: out of memory");
        for (i = 0; i < (size_t)ngpus * (size_t)(ngpus - 1); i++) {
            pairs[i][0] = all[i].a;
            pairs[i][1] = all[i].b;
        }
        *n = i;
        free(all);
        return 0;
    }
    while (*p != '\0') {
        char *end;
        long la, lb;

        la = strtol(p, &end, 10);
        if (end == p || *end != ':' || p[0] < '0' || p[0] > '9')
            goto bad;
        p = end + 1;
        lb = strtol(p, &end, 10);
        if (end == p || (*end != ',' && *end != '\0') || p[0] < '0' || p[0] > '9')
            goto bad;
        if (la >= INT_MAX || lb >= INT_MAX) /* no GPU's ordinal (strtol saturates) */
            goto bad;
        if (la >= ngpus || lb >= ngpus)
            return gpuipc_err_set(err, -EINVAL, "--pairs: %ld:%ld names a GPU this machine "
                                  "does not have (ordinals 0 to %d)", la, lb, ngpus - 1);
        if (la == lb)
            return gpuipc_err_set(err, -EINVAL, "--pairs: %ld:%ld is one device, not a pair",
                                  la, lb);
        for (i = 0; i < *n; i++)
            if (pairs[i][0] == la && pairs[i][1] == lb)
                return gpuipc_err_set(err, -EINVAL, "--pairs: %ld:%ld is named twice", la,
                                      lb);
        if (*n == cap)
            return gpuipc_err_set(err, -EINVAL, "--pairs: more than %zu pairs", cap);
        pairs[*n][0] = (int)la;
        pairs[(*n)++][1] = (int)lb;
        p = *end == ',' ? end + 1 : end;
        if (*end == ',' && *p == '\0')
            goto bad;
    }
    if (*n == 0)
        goto bad;
    return 0;
bad:
    return gpuipc_err_set(err, -EINVAL, "--pairs: '%s' is neither 'all', 'ring' nor a list "
                          "of producer:consumer ordinals such as 0:1,1:0", text);
}
