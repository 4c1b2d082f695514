/* SPDX-License-Identifier: Apache-2.0 */
/* imex.h: whether this process can use FABRIC handles, which need an IMEX
 * channel: a character device /dev/nvidia-caps-imex-channels/channelN of the
 * major number that /proc/devices lists as nvidia-caps-imex-channels. */
#ifndef GPUIPC_IMEX_H
#define GPUIPC_IMEX_H

#include "core/err.h"

#define GPUIPC_IMEX_DEVICES "/proc/devices"
#define GPUIPC_IMEX_CHANNELS "/dev/nvidia-caps-imex-channels"

/* Looks for the driver's IMEX entry in devices_path and for a channel file
 * this process can open in channel_dir. Returns 0 if there is one; -ENOTSUP
 * with the first missing piece and the fix in why otherwise. */
int gpuipc_imex_check(const char *devices_path, const char *channel_dir, gpuipc_err *why);

#endif
