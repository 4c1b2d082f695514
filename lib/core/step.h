/* SPDX-License-Identifier: Apache-2.0 */
/* step.h: the named steps of a scenario, shared by the step log, the wire's
 * "peer gone during <step>" reports and the test-only fault hook. */
#ifndef GPUIPC_STEP_H
#define GPUIPC_STEP_H

enum gpuipc_role {
    GPUIPC_ROLE_PRODUCER = 1,
    GPUIPC_ROLE_CONSUMER = 2,
};

/* In protocol order. A step belongs to the role that acts in it; the other
 * role waits during the message steps (PROBE, BEGIN, READY, OFFER, REPORT,
 * END, END_ACK, BYE, BYE_ACK). The values travel in status messages: append only. */
enum gpuipc_step {
    GPUIPC_STEP_NONE = 0,
    GPUIPC_STEP_HELLO,   /* both: exchange pids and the protocol version */
    GPUIPC_STEP_BEGIN,   /* producer: announce the scenario */
    GPUIPC_STEP_PROBE,   /* both: ask and check whether the consumer can run it */
    GPUIPC_STEP_READY,   /* consumer: say so */
    GPUIPC_STEP_ALLOC,   /* producer: create and map the memory */
    GPUIPC_STEP_FILL,    /* producer: write its pattern */
    GPUIPC_STEP_EXPORT,  /* producer: make a shareable handle */
    GPUIPC_STEP_OFFER,   /* producer: send it, FDs included */
    GPUIPC_STEP_IMPORT,  /* consumer: import and map */
    GPUIPC_STEP_VERIFY,  /* consumer: verify the producer's pattern */
    GPUIPC_STEP_WRITE,   /* consumer: write its own pattern */
    GPUIPC_STEP_REPORT,  /* consumer: send both results */
    GPUIPC_STEP_CHECK,   /* producer: verify the consumer's pattern */
    GPUIPC_STEP_RELEASE, /* both: unmap and free */
    GPUIPC_STEP_END,     /* producer: send its verdict */
    GPUIPC_STEP_END_ACK, /* consumer: send its verdict */
    GPUIPC_STEP_BYE,     /* producer: end the session with its verdict */
    GPUIPC_STEP_BYE_ACK, /* consumer: its last checks, and the session's verdict */
    GPUIPC_STEP_COUNT
};

/* Returns the step's name ("offer", "end-ack", ...), or "?" if out of range. */
const char *gpuipc_step_name(unsigned step);

/* Returns the step named name, or -1. */
int gpuipc_step_parse(const char *name);

/* Returns the role that acts in step (GPUIPC_ROLE_PRODUCER or _CONSUMER; both
 * for HELLO and RELEASE, as a bit mask), or 0 for none. */
unsigned gpuipc_step_roles(unsigned step);

/* Returns "producer" or "consumer". */
const char *gpuipc_role_name(int role);

#endif
