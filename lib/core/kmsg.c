/* SPDX-License-Identifier: Apache-2.0 */
/* kmsg.c: the NVIDIA driver's Xid and fabric lines about the run's GPUs,
 * read from the kernel log without blocking and within fixed bounds. */
#include "core/kmsg.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "core/names.h"
#include "core/random.h"

/* /dev/kmsg gives a record a read and fails with EINVAL where the buffer
 * cannot hold it; records are at most about 1 KiB of text plus their
 * dictionary, so this holds any of them, and any line of a recorded log
 * worth reading (a longer one is cut). */
#define KMSG_BUF 16384

/* A GPU's place on PCI as the kernel's Xid lines name it: domain, bus,
 * device (the function is left out there, so it is here). */
typedef struct pci_addr {
    unsigned long domain, bus, dev;
} pci_addr;

/* Where the records come from: a character device gives one record a
 * read(); a regular file is cut into lines here. */
typedef struct reader {
    int fd;
    int is_file;
    char *buf;
    size_t have;       /* bytes in buf (a file's) */
    size_t pos;        /* where the next line starts in buf (a file's) */
    int eof;           /* the file's end, or the bound on bytes, was met */
    int skipping;      /* a line longer than buf was cut: drop the rest of it */
    uint64_t bytes;    /* read so far */
    unsigned records;  /* returned so far */
    int bounded;       /* a bound ended the read */
    unsigned overrun;  /* EPIPEs met: records overwritten while read */
} reader;

