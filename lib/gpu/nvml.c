/* nvml.c: per-process GPU memory from NVML, loaded with dlopen().
 *
 * The project declares the few NVML types and calls it uses, from NVML's
 * documented API (the driver ships libnvidia-ml.so.1, but no toolkit ships
 * nvml.h everywhere): nvmlInit_v2, nvmlDeviceGetCount_v2,
 * nvmlDeviceGetHandleByIndex_v2, nvmlDeviceGetComputeRunningProcesses_v3
 * (or _v2, the same layout) and nvmlErrorString. NVML stays loaded and
 * started until the process exits, like the CUDA driver. */
#include "gpu/nvml.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/proc.h"

typedef int nvml_return;
typedef struct nvml_device_st *nvml_device;

#define NVML_SUCCESS 0
#define NVML_ERROR_INSUFFICIENT_SIZE 7
#define NVML_VALUE_NOT_AVAILABLE (~0ull)
#define MAX_DEVICES 64
#define MAX_PROCESSES 4096

/* nvmlProcessInfo_v2_t, which _v3 also fills. */
typedef struct nvml_process {
    unsigned int pid;
    unsigned long long used_gpu_memory;
    unsigned int gpu_instance_id;
    unsigned int compute_instance_id;
} nvml_process;

static struct {
    nvml_return (*init)(void);
    nvml_return (*count)(unsigned int *n);
    nvml_return (*handle)(unsigned int index, nvml_device *dev);
    nvml_return (*processes)(nvml_device dev, unsigned int *n, nvml_process *infos);
    const char *(*error_string)(nvml_return rc);
    nvml_device dev[MAX_DEVICES];
    unsigned int ndev;
    nvml_process *infos;
    unsigned int cap;
} nv;

static const char *nvml_error(nvml_return rc)
{
    const char *s = nv.error_string != NULL ? nv.error_string(rc) : NULL;

    return s != NULL ? s : "unknown NVML error";
}

static int load(gpuipc_err *why)
{
    uint64_t ns = 0;
    void *lib;
    unsigned int i;
    nvml_return rc;
    int ret;

    /* NVML's process lists carry host PIDs: in another PID namespace this
     * process's own PID would match somebody else's, or nobody's. */
    if ((ret = gpuipc_proc_pid_ns(&ns, why)) < 0)
        return gpuipc_err_set(why, -ENOTSUP, "the PID namespace cannot be read (%.200s), so "
                              "NVML's host PIDs cannot be matched to this process", why->msg);
    if (ns != GPUIPC_NVML_HOST_PID_NS)
        return gpuipc_err_set(why, -ENOTSUP, "this process runs in PID namespace pid:[%llu], "
                              "not the host's: NVML lists processes by host PID, so it cannot "
                              "tell which memory is this process's", (unsigned long long)ns);
    dlerror();
    lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL)
        return gpuipc_err_set(why, -ENOTSUP, "NVML is not available: dlopen "
                              "libnvidia-ml.so.1: %s", dlerror());
    *(void **)&nv.init = dlsym(lib, "nvmlInit_v2");
    *(void **)&nv.count = dlsym(lib, "nvmlDeviceGetCount_v2");
    *(void **)&nv.handle = dlsym(lib, "nvmlDeviceGetHandleByIndex_v2");
    *(void **)&nv.processes = dlsym(lib, "nvmlDeviceGetComputeRunningProcesses_v3");
    if (nv.processes == NULL)
        *(void **)&nv.processes = dlsym(lib, "nvmlDeviceGetComputeRunningProcesses_v2");
    *(void **)&nv.error_string = dlsym(lib, "nvmlErrorString");
    if (nv.init == NULL || nv.count == NULL || nv.handle == NULL || nv.processes == NULL)
        return gpuipc_err_set(why, -ENOTSUP, "libnvidia-ml.so.1 lacks nvmlInit_v2, "
                              "nvmlDeviceGetCount_v2, nvmlDeviceGetHandleByIndex_v2 or "
                              "nvmlDeviceGetComputeRunningProcesses_v2/_v3 (too old a driver)");
    if ((rc = nv.init()) != NVML_SUCCESS)
        return gpuipc_err_set(why, -ENOTSUP, "nvmlInit_v2: %s", nvml_error(rc));
    if ((rc = nv.count(&nv.ndev)) != NVML_SUCCESS)
        return gpuipc_err_set(why, -ENOTSUP, "nvmlDeviceGetCount_v2: %s", nvml_error(rc));
    if (nv.ndev > MAX_DEVICES)
        nv.ndev = MAX_DEVICES;
    nv.cap = 64;
    nv.infos = calloc(nv.cap, sizeof(*nv.infos));
    if (nv.infos == NULL)
        return gpuipc_err_set(why, -ENOMEM, "NVML process list: out of memory");
    for (i = 0; i < nv.ndev; i++)
        if ((rc = nv.handle(i, &nv.dev[i])) != NVML_SUCCESS)
            return gpuipc_err_set(why, -ENOTSUP, "nvmlDeviceGetHandleByIndex_v2(%u): %s", i,
                                  nvml_error(rc));
    return 0;
}

