/* SPDX-License-Identifier: Apache-2.0 */
/* usage.c: the --help text. Every line fits in 80 columns; the mechanisms
 * come from the registry the caller passes, with their table's summary. */
#include "app/usage.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Where make install puts README.md and docs/: $(PREFIX)/share/doc/gpuipc-test,
 * given by the Makefile. */
#ifndef GPUIPC_DOCDIR
#define GPUIPC_DOCDIR "/usr/local/share/doc/gpuipc-test"
#endif

#define COLUMNS 80
#define OPTION_INDENT 18 /* where an option's description starts */

/* Writes head, then text wrapped at COLUMNS, continuation lines indented by
 * indent. */
static void wrap(FILE *out, const char *head, const char *text, int indent)
{
    int col = fprintf(out, "%s", head);

    while (*text != '\0') {
        size_t word = strcspn(text, " ");

        if (col > indent && col + 1 + (int)word > COLUMNS)
            col = fprintf(out, "\n%*s", indent, "") - 1;
        else if (col > indent)
            col += fprintf(out, " ");
        else if (col < indent)
            col += fprintf(out, "%*s", indent - col, "");
        col += fprintf(out, "%.*s", (int)word, text);
        text += word;
        while (*text == ' ')
            text++;
    }
    fprintf(out, "\n");
}

/* Whether dir holds the documentation: README.md and docs/testing.md. */
static int holds_docs(const char *dir)
{
    char path[PATH_MAX + 32];

    snprintf(path, sizeof(path), "%s/README.md", dir);
    if (access(path, R_OK) != 0)
        return 0;
    snprintf(path, sizeof(path), "%s/docs/testing.md", dir);
    return access(path, R_OK) == 0;
}

/* The last lines: where the documentation the help refers to is, found, not
 * assumed, since one binary is installed under any prefix (a package's /usr,
 * make install's /usr/local) or run from its source tree. First beside the
 * program itself (PREFIX/bin/../share/doc/gpuipc-test, then the source tree
 * it was built in), then GPUIPC_DOCDIR; where none holds it, says so. */
