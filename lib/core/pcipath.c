/* SPDX-License-Identifier: Apache-2.0 */
/* pcipath.c: ACS on the bridges above a PCIe device and its IOMMU group,
 * from sysfs. */
#include "core/pcipath.h"

#include <ctype.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/facts.h"

#define CONFIG_MAX 4096
#define EXT_CAP_START 0x100

static unsigned get16(const unsigned char *p)
{
    return (unsigned)p[0] | (unsigned)p[1] << 8;
}

int gpuipc_pci_acs_control(const unsigned char *config, size_t len, unsigned *ctrl)
{
    unsigned off = EXT_CAP_START;
    int hops;

    if (len < EXT_CAP_START + 4)
        return -1;
    /* Each header: ID (16 bits), version (4), next offset (12); a chain
     * that loops or leaves the image ends the walk. */
    for (hops = 0; hops < 64 && off >= EXT_CAP_START && off + 8 <= len; hops++) {
        uint32_t h = (uint32_t)get16(config + off) | (uint32_t)get16(config + off + 2) << 16;

        if (h == 0 || h == 0xffffffffu)
            return 0;
        if ((h & 0xffff) == GPUIPC_PCI_EXT_CAP_ACS) {
            *ctrl = get16(config + off + 6);
            return 1;
        }
        off = (h >> 20) & 0xffc;
    }
    return 0;
}

/* "0000:65:00.0" from "0000:65:00.0" or "00000000:65:00.0", lower case;
 * -1 if it is neither. */
static int normalize(const char *in, char *out, size_t len)
{
    size_t n = strlen(in), i;

    if (n == 16 && strncmp(in, "0000", 4) == 0)
        in += 4, n -= 4;
    if (n != 12 || len < 13 || in[4] != ':' || in[7] != ':' || in[10] != '.')
        return -1;
    for (i = 0; i < n; i++) {
        if (i != 4 && i != 7 && i != 10 && !isxdigit((unsigned char)in[i]))
            return -1;
        out[i] = (char)tolower((unsigned char)in[i]);
    }
    out[n] = '\0';
    return 0;
}

/* Whether the path component c (up to its end or '/') is a bus id. */
static int is_bdf(const char *c)
{
    char tmp[16];
    size_t n = strcspn(c, "/");

    if (n != 12)
        return 0;
    memcpy(tmp, c, n);
    tmp[n] = '\0';
    return normalize(tmp, tmp, sizeof(tmp)) == 0;
}

/* Reads up to CONFIG_MAX bytes of dir/config into buf; the count or -1. */
static ssize_t read_config(const char *dir, unsigned char *buf)
{
    char path[PATH_MAX + 8];
    ssize_t n, got = 0;
    int fd;

    snprintf(path, sizeof(path), "%s/config", dir);
    if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
        return -1;
    while (got < CONFIG_MAX && (n = read(fd, buf + got, (size_t)(CONFIG_MAX - got))) > 0)
        got += n;
    close(fd);
    return got;
}

/* The device's IOMMU group and type, into buf; 1 where it translates. */
static int iommu_of(const char *dev, char *buf, size_t len)
{
    char path[PATH_MAX + 32], link[PATH_MAX], type[32] = "";
    const char *group;
    ssize_t n;
    FILE *f;

    snprintf(path, sizeof(path), "%s/iommu_group", dev);
    if ((n = readlink(path, link, sizeof(link) - 1)) < 0) {
        snprintf(buf, len, "no IOMMU group (IOMMU off)");
        return 0;
    }
    link[n] = '\0';
    group = strrchr(link, '/') ? strrchr(link, '/') + 1 : link;
    snprintf(path, sizeof(path), "%s/iommu_group/type", dev);
    if ((f = fopen(path, "re")) != NULL) {
        if (fgets(type, sizeof(type), f) == NULL)
            type[0] = '\0';
        fclose(f);
        type[strcspn(type, "\n")] = '\0';
    }
    if (type[0] == '\0') {
        snprintf(buf, len, "IOMMU group %.16s (type not shown)", group);
        return 0;
    }
    snprintf(buf, len, "IOMMU group %.16s, type %s (%s)", group, type,
             strcmp(type, "identity") == 0 ? "passthrough"
             : strncmp(type, "DMA", 3) == 0 ? "translated: peer traffic may go through it"
                                             : "see the kernel's iommu documentation");
    return strncmp(type, "DMA", 3) == 0;
}

/* The bridges of real (a resolved sysfs path) whose component starts at or
 * after offset from: their ACS redirects go into red (used bytes in *used),
 * the count of those found, read and not read into the counters. */
typedef struct acs_scan {
    char red[384];
    size_t used;
    int bridges, unread, found, short_read;
} acs_scan;

