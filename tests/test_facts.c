/* SPDX-License-Identifier: Apache-2.0 */
/* test_facts.c: the facts a process gathers about its confinement, and the
 * causes the diagnosis names from both sides' facts, rule by rule. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/facts.h"
#include "core/proc.h"
#include "core/step.h"
#include "helpers.h"
#include "session/diagnose.h"
#include "suites.h"

START_TEST(test_facts_are_this_process)
{
    gpuipc_facts f;
    struct rlimit rl;
    uint64_t pidns = 0;
    gpuipc_err e;
    char line[512], want[64];

    gpuipc_facts_gather(&f);
    ck_assert_uint_eq(f.pid, (unsigned)getpid());
    ck_assert_uint_eq(f.uid, (unsigned)geteuid());
    ck_assert_int_eq(gpuipc_proc_pid_ns(&pidns, &e), 0);
    ck_assert_uint_eq(f.ns[GPUIPC_NS_PID], pidns);
    ck_assert_uint_ne(f.ns[GPUIPC_NS_NET], 0);
    ck_assert_msg(f.kernel[0] != '\0', "no kernel release");
    ck_assert_msg(f.seccomp <= 2, "seccomp %u", f.seccomp);
    ck_assert_msg(f.dumpable <= 2, "dumpable %u", f.dumpable);
    ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
    if (rl.rlim_cur != RLIM_INFINITY)
        ck_assert_uint_eq(f.nofile_soft, rl.rlim_cur);
    gpuipc_facts_describe(&f, line, sizeof(line));
    snprintf(want, sizeof(want), "pid %u in pid:[%llu], uid %u", f.pid,
             (unsigned long long)pidns, f.uid);
    ck_assert_msg(strncmp(line, want, strlen(want)) == 0, "%s", line);
}
END_TEST

START_TEST(test_facts_compare)
{
    gpuipc_facts a, b;

    gpuipc_facts_gather(&a);
    b = a;
    ck_assert_uint_eq(gpuipc_facts_ns_differ(&a, &b), 0);
    b.ns[GPUIPC_NS_PID]++;
    b.ns[GPUIPC_NS_NET] = 0; /* unknown: no difference claimed */
    ck_assert_uint_eq(gpuipc_facts_ns_differ(&a, &b), 1u << GPUIPC_NS_PID);
    a.cap_eff = 1ull << GPUIPC_CAP_SYS_PTRACE;
    ck_assert(gpuipc_facts_has_cap(&a, GPUIPC_CAP_SYS_PTRACE));
    ck_assert(!gpuipc_facts_has_cap(&a, 0));
    strcpy(a.kernel, "5.10.0-30-amd64");
    ck_assert(gpuipc_facts_kernel_at_least(&a, 5, 6));
    strcpy(a.kernel, "4.19.0");
    ck_assert(!gpuipc_facts_kernel_at_least(&a, 5, 6));
    strcpy(a.kernel, "?");
    ck_assert(!gpuipc_facts_kernel_at_least(&a, 5, 6));
}
END_TEST

/* Two processes of one container host: the same namespaces, root, no
 * filter; each rule below changes what makes it fire. */
static void base_facts(gpuipc_facts *p, gpuipc_facts *k)
{
    int i;

    memset(p, 0, sizeof(*p));
    for (i = 0; i < GPUIPC_NS_COUNT; i++)
        p->ns[i] = 4026531830u + (unsigned)i;
    p->pid = 100;
    p->yama = GPUIPC_FACTS_UNKNOWN;
    p->dumpable = 1;
    p->nofile_soft = 20000;
    p->nofile_hard = 20000;
    p->cap_eff = 0x1ffffffffffull;
    strcpy(p->kernel, "6.1.0");
    p->shm_dev = 27;
    p->shm_size = p->shm_avail = 64ull << 30;
    memset(p->boot_id, 0x5a, sizeof(p->boot_id));
    p->imex_channels = 1; /* channel 0 */
    *k = *p;
    k->pid = 101;
}

