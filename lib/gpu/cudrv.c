/* SPDX-License-Identifier: Apache-2.0 */
/* cudrv.c: loading the CUDA driver at run time, and naming its errors. */
#include "gpu/cudrv.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "gpu/cutrack.h"
#include "core/units.h"

gpuipc_cudrv gpuipc_cu;

static const struct {
    const char *name;
    int version;
    void **slot;
} entries[] = {
#define GPUIPC_CU_ENTRY(fn, v) {#fn, v, (void **)&gpuipc_cu.fn},
    GPUIPC_CU_FUNCS(GPUIPC_CU_ENTRY)
#undef GPUIPC_CU_ENTRY
};

typedef CUresult (*get_proc_fn)(const char *, void **, int, cuuint64_t,
                                CUdriverProcAddressQueryResult *);
typedef CUresult (*get_version_fn)(int *);

static int load_once(gpuipc_err *err)
{
    get_version_fn get_version;
    get_proc_fn get_proc;
    void *lib;
    size_t i;

    dlerror();
    lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL)
        return gpuipc_err_set(err, -ENOENT,
                              "no CUDA driver: dlopen libcuda.so.1: %s (install the NVIDIA "
                              "driver; in a container, expose the GPU with --gpus or the "
                              "NVIDIA container toolkit)", dlerror());
    get_version = (get_version_fn)dlsym(lib, "cuDriverGetVersion");
    get_proc = (get_proc_fn)dlsym(lib, "cuGetProcAddress_v2");
    if (get_version == NULL || get_proc == NULL)
        return gpuipc_err_set(err, -ENOTSUP,
                              "driver too old: libcuda.so.1 lacks cuGetProcAddress_v2 (a "
                              "CUDA 12.0 or later driver is needed)");
    if (get_version(&gpuipc_cu.driver_version) != CUDA_SUCCESS)
        return gpuipc_err_set(err, -EIO, "cuDriverGetVersion failed: the driver is broken");
    /* cuGetProcAddress refuses a version newer than the driver. */
    if (gpuipc_cu.driver_version < GPUIPC_CU_MIN_DRIVER)
        return gpuipc_err_set(err, -ENOTSUP,
                              "the driver supports CUDA %d.%d; gpuipc_test needs %d.%d or later: "
                              "update the NVIDIA driver",
                              gpuipc_cu.driver_version / 1000,
                              gpuipc_cu.driver_version % 1000 / 10, GPUIPC_CU_MIN_DRIVER / 1000,
                              GPUIPC_CU_MIN_DRIVER % 1000 / 10);
    for (i = 0; i < sizeof(entries) / sizeof(entries[0]); i++) {
        CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
        CUresult rc = get_proc(entries[i].name, entries[i].slot, entries[i].version,
                               CU_GET_PROC_ADDRESS_DEFAULT, &status);

        if (rc != CUDA_SUCCESS || *entries[i].slot == NULL)
            return gpuipc_err_set(err, -ENOSYS,
                                  "cuGetProcAddress(%s, %d): CUresult %d, status %d: the "
                                  "driver lacks an entry point this build needs",
                                  entries[i].name, entries[i].version, (int)rc, (int)status);
    }
    /* From here on every object this process takes from the driver is
     * counted, for the per-process leak check. */
    gpuipc_cutrack_install(&gpuipc_cu);
    return 0;
}

int gpuipc_cudrv_load(gpuipc_err *err)
{
    static int done;
    static int result;
    static gpuipc_err saved;

    if (!done) {
        result = load_once(&saved);
        done = 1;
    }
    if (result != 0 && err != NULL)
        *err = saved;
    return result;
}

const char *gpuipc_cudrv_error_name(CUresult rc)
{
    static char unknown[32];
    const char *name = NULL;

    if (gpuipc_cu.cuGetErrorName != NULL && gpuipc_cu.cuGetErrorName(rc, &name) == CUDA_SUCCESS &&
        name != NULL)
        return name;
    snprintf(unknown, sizeof(unknown), "CUresult %d", (int)rc);
    return unknown;
}

/* The causes behind errors people meet, with the fix; the README's
 * troubleshooting table says the same. */
