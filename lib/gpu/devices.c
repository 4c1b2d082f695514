/* SPDX-License-Identifier: Apache-2.0 */
/* devices.c: the driver started once (cuInit, CUDA_DEVICE_MAX_CONNECTIONS),
 * and the devices this process sees, without a context: their count, a
 * device's ordinal from its UUID and back, its name, bus id and compute
 * mode, the device an offer names, and whether and how two devices reach
 * each other. */
#include "gpu/devices.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/pcipath.h"
#include "core/units.h"
#include "gpu/cudrv.h"
#include "gpu/nvml.h"

int gpuipc_gpu_connections_set;

/* How long cuInit took in this process, for the open times. */
static uint64_t init_ns;

void gpuipc_gpu_set_connections(void)
{
    /* One hardware work queue per context instead of the driver's eight:
     * this program runs one stream at a time, and on an H100 a context then
     * starts in about 90 ms instead of 200 (two processes at once) and is
     * released in 45 ms instead of 130. A value the user set is kept. This
     * runs before any thread exists, as setenv() must. */
    if (getenv(GPUIPC_GPU_CONNECTIONS_ENV) == NULL &&
        setenv(GPUIPC_GPU_CONNECTIONS_ENV, "1", 0) == 0)
        gpuipc_gpu_connections_set = 1;
}

int gpuipc_gpu_init(gpuipc_err *err)
{
    static int done;
    static int result;
    static gpuipc_err saved;
    CUresult rc;

    if (done) {
        if (result != 0 && err != NULL)
            *err = saved;
        return result;
    }
    done = 1;
    gpuipc_gpu_set_connections();
    result = gpuipc_cudrv_load(&saved);
    if (result == 0) {
        uint64_t t = gpuipc_clock_ns();

        gpuipc_nvml_start(); /* NVML loads on its own thread meanwhile */
        rc = GPUIPC_CU_CALL(cuInit, 0);
        init_ns = gpuipc_clock_ns() - t;
        if (rc == CUDA_ERROR_NO_DEVICE)
            result = gpuipc_err_set(&saved, -ENODEV, "no CUDA device: cuInit: "
                                    "CUDA_ERROR_NO_DEVICE (check nvidia-smi, "
                                    "CUDA_VISIBLE_DEVICES, and that the container was "
                                    "given the GPU)");
        else if (rc != CUDA_SUCCESS)
            result = gpuipc_cudrv_errno(gpuipc_cudrv_fail(&saved, "cuInit", rc, __FILE__,
                                                          __LINE__));
    }
    if (result != 0 && err != NULL)
        *err = saved;
    return result;
}

int gpuipc_gpu_count(int *count, gpuipc_err *err)
{
    CUresult rc;
    int ret;

    if ((ret = gpuipc_gpu_init(err)) < 0)
        return ret;
    rc = GPUIPC_CU_CALL(cuDeviceGetCount, count);
    if (rc != CUDA_SUCCESS)
        return gpuipc_cudrv_errno(gpuipc_cudrv_fail(err, "cuDeviceGetCount", rc, __FILE__,
                                                    __LINE__));
    return 0;
}

uint64_t gpuipc_gpu_init_ns(void)
{
    return init_ns;
}

int gpuipc_gpu_find_uuid(const uint8_t uuid[GPUIPC_UUID_LEN], int *ordinal, gpuipc_err *err)
{
    char text[48];
    CUdevice dev;
    CUuuid u;
    CUresult rc;
    int n, i, ret;

    if ((ret = gpuipc_gpu_count(&n, err)) < 0)
        return ret;
    for (i = 0; i < n; i++) {
        rc = GPUIPC_CU_CALL(cuDeviceGet, &dev, i);
        if (rc == CUDA_SUCCESS)
            rc = GPUIPC_CU_CALL(cuDeviceGetUuid, &u, dev);
        if (rc != CUDA_SUCCESS)
            return gpuipc_cudrv_errno(gpuipc_cudrv_fail(err, "cuDeviceGetUuid", rc, __FILE__,
                                                        __LINE__));
        if (memcmp(u.bytes, uuid, GPUIPC_UUID_LEN) == 0) {
            *ordinal = i;
            return 0;
        }
    }
    /* As data: no device here has the UUID (ENODEV, from the UUID lookup). */
    return gpuipc_err_sys(err, "cuDeviceGetUuid", ENODEV, "none of the %d GPUs this process "
                          "sees is %s, the producer's (check CUDA_VISIBLE_DEVICES and the "
                          "container's device list: both processes must see it)",
                          n, gpuipc_units_format_uuid(uuid, text, sizeof(text)));
}

void gpuipc_gpu_describe_ordinal(int ordinal, char *name, size_t nlen, char *bus, size_t blen)
{
    CUdevice dev;

    name[0] = bus[0] = '\0';
    if (GPUIPC_CU_CALL(cuDeviceGet, &dev, ordinal) != CUDA_SUCCESS)
        return;
    if (GPUIPC_CU_CALL(cuDeviceGetName, name, (int)nlen, dev) != CUDA_SUCCESS)
        name[0] = '\0';
    if (GPUIPC_CU_CALL(cuDeviceGetPCIBusId, bus, (int)blen, dev) != CUDA_SUCCESS)
        bus[0] = '\0';
}