enum { OTHER_PIDNS = 1, SAME_PID = 2, NOT_DUMPABLE = 4, OTHER_UID = 8, YAMA1 = 16,
       SECCOMP = 32, OLD_KERNEL = 64, LOW_NOFILE = 128, NO_PTRACE_CAP = 256, OTHER_USERNS = 512,
       MIG_ON = 1024, CC_ON = 2048, MIN_GBPS = 4096, SHM_SMALL = 1 << 13, SHM_RO = 1 << 14,
       SHM_ABSENT = 1 << 15, SHM_OTHER = 1 << 16, CTL_EPERM = 1 << 17, CTL_EACCES = 1 << 18,
       SELINUX = 1 << 19, SLURM = 1 << 20, K8S = 1 << 21, FABRIC_NVML = 1 << 22,
       PEER_LINK = 1 << 23, UVM_EPERM = 1 << 24, NVLINK_UNCLAIMED = 1 << 25,
       OTHER_BOOT = 1 << 26, NO_IMEX = 1 << 27, OTHER_CHANNEL = 1 << 28,
       HIGH_CHANNELS = 1 << 29, EMPTY_IMEX = 1 << 30 };

/* What failed, as data: the side, the step, the call, its errno or
 * CUresult. The reason's text is never the rules' business: every case's is
 * "(reworded)", so a rule that read text would not fire. */
typedef struct diag_failure {
    int side;
    unsigned step;
    const char *call;
    int errnum, cu;
} diag_failure;

#define CONSUMER_SIDE GPUIPC_ROLE_CONSUMER
#define PRODUCER_SIDE GPUIPC_ROLE_PRODUCER

