/* SPDX-License-Identifier: Apache-2.0 */
/* prom.c: the Prometheus textfile of a run (prom.h).
 *
 * Series, one family after another (each family's samples together, as the
 * format requires):
 *   gpuipc_test_build_info{version, commit, protocol} 1
 *   gpuipc_test_run_info{hostname, boot_id, kernel, driver, mode, role} 1
 *   gpuipc_test_running, gpuipc_test_start_timestamp_seconds
 * and once the run has ended:
 *   gpuipc_test_end_timestamp_seconds, gpuipc_test_duration_seconds,
 *   gpuipc_test_exit_status, gpuipc_test_success,
 *   gpuipc_test_scenarios{verdict},
 *   gpuipc_test_gpu_success{gpu, gpu_uuid} (run/plan.h's verdict of a GPU),
 *   gpuipc_test_scenario_success, _skipped and _duration_seconds
 *   {mechanism, gpu, gpu_uuid, peer_gpu, peer_gpu_uuid} (labels without a
 *   value left out: host memory has no GPU, a scenario on one GPU no peer). */
#include "run/prom.h"

#include "core/err.h"
#include "core/escape.h"
#include "core/status.h"
#include "run/plan.h"

static char mem[1 << 16];

/* "# HELP name text\n# TYPE name gauge\n". */
static void family(gpuipc_sink *s, const char *name, const char *help)
{
    gpuipc_sink_maybe_flush(s);
    gpuipc_sbuf_str(&s->b, "# HELP ");
    gpuipc_sbuf_str(&s->b, name);
    gpuipc_sbuf_str(&s->b, " ");
    gpuipc_sbuf_prom_help(&s->b, help);
    gpuipc_sbuf_str(&s->b, "\n# TYPE ");
    gpuipc_sbuf_str(&s->b, name);
    gpuipc_sbuf_str(&s->b, " gauge\n");
}

/* Opens or continues a label set: first is 1 before the first label. */
static void label(gpuipc_sink *s, int *first, const char *name, const char *value)
{
    if (value == NULL || value[0] == '\0')
        return;
    gpuipc_sbuf_str(&s->b, *first ? "{" : ",");
    *first = 0;
    gpuipc_sbuf_str(&s->b, name);
    gpuipc_sbuf_str(&s->b, "=\"");
    gpuipc_sbuf_prom_label(&s->b, value);
    gpuipc_sbuf_str(&s->b, "\"");
}

static void label_uint(gpuipc_sink *s, int *first, const char *name, int v)
{
    char text[16];
    int i = (int)sizeof(text) - 1;
    unsigned u = (unsigned)v;

    if (v < 0)
        return;
    text[i] = '\0';
    do {
        text[--i] = (char)('0' + u % 10);
        u /= 10;
    } while (u != 0);
    label(s, first, name, text + i);
}

/* Closes the label set (if any) and writes the value, a whole number. */
static void value_uint(gpuipc_sink *s, int first, uint64_t v)
{
    gpuipc_sbuf_str(&s->b, first ? " " : "} ");
    gpuipc_sbuf_uint(&s->b, v);
    gpuipc_sbuf_str(&s->b, "\n");
}

/* ... or ns as seconds, to the millisecond. */
static void value_secs(gpuipc_sink *s, int first, uint64_t ns)
{
    gpuipc_sbuf_str(&s->b, first ? " " : "} ");
    gpuipc_sbuf_secs(&s->b, ns, 3);
    gpuipc_sbuf_str(&s->b, "\n");
}

/* A series without labels. */
static void plain(gpuipc_sink *s, const char *name, const char *help, uint64_t v, int secs)
{
    family(s, name, help);
    gpuipc_sbuf_str(&s->b, name);
    if (secs)
        value_secs(s, 1, v);
    else
        value_uint(s, 1, v);
}

/* The labels that say which scenario results[i] is. */
static void scenario_labels(gpuipc_sink *s, const gpuipc_outcome *oc, size_t i, int *first)
{
    const gpuipc_result *r = &oc->results[i];

    label(s, first, "mechanism", r->mechanism != NULL ? r->mechanism : r->mech);
    label_uint(s, first, "gpu", r->gpu);
    label(s, first, "gpu_uuid", gpuipc_outcome_uuid(oc, r->gpu));
    label_uint(s, first, "peer_gpu", r->peer_gpu);
    label(s, first, "peer_gpu_uuid", gpuipc_outcome_uuid(oc, r->peer_gpu));
}

/* Whether results[i] (its exporter: side 0, importer: 1) is GPU g's first
 * appearance in the results. */
static int first_use(const gpuipc_outcome *oc, size_t i, int side, int g)
{
    size_t k;

    for (k = 0; k < i; k++)
        if (oc->results[k].gpu == g || oc->results[k].peer_gpu == g)
            return 0;
    return side == 0 || oc->results[i].gpu != g;
}

