/* SPDX-License-Identifier: Apache-2.0 */
/* clock.c: monotonic time and deadlines. */
#include "core/clock.h"

#include <errno.h>
#include <stdint.h>
#include <time.h>

uint64_t gpuipc_clock_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * GPUIPC_NS_PER_S + (uint64_t)ts.tv_nsec;
}

uint64_t gpuipc_clock_deadline(uint64_t timeout_ns)
{
    return gpuipc_clock_ns() + timeout_ns;
}

int gpuipc_clock_ms_left(uint64_t deadline_ns)
{
    uint64_t now = gpuipc_clock_ns();
    uint64_t ms;

    if (now >= deadline_ns)
        return 0;
    ms = (deadline_ns - now + GPUIPC_NS_PER_MS - 1) / GPUIPC_NS_PER_MS;
    return ms > INT32_MAX ? INT32_MAX : (int)ms;
}

void gpuipc_clock_sleep(uint64_t ns)
{
    struct timespec ts = {
        .tv_sec = (time_t)(ns / GPUIPC_NS_PER_S),
        .tv_nsec = (long)(ns % GPUIPC_NS_PER_S),
    };

    while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
        ;
}