static const struct {
    const char *mech;
    diag_failure f;
    int fetched, changes;
    const char *says; /* NULL: no rule fires */
} diag_cases[] = {
    {"memfd-pidfd", {CONSUMER_SIDE, GPUIPC_STEP_PROBE, "pidfd_open", ESRCH, 0}, 1,
     OTHER_PIDNS, "cause: the consumer is in another PID namespace"},
    {"vmm-pidfd", {CONSUMER_SIDE, GPUIPC_STEP_PROBE, "pidfd_getfd", EPERM, 0}, 1,
     NOT_DUMPABLE | NO_PTRACE_CAP, "cause: the producer is not dumpable"},
    {"vmm-pidfd", {CONSUMER_SIDE, GPUIPC_STEP_IMPORT, "pidfd_getfd", EPERM, 0}, 1,
     OTHER_UID | NO_PTRACE_CAP, "cause: the consumer runs as uid 65534 and the producer as uid 0"},
    {"vmm-pidfd", {CONSUMER_SIDE, GPUIPC_STEP_PROBE, "pidfd_getfd", EPERM, 0}, 1,
     YAMA1 | NO_PTRACE_CAP, "cause: Yama ptrace_scope is 1 in the consumer"},
    {"memfd-pidfd", {CONSUMER_SIDE, GPUIPC_STEP_PROBE, "pidfd_getfd", EPERM, 0}, 1,
     OTHER_USERNS | SECCOMP, "cause: the consumer is in another user namespace"},
    {"memfd-pidfd", {CONSUMER_SIDE, GPUIPC_STEP_PROBE, "pidfd_getfd", EPERM, 0}, 1,
     SECCOMP, "cause: a seccomp filter in the consumer (Seccomp: 2) refuses pidfd_getfd"},
    {"memfd-pidfd", {CONSUMER_SIDE, GPUIPC_STEP_PROBE, "pidfd_open", ENOSYS, 0}, 1,
     OLD_KERNEL, "cause: the consumer's kernel, Linux 5.4.0, has no pidfd_getfd"},
    {"memfd-pidfd", {CONSUMER_SIDE, GPUIPC_STEP_PROBE, "pidfd_open", ENOSYS, 0}, 1,
     SECCOMP, "cause: a seccomp filter in the consumer (Seccomp: 2) answers pidfd_open"},
    {"legacy-ipc", {CONSUMER_SIDE, GPUIPC_STEP_IMPORT, "cuIpcOpenMemHandle", 0, 201}, 0,
     OTHER_PIDNS | SAME_PID, "cause: the producer and the consumer both have pid 100"},
    {"mempool-ipc", {PRODUCER_SIDE, GPUIPC_STEP_ALLOC, "cuDevicePrimaryCtxRetain", 0, 304}, 0,
     LOW_NOFILE, "cause: RLIMIT_NOFILE is 40 in the producer"},
    {"vmm", {CONSUMER_SIDE, GPUIPC_STEP_PROBE, "cuDeviceGetUuid", ENODEV, 0}, 0, 0,
     "cause: the consumer does not see the producer's GPU (the producer sees 0=GPU-1d269889)"},
    {"vmm", {CONSUMER_SIDE, GPUIPC_STEP_IMPORT, "cuMemImportFromShareableHandle", 0, 101}, 0, 0,
     "cause: the consumer does not see the producer's GPU"},
    {"fabric", {PRODUCER_SIDE, GPUIPC_STEP_PROBE, "cuMemCreate", 0, 800}, 0, 0,
     "cause: the driver refused a FABRIC allocation (CUDA_ERROR_NOT_PERMITTED) although the "
     "producer may open IMEX channel 0"},
    /* FABRIC and the NVLink domain (issue 40): the channels of each side,
     * across nodes (another boot id) or not. */
    {"fabric", {PRODUCER_SIDE, GPUIPC_STEP_ALLOC, "cuMemCreate", 0, 800}, 0, NO_IMEX,
     "cause: no IMEX channel that this process can open: the producer may open none "
     "(/dev/nvidia-caps-imex-channels does not exist)"},
    {"fabric", {CONSUMER_SIDE, GPUIPC_STEP_IMPORT, "cuMemImportFromShareableHandle", 0, 400}, 0,
     OTHER_BOOT, "cause: a FABRIC handle of another node was refused as an invalid handle"},
    {"fabric", {CONSUMER_SIDE, GPUIPC_STEP_IMPORT, "cuMemImportFromShareableHandle", 0, 400}, 0,
     0, NULL},
    {"fabric", {CONSUMER_SIDE, GPUIPC_STEP_IMPORT, "cuMemImportFromShareableHandle", 0, 400}, 0,
     OTHER_BOOT | OTHER_CHANNEL, "cause: the producer may open IMEX channel 0 and the consumer "
     "5: no channel in common"},
    {"fabric", {CONSUMER_SIDE, GPUIPC_STEP_IMPORT, "cuMemSetAccess", 0, 1}, 0, OTHER_BOOT,
     "cause: mapping a FABRIC handle of another node was refused (CUDA_ERROR_INVALID_VALUE): "
     "there is no multi-node NVLink between the two nodes"},
    {"fabric", {CONSUMER_SIDE, GPUIPC_STEP_IMPORT, "cuMemSetAccess", 0, 801}, 0, OTHER_BOOT,
     "cause: mapping a FABRIC handle of another node is not supported (CUDA_ERROR_NOT_SUPPORTED): "
     "two IMEX domains inside one NVLink clique"},
    {"vmm", {CONSUMER_SIDE, GPUIPC_STEP_IMPORT, "cuMemSetAccess", 0, 1}, 0, OTHER_BOOT, NULL},
    /* Review: "no channel in common" explains an import refused, never what
     * failed after the import held (bytes wrong at verify, a slow link at
     * the check), nor two sides that may both open a channel of 64 or more
     * (which the mask does not show: they may share it). */
    /* Review: the GPU suite's fabric case without a channel (check_gpu.c,
     * test_gpu_fabric_needs_a_channel_and_passes_with_one: an empty tmpfs
     * at the directory) and the README's gpu-summary sample expect this
     * cause; fabric_domain, now before not_offered, answers every such
     * case first, so not_offered's text is left only where the facts
     * contradict it (a channel the producer may open). */
    {"fabric", {PRODUCER_SIDE, GPUIPC_STEP_PROBE, "cuMemCreate", 0, 800}, 0, EMPTY_IMEX,
     "cause: no IMEX channel that this process can open"},
    {"fabric", {CONSUMER_SIDE, GPUIPC_STEP_VERIFY, "", 0, 0}, 0, OTHER_BOOT | OTHER_CHANNEL,
     NULL},
    {"fabric", {PRODUCER_SIDE, GPUIPC_STEP_CHECK, GPUIPC_DIAG_MIN_GBPS, 0, 0}, 0,
     MIN_GBPS | OTHER_BOOT | OTHER_CHANNEL,
     "cause: the link between the two GPUs moves less than --min-gbps 100"},
    {"fabric", {CONSUMER_SIDE, GPUIPC_STEP_IMPORT, "cuMemImportFromShareableHandle", 0, 400}, 0,
     OTHER_BOOT | OTHER_CHANNEL | HIGH_CHANNELS,
     "cause: a FABRIC handle of another node was refused as an invalid handle"},
    {"vmm-offset", {PRODUCER_SIDE, GPUIPC_STEP_PROBE, "cuMemMap", 0, 801}, 0, 0,
     "cause: this driver maps only whole imported allocations"},
    {"vmm-compressible", {PRODUCER_SIDE, GPUIPC_STEP_ALLOC, "cuMemCreate", 0, 801}, 0, 0,
     "cause: this driver or GPU does not support a call the mechanism needs (cuMemCreate: "
     "CUDA_ERROR_NOT_SUPPORTED)"},
    /* The GPU's modes, from NVML, and a link slower than --min-gbps. */
    {"legacy-ipc", {CONSUMER_SIDE, GPUIPC_STEP_IMPORT, "cuIpcOpenMemHandle", 0, 1}, 0,
     MIG_ON, "cause: the producer's GPU is in MIG mode"},
    {"vmm", {CONSUMER_SIDE, GPUIPC_STEP_IMPORT, "cuMemImportFromShareableHandle", 0, 801}, 0,
     CC_ON, "cause: confidential computing is on"},
    {"memfd", {CONSUMER_SIDE, GPUIPC_STEP_IMPORT, "mmap", ENOMEM, 0}, 0, MIG_ON | CC_ON, NULL},
    {"vmm 0->1", {PRODUCER_SIDE, GPUIPC_STEP_CHECK, GPUIPC_DIAG_MIN_GBPS, 0, 0}, 0,
     MIN_GBPS, "cause: the link between the two GPUs moves less than --min-gbps 100"},
    {"vmm 0->1", {PRODUCER_SIDE, GPUIPC_STEP_CHECK, GPUIPC_DIAG_MIN_GBPS, 0, 0}, 0, 0, NULL},
    /* /dev/shm, for interprocess events: the failed side's, or two. */
    {"ipc-event", {PRODUCER_SIDE, GPUIPC_STEP_ALLOC, "cuEventCreate", 0, 1}, 0, SHM_SMALL,
     "cause: interprocess events live in a pool the driver keeps in /dev/shm, and the "
     "producer has /dev/shm 64 KiB (64 KiB free)"},
    {"ipc-event", {PRODUCER_SIDE, GPUIPC_STEP_ALLOC, "cuEventCreate", 0, 205}, 0, SHM_RO,
     "and the producer has /dev/shm 64 GiB (64 GiB free), read-only"},
    {"ipc-event", {CONSUMER_SIDE, GPUIPC_STEP_IMPORT, "cuIpcOpenEventHandle", 0, 1}, 0,
     SHM_ABSENT, "and the consumer has no /dev/shm"},
    {"ipc-event", {CONSUMER_SIDE, GPUIPC_STEP_IMPORT, "cuIpcOpenEventHandle", 0, 1}, 0,
     SHM_OTHER, "cause: the producer and the consumer see different /dev/shm file systems "
     "(devices 0x1b and 0x1c)"},
    {"ipc-event", {CONSUMER_SIDE, GPUIPC_STEP_IMPORT, "cuIpcOpenEventHandle", 0, 1}, 0, 0,
     NULL},
    {"vmm", {PRODUCER_SIDE, GPUIPC_STEP_ALLOC, "cuMemCreate", 0, 1}, 0, SHM_SMALL | SHM_OTHER,
     NULL},
    /* The driver's device files: a device cgroup, SELinux, permissions. */
    {"vmm", {PRODUCER_SIDE, GPUIPC_STEP_PROBE, "cuInit", 0, 999}, 0, CTL_EPERM,
     "cause: the producer may not open /dev/nvidiactl (EPERM): the device cgroup refuses it"},
    {"vmm", {CONSUMER_SIDE, GPUIPC_STEP_PROBE, "cuDevicePrimaryCtxRetain", 0, 100}, 0,
     CTL_EACCES | SELINUX, "cause: the consumer may not open /dev/nvidiactl (EACCES) and "
     "SELinux is enforcing"},
    {"legacy-ipc", {PRODUCER_SIDE, GPUIPC_STEP_PROBE, "cuInit", 0, 100}, 0, CTL_EACCES,
     "cause: the producer may not open /dev/nvidiactl (EACCES): its mode or group"},
    {"vmm", {PRODUCER_SIDE, GPUIPC_STEP_PROBE, "cuInit", 0, 999}, 0, UVM_EPERM,
     "cause: the producer may not open /dev/nvidia-uvm (EPERM)"},
    {"memfd", {PRODUCER_SIDE, GPUIPC_STEP_ALLOC, "memfd_create", EMFILE, 0}, 0, CTL_EPERM,
     NULL},
    /* CUDA_ERROR_SYSTEM_NOT_READY: the Fabric Manager. */
    {"vmm", {PRODUCER_SIDE, GPUIPC_STEP_PROBE, "cuInit", 0, 802}, 0, FABRIC_NVML,
     "cause: the driver is not ready (cuInit: CUDA_ERROR_SYSTEM_NOT_READY): on NVSwitch "
     "systems (HGX, DGX) CUDA waits for the Fabric Manager to set up the fabric; NVML's "
     "fabric state: GPU 0 in progress"},
    {"vmm", {PRODUCER_SIDE, GPUIPC_STEP_PROBE, "cuInit", 0, 802}, 0, 0,
     "cause: the driver is not ready (cuInit: CUDA_ERROR_SYSTEM_NOT_READY)"},
    /* The consumer under Slurm or Kubernetes cannot see the GPU. */
    {"vmm", {CONSUMER_SIDE, GPUIPC_STEP_PROBE, "cuDeviceGetUuid", ENODEV, 0}, 0, SLURM,
     "start both with --gpu-bind=none (or --tres-bind=gres/gpu:none)"},
    {"vmm", {CONSUMER_SIDE, GPUIPC_STEP_IMPORT, "cuMemImportFromShareableHandle", 0, 101}, 0,
     K8S, "in Kubernetes each container sees only the GPUs it was given"},
    /* A pair whose driver claims peer access and moves wrong bytes. */
    {"vmm 0->1", {CONSUMER_SIDE, GPUIPC_STEP_VERIFY, "", 0, 0}, 0, PEER_LINK,
     "cause: the driver says these two GPUs have peer access, but bytes came back wrong "
     "between them"},
    {"vmm 0->1", {CONSUMER_SIDE, GPUIPC_STEP_VERIFY, "cuLaunchKernel", 0, 700}, 0, PEER_LINK,
     "but a peer access failed between them"},
    {"vmm 0->1", {CONSUMER_SIDE, GPUIPC_STEP_PROBE, "cuDeviceCanAccessPeer", 0, 0}, 0,
     PEER_LINK, NULL},
    /* NVML shows an NVLink, the driver claims no peer access, and an import
     * between them is refused: a failure with the link named, not a skip. */
    {"legacy-ipc 0->1", {CONSUMER_SIDE, GPUIPC_STEP_IMPORT, "cuIpcOpenMemHandle", 0, 217}, 0,
     NVLINK_UNCLAIMED,
     "cause: NVML shows an NVLink between these two GPUs, but a peer access failed between "
     "them"},
    /* What the facts do not explain is left as the reason says it. */
    {"legacy-ipc", {CONSUMER_SIDE, GPUIPC_STEP_IMPORT, "cuIpcOpenMemHandle", 0, 201}, 0,
     OTHER_PIDNS, NULL},
    {"vmm-pidfd", {CONSUMER_SIDE, GPUIPC_STEP_PROBE, "pidfd_getfd", EPERM, 0}, 1,
     OTHER_UID, NULL}, /* CAP_SYS_PTRACE would have let it: something else refused */
    {"vmm", {CONSUMER_SIDE, GPUIPC_STEP_VERIFY, "", 0, 0}, 0, OTHER_PIDNS | SAME_PID | SECCOMP,
     NULL},
    /* The side matters: the producer's own pidfd_getfd is no consumer's. */
    {"vmm-pidfd", {PRODUCER_SIDE, GPUIPC_STEP_PROBE, "pidfd_getfd", EPERM, 0}, 1,
     NOT_DUMPABLE | NO_PTRACE_CAP, NULL},
    /* A device the producer cannot see is no visibility rule's. */
    {"vmm", {PRODUCER_SIDE, GPUIPC_STEP_PROBE, "cuDeviceGetUuid", ENODEV, 0}, 0, 0, NULL},
};

