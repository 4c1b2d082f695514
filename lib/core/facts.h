/* SPDX-License-Identifier: Apache-2.0 */
/* facts.h: what a process knows about its own confinement, gathered before
 * a session and sent to the other side in HELLO, so that a failure can be
 * explained from both sides' facts: namespaces, its pid as it sees itself,
 * its user, seccomp, capabilities, Yama, dumpability, the kernel and
 * RLIMIT_NOFILE. Nothing here needs privileges or a GPU. */
#ifndef GPUIPC_FACTS_H
#define GPUIPC_FACTS_H

#include <stddef.h>
#include <stdint.h>

#define GPUIPC_FACTS_UNKNOWN 0xffffffffu /* a 32-bit fact that could not be read */
#define GPUIPC_FACTS_KERNEL_LEN 48
#define GPUIPC_CAP_SYS_PTRACE 19 /* capability number, linux/capability.h */

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
} gpuipc_facts;

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

/* Which namespaces differ between a and b (known on both sides), as a bit
 * mask of 1 << enum gpuipc_ns. */
unsigned gpuipc_facts_ns_differ(const gpuipc_facts *a, const gpuipc_facts *b);

#endif
