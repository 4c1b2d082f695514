/* SPDX-License-Identifier: Apache-2.0 */
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

/* Starts NVML on a thread of its own, so that it loads while the CUDA driver
 * starts on the calling thread (each takes tens of ms); the first call that
 * needs NVML waits for it. Only in the host's PID namespace, where the leak
 * check uses NVML in every scenario; elsewhere NVML loads on first use. Call
 * it from the main thread; a child forked while the thread runs loads NVML
 * itself on first use. Does nothing if NVML has already started or failed,
 * or if no thread can be made. */
void gpuipc_nvml_start(void);

/* Before the process exits: waits up to wait_ns for the thread
 * gpuipc_nvml_start made, if it still runs (nvmlInit_v2 can take long on a
 * sick GPU). Returns 0, or -ETIMEDOUT: the thread is still inside NVML, and
 * the process should leave with _exit(), not run the libraries' exit
 * handlers under it. */
int gpuipc_nvml_finish(uint64_t wait_ns);

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

/* What NVML says of one GPU's modes, which change what may be shared. */
typedef struct gpuipc_nvml_modes {
    int mig;          /* MIG mode: 1 on, 0 off, -1 not reported */
    int mig_pending;  /* the mode after the next GPU reset: 1 on */
    int cc;           /* confidential computing (the system's): 1 on, 0 off, -1 not reported */
    int fabric_state; /* GPU fabric: 0 not supported, 1 not started, 2 in progress,
                       * 3 completed; -1 not reported */
    unsigned fabric_status; /* an NVML return code, 0 for healthy (with state 3) */
    unsigned clique_id;
    unsigned health_mask;   /* NVML_GPU_FABRIC_HEALTH_MASK_* (core/fabric.h) */
    int health_summary;     /* NVML_GPU_FABRIC_HEALTH_SUMMARY_*; -1 not reported */
    uint8_t cluster_uuid[16];
    char text[384]; /* "MIG off, confidential computing off, GPU fabric not supported" */
} gpuipc_nvml_modes;

/* Reads the modes of the GPU with this CUDA UUID into m (text always set).
 * Returns 0, or -ENOTSUP with why where NVML or the GPU is not known to it.
 * Works in any PID namespace. */
int gpuipc_nvml_gpu_modes(const uint8_t uuid[16], gpuipc_nvml_modes *m, gpuipc_err *why);

/* NVML's GPU fabric state of every GPU it sees, by NVML index ("GPU 0 in
 * progress, GPU 1 not started"), into buf; NVML works where CUDA does not
 * start yet (CUDA_ERROR_SYSTEM_NOT_READY). Returns 0, or -ENOTSUP with why. */
int gpuipc_nvml_fabric_states(char *buf, size_t len, gpuipc_err *why);

/* Whether NVML shows an NVLink between GPUs a and b (by CUDA UUID): 1, 0,
 * or -1 where it cannot say (no NVML, a GPU it does not know, no answer). */
int gpuipc_nvml_nvlink(const uint8_t a[16], const uint8_t b[16]);

/* Describes the link from GPU a to GPU b, by CUDA UUID, into buf: "NVLink
 * 4.0 (18 links of the first GPU active; ...)" where NVML says the pair
 * talks over NVLink, else "PCIe Gen5 x16, behind one host bridge; ...".
 * Returns 0, or -ENOTSUP with why. */
int gpuipc_nvml_link(const uint8_t a[16], const uint8_t b[16], char *buf, size_t len,
                     gpuipc_err *why);

#endif