/* A status as the failed side recorded it, from a case's data. */
static void failure_of(const diag_failure *f, gpuipc_status *st)
{
    gpuipc_err e;

    gpuipc_err_set(&e, 0, "(reworded)");
    gpuipc_err_what(&e, f->call, f->errnum, f->cu);
    gpuipc_wire_status(st, GPUIPC_FAIL, f->step, e.msg);
    gpuipc_wire_status_what(st, &e);
}

START_TEST(test_facts_diagnose_names_the_boundary)
{
    int ch = diag_cases[_i].changes;
    gpuipc_facts p, k;
    gpuipc_status st;
    gpuipc_cause cause;
    char out[1024];
    gpuipc_diag_case c = {.mech = diag_cases[_i].mech, .fetched_fd = diag_cases[_i].fetched,
                          .side = diag_cases[_i].f.side, .failure = &st, .producer = &p,
                          .consumer = &k, .producer_gpus = "0=GPU-1d269889"};
    int fired;

    failure_of(&diag_cases[_i].f, &st);
    base_facts(&p, &k);
    if (ch & OTHER_PIDNS)
        k.ns[GPUIPC_NS_PID]++;
    if (ch & SAME_PID)
        k.pid = p.pid;
    if (ch & NOT_DUMPABLE)
        p.dumpable = 0;
    if (ch & OTHER_UID)
        k.uid = 65534;
    if (ch & YAMA1)
        k.yama = 1;
    if (ch & SECCOMP)
        k.seccomp = 2;
    if (ch & OLD_KERNEL)
        strcpy(k.kernel, "5.4.0");
    if (ch & LOW_NOFILE)
        p.nofile_soft = 40;
    if (ch & OTHER_USERNS)
        k.ns[GPUIPC_NS_USER]++;
    if (ch & NO_PTRACE_CAP)
        k.cap_eff &= ~(1ull << GPUIPC_CAP_SYS_PTRACE);
    if (ch & OTHER_BOOT)
        k.boot_id[0] ^= 1;
    if (ch & OTHER_CHANNEL)
        k.imex_channels = 1ull << 5;
    if (ch & HIGH_CHANNELS) {
        p.flags |= GPUIPC_FACT_IMEX_MORE;
        k.flags |= GPUIPC_FACT_IMEX_MORE;
    }
    {
        gpuipc_facts *failed = diag_cases[_i].f.side == CONSUMER_SIDE ? &k : &p;

        if (ch & SHM_SMALL)
            failed->shm_size = failed->shm_avail = 64 << 10;
        if (ch & SHM_RO)
            failed->flags |= GPUIPC_FACT_SHM_RO;
        if (ch & SHM_ABSENT) {
            failed->flags |= GPUIPC_FACT_SHM_ABSENT;
            failed->shm_dev = failed->shm_size = failed->shm_avail = 0;
        }
        if (ch & CTL_EPERM)
            failed->ctl_errno = EPERM;
        if (ch & CTL_EACCES)
            failed->ctl_errno = EACCES;
        if (ch & UVM_EPERM)
            failed->uvm_errno = EPERM;
        if (ch & SELINUX)
            failed->flags |= GPUIPC_FACT_SELINUX;
        if (ch & NO_IMEX) {
            failed->imex_channels = 0;
            failed->imex_errno = ENOENT;
        }
        if (ch & EMPTY_IMEX) {
            failed->imex_channels = 0;
            failed->imex_errno = 0;
        }
    }
    if (ch & SHM_OTHER)
        k.shm_dev = 28;
    if (ch & SLURM)
        k.flags |= GPUIPC_FACT_SLURM;
    if (ch & K8S)
        k.flags |= GPUIPC_FACT_KUBERNETES;
    c.fabric = (ch & FABRIC_NVML) ? "GPU 0 in progress" : NULL;
    c.link = (ch & PEER_LINK) ? "PCIe Gen4 x16, behind one host bridge"
             : (ch & NVLINK_UNCLAIMED) ? "NVLink 4.0 (18 links of the first GPU active)" : NULL;
    c.peer_claimed = (ch & PEER_LINK) ? 1 : (ch & NVLINK_UNCLAIMED) ? 0 : -1;
    c.mig = (ch & MIG_ON) != 0;
    c.cc = (ch & CC_ON) != 0;
    c.min_gbps = (ch & MIN_GBPS) ? 100 : 0;
    fired = gpuipc_diagnose(&c, &cause);
    gpuipc_cause_line(&cause, out, sizeof(out));
    if (diag_cases[_i].says == NULL) {
        ck_assert_msg(!fired && out[0] == '\0', "case %d: a rule fired: %s", _i, out);
        return;
    }
    /* The cause and its fix, each its own text, and the line they make. */
    ck_assert_msg(fired && strstr(out, diag_cases[_i].says) != NULL && cause.what[0] != '\0' &&
                  cause.fix[0] != '\0' && strstr(cause.what, "; fix: ") == NULL,
                  "case %d: '%s' lacks '%s' or its fix", _i, out, diag_cases[_i].says);
}
END_TEST

