/* nvml.h: this process's GPU memory as the driver's management library sees
 * it (NVML, libnvidia-ml.so.1, loaded at run time like libcuda): a second
 * opinion on the leak check, measured by the driver rather than counted by
 * this program. NVML names processes by their PIDs in the host's PID
 * namespace, so it can attribute memory to this process only where this
 * process lives in that namespace; elsewhere it says so, and the ledger's
 * count of driver objects (ledger.h) stands alone. */
#ifndef GPUIPC_NVML_H
#define GPUIPC_NVML_H

#include <stdint.h>
#include <sys/types.h>

#include "core/err.h"

/* The inode of the initial PID namespace (the kernel's PROC_PID_INIT_INO),
 * as /proc/self/ns/pid shows it: "pid:[4026531836]". */
#define GPUIPC_NVML_HOST_PID_NS 4026531836ull

/* Sums the GPU memory that NVML attributes to this process, over every GPU
 * it lists, into *bytes. Returns 0; -ENOTSUP with why where it cannot be
 * attributed here (no NVML, another PID namespace, a device that does not
 * report per-process memory, or this process not on NVML's lists); or
 * another negative errno. The first call loads and starts NVML; a failure to
 * do so is remembered, so later calls answer at once. */
int gpuipc_nvml_process_bytes(uint64_t *bytes, gpuipc_err *why);

/* The same for process pid: its bytes over every GPU into *bytes, and
 * whether NVML lists it at all into *listed (a process that is gone, or has
 * no context, is not listed and holds 0). Returns 0, or as above. */
int gpuipc_nvml_pid_bytes(pid_t pid, uint64_t *bytes, int *listed, gpuipc_err *why);

#endif
