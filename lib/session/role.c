/* SPDX-License-Identifier: Apache-2.0 */
/* role.c: the role engine (role.h): what both roles do alike with a scenario. */
#include "session/role.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/step.h"
#include "core/stop.h"
#include "core/units.h"
#include "session/pattern.h"

void gpuipc_role_start(gpuipc_scenario *sc, gpuipc_env *env, gpuipc_wire *w,
                       const gpuipc_mech *mech, const char *name)
{
    unsigned i;

    memset(sc, 0, sizeof(*sc));
    sc->env = env;
    sc->w = w;
    sc->mech = mech;
    sc->name = name;
    for (i = 0; i < GPUIPC_WIRE_MAX_FDS; i++)
        sc->fds[i] = -1;
    gpuipc_wire_status(&sc->mine, GPUIPC_PASS, GPUIPC_STEP_NONE, NULL);
    gpuipc_wire_status(&sc->theirs, GPUIPC_PASS, GPUIPC_STEP_NONE, NULL);
    gpuipc_watch_step((unsigned)env->step, name);
}

void gpuipc_role_at(gpuipc_scenario *sc, unsigned step)
{
    gpuipc_env_at(sc->env, sc->w, step);
}

int gpuipc_role_send(gpuipc_scenario *sc, gpuipc_msg *msg, unsigned step, unsigned next)
{
    gpuipc_env_waits(sc->env, next);
    return gpuipc_wire_send(sc->w, msg, sc->fds, gpuipc_clock_deadline(sc->env->timeout_ns),
                            step, &sc->err);
}

int gpuipc_role_recv(gpuipc_scenario *sc, unsigned type, gpuipc_msg *msg, unsigned step)
{
    int rc;

    gpuipc_env_waits(sc->env, step);
    rc = gpuipc_wire_recv(sc->w, GPUIPC_MSG_BIT(type), msg, sc->fds,
                          gpuipc_clock_deadline(sc->env->timeout_ns), step, &sc->err);
    sc->nfds = rc == 0 ? msg->nfds : 0;
    return rc;
}

void gpuipc_role_fail(gpuipc_scenario *sc, unsigned step, const gpuipc_err *e, const char *fmt,
                      ...)
{
    char text[GPUIPC_WIRE_REASON_LEN];
    gpuipc_err none;
    va_list ap;

    if (sc->mine.code == GPUIPC_FAIL)
        return;
    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    if (e == NULL) {
        gpuipc_err_clear(&none);
        e = &none;
    }
    gpuipc_wire_status_err(&sc->mine, step, e, "%s: %s", gpuipc_step_name(step), text);
}

static void vlog(const gpuipc_scenario *sc, int level, unsigned step, uint64_t dur,
                 const char *prefix, const char *fmt, va_list ap)
{
    char text[GPUIPC_ERR_LEN + 64];

    vsnprintf(text, sizeof(text), fmt, ap);
    gpuipc_log_step(&sc->env->log, level, sc->name, step, dur, "%s%s", prefix, text);
}

void gpuipc_role_log(const gpuipc_scenario *sc, unsigned step, uint64_t t0, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vlog(sc, GPUIPC_LOG_NORMAL, step,
         t0 == GPUIPC_LOG_NO_TIME ? GPUIPC_LOG_NO_TIME : gpuipc_clock_ns() - t0, "", fmt, ap);
    va_end(ap);
}

void gpuipc_role_log_fail(const gpuipc_scenario *sc, unsigned step, const char *fmt, ...)
{
    char prefix[16];
    va_list ap;

    snprintf(prefix, sizeof(prefix), "%s ", gpuipc_stop_fail_word());
    va_start(ap, fmt);
    vlog(sc, GPUIPC_LOG_QUIET, step, GPUIPC_LOG_NO_TIME, prefix, fmt, ap);
    va_end(ap);
}

