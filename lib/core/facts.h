/* SPDX-License-Identifier: Apache-2.0 */
/* facts.h: what a process knows about its own confinement, gathered before
 * a session and sent to the other side in HELLO, so that a failure can be
 * explained from both sides' facts: namespaces, its pid as it sees itself,
 * its user, seccomp, capabilities, Yama, dumpability, the kernel,
 * RLIMIT_NOFILE, its /dev/shm, whether it may open the driver's device
 * files, SELinux, WSL2, the launcher or container it runs under, and the
 * boot it runs in. Nothing here needs privileges or a GPU.
 *
 * Test-only hook: where GPUIPC_TEST_SYSROOT names a directory, every file
 * under /proc, /sys and /dev that the facts read is read under it instead
 * (docs/testing.md), so that a test can give a process any of the causes
 * below without the condition on the machine. */
#ifndef GPUIPC_FACTS_H
#define GPUIPC_FACTS_H

#include <stddef.h>
#include <stdint.h>

#define GPUIPC_FACTS_UNKNOWN 0xffffffffu /* a 32-bit fact that could not be read */
#define GPUIPC_FACTS_KERNEL_LEN 48
#define GPUIPC_CAP_SYS_PTRACE 19 /* capability number, linux/capability.h */
#define GPUIPC_FACTS_BOOT_ID_LEN 16

/* Bits of gpuipc_facts.flags. */
#define GPUIPC_FACT_SHM_ABSENT 0x01u   /* no /dev/shm (or it is not a directory) */
#define GPUIPC_FACT_SHM_RO 0x02u       /* /dev/shm is mounted read-only */
#define GPUIPC_FACT_WSL 0x04u          /* a WSL2 kernel, or /dev/dxg */
#define GPUIPC_FACT_SELINUX 0x08u      /* SELinux is enforcing */
#define GPUIPC_FACT_SLURM 0x10u        /* started by Slurm (SLURM_JOB_ID) */
#define GPUIPC_FACT_KUBERNETES 0x20u   /* in a Kubernetes pod (KUBERNETES_SERVICE_HOST) */
#define GPUIPC_FACT_CONTAINER 0x40u    /* in a container (/.dockerenv, /run/.containerenv) */
#define GPUIPC_FACT_IMEX_MORE 0x80u    /* an IMEX channel numbered 64 or more opened (not in
                                        * imex_channels) */
#define GPUIPC_FACT_FLAGS_ALL 0xffu
#define GPUIPC_FACTS_IMEX_DIR "/dev/nvidia-caps-imex-channels"

/* The environment settings that change what NCCL, PyTorch and CUDA
 * applications do on this node (recorded, never acted on). */
#define GPUIPC_FACTS_ENV_COUNT 9
extern const char *const gpuipc_facts_env_names[GPUIPC_FACTS_ENV_COUNT];

/* The namespaces whose identity is recorded, in gpuipc_facts.ns[]. */
enum gpuipc_ns {
    GPUIPC_NS_PID,
    GPUIPC_NS_NET,
    GPUIPC_NS_USER,
    GPUIPC_NS_MNT,
    GPUIPC_NS_IPC,
    GPUIPC_NS_UTS,
    GPUIPC_NS_COUNT
};