/* Reads device d's compute processes into nv.infos. Returns their count, or
 * a negative errno with why. */
static int list_processes(unsigned int d, gpuipc_err *why)
{
    int tries;

    for (tries = 0; tries < 4; tries++) {
        unsigned int n = nv.cap;
        nvml_return rc = nv.processes(nv.dev[d], &n, nv.infos);

        if (rc == NVML_SUCCESS)
            return (int)n;
        if (rc != NVML_ERROR_INSUFFICIENT_SIZE)
            return gpuipc_err_set(why, -ENOTSUP, "nvmlDeviceGetComputeRunningProcesses(GPU "
                                  "%u): %s", d, nvml_error(rc));
        /* More processes than room: n says how many; processes may come
         * between two calls, hence the margin and the retries. */
        if (n > MAX_PROCESSES)
            break;
        {
            nvml_process *bigger = realloc(nv.infos, (size_t)(n + 16) * sizeof(*nv.infos));

            if (bigger == NULL)
                return gpuipc_err_set(why, -ENOMEM, "NVML process list: out of memory");
            nv.infos = bigger;
            nv.cap = n + 16;
        }
    }
    return gpuipc_err_set(why, -ENOTSUP, "nvmlDeviceGetComputeRunningProcesses(GPU %u): more "
                          "than %d processes", d, MAX_PROCESSES);
}

/* Loads NVML once; returns 0 or the remembered failure, with why. */
static int ready(gpuipc_err *why)
{
    static int done, result;
    static gpuipc_err saved;

    if (!done) {
        result = load(&saved);
        done = 1;
    }
    if (result < 0 && why != NULL)
        *why = saved;
    return result;
}

int gpuipc_nvml_pid_bytes(pid_t pid, uint64_t *bytes, int *listed, gpuipc_err *why)
{
    unsigned int d;
    uint64_t sum = 0;
    int n, i, rc;

    *listed = 0;
    if ((rc = ready(why)) < 0)
        return rc;
    for (d = 0; d < nv.ndev; d++) {
        if ((n = list_processes(d, why)) < 0)
            return n;
        for (i = 0; i < n; i++) {
            if ((pid_t)nv.infos[i].pid != pid)
                continue;
            if (nv.infos[i].used_gpu_memory == NVML_VALUE_NOT_AVAILABLE)
                return gpuipc_err_set(why, -ENOTSUP, "NVML does not report per-process "
                                      "memory on GPU %u (NVML_VALUE_NOT_AVAILABLE)", d);
            sum += nv.infos[i].used_gpu_memory;
            *listed = 1;
        }
    }
    *bytes = sum;
    return 0;
}

int gpuipc_nvml_process_bytes(uint64_t *bytes, gpuipc_err *why)
{
    int listed, rc = gpuipc_nvml_pid_bytes(getpid(), bytes, &listed, why);

    if (rc == 0 && !listed)
        return gpuipc_err_set(why, -ENOTSUP, "NVML lists no compute process with this PID "
                              "(%d) on its %u GPU%s", (int)getpid(), nv.ndev,
                              nv.ndev == 1 ? "" : "s");
    return rc;
}
