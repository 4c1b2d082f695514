/* SPDX-License-Identifier: Apache-2.0 */
/* list.c: --list: what this machine can do (the driver, each GPU's
 * attributes and granularity, RLIMIT_NOFILE, pidfd_getfd, IMEX, NVML, and
 * whether each mechanism can run here), as text or a JSON document. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "app/cuda/modes.h"
#include "app/cuda/process.h"
#include "app/cuda/registry.h"
#include "app/version.h"
#include "core/clock.h"
#include "core/json.h"
#include "core/proc.h"
#include "core/step.h"
#include "core/units.h"
#include "gpu/cudrv.h"
#include "gpu/gpu.h"
#include "gpu/nvml.h"
#include "mech/imex.h"
#include "mech/imex_ctl.h"
#include "mech/pidfd.h"
#include "run/result_doc.h"
#include "session/role.h"

/* The version of the --list --json report's layout (docs/output.md). It
 * changes whenever a field is renamed, moved, removed or changes type: 2
 * since the report became the "list" member of the run's result document
 * (its version and protocol moved to the document's "program"). */
#define GPUIPC_LIST_SCHEMA_VERSION 2

/* The attributes that decide the mechanisms. MULTICAST_SUPPORTED is only
 * reported: cuMulticastCreate is never called, because on shared NVSwitch
 * hosts multicast can take GPUs out of service for everyone. */
static const struct {
    CUdevice_attribute attr;
    const char *name; /* in the text listing */
    const char *key;  /* in the JSON document */
} list_attrs[] = {
#define ATTR(a) {CU_DEVICE_ATTRIBUTE_##a, #a, #a}
    ATTR(VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED),
    ATTR(HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED),
    ATTR(HANDLE_TYPE_FABRIC_SUPPORTED),
    ATTR(GENERIC_COMPRESSION_SUPPORTED),
    ATTR(MEMORY_POOLS_SUPPORTED),
    ATTR(MEMPOOL_SUPPORTED_HANDLE_TYPES),
    ATTR(UNIFIED_ADDRESSING),
    ATTR(HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED),
    ATTR(HOST_NUMA_ID),
    {CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED, "MULTICAST_SUPPORTED (reported only)",
     "MULTICAST_SUPPORTED"},
#undef ATTR
};

/* Whether a child may take its parent's FDs with pidfd_getfd, as the
 * consumer does in vmm-pidfd: a child forked for the question answers it
 * through a pipe. Returns 0, or -ENOTSUP / another errno with why. Call
 * before cuInit, like every fork here. */
typedef struct pidfd_answer {
    int rc;
    gpuipc_err why;
} pidfd_answer;

/* In the child: takes an FD from its parent. */
static void pidfd_ask(void *arg, void *answer)
{
    pidfd_answer *a = answer;

    (void)arg;
    a->rc = gpuipc_pidfd_probe((int)getppid(), &a->why);
}

static int list_pidfd(gpuipc_err *why)
{
    pidfd_answer a;

    if (gpuipc_proc_ask_child(pidfd_ask, NULL, &a, sizeof(a),
                              gpuipc_clock_deadline(5 * GPUIPC_NS_PER_S), why) < 0)
        return gpuipc_err_set(why, -EIO, "pidfd: the checking process gave no answer");
    a.why.msg[sizeof(a.why.msg) - 1] = '\0';
    if (a.rc < 0)
        gpuipc_err_set(why, a.rc, "%s", a.why.msg);
    return a.rc;
}

/* The granularity of pinned device memory exportable as a POSIX FD. */
static void list_granularity(CUdevice dev, uint64_t *min, uint64_t *rec)
{
    CUmemAllocationProp prop;
    size_t g = 0;

    memset(&prop, 0, sizeof(prop));
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = (int)dev;
    prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    *min = *rec = 0;
    if (GPUIPC_CU_CALL(cuMemGetAllocationGranularity, &g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM) ==
        CUDA_SUCCESS)
        *min = g;
    if (GPUIPC_CU_CALL(cuMemGetAllocationGranularity, &g, &prop,
                                                CU_MEM_ALLOC_GRANULARITY_RECOMMENDED) ==
        CUDA_SUCCESS)
        *rec = g;
}

