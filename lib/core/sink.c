/* SPDX-License-Identifier: Apache-2.0 */
/* sink.c: the renderers' sink and the buffer's numbers (sink.h). */
#include "core/sink.h"

#include <errno.h>
#include <string.h>

void gpuipc_sbuf_int(gpuipc_sbuf *b, int64_t v)
{
    if (v < 0) {
        gpuipc_sbuf_str(b, "-");
        gpuipc_sbuf_uint(b, (uint64_t)0 - (uint64_t)v);
    } else {
        gpuipc_sbuf_uint(b, (uint64_t)v);
    }
}

/* The significant digits "%.15g" keeps. */
#define PREC 15
/* A double's exact value as an integer of 32-bit limbs: at most 53 bits
 * times 5^1074 (2494 bits), or 53 bits shifted by 971. */
#define LIMBS 84
/* Its decimal digits: at most 767. */
#define DIGITS 800

typedef struct big {
    uint32_t w[LIMBS]; /* least significant first */
    size_t n;          /* limbs in use; 0: the value 0 */
} big;

static void big_mul(big *x, uint32_t f)
{
    uint64_t carry = 0;
    size_t i;

    for (i = 0; i < x->n; i++) {
        uint64_t t = (uint64_t)x->w[i] * f + carry;

        x->w[i] = (uint32_t)t;
        carry = t >> 32;
    }
    if (carry != 0 && x->n < LIMBS)
        x->w[x->n++] = (uint32_t)carry;
}

/* x /= d; returns the remainder. */
static uint32_t big_div(big *x, uint32_t d)
{
    uint64_t rem = 0;
    size_t i;

    for (i = x->n; i-- > 0;) {
        uint64_t t = (rem << 32) | x->w[i];

        x->w[i] = (uint32_t)(t / d);
        rem = t % d;
    }
    while (x->n > 0 && x->w[x->n - 1] == 0)
        x->n--;
    return (uint32_t)rem;
}

/* The decimal digits of m * 2^e (m > 0), most significant first, into d;
 * returns their count, and in *point how many of them are after the
 * decimal point. */
static size_t exact_digits(uint64_t m, int e, char *d, int *point)
{
    big x;
    char rev[DIGITS];
    size_t n = 0, i;
    int k;

    while ((m & 1) == 0 && e < 0) {
        m >>= 1;
        e++;
    }
    x.w[0] = (uint32_t)m;
    x.w[1] = (uint32_t)(m >> 32);
    x.n = x.w[1] != 0 ? 2 : 1;
    *point = 0;
    if (e >= 0) {
        for (k = e; k > 0; k -= 31)
            big_mul(&x, 1u << (k < 31 ? k : 31));
    } else {
        /* m / 2^-e = m * 5^-e / 10^-e. */
        *point = -e;
        for (k = -e; k > 0; k -= 13) {
            uint32_t f = 1;
            int j;

            for (j = 0; j < (k < 13 ? k : 13); j++)
                f *= 5;
            big_mul(&x, f);
        }
    }
    while (x.n > 0) {
        uint32_t r = big_div(&x, 1000000000u);

        for (k = 0; k < 9 && n < DIGITS; k++) {
            rev[n++] = (char)('0' + r % 10);
            r /= 10;
        }
    }
    while (n > 1 && rev[n - 1] == '0')
        n--;
    for (i = 0; i < n; i++)
        d[i] = rev[n - 1 - i];
    return n;
}

void gpuipc_sbuf_double(gpuipc_sbuf *b, double v)
{
    uint64_t u, m;
    char d[DIGITS], t[2 * PREC + 8];
    size_t nd, i, k;
    int be, e, point, x;

    memcpy(&u, &v, sizeof(u));
    be = (int)((u >> 52) & 0x7ff);
    m = u & ((1ull << 52) - 1);
    if (u >> 63)
        gpuipc_sbuf_str(b, "-");
    if (be == 0x7ff) {
        gpuipc_sbuf_str(b, m != 0 ? "nan" : "inf");
        return;
    }
    if (be == 0 && m == 0) {
        gpuipc_sbuf_str(b, "0");
        return;
    }
    if (be == 0) {
        e = -1074;
    } else {
        m |= 1ull << 52;
        e = be - 1075;
    }
    nd = exact_digits(m, e, d, &point);
    x = (int)nd - point - 1; /* the exponent of the first digit */
    if (nd > PREC) {
        /* Rounded to PREC digits: to nearest, ties to even. */
        int up = d[PREC] > '5';

        if (d[PREC] == '5') {
            for (i = PREC + 1; i < nd && d[i] == '0'; i++)
                ;
            up = i < nd || (d[PREC - 1] - '0') % 2 == 1;
        }
        nd = PREC;
        if (up) {
            for (i = PREC; i-- > 0 && d[i] == '9';)
                d[i] = '0';
            if (i == (size_t)-1) {
                d[0] = '1';
                x++;
            } else {
                d[i]++;
            }
        }
    }
    while (nd > 1 && d[nd - 1] == '0')
        nd--;
    k = 0;
    if (x < -4 || x >= PREC) {
        /* As %e: one digit, the others after the point, the exponent. */
        t[k++] = d[0];
        if (nd > 1)
            t[k++] = '.';
        for (i = 1; i < nd; i++)
            t[k++] = d[i];
        t[k++] = 'e';
        t[k++] = x < 0 ? '-' : '+';
        if (x < 0)
            x = -x;
        if (x >= 100)
            t[k++] = (char)('0' + x / 100);
        t[k++] = (char)('0' + x / 10 % 10);
        t[k++] = (char)('0' + x % 10);
    } else if (x < 0) {
        /* As %f below 1: "0.", zeros, the digits. */
        t[k++] = '0';
        t[k++] = '.';
        for (i = 0; i < (size_t)(-x - 1); i++)
            t[k++] = '0';
        for (i = 0; i < nd; i++)
            t[k++] = d[i];
    } else {
        /* As %f: the integer part, then the digits after the point. */
        size_t whole = (size_t)x + 1;

        for (i = 0; i < whole; i++)
            t[k++] = i < nd ? d[i] : '0';
        if (nd > whole)
            t[k++] = '.';
        for (i = whole; i < nd; i++)
            t[k++] = d[i];
    }
    t[k] = '\0';
    gpuipc_sbuf_str(b, t);
}

void gpuipc_sink_init(gpuipc_sink *s, int fd, char *mem, size_t cap)
{
    s->fd = fd;
    s->err = 0;
    gpuipc_sbuf_init(&s->b, mem, cap);
}

static void flush(gpuipc_sink *s)
{
    if (s->b.len == 0 && !s->b.dropped)
        return;
    if (gpuipc_sbuf_write(&s->b, s->fd) < 0 && s->err == 0)
        s->err = errno != 0 ? errno : EIO;
    gpuipc_sbuf_init(&s->b, s->b.p, s->b.cap);
}

void gpuipc_sink_maybe_flush(gpuipc_sink *s)
{
    if (s->b.len > s->b.cap / 2 || s->b.dropped)
        flush(s);
}

void gpuipc_sink_room(gpuipc_sink *s, size_t n)
{
    if (s->b.len + n + 1 > s->b.cap || s->b.dropped)
        flush(s);
}

int gpuipc_sink_finish(gpuipc_sink *s)
{
    flush(s);
    return -s->err;
}
