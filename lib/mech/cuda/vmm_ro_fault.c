/* SPDX-License-Identifier: Apache-2.0 */
/* vmm_ro_fault.c: the destructive half of vmm-readonly. A
 * consumer maps the imported handle read-only and launches the fill kernel
 * into it: the store must fault. The fault poisons that process's CUDA
 * context for good, so this runs only with --destructive, in a sacrificial
 * consumer forked for it before its cuInit, which exits after this one
 * scenario; its exit is what releases its mapping. The producer waits for
 * that exit before it releases and counts, then checks that its pattern is
 * unchanged.
 *
 *   P  as vmm-readonly
 *   C1 import read-only; verify the producer's pattern (reads work)
 *   C2 fill kernel into the mapping: an error must come back (on the H100,
 *      expected CUDA_ERROR_ILLEGAL_ADDRESS); success is a failure
 *   C3 release: nothing more may be asked of the poisoned context */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/cudrv.h"
#include "session/scenario.h"
#include "gpu/gpu.h"
#include "session/mech.h"
#include "session/pattern.h"
#include "mech/cuda/vmm.h"

static int fault_import(gpuipc_scenario *sc, const gpuipc_msg_offer *offer, const int *fds,
                        unsigned nfds, gpuipc_buf *buf, gpuipc_err *err)
{
    int rc = gpuipc_vmm_fd_import(sc, offer, fds, nfds, GPUIPC_VMM_READ_ONLY, buf, err);

    if (rc == 0) {
        size_t used = strlen(buf->detail);

        snprintf(buf->detail + used, sizeof(buf->detail) - used,
                 ", mapped read-only in a sacrificial consumer");
    }
    return rc;
}

static int fault_prove(gpuipc_scenario *sc, gpuipc_buf *buf, gpuipc_err *err)
{
    gpuipc_vmm *v = buf->priv;
    gpuipc_written wrote;
    gpuipc_err why;
    int rc;

    (void)sc;
    rc = buf->view.ops->fill(&buf->view, gpuipc_pattern_seed(1), &wrote, &why);
    if (rc == 0)
        return gpuipc_err_set(err, -EPROTO, "a kernel wrote through the read-only mapping and "
                              "no fault came back: the mapping is not read-only");
    /* From here on the context is poisoned: release must not touch it. */
    v->poisoned = 1;
    return gpuipc_err_set(err, 0, "the kernel's store faulted, as expected: %.300s; this "
                          "consumer's context is lost and it exits after this scenario",
                          why.msg);
}

static int fault_release(gpuipc_scenario *sc, gpuipc_buf *buf, gpuipc_err *err)
{
    gpuipc_vmm *v = buf->priv;

    if (v == NULL || !v->poisoned)
        return gpuipc_vmm_release(sc, buf, err);
    /* Every call into the faulted context would fail; the process's exit
     * gives the mapping and the handle back to the driver, and the producer
     * waits for that exit before it releases and counts. */
    gpuipc_vmm_abandon(buf);
    return 0;
}

const gpuipc_mech gpuipc_mech_vmm_readonly_fault = {
    .name = "vmm-ro-fault",
    .summary = "--destructive: a kernel store into a read-only mapping must fault (in a "
               "sacrificial consumer)",
    .needs_cuda = 1,
    .by_default = 0,
    .read_only = 1,
    .destructive = 1,
    .probe = gpuipc_vmm_fd_probe,
    .alloc = gpuipc_vmm_fd_alloc,
    .export = gpuipc_vmm_fd_export,
    .import = fault_import,
    .release = fault_release,
    .prove_read_only = fault_prove,
};