void gpuipc_role_baseline(gpuipc_scenario *sc, unsigned step)
{
    const gpuipc_usage *u = &sc->before;
    int known;
    gpuipc_err e;

    if (sc->env->per_phase)
        gpuipc_usage_take_objects(&sc->before);
    else if (gpuipc_usage_take(&sc->before, sc->env->gpu_bytes, &e) < 0)
        gpuipc_role_fail(sc, step, &e, "FD accounting: %s", e.msg);
    sc->have_before = 1;
    known = u->gpu != GPUIPC_USAGE_UNKNOWN;
    if (sc->env->per_phase) {
        gpuipc_log_step(&sc->env->log, GPUIPC_LOG_VERBOSE, sc->name, step, GPUIPC_LOG_NO_TIME,
                        "baseline: this cell's driver objects counted from here (%llu held "
                        "by the process); FDs, shared memory and GPU memory at the phase's "
                        "ends",
                        (unsigned long long)u->objects.live);
        return;
    }
    gpuipc_log_step(&sc->env->log, GPUIPC_LOG_VERBOSE, sc->name, step, GPUIPC_LOG_NO_TIME,
                    "baseline: %zu FDs, %llu driver objects, %llu bytes of shared memory, GPU "
                    "memory by NVML: %s%.300s", u->fds.n, (unsigned long long)u->objects.live,
                    (unsigned long long)u->shmem, known ? "" : "not attributable: ",
                    known ? "" : u->gpu_why.msg);
    if (known)
        gpuipc_log_step(&sc->env->log, GPUIPC_LOG_VERBOSE, sc->name, step, GPUIPC_LOG_NO_TIME,
                        "baseline: %llu bytes of GPU memory by NVML",
                        (unsigned long long)u->gpu);
    if (sc->env->session_check)
        gpuipc_session_usage_note(&sc->env->session, sc->uuid, sc->env->gpu_bytes);
}

size_t gpuipc_role_count_leaks(gpuipc_scenario *sc, gpuipc_usage_gpu_fn gpu_bytes)
{
    gpuipc_err e;
    size_t n;

    if (!sc->have_before)
        return 0;
    n = (size_t)gpuipc_usage_leaks(&sc->before, gpu_bytes, GPUIPC_ENV_SETTLE_NS, &e);
    if (n > 0)
        gpuipc_role_fail(sc, GPUIPC_STEP_RELEASE, &e, "%s leaked: %.440s",
                         gpuipc_role_name(sc->env->role), e.msg);
    return n;
}

int gpuipc_role_holds(gpuipc_scenario *sc, unsigned step, const char *op)
{
    const char *loud;

    if (sc->have_buf && sc->buf.view.ops != NULL)
        return 1;
    loud = getenv("GPUIPC_TEST_ABORT");
    if (loud != NULL && loud[0] != '\0')
        abort();
    gpuipc_role_fail(sc, step, NULL, "internal error: %s with no buffer held (a message out of "
                     "its state got past the checks: report this with the output of -v)", op);
    gpuipc_role_log_fail(sc, step, "%s", sc->mine.reason);
    return 0;
}

/* With a flip test hook armed for this role, spoils one bit of the chosen
 * word of the buffer (filled with seed) and logs it in step. Returns 0
 * (nothing armed, or done), or -1 with the failure recorded (the buffer has
 * no such word, or the write failed). */
static int role_flip(gpuipc_scenario *sc, unsigned step, uint64_t seed)
{
    const gpuipc_view *v = &sc->buf.view;
    uint64_t index = 0, value;
    int rc = gpuipc_inject_flip(&sc->env->inject, sc->env->role, v->size / 8, v->first_word,
                                &index);

    if (rc == 0)
        return 0;
    if (rc < 0) {
        gpuipc_role_fail(sc, step, NULL, "the flip test hook names a word that a buffer of "
                         "%llu words does not have (flip-past-4g needs a --size above 4G)",
                         (unsigned long long)(v->size / 8));
        return -1;
    }
    value = gpuipc_pattern_word(index, seed) ^ (1ull << 43);
    if (v->ops->poke == NULL) {
        gpuipc_role_fail(sc, step, NULL, "the flip test hook: this view cannot write one word");
        return -1;
    }
    if (v->ops->poke(v, index, value, &sc->err) < 0) {
        gpuipc_role_fail(sc, step, &sc->err, "%s", sc->err.msg);
        return -1;
    }
    gpuipc_role_log(sc, step, GPUIPC_LOG_NO_TIME, "SABOTAGE: one bit of word %llu (byte offset "
                    "0x%llx) flipped after the fill (test hook)", (unsigned long long)index,
                    (unsigned long long)((index - v->first_word) * 8));
    return 0;
}

