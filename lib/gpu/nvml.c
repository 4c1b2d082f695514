/* SPDX-License-Identifier: Apache-2.0 */
/* nvml.c: what the driver's management library says, loaded with dlopen():
 * per-process GPU memory (the leak check's second opinion), a GPU's modes
 * (MIG, confidential computing, the GPU fabric) and the link between two
 * GPUs (NVLink or PCIe).
 *
 * The project declares the few NVML types and calls it uses, from NVML's
 * documented API (the driver ships libnvidia-ml.so.1, but no toolkit ships
 * nvml.h everywhere): nvmlInit_v2, nvmlDeviceGetCount_v2,
 * nvmlDeviceGetHandleByIndex_v2, nvmlDeviceGetComputeRunningProcesses_v3
 * (or _v2, the same layout) and nvmlErrorString; and, each optional (an
 * older driver lacks some, and the fact is then "not reported"):
 * nvmlDeviceGetHandleByUUID, nvmlDeviceGetMigMode,
 * nvmlSystemGetConfComputeState, nvmlDeviceGetGpuFabricInfoV (version 3,
 * with the health summary, else version 2),
 * nvmlDeviceGetNvLinkState, nvmlDeviceGetNvLinkVersion,
 * nvmlDeviceGetP2PStatus, nvmlDeviceGetTopologyCommonAncestor,
 * nvmlDeviceGetCurrPcieLinkGeneration and nvmlDeviceGetCurrPcieLinkWidth.
 * NVML stays loaded and started until the process exits, like the CUDA
 * driver. */
#include "gpu/nvml.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/fabric.h"
#include "core/proc.h"
#include "core/units.h"

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

/* nvmlConfComputeSystemState_t. */
typedef struct nvml_cc_state {
    unsigned int environment;
    unsigned int cc_feature; /* NVML_CC_SYSTEM_FEATURE_ENABLED: 1 */
    unsigned int dev_tools_mode;
} nvml_cc_state;

/* nvmlGpuFabricInfo_v3_t, asked for by its version nvmlGpuFabricInfo_v3:
 * its size, with the version number in the top byte; version 2 is the same
 * less the last member (an older driver refuses version 3). */
typedef struct nvml_fabric_info {
    unsigned int version;
    unsigned char cluster_uuid[16];
    nvml_return status;
    unsigned int clique_id;
    unsigned char state; /* nvmlGpuFabricState_t */
    unsigned int health_mask;
    unsigned char health_summary; /* version 3 only */
} nvml_fabric_info;
#define NVML_FABRIC_INFO_V3 ((unsigned int)sizeof(nvml_fabric_info) | (3u << 24))
#define NVML_FABRIC_INFO_V2                                                                  \
    ((unsigned int)(offsetof(nvml_fabric_info, health_mask) + sizeof(unsigned int)) | (2u << 24))

#define NVML_NVLINK_MAX_LINKS 18
#define NVML_P2P_CAPS_INDEX_READ 0
#define NVML_P2P_CAPS_INDEX_NVLINK 2
#define NVML_P2P_STATUS_OK 0