uint64_t gpuipc_kmsg_now_us(void)
{
    struct timespec ts;

    /* The raw clock, which NTP does not slew: the kernel stamps its
     * records with its own clock (local_clock), which counts from boot at
     * the hardware's rate too; CLOCK_MONOTONIC may be minutes away from it
     * after weeks of NTP's corrections. */
    clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

uint64_t gpuipc_kmsg_since_us(uint64_t ago_ns)
{
    uint64_t now = gpuipc_kmsg_now_us(), ago = ago_ns / 1000u;

    return now > ago ? now - ago : 0;
}

/* Reads at most max hex digits (at least one) from [*p, end). */
static int parse_hex(const char **p, const char *end, int max, unsigned long *v)
{
    int n = 0, d;

    *v = 0;
    while (*p < end && n < max && (d = gpuipc_random_hex_value(**p)) >= 0) {
        *v = *v * 16 + (unsigned long)d;
        (*p)++;
        n++;
    }
    return n > 0 ? 0 : -1;
}

/* Reads "DOMAIN:BUS:DEV" (the domain in 1 to 8 hex digits: the kernel
 * prints 4, CUDA and NVML 8) from [*p, end), leaving *p after it. */
static int parse_pci(const char **p, const char *end, pci_addr *a)
{
    if (parse_hex(p, end, 8, &a->domain) < 0 || *p >= end || **p != ':')
        return -1;
    (*p)++;
    if (parse_hex(p, end, 2, &a->bus) < 0 || *p >= end || **p != ':')
        return -1;
    (*p)++;
    return parse_hex(p, end, 2, &a->dev);
}

/* A bus id as the caller gives it: "0000:1b:00.0", "00000000:1B:00.0", or
 * without the function. */
static int parse_bus_id(const char *s, pci_addr *a)
{
    const char *p = s, *end = s + strlen(s);
    unsigned long fn;

    if (parse_pci(&p, end, a) < 0)
        return -1;
    if (p < end && *p == '.') {
        p++;
        if (parse_hex(&p, end, 1, &fn) < 0 || fn > 7)
            return -1;
    }
    return p == end ? 0 : -1;
}

/* Whether [s, s + len) holds needle, where case (ci: 1) is ignored or not. */
static int has(const char *s, size_t len, const char *needle, int ci)
{
    size_t m = strlen(needle), i;

    for (i = 0; m <= len && i <= len - m; i++)
        if (ci ? strncasecmp(s + i, needle, m) == 0 : memcmp(s + i, needle, m) == 0)
            return 1;
    return 0;
}

/* Where needle first starts in [s, s + len), or NULL. */
static const char *find(const char *s, size_t len, const char *needle)
{
    size_t m = strlen(needle), i;

    for (i = 0; m <= len && i <= len - m; i++)
        if (memcmp(s + i, needle, m) == 0)
            return s + i;
    return NULL;
}

/* Whether the message msg is one to keep: an NVRM Xid line of one of the
 * named GPUs (any, where n is 0), or another NVRM line naming
 * NV_ERR_OBJECT_NOT_FOUND or the fabric. An Xid line is judged by its GPU
 * alone, so that another GPU's NVLink Xid is not kept for naming the
 * fabric. */
static int wanted(const char *msg, size_t len, const char *const *bus_ids, size_t n)
{
    const char *end = msg + len, *nvrm = find(msg, len, "NVRM:"), *p;
    pci_addr got, want;
    size_t i;

    if (nvrm == NULL)
        return 0;
    /* "NVRM: Xid (PCI:0000:1b:00): 79, ..."; drivers before about 2015
     * wrote "NVRM: Xid (0000:01:00): 13, ..." without "PCI:". */
    if ((p = find(nvrm, (size_t)(end - nvrm), "Xid (")) != NULL) {
        p += strlen("Xid (");
        if (end - p >= 4 && memcmp(p, "PCI:", 4) == 0)
            p += 4;
        if (parse_pci(&p, end, &got) < 0 || p >= end || *p != ')')
            return n == 0;
        if (n == 0)
            return 1;
        for (i = 0; i < n; i++)
            if (parse_bus_id(bus_ids[i], &want) == 0 && want.domain == got.domain &&
                want.bus == got.bus && want.dev == got.dev)
                return 1;
        return 0;
    }
    return has(nvrm, (size_t)(end - nvrm), "NV_ERR_OBJECT_NOT_FOUND", 0) ||
           has(nvrm, (size_t)(end - nvrm), "fabric", 1);
}

/* Reads an unsigned decimal number from [*p, end), leaving *p after it. */
static int parse_dec(const char **p, const char *end, uint64_t *v)
{
    int n = 0;

    *v = 0;
    while (*p < end && **p >= '0' && **p <= '9' && n < 20) {
        *v = *v * 10 + (uint64_t)(**p - '0');
        (*p)++;
        n++;
    }
    return n > 0 ? 0 : -1;
}

/* Splits a record "PRI,SEQ,TS_USEC,FLAGS[,...];MESSAGE" into its priority,
 * time and message. Returns -1 where it is not one. */
static int parse_record(const char *rec, size_t len, uint64_t *pri, uint64_t *ts,
                        const char **msg, size_t *mlen)
{
    const char *p = rec, *end = rec + len, *semi;
    uint64_t seq;

    if ((semi = memchr(rec, ';', len)) == NULL)
        return -1;
    if (parse_dec(&p, semi, pri) < 0 || p >= semi || *p++ != ',' ||
        parse_dec(&p, semi, &seq) < 0 || p >= semi || *p++ != ',' ||
        parse_dec(&p, semi, ts) < 0 || (p < semi && *p != ','))
        return -1;
    *msg = semi + 1;
    *mlen = (size_t)(end - *msg);
    return 0;
}

/* The next record or line, in [*rec, *rec + *len), without its newline.
 * Returns 1, 0 at the end (or at a bound, which r->bounded then says), or
 * a negative errno where read failed. */
static int next_record(reader *r, const char **rec, size_t *len)
{
    ssize_t got;
    size_t want;
    char *nl;

    if (r->records >= GPUIPC_KMSG_MAX_RECORDS) {
        r->bounded = 1;
        return 0;
    }
    for (;;) {
        if (r->is_file) {
            nl = memchr(r->buf + r->pos, '\n', r->have - r->pos);
            if (nl != NULL || (r->eof && r->pos < r->have) ||
                (r->pos == 0 && r->have == KMSG_BUF)) {
                int cut = r->skipping;
                size_t end = nl != NULL ? (size_t)(nl - r->buf) : r->have;

                *rec = r->buf + r->pos;
                *len = end - r->pos;
                r->pos = nl != NULL ? end + 1 : r->have;
                /* A line longer than the buffer: this is its start, and what
                 * follows up to its newline is dropped. */
                r->skipping = nl == NULL && !r->eof;
                if (cut)
                    continue;
                r->records++;
                return 1;
            }
            if (r->eof)
                return 0;
            memmove(r->buf, r->buf + r->pos, r->have - r->pos);
            r->have -= r->pos;
            r->pos = 0;
            want = KMSG_BUF - r->have;
        } else {
            want = KMSG_BUF;
        }
        /* A record of the device needs a whole buffer: a shorter read is
         * refused (EINVAL), so the bound stops a buffer short of it. */
        if (r->bytes >= GPUIPC_KMSG_MAX_BYTES ||
            (!r->is_file && GPUIPC_KMSG_MAX_BYTES - r->bytes < KMSG_BUF)) {
            r->bounded = 1;
            if (!r->is_file)
                return 0;
            r->eof = 1;
            continue;
        }
        if (want > GPUIPC_KMSG_MAX_BYTES - r->bytes)
            want = (size_t)(GPUIPC_KMSG_MAX_BYTES - r->bytes);
        got = read(r->fd, r->is_file ? r->buf + r->have : r->buf, want);
        if (got < 0) {
            if (errno == EINTR)
                continue;
            /* EPIPE: records were overwritten since the last read; the
             * next read gives the oldest one still there. */
            if (errno == EPIPE && ++r->overrun <= 64)
                continue;
            if (errno == EPIPE) {
                r->bounded = 1; /* overwritten faster than read: what is kept stands */
                return 0;
            }
            if (errno == EAGAIN)
                return 0;
            return -errno;
        }
        r->bytes += (uint64_t)got;
        if (r->is_file) {
            if (got == 0)
                r->eof = 1;
            r->have += (size_t)got;
            continue;
        }
        if (got == 0)
            return 0;
        /* A device record's dictionary follows its first newline. */
        nl = memchr(r->buf, '\n', (size_t)got);
        *rec = r->buf;
        *len = nl != NULL ? (size_t)(nl - r->buf) : (size_t)got;
        r->records++;
        return 1;
    }
}

/* Keeps the message msg, logged at ts, as a printable line: its time after
 * since_us, then the message with every byte outside printable ASCII as
 * \xNN (the kernel escapes so itself; a recorded log may hold anything),
 * cut where the line is full. */
static void keep_line(gpuipc_kmsg_found *f, uint64_t since_us, uint64_t ts, const char *msg,
                      size_t mlen)
{
    char *out = f->line[f->nlines];
    size_t cap = sizeof(f->line[0]), o, i;
    uint64_t d = ts - since_us;
    int w;

    w = snprintf(out, cap, "[+%llu.%03llu s] ", (unsigned long long)(d / 1000000u),
                 (unsigned long long)(d % 1000000u / 1000u));
    o = w > 0 && (size_t)w < cap ? (size_t)w : cap - 1;
    for (i = 0; i < mlen; i++) {
        unsigned char c = (unsigned char)msg[i];

        if (c >= 0x20 && c < 0x7f) {
            if (o + 1 >= cap)
                break;
            out[o++] = (char)c;
        } else {
            if (o + 4 >= cap)
                break;
            snprintf(out + o, cap - o, "\\x%02x", c);
            o += 4;
        }
    }
    out[o] = '\0';
    f->nlines++;
}

/* f->error: "<what> <path>: <text> (<ENAME>)<hint>", the path made
 * printable. */
static void say_error(gpuipc_kmsg_found *f, const char *what, const char *path, int e,
                      const char *hint)
{
    char p[96];
    const char *name = gpuipc_errno_name(e);

    gpuipc_err_copy_printable(p, sizeof(p), path);
    snprintf(f->error, sizeof(f->error), "%s %s: %s (%s)%s", what, p, strerror(e),
             name != NULL ? name : "?", hint);
}

/* f->error for a path that is neither /dev/kmsg (character device 1:11)
 * nor a regular file (a recorded log); returns 0. */
static int not_the_log(gpuipc_kmsg_found *f, const char *path)
{
    char p[80];

    gpuipc_err_copy_printable(p, sizeof(p), path);
    snprintf(f->error, sizeof(f->error), "%s is not the kernel log: not /dev/kmsg (1:11) "
             "nor a regular file", p);
    return 0;
}

int gpuipc_kmsg_gpu_lines(const char *path, uint64_t since_us, const char *const *bus_ids,
                          size_t n, gpuipc_kmsg_found *f, gpuipc_err *why)
{
    static const char need_syslog[] = ": reading it needs CAP_SYSLOG or kernel.dmesg_restrict=0";
    reader r;
    struct stat st;
    const char *rec = NULL, *msg;
    size_t len = 0, mlen, i;
    uint64_t pri, ts;
    pci_addr a;
    int rc;

    memset(f, 0, sizeof(*f));
    for (i = 0; i < n; i++)
        if (bus_ids[i] == NULL || parse_bus_id(bus_ids[i], &a) < 0)
            return gpuipc_err_set(why, -EINVAL, "kmsg: bus id %zu is not a PCI address", i);
    if (path == NULL && (path = getenv("GPUIPC_TEST_KMSG")) == NULL)
        path = GPUIPC_KMSG;

    memset(&r, 0, sizeof(r));
    /* Opening a device can act (a watchdog starts, a tape rewinds), and the
     * path may be the environment's: a character device other than
     * /dev/kmsg (1:11) is refused before it is opened, and again after. */
    if (stat(path, &st) == 0 && S_ISCHR(st.st_mode) && st.st_rdev != makedev(1, 11))
        return not_the_log(f, path);
    if ((r.buf = malloc(KMSG_BUF + 1)) == NULL)
        return gpuipc_err_sys(why, "malloc", ENOMEM, "kmsg: malloc of %d bytes failed",
                              KMSG_BUF + 1);
    /* O_NONBLOCK: /dev/kmsg's read waits for the next record otherwise,
     * and a FIFO's open waits for a writer. */
    r.fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (r.fd < 0) {
        say_error(f, "open", path, errno,
                  errno == EPERM || errno == EACCES ? need_syslog : "");
        goto out_free;
    }
    if (fstat(r.fd, &st) < 0) {
        say_error(f, "fstat", path, errno, "");
        goto out_close;
    }
    if (!S_ISREG(st.st_mode) && !(S_ISCHR(st.st_mode) && st.st_rdev == makedev(1, 11))) {
        not_the_log(f, path);
        goto out_close;
    }
    r.is_file = S_ISREG(st.st_mode);
    f->readable = 1;
    while ((rc = next_record(&r, &rec, &len)) > 0) {
        /* A continuation line (" KEY=VALUE") of a recorded log, or a line
         * that is no record. */
        if (len == 0 || rec[0] == ' ' || parse_record(rec, len, &pri, &ts, &msg, &mlen) < 0)
            continue;
        /* The driver logs with the kernel's facility (0); a line written
         * to /dev/kmsg from user space carries another and is not its. */
        if (pri >> 3 != 0 || ts < since_us || !wanted(msg, mlen, bus_ids, n))
            continue;
        f->nmatched++;
        if (f->nlines < GPUIPC_KMSG_MAX_LINES)
            keep_line(f, since_us, ts, msg, mlen);
    }
    if (rc < 0) {
        /* Where even the first read is refused (the device checks the
         * reader's rights there), the log was not readable. */
        say_error(f, "read", path, -rc,
                  -rc == EPERM || -rc == EACCES ? need_syslog : "");
        f->readable = 0;
    }
    f->partial = r.bounded;
out_close:
    close(r.fd);
out_free:
    free(r.buf);
    return 0;
}
