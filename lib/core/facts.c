/* SPDX-License-Identifier: Apache-2.0 */
/* facts.c: a process's confinement, read from /proc, /sys, /dev, prctl,
 * uname, getrlimit and the environment. */
#include "core/facts.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "core/units.h"

#include "core/proc.h"

static const char *const ns_names[GPUIPC_NS_COUNT] = {"pid", "net", "user", "mnt", "ipc",
                                                       "uts"};

const char *gpuipc_facts_ns_name(int ns)
{
    return ns >= 0 && ns < GPUIPC_NS_COUNT ? ns_names[ns] : "?";
}

const char *const gpuipc_facts_env_names[GPUIPC_FACTS_ENV_COUNT] = {
    "NCCL_CUMEM_ENABLE", "NCCL_P2P_DISABLE", "NCCL_P2P_LEVEL", "NCCL_SHM_DISABLE",
    "NCCL_MNNVL_ENABLE", "PYTORCH_CUDA_ALLOC_CONF", "CUDA_VISIBLE_DEVICES",
    "NVIDIA_VISIBLE_DEVICES", "CUDA_DEVICE_MAX_CONNECTIONS"};

const char *gpuipc_facts_path(const char *path, char *buf, size_t len)
{
    const char *root = getenv("GPUIPC_TEST_SYSROOT");

    if (root == NULL || root[0] == '\0')
        return path;
    snprintf(buf, len, "%s%s", root, path);
    return buf;
}

static FILE *fact_open(const char *path)
{
    char buf[512];

    return fopen(gpuipc_facts_path(path, buf, sizeof(buf)), "re");
}

static uint64_t ns_inode(const char *type)
{
    char path[64], link[64], buf[512];
    uint64_t inode = 0;
    ssize_t n;

    snprintf(path, sizeof(path), "/proc/self/ns/%s", type);
    n = readlink(gpuipc_facts_path(path, buf, sizeof(buf)), link, sizeof(link) - 1);
    if (n < 0)
        return 0;
    link[n] = '\0';
    return gpuipc_proc_parse_ns(link, type, &inode) == 0 ? inode : 0;
}

/* The value after key in /proc/self/status, in base (10 or 16), or
 * UNKNOWN / 0 if absent. */