static void scan_bridges(const char *real, size_t from, acs_scan *a)
{
    const char *p;

    for (p = strchr(real, '/'); p != NULL; p = strchr(p + 1, '/')) {
        unsigned char config[CONFIG_MAX];
        char dir[PATH_MAX];
        unsigned ctrl;
        ssize_t n;
        int rc;

        if ((size_t)(p + 1 - real) < from || !is_bdf(p + 1) || strchr(p + 1, '/') == NULL)
            continue;
        snprintf(dir, sizeof(dir), "%.*s", (int)(p + 1 - real) + 12, real);
        a->bridges++;
        n = read_config(dir, config);
        rc = n < 0 ? -1 : gpuipc_pci_acs_control(config, (size_t)n, &ctrl);
        if (rc < 0) {
            a->unread++;
            a->short_read |= n >= 0;
            continue;
        }
        if (rc == 1 && (ctrl & (GPUIPC_PCI_ACS_RR | GPUIPC_PCI_ACS_CR | GPUIPC_PCI_ACS_EC)) &&
            a->used < sizeof(a->red)) {
            char bits[48];

            snprintf(bits, sizeof(bits), "%s%s%s%s%s", ctrl & GPUIPC_PCI_ACS_RR ? "request" : "",
                     (ctrl & GPUIPC_PCI_ACS_RR) && (ctrl & (GPUIPC_PCI_ACS_CR | GPUIPC_PCI_ACS_EC))
                         ? ", " : "",
                     ctrl & GPUIPC_PCI_ACS_CR ? "completion" : "",
                     (ctrl & GPUIPC_PCI_ACS_CR) && (ctrl & GPUIPC_PCI_ACS_EC) ? ", " : "",
                     ctrl & GPUIPC_PCI_ACS_EC ? "egress control" : "");
            a->used += (size_t)snprintf(a->red + a->used, sizeof(a->red) - a->used,
                                        "%s%.12s (%s)", a->used ? ", " : "", p + 1, bits);
            a->found++;
        }
    }
}

/* The ACS part of a description, after what is in buf already. */
static void say_acs(const acs_scan *a, const char *where, char *buf, size_t len)
{
    size_t used = strlen(buf);

    if (used >= len)
        return;
    if (a->red[0] != '\0')
        snprintf(buf + used, len - used, "; ACS redirects peer traffic on %s", a->red);
    else if (a->unread > 0)
        snprintf(buf + used, len - used, "; ACS not known on %d of %d bridge%s (%s)", a->unread,
                 a->bridges, a->bridges == 1 ? "" : "s",
                 geteuid() != 0 ? "their extended configuration space is readable by root only"
                 : a->short_read ? "no extended configuration space shown in sysfs"
                                 : "their configuration space could not be read");
    else
        snprintf(buf + used, len - used, "; no ACS redirect on the %d bridge%s %s", a->bridges,
                 a->bridges == 1 ? "" : "s", where);
}

/* The resolved sysfs path of the device at bus_id into real, its bus id into
 * bdf; 0, or -1 with buf saying why. */
static int resolve(const char *bus_id, char *bdf, char *real, char *sysdir, size_t sysdir_len,
                   char *buf, size_t len)
{
    char spath[64], sbuf[PATH_MAX];
    const char *dev;

    if (normalize(bus_id, bdf, 16) < 0) {
        snprintf(buf, len, "PCIe path of '%.32s' not known (not a bus id)", bus_id);
        return -1;
    }
    snprintf(spath, sizeof(spath), "/sys/bus/pci/devices/%s", bdf);
    dev = gpuipc_facts_path(spath, sbuf, sizeof(sbuf));
    snprintf(sysdir, sysdir_len, "%s", dev);
    if (realpath(dev, real) == NULL) {
        snprintf(buf, len, "PCIe path of %s not in sysfs", bdf);
        return -1;
    }
    return 0;
}

int gpuipc_pci_path_describe(const char *bus_id, char *buf, size_t len)
{
    char bdf[16], real[PATH_MAX], sysdir[PATH_MAX], where[48];
    acs_scan a;
    int found;

    memset(&a, 0, sizeof(a));
    buf[0] = '\0';
    if (resolve(bus_id, bdf, real, sysdir, sizeof(sysdir), buf, len) < 0)
        return 0;
    found = iommu_of(sysdir, buf, len);
    scan_bridges(real, 0, &a);
    snprintf(where, sizeof(where), "above %s", bdf);
    say_acs(&a, where, buf, len);
    return found + a.found;
}

int gpuipc_pci_pair_describe(const char *bus_a, const char *bus_b, char *buf, size_t len)
{
    char bdf[2][16], real[2][PATH_MAX], sysdir[2][PATH_MAX], iommu[2][128], why[128];
    size_t common = 0, i;
    acs_scan a;
    int k, found = 0;

    memset(&a, 0, sizeof(a));
    buf[0] = '\0';
    for (k = 0; k < 2; k++)
        if (resolve(k ? bus_b : bus_a, bdf[k], real[k], sysdir[k], sizeof(sysdir[k]), buf,
                    len) < 0)
            return 0;
    /* The longest common directory of the two paths: peer traffic turns
     * there; the bridges below it, on either side, carry it. */
    for (i = 0; real[0][i] != '\0' && real[0][i] == real[1][i]; i++)
        if (real[0][i] == '/')
            common = i + 1;
    for (k = 0; k < 2; k++) {
        found += iommu_of(sysdir[k], iommu[k], sizeof(iommu[k]));
        scan_bridges(real[k], common, &a);
    }
    {
        char top[PATH_MAX];
        const char *name;

        snprintf(top, sizeof(top), "%.*s", (int)(common > 0 ? common - 1 : 0), real[0]);
        name = strrchr(top, '/') != NULL ? strrchr(top, '/') + 1 : top;
        snprintf(why, sizeof(why), "between them (below %s%.40s)",
                 is_bdf(name) ? "" : "the host bridge ", name[0] ? name : "/");
    }
    snprintf(buf, len, "%s: %s; %s: %s", bdf[0], iommu[0], bdf[1], iommu[1]);
    say_acs(&a, why, buf, len);
    return found + a.found;
}
