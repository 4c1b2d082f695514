/* SPDX-License-Identifier: Apache-2.0 */
/* doc_data.c: the program's data for the result files (doc_data.h). */
#include "app/cuda/doc_data.h"

#include <stdio.h>
#include <stdlib.h>

#include "app/version.h"
#include "core/units.h"
#include "gpu/cudrv.h"
#include "gpu/gpu.h"
#include "gpu/nvml.h"
#include "mech/imex_ctl.h"
#include "run/outputs.h"

_Static_assert(GPUIPC_DOC_GPUS_MAX == GPUIPC_GPU_OPEN_MAX,
               "run/doc.h names as many GPUs as the program opens");

const gpuipc_doc_program *gpuipc_doc_program_of(const gpuipc_options *o,
                                                gpuipc_doc_program *p)
{
    *p = (gpuipc_doc_program){
        .version = GPUIPC_VERSION,
        .commit = gpuipc_version_commit(),
        .mode = gpuipc_options_mode_name(o),
        .argc = o->argc,
        .argv = o->argv,
        .json_path = o->json_path,
        .prom_path = o->prom_path,
        .junit_path = o->junit_path,
        .connect = o->connect,
        .size = o->size,
        .device = o->device,
        .devices = o->devices,
        .chunks = o->chunks,
        .timeout_ns = o->timeout_ns,
        .deadline_ns = o->deadline_ns,
        .repeat = o->repeat,
        .only = o->only,
        .require = o->require,
        .pairs = o->ring ? "ring" : o->pairs,
        .min_gbps = o->min_gbps,
    };
    return p;
}

/* The UUID of GPU ordinal g into m->uuids[g], once. */
static void take_uuid(gpuipc_doc_machine *m, int g)
{
    uint8_t uuid[GPUIPC_UUID_LEN];
    gpuipc_err e;

    if (g >= 0 && g < GPUIPC_DOC_GPUS_MAX && m->uuids[g][0] == '\0' &&
        gpuipc_gpu_uuid_of(g, uuid, &e) == 0)
        gpuipc_units_format_uuid(uuid, m->uuids[g], sizeof(m->uuids[g]));
}

/* The driver's version and every GPU it lists into m, where the driver is
 * loaded already (this starts no driver). */
static void take_machine(gpuipc_doc_machine *m, int gpus)
{
    int count = 0, i;

    if (gpuipc_cu.driver_version == 0)
        return;
    gpuipc_cudrv_version(m->driver, sizeof(m->driver));
    m->cuda_driver_version = gpuipc_cu.driver_version;
    if (!gpus || gpuipc_gpu_count(&count, NULL) < 0)
        return;
    if (count > 0 && (m->gpus = calloc((size_t)count, sizeof(*m->gpus))) == NULL)
        return;
    m->have_driver = 1;
    for (i = 0; i < count; i++) {
        gpuipc_doc_gpu *g = &m->gpus[m->ngpus];
        uint8_t raw[GPUIPC_UUID_LEN];
        gpuipc_nvml_modes modes;
        gpuipc_err e;
        CUdevice dev;

        if (GPUIPC_CU_CALL(cuDeviceGet, &dev, i) != CUDA_SUCCESS)
            continue;
        GPUIPC_CU_CALL(cuDeviceGetName, g->name, (int)sizeof(g->name), dev);
        GPUIPC_CU_CALL(cuDeviceGetPCIBusId, g->bus, (int)sizeof(g->bus), dev);
        g->ordinal = i;
        if (gpuipc_gpu_uuid_of(i, raw, &e) == 0) {
            gpuipc_units_format_uuid(raw, g->uuid, sizeof(g->uuid));
            g->fabric.state = -1;
            if (gpuipc_nvml_gpu_modes(raw, &modes, &e) == 0 && modes.fabric_state >= 0) {
                g->fabric.state = modes.fabric_state;
                g->fabric.status = modes.fabric_status;
                g->fabric.clique = modes.clique_id;
                g->fabric.health_mask = modes.health_mask;
                g->fabric.health_summary = modes.health_summary;
                gpuipc_units_format_uuid(modes.cluster_uuid, g->fabric.cluster,
                                         sizeof(g->fabric.cluster));
            }
            snprintf(g->modes, sizeof(g->modes), "%s", modes.text);
            g->have_uuid = 1;
        }
        m->ngpus++;
    }
}

gpuipc_doc_machine *gpuipc_doc_machine_gather(const gpuipc_doc_program *p,
                                              const gpuipc_result *results, size_t n)
{
    gpuipc_doc_machine *m = calloc(1, sizeof(*m));
    size_t r;

    if (m == NULL)
        return NULL;
    /* The machine first: a UUID asked for starts the driver (as the
     * document's list of the results' GPUs always did after it). */
    take_machine(m, p->json_path != NULL);
    for (r = 0; r < n; r++) {
        take_uuid(m, results[r].gpu);
        take_uuid(m, results[r].peer_gpu);
    }
    return m;
}

void gpuipc_doc_machine_free(gpuipc_doc_machine *m)
{
    if (m != NULL)
        free(m->gpus);
    free(m);
}

const char *gpuipc_doc_driver(char *buf, size_t len)
{
    return gpuipc_cu.driver_version != 0 ? gpuipc_cudrv_version(buf, len) : NULL;
}

int gpuipc_doc_finish(gpuipc_doc *d, int exit_code)
{
    gpuipc_doc_machine *m = gpuipc_doc_machine_gather(d->o, d->results, d->n);
    gpuipc_imex_daemon *imex = NULL;
    gpuipc_err why;
    int rc;

    /* This node's IMEX daemon, for the document only, after every count of
     * the run (its two questions open pipes and start processes): where
     * the tool is not installed, nothing is started. */
    if (m != NULL && d->o->json_path != NULL && (imex = calloc(1, sizeof(*imex))) != NULL) {
        if (gpuipc_imex_daemon_ask(NULL, 1000, imex, &why) < 0) {
            imex->tool = 0;
            imex->ready = imex->nnodes = -1;
            snprintf(imex->error, sizeof(imex->error), "%.190s", why.msg);
        }
        m->imex = imex;
        m->imex_tool = gpuipc_imex_ctl_path();
    }
    d->machine = m;
    rc = gpuipc_outputs_finish(d, exit_code);
    d->machine = NULL;
    gpuipc_doc_machine_free(m);
    free(imex);
    return rc;
}
