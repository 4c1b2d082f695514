/* SPDX-License-Identifier: Apache-2.0 */
/* escape.c: text for XML and the Prometheus text format (escape.h). */
#include "core/escape.h"

#define REPLACEMENT "\xef\xbf\xbd" /* U+FFFD */

int gpuipc_utf8_len(const unsigned char *s)
{
    unsigned long c;
    int n, k;

    if (s[0] < 0x80)
        return 1;
    if (s[0] >= 0xC2 && s[0] <= 0xDF)
        n = 2, c = s[0] & 0x1F;
    else if (s[0] >= 0xE0 && s[0] <= 0xEF)
        n = 3, c = s[0] & 0x0F;
    else if (s[0] >= 0xF0 && s[0] <= 0xF4)
        n = 4, c = s[0] & 0x07;
    else
        return 0;
    for (k = 1; k < n; k++) {
        if ((s[k] & 0xC0) != 0x80) /* a NUL ends the string here too */
            return 0;
        c = c << 6 | (s[k] & 0x3F);
    }
    if ((n == 3 && c < 0x800) || (n == 4 && c < 0x10000) || c > 0x10FFFF ||
        (c >= 0xD800 && c <= 0xDFFF) || c == 0xFFFE || c == 0xFFFF)
        return 0;
    return n;
}

/* Copies the n bytes of one UTF-8 sequence. */
static void put_seq(gpuipc_sbuf *b, const char *s, int n)
{
    char seq[5];
    int k;

    for (k = 0; k < n; k++)
        seq[k] = s[k];
    seq[n] = '\0';
    gpuipc_sbuf_str(b, seq);
}

void gpuipc_sbuf_xml(gpuipc_sbuf *b, const char *s, int attr)
{
    while (s != NULL && *s != '\0') {
        unsigned char c = (unsigned char)*s;
        int n = gpuipc_utf8_len((const unsigned char *)s);

        if (n == 0) {
            gpuipc_sbuf_str(b, REPLACEMENT);
            s++;
            continue;
        }
        switch (c) {
        case '&':
            gpuipc_sbuf_str(b, "&amp;");
            break;
        case '<':
            gpuipc_sbuf_str(b, "&lt;");
            break;
        case '>':
            gpuipc_sbuf_str(b, "&gt;");
            break;
        case '"':
            gpuipc_sbuf_str(b, "&quot;");
            break;
        case '\'':
            gpuipc_sbuf_str(b, "&apos;");
            break;
        case '\t':
            gpuipc_sbuf_str(b, attr ? "&#9;" : "\t");
            break;
        case '\n':
            gpuipc_sbuf_str(b, attr ? "&#10;" : "\n");
            break;
        case '\r':
            gpuipc_sbuf_str(b, "&#13;"); /* a raw one would be read as a newline */
            break;
        default:
            if (c < 0x20)
                gpuipc_sbuf_str(b, REPLACEMENT);
            else
                put_seq(b, s, n);
        }
        s += n;
    }
}

/* The Prometheus escapes; label: also the double quote, and control bytes
 * as a space. */
static void prom(gpuipc_sbuf *b, const char *s, int label)
{
    while (s != NULL && *s != '\0') {
        unsigned char c = (unsigned char)*s;
        int n = gpuipc_utf8_len((const unsigned char *)s);

        if (n == 0) {
            gpuipc_sbuf_str(b, REPLACEMENT);
            s++;
            continue;
        }
        if (c == '\\')
            gpuipc_sbuf_str(b, "\\\\");
        else if (c == '\n')
            gpuipc_sbuf_str(b, "\\n");
        else if (c == '"' && label)
            gpuipc_sbuf_str(b, "\\\"");
        else if ((c < 0x20 || c == 0x7f) && label)
            gpuipc_sbuf_str(b, " ");
        else
            put_seq(b, s, n);
        s += n;
    }
}

void gpuipc_sbuf_prom_label(gpuipc_sbuf *b, const char *s)
{
    prom(b, s, 1);
}

void gpuipc_sbuf_prom_help(gpuipc_sbuf *b, const char *s)
{
    prom(b, s, 0);
}
