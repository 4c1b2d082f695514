/* SPDX-License-Identifier: Apache-2.0 */
/* runinfo.c: who and where a run is, and UTC times (runinfo.h). */
#include "core/runinfo.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"

static gpuipc_runinfo info;
static int gathered;

/* The first line of a small file (the boot id), into buf; "" where it
 * cannot be read. */
static void read_line(const char *path, char *buf, size_t len)
{
    ssize_t n;
    int fd = open(path, O_RDONLY | O_CLOEXEC);

    buf[0] = '\0';
    if (fd < 0)
        return;
    do
        n = read(fd, buf, len - 1);
    while (n < 0 && errno == EINTR);
    close(fd);
    if (n <= 0)
        return;
    buf[n] = '\0';
    buf[strcspn(buf, "\n")] = '\0';
}

void gpuipc_runinfo_gather(uint64_t t0)
{
    struct utsname u;
    uint64_t now_mono = gpuipc_clock_ns(), now_real = gpuipc_runinfo_now_ns();

    if (gathered)
        return;
    gathered = 1;
    if (uname(&u) == 0) {
        memcpy(info.hostname, u.nodename, strnlen(u.nodename, sizeof(info.hostname) - 1));
        memcpy(info.kernel, u.release, strnlen(u.release, sizeof(info.kernel) - 1));
    }
    read_line("/proc/sys/kernel/random/boot_id", info.boot_id, sizeof(info.boot_id));
    info.start_mono_ns = t0;
    info.start_real_ns = now_real - (now_mono > t0 ? now_mono - t0 : 0);
}

const gpuipc_runinfo *gpuipc_runinfo_get(void)
{
    return &info;
}

uint64_t gpuipc_runinfo_now_ns(void)
{
    struct timespec ts;

    if (clock_gettime(CLOCK_REALTIME, &ts) < 0 || ts.tv_sec < 0)
        return 0;
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* v in width digits, zeros in front. */
static void put_digits(gpuipc_sbuf *b, uint64_t v, int width)
{
    char d[8];
    int i;

    for (i = width - 1; i >= 0; i--) {
        d[i] = (char)('0' + v % 10);
        v /= 10;
    }
    d[width] = '\0';
    gpuipc_sbuf_str(b, d);
}

void gpuipc_sbuf_utc(gpuipc_sbuf *b, uint64_t real_ns, int millis)
{
    uint64_t secs = real_ns / 1000000000ull, sod = secs % 86400;
    /* The civil date of a day count (days since 1970-01-01), by Howard
     * Hinnant's days_from_civil inverted: eras of 400 years from 0000-03-01. */
    int64_t z = (int64_t)(secs / 86400) + 719468;
    int64_t era = z / 146097;
    uint64_t doe = (uint64_t)(z - era * 146097);
    uint64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    uint64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    uint64_t mp = (5 * doy + 2) / 153;
    uint64_t day = doy - (153 * mp + 2) / 5 + 1;
    uint64_t month = mp < 10 ? mp + 3 : mp - 9;
    uint64_t year = (uint64_t)(era * 400) + yoe + (month <= 2);

    put_digits(b, year, 4);
    gpuipc_sbuf_str(b, "-");
    put_digits(b, month, 2);
    gpuipc_sbuf_str(b, "-");
    put_digits(b, day, 2);
    gpuipc_sbuf_str(b, "T");
    put_digits(b, sod / 3600, 2);
    gpuipc_sbuf_str(b, ":");
    put_digits(b, sod / 60 % 60, 2);
    gpuipc_sbuf_str(b, ":");
    put_digits(b, sod % 60, 2);
    if (millis) {
        gpuipc_sbuf_str(b, ".");
        put_digits(b, real_ns / 1000000ull % 1000, 3);
        gpuipc_sbuf_str(b, "Z");
    }
}