typedef struct gpuipc_facts {
    uint64_t ns[GPUIPC_NS_COUNT]; /* inode of /proc/self/ns/<type>; 0 if unknown */
    uint32_t pid;         /* getpid(): this process's pid in its own PID namespace */
    uint32_t uid;         /* effective uid */
    uint32_t seccomp;     /* Seccomp: of /proc/self/status: 0 none, 1 strict, 2 filter */
    uint32_t yama;        /* /proc/sys/kernel/yama/ptrace_scope: 0 to 3, UNKNOWN if absent */
    uint32_t dumpable;    /* prctl(PR_GET_DUMPABLE): 0, 1 or 2 */
    uint32_t nofile_soft; /* RLIMIT_NOFILE; UNKNOWN for unlimited */
    uint32_t nofile_hard;
    uint64_t cap_eff;     /* CapEff: of /proc/self/status */
    char kernel[GPUIPC_FACTS_KERNEL_LEN]; /* uname -r, NUL-terminated */
    uint32_t flags;       /* GPUIPC_FACT_* */
    uint64_t shm_dev;     /* st_dev of /dev/shm (the file system), 0 if absent */
    uint64_t shm_size;    /* its size in bytes (statvfs), 0 if absent */
    uint64_t shm_avail;   /* bytes free in it for this process */
    /* errno of open(O_RDWR) of /dev/nvidiactl and /dev/nvidia-uvm: 0 where
     * it opened (and was closed at once), ENOENT where there is none. */
    uint32_t ctl_errno;
    uint32_t uvm_errno;
    uint8_t boot_id[GPUIPC_FACTS_BOOT_ID_LEN]; /* /proc/sys/kernel/random/boot_id; 0s unknown */
    /* The IMEX channels (GPUIPC_FACTS_IMEX_DIR/channelN) this process may
     * open (open(O_RDONLY), closed at once): bit N for channel N < 64; and
     * the errno of opening their directory (0 where it was read, ENOENT
     * where there is none). A FABRIC allocation needs one; Slurm's
     * switch/nvidia_imex gives each job its own N. */
    uint64_t imex_channels;
    uint32_t imex_errno;
} gpuipc_facts;

/* The IMEX channels in f as text, "0", "0, 5" or "none", into buf. Returns
 * buf. */
char *gpuipc_facts_imex_text(const gpuipc_facts *f, char *buf, size_t len);

/* Gathers this process's facts into f; what cannot be read is left unknown
 * (0 for a namespace, GPUIPC_FACTS_UNKNOWN for a 32-bit fact). */
void gpuipc_facts_gather(gpuipc_facts *f);

/* The name of namespace type ns ("pid", "net", ...). */
const char *gpuipc_facts_ns_name(int ns);

/* Whether f holds capability cap in its effective set. */
int gpuipc_facts_has_cap(const gpuipc_facts *f, int cap);

/* Whether the kernel release in f is at least major.minor (0 if unknown). */
int gpuipc_facts_kernel_at_least(const gpuipc_facts *f, int major, int minor);

/* One line for the step log: "pid 1 in pid:[4026531836], uid 0, seccomp 2,
 * CapEff 0x..., ptrace_scope 1, dumpable 1, RLIMIT_NOFILE 1024/4096, Linux
 * 6.1.0". Returns buf. */
char *gpuipc_facts_describe(const gpuipc_facts *f, char *buf, size_t len);

/* The path a fact is read from: path itself, or under GPUIPC_TEST_SYSROOT
 * (the test-only hook above). Returns buf. */
const char *gpuipc_facts_path(const char *path, char *buf, size_t len);

/* "/dev/shm 64 MiB (12 KiB free), read-only" and the like, into buf. */
char *gpuipc_facts_describe_shm(const gpuipc_facts *f, char *buf, size_t len);

/* Whether both sides' /dev/shm are known and are different file systems
 * (as NCCL compares them: st_dev). */
int gpuipc_facts_shm_differ(const gpuipc_facts *a, const gpuipc_facts *b);

/* Whether a and b were gathered in the same boot of the same machine (boot
 * ids known on both sides and equal); -1 where either is unknown. */
int gpuipc_facts_same_boot(const gpuipc_facts *a, const gpuipc_facts *b);

/* Keeps the settings of gpuipc_facts_env_names as they are now: main calls
 * it first, before the program sets any (the two functions below and
 * gpuipc_facts_env_get read the copy once it is taken). */
void gpuipc_facts_env_snapshot(void);

/* One setting of gpuipc_facts_env_names as the program found it, or NULL. */
const char *gpuipc_facts_env_get(const char *name);

/* The environment settings of gpuipc_facts_env_names this process has, as
 * "NAME=value" lines joined by "; " into buf ("" for none). Returns the
 * count. */
int gpuipc_facts_env(char *buf, size_t len);

/* What the settings of this environment make NCCL or PyTorch do that this
 * run does not (one sentence each, joined by "; "), into buf; returns the
 * count (0: buf is ""). */
int gpuipc_facts_env_effects(char *buf, size_t len);

/* Which namespaces differ between a and b (known on both sides), as a bit
 * mask of 1 << enum gpuipc_ns. */
unsigned gpuipc_facts_ns_differ(const gpuipc_facts *a, const gpuipc_facts *b);

#endif