static int status_field(const char *key, int base, unsigned long long *v)
{
    FILE *f = fact_open("/proc/self/status");
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
    FILE *f = fact_open("/proc/sys/kernel/yama/ptrace_scope");
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

/* The first line of a small file, without its newline; 0 if unread. */
static int read_line(const char *path, char *out, size_t len)
{
    FILE *f = fact_open(path);
    int ok;

    if (f == NULL)
        return 0;
    ok = fgets(out, (int)len, f) != NULL;
    fclose(f);
    if (ok)
        out[strcspn(out, "\n")] = '\0';
    return ok;
}

/* "0123abcd-..." (36 characters) into 16 bytes; -1 if it is not one. */
static int parse_boot_id(const char *text, uint8_t *id)
{
    int i = 0;

    for (; *text != '\0' && i < 2 * GPUIPC_FACTS_BOOT_ID_LEN; text++) {
        int v;

        if (*text == '-')
            continue;
        if (*text >= '0' && *text <= '9')
            v = *text - '0';
        else if (*text >= 'a' && *text <= 'f')
            v = *text - 'a' + 10;
        else
            return -1;
        id[i / 2] = (uint8_t)(i % 2 ? id[i / 2] | v : v << 4);
        i++;
    }
    return i == 2 * GPUIPC_FACTS_BOOT_ID_LEN && *text == '\0' ? 0 : -1;
}

/* /dev/shm: which file system, how big, how full, writable. */
static void gather_shm(gpuipc_facts *f)
{
    char buf[512];
    const char *path = gpuipc_facts_path("/dev/shm", buf, sizeof(buf));
    struct statvfs v;
    struct stat st;

    if (stat(path, &st) < 0 || !S_ISDIR(st.st_mode) || statvfs(path, &v) < 0) {
        f->flags |= GPUIPC_FACT_SHM_ABSENT;
        return;
    }
    f->shm_dev = (uint64_t)st.st_dev;
    f->shm_size = (uint64_t)v.f_blocks * v.f_frsize;
    f->shm_avail = (uint64_t)v.f_bavail * v.f_frsize;
    if (v.f_flag & ST_RDONLY)
        f->flags |= GPUIPC_FACT_SHM_RO;
}

/* errno of opening a driver device file for reading and writing (closed at
 * once), 0 where it opened. */
static uint32_t open_errno(const char *dev)
{
    char buf[512];
    int fd = open(gpuipc_facts_path(dev, buf, sizeof(buf)), O_RDWR | O_CLOEXEC | O_NOCTTY);

    if (fd < 0)
        return (uint32_t)errno;
    close(fd);
    return 0;
}

/* The IMEX channels this process may open, into f (GPUIPC_FACTS_IMEX_DIR,
 * each "channel<N>" with N in decimal). */
static void gather_imex(gpuipc_facts *f)
{
    char buf[512], path[800];
    const char *dir = gpuipc_facts_path(GPUIPC_FACTS_IMEX_DIR, buf, sizeof(buf));
    struct dirent *e;
    DIR *d = opendir(dir);

    if (d == NULL) {
        f->imex_errno = (uint32_t)errno;
        return;
    }
    while ((e = readdir(d)) != NULL) {
        const char *p = e->d_name + 7;
        unsigned long n = 0;
        int fd;

        if (strncmp(e->d_name, "channel", 7) != 0 || *p < '0' || *p > '9' ||
            (*p == '0' && p[1] != '\0'))
            continue;
        for (; *p >= '0' && *p <= '9' && n < 1000000; p++)
            n = n * 10 + (unsigned long)(*p - '0');
        if (*p != '\0')
            continue;
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK)) < 0)
            continue;
        close(fd);
        if (n < 64)
            f->imex_channels |= 1ull << n;
        else
            f->flags |= GPUIPC_FACT_IMEX_MORE;
    }
    closedir(d);
}

char *gpuipc_facts_imex_text(const gpuipc_facts *f, char *buf, size_t len)
{
    size_t used = 0;
    int n;

    buf[0] = '\0';
    for (n = 0; n < 64 && used < len; n++)
        if (f->imex_channels & (1ull << n))
            used += (size_t)snprintf(buf + used, len - used, "%s%d", used ? ", " : "", n);
    if ((f->flags & GPUIPC_FACT_IMEX_MORE) && used < len)
        used += (size_t)snprintf(buf + used, len - used, "%sone of 64 or more",
                                 used ? ", " : "");
    if (used == 0)
        snprintf(buf, len, "none");
    return buf;
}

static int exists(const char *path)
{
    char buf[512];

    return access(gpuipc_facts_path(path, buf, sizeof(buf)), F_OK) == 0;
}

/* WSL2, SELinux, the launcher and the container. */
static void gather_platform(gpuipc_facts *f)
{
    char line[128];
    const char *v;

    if (strcasestr(f->kernel, "microsoft") != NULL || exists("/dev/dxg"))
        f->flags |= GPUIPC_FACT_WSL;
    if (read_line("/sys/fs/selinux/enforce", line, sizeof(line)) && line[0] == '1')
        f->flags |= GPUIPC_FACT_SELINUX;
    if ((v = getenv("SLURM_JOB_ID")) != NULL && v[0] != '\0')
        f->flags |= GPUIPC_FACT_SLURM;
    if ((v = getenv("KUBERNETES_SERVICE_HOST")) != NULL && v[0] != '\0')
        f->flags |= GPUIPC_FACT_KUBERNETES;
    if (exists("/.dockerenv") || exists("/run/.containerenv"))
        f->flags |= GPUIPC_FACT_CONTAINER;
}

