/* role.h: what the producer and the consumer do alike with the bytes: read
 * the other side's pattern (through the read test hooks), judge the other
 * side's check of the pattern this side wrote, spoil one word for a flip
 * test hook, and release a buffer (through the leak test hook). */
#ifndef GPUIPC_ROLE_H
#define GPUIPC_ROLE_H

#include <stddef.h>
#include <stdint.h>

#include "session/env.h"
#include "core/err.h"
#include "session/mech.h"
#include "wire/wire.h"

/* Checks v against the pattern of seed into k, as its ops' verify does.
 * With read-nothing armed for this role it reads nothing and fills k with a
 * claim of every word read and none bad; with read-partial it reads only
 * the first 2 words. *honest is then 0: the caller must not compare its own
 * claim with the writer's, since the hook stands for a reader that is wrong
 * about itself, which the other side must catch. Returns 0, or a negative
 * errno if the check itself could not run. */
int gpuipc_role_read(gpuipc_env *env, const gpuipc_view *v, uint64_t seed, gpuipc_check *k,
                     int *honest, gpuipc_err *err);

/* Judges a check k of a buffer of words words that was written as w, from
 * the figures alone: there must be words to check, the fill must have
 * written all of them, the reader must have read all of them, found none
 * bad, and read the digest that was written. A status that says PASS
 * counts for nothing here. who names the reader ("the consumer"). Returns
 * 0, or -1 with why, e.g. "the consumer read 2 of 8388608 words". */
int gpuipc_role_judge(const gpuipc_check *k, uint64_t words, const gpuipc_written *w,
                      const char *who, char *why, size_t len);

/* With a flip test hook armed for this role, spoils one bit of the chosen
 * word of v (filled with seed) and logs it in step. Returns 0 (nothing
 * armed, or done), or a negative errno with why (the buffer has no such
 * word, or the write failed). */
int gpuipc_role_flip(gpuipc_env *env, unsigned step, const gpuipc_view *v, uint64_t seed,
                     gpuipc_err *why);

/* Releases buf with mech, unless the leak test hook is armed for this role
 * (then it keeps everything and logs so). Logs the outcome in the release
 * step under name. Returns 0, or the release's negative errno with err. */
int gpuipc_role_release(gpuipc_env *env, const gpuipc_mech *mech, const char *name,
                        gpuipc_buf *buf, gpuipc_err *err);

#endif
