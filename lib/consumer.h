/* consumer.h: the consumer's side of the session. */
#ifndef GPUIPC_CONSUMER_H
#define GPUIPC_CONSUMER_H

#include <stddef.h>

#include "env.h"
#include "mech.h"
#include "wire.h"

/* Answers HELLO, then serves scenario after scenario with the mechanisms in
 * mechs[0..n) until BYE. Returns GPUIPC_PASS if this side of every scenario
 * passed, else GPUIPC_FAIL (a lost connection included, which it reports as
 * "peer gone during <step>"). */
int gpuipc_consumer_serve(gpuipc_env *env, gpuipc_wire *w, const gpuipc_mech *const *mechs,
                          size_t n);

#endif
