/* SPDX-License-Identifier: Apache-2.0 */
/* random.h: random bytes from the kernel, and bytes as hex digits, for what
 * must not be foreseen: the job token, HELLO's nonces, a rank's listener
 * name, a result file's temporary name. System calls only, no stdio or
 * malloc: a watchdog may call them. */
#ifndef GPUIPC_RANDOM_H
#define GPUIPC_RANDOM_H

#include <stddef.h>
#include <stdint.h>

/* Fills the n bytes at buf from getrandom(2), which blocks only until the
 * kernel's pool is first ready, early in a boot. Returns 0, or an errno
 * (ENOSYS before Linux 3.17, EIO where it gave nothing). */
int gpuipc_random_bytes(void *buf, size_t n);

/* Writes the n bytes at in as 2n lowercase hex digits and a NUL to out,
 * which holds 2n + 1 bytes. Returns out. */
char *gpuipc_random_hex(char *out, const void *in, size_t n);

/* Reads 2n lowercase hex digits at in as n bytes to out: the inverse of
 * gpuipc_random_hex. Stops at the first character that is no such digit (a
 * NUL included, so it never reads past a shorter string) and returns
 * -EINVAL, out then partly written; else 0. What follows the digits is the
 * caller's to check. */
int gpuipc_random_unhex(void *out, const char *in, size_t n);

/* The value of one hex digit of either case, or -1 for a character that is
 * none (what others write: a PCI address, a JSON escape). */
int gpuipc_random_hex_value(char c);

#endif
