/* mech_vmm.c: CUDA VMM device memory, exported as a POSIX file descriptor
 * and passed with SCM_RIGHTS: the path PyTorch's expandable segments, NCCL
 * and UCX use. The steps themselves are in vmm.c.
 *
 *   P1 probe: VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED
 *   P2 alloc: cuMemCreate (POSIX FD handle type), reserve, map, set access
 *   P3 export: cuMemExportToShareableHandle -> 1 FD, sent with SCM_RIGHTS
 *   C1 import: cuMemImportFromShareableHandle(FD), properties, reserve, map, access
 *   both: release */
#include <errno.h>
#include <stdint.h>

#include "env.h"
#include "mech.h"
#include "vmm.h"

static int vmm_probe(gpuipc_env *env, gpuipc_err *why)
{
    return gpuipc_vmm_probe(env, CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED,
                            "HANDLE_TYPE_POSIX_FILE_DESCRIPTOR", why);
}

static int vmm_alloc(gpuipc_env *env, uint64_t size, gpuipc_buf *buf, gpuipc_err *err)
{
    CUmemAllocationProp prop;

    gpuipc_vmm_prop(env->gpu, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
                    CU_MEM_ALLOCATION_COMP_NONE, &prop);
    return gpuipc_vmm_create(env, "vmm", &prop, size, buf, err);
}

static int vmm_export(gpuipc_env *env, gpuipc_buf *buf, gpuipc_msg_offer *offer, int *fds,
                      unsigned *nfds, gpuipc_err *err)
{
    int fd = gpuipc_vmm_export_fd(env, "vmm", buf, err);

    if (fd < 0)
        return fd;
    fds[0] = fd;
    *nfds = 1;
    gpuipc_vmm_offer(env, buf, offer);
    return 0;
}

static int vmm_import(gpuipc_env *env, const gpuipc_msg_offer *offer, const int *fds,
                      unsigned nfds, gpuipc_buf *buf, gpuipc_err *err)
{
    if (nfds != 1)
        return gpuipc_err_set(err, -EPROTO, "vmm offer carries %u FDs, expected 1", nfds);
    return gpuipc_vmm_import(env, "vmm", (void *)(uintptr_t)fds[0],
                             CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0, offer, buf, err);
}

static int vmm_release(gpuipc_env *env, gpuipc_buf *buf, gpuipc_err *err)
{
    return gpuipc_vmm_release(env, "vmm", buf, err);
}

const gpuipc_mech gpuipc_mech_vmm = {
    .name = "vmm",
    .summary = "CUDA VMM device memory: cuMemCreate, POSIX FD over SCM_RIGHTS, cuMemMap",
    .needs_cuda = 1,
    .by_default = 1,
    .probe = vmm_probe,
    .alloc = vmm_alloc,
    .export = vmm_export,
    .import = vmm_import,
    .release = vmm_release,
};
