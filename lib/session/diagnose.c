/* SPDX-License-Identifier: Apache-2.0 */
/* diagnose.c: rules that turn a failure and both sides' facts into a cause
 * and a fix. A rule matches what failed as data (the side, the call, its
 * errno or CUresult: gpuipc_status), never the reason's text, so that no
 * rewording can switch one off. Each rule needs the facts it names; where a
 * side's facts are unknown, rules about that side do not fire. The rules are
 * tried in order; the first that fires is the cause. */
#include "session/diagnose.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "core/step.h"

/* The failure's call is name. */
static int call_is(const gpuipc_diag_case *c, const char *name)
{
    return c->failure != NULL && strcmp(c->failure->call, name) == 0;
}

static int cu_is(const gpuipc_diag_case *c, int cu)
{
    return c->failure != NULL && c->failure->cu == cu;
}

/* pidfd_open or pidfd_getfd failed with errno e. */
static int pidfd_failed(const gpuipc_diag_case *c, int e)
{
    return (call_is(c, "pidfd_open") || call_is(c, "pidfd_getfd")) && c->failure->errnum == e;
}

/* The facts of the side whose step failed, named in *who. */
static const gpuipc_facts *failed_side(const gpuipc_diag_case *c, const char **who)
{
    int consumer = c->side == GPUIPC_ROLE_CONSUMER;

    *who = consumer ? "consumer" : "producer";
    return consumer ? c->consumer : c->producer;
}

/* The consumer is in another namespace ns than the producer (its name in
 * words and as /proc names it), which explains so: says it with fix.
 * Returns 1. */
static int other_namespace(gpuipc_cause *out, const gpuipc_diag_case *c, int ns,
                           const char *name, const char *proc_name, const char *so,
                           const char *fix)
{
    gpuipc_cause_what(out, "the consumer is in another %s namespace (%s:[%llu]) than the "
                      "producer (%s:[%llu])%s", name, proc_name,
                      (unsigned long long)c->consumer->ns[ns], proc_name,
                      (unsigned long long)c->producer->ns[ns], so);
    gpuipc_cause_fix(out, "%s", fix);
    return 1;
}

/* pidfd_getfd refused (EPERM): another user namespace, a producer that is
 * not dumpable, another uid, Yama, a seccomp filter. */
static int fetch_refused(const gpuipc_diag_case *c, gpuipc_cause *out)
{
    const gpuipc_facts *p = c->producer, *k = c->consumer;
    int ptrace_cap = gpuipc_facts_has_cap(k, GPUIPC_CAP_SYS_PTRACE);

    if (gpuipc_facts_ns_differ(p, k) & (1u << GPUIPC_NS_USER))
        return other_namespace(out, c, GPUIPC_NS_USER, "user", "user",
                               "; capabilities held there do not count over the producer's "
                               "processes, so pidfd_getfd is refused",
                               "run both in one user namespace, or use vmm");
    if (p->dumpable == 0 && !ptrace_cap)
        return gpuipc_cause_set(out,
                                "the producer is not dumpable (PR_SET_DUMPABLE 0, or it "
                                "changed its credentials), and only a process with "
                                "CAP_SYS_PTRACE may take its FDs",
                                "leave the producer dumpable, give the consumer "
                                "CAP_SYS_PTRACE, or use vmm");
    if (p->uid != k->uid && !ptrace_cap) {
        gpuipc_cause_what(out,
                          "the consumer runs as uid %u and the producer as uid %u; "
                          "pidfd_getfd needs the same user or CAP_SYS_PTRACE",
                          k->uid, p->uid);
        gpuipc_cause_fix(out, "run both as one user, give the consumer CAP_SYS_PTRACE, "
                              "or use vmm");
        return 1;
    }
    if (k->yama != GPUIPC_FACTS_UNKNOWN && k->yama >= 1 && !ptrace_cap) {
        gpuipc_cause_what(out, "Yama ptrace_scope is %u in the consumer: %s", k->yama,
                          k->yama == 1   ? "a process may take FDs only from its own descendants, "
                                           "and the producer is not one"
                          : k->yama == 2 ? "only CAP_SYS_PTRACE may"
                                         : "no process may");
        gpuipc_cause_fix(out, "%s, or use vmm",
                         k->yama == 3 ? "nothing but a reboot lowers scope 3"
                                      : "sysctl kernel.yama.ptrace_scope=0, or give the consumer "
                                        "CAP_SYS_PTRACE");
        return 1;
    }
    if (k->seccomp == 2)
        return gpuipc_cause_set(
            out,
            "a seccomp filter in the consumer (Seccomp: 2) refuses pidfd_getfd; "
            "Docker's default profile allows it only with CAP_SYS_PTRACE",
            "docker run --cap-add SYS_PTRACE, or a seccomp profile that allows "
            "pidfd_open and pidfd_getfd, or use vmm");
    return 0;
}

