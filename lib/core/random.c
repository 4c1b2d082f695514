/* SPDX-License-Identifier: Apache-2.0 */
/* random.c: random bytes and hex digits (random.h). */
#include "core/random.h"

#include <errno.h>
#include <sys/random.h>

int gpuipc_random_bytes(void *buf, size_t n)
{
    unsigned char *p = buf;
    size_t got = 0;

    while (got < n) {
        ssize_t r = getrandom(p + got, n - got, 0);

        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return r < 0 ? errno : EIO;
        got += (size_t)r;
    }
    return 0;
}

char *gpuipc_random_hex(char *out, const void *in, size_t n)
{
    static const char digits[] = "0123456789abcdef";
    const unsigned char *p = in;
    size_t i;

    for (i = 0; i < n; i++) {
        out[2 * i] = digits[p[i] >> 4];
        out[2 * i + 1] = digits[p[i] & 15];
    }
    out[2 * n] = '\0';
    return out;
}

static int hex_digit(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

int gpuipc_random_hex_value(char c)
{
    return c >= 'A' && c <= 'F' ? c - 'A' + 10 : hex_digit(c);
}

int gpuipc_random_unhex(void *out, const char *in, size_t n)
{
    unsigned char *p = out;
    size_t i;

    for (i = 0; i < n; i++) {
        int hi = hex_digit(in[2 * i]), lo = hi < 0 ? -1 : hex_digit(in[2 * i + 1]);

        if (lo < 0)
            return -EINVAL;
        p[i] = (unsigned char)(hi << 4 | lo);
    }
    return 0;
}
