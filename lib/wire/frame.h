/* SPDX-License-Identifier: Apache-2.0 */
/* frame.h: what lib/wire's own files share of the frame and no caller needs:
 * each message type's payload length and FD limit (msg.c's table), and the
 * types a receive accepts, as words. */
#ifndef GPUIPC_WIRE_FRAME_H
#define GPUIPC_WIRE_FRAME_H

#include <stddef.h>

/* The payload length in bytes of a message of type (1 to
 * GPUIPC_MSG_TYPE_MAX). */
size_t gpuipc_wire_type_len(unsigned type);

/* The most FDs a message of type (1 to GPUIPC_MSG_TYPE_MAX) may carry. */
unsigned gpuipc_wire_type_fds(unsigned type);

/* Writes the names of the types whose bits are set in accept into buf, as
 * "OFFER or FDS" (cut short where len is too small). */
void gpuipc_wire_describe_accept(unsigned accept, char *buf, size_t len);

#endif