/* pidfd_getfd across a boundary: namespaces, permissions, filters, the
 * kernel. */
static int fetched_fd(const gpuipc_diag_case *c, gpuipc_cause *out)
{
    const gpuipc_facts *p = c->producer, *k = c->consumer;

    if (!c->fetched_fd || p == NULL || k == NULL || c->side != GPUIPC_ROLE_CONSUMER)
        return 0;
    if ((gpuipc_facts_ns_differ(p, k) & (1u << GPUIPC_NS_PID)) && pidfd_failed(c, ESRCH))
        return other_namespace(out, c, GPUIPC_NS_PID, "PID", "pid",
                               ", so it cannot name the producer's process to pidfd_open",
                               "run both in one PID namespace (docker run "
                               "--pid=container:<producer>, Kubernetes shareProcessNamespace: "
                               "true), or use vmm, which sends the FD over the socket");
    if (pidfd_failed(c, EPERM))
        return fetch_refused(c, out);
    if (pidfd_failed(c, ENOSYS) && k->kernel[0] != '\0' && !gpuipc_facts_kernel_at_least(k, 5, 6)) {
        gpuipc_cause_what(out, "the consumer's kernel, Linux %s, has no pidfd_getfd (5.6 or later)",
                          k->kernel);
        gpuipc_cause_fix(out, "a newer kernel, or use vmm");
        return 1;
    }
    if (pidfd_failed(c, ENOSYS) && k->seccomp == 2)
        return gpuipc_cause_set(out,
                                "a seccomp filter in the consumer (Seccomp: 2) answers "
                                "pidfd_open or pidfd_getfd with ENOSYS",
                                "a seccomp profile that allows them, or use vmm");
    return 0;
}

/* Legacy IPC between two processes with the same pid in sibling PID
 * namespaces: the driver takes the handle for one the importer exported. */
static int legacy_same_pid(const gpuipc_diag_case *c, gpuipc_cause *out)
{
    const gpuipc_facts *p = c->producer, *k = c->consumer;

    if (p == NULL || k == NULL || !call_is(c, "cuIpcOpenMemHandle") ||
        !cu_is(c, GPUIPC_DIAG_CU_INVALID_CONTEXT) ||
        !(gpuipc_facts_ns_differ(p, k) & (1u << GPUIPC_NS_PID)) || p->pid != k->pid)
        return 0;
    gpuipc_cause_what(out,
                      "the producer and the consumer both have pid %u, each in its own PID "
                      "namespace (pid:[%llu] and pid:[%llu]), and the driver takes a legacy "
                      "IPC handle whose exporter has the importer's own pid for one of the "
                      "importer's own",
                      p->pid, (unsigned long long)p->ns[GPUIPC_NS_PID],
                      (unsigned long long)k->ns[GPUIPC_NS_PID]);
    gpuipc_cause_fix(out, "run both in one PID namespace (docker run --pid=container:<producer>, "
                          "Kubernetes shareProcessNamespace: true) or give them different pids, "
                          "or share with vmm or mempool-ipc");
    return 1;
}

