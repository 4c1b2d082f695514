/* SPDX-License-Identifier: Apache-2.0 */
/* gpu.c: a device as a role holds it: a device opened (its primary context,
 * its kernels, their self-test) and kept open for the run, the switch
 * between open devices, the peer check of the consumer's device, and
 * closing them. The driver is started once by devices.c. */
#include "gpu/gpu.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "gpu/cudrv.h"
#include "gpu/kernels.h"
#include "gpu/nvml.h"
#include "gpu/selftest.h"
#include "core/clock.h"
#include "core/proc.h"
#include "core/units.h"
#include "core/watch.h"

/* Devices open in this process, for gpuipc_gpu_process_bytes(), and each
 * of them, kept open until gpuipc_gpu_close_all: a run over several GPUs
 * switches between their contexts instead of opening one again. Under the
 * lock, since gpuipc_gpu_open_all opens them on threads of their own. */
static int open_count;
static struct gpuipc_gpu *opened[GPUIPC_GPU_OPEN_MAX];
static pthread_mutex_t opened_lock = PTHREAD_MUTEX_INITIALIZER;

/* gpuipc_gpu_attach_uuid's: two threads that attach one device open it
 * once. */
static pthread_mutex_t attach_lock = PTHREAD_MUTEX_INITIALIZER;

/* gpuipc_gpu_hold: while set, gpuipc_gpu_close_all leaves the devices open. */
static atomic_int hold_open;

/* The result words a thread's kernels write on every device (a rank's two
 * sessions of a phase share its GPU, each on a thread of its own). */
static __thread unsigned result_slot;

struct gpuipc_gpu {
    CUdevice dev;
    int ordinal;
    CUcontext ctx;
    char name[128];
    uint8_t uuid[GPUIPC_UUID_LEN];
    gpuipc_kernels kernels;
    CUdeviceptr result; /* the kernels' result words */
    char self_test[320]; /* what the self-test proved */
    char open_times[256]; /* where the time to open it went */
};

int gpuipc_gpu_bare_floor(int ordinal, gpuipc_gpu_floor *f, gpuipc_err *err)
{
    CUdevice *held = NULL; /* the devices whose primary context is retained */
    CUcontext ctx;
    CUdevice dev;
    CUresult rc = CUDA_SUCCESS;
    uint64_t t, ns;
    int n = 0, nheld = 0, k, g = -1, ret;

    memset(f, 0, sizeof(*f));
    gpuipc_gpu_set_connections();
    if ((ret = gpuipc_cudrv_load(err)) < 0)
        return ret;
    t = gpuipc_clock_ns();
    GPUIPC_CU_GOTO(rc, err, out, cuInit, 0);
    f->init_ns = gpuipc_clock_ns() - t;
    GPUIPC_CU_GOTO(rc, err, out, cuDeviceGetCount, &n);
    if (ordinal < 0 || ordinal >= n)
        return gpuipc_err_set(err, -ENODEV, "GPU %d: the driver shows %d GPU%s", ordinal, n,
                              n == 1 ? "" : "s");
    if ((held = calloc((size_t)n, sizeof(*held))) == NULL)
        return gpuipc_err_set(err, -ENOMEM, "out of memory for %d GPUs", n);
    for (k = 0; k < n; k++) {
        /* GPU ordinal first (the peak RSS is its context's alone), then the
         * others in order. */
        g = k == 0 ? ordinal : k - 1 < ordinal ? k - 1 : k;
        GPUIPC_CU_GOTO(rc, err, out_release, cuDeviceGet, &dev, g);
        t = gpuipc_clock_ns();
        GPUIPC_CU_GOTO(rc, err, out_release, cuDevicePrimaryCtxRetain, &ctx, dev);
        held[nheld++] = dev;
        GPUIPC_CU_GOTO(rc, err, out_release, cuCtxSetCurrent, ctx);
        ns = gpuipc_clock_ns() - t;
        if (g < GPUIPC_GPU_FLOOR_GPUS)
            f->ctx_ns[g] = ns;
        f->ctx_sum_ns += ns;
        if (k == 0)
            f->hwm = gpuipc_proc_hwm();
    }
    f->ngpus = n;
out_release:
    /* No context stays current or retained, whatever failed above. */
    GPUIPC_CU_CALL(cuCtxSetCurrent, NULL);
    while (nheld > 0)
        GPUIPC_CU_CALL(cuDevicePrimaryCtxRelease, held[--nheld]);
    free(held);
    if (rc != CUDA_SUCCESS)
        gpuipc_err_prefix(err, "GPU %d", g);
out:
    return gpuipc_cudrv_errno(rc);
}

