/* inject.h: test-only hooks that make a role misbehave on purpose, read from
 * the environment and inert unless set:
 *   GPUIPC_FAULT=<role>:<step>:<action>   action: exit, kill, hang, corrupt,
 *                                          extra-fds or close
 *   GPUIPC_SABOTAGE=<role>:<what>         what: wrong-seed, skip-write, leak,
 *                                          chunk-order or leak-fd
 * They exist so that tests can prove the survivor reports a dead or stuck
 * peer, that verification fails when the bytes are wrong, and that the
 * accounting fails a scenario that leaks. */
#ifndef GPUIPC_INJECT_H
#define GPUIPC_INJECT_H

#include "err.h"

enum gpuipc_fault_action {
    GPUIPC_FAULT_NONE = 0,
    GPUIPC_FAULT_EXIT, /* _exit(1) without cleanup */
    GPUIPC_FAULT_KILL, /* SIGKILL itself */
    GPUIPC_FAULT_HANG, /* sleep until killed */
    GPUIPC_FAULT_CORRUPT,   /* send a corrupt frame (bad magic), then carry on */
    GPUIPC_FAULT_EXTRA_FDS, /* send a HELLO with 2 FDs it may not carry, then carry on */
    GPUIPC_FAULT_CLOSE,     /* shut the connection down (both ways), then carry on */
    GPUIPC_FAULT_ACTIONS    /* the count, none included */
};

enum gpuipc_sabotage {
    GPUIPC_SABOTAGE_NONE = 0,
    GPUIPC_SABOTAGE_WRONG_SEED, /* announce a seed other than the one written */
    GPUIPC_SABOTAGE_SKIP_WRITE, /* announce a pattern but never write it */
    GPUIPC_SABOTAGE_LEAK,       /* skip the release step, keeping the memory */
    GPUIPC_SABOTAGE_CHUNK_ORDER, /* chunked memory: swap the first two chunks (the
                                  * producer sends their FDs swapped, the consumer
                                  * maps them swapped) */
    GPUIPC_SABOTAGE_LEAK_FD,     /* open an FD after the scenario's own count and
                                  * keep it: what the soak's drift check and the
                                  * check at exit must find */
};

typedef struct gpuipc_inject {
    int fault_role;
    int fault_step;
    int fault_action;
    int sabotage_role;
    int sabotage;
} gpuipc_inject;

/* Parses the two specifications (either may be NULL or empty: inert) into
 * in. Returns 0, or -EINVAL naming the bad part and the accepted values. */
int gpuipc_inject_parse(const char *fault, const char *sabotage, gpuipc_inject *in,
                        gpuipc_err *err);

/* Returns the fault action armed for role at step, or GPUIPC_FAULT_NONE. */
int gpuipc_inject_fault(const gpuipc_inject *in, int role, unsigned step);

/* Returns 1 if sabotage what is armed for role, else 0. */
int gpuipc_inject_sabotage(const gpuipc_inject *in, int role, int what);

/* Opens /dev/null and keeps it if leak-fd is armed for role. */
void gpuipc_inject_leak_fd(const gpuipc_inject *in, int role);

/* Returns "exit", "kill", "hang", "corrupt", "extra-fds" or "close". */
const char *gpuipc_inject_action_name(int action);

#endif