/* The driver needs FDs of its own to create a context. */
static int nofile(const gpuipc_diag_case *c, gpuipc_cause *out)
{
    const char *who;
    const gpuipc_facts *f = failed_side(c, &who);

    if (f == NULL || !cu_is(c, GPUIPC_DIAG_CU_OPERATING_SYSTEM) ||
        f->nofile_soft == GPUIPC_FACTS_UNKNOWN || f->nofile_soft >= 1024)
        return 0;
    gpuipc_cause_what(out,
                      "RLIMIT_NOFILE is %u in the %s, too few for the driver, which opens "
                      "files of its own for every context and device",
                      f->nofile_soft, who);
    gpuipc_cause_fix(out, "ulimit -n 1024 or more (docker run --ulimit nofile=1024:1048576)");
    return 1;
}

/* The consumer does not see the producer's GPU: why, where the consumer
 * runs under Slurm or Kubernetes, and how. */
static const char *visibility_fix(const gpuipc_diag_case *c)
{
    uint32_t fl = c->consumer != NULL ? c->consumer->flags : 0;

    if (fl & GPUIPC_FACT_SLURM)
        return "; under Slurm, --gpus-per-task, --gpu-bind and --tres-bind=gres/gpu:per_task "
               "give each task only its own GPU: start both with --gpu-bind=none (or "
               "--tres-bind=gres/gpu:none) and choose GPUs with CUDA_VISIBLE_DEVICES";
    if (fl & GPUIPC_FACT_KUBERNETES)
        return "; in Kubernetes each container sees only the GPUs it was given: run both in "
               "one container, or give both containers the same GPU (one resource claim "
               "shared by both, with DRA)";
    if (fl & GPUIPC_FACT_CONTAINER)
        return "; in containers, give both the same GPU (docker run --gpus device=<UUID>)";
    return "";
}

/* The consumer cannot see the producer's GPU: no device with its UUID, or
 * the driver refuses the device. */
static int visibility(const gpuipc_diag_case *c, gpuipc_cause *out)
{
    if (c->side != GPUIPC_ROLE_CONSUMER ||
        !((call_is(c, "cuDeviceGetUuid") && c->failure->errnum == ENODEV) ||
          cu_is(c, GPUIPC_DIAG_CU_NO_DEVICE) || cu_is(c, GPUIPC_DIAG_CU_INVALID_DEVICE)))
        return 0;
    gpuipc_cause_what(out, "the consumer does not see the producer's GPU%s%s%s",
                      c->producer_gpus ? " (the producer sees " : "",
                      c->producer_gpus ? c->producer_gpus : "", c->producer_gpus ? ")" : "");
    gpuipc_cause_fix(out,
                     "give both processes that GPU (CUDA_VISIBLE_DEVICES, docker "
                     "run --gpus, the Kubernetes device plugin's resource); they "
                     "find it by UUID, so ordinals may differ%s",
                     visibility_fix(c));
    return 1;
}

/* The side's facts, if it is the one whose step failed. */
static const gpuipc_facts *failed_facts(const gpuipc_diag_case *c, const char **who)
{
    return c->failure != NULL ? failed_side(c, who) : NULL;
}

/* A CUDA driver call failed: its name starts with "cu" and a CUresult or
 * errno came with it. */
static int cuda_failed(const gpuipc_diag_case *c)
{
    return c->failure != NULL && strncmp(c->failure->call, "cu", 2) == 0 &&
           (c->failure->cu != 0 || c->failure->errnum != 0);
}

/* The driver's device files cannot be opened: a container's device cgroup
 * rules rewritten under it (systemctl daemon-reload), SELinux, or file
 * permissions. Any CUDA failure on that side is explained by it. */