/* Counts gpu as open and keeps it in the table of open devices. */
static void keep_open(gpuipc_gpu *gpu)
{
    int i;

    pthread_mutex_lock(&opened_lock);
    open_count++;
    for (i = 0; i < GPUIPC_GPU_OPEN_MAX; i++)
        if (opened[i] == NULL) {
            opened[i] = gpu;
            break;
        }
    pthread_mutex_unlock(&opened_lock);
}

static int open_device(gpuipc_gpu **out, CUdevice dev, int ordinal, gpuipc_err *err)
{
    uint64_t t[4], hwm_ctx;
    gpuipc_gpu *gpu;
    CUuuid uuid;
    CUresult rc;
    int sms = 0;

    gpu = calloc(1, sizeof(*gpu));
    if (gpu == NULL)
        return gpuipc_err_set(err, -ENOMEM, "out of memory");
    gpu->dev = dev;
    gpu->ordinal = ordinal;
    GPUIPC_CU_GOTO(rc, err, out_free, cuDeviceGetName, gpu->name, (int)sizeof(gpu->name), dev);
    GPUIPC_CU_GOTO(rc, err, out_free, cuDeviceGetUuid, &uuid, dev);
    memcpy(gpu->uuid, uuid.bytes, GPUIPC_UUID_LEN);
    GPUIPC_CU_GOTO(rc, err, out_free, cuDeviceGetAttribute, &sms,
                   CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev);
    t[0] = gpuipc_clock_ns();
    GPUIPC_CU_GOTO(rc, err, out_free, cuDevicePrimaryCtxRetain, &gpu->ctx, dev);
    GPUIPC_CU_GOTO(rc, err, out_release, cuCtxSetCurrent, gpu->ctx);
    t[1] = gpuipc_clock_ns();
    hwm_ctx = gpuipc_proc_hwm();
    if (gpuipc_kernels_load(&gpu->kernels, sms, err) != CUDA_SUCCESS) {
        rc = CUDA_ERROR_INVALID_PTX;
        goto out_release;
    }
    GPUIPC_CU_GOTO(rc, err, out_unload, cuMemAlloc, &gpu->result,
                   GPUIPC_GPU_RESULT_SLOTS * GPUIPC_KERNELS_RESULT_WORDS * sizeof(uint64_t));
    t[2] = gpuipc_clock_ns();
    if (gpuipc_selftest_run(&gpu->kernels, gpu->result, gpu->self_test,
                            sizeof(gpu->self_test), err) != 0) {
        rc = CUDA_ERROR_UNKNOWN;
        goto out_result;
    }
    t[3] = gpuipc_clock_ns();
    snprintf(gpu->open_times, sizeof(gpu->open_times), "cuInit %.1f ms (once per process), "
             "primary context %.1f ms, kernels loaded %.1f ms, self-test %.1f ms; peak RSS "
             "%.1f MiB with the context, %.1f MiB after the kernels and the self-test",
             (double)gpuipc_gpu_init_ns() / 1e6, (double)(t[1] - t[0]) / 1e6,
             (double)(t[2] - t[1]) / 1e6, (double)(t[3] - t[2]) / 1e6, (double)hwm_ctx / 1048576.0,
             (double)gpuipc_proc_hwm() / 1048576.0);
    *out = gpu;
    keep_open(gpu);
    return 0;

out_result:
    GPUIPC_CU_CALL(cuMemFree, gpu->result);
out_unload:
    gpuipc_kernels_unload(&gpu->kernels);
out_release:
    GPUIPC_CU_CALL(cuDevicePrimaryCtxRelease, dev);
out_free:
    free(gpu);
    if (rc == CUDA_ERROR_OPERATING_SYSTEM && err != NULL) {
        struct rlimit rl;

        /* The driver opens files of its own for a context (seen with
         * ulimit -n 40 on a machine of two GPUs). */
        if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
            rl.rlim_cur < 1024) {
            size_t used = strlen(err->msg);

            snprintf(err->msg + used, sizeof(err->msg) - used, " (RLIMIT_NOFILE is %llu: the "
                     "driver needs FDs of its own for a context; ulimit -n 1024 or more)",
                     (unsigned long long)rl.rlim_cur);
        }
    }
    gpuipc_err_prefix(err, "opening GPU %d", ordinal);
    return rc == CUDA_ERROR_UNKNOWN ? -EIO : gpuipc_cudrv_errno(rc);
}