static struct {
    nvml_return (*init)(void);
    nvml_return (*count)(unsigned int *n);
    nvml_return (*handle)(unsigned int index, nvml_device *dev);
    nvml_return (*processes)(nvml_device dev, unsigned int *n, nvml_process *infos);
    const char *(*error_string)(nvml_return rc);
    nvml_return (*by_uuid)(const char *uuid, nvml_device *dev);
    nvml_return (*mig_mode)(nvml_device dev, unsigned int *current, unsigned int *pending);
    nvml_return (*cc_state)(nvml_cc_state *state);
    nvml_return (*fabric)(nvml_device dev, nvml_fabric_info *info);
    nvml_return (*link_state)(nvml_device dev, unsigned int link, int *active);
    nvml_return (*link_version)(nvml_device dev, unsigned int link, unsigned int *version);
    nvml_return (*p2p_status)(nvml_device a, nvml_device b, int index, int *status);
    nvml_return (*ancestor)(nvml_device a, nvml_device b, int *level);
    nvml_return (*pcie_gen)(nvml_device dev, unsigned int *gen);
    nvml_return (*pcie_width)(nvml_device dev, unsigned int *width);
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
    void *lib;
    unsigned int i;
    nvml_return rc;

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
    /* The device facts: each may be missing from an older driver, and is
     * then reported as not known. */
    *(void **)&nv.by_uuid = dlsym(lib, "nvmlDeviceGetHandleByUUID");
    *(void **)&nv.mig_mode = dlsym(lib, "nvmlDeviceGetMigMode");
    *(void **)&nv.cc_state = dlsym(lib, "nvmlSystemGetConfComputeState");
    *(void **)&nv.fabric = dlsym(lib, "nvmlDeviceGetGpuFabricInfoV");
    *(void **)&nv.link_state = dlsym(lib, "nvmlDeviceGetNvLinkState");
    *(void **)&nv.link_version = dlsym(lib, "nvmlDeviceGetNvLinkVersion");
    *(void **)&nv.p2p_status = dlsym(lib, "nvmlDeviceGetP2PStatus");
    *(void **)&nv.ancestor = dlsym(lib, "nvmlDeviceGetTopologyCommonAncestor");
    *(void **)&nv.pcie_gen = dlsym(lib, "nvmlDeviceGetCurrPcieLinkGeneration");
    *(void **)&nv.pcie_width = dlsym(lib, "nvmlDeviceGetCurrPcieLinkWidth");
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

/* NVML's start, once per process: by the first call that needs it, or by a
 * thread of its own (gpuipc_nvml_start) while the CUDA driver starts. */
static struct {
    int state; /* 0 not begun, 1 its thread runs, 2 done */
    pid_t pid; /* the process whose thread it is: a child forked meanwhile has none */
    int result;
    gpuipc_err saved;
    pthread_t thread;
} boot;

static void *boot_thread(void *arg)
{
    (void)arg;
    boot.result = load(&boot.saved);
    return NULL;
}

/* Waits for the thread, if it runs; called by this process's main thread
 * only. */
static void boot_join(void)
{
    if (boot.state == 1 && boot.pid != getpid())
        boot.state = 0; /* forked while it ran: load it here */
    if (boot.state == 1) {
        pthread_join(boot.thread, NULL);
        boot.state = 2;
    }
}

static int host_pids(gpuipc_err *why);

void gpuipc_nvml_start(void)
{
    gpuipc_err why;

    /* Only where the leak check will ask NVML for this process's memory (its
     * first use in most runs); elsewhere NVML loads when first needed. */
    if (boot.state != 0 || host_pids(&why) < 0)
        return;
    if (pthread_create(&boot.thread, NULL, boot_thread, NULL) != 0)
        return; /* ready() will load it on the main thread */
    boot.state = 1;
    boot.pid = getpid();
}

int gpuipc_nvml_finish(uint64_t wait_ns)
{
    struct timespec until;

    if (boot.state != 1 || boot.pid != getpid())
        return 0;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += (time_t)(wait_ns / 1000000000ull);
    until.tv_nsec += (long)(wait_ns % 1000000000ull);
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    if (pthread_timedjoin_np(boot.thread, NULL, &until) != 0)
        return -ETIMEDOUT;
    boot.state = 2;
    return 0;
}

/* Loads NVML once; returns 0 or the remembered failure, with why. */
static int ready(gpuipc_err *why)
{
    boot_join();
    if (boot.state == 0) {
        boot.result = load(&boot.saved);
        boot.state = 2;
    }
    if (boot.result < 0 && why != NULL)
        *why = boot.saved;
    return boot.result;
}

/* NVML's process lists carry host PIDs: in another PID namespace this
 * process's own PID would match somebody else's, or nobody's. Returns 0 in
 * the host's PID namespace, or -ENOTSUP with why. */
static int host_pids(gpuipc_err *why)
{
    uint64_t ns = 0;

    if (gpuipc_proc_pid_ns(&ns, why) < 0)
        return gpuipc_err_set(why, -ENOTSUP, "the PID namespace cannot be read (%.200s), so "
                              "NVML's host PIDs cannot be matched to this process", why->msg);
    if (ns != GPUIPC_NVML_HOST_PID_NS)
        return gpuipc_err_set(why, -ENOTSUP, "this process runs in PID namespace pid:[%llu], "
                              "not the host's: NVML lists processes by host PID, so it cannot "
                              "tell which memory is this process's", (unsigned long long)ns);
    return 0;
}

int gpuipc_nvml_pid_bytes(pid_t pid, uint64_t *bytes, int *listed, gpuipc_err *why)
{
    unsigned int d;
    uint64_t sum = 0;
    int n, i, rc;

    *listed = 0;
    if ((rc = host_pids(why)) < 0 || (rc = ready(why)) < 0)
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

/* The handle of the GPU with this CUDA UUID (NVML's own strings spell it
 * "GPU-..." as gpuipc_units_format_uuid does). */
static int handle_of(const uint8_t uuid[16], nvml_device *dev, gpuipc_err *why)
{
    char text[48];
    nvml_return rc;
    int ret;

    if ((ret = ready(why)) < 0)
        return ret;
    if (nv.by_uuid == NULL)
        return gpuipc_err_set(why, -ENOTSUP, "libnvidia-ml.so.1 lacks "
                              "nvmlDeviceGetHandleByUUID");
    gpuipc_units_format_uuid(uuid, text, sizeof(text));
    if ((rc = nv.by_uuid(text, dev)) != NVML_SUCCESS)
        return gpuipc_err_set(why, -ENOTSUP, "nvmlDeviceGetHandleByUUID(%s): %s", text,
                              nvml_error(rc));
    return 0;
}

/* Asks dev's fabric info into fi, as version 3, else version 2 (whose
 * summary is then -1). Returns NVML's code. */
static nvml_return fabric_info(nvml_device dev, nvml_fabric_info *fi, int *summary)
{
    nvml_return rc;

    memset(fi, 0, sizeof(*fi));
    fi->version = NVML_FABRIC_INFO_V3;
    if ((rc = nv.fabric(dev, fi)) == NVML_SUCCESS) {
        *summary = fi->health_summary;
        return rc;
    }
    memset(fi, 0, sizeof(*fi));
    fi->version = NVML_FABRIC_INFO_V2;
    *summary = -1;
    return nv.fabric(dev, fi);
}

int gpuipc_nvml_gpu_modes(const uint8_t uuid[16], gpuipc_nvml_modes *m, gpuipc_err *why)
{
    unsigned int cur, pending;
    nvml_device dev;
    nvml_cc_state cc;
    nvml_fabric_info fi;
    size_t used;
    int rc, summary;

    memset(m, 0, sizeof(*m));
    m->mig = m->cc = m->fabric_state = -1;
    if ((rc = handle_of(uuid, &dev, why)) < 0) {
        snprintf(m->text, sizeof(m->text), "not known: %.200s", why->msg);
        return rc;
    }
    if (nv.mig_mode != NULL && nv.mig_mode(dev, &cur, &pending) == NVML_SUCCESS) {
        m->mig = cur == 1;
        m->mig_pending = pending == 1;
    }
    memset(&cc, 0, sizeof(cc));
    if (nv.cc_state != NULL && nv.cc_state(&cc) == NVML_SUCCESS)
        m->cc = cc.cc_feature == 1;
    m->health_summary = -1;
    if (nv.fabric != NULL && fabric_info(dev, &fi, &summary) == NVML_SUCCESS) {
        m->fabric_state = fi.state;
        m->health_summary = summary;
        m->fabric_status = fi.status;
        m->clique_id = fi.clique_id;
        m->health_mask = fi.health_mask;
        memcpy(m->cluster_uuid, fi.cluster_uuid, sizeof(m->cluster_uuid));
    }
    used = (size_t)snprintf(m->text, sizeof(m->text), "MIG %s%s, confidential computing %s, "
                            "GPU fabric %s", m->mig < 0 ? "not reported" : m->mig ? "on" : "off",
                            m->mig_pending != (m->mig == 1) && m->mig >= 0 ? " (a change is "
                            "pending a GPU reset)" : "",
                            m->cc < 0 ? "not reported" : m->cc ? "on" : "off",
                            m->fabric_state < 0 ? "not reported"
                                                : gpuipc_fabric_state_name(m->fabric_state));
    if (m->fabric_state == 3 && used < sizeof(m->text)) {
        char cluster[48], faults[160];

        gpuipc_fabric_health_faults(m->health_mask, m->health_summary, faults, sizeof(faults));
        snprintf(m->text + used, sizeof(m->text) - used, " (%s, cluster %s, clique %u, "
                 "health mask 0x%x%s%s, summary %s)",
                 m->fabric_status == NVML_SUCCESS ? "status success"
                 : nvml_error((nvml_return)m->fabric_status),
                 gpuipc_units_format_uuid(m->cluster_uuid, cluster, sizeof(cluster)) + 4,
                 m->clique_id, m->health_mask, faults[0] ? ": " : "", faults,
                 gpuipc_fabric_summary_name(m->health_summary));
    }
    return 0;
}

int gpuipc_nvml_fabric_states(char *buf, size_t len, gpuipc_err *why)
{
    size_t used = 0;
    unsigned int d;
    int rc;

    buf[0] = '\0';
    if ((rc = ready(why)) < 0)
        return rc;
    if (nv.fabric == NULL)
        return gpuipc_err_set(why, -ENOTSUP, "libnvidia-ml.so.1 lacks "
                              "nvmlDeviceGetGpuFabricInfoV");
    for (d = 0; d < nv.ndev && used < len; d++) {
        nvml_fabric_info fi;
        nvml_return r;
        int summary;

        r = fabric_info(nv.dev[d], &fi, &summary);
        used += (size_t)snprintf(buf + used, len - used, "%sGPU %u %s", d ? ", " : "", d,
                                 r != NVML_SUCCESS ? nvml_error(r)
                                 : fi.state == 3 && fi.status != NVML_SUCCESS
                                     ? "completed with an error"
                                     : gpuipc_fabric_state_name((int)fi.state));
    }
    return 0;
}

/* NVLink's version as NVML numbers it (nvmlNvlinkVersion_t: 1 is 1.0, 2 is
 * 2.0, 3 is 2.2, 4 is 3.0, 5 is 3.1, 6 is 4.0, 7 is 5.0). */
static const char *nvlink_version_name(unsigned int v)
{
    static const char *const names[] = {"?", "1.0", "2.0", "2.2", "3.0", "3.1", "4.0", "5.0"};

    return v < sizeof(names) / sizeof(names[0]) ? names[v] : "?";
}

static const char *ancestor_name(int level)
{
    switch (level) {
    case 0:
        return "on one board";
    case 10:
        return "behind one PCIe switch";
    case 20:
        return "behind several PCIe switches";
    case 30:
        return "behind one host bridge";
    case 40:
        return "on one NUMA node, across host bridges";
    case 50:
        return "across NUMA nodes (SMP interconnect)";
    default:
        return "at an unknown distance";
    }
}

int gpuipc_nvml_nvlink(const uint8_t a[16], const uint8_t b[16])
{
    nvml_device da, db;
    gpuipc_err why;
    int status = -1;

    if (handle_of(a, &da, &why) < 0 || handle_of(b, &db, &why) < 0 || nv.p2p_status == NULL ||
        nv.p2p_status(da, db, NVML_P2P_CAPS_INDEX_NVLINK, &status) != NVML_SUCCESS)
        return -1;
    return status == NVML_P2P_STATUS_OK;
}

int gpuipc_nvml_link(const uint8_t a[16], const uint8_t b[16], char *buf, size_t len,
                     gpuipc_err *why)
{
    nvml_device da, db;
    unsigned int link, links = 0, version = 0, gen = 0, width = 0;
    int nvlink = -1, p2p = -1, level = -1, rc;

    buf[0] = '\0';
    if ((rc = handle_of(a, &da, why)) < 0 || (rc = handle_of(b, &db, why)) < 0)
        return rc;
    if (nv.p2p_status != NULL) {
        if (nv.p2p_status(da, db, NVML_P2P_CAPS_INDEX_NVLINK, &nvlink) != NVML_SUCCESS)
            nvlink = -1;
        if (nv.p2p_status(da, db, NVML_P2P_CAPS_INDEX_READ, &p2p) != NVML_SUCCESS)
            p2p = -1;
    }
    if (nvlink == NVML_P2P_STATUS_OK) {
        for (link = 0; nv.link_state != NULL && link < NVML_NVLINK_MAX_LINKS; link++) {
            int active = 0;

            if (nv.link_state(da, link, &active) != NVML_SUCCESS || !active)
                continue;
            links++;
            if (version == 0 && nv.link_version != NULL &&
                nv.link_version(da, link, &version) != NVML_SUCCESS)
                version = 0;
        }
        snprintf(buf, len, "NVLink %s (%u link%s of the first GPU active; NVML version code "
                 "%u)", nvlink_version_name(version), links, links == 1 ? "" : "s", version);
        return 0;
    }
    if (nv.ancestor == NULL || nv.ancestor(da, db, &level) != NVML_SUCCESS)
        level = -1;
    if (nv.pcie_gen == NULL || nv.pcie_gen(da, &gen) != NVML_SUCCESS)
        gen = 0;
    if (nv.pcie_width == NULL || nv.pcie_width(da, &width) != NVML_SUCCESS)
        width = 0;
    snprintf(buf, len, "PCIe%s%.0u%s%.0u, %s; peer-to-peer reads %s by NVML", gen ? " Gen" : "",
             gen, width ? " x" : "", width, ancestor_name(level),
             p2p == NVML_P2P_STATUS_OK ? "supported" : p2p < 0 ? "not reported"
                                                                 : "not supported");
    return 0;
}
