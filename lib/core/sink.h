/* SPDX-License-Identifier: Apache-2.0 */
/* sink.h: where a renderer's text goes (the JSON writer, --prom, --junit):
 * a buffer the caller owns, flushed to an FD with write(2); and the numbers
 * the buffer's text (core/watch.h's gpuipc_sbuf) may hold besides unsigned
 * ones: signed integers, and doubles exactly as printf's "%.15g" writes
 * them. Everything here is async-signal-safe: no stdio, no malloc, no
 * locale, so that a watchdog may render while another thread holds those
 * locks. */
#ifndef GPUIPC_SINK_H
#define GPUIPC_SINK_H

#include <stddef.h>
#include <stdint.h>

#include "core/watch.h"

/* v in decimal, "-42". */
void gpuipc_sbuf_int(gpuipc_sbuf *b, int64_t v);

/* v byte for byte as printf("%.15g", v) writes it in the C locale
 * ("0.1", "1e+16", "-0", "inf", "nan"), from its exact binary value
 * (rounded to nearest, ties to even, as glibc does). */
void gpuipc_sbuf_double(gpuipc_sbuf *b, double v);

/* Where a renderer's text goes: a buffer flushed to fd with write(2). */
typedef struct gpuipc_sink {
    int fd;
    int err;        /* the first write's errno, 0 while all went well */
    gpuipc_sbuf b;
} gpuipc_sink;

/* Starts s on fd, with the buffer mem (cap bytes, at least 16 KiB: an item
 * of up to 1/4 of it is always written whole). */
void gpuipc_sink_init(gpuipc_sink *s, int fd, char *mem, size_t cap);

/* Writes out what the buffer holds if it is more than half full. */
void gpuipc_sink_maybe_flush(gpuipc_sink *s);

/* Writes out what the buffer holds unless n more bytes fit in it. */
void gpuipc_sink_room(gpuipc_sink *s, size_t n);

/* Writes out the rest. Returns 0, or a negative errno (of the first failed
 * write; -ENOBUFS where text had been dropped). */
int gpuipc_sink_finish(gpuipc_sink *s);

#endif
