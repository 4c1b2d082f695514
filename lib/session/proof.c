/* SPDX-License-Identifier: Apache-2.0 */
/* proof.c: HELLO's proof of a job's token (proof.h). */
#include "session/proof.h"

#include <errno.h>
#include <string.h>

#include "core/random.h"
#include "core/sha256.h"

#define LABEL "gpuipc hello"
#define SESSION_LABEL "gpuipc session"

static void put_u32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

/* The token's 16 bytes from env's 32 hex digits (the sabotaged token's,
 * with sabotage set and armed). Returns 0, or -EINVAL. */
static int token_key(const gpuipc_env *env, int sabotage, uint8_t key[GPUIPC_WIRE_TOKEN_LEN / 2])
{
    char hex[GPUIPC_WIRE_TOKEN_LEN];

    if (env->token == NULL)
        return -EINVAL;
    memcpy(hex, env->token, sizeof(hex));
    if (sabotage && gpuipc_inject_sabotage(&env->inject, env->role, GPUIPC_SABOTAGE_WRONG_TOKEN))
        hex[0] = hex[0] == '0' ? '1' : '0';
    return gpuipc_random_unhex(key, hex, sizeof(hex) / 2);
}

static int compute(const gpuipc_env *env, int sabotage, int role, const uint8_t *nonce_p,
                   const uint8_t *nonce_c, uint32_t rank_p, uint32_t rank_c,
                   uint8_t mac[GPUIPC_WIRE_MAC_LEN])
{
    uint8_t key[GPUIPC_WIRE_TOKEN_LEN / 2], nums[12];
    gpuipc_hmac h;

    if (token_key(env, sabotage, key) < 0)
        return -EINVAL;
    put_u32(nums, (uint32_t)role);
    put_u32(nums + 4, rank_p);
    put_u32(nums + 8, rank_c);
    gpuipc_hmac_init(&h, key, sizeof(key));
    explicit_bzero(key, sizeof(key));
    gpuipc_hmac_update(&h, LABEL, strlen(LABEL));
    gpuipc_hmac_update(&h, nums, 4);
    gpuipc_hmac_update(&h, nonce_p, GPUIPC_WIRE_NONCE_LEN);
    gpuipc_hmac_update(&h, nonce_c, GPUIPC_WIRE_NONCE_LEN);
    gpuipc_hmac_update(&h, nums + 4, 8);
    gpuipc_hmac_final(&h, mac);
    return 0;
}

int gpuipc_proof_nonce(uint8_t nonce[GPUIPC_WIRE_NONCE_LEN], gpuipc_err *err)
{
    int e = gpuipc_random_bytes(nonce, GPUIPC_WIRE_NONCE_LEN);

    if (e != 0)
        return gpuipc_err_sys(err, "getrandom", e, "hello: getrandom: %s: no nonce",
                              strerror(e));
    return 0;
}

int gpuipc_proof_make(const gpuipc_env *env, int role, const uint8_t *nonce_p,
                      const uint8_t *nonce_c, uint32_t rank_p, uint32_t rank_c,
                      uint8_t mac[GPUIPC_WIRE_MAC_LEN])
{
    return compute(env, 1, role, nonce_p, nonce_c, rank_p, rank_c, mac);
}

int gpuipc_proof_holds(const gpuipc_env *env, int role, const uint8_t *nonce_p,
                       const uint8_t *nonce_c, uint32_t rank_p, uint32_t rank_c,
                       const uint8_t mac[GPUIPC_WIRE_MAC_LEN])
{
    uint8_t want[GPUIPC_WIRE_MAC_LEN];
    int ok;

    if (compute(env, 0, role, nonce_p, nonce_c, rank_p, rank_c, want) < 0)
        return 0;
    ok = gpuipc_ct_equal(want, mac, sizeof(want));
    explicit_bzero(want, sizeof(want));
    return ok;
}

int gpuipc_proof_session_key(const gpuipc_env *env, const uint8_t *nonce_p,
                             const uint8_t *nonce_c, uint32_t rank_p, uint32_t rank_c,
                             uint32_t flags, uint8_t key[GPUIPC_WIRE_KEY_LEN])
{
    uint8_t token[GPUIPC_WIRE_TOKEN_LEN / 2], nums[12];
    gpuipc_hmac h;

    /* A rank whose token is sabotaged derives another key, as one that
     * does not hold the job's token would. */
    if (token_key(env, 1, token) < 0)
        return -EINVAL;
    put_u32(nums, rank_p);
    put_u32(nums + 4, rank_c);
    put_u32(nums + 8, flags);
    gpuipc_hmac_init(&h, token, sizeof(token));
    explicit_bzero(token, sizeof(token));
    gpuipc_hmac_update(&h, SESSION_LABEL, strlen(SESSION_LABEL));
    gpuipc_hmac_update(&h, nonce_p, GPUIPC_WIRE_NONCE_LEN);
    gpuipc_hmac_update(&h, nonce_c, GPUIPC_WIRE_NONCE_LEN);
    gpuipc_hmac_update(&h, nums, sizeof(nums));
    gpuipc_hmac_final(&h, key);
    return 0;
}