static int device_files(const gpuipc_diag_case *c, gpuipc_cause *out)
{
    const char *who, *dev;
    const gpuipc_facts *f = failed_facts(c, &who);
    uint32_t e;

    if (f == NULL || !cuda_failed(c))
        return 0;
    if (f->ctl_errno == EPERM || f->ctl_errno == EACCES) {
        e = f->ctl_errno;
        dev = "/dev/nvidiactl";
    } else if (f->uvm_errno == EPERM || f->uvm_errno == EACCES) {
        e = f->uvm_errno;
        dev = "/dev/nvidia-uvm";
    } else {
        return 0;
    }
    if (e == EPERM) {
        gpuipc_cause_what(out,
                          "the %s may not open %s (EPERM): the device cgroup refuses it, as "
                          "when systemd rewrites a container's device rules (systemctl "
                          "daemon-reload; NVML says \"Unknown Error\")",
                          who, dev);
        gpuipc_cause_fix(out, "restart the container, and configure the runtime so that systemd "
                              "keeps the rules (the NVIDIA container toolkit's nvidia-ctk system "
                              "create-dev-char-symlinks, or cgroup driver settings)");
        return 1;
    }
    if (f->flags & GPUIPC_FACT_SELINUX) {
        gpuipc_cause_what(out,
                          "the %s may not open %s (EACCES) and SELinux is "
                          "enforcing: a policy denial (ausearch -m avc shows it)",
                          who, dev);
        gpuipc_cause_fix(out, "a policy that allows the container GPU access "
                              "(container_use_devices, or --security-opt label=disable "
                              "for this container)");
        return 1;
    }
    gpuipc_cause_what(out, "the %s may not open %s (EACCES): its mode or group keeps this user out",
                      who, dev);
    gpuipc_cause_fix(out, "run as a user the device files allow (often the video group), or as "
                          "root");
    return 1;
}

/* CUDA_ERROR_SYSTEM_NOT_READY: the Fabric Manager on NVSwitch systems. */
static int not_ready(const gpuipc_diag_case *c, gpuipc_cause *out)
{
    if (!cu_is(c, GPUIPC_DIAG_CU_SYSTEM_NOT_READY))
        return 0;
    gpuipc_cause_what(out,
                      "the driver is not ready (%s: CUDA_ERROR_SYSTEM_NOT_READY): on "
                      "NVSwitch systems (HGX, DGX) CUDA waits for the Fabric Manager to set "
                      "up the fabric%s%s",
                      c->failure->call[0] ? c->failure->call : "a call",
                      c->fabric ? "; NVML's fabric state: " : "", c->fabric ? c->fabric : "");
    gpuipc_cause_fix(out, "start nvidia-fabricmanager (systemctl start nvidia-fabricmanager; its "
                          "version must match the driver's) and wait until it is done (its log, "
                          "/var/log/fabricmanager.log)");
    return 1;
}

/* Interprocess events live in the driver's pool under /dev/shm: too small,
 * read-only or absent on the failed side, or two different ones. */
static int shm(const gpuipc_diag_case *c, gpuipc_cause *out)
{
    const char *who;
    const gpuipc_facts *f = failed_facts(c, &who);
    char text[96];

    if (f == NULL || c->mech == NULL || strcmp(c->mech, "ipc-event") != 0 ||
        !(call_is(c, "cuEventCreate") || call_is(c, "cuIpcGetEventHandle") ||
          call_is(c, "cuIpcOpenEventHandle")))
        return 0;
    gpuipc_facts_describe_shm(f, text, sizeof(text));
    if ((f->flags & (GPUIPC_FACT_SHM_ABSENT | GPUIPC_FACT_SHM_RO)) ||
        f->shm_avail < GPUIPC_DIAG_SHM_MIN) {
        gpuipc_cause_what(out,
                          "interprocess events live in a pool the driver keeps in "
                          "/dev/shm, and the %s has %s",
                          who, text);
        gpuipc_cause_fix(out, "a writable /dev/shm with room (docker run --shm-size=1g "
                              "or --ipc=host; Kubernetes: an emptyDir with medium: "
                              "Memory mounted at /dev/shm)");
        return 1;
    }
    if (c->producer != NULL && c->consumer != NULL && call_is(c, "cuIpcOpenEventHandle") &&
        gpuipc_facts_shm_differ(c->producer, c->consumer)) {
        gpuipc_cause_what(out,
                          "the producer and the consumer see different /dev/shm file systems "
                          "(devices 0x%llx and 0x%llx), and the driver opens an interprocess "
                          "event through the producer's pool in its /dev/shm",
                          (unsigned long long)c->producer->shm_dev,
                          (unsigned long long)c->consumer->shm_dev);
        gpuipc_cause_fix(out, "share one /dev/shm (docker run --ipc=host or "
                              "--ipc=container:<producer>; Kubernetes hostIPC: true, or both "
                              "containers in one pod with one emptyDir at /dev/shm), or use "
                              "events within one process");
        return 1;
    }
    return 0;
}