static void gpus(gpuipc_sink *s, const gpuipc_outcome *oc)
{
    size_t i;
    int side, any = 0;

    for (i = 0; i < oc->n; i++)
        for (side = 0; side < 2; side++) {
            const gpuipc_result *r = &oc->results[i];
            int g = side ? r->peer_gpu : r->gpu, first = 1, v;
            gpuipc_plan_tally t;

            if (g < 0 || !first_use(oc, i, side, g))
                continue;
            if (!any)
                family(s, "gpuipc_test_gpu_success", "1 if the GPU passed: a scenario it took "
                       "part in (as exporter or importer) passed and none failed or was "
                       "stopped; 0 otherwise (a failure between two GPUs is charged to the "
                       "GPU whose own scenarios failed, else to both).");
            any = 1;
            v = gpuipc_plan_gpu_verdict(oc->results, oc->n, g, &t);
            gpuipc_sink_maybe_flush(s);
            gpuipc_sbuf_str(&s->b, "gpuipc_test_gpu_success");
            label_uint(s, &first, "gpu", g);
            label(s, &first, "gpu_uuid", gpuipc_outcome_uuid(oc, g));
            value_uint(s, first, v == GPUIPC_PASS);
        }
}

/* One family with a series per scenario. */
static void per_scenario(gpuipc_sink *s, const gpuipc_outcome *oc, const char *name,
                         const char *help, int what)
{
    size_t i;

    if (oc->n == 0)
        return;
    family(s, name, help);
    for (i = 0; i < oc->n; i++) {
        const gpuipc_result *r = &oc->results[i];
        int first = 1;

        gpuipc_sink_maybe_flush(s);
        gpuipc_sbuf_str(&s->b, name);
        scenario_labels(s, oc, i, &first);
        if (what == 2)
            value_secs(s, first, r->ns);
        else
            value_uint(s, first, what == 0 ? r->status == GPUIPC_PASS : r->status == GPUIPC_SKIP);
    }
}

int gpuipc_prom_write(int fd, const gpuipc_outcome *oc)
{
    static const int verdicts[] = {GPUIPC_PASS, GPUIPC_FAIL, GPUIPC_SKIP, GPUIPC_STOPPED};
    const unsigned counts[] = {oc->passed, oc->failed, oc->skipped, oc->stopped};
    const gpuipc_runinfo *who = oc->who;
    gpuipc_sink s;
    int first = 1, k;

    gpuipc_sink_init(&s, fd, mem, sizeof(mem));
    family(&s, "gpuipc_test_build_info", "The gpuipc_test that wrote this file: its version, "
           "commit and wire protocol (always 1).");
    gpuipc_sbuf_str(&s.b, "gpuipc_test_build_info");
    label(&s, &first, "version", oc->version);
    label(&s, &first, "commit", oc->commit);
    label_uint(&s, &first, "protocol", oc->protocol);
    value_uint(&s, first, 1);
    family(&s, "gpuipc_test_run_info", "Where and how the run ran: host name, boot id, "
           "kernel, NVIDIA driver (absent where none was loaded), mode and role (always 1).");
    first = 1;
    gpuipc_sbuf_str(&s.b, "gpuipc_test_run_info");
    label(&s, &first, "hostname", who != NULL ? who->hostname : NULL);
    label(&s, &first, "boot_id", who != NULL ? who->boot_id : NULL);
    label(&s, &first, "kernel", who != NULL ? who->kernel : NULL);
    label(&s, &first, "driver", oc->driver);
    label(&s, &first, "mode", oc->mode);
    label(&s, &first, "role", oc->role);
    value_uint(&s, first, 1);
    plain(&s, "gpuipc_test_running", "1 while the run is under way (this file then claims no "
          "verdict: a run that never ends leaves it so), 0 once it ended.", oc->running != 0, 0);
    plain(&s, "gpuipc_test_start_timestamp_seconds", "When the run started, in seconds since "
          "the Unix epoch.", who != NULL ? who->start_real_ns : 0, 1);
    if (oc->running)
        return gpuipc_sink_finish(&s);
    plain(&s, "gpuipc_test_end_timestamp_seconds", "When the run ended, in seconds since the "
          "Unix epoch.", oc->end_ns, 1);
    plain(&s, "gpuipc_test_duration_seconds", "The run's wall time.", oc->wall_ns, 1);
    plain(&s, "gpuipc_test_exit_status", "The program's exit status: 0 all that ran passed, 1 "
          "a failure (or the deadline), 2 a usage error, 77 nothing could run here, 128+N "
          "stopped by signal N.", (uint64_t)oc->exit_code, 0);
    plain(&s, "gpuipc_test_success", "1 if the run passed (exit status 0), else 0.",
          oc->exit_code == GPUIPC_PASS, 0);
    family(&s, "gpuipc_test_scenarios", "The run's scenarios by verdict.");
    for (k = 0; k < 4; k++) {
        first = 1;
        gpuipc_sbuf_str(&s.b, "gpuipc_test_scenarios");
        label(&s, &first, "verdict", gpuipc_status_name(verdicts[k]));
        value_uint(&s, first, counts[k]);
    }
    gpus(&s, oc);
    per_scenario(&s, oc, "gpuipc_test_scenario_success", "1 if the scenario passed (the "
                 "pattern checked both ways, nothing leaked), else 0: failed, skipped, stopped "
                 "or not run.", 0);
    per_scenario(&s, oc, "gpuipc_test_scenario_skipped", "1 if the scenario was skipped (this "
                 "configuration cannot support the mechanism), else 0.", 1);
    per_scenario(&s, oc, "gpuipc_test_scenario_duration_seconds", "The scenario's wall time "
                 "as the producer saw it (0 for one that did not run).", 2);
    return gpuipc_sink_finish(&s);
}