int gpuipc_role_fill(gpuipc_scenario *sc, unsigned step, uint64_t seed, int *skipped)
{
    const gpuipc_view *v = &sc->buf.view;
    gpuipc_env *env = sc->env;
    uint64_t t;

    gpuipc_role_at(sc, step);
    memset(&sc->wrote, 0, sizeof(sc->wrote));
    if (!gpuipc_role_holds(sc, step, "writing the pattern"))
        return -1;
    t = gpuipc_clock_ns();
    *skipped = gpuipc_inject_sabotage(&env->inject, env->role, GPUIPC_SABOTAGE_SKIP_WRITE);
    if (*skipped) {
        gpuipc_role_log(sc, step, t, "SABOTAGE: pattern not written (test hook)");
        return 0;
    }
    if (v->ops->fill(v, seed, &sc->wrote, &sc->err) < 0) {
        gpuipc_role_fail(sc, step, &sc->err, "%s", sc->err.msg);
        return -1;
    }
    if (sc->wrote.words != v->size / 8) {
        gpuipc_role_fail(sc, step, NULL, "the fill wrote %llu of %llu words",
                         (unsigned long long)sc->wrote.words, (unsigned long long)(v->size / 8));
        return -1;
    }
    sc->wrote.ns = gpuipc_clock_ns() - t;
    gpuipc_role_log(sc, step, t, "pattern seed 0x%016llx, %.1f GB/s written, digest 0x%016llx",
                    (unsigned long long)seed, gpuipc_units_gbps(sc->buf.size, sc->wrote.ns),
                    (unsigned long long)sc->wrote.digest);
    return role_flip(sc, step, seed);
}

/* Reads v into k through the read test hooks: with read-nothing armed for
 * this role it reads nothing and claims every word read and none bad; with
 * read-partial it reads only the first 2 words. Returns 1 if the read was
 * honest, 0 if a hook spoke for it, or a negative errno if the read itself
 * could not run. */
static int role_read(gpuipc_scenario *sc, const gpuipc_view *v, uint64_t seed, gpuipc_check *k)
{
    const gpuipc_inject *in = &sc->env->inject;
    gpuipc_view part;
    int rc;

    if (gpuipc_inject_sabotage(in, sc->env->role, GPUIPC_SABOTAGE_READ_NOTHING)) {
        memset(k, 0, sizeof(*k));
        k->words = v->size / 8;
        return 0;
    }
    if (gpuipc_inject_sabotage(in, sc->env->role, GPUIPC_SABOTAGE_READ_PARTIAL)) {
        part = *v;
        part.size = 16;
        return (rc = part.ops->verify(&part, seed, k, &sc->err)) < 0 ? rc : 0;
    }
    return (rc = v->ops->verify(v, seed, k, &sc->err)) < 0 ? rc : 1;
}