int gpuipc_gpu_open(gpuipc_gpu **out, int ordinal, gpuipc_err *err)
{
    CUdevice dev;
    CUresult rc;
    int n, ret;

    if ((ret = gpuipc_gpu_count(&n, err)) < 0)
        return ret;
    if (ordinal < 0 || ordinal >= n)
        return gpuipc_err_set(err, -ENODEV, "no GPU %d: %d visible (ordinals 0 to %d)",
                              ordinal, n, n - 1);
    rc = GPUIPC_CU_CALL(cuDeviceGet, &dev, ordinal);
    if (rc != CUDA_SUCCESS)
        return gpuipc_cudrv_errno(gpuipc_cudrv_fail(err, "cuDeviceGet", rc, __FILE__,
                                                    __LINE__));
    return open_device(out, dev, ordinal, err);
}

int gpuipc_gpu_open_uuid(gpuipc_gpu **out, const uint8_t uuid[GPUIPC_UUID_LEN],
                         gpuipc_err *err)
{
    CUdevice dev;
    CUresult rc;
    int ordinal, ret;

    if ((ret = gpuipc_gpu_find_uuid(uuid, &ordinal, err)) < 0)
        return ret;
    rc = GPUIPC_CU_CALL(cuDeviceGet, &dev, ordinal);
    if (rc != CUDA_SUCCESS)
        return gpuipc_cudrv_errno(gpuipc_cudrv_fail(err, "cuDeviceGet", rc, __FILE__,
                                                    __LINE__));
    return open_device(out, dev, ordinal, err);
}

void gpuipc_gpu_close(gpuipc_gpu *gpu)
{
    int i;

    if (gpu == NULL)
        return;
    pthread_mutex_lock(&opened_lock);
    for (i = 0; i < GPUIPC_GPU_OPEN_MAX; i++)
        if (opened[i] == gpu)
            opened[i] = NULL;
    open_count--;
    pthread_mutex_unlock(&opened_lock);
    GPUIPC_CU_CALL(cuCtxSetCurrent, gpu->ctx);
    GPUIPC_CU_CALL(cuCtxSynchronize, );
    GPUIPC_CU_CALL(cuMemFree, gpu->result);
    gpuipc_kernels_unload(&gpu->kernels);
    GPUIPC_CU_CALL(cuCtxSetCurrent, NULL);
    GPUIPC_CU_CALL(cuDevicePrimaryCtxRelease, gpu->dev);
    free(gpu);
}

static void *close_one(void *gpu)
{
    gpuipc_watch_quiet(); /* the run's thread says what this one does */
    gpuipc_gpu_close(gpu);
    return NULL;
}

void gpuipc_gpu_close_all(void)
{
    gpuipc_gpu *gpus[GPUIPC_GPU_OPEN_MAX];
    pthread_t threads[GPUIPC_GPU_OPEN_MAX];
    int started[GPUIPC_GPU_OPEN_MAX];
    sigset_t all, old;
    int i, n = 0;

    if (atomic_load(&hold_open))
        return;
    pthread_mutex_lock(&opened_lock);
    for (i = 0; i < GPUIPC_GPU_OPEN_MAX; i++)
        if (opened[i] != NULL)
            gpus[n++] = opened[i];
    pthread_mutex_unlock(&opened_lock);
    /* Each context ends on a thread of its own, together (a release takes
     * tens of ms); the last here. The threads take no signal. */
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    for (i = 0; i + 1 < n; i++)
        started[i] = pthread_create(&threads[i], NULL, close_one, gpus[i]) == 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (n > 0)
        gpuipc_gpu_close(gpus[n - 1]);
    gpuipc_watch_call("cuDevicePrimaryCtxRelease (the GPUs' threads)");
    for (i = 0; i + 1 < n; i++) {
        if (started[i])
            pthread_join(threads[i], NULL);
        else
            gpuipc_gpu_close(gpus[i]);
    }
    gpuipc_watch_call(NULL);
}

/* The open device with uuid, or NULL. */
static gpuipc_gpu *find_open(const uint8_t uuid[GPUIPC_UUID_LEN])
{
    gpuipc_gpu *found = NULL;
    int i;

    pthread_mutex_lock(&opened_lock);
    for (i = 0; i < GPUIPC_GPU_OPEN_MAX && found == NULL; i++)
        if (opened[i] != NULL && memcmp(opened[i]->uuid, uuid, GPUIPC_UUID_LEN) == 0)
            found = opened[i];
    pthread_mutex_unlock(&opened_lock);
    return found;
}