/* NVML's view of one GPU's modes: a line, or a "modes" object. */
static void list_modes(gpuipc_json *j, const char uuid_bytes[16])
{
    gpuipc_nvml_modes m;
    gpuipc_err why;
    int known = gpuipc_nvml_gpu_modes((const uint8_t *)uuid_bytes, &m, &why) == 0;

    if (j == NULL) {
        printf("  %-46s %s\n", "modes (NVML)", m.text);
        return;
    }
    gpuipc_json_object(j, "modes");
    gpuipc_json_string(j, "nvml_error", known ? NULL : why.msg);
    if (m.mig >= 0)
        gpuipc_json_bool(j, "mig", m.mig);
    if (m.cc >= 0)
        gpuipc_json_bool(j, "confidential_computing", m.cc);
    if (m.fabric_state >= 0) {
        gpuipc_json_int(j, "fabric_state", m.fabric_state);
        gpuipc_json_int(j, "fabric_status", m.fabric_status);
        gpuipc_json_int(j, "fabric_clique", m.clique_id);
        gpuipc_json_int(j, "fabric_health_mask", m.health_mask);
        gpuipc_json_int(j, "fabric_health_summary", m.health_summary);
    }
    gpuipc_json_string(j, "text", m.text);
    gpuipc_json_end(j, '}');
}

/* The link of every ordered pair of GPUs, as NVML and the driver see it. */
static void list_links(gpuipc_json *j, int n)
{
    int a, b;

    if (n < 2)
        return;
    if (j != NULL)
        gpuipc_json_array(j, "links");
    else
        printf("links between GPUs (producer->consumer, as --pairs runs them):\n");
    for (a = 0; a < n; a++)
        for (b = 0; b < n; b++) {
            char text[512];

            if (a == b)
                continue;
            gpuipc_gpu_link_describe(a, b, text, sizeof(text));
            if (j == NULL) {
                printf("  %d->%d  %s\n", a, b, text);
                continue;
            }
            gpuipc_json_object(j, NULL);
            gpuipc_json_int(j, "from", a);
            gpuipc_json_int(j, "to", b);
            gpuipc_json_string(j, "link", text);
            gpuipc_json_end(j, '}');
        }
    if (j != NULL)
        gpuipc_json_end(j, ']');
}

