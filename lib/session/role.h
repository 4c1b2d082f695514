/* SPDX-License-Identifier: Apache-2.0 */
/* role.h: the role engine: what the producer and the consumer do alike with
 * a scenario (scenario.h): start it, send and receive its messages, record
 * its failures as text and as data, take the baseline and count leaks
 * against it, write this side's pattern and read the other's, judge a check
 * from its figures alone, release, and let go of everything when the
 * connection breaks. producer.c and consumer.c hold only each side's
 * steps of the protocol. */
#ifndef GPUIPC_ROLE_H
#define GPUIPC_ROLE_H

#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "session/env.h"
#include "session/mech.h"
#include "session/scenario.h"
#include "wire/wire.h"

/* Starts sc: scenario of mech (NULL: none by that name; name is what BEGIN
 * called it) over w in the process env, nothing held, both verdicts PASS. */
void gpuipc_role_start(gpuipc_scenario *sc, gpuipc_env *env, gpuipc_wire *w,
                       const gpuipc_mech *mech, const char *name);

/* Marks step as under way and carries out a fault injected there. */
void gpuipc_role_at(gpuipc_scenario *sc, unsigned step);

/* Sends msg, with the sc->nfds FDs in sc->fds if msg->nfds says so, in
 * step; the process then waits in next. Returns 0 or a negative errno with
 * sc->err (the connection broke). */
int gpuipc_role_send(gpuipc_scenario *sc, gpuipc_msg *msg, unsigned step, unsigned next);

/* Receives a message of type in step into msg, its FDs into sc->fds and
 * sc->nfds (0 on failure). Returns 0, -EMFILE (the message is sound but its
 * FDs did not all fit: gpuipc_wire_recv), or another negative errno with
 * sc->err (the connection broke). */
int gpuipc_role_recv(gpuipc_scenario *sc, unsigned type, gpuipc_msg *msg, unsigned step);

/* Records a failure of this side at step, "<step>: <text>", unless one is
 * recorded already (the first is the one worth reporting), with what failed
 * (call, errno, CUresult) taken from e, or nothing where e is NULL. */
void gpuipc_role_fail(gpuipc_scenario *sc, unsigned step, const gpuipc_err *e, const char *fmt,
                      ...) __attribute__((format(printf, 4, 5)));

/* The step log's line for step of this scenario, timed from t0 (or
 * GPUIPC_LOG_NO_TIME), at normal level. */
void gpuipc_role_log(const gpuipc_scenario *sc, unsigned step, uint64_t t0, const char *fmt,
                     ...) __attribute__((format(printf, 4, 5)));

/* The same at quiet level, "FAIL <text>" (after a stop signal "STOPPED
 * <text>"): what even -q shows. */
void gpuipc_role_log_fail(const gpuipc_scenario *sc, unsigned step, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Takes the baseline the leak check compares with (what this process holds:
 * FDs, driver objects, shared memory, GPU memory by NVML), and notes the
 * device in the session's reference. A failure to count fails the scenario
 * at step. */
void gpuipc_role_baseline(gpuipc_scenario *sc, unsigned step);

/* After the release: anything this process holds that it did not hold at
 * the baseline is a leak, a failure at the release step ("<role> leaked:
 * ..."). gpu_bytes is the figure to compare GPU memory by (NULL: do not).
 * Returns the count of what leaked. */
size_t gpuipc_role_count_leaks(gpuipc_scenario *sc, gpuipc_usage_gpu_fn gpu_bytes);

/* Whether sc holds a buffer whose view op may run in step: a read, a write
 * or a mechanism's operation on it. Every such operation asks first. Where
 * none is held, a message out of its state got past the checks before it:
 * the scenario fails with that named (and with GPUIPC_TEST_ABORT set in the
 * environment, as the test suites set it, the process aborts, so that the
 * hole is found loudly rather than read around). Returns 1 or 0. */
int gpuipc_role_holds(gpuipc_scenario *sc, unsigned step, const char *op);

/* Writes this side's pattern of seed into its buffer in step (with the
 * skip-write and flip test hooks), into sc->wrote: every word of the view,
 * logged with its speed and digest. Sets *skipped where the skip-write hook
 * kept it from writing. Returns 0, or -1 with the failure recorded (also
 * where sc holds no buffer). */
int gpuipc_role_fill(gpuipc_scenario *sc, unsigned step, uint64_t seed, int *skipped);

/* Reads view v for the pattern of seed into *k (through the read test
 * hooks), and judges it against written, the other side's word of what it
 * wrote: no word bad, and, unless a read hook spoke for this side (which
 * the other side must then catch), every word read and written, and the
 * digest written. what names the bytes in the failure ("the producer's
 * bytes"). Logs the outcome in step, ending a passed one with suffix.
 * Returns 0, or -1 with the failure recorded and logged at quiet level. */
int gpuipc_role_check(gpuipc_scenario *sc, unsigned step, const gpuipc_view *v, uint64_t seed,
                      const gpuipc_written *written, gpuipc_check *k, const char *what,
                      const char *suffix);

/* Judges a check k of a buffer of words words that was written as w, from
 * the figures alone: there must be words to check, the fill must have
 * written all of them, the reader must have read all of them, found none
 * bad, and read the digest that was written. A status that says PASS
 * counts for nothing here. who names the reader ("the consumer"). Returns
 * 0, or -1 with why, e.g. "the consumer read 2 of 8388608 words". */
int gpuipc_role_judge(const gpuipc_check *k, uint64_t words, const gpuipc_written *w,
                      const char *who, char *why, size_t len);

/* Releases what sc holds with its mechanism (unless the leak test hook is
 * armed for this role: then it keeps everything and logs so), logged in the
 * release step; a failure is recorded. Returns the time it took. */
uint64_t gpuipc_role_release(gpuipc_scenario *sc);

/* The connection broke in the middle of sc: names why at quiet level,
 * closes the FDs, releases and counts what this process holds (its own
 * figures do not depend on the peer), and appends a leak to sc->err.
 * Ends sc (gpuipc_role_end). */
void gpuipc_role_abandon(gpuipc_scenario *sc);

/* Frees what sc kept for its own bookkeeping (the baseline). */
void gpuipc_role_end(gpuipc_scenario *sc);

#endif