/* Without the consumer's facts (it never said HELLO), no rule about it
 * fires. */
START_TEST(test_facts_diagnose_needs_the_facts)
{
    gpuipc_facts p, k;
    gpuipc_cause cause;
    static const diag_failure f = {CONSUMER_SIDE, GPUIPC_STEP_PROBE, "pidfd_open", ESRCH, 0};
    gpuipc_status st;
    gpuipc_diag_case c = {.mech = "memfd-pidfd", .fetched_fd = 1, .side = CONSUMER_SIDE,
                          .failure = &st, .producer = &p, .consumer = NULL};

    failure_of(&f, &st);
    base_facts(&p, &k);
    ck_assert_int_eq(gpuipc_diagnose(&c, &cause), 0);
    ck_assert_str_eq(cause.what, "");
    ck_assert_str_eq(cause.fix, "");
}
END_TEST

/* gpuipc_proc_ask_child: the child's answer comes back whole; a child
 * that never answers is reported within the deadline and is not left
 * running. */
static void ask_pid(void *arg, void *answer)
{
    (void)arg;
    *(pid_t *)answer = getppid();
}

static void ask_hang(void *arg, void *answer)
{
    (void)arg;
    (void)answer;
    pause();
}

START_TEST(test_proc_ask_child)
{
    uint64_t t;
    gpuipc_err e;
    pid_t got = 0;

    ck_assert_int_eq(gpuipc_proc_ask_child(ask_pid, NULL, &got, sizeof(got),
                                           gpuipc_clock_deadline(5 * GPUIPC_NS_PER_S), &e), 0);
    ck_assert_int_eq(got, getpid());
    t = gpuipc_clock_ns();
    ck_assert_int_eq(gpuipc_proc_ask_child(ask_hang, NULL, &got, sizeof(got),
                                           gpuipc_clock_deadline(300 * GPUIPC_NS_PER_MS), &e),
                     -EIO);
    ck_assert_msg(strstr(e.msg, "gave no answer") != NULL, "%s", e.msg);
    ck_assert_msg(gpuipc_clock_ns() - t < 3 * GPUIPC_NS_PER_S, "the wait was not bounded");
    ck_assert_int_eq(th_child_of(getpid()), -1);
}
END_TEST

Suite *facts_suite(void)
{
    Suite *s = suite_create("facts");
    TCase *tc = tcase_create("facts");

    tcase_add_test(tc, test_facts_are_this_process);
    tcase_add_test(tc, test_facts_compare);
    tcase_add_loop_test(tc, test_facts_diagnose_names_the_boundary, 0,
                        (int)(sizeof(diag_cases) / sizeof(diag_cases[0])));
    tcase_add_test(tc, test_facts_diagnose_needs_the_facts);
    tcase_add_test(tc, test_proc_ask_child);
    suite_add_tcase(s, tc);
    return s;
}