static void print_docs(FILE *out)
{
    char exe[PATH_MAX], dir[PATH_MAX + 32], real[PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    char *slash;

    fprintf(out, "Documentation: README.md and docs/ (the paths above), and the manual page:\n");
    if (len > 0) {
        exe[len] = '\0';
        slash = strrchr(exe, '/');
        if (slash != NULL) {
            *slash = '\0';
            snprintf(dir, sizeof(dir), "%s/../share/doc/gpuipc-test", exe);
            if (holds_docs(dir) && realpath(dir, real) != NULL) {
                fprintf(out, "  %s\n  man gpuipc_test\n", real);
                return;
            }
            if (holds_docs(exe)) {
                fprintf(out, "  %s (the source tree this program is in)\n"
                        "  man -l %s/docs/gpuipc_test.1\n", exe, exe);
                return;
            }
        }
    }
    if (holds_docs(GPUIPC_DOCDIR)) {
        fprintf(out, "  %s\n  man gpuipc_test\n", GPUIPC_DOCDIR);
        return;
    }
    fprintf(out, "  not installed here (make install puts them in\n"
            "  %s); see this program's source tree\n", GPUIPC_DOCDIR);
}

void gpuipc_app_usage(FILE *out, const gpuipc_mech *const *mechs, size_t n)
{
    char text[512], destructive[128] = "";
    const char *ref = "the reference mechanism";
    size_t i, width = 0, used = 0;

    /* What the options say about particular mechanisms comes from their
     * tables: the reference one, and those that need --destructive. */
    for (i = 0; i < n; i++) {
        if (strlen(mechs[i]->name) > width)
            width = strlen(mechs[i]->name);
        if (mechs[i]->reference)
            ref = mechs[i]->name;
        if (mechs[i]->destructive && used < sizeof(destructive))
            used += (size_t)snprintf(destructive + used, sizeof(destructive) - used, "%s%s",
                                     used ? ", " : "", mechs[i]->name);
    }

    fprintf(out,
            "Usage: gpuipc_test [OPTIONS]\n"
            "\n"
            "Proves that GPU memory sharing between processes works on this machine. A\n"
            "producer process allocates and exports memory; a consumer process, forked\n"
            "from it before either touches CUDA, imports and maps it. The consumer checks\n"
            "the producer's pattern and writes its own, which the producer checks in turn.\n"
            "Each mechanism runs as a Check test; the exit status says whether all that\n"
            "ran passed.\n"
            "\n"
            "Options:\n"
            "  --size SIZE     bytes per scenario; suffixes K, M, G, T are powers of 1024\n"
            "                  (default 64M, larger than any GPU's L2 cache)\n"
            "  --device LIST   the GPUs to prove, as CUDA ordinals: all, or a list such\n"
            "                  as 1, 0,2 or 4-7 (default: every GPU this process sees;\n"
            "                  --serve, --bench, --fault-matrix and --list: GPU 0). Every\n"
            "                  mechanism runs on each, and with two or more GPUs the\n"
            "                  cross-device ones on every ordered pair, in phases (in\n"
            "                  phase k each GPU exports to the one k after it); the\n"
            "                  consumer finds each GPU by UUID. --bench, --fault-matrix\n"
            "                  and --list take one GPU\n"
            "  --chunks K      allocations of the chunked mechanisms, 1 to 65536\n"
            "                  (default 8): --size is split among them, each rounded up\n"
            "                  to the allocation granularity (at least one granule)\n"
            "  --only LIST     comma-separated mechanisms to run (default: the default\n"
            "                  set, marked (default) below)\n");
    snprintf(text, sizeof(text), "run %s (or --only's mechanisms, each of which must cross "
             "GPUs) between devices: the producer on GPU a, the consumer on GPU b, for 'all' "
             "ordered pairs or a list such as 0:1,1:0 (needs two or more GPUs), with the "
             "link's GB/s each way. 'ring' is the one-shot run with the quicker ring across "
             "GPUs (each exports to the next) instead of every ordered pair, for job prologs "
             "that need seconds", ref);
    wrap(out, "  --pairs LIST   ", text, OPTION_INDENT);
    wrap(out, "  --min-gbps N   ", "with --pairs: fail a pair whose consumer reads or writes "
         "across the link at less than N GB/s (10^9 bytes a second); the summary names each "
         "pair's link (NVLink or PCIe, from NVML) and its GB/s either way", OPTION_INDENT);
    snprintf(text, sizeof(text), "also run %s: a kernel store into a read-only mapping must "
             "fault; it runs in a sacrificial consumer of its own, whose CUDA context the fault "
             "ruins", destructive);
    wrap(out, "  --destructive  ", text, OPTION_INDENT);
    fprintf(out,
            "  --require LIST  mechanisms that must run: a skip of one of them, or\n"
            "                  CK_RUN_SUITE/CK_RUN_CASE leaving it out, is a failure\n"
            "                  (exit 1), for pipelines that insist on them\n"
            "  --expect-gpus N fewer than N GPUs shown to this process (after\n"
            "                  CUDA_VISIBLE_DEVICES), no driver or no device is a\n"
            "                  failure (exit 1), never a skip: for health checks of GPU\n"
            "                  nodes\n"
            "  --timeout SECS  limit of every wait for the other process: 30, 2.5 or\n"
            "                  500ms (default 30)\n"
            "  --deadline SECS limit of the whole run, from its start, or none (default\n"
            "                  50 for a one-shot run, none in the other modes): then\n"
            "                  a watchdog that no stuck call can hold up names the\n"
            "                  stuck process, its step and call, prints the verdict\n"
            "                  (FAIL) and the --json document, kills the consumer and\n"
            "                  exits 1\n"
            "  --repeat N      run the scenario set N times in this process pair (a\n"
            "                  soak): after each round what each process holds (FDs,\n"
            "                  driver objects, shared memory, GPU memory by NVML) must\n"
            "                  be as after round 1; it stops at the first failure or\n"
            "                  drift\n"
            "  --serve PATH    two-terminal mode: be the producer, listening on the Unix\n"
            "                  socket PATH (mode 0600; its directory must be writable by\n"
            "                  its owner only) or @NAME (abstract namespace), for one\n"
            "                  consumer; the same scenarios and report, and both\n"
            "                  processes exit with the session's status\n"
            "  --connect PATH  two-terminal mode: be the consumer of the producer at PATH,\n"
            "                  waiting for it up to --timeout; the producer chooses\n"
            "                  --size, --only and the rest\n"
            "  --allow-uid UID with --serve or --connect: also admit a peer running as\n"
            "                  UID (otherwise only this user's processes may connect)\n"
            "  --ranks         be one rank of a job a PMIx launcher started, one per GPU\n"
            "                  (mpirun -np 8 gpuipc_test --ranks; srun --mpi=pmix): every\n"
            "                  ordered pair of ranks on this node runs the same session\n"
            "                  both ways; rank 0 prints each failed or skipped pair with\n"
            "                  its cause and a count, and writes --json, --prom and\n"
            "                  --junit (where rank 0 is gone, the lowest living rank\n"
            "                  does); by --deadline a stuck rank says where it is stuck,\n"
            "                  and the verdict comes; every rank exits with the run's\n"
            "                  status (docs/ranks.md); ranks of other nodes meet over\n"
            "                  TCP and prove what crosses nodes (fabric)\n"
            "  --ranks-net NET with --ranks: the interface (ib0) or CIDR (10.1.0.0/16)\n"
            "                  whose address ranks of other nodes dial; default\n"
            "                  GPUIPC_RANKS_NET, else the host name's non-loopback address\n");
    snprintf(text, sizeof(text), "run every GPUIPC_FAULT step x action of both roles as a "
             "--serve/--connect pair of this program over --only (one mechanism, default %s), "
             "and check that the survivor reports it in time and leaks nothing (--timeout "
             "default 2)", ref);
    wrap(out, "  --fault-matrix ", text, OPTION_INDENT);
    fprintf(out,
            "  --list          report what this machine can do: driver, each GPU's\n"
            "                  attributes, granularity and NVML modes (MIG, GPU fabric and\n"
            "                  its health), RLIMIT_NOFILE, pidfd, IMEX channels and the\n"
            "                  IMEX daemon (nvidia-imex-ctl, where installed), and whether\n"
            "                  each mechanism can run here (and why not)\n"
            "  --json FILE     the run's result as a JSON document in FILE (- for stdout,\n"
            "                  the usual output then going to stderr), written however the\n"
            "                  run ends, in every mode (docs/result.schema.json); --list\n"
            "                  adds the report (a bare --json: to stdout), --bench every\n"
            "                  sample and target (a FILE: its tables are stdout),\n"
            "                  --fault-matrix its totals. FILE must be absent or a\n"
            "                  regular file (never a link, FIFO or device: refused, exit\n"
            "                  2); a pass whose document cannot be written exits 1\n"
            "  --prom FILE     the run for node-exporter's textfile collector (Prometheus\n"
            "                  text format: gpuipc_test_* gauges, per GPU UUID and\n"
            "                  mechanism), renamed into place where it can be\n"
            "  --junit FILE    the run as JUnit XML for CI servers: a testsuite per GPU,\n"
            "                  a testcase per scenario, and the run's exit status\n"
            "                  (--prom and --junit: the one-shot run, --repeat, --pairs,\n"
            "                  --serve, --connect and --ranks; FILE as for --json, never\n"
            "                  -; from the start they say the run is under way, then its\n"
            "                  verdict however it ends, the deadline included)\n"
            "  --bench         measure instead: 5 timed default runs, held to their floor\n"
            "                  (cuInit and every GPU's context, in a process of its own)\n"
            "                  and one more run's cells; then per mechanism the latency\n"
            "                  of each step of sharing one allocation; the kernels' and a\n"
            "                  copy's bandwidth through imported and local memory at 64M,\n"
            "                  1G and 4G; scaling with size (2M to 16G) and chunk count (1\n"
            "                  to 4096); and with two or more GPUs every device pair.\n"
            "                  Markdown tables on stdout, progress on stderr; every\n"
            "                  measurement is a full scenario, checked both ways\n"
            "  --iters N       with --bench: timed runs per measurement, after a warm-up,\n"
            "                  1 to 1000 (default 20); tables give median (min-max)\n"
            "  -q, --quiet     print only failures and the summary\n"
            "  --brief         print one line on stdout and nothing else: the verdict, the\n"
            "                  counts, the first failure and the first cause, with the\n"
            "                  usual exit status (for health checks and CI logs)\n"
            "  -v, --verbose   also print each driver call and its time\n"
            "  -h, --help      print this help and exit\n"
            "  -V, --version   print the version and exit\n"
            "\n"
            "Mechanisms:\n");
    for (i = 0; i < n; i++) {
        char head[96];

        snprintf(head, sizeof(head), "  %-*s%s", (int)width + 2, mechs[i]->name,
                 mechs[i]->by_default ? "(default)" : "");
        wrap(out, head, mechs[i]->summary, (int)width + 4);
    }
    fprintf(out,
            "\n"
            "Exit status:\n"
            "  0   every scenario that ran passed, both ways\n"
            "  1   a scenario failed on either side, a process leaked, a mechanism\n"
            "      named by --require did not pass, fewer GPUs than --expect-gpus,\n"
            "      the run reached --deadline, or the consumer did not end with the\n"
            "      session's status\n"
            "  2   usage error: a bad option, an impossible size, or a refused socket path\n"
            "  77  nothing could run here (no CUDA driver, no GPU, or every selected\n"
            "      mechanism skipped); one line says why\n"
            "  130 stopped by SIGINT (Ctrl-C), 143 by SIGTERM, 129 by SIGHUP, after\n"
            "      releasing what both processes held; a second signal ends the\n"
            "      process at once\n"
            "\n"
            "Check's CK_RUN_SUITE=<mechanism>, CK_TAP_LOG_FILE_NAME and CK_XML_LOG_FILE_NAME\n"
            "work as usual. GPUIPC_FAULT and GPUIPC_SABOTAGE are test-only hooks, described\n"
            "in docs/testing.md.\n"
            "\n");
    print_docs(out);
}