/* A link that claims peer access (the driver's word, or an NVLink NVML
 * shows) and then fails the scenario or moves wrong bytes. */
static int peer_lied(const gpuipc_diag_case *c, gpuipc_cause *out)
{
    const gpuipc_status *s = c->failure;
    int nvlink = c->link != NULL && strncmp(c->link, "NVLink", 6) == 0;
    int wrong;

    if (c->link == NULL || (c->peer_claimed != 1 && !nvlink) || s == NULL || c->min_gbps > 0 ||
        call_is(c, GPUIPC_DIAG_MIN_GBPS))
        return 0;
    wrong = (s->step == GPUIPC_STEP_VERIFY || s->step == GPUIPC_STEP_CHECK) && s->cu == 0 &&
            s->errnum == 0;
    if (!wrong && !(s->step >= GPUIPC_STEP_IMPORT && s->step <= GPUIPC_STEP_CHECK && s->cu != 0))
        return 0;
    gpuipc_cause_what(out,
                      "%s, but %s between them: "
                      "a peer path that claims to work and does not (PCIe ACS redirecting "
                      "peer traffic through the root complex, an IOMMU translating it, "
                      "peer-to-peer on consumer GPUs, a faulty riser or switch, an NVLink "
                      "down or not trained); link: %s",
                      c->peer_claimed == 1 ? "the driver says these two GPUs have peer access"
                                           : "NVML shows an NVLink between these two GPUs",
                      wrong ? "bytes came back wrong" : "a peer access failed", c->link);
    gpuipc_cause_fix(out, "check nvidia-smi topo -m and the ACS and IOMMU state named there "
                          "(setpci to clear ACS redirect on the bridges, iommu=pt or the IOMMU "
                          "off in the kernel command line), and keep applications off peer to "
                          "peer between them (NCCL_P2P_DISABLE=1) until it passes here");
    return 1;
}

/* A GPU mode that rules out sharing: MIG, confidential computing. */
static int gpu_mode(const gpuipc_diag_case *c, gpuipc_cause *out)
{
    if (c->mech == NULL || strncmp(c->mech, "memfd", 5) == 0)
        return 0;
    if (c->mig == 1)
        return gpuipc_cause_set(out,
                                "the producer's GPU is in MIG mode, and the driver "
                                "shares memory between processes only in ways MIG allows "
                                "(no CUDA IPC across GPU instances, no peer access)",
                                "run both processes on the same MIG device, or have an "
                                "administrator turn MIG off for this GPU");
    if (c->cc == 1)
        return gpuipc_cause_set(out,
                                "confidential computing is on, and the driver does not "
                                "support CUDA IPC in that mode",
                                "share within one process, or run where confidential "
                                "computing is off");
    return 0;
}

/* --min-gbps: a link slower than asked for. */
static int slow_link(const gpuipc_diag_case *c, gpuipc_cause *out)
{
    if (c->min_gbps <= 0 || !call_is(c, GPUIPC_DIAG_MIN_GBPS))
        return 0;
    gpuipc_cause_what(out,
                      "the link between the two GPUs moves less than --min-gbps "
                      "%g: a degraded or missing NVLink, a fallback to PCIe, or "
                      "copies through host memory (the line above names the link)",
                      c->min_gbps);
    gpuipc_cause_fix(out, "check nvidia-smi topo -m and nvidia-smi nvlink --status, "
                          "and the Fabric Manager on NVSwitch systems");
    return 1;
}