static void list_devices(int device, gpuipc_json *j)
{
    char version[64];
    int n = 0, i;
    size_t a;

    if (gpuipc_gpu_count(&n, NULL) < 0)
        return;
    gpuipc_cudrv_version(version, sizeof(version));
    if (j != NULL) {
        gpuipc_json_string(j, "driver", version);
        gpuipc_json_int(j, "driver_cuda_version", gpuipc_cu.driver_version);
        gpuipc_json_array(j, "devices");
    } else {
        printf("CUDA driver: %s, libcuda.so.1; built with declarations of the CUDA %d.%d "
               "driver API; %d GPU%s\n", version, GPUIPC_CUDA_API_VERSION / 1000,
               GPUIPC_CUDA_API_VERSION % 1000 / 10, n, n == 1 ? "" : "s");
    }
    for (i = 0; i < n; i++) {
        char name[128] = "?", uuid[48] = "?", g1[32], g2[32];
        int major = 0, minor = 0;
        uint64_t gmin, grec;
        CUdevice dev;
        CUuuid u = {{0}};

        if (GPUIPC_CU_CALL(cuDeviceGet, &dev, i) != CUDA_SUCCESS)
            continue;
        GPUIPC_CU_CALL(cuDeviceGetName, name, (int)sizeof(name), dev);
        if (GPUIPC_CU_CALL(cuDeviceGetUuid, &u, dev) == CUDA_SUCCESS)
            gpuipc_units_format_uuid((const uint8_t *)u.bytes, uuid, sizeof(uuid));
        GPUIPC_CU_CALL(cuDeviceGetAttribute, &major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
        GPUIPC_CU_CALL(cuDeviceGetAttribute, &minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
        list_granularity(dev, &gmin, &grec);
        if (j != NULL) {
            gpuipc_json_object(j, NULL);
            gpuipc_json_int(j, "ordinal", i);
            gpuipc_json_string(j, "name", name);
            gpuipc_json_string(j, "uuid", uuid);
            gpuipc_json_int(j, "compute_major", major);
            gpuipc_json_int(j, "compute_minor", minor);
            gpuipc_json_object(j, "granularity_posix_fd");
            gpuipc_json_int(j, "minimum", (long long)gmin);
            gpuipc_json_int(j, "recommended", (long long)grec);
            gpuipc_json_end(j, '}');
            gpuipc_json_object(j, "attributes");
        } else {
            printf("GPU %d%s: %s, %s, compute %d.%d\n", i, i == device ? " (--device)" : "",
                   name, uuid, major, minor);
            printf("  %-46s minimum %s, recommended %s\n", "allocation granularity (POSIX FD)",
                   gpuipc_units_format_size(gmin, g1, sizeof(g1)),
                   gpuipc_units_format_size(grec, g2, sizeof(g2)));
        }
        for (a = 0; a < sizeof(list_attrs) / sizeof(list_attrs[0]); a++) {
            int v = -1;
            int known = GPUIPC_CU_CALL(cuDeviceGetAttribute, &v, list_attrs[a].attr, dev) ==
                        CUDA_SUCCESS;

            if (j != NULL && known)
                gpuipc_json_int(j, list_attrs[a].key, v);
            else if (j != NULL)
                gpuipc_json_string(j, list_attrs[a].key, NULL);
            else if (known)
                printf("  %-46s %d\n", list_attrs[a].name, v);
            else
                printf("  %-46s unknown to this driver\n", list_attrs[a].name);
        }
        if (j != NULL)
            gpuipc_json_end(j, '}'); /* attributes */
        list_modes(j, u.bytes);
        if (j != NULL)
            gpuipc_json_end(j, '}'); /* the device */
    }
    if (j != NULL)
        gpuipc_json_end(j, ']');
    list_links(j, n);
}

/* One line, or one JSON object, for a host capability. */
static void list_verdict(gpuipc_json *j, const char *key, const char *label, int ok,
                         const char *why)
{
    if (j != NULL) {
        gpuipc_json_object(j, key);
        gpuipc_json_bool(j, "works", ok);
        gpuipc_json_string(j, "reason", ok ? NULL : why);
        gpuipc_json_end(j, '}');
    } else {
        printf("host: %s: %s%s\n", label, ok ? "yes" : "no: ", ok ? "" : why);
    }
}

/* What the listing found before any CUDA call, and where it goes. */
typedef struct list_ctx {
    const gpuipc_options *o;
    gpuipc_env *env;
    int pidfd, imex;
    gpuipc_err pidfd_why, imex_why;
    gpuipc_imex_daemon daemon; /* what nvidia-imex-ctl says, where installed */
} list_ctx;

/* The IMEX daemon as nvidia-imex-ctl sees it (mech/imex_ctl.h): a line, or
 * the host's "imex_daemon" object (run/result_doc.h). */
static void list_daemon(gpuipc_json *j, const gpuipc_imex_daemon *d)
{
    char text[2048];

    if (j == NULL) {
        gpuipc_imex_daemon_text(d, text, sizeof(text));
        printf("host: IMEX daemon (nvidia-imex-ctl -q, -N -j): %s\n", text);
        return;
    }
    gpuipc_doc_imex_daemon(j, "imex_daemon", gpuipc_imex_ctl_path(), d);
}

/* The listing, as text on stdout (j NULL) or as members of the object open
 * in j. */
static void list_walk(list_ctx *lc, gpuipc_json *j)
{
    const gpuipc_options *o = lc->o;
    gpuipc_env *env = lc->env;
    gpuipc_err cuda_why, why;
    int cuda = -1, have_driver, pidfd = lc->pidfd, imex = lc->imex, width = 0;
    gpuipc_err pidfd_why = lc->pidfd_why, imex_why = lc->imex_why;
    uint8_t uuid[GPUIPC_UUID_LEN] = {0};
    struct rlimit rl;
    size_t i;

    have_driver = gpuipc_gpu_init(&cuda_why) == 0;
    if (j != NULL) {
        gpuipc_json_bool(j, "cuda", have_driver);
        gpuipc_json_string(j, "cuda_reason", have_driver ? NULL : cuda_why.msg);
    }
    if (have_driver) {
        list_devices(o->device, j);
        cuda = gpuipc_gpu_open(&env->gpu, o->device, &cuda_why);
        if (cuda == 0)
            memcpy(uuid, gpuipc_gpu_uuid(env->gpu), GPUIPC_UUID_LEN);
        else if (j == NULL)
            printf("CUDA: GPU %d not opened: %s\n", o->device, cuda_why.msg);
    } else if (j == NULL) {
        printf("CUDA: not available: %s\n", cuda_why.msg);
    } else {
        gpuipc_json_string(j, "driver", NULL);
        gpuipc_json_int(j, "driver_cuda_version", 0);
        gpuipc_json_array(j, "devices");
        gpuipc_json_end(j, ']');
    }
    if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
        rl.rlim_cur = rl.rlim_max = 0;
    if (j != NULL) {
        gpuipc_json_object(j, "host");
        gpuipc_json_object(j, "rlimit_nofile");
        gpuipc_json_int(j, "soft", rl.rlim_cur == RLIM_INFINITY ? -1 : (long long)rl.rlim_cur);
        gpuipc_json_int(j, "hard", rl.rlim_max == RLIM_INFINITY ? -1 : (long long)rl.rlim_max);
        gpuipc_json_end(j, '}');
    } else {
        printf("host: RLIMIT_NOFILE %llu (hard %llu): receiving a batch of chunk FDs takes "
               "%d free FD numbers below the soft limit\n", (unsigned long long)rl.rlim_cur,
               (unsigned long long)rl.rlim_max, GPUIPC_WIRE_MAX_FDS);
    }
    list_verdict(j, "pidfd_getfd", "pidfd_getfd from a child to its parent", pidfd == 0,
                 pidfd_why.msg);
    list_verdict(j, "imex_channel", "IMEX channel for FABRIC handles", imex == 0, imex_why.msg);
    list_daemon(j, &lc->daemon);
    if (j != NULL) {
        gpuipc_json_end(j, '}');
        gpuipc_json_array(j, "mechanisms");
    } else if (cuda != 0) {
        /* The reason was said once, above; it is not repeated per mechanism. */
        printf("mechanisms (those that need %s cannot run: see above):\n",
               have_driver ? "a GPU" : "the CUDA driver");
    } else {
        printf("mechanisms (probed on GPU %d where they need one):\n", o->device);
    }
    for (i = 0; i < gpuipc_app_nmech; i++)
        if ((int)strlen(gpuipc_app_registry[i]->name) > width)
            width = (int)strlen(gpuipc_app_registry[i]->name);
    for (i = 0; i < gpuipc_app_nmech; i++) {
        const gpuipc_mech *m = gpuipc_app_registry[i];
        const char *text = NULL;
        gpuipc_scenario sc;

        /* Each probe is a scenario of its own, on this GPU, with no peer. */
        gpuipc_role_start(&sc, env, NULL, m, m->name);
        memcpy(sc.uuid, uuid, GPUIPC_UUID_LEN);
        if (m->needs_cuda && cuda != 0)
            text = cuda_why.msg;
        else if (m->probe(&sc, &why) < 0)
            text = why.msg;
        if (j != NULL) {
            gpuipc_json_object(j, NULL);
            gpuipc_json_string(j, "name", m->name);
            gpuipc_json_bool(j, "default", m->by_default);
            gpuipc_json_bool(j, "destructive", m->destructive);
            gpuipc_json_bool(j, "needs_cuda", m->needs_cuda);
            gpuipc_json_bool(j, "across_gpus", m->cross_device);
            gpuipc_json_bool(j, "runs", text == NULL);
            gpuipc_json_string(j, "reason", text);
            gpuipc_json_string(j, "summary", m->summary);
            gpuipc_json_end(j, '}');
            continue;
        }
        printf("  %-*s %-3s %s %s\n", width, m->name, text == NULL ? "yes" : "no",
               m->by_default ? "(default)" : "         ", m->summary);
        if (text != NULL && !(m->needs_cuda && cuda != 0))
            printf("  %*s %s\n", width, "", text);
    }
    gpuipc_gpu_close(env->gpu);
    env->gpu = NULL;
    if (j != NULL)
        gpuipc_json_end(j, ']');
}

/* --list's run: the environment its probes run in, and what they look at. */
typedef struct list_run {
    gpuipc_env env;
    list_ctx lc;
} list_run;

/* --json: the listing as the document's "list" member. */
static void list_payload(gpuipc_json *j, const char *key, const void *arg)
{
    list_ctx *lc = &((list_run *)(uintptr_t)arg)->lc;

    gpuipc_json_object(j, key);
    gpuipc_json_string(j, "schema", "gpuipc_test/capabilities");
    gpuipc_json_int(j, "schema_version", GPUIPC_LIST_SCHEMA_VERSION);
    gpuipc_json_int(j, "cuda_headers", GPUIPC_CUDA_API_VERSION);
    list_walk(lc, j);
    gpuipc_json_end(j, '}');
}

int gpuipc_app_list(const gpuipc_options *o, const gpuipc_inject *inject, uint64_t t0)
{
    list_run *lr = calloc(1, sizeof(*lr));
    gpuipc_err why;

    if (lr == NULL) {
        gpuipc_log_say("--list: out of memory");
        return GPUIPC_FAIL;
    }
    gpuipc_app_env_init(&lr->env, GPUIPC_ROLE_PRODUCER, o, inject, t0);
    /* The listing is the output; probes keep their step-log lines to themselves. */
    lr->env.log.level = GPUIPC_LOG_QUIET;
    lr->lc.o = o;
    lr->lc.env = &lr->env;
    lr->lc.pidfd = list_pidfd(&lr->lc.pidfd_why); /* forks: before any CUDA call */
    lr->lc.imex = gpuipc_imex_check(GPUIPC_IMEX_DEVICES, GPUIPC_IMEX_CHANNELS, &lr->lc.imex_why);
    /* Where the tool is installed: its own questions, each within 1 s. */
    if (gpuipc_imex_daemon_ask(NULL, 1000, &lr->lc.daemon, &why) < 0) {
        lr->lc.daemon.tool = 0;
        lr->lc.daemon.nnodes = -1;
        snprintf(lr->lc.daemon.error, sizeof(lr->lc.daemon.error), "%.190s", why.msg);
    }
    if (o->json) {
        /* main writes the document, and the listing into it, at the end
         * (the writer holds lr until then); the driver is started first
         * for the document's machine. */
        gpuipc_gpu_init(NULL);
        gpuipc_doc_set_payload("list", list_payload, lr, free);
        return GPUIPC_PASS;
    }
    printf("gpuipc_test %s (commit %s), protocol %d\n", GPUIPC_VERSION, gpuipc_version_commit(),
           GPUIPC_WIRE_VERSION);
    list_walk(&lr->lc, NULL);
    free(lr);
    return GPUIPC_PASS;
}
