/* SPDX-License-Identifier: Apache-2.0 */
/* msg.c: the table of message types (name, payload length, FD limit), and the
 * status a step's outcome travels in. */
#include "wire/msg.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "wire/frame.h"

#define STATUS_LEN (4 + 4 + GPUIPC_WIRE_REASON_LEN + 4 + 4 + GPUIPC_WIRE_CALL_LEN)
#define CHECK_LEN (7 * 8)
#define WRITTEN_LEN (3 * 8)
#define USAGE_LEN (4 * 8)
/* The facts (encode.c's put_facts): namespaces, 8 numbers, the kernel
 * release, 9 more numbers, the boot id, and the IMEX channels (8 bytes)
 * with their directory's errno (4). */
#define FACTS_LEN                                                                         \
    (8 * GPUIPC_NS_COUNT + 32 + GPUIPC_FACTS_KERNEL_LEN + 36 + GPUIPC_FACTS_BOOT_ID_LEN + 12)

/* Each type's payload length and the most FDs it may carry. Only OFFER and
 * FDS carry FDs; how many is the mechanism's business (a VMM allocation needs
 * one, chunked memory one per chunk in batches of up to 253, a legacy IPC
 * handle none). */
static const struct {
    const char *name;
    size_t len;
    unsigned max_fds;
} types[GPUIPC_MSG_TYPE_MAX + 1] = {
    [GPUIPC_MSG_HELLO] = {"HELLO", 12 + GPUIPC_WIRE_NONCE_LEN + 8 + GPUIPC_WIRE_MAC_LEN + FACTS_LEN, 0},
    [GPUIPC_MSG_BEGIN] = {"BEGIN", GPUIPC_WIRE_NAME_LEN + 4 + 4 + 4 + 8 + 2 * GPUIPC_UUID_LEN,
                          0},
    [GPUIPC_MSG_READY] = {"READY", STATUS_LEN, 0},
    [GPUIPC_MSG_OFFER] = {"OFFER",
                          STATUS_LEN + 3 * 8 + GPUIPC_UUID_LEN + 4 + GPUIPC_WIRE_BLOB_LEN + 4 +
                              WRITTEN_LEN,
                          GPUIPC_WIRE_MAX_FDS},
    [GPUIPC_MSG_REPORT] = {"REPORT", STATUS_LEN + CHECK_LEN + 8 + 4 + WRITTEN_LEN, 0},
    [GPUIPC_MSG_END] = {"END", STATUS_LEN + CHECK_LEN, 0},
    [GPUIPC_MSG_END_ACK] = {"END_ACK", STATUS_LEN + USAGE_LEN, 0},
    [GPUIPC_MSG_BYE] = {"BYE", 4 * 4, 0},
    [GPUIPC_MSG_PROBE] = {"PROBE", GPUIPC_WIRE_NAME_LEN + 2 * GPUIPC_UUID_LEN, 0},
    [GPUIPC_MSG_PROBE_ACK] = {"PROBE_ACK", STATUS_LEN, 0},
    [GPUIPC_MSG_FDS] = {"FDS", STATUS_LEN + 4, GPUIPC_WIRE_MAX_FDS},
    [GPUIPC_MSG_TIMES] = {"TIMES", 4 * 4 + 8 * GPUIPC_WIRE_TIMES_MAX, 0},
    [GPUIPC_MSG_BYE_ACK] = {"BYE_ACK", STATUS_LEN, 0},
    [GPUIPC_MSG_AUTH] = {"AUTH", 4 + GPUIPC_WIRE_MAC_LEN + FACTS_LEN, 0},
    [GPUIPC_MSG_PHASE] = {"PHASE", 4 * 4, GPUIPC_PHASE_MAX_WORKERS},
    [GPUIPC_MSG_PHASE_ACK] = {"PHASE_ACK", STATUS_LEN + USAGE_LEN, 0},
};

const char *gpuipc_wire_type_name(unsigned type)
{
    return (type >= 1 && type <= GPUIPC_MSG_TYPE_MAX) ? types[type].name : "unknown";
}

size_t gpuipc_wire_type_len(unsigned type)
{
    return types[type].len;
}

unsigned gpuipc_wire_type_fds(unsigned type)
{
    return types[type].max_fds;
}

void gpuipc_wire_describe_accept(unsigned accept, char *buf, size_t len)
{
    unsigned t;
    size_t used = 0;

    buf[0] = '\0';
    for (t = 1; t <= GPUIPC_MSG_TYPE_MAX; t++) {
        if (!(accept & GPUIPC_MSG_BIT(t)))
            continue;
        used += (size_t)snprintf(buf + used, len - used, "%s%s", used ? " or " : "",
                                 types[t].name);
        if (used >= len)
            return;
    }
}

void gpuipc_wire_status(gpuipc_status *st, int code, unsigned step, const char *reason)
{
    memset(st, 0, sizeof(*st));
    st->code = code;
    st->step = step;
    gpuipc_err_copy_printable(st->reason, sizeof(st->reason), reason ? reason : "");
}

void gpuipc_wire_status_what(gpuipc_status *st, const gpuipc_err *e)
{
    size_t i;

    st->errnum = e->errnum;
    st->cu = e->cu;
    /* A call name is an identifier; anything else would not travel. */
    for (i = 0; i + 1 < sizeof(st->call) && e->call[i] != '\0'; i++)
        st->call[i] = isalnum((unsigned char)e->call[i]) || e->call[i] == '_' ? e->call[i] : '-';
    st->call[i] = '\0';
}

/* A failure at step in st, what failed taken from e (NULL: nothing), unless
 * st holds one already. */
static void status_vfail(gpuipc_status *st, unsigned step, const gpuipc_err *e, const char *fmt,
                         va_list ap)
{
    char text[GPUIPC_WIRE_REASON_LEN];

    if (st->code == GPUIPC_FAIL)
        return;
    vsnprintf(text, sizeof(text), fmt, ap);
    gpuipc_wire_status(st, GPUIPC_FAIL, step, text);
    if (e != NULL)
        gpuipc_wire_status_what(st, e);
}

void gpuipc_wire_status_fail(gpuipc_status *st, unsigned step, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    status_vfail(st, step, NULL, fmt, ap);
    va_end(ap);
}

void gpuipc_wire_status_err(gpuipc_status *st, unsigned step, const gpuipc_err *e,
                            const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    status_vfail(st, step, e, fmt, ap);
    va_end(ap);
}