/* Whether the two sides are in other boots (other nodes): 1; in one: 0;
 * -1 where a side's facts or boot id are not known. */
static int across_nodes(const gpuipc_diag_case *c)
{
    int same;

    if (c->producer == NULL || c->consumer == NULL)
        return -1;
    same = gpuipc_facts_same_boot(c->producer, c->consumer);
    return same < 0 ? -1 : !same;
}

/* FABRIC and the NVLink domain, as users of multi-node NVLink racks meet
 * them (docs/troubleshooting.md): a side with no IMEX channel it may open;
 * between two nodes, two sides without a channel in common, an import
 * refused as an invalid handle (not one IMEX domain), a mapping refused
 * (no multi-node NVLink between them, or two IMEX domains in one clique). */
static int fabric_domain(const gpuipc_diag_case *c, gpuipc_cause *out)
{
    const gpuipc_facts *f, *p = c->producer, *k = c->consumer;
    const char *who;
    char a[64], b[64];

    if (c->mech == NULL || strcmp(c->mech, "fabric") != 0 || c->failure == NULL)
        return 0;
    f = failed_side(c, &who);
    if (call_is(c, "cuMemCreate") && cu_is(c, GPUIPC_DIAG_CU_NOT_PERMITTED) && f != NULL &&
        f->imex_channels == 0 && !(f->flags & GPUIPC_FACT_IMEX_MORE)) {
        gpuipc_cause_what(out, "no IMEX channel that this process can open: the %s may open "
                          "none (%s %s), and FABRIC handles need one (they serve NVLink "
                          "systems of many nodes)", who, GPUIPC_FACTS_IMEX_DIR,
                          f->imex_errno == ENOENT ? "does not exist"
                          : f->imex_errno ? "cannot be read" : "holds none it may open");
        gpuipc_cause_fix(out, "start nvidia-imex on every node of the NVLink domain and give "
                         "each process the job's channel (Slurm's switch/nvidia_imex, the "
                         "NVIDIA DRA driver's ComputeDomain, or NVreg_CreateImexChannel0=1 on "
                         "one node); on one node without IMEX, use vmm");
        return 1;
    }
    if (across_nodes(c) != 1)
        return 0;
    /* An import refused, by sides whose channels (those the mask shows:
     * two of 64 or more may be one) have none in common. */
    if (c->failure->step == GPUIPC_STEP_IMPORT &&
        (call_is(c, "cuMemImportFromShareableHandle") || call_is(c, "cuMemSetAccess")) &&
        p->imex_channels != 0 && k->imex_channels != 0 &&
        (p->imex_channels & k->imex_channels) == 0 &&
        !((p->flags & k->flags) & GPUIPC_FACT_IMEX_MORE)) {
        gpuipc_cause_what(out, "the producer may open IMEX channel %s and the consumer %s: "
                          "no channel in common, so the handle one exports is not the other's "
                          "to import", gpuipc_facts_imex_text(p, a, sizeof(a)),
                          gpuipc_facts_imex_text(k, b, sizeof(b)));
        gpuipc_cause_fix(out, "give every rank of the job the same channel (one job under "
                         "Slurm's switch/nvidia_imex, one ComputeDomain)");
        return 1;
    }
    if (call_is(c, "cuMemImportFromShareableHandle") && cu_is(c, GPUIPC_DIAG_CU_INVALID_HANDLE))
        return gpuipc_cause_set(out, "a FABRIC handle of another node was refused as an "
                                "invalid handle: the two nodes are not in one IMEX domain, or "
                                "their IMEX daemons' lists of nodes differ",
                                "list every node of the domain in /etc/nvidia-imex/"
                                "nodes_config.cfg on each node, restart nvidia-imex on all of "
                                "them, and check nvidia-imex-ctl -q (READY) and -N");
    if (call_is(c, "cuMemSetAccess") && cu_is(c, GPUIPC_DIAG_CU_INVALID_VALUE))
        return gpuipc_cause_set(out, "mapping a FABRIC handle of another node was refused "
                                "(CUDA_ERROR_INVALID_VALUE): there is no multi-node NVLink "
                                "between the two nodes (the kernel log then shows "
                                "NV_ERR_OBJECT_NOT_FOUND from fabric_vaspace.c)",
                                "share FABRIC memory across nodes only within one NVLink "
                                "domain (the GPUs' fabric cluster UUID and clique: gpuipc_test "
                                "--list); between others, use the network");
    if (call_is(c, "cuMemSetAccess") && cu_is(c, GPUIPC_DIAG_CU_NOT_SUPPORTED))
        return gpuipc_cause_set(out, "mapping a FABRIC handle of another node is not "
                                "supported (CUDA_ERROR_NOT_SUPPORTED): two IMEX domains inside "
                                "one NVLink clique",
                                "make one IMEX domain of the clique: the same nodes_config.cfg "
                                "on all its nodes, or one ComputeDomain");
    return 0;
}