void gpuipc_facts_gather(gpuipc_facts *f)
{
    char line[128];
    const char *text;
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
    if (getenv("GPUIPC_TEST_SYSROOT") != NULL &&
        read_line("/proc/sys/kernel/osrelease", line, sizeof(line)))
        snprintf(f->kernel, sizeof(f->kernel), "%.*s", (int)sizeof(f->kernel) - 1, line);
    else if (uname(&u) == 0)
        snprintf(f->kernel, sizeof(f->kernel), "%.*s", (int)sizeof(f->kernel) - 1, u.release);
    for (i = 0; f->kernel[i] != '\0'; i++) /* HELLO carries printable text only */
        if (f->kernel[i] < 0x20 || f->kernel[i] > 0x7e)
            f->kernel[i] = '?';
    gather_shm(f);
    f->ctl_errno = open_errno("/dev/nvidiactl");
    f->uvm_errno = open_errno("/dev/nvidia-uvm");
    gather_imex(f);
    gather_platform(f);
    if (!read_line("/proc/sys/kernel/random/boot_id", line, sizeof(line)) ||
        parse_boot_id(line, f->boot_id) < 0)
        memset(f->boot_id, 0, sizeof(f->boot_id));
    /* Test-only: another boot id and no other fact changed, so that ranks
     * on this machine stand for ranks on other nodes (docs/testing.md). A
     * value that is no boot id leaves it unknown. */
    if ((text = getenv("GPUIPC_TEST_BOOT_ID")) != NULL && parse_boot_id(text, f->boot_id) < 0)
        memset(f->boot_id, 0, sizeof(f->boot_id));
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
    char sec[16], yama[32], dump[16], soft[16], hard[16], shm[96];
    size_t used;

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
    used = strlen(buf);
    if (used < len)
        snprintf(buf + used, len - used, ", %s%s%s%s%s%s%s%s",
                 gpuipc_facts_describe_shm(f, shm, sizeof(shm)),
                 f->ctl_errno != 0 && f->ctl_errno != ENOENT ? ", /dev/nvidiactl refused" : "",
                 f->uvm_errno != 0 && f->uvm_errno != ENOENT ? ", /dev/nvidia-uvm refused" : "",
                 f->flags & GPUIPC_FACT_WSL ? ", WSL2" : "",
                 f->flags & GPUIPC_FACT_SELINUX ? ", SELinux enforcing" : "",
                 f->flags & GPUIPC_FACT_SLURM ? ", under Slurm" : "",
                 f->flags & GPUIPC_FACT_KUBERNETES ? ", in a Kubernetes pod" : "",
                 f->flags & GPUIPC_FACT_CONTAINER ? ", in a container" : "");
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

char *gpuipc_facts_describe_shm(const gpuipc_facts *f, char *buf, size_t len)
{
    char size[32], avail[32];

    if (f->flags & GPUIPC_FACT_SHM_ABSENT) {
        snprintf(buf, len, "no /dev/shm");
        return buf;
    }
    snprintf(buf, len, "/dev/shm %s (%s free)%s",
             gpuipc_units_format_size(f->shm_size, size, sizeof(size)),
             gpuipc_units_format_size(f->shm_avail, avail, sizeof(avail)),
             f->flags & GPUIPC_FACT_SHM_RO ? ", read-only" : "");
    return buf;
}

int gpuipc_facts_shm_differ(const gpuipc_facts *a, const gpuipc_facts *b)
{
    return a->shm_dev != 0 && b->shm_dev != 0 && a->shm_dev != b->shm_dev;
}

static int boot_known(const gpuipc_facts *f)
{
    static const uint8_t zero[GPUIPC_FACTS_BOOT_ID_LEN];

    return memcmp(f->boot_id, zero, sizeof(zero)) != 0;
}

int gpuipc_facts_same_boot(const gpuipc_facts *a, const gpuipc_facts *b)
{
    if (!boot_known(a) || !boot_known(b))
        return -1;
    return memcmp(a->boot_id, b->boot_id, GPUIPC_FACTS_BOOT_ID_LEN) == 0;
}

/* The settings as the program found them (gpuipc_facts_env_snapshot),
 * before it set any of its own (CUDA_DEVICE_MAX_CONNECTIONS). */
static struct {
    int taken;
    int set[GPUIPC_FACTS_ENV_COUNT];
    char value[GPUIPC_FACTS_ENV_COUNT][256];
} snap;

void gpuipc_facts_env_snapshot(void)
{
    int i;

    for (i = 0; i < GPUIPC_FACTS_ENV_COUNT; i++) {
        const char *v = getenv(gpuipc_facts_env_names[i]);

        snap.set[i] = v != NULL;
        snprintf(snap.value[i], sizeof(snap.value[i]), "%s", v != NULL ? v : "");
    }
    snap.taken = 1;
}

const char *gpuipc_facts_env_get(const char *name)
{
    int i;

    for (i = 0; snap.taken && i < GPUIPC_FACTS_ENV_COUNT; i++)
        if (strcmp(name, gpuipc_facts_env_names[i]) == 0)
            return snap.set[i] ? snap.value[i] : NULL;
    return getenv(name);
}

int gpuipc_facts_env(char *buf, size_t len)
{
    size_t used = 0;
    int i, n = 0;

    if (len > 0)
        buf[0] = '\0';
    for (i = 0; i < GPUIPC_FACTS_ENV_COUNT; i++) {
        const char *v = gpuipc_facts_env_get(gpuipc_facts_env_names[i]);

        if (v == NULL || used >= len)
            continue;
        used += (size_t)snprintf(buf + used, len - used, "%s%s=%.200s", n ? "; " : "",
                                 gpuipc_facts_env_names[i], v);
        n++;
    }
    return n;
}

/* Whether the variable is set to one of NCCL's words for "off" or "on". */
static int env_is(const char *name, int on)
{
    const char *v = gpuipc_facts_env_get(name);

    if (v == NULL || v[0] == '\0')
        return 0;
    if (on)
        return strcmp(v, "1") == 0 || strcasecmp(v, "true") == 0 || strcasecmp(v, "yes") == 0;
    return strcmp(v, "0") == 0 || strcasecmp(v, "false") == 0 || strcasecmp(v, "no") == 0;
}

int gpuipc_facts_env_effects(char *buf, size_t len)
{
    const char *v;
    size_t used = 0;
    int n = 0;

#define EFFECT(...)                                                                       \
    do {                                                                                  \
        if (used < len)                                                                   \
            used += (size_t)snprintf(buf + used, len - used, "%s", n ? "; " : "");        \
        if (used < len)                                                                   \
            used += (size_t)snprintf(buf + used, len - used, __VA_ARGS__);                \
        n++;                                                                              \
    } while (0)
    if (len > 0)
        buf[0] = '\0';
    if (env_is("NCCL_CUMEM_ENABLE", 0))
        EFFECT("NCCL_CUMEM_ENABLE=0: NCCL shares memory with legacy IPC handles, not the VMM "
               "handles proven here, and uses no FABRIC handles (no multi-node NVLink)");
    if (env_is("NCCL_P2P_DISABLE", 1))
        EFFECT("NCCL_P2P_DISABLE=1: NCCL moves data between GPUs through host memory, not "
               "peer to peer");
    if ((v = gpuipc_facts_env_get("NCCL_P2P_LEVEL")) != NULL && v[0] != '\0')
        EFFECT("NCCL_P2P_LEVEL=%.16s: NCCL uses peer to peer only between GPUs as close as "
               "that level", v);
    if (env_is("NCCL_SHM_DISABLE", 1))
        EFFECT("NCCL_SHM_DISABLE=1: NCCL does not use its shared-memory transport");
    if (env_is("NCCL_MNNVL_ENABLE", 0))
        EFFECT("NCCL_MNNVL_ENABLE=0: NCCL does not use multi-node NVLink (FABRIC handles)");
    if ((v = gpuipc_facts_env_get("PYTORCH_CUDA_ALLOC_CONF")) != NULL &&
        strcasestr(v, "expandable_segments:true") != NULL)
        EFFECT("PYTORCH_CUDA_ALLOC_CONF expandable_segments: PyTorch allocates with VMM, "
               "which legacy IPC (cudaIpcGetMemHandle) refuses: share it as vmm does");
    if ((v = gpuipc_facts_env_get("CUDA_VISIBLE_DEVICES")) != NULL)
        EFFECT("CUDA_VISIBLE_DEVICES=%.64s: CUDA applications see only those GPUs, numbered "
               "from 0 in that order: ordinals differ between processes with other settings "
               "(pass UUIDs, as this program does)", v);
#undef EFFECT
    return n;
}
