/* SPDX-License-Identifier: Apache-2.0 */
/* escape.h: text made safe for the formats fleet tools read, into a
 * gpuipc_sbuf (core/watch.h), without stdio or malloc (a watchdog writes
 * them too). A reason may hold anything a driver or the kernel said:
 * markup characters, quotes, control bytes, bytes that are not UTF-8. */
#ifndef GPUIPC_ESCAPE_H
#define GPUIPC_ESCAPE_H

#include "core/watch.h"

/* s as XML 1.0 character data or an attribute value (attr: 1): & < > " '
 * as entities; in an attribute, tab, newline and carriage return as
 * character references (so that they survive attribute normalisation);
 * every other control byte, which XML 1.0 cannot hold even as a reference,
 * and every byte that is not part of valid UTF-8, as U+FFFD. NULL as "". */
void gpuipc_sbuf_xml(gpuipc_sbuf *b, const char *s, int attr);

/* s as a Prometheus label value (text exposition format 0.0.4), without the
 * quotes: backslash, double quote and newline escaped (\\ \" \n); other
 * control bytes as a space, bytes that are not UTF-8 as U+FFFD. */
void gpuipc_sbuf_prom_label(gpuipc_sbuf *b, const char *s);

/* s as a Prometheus HELP text: backslash and newline escaped, bytes that
 * are not UTF-8 as U+FFFD. */
void gpuipc_sbuf_prom_help(gpuipc_sbuf *b, const char *s);

/* The length of the valid UTF-8 sequence at s (1 to 4; an ASCII byte is 1),
 * or 0 where s starts none (a stray, overlong, truncated or surrogate
 * sequence, or one above U+10FFFF). */
int gpuipc_utf8_len(const unsigned char *s);

#endif