/* What this driver or machine does not offer, by design: skips. */
static int not_offered(const gpuipc_diag_case *c, gpuipc_cause *out)
{
    const gpuipc_facts *f;
    const char *who;
    char ch[64];

    if (c->mech != NULL && strcmp(c->mech, "fabric") == 0 && call_is(c, "cuMemCreate") &&
        cu_is(c, GPUIPC_DIAG_CU_NOT_PERMITTED) && (f = failed_side(c, &who)) != NULL &&
        (f->imex_channels != 0 || (f->flags & GPUIPC_FACT_IMEX_MORE))) {
        /* (fabric_domain names a side that may open none.) */
        gpuipc_cause_what(out, "the driver refused a FABRIC allocation (CUDA_ERROR_NOT_"
                          "PERMITTED) although the %s may open IMEX channel %s: the channel "
                          "is not of a running IMEX domain", who,
                          gpuipc_facts_imex_text(f, ch, sizeof(ch)));
        gpuipc_cause_fix(out, "start nvidia-imex (nvidia-imex-ctl -q says READY) and give the "
                         "process the channel of its domain");
        return 1;
    }
    if (c->mech != NULL && strcmp(c->mech, "fabric") == 0 && call_is(c, "cuMemCreate") &&
        cu_is(c, GPUIPC_DIAG_CU_NOT_PERMITTED))
        return gpuipc_cause_set(out,
                                "no IMEX channel that this process can open, and FABRIC handles "
                                "need one (they serve NVLink systems of many nodes)",
                                "there, start the nvidia-imex service and give both processes "
                                "/dev/nvidia-caps-imex-channels/channel0; on one node, use vmm");
    if (!cu_is(c, GPUIPC_DIAG_CU_NOT_SUPPORTED))
        return 0;
    if (c->mech != NULL && strcmp(c->mech, "vmm-offset") == 0 && call_is(c, "cuMemMap"))
        return gpuipc_cause_set(out,
                                "this driver maps only whole imported allocations (a cuMemMap "
                                "offset other than 0 is CUDA_ERROR_NOT_SUPPORTED)",
                                "map whole allocations and sub-allocate within the mapping");
    gpuipc_cause_what(out,
                      "this driver or GPU does not support a call the mechanism needs (%s: "
                      "CUDA_ERROR_NOT_SUPPORTED)",
                      c->failure->call[0] ? c->failure->call : "a call");
    gpuipc_cause_fix(out, "a driver and GPU that do, or the mechanisms that pass here");
    return 1;
}

int gpuipc_diagnose(const gpuipc_diag_case *c, gpuipc_cause *out)
{
    static int (*const rules[])(const gpuipc_diag_case *, gpuipc_cause *) = {
        fetched_fd, legacy_same_pid, device_files, not_ready, fabric_domain, nofile, shm,
        visibility, slow_link, gpu_mode, peer_lied, not_offered};
    size_t i;

    gpuipc_cause_clear(out);
    for (i = 0; i < sizeof(rules) / sizeof(rules[0]); i++)
        if (rules[i](c, out))
            return 1;
    gpuipc_cause_clear(out);
    return 0;
}