/* One device of gpuipc_gpu_open_all, on a thread of its own. */
typedef struct opener {
    int ordinal;
    pthread_t thread;
    int started, rc;
    int on_thread; /* set before the thread starts: it is a helper */
    gpuipc_err err;
} opener;

static void *open_one(void *arg)
{
    opener *op = arg;
    gpuipc_gpu *gpu;

    if (op->on_thread)
        gpuipc_watch_quiet(); /* the run's thread says what this one does */
    op->rc = gpuipc_gpu_open(&gpu, op->ordinal, &op->err);
    /* The context was this thread's current one; it goes with the thread. */
    if (op->rc == 0)
        GPUIPC_CU_CALL(cuCtxSetCurrent, NULL);
    return NULL;
}

int gpuipc_gpu_open_all(const int *ordinals, size_t n, gpuipc_err *err)
{
    opener *ops = calloc(n ? n : 1, sizeof(*ops));
    sigset_t all, old;
    size_t i;
    int rc = 0;

    if (ops == NULL)
        return gpuipc_err_set(err, -ENOMEM, "opening %zu GPUs: out of memory", n);
    /* The threads take no signal: the process's handlers run elsewhere. */
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    for (i = 0; i < n; i++) {
        uint8_t uuid[GPUIPC_UUID_LEN];

        ops[i].ordinal = ordinals[i];
        if (gpuipc_gpu_uuid_of(ordinals[i], uuid, &ops[i].err) == 0 && find_open(uuid) != NULL)
            continue; /* open already */
        ops[i].on_thread = 1;
        ops[i].started = pthread_create(&ops[i].thread, NULL, open_one, &ops[i]) == 0;
        if (!ops[i].started) { /* no thread: here, one after the other */
            ops[i].on_thread = 0;
            open_one(&ops[i]);
        }
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    /* Where the helpers are, for the watchdog: the call that starts a
     * context (the one a GPU that does not answer holds up). */
    gpuipc_watch_call("cuDevicePrimaryCtxRetain (the GPUs' threads)");
    for (i = 0; i < n; i++) {
        if (ops[i].started)
            pthread_join(ops[i].thread, NULL);
        if (ops[i].rc < 0 && rc == 0) {
            rc = ops[i].rc;
            if (err != NULL)
                *err = ops[i].err;
        }
    }
    gpuipc_watch_call(NULL);
    free(ops);
    return rc;
}

int gpuipc_gpu_process_bytes(uint64_t *bytes, gpuipc_err *why)
{
    if (open_count == 0)
        return gpuipc_err_set(why, -ENOTSUP, "this process has no GPU open");
    return gpuipc_nvml_process_bytes(bytes, why);
}

int gpuipc_gpu_attach_uuid(gpuipc_env *env, const uint8_t uuid[GPUIPC_UUID_LEN],
                           gpuipc_err *err)
{
    gpuipc_gpu *gpu;
    int rc;

    if (env->gpu != NULL && memcmp(env->gpu->uuid, uuid, GPUIPC_UUID_LEN) == 0)
        return 0;
    if ((rc = gpuipc_gpu_init(err)) < 0)
        return rc;
    /* A device opened before stays open (gpuipc_gpu_close_all ends them):
     * switching to it costs a cuCtxSetCurrent, not a context. */
    pthread_mutex_lock(&attach_lock);
    rc = (gpu = find_open(uuid)) == NULL ? gpuipc_gpu_open_uuid(&gpu, uuid, err) : 0;
    pthread_mutex_unlock(&attach_lock);
    if (rc < 0)
        return rc;
    env->gpu = gpu;
    GPUIPC_CU_CALL(cuCtxSetCurrent, gpu->ctx);
    return 0;
}

int gpuipc_gpu_attach(gpuipc_scenario *sc, gpuipc_err *err)
{
    return gpuipc_gpu_attach_uuid(sc->env, sc->uuid, err);
}

int gpuipc_gpu_point(gpuipc_env *env, int a, int b, uint8_t uuid[GPUIPC_UUID_LEN],
                     uint8_t peer_uuid[GPUIPC_UUID_LEN], gpuipc_err *err)
{
    int rc;

    memset(peer_uuid, 0, GPUIPC_UUID_LEN);
    if ((rc = gpuipc_gpu_uuid_of(a, uuid, err)) < 0 ||
        (rc = gpuipc_gpu_attach_uuid(env, uuid, err)) < 0)
        return rc;
    if (b != a && (rc = gpuipc_gpu_uuid_of(b, peer_uuid, err)) < 0)
        return rc;
    return 0;
}

int gpuipc_gpu_peer_check(gpuipc_scenario *sc, gpuipc_err *err)
{
    char home[48];
    CUdevice dev;
    CUresult rc;
    int ret, can = 0;

    if (sc->env->gpu == NULL)
        return gpuipc_err_set(err, -ENODEV, "no GPU is open");
    if (memcmp(sc->home_uuid, sc->uuid, GPUIPC_UUID_LEN) == 0) {
        sc->home_ordinal = gpuipc_gpu_ordinal(sc->env->gpu);
        return 0;
    }
    if ((ret = gpuipc_gpu_find_uuid(sc->home_uuid, &sc->home_ordinal, err)) < 0)
        return ret;
    rc = GPUIPC_CU_CALL(cuDeviceGet, &dev, sc->home_ordinal);
    if (rc == CUDA_SUCCESS)
        rc = GPUIPC_CU_CALL(cuDeviceCanAccessPeer, &can, gpuipc_gpu_device(sc->env->gpu), dev);
    if (rc != CUDA_SUCCESS)
        return gpuipc_cudrv_errno(gpuipc_cudrv_fail(err, "cuDeviceCanAccessPeer", rc,
                                                    __FILE__, __LINE__));
    if (!can)
        return gpuipc_err_set(err, -ENOTSUP, "cuDeviceCanAccessPeer: GPU %d (%s) cannot access "
                              "the memory of GPU %d (%s): no peer path between them (NVLink, "
                              "or PCIe P2P, which IOMMU and ACS settings can disable)",
                              gpuipc_gpu_ordinal(sc->env->gpu), gpuipc_gpu_name(sc->env->gpu),
                              sc->home_ordinal,
                              gpuipc_units_format_uuid(sc->home_uuid, home, sizeof(home)));
    return 0;
}

CUdevice gpuipc_gpu_device(const gpuipc_gpu *gpu)
{
    return gpu->dev;
}

int gpuipc_gpu_ordinal(const gpuipc_gpu *gpu)
{
    return gpu->ordinal;
}

const char *gpuipc_gpu_self_test(const gpuipc_gpu *gpu)
{
    return gpu->self_test;
}

const char *gpuipc_gpu_open_times(const gpuipc_gpu *gpu)
{
    return gpu->open_times;
}

const char *gpuipc_gpu_name(const gpuipc_gpu *gpu)
{
    return gpu->name;
}

const uint8_t *gpuipc_gpu_uuid(const gpuipc_gpu *gpu)
{
    return gpu->uuid;
}

const gpuipc_kernels *gpuipc_gpu_kernels(const gpuipc_gpu *gpu)
{
    return &gpu->kernels;
}

void gpuipc_gpu_hold(int on)
{
    atomic_store(&hold_open, on);
}

void gpuipc_gpu_result_slot(unsigned slot)
{
    result_slot = slot < GPUIPC_GPU_RESULT_SLOTS ? slot : 0;
}

CUdeviceptr gpuipc_gpu_result(const gpuipc_gpu *gpu)
{
    return gpu->result + result_slot * GPUIPC_KERNELS_RESULT_WORDS * sizeof(uint64_t);
}

CUresult gpuipc_gpu_attr(const gpuipc_gpu *gpu, CUdevice_attribute attr, int *value,
                         gpuipc_err *err)
{
    CUresult rc;

    GPUIPC_CU_GOTO(rc, err, out, cuDeviceGetAttribute, value, attr, gpu->dev);
out:
    return rc;
}

CUresult gpuipc_gpu_mem_info(const gpuipc_gpu *gpu, uint64_t *free_bytes, uint64_t *total,
                             gpuipc_err *err)
{
    size_t f = 0, t = 0;
    CUresult rc;

    (void)gpu; /* cuMemGetInfo reads the current context's device */
    GPUIPC_CU_GOTO(rc, err, out, cuMemGetInfo, &f, &t);
    *free_bytes = f;
    *total = t;
out:
    return rc;
}

CUresult gpuipc_gpu_sync(const gpuipc_gpu *gpu, gpuipc_err *err)
{
    CUresult rc;

    (void)gpu;
    GPUIPC_CU_GOTO(rc, err, out, cuCtxSynchronize);
out:
    return rc;
}
