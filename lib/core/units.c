/* SPDX-License-Identifier: Apache-2.0 */
/* units.c: sizes, durations and UUIDs as people type and read them. */
#include "core/units.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* Splits "12.5xyz" into its whole part, its fraction (as numerator over a
 * power of ten) and the suffix that follows. Returns 0 or -EINVAL. */
static int parse_decimal(const char *text, uint64_t *whole, uint64_t *frac,
                         uint64_t *frac_div, const char **suffix)
{
    const char *p = text;
    int digits = 0;

    *whole = 0;
    *frac = 0;
    *frac_div = 1;
    while (isdigit((unsigned char)*p)) {
        if (*whole > (UINT64_MAX - 9) / 10)
            return -ERANGE;
        *whole = *whole * 10 + (uint64_t)(*p - '0');
        p++;
        digits++;
    }
    if (*p == '.') {
        p++;
        while (isdigit((unsigned char)*p)) {
            /* Six decimals are more than any unit needs, and keep
             * frac * (1 << 40) within 64 bits for the callers. */
            if (*frac_div >= 1000000ull)
                return -EINVAL;
            *frac = *frac * 10 + (uint64_t)(*p - '0');
            *frac_div *= 10;
            p++;
            digits++;
        }
    }
    if (digits == 0)
        return -EINVAL;
    *suffix = p;
    return 0;
}

static int size_multiplier(const char *suffix, uint64_t *mult)
{
    static const struct {
        const char *name;
        unsigned shift;
    } units[] = {
        {"", 0},    {"B", 0},    {"K", 10},   {"KiB", 10}, {"M", 20},
        {"MiB", 20}, {"G", 30},  {"GiB", 30}, {"T", 40},   {"TiB", 40},
    };
    size_t i;

    for (i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
        if (strcasecmp(suffix, units[i].name) == 0) {
            *mult = 1ull << units[i].shift;
            return 0;
        }
    }
    return -EINVAL;
}

int gpuipc_units_parse_size(const char *text, uint64_t *bytes, gpuipc_err *err)
{
    uint64_t whole, frac, frac_div, mult, value, part;
    const char *suffix;
    int rc;

    rc = parse_decimal(text, &whole, &frac, &frac_div, &suffix);
    if (rc == -ERANGE)
        return gpuipc_err_set(err, -ERANGE, "'%s' is too large (at most 16T)", text);
    if (rc < 0)
        return gpuipc_err_set(err, -EINVAL,
                              "'%s' is not a size (expected a number with an optional "
                              "K, M, G or T suffix, such as 64M or 2G)", text);
    if (size_multiplier(suffix, &mult) < 0)
        return gpuipc_err_set(err, -EINVAL,
                              "'%s' has an unknown unit '%s' (use K, M, G or T, which "
                              "are powers of 1024; KiB, MiB, GiB and TiB also work)",
                              text, suffix);
    if (whole > GPUIPC_SIZE_MAX / mult)
        return gpuipc_err_set(err, -ERANGE, "'%s' is larger than the 16 TiB limit", text);
    value = whole * mult;
    if (frac != 0) {
        /* frac < 10^6 < 2^20 and mult <= 2^40, so the product fits. */
        if ((frac * mult) % frac_div != 0)
            return gpuipc_err_set(err, -EINVAL, "'%s' is not a whole number of bytes", text);
        part = frac * mult / frac_div;
        if (part > GPUIPC_SIZE_MAX - value)
            return gpuipc_err_set(err, -ERANGE, "'%s' is larger than the 16 TiB limit", text);
        value += part;
    }
    if (value == 0)
        return gpuipc_err_set(err, -ERANGE, "'%s' is zero bytes (the size must be at least 1)",
                              text);
    if (value > GPUIPC_SIZE_MAX)
        return gpuipc_err_set(err, -ERANGE, "'%s' is larger than the 16 TiB limit", text);
    *bytes = value;
    return 0;
}

int gpuipc_units_parse_duration(const char *text, uint64_t *ns, gpuipc_err *err)
{
    uint64_t whole, frac, frac_div, unit, value;
    const char *suffix;

    if (parse_decimal(text, &whole, &frac, &frac_div, &suffix) < 0)
        return gpuipc_err_set(err, -EINVAL,
                              "'%s' is not a duration (expected seconds, such as 30, "
                              "2.5 or 500ms)", text);
    if (*suffix == '\0' || strcmp(suffix, "s") == 0)
        unit = 1000000000ull;
    else if (strcmp(suffix, "ms") == 0)
        unit = 1000000ull;
    else
        return gpuipc_err_set(err, -EINVAL,
                              "'%s' has an unknown unit '%s' (use s or ms)", text, suffix);
    if (whole > 86400)
        return gpuipc_err_set(err, -ERANGE, "'%s' is longer than 24 hours", text);
    value = whole * unit + frac * unit / frac_div;
    if (value < 1000000ull)
        return gpuipc_err_set(err, -ERANGE, "'%s' is shorter than 1 ms", text);
    if (value > 86400ull * 1000000000ull)
        return gpuipc_err_set(err, -ERANGE, "'%s' is longer than 24 hours", text);
    *ns = value;
    return 0;
}

char *gpuipc_units_format_size(uint64_t bytes, char *buf, size_t len)
{
    static const char *const names[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    unsigned i = 0;
    uint64_t unit = 1;

    while (i + 1 < sizeof(names) / sizeof(names[0]) && bytes >= unit * 1024) {
        unit *= 1024;
        i++;
    }
    if (bytes % unit == 0)
        snprintf(buf, len, "%llu %s", (unsigned long long)(bytes / unit), names[i]);
    else
        snprintf(buf, len, "%.2f %s", (double)bytes / (double)unit, names[i]);
    return buf;
}

double gpuipc_units_gbps(uint64_t bytes, uint64_t ns)
{
    return ns ? (double)bytes / (double)ns : 0.0;
}

char *gpuipc_units_format_uuid(const uint8_t uuid[16], char *buf, size_t len)
{
    snprintf(buf, len,
             "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
             uuid[0], uuid[1], uuid[2], uuid[3], uuid[4], uuid[5], uuid[6], uuid[7],
             uuid[8], uuid[9], uuid[10], uuid[11], uuid[12], uuid[13], uuid[14], uuid[15]);
    return buf;
}

int gpuipc_units_nvrm_version(const char *text, char *buf, size_t len)
{
    const char *p = strstr(text, "NVRM version:");
    const char *end = p ? strchr(p, '\n') : NULL;

    if (len > 0)
        buf[0] = '\0';
    if (p == NULL || len == 0)
        return -ENOENT;
    if (end == NULL)
        end = p + strlen(p);
    p = strstr(p, "Module");
    if (p == NULL || p > end)
        return -ENOENT;
    /* The first word after "Module" that is digits and dots, with a dot. */
    while (p < end) {
        size_t n = 0, dots = 0;

        while (p < end && (*p == ' ' || *p == '\t'))
            p++;
        while (p + n < end && ((p[n] >= '0' && p[n] <= '9') || p[n] == '.'))
            dots += p[n++] == '.';
        if (n > 0 && dots > 0 && p[0] != '.' && (p + n == end || p[n] == ' ' || p[n] == '\t')) {
            snprintf(buf, len, "%.*s", (int)n, p);
            return 0;
        }
        while (p < end && *p != ' ' && *p != '\t')
            p++;
    }
    return -ENOENT;
}