int gpuipc_gpu_compute_mode(int ordinal)
{
    CUdevice dev;
    int mode = -1;

    if (GPUIPC_CU_CALL(cuDeviceGet, &dev, ordinal) != CUDA_SUCCESS ||
        GPUIPC_CU_CALL(cuDeviceGetAttribute, &mode, CU_DEVICE_ATTRIBUTE_COMPUTE_MODE, dev) !=
            CUDA_SUCCESS)
        return -1;
    return mode;
}

int gpuipc_gpu_uuid_of(int ordinal, uint8_t uuid[GPUIPC_UUID_LEN], gpuipc_err *err)
{
    CUdevice dev;
    CUuuid u;
    CUresult rc;
    int ret;

    if ((ret = gpuipc_gpu_init(err)) < 0)
        return ret;
    rc = GPUIPC_CU_CALL(cuDeviceGet, &dev, ordinal);
    if (rc == CUDA_SUCCESS)
        rc = GPUIPC_CU_CALL(cuDeviceGetUuid, &u, dev);
    if (rc != CUDA_SUCCESS)
        return gpuipc_cudrv_errno(gpuipc_cudrv_fail(err, "cuDeviceGetUuid", rc, __FILE__,
                                                    __LINE__));
    memcpy(uuid, u.bytes, GPUIPC_UUID_LEN);
    return 0;
}

int gpuipc_gpu_check_offer(const gpuipc_scenario *sc, const uint8_t uuid[GPUIPC_UUID_LEN],
                           gpuipc_err *err)
{
    char text[48];

    if (memcmp(uuid, sc->home_uuid, GPUIPC_UUID_LEN) == 0)
        return 0;
    return gpuipc_err_set(err, -EPROTO, "the offer names device %s, BEGIN named another",
                          gpuipc_units_format_uuid(uuid, text, sizeof(text)));
}

void gpuipc_gpu_link_describe(int a, int b, char *buf, size_t len)
{
    uint8_t ua[GPUIPC_UUID_LEN], ub[GPUIPC_UUID_LEN];
    int access = -1, atomics = -1, rank = -1;
    CUdevice da, db;
    gpuipc_err why;
    size_t used;

    buf[0] = '\0';
    if (gpuipc_gpu_uuid_of(a, ua, &why) < 0 || gpuipc_gpu_uuid_of(b, ub, &why) < 0) {
        snprintf(buf, len, "not known: %.300s", why.msg);
        return;
    }
    if (gpuipc_nvml_link(ua, ub, buf, len, &why) < 0)
        snprintf(buf, len, "NVML cannot say (%.300s)", why.msg);
    used = strlen(buf);
    if (GPUIPC_CU_CALL(cuDeviceGet, &da, a) != CUDA_SUCCESS ||
        GPUIPC_CU_CALL(cuDeviceGet, &db, b) != CUDA_SUCCESS || used >= len)
        return;
    GPUIPC_CU_CALL(cuDeviceGetP2PAttribute, &access, CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED, da, db);
    GPUIPC_CU_CALL(cuDeviceGetP2PAttribute, &atomics, CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED,
                                      da, db);
    GPUIPC_CU_CALL(cuDeviceGetP2PAttribute, &rank, CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK, da, db);
    used += (size_t)snprintf(buf + used, len - used, "; the driver: peer access %s, native "
                             "atomics %s, performance rank %d", access < 0 ? "?" : access ? "yes"
                             : "no", atomics < 0 ? "?" : atomics ? "yes" : "no", rank);
    /* Over PCIe, what the host puts in the way of peer traffic. */
    if (strncmp(buf, "NVLink", 6) != 0 && used < len) {
        char bus[2][32], path[768];
        CUdevice d[2] = {da, db};
        int k;

        for (k = 0; k < 2; k++) {
            bus[k][0] = '\0';
            GPUIPC_CU_CALL(cuDeviceGetPCIBusId, bus[k], (int)sizeof(bus[k]), d[k]);
        }
        gpuipc_pci_pair_describe(bus[0], bus[1], path, sizeof(path));
        snprintf(buf + used, len - used, "; PCIe path: %s", path);
    }
}

void gpuipc_gpu_peer_facts(int a, int b, gpuipc_plan_peer *f)
{
    uint8_t ua[GPUIPC_UUID_LEN], ub[GPUIPC_UUID_LEN];
    gpuipc_err why;

    f->can_access = gpuipc_gpu_peer_claimed(b, a);
    f->nvlink = gpuipc_gpu_uuid_of(a, ua, &why) == 0 && gpuipc_gpu_uuid_of(b, ub, &why) == 0
                ? gpuipc_nvml_nvlink(ua, ub) : -1;
}

int gpuipc_gpu_peer_claimed(int a, int b)
{
    CUdevice da, db;
    int access = -1;

    if (GPUIPC_CU_CALL(cuDeviceGet, &da, a) != CUDA_SUCCESS ||
        GPUIPC_CU_CALL(cuDeviceGet, &db, b) != CUDA_SUCCESS ||
        GPUIPC_CU_CALL(cuDeviceGetP2PAttribute, &access,
                       CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED, da, db) != CUDA_SUCCESS)
        return -1;
    return access != 0;
}
