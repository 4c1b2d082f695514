/* SPDX-License-Identifier: Apache-2.0 */
/* facts.c: a process's confinement, read from /proc, prctl, uname and
 * getrlimit. */
#include "core/facts.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "core/proc.h"

static const char *const ns_names[GPUIPC_NS_COUNT] = {"pid", "net", "user", "mnt", "ipc",
                                                       "uts"};

const char *gpuipc_facts_ns_name(int ns)
{
    return ns >= 0 && ns < GPUIPC_NS_COUNT ? ns_names[ns] : "?";
}

static uint64_t ns_inode(const char *type)
{
    char path[64], link[64];
    uint64_t inode = 0;
    ssize_t n;

    snprintf(path, sizeof(path), "/proc/self/ns/%s", type);
    n = readlink(path, link, sizeof(link) - 1);
    if (n < 0)
        return 0;
    link[n] = '\0';
    return gpuipc_proc_parse_ns(link, type, &inode) == 0 ? inode : 0;
}

/* The value after key in /proc/self/status, in base (10 or 16), or
 * UNKNOWN / 0 if absent. */
static int status_field(const char *key, int base, unsigned long long *v)
{
    FILE *f = fopen("/proc/self/status", "re");
    char line[256];
    size_t klen = strlen(key);
    int found = 0;

    if (f == NULL)
        return 0;
    while (!found && fgets(line, sizeof(line), f) != NULL) {
        char *end;

        if (strncmp(line, key, klen) != 0)
            continue;
        errno = 0;
        *v = strtoull(line + klen, &end, base);
        found = errno == 0 && end != line + klen;
    }
    fclose(f);
    return found;
}

static uint32_t yama_scope(void)
{
    FILE *f = fopen("/proc/sys/kernel/yama/ptrace_scope", "re");
    unsigned v;
    int ok;

    if (f == NULL)
        return GPUIPC_FACTS_UNKNOWN;
    ok = fscanf(f, "%u", &v) == 1;
    fclose(f);
    return ok ? v : GPUIPC_FACTS_UNKNOWN;
}

static uint32_t limit32(rlim_t v)
{
    return v == RLIM_INFINITY || v >= GPUIPC_FACTS_UNKNOWN ? GPUIPC_FACTS_UNKNOWN : (uint32_t)v;
}

void gpuipc_facts_gather(gpuipc_facts *f)
{
    unsigned long long v;
    struct utsname u;
    struct rlimit rl;
    int i, d;

    memset(f, 0, sizeof(*f));
    for (i = 0; i < GPUIPC_NS_COUNT; i++)
        f->ns[i] = ns_inode(ns_names[i]);
    f->pid = (uint32_t)getpid();
    f->uid = (uint32_t)geteuid();
    f->seccomp = status_field("Seccomp:", 10, &v) ? (uint32_t)v : GPUIPC_FACTS_UNKNOWN;
    f->cap_eff = status_field("CapEff:", 16, &v) ? (uint64_t)v : 0;
    f->yama = yama_scope();
    d = prctl(PR_GET_DUMPABLE, 0, 0, 0, 0);
    f->dumpable = d >= 0 ? (uint32_t)d : GPUIPC_FACTS_UNKNOWN;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
        f->nofile_soft = limit32(rl.rlim_cur);
        f->nofile_hard = limit32(rl.rlim_max);
    } else {
        f->nofile_soft = f->nofile_hard = GPUIPC_FACTS_UNKNOWN;
    }
    if (uname(&u) == 0)
        snprintf(f->kernel, sizeof(f->kernel), "%.*s", (int)sizeof(f->kernel) - 1, u.release);
}

int gpuipc_facts_has_cap(const gpuipc_facts *f, int cap)
{
    return cap >= 0 && cap < 64 && (f->cap_eff >> cap) & 1;
}

int gpuipc_facts_kernel_at_least(const gpuipc_facts *f, int major, int minor)
{
    int ma, mi;

    if (sscanf(f->kernel, "%d.%d", &ma, &mi) != 2)
        return 0;
    return ma > major || (ma == major && mi >= minor);
}

static void put_u32_or_unknown(char *buf, size_t len, uint32_t v)
{
    if (v == GPUIPC_FACTS_UNKNOWN)
        snprintf(buf, len, "?");
    else
        snprintf(buf, len, "%u", v);
}

char *gpuipc_facts_describe(const gpuipc_facts *f, char *buf, size_t len)
{
    char sec[16], yama[32], dump[16], soft[16], hard[16];

    put_u32_or_unknown(sec, sizeof(sec), f->seccomp);
    if (f->yama == GPUIPC_FACTS_UNKNOWN)
        snprintf(yama, sizeof(yama), "no Yama");
    else
        snprintf(yama, sizeof(yama), "ptrace_scope %u", f->yama);
    put_u32_or_unknown(dump, sizeof(dump), f->dumpable);
    if (f->nofile_soft == GPUIPC_FACTS_UNKNOWN)
        snprintf(soft, sizeof(soft), "unlimited");
    else
        snprintf(soft, sizeof(soft), "%u", f->nofile_soft);
    if (f->nofile_hard == GPUIPC_FACTS_UNKNOWN)
        snprintf(hard, sizeof(hard), "unlimited");
    else
        snprintf(hard, sizeof(hard), "%u", f->nofile_hard);
    snprintf(buf, len, "pid %u in pid:[%llu], uid %u, seccomp %s, CapEff 0x%llx, %s, "
             "dumpable %s, RLIMIT_NOFILE %s/%s, Linux %s", f->pid,
             (unsigned long long)f->ns[GPUIPC_NS_PID], f->uid, sec,
             (unsigned long long)f->cap_eff, yama, dump, soft, hard,
             f->kernel[0] ? f->kernel : "?");
    return buf;
}

unsigned gpuipc_facts_ns_differ(const gpuipc_facts *a, const gpuipc_facts *b)
{
    unsigned mask = 0;
    int i;

    for (i = 0; i < GPUIPC_NS_COUNT; i++)
        if (a->ns[i] != 0 && b->ns[i] != 0 && a->ns[i] != b->ns[i])
            mask |= 1u << i;
    return mask;
}
