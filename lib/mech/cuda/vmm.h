/* SPDX-License-Identifier: Apache-2.0 */
/* vmm.h: the CUDA VMM steps that the VMM-based mechanisms share: allocation
 * properties, the probe, create and map, export to an FD, import and map,
 * and release. Each mechanism file adds only what is its own. */
#ifndef GPUIPC_VMM_H
#define GPUIPC_VMM_H

#include <stdint.h>

#include "gpu/cuda_api.h"
#include "session/scenario.h"
#include "core/err.h"
#include "session/mech.h"

struct gpuipc_gpu;

/* What one side holds of a VMM allocation (a gpuipc_buf's priv). */
typedef struct gpuipc_vmm {
    CUmemGenericAllocationHandle handle;
    CUdeviceptr ptr;
    size_t size;         /* bytes mapped at ptr */
    size_t offset;       /* where in the allocation the mapping starts (cuMemMap offset) */
    struct gpuipc_gpu *gpu;
    int kept_fd;         /* an exported FD kept open for the peer to fetch, or -1 */
    int host_numa;       /* the host NUMA node the memory lives on, or -1 for the GPU */
    CUdeviceptr alias;   /* a second mapping of the same handle, or 0 */
    int read_only;       /* this side's GPU maps it CU_MEM_ACCESS_FLAGS_PROT_READ */
    int poisoned;        /* a kernel faulted on it: the context is lost (--destructive) */
} gpuipc_vmm;

/* gpuipc_vmm_import() flags. */
#define GPUIPC_VMM_READ_ONLY 0x1u /* map for reading only */

/* Fills prop for pinned memory on gpu's device, exportable as type, with
 * compression CU_MEM_ALLOCATION_COMP_NONE or _GENERIC. */
void gpuipc_vmm_prop(const struct gpuipc_gpu *gpu, CUmemAllocationHandleType type,
                     unsigned char compression, CUmemAllocationProp *prop);

/* Memory on host NUMA node numa_id instead: create and import then grant
 * access to the GPU and to that node, so that both this process's CPU and
 * its GPU use the one mapping. */
void gpuipc_vmm_prop_host_numa(int numa_id, CUmemAllocationHandleType type,
                               CUmemAllocationProp *prop);

/* The probe every VMM mechanism starts with: the consumer first opens the
 * device named by sc->uuid; then VMM support and type_attr (the attribute
 * that says the handle type is supported, named type_name in the reason)
 * must be set. Returns 0, -ENOTSUP with the reason, or a negative errno. */
int gpuipc_vmm_probe(gpuipc_scenario *sc, CUdevice_attribute type_attr, const char *type_name,
                     gpuipc_err *why);

/* Producer: creates at least size bytes with prop (rounded up to the
 * granularity of exactly these properties), maps them read-write for this
 * device and describes them in buf, whose priv is then a gpuipc_vmm. Driver
 * calls are logged at verbose level under sc->mech. On failure nothing is held.
 * Returns 0 or a negative errno; an out-of-memory reason gives both sizes. */
int gpuipc_vmm_create(gpuipc_scenario *sc, const CUmemAllocationProp *prop, uint64_t size,
                      gpuipc_buf *buf, gpuipc_err *err);

/* Producer: fills the offer's size, granularity and device UUID for buf. */
void gpuipc_vmm_offer(gpuipc_scenario *sc, const gpuipc_buf *buf, gpuipc_msg_offer *offer);

/* Producer: exports buf's allocation as a POSIX FD, close-on-exec. Returns
 * the FD, which the caller owns, or a negative errno. */
int gpuipc_vmm_export_fd(gpuipc_scenario *sc, gpuipc_buf *buf, gpuipc_err *err);

/* The same for any allocation handle. */
int gpuipc_vmm_export_handle(gpuipc_scenario *sc, CUmemGenericAllocationHandle handle,
                             gpuipc_err *err);

/* The same without the -v line (the chunk engine sums its calls instead). */
int gpuipc_vmm_export_raw(CUmemGenericAllocationHandle handle, gpuipc_err *err);

/* Returns the minimum granularity of exactly these properties, or 0 with
 * err set if the driver does not say. */
uint64_t gpuipc_vmm_granularity(const CUmemAllocationProp *prop, gpuipc_err *err);

/* Consumer: imports os_handle of type (for a POSIX FD, the FD as a
 * pointer-sized integer; for FABRIC, a pointer to the handle), checks that
 * the allocation lives on this side's device (or in host memory) and that
 * the offer names that device,
 * maps offer->size bytes read-write (read-only with GPUIPC_VMM_READ_ONLY)
 * and describes them in buf. The caller
 * keeps and closes any FD. On failure nothing is held. */
int gpuipc_vmm_import(gpuipc_scenario *sc, void *os_handle, CUmemAllocationHandleType type,
                      unsigned flags, const gpuipc_msg_offer *offer, gpuipc_buf *buf,
                      gpuipc_err *err);

/* The same, but maps only the part of the allocation from offset (a
 * multiple of the granularity, below offer->size) to its end, with a
 * non-zero cuMemMap offset; the view's first word is then pattern word
 * offset / 8, as in the producer's whole allocation. */
int gpuipc_vmm_import_at(gpuipc_scenario *sc, void *os_handle, CUmemAllocationHandleType type,
                         unsigned flags, uint64_t offset, const gpuipc_msg_offer *offer,
                         gpuipc_buf *buf, gpuipc_err *err);

/* Consumer: maps buf's handle a second time, at another address, with the
 * same access, and describes it as buf->alt (a GPU view). Released with buf. */
int gpuipc_vmm_map_alias(gpuipc_scenario *sc, gpuipc_buf *buf, gpuipc_err *err);

/* Reads the properties of buf's allocation into prop. Returns the CUresult. */
CUresult gpuipc_vmm_props(const gpuipc_buf *buf, CUmemAllocationProp *prop, gpuipc_err *err);

/* Both: synchronizes, unmaps, frees the address range, releases the handle
 * and closes a kept FD, continuing past a failed step. Returns 0 or the
 * first failure. */
int gpuipc_vmm_release(gpuipc_scenario *sc, gpuipc_buf *buf, gpuipc_err *err);

/* For a context that a fault has lost, where no call can release anything:
 * frees buf's state and takes its handle, mapping and address range off the
 * ledger, since this process's exit, which must follow, gives them back. */
void gpuipc_vmm_abandon(gpuipc_buf *buf);

/* The operations of plain VMM memory shared by one POSIX FD, for the
 * mechanism table; a mechanism uses those it does not need to change. */
int gpuipc_vmm_fd_probe(gpuipc_scenario *sc, gpuipc_err *why);
int gpuipc_vmm_fd_alloc(gpuipc_scenario *sc, uint64_t size, gpuipc_buf *buf, gpuipc_err *err);
int gpuipc_vmm_fd_export(gpuipc_scenario *sc, gpuipc_buf *buf, gpuipc_msg_offer *offer, int *fds,
                         unsigned *nfds, gpuipc_err *err);

/* Imports the offer's one FD with flags (0 or GPUIPC_VMM_READ_ONLY). */
int gpuipc_vmm_fd_import(gpuipc_scenario *sc, const gpuipc_msg_offer *offer, const int *fds,
                         unsigned nfds, unsigned flags, gpuipc_buf *buf, gpuipc_err *err);

#endif