static const char *hint_for(const char *call, CUresult rc)
{
    switch (rc) {
    case CUDA_ERROR_NOT_INITIALIZED:
        return "CUDA was initialised before this process was forked, or cuInit failed: no "
               "CUDA call may happen in a process before it forks one that uses CUDA";
    case CUDA_ERROR_NO_DEVICE:
        return "no GPU is visible: check nvidia-smi, CUDA_VISIBLE_DEVICES, and that the "
               "container was given the GPU";
    case CUDA_ERROR_INVALID_DEVICE:
        if (strstr(call, "Import") != NULL || strstr(call, "Map") != NULL)
            return "this process cannot use the producer's GPU: check that both processes "
                   "see it (CUDA_VISIBLE_DEVICES, container device lists)";
        return NULL;
    case CUDA_ERROR_OUT_OF_MEMORY:
        return "not enough free GPU memory: lower --size, or see nvidia-smi for what holds "
               "the GPU";
    case CUDA_ERROR_NOT_PERMITTED:
        return "the driver refused: FABRIC handles need an IMEX channel "
               "(/dev/nvidia-caps-imex-channels/channelN); other handles may need the same "
               "user or more privileges";
    case CUDA_ERROR_NOT_SUPPORTED:
        return "this driver or device does not support the operation (see --list)";
    case CUDA_ERROR_INVALID_VALUE:
        if (strcmp(call, "cuMemMap") == 0)
            return "the handle may be smaller than the offered size, or the size is not a "
                   "multiple of the granularity";
        return NULL;
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_ILLEGAL_ADDRESS:
        return "a kernel or copy faulted and the context is lost; memory unmapped while a "
               "copy was in flight does this (synchronize before cuMemUnmap)";
    case CUDA_ERROR_INVALID_PTX:
    case CUDA_ERROR_UNSUPPORTED_PTX_VERSION:
    case CUDA_ERROR_JIT_COMPILER_NOT_FOUND:
        return "the driver cannot compile the embedded PTX (ISA 6.5, sm_50): the driver is "
               "too old or its JIT compiler is missing";
    case CUDA_ERROR_SYSTEM_DRIVER_MISMATCH:
        return "libcuda and the kernel module are different versions: reload the module or "
               "reboot after a driver update";
    case CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE:
        return "a forward-compatibility libcuda is in use on a GPU that does not support it: "
               "use the driver's own libcuda";
    default:
        return NULL;
    }
}

CUresult gpuipc_cudrv_fail(gpuipc_err *err, const char *call, CUresult rc, const char *file,
                           int line)
{
    const char *hint = hint_for(call, rc);
    const char *base = strrchr(file, '/');

    gpuipc_err_set(err, 0, "%s: %s (%s:%d)%s%s", call, gpuipc_cudrv_error_name(rc),
                   base ? base + 1 : file, line, hint ? "; " : "", hint ? hint : "");
    gpuipc_err_what(err, call, 0, (int)rc);
    return rc;
}

CUresult gpuipc_cudrv_note(CUresult *first, gpuipc_err *err, const char *call, CUresult rc,
                           const char *file, int line)
{
    if (rc != CUDA_SUCCESS && *first == CUDA_SUCCESS)
        *first = gpuipc_cudrv_fail(err, call, rc, file, line);
    return rc;
}

int gpuipc_cudrv_errno(CUresult rc)
{
    switch (rc) {
    case CUDA_SUCCESS:
        return 0;
    case CUDA_ERROR_OUT_OF_MEMORY:
        return -ENOMEM;
    case CUDA_ERROR_NOT_SUPPORTED:
        return -ENOTSUP;
    case CUDA_ERROR_NOT_PERMITTED:
        return -EACCES;
    case CUDA_ERROR_NO_DEVICE:
    case CUDA_ERROR_INVALID_DEVICE:
        return -ENODEV;
    default:
        return -EIO;
    }
}

char *gpuipc_cudrv_version(char *buf, size_t len)
{
    char text[512], module[64] = "";
    FILE *f = fopen("/proc/driver/nvidia/version", "re");
    size_t n = 0;

    if (f != NULL) {
        n = fread(text, 1, sizeof(text) - 1, f);
        fclose(f);
    }
    text[n] = '\0';
    if (gpuipc_units_nvrm_version(text, module, sizeof(module)) == 0)
        snprintf(buf, len, "%s (CUDA %d.%d)", module, gpuipc_cu.driver_version / 1000,
                 gpuipc_cu.driver_version % 1000 / 10);
    else
        snprintf(buf, len, "CUDA %d.%d", gpuipc_cu.driver_version / 1000,
                 gpuipc_cu.driver_version % 1000 / 10);
    return buf;
}
