/* SPDX-License-Identifier: Apache-2.0 */
/* clock.h: monotonic time and the deadlines that bound every wait. */
#ifndef GPUIPC_CLOCK_H
#define GPUIPC_CLOCK_H

#include <stdint.h>

#define GPUIPC_NS_PER_MS 1000000ull
#define GPUIPC_NS_PER_S 1000000000ull

/* Returns CLOCK_MONOTONIC in nanoseconds. */
uint64_t gpuipc_clock_ns(void);

/* Returns the absolute deadline timeout_ns from now. */
uint64_t gpuipc_clock_deadline(uint64_t timeout_ns);

/* Returns the milliseconds left until deadline_ns, rounded up so that a
 * poll() never wakes early, 0 once it has passed, at most INT32_MAX. */
int gpuipc_clock_ms_left(uint64_t deadline_ns);

/* Sleeps for ns nanoseconds, resuming after signals. */
void gpuipc_clock_sleep(uint64_t ns);

#endif