int gpuipc_role_check(gpuipc_scenario *sc, unsigned step, const gpuipc_view *v, uint64_t seed,
                      const gpuipc_written *written, gpuipc_check *k, const char *what,
                      const char *suffix)
{
    char text[GPUIPC_ERR_LEN], why[GPUIPC_ERR_LEN];
    uint64_t t;
    int honest;

    gpuipc_role_at(sc, step);
    memset(k, 0, sizeof(*k));
    if (!gpuipc_role_holds(sc, step, "reading the buffer"))
        return -1;
    t = gpuipc_clock_ns();
    if ((honest = role_read(sc, v, seed, k)) < 0) {
        gpuipc_role_fail(sc, step, &sc->err, "%s", sc->err.msg);
        gpuipc_role_log_fail(sc, step, "%s: %s", gpuipc_step_name(step), sc->err.msg);
        return -1;
    }
    k->ns = gpuipc_clock_ns() - t;
    gpuipc_laps_add(sc->laps, GPUIPC_LAP_TOUCH, t);
    gpuipc_pattern_describe(k, v->first_word, text, sizeof(text));
    if (k->mismatches == 0 && honest &&
        gpuipc_role_judge(k, v->size / 8, written, "this side", why, sizeof(why)) < 0)
        snprintf(text, sizeof(text), "%s", why);
    else if (k->mismatches == 0)
        text[0] = '\0';
    if (text[0] != '\0') {
        gpuipc_role_fail(sc, step, NULL, "%s: %.400s", what, text);
        gpuipc_role_log_fail(sc, step, "%s: %s: %s", gpuipc_step_name(step), what, text);
        return -1;
    }
    gpuipc_pattern_describe(k, v->first_word, text, sizeof(text));
    gpuipc_role_log(sc, step, t, "%s%s, digest 0x%016llx%s, %.1f GB/s", text, suffix,
                    (unsigned long long)k->digest,
                    !honest ? " (SABOTAGE: read test hook)"
                    : sc->env->role == GPUIPC_ROLE_CONSUMER ? " as written" : "",
                    gpuipc_units_gbps(sc->buf.size, k->ns));
    return 0;
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

/* The buffers the leak test hook kept: still referenced, so that a leak
 * checker sees memory held on purpose rather than lost. */
#define KEPT_MAX 64
static gpuipc_buf kept[KEPT_MAX];
static unsigned nkept;

uint64_t gpuipc_role_release(gpuipc_scenario *sc)
{
    uint64_t t = gpuipc_clock_ns();
    gpuipc_err e;

    if (!sc->have_buf)
        return 0;
    sc->have_buf = 0;
    gpuipc_role_at(sc, GPUIPC_STEP_RELEASE);
    if (gpuipc_inject_sabotage(&sc->env->inject, sc->env->role, GPUIPC_SABOTAGE_LEAK)) {
        if (nkept < KEPT_MAX)
            kept[nkept++] = sc->buf;
        gpuipc_role_log(sc, GPUIPC_STEP_RELEASE, t, "SABOTAGE: release skipped, memory kept "
                        "(test hook)");
    } else if (sc->mech->release(sc, &sc->buf, &e) < 0) {
        gpuipc_role_fail(sc, GPUIPC_STEP_RELEASE, &e, "%s", e.msg);
    } else {
        gpuipc_role_log(sc, GPUIPC_STEP_RELEASE, t, "unmapped and freed");
    }
    gpuipc_laps_add(sc->laps, GPUIPC_LAP_RELEASE, t);
    return gpuipc_clock_ns() - t;
}

void gpuipc_role_abandon(gpuipc_scenario *sc)
{
    gpuipc_err e;
    size_t used;

    gpuipc_role_log_fail(sc, (unsigned)sc->env->step, "%s", sc->err.msg);
    sc->env->lost_reported = 1;
    gpuipc_wire_close_fds(sc->fds, sc->nfds);
    sc->nfds = 0;
    gpuipc_role_release(sc);
    /* What this process holds is its own to count, peer or no peer. */
    if (sc->have_before &&
        gpuipc_usage_leaks(&sc->before, sc->env->gpu_bytes, GPUIPC_ENV_SETTLE_NS, &e) > 0) {
        gpuipc_role_log_fail(sc, GPUIPC_STEP_RELEASE, "%s leaked: %s",
                             gpuipc_role_name(sc->env->role), e.msg);
        used = strlen(sc->err.msg);
        snprintf(sc->err.msg + used, sizeof(sc->err.msg) - used, "; then %s leaked: %.300s",
                 gpuipc_role_name(sc->env->role), e.msg);
    }
    gpuipc_role_end(sc);
}

void gpuipc_role_end(gpuipc_scenario *sc)
{
    if (sc->have_before)
        gpuipc_usage_free(&sc->before);
    sc->have_before = 0;
}
