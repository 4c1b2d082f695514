/* SPDX-License-Identifier: Apache-2.0 */
/* deadline_doc.c: the --json document at the deadline (deadline_doc.h):
 * prepared at the start, finished by run/deadline.c and rendered by
 * run/result_doc.c at the deadline. */
#include "app/cuda/deadline_doc.h"

#include <stdlib.h>
#include <string.h>

#include "app/cuda/doc_data.h"
#include "bench/bench.h"
#include "core/status.h"
#include "gpu/gpu.h"

_Static_assert(sizeof(((gpuipc_deadline_doc *)0)->where) ==
               sizeof(((gpuipc_producer_run *)0)->where), "the run's where, whole");
_Static_assert(GPUIPC_GPU_OPEN_MAX == GPUIPC_DOC_GPUS_MAX, "the GPUs' UUIDs by ordinal");

gpuipc_deadline_doc *gpuipc_deadline_doc_make(const gpuipc_options *o,
                                              const gpuipc_producer_run *run,
                                              const char (*uuids)[GPUIPC_OUTCOME_UUID_LEN])
{
    gpuipc_deadline_doc *dd = calloc(1, sizeof(*dd));
    int g;

    if (dd == NULL)
        return NULL;
    if (gpuipc_doc_kit_make(&dd->kit) < 0) {
        free(dd);
        return NULL;
    }
    dd->d.o = gpuipc_doc_program_of(o, &dd->prog);
    dd->d.role = run != NULL ? "producer" : "consumer";
    dd->d.exit_code = GPUIPC_FAIL;
    dd->d.under_way = "under way when the deadline passed";
    if (run != NULL) {
        memcpy(dd->where, run->where, sizeof(dd->where));
        dd->where[sizeof(dd->where) - 1] = '\0';
        dd->d.where = dd->where[0] ? dd->where : NULL;
        dd->d.rounds = run->rounds;
        dd->own = run->env.facts;
        if (run->env.have_peer_facts) {
            dd->peer = run->env.peer_facts;
            dd->d.peer = &dd->peer;
        }
        dd->d.nstages = run->cells.nstages;
        dd->d.stage_names = gpuipc_stage_names;
    } else {
        gpuipc_facts_gather(&dd->own);
    }
    dd->d.own = &dd->own;
    dd->d.machine = dd->machine = gpuipc_doc_machine_gather(&dd->prog, NULL, 0);
    for (g = 0; dd->machine != NULL && uuids != NULL && g < GPUIPC_GPU_OPEN_MAX; g++)
        if (dd->machine->uuids[g][0] == '\0')
            memcpy(dd->machine->uuids[g], uuids[g], sizeof(dd->machine->uuids[g]));
    return dd;
}

void gpuipc_deadline_doc_free(gpuipc_deadline_doc *dd)
{
    if (dd == NULL)
        return;
    gpuipc_doc_machine_free(dd->machine);
    gpuipc_doc_kit_free(&dd->kit);
    free(dd);
}
