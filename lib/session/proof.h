/* SPDX-License-Identifier: Apache-2.0 */
/* proof.h: how two ranks of a job prove to each other in HELLO that they
 * hold the job's token, without sending it. Each side sends fresh random
 * bytes (a nonce); each answers with
 *   HMAC-SHA256(token, "gpuipc hello" || role || nonce_p || nonce_c || rank_p || rank_c)
 * where role is the sender's (1 producer, 2 consumer) and the numbers are
 * big-endian u32s; the token's 16 bytes are the key. The role stops a peer
 * from reflecting one side's answer back to it, the nonces a replay, the
 * ranks a proof made for another pair. Outside a job (no token) there is no
 * proof to make or check. From AUTH on, both sides seal every frame under a
 * key derived from the token and both nonces (gpuipc_proof_session_key). */
#ifndef GPUIPC_SESSION_PROOF_H
#define GPUIPC_SESSION_PROOF_H

#include <stdint.h>

#include "core/err.h"
#include "session/env.h"
#include "wire/wire.h"

/* Fills nonce with fresh random bytes (getrandom). Returns 0, or a negative
 * errno with err. */
int gpuipc_proof_nonce(uint8_t nonce[GPUIPC_WIRE_NONCE_LEN], gpuipc_err *err);

/* The proof role makes for the pair rank_p -> rank_c with both nonces,
 * keyed by env's token (one digit off with the wrong-token sabotage armed
 * for env's role, so that the peer must refuse it), into mac. Returns 0, or
 * -EINVAL where env has no token or it is not 32 hex digits. */
int gpuipc_proof_make(const gpuipc_env *env, int role, const uint8_t *nonce_p,
                      const uint8_t *nonce_c, uint32_t rank_p, uint32_t rank_c,
                      uint8_t mac[GPUIPC_WIRE_MAC_LEN]);

/* Whether mac is the proof role makes for the pair and nonces under env's
 * token (never the sabotaged one), compared in time that does not depend on
 * where they differ. Returns 1 or 0. */
int gpuipc_proof_holds(const gpuipc_env *env, int role, const uint8_t *nonce_p,
                       const uint8_t *nonce_c, uint32_t rank_p, uint32_t rank_c,
                       const uint8_t mac[GPUIPC_WIRE_MAC_LEN]);

/* The session's key, once both nonces are known: HMAC-SHA256(token,
 * "gpuipc session" || nonce_p || nonce_c || rank_p || rank_c || flags),
 * flags the producer's HELLO's, the numbers big-endian u32s, under env's
 * token (the sabotaged one where armed). From AUTH on, every frame of the
 * session is sealed under it (gpuipc_wire_seal), so that a relay that passed
 * HELLO can neither alter a frame nor add one, and a HELLO's flags altered
 * on the way break every seal after. Returns 0, or -EINVAL where env has no
 * token or it is not 32 hex digits. */
int gpuipc_proof_session_key(const gpuipc_env *env, const uint8_t *nonce_p,
                             const uint8_t *nonce_c, uint32_t rank_p, uint32_t rank_c,
                             uint32_t flags, uint8_t key[GPUIPC_WIRE_KEY_LEN]);

#endif
