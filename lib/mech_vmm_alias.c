/* mech_vmm_alias.c: one imported VMM handle mapped at two addresses in the
 * consumer. The consumer's kernel writes through the first; once that kernel
 * has completed, a kernel reads through the second and must find the same
 * bytes (and it reads the producer's pattern through both before that).
 *
 *   as vmm, and C import: a second cuMemAddressReserve, cuMemMap of the same
 *   handle, cuMemSetAccess; both unmapped at release */
#include <errno.h>
#include <stdint.h>

#include "env.h"
#include "mech.h"
#include "vmm.h"

#define NAME "vmm-alias"

static int alias_probe(gpuipc_env *env, gpuipc_err *why)
{
    return gpuipc_vmm_probe(env, CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED,
                            "HANDLE_TYPE_POSIX_FILE_DESCRIPTOR", why);
}

static int alias_alloc(gpuipc_env *env, uint64_t size, gpuipc_buf *buf, gpuipc_err *err)
{
    CUmemAllocationProp prop;

    gpuipc_vmm_prop(env->gpu, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
                    CU_MEM_ALLOCATION_COMP_NONE, &prop);
    return gpuipc_vmm_create(env, NAME, &prop, size, buf, err);
}

static int alias_export(gpuipc_env *env, gpuipc_buf *buf, gpuipc_msg_offer *offer, int *fds,
                        unsigned *nfds, gpuipc_err *err)
{
    int fd = gpuipc_vmm_export_fd(env, NAME, buf, err);

    if (fd < 0)
        return fd;
    fds[0] = fd;
    *nfds = 1;
    gpuipc_vmm_offer(env, buf, offer);
    return 0;
}

static int alias_import(gpuipc_env *env, const gpuipc_msg_offer *offer, const int *fds,
                        unsigned nfds, gpuipc_buf *buf, gpuipc_err *err)
{
    int rc;

    if (nfds != 1)
        return gpuipc_err_set(err, -EPROTO, NAME " offer carries %u FDs, expected 1", nfds);
    rc = gpuipc_vmm_import(env, NAME, (void *)(uintptr_t)fds[0],
                           CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0, offer, buf, err);
    if (rc < 0)
        return rc;
    rc = gpuipc_vmm_map_alias(env, NAME, buf, err);
    if (rc < 0)
        gpuipc_vmm_release(env, NAME, buf, NULL);
    return rc;
}

static int alias_release(gpuipc_env *env, gpuipc_buf *buf, gpuipc_err *err)
{
    return gpuipc_vmm_release(env, NAME, buf, err);
}

const gpuipc_mech gpuipc_mech_vmm_alias = {
    .name = NAME,
    .summary = "one imported VMM handle mapped twice: written through one, read through the other",
    .needs_cuda = 1,
    .by_default = 1,
    .probe = alias_probe,
    .alloc = alias_alloc,
    .export = alias_export,
    .import = alias_import,
    .release = alias_release,
};
