/* role.c: reading, judging, spoiling and releasing, as both roles do it. */
#include "session/role.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "core/clock.h"
#include "session/pattern.h"
#include "core/step.h"

int gpuipc_role_read(gpuipc_env *env, const gpuipc_view *v, uint64_t seed, gpuipc_check *k,
                     int *honest, gpuipc_err *err)
{
    gpuipc_view part;

    *honest = 1;
    if (gpuipc_inject_sabotage(&env->inject, env->role, GPUIPC_SABOTAGE_READ_NOTHING)) {
        *honest = 0;
        memset(k, 0, sizeof(*k));
        k->words = v->size / 8;
        return 0;
    }
    if (gpuipc_inject_sabotage(&env->inject, env->role, GPUIPC_SABOTAGE_READ_PARTIAL)) {
        *honest = 0;
        part = *v;
        part.size = 16;
        return part.ops->verify(&part, seed, k, err);
    }
    return v->ops->verify(v, seed, k, err);
}

int gpuipc_role_judge(const gpuipc_check *k, uint64_t words, const gpuipc_written *w,
                      const char *who, char *why, size_t len)
{
    if (words == 0) {
        snprintf(why, len, "nothing to check: the buffer %s read holds no whole word", who);
        return -1;
    }
    if (w->words != words) {
        snprintf(why, len, "the fill wrote %llu of the %llu words %s read, so the digests "
                 "cannot speak for the same bytes", (unsigned long long)w->words,
                 (unsigned long long)words, who);
        return -1;
    }
    if (k->words != words) {
        snprintf(why, len, "%s read %llu of the %llu words written, so most bytes were never "
                 "checked", who, (unsigned long long)k->words, (unsigned long long)words);
        return -1;
    }
    if (k->mismatches != 0) {
        snprintf(why, len, "%s counts %llu mismatches in %llu words; first bad word %llu",
                 who, (unsigned long long)k->mismatches, (unsigned long long)k->words,
                 (unsigned long long)k->first_bad);
        return -1;
    }
    if (k->digest != w->digest) {
        snprintf(why, len, "%s reports every word right, but the digest of what it read "
                 "(0x%016llx) is not the digest of what was written (0x%016llx): it did not "
                 "read these bytes", who, (unsigned long long)k->digest,
                 (unsigned long long)w->digest);
        return -1;
    }
    return 0;
}

int gpuipc_role_flip(gpuipc_env *env, unsigned step, const gpuipc_view *v, uint64_t seed,
                     gpuipc_err *why)
{
    uint64_t index = 0, value;
    int rc = gpuipc_inject_flip(&env->inject, env->role, v->size / 8, v->first_word, &index);

    if (rc == 0)
        return 0;
    if (rc < 0)
        return gpuipc_err_set(why, rc, "the flip test hook names a word that a buffer of "
                              "%llu words does not have (flip-past-4g needs a --size above "
                              "4G)", (unsigned long long)(v->size / 8));
    value = gpuipc_pattern_word(index, seed) ^ (1ull << 43);
    if (v->ops->poke == NULL)
        return gpuipc_err_set(why, -ENOTSUP, "the flip test hook: this view cannot write one "
                              "word");
    if ((rc = v->ops->poke(v, index, value, why)) < 0)
        return rc;
    gpuipc_log_step(&env->log, GPUIPC_LOG_NORMAL, env->mech ? env->mech->name : NULL, step,
                    GPUIPC_LOG_NO_TIME, "SABOTAGE: one bit of word %llu (byte offset 0x%llx) "
                    "flipped after the fill (test hook)", (unsigned long long)index,
                    (unsigned long long)((index - v->first_word) * 8));
    return 0;
}

/* The buffers the leak test hook kept: still referenced, so that a leak
 * checker sees memory held on purpose rather than lost. */
#define KEPT_MAX 64
static gpuipc_buf kept[KEPT_MAX];
static unsigned nkept;

int gpuipc_role_release(gpuipc_env *env, const gpuipc_mech *mech, const char *name,
                        gpuipc_buf *buf, gpuipc_err *err)
{
    uint64_t t = gpuipc_clock_ns();
    int rc;

    gpuipc_env_at(env, GPUIPC_STEP_RELEASE);
    if (gpuipc_inject_sabotage(&env->inject, env->role, GPUIPC_SABOTAGE_LEAK)) {
        if (nkept < KEPT_MAX)
            kept[nkept++] = *buf;
        gpuipc_log_step(&env->log, GPUIPC_LOG_NORMAL, name, GPUIPC_STEP_RELEASE,
                        gpuipc_clock_ns() - t,
                        "SABOTAGE: release skipped, memory kept (test hook)");
        return 0;
    }
    rc = mech->release(env, buf, err);
    if (rc == 0)
        gpuipc_log_step(&env->log, GPUIPC_LOG_NORMAL, name, GPUIPC_STEP_RELEASE,
                        gpuipc_clock_ns() - t, "unmapped and freed");
    return rc;
}
