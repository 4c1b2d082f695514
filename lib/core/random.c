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
