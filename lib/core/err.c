/* SPDX-License-Identifier: Apache-2.0 */
/* err.c: formatting of failure reasons into caller-supplied buffers. */
#include "core/err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int gpuipc_err_set(gpuipc_err *err, int rc, const char *fmt, ...)
{
    va_list ap;

    if (err == NULL)
        return rc;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
    va_end(ap);
    gpuipc_err_what(err, "", 0, 0);
    return rc;
}

int gpuipc_err_sys(gpuipc_err *err, const char *call, int e, const char *fmt, ...)
{
    va_list ap;

    if (err == NULL)
        return -e;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
    va_end(ap);
    gpuipc_err_what(err, call, e, 0);
    return -e;
}

int gpuipc_err_wrap(gpuipc_err *err, const gpuipc_err *src, int rc, const char *fmt, ...)
{
    char call[GPUIPC_ERR_CALL_LEN], text[GPUIPC_ERR_LEN];
    int e, cu;
    va_list ap;

    if (err == NULL)
        return rc;
    /* src may be err, and its text an argument: both are read before err
     * changes. */
    memcpy(call, src->call, sizeof(call));
    e = src->errnum;
    cu = src->cu;
    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    memcpy(err->msg, text, sizeof(err->msg));
    gpuipc_err_what(err, call, e, cu);
    return rc;
}

void gpuipc_err_what(gpuipc_err *err, const char *call, int e, int cu)
{
    if (err == NULL)
        return;
    snprintf(err->call, sizeof(err->call), "%s", call != NULL ? call : "");
    err->errnum = e;
    err->cu = cu;
}

void gpuipc_err_prefix(gpuipc_err *err, const char *fmt, ...)
{
    char head[GPUIPC_ERR_LEN];
    size_t hl, tl, room;
    va_list ap;

    if (err == NULL)
        return;
    va_start(ap, fmt);
    vsnprintf(head, sizeof(head), fmt, ap);
    va_end(ap);
    /* Shift the old reason right to make room for "head: ", dropping its
     * end if the whole would not fit. */
    hl = strlen(head);
    if (hl > sizeof(err->msg) - 3)
        hl = sizeof(err->msg) - 3;
    room = sizeof(err->msg) - hl - 3;
    tl = strnlen(err->msg, sizeof(err->msg) - 1);
    if (tl > room)
        tl = room;
    memmove(err->msg + hl + 2, err->msg, tl);
    err->msg[hl + 2 + tl] = '\0';
    memcpy(err->msg, head, hl);
    err->msg[hl] = ':';
    err->msg[hl + 1] = ' ';
}

void gpuipc_err_clear(gpuipc_err *err)
{
    if (err != NULL) {
        err->msg[0] = '\0';
        gpuipc_err_what(err, "", 0, 0);
    }
}

void gpuipc_err_copy_printable(char *dst, size_t cap, const char *src)
{
    size_t i;

    for (i = 0; i + 1 < cap && src[i] != '\0'; i++) {
        unsigned char c = (unsigned char)src[i];
        dst[i] = (c >= 0x20 && c < 0x7f) ? (char)c : '?';
    }
    dst[i] = '\0';
}
