/* SPDX-License-Identifier: Apache-2.0 */
/* vmm_host_numa.c: CPU-visible shared memory through the driver alone:
 * VMM memory on a host NUMA node (CU_MEM_LOCATION_TYPE_HOST_NUMA), exported
 * by FD, mapped by both processes with access for the GPU and for the node,
 * so that one address serves the CPU and the GPU of each. Four paths are
 * checked: the producer's CPU writes; the consumer's GPU verifies and the
 * consumer's CPU reads; the consumer's GPU writes and its CPU reads back;
 * the producer's CPU verifies.
 *
 *   probe: as vmm, HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, HOST_NUMA_ID,
 *          and a trial cuMemCreate on that node (in containers get_mempolicy
 *          may be blocked, which refuses it)
 *   P alloc: cuMemCreate at the node; the producer's view is its CPU's
 *   C import: as vmm; its view is the GPU's, its second view the CPU's */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "gpu/cudrv.h"
#include "session/scenario.h"
#include "gpu/gpu.h"
#include "session/mech.h"
#include "session/pattern.h"
#include "mech/cuda/vmm.h"

#define NAME "vmm-host-numa"

static int node_of(gpuipc_scenario *sc, int *node, gpuipc_err *why)
{
    if (gpuipc_gpu_attr(sc->env->gpu, CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID, node, why) != CUDA_SUCCESS)
        return -EIO;
    return 0;
}

static int numa_probe(gpuipc_scenario *sc, gpuipc_err *why)
{
    CUmemGenericAllocationHandle h;
    CUmemAllocationProp prop;
    int rc, ok = 0, node = -1;
    size_t gran = 0;
    CUresult cr;

    rc = gpuipc_vmm_fd_probe(sc, why);
    if (rc < 0)
        return rc;
    if (gpuipc_gpu_attr(sc->env->gpu, CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
                        &ok, why) != CUDA_SUCCESS || node_of(sc, &node, why) < 0)
        return -EIO;
    if (!ok)
        return gpuipc_err_set(why, -ENOTSUP, "CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_"
                              "MANAGEMENT_SUPPORTED is 0 on GPU %d: no VMM host memory here "
                              "(a CUDA 12.2+ driver is needed)", gpuipc_gpu_ordinal(sc->env->gpu));
    if (node < 0)
        return gpuipc_err_set(why, -ENOTSUP, "CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID is %d on GPU %d: "
                              "the system reports no NUMA node", node,
                              gpuipc_gpu_ordinal(sc->env->gpu));
    gpuipc_vmm_prop_host_numa(node, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, &prop);
    cr = GPUIPC_CU_CALL(cuMemGetAllocationGranularity, &gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
    if (cr == CUDA_SUCCESS)
        cr = GPUIPC_CU_CALL(cuMemCreate, &h, gran, &prop, 0);
    if (cr != CUDA_SUCCESS)
        return gpuipc_err_set(why, -ENOTSUP, "cuMemCreate on host NUMA node %d: %s (in a "
                              "container get_mempolicy may be blocked: Docker needs SYS_NICE)",
                              node, gpuipc_cudrv_error_name(cr));
    GPUIPC_CU_CALL(cuMemRelease, h);
    return 0;
}

/* The CPU's view of the same mapping: a VMM address with host access
 * granted is an ordinary pointer for the CPU. */
static void cpu_view(const gpuipc_buf *buf, gpuipc_view *view)
{
    *view = buf->view;
    view->ops = &gpuipc_pattern_cpu_ops;
    view->host = (void *)(uintptr_t)buf->view.dev;
}

static int numa_alloc(gpuipc_scenario *sc, uint64_t size, gpuipc_buf *buf, gpuipc_err *err)
{
    CUmemAllocationProp prop;
    int node, rc;

    if ((rc = node_of(sc, &node, err)) < 0)
        return rc;
    gpuipc_vmm_prop_host_numa(node, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, &prop);
    rc = gpuipc_vmm_create(sc, &prop, size, buf, err);
    if (rc == 0) {
        size_t used = strlen(buf->detail);

        /* The producer fills and checks with its CPU. */
        cpu_view(buf, &buf->view);
        snprintf(buf->detail + used, sizeof(buf->detail) - used, "; the CPU fills and checks it");
    }
    return rc;
}

static int numa_import(gpuipc_scenario *sc, const gpuipc_msg_offer *offer, const int *fds,
                       unsigned nfds, gpuipc_buf *buf, gpuipc_err *err)
{
    const gpuipc_vmm *v;
    int rc;

    rc = gpuipc_vmm_fd_import(sc, offer, fds, nfds, 0, buf, err);
    if (rc < 0)
        return rc;
    v = buf->priv;
    if (v->host_numa < 0) {
        gpuipc_vmm_release(sc, buf, NULL);
        return gpuipc_err_set(err, -EPROTO, "the imported handle is device memory, not host "
                              "NUMA memory as " NAME " offers");
    }
    /* The consumer's GPU verifies and writes; its CPU reads both patterns. */
    cpu_view(buf, &buf->alt);
    snprintf(buf->alt_name, sizeof(buf->alt_name), "this process's CPU");
    return 0;
}

const gpuipc_mech gpuipc_mech_vmm_host_numa = {
    .name = NAME,
    .summary = "VMM memory on a host NUMA node, by FD: both CPUs and the GPU use one mapping",
    .needs_cuda = 1,
    .by_default = 1,
    .cross_device = 1,
    .memory = GPUIPC_MECH_HOST,
    .probe = numa_probe,
    .alloc = numa_alloc,
    .export = gpuipc_vmm_fd_export,
    .import = numa_import,
    .release = gpuipc_vmm_release,
};
